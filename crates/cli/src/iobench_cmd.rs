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
use tessera_iobench::stats::LatencySummary;
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
    /// Measured seconds per pattern, tool and round [default: 2.5; 2 with --quick].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Warm-up seconds per pattern, tool and round [default: 0.5].
    #[arg(long, value_name = "SECONDS")]
    pub warmup: Option<f64>,
    /// Size of the test file, e.g. 4G [default: 4G; 1G with --quick].
    #[arg(long, value_name = "SIZE")]
    pub file_size: Option<String>,
    /// Our engine: uring (compared with fio's io_uring) or threads (compared with fio's psync,
    /// one job per outstanding I/O).
    #[arg(long, default_value = "uring", value_name = "ENGINE")]
    pub engine: String,
    /// Rounds per pattern: each round runs both tools back to back, alternating which goes
    /// first; the report gives each side's median and the median of the rounds' ratios (the
    /// disk of a VM drifts by 10-20 % within seconds) [default: 6; 1 with --quick].
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Run only the patterns whose name contains this text (e.g. "b16k").
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
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

/// Our figures or fio's for one pattern (medians over repeats).
#[derive(Debug, Clone, Default)]
struct Side {
    iops: f64,
    mib_per_s: f64,
    read: Option<(f64, f64)>,
    write: Option<(f64, f64)>,
    cpu_pct: f64,
}

fn p50_p99(l: Option<LatencySummary>) -> Option<(f64, f64)> {
    l.map(|l| (l.p50, l.p99))
}

impl Side {
    fn ours(r: &RunResult) -> Side {
        Side {
            iops: r.total.total.iops,
            mib_per_s: r.total.total.mib_per_s,
            read: p50_p99(r.total.read.latency_us),
            write: p50_p99(r.total.write.latency_us),
            cpu_pct: r.cpu.process_user_pct + r.cpu.process_sys_pct,
        }
    }

    fn fio(r: &FioResult) -> Side {
        Side {
            iops: r.iops(),
            mib_per_s: r.mib_per_s(),
            read: p50_p99(r.read.latency_us),
            write: p50_p99(r.write.latency_us),
            cpu_pct: r.usr_cpu + r.sys_cpu,
        }
    }

    /// The median of each figure over `sides`.
    fn median(sides: &[Side]) -> Side {
        let med = |f: &dyn Fn(&Side) -> Option<f64>| -> Option<f64> {
            let mut v: Vec<f64> = sides.iter().filter_map(f).collect();
            (!v.is_empty()).then(|| tessera_bench::machine::median(&mut v))
        };
        let pair = |f: &dyn Fn(&Side) -> Option<(f64, f64)>| -> Option<(f64, f64)> {
            Some((med(&|s| f(s).map(|p| p.0))?, med(&|s| f(s).map(|p| p.1))?))
        };
        Side {
            iops: med(&|s| Some(s.iops)).unwrap_or(0.0),
            mib_per_s: med(&|s| Some(s.mib_per_s)).unwrap_or(0.0),
            read: pair(&|s| s.read),
            write: pair(&|s| s.write),
            cpu_pct: med(&|s| Some(s.cpu_pct)).unwrap_or(0.0),
        }
    }
}

/// One figure compared with fio.
struct Metric {
    /// Appended to the pattern's name: "IOPS", "read p99 latency".
    name: &'static str,
    unit: &'static str,
    /// A rate (more is better) or a latency (less is better).
    rate: bool,
    sequential_only: bool,
    get: fn(&Side) -> Option<f64>,
}

const METRICS: &[Metric] = &[
    Metric { name: "IOPS", unit: "IOPS", rate: true, sequential_only: false, get: |s| Some(s.iops) },
    Metric { name: "throughput", unit: "MiB/s", rate: true, sequential_only: true, get: |s| Some(s.mib_per_s) },
    Metric { name: "read p50 latency", unit: "µs", rate: false, sequential_only: false, get: |s| s.read.map(|l| l.0) },
    Metric { name: "read p99 latency", unit: "µs", rate: false, sequential_only: false, get: |s| s.read.map(|l| l.1) },
    Metric {
        name: "write p50 latency",
        unit: "µs",
        rate: false,
        sequential_only: false,
        get: |s| s.write.map(|l| l.0),
    },
    Metric {
        name: "write p99 latency",
        unit: "µs",
        rate: false,
        sequential_only: false,
        get: |s| s.write.map(|l| l.1),
    },
];

fn median_of(mut v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| tessera_bench::machine::median(&mut v))
}

