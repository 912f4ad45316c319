//! A session runs batches: "execute this text; stream result sets, messages and errors".
//!
//! Running a batch:
//! 1. The plan cache gives its parsed form (parsing only on a miss).
//! 2. Variables: every DECLARE of the batch gets a slot, in text order.
//! 3. Compile: every query and data change is bound now; an error (other than an object
//!    that does not exist yet, SQL Server's deferred name resolution) stops the whole batch
//!    before anything runs, as a compile error does in SQL Server.
//! 4. Statements run in order. Each runs in the session's transactions (one per database
//!    touched), committed after the statement in autocommit mode. A failing statement is
//!    undone back to where it started; whether the batch goes on follows SQL Server:
//!    most errors end only the statement, conversion errors, deadlocks and errors under
//!    XACT_ABORT end the batch (XACT_ABORT and deadlocks also roll the transaction back),
//!    and inside TRY every error moves to CATCH.

mod dbcc;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tessera_database::LockMode;

use crate::bind::{Binder, BoundQuery};
use crate::cache::{CachedBatch, Compiled};
use crate::catalog::ModuleKind;
use crate::ddl;
use crate::dml::{self, Prepared};
use crate::output::{Collected, EnvChange, ResultSink};
use crate::plan::{eval, run, Expr};
use crate::runtime::{ExecCtx, SessionState, Shared};
use crate::types::{self, SqlType, Value};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{self, AlterLoginAction, Statement, StatementKind};

/// Most statements one batch may run (loops included) before it is stopped.
const MAX_STATEMENTS_PER_BATCH: u64 = 1 << 40;

pub struct Session {
    pub shared: Arc<Shared>,
    pub state: SessionState,
    /// The database the session started in (a reset returns to it).
    initial_database: String,
}

/// How a statement ended, for the enclosing control flow.
enum Flow {
    Next,
    Break,
    Continue,
    /// RETURN, with the procedure's return status if given.
    Return(Option<i32>),
    Goto(String),
}

/// Why a block stopped early.
enum Stop {
    /// The batch ends; the error has been reported.
    Abort,
    /// An error inside TRY, on its way to CATCH.
    Error(SqlError),
}

fn info(number: i32, message: impl Into<String>) -> SqlError {
    SqlError { number, severity: 0, state: 1, message: message.into(), line: 0, procedure: None, preceding: Vec::new() }
}

/// Sends an error to the client after the errors reported before it.
fn report(sink: &mut dyn ResultSink, e: &SqlError) {
    for p in &e.preceding {
        sink.message(p);
    }
    sink.message(e);
}

/// Errors that end the batch, not just the statement (with XACT_ABORT OFF).
fn aborts_batch(e: &SqlError) -> bool {
    matches!(e.number, 208 | 217 | 245 | 241 | 242 | 8114 | 8169 | 529 | 1205 | 3617 | 701) || e.severity >= 20
}

/// Statements that start a transaction under SET IMPLICIT_TRANSACTIONS ON.
fn starts_implicit_transaction(k: &StatementKind) -> bool {
    matches!(
        k,
        StatementKind::Insert(_)
            | StatementKind::Update(_)
            | StatementKind::Delete(_)
            | StatementKind::CreateTable(_)
            | StatementKind::DropTable { .. }
            | StatementKind::AlterTable { .. }
            | StatementKind::TruncateTable(_)
            | StatementKind::CreateIndex(_)
            | StatementKind::DropIndex { .. }
            | StatementKind::BeginTransaction { .. }
    ) || matches!(k, StatementKind::Query(q) if matches!(&q.body, ast::SetExpr::Select(s) if !s.from.is_empty()))
}

/// The variables of a batch: declarations in text order, and for each statement how many
/// of them are declared before it.
struct Frame {
    decls: Vec<(String, SqlType)>,
    visible: HashMap<usize, usize>,
    /// Labels declared, and GOTOs with their lines (checked when the frame is built).
    labels: Vec<String>,
    gotos: Vec<(String, u32)>,
}

fn addr<T>(x: &T) -> usize {
    x as *const T as usize
}

impl Frame {
    fn of(batch: &ast::Batch) -> SqlResult<Frame> {
        let mut f = Frame { decls: Vec::new(), visible: HashMap::new(), labels: Vec::new(), gotos: Vec::new() };
        f.walk(&batch.statements)?;
        f.check_labels()?;
        Ok(f)
    }

    fn check_labels(&self) -> SqlResult<()> {
        for (label, line) in &self.gotos {
            if !self.labels.iter().any(|l| l.eq_ignore_ascii_case(label)) {
                return Err(SqlError::new(
                    133,
                    format!("A GOTO statement references the label '{label}' but the label has not been declared."),
                )
                .with_severity(15)
                .at_line(*line));
            }
        }
        Ok(())
    }

    /// A procedure's frame: its parameters first, then the body's declarations.
    fn of_procedure(params: &[ast::Parameter], body: &[Statement]) -> SqlResult<Frame> {
        let mut f = Frame { decls: Vec::new(), visible: HashMap::new(), labels: Vec::new(), gotos: Vec::new() };
        for p in params {
            let lower = p.name.to_lowercase();
            if f.decls.iter().any(|(n, _)| *n == lower) {
                return Err(SqlError::new(
                    134,
                    format!("The variable name '{}' has already been declared. Variable names must be unique within a query batch or stored procedure.", p.name),
                )
                .with_severity(15));
            }
            f.decls.push((lower, types::resolve_type(&p.ty, false)?));
        }
        f.walk(body)?;
        f.check_labels()?;
        Ok(f)
    }

    fn walk(&mut self, stmts: &[Statement]) -> SqlResult<()> {
        for s in stmts {
            self.visible.insert(addr(s), self.decls.len());
            match &s.kind {
                StatementKind::Declare(decls) => {
                    for d in decls {
                        let lower = d.name.to_lowercase();
                        if self.decls.iter().any(|(n, _)| *n == lower) {
                            return Err(SqlError::new(
                                134,
                                format!("The variable name '{}' has already been declared. Variable names must be unique within a query batch or stored procedure.", d.name),
                            )
                            .with_severity(15)
                            .at_line(s.line));
                        }
                        // Table variables are tables (see `ddl::declare_table_variable`), not slots.
                        if let ast::DeclarationKind::Scalar { ty, .. } = &d.kind {
                            let ty = types::resolve_type(ty, false).map_err(|e| e.at_line(s.line))?;
                            self.decls.push((lower, ty));
                        }
                    }
                    // The statement itself sees its own variables (initialisers may not,
                    // but assignments after the declaration in a DECLARE list do).
                    self.visible.insert(addr(s), self.decls.len());
                }
                StatementKind::If { then, otherwise, .. } => {
                    self.walk(std::slice::from_ref(then))?;
                    if let Some(o) = otherwise {
                        self.walk(std::slice::from_ref(o))?;
                    }
                }
                StatementKind::While { body, .. } => self.walk(std::slice::from_ref(body))?,
                StatementKind::Block(b) => self.walk(b)?,
                StatementKind::TryCatch { try_block, catch_block } => {
                    self.walk(try_block)?;
                    self.walk(catch_block)?;
                }
                StatementKind::Label(l) => self.labels.push(l.value.clone()),
                StatementKind::Goto(l) => self.gotos.push((l.value.clone(), s.line)),
                _ => {}
            }
        }
        Ok(())
    }
}

impl Session {
    pub fn new(shared: Arc<Shared>, login: &str, database: &str) -> SqlResult<Session> {
        if !shared.engine.exists(database) {
            return Err(crate::runtime::database_not_found(database));
        }
        let spid = shared.next_spid();
        let info = crate::runtime::SessionInfo {
            spid,
            login: login.to_string(),
            host_name: String::new(),
            program_name: String::new(),
            database: database.to_string(),
            login_time: crate::catalog::now_epoch(),
            status: "sleeping",
            command: None,
            open_transactions: 0,
            connection: None,
        };
        shared.sessions.lock().insert(spid, info);
        Ok(Session { state: SessionState::new(spid, login, database), shared, initial_database: database.to_string() })
    }

    /// A session the server runs for itself (msdb history): a system spid below 51, as
    /// SQL Server's background sessions have, and not listed among user sessions.
    pub fn system(shared: Arc<Shared>, database: &str) -> SqlResult<Session> {
        if !shared.engine.exists(database) {
            return Err(crate::runtime::database_not_found(database));
        }
        let spid = shared.next_system_spid();
        Ok(Session { state: SessionState::new(spid, "sa", database), shared, initial_database: database.to_string() })
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

    /// Records the session's network connection (sys.dm_exec_connections).
    pub fn set_connection(&mut self, connection: crate::runtime::ConnectionInfo) {
        if let Some(info) = self.shared.sessions.lock().get_mut(&self.state.spid) {
            info.connection = Some(connection);
        }
    }

    fn publish(&self, running: Option<&str>) {
        if let Some(info) = self.shared.sessions.lock().get_mut(&self.state.spid) {
            info.database.clone_from(&self.state.database);
            info.status = if running.is_some() { "running" } else { "sleeping" };
            info.command = running.map(str::to_string);
            info.open_transactions = self.state.txns.count;
        }
    }

    /// Resets the session as a pooled connection's reuse asks (TDS RESETCONNECTION): the
    /// transaction rolls back, temp tables and prepared statements go, options and the
    /// database return to the login's.
    pub fn reset(&mut self) {
        self.close();
        let (spid, login) = (self.state.spid, self.state.login.clone());
        let (host, program) = (self.state.host_name.clone(), self.state.program_name.clone());
        self.state = SessionState::new(spid, &login, &self.initial_database);
        self.state.host_name = host;
        self.state.program_name = program;
    }

    /// Ends the session: rolls back an open transaction and drops its temp tables.
    pub fn close(&mut self) {
        let _ = self.state.txns.rollback_all();
        crate::applock::release_session_locks(&mut ExecCtx::new(&self.shared, &mut self.state));
        let names: Vec<String> = self.state.temp_tables.keys().cloned().collect();
        for n in names {
            let name = ast::ObjectName(vec![ast::Ident::new(n)]);
            let mut ctx = ExecCtx::new(&self.shared, &mut self.state);
            let _ = ddl::drop_table(&mut ctx, &name, true);
        }
    }

    /// Runs one batch (the text between two GO lines); true if it raised an error.
    pub fn execute(&mut self, text: &str, sink: &mut dyn ResultSink) -> bool {
        let mut watch = ErrorWatch { inner: sink, failed: false };
        self.publish(Some(text));
        self.execute_inner(text, &mut watch);
        self.publish(None);
        watch.failed
    }

    fn execute_inner(&mut self, text: &str, sink: &mut dyn ResultSink) {
        self.state.cancel.store(false, Ordering::Relaxed);
        let shared = self.shared.clone();
        let cached = match shared.plans.get_or_parse(&self.state.database, text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => {
                sink.message(&e);
                self.state.error = e.number;
                return;
            }
        };
        let frame = match Frame::of(&cached.batch) {
            Ok(f) => f,
            Err(e) => {
                sink.message(&e);
                self.state.error = e.number;
                return;
            }
        };
        self.state.vars = vec![Value::Null; frame.decls.len()];
        let mut runner = Runner::new(&shared, &mut self.state, &cached, &frame, sink);
        if let Err(e) = runner.compile_all(&cached.batch.statements) {
            report(runner.sink, &e);
            runner.state.error = e.number;
            return;
        }
        let _ = runner.run_block(&cached.batch.statements);
        runner.drop_table_variables();
    }

    /// Runs a remote procedure call: a stored procedure, `sp_executesql`, or a
    /// prepared-statement procedure, with typed parameter values. Result sets, messages and
    /// the return status go to `sink`; OUTPUT parameter values come back.
    pub fn execute_rpc(&mut self, procedure: &str, params: Vec<RpcParam>, sink: &mut dyn ResultSink) -> RpcOutcome {
        // The call runs as the batch `EXEC proc @a = @__rpc0, @__rpc1 OUTPUT, …` whose
        // variables hold the parameter values; the text names the types so that a cached
        // plan is only reused for the same parameter types.
        let mut text = String::from("-- rpc:");
        for p in &params {
            text.push(' ');
            text.push_str(&types::type_name(&p.ty));
        }
        text.push_str("\nEXEC ");
        text.push_str(&quote_name(procedure));
        for (i, p) in params.iter().enumerate() {
            text.push_str(if i == 0 { " " } else { ", " });
            if let Some(n) = &p.name {
                text.push_str(n);
                text.push_str(" = ");
            }
            text.push_str(&format!("@__rpc{i}"));
            if p.output {
                text.push_str(" OUTPUT");
            }
        }
        let mut watch = ErrorWatch { inner: sink, failed: false };
        self.publish(Some(&text));
        self.state.cancel.store(false, Ordering::Relaxed);
        let decls = params.iter().enumerate().map(|(i, p)| (format!("@__rpc{i}"), p.ty)).collect();
        self.run_bound(&text, decls, params.iter().map(|p| p.value.clone()).collect(), &mut watch);
        let outputs = params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.output)
            .map(|(i, p)| (p.name.clone(), self.state.vars.get(i).cloned().unwrap_or(Value::Null), p.ty))
            .collect();
        self.publish(None);
        RpcOutcome { outputs, failed: watch.failed }
    }

