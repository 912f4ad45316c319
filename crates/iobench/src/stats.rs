//! Counting and timing: latency histograms (HDR, 3 significant digits, 1 ns to 1 hour),
//! their percentiles, and the IOPS / MiB/s figures of a thread or a whole run.

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::params::MIB;

/// Longest latency recorded exactly; longer ones are recorded as this.
pub const LATENCY_MAX_NS: u64 = 3_600_000_000_000;
/// Significant decimal digits the histogram keeps (relative error below 0.1 %).
const SIGFIG: u8 = 3;

/// The percentiles reported, as (label, quantile).
pub const PERCENTILES: &[(&str, f64)] =
    &[("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999)];

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Latency {
    hist: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Latency {
        Latency::new()
    }
}

impl Latency {
    pub fn new() -> Latency {
        Latency { hist: Histogram::new_with_bounds(1, LATENCY_MAX_NS, SIGFIG).expect("valid histogram bounds") }
    }

    /// Records one latency (0 counts as 1 ns, beyond an hour as an hour).
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.record_ns_n(ns, 1);
    }

    /// Records `n` latencies of `ns` each (bounded as in [`Latency::record_ns`]).
    #[inline]
    pub fn record_ns_n(&mut self, ns: u64, n: u64) {
        let v = ns.clamp(1, LATENCY_MAX_NS);
        // Cannot fail: the value is within the histogram's bounds.
        let _ = self.hist.record_n(v, n);
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    pub fn merge(&mut self, other: &Latency) {
        // Cannot fail: both histograms have the same bounds.
        let _ = self.hist.add(&other.hist);
    }

    /// The latency at quantile `q` (0 ..= 1) in nanoseconds: the smallest recorded value (to the
    /// histogram's precision) that at least `q` of all values do not exceed.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        self.hist.value_at_quantile(q.clamp(0.0, 1.0))
    }

    pub fn min_ns(&self) -> u64 {
        self.hist.min()
    }

    pub fn max_ns(&self) -> u64 {
        self.hist.max()
    }

    pub fn mean_ns(&self) -> f64 {
        self.hist.mean()
    }

    /// min, average, standard deviation, the [`PERCENTILES`] and max, in microseconds; `None`
    /// when nothing was recorded.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.hist.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Some(LatencySummary {
            min: us(self.hist.min()),
            avg: self.hist.mean() / 1000.0,
            stddev: self.hist.stdev() / 1000.0,
            p50: us(self.quantile_ns(0.50)),
            p90: us(self.quantile_ns(0.90)),
            p99: us(self.quantile_ns(0.99)),
            p99_9: us(self.quantile_ns(0.999)),
            p99_99: us(self.quantile_ns(0.9999)),
            max: us(self.hist.max()),
        })
    }

    /// The percentile curve for a chart: (nines, latency µs) where nines = -log10(1 - q), from
    /// q = 0 up to the last quantile the sample size can resolve.
    pub fn curve(&self, points_per_nine: usize) -> Vec<(f64, f64)> {
        if self.hist.is_empty() {
            return Vec::new();
        }
        let max_nines = (self.hist.len() as f64).log10().clamp(1.0, 7.0);
        let steps = (max_nines * points_per_nine as f64).ceil() as usize;
        (0..=steps)
            .map(|i| {
                let nines = max_nines * i as f64 / steps as f64;
                let q = 1.0 - 10f64.powf(-nines);
                (nines, self.quantile_ns(q) as f64 / 1000.0)
            })
            .collect()
    }
}

/// A latency distribution in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySummary {
    pub min: f64,
    pub avg: f64,
    pub stddev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
    pub max: f64,
}

impl LatencySummary {
    /// The rows of a latency table: (label, µs).
    pub fn rows(&self) -> [(&'static str, f64); 9] {
        [
            ("min", self.min),
            ("avg", self.avg),
            ("p50", self.p50),
            ("p90", self.p90),
            ("p99", self.p99),
            ("p99.9", self.p99_9),
            ("p99.99", self.p99_99),
            ("max", self.max),
            ("stddev", self.stddev),
        ]
    }
}

/// What one thread (or a whole run) did in the measured interval.
#[derive(Debug, Clone, Default)]
pub struct IoStats {
    pub read: Latency,
    pub write: Latency,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl IoStats {
    pub fn merge(&mut self, other: &IoStats) {
        self.read.merge(&other.read);
        self.write.merge(&other.write);
        self.read_bytes += other.read_bytes;
        self.write_bytes += other.write_bytes;
    }

    pub fn ios(&self) -> u64 {
        self.read.count() + self.write.count()
    }

    /// Reads and writes together.
    pub fn total_latency(&self) -> Latency {
        let mut all = self.read.clone();
        all.merge(&self.write);
        all
    }

    /// The figures over `seconds` of measurement.
    pub fn figures(&self, seconds: f64) -> Figures {
        let total = self.total_latency();
        Figures {
            total: IoFigures::new(total.count(), self.read_bytes + self.write_bytes, seconds, &total),
            read: IoFigures::new(self.read.count(), self.read_bytes, seconds, &self.read),
            write: IoFigures::new(self.write.count(), self.write_bytes, seconds, &self.write),
        }
    }
}

/// Counts, rates and latency of one direction (or both).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IoFigures {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    pub mib_per_s: f64,
    /// `null` when there was no I/O.
    pub latency_us: Option<LatencySummary>,
}

impl IoFigures {
    pub fn new(ios: u64, bytes: u64, seconds: f64, latency: &Latency) -> IoFigures {
        let per_s = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
        IoFigures {
            ios,
            bytes,
            iops: per_s(ios as f64),
            mib_per_s: per_s(bytes as f64 / MIB as f64),
            latency_us: latency.summary(),
        }
    }
}

/// Total, read and write figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub total: IoFigures,
    pub read: IoFigures,
    pub write: IoFigures,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within the histogram's precision (0.1 %) plus `slack` of relative error.
    fn close(got: f64, want: f64, slack: f64) -> bool {
        (got - want).abs() <= want.abs() * (0.001 + slack)
    }

