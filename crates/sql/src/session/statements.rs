//! The statement loop: a block's statements in order (GOTO finds its label), each run with
//! SQL Server's error handling and autocommit around it, and the dispatch of a statement to
//! what runs it.

use super::transactions::starts_implicit_transaction;
use super::{Flow, Runner, Stop};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::output::EnvChange;
use tessera_semantics::output::ResultSink;
use tessera_semantics::plan::Prepared;
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{self, Statement, StatementKind};

/// Most statements one batch may run (loops included) before it is stopped.
const MAX_STATEMENTS_PER_BATCH: u64 = 1 << 40;

impl Runner<'_> {
    pub(super) fn run_block(&mut self, stmts: &[Statement]) -> Result<Flow, Stop> {
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

    /// Runs one statement with SQL Server's error handling around it; under SET STATISTICS
    /// TIME a query, data change or EXEC is followed by its execution times.
    pub(super) fn run_one(&mut self, s: &Statement) -> Result<Flow, Stop> {
        let timed = matches!(
            s.kind,
            StatementKind::Query(_)
                | StatementKind::Insert(_)
                | StatementKind::Update(_)
                | StatementKind::Delete(_)
                | StatementKind::Merge(_)
                | StatementKind::Execute(_)
                | StatementKind::ExecuteString(_)
        );
        if !(timed && self.state.options.statistics_time) {
            return self.run_statement(s);
        }
        let watch = tessera_execution::statistics::Stopwatch::start();
        let result = self.run_statement(s);
        self.sink.message(&watch.execution_message());
        result
    }

    fn run_statement(&mut self, s: &Statement) -> Result<Flow, Stop> {
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
        if self.state.txns.doomed && self.state.txns.count > 0 && writes(&s.kind) {
            return self.fail(s, msg::UNCOMMITTABLE_TRANSACTION.err());
        }
        self.state.txns.mark_statement();
        self.state.null_eliminated = false;
        self.begin_autocommit();
        match self.exec(s) {
            Ok(flow) => {
                // An autocommit statement's commit below releases its statement locks
                // with the rest.
                if self.state.nest_level == 0 && self.state.txns.count != 0 {
                    self.state.txns.end_statement();
                }
                if let Err(e) = self.end_autocommit() {
                    return self.fail(s, e);
                }
                // A definition's DONE, once it is committed (queries and data changes
                // sent theirs as they ran).
                if let Some(command) = super::commands::definition_command(&s.kind) {
                    self.sink.done(None, command);
                }
                // A database over its resource limits waits here, its locks released
                // when it commits.
                if let Err(e) = self.state.pace_statement() {
                    return self.fail(s, e);
                }
                if !matches!(s.kind, StatementKind::Declare(_) | StatementKind::Label(_)) {
                    self.state.error = 0;
                }
                Ok(flow)
            }
            Err(_) if std::mem::take(&mut self.nested_aborted) => {
                self.sink.release();
                Err(Stop::Abort)
            }
            Err(e) => {
                self.sink.release();
                self.fail(s, e)
            }
        }
    }

    pub(super) fn exec(&mut self, s: &Statement) -> SqlResult<Flow> {
        self.refuse_readonly(s)?;
        match &s.kind {
            StatementKind::Query(q) if q.into_target().is_some() => {
                self.select_into(s, q)?;
            }
            StatementKind::Update(u) if u.current_of.is_some() => {
                let assigned: Vec<String> = u
                    .assignments
                    .iter()
                    .filter_map(|a| match a {
                        ast::Assignment::Column { column, .. } | ast::Assignment::Both { column, .. } => {
                            column.0.last().map(|c| c.value.clone())
                        }
                        ast::Assignment::Write { column, .. } => Some(column.value.clone()),
                        ast::Assignment::Variable { .. } => None,
                    })
                    .collect();
                let current = u.current_of.as_ref().expect("WHERE CURRENT OF");
                self.change_current_row(s, &u.table, &assigned, current)?;
            }
            StatementKind::Delete(d) if d.current_of.is_some() => {
                let current = d.current_of.as_ref().expect("WHERE CURRENT OF");
                self.change_current_row(s, &d.table, &[], current)?;
            }
            StatementKind::SetVariable { name, op: None, value } if self.is_cursor_variable(name) => {
                self.set_cursor_variable(name, value)?;
            }
            StatementKind::Cursor(c) => self.cursor_statement(s, c)?,
            StatementKind::Insert(i) if matches!(i.source, ast::InsertSource::Execute(_)) => {
                self.insert_exec(s, i)?;
            }
            StatementKind::Query(_)
            | StatementKind::Insert(_)
            | StatementKind::Update(_)
            | StatementKind::Delete(_)
            | StatementKind::Merge(_)
            | StatementKind::SetVariable { .. } => {
                let found = self.compile_locked(s)?;
                let p = &*found.plan;
                self.changing =
                    matches!(p, Prepared::Insert(_) | Prepared::Update(_) | Prepared::Delete(_) | Prepared::Merge(_));
                let query_store = self.query_store_start();
                let clock = tessera_execution::statistics::RunClock::start();
                let ran = self.run_prepared(s, p);
                let run = clock.finish(u64::try_from(self.state.rowcount).unwrap_or(0));
                found.stats.record(run);
                tessera_waits::add_request_work(run.physical_reads, run.logical_reads, run.rows);
                if let Some(store) = query_store {
                    self.query_store_record(store, s, &found, run, &ran);
                }
                ran?;
                self.changing = false;
            }
            StatementKind::InsertBulk(b) => self.insert_bulk(b)?,
            StatementKind::Declare(decls) => self.declare(s, decls)?,
            StatementKind::Print(e) => {
                let (v, t) = self.eval_scalar(s, e)?;
                // At most 8,000 bytes, as SQL Server: 8,000 characters of varchar, 4,000
                // of nvarchar.
                let to = if matches!(t, SqlType::NChar(_) | SqlType::NVarChar(_)) {
                    SqlType::NVarChar(4000)
                } else {
                    SqlType::VarChar(8000)
                };
                let text = types::cast(&v, &t, &to, None)?;
                let msg = match text {
                    Value::Str(s) => s.to_string(),
                    _ => String::new(),
                };
                self.sink.message(&SqlError::informational(0, msg));
                self.state.rowcount = 0;
            }
            StatementKind::Use(db) => self.use_database(&db.value, s.line)?,
            StatementKind::CreateUser { .. }
            | StatementKind::AlterUser { .. }
            | StatementKind::DropUser { .. }
            | StatementKind::CreateRole { .. }
            | StatementKind::AlterRole { .. }
            | StatementKind::DropRole { .. }
            | StatementKind::CreateApplicationRole { .. }
            | StatementKind::AlterApplicationRole { .. }
            | StatementKind::DropApplicationRole { .. }
            | StatementKind::DropSchema { .. }
            | StatementKind::AlterAuthorization { .. }
            | StatementKind::Permission(_) => self.database_security(&s.kind)?,
            StatementKind::ExecuteAs { target, no_revert } => self.execute_as(target, *no_revert)?,
            StatementKind::Revert => self.revert()?,
            StatementKind::Kill(spid) => self.kill(*spid)?,
            // BEGIN TRANSACTION and COMMIT set @@ROWCOUNT to 0, as SQL Server documents.
            StatementKind::BeginTransaction { name } => {
                self.begin_transaction(s, name.as_ref())?;
                self.state.rowcount = 0;
            }
            StatementKind::Commit { delayed_durability, .. } => {
                self.commit(*delayed_durability)?;
                self.state.rowcount = 0;
            }
            StatementKind::Rollback { name } => self.rollback(s, name.as_ref())?,
            StatementKind::SaveTransaction { name } => self.save_transaction(s, name)?,
            StatementKind::SetOption { options, value } => self.set_option(s, options, value)?,
            StatementKind::CreateLogin { .. }
            | StatementKind::AlterLogin { .. }
            | StatementKind::DropLogin(_)
            | StatementKind::AlterServerRole { .. } => self.security_statement(&s.kind)?,
            StatementKind::CreateDatabase(_)
            | StatementKind::DropDatabase { .. }
            | StatementKind::AlterDatabase { .. }
            | StatementKind::CreateTable(_)
            | StatementKind::DropTable { .. }
            | StatementKind::AlterTable { .. }
            | StatementKind::TruncateTable(_)
            | StatementKind::CreateIndex(_)
            | StatementKind::DropIndex { .. }
            | StatementKind::CreateProcedure(_)
            | StatementKind::CreateFunction(_)
            | StatementKind::CreateView(_)
            | StatementKind::CreateTrigger(_)
            | StatementKind::EnableTrigger { .. }
            | StatementKind::DropModule { .. }
            | StatementKind::CreateSequence { .. }
            | StatementKind::CreateSynonym { .. }
            | StatementKind::CreateTableType { .. }
            | StatementKind::AlterSequence { .. }
            | StatementKind::DropSequence { .. }
            | StatementKind::CreateSchema { .. } => self.define(s)?,
            StatementKind::ResourceGovernor(_)
            | StatementKind::BufferPoolExtension(_)
            | StatementKind::ProcessAffinity(_)
            | StatementKind::Checkpoint
            | StatementKind::Backup(_)
            | StatementKind::Restore(_)
            | StatementKind::Reconfigure { .. } => self.server_statement(s)?,
            StatementKind::Label(_) => {}
            StatementKind::Goto(l) => return Ok(Flow::Goto(l.value.clone())),
            StatementKind::Break => return Ok(Flow::Break),
            StatementKind::Continue => return Ok(Flow::Continue),
            StatementKind::Return(None) => return Ok(Flow::Return(None)),
            StatementKind::Return(Some(e)) => return self.return_value(s, e),
            StatementKind::WaitFor { delay, value } => self.wait_for(s, *delay, value)?,
            StatementKind::Throw(args) => return Err(self.throw(s, args.as_ref())?),
            StatementKind::RaisError { message, severity, state, args, options } => {
                self.raiserror(s, message, severity, state, args, options)?
            }
            StatementKind::Dbcc { command, args, options } => self.dbcc(s, command, args, options)?,
            StatementKind::If { .. }
            | StatementKind::While { .. }
            | StatementKind::Block(_)
            | StatementKind::TryCatch { .. } => {
                unreachable!("control flow runs in run_control")
            }
            StatementKind::Execute(_) | StatementKind::ExecuteString(_) => unreachable!("EXEC runs in run_one"),
        }
        self.fire_ddl_triggers(s)?;
        Ok(Flow::Next)
    }

    /// USE: `line` is the statement's, which its message 5701 carries.
    fn use_database(&mut self, name: &str, line: u32) -> SqlResult<()> {
        if !self.shared.engine.exists(name) {
            return Err(tessera_semantics::catalog::database_not_found(name));
        }
        if self.state.application_role().is_some_and(|(db, _)| !db.eq_ignore_ascii_case(name)) {
            return Err(msg::DATABASE_CHANGE_NOT_ALLOWED.err());
        }
        // A fleet server's fence: a database the tenant directory gives to another server.
        if !self.shared.admits(name) {
            return Err(msg::DATABASE_NOT_CURRENTLY_AVAILABLE.with(&[&name, &self.shared.server_name]));
        }
        let db = self.shared.database(name)?;
        tessera_execution::ddl::principals::check_access(self.shared, self.state, db.name())?;
        let old = std::mem::replace(&mut self.state.database, db.name().to_string());
        // The views show the request in the database it is in now (dm_exec_requests,
        // sp_who), not the one its batch began in.
        let activity = self.shared.sessions.lock().get(&self.state.spid).map(|info| info.activity.clone());
        if let Some(activity) = activity {
            activity.lock().database.clone_from(&self.state.database);
        }
        self.shared.refresh_default_schema(self.state);
        self.sink.env_change(&EnvChange::Database { old, new: db.name().to_string() });
        self.sink.message(&msg::DATABASE_CONTEXT_CHANGED.with(&[&db.name()]).at_line(line));
        self.state.rowcount = 0;
        Ok(())
    }
}

/// Whether a statement of this kind writes to the log: what a doomed transaction refuses
/// (3930) until it is rolled back.
fn writes(kind: &StatementKind) -> bool {
    matches!(
        kind,
        StatementKind::Insert(_)
            | StatementKind::Update(_)
            | StatementKind::Delete(_)
            | StatementKind::Merge(_)
            | StatementKind::InsertBulk(_)
    ) || matches!(kind, StatementKind::Query(q) if q.into_target().is_some())
        || super::commands::definition_command(kind).is_some()
}
