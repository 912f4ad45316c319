//! The buffer pool extension: a second, larger tier of clean pages in a file on a fast
//! device (SQL Server 2014's BPE, seed 002).
//!
//! - **Filling.** A clean page evicted from RAM is copied (sealed with its checksum) into a
//!   bounded staging queue; the extension's writer thread stores it in a slot of the file.
//!   Eviction never waits: when the queue is full the copy is dropped.
//! - **Reading.** A miss in RAM asks the extension before the data file. The slot is read
//!   into the frame and verified (checksum and page number); a page that fails is dropped
//!   from the extension and read from the data file instead.
//! - **Invalidation.** A page dirtied in RAM (its clean → dirty transition) loses its
//!   extension copy, and so does a copy still being written: each staged copy carries a
//!   token, and the writer maps it only if the token is still the page's pending one.
//! - **Eviction.** Slots are reused by a clock over reference bits set by reads.
//!
//! Invariants (all under the one `state` mutex):
//! - `map[key] = s` ⇔ `keys[s] = key`; a slot is mapped, free, or being written — never
//!   two at once.
//! - A slot with readers is never chosen for writing, so a reader never sees a slot
//!   rewritten under it (two databases' pages with the same number cannot be confused).
//! - Pages are keyed by (pool file id, page number); file ids are never reused, and a
//!   discarded file's pages are dropped.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use tessera_errors::{Error, Result};
use tessera_io::{AlignedBuf, DataFile, OpenMode};

use super::table::{key_file, key_page, Key};
use crate::page::{self, PageNo, PAGE_SIZE};
use crate::FileId;

/// Staged copies waiting for the writer (8 MiB of pages at most).
const STAGE_LIMIT: usize = 1024;
const NO_SLOT_KEY: Key = u64::MAX;

/// Counters of the extension (sys.dm_os_performance_counters' "Extension …").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtensionStats {
    pub slots: u64,
    pub used: u64,
    pub reads: u64,
    pub writes: u64,
    pub evictions: u64,
    /// Staged copies dropped because the queue was full.
    pub dropped: u64,
    /// Pages found damaged on read and re-read from the data file.
    pub damaged: u64,
    pub queued: u64,
}

struct State {
    map: HashMap<Key, u32>,
    keys: Vec<Key>,
    referenced: Vec<bool>,
    readers: Vec<u16>,
    free: Vec<u32>,
    hand: usize,
    /// Pages staged and not yet mapped: key → token of the newest staged copy.
    pending: HashMap<Key, u64>,
    next_token: u64,
    queue: VecDeque<(Key, u64, AlignedBuf)>,
    /// The writer is storing a copy it took off the queue.
    writing: bool,
    stop: bool,
}

struct Shared {
    file: DataFile,
    state: Mutex<State>,
    work: Condvar,
    reads: AtomicU64,
    writes: AtomicU64,
    evictions: AtomicU64,
    dropped: AtomicU64,
    damaged: AtomicU64,
    failed: AtomicBool,
}

/// An open extension file and its writer thread; taking it out of service or dropping it
/// deletes the file (an extension always starts cold, as SQL Server's does), and dropping
/// it stops the thread.
pub struct Extension {
    shared: Arc<Shared>,
    path: PathBuf,
    /// The file's inode: only this file is deleted, never a newer extension's at the same
    /// path.
    inode: u64,
    slots: u32,
    writer: Option<JoinHandle<()>>,
}

