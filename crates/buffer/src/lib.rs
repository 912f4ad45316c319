//! The instance-wide buffer pool and the page format. See `README.md` beside this crate.

pub mod page;

pub use page::{Lsn, PageNo, PAGE_SIZE};
