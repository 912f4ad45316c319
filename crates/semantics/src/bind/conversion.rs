//! Literal types and implicit conversions: constants converted when bound, casts where values
//! change representation, the common type of several operands.

use crate::plan::{BoundQuery, Expr, Plan};
use crate::types::{self, SqlType, Value};
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast::{self, Literal};

/// Whether values of `from` must be converted to be handled as `to` (values of the
/// string, binary and integer families share one representation).
fn needs_cast(from: &SqlType, to: &SqlType) -> bool {
    use SqlType::*;
    let int = |t: &SqlType| matches!(t, TinyInt | SmallInt | Int | BigInt);
    let string = |t: &SqlType| matches!(t, Char(_) | VarChar(_) | NChar(_) | NVarChar(_));
    let binary = |t: &SqlType| matches!(t, Binary(_) | VarBinary(_));
    !(from == to || (int(from) && int(to)) || (string(from) && string(to)) || (binary(from) && binary(to)))
}

pub fn cast_to(e: Expr, from: &SqlType, to: &SqlType) -> Expr {
    if let Expr::Const(Value::Null) = e {
        return e;
    }
    if !needs_cast(from, to) {
        return e;
    }
    Expr::Cast { expr: Box::new(e), from: *from, to: *to, style: None, try_: false, implicit: true }
}

/// Converts a bound expression to `to` now if it is constant (so literals in plans are
/// already of the column type), else wraps it in a cast.
pub fn convert(e: Expr, from: &SqlType, to: &SqlType) -> SqlResult<Expr> {
    match e {
        Expr::Const(v) if needs_cast(from, to) || matches!(to, SqlType::Char(_) | SqlType::NChar(_)) => {
            // A constant that cannot be converted fails when the statement runs, as in
            // SQL Server, not when it is compiled.
            Ok(match types::cast(&v, from, to, None) {
                Ok(c) => Expr::Const(c),
                Err(_) => cast_to(Expr::Const(v), from, to),
            })
        }
        e => Ok(cast_to(e, from, to)),
    }
}

/// The type of an integer literal: int if it fits, else numeric(p, 0).
pub(super) fn integer_literal(text: &str) -> SqlResult<(Value, SqlType)> {
    if let Ok(v) = text.parse::<i32>() {
        return Ok((Value::Int(i64::from(v)), SqlType::Int));
    }
    decimal_literal(text)
}

pub(super) fn decimal_literal(text: &str) -> SqlResult<(Value, SqlType)> {
    let (int_part, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits: String = format!("{int_part}{frac}");
    let significant = digits.trim_start_matches('0').len().max(1);
    let scale = frac.len();
    let precision = significant.max(scale).max(1);
    if precision > 38 {
        return Err(msg::NUMERIC_LITERAL_OUT_OF_RANGE.with(&[&text]));
    }
    let value: i128 = digits.parse().map_err(|_| msg::SYNTAX_ERROR_NEAR.with(&[&text]))?;
    Ok((
        Value::Decimal { value, scale: scale as u8 },
        SqlType::Decimal { precision: precision as u8, scale: scale as u8 },
    ))
}

pub fn literal(l: &Literal) -> SqlResult<(Value, SqlType)> {
    Ok(match l {
        Literal::Integer(t) => integer_literal(t)?,
        Literal::Decimal(t) => decimal_literal(t)?,
        Literal::Float(t) => (Value::Float(t.parse().map_err(|_| msg::SYNTAX_ERROR_NEAR.with(&[&t]))?), SqlType::Float),
        Literal::Money(t) => {
            let (v, ty) = decimal_literal(t)?;
            (types::cast(&v, &ty, &SqlType::Money, None)?, SqlType::Money)
        }
        Literal::String { value, unicode } => {
            let n = value.chars().count().max(1);
            let ty = if *unicode {
                SqlType::NVarChar(n.min(4000) as u16)
            } else {
                SqlType::VarChar(value.len().clamp(1, 8000) as u16)
            };
            let ty = if n > 8000 || (*unicode && n > 4000) {
                if *unicode {
                    SqlType::NVarChar(tessera_types::MAX)
                } else {
                    SqlType::VarChar(tessera_types::MAX)
                }
            } else {
                ty
            };
            (Value::str(value), ty)
        }
        Literal::Binary(b) => {
            let n = b.len();
            let ty =
                if n > 8000 { SqlType::VarBinary(tessera_types::MAX) } else { SqlType::VarBinary(n.max(1) as u16) };
            (Value::Binary(Arc::from(&b[..])), ty)
        }
        Literal::Null => (Value::Null, SqlType::Int),
    })
}

/// An integer literal next to a decimal operand takes the smallest numeric type that
/// holds it, as SQL Server types constants (`10.0 / 3` is numeric(8,6), not (14,12)); a
/// constant of another origin (`CAST(3 AS int)`) keeps its type, numeric(10,0) there.
pub(super) fn narrow_int_literal(e: Expr, t: SqlType, other: &SqlType, written: &ast::Expr) -> (Expr, SqlType) {
    let literal = match written {
        ast::Expr::Literal(ast::Literal::Integer(_)) => true,
        ast::Expr::Unary { op: ast::UnaryOp::Minus | ast::UnaryOp::Plus, expr } => {
            matches!(**expr, ast::Expr::Literal(ast::Literal::Integer(_)))
        }
        _ => false,
    };
    match (&e, t, other) {
        (Expr::Const(Value::Int(v)), SqlType::Int, SqlType::Decimal { .. }) if literal => {
            let digits = v.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1) as u8;
            (
                Expr::Const(Value::Decimal { value: i128::from(*v), scale: 0 }),
                SqlType::Decimal { precision: digits, scale: 0 },
            )
        }
        _ => (e, t),
    }
}

/// The type both sides of a CASE/COALESCE/VALUES column convert to (NULL literals don't
/// count).
pub(super) fn unify<'x>(items: impl Iterator<Item = &'x (Expr, SqlType)>) -> SqlResult<SqlType> {
    let mut ty: Option<SqlType> = None;
    let mut fallback = SqlType::Int;
    for (e, t) in items {
        fallback = *t;
        if is_null_literal(e) {
            continue;
        }
        ty = Some(match ty {
            None => *t,
            Some(acc) => types::common_type(&acc, t)?,
        });
    }
    Ok(ty.unwrap_or(fallback))
}

/// Wraps a query's plan so that its single column has type `t`.
pub(super) fn project_cast(q: BoundQuery, t: &SqlType) -> SqlResult<Plan> {
    project_to(q, std::slice::from_ref(t))
}

pub(super) fn project_to(q: BoundQuery, to: &[SqlType]) -> SqlResult<Plan> {
    if q.columns.iter().zip(to).all(|(c, t)| !needs_cast(&c.ty, t)) {
        return Ok(q.plan);
    }
    let exprs = q.columns.iter().zip(to).enumerate().map(|(i, (c, t))| cast_to(Expr::Column(i), &c.ty, t)).collect();
    Ok(Plan::Project { input: Box::new(q.plan), exprs })
}

/// The NULL literal (typed as the other operand where SQL Server types it so).
pub(super) fn is_null_literal(e: &Expr) -> bool {
    matches!(e, Expr::Const(Value::Null))
}
