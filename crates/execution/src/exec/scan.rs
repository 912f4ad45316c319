//! Scans and seeks of a table's index: the key range a scan reads, point lookups, and
//! range scans at READ COMMITTED, which stream: the scan reads a batch of rows at a time
//! and goes on from the last key read when its consumer wants more. A filter right above
//! such a scan is evaluated inside it on the columns it reads ([`ScanFilter`]), so a row
//! it rejects is never decoded in full.

use super::evaluate::{eval, is_true};
use super::locked_read::{locked_rows, run_locked_scan};
use super::missing_tree;
use super::ranges::scan_range;
use super::rows::{Cursor, Held, OneRow, Rows};
use crate::encoding::{decode_columns, decode_row, encode_prefix, Lobs};
use crate::index_usage::add;
use crate::runtime::ExecCtx;
use crate::statistics::ReadAheadMark;
use std::collections::VecDeque;
use std::ops::Bound;
use std::ops::Range;
use std::sync::Arc;
use tessera_access::key::KeyBuf;
use tessera_access::row::RowSchema;
use tessera_database::{Direction, ReadLocks, TableId};
use tessera_errors::SqlResult;
use tessera_governance::grant::Collector;
use tessera_semantics::catalog::Table;
use tessera_semantics::plan::{columns_used, Expr, Row, ScanNode};
use tessera_semantics::types::Value;

/// Rows a streaming scan reads from storage at a time.
const SCAN_BATCH_ROWS: usize = 256;

/// Whether a scan or seek of `node` is a point lookup: a unique index pinned on its
/// whole key.
pub(super) fn is_point(node: &ScanNode) -> bool {
    node.single && node.lower.is_none() && node.upper.is_none()
}

/// The table a scan reads, as found in the database the plan runs in, with its layout.
pub(super) struct ScanTarget {
    pub(super) db: Arc<str>,
    pub(super) table: Arc<Table>,
    pub(super) schema: Arc<RowSchema>,
    /// Where the rows' off-row values are read, pinned before the first row is.
    pub(super) lobs: Lobs,
}

impl ScanTarget {
    pub(super) fn of(node: &ScanNode, ctx: &mut ExecCtx) -> SqlResult<ScanTarget> {
        let (db, table) = ctx.table(&node.db, &node.table)?;
        let schema = ctx.row_schema(&table)?;
        let lobs = ctx.lobs(&db, &table, &schema)?;
        Ok(ScanTarget { db, table, schema, lobs })
    }
}

