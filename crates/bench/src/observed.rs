//! `tessera bench observed` (issue 38): what watching a server costs. Two servers run side
//! by side in the same run — one plain, one "observed": its Prometheus listener on and
//! scraped every `scrape_seconds` (15, a common Prometheus setting; `--scrape-seconds`),
//! and Query Store on (QUERY_CAPTURE_MODE = ALL, so every statement
//! is counted) in every database the workload uses — and the same load alternates between
//! them in pairs (plain first in even pairs, observed first in odd ones, so that drift of
//! the machine falls on both alike):
//!
//! - pointselect: seed 002's random point select at 16 connections from the lean TDS
//!   generator ([`crate::pointselect`]), both servers in this process; compared: the
//!   server's CPU per query and the throughput;
//! - consolidation: seed 000's tenants ([`crate::consolidation`]) at one size, the
//!   uniform mix at its fixed offered rate, both servers `tessera serve` processes;
//!   compared: server CPU per transaction and p99 latency.
//!
//! Goal: the observed server loses less than [`GOAL_MAX_LOSS_PERCENT`] of either figure
//! (the ratio plain ÷ observed is at least 0.97 for CPU, observed ÷ plain for throughput).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::consolidation::schema::{schedule, tenant_name, Skew, PROCEDURES};
use crate::consolidation::tessera::{drive, free_port, Instance, InstanceSpec};
use crate::consolidation::{tenant_schema, Sample};
use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::pointselect::{batch, connect, lean_phase, load_seed_table, seed_query, CLIENT_THREADS, PASSWORD};
use crate::report::{Report, ResultRow};

pub const NAME: &str = "observed";

/// The observed server may lose at most this share of its CPU efficiency or throughput.
pub const GOAL_MAX_LOSS_PERCENT: f64 = 3.0;

#[derive(Debug, Clone, Serialize)]
pub struct ObservedParams {
    /// Rows of the point-select table.
    pub rows: u64,
    pub connections: usize,
    /// Alternating pairs per workload.
    pub pairs: usize,
    /// Timed seconds per point-select phase.
    pub seconds: u64,
    /// Tenant databases of the consolidation workload (0 leaves it out).
    pub tenants: usize,
    /// Transactions per second offered to the tenants.
    pub tenant_rate: f64,
    /// Timed seconds per consolidation phase.
    pub tenant_seconds: u64,
    /// Seconds between scrapes of `/metrics` (Prometheus is commonly set to 15 s).
    pub scrape_seconds: u64,
    /// The `tessera` binary the consolidation servers run from (None: in this process, whose
    /// CPU then includes the clients').
    #[serde(skip)]
    pub binary: Option<PathBuf>,
}

impl ObservedParams {
    pub fn full(binary: Option<PathBuf>) -> ObservedParams {
        ObservedParams {
            rows: 100_000,
            connections: 16,
            pairs: 5,
            seconds: 10,
            tenants: 1000,
            tenant_rate: 2000.0,
            tenant_seconds: 20,
            scrape_seconds: 15,
            binary,
        }
    }

    pub fn quick(binary: Option<PathBuf>) -> ObservedParams {
        ObservedParams {
            rows: 20_000,
            pairs: 3,
            seconds: 3,
            tenants: 200,
            tenant_rate: 400.0,
            tenant_seconds: 5,
            ..ObservedParams::full(binary)
        }
    }
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

/// Scrapes `/metrics` at `addr` every `every` until dropped; counts the scrapes. Its
/// thread's name starts with the client threads' prefix, so its CPU is not charged to
/// the server.
struct Scraper {
    stop: Arc<AtomicBool>,
    scrapes: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Scraper {
    fn start(addr: SocketAddr, every: Duration) -> Result<Scraper> {
        let stop = Arc::new(AtomicBool::new(false));
        let scrapes = Arc::new(AtomicU64::new(0));
        let (s, n) = (stop.clone(), scrapes.clone());
        let thread = std::thread::Builder::new().name(format!("{CLIENT_THREADS}-scrape")).spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if scrape(addr).is_ok_and(|body| body.contains("tessera_")) {
                    n.fetch_add(1, Ordering::Relaxed);
                }
                // In short steps, so that dropping it does not wait a whole interval.
                let until = std::time::Instant::now() + every;
                while !s.load(Ordering::Relaxed) && std::time::Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        })?;
        Ok(Scraper { stop, scrapes, thread: Some(thread) })
    }

