//! The instance-wide buffer pool: frames carved from one reserved virtual-memory region,
//! a per-file radix page table read without locks on the hit path, GCLOCK eviction with
//! cold-first victim selection, write-back that obeys the WAL rule, and a background writer.
//! The protocol is described in `README.md` beside this crate; the comments here refer to
//! its sections.

mod extension;
mod frame;
mod prefault;
mod readahead;
mod region;
mod table;
#[cfg(test)]
mod tests;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::lock_api::RawRwLock as _;
use parking_lot::{Condvar, Mutex, RwLock};
use tessera_errors::{Error, Result};
use tessera_io::AlignedBuf;

use crate::page::{self, Lsn, PageNo, PAGE_SIZE};
use frame::{Frame, Kind, State, DIRTY, GEN_SHIFT, MAX_USAGE, NIL, NO_KEY, USAGE_SHIFT, WRITING};
pub use region::HugePages;
use region::Region;

pub use extension::{Extension, ExtensionStats};
use table::{key, key_file, key_page, shard_of, Key, Radix, RadixRef, Shard, SlotTable, SHARDS};

/// One file of pages that the pool caches; implemented by the database layer.
pub trait PageStore: Send + Sync {
    /// Reads page `no` into `buf` (PAGE_SIZE bytes, 4096-aligned).
    fn read_page(&self, no: PageNo, buf: &mut [u8]) -> Result<()>;
    /// Reads pages `first`, `first + 1`, … into `bufs` (one PAGE_SIZE buffer each, 4096-aligned):
    /// read-ahead's multi-page request. Stores that can read a run in one request should.
    fn read_pages(&self, first: PageNo, bufs: &mut [&mut [u8]]) -> Result<()> {
        for (no, buf) in (first..).zip(bufs.iter_mut()) {
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

/// A snapshot of the pool's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Fetches that found the page cached.
    pub hits: u64,
    /// Fetches that had to load (or, for `fetch_new`, zero-fill) a frame.
    pub misses: u64,
    /// Pages read from stores.
    pub reads: u64,
    /// Pages written to stores.
    pub writes: u64,
    /// Pages evicted to make room (not counting discards).
    pub evictions: u64,
    /// Frames currently dirty.
    pub dirty_pages: u64,
    /// Pages currently in the page table.
    pub resident_pages: u64,
    /// The current limit, in frames.
    pub capacity_pages: u64,
    /// Pages read by read-ahead (also counted in `reads`).
    pub read_ahead_pages: u64,
}

/// Hard cap on the reservation: frame indexes are `u32`, one value is the list terminator.
const MAX_FRAMES: usize = (u32::MAX - 1) as usize;
/// How long `set_max_bytes` waits for pinned frames beyond the new limit.
const SHRINK_PATIENCE: Duration = if cfg!(test) { Duration::from_millis(50) } else { Duration::from_secs(2) };
/// How long a fetch that finds every frame pinned waits for read-ahead to let go of its.
const READ_AHEAD_PATIENCE: Duration = Duration::from_secs(2);
/// Background writer period when nobody kicks it.
const WRITER_PERIOD: Duration = Duration::from_millis(100);
/// Most pages the background writer writes per round.
const WRITER_BATCH: usize = 256;

/// Threads are spread over this many handle proxies and hit counters.
const STRIPES: usize = 32;
/// Slots in the first slot table; it doubles before it is half full.
const FIRST_SLOTS: usize = 64;

struct FileEntry {
    id: FileId,
    store: Arc<dyn PageStore>,
    /// The file's page table (README, "Page table").
    radix: RadixRef,
    /// Set by `discard` (with the entry's removal from the registry). A thread that sees it
    /// clear while holding a shard mutex may use `radix` for keys of that shard until it
    /// releases the mutex; once it is set, the radix may already serve another file.
    closed: AtomicBool,
}

struct Files {
    map: HashMap<u32, Arc<FileEntry>>,
    next: u32,
    /// Every slot table built so far; the last is current (`Inner::slots`). Replaced tables
    /// are kept because a lock-free reader may still be looking at one. Boxed: readers hold
    /// their addresses, which must not move when the `Vec` grows.
    #[allow(clippy::vec_box)]
    tables: Vec<Box<SlotTable>>,
    /// Every radix built so far, in use or spare. Kept, and boxed, for the same reasons.
    #[allow(clippy::vec_box)]
    radixes: Vec<Box<Radix>>,
    /// Radixes of discarded files, emptied, ready for the next `register`.
    spare: Vec<RadixRef>,
}

impl Files {
    fn table(&self) -> &SlotTable {
        self.tables.last().expect("the registry always has a slot table")
    }
}

struct FreeList {
    head: u32,
    len: usize,
}

#[derive(Default)]
struct WriterState {
    shutdown: bool,
    kicked: bool,
}

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
    prefault: prefault::Prefault,
}

/// How a page missing from the pool is brought in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Load {
    /// Read and verify it (error 824 when damaged).
    Read,
    /// A zero-filled frame: the page is being allocated.
    Zero,
    /// Read it, or a zero-filled frame when the disk copy is damaged.
    ReadOrZero,
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

/// A pinned page. The frame cannot be evicted while the handle lives; dropping it unpins.
pub struct PageHandle {
    pool: Arc<Proxy>,
    idx: u32,
    file: FileId,
    no: PageNo,
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

/// A pin taken by the pool itself (writers, checkpoints); unpins on drop, so a panicking
/// store callback cannot leak it.
struct Pin<'a> {
    pool: &'a Inner,
    idx: u32,
}

impl Drop for Pin<'_> {
    fn drop(&mut self) {
        self.pool.unpin(self.idx);
    }
}

