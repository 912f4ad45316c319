//! `tessera bench streaming`: `SELECT *` of a table much larger than the server's memory,
//! read by a client that streams, next to PostgreSQL doing the same in the same run.
//!
//! The goal (the streaming issue): "`SELECT *` of a 4 GiB table over TDS with max server
//! memory 512 MB: the server's RSS grows < 64 MiB and the first row arrives in < 10 ms."
//!
//! tessera: an in-process `RunningServer` loads a table of about 4 GiB (`--quick`: 256 MiB)
//! — `id bigint primary key, k int, amount decimal(12,2), name varchar(40), pad char(900)`,
//! multi-row INSERTs of 1,000 rows, 10 per transaction, SIMPLE recovery — sets `max server
//! memory (MB)` to 512 (sp_configure, RECONFIGURE), checkpoints and stops. A new server on
//! the same directory, started with a 512 MB pool, then has a cold buffer pool (the OS page
//! cache still holds what the load wrote). The streaming reader ([`crate::tdsstream`])
//! logs in, runs a one-row query on the table (so that the connection's first-use costs
//! are behind it), and then `SELECT * FROM [dbo].[t]`, read off the socket as it arrives
//! and discarded; then the same query once more (the pool as the first scan left it).
//! During each query a sampling thread ([`crate::rss`]) reads `/proc/self/smaps` and
//! `VmRSS` every 10 ms. The server runs in the benchmark's process, and so do the reader
//! (a 64 KiB read buffer and at most one packet plus one incomplete row of tokens) and the
//! sampler (its buffers preallocated): both are bounded and small, nothing is subtracted
//! for them. The buffer pool's resident share is the RSS of its two mappings (the frame
//! region and the frame descriptors); "excluding the buffer pool" is the rest.
//!
//! PostgreSQL, same run: the same table (shared_buffers = 512MB), VACUUM FREEZE, CHECKPOINT,
//! the cluster restarted (empty shared buffers, the OS page cache as it is), then the same
//! two queries from a streaming reader of the v3 protocol ([`crate::peers::pgwire`]: a
//! simple Query, DataRows counted as they arrive — psql would hold the whole result), the
//! backend's `/proc/<pid>/status` sampled every 10 ms (`RssShmem` is the shared memory the
//! backend touched, `RssAnon + RssFile` the rest).
//!
//! Rows: first-row latency (goal < 10 ms absolute, and against PostgreSQL for
//! information); RSS growth excluding the buffer pool in the cold run (goal < 64 MiB), raw
//! RSS growth in the second run (goal < 64 MiB: the pool is as full as the first scan left
//! it), raw and cache-excluded growth against PostgreSQL's backend (information); scan
//! throughput in MB/s of reply bytes, cold and warm, against PostgreSQL (information).

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::peers::pgwire::PgConn;
use crate::peers::postgres::{psql, restart_postgres, start_postgres, Sides};
use crate::pointselect::{batch, connect, Conn, PASSWORD};
use crate::report::{fmt_value, Report, ResultRow};
use crate::rss::{self, PidProbe, Probe, Sample, Sampler, Samples, SelfProbe};
use crate::tdsstream::{StreamConn, StreamRun};

pub const NAME: &str = "streaming";

/// The first row must arrive within this many milliseconds.
pub const GOAL_FIRST_ROW_MS: f64 = 10.0;
/// The server's RSS may grow by less than this many MiB.
pub const GOAL_RSS_GROWTH_MIB: f64 = 64.0;

const DATABASE: &str = "streaming";
/// One INSERT of 1,000 rows per batch, committed on its own (SIMPLE recovery): a batch's
/// transient memory (its text, syntax tree, plan and rows, ~2 MB) stays small, so the heap
/// the load leaves behind in the server's threads — which the allocator may give back to
/// the OS at any later moment, a measured query's included — stays small too.
const ROWS_PER_INSERT: u64 = 1000;
const INSERTS_PER_BATCH: u64 = 1;
const SAMPLE_INTERVAL: Duration = Duration::from_millis(10);
const MIB: f64 = (1u64 << 20) as f64;

