//! System procedures whose output carries times or sizes (so no golden file can hold it):
//! the shape of their result sets.

use tessera_database::{Engine, EngineConfig};
use tessera_sql::types::Value;
use tessera_sql::{Collected, Session, Shared};

#[test]
fn sp_help_sp_helpdb_and_sp_databases_describe_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    let shared = Shared::new(engine).unwrap();
    let mut s = Session::new(shared, "sa", "master").unwrap();
    let mut out = Collected::default();
    assert!(!s.execute(
        "create table gadgets (id int identity primary key, name varchar(20) not null default 'thing', price decimal(8,2) check (price >= 0));
         create index ix_gadgets_name on gadgets (name);",
        &mut out
    ));

    let mut out = Collected::default();
    assert!(!s.execute("exec sp_help gadgets", &mut out), "{:?}", out.errors());
    let names: Vec<Vec<String>> =
        out.result_sets.iter().map(|(cols, _)| cols.iter().map(|c| c.name.clone()).collect()).collect();
    assert_eq!(names[0], ["Name", "Owner", "Type", "Created_datetime"]);
    assert_eq!(names[1][0], "Column_name");
    assert_eq!(names[2][0], "Identity");
    assert_eq!(names[3][0], "index_name");
    assert_eq!(names[4][0], "constraint_type");
    assert_eq!(out.result_sets[1].1.len(), 3, "three columns described");
    assert_eq!(out.result_sets[3].1.len(), 2, "primary key and ix_gadgets_name");
    assert_eq!(out.result_sets[4].1.len(), 3, "primary key, check and default");
    assert!(matches!(out.result_sets[0].1[0][3], Value::DateTime { .. }));

    let mut out = Collected::default();
    assert!(!s.execute("exec sp_helpdb master", &mut out), "{:?}", out.errors());
    assert_eq!(out.result_sets.len(), 2, "the database, then its files");
    assert_eq!(out.result_sets[0].1[0][0], Value::str("master"));
    let status = match &out.result_sets[0].1[0][5] {
        Value::Str(s) => s.to_string(),
        v => panic!("status {v:?}"),
    };
    assert!(status.contains("Recovery=FULL") && status.contains("Status=ONLINE"), "{status}");
    assert_eq!(out.result_sets[1].1.len(), 2, "a data file and a log file");

    let mut out = Collected::default();
    assert!(!s.execute("exec sp_databases", &mut out), "{:?}", out.errors());
    let dbs: Vec<Value> = out.result_sets[0].1.iter().map(|r| r[0].clone()).collect();
    assert_eq!(dbs, vec![Value::str("master"), Value::str("tempdb")]);
    assert!(out.result_sets[0].1.iter().all(|r| matches!(r[1], Value::Int(kb) if kb > 0)));
}

#[test]
fn sp_configure_values_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let mut config = EngineConfig::new(dir.path());
        config.pool_bytes = 32 << 20;
        config.background = false;
        let engine = Engine::open(config).unwrap();
        (engine.clone(), Shared::new(engine).unwrap())
    };
    {
        let (engine, shared) = open();
        let mut s = Session::new(shared.clone(), "sa", "master").unwrap();
        let mut out = Collected::default();
        assert!(!s.execute(
            "exec sp_configure 'show advanced options', 1; reconfigure; exec sp_configure 'max server memory (MB)', 3072; reconfigure;",
            &mut out
        ));
        assert_eq!(shared.config.run_value("max server memory (MB)"), Some(3072));
        drop(s);
        engine.shutdown().unwrap();
    }
    let (_engine, shared) = open();
    assert_eq!(shared.config.run_value("max server memory (MB)"), Some(3072), "configured values load as run values");
    assert!(shared.config.show_advanced());
}
