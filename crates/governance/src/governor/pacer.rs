//! A running request's charges against its database's CPU and log buckets.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_database::Database;
use tessera_errors::{SqlError, SqlResult};

use super::Governor;
use tessera_io::clock::thread_cpu_time;

/// Rows read or written between two charges: often enough that a request over its limit
/// stops within a millisecond or so, rarely enough that the clock reads (a system call
/// for the thread's CPU time) cost little next to the rows.
const CHARGE_EVERY_ROWS: u32 = 256;
/// How often a throttled request looks at its cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// Charges one request's use to every governor it goes through. It runs on one thread
/// (a request's batch does), whose CPU clock it reads.
pub struct Pacer {
    /// The database's governor (if it has limits): CPU and the database's log.
    database: Option<Arc<Governor>>,
    /// Resource Governor's workload group and pool: CPU only.
    others: Vec<Arc<Governor>>,
    db: Arc<Database>,
    cpu_at: Duration,
    rows: u32,
}

impl Pacer {
    /// Starts charging a request of database `db` to its governor `database` and to
    /// `others` (which have no log limit).
    pub fn start(database: Option<Arc<Governor>>, others: Vec<Arc<Governor>>, db: Arc<Database>) -> Pacer {
        Pacer { database, others, db, cpu_at: thread_cpu_time(), rows: 0 }
    }

    /// The tempdb quota of the request's database, if it has limits (`None`: nothing
    /// it creates in tempdb is counted).
    pub fn tempdb(&self) -> Option<&super::TempdbQuota> {
        self.database.as_deref().map(Governor::tempdb)
    }

    /// Counts `rows` rows read or written; every [`CHARGE_EVERY_ROWS`] or more, charges.
    pub fn rows(&mut self, rows: u32, cancel: &AtomicBool) -> SqlResult<()> {
        self.rows = self.rows.saturating_add(rows);
        if self.rows < CHARGE_EVERY_ROWS {
            return Ok(());
        }
        self.charge(cancel)
    }

    /// Charges the CPU the thread used and the log its database wrote since the last
    /// charge, and sleeps off a deficit. Error 3617 when `cancel` is set meanwhile.
    pub fn charge(&mut self, cancel: &AtomicBool) -> SqlResult<()> {
        let wait = self.charge_now();
        sleep(wait, cancel)
    }

    /// The last charge, when the request ends: a deficit is left for the database's next
    /// charge to wait off, so the reply is not held back.
    pub fn finish(mut self) {
        self.charge_now();
    }

    fn charge_now(&mut self) -> Duration {
        self.rows = 0;
        let now = Instant::now();
        let cpu = thread_cpu_time();
        let used = cpu.saturating_sub(self.cpu_at);
        self.cpu_at = cpu;
        let used = used.as_nanos() as u64;
        let contended = super::contention::contended(now);
        let mut wait = match &self.database {
            Some(g) => g.log.charge_total(self.db.log_bytes_written(), now),
            None => Duration::ZERO,
        };
        for g in self.database.iter().chain(&self.others) {
            wait = wait.max(g.cpu.charge(used, now)).max(g.share.charge_share(used, now, contended));
        }
        wait
    }
}

/// Sleeps `wait`, or until `cancel` is set (3617).
fn sleep(wait: Duration, cancel: &AtomicBool) -> SqlResult<()> {
    let _waiting = (!wait.is_zero())
        .then(|| tessera_waits::begin(tessera_waits::WaitType::ResourceGovernorIdle, tessera_waits::Resource::Nothing));
    let until = Instant::now() + wait;
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(SqlError::from(tessera_errors::Error::Cancelled));
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::sleep((until - now).min(CANCEL_POLL));
    }
}
