use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use proptest::prelude::*;
use tessera_errors::{Error, Result};
use tessera_io::{DataFile, OpenMode};

use super::evict::{Evict, BEFORE_CLAIM};
use super::fetch::{STALE_PINS, WIDEN_RACES};
use super::frame::{Kind, State, MAX_USAGE};
use super::table::key;
use super::*;
use crate::page::{self, HEADER_SIZE, PAGE_SIZE};

/// Page `n` (the tests name pages by number).
fn pg(n: u32) -> PageNo {
    PageNo::from_raw(n)
}

// ----- a file-backed store that records what the pool asks of it ---------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Read(PageNo),
    /// A multi-page read: first page, count.
    ReadRun(PageNo, usize),
    FlushLog(u64),
    Write(PageNo, u64),
    Sync,
}

struct FileStore {
    file: DataFile,
    name: String,
    calls: Mutex<Vec<Call>>,
    record: bool,
    flushed: AtomicU64,
    reads: AtomicU64,
    read_delay: Duration,
    fail_writes: AtomicBool,
}

impl FileStore {
    fn create(path: &Path) -> Arc<FileStore> {
        Self::open(path, OpenMode::CreateNew)
    }
    fn open(path: &Path, mode: OpenMode) -> Arc<FileStore> {
        Arc::new(FileStore {
            file: DataFile::open(path, mode, false).unwrap(),
            name: "testdb".into(),
            calls: Mutex::new(Vec::new()),
            record: true,
            flushed: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            read_delay: Duration::ZERO,
            fail_writes: AtomicBool::new(false),
        })
    }
    fn calls(&self) -> Vec<Call> {
        self.calls.lock().clone()
    }
    fn note(&self, c: Call) {
        if self.record {
            self.calls.lock().push(c);
        }
    }
}

/// Reads page `no` straight from the file (zeros beyond its end).
fn read_disk(file: &DataFile, no: PageNo) -> Vec<u8> {
    let mut buf = vec![0u8; PAGE_SIZE];
    let mut done = 0;
    while done < PAGE_SIZE {
        let n = file.read_at(&mut buf[done..], no.byte_offset() + done as u64).unwrap();
        if n == 0 {
            break;
        }
        done += n;
    }
    buf
}

impl PageStore for FileStore {
    fn read_page(&self, no: PageNo, buf: &mut [u8]) -> Result<()> {
        assert_eq!(buf.len(), PAGE_SIZE);
        assert_eq!(buf.as_ptr() as usize % 4096, 0, "read buffer not aligned");
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.note(Call::Read(no));
        if !self.read_delay.is_zero() {
            std::thread::sleep(self.read_delay);
        }
        buf.copy_from_slice(&read_disk(&self.file, no));
        Ok(())
    }
    fn read_pages(&self, first: PageNo, bufs: &mut [&mut [u8]]) -> Result<()> {
        assert!(bufs.iter().all(|b| b.len() == PAGE_SIZE && (b.as_ptr() as usize).is_multiple_of(4096)));
        self.reads.fetch_add(bufs.len() as u64, Ordering::SeqCst);
        self.note(Call::ReadRun(first, bufs.len()));
        for (no, buf) in first.onward().zip(bufs.iter_mut()) {
            buf.copy_from_slice(&read_disk(&self.file, no));
        }
        Ok(())
    }
    fn write_page(&self, no: PageNo, buf: &[u8]) -> Result<()> {
        assert_eq!(buf.as_ptr() as usize % 4096, 0, "write buffer not aligned");
        let lsn = page::lsn(buf).raw();
        assert!(
            lsn <= self.flushed.load(Ordering::SeqCst),
            "WAL rule broken: page {no} lsn {lsn} written before the log"
        );
        assert_eq!(page::verify(buf, no), Ok(()), "page {no} written unsealed");
        if self.fail_writes.load(Ordering::SeqCst) {
            return Err(Error::io("write", self.file.path(), no.byte_offset(), std::io::Error::from_raw_os_error(5)));
        }
        self.note(Call::Write(no, lsn));
        self.file.write_all_at(buf, no.byte_offset())
    }
    fn flush_log_to(&self, lsn: Lsn) -> Result<()> {
        self.flushed.fetch_max(lsn.raw(), Ordering::SeqCst);
        self.note(Call::FlushLog(lsn.raw()));
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        self.note(Call::Sync);
        self.file.sync_data()
    }
    fn database_name(&self) -> &str {
        &self.name
    }
    fn path(&self) -> &Path {
        self.file.path()
    }
}

/// A store with nothing behind it: reads zeros, drops writes.
struct NullStore;

impl PageStore for NullStore {
    fn read_page(&self, _: PageNo, buf: &mut [u8]) -> Result<()> {
        buf.fill(0);
        Ok(())
    }
    fn write_page(&self, _: PageNo, _: &[u8]) -> Result<()> {
        Ok(())
    }
    fn flush_log_to(&self, _: Lsn) -> Result<()> {
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        Ok(())
    }
    fn database_name(&self) -> &str {
        "null"
    }
    fn path(&self) -> &Path {
        Path::new("/dev/null")
    }
}

fn pool(frames: usize, writer: bool) -> Arc<BufferPool> {
    BufferPool::new(PoolConfig { max_bytes: frames * PAGE_SIZE, background_writer: writer, ..PoolConfig::default() })
        .unwrap()
}

/// Fills a page the way the tests expect to find it: header page_no and lsn, body pattern.
fn fill(p: &mut [u8], no: PageNo, lsn: u64, seed: u8) {
    page::set_page_no(p, no);
    page::set_lsn(p, Lsn::from_raw(lsn));
    for (j, b) in p[HEADER_SIZE..].iter_mut().enumerate() {
        *b = seed ^ (j as u8) ^ (no.raw() as u8);
    }
}

fn check(p: &[u8], no: PageNo, lsn: u64, seed: u8) {
    assert_eq!(page::page_no(p), no, "page_no of page {no}");
    assert_eq!(page::lsn(p).raw(), lsn, "lsn of page {no}");
    for (j, &b) in p[HEADER_SIZE..].iter().enumerate() {
        assert_eq!(b, seed ^ (j as u8) ^ (no.raw() as u8), "page {no} byte {}", j + HEADER_SIZE);
    }
}

fn write_page(pool: &BufferPool, f: FileId, no: PageNo, lsn: u64, seed: u8) {
    let h = pool.fetch(f, no).unwrap();
    let mut w = h.write();
    fill(&mut w, no, lsn, seed);
    w.mark_dirty();
}

// ----- tests ---------------------------------------------------------------------------------

#[test]
fn tiny_pool_evicts_and_reads_back_1000_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::create(&dir.path().join("a.dat"));
    let pool = pool(16, false);
    let f = pool.register(store.clone());
    for no in 0..1000 {
        let h = pool.fetch_new(f, pg(no)).unwrap();
        let mut w = h.write();
        fill(&mut w, pg(no), 10 + u64::from(no), 7);
        w.mark_dirty();
    }
    let s = pool.stats();
    assert!(s.resident_pages <= 16 && s.capacity_pages == 16, "{s:?}");
    assert!(s.evictions >= 984 && s.writes >= 984, "{s:?}");
    pool.inner.check_invariants(true);
    for no in (0..1000).rev() {
        let h = pool.fetch(f, pg(no)).unwrap();
        check(&h.read(), pg(no), 10 + u64::from(no), 7);
    }
    let s = pool.stats();
    assert!(s.reads >= 984, "{s:?}");
    assert_eq!(s.misses, s.reads + 1000, "fetch_new misses do not read");
    pool.inner.check_invariants(true);
    pool.unregister(f).unwrap();
    assert_eq!(pool.stats().resident_pages, 0);
    pool.inner.check_invariants(true);
}

#[test]
fn dirty_eviction_flushes_the_log_to_the_page_lsn_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::create(&dir.path().join("a.dat"));
    let pool = pool(4, false);
    let f = pool.register(store.clone());
    for no in 0..12 {
        let h = pool.fetch_new(f, pg(no)).unwrap();
        let mut w = h.write();
        fill(&mut w, pg(no), 1000 + u64::from(no) * 3, 1);
        w.mark_dirty();
    }
    let calls = store.calls();
    let writes: Vec<(usize, PageNo, u64)> = calls
        .iter()
        .enumerate()
        .filter_map(|(j, c)| if let Call::Write(no, l) = c { Some((j, *no, *l)) } else { None })
        .collect();
    assert_eq!(writes.len(), 8, "{calls:?}");
    for (j, no, lsn) in writes {
        assert_eq!(lsn, 1000 + u64::from(no.raw()) * 3);
        assert_eq!(calls[j - 1], Call::FlushLog(lsn), "write of page {no} not preceded by its log flush: {calls:?}");
    }
    // A clean eviction neither flushes the log nor writes.
    pool.flush_file(f).unwrap();
    let before = store.calls().len();
    for no in 0..4 {
        drop(pool.fetch(f, pg(100 + no)).unwrap());
    }
    assert!(store.calls()[before..].iter().all(|c| matches!(c, Call::Read(_))), "{:?}", &store.calls()[before..]);
}

