//! The descriptor cache: every [`DataFile`](crate::DataFile) opens its descriptor on
//! demand and the process keeps at most [`capacity`] of them open, closing the least
//! recently used (a clock: each use sets a bit, the hand clears it and closes the first
//! file whose bit is already clear). So the number of files the engine has — two or
//! three per open database — is bounded by memory, not by the process's descriptor
//! limit, as PostgreSQL's virtual file descriptors do.
//!
//! Rules, each an invariant of this module:
//! - A descriptor in use is never closed: an operation holds its own reference to the
//!   open file for as long as the system call runs, and the hand passes over files in
//!   use. (While such an operation ends, a file may briefly be open twice.)
//! - An fsync owed to a closed file is never lost: a file written since its last sync
//!   (a count of finished writes against the count its last sync covered) is synced
//!   (fdatasync) before its descriptor closes. Linux syncs an inode's dirty pages through
//!   any descriptor, so the next sync through a new descriptor covers writes made through
//!   an old one; a sync that fails at closing is kept and is the answer of every later
//!   sync of the file (its unsynced pages may be gone, as Linux drops them).
//! - A file is reopened only if it is still the same file (device and inode): a file
//!   removed or replaced under its name is an error, never another file's bytes.
//! - The hand never waits: it skips a file whose lock another thread holds, and when
//!   every open file is in use it lets the count pass the capacity rather than fail.
//!
//! What the cache does is counted ([`figures`]): uses that found the descriptor open
//! (hits), opens and reopens (misses), closes by the hand, and of those, closes that had
//! to sync first.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use tessera_errors::{Error, Result};

/// How a file is opened each time its descriptor is (re)made.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access {
    pub write: bool,
    pub direct: bool,
}

/// What the cache has done since the process started, and its state now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    /// Descriptors open now.
    pub open: u64,
    /// The most it keeps open (it may pass this while every open file is in use).
    pub capacity: u64,
    /// Uses of a file whose descriptor was open.
    pub hits: u64,
    /// Uses that had to open (or reopen) the file's descriptor.
    pub misses: u64,
    /// Descriptors closed to make room.
    pub evictions: u64,
    /// Of those, the ones whose file had unsynced writes and was synced first.
    pub eviction_syncs: u64,
}

/// One file known to the cache. Shared by every handle of the file; dropping the last
/// one closes its descriptor and forgets it.
#[derive(Debug)]
pub(crate) struct Descriptor(Arc<Entry>);

#[derive(Debug)]
struct Entry {
    path: PathBuf,
    access: Access,
    /// The open descriptor, if any. Its lock is held only to take or replace it.
    file: Mutex<Option<Arc<File>>>,
    /// Which file it is, from its first open.
    identity: Identity,
    /// The clock's bit: used since the hand last passed.
    used: AtomicBool,
    /// Where it sits in the cache's ring of open files (`usize::MAX`: not open). Changed
    /// only under the ring's lock.
    slot: AtomicUsize,
    /// Writes finished, and how many of them the last successful sync covered.
    writes: AtomicU64,
    synced: AtomicU64,
    /// The error of a sync made before closing the descriptor, if one failed.
    failed_sync: Mutex<Option<i32>>,
}

/// A file's device, inode and birth time (where the filesystem keeps one): an inode
/// number freed by a removal may be given to the next file made, its birth time not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    device: u64,
    inode: u64,
    born: Option<std::time::SystemTime>,
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Identity {
        Identity { device: meta.dev(), inode: meta.ino(), born: meta.created().ok() }
    }
}

struct Cache {
    capacity: AtomicUsize,
    ring: Mutex<Ring>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    eviction_syncs: AtomicU64,
}

/// The files whose descriptors are open, and the clock's hand.
struct Ring {
    open: Vec<Arc<Entry>>,
    hand: usize,
}

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Cache {
        capacity: AtomicUsize::new(default_capacity()),
        ring: Mutex::new(Ring { open: Vec::new(), hand: 0 }),
        hits: AtomicU64::new(0),
        misses: AtomicU64::new(0),
        evictions: AtomicU64::new(0),
        eviction_syncs: AtomicU64::new(0),
    })
}

