//! Transactions over a [`Space`]: row operations with locking and logging, commit,
//! rollback and crash recovery.
//!
//! Protocol of a row change (insert, update, delete):
//! 1. IX lock on the table and X lock on the key, held to the end of the transaction;
//! 2. exclusive tree latch for the one operation;
//! 3. read the current record; log one Update record whose redo is the page change and
//!    whose undo is the old record (or "remove the key");
//! 4. release the tree latch.
//!
//! Deletes leave a ghost (the record flagged, same key): a reader that meets a ghost
//! whose deleter is still active waits for it like for any uncommitted row, so READ
//! COMMITTED never sees an uncommitted delete. After commit the transaction removes
//! its ghosts (redo-only System records); ghosts left by a crash are skipped by readers
//! and reused by inserts.
//!
//! READ COMMITTED reads hold the tree latch shared while they read a record and then
//! check that no other transaction holds an X lock on its key. A writer takes its X
//! lock before it latches the tree, so a record read with no conflicting lock is
//! committed. On conflict the reader drops the latch, waits, and reads again.
//!
//! Rollback and recovery undo logically, by key, through the same B+tree code, writing
//! compensation records, because the row may have moved to another page since.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tessera_buffer::page::PageNo;
use tessera_buffer::PageHandle;
use tessera_io::{Error, Result};
use tessera_log::recovery::{self, ActiveTxn, RecoveryHandler, RecoveryOutcome};
use tessera_log::{LogRecord, Lsn, RecordKind, TxnId};

use crate::btree::{self, Direction};
use crate::lock::{LockMode, Resource};
use crate::mtr::{self, LogCtx};
use crate::ops::{self, Undo};
use crate::space::Space;

/// Ghost keys a transaction remembers for cleanup after commit; beyond this, ghosts
/// are left for later inserts to reuse.
const MAX_TRACKED_GHOSTS: usize = 100_000;
/// Records read from a tree per latch acquisition in a scan.
const SCAN_BATCH: usize = 128;
/// Key locks one transaction takes in one tree before it tries to escalate to an
/// exclusive table lock (SQL Server's threshold); a failed attempt is retried after
/// another `ESCALATE_RETRY` locks.
const ESCALATE_AT: usize = 5000;
const ESCALATE_RETRY: usize = 1250;

/// Shared per-transaction state the checkpointer reads.
#[derive(Default)]
pub struct TxnShared {
    first_lsn: AtomicU64,
    last_lsn: AtomicU64,
}

/// The active transactions of one database.
pub struct TxnTable {
    next: AtomicU64,
    active: Mutex<HashMap<TxnId, Arc<TxnShared>>>,
}

impl Default for TxnTable {
    fn default() -> Self {
        TxnTable { next: AtomicU64::new(1), active: Mutex::new(HashMap::new()) }
    }
}

impl TxnTable {
    fn begin(&self) -> (TxnId, Arc<TxnShared>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::new(TxnShared::default());
        self.active.lock().insert(id, shared.clone());
        (id, shared)
    }

    fn end(&self, id: TxnId) {
        self.active.lock().remove(&id);
    }

    /// Active transactions (first and last LSN) and the next transaction id.
    pub fn snapshot(&self) -> (Vec<ActiveTxn>, TxnId) {
        let active = self.active.lock();
        let list = active
            .iter()
            .map(|(&txn, s)| ActiveTxn {
                txn,
                first_lsn: s.first_lsn.load(Ordering::Acquire),
                last_lsn: s.last_lsn.load(Ordering::Acquire),
            })
            .collect();
        (list, self.next.load(Ordering::Relaxed))
    }

    pub fn active_count(&self) -> usize {
        self.active.lock().len()
    }
}

/// When a commit returns relative to its log flush.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// Commit returns after its log records are on disk.
    #[default]
    Full,
    /// Commit returns at once; the log is flushed by the next full commit, a
    /// checkpoint, or the database's periodic log flush.
    Delayed,
}

