//! Committing frame memory ahead of demand.
//!
//! The first touch of a frame costs a page fault and the kernel zeroing the memory (and,
//! in a virtual machine, often the hypervisor backing it as well): a quarter of a bulk
//! insert's time when the pool grows with it. The pool hands out never-used frames in
//! index order (the high-water mark), so the frames it will want next are known: a
//! thread (`tessera-prefault`) commits the frames beyond the high-water mark — a quarter
//! of those in use, at most 64 MiB — with `MADV_POPULATE_WRITE`, on another core, before
//! the inserting thread reaches them.
//!
//! Invariants: `committed` (frames `[0, committed)` have been populated) never exceeds the
//! limit after a resize, and populating happens only under the resize mutex, so a shrink
//! (which also holds it) gives back every frame it populated beyond the new limit.
//! `MADV_POPULATE_WRITE` never changes the contents of memory already present, so it may
//! overlap frames that have meanwhile been handed out. Where the kernel lacks it (before
//! Linux 5.14) the thread turns itself off.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use super::Inner;
use crate::page::PAGE_SIZE;

/// Most frames committed ahead of the high-water mark (64 MiB).
const MAX_AHEAD: usize = (64 << 20) / PAGE_SIZE;

/// How far ahead of high-water mark `hwm` to commit: a quarter of what is already in use,
/// up to 64 MiB, so a small pool (a test, an idle instance) commits little it will not
/// use, and a pool growing fast gets the whole window.
fn ahead(hwm: usize) -> usize {
    if hwm < MIN_IN_USE {
        return 0;
    }
    (hwm / 4).min(MAX_AHEAD)
}

/// Frames in use before anything is committed ahead (8 MiB).
const MIN_IN_USE: usize = (8 << 20) / PAGE_SIZE;

#[derive(Default)]
struct Control {
    kicked: bool,
    shutdown: bool,
}

#[derive(Default)]
pub(super) struct Prefault {
    control: Mutex<Control>,
    wake: Condvar,
    kick_pending: AtomicBool,
    /// Frames `[0, committed)` are populated (or were handed out, which populates them).
    pub committed: AtomicUsize,
    off: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Prefault {
    /// Called as frame `hwm` is handed out for the first time: wakes the thread when the
    /// populated range ends less than half a window ahead (nothing happens below 8 MiB
    /// in use).
    #[inline]
    pub fn note_hwm(&self, hwm: usize) {
        let window = ahead(hwm);
        if window > 0
            && hwm + window / 2 >= self.committed.load(Ordering::Relaxed)
            && !self.off.load(Ordering::Relaxed)
            && !self.kick_pending.swap(true, Ordering::AcqRel)
        {
            self.control.lock().kicked = true;
            self.wake.notify_one();
        }
    }

    pub fn set_thread(&self, h: JoinHandle<()>) {
        *self.thread.lock() = Some(h);
    }

    /// Stops the thread and waits for it (the pool is being dropped).
    pub fn shut_down(&self) {
        self.control.lock().shutdown = true;
        self.wake.notify_all();
        if let Some(h) = self.thread.lock().take() {
            let _ = h.join();
        }
    }

    /// After a shrink to `limit` frames: nothing is counted as populated beyond it.
    pub fn clamp(&self, limit: usize) {
        self.committed.fetch_min(limit, Ordering::AcqRel);
    }
}

impl Inner {
    pub(super) fn prefault_loop(&self) {
        loop {
            {
                let mut c = self.prefault.control.lock();
                while !c.kicked && !c.shutdown {
                    self.prefault.wake.wait(&mut c);
                }
                if c.shutdown {
                    return;
                }
                c.kicked = false;
            }
            self.prefault.kick_pending.store(false, Ordering::Release);
            self.prefault_round();
        }
    }

    /// Populates the frames from the end of the populated range (or the high-water mark)
    /// up to `ahead(hwm)` frames beyond the high-water mark, never beyond the limit.
    fn prefault_round(&self) {
        let _serial = self.resize.lock();
        let limit = self.limit.load(Ordering::Acquire);
        let hwm = self.hwm.load(Ordering::Acquire);
        let from = self.prefault.committed.load(Ordering::Acquire).max(hwm);
        let to = (hwm + ahead(hwm)).min(limit);
        if from >= to {
            return;
        }
        let frame_size = std::mem::size_of::<super::Frame>();
        let ok = self.frames.populate(from * PAGE_SIZE, (to - from) * PAGE_SIZE)
            && self.descs.populate(from * frame_size, (to - from) * frame_size);
        if ok {
            self.prefault.committed.store(to, Ordering::Release);
        } else {
            self.prefault.off.store(true, Ordering::Relaxed);
        }
    }
}
