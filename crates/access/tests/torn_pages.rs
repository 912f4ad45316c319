//! Torn writes: a process killed (or a machine losing power) in the middle of writing an
//! 8 KiB page can leave half of the new image beside half of the old one. Recovery must
//! still rebuild exactly the committed state, because a page's first change after a
//! checkpoint begins is logged as a full image of the page, and redo installs that image
//! without reading what is on disk.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use tessera_access::btree;
use tessera_access::space::{DataConfig, Space, BOOT_ROOT};
use tessera_access::Durability;
use tessera_buffer::page::{self, PageNo, PAGE_SIZE};
use tessera_buffer::{BufferPool, PoolConfig};
use tessera_log::{LogConfig, Wal};

fn pool() -> Arc<BufferPool> {
    BufferPool::new(PoolConfig { max_bytes: 16 << 20, background_writer: false, ..PoolConfig::default() }).unwrap()
}

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("row {i} round {round} {}", "x".repeat((i % 97) as usize)).into_bytes()
}

fn read_pages(path: &Path) -> Vec<Vec<u8>> {
    std::fs::read(path).unwrap().chunks(PAGE_SIZE).map(<[u8]>::to_vec).collect()
}

#[test]
fn pages_torn_after_a_checkpoint_are_rebuilt_from_logged_images() {
    let dir = tempfile::tempdir().unwrap();
    let (data, log) = (dir.path().join("t.mdf"), dir.path().join("t.ldf"));
    let wal = Wal::create(&log, "t", LogConfig::default()).unwrap();
    let space = Space::create(&data, pool(), wal, &DataConfig::default()).unwrap();

    let mut txn = space.begin(Durability::Full);
    let root = space.create_tree(&mut txn).unwrap();
    for i in 0..4000u32 {
        space.insert(&mut txn, root, &key(i), &value(i, 0)).unwrap();
    }
    space.commit(txn).unwrap();
    space.checkpoint().unwrap();
    let before = read_pages(&data);

    // Change every leaf after the checkpoint (updates, inserts that split, deletes),
    // write the pages out and "crash" without another checkpoint.
    let mut txn = space.begin(Durability::Full);
    for i in (0..4000u32).step_by(3) {
        space.update(&mut txn, root, &key(i), &value(i, 1)).unwrap();
    }
    for i in 4000..5000u32 {
        space.insert(&mut txn, root, &key(i), &value(i, 1)).unwrap();
    }
    for i in (1..4000u32).step_by(7) {
        space.delete(&mut txn, root, &key(i)).unwrap();
    }
    space.commit(txn).unwrap();
    space.pool.flush_file(space.file).unwrap();
    let after = read_pages(&data);
    drop(space);

    // Tear every page that changed: half of it new, half old (alternating halves).
    let file = OpenOptions::new().write(true).open(&data).unwrap();
    let mut torn = 0;
    for (no, new) in after.iter().enumerate() {
        let Some(old) = before.get(no) else { continue };
        if old == new {
            continue;
        }
        let half = if no % 2 == 0 { 0..PAGE_SIZE / 2 } else { PAGE_SIZE / 2..PAGE_SIZE };
        if old[half.clone()] == new[half.clone()] {
            continue;
        }
        file.write_all_at(&old[half.clone()], (no * PAGE_SIZE + half.start) as u64).unwrap();
        let mut image = new.clone();
        image[half.clone()].copy_from_slice(&old[half]);
        if page::verify(&image, PageNo::from_raw(no as u32)).is_err() {
            torn += 1;
        }
    }
    file.sync_all().unwrap();
    assert!(torn >= 10, "the test tore only {torn} pages");

    let (wal, master) = Wal::open(&log, "t", LogConfig::default()).unwrap();
    let space = Space::open(&data, pool(), wal, &DataConfig::default()).unwrap();
    space.recover(master, &|_| false).unwrap();
    space.verify_header().unwrap();
    btree::check(&space, BOOT_ROOT).unwrap();
    btree::check(&space, root).unwrap();
    let txn = space.begin(Durability::Full);
    for i in 0..5000u32 {
        let expected = if i < 4000 && i % 7 == 1 {
            None
        } else if i % 3 == 0 || i >= 4000 {
            Some(value(i, 1))
        } else {
            Some(value(i, 0))
        };
        assert_eq!(space.get(&txn, root, &key(i)).unwrap(), expected, "key {i}");
    }
    space.commit(txn).unwrap();
}
