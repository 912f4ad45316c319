//! Tessera's side of the engine benchmark: the same workloads, data and signatures as the
//! peers' ([`crate::peers::sqlite`], [`crate::peers::lmdb`]).
//!
//! Not wired yet: each function reports that it has nothing to measure. The engine benchmark
//! still runs the peers and reports the rows it could not fill in.

use std::path::Path;

use crate::error::{BenchError, Result};
use crate::workload::{EngineParams, Figures};

fn not_wired(what: &str) -> BenchError {
    BenchError::new(format!("tessera side not wired yet ({what})"))
}

/// Point lookups by primary key on `p.lookup_rows` rows of (id int primary key, v char(1000)),
/// ids `1..=lookup_rows`, values from [`crate::workload::lookup_value`]: load, read every row
/// once, then time the ids of [`crate::workload::lookup_ids`]`(p.lookup_rows, p.lookups, p.seed)`
/// and return the sum of the first byte of each value as the checksum.
pub fn point_lookups(dir: &Path, p: &EngineParams) -> Result<Figures> {
    let _ = (dir, p);
    Err(not_wired("point lookups"))
}

/// One transaction inserting `p.bulk_rows` rows of (id bigint, payload) with ids `1..=bulk_rows`
/// and payloads from [`crate::workload::row_payload`]; the time includes the durable commit.
pub fn bulk_insert(dir: &Path, p: &EngineParams) -> Result<Figures> {
    let _ = (dir, p);
    Err(not_wired("bulk insert"))
}

/// `threads` threads, each committing one single-row INSERT per transaction with the default
/// (full) durability, for `p.commit_seconds`; `count` is the total of commits.
pub fn durable_commits(dir: &Path, threads: usize, p: &EngineParams) -> Result<Figures> {
    let _ = (dir, threads, p);
    Err(not_wired("durable commits"))
}

/// Seconds to release a buffer pool holding `bytes` of pages (the pool is filled first; only
/// the release is timed).
pub fn pool_release(bytes: u64) -> Result<f64> {
    let _ = bytes;
    Err(not_wired("buffer pool release"))
}
