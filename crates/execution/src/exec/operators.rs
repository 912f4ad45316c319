//! The operators that need all of their input first: sort (and top-N sort), grouping and
//! aggregation, set operations (window functions: `window`).

use super::evaluate::{eval, eval_all};
use super::rows::Rows;
use crate::encoding::{encode_value, group_key};
use crate::runtime::ExecCtx;
use std::collections::{BinaryHeap, HashMap, HashSet};
use tessera_access::key::KeyBuf;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_governance::grant::{row_bytes, Collector, Reservation};
use tessera_semantics::plan::{AggCall, AggFunc, Expr, Row, SortKey};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{BinaryOp, SetOperator};

/// `rows` in the order of `keys`. Their sort keys are held under `held` (the rows' own
/// reservation) while they are sorted, and given back after.
pub(super) fn sort_rows(
    rows: Vec<Row>,
    keys: &[SortKey],
    held: &mut Reservation,
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    let mut keyed = Vec::with_capacity(rows.len());
    let mut key_bytes = 0;
    for r in rows {
        let key = sort_key(&r, keys, ctx)?;
        held.take(key.len())?;
        key_bytes += key.len();
        keyed.push((key, r));
    }
    // Stable: rows with equal keys keep their input order.
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    held.give_back(key_bytes);
    Ok(keyed.into_iter().map(|(_, r)| r).collect())
}

/// A row's sort key: its keys' values encoded so that the bytes compare as the keys do.
fn sort_key(r: &Row, keys: &[SortKey], ctx: &mut ExecCtx) -> SqlResult<Vec<u8>> {
    let mut k = KeyBuf::new();
    for key in keys {
        let v = eval(&key.expr, r, ctx)?;
        encode_value(&v, key.descending, &mut k)?;
    }
    Ok(k.into_vec())
}

/// A row a top-N sort holds: ordered by its sort key, then by its place in the input.
struct Ranked {
    key: Vec<u8>,
    seq: u64,
    row: Row,
}

impl Ranked {
    fn bytes(&self) -> usize {
        row_bytes(&self.row) + self.key.len()
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        (&self.key, self.seq) == (&other.key, other.seq)
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.key, self.seq).cmp(&(&other.key, other.seq))
    }
}

/// The first `limit` rows of `input` in the order of `keys` (SQL Server's Top N Sort),
/// and `with_ties`, the rows whose keys equal the last one's: only those rows are held,
/// under the statement's grant, so `TOP (n) … ORDER BY` and OFFSET/FETCH need memory for
/// their rows, not the input's. Rows with equal keys keep their input order, as in the
/// full sort.
pub(super) fn top_sort(
    mut input: Rows<'_>,
    keys: &[SortKey],
    limit: usize,
    with_ties: bool,
    ctx: &mut ExecCtx,
) -> SqlResult<Collector> {
    let mut held = Reservation::new(&ctx.grant());
    let mut best: BinaryHeap<Ranked> = BinaryHeap::new();
    // WITH TIES: rows past the first `limit` whose keys equal the last of those.
    let mut tied: Vec<Ranked> = Vec::new();
    if limit > 0 {
        let mut seq = 0;
        while let Some(row) = input.next(ctx)? {
            let ranked = Ranked { key: sort_key(&row, keys, ctx)?, seq, row };
            seq += 1;
            if best.len() < limit {
                held.take(ranked.bytes())?;
                best.push(ranked);
                continue;
            }
            let last = best.peek().expect("limit > 0");
            if ranked >= *last {
                if with_ties && ranked.key == last.key {
                    held.take(ranked.bytes())?;
                    tied.push(ranked);
                }
                continue;
            }
            held.take(ranked.bytes())?;
            best.push(ranked);
            let out = best.pop().expect("limit > 0");
            let last = &best.peek().expect("limit > 0").key;
            if with_ties && out.key == *last {
                tied.push(out);
            } else {
                held.give_back(out.bytes());
            }
            // The last key only ever falls: rows tied with an earlier one are out.
            tied.retain(|t| {
                let keep = t.key == *last;
                if !keep {
                    held.give_back(t.bytes());
                }
                keep
            });
        }
    }
    let mut rows = best.into_vec();
    rows.append(&mut tied);
    rows.sort_unstable();
    Ok(Collector::from_parts(rows.into_iter().map(|r| r.row).collect(), held))
}

