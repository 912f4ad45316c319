//! The bottom storage layer: positioned file I/O, page-aligned buffers, io_uring and the
//! data directory's lock. Its failures are [`tessera_errors::Error`]. See `README.md` beside this crate.

pub mod affinity;
mod aligned;
pub mod clock;
pub mod descriptors;
mod dirlock;
pub mod durable;
pub mod faults;
mod file;
mod media;
pub mod profile;
pub mod stats;
pub mod uring;

pub use aligned::AlignedBuf;
pub use dirlock::{DirLock, LOCK_FILE};
pub use file::{DataFile, OpenMode};
pub use media::MediaFile;
pub use uring::{Completion, Uring};

/// Alignment required by O_DIRECT on every device we target.
pub const IO_ALIGN: usize = 4096;
