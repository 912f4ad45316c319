//! The bulk-load paths of INSERT: rows checked and encoded first, then stored in key order
//! as one minimally logged bulk load (or row by row when that does not apply); and the
//! large values of an INSERT written minimally logged into an empty large-value tree.

use super::constraints::duplicate_error;
use super::storage::{encode_row, lob_tree};
use super::TargetAt;
use crate::encoding::decode_row;
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::types::Value;

/// A multi-row INSERT into a table whose only index is its clustered one may be
/// minimally logged (SIMPLE and BULK_LOGGED databases, an empty table): its rows are
/// checked and encoded first, then stored in one bulk load in key order.
const BULK_MIN_ROWS: usize = 100;
/// Below this much row data a bulk load's forced write of the data file costs more
/// than logging the rows.
const BULK_MIN_BYTES: usize = 256 << 10;

/// The rows of one INSERT, encoded (clustered key, stored row), waiting to be stored
/// together.
pub(super) struct StagedRows {
    rows: Vec<(Vec<u8>, Vec<u8>)>,
    bytes: usize,
}

impl StagedRows {
    /// Staging applies to INSERTs of at least `BULK_MIN_ROWS` rows into a table with no
    /// nonclustered index; the others store each row as it comes.
    pub(super) fn new(ctx: &mut ExecCtx, target: &TargetAt, rows: usize) -> SqlResult<Option<StagedRows>> {
        if rows < BULK_MIN_ROWS || target.table.indexes.len() != 1 {
            return Ok(None);
        }
        let model = ctx.shared.engine.database(&target.db)?.options().recovery_model;
        Ok((model != tessera_database::RecoveryModel::Full).then(|| StagedRows { rows: Vec::new(), bytes: 0 }))
    }

    pub(super) fn add(&mut self, ctx: &mut ExecCtx, target: &TargetAt, row: &[Value]) -> SqlResult<()> {
        let (key, bytes) = encode_row(ctx, target, row)?;
        self.bytes += key.len() + bytes.len();
        self.rows.push((key, bytes));
        Ok(())
    }

    /// Stores the rows: one minimally logged bulk load if the table is empty and the
    /// rows are big enough, else row by row. Duplicate keys are error 2627 either way.
    pub(super) fn store(mut self, ctx: &mut ExecCtx, target: &TargetAt) -> SqlResult<()> {
        let table = &target.table;
        // The row a duplicate-key error names, decoded back from its stored form.
        let schema = crate::encoding::row_schema(table)?;
        let lobs = ctx.lobs(&target.db, table, &schema)?;
        let stored = |bytes: &[u8]| decode_row(table, &schema, bytes, &lobs);
        self.rows.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = self.rows.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(duplicate_error(table, &table.indexes[0], &stored(&w[1].1)?));
        }
        // The pages the rows will fill, against a tempdb quota before any is written.
        ctx.check_tempdb_room(&target.db, self.bytes.div_ceil(tessera_database::PAGE_SIZE) as u64)?;
        let rows_tree = ctx.tree(&target.db, &table.indexes[0].tree, table)?;
        let tx = ctx.transaction(&target.db)?;
        // Each row a leaf insert (sys.dm_db_index_operational_stats), however stored.
        crate::index_usage::add(&table.indexes[0].usage.leaf_inserts, self.rows.len() as u64);
        if self.bytes >= BULK_MIN_BYTES && tx.bulk_load(rows_tree, self.rows.iter().map(|(k, v)| (k, v)))?.is_some() {
            return Ok(());
        }
        for (key, bytes) in &self.rows {
            match tx.insert(rows_tree, key, bytes) {
                Ok(()) => {}
                Err(tessera_database::Error::DuplicateKey { .. }) => {
                    return Err(duplicate_error(table, &table.indexes[0], &stored(bytes)?))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// Starts writing the large values of an INSERT of `rows` (values of the target's
/// `columns`, in order) minimally logged (`Transaction::lob_bulk_start`): in a SIMPLE or
/// BULK_LOGGED database, when the table's large-value tree is empty and the values that
/// go off the row add up to at least `BULK_MIN_BYTES`. The caller ends it with
/// [`finish_lob_load`] before anything reads the values (a failed statement's rollback
/// drops it). Returns whether it started.
pub(super) fn start_lob_load(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    columns: &[usize],
    rows: &[Vec<Option<Value>>],
) -> SqlResult<bool> {
    let table = &target.table;
    if !crate::encoding::row_schema(table)?.overflows() {
        return Ok(false);
    }
    let off_row = |(j, v): (usize, &Option<Value>)| -> usize {
        let len = match v {
            Some(Value::Large(l)) => l.len_bytes() as usize,
            Some(Value::Binary(b)) => b.len(),
            Some(Value::Str(s)) => s.len(),
            _ => 0,
        };
        if table.columns[columns[j]].ty.is_max() && len > tessera_access::row::MAX_IN_ROW {
            len
        } else {
            0
        }
    };
    let bytes: usize = rows.iter().flat_map(|r| r.iter().enumerate().map(off_row)).sum();
    let model = ctx.shared.engine.database(&target.db)?.options().recovery_model;
    if bytes < BULK_MIN_BYTES || model == tessera_database::RecoveryModel::Full {
        return Ok(false);
    }
    let tree = lob_tree(ctx, &target.db, table)?;
    let rows_tree = ctx.tree(&target.db, &table.indexes[0].tree, table)?;
    Ok(ctx.transaction(&target.db)?.lob_bulk_start(rows_tree, tree)?)
}

/// Ends the load [`start_lob_load`] began: the values' pages forced to disk and made the
/// large-value tree's.
pub(super) fn finish_lob_load(ctx: &mut ExecCtx, target: &TargetAt) -> SqlResult<()> {
    ctx.transaction(&target.db)?.lob_bulk_finish()?;
    Ok(())
}
