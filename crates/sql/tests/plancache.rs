//! The plan cache through T-SQL: its budget is an sp_configure option that takes effect at
//! RECONFIGURE and bounds what the cache holds; dropping one database evicts its plans
//! and leaves the others'.

use tessera_database::{Engine, EngineConfig};
use tessera_sql::types::Value;
use tessera_sql::{Collected, Session, Shared};

fn run(session: &mut Session, text: &str) -> Collected {
    let mut out = Collected::default();
    let failed = session.execute(text, &mut out);
    assert!(!failed, "{text}: {:?}", out.errors());
    out
}

fn scalar(session: &mut Session, text: &str) -> i64 {
    match run(session, text).result_sets[0].1[0][0] {
        Value::Int(n) => n,
        ref other => panic!("{text}: {other:?}"),
    }
}

fn cached_in(session: &mut Session, db: &str) -> i64 {
    scalar(session, &format!("SELECT COUNT(*) FROM sys.dm_exec_cached_plans WHERE text LIKE '%{db}-' + 'marker%'"))
}

#[test]
fn budget_option_and_per_database_eviction() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 64 << 20;
    let engine = Engine::open(config).unwrap();
    let shared = Shared::new(engine.clone()).unwrap();
    let mut s = Session::new(shared.clone(), "sa", "master").unwrap();
    assert_eq!(shared.plans.budget_bytes(), 64 << 20, "the default budget");

    // Two databases, each with batches of its own (marked so they can be counted).
    for db in ["keep", "gone"] {
        run(&mut s, &format!("CREATE DATABASE {db}"));
        run(&mut s, &format!("USE {db}; CREATE TABLE t (id int PRIMARY KEY)"));
        for i in 0..20 {
            run(&mut s, &format!("USE {db}; SELECT COUNT(*) FROM t WHERE id > {i} /* {db}-marker */"));
        }
    }
    run(&mut s, "USE master");
    assert_eq!(cached_in(&mut s, "keep"), 20);
    assert_eq!(cached_in(&mut s, "gone"), 20);
    run(&mut s, "DROP DATABASE gone");
    assert_eq!(cached_in(&mut s, "gone"), 0, "the dropped database's plans went");
    assert_eq!(cached_in(&mut s, "keep"), 20, "the others' stayed");

    // A 1 MB budget, set as an advanced option, takes effect at RECONFIGURE.
    run(&mut s, "EXEC sp_configure 'show advanced options', 1; RECONFIGURE");
    run(&mut s, "EXEC sp_configure 'plan cache memory (MB)', 1");
    assert_eq!(shared.plans.budget_bytes(), 64 << 20, "not before RECONFIGURE");
    run(&mut s, "RECONFIGURE");
    assert_eq!(shared.plans.budget_bytes(), 1 << 20);
    for i in 0..3000 {
        run(&mut s, &format!("SELECT {i} AS n, 'padding to make the batch longer than most' AS p"));
    }
    assert!(shared.plans.bytes() <= 1 << 20, "{} bytes held", shared.plans.bytes());
    let pages =
        scalar(&mut s, "SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Cache Pages'");
    assert!(pages > 0 && pages <= 128, "{pages} pages");
    let configured = run(&mut s, "EXEC sp_configure 'plan cache memory (MB)'");
    assert_eq!(configured.result_sets[0].1[0][3], Value::Int(1), "run value");
}