/// A frame's shared latch, released on drop.
struct SharedLatch<'a>(&'a Frame);

impl<'a> SharedLatch<'a> {
    fn new(frame: &'a Frame) -> SharedLatch<'a> {
        frame.latch.lock_shared();
        SharedLatch(frame)
    }
}

impl Drop for SharedLatch<'_> {
    fn drop(&mut self) {
        // SAFETY: taken in `SharedLatch::new`.
        unsafe { self.0.latch.unlock_shared() }
    }
}

/// What `try_evict` achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Evict {
    /// The frame is now `Owned` by the caller; `wrote` if a dirty page was written first.
    Done { wrote: bool },
    /// Not evictable right now.
    Skipped,
}

#[cfg(test)]
thread_local! {
    /// Tests set this to make the hit path yield between its steps, so that evictions
    /// land inside its race windows.
    static WIDEN_RACES: Cell<bool> = const { Cell::new(false) };
}

#[cfg(test)]
thread_local! {
    /// A test's code to run inside `try_evict`, between checking a clean, unpinned victim
    /// and claiming it (once).
    static BEFORE_CLAIM: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
}

/// Hit-path pins dropped because the frame turned out to hold another page.
#[cfg(test)]
static STALE_PINS: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
fn race_window() {
    if WIDEN_RACES.with(Cell::get) {
        std::thread::yield_now();
    }
}

