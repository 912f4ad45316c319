//! A session runs batches: "execute this text; stream result sets, messages and errors".
//!
//! Running a batch:
//! 1. The plan cache gives its parsed form (parsing only on a miss).
//! 2. Variables: every DECLARE of the batch gets a slot, in text order.
//! 3. Compile: every query and data change is bound now; an error (other than an object
//!    that does not exist yet, SQL Server's deferred name resolution) stops the whole batch
//!    before anything runs, as a compile error does in SQL Server.
//! 4. Statements run in order. Each runs in the session's transactions (one per database
//!    touched), committed after the statement in autocommit mode — and only then is the
//!    statement done: its row count waits for the commit (`sink`). A failing statement is
//!    undone back to where it started; whether the batch goes on follows SQL Server:
//!    most errors end only the statement, conversion errors, deadlocks and errors under
//!    XACT_ABORT end the batch (XACT_ABORT and deadlocks also roll the transaction back),
//!    and inside TRY every error moves to CATCH.
//!
//! `Session` holds the entry points (batches here, RPCs in `rpc` and the API server
//! cursors they reach in `cursors`, bulk loads in `bulk`);
//! a `Runner` runs a batch or module body, its work split by concern: `compile` (step 3),
//! `statements` (the loop of step 4), `control`, `variables`, `transactions`, `errors`,
//! `options`, `calls`, `queries`, `definitions` (DDL statements), `admin` (server statements), `tenants` (sp_detach_db, sp_attach_db, sp_MSforeachdb), `dbcc` and `showplan` (step 4 under SET
//! SHOWPLAN_TEXT ON: plans shown, nothing run). `instance` starts the instance the
//! sessions share (`start_instance`).

mod admin;
mod application_roles;
mod bulk;
mod calls;
mod commands;
mod compile;
mod control;
mod cursors;
mod dbcc;
mod ddl_triggers;
mod definitions;
mod describe;
mod errors;
mod instance;
mod options;
mod permissions;
mod queries;
mod query_store;
mod rpc;
mod showplan;
mod sink;
mod statements;
mod table_parameters;
mod tenants;
mod transactions;
mod triggers;
mod undeclared;
mod variables;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::ddl;
use tessera_execution::runtime::{Activity, ExecCtx, SessionState, Shared};
use tessera_semantics::cache::CachedBatch;
use tessera_semantics::output::{Command, EnvChange, ResultSink};
use tessera_semantics::plan::Prepared;
use tessera_semantics::types::{SqlType, Value};
use tessera_syntax::ast;

pub use errors::format_message;
use errors::report;

pub use instance::start_instance;
pub use rpc::{RpcOutcome, RpcParam};
use variables::Frame;

pub struct Session {
    pub shared: Arc<Shared>,
    pub state: SessionState,
    /// The database the session started in (a reset returns to it).
    initial_database: String,
    /// Whom the session logged in as: a login's name, or a contained database user's name
    /// and principal id (a reset returns to it).
    initial_login: String,
    contained_user: Option<i32>,
    /// What it is doing, as the server's views show it (also in its `SessionInfo`; a
    /// system session's is listed nowhere).
    activity: Arc<parking_lot::Mutex<Activity>>,
    /// Its waits, and its running request's CPU and progress (also in its `SessionInfo`).
    waits: Arc<tessera_waits::SessionWaits>,
}

/// A request in progress (see [`Session::begin_request`]).
struct Request {
    waits: Arc<tessera_waits::SessionWaits>,
    reads_at_start: u64,
    _attached: tessera_waits::Attached,
}

impl Drop for Request {
    fn drop(&mut self) {
        let reads = tessera_execution::statistics::physical_reads().wrapping_sub(self.reads_at_start);
        self.waits.add_disk_reads(reads);
    }
}

impl Session {
    pub fn new(shared: Arc<Shared>, login: &str, database: &str) -> SqlResult<Session> {
        Session::open(shared, login, database, None)
    }

    /// A session of a contained database's user (logged in with its own password): it is
    /// that user, in that database only, for good (as an EXECUTE AS USER WITH NO REVERT).
    pub fn contained(shared: Arc<Shared>, database: &str, user: &str, user_id: i32) -> SqlResult<Session> {
        Session::open(shared, user, database, Some(user_id))
    }

