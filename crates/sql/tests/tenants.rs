//! Seed 000's tenants: each database holds ~200 stored procedures. Creates 50 databases
//! with 200 procedures each, then executes every procedure once and checks its result,
//! and that the 50 tenants of one schema share one cached plan per procedure.

use std::sync::atomic::Ordering;

use tessera_database::{Engine, EngineConfig};
use tessera_semantics::types::Value;
use tessera_sql::{Collected, Session};

const DATABASES: usize = 50;
const PROCEDURES: usize = 200;

#[test]
fn fifty_databases_with_two_hundred_procedures_each() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 64 << 20;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine.clone()).unwrap();
    let mut session = Session::new(shared.clone(), "sa", "master").unwrap();
    let run = |session: &mut Session, text: &str| -> Collected {
        let mut out = Collected::default();
        let failed = session.execute(text, &mut out);
        assert!(!failed, "{text}: {:?}", out.errors());
        out
    };
    for d in 0..DATABASES {
        run(&mut session, &format!("create database tenant{d}"));
        run(&mut session, &format!("use tenant{d}; create table accounts (id int primary key, balance int not null)"));
        run(&mut session, "insert into accounts values (1, 100), (2, 200)");
        for p in 0..PROCEDURES {
            // Procedures of a few shapes, as an application's would be.
            let body = match p % 4 {
                0 => format!("select balance + {p} as v from accounts where id = @id"),
                1 => format!("begin declare @x int; select @x = balance from accounts where id = @id; select @x * 2 + {p} as v; end"),
                2 => format!("begin begin tran; update accounts set balance = balance + 0 where id = @id; commit; select {p} + @id as v; end"),
                _ => format!("begin declare @r int; exec @r = p{} @id; select {p} as v; end", p - 1),
            };
            run(&mut session, &format!("create procedure p{p} @id int as {body}"));
        }
    }
    for d in 0..DATABASES {
        run(&mut session, &format!("use tenant{d}"));
        for p in 0..PROCEDURES {
            let out = run(&mut session, &format!("exec p{p} 1"));
            let last = out.result_sets.last().expect("a result set");
            let expected = match p % 4 {
                0 => 100 + p as i64,
                1 => 200 + p as i64,
                2 => p as i64 + 1,
                _ => p as i64,
            };
            assert_eq!(last.1, vec![vec![Value::Int(expected)]], "tenant{d}.p{p}");
        }
        let out = run(&mut session, "select count(*) from sys.procedures");
        assert_eq!(out.result_sets[0].1, vec![vec![Value::Int(PROCEDURES as i64)]]);
    }
    assert!(shared.plans.hits.load(Ordering::Relaxed) > 0);
    let procedures: Vec<_> =
        shared.plans.entries().into_iter().filter(|e| e.text.starts_with("create procedure")).collect();
    assert_eq!(procedures.len(), PROCEDURES, "one cached entry per procedure text");
    assert!(procedures.iter().all(|e| e.databases == DATABASES), "every tenant shares each");
    // A procedure has one to three statements with plans: one plan each, not one per tenant.
    let statements: usize = procedures.iter().map(|e| e.plans).sum();
    assert!(statements <= PROCEDURES * 3, "{statements} statement plans for {PROCEDURES} procedures");
    drop(session);
    engine.shutdown().unwrap();
}

