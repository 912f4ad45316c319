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

use std::collections::{BTreeMap, HashSet};
use tessera_access::lob;
use tessera_access::row::{OffRow, RowSchema};

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
    // How far the check has got, by tables (dm_exec_requests.percent_complete).
    let total = tables.len() as u64;
    let mut findings = Vec::with_capacity(tables.len());
    for (done, t) in (0u64..).zip(tables) {
        tessera_waits::progress(done, total);
        findings.push(check_table(ctx, db, t)?);
    }
    tessera_waits::progress(total, total);
    Ok(findings)
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
    let filters = {
        let mut binder = tessera_semantics::bind::Binder::new(ctx.shared, &*ctx.session, &[]);
        let at = tessera_semantics::catalog::DbRef::Named(db.to_string());
        tessera_semantics::bind::bind_target(&mut binder, at, table.clone())?.filters
    };
    for ix in 1..table.indexes.len() {
        let index_tree = tree_of(ctx, db, &table, ix)?;
        ctx.transaction(db)?.lock_table_for_read(index_tree, shared_lock)?;
        // A filtered index: the keys of the rows it holds entries for.
        let admitted: Option<HashSet<Vec<u8>>> = match filters.get(ix).cloned().flatten() {
            None => None,
            Some(predicate) => {
                let tx: &Transaction = ctx.transaction(db)?;
                let mut rows = Vec::new();
                for item in tx.scan(rows_tree, all.0, all.1, Direction::Forward) {
                    let (row_key, bytes) = item?;
                    rows.push((row_key, decode_row(&table, &schema, &bytes, &lobs)?));
                }
                let mut keys = HashSet::new();
                for (row_key, row) in rows {
                    if crate::exec::eval(&predicate, &row, ctx)? == Value::Bit(true) {
                        keys.insert(row_key);
                    }
                }
                Some(keys)
            }
        };
        let admits = |row_key: &[u8]| admitted.as_ref().is_none_or(|keys| keys.contains(row_key));
        let tx: &Transaction = ctx.transaction(db)?;
        let before = findings.error_count;
        // Every row has its entry.
        for item in tx.scan(rows_tree, all.0, all.1, Direction::Forward) {
            let (row_key, bytes) = item?;
            if !admits(&row_key) {
                continue;
            }
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
                Some(r) => admits(&row_key) && index_entry(&table, ix, r, &row_key)? == entry,
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
    // Free-list entries not carried out yet (read before the values: a removal takes the
    // chunks first, then the entry): values dropped by committed changes, whose chunks
    // may still be there, and generations whose older chunks may be.
    let (mut dropped, mut compacting) = (HashSet::new(), HashSet::new());
    if let Some(t) = lob_tree {
        for e in tx.database().lob_dropped(t)? {
            if e.whole { &mut dropped } else { &mut compacting }.insert(e.value.id);
        }
    }
    // Every pointer, by value id: the value and the key of the row holding it.
    let mut pointers: BTreeMap<u64, (OffRow, Vec<u8>)> = BTreeMap::new();
    for item in tx.scan(rows_tree, all.0, all.1, Direction::Forward) {
        let (row_key, bytes) = item?;
        for (_, p) in off_row_values(schema, &bytes)? {
            if let Some((_, first)) = pointers.insert(p.id, (p, row_key.clone())) {
                let (a, b) = (format!("key 0x{}", hex(&first)), format!("key 0x{}", hex(&row_key)));
                let e = msg::CHECKDB_LOB_CROSS_LINKED.with(&[&table.id, &index_id, &(p.id as i64), &a, &b]);
                findings.report_large_value(e);
            }
        }
    }
    let finish = |mut v: StoredValue, pointer: Option<(OffRow, Vec<u8>)>, findings: &mut TableFindings| {
        let (whole, bytes) = v.end();
        match pointer {
            None if dropped.contains(&v.id) => {}
            None => findings.report_large_value(msg::CHECKDB_LOB_NOT_REFERENCED.with(&[
                &table.id,
                &index_id,
                &(v.id as i64),
            ])),
            Some((p, row_key)) if !whole || p.len != bytes => {
                let row = format!("key 0x{}", hex(&row_key));
                findings.report_large_value(msg::CHECKDB_LOB_NOT_SEEN.with(&[
                    &table.id,
                    &index_id,
                    &(v.id as i64),
                    &row,
                ]))
            }
            // Chunks no generation reads, with no compaction due to remove them.
            Some(_) if v.stray && !compacting.contains(&v.id) => findings
                .report_large_value(msg::CHECKDB_LOB_NOT_REFERENCED.with(&[&table.id, &index_id, &(v.id as i64)])),
            Some(_) => {}
        }
    };
    // Every value stored, by id: the chunks its pointer's generation reads, in order from
    // 0, as many bytes as the pointer says.
    let mut stored: Option<StoredValue> = None;
    if let Some(lob_tree) = lob_tree {
        for item in tx.scan(lob_tree, all.0, all.1, Direction::Forward) {
            let (key, chunk) = item?;
            let Some((id, n, gen)) = lob::parse_chunk_key(&key) else { continue };
            if stored.as_ref().is_none_or(|v| v.id != id) {
                if let Some(v) = stored.take() {
                    let pointer = pointers.remove(&v.id);
                    finish(v, pointer, findings);
                }
                stored = Some(StoredValue::new(id, pointers.get(&id).map(|(p, _)| *p)));
            }
            stored.as_mut().expect("a value being read").chunk(n, gen, chunk.len() as u64);
        }
    }
    if let Some(v) = stored.take() {
        let pointer = pointers.remove(&v.id);
        finish(v, pointer, findings);
    }
    for (id, (_, row_key)) in pointers {
        let row = format!("key 0x{}", hex(&row_key));
        findings.report_large_value(msg::CHECKDB_LOB_NOT_SEEN.with(&[&table.id, &index_id, &(id as i64), &row]));
    }
    Ok(())
}

/// The chunks of one value id as a check reads them, in key order (chunk, then
/// generation): those its pointer's generation reads (the newest version at or before it
/// of each chunk within its length), and whether any other is stored.
struct StoredValue {
    id: u64,
    /// The generation and length the row's pointer says (none: no row points at it).
    pointer: Option<OffRow>,
    /// The chunk that should come next, the bytes of the chunks before it, whether none
    /// was missing.
    next: u32,
    bytes: u64,
    whole: bool,
    /// The chunk being read and the length of its newest version so far.
    newest: Option<(u32, u64)>,
    stray: bool,
}

impl StoredValue {
    fn new(id: u64, pointer: Option<OffRow>) -> StoredValue {
        StoredValue { id, pointer, next: 0, bytes: 0, whole: true, newest: None, stray: false }
    }

    fn chunk(&mut self, n: u32, gen: u32, len: u64) {
        let Some(p) = self.pointer.filter(|p| gen <= p.gen && n < lob::chunks(p.len)) else {
            self.stray = true;
            return;
        };
        debug_assert!(gen <= p.gen);
        match self.newest {
            Some((m, _)) if m == n => self.stray = true,
            Some(_) => self.take_newest(),
            None => {}
        }
        self.newest = Some((n, len));
    }

    fn take_newest(&mut self) {
        if let Some((m, len)) = self.newest.take() {
            self.whole &= m == self.next;
            self.bytes += len;
            self.next = m + 1;
        }
    }

    /// Whether the chunks read are every chunk from 0 in order, and their bytes.
    fn end(&mut self) -> (bool, u64) {
        self.take_newest();
        (self.whole, self.bytes)
    }
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
