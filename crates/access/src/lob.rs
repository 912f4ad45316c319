//! Large values stored outside their rows.
//!
//! A variable-length value that does not stay in its row (see `row::off_row_columns`) is
//! written to the table's *large-value tree*, a B+tree of its own, as chunks of
//! [`CHUNK_BYTES`] (the last one shorter), each a leaf record keyed by
//! `value id (u64 BE) ‖ chunk number (u32 BE)`; the row keeps an `OffRow` pointer (the
//! id and the length). A chunk of 8,000 bytes fills one page, as a SQL Server text page.
//!
//! Ids come from a counter per tree, loaded from the largest key in the tree at first
//! use: an id is never handed out twice while a value under it exists.
//!
//! **Locks.** The row's key lock covers its values: a writer holds X on the row while it
//! writes or frees them, and no one reaches a value but through its row. So chunks take
//! no key locks of their own — only the intent lock on the tree (its writers count, as
//! in any tree), and before it the intent lock on the rows tree the value belongs to: a
//! shared lock on the rows tree (a check, TABLOCK) then keeps every writer of its values
//! out, and the two intent locks are always taken in that order.
//!
//! **Freeing.** A value that a row change drops (DELETE, an UPDATE that replaces it) is
//! not touched by the transaction: [`free`] enters it in the database's *free list* —
//! records in the boot tree keyed `'L' ‖ large-value tree root (u32 BE) ‖ value id (u64
//! BE)`, holding its length — as part of the transaction, so a rollback (whole or to a
//! savepoint) takes the entry out again and keeps the value. Once the transaction has
//! committed, its chunks and then its entry are removed with redo-only records (as ghosts
//! are cleaned): freeing costs a few bytes of log per chunk, never a copy of the value.
//! A reader at READ COMMITTED copies a row and reads its values later, holding no lock:
//! so the removal also waits for every reader that might hold a pointer to the value —
//! each reader *pins* the horizon ([`Horizon::pin`]) before it reads rows and unpins when
//! done, and a value freed while a pin older than its commit is held stays until that pin
//! goes. A snapshot (`crate::versions`) may read a row version that points to a value
//! freed after it was taken: so a value also waits until every snapshot older than the
//! commit that freed it has ended (`Horizon::snapshot_ended` looks again). What a crash (or a full queue) leaves in the free list is committed and
//! unreferenced: [`sweep`] removes it when the database next opens, before anyone reads.
//! Dropping a large-value tree takes its entries out in the same transaction
//! ([`forget`]), so an entry always names a live tree.
//!
//! **Latch order.** The large-value tree's latch is taken only while no other tree latch
//! is held, or after the latch of its own table's rows tree (a read inside a row read);
//! never the other way round. Chunk writes and removals hold no other latch.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tessera_buffer::page::PageNo;
use tessera_errors::{msg, Error, Result};
use tessera_log::Lsn;

use crate::btree::{self, Direction, ReadAhead};
use crate::mtr::LogCtx;
use crate::row::OffRow;
use crate::space::{Space, BOOT_ROOT};
use crate::txn::{write, Txn};

/// Bytes of value in every chunk but a value's last.
pub const CHUNK_BYTES: usize = 8000;
/// The longest value (SQL Server's 2^31 - 1 bytes; longer is error 7119).
pub const MAX_VALUE_BYTES: u64 = tessera_types::MAX_LARGE_BYTES;
/// Chunks read per latch acquisition.
const READ_BATCH_CHUNKS: usize = 64;
/// Values waiting in memory for their removal, at most (see `Horizon::committed`).
const MAX_PENDING_VALUES: usize = 1 << 20;
/// First byte of the free list's keys in the boot tree.
const FREE_PREFIX: u8 = b'L';

/// The key of chunk `n` of value `id`.
pub fn chunk_key(id: u64, n: u32) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..8].copy_from_slice(&id.to_be_bytes());
    k[8..].copy_from_slice(&n.to_be_bytes());
    k
}

fn chunks(len: u64) -> u32 {
    len.div_ceil(CHUNK_BYTES as u64) as u32
}

/// The body of [`Space::lob_write`].
pub(crate) fn write(space: &Space, txn: &mut Txn, rows: PageNo, tree: PageNo, data: &[u8]) -> Result<OffRow> {
    let mut w = Writer::start(space, txn, rows, tree)?;
    w.append(space, txn, data)?;
    w.finish(space, txn)
}

