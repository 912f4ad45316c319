//! Crash-safe names and small whole files.
//!
//! A file's data is durable after `fsync` of the file; its *name* is durable only after
//! `fsync` of the directory that holds it. On a power loss a filesystem may drop anything
//! written since the last sync, in any order: a file written in place can come back empty
//! or truncated, and a file or directory created without a directory sync can be gone.
//!
//! - [`write_atomically`]: a small file replaced whole (write a temporary file beside it,
//!   sync it, rename it over the target, sync the directory). After a crash the path holds
//!   the old contents or the new ones, never a mix, and once it returns the new ones stay.
//! - [`create_dir_all`]: directories that stay created.
//! - [`sync_dir`]: makes the names in a directory (created, renamed, removed) durable.
//! - [`remove_file`]: removes a file (the engine's files are removed only through it, so
//!   a simulated power loss ([`crate::faults::power`]) can stop it).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use tessera_errors::{Error, Result};

/// Makes the entries of `dir` (names created, renamed or removed in it) durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io("sync", dir, 0, e))
}

/// Syncs the directory holding `path` (the current directory for a bare name).
pub fn sync_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => sync_dir(dir),
        _ => sync_dir(Path::new(".")),
    }
}

/// Creates `dir` and any missing parents, each durably: the directory holding every
/// directory made here is synced, so none of them can vanish in a power loss.
pub fn create_dir_all(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_all(parent)?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => sync_parent(dir),
        // Made meanwhile by someone else, who syncs it.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(Error::io("create directory", dir, 0, e)),
    }
}

/// Replaces the file at `path` with `bytes` atomically and durably; a new file gets
/// permission bits `mode` (before umask). A temporary file `path.tmp` is left only by a
/// crash, and the next call replaces it.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    if crate::faults::active() {
        crate::faults::rename_or_remove(path).map_err(|e| Error::io("replace", path, 0, e))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = Path::new(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(tmp)
        .map_err(|e| Error::io("create", tmp, 0, e))?;
    file.write_all(bytes).map_err(|e| Error::io("write", tmp, 0, e))?;
    file.sync_all().map_err(|e| Error::io("sync", tmp, 0, e))?;
    drop(file);
    std::fs::rename(tmp, path).map_err(|e| Error::io("rename", path, 0, e))?;
    sync_parent(path)?;
    crate::faults::power::forget_file(path);
    Ok(())
}

/// Removes the file at `path` (its directory is not synced: a caller that needs the
/// removal to survive a crash syncs it).
pub fn remove_file(path: &Path) -> std::io::Result<()> {
    if crate::faults::active() {
        crate::faults::rename_or_remove(path)?;
    }
    std::fs::remove_file(path)?;
    crate::faults::power::forget_file(path);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_file_holds_the_new_bytes_and_no_temporary_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        write_atomically(&path, b"first", 0o600).unwrap();
        write_atomically(&path, b"second", 0o600).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "only the file itself");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o077, 0, "private");
    }

    #[test]
    fn a_temporary_left_by_a_crash_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry");
        std::fs::write(dir.path().join("registry.tmp"), b"torn half of an earlier wri").unwrap();
        write_atomically(&path, b"whole", 0o644).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
        assert!(!dir.path().join("registry.tmp").exists());
    }

    #[test]
    fn nested_directories_are_created_and_an_existing_one_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a").join("b").join("c");
        create_dir_all(&deep).unwrap();
        assert!(deep.is_dir());
        create_dir_all(&deep).unwrap();
        let file = dir.path().join("a").join("f");
        std::fs::write(&file, b"x").unwrap();
        let e = create_dir_all(&file.join("g")).unwrap_err();
        assert_eq!(e.number(), 823, "{e}");
    }
}
