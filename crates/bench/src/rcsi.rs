//! `tessera bench rcsi`: 16 connections doing point selects while 4 others update random
//! rows, with READ COMMITTED SNAPSHOT on and off, next to PostgreSQL (whose READ COMMITTED
//! reads snapshots) running the same load in the same run.
//!
//! The writers send a fixed number of updates per second between them (open loop: the
//! lean generator's `rate`, pgbench's `-R`), the same on both sides: the readers of both
//! servers then share the machine with the same write work, whichever server could
//! commit faster flat out.
//!
//! Both sides hold `acct (id int primary key, v int not null, pad char(200))` with N rows,
//! read once before timing. A reader's query picks a uniform random id and reads `v`; a
//! writer's adds one to `v` of a uniform random id and commits durably (fdatasync; PostgreSQL
//! with `synchronous_commit=on`). tessera runs in process (`RunningServer`) and is driven
//! by the lean TDS generator ([`crate::tdsload`]), the readers and the writers each on a
//! thread of their own, the id drawn by the server (`rand(checksum(newid()))`); PostgreSQL
//! by two pgbench processes at once (`-M simple`, the id drawn by pgbench). Every reader
//! query's latency is kept, for the p99.
//!
//! tessera's phases: RCSI with the readers alone (the p99 the goal compares with), RCSI
//! with the writers, and locking READ COMMITTED with the writers (no goal: for contrast).
//!
//! Goals (issue 34): under RCSI the readers' p99 beside the writers at most 1.5× their p99
//! alone; their throughput beside the writers at least 1.5× PostgreSQL's.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::peers::postgres::{pgbench_logged, psql, start_postgres, Sides};
use crate::pointselect::{batch, connect};
use crate::report::{fmt_value, Report, ResultRow};
use crate::tdsload::{self, quantile_ms, LoadSpec, Stop};

pub const NAME: &str = "rcsi";

/// Under RCSI, the readers' p99 beside the writers may be at most this multiple of their
/// p99 alone.
pub const GOAL_P99_VS_ALONE: f64 = 1.5;
/// Under RCSI, the readers' throughput beside the writers must be at least this multiple of
/// PostgreSQL's.
pub const GOAL_READS_VS_POSTGRES: f64 = 1.5;

const PASSWORD: &str = crate::pointselect::PASSWORD;
const DATABASE: &str = "rcsi_bench";

#[derive(Debug, Clone, Serialize)]
pub struct RcsiParams {
    pub rows: u64,
    pub readers: usize,
    pub writers: usize,
    /// The writers' updates per second, all together, on both sides (open loop): the
    /// same write load beside both servers' readers, whichever commits faster.
    pub writes_per_s: f64,
    /// Timed seconds per phase.
    pub seconds: u64,
}

impl RcsiParams {
    pub fn full() -> RcsiParams {
        RcsiParams { rows: 100_000, readers: 16, writers: 4, writes_per_s: 2000.0, seconds: 20 }
    }

    pub fn quick() -> RcsiParams {
        RcsiParams { rows: 10_000, readers: 16, writers: 4, writes_per_s: 2000.0, seconds: 3 }
    }
}

/// One measured phase: the readers' throughput and p99, and the writers' throughput.
#[derive(Debug, Clone, Copy, Default)]
struct Phase {
    reads_per_s: f64,
    p99_ms: f64,
    mean_ms: f64,
    writes_per_s: f64,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

/// `connections` sending `batches` in the benchmark's database for the phase's time.
fn load_spec<'a>(
    port: u16,
    p: &RcsiParams,
    batches: &'a [&'a str],
    connections: usize,
    record_latencies: bool,
    expect_rows: Option<u64>,
    rate: Option<f64>,
) -> LoadSpec<'a> {
    LoadSpec {
        port,
        user: "sa",
        password: PASSWORD,
        database: DATABASE,
        batches,
        connections,
        stop: Stop::After(Duration::from_secs(p.seconds)),
        expect_rows,
        record_latencies,
        rate,
    }
}