    /// Runs the batch `text` whose variables `decls` are already set to `values` (RPC
    /// parameters, bulk-loaded rows).
    fn run_bound(&mut self, text: &str, decls: Vec<(String, SqlType)>, values: Vec<Value>, sink: &mut dyn ResultSink) {
        debug_assert_eq!(decls.len(), values.len());
        let shared = self.shared.clone();
        let cached = match shared.plans.get_or_parse(&self.state.database, text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => {
                sink.message(&e);
                self.state.error = e.number;
                return;
            }
        };
        let frame = Frame { decls, visible: HashMap::new(), labels: Vec::new(), gotos: Vec::new() };
        self.state.vars = values;
        let mut runner = Runner::new(&shared, &mut self.state, &cached, &frame, sink);
        let _ = runner.run_block(&cached.batch.statements);
    }

    /// A bulk load (TDS `INSERT BULK` then BULK_LOAD): inserts `rows`, whose values have
    /// the types in `columns`, into those columns of `table`, with the same constraint
    /// checks as INSERT, and reports one row count. Outside a user transaction the load
    /// is one transaction: all rows or none. `keep_identity` inserts the identity values
    /// sent (bcp's KEEPIDENTITY) instead of generating them. Returns true if it failed.
    pub fn bulk_insert(
        &mut self,
        table: &str,
        columns: &[(String, SqlType)],
        rows: Vec<Vec<Value>>,
        keep_identity: bool,
        sink: &mut dyn ResultSink,
    ) -> bool {
        assert!(!columns.is_empty(), "a bulk load names its columns");
        debug_assert!(rows.iter().all(|r| r.len() == columns.len()));
        self.publish(Some("INSERT BULK"));
        let mut counted = RowCounter { inner: sink, rows: 0, failed: false };
        // The load's count is reported whatever SET NOCOUNT says.
        let nocount = std::mem::replace(&mut self.state.options.nocount, false);
        let own_transaction = self.state.txns.count == 0;
        if own_transaction {
            self.state.txns.count = 1;
        }
        // One statement for the whole load (so it can be minimally logged as a whole):
        // its text names one row of parameters, and its INSERT takes every row of the
        // load from `bulk_rows` instead (see `dml::run_insert`).
        let names: Vec<String> = columns.iter().map(|(n, _)| quote_name(n)).collect();
        let types: Vec<String> = columns.iter().map(|(_, t)| types::type_name(t)).collect();
        let identity =
            |on: &str| if keep_identity { format!("SET IDENTITY_INSERT {table} {on};\n") } else { String::new() };
        let params: Vec<String> = (0..columns.len()).map(|c| format!("@__b{c}")).collect();
        let text = format!(
            "-- bulk: {}\n{}INSERT INTO {table} ({}) VALUES ({});\n{}",
            types.join(", "),
            identity("ON"),
            names.join(", "),
            params.join(", "),
            identity("OFF")
        );
        let decls: Vec<(String, SqlType)> = params.into_iter().zip(columns.iter().map(|(_, t)| *t)).collect();
        let first = rows.first().cloned().unwrap_or_else(|| vec![Value::Null; columns.len()]);
        if !rows.is_empty() {
            self.state.bulk_rows = Some(rows);
            self.run_bound(&text, decls, first, &mut counted);
        }
        // Never left for a later statement, whatever stopped this one.
        self.state.bulk_rows = None;
        self.state.options.nocount = nocount;
        let cancelled = self.state.cancel.load(Ordering::Relaxed);
        if own_transaction {
            let ended = if counted.failed || cancelled {
                self.state.txns.rollback_all()
            } else {
                self.state.txns.commit_all(false)
            };
            if let Err(e) = ended {
                counted.message(&e);
            }
        }
        let (rows, failed) = (counted.rows, counted.failed);
        if !failed && !cancelled {
            sink.done(Some(rows), false);
        }
        self.publish(None);
        failed || cancelled
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
    fn columns(&mut self, columns: &[crate::bind::OutputColumn]) {
        self.inner.columns(columns);
    }
    fn order(&mut self, columns: &[u16]) {
        self.inner.order(columns);
    }
    fn row(&mut self, row: &[Value]) {
        self.inner.row(row);
    }
    fn done(&mut self, count: Option<u64>, result_set: bool) {
        self.inner.done(count, result_set);
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

/// Adds up the row counts of a bulk load's INSERTs (the client sees one count), passing
/// messages through.
struct RowCounter<'s> {
    inner: &'s mut dyn ResultSink,
    rows: u64,
    failed: bool,
}

impl ResultSink for RowCounter<'_> {
    fn columns(&mut self, _: &[crate::bind::OutputColumn]) {}
    fn row(&mut self, _: &[Value]) {}
    fn done(&mut self, count: Option<u64>, _: bool) {
        self.rows += count.unwrap_or(0);
    }
    fn message(&mut self, message: &SqlError) {
        self.failed |= message.severity > 10;
        self.inner.message(message);
    }
    fn env_change(&mut self, change: &EnvChange) {
        self.inner.env_change(change);
    }
    fn return_status(&mut self, _: i32) {}
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
        self.shared.sessions.lock().remove(&self.state.spid);
    }
}

/// The prepared-statement procedures, which keep state in the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PreparedProc {
    Prepare,
    Execute,
    PrepExec,
    Unprepare,
}

impl PreparedProc {
    fn lookup(name: &str) -> Option<PreparedProc> {
        Some(match name.to_ascii_lowercase().as_str() {
            "sp_prepare" => PreparedProc::Prepare,
            "sp_execute" => PreparedProc::Execute,
            "sp_prepexec" => PreparedProc::PrepExec,
            "sp_unprepare" => PreparedProc::Unprepare,
            _ => return None,
        })
    }
}

/// A parameter of a remote procedure call (TDS RPC request).
#[derive(Clone, Debug)]
pub struct RpcParam {
    /// `@name`, or None for a positional parameter.
    pub name: Option<String>,
    pub value: Value,
    pub ty: SqlType,
    pub output: bool,
}

/// What an RPC returns besides its result sets: the values of its OUTPUT parameters, in
/// the order they were given (name, value, type).
#[derive(Clone, Debug, Default)]
pub struct RpcOutcome {
    pub outputs: Vec<(Option<String>, Value, SqlType)>,
    pub failed: bool,
}

/// Discards results: a scalar function's body may not return rows.
struct Discard;

impl ResultSink for Discard {
    fn columns(&mut self, _: &[crate::bind::OutputColumn]) {}
    fn row(&mut self, _: &[Value]) {}
    fn done(&mut self, _: Option<u64>, _: bool) {}
    fn message(&mut self, _: &SqlError) {}
}

/// Runs a scalar user-defined function's body with `args` and returns its RETURN value.
pub(crate) fn call_scalar_function(
    ctx: &mut ExecCtx,
    call: &crate::plan::UserCall,
    args: Vec<Value>,
) -> SqlResult<Value> {
    let cached = ctx.shared.plans.get_or_parse(&call.db, &call.text, tessera_syntax::parser::parse_batch)?;
    let Some(StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind) else {
        return Err(crate::bind::invalid_object(&call.name));
    };
    let ast::FunctionReturns::Scalar { body, .. } = &cf.returns else {
        return Err(crate::bind::invalid_object(&call.name));
    };
    let state = &mut *ctx.session;
    if state.nest_level >= crate::modules::MAX_NESTING {
        return Err(crate::modules::nesting_error());
    }
    let frame = Frame::of_procedure(&cf.params, body)?;
    let mut vars = vec![Value::Null; frame.decls.len()];
    for (i, v) in args.into_iter().enumerate() {
        vars[i] = v;
    }
    let saved_vars = std::mem::replace(&mut state.vars, vars);
    let saved_db = std::mem::replace(&mut state.database, call.db.clone());
    state.nest_level += 1;
    let mut sink = Discard;
    let result = {
        let mut runner = Runner {
            try_depth: 1,
            procedure: Some(call.name.clone()),
            returns: Some(call.ty),
            ..Runner::new(ctx.shared, &mut *state, &cached, &frame, &mut sink)
        };
        let r = runner.compile_all(body).map(|_| runner.run_block(body));
        r.map(|flow| (flow, runner.returned.take()))
    };
    state.nest_level -= 1;
    state.database = saved_db;
    state.vars = saved_vars;
    match result? {
        (Ok(_), value) => Ok(value.unwrap_or(Value::Null)),
        (Err(Stop::Error(e)), _) => Err(e),
        (Err(Stop::Abort), _) => Err(SqlError::new(50000, format!("The function '{}' failed.", call.name))),
    }
}

struct Runner<'a> {
    shared: &'a Shared,
    state: &'a mut SessionState,
    batch: &'a CachedBatch<Prepared>,
    frame: &'a Frame,
    sink: &'a mut dyn ResultSink,
    try_depth: usize,
    executed: u64,
    /// The procedure being run (error messages name it), None for a batch.
    procedure: Option<String>,
    /// In a scalar function: its return type, and the value RETURN gave.
    returns: Option<SqlType>,
    returned: Option<Value>,
    /// Table variables this frame declared, with the mapping each one shadows.
    table_vars: Vec<(String, Option<String>)>,
    /// A data change is running (past compilation): an error ending it is followed by
    /// "The statement has been terminated."
    changing: bool,
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
            sink,
            try_depth: 0,
            executed: 0,
            procedure: None,
            returns: None,
            returned: None,
            table_vars: Vec::new(),
            changing: false,
        }
    }
}

/// An evaluated argument of EXEC or sp_executesql.
struct Argument {
    name: Option<String>,
    /// None for the DEFAULT keyword.
    value: Option<(Value, SqlType)>,
    /// `@v OUTPUT`: the caller's variable slot and type.
    output: Option<(usize, SqlType)>,
}

