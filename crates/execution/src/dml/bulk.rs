//! The bulk-load path of INSERT: rows checked and encoded first, then stored in key order
//! as one minimally logged bulk load (or row by row when that does not apply).

use super::constraints::duplicate_error;
use super::storage::encode_row;
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
