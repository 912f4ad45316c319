//! Scans that take row locks (UPDLOCK, XLOCK, HOLDLOCK, UPDATE/DELETE targets): candidates
//! found first, then each row locked and read again; TOP over such a scan locks row by row.

use super::evaluate::is_true;
use super::missing_tree;
use super::ranges::{scan_range, KeyRange};
use crate::encoding::{decode_row, index_entry};
use crate::runtime::ExecCtx;
use std::sync::Arc;
use tessera_database::{Direction, OnLocked, ReadLocks, RowLock};
use tessera_errors::{msg, SqlError, SqlResult};
use tessera_governance::grant::{Collector, Reservation};
use tessera_semantics::plan::{Expr, Plan, Row, ScanNode};
use tessera_semantics::types::Value;

/// A scan that takes the locks `locks` asks for (see `tessera_semantics::locking`). Candidates are
/// found by a scan that waits for (or, with READPAST, skips) rows other transactions
/// changed; then each row is locked and read again through its clustered key, so a row
/// returned under a U, S or X lock is the row as it is while the lock is held.
pub(super) fn run_locked_scan(
    node: &ScanNode,
    locks: ReadLocks,
    range: KeyRange,
    ctx: &mut ExecCtx,
) -> SqlResult<Collector> {
    let candidates = locked_candidates(node, locks, &range, ctx)?;
    let mut out = Collector::new(&ctx.grant());
    locked_rows(node, locks, candidates, &range, None, usize::MAX, ctx, &mut out)?;
    Ok(out)
}

/// A row a locking scan found: its clustered key, and the nonclustered index entry that
/// led to it (None when found through the clustered index, or a point key to look up).
type Candidate = (Vec<u8>, Option<Vec<u8>>);

/// The candidates of a locking scan in key order: clustered keys, with the index entry
/// that led to each through a nonclustered index; rows others are changing are waited
/// for (or skipped, with READPAST).
fn locked_candidates(
    node: &ScanNode,
    locks: ReadLocks,
    range: &KeyRange,
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Candidate>> {
    let (db, table) = ctx.table(&node.db, &node.table)?;
    crate::index_usage::add(&table.indexes[node.index].usage.range_scans, 1);
    let tx = ctx.transaction(&db)?;
    let tree = tx.database().table(&table.indexes[node.index].tree).ok_or_else(|| missing_tree(&table.name))?;
    tx.lock_table_for_read(tree, locks)?;
    let on_locked = match locks.row {
        RowLock::Uncommitted => OnLocked::Read,
        _ if locks.skip_locked => OnLocked::Skip,
        _ => OnLocked::Wait,
    };
    let dir = if node.reverse { Direction::Backward } else { Direction::Forward };
    let mut held = Reservation::new(&ctx.grant());
    let (lo, hi) = (range.0.as_ref().map(|v| &v[..]), range.1.as_ref().map(|v| &v[..]));
    let mut find = |tx: &mut tessera_database::Transaction| -> SqlResult<Vec<Candidate>> {
        let mut candidates = Vec::new();
        for item in tx.scan_with(tree, lo, hi, dir, on_locked) {
            let (key, value) = item?;
            // An index entry leads to its row's clustered key.
            let candidate = if node.index == 0 { (key, None) } else { (value, Some(key)) };
            held.take(48 + candidate.0.len() + candidate.1.as_ref().map_or(0, Vec::len))?;
            candidates.push(candidate);
            if node.single {
                break;
            }
        }
        Ok(candidates)
    };
    let tx = ctx.transaction(&db)?;
    // READCOMMITTEDLOCK and SERIALIZABLE find the rows as they are now, never versions.
    if locks.row != RowLock::CommittedLocking && !locks.ranges {
        return find(tx);
    }
    tx.reading_current(|tx| {
        let mut candidates = find(tx)?;
        if !locks.ranges {
            return Ok(candidates);
        }
        // SERIALIZABLE: the ranges below every key read and the one above the range are
        // locked, then the range is read again: a key inserted before its range was
        // locked is found then (its range locked in turn); none can be inserted after.
        loop {
            for (row_key, entry) in &candidates {
                tx.lock_range(tree, Some(entry.as_deref().unwrap_or(row_key)))?;
            }
            match &range.1 {
                std::ops::Bound::Included(k) => tx.lock_ranges_above(tree, &std::ops::Bound::Excluded(k.clone()))?,
                std::ops::Bound::Excluded(k) => tx.lock_ranges_above(tree, &std::ops::Bound::Included(k.clone()))?,
                std::ops::Bound::Unbounded => tx.lock_range(tree, None)?,
            }
            let again = find(tx)?;
            let new_keys = again.iter().any(|c| !candidates.contains(c));
            candidates = again;
            if !new_keys {
                return Ok(candidates);
            }
        }
    })
}

/// An update conflict (3960) names the table as SQL Server does; other errors pass.
fn name_conflict(e: tessera_database::Error, table: &tessera_semantics::catalog::Table, db: &str) -> SqlError {
    match e {
        tessera_database::Error::UpdateConflict { .. } => {
            msg::UPDATE_CONFLICT.with(&[&format!("{}.{}", table.schema, table.name), &db])
        }
        e => e.into(),
    }
}

/// The scan under a TOP that may lock rows one at a time and stop at the limit: a locking
/// read (UPDLOCK, XLOCK, HOLDLOCK, an UPDATE/DELETE target) of the clustered index, under
/// at most a filter, a projection of columns, and a sort its order already satisfies.
pub(super) struct LockedTop<'p> {
    pub(super) node: &'p ScanNode,
    pub(super) filter: Option<&'p Expr>,
    pub(super) project: Option<&'p [Expr]>,
}

