//! One database: its storage (data file + log), its catalog of tables, its options.

use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use tessera_access::btree::{self, TreeStats};
use tessera_access::lob::{FreeEntry as LobFreeEntry, Pin as LobPin};
use tessera_access::row::OffRow;
use tessera_access::space::{DataConfig, HeaderFault, Space, BOOT_ROOT, FORMAT_VERSION};
use tessera_access::{Direction, Durability, OnLocked};
use tessera_buffer::page::{PageNo, PAGE_SIZE};
use tessera_buffer::{BufferPool, PageStore};
use tessera_errors::msg;
use tessera_errors::{Error, Result};
use tessera_log::recovery::RecoveryOutcome;
use tessera_log::{Growth, Hold, LogConfig, Lsn, TxnId, Wal};

use crate::decisions::Decisions;
use crate::redefinitions::{Redefining, Redefinitions};
use crate::registry::Entry;
use crate::transaction::Transaction;

/// SQL Server's recovery models. Until the first full backup exists a FULL or
/// BULK_LOGGED database truncates its log at checkpoints, as SQL Server does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RecoveryModel {
    #[default]
    Full,
    BulkLogged,
    Simple,
}

impl RecoveryModel {
    pub fn name(self) -> &'static str {
        match self {
            RecoveryModel::Full => "FULL",
            RecoveryModel::BulkLogged => "BULK_LOGGED",
            RecoveryModel::Simple => "SIMPLE",
        }
    }

    pub fn parse(s: &str) -> Option<RecoveryModel> {
        Some(match s.to_ascii_uppercase().as_str() {
            "FULL" => RecoveryModel::Full,
            "BULK_LOGGED" => RecoveryModel::BulkLogged,
            "SIMPLE" => RecoveryModel::Simple,
            _ => return None,
        })
    }
}

/// `ALTER DATABASE … SET DELAYED_DURABILITY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DelayedDurability {
    #[default]
    Disabled,
    Allowed,
    Forced,
}

impl DelayedDurability {
    pub fn name(self) -> &'static str {
        match self {
            DelayedDurability::Disabled => "DISABLED",
            DelayedDurability::Allowed => "ALLOWED",
            DelayedDurability::Forced => "FORCED",
        }
    }

    pub fn parse(s: &str) -> Option<DelayedDurability> {
        Some(match s.to_ascii_uppercase().as_str() {
            "DISABLED" => DelayedDurability::Disabled,
            "ALLOWED" => DelayedDurability::Allowed,
            "FORCED" => DelayedDurability::Forced,
            _ => return None,
        })
    }

    /// The durability of a commit that asked for `delayed`.
    pub fn resolve(self, delayed: bool) -> Durability {
        match (self, delayed) {
            (DelayedDurability::Forced, _) | (DelayedDurability::Allowed, true) => Durability::Delayed,
            _ => Durability::Full,
        }
    }
}

/// Options of a database. The paths are used when it is created; by default the data
/// file goes to the engine's data directory and the log to its log directory. The sizes
/// are CREATE DATABASE's SIZE, FILEGROWTH and MAXSIZE for the data file and the log file
/// (None: the engine's, `EngineConfig::data` and `EngineConfig::log`); a change that
/// would take a file past its maximum fails with 1105 (data) or 9002 (log).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatabaseOptions {
    pub recovery_model: RecoveryModel,
    pub delayed_durability: DelayedDurability,
    pub data_path: Option<PathBuf>,
    pub log_path: Option<PathBuf>,
    /// Size of the new data file, in bytes (rounded up to whole 8 KiB pages, at least 3).
    pub initial_data_size: Option<u64>,
    /// How the data file grows: by a number of bytes or a percentage of its size (zero:
    /// never).
    pub data_growth: Option<Growth>,
    /// Largest size of the data file, in bytes.
    pub max_data_size: Option<u64>,
    /// Size of the new log file, in bytes (four VLFs of at least 64 KiB: 260 KiB at least).
    pub initial_log_size: Option<u64>,
    /// How the log file grows: by a number of bytes or a percentage of its size (zero:
    /// never).
    pub log_growth: Option<Growth>,
    /// Largest size of the log file, in bytes.
    pub max_log_size: Option<u64>,
    /// The contents need not survive a restart (tempdb, made afresh at every start):
    /// commits never wait for a log flush, whatever DELAYED_DURABILITY says.
    pub scratch: bool,
    /// The security id of the login that owns the database (`sys.databases.owner_sid`),
    /// kept in the registry so that listings need not open it; `None`: `sa`.
    pub owner_sid: Option<Vec<u8>>,
    /// `DB_CHAINING ON`: ownership chains may cross into and out of this database, to and
    /// from another that allows it too (`sys.databases.is_db_chaining_on`).
    pub db_chaining: bool,
    /// `ALLOW_SNAPSHOT_ISOLATION ON`: transactions may run at SNAPSHOT isolation
    /// (`sys.databases.snapshot_isolation_state`).
    pub allow_snapshot_isolation: bool,
    /// `READ_COMMITTED_SNAPSHOT ON`: READ COMMITTED statements read the row versions
    /// committed when they began instead of waiting for writers' locks
    /// (`sys.databases.is_read_committed_snapshot_on`).
    pub read_committed_snapshot: bool,
    /// `RECURSIVE_TRIGGERS ON`: an AFTER trigger fires again through its own changes of
    /// its table (`sys.databases.is_recursive_triggers_on`).
    pub recursive_triggers: bool,
    /// What the database's requests may use (tessera extensions, set with ALTER
    /// DATABASE).
    pub limits: ResourceLimits,
}

