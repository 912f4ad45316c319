//! The embedded API's transaction handle.

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tessera_access::lob::{Rewriter as LobRewriter, Writer as LobWriter};
use tessera_access::lock::Resource;
use tessera_access::row::OffRow;
use tessera_access::{BulkOutcome, Direction, LockMode, OnLocked, ReadLocks, Scan, Txn, Versioning};
use tessera_errors::Result;
use tessera_log::{Lsn, TxnId};

use crate::database::{Database, RecoveryModel, TableId};
use crate::decisions::Undecided;

/// A position in a transaction's log chain (see [`Transaction::savepoint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Savepoint(Lsn);

impl Savepoint {
    /// The beginning of any transaction: rolling back to it undoes everything.
    pub const START: Savepoint = Savepoint(Lsn::NONE);
}

/// Transactions that wrote something, counted as they commit or roll back (read-only
/// ones, which log nothing, are not): one relaxed addition each, beside the log flush or
/// undo a writing transaction pays anyway. Each database has its own (since it opened,
/// [`Database::transaction_counts`]), the process one more ([`transaction_counts`]).
#[derive(Debug, Default)]
pub(crate) struct TransactionCounters {
    committed: AtomicU64,
    rolled_back: AtomicU64,
}

/// [`TransactionCounters`] as read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransactionCounts {
    pub committed: u64,
    pub rolled_back: u64,
}

impl TransactionCounters {
    const fn new() -> TransactionCounters {
        TransactionCounters { committed: AtomicU64::new(0), rolled_back: AtomicU64::new(0) }
    }

    pub(crate) fn counts(&self) -> TransactionCounts {
        TransactionCounts {
            committed: self.committed.load(Ordering::Relaxed),
            rolled_back: self.rolled_back.load(Ordering::Relaxed),
        }
    }
}

/// Every database's, since the process started.
static PROCESS_TRANSACTIONS: TransactionCounters = TransactionCounters::new();

/// The writing transactions of every database that committed and rolled back since the
/// process started.
pub fn transaction_counts() -> TransactionCounts {
    PROCESS_TRANSACTIONS.counts()
}

