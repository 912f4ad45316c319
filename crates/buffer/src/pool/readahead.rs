//! Read-ahead: pages a caller will want soon (the next leaves of a scan) are read in
//! multi-page runs by worker threads while the caller works on the pages it has, so a
//! cold scan keeps several large reads in flight instead of one 8 KiB read at a time.
//!
//! A run's frames are claimed and mapped `Loading` exactly as a miss maps its frame
//! (`Inner::map_loading`), so a fetch of a page that read-ahead is loading waits for it
//! like any other load. Read-ahead never reports errors: a page it cannot read or verify
//! is dropped again, and the fetch that wants it reads it itself (and reports 824).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tessera_errors::Error;

use super::counters;
use super::registry::FileEntry;
use super::table::key;
use super::{FileId, Inner};
use crate::page::{self, PageNo, PAGE_SIZE};

/// Pages in one read request (512 KiB), as SQL Server's read-ahead reads up to 64 pages.
pub const MAX_RUN: u32 = 64;
/// Worker threads, started while queued runs outnumber idle workers.
const MAX_WORKERS: usize = 8;
/// Runs waiting for a worker; more are dropped (the caller will read the pages itself).
const MAX_QUEUED: usize = 256;
/// How long a worker waits for the in-flight share of the pool (a quarter) to free up
/// before it drops the rest of its run.
const BUDGET_WAIT: Duration = Duration::from_millis(50);

#[derive(Clone, Debug)]
struct Run {
    file: FileId,
    first: PageNo,
    count: u32,
    /// The requesting thread's read-ahead counter (see `counters`).
    requester: Arc<AtomicU64>,
}

#[derive(Default)]
struct Queue {
    runs: VecDeque<Run>,
    idle: usize,
    workers: Vec<JoinHandle<()>>,
    shutdown: bool,
}

/// The read-ahead queue and its workers (one per pool).
#[derive(Default)]
pub(super) struct ReadAhead {
    queue: Mutex<Queue>,
    work: Condvar,
    /// Frames held Loading by read-ahead right now; kept below a share of the pool.
    pub in_flight: AtomicUsize,
    /// Pages read by read-ahead (SQL Server's "Readahead pages/sec" counter).
    pub pages: AtomicU64,
}

impl ReadAhead {
    /// Queues `pages` of `file` (in the order the caller will want them), grouped into
    /// runs of consecutive page numbers; pages already cached are left out. Returns the
    /// number of pages queued.
    pub fn request(&self, inner: &Arc<Inner>, file: FileId, pages: &[PageNo]) -> usize {
        let Some(radix) = inner.slot_table().radix(file.0) else {
            return 0;
        };
        // A file held to a limit reads ahead only below it, at most a quarter of it at a
        // time: at its limit every page read ahead replaces one of its own, and its clock
        // takes a page read ahead but not yet used (usage 0) before the used ones behind
        // it, so the scan would read it again.
        let pages = match inner.entry(file).map(|e| (e.quota.limit(), e.quota.is_full())) {
            Some((Some(_), true)) => return 0,
            Some((Some(limit), false)) => &pages[..pages.len().min((limit / 4).max(1))],
            _ => pages,
        };
        let mut runs: Vec<Run> = Vec::new();
        let mut requester: Option<Arc<AtomicU64>> = None;
        for &no in pages {
            // A lock-free peek: a stale answer costs one wasted or one missed page.
            if radix.get(no).is_some() {
                continue;
            }
            match runs.last_mut() {
                Some(r) if r.count < MAX_RUN && no == r.first + r.count => r.count += 1,
                Some(r) if r.count < MAX_RUN && no.checked_add(1) == Some(r.first) => {
                    r.first = no;
                    r.count += 1;
                }
                _ => {
                    let requester = requester.get_or_insert_with(counters::read_ahead_sink).clone();
                    runs.push(Run { file, first: no, count: 1, requester })
                }
            }
        }
        if runs.is_empty() {
            return 0;
        }
        let mut q = self.queue.lock();
        if q.shutdown {
            return 0;
        }
        let mut queued = 0;
        for run in runs {
            if q.runs.len() >= MAX_QUEUED {
                break;
            }
            queued += run.count as usize;
            q.runs.push_back(run);
            // Idle workers each take one run (they count as idle until they wake): start
            // another while the runs outnumber them, so the runs are read in parallel.
            if q.idle > 0 {
                self.work.notify_one();
            }
            if q.runs.len() > q.idle && q.workers.len() < MAX_WORKERS {
                let shared = Arc::clone(inner);
                match std::thread::Builder::new()
                    .name("tessera-readahead".into())
                    .spawn(move || shared.read_ahead_worker())
                {
                    Ok(h) => q.workers.push(h),
                    // No thread: the queued runs wait for the workers there are (if none,
                    // nobody reads them and the fetches do their own reads).
                    Err(_) => break,
                }
            }
        }
        queued
    }

    /// Stops the workers (the pool is being dropped) and waits for them.
    pub fn shut_down(&self) {
        let workers = {
            let mut q = self.queue.lock();
            q.shutdown = true;
            q.runs.clear();
            std::mem::take(&mut q.workers)
        };
        self.work.notify_all();
        for w in workers {
            let _ = w.join();
        }
    }