/// An open transaction. Finish it with [`Space::commit`] or [`Space::rollback`];
/// dropping it unfinished is a bug (asserted in debug builds).
pub struct Txn {
    pub id: TxnId,
    shared: Arc<TxnShared>,
    locks: Vec<Resource>,
    write_trees: Vec<TreeLocks>,
    ghosts: Vec<(PageNo, Vec<u8>)>,
    /// Log bytes this transaction's rollback may need (counted in `Space::undo_reserve`).
    undo_bytes: u64,
    pub durability: Durability,
    /// Range scans read ahead (off: SQL Server's trace flag 652).
    pub read_ahead: bool,
    /// The rightmost leaf of the tree this transaction last appended to, kept pinned
    /// (one page at most) so that a run of ever-increasing inserts latches it without
    /// looking it up and pinning it for every row. Released when the transaction ends.
    append_leaf: Option<(PageNo, PageHandle)>,
    finished: bool,
}

impl Txn {
    pub fn last_lsn(&self) -> Lsn {
        self.shared.last_lsn.load(Ordering::Acquire)
    }

    pub fn has_writes(&self) -> bool {
        self.last_lsn() != 0
    }

    /// Records that `lsn` is the transaction's newest log record.
    pub(crate) fn logged(&self, lsn: Lsn) {
        debug_assert!(lsn > self.last_lsn(), "a transaction's records are chained in LSN order");
        self.shared.last_lsn.store(lsn, Ordering::Release);
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        debug_assert!(self.finished || std::thread::panicking(), "transaction {} dropped while open", self.id);
    }
}

/// A tree a transaction writes: how many key locks it holds there, and whether they
/// were replaced by one exclusive table lock.
struct TreeLocks {
    meta: Arc<TreeMeta>,
    keys: usize,
    next_escalation: usize,
    escalated: bool,
}

/// Per-tree in-memory state: the structure latch and the number of transactions that
/// may hold uncommitted changes in it (readers skip lock checks while it is zero).
#[derive(Default)]
pub struct TreeMeta {
    pub root: PageNo,
    pub latch: RwLock<()>,
    writers: AtomicUsize,
    /// The rightmost leaf as last seen by an insert (0: unknown); see `btree::try_append`.
    append_hint: AtomicU32,
}

impl TreeMeta {
    pub fn new(root: PageNo) -> TreeMeta {
        TreeMeta { root, latch: RwLock::new(()), writers: AtomicUsize::new(0), append_hint: AtomicU32::new(0) }
    }

    /// The rightmost leaf is no longer known (the tree was rebuilt).
    pub(crate) fn forget_append_hint(&self) {
        self.append_hint.store(0, Ordering::Relaxed);
    }
}

impl Space {
    pub fn begin(&self, durability: Durability) -> Txn {
        let (id, shared) = self.txns.begin();
        Txn {
            id,
            shared,
            locks: Vec::new(),
            write_trees: Vec::new(),
            ghosts: Vec::new(),
            undo_bytes: 0,
            durability,
            read_ahead: true,
            append_leaf: None,
            finished: false,
        }
    }

    /// Takes the locks a change of `key` in `tree` needs: IX on the table and X on the
    /// key, or nothing more once the transaction holds X on the whole table.
    fn lock_for_write(&self, txn: &mut Txn, tree: PageNo, key: &[u8]) -> Result<Arc<TreeMeta>> {
        let i = self.writing(txn, tree)?;
        let meta = txn.write_trees[i].meta.clone();
        if txn.write_trees[i].escalated {
            return Ok(meta);
        }
        let r = Resource::key(tree, key);
        if self.locks.lock(txn.id, r, LockMode::Exclusive)? {
            assert!(txn.locks.len() < crate::lock::MAX_LOCKS_PER_TXN, "lock limit per transaction reached");
            txn.locks.push(r);
            let t = &mut txn.write_trees[i];
            t.keys += 1;
            if t.keys >= t.next_escalation {
                if self.locks.try_lock(txn.id, Resource::Table(tree), LockMode::Exclusive) {
                    t.escalated = true;
                    let (released, kept): (Vec<Resource>, Vec<Resource>) =
                        txn.locks.iter().partition(|r| matches!(r, Resource::Key(t, _) if *t == tree));
                    self.locks.release_all(txn.id, &released);
                    txn.locks = kept;
                } else {
                    t.next_escalation += ESCALATE_RETRY;
                }
            }
        }
        Ok(meta)
    }

