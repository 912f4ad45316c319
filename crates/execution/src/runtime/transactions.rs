//! A session's transactions: one storage transaction per database it touched, @@TRANCOUNT,
//! savepoints, statement rollback, and the DDL deferred to their end (`deferred.rs`).

use std::sync::Arc;

use tessera_database::{Database, Savepoint, Transaction};
use tessera_errors::{SqlError, SqlResult};

use super::{lock_timeout, same_database, Deferred};

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
}

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
        for t in self.open.drain(..) {
            let database = t.database().clone();
            if let Err(e) = t.commit_with(delayed) {
                first_error.get_or_insert(SqlError::from(e));
                failed.push(database);
            }
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

    fn reset(&mut self) {
        debug_assert!(self.deferred.is_empty(), "deferred DDL outlived its transaction");
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
