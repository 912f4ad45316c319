//! Calls: `EXEC` of stored and system procedures (arguments matched to parameters, OUTPUT
//! copied back, a nesting level down), `EXEC ('dynamic sql')`, and scalar user-defined
//! functions called from expressions.

use super::table_parameters::TableArgument;
use super::variables::Frame;
use super::{Flow, Runner, Stop};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::runtime::ExecCtx;
use tessera_semantics::cache::CachedBatch;
use tessera_semantics::catalog::ModuleKind;
use tessera_semantics::output::Command;
use tessera_semantics::output::ResultSink;
use tessera_semantics::plan::Prepared;
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{self, Statement, StatementKind};

/// An evaluated argument of EXEC or sp_executesql.
pub(super) struct Argument {
    pub(super) name: Option<String>,
    /// None for the DEFAULT keyword.
    pub(super) value: Option<(Value, SqlType)>,
    /// `@v OUTPUT`: the caller's variable slot and type.
    pub(super) output: Option<(usize, SqlType)>,
    /// `@c OUTPUT` for a cursor parameter: the caller's cursor variable.
    pub(super) cursor: Option<String>,
    /// For a table-valued parameter: the caller's table variable, or rows.
    pub(super) table: Option<TableArgument>,
}

impl Argument {
    /// A value passed in (no OUTPUT).
    pub(super) fn input(name: Option<String>, value: Value, ty: SqlType) -> Argument {
        Argument { name, value: Some((value, ty)), output: None, cursor: None, table: None }
    }

    /// A text passed in as nvarchar(max) (a statement, a parameter list).
    pub(super) fn text(text: &str) -> Argument {
        Argument::input(None, Value::str(text), SqlType::NVarChar(tessera_access::row::MAX))
    }
}

/// Discards results: a scalar function's body may not return rows.
struct Discard;

impl ResultSink for Discard {
    fn columns(&mut self, _: &[tessera_semantics::output::OutputColumn]) {}
    fn row(&mut self, _: &[Value]) {}
    fn done(&mut self, _: Option<u64>, _: Command) {}
    fn message(&mut self, _: &SqlError) {}
}

/// Runs a scalar user-defined function's body with `args` and returns its RETURN value.
pub(crate) fn call_scalar_function(
    ctx: &mut ExecCtx,
    call: &tessera_semantics::plan::UserCall,
    args: Vec<Value>,
) -> SqlResult<Value> {
    let cached = ctx.shared.plans.get_or_parse(&call.text, tessera_syntax::parser::parse_batch)?;
    let Some(StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind) else {
        return Err(tessera_semantics::bind::invalid_object(&call.name));
    };
    let ast::FunctionReturns::Scalar { body, execute_as, .. } = &cf.returns else {
        return Err(tessera_semantics::bind::invalid_object(&call.name));
    };
    let f = FunctionBody { db: &call.db, schema: &call.schema, name: &call.name, params: &cf.params, body, execute_as };
    run_function(ctx, &cached, f, args, |runner| {
        runner.returns = Some(call.ty);
        runner.compile_all(body)?;
        match runner.run_block(body) {
            Ok(_) => Ok(runner.returned.take().unwrap_or(Value::Null)),
            Err(Stop::Error(e)) => Err(e),
            Err(Stop::Abort) => Err(function_failed(&call.name)),
        }
    })
}

