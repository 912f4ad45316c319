//! The I/O fault campaign. Each point runs a seed's workload with one fault armed on one
//! file of `ta` or `tb`, or on `ta`'s backup media (`tessera_io::faults`): the n-th read,
//! write or sync of its data file, log or media fails with EIO (a write may first move
//! half its sectors), or its disk fills at a chosen byte. At the first step that fails,
//! the checks are:
//!
//! - the client got an error, never a success for work that was not done;
//! - the other database keeps serving: a write and a read there succeed;
//!
//! then the power goes (what was not synced may be lost), the instance recovers, and
//! it must hold the acknowledged steps (the failed one wholly or not at all), with the
//! bank's balances whole and DBCC CHECKDB clean.

use std::path::Path;

use tessera_io::faults::{self, power, Fault, Op, Rng};

use crate::instance::Instance;
use crate::power::{check, with_restore_variants, Dirs};
use crate::workload::{Kind, State, Workload};

/// What was armed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Armed {
    /// `read`, `write`, `partial write`, `sync` or `disk full`.
    pub what: &'static str,
    /// The file: `ta.mdf`, `tb_log.ldf` …, or [`MEDIA`].
    pub file: String,
    /// Matching operations let through first (bytes, for a full disk).
    pub after: u64,
}

/// One fault and what came of it.
#[derive(Debug)]
pub struct FaultPoint {
    pub armed: Armed,
    /// Steps acknowledged before the first that failed.
    pub acknowledged: usize,
    /// The step that failed (None: the fault never fired, or fired only where a retry
    /// or a later step covered it).
    pub failed: Option<Kind>,
    /// The error numbers that step got.
    pub errors: Vec<i32>,
    /// The armed fault fired (a full disk: the disk filled).
    pub fired: bool,
    /// Why a check failed.
    pub failure: Option<String>,
}

/// What [`Armed::file`] names for `ta`'s backup media: every `.bak` file the workload's
/// BACKUP and RESTORE statements write and read.
pub const MEDIA: &str = "*.bak";

/// The fault of point `index` of `seed`: `operations` bounds where it falls.
pub fn arm_for(seed: u64, index: u64, operations: u64) -> Armed {
    let mut rng = Rng::new(seed.rotate_left(17) ^ index);
    let db = if rng.below(2) == 0 { "ta" } else { "tb" };
    let file = match rng.below(5) {
        0 | 1 => format!("{db}.mdf"),
        2 | 3 => format!("{db}_log.ldf"),
        _ => MEDIA.to_string(),
    };
    // A data file is written and synced at checkpoints (a few dozen times a run), a log
    // at every commit, media at each of the few backups: where the n-th operation can
    // fall differs.
    let writes = match file.as_str() {
        MEDIA => 12,
        f if f.ends_with(".ldf") => operations / 6,
        _ => 40,
    };
    let (what, after) = match rng.below(5) {
        0 => ("read", rng.below(64)),
        1 => ("write", rng.below(writes + 1)),
        2 => ("partial write", rng.below(writes + 1)),
        3 => ("sync", rng.below(writes / 3 + 1)),
        _ => ("disk full", rng.below(4 << 20)),
    };
    Armed { what, file, after }
}

/// The directory the armed file is in: the media's, or the data directory.
fn under<'d>(dirs: &'d Dirs, armed: &Armed) -> &'d Path {
    if armed.file == MEDIA {
        &dirs.media
    } else {
        &dirs.data
    }
}

fn arm(dirs: &Dirs, armed: &Armed) {
    let dir = under(dirs, armed);
    let suffix = if armed.file == MEDIA { ".bak".to_string() } else { format!("/{}", armed.file) };
    let fault = |op| Fault { skip: armed.after as u32, ..Fault::new(op, dir, &suffix, libc::EIO) };
    match armed.what {
        "read" => faults::arm(fault(Op::Read)),
        "write" => faults::arm(fault(Op::Write)),
        "partial write" => faults::arm(Fault { partial: true, ..fault(Op::Write) }),
        "sync" => faults::arm(fault(Op::Sync)),
        _ => faults::disk_full_after(dir, armed.after),
    }
}

/// The database the fault is not on (the media are `ta`'s).
fn other(armed: &Armed) -> &'static str {
    if armed.file.starts_with("tb") {
        "ta"
    } else {
        "tb"
    }
}

/// Runs point `index` of `seed`'s workload under `root`.
pub fn run_fault_point(root: &Path, seed: u64, steps: u32, index: u64, operations: u64) -> FaultPoint {
    let dirs = Dirs::make(root);
    let armed = arm_for(seed, index, operations);
    power::record(&dirs.data);
    let mut point =
        FaultPoint { armed, acknowledged: 0, failed: None, errors: Vec::new(), fired: false, failure: None };
    let mut candidates: Vec<State> = vec![Workload::initial()];
    let mut instance = match Instance::open(&dirs.data) {
        Ok(i) => i,
        Err(e) => {
            point.failure = Some(format!("the instance does not start: {e}"));
            return point;
        }
    };
    let mut armed_yet = false;
    for step in Workload::new(seed, steps, &dirs.media, &dirs.data) {
        // Armed once the databases exist, so the fault falls on the workload's own work.
        if !armed_yet && step.kind != Kind::Setup {
            arm(&dirs, &point.armed);
            armed_yet = true;
        }
        match instance.errors_of(&step.sql) {
            None => {
                point.acknowledged += 1;
                candidates = vec![step.after];
            }
            Some(errors) => {
                point.failed = Some(step.kind);
                point.errors = errors.iter().map(|(n, _)| *n).collect();
                if step.kind == Kind::Setup {
                    point.failure = Some(format!("the setup failed before any fault: {errors:?}"));
                }
                candidates.push(step.after);
                break;
            }
        }
    }
    let dir = under(&dirs, &point.armed);
    point.fired = if point.armed.what == "disk full" {
        point.errors.iter().any(|n| matches!(n, 9002 | 1105 | 3013))
    } else {
        faults::unfired(dir) == 0
    };
    faults::disarm(dir);
    if point.failed.is_some() && point.failure.is_none() {
        let db = other(&point.armed);
        let probe = format!("UPDATE {db}.dbo.acct SET v = v WHERE id = 0; SELECT COUNT(*) FROM {db}.dbo.acct");
        if let Err(e) = instance.run(&probe) {
            point.failure = Some(format!("database {db} stopped serving after a fault on {}: {e}", point.armed.file));
        }
    }
    instance.close();
    let _ = power::power_loss(&dirs.data, seed ^ index);
    if point.failure.is_none() {
        let restoring = point.failed == Some(Kind::Restore);
        point.failure = check(&dirs.data, &with_restore_variants(candidates, restoring), point.failed)
            .err()
            .map(|e| format!("after the restart: {e}"));
    }
    if point.failure.is_none() {
        let _ = std::fs::remove_dir_all(root);
    }
    point
}