impl Extension {
    /// Creates (or truncates) the file at `path` with room for `bytes / PAGE_SIZE` pages.
    pub fn create(path: &Path, bytes: u64) -> Result<Extension> {
        let slots = bytes / PAGE_SIZE as u64;
        if slots == 0 || slots > u32::MAX as u64 {
            return Err(Error::Invalid(format!("buffer pool extension size {bytes} is out of range")));
        }
        // A new extension starts cold: whatever file was there goes.
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io("replace", path, 0, e)),
            _ => {}
        }
        // O_DIRECT keeps the extension out of the page cache; some filesystems lack it.
        let file = match DataFile::open(path, OpenMode::CreateNew, true) {
            Err(Error::Invalid(_)) => DataFile::open(path, OpenMode::CreateNew, false)?,
            other => other?,
        };
        file.set_len(slots * PAGE_SIZE as u64)?;
        let n = slots as usize;
        let shared = Arc::new(Shared {
            file,
            state: Mutex::new(State {
                map: HashMap::new(),
                keys: vec![NO_SLOT_KEY; n],
                referenced: vec![false; n],
                readers: vec![0; n],
                free: (0..slots as u32).rev().collect(),
                hand: 0,
                pending: HashMap::new(),
                next_token: 1,
                queue: VecDeque::new(),
                writing: false,
                stop: false,
            }),
            work: Condvar::new(),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            damaged: AtomicU64::new(0),
            failed: AtomicBool::new(false),
        });
        let worker = shared.clone();
        let writer = std::thread::Builder::new()
            .name("tessera-bpe".into())
            .spawn(move || worker.writer_loop())
            .map_err(|e| Error::Invalid(format!("cannot start the buffer pool extension writer: {e}")))?;
        let inode =
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).map_err(|e| Error::io("stat", path, 0, e))?);
        Ok(Extension { shared, path: path.to_path_buf(), inode, slots: slots as u32, writer: Some(writer) })
    }

    /// Deletes the file if it is still this extension's. Whoever still holds the extension
    /// (a reader between two calls) goes on using the open file.
    pub(crate) fn delete_file(&self) {
        let ours = std::fs::metadata(&self.path).is_ok_and(|m| std::os::unix::fs::MetadataExt::ino(&m) == self.inode);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn size_bytes(&self) -> u64 {
        u64::from(self.slots) * PAGE_SIZE as u64
    }

    /// Queues a copy of clean page `key` (its current image in `image`). Never blocks on
    /// I/O; drops the copy when the queue is full.
    pub fn stage(&self, key: Key, image: &[u8]) {
        if self.shared.failed.load(Ordering::Relaxed) {
            return;
        }
        let mut copy = AlignedBuf::new(PAGE_SIZE);
        copy.copy_from_slice(image);
        page::set_page_no(&mut copy, key_page(key));
        page::seal(&mut copy);
        let mut st = self.shared.state.lock();
        if st.queue.len() >= STAGE_LIMIT {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let token = st.next_token;
        st.next_token += 1;
        st.pending.insert(key, token);
        st.queue.push_back((key, token, copy));
        drop(st);
        // All: `drain` may be waiting on the same condition variable.
        self.shared.work.notify_all();
    }

    /// Reads page `key` into `buf` if the extension holds it and it verifies; true then.
    pub fn read(&self, key: Key, buf: &mut [u8]) -> bool {
        let slot = {
            let mut st = self.shared.state.lock();
            let Some(&s) = st.map.get(&key) else { return false };
            st.readers[s as usize] += 1;
            st.referenced[s as usize] = true;
            s
        };
        let io = self.shared.file.read_exact_at(buf, u64::from(slot) * PAGE_SIZE as u64);
        self.shared.state.lock().readers[slot as usize] -= 1;
        if io.is_ok() && page::verify(buf, key_page(key)).is_ok() {
            self.shared.reads.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        self.shared.damaged.fetch_add(1, Ordering::Relaxed);
        self.invalidate(key);
        false
    }

    /// Forgets page `key` (it was dirtied in RAM), including a copy still being written.
    pub fn invalidate(&self, key: Key) {
        let mut st = self.shared.state.lock();
        st.pending.remove(&key);
        if let Some(s) = st.map.remove(&key) {
            st.keys[s as usize] = NO_SLOT_KEY;
            st.free.push(s);
        }
    }

    /// Forgets every page of pool file `file` (the database was closed or dropped).
    pub fn invalidate_file(&self, file: u32) {
        let mut st = self.shared.state.lock();
        st.pending.retain(|k, _| key_file(*k) != file);
        let gone: Vec<(Key, u32)> =
            st.map.iter().filter(|(k, _)| key_file(**k) == file).map(|(k, s)| (*k, *s)).collect();
        for (k, s) in gone {
            st.map.remove(&k);
            st.keys[s as usize] = NO_SLOT_KEY;
            st.free.push(s);
        }
    }

    /// Whether page `key` is held (for sys.dm_os_buffer_descriptors).
    pub fn contains(&self, key: Key) -> bool {
        self.shared.state.lock().map.contains_key(&key)
    }

    /// Every page held: (pool file, page).
    pub fn pages(&self) -> Vec<(FileId, PageNo)> {
        self.shared.state.lock().map.keys().map(|&k| (FileId(key_file(k)), key_page(k))).collect()
    }

    pub fn stats(&self) -> ExtensionStats {
        let st = self.shared.state.lock();
        ExtensionStats {
            slots: u64::from(self.slots),
            used: st.map.len() as u64,
            reads: self.shared.reads.load(Ordering::Relaxed),
            writes: self.shared.writes.load(Ordering::Relaxed),
            evictions: self.shared.evictions.load(Ordering::Relaxed),
            dropped: self.shared.dropped.load(Ordering::Relaxed),
            damaged: self.shared.damaged.load(Ordering::Relaxed),
            queued: st.queue.len() as u64,
        }
    }

    /// Waits until every staged copy has been written or dropped (tests, benchmarks).
    pub fn drain(&self) {
        let mut st = self.shared.state.lock();
        while (!st.queue.is_empty() || st.writing) && !self.shared.failed.load(Ordering::Relaxed) {
            self.shared.work.wait_for(&mut st, std::time::Duration::from_millis(5));
        }
    }
}

impl Drop for Extension {
    fn drop(&mut self) {
        self.shared.state.lock().stop = true;
        self.shared.work.notify_all();
        if let Some(h) = self.writer.take() {
            let _ = h.join();
        }
        self.delete_file();
    }
}

impl Shared {
    fn writer_loop(&self) {
        loop {
            let (key, token, copy, slot) = {
                let mut st = self.state.lock();
                loop {
                    if st.stop {
                        return;
                    }
                    if !st.queue.is_empty() {
                        break;
                    }
                    self.work.wait(&mut st);
                }
                let (key, token, copy) = st.queue.pop_front().expect("non-empty queue");
                if st.pending.get(&key) != Some(&token) {
                    continue; // invalidated, or a newer copy is queued
                }
                let Some(slot) = self.take_slot(&mut st) else {
                    st.pending.remove(&key);
                    continue;
                };
                st.writing = true;
                (key, token, copy, slot)
            };
            let io = self.file.write_all_at(&copy, u64::from(slot) * PAGE_SIZE as u64);
            let mut st = self.state.lock();
            st.writing = false;
            self.work.notify_all();
            match io {
                Ok(()) if st.pending.get(&key) == Some(&token) => {
                    st.pending.remove(&key);
                    if let Some(old) = st.map.insert(key, slot) {
                        st.keys[old as usize] = NO_SLOT_KEY;
                        st.free.push(old);
                    }
                    st.keys[slot as usize] = key;
                    self.writes.fetch_add(1, Ordering::Relaxed);
                }
                Ok(()) => st.free.push(slot),
                Err(_) => {
                    // A failing extension device turns the extension into a no-op.
                    st.free.push(slot);
                    self.failed.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// A slot to write: a free one, or the clock's next unreferenced, unread one.
    fn take_slot(&self, st: &mut State) -> Option<u32> {
        if let Some(i) = st.free.iter().rposition(|&s| st.readers[s as usize] == 0) {
            return Some(st.free.swap_remove(i));
        }
        let n = st.keys.len();
        for _ in 0..2 * n {
            let s = st.hand;
            st.hand = (st.hand + 1) % n;
            if st.readers[s] > 0 || st.keys[s] == NO_SLOT_KEY {
                continue;
            }
            if std::mem::take(&mut st.referenced[s]) {
                continue;
            }
            let old = std::mem::replace(&mut st.keys[s], NO_SLOT_KEY);
            st.map.remove(&old);
            self.evictions.fetch_add(1, Ordering::Relaxed);
            return Some(s as u32);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::table::key;
    use super::*;

    fn image(no: u32, fill: u8) -> Vec<u8> {
        let mut p = vec![fill; PAGE_SIZE];
        p[..page::HEADER_SIZE].fill(0);
        page::set_page_no(&mut p, PageNo::from_raw(no));
        p
    }

    #[test]
    fn stores_reads_invalidates_and_evicts() {
        let dir = tempfile::tempdir().unwrap();
        let ext = Extension::create(&dir.path().join("x.bpe"), 4 * PAGE_SIZE as u64).unwrap();
        let mut buf = AlignedBuf::new(PAGE_SIZE);
        for no in 0..3 {
            ext.stage(key(FileId(1), PageNo::from_raw(no)), &image(no, no as u8 + 1));
        }
        ext.drain();
        assert!(ext.read(key(FileId(1), PageNo::from_raw(2)), &mut buf));
        assert_eq!(buf[PAGE_SIZE - 1], 3);
        assert!(!ext.read(key(FileId(2), PageNo::from_raw(2)), &mut buf), "another file's page 2 is not this one");
        ext.invalidate(key(FileId(1), PageNo::from_raw(2)));
        assert!(!ext.read(key(FileId(1), PageNo::from_raw(2)), &mut buf), "dirtied in RAM: gone");
        // Six more pages into four slots: the clock evicts.
        for no in 10..16 {
            ext.stage(key(FileId(1), PageNo::from_raw(no)), &image(no, 9));
        }
        ext.drain();
        let s = ext.stats();
        assert_eq!(s.used, 4);
        assert!(s.evictions >= 2, "{s:?}");
        ext.invalidate_file(1);
        assert_eq!(ext.stats().used, 0);
        let path = ext.path().to_path_buf();
        drop(ext);
        assert!(!path.exists(), "the file goes with the extension");
    }

    #[test]
    fn a_copy_invalidated_while_staged_is_never_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let ext = Extension::create(&dir.path().join("x.bpe"), 64 * PAGE_SIZE as u64).unwrap();
        let mut buf = AlignedBuf::new(PAGE_SIZE);
        for round in 0..200u32 {
            let k = key(FileId(1), PageNo::from_raw(round % 7));
            // The page was dirtied (and written) since its last copy: a new image.
            ext.invalidate(k);
            ext.stage(k, &image(round % 7, (round % 250) as u8));
            if round % 3 == 0 {
                ext.invalidate(k);
            }
            if round % 11 == 0 {
                ext.drain();
            }
            // Whatever is read is the newest staged image, or nothing.
            if ext.read(k, &mut buf) {
                assert!(round % 3 != 0, "round {round}: an invalidated copy came back");
                assert_eq!(buf[PAGE_SIZE - 1], (round % 250) as u8, "round {round}: stale");
            }
        }
    }

    #[test]
    fn a_damaged_slot_is_detected_and_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bpe");
        let ext = Extension::create(&path, 8 * PAGE_SIZE as u64).unwrap();
        ext.stage(key(FileId(1), PageNo::from_raw(5)), &image(5, 7));
        ext.drain();
        // Damage every slot behind the extension's back.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        for s in 0..8u64 {
            std::os::unix::fs::FileExt::write_all_at(&f, &[0xAB; 64], s * PAGE_SIZE as u64 + 100).unwrap();
        }
        let mut buf = AlignedBuf::new(PAGE_SIZE);
        assert!(!ext.read(key(FileId(1), PageNo::from_raw(5)), &mut buf), "checksum failure: not used");
        assert_eq!(ext.stats().damaged, 1);
        assert_eq!(ext.stats().used, 0, "and forgotten");
    }
}