#[test]
fn flush_file_writes_every_dirty_page_then_syncs() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::create(&dir.path().join("a.dat"));
    let pool = pool(64, false);
    let f = pool.register(store.clone());
    for no in 0..30 {
        let h = pool.fetch_new(f, pg(no)).unwrap();
        let mut w = h.write();
        fill(&mut w, pg(no), 5, 3);
        if no % 3 != 0 {
            w.mark_dirty();
        }
    }
    assert_eq!(pool.stats().dirty_pages, 20);
    // A reader holding a shared latch does not stop the checkpoint.
    let reader = pool.fetch(f, pg(1)).unwrap();
    let r = reader.read();
    pool.flush_file(f).unwrap();
    drop(r);
    drop(reader);
    let s = pool.stats();
    assert_eq!((s.dirty_pages, s.writes), (0, 20), "{s:?}");
    let calls = store.calls();
    assert_eq!(calls.last(), Some(&Call::Sync));
    for no in (0..30).filter(|n| n % 3 != 0) {
        check(&read_disk(&store.file, pg(no)), pg(no), 5, 3);
        assert_eq!(page::verify(&read_disk(&store.file, pg(no)), pg(no)), Ok(()));
    }
    pool.flush_file(f).unwrap();
    assert_eq!(pool.stats().writes, 20, "second flush has nothing to write");
    // Re-dirtied pages are written again.
    write_page(&pool, f, pg(4), 6, 9);
    pool.flush_all().unwrap();
    assert_eq!(pool.stats().writes, 21);
    check(&read_disk(&store.file, pg(4)), pg(4), 6, 9);
    pool.inner.check_invariants(true);
}

#[test]
fn unregister_writes_and_forgets_discard_forgets_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dat");
    let store = FileStore::create(&path);
    let pool = pool(32, false);
    let f = pool.register(store.clone());
    for no in 0..10 {
        write_page(&pool, f, pg(no), 20, 4);
    }
    pool.unregister(f).unwrap();
    assert_eq!(pool.stats().resident_pages, 0);
    assert_eq!(pool.stats().dirty_pages, 0);
    assert_eq!(pool.fetch(f, PageNo::NONE).unwrap_err().number(), 50000);
    assert!(pool.flush_file(f).is_err());
    for no in 0..10 {
        check(&read_disk(&store.file, pg(no)), pg(no), 20, 4);
    }
    // Discard drops unwritten changes.
    let g = pool.register(FileStore::open(&path, OpenMode::Existing));
    assert_ne!(f, g);
    for no in 0..10 {
        write_page(&pool, g, pg(no), 30, 5);
    }
    let pinned = pool.fetch(g, pg(3)).unwrap();
    pool.discard(g);
    let s = pool.stats();
    assert_eq!(s.resident_pages, 0, "{s:?}");
    assert_eq!(s.dirty_pages, 1, "the pinned page is only freed on unpin: {s:?}");
    assert_eq!(page::lsn(&pinned.read()).raw(), 30, "a pinned page stays readable");
    drop(pinned);
    assert_eq!(pool.stats().dirty_pages, 0);
    pool.inner.check_invariants(true);
    for no in 0..10 {
        check(&read_disk(&store.file, pg(no)), pg(no), 20, 4);
    }
    let h = pool.register(FileStore::open(&path, OpenMode::Existing));
    for no in 0..10 {
        check(&pool.fetch(h, pg(no)).unwrap().read(), pg(no), 20, 4);
    }
    pool.discard(h);
    pool.discard(h); // twice is harmless
                     // The freed frames are reused.
    let k = pool.register(Arc::new(NullStore));
    for no in 0..32 {
        drop(pool.fetch_new(k, pg(no)).unwrap());
    }
    assert_eq!(pool.stats().evictions, 0);
    pool.inner.check_invariants(true);
}

#[test]
fn corrupt_page_is_error_824_and_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.dat");
    let store = FileStore::create(&path);
    let pool = pool(32, false);
    let f = pool.register(store.clone());
    for no in 0..8 {
        write_page(&pool, f, pg(no), 40, 6);
    }
    pool.unregister(f).unwrap();
    // Flip one bit of page 3, and put page 5's image where page 6 belongs.
    let mut p3 = read_disk(&store.file, pg(3));
    p3[5000] ^= 0x10;
    store.file.write_all_at(&p3, 3 * PAGE_SIZE as u64).unwrap();
    store.file.write_all_at(&read_disk(&store.file, pg(5)), 6 * PAGE_SIZE as u64).unwrap();

    let f = pool.register(FileStore::open(&path, OpenMode::Existing));
    let resident = pool.stats().resident_pages;
    for _ in 0..2 {
        let err = pool.fetch(f, pg(3)).unwrap_err();
        assert_eq!(err.number(), 824);
        match &err {
            Error::Corrupt { database, path: p, page, detail } => {
                assert_eq!((database.as_str(), p.as_path(), *page), ("testdb", path.as_path(), 3));
                assert!(detail.contains("checksum"), "{detail}");
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains("(1:3)") && msg.contains("testdb") && msg.contains("bad.dat"), "{msg}");
        assert_eq!(pool.stats().resident_pages, resident, "a corrupt page must not stay cached");
    }
    let err = pool.fetch(f, pg(6)).unwrap_err();
    assert_eq!(err.number(), 824);
    assert!(err.to_string().contains("pageid"), "{err}");
    for no in [0, 1, 2, 4, 5, 7] {
        check(&pool.fetch(f, pg(no)).unwrap().read(), pg(no), 40, 6);
    }
    pool.inner.check_invariants(true);
}

#[test]
fn all_frames_pinned_is_pool_exhausted_not_a_hang() {
    let pool = pool(4, true);
    let f = pool.register(Arc::new(NullStore));
    let held: Vec<PageHandle> = (0..4).map(|no| pool.fetch(f, pg(no)).unwrap()).collect();
    let _latched: Vec<PageWrite<'_>> = held.iter().map(|h| h.write()).collect();
    let t = Instant::now();
    assert_eq!(pool.fetch(f, pg(4)).unwrap_err().number(), 802);
    assert_eq!(pool.fetch_new(f, pg(5)).unwrap_err().number(), 802);
    assert!(t.elapsed() < Duration::from_secs(2));
    // A page already cached is still a hit.
    let again = pool.fetch(f, pg(2)).unwrap();
    assert_eq!(again.page_no(), pg(2));
    drop(again);
    drop(_latched);
    drop(held);
    assert_eq!(pool.fetch(f, pg(4)).unwrap().page_no(), pg(4));
    pool.inner.check_invariants(true);
}

/// A page being written out is pinned only for a moment: a fetch that finds every other
/// frame held waits for that pin to go (the write-out's frame is then the victim) instead
/// of failing with 802. Before `PassingPin`, only read-ahead's pins were waited for.
#[test]
fn a_fetch_waits_for_a_write_out_rather_than_fail() {
    let pool = pool(2, false);
    let f = pool.register(Arc::new(NullStore));
    let _held = pool.fetch(f, pg(0)).unwrap();
    drop(pool.fetch(f, pg(1)).unwrap());
    let entry = pool.inner.entry(f).unwrap();
    let write_out = pool.inner.pin_page(&entry, pg(1)).unwrap();
    std::thread::scope(|s| {
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(write_out);
        });
        let h = pool.fetch(f, pg(2)).unwrap();
        assert_eq!(h.page_no(), pg(2));
    });
    pool.inner.check_invariants(false);
}

#[test]
fn write_errors_surface_and_pages_stay_dirty() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::create(&dir.path().join("a.dat"));
    let pool = pool(4, false);
    let f = pool.register(store.clone());
    for no in 0..4 {
        write_page(&pool, f, pg(no), 50, 2);
    }
    store.fail_writes.store(true, Ordering::SeqCst);
    assert_eq!(pool.fetch(f, pg(10)).unwrap_err().number(), 823);
    assert_eq!(pool.flush_file(f).unwrap_err().number(), 823);
    assert_eq!(pool.unregister(f).unwrap_err().number(), 823);
    assert_eq!(pool.stats().dirty_pages, 4);
    pool.inner.check_invariants(true);
    store.fail_writes.store(false, Ordering::SeqCst);
    drop(pool.fetch(f, pg(10)).unwrap());
    pool.unregister(f).unwrap();
    for no in 0..4 {
        check(&read_disk(&store.file, pg(no)), pg(no), 50, 2);
    }
}

/// A store whose callbacks panic while `panic` is set.
struct PanicStore {
    panic: AtomicBool,
}

impl PageStore for PanicStore {
    fn read_page(&self, no: PageNo, buf: &mut [u8]) -> Result<()> {
        assert!(!self.panic.load(Ordering::SeqCst), "store bug while reading page {no}");
        buf.fill(0);
        Ok(())
    }
    fn write_page(&self, no: PageNo, _: &[u8]) -> Result<()> {
        assert!(!self.panic.load(Ordering::SeqCst), "store bug while writing page {no}");
        Ok(())
    }
    fn flush_log_to(&self, _: Lsn) -> Result<()> {
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        Ok(())
    }
    fn database_name(&self) -> &str {
        "panicky"
    }
    fn path(&self) -> &Path {
        Path::new("/dev/null")
    }
}

#[test]
fn a_panicking_store_leaves_the_pool_usable() {
    let store = Arc::new(PanicStore { panic: AtomicBool::new(false) });
    let pool = pool(8, false);
    let f = pool.register(store.clone());
    write_page(&pool, f, pg(1), 3, 3);
    store.panic.store(true, Ordering::SeqCst);
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.fetch(f, pg(2)).map(|_| ())));
    let flush = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.flush_file(f)));
    assert!(read.is_err() && flush.is_err());
    pool.inner.check_invariants(true);
    store.panic.store(false, Ordering::SeqCst);
    assert_eq!(pool.stats().dirty_pages, 1);
    pool.flush_file(f).unwrap();
    assert_eq!(pool.stats().dirty_pages, 0);
    drop(pool.fetch(f, pg(2)).unwrap());
    pool.inner.check_invariants(true);
}

