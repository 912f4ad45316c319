//! Simulated power loss.
//!
//! A disk keeps for certain only what was written before the last sync of its file: on a
//! power loss, anything written since may be lost, kept, or kept in part — whole sectors
//! of a write, not others — and writes may reach the platter in any order. SIGKILL never
//! shows this (the kernel's page cache survives the process), so this module simulates
//! it, as SQLite's crash-test VFS does:
//!
//! 1. [`record`] a directory: from then on every write to a file under it keeps the bytes
//!    it overwrote, until the file's next sync makes them durable; every operation that
//!    changes a file (write, sync, resize, removal, replacement) is numbered.
//! 2. [`cut_at`] an operation number: that operation and every one after it fail with
//!    `EIO` without touching anything, as if the machine had stopped just before it.
//!    Reads go on working, so the dying engine can be dropped.
//! 3. After the engine is gone, [`power_loss`] rewrites each file as the disk could have
//!    left it: every write since the file's last sync is undone, its length goes back to
//!    the synced one, then each of those writes is (seeded) dropped, applied whole, or
//!    torn (a random subset of its sectors applied), in a shuffled order.
//!
//! Names (creation, rename, removal) are taken as durable when the call returns: the
//! engine syncs directories itself ([`crate::durable`]), and simulating lost names is
//! left out. A failed sync while recording loses the file's unsynced writes at once, as
//! Linux drops dirty pages whose write-back failed (PostgreSQL's "fsyncgate").

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{with_state, Rng, State, SECTOR_BYTES};

/// One recorded directory.
pub(crate) struct Recording {
    dir: PathBuf,
    /// Operations that changed a file under `dir`, counted since [`record`].
    operations: u64,
    cut_at: Option<u64>,
    files: HashMap<PathBuf, FileState>,
}

/// What a file holds for certain, and what was written to it since.
struct FileState {
    /// Its length at its last sync (or when first seen).
    durable_len: u64,
    pending: Vec<Pending>,
}

/// A write not yet synced: where, what it wrote, and what was there before.
struct Pending {
    offset: u64,
    old: Vec<u8>,
    new: Vec<u8>,
}

/// What [`power_loss`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Loss {
    /// Files that had writes since their last sync.
    pub files: usize,
    /// Writes since the files' last syncs.
    pub unsynced_writes: usize,
    pub applied_whole: usize,
    pub torn: usize,
    pub dropped: usize,
}

/// Starts recording the files under `dir` (as they are now, taken as durable).
pub fn record(dir: &Path) {
    with_state(|s| {
        assert!(!s.recordings.iter().any(|r| r.dir.starts_with(dir) || dir.starts_with(&r.dir)), "recorded twice");
        s.recordings.push(Recording { dir: dir.to_path_buf(), operations: 0, cut_at: None, files: HashMap::new() })
    });
}

/// Cuts the power before operation number `operation` (counted from 0 since [`record`]).
pub fn cut_at(dir: &Path, operation: u64) {
    with_state(|s| recording_of(s, dir).cut_at = Some(operation));
}

/// How many operations changed files under `dir` since [`record`].
pub fn operations(dir: &Path) -> u64 {
    with_state(|s| recording_of(s, dir).operations)
}

/// Whether the power is off under `dir`.
pub fn is_cut(dir: &Path) -> bool {
    with_state(|s| {
        let r = recording_of(s, dir);
        r.cut_at.is_some_and(|at| r.operations >= at)
    })
}

/// Stops recording `dir`, leaving its files as they are (a run without a power loss).
pub fn forget(dir: &Path) {
    with_state(|s| s.recordings.retain(|r| r.dir != dir));
}

fn recording_of<'a>(s: &'a mut State, dir: &Path) -> &'a mut Recording {
    s.recordings.iter_mut().find(|r| r.dir == dir).unwrap_or_else(|| panic!("{} is not recorded", dir.display()))
}

fn recording_under<'a>(s: &'a mut State, path: &Path) -> Option<&'a mut Recording> {
    s.recordings.iter_mut().find(|r| path.starts_with(&r.dir))
}

/// Counts an operation on `path`, or refuses it once the power is off. `len_before`
/// (for a write or resize) starts following a file not seen before.
pub(super) fn operation(s: &mut State, path: &Path, len_before: Option<u64>) -> std::io::Result<()> {
    let Some(r) = recording_under(s, path) else { return Ok(()) };
    if r.cut_at.is_some_and(|at| r.operations >= at) {
        return Err(std::io::Error::other("the power is off (simulated power loss)"));
    }
    r.operations += 1;
    if let Some(len) = len_before {
        r.files.entry(path.to_path_buf()).or_insert(FileState { durable_len: len, pending: Vec::new() });
    }
    Ok(())
}

