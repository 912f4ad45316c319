//! One allocation for identical snapshots. Most databases of a server have the same
//! security — the defaults of every database one login made, the copies of one template
//! — so a loaded or changed [`Security`] is looked up here by content and, when an equal
//! snapshot is alive, that one is used instead: an open idle database then costs a
//! pointer here, not its own fourteen principals and thirteen schemas.
//!
//! Invariants: a snapshot is immutable once shared (a change builds the next one), so
//! sharing an equal one is indistinguishable from holding one's own; the table holds only
//! weak references, so a snapshot lives as long as a database holds it; dead entries are
//! swept whenever the table has doubled since the last sweep, so the table stays within
//! twice the live snapshots (plus [`SWEEP_FLOOR`]).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::Mutex;

use super::Security;

/// Entries below which the table is never swept.
const SWEEP_FLOOR: usize = 64;

#[derive(Default)]
struct Table {
    /// Content hash → the snapshots with that hash (equal ones are one entry).
    by_hash: HashMap<u64, Vec<Weak<Security>>>,
    /// Entries in `by_hash`, and how many were alive at the last sweep.
    entries: usize,
    live_at_sweep: usize,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Mutex::default);
static HASHER: LazyLock<foldhash::fast::FixedState> = LazyLock::new(foldhash::fast::FixedState::default);

/// `security`, or the live snapshot equal to it.
pub fn shared(security: Security) -> Arc<Security> {
    let hash = HASHER.hash_one(&security);
    let mut table = TABLE.lock();
    let table = &mut *table;
    let bucket = table.by_hash.entry(hash).or_default();
    if let Some(same) = bucket.iter().filter_map(Weak::upgrade).find(|s| **s == security) {
        return same;
    }
    let before = bucket.len();
    bucket.retain(|w| w.strong_count() > 0);
    let snapshot = Arc::new(security);
    bucket.push(Arc::downgrade(&snapshot));
    table.entries = table.entries + bucket.len() - before;
    if table.entries > SWEEP_FLOOR.max(2 * table.live_at_sweep) {
        table.by_hash.retain(|_, b| {
            b.retain(|w| w.strong_count() > 0);
            !b.is_empty()
        });
        table.entries = table.by_hash.values().map(Vec::len).sum();
        table.live_at_sweep = table.entries;
    }
    snapshot
}

/// Entries in the table (live or not yet swept), for tests.
#[cfg(test)]
fn entries() -> usize {
    TABLE.lock().entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned_by(sid: u8) -> Security {
        Security::defaults("tenant", vec![sid])
    }

    #[test]
    fn equal_snapshots_are_one_allocation_and_different_ones_are_not() {
        let a = shared(owned_by(7));
        let b = shared(owned_by(7));
        let c = shared(owned_by(8));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(a.principal("dbo").and_then(|p| p.sid.clone()), Some(vec![7]));
        assert_eq!(c.principal("dbo").and_then(|p| p.sid.clone()), Some(vec![8]));
    }

    #[test]
    fn the_table_stays_bounded_by_the_live_snapshots() {
        for round in 0..20u32 {
            let live: Vec<_> = (0..100u32)
                .map(|i| shared(Security::defaults("tenant", (round * 1000 + i).to_le_bytes().to_vec())))
                .collect();
            assert_eq!(live.len(), 100);
        }
        // Every snapshot above is dead; other tests' may be alive, few in number.
        assert!(entries() <= 2 * 100 + SWEEP_FLOOR + 16, "{} entries", entries());
    }
}
