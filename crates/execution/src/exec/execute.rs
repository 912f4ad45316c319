//! Running a plan to the end: its rows collected (for data changes, subqueries and
//! recursive CTE rounds), the rounds of a recursive CTE, and the row counts of TOP,
//! OFFSET and FETCH.

use super::cursor::{drain, open};
use crate::grant::Collector;
use crate::runtime::ExecCtx;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::plan::{Plan, Row};
use tessera_semantics::types::{self, Value};

/// The rounds of a recursive CTE, accumulated (see `Plan::RecursiveCte`).
pub(super) fn run_recursive(
    id: usize,
    anchor: Collector,
    recursive: &Plan,
    max_recursion: u16,
    corr: &[Value],
    ctx: &mut ExecCtx,
) -> SqlResult<Collector> {
    let mut out = Collector::new(&ctx.grant());
    let mut round = anchor.into_parts().0;
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
    Ok(out)
}

/// Runs a plan to its end and returns its rows (bounded by the statement's memory
/// grant while they are collected). `corr` is the correlation row handed down by an
/// enclosing [`Plan::Apply`] (empty at the top).
pub fn run(plan: &Plan, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    let rows = open(plan, corr, ctx)?;
    Ok(drain(rows, ctx)?.into_parts().0)
}

pub(super) fn same_keys(a: &[Value], b: &[Value]) -> bool {
    a.iter().zip(b).all(|(x, y)| match (x.is_null(), y.is_null()) {
        (true, true) => true,
        (false, false) => types::compare(x, y) == Some(std::cmp::Ordering::Equal),
        _ => false,
    })
}

pub(super) fn top_count(n: &Value, percent: bool, total: usize) -> SqlResult<usize> {
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
