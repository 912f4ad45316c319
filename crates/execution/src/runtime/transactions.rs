//! A session's transactions: one storage transaction per database it touched (begun on
//! first use, with the snapshot its isolation level and the database ask for), @@TRANCOUNT,
//! savepoints, statement rollback, and the DDL deferred to their end (`deferred.rs`).

use std::sync::Arc;

use tessera_database::{Database, Savepoint, Transaction};
use tessera_errors::{SqlError, SqlResult};

use super::{is_tempdb, lock_timeout, same_database, Deferred, SessionState, Shared};
use tessera_errors::msg;

/// The session's transactions: one storage transaction per database touched.
#[derive(Default)]
pub struct Transactions {
    pub open: Vec<Transaction>,
    /// @@TRANCOUNT
    pub count: u32,
    /// Savepoints, newest last.
    savepoints: Vec<SavepointMarks>,
    /// Where the running statement started in each transaction (statement rollback), by
    /// the transaction's database.
    pub statement_marks: Vec<(Arc<Database>, Savepoint)>,
    /// How many `deferred` entries there were when the running statement started.
    statement_deferred: usize,
    /// Tables created and dropped in the transactions, oldest first: their end settles
    /// them (`deferred.rs`).
    deferred: Vec<Deferred>,
    /// Set when an error doomed the transaction (XACT_ABORT): it can only roll back.
    pub doomed: bool,
    /// Delayed durability requested by `COMMIT … WITH (DELAYED_DURABILITY = ON)`.
    pub delayed: bool,
    /// The name given to the outermost BEGIN TRANSACTION.
    pub name: Option<String>,
    /// The open transaction as the views show it (the session's `SessionInfo` holds it too).
    pub published: Arc<parking_lot::Mutex<Option<super::TransactionInfo>>>,
    /// The last transaction's list of databases, kept for the next one's (an autocommit
    /// statement publishes one transaction without allocating).
    spare_databases: Vec<super::DatabaseTransaction>,
}

/// Transaction ids for the views, unique in the process.
static TRANSACTION_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A savepoint: its name, the position in every open transaction, and how many deferred
/// DDL entries there were.
#[derive(Clone)]
struct SavepointMarks {
    name: String,
    marks: Vec<(String, Savepoint)>,
    deferred: usize,
}

impl Transactions {
    pub(super) fn position(&self, db: &str) -> Option<usize> {
        self.open.iter().position(|t| same_database(t.database().name(), db))
    }

    /// Marks the start of a statement in every open transaction. A READ COMMITTED
    /// SNAPSHOT statement's snapshot ends here: the next statement takes its own.
    pub fn mark_statement(&mut self) {
        for t in &mut self.open {
            if t.snapshot().is_some_and(|s| s.statement) {
                t.release_snapshot();
            }
        }
        // Refilled in place: the list keeps its room from one statement to the next.
        self.statement_marks.clear();
        self.statement_marks.extend(self.open.iter().map(|t| (t.database().clone(), t.savepoint())));
        self.statement_deferred = self.deferred.len();
    }

    /// Undoes the deferred DDL entries from the `keep`th on, newest first.
    fn roll_back_deferred(&mut self, keep: usize) {
        while self.deferred.len() > keep {
            if let Some(d) = self.deferred.pop() {
                d.rolled_back();
            }
        }
    }

    /// Ends the running statement's locks in every open transaction (statement-duration
    /// locks — schema stability, update locks not converted to X — are released). Called
    /// for top-level statements only: a statement inside a procedure or function keeps
    /// them until the statement that called it ends.
    pub fn end_statement(&mut self) {
        for t in &mut self.open {
            t.end_statement();
        }
    }

    /// Sets how long every open transaction's lock requests wait (`SET LOCK_TIMEOUT`).
    pub fn set_lock_timeout(&mut self, ms: i64) {
        for t in &mut self.open {
            t.set_lock_timeout(lock_timeout(ms));
        }
    }

    /// Undoes the running statement's changes, keeping the transactions open.
    pub fn rollback_statement(&mut self) -> SqlResult<()> {
        for (db, mark) in std::mem::take(&mut self.statement_marks) {
            if let Some(i) = self.open.iter().position(|t| Arc::ptr_eq(t.database(), &db)) {
                self.open[i].rollback_to(mark)?;
            }
        }
        self.roll_back_deferred(self.statement_deferred);
        Ok(())
    }

