//! FROM and WHERE: the join tree bound against one combined row (tables, CTEs, system views,
//! views, derived tables, table functions), each conjunct pushed down to what it touches.

use super::expr_walk::{conjoin, split_conjuncts};
use super::names::{object_display, Scope, ScopeColumn, KEY_COLUMN};
use super::query::{check_column_list, check_derived_columns, check_nested_order_by};
use super::Binder;
use crate::catalog::{DbRef, ModuleKind, Table};
use crate::locking::LockHints;
use crate::output::OutputColumn;
use crate::plan::{columns_used, BoundQuery, Expr, Plan};
use crate::types::SqlType;
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{self, JoinHint, JoinKind};

pub(super) enum FromNode {
    Leaf {
        source: Box<LeafSource>,
        offset: usize,
        width: usize,
        filters: Vec<Expr>,
    },
    Join {
        left: Box<FromNode>,
        right: Box<FromNode>,
        kind: JoinKind,
        on: Vec<Expr>,
        offset: usize,
        width: usize,
        /// The join hint written in the join (`INNER LOOP JOIN`).
        hint: Option<JoinHint>,
    },
}

pub(super) enum LeafSource {
    Table(TableSource),
    Plan(Plan),
}

/// A table as a FROM clause names it, before an access path is chosen for it.
pub(super) struct TableSource {
    pub(super) db: DbRef,
    pub(super) table: Arc<Table>,
    /// The alias the query gave it (for plans shown to clients).
    pub(super) alias: Option<String>,
    /// Its rows carry their storage key (the UPDATE/DELETE target).
    pub(super) with_key: bool,
    pub(super) hints: LockHints,
}

impl FromNode {
    pub(super) fn offset(&self) -> usize {
        match self {
            FromNode::Leaf { offset, .. } | FromNode::Join { offset, .. } => *offset,
        }
    }
    pub(super) fn width(&self) -> usize {
        match self {
            FromNode::Leaf { width, .. } | FromNode::Join { width, .. } => *width,
        }
    }
}

impl<'a> Binder<'a> {
    /// Binds FROM and WHERE into a plan over the combined row of all sources, and the
    /// scope describing that row. `key_target` names (alias or table name) the table whose
    /// storage key UPDATE/DELETE need: it gets a hidden trailing key column.
    pub fn bind_from_where(
        &mut self,
        from: &[ast::TableRef],
        selection: Option<&ast::Expr>,
        key_target: Option<&str>,
    ) -> SqlResult<(Plan, Scope)> {
        if from.is_empty() {
            let scope = Scope::default();
            let pred = self.with_scope(scope.clone(), |b| selection.map(|s| b.bind_predicate(s)).transpose())?;
            let mut plan = Plan::Values(vec![Vec::new()]);
            if let Some(p) = pred {
                plan = Plan::Filter { input: Box::new(plan), predicate: p };
            }
            return Ok((plan, scope));
        }
        // A derived table binds its own FROM clause: the key target is this one's only.
        let outer_target = std::mem::replace(&mut self.key_target, key_target.map(str::to_lowercase));
        let mut scope = Scope::default();
        let mut node: Option<FromNode> = None;
        for t in from {
            let right = self.bind_table_ref(t, &mut scope);
            let right = match right {
                Ok(right) => right,
                Err(e) => {
                    self.key_target = outer_target;
                    return Err(e);
                }
            };
            node = Some(match node {
                None => right,
                Some(left) => {
                    let offset = left.offset();
                    let width = left.width() + right.width();
                    FromNode::Join {
                        left: Box::new(left),
                        right: Box::new(right),
                        kind: JoinKind::Cross,
                        on: Vec::new(),
                        offset,
                        width,
                        hint: None,
                    }
                }
            });
        }
        self.key_target = outer_target;
        let mut node = node.expect("FROM has a table");
        let mut residual = Vec::new();
        if let Some(sel) = selection {
            let pred = self.with_scope(scope.clone(), |b| b.bind_predicate(sel))?;
            let mut conj = Vec::new();
            split_conjuncts(pred, &mut conj);
            for c in conj {
                if let Some(c) = push_down(&mut node, c) {
                    residual.push(c);
                }
            }
        }
        let mut plan = self.build(node)?;
        if let Some(pred) = conjoin(residual) {
            plan = Plan::Filter { input: Box::new(plan), predicate: pred };
        }
        Ok((plan, scope))
    }

