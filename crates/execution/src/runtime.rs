//! What statements run against: the instance shared by all sessions ([`Shared`]: engine,
//! catalogs, plan cache), one session's state ([`SessionState`]: database, variables,
//! options, open transactions) and the per-statement execution context ([`ExecCtx`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

pub mod cursors;
mod deferred;
mod hooks;
mod options;
mod sessions;
mod table_types;
mod transactions;
mod triggers;
use deferred::Deferred;
pub(crate) use deferred::{drop_trees, drop_trees_not_in};
pub use options::{lock_timeout, Options};
pub use sessions::{now_ms, Activity, ConnectionInfo, DatabaseTransaction, SessionInfo, Settings, TransactionInfo};
pub use table_types::{table_type, TableType};
pub use transactions::Transactions;
pub use triggers::{trigger_events, Transitions, TriggerFrame};

/// Catalog snapshot versions, unique in the process and increasing across runs (see
/// `Shared::assemble`): every snapshot has its own, and a plan checked in one is good in it.
static CATALOG_VERSIONS: AtomicU64 = AtomicU64::new(1);

/// The schema lock a transaction that changes a database's principals holds to its end
/// (object ids are below it; a name's lock, `ddl::locking::name_lock`, may rarely share it,
/// which only makes one wait for the other).
const SECURITY_LOCK: u32 = 0x8000_0000;
use tessera_database::{Database, Engine, Transaction};

use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::cache::PlanCache;
use tessera_semantics::catalog::{Catalog, DbRef, Object, Table};
use tessera_semantics::plan::Row;
use tessera_semantics::types::{FunctionContext, Value};

/// The version string `@@VERSION` returns, in SQL Server's shape — `Microsoft … - major.
/// minor.build.revision (X64)`, the pattern clients parse the version from (SQLAlchemy's
/// `Microsoft .*? - (\d+)\.(\d+)\.(\d+)\.(\d+)`) — naming tessera and its own version in its
/// first line, which the ERRORLOG starts with.
pub const VERSION: &str = concat!(
    "Microsoft SQL Server compatible (tessera ",
    env!("CARGO_PKG_VERSION"),
    ") - 16.0.1000.6 (X64)\n\ttessera, a SQL Server compatible database server (TDS 7.4)\n\tLinux"
);

/// The SQL Server version tessera answers as (SERVERPROPERTY('ProductVersion'), the
/// SQL Server Browser, sp_server_info, `@@VERSION`): the release whose behaviour it follows.
pub const PRODUCT_VERSION: &str = "16.0.1000.6";

/// The server's (and every database's) collation.
pub const DEFAULT_COLLATION: &str = "SQL_Latin1_General_CP1_CI_AS";

/// A database's catalog snapshot and the lock that serialises its DDL.
pub(crate) struct DbCatalog {
    /// The database's name as registered, and its id (DB_ID).
    database: Arc<str>,
    database_id: u32,
    current: RwLock<Arc<Catalog>>,
    /// The version of `current`, stored after it is replaced: a session's memo of a
    /// snapshot checks it instead of taking the lock.
    published: AtomicU64,
    /// The database's principals and permissions, loaded at first use.
    security: RwLock<Option<Arc<tessera_security::principals::Security>>>,
    ddl: Mutex<()>,
    /// Set when the database is dropped or restored: a session's memo of this entry is
    /// stale.
    forgotten: AtomicBool,
    /// The open database the catalog was loaded from. It holds nothing open: it upgrades
    /// only while the engine (or a transaction) still holds that database.
    handle: std::sync::Weak<Database>,
    /// Its Query Store, set when the catalog is loaded with Query Store on or when it is
    /// turned on (unset: every statement's only cost is finding so).
    query_store: std::sync::OnceLock<Arc<crate::query_store::QueryStore>>,
}

impl DbCatalog {
    /// Runs one DDL change (see [`Shared::alter_catalog`]).
    fn alter<T>(&self, change: impl FnOnce(&Catalog, u64) -> SqlResult<(Catalog, T)>) -> SqlResult<T> {
        let _ddl = self.ddl.lock();
        let current = self.current.read().clone();
        let version = CATALOG_VERSIONS.fetch_add(1, Ordering::Relaxed);
        let (mut next, out) = change(&current, version)?;
        next.version = version;
        *self.current.write() = Arc::new(next);
        self.published.store(version, Ordering::Release);
        Ok(out)
    }

    fn snapshot(&self) -> CatalogOf {
        CatalogOf {
            database: self.database.clone(),
            database_id: self.database_id,
            catalog: self.current.read().clone(),
        }
    }
}

/// A session's memo of the catalog entry of the database it last asked about (usually its
/// current one) and of the snapshot it last took there, so that finding a statement's
/// plan takes no instance-wide lock, and no lock at all while the catalog is unchanged.
#[derive(Default)]
pub struct CatalogMemo(RefCell<Option<(Arc<DbCatalog>, CatalogOf)>>);

/// A database's catalog snapshot, with the database's name as registered and its id.
#[derive(Clone)]
pub struct CatalogOf {
    pub database: Arc<str>,
    pub database_id: u32,
    pub catalog: Arc<Catalog>,
}

