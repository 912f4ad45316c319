//! `tessera bench pointselect`: seed 002's random point select over TCP loopback, through
//! the TDS server, next to PostgreSQL answering `pgbench` in the same run.
//!
//! Both sides hold the seed's table, `id int primary key, n char(1000)`, N rows, read once
//! before timing so both answer from memory. tessera is started in process
//! (`RunningServer`, its own 2-thread network runtime and blocking pool) and sent the seed's
//! batch text, which picks a uniform random id on the server: `select [n] from
//! [dbo].[TestTable] where [id] = cast(rand(checksum(newid())) * N as int) + 1`, first by
//! the lean load generator ([`crate::tdsload`]: one thread, pre-encoded request, replies
//! decoded only as far as needed — what pgbench is for PostgreSQL), then by tiberius clients
//! on a 2-thread runtime (kept for comparison: a full client library costs ~3× pgbench's
//! CPU per query, which on 2 shared cores decides the throughput). PostgreSQL is started by
//! the benchmark (`initdb` + `postgres` on a free port, as the `postgres` user when run as
//! root) and driven by `pgbench -M simple` with the script `\set id random(1, N)` / `SELECT
//! n FROM testtable WHERE id = :id`: the same key distribution, the simple (unprepared)
//! protocol. Each client runs one connection, then 16, for the same time.
//!
//! Goals (the TDS issue), all with the lean generator against pgbench: one connection's mean
//! latency at most 0.67× PostgreSQL's; at 16 connections, the server's CPU per query at most
//! half PostgreSQL's and the throughput at least 1.5× PostgreSQL's. The tiberius rows carry
//! no goal.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use tiberius::{AuthMethod, Client, Config as ClientConfig, EncryptionLevel};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use crate::cpu::{rusage_cpu, thread_cpu};
use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::peers::postgres::{pgbench, psql, start_postgres, Sides};
use crate::report::{fmt_value, Report, ResultRow};
use crate::tdsload::{self, LoadSpec, Stop};

pub const NAME: &str = "pointselect";

/// tessera's single-connection mean latency (lean generator) may be at most this fraction
/// of PostgreSQL's (pgbench's).
pub const GOAL_LATENCY_VS_POSTGRES: f64 = 0.67;
/// tessera's 16-connection throughput (lean generator) must be at least this multiple of
/// PostgreSQL's (pgbench's).
pub const GOAL_THROUGHPUT_VS_POSTGRES: f64 = 1.5;
/// tessera's server CPU per query at 16 connections (lean generator) may be at most this
/// fraction of PostgreSQL's.
pub const GOAL_SERVER_CPU_VS_POSTGRES: f64 = 0.5;

pub(crate) const PASSWORD: &str = "Bench-Pointselect-1";
const ROWS_PER_INSERT: u64 = 1000;
/// The name of the tiberius clients' runtime threads (their CPU time is counted apart).
pub(crate) const CLIENT_THREADS: &str = "bench-client";

#[derive(Debug, Clone, Serialize)]
pub struct PointselectParams {
    pub rows: u64,
    /// Timed seconds per (side, connection count).
    pub seconds: u64,
    pub connections: Vec<usize>,
}

impl PointselectParams {
    /// The seed's scale: 1,000,000 rows.
    pub fn full() -> PointselectParams {
        PointselectParams { rows: 1_000_000, seconds: 20, connections: vec![1, 16] }
    }

    pub fn quick() -> PointselectParams {
        PointselectParams { rows: 20_000, seconds: 3, connections: vec![1, 16] }
    }
}

/// One measured phase: queries per second and mean latency (ms).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Phase {
    pub(crate) rate: f64,
    latency_ms: f64,
    /// CPU time per query of the server and of its client(s), in microseconds.
    pub(crate) cpu: Option<(f64, f64)>,
}

/// tessera's phases for one connection count: driven by the lean generator, then by tiberius.
#[derive(Debug, Clone, Copy)]
struct TesseraPhases {
    lean: Phase,
    tiberius: Phase,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

pub(crate) type Conn = Client<Compat<TcpStream>>;

pub(crate) async fn connect(port: u16) -> Result<Conn> {
    let mut config = ClientConfig::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server("sa", PASSWORD));
    config.encryption(EncryptionLevel::NotSupported);
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    tcp.set_nodelay(true)?;
    Client::connect(config, tcp.compat_write()).await.map_err(|e| BenchError::new(format!("tessera login: {e}")))
}