/// A value being written in pieces ([`Space::lob_writer`]): whole chunks go to the tree as
/// they fill, so a value of any length passes through a chunk of memory.
pub struct Writer {
    meta: Arc<crate::txn::TreeMeta>,
    id: u64,
    /// Chunks written, and bytes in them.
    chunks: u32,
    written: u64,
    /// The start of the next chunk (shorter than a chunk).
    pending: Vec<u8>,
}

impl Writer {
    /// The body of [`Space::lob_writer`].
    pub(crate) fn start(space: &Space, txn: &mut Txn, rows: PageNo, tree: PageNo) -> Result<Writer> {
        space.tree_locks(txn, rows, true)?;
        let i = space.tree_locks(txn, tree, true)?;
        let meta = txn.trees[i].meta.clone();
        let id = next_id(space, &meta)?;
        Ok(Writer { meta, id, chunks: 0, written: 0, pending: Vec::new() })
    }

    /// Appends `data` to the value (error 7119 past [`MAX_VALUE_BYTES`]).
    pub fn append(&mut self, space: &Space, txn: &mut Txn, mut data: &[u8]) -> Result<()> {
        if self.written + (self.pending.len() + data.len()) as u64 > MAX_VALUE_BYTES {
            return Err(msg::LOB_TOO_LARGE.engine(&[]));
        }
        if !self.pending.is_empty() {
            let take = (CHUNK_BYTES - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() < CHUNK_BYTES {
                return Ok(());
            }
            let chunk = std::mem::take(&mut self.pending);
            self.put(space, txn, &chunk)?;
        }
        let mut whole = data.chunks_exact(CHUNK_BYTES);
        for chunk in whole.by_ref() {
            self.put(space, txn, chunk)?;
        }
        self.pending.extend_from_slice(whole.remainder());
        Ok(())
    }

    /// Writes the last chunk; the pointer a row keeps to the value.
    pub fn finish(mut self, space: &Space, txn: &mut Txn) -> Result<OffRow> {
        if !self.pending.is_empty() {
            let chunk = std::mem::take(&mut self.pending);
            self.put(space, txn, &chunk)?;
        }
        Ok(OffRow { id: self.id, len: self.written })
    }

    fn put(&mut self, space: &Space, txn: &mut Txn, chunk: &[u8]) -> Result<()> {
        debug_assert!(chunk.len() <= CHUNK_BYTES && !chunk.is_empty());
        write::insert_locked(space, txn, &self.meta, &chunk_key(self.id, self.chunks), chunk)?;
        self.chunks += 1;
        self.written += chunk.len() as u64;
        Ok(())
    }
}

/// A new value id for the tree: one more than the largest stored, then counting up.
fn next_id(space: &Space, meta: &crate::txn::TreeMeta) -> Result<u64> {
    if meta.lob_next_id.load(Ordering::Acquire) == 0 {
        let _latch = meta.latch.read();
        let (last, _) = btree::scan_batch(
            space,
            meta.root,
            &Bound::Unbounded,
            &Bound::Unbounded,
            Direction::Backward,
            1,
            &mut ReadAhead::off(),
        )?;
        let first = match last.first() {
            Some(rec) => {
                let key = btree::leaf_key(rec);
                let id = key.get(..8).ok_or_else(|| damaged(space, meta.root, "a chunk key shorter than 12 bytes"))?;
                u64::from_be_bytes(id.try_into().expect("8 bytes")) + 1
            }
            None => 1,
        };
        let _ = meta.lob_next_id.compare_exchange(0, first, Ordering::AcqRel, Ordering::Acquire);
    }
    Ok(meta.lob_next_id.fetch_add(1, Ordering::AcqRel))
}

/// The body of [`Space::lob_read`].
pub(crate) fn read(space: &Space, tree: PageNo, value: OffRow, from: u64, out: &mut [u8]) -> Result<()> {
    let end = from + out.len() as u64;
    if end > value.len {
        return Err(Error::Invalid(format!("bytes {from}..{end} of a value of {} bytes", value.len)));
    }
    if out.is_empty() {
        return Ok(());
    }
    let meta = space.tree(tree);
    let chunk = CHUNK_BYTES as u64;
    let (first, last) = ((from / chunk) as u32, ((end - 1) / chunk) as u32);
    let mut next = first;
    // The value's later chunks are asked of the disk while the first ones are copied.
    let mut ahead = ReadAhead::default();
    while next <= last {
        let mut fault = None;
        let (seen, _) = {
            let _latch = meta.latch.read();
            btree::scan_visit(
                space,
                tree,
                &Bound::Included(chunk_key(value.id, next).to_vec()),
                &Bound::Included(chunk_key(value.id, last).to_vec()),
                Direction::Forward,
                READ_BATCH_CHUNKS.min((last - next + 1) as usize),
                &mut ahead,
                |rec| {
                    if fault.is_some() {
                        return;
                    }
                    if btree::leaf_key(rec) != chunk_key(value.id, next) {
                        fault = Some(missing(space, tree, value, next));
                        return;
                    }
                    let data = btree::leaf_value(rec);
                    let start = next as u64 * chunk;
                    let want = (value.len - start).min(chunk) as usize;
                    if data.len() != want {
                        let what = format!("chunk {next} of value {} holds {} bytes", value.id, data.len());
                        fault = Some(damaged(space, tree, &what));
                        return;
                    }
                    // This chunk's bytes within from..end, and where they go in `out`.
                    let lo = from.saturating_sub(start) as usize;
                    let hi = (end - start).min(want as u64) as usize;
                    let at = (start + lo as u64 - from) as usize;
                    out[at..at + hi - lo].copy_from_slice(&data[lo..hi]);
                    next += 1;
                },
            )?
        };
        if let Some(e) = fault {
            return Err(e);
        }
        if seen == 0 {
            return Err(missing(space, tree, value, next));
        }
    }
    Ok(())
}

/// The key of `value`'s entry in the free list.
fn free_key(tree: PageNo, id: u64) -> [u8; 13] {
    let mut k = [0u8; 13];
    k[0] = FREE_PREFIX;
    k[1..5].copy_from_slice(&tree.raw().to_be_bytes());
    k[5..].copy_from_slice(&id.to_be_bytes());
    k
}

/// The body of [`Space::lob_free`]: entered in the free list now, removed after the commit.
pub(crate) fn free(space: &Space, txn: &mut Txn, tree: PageNo, value: OffRow) -> Result<()> {
    let i = space.tree_locks(txn, BOOT_ROOT, true)?;
    let meta = txn.trees[i].meta.clone();
    write::insert_locked(space, txn, &meta, &free_key(tree, value.id), &value.len.to_le_bytes())?;
    let generation = space.tree(tree).generation.load(Ordering::Acquire);
    txn.lob_frees.push(Freed { lsn: txn.last_lsn(), tree, generation, value });
    Ok(())
}

/// The free list's entries for `tree`, or for every tree: (tree, value).
fn entries(space: &Space, tree: Option<PageNo>) -> Result<Vec<(PageNo, OffRow)>> {
    let (lo, hi) = match tree {
        Some(t) => (free_key(t, 0).to_vec(), free_key(t, u64::MAX).to_vec()),
        None => (vec![FREE_PREFIX], vec![FREE_PREFIX + 1]),
    };
    let meta = space.tree(BOOT_ROOT);
    let mut out = Vec::new();
    let mut from = Bound::Included(lo);
    loop {
        let (recs, more) = {
            let _latch = meta.latch.read();
            btree::scan_batch(
                space,
                BOOT_ROOT,
                &from,
                &Bound::Included(hi.clone()),
                Direction::Forward,
                256,
                &mut ReadAhead::off(),
            )?
        };
        for rec in &recs {
            let (key, len) = (btree::leaf_key(rec), btree::leaf_value(rec));
            if key.len() != 13 || len.len() != 8 || key[0] != FREE_PREFIX {
                return Err(damaged(space, BOOT_ROOT, "a free-list entry of the wrong size"));
            }
            let t = PageNo::from_raw(u32::from_be_bytes(key[1..5].try_into().expect("4 bytes")));
            let id = u64::from_be_bytes(key[5..].try_into().expect("8 bytes"));
            out.push((t, OffRow { id, len: u64::from_le_bytes(len.try_into().expect("8 bytes")) }));
        }
        match recs.last() {
            Some(rec) if more => from = Bound::Excluded(btree::leaf_key(rec).to_vec()),
            _ => return Ok(out),
        }
    }
}

/// The ids of `tree`'s values that committed changes dropped and whose chunks may not be
/// removed yet (a check must not count them as unreferenced).
pub(crate) fn dropped(space: &Space, tree: PageNo) -> Result<Vec<u64>> {
    Ok(entries(space, Some(tree))?.into_iter().map(|(_, v)| v.id).collect())
}

/// Removes every value in the free list: when the database opens, after recovery and
/// before anyone reads (so no pin can want them). A failure (a full log) leaves the rest
/// for the next open.
pub(crate) fn sweep(space: &Space) -> Result<usize> {
    let all = entries(space, None)?;
    let n = all.len();
    for (tree, value) in all {
        let generation = space.tree(tree).generation.load(Ordering::Acquire);
        remove_value(space, Freed { lsn: Lsn::NONE, tree, generation, value })?;
    }
    Ok(n)
}

/// Takes `tree`'s entries out of the free list as part of `txn`, the transaction that
/// drops the tree: its values go with it.
pub(crate) fn forget(space: &Space, txn: &mut Txn, tree: PageNo) -> Result<()> {
    for (_, value) in entries(space, Some(tree))? {
        space.delete(txn, BOOT_ROOT, &free_key(tree, value.id))?;
    }
    Ok(())
}

fn missing(space: &Space, tree: PageNo, value: OffRow, chunk: u32) -> Error {
    let page = format!("(1:{}), value {}", tree.raw(), value.id);
    msg::LOB_NODE_MISSING.engine(&[&space.name, &page, &chunk])
}

fn damaged(space: &Space, tree: PageNo, detail: &str) -> Error {
    btree::damaged(space, tree, &format!("large-value tree: {detail}"))
}

/// Values freed by committed transactions, waiting for the readers that may still hold
/// pointers to them (see the module's documentation).
#[derive(Default)]
pub struct Horizon {
    state: Mutex<HorizonState>,
    /// How many values are pending (read without the mutex: the end of every snapshot
    /// looks).
    waiting: AtomicUsize,
}

/// A value a transaction's change dropped: its tree (as it was then: a tree freed since,
/// whose root may start another tree, has a newer generation) and its pointer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Freed {
    /// The transaction's last record when the value was dropped.
    pub(crate) lsn: Lsn,
    tree: PageNo,
    generation: u64,
    value: OffRow,
}