impl<'a> Runner<'a> {
    fn visible(&self, stmt: &Statement) -> &'a [(String, SqlType)] {
        let n = self.frame.visible.get(&addr(stmt)).copied().unwrap_or(self.frame.decls.len());
        &self.frame.decls[..n]
    }

    /// Fingerprint of the session state plans depend on: which table has IDENTITY_INSERT
    /// on, and which session's temp tables `#names` mean.
    fn context(&self) -> u64 {
        let o = &self.state.options;
        let mut h = match &o.identity_insert {
            Some((db, id)) => (*id as u32 as u64) ^ ((db.len() as u64) << 32),
            None => 0,
        };
        // Options the binder compiles into plans (constants are converted while binding).
        h ^= u64::from(!o.ansi_nulls) << 62 | u64::from(!o.concat_null_yields_null) << 63;
        h ^= match o.dateformat.as_str() {
            "dmy" | "dym" => 1 << 60,
            "ymd" | "ydm" => 1 << 61,
            _ => 0,
        };
        if !self.state.temp_tables.is_empty() {
            h ^= (self.state.spid as u64) << 40;
        }
        h
    }

    fn current_version(&self, db: &str) -> Option<u64> {
        if let Some(v) = self.shared.loaded_catalog_version(db) {
            return Some(v);
        }
        let d = self.shared.database(db).ok()?;
        self.shared.catalog(&d).ok().map(|c| c.version)
    }

    /// The compiled form of the AST node at `key`, from the plan cache or bound now.
    fn prepared(
        &mut self,
        key: usize,
        vars: &[(String, SqlType)],
        compile: impl FnOnce(&mut Binder) -> SqlResult<Prepared>,
    ) -> SqlResult<Arc<Prepared>> {
        let context = self.context();
        if let Some(p) = self.batch.plan(key, context, |db| self.current_version(db)) {
            return Ok(p);
        }
        let mut b = Binder::new(self.shared, self.state, vars);
        let prepared = compile(&mut b)?;
        let versions = std::mem::take(&mut b.deps.databases);
        let objects = Arc::from(std::mem::take(&mut b.deps.tables));
        let plan = Arc::new(prepared);
        self.batch.store(key, Compiled { versions, context, plan: plan.clone(), objects });
        Ok(plan)
    }

    fn compile_statement(&mut self, s: &Statement) -> SqlResult<Option<Arc<Prepared>>> {
        let vars = self.visible(s);
        let key = addr(s);
        Ok(Some(match &s.kind {
            StatementKind::Query(q) => {
                if let ast::SetExpr::Select(sel) = &q.body {
                    if sel.items.iter().any(|i| matches!(i, ast::SelectItem::Assign { .. })) {
                        return self.prepared(key, vars, |b| dml::compile_assign(b, sel, &q.order_by)).map(Some);
                    }
                    if sel.into.is_some() {
                        return Ok(None);
                    }
                }
                self.prepared(key, vars, |b| b.bind_query(q).map(Prepared::Query))?
            }
            StatementKind::Insert(i) => {
                self.prepared(key, vars, |b| dml::compile_insert(b, i).map(Prepared::Insert))?
            }
            StatementKind::Update(u) => {
                self.prepared(key, vars, |b| dml::compile_update(b, u).map(Prepared::Update))?
            }
            StatementKind::Delete(d) => {
                self.prepared(key, vars, |b| dml::compile_delete(b, d).map(Prepared::Delete))?
            }
            StatementKind::SetVariable { name, op, value } => {
                let sel = assign_select(name, *op, value);
                self.prepared(key, vars, |b| dml::compile_assign(b, &sel, &[]))?
            }
            _ => return Ok(None),
        }))
    }

    /// The statement's plan, with a schema-stability lock on every object it uses (held
    /// to the end of the statement, so no DDL changes them while it runs). A plan bound
    /// before a DDL that committed while the locks were awaited is bound again.
    fn compile_locked(&mut self, s: &Statement) -> SqlResult<Arc<Prepared>> {
        self.locked(addr(s), |r| Ok(r.compile_statement(s)?.expect("compiled statement")))
    }

    /// `compile` (which compiles the AST node at `key` or finds its plan), with a
    /// schema-stability lock on every object the plan uses, bound again until it is
    /// current once the locks are held.
    fn locked(
        &mut self,
        key: usize,
        compile: impl Fn(&mut Self) -> SqlResult<Arc<Prepared>>,
    ) -> SqlResult<Arc<Prepared>> {
        let mut plan = compile(self)?;
        loop {
            for (db, id) in self.batch.objects(key).iter() {
                self.state.transaction(self.shared, db)?.lock_schema(*id as u32, LockMode::SchemaStability)?;
            }
            let now = compile(self)?;
            if Arc::ptr_eq(&now, &plan) {
                return Ok(plan);
            }
            plan = now;
        }
    }

    /// Binds every statement up front; errors other than a missing object end the batch.
    fn compile_all(&mut self, stmts: &[Statement]) -> SqlResult<()> {
        for s in stmts {
            match &s.kind {
                StatementKind::If { then, otherwise, .. } => {
                    self.compile_all(std::slice::from_ref(then))?;
                    if let Some(o) = otherwise {
                        self.compile_all(std::slice::from_ref(o))?;
                    }
                }
                StatementKind::While { body, .. } => self.compile_all(std::slice::from_ref(body))?,
                StatementKind::Block(b) => self.compile_all(b)?,
                StatementKind::TryCatch { try_block, catch_block } => {
                    self.compile_all(try_block)?;
                    self.compile_all(catch_block)?;
                }
                // A USE changes what later names mean: stop compiling ahead there.
                StatementKind::Use(_) => return Ok(()),
                _ => match self.compile_statement(s) {
                    Ok(_) => {}
                    // Deferred name resolution: the object may be created earlier in the
                    // batch; the statement binds again when it runs.
                    Err(e) if matches!(e.number, 208 | 911 | 1087) => {}
                    // IDENTITY_INSERT is checked against the setting when the statement runs.
                    Err(e) if matches!(e.number, 544 | 545 | 8101) => {}
                    Err(_) if mentions_temp_table(s) => {}
                    Err(e) => return Err(e.at_line(s.line)),
                },
            }
        }
        Ok(())
    }

    fn scalar(&mut self, stmt: &Statement, e: &ast::Expr, predicate: bool) -> SqlResult<(Expr, SqlType)> {
        // A condition or value that reads tables (IF EXISTS (SELECT …)) holds schema
        // stability on them as a statement does.
        let p = self.locked(addr(e), |r| {
            let vars = r.visible(stmt);
            r.prepared(addr(e), vars, |b| {
                let (x, t) = if predicate { (b.bind_predicate(e)?, SqlType::Bit) } else { b.bind_expr(e)? };
                Ok(Prepared::Query(BoundQuery {
                    plan: crate::plan::Plan::Values(vec![vec![x]]),
                    columns: vec![crate::bind::OutputColumn { name: String::new(), ty: t, nullable: true }],
                }))
            })
        })?;
        match &*p {
            Prepared::Query(BoundQuery { plan: crate::plan::Plan::Values(rows), columns }) => {
                Ok((rows[0][0].clone(), columns[0].ty))
            }
            _ => unreachable!("scalar plans are single values"),
        }
    }

    fn eval_scalar(&mut self, stmt: &Statement, e: &ast::Expr) -> SqlResult<(Value, SqlType)> {
        let (x, t) = self.scalar(stmt, e, false)?;
        let mut ctx = ExecCtx::new(self.shared, self.state);
        Ok((eval(&x, &[], &mut ctx)?, t))
    }

    fn condition(&mut self, stmt: &Statement, e: &ast::Expr) -> SqlResult<bool> {
        let (x, _) = self.scalar(stmt, e, true)?;
        let mut ctx = ExecCtx::new(self.shared, self.state);
        crate::plan::is_true(&x, &[], &mut ctx)
    }

    fn run_block(&mut self, stmts: &[Statement]) -> Result<Flow, Stop> {
        let mut i = 0;
        while i < stmts.len() {
            let s = &stmts[i];
            let flow = self.run_one(s)?;
            match flow {
                Flow::Next => i += 1,
                Flow::Goto(label) => match stmts
                    .iter()
                    .position(|x| matches!(&x.kind, StatementKind::Label(l) if l.value.eq_ignore_ascii_case(&label)))
                {
                    Some(p) => i = p + 1,
                    None => return Ok(Flow::Goto(label)),
                },
                other => return Ok(other),
            }
        }
        Ok(Flow::Next)
    }

    /// Runs one statement with SQL Server's error handling around it.
    fn run_one(&mut self, s: &Statement) -> Result<Flow, Stop> {
        self.executed += 1;
        if self.executed > MAX_STATEMENTS_PER_BATCH {
            let e = SqlError::new(50000, "The batch ran too many statements.").at_line(s.line);
            self.sink.message(&e);
            return Err(Stop::Abort);
        }
        let control = matches!(
            s.kind,
            StatementKind::If { .. }
                | StatementKind::While { .. }
                | StatementKind::Block(_)
                | StatementKind::TryCatch { .. }
        );
        if control {
            return self.run_control(s);
        }
        match &s.kind {
            StatementKind::Execute(e) => return self.run_execute(s, e),
            StatementKind::ExecuteString(parts) => return self.run_dynamic(s, parts),
            _ => {}
        }
        if self.state.options.implicit_transactions
            && self.state.txns.count == 0
            && starts_implicit_transaction(&s.kind)
        {
            self.state.txns.count = 1;
        }
        self.state.txns.mark_statement();
        self.state.null_eliminated = false;
        match self.exec(s) {
            Ok(flow) => {
                if self.state.nest_level == 0 {
                    self.state.txns.end_statement();
                }
                if self.state.txns.count == 0 {
                    if let Err(e) = self.state.txns.commit_all(false) {
                        return self.fail(s, e);
                    }
                }
                if !matches!(s.kind, StatementKind::Declare(_) | StatementKind::Label(_)) {
                    self.state.error = 0;
                }
                Ok(flow)
            }
            Err(e) => self.fail(s, e),
        }
    }

    /// A statement failed: undo it, report or hand the error to CATCH, and decide whether
    /// the batch goes on.
    fn fail(&mut self, s: &Statement, e: SqlError) -> Result<Flow, Stop> {
        // An error that already names its procedure keeps its line (SQL Server reports
        // parameter errors at line 0 of the procedure).
        let mut e = if e.procedure.is_some() { e } else { e.at_line(s.line) };
        if e.procedure.is_none() && e.severity > 10 {
            e.procedure = self.procedure.clone();
        }
        // A data change stopped by an error found while it ran (IDENTITY_INSERT errors are
        // found then too, but SQL Server reports them as compile errors).
        let terminated = std::mem::take(&mut self.changing) && !matches!(e.number, 544 | 545 | 8101);
        self.state.error = e.number;
        self.state.rowcount = 0;
        let txns = &mut self.state.txns;
        let doom = self.state.options.xact_abort || e.number == 1205;
        if doom && self.try_depth == 0 {
            let _ = txns.rollback_all();
        } else {
            let _ = txns.rollback_statement();
            if self.state.nest_level == 0 {
                txns.end_statement();
            }
            if doom {
                txns.doomed = true;
            }
            if txns.count == 0 {
                let _ = txns.rollback_all();
            }
        }
        if self.try_depth > 0 && e.severity > 10 && e.severity < 20 {
            return Err(Stop::Error(e));
        }
        report(self.sink, &e);
        if doom || aborts_batch(&e) || matches!(s.kind, StatementKind::Throw(_)) {
            return Err(Stop::Abort);
        }
        if terminated || e.number == 1505 || e.preceding.iter().any(|p| p.number == 1505) {
            self.sink.message(&info(3621, "The statement has been terminated."));
        }
        Ok(Flow::Next)
    }

    fn run_control(&mut self, s: &Statement) -> Result<Flow, Stop> {
        match &s.kind {
            StatementKind::If { condition, then, otherwise } => {
                let c = match self.condition(s, condition) {
                    Ok(c) => c,
                    Err(e) => return self.fail(s, e),
                };
                if c {
                    self.run_one(then)
                } else if let Some(o) = otherwise {
                    self.run_one(o)
                } else {
                    Ok(Flow::Next)
                }
            }
            StatementKind::While { condition, body } => loop {
                let c = match self.condition(s, condition) {
                    Ok(c) => c,
                    Err(e) => return self.fail(s, e),
                };
                if !c {
                    return Ok(Flow::Next);
                }
                if self.state.cancel.load(Ordering::Relaxed) {
                    return self.fail(s, SqlError::new(3617, "The query was cancelled.").with_severity(25));
                }
                match self.run_one(body)? {
                    Flow::Break => return Ok(Flow::Next),
                    Flow::Next | Flow::Continue => {}
                    other => return Ok(other),
                }
            },
            StatementKind::Block(stmts) => self.run_block(stmts),
            StatementKind::TryCatch { try_block, catch_block } => {
                self.try_depth += 1;
                let r = self.run_block(try_block);
                self.try_depth -= 1;
                match r {
                    Err(Stop::Error(e)) => {
                        let previous = self.state.caught.replace(e);
                        let r = self.run_block(catch_block);
                        self.state.caught = previous;
                        r
                    }
                    other => other,
                }
            }
            _ => unreachable!("control statements only"),
        }
    }

    fn emit(&mut self, columns: &[crate::bind::OutputColumn], order: &[u16], rows: &[Vec<Value>]) {
        self.sink.columns(columns);
        if !order.is_empty() {
            self.sink.order(order);
        }
        for r in rows {
            self.sink.row(r);
        }
        self.null_warning();
        let count = (!self.state.options.nocount).then_some(rows.len() as u64);
        self.sink.done(count, true);
    }

    /// Warning 8153 after a statement whose aggregates skipped NULLs (under ANSI_WARNINGS).
    fn null_warning(&mut self) {
        if std::mem::take(&mut self.state.null_eliminated) && self.state.options.ansi_warnings {
            let w = SqlError::new(8153, "Warning: Null value is eliminated by an aggregate or other SET operation.");
            self.sink.message(&w.with_severity(10));
        }
    }

    fn affected(&mut self, n: u64) {
        self.null_warning();
        self.state.rowcount = n as i64;
        let count = (!self.state.options.nocount).then_some(n);
        self.sink.done(count, false);
    }

    fn exec(&mut self, s: &Statement) -> SqlResult<Flow> {
        match &s.kind {
            StatementKind::Query(q) if matches!(&q.body, ast::SetExpr::Select(sel) if sel.into.is_some()) => {
                self.select_into(s, q)?;
            }
            StatementKind::Insert(i) if matches!(i.source, ast::InsertSource::Execute(_)) => {
                self.insert_exec(s, i)?;
            }
            StatementKind::Query(_)
            | StatementKind::Insert(_)
            | StatementKind::Update(_)
            | StatementKind::Delete(_)
            | StatementKind::SetVariable { .. } => {
                let p = self.compile_locked(s)?;
                self.changing = matches!(*p, Prepared::Insert(_) | Prepared::Update(_) | Prepared::Delete(_));
                self.run_prepared(&p)?;
                self.changing = false;
            }
            StatementKind::Declare(decls) => {
                for d in decls {
                    if let ast::DeclarationKind::Table { columns, constraints } = &d.kind {
                        let lower = d.name.to_lowercase();
                        if self.table_vars.iter().any(|(n, _)| *n == lower) {
                            return Err(SqlError::new(
                                134,
                                format!("The variable name '{}' has already been declared. Variable names must be unique within a query batch or stored procedure.", d.name),
                            )
                            .with_severity(15));
                        }
                        let previous = self.state.temp_tables.get(&lower).cloned();
                        self.with_ctx(|ctx| ddl::declare_table_variable(ctx, &d.name, columns, constraints))?;
                        self.table_vars.push((lower, previous));
                        continue;
                    }
                    if let ast::DeclarationKind::Scalar { init: Some(init), .. } = &d.kind {
                        let (v, t) = self.eval_scalar(s, init)?;
                        let slot = self
                            .frame
                            .decls
                            .iter()
                            .position(|(n, _)| n.eq_ignore_ascii_case(&d.name))
                            .expect("declared");
                        let vt = self.frame.decls[slot].1;
                        self.state.vars[slot] = types::cast(&v, &t, &vt, None)?;
                    }
                }
            }
            StatementKind::Print(e) => {
                let (v, t) = self.eval_scalar(s, e)?;
                let text = types::cast(&v, &t, &SqlType::NVarChar(4000), None)?;
                let msg = match text {
                    Value::Str(s) => s.to_string(),
                    _ => String::new(),
                };
                self.sink.message(&info(0, msg));
                self.state.rowcount = 0;
            }
            StatementKind::Use(db) => self.use_database(&db.value)?,
            StatementKind::BeginTransaction { name } => {
                let name = match name {
                    Some(n) => Some(self.name_of(s, n)?),
                    None => None,
                };
                let txns = &mut self.state.txns;
                txns.count += 1;
                if txns.count == 1 {
                    txns.name = name;
                    self.sink.env_change(&EnvChange::BeginTransaction);
                }
            }
            StatementKind::Commit { delayed_durability, .. } => {
                let txns = &mut self.state.txns;
                if txns.count == 0 {
                    return Err(SqlError::new(
                        3902,
                        "The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION.",
                    ));
                }
                if txns.doomed {
                    return Err(SqlError::new(
                        3930,
                        "The current transaction cannot be committed and cannot support operations that write to the log file. Roll back the transaction.",
                    ));
                }
                txns.count -= 1;
                if txns.count == 0 {
                    txns.commit_all(delayed_durability.unwrap_or(false))?;
                    self.sink.env_change(&EnvChange::CommitTransaction);
                }
            }
            StatementKind::Rollback { name } => self.rollback(s, name.as_ref())?,
            StatementKind::SaveTransaction { name } => {
                let n = self.name_of(s, name)?;
                if self.state.txns.count == 0 {
                    return Err(SqlError::new(
                        628,
                        "Cannot issue SAVE TRANSACTION when there is no active transaction.",
                    ));
                }
                self.state.txns.savepoint(&n);
            }
            StatementKind::SetOption { options, value } => self.set_option(s, options, value)?,
            StatementKind::CreateDatabase(cd) => {
                let login = &self.state.login;
                if !self.shared.logins.is_sysadmin(login) && !self.shared.logins.is_member(login, "dbcreator") {
                    return Err(SqlError::new(262, "CREATE DATABASE permission denied in database 'master'."));
                }
                self.with_ctx(|ctx| ddl::create_database(ctx, cd))?
            }
            StatementKind::BufferPoolExtension(setting) => {
                let login = &self.state.login;
                if !self.shared.logins.is_sysadmin(login) && !self.shared.logins.is_member(login, "serveradmin") {
                    return Err(crate::security::no_permission());
                }
                let setting = setting.clone().map(|(file, bytes)| crate::config::ExtensionSetting { file, bytes });
                self.shared.config.set_extension(&self.shared.engine, setting)?;
            }
            StatementKind::CreateLogin { .. }
            | StatementKind::AlterLogin { .. }
            | StatementKind::DropLogin(_)
            | StatementKind::AlterServerRole { .. } => self.security_statement(&s.kind)?,
            StatementKind::DropDatabase { names, if_exists } => {
                for n in names {
                    self.with_ctx(|ctx| ddl::drop_database(ctx, n, *if_exists))?;
                }
            }
            StatementKind::AlterDatabase { name, action } => {
                self.with_ctx(|ctx| ddl::alter_database(ctx, name, action))?
            }
            StatementKind::CreateTable(ct) => self.with_ctx(|ctx| ddl::create_table(ctx, ct))?,
            StatementKind::DropTable { names, if_exists } => {
                for n in names {
                    self.with_ctx(|ctx| ddl::drop_table(ctx, n, *if_exists))?;
                }
            }
            StatementKind::AlterTable { table, action } => self.with_ctx(|ctx| ddl::alter_table(ctx, table, action))?,
            StatementKind::TruncateTable(t) => self.with_ctx(|ctx| ddl::truncate_table(ctx, t))?,
            StatementKind::CreateIndex(ci) => self.with_ctx(|ctx| ddl::create_index(ctx, ci))?,
            StatementKind::DropIndex { indexes, if_exists } => {
                for (ix, t) in indexes {
                    self.with_ctx(|ctx| ddl::drop_index(ctx, ix, t, *if_exists))?;
                }
            }
            StatementKind::Label(_) => {}
            StatementKind::Goto(l) => return Ok(Flow::Goto(l.value.clone())),
            StatementKind::Break => return Ok(Flow::Break),
            StatementKind::Continue => return Ok(Flow::Continue),
            StatementKind::Return(None) => return Ok(Flow::Return(None)),
            StatementKind::Return(Some(e)) => {
                if let Some(ty) = self.returns {
                    let (v, t) = self.eval_scalar(s, e)?;
                    self.returned = Some(types::cast(&v, &t, &ty, None)?);
                    return Ok(Flow::Return(None));
                }
                if self.procedure.is_none() {
                    return Err(SqlError::new(
                        178,
                        "A RETURN statement with a return value cannot be used in this context.",
                    )
                    .with_severity(15));
                }
                let (v, t) = self.eval_scalar(s, e)?;
                let status = match types::cast(&v, &t, &SqlType::Int, None)? {
                    Value::Int(n) => n as i32,
                    _ => 0,
                };
                return Ok(Flow::Return(Some(status)));
            }
            StatementKind::WaitFor { delay, value } => self.wait_for(s, *delay, value)?,
            StatementKind::Throw(args) => return Err(self.throw(s, args.as_ref())?),
            StatementKind::RaisError { message, severity, state, args, options } => {
                self.raiserror(s, message, severity, state, args, options)?
            }
            StatementKind::Checkpoint => {
                let db = self.shared.database(&self.state.database)?;
                db.checkpoint()?;
            }
            StatementKind::Dbcc { command, args, options } => self.dbcc(s, command, args, options)?,
            StatementKind::Backup(b) => {
                let database = self.database_ref(s, &b.database)?;
                let (devices, options) = self.backup_arguments(s, &b.devices, &b.options)?;
                let shared = self.shared.arc();
                crate::backup::backup(&shared, self.state, b.log, &database, devices, &options, self.sink)?
            }
            StatementKind::Restore(r) => {
                let database = match &r.database {
                    Some(d) => Some(self.database_ref(s, d)?),
                    None => None,
                };
                let (devices, options) = self.backup_arguments(s, &r.devices, &r.options)?;
                let shared = self.shared.arc();
                crate::backup::restore(&shared, self.state, r.kind, database.as_deref(), devices, &options, self.sink)?
            }
            StatementKind::Reconfigure { .. } => {
                if !self.shared.logins.is_sysadmin(&self.state.login)
                    && !self.shared.logins.is_member(&self.state.login, "serveradmin")
                {
                    return Err(SqlError::new(5812, "You do not have permission to run the RECONFIGURE statement."));
                }
                self.shared.config.reconfigure();
                self.shared.config.apply_memory(&self.shared.engine)?;
            }
            StatementKind::If { .. }
            | StatementKind::While { .. }
            | StatementKind::Block(_)
            | StatementKind::TryCatch { .. } => {
                unreachable!("control flow runs in run_control")
            }
            StatementKind::CreateProcedure(cp) => {
                let text = cp.text.clone();
                self.with_ctx(|ctx| {
                    crate::modules::define(ctx, &cp.name, ModuleKind::Procedure, cp.or_alter, cp.alter, &text)
                })?;
            }
            StatementKind::CreateFunction(cf) => {
                let kind = match cf.returns {
                    ast::FunctionReturns::Scalar { .. } => ModuleKind::ScalarFunction,
                    ast::FunctionReturns::InlineTable(_) => ModuleKind::TableFunction,
                    ast::FunctionReturns::MultiStatement { .. } => {
                        return Err(SqlError::new(
                            40526,
                            "Multi-statement table-valued functions are not supported yet.",
                        ))
                    }
                };
                let text = cf.text.clone();
                self.with_ctx(|ctx| crate::modules::define(ctx, &cf.name, kind, cf.or_alter, cf.alter, &text))?;
            }
            StatementKind::CreateView(cv) => {
                // A view must bind when it is created (its tables and columns must exist).
                let mut b = Binder::new(self.shared, self.state, &[]);
                let bound = b.bind_query(&cv.query)?;
                if !cv.columns.is_empty() && cv.columns.len() != bound.columns.len() {
                    return Err(SqlError::new(
                        8159,
                        format!("'{}' has fewer columns than were specified in the column list.", cv.name.name().value),
                    ));
                }
                if cv.columns.is_empty() {
                    if let Some(i) = bound.columns.iter().position(|c| c.name.is_empty()) {
                        return Err(SqlError::new(
                            4511,
                            format!(
                                "Create View or Function failed because no column name was specified for column {}.",
                                i + 1
                            ),
                        ));
                    }
                }
                let text = cv.text.clone();
                self.with_ctx(|ctx| {
                    crate::modules::define(ctx, &cv.name, ModuleKind::View, cv.or_alter, cv.alter, &text)
                })?;
            }
            StatementKind::DropModule { kind, names, if_exists } => {
                for n in names {
                    self.with_ctx(|ctx| crate::modules::drop(ctx, *kind, n, *if_exists))?;
                }
            }
            StatementKind::Execute(_) | StatementKind::ExecuteString(_) => unreachable!("EXEC runs in run_one"),
        }
        Ok(Flow::Next)
    }

    /// Drops the table variables this frame declared (at the end of its batch or
    /// procedure), restoring what they shadowed.
    fn drop_table_variables(&mut self) {
        for (name, previous) in std::mem::take(&mut self.table_vars).into_iter().rev() {
            let object = ast::ObjectName(vec![ast::Ident::new(name.clone())]);
            let _ = self.with_ctx(|ctx| ddl::drop_table(ctx, &object, true));
            if let Some(p) = previous {
                self.state.temp_tables.insert(name, p);
            }
        }
    }

    /// Evaluates EXEC's arguments in the caller's frame.
    fn arguments(&mut self, s: &Statement, args: &[ast::ExecArg]) -> SqlResult<Vec<Argument>> {
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            let value = match &a.value {
                ast::Expr::Default => None,
                e => Some(self.eval_scalar(s, e)?),
            };
            let output = if a.output {
                match &a.value {
                    ast::Expr::Variable(v) => {
                        let vars = self.visible(s);
                        let lower = v.to_lowercase();
                        let slot = vars.iter().rposition(|(n, _)| *n == lower).ok_or_else(|| {
                            SqlError::new(137, format!("Must declare the scalar variable \"{v}\"."))
                                .with_severity(15)
                                .with_state(2)
                        })?;
                        Some((slot, vars[slot].1))
                    }
                    _ => None,
                }
            } else {
                None
            };
            out.push(Argument { name: a.name.clone(), value, output });
        }
        Ok(out)
    }

    /// `EXEC [@rc =] proc args`: a stored procedure or a system procedure.
    fn run_execute(&mut self, s: &Statement, e: &ast::Execute) -> Result<Flow, Stop> {
        let args = match self.arguments(s, &e.args) {
            Ok(a) => a,
            Err(err) => return self.fail(s, err),
        };
        let proc_name = e.procedure.name().value.clone();
        let status = if let Some(kind) = PreparedProc::lookup(&proc_name) {
            match self.run_prepared_proc(s, kind, args) {
                Ok(status) => status,
                Err(Stop::Error(err)) => return self.fail(s, err),
                Err(Stop::Abort) => return Err(Stop::Abort),
            }
        } else if let Some(system) = crate::sysprocs::lookup(&proc_name) {
            self.state.txns.mark_statement();
            let values: Vec<crate::sysprocs::NamedArg> =
                args.iter().map(|a| (a.name.clone(), a.value.clone())).collect();
            let result = if system == crate::sysprocs::SystemProc::ExecuteSql {
                self.run_executesql(s, args)
            } else {
                let mut ctx = ExecCtx::new(self.shared, self.state);
                crate::sysprocs::run(system, &values, &mut ctx, self.sink).map_err(Stop::Error)
            };
            match result {
                Ok(status) => {
                    if self.state.txns.count == 0 {
                        if let Err(err) = self.state.txns.commit_all(false) {
                            return self.fail(s, err);
                        }
                    }
                    status
                }
                Err(Stop::Error(err)) => return self.fail(s, err),
                Err(Stop::Abort) => return Err(Stop::Abort),
            }
        } else {
            let found = {
                let ctx = ExecCtx::new(self.shared, self.state);
                crate::modules::find(&ctx, &e.procedure)
            };
            let (db, module) = match found {
                Ok(Some((db, m))) if m.kind == ModuleKind::Procedure => (db, m),
                Ok(_) => {
                    let shown = e.procedure.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
                    return self.fail(s, SqlError::new(2812, format!("Could not find stored procedure '{shown}'.")));
                }
                Err(err) => return self.fail(s, err),
            };
            self.call_procedure(s, &db, &module.name, &module.text, args)?
        };
        if let Some(rc) = &e.return_status {
            let vars = self.visible(s);
            let lower = rc.to_lowercase();
            match vars.iter().rposition(|(n, _)| *n == lower) {
                Some(slot) => {
                    let t = vars[slot].1;
                    match types::cast(&Value::Int(i64::from(status)), &SqlType::Int, &t, None) {
                        Ok(v) => self.state.vars[slot] = v,
                        Err(err) => return self.fail(s, err),
                    }
                }
                None => {
                    return self.fail(
                        s,
                        SqlError::new(137, format!("Must declare the scalar variable \"{rc}\"."))
                            .with_severity(15)
                            .with_state(2),
                    )
                }
            }
        }
        if self.state.nest_level == 0 {
            self.sink.return_status(status);
        }
        Ok(Flow::Next)
    }

    /// Runs a stored procedure: binds the arguments to its parameters, runs its body in a
    /// frame of its own (in the procedure's database), copies OUTPUT parameters back and
    /// returns its return status.
    fn call_procedure(
        &mut self,
        s: &Statement,
        db: &str,
        name: &str,
        text: &str,
        args: Vec<Argument>,
    ) -> Result<i32, Stop> {
        let cached = match self.shared.plans.get_or_parse(db, text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => return self.fail(s, e).map(|_| 0),
        };
        let Some(StatementKind::CreateProcedure(cp)) = cached.batch.statements.first().map(|st| &st.kind) else {
            return self.fail(s, SqlError::new(2812, format!("Could not find stored procedure '{name}'."))).map(|_| 0);
        };
        self.invoke(s, &cached, &cp.params, &cp.body, Some(name), db, args)
    }

    /// Runs `body` with `params` bound to `args`, one nesting level down.
    #[allow(clippy::too_many_arguments)]
    fn invoke(
        &mut self,
        s: &Statement,
        cached: &CachedBatch<Prepared>,
        params: &[ast::Parameter],
        body: &[Statement],
        name: Option<&str>,
        db: &str,
        args: Vec<Argument>,
    ) -> Result<i32, Stop> {
        let shown = name.unwrap_or("sp_executesql").to_string();
        if self.state.nest_level >= crate::modules::MAX_NESTING {
            return self.fail(s, crate::modules::nesting_error()).map(|_| 0);
        }
        let frame = match Frame::of_procedure(params, body) {
            Ok(f) => f,
            Err(e) => return self.fail(s, e).map(|_| 0),
        };
        let (vars, outputs) = match self.bind_arguments(s, &shown, params, &frame, args) {
            Ok(v) => v,
            Err(mut e) => {
                if let Some(n) = name {
                    e.procedure = Some(n.to_string());
                }
                return self.fail(s, e).map(|_| 0);
            }
        };
        let saved_vars = std::mem::replace(&mut self.state.vars, vars);
        let saved_db = std::mem::replace(&mut self.state.database, db.to_string());
        let saved_scope_identity = self.state.scope_identity.take();
        // SET options changed inside a procedure revert when it ends.
        let saved_options = self.state.options.clone();
        self.state.nest_level += 1;
        let before = self.state.txns.count;
        let result = {
            let mut inner = Runner {
                try_depth: self.try_depth,
                procedure: name.map(str::to_string),
                ..Runner::new(self.shared, &mut *self.state, cached, &frame, &mut *self.sink)
            };
            let r = match inner.compile_all(body) {
                Err(e) => Err(e),
                Ok(()) => Ok(inner.run_block(body)),
            };
            inner.drop_table_variables();
            r
        };
        self.state.nest_level -= 1;
        self.state.options = saved_options;
        self.state.scope_identity = saved_scope_identity;
        self.state.database = saved_db;
        let proc_vars = std::mem::replace(&mut self.state.vars, saved_vars);
        let status = match result {
            Err(mut compile_error) => {
                compile_error.procedure = name.map(str::to_string);
                return self.fail(s, compile_error).map(|_| 0);
            }
            Ok(Err(stop)) => return Err(stop),
            Ok(Ok(Flow::Return(Some(n)))) => n,
            Ok(Ok(_)) => 0,
        };
        for (param_slot, caller_slot, param_ty, caller_ty) in outputs {
            match types::cast(&proc_vars[param_slot], &param_ty, &caller_ty, None) {
                Ok(v) => self.state.vars[caller_slot] = v,
                Err(e) => return self.fail(s, e).map(|_| status),
            }
        }
        let after = self.state.txns.count;
        if after != before {
            let e = SqlError::new(
                266,
                format!("Transaction count after EXECUTE indicates a mismatching number of BEGIN and COMMIT statements. Previous count = {before}, current count = {after}."),
            );
            let mut e = e.at_line(s.line);
            e.procedure = name.map(str::to_string);
            self.sink.message(&e);
            self.state.error = e.number;
        }
        Ok(status)
    }

    /// Matches arguments to parameters (positional first, then by name), fills defaults,
    /// and converts values; returns the frame's initial variables and the OUTPUT pairs
    /// (parameter slot, caller slot, parameter type, caller type).
    #[allow(clippy::type_complexity)]
    fn bind_arguments(
        &mut self,
        s: &Statement,
        proc_name: &str,
        params: &[ast::Parameter],
        frame: &Frame,
        args: Vec<Argument>,
    ) -> SqlResult<(Vec<Value>, Vec<(usize, usize, SqlType, SqlType)>)> {
        let mut vars = vec![Value::Null; frame.decls.len()];
        let mut given: Vec<Option<Argument>> = (0..params.len()).map(|_| None).collect();
        let mut named_seen = false;
        for (i, a) in args.into_iter().enumerate() {
            let slot = match &a.name {
                Some(n) => {
                    named_seen = true;
                    params.iter().position(|p| p.name.eq_ignore_ascii_case(n)).ok_or_else(|| {
                        SqlError::new(8145, format!("{n} is not a parameter for procedure {proc_name}."))
                    })?
                }
                None => {
                    if named_seen {
                        return Err(SqlError::new(
                            119,
                            "Must pass parameter number 2 and subsequent parameters as '@name = value'. After the form '@name = value' has been used, all subsequent parameters must be passed in the form '@name = value'.".replace("number 2", &format!("number {}", i + 1)),
                        )
                        .with_severity(15));
                    }
                    if i >= params.len() {
                        return Err(SqlError::new(
                            8144,
                            format!("Procedure or function {proc_name} has too many arguments specified."),
                        ));
                    }
                    i
                }
            };
            given[slot] = Some(a);
        }
        let mut outputs = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let ty = frame.decls[i].1;
            let arg = given[i].take();
            let value = match arg.as_ref().and_then(|a| a.value.clone()) {
                Some((v, t)) => types::cast(&v, &t, &ty, None)?,
                None => {
                    match &p.default {
                        Some(d) => {
                            let (v, t) = self.eval_scalar(s, d)?;
                            types::cast(&v, &t, &ty, None)?
                        }
                        None if arg.as_ref().is_some_and(|a| a.value.is_none()) || arg.is_none() => {
                            return Err(SqlError::new(
                            201,
                            format!("Procedure or function '{proc_name}' expects parameter '{}', which was not supplied.", p.name),
                        )
                        .with_state(4));
                        }
                        None => Value::Null,
                    }
                }
            };
            vars[i] = value;
            if let Some((caller_slot, caller_ty)) = arg.and_then(|a| a.output) {
                if !p.output {
                    return Err(SqlError::new(
                        8162,
                        format!("The formal parameter \"{}\" was not declared as an OUTPUT parameter, but the actual parameter passed in requested output.", p.name),
                    ));
                }
                outputs.push((i, caller_slot, ty, caller_ty));
            }
        }
        Ok((vars, outputs))
    }

    /// `EXEC ('dynamic sql')`: the string runs as a batch of its own, one level down.
    fn run_dynamic(&mut self, s: &Statement, parts: &[ast::Expr]) -> Result<Flow, Stop> {
        let mut text = String::new();
        for p in parts {
            match self.eval_scalar(s, p) {
                Ok((Value::Str(v), _)) => text.push_str(&v),
                Ok((Value::Null, _)) => {}
                Ok((v, t)) => match types::cast(&v, &t, &SqlType::NVarChar(tessera_access::row::MAX), None) {
                    Ok(Value::Str(v)) => text.push_str(&v),
                    Ok(_) => {}
                    Err(e) => return self.fail(s, e),
                },
                Err(e) => return self.fail(s, e),
            }
        }
        let db = self.state.database.clone();
        let cached = match self.shared.plans.get_or_parse(&db, &text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => return self.fail(s, e),
        };
        self.invoke(s, &cached, &[], &cached.batch.statements, None, &db, Vec::new()).map(|_| Flow::Next)
    }

    /// sp_prepare / sp_execute / sp_prepexec / sp_unprepare: statements prepared once per
    /// session and run by handle.
    fn run_prepared_proc(&mut self, s: &Statement, kind: PreparedProc, mut args: Vec<Argument>) -> Result<i32, Stop> {
        let int_arg = |a: Option<&Argument>| match a.and_then(|a| a.value.as_ref()) {
            Some((Value::Int(n), _)) => Some(*n as i32),
            _ => None,
        };
        let prepare = |this: &mut Self, args: &mut Vec<Argument>| -> Result<i32, Stop> {
            if args.len() < 3 {
                return Err(Stop::Error(SqlError::new(
                    201,
                    "Procedure or function 'sp_prepare' expects parameter '@stmt', which was not supplied.",
                )));
            }
            let text = |a: &Argument| match &a.value {
                Some((Value::Str(v), _)) => v.to_string(),
                _ => String::new(),
            };
            let (params, stmt) = (text(&args[1]), text(&args[2]));
            let handle = this.state.next_prepared_handle();
            this.state.prepared.insert(handle, (params, stmt));
            if let Some((slot, ty)) = args[0].output {
                this.state.vars[slot] =
                    types::cast(&Value::Int(i64::from(handle)), &SqlType::Int, &ty, None).map_err(Stop::Error)?;
            }
            args.drain(..3);
            Ok(handle)
        };
        match kind {
            PreparedProc::Prepare => prepare(self, &mut args).map(|_| 0),
            PreparedProc::PrepExec => {
                let handle = prepare(self, &mut args)?;
                self.execute_handle(s, handle, args)
            }
            PreparedProc::Execute => {
                let Some(handle) = int_arg(args.first()) else {
                    return Err(Stop::Error(SqlError::new(8179, "Could not find prepared statement with handle 0.")));
                };
                args.remove(0);
                self.execute_handle(s, handle, args)
            }
            PreparedProc::Unprepare => {
                let handle = int_arg(args.first()).unwrap_or(0);
                if self.state.prepared.remove(&handle).is_none() {
                    return Err(Stop::Error(SqlError::new(
                        8179,
                        format!("Could not find prepared statement with handle {handle}."),
                    )));
                }
                Ok(0)
            }
        }
    }

    fn execute_handle(&mut self, s: &Statement, handle: i32, args: Vec<Argument>) -> Result<i32, Stop> {
        let Some((params, stmt)) = self.state.prepared.get(&handle).cloned() else {
            return Err(Stop::Error(SqlError::new(
                8179,
                format!("Could not find prepared statement with handle {handle}."),
            )));
        };
        let text = |t: String| Argument {
            name: None,
            value: Some((Value::Str(t.into()), SqlType::NVarChar(tessera_access::row::MAX))),
            output: None,
        };
        let mut all = vec![text(stmt), text(params)];
        all.extend(args);
        self.run_executesql(s, all)
    }

    /// `sp_executesql @stmt [, @params, args…]`: a parameterised batch.
    fn run_executesql(&mut self, s: &Statement, mut args: Vec<Argument>) -> Result<i32, Stop> {
        let text_of = |a: &Argument| match &a.value {
            Some((Value::Str(v), _)) => Some(v.to_string()),
            _ => None,
        };
        if args.is_empty() {
            return Err(Stop::Error(SqlError::new(
                201,
                "Procedure or function 'sp_executesql' expects parameter '@statement', which was not supplied.",
            )));
        }
        let stmt = args.remove(0);
        let Some(stmt_text) = text_of(&stmt) else {
            return Err(Stop::Error(SqlError::new(
                214,
                "Procedure expects parameter '@statement' of type 'ntext/nchar/nvarchar'.",
            )));
        };
        let params_text = if args
            .first()
            .is_some_and(|a| a.name.is_none() || a.name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case("@params")))
        {
            let p = args.remove(0);
            text_of(&p).unwrap_or_default()
        } else {
            String::new()
        };
        let db = self.state.database.clone();
        let header = format!("CREATE PROCEDURE sp_executesql_parameters {params_text}\nAS RETURN");
        let declared = match self.shared.plans.get_or_parse(&db, &header, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => return Err(Stop::Error(e)),
        };
        let Some(StatementKind::CreateProcedure(cp)) = declared.batch.statements.first().map(|st| &st.kind) else {
            return Err(Stop::Error(SqlError::new(
                8178,
                "The parameterized query expects parameters that were not supplied.",
            )));
        };
        let params = cp.params.clone();
        let cached = match self.shared.plans.get_or_parse(&db, &stmt_text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => return Err(Stop::Error(e)),
        };
        self.invoke(s, &cached, &params, &cached.batch.statements, None, &db, args)
    }

    /// The database a BACKUP or RESTORE names, directly or in a variable.
    fn database_ref(&mut self, s: &Statement, d: &ast::DatabaseRef) -> SqlResult<String> {
        match d {
            ast::DatabaseRef::Name(i) => Ok(i.value.clone()),
            ast::DatabaseRef::Variable(v) => match self.eval_scalar(s, &ast::Expr::Variable(v.clone()))?.0 {
                Value::Str(name) => Ok(name.trim_end().to_string()),
                _ => Err(SqlError::new(3201, format!("The variable {v} does not hold a database name."))),
            },
        }
    }

    /// Evaluates BACKUP/RESTORE device paths and WITH option values.
    fn backup_arguments(
        &mut self,
        s: &Statement,
        devices: &[ast::Expr],
        options: &[ast::BackupOption],
    ) -> SqlResult<(Vec<std::path::PathBuf>, Vec<crate::backup::EvaluatedOption>)> {
        let mut paths = Vec::new();
        for d in devices {
            match self.eval_scalar(s, d)?.0 {
                Value::Str(p) if !p.trim().is_empty() => paths.push(std::path::PathBuf::from(p.trim_end())),
                _ => return Err(SqlError::new(3206, "A backup device name must be a non-empty string.")),
            }
        }
        let mut out = Vec::new();
        for o in options {
            let value = match &o.value {
                Some(e) => Some(self.eval_scalar(s, e)?),
                None => None,
            };
            let to = match &o.to {
                Some(e) => Some(self.eval_scalar(s, e)?),
                None => None,
            };
            out.push(crate::backup::EvaluatedOption { name: o.name.clone(), value, to });
        }
        Ok((paths, out))
    }

    /// CREATE/ALTER/DROP LOGIN and ALTER SERVER ROLE. They change master in a transaction
    /// of their own, so they are refused inside a user transaction (which could not undo them).
    fn security_statement(&mut self, kind: &StatementKind) -> SqlResult<()> {
        let verb = match kind {
            StatementKind::CreateLogin { .. } => "CREATE LOGIN",
            StatementKind::AlterLogin { .. } => "ALTER LOGIN",
            StatementKind::DropLogin(_) => "DROP LOGIN",
            _ => "ALTER SERVER ROLE",
        };
        if self.state.txns.count > 0 {
            return Err(SqlError::new(
                574,
                format!("{verb} statement not allowed within multi-statement transaction."),
            ));
        }
        let (shared, login) = (self.shared, self.state.login.clone());
        match kind {
            StatementKind::CreateLogin { name, options, external_source } => {
                crate::security::create_login(shared, &login, name, options, external_source.as_deref())
            }
            StatementKind::AlterLogin { name, action } => {
                crate::security::alter_login(shared, &login, name, action)?;
                // A renamed current login keeps its session under the new name.
                if let AlterLoginAction::Set(options) = action {
                    for o in options {
                        if let ast::LoginOption::Name(n) = o {
                            if name.value.eq_ignore_ascii_case(&login) {
                                self.state.login = n.value.clone();
                            }
                        }
                    }
                }
                Ok(())
            }
            StatementKind::DropLogin(name) => crate::security::drop_login(shared, &login, name),
            StatementKind::AlterServerRole { role, member, add } => {
                crate::security::alter_server_role(shared, &login, role, member, *add)
            }
            _ => unreachable!("security_statement is called for security statements only"),
        }
    }

    fn with_ctx<T>(&mut self, f: impl FnOnce(&mut ExecCtx) -> SqlResult<T>) -> SqlResult<T> {
        let mut ctx = ExecCtx::new(self.shared, self.state);
        f(&mut ctx)
    }

    fn run_prepared(&mut self, p: &Prepared) -> SqlResult<()> {
        if self.state.options.fmtonly {
            // Shapes only: a query's column metadata (no rows); nothing is modified.
            if let Prepared::Query(q) = p {
                self.emit(&q.columns, &[], &[]);
            }
            return Ok(());
        }
        match p {
            Prepared::Query(q) => {
                // SQL Server sends a result's column metadata before its rows; an error while
                // producing them arrives after the header.
                let rows = match self.with_ctx(|ctx| run(&q.plan, &[], ctx)) {
                    Ok(mut rows) => {
                        if self.state.options.rowcount > 0 {
                            rows.truncate(self.state.options.rowcount as usize);
                        }
                        rows
                    }
                    Err(e) => {
                        self.sink.columns(&q.columns);
                        return Err(e);
                    }
                };
                self.state.rowcount = rows.len() as i64;
                let order = q.plan.order_columns(q.columns.len());
                self.emit(&q.columns, &order, &rows);
            }
            Prepared::Assign { plan, targets } => {
                let n = self.with_ctx(|ctx| dml::run_assign(ctx, plan, targets))?;
                self.null_warning();
                self.state.rowcount = n as i64;
            }
            Prepared::Insert(i) => {
                let (n, out) = self.with_ctx(|ctx| dml::run_insert(ctx, i))?;
                if let Some(o) = &i.output {
                    self.output(o, out)?;
                }
                self.affected(n);
            }
            Prepared::Update(u) => {
                let (n, out) = self.with_ctx(|ctx| dml::run_update(ctx, u))?;
                if let Some(o) = &u.output {
                    self.output(o, out)?;
                }
                self.affected(n);
            }
            Prepared::Delete(d) => {
                let (n, out) = self.with_ctx(|ctx| dml::run_delete(ctx, d))?;
                if let Some(o) = &d.output {
                    self.output(o, out)?;
                }
                self.affected(n);
            }
        }
        Ok(())
    }

    /// OUTPUT rows come as a result set whose count is the statement's, or go into the
    /// OUTPUT … INTO table.
    fn output(&mut self, o: &dml::OutputPlan, rows: Vec<Vec<Value>>) -> SqlResult<()> {
        if let Some(into) = &o.into {
            self.with_ctx(|ctx| dml::run_output_into(ctx, into, rows))?;
            return Ok(());
        }
        self.sink.columns(&o.columns);
        for r in &rows {
            self.sink.row(r);
        }
        Ok(())
    }

    /// `SELECT … INTO t`: a new table with the query's columns, filled with its rows.
    fn select_into(&mut self, s: &Statement, q: &ast::Query) -> SqlResult<()> {
        let ast::SetExpr::Select(sel) = &q.body else { unreachable!("checked by the caller") };
        let into = sel.into.clone().expect("SELECT INTO");
        let mut plain = q.clone();
        if let ast::SetExpr::Select(inner) = &mut plain.body {
            inner.into = None;
        }
        let vars = self.visible(s);
        let bound = Binder::new(self.shared, self.state, vars).bind_query(&plain)?;
        let mut columns = Vec::new();
        for (i, c) in bound.columns.iter().enumerate() {
            if c.name.is_empty() {
                return Err(SqlError::new(1038, format!("An object or column name is missing or empty. For SELECT INTO statements, verify each column has a name. For other statements, look for empty alias names. Aliases defined as \"\" or [] are not allowed. Change the alias to a valid name. (column {})", i + 1)).with_severity(15));
            }
            columns.push(ast::ColumnDef {
                name: ast::Ident::new(c.name.clone()),
                ty: ast::TypeName { name: types::base_type_name(&c.ty).to_uppercase(), args: type_args(&c.ty) },
                nullable: Some(true),
                identity: None,
                default: None,
                constraints: Vec::new(),
                computed: None,
                collation: None,
            });
        }
        let create = ast::CreateTable { name: into.clone(), columns, constraints: Vec::new(), indexes: Vec::new() };
        self.with_ctx(|ctx| ddl::create_table(ctx, &create))?;
        let rows = self.with_ctx(|ctx| run(&bound.plan, &[], ctx))?;
        let insert = ast::Insert {
            top: None,
            table: into,
            columns: Vec::new(),
            output: None,
            source: ast::InsertSource::Values(Vec::new()),
        };
        let mut b = Binder::new(self.shared, self.state, vars);
        let mut plan = dml::compile_insert(&mut b, &insert)?;
        plan.source = dml::InsertSource::Rows(
            rows.into_iter().map(|r| r.into_iter().map(|v| Some(Expr::Const(v))).collect()).collect(),
        );
        plan.source_types = bound.columns.iter().map(|c| c.ty).collect();
        let (n, _) = self.with_ctx(|ctx| dml::run_insert(ctx, &plan))?;
        self.affected(n);
        Ok(())
    }

    /// `INSERT t EXEC proc …`: the procedure's result sets become the inserted rows.
    fn insert_exec(&mut self, s: &Statement, i: &ast::Insert) -> SqlResult<()> {
        let ast::InsertSource::Execute(call) = &i.source else { unreachable!("checked by the caller") };
        let mut captured = Collected::default();
        let result = {
            // The call runs in this frame with a sink that keeps its rows.
            let mut inner = Runner {
                try_depth: self.try_depth,
                procedure: self.procedure.clone(),
                ..Runner::new(self.shared, &mut *self.state, self.batch, self.frame, &mut captured)
            };
            match &**call {
                StatementKind::Execute(e) => inner.run_execute(s, e),
                StatementKind::ExecuteString(parts) => inner.run_dynamic(s, parts),
                _ => Err(Stop::Error(SqlError::new(102, "Incorrect syntax near 'EXEC'.").with_severity(15))),
            }
        };
        // The call's messages reach the client; an error that ended the call's batch is
        // this statement's error.
        let mut messages = std::mem::take(&mut captured.messages);
        let last_error = match result {
            Err(Stop::Abort) => messages.iter().rposition(|m| m.severity > 10).map(|i| messages.remove(i)),
            _ => None,
        };
        for m in &messages {
            self.sink.message(m);
        }
        let failed_inside = messages.iter().any(|m| m.severity > 10);
        match (result, last_error) {
            // The call failed and reported it: nothing is inserted.
            (Ok(_), _) if failed_inside => return Ok(()),
            (Ok(_), _) => {}
            (Err(Stop::Error(e)), _) | (Err(Stop::Abort), Some(e)) => return Err(e),
            (Err(Stop::Abort), None) => return Err(SqlError::new(50000, "The batch was aborted.")),
        }
        let mut rows = Vec::new();
        let mut source_types: Option<Vec<SqlType>> = None;
        for (columns, set) in captured.result_sets {
            let types_: Vec<SqlType> = columns.iter().map(|c| c.ty).collect();
            match &source_types {
                Some(t) if t.len() != types_.len() => {
                    return Err(SqlError::new(
                        213,
                        "Column name or number of supplied values does not match table definition.",
                    ));
                }
                _ => source_types = Some(types_),
            }
            rows.extend(set);
        }
        let plain = ast::Insert {
            top: i.top.clone(),
            table: i.table.clone(),
            columns: i.columns.clone(),
            output: None,
            source: ast::InsertSource::Values(Vec::new()),
        };
        let vars = self.visible(s);
        let mut b = Binder::new(self.shared, self.state, vars);
        let mut plan = dml::compile_insert(&mut b, &plain)?;
        if let Some(t) = source_types {
            if t.len() != plan.columns.len() {
                return Err(SqlError::new(
                    213,
                    "Column name or number of supplied values does not match table definition.",
                ));
            }
            plan.source_types = t;
        }
        plan.source = dml::InsertSource::Rows(
            rows.into_iter().map(|r| r.into_iter().map(|v| Some(Expr::Const(v))).collect()).collect(),
        );
        let (n, _) = self.with_ctx(|ctx| dml::run_insert(ctx, &plan))?;
        self.affected(n);
        Ok(())
    }

    fn use_database(&mut self, name: &str) -> SqlResult<()> {
        if !self.shared.engine.exists(name) {
            return Err(crate::runtime::database_not_found(name));
        }
        let db = self.shared.database(name)?;
        let old = std::mem::replace(&mut self.state.database, db.name().to_string());
        self.sink.env_change(&EnvChange::Database { old, new: db.name().to_string() });
        self.sink.message(&info(5701, format!("Changed database context to '{}'.", db.name())));
        self.state.rowcount = 0;
        Ok(())
    }

    fn name_of(&mut self, s: &Statement, e: &ast::Expr) -> SqlResult<String> {
        Ok(match e {
            ast::Expr::Column(n) => n.name().value.clone(),
            e => match self.eval_scalar(s, e)?.0 {
                Value::Str(v) => v.to_string(),
                _ => String::new(),
            },
        })
    }

    fn rollback(&mut self, s: &Statement, name: Option<&ast::Expr>) -> SqlResult<()> {
        if self.state.txns.count == 0 {
            return Err(SqlError::new(
                3903,
                "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION.",
            ));
        }
        if let Some(n) = name {
            let n = self.name_of(s, n)?;
            if self.state.txns.rollback_to(&n)? {
                return Ok(());
            }
            let outer = self.state.txns.name.as_deref();
            if !outer.is_some_and(|o| o.eq_ignore_ascii_case(&n)) {
                return Err(SqlError::new(
                    6401,
                    format!("Cannot roll back {n}. No transaction or savepoint of that name was found."),
                ));
            }
        }
        self.state.txns.rollback_all()?;
        self.sink.env_change(&EnvChange::RollbackTransaction);
        Ok(())
    }

    fn set_option(&mut self, s: &Statement, names: &[String], value: &ast::SetValue) -> SqlResult<()> {
        let on = match value {
            ast::SetValue::On => Some(true),
            ast::SetValue::Off => Some(false),
            _ => None,
        };
        let number = |r: &mut Self| -> SqlResult<i64> {
            match value {
                ast::SetValue::Expr(e) => match r.eval_scalar(s, e)?.0 {
                    Value::Int(n) => Ok(n),
                    _ => Ok(0),
                },
                _ => Err(SqlError::new(102, "Incorrect syntax near 'SET'.").with_severity(15)),
            }
        };
        let word = || match value {
            ast::SetValue::Word(w) => Some(w.clone()),
            ast::SetValue::Expr(ast::Expr::Literal(ast::Literal::String { value, .. })) => Some(value.clone()),
            ast::SetValue::Expr(ast::Expr::Column(n)) => Some(n.name().value.clone()),
            _ => None,
        };
        for name in names {
            let o = &mut self.state.options;
            match (name.as_str(), on) {
                ("NOCOUNT", Some(v)) => o.nocount = v,
                ("XACT_ABORT", Some(v)) => o.xact_abort = v,
                ("IMPLICIT_TRANSACTIONS", Some(v)) => o.implicit_transactions = v,
                ("ANSI_NULLS", Some(v)) => o.ansi_nulls = v,
                ("QUOTED_IDENTIFIER", Some(v)) => o.quoted_identifier = v,
                ("CONCAT_NULL_YIELDS_NULL", Some(v)) => o.concat_null_yields_null = v,
                ("ARITHABORT", Some(v)) => o.arithabort = v,
                ("ANSI_WARNINGS", Some(v)) => o.ansi_warnings = v,
                ("FMTONLY", Some(v)) => o.fmtonly = v,
                (
                    "ANSI_PADDING"
                    | "ANSI_NULL_DFLT_ON"
                    | "ANSI_NULL_DFLT_OFF"
                    | "ANSI_DEFAULTS"
                    | "CURSOR_CLOSE_ON_COMMIT"
                    | "NUMERIC_ROUNDABORT"
                    | "ARITHIGNORE"
                    | "NOEXEC"
                    | "PARSEONLY"
                    | "FORCEPLAN"
                    | "STATISTICS IO"
                    | "STATISTICS TIME"
                    | "STATISTICS XML"
                    | "STATISTICS PROFILE"
                    | "SHOWPLAN_ALL"
                    | "SHOWPLAN_TEXT"
                    | "SHOWPLAN_XML"
                    | "XACT_ABORT_OFF"
                    | "NO_BROWSETABLE"
                    | "REMOTE_PROC_TRANSACTIONS",
                    Some(_),
                ) => {}
                ("IDENTITY_INSERT", _) => {
                    let ast::SetValue::Table { table, on } = value else {
                        return Err(SqlError::new(102, "Incorrect syntax near 'IDENTITY_INSERT'.").with_severity(15));
                    };
                    let mut b = Binder::new(self.shared, self.state, &[]);
                    let rt = b.resolve_table(table)?;
                    if rt.table.identity_column().is_none() {
                        return Err(SqlError::new(
                            8106,
                            format!(
                                "Table '{}' does not have the identity property. Cannot perform SET operation.",
                                rt.table.name
                            ),
                        ));
                    }
                    let o = &mut self.state.options;
                    if *on {
                        if let Some((db, id)) = &o.identity_insert {
                            if !(db.eq_ignore_ascii_case(&rt.db) && *id == rt.table.id) {
                                return Err(SqlError::new(
                                    8107,
                                    format!("IDENTITY_INSERT is already ON for table '{}'. Cannot perform SET operation for table '{}'.", db, rt.table.name),
                                ));
                            }
                        }
                        o.identity_insert = Some((rt.db, rt.table.id));
                    } else if o
                        .identity_insert
                        .as_ref()
                        .is_some_and(|(db, id)| db.eq_ignore_ascii_case(&rt.db) && *id == rt.table.id)
                    {
                        o.identity_insert = None;
                    }
                }
                ("TEXTSIZE", None) => {
                    let n = number(self)?;
                    self.state.options.textsize = n;
                }
                ("LOCK_TIMEOUT", None) => {
                    let n = number(self)?;
                    self.state.options.lock_timeout = n;
                    self.state.txns.set_lock_timeout(n);
                }
                ("ROWCOUNT", None) => {
                    let n = number(self)?;
                    self.state.options.rowcount = n;
                }
                ("DATEFIRST", None) => {
                    let n = number(self)?;
                    if !(1..=7).contains(&n) {
                        return Err(SqlError::new(
                            2742,
                            "SET DATEFIRST 0 is out of range.".replace('0', &n.to_string()),
                        ));
                    }
                    self.state.options.datefirst = n;
                    self.state.functions.datefirst = n as u8;
                }
                ("DATEFORMAT", None) => {
                    let w = word().unwrap_or_default().to_lowercase();
                    if !["mdy", "dmy", "ymd", "ydm", "myd", "dym"].contains(&w.as_str()) {
                        return Err(SqlError::new(
                            1005,
                            format!("Line 1: Invalid parameter '{w}' for SET DATEFORMAT."),
                        ));
                    }
                    self.state.options.dateformat = w;
                }
                ("LANGUAGE", None) => {
                    let w = word().unwrap_or_default();
                    if !w.eq_ignore_ascii_case("us_english") && !w.eq_ignore_ascii_case("english") {
                        return Err(SqlError::new(2741, format!("SET LANGUAGE failed because '{w}' is not an official language name or a language alias on this SQL Server.")));
                    }
                    self.state.options.language = "us_english".to_string();
                    self.sink.message(&info(5703, "Changed language setting to us_english."));
                }
                ("TRANSACTION ISOLATION LEVEL", None) => {
                    self.state.options.isolation_level = word().unwrap_or_default();
                }
                ("DEADLOCK_PRIORITY", None) => {}
                (other, _) => {
                    return Err(
                        SqlError::new(195, format!("'{other}' is not a recognized SET option.")).with_severity(15)
                    );
                }
            }
        }
        self.state.rowcount = 0;
        Ok(())
    }

    fn wait_for(&mut self, s: &Statement, delay: bool, value: &ast::Expr) -> SqlResult<()> {
        let (v, t) = self.eval_scalar(s, value)?;
        let time = types::cast(&v, &t, &SqlType::Time { scale: 7 }, None)?;
        let Value::Time(ticks) = time else {
            return Err(SqlError::new(148, "Incorrect time syntax in time string used with WAITFOR.").with_severity(15));
        };
        let wait = if delay {
            std::time::Duration::from_nanos(ticks * 100)
        } else {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let today = std::time::Duration::from_secs(now.as_secs() % 86_400)
                + std::time::Duration::from_nanos(u64::from(now.subsec_nanos()));
            let target = std::time::Duration::from_nanos(ticks * 100);
            if target >= today {
                target - today
            } else {
                target + std::time::Duration::from_secs(86_400) - today
            }
        };
        let end = std::time::Instant::now() + wait;
        while std::time::Instant::now() < end {
            if self.state.cancel.load(Ordering::Relaxed) {
                return Err(SqlError::new(3617, "The query was cancelled.").with_severity(25));
            }
            std::thread::sleep((end - std::time::Instant::now()).min(std::time::Duration::from_millis(20)));
        }
        Ok(())
    }

    fn throw(&mut self, s: &Statement, args: Option<&(ast::Expr, ast::Expr, ast::Expr)>) -> SqlResult<SqlError> {
        let Some((n, m, st)) = args else {
            return match &self.state.caught {
                Some(e) => Ok(e.clone()),
                None => Err(SqlError::new(10704, "To rethrow an error, a THROW statement must be used inside a CATCH block. Insert the THROW statement inside a CATCH block, or add error parameters to the THROW statement.").with_severity(15)),
            };
        };
        let number = match self.eval_scalar(s, n)?.0 {
            Value::Int(n) if n >= 50000 => n as i32,
            Value::Int(n) => {
                return Err(SqlError::new(35100, format!("Error number {n} in the THROW statement is outside the valid range. Specify an error number in the valid range of 50000 to 2147483647.")));
            }
            _ => 50000,
        };
        let (mv, mt) = self.eval_scalar(s, m)?;
        let message = match types::cast(&mv, &mt, &SqlType::NVarChar(2048), None)? {
            Value::Str(s) => s.to_string(),
            _ => String::new(),
        };
        let state = match self.eval_scalar(s, st)?.0 {
            Value::Int(n) => n.clamp(0, 255) as u8,
            _ => 1,
        };
        Ok(SqlError::new(number, message).with_state(state))
    }

    fn raiserror(
        &mut self,
        s: &Statement,
        message: &ast::Expr,
        severity: &ast::Expr,
        state: &ast::Expr,
        args: &[ast::Expr],
        options: &[String],
    ) -> SqlResult<()> {
        let (mv, mt) = self.eval_scalar(s, message)?;
        let (number, format) = match mv {
            Value::Int(n) => {
                // No sys.messages: a message number has no text to raise.
                let severity = match self.eval_scalar(s, severity)?.0 {
                    Value::Int(v) => v,
                    _ => 16,
                };
                let state = match self.eval_scalar(s, state)?.0 {
                    Value::Int(v) => v,
                    _ => 1,
                };
                return Err(SqlError::new(
                    18054,
                    format!("Error {n}, severity {severity}, state {state} was raised, but no message with that error number was found in sys.messages. If error is larger than 50000, make sure the user-defined message is added using sp_addmessage."),
                ));
            }
            v => (
                50000,
                match types::cast(&v, &mt, &SqlType::NVarChar(2047), None)? {
                    Value::Str(s) => s.to_string(),
                    _ => String::new(),
                },
            ),
        };
        let severity = match self.eval_scalar(s, severity)?.0 {
            Value::Int(n) => n.clamp(0, 25) as u8,
            _ => 16,
        };
        if severity > 18 && !options.iter().any(|o| o == "LOG") {
            return Err(SqlError::new(2754, "Error severity levels greater than 18 can only be specified by members of the sysadmin role, using the WITH LOG option."));
        }
        let state = match self.eval_scalar(s, state)?.0 {
            Value::Int(n) => n.clamp(0, 255) as u8,
            _ => 1,
        };
        let mut values = Vec::new();
        for a in args {
            values.push(self.eval_scalar(s, a)?);
        }
        let text = format_message(&format, &values);
        let e =
            SqlError { number, severity, state, message: text, line: s.line, procedure: None, preceding: Vec::new() };
        if options.iter().any(|o| o == "SETERROR") {
            self.state.error = number;
        }
        if severity <= 10 {
            self.sink.message(&e);
            return Ok(());
        }
        Err(e)
    }
}

