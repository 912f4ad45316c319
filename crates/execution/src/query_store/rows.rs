//! Query Store's rows in its database: one tree, `sys$query_store`, whose keys start with
//! the kind of row (docs/FORMAT.md). Values are JSON, like the catalog's; ids are
//! big-endian so that a kind's rows scan in id order.
//!
//! | kind | key after the kind byte | value |
//! |---|---|---|
//! | 0 options | — | [`Options`](super::Options) |
//! | 1 counters | — | [`Counters`] |
//! | 2 query text | text id, chunk (u16) | the text's UTF-8 bytes, 7,000 per chunk |
//! | 3 text by hash | 16-byte hash of the text | text id |
//! | 4 context settings | context id | [`ContextRow`] |
//! | 5 query | query id | [`QueryRow`] |
//! | 6 query by key | text id, context id, object id | query id |
//! | 7 plan | plan id | [`PlanRow`] |
//! | 8 plan text | plan id, chunk (u16) | the plan's text |
//! | 9 plan by key | query id, plan hash | plan id |
//! | 10 interval | interval id | [`IntervalRow`] |
//! | 11 runtime statistics | interval id, plan id, execution type (u8) | [`StatsRow`] |
//! | 12 wait statistics | interval id, plan id, execution type, category (u8) | [`WaitRow`] |

use serde::{Deserialize, Serialize};

pub const TREE: &str = "sys$query_store";

pub const OPTIONS: u8 = 0;
pub const COUNTERS: u8 = 1;
pub const TEXT: u8 = 2;
pub const TEXT_BY_HASH: u8 = 3;
pub const CONTEXT: u8 = 4;
pub const QUERY: u8 = 5;
pub const QUERY_BY_KEY: u8 = 6;
pub const PLAN: u8 = 7;
pub const PLAN_TEXT: u8 = 8;
pub const PLAN_BY_KEY: u8 = 9;
pub const INTERVAL: u8 = 10;
pub const STATS: u8 = 11;
pub const WAITS: u8 = 12;

/// Bytes of text per row (rows stay well inside a page).
pub const CHUNK: usize = 7000;

/// A key: the kind, then each part big-endian.
pub fn key(kind: u8, parts: &[u64]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + parts.len() * 8);
    k.push(kind);
    for p in parts {
        k.extend_from_slice(&p.to_be_bytes());
    }
    k
}

/// The key of chunk `chunk` of a text (query text or plan) `id`.
pub fn chunk_key(kind: u8, id: i64, chunk: u16) -> Vec<u8> {
    let mut k = key(kind, &[id as u64]);
    k.extend_from_slice(&chunk.to_be_bytes());
    k
}

/// The parts of a key after its kind byte (whole u64s; a trailing chunk number or
/// byte is left out).
pub fn parts(key: &[u8]) -> Vec<u64> {
    key.get(1..)
        .unwrap_or_default()
        .chunks_exact(8)
        .map(|c| u64::from_be_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

/// The next id of each kind of row (each starts at 1).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Counters {
    pub text: i64,
    pub context: i64,
    pub query: i64,
    pub plan: i64,
    pub interval: i64,
    pub runtime_stats: i64,
    pub wait_stats: i64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters { text: 1, context: 1, query: 1, plan: 1, interval: 1, runtime_stats: 1, wait_stats: 1 }
    }
}

/// The session settings a query was compiled under (sys.query_store_context_settings).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub struct ContextRow {
    /// The plan-affecting SET options, as `sys.dm_exec_plan_attributes` numbers them.
    pub set_options: i64,
    pub language_id: i64,
    /// 1 mdy, 2 dmy, 3 ymd, 4 ydm, 5 myd, 6 dym.
    pub date_format: i64,
    pub date_first: i64,
    pub default_schema_id: i64,
}

/// One query: a statement's text compiled in one context (sys.query_store_query).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct QueryRow {
    pub text_id: i64,
    pub context_id: i64,
    /// The procedure, function or trigger it is part of (0: a batch).
    pub object_id: i64,
    pub query_hash: u64,
    /// The handle of the batch it was first compiled in, and where in it.
    pub batch_handle: u64,
    pub batch_offsets: (i32, i32),
    pub initial_compile_ms: i64,
    pub last_compile_ms: i64,
    pub last_execution_ms: i64,
    pub count_compiles: i64,
    pub compile_us_total: i64,
    pub last_compile_us: i64,
}

/// One plan of a query (sys.query_store_plan); its text is kept apart (kind 8).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PlanRow {
    pub query_id: i64,
    pub plan_hash: u64,
    pub initial_compile_ms: i64,
    pub last_compile_ms: i64,
    pub last_execution_ms: i64,
    pub count_compiles: i64,
    pub compile_us_total: i64,
    pub last_compile_us: i64,
}

