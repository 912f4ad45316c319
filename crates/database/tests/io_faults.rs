//! A data file whose sync fails at a checkpoint. Linux may have dropped the pages whose
//! write-back failed (the fault layer drops them: `tessera_io::faults`), while the
//! buffer pool holds them as clean. So no later checkpoint may complete on top of them:
//! the database goes offline (9001) and its recovery redoes from the last checkpoint that
//! did complete. Before this, the checkpoint at shutdown completed and moved the redo
//! point past changes that were on no disk, and they were lost.

use std::ops::Bound;

use tessera_database::{DatabaseOptions, Direction, Engine, EngineConfig};
use tessera_io::faults::{self, power, Fault, Op};

fn config(dir: &std::path::Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.pool_bytes = 8 << 20;
    c.background = false;
    c
}

#[test]
fn a_failed_data_file_sync_loses_no_acknowledged_change() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = Engine::open(config(dir.path())).unwrap();
        engine.create_database("d", DatabaseOptions::default()).unwrap();
        let db = engine.database("d").unwrap();
        let t = db.create_table("t").unwrap();
        db.checkpoint().unwrap();
        power::record(dir.path());
        for i in 0..200u32 {
            let mut tx = db.begin();
            tx.insert(t, format!("{i:05}").as_bytes(), &[7; 300]).unwrap();
            tx.commit().unwrap();
        }
        faults::arm(Fault::new(Op::Sync, dir.path(), "/d.mdf", libc::EIO));
        let e = db.checkpoint().unwrap_err();
        assert_eq!(e.number(), 823, "{e}");
        let e = db.available().unwrap_err();
        assert_eq!(e.number(), 9001, "offline after the failed sync: {e}");
        let _ = engine.shutdown();
    }
    power::power_loss(dir.path(), 1).unwrap();
    let engine = Engine::open(config(dir.path())).unwrap();
    let db = engine.database("d").unwrap();
    db.check().unwrap();
    let t = db.table("t").unwrap();
    let tx = db.begin();
    assert_eq!(tx.scan(t, Bound::Unbounded, Bound::Unbounded, Direction::Forward).count(), 200);
    tx.commit().unwrap();
}