    /// Records a table's definition before and after DDL in the session's transaction.
    pub(super) fn defer(&mut self, deferred: Deferred) {
        self.deferred.push(deferred);
    }

    /// The objects of `database` the open transaction dropped: gone for this session, still
    /// in the shared catalog (locked) until the transaction commits.
    pub fn dropped_in<'a>(&'a self, database: &'a str) -> impl Iterator<Item = i32> + 'a {
        self.deferred.iter().filter_map(move |d| d.dropped_in(database))
    }

    pub fn commit_all(&mut self, delayed: bool) -> SqlResult<()> {
        let mut first_error = None;
        let mut failed: Vec<Arc<Database>> = Vec::new();
        // Objects dropped leave the shared catalog while they are still locked: a
        // statement waiting for one binds again and finds it gone (a failed commit puts it
        // back below).
        for d in &self.deferred {
            d.publish_drop();
        }
        // Tables redefined are marked so from before the commit until it is stamped.
        let redefining: Vec<_> = self
            .deferred
            .iter()
            .filter_map(|d| d.redefined_table().map(|t| (d.database().clone(), d.database().redefining(t))))
            .collect();
        // One transaction across the databases it changed: all commit or none do.
        if let Err(e) = Transaction::commit_together(self.open.drain(..).collect(), delayed) {
            first_error = Some(SqlError::from(e.error));
            failed = e.databases;
        }
        for (database, r) in redefining {
            let committed = !failed.iter().any(|f| Arc::ptr_eq(f, &database));
            database.redefined(r, committed);
        }
        // A transaction that did not commit rolled back: what it deferred is undone.
        for d in std::mem::take(&mut self.deferred) {
            if failed.iter().any(|f| Arc::ptr_eq(f, d.database())) {
                d.rolled_back();
            } else {
                d.committed();
            }
        }
        self.reset();
        first_error.map_or(Ok(()), Err)
    }

    pub fn rollback_all(&mut self) -> SqlResult<()> {
        let mut first_error = None;
        // Old definitions back while the tables are still locked (see
        // `Deferred::restore_definition`); the new trees go once the undo is done.
        let deferred = std::mem::take(&mut self.deferred);
        for d in deferred.iter().rev() {
            d.restore_definition();
        }
        for t in self.open.drain(..) {
            if let Err(e) = t.rollback() {
                first_error.get_or_insert(SqlError::from(e));
            }
        }
        for d in deferred.into_iter().rev() {
            d.drop_new_trees();
        }
        self.reset();
        first_error.map_or(Ok(()), Err)
    }

    /// Publishes that the transaction now also works in `database` with storage
    /// transaction `txn` (the first database begins it).
    fn publish_begun(&mut self, database_id: u32, txn: u64) {
        let now = super::now_ms();
        let mut published = self.published.lock();
        let info = published.get_or_insert_with(|| super::TransactionInfo {
            id: TRANSACTION_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            begin_ms: now,
            name: self.name.clone(),
            user: self.count > 0,
            databases: std::mem::take(&mut self.spare_databases),
        });
        info.databases.push(super::DatabaseTransaction { database_id, txn, begin_ms: now });
    }

    fn reset(&mut self) {
        debug_assert!(self.deferred.is_empty(), "deferred DDL outlived its transaction");
        if let Some(mut ended) = self.published.lock().take() {
            ended.databases.clear();
            self.spare_databases = ended.databases;
        }
        self.count = 0;
        self.savepoints.clear();
        self.statement_deferred = 0;
        self.statement_marks.clear();
        self.doomed = false;
        self.delayed = false;
        self.name = None;
    }

    pub fn savepoint(&mut self, name: &str) {
        let marks = self.open.iter().map(|t| (t.database().name().to_string(), t.savepoint())).collect();
        self.savepoints.push(SavepointMarks { name: name.to_string(), marks, deferred: self.deferred.len() });
    }