    fn open(shared: Arc<Shared>, login: &str, database: &str, contained: Option<i32>) -> SqlResult<Session> {
        if !shared.engine.exists(database) {
            return Err(tessera_semantics::catalog::database_not_found(database));
        }
        let spid = shared.next_spid();
        let mut state = SessionState::new(spid, login, database);
        if let Some(user) = contained {
            state.impersonation.push(tessera_execution::runtime::Impersonation {
                previous_login: login.to_string(),
                user: Some((database.to_string(), user)),
                no_revert: true,
                database_only: true,
                nest_level: 0,
                origin: tessera_execution::runtime::ContextOrigin::ContainedLogin,
            });
        }
        if let Err(e) = tessera_execution::ddl::principals::check_access(&shared, &state, database) {
            if e.number != 916 {
                return Err(e);
            }
            return Err(msg::CANNOT_OPEN_LOGIN_DATABASE.with(&[&database]));
        }
        shared.refresh_default_schema(&mut state);
        let info = tessera_execution::runtime::SessionInfo {
            spid,
            login: login.to_string(),
            contained: contained.is_some(),
            host_name: String::new(),
            program_name: String::new(),
            login_time: tessera_semantics::catalog::now_epoch(),
            activity: Arc::new(parking_lot::Mutex::new({
                let mut a = Activity { database: database.to_string(), ..Activity::default() };
                a.settings.update(&state.options);
                a
            })),
            connection: None,
            group_id: state.group_id,
            waits: tessera_waits::SessionWaits::new(spid),
            transaction: state.txns.published.clone(),
        };
        let activity = info.activity.clone();
        let waits = info.waits.clone();
        shared.sessions.lock().insert(spid, info);
        Ok(Session {
            state,
            shared,
            initial_database: database.to_string(),
            initial_login: login.to_string(),
            contained_user: contained,
            activity,
            waits,
        })
    }

    /// A session the server runs for itself (msdb history): a system spid below 51, as
    /// SQL Server's background sessions have, and not listed among user sessions.
    pub fn system(shared: Arc<Shared>, database: &str) -> SqlResult<Session> {
        if !shared.engine.exists(database) {
            return Err(tessera_semantics::catalog::database_not_found(database));
        }
        let spid = shared.next_system_spid();
        Ok(Session {
            state: SessionState::new(spid, "sa", database),
            shared,
            initial_database: database.to_string(),
            initial_login: "sa".to_string(),
            contained_user: None,
            activity: Arc::default(),
            waits: tessera_waits::SessionWaits::new(spid),
        })
    }

    pub fn database(&self) -> &str {
        &self.state.database
    }

    /// Tells the server's views who the client is (from the login).
    pub fn set_client(&mut self, host_name: &str, program_name: &str) {
        self.state.host_name = host_name.to_string();
        self.state.program_name = program_name.to_string();
        if let Some(info) = self.shared.sessions.lock().get_mut(&self.state.spid) {
            info.host_name = host_name.to_string();
            info.program_name = program_name.to_string();
        }
    }

    /// Puts the session in its Resource Governor workload group (at login, once the
    /// client's names are known): the group the classifier function in force names, run
    /// as the server runs it; the default group without a classifier, or when it fails or
    /// names no group.
    pub fn classify(&mut self) {
        let rg = &self.shared.resource_governor;
        let group = match rg.classifier() {
            None => tessera_governance::resource_governor::DEFAULT_ID,
            Some(c) => {
                let quote = |n: &str| format!("[{}]", n.replace(']', "]]"));
                let text = format!("SELECT [master].{}.{}()", quote(&c.schema), quote(&c.name));
                let mut out = tessera_semantics::output::Collected::default();
                self.state.classifying = true;
                self.execute(&text, &mut out);
                self.state.classifying = false;
                // The session's first batch sees a fresh @@ERROR and @@ROWCOUNT.
                self.state.error = 0;
                self.state.rowcount = 0;
                let answer = out.result_sets.first().and_then(|(_, rows)| rows.first()).and_then(|r| r.first());
                let name = match answer {
                    Some(Value::Str(s)) => Some(s.trim_end().to_string()),
                    _ => None,
                };
                self.shared.resource_governor.group_for(name.as_deref())
            }
        };
        self.state.group_id = group;
        if let Some(info) = self.shared.sessions.lock().get_mut(&self.state.spid) {
            info.group_id = group;
        }
    }

