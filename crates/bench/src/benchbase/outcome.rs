//! What one BenchBase run says: its `*.summary.json` (goodput, throughput, latency
//! percentiles, elapsed time) and, from its console log, the unexpected SQL errors it
//! counted.

use std::fs;
use std::path::Path;

use crate::error::{BenchError, Result};

/// One system's figures for one workload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Run {
    /// Committed transactions per second.
    pub goodput: f64,
    /// Finished requests per second (committed, aborted by the workload, or given up).
    pub throughput: f64,
    pub elapsed_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub unexpected_errors: u64,
    pub load_s: f64,
    pub load_cpu_s: f64,
    pub exec_cpu_s: f64,
    /// BenchBase's own CPU (its JVM, start-up included) while the workload ran.
    pub exec_client_cpu_s: f64,
    /// TPC-C's consistency violations, when checked.
    pub violations: Option<i64>,
}

impl Run {
    /// Server CPU per committed transaction while the workload ran.
    pub fn cpu_per_txn_us(&self) -> f64 {
        self.per_txn_us(self.exec_cpu_s)
    }

    /// The client's CPU per committed transaction while the workload ran.
    pub fn client_cpu_per_txn_us(&self) -> f64 {
        self.per_txn_us(self.exec_client_cpu_s)
    }

    fn per_txn_us(&self, cpu_s: f64) -> f64 {
        let committed = self.goodput * self.elapsed_s;
        if committed > 0.0 {
            cpu_s * 1e6 / committed
        } else {
            f64::INFINITY
        }
    }
}

/// Reads the newest summary in `results` and the unexpected errors in `log`.
pub fn read(results: &Path, log: &str) -> Result<Run> {
    let newest = fs::read_dir(results)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".summary.json"))
        .max()
        .ok_or_else(|| BenchError::new(format!("BenchBase wrote no summary in {}", results.display())))?;
    let mut run = summary(&fs::read_to_string(&newest)?)
        .ok_or_else(|| BenchError::new(format!("{}: not a BenchBase summary", newest.display())))?;
    run.unexpected_errors = unexpected_errors(log);
    Ok(run)
}

fn summary(text: &str) -> Option<Run> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let latency = &v["Latency Distribution"];
    let ms = |key: &str| latency[key].as_f64().map(|us| us / 1000.0);
    Some(Run {
        goodput: v["Goodput (requests/second)"].as_f64()?,
        throughput: v["Throughput (requests/second)"].as_f64()?,
        elapsed_s: v["Elapsed Time (nanoseconds)"].as_f64()? / 1e9,
        p50_ms: ms("Median Latency (microseconds)")?,
        p95_ms: ms("95th Percentile Latency (microseconds)")?,
        p99_ms: ms("99th Percentile Latency (microseconds)")?,
        ..Run::default()
    })
}

/// The sum of the counts BenchBase lists under "Unexpected SQL Errors:" (one line per
/// transaction type, `name/NN [ count] ***`, or `<EMPTY>`), colour codes removed.
fn unexpected_errors(log: &str) -> u64 {
    let plain = strip_ansi(log);
    let Some(start) = plain.find("Unexpected SQL Errors:") else { return 0 };
    plain[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty() && !l.trim_end().ends_with(':'))
        .filter_map(|l| {
            let open = l.find('[')?;
            let close = open + l[open..].find(']')?;
            l[open + 1..close].trim().parse::<u64>().ok()
        })
        .sum()
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-byte (a letter).
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_figures_are_read() {
        let text = r#"{"Elapsed Time (nanoseconds)": 120999064654, "Latency Distribution": {
            "95th Percentile Latency (microseconds)": 9961, "Median Latency (microseconds)": 3514,
            "99th Percentile Latency (microseconds)": 17922 },
            "Throughput (requests/second)": 938.7, "Goodput (requests/second)": 936.5 }"#;
        let run = summary(text).unwrap();
        assert_eq!((run.goodput, run.throughput), (936.5, 938.7));
        assert_eq!((run.p50_ms, run.p95_ms, run.p99_ms), (3.514, 9.961, 17.922));
        assert!((run.elapsed_s - 120.999).abs() < 0.001);
        assert!(summary("{}").is_none());
    }

    #[test]
    fn unexpected_errors_are_counted_from_the_log() {
        let log = "\u{1b}[0;1mRejected Transactions (Server Retry):\u{1b}[0;0m\nx/01 [ 9] *\n\n\
                   \u{1b}[0;1mUnexpected SQL Errors:\u{1b}[0;0m\n\
                   com.oltpbenchmark.benchmarks.tpcc.procedures.NewOrder/01   [  12] ****\n\
                   com.oltpbenchmark.benchmarks.tpcc.procedures.Payment/02    [   3] *\n\n\
                   Unknown Status Transactions:\n<EMPTY>\n";
        assert_eq!(unexpected_errors(log), 15);
        assert_eq!(unexpected_errors("Unexpected SQL Errors:\n<EMPTY>\n\nUnknown Status Transactions:\n"), 0);
        assert_eq!(unexpected_errors(""), 0);
    }
}
