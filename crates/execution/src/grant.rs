//! Query memory: what a statement's blocking operators hold (sorted rows, a hash join's
//! build side, aggregation groups, DISTINCT's seen keys, materialised inputs), accounted
//! against a per-statement grant and an instance-wide total, both drawn from max server
//! memory as SQL Server's resource governor does by default: one statement may hold at
//! most a quarter of it, all statements together three quarters. Past either limit the
//! statement fails with error 701 instead of growing without bound; rows that stream
//! (scans, filters, projections, TOP) hold nothing here.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

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
}

/// One statement's memory grant.
#[derive(Debug)]
pub struct Grant {
    memory: Arc<QueryMemory>,
    used_bytes: AtomicUsize,
    limit_bytes: usize,
    total_limit_bytes: usize,
}

impl Grant {
    /// A grant out of `memory`, sized from its max server memory.
    pub fn new(memory: Arc<QueryMemory>) -> Arc<Grant> {
        let max = usize::try_from(memory.max_bytes.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        Arc::new(Grant {
            memory,
            used_bytes: AtomicUsize::new(0),
            limit_bytes: (max / 4).max(MIN_GRANT_BYTES),
            total_limit_bytes: (max / 4 * 3).max(MIN_GRANT_BYTES),
        })
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
        if mine > self.limit_bytes || all > self.total_limit_bytes {
            self.give_back(bytes);
            return Err(insufficient_memory());
        }
        Ok(())
    }

    fn give_back(&self, bytes: usize) {
        self.used_bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.memory.used_bytes.fetch_sub(bytes, Ordering::Relaxed);
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
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.grant.give_back(self.bytes);
    }
}

/// Approximate in-memory size of a row.
pub fn row_bytes(r: &Row) -> usize {
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

fn insufficient_memory() -> SqlError {
    SqlError::new(701, "There is insufficient system memory in resource pool 'default' to run this query.")
        .with_severity(17)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_bound_each_statement_and_all_of_them() {
        let memory = Arc::new(QueryMemory::default());
        memory.set_max_bytes(4 * MIN_GRANT_BYTES as u64 * 4);
        let a = Grant::new(memory.clone());
        assert_eq!(a.limit_bytes(), 4 * MIN_GRANT_BYTES);
        let mut r = Reservation::new(&a);
        r.take(3 * MIN_GRANT_BYTES).unwrap();
        assert_eq!(r.take(2 * MIN_GRANT_BYTES).unwrap_err().number, 701, "past the statement's grant");
        assert_eq!(a.used_bytes(), 3 * MIN_GRANT_BYTES, "a refused take takes nothing");
        // All statements together may hold three quarters of max server memory.
        let (b, c, d) = (Grant::new(memory.clone()), Grant::new(memory.clone()), Grant::new(memory.clone()));
        let (mut rb, mut rc, mut rd) = (Reservation::new(&b), Reservation::new(&c), Reservation::new(&d));
        rb.take(4 * MIN_GRANT_BYTES).unwrap();
        rc.take(4 * MIN_GRANT_BYTES).unwrap();
        assert_eq!(rd.take(2 * MIN_GRANT_BYTES).unwrap_err().number, 701, "past the instance's total");
        drop(r);
        rd.take(2 * MIN_GRANT_BYTES).unwrap();
        drop((rb, rc, rd));
        assert_eq!(memory.used_bytes(), 0, "everything given back");
    }
}