fn not_registered(file: FileId) -> Error {
    Error::Invalid(format!("buffer pool: file {} is not registered", file.0))
}

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

    /// Installs a buffer pool extension, or removes it (`None`; its file is deleted).
    /// Returns the previous one.
    pub fn set_extension(&self, ext: Option<Extension>) -> Option<Arc<Extension>> {
        let next = ext.map(Arc::new);
        let mut slot = self.inner.extension.write();
        self.inner.has_extension.store(next.is_some(), Ordering::Release);
        std::mem::replace(&mut *slot, next)
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

    /// The registered file, through the registry lock (not for the hit path). An entry found
    /// while holding a shard mutex stays open until that mutex is released (see `discard`).
    fn entry(&self, file: FileId) -> Option<Arc<FileEntry>> {
        self.files.read().map.get(&file.0).cloned()
    }

    fn slot_table(&self) -> &SlotTable {
        // SAFETY: `slots` always points at a table owned by `files`, which keeps every table
        // it ever built until `self` drops.
        unsafe { &*self.slots.load(Ordering::Acquire) }
    }

    fn register(&self, store: Arc<dyn PageStore>) -> FileId {
        let mut guard = self.files.write();
        let files = &mut *guard;
        if (files.map.len() + 1) * 2 > files.table().len() {
            // Double the slot table. Every registered id keeps a slot of its own: two ids
            // that differ in their low bits still differ with one more bit.
            let table = Box::new(SlotTable::new(files.table().len() * 2));
            for (&id, e) in files.map.iter() {
                table.set(id, e.radix);
            }
            self.slots.store(&*table as *const SlotTable as *mut SlotTable, Ordering::Release);
            files.tables.push(table);
        }
        loop {
            let id = files.next;
            files.next = if id >= u32::MAX - 1 { 1 } else { id + 1 };
            // A registered id holds its slot, so a free slot also means the id is not in use.
            if !files.table().is_free(id) {
                continue;
            }
            debug_assert!(!files.map.contains_key(&id));
            let radix = match files.spare.pop() {
                Some(r) => r,
                None => {
                    let b = Box::new(Radix::new());
                    // SAFETY: the box is kept in `files.radixes` until the pool drops.
                    let r = unsafe { RadixRef::new(&b) };
                    files.radixes.push(b);
                    r
                }
            };
            debug_assert!(radix.get().resident().is_empty(), "a spare radix must be empty");
            files.table().set(id, radix);
            let entry = FileEntry { id: FileId(id), store, radix, closed: AtomicBool::new(false) };
            files.map.insert(id, Arc::new(entry));
            return FileId(id);
        }
    }

    // ----- pins -------------------------------------------------------------------------

    /// Pins a mapped frame and bumps its usage count. Caller holds the frame's shard mutex.
    fn pin_touch(&self, i: u32) -> State {
        let f = self.frame(i);
        let prev = f.state.fetch_update(Ordering::Acquire, Ordering::Relaxed, |x| {
            let s = State(x);
            debug_assert!(matches!(s.kind(), Kind::Valid | Kind::Loading), "pinning a {:?} frame", s.kind());
            let bump = if s.kind() == Kind::Valid && s.usage() < MAX_USAGE { 1 << USAGE_SHIFT } else { 0 };
            Some(x + 1 + bump)
        });
        State(prev.unwrap_or_else(|x| x))
    }

    /// Pins a mapped frame without touching its usage count. Caller holds the shard mutex.
    fn pin_quiet(&self, i: u32) -> State {
        let prev = State(self.frame(i).state.fetch_add(1, Ordering::Acquire));
        debug_assert!(prev.pins() < frame::PIN_MASK, "pin count overflow");
        prev
    }

    /// Pins the frame holding page `no` of `entry`, whatever it is doing; `None` if not
    /// cached or if the file has been discarded.
    fn pin_page(&self, entry: &FileEntry, no: PageNo) -> Option<Pin<'_>> {
        let _g = self.shard(key(entry.id, no)).0.lock();
        if entry.closed.load(Ordering::Acquire) {
            return None;
        }
        let i = entry.radix.get().get(no)?;
        self.pin_quiet(i);
        Some(Pin { pool: self, idx: i })
    }

    /// Pins frame `i` if it still holds `k` and is valid; also returns its file.
    fn pin_if_mapped(&self, i: u32, k: Key) -> Option<(Pin<'_>, Arc<FileEntry>)> {
        let _g = self.shard(k).0.lock();
        let entry = self.entry(FileId(key_file(k)))?;
        if entry.radix.get().get(key_page(k)) != Some(i)
            || State(self.frame(i).state.load(Ordering::Relaxed)).kind() != Kind::Valid
        {
            return None;
        }
        self.pin_quiet(i);
        Some((Pin { pool: self, idx: i }, entry))
    }

    /// The hit path: translate without a lock, pin, then validate (README, "Page table").
    /// `None` sends the caller to the locked path: not resident, not registered, loading,
    /// or the translation went stale under us.
    #[inline]
    fn pin_fast(&self, file: FileId, no: PageNo, k: Key) -> Option<u32> {
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
            debug_assert!(s.pins() < frame::PIN_MASK, "pin count overflow");
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

    fn unpin(&self, i: u32) {
        let prev = State(self.frame(i).state.fetch_sub(1, Ordering::Release));
        assert!(prev.pins() > 0, "buffer pool: frame {i} unpinned more often than pinned");
        if prev.pins() == 1 && prev.kind() == Kind::Orphan && self.claim_orphan(i) {
            self.free_frame(i);
        }
    }

    /// Takes ownership of an unpinned orphan.
    fn claim_orphan(&self, i: u32) -> bool {
        let f = self.frame(i);
        let s = State(f.state.load(Ordering::Acquire));
        s.kind() == Kind::Orphan
            && s.pins() == 0
            && f.state
                .compare_exchange(s.0, State::new(Kind::Owned, 0, 0).0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    // ----- frame allocation ---------------------------------------------------------------

    /// Returns an `Owned` frame: from the free list, from never-used frames, or by eviction.
    ///
    /// When every frame is pinned and some pins are read-ahead's (which holds them only
    /// while its reads are in flight, and waits for nobody), a foreground caller waits
    /// for those to end rather than fail with 802; read-ahead itself (`for_read_ahead`)
    /// never waits.
    fn allocate_frame(&self, for_read_ahead: bool) -> Result<u32> {
        let mut deadline = None;
        let i = loop {
            match self.pop_free().map_or_else(|| self.find_victim(), Ok) {
                Ok(i) => break i,
                Err(Error::PoolExhausted)
                    if !for_read_ahead
                        && self.read_ahead.in_flight.load(Ordering::Acquire) > 0
                        && Instant::now() < *deadline.get_or_insert_with(|| Instant::now() + READ_AHEAD_PATIENCE) =>
                {
                    std::thread::sleep(Duration::from_micros(100));
                }
                Err(e) => return Err(e),
            }
        };
        let f = self.frame(i);
        debug_assert_eq!(State(f.state.load(Ordering::Relaxed)).kind(), Kind::Owned);
        debug_assert_eq!(f.dirty.load(Ordering::Relaxed) & (DIRTY | WRITING), 0, "reusing a dirty frame");
        Ok(i)
    }

    fn pop_free(&self) -> Option<u32> {
        let mut fl = self.free.lock();
        let limit = self.limit.load(Ordering::Relaxed);
        if fl.head != NIL {
            let i = fl.head;
            let f = self.frame(i);
            fl.head = f.next_free.load(Ordering::Relaxed);
            fl.len -= 1;
            debug_assert!((i as usize) < limit, "free list holds frame {i} beyond the limit {limit}");
            let old = f.state.swap(State::new(Kind::Owned, 0, 0).0, Ordering::Acquire);
            debug_assert_eq!(State(old).kind(), Kind::Free);
            return Some(i);
        }
        let h = self.hwm.load(Ordering::Relaxed);
        if h >= limit {
            return None;
        }
        if h >= self.initialized.load(Ordering::Relaxed) {
            debug_assert_eq!(h, self.initialized.load(Ordering::Relaxed));
            // SAFETY: descriptor h lies inside the reserved descriptor region and no one
            // can reference it yet (it is beyond `initialized` and `hwm`).
            unsafe { std::ptr::write((self.descs.ptr() as *mut Frame).add(h), Frame::new()) };
            self.initialized.store(h + 1, Ordering::Release);
        }
        self.hwm.store(h + 1, Ordering::Release);
        self.prefault.note_hwm(h + 1);
        let f = self.frame(h as u32);
        let old = f.state.swap(State::new(Kind::Owned, 0, 0).0, Ordering::Acquire);
        debug_assert_eq!(State(old).kind(), Kind::Free);
        Some(h as u32)
    }

    /// Returns an `Owned` frame to the free list, or retires it (memory given back) if it lies
    /// beyond the limit. Any dirty state is dropped.
    fn free_frame(&self, i: u32) {
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
    fn scrub(&self, i: u32) {
        let f = self.frame(i);
        debug_assert_eq!(State(f.state.load(Ordering::Relaxed)).kind(), Kind::Owned);
        let d = f.dirty.fetch_and(!(DIRTY | WRITING), Ordering::AcqRel);
        debug_assert_eq!(d & WRITING, 0, "scrubbing a frame that is being written");
        if d & DIRTY != 0 {
            self.dirty_pages.fetch_sub(1, Ordering::Relaxed);
        }
        f.key.store(NO_KEY, Ordering::Relaxed);
    }

    /// The clock: GCLOCK with cold-first selection (README, "Eviction").
    fn find_victim(&self) -> Result<u32> {
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
    fn try_evict(&self, i: u32, force: bool) -> Result<Evict> {
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
                drop(g);
                self.resident.fetch_sub(1, Ordering::Relaxed);
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
            self.pin_quiet(i);
            let pin = Pin { pool: self, idx: i };
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

    /// Writes pinned frame `i` if it is dirty: copy under the shared latch, then (latch
    /// released) flush the log to the copy's LSN, seal the copy and write it. Returns
    /// `Ok(true)` if the page was clean or has been written, `Ok(false)` if it could not be
    /// written now (latch busy and `!block`, or another write of it in progress).
    fn write_frame(&self, i: u32, entry: &FileEntry, block: bool) -> Result<bool> {
        let f = self.frame(i);
        debug_assert!(State(f.state.load(Ordering::Relaxed)).pins() > 0, "writing an unpinned frame");
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

    // ----- fetch ----------------------------------------------------------------------------

    /// Pins page `no` of `file`, loading it on a miss. Returns the frame and whether it was
    /// a hit.
    #[inline]
    fn fetch(&self, file: FileId, no: PageNo, new: Load) -> Result<(u32, bool)> {
        let k = key(file, no);
        match self.pin_fast(file, no, k) {
            Some(i) => Ok((i, true)),
            None => self.fetch_locked(file, no, k, new),
        }
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
                    f.latch.lock_shared();
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
                        page: no,
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
    /// `Ok(None)`: the page was mapped by someone else meanwhile (the frame went back).
    /// A miss is counted unless this is `read_ahead`.
    fn map_loading(&self, entry: &FileEntry, no: PageNo, read_ahead: bool) -> Result<Option<u32>> {
        let k = key(entry.id, no);
        let i = self.allocate_frame(read_ahead)?;
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
        drop(g);
        self.resident.fetch_add(1, Ordering::Relaxed);
        Ok(Some(i))
    }

    /// Ends the load of frame `i` begun by `map_loading`: Valid if `res` is Ok (and the
    /// file was not discarded meanwhile), otherwise out of the page table. Releases the
    /// exclusive latch; the caller still holds its pin.
    fn finish_load(&self, i: u32, entry: &FileEntry, no: PageNo, res: Result<()>) -> Result<()> {
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
            }
        }
        let _ = f.state.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |x| Some(State(x).with_kind(Kind::Orphan).0));
        drop(g);
    }

    // ----- flushing and files --------------------------------------------------------------

    fn flush_file(&self, file: FileId) -> Result<()> {
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

    fn discard(&self, file: FileId) {
        if let Some(ext) = self.extension() {
            ext.invalidate_file(file.0);
        }
        let entry = {
            let files = &mut *self.files.write();
            let Some(entry) = files.map.remove(&file.0) else { return };
            entry.closed.store(true, Ordering::Release);
            files.table().clear(file.0);
            entry
        };
        // Pass every shard mutex once. Whoever saw the file open under a shard mutex (a
        // loader about to map a page, an evictor, a flush) is done with the radix after
        // this, and whoever takes a shard mutex later sees it closed: from here on only we
        // change the radix, and entries only go from mapped to empty.
        for s in self.shards.iter() {
            drop(s.0.lock());
        }
        let radix = entry.radix.get();
        for (no, _) in radix.resident() {
            let k = key(file, no);
            let g = self.shard(k).0.lock();
            let Some(i) = radix.entry(no).and_then(|e| e.swap(0, Ordering::AcqRel).checked_sub(1)) else { continue };
            let f = self.frame(i);
            let prev = f
                .state
                .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |x| {
                    let s = State(x);
                    Some(if s.pins() == 0 { State::new(Kind::Owned, 0, 0) } else { s.with_kind(Kind::Orphan) }.0)
                })
                .unwrap_or_else(|x| x);
            drop(g);
            self.resident.fetch_sub(1, Ordering::Relaxed);
            if State(prev).pins() == 0 {
                debug_assert_eq!(State(prev).kind(), Kind::Valid);
                self.free_frame(i);
            }
        }
        // Empty now, and no one but lock-free readers (who validate what they find) can still
        // be looking at it: ready for the next file.
        debug_assert!(radix.resident().is_empty());
        self.files.write().spare.push(entry.radix);
    }

    /// The counters, except `hits` (counted by the `Proxy`s).
    fn stats(&self) -> PoolStats {
        let misses = self.shards.iter().map(|s| s.0.lock().misses).sum();
        PoolStats {
            hits: 0,
            misses,
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            dirty_pages: self.dirty_pages.load(Ordering::Relaxed),
            resident_pages: self.resident.load(Ordering::Relaxed),
            capacity_pages: self.limit.load(Ordering::Relaxed) as u64,
            read_ahead_pages: self.read_ahead.pages.load(Ordering::Relaxed),
        }
    }

    // ----- resizing --------------------------------------------------------------------------

    fn set_max_bytes(&self, bytes: usize) -> Result<()> {
        let _serial = self.resize.lock();
        let new = bytes / PAGE_SIZE;
        if new == 0 || new > self.reserve {
            return Err(Error::Invalid(format!(
                "buffer pool size {bytes} must be between {PAGE_SIZE} and the {} bytes reserved at startup",
                self.reserve * PAGE_SIZE
            )));
        }
        let old = self.limit.load(Ordering::Relaxed);
        if new >= old {
            let mut fl = self.free.lock();
            // Frames retired by an earlier shrink below the high-water mark become usable again.
            let hwm = self.hwm.load(Ordering::Relaxed);
            for i in old..new.min(hwm) {
                let f = self.frame(i as u32);
                if State(f.state.load(Ordering::Acquire)).kind() == Kind::Free {
                    f.next_free.store(fl.head, Ordering::Relaxed);
                    fl.head = i as u32;
                    fl.len += 1;
                }
            }
            self.limit.store(new, Ordering::Release);
            return Ok(());
        }
        // Shrink: stop handing out frames >= new, drop them from the free list.
        {
            let mut fl = self.free.lock();
            self.limit.store(new, Ordering::Release);
            let (mut head, mut len) = (NIL, 0);
            let mut cur = fl.head;
            while cur != NIL {
                let f = self.frame(cur);
                let next = f.next_free.load(Ordering::Relaxed);
                if (cur as usize) < new {
                    f.next_free.store(head, Ordering::Relaxed);
                    head = cur;
                    len += 1;
                }
                cur = next;
            }
            fl.head = head;
            fl.len = len;
        }
        let old_hwm = self.hwm.load(Ordering::Acquire);
        let deadline = Instant::now() + SHRINK_PATIENCE;
        let mut first_err = None;
        loop {
            let hwm = self.hwm.load(Ordering::Acquire);
            let mut remaining = 0;
            for i in new..hwm {
                let i = i as u32;
                let s = State(self.frame(i).state.load(Ordering::Acquire));
                match s.kind() {
                    Kind::Free => {}
                    Kind::Valid if s.pins() == 0 => match self.try_evict(i, true) {
                        Ok(Evict::Done { .. }) => self.free_frame(i),
                        Ok(Evict::Skipped) => remaining += 1,
                        Err(e) => {
                            remaining += 1;
                            first_err.get_or_insert(e);
                        }
                    },
                    Kind::Orphan if s.pins() == 0 && self.claim_orphan(i) => self.free_frame(i),
                    _ => remaining += 1,
                }
            }
            if remaining == 0 || first_err.is_some() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Lower the high-water mark over the trailing free frames, then give their memory
        // (and that of every other free frame beyond the limit) back to the OS. Frames that
        // are free and beyond the limit are touched by no one: only a grow, which holds
        // `resize` like us, can hand them out again.
        {
            let _fl = self.free.lock();
            let mut top = self.hwm.load(Ordering::Relaxed);
            while top > new && State(self.frame(top as u32 - 1).state.load(Ordering::Acquire)).kind() == Kind::Free {
                top -= 1;
            }
            self.hwm.store(top, Ordering::Release);
        }
        let mut run_start = None;
        for i in new..=old_hwm {
            let free = i < old_hwm && State(self.frame(i as u32).state.load(Ordering::Acquire)).kind() == Kind::Free;
            match (free, run_start) {
                (true, None) => run_start = Some(i),
                (false, Some(s)) => {
                    // SAFETY: see above; these frames are free and beyond the limit.
                    unsafe { self.frames.discard(s * PAGE_SIZE, (i - s) * PAGE_SIZE) };
                    run_start = None;
                }
                _ => {}
            }
        }
        // Frames the prefault thread committed above the old high-water mark were never
        // handed out: give back those beyond the new limit too.
        let populated = self.prefault.committed.load(Ordering::Acquire);
        let above = old_hwm.max(new);
        if populated > above {
            // SAFETY: beyond the high-water mark and the limit: nobody uses these frames,
            // and only the prefault thread, which needs `resize` (held here), touches them.
            unsafe { self.frames.discard(above * PAGE_SIZE, (populated - above) * PAGE_SIZE) };
        }
        self.prefault.clamp(new);
        first_err.map_or(Ok(()), Err)
    }

    // ----- background writer ------------------------------------------------------------------

    fn kick_writer(&self) {
        if self.writer_enabled && !self.writer_kick.swap(true, Ordering::AcqRel) {
            self.writer.lock().kicked = true;
            self.writer_cv.notify_one();
        }
    }

    fn writer_loop(&self) {
        loop {
            {
                let mut g = self.writer.lock();
                if !g.kicked && !g.shutdown {
                    self.writer_cv.wait_for(&mut g, WRITER_PERIOD);
                }
                if g.shutdown {
                    return;
                }
                g.kicked = false;
            }
            self.writer_kick.store(false, Ordering::Release);
            self.writer_round();
        }
    }

    fn extension(&self) -> Option<Arc<Extension>> {
        if !self.has_extension.load(Ordering::Acquire) {
            return None;
        }
        self.extension.read().clone()
    }

    fn resident_pages(&self) -> Vec<(FileId, PageNo, bool)> {
        let n = self.hwm.load(Ordering::Acquire);
        let mut out = Vec::new();
        for i in 0..n as u32 {
            let f = self.frame(i);
            let k = f.key.load(Ordering::Acquire);
            if k != NO_KEY && State(f.state.load(Ordering::Acquire)).kind() == Kind::Valid {
                out.push((FileId(key_file(k)), key_page(k), f.dirty.load(Ordering::Acquire) & DIRTY != 0));
            }
        }
        out
    }

    fn drop_clean_pages(&self) -> usize {
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

    /// One round: release frames stranded beyond the limit, then, if free frames are
    /// scarce, write the dirty, unpinned, cold frames in the window ahead of the clock hand.
    fn writer_round(&self) {
        let limit = self.limit.load(Ordering::Relaxed);
        let n = self.hwm.load(Ordering::Acquire);
        for i in limit..n {
            if self.writer_stop.load(Ordering::Relaxed) {
                return;
            }
            let s = State(self.frame(i as u32).state.load(Ordering::Relaxed));
            if s.kind() == Kind::Valid && s.pins() == 0 {
                if let Ok(Evict::Done { .. }) = self.try_evict(i as u32, true) {
                    self.free_frame(i as u32);
                }
            }
        }
        let free = self.free.lock().len + limit.saturating_sub(self.hwm.load(Ordering::Relaxed));
        if n == 0 || free >= (limit / 8).max(8).min(limit) {
            return;
        }
        let window = (n / 8).clamp(64, 4096).min(n);
        let start = self.hand.load(Ordering::Relaxed) % n;
        let mut written = 0;
        for step in 0..window {
            if self.writer_stop.load(Ordering::Relaxed) || written >= WRITER_BATCH {
                return;
            }
            let i = ((start + step) % n) as u32;
            let f = self.frame(i);
            let s = State(f.state.load(Ordering::Relaxed));
            if s.kind() != Kind::Valid || s.pins() != 0 || s.usage() != 0 {
                continue;
            }
            if f.dirty.load(Ordering::Relaxed) & (DIRTY | WRITING) != DIRTY {
                continue;
            }
            let k = f.key.load(Ordering::Acquire);
            let Some((_pin, e)) = (if k == NO_KEY { None } else { self.pin_if_mapped(i, k) }) else { continue };
            // Errors are left to foreground eviction and checkpoints, which report them.
            let r = self.write_frame(i, &e, false);
            if let Ok(true) = r {
                written += 1;
            }
        }
    }
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
