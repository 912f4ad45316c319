//! Long request values kept on disk while their request runs. A PLP parameter of at
//! least `large::LAZY_BYTES` that arrives through `packet::PacketInput` is written to a
//! spool file as its chunks arrive, and reaches the session as a `Value::Large` reading
//! from that file — so a value of up to 2 GiB comes in through a few packets of memory,
//! and an INSERT stores it from the file in pieces. The file has no name (it is gone
//! once the last copy of the value is dropped, or if the server dies) and lives in the
//! server's data directory, never in a memory-backed temporary directory.
//!
//! Invariant: the bytes in spool files, over all connections, never pass the server's
//! spool [`Budget`] (`max_spool_mb`): each write is charged before it is made, and a value gives
//! its charge back when its file goes. A write past the budget fails its request, so
//! clients cannot fill the data directory's disk with parameters.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use tessera_errors::SqlResult;
use tessera_semantics::types::{LargeKind, LargeSource, LargeValue};

use crate::budget::{Budget, Charge};

/// Bytes gathered before one write to the spool file.
const WRITE_BUFFER_BYTES: usize = 256 << 10;

/// Where long values are spooled: a directory and the budget they share.
#[derive(Clone, Debug)]
pub struct Place {
    pub dir: PathBuf,
    pub budget: Arc<Budget>,
}

impl Place {
    /// Refuses at once a value whose announced length has no room in the budget now, so
    /// that it is not written to disk only to fail part way (the budget's charges stay
    /// what keeps the limit: a value may still fail as it arrives).
    pub fn check_room(&self, announced_bytes: u64) -> io::Result<()> {
        if self.budget.used_bytes().saturating_add(announced_bytes) > self.budget.limit_bytes() {
            return Err(limit_reached(&self.budget));
        }
        Ok(())
    }
}

fn limit_reached(budget: &Budget) -> io::Error {
    let limit_mb = budget.limit_bytes() >> 20;
    io::Error::new(
        io::ErrorKind::StorageFull,
        format!("the server's spool limit of {limit_mb} MB is reached (max_spool_mb)"),
    )
}

/// A spool file being written.
pub struct Spool {
    file: BufWriter<File>,
    charge: Charge,
}

impl Spool {
    /// A new, empty, unnamed spool file in `place`.
    pub fn create(place: &Place) -> io::Result<Spool> {
        let file = tempfile::tempfile_in(&place.dir)?;
        Ok(Spool { file: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file), charge: Charge::new(&place.budget) })
    }

    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        if !self.charge.grow(bytes.len() as u64) {
            return Err(limit_reached(self.charge.budget()));
        }
        self.file.write_all(bytes)
    }

    /// The value as written, ready to be read.
    pub fn finish(self) -> io::Result<Spooled> {
        let Spool { file, charge } = self;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        Ok(Spooled { file, len: charge.bytes(), _charge: charge })
    }
}

/// A spooled value, read by position.
pub struct Spooled {
    file: File,
    len: u64,
    /// Given back when the value (and its file) goes.
    _charge: Charge,
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
    use std::path::Path;

    fn place(dir: &Path, limit_bytes: u64) -> Place {
        Place { dir: dir.to_path_buf(), budget: Budget::new(limit_bytes) }
    }

    #[test]
    fn reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::create(&place(dir.path(), u64::MAX)).unwrap();
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

    #[test]
    fn the_budget_refuses_bytes_past_it_and_values_give_theirs_back() {
        let dir = tempfile::tempdir().unwrap();
        let place = place(dir.path(), 1000);
        let mut first = Spool::create(&place).unwrap();
        first.write(&[1; 600]).unwrap();
        let kept = first.finish().unwrap().into_value(LargeKind::Binary);
        let mut second = Spool::create(&place).unwrap();
        second.write(&[2; 400]).unwrap();
        let err = second.write(&[2; 1]).unwrap_err();
        assert!(err.to_string().contains("max_spool_mb"), "{err}");
        assert_eq!(place.budget.used_bytes(), 1000, "the refused byte is not charged");
        assert!(place.check_room(1).is_err(), "no room for an announced byte");
        drop(second);
        assert_eq!(place.budget.used_bytes(), 600, "an abandoned spool gives its bytes back");
        assert!(place.check_room(400).is_ok() && place.check_room(401).is_err());
        drop(kept);
        assert_eq!(place.budget.used_bytes(), 0, "so does a value when it goes");
    }
}
