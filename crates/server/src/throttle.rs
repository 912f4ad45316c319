//! Failed logins by client address, and the delay they earn that address's next logins.
//!
//! After [`FREE_FAILURES`] failed logins from one address, with no quiet [`WINDOW`]
//! between them, each further login attempt from it waits before its password is hashed:
//! [`FIRST_DELAY`], doubled for every further failure, at most [`MAX_DELAY`]. Waits are
//! slots in a queue per address, so parallel connections from one address get one attempt
//! per delay between them, not one each; an attempt whose slot would be more than
//! [`MAX_DELAY`] away is refused at once (18456, nothing hashed).
//!
//! Invariants:
//! - Only the address that failed waits: the wait is a timer in the reactor, taken before
//!   the connection asks for a `login_permits` permit, with no lock held, so other
//!   addresses log in at full speed.
//! - At most [`MAX_ADDRESSES`] addresses are tracked; a new one evicts the one whose last
//!   failure is oldest. A success does not clear an address (an attacker with one valid
//!   login could otherwise reset it between guesses); a quiet [`WINDOW`] does.
//! - IPv6 addresses are tracked by their /64 network (one host usually holds all of it);
//!   IPv4-mapped IPv6 addresses as the IPv4 address.
//! - Throttled attempts are reported at most once per [`REPORT_EVERY`] per address, each
//!   report counting the attempts delayed and refused since the one before.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Failed logins an address may have before its attempts wait.
pub const FREE_FAILURES: u32 = 10;
/// An address with no failure for this long starts over.
pub const WINDOW: Duration = Duration::from_secs(60);
/// The wait of the first throttled attempt; each further failure doubles it.
pub const FIRST_DELAY: Duration = Duration::from_millis(250);
/// The longest wait; an attempt that would wait longer is refused.
pub const MAX_DELAY: Duration = Duration::from_secs(5);
/// Addresses tracked at most.
pub const MAX_ADDRESSES: usize = 10_000;
/// At most one ERRORLOG report per address this often.
pub const REPORT_EVERY: Duration = Duration::from_secs(60);

/// One address's failed logins.
#[derive(Clone, Copy, Debug)]
struct Record {
    failures: u32,
    last_failure: Instant,
    /// When the last admitted throttled attempt goes ahead.
    next_slot: Instant,
    delayed: u32,
    refused: u32,
    reported: Option<Instant>,
}

/// What becomes of a login attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Goes ahead now.
    Go,
    /// Goes ahead after this wait.
    Wait(Duration),
    /// Refused without checking its credentials.
    Refuse,
}

/// A line for ERRORLOG about an address's throttled attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    pub failures: u32,
    /// Attempts delayed and refused since the last report, this one included.
    pub delayed: u32,
    pub refused: u32,
    /// This attempt's wait; None: it is refused.
    pub wait: Option<Duration>,
}

impl Report {
    pub fn line(&self, address: IpAddr) -> String {
        let this = match self.wait {
            Some(w) => format!("this one waits {} ms", w.as_millis()),
            None => "this one is refused".to_string(),
        };
        format!(
            "Login attempts from {address} are throttled after {} failed logins: {} delayed and {} refused since the last report; {this}.",
            self.failures, self.delayed, self.refused
        )
    }
}

/// The failed-login table of a server.
#[derive(Default)]
pub struct LoginThrottle {
    records: Mutex<HashMap<IpAddr, Record>>,
}

/// The key an address is tracked by.
fn key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
        },
    }
}

/// The delay after `failures` failures (at least [`FREE_FAILURES`]).
fn delay(failures: u32) -> Duration {
    let doublings = (failures - FREE_FAILURES).min(16);
    FIRST_DELAY.saturating_mul(1 << doublings).min(MAX_DELAY)
}

