//! The free list: values dropped (and generations superseded) by transactions, removed
//! after their commit once no reader can reach them ([`Horizon`]).

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tessera_buffer::page::PageNo;
use tessera_errors::Result;
use tessera_log::Lsn;

use super::{chunk_key, chunks, damaged, parse_chunk_key, FREE_PREFIX, MAX_PENDING_VALUES};
use crate::btree::{self, Direction, ReadAhead};
use crate::mtr::LogCtx;
use crate::row::OffRow;
use crate::space::{Space, BOOT_ROOT};
use crate::txn::{write, Txn};

/// Chunk records removed per latch acquisition.
const REMOVE_BATCH_CHUNKS: usize = 64;

/// The key of an entry in the free list: `'L' ‖ tree ‖ id` for a value dropped whole,
/// then the generation for a compaction (`compact`).
fn free_key(tree: PageNo, id: u64, compaction: Option<u32>) -> Vec<u8> {
    let mut k = Vec::with_capacity(17);
    k.push(FREE_PREFIX);
    k.extend_from_slice(&tree.raw().to_be_bytes());
    k.extend_from_slice(&id.to_be_bytes());
    if let Some(gen) = compaction {
        k.extend_from_slice(&gen.to_be_bytes());
    }
    k
}

/// An entry of the free list: a value dropped whole, or one whose generation `value.gen`
/// superseded the older ones (their chunks that it does not read go).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeEntry {
    pub value: OffRow,
    pub whole: bool,
}

impl FreeEntry {
    fn key(&self, tree: PageNo) -> Vec<u8> {
        free_key(tree, self.value.id, (!self.whole).then_some(self.value.gen))
    }
}

/// The body of [`Space::lob_free`]: entered in the free list now, removed after the commit.
pub(crate) fn free(space: &Space, txn: &mut Txn, tree: PageNo, value: OffRow) -> Result<()> {
    enter(space, txn, tree, FreeEntry { value, whole: true })
}

/// Enters the compaction of the generation `value` just wrote (see the module's
/// documentation): after the commit, once no reader can hold an older pointer, the
/// chunks no generation from it on reads are removed.
pub(crate) fn compact(space: &Space, txn: &mut Txn, tree: PageNo, value: OffRow) -> Result<()> {
    enter(space, txn, tree, FreeEntry { value, whole: false })
}

fn enter(space: &Space, txn: &mut Txn, tree: PageNo, entry: FreeEntry) -> Result<()> {
    let i = space.tree_locks(txn, BOOT_ROOT, true)?;
    let meta = txn.trees[i].meta.clone();
    write::insert_locked(space, txn, &meta, &entry.key(tree), &entry.value.len.to_le_bytes())?;
    let tree_generation = space.tree(tree).generation.load(Ordering::Acquire);
    txn.lob_frees.push(Freed { lsn: txn.last_lsn(), tree, tree_generation, entry });
    Ok(())
}

/// The free list's entries for `tree`, or for every tree: (tree, entry).
fn entries(space: &Space, tree: Option<PageNo>) -> Result<Vec<(PageNo, FreeEntry)>> {
    let (lo, hi) = match tree {
        Some(t) => (free_key(t, 0, None), free_key(t, u64::MAX, Some(u32::MAX))),
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
            if !(key.len() == 13 || key.len() == 17) || len.len() != 8 || key[0] != FREE_PREFIX {
                return Err(damaged(space, BOOT_ROOT, "a free-list entry of the wrong size"));
            }
            let t = PageNo::from_raw(u32::from_be_bytes(key[1..5].try_into().expect("4 bytes")));
            let id = u64::from_be_bytes(key[5..13].try_into().expect("8 bytes"));
            let gen = key.get(13..17).map_or(0, |g| u32::from_be_bytes(g.try_into().expect("4 bytes")));
            let len = u64::from_le_bytes(len.try_into().expect("8 bytes"));
            out.push((t, FreeEntry { value: OffRow { id, len, gen }, whole: key.len() == 13 }));
        }
        match recs.last() {
            Some(rec) if more => from = Bound::Excluded(btree::leaf_key(rec).to_vec()),
            _ => return Ok(out),
        }
    }
}

