//! One run: prepare the targets, start every thread, walk the phases (warm-up, measured,
//! cool-down), then gather the figures.

use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use tessera_io::Uring;

use crate::cpu::{self, CpuUsage, SystemTimes};
use crate::engine::{self, Gate, Shared, ThreadOutcome, ThreadPlan, WriteSource, COOLDOWN, MEASURE, STOP, WARMUP};
use crate::error::{Error, Result};
use crate::params::{Access, EngineChoice, EngineKind, Params};
use crate::stats::{Figures, IoStats};
use crate::target::{self, Target};

/// Most OS threads the thread-pool engine may start (threads × outstanding × targets).
pub const MAX_POOL_THREADS: usize = 4096;
/// Most memory the request buffers of a run may take.
pub const MAX_BUFFER_BYTES: u64 = 8 << 30;

/// What a run tells its caller while it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A message worth a line on stderr (file fills, engine fallback).
    Note(String),
    /// About once a second: where the run is and how fast it goes.
    Tick(Progress),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// "warm-up", "measuring" or "cool-down".
    pub phase: &'static str,
    /// Seconds into this phase, and its length.
    pub elapsed: f64,
    pub length: f64,
    /// Rates over the last interval.
    pub iops: f64,
    pub mib_per_s: f64,
}

/// The whole result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub tool: &'static str,
    pub version: &'static str,
    pub engine: EngineKind,
    pub params: Params,
    pub targets: Vec<TargetInfo>,
    /// Length of the measured interval.
    pub duration_s: f64,
    pub cpu: CpuUsage,
    pub total: Figures,
    pub threads: Vec<ThreadResult>,
    /// All measured I/O merged, for charts.
    #[serde(skip)]
    pub stats: IoStats,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetInfo {
    pub path: PathBuf,
    pub size: u64,
    pub start: u64,
    pub end: u64,
    /// Whether this run created or extended the file.
    pub filled: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadResult {
    pub thread: usize,
    pub target: PathBuf,
    /// CPU time the thread (all its pool threads, with `--engine threads`) used while
    /// measuring, as a percentage of one CPU.
    pub cpu_pct: f64,
    #[serde(flatten)]
    pub figures: Figures,
}

/// Decides the engine: io_uring if asked for or available, else the thread pool.
pub fn resolve_engine(choice: EngineChoice, notes: &mut dyn FnMut(Event)) -> Result<EngineKind> {
    match choice {
        EngineChoice::Threads => Ok(EngineKind::Threads),
        EngineChoice::Uring => match Uring::new(1) {
            Ok(_) => Ok(EngineKind::Uring),
            Err(e) => Err(Error::new(format!("--engine uring: {e}; use --engine threads"))),
        },
        EngineChoice::Auto => match Uring::new(1) {
            Ok(_) => Ok(EngineKind::Uring),
            Err(e) => {
                notes(Event::Note(format!("{e}; using the thread-pool engine")));
                Ok(EngineKind::Threads)
            }
        },
    }
}

/// Runs `params`: creates and fills missing targets, then issues I/O for the warm-up, the
/// measured duration and the cool-down. `events` hears progress about once a second.
pub fn run(params: &Params, events: &mut dyn FnMut(Event)) -> Result<RunResult> {
    let engine = resolve_engine(params.engine, events)?;
    let pool_threads = params.total_threads() * params.outstanding as usize;
    if engine == EngineKind::Threads && pool_threads > MAX_POOL_THREADS {
        return Err(Error::new(format!(
            "the thread-pool engine would start {pool_threads} threads (targets × -t × -o); at most \
             {MAX_POOL_THREADS} are allowed: lower -o or -t, or use --engine uring"
        )));
    }
    let buffers = pool_threads as u64 * engine::round_up(params.block_size) as u64;
    if buffers > MAX_BUFFER_BYTES {
        return Err(Error::new(format!(
            "the I/O buffers would take {} (targets × -t × -o × -b); at most {} are allowed: lower -o, -t or -b",
            crate::params::fmt_size(buffers),
            crate::params::fmt_size(MAX_BUFFER_BYTES)
        )));
    }
    let targets = target::prepare(params, &mut |m| events(Event::Note(m.to_string())))?;
    let seed = params.seed.unwrap_or_else(clock_seed);
    let writes = Arc::new(WriteSource::new(params.write_data, params.block_size, seed));
    let plans = plan_threads(params, &targets, seed, &writes);
    let first_phase = if params.warmup > 0.0 { WARMUP } else { MEASURE };
    let shared = Arc::new(Shared::new(plans.len(), first_phase));
    let os_threads = match engine {
        EngineKind::Uring => plans.len(),
        EngineKind::Threads => pool_threads,
    };
    let ready = Arc::new(Gate::default());
    let batch = params.batch;
    let mut handles = Vec::with_capacity(os_threads);
    let mut spawn_error = None;
    'spawn: for plan in &plans {
        let lanes = match engine {
            EngineKind::Uring => 1,
            EngineKind::Threads => plan.outstanding,
        };
        let cursor = engine::threads::cursor(plan);
        for lane in 0..lanes {
            let name = format!("iobench-{}.{lane}", plan.id);
            let (plan, shared, ready, cursor) = (plan.clone(), shared.clone(), ready.clone(), cursor.clone());
            let spawned = thread::Builder::new().name(name).spawn(move || {
                let outcome = match engine {
                    EngineKind::Uring => engine::uring::run_thread(&plan, &shared, &ready, batch),
                    EngineKind::Threads => engine::threads::run_lane(&plan, lane, cursor, &shared, &ready),
                };
                (plan.id, outcome)
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_error = Some(Error::new(format!("cannot start an I/O thread: {e}")));
                    break 'spawn;
                }
            }
        }
    }
    if let Some(e) = spawn_error {
        // Threads already started wait at the gate: release them straight into a stop.
        shared.fail(e);
        ready.open();
        let _ = join(handles, plans.len());
        return Err(shared.take_error().unwrap_or_else(|| Error::new("cannot start the I/O threads")));
    }
    ready.wait_for(os_threads);
    ready.open();

    // The phases. The measured interval runs between the two clock reads around it.
    let mut ticker = Ticker::new(&shared);
    let mut measured = (Instant::now(), Instant::now());
    let mut cpu_before = (cpu::process_times(), SystemTimes::read());
    let mut cpu_after = cpu_before;
    let phases = [
        (WARMUP, params.warmup, "warm-up"),
        (MEASURE, params.duration, "measuring"),
        (COOLDOWN, params.cooldown, "cool-down"),
    ];
    for (phase, seconds, name) in phases {
        if phase != MEASURE && seconds <= 0.0 {
            continue;
        }
        if shared.failed() {
            break;
        }
        if phase == MEASURE {
            shared.set_phase(MEASURE);
            measured.0 = Instant::now();
            cpu_before = (cpu::process_times(), SystemTimes::read());
        } else {
            shared.set_phase(phase);
        }
        wait(&shared, seconds, name, &mut ticker, events);
        if phase == MEASURE {
            measured.1 = Instant::now();
            cpu_after = (cpu::process_times(), SystemTimes::read());
        }
    }
    shared.set_phase(STOP);
    let outcomes = join(handles, plans.len());
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    let outcomes = outcomes?;

    let seconds = measured.1.saturating_duration_since(measured.0).as_secs_f64();
    let mut total = IoStats::default();
    let threads = plans
        .iter()
        .zip(&outcomes)
        .map(|(plan, o)| {
            total.merge(&o.stats);
            ThreadResult {
                thread: plan.id,
                target: plan.path.clone(),
                cpu_pct: if seconds > 0.0 { o.cpu.total_ns() as f64 / 1e9 / seconds * 100.0 } else { 0.0 },
                figures: o.stats.figures(seconds),
            }
        })
        .collect();
    Ok(RunResult {
        tool: "tessera iobench",
        version: env!("CARGO_PKG_VERSION"),
        engine,
        params: params.clone(),
        targets: targets
            .iter()
            .map(|t| TargetInfo { path: t.path.clone(), size: t.len, start: t.start, end: t.end, filled: t.filled })
            .collect(),
        duration_s: seconds,
        cpu: CpuUsage::between(seconds, cpu_after.0.since(cpu_before.0), cpu_before.1, cpu_after.1),
        total: total.figures(seconds),
        threads,
        stats: total,
    })
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
}

