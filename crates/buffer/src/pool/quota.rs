//! Per-file frame limits (README, "Per-file limits"): a file may be held to at most n
//! resident pages, so that one database's scans and loads cannot take the pool from the
//! others. A load into a file at its limit replaces one of that file's own cold pages,
//! found by a clock that walks the file's radix; the rest of the pool is not touched.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use tessera_errors::Result;

use super::evict::Evict;
use super::frame::{Kind, State, MAX_USAGE, USAGE_SHIFT};
use super::registry::{not_registered, FileEntry};
use super::table::key;
use super::{FileId, Inner};
use crate::page::PageNo;

/// No limit.
const UNLIMITED: usize = usize::MAX;

/// A file's resident-page count and limit, kept in its registry entry.
#[derive(Debug)]
pub(super) struct FileQuota {
    /// Pages of the file in the page table; changed under the shard mutex of the
    /// translation it counts (as `Inner::resident` is).
    pub(super) resident_pages: AtomicUsize,
    /// At most this many resident pages (`UNLIMITED`: none).
    limit_pages: AtomicUsize,
    /// Where the file's own clock resumes: a page number.
    hand: AtomicU32,
    /// Own pages evicted to load another within the limit.
    evictions: AtomicU64,
    /// Loads that went past the limit because no own page could be evicted (all pinned
    /// or being written).
    overruns: AtomicU64,
}

impl Default for FileQuota {
    fn default() -> FileQuota {
        FileQuota {
            resident_pages: AtomicUsize::new(0),
            limit_pages: AtomicUsize::new(UNLIMITED),
            hand: AtomicU32::new(0),
            evictions: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
        }
    }
}

impl FileQuota {
    pub(super) fn limit(&self) -> Option<usize> {
        Some(self.limit_pages.load(Ordering::Relaxed)).filter(|&l| l != UNLIMITED)
    }

    /// Whether a new page must replace one of the file's own.
    pub(super) fn is_full(&self) -> bool {
        self.limit().is_some_and(|l| self.resident_pages.load(Ordering::Relaxed) >= l)
    }

    pub(super) fn count_overrun(&self) {
        self.overruns.fetch_add(1, Ordering::Relaxed);
    }
}

/// One file's share of the pool, for `BufferPool::file_usage`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileUsage {
    pub resident_pages: usize,
    /// `None`: no limit.
    pub limit_pages: Option<usize>,
    /// Own pages evicted so that a load stayed within the limit.
    pub evictions_within_limit: u64,
    /// Loads that went past the limit because every own page was pinned.
    pub overruns: u64,
}

impl Inner {
    /// Sets (or, with `None`, removes) the file's limit. A limit below what the file holds
    /// now evicts its coldest unpinned pages at once (dirty ones are written first).
    pub(super) fn set_file_limit(&self, file: FileId, limit_pages: Option<usize>) -> Result<()> {
        let entry = self.entry(file).ok_or_else(|| not_registered(file))?;
        let limit = limit_pages.map_or(UNLIMITED, |l| l.max(1));
        entry.quota.limit_pages.store(limit, Ordering::Relaxed);
        while entry.quota.resident_pages.load(Ordering::Relaxed) > limit {
            match self.evict_own(&entry)? {
                Some(i) => self.free_frame(i),
                None => break, // the rest is pinned: later loads replace it
            }
        }
        Ok(())
    }

    pub(super) fn file_usage(&self, file: FileId) -> Option<FileUsage> {
        let entry = self.entry(file)?;
        let q = &entry.quota;
        Some(FileUsage {
            resident_pages: q.resident_pages.load(Ordering::Relaxed),
            limit_pages: q.limit(),
            evictions_within_limit: q.evictions.load(Ordering::Relaxed),
            overruns: q.overruns.load(Ordering::Relaxed),
        })
    }

    /// Evicts one of the file's own cold, unpinned pages and returns its frame, `Owned`
    /// by the caller; `None` when none could be found. The file's clock: from its hand,
    /// round the resident pages in page order, aging a hot page as it passes and taking
    /// the first cold one; at most enough steps for every page to age to cold. The radix
    /// is read without a lock, as the hit path reads it; `try_evict` re-checks the
    /// translation under the shard mutex.
    pub(super) fn evict_own(&self, entry: &FileEntry) -> Result<Option<u32>> {
        let q = &entry.quota;
        let radix = entry.radix.get();
        let budget = q.resident_pages.load(Ordering::Relaxed) * (MAX_USAGE as usize + 2) + 64;
        let mut at = q.hand.load(Ordering::Relaxed);
        let mut last_err = None;
        for _ in 0..budget {
            let Some((no, i)) = radix.next_resident(PageNo::from_raw(at)) else {
                if at == 0 {
                    break; // nothing resident
                }
                at = 0; // round again: hot pages age by one each time round
                continue;
            };
            at = no.saturating_add(1).raw();
            q.hand.store(at, Ordering::Relaxed);
            let f = self.frame(i);
            if f.key.load(Ordering::Relaxed) != key(entry.id, no) {
                continue; // moved on since we read the radix
            }
            let s = State(f.state.load(Ordering::Relaxed));
            if s.kind() != Kind::Valid || s.pins() != 0 {
                continue;
            }
            if s.usage() > 0 {
                let aged = s.0 - (1 << USAGE_SHIFT);
                let _ = f.state.compare_exchange(s.0, aged, Ordering::Relaxed, Ordering::Relaxed);
                continue;
            }
            match self.try_evict(i, false) {
                Ok(Evict::Done { wrote }) => {
                    if wrote {
                        self.kick_writer();
                    }
                    q.evictions.fetch_add(1, Ordering::Relaxed);
                    return Ok(Some(i));
                }
                Ok(Evict::Skipped) => {}
                Err(e) => last_err = Some(e),
            }
        }
        last_err.map_or(Ok(None), Err)
    }
}
