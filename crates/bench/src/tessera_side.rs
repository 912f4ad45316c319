//! Tessera's side of the engine benchmark: the same workloads, data and signatures as the
//! peers' ([`crate::peers::sqlite`], [`crate::peers::lmdb`]), through the embedded API
//! (`tessera_database`), in-process.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use tessera_access::key::KeyBuf;
use tessera_buffer::{BufferPool, Lsn, PageNo, PageStore, PoolConfig, PAGE_SIZE};
use tessera_database::{DatabaseOptions, Engine, EngineConfig, RecoveryModel};

use crate::error::{BenchError, Result};
use crate::workload::{lookup_value, row_payload, time_lookups, EngineParams, Figures, LOOKUP_VALUE_LEN, PAYLOAD_LEN};

impl From<tessera_errors::Error> for BenchError {
    fn from(e: tessera_errors::Error) -> Self {
        BenchError::new(format!("tessera: {e}"))
    }
}

/// An engine in `dir` whose pool holds `data_bytes` of rows with room to spare.
fn engine(dir: &Path, data_bytes: u64) -> Result<Arc<Engine>> {
    let mut config = EngineConfig::new(dir);
    config.pool_bytes = ((data_bytes * 2) as usize).max(256 << 20);
    Ok(Engine::open(config)?)
}

fn int_key(k: &mut KeyBuf, id: u32) -> &[u8] {
    k.clear();
    k.i32(id as i32, false).as_bytes()
}

fn bigint_key(k: &mut KeyBuf, id: u64) -> &[u8] {
    k.clear();
    k.i64(id as i64, false).as_bytes()
}

/// Point lookups by primary key on `p.lookup_rows` rows of (id int primary key, v char(1000)):
/// load in 10,000-row transactions, read every row once, then time the ids of
/// [`lookup_ids`] inside one read-committed transaction, summing the first byte of each value.
pub fn point_lookups(dir: &Path, p: &EngineParams) -> Result<Figures> {
    let setup = Instant::now();
    let engine = engine(dir, p.lookup_data_bytes())?;
    engine.create_database("lookups", DatabaseOptions::default())?;
    let db = engine.database("lookups")?;
    let t = db.create_table("t")?;
    let mut key = KeyBuf::new();
    let mut value = [0u8; LOOKUP_VALUE_LEN];
    let mut id = 1;
    while id <= p.lookup_rows {
        let mut tx = db.begin();
        for _ in 0..10_000 {
            if id > p.lookup_rows {
                break;
            }
            lookup_value(id, &mut value);
            tx.insert(t, int_key(&mut key, id), &value)?;
            id += 1;
        }
        tx.commit()?;
    }
    db.checkpoint()?;
    let tx = db.begin();
    let figures = time_lookups(p, setup, |id: u32| -> Result<u64> {
        tx.get_with(t, int_key(&mut key, id), |v| u64::from(v[0]))?
            .ok_or_else(|| BenchError::new(format!("tessera lost key {id}")))
    })?;
    tx.commit()?;
    Ok(figures)
}

/// One transaction inserting `p.bulk_rows` rows of (id bigint, payload) with increasing ids;
/// the time includes the durable commit.
pub fn bulk_insert(dir: &Path, p: &EngineParams) -> Result<Figures> {
    let setup = Instant::now();
    let engine = engine(dir, p.bulk_data_bytes())?;
    engine.create_database("bulk", DatabaseOptions::default())?;
    let db = engine.database("bulk")?;
    let t = db.create_table("t")?;
    let setup_seconds = setup.elapsed().as_secs_f64();
    let mut key = KeyBuf::new();
    let mut payload = [0u8; PAYLOAD_LEN];
    let mut checksum = 0u64;
    let start = Instant::now();
    let mut tx = db.begin();
    for id in 1..=p.bulk_rows {
        row_payload(id, &mut payload);
        checksum = checksum.wrapping_add(u64::from(payload[0]));
        tx.insert(t, bigint_key(&mut key, id), &payload)?;
    }
    tx.commit()?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(Figures { count: p.bulk_rows, seconds, setup_seconds, checksum })
}

/// The same rows as [`bulk_insert`], loaded with `Transaction::bulk_load` into an empty
/// table of a SIMPLE database: minimally logged (pages written and forced, not logged
/// row by row), as `bcp` or `INSERT … SELECT` into an empty table would be. The time
/// includes forcing the pages and the durable commit.
pub fn bulk_load(dir: &Path, p: &EngineParams) -> Result<Figures> {
    let setup = Instant::now();
    let engine = engine(dir, p.bulk_data_bytes())?;
    let options = DatabaseOptions { recovery_model: RecoveryModel::Simple, ..DatabaseOptions::default() };
    engine.create_database("bulk", options)?;
    let db = engine.database("bulk")?;
    let t = db.create_table("t")?;
    let setup_seconds = setup.elapsed().as_secs_f64();
    let mut checksum = 0u64;
    let start = Instant::now();
    let mut tx = db.begin();
    let rows = (1..=p.bulk_rows).map(|id| {
        let mut payload = [0u8; PAYLOAD_LEN];
        row_payload(id, &mut payload);
        checksum = checksum.wrapping_add(u64::from(payload[0]));
        let mut key = KeyBuf::new();
        let key: [u8; 9] = bigint_key(&mut key, id).try_into().expect("a bigint key: presence byte + 8");
        (key, payload)
    });
    let loaded = tx.bulk_load(t, rows)?.ok_or_else(|| BenchError::new("tessera: the table was not empty"))?;
    tx.commit()?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(Figures { count: loaded.rows, seconds, setup_seconds, checksum })
}

