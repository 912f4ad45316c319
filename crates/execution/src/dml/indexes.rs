//! Nonclustered index maintenance: entries added and removed with their rows, and a new
//! index filled from the table.

use super::constraints::{key_values, map_duplicate};
use super::{object_name, TargetAt};
use crate::index_usage::add;
use crate::runtime::ExecCtx;
use tessera_access::key::KeyBuf;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{Index, Table};
use tessera_semantics::plan::Row;
use tessera_semantics::types::Value;

pub(super) fn index_key(table: &Table, index: &Index, row: &[Value]) -> SqlResult<Vec<u8>> {
    let mut k = KeyBuf::new();
    for &(col, desc) in &index.columns {
        crate::encoding::encode_key(&row[col], &table.columns[col].ty, desc, &mut k)?;
    }
    Ok(k.into_vec())
}

/// Whether `row` has an entry in index `ix`: every row does, but in a filtered index,
/// where only those its predicate holds true for do.
pub(super) fn has_entry(ctx: &mut ExecCtx, target: &TargetAt, ix: &Index, row: &[Value]) -> SqlResult<bool> {
    if ix.filter.is_none() {
        return Ok(true);
    }
    let position = target.table.indexes.iter().position(|i| i.id == ix.id);
    match position.and_then(|p| target.filters.get(p)).and_then(Option::as_ref) {
        Some(predicate) => Ok(crate::exec::eval(predicate, row, ctx)? == Value::Bit(true)),
        None => Ok(true),
    }
}

/// Adds the entry of `row` (whose clustered key is `key`) to index `ix`, if the index
/// has one for it; whether it did. Not counted: see [`insert_index_entry`].
pub(super) fn add_index_entry(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    ix: &Index,
    row: &[Value],
    key: &[u8],
) -> SqlResult<bool> {
    if !has_entry(ctx, target, ix, row)? {
        return Ok(false);
    }
    let ikey = index_key(&target.table, ix, row)?;
    let t = ctx.tree(&target.db, &ix.tree, &target.table)?;
    ctx.transaction(&target.db)?
        .index_insert(t, &ikey, key, ix.unique)
        .map_err(|e| map_duplicate(e, &target.table, ix, row))?;
    Ok(true)
}

/// [`add_index_entry`] for a data change: the entry counts among the index's leaf
/// inserts (sys.dm_db_index_operational_stats).
pub(super) fn insert_index_entry(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    ix: &Index,
    row: &[Value],
    key: &[u8],
) -> SqlResult<()> {
    if add_index_entry(ctx, target, ix, row, key)? {
        add(&ix.usage.leaf_inserts, 1);
    }
    Ok(())
}

/// Removes the entry of `row` from index `ix`, if the index has one for it (a leaf
/// delete of the index).
pub(super) fn delete_index_entry(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    ix: &Index,
    row: &[Value],
    key: &[u8],
) -> SqlResult<()> {
    if !has_entry(ctx, target, ix, row)? {
        return Ok(());
    }
    let ikey = index_key(&target.table, ix, row)?;
    let t = ctx.tree(&target.db, &ix.tree, &target.table)?;
    ctx.transaction(&target.db)?.index_delete(t, &ikey, key, ix.unique)?;
    add(&ix.usage.leaf_deletes, 1);
    Ok(())
}

/// Adds the entry of each of `rows` (the table's rows with their keys, read by the caller
/// in the session's transaction: see `ddl::rebuild::in_own_transaction`) to a new
/// nonclustered index (a build, not inserts: SQL Server's index counts start at zero).
pub fn build_index(ctx: &mut ExecCtx, target: &TargetAt, ix: &Index, rows: &[(Vec<u8>, Row)]) -> SqlResult<()> {
    for (k, r) in rows {
        add_index_entry(ctx, target, ix, r, k).map_err(|e| {
            if e.number == 2627 || e.number == 2601 {
                let key = format!(" The duplicate key value is ({}).", key_values(&target.table, ix, r));
                msg::CREATE_UNIQUE_INDEX_DUPLICATE.with(&[&object_name(&target.table), &ix.name, &key])
            } else {
                e
            }
        })?;
    }
    Ok(())
}
