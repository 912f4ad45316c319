//! SET STATISTICS IO and SET STATISTICS TIME: what a statement read, table by table, and
//! how long it took, reported as SQL Server reports them (informational messages 3615,
//! 3613 and 3612, which clients see with severity 0).
//!
//! **IO.** The buffer pool counts every page its calling thread fetches (logical reads),
//! reads from disk (physical reads) and has read ahead (read-ahead reads) in thread-local
//! counters (`tessera_buffer::io_counters`). A statement run with STATISTICS IO on
//! installs an [`IoStatement`] for its thread; while one is active, every scan or seek of a
//! table ([`table_read`]) takes the counters before and after and charges the difference
//! (less what nested reads, such as a subquery in a seek key, charged to their own tables)
//! to its table, with one scan (none for a seek of one key in a unique index: SQL Server's
//! "Scan count 0"). A data change charges the rest of its reads — finding where rows go,
//! maintaining indexes — to its target table. Sessions with the option off pay one
//! thread-local flag test per scan.
//!
//! **TIME.** CPU time is the thread's (`CLOCK_THREAD_CPUTIME_ID`): a session's batch runs
//! on one thread. Elapsed time is the wall clock.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use tessera_buffer::{io_counters, IoCounters};
use tessera_io::clock::thread_cpu_time;

use tessera_errors::msg;
use tessera_errors::SqlError;
use tessera_semantics::catalog::Table;

thread_local! {
    /// Whether the running statement of this thread counts its reads per table.
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// Reads charged to tables so far on this thread (by every statement, nested or not).
    static CHARGED: Cell<IoCounters> = const {
        Cell::new(IoCounters { logical_reads: 0, physical_reads: 0, read_ahead_reads: 0 })
    };
    /// The running statement's tables, in the order it first read them.
    static TABLES: RefCell<Vec<TableIo>> = const { RefCell::new(Vec::new()) };
}

/// What a statement read from one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableIo {
    pub db: String,
    pub table_id: i32,
    /// The name SQL Server shows (a temp table's as its session wrote it).
    pub name: String,
    /// Scans and seeks started (seeks of one key of a unique index not counted).
    pub scans: u64,
    pub io: IoCounters,
}

impl TableIo {
    /// SQL Server's message 3615 for this table (the wording of SQL Server 2019 and later;
    /// tessera has no page servers and keeps no LOB pages apart, so those counts are 0).
    pub fn message(&self) -> SqlError {
        msg::IO_STATISTICS.with(&[
            &self.name,
            &self.scans,
            &self.io.logical_reads,
            &self.io.physical_reads,
            &0,
            &self.io.read_ahead_reads,
            &0,
            &0,
            &0,
            &0,
            &0,
            &0,
        ])
    }
}

fn add(a: IoCounters, b: IoCounters) -> IoCounters {
    IoCounters {
        logical_reads: a.logical_reads.wrapping_add(b.logical_reads),
        physical_reads: a.physical_reads.wrapping_add(b.physical_reads),
        read_ahead_reads: a.read_ahead_reads.wrapping_add(b.read_ahead_reads),
    }
}

fn charge(db: &str, table: &Table, scans: u64, io: IoCounters) {
    CHARGED.with(|c| c.set(add(c.get(), io)));
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        match t.iter_mut().find(|x| x.table_id == table.id && x.db.eq_ignore_ascii_case(db)) {
            Some(x) => {
                x.scans += scans;
                x.io = add(x.io, io);
            }
            None => t.push(TableIo {
                db: db.to_string(),
                table_id: table.id,
                name: tessera_semantics::catalog::display_name(&table.name).to_string(),
                scans,
                io,
            }),
        }
    });
}

/// Whether the running statement counts its reads (SET STATISTICS IO ON): callers of
/// [`table_read`] work out the table's database name only then.
#[inline]
pub fn counting() -> bool {
    ACTIVE.with(Cell::get)
}

/// Runs `read` (a scan or seek of `table`: `scans` is 1, or 0 for a seek of one key of a
/// unique index) and, if the running statement counts its reads, charges the pages it
/// read to the table.
#[inline]
pub fn table_read<R>(db: &str, table: &Table, scans: u64, read: impl FnOnce() -> R) -> R {
    if !ACTIVE.with(Cell::get) {
        return read();
    }
    let before = io_counters();
    let charged_before = CHARGED.with(Cell::get);
    let result = read();
    let total = io_counters().since(before);
    // Reads nested inside (a subquery computing a seek key) were charged to their tables.
    let nested = CHARGED.with(Cell::get).since(charged_before);
    charge(db, table, scans, total.since(nested));
    result
}

/// Where a streaming scan's read-ahead count stands: the thread's read-ahead reads, and
/// those already charged to some table (None when the statement counts nothing).
#[derive(Clone, Copy, Debug)]
pub struct ReadAheadMark(Option<(u64, u64)>);

impl ReadAheadMark {
    pub fn now() -> ReadAheadMark {
        ReadAheadMark(
            ACTIVE.with(Cell::get).then(|| (io_counters().read_ahead_reads, CHARGED.with(Cell::get).read_ahead_reads)),
        )
    }
}

