//! The instance-wide buffer pool: frames carved from one reserved virtual-memory region,
//! a per-file radix page table read without locks on the hit path, GCLOCK eviction with
//! cold-first victim selection, write-back that obeys the WAL rule, and a background writer.
//! The protocol is described in `README.md` beside this crate; the comments here refer to
//! its sections. This file holds `BufferPool`, its shared state and the public API; each
//! concern has a submodule below `pool/` (README, "Source files").

mod alloc;
mod bgwriter;
mod counters;
mod evict;
mod extension;
mod fetch;
mod flush;
mod frame;
mod handle;
mod invariants;
mod pin;
mod prefault;
mod quota;
mod readahead;
mod region;
mod registry;
mod resize;
mod stats;
mod table;
#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};
use tessera_errors::{Error, Result};

use crate::page::{Lsn, PageNo, PAGE_SIZE};
use alloc::FreeList;
use bgwriter::WriterState;
use fetch::Load;
use frame::{Frame, State, NIL};
use pin::{Pin, SharedLatch};
pub use region::HugePages;
use region::Region;
use registry::Files;

pub use counters::{io_counters, IoCounters};
pub use extension::{Extension, ExtensionStats};
pub use handle::{PageHandle, PageRead, PageReadGuard, PageWrite, PageWriteGuard};
pub use quota::FileUsage;
pub use stats::PoolStats;
use table::{shard_of, Key, Shard, SlotTable, SHARDS};

/// One file of pages that the pool caches; implemented by the database layer.
pub trait PageStore: Send + Sync {
    /// Reads page `no` into `buf` (PAGE_SIZE bytes, 4096-aligned).
    fn read_page(&self, no: PageNo, buf: &mut [u8]) -> Result<()>;
    /// Reads pages `first`, `first + 1`, … into `bufs` (one PAGE_SIZE buffer each, 4096-aligned):
    /// read-ahead's multi-page request. Stores that can read a run in one request should.
    fn read_pages(&self, first: PageNo, bufs: &mut [&mut [u8]]) -> Result<()> {
        for (no, buf) in first.onward().zip(bufs.iter_mut()) {
            self.read_page(no, buf)?;
        }
        Ok(())
    }
    /// Writes page `no` from `buf` (already sealed with its checksum by the pool).
    fn write_page(&self, no: PageNo, buf: &[u8]) -> Result<()>;
    /// WAL rule: makes the log durable up to and including `lsn`. Called before a dirty page
    /// whose header LSN is `lsn` is written.
    fn flush_log_to(&self, lsn: Lsn) -> Result<()>;
    /// fdatasync of the data file (called at the end of flush_file).
    fn sync(&self) -> Result<()>;
    /// Names used in error messages.
    fn database_name(&self) -> &str;
    fn path(&self) -> &Path;
}

/// A file registered with the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId(pub u32);

/// Pool configuration.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Maximum memory for page frames. This much address space is reserved at `new()`;
    /// `set_max_bytes` can later move the limit anywhere up to it.
    pub max_bytes: usize,
    /// Run the background writer thread.
    pub background_writer: bool,
    /// How the frames are backed: 4 KiB pages, transparent or explicit huge pages.
    pub huge_pages: HugePages,
}

impl Default for PoolConfig {
    /// A quarter of physical memory (1 GiB if that cannot be determined), writer on.
    fn default() -> Self {
        // SAFETY: sysconf has no preconditions.
        let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        let ram =
            if pages > 0 && size > 0 { (pages as u128 * size as u128).min(usize::MAX as u128) as usize } else { 0 };
        let max_bytes = if ram == 0 { 1 << 30 } else { (ram / 4).max(16 << 20) };
        PoolConfig { max_bytes, background_writer: true, huge_pages: HugePages::default() }
    }
}

/// Hard cap on the reservation: frame indexes are `u32`, one value is the list terminator.
const MAX_FRAMES: usize = (u32::MAX - 1) as usize;

/// Threads are spread over this many handle proxies and hit counters.
const STRIPES: usize = 32;
/// Slots in the first slot table; it doubles before it is half full.
const FIRST_SLOTS: usize = 64;