/// Everything sessions share: the storage engine, the catalogs of open databases and the
/// plan cache.
pub struct Shared {
    pub engine: Arc<Engine>,
    pub plans: PlanCache<tessera_semantics::plan::Prepared>,
    pub server_name: String,
    /// The named instance this server runs as (`tessera serve --instance`); unset for the
    /// default instance. `@@SERVERNAME` is then `server_name\INSTANCE`.
    pub instance_name: std::sync::OnceLock<String>,
    catalogs: Mutex<HashMap<String, Arc<DbCatalog>>>,
    next_spid: AtomicI32,
    next_system_spid: AtomicI32,
    /// What every open session is doing (sys.dm_exec_sessions, sp_who).
    pub sessions: Mutex<HashMap<i32, SessionInfo>>,
    /// sp_configure options.
    pub config: crate::config::Config,
    /// Server logins and their fixed server roles.
    pub logins: tessera_security::logins::Logins,
    /// GRANT/DENY at server level (`sys.server_permissions`).
    pub server_permissions: tessera_security::server_permissions::ServerPermissions,
    /// Resource Governor's pools, groups and classifier (`resource_governor`).
    pub resource_governor: tessera_governance::resource_governor::ResourceGovernor,
    /// Trace flags turned on for every session (`DBCC TRACEON (n, -1)`).
    pub global_trace_flags: GlobalTraceFlags,
    /// Where ERRORLOG lines go (the server installs its log; embedded use has none).
    errorlog: Mutex<Option<Arc<dyn ErrorLogSink>>>,
    /// What the server installs: how to end a connection, which databases it may serve.
    hooks: hooks::Hooks,
    /// Which databases opened and closed get an ERRORLOG line.
    open_close_log: Mutex<crate::open_close_log::OpenCloseLog>,
    /// Run user-defined functions' bodies (the session layer's statement loop), for the
    /// expressions and plans that call them.
    pub functions: FunctionHooks,
    /// What statements' blocking operators hold (see `grant::Grant`).
    pub query_memory: Arc<tessera_governance::grant::QueryMemory>,
    /// Per-database resource limits and their use (`governor`).
    pub governors: tessera_governance::governor::Governors,
    /// The sequences' positions in memory (`crate::sequences`).
    pub sequences: crate::sequence_positions::Sequences,
    /// The missing-index suggestions plans ran with (`crate::index_usage`).
    pub missing_indexes: crate::index_usage::MissingIndexes,
    /// Each database's Query Store that is on and in use (`crate::query_store`).
    pub query_stores: crate::query_store::QueryStores,
    /// When the server started (sys.dm_os_sys_info): the wall clock, and the system's
    /// monotonic clock (`tessera_io::clock::coarse_monotonic`: time since boot).
    pub started_at: (std::time::SystemTime, std::time::Duration),
    /// This value's own Arc, for work that opens internal sessions (msdb history).
    me: std::sync::Weak<Shared>,
}

/// Runs a user-defined scalar function with its arguments and returns its value.
pub type ScalarFunctions = fn(&mut ExecCtx, &tessera_semantics::plan::UserCall, Vec<Value>) -> SqlResult<Value>;

/// Runs a multi-statement table-valued function with its arguments and returns the rows
/// of its RETURNS table.
pub type TableFunctions =
    fn(&mut ExecCtx, &tessera_semantics::plan::TableCall, Vec<Value>) -> SqlResult<Vec<tessera_semantics::plan::Row>>;

/// What runs user-defined functions' bodies: the session layer's statement loop.
#[derive(Clone, Copy)]
pub struct FunctionHooks {
    pub scalar: ScalarFunctions,
    pub table: TableFunctions,
}

/// The ERRORLOG: where its lines go and where its files are. The server installs its log
/// (tessera-server's `errorlog`); embedded use has none.
pub trait ErrorLogSink: Send + Sync {
    /// Writes one line for a session (spid 0: the server).
    fn write(&self, spid: i32, text: &str);
    /// `sp_cycle_errorlog` by session `spid`: a line saying so ends the current file, which
    /// becomes archive 1, and a new one begins. The error says why it could not be done.
    fn cycle(&self, spid: i32) -> Result<(), String>;
    /// The file of log `n` — 0 the current `ERRORLOG`, n its archive `ERRORLOG.n` — which
    /// may not exist; None when the server keeps no file.
    fn path(&self, n: u32) -> Option<std::path::PathBuf>;
}

impl Shared {
    /// The instance over `engine`, its configuration, logins, server permissions and
    /// Resource Governor configuration loaded from master, with
    /// `functions` running the bodies of user-defined functions. Starting an
    /// instance (tempdb, msdb) is `tessera_sql::start_instance`, in the session layer.
    pub fn assemble(
        engine: Arc<Engine>,
        config: crate::config::Config,
        logins: tessera_security::logins::Logins,
        server_permissions: tessera_security::server_permissions::ServerPermissions,
        resource_governor: tessera_governance::resource_governor::ResourceGovernor,
        functions: FunctionHooks,
    ) -> Arc<Shared> {
        // Versions name storage trees (`#table.index.version`): starting from the clock
        // keeps them apart from those of an earlier run, including trees a crash left
        // behind (see `runtime/deferred.rs`).
        let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        CATALOG_VERSIONS.fetch_max(since_epoch.as_micros() as u64, Ordering::Relaxed);
        let shared = Arc::new_cyclic(|me| Shared {
            engine,
            plans: PlanCache::new(config.plan_cache_bytes()),
            server_name: "tessera".to_string(),
            instance_name: std::sync::OnceLock::new(),
            catalogs: Mutex::new(HashMap::new()),
            next_spid: AtomicI32::new(51),
            next_system_spid: AtomicI32::new(0),
            sessions: Mutex::new(HashMap::new()),
            config,
            logins,
            server_permissions,
            resource_governor,
            global_trace_flags: GlobalTraceFlags::default(),
            errorlog: Mutex::new(None),
            hooks: hooks::Hooks::default(),
            open_close_log: Mutex::default(),
            query_memory: Arc::default(),
            governors: Default::default(),
            sequences: Default::default(),
            missing_indexes: Default::default(),
            query_stores: Default::default(),
            functions,
            started_at: (std::time::SystemTime::now(), tessera_io::clock::coarse_monotonic()),
            me: me.clone(),
        });
        for entry in shared.engine.entries() {
            if entry.options.limits.any() {
                shared.governors.set_limits(entry.id, entry.options.limits);
            }
        }
        let weak = Arc::downgrade(&shared);
        shared.engine.listen(Arc::new(move |event| {
            let Some(shared) = weak.upgrade() else { return };
            if let tessera_database::DatabaseEvent::Closed(name) = event {
                shared.forget_closed(name);
            }
            let lines = shared.open_close_log.lock().lines(event, std::time::Instant::now());
            for line in lines {
                shared.write_errorlog(0, &line);
            }
        }));
        shared
    }

    /// This value as an `Arc` (it always lives in one).
    pub fn arc(&self) -> Arc<Shared> {
        self.me.upgrade().expect("Shared lives in an Arc")
    }

    /// Installs the ERRORLOG.
    pub fn set_errorlog(&self, sink: Arc<dyn ErrorLogSink>) {
        *self.errorlog.lock() = Some(sink);
    }

    /// The ERRORLOG, if the server installed one.
    pub fn errorlog(&self) -> Option<Arc<dyn ErrorLogSink>> {
        self.errorlog.lock().clone()
    }

