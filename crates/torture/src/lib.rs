//! The reliability campaigns behind `tessera torture`: simulated power loss at chosen
//! operations of a seeded T-SQL workload, each checked against the workload's model.
//! Every failure names its seed and point, and `--seed S --cut N` replays it exactly.
//! See docs/reliability.md.

pub mod faults;
pub mod instance;
pub mod power;
pub mod server;
pub mod soak;
pub mod storm;
pub mod workload;

use std::path::PathBuf;

/// What one campaign runs.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The first seed; seed `s + i` drives the `i`-th workload.
    pub seed: u64,
    /// Random steps per workload (after the setup).
    pub steps: u32,
    /// Power-loss points in all.
    pub points: usize,
    /// Points per workload (each seed's points are spread over its operations).
    pub points_per_seed: usize,
    /// Where the runs' directories go.
    pub dir: PathBuf,
}

/// A campaign's outcome.
#[derive(Debug, Default)]
pub struct Report {
    pub points: usize,
    pub failures: Vec<(u64, power::Point)>,
    /// Points by the step they fell in.
    pub by_kind: std::collections::BTreeMap<String, usize>,
    pub unsynced_writes: usize,
    pub torn: usize,
    pub dropped: usize,
}

/// The points of one seed: spread evenly over its `operations`, each moved within its
/// stretch by the seed.
pub fn points_of(seed: u64, operations: u64, count: usize) -> Vec<u64> {
    let mut rng = tessera_io::faults::Rng::new(seed ^ 0x5EED);
    if operations <= count as u64 {
        return (0..operations).collect();
    }
    let stretch = operations / count as u64;
    (0..count as u64).map(|i| i * stretch + rng.below(stretch)).collect()
}

/// Runs the power-loss campaign, telling `seeded` each workload's seed and operations and
/// `progress` about each point.
pub fn power_campaign(
    c: &Campaign,
    mut seeded: impl FnMut(u64, u64),
    mut progress: impl FnMut(u64, &power::Point),
) -> Result<Report, String> {
    let mut report = Report::default();
    let mut seed = c.seed;
    while report.points < c.points {
        let root = c.dir.join(format!("seed-{seed}"));
        let operations = power::count_operations(&root, seed, c.steps).map_err(|e| format!("seed {seed}: {e}"))?;
        seeded(seed, operations);
        let want = c.points_per_seed.min(c.points - report.points);
        for cut in points_of(seed, operations, want) {
            let point = power::run_point(&c.dir.join(format!("seed-{seed}-cut-{cut}")), seed, c.steps, cut);
            progress(seed, &point);
            report.points += 1;
            let kind = point.in_flight.map_or("instance start".to_string(), |k| format!("{k:?}"));
            *report.by_kind.entry(kind).or_default() += 1;
            report.unsynced_writes += point.loss.unsynced_writes;
            report.torn += point.loss.torn;
            report.dropped += point.loss.dropped;
            if point.failure.is_some() {
                report.failures.push((seed, point));
            }
        }
        seed += 1;
    }
    Ok(report)
}

/// A fault campaign's outcome.
#[derive(Debug, Default)]
pub struct FaultReport {
    pub points: usize,
    pub failures: Vec<(u64, faults::FaultPoint)>,
    /// By what was armed.
    pub by_kind: std::collections::BTreeMap<&'static str, FaultOutcomes>,
}

/// What the faults of one kind did.
#[derive(Debug, Default)]
pub struct FaultOutcomes {
    pub points: usize,
    /// The fault fired.
    pub fired: usize,
    /// A step failed (the fault fired where a statement saw it).
    pub step_failed: usize,
    /// The error numbers those steps got, each counted once per point.
    pub errors: std::collections::BTreeMap<i32, usize>,
}

/// Runs the I/O fault campaign: `c.points` faults spread over seeds from `c.seed`, each
/// point told to `progress` with its seed and index.
pub fn fault_campaign(
    c: &Campaign,
    mut progress: impl FnMut(u64, u64, &faults::FaultPoint),
) -> Result<FaultReport, String> {
    let mut report = FaultReport::default();
    let mut seed = c.seed;
    while report.points < c.points {
        let root = c.dir.join(format!("faults-seed-{seed}"));
        let operations = power::count_operations(&root, seed, c.steps).map_err(|e| format!("seed {seed}: {e}"))?;
        for index in 0..c.points_per_seed.min(c.points - report.points) as u64 {
            let dir = c.dir.join(format!("faults-seed-{seed}-{index}"));
            let point = faults::run_fault_point(&dir, seed, c.steps, index, operations);
            progress(seed, index, &point);
            report.points += 1;
            let entry = report.by_kind.entry(point.armed.what).or_default();
            entry.points += 1;
            entry.fired += usize::from(point.fired);
            if point.failed.is_some() {
                entry.step_failed += 1;
                let mut numbers = point.errors.clone();
                numbers.sort_unstable();
                numbers.dedup();
                for n in numbers {
                    *entry.errors.entry(n).or_default() += 1;
                }
            }
            if point.failure.is_some() {
                report.failures.push((seed, point));
            }
        }
        seed += 1;
    }
    Ok(report)
}
