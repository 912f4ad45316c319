//! The instance-wide plan cache.
//!
//! A batch's text maps to its parsed form and the plans of its statements, bound lazily
//! the first time each statement runs (SQL Server's deferred name resolution: a statement
//! may use a table created earlier in the same batch).
//!
//! **Plans belong to no database.** A plan records every name it looked up while bound and
//! the fingerprint of the definition it found there ([`ObjectDep`]); a name without a
//! database part points into whichever database the plan runs in. Any database whose
//! objects under those names have the same fingerprints runs the same plan, so thousands
//! of tenants of one schema share one plan per statement. A database whose schema differs
//! (or changes) binds a plan of its own beside the shared one: a statement keeps up to
//! [`MAX_VARIANTS`] plans, the least recently used going first, and the others' plans stay.
//!
//! **Sharded.** Entries live in [`SHARDS`] shards chosen by a hash of the text; a hit
//! takes one shard's read lock and the entry's read lock and allocates nothing, so
//! sessions running cached batches do not serialise on the cache.
//!
//! **Accounted.** Each entry knows its estimated memory: its text and syntax tree when
//! parsed, plus each statement plan when bound. The shards' totals are bounded by the
//! budget (`sp_configure 'plan cache memory (MB)'`).
//!
//! **Evicted by cost and recency** (GreedyDual): an entry's priority is the shard's
//! floor at its last use plus its compile cost per KiB. Over budget, a shard evicts its
//! lowest-priority entries down to 7/8 of its share and raises its floor to the last
//! priority evicted, so an entry that was expensive to compile outlives cheap ones used
//! as recently, and any entry not used for long enough goes.
//!
//! **Counted.** Each statement plan counts its runs (sys.dm_exec_query_stats) and a
//! procedure's body its calls (sys.dm_exec_procedure_stats); the figures go with the entry.

mod stats;

use std::collections::HashMap;
use std::hash::BuildHasher;

pub use stats::{utf16_offsets, Figures, PlanIdentity, ProcedureCalls, ProcedureRow, QueryStats, Run, Totals};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::RwLock;

use crate::catalog::{DbRef, ObjectDep};
use tessera_errors::SqlResult;
use tessera_syntax::ast::{Batch, StatementKind};

/// Default memory budget of the plan cache.
pub const DEFAULT_BUDGET_BYTES: usize = 64 << 20;

/// Number of shards; a power of two.
pub const SHARDS: usize = 16;

/// Plans kept per statement for databases whose schemas differ.
pub const MAX_VARIANTS: usize = 8;

/// Estimated memory of a bound statement plan.
const PLAN_BYTES: usize = 2048;

/// A compiled statement: the plan, a fingerprint of the session state it was bound in
/// (temp table names, IDENTITY_INSERT, options compiled into constants), and every name
/// it looked up (those it reads or changes are held under schema-stability locks while
/// it runs).
pub struct Compiled<T> {
    pub context: u64,
    pub plan: Arc<T>,
    pub deps: Arc<[ObjectDep]>,
}

impl<T> Compiled<T> {
    fn bytes(&self) -> usize {
        PLAN_BYTES + self.deps.iter().map(|d| d.key.len() + 48 + d.columns.len() * 8).sum::<usize>()
    }
}

/// One of a statement's plans, with when it was last used (the entry's use count then).
struct Variant<T> {
    compiled: Compiled<T>,
    /// What its runs have cost (sys.dm_exec_query_stats).
    stats: Arc<QueryStats>,
    last_use: AtomicU64,
    /// The version of the catalog snapshot its dependencies were last found to hold in (0:
    /// none), when they all name the current database: snapshots never change and each
    /// has its own version, so in that snapshot they hold without another look.
    verified_in: AtomicU64,
    current_only: bool,
}

/// The databases that ran an entry's plans: one bit per database id.
#[derive(Default)]
struct DatabaseSet {
    words: RwLock<Vec<AtomicU64>>,
}

impl DatabaseSet {
    fn insert(&self, id: u32) {
        let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
        {
            let words = self.words.read();
            if let Some(w) = words.get(word) {
                if w.load(Ordering::Relaxed) & bit == 0 {
                    w.fetch_or(bit, Ordering::Relaxed);
                }
                return;
            }
        }
        let mut words = self.words.write();
        while words.len() <= word {
            words.push(AtomicU64::new(0));
        }
        words[word].fetch_or(bit, Ordering::Relaxed);
    }

    fn remove(&self, id: u32) {
        if let Some(w) = self.words.read().get(id as usize / 64) {
            w.fetch_and(!(1u64 << (id % 64)), Ordering::Relaxed);
        }
    }

