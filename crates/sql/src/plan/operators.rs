//! The operators that work over materialised rows: nested-loop joins, sort, aggregation,
//! set operations and ROW_NUMBER.

use std::collections::{HashMap, HashSet};

use tessera_access::key::KeyBuf;

use super::evaluate::eval_all;
use super::{encode_value, eval, group_key, is_true, AggCall, AggFunc, Collector, Expr, Row, SortKey};
use crate::runtime::ExecCtx;
use crate::types::{self, SqlType, Value};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{BinaryOp, JoinKind, SetOperator};

pub(super) fn nested_loop(
    l: Vec<Row>,
    r: &[Row],
    kind: JoinKind,
    on: Option<&Expr>,
    left_width: usize,
    right_width: usize,
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    let mut out = Collector::new();
    let mut matched_right = vec![false; r.len()];
    for lrow in l {
        let mut matched = false;
        for (i, rrow) in r.iter().enumerate() {
            let mut combined = lrow.clone();
            combined.extend_from_slice(rrow);
            if let Some(on) = on {
                if !is_true(on, &combined, ctx)? {
                    continue;
                }
            }
            matched = true;
            matched_right[i] = true;
            out.push(combined)?;
        }
        if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
            let mut combined = lrow;
            combined.extend(std::iter::repeat_n(Value::Null, right_width));
            out.push(combined)?;
        }
    }
    if matches!(kind, JoinKind::Right | JoinKind::Full) {
        for (i, m) in matched_right.iter().enumerate() {
            if !m {
                let mut combined: Row = std::iter::repeat_n(Value::Null, left_width).collect();
                combined.extend_from_slice(&r[i]);
                out.push(combined)?;
            }
        }
    }
    Ok(out.rows)
}

pub(super) fn sort_rows(rows: Vec<Row>, keys: &[SortKey], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    let mut keyed = Vec::with_capacity(rows.len());
    for r in rows {
        let mut k = KeyBuf::new();
        for key in keys {
            let v = eval(&key.expr, &r, ctx)?;
            encode_value(&v, key.descending, &mut k)?;
        }
        keyed.push((k.into_vec(), r));
    }
    // Stable: rows with equal keys keep their input order.
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(keyed.into_iter().map(|(_, r)| r).collect())
}

struct AggState {
    count: i64,
    sum: Option<Value>,
    best: Option<Value>,
    seen: HashSet<Vec<u8>>,
}

impl AggState {
    fn new() -> AggState {
        AggState { count: 0, sum: None, best: None, seen: HashSet::new() }
    }
}

fn sum_type(call: &AggCall) -> SqlType {
    call.ty
}

fn accumulate(call: &AggCall, st: &mut AggState, v: Value, null_eliminated: &mut bool) -> SqlResult<()> {
    if call.arg.is_some() && v.is_null() {
        *null_eliminated = true;
        return Ok(());
    }
    if call.distinct && !st.seen.insert(group_key(std::slice::from_ref(&v))?) {
        return Ok(());
    }
    st.count += 1;
    match call.func {
        AggFunc::Count | AggFunc::CountBig => {}
        AggFunc::Sum | AggFunc::Avg => {
            let t = sum_type(call);
            let v = types::cast(&v, &call.arg_type, &t, None)?;
            st.sum = Some(match st.sum.take() {
                None => v,
                Some(s) => types::binary_op(BinaryOp::Add, &s, &v, &t)?,
            });
        }
        AggFunc::Min | AggFunc::Max => {
            let replace = match &st.best {
                None => true,
                Some(b) => {
                    let o = types::compare(&v, b);
                    if call.func == AggFunc::Min {
                        o == Some(std::cmp::Ordering::Less)
                    } else {
                        o == Some(std::cmp::Ordering::Greater)
                    }
                }
            };
            if replace {
                st.best = Some(v);
            }
        }
    }
    Ok(())
}

