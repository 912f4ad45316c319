//! Injected I/O failures, for tests (feature `faults`; never in a release build of the
//! server). A test arms a [`Fault`] for the files under its own directory; the next
//! operations of that kind on a matching file fail with the given OS error, as the kernel
//! would report them, before the real operation runs. Tests of one binary run in
//! parallel, so a fault only ever matches files under the directory that armed it.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;

/// What a [`DataFile`](crate::DataFile) operation does.
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
    /// How many operations fail before the fault disarms itself.
    pub times: u32,
    /// The OS error reported (e.g. `libc::EIO`).
    pub errno: i32,
}

static ARMED: Mutex<Vec<Fault>> = Mutex::new(Vec::new());

/// Arms `fault`.
pub fn arm(fault: Fault) {
    ARMED.lock().push(fault);
}

/// Disarms every fault under `dir`.
pub fn disarm(dir: &Path) {
    ARMED.lock().retain(|f| !f.under.starts_with(dir));
}

/// The injected failure for `op` on `path`, if one is armed (and counts it).
pub(crate) fn check(op: Op, path: &Path) -> std::io::Result<()> {
    let mut armed = ARMED.lock();
    let hit = armed.iter().position(|f| {
        f.op == op && path.starts_with(&f.under) && path.as_os_str().to_string_lossy().ends_with(&f.suffix)
    });
    let Some(i) = hit else { return Ok(()) };
    let errno = armed[i].errno;
    armed[i].times -= 1;
    if armed[i].times == 0 {
        armed.remove(i);
    }
    Err(std::io::Error::from_raw_os_error(errno))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataFile, OpenMode};

    #[test]
    fn an_armed_sync_fails_as_often_as_asked_and_only_under_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let log = DataFile::open(&dir.path().join("d_log.ldf"), OpenMode::CreateNew, false).unwrap();
        let data = DataFile::open(&dir.path().join("d.mdf"), OpenMode::CreateNew, false).unwrap();
        let elsewhere = DataFile::open(&other.path().join("e_log.ldf"), OpenMode::CreateNew, false).unwrap();
        arm(Fault { op: Op::Sync, under: dir.path().into(), suffix: ".ldf".into(), times: 2, errno: libc::EIO });
        data.sync_data().unwrap();
        elsewhere.sync_data().unwrap();
        log.write_all_at(b"x", 0).unwrap();
        for _ in 0..2 {
            let e = log.sync_data().unwrap_err();
            assert_eq!(e.number(), 823);
            assert!(e.to_string().contains("d_log.ldf"), "{e}");
        }
        log.sync_data().unwrap();
        arm(Fault { op: Op::Write, under: dir.path().into(), suffix: ".mdf".into(), times: 5, errno: libc::ENOSPC });
        assert!(data.write_all_at(b"y", 0).unwrap_err().is_disk_full());
        disarm(dir.path());
        data.write_all_at(b"y", 0).unwrap();
    }
}