#[test]
fn concurrent_misses_on_one_page_share_one_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dat");
    let mut store = FileStore::create(&path);
    Arc::get_mut(&mut store).unwrap().read_delay = Duration::from_millis(100);
    let pool = pool(8, false);
    let f = pool.register(store.clone());
    let barrier = Barrier::new(3);
    let ptrs: Vec<usize> = std::thread::scope(|s| {
        let ts: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let h = pool.fetch(f, pg(7)).unwrap();
                    let p = h.read().as_ptr() as usize;
                    p
                })
            })
            .collect();
        ts.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(store.reads.load(Ordering::SeqCst), 1);
    assert!(ptrs.iter().all(|&p| p == ptrs[0]));
    let s = pool.stats();
    assert_eq!((s.misses, s.hits, s.resident_pages), (1, 2, 1), "{s:?}");
    pool.inner.check_invariants(true);
}

#[test]
fn four_threads_hammer_overlapping_pages() {
    const PAGES: u32 = 40;
    const THREADS: u64 = 4;
    const OPS: u64 = 2500;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dat");
    let mut store = FileStore::create(&path);
    Arc::get_mut(&mut store).unwrap().record = false;
    let pool = pool(16, true);
    let f = pool.register(store.clone());
    let lsn = &AtomicU64::new(1);
    let done = AtomicBool::new(false);
    let counter = |p: &[u8]| u64::from_le_bytes(p[HEADER_SIZE..HEADER_SIZE + 8].try_into().unwrap());
    let bump = |h: &PageHandle| {
        let mut w = h.write();
        let c = counter(&w) + 1;
        w[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&c.to_le_bytes());
        page::set_page_no(&mut w, h.page_no());
        page::set_lsn(&mut w, Lsn::from_raw(lsn.fetch_add(1, Ordering::SeqCst)));
        w.mark_dirty();
    };
    let increments: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, bump) = (&pool, &bump);
                s.spawn(move || {
                    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    let mut next = move || {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        rng
                    };
                    let mut incs = 0;
                    for _ in 0..OPS {
                        let r = next();
                        let a = (r % u64::from(PAGES)) as u32;
                        match (r >> 32) % 6 {
                            0 => {
                                // Two pins and two exclusive latches at once, in page order.
                                let b = (a + 1 + ((r >> 40) % 5) as u32) % PAGES;
                                let (lo, hi) = (a.min(b), a.max(b));
                                let hl = pool.fetch(f, pg(lo)).unwrap();
                                let hh = pool.fetch(f, pg(hi)).unwrap();
                                let mut wl = hl.write();
                                let mut wh = hh.write();
                                for (w, no) in [(&mut wl, lo), (&mut wh, hi)] {
                                    let c = counter(w) + 1;
                                    w[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&c.to_le_bytes());
                                    page::set_page_no(w, pg(no));
                                    page::set_lsn(w, Lsn::from_raw(lsn.fetch_add(1, Ordering::SeqCst)));
                                    w.mark_dirty();
                                }
                                incs += 2;
                            }
                            1 | 2 => {
                                let h = pool.fetch(f, pg(a)).unwrap();
                                let r = h.read();
                                assert!(
                                    page::page_no(&r) == pg(a) || counter(&r) == 0,
                                    "page {a} holds {}",
                                    page::page_no(&r)
                                );
                            }
                            _ => {
                                bump(&pool.fetch(f, pg(a)).unwrap());
                                incs += 1;
                            }
                        }
                    }
                    incs
                })
            })
            .collect();
        let checkpointer = s.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                pool.flush_file(f).unwrap();
                let _ = pool.stats();
                std::thread::sleep(Duration::from_millis(3));
            }
        });
        let total = workers.into_iter().map(|w| w.join().unwrap()).sum();
        done.store(true, Ordering::SeqCst);
        checkpointer.join().unwrap();
        total
    });
    let sum: u64 = (0..PAGES).map(|no| counter(&pool.fetch(f, pg(no)).unwrap().read())).sum();
    assert_eq!(sum, increments);
    pool.inner.check_invariants(true);
    pool.unregister(f).unwrap();
    let g = pool.register(FileStore::open(&path, OpenMode::Existing));
    let sum: u64 = (0..PAGES).map(|no| counter(&pool.fetch(g, pg(no)).unwrap().read())).sum();
    assert_eq!(sum, increments, "totals on disk");
    let s = pool.stats();
    assert!(s.evictions > 0 && s.writes > 0, "{s:?}");
}

#[test]
fn shrink_then_grow_keeps_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::create(&dir.path().join("a.dat"));
    let pool = pool(64, false);
    let f = pool.register(store.clone());
    for no in 0..64 {
        let h = pool.fetch_new(f, pg(no)).unwrap();
        let mut w = h.write();
        fill(&mut w, pg(no), 70, 8);
        w.mark_dirty();
    }
    assert_eq!(pool.stats().resident_pages, 64);
    assert!(pool.set_max_bytes(65 * PAGE_SIZE).is_err(), "cannot exceed the reservation");
    assert!(pool.set_max_bytes(100).is_err());
    pool.set_max_bytes(16 * PAGE_SIZE).unwrap();
    let s = pool.stats();
    assert_eq!((s.capacity_pages, s.resident_pages), (16, 16), "{s:?}");
    assert_eq!(s.dirty_pages, 16, "only evicted pages were written: {s:?}");
    assert_eq!(pool.max_bytes(), 16 * PAGE_SIZE);
    pool.inner.check_invariants(true);
    for no in 0..64 {
        check(&pool.fetch(f, pg(no)).unwrap().read(), pg(no), 70, 8);
        assert!(pool.stats().resident_pages <= 16);
    }
    pool.inner.check_invariants(true);
    // A page pinned beyond the new limit stays until it is unpinned.
    pool.set_max_bytes(64 * PAGE_SIZE).unwrap();
    let held: Vec<PageHandle> = (100..164).map(|no| pool.fetch_new(f, pg(no)).unwrap()).collect();
    assert_eq!(pool.stats().resident_pages, 64);
    let keep = held.iter().find(|h| h.idx >= 8).map(|h| h.page_no()).unwrap();
    let pinned = pool.fetch(f, keep).unwrap();
    drop(held);
    pool.set_max_bytes(8 * PAGE_SIZE).unwrap();
    assert_eq!(pool.stats().resident_pages, 9, "8 frames plus the pinned straggler");
    pool.inner.check_invariants(false);
    drop(pinned);
    // The clock retires the straggler once it is unpinned.
    for no in 200..240 {
        drop(pool.fetch_new(f, pg(no)).unwrap());
    }
    assert!(pool.stats().resident_pages <= 8);
    pool.inner.check_invariants(true);
    pool.set_max_bytes(32 * PAGE_SIZE).unwrap();
    for no in 0..64 {
        check(&pool.fetch(f, pg(no)).unwrap().read(), pg(no), 70, 8);
    }
    assert_eq!(pool.stats().resident_pages, 32);
    pool.inner.check_invariants(true);
}

#[test]
fn a_scan_does_not_evict_hot_pages() {
    let pool = pool(16, false);
    let f = pool.register(Arc::new(NullStore));
    for _ in 0..6 {
        for no in 0..5 {
            drop(pool.fetch(f, pg(no)).unwrap());
        }
    }
    for no in 1000..1500 {
        drop(pool.fetch(f, pg(no)).unwrap());
    }
    let before = pool.stats();
    for no in 0..5 {
        drop(pool.fetch(f, pg(no)).unwrap());
    }
    let after = pool.stats();
    assert_eq!((after.hits - before.hits, after.reads - before.reads), (5, 0), "{before:?} {after:?}");
    // Once the hot pages stop being used, the clock ages them out when it needs room.
    for no in 2000..2100 {
        for _ in 0..2 {
            drop(pool.fetch(f, pg(no)).unwrap());
        }
    }
    let before = pool.stats();
    for no in 0..5 {
        drop(pool.fetch(f, pg(no)).unwrap());
    }
    assert_eq!(pool.stats().reads - before.reads, 5);
    pool.inner.check_invariants(true);
}

#[test]
fn background_writer_cleans_cold_dirty_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::create(&dir.path().join("a.dat"));
    let pool = pool(32, true);
    let f = pool.register(store.clone());
    for no in 0..32 {
        let h = pool.fetch_new(f, pg(no)).unwrap();
        let mut w = h.write();
        fill(&mut w, pg(no), 90, 1);
        w.mark_dirty();
    }
    let t = Instant::now();
    while pool.stats().dirty_pages > 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = pool.stats();
    assert_eq!((s.dirty_pages, s.writes, s.evictions), (0, 32, 0), "{s:?}");
    for no in 0..32 {
        check(&read_disk(&store.file, pg(no)), pg(no), 90, 1);
    }
    pool.inner.check_invariants(true);
    let t = Instant::now();
    drop(pool);
    assert!(t.elapsed() < Duration::from_secs(1), "dropping the pool stops the writer promptly");
}

#[test]
fn fill_256_mib_then_drop() {
    let frames = (256 << 20) / PAGE_SIZE;
    let pool = pool(frames, true);
    let f = pool.register(Arc::new(NullStore));
    for no in 0..frames as u32 {
        let h = pool.fetch_new(f, pg(no)).unwrap();
        let mut w = h.write();
        w[100] = no as u8;
        if no % 2 == 0 {
            w.mark_dirty();
        }
    }
    let s = pool.stats();
    assert_eq!((s.resident_pages, s.evictions), (frames as u64, 0), "{s:?}");
    drop(pool.fetch_new(f, pg(frames as u32)).unwrap());
    assert_eq!(pool.stats().evictions, 1);
    let t = Instant::now();
    drop(pool);
    eprintln!("dropped a 256 MiB pool in {:?}", t.elapsed());
}

