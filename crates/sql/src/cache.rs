//! The instance-wide plan cache.
//!
//! A batch's text (with the database it runs in) maps to its parsed form and the plans of
//! its statements, bound lazily the first time each statement runs (SQL Server's deferred
//! name resolution: a statement may use a table created earlier in the same batch). A plan
//! remembers the catalog versions it was bound against and is rebound when any changed.
//! Entries are evicted least-recently-used when the cache's estimated size exceeds its
//! budget.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use tessera_errors::SqlResult;
use tessera_syntax::ast::Batch;

/// Default memory budget of the plan cache.
pub const DEFAULT_BUDGET_BYTES: usize = 64 << 20;

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
    pub text: String,
    pub batch: Batch,
    /// Statement address within `batch` → its compiled form.
    plans: Mutex<HashMap<usize, Compiled<T>>>,
    pub use_count: AtomicU64,
    pub handle: u64,
    last_used: AtomicU64,
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

    pub fn store(&self, stmt: usize, compiled: Compiled<T>) {
        self.plans.lock().insert(stmt, compiled);
    }

    /// Estimated memory of the entry: its text, syntax tree and the plans of its
    /// statements (fixed when parsed, so accounting costs nothing per execution).
    fn size(&self) -> usize {
        256 + self.text.len() * 16 + self.batch.statements.len() * 2048
    }
}

struct Inner<T> {
    map: HashMap<(String, String), Arc<CachedBatch<T>>>,
    bytes: usize,
}

pub struct PlanCache<T = crate::dml::Prepared> {
    inner: Mutex<Inner<T>>,
    budget: usize,
    clock: AtomicU64,
    next_handle: AtomicU64,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

/// One row of `sys.dm_exec_cached_plans`.
pub struct CachedPlanInfo {
    pub handle: u64,
    pub use_count: u64,
    pub size: usize,
    pub text: String,
}

impl<T> PlanCache<T> {
    pub fn new(budget: usize) -> PlanCache<T> {
        PlanCache {
            inner: Mutex::new(Inner { map: HashMap::new(), bytes: 0 }),
            budget,
            clock: AtomicU64::new(0),
            next_handle: AtomicU64::new(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The cached batch for `text` in `database`, parsing it on a miss.
    pub fn get_or_parse(
        &self,
        database: &str,
        text: &str,
        parse: impl FnOnce(&str) -> SqlResult<Batch>,
    ) -> SqlResult<Arc<CachedBatch<T>>> {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let key = (database.to_lowercase(), text.to_string());
        if let Some(b) = self.inner.lock().map.get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            b.use_count.fetch_add(1, Ordering::Relaxed);
            b.last_used.store(now, Ordering::Relaxed);
            return Ok(b.clone());
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let batch = parse(text)?;
        let entry = Arc::new(CachedBatch {
            text: text.to_string(),
            batch,
            plans: Mutex::new(HashMap::new()),
            use_count: AtomicU64::new(1),
            handle: self.next_handle.fetch_add(1, Ordering::Relaxed),
            last_used: AtomicU64::new(now),
        });
        let mut inner = self.inner.lock();
        inner.bytes += entry.size();
        if let Some(old) = inner.map.insert(key, entry.clone()) {
            inner.bytes = inner.bytes.saturating_sub(old.size());
        }
        self.evict(&mut inner);
        Ok(entry)
    }

    /// Once over budget, evicts the least recently used entries down to 7/8 of the
    /// budget in one pass (one sort of the entries by last use), so a stream of
    /// distinct batches pays a full pass once per many misses, not on every miss.
    fn evict(&self, inner: &mut Inner<T>) {
        if inner.bytes <= self.budget || inner.map.len() <= 1 {
            return;
        }
        let mut by_age: Vec<(u64, usize)> =
            inner.map.values().map(|b| (b.last_used.load(Ordering::Relaxed), b.size())).collect();
        by_age.sort_unstable_by_key(|&(used, _)| used);
        let target = self.budget - self.budget / 8;
        let mut bytes = inner.bytes;
        let mut cutoff = 0;
        for &(used, size) in &by_age[..by_age.len() - 1] {
            if bytes <= target {
                break;
            }
            bytes -= size;
            cutoff = used;
        }
        inner.map.retain(|_, b| b.last_used.load(Ordering::Relaxed) > cutoff);
        inner.bytes = inner.map.values().map(|b| b.size()).sum();
    }

    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.map.clear();
        inner.bytes = 0;
    }

    pub fn entries(&self) -> Vec<CachedPlanInfo> {
        let inner = self.inner.lock();
        let mut v: Vec<_> = inner
            .map
            .values()
            .map(|b| CachedPlanInfo {
                handle: b.handle,
                use_count: b.use_count.load(Ordering::Relaxed),
                size: b.size(),
                text: b.text.clone(),
            })
            .collect();
        v.sort_by_key(|e| e.handle);
        v
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(_: &str) -> SqlResult<Batch> {
        Ok(Batch { statements: Vec::new() })
    }

    #[test]
    fn hits_misses_and_lru_eviction() {
        let cache: PlanCache<()> = PlanCache::new(2000);
        cache.get_or_parse("db", "select 1", parse).unwrap();
        cache.get_or_parse("DB", "select 1", parse).unwrap();
        assert_eq!(cache.hits.load(Ordering::Relaxed), 1);
        assert_eq!(cache.misses.load(Ordering::Relaxed), 1);
        for i in 0..20 {
            cache.get_or_parse("db", &format!("select {i}"), parse).unwrap();
            cache.get_or_parse("db", "select 1", parse).unwrap();
        }
        assert!(cache.len() < 20, "the budget bounds the cache");
        let texts: Vec<_> = cache.entries().into_iter().map(|e| e.text).collect();
        assert!(texts.contains(&"select 19".to_string()), "the newest entry stays");
        assert!(texts.contains(&"select 1".to_string()), "a recently used entry stays");
        assert!(!texts.contains(&"select 2".to_string()), "the least recently used went first");
    }

    #[test]
    fn plans_are_rebound_when_versions_change() {
        let cache: PlanCache<u32> = PlanCache::new(1 << 20);
        let b = cache.get_or_parse("db", "x", parse).unwrap();
        b.store(
            7,
            Compiled {
                versions: vec![("db".into(), 3)],
                context: 0,
                plan: Arc::new(42),
                objects: Arc::from([("db".to_string(), 5)]),
            },
        );
        assert_eq!(&b.objects(7)[..], &[("db".to_string(), 5)]);
        assert_eq!(b.plan(7, 0, |_| Some(3)).as_deref(), Some(&42));
        assert!(b.plan(7, 0, |_| Some(4)).is_none());
        assert!(b.plan(7, 1, |_| Some(3)).is_none(), "another session's context");
        assert!(b.plan(8, 0, |_| Some(3)).is_none());
    }
}