    /// The transaction's entry for a tree it writes, made (with an IX lock on the table)
    /// on its first write there.
    fn writing(&self, txn: &mut Txn, tree: PageNo) -> Result<usize> {
        if let Some(i) = txn.write_trees.iter().position(|t| t.meta.root == tree) {
            return Ok(i);
        }
        if self.locks.lock(txn.id, Resource::Table(tree), LockMode::IntentExclusive)? {
            txn.locks.push(Resource::Table(tree));
        }
        let meta = self.tree(tree);
        meta.writers.fetch_add(1, Ordering::AcqRel);
        txn.write_trees.push(TreeLocks { meta, keys: 0, next_escalation: ESCALATE_AT, escalated: false });
        Ok(txn.write_trees.len() - 1)
    }

    /// Logs `mtr` as the transaction's next Update record, with `undo`, and reserves the
    /// log room its compensation will need. Returns the record's LSN.
    pub(crate) fn commit_update(&self, txn: &mut Txn, mtr: mtr::Mtr, undo: &Undo) -> Result<Lsn> {
        let ctx =
            LogCtx { kind: RecordKind::Update, txn: txn.id, prev_lsn: txn.last_lsn(), undo_next: 0, undo: Some(undo) };
        let lsn = mtr.commit(ctx)?;
        txn.logged(lsn);
        self.reserve_undo(txn, &[], 0);
        Ok(lsn)
    }

    /// Takes an exclusive lock on the whole table `tree` (waiting for other writers and
    /// readers to finish): no key locks are taken in it afterwards.
    pub(crate) fn lock_table_exclusive(&self, txn: &mut Txn, tree: PageNo) -> Result<Arc<TreeMeta>> {
        let i = self.writing(txn, tree)?;
        if !txn.write_trees[i].escalated {
            if self.locks.lock(txn.id, Resource::Table(tree), LockMode::Exclusive)? {
                txn.locks.push(Resource::Table(tree));
            }
            txn.write_trees[i].escalated = true;
        }
        Ok(txn.write_trees[i].meta.clone())
    }

    /// The lock a READ COMMITTED reader of `key` must wait for, if another transaction
    /// holds one: an exclusive table lock or an exclusive key lock.
    fn read_conflict(&self, txn: &Txn, meta: &TreeMeta, key: &[u8]) -> Option<(Resource, LockMode)> {
        if meta.writers.load(Ordering::Acquire) == 0 {
            return None;
        }
        let table = Resource::Table(meta.root);
        if self.locks.conflicts(txn.id, table, LockMode::IntentShared) {
            return Some((table, LockMode::IntentShared));
        }
        let r = Resource::key(meta.root, key);
        self.locks.conflicts(txn.id, r, LockMode::Shared).then_some((r, LockMode::Shared))
    }

    /// Publishes a lower bound of the transaction's first LSN before its first record
    /// exists, so a checkpoint never truncates the log past it.
    pub(crate) fn note_first_lsn(&self, txn: &Txn) {
        if txn.shared.first_lsn.load(Ordering::Acquire) == 0 {
            txn.shared.first_lsn.store(self.wal.end_lsn(), Ordering::Release);
        }
    }

    /// Reserves the log room a compensation record for a change of this size needs
    /// (the first change also reserves room for splits during rollback).
    pub(crate) fn reserve_undo(&self, txn: &mut Txn, key: &[u8], bytes: usize) {
        let mut need = (key.len() + bytes) as u64 + 96;
        if txn.undo_bytes == 0 {
            need += 64 << 10;
        }
        txn.undo_bytes += need;
        self.undo_reserve.fetch_add(need, Ordering::AcqRel);
    }

