//! Rebuilding a log file from copied frames (RESTORE).
//!
//! A backup copies the log as *segments*: runs of consecutive frames of one VLF, with
//! that VLF's sequence number, size and the offset of the first frame. [`LogBuilder`]
//! lays segments out in a new log file so that every record keeps its LSN: one VLF per
//! sequence number, of the original size, the frames at their original offsets, an end
//! marker where the log moved on to the next sequence. Frame checksums cover the
//! sequence number, so the copied bytes stay valid verbatim. With a master record
//! written at the end, [`crate::Wal::open`] and ordinary crash recovery take it from
//! there; a later log backup extends the same file (RESTORE LOG).
//!
//! Invariant: the builder's log is one gap-free run of frames from its first segment to
//! `end_lsn`; a segment that would leave a gap is refused, one that overlaps is trimmed.
//!
//! A copy that began where a VLF ended (the log had moved on to the next VLF, so its
//! first frame opens that one) still names its begin LSN in the ended VLF: the master
//! record and the checkpoint's redo point say recovery starts there. The builder lays
//! that VLF out as a stub holding only its end marker, so reading from the begin LSN
//! goes on into the next VLF as it did in the original log.

use std::path::Path;

use tessera_errors::{Error, Result};
use tessera_io::{DataFile, OpenMode};

use crate::recovery::Checkpoint;
use crate::wal::{
    decode_master, encode_master, frame_crc, scan_vlfs, split_frames, vlf_header, Vlf, FILE_HEADER, FRAME_HEADER,
    LOG_FORMAT_VERSION, MAGIC, MASTER_SLOTS, MAX_VLF_SIZE, MIN_FIRST_VLF, VLF_HEADER,
};
use crate::{LogConfig, LogRecord, Lsn, Master, RecordKind, TxnId, Wal};

/// Consecutive frames of one VLF, as a backup stores them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSegment {
    pub seq: u32,
    pub vlf_size: u64,
    /// Offset of the first frame inside the VLF.
    pub offset: u32,
    /// Whole frames (header and payload), back to back.
    pub frames: Vec<u8>,
}

impl LogSegment {
    pub fn first_lsn(&self) -> Lsn {
        Lsn::new(self.seq, self.offset)
    }

    /// The LSN just past the last frame.
    pub fn end_lsn(&self) -> Lsn {
        Lsn::new(self.seq, self.offset + self.frames.len() as u32)
    }
}

pub struct LogBuilder {
    file: DataFile,
    database: String,
    vlfs: Vec<Vlf>,
    file_len: u64,
    /// The LSN the next frame must have (0: nothing written yet).
    end: Lsn,
    /// Where the copied log begins, for a new log (0: where its first segment begins).
    begin: Lsn,
    serial: u64,
}

impl LogBuilder {
    /// Starts a new log file at `path` (which must not exist) for a copy of the log that
    /// begins at `begin` (0: wherever its first segment begins).
    pub fn create(path: &Path, database: &str, begin: Lsn) -> Result<LogBuilder> {
        let file = DataFile::open(path, OpenMode::CreateNew, false)?;
        let mut header = vec![0u8; FILE_HEADER as usize];
        header[0..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&LOG_FORMAT_VERSION.to_le_bytes());
        file.allocate(FILE_HEADER)?;
        file.write_all_at(&header, 0)?;
        Ok(LogBuilder {
            file,
            database: database.to_string(),
            vlfs: Vec::new(),
            file_len: FILE_HEADER,
            end: Lsn::NONE,
            begin,
            serial: 0,
        })
    }

    /// A new log at `path` for a copy of a database whose log holds nothing the copy needs
    /// (its checkpoint had no transaction active, and nothing was logged after it): not
    /// the source's VLFs, but one small VLF of sequence `seq` — past every sequence the
    /// copied pages' LSNs name, so each page is older than anything this log will hold —
    /// with one checkpoint record (the source's next transaction id) where recovery
    /// starts.
    pub fn fresh(path: &Path, database: &str, seq: u32, next_txn: TxnId) -> Result<()> {
        let at = Lsn::new(seq, VLF_HEADER);
        let checkpoint = Checkpoint { redo_lsn: at, next_txn, active: Vec::new() };
        let record = LogRecord::new(RecordKind::Checkpoint, TxnId::SYSTEM, Lsn::NONE, checkpoint.encode());
        let mut payload = Vec::with_capacity(record.encoded_len());
        record.encode_into(&mut payload);
        let mut frames = Vec::with_capacity(FRAME_HEADER as usize + payload.len());
        crate::wal::encode_frame(seq, &payload, &mut frames);
        let mut builder = LogBuilder::create(path, database, at)?;
        builder.append(&LogSegment { seq, vlf_size: MIN_FIRST_VLF, offset: VLF_HEADER, frames })?;
        builder.finish(Master { checkpoint_lsn: at, begin_lsn: at })
    }

    /// Continues a log this builder made earlier (a restore WITH NORECOVERY).
    pub fn open(path: &Path, database: &str) -> Result<LogBuilder> {
        let end = Wal::open(path, database, LogConfig::default())?.0.end_lsn();
        let file = DataFile::open(path, OpenMode::Existing, false)?;
        let mut header = vec![0u8; FILE_HEADER as usize];
        file.read_exact_at(&mut header, 0)?;
        let serial = MASTER_SLOTS
            .iter()
            .filter_map(|&o| decode_master(&header[o as usize..o as usize + 28]))
            .map(|(s, _)| s)
            .max()
            .unwrap_or(0);
        let (vlfs, file_len) = scan_vlfs(&file)?;
        let vlfs: Vec<Vlf> = vlfs.into_iter().filter(|v| v.seq != 0 && v.seq <= end.seq()).collect();
        Ok(LogBuilder { file, database: database.to_string(), vlfs, file_len, end, begin: Lsn::NONE, serial })
    }

