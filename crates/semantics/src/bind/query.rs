//! Query bodies: set operations (UNION/EXCEPT/INTERSECT), ORDER BY over their result,
//! OFFSET/FETCH, VALUES, and the checks derived tables and CTEs share.

use super::conversion::{convert, project_to, unify};
use super::names::{Scope, ScopeColumn};
use super::Binder;
use crate::output::OutputColumn;
use crate::plan::{BoundQuery, Expr, Plan, SortKey};
use crate::types::{self, SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast::{self, Literal};

impl<'a> Binder<'a> {
    pub fn bind_query(&mut self, q: &ast::Query) -> SqlResult<BoundQuery> {
        let mut bound = self.bind_query_rows(q)?;
        bound.plan.cover_wanted_index();
        match &q.for_clause {
            Some(clause) => self.document(q, clause, bound),
            None => Ok(bound),
        }
    }

    /// FOR JSON / FOR XML over a query's rows: one nvarchar(max) column. Every column of
    /// FOR JSON needs a name (13605).
    fn document(&mut self, q: &ast::Query, clause: &ast::ForClause, bound: BoundQuery) -> SqlResult<BoundQuery> {
        if matches!(clause, ast::ForClause::Json { .. }) && bound.columns.iter().any(|c| c.name.is_empty()) {
            return Err(msg::JSON_COLUMN_WITHOUT_NAME.err());
        }
        let documents = document_columns(q, &bound.plan, bound.columns.len());
        let element = match &q.body {
            ast::SetExpr::Select(s) => match s.from.first() {
                Some(ast::TableRef::Named { name, alias, .. }) => alias.as_ref().unwrap_or(name.name()).value.clone(),
                Some(ast::TableRef::Join { left, .. }) => match &**left {
                    ast::TableRef::Named { name, alias, .. } => alias.as_ref().unwrap_or(name.name()).value.clone(),
                    _ => "row".into(),
                },
                _ => "row".into(),
            },
            _ => "row".into(),
        };
        let format = crate::plan::DocumentFormat {
            clause: clause.clone(),
            names: bound.columns.iter().map(|c| c.name.clone()).collect(),
            types: bound.columns.iter().map(|c| c.ty).collect(),
            documents,
            element,
        };
        let name = format.column_name().to_string();
        let plan = Plan::Document { input: Box::new(bound.plan), format: Box::new(format) };
        let ty = SqlType::NVarChar(tessera_types::MAX);
        Ok(BoundQuery { plan, columns: vec![OutputColumn { name, ty, nullable: true }] })
    }

    fn bind_query_rows(&mut self, q: &ast::Query) -> SqlResult<BoundQuery> {
        self.bind_ctes(&q.with, &q.hints)?;
        let order_by = &q.order_by;
        check_order_by_unique(order_by)?;
        let has_paging = q.offset.is_some() || q.fetch.is_some();
        match &q.body {
            ast::SetExpr::Select(s) if !order_by.is_empty() || has_paging => {
                self.bind_select(s, order_by, q.offset.as_ref(), q.fetch.as_ref())
            }
            body => {
                let mut bound = self.bind_set_expr(body)?;
                if !order_by.is_empty() {
                    bound = self.order_set_result(bound, first_select_items(body), order_by)?;
                }
                if has_paging {
                    bound.plan = self.paging(bound.plan, q.offset.as_ref(), q.fetch.as_ref())?;
                }
                Ok(bound)
            }
        }
    }

    pub(super) fn paging(
        &mut self,
        plan: Plan,
        offset: Option<&ast::Expr>,
        fetch: Option<&ast::Expr>,
    ) -> SqlResult<Plan> {
        // Constant counts are checked when the query compiles, as SQL Server does.
        let offset = match offset {
            Some(o) => self.bind_count(o)?,
            None => Expr::Const(Value::Int(0)),
        };
        if let Expr::Const(v) = &offset {
            crate::plan::offset_count(v)?;
        }
        let fetch = match fetch {
            Some(f) => Some(self.bind_count(f)?),
            None => None,
        };
        if let Some(Expr::Const(v)) = &fetch {
            crate::plan::fetch_count(v)?;
        }
        Ok(Plan::Offset { input: Box::new(plan), offset, fetch })
    }

    fn bind_count(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        self.scopes.push(Scope::default());
        let r = self.bind_for(e, &SqlType::BigInt);
        self.scopes.pop();
        let (x, t) = r?;
        convert(x, &t, &SqlType::BigInt)
    }

    /// ORDER BY over a UNION (or other set operation): by output column name or position,
    /// or by an expression of the first query's select list written again (`ORDER BY
    /// t.a` for `SELECT t.a … UNION …`).
    fn order_set_result(
        &mut self,
        bound: BoundQuery,
        first_items: &[ast::SelectItem],
        order_by: &[ast::OrderItem],
    ) -> SqlResult<BoundQuery> {
        let scope = Scope {
            columns: bound
                .columns
                .iter()
                .map(|c| ScopeColumn {
                    qualifier: None,
                    name: c.name.clone(),
                    ty: c.ty,
                    nullable: c.nullable,
                    source: None,
                })
                .collect(),
            correlated: false,
        };
        let keys = self.with_scope(scope, |b| -> SqlResult<Vec<SortKey>> {
            let mut keys = Vec::new();
            for item in order_by {
                let e = match &item.expr {
                    ast::Expr::Literal(Literal::Integer(n)) => {
                        let i: usize = n.parse().unwrap_or(0);
                        if i == 0 || i > bound.columns.len() {
                            return Err(msg::ORDER_BY_POSITION_INVALID.with(&[&n]));
                        }
                        Expr::Column(i - 1)
                    }
                    e => match b.bind_expr(e) {
                        Ok((x, _)) => x,
                        // Not an output column's name: the first query's expression itself?
                        Err(err) if err.number == 207 || err.number == 4104 => {
                            match select_item_position(first_items, e).filter(|&i| i < bound.columns.len()) {
                                Some(i) => Expr::Column(i),
                                None if err.number == 207 => return Err(msg::UNION_ORDER_BY_NOT_SELECTED.err()),
                                None => return Err(err),
                            }
                        }
                        Err(err) => return Err(err),
                    },
                };
                keys.push(SortKey { expr: e, descending: item.descending });
            }
            Ok(keys)
        })?;
        let mut plan = bound.plan;
        plan.scan_backward_for(&keys);
        Ok(BoundQuery { plan: Plan::Sort { input: Box::new(plan), keys }, columns: bound.columns })
    }

    pub(super) fn bind_set_expr(&mut self, body: &ast::SetExpr) -> SqlResult<BoundQuery> {
        match body {
            ast::SetExpr::Select(s) => self.bind_select(s, &[], None, None),
            ast::SetExpr::Query(q) => self.bind_query(q),
            ast::SetExpr::Values(rows) => self.bind_values(rows),
            ast::SetExpr::SetOperation { op, all, left, right } => {
                let l = self.bind_set_expr(left)?;
                let r = self.bind_set_expr(right)?;
                combine_set_operands(*op, *all, l, r)
            }
        }
    }

    fn bind_values(&mut self, rows: &[Vec<ast::Expr>]) -> SqlResult<BoundQuery> {
        let width = rows.first().map_or(0, Vec::len);
        let mut bound_rows = Vec::with_capacity(rows.len());
        for r in rows {
            if r.len() != width {
                return Err(msg::VALUES_ROW_LENGTH_MISMATCH.err());
            }
            bound_rows.push(r.iter().map(|e| self.bind_expr(e)).collect::<SqlResult<Vec<_>>>()?);
        }
        let mut columns = Vec::with_capacity(width);
        for c in 0..width {
            let ty = unify(bound_rows.iter().map(|r| &r[c]))?;
            columns.push(OutputColumn { name: String::new(), ty, nullable: true });
        }
        let mut out = Vec::with_capacity(bound_rows.len());
        for r in bound_rows {
            out.push(
                r.into_iter().zip(&columns).map(|((e, t), c)| convert(e, &t, &c.ty)).collect::<SqlResult<Vec<_>>>()?,
            );
        }
        Ok(BoundQuery { plan: Plan::Values(out), columns })
    }
}

/// Errors 8158/8159: a derived table's or CTE's column list does not match its query.
pub(super) fn check_column_list(have: usize, listed: usize, name: &str) -> SqlResult<()> {
    if have > listed {
        return Err(msg::MORE_COLUMNS_THAN_LIST.with(&[&name]));
    }
    if have < listed {
        return Err(msg::FEWER_COLUMNS_THAN_LIST.with(&[&name]));
    }
    Ok(())
}

/// Two operands of UNION/EXCEPT/INTERSECT: equal widths (205), each column converted to
/// the operands' common type; names from the left.
pub(super) fn combine_set_operands(
    op: ast::SetOperator,
    all: bool,
    l: BoundQuery,
    r: BoundQuery,
) -> SqlResult<BoundQuery> {
    if l.columns.len() != r.columns.len() {
        return Err(msg::UNION_COLUMN_COUNT_MISMATCH.err());
    }
    let mut columns = Vec::with_capacity(l.columns.len());
    for (a, b) in l.columns.iter().zip(&r.columns) {
        let ty = types::common_type(&a.ty, &b.ty)?;
        columns.push(OutputColumn { name: a.name.clone(), ty, nullable: a.nullable || b.nullable });
    }
    let types_: Vec<SqlType> = columns.iter().map(|c| c.ty).collect();
    let lp = project_to(l, &types_)?;
    let rp = project_to(r, &types_)?;
    Ok(BoundQuery { plan: Plan::SetOp { op, all, left: Box::new(lp), right: Box::new(rp) }, columns })
}

/// Error 1033: ORDER BY in a derived table, subquery or CTE needs TOP or OFFSET.
/// Error 169: the same column (written the same way, in any case) twice in ORDER BY.
fn check_order_by_unique(order_by: &[ast::OrderItem]) -> SqlResult<()> {
    let mut seen = std::collections::HashSet::new();
    for item in order_by {
        if matches!(item.expr, ast::Expr::Column(_))
            && !seen.insert(tessera_syntax::unparse::definition(&item.expr).to_lowercase())
        {
            return Err(msg::ORDER_BY_COLUMN_REPEATED.err());
        }
    }
    Ok(())
}

pub(super) fn check_nested_order_by(q: &ast::Query) -> SqlResult<()> {
    let top = matches!(&q.body, ast::SetExpr::Select(s) if s.top.is_some());
    if !q.order_by.is_empty() && !top && q.offset.is_none() && q.for_clause.is_none() {
        return Err(msg::ORDER_BY_NOT_ALLOWED.err());
    }
    Ok(())
}

/// Errors 8155/8156: every column of a derived table or CTE needs a distinct name.
pub(super) fn check_derived_columns(columns: &[OutputColumn], name: &str) -> SqlResult<()> {
    for (i, c) in columns.iter().enumerate() {
        if c.name.is_empty() {
            return Err(msg::NO_COLUMN_NAME_SPECIFIED.with(&[&(i + 1), &name]));
        }
        if columns[..i].iter().any(|p| p.name.eq_ignore_ascii_case(&c.name)) {
            return Err(msg::DUPLICATE_COLUMN_IN_LIST.with(&[&c.name, &name]));
        }
    }
    Ok(())
}

/// The select list of the leftmost query of a set operation (none for VALUES).
fn first_select_items(body: &ast::SetExpr) -> &[ast::SelectItem] {
    match body {
        ast::SetExpr::Select(s) => &s.items,
        ast::SetExpr::Query(q) => first_select_items(&q.body),
        ast::SetExpr::SetOperation { left, .. } => first_select_items(left),
        ast::SetExpr::Values(_) => &[],
    }
}

/// The output position of the select item whose expression is `e`, in a select list of
/// single expressions (a wildcard makes positions unknowable here: none).
fn select_item_position(items: &[ast::SelectItem], e: &ast::Expr) -> Option<usize> {
    let mut position = 0;
    for item in items {
        match item {
            ast::SelectItem::Expr { expr, .. } if expr == e => return Some(position),
            ast::SelectItem::Expr { .. } => position += 1,
            _ => return None,
        }
    }
    None
}

/// Which columns of a query's rows are documents already: a nested FOR JSON or FOR XML
/// subquery, or JSON_QUERY (found in the select list as written, when each item is one
/// column; else in the plan's projection).
fn document_columns(q: &ast::Query, plan: &Plan, width: usize) -> Vec<bool> {
    if let ast::SetExpr::Select(s) = &q.body {
        let written: Option<Vec<bool>> = s
            .items
            .iter()
            .map(|item| match item {
                ast::SelectItem::Expr { expr, .. } => Some(is_document(expr)),
                _ => None,
            })
            .collect();
        if let Some(written) = written.filter(|w| w.len() == width) {
            return written;
        }
    }
    let mut out = vec![false; width];
    let mut p = plan;
    // The select list is the projection under any sort, top or paging.
    loop {
        match p {
            Plan::Sort { input, .. } | Plan::Top { input, .. } | Plan::Distinct { input } => p = input,
            Plan::Project { exprs, .. } if exprs.len() >= width => {
                for (i, e) in exprs.iter().take(width).enumerate() {
                    out[i] = match e {
                        Expr::Subquery(sq) => matches!(&*sq.plan, Plan::Document { .. }),
                        Expr::Func { name, .. } => name == "JSON_QUERY",
                        _ => false,
                    };
                }
                return out;
            }
            _ => return out,
        }
    }
}

/// Whether a select item is a document already: a FOR JSON / FOR XML subquery, or
/// JSON_QUERY.
fn is_document(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Nested(inner) => is_document(inner),
        ast::Expr::Subquery(q) => q.for_clause.is_some(),
        ast::Expr::Function { name, .. } => name.name().value.eq_ignore_ascii_case("JSON_QUERY"),
        _ => false,
    }
}
