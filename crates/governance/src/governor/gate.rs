//! A database's limit on requests running at once (`MAX_CONCURRENT_REQUESTS`): at most
//! `n` of its requests (batches, RPCs, bulk loads) run at once; the others wait in a
//! first-come, first-served queue, never fail for it, and can be cancelled while they
//! wait.
//!
//! Invariants:
//! - A request of a session with an open transaction is never queued: it may hold locks
//!   a running request of the same database waits for, and queueing it behind that
//!   request would deadlock the two.
//! - Tickets are served in order: a request that arrived first runs first (a fair
//!   queue), whatever the order threads wake in.

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
pub struct Gate {
    state: Mutex<GateState>,
    turn: Condvar,
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

impl Gate {
    /// A gate with `limit` (0: none).
    pub fn new(limit: u32) -> Gate {
        let gate = Gate::default();
        gate.set_limit(limit);
        gate
    }

    /// Sets the limit (0: none). Requests already running finish; queued ones are
    /// admitted as the new limit allows.
    pub fn set_limit(&self, limit: u32) {
        self.state.lock().usage.limit = if limit == 0 { u32::MAX } else { limit };
        self.turn.notify_all();
    }

    pub fn limited(&self) -> bool {
        self.state.lock().usage.limit != u32::MAX
    }

    /// Waits for a turn to run a request (none needed for a session inside a
    /// transaction). Error 3617 when `cancel` is set while it waits.
    pub fn enter(self: &Arc<Self>, in_transaction: bool, cancel: &AtomicBool) -> SqlResult<RequestSlot> {
        let mut state = self.state.lock();
        if in_transaction {
            state.usage.running += 1;
            state.usage.admitted_total += 1;
            drop(state);
            return Ok(RequestSlot { gate: self.clone() });
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        let must_wait = ticket != state.serving || state.usage.running >= state.usage.limit;
        let started = Instant::now();
        if must_wait {
            let _waiting = tessera_waits::begin(tessera_waits::WaitType::RequestTurn, tessera_waits::Resource::Nothing);
            state.usage.queued += 1;
            while ticket != state.serving || state.usage.running >= state.usage.limit {
                if cancel.load(Ordering::Relaxed) {
                    state.usage.queued -= 1;
                    // Its ticket is passed over: the next in line is served.
                    state.skipped_ticket(ticket);
                    state.skip_cancelled();
                    drop(state);
                    self.turn.notify_all();
                    return Err(SqlError::from(tessera_errors::Error::Cancelled));
                }
                self.turn.wait_for(&mut state, CANCEL_POLL);
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
        self.turn.notify_all();
        Ok(RequestSlot { gate: self.clone() })
    }

    pub fn usage(&self) -> GateUse {
        self.state.lock().usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_beyond_the_limit_wait_in_turn_and_a_cancelled_one_gives_its_turn_away() {
        let gate = Arc::new(Gate::new(1));
        let never = AtomicBool::new(false);
        let first = gate.enter(false, &never).unwrap();
        // A session inside a transaction is never queued.
        let in_tx = gate.enter(true, &never).unwrap();
        drop(in_tx);
        let order = Arc::new(Mutex::new(Vec::new()));
        let cancel_b = Arc::new(AtomicBool::new(false));
        let waiter = |name: &'static str, cancel: Arc<AtomicBool>| {
            let (gate, order) = (gate.clone(), order.clone());
            std::thread::spawn(move || {
                let slot = gate.enter(false, &cancel);
                order.lock().push((name, slot.is_ok()));
            })
        };
        let a = waiter("a", Arc::new(AtomicBool::new(false)));
        while gate.usage().queued < 1 {
            std::thread::yield_now();
        }
        let b = waiter("b", cancel_b.clone());
        while gate.usage().queued < 2 {
            std::thread::yield_now();
        }
        let c = waiter("c", Arc::new(AtomicBool::new(false)));
        while gate.usage().queued < 3 {
            std::thread::yield_now();
        }
        cancel_b.store(true, Ordering::Relaxed);
        b.join().unwrap();
        assert_eq!(*order.lock(), [("b", false)], "b gave up its place");
        drop(first);
        a.join().unwrap();
        c.join().unwrap();
        assert_eq!(*order.lock(), [("b", false), ("a", true), ("c", true)], "a came before c");
        let usage = gate.usage();
        assert_eq!((usage.running, usage.queued, usage.queued_total), (0, 0, 2));
        gate.set_limit(0);
        assert!(!gate.limited());
    }
}
