//! Query Store: each database's history of its queries, their plans and what their runs
//! cost per time interval, kept in the database itself (so it survives restarts and
//! travels with BACKUP and RESTORE), as SQL Server keeps it.
//!
//! - A database with Query Store on has a [`QueryStore`] once it is used: its settings,
//!   and, loaded at its first run, the ids of what it keeps ([`memory`]). A database
//!   with Query Store off, or not used, costs nothing: its catalog entry has no store,
//!   and a statement's only cost is finding that out.
//! - A run is counted in memory under the store's lock; what was counted is written to
//!   the database's Query Store tree ([`rows`], [`storage`]) by a flush: every
//!   `DATA_FLUSH_INTERVAL_SECONDS` (the instance's flusher thread,
//!   `crate::query_store_flusher`), when the pending rows pass [`PENDING_FLUSH_BYTES`], when
//!   the database closes, at shutdown, and by `sp_query_store_flush_db`. What a crash
//!   loses is what was not flushed, as in SQL Server.
//! - The views read the tree and lay what is pending over it.
//! - Each flush keeps the store within its bounds: intervals older than
//!   `STALE_QUERY_THRESHOLD_DAYS` go; past 90 % of `MAX_STORAGE_SIZE_MB` the least
//!   recently run queries go until 80 % is used (`SIZE_BASED_CLEANUP_MODE = AUTO`), or
//!   the store turns READ_ONLY at the limit (`OFF`).

pub mod memory;
pub mod options;
pub mod rows;
pub mod storage;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tessera_database::Database;
use tessera_errors::SqlResult;
use tessera_semantics::plan::PlanSite;

pub use memory::{Described, PlanText, Ran};
pub use options::{Capture, Mode, Options};

use memory::Loaded;
use storage::Removal;

/// Wait categories are numbered 0 to 23 (`sys.query_store_wait_stats.wait_category`).
pub const WAIT_CATEGORIES: usize = 24;

/// Pending rows past this many bytes are flushed at once (SQL Server turns its store
/// read-only for a while instead).
pub const PENDING_FLUSH_BYTES: usize = 8 << 20;

/// How often a flush looks for stale intervals and queries (an hour).
const STALE_CHECK_MS: i64 = 3_600_000;

/// `readonly_reason`: the size limit was reached with size-based cleanup off.
pub const READONLY_SIZE_LIMIT: i64 = 65536;

/// One database's Query Store.
pub struct QueryStore {
    /// The database's name as registered.
    pub database: String,
    pub database_id: u32,
    /// The mode runs are counted in ([`Mode::code`]): read without the lock by every run.
    actual: AtomicU8,
    /// Why it is READ_ONLY when READ_WRITE was asked for (0: it is not).
    readonly_reason: AtomicI64,
    /// When the next flush is due (Unix epoch ms; 0: now).
    next_flush_ms: AtomicI64,
    /// WAIT_STATS_CAPTURE_MODE, read by every run.
    wait_stats: AtomicBool,
    /// When stale rows were last looked for (Unix epoch ms): at most once an hour, as
    /// that reads the whole store.
    stale_checked_ms: AtomicI64,
    inner: Mutex<Inner>,
    /// One flush or removal at a time.
    writing: Mutex<()>,
}

struct Inner {
    options: Options,
    /// None until the first run counted since it was opened (or after it was unloaded).
    loaded: Option<Loaded>,
}

