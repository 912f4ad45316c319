//! The statement loop: a block's statements in order (GOTO finds its label), each run with
//! SQL Server's error handling and autocommit around it, and the dispatch of a statement to
//! what runs it.

use super::transactions::starts_implicit_transaction;
use super::{Flow, Runner, Stop};
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::ddl;
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::ModuleKind;
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
        self.state.txns.mark_statement();
        self.state.null_eliminated = false;
        // In autocommit mode the statement is done when its commit is: its DONE waits.
        if self.state.txns.count == 0 {
            self.sink.hold();
        }
        match self.exec(s) {
            Ok(flow) => {
                // An autocommit statement's commit below releases its statement locks
                // with the rest.
                if self.state.nest_level == 0 && self.state.txns.count != 0 {
                    self.state.txns.end_statement();
                }
                if self.state.txns.count == 0 {
                    if let Err(e) = self.state.txns.commit_all(false) {
                        self.sink.discard();
                        return self.fail(s, e);
                    }
                }
                self.sink.release();
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
            Err(e) => {
                self.sink.release();
                self.fail(s, e)
            }
        }
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
            StatementKind::InsertBulk(b) => self.insert_bulk(b)?,
            StatementKind::Declare(decls) => self.declare(s, decls)?,
            StatementKind::Print(e) => {
                let (v, t) = self.eval_scalar(s, e)?;
                let text = types::cast(&v, &t, &SqlType::NVarChar(4000), None)?;
                let msg = match text {
                    Value::Str(s) => s.to_string(),
                    _ => String::new(),
                };
                self.sink.message(&SqlError::informational(0, msg));
                self.state.rowcount = 0;
            }
            StatementKind::Use(db) => self.use_database(&db.value)?,
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
            StatementKind::CreateSchema { name, elements, .. } => {
                self.database_security(&s.kind)?;
                for element in elements {
                    let mut element = element.clone();
                    match &mut element.kind {
                        StatementKind::CreateTable(ct) => ct.name = super::permissions::in_schema(&ct.name, name),
                        StatementKind::CreateView(cv) => cv.name = super::permissions::in_schema(&cv.name, name),
                        _ => {}
                    }
                    self.exec(&element)?;
                }
            }
            StatementKind::ExecuteAs { target, no_revert } => self.execute_as(target, *no_revert)?,
            StatementKind::Revert => self.revert()?,
            StatementKind::Kill(spid) => self.kill(*spid)?,
            StatementKind::BeginTransaction { name } => self.begin_transaction(s, name.as_ref())?,
            StatementKind::Commit { delayed_durability, .. } => self.commit(*delayed_durability)?,
            StatementKind::Rollback { name } => self.rollback(s, name.as_ref())?,
            StatementKind::SaveTransaction { name } => self.save_transaction(s, name)?,
            StatementKind::SetOption { options, value } => self.set_option(s, options, value)?,
            StatementKind::CreateDatabase(cd) => {
                if !self.shared.holds_server(self.state, "CREATE ANY DATABASE") {
                    return Err(SqlError::new(262, "CREATE DATABASE permission denied in database 'master'."));
                }
                self.with_ctx(|ctx| ddl::create_database(ctx, cd))?
            }
            StatementKind::ResourceGovernor(statement) => {
                let in_transaction = self.state.txns.count > 0;
                self.with_ctx(|ctx| {
                    tessera_execution::ddl::resource_governor::execute(ctx, statement, in_transaction)
                })?;
            }
            StatementKind::BufferPoolExtension(setting) => {
                if !self.shared.holds_server(self.state, "ALTER SETTINGS") {
                    return Err(tessera_execution::security::no_permission());
                }
                let setting =
                    setting.clone().map(|(file, bytes)| tessera_execution::config::ExtensionSetting { file, bytes });
                self.shared.config.set_extension(&self.shared.engine, setting)?;
            }
            StatementKind::ProcessAffinity(ranges) => {
                if !self.shared.holds_server(self.state, "ALTER SETTINGS") {
                    return Err(tessera_execution::security::no_permission());
                }
                let cpus = ranges.as_ref().map(|r| r.iter().flat_map(|&(a, b)| a as usize..=b as usize).collect());
                self.shared.config.set_process_affinity(cpus.as_ref())?;
            }
            StatementKind::CreateLogin { .. }
            | StatementKind::AlterLogin { .. }
            | StatementKind::DropLogin(_)
            | StatementKind::AlterServerRole { .. } => self.security_statement(&s.kind)?,
            StatementKind::DropDatabase { names, if_exists } => {
                for n in names {
                    if !self.may_control_database(&n.value)? {
                        return Err(SqlError::new(
                            3701,
                            format!("Cannot drop the database '{}', because it does not exist or you do not have permission.", n.value),
                        ));
                    }
                    self.with_ctx(|ctx| ddl::drop_database(ctx, n, *if_exists))?;
                }
            }
            StatementKind::AlterDatabase { name, action } => {
                let target = if name.is("CURRENT") { self.state.database.clone() } else { name.value.clone() };
                if !self.may_control_database(&target)? {
                    return Err(SqlError::new(
                        5011,
                        format!("User does not have permission to alter database '{target}', the database does not exist, or the database is not in a state that allows access checks."),
                    )
                    .with_severity(14));
                }
                self.with_ctx(|ctx| ddl::alter_database(ctx, name, action))?
            }
            StatementKind::CreateTable(ct) => {
                self.check_create("CREATE TABLE", &ct.name)?;
                self.check_references(&ct.columns, &ct.constraints)?;
                self.with_ctx(|ctx| ddl::create_table(ctx, ct))?
            }
            StatementKind::DropTable { names, if_exists } => {
                for n in names {
                    self.check_alter(n, || {
                        SqlError::new(
                            3701,
                            format!(
                                "Cannot drop the table '{}', because it does not exist or you do not have permission.",
                                object_shown(n)
                            ),
                        )
                    })?;
                    self.with_ctx(|ctx| ddl::drop_table(ctx, n, *if_exists))?;
                }
            }
            StatementKind::AlterTable { table, action } => {
                self.check_alter(table, || cannot_find(4902, table))?;
                if let ast::AlterTableAction::Add { columns, constraints } = action {
                    self.check_references(columns, constraints)?;
                }
                self.with_ctx(|ctx| ddl::alter_table(ctx, table, action))?
            }
            StatementKind::TruncateTable(t) => {
                self.check_alter(t, || cannot_find(1088, t))?;
                self.with_ctx(|ctx| ddl::truncate_table(ctx, t))?
            }
            StatementKind::CreateIndex(ci) => {
                self.check_alter(&ci.table, || cannot_find(1088, &ci.table))?;
                self.with_ctx(|ctx| ddl::create_index(ctx, ci))?
            }
            StatementKind::DropIndex { indexes, if_exists } => {
                for (ix, t) in indexes {
                    self.check_alter(t, || cannot_find(1088, t))?;
                    self.with_ctx(|ctx| ddl::drop_index(ctx, ix, t, *if_exists))?;
                }
            }
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
            StatementKind::Checkpoint => {
                let db = self.shared.database(&self.state.database)?;
                db.checkpoint()?;
            }
            StatementKind::Dbcc { command, args, options } => self.dbcc(s, command, args, options)?,
            StatementKind::Backup(b) => {
                let database = self.database_ref(s, &b.database)?;
                let (devices, options) = self.backup_arguments(s, &b.devices, &b.options)?;
                let shared = self.shared.arc();
                let history = tessera_execution::backup::backup(
                    &shared,
                    self.state,
                    b.log,
                    &database,
                    devices,
                    &options,
                    &mut self.sink,
                )?;
                self.record_history(history);
            }
            StatementKind::Restore(r) => {
                let database = match &r.database {
                    Some(d) => Some(self.database_ref(s, d)?),
                    None => None,
                };
                let (devices, options) = self.backup_arguments(s, &r.devices, &r.options)?;
                let shared = self.shared.arc();
                let history = tessera_execution::backup::restore(
                    &shared,
                    self.state,
                    r.kind,
                    database.as_deref(),
                    devices,
                    &options,
                    &mut self.sink,
                )?;
                self.record_history(history);
            }
            StatementKind::Reconfigure { .. } => {
                if !self.shared.holds_server(self.state, "ALTER SETTINGS") {
                    return Err(SqlError::new(5812, "You do not have permission to run the RECONFIGURE statement."));
                }
                self.shared.config.reconfigure();
                self.shared.config.apply_memory(&self.shared.engine)?;
                self.shared.config.apply_open_limits(&self.shared.engine);
                self.shared.config.apply_affinity()?;
                self.shared.query_memory.set_max_bytes(self.shared.engine.memory_status().max_bytes);
                self.shared.plans.set_budget_bytes(self.shared.config.plan_cache_bytes());
            }
            StatementKind::If { .. }
            | StatementKind::While { .. }
            | StatementKind::Block(_)
            | StatementKind::TryCatch { .. } => {
                unreachable!("control flow runs in run_control")
            }
            StatementKind::CreateProcedure(cp) => {
                self.check_define("CREATE PROCEDURE", &cp.name, cp.alter || cp.or_alter)?;
                self.check_module_execute_as(&cp.execute_as)?;
                let text = cp.text.clone();
                self.with_ctx(|ctx| {
                    tessera_execution::modules::define(
                        ctx,
                        &cp.name,
                        ModuleKind::Procedure,
                        cp.or_alter,
                        cp.alter,
                        &text,
                    )
                })?;
            }
            StatementKind::CreateFunction(cf) => {
                self.check_define("CREATE FUNCTION", &cf.name, cf.alter || cf.or_alter)?;
                if let ast::FunctionReturns::Scalar { execute_as, .. } = &cf.returns {
                    self.check_module_execute_as(execute_as)?;
                }
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
                self.with_ctx(|ctx| {
                    tessera_execution::modules::define(ctx, &cf.name, kind, cf.or_alter, cf.alter, &text)
                })?;
            }
            StatementKind::CreateView(cv) => {
                self.check_define("CREATE VIEW", &cv.name, cv.alter || cv.or_alter)?;
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
                    tessera_execution::modules::define(ctx, &cv.name, ModuleKind::View, cv.or_alter, cv.alter, &text)
                })?;
            }
            StatementKind::DropModule { kind, names, if_exists } => {
                for n in names {
                    let word = match kind {
                        ast::ModuleKind::Procedure => "procedure",
                        ast::ModuleKind::Function => "function",
                        ast::ModuleKind::View => "view",
                    };
                    self.check_alter(n, || {
                        SqlError::new(
                            3701,
                            format!(
                                "Cannot drop the {word} '{}', because it does not exist or you do not have permission.",
                                object_shown(n)
                            ),
                        )
                    })?;
                    self.with_ctx(|ctx| tessera_execution::modules::drop(ctx, *kind, n, *if_exists))?;
                }
            }
            StatementKind::Execute(_) | StatementKind::ExecuteString(_) => unreachable!("EXEC runs in run_one"),
        }
        Ok(Flow::Next)
    }

    fn use_database(&mut self, name: &str) -> SqlResult<()> {
        if !self.shared.engine.exists(name) {
            return Err(tessera_semantics::catalog::database_not_found(name));
        }
        if self.state.application_role().is_some_and(|(db, _)| !db.eq_ignore_ascii_case(name)) {
            return Err(SqlError::new(
                505,
                "The current user account was invoked with SETUSER or SP_SETAPPROLE. Changing databases is not allowed.",
            ));
        }
        let db = self.shared.database(name)?;
        tessera_execution::ddl::principals::check_access(self.shared, self.state, db.name())?;
        let old = std::mem::replace(&mut self.state.database, db.name().to_string());
        self.shared.refresh_default_schema(self.state);
        self.sink.env_change(&EnvChange::Database { old, new: db.name().to_string() });
        self.sink.message(&SqlError::informational(5701, format!("Changed database context to '{}'.", db.name())));
        self.state.rowcount = 0;
        Ok(())
    }
}

/// An object name as written (`dbo.t`).
fn object_shown(name: &ast::ObjectName) -> String {
    name.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".")
}

/// "Cannot find the object … because it does not exist or you do not have permissions."
/// (4902 for ALTER TABLE, 1088 for TRUNCATE TABLE and indexes).
fn cannot_find(number: i32, name: &ast::ObjectName) -> SqlError {
    SqlError::new(
        number,
        format!(
            "Cannot find the object \"{}\" because it does not exist or you do not have permissions.",
            object_shown(name)
        ),
    )
}
