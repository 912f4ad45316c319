//! Window functions: the input's rows sorted by (partition, order) — the sort every call of
//! one OVER clause shares — then each call's value for each row of each partition,
//! appended to the row. Ranking and offset functions read positions and peer groups (rows
//! equal in the ORDER BY); an aggregate reads its frame, running (one accumulator carried
//! along) when the frame starts at the partition's first row, recomputed per row otherwise.

use super::evaluate::eval;
use super::operators::{accumulate, finish, AggState};
use super::rows::{Cursor, Rows};
use crate::encoding::encode_value;
use crate::runtime::ExecCtx;
use tessera_access::key::KeyBuf;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_governance::grant::{Collector, Reservation};
use tessera_semantics::plan::{Expr, Row, SortKey, WindowCall, WindowFunc};
use tessera_semantics::types::Value;
use tessera_syntax::ast::{FrameBound, WindowFrame};

/// A row's partition, as the key form of its PARTITION BY values.
fn partition_key(partition: &[Expr], row: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<u8>> {
    let mut key = KeyBuf::new();
    for e in partition {
        encode_value(&eval(e, row, ctx)?, false, &mut key)?;
    }
    Ok(key.into_vec())
}

/// Window functions over input that comes in (partition, order) order already
/// (`Plan::Window::presorted`): one partition is held at a time, under the statement's
/// memory grant, and its rows go out with their values once the next partition's first
/// row arrives.
pub(super) struct WindowStream<'p> {
    input: Rows<'p>,
    partition: &'p [Expr],
    order: &'p [SortKey],
    calls: &'p [WindowCall],
    /// The partition being read: its key and its rows so far.
    key: Option<Vec<u8>>,
    held: Collector,
    /// A finished partition's rows, with their values, to hand out, and the memory they
    /// hold.
    ready: std::vec::IntoIter<Row>,
    ready_memory: Option<Reservation>,
    done: bool,
}

impl<'p> WindowStream<'p> {
    pub(super) fn new(
        input: Rows<'p>,
        partition: &'p [Expr],
        order: &'p [SortKey],
        calls: &'p [WindowCall],
        ctx: &mut ExecCtx,
    ) -> WindowStream<'p> {
        let held = Collector::new(&ctx.grant());
        WindowStream {
            input,
            partition,
            order,
            calls,
            key: None,
            held,
            ready: Vec::new().into_iter(),
            ready_memory: None,
            done: false,
        }
    }

    /// Computes the held partition's values; its rows are handed out next.
    fn finish_partition(&mut self, ctx: &mut ExecCtx) -> SqlResult<()> {
        let held = std::mem::replace(&mut self.held, Collector::new(&ctx.grant()));
        let (rows, memory) = held.into_parts();
        self.ready = window(rows, self.partition, self.order, self.calls, ctx)?.into_iter();
        self.ready_memory = Some(memory);
        Ok(())
    }
}

impl Cursor for WindowStream<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        loop {
            if let Some(r) = self.ready.next() {
                return Ok(Some(r));
            }
            self.ready_memory = None;
            if self.done {
                return Ok(None);
            }
            match self.input.next(ctx)? {
                Some(row) => {
                    let key = partition_key(self.partition, &row, ctx)?;
                    if self.key.as_ref().is_some_and(|k| *k != key) {
                        self.finish_partition(ctx)?;
                    }
                    self.key = Some(key);
                    self.held.push(row)?;
                }
                None => {
                    self.done = true;
                    self.finish_partition(ctx)?;
                }
            }
        }
    }
}

/// `rows` in (partition, order) order, each followed by one value per call.
pub(super) fn window(
    rows: Vec<Row>,
    partition: &[Expr],
    order: &[SortKey],
    calls: &[WindowCall],
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    let mut keyed = Vec::with_capacity(rows.len());
    for r in rows {
        let pk = partition_key(partition, &r, ctx)?;
        let mut ok = KeyBuf::new();
        for k in order {
            encode_value(&eval(&k.expr, &r, ctx)?, k.descending, &mut ok)?;
        }
        keyed.push((pk, ok.into_vec(), r));
    }
    // Stable: rows equal in both keep their input order.
    keyed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut out: Vec<Row> = Vec::with_capacity(keyed.len());
    let mut start = 0;
    while start < keyed.len() {
        let mut end = start + 1;
        while end < keyed.len() && keyed[end].0 == keyed[start].0 {
            end += 1;
        }
        let part = &keyed[start..end];
        // Peer groups: for each row, the first and last row of the rows equal to it in the
        // ORDER BY.
        let mut first_peer = vec![0; part.len()];
        let mut last_peer = vec![0; part.len()];
        let mut g = 0;
        while g < part.len() {
            let mut h = g + 1;
            while h < part.len() && part[h].1 == part[g].1 {
                h += 1;
            }
            for i in g..h {
                first_peer[i] = g;
                last_peer[i] = h - 1;
            }
            g = h;
        }
        let rows: Vec<&Row> = part.iter().map(|(_, _, r)| r).collect();
        let peers = Peers { first: &first_peer, last: &last_peer };
        let mut values: Vec<Vec<Value>> = Vec::with_capacity(calls.len());
        for call in calls {
            ctx.yield_point()?;
            values.push(call_values(call, &rows, &peers, ctx)?);
        }
        for (i, (_, _, r)) in keyed[start..end].iter().enumerate() {
            let mut row = r.clone();
            row.extend(values.iter().map(|v| v[i].clone()));
            out.push(row);
        }
        start = end;
    }
    Ok(out)
}

