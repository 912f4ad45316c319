//! What a cached statement plan's runs have cost, as sys.dm_exec_query_stats shows it:
//! counted as each run ends, in relaxed atomics beside the plan (a dozen adds per run,
//! no lock, no allocation), and gone with the plan, as SQL Server's are.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Total, last, least and most of one measure over a plan's runs.
pub struct Measure {
    total: AtomicU64,
    last: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Default for Measure {
    fn default() -> Self {
        Measure {
            total: AtomicU64::new(0),
            last: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }
}

/// A [`Measure`] as read: (total, last, min, max); min is 0 before the first run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub total: u64,
    pub last: u64,
    pub min: u64,
    pub max: u64,
}

impl Measure {
    fn add(&self, v: u64) {
        self.total.fetch_add(v, Ordering::Relaxed);
        self.last.store(v, Ordering::Relaxed);
        self.min.fetch_min(v, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
    }

    pub fn figures(&self) -> Figures {
        let min = self.min.load(Ordering::Relaxed);
        Figures {
            total: self.total.load(Ordering::Relaxed),
            last: self.last.load(Ordering::Relaxed),
            min: if min == u64::MAX { 0 } else { min },
            max: self.max.load(Ordering::Relaxed),
        }
    }
}

/// One finished run of a statement's plan.
#[derive(Clone, Copy, Debug, Default)]
pub struct Run {
    /// CPU time of the thread that ran it.
    pub worker_us: u64,
    pub elapsed_us: u64,
    /// Rows it returned or changed.
    pub rows: u64,
    pub logical_reads: u64,
    pub physical_reads: u64,
    /// When it ended, in milliseconds since the Unix epoch.
    pub ended_ms: i64,
}

/// The runs of one statement plan.
pub struct QueryStats {
    /// Where the statement is in its batch's text, in bytes of UTF-16 (SQL Server's
    /// `statement_start_offset`, and `statement_end_offset`: -1 at the batch's end).
    pub offsets: (i32, i32),
    /// When the plan was bound, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    executions: AtomicU64,
    last_execution_ms: AtomicI64,
    pub worker_us: Measure,
    pub elapsed_us: Measure,
    pub rows: Measure,
    pub logical_reads: Measure,
    pub physical_reads: Measure,
}

impl QueryStats {
    pub fn new(offsets: (i32, i32), created_ms: i64) -> QueryStats {
        QueryStats {
            offsets,
            created_ms,
            executions: AtomicU64::new(0),
            last_execution_ms: AtomicI64::new(created_ms),
            worker_us: Measure::default(),
            elapsed_us: Measure::default(),
            rows: Measure::default(),
            logical_reads: Measure::default(),
            physical_reads: Measure::default(),
        }
    }

    /// Counts a run that ended.
    pub fn record(&self, run: Run) {
        self.executions.fetch_add(1, Ordering::Relaxed);
        self.last_execution_ms.store(run.ended_ms, Ordering::Relaxed);
        self.worker_us.add(run.worker_us);
        self.elapsed_us.add(run.elapsed_us);
        self.rows.add(run.rows);
        self.logical_reads.add(run.logical_reads);
        self.physical_reads.add(run.physical_reads);
    }

    pub fn executions(&self) -> u64 {
        self.executions.load(Ordering::Relaxed)
    }

    pub fn last_execution_ms(&self) -> i64 {
        self.last_execution_ms.load(Ordering::Relaxed)
    }
}

/// The byte range `span` of `text` as SQL Server's statement offsets: bytes of UTF-16
/// before its start, and before its end (-1 when it ends the text).
pub fn utf16_offsets(text: &str, span: (usize, usize)) -> (i32, i32) {
    let units = |end: usize| text.get(..end).map_or(0, |t| t.encode_utf16().count());
    let start = i32::try_from(units(span.0) * 2).unwrap_or(i32::MAX);
    let end = if span.1 >= text.trim_end().len() { -1 } else { i32::try_from(units(span.1) * 2).unwrap_or(i32::MAX) };
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_add_up_with_their_last_least_and_most() {
        let s = QueryStats::new((0, -1), 5);
        assert_eq!(s.worker_us.figures(), Figures::default());
        for (w, at) in [(30, 10), (10, 11), (20, 12)] {
            s.record(Run { worker_us: w, elapsed_us: w + 1, rows: 1, ended_ms: at, ..Run::default() });
        }
        assert_eq!(s.executions(), 3);
        assert_eq!(s.last_execution_ms(), 12);
        assert_eq!(s.worker_us.figures(), Figures { total: 60, last: 20, min: 10, max: 30 });
        assert_eq!(s.rows.figures().total, 3);
    }

    #[test]
    fn offsets_count_utf16_bytes() {
        let text = "select 1; select N'é😀' as x";
        let second = text.find("select N").unwrap();
        assert_eq!(utf16_offsets(text, (0, 9)), (0, 18));
        assert_eq!(utf16_offsets(text, (second, text.len())), (20, -1));
    }
}