/// `tree`'s entries whose chunks may not be removed yet: values committed changes dropped
/// (a check must not count them as unreferenced) and generations whose compaction is due
/// (older chunks still stored).
pub(crate) fn dropped(space: &Space, tree: PageNo) -> Result<Vec<FreeEntry>> {
    Ok(entries(space, Some(tree))?.into_iter().map(|(_, e)| e).collect())
}

/// Carries out every entry of the free list: when the database opens, after recovery and
/// before anyone reads (so no pin can want them). A failure (a full log) leaves the rest
/// for the next open.
pub(crate) fn sweep(space: &Space) -> Result<usize> {
    let all = entries(space, None)?;
    let n = all.len();
    for (tree, entry) in all {
        let tree_generation = space.tree(tree).generation.load(Ordering::Acquire);
        remove_value(space, Freed { lsn: Lsn::NONE, tree, tree_generation, entry })?;
    }
    Ok(n)
}

/// Takes `tree`'s entries out of the free list as part of `txn`, the transaction that
/// drops the tree: its values go with it.
pub(crate) fn forget(space: &Space, txn: &mut Txn, tree: PageNo) -> Result<()> {
    for (_, entry) in entries(space, Some(tree))? {
        space.delete(txn, BOOT_ROOT, &entry.key(tree))?;
    }
    Ok(())
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
    tree_generation: u64,
    entry: FreeEntry,
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

/// Carries out an entry — removes a value's chunks (every generation's), or the chunks
/// its compaction frees — then the entry, with redo-only records; unless its tree was
/// freed since it was listed (a removal taken from the queue just before
/// `Horizon::forget_tree`: the root page may start another tree now).
fn remove_value(space: &Space, Freed { tree, tree_generation, entry, .. }: Freed) -> Result<()> {
    let meta = space.tree(tree);
    let value = entry.value;
    let mut from = Bound::Included(chunk_key(value.id, 0, 0));
    let to = Bound::Excluded(chunk_key(value.id + 1, 0, 0));
    // The newest version at or before the generation seen so far, of the chunk being
    // read: removed when a newer one follows.
    let mut newest: Option<(u32, u32)> = None;
    loop {
        let (recs, more) = {
            let _latch = meta.latch.read();
            if meta.generation.load(Ordering::Acquire) != tree_generation {
                return Ok(());
            }
            btree::scan_batch(space, tree, &from, &to, Direction::Forward, REMOVE_BATCH_CHUNKS, &mut ReadAhead::off())?
        };
        let mut doomed = Vec::new();
        for rec in &recs {
            let key = btree::leaf_key(rec);
            let (_, n, gen) =
                parse_chunk_key(key).ok_or_else(|| damaged(space, tree, "a chunk key of the wrong size"))?;
            if entry.whole || (gen <= value.gen && n >= chunks(value.len)) {
                doomed.push(key.to_vec());
            } else if gen <= value.gen {
                if let Some((m, older)) = newest.filter(|&(m, _)| m == n) {
                    doomed.push(chunk_key(value.id, m, older));
                }
                newest = Some((n, gen));
            }
        }
        if !doomed.is_empty() {
            let _latch = meta.latch.write();
            if meta.generation.load(Ordering::Acquire) != tree_generation {
                return Ok(());
            }
            for key in &doomed {
                if btree::lookup_with(space, tree, key, |_| ())?.is_some() {
                    btree::remove(space, tree, key, LogCtx::system())?;
                }
            }
        }
        match recs.last() {
            Some(rec) if more => from = Bound::Excluded(btree::leaf_key(rec).to_vec()),
            _ => break,
        }
    }
    let boot = space.tree(BOOT_ROOT);
    let _latch = boot.latch.write();
    let key = entry.key(tree);
    if btree::lookup_with(space, BOOT_ROOT, &key, |_| ())?.is_some() {
        btree::remove(space, BOOT_ROOT, &key, LogCtx::system())?;
    }
    Ok(())
}