/// The readers for `seconds` (latencies kept), beside the writers when there are any.
fn tessera_phase(port: u16, p: &RcsiParams, writers: usize) -> Result<Phase> {
    let read = format!("select v from acct where id = cast(rand(checksum(newid())) * {} as int) + 1", p.rows);
    let write = format!("update acct set v = v + 1 where id = cast(rand(checksum(newid())) * {} as int) + 1", p.rows);
    let (reads, writes) = ([read.as_str()], [write.as_str()]);
    let spec = |batches, connections, record_latencies, expect_rows, rate| {
        load_spec(port, p, batches, connections, record_latencies, expect_rows, rate)
    };
    let (readers, writers) = std::thread::scope(|scope| {
        let w = (writers > 0)
            .then(|| scope.spawn(|| tdsload::run(&spec(&writes, writers, false, Some(0), Some(p.writes_per_s)))));
        let r = tdsload::run(&spec(&reads, p.readers, true, Some(1), None));
        let w = w.map(|h| h.join().map_err(|_| BenchError::new("the writers' thread panicked"))?).transpose();
        (r, w)
    });
    let mut readers = readers?;
    let writers = writers?;
    for (who, run) in [("readers", Some(&readers)), ("writers", writers.as_ref())] {
        if let Some(e) = run.and_then(|r| r.first_error.as_ref()) {
            return Err(BenchError::new(format!("tessera {who}: {e}")));
        }
    }
    Ok(Phase {
        reads_per_s: readers.rate(),
        p99_ms: quantile_ms(&mut readers.latencies_us, 0.99),
        mean_ms: readers.mean_latency_ms(),
        writes_per_s: writers.map_or(0.0, |w| w.rate()),
    })
}

/// tessera's three phases: RCSI alone, RCSI beside the writers, locking READ COMMITTED
/// beside the writers.
fn tessera(dir: &Path, p: &RcsiParams, progress: &dyn Fn(&str)) -> Result<[Phase; 3]> {
    let config = tessera_server::Config {
        port: 0,
        data_dir: dir.to_path_buf(),
        sa_password: Some(PASSWORD.to_string()),
        memory_mb: 512,
        errorlog: false,
        log_stderr: false,
        ..tessera_server::Config::default()
    };
    let server = tessera_server::RunningServer::start(config).map_err(BenchError::new)?;
    let port = server.addr.port();
    let clients = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let admin = |sql: String, what: &'static str| {
        clients.block_on(async {
            let mut c = connect(port).await?;
            batch(&mut c, &sql, what).await
        })
    };
    let result = (|| {
        progress(&format!("tessera: loading {} rows", p.rows));
        admin(
            format!(
                "create database [{DATABASE}]; use [{DATABASE}]; \
                 create table acct (id int primary key, v int not null, pad char(200) not null); \
                 set nocount on; declare @i int = 1; \
                 begin tran; while @i <= {} begin insert into acct values (@i, 0, 'x'); set @i += 1; end; commit",
                p.rows
            ),
            "load",
        )?;
        admin(format!("use [{DATABASE}]; select v from acct"), "warm-up")?;
        admin(format!("alter database [{DATABASE}] set read_committed_snapshot on"), "rcsi on")?;
        progress(&format!("tessera: RCSI, {} readers alone for {} s", p.readers, p.seconds));
        let alone = tessera_phase(port, p, 0)?;
        progress(&format!("tessera: RCSI, {} readers beside {} writers for {} s", p.readers, p.writers, p.seconds));
        let beside = tessera_phase(port, p, p.writers)?;
        admin(format!("alter database [{DATABASE}] set read_committed_snapshot off"), "rcsi off")?;
        progress(&format!("tessera: locking READ COMMITTED beside {} writers for {} s", p.writers, p.seconds));
        let locking = tessera_phase(port, p, p.writers)?;
        Ok([alone, beside, locking])
    })();
    drop(clients);
    server.stop().map_err(BenchError::new)?;
    result
}

