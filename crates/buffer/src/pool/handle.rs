//! What callers hold: `PageHandle` (a pin) and the latch guards taken from it.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::lock_api::RawRwLock as _;

use super::frame::{DIRTY, GEN_SHIFT, WRITING};
use super::{FileId, Inner, Proxy};
use crate::page::{PageNo, PAGE_SIZE};

/// A pinned page. The frame cannot be evicted while the handle lives; dropping it unpins.
pub struct PageHandle {
    pub(super) pool: Arc<Proxy>,
    pub(super) idx: u32,
    pub(super) file: FileId,
    pub(super) no: PageNo,
}

/// A shared latch on a pinned page; dereferences to its `PAGE_SIZE` bytes.
pub struct PageRead<'a> {
    h: &'a PageHandle,
}

/// An exclusive latch on a pinned page.
pub struct PageWrite<'a> {
    h: &'a PageHandle,
}

/// A pin and a shared latch together, owned (no borrow of a handle): what
/// [`PageHandle::into_read`] returns. Dropping it releases the latch, then the pin.
pub struct PageReadGuard {
    h: PageHandle,
}

/// A pin and an exclusive latch together, owned: what [`PageHandle::into_write`] returns.
pub struct PageWriteGuard {
    h: PageHandle,
}

impl PageHandle {
    fn inner(&self) -> &Inner {
        &self.pool.inner
    }

    pub fn page_no(&self) -> PageNo {
        self.no
    }

    pub fn file(&self) -> FileId {
        self.file
    }

    /// Takes the shared latch. Do not take a second latch on the same page in one thread.
    pub fn read(&self) -> PageRead<'_> {
        self.inner().frame(self.idx).latch.lock_shared();
        PageRead { h: self }
    }

    /// Takes the exclusive latch.
    pub fn write(&self) -> PageWrite<'_> {
        self.inner().frame(self.idx).latch.lock_exclusive();
        PageWrite { h: self }
    }

    /// Takes the shared latch and keeps it, together with the pin, in an owned guard.
    pub fn into_read(self) -> PageReadGuard {
        self.inner().frame(self.idx).latch.lock_shared();
        PageReadGuard { h: self }
    }

    /// Takes the exclusive latch and keeps it, together with the pin, in an owned guard.
    pub fn into_write(self) -> PageWriteGuard {
        self.inner().frame(self.idx).latch.lock_exclusive();
        PageWriteGuard { h: self }
    }

    fn bytes(&self) -> *mut u8 {
        self.inner().frame_ptr(self.idx)
    }

    /// See [`PageWrite::mark_dirty`]; the caller holds the exclusive latch.
    fn mark_dirty(&self) {
        let prev = self
            .inner()
            .frame(self.idx)
            .dirty
            .fetch_update(Ordering::Release, Ordering::Relaxed, |x| {
                Some(((x >> GEN_SHIFT).wrapping_add(1) << GEN_SHIFT) | (x & WRITING) | DIRTY)
            })
            .unwrap_or_else(|x| x);
        if prev & DIRTY == 0 {
            let inner = self.inner();
            inner.dirty_pages.fetch_add(1, Ordering::Relaxed);
            if let Some(ext) = inner.extension() {
                ext.invalidate(inner.frame(self.idx).key.load(Ordering::Relaxed));
            }
        }
    }
}

impl Drop for PageHandle {
    fn drop(&mut self) {
        self.inner().unpin(self.idx);
    }
}

impl fmt::Debug for PageHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageHandle")
            .field("file", &self.file.0)
            .field("page", &self.no)
            .field("frame", &self.idx)
            .finish()
    }
}

impl Deref for PageRead<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the frame is pinned (stays mapped to this page) and we hold its shared
        // latch, so no one writes it for the life of this guard.
        unsafe { std::slice::from_raw_parts(self.h.bytes(), PAGE_SIZE) }
    }
}

impl Drop for PageRead<'_> {
    fn drop(&mut self) {
        // SAFETY: taken in `PageHandle::read`.
        unsafe { self.h.inner().frame(self.h.idx).latch.unlock_shared() }
    }
}

impl PageWrite<'_> {
    /// Records that the page was modified. The caller has already stored the new page LSN
    /// in the header with `page::set_lsn`.
    pub fn mark_dirty(&mut self) {
        self.h.mark_dirty();
    }
}

impl Deref for PageWrite<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: pinned and exclusively latched.
        unsafe { std::slice::from_raw_parts(self.h.bytes(), PAGE_SIZE) }
    }
}

impl DerefMut for PageWrite<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: pinned and exclusively latched; `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.h.bytes(), PAGE_SIZE) }
    }
}

impl Drop for PageWrite<'_> {
    fn drop(&mut self) {
        // SAFETY: taken in `PageHandle::write`.
        unsafe { self.h.inner().frame(self.h.idx).latch.unlock_exclusive() }
    }
}

impl PageReadGuard {
    pub fn page_no(&self) -> PageNo {
        self.h.no
    }

    pub fn file(&self) -> FileId {
        self.h.file
    }
}

impl Deref for PageReadGuard {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: pinned and shared-latched for the life of the guard.
        unsafe { std::slice::from_raw_parts(self.h.bytes(), PAGE_SIZE) }
    }
}

impl Drop for PageReadGuard {
    fn drop(&mut self) {
        // SAFETY: taken in `PageHandle::into_read`; the pin (field `h`) is dropped after this.
        unsafe { self.h.inner().frame(self.h.idx).latch.unlock_shared() }
    }
}

impl PageWriteGuard {
    pub fn page_no(&self) -> PageNo {
        self.h.no
    }

    pub fn file(&self) -> FileId {
        self.h.file
    }

    /// Records that the page was modified; see [`PageWrite::mark_dirty`].
    pub fn mark_dirty(&mut self) {
        self.h.mark_dirty();
    }
}

impl Deref for PageWriteGuard {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: pinned and exclusively latched for the life of the guard.
        unsafe { std::slice::from_raw_parts(self.h.bytes(), PAGE_SIZE) }
    }
}

impl DerefMut for PageWriteGuard {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: pinned and exclusively latched; `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.h.bytes(), PAGE_SIZE) }
    }
}

impl Drop for PageWriteGuard {
    fn drop(&mut self) {
        // SAFETY: taken in `PageHandle::into_write`; the pin (field `h`) is dropped after this.
        unsafe { self.h.inner().frame(self.h.idx).latch.unlock_exclusive() }
    }
}
