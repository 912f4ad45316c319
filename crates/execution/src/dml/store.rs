//! Storing new rows with their index entries, and whole-table loads and checks for DDL.

use super::constraints::{check_row, map_duplicate};
use super::foreign_keys::check_parents;
use super::indexes::add_index_entry;
use super::storage::{encode_row, table_rows};
use super::TargetAt;
use crate::index_usage::add;
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::plan::Row;
use tessera_semantics::types::Value;

/// Inserts a complete row (constraints already checked) into the rows tree and every
/// index, each a leaf insert (sys.dm_db_index_operational_stats); returns its key.
pub(super) fn store_row(ctx: &mut ExecCtx, target: &TargetAt, row: &[Value]) -> SqlResult<Vec<u8>> {
    put_row(ctx, target, row, true)
}

/// [`store_row`]; `counted`: whether its entries count as leaf inserts (not when DDL
/// loads a table's new trees).
fn put_row(ctx: &mut ExecCtx, target: &TargetAt, row: &[Value], counted: bool) -> SqlResult<Vec<u8>> {
    let table = &target.table;
    ctx.check_tempdb_room(&target.db, 0)?;
    let (key, bytes) = encode_row(ctx, target, row)?;
    let rows_tree = ctx.tree(&target.db, &table.indexes[0].tree, table)?;
    ctx.transaction(&target.db)?
        .insert(rows_tree, &key, &bytes)
        .map_err(|e| map_duplicate(e, table, &table.indexes[0], row))?;
    if counted {
        add(&table.indexes[0].usage.leaf_inserts, 1);
    }
    for ix in &table.indexes[1..] {
        if add_index_entry(ctx, target, ix, row, &key)? && counted {
            add(&ix.usage.leaf_inserts, 1);
        }
    }
    Ok(key)
}

/// Fills a new table's trees with rows (ALTER TABLE rewrites, CREATE CLUSTERED INDEX).
pub fn load_rows(ctx: &mut ExecCtx, target: &TargetAt, rows: Vec<Row>) -> SqlResult<()> {
    for r in rows {
        check_row(ctx, target, &r, "ALTER TABLE", false)?;
        put_row(ctx, target, &r, false)?;
    }
    Ok(())
}

/// Verifies that existing rows satisfy a new CHECK or FOREIGN KEY constraint.
pub fn validate_rows(ctx: &mut ExecCtx, target: &TargetAt) -> SqlResult<()> {
    let rows = table_rows(ctx, &target.db, &target.table)?;
    for (_, r) in rows {
        check_row(ctx, target, &r, "ALTER TABLE", false)?;
        check_parents(ctx, target, &r, None, "ALTER TABLE")?;
    }
    Ok(())
}