/// The shared state. `BufferPool` owns the background writer; every `PageHandle` holds (through
/// a `Proxy`) an `Arc<Inner>`, so the memory stays mapped for as long as any pin exists.
struct Inner {
    /// Page frames, `reserve * PAGE_SIZE` bytes.
    frames: Region,
    /// Frame descriptors, `reserve * 64` bytes; `[0, initialized)` are constructed.
    descs: Region,
    /// Frames reserved at `new()`; `limit` never exceeds it.
    reserve: usize,
    /// Current maximum number of frames in use (changes only under the free-list mutex).
    limit: AtomicUsize,
    /// Frames `[0, hwm)` may hold pages; `[hwm, reserve)` are free and not on the free list.
    hwm: AtomicUsize,
    /// Descriptors `[0, initialized)` have been written; never decreases.
    initialized: AtomicUsize,
    free: Mutex<FreeList>,
    hand: AtomicUsize,
    shards: Box<[Shard]>,
    files: RwLock<Files>,
    /// The current slot table (owned by `files`): the lock-free `FileId -> radix` lookup.
    slots: AtomicPtr<SlotTable>,
    resize: Mutex<()>,
    reads: AtomicU64,
    writes: AtomicU64,
    evictions: AtomicU64,
    dirty_pages: AtomicU64,
    /// Pages in the page table; changed under the shard mutex of the translation it
    /// counts, so a holder of every shard mutex sees it agree with the radixes.
    resident: AtomicU64,
    writer_enabled: bool,
    writer: Mutex<WriterState>,
    writer_cv: Condvar,
    writer_kick: AtomicBool,
    writer_stop: AtomicBool,
    /// The buffer pool extension, when one is configured; `has_extension` mirrors it so
    /// the dirtying path pays one atomic load when there is none.
    extension: RwLock<Option<Arc<Extension>>>,
    has_extension: AtomicBool,
    read_ahead: readahead::ReadAhead,
    /// Frames held for a moment by write-outs, and the count of those let go.
    passing: pin::Passing,
    prefault: prefault::Prefault,
}

