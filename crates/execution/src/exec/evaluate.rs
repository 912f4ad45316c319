//! Expression evaluation: a tree walk over one row, with three-valued logic and subqueries.

use super::cursor::open;
use std::sync::Arc;

use crate::runtime::ExecCtx;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_governance::grant::Collector;
use tessera_semantics::plan::{Expr, Row, Subquery, SubqueryKind};
use tessera_semantics::types::{self, Value};
use tessera_syntax::ast::{BinaryOp, UnaryOp};

fn truth(v: &Value) -> Option<bool> {
    match v {
        Value::Null => None,
        Value::Bit(b) => Some(*b),
        Value::Int(i) => Some(*i != 0),
        _ => Some(true),
    }
}

fn bit(b: Option<bool>) -> Value {
    b.map_or(Value::Null, Value::Bit)
}

fn compare_op(op: BinaryOp, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        BinaryOp::Eq => ord == Equal,
        BinaryOp::NotEq => ord != Equal,
        BinaryOp::Lt | BinaryOp::NotGt if op == BinaryOp::Lt => ord == Less,
        BinaryOp::NotGt => ord != Greater,
        BinaryOp::LtEq => ord != Greater,
        BinaryOp::Gt => ord == Greater,
        BinaryOp::GtEq | BinaryOp::NotLt => ord != Less,
        _ => false,
    }
}

/// An operator's operand: a large value read whole (see `tessera_semantics::types::large`;
/// functions, casts, CASE and COALESCE take them as they are).
fn operand(e: &Expr, row: &[Value], ctx: &mut ExecCtx) -> SqlResult<Value> {
    eval(e, row, ctx)?.materialized()
}

/// Evaluates a predicate: true only when the expression is true (not NULL).
pub fn is_true(e: &Expr, row: &[Value], ctx: &mut ExecCtx) -> SqlResult<bool> {
    Ok(truth(&eval(e, row, ctx)?) == Some(true))
}

