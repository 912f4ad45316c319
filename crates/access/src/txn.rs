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
//! Reads, and the locks a read takes (READ COMMITTED checks, U/S/X row locks taken
//! before the read), are in `crate::read`. Locks last to the end of the transaction,
//! or to the end of the statement for READ COMMITTED update locks that no write
//! converted to X ([`Space::end_statement`]).
//!
//! Rollback and recovery undo logically, by key, through the same B+tree code, writing
//! compensation records, because the row may have moved to another page since.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tessera_buffer::page::PageNo;
use tessera_buffer::PageHandle;
use tessera_errors::{Error, Result};
use tessera_log::recovery::{self, ActiveTxn, RecoveryHandler, RecoveryOutcome};
use tessera_log::{LogRecord, Lsn, RecordKind, TxnId};

use crate::btree;
use crate::lock::{LockMode, Resource, Wait};
use crate::mtr::{self, LogCtx};
use crate::ops::{self, Undo};
use crate::space::Space;

/// Ghost keys a transaction remembers for cleanup after commit; beyond this, ghosts
/// are left for later inserts to reuse.
const MAX_TRACKED_GHOSTS: usize = 100_000;
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
    pub(crate) trees: Vec<TreeLocks>,
    ghosts: Vec<(PageNo, Vec<u8>)>,
    /// Locks taken for the running statement only (READ COMMITTED update locks): released
    /// by [`Space::end_statement`] unless a write converted them to X.
    statement_locks: Vec<Resource>,
    /// Log bytes this transaction's rollback may need (counted in `Space::undo_reserve`).
    undo_bytes: u64,
    /// How long a lock request waits (`SET LOCK_TIMEOUT`; None: until granted).
    pub lock_timeout: Option<Duration>,
    /// Set when the statement is cancelled (attention, shutdown): lock waits end with 3617.
    pub cancel: Option<Arc<AtomicBool>>,
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
    /// How this transaction's lock requests wait.
    pub fn wait(&self) -> Wait<'_> {
        Wait { timeout: self.lock_timeout, cancel: self.cancel.as_deref() }
    }

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

/// A tree a transaction locks keys in: how many key locks it holds there, whether it
/// writes there (counted in the tree's writers), and the table lock that replaced its
/// key locks, if any (escalation, TABLOCK).
pub(crate) struct TreeLocks {
    pub(crate) meta: Arc<TreeMeta>,
    keys: usize,
    next_escalation: usize,
    pub(crate) table: Option<LockMode>,
    writer: bool,
}

impl TreeLocks {
    /// Whether the table lock held makes a key lock in `mode` unnecessary.
    pub(crate) fn covers(&self, mode: LockMode) -> bool {
        match self.table {
            Some(LockMode::Exclusive) => true,
            Some(LockMode::Shared | LockMode::Update) => mode == LockMode::Shared,
            _ => false,
        }
    }
}

/// How long a lock a statement takes is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Until the statement ends (READ COMMITTED update locks, schema locks), unless a
    /// write converted it to X.
    Statement,
    /// Until the transaction ends (writes, HOLDLOCK, UPDLOCK, XLOCK).
    Transaction,
}

