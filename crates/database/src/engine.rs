//! The engine: one buffer pool shared by every database, the registry of databases,
//! and the background work (log flushes for delayed durability, checkpoints, closing
//! idle databases).
//!
//! A database opens on first use (recovery runs then) and closes after it has been
//! idle for `idle_close_after` with no handle held outside the engine, or when more
//! than `max_open_databases` are open (least recently used first). A closed database
//! costs an entry in the registry and nothing else: no file descriptors, no frames.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use tessera_access::space::DataConfig;
use tessera_buffer::page::PAGE_SIZE;
use tessera_buffer::{BufferPool, HugePages, PoolConfig, PoolStats};
use tessera_errors::msg;
use tessera_errors::{Error, Result};
use tessera_log::LogConfig;

use crate::database::{Database, DatabaseOptions, Host};
use crate::decisions::Decisions;
use crate::memory::{self, MemoryGovernor, MemoryStatus};
use crate::registry::{self, Change, DbState, Entry, Registry};

mod attach;
mod exclusive;
mod ids;
mod slots;

pub use exclusive::Exclusive;
use slots::{Slot, Slots};

#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Where data files and the registry live (created if missing).
    pub data_dir: PathBuf,
    /// Where log files go by default (may be another device); defaults to `data_dir`.
    pub log_dir: Option<PathBuf>,
    /// Maximum size of the shared buffer pool until `set_memory_limits` says otherwise.
    /// The pool reserves address space for the larger of this and the machine's memory,
    /// so the limit can later move anywhere below that.
    pub pool_bytes: usize,
    /// Databases kept open at once, at most (the least recently used idle one is closed
    /// first); `set_open_limits` may lower it, never raise it past this.
    pub max_open_databases: usize,
    /// An idle database is closed after this long (`set_open_limits` changes it).
    pub idle_close_after: Duration,
    /// A database whose log grew this much since its last checkpoint is checkpointed.
    pub checkpoint_log_bytes: u64,
    /// How often delayed-durability commits are flushed (their loss window).
    pub delayed_flush_interval: Duration,
    /// Sizes of new databases' data files (each database may set its own, see
    /// `DatabaseOptions`).
    pub data: DataConfig,
    /// Sizes of new databases' log files, and the log's write buffer.
    pub log: LogConfig,
    /// The most each database's row versions (for SNAPSHOT isolation and READ COMMITTED
    /// SNAPSHOT, in memory) may hold; past it the oldest snapshots are given up (3966).
    pub version_store_max_bytes: u64,
    /// Run the background thread (tests may drive checkpoints themselves).
    pub background: bool,
    /// How the buffer pool's frames are backed. With `HugePages::On` the pool reserves
    /// (and the kernel must have free) huge pages for `pool_bytes` at start, and max
    /// server memory cannot later rise above it.
    pub huge_pages: HugePages,
    /// The lock on `data_dir` if the caller took it already (a server takes it before it
    /// writes its ERRORLOG or certificate there); otherwise the engine takes it.
    pub dir_lock: Option<Arc<tessera_io::DirLock>>,
}

impl EngineConfig {
    pub fn new(data_dir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            data_dir: data_dir.into(),
            log_dir: None,
            pool_bytes: 1 << 30,
            max_open_databases: 4096,
            idle_close_after: Duration::from_secs(300),
            checkpoint_log_bytes: 256 << 20,
            delayed_flush_interval: Duration::from_millis(10),
            data: DataConfig::default(),
            log: LogConfig::default(),
            version_store_max_bytes: 1 << 30,
            background: true,
            huge_pages: HugePages::default(),
            dir_lock: None,
        }
    }
}

/// A page the buffer pool holds (`sys.dm_os_buffer_descriptors`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferDescriptor {
    pub database: String,
    pub database_id: u32,
    pub page: u32,
    pub dirty: bool,
    pub in_extension: bool,
}

#[derive(Clone, Debug)]
pub struct EngineStats {
    pub databases: usize,
    pub open_databases: usize,
    pub pool: PoolStats,
}

/// The least recently used open databases as of `sorted_at`, the oldest last.
struct CloseQueue {
    sorted_at: Instant,
    oldest_last: Vec<Arc<Slot>>,
}

struct Inner {
    slots: Slots,
    next_id: u32,
    /// Files of detached databases (kept in the registry so that CREATE DATABASE never
    /// deletes them as orphans; see `attach.rs`).
    detached: Vec<Entry>,
    registry: Registry,
}

