//! When DDL last changed the definition of each of a database's objects, as SNAPSHOT
//! isolation needs to know it: a SNAPSHOT transaction reads rows as they were when its
//! snapshot began, but the catalog only as it is now (definitions are not versioned), so
//! SQL Server refuses (3961) a statement that uses an object redefined — ALTER TABLE,
//! TRUNCATE, an index created or dropped — by a transaction that committed after the
//! snapshot began.
//!
//! Each redefinition is stamped with the version clock read after its commit (no lower
//! than the commit's CSN), and marked [`COMMITTING`] from before the commit until then: a
//! snapshot older than the commit can only miss the stamp by reading it before the commit
//! began, and it cannot, because it reads it under the statement's schema-stability lock,
//! which waits for the DDL's schema-modification lock, held until the commit is done. A
//! snapshot taken in the few instructions between the commit and the stamp is refused
//! too (a spurious 3961, never a missed one).
//!
//! Memory: one entry per object redefined since the database opened (none for a database
//! whose definitions never change).

use std::collections::HashMap;

use parking_lot::Mutex;

/// The stamp of a redefinition whose transaction is committing.
const COMMITTING: u64 = u64::MAX;

#[derive(Default)]
pub struct Redefinitions {
    stamps: Mutex<HashMap<u32, u64>>,
}

/// A redefinition about to commit ([`Redefinitions::begin`]), to end with its
/// transaction.
#[must_use = "a redefinition must end with its transaction"]
pub struct Redefining {
    object: u32,
    previous: Option<u64>,
}

impl Redefinitions {
    /// Marks `object` as being redefined by a transaction about to commit.
    pub fn begin(&self, object: u32) -> Redefining {
        let previous = self.stamps.lock().insert(object, COMMITTING);
        Redefining { object, previous }
    }

    /// The transaction ended: committed at or before the clock `committed_at`, or (None)
    /// not committed, when the object's stamp goes back to what it was.
    pub fn end(&self, r: Redefining, committed_at: Option<u64>) {
        let mut stamps = self.stamps.lock();
        match committed_at.or(r.previous) {
            Some(stamp) => stamps.insert(r.object, stamp),
            None => stamps.remove(&r.object),
        };
    }

    /// Whether `object` was redefined by a transaction that committed after the snapshot
    /// taken at `csn` (or is committing now).
    pub fn since(&self, object: u32, csn: u64) -> bool {
        self.stamps.lock().get(&object).is_some_and(|&stamp| stamp > csn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_committing_then_the_clock_or_what_it_was() {
        let r = Redefinitions::default();
        assert!(!r.since(7, 0));
        let first = r.begin(7);
        assert!(r.since(7, u64::MAX - 1), "committing: every snapshot is older");
        r.end(first, Some(10));
        assert!(r.since(7, 9) && !r.since(7, 10));
        let second = r.begin(7);
        r.end(second, None);
        assert!(r.since(7, 9) && !r.since(7, 10), "a rollback puts the stamp back");
        let other = r.begin(8);
        r.end(other, None);
        assert!(!r.since(8, 0), "never committed: no stamp");
    }
}