#[derive(Debug, Clone, Serialize)]
pub struct StreamingParams {
    /// The table's nominal size: rows = this ÷ `row_bytes`.
    pub table_mib: u64,
    /// Nominal bytes per row (the row's columns come to ~940 bytes).
    pub row_bytes: u64,
    /// tessera's `max server memory (MB)` and buffer pool size for the measured runs.
    pub max_server_memory_mb: u64,
    /// PostgreSQL's shared_buffers.
    pub shared_buffers_mb: u64,
}

impl StreamingParams {
    /// The scale: a 4 GiB table through 512 MB.
    pub fn full() -> StreamingParams {
        StreamingParams { table_mib: 4096, row_bytes: 1000, max_server_memory_mb: 512, shared_buffers_mb: 512 }
    }

    /// 256 MiB through the same 512 MB.
    pub fn quick() -> StreamingParams {
        StreamingParams { table_mib: 256, ..StreamingParams::full() }
    }

    pub fn rows(&self) -> u64 {
        (self.table_mib << 20) / self.row_bytes
    }

    /// Rows of the filtered scan: `k = id % 1000 = FILTER_K`.
    pub fn filtered_rows(&self) -> u64 {
        let rows = self.rows();
        rows / 1000 + u64::from(rows % 1000 >= FILTER_K)
    }
}

/// The filtered scan's `k`.
const FILTER_K: u64 = 7;

/// One measured query.
#[derive(Debug, Clone)]
pub struct Measured {
    pub run: StreamRun,
    /// Read on the querying thread just before the request went out.
    pub before: Sample,
    /// The samples taken during the query.
    pub samples: Samples,
    /// The server's buffer pool pages ("Database pages") before and after (tessera).
    pub pool_pages: Option<(i64, i64)>,
}

impl Measured {
    /// Peak VmRSS during the query less VmRSS just before it, in MiB.
    pub fn raw_growth_mib(&self) -> f64 {
        self.samples.max_of(|s| s.rss).saturating_sub(self.before.rss) as f64 / MIB
    }

    /// Growth of resident memory outside the page cache during the query, in MiB: its
    /// largest rise, each sample measured from the lowest level before it (the level just
    /// before the query included), so memory an allocator gives back meanwhile (an earlier
    /// phase's heap) does not hide growth; without such a drop, the peak less the level
    /// before.
    pub fn other_growth_mib(&self) -> f64 {
        self.samples.largest_rise(self.before.other, |s| s.other) as f64 / MIB
    }

    /// Peak resident page cache (buffer pool or shared memory) less the same before, in MiB.
    pub fn cache_growth_mib(&self) -> f64 {
        self.samples.max_of(|s| s.cache).saturating_sub(self.before.cache) as f64 / MIB
    }

    /// How far resident memory outside the cache fell below its level before the query, in
    /// MiB: memory freed during the query (an allocator giving back an earlier phase's
    /// heap) that could hide growth.
    pub fn other_drop_mib(&self) -> f64 {
        self.before.other.saturating_sub(self.samples.min_of(|s| s.other)) as f64 / MIB
    }

    pub fn first_row_ms(&self) -> f64 {
        1000.0 * self.run.first_row_seconds.unwrap_or(f64::NAN)
    }

    /// "first byte 1.2 ms, first row 1.3 ms, 262,144 rows in 1.23 s (…)".
    fn describe(&self) -> String {
        format!(
            "first byte {:.2} ms, first row {:.2} ms, {} rows, {} MB in {:.2} s ({} rows/s, {:.0} MB/s); RSS before {:.1} MiB (cache {:.1}, other {:.1}), peak growth raw {:.1} MiB, cache {:.1} MiB, other {:.2} MiB; {} samples",
            1000.0 * self.run.first_byte_seconds.unwrap_or(f64::NAN),
            self.first_row_ms(),
            fmt_value(self.run.rows as f64),
            fmt_value(self.run.bytes as f64 / 1e6),
            self.run.seconds,
            fmt_value(self.run.rows_per_second()),
            self.run.mb_per_second(),
            self.before.rss as f64 / MIB,
            self.before.cache as f64 / MIB,
            self.before.other as f64 / MIB,
            self.raw_growth_mib(),
            self.cache_growth_mib(),
            self.other_growth_mib(),
            self.samples.samples.len(),
        )
    }
}

