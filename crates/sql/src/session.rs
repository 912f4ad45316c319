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

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::ast::{self, Statement, StatementKind};
use crate::bind::{Binder, BoundQuery};
use crate::cache::{CachedBatch, Compiled};
use crate::ddl;
use crate::dml::{self, Prepared};
use crate::error::{SqlError, SqlResult};
use crate::output::{EnvChange, ResultSink};
use crate::plan::{eval, run, Expr};
use crate::runtime::{ExecCtx, SessionState, Shared};
use crate::types::{self, SqlType, Value};

/// Most statements one batch may run (loops included) before it is stopped.
const MAX_STATEMENTS_PER_BATCH: u64 = 1 << 40;

pub struct Session {
    pub shared: Arc<Shared>,
    pub state: SessionState,
}

/// How a statement ended, for the enclosing control flow.
enum Flow {
    Next,
    Break,
    Continue,
    Return,
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
    SqlError { number, severity: 0, state: 1, message: message.into(), line: 0, procedure: None }
}

/// Errors that end the batch, not just the statement (with XACT_ABORT OFF).
fn aborts_batch(e: &SqlError) -> bool {
    matches!(e.number, 208 | 245 | 241 | 242 | 8114 | 8169 | 529 | 1205 | 3617 | 701) || e.severity >= 20
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
}

fn addr<T>(x: &T) -> usize {
    x as *const T as usize
}

impl Frame {
    fn of(batch: &ast::Batch) -> SqlResult<Frame> {
        let mut f = Frame { decls: Vec::new(), visible: HashMap::new() };
        f.walk(&batch.statements)?;
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
                        let ty = match &d.kind {
                            ast::DeclarationKind::Scalar { ty, .. } => {
                                types::resolve_type(ty, false).map_err(|e| e.at_line(s.line))?
                            }
                            ast::DeclarationKind::Table { .. } => {
                                return Err(
                                    SqlError::new(40523, "Table variables are not supported yet.").at_line(s.line)
                                )
                            }
                        };
                        self.decls.push((lower, ty));
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
        Ok(Session { state: SessionState::new(spid, login, database), shared })
    }

    pub fn database(&self) -> &str {
        &self.state.database
    }

    /// Ends the session: rolls back an open transaction and drops its temp tables.
    pub fn close(&mut self) {
        let _ = self.state.txns.rollback_all();
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
        self.execute_inner(text, &mut watch);
        watch.failed
    }

