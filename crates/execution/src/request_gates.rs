//! Per-database request limits (a tessera extension, set with `ALTER DATABASE … SET
//! MAX_CONCURRENT_REQUESTS = n`): at most `n` requests (batches, RPCs, bulk loads) of a
//! database run at once; the others wait in a first-come, first-served queue, never fail
//! for it, and can be cancelled while they wait.
//!
//! Invariants:
//! - Only databases with a limit have a gate (a database without one costs nothing here),
//!   so the memory held is bounded by the number of limited databases.
//! - A request of a session with an open transaction is never queued: it may hold locks
//!   a running request of the same database waits for, and queueing it behind that
//!   request would deadlock the two.
//! - Tickets are served in order: a request that arrived first runs first (a fair
//!   queue), whatever the order threads wake in.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tessera_errors::{SqlError, SqlResult};

/// How often a queued request looks at its cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// What a gate's DMV row shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GateUse {
    pub limit: u32,
    pub running: u32,
    pub queued: u32,
    /// Requests admitted since the gate was made, and how many of them waited.
    pub admitted_total: u64,
    pub queued_total: u64,
    pub wait_total_ms: u64,
}

#[derive(Debug, Default)]
struct GateState {
    usage: GateUse,
    /// The next ticket to hand out, and the next one to admit.
    next_ticket: u64,
    serving: u64,
    /// Tickets of requests cancelled while queued behind others: passed over when their
    /// turn comes (at most one per queued request).
    cancelled: std::collections::BTreeSet<u64>,
}

impl GateState {
    fn skipped_ticket(&mut self, ticket: u64) {
        self.cancelled.insert(ticket);
    }

    /// Moves past the tickets of cancelled requests.
    fn skip_cancelled(&mut self) {
        while self.cancelled.remove(&self.serving) {
            self.serving += 1;
        }
    }
}

#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    turn: Condvar,
}

/// The gates of every database that has a limit, by database id.
#[derive(Debug, Default)]
pub struct RequestGates {
    gates: Mutex<HashMap<u32, Arc<Gate>>>,
    /// How many gates there are (read without the lock: no gate, nothing to do).
    count: std::sync::atomic::AtomicUsize,
}

/// A running request's place in its database's gate: given back when dropped.
pub struct RequestSlot {
    gate: Arc<Gate>,
}

impl Drop for RequestSlot {
    fn drop(&mut self) {
        let mut state = self.gate.state.lock();
        state.usage.running -= 1;
        drop(state);
        self.gate.turn.notify_all();
    }
}

impl RequestGates {
    /// Sets (or, with 0, removes) the limit of database `id`. Requests already running
    /// finish; queued ones are admitted as the new limit allows.
    pub fn set_limit(&self, id: u32, limit: u32) {
        let mut gates = self.gates.lock();
        if limit == 0 {
            if let Some(gate) = gates.remove(&id) {
                gate.state.lock().usage.limit = u32::MAX;
                gate.turn.notify_all();
            }
        } else {
            let gate = gates.entry(id).or_default();
            gate.state.lock().usage.limit = limit;
            gate.turn.notify_all();
        }
        self.count.store(gates.len(), Ordering::Relaxed);
    }

    /// Forgets a dropped database's gate.
    pub fn forget(&self, id: u32) {
        self.set_limit(id, 0);
    }

    /// Waits for a turn to run a request in database `id` (none needed without a limit,
    /// or for a session inside a transaction). Error 3617 when `cancel` is set while it
    /// waits.
    pub fn enter(&self, id: u32, in_transaction: bool, cancel: &AtomicBool) -> SqlResult<Option<RequestSlot>> {
        let Some(gate) = self.gates.lock().get(&id).cloned() else { return Ok(None) };
        let mut state = gate.state.lock();
        if in_transaction {
            state.usage.running += 1;
            state.usage.admitted_total += 1;
            drop(state);
            return Ok(Some(RequestSlot { gate }));
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        let must_wait = ticket != state.serving || state.usage.running >= state.usage.limit;
        let started = Instant::now();
        if must_wait {
            state.usage.queued += 1;
            while ticket != state.serving || state.usage.running >= state.usage.limit {
                if cancel.load(Ordering::Relaxed) {
                    state.usage.queued -= 1;
                    // Its ticket is passed over: the next in line is served.
                    state.skipped_ticket(ticket);
                    state.skip_cancelled();
                    drop(state);
                    gate.turn.notify_all();
                    return Err(SqlError::new(3617, "The query was cancelled.").with_severity(25));
                }
                gate.turn.wait_for(&mut state, CANCEL_POLL);
                state.skip_cancelled();
            }
            state.usage.queued -= 1;
            state.usage.queued_total += 1;
            state.usage.wait_total_ms += started.elapsed().as_millis() as u64;
        }
        state.serving += 1;
        state.skip_cancelled();
        state.usage.running += 1;
        state.usage.admitted_total += 1;
        drop(state);
        gate.turn.notify_all();
        Ok(Some(RequestSlot { gate }))
    }

    /// Whether any database has a limit.
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Every gate's use, by database id.
    pub fn usage(&self) -> Vec<(u32, GateUse)> {
        let gates: Vec<(u32, Arc<Gate>)> = self.gates.lock().iter().map(|(id, g)| (*id, g.clone())).collect();
        let mut out: Vec<(u32, GateUse)> = gates.into_iter().map(|(id, g)| (id, g.state.lock().usage)).collect();
        out.sort_unstable_by_key(|(id, _)| *id);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_beyond_the_limit_wait_in_turn_and_a_cancelled_one_gives_its_turn_away() {
        let gates = Arc::new(RequestGates::default());
        let never = AtomicBool::new(false);
        assert!(gates.enter(7, false, &never).unwrap().is_none(), "no limit, no gate");
        gates.set_limit(7, 1);
        let first = gates.enter(7, false, &never).unwrap().expect("a slot");
        // A session inside a transaction is never queued.
        let in_tx = gates.enter(7, true, &never).unwrap().expect("a slot");
        drop(in_tx);
        let order = Arc::new(Mutex::new(Vec::new()));
        let cancel_b = Arc::new(AtomicBool::new(false));
        let waiter = |name: &'static str, cancel: Arc<AtomicBool>| {
            let (gates, order) = (gates.clone(), order.clone());
            std::thread::spawn(move || {
                let slot = gates.enter(7, false, &cancel);
                order.lock().push((name, slot.is_ok()));
            })
        };
        let a = waiter("a", Arc::new(AtomicBool::new(false)));
        while gates.usage()[0].1.queued < 1 {
            std::thread::yield_now();
        }
        let b = waiter("b", cancel_b.clone());
        while gates.usage()[0].1.queued < 2 {
            std::thread::yield_now();
        }
        let c = waiter("c", Arc::new(AtomicBool::new(false)));
        while gates.usage()[0].1.queued < 3 {
            std::thread::yield_now();
        }
        cancel_b.store(true, Ordering::Relaxed);
        b.join().unwrap();
        assert_eq!(*order.lock(), [("b", false)], "b gave up its place");
        drop(first);
        a.join().unwrap();
        c.join().unwrap();
        assert_eq!(*order.lock(), [("b", false), ("a", true), ("c", true)], "a came before c");
        let usage = gates.usage()[0].1;
        assert_eq!((usage.running, usage.queued, usage.queued_total), (0, 0, 2));
        gates.set_limit(7, 0);
        assert!(gates.usage().is_empty());
    }
}
