//! Eviction: the clock (GCLOCK with cold-first selection) and `try_evict`, which claims a
//! cold, unpinned frame, writing it first if it is dirty (README, "Eviction").

#[cfg(test)]
use std::cell::RefCell;
use std::sync::atomic::Ordering;

use tessera_errors::{Error, Result};

use super::frame::{Kind, State, DIRTY, MAX_USAGE, NO_KEY, USAGE_SHIFT, WRITING};
use super::table::{key_file, key_page};
use super::{FileId, Inner};
use crate::page::PAGE_SIZE;

/// What `try_evict` achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Evict {
    /// The frame is now `Owned` by the caller; `wrote` if a dirty page was written first.
    Done { wrote: bool },
    /// Not evictable right now.
    Skipped,
}

#[cfg(test)]
thread_local! {
    /// A test's code to run inside `try_evict`, between checking a clean, unpinned victim
    /// and claiming it (once).
    pub(super) static BEFORE_CLAIM: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
}

impl Inner {
    /// The clock: GCLOCK with cold-first selection (README, "Eviction").
    pub(super) fn find_victim(&self) -> Result<u32> {
        let n = self.hwm.load(Ordering::Acquire);
        if n == 0 {
            return Err(Error::PoolExhausted);
        }
        let patience = (n / 4).clamp(8, 256);
        let max_steps = (n * (MAX_USAGE as usize + 3) + patience).max(4096);
        let mut fruitless = 0usize;
        let mut busy_run = 0usize;
        let mut last_err = None;
        let mut wrote = false;
        let mut found = None;
        for step in 0..max_steps {
            if last_err.is_some() && step >= 2 * n {
                break; // writes are failing: report instead of retrying every dirty frame forever
            }
            let i = (self.hand.fetch_add(1, Ordering::Relaxed) % n) as u32;
            let f = self.frame(i);
            let s = State(f.state.load(Ordering::Relaxed));
            let beyond = i as usize >= self.limit.load(Ordering::Relaxed);
            match s.kind() {
                Kind::Valid if s.pins() == 0 => {
                    busy_run = 0;
                    if s.usage() > 0 && !beyond {
                        // Age hot frames only once cold ones have run out for this search.
                        if fruitless >= patience {
                            let _ = f.state.compare_exchange(
                                s.0,
                                s.0 - (1 << USAGE_SHIFT),
                                Ordering::Relaxed,
                                Ordering::Relaxed,
                            );
                        }
                        fruitless += 1;
                        continue;
                    }
                    match self.try_evict(i, beyond) {
                        Ok(Evict::Done { wrote: w }) => {
                            wrote |= w;
                            if beyond {
                                self.free_frame(i);
                                continue;
                            }
                            found = Some(i);
                            break;
                        }
                        Ok(Evict::Skipped) => fruitless += 1,
                        Err(e) => {
                            last_err = Some(e);
                            fruitless += 1;
                        }
                    }
                }
                Kind::Orphan if s.pins() == 0 => {
                    busy_run = 0;
                    if self.claim_orphan(i) {
                        if beyond {
                            self.free_frame(i);
                            continue;
                        }
                        self.scrub(i);
                        found = Some(i);
                        break;
                    }
                }
                Kind::Free => {
                    busy_run = 0;
                    fruitless += 1;
                    // Someone freed frames meanwhile.
                    if !beyond {
                        if let Some(j) = self.pop_free() {
                            found = Some(j);
                            break;
                        }
                    }
                }
                _ => {
                    busy_run += 1;
                    if busy_run >= n {
                        break; // a whole turn of the clock without one unpinned frame
                    }
                }
            }
        }
        if wrote {
            self.kick_writer();
        }
        match found {
            Some(i) => Ok(i),
            None => Err(last_err.unwrap_or(Error::PoolExhausted)),
        }
    }

