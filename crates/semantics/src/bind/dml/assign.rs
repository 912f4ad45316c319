//! Variable assignment: `SELECT @a = …` and `SET @v = …`.

use crate::bind::Binder;
use crate::plan::Prepared;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast;

/// `SELECT @a = x, @b += y FROM …` and `SET @v = expr`.
pub fn compile_assign(b: &mut Binder, select: &ast::Select, order_by: &[ast::OrderItem]) -> SqlResult<Prepared> {
    let mut items = Vec::new();
    let mut targets = Vec::new();
    for item in &select.items {
        let ast::SelectItem::Assign { variable, op, value } = item else {
            return Err(msg::ASSIGNMENT_WITH_RETRIEVAL.err());
        };
        // While deducing undeclared parameters' types: one assigned to is an output
        // parameter of the type of its value, one assigned to a variable has the variable's.
        if b.undeclared(&ast::Expr::Variable(variable.clone())).is_some() {
            items.push(ast::SelectItem::Expr { expr: value.clone(), alias: None });
            targets.push(Err(variable));
            continue;
        }
        let (slot, vt) = b.variable_slot(variable)?;
        let value = match op {
            Some(op) => ast::Expr::Binary {
                op: *op,
                left: Box::new(ast::Expr::Variable(variable.clone())),
                right: Box::new(value.clone()),
            },
            None => match b.undeclared(value) {
                Some(p) => {
                    b.note_deduced(p, vt, false, None);
                    ast::Expr::Literal(ast::Literal::Null)
                }
                None => value.clone(),
            },
        };
        items.push(ast::SelectItem::Expr { expr: value, alias: None });
        targets.push(Ok((slot, vt)));
    }
    let query = ast::Query {
        with: Vec::new(),
        body: ast::SetExpr::Select(Box::new(ast::Select { items, into: None, ..select.clone() })),
        order_by: order_by.to_vec(),
        offset: None,
        fetch: None,
        hints: ast::QueryHints::default(),
        for_clause: None,
    };
    let bound = b.bind_query(&query)?;
    let targets = targets
        .into_iter()
        .zip(&bound.columns)
        .map(|(target, c)| match target {
            Ok((slot, vt)) => (slot, vt, c.ty),
            Err(output) => {
                // Deducing only: the plan is never run, the slot is a placeholder.
                b.note_deduced(output, c.ty, true, None);
                (0, c.ty, c.ty)
            }
        })
        .collect();
    Ok(Prepared::Assign { plan: bound.plan, targets })
}
