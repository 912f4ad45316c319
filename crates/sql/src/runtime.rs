//! What statements run against: the instance shared by all sessions ([`Shared`]: engine,
//! catalogs, plan cache), one session's state ([`SessionState`]: database, variables,
//! options, open transactions) and the per-statement execution context ([`ExecCtx`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tessera_database::{Database, Engine, Savepoint, Transaction};

use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::bind::{Catalogs, SessionNames};
use tessera_semantics::cache::{CachedBatch, PlanCache};
use tessera_semantics::catalog::{self, Catalog, DbRef, Object, Table};
use tessera_semantics::plan::{Prepared, Row, SessionFn, View};
use tessera_semantics::types::{FunctionContext, SqlType, Value};

/// The version string `@@VERSION` returns.
pub const VERSION: &str =
    concat!("tessera ", env!("CARGO_PKG_VERSION"), " - a SQL Server compatible database server (TDS 7.4)\n\tLinux");

/// The server's (and every database's) collation.
pub const DEFAULT_COLLATION: &str = "SQL_Latin1_General_CP1_CI_AS";

/// A database's catalog snapshot and the lock that serialises its DDL.
struct DbCatalog {
    /// The database's name as registered, and its id (DB_ID).
    database: Arc<str>,
    database_id: u32,
    current: RwLock<Arc<Catalog>>,
    ddl: Mutex<()>,
    /// Set when the database is dropped or restored: a session's memo of this entry is
    /// stale.
    forgotten: AtomicBool,
}

impl DbCatalog {
    fn snapshot(&self) -> CatalogOf {
        CatalogOf {
            database: self.database.clone(),
            database_id: self.database_id,
            catalog: self.current.read().clone(),
        }
    }
}

/// A session's memo of the catalog entry of the database it last asked about (usually its
/// current one), so that finding a statement's plan takes no instance-wide lock.
#[derive(Default)]
pub struct CatalogMemo(RefCell<Option<Arc<DbCatalog>>>);

/// A database's catalog snapshot, with the database's name as registered and its id.
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
    catalogs: Mutex<HashMap<String, Arc<DbCatalog>>>,
    versions: AtomicU64,
    next_spid: AtomicI32,
    next_system_spid: AtomicI32,
    /// What every open session is doing (sys.dm_exec_sessions, sp_who).
    pub sessions: Mutex<HashMap<i32, SessionInfo>>,
    /// sp_configure options.
    pub config: crate::config::Config,
    /// Server logins and their fixed server roles.
    pub logins: crate::logins::Logins,
    /// Trace flags turned on for every session (`DBCC TRACEON (n, -1)`).
    pub global_trace_flags: Mutex<std::collections::BTreeSet<i32>>,
    /// Where ERRORLOG lines go (the server installs its log; embedded use has none).
    errorlog: Mutex<Option<ErrorLogHook>>,
    /// Runs a user-defined scalar function's body (the session layer's statement loop),
    /// for expressions that call one.
    pub scalar_functions: ScalarFunctions,
    /// What statements' blocking operators hold (see `exec::Grant`).
    pub query_memory: Arc<crate::exec::QueryMemory>,
    /// This value's own Arc, for work that opens internal sessions (msdb history).
    me: std::sync::Weak<Shared>,
}

/// Runs a user-defined scalar function with its arguments and returns its value.
pub type ScalarFunctions = fn(&mut ExecCtx, &tessera_semantics::plan::UserCall, Vec<Value>) -> SqlResult<Value>;

/// Writes one ERRORLOG line for a session (spid 0: the server).
pub type ErrorLogHook = Arc<dyn Fn(i32, &str) + Send + Sync>;

/// A session as the server's views show it.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub spid: i32,
    pub login: String,
    pub host_name: String,
    pub program_name: String,
    pub database: String,
    /// Seconds since the Unix epoch.
    pub login_time: i64,
    /// "running" while a batch runs, else "sleeping".
    pub status: &'static str,
    /// The running batch's text (sys.dm_exec_requests).
    pub command: Option<String>,
    pub open_transactions: u32,
    /// The network connection, for sessions of the TDS server (sys.dm_exec_connections).
    pub connection: Option<ConnectionInfo>,
}

