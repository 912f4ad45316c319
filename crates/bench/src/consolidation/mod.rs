//! `tessera bench consolidation` (issue 20): seed 000's PACE-like tenants — accounts,
//! invoices, payments and a journal, 200 generated procedures — at N = 500 … 8,000
//! databases, clients choosing a tenant per transaction (uniform, and skewed 80/20), the
//! same mix of procedure calls on every side:
//!
//! - tessera, one instance, and two instances each pinned to half the CPUs by
//!   `sp_configure 'affinity mask'` with the tenants split between them ([`tessera`]);
//! - PostgreSQL, database per tenant behind PgBouncer in transaction mode, and schema per
//!   tenant in one database with `SET LOCAL search_path` per transaction ([`postgres`]).
//!
//! Per N and side: transactions per minute in total and per database, p50/p99 latency,
//! server and client CPU per transaction, compiled plans and plan-cache memory, server RSS
//! and open databases. `idle` (`--idle N`) opens N databases and reports the server's RSS
//! against its buffer pool. The report carries the throughput-versus-databases curves
//! (`--chart`).

pub(crate) mod postgres;
pub mod scale;
pub mod schema;
mod summary;
pub(crate) mod tessera;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::report::{fmt_value, Report, ResultRow};
use crate::tenants::{check_free_space, disk_usage, TenantSchema};
use postgres::{Layout, PgSide};
use schema::{schedule, tenant_name, tessera_procedure, tessera_tables, Skew, PROCEDURES};
use tessera::{descriptor_budget, drive, finish_point, Instance, InstanceSpec};

pub const NAME: &str = "consolidation";

/// Per-database throughput at the goal's N must be at least this share of the smallest N's (%).
pub const GOAL_PER_DATABASE_RETENTION_PERCENT: f64 = 90.0;
/// tessera's throughput at the goal's N must be at least this multiple of the better
/// PostgreSQL variant's.
pub const GOAL_VS_POSTGRES: f64 = 1.5;
/// Idle: the server's RSS may exceed its buffer pool by at most this (MiB).
pub const GOAL_IDLE_OVER_POOL_MIB: f64 = 1024.0;

#[derive(Debug, Clone, Serialize)]
pub struct ConsolidationParams {
    /// Tenant counts, ascending.
    pub sizes: Vec<usize>,
    /// The N the goals are checked at (the 4,000; 8× the smallest with --quick).
    pub goal_size: usize,
    /// Client connections (seed 000's reproduction: 8), shared by all tenants.
    pub connections: usize,
    /// Transactions per second offered at the goal's size; every size gets the same rate
    /// per database (this ÷ `goal_size`), as each of seed 000's databases had its own
    /// users, so a server that keeps up keeps its per-database throughput.
    pub offered_per_second_at_goal: f64,
    pub warmup_seconds: u64,
    pub seconds: u64,
    pub skews: Vec<Skew>,
    /// Buffer pool of the one instance (two instances get half each); PostgreSQL's
    /// shared_buffers.
    pub memory_mb: usize,
    pub two_instances: bool,
    pub postgres: bool,
    /// `--idle N`: only the idle-memory measurement, with N open databases.
    pub idle: Option<usize>,
    /// `--scale N,…`: only the scale run ([`scale`]).
    pub scale: Option<scale::ScaleParams>,
    /// The `tessera` binary the servers are started from (`tessera serve`); None runs them
    /// in this process (the crate's tests: the figures then include the clients').
    #[serde(skip)]
    pub binary: Option<PathBuf>,
}

impl ConsolidationParams {
    pub fn full(binary: Option<PathBuf>) -> ConsolidationParams {
        ConsolidationParams {
            sizes: vec![500, 1000, 2000, 4000, 8000],
            goal_size: 4000,
            connections: 8,
            offered_per_second_at_goal: 8000.0,
            warmup_seconds: 5,
            seconds: 20,
            skews: vec![Skew::Uniform, Skew::Skewed],
            memory_mb: 1024,
            two_instances: true,
            postgres: true,
            idle: None,
            scale: None,
            binary,
        }
    }

    pub fn quick(binary: Option<PathBuf>) -> ConsolidationParams {
        ConsolidationParams {
            sizes: vec![50, 100, 200, 400],
            goal_size: 400,
            warmup_seconds: 2,
            seconds: 5,
            ..Self::full(binary)
        }
    }
}

impl ConsolidationParams {
    /// Transactions per second offered with `n` databases.
    pub fn rate(&self, n: usize) -> f64 {
        self.offered_per_second_at_goal * n as f64 / self.goal_size.max(1) as f64
    }
}