    fn bind_table_ref(&mut self, t: &ast::TableRef, scope: &mut Scope) -> SqlResult<FromNode> {
        let offset = scope.columns.len();
        match t {
            ast::TableRef::Named { name, alias, hints } => {
                let qualifier = alias.as_ref().unwrap_or(name.name()).value.to_lowercase();
                if scope.columns.iter().any(|c| c.qualifier.as_deref() == Some(qualifier.as_str())) {
                    return Err(match alias {
                        Some(a) => duplicate_correlation(&a.value),
                        None => {
                            let shown = object_display(name);
                            msg::DUPLICATE_EXPOSED_NAME.with(&[&shown, &shown])
                        }
                    });
                }
                // CTEs first, then system views, then tables.
                if name.0.len() == 1 {
                    let lower = name.name().value.to_lowercase();
                    if let Some((_, cte)) = self.ctes.iter().rev().find(|(n, _)| *n == lower) {
                        let cte = cte.clone();
                        if matches!(cte.plan, Plan::WorkTable { .. }) {
                            self.work_table_uses += 1;
                        }
                        return Ok(self.leaf_plan(cte, qualifier, scope, offset));
                    }
                }
                if name.0.len() == 1 {
                    let lower = name.name().value.to_lowercase();
                    let trigger = matches!(lower.as_str(), "inserted" | "deleted");
                    if let Some(rt) = if trigger { super::dml::trigger_target(self)? } else { None } {
                        let columns = rt
                            .table
                            .columns
                            .iter()
                            .map(|c| crate::output::OutputColumn {
                                name: c.name.clone(),
                                ty: c.ty,
                                nullable: c.nullable,
                            })
                            .collect();
                        let plan = Plan::Transition { deleted: lower == "deleted" };
                        return Ok(self.leaf_plan(BoundQuery { plan, columns }, qualifier, scope, offset));
                    }
                }
                if let Some(view) = self.system_view(name) {
                    let (db, schema, object) = self.qualify_at(name)?;
                    if !self.catalogs.exists(&db.name) {
                        return Err(crate::catalog::database_not_found(&db.name));
                    }
                    // The plan reads the database's metadata: it needs access to it.
                    let key = crate::catalog::name_key(&schema, &object);
                    self.depend(&db.at, key, None, false, crate::catalog::Access::NONE);
                    let plan = Plan::System { view, db: db.at };
                    return Ok(self.leaf_plan(BoundQuery { plan, columns: view.columns() }, qualifier, scope, offset));
                }
                if let Some((db, m)) = self.module(name, crate::catalog::Access::SELECT)? {
                    if m.kind == ModuleKind::View {
                        let bound = self.bind_view(&db, &m)?;
                        return Ok(self.leaf_plan(bound, qualifier, scope, offset));
                    }
                }
                let rt = self.resolve_table(name)?;
                let hints = LockHints::parse(hints)?;
                for (i, c) in rt.table.columns.iter().enumerate() {
                    scope.columns.push(ScopeColumn {
                        qualifier: Some(qualifier.clone()),
                        name: c.name.clone(),
                        ty: c.ty,
                        nullable: c.nullable,
                        source: Some((rt.dep, i as u16)),
                    });
                }
                let mut width = rt.table.columns.len();
                let with_key = self.key_target.as_deref() == Some(qualifier.as_str());
                if with_key {
                    scope.columns.push(ScopeColumn {
                        qualifier: Some(qualifier.clone()),
                        name: KEY_COLUMN.into(),
                        ty: SqlType::VarBinary(900),
                        nullable: false,
                        source: None,
                    });
                    width += 1;
                }
                Ok(FromNode::Leaf {
                    source: Box::new(LeafSource::Table(TableSource {
                        db: rt.at,
                        table: rt.table,
                        alias: alias.as_ref().map(|a| a.value.clone()),
                        with_key,
                        hints,
                    })),
                    offset,
                    width,
                    filters: Vec::new(),
                })
            }
            ast::TableRef::Derived { query, alias, columns } => {
                check_nested_order_by(query)?;
                self.scopes.push(Scope::default());
                let bound = self.bind_query(query);
                self.scopes.pop();
                let mut bound = bound?;
                let qualifier = alias.value.to_lowercase();
                if scope.columns.iter().any(|c| c.qualifier.as_deref() == Some(qualifier.as_str())) {
                    return Err(duplicate_correlation(&alias.value));
                }
                if !columns.is_empty() {
                    check_column_list(bound.columns.len(), columns.len(), &alias.value)?;
                    for (c, n) in bound.columns.iter_mut().zip(columns) {
                        c.name = n.value.clone();
                    }
                }
                check_derived_columns(&bound.columns, &alias.value)?;
                Ok(self.leaf_plan(bound, qualifier, scope, offset))
            }
            ast::TableRef::Function { name, args, alias } if self.system_function(name).is_some() => {
                let function = self.system_function(name).expect("a system function");
                let written = args;
                // A system function's DEFAULT argument is NULL (fn_listextendedproperty(default, …)).
                let null = ast::Expr::Literal(ast::Literal::Null);
                let args = args
                    .iter()
                    .map(|a| self.bind_expr(if matches!(a, ast::Expr::Default) { &null } else { a }).map(|(e, _)| e))
                    .collect::<SqlResult<Vec<_>>>()?;
                let mut used = Vec::new();
                if !args.iter().all(|e| columns_used(e, &mut used)) || !used.is_empty() {
                    return Err(msg::CORRELATED_TVF_ARGS_NOT_SUPPORTED.err());
                }
                // Read in the database the name gives (`db.sys.f`), else the current one.
                let (db, _, _) = self.qualify_at(name)?;
                if !self.catalogs.exists(&db.name) {
                    return Err(crate::catalog::database_not_found(&db.name));
                }
                let (function, columns) = if function.name == "string_split" {
                    self.string_split(written)?
                } else if function.name == "generate_series" {
                    self.generate_series(function, written)?
                } else {
                    (function, function.columns())
                };
                let plan = Plan::SystemFunction { function, db: db.at, args };
                let qualifier = alias.as_ref().unwrap_or(name.name()).value.to_lowercase();
                let bound = BoundQuery { plan, columns };
                Ok(self.leaf_plan(bound, qualifier, scope, offset))
            }
            ast::TableRef::Function { name, args, alias } => match self.module(name, crate::catalog::Access::SELECT)? {
                Some((db, m)) if m.kind == ModuleKind::TableFunction => {
                    let bound = self.bind_table_function(&db, &m, args)?;
                    let qualifier = alias.as_ref().unwrap_or(name.name()).value.to_lowercase();
                    Ok(self.leaf_plan(bound, qualifier, scope, offset))
                }
                Some((db, m)) if m.kind == ModuleKind::MultiStatementFunction => {
                    let bound = self.bind_multi_statement_function(&db, &m, args)?;
                    let qualifier = alias.as_ref().unwrap_or(name.name()).value.to_lowercase();
                    Ok(self.leaf_plan(bound, qualifier, scope, offset))
                }
                _ => Err(msg::INVALID_OBJECT_NAME.with(&[&object_display(name)])),
            },
            ast::TableRef::Pivot { .. } | ast::TableRef::Unpivot { .. } => {
                let derived = self.pivot_table(t)?;
                self.bind_table_ref(&derived, scope)
            }
            ast::TableRef::Join { left, right, kind, on, hint } => {
                let l = self.bind_table_ref(left, scope)?;
                if matches!(kind, JoinKind::CrossApply | JoinKind::OuterApply) {
                    // The right side reads the left's columns as an enclosing query's: an
                    // outer reference of depth 0 is the left row it runs for.
                    let columns = scope.columns[l.offset()..l.offset() + l.width()].to_vec();
                    self.scopes.push(Scope { columns, correlated: false });
                    // A function's arguments are read one level in (its body's query takes
                    // the place of that level), so that they too reach the left row as an
                    // enclosing one.
                    let function = matches!(**right, ast::TableRef::Function { .. });
                    if function {
                        self.scopes.push(Scope::default());
                    }
                    let r = self.bind_table_ref(right, scope);
                    if function {
                        self.scopes.pop();
                    }
                    self.scopes.pop();
                    let r = r?;
                    let width = l.width() + r.width();
                    let (left, right) = (Box::new(l), Box::new(r));
                    return Ok(FromNode::Join { left, right, kind: *kind, on: Vec::new(), offset, width, hint: None });
                }
                let r = self.bind_table_ref(right, scope)?;
                let width = l.width() + r.width();
                let mut conj = Vec::new();
                if let Some(on) = on {
                    let pred = self.with_scope(scope.clone(), |b| b.bind_predicate(on))?;
                    split_conjuncts(pred, &mut conj);
                }
                let mut node = FromNode::Join {
                    left: Box::new(l),
                    right: Box::new(r),
                    kind: *kind,
                    on: Vec::new(),
                    offset,
                    width,
                    hint: *hint,
                };
                let mut keep = Vec::new();
                for c in conj {
                    if let Some(c) = push_down_on(&mut node, c) {
                        keep.push(c);
                    }
                }
                if let FromNode::Join { on, .. } = &mut node {
                    *on = keep;
                }
                Ok(node)
            }
        }
    }