pub struct Engine {
    /// Keeps every other process out of the data directory while the engine is open.
    _dir_lock: Arc<tessera_io::DirLock>,
    config: EngineConfig,
    pool: Arc<BufferPool>,
    memory: MemoryGovernor,
    inner: Mutex<Inner>,
    stop: Arc<AtomicBool>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The open-database limit and idle time in force (see `set_open_limits`).
    max_open: AtomicUsize,
    idle_close_ms: AtomicU64,
    /// Told of each database the engine opens or closes (see [`Engine::listen`]).
    listener: Mutex<Option<DatabaseListener>>,
    /// Open databases to close first when too many are open (see `enforce_open_limit`).
    close_queue: Mutex<CloseQueue>,
    /// Commit decisions of transactions across databases (two-phase commit).
    decisions: Arc<Decisions>,
}

/// A database the engine opened (on first use) or closed (idle, over the open limit, or
/// by `close_database`), by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatabaseEvent<'a> {
    Opened(&'a str),
    Closed(&'a str),
}

/// How long DROP DATABASE waits for holders of the database to let go before it says the
/// database is in use.
const IN_USE_PATIENCE: Duration = Duration::from_millis(200);

/// An open database idle this long gives back what its lock and transaction tables kept
/// from their busiest moment (at the next maintenance round, once per idle spell): with
/// thousands open, most are idle, and each would otherwise keep its peak.
const IDLE_MEMORY_AFTER: Duration = Duration::from_secs(1);

/// Called after each [`DatabaseEvent`].
pub type DatabaseListener = Arc<dyn Fn(DatabaseEvent<'_>) + Send + Sync>;

/// The budget of the log buffers all databases share: a sixteenth of max server memory,
/// 1 to 64 MiB.
fn log_buffer_budget(max_server_memory_bytes: u64) -> usize {
    usize::try_from(max_server_memory_bytes / 16).unwrap_or(usize::MAX).clamp(1 << 20, 64 << 20)
}

/// The buffer pool's part of a memory target: what the log buffers' budget leaves.
fn pool_share(target_bytes: u64, log: &LogConfig) -> usize {
    let target = usize::try_from(target_bytes).unwrap_or(usize::MAX);
    target.saturating_sub(log.buffers.stats().budget_bytes).max(target / 2)
}

pub(crate) fn key(name: &str) -> String {
    name.to_lowercase()
}

/// Database names are case-insensitive: `f` gets `name` lower-cased, without allocating
/// for names of up to 128 ASCII characters (SQL Server's limit on a name's length).
pub fn with_lowercase<R>(name: &str, f: impl FnOnce(&str) -> R) -> R {
    let mut buf = [0u8; 128];
    if name.len() <= buf.len() && name.is_ascii() {
        let lower = &mut buf[..name.len()];
        lower.copy_from_slice(name.as_bytes());
        lower.make_ascii_lowercase();
        f(std::str::from_utf8(lower).expect("ASCII is UTF-8"))
    } else {
        f(&name.to_lowercase())
    }
}

impl Engine {
    /// Opens (or creates) the instance in `config.data_dir`; `master` exists from the
    /// first start.
    pub fn open(config: EngineConfig) -> Result<Arc<Engine>> {
        for dir in [Some(&config.data_dir), config.log_dir.as_ref()].into_iter().flatten() {
            tessera_io::durable::create_dir_all(dir)?;
        }
        let dir_lock = match &config.dir_lock {
            Some(lock) => lock.clone(),
            None => Arc::new(tessera_io::DirLock::acquire(&config.data_dir)?),
        };
        let machine = memory::sample().map_or(0, |s| s.total_bytes as usize);
        // Address space for the machine's memory costs nothing; explicit huge pages are
        // reserved in full, so they are taken for the configured size only.
        let reservation =
            if config.huge_pages == HugePages::On { config.pool_bytes } else { config.pool_bytes.max(machine) };
        let pool = BufferPool::new(PoolConfig {
            max_bytes: reservation,
            huge_pages: config.huge_pages,
            ..PoolConfig::default()
        })?;
        let memory = MemoryGovernor::new(reservation as u64, config.pool_bytes as u64, PAGE_SIZE);
        config.log.buffers.set_budget(log_buffer_budget(memory.status().max_bytes));
        pool.set_max_bytes(pool_share(memory.status().target_bytes, &config.log))?;
        let (registry, registry::Loaded { entries, detached }) =
            Registry::open(&Engine::registry_path(&config.data_dir), key)?;
        let decisions = Arc::new(Decisions::open(&config.data_dir)?);
        let next_id = entries.iter().map(|e| e.id + 1).max().unwrap_or(1);
        let mut slots = Slots::default();
        for e in entries {
            slots.insert(key(&e.name), Slot::new(e, None));
        }
        let max_open = AtomicUsize::new(config.max_open_databases.max(1));
        let idle_close_ms = AtomicU64::new(u64::try_from(config.idle_close_after.as_millis()).unwrap_or(u64::MAX));
        let engine = Arc::new(Engine {
            _dir_lock: dir_lock,
            max_open,
            idle_close_ms,
            config,
            pool,
            memory,
            inner: Mutex::new(Inner { slots, next_id, detached, registry }),
            stop: Arc::new(AtomicBool::new(false)),
            worker: Mutex::new(None),
            listener: Mutex::new(None),
            close_queue: Mutex::new(CloseQueue { sorted_at: Instant::now(), oldest_last: Vec::new() }),
            decisions,
        });
        if !engine.exists("master") {
            engine.create_database("master", DatabaseOptions::default())?;
        }
        if engine.config.background {
            let weak = Arc::downgrade(&engine);
            let stop = engine.stop.clone();
            let handle = std::thread::Builder::new()
                .name("tessera-background".into())
                .spawn(move || background(weak, stop))
                .map_err(|e| Error::Invalid(format!("cannot start the background thread: {e}")))?;
            *engine.worker.lock() = Some(handle);
        }
        Ok(engine)
    }

    /// What the engine lends the databases it creates and opens.
    fn host(&self) -> Host<'_> {
        Host { pool: &self.pool, data: &self.config.data, log: &self.config.log, decisions: &self.decisions }
    }

    fn registry_path(dir: &Path) -> PathBuf {
        dir.join("databases.reg")
    }

    /// Makes `changes` to the registry durable (the in-memory state has them already).
    fn record(inner: &mut Inner, changes: &[Change]) -> Result<()> {
        let Inner { registry, slots, detached, .. } = inner;
        registry.record(changes, || {
            // Locked in the usual order (the engine's, then each entry's).
            let mut entries: Vec<Entry> = slots.values().map(|s| s.entry.lock().clone()).collect();
            entries.sort_unstable_by_key(|e| e.id);
            (entries, detached.clone())
        })
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    pub fn exists(&self, name: &str) -> bool {
        self.inner.lock().slots.contains_key(&key(name))
    }

    /// Names of every database, in creation order.
    /// Every registered database as the registry holds it (open or not), by id.
    pub fn entries(&self) -> Vec<Entry> {
        let inner = self.inner.lock();
        let mut v: Vec<Entry> = inner.slots.values().map(|s| s.entry.lock().clone()).collect();
        v.sort_by_key(|e| e.id);
        v
    }

    /// The registered database `name` (any case), open or not.
    pub fn entry(&self, name: &str) -> Option<Entry> {
        self.slot(name).ok().map(|s| s.entry.lock().clone())
    }

    /// The registered database with this id, open or not.
    pub fn entry_by_id(&self, id: u32) -> Option<Entry> {
        let inner = self.inner.lock();
        let found = inner.slots.by_id(id).map(|s| s.entry.lock().clone());
        found
    }

    pub fn database_names(&self) -> Vec<String> {
        let inner = self.inner.lock();
        let mut v: Vec<_> = inner.slots.values().map(|s| s.entry.lock()).map(|e| (e.id, e.name.clone())).collect();
        v.sort();
        v.into_iter().map(|(_, n)| n).collect()
    }

    /// Creates a database: a data file and a log file (their directories may differ).
    /// Where a new database's data and log files go unless its options say otherwise:
    /// `name.mdf` in the data directory, `name_log.ldf` in the log directory.
    pub fn new_database_paths(&self, name: &str) -> (PathBuf, PathBuf) {
        let log_dir = self.config.log_dir.as_ref().unwrap_or(&self.config.data_dir);
        (self.config.data_dir.join(format!("{name}.mdf")), log_dir.join(format!("{name}_log.ldf")))
    }

    /// Whether `name` may name a new database (it names its files): not empty, at most
    /// 128 bytes, no path separators or control characters.
    pub fn check_new_name(name: &str) -> Result<()> {
        if name.is_empty() || name.len() > 128 || name.contains(['/', '\\', '\t', '\n', '\0']) {
            return Err(Error::Invalid(format!("'{name}' is not a valid database name")));
        }
        Ok(())
    }

    pub fn create_database(&self, name: &str, options: DatabaseOptions) -> Result<()> {
        Engine::check_new_name(name)?;
        let slot = {
            let mut inner = self.inner.lock();
            if inner.slots.contains_key(&key(name)) {
                return Err(Error::AlreadyExists { kind: "database", name: name.to_string() });
            }
            let id = inner.new_id(name);
            let options_path_given = (options.data_path.is_some(), options.log_path.is_some());
            let (default_data, default_log) = self.new_database_paths(name);
            let data_path = options.data_path.clone().unwrap_or(default_data);
            let log_path = options.log_path.clone().unwrap_or(default_log);
            let entry = Entry {
                name: name.to_string(),
                id,
                data_path,
                log_path,
                options: DatabaseOptions { data_path: None, log_path: None, ..options },
                state: DbState::Online,
            };
            for (path, explicit) in [(&entry.data_path, options_path_given.0), (&entry.log_path, options_path_given.1)]
            {
                if !path.exists() {
                    continue;
                }
                let registered = inner.slots.owner_of(path).is_some()
                    || inner.detached.iter().any(|e| e.data_path == *path || e.log_path == *path);
                if explicit || registered {
                    return Err(msg::FILE_ALREADY_EXISTS.engine(&[&path.display()]));
                }
                // A file at the database's own default path that no database uses: left by
                // a CREATE or DROP DATABASE that a crash interrupted (the registry, written
                // last on create and first on drop, never named it).
                tessera_io::durable::remove_file(path).map_err(|e| Error::io("delete", path, 0, e))?;
            }
            let db = Database::create(&entry, &self.host())?;
            db.set_version_store_max_bytes(self.config.version_store_max_bytes);
            let slot = Slot::new(entry.clone(), Some(Arc::new(db)));
            inner.slots.insert(key(name), slot.clone());
            inner.id_taken(id);
            if let Err(e) = Engine::record(&mut inner, &[Change::Put(&entry)]) {
                // Not registered: the database does not exist, and neither do its files.
                inner.slots.remove(&key(name));
                drop(slot);
                for p in [&entry.data_path, &entry.log_path] {
                    let _ = tessera_io::durable::remove_file(p);
                }
                return Err(e);
            }
            slot
        };
        drop(slot);
        self.enforce_open_limit();
        Ok(())
    }

    fn slot(&self, name: &str) -> Result<Arc<Slot>> {
        with_lowercase(name, |key| self.inner.lock().slots.get(key).cloned())
            .ok_or_else(|| Error::NotFound { kind: "database", name: name.to_string() })
    }

    /// Returns the database, opening it (and running its recovery) on first use.
    pub fn database(&self, name: &str) -> Result<Arc<Database>> {
        let slot = self.slot(name)?;
        let (db, opened) = {
            let mut open = slot.open.lock();
            match &*open {
                Some(db) => (db.clone(), false),
                None if slot.retired.load(Ordering::Acquire) => {
                    return Err(Error::NotFound { kind: "database", name: name.to_string() });
                }
                None => {
                    let entry = slot.entry.lock().clone();
                    if entry.state == DbState::Restoring {
                        return Err(msg::DATABASE_RESTORING.engine(&[&entry.name]));
                    }
                    let db = Arc::new(Database::open(&entry, &self.host())?);
                    db.set_version_store_max_bytes(self.config.version_store_max_bytes);
                    *open = Some(db.clone());
                    (db, true)
                }
            }
        };
        // A database whose log failed serves nothing more until it is opened again.
        db.available()?;
        db.admits_users()?;
        db.touch();
        // Only an opening can take the count of open databases over the limit (walking
        // every slot on each access would cost O(databases) per statement).
        if opened {
            self.inner.lock().slots.note(&slot);
            self.tell(DatabaseEvent::Opened(db.name()));
            self.enforce_open_limit();
        }
        Ok(db)
    }

    /// ONLINE or RESTORING (None: no such database).
    pub fn database_state(&self, name: &str) -> Option<DbState> {
        self.slot(name).ok().map(|s| s.entry.lock().state)
    }

    /// The files and options of a database as registered (whether open or not).
    pub fn database_info(&self, name: &str) -> Option<(PathBuf, PathBuf, DatabaseOptions)> {
        let slot = self.slot(name).ok()?;
        let e = slot.entry.lock();
        Some((e.data_path.clone(), e.log_path.clone(), e.options.clone()))
    }

    pub fn database_id(&self, name: &str) -> Option<u32> {
        self.slot(name).ok().map(|s| s.entry.lock().id)
    }

    /// The database `name` if it is open now; never opens it (None: closed or absent).
    pub fn database_if_open(&self, name: &str) -> Option<Arc<Database>> {
        self.slot(name).ok().and_then(|s| s.open.lock().clone())
    }

    /// Makes `name` a RESTORING database whose files will be (re)written at the given
    /// paths: registers it, or — for an existing database — closes it (error 3101 if it
    /// is in use) and deletes files it no longer uses. A path that belongs to another
    /// database is error 1834; any other existing file that is not the database's own
    /// (a detached database's, a stranger's) is error 3142 unless `replace` (RESTORE …
    /// WITH REPLACE) allows overwriting it. The caller writes the files and then calls
    /// [`Engine::finish_restore`].
    pub fn begin_restore(
        &self,
        name: &str,
        data_path: &Path,
        log_path: &Path,
        options: DatabaseOptions,
        replace: bool,
    ) -> Result<()> {
        self.restoring(name, data_path, log_path, options, replace, &|_| true)
    }

    /// [`Engine::begin_restore`], closing an existing database only if `may_close` says so
    /// of it when nothing else holds it (3101 otherwise).
    fn restoring(
        &self,
        name: &str,
        data_path: &Path,
        log_path: &Path,
        options: DatabaseOptions,
        replace: bool,
        may_close: &dyn Fn(&Database) -> bool,
    ) -> Result<()> {
        let existing = self.slot(name).ok();
        let _quiet = existing.as_ref().map(|slot| slot.engine_work.lock());
        let mut inner = self.inner.lock();
        let now = inner.slots.get(&key(name));
        if now.is_some() != existing.is_some() || now.zip(existing.as_ref()).is_some_and(|(a, b)| !Arc::ptr_eq(a, b)) {
            // Created, dropped or replaced while this waited.
            drop(inner);
            return self.restoring(name, data_path, log_path, options, replace, may_close);
        }
        for (p, logical) in [(data_path, name.to_string()), (log_path, format!("{name}_log"))] {
            let other = inner.slots.owner_of(p).filter(|owner| *owner != key(name)).and_then(|o| inner.slots.get(o));
            if let Some(other) = other {
                let owner = other.entry.lock().name.clone();
                return Err(msg::RESTORE_FILE_IN_USE.engine(&[&p.display(), &owner, &logical, &p.display()]));
            }
        }
        let own = inner.slots.get(&key(name)).map(|s| {
            let e = s.entry.lock();
            [e.data_path.clone(), e.log_path.clone()]
        });
        let foreign = |p: &Path| own.as_ref().is_none_or(|own| !own.iter().any(|o| o == p)) && p.exists();
        for (p, logical) in [(data_path, name.to_string()), (log_path, format!("{name}_log"))] {
            if foreign(p) && !replace {
                return Err(msg::RESTORE_WOULD_OVERWRITE_FILE.engine(&[&logical, &p.display()]));
            }
        }
        let options = DatabaseOptions { data_path: None, log_path: None, ..options };
        if let Some(slot) = inner.slots.get(&key(name)).cloned() {
            // RESTORING before the open lock is let go, so nobody opens the old files.
            let closed = close_unused(&slot, may_close, || {
                let mut e = slot.entry.lock();
                for old in [e.data_path.clone(), e.log_path.clone()] {
                    if old != data_path && old != log_path {
                        let _ = tessera_io::durable::remove_file(&old);
                    }
                }
                e.options = options;
                e.state = DbState::Restoring;
            });
            if !closed {
                return Err(msg::EXCLUSIVE_ACCESS_DENIED.engine(&[]));
            }
            inner.slots.repath(&key(name), data_path, log_path);
            inner.slots.note(&slot);
        } else {
            let id = inner.new_id(name);
            let entry = Entry {
                name: name.to_string(),
                id,
                data_path: data_path.to_path_buf(),
                log_path: log_path.to_path_buf(),
                options,
                state: DbState::Restoring,
            };
            inner.slots.insert(key(name), Slot::new(entry, None));
            inner.id_taken(id);
        }
        // A detached database whose file is overwritten is gone.
        registry::forget_detached(&mut inner.detached, data_path);
        registry::forget_detached(&mut inner.detached, log_path);
        let entry = inner.slots.get(&key(name)).expect("registered just above").entry.lock().clone();
        Engine::record(
            &mut inner,
            &[Change::Put(&entry), Change::ForgetDetached(data_path), Change::ForgetDetached(log_path)],
        )
    }

    /// Ends a restore sequence: the database goes ONLINE by being opened, which runs
    /// crash recovery over the restored log (redo, then undo of what was not committed).
    pub fn finish_restore(&self, name: &str) -> Result<()> {
        let slot = self.slot(name)?;
        slot.entry.lock().state = DbState::Online;
        let opened = self.database(name).map(drop);
        if let Err(e) = opened {
            slot.entry.lock().state = DbState::Restoring;
            return Err(e);
        }
        let entry = slot.entry.lock().clone();
        Engine::record(&mut self.inner.lock(), &[Change::Put(&entry)])
    }

    /// Changes a database's options (recovery model, delayed durability, file growth and
    /// maximum sizes; the initial sizes only mattered when it was created).
    pub fn alter_database(&self, name: &str, options: DatabaseOptions) -> Result<()> {
        let mut inner = self.inner.lock();
        let slot = inner
            .slots
            .get(&key(name))
            .cloned()
            .ok_or_else(|| Error::NotFound { kind: "database", name: name.into() })?;
        let options = DatabaseOptions { data_path: None, log_path: None, ..options };
        let old = std::mem::replace(&mut slot.entry.lock().options, options.clone());
        let entry = slot.entry.lock().clone();
        if let Err(e) = Engine::record(&mut inner, &[Change::Put(&entry)]) {
            slot.entry.lock().options = old;
            return Err(e);
        }
        if let Some(db) = &*slot.open.lock() {
            db.set_options(options, &self.config.data, &self.config.log)?;
        }
        inner.slots.note(&slot);
        Ok(())
    }

    /// Drops a database and deletes its files. Error 3702 if it is in use.
    pub fn drop_database(&self, name: &str) -> Result<()> {
        if key(name) == "master" {
            return Err(Error::Invalid("Cannot drop the database 'master' because it is a system database.".into()));
        }
        let slot = self.slot(name)?;
        let _quiet = slot.engine_work.lock();
        // A session that just let go may still hold the database for moments: only a
        // holder that stays is "in use".
        let started = Instant::now();
        let mut inner = loop {
            let inner = self.inner.lock();
            if !inner.slots.get(&key(name)).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                // Dropped (and perhaps created again) while this waited.
                drop(inner);
                return self.drop_database(name);
            }
            if close_unused(&slot, &|_| true, || slot.retired.store(true, Ordering::Release)) {
                break inner;
            }
            drop(inner);
            if started.elapsed() >= IN_USE_PATIENCE {
                return Err(msg::DROP_DATABASE_IN_USE.engine(&[&name]));
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        inner.slots.remove(&key(name));
        if let Err(e) = Engine::record(&mut inner, &[Change::Remove(name)]) {
            // Still registered on disk: it still exists (closed).
            slot.retired.store(false, Ordering::Release);
            inner.slots.insert(key(name), slot.clone());
            return Err(e);
        }
        // Deleted after the registry forgot it: a crash in between leaves files that the
        // next CREATE DATABASE of the name removes.
        let entry = slot.entry.lock().clone();
        for p in [&entry.data_path, &entry.log_path] {
            tessera_io::durable::remove_file(p).map_err(|e| Error::io("delete", p, 0, e))?;
        }
        Ok(())
    }

    /// Closes a database if nothing outside the engine holds it (checkpointing it
    /// first). Returns whether it was closed.
    pub fn close_database(&self, name: &str) -> Result<bool> {
        let slot = self.inner.lock().slots.get(&key(name)).cloned();
        let Some(slot) = slot else { return Ok(false) };
        self.close(&slot)
    }

    /// When the database was last used: now if a handle is held, when it was closed if it
    /// is closed (None: not used since the engine started, or no such database).
    pub fn last_used(&self, name: &str) -> Option<SystemTime> {
        let slot = self.slot(name).ok()?;
        let open = slot.open.lock().clone();
        match open {
            Some(db) => SystemTime::now().checked_sub(db.idle_for()),
            None => *slot.closed_at.lock(),
        }
    }

    /// Has `listener` told of every database the engine opens or closes from now on,
    /// after the fact: what layers above keep for an open database can go with it.
    pub fn listen(&self, listener: DatabaseListener) {
        *self.listener.lock() = Some(listener);
    }

    fn tell(&self, event: DatabaseEvent<'_>) {
        let listener = self.listener.lock().clone();
        if let Some(listener) = listener {
            listener(event);
        }
    }

    fn close(&self, slot: &Arc<Slot>) -> Result<bool> {
        let closed = close_slot(slot)?;
        if closed {
            self.inner.lock().slots.note(slot);
            *slot.closed_at.lock() = Some(SystemTime::now());
            let name = slot.entry.lock().name.clone();
            self.tell(DatabaseEvent::Closed(&name));
        }
        Ok(closed)
    }

    /// Calls `f` with each open database, taking its handle only for the call (see
    /// `open_slots`); nothing is opened.
    pub fn for_each_open(&self, mut f: impl FnMut(&Arc<Database>)) {
        for slot in self.open_slots() {
            if let Some(db) = slot.database() {
                f(&db);
            }
        }
    }

    /// The slots of the open databases. Their handles are taken one at a time by whoever
    /// walks them ([`Slot::database`]): holding every handle for a whole walk would make
    /// DROP DATABASE of any of them fail as "in use" meanwhile.
    fn open_slots(&self) -> Vec<Arc<Slot>> {
        let slots = self.inner.lock().slots.open();
        slots.into_iter().filter(|s| s.open.lock().is_some()).collect()
    }

    /// Closes the least recently used databases while more than `max_open_databases` are
    /// open. The candidates come from a queue sorted once for many openings (the oldest
    /// sixteenth of those open): sorting every open database at each opening cost a
    /// millisecond per opening with 20,000 open. A candidate used since the queue was
    /// sorted is passed over; one held outside the engine stays open.
    fn enforce_open_limit(&self) {
        let max_open = self.max_open.load(Ordering::Relaxed);
        let mut excess = self.inner.lock().slots.open_count().saturating_sub(max_open);
        if excess == 0 {
            return;
        }
        let mut queue = self.close_queue.lock();
        let mut rebuilt = false;
        while excess > 0 {
            let Some(slot) = queue.oldest_last.pop() else {
                if rebuilt {
                    break;
                }
                self.sort_close_queue(&mut queue, excess);
                rebuilt = true;
                continue;
            };
            if slot.last_used_at().is_some_and(|at| at <= queue.sorted_at) && matches!(self.close(&slot), Ok(true)) {
                excess -= 1;
            }
        }
    }

    /// Fills the close queue with the oldest of the open databases: at least `excess`,
    /// and a sixteenth of them.
    fn sort_close_queue(&self, queue: &mut CloseQueue, excess: usize) {
        // One clock reading per database, not one per comparison (a key that moved during
        // the sort made the standard library's sort panic).
        let mut open: Vec<(Instant, Arc<Slot>)> =
            self.open_slots().into_iter().filter_map(|s| s.last_used_at().map(|at| (at, s))).collect();
        let keep = excess.max(open.len() / 16).min(open.len());
        if keep < open.len() {
            open.select_nth_unstable_by_key(keep, |(at, _)| *at);
            open.truncate(keep);
        }
        open.sort_unstable_by_key(|(at, _)| std::cmp::Reverse(*at));
        queue.sorted_at = Instant::now();
        queue.oldest_last = open.into_iter().map(|(_, s)| s).collect();
    }

    pub fn stats(&self) -> EngineStats {
        let (databases, open_databases) = {
            let inner = self.inner.lock();
            (inner.slots.len(), inner.slots.open_count())
        };
        EngineStats { databases, open_databases, pool: self.pool.stats() }
    }

    /// Sets min and max server memory (bytes): the pool's limit moves to `max` at once
    /// (shrinking evicts and returns memory to the OS) and then follows memory pressure
    /// between the two. Returns the new limit (`max` capped by the reservation).
    pub fn set_memory_limits(&self, min: u64, max: u64) -> Result<u64> {
        let target = self.memory.set_limits(min, max);
        self.config.log.buffers.set_budget(log_buffer_budget(self.memory.status().max_bytes));
        self.pool.set_max_bytes(pool_share(target, &self.config.log))?;
        Ok(target)
    }

    /// The log buffers every open database borrows from.
    pub fn log_buffer_stats(&self) -> tessera_log::LogBufferStats {
        self.config.log.buffers.stats()
    }

    pub fn memory_status(&self) -> MemoryStatus {
        self.memory.status()
    }

    /// `DBCC DROPCLEANBUFFERS`: drops every clean page from the pool, and every open data
    /// file's clean pages from the OS page cache, so that the next reads come from the
    /// devices. Returns how many pool pages were dropped.
    pub fn drop_clean_buffers(&self) -> usize {
        let dropped = self.pool.drop_clean_pages();
        for db in self.open_slots().iter().filter_map(|s| s.database()) {
            db.space.store.drop_os_cache();
        }
        dropped
    }

    /// Turns the buffer pool extension on (a new, cold file of `bytes` at `path`) or off
    /// (`None`: the file is deleted).
    pub fn set_buffer_pool_extension(&self, ext: Option<(&Path, u64)>) -> Result<()> {
        let next = match ext {
            Some((path, bytes)) => Some(tessera_buffer::Extension::create(path, bytes)?),
            None => None,
        };
        drop(self.pool.set_extension(next));
        Ok(())
    }

    /// Every page in RAM or in the extension: (database, database id, page, dirty, in the
    /// extension). Pages of databases closed meanwhile are left out.
    pub fn buffer_descriptors(&self) -> Vec<BufferDescriptor> {
        let files: HashMap<u32, (String, u32)> = self
            .open_slots()
            .iter()
            .filter_map(|s| s.database())
            .map(|db| (db.space.file.0, (db.name().to_string(), db.id())))
            .collect();
        let mut out = Vec::new();
        for (file, page, dirty) in self.pool.resident_pages() {
            if let Some((name, id)) = files.get(&file.0) {
                out.push(BufferDescriptor {
                    database: name.clone(),
                    database_id: *id,
                    page: page.raw(),
                    dirty,
                    in_extension: false,
                });
            }
        }
        if let Some(ext) = self.pool.extension() {
            for (file, page) in ext.pages() {
                if let Some((name, id)) = files.get(&file.0) {
                    out.push(BufferDescriptor {
                        database: name.clone(),
                        database_id: *id,
                        page: page.raw(),
                        dirty: false,
                        in_extension: true,
                    });
                }
            }
        }
        out
    }

    /// Seconds a page stays in the pool at the recent eviction rate.
    pub fn page_life_expectancy(&self) -> u64 {
        self.memory.page_life_expectancy(self.pool.stats().resident_pages)
    }

    /// Changes how many databases stay open at once (at most `EngineConfig::
    /// max_open_databases`, the configuration file's bound) and after
    /// how long idle one is closed; returns the limit in force. Closes the least recently
    /// used idle databases now if more are open.
    pub fn set_open_limits(&self, max_open: usize, idle_close_after: Duration) -> usize {
        let max_open = max_open.clamp(1, self.config.max_open_databases);
        self.max_open.store(max_open, Ordering::Relaxed);
        self.idle_close_ms.store(u64::try_from(idle_close_after.as_millis()).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.enforce_open_limit();
        max_open
    }

    /// The open-database limit and idle time in force.
    pub fn open_limits(&self) -> (usize, Duration) {
        (self.max_open.load(Ordering::Relaxed), Duration::from_millis(self.idle_close_ms.load(Ordering::Relaxed)))
    }

    /// One round of background work (also called by the background thread).
    pub fn maintain(&self) {
        if let Some(target) = memory::sample().and_then(|s| self.memory.adjust(s)) {
            let _ = self.pool.set_max_bytes(pool_share(target, &self.config.log));
        }
        self.memory.observe_evictions(self.pool.stats().evictions);
        let idle_close_after = Duration::from_millis(self.idle_close_ms.load(Ordering::Relaxed));
        for slot in self.open_slots() {
            // Busy: a DROP, detach or RESTORE is taking it away.
            let Some(_work) = slot.engine_work.try_lock() else { continue };
            let Some(db) = slot.database() else { continue };
            if db.log_pending() && db.options().flushes_in_background() {
                let _ = db.flush_log();
            }
            let grown = db.log_stats().end_lsn.raw().saturating_sub(db.checkpointed_at.load(Ordering::Acquire));
            // LSN differences across VLFs overstate growth; that only checkpoints early.
            if grown >= self.config.checkpoint_log_bytes {
                let _ = db.checkpoint();
            }
            db.release_idle_memory(IDLE_MEMORY_AFTER);
            drop(db);
            if slot.open.lock().as_ref().is_some_and(|db| db.idle_for() >= idle_close_after) {
                let _ = self.close(&slot);
            }
        }
    }

    /// Stops the background thread (periodic log flushes, checkpoints, idle closes) and
    /// waits for it: it then holds no handle on the engine, so the engine — and its lock
    /// on the data directory — goes with the last handle its owners drop.
    pub fn stop_background(&self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.worker.lock().take() {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// Checkpoints and closes every database; the engine stays usable.
    pub fn shutdown(&self) -> Result<()> {
        let mut first_error = None;
        for slot in self.open_slots() {
            if let Err(e) = close_slot(&slot) {
                first_error.get_or_insert(e);
            }
            self.inner.lock().slots.note(&slot);
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Drops a database's open handle (without a checkpoint: its files are about to go) if
/// nothing outside the engine holds it and `may_close` agrees, and then runs `closed`
/// before anyone can open it again. False if something holds it or `may_close` refuses.
fn close_unused(slot: &Slot, may_close: &dyn Fn(&Database) -> bool, closed: impl FnOnce()) -> bool {
    let mut open = slot.open.lock();
    match open.take().map(Arc::try_unwrap) {
        None => {
            closed();
            true
        }
        Some(Ok(db)) if may_close(&db) => {
            drop(db);
            closed();
            true
        }
        Some(Ok(db)) => {
            *open = Some(Arc::new(db));
            false
        }
        Some(Err(db)) => {
            *open = Some(db);
            false
        }
    }
}

fn close_slot(slot: &Slot) -> Result<bool> {
    let mut open = slot.open.lock();
    let Some(db) = open.take() else { return Ok(false) };
    match Arc::try_unwrap(db) {
        // A database whose log failed can log no checkpoint: it closes as a crash
        // would leave it, and its next opening recovers from what the disk holds.
        Ok(db) if db.available().is_err() => Ok(true),
        Ok(db) => {
            let r = db.checkpoint().and_then(|_| db.trim_files());
            drop(db);
            r.map(|_| true)
        }
        Err(db) => {
            *open = Some(db);
            Ok(false)
        }
    }
}

fn background(engine: Weak<Engine>, stop: Arc<AtomicBool>) {
    let mut last_maintenance = Instant::now();
    while !stop.load(Ordering::Acquire) {
        let Some(engine) = engine.upgrade() else { return };
        let tick = engine.config.delayed_flush_interval;
        // Only the databases whose options flush in the background: every tick, a walk
        // over every open one would cost a core with thousands open.
        let flushing = engine.inner.lock().slots.flushing();
        for slot in flushing {
            // Not while DETACH, DROP or a close works on the database: a handle held here
            // would make DETACH refuse it as in use (3703). `db` goes before `_work`.
            let Some(_work) = slot.engine_work.try_lock() else { continue };
            let Some(db) = slot.database() else { continue };
            if db.log_pending() && db.options().flushes_in_background() {
                let _ = db.flush_log();
            }
        }
        if last_maintenance.elapsed() >= Duration::from_secs(1) {
            engine.maintain();
            last_maintenance = Instant::now();
        }
        drop(engine);
        std::thread::sleep(tick);
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_background();
        let _ = self.shutdown();
    }
}
