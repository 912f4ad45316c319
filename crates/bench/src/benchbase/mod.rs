//! `tessera bench benchbase`: BenchBase (CMU's OLTP harness), unchanged, loading and
//! running one workload against tessera through the Microsoft JDBC driver and against
//! PostgreSQL through pgjdbc, one after the other in the same run, with the same scale,
//! terminals, duration and isolation; then goodput, latency, server CPU per transaction
//! and load time side by side, and for TPC-C the consistency conditions checked on both.
//!
//! BenchBase is not built here: the user provides its two builds (`mvn package -P
//! sqlserver` and `-P postgres` in its repository, each `target/benchbase-<profile>.tgz`
//! unpacked into one directory) and a Java runtime it supports.
//!
//! - [`workload`]: the workloads, their sizes and each system's configuration.
//! - [`outcome`]: what BenchBase's summary and log say about a run.

mod outcome;
pub mod workload;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::consolidation::tessera::{Instance, InstanceSpec};
use crate::cpu::{pin_command, pin_process_tree, postgres_cpu, process_cpu, rusage_cpu};
use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::peers::postgres::{psql, psql_in, start_postgres};
use crate::pointselect::PASSWORD;
use crate::report::{Report, ResultRow};
use outcome::Run;
pub use workload::{Size, System, Workload};

/// TPC-C's consistency conditions 1–4 (TPC-C 3.3.2.1–3.3.2.4) and undelivered orders
/// matching NEW_ORDER, as one count of violations, and the orders placed; the same text
/// runs on both systems.
const TPCC_CONSISTENCY: &str = "SELECT \
 (SELECT COUNT(*) FROM warehouse w WHERE w.w_ytd <> (SELECT SUM(d.d_ytd) FROM district d WHERE d.d_w_id = w.w_id)) \
 + (SELECT COUNT(*) FROM district d WHERE d.d_next_o_id - 1 <> (SELECT MAX(o.o_id) FROM oorder o WHERE o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id) \
    OR d.d_next_o_id - 1 <> (SELECT MAX(n.no_o_id) FROM new_order n WHERE n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id)) \
 + (SELECT COUNT(*) FROM (SELECT MAX(no_o_id) - MIN(no_o_id) + 1 AS span, COUNT(*) AS cnt FROM new_order GROUP BY no_w_id, no_d_id) x WHERE span <> cnt) \
 + (SELECT COUNT(*) FROM (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS s FROM oorder GROUP BY o_w_id, o_d_id) a \
    JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS c FROM order_line GROUP BY ol_w_id, ol_d_id) b \
    ON a.o_w_id = b.ol_w_id AND a.o_d_id = b.ol_d_id WHERE a.s <> b.c) \
 + ABS((SELECT COUNT(*) FROM oorder WHERE o_carrier_id IS NULL) - (SELECT COUNT(*) FROM new_order)) AS violations, \
 (SELECT COUNT(*) FROM oorder) AS orders";

/// What `tessera bench benchbase` runs.
#[derive(Clone, Debug)]
pub struct BenchbaseParams {
    /// The directory holding BenchBase's unpacked builds `benchbase-sqlserver/` and
    /// `benchbase-postgres/`.
    pub home: PathBuf,
    /// The Java runtime BenchBase runs on.
    pub java: PathBuf,
    /// The `tessera` binary whose `serve` is measured.
    pub binary: PathBuf,
    pub workloads: Vec<Workload>,
    pub quick: bool,
    /// Scale factor for every workload (None: each workload's own, see
    /// [`Workload::scale`]).
    pub scale: Option<f64>,
    pub terminals: usize,
    pub seconds: u64,
    /// tessera's memory and PostgreSQL's shared buffers.
    pub memory_mb: usize,
    /// The CPUs BenchBase's JVM runs on, as (client, server) masks: the client on the
    /// first CPUs, the server under test on the others, so that neither takes the other's
    /// turn (None: all share every CPU).
    pub split: Option<CpuSplit>,
}

/// Which CPUs the client and the server under test may use.
#[derive(Clone, Copy, Debug)]
pub struct CpuSplit {
    pub client: u64,
    pub server: u64,
}

