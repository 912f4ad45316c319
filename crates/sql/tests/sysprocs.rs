//! System procedures whose output carries times or sizes (so no golden file can hold it):
//! the shape of their result sets.

mod common;

use tessera_database::{Engine, EngineConfig};
use tessera_semantics::types::Value;
use tessera_sql::{Collected, Session};

#[test]
fn sp_help_sp_helpdb_and_sp_databases_describe_what_exists() {
    let (_dir, mut s) = common::session();
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
    assert_eq!(dbs, vec![Value::str("master"), Value::str("tempdb"), Value::str("msdb")]);
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
        (engine.clone(), tessera_sql::start_instance(engine).unwrap())
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

fn scalar(s: &mut Session, sql: &str) -> Value {
    let mut out = Collected::default();
    assert!(!s.execute(sql, &mut out), "{sql}: {:?}", out.errors());
    out.result_sets[0].1[0][0].clone()
}

#[test]
fn max_server_memory_moves_the_pool_and_memory_views_report() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 512 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine.clone()).unwrap();
    let mut s = Session::new(shared.clone(), "sa", "master").unwrap();
    let counter = |s: &mut Session, name: &str| match scalar(
        s,
        &format!("select cntr_value from sys.dm_os_performance_counters where counter_name = '{name}'"),
    ) {
        Value::Int(v) => v,
        v => panic!("{name}: {v:?}"),
    };
    assert_eq!(counter(&mut s, "Target Server Memory (KB)"), 512 << 10, "the pool size the server started with");

    // Fill some of the pool, then lower max server memory below what is cached.
    let mut out = Collected::default();
    assert!(
        !s.execute(
            "create table filler (id int identity primary key, pad char(4000) not null default 'x');
         with n as (select 1 as i union all select i + 1 from n where i < 36000)
         insert into filler (pad) select 'x' from n option (maxrecursion 0);",
            &mut out
        ),
        "{:?}",
        out.errors()
    );
    let cached_kb = counter(&mut s, "Total Server Memory (KB)");
    assert!(cached_kb > 140 << 10, "about 144 MB of rows cached: {cached_kb} KB");
    let mut out = Collected::default();
    assert!(!s.execute(
        "exec sp_configure 'show advanced options', 1; reconfigure; exec sp_configure 'max server memory (MB)', 128; reconfigure;",
        &mut out
    ), "{:?}", out.errors());
    assert_eq!(counter(&mut s, "Target Server Memory (KB)"), 128 << 10);
    // The log buffers' budget, a sixteenth of max server memory, is carved out of it.
    assert_eq!(engine.log_buffer_stats().budget_bytes, 8 << 20);
    assert_eq!(engine.stats().pool.capacity_pages, (120 << 20) / 8192);
    assert!(counter(&mut s, "Total Server Memory (KB)") <= 128 << 10, "the pool shrank at once");
    assert_eq!(scalar(&mut s, "select count(*) from filler"), Value::Int(36000), "nothing lost");

    // min may not exceed max, and the other way round.
    let mut out = Collected::default();
    assert!(s.execute("exec sp_configure 'min server memory (MB)', 256", &mut out));
    assert_eq!(out.errors()[0].number, 15129);
    let mut out = Collected::default();
    assert!(!s.execute("exec sp_configure 'min server memory (MB)', 64; reconfigure;", &mut out));
    assert_eq!(engine.memory_status().min_bytes, 64 << 20);
    let mut out = Collected::default();
    assert!(s.execute("exec sp_configure 'max server memory (MB)', 32", &mut out));
    assert_eq!(out.errors()[0].number, 15129, "below the option's minimum (128)");

    // Back to the default: the size the server was started with.
    let mut out = Collected::default();
    assert!(!s.execute("exec sp_configure 'max server memory (MB)', 2147483647; reconfigure;", &mut out));
    assert_eq!(counter(&mut s, "Target Server Memory (KB)"), 512 << 10);

    let hit = counter(&mut s, "Buffer cache hit ratio");
    let base = counter(&mut s, "Buffer cache hit ratio base");
    assert!(hit > 0 && hit <= base, "{hit} / {base}");
    assert!(counter(&mut s, "Database pages") > 0);
    assert!(counter(&mut s, "Page life expectancy") >= 0);

    // A scan of a cold table reads ahead.
    let read_ahead = counter(&mut s, "Readahead pages/sec");
    let mut out = Collected::default();
    assert!(!s.execute("checkpoint; dbcc dropcleanbuffers;", &mut out), "{:?}", out.errors());
    assert_eq!(scalar(&mut s, "select count(*) from filler where pad = 'x'"), Value::Int(36000));
    assert!(counter(&mut s, "Readahead pages/sec") > read_ahead, "the cold scan read pages ahead");
    // Trace flag 652 turns read-ahead off for the session's scans.
    let mut out = Collected::default();
    assert!(!s.execute("dbcc traceon (652); checkpoint; dbcc dropcleanbuffers;", &mut out), "{:?}", out.errors());
    let read_ahead = counter(&mut s, "Readahead pages/sec");
    assert_eq!(scalar(&mut s, "select count(*) from filler where pad = 'x'"), Value::Int(36000));
    assert_eq!(counter(&mut s, "Readahead pages/sec"), read_ahead, "no read-ahead under trace flag 652");
    let mut out = Collected::default();
    assert!(!s.execute("dbcc traceoff (652);", &mut out), "{:?}", out.errors());

    let mut out = Collected::default();
    assert!(!s.execute(
        "select total_physical_memory_kb, available_physical_memory_kb, system_memory_state_desc from sys.dm_os_sys_memory;
         select physical_memory_in_use_kb, virtual_address_space_reserved_kb, page_fault_count from sys.dm_os_process_memory;",
        &mut out
    ), "{:?}", out.errors());
    let sys = &out.result_sets[0].1[0];
    let (Value::Int(total), Value::Int(available)) = (&sys[0], &sys[1]) else { panic!("{sys:?}") };
    assert!(*total > 0 && available <= total);
    let process = &out.result_sets[1].1[0];
    let (Value::Int(rss), Value::Int(reserved)) = (&process[0], &process[1]) else { panic!("{process:?}") };
    assert!(*rss > 0 && reserved > rss, "the pool's reservation is address space, not memory");
}