/// A client's TDS connection, as sys.dm_exec_connections shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The whole connection is in TLS (login-only encryption is not).
    pub encrypted: bool,
    pub client_address: String,
    pub client_port: u16,
    pub local_address: String,
    pub local_port: u16,
    /// The TDS version acknowledged at login, as LOGINACK sends it.
    pub protocol_version: u32,
    pub packet_size: u32,
}

impl Shared {
    /// The instance over `engine`, its configuration and logins loaded from master, with
    /// `scalar_functions` running the bodies of user-defined scalar functions. Starting an
    /// instance (tempdb, msdb) is `Shared::new`, in the session layer.
    pub(crate) fn assemble(
        engine: Arc<Engine>,
        config: crate::config::Config,
        logins: crate::logins::Logins,
        scalar_functions: ScalarFunctions,
    ) -> Arc<Shared> {
        Arc::new_cyclic(|me| Shared {
            engine,
            plans: PlanCache::new(config.plan_cache_bytes()),
            server_name: "tessera".to_string(),
            catalogs: Mutex::new(HashMap::new()),
            versions: AtomicU64::new(1),
            next_spid: AtomicI32::new(51),
            next_system_spid: AtomicI32::new(0),
            sessions: Mutex::new(HashMap::new()),
            config,
            logins,
            global_trace_flags: Mutex::new(std::collections::BTreeSet::new()),
            errorlog: Mutex::new(None),
            query_memory: Arc::default(),
            scalar_functions,
            me: me.clone(),
        })
    }

    /// This value as an `Arc` (it always lives in one).
    pub fn arc(&self) -> Arc<Shared> {
        self.me.upgrade().expect("Shared lives in an Arc")
    }

    /// Installs where ERRORLOG lines go.
    pub fn set_errorlog(&self, hook: ErrorLogHook) {
        *self.errorlog.lock() = Some(hook);
    }

    /// Writes a line to ERRORLOG (nothing when no log is installed).
    pub fn write_errorlog(&self, spid: i32, text: &str) {
        let hook = self.errorlog.lock().clone();
        if let Some(h) = hook {
            h(spid, text);
        }
    }

    /// Spids 1–50 belong to the server's own sessions (reused in turn).
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
        let loaded = catalog::store::load(db, self.versions.fetch_add(1, Ordering::Relaxed))?;
        let entry = Arc::new(DbCatalog {
            database: Arc::from(db.name()),
            database_id: db.id(),
            current: RwLock::new(Arc::new(loaded)),
            ddl: Mutex::new(()),
            forgotten: AtomicBool::new(false),
        });
        Ok(self.catalogs.lock().entry(key).or_insert(entry).clone())
    }

    /// The current catalog snapshot of the database `name`, without going through the
    /// engine when the catalog is loaded (every statement asks this).
    pub fn catalog_named(&self, name: &str) -> SqlResult<CatalogOf> {
        Ok(self.entry_named(name)?.snapshot())
    }

    /// As `catalog_named`, through a session's memo.
    pub fn catalog_memo(&self, memo: &CatalogMemo, name: &str) -> SqlResult<CatalogOf> {
        if let Some(entry) = &*memo.0.borrow() {
            if !entry.forgotten.load(Ordering::Acquire) && entry.database.eq_ignore_ascii_case(name) {
                return Ok(entry.snapshot());
            }
        }
        let entry = self.entry_named(name)?;
        let of = entry.snapshot();
        *memo.0.borrow_mut() = Some(entry);
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
    /// database `current` (see `ExecCtx::table`), and that database's name as the plan
    /// refers to it.
    pub fn table_for_plan(
        &self,
        memo: &CatalogMemo,
        current: &str,
        db: &DbRef,
        def: &Arc<Table>,
    ) -> SqlResult<(String, Arc<Table>)> {
        let of = self.catalog_memo(memo, db.name(current))?;
        let table = of.catalog.same_table(def).ok_or_else(|| tessera_semantics::bind::invalid_object(&def.name))?;
        Ok((of.database.to_string(), table.clone()))
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
        let entry = self.entry(db)?;
        let _ddl = entry.ddl.lock();
        let current = entry.current.read().clone();
        let (next, out) = change(&current, self.versions.fetch_add(1, Ordering::Relaxed))?;
        *entry.current.write() = Arc::new(next);
        Ok(out)
    }

    /// Forgets a database's catalog (after DROP DATABASE).
    pub fn forget(&self, db: &str) {
        if let Some(entry) = self.catalogs.lock().remove(&db.to_lowercase()) {
            entry.forgotten.store(true, Ordering::Release);
        }
    }
}