#[derive(Default)]
struct HorizonState {
    /// Incremented by every commit that freed values.
    epoch: u64,
    /// Pins held, by the epoch they were taken at, oldest first (a new pin is always at
    /// the newest epoch: pinning and unpinning touch the ends).
    pins: VecDeque<(u64, usize)>,
    /// Freed values with the epoch of their commit, oldest first.
    pending: VecDeque<Pending>,
}

/// A reader's pin: values freed after it was taken stay readable until it is dropped.
pub struct Pin {
    space: Arc<Space>,
    epoch: u64,
}

impl Drop for Pin {
    fn drop(&mut self) {
        let snapshots = self.space.versions.horizon();
        let due = {
            let mut st = self.space.lob_horizon.state.lock();
            let at = st.pins.partition_point(|&(e, _)| e < self.epoch);
            let entry = st.pins.get_mut(at).filter(|(e, _)| *e == self.epoch).expect("a pin is counted until dropped");
            entry.1 -= 1;
            // Only the oldest pins hold values back.
            let was_oldest = at == 0 && entry.1 == 0;
            while st.pins.front().is_some_and(|&(_, n)| n == 0) {
                st.pins.pop_front();
            }
            if was_oldest && !st.pending.is_empty() {
                let due = st.take_due(snapshots);
                self.space.lob_horizon.waiting.store(st.pending.len(), Ordering::Release);
                due
            } else {
                Vec::new()
            }
        };
        remove(&self.space, due);
    }
}

