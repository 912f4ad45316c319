//! Queries that hand their rows over as they are stored. A query whose result columns are
//! columns of one table, read at READ COMMITTED by a seek or a scan (a filter evaluated
//! inside it), needs no value made for a result column: its rows go to a sink that
//! takes stored rows ([`ResultSink::takes_stored_rows`]) as the stored row's bytes and
//! where each result column is in them. Only the columns a filter reads become values.
//!
//! [`ResultSink::takes_stored_rows`]: tessera_semantics::output::ResultSink::takes_stored_rows

use super::cursor::top_count;
use super::evaluate::eval;
use super::ranges::scan_range;
use super::scan::{is_point, stored_point_lookup, RangeScan, ScanFilter, ScanTarget};
use super::usage;
use crate::runtime::ExecCtx;
use std::ops::Range;
use tessera_access::row;
use tessera_database::ReadLocks;
use tessera_errors::SqlResult;
use tessera_semantics::output::StoredRow;
use tessera_semantics::plan::{Expr, Plan, ScanNode};
use tessera_semantics::types::SqlType;

/// An open query whose rows come as they are stored.
pub struct StoredRows<'p> {
    source: Source<'p>,
    /// Rows still to hand out at most (TOP).
    left: usize,
    /// The result's column types, and for each result column the table column it is.
    types: Vec<SqlType>,
    columns: Vec<usize>,
    /// Where the result columns are in the row handed out last.
    spans: Vec<Option<Range<usize>>>,
}

enum Source<'p> {
    /// A point lookup's row, read when the query opened; `left` until handed out.
    Point {
        target: ScanTarget,
        row: Vec<u8>,
        left: bool,
        filter: Option<ScanFilter<'p>>,
    },
    Range(RangeScan<'p>),
    /// A key range no row is in.
    Empty,
}

/// What a plan of the shape this file runs reads: the scan, the filter inside it, for
/// each result column the table column it is, and the TOP count over them.
struct Shape<'p> {
    node: &'p ScanNode,
    filter: Option<&'p Expr>,
    columns: Vec<usize>,
    top: Option<&'p Expr>,
}

/// The plan's shape, if it is one whose rows can come as they are stored: a projection of
/// columns (or none) over a scan or a filtered scan, under a sort its input already
/// delivers and a TOP (n) without PERCENT or WITH TIES.
fn shape(plan: &Plan) -> Option<Shape<'_>> {
    match plan {
        Plan::Top { input, count, percent: false, ties } if ties.is_empty() => {
            let inner = shape(input)?;
            inner.top.is_none().then_some(Shape { top: Some(count), ..inner })
        }
        Plan::Sort { input, keys } if input.delivers_order(keys) => shape(input),
        Plan::Project { input, exprs } => {
            let inner = shape(input)?;
            let columns = exprs
                .iter()
                .map(|e| match e {
                    Expr::Column(i) => inner.columns.get(*i).copied(),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Some(Shape { columns, ..inner })
        }
        scan => {
            let (node, filter) = scan.filtered_scan()?;
            Some(Shape { node, filter, columns: (0..node.table.columns.len()).collect(), top: None })
        }
    }
}

/// Opens `plan` to hand its rows over as they are stored, if its shape allows it: a
/// scan at READ COMMITTED that is not asked for its storage keys, of a table whose
/// columns have the result's `types`. A row that keeps a value off the row comes as
/// values instead ([`Next::Values`]). None (nothing opened) otherwise. Boxed, as a range
/// scan's state is a few hundred bytes that would otherwise be copied at each move.
pub fn open_stored<'p>(
    plan: &'p Plan,
    types: Vec<SqlType>,
    ctx: &mut ExecCtx,
) -> SqlResult<Option<Box<StoredRows<'p>>>> {
    let Some(Shape { node, filter, columns, top }) = shape(plan) else { return Ok(None) };
    let locks = crate::read_locks::read_locks(node.hints, node.with_key, &ctx.session.options.isolation_level);
    if node.with_key || locks != ReadLocks::COMMITTED || columns.len() != types.len() {
        return Ok(None);
    }
    ctx.yield_point()?;
    let target = ScanTarget::of(node, ctx)?;
    let stored = target.schema.columns();
    if columns.iter().zip(&types).any(|(&c, ty)| stored.get(c) != Some(ty)) {
        return Ok(None);
    }
    // The run's index use: the scan, on the table it resolved to, and its subqueries'.
    usage::scan_runs(node, &target.db, &target.table, ctx, crate::index_usage::now());
    let bounds = node.lower.iter().chain(&node.upper).map(|b| &b.value);
    usage::expressions_run(node.prefix.iter().chain(bounds).chain(filter).chain(top), ctx);
    let left = match top {
        Some(count) => top_count(&eval(count, &[], ctx)?, false, usize::MAX)?,
        None => usize::MAX,
    };
    let filter = filter.map(|predicate| ScanFilter::reading(node, predicate));
    let source = if crate::statistics::counting() {
        let db = ctx.db_name(&node.db);
        let scans = u64::from(!is_point(node));
        crate::statistics::table_read(&db, &node.table, scans, || open_source(node, target, filter, ctx))?
    } else {
        open_source(node, target, filter, ctx)?
    };
    let spans = Vec::with_capacity(columns.len());
    Ok(Some(Box::new(StoredRows { source, left, types, columns, spans })))
}

fn open_source<'p>(
    node: &'p ScanNode,
    target: ScanTarget,
    filter: Option<ScanFilter<'p>>,
    ctx: &mut ExecCtx,
) -> SqlResult<Source<'p>> {
    if is_point(node) {
        let found = stored_point_lookup(node, &target, &[], ctx)?;
        let left = found.is_some();
        return Ok(Source::Point { target, row: found.unwrap_or_default(), left, filter });
    }
    Ok(match scan_range(node, &[], ctx)? {
        Some(range) => Source::Range(RangeScan::new(node, filter, target, range, ctx)?),
        None => Source::Empty,
    })
}

/// A row of [`StoredRows`]: as it is stored, or — when it keeps a value off the row — as
/// the result's values, read through the scan's pinned `Lobs`.
pub enum Next<'r> {
    Stored(StoredRow<'r>),
    Values(Vec<tessera_semantics::types::Value>),
}

impl StoredRows<'_> {
    /// The next row, or None once there are no more.
    pub fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Next<'_>>> {
        if self.left == 0 {
            return Ok(None);
        }
        let (target, bytes) = match &mut self.source {
            Source::Point { target, row, left, filter } => {
                if !std::mem::take(left) {
                    return Ok(None);
                }
                if let Some(f) = filter {
                    if !f.keeps(target, row, ctx)? {
                        return Ok(None);
                    }
                }
                (&*target, &row[..])
            }
            Source::Range(scan) => {
                let Some(p) = scan.next_kept(ctx)? else { return Ok(None) };
                (scan.target(), scan.bytes(p.row))
            }
            Source::Empty => return Ok(None),
        };
        self.left -= 1;
        if row::has_off_row(bytes) {
            let values = crate::encoding::decode_row(&target.table, &target.schema, bytes, &target.lobs)?;
            return Ok(Some(Next::Values(self.columns.iter().map(|&c| values[c].clone()).collect())));
        }
        row::locate(&target.schema, bytes, &self.columns, &mut self.spans)?;
        Ok(Some(Next::Stored(StoredRow::new(bytes, &self.types, &self.spans, crate::encoding::stored_value))))
    }
}