/// Half the process's soft descriptor limit (the rest is for sockets and the like),
/// until [`set_capacity`] says otherwise.
fn default_capacity() -> usize {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit through a valid pointer.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 { lim.rlim_cur } else { 1024 };
    usize::try_from(soft / 2).unwrap_or(usize::MAX).max(MIN_CAPACITY)
}

/// The fewest descriptors the cache keeps: the log and data file of master and tempdb,
/// and a few more.
pub const MIN_CAPACITY: usize = 8;

/// Keeps at most `n` (at least [`MIN_CAPACITY`]) descriptors open from now on; closes
/// what is over it at the next open.
pub fn set_capacity(n: usize) {
    cache().capacity.store(n.max(MIN_CAPACITY), Ordering::Relaxed);
}

/// The most descriptors the cache keeps open.
pub fn capacity() -> usize {
    cache().capacity.load(Ordering::Relaxed)
}

/// The cache's counters and its state now.
pub fn figures() -> Figures {
    let c = cache();
    Figures {
        open: c.ring.lock().open.len() as u64,
        capacity: c.capacity.load(Ordering::Relaxed) as u64,
        hits: c.hits.load(Ordering::Relaxed),
        misses: c.misses.load(Ordering::Relaxed),
        evictions: c.evictions.load(Ordering::Relaxed),
        eviction_syncs: c.eviction_syncs.load(Ordering::Relaxed),
    }
}

fn open_file(path: &Path, access: Access, create: bool) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(access.write);
    if create {
        opts.create_new(true);
    }
    if access.direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    opts.open(path)
}

impl Descriptor {
    /// Opens `path` (making it when `create`), taking a place in the cache.
    pub(crate) fn open(path: &Path, access: Access, create: bool) -> std::io::Result<Descriptor> {
        let cache = cache();
        cache.make_room();
        let file = open_file(path, access, create)?;
        let meta = file.metadata()?;
        let entry = Arc::new(Entry {
            path: path.to_path_buf(),
            access,
            file: Mutex::new(Some(Arc::new(file))),
            identity: Identity::of(&meta),
            used: AtomicBool::new(true),
            slot: AtomicUsize::new(usize::MAX),
            writes: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            failed_sync: Mutex::new(None),
        });
        cache.misses.fetch_add(1, Ordering::Relaxed);
        cache.ring.lock().insert(&entry);
        Ok(Descriptor(entry))
    }

    /// The open file, reopened if the cache had closed it. Hold it only for one system
    /// call or a few: while it is held the descriptor stays open.
    #[inline]
    pub(crate) fn file(&self) -> Result<Arc<File>> {
        let entry = &self.0;
        let mut slot = entry.file.lock();
        if let Some(file) = slot.as_ref() {
            entry.used.store(true, Ordering::Relaxed);
            cache().hits.fetch_add(1, Ordering::Relaxed);
            return Ok(file.clone());
        }
        self.reopen(&mut slot)
    }

    #[cold]
    fn reopen(&self, slot: &mut Option<Arc<File>>) -> Result<Arc<File>> {
        let entry = &self.0;
        let cache = cache();
        cache.make_room();
        let fail = |e| Error::io("reopen", &entry.path, 0, e);
        let file = open_file(&entry.path, entry.access, false).map_err(fail)?;
        let meta = file.metadata().map_err(fail)?;
        if Identity::of(&meta) != entry.identity {
            return Err(fail(std::io::Error::other("the file was removed or replaced since it was opened")));
        }
        let file = Arc::new(file);
        *slot = Some(file.clone());
        entry.used.store(true, Ordering::Relaxed);
        cache.misses.fetch_add(1, Ordering::Relaxed);
        cache.ring.lock().insert(entry);
        Ok(file)
    }

    /// Notes a finished write (the file now owes a sync).
    #[inline]
    pub(crate) fn wrote(&self) {
        self.0.writes.fetch_add(1, Ordering::Release);
    }