    /// STRING_SPLIT's form and columns for its arguments: `value` of the string's type
    /// (nvarchar when it or the separator is Unicode, else varchar; its length), and
    /// `ordinal` when the third argument is 1 (a constant 0, 1 or NULL: 4199 otherwise).
    fn string_split(&mut self, args: &[ast::Expr]) -> SqlResult<(crate::plan::View, Vec<OutputColumn>)> {
        if !(2..=3).contains(&args.len()) {
            return Err(msg::ARGUMENT_COUNT_OUT_OF_RANGE.with(&[&"string_split", &2, &3]));
        }
        let (_, text) = self.bind_expr(&args[0])?;
        let (_, separator) = self.bind_expr(&args[1])?;
        let ordinal = match args.get(2) {
            None | Some(ast::Expr::Literal(ast::Literal::Null)) => false,
            Some(ast::Expr::Literal(ast::Literal::Integer(n))) if n == "0" || n == "1" => n == "1",
            Some(ast::Expr::Literal(ast::Literal::Integer(n))) => {
                return Err(msg::STRING_SPLIT_ORDINAL_ARGUMENT.with(&[&n]));
            }
            Some(_) => return Err(msg::STRING_SPLIT_ORDINAL_ARGUMENT.with(&[&"NULL"])),
        };
        let unicode = crate::types::is_unicode(&text) || crate::types::is_unicode(&separator);
        let length = match text {
            SqlType::Char(n) | SqlType::VarChar(n) | SqlType::NChar(n) | SqlType::NVarChar(n) => n,
            _ => 8000,
        };
        let ty = if unicode { SqlType::NVarChar(length.clamp(1, 4000)) } else { SqlType::VarChar(length.max(1)) };
        let ty = if length == tessera_types::MAX {
            if unicode {
                SqlType::NVarChar(length)
            } else {
                SqlType::VarChar(length)
            }
        } else {
            ty
        };
        let name = if ordinal { "string_split ordinal" } else { "string_split" };
        let function = self.catalogs.system_function(name).expect("STRING_SPLIT's forms are system functions");
        let mut columns = vec![OutputColumn { name: "value".into(), ty, nullable: true }];
        if ordinal {
            columns.push(OutputColumn { name: "ordinal".into(), ty: SqlType::BigInt, nullable: false });
        }
        Ok((function, columns))
    }

