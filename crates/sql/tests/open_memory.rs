//! What an open idle database holds on the heap (issue 39: at most 16 KiB of memory per
//! open idle database outside the buffer pool). Copies of a template — a table and a
//! procedure — are made, the instance restarts, and each copy is opened and used once as
//! its tenant's application would (a session in it running the same text); the heap the
//! process holds then, less what it held before, divided by the copies, must stay under
//! [`HEAP_PER_DATABASE_BYTES`]. A counting allocator measures it: this file is its own
//! test binary, with one test, so nothing else allocates beside it.
//!
//! The bound is below the 16 KiB because the server's resident memory adds to
//! the heap what the allocator keeps around it and the pool's frame descriptors (about
//! 5 KiB per database measured by `tessera bench consolidation --scale`). What it
//! guards: that databases of the same security share one snapshot of it (7.5 KiB each
//! otherwise), and that a database's lock table is not sized for a thousand connections.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

use tessera_database::{Engine, EngineConfig};
use tessera_sql::{Collected, Session};

struct Counting;

static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call goes to the system allocator with the caller's arguments; only the
// byte count is recorded beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const COPIES: usize = 200;
const HEAP_PER_DATABASE_BYTES: i64 = 12 * 1024;

fn run(session: &mut Session, text: &str) -> Collected {
    let mut out = Collected::default();
    let failed = session.execute(text, &mut out);
    assert!(!failed, "{text}: {:?}", out.errors());
    out
}

fn open(dir: &std::path::Path) -> (std::sync::Arc<Engine>, std::sync::Arc<tessera_sql::Shared>) {
    let mut config = EngineConfig::new(dir);
    config.pool_bytes = 64 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    engine.set_open_limits(COPIES * 2, std::time::Duration::from_secs(3600));
    let shared = tessera_sql::start_instance(engine.clone()).unwrap();
    (engine, shared)
}

#[test]
fn an_open_idle_database_holds_little_heap() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (engine, shared) = open(dir.path());
        let mut session = Session::new(shared, "sa", "master").unwrap();
        run(
            &mut session,
            "create database tpl; use tpl; create table accounts (id int primary key, balance int not null); \
             insert accounts values (1, 100), (2, 200); \
             exec('create procedure touch @id int as select balance from accounts where id = @id'); use master",
        );
        for i in 0..COPIES {
            run(&mut session, &format!("create database d{i} as copy of tpl"));
        }
        drop(session);
        engine.shutdown().unwrap();
    }
    let (engine, shared) = open(dir.path());
    // The first use of the text caches its plan, shared by every copy after.
    let mut first = Session::new(shared.clone(), "sa", "tpl").unwrap();
    assert_eq!(run(&mut first, "exec touch 1").result_sets[0].1.len(), 1);
    drop(first);
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    for i in 0..COPIES {
        let mut session = Session::new(shared.clone(), "sa", &format!("d{i}")).unwrap();
        assert_eq!(run(&mut session, "exec touch 1").result_sets[0].1.len(), 1);
    }
    let per_database = (LIVE_BYTES.load(Ordering::Relaxed) - before) / COPIES as i64;
    let mut open = 0;
    engine.for_each_open(|_| open += 1);
    assert!(open > COPIES, "{open} databases open");
    assert!(
        per_database <= HEAP_PER_DATABASE_BYTES,
        "an open idle database holds {per_database} bytes of heap (at most {HEAP_PER_DATABASE_BYTES})"
    );
}
