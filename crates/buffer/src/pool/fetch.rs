//! Bringing a page in: the lock-free hit path (translate, pin, validate), the locked path
//! for misses and loads in progress, and the load protocol (`map_loading`, `finish_load`)
//! that read-ahead shares (README, "The hit path" and "The locked path").

#[cfg(test)]
use std::cell::Cell;
use std::panic::AssertUnwindSafe;
#[cfg(test)]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use parking_lot::lock_api::RawRwLock as _;
use tessera_errors::{Error, Result};

use super::counters;
use super::frame::{self, Kind, State, MAX_USAGE, USAGE_SHIFT};
use super::registry::{not_registered, FileEntry};
use super::table::{key, key_page, Key};
use super::{FileId, Inner};
use crate::page::{self, PageNo, PAGE_SIZE};

/// How a page missing from the pool is brought in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Load {
    /// Read and verify it (error 824 when damaged).
    Read,
    /// A zero-filled frame: the page is being allocated.
    Zero,
    /// Read it, or a zero-filled frame when the disk copy is damaged.
    ReadOrZero,
}

#[cfg(test)]
thread_local! {
    /// Tests set this to make the hit path yield between its steps, so that evictions
    /// land inside its race windows.
    pub(super) static WIDEN_RACES: Cell<bool> = const { Cell::new(false) };
}

/// Hit-path pins dropped because the frame turned out to hold another page.
#[cfg(test)]
pub(super) static STALE_PINS: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
fn race_window() {
    if WIDEN_RACES.with(Cell::get) {
        std::thread::yield_now();
    }
}

/// A wait for a page to come from disk (or the extension) into the pool.
fn page_io_wait() -> tessera_waits::Waiting {
    tessera_waits::begin(tessera_waits::WaitType::PageIoShared, tessera_waits::Resource::Nothing)
}

impl Inner {
    /// Pins page `no` of `file`, loading it on a miss. Returns the frame and whether it was
    /// a hit.
    #[inline]
    pub(super) fn fetch(&self, file: FileId, no: PageNo, new: Load) -> Result<(u32, bool)> {
        if new != Load::Zero {
            counters::count_logical();
        }
        let k = key(file, no);
        match self.pin_fast(file, no, k) {
            Some(i) => Ok((i, true)),
            None => self.fetch_locked(file, no, k, new),
        }
    }

    /// The hit path: translate without a lock, pin, then validate (README, "Page table").
    /// `None` sends the caller to the locked path: not resident, not registered, loading,
    /// or the translation went stale under us.
    #[inline]
    pub(super) fn pin_fast(&self, file: FileId, no: PageNo, k: Key) -> Option<u32> {
        let i = self.slot_table().radix(file.0)?.get(no)?;
        // The page's header and first slots are about to be read: start loading them while
        // the descriptor is checked and pinned, so the two cache misses overlap.
        let frame = self.frame_ptr(i);
        page::prefetch(frame);
        page::prefetch(frame.wrapping_add(64));
        #[cfg(test)]
        race_window();
        // Every value ever stored in a radix names a constructed descriptor, so even a stale
        // one is safe to look at.
        let f = self.frame(i);
        if f.key.load(Ordering::Relaxed) != k {
            return None; // stale: the frame holds another page now (cheap early filter)
        }
        #[cfg(test)]
        race_window();
        let mut s = State(f.state.load(Ordering::Relaxed));
        loop {
            // Only a Valid frame may be pinned here. Other states are owned by someone who
            // may overwrite the state word with a plain store, or are on their way to being
            // mapped (Loading: the locked path waits for the loader).
            if s.kind() != Kind::Valid {
                return None;
            }
            assert!(s.pins() < frame::PIN_MASK, "pin count overflow");
            let bump = if s.usage() < MAX_USAGE { 1 << USAGE_SHIFT } else { 0 };
            match f.state.compare_exchange_weak(s.0, s.0 + 1 + bump, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(x) => s = State(x),
            }
        }
        // Pinned while Valid: the frame can no longer be evicted or reused, so its key is
        // stable. If it is ours, this is a hit; if the frame was evicted and reused for
        // another page between our read of the radix and the pin (ABA), it is not.
        if f.key.load(Ordering::Relaxed) != k {
            #[cfg(test)]
            STALE_PINS.fetch_add(1, Ordering::Relaxed);
            self.unpin(i);
            return None;
        }
        Some(i)
    }