/// Counts the end of a transaction of `db` that wrote.
fn count_end(db: &Database, committed: bool) {
    for c in [&PROCESS_TRANSACTIONS, &db.transactions] {
        let counter = if committed { &c.committed } else { &c.rolled_back };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A READ COMMITTED transaction on one database. Dropping it without `commit` rolls
/// it back.
pub struct Transaction {
    db: Arc<Database>,
    txn: Option<Txn>,
}

/// Why [`Transaction::commit_together`] did not commit, and the databases whose part did
/// not (rolled back, or in doubt and offline until their recovery settles it).
#[derive(Debug)]
pub struct NotCommitted {
    pub error: tessera_errors::Error,
    pub databases: Vec<Arc<Database>>,
}

impl Transaction {
    pub(crate) fn new(db: Arc<Database>, txn: Txn) -> Self {
        Transaction { db, txn: Some(txn) }
    }

    /// Takes a snapshot for this transaction's reads, for the running statement (READ
    /// COMMITTED SNAPSHOT) or to its end (SNAPSHOT isolation); nothing if it holds one.
    /// While it holds one, its reads (other than locking ones) see the rows committed when
    /// it was taken and never wait for writers; a locking read under a transaction's
    /// snapshot fails with 3960 on a row changed since. False when the database does not
    /// allow snapshots now.
    pub fn take_snapshot(&mut self, statement: bool) -> bool {
        // The large values its row versions point to stay readable while it is held
        // (`tessera_access::lob`: a freed value waits for the snapshots older than its
        // free).
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.take_snapshot(txn, statement)
    }

    /// The session this transaction works for, named in the ERRORLOG if its snapshot is
    /// given up to shrink the version store.
    pub fn set_owner(&mut self, session: u32) {
        self.txn.as_mut().expect("transaction is open").owner = session;
    }

    /// The snapshot this transaction reads at, if it holds one.
    pub fn snapshot(&self) -> Option<tessera_access::Snapshot> {
        self.txn_ref().snapshot()
    }

    /// Runs `f` with this transaction's reads seeing the rows as they are now, although it
    /// holds a snapshot (see `Txn::reading_current`).
    pub fn reading_current<R>(&mut self, f: impl FnOnce(&mut Transaction) -> R) -> R {
        let held = self.txn.as_mut().expect("transaction is open").suspend_snapshot();
        let r = f(self);
        self.txn.as_mut().expect("transaction is open").resume_snapshot(held);
        r
    }

    /// Takes a shared key-range lock on the keys of `table` just below `above` (None:
    /// above its last key), held to the end of the transaction: no row can be inserted
    /// there meanwhile (SERIALIZABLE, see `tessera_access::txn::locks`).
    pub fn lock_range(&mut self, table: TableId, above: Option<&[u8]>) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lock_range(txn, table.0, above)
    }

    /// Takes shared key-range locks above `lo` up to `table`'s next live key, its range
    /// included: the range just above a SERIALIZABLE range read.
    pub fn lock_ranges_above(&mut self, table: TableId, lo: &Bound<Vec<u8>>) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lock_ranges_above(txn, table.0, lo)
    }

    /// Lets go of the transaction's snapshot.
    pub fn release_snapshot(&mut self) {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.release_snapshot(txn);
    }

    fn txn_ref(&self) -> &Txn {
        self.txn.as_ref().expect("transaction is open")
    }

    pub fn id(&self) -> u64 {
        (self.txn_ref().id).raw()
    }

    /// Whether range scans begun from now on read leaves ahead (on by default; SQL
    /// Server's trace flag 652 turns it off).
    pub fn set_read_ahead(&mut self, on: bool) {
        self.txn.as_mut().expect("transaction is open").read_ahead = on;
    }

    /// How long this transaction's lock requests wait (`SET LOCK_TIMEOUT`): None waits
    /// until granted (or chosen as a deadlock victim, 1205); beyond it they fail with 1222.
    pub fn set_lock_timeout(&mut self, timeout: Option<Duration>) {
        self.txn.as_mut().expect("transaction is open").lock_timeout = timeout;
    }

    /// The flag that cancels this transaction's lock waits (error 3617) when set: the
    /// session's attention flag, which shutdown sets too.
    pub fn set_cancel(&mut self, cancel: Arc<std::sync::atomic::AtomicBool>) {
        self.txn.as_mut().expect("transaction is open").cancel = Some(cancel);
    }

    /// Ends the running statement's locks: statement-duration locks (READ COMMITTED
    /// update locks) not converted to X by a write are released.
    pub fn end_statement(&mut self) {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.end_statement(txn);
    }

    /// Takes a schema lock on an object of the database (`LockMode::SchemaStability` for
    /// a statement that uses it, `SchemaModification` for DDL that changes it), held
    /// until [`Transaction::end_statement`].
    pub fn lock_schema(&mut self, object: u32, mode: LockMode) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lock_schema(txn, object, mode)
    }

    /// Takes a schema-modification lock on an object of the database until the
    /// transaction ends: DDL that goes with the transaction (a table created or dropped in
    /// it) keeps every other statement off the object until then.
    pub fn lock_schema_to_end(&mut self, object: u32) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lock_schema_to_end(txn, object)
    }

    /// Takes the application lock named by `name_hash` in `mode` until the transaction
    /// ends, waiting at most `timeout` (None: the transaction's lock timeout); returns
    /// whether it had to wait.
    pub fn lock_app(&mut self, name_hash: u64, mode: LockMode, timeout: Option<Duration>) -> Result<bool> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lock_app(txn, Resource::App(name_hash), mode, timeout)
    }

    /// Releases an application lock this transaction holds; false if it holds none.
    pub fn release_app(&mut self, name_hash: u64) -> bool {
        self.db.space.locks.release(TxnId::from_raw(self.id()), Resource::App(name_hash))
    }

    /// Inserts a row; an existing key is error 2627.
    pub fn insert(&mut self, table: TableId, key: &[u8], value: &[u8]) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.insert(txn, table.0, key, value)
    }

    /// Replaces an existing row's value; false when the key has no row.
    pub fn update(&mut self, table: TableId, key: &[u8], value: &[u8]) -> Result<bool> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.update(txn, table.0, key, value)
    }

    /// Deletes a row; false when the key has no row.
    pub fn delete(&mut self, table: TableId, key: &[u8]) -> Result<bool> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.delete(txn, table.0, key)
    }

    /// Stores `data` as a new large value in `table` (the large-value tree of `rows`) and
    /// returns the pointer a row of `rows` keeps to it (see `tessera_access::lob`); the
    /// row's key lock, which the caller takes when it stores the row, covers it.
    pub fn lob_write(&mut self, rows: TableId, table: TableId, data: &[u8]) -> Result<OffRow> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lob_write(txn, rows.0, table.0, data)
    }

    /// Starts a new large value in `table` (the large-value tree of `rows`), written in
    /// pieces ([`Transaction::lob_append`], [`Transaction::lob_finish`]): [`Transaction::lob_write`]
    /// for a value that is not in memory whole.
    pub fn lob_writer(&mut self, rows: TableId, table: TableId) -> Result<LobWriter> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lob_writer(txn, rows.0, table.0)
    }

    /// Appends `data` to the value `w` writes.
    pub fn lob_append(&mut self, w: &mut LobWriter, data: &[u8]) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        w.append(&self.db.space, txn, data)
    }

    /// Ends the value `w` writes: the pointer a row keeps to it.
    pub fn lob_finish(&mut self, w: LobWriter) -> Result<OffRow> {
        let txn = self.txn.as_mut().expect("transaction is open");
        w.finish(&self.db.space, txn)
    }

    /// Starts a partial update of `value`, a large value in `table` (the large-value tree
    /// of `rows`) that the caller's locked row points at: `removed` bytes from byte `at`
    /// replaced with what is appended ([`Transaction::lob_rewrite_append`],
    /// [`Transaction::lob_rewrite_finish`]), only the chunks that change written and logged
    /// (see `tessera_access::lob::Rewriter`).
    pub fn lob_rewriter(
        &mut self,
        rows: TableId,
        table: TableId,
        value: OffRow,
        at: u64,
        removed: u64,
    ) -> Result<LobRewriter> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lob_rewriter(txn, rows.0, table.0, value, at, removed)
    }

    /// Appends `data` to the bytes `w` writes in place of the removed ones.
    pub fn lob_rewrite_append(&mut self, w: &mut LobRewriter, data: &[u8]) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        w.append(&self.db.space, txn, data)
    }

    /// Ends the partial update `w`: the pointer the row keeps to the value now (its old
    /// pointer is superseded, not freed).
    pub fn lob_rewrite_finish(&mut self, w: LobRewriter) -> Result<OffRow> {
        let txn = self.txn.as_mut().expect("transaction is open");
        w.finish(&self.db.space, txn)
    }

    /// Notes that the change just made dropped its row's pointer to `value`: it is
    /// removed after the commit (see [`tessera_access::Space::lob_free`]).
    pub fn lob_free(&mut self, table: TableId, value: OffRow) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lob_free(txn, table.0, value)
    }

    /// Starts writing the values of `table` (the large-value tree of `rows`) minimally
    /// logged, when the database's recovery model is SIMPLE or BULK_LOGGED, it keeps no
    /// row versions and the tree is empty: the values this transaction writes until
    /// [`Transaction::lob_bulk_finish`] go into new pages forced to disk at the finish, their
    /// bytes never in the log (see `tessera_access::bulk`); takes the tree's exclusive lock.
    /// False, having done nothing, otherwise. Nothing may read those values before the
    /// finish.
    pub fn lob_bulk_start(&mut self, rows: TableId, table: TableId) -> Result<bool> {
        if self.db.options().recovery_model == RecoveryModel::Full || self.db.versioning() != Versioning::Off {
            return Ok(false);
        }
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lob_bulk_start(txn, rows.0, table.0)
    }

    /// Ends the load [`Transaction::lob_bulk_start`] began: its pages forced to disk and
    /// made the tree's (nothing when none is under way).
    pub fn lob_bulk_finish(&mut self) -> Result<Option<BulkOutcome>> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lob_bulk_finish(txn)
    }

    /// Loads `rows` (strictly ascending keys) into `table`, minimally logged, when the
    /// database's recovery model is SIMPLE or BULK_LOGGED and the table is empty; takes
    /// an exclusive lock on the table. Returns `None`, having done nothing, otherwise —
    /// the caller then inserts row by row. The rows are durable on disk when it
    /// returns; rollback undoes the whole load. See `tessera_access::bulk`.
    pub fn bulk_load<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        table: TableId,
        rows: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Option<BulkOutcome>> {
        // A bulk load keeps no row versions: where snapshots may read the table, the rows
        // go in one by one (a snapshot reader takes no lock and would see them early).
        if self.db.options().recovery_model == RecoveryModel::Full || self.db.versioning() != Versioning::Off {
            return Ok(None);
        }
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.bulk_load(txn, table.0, rows)
    }

    pub fn get(&self, table: TableId, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.space.get(self.txn_ref(), table.0, key)
    }

    /// Point lookup that hands the value to `f` without copying it.
    pub fn get_with<R>(&self, table: TableId, key: &[u8], f: impl Fn(&[u8]) -> R) -> Result<Option<R>> {
        self.db.space.get_with(self.txn_ref(), table.0, key, f)
    }

    /// Point lookup with the locks `locks` asks for, taken before the row is read (see
    /// `tessera_access::read`): a row read under a U or X lock cannot change until the
    /// lock is released. With READPAST a locked row reads as absent.
    pub fn get_locked<R>(
        &mut self,
        table: TableId,
        key: &[u8],
        locks: ReadLocks,
        f: impl Fn(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.get_locked(txn, table.0, key, locks, f)
    }

    /// Takes the table-level locks a read with `locks` needs before it starts: the intent
    /// lock its row locks need and the table lock TABLOCK / TABLOCKX ask for.
    pub fn lock_table_for_read(&mut self, table: TableId, locks: ReadLocks) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.lock_table_for_read(txn, table.0, locks)
    }

    /// Whether this transaction may have uncommitted changes in `table` (it holds a
    /// writer's table lock there).
    pub fn may_have_written(&self, table: TableId) -> bool {
        self.db.space.may_have_written(self.txn_ref(), table.0)
    }

    /// Whether this transaction holds a lock on the row `key` of `table`.
    pub fn holds_key(&self, table: TableId, key: &[u8]) -> bool {
        self.db.space.holds_key(self.txn_ref(), table.0, key)
    }

    /// Releases this transaction's lock on the row `key` of `table` unless it is X (a
    /// row read under a lock that turned out not to qualify).
    pub fn release_key(&mut self, table: TableId, key: &[u8]) {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.release_key(txn, table.0, key)
    }

    /// Rows whose keys lie in `(lo, hi)`, in either direction.
    pub fn scan(&self, table: TableId, lo: Bound<&[u8]>, hi: Bound<&[u8]>, dir: Direction) -> Scan<'_> {
        self.scan_with(table, lo, hi, dir, OnLocked::Wait)
    }

    /// A range scan that waits for, skips (READPAST) or reads (NOLOCK) rows other
    /// transactions hold locks on.
    pub fn scan_with(
        &self,
        table: TableId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: Direction,
        on_locked: OnLocked,
    ) -> Scan<'_> {
        let own = |b: Bound<&[u8]>| b.map(|k| k.to_vec());
        self.db.space.scan(self.txn_ref(), table.0, own(lo), own(hi), dir, on_locked)
    }

    /// Adds an entry to a nonclustered index: `index_key → clustered_key`. A unique
    /// index stores the index key alone (a second row with it is error 2627); a
    /// non-unique index appends the clustered key to keep entries distinct.
    pub fn index_insert(&mut self, index: TableId, index_key: &[u8], clustered_key: &[u8], unique: bool) -> Result<()> {
        if unique {
            self.insert(index, index_key, clustered_key)
        } else {
            self.insert(index, &[index_key, clustered_key].concat(), clustered_key)
        }
    }

    /// Removes an index entry added by [`Transaction::index_insert`].
    pub fn index_delete(
        &mut self,
        index: TableId,
        index_key: &[u8],
        clustered_key: &[u8],
        unique: bool,
    ) -> Result<bool> {
        if unique {
            self.delete(index, index_key)
        } else {
            self.delete(index, &[index_key, clustered_key].concat())
        }
    }

    /// Clustered keys of the rows whose index key is `index_key` (keys must come from
    /// the prefix-free encoding in `tessera_access::key`).
    pub fn index_lookup(&self, index: TableId, index_key: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut hi = index_key.to_vec();
        // The smallest byte string above every key that starts with `index_key`.
        while let Some(last) = hi.pop() {
            if last != 0xFF {
                hi.push(last + 1);
                break;
            }
        }
        let upper = if hi.is_empty() { Bound::Unbounded } else { Bound::Excluded(&hi[..]) };
        self.scan(index, Bound::Included(index_key), upper, Direction::Forward).map(|r| r.map(|(_, v)| v)).collect()
    }

    /// A point to return to with [`Transaction::rollback_to`] (`SAVE TRANSACTION`).
    pub fn savepoint(&self) -> Savepoint {
        Savepoint(self.db.space.savepoint(self.txn_ref()))
    }

    /// Undoes every change made after `savepoint`; the transaction stays open.
    pub fn rollback_to(&mut self, savepoint: Savepoint) -> Result<()> {
        let txn = self.txn.as_mut().expect("transaction is open");
        self.db.space.rollback_to(txn, savepoint.0)
    }

    /// True once the transaction has changed anything.
    pub fn has_writes(&self) -> bool {
        self.txn_ref().has_writes()
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// Commits; durable when it returns unless the database forces delayed durability.
    pub fn commit(self) -> Result<()> {
        self.commit_with(false)
    }

    /// Commits with `DELAYED_DURABILITY = ON` when `delayed` (honoured if the database
    /// allows it): returns before the log flush; a crash in the next few milliseconds
    /// may lose it.
    pub fn commit_with(mut self, delayed: bool) -> Result<()> {
        let mut txn = self.txn.take().expect("transaction is open");
        // Only a commit record is made durable (a reader logs none).
        let wrote = txn.has_writes();
        if wrote {
            txn.durability = self.db.commit_durability(delayed);
        }
        let committed = self.db.space.commit(txn);
        if wrote && committed.is_ok() {
            count_end(&self.db, true);
        }
        committed
    }

    pub fn rollback(mut self) -> Result<()> {
        let txn = self.txn.take().expect("transaction is open");
        if txn.has_writes() {
            count_end(&self.db, false);
        }
        self.db.space.rollback(txn)
    }

    /// Whether this transaction takes part in the vote of a commit across databases: it
    /// wrote, and not to a scratch database (tempdb outlives no restart).
    fn votes(&self) -> bool {
        self.has_writes() && !self.db.is_scratch()
    }

    /// Commits `txns` — one per database, of one engine — as one transaction: all of
    /// them or none, even across a crash. When more than one of them wrote, it is
    /// two-phase commit through the instance's decision journal (see `decisions.rs`),
    /// always fully durable (as SQL Server's cross-database transactions are);
    /// otherwise each commits as [`Transaction::commit_with`] does. On an error, the
    /// databases whose transaction did not commit (rolled back, or in doubt: those are
    /// offline until recovery settles them).
    pub fn commit_together(txns: Vec<Transaction>, delayed: bool) -> std::result::Result<(), NotCommitted> {
        // One transaction (nearly every commit) needs no vote, nor a look at the others.
        if txns.len() < 2 || txns.iter().filter(|t| t.votes()).count() < 2 {
            let mut failed = Vec::new();
            let mut first_error = None;
            for t in txns {
                let db = t.db.clone();
                if let Err(e) = t.commit_with(delayed) {
                    first_error.get_or_insert(e);
                    failed.push(db);
                }
            }
            return first_error.map_or(Ok(()), |error| Err(NotCommitted { error, databases: failed }));
        }
        let mut txns = txns;
        let decisions = txns[0].db.decisions.clone();
        assert!(txns.iter().all(|t| Arc::ptr_eq(&t.db.decisions, &decisions)), "transactions of one engine");
        let decision = rand::random::<u128>().max(1);
        // Phase 1: every writer's Prepare record durable, or everything rolls back.
        let prepared = txns.iter_mut().filter(|t| t.votes()).try_for_each(|t| {
            let txn = t.txn.as_mut().expect("transaction is open");
            t.db.space.prepare(txn, decision)
        });
        // The commit point, once every writer is prepared.
        let decided = prepared.map_err(Undecided::NotMade).and_then(|()| decisions.decide(decision));
        let databases: Vec<Arc<Database>> = txns.iter().map(|t| t.db.clone()).collect();
        match decided {
            Ok(()) => {}
            Err(Undecided::NotMade(error)) => {
                for t in txns {
                    let _ = t.rollback();
                }
                return Err(NotCommitted { error, databases });
            }
            // The decision may be on disk: no database may decide alone. The writers go
            // offline; their recovery settles them from what the journal holds.
            Err(Undecided::InDoubt(error)) => {
                for mut t in txns {
                    if t.votes() {
                        t.db.space.abandon(t.txn.take().expect("transaction is open"));
                    } else {
                        let _ = t.rollback();
                    }
                }
                return Err(NotCommitted { error, databases });
            }
        }
        // Phase 2: committed. A database that cannot log its Commit is offline until its
        // recovery commits it from the decision, which is then kept.
        let mut settled = true;
        for t in txns {
            settled &= t.commit().is_ok();
        }
        if settled {
            decisions.forget(decision);
        }
        Ok(())
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if let Some(txn) = self.txn.take() {
            if txn.has_writes() {
                count_end(&self.db, false);
            }
            let _ = self.db.space.rollback(txn);
        }
    }
}
