use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::descriptors::{Access, Descriptor};
use crate::stats::{Direction, FileKind, FileSample, FileStats};
use crate::{faults, AlignedBuf, IO_ALIGN};
use tessera_errors::{Error, Result};

/// How [`DataFile::open`] treats the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// The file must not exist yet.
    CreateNew,
    /// The file must already exist.
    Existing,
    /// The file must already exist; it is opened to read only.
    ReadOnly,
}

/// A file read and written at explicit offsets, safe to share between threads.
///
/// With `direct` the file is opened with O_DIRECT, so every buffer, offset and length
/// must be a multiple of [`IO_ALIGN`]; a filesystem that refuses O_DIRECT is reported
/// as an error naming the file.
///
/// A file [`measured`](DataFile::measured) counts its reads and writes, their bytes and
/// their time (see [`crate::stats`]).
///
/// Its descriptor is kept by the process's [descriptor cache](crate::descriptors), which
/// may close it while the file is not in use and reopens it on demand.
#[derive(Debug)]
pub struct DataFile {
    /// Shared by its handles ([`DataFile::try_clone`]); it keeps the path too.
    descriptor: Arc<Descriptor>,
    direct: bool,
    /// The counters of a measured file, shared by its handles.
    stats: Option<Arc<FileStats>>,
}

impl DataFile {
    /// Opens `path`; a file made here ([`OpenMode::CreateNew`]) has its name made durable
    /// (its directory synced) before this returns.
    pub fn open(path: &Path, mode: OpenMode, direct: bool) -> Result<DataFile> {
        let access = Access { write: mode != OpenMode::ReadOnly, direct };
        let descriptor = Descriptor::open(path, access, mode == OpenMode::CreateNew).map_err(|e| {
            if direct && e.raw_os_error() == Some(libc::EINVAL) {
                Error::Invalid(format!(
                    "the filesystem holding '{}' does not support O_DIRECT (unbuffered) I/O",
                    path.display()
                ))
            } else {
                Error::io("open", path, 0, e)
            }
        })?;
        if mode == OpenMode::CreateNew {
            // The new name must survive a power loss as the data written to it will.
            crate::durable::sync_parent(path)?;
        }
        Ok(DataFile { descriptor: Arc::new(descriptor), direct, stats: None })
    }

    /// This file with its reads and writes counted from now on, in counters of its own
    /// and in the process's histograms of `kind` (see [`crate::stats`]).
    pub fn measured(self, kind: FileKind) -> DataFile {
        DataFile { stats: Some(Arc::new(FileStats::new(kind))), ..self }
    }

    /// What this file's reads and writes have cost so far (zeros if it is not measured),
    /// its size and its descriptor.
    pub fn sample(&self) -> Result<FileSample> {
        Ok(FileSample {
            figures: self.stats.as_ref().map(|s| s.figures()).unwrap_or_default(),
            size: self.len()?,
            handle: self.descriptor.id(),
        })
    }

    /// Runs `io`, a read or a write; in a measured file, timed and counted with the bytes
    /// `bytes` says it moved (none if it failed).
    #[inline]
    fn measure<T>(
        &self,
        direction: Direction,
        bytes: impl Fn(&T) -> usize,
        io: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let Some(stats) = &self.stats else { return io() };
        let started = Instant::now();
        let result = io();
        stats.record(direction, result.as_ref().map_or(0, bytes), started.elapsed());
        result
    }

    /// Asks [`faults`] before a read of `buf.len()` bytes: a partial read fills the
    /// first bytes of `buf` and fails.
    #[cold]
    fn read_with_faults(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let fail = |e| Err(Error::io("read", self.path(), offset, e));
        match faults::read(self.path(), buf.len()) {
            faults::Outcome::Pass => Ok(()),
            faults::Outcome::Fail(e) => fail(e),
            faults::Outcome::Partial(n, e) => {
                let n = if self.direct { n / IO_ALIGN * IO_ALIGN } else { n };
                let _ = self.descriptor.file()?.read_at(&mut buf[..n], offset);
                fail(e)
            }
        }
    }

