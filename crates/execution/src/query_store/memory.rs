//! What a loaded Query Store holds in memory: the ids of what it keeps (to find a
//! statement's query and plan without reading storage), and what was counted since the
//! last flush. Recording a run that finds its plan is two map lookups under the store's
//! lock; the first run of a plan since the store was loaded looks up its text, context,
//! query and plan and adds what is new.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tessera_semantics::cache::PlanIdentity;
use tessera_semantics::plan::PlanSite;

use super::options::{Options, Policy};
use super::rows::{self, ContextRow, Counters, IntervalRow, PlanRow, QueryRow, StatsRow, WaitRow, MEASURES};

/// The most plans remembered as seen (past it the memo starts afresh: it is only a memo).
const MAX_SEEN: usize = 100_000;
/// The most queries watched for the capture policy at once.
const MAX_CANDIDATES: usize = 10_000;

/// A plan's SHOWPLAN_TEXT as it reads in a database (`site`): rendered when a flush
/// writes it or a view reads it, not when the statement runs.
pub type PlanText = Arc<dyn Fn(&PlanSite) -> String + Send + Sync>;

/// What a run's statement is, worked out only the first time its plan runs in the
/// database.
pub struct Described {
    /// The same for every database sharing the plan (its text and hashes).
    pub identity: Arc<PlanIdentity>,
    pub context: ContextRow,
    pub object_id: i64,
    pub plan_text: PlanText,
    pub batch_handle: u64,
    pub batch_offsets: (i32, i32),
    /// When the plan was compiled and how long that took.
    pub compiled_ms: i64,
    pub compile_us: i64,
}

/// One finished run, as Query Store counts it.
#[derive(Clone, Copy, Debug)]
pub struct Ran {
    /// 0 regular, 3 aborted (the client cancelled), 4 exception.
    pub execution_type: u8,
    pub ended_ms: i64,
    pub values: [f64; MEASURES],
    /// Milliseconds waited per wait category (by SQL Server's category id).
    pub waits: Option<[f64; super::WAIT_CATEGORIES]>,
}

/// A plan as the memo knows it.
#[derive(Clone, Copy)]
enum Seen {
    Kept {
        plan_id: i64,
    },
    /// Not kept (capture mode NONE, or over MAX_PLANS_PER_QUERY).
    Skipped,
}

/// A 16-byte hash of a text (two FNV-1a hashes from different starts), which finds a
/// kept text without comparing it.
pub fn text_hash(text: &str) -> [u8; 16] {
    let mut out = [0; 16];
    out[..8].copy_from_slice(&crate::fnv::fnv1a(crate::fnv::START, text.as_bytes()).to_be_bytes());
    out[8..]
        .copy_from_slice(&crate::fnv::fnv1a(0x6c62_272e_07bb_0142 ^ text.len() as u64, text.as_bytes()).to_be_bytes());
    out
}

/// What changed since the last flush.
#[derive(Default)]
pub struct Pending {
    pub texts: Vec<(i64, [u8; 16], Arc<str>)>,
    pub contexts: Vec<(i64, ContextRow)>,
    /// New queries, and compiles of kept ones: (the row if new, compiles, their time,
    /// the last one's start and time).
    pub queries: BTreeMap<i64, Touch<QueryRow>>,
    pub plans: BTreeMap<i64, Touch<PlanRow>>,
    pub plan_texts: Vec<(i64, PlanText)>,
    pub intervals: Vec<(i64, IntervalRow)>,
    /// Runtime statistics by (interval, plan, execution type).
    pub stats: HashMap<(i64, i64, u8), StatsRow>,
    pub waits: HashMap<(i64, i64, u8, u8), WaitRow>,
    /// About how many bytes this holds.
    pub bytes: usize,
}

/// A new row, or compiles of a kept one.
pub struct Touch<T> {
    pub new: Option<T>,
    pub compiles: i64,
    pub compile_us: i64,
    pub last_compile_ms: i64,
    pub last_compile_us: i64,
}

impl<T> Touch<T> {
    fn compiled(new: Option<T>, d: &Described) -> Touch<T> {
        Touch {
            new,
            compiles: 1,
            compile_us: d.compile_us,
            last_compile_ms: d.compiled_ms,
            last_compile_us: d.compile_us,
        }
    }

