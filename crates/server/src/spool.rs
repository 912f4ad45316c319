//! Long request values kept on disk while their request runs. A PLP parameter of at
//! least `large::LAZY_BYTES` that arrives through `packet::PacketInput` is written to a
//! spool file as its chunks arrive, and reaches the session as a `Value::Large` reading
//! from that file — so a value of up to 2 GiB comes in through a few packets of memory,
//! and an INSERT stores it from the file in pieces. The file has no name (it is gone
//! once the last copy of the value is dropped, or if the server dies) and lives in the
//! server's data directory, never in a memory-backed temporary directory.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use tessera_errors::SqlResult;
use tessera_semantics::types::{LargeKind, LargeSource, LargeValue};

/// Bytes gathered before one write to the spool file.
const WRITE_BUFFER_BYTES: usize = 256 << 10;

/// A spool file being written.
pub struct Spool {
    file: BufWriter<File>,
    len: u64,
}

impl Spool {
    /// A new, empty, unnamed spool file in `dir`.
    pub fn create(dir: &Path) -> io::Result<Spool> {
        let file = tempfile::tempfile_in(dir)?;
        Ok(Spool { file: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file), len: 0 })
    }

    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// The value as written, ready to be read.
    pub fn finish(self) -> io::Result<Spooled> {
        let len = self.len;
        let file = self.file.into_inner().map_err(|e| e.into_error())?;
        Ok(Spooled { file, len })
    }
}

/// A spooled value, read by position.
pub struct Spooled {
    file: File,
    len: u64,
}

impl Spooled {
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    pub fn into_value(self, kind: LargeKind) -> LargeValue {
        LargeValue::new(kind, self.len, Arc::new(self))
    }
}

impl LargeSource for Spooled {
    fn read(&self, from: u64, out: &mut [u8]) -> SqlResult<()> {
        self.file.read_exact_at(out, from).map_err(|e| {
            tessera_errors::Error::Invalid(format!("a spooled request value could not be read back: {e}")).into()
        })
    }

    /// The file belongs to the value alone.
    fn detached(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::create(dir.path()).unwrap();
        let data: Vec<u8> = (0..WRITE_BUFFER_BYTES * 3 + 7).map(|i| (i % 251) as u8).collect();
        for piece in data.chunks(1000) {
            s.write(piece).unwrap();
        }
        let v = s.finish().unwrap().into_value(LargeKind::Binary);
        assert_eq!(v.len_bytes(), data.len() as u64);
        let mut back = vec![0; 10];
        v.read(WRITE_BUFFER_BYTES as u64 - 3, &mut back).unwrap();
        assert_eq!(back, data[WRITE_BUFFER_BYTES - 3..WRITE_BUFFER_BYTES + 7]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the spool file has no name");
    }
}