#[test]
fn handles_outlive_the_pool_object() {
    let pool = pool(8, true);
    let f = pool.register(Arc::new(NullStore));
    let h = pool.fetch_new(f, pg(1)).unwrap();
    drop(pool);
    h.write()[200] = 1;
    assert_eq!(h.read()[200], 1);
}

#[test]
fn zero_sized_pool_is_rejected() {
    assert!(BufferPool::new(PoolConfig { max_bytes: 100, background_writer: false, ..PoolConfig::default() }).is_err());
    let d = PoolConfig::default();
    assert!(d.max_bytes >= 16 << 20 && d.background_writer);
}

#[test]
fn guards_and_handles_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<PageHandle>();
    both::<BufferPool>();
    both::<PageRead<'static>>();
    both::<PageReadGuard>();
    both::<PageWriteGuard>();
}

#[test]
fn owned_guards_hold_pin_and_latch() {
    let pool = pool(4, false);
    let f = pool.register(Arc::new(NullStore));
    let mut guards: Vec<PageWriteGuard> = (0..4).map(|no| pool.fetch_new(f, pg(no)).unwrap().into_write()).collect();
    for g in guards.iter_mut() {
        let no = g.page_no();
        fill(g, no, 7, 1);
        g.mark_dirty();
    }
    assert_eq!(pool.stats().dirty_pages, 4);
    assert_eq!(pool.fetch(f, pg(9)).unwrap_err().number(), 802);
    drop(guards);
    let r = pool.fetch(f, pg(2)).unwrap().into_read();
    let r2 = pool.fetch(f, pg(2)).unwrap().into_read();
    check(&r, pg(2), 7, 1);
    assert_eq!((r2.page_no(), r2.file()), (pg(2), f));
    drop((r, r2));
    pool.inner.check_invariants(true);
}

// ----- the lock-free hit path ------------------------------------------------------------------

/// A store whose pages are a pattern of its tag and the page number (sealed, so they pass
/// `page::verify`); writes are dropped. A page of the wrong file or number shows at once.
struct PatternStore {
    tag: u8,
}

impl PageStore for PatternStore {
    fn read_page(&self, no: PageNo, buf: &mut [u8]) -> Result<()> {
        fill(buf, no, 1, self.tag);
        page::seal(buf);
        Ok(())
    }
    fn write_page(&self, _: PageNo, _: &[u8]) -> Result<()> {
        Ok(())
    }
    fn flush_log_to(&self, _: Lsn) -> Result<()> {
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        Ok(())
    }
    fn database_name(&self) -> &str {
        "pattern"
    }
    fn path(&self) -> &Path {
        Path::new("/dev/null")
    }
}

/// Sets the flag when dropped, also while unwinding, so that a failing thread stops the
/// others instead of leaving the test hanging.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ seed.wrapping_add(1).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

#[test]
fn hits_take_the_lock_free_path_and_stale_translations_are_refused() {
    let pool = pool(8, false);
    let f = pool.register(Arc::new(PatternStore { tag: 3 }));
    let inner = &pool.inner;
    let i = pool.fetch(f, pg(1)).unwrap().idx;
    let radix = inner.entry(f).unwrap().radix;
    let state = |i: u32| inner.frame(i).state.load(Ordering::SeqCst);

    // A resident, valid page is pinned without the shard mutex.
    {
        let _g = inner.shard(key(f, pg(1))).0.lock();
        assert_eq!(inner.pin_fast(f, pg(1), key(f, pg(1))), Some(i));
        inner.unpin(i);
    }
    let h = pool.fetch(f, pg(1)).unwrap();
    assert_eq!(h.idx, i);
    check(&h.read(), pg(1), 1, 3);
    drop(h);
    // A translation pointing at a frame that holds another page (as a reader that loaded
    // it before the frame was evicted and reused would see) pins nothing.
    radix.get().entry_or_grow(pg(2)).store(i + 1, Ordering::SeqCst);
    let before = state(i);
    assert_eq!(inner.pin_fast(f, pg(2), key(f, pg(2))), None);
    assert_eq!(state(i), before, "no pin and no usage bump left behind");
    radix.get().entry(pg(2)).unwrap().store(0, Ordering::SeqCst);
    // Nor does one pointing at a frame that is being evicted (Owned), even if it still
    // carries the right key.
    assert_eq!(inner.try_evict(i, true).unwrap(), Evict::Done { wrote: false });
    radix.get().entry(pg(1)).unwrap().store(i + 1, Ordering::SeqCst);
    assert_eq!(inner.pin_fast(f, pg(1), key(f, pg(1))), None);
    assert_eq!(State(state(i)), State::new(Kind::Owned, 0, 0), "an owned frame is never pinned");
    radix.get().entry(pg(1)).unwrap().store(0, Ordering::SeqCst);
    inner.free_frame(i);
    inner.check_invariants(true);
    // Nor does a Loading frame: the locked path waits for the loader instead.
    let h = pool.fetch(f, pg(1)).unwrap();
    let j = h.idx;
    drop(h);
    let valid = state(j);
    inner.frame(j).state.store(State(valid).with_kind(Kind::Loading).0, Ordering::SeqCst);
    assert_eq!(inner.pin_fast(f, pg(1), key(f, pg(1))), None);
    inner.frame(j).state.store(valid, Ordering::SeqCst);
    // An unregistered file, or a page never loaded, is not found either.
    assert_eq!(inner.pin_fast(FileId(f.0 + 1), pg(1), key(FileId(f.0 + 1), pg(1))), None);
    assert_eq!(inner.pin_fast(f, pg(7), key(f, pg(7))), None);
    let s = pool.stats();
    assert_eq!((s.hits, s.misses), (1, 2), "{s:?}");
    inner.check_invariants(true);
}

#[test]
fn eviction_rechecks_the_dirty_word_after_claiming_the_frame() {
    let pool = pool(8, false);
    let f = pool.register(Arc::new(PatternStore { tag: 5 }));
    for _ in 0..MAX_USAGE + 2 {
        drop(pool.fetch(f, pg(1)).unwrap());
    }
    let i = pool.fetch(f, pg(1)).unwrap().idx;
    let state = || State(pool.inner.frame(i).state.load(Ordering::SeqCst));
    let before = state();
    assert_eq!((before.kind(), before.pins(), before.usage()), (Kind::Valid, 0, MAX_USAGE));
    // Between the evictor's checks and its claim, a hit-path pin comes and goes and
    // modifies the page. The usage count is saturated, so the state word ends as it was
    // and the claim succeeds: only the second look at the dirty word can notice.
    let p = Arc::clone(&pool);
    BEFORE_CLAIM.with(|h| {
        *h.borrow_mut() = Some(Box::new(move || {
            let h = p.fetch(f, pg(1)).unwrap();
            let mut w = h.write();
            fill(&mut w, pg(1), 9, 6);
            w.mark_dirty();
        }))
    });
    assert_eq!(pool.inner.try_evict(i, true).unwrap(), Evict::Skipped);
    assert_eq!(state(), before, "the claim is undone");
    assert_eq!(pool.stats().dirty_pages, 1);
    check(&pool.fetch(f, pg(1)).unwrap().read(), pg(1), 9, 6);
    pool.inner.check_invariants(true);
    // Left alone, the evictor writes the page, then evicts it.
    assert_eq!(pool.inner.try_evict(i, true).unwrap(), Evict::Done { wrote: true });
    pool.inner.free_frame(i);
    let s = pool.stats();
    assert_eq!((s.dirty_pages, s.writes, s.evictions, s.resident_pages), (0, 1, 1, 0), "{s:?}");
    pool.inner.check_invariants(true);
}

#[test]
fn concurrent_fetches_race_eviction_of_the_same_pages() {
    const PAGES: u32 = 48;
    const THREADS: u64 = 3;
    const OPS: u64 = 6000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dat");
    let mut store = FileStore::create(&path);
    Arc::get_mut(&mut store).unwrap().record = false;
    let pool = pool(8, false);
    let f = pool.register(store.clone());
    let lsn = &AtomicU64::new(1);
    // Body: an 8-byte counter, then a pattern of the page number.
    let counter = |p: &[u8]| u64::from_le_bytes(p[HEADER_SIZE..HEADER_SIZE + 8].try_into().unwrap());
    let verify = |p: &[u8], no: PageNo| {
        assert_eq!(page::page_no(p), no, "fetched page {no}, got page {}", page::page_no(p));
        for j in 8..256 {
            assert_eq!(p[HEADER_SIZE + j], (no.raw() as u8) ^ (j as u8), "page {no} byte {j}");
        }
    };
    for no in 0..PAGES {
        let h = pool.fetch_new(f, pg(no)).unwrap();
        let mut w = h.write();
        page::set_page_no(&mut w, pg(no));
        page::set_lsn(&mut w, Lsn::from_raw(lsn.fetch_add(1, Ordering::SeqCst)));
        for j in 8..256 {
            w[HEADER_SIZE + j] = (no as u8) ^ (j as u8);
        }
        w.mark_dirty();
    }
    let done = AtomicBool::new(false);
    let increments: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let pool = &pool;
                s.spawn(move || {
                    WIDEN_RACES.with(|w| w.set(t != 0));
                    let mut next = xorshift(t);
                    let mut incs = 0;
                    for _ in 0..OPS {
                        let r = next();
                        // Mostly a few hot pages, so that hits and evictions meet on them.
                        let no = if r.is_multiple_of(4) { (r >> 8) as u32 % PAGES } else { (r >> 8) as u32 % 6 };
                        let h = loop {
                            match pool.fetch(f, pg(no)) {
                                Ok(h) => break h,
                                Err(e) if e.number() == 802 => std::thread::yield_now(),
                                Err(e) => panic!("{e}"),
                            }
                        };
                        assert_eq!(h.page_no(), pg(no));
                        if (r >> 40).is_multiple_of(3) {
                            let mut w = h.write();
                            verify(&w, pg(no));
                            let c = counter(&w) + 1;
                            w[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&c.to_le_bytes());
                            page::set_lsn(&mut w, Lsn::from_raw(lsn.fetch_add(1, Ordering::SeqCst)));
                            w.mark_dirty();
                            incs += 1;
                        } else {
                            verify(&h.read(), pg(no));
                        }
                    }
                    incs
                })
            })
            .collect();
        // Meanwhile: checkpoints, and the limit moving between 5 and 8 frames.
        let churn = s.spawn(|| {
            let mut n = 0usize;
            while !done.load(Ordering::SeqCst) {
                pool.flush_file(f).unwrap();
                pool.set_max_bytes((5 + n % 4) * PAGE_SIZE).unwrap();
                n += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let total = {
            let _stop = SetOnDrop(&done);
            workers.into_iter().map(|w| w.join().unwrap()).sum()
        };
        churn.join().unwrap();
        total
    });
    pool.inner.check_invariants(true);
    let s = pool.stats();
    eprintln!("race stats {s:?}, stale pins so far {}", STALE_PINS.load(Ordering::Relaxed));
    assert!(s.hits > 0 && s.evictions > 0, "{s:?}");
    let sum: u64 = (0..PAGES).map(|no| counter(&pool.fetch(f, pg(no)).unwrap().read())).sum();
    assert_eq!(sum, increments);
    pool.unregister(f).unwrap();
    let g = pool.register(FileStore::open(&path, OpenMode::Existing));
    let mut sum = 0;
    for no in 0..PAGES {
        let h = pool.fetch(g, pg(no)).unwrap();
        verify(&h.read(), pg(no));
        sum += counter(&h.read());
    }
    assert_eq!(sum, increments, "totals on disk");
    pool.inner.check_invariants(true);
}

