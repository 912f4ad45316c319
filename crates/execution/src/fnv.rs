//! FNV-1a: a hash that does not change between runs or builds, for what is shown or kept
//! (`sql_handle`, `query_hash`, `query_plan_hash`, Query Store's text hashes).

/// FNV-1a's starting value.
pub const START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of `bytes`, continuing from `hash` (start from [`START`]).
pub fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
