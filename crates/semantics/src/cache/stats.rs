//! What a cached statement plan's runs have cost, as sys.dm_exec_query_stats shows it,
//! and a cached procedure's calls, as sys.dm_exec_procedure_stats shows them: counted as
//! each run (or call) ends, under a lock of the plan's own held for a few additions (no
//! allocation), and gone with the plan, as SQL Server's are.

use parking_lot::Mutex;

/// Total, last, least and most of one measure over a plan's runs; min is 0 before the
/// first run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub total: u64,
    pub last: u64,
    pub min: u64,
    pub max: u64,
}

impl Figures {
    fn add(&mut self, v: u64, first: bool) {
        self.total = self.total.saturating_add(v);
        self.last = v;
        self.min = if first { v } else { self.min.min(v) };
        self.max = self.max.max(v);
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

/// A plan's runs as read: how many, the last one's end, and each measure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub executions: u64,
    /// Milliseconds since the Unix epoch (the plan's creation before its first run).
    pub last_execution_ms: i64,
    pub worker_us: Figures,
    pub elapsed_us: Figures,
    pub rows: Figures,
    pub logical_reads: Figures,
    pub physical_reads: Figures,
}

impl Totals {
    /// Counts a run that ended.
    fn add(&mut self, run: Run) {
        let first = self.executions == 0;
        self.executions += 1;
        self.last_execution_ms = run.ended_ms;
        self.worker_us.add(run.worker_us, first);
        self.elapsed_us.add(run.elapsed_us, first);
        self.rows.add(run.rows, first);
        self.logical_reads.add(run.logical_reads, first);
        self.physical_reads.add(run.physical_reads, first);
    }
}

/// The runs of one statement plan: one short lock per run (one line of memory moves
/// between the cores that run the plan, where a counter per figure would move it for
/// each of some twenty atomic operations).
pub struct QueryStats {
    /// This plan's number, unique in the process (Query Store's memo of the plans it has
    /// seen is keyed by it).
    pub id: u64,
    /// Where the statement is in its batch's text, in bytes of UTF-16 (SQL Server's
    /// `statement_start_offset`, and `statement_end_offset`: -1 at the batch's end).
    pub offsets: (i32, i32),
    /// When the plan was bound, in milliseconds since the Unix epoch, and how long that
    /// took (µs).
    pub created_ms: i64,
    pub bind_us: u64,
    totals: Mutex<Totals>,
    /// What Query Store keeps of the plan that is the same in every database that runs it,
    /// worked out at its first run in any database's store.
    identity: std::sync::OnceLock<std::sync::Arc<PlanIdentity>>,
}

/// A statement plan as every database's Query Store knows it: the statement's text, the
/// text's hash, and a hash of the plan's shape (its SHOWPLAN_TEXT with no database's
/// names), alike for all the databases sharing the plan.
#[derive(Debug)]
pub struct PlanIdentity {
    pub text: std::sync::Arc<str>,
    pub text_hash: [u8; 16],
    pub plan_hash: u64,
}

impl QueryStats {
    pub fn new(offsets: (i32, i32), created_ms: i64, bind_us: u64) -> QueryStats {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        QueryStats {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            offsets,
            created_ms,
            bind_us,
            identity: std::sync::OnceLock::new(),
            totals: Mutex::new(Totals { last_execution_ms: created_ms, ..Totals::default() }),
        }
    }

    /// Counts a run that ended.
    pub fn record(&self, run: Run) {
        self.totals.lock().add(run);
    }

    /// The plan's identity for Query Store, made by `make` the first time it is asked.
    pub fn identity(&self, make: impl FnOnce() -> PlanIdentity) -> std::sync::Arc<PlanIdentity> {
        self.identity.get_or_init(|| std::sync::Arc::new(make())).clone()
    }

    /// The runs so far.
    pub fn totals(&self) -> Totals {
        *self.totals.lock()
    }
}

/// One (database, procedure)'s calls of a cached procedure body, as
/// [`ProcedureCalls::rows`] lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcedureRow {
    pub database_id: u32,
    pub object_id: i32,
    pub totals: Totals,
}

/// The calls of a cached procedure body (sys.dm_exec_procedure_stats), each counted once
/// however many statements it ran. Tenants of one schema share the cached body (its text
/// is the same), yet each database's procedure is an object of its own: calls are counted
/// per (database id, object id), one row each. One short lock per call; a database's
/// first call of the procedure adds its figures to the map (the only allocation).
#[derive(Default)]
pub struct ProcedureCalls {
    by_object: Mutex<foldhash::HashMap<(u32, i32), Totals>>,
}

impl ProcedureCalls {
    /// Counts a call of procedure `object_id` of database `database_id` that ended.
    pub fn record(&self, database_id: u32, object_id: i32, run: Run) {
        self.by_object.lock().entry((database_id, object_id)).or_default().add(run);
    }

    /// The calls so far, one row per (database, procedure) that ran the body, by
    /// database id and object id.
    pub fn rows(&self) -> Vec<ProcedureRow> {
        let mut rows: Vec<ProcedureRow> = self
            .by_object
            .lock()
            .iter()
            .map(|(&(database_id, object_id), &totals)| ProcedureRow { database_id, object_id, totals })
            .collect();
        rows.sort_unstable_by_key(|r| (r.database_id, r.object_id));
        rows
    }

    /// Forgets the calls made in database `database_id` (it was dropped, restored or
    /// taken offline).
    pub fn forget_database(&self, database_id: u32) {
        self.by_object.lock().retain(|&(db, _), _| db != database_id);
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
        let s = QueryStats::new((0, -1), 5, 0);
        assert_eq!(s.totals().worker_us, Figures::default());
        assert_eq!(s.totals().last_execution_ms, 5);
        for (w, at) in [(30, 10), (10, 11), (20, 12)] {
            s.record(Run { worker_us: w, elapsed_us: w + 1, rows: 1, ended_ms: at, ..Run::default() });
        }
        let t = s.totals();
        assert_eq!((t.executions, t.last_execution_ms), (3, 12));
        assert_eq!(t.worker_us, Figures { total: 60, last: 20, min: 10, max: 30 });
        assert_eq!(t.rows.total, 3);
    }

    #[test]
    fn calls_are_counted_per_database_and_procedure() {
        let calls = ProcedureCalls::default();
        assert!(calls.rows().is_empty());
        for (db, at) in [(7, 10), (5, 11), (7, 12)] {
            calls.record(db, 42, Run { worker_us: at as u64, ended_ms: at, ..Run::default() });
        }
        let rows = calls.rows();
        assert_eq!(rows.iter().map(|r| (r.database_id, r.object_id)).collect::<Vec<_>>(), [(5, 42), (7, 42)]);
        assert_eq!((rows[1].totals.executions, rows[1].totals.last_execution_ms), (2, 12));
        assert_eq!(rows[1].totals.worker_us, Figures { total: 22, last: 12, min: 10, max: 12 });
        calls.forget_database(7);
        assert_eq!(calls.rows().len(), 1);
    }

    #[test]
    fn offsets_count_utf16_bytes() {
        let text = "select 1; select N'é😀' as x";
        let second = text.find("select N").unwrap();
        assert_eq!(utf16_offsets(text, (0, 9)), (0, 18));
        assert_eq!(utf16_offsets(text, (second, text.len())), (20, -1));
    }
}