/// One batch of a streaming scan of `table` (see [`table_read`]). Read-ahead completes on
/// worker threads, also while the scan waits for its consumer between batches; what
/// arrived since `mark` and no other table's read took is charged to this scan too.
pub fn streaming_read<R>(db: &str, table: &Table, mark: &mut ReadAheadMark, read: impl FnOnce() -> R) -> R {
    if let ReadAheadMark(Some((raw, charged))) = *mark {
        let gap = (io_counters().read_ahead_reads.wrapping_sub(raw))
            .saturating_sub(CHARGED.with(Cell::get).read_ahead_reads.wrapping_sub(charged));
        if gap > 0 {
            charge(db, table, 0, IoCounters { logical_reads: 0, physical_reads: 0, read_ahead_reads: gap });
        }
    }
    let result = table_read(db, table, 0, read);
    *mark = ReadAheadMark::now();
    result
}

/// A statement's reads being counted on this thread (SET STATISTICS IO); the counting of
/// the statement it interrupts (a statement of a function it calls) resumes when it ends.
pub struct IoStatement {
    on: bool,
    start: IoCounters,
    charged_start: IoCounters,
    outer: Option<(bool, Vec<TableIo>)>,
}

impl IoStatement {
    /// Starts a statement; `on` is the session's STATISTICS IO.
    pub fn begin(on: bool) -> IoStatement {
        let was = ACTIVE.with(|a| a.replace(on));
        // Only a counting statement (or one inside it) touches the table list.
        let outer = (was || on).then(|| (was, TABLES.with(|t| std::mem::take(&mut *t.borrow_mut()))));
        IoStatement { on, start: io_counters(), charged_start: CHARGED.with(Cell::get), outer }
    }

    /// Ends the statement: the tables it read, in the order it first read each. Reads not
    /// charged to a table go to `target` (the table a data change writes), if given.
    pub fn finish(mut self, target: Option<(&str, &Table)>) -> Vec<TableIo> {
        if !self.on {
            return Vec::new();
        }
        if let Some((db, table)) = target {
            let total = io_counters().since(self.start);
            let charged = CHARGED.with(Cell::get).since(self.charged_start);
            charge(db, table, 0, total.since(charged));
        }
        let tables = TABLES.with(|t| std::mem::take(&mut *t.borrow_mut()));
        self.restore();
        tables
    }

    fn restore(&mut self) {
        if let Some((was, tables)) = self.outer.take() {
            ACTIVE.with(|a| a.set(was));
            TABLES.with(|t| *t.borrow_mut() = tables);
        }
    }
}

impl Drop for IoStatement {
    fn drop(&mut self) {
        self.restore();
    }
}

/// CPU and wall clock at a start, for SET STATISTICS TIME.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    cpu: Duration,
    wall: Instant,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch { cpu: thread_cpu_time(), wall: Instant::now() }
    }

    /// (CPU ms, elapsed ms) since the start.
    pub fn elapsed_ms(&self) -> (u128, u128) {
        (thread_cpu_time().saturating_sub(self.cpu).as_millis(), self.wall.elapsed().as_millis())
    }

    /// SQL Server's message 3613, sent before a batch runs.
    pub fn compile_message(&self) -> SqlError {
        let (cpu, elapsed) = self.elapsed_ms();
        msg::PARSE_COMPILE_TIMES.with(&[&"\n", &cpu, &elapsed])
    }

    /// SQL Server's message 3612, sent after a statement ran.
    pub fn execution_message(&self) -> SqlError {
        let (cpu, elapsed) = self.elapsed_ms();
        msg::EXECUTION_TIMES.with(&[&"\n", &cpu, &elapsed])
    }
}

/// The pages the calling thread has read from disk (or the extension) so far: two
/// readings bracket a request's physical reads (sp_who2's DiskIO).
pub fn physical_reads() -> u64 {
    io_counters().physical_reads
}

/// One run of a cached statement plan, measured for sys.dm_exec_query_stats: its
/// working time (the time it took on its thread less the time it waited: CPU time plus
/// any time the thread was ready but not running), the wall clock and the thread's page
/// reads, from start to finish. No CPU clock is read (that is a system call per reading).
pub struct RunClock {
    start: (Instant, Duration),
    io: IoCounters,
}

impl RunClock {
    pub fn start() -> RunClock {
        RunClock { start: tessera_waits::work_mark(), io: io_counters() }
    }

    /// The run, which touched `rows` rows.
    pub fn finish(&self, rows: u64) -> tessera_semantics::cache::Run {
        let io = io_counters().since(self.io);
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        tessera_semantics::cache::Run {
            worker_us: micros(tessera_waits::worked_since(self.start)),
            elapsed_us: micros(self.start.0.elapsed()),
            rows,
            logical_reads: io.logical_reads,
            physical_reads: io.physical_reads,
            ended_ms: crate::runtime::now_ms(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_messages_have_sql_servers_shape() {
        let w = Stopwatch::start();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        assert!(x != 1);
        let c = w.compile_message();
        assert_eq!((c.number, c.severity), (3613, 0));
        let masked: String = c.message.chars().map(|ch| if ch.is_ascii_digit() { 'N' } else { ch }).collect();
        let masked = masked.replace("NN", "N").replace("NN", "N").replace("NN", "N");
        assert_eq!(masked, "SQL Server parse and compile time: \n   CPU time = N ms, elapsed time = N ms.");
        let e = w.execution_message();
        assert_eq!((e.number, e.severity), (3612, 0));
        let masked: String = e.message.chars().map(|ch| if ch.is_ascii_digit() { 'N' } else { ch }).collect();
        let masked = masked.replace("NN", "N").replace("NN", "N").replace("NN", "N");
        assert_eq!(masked, " SQL Server Execution Times:\n   CPU time = N ms,  elapsed time = N ms.");
    }
}