    /// A database's state as sys.databases and DATABASEPROPERTYEX('Status') report it:
    /// RESTORING from the registry; SUSPECT while it is open but refuses work because its
    /// log failed (9001), until it is opened again; ONLINE otherwise.
    pub fn database_state(&self, entry: &tessera_database::DatabaseEntry) -> (i64, &'static str) {
        if entry.state == tessera_database::DbState::Restoring {
            return (1, "RESTORING");
        }
        match self.engine.database_if_open(&entry.name) {
            Some(db) if db.available().is_err() => (4, "SUSPECT"),
            _ => (0, "ONLINE"),
        }
    }

    /// Writes a line to ERRORLOG (nothing when no log is installed).
    pub fn write_errorlog(&self, spid: i32, text: &str) {
        if let Some(log) = self.errorlog() {
            log.write(spid, text);
        }
    }

    /// Spids 1–50 belong to the server's own sessions (reused in turn).
    /// The account lockout policy in force (the run values of its `sp_configure` options).
    pub fn lockout_policy(&self) -> tessera_security::logins::LockoutPolicy {
        let (threshold, duration) = self.config.lockout();
        tessera_security::logins::LockoutPolicy { threshold, duration }
    }

    pub fn next_system_spid(&self) -> i32 {
        1 + (self.next_system_spid.fetch_add(1, Ordering::Relaxed) % 50)
    }

    pub fn next_spid(&self) -> i32 {
        self.next_spid.fetch_add(1, Ordering::Relaxed)
    }

    pub fn database(&self, name: &str) -> SqlResult<Arc<Database>> {
        self.engine.database(name).map_err(|e| match e {
            tessera_database::Error::NotFound { .. } => tessera_semantics::catalog::database_not_found(name),
            e => e.into(),
        })
    }

    fn entry(&self, db: &Arc<Database>) -> SqlResult<Arc<DbCatalog>> {
        let key = db.name().to_lowercase();
        if let Some(c) = self.catalogs.lock().get(&key) {
            return Ok(c.clone());
        }
        let loaded = crate::catalog_store::load(db, CATALOG_VERSIONS.fetch_add(1, Ordering::Relaxed))?;
        let entry = Arc::new(DbCatalog {
            database: Arc::from(db.name()),
            database_id: db.id(),
            published: AtomicU64::new(loaded.version),
            current: RwLock::new(Arc::new(loaded)),
            security: RwLock::new(None),
            ddl: Mutex::new(()),
            forgotten: AtomicBool::new(false),
            handle: Arc::downgrade(db),
            query_store: std::sync::OnceLock::new(),
        });
        if let Some(store) = self.query_stores.open(db)? {
            let _ = entry.query_store.set(store);
        }
        Ok(self.catalogs.lock().entry(key).or_insert(entry).clone())
    }

    /// The current catalog snapshot of the database `name`, without going through the
    /// engine when the catalog is loaded (every statement asks this).
    pub fn catalog_named(&self, name: &str) -> SqlResult<CatalogOf> {
        Ok(self.entry_named(name)?.snapshot())
    }

    /// As `catalog_named`, through a session's memo.
    pub fn catalog_memo(&self, memo: &CatalogMemo, name: &str) -> SqlResult<CatalogOf> {
        let mut memo = memo.0.borrow_mut();
        let entry = match &*memo {
            Some((entry, of)) if !entry.forgotten.load(Ordering::Acquire) && same_database(&entry.database, name) => {
                if entry.published.load(Ordering::Acquire) == of.catalog.version {
                    return Ok(of.clone());
                }
                entry.clone()
            }
            _ => self.entry_named(name)?,
        };
        let of = entry.snapshot();
        *memo = Some((entry, of.clone()));
        Ok(of)
    }

    fn entry_named(&self, name: &str) -> SqlResult<Arc<DbCatalog>> {
        let loaded = tessera_database::with_lowercase(name, |key| self.catalogs.lock().get(key).cloned());
        match loaded {
            Some(entry) => Ok(entry),
            None => self.entry(&self.database(name)?),
        }
    }

    /// The table a plan bound against the definition `def` means when it runs in the
    /// session's current database (see `ExecCtx::table`), as the session sees the
    /// catalogs (a table its transaction dropped is not the one a plan means, even while
    /// the shared catalog still has it), and that database's name as the plan refers to
    /// it.
    pub fn table_for_plan(
        &self,
        session: &SessionState,
        db: &DbRef,
        def: &Arc<Table>,
    ) -> SqlResult<(Arc<str>, Arc<Table>)> {
        let of = session.catalog_of(self, db.name(&session.database))?;
        let table = of.catalog.same_table(def).ok_or_else(|| tessera_semantics::bind::invalid_object(&def.name))?;
        Ok((of.database, table.clone()))
    }

    /// The current catalog snapshot of a database.
    pub fn catalog(&self, db: &Arc<Database>) -> SqlResult<Arc<Catalog>> {
        Ok(self.entry(db)?.current.read().clone())
    }

    /// Runs one DDL change: `change` gets the current snapshot and a fresh version and
    /// returns the next snapshot, which replaces it once `change` succeeds.
    pub fn alter_catalog<T>(
        &self,
        db: &Arc<Database>,
        change: impl FnOnce(&Catalog, u64) -> SqlResult<(Catalog, T)>,
    ) -> SqlResult<T> {
        self.entry(db)?.alter(change)
    }

    /// The open database `name`, through a session's memo when it holds that database's
    /// catalog and the database is still open (every statement's transaction asks this).
    pub fn database_memo(&self, memo: &CatalogMemo, name: &str) -> SqlResult<Arc<Database>> {
        if let Some((entry, _)) = &*memo.0.borrow() {
            if !entry.forgotten.load(Ordering::Acquire) && same_database(&entry.database, name) {
                if let Some(db) = entry.handle.upgrade() {
                    return Ok(db);
                }
            }
        }
        self.database(name)
    }

    /// The principals and permissions of the database `name` (through a session's memo).
    pub fn security(&self, memo: &CatalogMemo, name: &str) -> SqlResult<Arc<tessera_security::principals::Security>> {
        let entry = match &*memo.0.borrow() {
            Some((e, _)) if !e.forgotten.load(Ordering::Acquire) && same_database(&e.database, name) => Some(e.clone()),
            _ => None,
        };
        let entry = match entry {
            Some(e) => e,
            None => self.entry_named(name)?,
        };
        if let Some(s) = &*entry.security.read() {
            return Ok(s.clone());
        }
        let db = self.database(&entry.database)?;
        let _ddl = entry.ddl.lock();
        if let Some(s) = &*entry.security.read() {
            return Ok(s.clone());
        }
        let loaded = tessera_security::principals::load(&db)?;
        *entry.security.write() = Some(loaded.clone());
        Ok(loaded)
    }

