//! Per-database resource limits (tessera extensions, set with `ALTER DATABASE … SET`;
//! `ResourceLimits` in the database crate), for any number of databases:
//!
//! - `MAX_CONCURRENT_REQUESTS`: at most n of the database's requests run at once, the
//!   rest wait in a fair queue ([`gate`]);
//! - `MAX_CPU_PERCENT`: its requests use at most this share of the CPU the server may use;
//! - `CPU_SHARE_PERCENT`: the same, but only while the server's CPU is contended
//!   ([`contention`]: the process busy on 90 % of its cores); idle CPU is anyone's;
//! - `MAX_LOG_RATE_KB`: its log is written at most this fast;
//! - `MAX_TEMPDB_MB`: the temporary tables and table variables its requests create hold
//!   at most this much of tempdb ([`TempdbQuota`]; error 40544 beyond it, the one limit
//!   that refuses rather than waits: space does not come back by waiting);
//! - `MAX_BUFFER_POOL_MB`: kept by the database itself (its data file's limit in the
//!   buffer pool), shown here.
//!
//! CPU and log use are drawn from token buckets ([`bucket`]). A running request charges
//! them as it goes ([`Pacer`]): at the end of each statement and every 256 rows it reads
//! or writes, it charges the CPU its thread used and the bytes its database's log wrote
//! since the last charge, and sleeps off any deficit (cancellable, error 3617) — so a
//! database over its limit waits, never fails, and leaves the CPU and the log device to
//! the others. Requests in a database without limits pay one branch per row.
//!
//! Resource Governor's pools and groups (`crate::resource_governor`) are governors too: a
//! request goes through its database's, its workload group's and its pool's, in that
//! order (one order for all, so two gates never wait on each other).
//!
//! Invariants:
//! - Only databases with a limit have a governor: the memory held grows with the number
//!   of limited databases, not of databases.
//! - A request is governed by the database it started in (its session's database when
//!   the batch or RPC arrived), for its whole run.

pub mod bucket;
mod contention;
pub mod gate;
mod pacer;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tessera_database::{PageAccount, ResourceLimits, PAGE_SIZE};
use tessera_errors::msg;
use tessera_errors::SqlResult;

pub use bucket::BucketUse;
pub use gate::{GateUse, RequestSlot};
pub use pacer::Pacer;

use bucket::Bucket;
use gate::Gate;

/// One database's limits (or a Resource Governor pool's or workload group's) and what
/// enforces them.
#[derive(Debug)]
pub struct Governor {
    limits: Mutex<ResourceLimits>,
    /// Whether a request must be paced (`paces`): any limit but MAX_BUFFER_POOL_MB, which
    /// the buffer pool keeps by itself.
    paces: AtomicBool,
    gate: Arc<Gate>,
    /// CPU nanoseconds per second (a cap).
    cpu: Bucket,
    /// CPU nanoseconds per second under contention (a share).
    share: Bucket,
    /// Log bytes per second.
    log: Bucket,
    /// The tempdb pages its requests' temporary objects hold.
    tempdb: TempdbQuota,
}

/// A database's tempdb quota: the trees of the temporary tables and table variables its
/// requests create are charged to `account` (see `tessera_access::account`), and a row
/// written to tempdb while the account is at its limit is refused.
#[derive(Debug, Default)]
pub struct TempdbQuota {
    account: Arc<PageAccount>,
    /// At most this many pages (0: no limit).
    limit_pages: AtomicU64,
    refusals: AtomicU64,
}

impl TempdbQuota {
    fn new(mb: Option<u32>) -> TempdbQuota {
        let quota = TempdbQuota::default();
        quota.set_limit(mb);
        quota
    }

    fn set_limit(&self, mb: Option<u32>) {
        let pages = mb.map_or(0, |mb| u64::from(mb) * (1 << 20) / PAGE_SIZE as u64);
        self.limit_pages.store(pages, Ordering::Relaxed);
    }

    /// What new temporary objects are charged to.
    pub fn account(&self) -> &Arc<PageAccount> {
        &self.account
    }

    /// Error 40544 when `pages` more (at least one) would pass the quota.
    pub fn check(&self, pages: u64) -> SqlResult<()> {
        let limit = self.limit_pages.load(Ordering::Relaxed);
        if limit == 0 || self.account.pages() + pages.max(1) <= limit {
            return Ok(());
        }
        self.refusals.fetch_add(1, Ordering::Relaxed);
        Err(msg::DATABASE_SIZE_QUOTA_REACHED.with(&[&"tempdb"]))
    }
}

/// A tempdb quota's use, for the DMV.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TempdbUse {
    pub pages: u64,
    pub refusals: u64,
}

/// What a governed database's DMV row shows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    pub limits: ResourceLimits,
    pub requests: GateUse,
    pub cpu: BucketUse,
    pub share: BucketUse,
    pub log: BucketUse,
    pub tempdb: TempdbUse,
}

/// Whether `limits` act on requests (all of them but the buffer pool's).
fn paces(limits: &ResourceLimits) -> bool {
    ResourceLimits { max_buffer_pool_mb: None, ..*limits }.any()
}

/// CPU nanoseconds per second a cap of `percent` allows: that share of every core the
/// server may run on.
fn cpu_rate(percent: Option<u32>) -> Option<f64> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    percent.map(|p| f64::from(p.clamp(1, 100)) / 100.0 * cores as f64 * 1e9)
}

