//! The storage-engine workloads shared by tessera's side and the peers: their parameters, the
//! data every engine loads (generated deterministically, so all sides store the same bytes), and
//! the figures each run hands back.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// Bytes of the value column of the point-lookup table: `(id int primary key, v char(1000))`.
pub const LOOKUP_VALUE_LEN: usize = 1000;
/// Bytes of one bulk-insert row: an 8-byte `bigint` id and a payload.
pub const BULK_ROW_LEN: usize = 100;
/// Bytes of the payload of a bulk-insert row and of a durable-commit row.
pub const PAYLOAD_LEN: usize = BULK_ROW_LEN - 8;

/// Parameters of `tessera bench engine`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineParams {
    /// "full", "quick", or a name given by whoever changed the figures.
    pub scale: String,
    /// Rows in the point-lookup table (ids `1..=lookup_rows`).
    pub lookup_rows: u32,
    /// Timed lookups, uniform random ids, after a warm-up pass over every row.
    pub lookups: u64,
    /// Rows inserted by the bulk insert, in one transaction (ids `1..=bulk_rows`).
    pub bulk_rows: u64,
    /// Length of each durable-commit run, in seconds.
    pub commit_seconds: f64,
    /// Threads of the many-threads durable-commit run (the other run has one).
    pub commit_threads: usize,
    /// Bytes the buffer pool holds when it is released.
    pub pool_release_bytes: u64,
    /// Seed of the random lookup ids.
    pub seed: u64,
    /// Also time LMDB's bulk insert (MDB_APPEND), as extra information.
    pub lmdb_bulk: bool,
}

impl EngineParams {
    /// The figures the issue asks for: 1M × 1 KB rows, 10M × 100 B rows in one transaction,
    /// 5-second commit runs, a pool of 8 GiB.
    pub fn full() -> Self {
        EngineParams {
            scale: "full".to_string(),
            lookup_rows: 1_000_000,
            lookups: 2_000_000,
            bulk_rows: 10_000_000,
            commit_seconds: 5.0,
            commit_threads: 32,
            pool_release_bytes: 8 << 30,
            seed: 42,
            lmdb_bulk: true,
        }
    }

    /// A scaled-down run, tessera and peers together in about a minute on 2 cores.
    pub fn quick() -> Self {
        EngineParams {
            scale: "quick".to_string(),
            lookup_rows: 100_000,
            lookups: 200_000,
            bulk_rows: 1_000_000,
            commit_seconds: 1.5,
            commit_threads: 32,
            pool_release_bytes: 1 << 30,
            seed: 42,
            lmdb_bulk: true,
        }
    }

    pub fn commit_duration(&self) -> Duration {
        Duration::from_secs_f64(self.commit_seconds.max(0.0))
    }

    /// Bytes of the point-lookup table's raw data (keys and values).
    pub fn lookup_data_bytes(&self) -> u64 {
        self.lookup_rows as u64 * (LOOKUP_VALUE_LEN as u64 + 4)
    }

    /// Bytes of the bulk-insert table's raw data.
    pub fn bulk_data_bytes(&self) -> u64 {
        self.bulk_rows * BULK_ROW_LEN as u64
    }
}

/// What one side of one scenario measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    /// Operations timed: lookups, rows inserted, commits.
    pub count: u64,
    /// Seconds the timed part took.
    pub seconds: f64,
    /// Seconds spent before the timed part (loading, warming up); not part of the rate.
    pub setup_seconds: f64,
    /// A value derived from what was read or written, so the work cannot be skipped, and so
    /// that sides can be compared (same data → same checksum for lookups).
    pub checksum: u64,
}