    /// Sets the session's default schema from its user in the current database (after
    /// login, USE, EXECUTE AS and REVERT).
    pub fn refresh_default_schema(&self, state: &mut SessionState) {
        let schema = self
            .access(state, &state.database.clone())
            .ok()
            .and_then(|(security, token)| security.principal_by_id(token.user).and_then(|u| u.default_schema.clone()));
        state.default_schema = schema.unwrap_or_else(|| "dbo".to_string());
    }

    /// Whether an ownership chain may cross from database `from` into `to`: always within
    /// one database; between two when 'cross db ownership chaining' is 1, or when both
    /// have DB_CHAINING ON (both off by default).
    pub fn chains_between(&self, from: &str, to: &str) -> bool {
        if from.eq_ignore_ascii_case(to) || self.config.run_value(crate::config::CROSS_DB_CHAINING) == Some(1) {
            return true;
        }
        let on = |name: &str| self.engine.entry(name).is_some_and(|e| e.options.db_chaining);
        on(from) && on(to)
    }

    /// The server login the session acts as (see `SessionState::server_login`).
    pub fn session_login(&self, state: &SessionState) -> Option<tessera_security::logins::Login> {
        state.server_login().and_then(|name| self.logins.get(name))
    }

    /// Whether the session's server login is a member of the server role `role`
    /// (`sysadmin` also for `sa`).
    pub fn session_in_role(&self, state: &SessionState, role: &str) -> bool {
        state.server_login().is_some_and(|name| self.logins.is_member(name, role))
    }

    /// Whether the session's login holds the server permission `permission`.
    pub fn holds_server(&self, state: &SessionState, permission: &str) -> bool {
        self.session_login(state).is_some_and(|l| self.server_permissions.holds(&l, permission))
    }

    /// The databases the session may see listed (sys.databases, sp_databases,
    /// sp_helpdb), from the registry: every one with VIEW ANY DATABASE (which `public`
    /// holds until denied) or CREATE ANY DATABASE; otherwise master, tempdb, the current
    /// database and those its login owns.
    pub fn visible_databases(&self, state: &SessionState) -> Vec<tessera_database::DatabaseEntry> {
        let sees = self.database_visibility(state);
        self.engine.entries().into_iter().filter(|e| sees(e)).collect()
    }

    /// Whether the session may see the database `name` listed (see `visible_databases`;
    /// DB_ID, DB_NAME and sp_helpdb follow the same rule).
    pub fn may_see_database(&self, state: &SessionState, name: &str) -> bool {
        self.engine.entry(name).is_some_and(|e| self.database_visibility(state)(&e))
    }