    /// GENERATE_SERIES's columns for its arguments: `value` of their common numeric type
    /// (2-3 arguments; integers or decimals, 8116 otherwise).
    fn generate_series(
        &mut self,
        function: crate::plan::View,
        args: &[ast::Expr],
    ) -> SqlResult<(crate::plan::View, Vec<OutputColumn>)> {
        if !(2..=3).contains(&args.len()) {
            return Err(msg::ARGUMENT_COUNT_OUT_OF_RANGE.with(&[&"generate_series", &2, &3]));
        }
        let mut ty: Option<SqlType> = None;
        for (i, a) in args.iter().enumerate() {
            let (_, t) = self.bind_expr(a)?;
            if !matches!(
                t,
                SqlType::TinyInt | SqlType::SmallInt | SqlType::Int | SqlType::BigInt | SqlType::Decimal { .. }
            ) {
                return Err(msg::INVALID_ARGUMENT_TYPE.with(&[
                    &crate::types::base_type_name(&t),
                    &(i + 1),
                    &"generate_series",
                ]));
            }
            ty = Some(match ty {
                None => t,
                Some(acc) => crate::types::common_type(&acc, &t)?,
            });
        }
        let ty = ty.unwrap_or(SqlType::Int);
        Ok((function, vec![OutputColumn { name: "value".into(), ty, nullable: false }]))
    }

