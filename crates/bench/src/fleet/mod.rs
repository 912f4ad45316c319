//! `tessera bench fleet` (issue 39): many servers behind gateways, measured in one run
//! against one server holding every tenant.
//!
//! - The fleet: a one-member etcd on loopback, `servers` (3) `tessera serve --etcd …
//!   --server-name sN` processes each holding `databases_per_server` (2,000) tenants, and
//!   `gateways` (2) `tessera gateway` processes. The peer: one `tessera serve` (no
//!   directory) holding all of them, with the fleet's memory in one buffer pool. A tenant
//!   is a copy (`CREATE DATABASE … AS COPY OF`) of a template with one table of `rows`
//!   rows; the benchmark waits until the directory names every tenant's server.
//! - Workload ([`tdsload`]): `connections` (16) connections, each logged in to a tenant
//!   drawn at random (the same draw on both sides, a fresh one for each pair), running
//!   point selects and, one in `1 / update_percent`, an update and its select, for
//!   `seconds` after a second of warm-up; through the gateways (connections spread over
//!   them) and directly to the one server, alternating in `pairs`. Throughput, CPU per
//!   query of every server and gateway (against the one server's) and latency.
//! - Proxy latency: one connection running `select 1` `pings` (20,000) times, directly to
//!   a server and through a gateway to the same server, in ten alternating rounds; p50 and
//!   p99, and the latency the gateway adds at p50 (goal ≤ 20 µs).
//! - Moves ([`moves`]): `moves` (20) tenants, each moved by `tessera move` to the next
//!   server while a writer inserts into it through a gateway; the mover's write pause and
//!   the writer's longest gap between acknowledged inserts, p50 and p99 (goal ≤ 1 s at
//!   p99). A tenant that does not hold exactly the acknowledged inserts after its move
//!   fails the benchmark.

mod moves;
mod procs;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::index::sample;
use rand::SeedableRng;
use serde::Serialize;

use crate::consolidation::tessera::Instance;
use crate::cpu::process_cpu;
use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::pointselect::PASSWORD;
use crate::report::{fmt_value, Report, ResultRow};
use crate::tdsload::{self, quantile_ms, LoadSpec, Stop, Target};
use crate::tenants::check_free_space;
use moves::{move_under_writer, MoveRun, MoveSpec};
use procs::{make_tenants, start_server, tenant, wait_published, wait_registered, Etcd, Gateway};

pub const NAME: &str = "fleet";

/// Goal: what a gateway adds to a round trip at p50 (µs).
pub const GOAL_ADDED_P50_US: f64 = 20.0;
/// Goal: a move's write pause at p99 (ms), as the mover reports it and as a writer sees it.
pub const GOAL_MOVE_PAUSE_MS: f64 = 1000.0;
/// Seconds of warm-up before each timed phase of the workload.
const WARMUP: Duration = Duration::from_secs(1);
/// Rounds of the proxy-latency measurement, direct and through a gateway taking turns
/// (so that the machine's drift falls on both).
const PING_ROUNDS: usize = 10;
/// Disk a tenant may take while open (the scale run measured ~150 KiB).
const DISK_PER_TENANT: u64 = 512 << 10;

#[derive(Debug, Clone, Serialize)]
pub struct FleetParams {
    pub servers: usize,
    pub gateways: usize,
    pub databases_per_server: usize,
    /// Rows of each tenant's table.
    pub rows: usize,
    pub connections: usize,
    /// Updates among the workload's statements (%).
    pub update_percent: usize,
    /// Timed seconds of each workload phase.
    pub seconds: u64,
    /// Alternating (fleet, one server) pairs of the workload.
    pub pairs: usize,
    /// `select 1` round trips on each side of the proxy-latency measurement.
    pub pings: usize,
    pub moves: usize,
    /// Buffer pool of each fleet server; the one server gets all of theirs.
    pub memory_mb: usize,
    /// The `tessera` binary the servers, gateways and mover run from.
    #[serde(skip)]
    pub binary: PathBuf,
}

impl FleetParams {
    pub fn full(binary: PathBuf) -> FleetParams {
        FleetParams {
            servers: 3,
            gateways: 2,
            databases_per_server: 2000,
            rows: 100,
            connections: 16,
            update_percent: 20,
            seconds: 10,
            pairs: 3,
            pings: 20_000,
            moves: 20,
            memory_mb: 256,
            binary,
        }
    }

    pub fn quick(binary: PathBuf) -> FleetParams {
        FleetParams {
            databases_per_server: 200,
            seconds: 3,
            pairs: 2,
            pings: 5_000,
            moves: 5,
            ..FleetParams::full(binary)
        }
    }

