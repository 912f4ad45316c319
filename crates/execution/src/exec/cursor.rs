//! Streaming execution: each operator of a plan opened as a cursor that produces its rows
//! one at a time, when its consumer asks. Rows flow from the storage scan to the client
//! as they are read, and TOP, OFFSET/FETCH, SET ROWCOUNT, EXISTS and IN stop asking once
//! they have what they need, so the scan below them stops reading.
//!
//! Operators that must see all of their input before producing a row (sort, grouping,
//! the build side of a hash join, the inner side of a nested loop, EXCEPT/INTERSECT,
//! ROW_NUMBER, recursive CTEs) hold it under the statement's memory grant (`grant.rs`).

use super::evaluate::{eval, eval_all, is_true};
use super::locked_read::{locked_top_input, run_locked_top};
use super::operators::{grouping_sets, set_operation, sort_rows, top_sort, Aggregation};
use super::rows::{drain, Cursor, Held, Rows};
use super::scan::{open_scan, ScanFilter};
use super::window::{window, WindowStream};
use crate::encoding::group_key;
use crate::runtime::ExecCtx;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_governance::grant::{Collector, Reservation};
use tessera_semantics::plan::{fetch_count, offset_count, Expr, Plan, Row, SortKey};
use tessera_semantics::types::{self, Value};
use tessera_syntax::ast::{JoinKind, SetOperator};

/// What DISTINCT holds for each key seen besides the key's bytes (the set's entry).
const SEEN_KEY_OVERHEAD_BYTES: usize = 48;
/// What a hash join's table holds for each distinct build key besides the key's bytes
/// (the map's entry and its list of rows).
const HASH_ENTRY_OVERHEAD_BYTES: usize = 64;

