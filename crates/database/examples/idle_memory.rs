//! What an open idle empty database costs in memory outside the buffer pool (issue 39:
//! at most 16 KiB) and on disk (at most 64 KiB). Run from the repository root:
//!
//! ```sh
//! cargo run --release -p tessera-database --example idle_memory -- 20000 /tmp/idle 8 [read|write]
//! ```
//!
//! The first run creates N empty databases in the directory (a second run reuses them).
//! Then a fresh process opens the engine, notes its resident memory (VmRSS), its heap (a
//! counting allocator) and the buffer pool's committed frames, opens every database and
//! runs one empty transaction in it (on 8 threads by default, as a server's sessions
//! would; `write`: makes a table in it if it has none and writes one row), waits for the
//! background thread's maintenance, and prints the growth per open database: RSS less
//! the pool's newly committed frames (and their descriptors), and the heap; then the
//! disk its files take while open and, after a shutdown (each database checkpointed and
//! closed), at rest.

use std::time::{Duration, Instant};

use tessera_database::memory::{self, CountingAllocator};
use tessera_database::{DatabaseOptions, Engine, EngineConfig, PAGE_SIZE};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// A frame's descriptor in the pool's descriptor region (see the buffer README).
const FRAME_DESCRIPTOR_BYTES: u64 = 64;

fn engine(dir: &std::path::Path, databases: usize) -> std::sync::Arc<Engine> {
    let mut config = EngineConfig::new(dir);
    config.pool_bytes = 1 << 30;
    config.max_open_databases = databases + 16;
    config.idle_close_after = Duration::from_secs(24 * 3600);
    Engine::open(config).expect("engine")
}

fn name(i: usize) -> String {
    format!("e{i:06}")
}

fn create(dir: &std::path::Path, databases: usize) {
    let engine = engine(dir, databases);
    let started = Instant::now();
    for i in (0..databases).filter(|i| !engine.exists(&name(*i))) {
        engine.create_database(&name(i), DatabaseOptions::default()).expect("create");
        // Closed at once: creating 20,000 must not hold them all open.
        engine.close_database(&name(i)).expect("close");
    }
    engine.shutdown().expect("shutdown");
    eprintln!("{databases} databases ready in {:.1} s", started.elapsed().as_secs_f64());
}

fn measure(dir: &std::path::Path, databases: usize, threads: usize, write: bool) {
    let engine = engine(dir, databases);
    engine.database("master").expect("master");
    std::thread::sleep(Duration::from_secs(2));
    let committed = |e: &Engine| e.stats().pool.committed_pages * (PAGE_SIZE as u64 + FRAME_DESCRIPTOR_BYTES);
    let (rss_before, heap_before, pool_before) =
        (memory::process_memory().resident, CountingAllocator::live_bytes(), committed(&engine));
    let started = Instant::now();
    // As a server's sessions do: several threads open databases at once.
    std::thread::scope(|s| {
        for t in 0..threads {
            let engine = &engine;
            s.spawn(move || {
                for i in (t..databases).step_by(threads) {
                    let db = engine.database(&name(i)).expect("open");
                    if write {
                        // A table with one row, written again on later runs.
                        let table = db.table("t").map_or_else(|| db.create_table("t"), Ok).expect("table");
                        let mut tx = db.begin();
                        if !tx.update(table, b"k", b"v").expect("update") {
                            tx.insert(table, b"k", b"v").expect("insert");
                        }
                        tx.commit().expect("commit");
                    } else {
                        db.begin().commit().expect("commit");
                    }
                }
            });
        }
    });
    let opening = started.elapsed();
    // The background thread's maintenance runs every second.
    std::thread::sleep(Duration::from_secs(3));
    let stats = engine.stats();
    let (rss, heap, pool) = (memory::process_memory().resident, CountingAllocator::live_bytes(), committed(&engine));
    let per = |bytes: f64| bytes / databases as f64;
    let outside = per(rss as f64 - rss_before as f64 - (pool as f64 - pool_before as f64));
    println!(
        "{} open of {} registered, opened in {:.1} s; resident pool pages {}, committed {} ({} KiB per database)",
        stats.open_databases,
        stats.databases,
        opening.as_secs_f64(),
        stats.pool.resident_pages,
        stats.pool.committed_pages,
        per((pool - pool_before) as f64) / 1024.0,
    );
    println!(
        "per open idle database: RSS {:.1} KiB, outside the pool {:.1} KiB, heap {:.1} KiB",
        per((rss - rss_before) as f64) / 1024.0,
        outside / 1024.0,
        per((heap - heap_before) as f64) / 1024.0,
    );
    let open_disk = disk(&engine, databases);
    engine.shutdown().expect("shutdown");
    println!(
        "disk per database (data and log, allocated): {:.1} KiB open, {:.1} KiB at rest",
        per(open_disk as f64) / 1024.0,
        per(disk(&engine, databases) as f64) / 1024.0,
    );
}

/// The bytes the databases' files take on disk.
fn disk(engine: &Engine, databases: usize) -> u64 {
    use std::os::unix::fs::MetadataExt;
    (0..databases)
        .map(|i| engine.entry(&name(i)).expect("registered"))
        .flat_map(|e| [e.data_path, e.log_path])
        .map(|path| std::fs::metadata(path).expect("a database file").blocks() * 512)
        .sum()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let databases: usize = args.next().map_or(20_000, |n| n.parse().expect("a number of databases"));
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "/tmp/tessera-idle-memory".into()));
    let threads: usize = args.next().map_or(8, |n| n.parse().expect("a number of threads"));
    let mode = args.next().unwrap_or_else(|| "read".into());
    assert!(mode == "read" || mode == "write", "the mode is read or write, not {mode}");
    if args.next().as_deref() == Some("measure") {
        return measure(&dir, databases, threads.max(1), mode == "write");
    }
    create(&dir, databases);
    // A fresh process: the creations' freed memory must not be reused by the openings.
    let status = std::process::Command::new(std::env::current_exe().expect("this program"))
        .args([databases.to_string(), dir.display().to_string(), threads.to_string(), mode, "measure".into()])
        .status()
        .expect("measuring process");
    assert!(status.success(), "the measuring process failed: {status}");
}