    fn len(&self) -> usize {
        self.words.read().iter().map(|w| w.load(Ordering::Relaxed).count_ones() as usize).sum()
    }

    /// Every database id in the set.
    fn ids(&self) -> Vec<u32> {
        let words = self.words.read();
        let mut ids = Vec::new();
        for (i, w) in words.iter().enumerate() {
            let mut bits = w.load(Ordering::Relaxed);
            while bits != 0 {
                ids.push(i as u32 * 64 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
        ids
    }
}

/// A database's share of the plan cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanShare {
    /// Entries whose plans the database ran.
    pub entries: usize,
    /// Their bytes, each entry's divided evenly among the databases that ran it.
    pub bytes: usize,
}

pub struct CachedBatch<T> {
    pub text: String,
    pub batch: Batch,
    /// The batch's variables and labels, worked out on its first run.
    frame: std::sync::OnceLock<SqlResult<crate::frame::Frame>>,
    /// Statement address within `batch` → its plans, the newest first.
    plans: RwLock<foldhash::HashMap<usize, Vec<Variant<T>>>>,
    pub use_count: AtomicU64,
    pub handle: u64,
    /// When it was parsed, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    databases: DatabaseSet,
    /// A procedure body's calls, per database and procedure (empty for anything else).
    calls: ProcedureCalls,
    /// Microseconds spent parsing the batch and binding its statements.
    cost_us: AtomicU64,
    /// GreedyDual priority: the shard's floor at the last use plus the cost per KiB.
    priority: AtomicU64,
    bytes: AtomicUsize,
    /// The counters of the shard holding this entry.
    shard: Arc<ShardCounters>,
}

/// A plan found for a statement: the plan and the names it depends on.
pub struct Found<T> {
    pub plan: Arc<T>,
    pub deps: Arc<[ObjectDep]>,
    /// Where its runs are counted.
    pub stats: Arc<QueryStats>,
}

impl<T> CachedBatch<T> {
    /// The batch's variables and labels (an error if it declares one twice or goes to a
    /// label it lacks), worked out once.
    pub fn frame(&self) -> &SqlResult<crate::frame::Frame> {
        self.frame.get_or_init(|| crate::frame::Frame::of(&self.batch))
    }

    /// A plan for a statement bound in `context` whose every dependency `holds` in the
    /// database the statement runs in (`database_id`, counted among the plan's users),
    /// whose catalog snapshot is `catalog_version`.
    pub fn plan(
        &self,
        stmt: usize,
        context: u64,
        database_id: u32,
        catalog_version: u64,
        holds: impl Fn(&ObjectDep) -> bool,
    ) -> Option<Found<T>> {
        let plans = self.plans.read();
        let verified = |v: &Variant<T>| {
            v.current_only && catalog_version != 0 && v.verified_in.load(Ordering::Relaxed) == catalog_version
        };
        let v = plans
            .get(&stmt)?
            .iter()
            .find(|v| v.compiled.context == context && (verified(v) || v.compiled.deps.iter().all(&holds)))?;
        if v.current_only && !verified(v) {
            v.verified_in.store(catalog_version, Ordering::Relaxed);
        }
        v.last_use.store(self.use_count.load(Ordering::Relaxed), Ordering::Relaxed);
        self.databases.insert(database_id);
        Some(Found { plan: v.compiled.plan.clone(), deps: v.compiled.deps.clone(), stats: v.stats.clone() })
    }

    /// Counts a call of the procedure whose body this is: object `object_id` of database
    /// `database_id`, which ran as `run` says.
    pub fn record_call(&self, database_id: u32, object_id: i32, run: Run) {
        self.calls.record(database_id, object_id, run);
    }

    /// Keeps a statement's plan, bound in `bind_us` microseconds in the database
    /// `database_id` (counted among the plan's users), and accounts for it; past
    /// [`MAX_VARIANTS`] plans the least recently used goes. Its runs are counted in the
    /// returned stats; `offsets` say where the statement is in the text.
    pub fn store(
        &self,
        stmt: usize,
        compiled: Compiled<T>,
        database_id: u32,
        bind_us: u64,
        offsets: (i32, i32),
    ) -> Arc<QueryStats> {
        let stats = Arc::new(QueryStats::new(offsets, now_ms(), bind_us));
        self.databases.insert(database_id);
        let mut added = compiled.bytes() as isize;
        {
            let mut plans = self.plans.write();
            let variants = plans.entry(stmt).or_default();
            let uses = self.use_count.load(Ordering::Relaxed);
            let current_only = compiled.deps.iter().all(|d| d.db == DbRef::Current);
            variants.insert(
                0,
                Variant {
                    compiled,
                    stats: stats.clone(),
                    last_use: AtomicU64::new(uses),
                    verified_in: AtomicU64::new(0),
                    current_only,
                },
            );
            if variants.len() > MAX_VARIANTS {
                let oldest = (1..variants.len())
                    .min_by_key(|&i| variants[i].last_use.load(Ordering::Relaxed))
                    .expect("several variants");
                added -= variants.remove(oldest).compiled.bytes() as isize;
            }
        }
        self.add_bytes(added);
        self.cost_us.fetch_add(bind_us, Ordering::Relaxed);
        self.touch();
        stats
    }

    fn add_bytes(&self, delta: isize) {
        if delta >= 0 {
            self.bytes.fetch_add(delta as usize, Ordering::Relaxed);
            self.shard.bytes.fetch_add(delta as usize, Ordering::Relaxed);
        } else {
            self.bytes.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
            self.shard.bytes.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
        }
    }

    /// Estimated memory of the entry: text, syntax tree and bound plans.
    pub fn size(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Statement plans held (over all statements and their variants).
    pub fn plan_count(&self) -> usize {
        self.plans.read().values().map(Vec::len).sum()
    }

    /// Drops the plans that name `database` (it was dropped, restored or taken offline)
    /// and stops counting it among the entry's users; true if that left the entry with
    /// no plans (it only served that database).
    fn forget_database(&self, database: &str, database_id: u32) -> bool {
        self.databases.remove(database_id);
        self.calls.forget_database(database_id);
        let mut freed = 0;
        self.plans.write().retain(|_, variants| {
            variants.retain(|v| {
                let names = v
                    .compiled
                    .deps
                    .iter()
                    .any(|d| matches!(&d.db, DbRef::Named(n) if n.eq_ignore_ascii_case(database)));
                if names {
                    freed += v.compiled.bytes();
                }
                !names
            });
            !variants.is_empty()
        });
        self.add_bytes(-(freed as isize));
        freed > 0 && self.plans.read().is_empty()
    }

    /// Sets the priority for a use now.
    fn touch(&self) {
        let floor = self.shard.floor.load(Ordering::Relaxed);
        let cost = self.cost_us.load(Ordering::Relaxed).max(1);
        let kib = (self.size() as u64 / 1024).max(1);
        self.priority.store(floor + (cost * 1024 / kib).max(1), Ordering::Relaxed);
    }

    /// `sys.dm_exec_cached_plans.objtype`: a module's definition is a procedure's (or
    /// view's) plan, anything else an ad hoc batch.
    fn object_type(&self) -> &'static str {
        match self.batch.statements.first().map(|s| &s.kind) {
            Some(StatementKind::CreateView(_)) => "View",
            Some(StatementKind::CreateProcedure(_) | StatementKind::CreateFunction(_)) => "Proc",
            _ => "Adhoc",
        }
    }
}

/// What a shard's entries update as they are used and bound.
#[derive(Default)]
struct ShardCounters {
    bytes: AtomicUsize,
    /// GreedyDual's floor: the priority of the last entry evicted.
    floor: AtomicU64,
}

struct Shard<T> {
    /// Hash of the text → the entries with that hash.
    map: RwLock<foldhash::HashMap<u64, Vec<Arc<CachedBatch<T>>>>>,
    counters: Arc<ShardCounters>,
}

impl<T> Shard<T> {
    fn new() -> Shard<T> {
        Shard { map: RwLock::default(), counters: Arc::default() }
    }

    fn find(&self, hash: u64, text: &str) -> Option<Arc<CachedBatch<T>>> {
        let map = self.map.read();
        map.get(&hash)?.iter().find(|b| b.text == text).cloned()
    }

    fn remove_where(&self, mut doomed: impl FnMut(&CachedBatch<T>) -> bool) -> usize {
        let mut map = self.map.write();
        let mut removed = 0;
        map.retain(|_, entries| {
            entries.retain(|b| {
                let gone = doomed(b);
                if gone {
                    self.counters.bytes.fetch_sub(b.size(), Ordering::Relaxed);
                    removed += 1;
                }
                !gone
            });
            !entries.is_empty()
        });
        removed
    }

    /// GreedyDual eviction down to 7/8 of `share` bytes, sparing `keep` (the entry just
    /// added).
    fn evict(&self, share: usize, keep: Option<&Arc<CachedBatch<T>>>) {
        if self.counters.bytes.load(Ordering::Relaxed) <= share {
            return;
        }
        let mut map = self.map.write();
        let mut by_priority: Vec<(u64, usize, u64)> = map
            .values()
            .flatten()
            .filter(|b| !keep.is_some_and(|k| Arc::ptr_eq(b, k)))
            .map(|b| (b.priority.load(Ordering::Relaxed), b.size(), b.handle))
            .collect();
        by_priority.sort_unstable();
        let target = share - share / 8;
        let mut bytes = self.counters.bytes.load(Ordering::Relaxed);
        let mut doomed = std::collections::HashSet::new();
        let mut floor = self.counters.floor.load(Ordering::Relaxed);
        for (priority, size, handle) in by_priority {
            if bytes <= target {
                break;
            }
            bytes -= size;
            floor = floor.max(priority);
            doomed.insert(handle);
        }
        self.counters.floor.store(floor, Ordering::Relaxed);
        map.retain(|_, entries| {
            entries.retain(|b| {
                let gone = doomed.contains(&b.handle);
                if gone {
                    self.counters.bytes.fetch_sub(b.size(), Ordering::Relaxed);
                }
                !gone
            });
            !entries.is_empty()
        });
    }
}

pub struct PlanCache<T> {
    shards: Box<[Shard<T>]>,
    budget_bytes: AtomicUsize,
    next_handle: AtomicU64,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

/// One statement plan's runs, as `sys.dm_exec_query_stats` lists them.
pub struct StatementStats<T> {
    /// Its cached batch's handle and text.
    pub handle: u64,
    pub text: String,
    /// The session context it was bound for (a plan of its own per context).
    pub context: u64,
    pub stats: Arc<QueryStats>,
    pub plan: Arc<T>,
}

/// One (database, procedure)'s calls of a cached procedure body, as
/// `sys.dm_exec_procedure_stats` lists them.
pub struct ProcedureStats {
    /// The cached body's handle, text and when it was cached.
    pub handle: u64,
    pub text: String,
    pub cached_ms: i64,
    pub database_id: u32,
    pub object_id: i32,
    pub totals: Totals,
}

/// One row of `sys.dm_exec_cached_plans`.
pub struct CachedPlanInfo {
    pub handle: u64,
    pub use_count: u64,
    pub size: usize,
    pub object_type: &'static str,
    /// How many databases ran the entry's plans.
    pub databases: usize,
    /// Statement plans held.
    pub plans: usize,
    pub text: String,
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The hash of a batch's text; allocates nothing. Seeded once per process (foldhash's
/// `RandomState`), so that no client can choose texts that collide.
fn key_hash(text: &str) -> u64 {
    static SEED: std::sync::OnceLock<foldhash::fast::RandomState> = std::sync::OnceLock::new();
    SEED.get_or_init(foldhash::fast::RandomState::default).hash_one(text)
}

impl<T> PlanCache<T> {
    pub fn new(budget_bytes: usize) -> PlanCache<T> {
        PlanCache {
            shards: (0..SHARDS).map(|_| Shard::new()).collect(),
            budget_bytes: AtomicUsize::new(budget_bytes),
            next_handle: AtomicU64::new(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn shard(&self, hash: u64) -> &Shard<T> {
        &self.shards[(hash as usize) & (SHARDS - 1)]
    }

    /// The cached batch for `text`, parsing it on a miss.
    pub fn get_or_parse(
        &self,
        text: &str,
        parse: impl FnOnce(&str) -> SqlResult<Batch>,
    ) -> SqlResult<Arc<CachedBatch<T>>> {
        let hash = key_hash(text);
        let shard = self.shard(hash);
        if let Some(b) = shard.find(hash, text) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            b.use_count.fetch_add(1, Ordering::Relaxed);
            b.touch();
            return Ok(b);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let batch = parse(text)?;
        let bytes = 256 + text.len() * 16;
        let entry = Arc::new(CachedBatch {
            text: text.to_string(),
            batch,
            frame: std::sync::OnceLock::new(),
            plans: RwLock::default(),
            use_count: AtomicU64::new(1),
            handle: self.next_handle.fetch_add(1, Ordering::Relaxed),
            created_ms: now_ms(),
            databases: DatabaseSet::default(),
            calls: ProcedureCalls::default(),
            cost_us: AtomicU64::new(started.elapsed().as_micros() as u64),
            priority: AtomicU64::new(0),
            bytes: AtomicUsize::new(bytes),
            shard: shard.counters.clone(),
        });
        entry.touch();
        {
            let mut map = shard.map.write();
            let entries = map.entry(hash).or_default();
            if let Some(at) = entries.iter().position(|b| b.text == text) {
                // Another session parsed the same batch meanwhile: keep theirs.
                let theirs = entries[at].clone();
                theirs.use_count.fetch_add(1, Ordering::Relaxed);
                return Ok(theirs);
            }
            entries.push(entry.clone());
            shard.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        shard.evict(self.share(), Some(&entry));
        Ok(entry)
    }

    /// The handle of the cached batch whose text is `text`, if it is cached.
    pub fn handle_of(&self, text: &str) -> Option<u64> {
        let hash = key_hash(text);
        self.shard(hash).find(hash, text).map(|b| b.handle)
    }

    /// Each shard's part of the budget.
    fn share(&self) -> usize {
        self.budget_bytes.load(Ordering::Relaxed) / SHARDS
    }

    pub fn budget_bytes(&self) -> usize {
        self.budget_bytes.load(Ordering::Relaxed)
    }

    /// Sets the budget and evicts what no longer fits.
    pub fn set_budget_bytes(&self, budget_bytes: usize) {
        self.budget_bytes.store(budget_bytes, Ordering::Relaxed);
        for shard in self.shards.iter() {
            shard.evict(self.share(), None);
        }
    }

    /// Estimated memory of every entry.
    pub fn bytes(&self) -> usize {
        self.shards.iter().map(|s| s.counters.bytes.load(Ordering::Relaxed)).sum()
    }

    /// Drops the plans that name `database` (it was dropped, restored or taken offline),
    /// and the entries left without plans by that; the plans it shared with other
    /// databases, and theirs, stay.
    pub fn forget_database(&self, database: &str, database_id: u32) {
        for shard in self.shards.iter() {
            shard.remove_where(|b| b.forget_database(database, database_id));
        }
    }

    /// DBCC FREEPROCCACHE: everything goes.
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            shard.remove_where(|_| true);
        }
    }

    pub fn entries(&self) -> Vec<CachedPlanInfo> {
        let mut v: Vec<_> = self
            .shards
            .iter()
            .flat_map(|s| {
                s.map
                    .read()
                    .values()
                    .flatten()
                    .map(|b| CachedPlanInfo {
                        handle: b.handle,
                        use_count: b.use_count.load(Ordering::Relaxed),
                        size: b.size(),
                        object_type: b.object_type(),
                        databases: b.databases.len(),
                        plans: b.plan_count(),
                        text: b.text.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        v.sort_by_key(|e| e.handle);
        v
    }

    /// Every statement plan in the cache with its runs' figures, by handle.
    pub fn statement_stats(&self) -> Vec<StatementStats<T>> {
        let mut v = Vec::new();
        for shard in self.shards.iter() {
            for b in shard.map.read().values().flatten() {
                for variants in b.plans.read().values() {
                    v.extend(variants.iter().map(|x| StatementStats {
                        handle: b.handle,
                        text: b.text.clone(),
                        context: x.compiled.context,
                        stats: x.stats.clone(),
                        plan: x.compiled.plan.clone(),
                    }));
                }
            }
        }
        v.sort_by_key(|s| (s.handle, s.stats.offsets));
        v
    }

    /// Every cached procedure body's calls, one row per (database, procedure) that called
    /// it, by handle.
    pub fn procedure_stats(&self) -> Vec<ProcedureStats> {
        let mut v = Vec::new();
        for shard in self.shards.iter() {
            for b in shard.map.read().values().flatten() {
                v.extend(b.calls.rows().into_iter().map(|r| ProcedureStats {
                    handle: b.handle,
                    text: b.text.clone(),
                    cached_ms: b.created_ms,
                    database_id: r.database_id,
                    object_id: r.object_id,
                    totals: r.totals,
                }));
            }
        }
        v.sort_by_key(|p| (p.handle, p.database_id, p.object_id));
        v
    }

    /// Each database's share of the cache, by database id.
    pub fn database_shares(&self) -> HashMap<u32, PlanShare> {
        let mut shares: HashMap<u32, PlanShare> = HashMap::new();
        for shard in self.shards.iter() {
            for b in shard.map.read().values().flatten() {
                let ids = b.databases.ids();
                let each = b.size() / ids.len().max(1);
                for id in ids {
                    let share = shares.entry(id).or_default();
                    share.entries += 1;
                    share.bytes += each;
                }
            }
        }
        shares
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.map.read().values().map(Vec::len).sum::<usize>()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
