//! DBCC CHECKDB's logical checks: every nonclustered index agrees with its table.
//!
//! The structural checks (every tree well formed, every page allocated exactly once)
//! are `Database::check`'s. Here, for each table, under a shared table lock (writers
//! wait; the check sees one state): every row's entry in each nonclustered index must
//! exist and point back at the row (SQL Server's 8951 with 8955), and every index entry
//! must be the entry of the row it points at (8952 with 8956). A unique index stores
//! its key alone, so two rows with one key leave one of them without its entry (8951).
//! `REPAIR_REBUILD` rebuilds each index found damaged from the table's rows. Rows and
//! entries are streamed (a point lookup each), so memory does not grow with the table.

use std::sync::Arc;

use tessera_database::{Direction, LockMode, ReadLocks, RowLock, TableId, Transaction};

use crate::encoding::{decode_row, index_entry, row_schema};
use crate::runtime::ExecCtx;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::catalog::{Object, Table};
use tessera_semantics::types::{self, Value};

/// Error pairs reported per table; beyond it errors are counted, not described.
const MAX_REPORTED_PER_TABLE: usize = 200;

/// What the checks found in one table.
pub struct TableFindings {
    pub table: Arc<Table>,
    /// The error messages, in pairs (8951 + 8955, 8952 + 8956), the first
    /// `MAX_REPORTED_PER_TABLE` of them.
    pub errors: Vec<SqlError>,
    /// Consistency errors as CHECKDB counts them (one per pair), reported or not.
    pub error_count: usize,
    /// Positions (in `table.indexes`) of the indexes found damaged.
    pub damaged: Vec<usize>,
}

impl TableFindings {
    fn report(&mut self, head: SqlError, detail: SqlError) {
        self.error_count += 1;
        if self.errors.len() < 2 * MAX_REPORTED_PER_TABLE {
            self.errors.push(head);
            self.errors.push(detail);
        }
    }
}

/// Checks every user table of `db` (tables in tempdb belong to sessions and are skipped).
pub fn check_indexes(ctx: &mut ExecCtx, db: &str) -> SqlResult<Vec<TableFindings>> {
    let database = ctx.shared.database(db)?;
    let catalog = ctx.shared.catalog(&database)?;
    let mut tables: Vec<Arc<Table>> = catalog
        .objects()
        .into_iter()
        .filter_map(|o| match o {
            Object::Table(t) if t.indexes.len() > 1 => Some(t.clone()),
            _ => None,
        })
        .collect();
    tables.sort_by_key(|t| t.id);
    tables.into_iter().map(|t| check_table(ctx, db, t)).collect()
}

fn tree_of(ctx: &mut ExecCtx, db: &str, table: &Table, index: usize) -> SqlResult<TableId> {
    let tx = ctx.transaction(db)?;
    tx.database().table(&table.indexes[index].tree).ok_or_else(|| tessera_semantics::bind::invalid_object(&table.name))
}

fn check_table(ctx: &mut ExecCtx, db: &str, table: Arc<Table>) -> SqlResult<TableFindings> {
    let shared_lock = ReadLocks { row: RowLock::Committed, table: Some(LockMode::Shared), skip_locked: false };
    let rows_tree = tree_of(ctx, db, &table, 0)?;
    ctx.transaction(db)?.lock_table_for_read(rows_tree, shared_lock)?;
    let mut findings = TableFindings { table: table.clone(), errors: Vec::new(), error_count: 0, damaged: Vec::new() };
    let schema = row_schema(&table)?;
    let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
    for ix in 1..table.indexes.len() {
        let index_tree = tree_of(ctx, db, &table, ix)?;
        ctx.transaction(db)?.lock_table_for_read(index_tree, shared_lock)?;
        let tx: &Transaction = ctx.transaction(db)?;
        let before = findings.error_count;
        // Every row has its entry.
        for item in tx.scan(rows_tree, all.0, all.1, Direction::Forward) {
            let (row_key, bytes) = item?;
            let row = decode_row(&table, &schema, &bytes)?;
            let entry = index_entry(&table, ix, &row, &row_key)?;
            if tx.get(index_tree, &entry)?.as_deref() != Some(&row_key[..]) {
                let detail = msg::CHECKDB_DATA_ROW_DETAIL.with(&[&values(&table, 0, &row), &values(&table, ix, &row)]);
                findings.report(missing_entry(&table, ix), detail);
            }
        }
        // Every entry belongs to its row.
        for item in tx.scan(index_tree, all.0, all.1, Direction::Forward) {
            let (entry, row_key) = item?;
            let row = match tx.get(rows_tree, &row_key)? {
                Some(bytes) => Some(decode_row(&table, &schema, &bytes)?),
                None => None,
            };
            let matches = match &row {
                Some(r) => index_entry(&table, ix, r, &row_key)? == entry,
                None => false,
            };
            if !matches {
                let pointing = match &row {
                    Some(r) => values(&table, 0, r),
                    None => format!("a missing row, key 0x{}", hex(&row_key)),
                };
                let detail = msg::CHECKDB_INDEX_ROW_DETAIL.with(&[&hex(&entry), &pointing]);
                findings.report(extra_entry(&table, ix), detail);
            }
        }
        if findings.error_count > before {
            findings.damaged.push(ix);
        }
    }
    Ok(findings)
}

fn object_label(table: &Table) -> String {
    format!("table '{}' (ID {})", table.name, table.id)
}

fn missing_entry(table: &Table, ix: usize) -> SqlError {
    let index = &table.indexes[ix];
    msg::MISSING_INDEX_ROW.with(&[&object_label(table), &index.name, &index.id])
}

fn extra_entry(table: &Table, ix: usize) -> SqlError {
    let index = &table.indexes[ix];
    msg::EXTRA_INDEX_ROW.with(&[&object_label(table), &index.name, &index.id])
}

/// `col = value and …` over an index's key columns (the clustered key for index 0, or
/// every column of a heap).
fn values(table: &Table, ix: usize, row: &[Value]) -> String {
    let cols: Vec<usize> = if table.indexes[ix].is_heap() {
        (0..table.columns.len()).collect()
    } else {
        table.indexes[ix].columns.iter().map(|&(c, _)| c).collect()
    };
    cols.iter()
        .map(|&c| format!("{} = {}", table.columns[c].name, types::display_text(&row[c], &table.columns[c].ty)))
        .collect::<Vec<_>>()
        .join(" and ")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}