/// RAISERROR's printf-style substitution: %d %i %u %s %x %X %o with optional width.
pub fn format_message(format: &str, args: &[(Value, SqlType)]) -> String {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    let mut next = args.iter();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = chars.peek() {
            if d.is_ascii_digit() || matches!(d, '-' | '+' | ' ' | '#' | '.' | 'l' | 'h' | 'I' | '6' | '4') {
                spec.push(d);
                chars.next();
            } else {
                break;
            }
        }
        let Some(kind) = chars.next() else { break };
        let text = match next.next() {
            None => "(null)".to_string(),
            Some((v, t)) => match kind {
                'x' | 'X' | 'o' => match v {
                    Value::Int(n) => match kind {
                        'x' => format!("{n:x}"),
                        'X' => format!("{n:X}"),
                        _ => format!("{n:o}"),
                    },
                    _ => "(null)".into(),
                },
                _ => {
                    if v.is_null() {
                        "(null)".to_string()
                    } else {
                        types::display_text(v, t)
                    }
                }
            },
        };
        let width: usize =
            spec.trim_start_matches(['-', '+', ' ', '#']).split('.').next().unwrap_or("").parse().unwrap_or(0);
        if text.chars().count() < width {
            let pad = " ".repeat(width - text.chars().count());
            if spec.starts_with('-') {
                out.push_str(&text);
                out.push_str(&pad);
            } else {
                out.push_str(&pad);
                out.push_str(&text);
            }
        } else {
            out.push_str(&text);
        }
    }
    out
}