    #[test]
    fn uniform_distribution() {
        let mut h = Latency::new();
        // 1 µs ..= 100 ms in 1 µs steps: 100,000 values.
        for us in 1..=100_000u64 {
            h.record_ns(us * 1000);
        }
        let s = h.summary().unwrap();
        assert_eq!(h.count(), 100_000);
        assert!(close(s.min, 1.0, 0.0), "{s:?}");
        assert!(close(s.max, 100_000.0, 0.0), "{s:?}");
        assert!(close(s.avg, 50_000.5, 0.0), "{s:?}");
        assert!(close(s.p50, 50_000.0, 0.0), "{s:?}");
        assert!(close(s.p90, 90_000.0, 0.0), "{s:?}");
        assert!(close(s.p99, 99_000.0, 0.0), "{s:?}");
        assert!(close(s.p99_9, 99_900.0, 0.0), "{s:?}");
        assert!(close(s.p99_99, 99_990.0, 0.0), "{s:?}");
        // Standard deviation of a discrete uniform distribution: sqrt((n^2 - 1) / 12).
        let sd = ((100_000f64.powi(2) - 1.0) / 12.0).sqrt();
        assert!(close(s.stddev, sd, 0.001), "{s:?} vs {sd}");
    }

    #[test]
    fn exponential_distribution() {
        // Deterministic samples at the midpoints of N equal-probability slices of an
        // exponential distribution with mean 200 µs: the quantile q is -200 ln(1 - q) µs.
        let n = 200_000;
        let mean_us = 200.0;
        let mut h = Latency::new();
        for i in 0..n {
            let q = (i as f64 + 0.5) / n as f64;
            h.record_ns((-mean_us * (1.0 - q).ln() * 1000.0).round() as u64);
        }
        let s = h.summary().unwrap();
        let quantile = |q: f64| -mean_us * (1.0f64 - q).ln();
        for (got, q) in [(s.p50, 0.5), (s.p90, 0.9), (s.p99, 0.99), (s.p99_9, 0.999), (s.p99_99, 0.9999)] {
            assert!(close(got, quantile(q), 0.002), "q {q}: {got} vs {}", quantile(q));
        }
        assert!(close(s.avg, mean_us, 0.005), "{s:?}");
        assert!(close(s.stddev, mean_us, 0.01), "{s:?}");
    }

    #[test]
    fn bimodal_distribution() {
        // 90 % fast (100 µs), 10 % slow (10 ms): p50 and p90 fast, p99 and beyond slow.
        let mut h = Latency::new();
        for i in 0..10_000 {
            h.record_ns(if i % 10 == 9 { 10_000_000 } else { 100_000 });
        }
        let s = h.summary().unwrap();
        assert!(close(s.p50, 100.0, 0.0) && close(s.p90, 100.0, 0.0), "{s:?}");
        assert!(close(s.p99, 10_000.0, 0.0) && close(s.p99_99, 10_000.0, 0.0), "{s:?}");
        assert!(close(s.avg, 0.9 * 100.0 + 0.1 * 10_000.0, 0.0), "{s:?}");
    }

    #[test]
    fn constant_and_extremes() {
        let mut h = Latency::new();
        assert!(h.summary().is_none());
        for _ in 0..1000 {
            h.record_ns(123_456);
        }
        let s = h.summary().unwrap();
        for (_, v) in s.rows().iter().filter(|(l, _)| *l != "stddev") {
            assert!(close(*v, 123.456, 0.0), "{s:?}");
        }
        h.record_ns(0);
        h.record_ns(u64::MAX);
        assert_eq!(h.min_ns(), 1);
        assert!(close(h.max_ns() as f64, LATENCY_MAX_NS as f64, 0.0));
    }

    #[test]
    fn merging_and_figures() {
        let mut a = IoStats::default();
        let mut b = IoStats::default();
        for _ in 0..300 {
            a.read.record_ns(1_000_000);
            a.read_bytes += 4096;
        }
        for _ in 0..100 {
            b.write.record_ns(3_000_000);
            b.write_bytes += 4096;
        }
        a.merge(&b);
        assert_eq!(a.ios(), 400);
        let f = a.figures(2.0);
        assert_eq!(f.total.ios, 400);
        assert!((f.total.iops - 200.0).abs() < 1e-9);
        assert!((f.read.iops - 150.0).abs() < 1e-9);
        assert!((f.write.mib_per_s - 100.0 * 4096.0 / MIB as f64 / 2.0).abs() < 1e-12);
        let total = f.total.latency_us.unwrap();
        assert!(close(total.p50, 1000.0, 0.0) && close(total.p90, 3000.0, 0.0), "{total:?}");
        assert!(close(total.avg, 1500.0, 0.0));
        assert_eq!(IoStats::default().figures(1.0).read.latency_us, None);
    }

    #[test]
    fn curve_spans_the_resolvable_nines() {
        let mut h = Latency::new();
        for us in 1..=10_000u64 {
            h.record_ns(us * 1000);
        }
        let c = h.curve(10);
        assert_eq!(c.first().unwrap().0, 0.0);
        assert!((c.last().unwrap().0 - 4.0).abs() < 1e-9);
        assert!(c.windows(2).all(|w| w[1].1 >= w[0].1));
        assert!(close(c.last().unwrap().1, 10_000.0, 0.0));
    }
}
