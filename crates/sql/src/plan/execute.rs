//! Running a plan: the dispatch over `Plan`'s operators, recursive CTE rounds, and the
//! row counts of TOP, OFFSET and FETCH.

use std::collections::{HashMap, HashSet};

use super::evaluate::eval_all;
use super::locked_read::{locked_top_input, run_locked_top};
use super::operators::{aggregate, nested_loop, row_number, set_operation, sort_rows};
use super::scan::run_scan;
use super::{eval, group_key, is_true, Collector, Plan, Row};
use crate::runtime::ExecCtx;
use crate::types::{self, Value};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::JoinKind;

/// The rounds of a recursive CTE, accumulated (see `Plan::RecursiveCte`).
fn run_recursive(
    id: usize,
    anchor_rows: Vec<Row>,
    recursive: &Plan,
    max_recursion: u16,
    corr: &[Value],
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    let mut out = Collector::new();
    let mut round = anchor_rows;
    let mut depth = 0u16;
    while !round.is_empty() {
        for r in &round {
            out.push(r.clone())?;
        }
        ctx.work_tables.insert(id, round);
        let next = run(recursive, corr, ctx)?;
        if !next.is_empty() {
            if max_recursion != 0 && depth >= max_recursion {
                return Err(SqlError::new(
                    530,
                    format!(
                        "The statement terminated. The maximum recursion {max_recursion} has been exhausted before statement completion."
                    ),
                ));
            }
            depth += 1;
        }
        round = next;
    }
    Ok(out.rows)
}

/// Runs a plan. `corr` is the correlation row handed down by an enclosing [`Plan::Apply`]
/// (empty at the top).
pub fn run(plan: &Plan, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    ctx.check_cancel()?;
    match plan {
        Plan::Values(rows) => {
            let mut out = Collector::new();
            for r in rows {
                out.push(eval_all(r, corr, ctx)?)?;
            }
            Ok(out.rows)
        }
        Plan::Scan(node) => run_scan(node, corr, ctx),
        Plan::RecursiveCte { id, anchor, recursive, max_recursion } => {
            let anchor_rows = run(anchor, corr, ctx)?;
            let outer_round = ctx.work_tables.remove(id);
            let result = run_recursive(*id, anchor_rows, recursive, *max_recursion, corr, ctx);
            match outer_round {
                Some(rows) => ctx.work_tables.insert(*id, rows),
                None => ctx.work_tables.remove(id),
            };
            result
        }
        Plan::WorkTable { id } => Ok(ctx.work_tables.get(id).cloned().unwrap_or_default()),
        Plan::System { view, db } => crate::sysviews::rows(*view, db, ctx),
        Plan::Filter { input, predicate } => {
            let rows = run(input, corr, ctx)?;
            let mut out = Vec::new();
            for r in rows {
                if is_true(predicate, &r, ctx)? {
                    out.push(r);
                }
            }
            Ok(out)
        }
        Plan::Project { input, exprs } => {
            let rows = run(input, corr, ctx)?;
            let mut out = Collector::new();
            for r in rows {
                out.push(eval_all(exprs, &r, ctx)?)?;
            }
            Ok(out.rows)
        }
        Plan::NestedLoop { left, right, kind, on, left_width, right_width } => {
            let l = run(left, corr, ctx)?;
            let r = run(right, corr, ctx)?;
            nested_loop(l, &r, *kind, on.as_ref(), *left_width, *right_width, ctx)
        }
        Plan::HashJoin { left, right, kind, left_keys, right_keys, residual, left_width, right_width } => {
            let l = run(left, corr, ctx)?;
            let r = run(right, corr, ctx)?;
            let mut table: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
            for (i, row) in r.iter().enumerate() {
                let k = eval_all(right_keys, row, ctx)?;
                if k.iter().any(Value::is_null) {
                    continue;
                }
                table.entry(group_key(&k)?).or_default().push(i);
            }
            let mut matched_right = vec![false; r.len()];
            let mut out = Collector::new();
            for lrow in l {
                let k = eval_all(left_keys, &lrow, ctx)?;
                let mut matched = false;
                if !k.iter().any(Value::is_null) {
                    if let Some(cands) = table.get(&group_key(&k)?) {
                        for &i in cands {
                            let mut combined = lrow.clone();
                            combined.extend_from_slice(&r[i]);
                            if let Some(res) = residual {
                                if !is_true(res, &combined, ctx)? {
                                    continue;
                                }
                            }
                            matched = true;
                            matched_right[i] = true;
                            out.push(combined)?;
                        }
                    }
                }
                if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                    let mut combined = lrow;
                    combined.extend(std::iter::repeat_n(Value::Null, *right_width));
                    out.push(combined)?;
                }
            }
            if matches!(kind, JoinKind::Right | JoinKind::Full) {
                for (i, m) in matched_right.iter().enumerate() {
                    if !m {
                        let mut combined: Row = std::iter::repeat_n(Value::Null, *left_width).collect();
                        combined.extend_from_slice(&r[i]);
                        out.push(combined)?;
                    }
                }
            }
            Ok(out.rows)
        }
        Plan::Apply { left, right, kind, on, right_width } => {
            let l = run(left, corr, ctx)?;
            let mut out = Collector::new();
            for lrow in l {
                let rrows = run(right, &lrow, ctx)?;
                let mut matched = false;
                for rrow in rrows {
                    let mut combined = lrow.clone();
                    combined.extend(rrow);
                    if let Some(on) = on {
                        if !is_true(on, &combined, ctx)? {
                            continue;
                        }
                    }
                    matched = true;
                    out.push(combined)?;
                }
                if !matched && matches!(kind, JoinKind::Left | JoinKind::OuterApply) {
                    let mut combined = lrow;
                    combined.extend(std::iter::repeat_n(Value::Null, *right_width));
                    out.push(combined)?;
                }
            }
            Ok(out.rows)
        }
        Plan::Aggregate { input, group_by, aggregates } => {
            let rows = run(input, corr, ctx)?;
            aggregate(rows, group_by, aggregates, ctx)
        }
        Plan::Sort { input, keys } => {
            let rows = run(input, corr, ctx)?;
            sort_rows(rows, keys, ctx)
        }
        Plan::Top { input, count, percent: false, ties }
            if ties.is_empty() && locked_top_input(input, ctx).is_some() =>
        {
            let top = locked_top_input(input, ctx).expect("checked");
            let limit = top_count(&eval(count, corr, ctx)?, false, usize::MAX)?;
            let rows = run_locked_top(top.node, top.filter, limit, corr, ctx)?;
            match top.project {
                Some(exprs) => rows.iter().map(|r| eval_all(exprs, r, ctx)).collect(),
                None => Ok(rows),
            }
        }
        Plan::Top { input, count, percent, ties } => {
            let rows = run(input, corr, ctx)?;
            let n = eval(count, corr, ctx)?;
            let limit = top_count(&n, *percent, rows.len())?;
            let mut out = Vec::with_capacity(limit.min(rows.len()));
            let mut last_keys: Option<Row> = None;
            for r in rows {
                if out.len() >= limit {
                    let Some(prev) = &last_keys else { break };
                    if ties.is_empty() || !same_keys(&eval_all(ties, &r, ctx)?, prev) {
                        break;
                    }
                    out.push(r);
                    continue;
                }
                if !ties.is_empty() {
                    last_keys = Some(eval_all(ties, &r, ctx)?);
                }
                out.push(r);
            }
            Ok(out)
        }
        Plan::Offset { input, offset, fetch } => {
            let rows = run(input, corr, ctx)?;
            let off = offset_count(&eval(offset, corr, ctx)?)?;
            let take = match fetch {
                Some(f) => fetch_count(&eval(f, corr, ctx)?)?,
                None => usize::MAX,
            };
            Ok(rows.into_iter().skip(off).take(take).collect())
        }
        Plan::Distinct { input } => {
            let rows = run(input, corr, ctx)?;
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for r in rows {
                if seen.insert(group_key(&r)?) {
                    out.push(r);
                }
            }
            Ok(out)
        }
        Plan::SetOp { op, all, left, right } => {
            let l = run(left, corr, ctx)?;
            let r = run(right, corr, ctx)?;
            set_operation(*op, *all, l, r)
        }
        Plan::RowNumber { input, partition, order } => {
            let rows = run(input, corr, ctx)?;
            row_number(rows, partition, order, ctx)
        }
    }
}

