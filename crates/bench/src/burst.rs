//! `tessera bench burst`: seed 003's burst — one transaction inserting 10,000,000 rows into
//! an indexed table, with a cache that holds it all — then releasing the cache and shutting
//! down; the same burst into SQLite in the same run.
//!
//! Rows are (id bigint primary key, customer int, payload 88 bytes) with a nonclustered
//! index on customer (100,000 customers, so each index key repeats). tessera runs through
//! the embedded API (`tessera_database`), SQLite through rusqlite with its page cache sized
//! to hold the data, both with full durability at commit. Measured: rows per second
//! (inserts and commit), the commit alone, the process's peak resident memory during the
//! burst (VmHWM, reset before each side), then for tessera the checkpoint at shutdown
//! (writing the dirty pages) and, apart from it, the release of the buffer pool.
//!
//! Goals (the memory issue): ≥ 1.5× SQLite's rows per second; releasing the pool < 1 s.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use tessera_access::key::KeyBuf;
use tessera_database::{DatabaseOptions, Engine, EngineConfig};

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::report::{Report, ResultRow};

pub const NAME: &str = "burst";
pub const GOAL_ROWS_VS_SQLITE: f64 = 1.5;
pub const GOAL_RELEASE_SECONDS: f64 = 1.0;
/// "Committing and freeing a 16 GiB pool take seconds at most."
pub const GOAL_COMMIT_SECONDS: f64 = 10.0;
/// Committing the pool should cost about what touching as much plain memory costs.
pub const GOAL_COMMIT_VS_RAW: f64 = 0.8;

/// Commit and release times of the pool, and the plain-memory floor, alternating.
struct Commits {
    commits: [f64; 2],
    releases: [f64; 2],
    raw: [f64; 2],
}

fn commit_and_release(bytes: u64) -> Result<Commits> {
    let mut c = Commits { commits: [0.0; 2], releases: [0.0; 2], raw: [0.0; 2] };
    for round in 0..2 {
        c.raw[round] = crate::tessera_side::raw_commit(bytes)?;
        (c.commits[round], c.releases[round]) = crate::tessera_side::pool_commit_and_release(bytes)?;
    }
    Ok(c)
}

const PAYLOAD: usize = 88;
const CUSTOMERS: u64 = 100_000;

#[derive(Debug, Clone, Serialize)]
pub struct BurstParams {
    pub rows: u64,
    /// Size of the pool that is committed and freed on its own.
    pub pool_bytes: u64,
}

impl BurstParams {
    pub fn full() -> BurstParams {
        BurstParams { rows: 10_000_000, pool_bytes: 16 << 30 }
    }

    pub fn quick() -> BurstParams {
        BurstParams { rows: 1_000_000, pool_bytes: 2 << 30 }
    }

    /// Bytes of rows and index entries, for sizing both caches.
    fn data_bytes(&self) -> u64 {
        self.rows * (8 + 4 + PAYLOAD as u64 + 24) * 2
    }
}

pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

/// What one side measured.
struct Side {
    seconds: f64,
    commit_seconds: f64,
    peak_rss: u64,
    /// tessera only: checkpoint at shutdown, then the pool's release.
    shutdown_seconds: f64,
    release_seconds: f64,
}

fn customer(id: u64) -> u64 {
    id.wrapping_mul(2_654_435_761) % CUSTOMERS
}

fn payload(id: u64, out: &mut [u8; PAYLOAD]) {
    for (i, b) in out.iter_mut().enumerate() {
        *b = (id as u8).wrapping_add(i as u8);
    }
}

/// Resets the process's peak RSS (VmHWM) so the next reading covers what follows.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb << 10)
}

fn tessera(dir: &Path, p: &BurstParams) -> Result<Side> {
    let mut config = EngineConfig::new(dir);
    config.pool_bytes = (p.data_bytes() as usize).max(512 << 20);
    // No background thread: it holds the engine now and then, and the release is timed
    // where the last handle is dropped.
    config.background = false;
    let engine = Engine::open(config)?;
    engine.create_database("burst", DatabaseOptions::default())?;
    let db = engine.database("burst")?;
    let t = db.create_table("t")?;
    let by_customer = db.create_table("t.by_customer")?;
    let (mut key, mut ckey) = (KeyBuf::new(), KeyBuf::new());
    let mut row = [0u8; 4 + PAYLOAD];
    let mut body = [0u8; PAYLOAD];
    reset_peak_rss();
    let start = Instant::now();
    let mut tx = db.begin();
    for id in 1..=p.rows {
        let c = customer(id) as u32;
        payload(id, &mut body);
        row[..4].copy_from_slice(&c.to_le_bytes());
        row[4..].copy_from_slice(&body);
        key.clear();
        key.i64(id as i64, false);
        tx.insert(t, key.as_bytes(), &row)?;
        ckey.clear();
        ckey.i32(c as i32, false);
        tx.index_insert(by_customer, ckey.as_bytes(), key.as_bytes(), false)?;
    }
    let commit = Instant::now();
    tx.commit()?;
    let commit_seconds = commit.elapsed().as_secs_f64();
    let seconds = start.elapsed().as_secs_f64();
    let peak = peak_rss();
    let check = db.begin();
    ckey.clear();
    ckey.i32(customer(1) as i32, false);
    if check.index_lookup(by_customer, ckey.as_bytes())?.is_empty() {
        return Err(BenchError::new("tessera: the index lost customer 1"));
    }
    check.commit()?;
    drop(db);
    let shutdown = Instant::now();
    engine.shutdown()?;
    let shutdown_seconds = shutdown.elapsed().as_secs_f64();
    let release = Instant::now();
    drop(engine);
    let release_seconds = release.elapsed().as_secs_f64();
    Ok(Side { seconds, commit_seconds, peak_rss: peak, shutdown_seconds, release_seconds })
}