/// Whether writes to `path` are recorded (the caller then reads what it overwrites).
pub(crate) fn recording(path: &Path) -> bool {
    super::active() && with_state(|s| recording_under(s, path).is_some())
}

/// A write to `path` at `offset` replaced `old` (shorter where it ran past the end) with `new`.
pub(crate) fn wrote(path: &Path, offset: u64, old: Vec<u8>, new: &[u8]) {
    with_state(|s| {
        if let Some(file) = recording_under(s, path).and_then(|r| r.files.get_mut(path)) {
            file.pending.push(Pending { offset, old, new: new.to_vec() });
        }
    });
}

/// `path` was synced at length `len`: everything written to it is durable.
pub(crate) fn synced(path: &Path, len: u64) {
    with_state(|s| {
        if let Some(file) = recording_under(s, path).and_then(|r| r.files.get_mut(path)) {
            file.durable_len = len;
            file.pending.clear();
        }
    });
}

/// `path` was cut or extended to `len`. A cut is taken as durable at once (what it cut
/// off is gone); an extension is not, until the next sync.
pub(crate) fn resized(path: &Path, len: u64) {
    with_state(|s| {
        if let Some(file) = recording_under(s, path).and_then(|r| r.files.get_mut(path)) {
            file.durable_len = file.durable_len.min(len);
            file.pending.retain_mut(|w| {
                let keep = len.saturating_sub(w.offset).min(w.new.len() as u64) as usize;
                w.new.truncate(keep);
                w.old.truncate(keep);
                keep > 0
            });
        }
    });
}

/// `path` was removed, or replaced whole by a synced file.
pub(crate) fn forget_file(path: &Path) {
    if !super::active() {
        return;
    }
    with_state(|s| {
        if let Some(r) = recording_under(s, path) {
            r.files.remove(path);
        }
    });
}

/// A sync of `path` failed: its unsynced writes are lost now.
pub(super) fn sync_failed(s: &mut State, path: &Path) {
    if let Some(file) = recording_under(s, path).and_then(|r| r.files.remove(path)) {
        // Best effort: the test sees a failed undo as wrong contents later.
        let _ = undo(path, &file);
    }
}

fn open(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).open(path)
}

/// Undoes `file`'s unsynced writes and extension.
fn undo(path: &Path, file: &FileState) -> std::io::Result<()> {
    let f = open(path)?;
    for w in file.pending.iter().rev() {
        f.write_all_at(&w.old, w.offset)?;
    }
    f.set_len(file.durable_len)
}

/// Leaves the files under `dir` as a power loss could have (see the module
/// documentation), choosing by `seed`, and stops recording. Call it after the engine
/// that wrote them is gone.
pub fn power_loss(dir: &Path, seed: u64) -> std::io::Result<Loss> {
    let recording = with_state(|s| {
        let i = s.recordings.iter().position(|r| r.dir == dir);
        i.map(|i| s.recordings.swap_remove(i))
    });
    let mut recording = recording.unwrap_or_else(|| panic!("{} is not recorded", dir.display()));
    let mut rng = Rng::new(seed);
    let mut loss = Loss::default();
    let mut paths: Vec<PathBuf> = recording.files.keys().cloned().collect();
    paths.sort();
    for path in paths {
        let file = recording.files.remove(&path).expect("listed");
        if file.pending.is_empty() || !path.exists() {
            if path.exists() && std::fs::metadata(&path)?.len() > file.durable_len {
                open(&path)?.set_len(file.durable_len)?;
            }
            continue;
        }
        loss.files += 1;
        loss.unsynced_writes += file.pending.len();
        undo(&path, &file)?;
        let f = open(&path)?;
        let mut order: Vec<&Pending> = file.pending.iter().collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for w in order {
            match rng.below(3) {
                0 => loss.dropped += 1,
                1 => {
                    loss.applied_whole += 1;
                    f.write_all_at(&w.new, w.offset)?;
                }
                _ => {
                    loss.torn += 1;
                    for (i, sector) in w.new.chunks(SECTOR_BYTES).enumerate() {
                        if rng.below(2) == 0 {
                            f.write_all_at(sector, w.offset + (i * SECTOR_BYTES) as u64)?;
                        }
                    }
                }
            }
        }
    }
    Ok(loss)
}
