//! The pool's counters and the list of resident pages (README, "Counters").

use std::sync::atomic::Ordering;

use super::frame::{Kind, State, DIRTY, NO_KEY};
use super::table::{key_file, key_page};
use super::{FileId, Inner};
use crate::page::PageNo;

/// A snapshot of the pool's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Fetches that found the page cached.
    pub hits: u64,
    /// Fetches that had to load (or, for `fetch_new`, zero-fill) a frame.
    pub misses: u64,
    /// Pages read from stores.
    pub reads: u64,
    /// Pages written to stores.
    pub writes: u64,
    /// Pages evicted to make room (not counting discards).
    pub evictions: u64,
    /// Frames currently dirty.
    pub dirty_pages: u64,
    /// Pages currently in the page table.
    pub resident_pages: u64,
    /// The current limit, in frames.
    pub capacity_pages: u64,
    /// Frames whose memory is committed: those handed out since the pool began (or was
    /// last shrunk below them) and those committed ahead of demand (`prefault`), within
    /// the limit. What the pool costs in RAM, beside `resident_pages` it uses now.
    pub committed_pages: u64,
    /// Pages read by read-ahead (also counted in `reads`).
    pub read_ahead_pages: u64,
}

impl Inner {
    /// The counters, except `hits` (counted by the `Proxy`s).
    pub(super) fn stats(&self) -> PoolStats {
        let misses = self.shards.iter().map(|s| s.0.lock().misses).sum();
        PoolStats {
            hits: 0,
            misses,
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            dirty_pages: self.dirty_pages.load(Ordering::Relaxed),
            resident_pages: self.resident.load(Ordering::Relaxed),
            capacity_pages: self.limit.load(Ordering::Relaxed) as u64,
            committed_pages: self
                .prefault
                .committed
                .load(Ordering::Relaxed)
                .max(self.hwm.load(Ordering::Relaxed))
                .min(self.limit.load(Ordering::Relaxed)) as u64,
            read_ahead_pages: self.read_ahead.pages.load(Ordering::Relaxed),
        }
    }

    pub(super) fn resident_pages(&self) -> Vec<(FileId, PageNo, bool)> {
        let n = self.hwm.load(Ordering::Acquire);
        let mut out = Vec::new();
        for i in 0..n as u32 {
            let f = self.frame(i);
            let k = f.key.load(Ordering::Acquire);
            if k != NO_KEY && State(f.state.load(Ordering::Acquire)).kind() == Kind::Valid {
                out.push((FileId(key_file(k)), key_page(k), f.dirty.load(Ordering::Acquire) & DIRTY != 0));
            }
        }
        out
    }
}