/// Opens `plan`. `corr` is the correlation row an enclosing [`Plan::Apply`] hands down
/// (empty at the top); expressions of the plan that read it are evaluated now.
pub fn open<'p>(plan: &'p Plan, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Rows<'p>> {
    ctx.yield_point()?;
    Ok(match plan {
        Plan::Values(rows) => Box::new(Values { rows: rows.iter(), corr: corr.to_vec() }),
        Plan::Scan(node) => open_scan(node, None, corr, ctx)?,
        Plan::RecursiveCte { id, anchor, recursive, max_recursion } => {
            let anchor_rows = drain(open(anchor, corr, ctx)?, ctx)?;
            let outer_round = ctx.work_tables.remove(id);
            let result = run_recursive(*id, anchor_rows, recursive, *max_recursion, corr, ctx);
            match outer_round {
                Some(rows) => ctx.work_tables.insert(*id, rows),
                None => ctx.work_tables.remove(id),
            };
            Box::new(Held::new(result?))
        }
        Plan::WorkTable { id } => Box::new(Held::loose(ctx.work_tables.get(id).cloned().unwrap_or_default())),
        Plan::Document { input, format } => {
            let (rows, held) = drain(open(input, corr, ctx)?, ctx)?.into_parts();
            let document = super::document::document(format, &rows)?;
            let rows = document.map(|d| vec![vec![Value::str(&d)]]).unwrap_or_default();
            Box::new(Held::new(Collector::from_parts(rows, held)))
        }
        Plan::Transition { deleted } => {
            let rows = ctx.session.triggers.last().map(|f| if *deleted { &f.deleted } else { &f.inserted });
            Box::new(Held::loose(rows.cloned().unwrap_or_default()))
        }
        Plan::System { view, db } => {
            let db = ctx.db_name(db);
            Box::new(Held::loose(crate::sysviews::rows(*view, &db, ctx)?))
        }
        Plan::SystemFunction { function, db, args } => {
            let db = ctx.db_name(db);
            let values = args.iter().map(|a| eval(a, corr, ctx)).collect::<SqlResult<Vec<_>>>()?;
            Box::new(Held::loose(crate::sysviews::functions::rows(*function, &db, &values, ctx)?))
        }
        Plan::TableFunctionCall { call, args } => {
            let values = args.iter().map(|a| eval(a, corr, ctx)).collect::<SqlResult<Vec<_>>>()?;
            Box::new(Held::loose((ctx.shared.functions.table)(ctx, call, values)?))
        }
        Plan::Filter { input, predicate } => match &**input {
            Plan::Scan(node) => match ScanFilter::of(node, predicate, ctx) {
                Some(filter) => open_scan(node, Some(filter), corr, ctx)?,
                None => Box::new(Filter { input: open(input, corr, ctx)?, predicate }),
            },
            _ => Box::new(Filter { input: open(input, corr, ctx)?, predicate }),
        },
        Plan::Project { input, exprs } => {
            Box::new(Project { input: open(input, corr, ctx)?, exprs, in_place: selects_in_order(exprs) })
        }
        Plan::NestedLoop { left, right, kind, on, left_width, right_width } => {
            let left = open(left, corr, ctx)?;
            let inner = drain(open(right, corr, ctx)?, ctx)?;
            Box::new(NestedLoop {
                left,
                matched_right: vec![false; inner.rows.len()],
                inner,
                kind: *kind,
                on: on.as_ref(),
                left_width: *left_width,
                right_width: *right_width,
                current: None,
                leftovers: None,
            })
        }
        Plan::HashJoin { left, right, kind, left_keys, right_keys, residual, left_width, right_width } => {
            let left = open(left, corr, ctx)?;
            let (rows, mut held) = drain(open(right, corr, ctx)?, ctx)?.into_parts();
            // The hash table is held under the grant with the rows it points into.
            let mut table: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
            for (i, row) in rows.iter().enumerate() {
                let k = eval_all(right_keys, row, ctx)?;
                if k.iter().any(Value::is_null) {
                    continue;
                }
                match table.entry(group_key(&k)?) {
                    Entry::Vacant(v) => {
                        held.take(v.key().len() + HASH_ENTRY_OVERHEAD_BYTES)?;
                        v.insert(vec![i]);
                    }
                    Entry::Occupied(o) => {
                        held.take(std::mem::size_of::<usize>())?;
                        o.into_mut().push(i);
                    }
                }
            }
            let build = Collector::from_parts(rows, held);
            Box::new(HashJoin {
                left,
                matched_right: vec![false; build.rows.len()],
                build,
                table,
                kind: *kind,
                left_keys,
                residual: residual.as_ref(),
                left_width: *left_width,
                right_width: *right_width,
                pending: VecDeque::new(),
                leftovers: None,
            })
        }
        Plan::Apply { left, right, kind, on, right_width } => Box::new(Apply {
            left: open(left, corr, ctx)?,
            right,
            kind: *kind,
            on: on.as_ref(),
            right_width: *right_width,
            pending: VecDeque::new(),
        }),
        Plan::GroupingSets { input, group_by, sets, aggregates } => {
            let (rows, held) = drain(open(input, corr, ctx)?, ctx)?.into_parts();
            let grouped = grouping_sets(&rows, group_by, sets, aggregates, ctx)?;
            drop(held);
            Box::new(Held::new(grouped))
        }
        Plan::Aggregate { input, group_by, aggregates } => {
            let mut input = open(input, corr, ctx)?;
            let mut groups = Aggregation::new(group_by, aggregates, ctx);
            while let Some(r) = input.next(ctx)? {
                groups.add(&r, ctx)?;
            }
            Box::new(Held::new(groups.finish()?))
        }
        Plan::Sort { input, keys } if input.delivers_order(keys) => open(input, corr, ctx)?,
        Plan::Sort { input, keys } => {
            let (rows, mut reservation) = drain(open(input, corr, ctx)?, ctx)?.into_parts();
            let sorted = sort_rows(rows, keys, &mut reservation, ctx)?;
            Box::new(Held::new(Collector::from_parts(sorted, reservation)))
        }
        Plan::Top { input, count, percent: false, ties }
            if ties.is_empty() && locked_top_input(input, ctx).is_some() =>
        {
            let top = locked_top_input(input, ctx).expect("checked");
            let limit = top_count(&eval(count, corr, ctx)?, false, usize::MAX)?;
            let rows = run_locked_top(top.node, top.filter, limit, corr, ctx)?;
            let rows = match top.project {
                Some(exprs) => rows.iter().map(|r| eval_all(exprs, r, ctx)).collect::<SqlResult<Vec<Row>>>()?,
                None => rows,
            };
            Box::new(Held::loose(rows))
        }
        Plan::Top { input, count, percent: false, ties } if sorts(input).is_some() => {
            // WITH TIES ties on the sort's keys (the binder makes them the same).
            let (input, keys) = sorts(input).expect("checked");
            let limit = top_count(&eval(count, corr, ctx)?, false, usize::MAX)?;
            Box::new(Held::new(top_sort(open(input, corr, ctx)?, keys, limit, !ties.is_empty(), ctx)?))
        }
        Plan::Offset { input, offset, fetch: Some(fetch) } if sorts(input).is_some() => {
            let (input, keys) = sorts(input).expect("checked");
            let skip = offset_count(&eval(offset, corr, ctx)?)?;
            let take = fetch_count(&eval(fetch, corr, ctx)?)?;
            let sorted = top_sort(open(input, corr, ctx)?, keys, skip.saturating_add(take), false, ctx)?;
            Box::new(Offset { input: Box::new(Held::new(sorted)), skip, take })
        }
        Plan::Top { input, count, percent: true, ties } => {
            // A percentage needs the input's size first.
            let n = eval(count, corr, ctx)?;
            let all = drain(open(input, corr, ctx)?, ctx)?;
            let limit = top_count(&n, true, all.rows.len())?;
            Box::new(Top { input: Box::new(Held::new(all)), limit, ties, taken: 0, last_keys: None })
        }
        Plan::Top { input, count, percent: false, ties } => {
            let limit = top_count(&eval(count, corr, ctx)?, false, usize::MAX)?;
            Box::new(Top { input: open(input, corr, ctx)?, limit, ties, taken: 0, last_keys: None })
        }
        Plan::Offset { input, offset, fetch } => {
            let skip = offset_count(&eval(offset, corr, ctx)?)?;
            let take = match fetch {
                Some(f) => fetch_count(&eval(f, corr, ctx)?)?,
                None => usize::MAX,
            };
            Box::new(Offset { input: open(input, corr, ctx)?, skip, take })
        }
        Plan::Distinct { input } => {
            let grant = ctx.grant();
            Box::new(Distinct { input: open(input, corr, ctx)?, seen: HashSet::new(), held: Reservation::new(&grant) })
        }
        Plan::SetOp { op: SetOperator::Union, all: true, left, right } => {
            Box::new(Concat { first: open(left, corr, ctx)?, second: Some(open(right, corr, ctx)?) })
        }
        Plan::SetOp { op, all, left, right } => {
            let (l, r) = (drain(open(left, corr, ctx)?, ctx)?, drain(open(right, corr, ctx)?, ctx)?);
            let (l, held) = l.into_parts();
            let rows = set_operation(*op, *all, l, r.into_parts().0)?;
            Box::new(Held::new(Collector::from_parts(rows, held)))
        }
        Plan::Window { input, partition, order, calls, presorted: true } => {
            Box::new(WindowStream::new(open(input, corr, ctx)?, partition, order, calls, ctx))
        }
        Plan::Window { input, partition, order, calls, presorted: false } => {
            let (rows, reservation) = drain(open(input, corr, ctx)?, ctx)?.into_parts();
            Box::new(Held::new(Collector::from_parts(window(rows, partition, order, calls, ctx)?, reservation)))
        }
    })
}