#[derive(Clone)]
pub(super) struct AggState {
    count: i64,
    sum: Option<Value>,
    best: Option<Value>,
    seen: HashSet<Vec<u8>>,
    /// STRING_AGG: its separator (read from the first row) and the values with their
    /// WITHIN GROUP sort keys, in arrival order.
    separator: Option<Value>,
    texts: Vec<(Vec<u8>, String)>,
}

impl AggState {
    pub(super) fn new() -> AggState {
        AggState { count: 0, sum: None, best: None, seen: HashSet::new(), separator: None, texts: Vec::new() }
    }
}

/// STRING_AGG takes a row: its value (NULL is skipped) under its WITHIN GROUP key.
fn string_agg_add(call: &AggCall, st: &mut AggState, r: &Row, ctx: &mut ExecCtx) -> SqlResult<()> {
    let spec = call.string_agg.as_ref().expect("STRING_AGG has its spec");
    let v = match &call.arg {
        Some(e) => eval(e, r, ctx)?,
        None => Value::Null,
    };
    if v.is_null() {
        return Ok(());
    }
    if st.separator.is_none() {
        st.separator = Some(eval(&spec.separator, r, ctx)?);
    }
    let key = if spec.order.is_empty() { Vec::new() } else { sort_key(r, &spec.order, ctx)? };
    let text = match types::cast(&v, &call.arg_type, &call.ty, None)? {
        Value::Str(s) => s.to_string(),
        other => types::display_text(&other, &call.ty),
    };
    st.texts.push((key, text));
    Ok(())
}

fn sum_type(call: &AggCall) -> SqlType {
    call.ty
}