pub(super) fn locked_top_input<'p>(input: &'p Plan, ctx: &ExecCtx) -> Option<LockedTop<'p>> {
    let (under_sort, sort) = match input {
        Plan::Sort { input, keys } => (&**input, Some(keys)),
        other => (other, None),
    };
    let (inner, project) = match under_sort {
        Plan::Project { input, exprs } => (&**input, Some(&exprs[..])),
        other => (other, None),
    };
    let (node, filter) = inner.filtered_scan()?;
    let locks = crate::read_locks::read_locks(node.hints, node.with_key, &ctx.session.options.isolation_level);
    if node.index != 0 || node.reverse || !matches!(locks.row, RowLock::Keep { .. }) {
        return None;
    }
    let sorted = sort.is_none_or(|keys| under_sort.delivers_order(keys));
    sorted.then_some(LockedTop { node, filter, project })
}

/// TOP over a locking scan: candidates in key order, each locked and read again, kept if
/// the filter holds on the row as locked, until `limit` rows qualify. A row that does not
/// qualify keeps no lock it did not hold before, so `SELECT TOP 1 … WITH (UPDLOCK,
/// READPAST) … ORDER BY id` — a work queue — locks the one row it takes.
pub(super) fn run_locked_top(
    node: &ScanNode,
    filter: Option<&Expr>,
    limit: usize,
    corr: &[Value],
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    let db = ctx.db_name(&node.db);
    crate::statistics::table_read(&db, &node.table, 1, || {
        let Some(range) = scan_range(node, corr, ctx)? else { return Ok(Vec::new()) };
        let locks = crate::read_locks::read_locks(node.hints, node.with_key, &ctx.session.options.isolation_level);
        let candidates = locked_candidates(node, locks, &range, ctx)?;
        let mut out = Collector::new(&ctx.grant());
        locked_rows(node, locks, candidates, &range, filter, limit, ctx, &mut out)?;
        Ok(out.into_parts().0)
    })
}

/// Reads each candidate row (clustered key, and the index entry that led to it) with
/// `locks`, until `limit` rows are out. A row found through a nonclustered index is
/// returned only if its index key still lies in `range` now that it is locked (another
/// transaction may have changed it between the index read and the lock); a row `filter`
/// rejects is left out and keeps no lock it did not hold before.
#[allow(clippy::too_many_arguments)]
pub(super) fn locked_rows(
    node: &ScanNode,
    locks: ReadLocks,
    candidates: Vec<Candidate>,
    range: &KeyRange,
    filter: Option<&Expr>,
    limit: usize,
    ctx: &mut ExecCtx,
    out: &mut Collector,
) -> SqlResult<()> {
    let (db_name, table) = ctx.table(&node.db, &node.table)?;
    let table = &table;
    let schema = ctx.row_schema(table)?;
    let lobs = ctx.lobs(&db_name, table, &schema)?;
    let tx = ctx.transaction(&db_name)?;
    let db = tx.database().clone();
    let rows_tree = db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?;
    let index_tree = db.table(&table.indexes[node.index].tree).ok_or_else(|| missing_tree(&table.name))?;
    tx.lock_table_for_read(rows_tree, locks)?;
    for (key, entry) in candidates {
        if out.rows.len() >= limit {
            break;
        }
        ctx.yield_point()?;
        let tx = ctx.transaction(&db_name)?;
        // Single-row retrievals: a point lookup's, and the row of an index entry.
        let point = node.single && node.lower.is_none() && node.upper.is_none();
        if point {
            crate::index_usage::add(&table.indexes[node.index].usage.singleton_lookups, 1);
        }
        // A point lookup through a nonclustered index: its entry first (its key is exact).
        let (row_key, entry) = match entry {
            Some(e) => (key, Some(e)),
            None if node.index == 0 => (key, None),
            None => match tx.get(index_tree, &key)? {
                Some(row_key) => (row_key, Some(key)),
                None => continue,
            },
        };
        if node.index != 0 {
            crate::index_usage::add(&table.indexes[0].usage.singleton_lookups, 1);
        }
        let held = filter.is_some() && tx.holds_key(rows_tree, &row_key);
        let found = tx.get_locked(rows_tree, &row_key, locks, |bytes| decode_row(table, &schema, bytes, &lobs));
        let Some(row) = found.map_err(|e| name_conflict(e, table, &db_name))? else {
            continue;
        };
        let mut row = row?;
        if let Some(entry) = entry {
            let now = index_entry(table, node.index, &row, &row_key)?;
            let in_range = if node.single {
                entry == now
            } else {
                std::ops::RangeBounds::contains(&(range.0.as_ref(), range.1.as_ref()), &now)
            };
            if !in_range {
                continue;
            }
        }
        if node.with_key {
            row.push(Value::Binary(Arc::from(&row_key[..])));
        }
        if let Some(f) = filter {
            if !is_true(f, &row, ctx)? {
                if !held {
                    ctx.transaction(&db_name)?.release_key(rows_tree, &row_key);
                }
                continue;
            }
        }
        out.push(row)?;
        if node.single {
            break;
        }
    }
    Ok(())
}
