//! Rows in the rows tree: clustered keys, the stored form, storing a new row with its
//! index entries, and whole-table reads and loads for DDL.

use super::{TargetAt, MAX_CLUSTERED_KEY};
use crate::encoding::{decode_row, lob_tree_name, off_row_values};
use crate::identity::load_counters;
use crate::runtime::ExecCtx;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tessera_access::key::KeyBuf;
use tessera_access::row;
use tessera_database::{LobWriter, OffRow, TableId, Transaction};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::Table;
use tessera_semantics::plan::Row;
use tessera_semantics::types::large::PIECE_BYTES;
use tessera_semantics::types::{encode_cp1252, LargeKind, SqlType, Value};

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

/// A row in the storage format of its table (FixedVar), every value in the row.
pub fn to_storage_row(table: &Table, row: &[Value]) -> SqlResult<Vec<u8>> {
    let stored: Vec<row::Value> =
        row.iter().zip(&table.columns).map(|(v, c)| crate::encoding::to_storage(v, &c.ty)).collect();
    let schema = crate::encoding::row_schema(table)?;
    Ok(row::encode(&schema, &stored)?)
}

/// A row in its stored form as part of the session's transaction in `db`: the values
/// that do not fit in it (`row::off_row_columns`) are stored off the row first, in the
/// table's large-value tree. `kept` are values already stored off the row that the row
/// keeps as they are (an UPDATE that leaves them alone).
pub(super) fn store_form(
    ctx: &mut ExecCtx,
    db: &str,
    table: &Table,
    row: &[Value],
    kept: &[(usize, OffRow)],
) -> SqlResult<Vec<u8>> {
    let schema = crate::encoding::row_schema(table)?;
    if !schema.overflows() {
        let stored: Vec<row::Value> =
            row.iter().zip(&table.columns).map(|(v, c)| crate::encoding::to_storage(v, &c.ty)).collect();
        return Ok(row::encode(&schema, &stored)?);
    }
    // `(max)` values longer than a row keeps go off the row straight from the value
    // (a large one read in pieces), never copied whole: a pointer stands for them until
    // they are written.
    let placeholder = row::Value::OffRow(OffRow { id: 0, len: 0, gen: 0 });
    let mut direct = Vec::new();
    let mut stored: Vec<row::Value> = Vec::with_capacity(row.len());
    for (c, (v, col)) in row.iter().zip(&table.columns).enumerate() {
        stored.push(if let Some(&(_, p)) = kept.iter().find(|(k, _)| *k == c) {
            row::Value::OffRow(p)
        } else if goes_off_row_whole(v, &col.ty) {
            direct.push(c);
            placeholder.clone()
        } else {
            crate::encoding::to_storage(v, &col.ty)
        });
    }
    let out = row::off_row_columns(&schema, &stored, table.large_values_out_of_row)?;
    if direct.is_empty() && out.is_empty() {
        return Ok(row::encode(&schema, &stored)?);
    }
    let tree = lob_tree(ctx, db, table)?;
    let rows_tree = ctx.tree(db, &table.indexes[0].tree, table)?;
    let tx = ctx.transaction(db)?;
    for c in direct {
        let mut w = tx.lob_writer(rows_tree, tree)?;
        write_value(tx, &mut w, &row[c], &table.columns[c].ty)?;
        stored[c] = row::Value::OffRow(tx.lob_finish(w)?);
    }
    for c in out {
        let bytes = match std::mem::replace(&mut stored[c], row::Value::Null) {
            row::Value::Bytes(b) => b,
            row::Value::Unicode(u) => u.iter().flat_map(|c| c.to_le_bytes()).collect(),
            v => unreachable!("only variable-length values go off the row, not {}", v.kind()),
        };
        stored[c] = row::Value::OffRow(tx.lob_write(rows_tree, tree, &bytes)?);
    }
    Ok(row::encode(&schema, &stored)?)
}

/// Whether `v`, stored in a column of type `ty`, goes off the row whatever the rest of
/// the row holds: a `(max)` value longer than a row keeps in it (`row::off_row_columns`).
fn goes_off_row_whole(v: &Value, ty: &SqlType) -> bool {
    if !ty.is_max() {
        return false;
    }
    let stored_len = match (v, LargeKind::of(ty)) {
        (Value::Large(l), Some(kind)) if l.kind() == kind => return true,
        (Value::Binary(b), Some(LargeKind::Binary)) => b.len(),
        (Value::Str(s), Some(LargeKind::Ansi)) if s.len() > row::MAX_IN_ROW => s.chars().count(),
        (Value::Str(s), Some(LargeKind::Unicode)) if 2 * s.len() > row::MAX_IN_ROW => 2 * s.encode_utf16().count(),
        _ => return false,
    };
    stored_len > row::MAX_IN_ROW
}