pub(crate) async fn batch(c: &mut Conn, text: &str, what: &str) -> Result<u64> {
    let results = c
        .simple_query(text)
        .await
        .map_err(|e| BenchError::new(format!("tessera {what}: {e}")))?
        .into_results()
        .await
        .map_err(|e| BenchError::new(format!("tessera {what}: {e}")))?;
    Ok(results.iter().map(|r| r.len() as u64).sum())
}

/// Seed 002's database, table and rows (`rows` of char(1000), loaded in batches of
/// 10,000 in one transaction each), read once so they are all in memory.
pub(crate) async fn load_seed_table(c: &mut Conn, rows: u64, progress: &dyn Fn(&str)) -> Result<()> {
    batch(c, "create database [BufferPoolExtensions_test]", "create database").await?;
    batch(
        c,
        "use [BufferPoolExtensions_test]; create table [dbo].[TestTable] ([id] int identity(1,1) not null, [n] char(1000) not null, constraint [PK_TestTable] primary key clustered ([id]))",
        "create table",
    )
    .await?;
    progress(&format!("tessera: loading {rows} rows"));
    let mut loaded = 0;
    while loaded < rows {
        let mut text = String::from("set nocount on; begin tran;");
        for _ in 0..10 {
            let n = ROWS_PER_INSERT.min(rows - loaded);
            if n == 0 {
                break;
            }
            text.push_str("insert into [dbo].[TestTable] ([n]) values ");
            for i in 0..n {
                text.push_str(if i == 0 { "(replicate('A', 1000))" } else { ", (replicate('A', 1000))" });
            }
            text.push(';');
            loaded += n;
        }
        text.push_str("commit;");
        batch(c, &text, "load").await?;
    }
    let warmed = batch(c, "select [n] from [dbo].[TestTable]", "warm-up").await?;
    if warmed != rows {
        return Err(BenchError::new(format!("tessera holds {warmed} rows, not {rows}")));
    }
    Ok(())
}

/// The seed's select: one uniformly random row, the id drawn by the server.
pub(crate) fn seed_query(rows: u64) -> String {
    format!("select [n] from [dbo].[TestTable] where [id] = cast(rand(checksum(newid())) * {rows} as int) + 1")
}

/// tessera's side: the server in process; for each connection count the lean generator,
/// then tiberius clients on their own runtime.
fn tessera(dir: &Path, p: &PointselectParams, progress: &dyn Fn(&str)) -> Result<Vec<TesseraPhases>> {
    let memory_mb = ((p.rows as usize * 1100 * 2) >> 20).max(256);
    let config = tessera_server::Config {
        port: 0,
        data_dir: dir.to_path_buf(),
        sa_password: Some(PASSWORD.to_string()),
        memory_mb,
        errorlog: false,
        log_stderr: false,
        ..tessera_server::Config::default()
    };
    let server = tessera_server::RunningServer::start(config).map_err(BenchError::new)?;
    let port = server.addr.port();
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(CLIENT_THREADS)
        .enable_all()
        .build()?;
    let result = (|| {
        clients.block_on(async {
            let mut c = connect(port).await?;
            load_seed_table(&mut c, p.rows, progress).await
        })?;
        let query = seed_query(p.rows);
        let mut phases = Vec::new();
        for &n in &p.connections {
            progress(&format!("tessera: lean TDS generator, {n} connection(s) for {} s", p.seconds));
            let lean = lean_phase(port, &query, n, p.seconds)?;
            progress(&format!("tessera: tiberius, {n} connection(s) for {} s", p.seconds));
            let tiberius = clients.block_on(tiberius_phase(port, &query, n, p.seconds))?;
            phases.push(TesseraPhases { lean, tiberius });
        }
        Ok(phases)
    })();
    drop(clients);
    server.stop().map_err(BenchError::new)?;
    result
}

