//! The power-loss campaign. One run of a seed's workload counts the operations that
//! change files (writes, syncs, resizes, removals); then each chosen point runs the same
//! workload on a fresh directory with the power cut before that operation
//! (`tessera_io::faults::power`), leaves the files as a power loss could, recovers, and
//! checks: the instance opens, the databases hold exactly the acknowledged steps (and
//! the one in flight either wholly or not at all), the bank's total holds, and DBCC
//! CHECKDB is clean.

use std::path::{Path, PathBuf};

use tessera_io::faults::power::{self, Loss};

use crate::instance::Instance;
use crate::workload::{Kind, State, Step, Workload, RESTORED};

/// One power loss and what came of it.
#[derive(Debug)]
pub struct Point {
    /// The operation the power was cut before.
    pub cut: u64,
    /// Steps acknowledged before the cut.
    pub acknowledged: usize,
    /// The step the cut fell in (None: the cut came before the first batch, in the
    /// instance's own start).
    pub in_flight: Option<Kind>,
    pub loss: Loss,
    /// Why the check failed.
    pub failure: Option<String>,
}

/// A workload's directories under one point's directory.
pub(crate) struct Dirs {
    pub(crate) data: PathBuf,
    pub(crate) media: PathBuf,
}

impl Dirs {
    pub(crate) fn make(root: &Path) -> Dirs {
        let (data, media) = (root.join("data"), root.join("media"));
        let _ = std::fs::remove_dir_all(root);
        std::fs::create_dir_all(&data).expect("a data directory");
        std::fs::create_dir_all(&media).expect("a media directory");
        Dirs { data, media }
    }
}

/// Runs the workload on `dirs` until it ends or fails: the steps acknowledged and the
/// step that failed (with its error).
fn drive(dirs: &Dirs, seed: u64, steps: u32) -> (Vec<State>, Option<(Step, String)>, Option<String>) {
    let mut acknowledged = vec![Workload::initial()];
    let mut instance = match Instance::open(&dirs.data) {
        Ok(i) => i,
        Err(e) => return (acknowledged, None, Some(e)),
    };
    let mut failed = None;
    for step in Workload::new(seed, steps, &dirs.media, &dirs.data) {
        match instance.run(&step.sql) {
            Ok(_) => acknowledged.push(step.after),
            Err(e) => {
                failed = Some((step, e));
                break;
            }
        }
    }
    instance.close();
    (acknowledged, failed, None)
}

/// Operations the seed's whole workload makes (a run without a cut), or why it failed.
pub fn count_operations(root: &Path, seed: u64, steps: u32) -> Result<u64, String> {
    let dirs = Dirs::make(root);
    power::record(&dirs.data);
    let (_, failed, broken) = drive(&dirs, seed, steps);
    let operations = power::operations(&dirs.data);
    power::forget(&dirs.data);
    let _ = std::fs::remove_dir_all(root);
    if let Some(e) = broken {
        return Err(e);
    }
    match failed {
        Some((step, e)) => Err(format!("step {:?} failed without any fault: {e}\n{}", step.kind, step.sql)),
        None => Ok(operations),
    }
}

/// The power cut before operation `cut` of the seed's workload, under `root`.
pub fn run_point(root: &Path, seed: u64, steps: u32, cut: u64) -> Point {
    let dirs = Dirs::make(root);
    power::record(&dirs.data);
    power::cut_at(&dirs.data, cut);
    let (acknowledged, failed, broken) = drive(&dirs, seed, steps);
    let was_cut = power::is_cut(&dirs.data);
    let loss = power::power_loss(&dirs.data, seed ^ cut.rotate_left(32)).expect("the power-loss image is written");
    let mut point = Point { cut, acknowledged: acknowledged.len() - 1, in_flight: None, loss, failure: None };
    let before = acknowledged.last().expect("the initial state").clone();
    let mut candidates = vec![before];
    match (failed, broken) {
        (_, Some(_)) if was_cut => {}
        (_, Some(e)) => point.failure = Some(format!("the instance failed without a fault: {e}")),
        (Some((step, _)), None) if was_cut => {
            point.in_flight = Some(step.kind);
            candidates.push(step.after);
            candidates = with_restore_variants(candidates, step.kind == Kind::Restore);
        }
        (Some((step, e)), None) => {
            point.failure = Some(format!("step {:?} failed before the power cut: {e}\n{}", step.kind, step.sql))
        }
        (None, None) => {}
    }
    if point.failure.is_none() {
        point.failure = check(&dirs.data, &candidates, point.in_flight).err();
    }
    if point.failure.is_none() {
        let _ = std::fs::remove_dir_all(root);
    }
    point
}