/// The key a point lookup seeks; None when a key value is NULL, which no row matches.
fn point_key(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Option<KeyBuf>> {
    let mut values: smallvec::SmallVec<[Value; 4]> = smallvec::SmallVec::with_capacity(node.prefix.len());
    for e in &node.prefix {
        let v = eval(e, corr, ctx)?;
        if v.is_null() {
            return Ok(None);
        }
        values.push(v);
    }
    let mut key = KeyBuf::new();
    encode_prefix(&node.table, node.index, &values, &mut key)?;
    Ok(Some(key))
}

/// A point lookup at READ COMMITTED: `f` gets the stored row found, in place; the row's
/// storage key comes with it when the plan asked for it.
fn lookup_committed<R>(
    node: &ScanNode,
    target: &ScanTarget,
    key: &[u8],
    ctx: &mut ExecCtx,
    f: impl Fn(&[u8]) -> R,
) -> SqlResult<Option<(R, Option<Vec<u8>>)>> {
    let tx = ctx.transaction(&target.db)?;
    let db = tx.database().clone();
    let table = &target.table;
    let tree = db.table(&table.indexes[node.index].tree).ok_or_else(|| missing_tree(&table.name))?;
    add(&table.indexes[node.index].usage.singleton_lookups, 1);
    let (row_key, found) = if node.index == 0 {
        // The storage key is copied out only for a plan that asked for it.
        (node.with_key.then(|| key.to_vec()), tx.get_with(tree, key, f)?)
    } else {
        let Some(row_key) = tx.get(tree, key)? else { return Ok(None) };
        let rows = db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?;
        add(&table.indexes[0].usage.singleton_lookups, 1);
        let found = tx.get_with(rows, &row_key, f)?;
        (node.with_key.then_some(row_key), found)
    };
    Ok(found.map(|r| (r, row_key)))
}

/// A point lookup, as values.
fn run_point_lookup(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
    let Some(key) = point_key(node, corr, ctx)? else { return Ok(None) };
    let locks = crate::read_locks::read_locks(node.hints, node.with_key, &ctx.session.options.isolation_level);
    if locks != ReadLocks::COMMITTED {
        let candidates = vec![(key.as_bytes().to_vec(), None)];
        let mut out = Collector::new(&ctx.grant());
        locked_rows(node, locks, candidates, &(Bound::Unbounded, Bound::Unbounded), None, usize::MAX, ctx, &mut out)?;
        let mut rows = out.into_parts().0;
        debug_assert!(rows.len() <= 1, "a point lookup found {} rows", rows.len());
        return Ok(rows.pop());
    }
    let target = ScanTarget::of(node, ctx)?;
    let decode = |bytes: &[u8]| decode_row(&target.table, &target.schema, bytes, &target.lobs);
    let Some((row, row_key)) = lookup_committed(node, &target, key.as_bytes(), ctx, decode)? else { return Ok(None) };
    let mut row = row?;
    if let Some(row_key) = row_key {
        row.push(Value::Binary(Arc::from(row_key)));
    }
    Ok(Some(row))
}

/// A point lookup at READ COMMITTED (which the caller made sure of) of a plan without
/// the storage key: the stored row found, as it is stored.
pub(super) fn stored_point_lookup(
    node: &ScanNode,
    target: &ScanTarget,
    corr: &[Value],
    ctx: &mut ExecCtx,
) -> SqlResult<Option<Vec<u8>>> {
    debug_assert!(is_point(node) && !node.with_key);
    let Some(key) = point_key(node, corr, ctx)? else { return Ok(None) };
    Ok(lookup_committed(node, target, key.as_bytes(), ctx, <[u8]>::to_vec)?.map(|(row, _)| row))
}

/// A filter on the rows of a streaming range scan, evaluated inside the scan: only the
/// columns it reads are decoded first, the rest only for the rows it keeps.
pub(super) struct ScanFilter<'p> {
    predicate: &'p Expr,
    /// By column position: whether the predicate reads the column.
    reads: Vec<bool>,
}

impl<'p> ScanFilter<'p> {
    /// The filter `predicate` as the scan of `node` can evaluate it, if it can: a streaming
    /// scan (READ COMMITTED, no point lookup, no storage key column) and a predicate that
    /// reads some of the table's columns but not all of them, and no subquery (which might
    /// read the whole row through outer references).
    pub(super) fn of(node: &ScanNode, predicate: &'p Expr, ctx: &ExecCtx) -> Option<ScanFilter<'p>> {
        let point = is_point(node);
        let locks = crate::read_locks::read_locks(node.hints, node.with_key, &ctx.session.options.isolation_level);
        if point || node.with_key || locks != ReadLocks::COMMITTED {
            return None;
        }
        let filter = ScanFilter::reading(node, predicate);
        filter.reads.iter().any(|r| !r).then_some(filter)
    }

    /// The filter `predicate` on rows of `node`'s table, reading the columns it names, or
    /// all of them when it holds a subquery (or names a column the table lacks).
    pub(super) fn reading(node: &ScanNode, predicate: &'p Expr) -> ScanFilter<'p> {
        let width = node.table.columns.len();
        let mut used = Vec::new();
        let mut reads = vec![false; width];
        if columns_used(predicate, &mut used) && used.iter().all(|&c| c < width) {
            for c in used {
                reads[c] = true;
            }
        } else {
            reads.fill(true);
        }
        ScanFilter { predicate, reads }
    }

    /// Whether the stored row `bytes` passes the filter.
    pub(super) fn keeps(&self, target: &ScanTarget, bytes: &[u8], ctx: &mut ExecCtx) -> SqlResult<bool> {
        let columns = decode_columns(&target.table, &target.schema, bytes, &self.reads, &target.lobs)?;
        is_true(self.predicate, &columns, ctx)
    }
}

/// Opens a scan or seek: a point lookup, a locking scan (its rows found and locked
/// first), or a streaming range scan (with `filter` inside it, if given). Under SET
/// STATISTICS IO its pages are charged to its table (a seek of one key of a unique index
/// is no scan, as SQL Server counts).
pub(super) fn open_scan<'p>(
    node: &'p ScanNode,
    filter: Option<ScanFilter<'p>>,
    corr: &[Value],
    ctx: &mut ExecCtx,
) -> SqlResult<Rows<'p>> {
    if !crate::statistics::counting() {
        return open_rows(node, filter, corr, ctx);
    }
    let point = is_point(node);
    let db = ctx.db_name(&node.db);
    crate::statistics::table_read(&db, &node.table, u64::from(!point), || open_rows(node, filter, corr, ctx))
}