/// `n` connections of the lean generator for `seconds`; the server is charged the process's
/// CPU over the timed span less the generator's thread (and the idle tiberius runtime's).
pub(crate) fn lean_phase(port: u16, query: &str, n: usize, seconds: u64) -> Result<Phase> {
    let spec = LoadSpec {
        port,
        user: "sa",
        password: PASSWORD,
        database: "BufferPoolExtensions_test",
        batches: &[query],
        connections: n,
        stop: Stop::After(Duration::from_secs(seconds)),
        expect_rows: Some(1),
        record_latencies: false,
        rate: None,
    };
    let idle_before = thread_cpu(CLIENT_THREADS);
    let run = tdsload::run(&spec)?;
    let idle = thread_cpu(CLIENT_THREADS) - idle_before;
    if let Some(e) = &run.first_error {
        return Err(BenchError::new(format!("point select ({} failed): {e}", run.errors)));
    }
    let per_query = |cpu: f64| 1e6 * cpu / (run.queries.max(1) as f64);
    let server = run.process_cpu_seconds - run.cpu_seconds - idle;
    Ok(Phase {
        rate: run.rate(),
        latency_ms: run.mean_latency_ms(),
        cpu: Some((per_query(server), run.cpu_per_query_us())),
    })
}

/// `n` tiberius connections for `seconds`, each a task on the 2-thread client runtime.
async fn tiberius_phase(port: u16, query: &str, n: usize, seconds: u64) -> Result<Phase> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let mut c = connect(port).await?;
        batch(&mut c, "use [BufferPoolExtensions_test]", "use").await?;
        conns.push(c);
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let (process_before, client_before) = (rusage_cpu(libc::RUSAGE_SELF), thread_cpu(CLIENT_THREADS));
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|mut c| {
            let query = query.to_string();
            tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < deadline {
                    if batch(&mut c, &query, "point select").await? != 1 {
                        return Err(BenchError::new("a point select did not return one row"));
                    }
                    done += 1;
                }
                Ok::<u64, BenchError>(done)
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.map_err(|e| BenchError::new(e.to_string()))??;
    }
    let seconds = start.elapsed().as_secs_f64();
    let client = thread_cpu(CLIENT_THREADS) - client_before;
    let server = rusage_cpu(libc::RUSAGE_SELF) - process_before - client;
    let per_query = |cpu: f64| 1e6 * cpu / (total.max(1) as f64);
    let rate = total as f64 / seconds;
    Ok(Phase {
        rate,
        latency_ms: 1000.0 * n as f64 / rate.max(1e-9),
        cpu: Some((per_query(server), per_query(client))),
    })
}

fn postgres_side(dir: &Path, p: &PointselectParams, progress: &dyn Fn(&str)) -> Result<Vec<Phase>> {
    let shared_buffers_mb = ((p.rows as usize * 1200 * 2) >> 20).max(128);
    let server = start_postgres(dir, shared_buffers_mb)?;
    progress(&format!("postgresql: loading {} rows", p.rows));
    psql(
        server.port,
        &format!(
            "CREATE TABLE testtable (id int PRIMARY KEY, n char(1000) NOT NULL);
             INSERT INTO testtable SELECT g, repeat('A', 1000) FROM generate_series(1, {}) g;",
            p.rows
        ),
    )?;
    // VACUUM cannot share psql's implicit transaction with other statements.
    psql(server.port, "VACUUM ANALYZE testtable")?;
    // Into shared buffers (pg_prewarm, from postgresql-contrib); else a full read warms the
    // OS cache at least.
    if psql(server.port, "CREATE EXTENSION pg_prewarm; SELECT pg_prewarm('testtable'), pg_prewarm('testtable_pkey');")
        .is_err()
    {
        psql(server.port, "SELECT count(n) FROM testtable")?;
    }
    let script = dir.join("pointselect.sql");
    fs::write(&script, format!("\\set id random(1, {})\nSELECT n FROM testtable WHERE id = :id;\n", p.rows))?;
    let mut phases = Vec::new();
    for &n in &p.connections {
        progress(&format!("postgresql: pgbench, {n} connection(s) for {} s", p.seconds));
        let (run, cpu) = pgbench(&server, &script, n, p.seconds)?;
        phases.push(Phase { rate: run.tps, latency_ms: run.latency_ms, cpu: Some(cpu) });
    }
    drop(server);
    Ok(phases)
}

