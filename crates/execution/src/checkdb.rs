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
//!
//! Values stored off the row: every pointer in a row must lead to a whole value in the
//! table's large-value tree (8965), no two pointers to the same value (8974), and every
//! value there must be pointed at or be in the free list (8964: space nothing will give
//! back). These keep one entry per value in memory.
//! No repair short of losing data fixes them (`repair_allow_data_loss`, not offered).

use std::sync::Arc;

use tessera_database::{Direction, LockMode, ReadLocks, RowLock, TableId, Transaction};

use std::collections::BTreeMap;
use tessera_access::row::RowSchema;

use crate::encoding::{decode_row, index_entry, lob_tree_name, off_row_values, row_schema};
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
    /// Errors among `error_count` in the table's values stored off the row.
    pub large_value_errors: usize,
}

impl TableFindings {
    fn report(&mut self, head: SqlError, detail: SqlError) {
        self.error_count += 1;
        if self.errors.len() < 2 * MAX_REPORTED_PER_TABLE {
            self.errors.push(head);
            self.errors.push(detail);
        }
    }

    fn report_large_value(&mut self, error: SqlError) {
        self.error_count += 1;
        self.large_value_errors += 1;
        if self.errors.len() < 2 * MAX_REPORTED_PER_TABLE {
            self.errors.push(error);
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
            Object::Table(t) if t.indexes.len() > 1 || row_schema(t).is_ok_and(|s| s.overflows()) => Some(t.clone()),
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
    let shared_lock =
        ReadLocks { row: RowLock::Committed, table: Some(LockMode::Shared), skip_locked: false, ranges: false };
    let rows_tree = tree_of(ctx, db, &table, 0)?;
    ctx.transaction(db)?.lock_table_for_read(rows_tree, shared_lock)?;
    let mut findings = TableFindings {
        table: table.clone(),
        errors: Vec::new(),
        error_count: 0,
        damaged: Vec::new(),
        large_value_errors: 0,
    };
    let schema = row_schema(&table)?;
    let lobs = ctx.lobs(db, &table, &schema)?;
    let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
    for ix in 1..table.indexes.len() {
        let index_tree = tree_of(ctx, db, &table, ix)?;
        ctx.transaction(db)?.lock_table_for_read(index_tree, shared_lock)?;
        let tx: &Transaction = ctx.transaction(db)?;
        let before = findings.error_count;
        // Every row has its entry.
        for item in tx.scan(rows_tree, all.0, all.1, Direction::Forward) {
            let (row_key, bytes) = item?;
            let row = decode_row(&table, &schema, &bytes, &lobs)?;
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
                Some(bytes) => Some(decode_row(&table, &schema, &bytes, &lobs)?),
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
    if schema.overflows() {
        check_large_values(ctx, db, &table, &schema, rows_tree, &mut findings)?;
    }
    Ok(findings)
}

/// The values `table` keeps off the row against the pointers its rows hold (the table is
/// locked shared: no writer changes either).
fn check_large_values(
    ctx: &mut ExecCtx,
    db: &str,
    table: &Table,
    schema: &RowSchema,
    rows_tree: TableId,
    findings: &mut TableFindings,
) -> SqlResult<()> {
    let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
    let index_id = table.indexes[0].id as i64;
    let tx: &Transaction = ctx.transaction(db)?;
    let lob_tree = tx.database().table(&lob_tree_name(&table.indexes[0].tree));
    // Values dropped by committed changes whose chunks may not be removed yet (read
    // before the values: a removal takes the chunks first, then the entry).
    let dropped: std::collections::HashSet<u64> = match lob_tree {
        Some(t) => tx.database().lob_dropped(t)?.into_iter().collect(),
        None => Default::default(),
    };
    // Every pointer, by value id: its length and the key of the row holding it.
    let mut pointers: BTreeMap<u64, (u64, Vec<u8>)> = BTreeMap::new();
    for item in tx.scan(rows_tree, all.0, all.1, Direction::Forward) {
        let (row_key, bytes) = item?;
        for (_, p) in off_row_values(schema, &bytes)? {
            if let Some((_, first)) = pointers.insert(p.id, (p.len, row_key.clone())) {
                let (a, b) = (format!("key 0x{}", hex(&first)), format!("key 0x{}", hex(&row_key)));
                let e = msg::CHECKDB_LOB_CROSS_LINKED.with(&[&table.id, &index_id, &(p.id as i64), &a, &b]);
                findings.report_large_value(e);
            }
        }
    }
    // Every value stored, by id: its chunks in order from 0, as many bytes as its pointer
    // says. `stored` is the value being read: its id, its bytes so far, the chunk that
    // should come next, and whether none was missing.
    let mut stored: Option<(u64, u64, u32, bool)> = None;
    let mut finish = |value: Option<(u64, u64, u32, bool)>, findings: &mut TableFindings| {
        let Some((id, bytes, _, whole)) = value else { return };
        match pointers.remove(&id) {
            None if dropped.contains(&id) => {}
            None => {
                findings.report_large_value(msg::CHECKDB_LOB_NOT_REFERENCED.with(&[&table.id, &index_id, &(id as i64)]))
            }
            Some((len, row_key)) if !whole || len != bytes => {
                let row = format!("key 0x{}", hex(&row_key));
                findings.report_large_value(msg::CHECKDB_LOB_NOT_SEEN.with(&[&table.id, &index_id, &(id as i64), &row]))
            }
            Some(_) => {}
        }
    };
    if let Some(lob_tree) = lob_tree {
        for item in tx.scan(lob_tree, all.0, all.1, Direction::Forward) {
            let (key, chunk) = item?;
            // A chunk's key: value id (u64 BE) ‖ chunk number (u32 BE).
            let Ok(key) = <[u8; 12]>::try_from(&key[..]) else { continue };
            let id = u64::from_be_bytes(key[..8].try_into().expect("8 bytes"));
            let (n, len) = (u32::from_be_bytes(key[8..].try_into().expect("4 bytes")), chunk.len() as u64);
            match &mut stored {
                Some((at, bytes, next, whole)) if *at == id => {
                    *whole &= n == *next;
                    *bytes += len;
                    *next = n + 1;
                }
                _ => finish(stored.replace((id, len, n + 1, n == 0)), findings),
            }
        }
    }
    finish(stored.take(), findings);
    for (id, (_, row_key)) in pointers {
        let row = format!("key 0x{}", hex(&row_key));
        findings.report_large_value(msg::CHECKDB_LOB_NOT_SEEN.with(&[&table.id, &index_id, &(id as i64), &row]));
    }
    Ok(())
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
