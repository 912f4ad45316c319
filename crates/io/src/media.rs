//! A file read and written in order: a backup's media. It goes through the same fault
//! layer as the engine's files ([`crate::faults`]), so a backup or a restore meets
//! injected EIO, short transfers, a full disk and a power loss where a database's files
//! would. It is [`std::io::Read`], [`std::io::Write`] and [`std::io::Seek`] over a
//! [`DataFile`] and a position; errors are the operating system's, as a plain file's. Its
//! reads and writes are timed in the process's backup histograms ([`crate::stats`]).

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::stats::FileKind;
use crate::{DataFile, OpenMode};
use tessera_errors::Error;

pub struct MediaFile {
    file: DataFile,
    pos: u64,
}

/// The operating system's error inside an engine I/O error.
fn os(e: Error) -> io::Error {
    match e {
        Error::Io { source, .. } => source,
        other => io::Error::other(other.to_string()),
    }
}

impl MediaFile {
    /// Opens `path` to write, making it (and its name durable) if it is missing.
    pub fn open_or_create(path: &Path) -> io::Result<MediaFile> {
        let file = match DataFile::open(path, OpenMode::CreateNew, false) {
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::AlreadyExists => {
                DataFile::open(path, OpenMode::Existing, false)
            }
            other => other,
        }
        .map_err(os)?;
        Ok(MediaFile { file: file.measured(FileKind::Backup), pos: 0 })
    }

    /// Opens an existing `path` to read.
    pub fn open(path: &Path) -> io::Result<MediaFile> {
        let file = DataFile::open(path, OpenMode::ReadOnly, false).map_err(os)?;
        Ok(MediaFile { file: file.measured(FileKind::Backup), pos: 0 })
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Whether it is a regular file (not a device such as /dev/null, which is never cut).
    pub fn is_regular(&self) -> io::Result<bool> {
        self.file.is_regular().map_err(os)
    }

    pub fn len(&self) -> io::Result<u64> {
        self.file.len().map_err(os)
    }

    pub fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// A second reader or writer of the same file, with a position of its own.
    pub fn try_clone(&self) -> io::Result<MediaFile> {
        Ok(MediaFile { file: self.file.try_clone().map_err(os)?, pos: self.pos })
    }

    /// Reads exactly `buf.len()` bytes at `offset`, leaving the position where it was.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset).map_err(os)
    }

    /// Cuts or extends the file to `len` bytes (the position stays).
    pub fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len).map_err(os)
    }

    /// Writes `buf` at `offset`, leaving the position where it was.
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset).map_err(os)
    }

    /// Makes the data and the metadata durable (fsync).
    pub fn sync_all(&self) -> io::Result<()> {
        self.file.sync_all().map_err(os)
    }
}

impl Read for MediaFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos).map_err(os)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Write for MediaFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write_all_at(buf, self.pos).map_err(os)?;
        self.pos += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for MediaFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len()?.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a seek before the start"))?;
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::{self, Fault, Op};

    #[test]
    fn reads_writes_and_seeks_in_order_and_meets_armed_faults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.bak");
        let mut m = MediaFile::open_or_create(&path).unwrap();
        m.write_all(b"hello ").unwrap();
        m.write_all(b"world").unwrap();
        assert_eq!(m.stream_position().unwrap(), 11);
        m.sync_all().unwrap();
        let mut again = MediaFile::open_or_create(&path).unwrap();
        assert_eq!(again.seek(SeekFrom::End(-5)).unwrap(), 6);
        let mut text = String::new();
        again.read_to_string(&mut text).unwrap();
        assert_eq!(text, "world");
        assert!(again.is_regular().unwrap());

        faults::arm(Fault::new(Op::Write, dir.path(), "/m.bak", libc::EIO));
        let err = m.write_all(b"!").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "the system's error, as a plain file gives it");
        faults::arm(Fault::new(Op::Read, dir.path(), "/m.bak", libc::EIO));
        let mut reader = MediaFile::open(&path).unwrap();
        assert_eq!(reader.read(&mut [0; 4]).unwrap_err().raw_os_error(), Some(libc::EIO));
        faults::disarm(dir.path());
        assert!(MediaFile::open(&dir.path().join("missing.bak")).is_err());
    }
}