/// PostgreSQL's readers alone, then beside the writers (two pgbench processes at once).
fn postgres_side(dir: &Path, p: &RcsiParams, progress: &dyn Fn(&str)) -> Result<[Phase; 2]> {
    let server = start_postgres(dir, 256)?;
    progress(&format!("postgresql: loading {} rows", p.rows));
    psql(
        server.port,
        &format!(
            "CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL, pad char(200) NOT NULL);
             INSERT INTO acct SELECT g, 0, 'x' FROM generate_series(1, {}) g;",
            p.rows
        ),
    )?;
    psql(server.port, "VACUUM ANALYZE acct")?;
    psql(server.port, "SELECT count(v) FROM acct")?;
    let (read, write) = (dir.join("read.sql"), dir.join("write.sql"));
    fs::write(&read, format!("\\set id random(1, {})\nSELECT v FROM acct WHERE id = :id;\n", p.rows))?;
    fs::write(&write, format!("\\set id random(1, {})\nUPDATE acct SET v = v + 1 WHERE id = :id;\n", p.rows))?;
    let logs = dir.join("logs");
    let mut phases = [Phase::default(); 2];
    for (i, writers) in [0, p.writers].into_iter().enumerate() {
        progress(&format!("postgresql: {} readers beside {writers} writers for {} s", p.readers, p.seconds));
        let (reads, writes) = std::thread::scope(|scope| {
            let w = (writers > 0).then(|| {
                scope.spawn(|| pgbench_logged(&server, &write, writers, p.seconds, None, Some(p.writes_per_s)))
            });
            let r = pgbench_logged(&server, &read, p.readers, p.seconds, Some(&logs), None);
            let w = w.map(|h| h.join().map_err(|_| BenchError::new("the writers' thread panicked"))?).transpose();
            (r, w)
        });
        let (run, _, mut latencies) = reads?;
        phases[i] = Phase {
            reads_per_s: run.tps,
            p99_ms: quantile_ms(&mut latencies, 0.99),
            mean_ms: run.latency_ms,
            writes_per_s: writes?.map_or(0.0, |(w, _, _)| w.tps),
        };
    }
    Ok(phases)
}

/// Runs both sides in fresh subdirectories of `dir` (removed afterwards).
pub fn run(dir: &Path, params: &RcsiParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let sides = Sides::run(dir, |d| tessera(d, params, progress), |d| postgres_side(d, params, progress))?;
    let (r, w) = (params.readers, params.writers);
    let failures = sides.failures();
    if let (Ok([alone, beside, locking]), Ok([pg_alone, pg_beside])) = (&sides.ours, &sides.peer) {
        report.push(ResultRow::rate(
            format!("RCSI, {r} readers beside {w} writers: reads"),
            "queries/s",
            beside.reads_per_s,
            "postgresql",
            pg_beside.reads_per_s,
            GOAL_READS_VS_POSTGRES,
        ));
        report.push(ResultRow::time(
            format!("RCSI, {r} readers: p99 beside {w} writers (peer: alone)"),
            "ms",
            beside.p99_ms,
            "tessera alone",
            alone.p99_ms,
            1.0 / GOAL_P99_VS_ALONE,
        ));
        let line = |who: &str, ph: &Phase| {
            format!(
                "{who}: reads {} /s, mean {} ms, p99 {} ms; writes {} /s",
                fmt_value(ph.reads_per_s),
                fmt_value(ph.mean_ms),
                fmt_value(ph.p99_ms),
                fmt_value(ph.writes_per_s)
            )
        };
        report.note(line("tessera RCSI, readers alone", alone));
        report.note(line("tessera RCSI, beside the writers", beside));
        report.note(line("tessera locking READ COMMITTED, beside the writers", locking));
        report.note(line("postgresql, readers alone", pg_alone));
        report.note(line("postgresql, beside the writers", pg_beside));
    }
    report.note(format!(
        "goals: RCSI readers' throughput beside the writers ≥ {GOAL_READS_VS_POSTGRES}× PostgreSQL's; their p99 beside the writers ≤ {GOAL_P99_VS_ALONE}× their p99 alone (ratio = alone ÷ beside ≥ {})",
        fmt_value(1.0 / GOAL_P99_VS_ALONE)
    ));
    report.note(format!(
        "writers: {} updates/s in all on both sides (open loop), each its own durable transaction; tessera: RunningServer in process, the lean TDS generator (readers and writers on a thread each, ids drawn by the server); postgresql: initdb'd by the benchmark, synchronous_commit=on, two pgbench -M simple at once (the writers' with -R; ids drawn by pgbench); both on the same 2 cores as their clients",
        fmt_value(params.writes_per_s)
    ));
    for f in &failures {
        report.note(format!("failed: {f}"));
    }
    Ok(Outcome { report, failures })
}