/// Runs a multi-statement table-valued function's body with `args` and returns the rows
/// it put in its RETURNS table (a table variable of the body's, gone when it returns).
pub(crate) fn call_table_function(
    ctx: &mut ExecCtx,
    call: &tessera_semantics::plan::TableCall,
    args: Vec<Value>,
) -> SqlResult<Vec<Vec<Value>>> {
    let cached = ctx.shared.plans.get_or_parse(&call.text, tessera_syntax::parser::parse_batch)?;
    let Some(StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind) else {
        return Err(tessera_semantics::bind::invalid_object(&call.name));
    };
    let ast::FunctionReturns::MultiStatement { variable, columns, body } = &cf.returns else {
        return Err(tessera_semantics::bind::invalid_object(&call.name));
    };
    let caller = ast::ModuleExecuteAs::Caller;
    let f = FunctionBody {
        db: &call.db,
        schema: &call.schema,
        name: &call.name,
        params: &cf.params,
        body,
        execute_as: &caller,
    };
    run_function(ctx, &cached, f, args, |runner| {
        let lower = variable.to_lowercase();
        let shadowed = runner.state.temp_tables.get(&lower).cloned();
        runner.with_ctx(|ctx| tessera_execution::ddl::declare_table_variable(ctx, variable, columns, &[]))?;
        runner.table_vars.push(super::variables::TableVar::declared(lower, shadowed, None));
        let rows = match runner.compile_all(body).map(|_| runner.run_block(body)) {
            Ok(Ok(_)) => runner.table_variable_rows(variable),
            Ok(Err(Stop::Error(e))) | Err(e) => Err(e),
            Ok(Err(Stop::Abort)) => Err(function_failed(&call.name)),
        };
        runner.drop_table_variables();
        rows
    })
}

/// A user-defined function a call runs.
struct FunctionBody<'f> {
    db: &'f tessera_semantics::catalog::DbRef,
    schema: &'f str,
    name: &'f str,
    params: &'f [ast::Parameter],
    body: &'f [Statement],
    execute_as: &'f ast::ModuleExecuteAs,
}

/// Runs `run` over a runner of function `f`'s body: its parameters bound to `args`, in
/// its database and schema, one nesting level down, its statements chaining from its
/// owner (EXECUTE on it was checked with the plan that calls it), as the user its
/// EXECUTE AS names; errors come back (as inside TRY); the caller's context comes back
/// after.
fn run_function<T>(
    ctx: &mut ExecCtx,
    cached: &CachedBatch<Prepared>,
    f: FunctionBody,
    args: Vec<Value>,
    run: impl FnOnce(&mut Runner) -> SqlResult<T>,
) -> SqlResult<T> {
    let state = &mut *ctx.session;
    if state.nest_level >= tessera_semantics::bind::MAX_NESTING {
        return Err(tessera_semantics::bind::nesting_error());
    }
    let frame = Frame::of_procedure(f.params, f.body)?;
    let mut vars = vec![Value::Null; frame.decls.len()];
    for (i, v) in args.into_iter().enumerate() {
        vars[i] = v.to_keep()?;
    }
    let saved_vars = std::mem::replace(&mut state.vars, vars);
    let db = f.db.name(&state.database).to_string();
    // Its author, for EXECUTE AS SELF only (this runs once per row of a query).
    let altered_by = match f.execute_as {
        ast::ModuleExecuteAs::SelfUser => {
            let catalog = state.catalog_of(ctx.shared, &db)?.catalog;
            catalog.module(f.schema, f.name).and_then(|m| m.altered_by)
        }
        _ => None,
    };
    let owner = ctx.shared.security(&state.catalog_memo, &db)?.schema_owner(f.schema).map(|owner| {
        super::permissions::ModuleContext { db: db.clone(), schema: f.schema.to_string(), owner, altered_by }
    });
    let saved_schema = std::mem::replace(&mut state.default_schema, f.schema.to_string());
    let saved_db = std::mem::replace(&mut state.database, db);
    state.nest_level += 1;
    let scope = state.cursors.enter_scope();
    let mut sink = Discard;
    let result = {
        let mut runner = Runner {
            try_depth: 1,
            procedure: Some(f.name.to_string()),
            owner,
            ..Runner::new(ctx.shared, &mut *state, cached, &frame, &mut sink)
        };
        // WITH EXECUTE AS OWNER | SELF | 'user': the body runs as that user.
        let entered = match &runner.owner {
            Some(module) if *f.execute_as != ast::ModuleExecuteAs::Caller => {
                let module = module.clone();
                runner.enter_module_context(&module, f.execute_as)
            }
            _ => Ok(()),
        };
        entered.and_then(|()| run(&mut runner))
    };
    state.cursors.leave_scope(scope);
    super::permissions::end_contexts_below(state, state.nest_level - 1);
    state.nest_level -= 1;
    state.default_schema = saved_schema;
    state.database = saved_db;
    state.vars = saved_vars;
    result
}