/// The buffer pool. Create one per instance with [`BufferPool::new`].
pub struct BufferPool {
    inner: Arc<Inner>,
    /// What handles hold; one per thread stripe.
    proxies: Box<[Arc<Proxy>]>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

/// What a `PageHandle` holds to keep the shared state alive. Handles taken by threads of
/// different stripes clone different proxies, so that taking and dropping pins on several
/// cores does not bounce one reference count between them. Also counts its stripe's hits.
#[repr(align(128))]
struct Proxy {
    inner: Arc<Inner>,
    hits: AtomicU64,
}

impl Proxy {
    /// Counts a hit with a plain load and store rather than a locked add: a thread keeps
    /// to its stripe, so the count is exact unless two threads share one (more threads
    /// than stripes), where an increment may be lost; the counter only feeds statistics.
    #[inline]
    fn count_hit(&self) {
        self.hits.store(self.hits.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
}

thread_local! {
    /// This thread's stripe, assigned round-robin on first use.
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    STRIPE.with(|s| {
        if s.get() == usize::MAX {
            s.set(NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES);
        }
        s.get()
    })
}

impl BufferPool {
    /// Reserves the address space for `cfg.max_bytes` of frames (nothing is committed until
    /// touched) and starts the background writer if asked.
    pub fn new(cfg: PoolConfig) -> Result<Arc<BufferPool>> {
        let reserve = cfg.max_bytes / PAGE_SIZE;
        if reserve == 0 {
            return Err(Error::Invalid(format!(
                "buffer pool size {} is smaller than one {PAGE_SIZE}-byte page",
                cfg.max_bytes
            )));
        }
        if reserve > MAX_FRAMES {
            return Err(Error::Invalid(format!("buffer pool size {} is too large", cfg.max_bytes)));
        }
        let frames = Region::reserve(reserve * PAGE_SIZE, "frames", cfg.huge_pages)?;
        let descs = Region::reserve(reserve * std::mem::size_of::<Frame>(), "descriptors", HugePages::Transparent)?;
        let table = Box::new(SlotTable::new(FIRST_SLOTS));
        let slots = AtomicPtr::new(&*table as *const SlotTable as *mut SlotTable);
        let inner = Arc::new(Inner {
            frames,
            descs,
            reserve,
            limit: AtomicUsize::new(reserve),
            hwm: AtomicUsize::new(0),
            initialized: AtomicUsize::new(0),
            free: Mutex::new(FreeList { head: NIL, len: 0 }),
            hand: AtomicUsize::new(0),
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            files: RwLock::new(Files {
                map: HashMap::new(),
                next: 1,
                tables: vec![table],
                radixes: Vec::new(),
                spare: Vec::new(),
            }),
            slots,
            resize: Mutex::new(()),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            dirty_pages: AtomicU64::new(0),
            resident: AtomicU64::new(0),
            writer_enabled: cfg.background_writer,
            writer: Mutex::new(WriterState::default()),
            writer_cv: Condvar::new(),
            writer_kick: AtomicBool::new(false),
            writer_stop: AtomicBool::new(false),
            extension: RwLock::new(None),
            has_extension: AtomicBool::new(false),
            read_ahead: readahead::ReadAhead::default(),
            passing: pin::Passing::default(),
            prefault: prefault::Prefault::default(),
        });
        let writer = if cfg.background_writer {
            let shared = Arc::clone(&inner);
            let h = std::thread::Builder::new()
                .name("tessera-bgwriter".into())
                .spawn(move || shared.writer_loop())
                .map_err(|e| Error::Invalid(format!("cannot start the buffer pool writer thread: {e}")))?;
            Some(h)
        } else {
            None
        };
        let shared = Arc::clone(&inner);
        let prefault = std::thread::Builder::new()
            .name("tessera-prefault".into())
            .spawn(move || shared.prefault_loop())
            .map_err(|e| Error::Invalid(format!("cannot start the buffer pool prefault thread: {e}")))?;
        inner.prefault.set_thread(prefault);
        let proxies =
            (0..STRIPES).map(|_| Arc::new(Proxy { inner: Arc::clone(&inner), hits: AtomicU64::new(0) })).collect();
        Ok(Arc::new(BufferPool { inner, proxies, writer: Mutex::new(writer) }))
    }

    /// Registers a file; its pages can then be fetched with the returned id.
    pub fn register(&self, store: Arc<dyn PageStore>) -> FileId {
        self.inner.register(store)
    }

    /// Writes the file's dirty pages, then forgets every frame of it and the store.
    /// On a write error the file stays registered.
    pub fn unregister(&self, file: FileId) -> Result<()> {
        self.flush_file(file)?;
        self.discard(file);
        Ok(())
    }

    /// Forgets every frame of the file without writing (database dropped). Frames still
    /// pinned are freed when their last pin is dropped.
    pub fn discard(&self, file: FileId) {
        self.inner.discard(file)
    }

    /// Holds `file` to at most `limit_pages` resident pages (`None`: no limit; README,
    /// "Per-file limits"). A lower limit than the file holds evicts its coldest unpinned
    /// pages at once, writing dirty ones first (a write error is returned).
    pub fn set_file_limit(&self, file: FileId, limit_pages: Option<usize>) -> Result<()> {
        self.inner.set_file_limit(file, limit_pages)
    }

    /// The file's resident pages, limit and the evictions its limit caused; `None` for a
    /// file that is not registered.
    pub fn file_usage(&self, file: FileId) -> Option<FileUsage> {
        self.inner.file_usage(file)
    }

    /// Pins page `no`, reading it from the store on a miss and verifying it with
    /// `page::verify`. A page that fails verification returns `Error::Corrupt` naming
    /// database, file and page; the frame is not kept.
    pub fn fetch(&self, file: FileId, no: PageNo) -> Result<PageHandle> {
        self.fetch_inner(file, no, Load::Read)
    }

    /// Pins page `no` that is being newly allocated: no disk read; if not cached, the
    /// frame is zero-filled. A cached page is returned as it is.
    pub fn fetch_new(&self, file: FileId, no: PageNo) -> Result<PageHandle> {
        self.fetch_inner(file, no, Load::Zero)
    }

    /// Pins page `no` for redo of a change that replaces its whole contents: read from
    /// disk when it can be (its LSN says whether the change is already there), a
    /// zero-filled frame when the disk copy fails its checksum (a write torn by a crash).
    pub fn fetch_for_overwrite(&self, file: FileId, no: PageNo) -> Result<PageHandle> {
        self.fetch_inner(file, no, Load::ReadOrZero)
    }

    /// Pins page `no` (reading it as [`BufferPool::fetch`] does), calls `f` with its
    /// contents under the shared latch, then releases latch and pin. The short way for a
    /// reader that looks at one page at a time: no handle to build or drop.
    #[inline]
    pub fn read_with<R>(&self, file: FileId, no: PageNo, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        self.read_pinned(file, no, true, f)
    }

    /// [`BufferPool::read_with`] without the page's shared latch: only the pin. For a
    /// reader under a lock that every writer of the page holds exclusively while it
    /// changes the page (a B+tree's tree latch), which makes the page latch redundant and
    /// saves two atomic operations per page on the lookup path.
    ///
    /// # Safety
    /// Nobody may modify the page's bytes while `f` runs: the caller holds a lock that
    /// excludes every writer of this page. (The pool itself only reads the bytes of a
    /// pinned Valid frame.)
    #[inline]
    pub unsafe fn read_with_unlatched<R>(&self, file: FileId, no: PageNo, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        self.read_pinned(file, no, false, f)
    }

    /// Pins page `no` and calls `f` with its bytes, under its shared latch if `latch`.
    /// Without it, the caller guarantees that nobody writes the page meanwhile.
    #[inline(always)]
    fn read_pinned<R>(&self, file: FileId, no: PageNo, latch: bool, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let (idx, hit) = self.inner.fetch(file, no, Load::Read)?;
        let _pin = Pin { pool: &self.inner, idx };
        if hit {
            self.proxies[stripe()].count_hit();
        }
        let _latch = latch.then(|| SharedLatch::new(self.inner.frame(idx)));
        // SAFETY: the frame is pinned, so it stays mapped to this page, and it is Valid (a
        // fetch returns only after the load finished). Nobody writes it until `f` returns:
        // we hold its shared latch, or (unlatched) the caller guarantees it.
        let page = unsafe { std::slice::from_raw_parts(self.inner.frame_ptr(idx), PAGE_SIZE) };
        Ok(f(page))
    }

    #[inline]
    fn fetch_inner(&self, file: FileId, no: PageNo, new: Load) -> Result<PageHandle> {
        let proxy = &self.proxies[stripe()];
        let (idx, hit) = self.inner.fetch(file, no, new)?;
        if hit {
            proxy.count_hit();
        }
        Ok(PageHandle { pool: Arc::clone(proxy), idx, file, no })
    }

    /// Asks for `pages` of `file` to be read in the background, in multi-page requests of up
    /// to 64 consecutive pages, because the caller expects to fetch them soon (a scan's next
    /// leaves). Pages already cached are skipped; nothing waits and nothing fails: a page
    /// that cannot be read is left for the fetch that wants it. Returns the pages queued.
    pub fn read_ahead(&self, file: FileId, pages: &[PageNo]) -> usize {
        self.inner.read_ahead.request(&self.inner, file, pages)
    }

    /// Checkpoint support: visits every cached page of `file`, takes its shared latch, and
    /// writes it if dirty (obeying the WAL rule); then `store.sync()`. The caller must hold
    /// no page latch (it blocks on exclusive latches of that file's pages).
    pub fn flush_file(&self, file: FileId) -> Result<()> {
        self.inner.flush_file(file)
    }

    /// `flush_file` for every registered file; tries them all and returns the first error.
    pub fn flush_all(&self) -> Result<()> {
        let ids: Vec<u32> = self.inner.files.read().map.keys().copied().collect();
        let mut first = None;
        for id in ids {
            match self.inner.flush_file(FileId(id)) {
                Ok(()) => {}
                // Unregistered meanwhile: nothing left to flush.
                Err(Error::Invalid(_)) if self.inner.entry(FileId(id)).is_none() => {}
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Checks the pool's structural invariants (`pool/invariants.rs`) and panics on the
    /// first that does not hold. It holds every shard's mutex while it runs, so it is for
    /// tests and checks, not for a serving pool's hot path. With `quiescent`, also that
    /// nothing is pinned, loading or in flight: only when no other thread uses the pool.
    pub fn check_invariants(&self, quiescent: bool) {
        self.inner.check_invariants(quiescent);
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats { hits: self.proxies.iter().map(|p| p.hits.load(Ordering::Relaxed)).sum(), ..self.inner.stats() }
    }

    /// Frames pinned right now (a scan of every frame handed out: for tests and
    /// diagnostics, not for hot paths).
    pub fn pinned_pages(&self) -> usize {
        let inner = &self.inner;
        (0..inner.hwm.load(Ordering::Acquire) as u32)
            .filter(|&i| State(inner.frame(i).state.load(Ordering::Relaxed)).pins() > 0)
            .count()
    }

    /// The current limit in bytes.
    pub fn max_bytes(&self) -> usize {
        self.inner.limit.load(Ordering::Relaxed) * PAGE_SIZE
    }

    /// The address space reserved at `new()`: the largest value `set_max_bytes` accepts.
    pub fn reserved_bytes(&self) -> usize {
        self.inner.reserve * PAGE_SIZE
    }

    /// Changes the maximum size live. Shrinking evicts the frames beyond the new size
    /// (writing dirty pages) and returns their memory to the OS with `MADV_DONTNEED`.
    /// Frames still pinned after a short wait stay until unpinned, and are then released by
    /// the clock or the background writer. Cannot exceed the reservation made at `new()`.
    pub fn set_max_bytes(&self, bytes: usize) -> Result<()> {
        self.inner.set_max_bytes(bytes)
    }

    /// Drops every clean, unpinned page from memory (`DBCC DROPCLEANBUFFERS`), so the next
    /// reads come from disk; dirty and pinned pages stay. Returns how many were dropped.
    /// With an extension the dropped pages go to it, as any evicted clean page does.
    pub fn drop_clean_pages(&self) -> usize {
        self.inner.drop_clean_pages()
    }

    /// Installs a buffer pool extension, or removes it (`None`). The previous one's file
    /// is deleted now, even while a reader still holds it; it is returned.
    pub fn set_extension(&self, ext: Option<Extension>) -> Option<Arc<Extension>> {
        let next = ext.map(Arc::new);
        let mut slot = self.inner.extension.write();
        self.inner.has_extension.store(next.is_some(), Ordering::Release);
        let previous = std::mem::replace(&mut *slot, next);
        if let Some(p) = &previous {
            p.delete_file();
        }
        previous
    }

    /// The extension in use, if any.
    pub fn extension(&self) -> Option<Arc<Extension>> {
        self.inner.extension()
    }

    /// The pages in RAM: (file, page, dirty). For `sys.dm_os_buffer_descriptors`.
    pub fn resident_pages(&self) -> Vec<(FileId, PageNo, bool)> {
        self.inner.resident_pages()
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        self.inner.read_ahead.shut_down();
        self.inner.prefault.shut_down();
        if let Some(h) = self.writer.get_mut().take() {
            self.inner.writer_stop.store(true, Ordering::Relaxed);
            self.inner.writer.lock().shutdown = true;
            self.inner.writer_cv.notify_all();
            let _ = h.join();
        }
        // The last Arc<Inner> (here, or in the last PageHandle) unmaps both regions.
    }
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool").field("max_bytes", &self.max_bytes()).field("stats", &self.stats()).finish()
    }
}

impl Inner {
    fn frame(&self, i: u32) -> &Frame {
        debug_assert!((i as usize) < self.initialized.load(Ordering::Relaxed), "frame {i} not initialised");
        // SAFETY: descriptors [0, initialized) were written by `pop_free` before the index
        // was published, are never dropped, and live as long as `self`.
        unsafe { &*(self.descs.ptr() as *const Frame).add(i as usize) }
    }

    fn frame_ptr(&self, i: u32) -> *mut u8 {
        debug_assert!((i as usize) < self.reserve);
        // SAFETY: i < reserve, so the offset stays inside the frames region.
        unsafe { self.frames.ptr().add(i as usize * PAGE_SIZE) }
    }

    fn shard(&self, k: Key) -> &Shard {
        &self.shards[shard_of(k)]
    }

    fn extension(&self) -> Option<Arc<Extension>> {
        if !self.has_extension.load(Ordering::Acquire) {
            return None;
        }
        self.extension.read().clone()
    }
}