/// `threads` threads, each committing one single-row insert per transaction with full
/// durability (commit returns after fdatasync), for `p.commit_seconds`.
pub fn durable_commits(dir: &Path, threads: usize, p: &EngineParams) -> Result<Figures> {
    let setup = Instant::now();
    let engine = engine(dir, 64 << 20)?;
    engine.create_database("commits", DatabaseOptions::default())?;
    let db = engine.database("commits")?;
    let t = db.create_table("t")?;
    let setup_seconds = setup.elapsed().as_secs_f64();
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads as u64)
        .map(|w| {
            let (db, stop, total, barrier) = (db.clone(), stop.clone(), total.clone(), barrier.clone());
            std::thread::spawn(move || -> Result<()> {
                let mut key = KeyBuf::new();
                let mut payload = [0u8; PAYLOAD_LEN];
                barrier.wait();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let id = w * 1_000_000_000 + i;
                    row_payload(id, &mut payload);
                    let mut tx = db.begin();
                    tx.insert(t, bigint_key(&mut key, id), &payload)?;
                    tx.commit()?;
                    if !stop.load(Ordering::Relaxed) {
                        total.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
                Ok(())
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    std::thread::sleep(p.commit_duration());
    stop.store(true, Ordering::Relaxed);
    let seconds = start.elapsed().as_secs_f64();
    for w in workers {
        w.join().map_err(|_| BenchError::new("a commit thread panicked"))??;
    }
    Ok(Figures { count: total.load(Ordering::Relaxed), seconds, setup_seconds, checksum: 0 })
}

/// A page store that never holds data: the release benchmark only needs resident pages.
struct NoFile;

impl PageStore for NoFile {
    fn read_page(&self, _: PageNo, buf: &mut [u8]) -> tessera_errors::Result<()> {
        buf.fill(0);
        Ok(())
    }
    fn write_page(&self, _: PageNo, _: &[u8]) -> tessera_errors::Result<()> {
        Ok(())
    }
    fn flush_log_to(&self, _: Lsn) -> tessera_errors::Result<()> {
        Ok(())
    }
    fn sync(&self) -> tessera_errors::Result<()> {
        Ok(())
    }
    fn database_name(&self) -> &str {
        "release-benchmark"
    }
    fn path(&self) -> &Path {
        Path::new("(memory)")
    }
}

/// The machine's floor for committing memory: seconds to map `bytes` of fresh anonymous
/// memory (advised for transparent huge pages, as the pool's frames are) and write one
/// byte in every 4 KiB page, then unmap it. What the OS (and a hypervisor under it)
/// charges for first touch, with no buffer pool involved.
pub fn raw_commit(bytes: u64) -> Result<f64> {
    let len = bytes as usize;
    let start = Instant::now();
    // SAFETY: an anonymous private mapping at an address the kernel chooses; only this
    // function uses it, and it is unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(BenchError::new(format!("mmap of {bytes} bytes: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: the range is the mapping made above.
    unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
    let base = p as *mut u8;
    for off in (0..len).step_by(4096) {
        // SAFETY: `off < len`, inside the mapping.
        unsafe { base.add(off).write_volatile(1) };
    }
    let seconds = start.elapsed().as_secs_f64();
    // SAFETY: unmapping exactly the mapping made above; nothing refers to it any more.
    unsafe { libc::munmap(p, len) };
    Ok(seconds)
}

/// Seconds to release a buffer pool holding `bytes` of pages: every frame is filled
/// (committed memory), then only dropping the pool is timed.
pub fn pool_release(bytes: u64) -> Result<f64> {
    pool_commit_and_release(bytes).map(|(_, release)| release)
}

/// Seconds to commit `bytes` of buffer pool (every frame taken and written, so the OS
/// backs it with memory), then seconds to release it all (dropping the pool).
pub fn pool_commit_and_release(bytes: u64) -> Result<(f64, f64)> {
    let start = Instant::now();
    let pool =
        BufferPool::new(PoolConfig { max_bytes: bytes as usize, background_writer: false, ..PoolConfig::default() })?;
    let file = pool.register(Arc::new(NoFile));
    let pages = (bytes / PAGE_SIZE as u64) as u32;
    for no in 0..pages {
        let page = pool.fetch_new(file, PageNo::from_raw(no))?;
        let mut w = page.write();
        w[100] = no as u8;
        w[PAGE_SIZE - 1] = 1;
    }
    let commit = start.elapsed().as_secs_f64();
    let resident = pool.stats().resident_pages;
    if resident < u64::from(pages) {
        return Err(BenchError::new(format!("pool held {resident} of {pages} pages")));
    }
    let start = Instant::now();
    drop(pool);
    Ok((commit, start.elapsed().as_secs_f64()))
}
