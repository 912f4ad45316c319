//! The files a run reads and writes: created and filled with random data when missing (or
//! extended when smaller than `-c`), checked for size, and opened with the caching flags asked
//! for (O_DIRECT, O_DSYNC).

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::params::{fmt_size, Access, Params, MIB};
use crate::rng::Rng;

/// Bytes written per call while filling a new file.
const FILL_CHUNK: usize = 4 * MIB as usize;

/// One target, open for the run.
#[derive(Debug)]
pub struct Target {
    pub path: PathBuf,
    pub file: File,
    /// The file's size in bytes.
    pub len: u64,
    /// The I/O range `[start, end)`.
    pub start: u64,
    pub end: u64,
    /// Whether this run created or extended the file.
    pub filled: bool,
}

/// Creates, fills, checks and opens every target of `params`. `progress` hears about long
/// fills.
pub fn prepare(params: &Params, progress: &mut dyn FnMut(&str)) -> Result<Vec<Target>> {
    params.targets.iter().map(|path| prepare_one(params, path, progress)).collect()
}

fn prepare_one(params: &Params, path: &Path, progress: &mut dyn FnMut(&str)) -> Result<Target> {
    let mut filled = false;
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(Error::new(format!("'{}' is a directory, not a file", path.display())));
        }
        Ok(meta) if meta.file_type().is_block_device() => {
            if params.create_size.is_some() {
                return Err(Error::new(format!("-c cannot create or resize the block device '{}'", path.display())));
            }
        }
        Ok(meta) => {
            if let Some(size) = params.create_size {
                if meta.len() < size {
                    fill(path, meta.len(), size, false, progress)?;
                    filled = true;
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match params.create_size {
            Some(size) => {
                fill(path, 0, size, true, progress)?;
                filled = true;
            }
            None => {
                return Err(Error::new(format!(
                    "'{}' does not exist: give -c<size> to create it (e.g. -c1G)",
                    path.display()
                )))
            }
        },
        Err(e) => return Err(Error::io("read the attributes of", path, &e)),
    }
    let mut file = open(path, params.direct, params.write_through, params.write_pct > 0)?;
    let len = file.seek(SeekFrom::End(0)).map_err(|e| Error::io("find the size of", path, &e))?;
    let (start, end) = params.range(len);
    let block = params.block_size;
    if end < start.saturating_add(block) {
        return Err(Error::new(format!(
            "'{}' is too small: it has {len} bytes, and one {block}-byte block from offset {start} needs {}; \
             make it larger with -c<size>",
            path.display(),
            start + block
        )));
    }
    if let Access::Sequential { .. } = params.access {
        let last = u64::from(params.threads_per_target.saturating_sub(1)) * params.thread_stride;
        if start + last + block > end {
            return Err(Error::new(format!(
                "-T: thread {} of '{}' would start at offset {}, past the last block of its range (which ends at {end})",
                params.threads_per_target - 1,
                path.display(),
                start + last
            )));
        }
    }
    Ok(Target { path: path.to_path_buf(), file, len, start, end, filled })
}

/// Opens `path` for the run's I/O.
pub fn open(path: &Path, direct: bool, write_through: bool, write: bool) -> Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(write);
    let mut flags = 0;
    if direct {
        flags |= libc::O_DIRECT;
    }
    if write_through {
        flags |= libc::O_DSYNC;
    }
    opts.custom_flags(flags);
    opts.open(path).map_err(|e| {
        if direct && e.raw_os_error() == Some(libc::EINVAL) {
            Error::new(format!(
                "the filesystem holding '{}' does not support O_DIRECT (unbuffered I/O, asked for by -S, -Su, -Sh \
                 or -h); run without those flags or put the file on another filesystem",
                path.display()
            ))
        } else {
            Error::io("open", path, &e)
        }
    })
}

/// Writes random bytes to `path` from `from` up to `to`, creating the file when `create`,
/// then makes them durable and drops them from the page cache. A file this call created is
/// removed again if filling fails.
fn fill(path: &Path, from: u64, to: u64, create: bool, progress: &mut dyn FnMut(&str)) -> Result<()> {
    let mut opts = OpenOptions::new();
    opts.write(true);
    if create {
        opts.create_new(true);
    }
    let file = opts.open(path).map_err(|e| Error::io(if create { "create" } else { "open" }, path, &e))?;
    let result = write_random(&file, path, from, to, progress);
    if result.is_err() && create {
        drop(file);
        let _ = std::fs::remove_file(path);
    }
    result
}

