//! `tessera iobench`: the diskspd-style disk benchmark, and `tessera bench iobench`, which runs
//! it next to fio on the seed 001 and 004 patterns and reports the ratios.
//!
//! diskspd glues values to flag letters (`-b8K -o32`), which clap cannot parse: the subcommand
//! takes its arguments raw and hands them to `tessera_iobench::parser`.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use tessera_bench::{BenchError, Machine, Report, ResultRow};
use tessera_iobench::fio::{self, FioResult};
use tessera_iobench::params::fmt_size;
use tessera_iobench::stats::Latency;
use tessera_iobench::{chart, parse, report, run, Access, EngineChoice, EngineKind, Event, Params, Parsed, RunResult};

use crate::bench_cmd::CommonArgs;

/// Runs shorter than this (warm-up + duration + cool-down, seconds) print no progress line.
const PROGRESS_AFTER_S: f64 = 5.0;

#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct IobenchArgs {
    /// diskspd-style flags and targets, e.g. -b8K -d30 -t1 -o32 -r -w40 -L -c1G test.dat
    /// (run `tessera iobench --help` for the list)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., value_name = "FLAGS AND TARGETS")]
    pub args: Vec<String>,
}

/// `tessera iobench …`.
pub fn run_iobench(args: IobenchArgs) -> ExitCode {
    let params = match parse(&args.args) {
        Ok(Parsed::Help) => {
            let _ = std::io::stdout().write_all(tessera_iobench::parser::USAGE.as_bytes());
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Run(p)) => *p,
        Err(e) => {
            eprintln!("tessera iobench: {e}");
            return ExitCode::from(2);
        }
    };
    let total = params.warmup + params.duration + params.cooldown;
    let mut line = ProgressLine::new(!params.quiet && total >= PROGRESS_AFTER_S);
    let result = run(&params, &mut |event| match event {
        Event::Note(msg) => line.note(&msg),
        Event::Tick(p) => line.tick(&format!(
            "{} {:>3.0}/{:.0} s  {:>10.0} IOPS  {:>9.1} MiB/s",
            p.phase, p.elapsed, p.length, p.iops, p.mib_per_s
        )),
    });
    line.finish();
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tessera iobench: {e}");
            return ExitCode::FAILURE;
        }
    };
    {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        // A closed stdout (a pipe into `head`) is not worth a panic.
        let _ = if params.json {
            writeln!(out, "{}", report::to_json(&result))
        } else {
            report::write_text(&result, &mut out)
        };
    }
    if let Some(path) = &params.chart {
        match chart::draw(&result, path) {
            Ok(()) => eprintln!("[iobench] latency chart written to {}", path.display()),
            Err(e) => {
                eprintln!("tessera iobench: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The progress line on stderr: rewritten in place on a terminal, a line every ten ticks
/// otherwise.
struct ProgressLine {
    enabled: bool,
    tty: bool,
    dirty: bool,
    ticks: u64,
}

impl ProgressLine {
    fn new(enabled: bool) -> ProgressLine {
        ProgressLine { enabled, tty: std::io::stderr().is_terminal(), dirty: false, ticks: 0 }
    }

    fn note(&mut self, msg: &str) {
        self.finish();
        eprintln!("[iobench] {msg}");
    }

    fn tick(&mut self, msg: &str) {
        if !self.enabled {
            return;
        }
        self.ticks += 1;
        if self.tty {
            eprint!("\r\x1b[2K[iobench] {msg}");
            let _ = std::io::stderr().flush();
            self.dirty = true;
        } else if self.ticks.is_multiple_of(10) {
            eprintln!("[iobench] {msg}");
        }
    }

    fn finish(&mut self) {
        if self.dirty {
            eprintln!();
            self.dirty = false;
        }
    }
}

/// `tessera bench iobench`: the flags of every benchmark plus the run's knobs.
#[derive(Debug, Args)]
pub struct IobenchBenchArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Measured seconds of each run (each tool runs twice per round) [default: 2.5; 2 with --quick].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Warm-up seconds before each run's measured part [default: 0.5].
    #[arg(long, value_name = "SECONDS")]
    pub warmup: Option<f64>,
    /// Size of the test file, e.g. 4G [default: 4G; 1G with --quick].
    #[arg(long, value_name = "SIZE")]
    pub file_size: Option<String>,
    /// Our engine: uring (compared with fio's io_uring) or threads (compared with fio's psync,
    /// one job per outstanding I/O).
    #[arg(long, default_value = "uring", value_name = "ENGINE")]
    pub engine: String,
    /// Rounds per pattern: each round runs both orders back to back (tessera then fio, fio
    /// then tessera); a round's ratio is the geometric mean of its two pairs' ratios, so an
    /// effect of going first or second cancels; the report gives each side's median and the
    /// median of the rounds' ratios (the disk of a VM drifts by 10-20 % within seconds)
    /// [default: 6; 1 with --quick].
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Run only the patterns whose name contains this text (e.g. "b16k").
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// A control run: fio takes tessera's place, so the report compares fio with itself under
    /// the same rounds and pooling. Its ratios show how far two identical runs differ on this
    /// disk, the finest difference the comparison can resolve here.
    #[arg(long)]
    pub control: bool,
}

/// One workload of the benchmark.
struct Pattern {
    /// "b4k t1 o32 70% read".
    name: &'static str,
    /// diskspd-style flags.
    flags: &'static str,
}

/// Seed 001's VMFleet patterns (t1 o32, 4 KiB and 16 KiB random at 100/90/70 % read; 2 MiB
/// sequential) and seed 004's diskspd command, the last one (8 KiB random, 40 % writes, no
/// caching and write-through, 1 GiB random write buffer, diskspd's default 2 outstanding I/Os).
const PATTERNS: &[Pattern] = &[
    Pattern { name: "b4k t1 o32 100% read", flags: "--pattern t1,o32,b4k --read 100 -Su" },
    Pattern { name: "b4k t1 o32 90% read", flags: "--pattern t1,o32,b4k --read 90 -Su" },
    Pattern { name: "b4k t1 o32 70% read", flags: "--pattern t1,o32,b4k --read 70 -Su" },
    Pattern { name: "b16k t1 o32 100% read", flags: "--pattern t1,o32,b16k --read 100 -Su" },
    Pattern { name: "b16k t1 o32 90% read", flags: "--pattern t1,o32,b16k --read 90 -Su" },
    Pattern { name: "b16k t1 o32 70% read", flags: "--pattern t1,o32,b16k --read 70 -Su" },
    Pattern { name: "b2m t1 o8 sequential read", flags: "--pattern t1,o8,b2m,s --read 100 -Su" },
    Pattern { name: "b8k t1 o2 60% read -Sh", flags: "-b8K -t1 -o2 -r -w40 -h -L -Z1G" },
];

/// One run's rates, tessera's or fio's.
#[derive(Debug, Clone, Default)]
struct Side {
    iops: f64,
    mib_per_s: f64,
    cpu_pct: f64,
}

impl Side {
    fn ours(r: &RunResult) -> Side {
        Side {
            iops: r.total.total.iops,
            mib_per_s: r.total.total.mib_per_s,
            cpu_pct: r.cpu.process_user_pct + r.cpu.process_sys_pct,
        }
    }

    fn fio(r: &FioResult) -> Side {
        Side { iops: r.iops(), mib_per_s: r.mib_per_s(), cpu_pct: r.usr_cpu + r.sys_cpu }
    }

    /// The median of each figure over `sides`.
    fn median(sides: &[Side]) -> Side {
        let med = |f: &dyn Fn(&Side) -> f64| median_of(sides.iter().map(f).collect()).unwrap_or(0.0);
        Side { iops: med(&|s| s.iops), mib_per_s: med(&|s| s.mib_per_s), cpu_pct: med(&|s| s.cpu_pct) }
    }
}

/// Everything one tool measured on one pattern: each run's rates, in run order, and every
/// latency of all its runs merged. Latency figures are percentiles of these pooled
/// histograms: a single run's p99 moves with whatever the device did during its few
/// seconds, while the pool spreads that over all of the tool's runs, which alternate with
/// the other tool's.
#[derive(Debug, Clone, Default)]
struct Measured {
    runs: Vec<Side>,
    read: Latency,
    write: Latency,
}

impl Measured {
    fn add_ours(&mut self, r: &RunResult) {
        self.runs.push(Side::ours(r));
        self.read.merge(&r.stats.read);
        self.write.merge(&r.stats.write);
    }

    fn add_fio(&mut self, r: &FioResult) {
        self.runs.push(Side::fio(r));
        for (dir, pool) in [(&r.read, &mut self.read), (&r.write, &mut self.write)] {
            if let Some(h) = &dir.latency {
                pool.merge(h);
            }
        }
    }

    fn latency(&self, write: bool) -> &Latency {
        if write {
            &self.write
        } else {
            &self.read
        }
    }
}

/// What a figure compared with fio is taken from.
#[derive(Clone, Copy)]
enum Figure {
    /// A rate of each run (more is better), compared pair by pair.
    Rate(fn(&Side) -> f64),
    /// A percentile of the pooled latencies of reads or writes (less is better).
    Latency { write: bool, quantile: f64 },
}

/// One figure compared with fio.
struct Metric {
    /// Appended to the pattern's name: "IOPS", "read p99 latency".
    name: &'static str,
    unit: &'static str,
    sequential_only: bool,
    figure: Figure,
}

const fn latency(name: &'static str, write: bool, quantile: f64) -> Metric {
    Metric { name, unit: "µs", sequential_only: false, figure: Figure::Latency { write, quantile } }
}

const METRICS: &[Metric] = &[
    Metric { name: "IOPS", unit: "IOPS", sequential_only: false, figure: Figure::Rate(|s| s.iops) },
    Metric { name: "throughput", unit: "MiB/s", sequential_only: true, figure: Figure::Rate(|s| s.mib_per_s) },
    latency("read p50 latency", false, 0.50),
    latency("read p99 latency", false, 0.99),
    latency("write p50 latency", true, 0.50),
    latency("write p99 latency", true, 0.99),
];

fn median_of(mut v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| tessera_bench::machine::median(&mut v))
}

/// Runs per round and tool: one pair with each tool first.
const PAIRS_PER_ROUND: usize = 2;

/// The ratio of one pair's rates (tessera's run and fio's, back to back): ours / fio, so
/// above 1 is better; `None` when either is zero.
fn pair_ratio(rate: fn(&Side) -> f64, ours: &Side, theirs: &Side) -> Option<f64> {
    let (a, b) = (rate(ours), rate(theirs));
    (a > 0.0 && b > 0.0).then(|| a / b)
}

/// The geometric mean of `v` (`None` when empty).
fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Each round's ratio: the geometric mean of its pairs' ratios. `ours[i]` and `theirs[i]` ran
/// back to back, and the pairs of a round (consecutive, [`PAIRS_PER_ROUND`] of them) put each
/// tool first once, so whatever the device does to the first or the second run of a pair
/// enters every round once each way and cancels.
fn round_ratios(rate: fn(&Side) -> f64, ours: &[Side], theirs: &[Side]) -> Vec<f64> {
    let pairs: Vec<Option<f64>> = ours.iter().zip(theirs).map(|(a, b)| pair_ratio(rate, a, b)).collect();
    pairs
        .chunks(PAIRS_PER_ROUND)
        .filter_map(|round| geomean(&round.iter().flatten().copied().collect::<Vec<_>>()))
        .collect()
}

/// The row for `metric`. A rate: our median and fio's over every run, and the median of the
/// rounds' ratios (each pair ran both tools back to back, so its ratio is free of the drift
/// between pairs; each round has both orders). A latency: the percentile of each tool's
/// pooled histogram, and fio's / ours. `None` when either side has no such figure (no
/// writes, say).
fn compared_row(pattern: &str, metric: &Metric, ours: &Measured, theirs: &Measured) -> Option<ResultRow> {
    let name = format!("{pattern}: {}", metric.name);
    match metric.figure {
        Figure::Rate(rate) => {
            let med = |m: &Measured| median_of(m.runs.iter().map(rate).collect());
            let ratio = median_of(round_ratios(rate, &ours.runs, &theirs.runs))?;
            let mut row = ResultRow::rate(name, metric.unit, med(ours)?, "fio", med(theirs)?, GOAL);
            row.ratio = Some(ratio);
            Some(row)
        }
        Figure::Latency { write, quantile } => {
            let us = |m: &Measured| {
                let h = m.latency(write);
                (!h.is_empty()).then(|| h.quantile_ns(quantile) as f64 / 1000.0)
            };
            let (a, b) = (us(ours)?, us(theirs)?);
            let mut row = ResultRow::time(name, metric.unit, a, "fio", b, GOAL);
            row.ratio = (a > 0.0).then(|| b / a);
            Some(row)
        }
    }
}

/// The note showing each round's IOPS ratio with tessera first and with fio first, their
/// geometric mean (the round's ratio), and how much going first changed the ratio.
fn order_note(pattern: &str, ours: &[Side], theirs: &[Side], ours_first: &[bool]) -> String {
    let iops: fn(&Side) -> f64 = |s| s.iops;
    let mut rounds = Vec::new();
    let mut effects = Vec::new();
    for ((o, t), f) in
        ours.chunks(PAIRS_PER_ROUND).zip(theirs.chunks(PAIRS_PER_ROUND)).zip(ours_first.chunks(PAIRS_PER_ROUND))
    {
        let pair = |want: bool| f.iter().position(|&x| x == want).and_then(|i| pair_ratio(iops, &o[i], &t[i]));
        match (pair(true), pair(false)) {
            (Some(a), Some(b)) => {
                rounds.push(format!("{a:.2}/{b:.2}→{:.2}", (a * b).sqrt()));
                effects.push(a / b);
            }
            _ => rounds.push("—".to_string()),
        }
    }
    let effect = median_of(effects).map_or_else(|| "—".to_string(), |e| format!("{e:.2}"));
    format!(
        "{pattern}: IOPS ratio of each round, tessera first / fio first → geometric mean: {}; ratio with tessera \
         first ÷ ratio with fio first, median: {effect} (1 = no order effect)",
        rounds.join(" ")
    )
}

/// The band the issue asks for: within ±10 % of fio.
const GOAL: f64 = 0.9;
const BAND_HIGH: f64 = 1.1;

/// `tessera bench iobench`, in the work directory `dir`.
pub fn bench(
    dir: &Path,
    args: &IobenchBenchArgs,
    progress: &dyn Fn(&str),
) -> tessera_bench::Result<(Report, Vec<String>)> {
    let quick = args.common.quick;
    let duration = args.duration.unwrap_or(if quick { 2.0 } else { 2.5 });
    let warmup = args.warmup.unwrap_or(0.5);
    let file_size = match &args.file_size {
        Some(s) => {
            tessera_iobench::parser::parse_size(s, 1).map_err(|e| BenchError::new(format!("--file-size: {e}")))?
        }
        None => (if quick { 1u64 } else { 4 }) << 30,
    };
    if !(duration > 0.0 && warmup >= 0.0) {
        return Err(BenchError::new("--duration must be above 0 and --warmup at least 0"));
    }
    let engine = match EngineChoice::parse(&args.engine) {
        Some(EngineChoice::Threads) => EngineKind::Threads,
        Some(EngineChoice::Uring) | Some(EngineChoice::Auto) => EngineKind::Uring,
        None => return Err(BenchError::new(format!("--engine: unknown engine '{}'", args.engine))),
    };
    let repeat = args.repeat.unwrap_or(if quick { 1 } else { 6 }).max(1);
    let fio_version = fio::version().ok_or_else(|| {
        BenchError::new(
            "fio is not installed: install it (Debian/Ubuntu: apt-get install -y fio) or run \
             scripts/bench-iobench.sh, which does",
        )
    })?;
    progress(&format!("{fio_version}; measuring the machine"));
    let machine = Machine::detect(dir)?;
    let file = dir.join("iobench.dat");
    let base_flags = |flags: &str, seed_from_clock: bool| -> Result<Params, BenchError> {
        let mut v: Vec<String> = flags.split_whitespace().map(String::from).collect();
        v.extend([
            format!("-d{duration}"),
            format!("-W{warmup}"),
            format!("-c{file_size}"),
            "--quiet".to_string(),
            format!("--engine={}", if engine == EngineKind::Uring { "uring" } else { "threads" }),
        ]);
        if seed_from_clock {
            v.push("-z".to_string());
        }
        v.push(file.display().to_string());
        match parse(&v) {
            Ok(Parsed::Run(p)) => Ok(*p),
            Ok(Parsed::Help) => Err(BenchError::new("unexpected help request")),
            Err(e) => Err(BenchError::new(e.to_string())),
        }
    };
    // Create and fill the file once, before any timing.
    progress(&format!("creating {} ({}) filled with random data", file.display(), fmt_size(file_size)));
    let prep = base_flags("-b4K", false)?;
    tessera_iobench::target::prepare(&prep, &mut |m| progress(m)).map_err(|e| BenchError::new(e.to_string()))?;

    let mut report = Report::new(
        "iobench",
        serde_json::json!({
            "file_size": file_size,
            "duration_s": duration,
            "warmup_s": warmup,
            "engine": engine.name(),
            "fio_engine": if engine == EngineKind::Uring { "io_uring (iodepth = o, numjobs = t)" } else { "psync (numjobs = t × o)" },
            "repeat": repeat,
            "pairs_per_round": PAIRS_PER_ROUND,
            "control": args.control,
            "fio": fio_version,
            "patterns": PATTERNS.iter().map(|p| serde_json::json!({"name": p.name, "flags": p.flags})).collect::<Vec<_>>(),
        }),
        machine,
    );
    let mut failures = Vec::new();
    let mut out_of_band = Vec::new();
    let us = if args.control { "fio (control, in tessera's place)" } else { "tessera" };
    if args.control {
        report.note(
            "CONTROL RUN: fio ran in tessera's place; every ratio compares fio with itself and shows how far two \
             identical runs differ on this disk",
        );
    }
    let chosen: Vec<&Pattern> =
        PATTERNS.iter().filter(|p| args.only.as_deref().is_none_or(|only| p.name.contains(only))).collect();
    if chosen.is_empty() {
        return Err(BenchError::new(format!(
            "--only {}: no pattern matches (patterns: {})",
            args.only.as_deref().unwrap_or(""),
            PATTERNS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        )));
    }
    for pattern in chosen {
        let params = base_flags(pattern.flags, true)?;
        let (start, end) = params.range(file_size);
        let job = match fio::job_args(&params, &file, start, end, engine) {
            Ok(job) => job,
            Err(e) => {
                failures.push(format!("{}: {e}", pattern.name));
                continue;
            }
        };
        // An unmeasured run first, so the change from the previous pattern (a host still
        // writing back, a cold cache) does not land on whichever tool goes first.
        let mut settle = params.clone();
        settle.duration = warmup + 1.0;
        settle.warmup = 0.0;
        if let Err(e) = run(&settle, &mut |_| {}) {
            let f = format!("{}: tessera iobench: {e}", pattern.name);
            progress(&f);
            failures.push(f);
            continue;
        }
        // Pair i is ours[i] and theirs[i], run back to back; `ours_first[i]` says which went
        // first. A round is two pairs, one in each order: even rounds run tessera, fio, fio,
        // tessera, odd rounds the mirror image, so neither tool always follows the same one.
        let (mut ours, mut theirs) = (Measured::default(), Measured::default());
        let mut ours_first = Vec::new();
        let mut failed = None;
        'rounds: for round in 0..repeat {
            let orders = if round % 2 == 0 { [true, false] } else { [false, true] };
            for first in orders {
                for is_ours in [first, !first] {
                    let outcome = if is_ours && !args.control {
                        run(&params, &mut |_| {})
                            .map(|r| ours.add_ours(&r))
                            .map_err(|e| format!("{}: tessera iobench: {e}", pattern.name))
                    } else {
                        let tool = if is_ours { &mut ours } else { &mut theirs };
                        fio::run(&job).map(|r| tool.add_fio(&r)).map_err(|e| format!("{}: {e}", pattern.name))
                    };
                    if let Err(f) = outcome {
                        failed = Some(f);
                        break 'rounds;
                    }
                }
                ours_first.push(first);
            }
        }
        if let Some(f) = failed {
            progress(&f);
            failures.push(f);
            continue;
        }
        let (med_ours, med_theirs) = (Side::median(&ours.runs), Side::median(&theirs.runs));
        progress(&format!(
            "{}: {us} {:.0} IOPS ({:.1} MiB/s), fio {:.0} IOPS ({:.1} MiB/s)",
            pattern.name, med_ours.iops, med_ours.mib_per_s, med_theirs.iops, med_theirs.mib_per_s
        ));
        let sequential = matches!(params.access, Access::Sequential { .. });
        let mut rows = Vec::new();
        for metric in METRICS {
            if metric.sequential_only && !sequential {
                continue;
            }
            if let Some(row) = compared_row(pattern.name, metric, &ours, &theirs) {
                rows.push(row);
            }
        }
        for row in rows {
            if row.ratio.is_some_and(|r| r > BAND_HIGH) {
                out_of_band.push(format!("{} ({:.2})", row.metric, row.ratio.unwrap_or(0.0)));
            }
            report.push(row);
        }
        report.note(order_note(pattern.name, &ours.runs, &theirs.runs, &ours_first));
        if engine == EngineKind::Uring && params.threads_per_target == 1 {
            // One fio job: its usr_cpu + sys_cpu is that job's CPU, comparable with ours.
            report.note(format!(
                "{}: CPU {us} {:.0}% vs fio {:.0}% of one core",
                pattern.name, med_ours.cpu_pct, med_theirs.cpu_pct
            ));
        }
    }
    report.note(format!(
        "goal: every figure within ±10 % of fio's (ratio 0.90 to 1.10); the table's goal column checks the lower \
         bound; above the band: {}",
        if out_of_band.is_empty() { "none".to_string() } else { out_of_band.join(", ") }
    ));
    report.note("latency is total latency (fio's lat_ns: from handing the request over to seeing its completion)");
    report.note(format!(
        "same file ({}, filled with random data), same run; per pattern an unmeasured settling run, then {repeat} \
         round(s); a round is two pairs of back-to-back runs, tessera then fio and fio then tessera, each run \
         {duration} s measured after {warmup} s warm-up; IOPS and MiB/s are medians over all runs, a round's ratio \
         is the geometric mean of its two pairs' ratios (an order effect cancels) and each ratio is the median of \
         the rounds' ratios; latencies are percentiles of each tool's latencies pooled over all its runs of the \
         pattern (fio's from its json+ histogram bins); the last pattern is seed 004's diskspd -b8K -t1 -r -w40 -Sh -L -Z1G",
        fmt_size(file_size),
    ));
    Ok((report, failures))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(iops: f64) -> Side {
        Side { iops, mib_per_s: iops / 256.0, cpu_pct: 0.0 }
    }

    #[test]
    fn rates_are_paired_by_round() {
        // Two rounds of two pairs; the device doubles its speed between rounds, and in round 0 the
        // second run of a pair gets 20 % more IOPS: each round's ratio is the geometric mean of
        // its pairs, which cancels the order effect.
        let ours = Measured { runs: vec![side(100.0), side(120.0), side(200.0), side(210.0)], ..Measured::default() };
        let fio = Measured { runs: vec![side(120.0), side(100.0), side(190.0), side(200.0)], ..Measured::default() };
        let iops = compared_row("p", &METRICS[0], &ours, &fio).unwrap();
        assert_eq!((iops.ours, iops.peer_value), (160.0, Some(155.0)));
        let round0 = 1.0; // sqrt(100/120 × 120/100)
        let round1 = (200.0_f64 / 190.0 * 210.0 / 200.0).sqrt();
        assert!((iops.ratio.unwrap() - (round0 + round1) / 2.0).abs() < 1e-12);
        assert_eq!(iops.metric, "p: IOPS");
        // The note pairs each round's orders whichever ran first.
        let note = order_note("p", &ours.runs, &fio.runs, &[true, false, false, true]);
        assert!(note.contains("0.83/1.20→1.00 1.05/1.05→1.05"), "{note}");
        assert!(note.contains("median: 0.85"), "{note}");
    }

    #[test]
    fn latencies_are_percentiles_of_pooled_runs() {
        // Two runs each. Our second run hit a stall (its p99 alone would be 5 ms); pooled with
        // the first, 1 % of all our reads are slow, so the pooled p99 is still the fast value.
        let mut ours = Measured::default();
        let mut fio = Measured::default();
        for (tool, fast, slow) in [(&mut ours, 100_000, [0, 150]), (&mut fio, 110_000, [50, 50])] {
            for slow_ios in slow {
                let mut run = Latency::new();
                run.record_ns_n(fast, 10_000 - slow_ios);
                run.record_ns_n(5_000_000, slow_ios);
                tool.read.merge(&run);
                tool.runs.push(side(1.0));
            }
        }
        let p99 = compared_row("p", &METRICS[3], &ours, &fio).unwrap();
        assert_eq!(p99.unit, "µs");
        assert!((p99.ours - 100.0).abs() < 0.1 && (p99.peer_value.unwrap() - 110.0).abs() < 0.1, "{p99:?}");
        assert!((p99.ratio.unwrap() - 1.1).abs() < 0.002, "fio / ours");
        // No writes on either side: no row.
        assert!(compared_row("p", &METRICS[5], &ours, &fio).is_none());
    }

    #[test]
    fn every_pattern_parses() {
        for p in PATTERNS {
            let mut v: Vec<&str> = p.flags.split_whitespace().collect();
            v.push("f.dat");
            assert!(matches!(parse(&v), Ok(Parsed::Run(_))), "{}", p.flags);
        }
    }
}