    fn again(&mut self, d: &Described) {
        self.compiles += 1;
        self.compile_us += d.compile_us;
        self.last_compile_ms = self.last_compile_ms.max(d.compiled_ms);
        self.last_compile_us = d.compile_us;
    }
}

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
            && self.contexts.is_empty()
            && self.queries.is_empty()
            && self.plans.is_empty()
            && self.intervals.is_empty()
            && self.stats.is_empty()
            && self.waits.is_empty()
    }
}

/// A loaded store: the ids of what is kept and what is pending.
pub struct Loaded {
    pub counters: Counters,
    texts: HashMap<[u8; 16], i64>,
    contexts: HashMap<ContextRow, i64>,
    queries: HashMap<(i64, i64, i64), i64>,
    plans: HashMap<(i64, u64), i64>,
    plans_per_query: HashMap<i64, i64>,
    /// Plans run since the load, by the plan cache's id for them.
    seen: HashMap<u64, Seen>,
    /// Runs of queries not yet kept: (runs, working µs, first run's end).
    candidates: HashMap<u64, (i64, f64, i64)>,
    /// The interval runs are counted in now.
    pub interval: Option<(i64, IntervalRow)>,
    /// Bytes of the rows in storage (keys and values).
    pub stored_bytes: u64,
    pub pending: Pending,
}

/// What storage holds, as `load` reads it.
#[derive(Default)]
pub struct Stored {
    pub counters: Counters,
    pub texts: Vec<([u8; 16], i64)>,
    pub contexts: Vec<(ContextRow, i64)>,
    pub queries: Vec<((i64, i64, i64), i64)>,
    pub plans: Vec<((i64, u64), i64)>,
    pub last_interval: Option<(i64, IntervalRow)>,
    pub bytes: u64,
}

impl Loaded {
    pub fn new(stored: Stored) -> Loaded {
        let mut plans_per_query = HashMap::new();
        for ((query, _), _) in &stored.plans {
            *plans_per_query.entry(*query).or_insert(0) += 1;
        }
        Loaded {
            counters: stored.counters,
            texts: stored.texts.into_iter().collect(),
            contexts: stored.contexts.into_iter().collect(),
            queries: stored.queries.into_iter().collect(),
            plans: stored.plans.into_iter().collect(),
            plans_per_query,
            seen: HashMap::new(),
            candidates: HashMap::new(),
            interval: stored.last_interval,
            stored_bytes: stored.bytes,
            pending: Pending::default(),
        }
    }

    /// Counts a run of the plan the plan cache knows as `plan_key`, under `options`;
    /// `describe` says what the statement is when this is the plan's first run here.
    pub fn record(&mut self, options: &Options, plan_key: u64, ran: &Ran, describe: impl FnOnce() -> Described) {
        let plan_id = match self.seen.get(&plan_key) {
            Some(Seen::Kept { plan_id }) => *plan_id,
            Some(Seen::Skipped) => return,
            None => {
                if !self.wanted(options, plan_key, ran) {
                    return;
                }
                let d = describe();
                let seen = self.find_or_add(options, &d);
                if self.seen.len() >= MAX_SEEN {
                    self.seen.clear();
                }
                self.seen.insert(plan_key, seen);
                match seen {
                    Seen::Kept { plan_id } => plan_id,
                    Seen::Skipped => return,
                }
            }
        };
        let interval = self.interval_at(options, ran.ended_ms);
        let (pending, counters) = (&mut self.pending, &mut self.counters);
        // A row's id is taken when it is begun; one that storage already has for the
        // same interval, plan and type keeps its own when the two are merged.
        let entry = pending.stats.entry((interval, plan_id, ran.execution_type)).or_insert_with(|| {
            pending.bytes += 400;
            StatsRow { id: next(&mut counters.runtime_stats), ..StatsRow::default() }
        });
        entry.add(ran.values, ran.ended_ms);
        if let Some(waits) = ran.waits {
            for (category, ms) in waits.iter().enumerate().filter(|(_, ms)| **ms > 0.0) {
                let key = (interval, plan_id, ran.execution_type, category as u8);
                let row = pending.waits.entry(key).or_insert_with(|| {
                    pending.bytes += 200;
                    WaitRow { id: next(&mut counters.wait_stats), ..WaitRow::default() }
                });
                row.add(*ms);
            }
        }
    }