/// A value freed by a commit, waiting: the epoch of its commit, and the version clock
/// then (a snapshot older than that may read a row version that points to it).
#[derive(Clone, Copy)]
struct Pending {
    epoch: u64,
    csn: u64,
    freed: Freed,
}

impl HorizonState {
    /// The pending values no reader may still reach: freed at an epoch before every pin's,
    /// and at a CSN every snapshot sees (`snapshots`: the versions' horizon, read before).
    fn take_due(&mut self, snapshots: u64) -> Vec<Freed> {
        let oldest_pin = self.pins.front().map_or(u64::MAX, |&(e, _)| e);
        let mut due = Vec::new();
        while let Some(&Pending { epoch, csn, freed }) = self.pending.front() {
            if epoch >= oldest_pin || csn > snapshots {
                break;
            }
            self.pending.pop_front();
            due.push(freed);
        }
        due
    }
}

impl Horizon {
    /// Pins the horizon for a reader (see [`Pin`]).
    pub(crate) fn pin(space: &Arc<Space>) -> Pin {
        let epoch = {
            let mut st = space.lob_horizon.state.lock();
            let epoch = st.epoch;
            match st.pins.back_mut() {
                Some((e, n)) if *e == epoch => *n += 1,
                _ => st.pins.push_back((epoch, 1)),
            }
            epoch
        };
        Pin { space: space.clone(), epoch }
    }