impl Catalogs for Shared {
    fn exists(&self, database: &str) -> bool {
        self.engine.exists(database)
    }

    fn catalog(&self, database: &str) -> SqlResult<(Arc<str>, Arc<Catalog>)> {
        let of = self.catalog_named(database)?;
        Ok((of.database, of.catalog))
    }

    fn system_view(&self, schema: &str, name: &str) -> Option<View> {
        crate::sysviews::lookup(schema, name)
    }

    fn module_definition(&self, text: &str) -> SqlResult<Arc<CachedBatch<Prepared>>> {
        self.plans.get_or_parse(text, tessera_syntax::parser::parse_batch)
    }
}

/// `SET LOCK_TIMEOUT` milliseconds as a wait limit: -1 (or any negative) waits forever.
pub fn lock_timeout(ms: i64) -> Option<std::time::Duration> {
    u64::try_from(ms).ok().map(std::time::Duration::from_millis)
}

/// Session options set with `SET`.
#[derive(Clone, Debug)]
pub struct Options {
    pub nocount: bool,
    pub xact_abort: bool,
    pub implicit_transactions: bool,
    pub ansi_nulls: bool,
    pub quoted_identifier: bool,
    pub concat_null_yields_null: bool,
    pub arithabort: bool,
    pub ansi_warnings: bool,
    /// `SET FMTONLY ON`: queries return their column metadata and no rows; data
    /// modifications are not carried out (freebcp and older drivers ask result shapes so).
    pub fmtonly: bool,
    /// `SET SHOWPLAN_TEXT`, `SET STATISTICS IO`, `SET STATISTICS TIME` (session/showplan.rs,
    /// statistics.rs).
    pub showplan_text: bool,
    pub statistics_io: bool,
    pub statistics_time: bool,
    pub textsize: i64,
    pub lock_timeout: i64,
    pub rowcount: i64,
    pub datefirst: i64,
    pub dateformat: String,
    pub language: String,
    pub isolation_level: String,
    /// The table (database, object id) with IDENTITY_INSERT ON, if any.
    pub identity_insert: Option<(String, i32)>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            nocount: false,
            xact_abort: false,
            implicit_transactions: false,
            ansi_nulls: true,
            quoted_identifier: true,
            concat_null_yields_null: true,
            arithabort: true,
            ansi_warnings: true,
            fmtonly: false,
            showplan_text: false,
            statistics_io: false,
            statistics_time: false,
            textsize: -1,
            lock_timeout: -1,
            rowcount: 0,
            datefirst: 7,
            dateformat: "mdy".to_string(),
            language: "us_english".to_string(),
            isolation_level: "READ COMMITTED".to_string(),
            identity_insert: None,
        }
    }
}

/// The session's transactions: one storage transaction per database touched.
#[derive(Default)]
pub struct Transactions {
    pub open: Vec<Transaction>,
    /// @@TRANCOUNT
    pub count: u32,
    /// Savepoints by name: the position in every open transaction.
    pub savepoints: Vec<(String, Vec<(String, Savepoint)>)>,
    /// Where the running statement started in each transaction (statement rollback).
    pub statement_marks: Vec<(String, Savepoint)>,
    /// Set when an error doomed the transaction (XACT_ABORT): it can only roll back.
    pub doomed: bool,
    /// Delayed durability requested by `COMMIT … WITH (DELAYED_DURABILITY = ON)`.
    pub delayed: bool,
    /// The name given to the outermost BEGIN TRANSACTION.
    pub name: Option<String>,
}

