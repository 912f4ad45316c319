//! The page table: `(file, page)` keys hashed into 64 mutex-protected shards.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use parking_lot::Mutex;

use super::FileId;
use crate::page::PageNo;

pub(super) const SHARDS: usize = 64;

pub(super) type Key = u64;

pub(super) fn key(file: FileId, no: PageNo) -> Key {
    (u64::from(file.0) << 32) | u64::from(no)
}

pub(super) fn key_file(k: Key) -> u32 {
    (k >> 32) as u32
}

pub(super) fn key_page(k: Key) -> PageNo {
    k as u32
}

/// A 64-bit finaliser with full avalanche (every input bit flips each output bit with
/// probability about 1/2), so the top bits pick a shard and the map gets well-spread hashes.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 31;
    h = h.wrapping_mul(0x7fb5_d329_728e_a185);
    h ^= h >> 27;
    h = h.wrapping_mul(0x81da_def4_bc2d_d44d);
    h ^= h >> 33;
    h
}

pub(super) fn shard_of(k: Key) -> usize {
    (mix(k) >> 58) as usize
}

/// Hasher for the shard maps and per-file page sets. Keys are integers, so one mix of the
/// integer (salted, so it is independent of the bits that chose the shard) is enough.
#[derive(Default)]
pub(super) struct KeyHasher(u64);

const SALT: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = mix(self.0 ^ SALT);
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = mix(x ^ SALT);
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = mix(u64::from(x) ^ SALT);
    }
}

pub(super) type KeyMap = HashMap<Key, u32, BuildHasherDefault<KeyHasher>>;
pub(super) type PageSet = HashSet<PageNo, BuildHasherDefault<KeyHasher>>;

/// One shard: its slice of the page table and its hit/miss counters (kept under the shard
/// mutex, so the hot path touches no shared counter).
#[derive(Default)]
pub(super) struct ShardState {
    pub map: KeyMap,
    pub hits: u64,
    pub misses: u64,
}

/// Padded to two cache lines so neighbouring shard mutexes do not false-share.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Shard(pub Mutex<ShardState>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_spread_over_shards() {
        let k = key(FileId(7), 123_456);
        assert_eq!((key_file(k), key_page(k)), (7, 123_456));
        let mut counts = [0usize; SHARDS];
        for no in 0..64_000 {
            counts[shard_of(key(FileId(1), no))] += 1;
        }
        assert!(counts.iter().all(|&c| (700..1300).contains(&c)), "{counts:?}");
    }
}