struct Values<'p> {
    rows: std::slice::Iter<'p, Vec<Expr>>,
    corr: Row,
}

impl Cursor for Values<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        self.rows.next().map(|r| eval_all(r, &self.corr, ctx)).transpose()
    }
}

struct Filter<'p> {
    input: Rows<'p>,
    predicate: &'p Expr,
}

impl Cursor for Filter<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        while let Some(r) = self.input.next(ctx)? {
            if is_true(self.predicate, &r, ctx)? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }
}

struct Project<'p> {
    input: Rows<'p>,
    exprs: &'p [Expr],
    /// The projection only keeps columns, in their order (`SELECT [n]` of a table): the
    /// input row is cut down where it is instead of copied into a new one.
    in_place: bool,
}

impl Cursor for Project<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        match self.input.next(ctx)? {
            Some(mut r) if self.in_place => {
                for (k, e) in self.exprs.iter().enumerate() {
                    let Expr::Column(i) = *e else { unreachable!("an in-place projection keeps columns") };
                    // i >= k (ascending, distinct): column i has not been moved yet.
                    r.swap(k, i);
                }
                r.truncate(self.exprs.len());
                Ok(Some(r))
            }
            Some(r) => Ok(Some(eval_all(self.exprs, &r, ctx)?)),
            None => Ok(None),
        }
    }
}

