//! Values stored off their rows, as rows are decoded: a row of a table whose layout can
//! overflow (`RowSchema::overflows`) may point into the table's large-value tree, named
//! after its rows tree ([`lob_tree_name`]), where `tessera_access::lob` keeps the
//! values in chunks. A reader makes its [`Lobs`] before it reads rows: that pins the
//! values readable then (see `tessera_access::lob`), so a value a writer drops after
//! the reader copied its row stays until the reader is done. A `(max)` value of 1 MiB or
//! more is not read with its row: it becomes a `Value::Large` that reads it from the
//! tree when asked, and holds the pin while it lives.

use std::sync::{Arc, OnceLock};
use tessera_access::row::{self, RowSchema};
use tessera_database::{Database, LobPin, OffRow, TableId};
use tessera_errors::SqlResult;
use tessera_semantics::catalog::Table;
use tessera_semantics::types::large::LAZY_BYTES;
use tessera_semantics::types::{LargeKind, LargeSource, LargeValue, SqlType, Value};

/// The name of the large-value tree of the table whose rows tree is `rows_tree`.
pub fn lob_tree_name(rows_tree: &str) -> String {
    format!("{rows_tree}L")
}

/// Where a reader of one table's rows reads their off-row values.
pub struct Lobs {
    source: Option<Arc<Source>>,
}

struct Source {
    database: Arc<Database>,
    /// The table: its large-value tree's name is made only when a value is read.
    table: Arc<Table>,
    /// Looked up again while the tree does not exist (created by the first value).
    tree: OnceLock<TableId>,
    /// Held while the reader or a [`Value::Large`] it made lives.
    _pin: LobPin,
}

impl Lobs {
    /// For rows that hold no off-row values (the table's layout cannot overflow).
    pub fn none() -> Lobs {
        Lobs { source: None }
    }

    /// For reading the rows of `table` (whose rows may overflow: [`Lobs::none`] serves the
    /// others) in `database` from now on.
    pub fn of(database: &Arc<Database>, table: &Arc<Table>) -> Lobs {
        // The tree is looked up when a value is first read (most rows keep theirs).
        let pin = database.lob_pin();
        let source = Source { database: database.clone(), table: table.clone(), tree: OnceLock::new(), _pin: pin };
        Lobs { source: Some(Arc::new(source)) }
    }

    /// The value `p` points at, as a value of type `ty`: a `(max)` value of at least
    /// [`LAZY_BYTES`] as a [`Value::Large`] that reads it from its pages when asked (the
    /// pin stays while it lives); a shorter one read now, straight into the value's own
    /// memory.
    fn value(&self, p: OffRow, ty: &SqlType) -> SqlResult<Value> {
        let Some(s) = &self.source else {
            return Err(tessera_errors::Error::Invalid("an off-row value in a table whose rows all fit".into()).into());
        };
        let kind = match ty {
            SqlType::VarBinary(_) => LargeKind::Binary,
            SqlType::NVarChar(_) => LargeKind::Unicode,
            _ => LargeKind::Ansi,
        };
        let stored = LargeValue::new(kind, p.len, Arc::new(Stored { source: s.clone(), tree: s.tree()?, value: p }));
        if ty.is_max() && p.len >= LAZY_BYTES {
            return Ok(Value::Large(stored));
        }
        stored.value()
    }
}

impl Source {
    /// The table's large-value tree.
    fn tree(&self) -> SqlResult<TableId> {
        if let Some(t) = self.tree.get() {
            return Ok(*t);
        }
        let name = lob_tree_name(&self.table.indexes[0].tree);
        let missing = || tessera_errors::Error::Invalid(format!("the large-value tree {name} is missing"));
        let t = self.database.table(&name).ok_or_else(missing)?;
        Ok(*self.tree.get_or_init(|| t))
    }
}

/// A value in a large-value tree, read where it is ([`Value::Large`]).
struct Stored {
    source: Arc<Source>,
    tree: TableId,
    value: OffRow,
}

impl LargeSource for Stored {
    fn read(&self, from: u64, out: &mut [u8]) -> SqlResult<()> {
        Ok(self.source.database.lob_read(self.tree, self.value, from, out)?)
    }
}

/// Decodes a stored row into SQL values, reading its off-row values from `lobs`.
pub fn decode_row(table: &Table, schema: &RowSchema, bytes: &[u8], lobs: &Lobs) -> SqlResult<Vec<Value>> {
    decode_kept(table, schema, bytes, lobs, |_| true)
}

/// Decodes only the columns `reads` marks, the others NULL: enough to evaluate a filter
/// that reads no others.
pub fn decode_columns(
    table: &Table,
    schema: &RowSchema,
    bytes: &[u8],
    reads: &[bool],
    lobs: &Lobs,
) -> SqlResult<Vec<Value>> {
    decode_kept(table, schema, bytes, lobs, |i| reads[i])
}

/// Decodes the columns `keep` says, the others NULL.
fn decode_kept(
    table: &Table,
    schema: &RowSchema,
    bytes: &[u8],
    lobs: &Lobs,
    keep: impl Fn(usize) -> bool,
) -> SqlResult<Vec<Value>> {
    let mut out = Vec::with_capacity(table.columns.len());
    let mut failed = None;
    row::decode_each(schema, bytes, |i, field| {
        let ty = &table.columns[i].ty;
        out.push(match field {
            _ if !keep(i) => Value::Null,
            row::Field::OffRow(p) => lobs.value(p, ty).unwrap_or_else(|e| {
                failed.get_or_insert(e);
                Value::Null
            }),
            f => super::from_field(f, ty),
        })
    })?;
    failed.map_or(Ok(out), Err)
}

/// The values a stored row keeps off the row, by column.
pub fn off_row_values(schema: &RowSchema, bytes: &[u8]) -> SqlResult<Vec<(usize, OffRow)>> {
    let mut out = Vec::new();
    if row::has_off_row(bytes) {
        row::decode_each(schema, bytes, |i, field| {
            if let row::Field::OffRow(p) = field {
                out.push((i, p));
            }
        })?;
    }
    Ok(out)
}
