//! PIVOT and UNPIVOT, bound as the derived tables they stand for once the source's
//! columns are known:
//!
//! - `source PIVOT (agg(v) FOR c IN ([x], [y])) AS p` is `(SELECT <the source's other
//!   columns>, agg(CASE WHEN c = N'x' THEN v END) AS [x], … FROM source GROUP BY <the
//!   other columns>) AS p`;
//! - `source UNPIVOT (v FOR n IN ([x], [y])) AS u` is `(SELECT <the other columns>,
//!   CAST(N'x' AS nvarchar(128)) AS n, x AS v FROM source WHERE x IS NOT NULL UNION ALL …)
//!   AS u`.

use super::names::Scope;
use super::Binder;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast::{self, Expr, Ident, ObjectName, SelectItem, SetExpr, TableRef};

fn column(name: &str) -> Expr {
    Expr::Column(ObjectName(vec![Ident { value: name.to_string(), quoted: true }]))
}

fn text(value: &str) -> Expr {
    Expr::Literal(ast::Literal::String { value: value.to_string(), unicode: true })
}

fn select(items: Vec<SelectItem>, source: &TableRef, selection: Option<Expr>, group_by: Vec<Expr>) -> SetExpr {
    SetExpr::Select(Box::new(ast::Select {
        distinct: false,
        top: None,
        items,
        into: None,
        from: vec![source.clone()],
        selection,
        group_by,
        grouping_sets: None,
        having: None,
    }))
}

fn query(body: SetExpr) -> ast::Query {
    ast::Query {
        with: vec![],
        body,
        order_by: vec![],
        offset: None,
        fetch: None,
        hints: ast::QueryHints::default(),
        for_clause: None,
    }
}

impl Binder<'_> {
    /// The names of a table source's columns.
    fn source_columns(&mut self, source: &TableRef) -> SqlResult<Vec<String>> {
        self.scopes.push(Scope::default());
        let bound = self.bind_from_where(std::slice::from_ref(source), None, None);
        self.scopes.pop();
        Ok(bound?.1.columns.into_iter().map(|c| c.name).collect())
    }

    /// The derived table a PIVOT or UNPIVOT stands for.
    pub(super) fn pivot_table(&mut self, t: &TableRef) -> SqlResult<TableRef> {
        match t {
            TableRef::Pivot { source, aggregate, column: pivoted, values, alias } => {
                let Expr::Function { name, args, .. } = &**aggregate else {
                    return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"FOR"]));
                };
                let Some(Expr::Column(value)) = args.first() else {
                    return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"FOR"]));
                };
                let value = value.name().value.clone();
                let columns = self.source_columns(source)?;
                for wanted in [&value, &pivoted.value] {
                    if !columns.iter().any(|c| c.eq_ignore_ascii_case(wanted)) {
                        return Err(msg::INVALID_COLUMN_NAME.with(&[wanted]));
                    }
                }
                let grouped: Vec<&String> = columns
                    .iter()
                    .filter(|c| !c.eq_ignore_ascii_case(&value) && !c.eq_ignore_ascii_case(&pivoted.value))
                    .collect();
                let mut items: Vec<SelectItem> =
                    grouped.iter().map(|c| SelectItem::Expr { expr: column(c), alias: None }).collect();
                for v in values {
                    let when = Expr::Binary {
                        op: ast::BinaryOp::Eq,
                        left: Box::new(column(&pivoted.value)),
                        right: Box::new(text(&v.value)),
                    };
                    let case = Expr::Case { operand: None, branches: vec![(when, column(&value))], otherwise: None };
                    let call = Expr::Function {
                        name: name.clone(),
                        args: vec![case],
                        distinct: false,
                        star: false,
                        over: None,
                        within_group: vec![],
                    };
                    items.push(SelectItem::Expr { expr: call, alias: Some(v.clone()) });
                }
                let group_by = grouped.iter().map(|c| column(c)).collect();
                let body = select(items, source, None, group_by);
                Ok(TableRef::Derived { query: Box::new(query(body)), alias: alias.clone(), columns: vec![] })
            }
            TableRef::Unpivot { source, value, name, columns: unpivoted, alias } => {
                let columns = self.source_columns(source)?;
                for c in unpivoted {
                    if !columns.iter().any(|s| s.eq_ignore_ascii_case(&c.value)) {
                        return Err(msg::INVALID_COLUMN_NAME.with(&[&c.value]));
                    }
                }
                let kept: Vec<&String> =
                    columns.iter().filter(|c| !unpivoted.iter().any(|u| u.value.eq_ignore_ascii_case(c))).collect();
                let sysname = ast::TypeName { name: "nvarchar".into(), args: vec![ast::TypeArg::Number(128)] };
                let mut body: Option<SetExpr> = None;
                for c in unpivoted {
                    let mut items: Vec<SelectItem> =
                        kept.iter().map(|k| SelectItem::Expr { expr: column(k), alias: None }).collect();
                    let label = Expr::Cast { expr: Box::new(text(&c.value)), ty: sysname.clone(), try_: false };
                    items.push(SelectItem::Expr { expr: label, alias: Some(name.clone()) });
                    items.push(SelectItem::Expr { expr: column(&c.value), alias: Some(value.clone()) });
                    let present = Expr::IsNull { expr: Box::new(column(&c.value)), negated: true };
                    let part = select(items, source, Some(present), vec![]);
                    body = Some(match body {
                        None => part,
                        Some(left) => SetExpr::SetOperation {
                            op: ast::SetOperator::Union,
                            all: true,
                            left: Box::new(left),
                            right: Box::new(part),
                        },
                    });
                }
                let body = body.ok_or_else(|| msg::SYNTAX_ERROR_NEAR.with(&[&")"]))?;
                Ok(TableRef::Derived { query: Box::new(query(body)), alias: alias.clone(), columns: vec![] })
            }
            other => Ok(other.clone()),
        }
    }
}