    /// Nothing queued, nothing being read.
    pub fn is_idle(&self) -> bool {
        let q = self.queue.lock();
        q.runs.is_empty() && q.idle == q.workers.len() && self.in_flight.load(Ordering::Relaxed) == 0
    }

    fn next(&self) -> Option<Run> {
        let mut q = self.queue.lock();
        loop {
            if q.shutdown {
                return None;
            }
            if let Some(run) = q.runs.pop_front() {
                return Some(run);
            }
            q.idle += 1;
            self.work.wait(&mut q);
            q.idle -= 1;
        }
    }
}

impl Inner {
    fn read_ahead_worker(&self) {
        while let Some(run) = self.read_ahead.next() {
            self.read_run(run);
        }
    }

    /// Loads the pages of `run` that are not cached, each maximal stretch of consecutive
    /// missing pages with one `read_pages` request.
    fn read_run(&self, run: Run) {
        let Some(entry) = self.entry(run.file) else {
            return;
        };
        let requester = &*run.requester;
        let budget = (self.limit.load(Ordering::Relaxed) / 4).max(1);
        let mut claimed: Vec<(PageNo, u32)> = Vec::with_capacity(run.count as usize);
        for no in run.first.up_to(run.first.saturating_add(run.count)) {
            let gap = claimed.last().is_some_and(|&(last, _)| last + 1 != no);
            if gap {
                self.load_claimed(&entry, &mut claimed, requester);
            }
            if self.read_ahead.in_flight.load(Ordering::Relaxed) >= budget {
                // Other workers' reads hold the share: read ours, wait briefly for theirs,
                // and give up on the rest of the run if that is not enough.
                self.load_claimed(&entry, &mut claimed, requester);
                let deadline = Instant::now() + BUDGET_WAIT;
                while self.read_ahead.in_flight.load(Ordering::Relaxed) >= budget && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_micros(200));
                }
                if self.read_ahead.in_flight.load(Ordering::Relaxed) >= budget {
                    break;
                }
            }
            // Counted before the frame is taken: while it is being found (a victim Owned,
            // or pinned while written) a foreground fetch that finds no frame knows to wait.
            self.read_ahead.in_flight.fetch_add(1, Ordering::AcqRel);
            match self.map_loading(&entry, no, true) {
                Ok(Some(i)) => claimed.push((no, i)),
                Ok(None) => {
                    // Cached meanwhile.
                    self.read_ahead.in_flight.fetch_sub(1, Ordering::AcqRel);
                }
                Err(_) => {
                    // No frame to spare, or the file is gone.
                    self.read_ahead.in_flight.fetch_sub(1, Ordering::AcqRel);
                    break;
                }
            }
        }
        self.load_claimed(&entry, &mut claimed, requester);
    }

    /// Reads the claimed frames (consecutive pages, each mapped Loading by this thread),
    /// taking any page the extension holds from there, and ends their loads.
    fn load_claimed(&self, entry: &FileEntry, claimed: &mut Vec<(PageNo, u32)>, requester: &AtomicU64) {
        if claimed.is_empty() {
            return;
        }
        debug_assert!(claimed.windows(2).all(|w| w[0].0 + 1 == w[1].0), "a run is consecutive pages");
        let n = claimed.len();
        let ext = self.extension();
        let ok = std::panic::catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: each frame is exclusively latched by this thread (Loading), and the
            // frames are distinct, so these are the only references to their bytes.
            let mut bufs: Vec<&mut [u8]> = claimed
                .iter()
                .map(|&(_, i)| unsafe { std::slice::from_raw_parts_mut(self.frame_ptr(i), PAGE_SIZE) })
                .collect();
            let mut ok = vec![false; n];
            let mut j = 0;
            while j < n {
                // Pages j..e come from the store; page e (if any) came from the extension.
                let mut e = j;
                while e < n && !ext.as_ref().is_some_and(|x| x.read(key(entry.id, claimed[e].0), bufs[e])) {
                    e += 1;
                }
                if e > j {
                    self.reads.fetch_add((e - j) as u64, Ordering::Relaxed);
                    if entry.store.read_pages(claimed[j].0, &mut bufs[j..e]).is_ok() {
                        for x in j..e {
                            ok[x] = page::verify(bufs[x], claimed[x].0).is_ok();
                        }
                    }
                }
                if e < n {
                    ok[e] = true;
                }
                j = e + 1;
            }
            ok
        }))
        .unwrap_or_else(|_| vec![false; n]);
        for (&(no, i), ok) in claimed.iter().zip(ok) {
            let res = if ok { Ok(()) } else { Err(Error::Invalid("read-ahead could not read the page".into())) };
            if ok {
                // Counted before the page becomes Valid: a fetch waiting for it, once it
                // returns, finds the read in its thread's counters.
                requester.fetch_add(1, Ordering::Relaxed);
            }
            if self.finish_load(i, entry, no, res).is_ok() {
                self.read_ahead.pages.fetch_add(1, Ordering::Relaxed);
            }
            self.unpin(i);
            self.read_ahead.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.passing.released.fetch_add(1, Ordering::AcqRel);
        }
        claimed.clear();
    }
}