    /// Applies a row change: `new` is the leaf record to store (None: remove the key).
    fn change(
        &self,
        txn: &mut Txn,
        meta: &TreeMeta,
        key: &[u8],
        new: Option<Vec<u8>>,
        old: Option<Vec<u8>>,
    ) -> Result<()> {
        self.note_first_lsn(txn);
        let tree = meta.root;
        let size = old.as_ref().map_or(0, Vec::len).max(new.as_ref().map_or(0, Vec::len));
        let undo = Undo::Row { tree, key: Cow::Borrowed(key), old };
        let ctx =
            LogCtx { kind: RecordKind::Update, txn: txn.id, prev_lsn: txn.last_lsn(), undo_next: 0, undo: Some(&undo) };
        match new {
            Some(rec) => {
                let placed = btree::put_placed(self, tree, key, rec, ctx)?;
                self.placed(txn, meta, placed);
            }
            None => txn.shared.last_lsn.store(btree::remove(self, tree, key, ctx)?, Ordering::Release),
        }
        self.reserve_undo(txn, key, size);
        Ok(())
    }

    /// Bookkeeping after a row change stored a record: the transaction's last LSN and
    /// the tree's append hint.
    fn placed(&self, txn: &Txn, meta: &TreeMeta, placed: btree::Placed) {
        if placed.rightmost {
            meta.append_hint.store(placed.leaf, Ordering::Relaxed);
        }
        txn.shared.last_lsn.store(placed.lsn, Ordering::Release);
    }

    /// Inserts a row; a live row with the same key is error 2627.
    pub fn insert(&self, txn: &mut Txn, tree: PageNo, key: &[u8], value: &[u8]) -> Result<()> {
        let meta = self.lock_for_write(txn, tree, key)?;
        let _latch = meta.latch.write();
        let mut rec = btree::leaf_record(0, key, value);
        // Ever-increasing keys go straight to the rightmost leaf: a key above every key
        // in the tree cannot be a duplicate.
        self.note_first_lsn(txn);
        let undo = Undo::Row { tree, key: Cow::Borrowed(key), old: None };
        let ctx =
            LogCtx { kind: RecordKind::Update, txn: txn.id, prev_lsn: txn.last_lsn(), undo_next: 0, undo: Some(&undo) };
        if let Some(leaf) = self.append_leaf(txn, tree, &meta)? {
            if let Some(lsn) = btree::try_append(self, tree, leaf, key, &mut rec, ctx)? {
                txn.shared.last_lsn.store(lsn, Ordering::Release);
                self.reserve_undo(txn, key, 0);
                return Ok(());
            }
        }
        match btree::insert_placed(self, tree, key, rec, ctx)? {
            Ok(placed) => {
                self.placed(txn, &meta, placed);
                self.reserve_undo(txn, key, 0);
                Ok(())
            }
            Err(existing) if !btree::is_ghost(&existing) => {
                Err(Error::DuplicateKey { object: format!("tree {tree}"), key: format!("{key:02x?}") })
            }
            // A deleted row not yet cleaned: the insert replaces it, and undoing the insert
            // puts the ghost back.
            Err(ghost) => self.change(txn, &meta, key, Some(btree::leaf_record(0, key, value)), Some(ghost)),
        }
    }