    /// The locked path: misses, loads in progress, and hits whose lock-free translation
    /// failed. Under the shard mutex the file's radix is authoritative for key `k`.
    #[inline(never)]
    fn fetch_locked(&self, file: FileId, no: PageNo, k: Key, new: Load) -> Result<(u32, bool)> {
        let entry = self.entry(file).ok_or_else(|| not_registered(file))?;
        let radix = entry.radix.get();
        let shard = self.shard(k);
        loop {
            {
                let g = shard.0.lock();
                if entry.closed.load(Ordering::Acquire) {
                    return Err(not_registered(file)); // discarded since we looked it up
                }
                if let Some(i) = radix.get(no) {
                    let prev = self.pin_touch(i);
                    drop(g);
                    if prev.kind() == Kind::Valid {
                        return Ok((i, true));
                    }
                    // Being read by another thread, which holds its exclusive latch: wait.
                    let f = self.frame(i);
                    let waiting = page_io_wait();
                    f.latch.lock_shared();
                    drop(waiting);
                    // SAFETY: locked shared just above.
                    unsafe { f.latch.unlock_shared() };
                    if State(f.state.load(Ordering::Acquire)).kind() == Kind::Valid {
                        return Ok((i, true));
                    }
                    // The read failed (or the file was discarded): start over.
                    self.unpin(i);
                    continue;
                }
            }
            let Some(i) = self.map_loading(&entry, no, false)? else {
                continue; // another thread mapped the page meanwhile
            };
            let f = self.frame(i);
            // SAFETY: we hold the frame's exclusive latch; nobody else touches its bytes.
            let buf = unsafe { std::slice::from_raw_parts_mut(self.frame_ptr(i), PAGE_SIZE) };
            let io = std::panic::catch_unwind(AssertUnwindSafe(|| {
                if new == Load::Zero {
                    buf.fill(0);
                    return Ok(());
                }
                counters::count_physical();
                let _waiting = page_io_wait();
                if self.extension().is_some_and(|ext| ext.read(k, buf)) {
                    return Ok(());
                }
                self.reads.fetch_add(1, Ordering::Relaxed);
                entry.store.read_page(no, buf)?;
                match page::verify(buf, no) {
                    Ok(()) => Ok(()),
                    Err(_) if new == Load::ReadOrZero => {
                        buf.fill(0);
                        Ok(())
                    }
                    Err(damage) => Err(Error::Corrupt {
                        database: entry.store.database_name().to_string(),
                        path: entry.store.path().to_path_buf(),
                        page: no.raw(),
                        detail: damage.to_string(),
                    }),
                }
            }));
            let res = io.unwrap_or_else(|panic| {
                // A panicking store must not leave waiters blocked on this frame.
                self.unmap_failed(i, k, &entry);
                // SAFETY: locked exclusive above.
                unsafe { f.latch.unlock_exclusive() };
                self.unpin(i);
                std::panic::resume_unwind(panic)
            });
            let res = self.finish_load(i, &entry, no, res);
            return match res {
                Ok(()) => Ok((i, false)),
                Err(e) => {
                    self.unpin(i);
                    Err(e)
                }
            };
        }
    }