/// A database's resource limits, each `None` when it has none (tessera extensions to
/// `ALTER DATABASE … SET`, enforced by the T-SQL layer's governor).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceLimits {
    /// `MAX_CONCURRENT_REQUESTS`: at most this many of its requests run at once.
    pub max_concurrent_requests: Option<u32>,
    /// `MAX_CPU_PERCENT`: its requests use at most this share of the CPU the server may
    /// use (all its cores: 50 on a 2-core server is one core's worth), 1–100.
    pub max_cpu_percent: Option<u32>,
    /// `MAX_LOG_RATE_KB`: its log is written at most this many KiB per second.
    pub max_log_rate_kb: Option<u32>,
    /// `CPU_SHARE_PERCENT`: while the server's CPU is contended, its requests use at most
    /// this share of it (1–100); idle CPU is anyone's.
    pub cpu_share_percent: Option<u32>,
    /// `MAX_BUFFER_POOL_MB`: its pages hold at most this much of the buffer pool; a load
    /// beyond it replaces one of its own pages (`BufferPool::set_file_limit`).
    pub max_buffer_pool_mb: Option<u32>,
    /// `MAX_TEMPDB_MB`: the temporary tables and table variables its requests create in
    /// tempdb hold at most this much (error 40544 beyond it).
    pub max_tempdb_mb: Option<u32>,
}

impl ResourceLimits {
    pub fn any(&self) -> bool {
        *self != ResourceLimits::default()
    }
}

impl DatabaseOptions {
    /// Whether these options need row versions kept (snapshot isolation allowed, or READ
    /// COMMITTED SNAPSHOT).
    pub fn keeps_versions(&self) -> bool {
        self.allow_snapshot_isolation || self.read_committed_snapshot
    }

    /// The durability of a commit that asked for `delayed` (`COMMIT … WITH
    /// (DELAYED_DURABILITY = ON)`): a scratch database's commits never wait for the log.
    pub fn commit_durability(&self, delayed: bool) -> Durability {
        if self.scratch {
            Durability::Delayed
        } else {
            self.delayed_durability.resolve(delayed)
        }
    }

    /// Whether commits may leave their log records unflushed, so the background thread
    /// must flush them.
    pub fn flushes_in_background(&self) -> bool {
        self.scratch || self.delayed_durability != DelayedDurability::Disabled
    }

    /// The sizes of the data file: these options over the engine's `data`.
    pub fn data_config(&self, engine: &DataConfig) -> DataConfig {
        DataConfig {
            initial_size: self.initial_data_size.unwrap_or(engine.initial_size),
            growth: self.data_growth.or(engine.growth),
            max_size: self.max_data_size.unwrap_or(engine.max_size),
            database_id: engine.database_id,
        }
    }

    /// The sizes of the log file: these options over the engine's `log`.
    pub fn log_config(&self, engine: &LogConfig) -> LogConfig {
        LogConfig {
            initial_size: self.initial_log_size.unwrap_or(engine.initial_size),
            growth: self.log_growth.or(engine.growth),
            max_size: self.max_log_size.unwrap_or(engine.max_size),
            ..engine.clone()
        }
    }
}

/// The lock owner id of session `spid`'s own locks (`sp_getapplock` with `@LockOwner =
/// 'Session'`): from the top of the id space, which transaction ids (counted up from 1)
/// never reach.
pub fn session_lock_owner(spid: i32) -> u64 {
    u64::MAX - spid as u64
}

/// Whether a lock owner id is a session's ([`session_lock_owner`]), not a transaction's.
pub fn is_session_lock_owner(owner: u64) -> bool {
    owner > u64::MAX - (1 << 31)
}

/// A table (or index): the root page of its B+tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableId(pub PageNo);

/// Catalog keys in the boot tree: `T` + table name → root page (u32 LE).
fn catalog_key(name: &str) -> Vec<u8> {
    let mut k = b"T".to_vec();
    k.extend_from_slice(name.as_bytes());
    k
}

/// A dropped tree whose pages may not all be free yet: `D` + root page (u32 BE); its
/// value is the end of the log when the drop began (u64 LE), which tells the dropped
/// tree's root from a later tree's root on the same page (entries written before the
/// value existed are empty).
fn pending_drop_key(root: PageNo) -> Vec<u8> {
    let mut k = b"D".to_vec();
    k.extend_from_slice(&root.raw().to_be_bytes());
    k
}

/// What a database remembers of its backups (in its catalog, key `Bchain`, so that a
/// restored copy carries it along).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackupChain {
    /// First LSN of the last full backup that can serve as a differential base (0: none).
    pub differential_base_lsn: Lsn,
    pub differential_base_guid: u128,
    /// Where the next log backup starts (0: no log chain — no full backup since the
    /// database was created or last ran under SIMPLE).
    pub log_backup_lsn: Lsn,
}

const CHAIN_KEY: &[u8] = b"Bchain";

impl BackupChain {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(32);
        v.extend_from_slice(&self.differential_base_lsn.raw().to_le_bytes());
        v.extend_from_slice(&self.differential_base_guid.to_le_bytes());
        v.extend_from_slice(&self.log_backup_lsn.raw().to_le_bytes());
        v
    }

    fn decode(b: &[u8]) -> Option<BackupChain> {
        (b.len() == 32).then(|| BackupChain {
            differential_base_lsn: Lsn::from_raw(u64::from_le_bytes(b[0..8].try_into().unwrap())),
            differential_base_guid: u128::from_le_bytes(b[8..24].try_into().unwrap()),
            log_backup_lsn: Lsn::from_raw(u64::from_le_bytes(b[24..32].try_into().unwrap())),
        })
    }
}

/// A database being backed up: its log is held from `begin_lsn` on until this is
/// dropped. Pages of the data file may be copied while writers go on: restoring them
/// and then redoing the log from `begin_lsn` gives a consistent database.
pub struct BackupPoint<'a> {
    db: &'a Database,
    _exclusive: parking_lot::MutexGuard<'a, ()>,
    /// Where recovery of the copy starts (the checkpoint's oldest needed LSN).
    pub begin_lsn: Lsn,
    pub checkpoint_lsn: Lsn,
    /// Pages of the data file when the checkpoint completed; later pages are created by
    /// records after `begin_lsn`.
    pub data_pages: u32,
}