#[test]
fn buffer_pool_extension_on_off_rules_views_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let bpe = dir.path().join("cache.bpe");
    let open = || {
        let mut config = EngineConfig::new(dir.path().join("data"));
        config.pool_bytes = 128 << 20;
        config.background = false;
        let engine = Engine::open(config).unwrap();
        (engine.clone(), tessera_sql::start_instance(engine).unwrap())
    };
    let state = |s: &mut Session| match scalar(
        s,
        "select state_description from sys.dm_os_buffer_pool_extension_configuration",
    ) {
        Value::Str(v) => v.to_string(),
        v => panic!("{v:?}"),
    };
    let error = |s: &mut Session, sql: &str| {
        let mut out = Collected::default();
        assert!(s.execute(sql, &mut out), "{sql}: no error");
        out.errors()[0].number
    };
    let (engine, shared) = open();
    let mut s = Session::new(shared.clone(), "sa", "master").unwrap();
    assert_eq!(state(&mut s), "BUFFER POOL EXTENSION DISABLED");
    let on = |size: &str| {
        format!(
            "alter server configuration set buffer pool extension on (filename = '{}', size = {size})",
            bpe.display()
        )
    };
    assert_eq!(error(&mut s, &on("64 MB")), 868, "not larger than max server memory");
    assert_eq!(error(&mut s, &on("5 GB")), 864, "more than 32 times max server memory");
    let mut out = Collected::default();
    assert!(!s.execute(&on("512 MB"), &mut out), "{:?}", out.errors());
    assert_eq!(state(&mut s), "BUFFER POOL EXTENSION ENABLED");
    assert_eq!(
        scalar(&mut s, "select current_size_in_kb from sys.dm_os_buffer_pool_extension_configuration"),
        Value::Int(512 << 10)
    );
    assert!(bpe.exists());
    assert_eq!(error(&mut s, &on("256 MB")), 870, "already on");

    // More data than RAM: evicted clean pages go to the extension and are read back from it.
    let mut out = Collected::default();
    assert!(
        !s.execute(
            "create table big (id int identity primary key, pad char(4000) not null default 'x');
         with n as (select 1 as i union all select i + 1 from n where i < 40000)
         insert into big (pad) select 'x' from n option (maxrecursion 0);
         checkpoint;",
            &mut out
        ),
        "{:?}",
        out.errors()
    );
    for _ in 0..2 {
        assert_eq!(scalar(&mut s, "select count(*) from big where pad = 'x'"), Value::Int(40000));
    }
    engine.pool().extension().unwrap().drain();
    let counter = |s: &mut Session, name: &str| match scalar(
        s,
        &format!("select cntr_value from sys.dm_os_performance_counters where counter_name = '{name}'"),
    ) {
        Value::Int(v) => v,
        v => panic!("{v:?}"),
    };
    assert!(counter(&mut s, "Extension page writes/sec") > 0);
    assert!(counter(&mut s, "Extension page reads/sec") > 0, "the second scan read pages back from the extension");
    assert!(counter(&mut s, "Extension allocated pages") > 0);
    match scalar(&mut s, "select count(*) from sys.dm_os_buffer_descriptors where is_in_bpool_extension = 1") {
        Value::Int(n) => assert!(n > 0),
        v => panic!("{v:?}"),
    }
    drop(s);
    drop(shared);
    engine.shutdown().unwrap();
    drop(engine);

    // Remembered across a restart (the file starts cold), then turned off.
    let (_engine, shared) = open();
    let mut s = Session::new(shared, "sa", "master").unwrap();
    assert_eq!(state(&mut s), "BUFFER POOL EXTENSION ENABLED");
    assert_eq!(scalar(&mut s, "select count(*) from big"), Value::Int(40000));
    let mut out = Collected::default();
    assert!(!s.execute("alter server configuration set buffer pool extension off", &mut out));
    assert_eq!(state(&mut s), "BUFFER POOL EXTENSION DISABLED");
    assert!(!bpe.exists(), "the extension file is deleted when it is turned off");
}
