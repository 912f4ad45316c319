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
use crate::encoding::{decode_columns, decode_row, encode_prefix};
use crate::grant::Collector;
use crate::runtime::ExecCtx;
use crate::statistics::ReadAheadMark;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;
use tessera_access::key::KeyBuf;
use tessera_access::row::RowSchema;
use tessera_database::{Direction, ReadLocks, TableId};
use tessera_errors::SqlResult;
use tessera_semantics::plan::{columns_used, Expr, Row, ScanNode};
use tessera_semantics::types::Value;

/// Rows a streaming scan reads from storage at a time.
const SCAN_BATCH_ROWS: usize = 256;

/// A unique index pinned on its whole key: one point lookup instead of a range scan.
fn run_point_lookup(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
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
    let locks = node.hints.read_locks(node.with_key, &ctx.session.options.isolation_level);
    if locks != ReadLocks::COMMITTED {
        let candidates = vec![(key.as_bytes().to_vec(), None)];
        let mut out = Collector::new(&ctx.grant());
        locked_rows(node, locks, candidates, &(Bound::Unbounded, Bound::Unbounded), None, usize::MAX, ctx, &mut out)?;
        let mut rows = out.into_parts().0;
        debug_assert!(rows.len() <= 1, "a point lookup found {} rows", rows.len());
        return Ok(rows.pop());
    }
    let (db_name, table) = ctx.table(&node.db, &node.table)?;
    let table = &table;
    let schema = ctx.row_schema(table)?;
    let tx = ctx.transaction(&db_name)?;
    let db = tx.database().clone();
    let tree = db.table(&table.indexes[node.index].tree).ok_or_else(|| missing_tree(&table.name))?;
    let (row_key, found) = if node.index == 0 {
        let found = tx.get_with(tree, key.as_bytes(), |bytes| decode_row(table, &schema, bytes))?;
        // The storage key is copied out only for a plan that asked for it.
        (node.with_key.then(|| key.as_bytes().to_vec()), found)
    } else {
        let Some(row_key) = tx.get(tree, key.as_bytes())? else { return Ok(None) };
        let rows = db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?;
        let found = tx.get_with(rows, &row_key, |bytes| decode_row(table, &schema, bytes))?;
        (node.with_key.then_some(row_key), found)
    };
    let Some(row) = found else { return Ok(None) };
    let mut row = row?;
    if let Some(row_key) = row_key {
        row.push(Value::Binary(Arc::from(row_key)));
    }
    Ok(Some(row))
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
        let point = node.single && node.lower.is_none() && node.upper.is_none();
        let locks = node.hints.read_locks(node.with_key, &ctx.session.options.isolation_level);
        if point || node.with_key || locks != ReadLocks::COMMITTED {
            return None;
        }
        let mut used = Vec::new();
        if !columns_used(predicate, &mut used) {
            return None;
        }
        let mut reads = vec![false; node.table.columns.len()];
        for c in used {
            *reads.get_mut(c)? = true;
        }
        reads.iter().any(|r| !r).then_some(ScanFilter { predicate, reads })
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
    let point = node.single && node.lower.is_none() && node.upper.is_none();
    let db = ctx.db_name(&node.db);
    crate::statistics::table_read(&db, &node.table, u64::from(!point), || open_rows(node, filter, corr, ctx))
}

