//! Rows in the rows tree: clustered keys, the stored form, storing a new row with its
//! index entries, and whole-table reads and loads for DDL.

use super::{TargetAt, MAX_CLUSTERED_KEY};
use crate::encoding::decode_row;
use crate::identity::load_counters;
use crate::runtime::ExecCtx;
use std::sync::atomic::Ordering;
use tessera_access::key::KeyBuf;
use tessera_access::row;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::Table;
use tessera_semantics::plan::Row;
use tessera_semantics::types::Value;

/// The storage key of a row in the table's rows tree.
pub fn row_key(table: &Table, row: &[Value], uniquifier: Option<u64>) -> SqlResult<Vec<u8>> {
    let idx = &table.indexes[0];
    let mut k = KeyBuf::new();
    for &(col, desc) in &idx.columns {
        crate::encoding::encode_key(&row[col], &table.columns[col].ty, desc, &mut k)?;
    }
    if let Some(u) = uniquifier {
        k.u64(u, false);
    }
    if k.len() > MAX_CLUSTERED_KEY + 8 {
        let index = format!(" for the index '{}'", idx.name);
        return Err(msg::INDEX_KEY_TOO_LONG.with(&[&k.len(), &index, &MAX_CLUSTERED_KEY, &" for clustered indexes"]));
    }
    Ok(k.into_vec())
}

/// A row in the storage format of its table (FixedVar).
pub fn to_storage_row(table: &Table, row: &[Value]) -> SqlResult<Vec<u8>> {
    let stored: Vec<row::Value> =
        row.iter().zip(&table.columns).map(|(v, c)| crate::encoding::to_storage(v, &c.ty)).collect();
    let schema = crate::encoding::row_schema(table)?;
    Ok(row::encode(&schema, &stored)?)
}

/// A complete row's clustered key (with its uniquifier, if the table has one) and its
/// stored form.
pub(super) fn encode_row(ctx: &mut ExecCtx, target: &TargetAt, row: &[Value]) -> SqlResult<(Vec<u8>, Vec<u8>)> {
    let table = &target.table;
    let uniq = if table.has_uniquifier() {
        load_counters(ctx, &target.db, table)?;
        Some(table.counters.uniquifier.fetch_add(1, Ordering::Relaxed) + 1)
    } else {
        None
    };
    Ok((row_key(table, row, uniq)?, to_storage_row(table, row)?))
}

/// Every row of a table in storage order, with keys (index rebuilds, ALTER TABLE).
pub fn table_rows(ctx: &mut ExecCtx, db: &str, table: &Table) -> SqlResult<Vec<(Vec<u8>, Row)>> {
    let schema = crate::encoding::row_schema(table)?;
    let rows_tree = ctx.tree(db, &table.indexes[0].tree, table)?;
    let tx = ctx.transaction(db)?;
    let mut out = Vec::new();
    for item in
        tx.scan(rows_tree, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, tessera_database::Direction::Forward)
    {
        let (k, v) = item?;
        out.push((k, decode_row(table, &schema, &v)?));
    }
    Ok(out)
}