    fn tenants(&self) -> usize {
        self.servers * self.databases_per_server
    }
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

/// Everything the run started; dropped (killed) on any error.
struct Fleet {
    etcd: Etcd,
    servers: Vec<Instance>,
    names: Vec<String>,
    gateways: Vec<Gateway>,
    peer: Instance,
}

/// The workload's batches: point selects, and `update_percent` of them an update and its
/// select, spread evenly; every reply carries one row.
fn mix(p: &FleetParams) -> Vec<String> {
    let key = format!("cast(rand(checksum(newid())) * {} as int) + 1", p.rows);
    let select = format!("select v from t where id = {key}");
    let update = format!("declare @k int = {key}; update t set v = v + 1 where id = @k; select v from t where id = @k");
    (0..100)
        .map(|i| if (i + 1) * p.update_percent / 100 > i * p.update_percent / 100 { &update } else { &select })
        .cloned()
        .collect()
}

/// One of a phase's figures.
type Figure = fn(&Phase) -> f64;

/// One timed phase of the workload.
#[derive(Debug, Clone, Copy, Default)]
struct Phase {
    rate: f64,
    /// CPU of the servers (and gateways) per query (µs).
    cpu_us: f64,
    /// The gateways' share of it (µs).
    gateway_cpu_us: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn phase(targets: &[Target<'_>], batches: &[&str], seconds: u64, servers: &[u32], gateways: &[u32]) -> Result<Phase> {
    let spec = |stop, record| LoadSpec {
        port: 0,
        user: "sa",
        password: PASSWORD,
        database: "",
        batches,
        connections: targets.len(),
        stop,
        expect_rows: Some(1),
        record_latencies: record,
        rate: None,
    };
    let warm = tdsload::run_on(&spec(Stop::After(WARMUP), false), targets)?;
    if let Some(e) = warm.first_error {
        return Err(BenchError::new(format!("warm-up: {e}")));
    }
    let cpu = |pids: &[u32]| pids.iter().map(|&p| process_cpu(p)).sum::<f64>();
    let (servers_before, gateways_before) = (cpu(servers), cpu(gateways));
    let mut run = tdsload::run_on(&spec(Stop::After(Duration::from_secs(seconds)), true), targets)?;
    let (servers_cpu, gateways_cpu) = (cpu(servers) - servers_before, cpu(gateways) - gateways_before);
    if let Some(e) = run.first_error {
        return Err(BenchError::new(format!("workload ({} failed): {e}", run.errors)));
    }
    let per_query = |s: f64| 1e6 * s / run.queries.max(1) as f64;
    Ok(Phase {
        rate: run.rate(),
        cpu_us: per_query(servers_cpu + gateways_cpu),
        gateway_cpu_us: per_query(gateways_cpu),
        p50_ms: quantile_ms(&mut run.latencies_us, 0.50),
        p99_ms: quantile_ms(&mut run.latencies_us, 0.99),
    })
}

/// `select 1` `n` times on one connection to `port`, logged in to `database`: every round
/// trip's latency (µs).
fn pings(port: u16, database: &str, n: usize) -> Result<Vec<u32>> {
    let spec = LoadSpec {
        port,
        user: "sa",
        password: PASSWORD,
        database,
        batches: &["select 1"],
        connections: 1,
        stop: Stop::Queries(n as u64),
        expect_rows: Some(1),
        record_latencies: true,
        rate: None,
    };
    let run = tdsload::run(&spec)?;
    match run.first_error {
        Some(e) => Err(BenchError::new(format!("select 1 on port {port}: {e}"))),
        None => Ok(run.latencies_us),
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn listed(v: &[f64]) -> String {
    v.iter().map(|&x| fmt_value(x)).collect::<Vec<_>>().join(", ")
}

/// The `q`-quantile of durations, in ms.
fn quantile_of(v: &[Duration], q: f64) -> f64 {
    let mut us: Vec<u32> = v.iter().map(|d| u32::try_from(d.as_micros()).unwrap_or(u32::MAX)).collect();
    quantile_ms(&mut us, q)
}

/// Starts the fleet and the one server, and makes and publishes the tenants.
fn start(dir: &Path, p: &FleetParams, notes: &mut Vec<String>, progress: &dyn Fn(&str)) -> Result<Fleet> {
    progress("starting etcd");
    let etcd = Etcd::start(&dir.join("etcd"))?;
    let names: Vec<String> = (1..=p.servers).map(|i| format!("s{i}")).collect();
    let mut servers = Vec::new();
    for name in &names {
        progress(&format!("starting server {name}"));
        let directory = Some((etcd.address.as_str(), name.as_str()));
        servers.push(start_server(&p.binary, dir.join(name), p.memory_mb, p.databases_per_server, directory)?.0);
    }
    wait_registered(&etcd.address, &names, procs::START_TIMEOUT)?;
    progress("starting the one server");
    let peer = start_server(&p.binary, dir.join("one"), p.memory_mb * p.servers, p.tenants(), None)?.0;
    let mut gateways = Vec::new();
    for g in 0..p.gateways {
        progress(&format!("starting gateway {}", g + 1));
        let log = dir.join(format!("gateway{}.log", g + 1));
        gateways.push(Gateway::start(&p.binary, &etcd.address, &dir.join("tls"), log)?);
    }

    progress(&format!(
        "making {} tenants on each of {} servers and all {} on the one server (copies of a template)",
        p.databases_per_server,
        p.servers,
        p.tenants()
    ));
    let made_at = Instant::now();
    let n = p.databases_per_server;
    std::thread::scope(|scope| {
        let mut work: Vec<_> = servers
            .iter()
            .enumerate()
            .map(|(i, s)| {
                scope.spawn(move || make_tenants(s, &format!("template_s{}", i + 1), i * n..(i + 1) * n, p.rows))
            })
            .collect();
        let peer = &peer;
        work.push(scope.spawn(move || make_tenants(peer, "template_one", 0..p.tenants(), p.rows)));
        work.into_iter().try_for_each(|w| w.join().map_err(|_| BenchError::new("a setup thread panicked"))?)
    })?;
    let made = made_at.elapsed().as_secs_f64();
    progress(&format!("made {} tenants in {made:.1} s; waiting for the directory to name them all", 2 * p.tenants()));
    let timeout = Duration::from_secs(60) + Duration::from_millis(20 * p.tenants() as u64);
    let published = wait_published(&etcd.address, &names, &vec![n; p.servers], timeout)?;
    notes.push(format!(
        "setup: {} tenants made in {} s ({} copies a second over the 4 servers at once, CREATE DATABASE … AS COPY OF \
         a template, 10 to a batch on 2 connections each); the directory named every fleet tenant's server {} ms \
         after the last was made",
        2 * p.tenants(),
        fmt_value(made),
        fmt_value(2.0 * p.tenants() as f64 / made.max(1e-9)),
        published.as_millis()
    ));
    Ok(Fleet { etcd, servers, names, gateways, peer })
}

/// Runs the benchmark in `dir` (its processes' directories are made there).
pub fn run(dir: &Path, p: &FleetParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    if p.servers < 2 || p.gateways == 0 || p.databases_per_server == 0 || p.connections == 0 || p.rows == 0 {
        return Err(BenchError::new(
            "the fleet needs two servers, a gateway, a tenant per server, a connection and a row",
        ));
    }
    std::fs::create_dir_all(dir.join("through"))?;
    check_free_space(dir, DISK_PER_TENANT, 2 * p.tenants(), "`--databases-per-server`")?;
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(p)?, machine);
    let mut notes = Vec::new();
    let mut failures = Vec::new();
    let fleet = start(dir, p, &mut notes, progress)?;
    let mut rng = StdRng::seed_from_u64(39);

    // The workload, through the gateways and directly to the one server, in pairs.
    let texts = mix(p);
    let batches: Vec<&str> = texts.iter().map(String::as_str).collect();
    let server_pids: Vec<u32> = fleet.servers.iter().map(Instance::pid).collect();
    let gateway_pids: Vec<u32> = fleet.gateways.iter().map(Gateway::pid).collect();
    let (mut ours, mut one) = (Vec::new(), Vec::new());
    for pair in 0..p.pairs {
        let picked: Vec<String> =
            sample(&mut rng, p.tenants(), p.connections.min(p.tenants())).into_iter().map(tenant).collect();
        let through: Vec<Target<'_>> = picked
            .iter()
            .enumerate()
            .map(|(i, d)| Target { port: fleet.gateways[i % p.gateways].port, database: d })
            .collect();
        let direct: Vec<Target<'_>> = picked.iter().map(|d| Target { port: fleet.peer.port, database: d }).collect();
        for fleet_side in if pair % 2 == 0 { [true, false] } else { [false, true] } {
            progress(&format!(
                "workload pair {}: {}, {} connections for {} s",
                pair + 1,
                if fleet_side { "through the gateways" } else { "the one server" },
                through.len(),
                p.seconds
            ));
            if fleet_side {
                ours.push(phase(&through, &batches, p.seconds, &server_pids, &gateway_pids)?);
            } else {
                one.push(phase(&direct, &batches, p.seconds, &[fleet.peer.pid()], &[])?);
            }
        }
    }
    push_workload(&mut report, p, &ours, &one);

    // Proxy latency: the same tenant, directly on its server and through a gateway.
    let (server, database) = (&fleet.servers[0], tenant(0));
    let share = p.pings.div_ceil(PING_ROUNDS);
    let (mut direct, mut gateway) = (Vec::new(), Vec::new());
    for round in 0..PING_ROUNDS {
        for through in if round % 2 == 0 { [false, true] } else { [true, false] } {
            progress(&format!(
                "proxy latency, round {} of {PING_ROUNDS}: select 1 × {share} {}",
                round + 1,
                if through { "through a gateway" } else { "direct" }
            ));
            let port = if through { fleet.gateways[0].port } else { server.port };
            (if through { &mut gateway } else { &mut direct }).extend(pings(port, &database, share)?);
        }
    }
    push_latency(&mut report, &mut direct, &mut gateway);

    // Moves under a writer.
    let mut owner: Vec<usize> = (0..p.tenants()).map(|t| t / p.databases_per_server).collect();
    let mut runs: Vec<MoveRun> = Vec::new();
    let movers = sample(&mut rng, p.tenants(), p.moves.min(p.tenants())).into_vec();
    for (i, t) in movers.into_iter().enumerate() {
        let (from, to) = (owner[t], (owner[t] + 1) % p.servers);
        let database = tenant(t);
        progress(&format!(
            "move {} of {}: {database} from {} to {} under a writer",
            i + 1,
            p.moves,
            fleet.names[from],
            fleet.names[to]
        ));
        let spec = MoveSpec {
            binary: &p.binary,
            etcd: &fleet.etcd.address,
            through: &dir.join("through"),
            database: &database,
            base: p.rows as u64,
            from: (&fleet.names[from], &fleet.servers[from]),
            to: (&fleet.names[to], &fleet.servers[to]),
            gateway: fleet.gateways[i % p.gateways].port,
        };
        match move_under_writer(&spec) {
            Ok(run) => {
                owner[t] = to;
                runs.push(run);
            }
            Err(e) if e.to_string().contains("LOST OR EXTRA WRITES") => return Err(e),
            Err(e) => {
                failures.push(format!("move {} ({database}): {e}", i + 1));
                break;
            }
        }
    }
    push_moves(&mut report, &runs);

    progress("stopping the fleet");
    let Fleet { etcd, servers, gateways, peer, .. } = fleet;
    for g in &gateways {
        notes.extend(gateway_complaints(&g.log));
    }
    drop(gateways);
    for s in servers {
        s.stop()?;
    }
    peer.stop()?;
    drop(etcd);
    report.notes.extend(notes);
    Ok(Outcome { report, failures })
}

/// What a gateway logged besides its start, if anything (the first few lines).
fn gateway_complaints(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.contains("listening on")).collect();
    (!lines.is_empty()).then(|| {
        format!(
            "{} logged {} lines, first: {}",
            log.display(),
            lines.len(),
            lines.iter().take(3).copied().collect::<Vec<_>>().join(" | ")
        )
    })
}

fn push_workload(report: &mut Report, p: &FleetParams, ours: &[Phase], one: &[Phase]) {
    let what = format!(
        "{} connections in random tenants, {} % updates: {} servers × {} tenants behind {} gateways",
        p.connections, p.update_percent, p.servers, p.databases_per_server, p.gateways
    );
    let field = |v: &[Phase], f: fn(&Phase) -> f64| v.iter().map(f).collect::<Vec<_>>();
    let rows: [(&str, &str, Figure); 3] = [
        ("throughput", "queries/s", |x| x.rate),
        ("CPU per query, servers + gateways", "µs", |x| x.cpu_us),
        ("p99 latency", "ms", |x| x.p99_ms),
    ];
    for (name, unit, f) in rows {
        let (metric, fleet, single) = (format!("{what}: {name}"), mean(&field(ours, f)), mean(&field(one, f)));
        report.push(if unit == "queries/s" {
            ResultRow::rate(metric, unit, fleet, "one server", single, 0.0)
        } else {
            ResultRow::time(metric, unit, fleet, "one server", single, 0.0)
        });
    }
    report.note(format!(
        "workload ({} pairs of {} s after {} s of warm-up, alternating; no goal: ratio 0): throughput through the gateways [{}], \
         the one server [{}] queries/s; CPU per query [{}] µs (the gateways' share [{}] µs), the one server [{}] µs; p50 [{}] µs \
         vs [{}] µs",
        p.pairs,
        p.seconds,
        WARMUP.as_secs(),
        listed(&field(ours, |x| x.rate)),
        listed(&field(one, |x| x.rate)),
        listed(&field(ours, |x| x.cpu_us)),
        listed(&field(ours, |x| x.gateway_cpu_us)),
        listed(&field(one, |x| x.cpu_us)),
        listed(&field(ours, |x| 1000.0 * x.p50_ms)),
        listed(&field(one, |x| 1000.0 * x.p50_ms)),
    ));
}

fn push_latency(report: &mut Report, direct: &mut [u32], gateway: &mut [u32]) {
    let us = |v: &mut [u32], q| 1000.0 * quantile_ms(v, q);
    let (d50, d99, g50, g99) = (us(direct, 0.5), us(direct, 0.99), us(gateway, 0.5), us(gateway, 0.99));
    let what = format!("proxy: select 1 on one connection, {} times", direct.len());
    report.push(ResultRow::time(format!("{what}: p50 through a gateway"), "µs", g50, "direct", d50, 0.0));
    report.push(ResultRow::time(format!("{what}: p99 through a gateway"), "µs", g99, "direct", d99, 0.0));
    report.push(ResultRow::own("proxy: latency a gateway adds at p50", "µs", g50 - d50, GOAL_ADDED_P50_US));
    report.note(format!(
        "proxy latency (the same tenant on server s1, {PING_ROUNDS} alternating rounds): direct p50 {} µs, p99 {} µs; through a gateway \
         p50 {} µs, p99 {} µs; added {} µs at p50 and {} µs at p99",
        fmt_value(d50),
        fmt_value(d99),
        fmt_value(g50),
        fmt_value(g99),
        fmt_value(g50 - d50),
        fmt_value(g99 - d99)
    ));
}

fn push_moves(report: &mut Report, runs: &[MoveRun]) {
    if runs.is_empty() {
        return;
    }
    let pauses: Vec<Duration> = runs.iter().map(|r| r.pause).collect();
    let gaps: Vec<Duration> = runs.iter().map(|r| r.writes.longest_gap).collect();
    let n = runs.len();
    for (q, label) in [(0.5, "p50"), (0.99, "p99")] {
        report.push(ResultRow::own(
            format!("moves ({n}): write pause tessera move reports, {label}"),
            "ms",
            quantile_of(&pauses, q),
            GOAL_MOVE_PAUSE_MS,
        ));
        report.push(ResultRow::own(
            format!("moves ({n}): writer's longest gap between acknowledged inserts, {label}"),
            "ms",
            quantile_of(&gaps, q),
            GOAL_MOVE_PAUSE_MS,
        ));
    }
    let ms = |d: Duration| d.as_millis().to_string();
    report.note(format!(
        "moves: each tenant's rows checked after its move (on the target, through a gateway): every acknowledged insert, \
         nothing more; {} inserts acknowledged in all, {} writer errors (each a reconnect); per move (pause / writer gap / \
         whole move, ms): {}",
        runs.iter().map(|r| r.writes.acknowledged).sum::<u64>(),
        runs.iter().map(|r| r.writes.errors).sum::<u64>(),
        runs.iter()
            .map(|r| format!("{} {}→{} {}/{}/{}", r.database, r.from, r.to, ms(r.pause), ms(r.writes.longest_gap), ms(r.total)))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    // Where a writer's gap was much longer than the pause the mover reported: when it began.
    let odd: Vec<String> = runs
        .iter()
        .filter(|r| r.writes.longest_gap > r.pause + Duration::from_millis(50))
        .map(|r| {
            format!(
                "{}: gap {} ms against a pause of {} ms, beginning {} ms after the mover was started (it ran {} ms \
                 as the bench saw it)",
                r.database,
                ms(r.writes.longest_gap),
                ms(r.pause),
                r.gap_offset_ms.map_or("?".to_string(), |o| o.to_string()),
                r.mover_ms
            )
        })
        .collect();
    if !odd.is_empty() {
        report.note(format!("moves whose writer waited longer than the reported pause: {}", odd.join("; ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_spreads_its_updates() {
        let p = FleetParams::full(PathBuf::new());
        let m = mix(&p);
        assert_eq!(m.len(), 100);
        assert_eq!(m.iter().filter(|b| b.contains("update")).count(), 20);
        assert!(m[..10].iter().filter(|b| b.contains("update")).count() == 2);
        let none = mix(&FleetParams { update_percent: 0, ..p });
        assert!(none.iter().all(|b| b.starts_with("select")));
    }
}