/// Whether a projection is a plain selection of columns in ascending order, which
/// [`Project`] does in place.
fn selects_in_order(exprs: &[Expr]) -> bool {
    let mut last = None;
    exprs.iter().all(|e| match *e {
        Expr::Column(i) if last.is_none_or(|l| i > l) => {
            last = Some(i);
            true
        }
        _ => false,
    })
}

fn padded_left(row: Row, right_width: usize) -> Row {
    let mut combined = row;
    combined.extend(std::iter::repeat_n(Value::Null, right_width));
    combined
}

fn padded_right(row: &[Value], left_width: usize) -> Row {
    let mut combined: Row = std::iter::repeat_n(Value::Null, left_width).collect();
    combined.extend_from_slice(row);
    combined
}

/// Nested loops: the left input streams; the right is held and read once per left row.
struct NestedLoop<'p> {
    left: Rows<'p>,
    inner: Collector,
    matched_right: Vec<bool>,
    kind: JoinKind,
    on: Option<&'p Expr>,
    left_width: usize,
    right_width: usize,
    /// The left row being joined, the next right row to try, whether it matched.
    current: Option<(Row, usize, bool)>,
    /// After the left input: the right rows no left row matched (RIGHT and FULL joins).
    leftovers: Option<usize>,
}

impl Cursor for NestedLoop<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        let right = &self.inner.rows;
        loop {
            if let Some(i) = &mut self.leftovers {
                while *i < right.len() {
                    *i += 1;
                    if !self.matched_right[*i - 1] {
                        return Ok(Some(padded_right(&right[*i - 1], self.left_width)));
                    }
                }
                return Ok(None);
            }
            let Some((row, next, matched)) = &mut self.current else {
                match self.left.next(ctx)? {
                    Some(row) => self.current = Some((row, 0, false)),
                    None if matches!(self.kind, JoinKind::Right | JoinKind::Full) => self.leftovers = Some(0),
                    None => return Ok(None),
                }
                continue;
            };
            while *next < right.len() {
                let i = *next;
                *next += 1;
                let mut combined = row.clone();
                combined.extend_from_slice(&right[i]);
                if let Some(on) = self.on {
                    if !is_true(on, &combined, ctx)? {
                        continue;
                    }
                }
                *matched = true;
                self.matched_right[i] = true;
                return Ok(Some(combined));
            }
            let (row, _, matched) = self.current.take().expect("a current row");
            if !matched && matches!(self.kind, JoinKind::Left | JoinKind::Full) {
                return Ok(Some(padded_left(row, self.right_width)));
            }
        }
    }
}

