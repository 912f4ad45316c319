//! `tessera torture`: the reliability campaigns from the command line. Exits 0 only when
//! every check held; each failure prints the seed and point that replay it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use tessera_torture::storm::{self, StormPlan};
use tessera_torture::{fault_campaign, faults, power, power_campaign, soak, Campaign};

#[derive(Debug, Parser)]
#[command(name = "tessera torture", about = "Simulated power loss at chosen points of a seeded workload, checked")]
struct Args {
    /// A few minutes on 2 cores: fewer points and shorter workloads.
    #[arg(long)]
    quick: bool,
    /// The first workload's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the runs' directories go (a temporary directory by default); a failed
    /// point's directory is kept for a look.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Power-loss points in all (default: 1,000; 60 with --quick).
    #[arg(long)]
    points: Option<usize>,
    /// Random steps per workload (default: 200; 60 with --quick).
    #[arg(long)]
    steps: Option<u32>,
    /// Replay one point: the power cut before this operation of --seed's workload.
    #[arg(long)]
    cut: Option<u64>,
    /// I/O fault points in all (default: 300; 40 with --quick; 0 skips the campaign).
    #[arg(long)]
    faults: Option<usize>,
    /// Replay one fault point: point N of --seed's workload (as a failure names it).
    #[arg(long)]
    fault: Option<u64>,
    /// Seconds of the soak: a `tessera serve` (the one beside this binary, or on PATH)
    /// killed every 1 to 3 s under 4 clients moving money over TDS (default: 60; 15 with
    /// --quick; 0 skips it).
    #[arg(long)]
    soak: Option<u64>,
    /// Seconds of each measured phase of the storm: busy clients alone, then beside idle
    /// connections and hostile clients (default: 20; 5 with --quick; 0 skips it).
    #[arg(long)]
    storm: Option<u64>,
    /// The storm's idle connections (default: 5,000; 500 with --quick).
    #[arg(long)]
    idle: Option<usize>,
    /// The storm's busy clients (default: 100; 20 with --quick).
    #[arg(long)]
    busy: Option<usize>,
    /// The storm's hostile clients of each kind (default: 10; 2 with --quick).
    #[arg(long)]
    hostile: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let temp = tempfile::Builder::new().prefix("tessera-torture-").tempdir().expect("a temporary directory");
    let dir = args.dir.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let steps = args.steps.unwrap_or(if args.quick { 60 } else { 200 });
    if let Some(cut) = args.cut {
        let point = power::run_point(&dir.join("replay"), args.seed, steps, cut);
        println!("{point:#?}");
        return if point.failure.is_none() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    if let Some(index) = args.fault {
        let root = dir.join("replay");
        let operations = match power::count_operations(&root, args.seed, steps) {
            Ok(n) => n,
            Err(e) => {
                println!("FAILED: {e}");
                return ExitCode::FAILURE;
            }
        };
        let point = faults::run_fault_point(&root, args.seed, steps, index, operations);
        println!("{point:#?}");
        return if point.failure.is_none() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    let points = args.points.unwrap_or(if args.quick { 60 } else { 1000 });
    let campaign = Campaign { seed: args.seed, steps, points, points_per_seed: if args.quick { 30 } else { 100 }, dir };
    println!("power loss: {points} points, {steps} steps per workload, seeds from {}", args.seed);
    let started = Instant::now();
    let mut done = 0;
    let seeded = |seed, operations| println!("  seed {seed}: {operations} operations");
    let report = power_campaign(&campaign, seeded, |seed, point| {
        done += 1;
        if let Some(failure) = &point.failure {
            println!(
                "FAILED seed {seed} cut {} (in {:?}, after {} steps): {failure}\n  replay: tessera torture --seed {seed} --steps {steps} --cut {}",
                point.cut, point.in_flight, point.acknowledged, point.cut
            );
        }
        if done % 20 == 0 {
            println!("  {done}/{points} points, {:.0} s", started.elapsed().as_secs_f64());
        }
    });
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            println!("FAILED: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "power loss: {} points, {} failed, in {:.0} s; unsynced writes at the cuts {} ({} torn, {} dropped); points by step: {:?}",
        report.points,
        report.failures.len(),
        started.elapsed().as_secs_f64(),
        report.unsynced_writes,
        report.torn,
        report.dropped,
        report.by_kind
    );
    let fault_points = args.faults.unwrap_or(if args.quick { 40 } else { 300 });
    let faults_ok = fault_points == 0 || run_faults(&campaign, fault_points, steps);
    let soak_seconds = args.soak.unwrap_or(if args.quick { 15 } else { 60 });
    let soak_ok = soak_seconds == 0 || run_soak(&campaign.dir, soak_seconds, args.seed);
    let storm = StormPlan {
        seconds: args.storm.unwrap_or(if args.quick { 5 } else { 20 }),
        idle: args.idle.unwrap_or(if args.quick { 500 } else { 5000 }),
        busy: args.busy.unwrap_or(if args.quick { 20 } else { 100 }),
        hostile: args.hostile.unwrap_or(if args.quick { 2 } else { 10 }),
        seed: args.seed,
    };
    let storm_ok = storm.seconds == 0 || run_storm(&campaign.dir, &storm);
    if report.failures.is_empty() && faults_ok && soak_ok && storm_ok {
        ExitCode::SUCCESS
    } else {
        // Keep the failed points' directories.
        let _ = temp.keep();
        ExitCode::FAILURE
    }
}

/// The I/O fault campaign: whether every point held.
fn run_faults(campaign: &Campaign, points: usize, steps: u32) -> bool {
    println!("I/O faults: {points} points, {steps} steps per workload, seeds from {}", campaign.seed);
    let started = Instant::now();
    let mut done = 0;
    let campaign = Campaign { points, points_per_seed: 50.min(points), ..campaign.clone() };
    let report = fault_campaign(&campaign, |seed, index, point| {
        done += 1;
        if let Some(failure) = &point.failure {
            println!(
                "FAILED seed {seed} fault {:?} (step {:?} after {} steps): {failure}\n  replay: tessera torture --seed {seed} --steps {steps} --fault {}",
                point.armed,
                point.failed,
                point.acknowledged,
                index
            );
        }
        if done % 20 == 0 {
            println!("  {done}/{points} points, {:.0} s", started.elapsed().as_secs_f64());
        }
    });
    match report {
        Ok(report) => {
            println!(
                "I/O faults: {} points, {} failed, in {:.0} s; by fault: {:#?}",
                report.points,
                report.failures.len(),
                started.elapsed().as_secs_f64(),
                report.by_kind
            );
            report.failures.is_empty()
        }
        Err(e) => {
            println!("FAILED: {e}");
            false
        }
    }
}

/// The `tessera` server binary: the one beside this one, or on PATH.
fn server_binary() -> PathBuf {
    std::env::current_exe()
        .map(|exe| exe.with_file_name("tessera"))
        .ok()
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("tessera"))
}

/// The storm: whether every check held. Prints the busy clients' latencies alone and
/// under the storm, their p99 ratio, the server's memory and each hostile kind's outcomes.
fn run_storm(dir: &std::path::Path, plan: &StormPlan) -> bool {
    let server = server_binary();
    println!(
        "storm: {} idle connections, {} busy clients, {} hostile clients of each kind (an attempt each every {} ms), {} s per phase ({})",
        plan.idle,
        plan.busy,
        plan.hostile,
        storm::HOSTILE_PACE.as_millis(),
        plan.seconds,
        server.display()
    );
    let r = match storm::storm(&server, dir, plan) {
        Ok(r) => r,
        Err(e) => {
            println!("FAILED storm (seed {}): {e}", plan.seed);
            return false;
        }
    };
    let latency = |name: &str, l: &storm::Latency| {
        println!(
            "  busy clients {name}: {} requests, p50 {} us, p99 {} us, max {} us; CPU: server {:.1} s, clients {:.1} s",
            l.requests, l.p50_us, l.p99_us, l.max_us, l.server_cpu_seconds, l.clients_cpu_seconds
        )
    };
    latency("alone", &r.alone);
    latency("in the storm", &r.storm);
    println!("  p99 in the storm / alone: {:.2}", r.p99_ratio());
    println!(
        "  {} idle connections logged in in {:.1} s, {:.0} KiB each",
        r.idle_held,
        r.idle_login_seconds,
        r.kib_per_idle_connection()
    );
    for (stage, m) in [
        ("start", r.memory_start),
        ("half the idle connections open", r.memory_half),
        ("all idle connections open", r.memory_idle),
        ("the storm's end", r.memory_storm),
    ] {
        println!(
            "  memory at {stage}: resident {} MiB (peak {} MiB), the server reports {} MiB",
            m.resident_kib >> 10,
            m.peak_kib >> 10,
            m.reported_kib >> 10
        );
    }
    for (kind, h) in &r.hostile {
        println!("  {kind}: {} attempts, {:?}", h.attempts, h.outcomes);
    }
    for f in &r.failures {
        println!("FAILED storm (seed {}): {f}", plan.seed);
    }
    r.failures.is_empty()
}

/// The soak: whether every check after every kill held.
fn run_soak(dir: &std::path::Path, seconds: u64, seed: u64) -> bool {
    let server = server_binary();
    println!("soak: {seconds} s, 4 clients, the server killed every 1 to 3 s ({})", server.display());
    match soak::soak(&server, dir, seconds, 4, seed) {
        Ok(r) => {
            println!(
                "soak: {:.0} s, {} kills, {} checks held; {} transfers acknowledged, {} in doubt at a kill",
                r.seconds, r.kills, r.checks, r.acknowledged, r.in_doubt
            );
            true
        }
        Err(e) => {
            println!("FAILED soak (seed {seed}): {e}");
            false
        }
    }
}