fn finish(call: &AggCall, st: AggState) -> SqlResult<Value> {
    Ok(match call.func {
        AggFunc::Count => {
            if st.count > i64::from(i32::MAX) {
                return Err(SqlError::new(8115, "Arithmetic overflow error converting expression to data type int."));
            }
            Value::Int(st.count)
        }
        AggFunc::CountBig => Value::Int(st.count),
        AggFunc::Sum => st.sum.unwrap_or(Value::Null),
        AggFunc::Avg => match st.sum {
            None => Value::Null,
            Some(s) => {
                let t = call.ty;
                let n = types::cast(&Value::Int(st.count), &SqlType::BigInt, &t, None)?;
                types::binary_op(BinaryOp::Divide, &s, &n, &t)?
            }
        },
        AggFunc::Min | AggFunc::Max => st.best.unwrap_or(Value::Null),
    })
}

pub(super) fn aggregate(
    rows: Vec<Row>,
    group_by: &[Expr],
    aggregates: &[AggCall],
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    let mut order: Vec<Vec<u8>> = Vec::new();
    let mut groups: HashMap<Vec<u8>, (Row, Vec<AggState>)> = HashMap::new();
    for r in rows {
        let g = eval_all(group_by, &r, ctx)?;
        let key = group_key(&g)?;
        if !groups.contains_key(&key) {
            order.push(key.clone());
            groups.insert(key.clone(), (g, aggregates.iter().map(|_| AggState::new()).collect()));
        }
        let (_, states) = groups.get_mut(&key).expect("inserted above");
        for (call, st) in aggregates.iter().zip(states.iter_mut()) {
            let v = match &call.arg {
                Some(e) => eval(e, &r, ctx)?,
                None => Value::Int(1),
            };
            accumulate(call, st, v, &mut ctx.session.null_eliminated)?;
        }
    }
    // A scalar aggregate (no GROUP BY) returns one row even over no input.
    if group_by.is_empty() && groups.is_empty() {
        order.push(Vec::new());
        groups.insert(Vec::new(), (Vec::new(), aggregates.iter().map(|_| AggState::new()).collect()));
    }
    let mut out = Vec::with_capacity(order.len());
    for key in order {
        let (mut g, states) = groups.remove(&key).expect("group exists");
        for (call, st) in aggregates.iter().zip(states) {
            g.push(finish(call, st)?);
        }
        out.push(g);
    }
    Ok(out)
}

pub(super) fn set_operation(op: SetOperator, all: bool, l: Vec<Row>, r: Vec<Row>) -> SqlResult<Vec<Row>> {
    match op {
        SetOperator::Union => {
            let mut out = l;
            out.extend(r);
            if all {
                return Ok(out);
            }
            let mut seen = HashSet::new();
            let mut dedup = Vec::new();
            for row in out {
                if seen.insert(group_key(&row)?) {
                    dedup.push(row);
                }
            }
            Ok(dedup)
        }
        SetOperator::Except | SetOperator::Intersect => {
            let mut right = HashSet::new();
            for row in &r {
                right.insert(group_key(row)?);
            }
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for row in l {
                let k = group_key(&row)?;
                let keep = right.contains(&k) == (op == SetOperator::Intersect);
                if keep && seen.insert(k) {
                    out.push(row);
                }
            }
            Ok(out)
        }
    }
}

pub(super) fn row_number(
    rows: Vec<Row>,
    partition: &[Expr],
    order: &[SortKey],
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    // Sort by (partition, order), number within each partition, keep the sorted order.
    let mut keyed = Vec::with_capacity(rows.len());
    for r in rows {
        let mut pk = KeyBuf::new();
        for e in partition {
            encode_value(&eval(e, &r, ctx)?, false, &mut pk)?;
        }
        let mut ok = KeyBuf::new();
        for k in order {
            encode_value(&eval(&k.expr, &r, ctx)?, k.descending, &mut ok)?;
        }
        keyed.push((pk.into_vec(), ok.into_vec(), r));
    }
    keyed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut out = Vec::with_capacity(keyed.len());
    let mut n = 0i64;
    let mut prev: Option<Vec<u8>> = None;
    for (p, _, mut r) in keyed {
        if prev.as_ref() != Some(&p) {
            n = 0;
            prev = Some(p);
        }
        n += 1;
        r.push(Value::Int(n));
        out.push(r);
    }
    Ok(out)
}