/// Hash join: the right input is the build side, held in a hash table; the left streams
/// and probes it.
struct HashJoin<'p> {
    left: Rows<'p>,
    build: Collector,
    table: HashMap<Vec<u8>, Vec<usize>>,
    matched_right: Vec<bool>,
    kind: JoinKind,
    left_keys: &'p [Expr],
    residual: Option<&'p Expr>,
    left_width: usize,
    right_width: usize,
    /// Joined rows of the current left row not yet returned.
    pending: VecDeque<Row>,
    leftovers: Option<usize>,
}

impl Cursor for HashJoin<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        let right = &self.build.rows;
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Ok(Some(r));
            }
            if let Some(i) = &mut self.leftovers {
                while *i < right.len() {
                    *i += 1;
                    if !self.matched_right[*i - 1] {
                        return Ok(Some(padded_right(&right[*i - 1], self.left_width)));
                    }
                }
                return Ok(None);
            }
            let Some(lrow) = self.left.next(ctx)? else {
                if matches!(self.kind, JoinKind::Right | JoinKind::Full) {
                    self.leftovers = Some(0);
                    continue;
                }
                return Ok(None);
            };
            let k = eval_all(self.left_keys, &lrow, ctx)?;
            let mut matched = false;
            if !k.iter().any(Value::is_null) {
                if let Some(candidates) = self.table.get(&group_key(&k)?) {
                    for &i in candidates {
                        let mut combined = lrow.clone();
                        combined.extend_from_slice(&right[i]);
                        if let Some(res) = self.residual {
                            if !is_true(res, &combined, ctx)? {
                                continue;
                            }
                        }
                        matched = true;
                        self.matched_right[i] = true;
                        self.pending.push_back(combined);
                    }
                }
            }
            if !matched && matches!(self.kind, JoinKind::Left | JoinKind::Full) {
                self.pending.push_back(padded_left(lrow, self.right_width));
            }
        }
    }
}

/// Runs the right plan once per left row, with that row as its correlation row (index
/// nested loops, APPLY).
struct Apply<'p> {
    left: Rows<'p>,
    right: &'p Plan,
    kind: JoinKind,
    on: Option<&'p Expr>,
    right_width: usize,
    pending: VecDeque<Row>,
}

impl Apply<'_> {
    /// A right row for `lrow`: queued if the join's condition holds; whether it did.
    fn pair(&mut self, lrow: &Row, rrow: Row, ctx: &mut ExecCtx) -> SqlResult<bool> {
        let mut combined = lrow.clone();
        combined.extend(rrow);
        if let Some(on) = self.on {
            if !is_true(on, &combined, ctx)? {
                return Ok(false);
            }
        }
        self.pending.push_back(combined);
        Ok(true)
    }
}

impl Cursor for Apply<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Ok(Some(r));
            }
            let Some(lrow) = self.left.next(ctx)? else { return Ok(None) };
            let mut matched = false;
            if matches!(self.kind, JoinKind::CrossApply | JoinKind::OuterApply) {
                // APPLY: the right side reads the left row as its enclosing row while it
                // runs, so it runs to its end before the row is let go.
                ctx.outer.push(lrow.clone());
                let rows = open(self.right, &lrow, ctx).and_then(|right| drain(right, ctx));
                ctx.outer.pop();
                for rrow in rows?.into_parts().0 {
                    matched |= self.pair(&lrow, rrow, ctx)?;
                }
            } else {
                let mut right = open(self.right, &lrow, ctx)?;
                while let Some(rrow) = right.next(ctx)? {
                    matched |= self.pair(&lrow, rrow, ctx)?;
                }
            }
            if !matched && matches!(self.kind, JoinKind::Left | JoinKind::OuterApply) {
                self.pending.push_back(padded_left(lrow, self.right_width));
            }
        }
    }
}

