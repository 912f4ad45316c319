//! FOREIGN KEY constraints: a new or changed row's parents must exist; deleting or
//! changing a referenced row applies NO ACTION, CASCADE, SET NULL or SET DEFAULT to its
//! children, 32 levels deep at most.

use super::indexes::index_key;
use super::storage::row_key;
use super::{object_name, TargetAt};
use crate::runtime::ExecCtx;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::Table;
use tessera_semantics::types::{self, Value};

/// Foreign keys of `table` whose columns in `row` must find a parent row.
pub(super) fn check_parents(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    row: &[Value],
    changed: Option<&[usize]>,
    kind: &str,
) -> SqlResult<()> {
    let table = &target.table;
    if table.foreign_keys.is_empty() {
        return Ok(());
    }
    let database = ctx.shared.database(&target.db)?;
    let catalog = ctx.catalog(&database)?;
    for fk in &table.foreign_keys {
        if let Some(ch) = changed {
            if !fk.columns.iter().any(|c| ch.contains(c)) {
                continue;
            }
        }
        if fk.columns.iter().any(|&c| row[c].is_null()) {
            continue;
        }
        let parent = catalog
            .table_by_id(fk.ref_table)
            .cloned()
            .ok_or_else(|| tessera_semantics::bind::invalid_object("(referenced table)"))?;
        let values: Vec<Value> = fk
            .columns
            .iter()
            .zip(&fk.ref_columns)
            .map(|(&c, &pc)| types::cast(&row[c], &table.columns[c].ty, &parent.columns[pc].ty, None))
            .collect::<SqlResult<_>>()?;
        if !parent_exists(ctx, &target.db, &parent, &fk.ref_columns, &values)? {
            let column = format!(", column '{}'", parent.columns[fk.ref_columns[0]].name);
            return Err(msg::CONSTRAINT_CONFLICT
                .with(&[&kind, &"FOREIGN KEY", &fk.name, &target.db, &object_name(&parent), &column])
                .with_state(0));
        }
    }
    Ok(())
}

/// Whether `table` has a row whose `columns` equal `values`, through an index on them.
fn parent_exists(ctx: &mut ExecCtx, db: &str, table: &Table, columns: &[usize], values: &[Value]) -> SqlResult<bool> {
    let found = table.indexes.iter().position(|ix| {
        ix.unique && ix.columns.len() == columns.len() && ix.columns.iter().all(|(c, _)| columns.contains(c))
    });
    let Some(pos) = found else { return Ok(false) };
    let ix = &table.indexes[pos];
    let mut full = vec![Value::Null; table.columns.len()];
    for (c, v) in columns.iter().zip(values) {
        full[*c] = v.clone();
    }
    let key = if pos == 0 { row_key(table, &full, None)? } else { index_key(table, ix, &full)? };
    let t = ctx.tree(db, &ix.tree, table)?;
    // The parent as it is now, never a row version: SQL Server checks foreign keys with
    // locking reads under snapshot isolation too.
    let tx = ctx.transaction(db)?;
    Ok(tx.reading_current(|tx| tx.get(t, &key))?.is_some())
}