    /// Evicts frame `i` if it is valid, unpinned, cold (or `force`) and clean; a dirty
    /// frame is written first (WAL rule included) and the eviction retried once.
    pub(super) fn try_evict(&self, i: u32, force: bool) -> Result<Evict> {
        let f = self.frame(i);
        let mut wrote = false;
        for _ in 0..2 {
            let k = f.key.load(Ordering::Acquire);
            if k == NO_KEY {
                return Ok(Evict::Skipped);
            }
            let g = self.shard(k).0.lock();
            // Found under the shard mutex, the file stays open (its radix ours to use for
            // this key) until we release it. Not found: `discard` is taking its frames.
            let Some(entry) = self.entry(FileId(key_file(k))) else { return Ok(Evict::Skipped) };
            let Some(slot) = entry.radix.get().entry(key_page(k)) else { return Ok(Evict::Skipped) };
            if slot.load(Ordering::Relaxed) != i + 1 {
                return Ok(Evict::Skipped);
            }
            let s = State(f.state.load(Ordering::Acquire));
            if s.kind() != Kind::Valid || s.pins() != 0 || (!force && s.usage() != 0) {
                return Ok(Evict::Skipped);
            }
            let d = f.dirty.load(Ordering::Acquire);
            if d & (DIRTY | WRITING) == 0 {
                #[cfg(test)]
                if let Some(hook) = BEFORE_CLAIM.with(|h| h.borrow_mut().take()) {
                    hook();
                }
                // Claim the frame. The compare-and-swap fails if anyone holds a pin.
                if f.state
                    .compare_exchange(s.0, State::new(Kind::Owned, 0, 0).0, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    return Ok(Evict::Skipped);
                }
                // Owned: no pin can be taken any more (the hit path pins only Valid frames,
                // the locked paths need our mutex). But a hit-path pin may have come and gone
                // since we read the dirty word, leaving the state word as it was (usage
                // already saturated) and the page modified. Our CAS read the value its unpin
                // released, so a second look at the dirty word sees any such change.
                if f.dirty.load(Ordering::Acquire) & (DIRTY | WRITING) != 0 {
                    f.state.store(s.0, Ordering::Release);
                    return Ok(Evict::Skipped);
                }
                slot.store(0, Ordering::Release);
                self.resident.fetch_sub(1, Ordering::Relaxed);
                entry.quota.resident_pages.fetch_sub(1, Ordering::Relaxed);
                drop(g);
                self.evictions.fetch_add(1, Ordering::Relaxed);
                if let Some(ext) = self.extension() {
                    // The frame is Owned by us: its bytes are the clean page, unchanging.
                    // SAFETY: PAGE_SIZE bytes of frame `i`, which nobody else can touch now.
                    let image = unsafe { std::slice::from_raw_parts(self.frame_ptr(i), PAGE_SIZE) };
                    ext.stage(k, image);
                }
                return Ok(Evict::Done { wrote });
            }
            if d & WRITING != 0 || wrote {
                return Ok(Evict::Skipped);
            }
            let pin = self.pin_passing(i);
            drop(g);
            let r = self.write_frame(i, &entry, false);
            drop(pin);
            if !r? {
                return Ok(Evict::Skipped);
            }
            wrote = true;
        }
        Ok(Evict::Skipped)
    }

    pub(super) fn drop_clean_pages(&self) -> usize {
        let n = self.hwm.load(Ordering::Acquire);
        let mut dropped = 0;
        for i in 0..n as u32 {
            let f = self.frame(i);
            let s = State(f.state.load(Ordering::Acquire));
            let clean = f.dirty.load(Ordering::Acquire) & (DIRTY | WRITING) == 0;
            // A page dirtied after this look is written before it goes (try_evict), so
            // nothing is lost either way.
            if s.kind() == Kind::Valid && s.pins() == 0 && clean {
                if let Ok(Evict::Done { .. }) = self.try_evict(i, true) {
                    self.free_frame(i);
                    dropped += 1;
                }
            }
        }
        dropped
    }
}
