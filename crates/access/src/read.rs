//! Reads and the locks they take.
//!
//! A READ COMMITTED read holds the tree latch shared while it reads a record and then
//! checks that no other transaction holds an X lock on its key (`Space::read_conflict`).
//! A writer takes its X lock before it latches the tree, so a record read with no
//! conflicting lock is committed. On conflict the reader drops the latch, waits, and
//! reads again — or, with READPAST, skips the record; READ UNCOMMITTED (NOLOCK) checks
//! nothing and may return a change that is later rolled back.
//!
//! A locking read ([`RowLock::Keep`]: UPDATE and DELETE locating their rows, UPDLOCK,
//! HOLDLOCK, XLOCK) locks the key *before* it reads the record: under the shared tree
//! latch it tries the lock without waiting; if another transaction holds a conflicting
//! one it drops the latch, waits for the lock (or skips the key, with READPAST), and
//! reads again holding it. A record read while its lock is held cannot change until
//! the lock is released, which is what makes a read-modify-write safe: two UPDATEs of
//! one row take its U lock one after the other, and the second computes its new value
//! from the first one's committed row.

use std::ops::Bound;
use std::sync::Arc;

use tessera_buffer::page::PageNo;
use tessera_errors::{Error, Result};

use crate::btree::{self, Direction};
use crate::lock::{LockMode, Resource};
use crate::space::Space;
use crate::txn::{Hold, TreeMeta, Txn};
use crate::versions::{Seen, Snapshot};

/// Records read from a tree per latch acquisition in a scan.
const SCAN_BATCH: usize = 128;

/// What a read does about other transactions' locks on the rows it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RowLock {
    /// READ COMMITTED: waits for the writer of a row to finish, keeps nothing (or, in a
    /// transaction that holds a snapshot, reads the row version it sees).
    #[default]
    Committed,
    /// READ COMMITTED with locks even in a transaction that holds a snapshot
    /// (`READCOMMITTEDLOCK`): the row as it is now, its writer waited for.
    CommittedLocking,
    /// READ UNCOMMITTED (NOLOCK): no lock is checked or taken.
    Uncommitted,
    /// Locks each row in `mode` (S, U or X) before reading it and keeps the lock for `hold`.
    Keep { mode: LockMode, hold: Hold },
}

/// How a read locks: per row, per table (TABLOCK), and whether it skips locked rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ReadLocks {
    pub row: RowLock,
    /// A table lock taken before the read (S for TABLOCK, X for TABLOCKX), held to the
    /// end of the transaction; it covers the row locks of its mode.
    pub table: Option<LockMode>,
    /// READPAST: rows locked by others are skipped instead of waited for.
    pub skip_locked: bool,
    /// SERIALIZABLE (HOLDLOCK): the ranges read are locked too (`Space::lock_range`), so
    /// no row can appear in them until the transaction ends.
    pub ranges: bool,
}

impl ReadLocks {
    pub const COMMITTED: ReadLocks =
        ReadLocks { row: RowLock::Committed, table: None, skip_locked: false, ranges: false };
}

/// The body of [`Space::get_with`].
pub(crate) fn get_with<R>(
    space: &Space,
    txn: &Txn,
    tree: PageNo,
    key: &[u8],
    f: impl Fn(&[u8]) -> R,
) -> Result<Option<R>> {
    let meta = space.tree(tree);
    if let Some(snapshot) = txn.snapshot() {
        return get_versioned(space, txn, &meta, key, snapshot, f);
    }
    loop {
        let conflict = {
            let _latch = meta.latch.read();
            let found =
                btree::lookup_with(space, tree, key, |r| (!btree::is_ghost(r)).then(|| f(btree::leaf_value(r))))?;
            match space.read_conflict(txn, &meta, key) {
                None => return Ok(found.flatten()),
                Some(c) => c,
            }
        };
        space.locks.wait_compatible(txn.id, conflict.0, conflict.1, txn.wait())?;
    }
}

/// A read of the row version the transaction's snapshot sees: no lock is checked or
/// waited for (see `crate::versions`).
fn get_versioned<R>(
    space: &Space,
    txn: &Txn,
    meta: &TreeMeta,
    key: &[u8],
    snapshot: Snapshot,
    f: impl Fn(&[u8]) -> R,
) -> Result<Option<R>> {
    let _latch = meta.latch.read();
    let found = match meta.versions.seen(key, txn.id, snapshot.csn) {
        Seen::Before(row) => row.map(|r| f(&r)),
        Seen::Current => {
            btree::lookup_with(space, meta.root, key, |r| (!btree::is_ghost(r)).then(|| f(btree::leaf_value(r))))?
                .flatten()
        }
    };
    space.versions.check_not_given_up(&txn.versions)?;
    Ok(found)
}

/// Error 3960 when a SNAPSHOT transaction is about to change (it holds the row's update
/// lock) a row another transaction changed and committed after its snapshot.
fn check_update_conflict(space: &Space, txn: &Txn, meta: &TreeMeta, key: &[u8]) -> Result<()> {
    match txn.snapshot() {
        Some(s) if !s.statement && meta.versions.changed_since(key, txn.id, s.csn) => {
            Err(Error::UpdateConflict { database: space.name().to_string(), table: format!("tree {}", meta.root) })
        }
        _ => Ok(()),
    }
}

