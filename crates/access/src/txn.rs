//! Transactions over a [`Space`]: their state, commit, rollback and savepoints. The rest
//! of what a transaction does is in the submodules: `locks` (key, table, schema and
//! application locks), `write` (row changes: insert, update, delete) and `recovery`
//! (undoing one logged change, for rollback and crash recovery alike). Reads, and the
//! locks a read takes (READ COMMITTED checks, U/S/X row locks taken before the read), are
//! in `crate::read`.

pub(crate) mod locks;
pub(crate) mod recovery;
pub(crate) mod write;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tessera_buffer::page::PageNo;
use tessera_buffer::PageHandle;
use tessera_errors::Result;
use tessera_log::recovery::ActiveTxn;
use tessera_log::{LogRecord, Lsn, RecordKind, TxnId};

use crate::account::TreeCharge;
use crate::btree;
use crate::lock::{FastSchemaHolds, LockMode, Resource, Wait};
use crate::mtr::{self, LogCtx};
use crate::ops::Undo;
use crate::reserve::{self, Claim, MAX_IMAGED_PAGES, TXN_RECORDS, UNDO_OVERHEAD};
use crate::space::Space;
use crate::versions::{Snapshot, TreeVersions, TxnVersions};

/// Shared per-transaction state the checkpointer (and sys.dm_tran_database_transactions)
/// reads.
#[derive(Default)]
pub struct TxnShared {
    first_lsn: AtomicU64,
    last_lsn: AtomicU64,
    /// Log records written (as their last LSN is set).
    records: AtomicU64,
}

/// A transaction that has logged, as sys.dm_tran_database_transactions shows it.
#[derive(Clone, Copy, Debug)]
pub struct LoggedTxn {
    pub txn: TxnId,
    /// A lower bound of its first record's LSN.
    pub first_lsn: Lsn,
    pub last_lsn: Lsn,
    pub records: u64,
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
    /// A new transaction, entered in the table (see [`Space::begin`]).
    /// A new transaction. It joins the active table only when it first logs (see
    /// [`note_first_lsn`]): one that only reads needs no recovery and no place there, and
    /// begins and ends without taking the table's mutex.
    pub(crate) fn begin(&self, durability: Durability) -> Txn {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        Txn {
            id: TxnId::from_raw(id),
            shared: None,
            locks: Vec::new(),
            statement_locks: StatementLocks::new(),
            schema_holds: FastSchemaHolds::default(),
            trees: Vec::new(),
            ghosts: Vec::new(),
            lob_frees: Vec::new(),
            lob_bulk: None,
            versions: Default::default(),
            undo_bytes: 0,
            undo_images: 0,
            rollback_split: None,
            lock_timeout: None,
            owner: 0,
            cancel: None,
            durability,
            read_ahead: true,
            append_leaf: None,
            registered: false,
            prepared: false,
            finished: false,
        }
    }

    fn register(&self, txn: &Txn) {
        let shared = txn.shared.clone().expect("a transaction registers with its shared state");
        self.active.lock().insert(txn.id, shared);
    }

    fn end(&self, txn: &Txn) {
        if txn.registered {
            self.active.lock().remove(&txn.id);
        }
    }

    /// Gives back the memory of the active table when no transaction is in it (its map
    /// keeps the capacity of its busiest moment): for a database gone idle.
    pub(crate) fn release_idle_memory(&self) {
        let mut active = self.active.lock();
        if active.is_empty() {
            active.shrink_to_fit();
        }
    }

    /// Active transactions (first and last LSN) and the next transaction id.
    pub fn snapshot(&self) -> (Vec<ActiveTxn>, TxnId) {
        let active = self.active.lock();
        let list = active
            .iter()
            .map(|(&txn, s)| ActiveTxn {
                txn,
                first_lsn: Lsn::from_raw(s.first_lsn.load(Ordering::Acquire)),
                last_lsn: Lsn::from_raw(s.last_lsn.load(Ordering::Acquire)),
            })
            .collect();
        (list, TxnId::from_raw(self.next.load(Ordering::Relaxed)))
    }

    /// The transactions that have logged, with their first and last LSNs and how many
    /// records they wrote.
    pub fn logged(&self) -> Vec<LoggedTxn> {
        let active = self.active.lock();
        active
            .iter()
            .map(|(&txn, s)| LoggedTxn {
                txn,
                first_lsn: Lsn::from_raw(s.first_lsn.load(Ordering::Acquire)),
                last_lsn: Lsn::from_raw(s.last_lsn.load(Ordering::Acquire)),
                records: s.records.load(Ordering::Relaxed),
            })
            .collect()
    }