impl BackupPoint<'_> {
    /// The full backup this point started has completed and is the new differential
    /// base: the changed-extent map, reset when it began, now lists exactly the extents
    /// a differential on top of it must read.
    pub fn completed_differential_base(&self) {
        *self.db.differential_base.lock() = Some(self.begin_lsn);
    }
}

impl Drop for BackupPoint<'_> {
    fn drop(&mut self) {
        self.db.space.wal.set_hold(Hold::Backup, None);
    }
}

/// What the engine lends every database it creates or opens: the buffer pool, the
/// default file settings, and the instance's commit decisions.
pub(crate) struct Host<'a> {
    pub(crate) pool: &'a Arc<BufferPool>,
    pub(crate) data: &'a DataConfig,
    pub(crate) log: &'a LogConfig,
    pub(crate) decisions: &'a Arc<Decisions>,
}

pub struct Database {
    id: u32,
    /// Its storage, which also keeps its name and its files' paths.
    pub(crate) space: Arc<Space>,
    options: Mutex<DatabaseOptions>,
    /// `READ_COMMITTED_SNAPSHOT` as the options say (read without their mutex: every
    /// READ COMMITTED statement asks).
    read_committed_snapshot: AtomicBool,
    /// Set while one holder has the database to itself ([`crate::Exclusive`]): sessions
    /// begin no new transactions in it.
    pub(crate) exclusive: AtomicBool,
    /// The differential base (its first LSN) for which `space.changes` is complete, if
    /// any: set when a full backup taken since this open completes.
    differential_base: Mutex<Option<Lsn>>,
    tables: RwLock<foldhash::HashMap<String, TableId>>,
    ddl: Mutex<()>,
    /// When the database was opened (on the precise clock and on the coarse one), and
    /// nanoseconds from then to its last use (coarse: every statement notes it).
    opened_at: Instant,
    opened_coarse: std::time::Duration,
    last_used_ns: AtomicU64,
    /// One past `last_used_ns` when the memory its tables kept from their busiest moment
    /// was last given back (0: not since it opened): once per idle spell, see
    /// [`Database::release_idle_memory`].
    released_after_ns: AtomicU64,
    pub(crate) checkpointed_at: AtomicU64,
    recovery: Option<RecoveryOutcome>,
    chain: Mutex<BackupChain>,
    /// One backup at a time (SQL Server's error 3023 for a second one).
    backup: Mutex<()>,
    /// Objects redefined by DDL, for SNAPSHOT transactions (3961).
    redefinitions: Redefinitions,
    /// The instance's commit decisions for transactions across databases.
    pub(crate) decisions: Arc<Decisions>,
    /// Its writing transactions committed and rolled back since it opened.
    pub(crate) transactions: crate::transaction::TransactionCounters,
}

impl Database {
    /// Creates the files, sized as `entry.options` say over the engine's `data` and `log`.
    pub(crate) fn create(entry: &Entry, host: &Host<'_>) -> Result<Database> {
        let (pool, decisions) = (host.pool.clone(), host.decisions);
        let (mut data, log) = (entry.options.data_config(host.data), entry.options.log_config(host.log));
        data.database_id = entry.id;
        for (what, initial, max) in
            [("data", data.initial_size, data.max_size), ("log", log.initial_size, log.max_size)]
        {
            if initial > max {
                return Err(Error::Invalid(format!(
                    "The {what} file of database '{}' cannot be {initial} bytes: its maximum size is {max} bytes.",
                    entry.name
                )));
            }
        }
        let wal = Wal::create(&entry.log_path, &entry.name, log)?;
        let data_existed = entry.data_path.exists();
        let space = match Space::create(&entry.data_path, pool, wal, &data) {
            Ok(s) => s,
            Err(e) => {
                // A data file made before the failure (its allocation failed) goes too.
                if !data_existed {
                    let _ = tessera_io::durable::remove_file(&entry.data_path);
                }
                let _ = tessera_io::durable::remove_file(&entry.log_path);
                return Err(e);
            }
        };
        let db = Database::assemble(entry, space, decisions);
        let made = db.apply_pool_limit().and_then(|_| db.pair_files()).and_then(|_| db.checkpoint());
        if let Err(e) = made.and_then(|_| db.trim_files()) {
            drop(db);
            let _ = tessera_io::durable::remove_file(&entry.data_path);
            let _ = tessera_io::durable::remove_file(&entry.log_path);
            return Err(e);
        }
        Ok(db)
    }

    /// Opens the database, recovering it: a transaction across databases found prepared
    /// commits if the instance's decisions hold the decision to commit it.
    pub(crate) fn open(entry: &Entry, host: &Host<'_>) -> Result<Database> {
        let (pool, decisions) = (host.pool.clone(), host.decisions);
        let (mut data, log) = (entry.options.data_config(host.data), entry.options.log_config(host.log));
        data.database_id = entry.id;
        let (wal, master) = Wal::open(&entry.log_path, &entry.name, log)?;
        // Before recovery writes anything: a data file of a newer format is refused, and a
        // log of another database would corrupt it. (A header that does not read is
        // reported after recovery, which may repair it.)
        let data_family = match Space::probe_header(&entry.data_path) {
            Ok(Ok(family)) => family,
            Ok(Err(HeaderFault::Newer(version))) => {
                return Err(Error::NewerFormat { database: entry.name.clone(), version, supported: FORMAT_VERSION })
            }
            Ok(Err(HeaderFault::Invalid(_))) | Err(_) => 0,
        };
        let log_family = wal.family()?;
        if data_family != 0 && log_family != 0 && data_family != log_family {
            return Err(msg::FILES_DO_NOT_MATCH_PRIMARY.engine(&[]));
        }
        let space = Space::open(&entry.data_path, pool, wal, &data)?;
        let outcome = space.recover(master, &|id| decisions.decided_to_commit(id))?;
        space.verify_header()?;
        let mut db = Database::assemble(entry, space, decisions);
        db.apply_pool_limit()?;
        if entry.options.keeps_versions() {
            // Nothing is active yet: snapshots may be taken at once.
            db.space.start_versioning_idle();
        }
        db.recovery = Some(outcome);
        db.pair_files()?;
        db.load_catalog()?;
        // Large values a crash left unreferenced (committed drops not yet removed).
        match db.space.lob_sweep() {
            Err(e) if tessera_access::reserve::is_full(&e) => {}
            r => {
                r?;
            }
        }
        db.checkpoint()?;
        Ok(db)
    }