/// A bound of owned key bytes, borrowed.
fn bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(|k| &k[..])
}

/// The body of [`Space::get_locked`].
pub(crate) fn get_locked<R>(
    space: &Space,
    txn: &mut Txn,
    tree: PageNo,
    key: &[u8],
    locks: ReadLocks,
    f: impl Fn(&[u8]) -> R,
) -> Result<Option<R>> {
    let read = || -> Result<Option<R>> {
        let found = btree::lookup_with(space, tree, key, |r| (!btree::is_ghost(r)).then(|| f(btree::leaf_value(r))))?;
        Ok(found.flatten())
    };
    let mode = match locks.row {
        RowLock::Committed if locks.table.is_none() && !locks.skip_locked => return get_with(space, txn, tree, key, f),
        RowLock::CommittedLocking => {
            let held = txn.suspend_snapshot();
            let found = get_locked(space, txn, tree, key, ReadLocks { row: RowLock::Committed, ..locks }, f);
            txn.resume_snapshot(held);
            return found;
        }
        RowLock::Uncommitted => {
            let meta = space.tree(tree);
            let _latch = meta.latch.read();
            return read();
        }
        RowLock::Committed => None,
        RowLock::Keep { mode, hold } => Some((mode, hold)),
    };
    let i = lock_tree_for_read(space, txn, tree, locks)?;
    let meta = txn.trees[i].meta.clone();
    let Some((mode, hold)) = mode.filter(|(m, _)| !txn.trees[i].covers(*m)) else {
        // READ COMMITTED (with READPAST or under a table lock that may not cover writers).
        loop {
            let conflict = {
                let _latch = meta.latch.read();
                match space.read_conflict(txn, &meta, key) {
                    None => return read(),
                    Some(c) => c,
                }
            };
            if locks.skip_locked {
                return Ok(None);
            }
            space.locks.wait_compatible(txn.id, conflict.0, conflict.1, txn.wait())?;
        }
    };
    let r = Resource::key(tree.raw(), key);
    let mut new = false;
    loop {
        {
            let _latch = meta.latch.read();
            if let Some(fresh) = space.locks.try_lock(txn.id, r, mode) {
                new |= fresh;
                if let Err(e) = check_update_conflict(space, txn, &meta, key) {
                    drop(_latch);
                    if new {
                        space.keep_lock(txn, i, r, hold)?;
                    }
                    return Err(e);
                }
                let found = read()?;
                // A missing key keeps a lock held to the end of the transaction
                // (HOLDLOCK, UPDLOCK): no one can insert it meanwhile, so "read, and
                // insert if absent" is safe — what SQL Server's key-range lock gives a
                // point lookup. A statement-long lock on a missing key is let go.
                if found.is_none() && new && hold == Hold::Statement {
                    drop(_latch);
                    space.locks.release_unless(txn.id, r, |_| false);
                } else if new {
                    space.keep_lock(txn, i, r, hold)?;
                }
                return Ok(found);
            }
        }
        if locks.skip_locked {
            return Ok(None);
        }
        new |= space.locks.lock(txn.id, r, mode, txn.wait())?;
    }
}

/// The body of [`Space::lock_table_for_read`].
pub(crate) fn lock_table_for_read(space: &Space, txn: &mut Txn, tree: PageNo, locks: ReadLocks) -> Result<()> {
    if locks.row != RowLock::Uncommitted && (locks.table.is_some() || matches!(locks.row, RowLock::Keep { .. })) {
        lock_tree_for_read(space, txn, tree, locks)?;
    }
    Ok(())
}

/// The transaction's lock entry for a tree it is about to read with `locks`: the
/// intent lock (IX for U and X row locks, IS otherwise) and the table lock asked for.
fn lock_tree_for_read(space: &Space, txn: &mut Txn, tree: PageNo, locks: ReadLocks) -> Result<usize> {
    let write = matches!(locks.row, RowLock::Keep { mode: LockMode::Update | LockMode::Exclusive, .. })
        || matches!(locks.table, Some(LockMode::Update | LockMode::Exclusive));
    let i = space.tree_locks(txn, tree, write)?;
    if let Some(mode) = locks.table {
        space.lock_table(txn, i, mode)?;
    }
    Ok(i)
}

/// The body of [`Space::scan`].
pub(crate) fn scan<'s>(
    space: &'s Space,
    txn: &'s Txn,
    tree: PageNo,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    dir: Direction,
    on_locked: OnLocked,
) -> Scan<'s> {
    Scan {
        space,
        txn,
        meta: space.tree(tree),
        lo,
        hi,
        dir,
        on_locked,
        buf: Vec::new(),
        more: true,
        wait_for: None,
        read_ahead: if txn.read_ahead { btree::ReadAhead::default() } else { btree::ReadAhead::off() },
    }
}

/// What a scan does with a row another transaction holds a conflicting lock on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnLocked {
    /// READ COMMITTED: wait for the holder to finish, then read the row.
    Wait,
    /// READPAST: leave the row out.
    Skip,
    /// READ UNCOMMITTED: read the row as it is.
    Read,
}

