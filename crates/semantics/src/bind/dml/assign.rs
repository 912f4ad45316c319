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
        let (slot, vt) = b.variable_slot(variable)?;
        let value = match op {
            Some(op) => ast::Expr::Binary {
                op: *op,
                left: Box::new(ast::Expr::Variable(variable.clone())),
                right: Box::new(value.clone()),
            },
            None => value.clone(),
        };
        items.push(ast::SelectItem::Expr { expr: value, alias: None });
        targets.push((slot, vt));
    }
    let query = ast::Query {
        with: Vec::new(),
        body: ast::SetExpr::Select(Box::new(ast::Select { items, into: None, ..select.clone() })),
        order_by: order_by.to_vec(),
        offset: None,
        fetch: None,
        hints: ast::QueryHints::default(),
    };
    let bound = b.bind_query(&query)?;
    let targets = targets.into_iter().zip(&bound.columns).map(|((slot, vt), c)| (slot, vt, c.ty)).collect();
    Ok(Prepared::Assign { plan: bound.plan, targets })
}
