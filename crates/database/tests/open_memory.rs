//! What an open idle database holds on the heap at the engine's level (issue 39: at most
//! 16 KiB of memory per open idle database outside the buffer pool; the T-SQL layer's
//! share is bounded by `crates/sql/tests/open_memory.rs`). Empty databases are made and
//! closed, then each is opened and read once; the heap the process holds then, less what
//! it held before, divided by the databases, must stay under
//! [`HEAP_PER_OPEN_DATABASE_BYTES`]. Then each is written once (a table and a row): once
//! idle, the engine's maintenance gives back what their lock and transaction tables grew
//! to, so a database used once holds little more than one only read. A counting
//! allocator measures it: this file is its own test binary, with one test, so nothing
//! else allocates beside it.

use std::time::Duration;

use tessera_database::memory::CountingAllocator;
use tessera_database::{DatabaseOptions, Engine, EngineConfig};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const DATABASES: usize = 200;
/// Measured 4.2 KiB (the storage structures, the pool's 1 KiB radix leaf for the data
/// file, the log's state, two descriptor-cache entries); 5.1 KiB before the lock table
/// was made on first use and the duplicated names and paths went.
const HEAP_PER_OPEN_DATABASE_BYTES: i64 = 5 * 1024;
/// What a table and a row add to a database once it is idle again: the table's tree,
/// its catalog entry, its place in the maps that find them (measured 1.0 KiB; 1.8 KiB
/// when the lock and transaction tables kept the capacity of their busiest moment).
const HEAP_PER_WRITE_BYTES: i64 = 1280;

fn name(i: usize) -> String {
    format!("m{i}")
}

fn live() -> i64 {
    CountingAllocator::live_bytes()
}

#[test]
fn an_open_idle_database_holds_little_heap() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 64 << 20;
    config.background = false;
    config.max_open_databases = DATABASES + 8;
    config.idle_close_after = Duration::from_secs(3600);
    let engine = Engine::open(config).unwrap();
    for i in 0..DATABASES {
        engine.create_database(&name(i), DatabaseOptions::default()).unwrap();
        assert!(engine.close_database(&name(i)).unwrap());
    }
    engine.database("master").unwrap().begin().commit().unwrap();

    let before = live();
    for i in 0..DATABASES {
        engine.database(&name(i)).unwrap().begin().commit().unwrap();
    }
    assert_eq!(engine.stats().open_databases, DATABASES + 1);
    let per_open = (live() - before) / DATABASES as i64;
    assert!(
        per_open <= HEAP_PER_OPEN_DATABASE_BYTES,
        "an open idle database holds {per_open} bytes of heap (at most {HEAP_PER_OPEN_DATABASE_BYTES})"
    );

    let read = live();
    for i in 0..DATABASES {
        let db = engine.database(&name(i)).unwrap();
        let table = db.create_table("t").unwrap();
        let mut tx = db.begin();
        tx.insert(table, b"key", b"value").unwrap();
        tx.commit().unwrap();
    }
    let written = live();
    std::thread::sleep(Duration::from_millis(1100));
    engine.maintain();
    let per_write = (live() - read) / DATABASES as i64;
    assert!(
        per_write <= HEAP_PER_WRITE_BYTES,
        "a table and a row hold {per_write} bytes of heap once idle (at most {HEAP_PER_WRITE_BYTES}; {} before \
         the idle databases gave memory back)",
        (written - read) / DATABASES as i64
    );
}