/// A range scan. Yields `(key, value)` pairs.
pub struct Scan<'s> {
    space: &'s Space,
    txn: &'s Txn,
    meta: Arc<TreeMeta>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    dir: Direction,
    on_locked: OnLocked,
    /// Records read but not yet returned, in reverse order (pop from the end).
    buf: Vec<Vec<u8>>,
    more: bool,
    /// A lock whose holder must finish before the scan goes on.
    wait_for: Option<(Resource, LockMode)>,
    read_ahead: btree::ReadAhead,
}

impl Scan<'_> {
    fn fill(&mut self) -> Result<()> {
        match self.txn.snapshot() {
            Some(snapshot) if self.on_locked == OnLocked::Wait => self.fill_versioned(snapshot),
            _ => self.fill_locked(),
        }
    }

    /// The next batch as the transaction's snapshot sees it: the tree's records merged
    /// with the keys of the range read that have versions (a row deleted since is only
    /// there), each as the snapshot sees it. No lock is checked or waited for.
    fn fill_versioned(&mut self, snapshot: Snapshot) -> Result<()> {
        let _latch = self.meta.latch.read();
        let (batch, more) = btree::scan_batch(
            self.space,
            self.meta.root,
            &self.lo,
            &self.hi,
            self.dir,
            SCAN_BATCH,
            &mut self.read_ahead,
        )?;
        self.more = more;
        let forward = self.dir == Direction::Forward;
        let last = batch.last().map(|r| btree::leaf_key(r).to_vec());
        // The part of the range this batch covers: up to its last record, or all of it.
        let covered = match (&last, more, forward) {
            (Some(k), true, true) => (self.lo.clone(), Bound::Included(k.clone())),
            (Some(k), true, false) => (Bound::Included(k.clone()), self.hi.clone()),
            _ => (self.lo.clone(), self.hi.clone()),
        };
        let mut out = Vec::with_capacity(batch.len());
        let mut records = batch.into_iter().peekable();
        let (reader, csn) = (self.txn.id, snapshot.csn);
        let before = |a: &[u8], b: &[u8]| if forward { a < b } else { a > b };
        self.meta.versions.seen_in(bound(&covered.0), bound(&covered.1), forward, reader, csn, |key, seen| {
            // Records before this key have no versions: they are seen as they are.
            while let Some(r) = records.next_if(|r| before(btree::leaf_key(r), key)) {
                if !btree::is_ghost(&r) {
                    out.push(r);
                }
            }
            let current = records.next_if(|r| btree::leaf_key(r) == key);
            match seen {
                Seen::Current => out.extend(current.filter(|r| !btree::is_ghost(r))),
                Seen::Before(Some(row)) => out.push(btree::leaf_record(0, key, &row)),
                Seen::Before(None) => {}
            }
        });
        out.extend(records.filter(|r| !btree::is_ghost(r)));
        self.space.versions.check_not_given_up(&self.txn.versions)?;
        if let Some(k) = last {
            match self.dir {
                Direction::Forward => self.lo = Bound::Excluded(k),
                Direction::Backward => self.hi = Bound::Excluded(k),
            }
        }
        out.reverse();
        self.buf = out;
        Ok(())
    }

    /// The next batch, waiting for, skipping or reading the rows others hold locks on as
    /// `on_locked` says.
    fn fill_locked(&mut self) -> Result<()> {
        let root = self.meta.root;
        if let Some((r, mode)) = self.wait_for.take() {
            self.space.locks.wait_compatible(self.txn.id, r, mode, self.txn.wait())?;
        }
        let _latch = self.meta.latch.read();
        let (mut batch, more) =
            btree::scan_batch(self.space, root, &self.lo, &self.hi, self.dir, SCAN_BATCH, &mut self.read_ahead)?;
        self.more = more;
        if self.on_locked == OnLocked::Wait {
            let mut conflict = None;
            if let Some(i) = batch.iter().position(|r| {
                conflict = self.space.read_conflict(self.txn, &self.meta, btree::leaf_key(r));
                conflict.is_some()
            }) {
                self.wait_for = conflict;
                batch.truncate(i);
                self.more = true;
            }
        }
        if let Some(last) = batch.last() {
            let k = btree::leaf_key(last).to_vec();
            match self.dir {
                Direction::Forward => self.lo = Bound::Excluded(k),
                Direction::Backward => self.hi = Bound::Excluded(k),
            }
        }
        if self.on_locked == OnLocked::Skip {
            batch.retain(|r| self.space.read_conflict(self.txn, &self.meta, btree::leaf_key(r)).is_none());
        }
        batch.retain(|r| !btree::is_ghost(r));
        batch.reverse();
        self.buf = batch;
        Ok(())
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.buf.pop() {
                return Some(Ok((btree::leaf_key(&r).to_vec(), btree::leaf_value(&r).to_vec())));
            }
            if !self.more {
                return None;
            }
            if let Err(e) = self.fill() {
                self.more = false;
                return Some(Err(e));
            }
        }
    }
}
