//! Pins and the content latch: the RAII guards the pool uses internally, the pins taken
//! under a shard mutex, and the last unpin that frees an orphan (README, "Frames and their
//! states" and "Pins, latches and lock ordering"). The lock-free pin of the hit path is in
//! `fetch.rs`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::lock_api::RawRwLock as _;

use super::frame::{self, Frame, Kind, State, MAX_USAGE, USAGE_SHIFT};
use super::registry::FileEntry;
use super::table::{key, key_file, key_page, Key};
use super::{FileId, Inner};
use crate::page::PageNo;

/// A pin taken by the pool itself (writers, checkpoints); unpins on drop, so a panicking
/// store callback cannot leak it.
pub(super) struct Pin<'a> {
    pub(super) pool: &'a Inner,
    pub(super) idx: u32,
}

impl Drop for Pin<'_> {
    fn drop(&mut self) {
        self.pool.unpin(self.idx);
    }
}

/// A pin the pool takes for a moment of its own, to write a page out (eviction, the
/// background writer, a checkpoint); unpins on drop. Counted in `Passing`, so that a fetch
/// that finds every frame pinned waits for these to go rather than fail with 802.
pub(super) struct PassingPin<'a> {
    pool: &'a Inner,
    pub(super) idx: u32,
}

impl Drop for PassingPin<'_> {
    fn drop(&mut self) {
        self.pool.unpin(self.idx);
        self.pool.passing.pins.fetch_sub(1, Ordering::AcqRel);
        self.pool.passing.released.fetch_add(1, Ordering::AcqRel);
    }
}

/// Frames the pool's own work holds for a moment: write-outs (`PassingPin`) and, beside
/// them, read-ahead's loads (`ReadAhead::in_flight`).
#[derive(Default)]
pub(super) struct Passing {
    /// `PassingPin`s held now.
    pins: AtomicUsize,
    /// Passing pins and read-ahead loads let go so far: a search for a frame that failed
    /// while this moved may have missed a frame freed meanwhile.
    pub(super) released: AtomicU64,
}

impl Passing {
    /// Whether a search for a frame that began when `released` read `before`, and found
    /// none, should look again: a passing pin or a read-ahead load is held, or one was let
    /// go since.
    pub(super) fn may_free_soon(&self, before: u64, read_ahead_in_flight: usize) -> bool {
        read_ahead_in_flight > 0
            || self.pins.load(Ordering::Acquire) > 0
            || self.released.load(Ordering::Acquire) != before
    }
}

/// A frame's shared latch, released on drop.
pub(super) struct SharedLatch<'a>(&'a Frame);

impl<'a> SharedLatch<'a> {
    pub(super) fn new(frame: &'a Frame) -> SharedLatch<'a> {
        frame.latch.lock_shared();
        SharedLatch(frame)
    }
}

impl Drop for SharedLatch<'_> {
    fn drop(&mut self) {
        // SAFETY: taken in `SharedLatch::new`.
        unsafe { self.0.latch.unlock_shared() }
    }
}

impl Inner {
    /// Pins a mapped frame and bumps its usage count. Caller holds the frame's shard mutex.
    pub(super) fn pin_touch(&self, i: u32) -> State {
        let f = self.frame(i);
        let prev = f.state.fetch_update(Ordering::Acquire, Ordering::Relaxed, |x| {
            let s = State(x);
            assert!(matches!(s.kind(), Kind::Valid | Kind::Loading), "pinning a {:?} frame", s.kind());
            let bump = if s.kind() == Kind::Valid && s.usage() < MAX_USAGE { 1 << USAGE_SHIFT } else { 0 };
            Some(x + 1 + bump)
        });
        State(prev.unwrap_or_else(|x| x))
    }

    /// Pins a mapped frame without touching its usage count. Caller holds the shard mutex.
    pub(super) fn pin_quiet(&self, i: u32) -> State {
        let prev = State(self.frame(i).state.fetch_add(1, Ordering::Acquire));
        assert!(prev.pins() < frame::PIN_MASK, "pin count overflow");
        prev
    }

    /// Pins a mapped frame for a write-out, without touching its usage count. Counted
    /// before the pin is taken, so a search for a frame never sees the pin uncounted.
    /// Caller holds the shard mutex.
    pub(super) fn pin_passing(&self, i: u32) -> PassingPin<'_> {
        self.passing.pins.fetch_add(1, Ordering::AcqRel);
        self.pin_quiet(i);
        PassingPin { pool: self, idx: i }
    }

    /// Pins the frame holding page `no` of `entry`, whatever it is doing; `None` if not
    /// cached or if the file has been discarded.
    pub(super) fn pin_page(&self, entry: &FileEntry, no: PageNo) -> Option<PassingPin<'_>> {
        let _g = self.shard(key(entry.id, no)).0.lock();
        if entry.closed.load(Ordering::Acquire) {
            return None;
        }
        let i = entry.radix.get().get(no)?;
        Some(self.pin_passing(i))
    }

    /// Pins frame `i` if it still holds `k` and is valid; also returns its file.
    pub(super) fn pin_if_mapped(&self, i: u32, k: Key) -> Option<(PassingPin<'_>, Arc<FileEntry>)> {
        let _g = self.shard(k).0.lock();
        let entry = self.entry(FileId(key_file(k)))?;
        if entry.radix.get().get(key_page(k)) != Some(i)
            || State(self.frame(i).state.load(Ordering::Relaxed)).kind() != Kind::Valid
        {
            return None;
        }
        Some((self.pin_passing(i), entry))
    }

    pub(super) fn unpin(&self, i: u32) {
        let prev = State(self.frame(i).state.fetch_sub(1, Ordering::Release));
        assert!(prev.pins() > 0, "buffer pool: frame {i} unpinned more often than pinned");
        if prev.pins() == 1 && prev.kind() == Kind::Orphan && self.claim_orphan(i) {
            self.free_frame(i);
        }
    }

    /// Takes ownership of an unpinned orphan.
    pub(super) fn claim_orphan(&self, i: u32) -> bool {
        let f = self.frame(i);
        let s = State(f.state.load(Ordering::Acquire));
        s.kind() == Kind::Orphan
            && s.pins() == 0
            && f.state
                .compare_exchange(s.0, State::new(Kind::Owned, 0, 0).0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }
}