/// One timed run's figures.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Sample {
    pub transactions: u64,
    pub seconds: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub server_cpu_seconds: f64,
    pub client_cpu_seconds: f64,
}

impl Sample {
    /// From the counted transactions and their latencies (µs; sorted here).
    pub fn new(transactions: u64, seconds: f64, latencies_us: &mut [u32], server_cpu: f64, client_cpu: f64) -> Sample {
        Sample {
            transactions,
            seconds,
            p50_ms: crate::tdsload::quantile_ms(latencies_us, 0.50),
            p99_ms: crate::tdsload::quantile_ms(latencies_us, 0.99),
            server_cpu_seconds: server_cpu,
            client_cpu_seconds: client_cpu,
        }
    }

    pub fn per_minute(&self) -> f64 {
        60.0 * self.transactions as f64 / self.seconds.max(1e-9)
    }

    fn cpu_us(&self, seconds: f64) -> f64 {
        1e6 * seconds / self.transactions.max(1) as f64
    }
}

/// A sample with the server's state after it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Point {
    pub sample: Sample,
    pub compiled_plans: Option<u64>,
    pub plan_cache_bytes: Option<u64>,
    pub rss_bytes: u64,
    pub open_databases: Option<usize>,
}

/// The sides, in the order they run and are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    OneInstance,
    TwoInstances,
    PgDatabases,
    PgSchemas,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::OneInstance => "tessera, 1 instance",
            Side::TwoInstances => "tessera, 2 instances (half the CPUs each)",
            Side::PgDatabases => "postgresql, database per tenant (pgbouncer)",
            Side::PgSchemas => "postgresql, schema per tenant",
        }
    }
}

/// Every point of one side: `points[size][skew]`.
struct SideRun {
    side: Side,
    points: Vec<Vec<Point>>,
    notes: Vec<String>,
}

pub(crate) fn tenant_schema() -> TenantSchema {
    TenantSchema { tables: tessera_tables(), procedures: (0..PROCEDURES).map(tessera_procedure).collect() }
}

/// The CPUs of this machine as affinity masks: all of them, and two halves.
fn cpu_masks() -> (u64, u64) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 64);
    let low = (1u64 << (cpus / 2)) - 1;
    let all = if cpus == 64 { u64::MAX } else { (1u64 << cpus) - 1 };
    (low, all & !low)
}

/// tessera with `instances` servers: the tenants of every size created (in process, while
/// the servers are stopped), each size driven with every skew.
fn tessera_side(
    dir: &Path,
    p: &ConsolidationParams,
    instances: usize,
    run: &mut SideRun,
    progress: &dyn Fn(&str),
) -> Result<()> {
    let side = run.side;
    let schema = tenant_schema();
    let (low, high) = cpu_masks();
    let specs: Vec<InstanceSpec> = (0..instances)
        .map(|i| InstanceSpec {
            binary: p.binary.clone(),
            dir: dir.join(format!("instance{i}")),
            memory_mb: p.memory_mb / instances,
            max_open: p.sizes.last().copied().unwrap_or(0) / instances + 64,
            affinity_mask: (instances > 1).then_some(if i == 0 { low } else { high }),
            metrics_port: None,
            descriptor_limit: None,
        })
        .collect();
    let largest = p.sizes.last().copied().unwrap_or(0);
    let mut servers: Vec<Instance> =
        specs.iter().map(|spec| Instance::start(spec, Vec::new())).collect::<Result<_>>()?;
    let mut made = 0;
    for &n in &p.sizes {
        for (i, server) in servers.iter_mut().enumerate() {
            let todo: Vec<usize> = (made..n).filter(|d| d % instances == i).collect();
            progress(&format!("{}: creating {} tenants in {}", side.label(), todo.len(), server.dir.display()));
            if made == 0 && !todo.is_empty() {
                let before = disk_usage(&server.dir)?;
                server.create_tenants(&schema, &todo[..1], progress)?;
                check_free_space(dir, disk_usage(&server.dir)?.saturating_sub(before), largest, "`--sizes`")?;
            }
            server.create_tenants(&schema, &todo[usize::from(made == 0).min(todo.len())..], progress)?;
            server.tenants.extend(todo);
        }
        made = n;
        // The plan cache starts empty and only the run opens databases.
        servers = servers.into_iter().zip(&specs).map(|(s, spec)| s.restart(spec)).collect::<Result<_>>()?;
        if n == p.sizes[0] {
            for s in &servers {
                run.notes.extend(descriptor_budget(s));
                if let Some(pinned) = s.pinned() {
                    run.notes.push(format!(
                        "instance on port {} given affinity mask {:#x}: {}",
                        s.port,
                        s.affinity_mask.unwrap_or(0),
                        if pinned {
                            "its threads are pinned to it"
                        } else {
                            "its threads are NOT pinned (the mask had no effect)"
                        }
                    ));
                }
            }
        }
        let mut row = Vec::new();
        for &skew in &p.skews {
            progress(&format!("{}: {n} databases, {}, {} s", side.label(), skew.label(), p.seconds));
            let calls = schedule(n, PROCEDURES, skew, n as u64);
            let sample = drive(
                &servers,
                &calls,
                p.connections,
                p.rate(n),
                Duration::from_secs(p.warmup_seconds),
                Duration::from_secs(p.seconds),
            )?;
            row.push(finish_point(&servers, sample)?);
        }
        run.points.push(row);
    }
    for s in servers {
        s.stop()?;
    }
    Ok(())
}

