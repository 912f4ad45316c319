//! OUTPUT clauses: `deleted.*` / `inserted.*` and expressions over both rows (`OUTPUT …
//! INTO`, an INSERT, is bound with INSERT).

use crate::bind::{Binder, Scope};
use crate::catalog::Table;
use crate::output::OutputColumn;
use crate::plan::{Expr, OutputPlan};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast;

/// The rows an OUTPUT clause returns, without its INTO target, over `scope`: the deleted
/// and inserted rows of `table` (`Binder::output_scope`), and what else the statement
/// offers (a MERGE's source and `$action`).
pub(super) fn bind_output_rows(
    b: &mut Binder,
    table: &Table,
    out: &ast::Output,
    scope: Scope,
) -> SqlResult<OutputPlan> {
    b.with_bound_scope(scope, |b| {
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
                        _ => return Err(msg::MULTIPART_ID_NOT_BOUND.with(&[&(q.name().value)])),
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
                _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"*"])),
            }
        }
        Ok(OutputPlan { exprs, columns, into: None })
    })
}
