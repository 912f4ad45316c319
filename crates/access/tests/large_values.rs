//! Large values in their own tree (`tessera_access::lob`): written in chunks, read back
//! whole and in ranges, freed only after the commit that drops them and only once no
//! reader pinned before that commit remains, kept by a rollback (whole or to a
//! savepoint), and their pages given back once removed.

use std::sync::Arc;

use tessera_access::lob::{self, CHUNK_BYTES};
use tessera_access::read::OnLocked;
use tessera_access::row::OffRow;
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
    Space::create(&dir.join("d.mdf"), pool(), wal, &DataConfig::default()).unwrap()
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
    let unknown = tessera_access::row::OffRow { id: 1 << 40, len: 100, gen: 0 };
    assert_eq!(read_all(&space, tree, unknown).unwrap_err().number(), 7105);
    let too_long = tessera_access::row::OffRow { len: stored[0].0.len + CHUNK_BYTES as u64, ..stored[0].0 };
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
    let space = Space::open(&data_path, pool(), wal, &DataConfig::default()).unwrap();
    assert_eq!(space.recover(master, &|_| false).unwrap().losers, 1);
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
    assert_eq!(space.lob_dropped(tree).unwrap(), [lob::FreeEntry { value: kept, whole: true }]);
    space.wal.flush_all().unwrap();
    std::mem::forget(pin);
    drop(space);
    let (wal, master) = Wal::open(&log_path, "d", LogConfig::default()).unwrap();
    let space = Space::open(&data_path, pool(), wal, &DataConfig::default()).unwrap();
    space.recover(master, &|_| false).unwrap();
    assert_eq!(read_all(&space, tree, kept).unwrap(), data, "still there after the restart");
    assert_eq!(space.lob_sweep().unwrap(), 1);
    assert_eq!(read_all(&space, tree, kept).unwrap_err().number(), 7105);
    assert!(space.lob_dropped(tree).unwrap().is_empty());
    assert_eq!(read_all(&space, tree, next).unwrap(), data, "the other value is untouched");
}

/// The chunk records stored in `tree` (every generation's).
fn chunk_records(space: &Space, tree: PageNo) -> usize {
    let txn = space.begin(Durability::Full);
    let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
    let n = space.scan(&txn, tree, all.0, all.1, tessera_access::Direction::Forward, OnLocked::Wait).count();
    space.commit(txn).unwrap();
    n
}

/// A partial update as `UPDATE … SET col.WRITE(data, at, removed)` makes it.
fn rewrite(
    space: &Space,
    txn: &mut tessera_access::Txn,
    tree: PageNo,
    old: OffRow,
    at: u64,
    removed: u64,
    data: &[u8],
) -> OffRow {
    let mut w = space.lob_rewriter(txn, tree, tree, old, at, removed).unwrap();
    for piece in data.chunks(3000) {
        w.append(space, txn, piece).unwrap();
    }
    w.finish(space, txn).unwrap()
}

