//! Common table expressions: a statement's WITH list, and recursive CTEs (anchor and
//! recursive members over a work table).

use super::query::{check_column_list, check_derived_columns, check_nested_order_by, combine_set_operands};
use super::Binder;
use crate::output::OutputColumn;
use crate::plan::{BoundQuery, Plan};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast;

/// The recursion limit of recursive CTEs when the statement gives no MAXRECURSION.
pub(super) const DEFAULT_MAX_RECURSION: u16 = 100;

impl<'a> Binder<'a> {
    /// Makes a statement's CTEs visible to what is bound next (recursive ones limited by
    /// the hints' MAXRECURSION when given, else by the statement's limit); the hints' join
    /// hint, when given, applies to every join bound from now on.
    pub fn bind_ctes(&mut self, with: &[ast::Cte], hints: &ast::QueryHints) -> SqlResult<()> {
        if let Some(limit) = hints.max_recursion {
            self.max_recursion = limit;
        }
        if hints.join.is_some() {
            self.join_hint = hints.join;
        }
        for cte in with {
            check_nested_order_by(&cte.query)?;
            let bound = match self.bind_recursive_cte(cte)? {
                Some(bound) => bound,
                None => {
                    let mut bound = self.bind_query(&cte.query)?;
                    name_cte_columns(&mut bound.columns, cte)?;
                    bound
                }
            };
            check_derived_columns(&bound.columns, &cte.name.value)?;
            if with
                .iter()
                .take_while(|c| !std::ptr::eq(*c, cte))
                .any(|c| c.name.value.eq_ignore_ascii_case(&cte.name.value))
            {
                return Err(msg::DUPLICATE_CTE_NAME.with(&[&cte.name.value]));
            }
            self.ctes.push((cte.name.value.to_lowercase(), bound));
        }
        Ok(())
    }

    /// A CTE whose UNION ALL chain has members that reference the CTE itself: anchor
    /// members (those before the first self-reference) run once, then the recursive
    /// members run on the rows of the previous round (the work table) until a round
    /// yields nothing. `None` when the CTE is not recursive.
    fn bind_recursive_cte(&mut self, cte: &ast::Cte) -> SqlResult<Option<BoundQuery>> {
        let q = &cte.query;
        if !q.with.is_empty() || !q.order_by.is_empty() || q.offset.is_some() {
            return Ok(None);
        }
        let mut members = Vec::new();
        flatten_set_chain(&q.body, None, &mut members);
        if members.len() < 2 {
            return Ok(None);
        }
        let name = &cte.name.value;
        let mut anchor = self.bind_set_expr(members[0].1)?;
        name_cte_columns(&mut anchor.columns, cte)?;
        let id = self.next_work_table;
        self.next_work_table += 1;
        let columns = anchor.columns.clone();
        self.ctes.push((name.to_lowercase(), BoundQuery { plan: Plan::WorkTable { id }, columns }));
        let members_bound = self.bind_cte_members(name, &members[1..], anchor, id);
        self.ctes.pop();
        let (anchor, recursive, nullable) = members_bound?;
        let Some(recursive) = recursive else {
            return Ok(None);
        };
        let mut columns = anchor.columns;
        for (c, n) in columns.iter_mut().zip(nullable) {
            c.nullable = n;
        }
        Ok(Some(BoundQuery {
            plan: Plan::RecursiveCte {
                id,
                anchor: Box::new(anchor.plan),
                recursive: Box::new(recursive),
                max_recursion: self.max_recursion,
            },
            columns,
        }))
    }

    /// Binds the members after a recursive CTE's first: further anchors (combined with
    /// the anchor, the work table's columns updated), then recursive members (UNION ALL'd).
    /// Returns the anchor, the recursive part if any, and each column's nullability.
    fn bind_cte_members(
        &mut self,
        name: &str,
        members: &[(Option<(ast::SetOperator, bool)>, &ast::SetExpr)],
        mut anchor: BoundQuery,
        id: usize,
    ) -> SqlResult<(BoundQuery, Option<Plan>, Vec<bool>)> {
        let mut recursive: Option<Plan> = None;
        let mut nullable: Vec<bool> = anchor.columns.iter().map(|c| c.nullable).collect();
        for &(connector, member) in members {
            let before = self.work_table_uses;
            let bound = self.bind_set_expr(member)?;
            let uses = self.work_table_uses - before;
            let (op, all) = connector.expect("members after the first have a connector");
            if uses == 0 && recursive.is_none() {
                let names: Vec<String> = anchor.columns.iter().map(|c| c.name.clone()).collect();
                anchor = combine_set_operands(op, all, anchor, bound)?;
                for (c, n) in anchor.columns.iter_mut().zip(names) {
                    c.name = n;
                }
                nullable = anchor.columns.iter().map(|c| c.nullable).collect();
                let columns = anchor.columns.clone();
                self.ctes.last_mut().expect("the work table").1 = BoundQuery { plan: Plan::WorkTable { id }, columns };
                continue;
            }
            check_recursive_member(name, &anchor.columns, &bound, op, all, uses)?;
            for (n, c) in nullable.iter_mut().zip(&bound.columns) {
                *n |= c.nullable;
            }
            recursive = Some(match recursive.take() {
                None => bound.plan,
                Some(previous) => Plan::SetOp {
                    op: ast::SetOperator::Union,
                    all: true,
                    left: Box::new(previous),
                    right: Box::new(bound.plan),
                },
            });
        }
        Ok((anchor, recursive, nullable))
    }
}

/// Names a CTE's columns from its column list (errors 8158/8159 when the counts differ).
fn name_cte_columns(columns: &mut [OutputColumn], cte: &ast::Cte) -> SqlResult<()> {
    if !cte.columns.is_empty() {
        check_column_list(columns.len(), cte.columns.len(), &cte.name.value)?;
        for (c, n) in columns.iter_mut().zip(&cte.columns) {
            c.name = n.value.clone();
        }
    }
    Ok(())
}

/// The members of a chain of UNION/EXCEPT operations, left to right, each with the
/// operator that joins it to the members before it.
fn flatten_set_chain<'q>(
    body: &'q ast::SetExpr,
    connector: Option<(ast::SetOperator, bool)>,
    out: &mut Vec<(Option<(ast::SetOperator, bool)>, &'q ast::SetExpr)>,
) {
    match body {
        ast::SetExpr::SetOperation { op, all, left, right } if *op != ast::SetOperator::Intersect => {
            flatten_set_chain(left, connector, out);
            out.push((Some((*op, *all)), right));
        }
        _ => out.push((connector, body)),
    }
}

/// SQL Server's rules for a recursive member: joined by UNION ALL (252), one reference to
/// the CTE (253), the anchor's column count (205) and exactly its column types (240).
fn check_recursive_member(
    name: &str,
    anchor: &[OutputColumn],
    member: &BoundQuery,
    op: ast::SetOperator,
    all: bool,
    uses: usize,
) -> SqlResult<()> {
    if uses == 0 || op != ast::SetOperator::Union || !all {
        return Err(msg::RECURSIVE_CTE_NO_UNION_ALL.with(&[&name]));
    }
    if uses > 1 {
        return Err(msg::RECURSIVE_CTE_MULTIPLE_REFERENCES.with(&[&name]));
    }
    if member.columns.len() != anchor.len() {
        return Err(msg::UNION_COLUMN_COUNT_MISMATCH.err());
    }
    for (a, m) in anchor.iter().zip(&member.columns) {
        if a.ty != m.ty {
            return Err(msg::RECURSIVE_CTE_TYPE_MISMATCH.with(&[&a.name, &name]));
        }
    }
    Ok(())
}