    /// Gives the data file and the log the same file family: the one either has, or
    /// a new one when neither has one (a new database; files made before families
    /// existed; a log a RESTORE rebuilt gets its data file's).
    fn pair_files(&self) -> Result<()> {
        let (data, log) = (self.space.family()?, self.space.wal.family()?);
        match (data, log) {
            (0, 0) => {
                let new = rand::random::<u128>().max(1);
                self.space.set_family(new)?;
                self.space.wal.set_family(new)
            }
            (0, log) => self.space.set_family(log),
            (data, 0) => self.space.wal.set_family(data),
            _ => Ok(()),
        }
    }

    fn assemble(entry: &Entry, space: Arc<Space>, decisions: &Arc<Decisions>) -> Database {
        Database {
            decisions: decisions.clone(),
            id: entry.id,
            space,
            options: Mutex::new(entry.options.clone()),
            read_committed_snapshot: AtomicBool::new(entry.options.read_committed_snapshot),
            exclusive: AtomicBool::new(false),
            tables: RwLock::default(),
            ddl: Mutex::new(()),
            opened_at: Instant::now(),
            opened_coarse: tessera_io::clock::coarse_monotonic(),
            last_used_ns: AtomicU64::new(0),
            released_after_ns: AtomicU64::new(0),
            checkpointed_at: AtomicU64::new(0),
            differential_base: Mutex::new(None),
            recovery: None,
            chain: Mutex::new(BackupChain::default()),
            backup: Mutex::new(()),
            redefinitions: Redefinitions::default(),
            transactions: Default::default(),
        }
    }

    fn load_catalog(&self) -> Result<()> {
        let txn = self.space.begin(Durability::Full);
        let mut tables = foldhash::HashMap::default();
        let scan = self.space.scan(
            &txn,
            BOOT_ROOT,
            Bound::Included(b"T".to_vec()),
            Bound::Excluded(b"U".to_vec()),
            Direction::Forward,
            OnLocked::Wait,
        );
        let mut result = Ok(());
        for item in scan {
            match item {
                Ok((k, v)) if v.len() == 4 => {
                    let name = String::from_utf8_lossy(&k[1..]).into_owned();
                    tables.insert(name, TableId(PageNo::from_raw(u32::from_le_bytes(v[..4].try_into().unwrap()))));
                }
                Ok(_) => result = Err(Error::Invalid(format!("damaged catalog entry in database '{}'", self.name()))),
                Err(e) => result = Err(e),
            }
        }
        let chain = self.space.get(&txn, BOOT_ROOT, CHAIN_KEY)?.and_then(|v| BackupChain::decode(&v));
        let pending = self.pending_drops(&txn);
        self.space.commit(txn)?;
        result?;
        let pending = pending?;
        *self.tables.write() = tables;
        *self.chain.lock() = chain.unwrap_or_default();
        self.apply_log_hold();
        for (root, dropped_at) in pending {
            match self.finish_drop(root, dropped_at) {
                // A full log or data file leaves the drop pending until the next open.
                Err(e) if tessera_access::reserve::is_full(&e) => {}
                r => r?,
            }
        }
        Ok(())
    }

    /// The roots of dropped trees whose pages may not all be free yet, each with the end
    /// of the log when it was dropped (0: not recorded).
    fn pending_drops(&self, txn: &tessera_access::Txn) -> Result<Vec<(PageNo, Lsn)>> {
        self.space
            .scan(
                txn,
                BOOT_ROOT,
                Bound::Included(b"D".to_vec()),
                Bound::Excluded(b"E".to_vec()),
                Direction::Forward,
                OnLocked::Wait,
            )
            .filter(|item| !matches!(item, Ok((k, _)) if k.len() != 5))
            .map(|item| {
                item.map(|(k, v)| {
                    let dropped_at = v.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
                    (PageNo::from_raw(u32::from_be_bytes(k[1..5].try_into().unwrap())), Lsn::from_raw(dropped_at))
                })
            })
            .collect()
    }