/// Listings and metadata read the registry: after a restart, with every user database
/// closed, sys.databases, sp_databases, sp_helpdb, DB_NAME, DB_ID and DATABASEPROPERTYEX
/// answer for 30 databases and open none of them.
#[test]
fn listing_databases_opens_none() {
    const LISTED: usize = 30;
    let dir = tempfile::tempdir().unwrap();
    let open = |dir: &std::path::Path| {
        let mut config = EngineConfig::new(dir);
        config.background = false;
        let engine = Engine::open(config).unwrap();
        let shared = tessera_sql::start_instance(engine.clone()).unwrap();
        (engine, Session::new(shared, "sa", "master").unwrap())
    };
    let run = |session: &mut Session, text: &str| -> Collected {
        let mut out = Collected::default();
        assert!(!session.execute(text, &mut out), "{text}: {:?}", out.errors());
        out
    };
    {
        let (engine, mut session) = open(dir.path());
        for d in 0..LISTED {
            run(&mut session, &format!("create database listed{d}; alter database listed{d} set recovery simple"));
        }
        session.close();
        engine.shutdown().unwrap();
    }

    let (engine, mut session) = open(dir.path());
    let opened_before = engine.stats().open_databases;
    let single = |out: &Collected| out.result_sets[0].1[0][0].clone();
    let out = run(
        &mut session,
        "select count(*) from sys.databases where name like 'listed%' and recovery_model_desc = 'SIMPLE'",
    );
    assert_eq!(single(&out), Value::Int(LISTED as i64));
    let out = run(&mut session, "exec sp_databases");
    assert_eq!(
        out.result_sets[0].1.iter().filter(|r| matches!(&r[0], Value::Str(n) if n.starts_with("listed"))).count(),
        LISTED
    );
    let out = run(&mut session, "exec sp_helpdb");
    assert_eq!(
        out.result_sets[0].1.iter().filter(|r| matches!(&r[0], Value::Str(n) if n.starts_with("listed"))).count(),
        LISTED
    );
    let out = run(&mut session, "exec sp_helpdb 'listed7'");
    assert_eq!(out.result_sets[1].1.len(), 2, "its data and log files");
    let out = run(&mut session, "select db_name(db_id('listed29')), databasepropertyex('listed3', 'Recovery')");
    assert_eq!(out.result_sets[0].1[0], vec![Value::str("listed29"), Value::str("SIMPLE")]);
    assert_eq!(engine.stats().open_databases, opened_before, "listing opened a database");
    run(&mut session, "select count(*) from listed5.sys.objects");
    assert_eq!(engine.stats().open_databases, opened_before + 1, "using one opens it");
    session.close();
    engine.shutdown().unwrap();
}

/// `sp_configure 'max open databases'` and `'idle database close (s)'` take effect at
/// RECONFIGURE: no more databases stay open than the limit, and an idle one closes.
#[test]
fn open_database_limits_are_configurable() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.background = false;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine.clone()).unwrap();
    let mut session = Session::new(shared.clone(), "sa", "master").unwrap();
    let run = |session: &mut Session, text: &str| {
        let mut out = Collected::default();
        assert!(!session.execute(text, &mut out), "{text}: {:?}", out.errors());
        out
    };
    run(&mut session, "exec sp_configure 'show advanced options', 1; reconfigure");
    run(&mut session, "exec sp_configure 'max open databases', 6; reconfigure");
    assert_eq!(engine.open_limits().0, 6);
    for d in 0..12 {
        run(
            &mut session,
            &format!("create database lim{d}; create table lim{d}.dbo.t (a int); insert lim{d}.dbo.t values ({d})"),
        );
        assert!(engine.stats().open_databases <= 6, "after lim{d}: {}", engine.stats().open_databases);
    }
    run(&mut session, "exec sp_configure 'idle database close (s)', 1; reconfigure");
    std::thread::sleep(std::time::Duration::from_millis(1200));
    engine.maintain();
    // master stays open: the session's current database holds it.
    assert!(engine.stats().open_databases <= 2, "{} open after the idle time", engine.stats().open_databases);
    // Their catalogs went with them, and come back, changes and all, on the next use.
    assert!(shared.loaded_catalogs() <= 2, "{} catalogs loaded", shared.loaded_catalogs());
    run(&mut session, "use lim11");
    run(&mut session, "create procedure pr as select a * 10 as v from t");
    run(&mut session, "use master");
    assert!(engine.close_database("lim11").unwrap());
    assert!(shared.loaded_catalogs() <= 2, "{} catalogs loaded", shared.loaded_catalogs());
    let out = run(&mut session, "exec lim11.dbo.pr");
    assert_eq!(out.result_sets[0].1, vec![vec![Value::Int(110)]]);
    // sys.dm_tessera_databases shows which are open, their catalogs and plans.
    let out = run(
        &mut session,
        "select name, is_open, sign(catalog_kb), sign(cached_plans), sign(file_size_kb) from sys.dm_tessera_databases where name in ('lim3', 'lim11') order by name",
    );
    assert_eq!(
        out.result_sets[0].1,
        vec![
            vec![Value::Str("lim11".into()), Value::Bit(true), Value::Int(1), Value::Int(1), Value::Int(1)],
            vec![Value::Str("lim3".into()), Value::Bit(false), Value::Int(0), Value::Int(0), Value::Int(1)],
        ]
    );
    run(&mut session, "exec sp_configure 'max open databases', 0; reconfigure");
    assert_eq!(engine.open_limits().0, engine.config().max_open_databases, "0: as many as the server allows");
    session.close();
    engine.shutdown().unwrap();
}