impl CpuSplit {
    /// The first `client_cpus` of the machine's `cpus` for the client, the rest for the
    /// server; None when that leaves either side without a CPU.
    pub fn new(client_cpus: usize, cpus: usize) -> Option<CpuSplit> {
        if client_cpus == 0 || client_cpus >= cpus || cpus > 64 {
            return None;
        }
        let all = if cpus == 64 { u64::MAX } else { (1u64 << cpus) - 1 };
        let client = (1u64 << client_cpus) - 1;
        Some(CpuSplit { client, server: all & !client })
    }
}

impl BenchbaseParams {
    /// The goal run (TPC-C at 10 warehouses, 8 terminals, 120 s), or with `quick`
    /// a one-warehouse, four-terminal, 20-second smoke run.
    pub fn new(home: PathBuf, java: PathBuf, binary: PathBuf, workloads: Vec<Workload>, quick: bool) -> Self {
        BenchbaseParams {
            home,
            java,
            binary,
            workloads,
            quick,
            scale: None,
            terminals: if quick { 4 } else { 8 },
            seconds: if quick { 20 } else { 120 },
            memory_mb: if quick { 512 } else { 2048 },
            split: None,
        }
    }

    fn size(&self, workload: Workload) -> Size {
        Size {
            scale: self.scale.unwrap_or_else(|| workload.scale(self.quick)),
            terminals: self.terminals,
            seconds: self.seconds,
        }
    }
}

pub struct Outcome {
    pub report: Report,
    /// Parts that could not be measured.
    pub failures: Vec<String>,
}

/// Runs every workload of `p` on both systems, in `dir`.
pub fn run(dir: &Path, p: &BenchbaseParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    for system in [System::Tessera, System::Postgres] {
        let jar = system.build_dir(&p.home).join("benchbase.jar");
        if !jar.is_file() {
            return Err(BenchError::new(format!(
                "no BenchBase build at {}: build BenchBase with `mvn package -P sqlserver` and `-P postgres` and unpack both target/benchbase-<profile>.tgz into {}",
                jar.display(),
                p.home.display()
            )));
        }
    }
    let params = serde_json::json!({
        "workloads": p.workloads.iter().map(|w| w.name()).collect::<Vec<_>>(),
        "scale": p.workloads.iter().map(|w| p.size(*w).scale).collect::<Vec<_>>(),
        "terminals": p.terminals,
        "seconds": p.seconds,
        "memory_mb": p.memory_mb,
        "isolation": "SERIALIZABLE",
        "benchbase": p.home.display().to_string(),
        "client_cpu_mask": p.split.map(|s| s.client),
        "server_cpu_mask": p.split.map(|s| s.server),
    });
    let mut report = Report::new("benchbase", params, Machine::detect(dir)?);
    let mut failures = Vec::new();
    for &workload in &p.workloads {
        let size = p.size(workload);
        progress(&format!(
            "{}: scale {} with {} terminals for {} s, tessera then PostgreSQL",
            workload.name(),
            size.scale,
            size.terminals,
            size.seconds
        ));
        let ours = on_tessera(dir, p, workload, size, progress);
        let peer = on_postgres(dir, p, workload, size, progress);
        match (ours, peer) {
            (Ok(ours), Ok(peer)) => compare(&mut report, workload, &ours, &peer),
            (ours, peer) => {
                for (system, r) in [("tessera", ours.err()), ("postgresql", peer.err())] {
                    if let Some(e) = r {
                        failures.push(format!("{} on {system}: {e}", workload.name()));
                    }
                }
            }
        }
    }
    report.note(
        "BenchBase unchanged, its sqlserver profile (mssql-jdbc) against tessera and its postgres profile (pgjdbc) \
         against PostgreSQL; each system loads a fresh database, then runs the workload; SERIALIZABLE on both",
    );
    report.note(format!(
        "drivers: {}; {}",
        driver_jar(&System::Tessera.build_dir(&p.home), "mssql-jdbc-"),
        driver_jar(&System::Postgres.build_dir(&p.home), "postgresql-")
    ));
    if let Some(split) = p.split {
        report.note(format!(
            "BenchBase's JVM confined to CPU mask {:#x}, the server under test (tessera's threads, PostgreSQL's \
             postmaster and every backend) to {:#x}",
            split.client, split.server
        ));
    }
    report.note(
        "batched inserts as each driver's documentation advises for loading: pgjdbc reWriteBatchedInserts=true (as in \
         BenchBase's own PostgreSQL sample), mssql-jdbc useBulkCopyForBatchInsert=true",
    );
    Ok(Outcome { report, failures })
}