    fn database_visibility(&self, state: &SessionState) -> impl Fn(&tessera_database::DatabaseEntry) -> bool + '_ {
        let login = self.session_login(state);
        let all = login.as_ref().is_some_and(|l| {
            ["VIEW ANY DATABASE", "CREATE ANY DATABASE"].iter().any(|p| self.server_permissions.holds(l, p))
        });
        let sid = login.map(|l| l.sid);
        let current = state.database.clone();
        move |e: &tessera_database::DatabaseEntry| {
            all || ["master", "tempdb"].iter().any(|n| e.name.eq_ignore_ascii_case(n))
                || e.name.eq_ignore_ascii_case(&current)
                || sid.as_deref().is_some_and(|sid| e.options.owner_sid.as_deref().unwrap_or(&[1]) == sid)
        }
    }

    /// The name of the login that owns a database (NULL's stand-in: none when that login
    /// is gone).
    pub fn owner_name(&self, entry: &tessera_database::DatabaseEntry) -> Option<String> {
        let sid = entry.options.owner_sid.as_deref().unwrap_or(&[1]);
        self.logins.all().into_iter().find(|l| l.sid == sid).map(|l| l.name)
    }

    /// The security of the database `database` and who the session is there (its
    /// token): its login's user, or the user it impersonates (EXECUTE AS USER, only in
    /// that user's database), or the application role it set (in the role's database; in
    /// the others it is `guest`, where guest has CONNECT). Error 916 when it has no access
    /// to the database; 15356 when the application role it set has been dropped.
    pub fn access(
        &self,
        state: &SessionState,
        database: &str,
    ) -> SqlResult<(Arc<tessera_security::principals::Security>, Arc<tessera_security::principals::check::Token>)> {
        use tessera_security::principals::check;
        let security = self.security(&state.catalog_memo, database)?;
        if state.classifying {
            return Ok((security, Arc::new(check::Token::dbo())));
        }
        if let Some(Impersonation { user: Some((db, user)), origin, .. }) = state.impersonation.last() {
            let application_role = matches!(origin, ContextOrigin::ApplicationRole { .. });
            return if db.eq_ignore_ascii_case(database) {
                if application_role && security.principal_by_id(*user).is_none() {
                    return Err(msg::APP_ROLE_DROPPED.err());
                }
                Ok((security.clone(), Arc::new(check::token_of_user(&security, *user))))
            } else if database.eq_ignore_ascii_case("tempdb") {
                // Every session has tempdb (its temp tables and table variables), as guest.
                Ok((
                    security.clone(),
                    Arc::new(check::token_of_user(&security, tessera_security::principals::GUEST_ID)),
                ))
            } else {
                match check::guest_token(&security).filter(|_| application_role) {
                    Some(guest) => Ok((security, Arc::new(guest))),
                    None => Err(check::no_access(&state.login, database)),
                }
            };
        }
        if let Some(m) = &*state.access_memo.borrow() {
            if Arc::ptr_eq(&m.security, &security) && m.login == state.login {
                return Ok((security, m.token.clone()));
            }
        }
        let (sid, sysadmin) = self.session_login(state).map(|l| (l.sid.clone(), l.is_sysadmin())).unwrap_or_default();
        match check::token(&security, &sid, sysadmin) {
            Some(token) => {
                let token = Arc::new(token);
                *state.access_memo.borrow_mut() =
                    Some(AccessMemo { security: security.clone(), login: state.login.clone(), token: token.clone() });
                Ok((security, token))
            }
            None => Err(check::no_access(&state.login, database)),
        }
    }

    /// Runs one change of a database's principals or permissions: `change` gets the
    /// current set and returns the next, which is written (in a transaction of its own)
    /// and then replaces it. A session's statements use `ExecCtx::alter_security`.
    pub fn alter_security<T>(
        &self,
        db: &Arc<Database>,
        change: impl FnOnce(
            &tessera_security::principals::Security,
        ) -> SqlResult<(tessera_security::principals::Security, T)>,
    ) -> SqlResult<T> {
        let (_, _, out) =
            self.change_security(db, change, |before, after| tessera_security::principals::save(db, before, after))?;
        Ok(out)
    }

    /// Runs one change of a database's principals: `change` makes the next set from the
    /// current one, `write` stores the difference, and the next set replaces the
    /// current one. Returns the database's entry and the set before the change.
    fn change_security<T>(
        &self,
        db: &Arc<Database>,
        change: impl FnOnce(
            &tessera_security::principals::Security,
        ) -> SqlResult<(tessera_security::principals::Security, T)>,
        write: impl FnOnce(
            &tessera_security::principals::Security,
            &tessera_security::principals::Security,
        ) -> SqlResult<()>,
    ) -> SqlResult<(Arc<DbCatalog>, Arc<tessera_security::principals::Security>, T)> {
        let entry = self.entry(db)?;
        let ddl = entry.ddl.lock();
        let current = match &*entry.security.read() {
            Some(s) => s.clone(),
            None => tessera_security::principals::load(db)?,
        };
        let (next, out) = change(&current)?;
        write(&current, &next)?;
        *entry.security.write() = Some(tessera_security::principals::shared(next));
        drop(ddl);
        Ok((entry, current, out))
    }

    /// Drops the catalog of a database the engine closed, unless it is open again: a
    /// closed database costs no memory here. Whoever changes a catalog holds the
    /// database open, so no change is lost; whoever reads it next loads it again.
    fn forget_closed(&self, db: &str) {
        let mut catalogs = self.catalogs.lock();
        if self.engine.database_if_open(db).is_none() {
            self.sequences.forget_database(db);
            self.query_stores.closed(db);
            if let Some(entry) = catalogs.remove(&db.to_lowercase()) {
                entry.forgotten.store(true, Ordering::Release);
            }
        }
    }

    /// The Query Store of the database `name` when it is capturing, through a session's
    /// memo (every statement asks; nothing is locked). None when the memo holds another
    /// database: that statement's run is not counted.
    pub fn query_store(&self, memo: &CatalogMemo, name: &str) -> Option<Arc<crate::query_store::QueryStore>> {
        let memo = memo.0.borrow();
        let (entry, _) = memo.as_ref()?;
        // A database dropped or restored over since: not its store any more.
        if !same_database(&entry.database, name) || entry.forgotten.load(Ordering::Acquire) {
            return None;
        }
        entry.query_store.get().filter(|s| s.capturing()).cloned()
    }

    /// Turns on or changes the Query Store of database `db` with `options` (already
    /// written to it), and gives its catalog entry the store.
    pub fn configure_query_store(
        &self,
        db: &Arc<Database>,
        options: crate::query_store::Options,
    ) -> SqlResult<Arc<crate::query_store::QueryStore>> {
        let store = self.query_stores.configure(db, options);
        let entry = self.entry(db)?;
        let _ = entry.query_store.set(store.clone());
        Ok(store)
    }

    /// The catalog of the database `name` if it is loaded (nothing is opened or read).
    pub fn loaded_catalog(&self, name: &str) -> Option<Arc<Catalog>> {
        let entry = self.catalogs.lock().get(&name.to_lowercase()).cloned()?;
        let snapshot = entry.current.read().clone();
        Some(snapshot)
    }

    /// How many databases' catalogs are loaded.
    pub fn loaded_catalogs(&self) -> usize {
        self.catalogs.lock().len()
    }

    /// Forgets a database's catalog (after DROP DATABASE).
    pub fn forget(&self, db: &str) {
        self.query_stores.forget(db);
        if let Some(entry) = self.catalogs.lock().remove(&db.to_lowercase()) {
            entry.forgotten.store(true, Ordering::Release);
        }
    }
}

/// The rows of a table-valued parameter as a client sends them (TDS type 0xF3): the table
/// type's name as the client gives it, its columns' types (None: a column the client
/// leaves to its default, which sends no values), and the rows' values of the others.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableRows {
    pub type_name: String,
    pub columns: Vec<Option<tessera_semantics::types::SqlType>>,
    pub rows: Vec<Vec<Value>>,
}

/// What an `INSERT BULK` statement announced, checked against the catalog: where the
/// rows of the connection's next BULK_LOAD message go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkTarget {
    /// The table as the statement named it, each part quoted.
    pub table: String,
    /// The columns the rows fill, in order, as the table spells them.
    pub columns: Vec<String>,
    /// KEEPIDENTITY: the identity values sent are inserted.
    pub keep_identity: bool,
    /// The table's identity column. Without KEEPIDENTITY the values sent for it are
    /// dropped and the table makes its own.
    pub identity: Option<String>,
}

/// The character after `#` in the name a table variable waits under in
/// [`SessionState::temp_tables`] for its transaction's end (not one an identifier has).
pub const PENDING_TABLE_VARIABLE: char = '\u{1}';

