//! The instance-wide buffer pool: frames carved from one reserved virtual-memory region,
//! a sharded page table, GCLOCK eviction with cold-first victim selection, write-back that
//! obeys the WAL rule, and a background writer. The protocol is described in `README.md`
//! beside this crate; the comments here refer to its sections.

mod frame;
mod region;
mod table;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::lock_api::RawRwLock as _;
use parking_lot::{Condvar, Mutex, RwLock};
use tessera_io::{AlignedBuf, Error, Result};

use crate::page::{self, Lsn, PageNo, PAGE_SIZE};
use frame::{Frame, Kind, State, DIRTY, GEN_SHIFT, MAX_USAGE, NIL, NO_KEY, USAGE_SHIFT, WRITING};
use region::Region;
use table::{key, key_file, key_page, shard_of, Key, PageSet, Shard, SHARDS};

/// One file of pages that the pool caches; implemented by the database layer.
pub trait PageStore: Send + Sync {
    /// Reads page `no` into `buf` (PAGE_SIZE bytes, 4096-aligned).
    fn read_page(&self, no: PageNo, buf: &mut [u8]) -> Result<()>;
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
}

impl Default for PoolConfig {
    /// A quarter of physical memory (1 GiB if that cannot be determined), writer on.
    fn default() -> Self {
        // SAFETY: sysconf has no preconditions.
        let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        let ram =
            if pages > 0 && size > 0 { (pages as u128 * size as u128).min(usize::MAX as u128) as usize } else { 0 };
        let max_bytes = if ram == 0 { 1 << 30 } else { (ram / 4).max(16 << 20) };
        PoolConfig { max_bytes, background_writer: true }
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
}

/// Hard cap on the reservation: frame indexes are `u32`, one value is the list terminator.
const MAX_FRAMES: usize = (u32::MAX - 1) as usize;
/// How long `set_max_bytes` waits for pinned frames beyond the new limit.
const SHRINK_PATIENCE: Duration = if cfg!(test) { Duration::from_millis(50) } else { Duration::from_secs(2) };
/// Background writer period when nobody kicks it.
const WRITER_PERIOD: Duration = Duration::from_millis(100);
/// Most pages the background writer writes per round.
const WRITER_BATCH: usize = 256;

struct FilePages {
    set: PageSet,
    /// Set by `discard`; no page of the file may enter the table afterwards.
    closed: bool,
}

struct FileEntry {
    store: Arc<dyn PageStore>,
    /// The file's resident pages; a superset-free mirror of its page-table entries
    /// (always updated under the page's shard mutex).
    pages: Mutex<FilePages>,
}

struct Files {
    map: HashMap<u32, Arc<FileEntry>>,
    next: u32,
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

/// The shared state. `BufferPool` owns the background writer; every `PageHandle` holds an
/// `Arc<Inner>`, so the memory stays mapped for as long as any pin exists.
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
}

/// The buffer pool. Create one per instance with [`BufferPool::new`].
pub struct BufferPool {
    inner: Arc<Inner>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

/// A pinned page. The frame cannot be evicted while the handle lives; dropping it unpins.
pub struct PageHandle {
    pool: Arc<Inner>,
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

/// What `try_evict` achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Evict {
    /// The frame is now `Owned` by the caller; `wrote` if a dirty page was written first.
    Done { wrote: bool },
    /// Not evictable right now.
    Skipped,
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
        let frames = Region::reserve(reserve * PAGE_SIZE, "frames")?;
        let descs = Region::reserve(reserve * std::mem::size_of::<Frame>(), "descriptors")?;
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
            files: RwLock::new(Files { map: HashMap::new(), next: 1 }),
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
        Ok(Arc::new(BufferPool { inner, writer: Mutex::new(writer) }))
    }