/// The row for `metric`: our median, fio's median, and the median of the per-round ratios
/// (each round ran both tools back to back, so a round's ratio is free of the drift between
/// rounds). `None` when either side has no such figure (no writes, say).
fn paired_row(pattern: &str, metric: &Metric, ours: &[Side], theirs: &[Side]) -> Option<ResultRow> {
    let o: Vec<f64> = ours.iter().filter_map(metric.get).collect();
    let t: Vec<f64> = theirs.iter().filter_map(metric.get).collect();
    let ratios: Vec<f64> = ours
        .iter()
        .zip(theirs)
        .filter_map(|(a, b)| {
            let (a, b) = ((metric.get)(a)?, (metric.get)(b)?);
            let (num, den) = if metric.rate { (a, b) } else { (b, a) };
            (den > 0.0).then(|| num / den)
        })
        .collect();
    let (ours_med, theirs_med, ratio) = (median_of(o)?, median_of(t)?, median_of(ratios)?);
    let name = format!("{pattern}: {}", metric.name);
    let mut row = if metric.rate {
        ResultRow::rate(name, metric.unit, ours_med, "fio", theirs_med, GOAL)
    } else {
        ResultRow::time(name, metric.unit, ours_med, "fio", theirs_med, GOAL)
    };
    row.ratio = Some(ratio);
    Some(row)
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
            "fio": fio_version,
            "patterns": PATTERNS.iter().map(|p| serde_json::json!({"name": p.name, "flags": p.flags})).collect::<Vec<_>>(),
        }),
        machine,
    );
    let mut failures = Vec::new();
    let mut out_of_band = Vec::new();
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
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let mut failed = None;
        for round in 0..repeat {
            // Alternate which tool goes first so drift in the device favours neither.
            let order = if round % 2 == 0 { [true, false] } else { [false, true] };
            for is_ours in order {
                if is_ours {
                    match run(&params, &mut |_| {}) {
                        Ok(r) => ours.push(Side::ours(&r)),
                        Err(e) => failed = Some(format!("{}: tessera iobench: {e}", pattern.name)),
                    }
                } else {
                    match fio::run(&job) {
                        Ok(r) => theirs.push(Side::fio(&r)),
                        Err(e) => failed = Some(format!("{}: {e}", pattern.name)),
                    }
                }
                if failed.is_some() {
                    break;
                }
            }
            if failed.is_some() {
                break;
            }
        }
        if let Some(f) = failed {
            progress(&f);
            failures.push(f);
            continue;
        }
        let (med_ours, med_theirs) = (Side::median(&ours), Side::median(&theirs));
        progress(&format!(
            "{}: tessera {:.0} IOPS ({:.1} MiB/s), fio {:.0} IOPS ({:.1} MiB/s)",
            pattern.name, med_ours.iops, med_ours.mib_per_s, med_theirs.iops, med_theirs.mib_per_s
        ));
        let sequential = matches!(params.access, Access::Sequential { .. });
        let mut rows = Vec::new();
        for metric in METRICS {
            if metric.sequential_only && !sequential {
                continue;
            }
            if let Some(row) = paired_row(pattern.name, metric, &ours, &theirs) {
                rows.push(row);
            }
        }
        for row in rows {
            if row.ratio.is_some_and(|r| r > BAND_HIGH) {
                out_of_band.push(format!("{} ({:.2})", row.metric, row.ratio.unwrap_or(0.0)));
            }
            report.push(row);
        }
        if repeat > 1 {
            let ratios: Vec<String> =
                ours.iter().zip(&theirs).map(|(a, b)| format!("{:.2}", a.iops / b.iops.max(1e-9))).collect();
            report.note(format!("{}: IOPS ratio of each round: {}", pattern.name, ratios.join(" ")));
        }
        if engine == EngineKind::Uring && params.threads_per_target == 1 {
            // One fio job: its usr_cpu + sys_cpu is that job's CPU, comparable with ours.
            report.note(format!(
                "{}: CPU tessera {:.0}% vs fio {:.0}% of one core",
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
         round(s) of {duration} s measured after {warmup} s warm-up for each tool, back to back, alternating which \
         goes first; figures are medians over the rounds and each ratio is the median of the rounds' ratios; the last \
         pattern is seed 004's diskspd -b8K -t1 -r -w40 -Sh -L -Z1G",
        fmt_size(file_size),
    ));
    Ok((report, failures))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(iops: f64, read: Option<(f64, f64)>) -> Side {
        Side { iops, mib_per_s: iops / 256.0, read, write: None, cpu_pct: 0.0 }
    }

    #[test]
    fn ratios_are_paired_by_round() {
        // The device doubles its speed between rounds; each round's ratio is what counts.
        let ours = [side(100.0, Some((500.0, 900.0))), side(200.0, Some((250.0, 450.0)))];
        let fio = [side(110.0, Some((450.0, 1000.0))), side(190.0, Some((260.0, 400.0)))];
        let iops = paired_row("p", &METRICS[0], &ours, &fio).unwrap();
        assert_eq!((iops.ours, iops.peer_value), (150.0, Some(150.0)));
        let want = (100.0 / 110.0 + 200.0 / 190.0) / 2.0;
        assert!((iops.ratio.unwrap() - want).abs() < 1e-12);
        assert_eq!(iops.metric, "p: IOPS");
        // Latency: fio / ours.
        let p50 = paired_row("p", &METRICS[2], &ours, &fio).unwrap();
        assert_eq!(p50.unit, "µs");
        let want = (450.0 / 500.0 + 260.0 / 250.0) / 2.0;
        assert!((p50.ratio.unwrap() - want).abs() < 1e-12);
        // No writes on either side: no row.
        assert!(paired_row("p", &METRICS[4], &ours, &fio).is_none());
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