fn write_random(file: &File, path: &Path, from: u64, to: u64, progress: &mut dyn FnMut(&str)) -> Result<()> {
    let fd = file.as_raw_fd();
    // Reserve the space first so a full disk fails now, not halfway; filesystems that cannot
    // preallocate simply get written.
    // SAFETY: plain syscall on an open descriptor.
    let rc = unsafe { libc::posix_fallocate(fd, from as libc::off_t, (to - from) as libc::off_t) };
    if rc == libc::ENOSPC || rc == libc::EDQUOT || rc == libc::EFBIG {
        let e = std::io::Error::from_raw_os_error(rc);
        return Err(Error::new(format!("cannot make '{}' {} long: {e}", path.display(), fmt_size(to))));
    }
    let announce = to - from >= 256 * MIB;
    if announce {
        progress(&format!("filling '{}' with {} of random data", path.display(), fmt_size(to - from)));
    }
    let mut rng = Rng::new(0x7e55_e7a0 ^ to);
    let mut buf = vec![0u8; FILL_CHUNK];
    let mut offset = from;
    let mut next_report = from + 4 * 1024 * MIB;
    while offset < to {
        let n = ((to - offset) as usize).min(FILL_CHUNK);
        rng.fill(&mut buf[..n]);
        file.write_all_at(&buf[..n], offset).map_err(|e| {
            Error::new(format!("cannot fill '{}' to {}: {e} (at offset {offset})", path.display(), fmt_size(to)))
        })?;
        offset += n as u64;
        if announce && offset >= next_report && offset < to {
            progress(&format!("  {} of {} written", fmt_size(offset - from), fmt_size(to - from)));
            next_report += 4 * 1024 * MIB;
        }
    }
    file.sync_data().map_err(|e| Error::io("sync", path, &e))?;
    // SAFETY: plain syscall on an open descriptor; a failure only leaves pages cached.
    unsafe { libc::posix_fadvise(fd, from as libc::off_t, (to - from) as libc::off_t, libc::POSIX_FADV_DONTNEED) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::KIB;

    fn params(dir: &Path, args: &str) -> Params {
        let mut v: Vec<String> = args.split_whitespace().map(String::from).collect();
        v.push(dir.join("t.dat").display().to_string());
        match crate::parser::parse(&v).unwrap() {
            crate::parser::Parsed::Run(p) => *p,
            _ => unreachable!(),
        }
    }

    #[test]
    fn creates_and_fills_with_random_data() {
        let dir = tempfile::tempdir().unwrap();
        let p = params(dir.path(), "-c1M -b4K");
        let mut heard = Vec::new();
        let t = prepare(&p, &mut |m| heard.push(m.to_string())).unwrap();
        assert_eq!(t[0].len, MIB);
        assert!(t[0].filled);
        assert_eq!((t[0].start, t[0].end), (0, MIB));
        let data = std::fs::read(dir.path().join("t.dat")).unwrap();
        assert_eq!(data.len(), MIB as usize);
        let zeros = data.iter().filter(|&&b| b == 0).count();
        assert!(zeros < data.len() / 100, "{zeros} zero bytes");
        // Not sparse: every block is allocated.
        let meta = std::fs::metadata(dir.path().join("t.dat")).unwrap();
        assert!(std::os::unix::fs::MetadataExt::blocks(&meta) * 512 >= MIB);
        // A second run leaves it alone.
        let t = prepare(&p, &mut |_| {}).unwrap();
        assert!(!t[0].filled);
    }

    #[test]
    fn extends_a_smaller_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.dat"), vec![7u8; 8192]).unwrap();
        let t = prepare(&params(dir.path(), "-c64K -b4K"), &mut |_| {}).unwrap();
        assert_eq!(t[0].len, 64 * KIB);
        let data = std::fs::read(dir.path().join("t.dat")).unwrap();
        assert!(data[..8192].iter().all(|&b| b == 7));
        assert!(data[8192..].iter().any(|&b| b != 7));
    }

    #[test]
    fn missing_and_small_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let e = prepare(&params(dir.path(), "-b4K"), &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("does not exist") && e.contains("-c"), "{e}");
        std::fs::write(dir.path().join("t.dat"), vec![0u8; 1000]).unwrap();
        let e = prepare(&params(dir.path(), "-b4K"), &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("too small") && e.contains("t.dat") && e.contains("1000 bytes"), "{e}");
        std::fs::write(dir.path().join("t.dat"), vec![0u8; 8192]).unwrap();
        let e = prepare(&params(dir.path(), "-b4K -B8K"), &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("too small"), "{e}");
        let e = prepare(&params(dir.path(), "-b4K -s -t3 -T4K"), &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("-T: thread 2"), "{e}");
        prepare(&params(dir.path(), "-b4K -s -t2 -T4K"), &mut |_| {}).unwrap();
    }

    #[test]
    fn uncreatable_files_are_reported() {
        let e = prepare(
            &Params { targets: vec!["/nonexistent-dir/x/t.dat".into()], create_size: Some(MIB), ..Params::default() },
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cannot create '/nonexistent-dir/x/t.dat'"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = prepare(
            &Params { targets: vec![dir.path().to_path_buf()], create_size: Some(MIB), ..Params::default() },
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("is a directory"), "{e}");
    }
}