pub(super) fn accumulate(call: &AggCall, st: &mut AggState, v: Value, null_eliminated: &mut bool) -> SqlResult<()> {
    if call.arg.is_some() && v.is_null() {
        *null_eliminated = true;
        return Ok(());
    }
    if call.distinct && !st.seen.insert(group_key(std::slice::from_ref(&v))?) {
        return Ok(());
    }
    st.count += 1;
    match call.func {
        // STRING_AGG takes its rows in `string_agg_add`.
        AggFunc::Count | AggFunc::CountBig | AggFunc::StringAgg => {}
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

pub(super) fn finish(call: &AggCall, st: AggState) -> SqlResult<Value> {
    Ok(match call.func {
        AggFunc::Count => {
            if st.count > i64::from(i32::MAX) {
                return Err(msg::ARITHMETIC_OVERFLOW.with(&[&"expression", &"int"]));
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
        AggFunc::StringAgg => {
            if st.texts.is_empty() {
                return Ok(Value::Null);
            }
            let mut texts = st.texts;
            texts.sort_by(|a, b| a.0.cmp(&b.0));
            let separator = match st.separator {
                Some(Value::Str(s)) => s.to_string(),
                _ => String::new(),
            };
            let joined = texts.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(&separator);
            let bytes =
                if matches!(call.ty, SqlType::NVarChar(_)) { joined.encode_utf16().count() * 2 } else { joined.len() };
            if !call.ty.is_max() && bytes > 8000 {
                return Err(msg::STRING_AGG_TOO_LONG.err());
            }
            Value::Str(joined.into())
        }
    })
}

/// GROUPING SETS: `rows` aggregated over each set of `group_by` positions (the others
/// NULL), each row followed by its grouping bits; the empty set gives its row over no
/// rows too.
pub(super) fn grouping_sets(
    rows: &[Row],
    group_by: &[Expr],
    sets: &[Vec<usize>],
    aggregates: &[AggCall],
    ctx: &mut ExecCtx,
) -> SqlResult<Collector> {
    let n = group_by.len();
    let mut out = Collector::new(&ctx.grant());
    for set in sets {
        let bits = (0..n).filter(|i| !set.contains(i)).fold(0i64, |b, i| b | 1 << (n - 1 - i));
        let rows_of_set = if set.is_empty() {
            let mut whole = Aggregation::new(&[], aggregates, ctx);
            for r in rows {
                whole.add(r, ctx)?;
            }
            let totals = whole.finish()?.into_parts().0;
            totals.into_iter().map(|t| std::iter::repeat_n(Value::Null, n).chain(t).collect()).collect()
        } else {
            let masked: Vec<Expr> = group_by
                .iter()
                .enumerate()
                .map(|(i, e)| if set.contains(&i) { e.clone() } else { Expr::Const(Value::Null) })
                .collect();
            let mut groups = Aggregation::new(&masked, aggregates, ctx);
            for r in rows {
                groups.add(r, ctx)?;
            }
            groups.finish()?.into_parts().0
        };
        for mut r in rows_of_set {
            r.push(Value::Int(bits));
            out.push(r)?;
        }
    }
    Ok(out)
}

/// Grouping as rows arrive: one accumulator per group, held under the statement's grant;
/// the groups come out in the order they were first seen.
pub(super) struct Aggregation<'p> {
    group_by: &'p [Expr],
    aggregates: &'p [AggCall],
    order: Vec<Vec<u8>>,
    groups: HashMap<Vec<u8>, (Row, Vec<AggState>)>,
    held: Reservation,
}

impl<'p> Aggregation<'p> {
    pub(super) fn new(group_by: &'p [Expr], aggregates: &'p [AggCall], ctx: &mut ExecCtx) -> Aggregation<'p> {
        let held = Reservation::new(&ctx.grant());
        Aggregation { group_by, aggregates, order: Vec::new(), groups: HashMap::new(), held }
    }

    pub(super) fn add(&mut self, r: &Row, ctx: &mut ExecCtx) -> SqlResult<()> {
        let g = eval_all(self.group_by, r, ctx)?;
        let key = group_key(&g)?;
        if !self.groups.contains_key(&key) {
            self.held.take(2 * key.len() + row_bytes(&g) + 64 * self.aggregates.len())?;
            self.order.push(key.clone());
            self.groups.insert(key.clone(), (g, self.aggregates.iter().map(|_| AggState::new()).collect()));
        }
        let (_, states) = self.groups.get_mut(&key).expect("inserted above");
        for (call, st) in self.aggregates.iter().zip(states.iter_mut()) {
            if call.func == AggFunc::StringAgg {
                string_agg_add(call, st, r, ctx)?;
                continue;
            }
            let v = match &call.arg {
                Some(e) => eval(e, r, ctx)?,
                None => Value::Int(1),
            };
            accumulate(call, st, v, &mut ctx.session.null_eliminated)?;
        }
        Ok(())
    }

    /// One row per group: its values, then its aggregates.
    pub(super) fn finish(mut self) -> SqlResult<Collector> {
        // A scalar aggregate (no GROUP BY) returns one row even over no input.
        if self.group_by.is_empty() && self.groups.is_empty() {
            self.order.push(Vec::new());
            self.groups.insert(Vec::new(), (Vec::new(), self.aggregates.iter().map(|_| AggState::new()).collect()));
        }
        let mut out = Vec::with_capacity(self.order.len());
        for key in &self.order {
            let (mut g, states) = self.groups.remove(key).expect("group exists");
            for (call, st) in self.aggregates.iter().zip(states) {
                g.push(finish(call, st)?);
            }
            out.push(g);
        }
        Ok(Collector::from_parts(out, self.held))
    }
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