/// Runs both sides in fresh subdirectories of `dir` (removed afterwards).
pub fn run(dir: &Path, params: &PointselectParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    let sides = Sides::run(dir, |d| tessera(d, params, progress), |d| postgres_side(d, params, progress))?;
    failures.extend(sides.failures());
    if let (Ok(o), Ok(pg)) = (&sides.ours, &sides.peer) {
        const WHAT: &str = "seed 002 point select over TDS";
        for ((&n, t), q) in params.connections.iter().zip(o).zip(pg) {
            let (lean, tib) = (&t.lean, &t.tiberius);
            if n == 1 {
                report.push(ResultRow::time(
                    format!("{WHAT}, 1 connection: mean latency"),
                    "ms",
                    lean.latency_ms,
                    "postgresql",
                    q.latency_ms,
                    1.0 / GOAL_LATENCY_VS_POSTGRES,
                ));
                report.push(ResultRow::time(
                    format!("{WHAT}, 1 connection, tiberius client: mean latency"),
                    "ms",
                    tib.latency_ms,
                    "postgresql",
                    q.latency_ms,
                    0.0,
                ));
            } else {
                report.push(ResultRow::rate(
                    format!("{WHAT}, {n} connections: throughput"),
                    "queries/s",
                    lean.rate,
                    "postgresql",
                    q.rate,
                    GOAL_THROUGHPUT_VS_POSTGRES,
                ));
                if let (Some((ts, _)), Some((ps, _))) = (lean.cpu, q.cpu) {
                    report.push(ResultRow::time(
                        format!("{WHAT}, {n} connections: server CPU per query"),
                        "µs",
                        ts,
                        "postgresql",
                        ps,
                        1.0 / GOAL_SERVER_CPU_VS_POSTGRES,
                    ));
                }
                report.push(ResultRow::rate(
                    format!("{WHAT}, {n} connections, tiberius client: throughput"),
                    "queries/s",
                    tib.rate,
                    "postgresql",
                    q.rate,
                    0.0,
                ));
            }
            report.note(format!(
                    "{n} connection(s): tessera {} queries/s ({:.3} ms mean) with the lean generator, {} queries/s ({:.3} ms mean) with tiberius; postgresql {} queries/s ({:.3} ms mean)",
                    fmt_value(lean.rate),
                    lean.latency_ms,
                    fmt_value(tib.rate),
                    tib.latency_ms,
                    fmt_value(q.rate),
                    q.latency_ms
                ));
            if let (Some((ls, lc)), Some((ts, tc)), Some((ps, pc))) = (lean.cpu, tib.cpu, q.cpu) {
                report.note(format!(
                        "{n} connection(s), CPU per query: tessera server {ls:.1} µs + lean generator {lc:.1} µs; tessera server {ts:.1} µs + tiberius client {tc:.1} µs; postgresql server {ps:.1} µs + pgbench {pc:.1} µs"
                    ));
            }
        }
    }
    report.note(format!(
        "goals, lean generator against pgbench: latency ratio = PostgreSQL's ÷ tessera's ≥ {:.2} (tessera's latency ≤ {GOAL_LATENCY_VS_POSTGRES}× PostgreSQL's); server CPU ratio = PostgreSQL's ÷ tessera's ≥ {:.0} (≤ {GOAL_SERVER_CPU_VS_POSTGRES}×); throughput ratio = tessera's ÷ PostgreSQL's ≥ {GOAL_THROUGHPUT_VS_POSTGRES}; tiberius rows: no goal (0)",
        1.0 / GOAL_LATENCY_VS_POSTGRES,
        1.0 / GOAL_SERVER_CPU_VS_POSTGRES,
    ));
    report.note(
        "tessera: RunningServer in process, driven by the lean TDS generator (one thread, poll over plain TCP, the request encoded once, replies scanned for ROW, ERROR and the final DONE) and then by tiberius clients (plain TCP) on a 2-thread runtime, the seed's batch text with a server-side random id; postgresql: initdb'd by the benchmark, data prewarmed, pgbench -M simple with a client-side uniform random id; all on the same 2 cores as their clients",
    );
    for f in &failures {
        report.note(format!("not measured: {f}"));
    }
    Ok(Outcome { report, failures })
}