    /// After a commit: the values the transaction freed wait for the readers pinned
    /// before now, and whatever no reader can reach any more is removed. Past
    /// `MAX_PENDING_VALUES` waiting, a commit's values stay in the free list for the next
    /// open's sweep (bounded memory).
    pub(crate) fn committed(space: &Space, frees: Vec<Freed>) {
        if frees.is_empty() {
            return;
        }
        // The commit's CSN, if it has one, is on the clock by now.
        let csn = space.versions.clock();
        let snapshots = space.versions.horizon();
        let due = {
            let mut st = space.lob_horizon.state.lock();
            let epoch = st.epoch;
            st.epoch += 1;
            if st.pending.len() + frees.len() <= MAX_PENDING_VALUES {
                st.pending.extend(frees.into_iter().map(|freed| Pending { epoch, csn, freed }));
            }
            let due = st.take_due(snapshots);
            space.lob_horizon.waiting.store(st.pending.len(), Ordering::Release);
            due
        };
        remove(space, due);
    }

    /// A snapshot ended: the values only it could still reach are removed.
    pub(crate) fn snapshot_ended(space: &Space) {
        if space.lob_horizon.waiting.load(Ordering::Acquire) == 0 {
            return;
        }
        let snapshots = space.versions.horizon();
        let due = {
            let mut st = space.lob_horizon.state.lock();
            let due = st.take_due(snapshots);
            space.lob_horizon.waiting.store(st.pending.len(), Ordering::Release);
            due
        };
        remove(space, due);
    }

    /// A tree is being freed: values waiting in it are gone with it (its root page may
    /// start another tree).
    pub(crate) fn forget_tree(space: &Space, tree: PageNo) {
        let mut st = space.lob_horizon.state.lock();
        st.pending.retain(|p| p.freed.tree != tree);
        space.lob_horizon.waiting.store(st.pending.len(), Ordering::Release);
    }

    /// Values waiting for their removal (for tests and the DMVs).
    pub fn pending(space: &Space) -> usize {
        space.lob_horizon.state.lock().pending.len()
    }
}

/// Removes values no one references any more (a failure, a full log, leaves the rest in
/// the free list for the next open's sweep).
fn remove(space: &Space, values: Vec<Freed>) {
    for freed in values {
        if remove_value(space, freed).is_err() {
            return;
        }
    }
}

/// Removes a value's chunks, then its free-list entry, with redo-only records — unless
/// its tree was freed since it was listed (a removal taken from the queue just before
/// `Horizon::forget_tree`: the root page may start another tree now).
fn remove_value(space: &Space, Freed { tree, generation, value, .. }: Freed) -> Result<()> {
    let meta = space.tree(tree);
    for n in 0..chunks(value.len) {
        let _latch = meta.latch.write();
        if meta.generation.load(Ordering::Acquire) != generation {
            return Ok(());
        }
        let key = chunk_key(value.id, n);
        if btree::lookup_with(space, tree, &key, |_| ())?.is_some() {
            btree::remove(space, tree, &key, LogCtx::system())?;
        }
    }
    let boot = space.tree(BOOT_ROOT);
    let _latch = boot.latch.write();
    let key = free_key(tree, value.id);
    if btree::lookup_with(space, BOOT_ROOT, &key, |_| ())?.is_some() {
        btree::remove(space, BOOT_ROOT, &key, LogCtx::system())?;
    }
    Ok(())
}