impl Transactions {
    fn position(&self, db: &str) -> Option<usize> {
        self.open.iter().position(|t| t.database().name().eq_ignore_ascii_case(db))
    }

    /// Marks the start of a statement in every open transaction.
    pub fn mark_statement(&mut self) {
        self.statement_marks = self.open.iter().map(|t| (t.database().name().to_string(), t.savepoint())).collect();
    }

    /// Ends the running statement's locks in every open transaction (statement-duration
    /// locks — schema stability, update locks not converted to X — are released). Called
    /// for top-level statements only: a statement inside a procedure or function keeps
    /// them until the statement that called it ends.
    pub fn end_statement(&mut self) {
        for t in &mut self.open {
            t.end_statement();
        }
    }

    /// Sets how long every open transaction's lock requests wait (`SET LOCK_TIMEOUT`).
    pub fn set_lock_timeout(&mut self, ms: i64) {
        for t in &mut self.open {
            t.set_lock_timeout(lock_timeout(ms));
        }
    }

    /// Undoes the running statement's changes, keeping the transactions open.
    pub fn rollback_statement(&mut self) -> SqlResult<()> {
        for (db, mark) in std::mem::take(&mut self.statement_marks) {
            if let Some(i) = self.position(&db) {
                self.open[i].rollback_to(mark)?;
            }
        }
        Ok(())
    }

    pub fn commit_all(&mut self, delayed: bool) -> SqlResult<()> {
        let mut first_error = None;
        for t in self.open.drain(..) {
            if let Err(e) = t.commit_with(delayed) {
                first_error.get_or_insert(SqlError::from(e));
            }
        }
        self.reset();
        first_error.map_or(Ok(()), Err)
    }

    pub fn rollback_all(&mut self) -> SqlResult<()> {
        let mut first_error = None;
        for t in self.open.drain(..) {
            if let Err(e) = t.rollback() {
                first_error.get_or_insert(SqlError::from(e));
            }
        }
        self.reset();
        first_error.map_or(Ok(()), Err)
    }

    fn reset(&mut self) {
        self.count = 0;
        self.savepoints.clear();
        self.statement_marks.clear();
        self.doomed = false;
        self.delayed = false;
        self.name = None;
    }

    pub fn savepoint(&mut self, name: &str) {
        let marks = self.open.iter().map(|t| (t.database().name().to_string(), t.savepoint())).collect();
        self.savepoints.push((name.to_string(), marks));
    }

    /// Rolls back to the newest savepoint called `name`; false if there is none.
    pub fn rollback_to(&mut self, name: &str) -> SqlResult<bool> {
        let Some(pos) = self.savepoints.iter().rposition(|(n, _)| n.eq_ignore_ascii_case(name)) else {
            return Ok(false);
        };
        let marks = self.savepoints[pos].1.clone();
        self.savepoints.truncate(pos + 1);
        for t in &mut self.open {
            let mark = marks.iter().find(|(db, _)| t.database().name().eq_ignore_ascii_case(db)).map(|(_, m)| *m);
            match mark {
                Some(m) => t.rollback_to(m)?,
                // Begun after the savepoint: everything in it is after the savepoint.
                None => t.rollback_to(Savepoint::START)?,
            }
        }
        Ok(true)
    }
}