#[test]
fn file_churn_never_serves_another_files_page() {
    // Readers hammer one file while another thread registers and discards files, so that
    // slot tables are replaced, radixes are recycled and frames move between files under
    // the readers' feet.
    let pool = pool(24, false);
    let reader_file = pool.register(Arc::new(PatternStore { tag: 1 }));
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..2 {
            let (pool, done) = (&pool, &done);
            s.spawn(move || {
                let mut next = xorshift(100 + t);
                while !done.load(Ordering::Relaxed) {
                    let no = (next() % 40) as u32;
                    match pool.fetch(reader_file, pg(no)) {
                        Ok(h) => check(&h.read(), pg(no), 1, 1),
                        Err(e) => assert_eq!(e.number(), 802, "{e}"),
                    }
                }
            });
        }
        let _stop = SetOnDrop(&done);
        let mut next = xorshift(7);
        for round in 0..12u32 {
            // Enough files at once to double the slot table (64 slots) in the first round.
            let files: Vec<(FileId, u8)> = (0..40u32)
                .map(|j| {
                    let tag = 2 + ((round * 40 + j) % 250) as u8;
                    (pool.register(Arc::new(PatternStore { tag })), tag)
                })
                .collect();
            for _ in 0..300 {
                let (f, tag) = files[(next() % 40) as usize];
                let no = (next() % 8) as u32;
                match pool.fetch(f, pg(no)) {
                    Ok(h) => check(&h.read(), pg(no), 1, tag),
                    Err(e) => assert_eq!(e.number(), 802, "{e}"),
                }
            }
            // Discard with a page still pinned now and then: its frame lingers as an orphan.
            let held = pool.fetch(files[0].0, PageNo::NONE).ok();
            for &(f, _) in files.iter() {
                pool.discard(f);
                assert_eq!(pool.fetch(f, PageNo::NONE).unwrap_err().number(), 50000);
            }
            if let Some(h) = held {
                check(&h.read(), PageNo::NONE, 1, files[0].1);
            }
        }
    });
    pool.inner.check_invariants(true);
    let files = pool.inner.files.read();
    assert_eq!(files.map.len(), 1);
    assert!(files.radixes.len() <= 41, "discarded files' radixes are reused: {}", files.radixes.len());
    assert!(files.tables.len() >= 2, "the slot table grew");
}

#[test]
fn many_files_get_distinct_ids_and_slots() {
    let pool = pool(64, false);
    let mut live: Vec<FileId> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for round in 0..6u32 {
        for _ in 0..150 {
            let f = pool.register(Arc::new(NullStore));
            assert!(seen.insert(f.0), "id {} reused", f.0);
            live.push(f);
        }
        for (j, &f) in live.iter().enumerate() {
            drop(pool.fetch_new(f, pg(j as u32 * 1000)).unwrap());
        }
        pool.inner.check_invariants(true);
        // Keep every third file.
        let mut j = 0;
        live.retain(|&f| {
            j += 1;
            if j % 3 == round % 3 {
                true
            } else {
                pool.discard(f);
                false
            }
        });
        pool.inner.check_invariants(true);
    }
    for &f in live.iter() {
        assert_eq!(pool.fetch(f, PageNo::NONE).unwrap().page_no(), PageNo::NONE);
    }
    pool.inner.check_invariants(true);
}

impl BufferPool {
    /// Waits until read-ahead has nothing queued or in flight (tests only).
    fn wait_read_ahead(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.inner.read_ahead.is_idle() {
            assert!(Instant::now() < deadline, "read-ahead did not finish");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

#[test]
fn read_ahead_reads_runs_that_later_fetches_hit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ra.dat");
    let store = FileStore::create(&path);
    // Read-ahead holds at most a quarter of the pool: 1024 frames leave room for all 199
    // pages at once, so no worker has to cut its run short while the others read.
    let pool = pool(1024, false);
    let f = pool.register(store.clone());
    for no in 0..200 {
        write_page(&pool, f, pg(no), 9, 3);
    }
    pool.unregister(f).unwrap();
    let f = pool.register(store.clone());
    // Page 70 is cached already: the runs go around it.
    drop(pool.fetch(f, pg(70)).unwrap());
    store.calls.lock().clear();
    let before = pool.stats();
    let pages: Vec<PageNo> = (0..200).map(pg).collect();
    assert_eq!(pool.read_ahead(f, &pages), 199);
    pool.wait_read_ahead();
    let mut runs: Vec<Call> = store.calls();
    runs.sort_by_key(|c| match c {
        Call::ReadRun(first, _) => *first,
        _ => panic!("read-ahead made {c:?}"),
    });
    assert_eq!(
        runs,
        vec![
            Call::ReadRun(PageNo::NONE, 64),
            Call::ReadRun(pg(64), 6),
            Call::ReadRun(pg(71), 64),
            Call::ReadRun(pg(135), 64),
            Call::ReadRun(pg(199), 1)
        ]
    );
    let s = pool.stats();
    assert_eq!((s.read_ahead_pages, s.misses), (199, before.misses), "{s:?}");
    for no in 0..200 {
        check(&pool.fetch(f, pg(no)).unwrap().read(), pg(no), 9, 3);
    }
    assert_eq!(pool.stats().misses, before.misses, "every page was read ahead");
    // Asking again for cached pages queues nothing.
    assert_eq!(pool.read_ahead(f, &pages), 0);
    // A backward scan asks for descending pages: one run all the same.
    pool.unregister(f).unwrap();
    let f = pool.register(store.clone());
    store.calls.lock().clear();
    let down: Vec<PageNo> = (0..64).rev().map(pg).collect();
    pool.read_ahead(f, &down);
    pool.wait_read_ahead();
    assert_eq!(store.calls(), vec![Call::ReadRun(PageNo::NONE, 64)]);
    pool.inner.check_invariants(true);
}

#[test]
fn read_ahead_leaves_damaged_pages_to_the_fetch_that_wants_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rabad.dat");
    let store = FileStore::create(&path);
    let pool = pool(64, false);
    let f = pool.register(store.clone());
    for no in 0..10 {
        write_page(&pool, f, pg(no), 5, 1);
    }
    pool.unregister(f).unwrap();
    let mut p5 = read_disk(&store.file, pg(5));
    p5[3000] ^= 1;
    store.file.write_all_at(&p5, 5 * PAGE_SIZE as u64).unwrap();
    let f = pool.register(store.clone());
    pool.read_ahead(f, &(0..10).map(pg).collect::<Vec<_>>());
    pool.wait_read_ahead();
    // Page 5 fails its checksum: read-ahead drops it again.
    assert_eq!(pool.stats().read_ahead_pages, 9);
    assert_eq!(pool.stats().resident_pages, 9);
    assert_eq!(pool.fetch(f, pg(5)).unwrap_err().number(), 824);
    for no in (0..10).filter(|&n| n != 5) {
        check(&pool.fetch(f, pg(no)).unwrap().read(), pg(no), 5, 1);
    }
    pool.inner.check_invariants(true);
}

/// A store whose reads wait until `parties` reads are in progress at once (or give up
/// after a while), recording the most seen together.
struct GatherStore {
    parties: usize,
    inside: std::sync::Mutex<usize>,
    arrived: std::sync::Condvar,
    most: AtomicU64,
}

impl PageStore for GatherStore {
    fn read_page(&self, no: PageNo, buf: &mut [u8]) -> Result<()> {
        let mut inside = self.inside.lock().unwrap();
        *inside += 1;
        self.most.fetch_max(*inside as u64, Ordering::SeqCst);
        self.arrived.notify_all();
        let deadline = Instant::now() + Duration::from_secs(10);
        while (self.most.load(Ordering::SeqCst) as usize) < self.parties && Instant::now() < deadline {
            inside = self.arrived.wait_timeout(inside, Duration::from_millis(50)).unwrap().0;
        }
        *inside -= 1;
        buf.fill(0);
        page::set_page_no(buf, no);
        page::seal(buf);
        Ok(())
    }
    fn write_page(&self, _: PageNo, _: &[u8]) -> Result<()> {
        Ok(())
    }
    fn flush_log_to(&self, _: Lsn) -> Result<()> {
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        Ok(())
    }
    fn database_name(&self) -> &str {
        "gather"
    }
    fn path(&self) -> &Path {
        Path::new("/dev/null")
    }
}

#[test]
fn misses_from_concurrent_threads_are_read_in_parallel() {
    const THREADS: usize = 8;
    let store = Arc::new(GatherStore {
        parties: THREADS,
        inside: std::sync::Mutex::new(0),
        arrived: std::sync::Condvar::new(),
        most: AtomicU64::new(0),
    });
    let pool = pool(64, false);
    let f = pool.register(store.clone());
    std::thread::scope(|s| {
        for t in 0..THREADS as u32 {
            let pool = &pool;
            s.spawn(move || drop(pool.fetch(f, pg(t * 3)).unwrap()));
        }
    });
    // No lock of the pool is held across a read: all eight were in the store at once.
    assert_eq!(store.most.load(Ordering::SeqCst), THREADS as u64);
    pool.inner.check_invariants(true);
}

// ----- model test ------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Read(u32),
    Write(u32, u8),
    New(u32, u8),
    Hold(u32),
    Release,
    Flush,
    Reopen,
    Discard,
    Resize(usize),
    ReadAhead(u32, u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..40u32).prop_map(Op::Read),
        6 => (0..40u32, any::<u8>()).prop_map(|(n, s)| Op::Write(n, s)),
        1 => (40..48u32, any::<u8>()).prop_map(|(n, s)| Op::New(n, s)),
        2 => (0..48u32).prop_map(Op::Hold),
        2 => Just(Op::Release),
        1 => Just(Op::Flush),
        1 => Just(Op::Reopen),
        1 => Just(Op::Discard),
        1 => (4..=16usize).prop_map(Op::Resize),
        2 => (0..48u32, 1..12u32).prop_map(|(from, n)| Op::ReadAhead(from, n)),
    ]
}