    /// Allocates a frame for page `no` of `entry` and maps it Loading, pinned once and
    /// exclusively latched by the caller, who must read it and call `finish_load`.
    /// `Ok(None)`: the page was mapped by someone else meanwhile (the frame went back), or
    /// this is read-ahead for a file at its limit.
    /// A miss is counted unless this is `read_ahead`.
    pub(super) fn map_loading(&self, entry: &FileEntry, no: PageNo, read_ahead: bool) -> Result<Option<u32>> {
        let k = key(entry.id, no);
        if read_ahead && entry.quota.is_full() {
            return Ok(None); // it would replace the file's own pages (README, "Per-file limits")
        }
        let i = match self.frame_within_limit(entry) {
            Some(i) => i,
            None => self.allocate_frame(read_ahead)?,
        };
        let f = self.frame(i);
        f.key.store(k, Ordering::Relaxed);
        let latched = f.latch.try_lock_exclusive();
        assert!(latched, "buffer pool: free frame {i} is latched");
        let mut g = self.shard(k).0.lock();
        let closed = entry.closed.load(Ordering::Acquire);
        let slot = (!closed).then(|| entry.radix.get().entry_or_grow(no));
        let raced = slot.is_some_and(|e| e.load(Ordering::Relaxed) != 0);
        if raced || closed {
            drop(g);
            // SAFETY: locked exclusive above.
            unsafe { f.latch.unlock_exclusive() };
            self.free_frame(i);
            return if closed { Err(not_registered(entry.id)) } else { Ok(None) };
        }
        // Loading before the translation is published: a lock-free reader that finds
        // the frame finds it Loading (or later Valid), never Owned.
        f.state.store(State::new(Kind::Loading, 1, 0).0, Ordering::Release);
        slot.expect("open file").store(i + 1, Ordering::Release);
        if !read_ahead {
            g.misses += 1;
        }
        // Counted under the shard mutex with the translation it counts.
        self.resident.fetch_add(1, Ordering::Relaxed);
        entry.quota.resident_pages.fetch_add(1, Ordering::Relaxed);
        drop(g);
        Ok(Some(i))
    }

    /// For a file at its limit (README, "Per-file limits"): one of its own pages evicted
    /// to make room. `None`: not at its limit, or (an overrun) no own page could go.
    fn frame_within_limit(&self, entry: &FileEntry) -> Option<u32> {
        if !entry.quota.is_full() {
            return None;
        }
        let own = self.evict_own(entry).ok().flatten();
        if own.is_none() {
            entry.quota.count_overrun();
        }
        own
    }

    /// Ends the load of frame `i` begun by `map_loading`: Valid if `res` is Ok (and the
    /// file was not discarded meanwhile), otherwise out of the page table. Releases the
    /// exclusive latch; the caller still holds its pin.
    pub(super) fn finish_load(&self, i: u32, entry: &FileEntry, no: PageNo, res: Result<()>) -> Result<()> {
        let f = self.frame(i);
        let res = res.and_then(|()| {
            f.state
                .fetch_update(Ordering::Release, Ordering::Relaxed, |x| {
                    let s = State(x);
                    (s.kind() == Kind::Loading).then(|| s.with_kind(Kind::Valid).0)
                })
                .map(|_| ())
                .map_err(|_| not_registered(entry.id)) // discarded while we were reading
        });
        if res.is_err() {
            self.unmap_failed(i, key(entry.id, no), entry);
        }
        // SAFETY: locked exclusive by `map_loading`.
        unsafe { f.latch.unlock_exclusive() };
        res
    }

    /// Takes a frame whose load failed out of the page table; it becomes an orphan, freed
    /// when its last pin (ours, or a waiter's) is dropped.
    fn unmap_failed(&self, i: u32, k: Key, entry: &FileEntry) {
        let f = self.frame(i);
        let g = self.shard(k).0.lock();
        // Once the file is closed, `discard` unmaps its frames (and may reuse the radix).
        if !entry.closed.load(Ordering::Acquire) {
            if let Some(slot) = entry.radix.get().entry(key_page(k)).filter(|e| e.load(Ordering::Relaxed) == i + 1) {
                slot.store(0, Ordering::Release);
                self.resident.fetch_sub(1, Ordering::Relaxed);
                entry.quota.resident_pages.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let _ = f.state.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |x| Some(State(x).with_kind(Kind::Orphan).0));
        drop(g);
    }
}