pub fn eval(e: &Expr, row: &[Value], ctx: &mut ExecCtx) -> SqlResult<Value> {
    Ok(match e {
        Expr::Const(v) => v.clone(),
        Expr::Column(i) => row[*i].clone(),
        Expr::NextValue { db, sequence } => {
            // One value per sequence per row (see `ExecCtx::row_sequence_values`).
            let db: Arc<str> = Arc::from(ctx.db_name(db).as_str());
            let key = (db, sequence.id);
            match ctx.row_sequence_values.iter().find(|(k, _)| *k == key) {
                Some((_, v)) => v.clone(),
                None => {
                    let v = crate::sequences::next_value(ctx, &key.0, sequence)?;
                    ctx.row_sequence_values.push((key, v.clone()));
                    v
                }
            }
        }
        Expr::OuterRef { depth, index } => {
            let n = ctx.outer.len();
            ctx.outer[n - 1 - depth][*index].clone()
        }
        Expr::Var(slot) => ctx.var(*slot).clone(),
        Expr::Cast { expr, from, to, style, try_, .. } => {
            let v = eval(expr, row, ctx)?;
            match types::cast(&v, from, to, *style) {
                Ok(v) => v,
                Err(_) if *try_ => Value::Null,
                Err(e) => return Err(e),
            }
        }
        Expr::Unary { op, expr, ty } => {
            let v = operand(expr, row, ctx)?;
            match op {
                UnaryOp::Plus => v,
                UnaryOp::Minus => types::negate(&v, ty)?,
                UnaryOp::BitNot => types::bit_not(&v, ty)?,
                UnaryOp::Not => bit(truth(&v).map(|b| !b)),
            }
        }
        Expr::Arith { op, left, right, ty } => {
            let l = operand(left, row, ctx)?;
            let r = operand(right, row, ctx)?;
            types::binary_op(*op, &l, &r, ty)?
        }
        Expr::Compare { op, left, right } => {
            let l = operand(left, row, ctx)?;
            let r = operand(right, row, ctx)?;
            bit(types::compare(&l, &r).map(|o| compare_op(*op, o)))
        }
        Expr::And(a, b) => {
            let l = truth(&eval(a, row, ctx)?);
            if l == Some(false) {
                return Ok(Value::Bit(false));
            }
            let r = truth(&eval(b, row, ctx)?);
            bit(match (l, r) {
                (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            })
        }
        Expr::Or(a, b) => {
            let l = truth(&eval(a, row, ctx)?);
            if l == Some(true) {
                return Ok(Value::Bit(true));
            }
            let r = truth(&eval(b, row, ctx)?);
            bit(match (l, r) {
                (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            })
        }
        Expr::Not(a) => bit(truth(&eval(a, row, ctx)?).map(|b| !b)),
        Expr::IsNull { expr, negated } => Value::Bit(eval(expr, row, ctx)?.is_null() != *negated),
        Expr::Like { expr, pattern, escape, negated } => {
            let v = eval(expr, row, ctx)?;
            let p = operand(pattern, row, ctx)?;
            if let (Value::Large(l), Value::Str(p), None) = (&v, &p, escape) {
                if let Some(matched) = types::functions::like_in_place(l, p)? {
                    return Ok(Value::Bit(matched != *negated));
                }
            }
            let v = v.materialized()?;
            let esc = match escape {
                Some(e) => match operand(e, row, ctx)? {
                    Value::Null => return Ok(Value::Null),
                    Value::Str(s) => s.chars().next(),
                    _ => None,
                },
                None => None,
            };
            match (v, p) {
                (Value::Str(s), Value::Str(p)) => Value::Bit(types::like(&s, &p, esc) != *negated),
                _ => Value::Null,
            }
        }
        Expr::InList { expr, list, negated } => {
            let v = operand(expr, row, ctx)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            let mut saw_null = false;
            for item in list {
                let x = operand(item, row, ctx)?;
                match types::compare(&v, &x) {
                    Some(std::cmp::Ordering::Equal) => return Ok(Value::Bit(!*negated)),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Bit(*negated)
            }
        }
        Expr::Case { branches, otherwise } => {
            for (cond, then) in branches {
                if is_true(cond, row, ctx)? {
                    return eval(then, row, ctx);
                }
            }
            match otherwise {
                Some(e) => eval(e, row, ctx)?,
                None => Value::Null,
            }
        }
        Expr::Coalesce(args) => {
            for a in args {
                let v = eval(a, row, ctx)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Value::Null
        }
        Expr::Func { name, args, arg_types, ty } => {
            let mut vals = Arguments::new();
            eval_arguments(args, row, ctx, &mut vals)?;
            types::call_function(name, &vals, arg_types, ty, &mut ctx.session.functions)?
        }
        Expr::Session { func, args } => {
            let mut vals = Arguments::new();
            eval_arguments(args, row, ctx, &mut vals)?;
            for v in vals.iter_mut() {
                if let Value::Large(l) = v {
                    *v = l.value()?;
                }
            }
            crate::functions::session_function(ctx, func, &vals)?
        }
        Expr::Subquery(sq) => eval_subquery(sq, row, ctx)?,
        Expr::UserFunction { call, args } => {
            let vals = eval_all(args, row, ctx)?;
            (ctx.shared.functions.scalar)(ctx, call, vals)?
        }
    })
}

/// An uncorrelated subquery's rows, read once per statement, and only as many as its
/// kind can use (EXISTS one, a scalar subquery two).
fn uncorrelated_rows(sq: &Subquery, ctx: &mut ExecCtx) -> SqlResult<Arc<Vec<Row>>> {
    let key = Arc::as_ptr(&sq.plan) as usize;
    if let Some(rows) = ctx.subquery_cache.get(&key) {
        return Ok(rows.clone());
    }
    let wanted = match sq.kind {
        SubqueryKind::Exists { .. } => 1,
        SubqueryKind::Scalar => 2,
        SubqueryKind::In { .. } | SubqueryKind::Quantified { .. } => usize::MAX,
    };
    let mut cursor = open(&sq.plan, &[], ctx)?;
    let mut rows = Collector::new(&ctx.grant());
    while rows.rows.len() < wanted {
        match cursor.next(ctx)? {
            Some(r) => rows.push(r)?,
            None => break,
        }
    }
    let rows = Arc::new(rows.into_parts().0);
    ctx.subquery_cache.insert(key, rows.clone());
    Ok(rows)
}

fn eval_subquery(sq: &Subquery, row: &[Value], ctx: &mut ExecCtx) -> SqlResult<Value> {
    // The tested value is computed in the outer row before the subquery runs.
    let probe = match &sq.kind {
        SubqueryKind::In { expr, .. } | SubqueryKind::Quantified { expr, .. } => Some(eval(expr, row, ctx)?),
        _ => None,
    };
    let key = Arc::as_ptr(&sq.plan) as usize;
    let probing = matches!(sq.kind, SubqueryKind::In { .. } | SubqueryKind::Quantified { .. });
    let first_probe = probing && !ctx.subquery_cache.contains_key(&key) && ctx.subqueries_streamed.insert(key);
    if !sq.correlated && !first_probe {
        let rows = uncorrelated_rows(sq, ctx)?;
        let mut rows = rows.iter();
        return decide(&sq.kind, probe, || Ok(rows.next()));
    }
    // A correlated subquery, or the first probe of an uncorrelated IN/ANY/ALL, streams
    // and stops once its answer is known.
    ctx.outer.push(row.to_vec());
    let result = open(&sq.plan, &[], ctx).and_then(|mut rows| decide(&sq.kind, probe, || rows.next(ctx)));
    ctx.outer.pop();
    result
}

/// A subquery's value from its rows, reading no more of them than it needs.
fn decide<R: AsRef<[Value]>>(
    kind: &SubqueryKind,
    probe: Option<Value>,
    mut next: impl FnMut() -> SqlResult<Option<R>>,
) -> SqlResult<Value> {
    Ok(match kind {
        SubqueryKind::Scalar => match (next()?, next()?) {
            (None, _) => Value::Null,
            (Some(r), None) => r.as_ref()[0].clone(),
            (Some(_), Some(_)) => return Err(msg::SUBQUERY_MULTIPLE_ROWS.err()),
        },
        SubqueryKind::Exists { negated } => Value::Bit(next()?.is_none() == *negated),
        SubqueryKind::In { negated, .. } => {
            let v = probe.expect("probe computed");
            if v.is_null() {
                return Ok(if next()?.is_none() { Value::Bit(*negated) } else { Value::Null });
            }
            let mut saw_null = false;
            while let Some(r) = next()? {
                match types::compare(&v, &r.as_ref()[0]) {
                    Some(std::cmp::Ordering::Equal) => return Ok(Value::Bit(!*negated)),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Bit(*negated)
            }
        }
        SubqueryKind::Quantified { op, all, .. } => {
            let v = probe.expect("probe computed");
            let mut result = Some(*all);
            while let Some(r) = next()? {
                let t = types::compare(&v, &r.as_ref()[0]).map(|o| compare_op(*op, o));
                match (all, t) {
                    (true, Some(false)) => return Ok(Value::Bit(false)),
                    (false, Some(true)) => return Ok(Value::Bit(true)),
                    (_, None) => result = None,
                    _ => {}
                }
            }
            bit(result)
        }
    })
}

/// A function call's arguments, on the stack when there are a few (most calls).
type Arguments = smallvec::SmallVec<[Value; 4]>;

/// Evaluates a call's arguments into `vals` (the caller's: returned, they would be copied
/// once more on every call).
fn eval_arguments(args: &[Expr], row: &[Value], ctx: &mut ExecCtx, vals: &mut Arguments) -> SqlResult<()> {
    vals.reserve(args.len());
    for a in args {
        vals.push(eval(a, row, ctx)?);
    }
    Ok(())
}

pub(super) fn eval_all(exprs: &[Expr], row: &[Value], ctx: &mut ExecCtx) -> SqlResult<Row> {
    // A new row: NEXT VALUE FOR gives its sequences' next values again.
    ctx.row_sequence_values.clear();
    let mut out = Vec::with_capacity(exprs.len());
    for e in exprs {
        out.push(eval(e, row, ctx)?);
    }
    Ok(out)
}