fn log_rate(kb: Option<u32>) -> Option<f64> {
    kb.map(|kb| f64::from(kb.max(1)) * 1024.0)
}

impl Governor {
    pub fn new(limits: ResourceLimits) -> Governor {
        let now = Instant::now();
        Governor {
            limits: Mutex::new(limits),
            paces: AtomicBool::new(paces(&limits)),
            gate: Arc::new(Gate::new(limits.max_concurrent_requests.unwrap_or(0))),
            cpu: Bucket::new(cpu_rate(limits.max_cpu_percent), now),
            share: Bucket::new(cpu_rate(limits.cpu_share_percent), now),
            log: Bucket::new(log_rate(limits.max_log_rate_kb), now),
            tempdb: TempdbQuota::new(limits.max_tempdb_mb),
        }
    }

    pub fn tempdb(&self) -> &TempdbQuota {
        &self.tempdb
    }

    /// Changes the limits; running requests go on, queued ones are admitted as the new
    /// request limit allows.
    pub fn set(&self, limits: ResourceLimits) {
        let now = Instant::now();
        let mut current = self.limits.lock();
        if current.max_concurrent_requests != limits.max_concurrent_requests {
            self.gate.set_limit(limits.max_concurrent_requests.unwrap_or(0));
        }
        if current.max_cpu_percent != limits.max_cpu_percent {
            self.cpu.set_rate(cpu_rate(limits.max_cpu_percent), now);
        }
        if current.cpu_share_percent != limits.cpu_share_percent {
            self.share.set_rate(cpu_rate(limits.cpu_share_percent), now);
        }
        if current.max_log_rate_kb != limits.max_log_rate_kb {
            self.log.set_rate(log_rate(limits.max_log_rate_kb), now);
        }
        self.tempdb.set_limit(limits.max_tempdb_mb);
        self.paces.store(paces(&limits), Ordering::Relaxed);
        *current = limits;
    }

    /// Whether its requests need a [`Pacer`]: it has a limit that acts on requests.
    pub fn paces(&self) -> bool {
        self.paces.load(Ordering::Relaxed)
    }

    /// Waits for a turn under the request limit (none for a session inside a
    /// transaction); 3617 when `cancel` is set meanwhile.
    pub fn enter(&self, in_transaction: bool, cancel: &AtomicBool) -> SqlResult<RequestSlot> {
        self.gate.enter(in_transaction, cancel)
    }

    pub fn usage(&self) -> Usage {
        Usage {
            limits: *self.limits.lock(),
            requests: self.gate.usage(),
            cpu: self.cpu.usage(),
            share: self.share.usage(),
            log: self.log.usage(),
            tempdb: TempdbUse {
                pages: self.tempdb.account.pages(),
                refusals: self.tempdb.refusals.load(Ordering::Relaxed),
            },
        }
    }
}

/// The governors of every database that has a limit, by database id.
#[derive(Debug, Default)]
pub struct Governors {
    governors: Mutex<HashMap<u32, Arc<Governor>>>,
    /// How many there are (read without the lock: none, nothing to do).
    count: AtomicUsize,
}

impl Governors {
    /// Sets database `id`'s limits; with none left, its governor goes (queued requests
    /// are let through, running ones finish uncharged).
    pub fn set_limits(&self, id: u32, limits: ResourceLimits) {
        let mut governors = self.governors.lock();
        if limits.any() {
            match governors.get(&id) {
                Some(g) => g.set(limits),
                None => {
                    governors.insert(id, Arc::new(Governor::new(limits)));
                }
            }
        } else if let Some(g) = governors.remove(&id) {
            g.set(limits);
        }
        self.count.store(governors.len(), Ordering::Relaxed);
    }

    /// Forgets a dropped or detached database's governor.
    pub fn forget(&self, id: u32) {
        self.set_limits(id, ResourceLimits::default());
    }

    /// Whether any database has a limit.
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// The governor of database `id`, if it has limits.
    pub fn get(&self, id: u32) -> Option<Arc<Governor>> {
        self.governors.lock().get(&id).cloned()
    }

    /// Every governed database's limits and use, by database id.
    pub fn usage(&self) -> Vec<(u32, Usage)> {
        let governors: Vec<(u32, Arc<Governor>)> =
            self.governors.lock().iter().map(|(id, g)| (*id, g.clone())).collect();
        let mut out: Vec<(u32, Usage)> = governors.into_iter().map(|(id, g)| (id, g.usage())).collect();
        out.sort_unstable_by_key(|(id, _)| *id);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_limits_that_act_on_requests_need_a_pacer() {
        let pool_only = ResourceLimits { max_buffer_pool_mb: Some(64), ..Default::default() };
        let g = Governor::new(pool_only);
        assert!(!g.paces(), "the buffer pool keeps its limit by itself");
        g.set(ResourceLimits { max_tempdb_mb: Some(8), ..pool_only });
        assert!(g.paces(), "a tempdb quota is checked as requests write");
        g.set(pool_only);
        assert!(!g.paces());
        assert!(Governor::new(ResourceLimits { max_cpu_percent: Some(5), ..Default::default() }).paces());
    }
}