fn splice(model: &mut Vec<u8>, at: usize, removed: usize, data: &[u8]) {
    let end = (at + removed).min(model.len());
    model.splice(at..end, data.iter().copied());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

    /// Partial updates against a model (a byte vector): each generation reads as the
    /// model did when it was made, for as long as a reader pinned before the next one
    /// commits; a rollback leaves the value as it was; once no reader holds an older
    /// pointer, only the newest generation's chunks are stored.
    #[test]
    fn partial_updates_match_a_model(
        start in 0usize..6 * CHUNK_BYTES,
        ops in proptest::collection::vec((0.0f64..=1.0, 0usize..3 * CHUNK_BYTES, 0usize..3 * CHUNK_BYTES, proptest::bool::weighted(0.8)), 1..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let space = space(dir.path());
        let tree = new_tree(&space);
        let mut model = value(start, 3);
        let mut txn = space.begin(Durability::Full);
        let mut current = space.lob_write(&mut txn, tree, tree, &model).unwrap();
        space.commit(txn).unwrap();
        let mut held = Vec::new();
        for (i, &(where_, removed, inserted, commit)) in ops.iter().enumerate() {
            let at = (where_ * model.len() as f64) as usize;
            let data = value(inserted, 40 + i as u8);
            // A reader that read the row before this change keeps reading what it read.
            held.push((space.lob_pin(), current, model.clone()));
            let mut txn = space.begin(Durability::Full);
            let next = rewrite(&space, &mut txn, tree, current, at as u64, removed as u64, &data);
            let mut changed = model.clone();
            splice(&mut changed, at, removed, &data);
            proptest::prop_assert_eq!(next.len, changed.len() as u64);
            proptest::prop_assert_eq!(&read_all(&space, tree, next).unwrap(), &changed);
            if commit {
                space.commit(txn).unwrap();
                (current, model) = (next, changed);
            } else {
                space.rollback(txn).unwrap();
            }
            proptest::prop_assert_eq!(&read_all(&space, tree, current).unwrap(), &model);
            for (_, p, m) in &held {
                proptest::prop_assert_eq!(&read_all(&space, tree, *p).unwrap(), m, "an older generation, still pinned");
            }
        }
        held.clear();
        proptest::prop_assert_eq!(lob::Horizon::pending(&space), 0);
        proptest::prop_assert_eq!(&read_all(&space, tree, current).unwrap(), &model);
        proptest::prop_assert_eq!(chunk_records(&space, tree), lob::chunks(current.len) as usize, "older versions are gone");
        proptest::prop_assert!(space.lob_dropped(tree).unwrap().is_empty());
        tessera_access::btree::check(&space, tree).unwrap();
    }
}

#[test]
fn a_partial_update_logs_the_chunks_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path());
    let tree = new_tree(&space);
    let mut model = value(1 << 20, 5);
    let mut txn = space.begin(Durability::Full);
    let mut v = space.lob_write(&mut txn, tree, tree, &model).unwrap();
    space.commit(txn).unwrap();
    let logged = |f: &mut dyn FnMut(&mut tessera_access::Txn) -> OffRow| {
        let before = space.wal.bytes_written();
        let mut txn = space.begin(Durability::Full);
        let p = f(&mut txn);
        space.commit(txn).unwrap();
        (p, space.wal.bytes_written() - before)
    };
    // Ten bytes overwritten across a chunk boundary: two chunks, not the megabyte.
    let (p, bytes) = logged(&mut |txn| rewrite(&space, txn, tree, v, 3 * CHUNK_BYTES as u64 - 5, 10, b"0123456789"));
    splice(&mut model, 3 * CHUNK_BYTES - 5, 10, b"0123456789");
    assert!(bytes < 4 * CHUNK_BYTES as u64, "{bytes} bytes logged for a 10-byte overwrite");
    assert_eq!(read_all(&space, tree, p).unwrap(), model);
    v = p;
    // Appended: the last chunk and the new ones.
    let tail = value(3 * CHUNK_BYTES, 6);
    let (p, bytes) = logged(&mut |txn| rewrite(&space, txn, tree, v, v.len, 0, &tail));
    model.extend_from_slice(&tail);
    assert!(bytes < 6 * CHUNK_BYTES as u64, "{bytes} bytes logged for a 24,000-byte append");
    assert_eq!(read_all(&space, tree, p).unwrap(), model);
    v = p;
    // Cut short: at most the chunk that ends it.
    let (p, bytes) = logged(&mut |txn| rewrite(&space, txn, tree, v, 1000 * 1000 + 7, u64::MAX, b""));
    model.truncate(1000 * 1000 + 7);
    assert!(bytes < 2 * CHUNK_BYTES as u64, "{bytes} bytes logged for a truncation");
    assert_eq!(read_all(&space, tree, p).unwrap(), model);
    assert_eq!(chunk_records(&space, tree), lob::chunks(p.len) as usize);
    // For comparison: the whole value written again.
    let (_, whole) = logged(&mut |txn| space.lob_write(txn, tree, tree, &model).unwrap());
    assert!(whole > model.len() as u64, "{whole} bytes logged for a whole value");
}

#[test]
fn compactions_left_by_a_crash_are_carried_out_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let (data_path, log_path) = (dir.path().join("d.mdf"), dir.path().join("d.ldf"));
    let space = space(dir.path());
    let tree = new_tree(&space);
    let mut model = value(5 * CHUNK_BYTES + 17, 8);
    let mut txn = space.begin(Durability::Full);
    let v = space.lob_write(&mut txn, tree, tree, &model).unwrap();
    space.commit(txn).unwrap();
    // A reader holds the old generation back; the process dies.
    let pin = space.lob_pin();
    let mut txn = space.begin(Durability::Full);
    let p = rewrite(&space, &mut txn, tree, v, 100, 3 * CHUNK_BYTES as u64, b"short");
    space.commit(txn).unwrap();
    splice(&mut model, 100, 3 * CHUNK_BYTES, b"short");
    // Another partial update, uncommitted at the crash: recovery takes its chunks out.
    let mut txn = space.begin(Durability::Full);
    let lost = rewrite(&space, &mut txn, tree, p, 0, 1, b"x");
    assert_eq!(space.lob_dropped(tree).unwrap().len(), 2);
    space.wal.flush_all().unwrap();
    std::mem::forget((pin, txn));
    drop(space);
    let (wal, master) = Wal::open(&log_path, "d", LogConfig::default()).unwrap();
    let space = Space::open(&data_path, pool(), wal, &DataConfig::default()).unwrap();
    space.recover(master, &|_| false).unwrap();
    assert_eq!(read_all(&space, tree, v).unwrap().len(), v.len as usize, "the old generation, before the sweep");
    assert_eq!(space.lob_dropped(tree).unwrap(), [lob::FreeEntry { value: p, whole: false }]);
    assert_eq!(space.lob_sweep().unwrap(), 1);
    assert_eq!(read_all(&space, tree, p).unwrap(), model);
    // The uncommitted generation's chunks are gone: a pointer to it (a dirty read's)
    // reads the generation before.
    assert_eq!(read_all(&space, tree, lost).unwrap(), model);
    assert_eq!(chunk_records(&space, tree), lob::chunks(p.len) as usize);
    // A value dropped whole takes every generation's chunks.
    let mut txn = space.begin(Durability::Full);
    let q = rewrite(&space, &mut txn, tree, p, 7, 1, b"y");
    space.lob_free(&mut txn, tree, q).unwrap();
    space.commit(txn).unwrap();
    assert_eq!(chunk_records(&space, tree), 0);
    assert!(space.lob_dropped(tree).unwrap().is_empty());
}
