//! SELECT: the select list, GROUP BY and HAVING, window calls (`window`), ORDER BY, DISTINCT, TOP
//! and OFFSET/FETCH, assembled into one plan.

use super::aggregate::{contains_aggregate, contains_subquery, not_grouped, AggClause, AggContext, GROUPING_BITS};
use super::conversion::convert;
use super::expr_walk::map_columns;
use super::names::{object_display, qualified_name, Scope};
use super::Binder;
use crate::output::OutputColumn;
use crate::plan::{BoundQuery, Expr, Plan, SortKey};
use crate::types::{SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast::{self, Literal};

impl<'a> Binder<'a> {
    pub(super) fn bind_select(
        &mut self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
        offset: Option<&ast::Expr>,
        fetch: Option<&ast::Expr>,
    ) -> SqlResult<BoundQuery> {
        // FROM and WHERE (where a window call of an enclosing select list may not be), then
        // the rest; the enclosing select list's window calls are kept for it meanwhile.
        let outer_windows = self.windows.take();
        let result = self.bind_from_where(&s.from, s.selection.as_ref(), None).and_then(|(mut plan, scope)| {
            let columns =
                self.with_scope(scope.clone(), |b| b.bind_select_rest(s, order_by, offset, fetch, &mut plan, scope))?;
            Ok(BoundQuery { plan, columns })
        });
        self.windows = outer_windows;
        result
    }

    fn bind_select_rest(
        &mut self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
        offset: Option<&ast::Expr>,
        fetch: Option<&ast::Expr>,
        plan: &mut Plan,
        scope: Scope,
    ) -> SqlResult<Vec<OutputColumn>> {
        let uses_aggregates = !s.group_by.is_empty()
            || s.grouping_sets.is_some()
            || s.having.is_some()
            || s.items.iter().any(|i| match i {
                ast::SelectItem::Expr { expr, .. } => contains_aggregate(expr),
                ast::SelectItem::Assign { value, .. } => contains_aggregate(value),
                _ => false,
            })
            || order_by.iter().any(|o| contains_aggregate(&o.expr));
        if uses_aggregates {
            let mut group_bound = Vec::new();
            let mut group_types = Vec::new();
            for g in &s.group_by {
                if contains_aggregate(g) || contains_subquery(g) {
                    return Err(msg::AGGREGATE_IN_GROUP_BY.err());
                }
                let (e, t) = self.bind_expr(g)?;
                group_bound.push(e);
                group_types.push(t);
            }
            self.agg = Some(AggContext {
                group_asts: s.group_by.clone(),
                group_types: group_types.clone(),
                calls: Vec::new(),
                input: scope.clone(),
                clause: AggClause::Select,
                sets: s.grouping_sets.is_some(),
            });
        }
        let result = self.bind_projection(s, order_by, offset, fetch, plan, &scope, uses_aggregates);
        self.agg = None;
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn bind_projection(
        &mut self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
        offset: Option<&ast::Expr>,
        fetch: Option<&ast::Expr>,
        plan: &mut Plan,
        scope: &Scope,
        aggregated: bool,
    ) -> SqlResult<Vec<OutputColumn>> {
        // Select list (and ORDER BY), where window calls may appear.
        self.windows = Some(Default::default());
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        // Output column of each select item that is a single expression.
        let mut item_columns: Vec<Option<usize>> = Vec::new();
        for item in &s.items {
            item_columns.push(matches!(item, ast::SelectItem::Expr { .. }).then_some(exprs.len()));
            match item {
                ast::SelectItem::Wildcard => {
                    if s.from.is_empty() {
                        return Err(msg::MUST_SPECIFY_TABLE.err());
                    }
                    if aggregated {
                        let first = scope.columns.first().map(qualified_name).unwrap_or_default();
                        return Err(not_grouped(AggClause::Select, &first));
                    }
                    for (i, c) in scope.columns.iter().enumerate() {
                        exprs.push(Expr::Column(i));
                        columns.push(OutputColumn { name: c.name.clone(), ty: c.ty, nullable: c.nullable });
                        if let Some((dep, column)) = c.source {
                            self.note_column(dep, column, crate::catalog::Access::SELECT);
                        }
                    }
                }
                ast::SelectItem::QualifiedWildcard(q) => {
                    let qual = q.name().value.to_lowercase();
                    let mut any = false;
                    for (i, c) in scope.columns.iter().enumerate() {
                        if c.qualifier.as_deref() == Some(&qual) {
                            any = true;
                            exprs.push(Expr::Column(i));
                            columns.push(OutputColumn { name: c.name.clone(), ty: c.ty, nullable: c.nullable });
                            if let Some((dep, column)) = c.source {
                                self.note_column(dep, column, crate::catalog::Access::SELECT);
                            }
                        }
                    }
                    if !any {
                        return Err(msg::INVALID_COLUMN_PREFIX.with(&[&object_display(q)]));
                    }
                }
                ast::SelectItem::Expr { expr, alias } => {
                    let (e, t, n) = self.bind_expr_n(expr)?;
                    exprs.push(e);
                    let name = alias.as_ref().map(|a| a.value.clone()).unwrap_or_else(|| implicit_name(expr));
                    columns.push(OutputColumn { name, ty: t, nullable: n });
                }
                ast::SelectItem::Assign { .. } => {
                    return Err(msg::ASSIGNMENT_WITH_RETRIEVAL.err());
                }
            }
        }
        // HAVING (binds aggregates it uses).
        if let Some(a) = &mut self.agg {
            a.clause = AggClause::Having;
        }
        let windows = self.windows.take();
        let having = s.having.as_ref().map(|h| self.bind_predicate(h)).transpose();
        self.windows = windows;
        let mut having = having?;
        // ORDER BY: select-list aliases and positions, or any expression of the FROM rows.
        let mut sort_keys = Vec::new();
        let visible = exprs.len();
        if let Some(a) = &mut self.agg {
            a.clause = AggClause::OrderBy;
        }
        for item in order_by {
            let e = self.bind_order_item(&item.expr, &columns, &s.items, &item_columns, &mut exprs)?;
            sort_keys.push(SortKey { expr: e, descending: item.descending });
        }
        if s.distinct && exprs.len() > visible {
            return Err(msg::DISTINCT_ORDER_BY_NOT_SELECTED.err());
        }
        // TOP
        let top = match &s.top {
            Some(t) => {
                let count = self.bind_count_top(&t.count, t.percent)?;
                Some((count, t.percent, t.with_ties))
            }
            None => None,
        };
        if top.as_ref().is_some_and(|t| t.2) && order_by.is_empty() {
            return Err(msg::WITH_TIES_WITHOUT_ORDER_BY.err());
        }
        if top.is_some() && (offset.is_some() || fetch.is_some()) {
            return Err(msg::TOP_WITH_OFFSET.err());
        }
        // Assemble.
        let mut p = std::mem::replace(plan, Plan::Values(Vec::new()));
        let mut width = scope.columns.len();
        if let Some(agg) = self.agg.take() {
            width = agg.group_asts.len() + agg.calls.len();
            let group_by: Vec<Expr> = {
                // Group expressions were bound in the input scope above.
                let saved = self.agg.take();
                let mut v = Vec::new();
                for g in &agg.group_asts {
                    v.push(self.bind_expr(g)?.0);
                }
                self.agg = saved;
                v
            };
            let aggregates = agg.calls.clone();
            match &s.grouping_sets {
                Some(sets) => {
                    p = Plan::GroupingSets { input: Box::new(p), group_by, sets: sets.clone(), aggregates };
                    // The grouping bits follow the aggregates.
                    let bits = width;
                    width += 1;
                    let renumber = |i: usize| if i == GROUPING_BITS { bits } else { i };
                    for e in exprs.iter_mut() {
                        *e = map_columns(e, &renumber);
                    }
                    having = having.map(|h| map_columns(&h, &renumber));
                }
                None => {
                    p = Plan::Aggregate { input: Box::new(p), group_by, aggregates };
                    p.read_one_for_min_max();
                }
            }
            self.agg = Some(agg);
        }
        if let Some(h) = having {
            p = Plan::Filter { input: Box::new(p), predicate: h };
        }
        p = self.close_windows(p, width, &mut exprs);
        p = Plan::Project { input: Box::new(p), exprs: exprs.clone() };
        if s.distinct {
            p = Plan::Distinct { input: Box::new(p) };
        }
        if !sort_keys.is_empty() {
            let ties: Vec<Expr> = sort_keys.iter().map(|k| k.expr.clone()).collect();
            p.scan_backward_for(&sort_keys);
            p = Plan::Sort { input: Box::new(p), keys: sort_keys };
            if let Some((count, percent, with_ties)) = top.clone() {
                p = Plan::Top { input: Box::new(p), count, percent, ties: if with_ties { ties } else { Vec::new() } };
            }
        } else if let Some((count, percent, _)) = top.clone() {
            p = Plan::Top { input: Box::new(p), count, percent, ties: Vec::new() };
        }
        if offset.is_some() || fetch.is_some() {
            if order_by.is_empty() {
                return Err(msg::INVALID_FETCH_NEXT.err());
            }
            p = self.paging(p, offset, fetch)?;
        }
        if exprs.len() > visible {
            p = Plan::Project { input: Box::new(p), exprs: (0..visible).map(Expr::Column).collect() };
        }
        *plan = p;
        Ok(columns)
    }

    fn bind_count_top(&mut self, e: &ast::Expr, percent: bool) -> SqlResult<Expr> {
        self.scopes.push(Scope::default());
        let r = self.bind_for(e, if percent { &SqlType::Float } else { &SqlType::BigInt });
        self.scopes.pop();
        let (x, t) = r?;
        if percent {
            let x = convert(x, &t, &SqlType::Float)?;
            if let Expr::Const(Value::Float(p)) = &x {
                if !(0.0..=100.0).contains(p) {
                    return Err(msg::INVALID_PERCENT_VALUE.err().with_severity(15));
                }
            }
            Ok(x)
        } else {
            convert(x, &t, &SqlType::BigInt)
        }
    }

    /// Binds an ORDER BY item of a SELECT: a position, an output column name, a select
    /// item's expression, or any other expression (appended to the projection as a hidden
    /// column).
    fn bind_order_item(
        &mut self,
        e: &ast::Expr,
        columns: &[OutputColumn],
        items: &[ast::SelectItem],
        item_columns: &[Option<usize>],
        exprs: &mut Vec<Expr>,
    ) -> SqlResult<Expr> {
        if let ast::Expr::Literal(Literal::Integer(n)) = e {
            let i: usize = n.parse().unwrap_or(0);
            if i == 0 || i > columns.len() {
                return Err(msg::ORDER_BY_POSITION_INVALID.with(&[&n]));
            }
            return Ok(Expr::Column(i - 1));
        }
        if let ast::Expr::Column(name) = e {
            if name.0.len() == 1 {
                if let Some(i) = columns.iter().position(|c| c.name.eq_ignore_ascii_case(&name.0[0].value)) {
                    return Ok(Expr::Column(i));
                }
            }
        }
        for (item, col) in items.iter().zip(item_columns) {
            if let (ast::SelectItem::Expr { expr, .. }, Some(col)) = (item, col) {
                if expr == e {
                    return Ok(Expr::Column(*col));
                }
            }
        }
        let (x, _) = self.bind_expr(e)?;
        // A column of the FROM rows the select list already has (`SELECT DISTINCT d.a AS x
        // … ORDER BY a`) sorts by that output column.
        if let Expr::Column(k) = x {
            if let Some(i) = exprs.iter().position(|s| matches!(s, Expr::Column(c) if *c == k)) {
                return Ok(Expr::Column(i));
            }
        }
        exprs.push(x);
        Ok(Expr::Column(exprs.len() - 1))
    }
}

/// The name a select item gets when it has no alias.
fn implicit_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Column(n) => n.name().value.clone(),
        ast::Expr::Nested(inner) => implicit_name(inner),
        _ => String::new(),
    }
}