/// The state of one connection.
pub struct SessionState {
    pub spid: i32,
    pub database: String,
    pub catalog_memo: CatalogMemo,
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
    /// `#name` (lower-cased) → the real name of this session's temp table in tempdb.
    pub temp_tables: HashMap<String, String>,
    /// The error being handled by the innermost CATCH block.
    pub caught: Option<SqlError>,
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
    /// What the last `INSERT BULK` announced, until the network layer takes it for the
    /// BULK_LOAD message that follows (`Session::take_bulk_target`).
    pub bulk_target: Option<crate::dml::BulkTarget>,
    /// Application locks the session owns (`sp_getapplock @LockOwner = 'Session'`):
    /// (database, name hash).
    pub app_locks: Vec<(String, u64)>,
    next_handle: i32,
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
            functions: FunctionContext::default(),
            cancel: Arc::new(AtomicBool::new(false)),
            temp_tables: HashMap::new(),
            catalog_memo: CatalogMemo::default(),
            caught: None,
            null_eliminated: false,
            host_name: String::new(),
            program_name: String::new(),
            trace_flags: std::collections::BTreeSet::new(),
            prepared: HashMap::new(),
            bulk_rows: None,
            bulk_target: None,
            app_locks: Vec::new(),
            next_handle: 1,
        }
    }

    /// Whether a trace flag is on for this session (or globally).
    pub fn has_trace_flag(&self, shared: &Shared, flag: i32) -> bool {
        self.trace_flags.contains(&flag) || shared.global_trace_flags.lock().contains(&flag)
    }

    /// The session's transaction in `db`, begun on first use.
    pub fn transaction(&mut self, shared: &Shared, db: &str) -> SqlResult<&mut Transaction> {
        if let Some(i) = self.txns.position(db) {
            return Ok(&mut self.txns.open[i]);
        }
        let database = shared.database(db)?;
        let mut t = database.begin();
        // Trace flag 652: scans read no pages ahead.
        t.set_read_ahead(!self.has_trace_flag(shared, 652));
        t.set_lock_timeout(lock_timeout(self.options.lock_timeout));
        t.set_cancel(self.cancel.clone());
        let txns = &mut self.txns;
        txns.statement_marks.push((database.name().to_string(), t.savepoint()));
        txns.open.push(t);
        Ok(txns.open.last_mut().expect("just pushed"))
    }

    /// A new sp_prepare handle.
    pub fn next_prepared_handle(&mut self) -> i32 {
        let h = self.next_handle;
        self.next_handle = self.next_handle.wrapping_add(1).max(1);
        h
    }
}

impl SessionNames for SessionState {
    fn database(&self) -> &str {
        &self.database
    }

    fn temp_table(&self, name: &str) -> Option<&str> {
        self.temp_tables.get(name).map(String::as_str)
    }

    fn ansi_nulls(&self) -> bool {
        self.options.ansi_nulls
    }

    fn concat_null_yields_null(&self) -> bool {
        self.options.concat_null_yields_null
    }

    fn identity_insert(&self) -> Option<(&str, i32)> {
        self.options.identity_insert.as_ref().map(|(db, id)| (db.as_str(), *id))
    }

    fn dateformat(&self) -> &str {
        &self.options.dateformat
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
    /// The current round of each running recursive CTE, by work table id.
    pub work_tables: HashMap<usize, Vec<Row>>,
    /// The statement's memory grant, made when an operator first needs it.
    grant: Option<Arc<crate::exec::Grant>>,
}

impl<'a> ExecCtx<'a> {
    pub fn new(shared: &'a Shared, session: &'a mut SessionState) -> ExecCtx<'a> {
        session.functions.set_now(std::time::SystemTime::now());
        tessera_semantics::types::set_session_date_format(&session.options.dateformat);
        ExecCtx {
            shared,
            session,
            outer: Vec::new(),
            subquery_cache: HashMap::new(),
            subqueries_streamed: Default::default(),
            work_tables: HashMap::new(),
            grant: None,
        }
    }

    /// The statement's memory grant (see `exec::Grant`).
    pub fn grant(&mut self) -> Arc<crate::exec::Grant> {
        let shared = self.shared;
        self.grant.get_or_insert_with(|| crate::exec::Grant::new(shared.query_memory.clone())).clone()
    }

    pub fn var(&self, slot: usize) -> &Value {
        &self.session.vars[slot]
    }