    fn scrapes(&self) -> u64 {
        self.scrapes.load(Ordering::Relaxed)
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One `GET /metrics` (HTTP/1.0: the server closes the connection after the body).
pub(crate) fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut body = String::new();
    s.read_to_string(&mut body)?;
    Ok(body)
}

/// The mean of `v`, and its spread (least and most).
fn summary(v: &[f64]) -> (f64, f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

fn listed(v: &[f64]) -> String {
    v.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(", ")
}

/// The point-select pairs: (plain, observed) server CPU per query (µs) and throughput
/// (queries/s) of each phase.
struct PointPairs {
    cpu: (Vec<f64>, Vec<f64>),
    rate: (Vec<f64>, Vec<f64>),
    scrapes: u64,
    counted: i64,
}

fn pointselect(dir: &Path, p: &ObservedParams, progress: &dyn Fn(&str)) -> Result<PointPairs> {
    let memory_mb = ((p.rows as usize * 1100 * 2) >> 20).max(256);
    let config = |sub: &str, metrics: Option<u16>| tessera_server::Config {
        port: 0,
        data_dir: dir.join(sub),
        sa_password: Some(PASSWORD.to_string()),
        memory_mb,
        metrics_port: metrics,
        errorlog: false,
        log_stderr: false,
        ..tessera_server::Config::default()
    };
    let plain = tessera_server::RunningServer::start(config("plain", None)).map_err(BenchError::new)?;
    let observed =
        tessera_server::RunningServer::start(config("observed", Some(free_port()?))).map_err(BenchError::new)?;
    let metrics =
        observed.metrics_addr.ok_or_else(|| BenchError::new("the observed server has no metrics listener"))?;
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(CLIENT_THREADS)
        .enable_all()
        .build()?;
    let (plain_port, observed_port) = (plain.addr.port(), observed.addr.port());
    clients.block_on(async {
        for port in [plain_port, observed_port] {
            let mut c = connect(port).await?;
            load_seed_table(&mut c, p.rows, progress).await?;
        }
        let mut c = connect(observed_port).await?;
        batch(
            &mut c,
            "ALTER DATABASE [BufferPoolExtensions_test] SET QUERY_STORE = ON (QUERY_CAPTURE_MODE = ALL)",
            "query store",
        )
        .await
        .map(|_| ())
    })?;
    let scraper = Scraper::start(metrics, Duration::from_secs(p.scrape_seconds))?;
    let query = seed_query(p.rows);
    let mut pairs = PointPairs { cpu: (vec![], vec![]), rate: (vec![], vec![]), scrapes: 0, counted: 0 };
    for pair in 0..p.pairs {
        let order = if pair % 2 == 0 { [false, true] } else { [true, false] };
        for watched in order {
            let (port, what) = if watched { (observed_port, "observed") } else { (plain_port, "plain") };
            progress(&format!(
                "pointselect pair {}: {what}, {} connections for {} s",
                pair + 1,
                p.connections,
                p.seconds
            ));
            let phase = lean_phase(port, &query, p.connections, p.seconds)?;
            let cpu = phase.cpu.map_or(0.0, |(server, _)| server);
            let (cpus, rates) =
                if watched { (&mut pairs.cpu.1, &mut pairs.rate.1) } else { (&mut pairs.cpu.0, &mut pairs.rate.0) };
            cpus.push(cpu);
            rates.push(phase.rate);
        }
    }
    pairs.scrapes = scraper.scrapes();
    drop(scraper);
    // The observed side did count the runs.
    pairs.counted = clients.block_on(async {
        let mut c = connect(observed_port).await?;
        batch(&mut c, "use [BufferPoolExtensions_test]", "use").await?;
        let rows = c
            .simple_query("SELECT CAST(SUM(count_executions) AS bigint) FROM sys.query_store_runtime_stats")
            .await
            .map_err(|e| BenchError::new(e.to_string()))?
            .into_row()
            .await
            .map_err(|e| BenchError::new(e.to_string()))?;
        Ok::<i64, BenchError>(rows.and_then(|r| r.get::<i64, _>(0)).unwrap_or(0))
    })?;
    drop(clients);
    plain.stop().map_err(BenchError::new)?;
    observed.stop().map_err(BenchError::new)?;
    Ok(pairs)
}

/// The consolidation pairs: (plain, observed) samples.
struct TenantPairs {
    samples: (Vec<Sample>, Vec<Sample>),
    scrapes: u64,
}

fn consolidation(dir: &Path, p: &ObservedParams, progress: &dyn Fn(&str)) -> Result<TenantPairs> {
    let schema = tenant_schema();
    let spec = |sub: &str, metrics_port: Option<u16>| InstanceSpec {
        binary: p.binary.clone(),
        dir: dir.join(sub),
        memory_mb: 512,
        max_open: p.tenants + 64,
        affinity_mask: None,
        metrics_port,
        descriptor_limit: None,
    };
    let tenants: Vec<usize> = (0..p.tenants).collect();
    let metrics_port = free_port()?;
    let mut servers = Vec::new();
    for (sub, metrics) in [("plain", None), ("observed", Some(metrics_port))] {
        let s = spec(sub, metrics);
        let server = Instance::start(&s, Vec::new())?;
        progress(&format!("consolidation: creating {} tenants in {}", p.tenants, server.dir.display()));
        server.create_tenants(&schema, &tenants, progress)?;
        if metrics.is_some() {
            let alter: Vec<String> = tenants
                .iter()
                .map(|&t| {
                    format!("ALTER DATABASE [{}] SET QUERY_STORE = ON (QUERY_CAPTURE_MODE = ALL)", tenant_name(t))
                })
                .collect();
            server.admin(&alter)?;
        }
        let mut server = server.restart(&s)?;
        server.tenants.clone_from(&tenants);
        servers.push(server);
    }
    let scraper =
        Scraper::start(SocketAddr::from(([127, 0, 0, 1], metrics_port)), Duration::from_secs(p.scrape_seconds))?;
    let calls = schedule(p.tenants, PROCEDURES, Skew::Uniform, p.tenants as u64);
    let mut pairs = TenantPairs { samples: (vec![], vec![]), scrapes: 0 };
    for pair in 0..p.pairs {
        let order = if pair % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            progress(&format!(
                "consolidation pair {}: {}, {} tenants for {} s",
                pair + 1,
                if i == 1 { "observed" } else { "plain" },
                p.tenants,
                p.tenant_seconds
            ));
            let sample = drive(
                &servers[i..=i],
                &calls,
                8,
                p.tenant_rate,
                Duration::from_secs(2),
                Duration::from_secs(p.tenant_seconds),
            )?;
            if i == 1 { &mut pairs.samples.1 } else { &mut pairs.samples.0 }.push(sample);
        }
    }
    pairs.scrapes = scraper.scrapes();
    drop(scraper);
    for s in servers {
        s.stop()?;
    }
    Ok(pairs)
}

/// Runs both workloads in fresh subdirectories of `dir`.
pub fn run(dir: &Path, p: &ObservedParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(p)?, machine);
    let mut failures = Vec::new();
    let floor = 1.0 - GOAL_MAX_LOSS_PERCENT / 100.0;
    let check = |failures: &mut Vec<String>, row: &ResultRow| {
        let ratio = row.ratio.unwrap_or(0.0);
        if ratio < floor {
            failures.push(format!("{}: ratio {ratio:.3} < {floor:.2}", row.metric));
        }
    };