    /// Syncs the file through `how`, unless a sync made before closing its descriptor
    /// failed (then that failure, again).
    pub(crate) fn sync(&self, how: impl FnOnce(&File) -> std::io::Result<()>) -> std::io::Result<()> {
        if let Some(errno) = *self.0.failed_sync.lock() {
            return Err(std::io::Error::from_raw_os_error(errno));
        }
        let covered = self.0.writes.load(Ordering::Acquire);
        let file = self.file().map_err(|e| match e {
            Error::Io { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        })?;
        how(&file)?;
        self.0.synced.fetch_max(covered, Ordering::AcqRel);
        Ok(())
    }

    /// The file's path (the one it was opened with).
    pub(crate) fn path(&self) -> &Path {
        &self.0.path
    }

    /// A number for the file that stays the same while it is known to the cache.
    pub(crate) fn id(&self) -> u64 {
        Arc::as_ptr(&self.0) as usize as u64
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        let entry = &self.0;
        let mut ring = cache().ring.lock();
        if entry.slot.load(Ordering::Relaxed) != usize::MAX {
            ring.remove(entry);
        }
        drop(ring);
        entry.file.lock().take();
    }
}

impl Ring {
    fn insert(&mut self, entry: &Arc<Entry>) {
        assert_eq!(entry.slot.load(Ordering::Relaxed), usize::MAX, "a file is in the ring once");
        entry.slot.store(self.open.len(), Ordering::Relaxed);
        self.open.push(entry.clone());
    }

    fn remove(&mut self, entry: &Entry) {
        let at = entry.slot.swap(usize::MAX, Ordering::Relaxed);
        assert!(std::ptr::eq(Arc::as_ptr(&self.open[at]), entry), "a file's slot is where it sits");
        self.open.swap_remove(at);
        if let Some(moved) = self.open.get(at) {
            moved.slot.store(at, Ordering::Relaxed);
        }
    }
}

impl Cache {
    /// Closes descriptors until one more fits under the capacity, or until a sweep of
    /// twice the ring finds nothing it may close.
    fn make_room(&self) {
        let capacity = self.capacity.load(Ordering::Relaxed);
        let mut closing = Vec::new();
        {
            let mut ring = self.ring.lock();
            let mut budget = ring.open.len() * 2;
            while ring.open.len() + 1 > capacity && budget > 0 {
                budget -= 1;
                if ring.hand >= ring.open.len() {
                    ring.hand = 0;
                }
                let entry = ring.open[ring.hand].clone();
                if entry.used.swap(false, Ordering::Relaxed) {
                    ring.hand += 1;
                    continue;
                }
                let Some(mut slot) = entry.file.try_lock() else {
                    ring.hand += 1;
                    continue;
                };
                match slot.as_ref() {
                    Some(file) if Arc::strong_count(file) == 1 => {}
                    _ => {
                        ring.hand += 1;
                        continue;
                    }
                }
                let file = slot.take().expect("checked above");
                drop(slot);
                ring.remove(&entry);
                closing.push((entry, file));
            }
        }
        for (entry, file) in closing {
            self.evictions.fetch_add(1, Ordering::Relaxed);
            entry.sync_before_close(&file, self);
        }
    }
}

impl Entry {
    /// Syncs `file` if writes were made since the last sync, keeping the error if that
    /// fails (see the module's rules).
    fn sync_before_close(&self, file: &File, cache: &Cache) {
        let written = self.writes.load(Ordering::Acquire);
        if written == self.synced.load(Ordering::Acquire) {
            return;
        }
        cache.eviction_syncs.fetch_add(1, Ordering::Relaxed);
        let result = if crate::faults::active() {
            crate::faults::sync(&self.path).and_then(|()| file.sync_data()).inspect(|()| {
                if let Ok(meta) = file.metadata() {
                    crate::faults::power::synced(&self.path, meta.len());
                }
            })
        } else {
            file.sync_data()
        };
        match result {
            Ok(()) => {
                self.synced.fetch_max(written, Ordering::AcqRel);
            }
            Err(e) => {
                self.failed_sync.lock().get_or_insert(e.raw_os_error().unwrap_or(libc::EIO));
            }
        }
    }
}
