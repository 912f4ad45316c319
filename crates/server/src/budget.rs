//! Byte budgets shared by every connection: what spool files hold on disk
//! (`max_spool_mb`, see `spool`) and what request messages hold in memory
//! (`max_request_memory_mb`, see `packet::read_request_after`).
//!
//! Invariant: a budget's used bytes never pass its limit — every charge is checked before
//! it is made — and every byte charged is given back exactly once, when the [`Charge`]
//! holding it is dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The bytes one kind of thing may hold at once, over all connections, and those it holds.
#[derive(Debug)]
pub struct Budget {
    limit_bytes: u64,
    used_bytes: AtomicU64,
}

impl Budget {
    pub fn new(limit_bytes: u64) -> Arc<Budget> {
        Arc::new(Budget { limit_bytes, used_bytes: AtomicU64::new(0) })
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes.load(Ordering::Acquire)
    }

    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }

    /// Charges `n` bytes unless that would pass the limit; false (nothing charged) then.
    fn try_charge(&self, n: u64) -> bool {
        let mut used = self.used_bytes.load(Ordering::Acquire);
        loop {
            let after = used.saturating_add(n);
            if after > self.limit_bytes {
                return false;
            }
            match self.used_bytes.compare_exchange_weak(used, after, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    fn give_back(&self, n: u64) {
        let before = self.used_bytes.fetch_sub(n, Ordering::AcqRel);
        assert!(before >= n, "a budget is given back more than was charged");
    }
}

/// Bytes one holder has charged to a budget, given back when it is dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Charge {
    /// Nothing charged yet.
    pub fn new(budget: &Arc<Budget>) -> Charge {
        Charge { budget: budget.clone(), bytes: 0 }
    }

    /// Nothing charged, to a budget of nothing (for what holds no memory worth counting).
    pub fn none() -> Charge {
        Charge::new(&Budget::new(0))
    }

    /// Charges `n` bytes more; false (nothing charged) when the budget has no room.
    pub fn grow(&mut self, n: u64) -> bool {
        let charged = self.budget.try_charge(n);
        if charged {
            self.bytes += n;
        }
        charged
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn budget(&self) -> &Budget {
        &self.budget
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_stop_at_the_limit_and_come_back_when_dropped() {
        let budget = Budget::new(100);
        let mut a = Charge::new(&budget);
        let mut b = Charge::new(&budget);
        assert!(a.grow(60));
        assert!(!b.grow(41), "past the limit");
        assert!(b.grow(40));
        assert_eq!(budget.used_bytes(), 100);
        drop(a);
        assert_eq!(budget.used_bytes(), 40);
        assert!(b.grow(60));
        drop(b);
        assert_eq!(budget.used_bytes(), 0);
    }
}