fn postgres_side(
    dir: &Path,
    p: &ConsolidationParams,
    layout: Layout,
    run: &mut SideRun,
    progress: &dyn Fn(&str),
) -> Result<()> {
    let side = run.side;
    let largest = p.sizes.last().copied().unwrap_or(0);
    let mut pg = PgSide::start(dir, layout, p.memory_mb, largest)?;
    let empty_bytes = disk_usage(dir)?;
    pg.grow(1, progress)?;
    for &n in &p.sizes {
        progress(&format!("{}: creating tenants up to {n}", side.label()));
        // Each tenant's share of everything the cluster wrote so far (its WAL and catalogs
        // too: the first tenant alone was an underestimate and filled the disk). The sizes
        // this disk cannot hold are left out, and said so.
        let per_tenant_bytes = disk_usage(dir)?.saturating_sub(empty_bytes) / pg.tenants().max(1) as u64;
        if let Err(e) = check_free_space(dir, per_tenant_bytes, n.saturating_sub(pg.tenants()), "`--sizes`") {
            run.notes.push(format!("{}: {n} tenants and more not measured: {e}", side.label()));
            break;
        }
        pg.grow(n, progress)?;
        let mut row = Vec::new();
        for &skew in &p.skews {
            progress(&format!("{}: {n} tenants, {}, {} s", side.label(), skew.label(), p.seconds));
            let calls = schedule(n, PROCEDURES, skew, n as u64);
            let secs = |s| Duration::from_secs(s);
            row.push(pg.drive(&calls, n, p.connections, p.rate(n), secs(p.warmup_seconds), secs(p.seconds))?);
        }
        run.points.push(row);
    }
    Ok(())
}

/// Runs `side` in a fresh subdirectory of `dir`, removed afterwards.
fn in_subdir<T>(dir: &Path, sub: &str, f: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let path = dir.join(sub);
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path)?;
    let out = f(&path);
    let _ = fs::remove_dir_all(&path);
    out
}

/// A finished run: the report, and what could not be measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

/// Runs the benchmark (or, with `params.idle`, only the idle-memory measurement) in fresh
/// subdirectories of `dir` (removed afterwards).
pub fn run(dir: &Path, params: &ConsolidationParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    fs::create_dir_all(dir)?;
    if params.sizes.is_empty() || params.skews.is_empty() || params.connections == 0 || !params.sizes.is_sorted() {
        return Err(BenchError::new("consolidation needs ascending sizes, at least one skew and one connection"));
    }
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    if let Some(s) = &params.scale {
        if let Err(e) = in_subdir(dir, "scale", |d| scale::run(d, params, s, &mut report, progress)) {
            failures.push(format!("scale: {e}"));
        }
        return Ok(Outcome { report, failures });
    }
    if let Some(n) = params.idle {
        match in_subdir(dir, "idle", |d| idle(d, params, n, progress)) {
            Ok((rss, open, budget)) => {
                report_idle(&mut report, params, n, rss, open);
                report.notes.extend(budget.map(|b| format!("idle: the server's ERRORLOG: {b}")));
            }
            Err(e) => failures.push(format!("idle: {e}")),
        }
        return Ok(Outcome { report, failures });
    }
    let mut sides = Vec::new();
    // A side that fails keeps the sizes it measured before.
    let mut attempt = |sub: &str, side: Side, f: &dyn Fn(&Path, &mut SideRun) -> Result<()>| {
        let mut run = SideRun { side, points: Vec::new(), notes: Vec::new() };
        if let Err(e) = in_subdir(dir, sub, |d| f(d, &mut run)) {
            failures.push(format!("{}: {e}", side.label()));
        }
        sides.push(run);
    };
    attempt("tessera1", Side::OneInstance, &|d, r| tessera_side(d, params, 1, r, progress));
    if params.two_instances {
        attempt("tessera2", Side::TwoInstances, &|d, r| tessera_side(d, params, 2, r, progress));
    }
    if params.postgres {
        attempt("pgdatabases", Side::PgDatabases, &|d, r| {
            postgres_side(d, params, Layout::DatabasePerTenant, r, progress)
        });
        attempt("pgschemas", Side::PgSchemas, &|d, r| postgres_side(d, params, Layout::SchemaPerTenant, r, progress));
    }
    summary::push(&mut report, params, &sides);
    for f in &failures {
        report.note(format!("not measured: {f}"));
    }
    Ok(Outcome { report, failures })
}