    /// Records the session's network connection (sys.dm_exec_connections).
    pub fn set_connection(&mut self, connection: tessera_execution::runtime::ConnectionInfo) {
        if let Some(info) = self.shared.sessions.lock().get_mut(&self.state.spid) {
            info.connection = Some(connection);
        }
    }

    /// A request begins: the views show it running `text`, and the thread works for this
    /// session (its waits, CPU and disk reads are the session's) until the guard drops.
    fn begin_request(&self, text: &str) -> Request {
        self.publish(Some(text));
        Request {
            waits: self.waits.clone(),
            reads_at_start: tessera_execution::statistics::physical_reads(),
            _attached: tessera_waits::attach(&self.waits),
        }
    }

    fn publish(&self, running: Option<&str>) {
        let mut activity = self.activity.lock();
        activity.database.clone_from(&self.state.database);
        activity.running = running.is_some();
        if let Some(text) = running {
            activity.command.clear();
            activity.command.push_str(text);
            activity.start_ms = tessera_execution::runtime::now_ms();
        }
        activity.open_transactions = self.state.txns.count;
        activity.settings.update(&self.state.options);
    }

    /// A new session for the same client, as a pooled connection's reuse asks (TDS
    /// RESETCONNECTION; the caller closes this one): who logged in (the login, or the
    /// contained database user with its context), in the database it logged in to.
    ///
    /// Error 18059 (severity 20: the connection ends) when the session has since taken
    /// another security context, by EXECUTE AS or sp_setapprole: as SQL Server does, a
    /// connection is not reset under an identity other than the one that opened it.
    pub fn fresh(&self) -> SqlResult<Session> {
        use tessera_execution::runtime::ContextOrigin;
        if self.state.impersonation.iter().any(|c| c.origin != ContextOrigin::ContainedLogin) {
            return Err(msg::IMPERSONATED_RESET_DROPPED.err());
        }
        Session::open(self.shared.clone(), &self.initial_login, &self.initial_database, self.contained_user)
    }

    /// Ends the session: closes its cursors, rolls back an open transaction and drops its
    /// temp tables.
    pub fn close(&mut self) {
        self.state.cursors.clear();
        let _ = self.state.txns.rollback_all();
        tessera_execution::sysprocs::applock::release_session_locks(&mut ExecCtx::new(&self.shared, &mut self.state));
        let names: Vec<String> = self.state.temp_tables.keys().cloned().collect();
        for n in names {
            let name = ast::ObjectName(vec![ast::Ident::new(n)]);
            let mut ctx = ExecCtx::new(&self.shared, &mut self.state);
            let _ = ddl::drop_table(&mut ctx, &name, true);
        }
    }

    /// Writes what every database's Query Store has pending (before the engine shuts
    /// down).
    pub fn flush_query_stores(&self) {
        tessera_execution::query_store_flusher::flush_all(&self.shared);
    }

    /// Runs one batch (the text between two GO lines); true if it raised an error.
    /// Whether an error of severity 20 or more ended the session's last request: the
    /// server sends the response, then closes the connection.
    pub fn must_close(&self) -> bool {
        self.state.fatal_error
    }

    pub fn execute(&mut self, text: &str, sink: &mut dyn ResultSink) -> bool {
        let mut watch = ErrorWatch { inner: sink, failed: false };
        let _request = self.begin_request(text);
        match self.admit() {
            Ok(_slot) => {
                self.execute_inner(text, &mut watch);
                self.release();
            }
            Err(e) => {
                watch.message(&e);
                self.state.error = e.number;
            }
        }
        self.publish(None);
        watch.failed
    }