fn same_keys(a: &[Value], b: &[Value]) -> bool {
    a.iter().zip(b).all(|(x, y)| match (x.is_null(), y.is_null()) {
        (true, true) => true,
        (false, false) => types::compare(x, y) == Some(std::cmp::Ordering::Equal),
        _ => false,
    })
}

/// The row count of an OFFSET clause (errors 10742 and, for NULL, 10743).
pub fn offset_count(v: &Value) -> SqlResult<usize> {
    match v {
        Value::Int(n) if *n >= 0 => Ok(*n as usize),
        Value::Int(_) => {
            Err(SqlError::new(10742, "The offset specified in a OFFSET clause may not be negative.").with_severity(15))
        }
        _ => Err(row_count_not_integer("OFFSET")),
    }
}

/// The row count of a FETCH clause (errors 10744 and, for NULL, 10743).
pub fn fetch_count(v: &Value) -> SqlResult<usize> {
    match v {
        Value::Int(n) if *n > 0 => Ok(*n as usize),
        Value::Int(_) => {
            Err(SqlError::new(10744, "The number of rows provided for a FETCH clause must be greater then zero.")
                .with_severity(15))
        }
        _ => Err(row_count_not_integer("FETCH")),
    }
}

fn row_count_not_integer(clause: &str) -> SqlError {
    SqlError::new(10743, format!("The number of rows provided for a {clause} clause must be an integer."))
        .with_severity(15)
}

fn top_count(n: &Value, percent: bool, total: usize) -> SqlResult<usize> {
    if percent {
        let p = match n {
            Value::Float(f) => *f,
            Value::Int(i) => *i as f64,
            Value::Decimal { value, scale } => *value as f64 / 10f64.powi(i32::from(*scale)),
            _ => 0.0,
        };
        if !(0.0..=100.0).contains(&p) {
            return Err(SqlError::new(1031, "Percent values must be between 0 and 100."));
        }
        return Ok((p / 100.0 * total as f64).ceil() as usize);
    }
    match n {
        Value::Int(i) if *i >= 0 => Ok(*i as usize),
        Value::Null => Err(SqlError::new(1060, "The number of rows in the TOP clause must be an integer.")),
        _ => Err(SqlError::new(
            1060,
            "The number of rows provided for a TOP or FETCH clauses row count parameter must be an integer.",
        )),
    }
}