/// The JDBC driver a BenchBase build ships, by its jar's name in `lib/` (its version).
fn driver_jar(build: &Path, prefix: &str) -> String {
    std::fs::read_dir(build.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|name| name.starts_with(prefix) && name.ends_with(".jar"))
        .unwrap_or_else(|| format!("no {prefix}*.jar in {}", build.join("lib").display()))
}

fn on_tessera(dir: &Path, p: &BenchbaseParams, workload: Workload, size: Size, progress: &dyn Fn(&str)) -> Result<Run> {
    let spec = InstanceSpec {
        binary: Some(p.binary.clone()),
        dir: dir.join(format!("tessera-{}", workload.name())),
        memory_mb: p.memory_mb,
        max_open: 64,
        affinity_mask: None,
        metrics_port: None,
        descriptor_limit: None,
    };
    let instance = Instance::start(&spec, Vec::new())?;
    instance.admin(&["CREATE DATABASE benchbase".to_string()])?;
    let pid = instance.pid();
    if let Some(split) = p.split {
        pin_process_tree(pid, split.server)?;
    }
    let server = Server { system: System::Tessera, port: instance.port, work: &spec.dir, cpu: &|| process_cpu(pid) };
    let mut run = benchbase(p, workload, size, &server, progress)?;
    if workload == Workload::Tpcc {
        let rows = instance.admin(&[format!("USE benchbase; {TPCC_CONSISTENCY}")])?;
        run.violations = rows.first().map(|r| r.0);
    }
    instance.stop()?;
    Ok(run)
}

fn on_postgres(
    dir: &Path,
    p: &BenchbaseParams,
    workload: Workload,
    size: Size,
    progress: &dyn Fn(&str),
) -> Result<Run> {
    let work = dir.join(format!("postgres-{}", workload.name()));
    let server = start_postgres(&work, p.memory_mb)?;
    psql(server.port, "CREATE DATABASE benchbase")?;
    let postmaster = server.postmaster_pid();
    if let Some(split) = p.split {
        pin_process_tree(postmaster, split.server)?;
    }
    let target = Server { system: System::Postgres, port: server.port, work: &work, cpu: &|| postgres_cpu(postmaster) };
    let mut run = benchbase(p, workload, size, &target, progress)?;
    if workload == Workload::Tpcc {
        let out = psql_in(server.port, "benchbase", TPCC_CONSISTENCY)?;
        run.violations = out.trim().split('|').next().and_then(|v| v.parse().ok());
    }
    Ok(run)
}

/// A server BenchBase runs against: which system, its port, the directory for BenchBase's
/// configuration, logs and results, and the server's CPU seconds so far.
struct Server<'a> {
    system: System,
    port: u16,
    work: &'a Path,
    cpu: &'a dyn Fn() -> f64,
}