/// What the file should read as: `None` = never written (zeros), else `(lsn, seed)`.
type Model = HashMap<PageNo, (u64, u8)>;

fn parse_disk(file: &DataFile, no: PageNo) -> Option<(u64, u8)> {
    let p = read_disk(file, no);
    if p.iter().all(|&b| b == 0) {
        return None;
    }
    assert_eq!(page::verify(&p, no), Ok(()));
    let seed = p[HEADER_SIZE] ^ (no.raw() as u8);
    check(&p, no, page::lsn(&p).raw(), seed);
    Some((page::lsn(&p).raw(), seed))
}

fn expect(p: &[u8], no: PageNo, m: Option<&(u64, u8)>) {
    match m {
        None => assert!(p.iter().all(|&b| b == 0), "page {no} should be zero"),
        Some(&(lsn, seed)) => check(p, no, lsn, seed),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn pool_matches_a_model_of_the_file(ops in proptest::collection::vec(op(), 1..120)) {
        let dir = tempfile::tempdir().unwrap();
        let path: PathBuf = dir.path().join("m.dat");
        let mut store = FileStore::create(&path);
        Arc::get_mut(&mut store).unwrap().record = false;
        let pool = pool(16, false);
        pool.set_max_bytes(8 * PAGE_SIZE).unwrap();
        let mut f = pool.register(store.clone());
        let mut model = Model::new();
        let mut held: Vec<PageHandle> = Vec::new();
        let mut lsn = 1;
        for op in ops {
            match op {
                Op::Read(no) => {
                    let h = pool.fetch(f, pg(no)).unwrap();
                    expect(&h.read(), pg(no), model.get(&pg(no)));
                }
                Op::Write(no, seed) | Op::New(no, seed) => {
                    let h = if matches!(op, Op::New(..)) { pool.fetch_new(f, pg(no)) } else { pool.fetch(f, pg(no)) };
                    let h = match h {
                        Ok(h) => h,
                        Err(e) => {
                            // Only possible when every frame is held.
                            prop_assert_eq!(e.number(), 802);
                            prop_assert!(held.len() >= pool.stats().capacity_pages as usize);
                            continue;
                        }
                    };
                    lsn += 1;
                    let mut w = h.write();
                    fill(&mut w, pg(no), lsn, seed);
                    w.mark_dirty();
                    model.insert(pg(no), (lsn, seed));
                }
                Op::Hold(no) => {
                    if held.len() < 3 {
                        if let Ok(h) = pool.fetch(f, pg(no)) {
                            held.push(h);
                        }
                    }
                }
                Op::Release => {
                    if !held.is_empty() {
                        held.remove(0);
                    }
                }
                Op::Flush => {
                    // A read-ahead worker's eviction may be writing a page: the model reads
                    // the file directly, so let it finish first.
                    pool.wait_read_ahead();
                    pool.flush_file(f).unwrap();
                    prop_assert_eq!(pool.stats().dirty_pages, 0);
                    for no in 0..48 {
                        let disk = parse_disk(&store.file, pg(no));
                        prop_assert_eq!(disk.as_ref(), model.get(&pg(no)));
                    }
                }
                Op::Reopen => {
                    held.clear();
                    pool.unregister(f).unwrap();
                    f = pool.register(store.clone());
                }
                Op::Discard => {
                    held.clear();
                    // `discard` does not wait for evictions in flight (nor did it before
                    // read-ahead): writes by read-ahead workers must be over before the
                    // model takes the file's contents as they are.
                    pool.wait_read_ahead();
                    pool.discard(f);
                    // Whatever reached the disk is what the file now holds.
                    model = (0..48).filter_map(|no| parse_disk(&store.file, pg(no)).map(|m| (pg(no), m))).collect();
                    f = pool.register(store.clone());
                }
                Op::Resize(frames) => {
                    pool.set_max_bytes(frames * PAGE_SIZE).unwrap();
                }
                Op::ReadAhead(from, n) => {
                    // Runs in the background, overlapping the ops that follow.
                    pool.read_ahead(f, &(from..from + n).map(pg).collect::<Vec<_>>());
                }
            }
            pool.inner.check_invariants(false);
            let s = pool.stats();
            // Frames pinned during a shrink may linger beyond the limit until the clock passes.
            prop_assert!(s.resident_pages <= s.capacity_pages + 3, "{:?}", s);
        }
        held.clear();
        pool.wait_read_ahead();
        pool.inner.check_invariants(true);
        for no in 0..48 {
            let h = pool.fetch(f, pg(no)).unwrap();
            expect(&h.read(), pg(no), model.get(&pg(no)));
        }
        pool.unregister(f).unwrap();
        for no in 0..48 {
            let disk = parse_disk(&store.file, pg(no));
            prop_assert_eq!(disk.as_ref(), model.get(&pg(no)));
        }
    }
}

/// Timing check for the release path (seed 003): run with
/// `cargo test -p tessera-buffer --release -- --ignored --nocapture drop_8_gib`.
#[test]
#[ignore]
fn drop_8_gib_pool_timing() {
    let frames = (std::env::var("POOL_GIB").map(|v| v.parse::<usize>().unwrap()).unwrap_or(8) << 30) / PAGE_SIZE;
    let pool = pool(frames, true);
    let f = pool.register(Arc::new(NullStore));
    let t = Instant::now();
    for no in 0..frames as u32 {
        let h = pool.fetch_new(f, pg(no)).unwrap();
        let mut w = h.write();
        w[PAGE_SIZE - 1] = 1;
        w.mark_dirty();
    }
    eprintln!("filled {} frames in {:?}: {:?}", frames, t.elapsed(), pool.stats());
    let t = Instant::now();
    drop(pool);
    eprintln!("dropped an 8 GiB pool in {:?}", t.elapsed());
}

/// Hit-path micro-benchmark: 200K resident pages, then random `fetch` + `read` + drop (and
/// `fetch` + drop) on one and on two threads. Run with
/// `cargo test -p tessera-buffer --release -- --ignored --nocapture fetch_hit_timing`.
#[test]
#[ignore]
fn fetch_hit_timing() {
    let pages: u32 = std::env::var("HIT_PAGES").map(|v| v.parse().unwrap()).unwrap_or(200_000);
    let ops: u64 = std::env::var("HIT_OPS").map(|v| v.parse().unwrap()).unwrap_or(10_000_000);
    let pool = pool(pages as usize, false);
    let f = pool.register(Arc::new(NullStore));
    for no in 0..pages {
        pool.fetch_new(f, pg(no)).unwrap().write()[100] = no as u8;
    }
    let reps: usize = std::env::var("HIT_REPS").map(|v| v.parse().unwrap()).unwrap_or(3);
    for (threads, read) in [(1u64, true), (1, false), (2, true), (2, false)] {
        // The best of a few runs: the machine is shared, and we want the cost, not the noise.
        let el = (0..reps)
            .map(|_| {
                let t = Instant::now();
                std::thread::scope(|s| {
                    for id in 0..threads {
                        let pool = &pool;
                        s.spawn(move || {
                            let mut rng = 0x2545_f491_4f6c_dd1du64 ^ (id + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                            let mut acc = 0u64;
                            for _ in 0..ops / threads {
                                rng ^= rng << 13;
                                rng ^= rng >> 7;
                                rng ^= rng << 17;
                                let no = (rng % u64::from(pages)) as u32;
                                let h = pool.fetch(f, pg(no)).unwrap();
                                if read {
                                    let r = h.read();
                                    assert_eq!(r[100], no as u8);
                                    acc += u64::from(r[100]);
                                }
                            }
                            std::hint::black_box(acc);
                        });
                    }
                });
                t.elapsed()
            })
            .min()
            .unwrap();
        eprintln!(
            "{threads} thread(s), fetch{}+drop: {ops} ops in {el:?} (best of {reps}) = {:.1} ns/op ({:.2} M ops/s)",
            if read { "+read" } else { "" },
            el.as_nanos() as f64 / ops as f64,
            ops as f64 / el.as_secs_f64() / 1e6
        );
    }
    let s = pool.stats();
    assert_eq!((s.misses, s.resident_pages), (u64::from(pages), u64::from(pages)), "{s:?}");
}

#[test]
fn drop_clean_pages_keeps_dirty_and_pinned_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::create(&dir.path().join("a.dat"));
    let pool = pool(64, false);
    let f = pool.register(store.clone());
    for no in 0..8 {
        write_page(&pool, f, pg(no), 1, 3);
    }
    pool.flush_file(f).unwrap();
    write_page(&pool, f, pg(3), 2, 9);
    let pinned = pool.fetch(f, pg(5)).unwrap();
    assert_eq!(pool.drop_clean_pages(), 6, "all but the dirty and the pinned page");
    pool.inner.check_invariants(false);
    let reads = pool.stats().reads;
    check(&pool.fetch(f, PageNo::NONE).unwrap().read(), PageNo::NONE, 1, 3);
    assert_eq!(pool.stats().reads, reads + 1, "a dropped page is read again from disk");
    check(&pool.fetch(f, pg(3)).unwrap().read(), pg(3), 2, 9);
    assert_eq!(pool.stats().reads, reads + 1, "the dirty page stayed in memory with its change");
    drop(pinned);
    pool.unregister(f).unwrap();
}

// ----- the buffer pool extension ------------------------------------------------------------

fn with_extension(frames: usize, slots: usize, dir: &Path) -> (Arc<BufferPool>, FileId, Arc<FileStore>) {
    let p = pool(frames, false);
    p.set_extension(Some(Extension::create(&dir.join("x.bpe"), (slots * PAGE_SIZE) as u64).unwrap()));
    let store = FileStore::create(&dir.join("data"));
    let f = p.register(store.clone());
    (p, f, store)
}

/// Pushes `f`'s pages out of RAM by reading others, then lets the extension catch up.
fn churn(p: &BufferPool, f: FileId, from: PageNo, n: u32) {
    for no in from.up_to(from + n) {
        drop(p.fetch(f, no).unwrap());
    }
    if let Some(ext) = p.extension() {
        ext.drain();
    }
}

#[test]
fn extension_serves_evicted_clean_pages_and_forgets_dirtied_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (p, f, store) = with_extension(8, 64, dir.path());
    write_page(&p, f, pg(1), 10, 0x11);
    p.flush_file(f).unwrap();
    churn(&p, f, pg(100), 16);
    let reads = store.reads.load(Ordering::SeqCst);
    check(&p.fetch(f, pg(1)).unwrap().read(), pg(1), 10, 0x11);
    assert_eq!(store.reads.load(Ordering::SeqCst), reads, "read from the extension, not the data file");
    assert!(p.extension().unwrap().stats().reads >= 1);

    // Dirtied in RAM: the extension's copy is stale and must never be read again.
    write_page(&p, f, pg(1), 20, 0x22);
    assert!(!p.extension().unwrap().contains(key(f, pg(1))), "dirtying invalidates the copy");
    p.flush_file(f).unwrap();
    churn(&p, f, pg(200), 16);
    check(&p.fetch(f, pg(1)).unwrap().read(), pg(1), 20, 0x22);

    // Removing the extension deletes its file; the pool goes on without it.
    let old = p.set_extension(None).unwrap();
    let path = old.path().to_path_buf();
    drop(old);
    assert!(!path.exists());
    churn(&p, f, pg(300), 16);
    check(&p.fetch(f, pg(1)).unwrap().read(), pg(1), 20, 0x22);
    p.inner.check_invariants(true);
}