    fn execute_inner(&mut self, text: &str, sink: &mut dyn ResultSink) {
        self.state.cancel.store(false, Ordering::Relaxed);
        let shared = self.shared.clone();
        let cached = match shared.plans.get_or_parse(&self.state.database, text, crate::parser::parse_batch) {
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
        let mut runner = Runner {
            shared: &shared,
            state: &mut self.state,
            batch: &cached,
            frame: &frame,
            sink,
            try_depth: 0,
            executed: 0,
        };
        if let Err(e) = runner.compile_all(&cached.batch.statements) {
            runner.sink.message(&e);
            runner.state.error = e.number;
            return;
        }
        let _ = runner.run_block(&cached.batch.statements);
        shared.plans.account();
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

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
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
}

impl<'a> Runner<'a> {
    fn visible(&self, stmt: &Statement) -> &'a [(String, SqlType)] {
        let n = self.frame.visible.get(&addr(stmt)).copied().unwrap_or(self.frame.decls.len());
        &self.frame.decls[..n]
    }

    /// Fingerprint of the session state plans depend on: which table has IDENTITY_INSERT
    /// on, and which session's temp tables `#names` mean.
    fn context(&self) -> u64 {
        let mut h = match &self.state.options.identity_insert {
            Some((db, id)) => (*id as u32 as u64) ^ ((db.len() as u64) << 32),
            None => 0,
        };
        if !self.state.temp_tables.is_empty() {
            h ^= (self.state.spid as u64) << 40;
        }
        h
    }

    fn current_version(&self, db: &str) -> Option<u64> {
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
        let deps = std::mem::take(&mut b.deps.databases);
        let versions = deps.iter().filter_map(|d| self.current_version(d).map(|v| (d.clone(), v))).collect();
        let plan = Arc::new(prepared);
        self.batch.store(key, Compiled { versions, context, plan: plan.clone() });
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
                    Err(e) if matches!(e.number, 208 | 911) => {}
                    Err(e) if mentions_temp_table(s) => {}
                    Err(e) => return Err(e.at_line(s.line)),
                },
            }
        }
        Ok(())
    }

    fn scalar(&mut self, stmt: &Statement, e: &ast::Expr, predicate: bool) -> SqlResult<(Expr, SqlType)> {
        let vars = self.visible(stmt);
        let p = self.prepared(addr(e), vars, |b| {
            let (x, t) = if predicate { (b.bind_predicate(e)?, SqlType::Bit) } else { b.bind_expr(e)? };
            Ok(Prepared::Query(BoundQuery {
                plan: crate::plan::Plan::Values(vec![vec![x]]),
                columns: vec![crate::bind::OutputColumn { name: String::new(), ty: t, nullable: true }],
            }))
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
        if self.state.options.implicit_transactions
            && self.state.txns.count == 0
            && starts_implicit_transaction(&s.kind)
        {
            self.state.txns.count = 1;
        }
        self.state.txns.mark_statement();
        match self.exec(s) {
            Ok(flow) => {
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
        let e = e.at_line(s.line);
        self.state.error = e.number;
        let txns = &mut self.state.txns;
        let doom = self.state.options.xact_abort || e.number == 1205;
        if doom && self.try_depth == 0 {
            let _ = txns.rollback_all();
        } else {
            let _ = txns.rollback_statement();
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
        self.sink.message(&e);
        if doom || aborts_batch(&e) {
            return Err(Stop::Abort);
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

    fn emit(&mut self, columns: &[crate::bind::OutputColumn], rows: &[Vec<Value>]) {
        self.sink.columns(columns);
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
            StatementKind::Query(_)
            | StatementKind::Insert(_)
            | StatementKind::Update(_)
            | StatementKind::Delete(_)
            | StatementKind::SetVariable { .. } => {
                let p = self.compile_statement(s)?.expect("compiled statement");
                self.run_prepared(&p)?;
            }
            StatementKind::Declare(decls) => {
                for d in decls {
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
            StatementKind::CreateDatabase(cd) => self.with_ctx(|ctx| ddl::create_database(ctx, cd))?,
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
            StatementKind::Return(None) => return Ok(Flow::Return),
            StatementKind::Return(Some(_)) => {
                return Err(SqlError::new(
                    178,
                    "A RETURN statement with a return value cannot be used in this context.",
                )
                .with_severity(15))
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
            StatementKind::Reconfigure { .. } => {}
            StatementKind::If { .. }
            | StatementKind::While { .. }
            | StatementKind::Block(_)
            | StatementKind::TryCatch { .. } => {
                unreachable!("control flow runs in run_control")
            }
            StatementKind::CreateProcedure(_)
            | StatementKind::CreateFunction(_)
            | StatementKind::CreateView(_)
            | StatementKind::DropModule { .. } => {
                return Err(SqlError::new(40524, "Procedures, functions and views are not supported yet."));
            }
            StatementKind::Execute(e) => {
                return Err(SqlError::new(
                    2812,
                    format!(
                        "Could not find stored procedure '{}'.",
                        e.procedure.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".")
                    ),
                ));
            }
            StatementKind::ExecuteString(_) => return Err(SqlError::new(40525, "EXEC (string) is not supported yet.")),
        }
        Ok(Flow::Next)
    }

    fn with_ctx<T>(&mut self, f: impl FnOnce(&mut ExecCtx) -> SqlResult<T>) -> SqlResult<T> {
        let mut ctx = ExecCtx::new(self.shared, self.state);
        f(&mut ctx)
    }

    fn run_prepared(&mut self, p: &Prepared) -> SqlResult<()> {
        match p {
            Prepared::Query(q) => {
                // SQL Server sends a result's column metadata before its rows; an error while
                // producing them arrives after the header.
                let rows = match self.with_ctx(|ctx| run(&q.plan, &[], ctx)) {
                    Ok(rows) => rows,
                    Err(e) => {
                        self.sink.columns(&q.columns);
                        return Err(e);
                    }
                };
                self.state.rowcount = rows.len() as i64;
                self.emit(&q.columns, &rows);
            }
            Prepared::Assign { plan, targets } => {
                let n = self.with_ctx(|ctx| dml::run_assign(ctx, plan, targets))?;
                self.null_warning();
                self.state.rowcount = n as i64;
            }
            Prepared::Insert(i) => {
                let (n, out) = self.with_ctx(|ctx| dml::run_insert(ctx, i))?;
                if let Some(o) = &i.output {
                    self.emit_output(&o.columns, &out);
                }
                self.affected(n);
            }
            Prepared::Update(u) => {
                let (n, out) = self.with_ctx(|ctx| dml::run_update(ctx, u))?;
                if let Some(o) = &u.output {
                    self.emit_output(&o.columns, &out);
                }
                self.affected(n);
            }
            Prepared::Delete(d) => {
                let (n, out) = self.with_ctx(|ctx| dml::run_delete(ctx, d))?;
                if let Some(o) = &d.output {
                    self.emit_output(&o.columns, &out);
                }
                self.affected(n);
            }
        }
        Ok(())
    }

    /// OUTPUT rows come as a result set whose count is the statement's.
    fn emit_output(&mut self, columns: &[crate::bind::OutputColumn], rows: &[Vec<Value>]) {
        self.sink.columns(columns);
        for r in rows {
            self.sink.row(r);
        }
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
            if outer.is_some_and(|o| !o.eq_ignore_ascii_case(&n)) {
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
                (
                    "ANSI_PADDING"
                    | "ANSI_NULL_DFLT_ON"
                    | "ANSI_NULL_DFLT_OFF"
                    | "ANSI_DEFAULTS"
                    | "CURSOR_CLOSE_ON_COMMIT"
                    | "NUMERIC_ROUNDABORT"
                    | "ARITHIGNORE"
                    | "NOEXEC"
                    | "FMTONLY"
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
            Value::Int(n) => (n as i32, format!("Error {n} was raised by RAISERROR.")),
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
        let e = SqlError { number, severity, state, message: text, line: s.line, procedure: None };
        if options.iter().any(|o| o == "SETERROR") {
            self.state.error = number;
        }
        if severity <= 10 {
            self.sink.message(&e);
            return Ok(());
        }
        Err(e)
    }

    fn dbcc(&mut self, s: &Statement, command: &str, args: &[ast::Expr], _options: &[String]) -> SqlResult<()> {
        match command {
            "FREEPROCCACHE" => {
                self.shared.plans.clear();
                self.sink.message(&info(2528, "DBCC execution completed. If DBCC printed error messages, contact your system administrator."));
            }
            "CHECKDB" => {
                let name = match args.first() {
                    Some(e) => match e {
                        ast::Expr::Column(n) => n.name().value.clone(),
                        e => match self.eval_scalar(s, e)?.0 {
                            Value::Str(v) => v.to_string(),
                            _ => self.state.database.clone(),
                        },
                    },
                    None => self.state.database.clone(),
                };
                let db = self.shared.database(&name)?;
                let trees = db.check()?;
                let objects = trees.len();
                self.sink.message(&info(
                    8989,
                    format!("CHECKDB found 0 allocation errors and 0 consistency errors in database '{}'.", db.name()),
                ));
                let _ = objects;
                self.sink.message(&info(2528, "DBCC execution completed. If DBCC printed error messages, contact your system administrator."));
            }
            _ => {
                return Err(SqlError::new(2526, format!("Incorrect DBCC statement. Check the documentation for the correct DBCC syntax and options. ({command})")))
            }
        }
        Ok(())
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
        SqlType::Time { scale } | SqlType::DateTime2 { scale } => vec![ast::TypeArg::Number(scale.into())],
        _ => Vec::new(),
    }
}

/// Whether a statement names a `#temp` table, whose columns may only be known once an
/// earlier statement of the batch created it (so its compile errors wait for run time).
fn mentions_temp_table(s: &Statement) -> bool {
    fn named(n: &ast::ObjectName) -> bool {
        n.name().value.starts_with('#')
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