fn plan_threads(params: &Params, targets: &[Target], seed: u64, writes: &Arc<WriteSource>) -> Vec<ThreadPlan> {
    let mut plans = Vec::new();
    for (t, target) in targets.iter().enumerate() {
        let file = Arc::new(target.file.try_clone().expect("a file descriptor can be duplicated"));
        for i in 0..params.threads_per_target {
            let first = match params.access {
                Access::Sequential { .. } => u64::from(i) * params.thread_stride,
                Access::Random { .. } => 0,
            };
            plans.push(ThreadPlan {
                id: plans.len(),
                target: t,
                path: target.path.clone(),
                file: file.clone(),
                start: target.start,
                end: target.end,
                block: params.block_size,
                access: params.access,
                write_pct: params.write_pct,
                first,
                outstanding: params.outstanding,
                seed,
                writes: writes.clone(),
            });
        }
    }
    plans
}

type Handle = thread::JoinHandle<(usize, Result<ThreadOutcome>)>;

/// Joins every OS thread and merges their outcomes per thread of the run.
fn join(handles: Vec<Handle>, threads: usize) -> Result<Vec<ThreadOutcome>> {
    let mut outcomes: Vec<ThreadOutcome> = (0..threads).map(|_| ThreadOutcome::default()).collect();
    let mut first_error = None;
    for h in handles {
        match h.join() {
            Ok((id, Ok(o))) => {
                outcomes[id].stats.merge(&o.stats);
                outcomes[id].cpu = outcomes[id].cpu.plus(o.cpu);
            }
            Ok((_, Err(e))) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(Error::new("an I/O thread panicked"));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(outcomes),
    }
}

/// Rates for the progress line, from the live counters.
struct Ticker<'a> {
    shared: &'a Shared,
    last: Instant,
    last_counts: (u64, u64),
}