    /// The LSN just past the last frame written.
    pub fn end_lsn(&self) -> Lsn {
        self.end
    }

    fn out_of_sequence(&self, seg: &LogSegment) -> Error {
        Error::Invalid(format!(
            "log records starting at LSN {} cannot follow the log of database '{}', which ends at LSN {}",
            seg.first_lsn(),
            self.database,
            self.end
        ))
    }

    /// Adds a segment. Frames before `end_lsn` are skipped; a segment starting after
    /// `end_lsn` (a gap) is an error.
    pub fn append(&mut self, seg: &LogSegment) -> Result<()> {
        if seg.frames.is_empty() || (!self.end.is_none() && seg.end_lsn() <= self.end) {
            return Ok(());
        }
        if seg.vlf_size > MAX_VLF_SIZE || u64::from(seg.offset) + seg.frames.len() as u64 > seg.vlf_size {
            return Err(Error::Invalid(format!("a log segment of VLF {} does not fit its VLF", seg.seq)));
        }
        if self.end.is_none() && !self.begin.is_none() && seg.first_lsn() != self.begin {
            self.stub_ended_vlf(seg)?;
        }
        let mut frames: &[u8] = &seg.frames;
        let mut start = seg.offset;
        if self.end.is_none() {
            self.start_vlf(seg.seq, seg.vlf_size)?;
        } else if seg.seq == self.end.seq() {
            if seg.offset > self.end.offset() {
                return Err(self.out_of_sequence(seg));
            }
            let skip = (self.end.offset() - seg.offset) as usize;
            let boundary = skip == 0 || split_frames(seg.seq, frames).iter().any(|&(at, _)| at == skip);
            if !boundary {
                return Err(self.out_of_sequence(seg));
            }
            frames = &frames[skip..];
            start = self.end.offset();
        } else if seg.seq == self.end.seq() + 1 && seg.offset == VLF_HEADER {
            self.close_vlf()?;
            self.start_vlf(seg.seq, seg.vlf_size)?;
        } else {
            return Err(self.out_of_sequence(seg));
        }
        let vlf = *self.vlfs.last().expect("a current VLF");
        assert_eq!(vlf.seq, seg.seq);
        self.file.write_all_at(frames, vlf.offset + u64::from(start))?;
        self.end = Lsn::new(seg.seq, start + frames.len() as u32);
        Ok(())
    }

    /// The copy's first segment opens the VLF after the one `begin` lies in: that VLF
    /// had no frame from `begin` on. Lays it out as a stub ending at `begin` (see the
    /// module's notes); any other start is a gap.
    fn stub_ended_vlf(&mut self, first: &LogSegment) -> Result<()> {
        let opens_next = self.begin.seq() + 1 == first.seq && first.offset == VLF_HEADER;
        if !opens_next {
            return Err(Error::Invalid(format!(
                "the log copied for database '{}' begins at LSN {}, not at LSN {} where it should",
                self.database,
                first.first_lsn(),
                self.begin
            )));
        }
        let size = (u64::from(self.begin.offset()) + u64::from(FRAME_HEADER))
            .max(2 * u64::from(VLF_HEADER))
            .next_multiple_of(4096);
        self.start_vlf(self.begin.seq(), size)?;
        self.end = self.begin;
        Ok(())
    }

    fn start_vlf(&mut self, seq: u32, size: u64) -> Result<()> {
        let offset = self.file_len;
        self.file.allocate(offset + size)?;
        self.file.write_all_at(&vlf_header(seq, size), offset)?;
        self.file_len = offset + size;
        self.vlfs.push(Vlf { offset, size, seq });
        Ok(())
    }

    /// Ends the current VLF with an end marker (if a frame header still fits), sending
    /// readers on to the next sequence.
    fn close_vlf(&mut self) -> Result<()> {
        let vlf = *self.vlfs.last().expect("a current VLF");
        let off = u64::from(self.end.offset());
        if vlf.size - off >= u64::from(FRAME_HEADER) {
            let mut marker = [0u8; 8];
            marker[4..8].copy_from_slice(&frame_crc(vlf.seq, 0, &[]).to_le_bytes());
            self.file.write_all_at(&marker, vlf.offset + off)?;
        }
        Ok(())
    }

    /// Writes the master record (where recovery starts) and makes the file durable.
    pub fn finish(mut self, master: Master) -> Result<()> {
        if self.end.is_none() || master.begin_lsn > self.end || master.checkpoint_lsn >= self.end {
            return Err(Error::Invalid(format!(
                "the restored log of database '{}' does not contain its checkpoint",
                self.database
            )));
        }
        self.serial += 1;
        // Zeros after the last frame end the log: nothing stale can follow it.
        let slot = MASTER_SLOTS[(self.serial % 2) as usize];
        self.file.write_all_at(&encode_master(&master, self.serial), slot)?;
        self.file.sync_all()?;
        Ok(())
    }
}