/// `candidates`, and when a RESTORE was in flight, each without the restored database
/// too: a restore cut short may leave it RESTORING (unreadable).
pub(crate) fn with_restore_variants(mut candidates: Vec<State>, restoring: bool) -> Vec<State> {
    if restoring {
        let without: Vec<State> = candidates
            .iter()
            .cloned()
            .map(|mut s| {
                s.remove(RESTORED);
                s
            })
            .collect();
        candidates.extend(without);
    }
    candidates
}

/// Recovers the instance on `data` and checks it holds one of `candidates`.
pub(crate) fn check(data: &Path, candidates: &[State], in_flight: Option<Kind>) -> Result<(), String> {
    let mut instance = Instance::open(data).map_err(|e| format!("recovery failed: {e}"))?;
    let result = (|| {
        let (state, unreadable) = instance.state()?;
        let restoring = in_flight == Some(Kind::Restore);
        if let Some(db) = unreadable.iter().find(|d| !(restoring && d.starts_with(RESTORED))) {
            return Err(format!("database {db} cannot be read after recovery"));
        }
        if !candidates.contains(&state) {
            return Err(describe_difference(&state, &candidates[0]));
        }
        let (total, opened_with) = Workload::bank_balances(&state);
        if total != opened_with {
            return Err(format!("the bank's balances add up to {total}, not {opened_with}"));
        }
        for db in state.keys() {
            instance.check(db).map_err(|e| format!("DBCC CHECKDB ({db}): {e}"))?;
        }
        Ok(())
    })();
    instance.close();
    result
}

/// The first difference between what recovery left and the acknowledged state.
fn describe_difference(found: &State, expected: &State) -> String {
    let dbs: std::collections::BTreeSet<&String> = found.keys().chain(expected.keys()).collect();
    for db in dbs {
        let (f, e) = (found.get(db), expected.get(db));
        let Some((f, e)) = f.zip(e) else {
            return format!("database {db}: present after recovery {}, acknowledged {}", f.is_some(), e.is_some());
        };
        let tables: std::collections::BTreeSet<&String> = f.keys().chain(e.keys()).collect();
        for t in tables {
            let (fr, er) = (f.get(t), e.get(t));
            let Some((fr, er)) = fr.zip(er) else {
                return format!(
                    "table {db}.{t}: present after recovery {}, acknowledged {}",
                    fr.is_some(),
                    er.is_some()
                );
            };
            if fr != er {
                let ids: std::collections::BTreeSet<&i64> = fr.keys().chain(er.keys()).collect();
                let id = ids.into_iter().find(|id| fr.get(id) != er.get(id)).expect("a difference");
                let show = |r: Option<&(i64, Option<std::sync::Arc<str>>)>| {
                    r.map(|(k, v)| format!("k {k}, v of {} chars", v.as_ref().map_or(0, |v| v.len())))
                };
                return format!(
                    "table {db}.{t}: {} rows after recovery, {} acknowledged (neither this nor the step in flight); \
                     first difference at id {id}: {:?} after recovery, {:?} acknowledged",
                    fr.len(),
                    er.len(),
                    show(fr.get(id)),
                    show(er.get(id))
                );
            }
        }
    }
    "the state differs from the acknowledged one only as the step in flight allows, yet matches neither".to_string()
}