/// The state of one connection.
pub struct SessionState {
    pub spid: i32,
    pub database: String,
    pub catalog_memo: CatalogMemo,
    /// The running request's charges against its database's resource limits and its
    /// workload group's and pool's (None: none apply, or no request runs).
    pub pacer: Option<tessera_governance::governor::Pacer>,
    /// The Resource Governor pool the running request's grants draw on (None: disabled).
    pub query_pool: Option<tessera_governance::grant::PoolShare>,
    /// The Resource Governor workload group the session was classified into at login.
    pub group_id: i32,
    /// Set while the classifier function runs for the session: it runs as the server
    /// runs it, with every permission, in the session's context (its login, host and
    /// program names).
    pub classifying: bool,
    pub login: String,
    pub options: Options,
    pub txns: Transactions,
    /// Variable slots of the running frame.
    pub vars: Vec<Value>,
    pub rowcount: i64,
    pub identity: Option<Value>,
    pub scope_identity: Option<Value>,
    pub error: i32,
    pub nest_level: i32,
    pub functions: FunctionContext,
    pub cancel: Arc<AtomicBool>,
    /// `#name` (lower-cased) → the real name of this session's temp table in tempdb. A
    /// table variable whose batch ended while the transaction that wrote it is still open
    /// waits here under a name no statement can write (`#` and [`PENDING_TABLE_VARIABLE`])
    /// until that transaction ends and it can be dropped.
    pub temp_tables: HashMap<String, String>,
    /// Temp tables and table variables the session has made: the last part of each one's
    /// real name, so no two are alike.
    pub temp_serial: u32,
    /// The error being handled by the innermost CATCH block.
    pub caught: Option<SqlError>,
    /// An error of severity 20 or more was raised: the connection ends once the
    /// response is sent, as in SQL Server.
    pub fatal_error: bool,
    /// Set when an aggregate skipped a NULL in the running statement (warning 8153).
    pub null_eliminated: bool,
    pub host_name: String,
    pub program_name: String,
    /// Trace flags this session turned on (`DBCC TRACEON (n)`).
    pub trace_flags: std::collections::BTreeSet<i32>,
    /// Statements prepared with sp_prepare: handle → (parameter declarations, text).
    pub prepared: HashMap<i32, (String, String)>,
    /// The rows of a TDS bulk load, taken by the one-row INSERT … VALUES statement that
    /// `Session::bulk_insert` runs for it (so the load is one statement, whatever its size).
    pub bulk_rows: Option<Vec<Vec<Value>>>,
    /// The rows of the table-valued parameters an RPC sent, by the name of the variable
    /// the RPC's EXEC passes each as (`@__rpc2`), taken when the call binds its arguments.
    pub table_arguments: HashMap<String, TableRows>,
    /// The events of the DDL triggers running (what EVENTDATA() gives), innermost last.
    pub events: Vec<String>,
    /// Set while a statement whose target has triggers runs: the rows it changes.
    pub transitions: Option<Transitions>,
    /// The triggers running, innermost last.
    pub triggers: Vec<TriggerFrame>,
    /// What the last `INSERT BULK` announced, until the network layer takes it for the
    /// BULK_LOAD message that follows (`Session::take_bulk_target`).
    pub bulk_target: Option<BulkTarget>,
    /// Application locks the session owns (`sp_getapplock @LockOwner = 'Session'`):
    /// (database, name hash).
    pub app_locks: Vec<(String, u64)>,
    /// EXECUTE AS contexts, innermost last.
    pub impersonation: Vec<Impersonation>,
    /// Where one-part names are looked for before dbo: the session user's default schema
    /// in the current database (see `Shared::refresh_default_schema`), or the schema of
    /// the procedure or function running.
    pub default_schema: String,
    /// The token `Shared::access` found last, for the database security snapshot and login
    /// it was found for (server role membership is read when it is made, as SQL Server
    /// reads it at login: a change applies to the session at its next database or
    /// security change).
    access_memo: RefCell<Option<AccessMemo>>,
    next_handle: i32,
    /// Its server cursors: API cursors and T-SQL cursors.
    pub cursors: cursors::Cursors,
}

/// A session's last token (see `SessionState::access_memo`).
#[derive(Debug)]
struct AccessMemo {
    security: Arc<tessera_security::principals::Security>,
    login: String,
    token: Arc<tessera_security::principals::check::Token>,
}

/// One EXECUTE AS: whom the session was before it, and whom it is now.
#[derive(Clone, Debug)]
pub struct Impersonation {
    /// The login before this context (the session's login now is the impersonated one for
    /// EXECUTE AS LOGIN, the same one for EXECUTE AS USER).
    pub previous_login: String,
    /// EXECUTE AS USER: the database and the user's principal id there.
    pub user: Option<(String, i32)>,
    /// `WITH NO REVERT`: REVERT cannot end it.
    pub no_revert: bool,
    /// The context acts in its database only (a contained database user, EXECUTE AS USER,
    /// a module's EXECUTE AS), as SQL Server's database-scoped impersonation: it holds no
    /// server login's permissions and is in no server role, whatever login its user maps
    /// to or shares its name with. The session's login is then only the name it shows.
    pub database_only: bool,
    /// The module nesting level it began at: it ends when that module returns.
    pub nest_level: i32,
    pub origin: ContextOrigin,
}

/// What began a security context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContextOrigin {
    /// A contained database user's login: the session's first context, for good.
    ContainedLogin,
    /// EXECUTE AS, or a module's EXECUTE AS.
    ExecuteAs,
    /// `sp_setapprole`: the session is the application role in its database until
    /// `sp_unsetapprole` gives back this cookie (with none, until it disconnects).
    ApplicationRole { cookie: Option<Vec<u8>> },
}

impl SessionState {
    /// The server login the session acts as, for server permissions and server roles:
    /// its login, or the one EXECUTE AS LOGIN gave it; none while a database-scoped
    /// context is in force (`Impersonation::database_only`).
    pub fn server_login(&self) -> Option<&str> {
        match self.impersonation.last() {
            Some(context) if context.database_only => None,
            _ => Some(&self.login),
        }
    }

    /// `database`'s catalog as this session sees it: without what its open transaction
    /// dropped (see `SessionNames::own_view`), under a version of its own.
    pub fn own_view(&self, database: &str, catalog: Arc<Catalog>) -> Arc<Catalog> {
        let mut dropped = self.txns.dropped_in(database).peekable();
        if dropped.peek().is_none() {
            return catalog;
        }
        let version = CATALOG_VERSIONS.fetch_add(1, Ordering::Relaxed);
        let mut own = (*catalog).clone();
        for id in dropped {
            own = own.without(id, version);
        }
        own.version = version;
        Arc::new(own)
    }

    /// The database `name`'s catalog through the session's memo, as the session sees it.
    pub fn catalog_of(&self, shared: &Shared, name: &str) -> SqlResult<CatalogOf> {
        let mut of = shared.catalog_memo(&self.catalog_memo, name)?;
        of.catalog = self.own_view(&of.database, of.catalog);
        Ok(of)
    }

    /// The application role the session set (`sp_setapprole`): its database and
    /// principal id.
    pub fn application_role(&self) -> Option<(&str, i32)> {
        self.impersonation.iter().find_map(|c| match (&c.origin, &c.user) {
            (ContextOrigin::ApplicationRole { .. }, Some((db, id))) => Some((db.as_str(), *id)),
            _ => None,
        })
    }
}