/// TOP n [WITH TIES]: stops reading its input once it has its rows.
struct Top<'p> {
    input: Rows<'p>,
    limit: usize,
    ties: &'p [Expr],
    taken: usize,
    /// WITH TIES: the ORDER BY values of the last row taken within the limit.
    last_keys: Option<Row>,
}

impl Cursor for Top<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        if self.taken >= self.limit && (self.ties.is_empty() || self.last_keys.is_none()) {
            return Ok(None);
        }
        let Some(r) = self.input.next(ctx)? else { return Ok(None) };
        if self.taken >= self.limit {
            let prev = self.last_keys.as_ref().expect("checked above");
            if !same_keys(&eval_all(self.ties, &r, ctx)?, prev) {
                self.last_keys = None;
                return Ok(None);
            }
            return Ok(Some(r));
        }
        self.taken += 1;
        if !self.ties.is_empty() {
            self.last_keys = Some(eval_all(self.ties, &r, ctx)?);
        }
        Ok(Some(r))
    }
}

/// OFFSET … ROWS [FETCH NEXT … ROWS ONLY].
struct Offset<'p> {
    input: Rows<'p>,
    skip: usize,
    take: usize,
}

impl Cursor for Offset<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        while self.skip > 0 {
            if self.input.next(ctx)?.is_none() {
                return Ok(None);
            }
            self.skip -= 1;
        }
        if self.take == 0 {
            return Ok(None);
        }
        self.take -= 1;
        self.input.next(ctx)
    }
}

/// DISTINCT: streams each row the first time it is seen; the keys seen are held.
struct Distinct<'p> {
    input: Rows<'p>,
    seen: HashSet<Vec<u8>>,
    held: Reservation,
}

impl Cursor for Distinct<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        while let Some(r) = self.input.next(ctx)? {
            let key = group_key(&r)?;
            if !self.seen.contains(&key) {
                self.held.take(key.len() + SEEN_KEY_OVERHEAD_BYTES)?;
                self.seen.insert(key);
                return Ok(Some(r));
            }
        }
        Ok(None)
    }
}

/// UNION ALL: the first input, then the second.
struct Concat<'p> {
    first: Rows<'p>,
    second: Option<Rows<'p>>,
}

impl Cursor for Concat<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        if let Some(r) = self.first.next(ctx)? {
            return Ok(Some(r));
        }
        match &mut self.second {
            Some(second) => second.next(ctx),
            None => Ok(None),
        }
    }
}

/// The rounds of a recursive CTE, accumulated (see `Plan::RecursiveCte`).
fn run_recursive(
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
                return Err(msg::MAX_RECURSION_EXHAUSTED.with(&[&max_recursion]));
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

fn same_keys(a: &[Value], b: &[Value]) -> bool {
    a.iter().zip(b).all(|(x, y)| match (x.is_null(), y.is_null()) {
        (true, true) => true,
        (false, false) => types::compare(x, y) == Some(std::cmp::Ordering::Equal),
        _ => false,
    })
}

/// The input and keys of a sort that must sort (its input does not deliver the order).
fn sorts(plan: &Plan) -> Option<(&Plan, &[SortKey])> {
    match plan {
        Plan::Sort { input, keys } if !input.delivers_order(keys) => Some((input, keys)),
        _ => None,
    }
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
            return Err(msg::INVALID_PERCENT_VALUE.err());
        }
        return Ok((p / 100.0 * total as f64).ceil() as usize);
    }
    match n {
        Value::Int(i) if *i >= 0 => Ok(*i as usize),
        Value::Null => Err(msg::TOP_ROW_COUNT_NOT_INTEGER.with(&[&"in the TOP clause"])),
        _ => Err(msg::TOP_ROW_COUNT_NOT_INTEGER.with(&[&"provided for a TOP or FETCH clauses row count parameter"])),
    }
}