fn open_rows<'p>(
    node: &'p ScanNode,
    filter: Option<ScanFilter<'p>>,
    corr: &[Value],
    ctx: &mut ExecCtx,
) -> SqlResult<Rows<'p>> {
    debug_assert!(filter.is_none() || !is_point(node));
    if is_point(node) {
        return Ok(Box::new(OneRow(run_point_lookup(node, corr, ctx)?)));
    }
    let Some((lo, hi)) = scan_range(node, corr, ctx)? else { return Ok(Box::new(Held::loose(Vec::new()))) };
    let locks = crate::read_locks::read_locks(node.hints, node.with_key, &ctx.session.options.isolation_level);
    if locks != ReadLocks::COMMITTED {
        return Ok(Box::new(Held::new(run_locked_scan(node, locks, (lo, hi), ctx)?)));
    }
    let target = ScanTarget::of(node, ctx)?;
    Ok(Box::new(RangeScan::new(node, filter, target, (lo, hi), ctx)?))
}

/// A row of a range scan's batch not yet handed out: where its stored bytes (and, for a
/// plan that asked for it, its storage key) are in the batch's buffer.
pub(super) struct Pending {
    pub(super) row: Range<usize>,
    key: Range<usize>,
}

/// A range scan at READ COMMITTED, read [`SCAN_BATCH_ROWS`] rows at a time: each batch
/// is a new storage scan from the key after the last one read, so nothing is held
/// between batches but that key. A batch is kept as it is stored; a row becomes values
/// only when its consumer asks for it as values, and only once the filter (if any) has
/// kept it.
pub(super) struct RangeScan<'p> {
    node: &'p ScanNode,
    filter: Option<ScanFilter<'p>>,
    target: ScanTarget,
    /// The batch's stored rows and keys, end to end (the buffer is reused).
    read: Vec<u8>,
    pending: VecDeque<Pending>,
    tree: TableId,
    /// Through a nonclustered index: the tree holding the rows.
    rows_tree: Option<TableId>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    dir: Direction,
    done: bool,
    /// SET STATISTICS IO: read-ahead counted up to the last batch.
    read_ahead: ReadAheadMark,
}