impl SessionState {
    pub fn new(spid: i32, login: &str, database: &str) -> SessionState {
        SessionState {
            spid,
            database: database.to_string(),
            login: login.to_string(),
            options: Options::default(),
            txns: Transactions::default(),
            vars: Vec::new(),
            rowcount: 0,
            identity: None,
            scope_identity: None,
            error: 0,
            nest_level: 0,
            functions: FunctionContext::with_keys(&crate::encoding::KEYS),
            cancel: Arc::new(AtomicBool::new(false)),
            temp_tables: HashMap::new(),
            temp_serial: 0,
            catalog_memo: CatalogMemo::default(),
            pacer: None,
            query_pool: None,
            group_id: tessera_governance::resource_governor::DEFAULT_ID,
            classifying: false,
            caught: None,
            fatal_error: false,
            null_eliminated: false,
            host_name: String::new(),
            program_name: String::new(),
            trace_flags: std::collections::BTreeSet::new(),
            prepared: HashMap::new(),
            bulk_rows: None,
            table_arguments: HashMap::new(),
            events: Vec::new(),
            transitions: None,
            triggers: Vec::new(),
            bulk_target: None,
            app_locks: Vec::new(),
            impersonation: Vec::new(),
            default_schema: "dbo".to_string(),
            access_memo: RefCell::new(None),
            next_handle: 1,
            cursors: cursors::Cursors::default(),
        }
    }

    /// Whether a trace flag is on for this session (or globally).
    pub fn has_trace_flag(&self, shared: &Shared, flag: i32) -> bool {
        self.trace_flags.contains(&flag) || shared.global_trace_flags.contains(flag)
    }

    /// Counts `rows` rows read or written against the running request's resource limits,
    /// waiting when its database is over one (see `tessera_governance::governor`).
    pub fn pace(&mut self, rows: u32) -> SqlResult<()> {
        match &mut self.pacer {
            Some(p) => p.rows(rows, &self.cancel),
            None => Ok(()),
        }
    }

    /// Charges the running request's use so far against its limits (at the end of a
    /// statement), waiting when its database is over one.
    pub fn pace_statement(&mut self) -> SqlResult<()> {
        match &mut self.pacer {
            Some(p) => p.charge(&self.cancel),
            None => Ok(()),
        }
    }

    /// A new sp_prepare handle.
    pub fn next_prepared_handle(&mut self) -> i32 {
        let h = self.next_handle;
        self.next_handle = self.next_handle.wrapping_add(1).max(1);
        h
    }
}

/// Trace flags turned on for every session (`DBCC TRACEON (n, -1)`): asked about on
/// every transaction, changed by hand, so while none is on an asker reads one flag and
/// takes no lock.
#[derive(Default)]
pub struct GlobalTraceFlags {
    on: RwLock<std::collections::BTreeSet<i32>>,
    any: AtomicBool,
}

impl GlobalTraceFlags {
    pub fn contains(&self, flag: i32) -> bool {
        self.any.load(Ordering::Acquire) && self.on.read().contains(&flag)
    }

    pub fn set(&self, flag: i32, on: bool) {
        let mut flags = self.on.write();
        if on {
            flags.insert(flag);
        } else {
            flags.remove(&flag);
        }
        self.any.store(!flags.is_empty(), Ordering::Release);
    }

    /// The flags on, ascending.
    pub fn list(&self) -> Vec<i32> {
        self.on.read().iter().copied().collect()
    }
}

/// Per-statement execution context.
pub struct ExecCtx<'a> {
    pub shared: &'a Shared,
    pub session: &'a mut SessionState,
    /// Rows of enclosing queries, for correlated subqueries (innermost last).
    pub outer: Vec<Row>,
    /// Results of uncorrelated subqueries, computed once per statement.
    pub subquery_cache: HashMap<usize, Arc<Vec<Row>>>,
    /// Uncorrelated IN/ANY/ALL subqueries streamed once already (without keeping their
    /// rows): the next probe reads and keeps all of them.
    pub subqueries_streamed: std::collections::HashSet<usize>,
    /// The values NEXT VALUE FOR gave in the row being made, by database and sequence id:
    /// every NEXT VALUE FOR of one sequence in a row gives the same value.
    pub row_sequence_values: Vec<((Arc<str>, i32), Value)>,
    /// The current round of each running recursive CTE, by work table id.
    pub work_tables: HashMap<usize, Vec<Row>>,
    /// The statement's memory grant, made when an operator first needs it.
    grant: Option<Arc<tessera_governance::grant::Grant>>,
}

impl<'a> ExecCtx<'a> {
    /// Makes `after` the definition of an object in `database` in place of `before` (None:
    /// an object created, or dropped): its catalog row is written or deleted in the
    /// session's transaction, which keeps the object locked (Sch-M) to its end and settles
    /// a table's trees then (`runtime/deferred.rs`). The caller changes the in-memory
    /// catalog.
    pub fn redefine_in_transaction(
        &mut self,
        database: &Arc<Database>,
        before: Option<Object>,
        after: Option<Object>,
    ) -> SqlResult<()> {
        let catalog = self.shared.entry(database)?;
        let tx = self.session.transaction(self.shared, database.name())?;
        let id = before.as_ref().or(after.as_ref()).map(|o| o.id()).expect("DDL changes an object");
        tx.lock_schema_to_end(id as u32)?;
        match &after {
            Some(a) => crate::catalog_store::save_in(tx, a)?,
            None => crate::catalog_store::delete_in(tx, id)?,
        }
        self.session.txns.defer(Deferred::new(database.clone(), catalog, before, after));
        Ok(())
    }