    pub fn name(&self) -> &str {
        self.space.name()
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    /// The data file and the log file.
    pub fn file_paths(&self) -> (std::path::PathBuf, std::path::PathBuf) {
        (self.space.store.path().to_path_buf(), self.space.wal.path().to_path_buf())
    }

    /// What crash recovery did when this database was opened (None if it was created).
    pub fn recovery(&self) -> Option<&RecoveryOutcome> {
        self.recovery.as_ref()
    }

    /// Whether it is a scratch database (tempdb), read without copying the options.
    pub(crate) fn is_scratch(&self) -> bool {
        self.options.lock().scratch
    }

    pub fn options(&self) -> DatabaseOptions {
        self.options.lock().clone()
    }

    /// Whether READ COMMITTED statements read row versions (`READ_COMMITTED_SNAPSHOT ON`).
    pub fn reads_committed_snapshot(&self) -> bool {
        self.read_committed_snapshot.load(Ordering::Acquire)
    }

    /// Whether the database keeps row versions and allows snapshots now.
    pub fn versioning(&self) -> tessera_access::Versioning {
        self.space.versions.state()
    }

    /// Starts or stops keeping row versions, before the options that ask for it are
    /// recorded: starting waits for the transactions active now to end (their changes have
    /// no versions), stopping for the snapshots still held (see
    /// `tessera_access::versions`). Cancelled (3617) when `cancel` is set meanwhile.
    pub fn set_versioning(&self, on: bool, cancel: Option<&std::sync::atomic::AtomicBool>) -> Result<()> {
        if on {
            self.space.start_versioning(cancel)
        } else {
            self.space.stop_versioning(cancel)
        }
    }

    /// Sets the most the database's row versions may hold (0: no limit): past it, the
    /// oldest snapshots are given up (3966 at their next versioned read).
    pub fn set_version_store_max_bytes(&self, max_bytes: u64) {
        self.space.versions.set_max_bytes(max_bytes);
    }

    /// The most the database's row versions may hold (0: no limit).
    pub fn version_store_max_bytes(&self) -> u64 {
        self.space.versions.max_bytes()
    }

    /// The snapshots given up to shrink the version store since the last call.
    pub fn take_version_victims(&self) -> Vec<tessera_access::versions::Victim> {
        self.space.versions.take_victims()
    }

    /// Marks `object` as redefined by a transaction about to commit; end the mark with
    /// [`Database::redefined`] when it has committed or failed to.
    pub fn redefining(&self, object: u32) -> Redefining {
        self.redefinitions.begin(object)
    }

    /// The transaction of a [`Database::redefining`] ended (`committed` or not).
    pub fn redefined(&self, r: Redefining, committed: bool) {
        self.redefinitions.end(r, committed.then(|| self.space.versions.clock()))
    }

    /// Whether DDL that committed after the snapshot taken at `csn` redefined `object`
    /// (a SNAPSHOT transaction may not use it then: 3961).
    pub fn redefined_since(&self, object: u32, csn: u64) -> bool {
        self.redefinitions.since(object, csn)
    }

    /// The snapshots held in the database now.
    pub fn held_snapshots(&self) -> Vec<tessera_access::versions::HeldSnapshot> {
        self.space.versions.held()
    }

    /// How much the version store holds now.
    pub fn version_usage(&self) -> tessera_access::versions::VersionUsage {
        self.space.versions.usage()
    }

    /// How a commit is made durable under the database's DELAYED_DURABILITY (read without
    /// copying the options: every commit asks).
    pub fn commit_durability(&self, delayed: bool) -> tessera_access::Durability {
        self.options.lock().commit_durability(delayed)
    }

    /// Switching to SIMPLE breaks the log backup chain: log backups need a new full
    /// backup first, as in SQL Server. Growth and maximum sizes apply from now on
    /// (`engine` gives the defaults for those not set).
    pub(crate) fn set_options(&self, options: DatabaseOptions, data: &DataConfig, log: &LogConfig) -> Result<()> {
        let simple = options.recovery_model == RecoveryModel::Simple;
        let (data, log) = (options.data_config(data), options.log_config(log));
        self.space.set_data_limits(data.growth, data.max_size);
        self.space.wal.set_limits(log.growth, log.max_size);
        self.read_committed_snapshot.store(options.read_committed_snapshot, Ordering::Release);
        *self.options.lock() = options;
        self.apply_pool_limit()?;
        let chain = *self.chain.lock();
        if simple && !chain.log_backup_lsn.is_none() {
            self.set_backup_chain(BackupChain { log_backup_lsn: Lsn::NONE, ..chain })?;
        }
        self.apply_log_hold();
        Ok(())
    }

    /// Holds the data file's pages in the buffer pool to `MAX_BUFFER_POOL_MB`, or lets
    /// them grow freely when it is not set.
    fn apply_pool_limit(&self) -> Result<()> {
        let mb = self.options.lock().limits.max_buffer_pool_mb;
        let pages = mb.map(|mb| (mb as usize) * (1 << 20) / PAGE_SIZE);
        self.space.pool.set_file_limit(self.space.file, pages)
    }

    /// The data file's share of the buffer pool: resident pages, limit, and the evictions
    /// its limit caused.
    pub fn pool_usage(&self) -> Option<tessera_buffer::FileUsage> {
        self.space.pool.file_usage(self.space.file)
    }

    /// The log keeps what the next log backup needs, under FULL and BULK_LOGGED once a
    /// log chain exists.
    fn apply_log_hold(&self) {
        let chain = self.chain.lock().log_backup_lsn;
        let keep = !chain.is_none() && self.options.lock().recovery_model != RecoveryModel::Simple;
        self.space.wal.set_hold(Hold::LogBackup, keep.then_some(chain));
    }

    pub fn backup_chain(&self) -> BackupChain {
        *self.chain.lock()
    }

    /// Records a completed backup (durably, in the catalog) and moves the log hold.
    pub fn set_backup_chain(&self, chain: BackupChain) -> Result<()> {
        let mut txn = self.space.begin(Durability::Full);
        let r = self
            .space
            .delete(&mut txn, BOOT_ROOT, CHAIN_KEY)
            .and_then(|_| self.space.insert(&mut txn, BOOT_ROOT, CHAIN_KEY, &chain.encode()));
        if let Err(e) = r {
            self.space.rollback(txn)?;
            return Err(e);
        }
        self.space.commit(txn)?;
        *self.chain.lock() = chain;
        self.apply_log_hold();
        Ok(())
    }

    /// Starts a backup: holds the log and, for a copy of the data file (`checkpoint`),
    /// checkpoints and says where the copy's recovery will start. A log backup needs no
    /// checkpoint (its LSNs are then 0). A full backup that will become the differential
    /// base (`new_base`) resets the changed-extent map after its checkpoint. Error 3023 while another
    /// backup of this database runs.
    pub fn begin_backup(&self, checkpoint: bool, new_base: bool) -> Result<BackupPoint<'_>> {
        let exclusive = self.backup.try_lock().ok_or_else(|| msg::BACKUP_MUST_BE_SERIALIZED.engine(&[]))?;
        self.backup_point(exclusive, checkpoint, new_base)
    }