/// Per-tree in-memory state: the structure latch and the number of transactions that
/// may hold uncommitted changes in it (readers skip lock checks while it is zero).
#[derive(Default)]
pub struct TreeMeta {
    pub root: PageNo,
    pub latch: RwLock<()>,
    pub(crate) writers: AtomicUsize,
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
            statement_locks: Vec::new(),
            trees: Vec::new(),
            ghosts: Vec::new(),
            undo_bytes: 0,
            lock_timeout: None,
            cancel: None,
            durability,
            read_ahead: true,
            append_leaf: None,
            finished: false,
        }
    }

    /// Takes the locks a change of `key` in `tree` needs: IX on the table and X on the
    /// key, or nothing more once the transaction holds X on the whole table.
    fn lock_for_write(&self, txn: &mut Txn, tree: PageNo, key: &[u8]) -> Result<Arc<TreeMeta>> {
        let i = self.tree_locks(txn, tree, true)?;
        self.lock_key(txn, i, key, LockMode::Exclusive, Hold::Transaction)?;
        Ok(txn.trees[i].meta.clone())
    }

    /// Takes `mode` on `key` in the tree of `txn.trees[i]` unless a table lock the
    /// transaction holds covers it; returns whether a new lock was taken. A new lock is
    /// remembered for release (at the statement's or the transaction's end, per `hold`)
    /// and counted toward escalation: after `ESCALATE_AT` key locks in one tree the
    /// transaction tries, without waiting, to lock the whole table (X if it writes
    /// there, S otherwise) and drops its key locks there.
    pub(crate) fn lock_key(&self, txn: &mut Txn, i: usize, key: &[u8], mode: LockMode, hold: Hold) -> Result<bool> {
        if txn.trees[i].covers(mode) {
            return Ok(false);
        }
        let tree = txn.trees[i].meta.root;
        let r = Resource::key(tree, key);
        if !self.locks.lock(txn.id, r, mode, txn.wait())? {
            return Ok(false);
        }
        self.keep_lock(txn, i, r, hold)?;
        Ok(true)
    }

    /// Remembers a new key lock `r` in the tree of `txn.trees[i]` (see [`Space::lock_key`]).
    pub(crate) fn keep_lock(&self, txn: &mut Txn, i: usize, r: Resource, hold: Hold) -> Result<()> {
        if txn.locks.len() + txn.statement_locks.len() >= crate::lock::MAX_LOCKS_PER_TXN {
            self.locks.release_all(txn.id, &[r]);
            return Err(Error::Invalid(format!(
                "the transaction holds {} locks, the most one transaction may hold",
                crate::lock::MAX_LOCKS_PER_TXN
            )));
        }
        match hold {
            Hold::Transaction => txn.locks.push(r),
            Hold::Statement => txn.statement_locks.push(r),
        }
        let t = &mut txn.trees[i];
        t.keys += 1;
        if t.keys >= t.next_escalation {
            let tree = t.meta.root;
            let mode = if t.writer { LockMode::Exclusive } else { LockMode::Shared };
            match self.locks.try_lock(txn.id, Resource::Table(tree), mode) {
                Some(new) => {
                    t.table = Some(mode);
                    if new {
                        txn.locks.push(Resource::Table(tree));
                    }
                    let in_tree = |r: &Resource| matches!(r, Resource::Key(t, _) if *t == tree);
                    let (released, kept): (Vec<Resource>, Vec<Resource>) = txn.locks.iter().partition(|r| in_tree(r));
                    self.locks.release_all(txn.id, &released);
                    txn.locks = kept;
                    let (released, kept): (Vec<Resource>, Vec<Resource>) =
                        txn.statement_locks.iter().partition(|r| in_tree(r));
                    self.locks.release_all(txn.id, &released);
                    txn.statement_locks = kept;
                }
                None => t.next_escalation += ESCALATE_RETRY,
            }
        }
        Ok(())
    }

    /// The transaction's entry for a tree it locks keys in, made on first use with an
    /// intent lock on the table: IX (and a place among the tree's writers) when `write`,
    /// IS otherwise; a reader's entry becomes a writer's on its first write.
    pub(crate) fn tree_locks(&self, txn: &mut Txn, tree: PageNo, write: bool) -> Result<usize> {
        let found = txn.trees.iter().position(|t| t.meta.root == tree);
        if let Some(i) = found {
            if !write || txn.trees[i].writer {
                return Ok(i);
            }
        }
        let intent = if write { LockMode::IntentExclusive } else { LockMode::IntentShared };
        if self.locks.lock(txn.id, Resource::Table(tree), intent, txn.wait())? {
            txn.locks.push(Resource::Table(tree));
        }
        let i = match found {
            Some(i) => i,
            None => {
                let meta = self.tree(tree);
                txn.trees.push(TreeLocks { meta, keys: 0, next_escalation: ESCALATE_AT, table: None, writer: false });
                txn.trees.len() - 1
            }
        };
        if write {
            txn.trees[i].writer = true;
            txn.trees[i].meta.writers.fetch_add(1, Ordering::AcqRel);
        }
        Ok(i)
    }

    /// Takes a schema lock on object `object` (Sch-S for a statement using it, Sch-M for
    /// DDL changing it) until the statement ends.
    pub fn lock_schema(&self, txn: &mut Txn, object: u32, mode: LockMode) -> Result<()> {
        debug_assert!(matches!(mode, LockMode::SchemaStability | LockMode::SchemaModification));
        let r = Resource::Schema(object);
        if self.locks.lock(txn.id, r, mode, txn.wait())? {
            txn.statement_locks.push(r);
        }
        Ok(())
    }

    /// Takes an application lock for the rest of the transaction (`sp_getapplock` with
    /// `@LockOwner = 'Transaction'`), waiting at most `timeout` (None: until granted);
    /// returns whether it had to wait.
    pub fn lock_app(&self, txn: &mut Txn, r: Resource, mode: LockMode, timeout: Option<Duration>) -> Result<bool> {
        debug_assert!(matches!(r, Resource::App(_)));
        let wait = Wait { timeout, cancel: txn.cancel.as_deref() };
        let (new, waited) = self.locks.lock_noting_wait(txn.id, r, mode, wait)?;
        if new {
            txn.locks.push(r);
        }
        Ok(waited)
    }

    /// Whether the transaction holds a lock on `key` in `tree`.
    pub fn holds_key(&self, txn: &Txn, tree: PageNo, key: &[u8]) -> bool {
        self.locks.held(txn.id, Resource::key(tree, key)).is_some()
    }

    /// Lets go of the transaction's lock on `key` in `tree` unless a write made it X: a
    /// locking read whose row did not qualify keeps nothing (as SQL Server releases the
    /// U lock of a row an UPDATE's predicate rejects).
    pub fn release_key(&self, txn: &mut Txn, tree: PageNo, key: &[u8]) {
        let r = Resource::key(tree, key);
        if self.locks.release_unless(txn.id, r, |m| m == LockMode::Exclusive).is_none() {
            txn.locks.retain(|&l| l != r);
            txn.statement_locks.retain(|&l| l != r);
        }
    }

    /// Ends a statement's locks: its statement-duration locks are released, except those
    /// a write converted to X, which are kept to the end of the transaction.
    pub fn end_statement(&self, txn: &mut Txn) {
        for r in std::mem::take(&mut txn.statement_locks) {
            if self.locks.release_unless(txn.id, r, |m| m == LockMode::Exclusive).is_some() {
                txn.locks.push(r);
            }
        }
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
        let i = self.tree_locks(txn, tree, true)?;
        self.lock_table(txn, i, LockMode::Exclusive)?;
        Ok(txn.trees[i].meta.clone())
    }

    /// Locks the table of `txn.trees[i]` in `mode` (S or X: TABLOCK, TABLOCKX) to the end
    /// of the transaction; it then covers the key locks of that mode. (SQL Server keeps a
    /// TABLOCK without HOLDLOCK to the end of the statement; here the intent lock taken
    /// first merges with it, so it lasts as long as the intent.)
    pub(crate) fn lock_table(&self, txn: &mut Txn, i: usize, mode: LockMode) -> Result<()> {
        if txn.trees[i].table.is_some_and(|m| m.max(mode) == m) {
            return Ok(());
        }
        let r = Resource::Table(txn.trees[i].meta.root);
        if self.locks.lock(txn.id, r, mode, txn.wait())? {
            txn.locks.push(r);
        }
        // What the transaction holds now (an intent lock combined with S makes X).
        txn.trees[i].table = self.locks.held(txn.id, r).filter(|&m| m >= LockMode::Shared);
        Ok(())
    }

    /// The lock a READ COMMITTED reader of `key` must wait for, if another transaction
    /// holds one: an exclusive table lock or an exclusive key lock.
    pub(crate) fn read_conflict(&self, txn: &Txn, meta: &TreeMeta, key: &[u8]) -> Option<(Resource, LockMode)> {
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
        self.locks.release_all(txn.id, &txn.statement_locks);
        txn.statement_locks.clear();
        for t in txn.trees.drain(..) {
            if t.writer {
                t.meta.writers.fetch_sub(1, Ordering::AcqRel);
            }
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