impl LoginThrottle {
    /// Decides a login attempt from `address` at `now` (and a report for ERRORLOG when
    /// one is due).
    /// What becomes of a login attempt from `address` at `now` that may wait at most
    /// `longest` (what its connection's login timeout leaves it, say): a wait longer than
    /// that, or than [`MAX_DELAY`], is a refusal.
    pub fn admit(&self, address: IpAddr, now: Instant, longest: Duration) -> (Verdict, Option<Report>) {
        let key = key(address);
        let mut records = self.records.lock();
        let Some(r) = records.get_mut(&key) else { return (Verdict::Go, None) };
        if now.saturating_duration_since(r.last_failure) >= WINDOW {
            records.remove(&key);
            return (Verdict::Go, None);
        }
        if r.failures < FREE_FAILURES {
            return (Verdict::Go, None);
        }
        let start = r.next_slot.max(now) + delay(r.failures);
        let wait = start - now;
        let admitted = wait <= MAX_DELAY.min(longest);
        if admitted {
            r.next_slot = start;
            r.delayed += 1;
        } else {
            r.refused += 1;
        }
        let due = r.reported.is_none_or(|t| now.saturating_duration_since(t) >= REPORT_EVERY);
        let report = due.then(|| {
            r.reported = Some(now);
            let report =
                Report { failures: r.failures, delayed: r.delayed, refused: r.refused, wait: admitted.then_some(wait) };
            (r.delayed, r.refused) = (0, 0);
            report
        });
        (if admitted { Verdict::Wait(wait) } else { Verdict::Refuse }, report)
    }

