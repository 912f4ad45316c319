//! Per-database write-ahead log. See `README.md` beside this crate.
//!
//! The log is one file divided into virtual log files (VLFs), reused in a cycle once the
//! truncation point has passed them. [`Wal`] appends framed records and makes them
//! durable with group commit; [`record`] defines the record envelope every layer above
//! uses; [`recovery`] runs the analysis, redo and undo passes over the log.

mod buffers;
pub mod growth;
mod reader;
pub mod rebuild;
pub mod record;
pub mod recovery;
mod wal;
mod writer;

pub use buffers::{LogBufferStats, LogBuffers, CHUNK_BYTES};
pub use growth::Growth;
pub use reader::WalReader;
pub use rebuild::{LogBuilder, LogSegment};
pub use record::{LogRecord, RecordKind, TxnId};
pub use wal::{encode_frame, split_frames, Hold, LogConfig, LogStats, Master, Wal, LOG_FORMAT_VERSION};

/// Log sequence number: `(vlf sequence << 32) | byte offset inside the VLF`. Strictly
/// increasing in log order; 0 means "none".
pub type Lsn = u64;

pub fn lsn_seq(lsn: Lsn) -> u32 {
    (lsn >> 32) as u32
}

pub fn lsn_offset(lsn: Lsn) -> u32 {
    lsn as u32
}

pub fn make_lsn(seq: u32, offset: u32) -> Lsn {
    (u64::from(seq) << 32) | u64::from(offset)
}

/// Formats an LSN as SQL Server does: `vlf:offset:0`-like triple, here `seq:offset`.
pub fn format_lsn(lsn: Lsn) -> String {
    format!("{}:{}", lsn_seq(lsn), lsn_offset(lsn))
}
