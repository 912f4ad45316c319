//! Query memory: what a statement's blocking operators hold (sorted rows, a hash join's
//! build side, aggregation groups, DISTINCT's seen keys, materialised inputs), accounted
//! against a per-statement grant and an instance-wide total, both drawn from max server
//! memory as SQL Server's resource governor does by default: one statement may hold at
//! most a quarter of it, all statements together three quarters. Past either limit the
//! statement fails with error 701 instead of growing without bound; rows that stream
//! (scans, filters, projections, TOP) hold nothing here.
//!
//! With Resource Governor enabled, a statement also draws on its session's pool
//! ([`PoolMemory`]): the pool's statements together hold at most its effective
//! MAX_MEMORY_PERCENT of the instance's query memory (less what the other pools'
//! MIN_MEMORY_PERCENT reserves), and one statement at most its workload group's
//! REQUEST_MAX_MEMORY_GRANT_PERCENT of that (0: none); 701 then names the pool.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::plan::Row;
use tessera_semantics::types::Value;

/// A statement's grant is at least this much, so that small instances can still sort.
pub const MIN_GRANT_BYTES: usize = 32 << 20;

/// The instance's query memory: max server memory as last applied, and what every
/// statement's grant holds.
#[derive(Debug, Default)]
pub struct QueryMemory {
    max_bytes: AtomicU64,
    used_bytes: AtomicUsize,
}

impl QueryMemory {
    pub fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Relaxed)
    }

    /// Max server memory changed (at start and at RECONFIGURE): grants made from now on
    /// are sized from `max_bytes`.
    pub fn set_max_bytes(&self, max_bytes: u64) {
        self.max_bytes.store(max_bytes, Ordering::Relaxed);
    }

    fn max_bytes(&self) -> usize {
        usize::try_from(self.max_bytes.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }

    /// What all statements' grants together may hold: three quarters of max server memory.
    fn total_limit_bytes(&self) -> usize {
        (self.max_bytes() / 4 * 3).max(MIN_GRANT_BYTES)
    }

    /// What the statements of `pool` together may hold.
    pub fn pool_limit_bytes(&self, pool: &PoolMemory) -> usize {
        let percent = pool.percent.load(Ordering::Relaxed) as usize;
        (self.total_limit_bytes() / 100 * percent).max(MIN_GRANT_BYTES)
    }
}

/// A Resource Governor pool's query memory: its share of the instance's, and what its
/// statements' grants hold now.
#[derive(Debug)]
pub struct PoolMemory {
    name: String,
    /// Its effective MAX_MEMORY_PERCENT of the instance's query memory.
    percent: AtomicU32,
    used_bytes: AtomicUsize,
    /// Takes refused because the pool was full (`out_of_memory_count`).
    refusals: AtomicU64,
}

impl PoolMemory {
    pub fn new(name: &str, percent: u32) -> PoolMemory {
        PoolMemory {
            name: name.to_string(),
            percent: AtomicU32::new(percent),
            used_bytes: AtomicUsize::new(0),
            refusals: AtomicU64::new(0),
        }
    }

    pub fn set_percent(&self, percent: u32) {
        self.percent.store(percent.clamp(1, 100), Ordering::Relaxed);
    }

    pub fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Relaxed)
    }

    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }
}

/// What a request of a workload group draws its grants from: its pool, and the share of
/// the pool one statement may take (REQUEST_MAX_MEMORY_GRANT_PERCENT).
#[derive(Clone, Debug)]
pub struct PoolShare {
    pub pool: Arc<PoolMemory>,
    pub request_percent: u32,
}

/// One statement's memory grant.
#[derive(Debug)]
pub struct Grant {
    memory: Arc<QueryMemory>,
    used_bytes: AtomicUsize,
    limit_bytes: usize,
    total_limit_bytes: usize,
    /// Its Resource Governor pool and what that pool's statements may hold together.
    pool: Option<(Arc<PoolMemory>, usize)>,
}

impl Grant {
    /// A grant out of `memory`, sized from its max server memory, and from `share` when
    /// Resource Governor puts the request in a pool.
    pub fn new(memory: Arc<QueryMemory>, share: Option<&PoolShare>) -> Arc<Grant> {
        let total_limit_bytes = memory.total_limit_bytes();
        let (limit_bytes, pool) = match share {
            None => ((memory.max_bytes() / 4).max(MIN_GRANT_BYTES), None),
            Some(share) => {
                let pool_limit = memory.pool_limit_bytes(&share.pool);
                let limit = match share.request_percent as usize {
                    0 => 0,
                    p => (pool_limit / 100 * p).clamp(MIN_GRANT_BYTES.min(pool_limit), pool_limit),
                };
                (limit, Some((share.pool.clone(), pool_limit)))
            }
        };
        Arc::new(Grant { memory, used_bytes: AtomicUsize::new(0), limit_bytes, total_limit_bytes, pool })
    }

    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }

    pub fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Relaxed)
    }

    fn take(&self, bytes: usize) -> SqlResult<()> {
        let mine = self.used_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let all = self.memory.used_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let pool_full = self.pool.as_ref().is_some_and(|(pool, limit)| {
            let pool_all = pool.used_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
            pool_all > *limit
        });
        if mine > self.limit_bytes || all > self.total_limit_bytes || pool_full {
            self.give_back(bytes);
            let pool = self.pool.as_ref().map(|(pool, _)| {
                pool.refusals.fetch_add(1, Ordering::Relaxed);
                pool.name.as_str()
            });
            return Err(insufficient_memory(pool.unwrap_or("default")));
        }
        Ok(())
    }

    fn give_back(&self, bytes: usize) {
        self.used_bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.memory.used_bytes.fetch_sub(bytes, Ordering::Relaxed);
        if let Some((pool, _)) = &self.pool {
            pool.used_bytes.fetch_sub(bytes, Ordering::Relaxed);
        }
    }
}

