//! SQLite (bundled, in-process, prepared statements) running the engine workloads.
//!
//! Settings: WAL journal, `synchronous=FULL` for everything timed that commits, a page cache
//! large enough to hold the table being read or written. Each function works in files it
//! creates under `dir` and leaves them there (the caller removes the directory).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};

use crate::error::{BenchError, Result};
use crate::workload::{
    lookup_value, row_payload, time_lookups, EngineParams, Figures, BULK_ROW_LEN, LOOKUP_VALUE_LEN, PAYLOAD_LEN,
};

/// How long a writer waits for the write lock (SQLite's own busy handler, backing off) before
/// SQLite reports busy; a busy commit is retried until the run's deadline.
const BUSY_TIMEOUT: Duration = Duration::from_secs(1);

fn open(dir: &Path, name: &str) -> Result<(Connection, PathBuf)> {
    fs::create_dir_all(dir)?;
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let conn = Connection::open(&path)?;
    set_wal(&conn)?;
    Ok((conn, path))
}

fn set_wal(conn: &Connection) -> Result<()> {
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(BenchError::new(format!("SQLite refused WAL mode (got {mode})")));
    }
    Ok(())
}

/// `PRAGMA cache_size` (negative: KiB) for `bytes` of table data plus room for the b-tree's
/// interior pages and slack in the leaves.
fn set_cache_for(conn: &Connection, bytes: u64) -> Result<()> {
    let kib = (bytes / 1024) * 2 + 64 * 1024;
    conn.execute_batch(&format!("PRAGMA cache_size=-{kib}"))?;
    Ok(())
}

/// Point lookups by primary key: loads `lookup_rows` rows of (id, 1000-byte value), reads every
/// row once to warm the cache, then times `lookups` prepared `SELECT v FROM t WHERE id=?` on
/// uniform random ids, summing the first byte of each value.
pub fn point_lookups(dir: &Path, p: &EngineParams) -> Result<Figures> {
    let setup = Instant::now();
    let (conn, _) = open(dir, "lookups.sqlite")?;
    conn.execute_batch("PRAGMA synchronous=FULL")?;
    set_cache_for(&conn, p.lookup_data_bytes())?;
    conn.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB NOT NULL)")?;
    conn.execute_batch("BEGIN")?;
    {
        let mut insert = conn.prepare("INSERT INTO t(id, v) VALUES (?1, ?2)")?;
        let mut value = [0u8; LOOKUP_VALUE_LEN];
        for id in 1..=p.lookup_rows {
            lookup_value(id, &mut value);
            insert.execute((id as i64, &value[..]))?;
        }
    }
    conn.execute_batch("COMMIT")?;
    // Move the table from the log into the database file, as a long-lived database would be.
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;

    let mut select = conn.prepare("SELECT v FROM t WHERE id = ?1")?;
    let figures = time_lookups(p, setup, |id: u32| -> Result<u64> {
        let first = select.query_row([id as i64], |row| Ok(row.get_ref(0)?.as_bytes()?[0]))?;
        Ok(first as u64)
    })?;
    Ok(figures)
}

/// Bulk insert: one transaction of `bulk_rows` prepared INSERTs of (bigint id, 92-byte payload),
/// ids increasing, WAL with `synchronous=FULL`; the time includes the commit.
pub fn bulk_insert(dir: &Path, p: &EngineParams) -> Result<Figures> {
    let setup = Instant::now();
    let (conn, _) = open(dir, "bulk.sqlite")?;
    conn.execute_batch("PRAGMA synchronous=FULL")?;
    set_cache_for(&conn, p.bulk_data_bytes())?;
    conn.execute_batch("CREATE TABLE b(id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")?;
    let mut insert = conn.prepare("INSERT INTO b(id, payload) VALUES (?1, ?2)")?;
    let setup_seconds = setup.elapsed().as_secs_f64();

    let start = Instant::now();
    conn.execute_batch("BEGIN")?;
    let mut payload = [0u8; PAYLOAD_LEN];
    for id in 1..=p.bulk_rows {
        row_payload(id, &mut payload);
        insert.execute((id as i64, &payload[..]))?;
    }
    conn.execute_batch("COMMIT")?;
    let seconds = start.elapsed().as_secs_f64();
    drop(insert);

    let rows: i64 = conn.query_row("SELECT count(*) FROM b", [], |r| r.get(0))?;
    if rows as u64 != p.bulk_rows {
        return Err(BenchError::new(format!("SQLite bulk insert stored {rows} rows of {}", p.bulk_rows)));
    }
    Ok(Figures { count: p.bulk_rows, seconds, setup_seconds, checksum: rows as u64 * BULK_ROW_LEN as u64 })
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked))
}

