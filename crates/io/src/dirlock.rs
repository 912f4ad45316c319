//! One process per data directory: an exclusive `flock` on a file in the directory,
//! held while the engine is open and released by the kernel when the process ends
//! (however it ends), so a crashed server never leaves a stale lock behind.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

use tessera_errors::msg;
use tessera_errors::{Error, Result};

/// The file locked in a data directory.
pub const LOCK_FILE: &str = "tessera.lock";

/// An exclusive lock on a data directory; released when dropped.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Locks `dir` for this process, or fails at once with error 5120 naming the
    /// process that holds it.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io("open the lock file", &path, 0, e))?;
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            let held = format!(": another tessera process (pid {}) is using it.", holder.trim());
            return Err(msg::PHYSICAL_FILE_OPEN_FAILED.engine(&[&"data directory", &dir.display(), &held]));
        }
        file.set_len(0).map_err(|e| Error::io("truncate the lock file", &path, 0, e))?;
        write!(file, "{}", std::process::id()).map_err(|e| Error::io("write the lock file", &path, 0, e))?;
        Ok(DirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_directory_fails_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        let e = DirLock::acquire(dir.path()).expect_err("the directory is locked");
        assert_eq!(e.number(), 5120);
        assert!(e.to_string().contains(&std::process::id().to_string()), "{e}");
        drop(first);
        DirLock::acquire(dir.path()).unwrap();
    }
}