    let points = pointselect(&dir.join("pointselect"), p, progress)?;
    let (plain_cpu, watched_cpu) = (summary(&points.cpu.0), summary(&points.cpu.1));
    let (plain_rate, watched_rate) = (summary(&points.rate.0), summary(&points.rate.1));
    let what = format!("point select, {} connections", p.connections);
    let cpu_row = ResultRow::time(
        format!("{what}: server CPU per query, observed"),
        "µs",
        watched_cpu.0,
        "plain",
        plain_cpu.0,
        floor,
    );
    check(&mut failures, &cpu_row);
    report.push(cpu_row);
    let rate_row = ResultRow::rate(
        format!("{what}: throughput, observed"),
        "queries/s",
        watched_rate.0,
        "plain",
        plain_rate.0,
        floor,
    );
    check(&mut failures, &rate_row);
    report.push(rate_row);
    report.note(format!(
        "point select: server CPU per query plain [{}] µs, observed [{}] µs; throughput plain [{}], observed [{}] queries/s; {} scrapes of /metrics; Query Store counted {} runs",
        listed(&points.cpu.0),
        listed(&points.cpu.1),
        listed(&points.rate.0),
        listed(&points.rate.1),
        points.scrapes,
        points.counted
    ));
    if points.counted <= 0 {
        failures.push("Query Store on the observed server counted no run".to_string());
    }

