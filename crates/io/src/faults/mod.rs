//! Injected I/O faults and simulated power loss, for tests and `tessera torture`.
//!
//! Everything here is off until a caller arms it: then every [`DataFile`](crate::DataFile)
//! operation (and [`durable`](crate::durable)'s removals and replacements) on a file
//! under the armed directory asks this module first. Off, an operation pays one relaxed
//! atomic load. Tests of one binary run in parallel, so everything armed only ever
//! matches files under the directory that armed it.
//!
//! - [`arm`]: the next matching reads, writes or syncs fail with an OS error, after
//!   letting `skip` of them through; a failing read or write can first transfer part of
//!   its bytes (whole sectors), as a short transfer followed by an error does.
//! - [`disk_full_after`]: the directory's disk fills after so many more bytes written
//!   (or preallocated); the write that crosses the line writes what fits and fails with
//!   `ENOSPC`, and so does everything after until [`disarm`].
//! - [`power`]: records what was written since each file's last sync, cuts the power at
//!   a chosen operation and leaves the files as a power loss could (see that module).

pub mod power;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// Sector size: the unit of a partial transfer and of a torn write.
pub const SECTOR_BYTES: usize = 512;

/// SplitMix64: every choice of a fault campaign comes from a seed, so a failure replays.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `[0, n)`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// What a [`DataFile`](crate::DataFile) operation does, as armed faults match it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    Sync,
}

/// One armed failure.
#[derive(Clone, Debug)]
pub struct Fault {
    pub op: Op,
    /// Files under this directory...
    pub under: PathBuf,
    /// ...whose name ends with this (e.g. `.ldf`).
    pub suffix: String,
    /// How many matching operations succeed before the first failure.
    pub skip: u32,
    /// How many operations fail before the fault disarms itself.
    pub times: u32,
    /// The OS error reported (e.g. `libc::EIO`).
    pub errno: i32,
    /// A failing read or write first transfers its first half (whole sectors).
    pub partial: bool,
}

impl Fault {
    /// The next `op` on files under `under` named `…suffix` fails once with `errno`.
    pub fn new(op: Op, under: &Path, suffix: &str, errno: i32) -> Fault {
        Fault { op, under: under.to_path_buf(), suffix: suffix.to_string(), skip: 0, times: 1, errno, partial: false }
    }
}

/// What an operation does after asking: go ahead, fail, or transfer `bytes` then fail.
#[derive(Debug)]
pub(crate) enum Outcome {
    Pass,
    Fail(std::io::Error),
    Partial(usize, std::io::Error),
}

/// A directory whose disk holds only so many more bytes.
struct Quota {
    under: PathBuf,
    left_bytes: u64,
}

#[derive(Default)]
struct State {
    armed: Vec<Fault>,
    quotas: Vec<Quota>,
    recordings: Vec<power::Recording>,
}

impl State {
    fn is_empty(&self) -> bool {
        self.armed.is_empty() && self.quotas.is_empty() && self.recordings.is_empty()
    }
}

static ACTIVE: AtomicBool = AtomicBool::new(false);
static STATE: Mutex<State> = Mutex::new(State { armed: Vec::new(), quotas: Vec::new(), recordings: Vec::new() });

/// Whether anything is armed anywhere (the only cost of this module when nothing is).
#[inline]
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut state = STATE.lock();
    let out = f(&mut state);
    ACTIVE.store(!state.is_empty(), Ordering::Relaxed);
    out
}

/// Arms `fault`.
pub fn arm(fault: Fault) {
    assert!(fault.times > 0, "a fault that never fails");
    with_state(|s| s.armed.push(fault));
}

/// From now on, files under `dir` may grow by `bytes` more in all (writes and
/// preallocation); past that, `ENOSPC`.
pub fn disk_full_after(dir: &Path, bytes: u64) {
    with_state(|s| s.quotas.push(Quota { under: dir.to_path_buf(), left_bytes: bytes }));
}

/// How many armed faults under `dir` have not fired yet (all their times).
pub fn unfired(dir: &Path) -> usize {
    with_state(|s| s.armed.iter().filter(|f| f.under.starts_with(dir)).count())
}

/// Disarms every fault and quota under `dir` (a power-loss recording stays: see
/// [`power::power_loss`] and [`power::forget`]).
pub fn disarm(dir: &Path) {
    with_state(|s| {
        s.armed.retain(|f| !f.under.starts_with(dir));
        s.quotas.retain(|q| !q.under.starts_with(dir));
    });
}

