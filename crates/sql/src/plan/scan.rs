//! Scans and seeks of a table's index: the key range a scan reads, point lookups, and
//! range scans at READ COMMITTED.

use std::ops::Bound;
use std::sync::Arc;

use tessera_access::key::KeyBuf;
use tessera_database::{Direction, ReadLocks};

use super::locked_read::{locked_rows, run_locked_scan};
use super::{decode_row, encode_prefix, eval, missing_tree, prefix_successor, Collector, RangeBound, Row, ScanNode};
use crate::runtime::ExecCtx;
use crate::types::Value;
use tessera_errors::SqlResult;

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
        let mut out = Collector::new();
        locked_rows(node, locks, candidates, &(Bound::Unbounded, Bound::Unbounded), None, usize::MAX, ctx, &mut out)?;
        return Ok(out.rows);
    }
    let table = &node.table;
    let schema = ctx.row_schema(table)?;
    let tx = ctx.transaction(&node.db)?;
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

/// A scan or seek, its pages charged to its table under SET STATISTICS IO (a seek of one
/// key of a unique index is no scan, as SQL Server counts).
pub(super) fn run_scan(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    let point = node.single && node.lower.is_none() && node.upper.is_none();
    crate::statistics::table_read(&node.db, &node.table, u64::from(!point), || scan_rows(node, corr, ctx))
}

fn scan_rows(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    if node.single && node.lower.is_none() && node.upper.is_none() {
        return run_point_lookup(node, corr, ctx);
    }
    let Some((lo, hi)) = scan_range(node, corr, ctx)? else { return Ok(Vec::new()) };
    let locks = node.hints.read_locks(node.with_key, &ctx.session.options.isolation_level);
    if locks != ReadLocks::COMMITTED {
        return run_locked_scan(node, locks, (lo, hi), ctx);
    }
    let table = &node.table;
    let index = &table.indexes[node.index];
    let schema = ctx.row_schema(table)?;
    let tx = ctx.transaction(&node.db)?;
    let db = tx.database().clone();
    let tree = db.table(&index.tree).ok_or_else(|| missing_tree(&table.name))?;
    let dir = if node.reverse { Direction::Backward } else { Direction::Forward };
    let rows_tree = if node.index == 0 {
        None
    } else {
        Some(db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?)
    };
    let mut out = Collector::new();
    for item in tx.scan(tree, lo.as_ref().map(|v| &v[..]), hi.as_ref().map(|v| &v[..]), dir) {
        let (key, value) = item?;
        let (row_key, bytes) = match rows_tree {
            None => (key, value),
            Some(rows) => match tx.get(rows, &value)? {
                Some(bytes) => (value, bytes),
                // The row went away between the index read and the row read.
                None => continue,
            },
        };
        let mut r = decode_row(table, &schema, &bytes)?;
        if node.with_key {
            r.push(Value::Binary(Arc::from(row_key)));
        }
        out.push(r)?;
        if node.single {
            break;
        }
    }
    Ok(out.rows)
}
