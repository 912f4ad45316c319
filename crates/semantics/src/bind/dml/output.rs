//! OUTPUT clauses: `deleted.*` / `inserted.*` and expressions over both rows, and
//! `OUTPUT … INTO`.

use super::insert::compile_insert;
use crate::bind::Binder;
use crate::catalog::Table;
use crate::output::OutputColumn;
use crate::plan::Expr;
use crate::plan::OutputPlan;
use tessera_errors::SqlError;
use tessera_errors::SqlResult;
use tessera_syntax::ast;
pub(super) fn bind_output(
    b: &mut Binder,
    table: &Table,
    output: Option<&ast::Output>,
) -> SqlResult<Option<OutputPlan>> {
    let Some(out) = output else { return Ok(None) };
    let mut plan = b.with_output_scope(table, |b| {
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        let n = table.columns.len();
        for item in &out.items {
            match item {
                ast::SelectItem::QualifiedWildcard(q) => {
                    let which = q.name().value.to_lowercase();
                    let base = match which.as_str() {
                        "deleted" => 0,
                        "inserted" => n,
                        _ => {
                            return Err(SqlError::new(
                                4104,
                                format!("The multi-part identifier \"{}\" could not be bound.", q.name().value),
                            ))
                        }
                    };
                    for (i, c) in table.columns.iter().enumerate() {
                        exprs.push(Expr::Column(base + i));
                        columns.push(OutputColumn { name: c.name.clone(), ty: c.ty, nullable: true });
                    }
                }
                ast::SelectItem::Expr { expr, alias } => {
                    let (e, t) = b.bind_expr(expr)?;
                    let name = alias.as_ref().map(|a| a.value.clone()).unwrap_or_else(|| match expr {
                        ast::Expr::Column(c) => c.name().value.clone(),
                        _ => String::new(),
                    });
                    exprs.push(e);
                    columns.push(OutputColumn { name, ty: t, nullable: true });
                }
                _ => return Err(SqlError::new(102, "Incorrect syntax near '*'.").with_severity(15)),
            }
        }
        Ok(OutputPlan { exprs, columns, into: None })
    })?;
    if let Some((target, cols)) = &out.into {
        let insert = ast::Insert {
            top: None,
            table: target.clone(),
            columns: cols.clone(),
            output: None,
            source: ast::InsertSource::Values(Vec::new()),
        };
        let mut into = compile_insert(b, &insert)?;
        if into.columns.len() != plan.columns.len() {
            return Err(SqlError::new(
                213,
                "Column name or number of supplied values does not match table definition.",
            ));
        }
        into.source_types = plan.columns.iter().map(|c| c.ty).collect();
        plan.into = Some(Box::new(into));
    }
    Ok(Some(plan))
}