    /// The transaction's pinned handle on the tree's rightmost leaf as last seen by an
    /// insert (`None`: not known yet), pinning it first if the transaction holds another.
    fn append_leaf<'t>(&self, txn: &'t mut Txn, tree: PageNo, meta: &TreeMeta) -> Result<Option<&'t PageHandle>> {
        let hint = meta.append_hint.load(Ordering::Relaxed);
        if hint == 0 {
            return Ok(None);
        }
        let held = matches!(&txn.append_leaf, Some((t, h)) if *t == tree && h.page_no() == hint);
        if !held {
            // Unpin the old leaf before pinning the new one: a transaction holds one.
            txn.append_leaf = None;
            txn.append_leaf = Some((tree, self.pool.fetch(self.file, hint)?));
        }
        Ok(txn.append_leaf.as_ref().map(|(_, h)| h))
    }

    /// Replaces the value of an existing row; returns false if there is none.
    pub fn update(&self, txn: &mut Txn, tree: PageNo, key: &[u8], value: &[u8]) -> Result<bool> {
        let meta = self.lock_for_write(txn, tree, key)?;
        let _latch = meta.latch.write();
        let Some(current) = btree::lookup_with(self, tree, key, |r| r.to_vec())? else { return Ok(false) };
        if btree::is_ghost(&current) {
            return Ok(false);
        }
        self.change(txn, &meta, key, Some(btree::leaf_record(0, key, value)), Some(current))?;
        Ok(true)
    }

    /// Deletes a row (leaving a ghost until commit); returns false if there is none.
    pub fn delete(&self, txn: &mut Txn, tree: PageNo, key: &[u8]) -> Result<bool> {
        let meta = self.lock_for_write(txn, tree, key)?;
        let _latch = meta.latch.write();
        let Some(mut current) = btree::lookup_with(self, tree, key, |r| r.to_vec())? else { return Ok(false) };
        if btree::is_ghost(&current) {
            return Ok(false);
        }
        let mut ghost = current.clone();
        ghost[0] |= btree::GHOST;
        current[0] &= !btree::GHOST;
        self.change(txn, &meta, key, Some(ghost), Some(current))?;
        if txn.ghosts.len() < MAX_TRACKED_GHOSTS {
            txn.ghosts.push((tree, key.to_vec()));
        }
        Ok(true)
    }

    /// Reads the committed (or own uncommitted) value of `key` and passes it to `f`.
    pub fn get_with<R>(&self, txn: &Txn, tree: PageNo, key: &[u8], f: impl Fn(&[u8]) -> R) -> Result<Option<R>> {
        let meta = self.tree(tree);
        loop {
            let conflict = {
                let _latch = meta.latch.read();
                let found =
                    btree::lookup_with(self, tree, key, |r| (!btree::is_ghost(r)).then(|| f(btree::leaf_value(r))))?;
                match self.read_conflict(txn, &meta, key) {
                    None => return Ok(found.flatten()),
                    Some(c) => c,
                }
            };
            self.locks.wait_compatible(txn.id, conflict.0, conflict.1)?;
        }
    }

    pub fn get(&self, txn: &Txn, tree: PageNo, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(txn, tree, key, |v| v.to_vec())
    }

    /// Rows with keys in `(lo, hi)` in `dir` order, read committed.
    pub fn scan<'s>(
        &'s self,
        txn: &'s Txn,
        tree: PageNo,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        dir: Direction,
    ) -> Scan<'s> {
        Scan {
            space: self,
            txn,
            meta: self.tree(tree),
            lo,
            hi,
            dir,
            buf: Vec::new(),
            more: true,
            wait_for: None,
            read_ahead: if txn.read_ahead { btree::ReadAhead::default() } else { btree::ReadAhead::off() },
        }
    }

    /// Commits: logs the commit, waits for the log flush (unless delayed), removes the
    /// transaction's ghosts and releases its locks.
    pub fn commit(&self, mut txn: Txn) -> Result<()> {
        if txn.has_writes() {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros());
            let lsn = self.wal.append(&LogRecord::commit(txn.id, txn.last_lsn(), now as i64));
            let lsn = match lsn {
                Ok(l) => l,
                Err(e) => {
                    // Could not log the commit: the transaction rolls back instead.
                    self.rollback(txn)?;
                    return Err(e);
                }
            };
            if txn.durability == Durability::Full {
                self.wal.flush(lsn)?;
            }
            self.remove_ghosts(&txn);
        }
        self.finish(&mut txn);
        Ok(())
    }

    fn remove_ghosts(&self, txn: &Txn) {
        for (tree, key) in &txn.ghosts {
            let meta = self.tree(*tree);
            let _latch = meta.latch.write();
            // A failure (e.g. full log) only leaves the ghost for a later insert to reuse.
            if let Ok(Some(true)) = btree::lookup_with(self, *tree, key, btree::is_ghost) {
                let _ = btree::remove(self, *tree, key, LogCtx::system());
            }
        }
    }

    fn finish(&self, txn: &mut Txn) {
        self.undo_reserve.fetch_sub(txn.undo_bytes, Ordering::AcqRel);
        txn.undo_bytes = 0;
        self.locks.release_all(txn.id, &txn.locks);
        for t in txn.write_trees.drain(..) {
            t.meta.writers.fetch_sub(1, Ordering::AcqRel);
        }
        self.txns.end(txn.id);
        txn.finished = true;
    }

    /// Rolls the transaction back: undoes its changes newest first, with compensation
    /// records, then logs its end and releases its locks.
    pub fn rollback(&self, mut txn: Txn) -> Result<()> {
        let last = self.undo_back_to(&txn, 0)?;
        if txn.has_writes() {
            self.wal.append(&LogRecord::new(RecordKind::End, txn.id, last, Vec::new()))?;
        }
        self.finish(&mut txn);
        Ok(())
    }

    /// The point [`Space::rollback_to`] can return to: everything logged so far.
    pub fn savepoint(&self, txn: &Txn) -> Lsn {
        txn.last_lsn()
    }

    /// Partial rollback (`ROLLBACK TRANSACTION savepoint`, and statement atomicity inside
    /// a transaction): undoes, with compensation records, every change made after
    /// `savepoint`; the transaction stays open and keeps its locks. The compensation
    /// chain skips the undone records, so a later full rollback does not undo them twice.
    pub fn rollback_to(&self, txn: &mut Txn, savepoint: Lsn) -> Result<()> {
        assert!(savepoint <= txn.last_lsn(), "savepoint {savepoint} lies after the transaction's last record");
        let last = self.undo_back_to(txn, savepoint)?;
        txn.shared.last_lsn.store(last, Ordering::Release);
        Ok(())
    }

    /// Walks the transaction's log chain back from its last record to `stop` (exclusive;
    /// 0 = the beginning), undoing updates; returns the LSN of its last record afterwards.
    fn undo_back_to(&self, txn: &Txn, stop: Lsn) -> Result<Lsn> {
        let mut next = txn.last_lsn();
        let mut last = next;
        while next > stop {
            let rec = self.wal.read(next)?;
            debug_assert_eq!(rec.txn, txn.id);
            match rec.kind {
                RecordKind::Update => {
                    (last, next) = self.undo_record(&rec, last)?;
                }
                RecordKind::Compensation => next = rec.undo_next,
                _ => next = rec.prev_lsn,
            }
        }
        Ok(last)
    }

    /// Undoes one Update record and logs the compensation; returns its LSN and its
    /// undo-next (where undoing goes on).
    fn undo_record(&self, rec: &LogRecord, last: Lsn) -> Result<(Lsn, Lsn)> {
        let (_, undo) = ops::decode(&rec.body)?;
        let undo = undo.ok_or_else(|| Error::Invalid("update record without undo information".into()))?;
        // The inverse of a bulk load's root frees every page of the tree, so the load's
        // page allocations before it are skipped.
        let undo_next = match undo {
            Undo::EmptyTree { before, .. } => before,
            _ => rec.prev_lsn,
        };
        let ctx = LogCtx { kind: RecordKind::Compensation, txn: rec.txn, prev_lsn: last, undo_next, undo: None };
        let clr = match undo {
            Undo::Row { tree, key, old } => {
                let meta = self.tree(tree);
                let _latch = meta.latch.write();
                match old {
                    Some(old) => btree::put(self, tree, &key, &old, ctx),
                    None => btree::remove(self, tree, &key, ctx),
                }
            }
            Undo::CreateTree { root } => {
                let meta = self.tree(root);
                let _latch = meta.latch.write();
                btree::free_tree(self, root, ctx)
            }
            Undo::BulkPage { page } => {
                let mut mtr = mtr::Mtr::without_reserve(self);
                self.free_page_unread(&mut mtr, page)?;
                mtr.commit(ctx)
            }
            Undo::EmptyTree { root, .. } => {
                let meta = self.tree(root);
                let _latch = meta.latch.write();
                btree::empty_tree(self, root, ctx)
            }
        }?;
        Ok((clr, undo_next))
    }

    /// Crash recovery: redo from the last checkpoint, undo the losers.
    pub fn recover(&self, master: tessera_log::Master) -> Result<RecoveryOutcome> {
        struct Handler<'a>(&'a Space);
        impl RecoveryHandler for Handler<'_> {
            fn redo(&mut self, lsn: Lsn, rec: &LogRecord) -> Result<()> {
                let (ops, _) = ops::decode(&rec.body)?;
                mtr::redo(self.0, lsn, &ops)
            }
            fn undo(&mut self, _lsn: Lsn, rec: &LogRecord, last_lsn: Lsn) -> Result<(Lsn, Lsn)> {
                self.0.undo_record(rec, last_lsn)
            }
        }
        let outcome = recovery::recover(&self.wal, master, &mut Handler(self))?;
        self.txns.next.fetch_max(outcome.next_txn, Ordering::AcqRel);
        Ok(outcome)
    }

    /// Creates an empty B+tree inside the transaction and returns its root page. If the
    /// transaction rolls back (or never commits before a crash) the tree's pages are freed.
    pub fn create_tree(&self, txn: &mut Txn) -> Result<PageNo> {
        self.note_first_lsn(txn);
        let mut mtr = mtr::Mtr::new(self)?;
        let root = btree::create(self, &mut mtr)?;
        self.commit_update(txn, mtr, &Undo::CreateTree { root })?;
        Ok(root)
    }

    /// Frees every page of a tree that no catalog entry names any more (a committed
    /// DROP). Safe to repeat after a crash part-way: pages already freed are skipped.
    pub fn free_tree(&self, root: PageNo) -> Result<()> {
        let meta = self.tree(root);
        let _latch = meta.latch.write();
        btree::free_tree(self, root, LogCtx::system()).map(|_| ())
    }
}