fn function_failed(name: &str) -> SqlError {
    SqlError::new(50000, format!("The function '{name}' failed."))
}

impl Runner<'_> {
    /// The rows of the table variable `name` (a multi-statement function's RETURNS table).
    fn table_variable_rows(&mut self, name: &str) -> SqlResult<Vec<Vec<Value>>> {
        let text = format!("SELECT * FROM {name}");
        let frame = self.frame;
        let collected = self.run_internal(&text, frame, "The function failed.")?;
        Ok(collected.result_sets.into_iter().next().map(|(_, rows)| rows).unwrap_or_default())
    }

    /// Runs `text`, a statement of tessera's own, in a runner of `frame` whose results
    /// are collected; an error that ends it is its error (`failed` when it has none).
    pub(super) fn run_internal(
        &mut self,
        text: &str,
        frame: &Frame,
        failed: &str,
    ) -> SqlResult<tessera_semantics::output::Collected> {
        let cached = self.shared.plans.get_or_parse(text, tessera_syntax::parser::parse_batch)?;
        let mut collected = tessera_semantics::output::Collected::default();
        let result = {
            let mut inner =
                Runner { try_depth: 1, ..Runner::new(self.shared, &mut *self.state, &cached, frame, &mut collected) };
            inner.run_block(&cached.batch.statements)
        };
        match result {
            Ok(_) => Ok(collected),
            Err(Stop::Error(e)) => Err(e),
            Err(Stop::Abort) => Err(collected
                .messages
                .into_iter()
                .find(|m| m.severity > 10)
                .unwrap_or_else(|| SqlError::new(50000, failed.to_string()))),
        }
    }
}