/// An interval of runtime statistics: from `start_ms` to `end_ms` (Unix epoch).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct IntervalRow {
    pub start_ms: i64,
    pub end_ms: i64,
}

/// One measure over a plan's runs in an interval: enough to give the average, the
/// standard deviation, the last, least and most.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Measure {
    pub sum: f64,
    pub sum_squares: f64,
    pub min: f64,
    pub max: f64,
    pub last: f64,
}

impl Measure {
    fn add(&mut self, v: f64, first: bool) {
        self.sum += v;
        self.sum_squares += v * v;
        self.min = if first { v } else { self.min.min(v) };
        self.max = self.max.max(v);
        self.last = v;
    }

    /// `other` (later runs) added to these.
    fn merge(&mut self, other: &Measure, first: bool) {
        self.sum += other.sum;
        self.sum_squares += other.sum_squares;
        self.min = if first { other.min } else { self.min.min(other.min) };
        self.max = self.max.max(other.max);
        self.last = other.last;
    }

    pub fn avg(&self, n: i64) -> f64 {
        if n > 0 {
            self.sum / n as f64
        } else {
            0.0
        }
    }

    /// The population standard deviation over `n` runs.
    pub fn stdev(&self, n: i64) -> f64 {
        if n <= 0 {
            return 0.0;
        }
        let mean = self.avg(n);
        (self.sum_squares / n as f64 - mean * mean).max(0.0).sqrt()
    }
}

/// What Query Store measures of each run: duration and CPU (µs), logical and physical
/// reads (8 KiB pages), rows.
pub const MEASURES: usize = 5;
pub const DURATION: usize = 0;
pub const CPU: usize = 1;
pub const LOGICAL_READS: usize = 2;
pub const PHYSICAL_READS: usize = 3;
pub const ROWS: usize = 4;

/// A plan's runs of one execution type in one interval (sys.query_store_runtime_stats).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StatsRow {
    /// 0 until the row is first written.
    pub id: i64,
    pub first_ms: i64,
    pub last_ms: i64,
    pub count: i64,
    pub measures: [Measure; MEASURES],
}

impl StatsRow {
    pub fn add(&mut self, values: [f64; MEASURES], ended_ms: i64) {
        let first = self.count == 0;
        if first {
            self.first_ms = ended_ms;
        }
        self.last_ms = self.last_ms.max(ended_ms);
        self.count += 1;
        for (m, v) in self.measures.iter_mut().zip(values) {
            m.add(v, first);
        }
    }

    /// `later` (runs counted since this row was written) added to it.
    pub fn merge(&mut self, later: &StatsRow) {
        let first = self.count == 0;
        if first {
            self.first_ms = later.first_ms;
        }
        self.last_ms = self.last_ms.max(later.last_ms);
        self.count += later.count;
        for (m, o) in self.measures.iter_mut().zip(&later.measures) {
            m.merge(o, first);
        }
    }
}

/// A plan's waits of one category in one interval (sys.query_store_wait_stats), in
/// milliseconds per run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WaitRow {
    pub id: i64,
    pub count: i64,
    pub time: Measure,
}

impl WaitRow {
    pub fn add(&mut self, ms: f64) {
        let first = self.count == 0;
        self.count += 1;
        self.time.add(ms, first);
    }

    pub fn merge(&mut self, later: &WaitRow) {
        let first = self.count == 0;
        self.count += later.count;
        self.time.merge(&later.time, first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_kind_then_ids() {
        assert!(key(STATS, &[1, 9]) < key(STATS, &[2, 1]));
        assert!(chunk_key(TEXT, 3, 1) < chunk_key(TEXT, 4, 0));
        assert_eq!(parts(&key(QUERY_BY_KEY, &[1, 2, 3])), vec![1, 2, 3]);
        assert_eq!(parts(&chunk_key(TEXT, 7, 2)), vec![7]);
    }

    #[test]
    fn statistics_merge_as_if_counted_together() {
        let mut a = StatsRow::default();
        let mut whole = StatsRow::default();
        let mut later = StatsRow::default();
        for (i, v) in [4.0, 8.0, 2.0, 6.0].into_iter().enumerate() {
            let values = [v; MEASURES];
            whole.add(values, i as i64);
            if i < 2 {
                a.add(values, i as i64)
            } else {
                later.add(values, i as i64)
            }
        }
        a.merge(&later);
        assert_eq!(a, whole);
        let d = &whole.measures[DURATION];
        assert_eq!((d.avg(4), d.min, d.max, d.last), (5.0, 2.0, 8.0, 6.0));
        assert!((d.stdev(4) - 5f64.sqrt()).abs() < 1e-9);
    }
}
