//! Tables, their columns and the types they have: sys.columns, sys.types,
//! INFORMATION_SCHEMA.TABLES and INFORMATION_SCHEMA.COLUMNS.

use super::system_types::{is_string, type_ids, user_type_id, SYSTEM_TYPES};
use super::{bit, catalog, col, int, s, Rows, ViewDef, COLLATION, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_semantics::catalog::{ModuleKind, Object};
use tessera_semantics::plan::Col;
use tessera_semantics::types::{self, SqlType, SqlType::*, Value};

/// sys.columns' columns, which sys.system_columns and sys.all_columns share.
pub(super) const COLUMN_COLUMNS: [Col; 13] = [
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
    col("is_identity", Bit, false),
    col("is_computed", Bit, false),
    col("default_object_id", Int, false),
];

pub(super) static COLUMNS: ViewDef<13> =
    ViewDef { schema: "sys", name: "columns", columns: COLUMN_COLUMNS, rows: columns };

/// The columns of every table (numeric ones as decimal: the type keeps no spelling).
pub(super) fn columns(ctx: &ExecCtx, db: &str) -> Rows<13> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for (i, c) in t.columns.iter().enumerate() {
            let (id, len, p, sc) = type_ids(&c.ty);
            out.push([
                int(i64::from(t.id)),
                s(&c.name),
                int(i as i64 + 1),
                int(id),
                int(id),
                int(len),
                int(p),
                int(sc),
                if is_string(&c.ty) { s(COLLATION) } else { Value::Null },
                bit(c.nullable),
                bit(c.identity.is_some()),
                bit(false),
                int(0),
            ]);
        }
    }
    Ok(out)
}

pub(super) static TYPES: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "types",
    columns: [
        col("name", SYSNAME, false),
        col("system_type_id", TinyInt, false),
        col("user_type_id", Int, false),
        col("schema_id", Int, false),
        col("max_length", SmallInt, false),
        col("precision", TinyInt, false),
        col("scale", TinyInt, false),
        col("is_nullable", Bit, true),
        col("is_user_defined", Bit, false),
    ],
    rows: system_types,
};

fn system_types(_: &ExecCtx, _db: &str) -> Rows<9> {
    Ok(SYSTEM_TYPES
        .iter()
        .map(|(n, t)| {
            let (_, len, p, sc) = type_ids(t);
            let user_id = user_type_id(n, t);
            let sys_id = if *n == "sysname" { type_ids(t).0 } else { user_id };
            [s(n), int(sys_id), int(user_id), int(4), int(len), int(p), int(sc), bit(*n != "sysname"), bit(false)]
        })
        .collect())
}

pub(super) static INFORMATION_SCHEMA_TABLES: ViewDef<4> = ViewDef {
    schema: "information_schema",
    name: "tables",
    columns: [
        col("TABLE_CATALOG", SYSNAME, true),
        col("TABLE_SCHEMA", SYSNAME, true),
        col("TABLE_NAME", SYSNAME, false),
        col("TABLE_TYPE", VarChar(10), true),
    ],
    rows: information_schema_tables,
};

/// Tables and views.
fn information_schema_tables(ctx: &ExecCtx, db: &str) -> Rows<4> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        match o {
            Object::Table(t) => out.push([s(database.name()), s(&t.schema), s(&t.name), s("BASE TABLE")]),
            Object::Module(m) if m.kind == ModuleKind::View => {
                out.push([s(database.name()), s(&m.schema), s(&m.name), s("VIEW")])
            }
            Object::Module(_) => {}
        }
    }
    Ok(out)
}

pub(super) static INFORMATION_SCHEMA_COLUMNS: ViewDef<11> = ViewDef {
    schema: "information_schema",
    name: "columns",
    columns: [
        col("TABLE_CATALOG", SYSNAME, true),
        col("TABLE_SCHEMA", SYSNAME, true),
        col("TABLE_NAME", SYSNAME, false),
        col("COLUMN_NAME", SYSNAME, true),
        col("ORDINAL_POSITION", Int, true),
        col("COLUMN_DEFAULT", NVarChar(4000), true),
        col("IS_NULLABLE", VarChar(3), true),
        col("DATA_TYPE", NVarChar(128), true),
        col("CHARACTER_MAXIMUM_LENGTH", Int, true),
        col("NUMERIC_PRECISION", TinyInt, true),
        col("NUMERIC_SCALE", Int, true),
    ],
    rows: information_schema_columns,
};

/// The columns of every table.
fn information_schema_columns(ctx: &ExecCtx, db: &str) -> Rows<11> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for (i, c) in t.columns.iter().enumerate() {
            let (_, len, p, sc) = type_ids(&c.ty);
            let chars = match c.ty {
                SqlType::NChar(_) | SqlType::NVarChar(_) if len > 0 => Value::Int(len / 2),
                _ if is_string(&c.ty) || matches!(c.ty, SqlType::Binary(_) | SqlType::VarBinary(_)) => Value::Int(len),
                _ => Value::Null,
            };
            let numeric = types::is_numeric(&c.ty);
            out.push([
                s(database.name()),
                s(&t.schema),
                s(&t.name),
                s(&c.name),
                int(i as i64 + 1),
                c.default.as_ref().map_or(Value::Null, |d| s(&d.text)),
                s(if c.nullable { "YES" } else { "NO" }),
                s(types::base_type_name(&c.ty)),
                chars,
                if numeric { int(p) } else { Value::Null },
                if numeric { int(sc) } else { Value::Null },
            ]);
        }
    }
    Ok(out)
}