#[test]
fn a_corrupt_extension_page_is_re_read_from_the_data_file() {
    let dir = tempfile::tempdir().unwrap();
    let (p, f, store) = with_extension(8, 64, dir.path());
    write_page(&p, f, pg(3), 30, 0x33);
    p.flush_file(f).unwrap();
    churn(&p, f, pg(100), 16);
    assert!(p.extension().unwrap().contains(key(f, pg(3))));
    // Damage the whole extension file behind the pool's back.
    let bpe = std::fs::OpenOptions::new().write(true).open(dir.path().join("x.bpe")).unwrap();
    for s in 0..64u64 {
        std::os::unix::fs::FileExt::write_all_at(&bpe, &[0x5A; 32], s * PAGE_SIZE as u64 + 4000).unwrap();
    }
    let reads = store.reads.load(Ordering::SeqCst);
    check(&p.fetch(f, pg(3)).unwrap().read(), pg(3), 30, 0x33);
    assert_eq!(store.reads.load(Ordering::SeqCst), reads + 1, "re-read from the data file");
    assert_eq!(p.extension().unwrap().stats().damaged, 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random writes, flushes, evictions and reads of a few pages through a pool of a few
    /// frames and a small extension: every read sees the newest write (never a stale
    /// extension copy), whatever the interleaving.
    #[test]
    fn extension_never_serves_a_stale_page(ops in proptest::collection::vec((0u8..4, 0u32..12, any::<u8>()), 1..300)) {
        let dir = tempfile::tempdir().unwrap();
        let (p, f, _store) = with_extension(6, 8, dir.path());
        let mut model: HashMap<PageNo, (u64, u8)> = HashMap::new();
        let mut lsn = 1;
        for (op, no, seed) in ops {
            match op {
                0 => {
                    lsn += 1;
                    write_page(&p, f, pg(no), lsn, seed);
                    model.insert(pg(no), (lsn, seed));
                }
                1 => p.flush_file(f).unwrap(),
                2 => churn(&p, f, pg(1000 + u32::from(seed % 4) * 8), 8),
                _ => {
                    if let Some(&(l, s)) = model.get(&pg(no)) {
                        check(&p.fetch(f, pg(no)).unwrap().read(), pg(no), l, s);
                    }
                }
            }
        }
        for (no, (l, s)) in model {
            check(&p.fetch(f, no).unwrap().read(), no, l, s);
        }
    }
}

fn fill_and_check(pool: &BufferPool, pages: u32) {
    let f = pool.register(Arc::new(NullStore));
    for no in 0..pages {
        write_page(pool, f, pg(no), 1, 4);
    }
    for no in 0..pages {
        check(&pool.fetch(f, pg(no)).unwrap().read(), pg(no), 1, 4);
    }
    pool.discard(f);
}

#[test]
fn frames_work_with_and_without_transparent_huge_pages() {
    for huge_pages in [HugePages::Off, HugePages::Transparent] {
        let pool = BufferPool::new(PoolConfig { max_bytes: 8 << 20, background_writer: false, huge_pages }).unwrap();
        fill_and_check(&pool, 1024);
        pool.set_max_bytes(4 << 20).unwrap();
        pool.inner.check_invariants(true);
    }
}

fn meminfo(field: &str) -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = info.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn explicit_huge_pages_are_reserved_up_front_or_refused_clearly() {
    // More than the kernel has free: refused at creation, naming the setting to change.
    let free = meminfo("HugePages_Free:") as usize;
    let cfg = PoolConfig { max_bytes: (free + 1) * (2 << 20), background_writer: false, huge_pages: HugePages::On };
    let err = BufferPool::new(cfg).unwrap_err().to_string();
    assert!(err.contains("huge pages") && err.contains("vm.nr_hugepages"), "{err}");

    // With pages to spare (raised here when the test may change vm.nr_hugepages), the
    // reservation is taken at creation and the frames work.
    const SYSCTL: &str = "/proc/sys/vm/nr_hugepages";
    let total: u64 = std::fs::read_to_string(SYSCTL).unwrap().trim().parse().unwrap();
    if std::fs::write(SYSCTL, (total + 8).to_string()).is_err() || meminfo("HugePages_Free:") < 8 {
        let _ = std::fs::write(SYSCTL, total.to_string());
        eprintln!("explicit huge pages: cannot raise vm.nr_hugepages here; only the refusal was checked");
        return;
    }
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = std::fs::write(SYSCTL, self.0.to_string());
        }
    }
    let _restore = Restore(total);
    let reserved = meminfo("HugePages_Rsvd:");
    let cfg = PoolConfig { max_bytes: 16 << 20, background_writer: false, huge_pages: HugePages::On };
    let pool = BufferPool::new(cfg).unwrap();
    assert_eq!(meminfo("HugePages_Rsvd:"), reserved + 8, "the whole pool is reserved at creation");
    fill_and_check(&pool, 2048);
    drop(pool);
    assert_eq!(meminfo("HugePages_Rsvd:"), reserved, "dropping the pool returns the reservation");
}

