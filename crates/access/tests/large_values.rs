//! Large values in their own tree (`tessera_access::lob`): written in chunks, read back
//! whole and in ranges, freed only after the commit that drops them and only once no
//! reader pinned before that commit remains, kept by a rollback (whole or to a
//! savepoint), and their pages given back once removed.

use std::sync::Arc;

use tessera_access::lob::{self, CHUNK_BYTES};
use tessera_access::space::{DataConfig, Space};
use tessera_access::Durability;
use tessera_buffer::page::PageNo;
use tessera_buffer::{BufferPool, PoolConfig};
use tessera_log::{LogConfig, Wal};

fn pool() -> Arc<BufferPool> {
    BufferPool::new(PoolConfig { max_bytes: 16 << 20, background_writer: false, ..PoolConfig::default() }).unwrap()
}

fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed).collect()
}

fn space(dir: &std::path::Path) -> Arc<Space> {
    let wal = Wal::create(&dir.join("d.ldf"), "d", LogConfig::default()).unwrap();
    Space::create("d", &dir.join("d.mdf"), pool(), wal, &DataConfig::default()).unwrap()
}

fn new_tree(space: &Space) -> PageNo {
    let mut txn = space.begin(Durability::Full);
    let root = space.create_tree(&mut txn).unwrap();
    space.commit(txn).unwrap();
    root
}

fn read_all(space: &Space, tree: PageNo, v: tessera_access::row::OffRow) -> tessera_errors::Result<Vec<u8>> {
    let mut out = vec![0; v.len as usize];
    space.lob_read(tree, v, 0, &mut out)?;
    Ok(out)
}

#[test]
fn values_round_trip_whole_and_in_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path());
    let tree = new_tree(&space);
    let lens = [17, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 5 * CHUNK_BYTES + 123, 1 << 20];
    let mut txn = space.begin(Durability::Full);
    let stored: Vec<_> = lens
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let data = value(n, i as u8);
            (space.lob_write(&mut txn, tree, tree, &data).unwrap(), data)
        })
        .collect();
    space.commit(txn).unwrap();
    let ids: std::collections::HashSet<u64> = stored.iter().map(|(p, _)| p.id).collect();
    assert_eq!(ids.len(), stored.len(), "each value has its own id");
    for (p, data) in &stored {
        assert_eq!(p.len, data.len() as u64);
        assert_eq!(&read_all(&space, tree, *p).unwrap(), data);
        // Ranges across chunk boundaries and at the ends; past the end is refused.
        let n = data.len() as u64;
        for (from, len) in [(0, 1), (n - 1, 1), (n / 3, n / 2), (CHUNK_BYTES as u64 - 3, 10), (n - 5, 5), (n, 0)] {
            let from = from.min(n);
            let len = len.min(n - from);
            let mut out = vec![0xEE; len as usize];
            space.lob_read(tree, *p, from, &mut out).unwrap();
            assert_eq!(&out[..], &data[from as usize..(from + len) as usize], "bytes {from}+{len} of a {n}-byte value");
        }
        assert!(space.lob_read(tree, *p, n - 1, &mut [0; 2]).is_err());
    }
    // A pointer to chunks that are not there is 7105; one whose length its chunks
    // disagree with is damage (824).
    let unknown = tessera_access::row::OffRow { id: 1 << 40, len: 100 };
    assert_eq!(read_all(&space, tree, unknown).unwrap_err().number(), 7105);
    let too_long = tessera_access::row::OffRow { id: stored[0].0.id, len: stored[0].0.len + CHUNK_BYTES as u64 };
    assert_eq!(read_all(&space, tree, too_long).unwrap_err().number(), 824);
}

