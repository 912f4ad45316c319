//! Where tables' rows are kept, as SQL Server's catalog describes it: sys.partitions (one
//! partition per index, tessera does not partition tables), sys.allocation_units (each
//! partition's in-row pages), and sys.stats and sys.stats_columns (each index's statistics,
//! on its key columns: tessera keeps no other statistics objects).
//!
//! A partition's id (and its hobt id and allocation unit id) is made from its table's
//! object id and the index id, so it is stable while both are. Row counts and page counts
//! are counted when the view is read, without waiting for locks, as approximate as SQL
//! Server's.

use super::{bit, catalog, col, int, s, Rows, ViewDef, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_semantics::catalog::{Index, Object, Table};
use tessera_semantics::types::{SqlType::*, Value};

/// The id of the partition of index `ix` of table `t` (also its hobt id).
pub(super) fn partition_id(t: &Table, ix: &Index) -> i64 {
    (i64::from(t.id) << 16) | i64::from(ix.id)
}

pub(super) static PARTITIONS: ViewDef<11> = ViewDef {
    schema: "sys",
    name: "partitions",
    columns: [
        col("partition_id", BigInt, false),
        col("object_id", Int, false),
        col("index_id", Int, false),
        col("partition_number", Int, false),
        col("hobt_id", BigInt, false),
        col("rows", BigInt, true),
        col("filestream_filegroup_id", SmallInt, false),
        col("data_compression", TinyInt, false),
        col("data_compression_desc", NVarChar(60), true),
        col("xml_compression", Bit, true),
        col("xml_compression_desc", VarChar(3), true),
    ],
    rows: partitions,
};

fn partitions(ctx: &ExecCtx, db: &str) -> Rows<11> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for ix in &t.indexes {
            let rows = match database.table(&ix.tree) {
                Some(tree) => int(database.table_entries(tree)? as i64),
                None => Value::Null,
            };
            let id = partition_id(t, ix);
            out.push([
                int(id),
                int(i64::from(t.id)),
                int(i64::from(ix.id)),
                int(1),
                int(id),
                rows,
                int(0),
                int(0),
                s("NONE"),
                bit(false),
                s("OFF"),
            ]);
        }
    }
    Ok(out)
}

pub(super) static ALLOCATION_UNITS: ViewDef<8> = ViewDef {
    schema: "sys",
    name: "allocation_units",
    columns: [
        col("allocation_unit_id", BigInt, false),
        col("type", TinyInt, false),
        col("type_desc", NVarChar(60), true),
        col("container_id", BigInt, false),
        col("data_space_id", Int, true),
        col("total_pages", BigInt, false),
        col("used_pages", BigInt, false),
        col("data_pages", BigInt, false),
    ],
    rows: allocation_units,
};

/// Each partition's in-row data: its tree's pages (all in use; tessera allocates a page
/// when a tree needs it). Large values, kept in a tree per table, are not listed apart.
fn allocation_units(ctx: &ExecCtx, db: &str) -> Rows<8> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for ix in &t.indexes {
            let pages = match database.table(&ix.tree) {
                Some(tree) => database.table_pages(tree)? as i64,
                None => 0,
            };
            let id = partition_id(t, ix);
            out.push([int(id), int(1), s("IN_ROW_DATA"), int(id), int(1), int(pages), int(pages), int(pages)]);
        }
    }
    Ok(out)
}

pub(super) static STATS: ViewDef<14> = ViewDef {
    schema: "sys",
    name: "stats",
    columns: [
        col("object_id", Int, false),
        col("name", SYSNAME, true),
        col("stats_id", Int, false),
        col("auto_created", Bit, true),
        col("user_created", Bit, true),
        col("no_recompute", Bit, true),
        col("has_filter", Bit, true),
        col("filter_definition", NVarChar(tessera_access::row::MAX), true),
        col("is_temporary", Bit, true),
        col("is_incremental", Bit, true),
        col("has_persisted_sample", Bit, true),
        col("stats_generation_method", Int, false),
        col("stats_generation_method_desc", VarChar(80), false),
        col("auto_drop", Bit, true),
    ],
    rows: stats,
};

/// The statistics of each index (not of a heap), named and numbered as the index.
fn stats(ctx: &ExecCtx, db: &str) -> Rows<14> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for ix in t.indexes.iter().filter(|ix| !ix.is_heap()) {
            out.push([
                int(i64::from(t.id)),
                s(&ix.name),
                int(i64::from(ix.id)),
                bit(false),
                bit(false),
                bit(false),
                bit(ix.filter.is_some()),
                ix.filter.as_deref().map_or(Value::Null, s),
                bit(false),
                bit(false),
                bit(false),
                int(0),
                s("Sort-based statistics"),
                bit(false),
            ]);
        }
    }
    Ok(out)
}

pub(super) static STATS_COLUMNS: ViewDef<4> = ViewDef {
    schema: "sys",
    name: "stats_columns",
    columns: [
        col("object_id", Int, false),
        col("stats_id", Int, false),
        col("stats_column_id", Int, false),
        col("column_id", Int, false),
    ],
    rows: stats_columns,
};

/// The key columns of each index's statistics, in key order.
fn stats_columns(ctx: &ExecCtx, db: &str) -> Rows<4> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for ix in t.indexes.iter().filter(|ix| !ix.is_heap()) {
            for (i, &(column, _)) in ix.columns.iter().enumerate() {
                out.push([int(i64::from(t.id)), int(i64::from(ix.id)), int(i as i64 + 1), int(column as i64 + 1)]);
            }
        }
    }
    Ok(out)
}