    pub fn active_count(&self) -> usize {
        self.active.lock().len()
    }

    /// Whether an active transaction has logged a change (and so holds the log).
    pub fn any_logged(&self) -> bool {
        self.active.lock().values().any(|s| s.last_lsn.load(Ordering::Acquire) != 0)
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

/// The locks a transaction holds for its running statement only: inline for the usual
/// few (a statement's Sch-S locks), so an autocommit statement allocates none.
pub(crate) type StatementLocks = smallvec::SmallVec<[Resource; 2]>;

/// An open transaction. Finish it with [`Space::commit`] or [`Space::rollback`];
/// dropping it unfinished is a bug (asserted in debug builds).
pub struct Txn {
    pub id: TxnId,
    /// What the checkpointer reads: made when the transaction first logs (a reader never
    /// needs it).
    shared: Option<Arc<TxnShared>>,
    locks: Vec<Resource>,
    pub(crate) trees: Vec<TreeLocks>,
    ghosts: Vec<(PageNo, Vec<u8>)>,
    /// Large values its changes dropped, removed after it commits (see `crate::lob`),
    /// each with the transaction's last LSN when it was dropped.
    pub(crate) lob_frees: Vec<crate::lob::Freed>,
    /// A minimally logged load of a large-value tree under way (`Space::lob_bulk_start`):
    /// the chunks its writers store go there. Finished by the statement that started it,
    /// before the transaction ends; a rollback (to a savepoint) drops it.
    pub(crate) lob_bulk: Option<crate::bulk::BulkBuild>,
    /// Its versions and its snapshot (`crate::versions`).
    pub(crate) versions: TxnVersions,
    /// Locks taken for the running statement only (READ COMMITTED update locks): released
    /// by [`Space::end_statement`] unless a write converted them to X.
    statement_locks: StatementLocks,
    /// Schema-stability locks held without the lock table (see `crate::lock`), released
    /// with the statement locks.
    schema_holds: FastSchemaHolds,
    /// Log bytes this transaction's rollback may need (counted in `Space::undo_reserve`).
    undo_bytes: u64,
    /// Page images its rollback may log: one per change, up to `MAX_IMAGED_PAGES`
    /// (counted in `Space::undo_images`).
    undo_images: u32,
    /// The split its rollback may need, reserved in the log and the data file (its pages
    /// counted in `Space::rollback_pages`).
    rollback_split: Option<Claim>,
    /// How long a lock request waits (`SET LOCK_TIMEOUT`; None: until granted).
    pub lock_timeout: Option<Duration>,
    /// The session it works for (0: none), named in the ERRORLOG when its snapshot is
    /// given up (`crate::versions`).
    pub owner: u32,
    /// Set when the statement is cancelled (attention, shutdown): lock waits end with 3617.
    pub cancel: Option<Arc<AtomicBool>>,
    pub durability: Durability,
    /// Range scans read ahead (off: SQL Server's trace flag 652).
    pub read_ahead: bool,
    /// The rightmost leaf of the tree this transaction last appended to, kept pinned
    /// (one page at most) so that a run of ever-increasing inserts latches it without
    /// looking it up and pinning it for every row. Released when the transaction ends.
    append_leaf: Option<(PageNo, PageHandle)>,
    /// In the active table: set with its first LSN, before its first record.
    registered: bool,
    /// Its Prepare record is durable (part of a transaction across databases). It rolls
    /// back only while the instance has not decided; once it has, its commit is made
    /// durable, and a commit that cannot be logged leaves it to recovery.
    prepared: bool,
    finished: bool,
}

impl Txn {
    /// How this transaction's lock requests wait.
    pub fn wait(&self) -> Wait<'_> {
        Wait { timeout: self.lock_timeout, cancel: self.cancel.as_deref(), fast: Some(&self.schema_holds) }
    }

    pub fn last_lsn(&self) -> Lsn {
        Lsn::from_raw(self.shared.as_ref().map_or(0, |s| s.last_lsn.load(Ordering::Acquire)))
    }

    /// Sets the transaction's newest log record (after it noted its first LSN).
    pub(crate) fn set_last_lsn(&self, lsn: Lsn) {
        match &self.shared {
            Some(s) => {
                s.last_lsn.store(lsn.raw(), Ordering::Release);
                s.records.fetch_add(1, Ordering::Relaxed);
            }
            None => debug_assert_eq!(lsn, Lsn::NONE, "transaction {} logged before it noted its first LSN", self.id),
        }
    }

    pub fn has_writes(&self) -> bool {
        !self.last_lsn().is_none()
    }

    /// The snapshot its versioned reads see, if it holds one (`crate::versions`).
    pub fn snapshot(&self) -> Option<Snapshot> {
        self.versions.snapshot
    }

    /// Sets the snapshot aside (it stays held): the transaction's reads see the rows as
    /// they are now, waiting for writers as READ COMMITTED does, until
    /// [`Txn::resume_snapshot`]. What a change checks or frees must be the current row,
    /// not a version (foreign keys, the large values of a row about to change, index
    /// builds).
    pub fn suspend_snapshot(&mut self) -> Option<Snapshot> {
        self.versions.snapshot.take()
    }

    /// Puts back the snapshot [`Txn::suspend_snapshot`] set aside.
    pub fn resume_snapshot(&mut self, snapshot: Option<Snapshot>) {
        debug_assert!(self.versions.snapshot.is_none(), "a snapshot was taken while another was set aside");
        self.versions.snapshot = snapshot;
    }

    /// Records that `lsn` is the transaction's newest log record.
    fn logged(&self, lsn: Lsn) {
        debug_assert!(self.registered, "transaction {} logged before it noted its first LSN", self.id);
        debug_assert!(lsn > self.last_lsn(), "a transaction's records are chained in LSN order");
        self.set_last_lsn(lsn);
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
    /// Whether it holds key-range locks there (counted in the tree's `range_readers`).
    pub(crate) ranges: bool,
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
    /// The account its pages are counted against, if any (`crate::account`).
    pub(crate) charge: Mutex<Option<TreeCharge>>,
    /// A large-value tree's next value id (0: not loaded yet; see `crate::lob`).
    pub(crate) lob_next_id: AtomicU64,
    /// Counts the frees of the tree rooted here (its root page may start another tree).
    pub(crate) generation: AtomicU64,
    /// The versions of its rows (`crate::versions`).
    pub(crate) versions: TreeVersions,
    /// Transactions holding key-range locks in it: while there are none, an insert looks
    /// for no range lock (`txn::locks::lock_range`).
    pub(crate) range_readers: AtomicUsize,
}

impl TreeMeta {
    pub fn new(root: PageNo) -> TreeMeta {
        TreeMeta {
            root,
            latch: RwLock::new(()),
            writers: AtomicUsize::new(0),
            append_hint: AtomicU32::new(0),
            charge: Mutex::new(None),
            lob_next_id: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            versions: TreeVersions::default(),
            range_readers: AtomicUsize::new(0),
        }
    }

    /// The rightmost leaf is no longer known (the tree was rebuilt).
    pub(crate) fn forget_append_hint(&self) {
        self.append_hint.store(0, Ordering::Relaxed);
    }
}

/// The body of [`Space::commit`].
pub(crate) fn commit(space: &Space, mut txn: Txn) -> Result<()> {
    assert!(txn.lob_bulk.is_none(), "a large-value load is finished before its transaction commits");
    if txn.has_writes() {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros());
        let lsn = space.wal.append(&LogRecord::commit(txn.id, txn.last_lsn(), now as i64));
        let lsn = match lsn {
            Ok(l) => l,
            // Prepared: the instance decided to commit it, so it may not roll back. The
            // database serves nothing more and its recovery commits it.
            Err(e) if txn.prepared => {
                abandon(space, txn);
                return Err(e);
            }
            Err(e) => {
                // Could not log the commit: the transaction rolls back instead.
                rollback(space, txn)?;
                return Err(e);
            }
        };
        if txn.durability == Durability::Full || txn.prepared {
            if let Err(e) = space.wal.flush(lsn) {
                // In doubt: the commit record may or may not be on disk, and the log takes
                // nothing more (9001), so neither a rollback nor a retry can be logged. The
                // transaction ends here; the database's next opening decides from what the
                // disk holds. Its versions stay uncommitted: snapshots never see it.
                finish(space, &mut txn);
                return Err(e);
            }
        }
        // Durable, its locks still held: snapshots taken from now on see it.
        space.versions.committed(&mut txn.versions);
        remove_ghosts(space, &txn);
        crate::lob::Horizon::committed(space, std::mem::take(&mut txn.lob_frees));
    }
    finish(space, &mut txn);
    Ok(())
}

fn remove_ghosts(space: &Space, txn: &Txn) {
    for (tree, key) in &txn.ghosts {
        let meta = space.tree(*tree);
        let _latch = meta.latch.write();
        // A failure (e.g. full log) only leaves the ghost for a later insert to reuse.
        if let Ok(Some(true)) = btree::lookup_with(space, *tree, key, btree::is_ghost) {
            let _ = btree::remove(space, *tree, key, LogCtx::system());
        }
    }
}

fn finish(space: &Space, txn: &mut Txn) {
    // A reader reserved nothing: it leaves the space's shared counters alone.
    if txn.undo_bytes != 0 {
        space.undo_reserve.fetch_sub(txn.undo_bytes, Ordering::AcqRel);
    }
    if txn.undo_images != 0 {
        space.undo_images.fetch_sub(txn.undo_images, Ordering::AcqRel);
    }
    if let Some(split) = txn.rollback_split.take() {
        space.rollback_pages.fetch_sub(split.pages, Ordering::AcqRel);
        reserve::drop_frame(space, split.frame);
    }
    txn.undo_bytes = 0;
    txn.undo_images = 0;
    space.release_snapshot(txn);
    space.locks.release_all(txn.id, &txn.locks);
    space.locks.release_all(txn.id, &txn.statement_locks);
    txn.statement_locks.clear();
    space.locks.release_schema_holds(txn.id, &mut txn.schema_holds);
    for t in txn.trees.drain(..) {
        if t.writer {
            t.meta.writers.fetch_sub(1, Ordering::AcqRel);
        }
        if t.ranges {
            t.meta.range_readers.fetch_sub(1, Ordering::AcqRel);
        }
    }
    space.txns.end(txn);
    txn.finished = true;
}

/// The body of [`Space::prepare`].
pub(crate) fn prepare(space: &Space, txn: &mut Txn, decision: u128) -> Result<()> {
    assert!(txn.has_writes() && !txn.prepared, "only a transaction that wrote is prepared, once");
    assert!(txn.lob_bulk.is_none(), "a large-value load is finished before its transaction is prepared");
    let lsn = space.wal.append(&LogRecord::prepare(txn.id, txn.last_lsn(), decision))?;
    txn.logged(lsn);
    space.wal.flush(lsn)?;
    txn.prepared = true;
    Ok(())
}

/// The body of [`Space::abandon`].
pub(crate) fn abandon(space: &Space, mut txn: Txn) {
    space.wal.take_offline();
    finish(space, &mut txn);
}

/// The body of [`Space::rollback`].
pub(crate) fn rollback(space: &Space, mut txn: Txn) -> Result<()> {
    let undone = undo_back_to(space, &txn, Lsn::NONE).and_then(|last| {
        if txn.has_writes() {
            space.wal.append(&LogRecord::new(RecordKind::End, txn.id, last, Vec::new()))?;
        }
        Ok(())
    });
    match undone {
        Ok(()) => space.versions.rolled_back(&mut txn.versions),
        // Not undone (a page unreadable, the log gone): the database serves nothing more
        // (9001) and its next opening's recovery undoes the rest. The transaction ends
        // here; its versions stay uncommitted, so no snapshot ever sees them.
        Err(_) => space.wal.take_offline(),
    }
    finish(space, &mut txn);
    undone
}

/// The body of [`Space::rollback_to`].
pub(crate) fn rollback_to(space: &Space, txn: &mut Txn, savepoint: Lsn) -> Result<()> {
    assert!(savepoint <= txn.last_lsn(), "savepoint {savepoint} lies after the transaction's last record");
    let last = undo_back_to(space, txn, savepoint).inspect_err(|_| {
        // A statement half undone: nothing may be served on top of it (see `rollback`).
        space.wal.take_offline();
    })?;
    txn.set_last_lsn(last);
    // Values dropped after the savepoint are referenced again; a load under way is gone
    // (its pages were freed by the undo of their allocations).
    txn.lob_frees.retain(|f| f.lsn <= savepoint);
    txn.lob_bulk = None;
    Ok(())
}

/// Walks the transaction's log chain back from its last record to `stop` (exclusive;
/// 0 = the beginning), undoing updates; returns the LSN of its last record afterwards.
fn undo_back_to(space: &Space, txn: &Txn, stop: Lsn) -> Result<Lsn> {
    let mut next = txn.last_lsn();
    let mut last = next;
    while next > stop {
        let rec = space.wal.read(next)?;
        debug_assert_eq!(rec.txn, txn.id);
        match rec.kind {
            RecordKind::Update => {
                (last, next) = recovery::undo_record(space, &rec, last)?;
            }
            RecordKind::Compensation => next = rec.undo_next,
            _ => next = rec.prev_lsn,
        }
    }
    Ok(last)
}

/// The body of [`Space::note_first_lsn`].
pub(crate) fn note_first_lsn(space: &Space, txn: &mut Txn) {
    if !txn.registered {
        let shared = TxnShared {
            first_lsn: AtomicU64::new(space.wal.end_lsn().raw()),
            last_lsn: AtomicU64::new(0),
            records: AtomicU64::new(0),
        };
        txn.shared = Some(Arc::new(shared));
        space.txns.register(txn);
        txn.registered = true;
    }
}

/// Log bytes, page images and the split reserved for a change's rollback (see
/// [`reserve_undo`]).
pub(crate) struct Reserved {
    log: u64,
    images: u32,
    /// The transaction's reserved split before this change reserved a bigger one.
    split_before: Option<Option<Claim>>,
}

/// Reserves the room the rollback of one change will need, before the change, so that
/// the change's own claim finds it counted (see `crate::reserve`): its compensation
/// record, for a key of `key_len` bytes whose bigger record (before or after) has `bytes`
/// bytes, and possibly a page image in it; with the transaction's first change, its
/// commit or end record; and when the change makes a record smaller in a tree of
/// `shrinks_in` levels, a split of that tree grown by one level (one per transaction, the
/// biggest), which only then can putting the old record back need. A change that fails
/// gives it back ([`unreserve_undo`]).
pub(crate) fn reserve_undo(
    space: &Space,
    txn: &mut Txn,
    key_len: usize,
    bytes: usize,
    shrinks_in: Option<usize>,
) -> Reserved {
    let mut log = (key_len + bytes) as u64 + UNDO_OVERHEAD;
    if txn.undo_bytes == 0 {
        log += TXN_RECORDS;
    }
    let split = shrinks_in.map(|depth| Claim::split(depth + 1));
    let split_before = match (split, txn.rollback_split) {
        (Some(new), old) if old.is_none_or(|old| new.log > old.log) => {
            let (old_log, old_pages) = old.map_or((0, 0), |o| (o.log, o.pages));
            log += new.log - old_log;
            space.rollback_pages.fetch_add(new.pages - old_pages, Ordering::AcqRel);
            reserve::promise_frame(space, new.frame);
            if let Some(o) = old {
                reserve::drop_frame(space, o.frame);
            }
            txn.rollback_split = Some(new);
            Some(old)
        }
        _ => None,
    };
    let images = u32::from(u64::from(txn.undo_images) < MAX_IMAGED_PAGES);
    txn.undo_bytes += log;
    txn.undo_images += images;
    space.undo_reserve.fetch_add(log, Ordering::AcqRel);
    if images > 0 {
        space.undo_images.fetch_add(images, Ordering::AcqRel);
    }
    Reserved { log, images, split_before }
}

/// Gives back what [`reserve_undo`] reserved for a change that was not made.
pub(crate) fn unreserve_undo(space: &Space, txn: &mut Txn, r: Reserved) {
    txn.undo_bytes -= r.log;
    txn.undo_images -= r.images;
    space.undo_reserve.fetch_sub(r.log, Ordering::AcqRel);
    space.undo_images.fetch_sub(r.images, Ordering::AcqRel);
    if let Some(old) = r.split_before {
        let new = txn.rollback_split.expect("the split this change reserved");
        space.rollback_pages.fetch_sub(new.pages - old.map_or(0, |o| o.pages), Ordering::AcqRel);
        if let Some(o) = old {
            reserve::promise_frame(space, o.frame);
        }
        reserve::drop_frame(space, new.frame);
        txn.rollback_split = old;
    }
}

/// Runs `change` with its rollback's room reserved ([`reserve_undo`]), given back if it
/// fails.
pub(crate) fn with_undo_reserved<R>(
    space: &Space,
    txn: &mut Txn,
    key_len: usize,
    bytes: usize,
    shrinks_in: Option<usize>,
    change: impl FnOnce(&mut Txn) -> Result<R>,
) -> Result<R> {
    let reserved = reserve_undo(space, txn, key_len, bytes, shrinks_in);
    let result = change(txn);
    if result.is_err() {
        unreserve_undo(space, txn, reserved);
    }
    result
}

/// The body of [`Space::commit_update`].
pub(crate) fn commit_update(txn: &mut Txn, mtr: mtr::Mtr, undo: &Undo) -> Result<Lsn> {
    let ctx = LogCtx::update(txn.id, txn.last_lsn(), undo);
    let lsn = mtr.commit(ctx)?;
    txn.logged(lsn);
    Ok(lsn)
}
