//! A tree created inside a transaction disappears with it: on rollback and when the
//! transaction is cut off by a crash (recovery undoes it), every page goes back to the
//! allocation maps.

use std::sync::Arc;

use tessera_access::btree;
use tessera_access::space::{DataConfig, Space, BOOT_ROOT};
use tessera_access::Durability;
use tessera_buffer::{BufferPool, PoolConfig};
use tessera_log::{LogConfig, Wal};

fn pool() -> Arc<BufferPool> {
    BufferPool::new(PoolConfig { max_bytes: 4 << 20, background_writer: false, ..PoolConfig::default() }).unwrap()
}

#[test]
fn rolled_back_and_crashed_tree_creations_free_their_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (data, log) = (dir.path().join("d.mdf"), dir.path().join("d.ldf"));
    let wal = Wal::create(&log, "d", LogConfig::default()).unwrap();
    let space = Space::create(&data, pool(), wal, &DataConfig::default()).unwrap();
    space.checkpoint().unwrap();
    let before = space.allocated_pages().unwrap();

    // Rollback: a tree that grew to several levels is freed entirely.
    let mut txn = space.begin(Durability::Full);
    let root = space.create_tree(&mut txn).unwrap();
    for i in 0..3000u32 {
        space.insert(&mut txn, root, &i.to_be_bytes(), &[7u8; 200]).unwrap();
    }
    assert!(btree::check(&space, root).unwrap().0.depth >= 2);
    space.rollback(txn).unwrap();
    assert_eq!(space.allocated_pages().unwrap(), before);

    // Crash: the creating transaction never commits; recovery frees the tree.
    let mut txn = space.begin(Durability::Full);
    let root = space.create_tree(&mut txn).unwrap();
    for i in 0..2000u32 {
        space.insert(&mut txn, root, &i.to_be_bytes(), &[9u8; 300]).unwrap();
    }
    space.wal.flush_all().unwrap();
    space.pool.flush_file(space.file).unwrap();
    std::mem::forget(txn);
    let pool2 = pool();
    drop(space);
    let (wal, master) = Wal::open(&log, "d", LogConfig::default()).unwrap();
    let space = Space::open(&data, pool2, wal, &DataConfig::default()).unwrap();
    let outcome = space.recover(master, &|_| false).unwrap();
    assert_eq!(outcome.losers, 1);
    assert_eq!(space.allocated_pages().unwrap(), before, "the crashed creation left no pages behind");
    btree::check(&space, BOOT_ROOT).unwrap();
}

/// A committed DROP frees its tree (`Space::free_tree`), and the database layer runs the
/// free again at the next open when a crash or a full log stopped it before its pending
/// entry was removed. By then the root page may be the root of a tree created since: the
/// same page, formatted as the same object. Running the free again must leave that tree
/// alone (it used to free it: a table created after a drop lost every row at the next
/// open).
#[test]
fn a_drop_run_again_leaves_a_new_tree_on_the_dropped_root_page_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (data, log) = (dir.path().join("d.mdf"), dir.path().join("d.ldf"));
    let wal = Wal::create(&log, "d", LogConfig::default()).unwrap();
    let space = Space::create(&data, pool(), wal, &DataConfig::default()).unwrap();
    let mut txn = space.begin(Durability::Full);
    let old = space.create_tree(&mut txn).unwrap();
    for i in 0..500u32 {
        space.insert(&mut txn, old, &i.to_be_bytes(), &[1u8; 200]).unwrap();
    }
    space.commit(txn).unwrap();
    let allocated = space.allocated_pages().unwrap();

    let dropped_at = space.wal.end_lsn();
    space.free_tree(old, dropped_at).unwrap();
    let mut txn = space.begin(Durability::Full);
    let new = space.create_tree(&mut txn).unwrap();
    assert_eq!(new, old, "the first free page is the old root");
    for i in 0..300u32 {
        space.insert(&mut txn, new, &i.to_be_bytes(), &[2u8; 200]).unwrap();
    }
    space.commit(txn).unwrap();
    let stats = btree::check(&space, new).unwrap().0;

    space.free_tree(old, dropped_at).unwrap();
    assert_eq!(btree::check(&space, new).unwrap().0, stats, "the new tree is untouched");
    let txn = space.begin(Durability::Full);
    assert_eq!(space.get(&txn, new, &299u32.to_be_bytes()).unwrap(), Some(vec![2u8; 200]));
    space.commit(txn).unwrap();

    // The old tree dropped again before its root was freed: the free finishes it.
    let dropped_at = space.wal.end_lsn();
    space.free_tree(new, dropped_at).unwrap();
    space.free_tree(new, dropped_at).unwrap();
    assert!(space.allocated_pages().unwrap().len() < allocated.len());
    assert!(!space.allocated_pages().unwrap().contains(&new));
}
