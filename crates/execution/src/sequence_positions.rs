//! Where each sequence stands in the server's memory (`crate::sequences` hands out its
//! values): kept in `Shared`, so apart from the code that uses it.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tessera_semantics::catalog::Sequence;

/// The position of one sequence in memory.
#[derive(Default)]
pub(crate) struct Position {
    /// Read from storage (or begun afresh) for this restart count.
    pub(crate) loaded: Option<u32>,
    /// The next value to hand out; None once a sequence without CYCLE is exhausted.
    pub(crate) next: Option<i128>,
    /// How many values, from `next` on, the last durable write covers.
    pub(crate) covered: u64,
    /// The last value handed out since the position was loaded.
    pub(crate) last: Option<i128>,
}

/// Which sequence a position is of: its database (lower-cased), object id and creation
/// time (so a sequence made again under a reused id starts afresh).
type SequenceKey = (String, i32, i64);

/// Every sequence's position in memory.
#[derive(Default)]
pub struct Sequences(Mutex<HashMap<SequenceKey, Arc<Mutex<Position>>>>);

impl Sequences {
    pub(crate) fn position(&self, db: &str, s: &Sequence) -> Arc<Mutex<Position>> {
        self.0.lock().entry((db.to_lowercase(), s.id, s.created)).or_default().clone()
    }

    /// Forgets the positions of database `db`'s sequences (it closed, or was dropped or
    /// restored): the next use reads them from storage.
    pub fn forget_database(&self, db: &str) {
        let db = db.to_lowercase();
        self.0.lock().retain(|(d, ..), _| *d != db);
    }

    pub(crate) fn forget(&self, db: &str, s: &Sequence) {
        self.0.lock().remove(&(db.to_lowercase(), s.id, s.created));
    }
}
