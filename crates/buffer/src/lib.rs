//! The instance-wide buffer pool and the page format. See `README.md` beside this crate.

pub mod page;
mod pool;

pub use page::{Lsn, PageNo, PAGE_SIZE};
pub use pool::{
    io_counters, BufferPool, Extension, ExtensionStats, FileId, FileUsage, HugePages, IoCounters, PageHandle, PageRead,
    PageReadGuard, PageStore, PageWrite, PageWriteGuard, PoolConfig, PoolStats,
};
