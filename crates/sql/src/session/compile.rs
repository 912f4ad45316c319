//! The compile phase: every statement of a batch bound before anything runs, plans from
//! the plan cache (keyed by AST node and session context), schema-stability locks on the
//! objects a plan uses, and the scalar expressions of control flow and variables.

use std::sync::Arc;

use tessera_database::LockMode;

use super::variables::{addr, assign_select};
use super::Runner;
use crate::bind::{Binder, BoundQuery};
use crate::cache::Compiled;
use crate::dml::{self, Prepared};
use crate::plan::{eval, Expr};
use crate::runtime::ExecCtx;
use crate::statistics::IoStatement;
use crate::types::{SqlType, Value};
use tessera_errors::SqlResult;
use tessera_syntax::ast::{self, Statement, StatementKind};

impl Runner<'_> {
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
        let started = std::time::Instant::now();
        let mut b = Binder::new(self.shared, self.state, vars);
        let prepared = compile(&mut b)?;
        let versions = std::mem::take(&mut b.deps.databases);
        let objects = Arc::from(std::mem::take(&mut b.deps.tables));
        let plan = Arc::new(prepared);
        let bind_us = started.elapsed().as_micros() as u64;
        self.batch.store(key, Compiled { versions, context, plan: plan.clone(), objects }, bind_us);
        Ok(plan)
    }

    pub(super) fn compile_statement(&mut self, s: &Statement) -> SqlResult<Option<Arc<Prepared>>> {
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
    pub(super) fn compile_locked(&mut self, s: &Statement) -> SqlResult<Arc<Prepared>> {
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
    pub(super) fn compile_all(&mut self, stmts: &[Statement]) -> SqlResult<()> {
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
                    columns: vec![crate::output::OutputColumn { name: String::new(), ty: t, nullable: true }],
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

    pub(super) fn eval_scalar(&mut self, stmt: &Statement, e: &ast::Expr) -> SqlResult<(Value, SqlType)> {
        let (x, t) = self.scalar(stmt, e, false)?;
        let io = IoStatement::begin(self.state.options.statistics_io);
        let v = eval(&x, &[], &mut ExecCtx::new(self.shared, self.state));
        let tables = io.finish(None);
        let v = v?;
        self.io_messages(tables);
        Ok((v, t))
    }

    /// An IF or WHILE condition (its subqueries' reads reported under SET STATISTICS IO).
    pub(super) fn condition(&mut self, stmt: &Statement, e: &ast::Expr) -> SqlResult<bool> {
        let (x, _) = self.scalar(stmt, e, true)?;
        let io = IoStatement::begin(self.state.options.statistics_io);
        let v = crate::plan::is_true(&x, &[], &mut ExecCtx::new(self.shared, self.state));
        let tables = io.finish(None);
        let v = v?;
        self.io_messages(tables);
        Ok(v)
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
