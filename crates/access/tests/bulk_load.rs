//! Minimally logged bulk loads: the tree they build is the tree row-by-row inserts
//! would hold; they log a small fraction of the data; rollback and crashes before the
//! commit leave an empty tree and no allocated pages; a committed load survives a crash
//! without a checkpoint, and so do later logged changes to its pages, even torn ones.

use std::path::Path;
use std::sync::Arc;

use tessera_access::btree;
use tessera_access::space::{DataConfig, Space, BOOT_ROOT};
use tessera_access::Durability;
use tessera_buffer::page::{PageNo, PAGE_SIZE};
use tessera_buffer::{BufferPool, PoolConfig};
use tessera_log::{LogConfig, Wal};

fn pool() -> Arc<BufferPool> {
    BufferPool::new(PoolConfig { max_bytes: 64 << 20, background_writer: false, ..PoolConfig::default() }).unwrap()
}

/// 200-byte keys and 300-byte values: a few thousand rows make a three-level tree.
fn key(i: u32) -> Vec<u8> {
    let mut k = format!("{i:010}").into_bytes();
    k.resize(200, b'k');
    k
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("value {i}").into_bytes();
    v.resize(300, b'v');
    v
}

fn rows(n: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n).map(|i| (key(i * 2), value(i * 2))).collect()
}

fn open(dir: &Path) -> Arc<Space> {
    let (wal, master) = Wal::open(&dir.join("b.ldf"), "b", LogConfig::default()).unwrap();
    let space = Space::open(&dir.join("b.mdf"), pool(), wal, &DataConfig::default()).unwrap();
    space.recover(master, &|_| false).unwrap();
    space
}

fn create(dir: &Path) -> (Arc<Space>, u32) {
    let wal = Wal::create(&dir.join("b.ldf"), "b", LogConfig::default()).unwrap();
    let space = Space::create(&dir.join("b.mdf"), pool(), wal, &DataConfig::default()).unwrap();
    let mut txn = space.begin(Durability::Full);
    let root = space.create_tree(&mut txn).unwrap();
    space.commit(txn).unwrap();
    space.checkpoint().unwrap();
    (space, root.raw())
}

fn contents(space: &Space, root: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    let txn = space.begin(Durability::Full);
    let all: Vec<_> = space
        .scan(
            &txn,
            PageNo::from_raw(root),
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            btree::Direction::Forward,
            tessera_access::OnLocked::Wait,
        )
        .map(Result::unwrap)
        .collect();
    space.commit(txn).unwrap();
    all
}

#[test]
fn a_bulk_load_builds_the_tree_with_little_log_and_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let (space, root) = create(dir.path());
    let data = rows(6000);
    let log_before = space.wal.stats().bytes_written;

    let mut txn = space.begin(Durability::Full);
    let out =
        space.bulk_load(&mut txn, PageNo::from_raw(root), data.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap().unwrap();
    space.commit(txn).unwrap();
    assert_eq!(out.rows, 6000);
    let (stats, _) = btree::check(&space, PageNo::from_raw(root)).unwrap();
    assert_eq!(stats.records, 6000);
    assert!(stats.depth >= 3, "depth {}", stats.depth);
    assert_eq!(out.pages as usize, stats.leaf_pages + stats.internal_pages - 1, "every page but the root unlogged");
    let logged = space.wal.stats().bytes_written - log_before;
    let data_bytes = (6000 * 500) as u64;
    assert!(logged * 10 < data_bytes, "{logged} bytes of log for {data_bytes} bytes of rows");
    assert_eq!(contents(&space, root), data);
    let after_load = std::fs::read(dir.path().join("b.mdf")).unwrap();

    // Logged changes after the load: inserts between the loaded keys (splits of unlogged
    // pages), updates and deletes.
    let mut txn = space.begin(Durability::Full);
    let mut expected: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = data.into_iter().collect();
    for i in (1..12000u32).step_by(10) {
        space.insert(&mut txn, PageNo::from_raw(root), &key(i), &value(i)).unwrap();
        expected.insert(key(i), value(i));
    }
    for i in (0..12000u32).step_by(14) {
        space.update(&mut txn, PageNo::from_raw(root), &key(i), b"changed").unwrap();
        expected.insert(key(i), b"changed".to_vec());
    }
    for i in (4..12000u32).step_by(18) {
        space.delete(&mut txn, PageNo::from_raw(root), &key(i)).unwrap();
        expected.remove(&key(i));
    }
    space.commit(txn).unwrap();
    space.pool.flush_file(space.file).unwrap();
    drop(space);

    // Crash (no checkpoint since the load) with every page written since the load torn:
    // its second half as it was after the load.
    let now = std::fs::read(dir.path().join("b.mdf")).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(dir.path().join("b.mdf")).unwrap();
    let mut torn = 0;
    for (no, page) in now.chunks(PAGE_SIZE).enumerate() {
        let old = after_load.get(no * PAGE_SIZE..(no + 1) * PAGE_SIZE).unwrap_or(&[0; PAGE_SIZE]);
        if old[PAGE_SIZE / 2..] != page[PAGE_SIZE / 2..] {
            let at = (no * PAGE_SIZE + PAGE_SIZE / 2) as u64;
            std::os::unix::fs::FileExt::write_all_at(&file, &old[PAGE_SIZE / 2..], at).unwrap();
            torn += 1;
        }
    }
    drop(file);
    assert!(torn > 50, "only {torn} pages torn");
    let space = open(dir.path());
    btree::check(&space, PageNo::from_raw(root)).unwrap();
    btree::check(&space, BOOT_ROOT).unwrap();
    assert_eq!(contents(&space, root), expected.into_iter().collect::<Vec<_>>());
}