/// Memory one operator holds under its statement's grant; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    grant: Arc<Grant>,
    bytes: usize,
}

impl Reservation {
    pub fn new(grant: &Arc<Grant>) -> Reservation {
        Reservation { grant: grant.clone(), bytes: 0 }
    }

    /// Takes `bytes` more, or fails with 701 (and takes nothing).
    pub fn take(&mut self, bytes: usize) -> SqlResult<()> {
        self.grant.take(bytes)?;
        self.bytes += bytes;
        Ok(())
    }

    /// Gives back `bytes` of what it holds (at most all of it).
    pub fn give_back(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.grant.give_back(bytes);
        self.bytes -= bytes;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.grant.give_back(self.bytes);
    }
}

/// Approximate in-memory size of a row.
pub fn row_bytes(r: &[Value]) -> usize {
    24 + r
        .iter()
        .map(|v| match v {
            Value::Str(s) => 32 + s.len(),
            Value::Binary(b) => 32 + b.len(),
            _ => 32,
        })
        .sum::<usize>()
}

/// Rows an operator holds, accounted to its statement's grant.
pub struct Collector {
    pub rows: Vec<Row>,
    reservation: Reservation,
}

impl Collector {
    pub fn new(grant: &Arc<Grant>) -> Collector {
        Collector { rows: Vec::new(), reservation: Reservation::new(grant) }
    }

    pub fn push(&mut self, r: Row) -> SqlResult<()> {
        self.reservation.take(row_bytes(&r))?;
        self.rows.push(r);
        Ok(())
    }

    /// Rows whose memory `reservation` already holds.
    pub fn from_parts(rows: Vec<Row>, reservation: Reservation) -> Collector {
        Collector { rows, reservation }
    }

    /// The rows, and the memory they hold (kept while the caller holds the rows).
    pub fn into_parts(self) -> (Vec<Row>, Reservation) {
        (self.rows, self.reservation)
    }
}

fn insufficient_memory(pool: &str) -> SqlError {
    msg::OUT_OF_MEMORY.with(&[&format!("in resource pool '{pool}' to run this query")]).with_severity(17)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_bound_each_statement_and_all_of_them() {
        let memory = Arc::new(QueryMemory::default());
        memory.set_max_bytes(4 * MIN_GRANT_BYTES as u64 * 4);
        let a = Grant::new(memory.clone(), None);
        assert_eq!(a.limit_bytes(), 4 * MIN_GRANT_BYTES);
        let mut r = Reservation::new(&a);
        r.take(3 * MIN_GRANT_BYTES).unwrap();
        assert_eq!(r.take(2 * MIN_GRANT_BYTES).unwrap_err().number, 701, "past the statement's grant");
        assert_eq!(a.used_bytes(), 3 * MIN_GRANT_BYTES, "a refused take takes nothing");
        // All statements together may hold three quarters of max server memory.
        let (b, c, d) =
            (Grant::new(memory.clone(), None), Grant::new(memory.clone(), None), Grant::new(memory.clone(), None));
        let (mut rb, mut rc, mut rd) = (Reservation::new(&b), Reservation::new(&c), Reservation::new(&d));
        rb.take(4 * MIN_GRANT_BYTES).unwrap();
        rc.take(4 * MIN_GRANT_BYTES).unwrap();
        assert_eq!(rd.take(2 * MIN_GRANT_BYTES).unwrap_err().number, 701, "past the instance's total");
        drop(r);
        rd.take(2 * MIN_GRANT_BYTES).unwrap();
        drop((rb, rc, rd));
        assert_eq!(memory.used_bytes(), 0, "everything given back");
    }

    #[test]
    fn a_pool_bounds_its_statements_together_and_each_by_its_group_s_share() {
        let memory = Arc::new(QueryMemory::default());
        // 1,600 MiB of max server memory: 1,200 MiB of query memory; the pool may hold a
        // quarter of it (300 MiB), one statement of its group half of that (150 MiB).
        memory.set_max_bytes(1600 << 20);
        let pool = Arc::new(PoolMemory::new("reports", 25));
        let share = PoolShare { pool: pool.clone(), request_percent: 50 };
        assert_eq!(memory.pool_limit_bytes(&pool), 300 << 20);
        let a = Grant::new(memory.clone(), Some(&share));
        assert_eq!(a.limit_bytes(), 150 << 20);
        let mut ra = Reservation::new(&a);
        ra.take(140 << 20).unwrap();
        let e = ra.take(20 << 20).unwrap_err();
        assert_eq!((e.number, e.message.contains("resource pool 'reports'")), (701, true), "{}", e.message);
        let b = Grant::new(memory.clone(), Some(&share));
        let mut rb = Reservation::new(&b);
        rb.take(140 << 20).unwrap();
        let c = Grant::new(memory.clone(), Some(&share));
        assert_eq!(Reservation::new(&c).take(40 << 20).unwrap_err().number, 701, "past the pool's total");
        assert_eq!((pool.used_bytes(), pool.refusals()), (280 << 20, 2));
        // Outside the pool the instance still has room.
        Reservation::new(&Grant::new(memory.clone(), None)).take(200 << 20).unwrap();
        drop((ra, rb));
        assert_eq!((pool.used_bytes(), memory.used_bytes()), (0, 0));
        // REQUEST_MAX_MEMORY_GRANT_PERCENT = 0: no memory for blocking operators at all.
        let none = PoolShare { pool, request_percent: 0 };
        assert_eq!(Reservation::new(&Grant::new(memory, Some(&none))).take(1).unwrap_err().number, 701);
    }
}