fn sqlite(dir: &Path, p: &BurstParams) -> Result<Side> {
    let path = dir.join("burst.sqlite");
    let conn = rusqlite::Connection::open(&path).map_err(|e| BenchError::new(format!("sqlite: {e}")))?;
    let cache_kib = p.data_bytes().div_ceil(1024);
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA cache_size=-{cache_kib};
         CREATE TABLE t(id INTEGER PRIMARY KEY, customer INTEGER NOT NULL, payload BLOB NOT NULL);
         CREATE INDEX t_by_customer ON t(customer);"
    ))?;
    let mut insert = conn.prepare("INSERT INTO t(id, customer, payload) VALUES (?1, ?2, ?3)")?;
    let mut body = [0u8; PAYLOAD];
    reset_peak_rss();
    let start = Instant::now();
    conn.execute_batch("BEGIN")?;
    for id in 1..=p.rows {
        payload(id, &mut body);
        insert.execute((id as i64, customer(id) as i64, &body[..]))?;
    }
    let commit = Instant::now();
    conn.execute_batch("COMMIT")?;
    let commit_seconds = commit.elapsed().as_secs_f64();
    let seconds = start.elapsed().as_secs_f64();
    let peak = peak_rss();
    drop(insert);
    let n: i64 = conn.query_row("SELECT count(*) FROM t WHERE customer = ?1", [customer(1) as i64], |r| r.get(0))?;
    if n == 0 {
        return Err(BenchError::new("sqlite: the index lost customer 1"));
    }
    let close = Instant::now();
    drop(conn);
    Ok(Side {
        seconds,
        commit_seconds,
        peak_rss: peak,
        shutdown_seconds: close.elapsed().as_secs_f64(),
        release_seconds: 0.0,
    })
}

pub fn run(dir: &Path, params: &BurstParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    progress(&format!("tessera: one transaction of {} rows", params.rows));
    let ours = std::fs::create_dir_all(dir.join("tessera"))
        .map_err(BenchError::from)
        .and_then(|_| tessera(&dir.join("tessera"), params));
    progress(&format!("sqlite: one transaction of {} rows", params.rows));
    let peer = std::fs::create_dir_all(dir.join("sqlite"))
        .map_err(BenchError::from)
        .and_then(|_| sqlite(&dir.join("sqlite"), params));
    match (&ours, &peer) {
        (Ok(t), Ok(s)) => {
            let rate = |side: &Side| params.rows as f64 / side.seconds;
            report.push(ResultRow::rate(
                format!("burst of {} rows in one transaction, indexed table", params.rows),
                "rows/s",
                rate(t),
                "sqlite",
                rate(s),
                GOAL_ROWS_VS_SQLITE,
            ));
            report.push(ResultRow::own(
                "releasing the buffer pool (after the shutdown checkpoint)",
                "s",
                t.release_seconds,
                GOAL_RELEASE_SECONDS,
            ));
            report.note(format!(
                "commit: tessera {:.3} s, sqlite {:.3} s; peak RSS during the burst: tessera {} MiB, sqlite {} MiB",
                t.commit_seconds,
                s.commit_seconds,
                t.peak_rss >> 20,
                s.peak_rss >> 20
            ));
            report.note(format!(
                "tessera shutdown checkpoint (writing the burst's dirty pages): {:.2} s; sqlite close: {:.2} s",
                t.shutdown_seconds, s.shutdown_seconds
            ));
        }
        _ => {
            if let Err(e) = &ours {
                failures.push(format!("tessera: {e}"));
            }
            if let Err(e) = &peer {
                failures.push(format!("sqlite: {e}"));
            }
        }
    }
    let gib = params.pool_bytes >> 30;
    progress(&format!("committing and releasing a {gib} GiB buffer pool, and {gib} GiB of plain memory, twice each"));
    match commit_and_release(params.pool_bytes) {
        Ok(c) => {
            let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
            report.push(ResultRow::own(
                format!("committing a {gib} GiB buffer pool (every frame written)"),
                "s",
                best(&c.commits),
                GOAL_COMMIT_SECONDS,
            ));
            report.push(ResultRow::time(
                format!("committing {gib} GiB: buffer pool vs plain anonymous memory"),
                "s",
                best(&c.commits),
                "mmap+touch",
                best(&c.raw),
                GOAL_COMMIT_VS_RAW,
            ));
            report.push(ResultRow::own(
                format!("releasing the {gib} GiB buffer pool"),
                "s",
                c.releases.iter().copied().fold(0.0, f64::max),
                GOAL_RELEASE_SECONDS,
            ));
            report.note(format!(
                "{gib} GiB commits in run order (plain memory, pool, plain, pool): {:.2}, {:.2}, {:.2}, {:.2} s; the best \
                 of each is reported. Memory the OS has just freed may have been handed back to a hypervisor, which \
                 then faults it in again on the next first touch: both sides pay that alike",
                c.raw[0], c.commits[0], c.raw[1], c.commits[1]
            ));
        }
        Err(e) => failures.push(format!("{gib} GiB pool: {e}")),
    }
    report.note("rows: (id bigint primary key, customer int, 88-byte payload) + a nonclustered index on customer (100,000 distinct); full durability at commit on both sides; both caches sized to hold everything");
    for f in &failures {
        report.note(format!("not measured: {f}"));
    }
    Ok(Outcome { report, failures })
}