/// What one side measured: the cold query, then the same once more.
#[derive(Debug, Clone)]
pub struct Side {
    pub cold: Measured,
    pub warm: Measured,
    /// `SELECT * … WHERE k = 7` (every 1,000th row matches, no index on k): how long the
    /// first of few matching rows takes to arrive.
    pub filtered: StreamRun,
    /// The table's size on disk.
    pub table_bytes: u64,
    pub load_seconds: f64,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

/// Rows `from..=to` as a VALUES list.
fn values(from: u64, to: u64, out: &mut String) {
    use std::fmt::Write;
    for i in from..=to {
        let cents = i % 100_000;
        if i > from {
            out.push_str(", ");
        }
        let _ = write!(out, "({i}, {}, {}.{:02}, 'name-{i}', 'p{i}')", i % 1000, cents / 100, cents % 100);
    }
}

/// A query's rows must be the table's, all of them, and no error.
fn check(run: &StreamRun, rows: u64, what: &str) -> Result<()> {
    if let Some(e) = &run.error {
        return Err(BenchError::new(format!("{what}: {e}")));
    }
    if run.rows != rows || run.reported_rows != Some(rows) {
        return Err(BenchError::new(format!(
            "{what}: {} rows received ({:?} reported), the table holds {rows}",
            run.rows, run.reported_rows
        )));
    }
    if run.first_row_seconds.is_none() {
        return Err(BenchError::new(format!("{what}: no first-row time")));
    }
    Ok(())
}

/// Runs `query` with `probe` sampled every 10 ms on its own thread; `before` is read on
/// this thread just before the request goes out.
fn sampled(
    probe: Probe,
    before: &mut dyn FnMut() -> Sample,
    query: &mut dyn FnMut() -> Result<StreamRun>,
) -> Result<(StreamRun, Sample, Samples, Probe)> {
    let sampler = Sampler::start(probe, SAMPLE_INTERVAL)?;
    // Let the sampler take its first readings (and its thread settle) first.
    std::thread::sleep(SAMPLE_INTERVAL * 3);
    let start = before();
    let run = query();
    let (samples, probe) = sampler.stop()?;
    Ok((run?, start, samples, probe))
}

/// Waits (up to 5 s) until resident memory outside the cache has stopped moving: no more
/// than 1 MiB between the highest and lowest of five readings 100 ms apart. Returns the
/// seconds waited and the last reading.
fn settle(probe: &mut dyn FnMut() -> Sample) -> (f64, Sample) {
    let start = Instant::now();
    let mut recent = std::collections::VecDeque::new();
    loop {
        let s = probe();
        recent.push_back(s.other);
        if recent.len() > 5 {
            recent.pop_front();
        }
        let spread = recent.iter().max().unwrap_or(&0) - recent.iter().min().unwrap_or(&0);
        if (recent.len() == 5 && spread <= 1 << 20) || start.elapsed() > Duration::from_secs(5) {
            return (start.elapsed().as_secs_f64(), s);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The buffer pool's "Database pages" counter.
async fn database_pages(c: &mut Conn) -> Result<i64> {
    let rows = c
        .simple_query(
            "select cntr_value from sys.dm_os_performance_counters where object_name = 'SQLServer:Buffer Manager' and counter_name = 'Database pages'",
        )
        .await
        .map_err(|e| BenchError::new(format!("performance counters: {e}")))?
        .into_first_result()
        .await
        .map_err(|e| BenchError::new(format!("performance counters: {e}")))?;
    rows.first().and_then(|r| r.get::<i64, _>(0)).ok_or_else(|| BenchError::new("no 'Database pages' counter"))
}

fn server_config(dir: &Path, memory_mb: usize) -> tessera_server::Config {
    tessera_server::Config {
        port: 0,
        data_dir: dir.to_path_buf(),
        sa_password: Some(PASSWORD.to_string()),
        memory_mb,
        errorlog: false,
        log_stderr: false,
        ..tessera_server::Config::default()
    }
}

/// Creates and fills the table, sets max server memory, checkpoints; returns the seconds.
async fn tessera_load(c: &mut Conn, p: &StreamingParams, progress: &dyn Fn(&str)) -> Result<f64> {
    batch(c, &format!("create database [{DATABASE}]"), "create database").await?;
    batch(c, &format!("alter database [{DATABASE}] set recovery simple"), "recovery model").await?;
    batch(
        c,
        &format!(
            "use [{DATABASE}]; create table [dbo].[t] ([id] bigint not null primary key, [k] int not null, [amount] decimal(12,2) not null, [name] varchar(40) not null, [pad] char(900) not null)"
        ),
        "create table",
    )
    .await?;
    let rows = p.rows();
    progress(&format!("tessera: loading {rows} rows (~{} MiB)", p.table_mib));
    let start = Instant::now();
    let mut next = 1;
    let mut text = String::new();
    let mut reported = 0;
    while next <= rows {
        text.clear();
        text.push_str("set nocount on;");
        for _ in 0..INSERTS_PER_BATCH {
            if next > rows {
                break;
            }
            let last = (next + ROWS_PER_INSERT - 1).min(rows);
            text.push_str("insert into [dbo].[t] ([id], [k], [amount], [name], [pad]) values ");
            values(next, last, &mut text);
            text.push(';');
            next = last + 1;
        }
        batch(c, &text, "load").await?;
        if next > reported + rows / 4 && next <= rows {
            reported = next - 1;
            progress(&format!("tessera: {reported} rows loaded, {:.0} s", start.elapsed().as_secs_f64()));
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    batch(
        c,
        &format!(
            "exec sp_configure 'show advanced options', 1; reconfigure; exec sp_configure 'max server memory (MB)', {}; reconfigure; checkpoint;",
            p.max_server_memory_mb
        ),
        "max server memory",
    )
    .await?;
    Ok(seconds)
}

/// tessera's side: load, restart with the pool at max server memory, stream twice.
fn tessera(dir: &Path, p: &StreamingParams, progress: &dyn Fn(&str)) -> Result<Side> {
    let rows = p.rows();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut notes = Vec::new();
    // The load gets a pool twice the measured one, so it does not wait on evictions.
    let server = tessera_server::RunningServer::start(server_config(dir, 2 * p.max_server_memory_mb as usize))
        .map_err(BenchError::new)?;
    let loaded = rt.block_on(async {
        let mut c = connect(server.addr.port()).await?;
        tessera_load(&mut c, p, progress).await
    });
    server.stop().map_err(BenchError::new)?;
    let load_seconds = loaded?;
    let file_size = |name: &str| std::fs::metadata(dir.join(name)).map(|m| m.len()).unwrap_or(0);
    let table_bytes = file_size(&format!("{DATABASE}.mdf"));
    notes.push(format!(
        "tessera: loaded {} rows in {load_seconds:.1} s; data file {:.0} MiB, log file {:.0} MiB",
        fmt_value(rows as f64),
        table_bytes as f64 / MIB,
        file_size(&format!("{DATABASE}_log.ldf")) as f64 / MIB
    ));

    progress(&format!("tessera: restarting with max server memory {} MB", p.max_server_memory_mb));
    let server = tessera_server::RunningServer::start(server_config(dir, p.max_server_memory_mb as usize))
        .map_err(BenchError::new)?;
    let port = server.addr.port();
    let result = (|| {
        let mut control = rt.block_on(connect(port))?;
        let ranges = rss::pool_mappings()?;
        notes.push(format!(
            "tessera buffer pool mappings found in /proc/self/maps: {}",
            ranges.iter().map(|(a, b)| format!("{:#x}+{} MiB", a, (b - a) >> 20)).collect::<Vec<_>>().join(", ")
        ));
        let mut reader = StreamConn::connect(port, "sa", PASSWORD, DATABASE)?;
        let one = reader.query("select [id] from [dbo].[t] where [id] = 1")?;
        check(&one, 1, "tessera warm-up query")?;
        let mut probe = Probe::SelfProcess(SelfProbe::new(ranges.clone()));
        let mut runs = Vec::new();
        for what in ["cold", "warm"] {
            progress(&format!("tessera: SELECT * ({what})"));
            let pages_before = rt.block_on(database_pages(&mut control))?;
            let mut own = SelfProbe::new(ranges.clone());
            let (waited, _) = settle(&mut || own.read());
            notes.push(format!("tessera {what}: resident memory settled in {waited:.1} s before the query"));
            let (run, before, samples, back) =
                sampled(probe, &mut || own.read(), &mut || reader.query("select * from [dbo].[t]"))?;
            probe = back;
            check(&run, rows, &format!("tessera, {what}"))?;
            let pages_after = rt.block_on(database_pages(&mut control))?;
            runs.push(Measured { run, before, samples, pool_pages: Some((pages_before, pages_after)) });
        }
        progress("tessera: SELECT * … WHERE k = 7");
        let filtered = reader.query(&format!("select * from [dbo].[t] where [k] = {FILTER_K}"))?;
        check(&filtered, p.filtered_rows(), "tessera, filtered")?;
        notes.push(format!(
            "tessera: the reader's token buffer held at most {} KiB (packet size {} B)",
            runs.iter().map(|m| m.run.max_buffered).max().unwrap_or(0) >> 10,
            reader.packet_size()
        ));
        let warm = runs.pop().expect("two runs");
        let cold = runs.pop().expect("two runs");
        Ok::<_, BenchError>((cold, warm, filtered))
    })();
    drop(rt);
    server.stop().map_err(BenchError::new)?;
    let (cold, warm, filtered) = result?;
    Ok(Side { cold, warm, filtered, table_bytes, load_seconds, notes })
}

/// The first number in psql's aligned output.
fn psql_number(out: &str) -> Option<u64> {
    out.lines().find_map(|l| l.trim().parse().ok())
}

fn postgres_side(dir: &Path, p: &StreamingParams, progress: &dyn Fn(&str)) -> Result<Side> {
    let rows = p.rows();
    let sb = p.shared_buffers_mb as usize;
    let server = start_postgres(dir, sb)?;
    progress(&format!("postgresql: loading {rows} rows"));
    let start = Instant::now();
    psql(
        server.port,
        &format!(
            "CREATE TABLE t (id bigint PRIMARY KEY, k int NOT NULL, amount numeric(12,2) NOT NULL, name varchar(40) NOT NULL, pad char(900) NOT NULL);
             INSERT INTO t SELECT g, g % 1000, (g % 100000) / 100.0, 'name-' || g, 'p' || g FROM generate_series(1, {rows}) g;"
        ),
    )?;
    let load_seconds = start.elapsed().as_secs_f64();
    // Hint bits and visibility set now, so the measured scans only read.
    psql(server.port, "VACUUM (FREEZE, ANALYZE) t")?;
    psql(server.port, "CHECKPOINT")?;
    let table_bytes = psql_number(&psql(server.port, "SELECT pg_relation_size('t')")?).unwrap_or(0);
    let mut notes = vec![format!(
        "postgresql: loaded {} rows in {load_seconds:.1} s (INSERT … SELECT from generate_series); heap {:.0} MiB",
        fmt_value(rows as f64),
        table_bytes as f64 / MIB
    )];
    drop(server);
    progress(&format!("postgresql: restarting with shared_buffers {sb} MB"));
    let server = restart_postgres(dir, sb)?;
    let mut reader = PgConn::connect(server.port, "postgres", "postgres")?;
    let one = reader.query("SELECT id FROM t WHERE id = 1")?;
    check(&one, 1, "postgresql warm-up query")?;
    let mut probe = Probe::Pid(PidProbe::new(reader.backend_pid));
    let mut runs = Vec::new();
    for what in ["cold", "warm"] {
        progress(&format!("postgresql: SELECT * ({what})"));
        let mut own = PidProbe::new(reader.backend_pid);
        settle(&mut || own.read());
        let (run, before, samples, back) = sampled(probe, &mut || own.read(), &mut || reader.query("SELECT * FROM t"))?;
        probe = back;
        check(&run, rows, &format!("postgresql, {what}"))?;
        runs.push(Measured { run, before, samples, pool_pages: None });
    }
    progress("postgresql: SELECT * … WHERE k = 7");
    let filtered = reader.query(&format!("SELECT * FROM t WHERE k = {FILTER_K}"))?;
    check(&filtered, p.filtered_rows(), "postgresql, filtered")?;
    notes.push(format!(
        "postgresql: the reader held at most {} KiB; backend pid {}",
        runs.iter().map(|m| m.run.max_buffered).max().unwrap_or(0) >> 10,
        reader.backend_pid
    ));
    drop(reader);
    drop(server);
    let warm = runs.pop().expect("two runs");
    let cold = runs.pop().expect("two runs");
    Ok(Side { cold, warm, filtered, table_bytes, load_seconds, notes })
}

/// Runs both sides in fresh subdirectories of `dir` (removed afterwards).
pub fn run(dir: &Path, params: &StreamingParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    let sides = Sides::run(dir, |d| tessera(d, params, progress), |d| postgres_side(d, params, progress))?;
    failures.extend(sides.failures());
    if let (Ok(t), Ok(pg)) = (&sides.ours, &sides.peer) {
        push_rows(&mut report, params, t, pg);
    }
    report.note(format!(
        "goals: first row < {GOAL_FIRST_ROW_MS} ms; server RSS growth < {GOAL_RSS_GROWTH_MIB} MiB (cold: the largest rise of resident memory outside the buffer pool's mappings during the query, from the lowest level before it; warm: peak VmRSS less VmRSS just before, the pool as the first scan left it); rows against postgresql carry no goal (0)"
    ));
    report.note("tessera: RunningServer in process with the streaming TDS reader and the RSS sampler (both bounded, nothing subtracted for them); 'cold' is the first SELECT * after a restart (empty buffer pool, OS page cache as the load left it), 'warm' the second; postgresql: its own cluster restarted after the load (empty shared buffers), a v3-protocol reader that streams, its backend's /proc/<pid>/status sampled (RssShmem = shared memory touched); all on the same 2 cores");
    for f in &failures {
        report.note(format!("not measured: {f}"));
    }
    Ok(Outcome { report, failures })
}

fn push_rows(report: &mut Report, p: &StreamingParams, t: &Side, pg: &Side) {
    let what = format!("SELECT * of {} MiB over TDS, max server memory {} MB", p.table_mib, p.max_server_memory_mb);
    report.push(ResultRow::own(
        format!("{what}: first row latency (cold)"),
        "ms",
        t.cold.first_row_ms(),
        GOAL_FIRST_ROW_MS,
    ));
    report.push(ResultRow::time(
        "first row latency (cold), against postgresql",
        "ms",
        t.cold.first_row_ms(),
        "postgresql",
        pg.cold.first_row_ms(),
        0.0,
    ));
    report.push(ResultRow::own(
        format!("{what}: server RSS growth excluding the buffer pool (cold)"),
        "MiB",
        t.cold.other_growth_mib(),
        GOAL_RSS_GROWTH_MIB,
    ));
    report.push(ResultRow::own(
        format!("{what}: server RSS growth, raw VmRSS (warm: second scan)"),
        "MiB",
        t.warm.raw_growth_mib(),
        GOAL_RSS_GROWTH_MIB,
    ));
    report.push(ResultRow::time(
        "server peak RSS growth, raw VmRSS (cold), against postgresql's backend",
        "MiB",
        t.cold.raw_growth_mib(),
        "postgresql",
        pg.cold.raw_growth_mib(),
        0.0,
    ));
    report.push(ResultRow::time(
        "server RSS growth excluding the page cache (cold), against postgresql's backend (RssAnon + RssFile)",
        "MiB",
        t.cold.other_growth_mib(),
        "postgresql",
        pg.cold.other_growth_mib(),
        0.0,
    ));
    report.push(ResultRow::time(
        format!("first row latency, filtered scan (WHERE k = {FILTER_K}: every 1,000th row), against postgresql"),
        "ms",
        1000.0 * t.filtered.first_row_seconds.unwrap_or(f64::NAN),
        "postgresql",
        1000.0 * pg.filtered.first_row_seconds.unwrap_or(f64::NAN),
        0.0,
    ));
    for (what, ours, theirs) in [("cold", &t.cold, &pg.cold), ("warm", &t.warm, &pg.warm)] {
        report.push(ResultRow::rate(
            format!("scan throughput ({what}), reply bytes"),
            "MB/s",
            ours.run.mb_per_second(),
            "postgresql",
            theirs.run.mb_per_second(),
            0.0,
        ));
    }
    for (side, s) in [("tessera", t), ("postgresql", pg)] {
        for (what, m) in [("cold", &s.cold), ("warm", &s.warm)] {
            report.note(format!("{side} {what}: {}", m.describe()));
        }
    }
    for (side, s) in [("tessera", t), ("postgresql", pg)] {
        for (what, m) in [("cold", &s.cold), ("warm", &s.warm)] {
            if m.other_drop_mib() > 4.0 {
                report.note(format!(
                    "{side} {what}: resident memory outside the cache fell {:.1} MiB below its level before the query (an earlier phase's heap given back by the allocator meanwhile): growth outside the cache is measured from the lowest level before each sample, and the raw VmRSS growth is understated by up to that much",
                    m.other_drop_mib()
                ));
            }
        }
    }
    for (side, f) in [("tessera", &t.filtered), ("postgresql", &pg.filtered)] {
        let first = f.first_row_seconds.unwrap_or(f64::NAN);
        report.note(format!(
            "{side} filtered scan (WHERE k = {FILTER_K}): {} rows in {:.3} s, the first after {:.2} ms ({:.1} % of the scan), in a first read of {} bytes (~{:.0} rows)",
            f.rows,
            f.seconds,
            1000.0 * first,
            100.0 * first / f.seconds.max(1e-9),
            f.first_read_bytes,
            f.first_read_bytes as f64 * f.rows as f64 / f.bytes.max(1) as f64
        ));
    }
    for (what, m) in [("cold", &t.cold), ("warm", &t.warm)] {
        if let Some((before, after)) = m.pool_pages {
            report.note(format!(
                "tessera {what}: buffer pool 'Database pages' {before} → {after} ({:.0} → {:.0} MiB); its mappings' RSS grew {:.1} MiB (beyond the pages: frames the prefault thread commits ahead of the high-water mark, at most 64 MiB and never past max server memory, and the frame descriptors)",
                before as f64 * 8192.0 / MIB,
                after as f64 * 8192.0 / MIB,
                m.cache_growth_mib()
            ));
        }
    }
    report.note(format!(
        "rows per second (cold / warm): tessera {} / {}, postgresql {} / {}; reply bytes per row: tessera {:.0}, postgresql {:.0} (TDS binary vs the v3 text format)",
        fmt_value(t.cold.run.rows_per_second()),
        fmt_value(t.warm.run.rows_per_second()),
        fmt_value(pg.cold.run.rows_per_second()),
        fmt_value(pg.warm.run.rows_per_second()),
        t.cold.run.bytes as f64 / t.cold.run.rows.max(1) as f64,
        pg.cold.run.bytes as f64 / pg.cold.run.rows.max(1) as f64,
    ));
    report.note(format!(
        "table on disk: tessera data file {:.0} MiB, postgresql heap {:.0} MiB; one sampler reading took {:.0} µs (tessera: smaps + status) / {:.0} µs (postgresql: status)",
        t.table_bytes as f64 / MIB,
        pg.table_bytes as f64 / MIB,
        t.cold.samples.mean_read_us,
        pg.cold.samples.mean_read_us
    ));
    report.notes.extend(t.notes.iter().cloned());
    report.notes.extend(pg.notes.iter().cloned());
}
