//! Scans and seeks of a table's index: the key range a scan reads, point lookups, and
//! range scans at READ COMMITTED, which stream: the scan reads a batch of rows at a time
//! and goes on from the last key read when its consumer wants more.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use tessera_access::key::KeyBuf;
use tessera_access::row::RowSchema;
use tessera_database::{Direction, ReadLocks, TableId};

use super::cursor::{Cursor, Held, Rows};
use super::grant::Collector;
use super::locked_read::{locked_rows, run_locked_scan};
use super::{decode_row, encode_prefix, eval, missing_tree, prefix_successor, RangeBound, Row, ScanNode};
use crate::runtime::ExecCtx;
use crate::statistics::ReadAheadMark;
use crate::types::Value;
use tessera_errors::SqlResult;

/// Rows a streaming scan reads from storage at a time.
const SCAN_BATCH_ROWS: usize = 256;

pub(super) type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

pub(super) fn scan_range(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Option<KeyRange>> {
    let mut values = Vec::with_capacity(node.prefix.len() + 1);
    for e in &node.prefix {
        values.push(eval(e, corr, ctx)?);
    }
    let bound_value = |b: &Option<RangeBound>, ctx: &mut ExecCtx| -> SqlResult<Option<(Value, bool)>> {
        match b {
            Some(b) => Ok(Some((eval(&b.value, corr, ctx)?, b.inclusive))),
            None => Ok(None),
        }
    };
    let lower = bound_value(&node.lower, ctx)?;
    let upper = bound_value(&node.upper, ctx)?;
    // Comparisons with NULL are never true: the range is empty.
    if values.iter().chain(lower.iter().map(|b| &b.0)).chain(upper.iter().map(|b| &b.0)).any(Value::is_null) {
        return Ok(None);
    }
    let mut key = KeyBuf::new();
    encode_prefix(&node.table, node.index, &values, &mut key)?;
    let prefix = key.into_vec();
    let with = |extra: &Value| -> SqlResult<Vec<u8>> {
        let mut all = values.clone();
        all.push(extra.clone());
        let mut k = KeyBuf::new();
        encode_prefix(&node.table, node.index, &all, &mut k)?;
        Ok(k.into_vec())
    };
    // A one-sided range must not run into the column's NULLs (which sort first, or last
    // in a descending column): no comparison with NULL is true.
    let desc = node.table.indexes[node.index].columns.get(values.len()).is_some_and(|c| c.1);
    let lo = match &lower {
        Some((v, true)) => Bound::Included(with(v)?),
        Some((v, false)) => {
            let k = with(v)?;
            prefix_successor(&k).map_or(Bound::Excluded(k), Bound::Included)
        }
        None if upper.is_some() && !desc => {
            let k = with(&Value::Null)?;
            prefix_successor(&k).map_or(Bound::Excluded(k), Bound::Included)
        }
        None if prefix.is_empty() => Bound::Unbounded,
        None => Bound::Included(prefix.clone()),
    };
    let hi = match &upper {
        Some((v, true)) => prefix_successor(&with(v)?).map_or(Bound::Unbounded, Bound::Excluded),
        Some((v, false)) => Bound::Excluded(with(v)?),
        None if lower.is_some() && desc => Bound::Excluded(with(&Value::Null)?),
        None if prefix.is_empty() => Bound::Unbounded,
        None => prefix_successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded),
    };
    Ok(Some((lo, hi)))
}

/// A unique index pinned on its whole key: one point lookup instead of a range scan.
fn run_point_lookup(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    let mut values = Vec::with_capacity(node.prefix.len());
    for e in &node.prefix {
        let v = eval(e, corr, ctx)?;
        if v.is_null() {
            return Ok(Vec::new());
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
        return Ok(out.into_parts().0);
    }
    let (db_name, table) = ctx.table(&node.db, &node.table)?;
    let table = &table;
    let schema = ctx.row_schema(table)?;
    let tx = ctx.transaction(&db_name)?;
    let db = tx.database().clone();
    let tree = db.table(&table.indexes[node.index].tree).ok_or_else(|| missing_tree(&table.name))?;
    let (row_key, found) = if node.index == 0 {
        let found = tx.get_with(tree, key.as_bytes(), |bytes| decode_row(table, &schema, bytes))?;
        (key.as_bytes().to_vec(), found)
    } else {
        let Some(row_key) = tx.get(tree, key.as_bytes())? else { return Ok(Vec::new()) };
        let rows = db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?;
        let found = tx.get_with(rows, &row_key, |bytes| decode_row(table, &schema, bytes))?;
        (row_key, found)
    };
    let Some(row) = found else { return Ok(Vec::new()) };
    let mut row = row?;
    if node.with_key {
        row.push(Value::Binary(Arc::from(row_key)));
    }
    Ok(vec![row])
}

/// Opens a scan or seek: a point lookup, a locking scan (its rows found and locked
/// first), or a streaming range scan. Under SET STATISTICS IO its pages are charged to its
/// table (a seek of one key of a unique index is no scan, as SQL Server counts).
pub(super) fn open_scan<'p>(node: &'p ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Rows<'p>> {
    let point = node.single && node.lower.is_none() && node.upper.is_none();
    let db = ctx.db_name(&node.db);
    crate::statistics::table_read(&db, &node.table, u64::from(!point), || open_rows(node, corr, ctx))
}

fn open_rows<'p>(node: &'p ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Rows<'p>> {
    if node.single && node.lower.is_none() && node.upper.is_none() {
        return Ok(Box::new(Held::loose(run_point_lookup(node, corr, ctx)?)));
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
    /// The database the scan reads.
    db: String,
    schema: RowSchema,
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
            let mut r = decode_row(&node.table, &self.schema, bytes)?;
            if node.with_key {
                r.push(Value::Binary(Arc::from(row_key)));
            }
            last = Some(key);
            self.batch.push_back(r);
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
}

impl Cursor for RangeScan<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>> {
        loop {
            if let Some(r) = self.batch.pop_front() {
                return Ok(Some(r));
            }
            if self.done {
                return Ok(None);
            }
            ctx.check_cancel()?;
            let (node, mut mark, db) = (self.node, self.read_ahead, self.db.clone());
            crate::statistics::streaming_read(&db, &node.table, &mut mark, || self.read_batch(ctx))?;
            self.read_ahead = mark;
        }
    }
}