    /// A turn to run a request in the session's database, waiting for one when the
    /// database limits how many run at once, and the charges of its use against the
    /// database's limits (`tessera_governance::governor`), ended by [`Session::release`].
    pub(crate) fn admit(&mut self) -> SqlResult<Vec<tessera_governance::governor::RequestSlot>> {
        let group = self.shared.resource_governor.governors(self.state.group_id);
        let limited = self.shared.governors.any();
        if group.is_empty() && !limited {
            return Ok(Vec::new());
        }
        if !group.is_empty() {
            self.state.query_pool = self.shared.resource_governor.memory_share(self.state.group_id);
        }
        let db = self.shared.database_memo(&self.state.catalog_memo, &self.state.database)?;
        let database = self.shared.governors.get(db.id()).filter(|g| limited && g.paces());
        if database.is_none() && group.is_empty() {
            // Limits elsewhere, none here: nothing to charge (no CPU clock to read).
            return Ok(Vec::new());
        }
        let in_transaction = self.state.txns.count > 0;
        // The database's gate first, then the group's and the pool's: one order for all.
        let slots = database
            .iter()
            .chain(&group)
            .map(|g| g.enter(in_transaction, &self.state.cancel))
            .collect::<SqlResult<Vec<_>>>()?;
        self.state.pacer = Some(tessera_governance::governor::Pacer::start(database, group, db));
        Ok(slots)
    }

    /// Ends the request's charges against its database's limits.
    pub(crate) fn release(&mut self) {
        if let Some(pacer) = self.state.pacer.take() {
            pacer.finish();
        }
        self.state.query_pool = None;
    }

    fn execute_inner(&mut self, text: &str, sink: &mut dyn ResultSink) {
        self.state.cancel.store(false, Ordering::Relaxed);
        // SET STATISTICS TIME ON when the batch starts: its compile time is reported.
        let watch = self.state.options.statistics_time.then(tessera_execution::statistics::Stopwatch::start);
        let shared = self.shared.clone();
        let cached = match shared.plans.get_or_parse(text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => {
                sink.message(&e);
                self.state.error = e.number;
                return;
            }
        };
        if let Err(e) = showplan::check_showplan_alone(&cached.batch.statements) {
            sink.message(&e);
            self.state.error = e.number;
            return;
        }
        let frame = match cached.frame() {
            Ok(f) => f,
            Err(e) => {
                sink.message(e);
                self.state.error = e.number;
                return;
            }
        };
        self.state.vars.clear();
        self.state.vars.resize(frame.decls.len(), Value::Null);
        let scope = self.state.cursors.enter_scope();
        let mut runner = Runner::new(&shared, &mut self.state, &cached, frame, sink);
        if let Err(e) = runner.compile_all(&cached.batch.statements) {
            report(&mut runner.sink, &e);
            runner.state.error = e.number;
            runner.state.cursors.leave_scope(scope);
            return;
        }
        if let Some(watch) = watch {
            runner.sink.message(&watch.compile_message());
        }
        let _ = runner.run_or_show(&cached.batch.statements);
        runner.drop_table_variables();
        runner.state.cursors.leave_scope(scope);
        runner.end_batch();
        runner.drop_pending_table_variables();
    }

    /// Runs the batch `text` whose variables `decls` are already set to `values` (RPC
    /// parameters, bulk-loaded rows).
    fn run_bound(&mut self, text: &str, decls: Vec<(String, SqlType)>, values: Vec<Value>, sink: &mut dyn ResultSink) {
        debug_assert_eq!(decls.len(), values.len());
        let shared = self.shared.clone();
        let cached = match shared.plans.get_or_parse(text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => {
                sink.message(&e);
                self.state.error = e.number;
                return;
            }
        };
        let frame = Frame::with_decls(decls);
        self.state.vars = values;
        let scope = self.state.cursors.enter_scope();
        let mut runner = Runner::new(&shared, &mut self.state, &cached, &frame, sink);
        let _ = runner.run_or_show(&cached.batch.statements);
        runner.drop_table_variables();
        runner.state.cursors.leave_scope(scope);
        runner.end_batch();
        runner.drop_pending_table_variables();
    }

    /// The cancel flag a network layer sets on an attention signal.
    pub fn cancel_handle(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.state.cancel.clone()
    }
}

/// Passes results through, noting whether an error went by.
struct ErrorWatch<'s> {
    inner: &'s mut dyn ResultSink,
    failed: bool,
}

