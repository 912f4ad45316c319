//! A transaction joins the active table when it first logs, not when it begins: one that
//! only reads costs the table nothing, and one that writes is still known to every
//! checkpoint from its first record on, so recovery undoes it after a crash whenever it
//! began.

use std::sync::Arc;

use tessera_access::space::{DataConfig, Space};
use tessera_access::Durability;
use tessera_buffer::{BufferPool, PoolConfig};
use tessera_log::{LogConfig, Wal};

fn pool() -> Arc<BufferPool> {
    BufferPool::new(PoolConfig { max_bytes: 4 << 20, background_writer: false, ..PoolConfig::default() }).unwrap()
}

#[test]
fn readers_stay_out_of_the_active_table_and_writers_survive_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let (data, log) = (dir.path().join("d.mdf"), dir.path().join("d.ldf"));
    let wal = Wal::create(&log, "d", LogConfig::default()).unwrap();
    let space = Space::create(&data, pool(), wal, &DataConfig::default()).unwrap();
    let mut setup = space.begin(Durability::Full);
    let root = space.create_tree(&mut setup).unwrap();
    space.insert(&mut setup, root, b"kept", b"committed").unwrap();
    space.commit(setup).unwrap();
    assert_eq!(space.txns.active_count(), 0);

    // A reader: nothing in the active table, before or after its read.
    let reader = space.begin(Durability::Full);
    assert_eq!(space.get(&reader, root, b"kept").unwrap().as_deref(), Some(&b"committed"[..]));
    assert_eq!(space.txns.active_count(), 0);
    space.commit(reader).unwrap();

    // A transaction that begins before a checkpoint and first writes after it, and one
    // that writes before a checkpoint: both are in the table from their first record,
    // and both are losers after a crash, however many checkpoints passed.
    let mut late = space.begin(Durability::Full);
    let mut early = space.begin(Durability::Full);
    space.insert(&mut early, root, b"early", &[1u8; 300]).unwrap();
    assert_eq!(space.txns.active_count(), 1);
    space.checkpoint().unwrap();
    space.insert(&mut late, root, b"late", &[2u8; 300]).unwrap();
    assert_eq!(space.txns.active_count(), 2);
    for i in 0..200u32 {
        space.insert(&mut early, root, &i.to_be_bytes(), &[3u8; 300]).unwrap();
        if i % 50 == 0 {
            space.checkpoint().unwrap();
        }
    }
    space.wal.flush_all().unwrap();
    space.pool.flush_file(space.file).unwrap();
    std::mem::forget(late);
    std::mem::forget(early);
    drop(space);

    let (wal, master) = Wal::open(&log, "d", LogConfig::default()).unwrap();
    let space = Space::open(&data, pool(), wal, &DataConfig::default()).unwrap();
    let outcome = space.recover(master, &|_| false).unwrap();
    assert_eq!(outcome.losers, 2);
    let txn = space.begin(Durability::Full);
    assert_eq!(space.get(&txn, root, b"kept").unwrap().as_deref(), Some(&b"committed"[..]));
    assert_eq!(space.get(&txn, root, b"early").unwrap(), None);
    assert_eq!(space.get(&txn, root, b"late").unwrap(), None);
    assert_eq!(space.get(&txn, root, &7u32.to_be_bytes()).unwrap(), None);
    space.commit(txn).unwrap();
}
