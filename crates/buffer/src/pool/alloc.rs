//! Frame allocation: the intrusive free list, never-used frames handed out from the
//! high-water mark, and the return of a frame to the free list (or its retirement beyond
//! the limit) (README, "Memory: one reserved region, madvise, one munmap").

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tessera_errors::{Error, Result};

use super::frame::{Frame, Kind, State, DIRTY, NIL, NO_KEY, WRITING};
use super::Inner;
use crate::page::PAGE_SIZE;

/// How long a fetch that finds every frame pinned waits for the pool's own short pins
/// (read-ahead's loads, write-outs) to let go of theirs.
const PASSING_PATIENCE: Duration = Duration::from_secs(2);

pub(super) struct FreeList {
    pub(super) head: u32,
    pub(super) len: usize,
}

impl Inner {
    /// Returns an `Owned` frame: from the free list, from never-used frames, or by eviction.
    ///
    /// When every frame is pinned and some pins are the pool's own passing ones
    /// (read-ahead's loads and write-outs, which wait for nobody), or one of those was let
    /// go while the search ran, a foreground caller looks again rather than fail with 802;
    /// read-ahead itself (`for_read_ahead`) never waits.
    pub(super) fn allocate_frame(&self, for_read_ahead: bool) -> Result<u32> {
        let mut deadline = None;
        let i = loop {
            let released = self.passing.released.load(Ordering::Acquire);
            match self.pop_free().map_or_else(|| self.find_victim(), Ok) {
                Ok(i) => break i,
                Err(Error::PoolExhausted)
                    if !for_read_ahead
                        && self.passing.may_free_soon(released, self.read_ahead.in_flight.load(Ordering::Acquire))
                        && Instant::now() < *deadline.get_or_insert_with(|| Instant::now() + PASSING_PATIENCE) =>
                {
                    std::thread::sleep(Duration::from_micros(100));
                }
                Err(e) => return Err(e),
            }
        };
        let f = self.frame(i);
        assert_eq!(State(f.state.load(Ordering::Relaxed)).kind(), Kind::Owned);
        assert_eq!(f.dirty.load(Ordering::Relaxed) & (DIRTY | WRITING), 0, "reusing a dirty frame");
        Ok(i)
    }

    pub(super) fn pop_free(&self) -> Option<u32> {
        let mut fl = self.free.lock();
        let limit = self.limit.load(Ordering::Relaxed);
        if fl.head != NIL {
            let i = fl.head;
            let f = self.frame(i);
            fl.head = f.next_free.load(Ordering::Relaxed);
            fl.len -= 1;
            assert!((i as usize) < limit, "free list holds frame {i} beyond the limit {limit}");
            let old = f.state.swap(State::new(Kind::Owned, 0, 0).0, Ordering::Acquire);
            assert_eq!(State(old).kind(), Kind::Free);
            return Some(i);
        }
        let h = self.hwm.load(Ordering::Relaxed);
        if h >= limit {
            return None;
        }
        if h >= self.initialized.load(Ordering::Relaxed) {
            assert_eq!(h, self.initialized.load(Ordering::Relaxed));
            // SAFETY: descriptor h lies inside the reserved descriptor region and no one
            // can reference it yet (it is beyond `initialized` and `hwm`).
            unsafe { std::ptr::write((self.descs.ptr() as *mut Frame).add(h), Frame::new()) };
            self.initialized.store(h + 1, Ordering::Release);
        }
        self.hwm.store(h + 1, Ordering::Release);
        self.prefault.note_hwm(h + 1);
        let f = self.frame(h as u32);
        let old = f.state.swap(State::new(Kind::Owned, 0, 0).0, Ordering::Acquire);
        assert_eq!(State(old).kind(), Kind::Free);
        Some(h as u32)
    }

    /// Returns an `Owned` frame to the free list, or retires it (memory given back) if it lies
    /// beyond the limit. Any dirty state is dropped.
    pub(super) fn free_frame(&self, i: u32) {
        self.scrub(i);
        let f = self.frame(i);
        let mut fl = self.free.lock();
        if (i as usize) < self.limit.load(Ordering::Relaxed) {
            f.next_free.store(fl.head, Ordering::Relaxed);
            fl.head = i;
            fl.len += 1;
        } else {
            // SAFETY: the frame is Owned by us: nobody else reads or writes its bytes.
            unsafe { self.frames.discard(i as usize * PAGE_SIZE, PAGE_SIZE) };
        }
        f.state.store(State::new(Kind::Free, 0, 0).0, Ordering::Release);
    }

    /// Forgets what an `Owned` frame held: its key and any dirty state (a discarded page's
    /// changes are dropped on purpose; evicted pages are always clean here).
    pub(super) fn scrub(&self, i: u32) {
        let f = self.frame(i);
        assert_eq!(State(f.state.load(Ordering::Relaxed)).kind(), Kind::Owned);
        let d = f.dirty.fetch_and(!(DIRTY | WRITING), Ordering::AcqRel);
        assert_eq!(d & WRITING, 0, "scrubbing a frame that is being written");
        if d & DIRTY != 0 {
            self.dirty_pages.fetch_sub(1, Ordering::Relaxed);
        }
        f.key.store(NO_KEY, Ordering::Relaxed);
    }
}