    if p.tenants > 0 {
        let tenants = consolidation(&dir.join("consolidation"), p, progress)?;
        let per_tx = |s: &Sample| 1e6 * s.server_cpu_seconds / s.transactions.max(1) as f64;
        let cpu = |v: &[Sample]| v.iter().map(per_tx).collect::<Vec<_>>();
        let p99 = |v: &[Sample]| v.iter().map(|s| s.p99_ms).collect::<Vec<_>>();
        let (pc, wc) = (cpu(&tenants.samples.0), cpu(&tenants.samples.1));
        let (pl, wl) = (p99(&tenants.samples.0), p99(&tenants.samples.1));
        let what = format!("consolidation, {} tenants, {} tx/s offered", p.tenants, p.tenant_rate);
        let cpu_row = ResultRow::time(
            format!("{what}: server CPU per transaction, observed"),
            "µs",
            summary(&wc).0,
            "plain",
            summary(&pc).0,
            floor,
        );
        check(&mut failures, &cpu_row);
        report.push(cpu_row);
        report.push(ResultRow::time(
            format!("{what}: p99 latency, observed"),
            "ms",
            summary(&wl).0,
            "plain",
            summary(&pl).0,
            0.0,
        ));
        let tx = |v: &[Sample]| v.iter().map(Sample::per_minute).collect::<Vec<_>>();
        report.note(format!(
            "consolidation: server CPU per transaction plain [{}] µs, observed [{}] µs; p99 plain [{}] ms, observed [{}] ms; transactions/min plain [{}], observed [{}]; {} scrapes",
            listed(&pc),
            listed(&wc),
            listed(&pl),
            listed(&wl),
            listed(&tx(&tenants.samples.0)),
            listed(&tx(&tenants.samples.1)),
            tenants.scrapes
        ));
    }
    report.note(format!(
        "goal: observed loses < {GOAL_MAX_LOSS_PERCENT} % (ratio ≥ {floor:.2}); observed = Prometheus listener scraped every {} s + Query Store ON (QUERY_CAPTURE_MODE = ALL) in every database used; pairs alternate which side runs first; p99 carries no goal (0)",
        p.scrape_seconds
    ));
    for f in &failures {
        report.note(format!("missed: {f}"));
    }
    Ok(Outcome { report, failures })
}
