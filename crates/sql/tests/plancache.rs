//! The plan cache through T-SQL: its budget is an sp_configure option that takes effect at
//! RECONFIGURE and bounds what the cache holds; dropping one database evicts the plans
//! that name it and leaves the others'; databases of one schema share plans, and one
//! whose schema changes gets plans of its own while the others keep theirs.

use tessera_database::{Engine, EngineConfig};
use tessera_semantics::types::Value;
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

/// An instance on a fresh data directory, and a session in master.
fn start() -> (tempfile::TempDir, std::sync::Arc<Shared>, Session) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 64 << 20;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine).unwrap();
    let session = Session::new(shared.clone(), "sa", "master").unwrap();
    (dir, shared, session)
}

fn cached_in(session: &mut Session, db: &str) -> i64 {
    scalar(session, &format!("SELECT COUNT(*) FROM sys.dm_exec_cached_plans WHERE text LIKE '%{db}-' + 'marker%'"))
}

#[test]
fn budget_option_and_per_database_eviction() {
    let (_dir, shared, mut s) = start();
    assert_eq!(shared.plans.budget_bytes(), 64 << 20, "the default budget");

    // Two databases, each read by batches that name it (marked so they can be counted).
    for db in ["keep", "gone"] {
        run(&mut s, &format!("CREATE DATABASE {db}"));
        run(&mut s, &format!("USE {db}; CREATE TABLE t (id int PRIMARY KEY)"));
        run(&mut s, "USE master");
        for i in 0..20 {
            run(&mut s, &format!("SELECT COUNT(*) FROM {db}.dbo.t WHERE id > {i} /* {db}-marker */"));
        }
    }
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

fn cached_plans(session: &mut Session, like: &str) -> Vec<Vec<Value>> {
    let q = format!(
        "SELECT usecounts, cacheobjtype, objtype, database_count FROM sys.dm_exec_cached_plans WHERE text LIKE '{like}'"
    );
    run(session, &q).result_sets[0].1.clone()
}

fn statement_plans(shared: &Shared, prefix: &str) -> usize {
    shared.plans.entries().iter().filter(|e| e.text.starts_with(prefix)).map(|e| e.plans).sum()
}

/// Tenants of one schema share one plan per statement; each still changes its own
/// tables (identity values, constraint names in errors are its own); a tenant whose
/// schema changes binds its own plans and the others keep the shared ones.
#[test]
fn databases_of_one_schema_share_plans() {
    let (_dir, shared, mut s) = start();
    let tenants = ["t1", "t2", "t3", "t4"];
    for (n, db) in tenants.iter().enumerate() {
        run(&mut s, &format!("CREATE DATABASE {db}"));
        run(&mut s, &format!("USE {db}"));
        // Object ids differ between the tenants: the first ones made a table more.
        for k in 0..n {
            run(&mut s, &format!("CREATE TABLE extra{k} (x int)"));
        }
        run(
            &mut s,
            "CREATE TABLE orders (id int IDENTITY PRIMARY KEY, qty int NOT NULL CHECK (qty > 0), note varchar(20) DEFAULT 'none')",
        );
        run(
            &mut s,
            "CREATE PROCEDURE add_order @qty int AS BEGIN INSERT INTO orders (qty) VALUES (@qty); \
             SELECT id, qty, note FROM orders WHERE id = SCOPE_IDENTITY() END",
        );
    }
    for round in 1..=3 {
        for db in tenants {
            run(&mut s, &format!("USE {db}"));
            let out = run(&mut s, &format!("EXEC add_order {round}"));
            let row = &out.result_sets[0].1[0];
            assert_eq!(row[0], Value::Int(round), "{db}: identity values are the tenant's own");
            assert_eq!(row[2], Value::str("none"));
        }
    }
    let proc_rows = cached_plans(&mut s, "CREATE PROCEDURE add_order%");
    assert_eq!(proc_rows.len(), 1, "one cached procedure for all tenants: {proc_rows:?}");
    assert_eq!(proc_rows[0][1], Value::str("Compiled Plan"));
    assert_eq!(proc_rows[0][2], Value::str("Proc"));
    assert_eq!(proc_rows[0][3], Value::Int(4), "four databases share it");
    assert_eq!(statement_plans(&shared, "CREATE PROCEDURE add_order"), 2, "one plan per statement");
    // A call with a constant argument binds no plan of its own (as SQL Server's does not).
    let calls = cached_plans(&mut s, "EXEC add_order%");
    assert!(!calls.is_empty() && calls.iter().all(|r| r[1] == Value::str("Parse Tree")), "{calls:?}");

    // A CHECK violation names the tenant's own constraint and database.
    for db in tenants {
        run(&mut s, &format!("USE {db}"));
        let mut out = Collected::default();
        assert!(s.execute("EXEC add_order 0", &mut out));
        let err = &out.errors()[0];
        let own =
            scalar_text(&mut s, "SELECT name FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID('orders')");
        assert_eq!(err.number, 547);
        assert!(
            err.message.contains(&format!("\"{own}\"")) && err.message.contains(&format!("database \"{db}\"")),
            "{}",
            err.message
        );
    }

    // One tenant's schema changes: it binds its own plans; the others keep theirs.
    run(&mut s, "USE t2; ALTER TABLE orders ADD extra int NULL");
    run(&mut s, "USE t2; EXEC add_order 5");
    assert_eq!(statement_plans(&shared, "CREATE PROCEDURE add_order"), 4);
    for db in ["t1", "t3", "t4"] {
        run(&mut s, &format!("USE {db}; EXEC add_order 6"));
    }
    assert_eq!(statement_plans(&shared, "CREATE PROCEDURE add_order"), 4, "no rebinding in the other tenants");
    for db in tenants {
        let count = scalar(&mut s, &format!("SELECT COUNT(*) FROM {db}.dbo.orders"));
        assert_eq!(count, 4, "{db}");
    }
    let usecounts = cached_plans(&mut s, "CREATE PROCEDURE add_order%")[0][0].clone();
    assert!(matches!(usecounts, Value::Int(n) if n >= 16), "{usecounts:?}");
}

fn scalar_text(session: &mut Session, text: &str) -> String {
    match &run(session, text).result_sets[0].1[0][0] {
        Value::Str(s) => s.to_string(),
        other => panic!("{text}: {other:?}"),
    }
}

/// A database restored under a session that sat in it: the session's next statement sees
/// the restored schema, not the one it last bound against.
#[test]
fn a_restore_under_an_idle_session_changes_what_its_names_mean() {
    let (dir, shared, mut admin) = start();
    run(&mut admin, "CREATE DATABASE shop; USE shop; CREATE TABLE t (a int); INSERT INTO t VALUES (1)");
    let path = dir.path().join("shop.bak");
    run(&mut admin, &format!("USE master; BACKUP DATABASE shop TO DISK = '{}'", path.display()));
    let mut tenant = Session::new(shared.clone(), "sa", "shop").unwrap();
    run(&mut tenant, "ALTER TABLE t ADD b int NULL");
    assert_eq!(scalar(&mut tenant, "SELECT COUNT(b) FROM t"), 0);
    run(&mut admin, &format!("RESTORE DATABASE shop FROM DISK = '{}' WITH REPLACE", path.display()));
    let mut out = Collected::default();
    assert!(tenant.execute("SELECT COUNT(b) FROM t", &mut out), "the restored table has no column b");
    assert_eq!(out.errors()[0].number, 207);
    assert_eq!(scalar(&mut tenant, "SELECT COUNT(a) FROM t"), 1);
}

/// A statement bound when its batch starts is checked again when it runs: a DDL earlier in
/// the batch that dropped what it uses is an error, not a run of the old plan.
#[test]
fn a_plan_bound_at_the_start_of_a_batch_is_checked_when_it_runs() {
    let (_dir, _shared, mut s) = start();
    run(&mut s, "CREATE DATABASE d; USE d; CREATE TABLE t (a int); INSERT INTO t VALUES (1)");
    run(&mut s, "CREATE FUNCTION dbo.f() RETURNS int AS BEGIN RETURN 1 END");
    for (batch, number) in [("DROP FUNCTION dbo.f; SELECT dbo.f()", 4121), ("DROP TABLE t; SELECT a FROM t", 208)] {
        let mut out = Collected::default();
        assert!(s.execute(batch, &mut out), "{batch}");
        assert_eq!(out.errors()[0].number, number, "{batch}: {:?}", out.errors());
        assert!(out.result_sets.is_empty(), "{batch}: the dropped object's plan ran");
    }
}
