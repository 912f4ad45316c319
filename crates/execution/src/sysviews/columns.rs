//! Tables, their columns and the types they have: sys.columns, identity_columns,
//! computed_columns and sys.types.

use super::system_types::{is_string, type_ids, user_type_id, SYSTEM_TYPES};
use super::{bit, catalog, col, concat, concat_columns, int, s, Rows, ViewDef, COLLATION, NVARCHAR_MAX, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_semantics::catalog::{ModuleKind, Object, Table};
use tessera_semantics::plan::Col;
use tessera_semantics::types::{SqlType, SqlType::*, Value};

/// How many columns sys.columns has (sys.identity_columns and sys.computed_columns
/// begin with them).
pub(super) const COLUMN_WIDTH: usize = 34;

/// sys.columns' columns, which sys.system_columns and sys.all_columns share.
pub(super) const COLUMN_COLUMNS: [Col; COLUMN_WIDTH] = [
    col("object_id", Int, false),
    col("name", SYSNAME, true),
    col("column_id", Int, false),
    col("system_type_id", TinyInt, false),
    col("user_type_id", Int, false),
    col("max_length", SmallInt, false),
    col("precision", TinyInt, false),
    col("scale", TinyInt, false),
    col("collation_name", SYSNAME, true),
    col("is_nullable", Bit, true),
    col("is_ansi_padded", Bit, false),
    col("is_rowguidcol", Bit, false),
    col("is_identity", Bit, false),
    col("is_computed", Bit, false),
    col("is_filestream", Bit, false),
    col("is_replicated", Bit, true),
    col("is_non_sql_subscribed", Bit, true),
    col("is_merge_published", Bit, true),
    col("is_dts_replicated", Bit, true),
    col("is_xml_document", Bit, false),
    col("xml_collection_id", Int, false),
    col("default_object_id", Int, false),
    col("rule_object_id", Int, false),
    col("is_sparse", Bit, true),
    col("is_column_set", Bit, true),
    col("generated_always_type", TinyInt, true),
    col("generated_always_type_desc", NVarChar(60), true),
    col("encryption_type", Int, true),
    col("encryption_type_desc", NVarChar(64), true),
    col("encryption_algorithm_name", SYSNAME, true),
    col("column_encryption_key_id", Int, true),
    col("column_encryption_key_database_name", SYSNAME, true),
    col("is_hidden", Bit, true),
    col("is_masked", Bit, true),
];

pub(super) static COLUMNS: ViewDef<COLUMN_WIDTH> =
    ViewDef { schema: "sys", name: "columns", columns: COLUMN_COLUMNS, rows: columns };

/// The columns of every table and view (numeric ones as decimal: the type keeps no
/// spelling), in object id order.
pub(super) fn columns(ctx: &ExecCtx, db: &str) -> Rows<COLUMN_WIDTH> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for i in 0..t.columns.len() {
            out.push((t.id, column_row(t, i)));
        }
    }
    for (view, shape) in super::view_shapes(ctx, db, &catalog) {
        for (i, c) in shape.columns.iter().enumerate() {
            out.push((view.id, column_values(i64::from(view.id), i, &c.name, &c.ty, c.nullable, false, 0)));
        }
    }
    out.sort_by_key(|(id, _)| *id);
    Ok(out.into_iter().map(|(_, row)| row).collect())
}

/// Column `i` of `t` as sys.columns shows it (its default constraint's object id, or 0).
fn column_row(t: &Table, i: usize) -> [Value; COLUMN_WIDTH] {
    let c = &t.columns[i];
    let default_id = match c.default {
        Some(_) => super::constraint_objects(t)
            .into_iter()
            .find(|d| d.kind == "D" && d.column == i as i64 + 1)
            .map_or(0, |d| i64::from(d.id)),
        None => 0,
    };
    let mut row = column_values(i64::from(t.id), i, &c.name, &c.ty, c.nullable, c.identity.is_some(), default_id);
    row[IS_COMPUTED] = bit(c.computed.is_some());
    row
}

/// Where sys.columns.is_computed is in its row.
const IS_COMPUTED: usize = 13;

/// A sys.columns row: column `i` of the object `object_id`. Strings and binaries are
/// ANSI-padded (ANSI_PADDING is always on); nothing tessera has is replicated, sparse,
/// generated, encrypted, hidden or masked.
pub(super) fn column_values(
    object_id: i64,
    i: usize,
    name: &str,
    ty: &SqlType,
    nullable: bool,
    identity: bool,
    default_id: i64,
) -> [Value; COLUMN_WIDTH] {
    let (id, len, p, sc) = type_ids(ty);
    let padded = is_string(ty) || matches!(ty, Binary(_) | VarBinary(_));
    [
        int(object_id),
        s(name),
        int(i as i64 + 1),
        int(id),
        int(id),
        int(len),
        int(p),
        int(sc),
        if is_string(ty) { s(COLLATION) } else { Value::Null },
        bit(nullable),
        bit(padded),
        bit(false),
        bit(identity),
        bit(false),
        bit(false),
        bit(false),
        bit(false),
        bit(false),
        bit(false),
        bit(false),
        int(0),
        int(default_id),
        int(0),
        bit(false),
        bit(false),
        int(0),
        s("NOT_APPLICABLE"),
        Value::Null,
        Value::Null,
        Value::Null,
        Value::Null,
        Value::Null,
        bit(false),
        bit(false),
    ]
}

