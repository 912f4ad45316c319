//! Tables, their columns and the types they have: sys.columns, identity_columns,
//! computed_columns and sys.types.

use super::system_types::{is_string, type_ids, user_type_id, SYSTEM_TYPES};
use super::{bit, catalog, col, concat, concat_columns, int, s, Rows, ViewDef, COLLATION, NVARCHAR_MAX, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_semantics::catalog::{Object, Table};
use tessera_semantics::plan::Col;
use tessera_semantics::types::{SqlType, SqlType::*, Value};

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

/// The columns of every table and view (numeric ones as decimal: the type keeps no
/// spelling), in object id order.
pub(super) fn columns(ctx: &ExecCtx, db: &str) -> Rows<13> {
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
            out.push((view.id, column_values(view.id, i, &c.name, &c.ty, c.nullable, false, 0)));
        }
    }
    out.sort_by_key(|(id, _)| *id);
    Ok(out.into_iter().map(|(_, row)| row).collect())
}

/// Column `i` of `t` as sys.columns shows it (its default constraint's object id, or 0).
fn column_row(t: &Table, i: usize) -> [Value; 13] {
    let c = &t.columns[i];
    let default_id = match c.default {
        Some(_) => super::constraint_objects(t)
            .into_iter()
            .find(|d| d.kind == "D" && d.column == i as i64 + 1)
            .map_or(0, |d| i64::from(d.id)),
        None => 0,
    };
    column_values(t.id, i, &c.name, &c.ty, c.nullable, c.identity.is_some(), default_id)
}

/// A sys.columns row: column `i` of the object `object_id`.
fn column_values(
    object_id: i32,
    i: usize,
    name: &str,
    ty: &SqlType,
    nullable: bool,
    identity: bool,
    default_id: i64,
) -> [Value; 13] {
    let (id, len, p, sc) = type_ids(ty);
    [
        int(i64::from(object_id)),
        s(name),
        int(i as i64 + 1),
        int(id),
        int(id),
        int(len),
        int(p),
        int(sc),
        if is_string(ty) { s(COLLATION) } else { Value::Null },
        bit(nullable),
        bit(identity),
        bit(false),
        int(default_id),
    ]
}

pub(super) static IDENTITY_COLUMNS: ViewDef<17> = ViewDef {
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
fn identity_columns(ctx: &ExecCtx, db: &str) -> Rows<17> {
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

pub(super) static COMPUTED_COLUMNS: ViewDef<16> = ViewDef {
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
    // tessera has no computed columns yet (they are refused with 40520: issue 36), so a
    // table has none; the view has SQL Server's columns for the tools that read it.
    rows: |_, _| Ok(Vec::new()),
};

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