fn type_args(t: &SqlType) -> Vec<ast::TypeArg> {
    use tessera_access::row::MAX;
    let n = |x: u16| if x == MAX { ast::TypeArg::Max } else { ast::TypeArg::Number(u32::from(x)) };
    match *t {
        SqlType::Char(x)
        | SqlType::VarChar(x)
        | SqlType::NChar(x)
        | SqlType::NVarChar(x)
        | SqlType::Binary(x)
        | SqlType::VarBinary(x) => vec![n(x)],
        SqlType::Decimal { precision, scale } => {
            vec![ast::TypeArg::Number(precision.into()), ast::TypeArg::Number(scale.into())]
        }
        SqlType::Time { scale } | SqlType::DateTime2 { scale } | SqlType::DateTimeOffset { scale } => {
            vec![ast::TypeArg::Number(scale.into())]
        }
        _ => Vec::new(),
    }
}

/// `[name]` unless the name is a plain identifier (or already qualified/bracketed).
fn quote_name(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '#' | '@')) {
        name.to_string()
    } else {
        format!("[{}]", name.replace(']', "]]"))
    }
}

/// Whether a statement names a `#temp` table, whose columns may only be known once an
/// earlier statement of the batch created it (so its compile errors wait for run time).
fn mentions_temp_table(s: &Statement) -> bool {
    fn named(n: &ast::ObjectName) -> bool {
        n.name().value.starts_with('#') || n.name().value.starts_with('@')
    }
    fn in_refs(refs: &[ast::TableRef]) -> bool {
        refs.iter().any(|r| match r {
            ast::TableRef::Named { name, .. } => named(name),
            ast::TableRef::Join { left, right, .. } => {
                in_refs(std::slice::from_ref(left)) || in_refs(std::slice::from_ref(right))
            }
            ast::TableRef::Derived { query, .. } => in_query(query),
            ast::TableRef::Function { .. } => false,
        })
    }
    fn in_set(body: &ast::SetExpr) -> bool {
        match body {
            ast::SetExpr::Select(s) => in_refs(&s.from),
            ast::SetExpr::Query(q) => in_query(q),
            ast::SetExpr::SetOperation { left, right, .. } => in_set(left) || in_set(right),
            ast::SetExpr::Values(_) => false,
        }
    }
    fn in_query(q: &ast::Query) -> bool {
        in_set(&q.body) || q.with.iter().any(|c| in_query(&c.query))
    }
    match &s.kind {
        StatementKind::Query(q) => in_query(q),
        StatementKind::Insert(i) => named(&i.table) || matches!(&i.source, ast::InsertSource::Query(q) if in_query(q)),
        StatementKind::Update(u) => named(&u.table) || in_refs(&u.from),
        StatementKind::Delete(d) => named(&d.table) || in_refs(&d.from),
        _ => false,
    }
}

/// `SET @v = expr` as the equivalent `SELECT @v = expr`.
fn assign_select(name: &str, op: Option<ast::BinaryOp>, value: &ast::Expr) -> ast::Select {
    ast::Select {
        distinct: false,
        top: None,
        items: vec![ast::SelectItem::Assign { variable: name.to_string(), op, value: value.clone() }],
        into: None,
        from: Vec::new(),
        selection: None,
        group_by: Vec::new(),
        having: None,
    }
}
