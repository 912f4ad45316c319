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
pub use wal::{
    bytes_written_total, encode_frame, flush_latency, split_frames, Hold, LogConfig, LogStats, Master, Wal,
    LOG_FORMAT_VERSION,
};

/// Log sequence numbers are the pool's (a page header carries one): see
/// [`tessera_buffer::Lsn`].
pub use tessera_buffer::Lsn;
