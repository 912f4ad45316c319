//! Queries and data changes at run time: result sets and row counts (with the 8153
//! warning), OUTPUT rows, `SELECT … INTO` and `INSERT … EXEC`.

use super::triggers::Triggered;
use super::{Runner, Stop};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::exec::{open, open_stored, run, Rows, StoredNext, StoredRows};
use tessera_execution::runtime::ExecCtx;
use tessera_execution::statistics::IoStatement;
use tessera_execution::{ddl, dml};
use tessera_semantics::bind::Binder;
use tessera_semantics::output::Collected;
use tessera_semantics::output::{Command, ResultSink};
use tessera_semantics::plan::{Expr, InsertPlan, MergeAction, OutputPlan, Prepared};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{self, Statement, StatementKind, TriggerEvents};

impl Runner<'_> {
    fn emit(&mut self, columns: &[tessera_semantics::output::OutputColumn], order: &[u16], rows: &[Vec<Value>]) {
        self.sink.columns(columns);
        if !order.is_empty() {
            self.sink.order(order);
        }
        for r in rows {
            self.sink.row(r);
        }
        self.null_warning();
        let count = (!self.state.options.nocount).then_some(rows.len() as u64);
        self.sink.done(count, Command::Select);
    }

    /// Warning 8153 after a statement whose aggregates skipped NULLs (under ANSI_WARNINGS).
    fn null_warning(&mut self) {
        if std::mem::take(&mut self.state.null_eliminated) && self.state.options.ansi_warnings {
            let w = msg::NULL_ELIMINATED_BY_AGGREGATE.err();
            self.sink.message(&w.with_severity(10));
        }
    }

    /// `command` changed `n` rows.
    fn affected(&mut self, n: u64, command: Command) {
        self.null_warning();
        self.state.rowcount = n as i64;
        let count = (!self.state.options.nocount).then_some(n);
        self.sink.done(count, command);
    }

    /// Runs a compiled statement; under SET STATISTICS IO its reads follow, table by table.
    pub(super) fn run_prepared(&mut self, s: &Statement, p: &Prepared) -> SqlResult<()> {
        if self.state.options.fmtonly {
            // Shapes only: a query's column metadata (no rows); nothing is modified.
            if let Prepared::Query(q) = p {
                self.emit(&q.columns, &[], &[]);
            }
            return Ok(());
        }
        let io = IoStatement::begin(self.state.options.statistics_io);
        let result = self.run_compiled(s, p);
        // What a data change reads to store its rows is its target's.
        let target = match p {
            Prepared::Insert(i) => Some(&i.target),
            Prepared::Update(u) => Some(&u.target),
            Prepared::Delete(d) => Some(&d.target),
            Prepared::Merge(m) => Some(&m.target),
            Prepared::Query(_) | Prepared::Assign { .. } => None,
        };
        let tables = io.finish(target.map(|t| (t.db.name(&self.state.database), &*t.table)));
        result?;
        self.io_messages(tables);
        Ok(())
    }

    /// SET STATISTICS IO's messages for what a statement read.
    pub(super) fn io_messages(&mut self, tables: Vec<tessera_execution::statistics::TableIo>) {
        for t in tables {
            self.sink.message(&t.message());
        }
    }

    fn run_compiled(&mut self, s: &Statement, p: &Prepared) -> SqlResult<()> {
        let one = |insert, update, delete| TriggerEvents { insert, update, delete };
        match p {
            Prepared::Query(q) => self.stream_query(q)?,
            Prepared::Assign { plan, targets } => {
                let n = self.with_ctx(|ctx| dml::run_assign(ctx, plan, targets))?;
                self.null_warning();
                self.state.rowcount = n as i64;
            }
            Prepared::Insert(i) => self.insert(s, i)?,
            Prepared::Update(u) => {
                match self.triggered(&u.target, one(false, true, false), u.output.as_ref(), false)? {
                    Triggered::Instead(f) => {
                        let taken = self.with_ctx(|ctx| dml::take_update(ctx, u));
                        self.taken(s, u.output.as_ref(), f, taken, Command::Update)?;
                    }
                    Triggered::After(fires) => {
                        let result = self.with_ctx(|ctx| dml::run_update(ctx, u));
                        self.changed(s, u.output.as_ref(), fires, result, Command::Update)?;
                    }
                }
            }
            Prepared::Delete(d) => {
                match self.triggered(&d.target, one(false, false, true), d.output.as_ref(), false)? {
                    Triggered::Instead(f) => {
                        let taken = self.with_ctx(|ctx| dml::take_delete(ctx, d));
                        self.taken(s, d.output.as_ref(), f, taken, Command::Delete)?;
                    }
                    Triggered::After(fires) => {
                        let result = self.with_ctx(|ctx| dml::run_delete(ctx, d));
                        self.changed(s, d.output.as_ref(), fires, result, Command::Delete)?;
                    }
                }
            }
            Prepared::Merge(m) => {
                let action = |a: fn(&MergeAction) -> bool| m.clauses.iter().any(|c| a(&c.action));
                let events = one(
                    action(|a| matches!(a, MergeAction::Insert { .. })),
                    action(|a| matches!(a, MergeAction::Update(_))),
                    action(|a| matches!(a, MergeAction::Delete)),
                );
                let Triggered::After(fires) = self.triggered(&m.target, events, m.output.as_ref(), true)? else {
                    unreachable!("a MERGE's INSTEAD OF triggers are refused")
                };
                let result = self.with_ctx(|ctx| dml::run_merge(ctx, m));
                self.changed(s, m.output.as_ref(), fires, result, Command::Merge)?;
            }
        }
        Ok(())
    }

    /// An INSERT, or the INSTEAD OF trigger that takes it, with the triggers it fires.
    fn insert(&mut self, s: &Statement, i: &InsertPlan) -> SqlResult<()> {
        let event = TriggerEvents { insert: true, update: false, delete: false };
        match self.triggered(&i.target, event, i.output.as_ref(), false)? {
            Triggered::Instead(f) => {
                let taken = self.with_ctx(|ctx| dml::take_insert(ctx, i));
                self.taken(s, i.output.as_ref(), f, taken, Command::Insert)
            }
            Triggered::After(fires) => {
                let result = self.with_ctx(|ctx| dml::run_insert(ctx, i));
                self.changed(s, i.output.as_ref(), fires, result, Command::Insert)
            }
        }
    }

    /// A data change an INSTEAD OF trigger took (`taken`: the rows it would have
    /// changed): its OUTPUT rows, the trigger run with those rows, then its DONE with
    /// their count.
    fn taken(
        &mut self,
        s: &Statement,
        output: Option<&OutputPlan>,
        firing: super::triggers::Firing,
        taken: SqlResult<dml::Taken>,
        command: Command,
    ) -> SqlResult<()> {
        let taken = taken?;
        let n = taken.count();
        if let Some(o) = output {
            self.output(o, taken.output)?;
        }
        self.fire(s, vec![firing], Some(taken.transitions), n)?;
        self.affected(n, command);
        Ok(())
    }

    /// A data change ran (`result`): its OUTPUT rows, the triggers it fires, then its DONE.
    fn changed(
        &mut self,
        s: &Statement,
        output: Option<&OutputPlan>,
        fires: Vec<super::triggers::Firing>,
        result: SqlResult<(u64, Vec<Vec<Value>>)>,
        command: Command,
    ) -> SqlResult<()> {
        let transitions = self.state.transitions.take();
        let (n, out) = result?;
        if let Some(o) = output {
            self.output(o, out)?;
        }
        if !fires.is_empty() {
            self.fire(s, fires, transitions, n)?;
        }
        self.affected(n, command);
        Ok(())
    }

    /// A query's rows go to the client as the plan produces them (SET ROWCOUNT stops it
    /// early). SQL Server sends a result's column metadata before its rows; an error while
    /// producing them arrives after the rows sent so far.
    fn stream_query(&mut self, q: &tessera_semantics::plan::BoundQuery) -> SqlResult<()> {
        let limit = match self.state.options.rowcount {
            n if n > 0 => n as u64,
            _ => u64::MAX,
        };
        let order = q.plan.order_columns(q.columns.len());
        let sink = &mut self.sink;
        let mut ctx = ExecCtx::new(self.shared, self.state);
        let opened = if sink.takes_stored_rows() {
            let types: Vec<SqlType> = q.columns.iter().map(|c| c.ty).collect();
            open_stored(&q.plan, types, &mut ctx).map(|s| s.map(Opened::Stored))
        } else {
            Ok(None)
        };
        let opened = match opened {
            Ok(Some(stored)) => Ok(stored),
            Ok(None) => open(&q.plan, &[], &mut ctx).map(Opened::Values),
            Err(e) => Err(e),
        };
        let mut rows = match opened {
            Ok(rows) => rows,
            Err(e) => {
                sink.columns(&q.columns);
                return Err(e);
            }
        };
        sink.columns(&q.columns);
        if !order.is_empty() {
            sink.order(&order);
        }
        let mut sent = 0u64;
        while sent < limit {
            match &mut rows {
                Opened::Values(rows) => {
                    let Some(r) = rows.next(&mut ctx)? else { break };
                    sink.row(&r);
                }
                Opened::Stored(rows) => match rows.next(&mut ctx)? {
                    Some(StoredNext::Stored(r)) => sink.stored_row(&r),
                    Some(StoredNext::Values(r)) => sink.row(&r),
                    None => break,
                },
            }
            sent += 1;
        }
        drop((rows, ctx));
        self.state.rowcount = sent as i64;
        self.null_warning();
        let count = (!self.state.options.nocount).then_some(sent);
        self.sink.done(count, Command::Select);
        Ok(())
    }

    /// OUTPUT rows come as a result set whose count is the statement's, or go into the
    /// OUTPUT … INTO table.
    fn output(&mut self, o: &tessera_semantics::plan::OutputPlan, rows: Vec<Vec<Value>>) -> SqlResult<()> {
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
    pub(super) fn select_into(&mut self, s: &Statement, q: &ast::Query) -> SqlResult<()> {
        let into = q.into_target().cloned().ok_or_else(|| msg::SYNTAX_ERROR_NEAR.with(&[&"INTO"]))?;
        let plain = q.without_into();
        let vars = self.visible(s);
        let mut b = Binder::new(self.shared, self.state, vars);
        let bound = b.bind_query(&plain);
        let deps = std::mem::take(&mut b.deps);
        // What the query reads needs SELECT, and the new table CREATE TABLE, as for a
        // SELECT and a CREATE TABLE of their own.
        let bound = match bound {
            Ok(bound) => bound,
            Err(e) => {
                self.check_databases(&deps)?;
                return Err(e);
            }
        };
        self.check_plan(&deps)?;
        self.check_create("CREATE TABLE", &into)?;
        let mut columns = Vec::new();
        for c in &bound.columns {
            if c.name.is_empty() {
                return Err(msg::EMPTY_OBJECT_OR_COLUMN_NAME.err());
            }
            columns.push(ast::ColumnDef {
                name: ast::Ident::new(c.name.clone()),
                ty: ast::TypeName { name: types::base_type_name(&c.ty).to_uppercase(), args: type_args(&c.ty) },
                nullable: Some(true),
                identity: None,
                default: None,
                constraints: Vec::new(),
                computed: None,
                persisted: false,
                collation: None,
            });
        }
        let create = ast::CreateTable { name: into.clone(), columns, constraints: Vec::new(), indexes: Vec::new() };
        self.with_ctx(|ctx| ddl::create_table(ctx, &create))?;
        let io = IoStatement::begin(self.state.options.statistics_io);
        let rows = self.with_ctx(|ctx| run(&bound.plan, &[], ctx));
        let tables = io.finish(None);
        let rows = rows?;
        let insert = ast::Insert {
            top: None,
            table: into,
            columns: Vec::new(),
            output: None,
            source: ast::InsertSource::Values(Vec::new()),
        };
        let mut b = Binder::new(self.shared, self.state, vars);
        let mut plan = tessera_semantics::bind::compile_insert(&mut b, &insert)?;
        plan.source = tessera_semantics::plan::InsertSource::Rows(
            rows.into_iter().map(|r| r.into_iter().map(|v| Some(Expr::Const(v))).collect()).collect(),
        );
        plan.source_types = bound.columns.iter().map(|c| c.ty).collect();
        let (n, _) = self.with_ctx(|ctx| dml::run_insert(ctx, &plan))?;
        self.affected(n, Command::SelectInto);
        self.io_messages(tables);
        Ok(())
    }

    /// `INSERT t EXEC proc …`: the procedure's result sets become the inserted rows.
    pub(super) fn insert_exec(&mut self, s: &Statement, i: &ast::Insert) -> SqlResult<()> {
        let ast::InsertSource::Execute(call) = &i.source else { unreachable!("checked by the caller") };
        let plain = ast::Insert {
            top: i.top.clone(),
            table: i.table.clone(),
            columns: i.columns.clone(),
            output: None,
            source: ast::InsertSource::Values(Vec::new()),
        };
        let vars = self.visible(s);
        let mut b = Binder::new(self.shared, self.state, vars);
        let plan = tessera_semantics::bind::compile_insert(&mut b, &plain);
        let deps = std::mem::take(&mut b.deps);
        // The target needs INSERT, as for an INSERT of its own, checked before the call
        // runs.
        let mut plan = match plan {
            Ok(plan) => plan,
            Err(e) => {
                self.check_databases(&deps)?;
                return Err(e);
            }
        };
        self.check_plan(&deps)?;
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
                _ => Err(Stop::Error(msg::SYNTAX_ERROR_NEAR.with(&[&"EXEC"]))),
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
                    return Err(msg::INSERT_COLUMN_COUNT_MISMATCH.err());
                }
                _ => source_types = Some(types_),
            }
            rows.extend(set);
        }
        if let Some(t) = source_types {
            if t.len() != plan.columns.len() {
                return Err(msg::INSERT_COLUMN_COUNT_MISMATCH.err());
            }
            plan.source_types = t;
        }
        plan.source = tessera_semantics::plan::InsertSource::Rows(
            rows.into_iter().map(|r| r.into_iter().map(|v| Some(Expr::Const(v))).collect()).collect(),
        );
        self.insert(s, &plan)
    }
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

/// A query opened to hand out its rows as values, or as they are stored (to a sink that
/// takes them, for a plan whose shape allows it).
enum Opened<'p> {
    Values(Rows<'p>),
    Stored(Box<StoredRows<'p>>),
}