impl<'a> Ticker<'a> {
    fn new(shared: &'a Shared) -> Ticker<'a> {
        Ticker { shared, last: Instant::now(), last_counts: shared.live_totals() }
    }

    fn tick(&mut self, phase: &'static str, elapsed: f64, length: f64) -> Progress {
        let now = Instant::now();
        let counts = self.shared.live_totals();
        let dt = now.saturating_duration_since(self.last).as_secs_f64().max(1e-9);
        let p = Progress {
            phase,
            elapsed,
            length,
            iops: (counts.0 - self.last_counts.0) as f64 / dt,
            mib_per_s: (counts.1 - self.last_counts.1) as f64 / dt / (1024.0 * 1024.0),
        };
        self.last = now;
        self.last_counts = counts;
        p
    }
}

/// Sleeps through one phase, stopping early if a thread failed, with a tick each second.
fn wait(shared: &Shared, seconds: f64, name: &'static str, ticker: &mut Ticker, events: &mut dyn FnMut(Event)) {
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut next_tick = start + Duration::from_secs(1);
    loop {
        let now = Instant::now();
        if now >= end || shared.failed() {
            break;
        }
        if now >= next_tick {
            events(Event::Tick(ticker.tick(name, now.duration_since(start).as_secs_f64(), seconds)));
            next_tick += Duration::from_secs(1);
        }
        let nap = end.min(next_tick).saturating_duration_since(now).min(Duration::from_millis(50));
        thread::sleep(nap);
    }
}