fn open_rows<'p>(
    node: &'p ScanNode,
    filter: Option<ScanFilter<'p>>,
    corr: &[Value],
    ctx: &mut ExecCtx,
) -> SqlResult<Rows<'p>> {
    debug_assert!(filter.is_none() || !(node.single && node.lower.is_none() && node.upper.is_none()));
    if node.single && node.lower.is_none() && node.upper.is_none() {
        return Ok(Box::new(OneRow(run_point_lookup(node, corr, ctx)?)));
    }
    let Some((lo, hi)) = scan_range(node, corr, ctx)? else { return Ok(Box::new(Held::loose(Vec::new()))) };
    let locks = node.hints.read_locks(node.with_key, &ctx.session.options.isolation_level);
    if locks != ReadLocks::COMMITTED {
        return Ok(Box::new(Held::new(run_locked_scan(node, locks, (lo, hi), ctx)?)));
    }
    let (db_name, table) = ctx.table(&node.db, &node.table)?;
    let schema = ctx.row_schema(&table)?;
    let tx = ctx.transaction(&db_name)?;
    let db = tx.database().clone();
    let tree = db.table(&table.indexes[node.index].tree).ok_or_else(|| missing_tree(&table.name))?;
    let rows_tree = if node.index == 0 {
        None
    } else {
        Some(db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?)
    };
    let dir = if node.reverse { Direction::Backward } else { Direction::Forward };
    Ok(Box::new(RangeScan {
        node,
        filter,
        read: Vec::new(),
        unfiltered: VecDeque::new(),
        db: db_name,
        schema,
        tree,
        rows_tree,
        lo,
        hi,
        dir,
        batch: VecDeque::new(),
        done: false,
        read_ahead: ReadAheadMark::now(),
    }))
}

/// A range scan at READ COMMITTED, read [`SCAN_BATCH_ROWS`] rows at a time: each batch
/// is a new storage scan from the key after the last one read, so nothing is held
/// between batches but that key.
struct RangeScan<'p> {
    node: &'p ScanNode,
    filter: Option<ScanFilter<'p>>,
    /// With a filter: the batch's stored rows (reused), and the rows not yet filtered:
    /// the columns the filter reads, and where the row's bytes are in `read`.
    read: Vec<u8>,
    unfiltered: VecDeque<(Row, std::ops::Range<usize>)>,
    /// The database the scan reads.
    db: Arc<str>,
    schema: Arc<RowSchema>,
    tree: TableId,
    /// Through a nonclustered index: the tree holding the rows.
    rows_tree: Option<TableId>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    dir: Direction,
    batch: VecDeque<Row>,
    done: bool,
    /// SET STATISTICS IO: read-ahead counted up to the last batch.
    read_ahead: ReadAheadMark,
}

impl RangeScan<'_> {
    fn read_batch(&mut self, ctx: &mut ExecCtx) -> SqlResult<()> {
        let node = self.node;
        self.read.clear();
        let tx = ctx.transaction(&self.db)?;
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
            match &self.filter {
                Some(f) => {
                    let start = self.read.len();
                    self.read.extend_from_slice(bytes);
                    let columns = decode_columns(&node.table, &self.schema, bytes, &f.reads)?;
                    self.unfiltered.push_back((columns, start..self.read.len()));
                }
                None => {
                    let mut r = decode_row(&node.table, &self.schema, bytes)?;
                    if node.with_key {
                        r.push(Value::Binary(Arc::from(row_key)));
                    }
                    self.batch.push_back(r);
                }
            }
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
        Ok(())
    }

    /// The next row the filter keeps among those read, decoded in full; evaluated one at a
    /// time as the consumer asks, as a filter above the scan would.
    fn next_kept(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        let Some(f) = &self.filter else { return Ok(None) };
        while let Some((columns, bytes)) = self.unfiltered.pop_front() {
            if is_true(f.predicate, &columns, ctx)? {
                return Ok(Some(decode_row(&self.node.table, &self.schema, &self.read[bytes])?));
            }
        }
        Ok(None)
    }
}

impl Cursor for RangeScan<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        loop {
            if let Some(r) = self.batch.pop_front() {
                return Ok(Some(r));
            }
            if let Some(r) = self.next_kept(ctx)? {
                return Ok(Some(r));
            }
            if self.done {
                return Ok(None);
            }
            ctx.yield_after_rows(SCAN_BATCH_ROWS as u32)?;
            let (node, mut mark, db) = (self.node, self.read_ahead, self.db.clone());
            crate::statistics::streaming_read(&db, &node.table, &mut mark, || self.read_batch(ctx))?;
            self.read_ahead = mark;
        }
    }
}
