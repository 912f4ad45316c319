//! Per-thread page access counters, for SET STATISTICS IO (README, "Per-thread I/O
//! counters"): every fetch of a page to read it is a logical read of the calling thread,
//! a miss that reads the page (from its store or the extension) is also a physical read,
//! and a page read ahead is a read-ahead read of the thread that asked for it.
//!
//! The first two are plain thread-local cells (an add on the hot path, no atomics, no
//! sharing). Read-ahead happens on worker threads, so a thread that asks for read-ahead
//! hands its run a shared counter of its own, which the worker bumps for every page it
//! reads and verifies.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

thread_local! {
    static LOGICAL: Cell<u64> = const { Cell::new(0) };
    static PHYSICAL: Cell<u64> = const { Cell::new(0) };
    static READ_AHEAD: RefCell<Option<Arc<AtomicU64>>> = const { RefCell::new(None) };
}

/// The calling thread's page access counts since it started; subtract two snapshots
/// ([`IoCounters::since`]) for the reads of the work between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Pages fetched to be read (hits and misses; not pages allocated with `fetch_new`).
    pub logical_reads: u64,
    /// Fetches that read the page from its store or from the extension.
    pub physical_reads: u64,
    /// Pages read-ahead workers read and verified for this thread's requests.
    pub read_ahead_reads: u64,
}

impl IoCounters {
    /// The counts between `earlier` and `self`.
    pub fn since(self, earlier: IoCounters) -> IoCounters {
        IoCounters {
            logical_reads: self.logical_reads.wrapping_sub(earlier.logical_reads),
            physical_reads: self.physical_reads.wrapping_sub(earlier.physical_reads),
            read_ahead_reads: self.read_ahead_reads.wrapping_sub(earlier.read_ahead_reads),
        }
    }
}

/// A snapshot of the calling thread's counters.
pub fn io_counters() -> IoCounters {
    IoCounters {
        logical_reads: LOGICAL.with(Cell::get),
        physical_reads: PHYSICAL.with(Cell::get),
        read_ahead_reads: READ_AHEAD.with(|r| r.borrow().as_ref().map_or(0, |c| c.load(Ordering::Relaxed))),
    }
}

#[inline(always)]
pub(super) fn count_logical() {
    LOGICAL.with(|c| c.set(c.get().wrapping_add(1)));
}

#[inline]
pub(super) fn count_physical() {
    PHYSICAL.with(|c| c.set(c.get().wrapping_add(1)));
}

/// The counter read-ahead workers bump for the calling thread's requests.
pub(super) fn read_ahead_sink() -> Arc<AtomicU64> {
    READ_AHEAD.with(|r| r.borrow_mut().get_or_insert_with(|| Arc::new(AtomicU64::new(0))).clone())
}