    fn leaf_plan(&mut self, bound: BoundQuery, qualifier: String, scope: &mut Scope, offset: usize) -> FromNode {
        for c in &bound.columns {
            scope.columns.push(ScopeColumn {
                qualifier: Some(qualifier.clone()),
                name: c.name.clone(),
                ty: c.ty,
                nullable: c.nullable,
                source: None,
            });
        }
        FromNode::Leaf {
            source: Box::new(LeafSource::Plan(bound.plan)),
            offset,
            width: bound.columns.len(),
            filters: Vec::new(),
        }
    }
}

/// Pushes a WHERE conjunct down to the single leaf it reads, or else into the ON list of
/// the smallest inner join covering it, where outer joins allow; returns it back if it
/// must stay above the joins.
fn push_down(node: &mut FromNode, c: Expr) -> Option<Expr> {
    let mut used = Vec::new();
    if !columns_used(&c, &mut used) || used.is_empty() {
        return Some(c);
    }
    push_into(node, c, &used, true)
}

fn covers(node: &FromNode, used: &[usize]) -> bool {
    used.iter().all(|&i| i >= node.offset() && i < node.offset() + node.width())
}

fn push_into(node: &mut FromNode, c: Expr, used: &[usize], allowed: bool) -> Option<Expr> {
    if !allowed {
        return Some(c);
    }
    match node {
        FromNode::Leaf { filters, .. } => {
            filters.push(c);
            None
        }
        FromNode::Join { left, right, kind, on, .. } => {
            // A WHERE filter may go into the preserved side of an outer join, or either
            // side of an inner one.
            let (left_ok, right_ok) = match kind {
                JoinKind::Inner | JoinKind::Cross | JoinKind::CrossApply => (true, true),
                JoinKind::Left | JoinKind::OuterApply => (true, false),
                JoinKind::Right => (false, true),
                JoinKind::Full => (false, false),
            };
            if covers(left, used) {
                push_into(left, c, used, left_ok)
            } else if covers(right, used) {
                push_into(right, c, used, right_ok)
            } else if matches!(kind, JoinKind::Inner | JoinKind::Cross) {
                *kind = JoinKind::Inner;
                on.push(c);
                None
            } else {
                Some(c)
            }
        }
    }
}

/// Pushes an ON conjunct of a join into one of its sides where that is equivalent: either
/// side of an inner join, the inner side of an outer join.
fn push_down_on(node: &mut FromNode, c: Expr) -> Option<Expr> {
    let FromNode::Join { left, right, kind, .. } = node else { return Some(c) };
    let mut used = Vec::new();
    if !columns_used(&c, &mut used) || used.is_empty() {
        return Some(c);
    }
    match kind {
        JoinKind::Inner if covers(left, &used) => push_into(left, c, &used, true),
        JoinKind::Inner | JoinKind::Left if covers(right, &used) => push_into(right, c, &used, true),
        JoinKind::Right if covers(left, &used) => push_into(left, c, &used, true),
        _ => Some(c),
    }
}

/// Error 1011: two FROM items with the same alias.
fn duplicate_correlation(alias: &str) -> SqlError {
    msg::DUPLICATE_CORRELATION_NAME.with(&[&alias])
}