    /// Records a failed login from `address` at `now`.
    pub fn failure(&self, address: IpAddr, now: Instant) {
        let key = key(address);
        let mut records = self.records.lock();
        if let Some(r) = records.get_mut(&key) {
            if now.saturating_duration_since(r.last_failure) >= WINDOW {
                r.failures = 0;
            }
            r.failures = r.failures.saturating_add(1);
            r.last_failure = now;
            return;
        }
        if records.len() >= MAX_ADDRESSES {
            records.retain(|_, r| now.saturating_duration_since(r.last_failure) < WINDOW);
        }
        if records.len() >= MAX_ADDRESSES {
            if let Some(oldest) = records.iter().min_by_key(|(_, r)| r.last_failure).map(|(k, _)| *k) {
                records.remove(&oldest);
            }
        }
        records.insert(
            key,
            Record { failures: 1, last_failure: now, next_slot: now, delayed: 0, refused: 0, reported: None },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn fail(t: &LoginThrottle, address: &str, times: u32, now: Instant) {
        for _ in 0..times {
            t.failure(ip(address), now);
        }
    }

    #[test]
    fn delays_grow_after_the_free_failures_and_stop_at_the_cap() {
        let t = LoginThrottle::default();
        let t0 = Instant::now();
        fail(&t, "10.0.0.1", FREE_FAILURES - 1, t0);
        assert_eq!(t.admit(ip("10.0.0.1"), t0, MAX_DELAY), (Verdict::Go, None));
        t.failure(ip("10.0.0.1"), t0);
        let (verdict, report) = t.admit(ip("10.0.0.1"), t0, MAX_DELAY);
        assert_eq!(verdict, Verdict::Wait(FIRST_DELAY));
        assert_eq!(report, Some(Report { failures: FREE_FAILURES, delayed: 1, refused: 0, wait: Some(FIRST_DELAY) }));
        assert_eq!(
            report.unwrap().line(ip("10.0.0.1")),
            "Login attempts from 10.0.0.1 are throttled after 10 failed logins: 1 delayed and 0 refused since the last report; this one waits 250 ms."
        );
        // Another address is not slowed.
        assert_eq!(t.admit(ip("10.0.0.2"), t0, MAX_DELAY), (Verdict::Go, None));
        // Each failure doubles the next wait (sequential attempts: each after the last slot).
        let mut now = t0 + Duration::from_secs(1);
        let mut waits = Vec::new();
        for _ in 0..6 {
            t.failure(ip("10.0.0.1"), now);
            let (Verdict::Wait(w), _) = t.admit(ip("10.0.0.1"), now, MAX_DELAY) else { panic!("a wait") };
            waits.push(w.as_millis());
            now += w + Duration::from_millis(1);
        }
        assert_eq!(waits, [500, 1000, 2000, 4000, 5000, 5000]);
        // An attempt whose connection has less time left than the wait is refused now,
        // and takes no slot.
        t.failure(ip("10.0.0.1"), now);
        assert_eq!(t.admit(ip("10.0.0.1"), now, Duration::from_secs(2)).0, Verdict::Refuse);
        assert!(matches!(t.admit(ip("10.0.0.1"), now, MAX_DELAY).0, Verdict::Wait(w) if w == MAX_DELAY));
    }

    #[test]
    fn parallel_attempts_queue_and_the_overflow_is_refused() {
        let t = LoginThrottle::default();
        let t0 = Instant::now();
        fail(&t, "10.0.0.1", FREE_FAILURES + 2, t0);
        // One second apart: five slots fit in the cap, the sixth is refused.
        let verdicts: Vec<Verdict> = (0..6).map(|_| t.admit(ip("10.0.0.1"), t0, MAX_DELAY).0).collect();
        let second = Duration::from_secs(1);
        assert_eq!(
            verdicts,
            [
                Verdict::Wait(second),
                Verdict::Wait(2 * second),
                Verdict::Wait(3 * second),
                Verdict::Wait(4 * second),
                Verdict::Wait(5 * second),
                Verdict::Refuse
            ]
        );
    }

    #[test]
    fn reports_are_rate_limited_and_count_what_they_missed() {
        let t = LoginThrottle::default();
        let t0 = Instant::now();
        fail(&t, "10.0.0.1", FREE_FAILURES + 6, t0);
        assert!(t.admit(ip("10.0.0.1"), t0, MAX_DELAY).1.is_some());
        assert_eq!(t.admit(ip("10.0.0.1"), t0, MAX_DELAY), (Verdict::Refuse, None));
        assert_eq!(
            Report { failures: 16, delayed: 0, refused: 1, wait: None }.line(ip("10.0.0.1")),
            "Login attempts from 10.0.0.1 are throttled after 16 failed logins: 0 delayed and 1 refused since the last report; this one is refused."
        );
        t.failure(ip("10.0.0.1"), t0 + REPORT_EVERY / 2);
        let later = t0 + REPORT_EVERY;
        t.failure(ip("10.0.0.1"), later);
        let (_, report) = t.admit(ip("10.0.0.1"), later, MAX_DELAY);
        assert_eq!(report.map(|r| (r.delayed, r.refused)), Some((1, 1)));
    }

    #[test]
    fn a_quiet_window_clears_an_address() {
        let t = LoginThrottle::default();
        let t0 = Instant::now();
        fail(&t, "10.0.0.1", FREE_FAILURES, t0);
        assert_eq!(t.admit(ip("10.0.0.1"), t0 + WINDOW, MAX_DELAY), (Verdict::Go, None));
        assert_eq!(t.records.lock().len(), 0);
        fail(&t, "10.0.0.1", FREE_FAILURES - 1, t0);
        t.failure(ip("10.0.0.1"), t0 + WINDOW);
        assert_eq!(t.admit(ip("10.0.0.1"), t0 + WINDOW, MAX_DELAY).0, Verdict::Go, "the count started over");
    }

    #[test]
    fn the_table_is_bounded_and_evicts_the_oldest() {
        let t = LoginThrottle::default();
        let t0 = Instant::now();
        for i in 0..MAX_ADDRESSES as u32 {
            t.failure(IpAddr::V4(i.into()), t0 + Duration::from_micros(u64::from(i)));
        }
        fail(&t, "0.0.0.0", FREE_FAILURES, t0 + Duration::from_secs(2));
        assert_eq!(t.records.lock().len(), MAX_ADDRESSES);
        // 0.0.0.1 had the oldest failure (address 0.0.0.0 was refreshed before it filled).
        let newcomer = t0 + Duration::from_secs(3);
        t.failure(ip("192.0.2.1"), newcomer);
        assert_eq!(t.records.lock().len(), MAX_ADDRESSES);
        assert!(!t.records.lock().contains_key(&ip("0.0.0.1")));
        assert!(matches!(t.admit(ip("0.0.0.0"), newcomer, MAX_DELAY).0, Verdict::Wait(_)));
    }

    #[test]
    fn ipv6_is_tracked_by_its_network_and_mapped_ipv4_as_ipv4() {
        let t = LoginThrottle::default();
        let t0 = Instant::now();
        fail(&t, "2001:db8::1", FREE_FAILURES / 2, t0);
        fail(&t, "2001:db8::2", FREE_FAILURES / 2, t0);
        assert!(matches!(t.admit(ip("2001:db8::3"), t0, MAX_DELAY).0, Verdict::Wait(_)));
        assert_eq!(t.admit(ip("2001:db8:0:1::1"), t0, MAX_DELAY).0, Verdict::Go);
        fail(&t, "::ffff:10.0.0.9", FREE_FAILURES, t0);
        assert!(matches!(t.admit(ip("10.0.0.9"), t0, MAX_DELAY).0, Verdict::Wait(_)));
    }
}