fn os_error(errno: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(errno)
}

/// An armed fault for `op` on `path`: counts it, and gives its error if it fires.
fn fire(state: &mut State, op: Op, path: &Path) -> Option<(std::io::Error, bool)> {
    let i = state.armed.iter().position(|f| {
        f.op == op && path.starts_with(&f.under) && path.as_os_str().to_string_lossy().ends_with(&f.suffix)
    })?;
    let fault = &mut state.armed[i];
    if fault.skip > 0 {
        fault.skip -= 1;
        return None;
    }
    let out = (os_error(fault.errno), fault.partial);
    fault.times -= 1;
    if fault.times == 0 {
        state.armed.remove(i);
    }
    Some(out)
}

/// The first half of `len`, in whole sectors.
fn half(len: usize) -> usize {
    len / 2 / SECTOR_BYTES * SECTOR_BYTES
}

/// Before a read of `len` bytes from `path`.
pub(crate) fn read(path: &Path, len: usize) -> Outcome {
    with_state(|s| match fire(s, Op::Read, path) {
        None => Outcome::Pass,
        Some((e, true)) => Outcome::Partial(half(len), e),
        Some((e, false)) => Outcome::Fail(e),
    })
}

/// Before `grow_bytes` of new space are used under `path`'s quota: how many fit.
fn take_space(state: &mut State, path: &Path, grow_bytes: u64) -> Option<u64> {
    let quota = state.quotas.iter_mut().find(|q| path.starts_with(&q.under))?;
    let fits = quota.left_bytes.min(grow_bytes);
    quota.left_bytes -= fits;
    (fits < grow_bytes).then_some(fits)
}

/// Before a write of `len` bytes at `offset` of `path` (a file `len_before` long).
pub(crate) fn write(path: &Path, offset: u64, len: usize, len_before: u64) -> Outcome {
    with_state(|s| {
        if let Err(e) = power::operation(s, path, Some(len_before)) {
            return Outcome::Fail(e);
        }
        if let Some((e, partial)) = fire(s, Op::Write, path) {
            return if partial { Outcome::Partial(half(len), e) } else { Outcome::Fail(e) };
        }
        let grow = (offset + len as u64).saturating_sub(len_before);
        match take_space(s, path, grow) {
            None => Outcome::Pass,
            Some(fits) => {
                let room = (len_before.saturating_sub(offset) + fits).min(len as u64) as usize;
                Outcome::Partial(room / SECTOR_BYTES * SECTOR_BYTES, os_error(libc::ENOSPC))
            }
        }
    })
}

/// Before a sync of `path`. A failed sync loses what was written since the last one (as
/// Linux drops dirty pages whose write-back failed): see [`power::sync_failed`].
pub(crate) fn sync(path: &Path) -> std::io::Result<()> {
    with_state(|s| {
        power::operation(s, path, None)?;
        match fire(s, Op::Sync, path) {
            None => Ok(()),
            Some((e, _)) => {
                power::sync_failed(s, path);
                Err(e)
            }
        }
    })
}

/// Before `path` is cut or extended from `len_before` to `len` bytes.
pub(crate) fn resize(path: &Path, len_before: u64, len: u64) -> std::io::Result<()> {
    with_state(|s| {
        power::operation(s, path, Some(len_before))?;
        match take_space(s, path, len.saturating_sub(len_before)) {
            None => Ok(()),
            Some(_) => Err(os_error(libc::ENOSPC)),
        }
    })
}

/// Before `path` is removed or replaced whole.
pub(crate) fn rename_or_remove(path: &Path) -> std::io::Result<()> {
    with_state(|s| power::operation(s, path, None))
}

/// A real small disk: a tmpfs of `size` (as `mount -o size=` takes it: `24M`, `256k`)
/// mounted at a directory until dropped. Mounting needs root, as the test suite has in CI.
/// For what must fail as a full device does, outside the files this module can arm.
pub struct SmallDisk(PathBuf);

impl SmallDisk {
    pub fn mount(dir: &Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(dir).expect("the mount point");
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tessera-test"])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(status.success(), "mounting a small tmpfs needs root (as CI has): {status}");
        SmallDisk(dir.to_path_buf())
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[cfg(test)]
mod tests;