impl ResultSink for ErrorWatch<'_> {
    fn columns(&mut self, columns: &[tessera_semantics::output::OutputColumn]) {
        self.inner.columns(columns);
    }
    fn cursor_columns(
        &mut self,
        columns: &[tessera_semantics::output::OutputColumn],
        origins: &tessera_semantics::output::ColumnOrigins,
    ) {
        self.inner.cursor_columns(columns, origins);
    }
    fn order(&mut self, columns: &[u16]) {
        self.inner.order(columns);
    }
    fn row(&mut self, row: &[Value]) {
        self.inner.row(row);
    }
    fn takes_stored_rows(&self) -> bool {
        self.inner.takes_stored_rows()
    }
    fn stored_row(&mut self, row: &tessera_semantics::output::StoredRow<'_>) {
        self.inner.stored_row(row);
    }
    fn done(&mut self, count: Option<u64>, command: Command) {
        self.inner.done(count, command);
    }
    fn message(&mut self, message: &SqlError) {
        self.failed |= message.severity > 10;
        self.inner.message(message);
    }
    fn env_change(&mut self, change: &EnvChange) {
        self.inner.env_change(change);
    }
    fn return_status(&mut self, status: i32) {
        self.inner.return_status(status);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
        self.shared.sessions.lock().remove(&self.state.spid);
    }
}

/// How a statement ended, for the enclosing control flow.
pub(super) enum Flow {
    Next,
    Break,
    Continue,
    /// RETURN, with the procedure's return status if given.
    Return(Option<i32>),
    Goto(String),
}

/// Why a block stopped early.
pub(super) enum Stop {
    /// The batch ends; the error has been reported.
    Abort,
    /// An error inside TRY, on its way to CATCH.
    Error(SqlError),
}

struct Runner<'a> {
    shared: &'a Shared,
    state: &'a mut SessionState,
    batch: &'a CachedBatch<Prepared>,
    frame: &'a Frame,
    sink: sink::Sink<'a>,
    try_depth: usize,
    executed: u64,
    /// The procedure being run (error messages name it), None for a batch.
    procedure: Option<String>,
    /// In a scalar function: its return type, and the value RETURN gave.
    returns: Option<SqlType>,
    returned: Option<Value>,
    /// Table variables this frame declared, and the table-valued parameters it was given.
    table_vars: Vec<variables::TableVar>,
    /// A data change is running (past compilation): an error ending it is followed by
    /// "The statement has been terminated."
    changing: bool,
    /// Plans the compile phase found, by statement address with the session context they
    /// were found in: a statement's first run starts from its plan instead of finding it
    /// again (then checks it under its locks, as always). In text order, which is the
    /// order statements usually run in: the next one to run is usually the first. Inline
    /// for batches of one or two statements (most).
    compiled: smallvec::SmallVec<[(usize, compile::Checked); 2]>,
    /// The procedure or function being run (see `ModuleContext`); `None` for a batch and
    /// dynamic SQL.
    owner: Option<permissions::ModuleContext>,
    /// A trigger, or a statement a cursor ran, ended the batch (its error reported): the
    /// statement that ran it ends the batch too, reporting nothing more.
    nested_aborted: bool,
    /// The next `invoke` runs a trigger's body (which may end the transaction it began
    /// in without a 266: 3609 says so).
    invoking_trigger: bool,
}

impl<'a> Runner<'a> {
    /// A runner of a batch or module body at its start: top level, nothing run yet.
    fn new(
        shared: &'a Shared,
        state: &'a mut SessionState,
        batch: &'a CachedBatch<Prepared>,
        frame: &'a Frame,
        sink: &'a mut dyn ResultSink,
    ) -> Runner<'a> {
        Runner {
            shared,
            state,
            batch,
            frame,
            sink: sink::Sink::new(sink),
            try_depth: 0,
            executed: 0,
            procedure: None,
            returns: None,
            returned: None,
            table_vars: Vec::new(),
            changing: false,
            compiled: Default::default(),
            owner: None,
            nested_aborted: false,
            invoking_trigger: false,
        }
    }
}

impl Runner<'_> {
    /// Runs a batch's statements, or shows their plans under SET SHOWPLAN_TEXT ON.
    fn run_or_show(&mut self, stmts: &[ast::Statement]) -> Result<Flow, Stop> {
        if self.state.options.showplan_text {
            self.show_block(stmts)
        } else {
            self.run_block(stmts)
        }
    }

    fn with_ctx<T>(&mut self, f: impl FnOnce(&mut ExecCtx) -> SqlResult<T>) -> SqlResult<T> {
        let mut ctx = ExecCtx::new(self.shared, self.state);
        f(&mut ctx)
    }
}