#[test]
fn frames_are_committed_ahead_of_the_high_water_mark_and_given_back_by_a_shrink() {
    // 8 MiB in use before anything is committed ahead; then a quarter of what is in use.
    let pool = pool(4096, false);
    let f = pool.register(Arc::new(NullStore));
    for no in 0..1000 {
        drop(pool.fetch_new(f, pg(no)).unwrap());
    }
    assert_eq!(pool.inner.prefault.committed.load(Ordering::Acquire), 0, "a small pool commits nothing ahead");
    for no in 1000..2000 {
        write_page(&pool, f, pg(no), 2, 8);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    // Once the thread has caught up, at least half a window lies ahead of the mark.
    while pool.inner.prefault.committed.load(Ordering::Acquire) < 2000 + 2000 / 8 {
        assert!(Instant::now() < deadline, "the prefault thread did not populate ahead");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Frames handed out later find their memory committed; contents are untouched.
    for no in 2000..2400 {
        write_page(&pool, f, pg(no), 2, 8);
    }
    for no in 1000..2400 {
        check(&pool.fetch(f, pg(no)).unwrap().read(), pg(no), 2, 8);
    }
    pool.set_max_bytes(128 * PAGE_SIZE).unwrap();
    assert!(pool.inner.prefault.committed.load(Ordering::Acquire) <= 128, "nothing counted beyond the limit");
    pool.inner.check_invariants(true);
}

#[test]
fn io_counters_count_this_threads_logical_physical_and_read_ahead_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("io.dat");
    let store = FileStore::create(&path);
    let pool = pool(1024, false);
    let f = pool.register(store.clone());
    for no in 0..100 {
        write_page(&pool, f, pg(no), 9, 3);
    }
    pool.unregister(f).unwrap();
    let f = pool.register(store.clone());
    let start = crate::io_counters();
    // Two misses, then a hit: three logical reads, two physical.
    drop(pool.fetch(f, pg(1)).unwrap());
    pool.read_with(f, pg(2), |p| check(p, pg(2), 9, 3)).unwrap();
    drop(pool.fetch(f, pg(1)).unwrap());
    // A page being allocated is not a read.
    drop(pool.fetch_new(f, pg(500)).unwrap());
    let d = crate::io_counters().since(start);
    assert_eq!((d.logical_reads, d.physical_reads, d.read_ahead_reads), (3, 2, 0), "{d:?}");
    // Another thread's reads are its own.
    let other = {
        let pool = pool.clone();
        std::thread::spawn(move || {
            let start = crate::io_counters();
            drop(pool.fetch(f, pg(3)).unwrap());
            crate::io_counters().since(start)
        })
        .join()
        .unwrap()
    };
    assert_eq!((other.logical_reads, other.physical_reads), (1, 1));
    assert_eq!(crate::io_counters().since(start), d, "nothing of the other thread's counted here");
    // Pages read ahead for this thread are its read-ahead reads; fetching them is logical
    // reads only.
    let start = crate::io_counters();
    let pages: Vec<PageNo> = (10..40).map(pg).collect();
    assert_eq!(pool.read_ahead(f, &pages), 30);
    pool.wait_read_ahead();
    for &no in &pages {
        drop(pool.fetch(f, no).unwrap());
    }
    let d = crate::io_counters().since(start);
    assert_eq!((d.logical_reads, d.physical_reads, d.read_ahead_reads), (30, 0, 30), "{d:?}");
}

// ----- per-file limits ---------------------------------------------------------------------------

#[test]
fn a_file_at_its_limit_replaces_its_own_pages_and_leaves_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(64, false);
    let quiet = pool.register(Arc::new(NullStore));
    let store = FileStore::create(&dir.path().join("noisy.dat"));
    let noisy = pool.register(store.clone());
    pool.set_file_limit(noisy, Some(8)).unwrap();
    // The quiet file's 20 pages, each used twice.
    for _ in 0..2 {
        for no in 0..20 {
            drop(pool.fetch(quiet, pg(no)).unwrap());
        }
    }
    // The noisy file writes 100 pages: far more than its limit, more than the pool.
    for no in 0..100 {
        write_page(&pool, noisy, pg(no), u64::from(no) + 1, 7);
        let u = pool.file_usage(noisy).unwrap();
        assert!(u.resident_pages <= 8, "page {no}: {u:?}");
    }
    let u = pool.file_usage(noisy).unwrap();
    assert_eq!((u.resident_pages, u.limit_pages, u.overruns), (8, Some(8), 0), "{u:?}");
    assert_eq!(u.evictions_within_limit, 92);
    assert_eq!(pool.file_usage(quiet).unwrap().resident_pages, 20, "the other file kept its pages");
    let before = pool.stats();
    for no in 0..20 {
        drop(pool.fetch(quiet, pg(no)).unwrap());
    }
    assert_eq!(pool.stats().reads, before.reads, "every quiet page was still a hit");
    // What the noisy file evicted dirty was written first (the WAL rule included).
    for no in 0..100 {
        check(&pool.fetch(noisy, pg(no)).unwrap().read(), pg(no), u64::from(no) + 1, 7);
    }
    assert!(pool.file_usage(noisy).unwrap().resident_pages <= 8);
    pool.inner.check_invariants(true);
}

#[test]
fn lowering_a_limit_evicts_at_once_and_removing_it_lets_the_file_grow() {
    let pool = pool(64, false);
    let f = pool.register(Arc::new(NullStore));
    for _ in 0..=MAX_USAGE {
        for no in 0..40 {
            drop(pool.fetch(f, pg(no)).unwrap());
        }
    }
    let pinned = pool.fetch(f, pg(3)).unwrap();
    pool.set_file_limit(f, Some(10)).unwrap();
    assert_eq!(pool.file_usage(f).unwrap().resident_pages, 10);
    assert!(
        pool.fetch(f, pg(3)).is_ok() && pool.inner.entry(f).unwrap().radix.get().get(pg(3)).is_some(),
        "pinned stays"
    );
    // Every own page pinned: a load goes past the limit rather than fail, and says so.
    pool.set_file_limit(f, Some(1)).unwrap();
    let u = pool.file_usage(f).unwrap();
    assert_eq!((u.resident_pages, u.overruns), (1, 0), "{u:?}");
    let other = pool.fetch(f, pg(50)).unwrap();
    let u = pool.file_usage(f).unwrap();
    assert_eq!((u.resident_pages, u.overruns), (2, 1), "{u:?}");
    drop((pinned, other));
    pool.set_file_limit(f, None).unwrap();
    for no in 100..140 {
        drop(pool.fetch(f, pg(no)).unwrap());
    }
    let u = pool.file_usage(f).unwrap();
    assert_eq!((u.resident_pages, u.limit_pages), (42, None), "{u:?}");
    assert!(pool.set_file_limit(FileId(999), Some(1)).is_err(), "an unregistered file is refused");
    pool.inner.check_invariants(true);
}

#[test]
fn threads_loading_and_writing_a_limited_file_keep_every_change() {
    const PAGES: u32 = 200;
    const LIMIT: usize = 12;
    let dir = tempfile::tempdir().unwrap();
    let mut store = FileStore::create(&dir.path().join("a.dat"));
    Arc::get_mut(&mut store).unwrap().record = false;
    let pool = pool(48, true);
    let f = pool.register(store.clone());
    let other = pool.register(Arc::new(NullStore));
    pool.set_file_limit(f, Some(LIMIT)).unwrap();
    let lsn = &AtomicU64::new(1);
    let counter = |p: &[u8]| u64::from_le_bytes(p[HEADER_SIZE..HEADER_SIZE + 8].try_into().unwrap());
    let increments: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let pool = &pool;
                s.spawn(move || {
                    let mut next = xorshift(t + 11);
                    let mut incs = 0;
                    for _ in 0..3000 {
                        let r = next();
                        let no = (r % u64::from(PAGES)) as u32;
                        if r >> 60 == 0 {
                            drop(pool.fetch(other, pg(no)).unwrap());
                            continue;
                        }
                        let h = pool.fetch(f, pg(no)).unwrap();
                        let mut w = h.write();
                        let c = counter(&w) + 1;
                        w[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&c.to_le_bytes());
                        page::set_page_no(&mut w, pg(no));
                        page::set_lsn(&mut w, Lsn::from_raw(lsn.fetch_add(1, Ordering::SeqCst)));
                        w.mark_dirty();
                        incs += 1;
                        // Racing loads may each pass the limit by the pages they hold.
                        let held = pool.file_usage(f).unwrap().resident_pages;
                        assert!(held <= LIMIT + 4, "{held} resident");
                    }
                    incs
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let sum: u64 = (0..PAGES).map(|no| counter(&pool.fetch(f, pg(no)).unwrap().read())).sum();
    assert_eq!(sum, increments);
    pool.inner.check_invariants(true);
    let u = pool.file_usage(f).unwrap();
    assert!(u.resident_pages <= LIMIT + 4 && u.evictions_within_limit > 0, "{u:?}");
}

#[test]
fn a_limited_file_s_scan_with_read_ahead_reads_each_page_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::create(&dir.path().join("scan.dat"));
    let pool = pool(1024, false);
    let f = pool.register(store.clone());
    for no in 0..400 {
        write_page(&pool, f, pg(no), 5, 1);
    }
    pool.unregister(f).unwrap();
    let f = pool.register(store.clone());
    pool.set_file_limit(f, Some(32)).unwrap();
    let reads = || store.reads.load(Ordering::SeqCst);
    let before = reads();
    // A scan asking for the next 64 pages every 16: more than its limit at once.
    for no in 0..400u32 {
        if no % 16 == 0 {
            let ahead: Vec<PageNo> = (no..(no + 64).min(400)).map(pg).collect();
            pool.read_ahead(f, &ahead);
        }
        check(&pool.fetch(f, pg(no)).unwrap().read(), pg(no), 5, 1);
    }
    pool.wait_read_ahead();
    // Reading ahead at the limit read 1,056 pages here (its pages replaced before the scan
    // reached them), and up to 568 with a window of a quarter of the limit when the
    // machine was busy. On a loaded machine a worker can still finish a run after the
    // scan has passed, and a page of it is replaced unused: at most one window (a quarter
    // of the limit) is read twice (seen: 401 of 400 once, in a full test run).
    let read = reads() - before;
    assert!((400..=400 + 32 / 4).contains(&read), "every page read once, give or take one window: {read}");
    assert!(pool.file_usage(f).unwrap().resident_pages <= 32 + 8);
    pool.inner.check_invariants(true);
}
