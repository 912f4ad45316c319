//! The compile phase: every statement of a batch bound before anything runs, plans from
//! the plan cache (keyed by AST node and session context), schema-stability locks on the
//! objects a plan uses, and the scalar expressions of control flow and variables.

use super::variables::{addr, assign_select};
use super::Runner;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use tessera_database::LockMode;
use tessera_errors::SqlResult;
use tessera_execution::exec::eval;
use tessera_execution::runtime::{CatalogOf, ExecCtx, SessionState, Shared};
use tessera_execution::statistics::IoStatement;
use tessera_semantics::bind::Binder;
use tessera_semantics::cache::{Compiled, Found};
use tessera_semantics::catalog::{Catalog, DbRef, ObjectDep};
use tessera_semantics::plan::{BoundQuery, Expr, Prepared};
use tessera_semantics::types::{SqlType, Value};
use tessera_syntax::ast::{self, Statement, StatementKind};
use tessera_syntax::references::mentions_temp_table;

/// How many times a statement is bound again because what it names changed while its
/// locks were awaited.
const MAX_REBINDS: u32 = 16;

impl Runner<'_> {
    /// Fingerprint of the session state plans depend on: the variables in scope (`vars`:
    /// their names, slots and types — a batch's are fixed by its text, but the same
    /// `sp_executesql` statement may come with other `@params`, and a plan bound for one
    /// declaration would read another's slots as its types), which table has
    /// IDENTITY_INSERT on (in which database the session is: a plan compiled under it
    /// names that table), and which tables `#names` and `@table_variables` mean now.
    fn context(&self, vars: &[(String, SqlType)]) -> u64 {
        let mut declared = std::collections::hash_map::DefaultHasher::new();
        vars.hash(&mut declared);
        let declared = declared.finish();
        let o = &self.state.options;
        let mut h = match &o.identity_insert {
            Some((db, id)) => {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                (db.to_lowercase(), id, self.state.database.to_lowercase()).hash(&mut h);
                h.finish() >> 4
            }
            None => 0,
        };
        // Options the binder compiles into plans (constants are converted while binding).
        h ^= u64::from(!o.ansi_nulls) << 62 | u64::from(!o.concat_null_yields_null) << 63;
        h ^= match o.dateformat.as_str() {
            "dmy" | "dym" => 1 << 60,
            "ymd" | "ydm" => 1 << 61,
            _ => 0,
        };
        // Where one-part names are looked for first (dbo needs no mark: it is the common
        // case, and the plan depends on what the names found).
        if !self.state.default_schema.eq_ignore_ascii_case("dbo") {
            let mut d = std::collections::hash_map::DefaultHasher::new();
            self.state.default_schema.to_lowercase().hash(&mut d);
            h ^= d.finish() >> 8;
        }
        // The same in any order the map keeps its entries.
        let temp = self.state.temp_tables.iter().fold(0u64, |acc, entry| {
            let mut e = std::collections::hash_map::DefaultHasher::new();
            entry.hash(&mut e);
            acc.wrapping_add(e.finish())
        });
        h ^ temp ^ declared.rotate_left(17)
    }

    /// The compiled form of the AST node at `key` — a plan from the plan cache whose
    /// every name finds the same definitions in this database, or one bound now — and
    /// the names it depends on.
    fn prepared(
        &mut self,
        key: usize,
        span: (usize, usize),
        vars: &[(String, SqlType)],
        compile: impl FnOnce(&mut Binder) -> SqlResult<Prepared>,
    ) -> SqlResult<Checked> {
        let context = self.context(vars);
        let catalogs = Catalogs::new(self.shared, self.state)?;
        let (database_id, version) = (catalogs.current.database_id, catalogs.current.catalog.version);
        if let Some(found) = self.batch.plan(key, context, database_id, version, |dep| catalogs.holds(dep)) {
            return Ok(Checked { found, context, current: catalogs.current });
        }
        let started = std::time::Instant::now();
        let mut b = Binder::new(self.shared, self.state, vars);
        let prepared = match compile(&mut b) {
            Ok(p) => p,
            // A name in a database the session may not use is 916, whether or not it
            // exists there: nothing about another tenant's objects is revealed.
            Err(e) => {
                let deps = std::mem::take(&mut b.deps);
                self.check_databases(&deps)?;
                return Err(e);
            }
        };
        let deps: Arc<[ObjectDep]> = Arc::from(std::mem::take(&mut b.deps));
        let plan = Arc::new(prepared);
        let bind_us = started.elapsed().as_micros() as u64;
        let compiled = Compiled { context, plan: plan.clone(), deps: deps.clone() };
        let offsets = tessera_semantics::cache::utf16_offsets(&self.batch.text, span);
        let stats = self.batch.store(key, compiled, catalogs.current.database_id, bind_us, offsets);
        Ok(Checked { found: Found { plan, deps, stats }, context, current: catalogs.current })
    }

    pub(super) fn compile_statement(&mut self, s: &Statement) -> SqlResult<Option<Checked>> {
        let vars = self.visible(s);
        let (key, span) = (addr(s), s.span);
        Ok(Some(match &s.kind {
            StatementKind::Query(q) => {
                if let ast::SetExpr::Select(sel) = &q.body {
                    if sel.items.iter().any(|i| matches!(i, ast::SelectItem::Assign { .. })) {
                        return self
                            .prepared(key, span, vars, |b| tessera_semantics::bind::compile_assign(b, sel, &q.order_by))
                            .map(Some);
                    }
                }
                if q.into_target().is_some() {
                    return Ok(None);
                }
                self.prepared(key, span, vars, |b| b.bind_query(q).map(Prepared::Query))?
            }
            StatementKind::Insert(i) => {
                self.prepared(key, span, vars, |b| tessera_semantics::bind::compile_insert(b, i).map(Prepared::Insert))?
            }
            StatementKind::Update(u) if u.current_of.is_some() => return Ok(None),
            StatementKind::Delete(d) if d.current_of.is_some() => return Ok(None),
            StatementKind::SetVariable { name, .. } if self.frame.cursor_variables.contains(&name.to_lowercase()) => {
                return Ok(None)
            }
            StatementKind::Update(u) => {
                self.prepared(key, span, vars, |b| tessera_semantics::bind::compile_update(b, u).map(Prepared::Update))?
            }
            StatementKind::Delete(d) => {
                self.prepared(key, span, vars, |b| tessera_semantics::bind::compile_delete(b, d).map(Prepared::Delete))?
            }
            StatementKind::Merge(m) => self.prepared(key, span, vars, |b| {
                tessera_semantics::bind::compile_merge(b, m).map(|m| Prepared::Merge(Box::new(m)))
            })?,
            StatementKind::SetVariable { name, op, value } => {
                let sel = assign_select(name, *op, value);
                self.prepared(key, span, vars, |b| tessera_semantics::bind::compile_assign(b, &sel, &[]))?
            }
            _ => return Ok(None),
        }))
    }

    /// The statement's plan, with a schema-stability lock on every object it uses (held
    /// to the end of the statement, so no DDL changes them while it runs). A plan bound
    /// before a DDL that committed while the locks were awaited is bound again.
    pub(super) fn compile_locked(&mut self, s: &Statement) -> SqlResult<Found<Prepared>> {
        let context = self.context(self.visible(s));
        let at = addr(s);
        let first = (self.compiled.iter().position(|(a, _)| *a == at))
            .map(|i| self.compiled.remove(i).1)
            .filter(|checked| checked.context == context);
        self.locked(first, |r| Ok(r.compile_statement(s)?.expect("compiled statement")))
    }

    /// `compile` (which compiles an AST node or finds its plan), with a schema-stability
    /// lock on every table the plan uses, bound again until it is current once the locks
    /// are held. `first` is a plan the compile phase found for the node, which is checked
    /// as a plan found now would be.
    fn locked(
        &mut self,
        first: Option<Checked>,
        compile: impl Fn(&mut Self) -> SqlResult<Checked>,
    ) -> SqlResult<Found<Prepared>> {
        let mut checked = match first {
            Some(checked) => checked,
            None => {
                let checked = compile(self)?;
                // Just found or bound against the catalogs as they are: with no table to
                // lock, nothing can change under it before it runs.
                if !checked.found.deps.iter().any(|d| d.locked) {
                    self.check_plan(&checked.found.deps)?;
                    return Ok(checked.found);
                }
                checked
            }
        };
        let mut rebinds = 0;
        loop {
            let found = &checked.found;
            for dep in found.deps.iter().filter(|d| d.locked) {
                // The current database's objects as the plan was checked against them (an
                // object replaced since is found so by the look under the locks below).
                let named;
                let of = match &dep.db {
                    DbRef::Current => &checked.current,
                    DbRef::Named(db) => {
                        named = self.state.catalog_of(self.shared, db)?;
                        &named
                    }
                };
                // A table dropped meanwhile: binding again reports it.
                if let Some(o) = of.catalog.lookup_key(&dep.key) {
                    let tx = self.state.transaction(self.shared, &of.database)?;
                    tx.lock_schema(o.id() as u32, LockMode::SchemaStability)?;
                    // A SNAPSHOT transaction reads rows as of its snapshot but definitions
                    // as they are: one redefined since may not be used.
                    if let Some(snapshot) = tx.snapshot().filter(|s| !s.statement) {
                        if tx.database().redefined_since(o.id() as u32, snapshot.csn) {
                            return Err(tessera_errors::msg::SNAPSHOT_METADATA_CHANGED.with(&[&of.database]));
                        }
                    }
                }
            }
            // Under the locks no DDL changes what the plan uses: it holds if every name
            // still finds what it was bound against. The current database's names need
            // no look when its catalog is still the snapshot they were checked in.
            let catalogs = Catalogs::new(self.shared, self.state)?;
            let unchanged = catalogs.current.catalog.version == checked.current.catalog.version;
            if found.deps.iter().all(|d| (unchanged && d.db == DbRef::Current) || catalogs.holds(d)) {
                self.check_plan(&found.deps)?;
                return Ok(checked.found);
            }
            // Under the locks a second binding finds what the first left; more would mean
            // a name that never finds what it was bound against (a livelock, not DDL).
            rebinds += 1;
            if rebinds > MAX_REBINDS {
                return Err(tessera_errors::msg::INTERNAL_QUERY_PROCESSOR_ERROR.with(&[]));
            }
            drop(catalogs);
            checked = compile(self)?;
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
                // A table type not found is an error of the whole batch (2715), as a type
                // SQL Server cannot find when it compiles.
                StatementKind::Declare(decls) => {
                    for d in decls {
                        if let ast::DeclarationKind::Scalar { ty, .. } = &d.kind {
                            if self.frame.is_table_variable(&d.name) {
                                let found = self.with_ctx(|ctx| tessera_execution::runtime::table_type(ctx, ty));
                                found.map_err(|e| e.at_line(s.line))?;
                            }
                        }
                    }
                }
                _ => match self.compile_statement(s) {
                    Ok(Some(checked)) => self.compiled.push((addr(s), checked)),
                    Ok(None) => {}
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
        // A constant or a variable (most EXEC arguments) binds at once and reads nothing: a
        // cached plan would only make each calling batch a compiled plan of its own, which
        // SQL Server's call of a procedure is not.
        if !predicate && is_constant_or_variable(e) {
            let vars = self.visible(stmt);
            return Binder::new(self.shared, self.state, vars).bind_expr(e);
        }
        // A condition or value that reads tables (IF EXISTS (SELECT …)) holds schema
        // stability on them as a statement does.
        let p = self.locked(None, |r| {
            let vars = r.visible(stmt);
            r.prepared(addr(e), stmt.span, vars, |b| {
                let (x, t) = if predicate { (b.bind_predicate(e)?, SqlType::Bit) } else { b.bind_expr(e)? };
                Ok(Prepared::Query(BoundQuery {
                    plan: tessera_semantics::plan::Plan::Values(vec![vec![x]]),
                    columns: vec![tessera_semantics::output::OutputColumn {
                        name: String::new(),
                        ty: t,
                        nullable: true,
                    }],
                }))
            })
        })?;
        match &*p.plan {
            Prepared::Query(BoundQuery { plan: tessera_semantics::plan::Plan::Values(rows), columns }) => {
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
        let v = tessera_execution::exec::is_true(&x, &[], &mut ExecCtx::new(self.shared, self.state));
        let tables = io.finish(None);
        let v = v?;
        self.io_messages(tables);
        Ok(v)
    }
}

fn is_constant_or_variable(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Literal(_) | ast::Expr::Variable(_) => true,
        ast::Expr::Unary { expr, .. } => matches!(**expr, ast::Expr::Literal(_)),
        _ => false,
    }
}

/// A plan, the session context it was found for, and the current database's catalog its
/// names were found to hold in.
pub(super) struct Checked {
    found: Found<Prepared>,
    context: u64,
    current: CatalogOf,
}

impl Checked {
    pub(super) fn plan(&self) -> &Prepared {
        &self.found.plan
    }
}

/// The catalogs a cached plan's dependencies are checked against while a statement finds
/// its plan: the current database's, and any other database's the plan names (looked up
/// once each).
struct Catalogs<'a> {
    shared: &'a Shared,
    session: &'a SessionState,
    current: CatalogOf,
    named: RefCell<Vec<(String, Option<Arc<Catalog>>)>>,
}

impl<'a> Catalogs<'a> {
    fn new(shared: &'a Shared, session: &'a SessionState) -> SqlResult<Catalogs<'a>> {
        let current = session.catalog_of(shared, &session.database)?;
        Ok(Catalogs { shared, session, current, named: RefCell::default() })
    }

    /// Whether the name finds the definition the plan was bound against.
    fn holds(&self, dep: &ObjectDep) -> bool {
        match &dep.db {
            DbRef::Current => dep.holds_in(&self.current.catalog),
            DbRef::Named(name) => {
                let mut named = self.named.borrow_mut();
                let at = match named.iter().position(|(n, _)| n.eq_ignore_ascii_case(name)) {
                    Some(at) => at,
                    None => {
                        let catalog = (self.shared.engine.exists(name))
                            .then(|| {
                                let of = self.shared.catalog_named(name).ok()?;
                                Some(self.session.own_view(&of.database, of.catalog))
                            })
                            .flatten();
                        named.push((name.clone(), catalog));
                        named.len() - 1
                    }
                };
                // A database that cannot be read (RESTORING, offline, gone) finds nothing,
                // as it did when the plan was bound if the name found nothing then.
                named[at].1.as_ref().map_or(dep.fingerprint.is_none(), |c| dep.holds_in(c))
            }
        }
    }
}
