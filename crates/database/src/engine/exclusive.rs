//! One holder with a database to itself, on its way to RESTORING: a tail-log backup
//! (`BACKUP LOG … WITH NORECOVERY`) must hold every transaction the database ever
//! committed, so nothing may commit between the backup's last LSN and the RESTORING
//! state. SQL Server refuses such a backup with 3101 while others use the database.
//!
//! [`Engine::hold_exclusive`] marks the open database so that sessions begin no new
//! transactions in it ([`Database::admits_users`], asked by [`Engine::database`] and by
//! the session layer's own path to an open database), then waits, for a bounded time,
//! for the users in flight (statements, open transactions: each holds a handle) to let
//! go. [`Engine::restoring_after_tail`] then makes it RESTORING only if no transaction
//! committed since the hold began, checked on the closed database itself, so a user that
//! reached it by some other path can cost the move a retry but never a commit.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_errors::msg;
use tessera_errors::Result;

use super::Engine;
use crate::database::Database;

/// A database held by one holder; the mark goes when this is dropped.
pub struct Exclusive {
    /// None once handed to [`Engine::restoring_after_tail`], which keeps the mark.
    db: Option<Arc<Database>>,
    /// Its writing transactions committed when the hold began.
    committed: u64,
}

impl Exclusive {
    /// The held database (its handle counts as the holder's).
    pub fn database(&self) -> &Arc<Database> {
        self.db.as_ref().expect("held until handed over")
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        if let Some(db) = &self.db {
            db.exclusive.store(false, Ordering::Release);
        }
    }
}

/// How often the hold looks again for users in flight.
const POLL: Duration = Duration::from_millis(1);

impl Engine {
    /// Takes `name` for the caller alone: sessions begin no new transactions in it (927)
    /// and the users in flight get up to `wait` to finish; error 3101 if they do not, or
    /// if another holder has it.
    pub fn hold_exclusive(&self, name: &str, wait: Duration) -> Result<Exclusive> {
        let db = self.database(name)?;
        if db.exclusive.swap(true, Ordering::AcqRel) {
            return Err(msg::EXCLUSIVE_ACCESS_DENIED.engine(&[]));
        }
        let mut hold = Exclusive { db: Some(db), committed: 0 };
        let deadline = Instant::now() + wait;
        // The engine's slot holds one handle, the hold another.
        while Arc::strong_count(hold.database()) > 2 {
            if Instant::now() >= deadline {
                return Err(msg::EXCLUSIVE_ACCESS_DENIED.engine(&[]));
            }
            std::thread::sleep(POLL);
        }
        hold.committed = hold.database().transactions.counts().committed;
        Ok(hold)
    }

    /// Ends a tail-log backup taken under `hold`: the database becomes RESTORING, its
    /// files kept for the log restores that follow elsewhere (or for `RESTORE … WITH
    /// RECOVERY` here). 3101, the database left ONLINE, if a transaction committed in
    /// it since the hold began (the backup would not hold it) or a user still holds it.
    pub fn restoring_after_tail(&self, mut hold: Exclusive) -> Result<()> {
        // The handle goes (the database closes only when nothing holds it); the mark
        // stays until the database is RESTORING or back to its users.
        let db = hold.db.take().expect("held until handed over");
        let name = db.name().to_string();
        let (data, log) = db.file_paths();
        let options = db.options();
        drop(db);
        let committed = hold.committed;
        let quiet = |db: &Database| db.transactions.counts().committed == committed;
        let outcome = self.restoring(&name, &data, &log, options, false, &quiet);
        if let Some(db) = self.database_if_open(&name) {
            db.exclusive.store(false, Ordering::Release);
        }
        outcome
    }
}