    pub fn new(shared: &'a Shared, session: &'a mut SessionState) -> ExecCtx<'a> {
        session.functions.start_statement();
        tessera_semantics::types::set_session_date_format(&session.options.dateformat);
        ExecCtx {
            shared,
            session,
            outer: Vec::new(),
            subquery_cache: HashMap::new(),
            subqueries_streamed: Default::default(),
            row_sequence_values: Vec::new(),
            work_tables: HashMap::new(),
            grant: None,
        }
    }

    /// The statement's memory grant (see `grant::Grant`).
    pub fn grant(&mut self) -> Arc<tessera_governance::grant::Grant> {
        let shared = self.shared;
        let pool = self.session.query_pool.as_ref();
        self.grant
            .get_or_insert_with(|| tessera_governance::grant::Grant::new(shared.query_memory.clone(), pool))
            .clone()
    }

    pub fn var(&self, slot: usize) -> &Value {
        &self.session.vars[slot]
    }

    /// Between two rows (or batches of rows) of a statement: where it stops when the
    /// session was cancelled (3617), and waits when its database is over a resource
    /// limit (see `tessera_governance::governor`).
    /// Before rows are written to `db`: error 40544 when that is tempdb and `pages` more
    /// (at least one) would pass the request's database's tempdb quota (`MAX_TEMPDB_MB`).
    #[inline]
    pub fn check_tempdb_room(&self, db: &str, pages: u64) -> SqlResult<()> {
        match self.session.pacer.as_ref().and_then(|p| p.tempdb()) {
            Some(quota) if is_tempdb(db) => quota.check(pages),
            _ => Ok(()),
        }
    }

    /// Charges a new tree of `database` (a temporary object's, when it is tempdb) to the
    /// request's database's tempdb quota.
    pub fn charge_new_tree(&self, database: &Database, table: tessera_database::TableId) -> SqlResult<()> {
        match self.session.pacer.as_ref().and_then(|p| p.tempdb()) {
            Some(quota) if is_tempdb(database.name()) => Ok(database.charge_table_to(table, quota.account().clone())?),
            _ => Ok(()),
        }
    }

    pub fn yield_point(&mut self) -> SqlResult<()> {
        self.yield_after_rows(1)
    }

    /// [`ExecCtx::yield_point`] after `rows` rows (a batch of a scan).
    pub fn yield_after_rows(&mut self, rows: u32) -> SqlResult<()> {
        if self.session.cancel.load(Ordering::Relaxed) {
            return Err(SqlError::from(tessera_errors::Error::Cancelled));
        }
        self.session.pace(rows)
    }

    /// Changes the principals, schemas or permissions of `db` in the session's transaction
    /// (CREATE/ALTER/DROP USER, ROLE, SCHEMA, APPLICATION ROLE, GRANT, DENY, REVOKE,
    /// ALTER AUTHORIZATION): they are locked to its end, and its rollback puts them back.
    pub fn alter_security<T>(
        &mut self,
        db: &Arc<Database>,
        change: impl FnOnce(
            &tessera_security::principals::Security,
        ) -> SqlResult<(tessera_security::principals::Security, T)>,
    ) -> SqlResult<T> {
        let tx = self.session.transaction(self.shared, db.name())?;
        tx.lock_schema_to_end(SECURITY_LOCK)?;
        let (entry, before, out) = self
            .shared
            .change_security(db, change, |before, after| tessera_security::principals::save_in(tx, before, after))?;
        self.session.txns.defer(Deferred::security(db.clone(), entry, before));
        Ok(out)
    }

    /// Whether the session's open transaction dropped the object `id` of `database`.
    pub fn dropped(&self, database: &str, id: i32) -> bool {
        self.session.txns.dropped_in(database).any(|d| d == id)
    }

    /// `database`'s catalog as the session sees it (see [`SessionState::own_view`]).
    pub fn catalog(&self, database: &Arc<Database>) -> SqlResult<Arc<Catalog>> {
        Ok(self.session.own_view(database.name(), self.shared.catalog(database)?))
    }

    /// The session's transaction in `db`, begun on first use.
    pub fn transaction(&mut self, db: &str) -> SqlResult<&mut Transaction> {
        self.session.transaction(self.shared, db)
    }

    /// The database a plan's reference means as the plan runs now.
    pub fn db_name(&self, db: &DbRef) -> String {
        db.name(&self.session.database).to_string()
    }

    /// The table a plan bound against the definition `def` reads or changes as it runs
    /// now: the table of that name in the database `db` means (with its own storage
    /// trees, object id and counters), and that database's name.
    pub fn table(&self, db: &DbRef, def: &Arc<Table>) -> SqlResult<(Arc<str>, Arc<Table>)> {
        self.shared.table_for_plan(self.session, db, def)
    }

    pub fn row_schema(&self, table: &Table) -> SqlResult<Arc<tessera_access::row::RowSchema>> {
        crate::encoding::row_schema(table)
    }

    /// Where a reader of `table`'s rows in `db` reads their off-row values, made before
    /// it reads any row (see [`crate::encoding::Lobs`]).
    pub fn lobs(
        &mut self,
        db: &str,
        table: &Arc<Table>,
        schema: &tessera_access::row::RowSchema,
    ) -> SqlResult<crate::encoding::Lobs> {
        if !schema.overflows() {
            return Ok(crate::encoding::Lobs::none());
        }
        // The session's transaction holds the database (no lookup in the engine).
        let database = self.transaction(db)?.database().clone();
        Ok(crate::encoding::Lobs::of(&database, table))
    }

    /// The storage tree `name` of `table` in database `db`, seen by the session's
    /// transaction there (error 208 when it is gone).
    pub fn tree(&mut self, db: &str, name: &str, table: &Table) -> SqlResult<tessera_database::TableId> {
        let tx = self.transaction(db)?;
        tx.database().table(name).ok_or_else(|| tessera_semantics::bind::invalid_object(&table.name))
    }
}

/// Whether two names of databases name the same one (case-insensitively). Most names a
/// statement compares are the registered name itself, byte for byte: those are compared
/// as bytes first, several times a statement.
fn same_database(a: &str, b: &str) -> bool {
    a == b || a.eq_ignore_ascii_case(b)
}

/// Whether `database` names tempdb, where temporary tables and table variables live.
fn is_tempdb(database: &str) -> bool {
    database.eq_ignore_ascii_case("tempdb")
}

#[cfg(test)]
mod tests {
    use super::{PRODUCT_VERSION, VERSION};

    /// `@@VERSION`'s first line is what clients parse: `Microsoft `, anything, ` - `, then the
    /// product version (SQLAlchemy's pattern), and it names tessera.
    #[test]
    fn the_version_string_parses_as_sql_servers() {
        let first = VERSION.lines().next().unwrap();
        let (head, rest) = first.split_once(" - ").expect("a ' - ' before the version");
        assert!(head.starts_with("Microsoft ") && head.contains("tessera"), "{first}");
        let numbers: Vec<&str> = rest.split(' ').next().unwrap().split('.').collect();
        assert_eq!(numbers.join("."), PRODUCT_VERSION);
        assert!(numbers.len() == 4 && numbers.iter().all(|n| n.parse::<u32>().is_ok()), "{first}");
    }
}
