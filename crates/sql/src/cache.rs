//! The instance-wide plan cache.
//!
//! A batch's text (with the database it runs in) maps to its parsed form and the plans of
//! its statements, bound lazily the first time each statement runs (SQL Server's deferred
//! name resolution: a statement may use a table created earlier in the same batch). A plan
//! remembers the catalog versions it was bound against and is rebound when any changed.
//!
//! **Sharded.** Entries live in [`SHARDS`] shards chosen by a hash of (database, text);
//! a hit takes one shard's read lock and allocates nothing, so sessions running cached
//! batches do not serialise on the cache.
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

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};

use tessera_errors::SqlResult;
use tessera_syntax::ast::Batch;

/// Default memory budget of the plan cache.
pub const DEFAULT_BUDGET_BYTES: usize = 64 << 20;

/// Number of shards; a power of two.
pub const SHARDS: usize = 16;

/// Estimated memory of a bound statement plan.
const PLAN_BYTES: usize = 2048;

/// A compiled statement, the catalog versions (database name, version) it depends on,
/// a fingerprint of the session state it was bound in (temp table names, IDENTITY_INSERT),
/// and the objects (database, object id) it uses, which it holds schema-stability locks
/// on while it runs.
pub struct Compiled<T> {
    pub versions: Vec<(String, u64)>,
    pub context: u64,
    pub plan: Arc<T>,
    pub objects: Arc<[(String, i32)]>,
}

pub struct CachedBatch<T> {
    /// The database the batch was compiled in, as the session named it.
    pub database: String,
    pub text: String,
    pub batch: Batch,
    /// Statement address within `batch` → its compiled form.
    plans: Mutex<HashMap<usize, Compiled<T>>>,
    pub use_count: AtomicU64,
    pub handle: u64,
    /// Microseconds spent parsing the batch and binding its statements.
    cost_us: AtomicU64,
    /// GreedyDual priority: the shard's floor at the last use plus the cost per KiB.
    priority: AtomicU64,
    bytes: AtomicUsize,
    /// The counters of the shard holding this entry.
    shard: Arc<ShardCounters>,
}

impl<T> CachedBatch<T> {
    /// The compiled plan for a statement, if its dependencies are still at the versions
    /// `current` reports.
    pub fn plan(&self, stmt: usize, context: u64, current: impl Fn(&str) -> Option<u64>) -> Option<Arc<T>> {
        let plans = self.plans.lock();
        let c = plans.get(&stmt)?;
        (c.context == context && c.versions.iter().all(|(db, v)| current(db) == Some(*v))).then(|| c.plan.clone())
    }

    /// The objects the statement's compiled plan uses (empty if it has none).
    pub fn objects(&self, stmt: usize) -> Arc<[(String, i32)]> {
        self.plans.lock().get(&stmt).map_or_else(|| Arc::from([]), |c| c.objects.clone())
    }

    /// Keeps a statement's plan, bound in `bind_us` microseconds, and accounts for it.
    pub fn store(&self, stmt: usize, compiled: Compiled<T>, bind_us: u64) {
        let added = PLAN_BYTES + compiled.versions.iter().map(|(db, _)| db.len() + 32).sum::<usize>();
        let replaced = self.plans.lock().insert(stmt, compiled);
        if replaced.is_none() {
            self.bytes.fetch_add(added, Ordering::Relaxed);
            self.shard.bytes.fetch_add(added, Ordering::Relaxed);
        }
        self.cost_us.fetch_add(bind_us, Ordering::Relaxed);
        self.touch();
    }

    /// Estimated memory of the entry: text, syntax tree and bound plans.
    pub fn size(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Whether the entry was compiled in `database` or has a plan bound against it.
    fn depends_on(&self, database: &str) -> bool {
        self.database.eq_ignore_ascii_case(database)
            || self.plans.lock().values().any(|c| c.versions.iter().any(|(db, _)| db.eq_ignore_ascii_case(database)))
    }

    /// Sets the priority for a use now.
    fn touch(&self) {
        let floor = self.shard.floor.load(Ordering::Relaxed);
        let cost = self.cost_us.load(Ordering::Relaxed).max(1);
        let kib = (self.size() as u64 / 1024).max(1);
        self.priority.store(floor + (cost * 1024 / kib).max(1), Ordering::Relaxed);
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
    /// Hash of (database, text) → the entries with that hash.
    map: RwLock<HashMap<u64, Vec<Arc<CachedBatch<T>>>>>,
    counters: Arc<ShardCounters>,
}

impl<T> Shard<T> {
    fn new() -> Shard<T> {
        Shard { map: RwLock::new(HashMap::new()), counters: Arc::default() }
    }

    fn find(&self, hash: u64, database: &str, text: &str) -> Option<Arc<CachedBatch<T>>> {
        let map = self.map.read();
        map.get(&hash)?.iter().find(|b| b.text == text && b.database.eq_ignore_ascii_case(database)).cloned()
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

/// One row of `sys.dm_exec_cached_plans`.
pub struct CachedPlanInfo {
    pub handle: u64,
    pub use_count: u64,
    pub size: usize,
    pub database: String,
    pub text: String,
}

/// The hash of (database, text), the database's case ignored; allocates nothing.
fn key_hash(database: &str, text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for b in database.bytes() {
        h.write_u8(b.to_ascii_lowercase());
    }
    text.hash(&mut h);
    h.finish()
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

    /// The cached batch for `text` in `database`, parsing it on a miss.
    pub fn get_or_parse(
        &self,
        database: &str,
        text: &str,
        parse: impl FnOnce(&str) -> SqlResult<Batch>,
    ) -> SqlResult<Arc<CachedBatch<T>>> {
        let hash = key_hash(database, text);
        let shard = self.shard(hash);
        if let Some(b) = shard.find(hash, database, text) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            b.use_count.fetch_add(1, Ordering::Relaxed);
            b.touch();
            return Ok(b);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let batch = parse(text)?;
        let bytes = 256 + database.len() + text.len() * 16;
        let entry = Arc::new(CachedBatch {
            database: database.to_string(),
            text: text.to_string(),
            batch,
            plans: Mutex::new(HashMap::new()),
            use_count: AtomicU64::new(1),
            handle: self.next_handle.fetch_add(1, Ordering::Relaxed),
            cost_us: AtomicU64::new(started.elapsed().as_micros() as u64),
            priority: AtomicU64::new(0),
            bytes: AtomicUsize::new(bytes),
            shard: shard.counters.clone(),
        });
        entry.touch();
        {
            let mut map = shard.map.write();
            let entries = map.entry(hash).or_default();
            if let Some(at) = entries.iter().position(|b| b.text == text && b.database.eq_ignore_ascii_case(database)) {
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

    /// Evicts the entries compiled in `database` or bound against it (it was dropped,
    /// restored or taken offline); the other databases' entries stay.
    pub fn forget_database(&self, database: &str) -> usize {
        self.shards.iter().map(|s| s.remove_where(|b| b.depends_on(database))).sum()
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
                        database: b.database.clone(),
                        text: b.text.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        v.sort_by_key(|e| e.handle);
        v
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