    /// Rolls back to the newest savepoint called `name`; false if there is none.
    pub fn rollback_to(&mut self, name: &str) -> SqlResult<bool> {
        let Some(pos) = self.savepoints.iter().rposition(|s| s.name.eq_ignore_ascii_case(name)) else {
            return Ok(false);
        };
        let SavepointMarks { marks, deferred, .. } = self.savepoints[pos].clone();
        self.savepoints.truncate(pos + 1);
        for t in &mut self.open {
            let mark = marks.iter().find(|(db, _)| t.database().name().eq_ignore_ascii_case(db)).map(|(_, m)| *m);
            match mark {
                Some(m) => t.rollback_to(m)?,
                // Begun after the savepoint: everything in it is after the savepoint.
                None => t.rollback_to(Savepoint::START)?,
            }
        }
        self.roll_back_deferred(deferred);
        Ok(true)
    }
}

impl SessionState {
    /// The session's transaction in `db`, begun on first use, holding the snapshot its
    /// reads see where the isolation level and the database say so: SNAPSHOT isolation
    /// takes one for the transaction (3952 where the database does not allow it, 3951
    /// for a transaction begun at another level), READ COMMITTED one per statement in a
    /// database with `READ_COMMITTED_SNAPSHOT ON` (released by `Transactions::mark_statement`).
    pub fn transaction(&mut self, shared: &Shared, db: &str) -> SqlResult<&mut Transaction> {
        let i = match self.txns.position(db) {
            Some(i) => i,
            None => self.begin_transaction(shared, db)?,
        };
        let t = &mut self.txns.open[i];
        match self.options.isolation_level.as_str() {
            "READ COMMITTED" if t.snapshot().is_none() && t.database().reads_committed_snapshot() => {
                // A database still turning it on (or off) reads with locks meanwhile.
                t.take_snapshot(true);
            }
            "SNAPSHOT" if t.snapshot().is_none_or(|s| s.statement) && !is_tempdb(t.database().name()) => {
                return Err(msg::SNAPSHOT_LEVEL_CHANGED.with(&[&t.database().name()]));
            }
            _ => {}
        }
        Ok(&mut self.txns.open[i])
    }

    /// Begins the session's transaction in `db`; its index among the open ones.
    fn begin_transaction(&mut self, shared: &Shared, db: &str) -> SqlResult<usize> {
        let database = shared.database_memo(&self.catalog_memo, db)?;
        database.available()?;
        database.admits_users()?;
        report_version_victims(shared, &database);
        let mut t = database.begin();
        t.set_owner(u32::try_from(self.spid).unwrap_or(0));
        // A SNAPSHOT transaction sees the rows committed when it first reads the
        // database; it is refused where the database does not allow it, never run as
        // another level. tempdb's objects are the session's own: it reads them with locks.
        if self.options.isolation_level == "SNAPSHOT" && !is_tempdb(database.name()) {
            let allowed = database.options().allow_snapshot_isolation && t.take_snapshot(false);
            if !allowed {
                return Err(msg::SNAPSHOT_NOT_ALLOWED.with(&[&database.name()]));
            }
        }
        // Trace flag 652: scans read no pages ahead.
        t.set_read_ahead(!self.has_trace_flag(shared, 652));
        t.set_lock_timeout(lock_timeout(self.options.lock_timeout));
        t.set_cancel(self.cancel.clone());
        let txns = &mut self.txns;
        txns.publish_begun(database.id(), t.id());
        txns.statement_marks.push((database.clone(), t.savepoint()));
        txns.open.push(t);
        Ok(txns.open.len() - 1)
    }
}

/// Writes to the ERRORLOG the snapshots the database gave up to shrink its version store
/// since the last report (as SQL Server's 3967 does): which session held each and how long.
fn report_version_victims(shared: &Shared, database: &Database) {
    for v in database.take_version_victims() {
        shared.write_errorlog(
            0,
            &format!(
                "Insufficient room to hold row versions in database '{}' (at most {} MB). The snapshot of session {} (sequence number {}, held for {} s) has been marked as victim: its transaction will be rolled back if it accesses the version store (3966).",
                database.name(),
                database.version_store_max_bytes() >> 20,
                v.owner,
                v.csn,
                v.held_ms / 1000
            ),
        );
    }
}