/// A read-committed range scan. Yields `(key, value)` pairs.
pub struct Scan<'s> {
    space: &'s Space,
    txn: &'s Txn,
    meta: Arc<TreeMeta>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    dir: Direction,
    /// Records read but not yet returned, in reverse order (pop from the end).
    buf: Vec<Vec<u8>>,
    more: bool,
    /// A lock whose holder must finish before the scan goes on.
    wait_for: Option<(Resource, LockMode)>,
    read_ahead: btree::ReadAhead,
}

impl Scan<'_> {
    fn fill(&mut self) -> Result<()> {
        let root = self.meta.root;
        if let Some((r, mode)) = self.wait_for.take() {
            self.space.locks.wait_compatible(self.txn.id, r, mode)?;
        }
        let _latch = self.meta.latch.read();
        let (mut batch, more) =
            btree::scan_batch(self.space, root, &self.lo, &self.hi, self.dir, SCAN_BATCH, &mut self.read_ahead)?;
        self.more = more;
        let mut conflict = None;
        if let Some(i) = batch.iter().position(|r| {
            conflict = self.space.read_conflict(self.txn, &self.meta, btree::leaf_key(r));
            conflict.is_some()
        }) {
            self.wait_for = conflict;
            batch.truncate(i);
            self.more = true;
        }
        if let Some(last) = batch.last() {
            let k = btree::leaf_key(last).to_vec();
            match self.dir {
                Direction::Forward => self.lo = Bound::Excluded(k),
                Direction::Backward => self.hi = Bound::Excluded(k),
            }
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