#[test]
fn freed_values_go_after_commit_and_after_older_readers() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path());
    let tree = new_tree(&space);
    let mut txn = space.begin(Durability::Full);
    let data = value(3 * CHUNK_BYTES + 10, 1);
    let a = space.lob_write(&mut txn, tree, tree, &data).unwrap();
    let b = space.lob_write(&mut txn, tree, tree, &data).unwrap();
    space.commit(txn).unwrap();
    space.checkpoint().unwrap();
    let pages_with_both = space.allocated_pages().unwrap().len();

    // A rollback keeps a dropped value; so does a rollback to a savepoint before the drop.
    let mut txn = space.begin(Durability::Full);
    space.insert(&mut txn, tree, b"z-row", b"a change to log").unwrap();
    space.lob_free(&mut txn, tree, a).unwrap();
    space.rollback(txn).unwrap();
    assert_eq!(read_all(&space, tree, a).unwrap(), data);
    let mut txn = space.begin(Durability::Full);
    space.insert(&mut txn, tree, b"z-row", b"a change to log").unwrap();
    let sp = space.savepoint(&txn);
    space.delete(&mut txn, tree, b"z-row").unwrap();
    space.lob_free(&mut txn, tree, a).unwrap();
    space.rollback_to(&mut txn, sp).unwrap();
    space.commit(txn).unwrap();
    assert_eq!(read_all(&space, tree, a).unwrap(), data);
    assert_eq!(lob::Horizon::pending(&space), 0);

    // A reader pinned before the commit that drops `a` still reads it; one pinned after
    // does not hold it back.
    let early = space.lob_pin();
    let mut txn = space.begin(Durability::Full);
    space.delete(&mut txn, tree, b"z-row").unwrap();
    space.lob_free(&mut txn, tree, a).unwrap();
    assert_eq!(read_all(&space, tree, a).unwrap(), data, "uncommitted: still there");
    space.commit(txn).unwrap();
    let late = space.lob_pin();
    assert_eq!(lob::Horizon::pending(&space), 1);
    assert_eq!(read_all(&space, tree, a).unwrap(), data, "the early reader still reads it");
    drop(early);
    assert_eq!(lob::Horizon::pending(&space), 0);
    assert_eq!(read_all(&space, tree, a).unwrap_err().number(), 7105);
    drop(late);
    assert_eq!(read_all(&space, tree, b).unwrap(), data, "the other value is untouched");

    // Its pages went back (a leaf per chunk), and a new value's id is new.
    assert!(space.allocated_pages().unwrap().len() < pages_with_both);
    let mut txn = space.begin(Durability::Full);
    let c = space.lob_write(&mut txn, tree, tree, b"after the others, longer than a pointer").unwrap();
    space.commit(txn).unwrap();
    assert!(c.id > b.id);
}

#[test]
fn values_survive_a_restart_and_ids_keep_counting() {
    let dir = tempfile::tempdir().unwrap();
    let (data_path, log_path) = (dir.path().join("d.mdf"), dir.path().join("d.ldf"));
    let space = space(dir.path());
    let tree = new_tree(&space);
    let data = value(2 * CHUNK_BYTES + 1, 7);
    let mut txn = space.begin(Durability::Full);
    let kept = space.lob_write(&mut txn, tree, tree, &data).unwrap();
    space.commit(txn).unwrap();
    // An uncommitted value, cut off by the crash: recovery removes its chunks.
    let mut txn = space.begin(Durability::Full);
    let lost = space.lob_write(&mut txn, tree, tree, &value(CHUNK_BYTES * 3, 9)).unwrap();
    space.wal.flush_all().unwrap();
    std::mem::forget(txn);
    drop(space);
    let (wal, master) = Wal::open(&log_path, "d", LogConfig::default()).unwrap();
    let space = Space::open("d", &data_path, pool(), wal, &DataConfig::default()).unwrap();
    assert_eq!(space.recover(master).unwrap().losers, 1);
    assert_eq!(read_all(&space, tree, kept).unwrap(), data);
    assert_eq!(read_all(&space, tree, lost).unwrap_err().number(), 7105);
    let mut txn = space.begin(Durability::Full);
    let next = space.lob_write(&mut txn, tree, tree, &data).unwrap();
    space.commit(txn).unwrap();
    assert!(next.id > kept.id, "ids count on from the largest stored");
    tessera_access::btree::check(&space, tree).unwrap();

    // A value dropped by a committed transaction while a reader held it back, when the
    // process dies: it stays listed, and the next open's sweep removes it.
    let pin = space.lob_pin();
    let mut txn = space.begin(Durability::Full);
    space.lob_free(&mut txn, tree, kept).unwrap();
    space.commit(txn).unwrap();
    assert_eq!(space.lob_dropped(tree).unwrap(), [kept.id]);
    space.wal.flush_all().unwrap();
    std::mem::forget(pin);
    drop(space);
    let (wal, master) = Wal::open(&log_path, "d", LogConfig::default()).unwrap();
    let space = Space::open("d", &data_path, pool(), wal, &DataConfig::default()).unwrap();
    space.recover(master).unwrap();
    assert_eq!(read_all(&space, tree, kept).unwrap(), data, "still there after the restart");
    assert_eq!(space.lob_sweep().unwrap(), 1);
    assert_eq!(read_all(&space, tree, kept).unwrap_err().number(), 7105);
    assert!(space.lob_dropped(tree).unwrap().is_empty());
    assert_eq!(read_all(&space, tree, next).unwrap(), data, "the other value is untouched");
}
