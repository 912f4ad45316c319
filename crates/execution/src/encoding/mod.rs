//! Row and key encodings: SQL values in storage's forms and back (`values`: a value as a
//! row column; `keys`: a value as a memcomparable key column), stored rows decoded into
//! values, a table's row layout, index keys and entries, and the memcomparable bytes of
//! grouping and sorting keys. The semantics layer knows none of these forms; this is
//! where SQL values meet the storage layer.

use std::sync::Arc;
use tessera_access::key::KeyBuf;
use tessera_access::row::{self, RowSchema};

use tessera_errors::SqlResult;
use tessera_semantics::catalog::Table;
use tessera_semantics::types::{SqlType, Value};

mod keys;
mod lobs;
mod values;

pub use keys::{encode_key, StorageKeys, KEYS};
pub use lobs::{decode_columns, decode_row, lob_tree_name, off_row_values, Lobs};
pub use values::{from_field, from_storage, stored_value, to_storage};

/// Builds the storage key for a prefix of an index's key columns.
pub fn encode_prefix(table: &Table, index: usize, values: &[Value], out: &mut KeyBuf) -> SqlResult<()> {
    let idx = &table.indexes[index];
    for (v, &(col, desc)) in values.iter().zip(&idx.columns) {
        encode_key(v, &table.columns[col].ty, desc, out)?;
    }
    Ok(())
}

/// The smallest byte string greater than every string starting with `prefix`; None if
/// there is none (all 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut hi = prefix.to_vec();
    while let Some(last) = hi.pop() {
        if last != 0xFF {
            hi.push(last + 1);
            return Some(hi);
        }
    }
    None
}

/// Storage schema of a table's rows (its column types in order), built once per table
/// definition and kept with it (`Table::layout`); one whose column types no longer match
/// the columns (changed in place) is built again, so it never outlives a change of the
/// columns.
pub fn row_schema(table: &Table) -> SqlResult<Arc<RowSchema>> {
    let types = || table.columns.iter().map(|c| c.ty);
    let build = || RowSchema::new(types().collect()).map(Arc::new);
    match table.layout.get::<RowSchema>() {
        Some(s) if s.columns().iter().copied().eq(types()) => Ok(s),
        Some(_) => Ok(build()?),
        None => {
            let s = build()?;
            Ok(table.layout.keep(s.clone()).unwrap_or(s))
        }
    }
}

/// The key of a row's entry in the table's nonclustered index `index` (a non-unique
/// index appends the clustered key).
pub fn index_entry(table: &Table, index: usize, row: &[Value], row_key: &[u8]) -> SqlResult<Vec<u8>> {
    let ix = &table.indexes[index];
    let values: Vec<Value> = ix.columns.iter().map(|&(c, _)| row[c].clone()).collect();
    let mut k = KeyBuf::new();
    encode_prefix(table, index, &values, &mut k)?;
    let mut k = k.into_vec();
    if !ix.unique {
        k.extend_from_slice(row_key);
    }
    Ok(k)
}

/// The type a value is encoded as in grouping and sorting keys. Operands reaching one
/// key column always share a type (the binder converts them), so the value's own
/// representation determines the encoding.
fn key_type(v: &Value) -> SqlType {
    match v {
        Value::Null | Value::Int(_) => SqlType::BigInt,
        Value::Bit(_) => SqlType::Bit,
        Value::Float(_) => SqlType::Float,
        Value::Decimal { scale, .. } => SqlType::Decimal { precision: 38, scale: *scale },
        Value::Str(_) => SqlType::NVarChar(row::MAX),
        Value::Binary(_) => SqlType::VarBinary(row::MAX),
        Value::Date(_) => SqlType::Date,
        Value::Time(_) => SqlType::Time { scale: 7 },
        Value::DateTime { .. } => SqlType::DateTime2 { scale: 7 },
        Value::DateTimeOffset { .. } => SqlType::DateTimeOffset { scale: 7 },
        Value::Guid(_) => SqlType::UniqueIdentifier,
        Value::Large(l) => l.kind().max_type(),
    }
}

/// Appends a value's memcomparable encoding.
pub fn encode_value(v: &Value, descending: bool, out: &mut KeyBuf) -> SqlResult<()> {
    encode_key(v, &key_type(v), descending, out)
}

/// Memcomparable bytes of a list of values: equal bytes ⇔ equal values under the collation
/// (NULLs equal each other), the grouping key of GROUP BY, DISTINCT, hash joins and UNION.
pub fn group_key(values: &[Value]) -> SqlResult<Vec<u8>> {
    let mut k = KeyBuf::new();
    for v in values {
        encode_value(v, false, &mut k)?;
    }
    Ok(k.into_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_semantics::catalog::{Column, LayoutCache};

    fn column(name: &str, ty: SqlType) -> Column {
        Column { name: name.into(), ty, nullable: true, identity: None, default: None, computed: None }
    }

    #[test]
    fn a_row_layout_never_outlives_a_change_of_the_columns() {
        let mut table = Table {
            id: 1,
            schema: "dbo".into(),
            name: "t".into(),
            columns: vec![column("a", SqlType::Int)],
            indexes: Vec::new(),
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            created: 0,
            modified: 0,
            large_values_out_of_row: false,
            properties: Vec::new(),
            counters: Arc::default(),
            layout: LayoutCache::default(),
        };
        let first = row_schema(&table).unwrap();
        assert!(Arc::ptr_eq(&first, &row_schema(&table).unwrap()), "built once");
        // Changed in place (the layout was built) and in a copy (it starts empty).
        table.columns.push(column("b", SqlType::BigInt));
        assert_eq!(row_schema(&table).unwrap().columns(), &[SqlType::Int, SqlType::BigInt]);
        let mut copy = table.clone();
        copy.columns[0].ty = SqlType::SmallInt;
        assert_eq!(row_schema(&copy).unwrap().columns(), &[SqlType::SmallInt, SqlType::BigInt]);
        assert_eq!(row_schema(&table).unwrap().columns(), &[SqlType::Int, SqlType::BigInt]);
    }
}