/// Milliseconds since the Unix epoch, now.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl QueryStore {
    fn new(db: &Database, options: Options) -> QueryStore {
        let store = QueryStore {
            database: db.name().to_string(),
            database_id: db.id(),
            actual: AtomicU8::new(0),
            readonly_reason: AtomicI64::new(0),
            next_flush_ms: AtomicI64::new(i64::MAX),
            wait_stats: AtomicBool::new(options.wait_stats),
            stale_checked_ms: AtomicI64::new(0),
            inner: Mutex::new(Inner { options: options.clone(), loaded: None }),
            writing: Mutex::new(()),
        };
        store.set_actual(options.desired, 0);
        store
    }

    fn set_actual(&self, mode: Mode, reason: i64) {
        self.actual.store(mode.code() as u8, Ordering::Release);
        self.readonly_reason.store(reason, Ordering::Relaxed);
    }

    /// The mode runs are counted in.
    pub fn actual(&self) -> Mode {
        match self.actual.load(Ordering::Acquire) {
            2 => Mode::ReadWrite,
            1 => Mode::ReadOnly,
            _ => Mode::Off,
        }
    }

    pub fn readonly_reason(&self) -> i64 {
        self.readonly_reason.load(Ordering::Relaxed)
    }

    /// Whether runs are counted now (one atomic read).
    pub fn capturing(&self) -> bool {
        self.actual.load(Ordering::Relaxed) == Mode::ReadWrite.code() as u8
    }

    pub fn options(&self) -> Options {
        self.inner.lock().options.clone()
    }

    /// Counts a run of the plan the plan cache knows as `plan_key`. The store loads what
    /// it keeps from `db` at its first run; `describe` is called at a plan's first run.
    pub fn record(
        &self,
        db: impl FnOnce() -> SqlResult<Arc<Database>>,
        plan_key: u64,
        ran: &Ran,
        describe: impl FnOnce() -> Described,
    ) -> SqlResult<()> {
        let mut inner = self.inner.lock();
        if inner.loaded.is_none() {
            let stored = storage::load(&db()?)?;
            inner.loaded = Some(Loaded::new(stored));
        }
        let Inner { options, loaded } = &mut *inner;
        let loaded = loaded.as_mut().expect("loaded above");
        let was_empty = loaded.pending.is_empty();
        loaded.record(options, plan_key, ran, describe);
        if was_empty && !loaded.pending.is_empty() {
            let due = now_ms().saturating_add(options.flush_interval_seconds.saturating_mul(1000));
            self.next_flush_ms.fetch_min(due, Ordering::Relaxed);
        }
        if loaded.pending.bytes > PENDING_FLUSH_BYTES {
            self.next_flush_ms.store(0, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Whether per-run waits are wanted (WAIT_STATS_CAPTURE_MODE).
    pub fn wants_waits(&self) -> bool {
        self.wait_stats.load(Ordering::Relaxed)
    }

    /// Whether a flush is due at `now`.
    pub fn due(&self, now: i64) -> bool {
        self.next_flush_ms.load(Ordering::Relaxed) <= now
    }

    fn has_pending(&self) -> bool {
        self.inner.lock().loaded.as_ref().is_some_and(|l| !l.pending.is_empty())
    }

    /// Writes what is pending to `db` (plans rendered as they read in `site`, the
    /// database's) and keeps the store within its bounds.
    pub fn flush(&self, db: &Arc<Database>, site: &PlanSite) -> SqlResult<()> {
        let _writing = self.writing.lock();
        self.next_flush_ms.store(i64::MAX, Ordering::Relaxed);
        let taken = {
            let mut inner = self.inner.lock();
            inner.loaded.as_mut().map(|l| (std::mem::take(&mut l.pending), l.counters))
        };
        if let Some((pending, counters)) = taken.filter(|(p, _)| !p.is_empty()) {
            let t = storage::tree(db, true)?.expect("made");
            let mut tx = db.begin();
            let changes = storage::changes(db, &pending, &counters, &|k| Ok(tx.get(t, k)?), site)?;
            let delta = storage::write(&mut tx, t, &changes)?;
            tx.commit()?;
            if let Some(l) = self.inner.lock().loaded.as_mut() {
                l.stored_bytes = l.stored_bytes.saturating_add_signed(delta);
            }
        }
        self.keep_bounds(db)
    }

    /// Removes stale intervals and queries, and what the size limit needs removed (or
    /// turns the store READ_ONLY at the limit when size-based cleanup is off).
    fn keep_bounds(&self, db: &Arc<Database>) -> SqlResult<()> {
        let options = self.options();
        let Some(stored) = self.inner.lock().loaded.as_ref().map(|l| l.stored_bytes) else { return Ok(()) };
        let max = options.max_bytes();
        let now = now_ms();
        let stale_due = self.stale_checked_ms.load(Ordering::Relaxed) <= now - STALE_CHECK_MS;
        let stale_before = (options.stale_query_threshold_days > 0 && stale_due)
            .then(|| now - options.stale_query_threshold_days.saturating_mul(86_400_000));
        if stale_before.is_some() {
            self.stale_checked_ms.store(now, Ordering::Relaxed);
        }
        let over = stored >= max / 10 * 9;
        if stale_before.is_none() && !over {
            if self.readonly_reason() == READONLY_SIZE_LIMIT && stored < max {
                self.set_actual(options.desired, 0);
            }
            return Ok(());
        }
        let rows = storage::all_rows(db)?;
        let mut removal = Removal { intervals_before_ms: stale_before, ..Removal::default() };
        let mut queries: Vec<(i64, i64)> = Vec::new();
        for (k, v) in storage::of_kind(&rows, rows::QUERY) {
            let q: rows::QueryRow = storage::decode(db, v)?;
            let id = rows::parts(k)[0] as i64;
            let last = q.last_execution_ms.max(q.last_compile_ms);
            if stale_before.is_some_and(|before| last < before) {
                removal.queries.push(id);
            } else {
                queries.push((last, id));
            }
        }
        if over {
            if options.size_based_cleanup {
                // The least recently run first, until 80 % would be used.
                let bytes = storage::bytes_by_query(db, &rows)?;
                queries.sort_unstable();
                let target = max / 10 * 8;
                let mut left = stored;
                for (_, id) in queries {
                    if left <= target {
                        break;
                    }
                    removal.queries.push(id);
                    left = left.saturating_sub(bytes.get(&id).copied().unwrap_or(0));
                }
            } else if stored >= max {
                self.set_actual(Mode::ReadOnly, READONLY_SIZE_LIMIT);
            }
        }
        if removal.queries.is_empty() && removal.intervals_before_ms.is_none() {
            return Ok(());
        }
        self.remove_rows(db, &rows, &removal)
    }

    /// Deletes what `removal` names, then reloads the ids from storage (keeping what was
    /// counted meanwhile).
    fn remove_rows(&self, db: &Arc<Database>, rows: &storage::Rows, removal: &Removal) -> SqlResult<()> {
        let changes = storage::removals(db, rows, removal)?;
        if !changes.is_empty() {
            let t = storage::tree(db, true)?.expect("made");
            let mut tx = db.begin();
            storage::write(&mut tx, t, &changes)?;
            tx.commit()?;
        }
        self.reload(db)
    }

    fn reload(&self, db: &Arc<Database>) -> SqlResult<()> {
        let stored = storage::load(db)?;
        let mut inner = self.inner.lock();
        let mut fresh = Loaded::new(stored);
        if let Some(old) = inner.loaded.take() {
            fresh.pending = old.pending;
            fresh.counters = old.counters;
            fresh.interval = old.interval;
        }
        fresh.forget_seen();
        inner.loaded = Some(fresh);
        Ok(())
    }

    /// Every row as the views read them: storage with what is pending laid over it (plans
    /// rendered as they read in `site`).
    pub fn rows(&self, db: &Arc<Database>, site: &PlanSite) -> SqlResult<storage::Rows> {
        let mut rows = storage::all_rows(db)?;
        let inner = self.inner.lock();
        if let Some(l) = inner.loaded.as_ref().filter(|l| !l.pending.is_empty()) {
            let changes = storage::changes(db, &l.pending, &l.counters, &|k| Ok(rows.get(k).cloned()), site)?;
            storage::overlay(&mut rows, changes);
        }
        Ok(rows)
    }

    /// The bytes Query Store holds in storage (what `current_storage_size_mb` shows).
    pub fn stored_bytes(&self, db: &Arc<Database>) -> SqlResult<u64> {
        if let Some(l) = self.inner.lock().loaded.as_ref() {
            return Ok(l.stored_bytes);
        }
        Ok(storage::load(db)?.bytes)
    }

    /// `sp_query_store_remove_query`, `sp_query_store_remove_plan`,
    /// `sp_query_store_reset_exec_stats` and `QUERY_STORE CLEAR`: flushes, then removes.
    pub fn remove(&self, db: &Arc<Database>, removal: &Removal, site: &PlanSite) -> SqlResult<()> {
        self.flush(db, site)?;
        let _writing = self.writing.lock();
        let rows = storage::all_rows(db)?;
        self.remove_rows(db, &rows, removal)
    }

    /// New settings (written to the database by the caller's ALTER DATABASE).
    fn set_options(&self, options: Options) {
        let desired = options.desired;
        self.wait_stats.store(options.wait_stats, Ordering::Relaxed);
        self.inner.lock().options = options;
        self.set_actual(desired, 0);
    }

    /// Drops what is loaded when nothing is pending (the database closed): the ids are
    /// read again at its next run.
    fn unload_if_clean(&self) -> bool {
        let mut inner = self.inner.lock();
        if inner.loaded.as_ref().is_some_and(|l| !l.pending.is_empty()) {
            self.next_flush_ms.store(0, Ordering::Relaxed);
            return false;
        }
        inner.loaded = None;
        true
    }
}

/// The instance's Query Stores: one per database that has Query Store on and has been
/// used since the start.
#[derive(Default)]
pub struct QueryStores {
    stores: Mutex<HashMap<String, Arc<QueryStore>>>,
}

impl QueryStores {
    /// The store of database `db` if its Query Store is on (reading its settings once:
    /// a database that never turned it on has no tree, and costs one lookup by name).
    pub fn open(&self, db: &Arc<Database>) -> SqlResult<Option<Arc<QueryStore>>> {
        let key = db.name().to_lowercase();
        if let Some(s) = self.stores.lock().get(&key) {
            return Ok(Some(s.clone()));
        }
        let Some(options) = storage::read_options(db)? else { return Ok(None) };
        if options.desired == Mode::Off {
            return Ok(None);
        }
        let store = Arc::new(QueryStore::new(db, options));
        Ok(Some(self.stores.lock().entry(key).or_insert(store).clone()))
    }

    /// The store of database `db`, made if it has none, with `options` (the caller has
    /// written them).
    pub fn configure(&self, db: &Arc<Database>, options: Options) -> Arc<QueryStore> {
        let key = db.name().to_lowercase();
        let mut stores = self.stores.lock();
        let store = stores.entry(key).or_insert_with(|| Arc::new(QueryStore::new(db, options.clone()))).clone();
        drop(stores);
        store.set_options(options);
        store
    }

    /// The store of the database named `name`, if it has one loaded.
    pub fn get(&self, name: &str) -> Option<Arc<QueryStore>> {
        self.stores.lock().get(&name.to_lowercase()).cloned()
    }

    /// The database `name` closed: its store keeps no ids in memory once what is pending
    /// is written (by the flusher, which opens it again for that).
    pub fn closed(&self, name: &str) {
        if let Some(s) = self.get(name) {
            s.unload_if_clean();
        }
    }

    /// The database `name` was dropped or restored over: what its store held is gone.
    pub fn forget(&self, name: &str) {
        self.stores.lock().remove(&name.to_lowercase());
    }

    /// The stores whose flush is due now (or that have anything pending, with `all`).
    pub fn due(&self, all: bool) -> Vec<Arc<QueryStore>> {
        let now = now_ms();
        let stores: Vec<Arc<QueryStore>> = self.stores.lock().values().cloned().collect();
        stores.into_iter().filter(|s| if all { s.has_pending() } else { s.due(now) }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_database_keeps_its_store_loaded_only_while_something_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        let engine = tessera_database::Engine::open(tessera_database::EngineConfig::new(dir.path())).unwrap();
        engine.create_database("qs", tessera_database::DatabaseOptions::default()).unwrap();
        let db = engine.database("qs").unwrap();
        let stores = QueryStores::default();
        assert!(stores.open(&db).unwrap().is_none(), "never turned on: no store");
        let options = Options { capture: Capture::All, ..Options::default() };
        storage::write_options(&db, &options).unwrap();
        let store = stores.configure(&db, options);
        let ran = Ran { execution_type: 0, ended_ms: now_ms(), values: [5.0; rows::MEASURES], waits: None };
        let describe = || memory::tests::described("select 1", 1);
        store.record(|| Ok(db.clone()), 1, &ran, describe).unwrap();
        assert!(!store.unload_if_clean(), "pending rows keep it loaded");
        assert_eq!(stores.due(false).len(), 1, "and make its flush due");
        store.flush(&db, &storage::tests::test_site()).unwrap();
        assert!(store.unload_if_clean());
        let rows = store.rows(&db, &storage::tests::test_site()).unwrap();
        assert_eq!(storage::of_kind(&rows, rows::QUERY).count(), 1);
        assert_eq!(storage::text(&rows, rows::TEXT, 1), "select 1");
        assert_eq!(storage::text(&rows, rows::PLAN_TEXT, 1), "plan in r", "rendered in the store's database");
        // Opened again (as after a restart), it finds its settings and ids.
        let again = QueryStores::default().open(&db).unwrap().expect("on");
        again.record(|| Ok(db.clone()), 7, &ran, describe).unwrap();
        again.flush(&db, &storage::tests::test_site()).unwrap();
        let rows = again.rows(&db, &storage::tests::test_site()).unwrap();
        assert_eq!(storage::of_kind(&rows, rows::QUERY).count(), 1, "the same query");
        let stats: Vec<rows::StatsRow> =
            storage::of_kind(&rows, rows::STATS).map(|(_, v)| storage::decode(&db, v).unwrap()).collect();
        assert_eq!(stats.iter().map(|s| s.count).sum::<i64>(), 2);
        assert_eq!(stats.len(), 1, "one row per interval, plan and type, merged");
    }
}