impl<'p> RangeScan<'p> {
    /// A scan of `range` (from `scan_range`); the caller made sure of READ COMMITTED.
    pub(super) fn new(
        node: &'p ScanNode,
        filter: Option<ScanFilter<'p>>,
        target: ScanTarget,
        (lo, hi): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        ctx: &mut ExecCtx,
    ) -> SqlResult<RangeScan<'p>> {
        let tx = ctx.transaction(&target.db)?;
        let db = tx.database().clone();
        let table = &target.table;
        let tree = db.table(&table.indexes[node.index].tree).ok_or_else(|| missing_tree(&table.name))?;
        let rows_tree = if node.index == 0 {
            None
        } else {
            Some(db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?)
        };
        let dir = if node.reverse { Direction::Backward } else { Direction::Forward };
        add(&table.indexes[node.index].usage.range_scans, 1);
        Ok(RangeScan {
            node,
            filter,
            target,
            read: Vec::new(),
            pending: VecDeque::new(),
            tree,
            rows_tree,
            lo,
            hi,
            dir,
            done: false,
            read_ahead: ReadAheadMark::now(),
        })
    }

    pub(super) fn target(&self) -> &ScanTarget {
        &self.target
    }

    /// The bytes of the batch's buffer at `range`.
    pub(super) fn bytes(&self, range: Range<usize>) -> &[u8] {
        &self.read[range]
    }

    fn read_batch(&mut self, ctx: &mut ExecCtx) -> SqlResult<()> {
        debug_assert!(self.pending.is_empty(), "a batch is read once the last one is handed out");
        let node = self.node;
        self.read.clear();
        let tx = ctx.transaction(&self.target.db)?;
        let mut last = None;
        let mut read = 0;
        let mut scan = tx.scan(self.tree, self.lo.as_ref().map(|v| &v[..]), self.hi.as_ref().map(|v| &v[..]), self.dir);
        loop {
            if read == SCAN_BATCH_ROWS {
                break;
            }
            let Some(item) = scan.next() else {
                self.done = true;
                break;
            };
            let (key, value) = item?;
            read += 1;
            let fetched;
            let (row_key, bytes): (&[u8], &[u8]) = match self.rows_tree {
                None => (&key, &value),
                Some(rows) => match tx.get(rows, &value)? {
                    Some(b) => {
                        fetched = b;
                        (&value, &fetched)
                    }
                    // The row went away between the index read and the row read.
                    None => {
                        last = Some(key);
                        continue;
                    }
                },
            };
            let start = self.read.len();
            self.read.extend_from_slice(bytes);
            let row = start..self.read.len();
            if node.with_key {
                self.read.extend_from_slice(row_key);
            }
            self.pending.push_back(Pending { row: row.clone(), key: row.end..self.read.len() });
            last = Some(key);
            if node.single {
                self.done = true;
                break;
            }
        }
        if let Some(k) = last {
            match self.dir {
                Direction::Forward => self.lo = Bound::Excluded(k),
                Direction::Backward => self.hi = Bound::Excluded(k),
            }
        }
        if self.rows_tree.is_some() {
            // Each entry's row, looked up in the clustered index or heap.
            add(&self.target.table.indexes[0].usage.singleton_lookups, read as u64);
        }
        Ok(())
    }

    /// The next row the filter (if any) keeps, evaluated one at a time as the consumer
    /// asks, as a filter above the scan would; a new batch is read when this one is
    /// used up.
    pub(super) fn next_kept(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Pending>> {
        loop {
            while let Some(p) = self.pending.pop_front() {
                match &self.filter {
                    Some(f) if !f.keeps(&self.target, &self.read[p.row.clone()], ctx)? => {}
                    _ => return Ok(Some(p)),
                }
            }
            if self.done {
                return Ok(None);
            }
            ctx.yield_after_rows(SCAN_BATCH_ROWS as u32)?;
            let (node, mut mark, db) = (self.node, self.read_ahead, self.target.db.clone());
            crate::statistics::streaming_read(&db, &node.table, &mut mark, || self.read_batch(ctx))?;
            self.read_ahead = mark;
        }
    }
}

impl Cursor for RangeScan<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        let Some(p) = self.next_kept(ctx)? else { return Ok(None) };
        let mut r = decode_row(&self.target.table, &self.target.schema, &self.read[p.row], &self.target.lobs)?;
        if self.node.with_key {
            r.push(Value::Binary(Arc::from(&self.read[p.key])));
        }
        Ok(Some(r))
    }
}
