//! Writing pages: `write_frame`, the one way a page reaches its store (copy under the
//! shared latch, the WAL rule, seal, write), and `flush_file`, the checkpoint primitive
//! (README, "Writing pages and the WAL rule").

use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::time::Duration;

use parking_lot::lock_api::RawRwLock as _;
use tessera_errors::Result;
use tessera_io::AlignedBuf;

use super::frame::{State, DIRTY, GEN_SHIFT, WRITING};
use super::registry::{not_registered, FileEntry};
use super::table::key_page;
use super::{FileId, Inner};
use crate::page::{self, PAGE_SIZE};

thread_local! {
    /// Each thread that writes pages keeps one aligned page buffer for the sealed copy.
    static WRITE_BUF: RefCell<Option<AlignedBuf>> = const { RefCell::new(None) };
}

fn with_write_buf<R>(f: impl FnOnce(&mut [u8]) -> R) -> R {
    WRITE_BUF.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => f(slot.get_or_insert_with(|| AlignedBuf::new(PAGE_SIZE))),
        // Re-entered from a store callback: use a temporary buffer.
        Err(_) => f(&mut AlignedBuf::new(PAGE_SIZE)),
    })
}

impl Inner {
    /// Writes pinned frame `i` if it is dirty: copy under the shared latch, then (latch
    /// released) flush the log to the copy's LSN, seal the copy and write it. Returns
    /// `Ok(true)` if the page was clean or has been written, `Ok(false)` if it could not be
    /// written now (latch busy and `!block`, or another write of it in progress).
    pub(super) fn write_frame(&self, i: u32, entry: &FileEntry, block: bool) -> Result<bool> {
        let f = self.frame(i);
        assert!(State(f.state.load(Ordering::Relaxed)).pins() > 0, "writing an unpinned frame");
        if block {
            f.latch.lock_shared();
        } else if !f.latch.try_lock_shared() {
            return Ok(false);
        }
        let d = f.dirty.load(Ordering::Acquire);
        let claimed = d & DIRTY != 0
            && d & WRITING == 0
            && f.dirty.compare_exchange(d, d | WRITING, Ordering::AcqRel, Ordering::Acquire).is_ok();
        if !claimed {
            // SAFETY: locked shared above.
            unsafe { f.latch.unlock_shared() };
            return Ok(d & DIRTY == 0);
        }
        let no = key_page(f.key.load(Ordering::Relaxed));
        with_write_buf(|buf| {
            // SAFETY: the shared latch keeps modifiers out while we copy; buf is PAGE_SIZE bytes.
            unsafe { std::ptr::copy_nonoverlapping(self.frame_ptr(i), buf.as_mut_ptr(), PAGE_SIZE) };
            // SAFETY: locked shared above.
            unsafe { f.latch.unlock_shared() };
            let io = std::panic::catch_unwind(AssertUnwindSafe(|| {
                entry.store.flush_log_to(page::lsn(buf)).and_then(|()| {
                    // The pool knows where the image goes: stamp it so a misdirected write is caught.
                    page::set_page_no(buf, no);
                    page::seal(buf);
                    entry.store.write_page(no, buf)
                })
            }));
            let res = io.unwrap_or_else(|panic| {
                f.dirty.fetch_and(!WRITING, Ordering::AcqRel);
                std::panic::resume_unwind(panic)
            });
            let prev = f
                .dirty
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |x| {
                    let mut y = x & !WRITING;
                    if res.is_ok() && x >> GEN_SHIFT == d >> GEN_SHIFT {
                        y &= !DIRTY;
                    }
                    Some(y)
                })
                .unwrap_or_else(|x| x);
            if res.is_ok() {
                self.writes.fetch_add(1, Ordering::Relaxed);
                if prev >> GEN_SHIFT == d >> GEN_SHIFT {
                    self.dirty_pages.fetch_sub(1, Ordering::Relaxed);
                }
            }
            res.map(|()| true)
        })
    }

    pub(super) fn flush_file(&self, file: FileId) -> Result<()> {
        let entry = self.entry(file).ok_or_else(|| not_registered(file))?;
        // A snapshot in page order; `pin_page` rechecks each page under its shard mutex.
        for (no, _) in entry.radix.get().resident() {
            let Some(pin) = self.pin_page(&entry, no) else { continue };
            // Another thread may be writing this page: wait for it, then look again (it
            // may have been dirtied after that thread's copy).
            while !self.write_frame(pin.idx, &entry, true)? {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        entry.store.sync()
    }
}