    /// Whether a plan not yet seen is kept: always under ALL (and when its query is
    /// kept already, under any mode); under AUTO and CUSTOM once its runs pass the
    /// policy's thresholds; never under NONE.
    fn wanted(&mut self, options: &Options, plan_key: u64, ran: &Ran) -> bool {
        let Some(policy) = options.capture_policy() else { return true };
        let Policy { stale_threshold_hours, execution_count, total_execution_cpu_ms, .. } = policy;
        let window_ms = stale_threshold_hours * 3_600_000;
        if self.candidates.len() >= MAX_CANDIDATES && !self.candidates.contains_key(&plan_key) {
            self.candidates.retain(|_, (_, _, first)| ran.ended_ms - *first < window_ms);
            if self.candidates.len() >= MAX_CANDIDATES {
                return false;
            }
        }
        let c = self.candidates.entry(plan_key).or_insert((0, 0.0, ran.ended_ms));
        if ran.ended_ms - c.2 >= window_ms {
            *c = (0, 0.0, ran.ended_ms);
        }
        c.0 += 1;
        c.1 += ran.values[rows::CPU];
        let passed = c.0 >= execution_count || c.1 >= total_execution_cpu_ms as f64 * 1000.0;
        if passed {
            self.candidates.remove(&plan_key);
        }
        passed
    }

    /// The query and plan of a statement, added if new (and allowed).
    fn find_or_add(&mut self, options: &Options, d: &Described) -> Seen {
        let hash = d.identity.text_hash;
        let plan_hash = d.identity.plan_hash;
        let text_id = self.texts.get(&hash).copied();
        let context_id = self.contexts.get(&d.context).copied();
        let query_id = match (text_id, context_id) {
            (Some(t), Some(c)) => self.queries.get(&(t, c, d.object_id)).copied(),
            _ => None,
        };
        if query_id.is_none() && options.capture == super::options::Capture::None {
            return Seen::Skipped;
        }
        let query_id = match query_id {
            Some(q) => {
                match self.pending.queries.get_mut(&q) {
                    Some(t) => t.again(d),
                    None => {
                        self.pending.queries.insert(q, Touch::compiled(None, d));
                    }
                }
                q
            }
            None => {
                let text_id = text_id.unwrap_or_else(|| {
                    let id = next(&mut self.counters.text);
                    self.texts.insert(hash, id);
                    self.pending.bytes += d.identity.text.len() + 64;
                    self.pending.texts.push((id, hash, d.identity.text.clone()));
                    id
                });
                let context_id = context_id.unwrap_or_else(|| {
                    let id = next(&mut self.counters.context);
                    self.contexts.insert(d.context.clone(), id);
                    self.pending.contexts.push((id, d.context.clone()));
                    id
                });
                let id = next(&mut self.counters.query);
                self.queries.insert((text_id, context_id, d.object_id), id);
                let row = QueryRow {
                    text_id,
                    context_id,
                    object_id: d.object_id,
                    query_hash: u64::from_be_bytes(hash[..8].try_into().expect("8 bytes")),
                    batch_handle: d.batch_handle,
                    batch_offsets: d.batch_offsets,
                    initial_compile_ms: d.compiled_ms,
                    last_compile_ms: d.compiled_ms,
                    last_execution_ms: 0,
                    count_compiles: 0,
                    compile_us_total: 0,
                    last_compile_us: 0,
                };
                self.pending.bytes += 300;
                self.pending.queries.insert(id, Touch::compiled(Some(row), d));
                id
            }
        };
        if let Some(plan_id) = self.plans.get(&(query_id, plan_hash)).copied() {
            match self.pending.plans.get_mut(&plan_id) {
                Some(t) => t.again(d),
                None => {
                    self.pending.plans.insert(plan_id, Touch::compiled(None, d));
                }
            }
            return Seen::Kept { plan_id };
        }
        let count = self.plans_per_query.entry(query_id).or_insert(0);
        if *count >= options.max_plans_per_query {
            return Seen::Skipped;
        }
        *count += 1;
        let plan_id = next(&mut self.counters.plan);
        self.plans.insert((query_id, plan_hash), plan_id);
        let row = PlanRow {
            query_id,
            plan_hash,
            initial_compile_ms: d.compiled_ms,
            last_compile_ms: d.compiled_ms,
            last_execution_ms: 0,
            count_compiles: 0,
            compile_us_total: 0,
            last_compile_us: 0,
        };
        self.pending.bytes += 1000;
        self.pending.plans.insert(plan_id, Touch::compiled(Some(row), d));
        self.pending.plan_texts.push((plan_id, d.plan_text.clone()));
        Seen::Kept { plan_id }
    }