    pub fn check_cancel(&self) -> SqlResult<()> {
        if self.session.cancel.load(Ordering::Relaxed) {
            return Err(SqlError::new(3617, "The query was cancelled.").with_severity(25));
        }
        Ok(())
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
    pub fn table(&self, db: &DbRef, def: &Arc<Table>) -> SqlResult<(String, Arc<Table>)> {
        self.shared.table_for_plan(&self.session.catalog_memo, &self.session.database, db, def)
    }

    pub fn row_schema(&self, table: &Table) -> SqlResult<tessera_access::row::RowSchema> {
        crate::exec::row_schema(table)
    }

    fn catalog_of(&self, db: &str) -> SqlResult<Arc<Catalog>> {
        let database = self.shared.database(db)?;
        self.shared.catalog(&database)
    }

    /// Resolves `name`, `schema.name` or `db.schema.name` to (database, object).
    fn object(&self, name: &str) -> Option<(String, Object)> {
        let parts: Vec<&str> = name.split('.').map(|p| p.trim_matches(|c| c == '[' || c == ']')).collect();
        let (db, schema, obj) = match parts.as_slice() {
            [o] => (self.session.database.clone(), "dbo", *o),
            [s, o] => (self.session.database.clone(), *s, *o),
            [d, s, o] => (d.to_string(), if s.is_empty() { "dbo" } else { s }, *o),
            _ => return None,
        };
        if let Some(real) = obj.starts_with('#').then(|| self.session.temp_tables.get(&obj.to_lowercase())).flatten() {
            let cat = self.catalog_of("tempdb").ok()?;
            return cat.lookup("dbo", real).cloned().map(|o| ("tempdb".to_string(), o));
        }
        let cat = self.catalog_of(&db).ok()?;
        cat.lookup(schema, obj).cloned().map(|o| (db, o))
    }

    /// IDENT_CURRENT: the last identity value of a table, or its seed while none was made.
    fn ident_current(&mut self, name: Option<String>) -> SqlResult<Value> {
        let Some((db, Object::Table(table))) = name.and_then(|n| self.object(&n)) else { return Ok(Value::Null) };
        let Some(col) = table.identity_column() else { return Ok(Value::Null) };
        crate::dml::load_counters(self, &db, &table)?;
        let (seed, inc) = table.columns[col].identity.expect("identity column");
        let v = table.counters.identity.load(Ordering::Relaxed);
        let v = if v == seed - inc { seed } else { v };
        Ok(Value::Decimal { value: i128::from(v), scale: 0 })
    }

    pub fn session_function(&mut self, func: &SessionFn, args: &[Value]) -> SqlResult<Value> {
        let s = &*self.session;
        let text = |v: &Value| match v {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        };
        Ok(match func {
            SessionFn::RowCount => Value::Int(s.rowcount),
            SessionFn::Identity => s.identity.clone().unwrap_or(Value::Null),
            SessionFn::ScopeIdentity => s.scope_identity.clone().unwrap_or(Value::Null),
            SessionFn::Error => Value::Int(i64::from(s.error)),
            SessionFn::TranCount => Value::Int(i64::from(s.txns.count)),
            SessionFn::Spid => Value::Int(i64::from(s.spid)),
            SessionFn::NestLevel => Value::Int(i64::from(s.nest_level)),
            SessionFn::Version => Value::str(VERSION),
            SessionFn::ServerName | SessionFn::ServiceName => Value::str(&self.shared.server_name),
            SessionFn::DbName => match args.first() {
                None => Value::str(&s.database),
                Some(Value::Int(id)) => self.database_name(*id).map_or(Value::Null, |n| Value::str(&n)),
                Some(_) => Value::Null,
            },
            SessionFn::DbId => match args.first() {
                None => self.database_id(&s.database.clone()),
                Some(v) => text(v).map_or(Value::Null, |n| self.database_id(&n)),
            },
            SessionFn::DbNameOf | SessionFn::DbIdOf => Value::Null,
            SessionFn::ObjectId => match args.first().and_then(text) {
                Some(n) => self.object(&n).map_or(Value::Null, |(_, o)| Value::Int(i64::from(o.id()))),
                None => Value::Null,
            },
            SessionFn::ObjectName => match args.first() {
                Some(Value::Int(id)) => {
                    let db = match args.get(1) {
                        Some(Value::Int(dbid)) => self.database_name(*dbid),
                        _ => Some(s.database.clone()),
                    };
                    db.and_then(|d| self.catalog_of(&d).ok())
                        .and_then(|c| c.by_id(*id as i32).map(|o| Value::str(o.name())))
                        .unwrap_or(Value::Null)
                }
                _ => Value::Null,
            },
            SessionFn::SchemaName => match args.first() {
                None | Some(Value::Int(1)) => Value::str("dbo"),
                Some(Value::Int(2)) => Value::str("guest"),
                Some(Value::Int(3)) => Value::str("INFORMATION_SCHEMA"),
                Some(Value::Int(4)) => Value::str("sys"),
                _ => Value::Null,
            },
            SessionFn::TypeName => match args.first() {
                Some(Value::Int(id)) => crate::sysviews::type_name(*id).map_or(Value::Null, Value::str),
                _ => Value::Null,
            },
            SessionFn::TypeId => match args.first().and_then(text) {
                Some(n) => crate::sysviews::type_id(&n).map_or(Value::Null, Value::Int),
                None => Value::Null,
            },
            SessionFn::ColLength => match (args.first().and_then(text), args.get(1).and_then(text)) {
                (Some(t), Some(c)) => match self.object(&t) {
                    Some((_, Object::Table(table))) => match table.column(&c) {
                        Some(i) => Value::Int(column_length(&table.columns[i].ty)),
                        None => Value::Null,
                    },
                    _ => Value::Null,
                },
                _ => Value::Null,
            },
            SessionFn::IdentCurrent => return self.ident_current(args.first().and_then(text)),
            SessionFn::ServerProperty => match args.first().and_then(text) {
                Some(p) => server_property(&p, &self.shared.server_name),
                None => Value::Null,
            },
            SessionFn::DatabasePropertyEx => match (args.first().and_then(text), args.get(1).and_then(text)) {
                (Some(db), Some(p)) => self.database_property(&db, &p),
                _ => Value::Null,
            },
            SessionFn::Language => Value::str(&s.options.language),
            SessionFn::MaxPrecision => Value::Int(38),
            SessionFn::TextSize => Value::Int(if s.options.textsize < 0 { 4096 } else { s.options.textsize }),
            SessionFn::LockTimeout => Value::Int(s.options.lock_timeout),
            SessionFn::Options => Value::Int(5496),
            SessionFn::FetchStatus => Value::Int(-1),
            SessionFn::DateFirst => Value::Int(s.options.datefirst),
            SessionFn::ProcId => Value::Int(0),
            SessionFn::XactState => Value::Int(if s.txns.count == 0 && s.txns.open.is_empty() {
                0
            } else if s.txns.doomed {
                -1
            } else {
                1
            }),
            SessionFn::ErrorNumber => s.caught.as_ref().map_or(Value::Null, |e| Value::Int(i64::from(e.number))),
            SessionFn::ErrorMessage => s.caught.as_ref().map_or(Value::Null, |e| Value::str(&e.message)),
            SessionFn::ErrorSeverity => s.caught.as_ref().map_or(Value::Null, |e| Value::Int(i64::from(e.severity))),
            SessionFn::ErrorState => s.caught.as_ref().map_or(Value::Null, |e| Value::Int(i64::from(e.state))),
            SessionFn::ErrorLine => s.caught.as_ref().map_or(Value::Null, |e| Value::Int(i64::from(e.line))),
            SessionFn::ErrorProcedure => {
                s.caught.as_ref().and_then(|e| e.procedure.as_deref()).map_or(Value::Null, Value::str)
            }
            SessionFn::SuserName => match args.first() {
                None => Value::str(&s.login),
                Some(Value::Int(id)) => self
                    .shared
                    .logins
                    .all()
                    .into_iter()
                    .find(|l| i64::from(l.principal_id) == *id)
                    .map_or(Value::Null, |l| Value::str(&l.name)),
                Some(Value::Binary(sid)) => self
                    .shared
                    .logins
                    .all()
                    .into_iter()
                    .find(|l| l.sid[..] == sid[..])
                    .map_or(Value::Null, |l| Value::str(&l.name)),
                Some(_) => Value::Null,
            },
            SessionFn::SuserId => {
                let name = args.first().and_then(text).unwrap_or_else(|| s.login.clone());
                self.shared.logins.get(&name).map_or(Value::Null, |l| Value::Int(i64::from(l.principal_id)))
            }
            SessionFn::SuserSid => {
                let name = args.first().and_then(text).unwrap_or_else(|| s.login.clone());
                self.shared.logins.get(&name).map_or(Value::Null, |l| Value::Binary(l.sid.into()))
            }
            SessionFn::UserName => Value::str("dbo"),
            SessionFn::HostName => Value::str(&s.host_name),
            SessionFn::AppName | SessionFn::ProgramName => Value::str(&s.program_name),
            SessionFn::IsSrvRoleMember => match args.first().and_then(text) {
                Some(role) if crate::logins::SERVER_ROLES.iter().any(|(_, r)| r.eq_ignore_ascii_case(&role)) => {
                    let login = args.get(1).and_then(text).unwrap_or_else(|| s.login.clone());
                    match self.shared.logins.get(&login) {
                        Some(_) => Value::Int(i64::from(self.shared.logins.is_member(&login, &role))),
                        None => Value::Null,
                    }
                }
                _ => Value::Null,
            },
            SessionFn::HasDbAccess => Value::Int(1),
        })
    }

    fn database_name(&self, id: i64) -> Option<String> {
        self.shared
            .engine
            .database_names()
            .into_iter()
            .find(|n| self.shared.database(n).map(|d| i64::from(d.id()) == id).unwrap_or(false))
    }

    fn database_id(&self, name: &str) -> Value {
        if !self.shared.engine.exists(name) {
            return Value::Null;
        }
        self.shared.database(name).map_or(Value::Null, |d| Value::Int(i64::from(d.id())))
    }

    fn database_property(&self, db: &str, prop: &str) -> Value {
        let Ok(d) = self.shared.database(db) else { return Value::Null };
        match prop.to_ascii_lowercase().as_str() {
            "recovery" => Value::str(d.options().recovery_model.name()),
            "status" => Value::str("ONLINE"),
            "updateability" => Value::str("READ_WRITE"),
            "useraccess" => Value::str("MULTI_USER"),
            "collation" => Value::str(DEFAULT_COLLATION),
            "version" => Value::str("957"),
            _ => Value::Null,
        }
    }
}

/// COL_LENGTH: bytes a column takes (-1 for max types).
fn column_length(t: &SqlType) -> i64 {
    use SqlType::*;
    match *t {
        Char(n) | VarChar(n) | Binary(n) | VarBinary(n) if n == tessera_access::row::MAX => -1,
        NChar(n) | NVarChar(n) if n == tessera_access::row::MAX => -1,
        Char(n) | VarChar(n) | Binary(n) | VarBinary(n) => i64::from(n),
        NChar(n) | NVarChar(n) => 2 * i64::from(n),
        _ => t.fixed_size().map_or(-1, |s| s as i64),
    }
}

fn server_property(name: &str, server: &str) -> Value {
    match name.to_ascii_lowercase().as_str() {
        "productversion" => Value::str("16.0.1000.6"),
        "productlevel" => Value::str("RTM"),
        "edition" => Value::str("Developer Edition (64-bit)"),
        "engineedition" => Value::str("3"),
        "servername" | "machinename" => Value::str(server),
        "instancename" => Value::Null,
        "collation" => Value::str(DEFAULT_COLLATION),
        "isclustered" | "isfulltextinstalled" | "isintegratedsecurityonly" | "ishadrenabled" => Value::str("0"),
        "processid" => Value::str(&std::process::id().to_string()),
        "productmajorversion" => Value::str("16"),
        "productminorversion" => Value::str("0"),
        _ => Value::Null,
    }
}

/// The result column type of SERVERPROPERTY and friends (sql_variant in SQL Server).
pub fn variant_type() -> SqlType {
    SqlType::NVarChar(128)
}