/// Writes `v` (which [`goes_off_row_whole`]) in its stored form through `w`, in pieces.
fn write_value(tx: &mut Transaction, w: &mut LobWriter, v: &Value, ty: &SqlType) -> SqlResult<()> {
    match v {
        Value::Large(l) => l.for_each_piece(0, l.len_bytes(), |piece| Ok(tx.lob_append(w, piece)?)),
        Value::Binary(b) => Ok(tx.lob_append(w, b)?),
        Value::Str(s) => {
            let unicode = LargeKind::of(ty) == Some(LargeKind::Unicode);
            let mut at = 0;
            while at < s.len() {
                let mut end = (at + PIECE_BYTES).min(s.len());
                while !s.is_char_boundary(end) {
                    end += 1;
                }
                let part = &s[at..end];
                let bytes: Vec<u8> = if unicode {
                    part.encode_utf16().flat_map(u16::to_le_bytes).collect()
                } else {
                    encode_cp1252(part)
                };
                tx.lob_append(w, &bytes)?;
                at = end;
            }
            Ok(())
        }
        _ => unreachable!("only (max) values go off the row whole"),
    }
}

/// The table's large-value tree, created by its first value (in its own transaction, as
/// every tree is: an empty tree left by a rollback goes with the table).
pub(super) fn lob_tree(ctx: &mut ExecCtx, db: &str, table: &Table) -> SqlResult<TableId> {
    let name = lob_tree_name(&table.indexes[0].tree);
    let database = ctx.transaction(db)?.database().clone();
    if let Some(t) = database.table(&name) {
        return Ok(t);
    }
    // Another session may create it first. In tempdb it counts against the request's quota.
    let created = database.create_table(&name).map_err(Into::into).and_then(|id| ctx.charge_new_tree(&database, id));
    match database.table(&name) {
        Some(t) => Ok(t),
        None => Err(created.err().unwrap_or_else(|| tessera_semantics::bind::invalid_object(&table.name))),
    }
}

/// Notes that the change just made dropped the row's off-row `values` but those in
/// `kept`: they are removed after the commit.
pub(super) fn free_values(
    ctx: &mut ExecCtx,
    db: &str,
    table: &Table,
    values: &[(usize, OffRow)],
    kept: &[(usize, OffRow)],
) -> SqlResult<()> {
    if values.is_empty() {
        return Ok(());
    }
    let tree = lob_tree(ctx, db, table)?;
    let tx = ctx.transaction(db)?;
    for &(c, p) in values {
        if !kept.contains(&(c, p)) {
            tx.lob_free(tree, p)?;
        }
    }
    Ok(())
}

/// The values the stored row under `key` keeps off the row, by column (a change of the
/// row must keep or free them); none, without a read, when the table's rows cannot
/// overflow.
pub(super) fn values_off_the_row(
    ctx: &mut ExecCtx,
    db: &str,
    table: &Table,
    key: &[u8],
) -> SqlResult<Vec<(usize, OffRow)>> {
    let schema = crate::encoding::row_schema(table)?;
    if !schema.overflows() {
        return Ok(Vec::new());
    }
    let rows_tree = ctx.tree(db, &table.indexes[0].tree, table)?;
    // The row as it is now (the caller holds its lock), never a version: these are the
    // values its change frees.
    match ctx.transaction(db)?.reading_current(|tx| tx.get(rows_tree, key))? {
        Some(bytes) => off_row_values(&schema, &bytes),
        None => Ok(Vec::new()),
    }
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
    Ok((row_key(table, row, uniq)?, store_form(ctx, &target.db, table, row, &[])?))
}

/// Every row of a table in storage order, with keys (index rebuilds, ALTER TABLE).
pub fn table_rows(ctx: &mut ExecCtx, db: &str, table: &Arc<Table>) -> SqlResult<Vec<(Vec<u8>, Row)>> {
    let schema = crate::encoding::row_schema(table)?;
    let rows_tree = ctx.tree(db, &table.indexes[0].tree, table)?;
    let lobs = ctx.lobs(db, table, &schema)?;
    let tx = ctx.transaction(db)?;
    // The rows as they are now, never versions: they are what the table is rebuilt from.
    tx.reading_current(|tx| {
        let mut out = Vec::new();
        let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
        for item in tx.scan(rows_tree, all.0, all.1, tessera_database::Direction::Forward) {
            let (k, v) = item?;
            out.push((k, decode_row(table, &schema, &v, &lobs)?));
        }
        Ok(out)
    })
}
