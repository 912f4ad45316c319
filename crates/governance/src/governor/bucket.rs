//! A token bucket: the allowance of something a database's requests use (CPU time, log
//! bytes) that fills at a fixed rate up to a burst, and that its requests draw from as
//! they use it. A request that leaves it below zero waits until it would be back at zero:
//! over any stretch of time longer than the burst, use stays within the rate.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How much use a full bucket lets through at once, in seconds of its rate: short
/// requests of a database that stays under its limit never wait, and a database that
/// has been idle takes at most this much of its rate's worth at once.
const BURST_SECONDS: f64 = 0.02;
/// The longest single wait a charge asks for (a longer deficit is waited off in turns,
/// each request charging again after its wait).
const MAX_WAIT: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct State {
    /// Units per second; None: no limit (nothing is refused, use is still counted).
    rate_per_second: Option<f64>,
    balance: f64,
    refilled_at: Instant,
    /// Everything charged since the bucket was made, and the waits it asked for.
    used_total: u64,
    waits_total: u64,
    waited_total: Duration,
    /// For a bucket charged by a running total (log bytes written): the total last seen.
    seen_total: Option<u64>,
}

/// What a bucket shows in the DMV.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BucketUse {
    pub rate_per_second: Option<f64>,
    pub used_total: u64,
    pub waits_total: u64,
    pub waited_ms_total: u64,
}

#[derive(Debug)]
pub struct Bucket {
    state: Mutex<State>,
}

impl Bucket {
    pub fn new(rate_per_second: Option<f64>, now: Instant) -> Bucket {
        let state = State {
            rate_per_second,
            balance: rate_per_second.map_or(0.0, |r| r * BURST_SECONDS),
            refilled_at: now,
            used_total: 0,
            waits_total: 0,
            waited_total: Duration::ZERO,
            seen_total: None,
        };
        Bucket { state: Mutex::new(state) }
    }

    /// Changes the rate; the bucket starts full at the new one.
    pub fn set_rate(&self, rate_per_second: Option<f64>, now: Instant) {
        let mut s = self.state.lock();
        s.rate_per_second = rate_per_second;
        s.balance = rate_per_second.map_or(0.0, |r| r * BURST_SECONDS);
        s.refilled_at = now;
    }

    pub fn limited(&self) -> bool {
        self.state.lock().rate_per_second.is_some()
    }

    /// Takes `used` units out; how long the caller must wait before it goes on.
    pub fn charge(&self, used: u64, now: Instant) -> Duration {
        self.take(used, now, true)
    }

    /// As [`Bucket::charge`] for a share (a soft limit): a deficit is waited off only while
    /// the resource is `contended`; otherwise use beyond the rate is free, and no debt is
    /// carried into the next contention.
    pub fn charge_share(&self, used: u64, now: Instant, contended: bool) -> Duration {
        self.take(used, now, contended)
    }

    /// Takes `used` units out; with `enforce`, how long the caller must wait off a
    /// deficit, else the deficit is forgiven.
    fn take(&self, used: u64, now: Instant, enforce: bool) -> Duration {
        let mut s = self.state.lock();
        s.used_total = s.used_total.saturating_add(used);
        let Some(rate) = s.rate_per_second else { return Duration::ZERO };
        let elapsed = now.saturating_duration_since(s.refilled_at).as_secs_f64();
        s.refilled_at = now.max(s.refilled_at);
        s.balance = (s.balance + elapsed * rate).min(rate * BURST_SECONDS) - used as f64;
        if s.balance >= 0.0 {
            return Duration::ZERO;
        }
        if !enforce {
            s.balance = 0.0;
            return Duration::ZERO;
        }
        let wait = Duration::from_secs_f64(-s.balance / rate).min(MAX_WAIT);
        s.waits_total += 1;
        s.waited_total += wait;
        wait
    }

    /// As [`Bucket::charge`] for use counted by a running total that only grows (a log's
    /// bytes written): charges what it grew by since the last call. The first call only
    /// notes where the total stands.
    pub fn charge_total(&self, total: u64, now: Instant) -> Duration {
        let used = {
            let mut s = self.state.lock();
            let used = s.seen_total.map_or(0, |seen| total.saturating_sub(seen));
            s.seen_total = Some(total.max(s.seen_total.unwrap_or(0)));
            used
        };
        self.charge(used, now)
    }

    pub fn usage(&self) -> BucketUse {
        let s = self.state.lock();
        BucketUse {
            rate_per_second: s.rate_per_second,
            used_total: s.used_total,
            waits_total: s.waits_total,
            waited_ms_total: s.waited_total.as_millis() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_beyond_the_rate_waits_and_a_burst_does_not() {
        let start = Instant::now();
        let b = Bucket::new(Some(1000.0), start);
        // The burst (20 units) passes at once.
        assert_eq!(b.charge(20, start), Duration::ZERO);
        // 50 more: a twentieth of a second at 1,000/s.
        assert_eq!(b.charge(50, start), Duration::from_millis(50));
        // A second later the bucket is full again, not more than full.
        let later = start + Duration::from_secs(1);
        assert_eq!(b.charge(20, later), Duration::ZERO);
        assert_eq!(b.charge(1, later), Duration::from_millis(1));
        let u = b.usage();
        assert_eq!((u.used_total, u.waits_total, u.waited_ms_total), (91, 2, 51));
        // A huge deficit is waited off a second at a time.
        assert_eq!(b.charge(1_000_000, later), MAX_WAIT);
    }

    #[test]
    fn a_share_waits_only_under_contention_and_keeps_no_debt() {
        let start = Instant::now();
        let b = Bucket::new(Some(1000.0), start);
        assert_eq!(b.charge_share(1000, start, false), Duration::ZERO, "idle CPU is free");
        assert_eq!(b.charge_share(20, start, true), Duration::from_millis(20), "no debt from before");
        assert_eq!(b.usage().waits_total, 1);
    }

    #[test]
    fn no_rate_counts_use_and_never_waits() {
        let now = Instant::now();
        let b = Bucket::new(None, now);
        assert_eq!(b.charge(u64::MAX / 2, now), Duration::ZERO);
        assert_eq!(b.usage().used_total, u64::MAX / 2);
    }

    #[test]
    fn a_running_total_is_charged_by_what_it_grew() {
        let now = Instant::now();
        let b = Bucket::new(Some(500.0), now);
        assert_eq!(b.charge_total(1_000_000, now), Duration::ZERO, "the first total only sets the mark");
        assert_eq!(b.charge_total(1_000_010, now), Duration::ZERO);
        assert_eq!(b.charge_total(1_000_030, now), Duration::from_millis(40));
        assert_eq!(b.usage().used_total, 30);
    }
}