/// `n` tenant databases on one instance, each touched by one query so that it is open;
/// the server's RSS and open databases then.
fn idle(
    dir: &Path,
    p: &ConsolidationParams,
    n: usize,
    progress: &dyn Fn(&str),
) -> Result<(u64, usize, Option<String>)> {
    let schema = tenant_schema();
    let spec = InstanceSpec {
        binary: p.binary.clone(),
        dir: dir.to_path_buf(),
        memory_mb: p.memory_mb,
        max_open: n + 64,
        affinity_mask: None,
        metrics_port: None,
        descriptor_limit: None,
    };
    let server = Instance::start(&spec, (0..n).collect())?;
    let before = disk_usage(dir)?;
    server.create_tenants(&schema, &[0], progress)?;
    check_free_space(dir, disk_usage(dir)?.saturating_sub(before), n, "`--idle N`")?;
    progress(&format!("idle: creating {n} tenant databases"));
    server.create_tenants(&schema, &(1..n).collect::<Vec<_>>(), progress)?;
    let server = server.restart(&spec)?;
    progress(&format!("idle: one query in each of {n} databases"));
    let touches: Vec<String> =
        (0..n).map(|d| format!("select count(*) from [{}].dbo.accounts", tenant_name(d))).collect();
    let batches: Vec<&str> = touches.iter().map(String::as_str).collect();
    let connections = p.connections.min(n).max(1);
    let load = crate::tdsload::run(&crate::tdsload::LoadSpec {
        port: server.port,
        user: "sa",
        password: crate::pointselect::PASSWORD,
        database: "master",
        batches: &batches,
        connections,
        stop: crate::tdsload::Stop::Queries(n.div_ceil(connections) as u64),
        expect_rows: Some(1),
        record_latencies: false,
        rate: None,
    })?;
    if let Some(e) = load.first_error {
        return Err(BenchError::new(format!("touching the databases: {e}")));
    }
    std::thread::sleep(Duration::from_secs(2));
    let (rss, open, budget) = (server.rss(), server.open_databases()?, descriptor_budget(&server));
    server.stop()?;
    Ok((rss, open, budget))
}

fn report_idle(report: &mut Report, p: &ConsolidationParams, n: usize, rss: u64, open: usize) {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    report.push(ResultRow::own(
        format!("idle, {n} databases touched: server RSS over its buffer pool ({} MiB)", p.memory_mb),
        "MiB",
        mib(rss) - p.memory_mb as f64,
        GOAL_IDLE_OVER_POOL_MIB,
    ));
    report.push(ResultRow::own(format!("idle: databases open of the {n} touched"), "databases", open as f64, n as f64));
    report.note(format!(
        "idle: server RSS {} MiB with {open} databases open (sys.dm_tessera_databases); buffer pool \
         {} MiB, so {} KiB per open database beyond the pool (an untouched pool counts fully against the goal only \
         when resident)",
        fmt_value(mib(rss)),
        p.memory_mb,
        fmt_value((rss.saturating_sub((p.memory_mb as u64) << 20) >> 10) as f64 / open.max(1) as f64)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_rates_of_a_sample() {
        let mut latencies: Vec<u32> = (1..=1000).rev().collect();
        let s = Sample::new(1000, 30.0, &mut latencies, 0.5, 0.1);
        assert_eq!((s.p50_ms, s.p99_ms), (0.501, 0.991));
        assert_eq!(s.per_minute(), 2000.0);
        assert_eq!(s.cpu_us(s.server_cpu_seconds), 500.0);
        let (low, high) = cpu_masks();
        assert!(low != 0 && high != 0 && low & high == 0);
    }
}
