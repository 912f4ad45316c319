//! The bottom layer: positioned file I/O, page-aligned buffers and the error type
//! shared by every storage layer. See `README.md` beside this crate.

mod aligned;
mod dirlock;
mod error;
mod file;
pub mod profile;
pub mod uring;

pub use aligned::AlignedBuf;
pub use dirlock::{DirLock, LOCK_FILE};
pub use error::{Error, Result};
pub use file::{DataFile, OpenMode};
pub use uring::{Completion, Uring};

/// Alignment required by O_DIRECT on every device we target.
pub const IO_ALIGN: usize = 4096;