    /// The interval a run that ended at `ended_ms` is counted in, begun if need be:
    /// intervals start at whole multiples of their length (an hour's start on the hour).
    fn interval_at(&mut self, options: &Options, ended_ms: i64) -> i64 {
        if let Some((id, row)) = &self.interval {
            if ended_ms >= row.start_ms && ended_ms < row.end_ms {
                return *id;
            }
        }
        let length = options.interval_ms();
        let start = ended_ms - ended_ms.rem_euclid(length);
        let row = IntervalRow { start_ms: start, end_ms: start + length };
        let id = next(&mut self.counters.interval);
        self.interval = Some((id, row));
        self.pending.intervals.push((id, row));
        id
    }

    /// Forgets the memo of plans seen (after queries or plans were removed).
    pub fn forget_seen(&mut self) {
        self.seen.clear();
    }
}

/// The id `counter` holds, which it then moves past.
fn next(counter: &mut i64) -> i64 {
    let id = *counter;
    *counter += 1;
    id
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::options::Capture;
    use super::*;

    pub(crate) fn described(text: &str, plan_hash: u64) -> Described {
        Described {
            identity: Arc::new(PlanIdentity { text: Arc::from(text), text_hash: text_hash(text), plan_hash }),
            context: ContextRow {
                set_options: 4347,
                language_id: 0,
                date_format: 1,
                date_first: 7,
                default_schema_id: 1,
            },
            object_id: 0,
            plan_text: Arc::new(|at: &PlanSite| format!("plan in {}", at.database)),
            batch_handle: 1,
            batch_offsets: (0, -1),
            compiled_ms: 1000,
            compile_us: 50,
        }
    }

    fn ran(at: i64) -> Ran {
        Ran { execution_type: 0, ended_ms: at, values: [10.0, 5.0, 2.0, 0.0, 1.0], waits: None }
    }

    #[test]
    fn one_text_one_query_and_a_plan_per_plan_hash() {
        let options = Options { capture: Capture::All, ..Options::default() };
        let mut l = Loaded::new(Stored::default());
        l.record(&options, 1, &ran(5_000), || described("select 1", 7));
        l.record(&options, 1, &ran(6_000), || unreachable!("seen"));
        // Another cached plan of the same statement and plan: the same ids, one more compile.
        l.record(&options, 2, &ran(7_000), || described("select 1", 7));
        l.record(&options, 3, &ran(8_000), || described("select 1", 8));
        assert_eq!((l.pending.texts.len(), l.pending.queries.len(), l.pending.plans.len()), (1, 1, 2));
        assert_eq!(l.pending.queries[&1].compiles, 3);
        assert_eq!(l.pending.intervals.len(), 1);
        assert_eq!(l.pending.stats[&(1, 1, 0)].count, 3);
    }

    #[test]
    fn auto_capture_waits_for_thirty_runs_and_none_keeps_no_new_query() {
        let options = Options::default();
        let mut l = Loaded::new(Stored::default());
        for i in 0..29 {
            l.record(&options, 9, &ran(i), || unreachable!("not captured yet"));
        }
        l.record(&options, 9, &ran(30), || described("select 2", 1));
        assert_eq!(l.pending.queries.len(), 1);
        let none = Options { capture: Capture::None, ..Options::default() };
        l.record(&none, 10, &ran(31), || described("select 3", 1));
        assert_eq!(l.pending.queries.len(), 1);
        // A kept query's new plan is still kept under NONE.
        l.record(&none, 11, &ran(32), || described("select 2", 2));
        assert_eq!(l.pending.plans.len(), 2);
    }

    #[test]
    fn intervals_start_on_multiples_of_their_length() {
        let options = Options { capture: Capture::All, interval_length_minutes: 1, ..Options::default() };
        let mut l = Loaded::new(Stored::default());
        l.record(&options, 1, &ran(61_000), || described("x", 1));
        l.record(&options, 1, &ran(119_999), || unreachable!());
        l.record(&options, 1, &ran(120_000), || unreachable!());
        let starts: Vec<_> = l.pending.intervals.iter().map(|(_, r)| (r.start_ms, r.end_ms)).collect();
        assert_eq!(starts, vec![(60_000, 120_000), (120_000, 180_000)]);
    }

    #[test]
    fn max_plans_per_query_is_kept() {
        let options = Options { capture: Capture::All, max_plans_per_query: 1, ..Options::default() };
        let mut l = Loaded::new(Stored::default());
        l.record(&options, 1, &ran(1), || described("x", 1));
        l.record(&options, 2, &ran(2), || described("x", 2));
        assert_eq!(l.pending.plans.len(), 1);
        assert_eq!(l.pending.stats.len(), 1);
    }
}