    /// Starts a copy of the whole database (`CREATE DATABASE … AS COPY OF`): as a full
    /// backup that is no differential base, but waiting for a backup or copy of this
    /// database that runs, rather than failing (copies of one template come in bursts).
    pub fn begin_copy(&self) -> Result<BackupPoint<'_>> {
        self.backup_point(self.backup.lock(), true, false)
    }

    fn backup_point<'a>(
        &'a self,
        exclusive: parking_lot::MutexGuard<'a, ()>,
        checkpoint: bool,
        new_base: bool,
    ) -> Result<BackupPoint<'a>> {
        let wal = &self.space.wal;
        // Hold what is there now, so a concurrent checkpoint cannot truncate past the
        // point this checkpoint is about to name.
        wal.set_hold(Hold::Backup, Some(wal.truncation_lsn()));
        let mut point = BackupPoint {
            db: self,
            _exclusive: exclusive,
            begin_lsn: Lsn::NONE,
            checkpoint_lsn: Lsn::NONE,
            data_pages: 0,
        };
        if new_base {
            *self.differential_base.lock() = None;
        }
        if !checkpoint {
            debug_assert!(!new_base, "a differential base is a full backup, which checkpoints");
            return Ok(point);
        }
        let master = self.space.checkpoint()?;
        if new_base {
            // After the checkpoint (the map lists pages written, see access::changes):
            // its writes carry changes the copy holds, and any change the copy may miss
            // leaves its page dirty until a later write marks it, or lies in the log this
            // backup carries.
            self.space.store.changes.reset();
        }
        self.checkpointed_at.store(wal.end_lsn().raw(), Ordering::Release);
        wal.set_hold(Hold::Backup, Some(master.begin_lsn));
        point.begin_lsn = master.begin_lsn;
        point.checkpoint_lsn = master.checkpoint_lsn;
        point.data_pages = self.space.store.pages();
        Ok(point)
    }

    /// Fails with 9001 once a write or sync of the log has failed: what is in memory may
    /// hold changes that never reached the disk, so the database serves nothing more until
    /// it is opened again and its recovery reads what the disk holds.
    pub fn available(&self) -> Result<()> {
        self.space.wal.check_failed()
    }

    /// Fails with 927 while one holder has the database to itself on its way to RESTORING
    /// (a tail-log backup WITH NORECOVERY): no session begins a transaction in it.
    pub fn admits_users(&self) -> Result<()> {
        if self.exclusive.load(Ordering::Acquire) {
            return Err(msg::DATABASE_RESTORING.engine(&[&self.name()]));
        }
        Ok(())
    }

    /// The log (backups copy from it).
    pub fn wal(&self) -> &Arc<Wal> {
        &self.space.wal
    }

    /// Runs `(first page, count)` of the data file's first `pages` pages that a
    /// differential backup on the full backup whose first LSN is `base` must read: the
    /// extents changed since that backup began, or `None` when this open of the database
    /// does not know them (the base was taken before it; read every page then).
    pub fn changed_page_runs(&self, base: Lsn, pages: u32) -> Option<Vec<(PageNo, u32)>> {
        (*self.differential_base.lock() == Some(base)).then(|| self.space.store.changes.changed_runs(pages))
    }

    /// How many pages a differential backup on the last full backup would read now
    /// (`None` when this open of the database does not know which changed).
    pub fn changed_page_count(&self) -> Option<u64> {
        let base = (*self.differential_base.lock())?;
        let runs = self.changed_page_runs(base, self.space.store.pages())?;
        Some(runs.iter().map(|&(_, n)| u64::from(n)).sum())
    }

    /// The pages minimally logged bulk loads wrote, as their notes in the log from `from`
    /// to `to` list them (ascending, without repeats). The log lacks these pages'
    /// contents, so a backup whose log covers such a note must also copy them.
    pub fn bulk_loaded_pages(&self, from: Lsn, to: Lsn) -> Result<Vec<PageNo>> {
        let wal = &self.space.wal;
        if to <= from || !self.space.may_have_bulk_notes(from) {
            return Ok(Vec::new());
        }
        // The reader reads the file: every record below `to` must be in it.
        wal.flush(to.just_before())?;
        let mut reader = tessera_log::WalReader::new(wal, from);
        let mut pages = Vec::new();
        while let Some(item) = reader.next_record() {
            let (lsn, rec) = item?;
            if lsn >= to {
                break;
            }
            if rec.kind == tessera_log::RecordKind::System {
                pages.extend(tessera_access::ops::bulk_note_pages(&rec.body)?);
            }
        }
        pages.sort_unstable();
        pages.dedup();
        Ok(pages)
    }

    pub(crate) fn touch(&self) {
        let now_ns = self.since_open().as_nanos() as u64;
        // Read first: sessions on one database share the line, and the coarse clock
        // moves once a millisecond or so, so most touches change nothing.
        if self.last_used_ns.load(Ordering::Relaxed) < now_ns {
            self.last_used_ns.fetch_max(now_ns, Ordering::Relaxed);
        }
    }

    /// When the database was last used (when it was opened if not since).
    pub(crate) fn last_used_at(&self) -> Instant {
        self.opened_at + std::time::Duration::from_nanos(self.last_used_ns.load(Ordering::Relaxed))
    }

    pub(crate) fn idle_for(&self) -> std::time::Duration {
        let last = std::time::Duration::from_nanos(self.last_used_ns.load(Ordering::Relaxed));
        self.since_open().saturating_sub(last)
    }

    /// Gives back the memory its lock and transaction tables kept from their busiest
    /// moment, once it has been idle for `after` and once per idle spell (a use since the
    /// last release starts another).
    pub(crate) fn release_idle_memory(&self, after: std::time::Duration) {
        // Read first (Acquire, against the Release below): the use read next is then at
        // least the one the last release was made after.
        let released = self.released_after_ns.load(Ordering::Acquire);
        let used = self.last_used_ns.load(Ordering::Relaxed);
        assert!(released <= used + 1, "memory released after a use that has not happened yet");
        if released == used + 1 || self.idle_for() < after {
            return;
        }
        self.space.release_idle_memory();
        // A use meanwhile moved `last_used_ns` on: the next round releases again. (Two
        // rounds at once may both release; the mark never goes back.)
        self.released_after_ns.fetch_max(used + 1, Ordering::Release);
    }

    fn since_open(&self) -> std::time::Duration {
        tessera_io::clock::coarse_monotonic().saturating_sub(self.opened_coarse)
    }

    /// Starts a transaction (READ COMMITTED).
    /// Takes the application lock named by `name_hash` for a session (`sp_getapplock`
    /// with `@LockOwner = 'Session'`; `owner` identifies the session and must never be
    /// a transaction id), waiting as `wait` allows; returns whether it had to wait.
    pub fn lock_app_for_session(
        &self,
        owner: u64,
        name_hash: u64,
        mode: tessera_access::LockMode,
        wait: tessera_access::lock::Wait,
    ) -> Result<bool> {
        let r = tessera_access::lock::Resource::App(name_hash);
        self.space.locks.lock_noting_wait(TxnId::from_raw(owner), r, mode, wait).map(|(_, waited)| waited)
    }

    /// The transactions that have logged in this database, with their LSNs and record
    /// counts (sys.dm_tran_database_transactions).
    pub fn logged_transactions(&self) -> Vec<tessera_access::txn::LoggedTxn> {
        self.space.txns.logged()
    }

    /// Every lock request in the database now, granted or waiting (sys.dm_tran_locks);
    /// a session's own locks are owned by [`session_lock_owner`] ids.
    pub fn lock_requests(&self) -> Vec<tessera_access::lock::LockRequest> {
        self.space.locks.requests()
    }

    /// Releases a session's application lock; false if it holds none.
    pub fn release_app_for_session(&self, owner: u64, name_hash: u64) -> bool {
        self.space.locks.release(TxnId::from_raw(owner), tessera_access::lock::Resource::App(name_hash))
    }

    pub fn begin(self: &Arc<Self>) -> Transaction {
        self.touch();
        Transaction::new(self.clone(), self.space.begin(Durability::Full))
    }

    /// Creates a table: an empty clustered B+tree named in the catalog, both in one
    /// transaction (a crash or failure before it commits frees the tree again).
    pub fn create_table(&self, name: &str) -> Result<TableId> {
        let _ddl = self.ddl.lock();
        if self.tables.read().contains_key(name) {
            return Err(Error::AlreadyExists { kind: "object", name: name.to_string() });
        }
        let mut txn = self.space.begin(Durability::Full);
        let created = self.space.create_tree(&mut txn).and_then(|root| {
            self.space.insert(&mut txn, BOOT_ROOT, &catalog_key(name), &root.raw().to_le_bytes()).map(|_| root)
        });
        let root = match created {
            Ok(root) => root,
            Err(e) => {
                self.space.rollback(txn)?;
                return Err(e);
            }
        };
        self.space.commit(txn)?;
        self.tables.write().insert(name.to_string(), TableId(root));
        Ok(TableId(root))
    }

    /// Drops a table. Its catalog entry becomes a pending-drop entry in the same
    /// transaction; after the commit the pages are freed and the entry removed. A crash in
    /// between is finished when the database next opens.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let Some(id) = self.table(name) else {
            return Err(Error::NotFound { kind: "object", name: name.to_string() });
        };
        let dropped_at = self.space.wal.end_lsn();
        let mut txn = self.space.begin(Durability::Full);
        // An entry already under this root page is a stale one: a drop that freed its tree
        // (root last) and then could not delete its entry (a full log). The page serves
        // this table now, so that tree was freed whole, and this entry replaces it.
        // A large-value tree's free-list entries go with it.
        let r = self
            .space
            .delete(&mut txn, BOOT_ROOT, &catalog_key(name))
            .and_then(|_| self.space.lob_forget(&mut txn, id.0))
            .and_then(|_| self.space.delete(&mut txn, BOOT_ROOT, &pending_drop_key(id.0)))
            .and_then(|_| {
                self.space.insert(&mut txn, BOOT_ROOT, &pending_drop_key(id.0), &dropped_at.raw().to_le_bytes())
            });
        if let Err(e) = r {
            self.space.rollback(txn)?;
            return Err(e);
        }
        self.space.commit(txn)?;
        self.tables.write().remove(name);
        self.finish_drop(id.0, dropped_at)
    }

    /// Frees a dropped tree and removes its pending-drop entry.
    fn finish_drop(&self, root: PageNo, dropped_at: Lsn) -> Result<()> {
        self.space.free_tree(root, dropped_at)?;
        let mut txn = self.space.begin(Durability::Full);
        match self.space.delete(&mut txn, BOOT_ROOT, &pending_drop_key(root)) {
            Ok(_) => self.space.commit(txn),
            Err(e) => {
                self.space.rollback(txn)?;
                Err(e)
            }
        }
    }

    /// Fills `out` with bytes `from .. from + out.len()` of the large value `value` of
    /// `table` (a large-value tree); the caller holds a pin taken before it read the row
    /// that points at it ([`Database::lob_pin`]).
    pub fn lob_read(&self, table: TableId, value: OffRow, from: u64, out: &mut [u8]) -> Result<()> {
        self.space.lob_read(table.0, value, from, out)
    }

    /// The free list's entries for `table` (a large-value tree) not carried out yet:
    /// values dropped by committed transactions, and generations whose older chunks are
    /// still stored (see `tessera_access::lob`).
    pub fn lob_dropped(&self, table: TableId) -> Result<Vec<LobFreeEntry>> {
        self.space.lob_dropped(table.0)
    }

    /// Keeps the large values readable now until the pin is dropped (see
    /// `tessera_access::lob`): a reader takes one before it reads rows.
    pub fn lob_pin(&self) -> LobPin {
        self.space.lob_pin()
    }

    pub fn table(&self, name: &str) -> Option<TableId> {
        self.tables.read().get(name).copied()
    }

    /// Counts the pages of `table` against `account` from now on (tempdb's per-database
    /// quota), starting with those it holds.
    pub fn charge_table_to(&self, table: TableId, account: Arc<tessera_access::PageAccount>) -> Result<()> {
        self.space.charge_tree_to(table.0, account)
    }

    /// The data file's pages: (in the file, marked in use by the allocation maps), for
    /// sys.dm_db_file_space_usage.
    pub fn data_file_pages(&self) -> Result<(u64, u64)> {
        Ok((u64::from(self.space.store.pages()), self.space.allocated_pages()?.len() as u64))
    }

    /// How many pages the tree of `table` holds (its root, internal pages and leaves),
    /// walked under the tree's latch (for sys.allocation_units).
    pub fn table_pages(&self, table: TableId) -> Result<u64> {
        let meta = self.space.tree(table.0);
        let _latch = meta.latch.read();
        Ok(btree::tree_pages(&self.space, table.0)?.len() as u64)
    }

    /// How many entries the tree of `table` holds, counted without waiting for any lock
    /// (rows other transactions are changing count as they are): the approximate row
    /// count of sys.partitions.
    pub fn table_entries(self: &Arc<Self>, table: TableId) -> Result<u64> {
        let tx = self.begin();
        let mut n = 0;
        for item in tx.scan_with(table, Bound::Unbounded, Bound::Unbounded, Direction::Forward, OnLocked::Read) {
            item?;
            n += 1;
        }
        tx.commit()?;
        Ok(n)
    }

    pub fn tables(&self) -> Vec<(String, TableId)> {
        let mut v: Vec<_> = self.tables.read().iter().map(|(k, v)| (k.clone(), *v)).collect();
        v.sort();
        v
    }

    /// Cuts from its files what they grew by and never used (see
    /// `Space::trim_unused_tails`): after a checkpoint, while nothing else holds the
    /// database (its creation, its close).
    pub(crate) fn trim_files(&self) -> Result<()> {
        self.space.trim_unused_tails()
    }

    /// Flushes dirty pages and moves the recovery start point forward; under every
    /// recovery model until log backups exist, the log before it becomes reusable.
    pub fn checkpoint(&self) -> Result<()> {
        self.space.checkpoint()?;
        self.checkpointed_at.store(self.space.wal.end_lsn().raw(), Ordering::Release);
        Ok(())
    }

    /// Makes every commit so far durable (`sys.sp_flush_log`).
    pub fn flush_log(&self) -> Result<()> {
        self.space.wal.flush_all()
    }

    pub(crate) fn log_pending(&self) -> bool {
        let w = &self.space.wal;
        w.durable_lsn() < w.end_lsn()
    }

    pub fn log_stats(&self) -> tessera_log::LogStats {
        self.space.wal.stats()
    }

    /// Bytes written to the log file since the database opened (one atomic read).
    pub fn log_bytes_written(&self) -> u64 {
        self.space.wal.bytes_written()
    }

    /// Its transactions that wrote and committed or rolled back since it opened.
    pub fn transaction_counts(&self) -> crate::TransactionCounts {
        self.transactions.counts()
    }

    /// What each of the database's files — the data file (file_id 1), then the log (2) —
    /// has read and written since the database opened, the time spent, and its size and
    /// descriptor now (`sys.dm_io_virtual_file_stats`).
    pub fn io_samples(&self) -> Result<[tessera_io::stats::FileSample; 2]> {
        Ok([self.space.store.io_sample()?, self.space.wal.io_sample()?])
    }

    /// The structural checker (the future DBCC CHECKDB): every tree's structure, then
    /// allocation: every page in use by a tree is allocated exactly once, and every
    /// allocated page is in use. The pages of a dropped tree not yet freed (a drop left
    /// pending by a full file, or one the next open finishes) are in use until then.
    pub fn check(&self) -> Result<Vec<(String, TreeStats)>> {
        let mut trees = vec![("(catalog)".to_string(), TableId(BOOT_ROOT))];
        trees.extend(self.tables());
        let mut used: Vec<PageNo> = Vec::new();
        let mut report = Vec::new();
        for (name, id) in trees {
            let meta = self.space.tree(id.0);
            let _latch = meta.latch.read();
            let (stats, pages) = btree::check(&self.space, id.0)?;
            used.extend(pages);
            report.push((name, stats));
        }
        let allocated = self.space.allocated_pages()?;
        let txn = self.space.begin(Durability::Full);
        let pending = self.pending_drops(&txn);
        self.space.commit(txn)?;
        for (root, dropped_at) in pending? {
            let meta = self.space.tree(root);
            let _latch = meta.latch.read();
            if dropped_at.is_none() || btree::holds_dropped_root(&self.space, root, dropped_at)? {
                used.extend(btree::tree_pages(&self.space, root)?);
            }
        }
        let maps: std::collections::HashSet<PageNo> =
            allocated.iter().copied().filter(|&p| (p.raw() - 1) % tessera_access::space::BITS_PER_MAP == 0).collect();
        used.sort_unstable();
        if let Some(w) = used.windows(2).find(|w| w[0] == w[1]) {
            return Err(self.inconsistent(format!("page {} is used twice", w[0])));
        }
        let allocated: Vec<PageNo> = allocated.into_iter().filter(|p| !maps.contains(p)).collect();
        if allocated != used {
            let a: std::collections::HashSet<_> = allocated.iter().collect();
            let u: std::collections::HashSet<_> = used.iter().collect();
            let leaked: Vec<_> = a.difference(&u).take(10).collect();
            let unallocated: Vec<_> = u.difference(&a).take(10).collect();
            return Err(self.inconsistent(format!(
                "allocation mismatch: allocated but unused pages {leaked:?}, used but unallocated pages {unallocated:?}"
            )));
        }
        Ok(report)
    }

    fn inconsistent(&self, detail: String) -> Error {
        Error::Corrupt {
            database: self.name().to_string(),
            path: tessera_buffer::PageStore::path(&*self.space.store).to_path_buf(),
            page: 0,
            detail,
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("name", &self.name()).field("id", &self.id).finish()
    }
}
