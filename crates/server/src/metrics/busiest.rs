//! Which databases the metrics show one by one: with 10,000 databases a label per
//! database would make 10,000 series of each metric, so only the `metrics_top_databases`
//! busiest get one (the totals, without a label, cover every database).
//!
//! The rule: a database's activity is the number of its writing transactions that ended
//! (committed or rolled back), exponentially weighted with a time constant of one
//! minute: at each scrape the activity of every open database decays by
//! `exp(-elapsed / 60 s)` and gains the transactions it ended since the previous scrape.
//! The result does not depend on how often, or by how many scrapers, the metrics are
//! read. The N most active are shown (ties: the one that wrote more log, weighted the
//! same way, then by name); one whose weighted activity is below [`QUIET`] — nothing for
//! about five minutes — is never shown. A database's counters are those since it opened:
//! one that closes drops out, and one that opens again starts from zero (a counter reset
//! to Prometheus).

use std::collections::HashMap;
use std::time::Instant;

use parking_lot::Mutex;
use tessera_database::TransactionCounts;

/// The time constant of the weighting, in seconds.
const WINDOW_SECS: f64 = 60.0;

/// Weighted activity below which a database is left out (`exp(-5 min / 1 min)` of one
/// transaction is 0.0067).
pub const QUIET: f64 = 0.01;

/// One open database's counters at a scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct DatabaseSample {
    pub name: String,
    pub id: u32,
    /// Its writing transactions since it opened.
    pub transactions: TransactionCounts,
    /// Bytes its log wrote since it opened.
    pub log_bytes: u64,
}

/// A ranked database: its sample and its weighted activity (transactions per window).
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    pub sample: DatabaseSample,
    pub activity: f64,
}

/// What the previous scrape saw of one database.
#[derive(Clone, Copy, Debug)]
struct Seen {
    transactions: u64,
    log_bytes: u64,
    activity: f64,
    log_activity: f64,
}

/// The weighted activity of each open database, kept between scrapes (one entry per open
/// database, dropped when it is no longer open).
#[derive(Debug, Default)]
pub struct Busiest {
    state: Mutex<Option<(Instant, HashMap<u32, Seen>)>>,
}

/// The part of `now` that is new since `before`; all of it after a reset (the database
/// closed and opened again).
fn since(before: u64, now: u64) -> u64 {
    if now >= before {
        now - before
    } else {
        now
    }
}

impl Busiest {
    /// Updates every database's activity with `samples` (every open database now) and
    /// returns the `n` most active, most active first.
    pub fn rank(&self, samples: Vec<DatabaseSample>, now: Instant, n: usize) -> Vec<Ranked> {
        let mut state = self.state.lock();
        let (decay, previous) = match state.take() {
            Some((at, seen)) => ((-(now.saturating_duration_since(at).as_secs_f64()) / WINDOW_SECS).exp(), seen),
            None => (1.0, HashMap::new()),
        };
        let mut seen = HashMap::with_capacity(samples.len());
        let mut ranked = Vec::with_capacity(samples.len());
        for sample in samples {
            let transactions = sample.transactions.committed + sample.transactions.rolled_back;
            let before = previous.get(&sample.id).copied().unwrap_or(Seen {
                transactions: 0,
                log_bytes: 0,
                activity: 0.0,
                log_activity: 0.0,
            });
            let now_seen = Seen {
                transactions,
                log_bytes: sample.log_bytes,
                activity: before.activity * decay + since(before.transactions, transactions) as f64,
                log_activity: before.log_activity * decay + since(before.log_bytes, sample.log_bytes) as f64,
            };
            seen.insert(sample.id, now_seen);
            if now_seen.activity >= QUIET {
                ranked.push((now_seen.log_activity, Ranked { sample, activity: now_seen.activity }));
            }
        }
        *state = Some((now, seen));
        ranked.sort_by(|(log_a, a), (log_b, b)| {
            b.activity
                .total_cmp(&a.activity)
                .then(log_b.total_cmp(log_a))
                .then_with(|| a.sample.name.cmp(&b.sample.name))
        });
        ranked.truncate(n);
        ranked.into_iter().map(|(_, r)| r).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample(id: u32, committed: u64, log_bytes: u64) -> DatabaseSample {
        DatabaseSample {
            name: format!("db{id}"),
            id,
            transactions: TransactionCounts { committed, rolled_back: 0 },
            log_bytes,
        }
    }

    fn names(r: &[Ranked]) -> Vec<&str> {
        r.iter().map(|r| r.sample.name.as_str()).collect()
    }

    #[test]
    fn the_most_active_lately_are_shown_and_quiet_ones_never() {
        let b = Busiest::default();
        let t0 = Instant::now();
        // 10,000 databases, of which three did something.
        let mut all: Vec<DatabaseSample> = (0..10_000).map(|i| sample(i, 0, 0)).collect();
        all[7] = sample(7, 50, 1000);
        all[8] = sample(8, 500, 10);
        all[9] = sample(9, 50, 2000);
        let top = b.rank(all.clone(), t0, 2);
        assert_eq!(names(&top), ["db8", "db9"], "by transactions, then by log bytes");
        assert_eq!(b.rank(all.clone(), t0, 20).len(), 3, "databases that did nothing are left out");
        // Ten minutes later db7 does 10 more, db8 nothing: old activity has decayed away.
        all[7] = sample(7, 60, 1100);
        let later = b.rank(all.clone(), t0 + Duration::from_secs(600), 2);
        assert_eq!(names(&later), ["db7", "db8"]);
        assert!((later[0].activity - 10.0).abs() < 0.01, "{}", later[0].activity);
        // Nothing for ten more minutes: nobody is busy.
        assert!(b.rank(all, t0 + Duration::from_secs(1200), 2).is_empty());
    }

    #[test]
    fn scraping_more_often_weighs_about_the_same_and_reopened_databases_start_over() {
        let (every_second, once) = (Busiest::default(), Busiest::default());
        let t0 = Instant::now();
        every_second.rank(vec![sample(1, 0, 0)], t0, 5);
        once.rank(vec![sample(1, 0, 0)], t0, 5);
        for s in 1..=30u64 {
            every_second.rank(vec![sample(1, s * 10, 0)], t0 + Duration::from_secs(s), 5);
        }
        let a = every_second.rank(vec![sample(1, 300, 0)], t0 + Duration::from_secs(30), 5)[0].activity;
        let b = once.rank(vec![sample(1, 300, 0)], t0 + Duration::from_secs(30), 5)[0].activity;
        assert!(a < 300.0 && b == 300.0 && a > 0.7 * b, "{a} {b}");
        // Closed and opened again: its counters restart, and what it does now counts.
        let reopened = every_second.rank(vec![sample(1, 20, 0)], t0 + Duration::from_secs(31), 5);
        assert!(reopened[0].activity > a, "{} {a}", reopened[0].activity);
    }
}