/// Loads and then runs `workload` with BenchBase against `server`, as two invocations so
/// that each phase's server CPU is its own.
fn benchbase(
    p: &BenchbaseParams,
    workload: Workload,
    size: Size,
    server: &Server<'_>,
    progress: &dyn Fn(&str),
) -> Result<Run> {
    let Server { system, port, work, cpu: server_cpu } = *server;
    let config = work.join("benchbase.xml");
    workload::write_config(&p.home, system, workload, size, port, PASSWORD, &config)?;
    let results = work.join("results");
    // Returns the phase's wall time, the server's and BenchBase's CPU, and BenchBase's log.
    let phase = |name: &str, flags: [&str; 3]| -> Result<(f64, f64, f64, String)> {
        progress(&format!("{} {name} on {}", workload.name(), system.name()));
        let log = work.join(format!("benchbase-{name}.log"));
        let cpu = server_cpu();
        // The JVM is the only child reaped during the phase.
        let client_cpu = rusage_cpu(libc::RUSAGE_CHILDREN);
        let start = Instant::now();
        let mut java = Command::new(&p.java);
        if let Some(split) = p.split {
            pin_command(&mut java, split.client);
        }
        let status = java
            .current_dir(system.build_dir(&p.home))
            .args(["-jar", "benchbase.jar", "-b", workload.benchmark(), "-c"])
            .arg(&config)
            .args(flags)
            .arg("-d")
            .arg(&results)
            .stdout(Stdio::from(std::fs::File::create(&log)?))
            .stderr(Stdio::from(std::fs::File::options().append(true).open(&log)?))
            .status()
            .map_err(|e| BenchError::new(format!("{}: {e}", p.java.display())))?;
        let wall = start.elapsed().as_secs_f64();
        let cpu = server_cpu() - cpu;
        let client_cpu = rusage_cpu(libc::RUSAGE_CHILDREN) - client_cpu;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if !status.success() {
            let tail: Vec<&str> = text.lines().rev().take(6).collect();
            return Err(BenchError::new(format!(
                "BenchBase's {name} exited with {status}: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )));
        }
        Ok((wall, cpu, client_cpu, text))
    };
    let (load_s, load_cpu_s, _, _) = phase("load", ["--create=true", "--load=true", "--execute=false"])?;
    let (_, exec_cpu_s, exec_client_cpu_s, log) =
        phase("execute", ["--create=false", "--load=false", "--execute=true"])?;
    let mut run = outcome::read(&results, &log)?;
    run.load_s = load_s;
    run.load_cpu_s = load_cpu_s;
    run.exec_cpu_s = exec_cpu_s;
    run.exec_client_cpu_s = exec_client_cpu_s;
    progress(&format!(
        "{} on {}: {:.1} txn/s goodput, p95 {:.2} ms, {} unexpected errors",
        workload.name(),
        system.name(),
        run.goodput,
        run.p95_ms,
        run.unexpected_errors
    ));
    Ok(run)
}

/// The report's rows for one workload: goodput (the goal), p95 latency, server CPU per
/// committed transaction and load time against PostgreSQL's; notes on errors and, for
/// TPC-C, the consistency check.
fn compare(report: &mut Report, workload: Workload, ours: &Run, peer: &Run) {
    let w = workload.name();
    report.push(ResultRow::rate(
        format!("{w} goodput"),
        "txn/s",
        ours.goodput,
        "postgresql",
        peer.goodput,
        workload.goal(),
    ));
    report.push(ResultRow::time(format!("{w} p95 latency"), "ms", ours.p95_ms, "postgresql", peer.p95_ms, 1.0));
    report.push(ResultRow::time(
        format!("{w} server CPU per committed transaction"),
        "µs",
        ours.cpu_per_txn_us(),
        "postgresql",
        peer.cpu_per_txn_us(),
        1.0,
    ));
    report.push(ResultRow::time(
        format!("{w} client CPU per committed transaction"),
        "µs",
        ours.client_cpu_per_txn_us(),
        "postgresql",
        peer.client_cpu_per_txn_us(),
        1.0,
    ));
    report.push(ResultRow::time(format!("{w} load"), "s", ours.load_s, "postgresql", peer.load_s, 1.0));
    for (system, run) in [("tessera", ours), ("postgresql", peer)] {
        let mut note = format!(
            "{w} on {system}: throughput {:.1} req/s, goodput {:.1} txn/s, latency p50 {:.2} / p95 {:.2} / p99 {:.2} ms, \
             {} unexpected SQL errors, execute server CPU {:.1} s / client CPU {:.1} s, load {:.1} s wall / {:.1} s \
             server CPU",
            run.throughput,
            run.goodput,
            run.p50_ms,
            run.p95_ms,
            run.p99_ms,
            run.unexpected_errors,
            run.exec_cpu_s,
            run.exec_client_cpu_s,
            run.load_s,
            run.load_cpu_s
        );
        if let Some(v) = run.violations {
            note.push_str(&format!(", TPC-C consistency violations {v}"));
        }
        report.note(note);
    }
}
