//! A transaction across two databases of one engine commits in both or in neither,
//! whatever instant the power goes: the power is cut (`tessera_io::faults::power`)
//! before every operation of a run that opens the engine, changes both databases and
//! commits them together — including between the Prepare records, the decision and
//! the Commit records — then the files are left as a power loss could leave them and
//! the engine recovers.

use std::path::Path;

use tessera_database::{DatabaseOptions, Engine, EngineConfig, Transaction};
use tessera_io::faults::power;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.pool_bytes = 8 << 20;
    c.background = false;
    c
}

/// Two databases, each with table `t` holding `balance` = 100.
fn setup(dir: &Path) {
    let engine = Engine::open(config(dir)).unwrap();
    for name in ["a", "b"] {
        engine.create_database(name, DatabaseOptions::default()).unwrap();
        let db = engine.database(name).unwrap();
        let t = db.create_table("t").unwrap();
        let mut tx = db.begin();
        tx.insert(t, b"balance", b"100").unwrap();
        tx.commit().unwrap();
    }
    engine.shutdown().unwrap();
}

/// Moves 30 from a to b in one transaction; whether the commit returned Ok.
fn transfer(dir: &Path) -> bool {
    let Ok(engine) = Engine::open(config(dir)) else { return false };
    let run = || -> tessera_database::Result<bool> {
        let (a, b) = (engine.database("a")?, engine.database("b")?);
        let (ta, tb) = (a.table("t").unwrap(), b.table("t").unwrap());
        let (mut x, mut y) = (a.begin(), b.begin());
        x.update(ta, b"balance", b"70")?;
        y.update(tb, b"balance", b"130")?;
        Ok(Transaction::commit_together(vec![x, y], false).is_ok())
    };
    let committed = run().unwrap_or(false);
    let _ = engine.shutdown();
    committed
}

/// The two balances after recovery, and how many prepared transactions it committed.
fn balances(dir: &Path) -> ((Vec<u8>, Vec<u8>), usize) {
    let engine = Engine::open(config(dir)).expect("recovery succeeds");
    let mut values = Vec::new();
    let mut prepared_committed = 0;
    for name in ["a", "b"] {
        let db = engine.database(name).unwrap();
        prepared_committed += db.recovery().map_or(0, |r| r.prepared_committed);
        db.check().unwrap();
        let t = db.table("t").unwrap();
        let tx = db.begin();
        values.push(tx.get(t, b"balance").unwrap().unwrap());
        tx.commit().unwrap();
    }
    engine.shutdown().unwrap();
    let b = values.pop().unwrap();
    ((values.pop().unwrap(), b), prepared_committed)
}

#[test]
fn a_transaction_across_databases_survives_a_power_loss_whole_or_not_at_all() {
    // (Each run sets up its own directory: the registry holds the files' full paths.)
    // A run without a cut: how many operations there are to cut before.
    let dry = tempfile::tempdir().unwrap();
    setup(dry.path());
    power::record(dry.path());
    assert!(transfer(dry.path()));
    let operations = power::operations(dry.path());
    power::forget(dry.path());
    assert_eq!(balances(dry.path()).0, (b"70".to_vec(), b"130".to_vec()));

    let (mut committed, mut not, mut settled_by_recovery) = (0, 0, 0);
    for cut in 0..operations {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        power::record(dir.path());
        power::cut_at(dir.path(), cut);
        let acknowledged = transfer(dir.path());
        power::power_loss(dir.path(), cut).unwrap();
        let (found, prepared_committed) = balances(dir.path());
        settled_by_recovery += prepared_committed;
        if found == (b"70".to_vec(), b"130".to_vec()) {
            committed += 1;
        } else {
            assert_eq!(found, (b"100".to_vec(), b"100".to_vec()), "cut {cut}: half a transaction");
            assert!(!acknowledged, "cut {cut}: an acknowledged commit was lost");
            not += 1;
        }
    }
    assert!(committed > 0 && not > 0, "{committed} committed, {not} not, of {operations} cuts");
    assert!(settled_by_recovery > 0, "no cut fell between the decision and a database's Commit record");
}
