//! A full disk: the statement that hits it gets error 9002 (log) or 1105 (data), its
//! transaction can still roll back, committed data stays readable, the engine keeps
//! working, and after a restart nothing committed is lost.
//!
//! The disk is a 24 MiB tmpfs mounted for the test (the suite runs as root, as CI does).

use std::ops::Bound;
use std::path::Path;

use tessera_access::key::KeyBuf;
use tessera_database::{DatabaseOptions, Direction, Engine, EngineConfig};
use tessera_io::faults::SmallDisk;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.pool_bytes = 8 << 20;
    c.background = false;
    c.log.initial_size = 1 << 20;
    c
}

fn key(i: i32) -> Vec<u8> {
    KeyBuf::new().i32(i, false).as_bytes().to_vec()
}

#[test]
fn a_full_disk_is_a_clear_error_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let _disk = SmallDisk::mount(dir.path(), "24M");
    {
        let engine = Engine::open(config(dir.path())).unwrap();
        engine.create_database("full", DatabaseOptions::default()).unwrap();
        let db = engine.database("full").unwrap();
        let t = db.create_table("t").unwrap();
        let mut tx = db.begin();
        for i in 0..200 {
            tx.insert(t, &key(i), &[b'c'; 500]).unwrap();
        }
        tx.commit().unwrap();

        // One transaction fills the disk.
        let mut big = db.begin();
        let err = (1000..1_000_000)
            .map(|i| big.insert(t, &key(i), &[b'x'; 2000]))
            .find_map(|r| r.err())
            .expect("the disk fills up");
        assert!(matches!(err.number(), 9002 | 1105), "{err}");
        let msg = err.to_string();
        if err.number() == 9002 {
            assert!(msg.contains("ACTIVE_TRANSACTION"), "the open transaction holds the log: {msg}");
        }
        assert!(msg.contains("'full'"), "the message names the database: {msg}");
        big.rollback().expect("rollback has its reserved log space");

        // Committed rows are intact; the engine keeps serving.
        let tx = db.begin();
        let rows: Vec<_> =
            tx.scan(t, Bound::Unbounded, Bound::Unbounded, Direction::Forward).map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), 200);
        assert!(rows.iter().all(|(_, v)| v == &vec![b'c'; 500]));
        tx.commit().unwrap();
        db.check().unwrap();
        // A small change still fits or fails cleanly, never half-way.
        let mut tx = db.begin();
        match tx.update(t, &key(0), b"small") {
            Ok(found) => {
                assert!(found);
                tx.commit().unwrap();
            }
            Err(e) => {
                assert!(matches!(e.number(), 9002 | 1105), "{e}");
                tx.rollback().unwrap();
            }
        }
        db.check().unwrap();
    }
    // After a restart the committed rows are there and the big transaction is not.
    let engine = Engine::open(config(dir.path())).unwrap();
    let db = engine.database("full").unwrap();
    db.check().unwrap();
    let t = db.table("t").unwrap();
    let tx = db.begin();
    let n = tx.scan(t, Bound::Unbounded, Bound::Unbounded, Direction::Forward).count();
    assert_eq!(n, 200);
    assert!(tx.get(t, &key(1000)).unwrap().is_none());
    tx.commit().unwrap();
}