#[test]
fn rolled_back_and_crashed_loads_leave_an_empty_tree_and_free_their_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (space, root) = create(dir.path());
    let before = space.allocated_pages().unwrap();
    let data = rows(3000);

    let mut txn = space.begin(Durability::Full);
    space.bulk_load(&mut txn, PageNo::from_raw(root), data.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap().unwrap();
    assert_eq!(contents_in(&space, &txn, root), 3000);
    space.rollback(txn).unwrap();
    assert_eq!(space.allocated_pages().unwrap(), before);
    assert!(contents(&space, root).is_empty());
    btree::check(&space, PageNo::from_raw(root)).unwrap();

    // Rows inserted after the load split its pages: rollback frees those pages too.
    let mut txn = space.begin(Durability::Full);
    space.bulk_load(&mut txn, PageNo::from_raw(root), data.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap().unwrap();
    for i in (1..6000u32).step_by(2) {
        space.insert(&mut txn, PageNo::from_raw(root), &key(i), &value(i)).unwrap();
    }
    space.rollback(txn).unwrap();
    assert_eq!(space.allocated_pages().unwrap(), before);
    btree::check(&space, PageNo::from_raw(root)).unwrap();

    // A finished load that never commits: recovery empties the tree again.
    let mut txn = space.begin(Durability::Full);
    space.bulk_load(&mut txn, PageNo::from_raw(root), data.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap().unwrap();
    space.wal.flush_all().unwrap();
    std::mem::forget(txn);
    drop(space);
    let space = open(dir.path());
    assert_eq!(space.allocated_pages().unwrap(), before);
    assert!(contents(&space, root).is_empty());
    btree::check(&space, PageNo::from_raw(root)).unwrap();

    // A load cut short (here by a key out of order at the end) and then a crash with its
    // pages torn: recovery frees them without reading them.
    let mut txn = space.begin(Durability::Full);
    let bad = data.iter().map(|(k, v)| (&k[..], &v[..])).chain([(&b"0"[..], &b"late"[..])]);
    assert!(space.bulk_load(&mut txn, PageNo::from_raw(root), bad).is_err());
    let loaded: Vec<PageNo> = space.allocated_pages().unwrap().into_iter().filter(|p| !before.contains(p)).collect();
    assert!(loaded.len() > 50, "{} pages written before the load failed", loaded.len());
    space.pool.flush_file(space.file).unwrap();
    std::mem::forget(txn);
    drop(space);
    let file = std::fs::OpenOptions::new().write(true).open(dir.path().join("b.mdf")).unwrap();
    for no in loaded {
        std::os::unix::fs::FileExt::write_all_at(&file, &[0xA5; 100], no.byte_offset() + 2000).unwrap();
    }
    drop(file);
    let space = open(dir.path());
    assert_eq!(space.allocated_pages().unwrap(), before);
    assert!(contents(&space, root).is_empty());
    btree::check(&space, PageNo::from_raw(root)).unwrap();
}

fn contents_in(space: &Space, txn: &tessera_access::Txn, root: u32) -> usize {
    space
        .scan(
            txn,
            PageNo::from_raw(root),
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            btree::Direction::Forward,
            tessera_access::OnLocked::Wait,
        )
        .count()
}

#[test]
fn only_empty_trees_load_and_keys_must_ascend() {
    let dir = tempfile::tempdir().unwrap();
    let (space, root) = create(dir.path());
    let mut txn = space.begin(Durability::Full);
    space.insert(&mut txn, PageNo::from_raw(root), b"a", b"1").unwrap();
    let rows = [(&b"b"[..], &b"2"[..])];
    assert_eq!(space.bulk_load(&mut txn, PageNo::from_raw(root), rows).unwrap(), None);
    space.commit(txn).unwrap();

    let mut txn = space.begin(Durability::Full);
    let other = space.create_tree(&mut txn).unwrap();
    let rows = [(&b"b"[..], &b"2"[..]), (&b"a"[..], &b"1"[..])];
    assert!(space.bulk_load(&mut txn, other, rows).is_err());
    space.rollback(txn).unwrap();

    // One row: the root itself becomes the leaf.
    let mut txn = space.begin(Durability::Full);
    let single = space.create_tree(&mut txn).unwrap();
    let out = space.bulk_load(&mut txn, single, [(&b"k"[..], &b"v"[..])]).unwrap().unwrap();
    assert_eq!((out.rows, out.pages), (1, 0));
    space.commit(txn).unwrap();
    assert_eq!(contents(&space, single.raw()), vec![(b"k".to_vec(), b"v".to_vec())]);
    btree::check(&space, single).unwrap();
}