    /// A write under [`faults`]: it may fail, write part of `buf` and fail, or (when its
    /// directory is recorded for a power loss) keep the bytes it overwrites.
    #[cold]
    fn write_with_faults(&self, buf: &[u8], offset: u64) -> Result<()> {
        let fail = |e| Error::io("write", self.path(), offset, e);
        let (len, error) = match faults::write(self.path(), offset, buf.len(), self.len()?) {
            faults::Outcome::Pass => (buf.len(), None),
            faults::Outcome::Fail(e) => return Err(fail(e)),
            faults::Outcome::Partial(n, e) => (if self.direct { n / IO_ALIGN * IO_ALIGN } else { n }, Some(e)),
        };
        let old = faults::power::recording(self.path()).then(|| self.bytes_at(offset, len)).transpose()?;
        let file = self.descriptor.file()?;
        crate::profile::through(self.path(), offset, len, || file.write_all_at(&buf[..len], offset)).map_err(fail)?;
        if let Some(old) = old {
            faults::power::wrote(self.path(), offset, old, &buf[..len]);
        }
        error.map_or(Ok(()), |e| Err(fail(e)))
    }

    /// The bytes now at `[offset, offset + len)`, fewer where the file ends first. Read
    /// into an aligned buffer, as a file opened with O_DIRECT needs.
    fn bytes_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = AlignedBuf::new(len.next_multiple_of(IO_ALIGN).max(IO_ALIGN));
        let mut done = 0;
        let file = self.descriptor.file()?;
        while done < len {
            let want = buf.len() - done;
            match file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(n) => {
                    done += n;
                    if n < want {
                        break; // the end of the file
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("read", self.path(), offset, e)),
            }
        }
        Ok(buf[..done.min(len)].to_vec())
    }

    pub fn path(&self) -> &Path {
        self.descriptor.path()
    }

    /// A second handle on the same file (sharing its descriptor and its counters).
    pub fn try_clone(&self) -> Result<DataFile> {
        Ok(DataFile { descriptor: self.descriptor.clone(), direct: self.direct, stats: self.stats.clone() })
    }

    pub fn is_direct(&self) -> bool {
        self.direct
    }

    fn check_alignment(&self, offset: u64, len: usize, addr: usize) {
        if self.direct {
            assert!(
                offset.is_multiple_of(IO_ALIGN as u64) && len.is_multiple_of(IO_ALIGN) && addr.is_multiple_of(IO_ALIGN),
                "O_DIRECT transfer not aligned: offset {offset} len {len}"
            );
        }
    }

    /// Reads exactly `buf.len()` bytes at `offset`; reading past the end is an error.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.check_alignment(offset, buf.len(), buf.as_ptr() as usize);
        if faults::active() {
            self.read_with_faults(buf, offset)?;
        }
        let len = buf.len();
        self.measure(
            Direction::Read,
            |_| len,
            || {
                let file = self.descriptor.file()?;
                crate::profile::through(self.path(), offset, len, || file.read_exact_at(buf, offset))
                    .map_err(|e| Error::io("read", self.path(), offset, e))
            },
        )
    }

    /// Fills every buffer of `bufs`, in order, from consecutive bytes starting at `offset`:
    /// one `preadv` for the whole run (one device request under a profile), continued
    /// after a short read. Reading past the end is an error.
    pub fn read_exact_vectored_at(&self, bufs: &mut [&mut [u8]], offset: u64) -> Result<()> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if faults::active() {
            if let faults::Outcome::Fail(e) | faults::Outcome::Partial(_, e) = faults::read(self.path(), total) {
                return Err(Error::io("read", self.path(), offset, e));
            }
        }
        let mut at = offset;
        for b in bufs.iter() {
            self.check_alignment(at, b.len(), b.as_ptr() as usize);
            at += b.len() as u64;
        }
        let file = self.descriptor.file()?;
        let io = || -> std::io::Result<()> {
            let mut done = 0usize;
            while done < total {
                // The iovecs still to fill: skip whole buffers already read, trim a partial one.
                let mut skip = done;
                let mut iov = Vec::with_capacity(bufs.len());
                for b in bufs.iter_mut() {
                    if skip >= b.len() {
                        skip -= b.len();
                        continue;
                    }
                    iov.push(libc::iovec { iov_base: b[skip..].as_mut_ptr().cast(), iov_len: b.len() - skip });
                    skip = 0;
                }
                let count = iov.len().min(libc::UIO_MAXIOV as usize) as libc::c_int;
                // SAFETY: every iovec points into a distinct live `&mut [u8]` of `bufs`.
                let n = unsafe {
                    libc::preadv(file.as_raw_fd(), iov.as_ptr(), count, (offset + done as u64) as libc::off_t)
                };
                match n {
                    0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                    n if n > 0 => done += n as usize,
                    _ => {
                        let e = std::io::Error::last_os_error();
                        if e.kind() != std::io::ErrorKind::Interrupted {
                            return Err(e);
                        }
                    }
                }
            }
            Ok(())
        };
        self.measure(
            Direction::Read,
            |_| total,
            || {
                crate::profile::through(self.path(), offset, total, io)
                    .map_err(|e| Error::io("read", self.path(), offset, e))
            },
        )
    }

    /// Reads up to `buf.len()` bytes at `offset`, returning how many were read (0 at end of file).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        self.check_alignment(offset, buf.len(), buf.as_ptr() as usize);
        if faults::active() {
            self.read_with_faults(buf, offset)?;
        }
        let len = buf.len();
        self.measure(
            Direction::Read,
            |&n| n,
            || loop {
                let file = self.descriptor.file()?;
                match crate::profile::through(self.path(), offset, len, || file.read_at(buf, offset)) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::io("read", self.path(), offset, e)),
                }
            },
        )
    }

    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.check_alignment(offset, buf.len(), buf.as_ptr() as usize);
        self.measure(
            Direction::Write,
            |_| buf.len(),
            || {
                if faults::active() {
                    self.write_with_faults(buf, offset)?;
                } else {
                    let file = self.descriptor.file()?;
                    crate::profile::through(self.path(), offset, buf.len(), || file.write_all_at(buf, offset))
                        .map_err(|e| Error::io("write", self.path(), offset, e))?;
                }
                self.descriptor.wrote();
                Ok(())
            },
        )
    }

    /// Makes written data durable (fdatasync).
    pub fn sync_data(&self) -> Result<()> {
        self.sync(|f| f.sync_data())
    }

    /// Makes data and metadata durable (fsync).
    pub fn sync_all(&self) -> Result<()> {
        self.sync(|f| f.sync_all())
    }

    fn sync(&self, how: impl Fn(&std::fs::File) -> std::io::Result<()>) -> Result<()> {
        let fail = |e| Error::io("sync", self.path(), 0, e);
        if !faults::active() {
            return self.descriptor.sync(how).map_err(fail);
        }
        faults::sync(self.path()).map_err(fail)?;
        self.descriptor
            .sync(|file| {
                how(file)?;
                faults::power::synced(self.path(), file.metadata()?.len());
                Ok(())
            })
            .map_err(fail)
    }

    /// Cuts or extends the file to `len` through `how`, under [`faults`] when armed.
    fn resize(&self, len: u64, how: impl FnOnce() -> Result<()>) -> Result<()> {
        if !faults::active() {
            how()?;
            self.descriptor.wrote();
            return Ok(());
        }
        let current = self.len()?;
        faults::resize(self.path(), current, len).map_err(|e| Error::io("extend", self.path(), current, e))?;
        how()?;
        self.descriptor.wrote();
        faults::power::resized(self.path(), len);
        Ok(())
    }

    pub fn len(&self) -> Result<u64> {
        self.descriptor.file()?.metadata().map(|m| m.len()).map_err(|e| Error::io("stat", self.path(), 0, e))
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Whether the file is a regular one (not a device).
    pub fn is_regular(&self) -> Result<bool> {
        self.descriptor.file()?.metadata().map(|m| m.is_file()).map_err(|e| Error::io("stat", self.path(), 0, e))
    }

    /// Reserves disk blocks for `[0, len)` so later writes cannot fail for lack of space
    /// and a data sync need not update block maps. Falls back to extending the file
    /// where the filesystem cannot preallocate.
    pub fn allocate(&self, len: u64) -> Result<()> {
        let current = self.len()?;
        if len <= current {
            return Ok(());
        }
        self.resize(len, || self.allocate_from(current, len))
    }

    fn allocate_from(&self, current: u64, len: u64) -> Result<()> {
        let off = current as libc::off_t;
        let add = (len - current) as libc::off_t;
        // SAFETY: plain syscall on an owned descriptor.
        let file = self.descriptor.file()?;
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), off, add) };
        match rc {
            0 => Ok(()),
            libc::EOPNOTSUPP | libc::EINVAL => {
                file.set_len(len).map_err(|e| Error::io("extend", self.path(), current, e))
            }
            err => Err(Error::io("allocate", self.path(), current, std::io::Error::from_raw_os_error(err))),
        }
    }

    /// Asks the kernel to drop this file's clean cached pages, so the next reads come from
    /// the device (`DBCC DROPCLEANBUFFERS` on buffered files). Advisory: errors are ignored.
    pub fn drop_os_cache(&self) {
        if let Ok(file) = self.descriptor.file() {
            // SAFETY: plain syscall on an owned descriptor; offset 0, length 0 = the whole file.
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }

    /// Cuts or extends the file to exactly `len` bytes.
    pub fn set_len(&self, len: u64) -> Result<()> {
        self.resize(len, || {
            self.descriptor.file()?.set_len(len).map_err(|e| Error::io("truncate", self.path(), len, e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_allocate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.dat");
        let f = DataFile::open(&path, OpenMode::CreateNew, false).unwrap();
        f.allocate(3 * 8192).unwrap();
        assert_eq!(f.len().unwrap(), 3 * 8192);
        let mut buf = AlignedBuf::new(8192);
        buf[0] = 7;
        buf[8191] = 9;
        f.write_all_at(&buf, 8192).unwrap();
        f.sync_data().unwrap();
        let mut back = AlignedBuf::new(8192);
        f.read_exact_at(&mut back, 8192).unwrap();
        let (mut a, mut b) = (AlignedBuf::new(4096), AlignedBuf::new(4096));
        f.read_exact_vectored_at(&mut [&mut a[..], &mut b[..]], 8192).unwrap();
        assert_eq!([&a[..], &b[..]].concat(), &back[..]);
        assert!(f.read_exact_vectored_at(&mut [&mut a[..], &mut b[..]], 3 * 8192 - 4096).is_err());
        assert_eq!((back[0], back[8191]), (7, 9));
        assert!(f.read_exact_at(&mut back, 3 * 8192).is_err());
        assert!(DataFile::open(&path, OpenMode::CreateNew, false).is_err());
    }

    #[test]
    fn a_measured_file_counts_its_reads_and_writes_in_every_handle() {
        use crate::stats::{Direction, FileKind};
        let dir = tempfile::tempdir().unwrap();
        let plain = DataFile::open(&dir.path().join("f.dat"), OpenMode::CreateNew, false).unwrap();
        plain.write_all_at(&[1; 100], 0).unwrap();
        assert_eq!(plain.sample().unwrap().figures, Default::default(), "not measured: nothing counted");
        let writes_before = crate::stats::latency(FileKind::Log, Direction::Write).snapshot().count;
        let f = plain.measured(FileKind::Log);
        f.write_all_at(&[2; 300], 0).unwrap();
        let twin = f.try_clone().unwrap();
        let mut buf = [0u8; 200];
        twin.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(twin.read_at(&mut buf, 250).unwrap(), 50);
        assert!(f.read_exact_at(&mut buf, 250).is_err(), "past the end: counted, no bytes");
        let s = f.sample().unwrap();
        assert_eq!((s.figures.writes, s.figures.bytes_written), (1, 300));
        assert_eq!((s.figures.reads, s.figures.bytes_read), (3, 250));
        assert_eq!(s.size, 300);
        assert!(crate::stats::latency(FileKind::Log, Direction::Write).snapshot().count > writes_before);
    }

    #[test]
    fn missing_file_is_an_error_naming_it() {
        let err = DataFile::open(Path::new("/nonexistent/dir/x.dat"), OpenMode::Existing, false).unwrap_err();
        assert_eq!(err.number(), 823);
        assert!(err.to_string().contains("/nonexistent/dir/x.dat"));
    }
}