/// Durable single-row commits: `threads` threads, each with its own connection, each commit one
/// INSERT of a ~100-byte row in its own `BEGIN IMMEDIATE … COMMIT`, `synchronous=FULL` (every
/// commit syncs the WAL before it returns), for `commit_seconds` from a common start. Counts the
/// commits that returned before the deadline; `seconds` is the length of the run.
pub fn durable_commits(dir: &Path, threads: usize, p: &EngineParams) -> Result<Figures> {
    let threads = threads.max(1);
    let setup = Instant::now();
    let name = format!("commits-{threads}.sqlite");
    let (conn, path) = open(dir, &name)?;
    conn.execute_batch("CREATE TABLE c(id INTEGER PRIMARY KEY, thread INTEGER NOT NULL, payload BLOB NOT NULL)")?;
    let duration = p.commit_duration();
    let barrier = Barrier::new(threads + 1);

    let (go, outcomes) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, path) = (&barrier, &path);
                scope.spawn(move || -> Result<u64> {
                    let ready = (|| -> Result<Connection> {
                        let conn = Connection::open(path)?;
                        conn.busy_timeout(BUSY_TIMEOUT)?;
                        conn.execute_batch("PRAGMA synchronous=FULL")?;
                        Ok(conn)
                    })();
                    // Everyone meets at the barrier, even a thread that failed to connect.
                    barrier.wait();
                    let conn = ready?;
                    let deadline = Instant::now() + duration;
                    let mut insert = conn.prepare("INSERT INTO c(thread, payload) VALUES (?1, ?2)")?;
                    let mut payload = [0u8; PAYLOAD_LEN];
                    let mut commits = 0u64;
                    let mut attempts = 0u64;
                    while Instant::now() < deadline {
                        attempts += 1;
                        row_payload(((t as u64) << 40) | attempts, &mut payload);
                        let attempt = (|| -> rusqlite::Result<()> {
                            conn.execute_batch("BEGIN IMMEDIATE")?;
                            insert.execute((t as i64, &payload[..]))?;
                            conn.execute_batch("COMMIT")
                        })();
                        match attempt {
                            Ok(()) if Instant::now() <= deadline => commits += 1,
                            Ok(()) => {}
                            Err(e) if is_busy(&e) => {
                                if !conn.is_autocommit() {
                                    conn.execute_batch("ROLLBACK")?;
                                }
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                    Ok(commits)
                })
            })
            .collect();
        barrier.wait();
        let go = Instant::now();
        let outcomes: Vec<Result<u64>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(BenchError::new("SQLite commit thread panicked"))))
            .collect();
        (go, outcomes)
    });
    let seconds = duration.as_secs_f64();
    let setup_seconds = go.duration_since(setup).as_secs_f64();
    let mut total = 0u64;
    for outcome in outcomes {
        total += outcome?;
    }
    let stored: i64 = conn.query_row("SELECT count(*) FROM c", [], |r| r.get(0))?;
    // Commits that returned after the deadline are stored but not counted.
    if (stored as u64) < total {
        return Err(BenchError::new(format!("SQLite counted {total} commits but stored {stored} rows")));
    }
    Ok(Figures { count: total, seconds, setup_seconds, checksum: total })
}