pub(super) static IDENTITY_COLUMNS: ViewDef<{ COLUMN_WIDTH + 4 }> = ViewDef {
    schema: "sys",
    name: "identity_columns",
    columns: concat_columns(
        COLUMN_COLUMNS,
        [
            col("seed_value", BigInt, true),
            col("increment_value", BigInt, true),
            col("last_value", BigInt, true),
            col("is_not_for_replication", Bit, true),
        ],
    ),
    rows: identity_columns,
};

/// The identity column of every table: sys.columns' row, its seed and increment, and the
/// last value handed out (NULL while none was, and — unlike SQL Server — until this
/// server has read the table's counter, at its first insert or IDENT_CURRENT).
fn identity_columns(ctx: &ExecCtx, db: &str) -> Rows<{ COLUMN_WIDTH + 4 }> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        let Some(i) = t.identity_column() else { continue };
        let (seed, increment) = t.columns[i].identity.expect("an identity column");
        let last = t.counters.identity.load(std::sync::atomic::Ordering::Relaxed);
        // Loaded and moved on from the seed (the counter starts one increment before it).
        let last = if last == i64::MIN || last == seed - increment { Value::Null } else { int(last) };
        out.push(concat(column_row(t, i), [int(seed), int(increment), last, bit(false)]));
    }
    Ok(out)
}

pub(super) static COMPUTED_COLUMNS: ViewDef<{ COLUMN_WIDTH + 3 }> = ViewDef {
    schema: "sys",
    name: "computed_columns",
    columns: concat_columns(
        COLUMN_COLUMNS,
        [
            col("definition", NVARCHAR_MAX, true),
            col("uses_database_collation", Bit, true),
            col("is_persisted", Bit, false),
        ],
    ),
    rows: |ctx, db| {
        let (_, catalog) = catalog(ctx, db)?;
        let mut out = Vec::new();
        for o in catalog.objects() {
            let Object::Table(t) = o else { continue };
            for (i, c) in t.columns.iter().enumerate() {
                if let Some(computed) = &c.computed {
                    out.push(concat(column_row(t, i), [s(&computed.text), bit(true), bit(computed.persisted)]));
                }
            }
        }
        Ok(out)
    },
};

/// sys.types' columns, which sys.table_types begins with.
pub(super) const TYPE_COLUMNS: [Col; 15] = [
    col("name", SYSNAME, false),
    col("system_type_id", TinyInt, false),
    col("user_type_id", Int, false),
    col("schema_id", Int, false),
    col("principal_id", Int, true),
    col("max_length", SmallInt, false),
    col("precision", TinyInt, false),
    col("scale", TinyInt, false),
    col("collation_name", SYSNAME, true),
    col("is_nullable", Bit, true),
    col("is_user_defined", Bit, false),
    col("is_assembly_type", Bit, false),
    col("default_object_id", Int, false),
    col("rule_object_id", Int, false),
    col("is_table_type", Bit, false),
];

pub(super) static TYPES: ViewDef<15> = ViewDef { schema: "sys", name: "types", columns: TYPE_COLUMNS, rows: types };

pub(super) static TABLE_TYPES: ViewDef<17> = ViewDef {
    schema: "sys",
    name: "table_types",
    columns: concat_columns(
        TYPE_COLUMNS,
        [col("type_table_object_id", Int, false), col("is_memory_optimized", Bit, true)],
    ),
    rows: |ctx, db| {
        Ok(table_types(ctx, db)?.into_iter().map(|(row, id)| concat(row, [int(i64::from(id)), bit(false)])).collect())
    },
};

/// The system types, then the database's table types.
fn types(ctx: &ExecCtx, db: &str) -> Rows<15> {
    let mut out = system_types();
    out.extend(table_types(ctx, db)?.into_iter().map(|(row, _)| row));
    Ok(out)
}

/// The table types of database `db` as sys.types shows them (system type 243, their
/// user_type_id their object id), with their object ids.
fn table_types(ctx: &ExecCtx, db: &str) -> tessera_errors::SqlResult<Vec<([Value; 15], i32)>> {
    let (_, catalog) = catalog(ctx, db)?;
    let schema_id = super::schema_ids(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Module(m) = o else { continue };
        if m.kind != ModuleKind::TableType {
            continue;
        }
        let id = int(i64::from(m.id));
        let row = [
            s(&m.name),
            int(TABLE_TYPE_SYSTEM_ID),
            id.clone(),
            schema_id(&m.schema),
            Value::Null,
            int(-1),
            int(0),
            int(0),
            Value::Null,
            bit(false),
            bit(true),
            bit(false),
            int(0),
            int(0),
            bit(true),
        ];
        out.push((row, m.id));
    }
    Ok(out)
}

/// The system_type_id of every table type.
pub(crate) const TABLE_TYPE_SYSTEM_ID: i64 = 243;

/// The system types, in the `sys` schema (4): a string type has the server's collation.
fn system_types() -> Vec<[Value; 15]> {
    SYSTEM_TYPES
        .iter()
        .map(|(n, t)| {
            let (_, len, p, sc) = type_ids(t);
            let user_id = user_type_id(n, t);
            let sys_id = if *n == "sysname" { type_ids(t).0 } else { user_id };
            [
                s(n),
                int(sys_id),
                int(user_id),
                int(4),
                Value::Null,
                int(len),
                int(p),
                int(sc),
                if is_string(t) { s(COLLATION) } else { Value::Null },
                bit(*n != "sysname"),
                bit(false),
                bit(false),
                int(0),
                int(0),
                bit(false),
            ]
        })
        .collect()
}
