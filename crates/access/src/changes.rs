//! The changed-extent map: which extents (8 pages) of the data file were written since
//! the last reset. Differential backups read only those extents instead of the whole
//! file (SQL Server keeps the same map on its DCM pages). The map lives in memory only:
//! the database layer says for which differential base it is complete, and a database
//! opened after its base was taken falls back to reading every page.
//!
//! Pages are marked when the buffer pool writes them to the file (`DataStore::write_page`),
//! not at each change: a bulk insert changes a page a hundred times and writes it once.
//! That is complete because the full backup that becomes the base resets the map just
//! after its checkpoint, and a differential checkpoints before it reads the map: a page
//! changed after the base's checkpoint began is either written since the reset (marked),
//! or dirty at the differential's checkpoint (written then, marked), or was changed before
//! the reset, which the base's own log carries.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use tessera_buffer::page::PageNo;

/// Pages per extent.
pub const EXTENT_PAGES: u32 = 8;

#[derive(Default)]
pub struct ChangeMap {
    /// One bit per extent; grows with the file (1 KiB per 64K extents = 4 GiB of file).
    words: RwLock<Vec<AtomicU64>>,
}

impl ChangeMap {
    /// Notes that page `no` changed. Cheap when its extent is already marked.
    #[inline]
    pub fn mark(&self, no: PageNo) {
        let extent = (no.raw() / EXTENT_PAGES) as usize;
        let (w, bit) = (extent / 64, 1u64 << (extent % 64));
        {
            let words = self.words.read();
            if let Some(word) = words.get(w) {
                if word.load(Ordering::Relaxed) & bit == 0 {
                    word.fetch_or(bit, Ordering::Relaxed);
                }
                return;
            }
        }
        let mut words = self.words.write();
        if words.len() <= w {
            words.resize_with(w + 1, AtomicU64::default);
        }
        words[w].fetch_or(bit, Ordering::Relaxed);
    }

    /// Forgets every change: from now on the map lists what changes after this call.
    pub fn reset(&self) {
        for word in self.words.read().iter() {
            word.store(0, Ordering::Relaxed);
        }
    }

    /// Runs `(first page, count)` of pages below `pages` in changed extents.
    pub fn changed_runs(&self, pages: u32) -> Vec<(PageNo, u32)> {
        let words = self.words.read();
        let mut runs: Vec<(PageNo, u32)> = Vec::new();
        for (w, word) in words.iter().enumerate() {
            let mut bits = word.load(Ordering::Relaxed);
            while bits != 0 {
                let extent = (w * 64) as u32 + bits.trailing_zeros();
                bits &= bits - 1;
                let first = extent * EXTENT_PAGES;
                if first >= pages {
                    return runs;
                }
                let count = EXTENT_PAGES.min(pages - first);
                match runs.last_mut() {
                    Some((f, c)) if *f + *c == PageNo::from_raw(first) => *c += count,
                    _ => runs.push((PageNo::from_raw(first), count)),
                }
            }
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(n: u32) -> PageNo {
        PageNo::from_raw(n)
    }

    #[test]
    fn marks_extents_and_lists_them_as_runs() {
        let m = ChangeMap::default();
        assert!(m.changed_runs(1000).is_empty());
        for no in [3, 9, 15, 17, 700, 100_000] {
            m.mark(PageNo::from_raw(no));
        }
        assert_eq!(m.changed_runs(1000), vec![(pg(0), 24), (pg(696), 8)]);
        assert_eq!(m.changed_runs(200_000), vec![(pg(0), 24), (pg(696), 8), (pg(100_000), 8)]);
        assert_eq!(m.changed_runs(700), vec![(pg(0), 24), (pg(696), 4)], "runs stop at the end of the file");
        m.reset();
        assert!(m.changed_runs(200_000).is_empty());
        m.mark(PageNo::from_raw(8));
        assert_eq!(m.changed_runs(200_000), vec![(pg(8), 8)]);
    }
}