/// A partition's peer groups, by row.
struct Peers<'a> {
    first: &'a [usize],
    last: &'a [usize],
}

/// One call's values for the rows of one partition, in order.
fn call_values(call: &WindowCall, rows: &[&Row], peers: &Peers, ctx: &mut ExecCtx) -> SqlResult<Vec<Value>> {
    let n = rows.len();
    let float = |x: f64| Value::Float(x);
    Ok(match &call.func {
        WindowFunc::RowNumber => (1..=n as i64).map(Value::Int).collect(),
        WindowFunc::NextValue { db, sequence } => {
            let db = ctx.db_name(db);
            (0..n).map(|_| crate::sequences::next_value(ctx, &db, sequence)).collect::<SqlResult<Vec<_>>>()?
        }
        WindowFunc::Rank => (0..n).map(|i| Value::Int(peers.first[i] as i64 + 1)).collect(),
        WindowFunc::DenseRank => {
            let mut out = Vec::with_capacity(n);
            let mut rank = 0;
            for i in 0..n {
                if peers.first[i] == i {
                    rank += 1;
                }
                out.push(Value::Int(rank));
            }
            out
        }
        WindowFunc::PercentRank => {
            (0..n).map(|i| float(if n <= 1 { 0.0 } else { peers.first[i] as f64 / (n - 1) as f64 })).collect()
        }
        WindowFunc::CumeDist => (0..n).map(|i| float((peers.last[i] + 1) as f64 / n as f64)).collect(),
        WindowFunc::Ntile => {
            let buckets = match eval(&call.args[0], rows[0], ctx)? {
                Value::Int(b) if b > 0 => b as usize,
                _ => return Err(msg::NTILE_NOT_POSITIVE.err()),
            };
            // The first n % buckets groups have one row more.
            let (size, extra) = (n / buckets, n % buckets);
            let mut out = Vec::with_capacity(n);
            let mut bucket = 1;
            let mut left = size + usize::from(extra > 0);
            for _ in 0..n {
                if left == 0 {
                    bucket += 1;
                    left = size + usize::from(bucket <= extra);
                }
                out.push(Value::Int(bucket as i64));
                left -= 1;
            }
            out
        }
        WindowFunc::Lag | WindowFunc::Lead => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let offset = match eval(&call.args[1], rows[i], ctx)? {
                    Value::Int(o) if o >= 0 => o,
                    Value::Null => {
                        out.push(Value::Null);
                        continue;
                    }
                    _ => return Err(msg::NEGATIVE_LAG_OFFSET.err()),
                };
                let at = if matches!(call.func, WindowFunc::Lag) {
                    i.checked_sub(offset as usize)
                } else {
                    i.checked_add(offset as usize).filter(|&j| j < n)
                };
                out.push(match at {
                    Some(j) => eval(&call.args[0], rows[j], ctx)?,
                    None => eval(&call.args[2], rows[i], ctx)?,
                });
            }
            out
        }
        WindowFunc::FirstValue | WindowFunc::LastValue => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                out.push(match frame_of(call.frame, i, n, peers) {
                    Some((lo, hi)) => {
                        let at = if matches!(call.func, WindowFunc::FirstValue) { lo } else { hi };
                        eval(&call.args[0], rows[at], ctx)?
                    }
                    None => Value::Null,
                });
            }
            out
        }
        WindowFunc::Aggregate(agg) => {
            let arg = |ctx: &mut ExecCtx, r: &Row| match &agg.arg {
                Some(e) => eval(e, r, ctx),
                None => Ok(Value::Int(1)),
            };
            let mut out = Vec::with_capacity(n);
            if call.frame.start == FrameBound::UnboundedPreceding {
                // Running: the accumulator takes each row once, as the frame's end moves on.
                let mut state = AggState::new();
                let mut taken = 0;
                for i in 0..n {
                    let hi = frame_of(call.frame, i, n, peers).map_or(0, |(_, hi)| hi + 1);
                    while taken < hi {
                        let v = arg(ctx, rows[taken])?;
                        accumulate(agg, &mut state, v, &mut ctx.session.null_eliminated)?;
                        taken += 1;
                    }
                    out.push(finish(agg, state.clone())?);
                }
            } else {
                for i in 0..n {
                    let mut state = AggState::new();
                    if let Some((lo, hi)) = frame_of(call.frame, i, n, peers) {
                        for r in &rows[lo..=hi] {
                            let v = arg(ctx, r)?;
                            accumulate(agg, &mut state, v, &mut ctx.session.null_eliminated)?;
                        }
                    }
                    out.push(finish(agg, state)?);
                }
            }
            out
        }
    })
}

/// The rows (first, last) of row `i`'s frame in a partition of `n` rows; None when it is
/// empty.
fn frame_of(frame: WindowFrame, i: usize, n: usize, peers: &Peers) -> Option<(usize, usize)> {
    let bound = |b: FrameBound, start: bool| -> i64 {
        match b {
            FrameBound::UnboundedPreceding => 0,
            FrameBound::UnboundedFollowing => n as i64 - 1,
            FrameBound::CurrentRow if frame.rows => i as i64,
            FrameBound::CurrentRow if start => peers.first[i] as i64,
            FrameBound::CurrentRow => peers.last[i] as i64,
            FrameBound::Preceding(k) => i as i64 - k as i64,
            FrameBound::Following(k) => i as i64 + k as i64,
        }
    };
    let lo = bound(frame.start, true).max(0);
    let hi = bound(frame.end, false).min(n as i64 - 1);
    (lo <= hi).then_some((lo as usize, hi as usize))
}
