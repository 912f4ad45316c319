//! The metrics listener (opt-in with `metrics_port`): `GET /metrics` answers the
//! server's figures in Prometheus' text format (version 0.0.4), gathered when it is asked
//! from the counters each layer keeps anyway — nothing is collected between scrapes, so a
//! server nobody scrapes pays only for the few counters this module adds
//! ([`RequestStats`], and the transaction counts of `tessera_database`). Every metric is
//! listed in docs/metrics.md.
//!
//! - [`RequestStats`]: requests served, by kind, and their latency histogram (one
//!   observation per request, in the busy thread's request loop).
//! - `busiest`: which databases are shown one by one (bounded label cardinality).
//! - `collect`: one scrape's figures, taken from the engine, the plan cache, the sessions,
//!   the waits and the I/O histograms, and their encoding with `prometheus-client`.
//! - `dashboard`: `GET /`, one self-contained page that reads `GET /api/summary` (the
//!   same figures as JSON) every second.
//! - `http`: the listener (hyper, on the server's runtime).

pub mod busiest;
mod collect;
mod dashboard;
mod http;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tessera_io::stats::{Histogram, HistogramSnapshot};

pub use http::{serve, serve_pages, Page, TEXT};

use crate::packet::kind;

/// The requests counted, by their packet type, and their `kind` label.
const REQUEST_KINDS: [(u8, &str); 4] = [
    (kind::SQL_BATCH, "batch"),
    (kind::RPC, "rpc"),
    (kind::BULK_LOAD, "bulk_load"),
    (kind::TRANSACTION_MANAGER, "transaction_manager"),
];

/// Requests served since the server started: how many of each kind, and how long each
/// took from the moment it had been read to its last response packet written. Recording is a
/// clock read and three relaxed additions; nothing is locked or allocated.
#[derive(Debug, Default)]
pub struct RequestStats {
    counts: [AtomicU64; REQUEST_KINDS.len()],
    duration: Histogram,
}

impl RequestStats {
    /// Counts one request of packet type `packet_type` that took `took`.
    pub fn record(&self, packet_type: u8, took: Duration) {
        if let Some(i) = REQUEST_KINDS.iter().position(|(k, _)| *k == packet_type) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
        self.duration.record(took);
    }

    /// Each kind's label and count.
    fn counts(&self) -> Vec<(&'static str, u64)> {
        REQUEST_KINDS.iter().zip(&self.counts).map(|((_, name), c)| (*name, c.load(Ordering::Relaxed))).collect()
    }

    fn duration(&self) -> HistogramSnapshot {
        self.duration.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_kind_and_timed() {
        let stats = RequestStats::default();
        stats.record(kind::SQL_BATCH, Duration::from_micros(100));
        stats.record(kind::SQL_BATCH, Duration::from_micros(100));
        stats.record(kind::RPC, Duration::from_millis(3));
        let counts = stats.counts();
        assert_eq!(counts, vec![("batch", 2), ("rpc", 1), ("bulk_load", 0), ("transaction_manager", 0)]);
        let d = stats.duration();
        assert_eq!((d.count, d.sum_us), (3, 3200));
    }
}