impl Figures {
    /// Operations per second of the timed part.
    pub fn per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.count as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// A 64-bit mix (splitmix64's finaliser): cheap, deterministic, well spread.
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Fills `out` with lowercase ASCII letters derived from `seed`: the same seed gives the same
/// bytes on every side. Each 8-byte chunk comes from its own one-multiply hash of a hash of
/// the seed (independent work for the CPU), and every byte `r` of a hash becomes the letter `a + r·26/256`,
/// eight at a time in one 64-bit word: generating the data costs every side as little as
/// possible of its timing.
fn fill_letters(seed: u64, out: &mut [u8]) {
    const EVEN: u64 = 0x00FF_00FF_00FF_00FF;
    let base = mix64(seed);
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let x = base.wrapping_add((i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let r = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let r = r ^ (r >> 32);
        // Even and odd bytes as 16-bit lanes, so a lane's product (at most 255·26) stays in it.
        let even = (((r & EVEN) * 26) >> 8) & EVEN;
        let odd = (((r >> 8) & EVEN) * 26) & !EVEN;
        let letters = (even | odd) + 0x6161_6161_6161_6161;
        chunk.copy_from_slice(&letters.to_le_bytes()[..chunk.len()]);
    }
}

/// The value stored with `id` in the point-lookup table.
pub fn lookup_value(id: u32, out: &mut [u8; LOOKUP_VALUE_LEN]) {
    fill_letters(0x6C6F_6F6B_0000_0000 ^ id as u64, out);
}

/// The payload of bulk-insert row `id` (and of durable-commit rows).
pub fn row_payload(id: u64, out: &mut [u8; PAYLOAD_LEN]) {
    fill_letters(0x6275_6C6B_0000_0000 ^ id, out);
}

/// The ids the timed point lookups read, in order: `count` uniform draws from `1..=rows`.
pub fn lookup_ids(rows: u32, count: u64, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count).map(|_| rng.random_range(1..=rows.max(1))).collect()
}

/// The checksum a point-lookup run must produce: the sum of the first byte of each value read.
/// Sides compute it from what they read; this computes it from the data, for checks.
pub fn expected_lookup_checksum(ids: &[u32]) -> u64 {
    let mut value = [0u8; LOOKUP_VALUE_LEN];
    ids.iter()
        .map(|&id| {
            lookup_value(id, &mut value);
            value[0] as u64
        })
        .sum()
}

/// The read phase every point-lookup side shares: reads every row once (warm-up), then
/// times the ids of [`lookup_ids`] and returns their figures. `read(id)` returns the first
/// byte of the value; `setup` is when the side started loading.
pub fn time_lookups(
    p: &EngineParams,
    setup: std::time::Instant,
    mut read: impl FnMut(u32) -> crate::error::Result<u64>,
) -> crate::error::Result<Figures> {
    let mut warm = 0u64;
    for id in 1..=p.lookup_rows {
        warm = warm.wrapping_add(read(id)?);
    }
    let ids = lookup_ids(p.lookup_rows, p.lookups, p.seed);
    let setup_seconds = setup.elapsed().as_secs_f64();
    let start = std::time::Instant::now();
    let mut sum = 0u64;
    for &id in &ids {
        sum = sum.wrapping_add(read(id)?);
    }
    let seconds = start.elapsed().as_secs_f64();
    std::hint::black_box(warm);
    Ok(Figures { count: ids.len() as u64, seconds, setup_seconds, checksum: sum })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_deterministic_and_distinct() {
        let (mut a, mut b) = ([0u8; LOOKUP_VALUE_LEN], [0u8; LOOKUP_VALUE_LEN]);
        lookup_value(7, &mut a);
        lookup_value(7, &mut b);
        assert_eq!(a, b);
        lookup_value(8, &mut b);
        assert_ne!(a, b);
        assert!(a.iter().all(|c| c.is_ascii_lowercase()));
        let letters: std::collections::HashSet<u8> = a.iter().copied().collect();
        let x = mix64(0x6C6F_6F6B_0000_0000 ^ 7).wrapping_add(0x9E37_79B9_7F4A_7C15);
        let r = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let r = (r ^ (r >> 32)).to_le_bytes();
        let bytewise: Vec<u8> = r.iter().map(|&r| b'a' + ((u16::from(r) * 26) >> 8) as u8).collect();
        assert_eq!(a[..8], bytewise[..], "eight letters per word, as byte by byte");
        assert_eq!(letters.len(), 26, "a 1000-byte value uses the whole alphabet");
        assert_eq!(lookup_ids(100, 50, 1), lookup_ids(100, 50, 1));
        assert!(lookup_ids(100, 1000, 1).iter().all(|&id| (1..=100).contains(&id)));
    }

    #[test]
    fn quick_is_smaller_than_full() {
        let (q, f) = (EngineParams::quick(), EngineParams::full());
        assert!(q.lookup_rows < f.lookup_rows && q.bulk_rows < f.bulk_rows);
        assert_eq!(f.lookup_rows, 1_000_000);
        assert_eq!(f.bulk_rows, 10_000_000);
        assert!(f.pool_release_bytes >= 8 << 30);
    }
}
