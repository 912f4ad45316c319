//! Reading the log forward: [`WalReader`] walks the frames from an LSN to the end of the
//! valid log, through a read-ahead window, following end markers from one VLF to the next.

use tessera_errors::Result;

use crate::record::LogRecord;
use crate::wal::{frame_crc, Vlf, Wal, FRAME_HEADER, MAX_RECORD, VLF_HEADER};
use crate::Lsn;

/// Reads records forward from an LSN until the end of the valid log.
pub struct WalReader<'a> {
    wal: &'a Wal,
    vlf: Option<Vlf>,
    offset: u32,
    /// Read-ahead window: `buf` holds the VLF bytes starting at `buf_start`.
    buf: Vec<u8>,
    buf_start: u32,
    done: bool,
}

const READ_AHEAD: usize = 256 << 10;

impl<'a> WalReader<'a> {
    pub fn new(wal: &'a Wal, from: Lsn) -> WalReader<'a> {
        WalReader {
            wal,
            vlf: wal.vlf_for_seq(from.seq()),
            offset: from.offset().max(VLF_HEADER),
            buf: Vec::new(),
            buf_start: 0,
            done: false,
        }
    }

    /// The LSN just past the last record returned (the end of the log once `next_record`
    /// returned `None`).
    pub fn position(&self) -> Lsn {
        Lsn::new(self.vlf.map_or(0, |v| v.seq), self.offset)
    }

    /// Copies `len` bytes at `offset` of the current VLF, refilling the window as needed.
    fn bytes(&mut self, offset: u32, len: usize) -> Result<Option<Vec<u8>>> {
        let vlf = self.vlf.expect("reader has a VLF");
        if u64::from(offset) + len as u64 > vlf.size {
            return Ok(None);
        }
        let in_window = offset >= self.buf_start && (offset - self.buf_start) as usize + len <= self.buf.len();
        if !in_window {
            let want = len.max(READ_AHEAD).min((vlf.size - u64::from(offset)) as usize);
            self.buf.resize(want, 0);
            let n = self.wal.file.read_at(&mut self.buf, vlf.offset + u64::from(offset))?;
            self.buf.truncate(n);
            self.buf_start = offset;
            if n < len {
                return Ok(None);
            }
        }
        let at = (offset - self.buf_start) as usize;
        Ok(Some(self.buf[at..at + len].to_vec()))
    }

    /// The next record and its LSN; `None` at the end of the log.
    pub fn next_record(&mut self) -> Option<Result<(Lsn, LogRecord)>> {
        let (lsn, payload) = match self.next_frame()? {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        Some(
            LogRecord::decode(&payload)
                .map(|r| (lsn, r))
                .map_err(|e| self.wal.corrupt(format!("log record at LSN {} cannot be decoded: {e}", lsn))),
        )
    }

    /// Size of the VLF the reader is in (a backup records it, so that a restored log
    /// lays the frames out at the same LSNs).
    pub fn vlf_size(&self) -> u64 {
        self.vlf.map_or(0, |v| v.size)
    }

    /// The next frame's LSN and payload (an encoded [`LogRecord`]), checksum verified;
    /// `None` at the end of the log.
    pub fn next_frame(&mut self) -> Option<Result<(Lsn, Vec<u8>)>> {
        loop {
            if self.done {
                return None;
            }
            let Some(vlf) = self.vlf else {
                self.done = true;
                return None;
            };
            let header = match self.bytes(self.offset, FRAME_HEADER as usize) {
                Ok(h) => h,
                Err(e) => return Some(Err(e)),
            };
            let Some(header) = header else {
                // No room for a frame: the log continues in the next VLF, if any.
                if !self.advance_vlf(vlf.seq) {
                    return None;
                }
                continue;
            };
            let len = u32::from_le_bytes(header[0..4].try_into().unwrap());
            let crc = u32::from_le_bytes(header[4..8].try_into().unwrap());
            if len == 0 {
                if crc == frame_crc(vlf.seq, 0, &[]) && self.advance_vlf(vlf.seq) {
                    continue;
                }
                self.done = true;
                return None;
            }
            if len as usize > MAX_RECORD {
                self.done = true;
                return None;
            }
            let payload = match self.bytes(self.offset + FRAME_HEADER, len as usize) {
                Ok(Some(p)) => p,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(e) => return Some(Err(e)),
            };
            if frame_crc(vlf.seq, len, &payload) != crc {
                self.done = true;
                return None;
            }
            let lsn = Lsn::new(vlf.seq, self.offset);
            self.offset += FRAME_HEADER + len;
            return Some(Ok((lsn, payload)));
        }
    }

    fn advance_vlf(&mut self, seq: u32) -> bool {
        match self.wal.vlf_for_seq(seq + 1) {
            Some(next) => {
                self.vlf = Some(next);
                self.offset = VLF_HEADER;
                self.buf.clear();
                self.buf_start = 0;
                true
            }
            None => {
                self.done = true;
                false
            }
        }
    }
}