    /// Registers a file; its pages can then be fetched with the returned id.
    pub fn register(&self, store: Arc<dyn PageStore>) -> FileId {
        let mut files = self.inner.files.write();
        loop {
            let id = files.next;
            files.next = if id >= u32::MAX - 1 { 1 } else { id + 1 };
            if let std::collections::hash_map::Entry::Vacant(v) = files.map.entry(id) {
                v.insert(Arc::new(FileEntry {
                    store,
                    pages: Mutex::new(FilePages { set: PageSet::default(), closed: false }),
                }));
                return FileId(id);
            }
        }
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
        self.inner.fetch(file, no, false)
    }

    /// Pins page `no` that is being newly allocated: no disk read; if not cached, the
    /// frame is zero-filled. A cached page is returned as it is.
    pub fn fetch_new(&self, file: FileId, no: PageNo) -> Result<PageHandle> {
        self.inner.fetch(file, no, true)
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
        self.inner.stats()
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
}

impl Drop for BufferPool {
    fn drop(&mut self) {
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

    fn entry(&self, file: FileId) -> Option<Arc<FileEntry>> {
        self.files.read().map.get(&file.0).cloned()
    }

    fn handle(self: &Arc<Self>, idx: u32, file: FileId, no: PageNo) -> PageHandle {
        PageHandle { pool: Arc::clone(self), idx, file, no }
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

    /// Pins the frame mapped to `k`, whatever it is doing; `None` if not cached.
    fn pin_key(&self, k: Key) -> Option<Pin<'_>> {
        let g = self.shard(k).0.lock();
        let i = *g.map.get(&k)?;
        self.pin_quiet(i);
        Some(Pin { pool: self, idx: i })
    }

    /// Pins frame `i` if it still holds `k` and is valid.
    fn pin_if_mapped(&self, i: u32, k: Key) -> Option<Pin<'_>> {
        let g = self.shard(k).0.lock();
        if g.map.get(&k) != Some(&i) || State(self.frame(i).state.load(Ordering::Relaxed)).kind() != Kind::Valid {
            return None;
        }
        self.pin_quiet(i);
        Some(Pin { pool: self, idx: i })
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
    fn allocate_frame(&self) -> Result<u32> {
        let i = match self.pop_free() {
            Some(i) => i,
            None => self.find_victim()?,
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
            let mut g = self.shard(k).0.lock();
            if g.map.get(&k) != Some(&i) {
                return Ok(Evict::Skipped);
            }
            let s = State(f.state.load(Ordering::Acquire));
            if s.kind() != Kind::Valid || s.pins() != 0 || (!force && s.usage() != 0) {
                return Ok(Evict::Skipped);
            }
            // Unpinned and we hold the shard mutex: no one can pin it, so no one holds its
            // latch and the dirty word cannot change under us.
            let d = f.dirty.load(Ordering::Acquire);
            if d & (DIRTY | WRITING) == 0 {
                if f.state
                    .compare_exchange(s.0, State::new(Kind::Owned, 0, 0).0, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    return Ok(Evict::Skipped);
                }
                g.map.remove(&k);
                if let Some(e) = self.entry(FileId(key_file(k))) {
                    e.pages.lock().set.remove(&key_page(k));
                }
                drop(g);
                self.resident.fetch_sub(1, Ordering::Relaxed);
                self.evictions.fetch_add(1, Ordering::Relaxed);
                return Ok(Evict::Done { wrote });
            }
            if d & WRITING != 0 || wrote {
                return Ok(Evict::Skipped);
            }
            self.pin_quiet(i);
            let pin = Pin { pool: self, idx: i };
            drop(g);
            let r = match self.entry(FileId(key_file(k))) {
                Some(e) => self.write_frame(i, &e, false),
                None => Ok(false),
            };
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

    fn fetch(self: &Arc<Self>, file: FileId, no: PageNo, new: bool) -> Result<PageHandle> {
        let k = key(file, no);
        let shard = self.shard(k);
        loop {
            {
                let mut g = shard.0.lock();
                if let Some(&i) = g.map.get(&k) {
                    let prev = self.pin_touch(i);
                    g.hits += 1;
                    drop(g);
                    if prev.kind() == Kind::Valid {
                        return Ok(self.handle(i, file, no));
                    }
                    // Being read by another thread, which holds its exclusive latch: wait.
                    let f = self.frame(i);
                    f.latch.lock_shared();
                    // SAFETY: locked shared just above.
                    unsafe { f.latch.unlock_shared() };
                    if State(f.state.load(Ordering::Acquire)).kind() == Kind::Valid {
                        return Ok(self.handle(i, file, no));
                    }
                    // The read failed (or the file was discarded): start over.
                    self.unpin(i);
                    continue;
                }
            }
            let entry = self.entry(file).ok_or_else(|| not_registered(file))?;
            let i = self.allocate_frame()?;
            let f = self.frame(i);
            f.key.store(k, Ordering::Relaxed);
            let latched = f.latch.try_lock_exclusive();
            assert!(latched, "buffer pool: free frame {i} is latched");
            {
                let mut g = shard.0.lock();
                let raced = g.map.contains_key(&k);
                let closed = !raced && {
                    let mut p = entry.pages.lock();
                    if !p.closed {
                        p.set.insert(no);
                    }
                    p.closed
                };
                if raced || closed {
                    drop(g);
                    // SAFETY: locked exclusive above.
                    unsafe { f.latch.unlock_exclusive() };
                    self.free_frame(i);
                    if closed {
                        return Err(not_registered(file));
                    }
                    continue;
                }
                f.state.store(State::new(Kind::Loading, 1, 0).0, Ordering::Release);
                g.map.insert(k, i);
                g.misses += 1;
            }
            self.resident.fetch_add(1, Ordering::Relaxed);
            // SAFETY: we hold the frame's exclusive latch; nobody else touches its bytes.
            let buf = unsafe { std::slice::from_raw_parts_mut(self.frame_ptr(i), PAGE_SIZE) };
            let io = std::panic::catch_unwind(AssertUnwindSafe(|| {
                if new {
                    buf.fill(0);
                    return Ok(());
                }
                self.reads.fetch_add(1, Ordering::Relaxed);
                entry.store.read_page(no, buf)?;
                page::verify(buf, no).map_err(|damage| Error::Corrupt {
                    database: entry.store.database_name().to_string(),
                    path: entry.store.path().to_path_buf(),
                    page: no,
                    detail: damage.to_string(),
                })
            }));
            let res = io.unwrap_or_else(|panic| {
                // A panicking store must not leave waiters blocked on this frame.
                self.unmap_failed(i, k, &entry);
                // SAFETY: locked exclusive above.
                unsafe { f.latch.unlock_exclusive() };
                self.unpin(i);
                std::panic::resume_unwind(panic)
            });
            let res = res.and_then(|()| {
                f.state
                    .fetch_update(Ordering::Release, Ordering::Relaxed, |x| {
                        let s = State(x);
                        (s.kind() == Kind::Loading).then(|| s.with_kind(Kind::Valid).0)
                    })
                    .map(|_| ())
                    .map_err(|_| not_registered(file)) // discarded while we were reading
            });
            if res.is_err() {
                self.unmap_failed(i, k, &entry);
            }
            // SAFETY: locked exclusive above.
            unsafe { f.latch.unlock_exclusive() };
            return match res {
                Ok(()) => Ok(self.handle(i, file, no)),
                Err(e) => {
                    self.unpin(i);
                    Err(e)
                }
            };
        }
    }

    /// Takes a frame whose load failed out of the page table; it becomes an orphan, freed
    /// when its last pin (ours, or a waiter's) is dropped.
    fn unmap_failed(&self, i: u32, k: Key, entry: &FileEntry) {
        let f = self.frame(i);
        let mut g = self.shard(k).0.lock();
        if g.map.get(&k) == Some(&i) {
            g.map.remove(&k);
            entry.pages.lock().set.remove(&key_page(k));
            self.resident.fetch_sub(1, Ordering::Relaxed);
        }
        let _ = f.state.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |x| Some(State(x).with_kind(Kind::Orphan).0));
        drop(g);
    }

    // ----- flushing and files --------------------------------------------------------------

    fn flush_file(&self, file: FileId) -> Result<()> {
        let entry = self.entry(file).ok_or_else(|| not_registered(file))?;
        let mut pages: Vec<PageNo> = entry.pages.lock().set.iter().copied().collect();
        pages.sort_unstable();
        for no in pages {
            let Some(pin) = self.pin_key(key(file, no)) else { continue };
            // Another thread may be writing this page: wait for it, then look again (it
            // may have been dirtied after that thread's copy).
            while !self.write_frame(pin.idx, &entry, true)? {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        entry.store.sync()
    }

    fn discard(&self, file: FileId) {
        let Some(entry) = self.files.write().map.remove(&file.0) else { return };
        let pages = {
            let mut p = entry.pages.lock();
            p.closed = true;
            std::mem::take(&mut p.set)
        };
        for no in pages {
            let k = key(file, no);
            let mut g = self.shard(k).0.lock();
            let Some(i) = g.map.remove(&k) else { continue };
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
    }

    fn stats(&self) -> PoolStats {
        let (mut hits, mut misses) = (0, 0);
        for s in self.shards.iter() {
            let g = s.0.lock();
            hits += g.hits;
            misses += g.misses;
        }
        PoolStats {
            hits,
            misses,
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            dirty_pages: self.dirty_pages.load(Ordering::Relaxed),
            resident_pages: self.resident.load(Ordering::Relaxed),
            capacity_pages: self.limit.load(Ordering::Relaxed) as u64,
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
            let Some(_pin) = (if k == NO_KEY { None } else { self.pin_if_mapped(i, k) }) else { continue };
            // Errors are left to foreground eviction and checkpoints, which report them.
            let r = match self.entry(FileId(key_file(k))) {
                Some(e) => self.write_frame(i, &e, false),
                None => Ok(false),
            };
            if let Ok(true) = r {
                written += 1;
            }
        }
    }
}

impl PageHandle {
    pub fn page_no(&self) -> PageNo {
        self.no
    }

    pub fn file(&self) -> FileId {
        self.file
    }

    /// Takes the shared latch. Do not take a second latch on the same page in one thread.
    pub fn read(&self) -> PageRead<'_> {
        self.pool.frame(self.idx).latch.lock_shared();
        PageRead { h: self }
    }

    /// Takes the exclusive latch.
    pub fn write(&self) -> PageWrite<'_> {
        self.pool.frame(self.idx).latch.lock_exclusive();
        PageWrite { h: self }
    }

    /// Takes the shared latch and keeps it, together with the pin, in an owned guard.
    pub fn into_read(self) -> PageReadGuard {
        self.pool.frame(self.idx).latch.lock_shared();
        PageReadGuard { h: self }
    }

    /// Takes the exclusive latch and keeps it, together with the pin, in an owned guard.
    pub fn into_write(self) -> PageWriteGuard {
        self.pool.frame(self.idx).latch.lock_exclusive();
        PageWriteGuard { h: self }
    }

    fn bytes(&self) -> *mut u8 {
        self.pool.frame_ptr(self.idx)
    }

    /// See [`PageWrite::mark_dirty`]; the caller holds the exclusive latch.
    fn mark_dirty(&self) {
        let prev = self
            .pool
            .frame(self.idx)
            .dirty
            .fetch_update(Ordering::Release, Ordering::Relaxed, |x| {
                Some(((x >> GEN_SHIFT).wrapping_add(1) << GEN_SHIFT) | (x & WRITING) | DIRTY)
            })
            .unwrap_or_else(|x| x);
        if prev & DIRTY == 0 {
            self.pool.dirty_pages.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for PageHandle {
    fn drop(&mut self) {
        self.pool.unpin(self.idx);
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
        unsafe { self.h.pool.frame(self.h.idx).latch.unlock_shared() }
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
        unsafe { self.h.pool.frame(self.h.idx).latch.unlock_exclusive() }
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
        unsafe { self.h.pool.frame(self.h.idx).latch.unlock_shared() }
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
        unsafe { self.h.pool.frame(self.h.idx).latch.unlock_exclusive() }
    }
}