impl Runner<'_> {
    /// Evaluates EXEC's arguments in the caller's frame.
    fn arguments(&mut self, s: &Statement, args: &[ast::ExecArg]) -> SqlResult<Vec<Argument>> {
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            if let ast::Expr::Variable(v) = &a.value {
                if self.is_cursor_variable(v) {
                    let cursor = Some(v.clone());
                    out.push(Argument { name: a.name.clone(), value: None, output: None, cursor, table: None });
                    continue;
                }
            }
            if let Some(table) = self.table_argument(&a.value) {
                out.push(Argument {
                    name: a.name.clone(),
                    value: None,
                    output: None,
                    cursor: None,
                    table: Some(table),
                });
                continue;
            }
            let value = match &a.value {
                ast::Expr::Default => None,
                e => Some(self.eval_scalar(s, e)?),
            };
            let output = if a.output {
                match &a.value {
                    ast::Expr::Variable(v) => {
                        let vars = self.visible(s);
                        let lower = v.to_lowercase();
                        let slot = vars
                            .iter()
                            .rposition(|(n, _)| *n == lower)
                            .ok_or_else(|| msg::UNDECLARED_VARIABLE.with(&[&v]).with_state(2))?;
                        Some((slot, vars[slot].1))
                    }
                    _ => None,
                }
            } else {
                None
            };
            out.push(Argument { name: a.name.clone(), value, output, cursor: None, table: None });
        }
        Ok(out)
    }

    /// `EXEC [@rc =] proc args`: a stored procedure or a system procedure.
    pub(super) fn run_execute(&mut self, s: &Statement, e: &ast::Execute) -> Result<Flow, Stop> {
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
        } else if let Some(which) = ApplicationRoleProc::lookup(&proc_name) {
            match self.run_application_role_proc(which, args) {
                Ok(status) => status,
                Err(Stop::Error(err)) => return self.fail(s, err),
                Err(Stop::Abort) => return Err(Stop::Abort),
            }
        } else if let Some(system) = tessera_execution::sysprocs::lookup(&proc_name) {
            self.state.txns.mark_statement();
            self.begin_autocommit();
            let values: Vec<tessera_execution::sysprocs::NamedArg> =
                args.iter().map(|a| (a.name.clone(), a.value.clone())).collect();
            use tessera_execution::sysprocs::SystemProc;
            let result = match system {
                SystemProc::ExecuteSql => self.run_executesql(s, args),
                SystemProc::SequenceGetRange => self.sequence_get_range(args).map_err(Stop::Error),
                SystemProc::ForEachDb => self.run_foreachdb(s, &values),
                SystemProc::AttachDb => self.run_attach_db(&values),
                SystemProc::DetachDb => self.run_detach_db(&values),
                SystemProc::DescribeFirstResultSet => self.run_describe_first_result_set(&values),
                SystemProc::DescribeUndeclaredParameters => self.run_describe_undeclared_parameters(&values),
                _ => {
                    let mut ctx = ExecCtx::new(self.shared, self.state);
                    tessera_execution::sysprocs::run(system, &values, &mut ctx, &mut self.sink).map_err(Stop::Error)
                }
            };
            match result {
                Ok(status) => {
                    if let Err(err) = self.end_autocommit() {
                        return self.fail(s, err);
                    }
                    status
                }
                Err(stop) => {
                    self.sink.release();
                    match stop {
                        Stop::Error(err) => return self.fail(s, err),
                        Stop::Abort => return Err(Stop::Abort),
                    }
                }
            }
        } else {
            let found = {
                let ctx = ExecCtx::new(self.shared, self.state);
                tessera_execution::modules::find(&ctx, &e.procedure)
            };
            let (db, module) = match found {
                Ok(Some((db, m))) if m.kind == ModuleKind::Procedure => (db, m),
                Ok(_) => {
                    // Nothing about a database the session may not use is revealed.
                    if e.procedure.0.len() >= 3 {
                        let db = &e.procedure.0[e.procedure.0.len() - 3].value;
                        if !db.is_empty() && self.shared.engine.exists(db) {
                            if let Err(err) = self.shared.access(self.state, db) {
                                return self.fail(s, err);
                            }
                        }
                    }
                    let shown = e.procedure.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
                    return self.fail(s, msg::PROCEDURE_NOT_FOUND.with(&[&shown]));
                }
                Err(err) => return self.fail(s, err),
            };
            let owner = match self.check_execute(&db, &module) {
                Ok(owner) => owner,
                Err(err) => return self.fail(s, err),
            };
            self.call_procedure(s, &db, &module, args, owner)?
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
                None => return self.fail(s, msg::UNDECLARED_VARIABLE.with(&[&rc]).with_state(2)),
            }
        }
        if self.state.nest_level == 0 {
            self.sink.return_status(status);
        }
        Ok(Flow::Next)
    }

    /// Runs a stored procedure: binds the arguments to its parameters, runs its body in a
    /// frame of its own (in the procedure's database), copies OUTPUT parameters back and
    /// returns its return status. The call, however it ends, is counted once with the
    /// cached body (sys.dm_exec_procedure_stats), under the procedure's database and id.
    fn call_procedure(
        &mut self,
        s: &Statement,
        db: &str,
        module: &tessera_semantics::catalog::Module,
        args: Vec<Argument>,
        owner: super::permissions::ModuleContext,
    ) -> Result<i32, Stop> {
        let name = module.name.as_str();
        let cached = match self.shared.plans.get_or_parse(&module.text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => return self.fail(s, e).map(|_| 0),
        };
        let Some(StatementKind::CreateProcedure(cp)) = cached.batch.statements.first().map(|st| &st.kind) else {
            return self.fail(s, msg::PROCEDURE_NOT_FOUND.with(&[&name])).map(|_| 0);
        };
        // WITH EXECUTE AS OWNER | 'user': the body runs as that user, whatever happens.
        let outer = self.state.nest_level;
        if let Err(e) = self.enter_module_context(&owner, &cp.execute_as) {
            return self.fail(s, e).map(|_| 0);
        }
        // The session's catalog memo (the body's statements look there next) knows the id.
        let database_id = self.shared.catalog_memo(&self.state.catalog_memo, db).map_or(0, |of| of.database_id);
        let clock = tessera_execution::statistics::RunClock::start();
        let status = self.invoke(s, &cached, &cp.params, &cp.body, Some(name), db, args, Some(owner));
        cached.record_call(database_id, module.id, clock.finish(0));
        super::permissions::end_contexts_below(self.state, outer);
        status
    }

    /// Runs `body` with `params` bound to `args`, one nesting level down.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn invoke(
        &mut self,
        s: &Statement,
        cached: &CachedBatch<Prepared>,
        params: &[ast::Parameter],
        body: &[Statement],
        name: Option<&str>,
        db: &str,
        args: Vec<Argument>,
        owner: Option<super::permissions::ModuleContext>,
    ) -> Result<i32, Stop> {
        let shown = name.unwrap_or("sp_executesql").to_string();
        if self.state.nest_level >= tessera_semantics::bind::MAX_NESTING {
            return self.fail(s, tessera_semantics::bind::nesting_error()).map(|_| 0);
        }
        let frame = match Frame::of_procedure(params, body) {
            Ok(f) => f,
            Err(e) => return self.fail(s, e).map(|_| 0),
        };
        let BoundArguments { vars, outputs, cursors, tables } =
            match self.bind_arguments(s, &shown, params, &frame, args) {
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
        // A procedure's one-part names are looked for in its schema first; dynamic SQL's
        // in the caller's default schema.
        let saved_schema = self.state.default_schema.clone();
        if let Some(module) = &owner {
            self.state.default_schema = module.schema.clone();
        }
        let saved_scope_identity = self.state.scope_identity.take();
        // SET options changed inside a procedure revert when it ends.
        let saved_options = self.state.options.clone();
        self.state.nest_level += 1;
        let before = self.state.txns.count;
        let trigger = std::mem::take(&mut self.invoking_trigger);
        let scope = self.state.cursors.enter_scope();
        for (parameter, _) in &cursors {
            self.state.cursors.declare_variable(parameter);
        }
        let result = {
            let mut inner = Runner {
                try_depth: self.try_depth,
                procedure: name.map(str::to_string),
                owner,
                ..Runner::new(self.shared, &mut *self.state, cached, &frame, &mut self.sink)
            };
            let r = match inner.give_table_parameters(tables).and_then(|_| inner.compile_all(body)) {
                Err(e) => Err(e),
                Ok(()) => Ok(inner.run_block(body)),
            };
            inner.drop_table_variables();
            r
        };
        for (parameter, variable) in &cursors {
            self.state.cursors.return_cursor(parameter, variable);
        }
        self.state.cursors.leave_scope(scope);
        super::permissions::end_contexts_below(self.state, self.state.nest_level - 1);
        self.state.nest_level -= 1;
        self.state.options = saved_options;
        self.state.scope_identity = saved_scope_identity;
        self.state.database = saved_db;
        self.state.default_schema = saved_schema;
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
        // Under IMPLICIT_TRANSACTIONS a procedure entered outside a transaction may leave
        // the one its first statement began (SQL Server raises no 266 then: it is how a
        // driver with auto-commit off runs every prepared statement).
        let implicit = self.state.options.implicit_transactions && before == 0 && after == 1;
        if after != before && !implicit && !trigger {
            let e = msg::TRANCOUNT_MISMATCH.with(&[&before, &after]);
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
    ) -> SqlResult<BoundArguments> {
        let mut vars = vec![Value::Null; frame.decls.len()];
        let mut given: Vec<Option<Argument>> = (0..params.len()).map(|_| None).collect();
        let mut named_seen = false;
        for (i, a) in args.into_iter().enumerate() {
            let slot = match &a.name {
                Some(n) => {
                    named_seen = true;
                    params
                        .iter()
                        .position(|p| p.name.eq_ignore_ascii_case(n))
                        .ok_or_else(|| msg::UNKNOWN_PARAMETER.with(&[&n, &proc_name]))?
                }
                None => {
                    if named_seen {
                        return Err(msg::NAMED_PARAMETER_ORDER.with(&[&(i + 1)]));
                    }
                    if i >= params.len() {
                        return Err(msg::TOO_MANY_ARGUMENTS.with(&[&proc_name]));
                    }
                    i
                }
            };
            given[slot] = Some(a);
        }
        let mut outputs = Vec::new();
        let mut cursors = Vec::new();
        let mut tables = Vec::new();
        for (i, p) in params.iter().enumerate() {
            if frame.table_parameters.contains(&p.name.to_lowercase()) {
                let argument = given[i].take().and_then(|a| match a.value {
                    Some((_, t)) => Some(TableArgument::Value(t)),
                    None => a.table,
                });
                tables.push((p.name.clone(), p.ty.clone(), argument));
                continue;
            }
            if p.ty.name.eq_ignore_ascii_case("CURSOR") {
                // A cursor parameter: the caller's cursor variable, with no cursor yet, gets
                // the procedure's when it returns.
                match given[i].take().and_then(|a| a.cursor) {
                    Some(variable) => {
                        if self
                            .state
                            .cursors
                            .find(&variable, tessera_execution::runtime::cursors::Reach::Variable)
                            .is_ok()
                        {
                            return Err(msg::CURSOR_OUTPUT_ALREADY_ALLOCATED.with(&[&variable]));
                        }
                        cursors.push((p.name.clone(), variable));
                    }
                    None => return Err(msg::NOT_A_CURSOR_VARIABLE.with(&[&p.name])),
                }
                continue;
            }
            let ty = frame.decls[i].1;
            let arg = given[i].take();
            let value = match arg.as_ref().and_then(|a| a.value.clone()) {
                Some((v, t)) => types::cast(&v, &t, &ty, None)?,
                None => match &p.default {
                    Some(d) => {
                        let (v, t) = self.eval_scalar(s, d)?;
                        types::cast(&v, &t, &ty, None)?
                    }
                    None if arg.as_ref().is_some_and(|a| a.value.is_none()) || arg.is_none() => {
                        return Err(msg::MISSING_PARAMETER.with(&[&proc_name, &p.name]).with_state(4));
                    }
                    None => Value::Null,
                },
            };
            vars[i] = value;
            if let Some((caller_slot, caller_ty)) = arg.and_then(|a| a.output) {
                if !p.output {
                    return Err(msg::PARAMETER_NOT_OUTPUT.with(&[&p.name]));
                }
                outputs.push((i, caller_slot, ty, caller_ty));
            }
        }
        Ok(BoundArguments { vars, outputs, cursors, tables })
    }

    /// `sp_sequence_get_range @sequence_name, @range_size, @range_first_value OUTPUT
    /// [, @range_last_value OUTPUT [, @range_cycle_count OUTPUT [, @sequence_increment
    /// OUTPUT [, @sequence_min_value OUTPUT [, @sequence_max_value OUTPUT]]]]]`: the values
    /// go into the caller's OUTPUT variables (sql_variant in SQL Server: each converted to
    /// its variable's type here).
    fn sequence_get_range(&mut self, args: Vec<Argument>) -> SqlResult<i32> {
        const NAMES: [&str; 9] = [
            "@sequence_name",
            "@range_size",
            "@range_first_value",
            "@range_last_value",
            "@range_cycle_count",
            "@sequence_increment",
            "@sequence_min_value",
            "@sequence_max_value",
            "@sequence_metadata",
        ];
        let proc_name = "sp_sequence_get_range";
        let mut given: Vec<Option<Argument>> = (0..NAMES.len()).map(|_| None).collect();
        for (i, a) in args.into_iter().enumerate() {
            let at = match &a.name {
                Some(n) => NAMES
                    .iter()
                    .position(|p| p.eq_ignore_ascii_case(n))
                    .ok_or_else(|| msg::UNKNOWN_PARAMETER.with(&[&n, &proc_name]))?,
                None if i < NAMES.len() => i,
                None => return Err(msg::TOO_MANY_ARGUMENTS.with(&[&proc_name])),
            };
            given[at] = Some(a);
        }
        let value = |i: usize| given[i].as_ref().and_then(|a| a.value.clone());
        let name = match value(0) {
            Some((v, t)) => match types::cast(&v, &t, &SqlType::NVarChar(tessera_access::row::MAX), None)? {
                Value::Str(s) => Some(s.to_string()),
                _ => None,
            },
            None => None,
        };
        let Some(name) = name else {
            return Err(msg::MISSING_PARAMETER.with(&[&proc_name, &NAMES[0]]));
        };
        let size = match value(1) {
            Some((v, t)) => match types::cast(&v, &t, &SqlType::BigInt, None)? {
                Value::Int(n) => n,
                _ => 0,
            },
            None => return Err(msg::MISSING_PARAMETER.with(&[&proc_name, &NAMES[1]])),
        };
        if given[2].is_none() {
            return Err(msg::MISSING_PARAMETER.with(&[&proc_name, &NAMES[2]]));
        }
        let range = {
            let ctx = ExecCtx::new(self.shared, self.state);
            let parts = tessera_execution::functions::name_parts(&name)
                .ok_or_else(|| msg::INVALID_OBJECT_NAME.with(&[&name]))?;
            tessera_execution::sequences::get_range(&ctx, &parts, size)?
        };
        let values = [
            (2, range.first, SqlType::BigInt),
            (3, range.last, SqlType::BigInt),
            (4, Value::Int(range.cycles), SqlType::Int),
            (5, range.increment, SqlType::BigInt),
            (6, range.min, SqlType::BigInt),
            (7, range.max, SqlType::BigInt),
        ];
        for (at, v, ty) in values {
            let Some((slot, slot_ty)) = given[at].as_ref().and_then(|a| a.output) else { continue };
            let ty = if matches!(v, Value::Decimal { .. }) { SqlType::Decimal { precision: 38, scale: 0 } } else { ty };
            self.state.vars[slot] = types::cast(&v, &ty, &slot_ty, None)?;
        }
        Ok(0)
    }

    /// `EXEC ('dynamic sql')`: the string runs as a batch of its own, one level down.
    pub(super) fn run_dynamic(&mut self, s: &Statement, parts: &[ast::Expr]) -> Result<Flow, Stop> {
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
        self.run_dynamic_text(s, &text)
    }

    /// Runs `text` as a batch of its own, one level down, in the current database.
    pub(super) fn run_dynamic_text(&mut self, s: &Statement, text: &str) -> Result<Flow, Stop> {
        let db = self.state.database.clone();
        let cached = match self.shared.plans.get_or_parse(text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => return self.fail(s, e),
        };
        self.invoke(s, &cached, &[], &cached.batch.statements, None, &db, Vec::new(), None).map(|_| Flow::Next)
    }
}

/// A call's arguments bound to its parameters: the frame's first values, the OUTPUT
/// pairs (parameter slot, caller slot, parameter type, caller type), the cursor OUTPUT
/// pairs (parameter, the caller's cursor variable), and the table-valued parameters.
struct BoundArguments {
    vars: Vec<Value>,
    outputs: Vec<(usize, usize, SqlType, SqlType)>,
    cursors: Vec<(String, String)>,
    /// The table-valued parameters: each one's name, type and argument.
    tables: Vec<(String, ast::TypeName, Option<TableArgument>)>,
}

/// The prepared-statement procedures, which keep state in the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PreparedProc {
    Prepare,
    Execute,
    PrepExec,
    Unprepare,
}
impl PreparedProc {
    pub(super) fn lookup(name: &str) -> Option<PreparedProc> {
        Some(match name.to_ascii_lowercase().as_str() {
            "sp_prepare" => PreparedProc::Prepare,
            "sp_execute" => PreparedProc::Execute,
            "sp_prepexec" => PreparedProc::PrepExec,
            "sp_unprepare" => PreparedProc::Unprepare,
            _ => return None,
        })
    }
}

/// `sp_setapprole` and `sp_unsetapprole` (`application_roles.rs`), found by name before the
/// other system procedures.
#[derive(Clone, Copy)]
pub(super) enum ApplicationRoleProc {
    Set,
    Unset,
}

impl ApplicationRoleProc {
    pub(super) fn lookup(name: &str) -> Option<ApplicationRoleProc> {
        match name.to_ascii_lowercase().as_str() {
            "sp_setapprole" => Some(ApplicationRoleProc::Set),
            "sp_unsetapprole" => Some(ApplicationRoleProc::Unset),
            _ => None,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            ApplicationRoleProc::Set => "sp_setapprole",
            ApplicationRoleProc::Unset => "sp_unsetapprole",
        }
    }
}
