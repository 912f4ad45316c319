//! The system views as objects: sys.system_objects, sys.system_views and
//! sys.system_columns (the system views and their columns), and sys.all_objects,
//! sys.all_views and sys.all_columns (the database's own objects, views and columns, then
//! the system ones), as tools that list every object read them.

use super::columns::{column_values, columns, COLUMN_COLUMNS, COLUMN_WIDTH};
use super::objects::{object_tail, objects, OBJECT_COLUMNS, OBJECT_WIDTH};
use super::{all, concat, datetime, int, s, Rows, ViewDef};
use crate::runtime::ExecCtx;
use tessera_semantics::plan::View;
use tessera_semantics::types::Value;

/// SQL Server's schema ids of `sys` and `INFORMATION_SCHEMA`, the same in every database.
const SYS_SCHEMA_ID: i64 = 4;
const INFORMATION_SCHEMA_ID: i64 = 3;

/// When the system objects were "created": the server's build has no such date, so the
/// product's release day (SQL Server 2022 RTM, 2022-11-16), as constant as SQL Server's.
const SYSTEM_CREATED_EPOCH: i64 = 1_668_556_800;

pub(super) static SYSTEM_OBJECTS: ViewDef<OBJECT_WIDTH> =
    ViewDef { schema: "sys", name: "system_objects", columns: OBJECT_COLUMNS, rows: system_objects };

/// Every system object tessera has is a view.
pub(super) static SYSTEM_VIEWS: ViewDef<OBJECT_WIDTH> =
    ViewDef { schema: "sys", name: "system_views", columns: OBJECT_COLUMNS, rows: system_objects };

pub(super) static ALL_VIEWS: ViewDef<OBJECT_WIDTH> =
    ViewDef { schema: "sys", name: "all_views", columns: OBJECT_COLUMNS, rows: all_views };

pub(super) static ALL_OBJECTS: ViewDef<OBJECT_WIDTH> =
    ViewDef { schema: "sys", name: "all_objects", columns: OBJECT_COLUMNS, rows: all_objects };

pub(super) static SYSTEM_COLUMNS: ViewDef<COLUMN_WIDTH> =
    ViewDef { schema: "sys", name: "system_columns", columns: COLUMN_COLUMNS, rows: system_columns };

pub(super) static ALL_COLUMNS: ViewDef<COLUMN_WIDTH> =
    ViewDef { schema: "sys", name: "all_columns", columns: COLUMN_COLUMNS, rows: all_columns };

/// A system view's object id: negative, as SQL Server's system objects' are, and fixed
/// by its place in the list of views.
fn object_id(view: &View) -> i64 {
    -100 - view.id as i64
}

/// The object id of the system view `schema.name` (OBJECT_ID('sys.objects')), by either
/// case.
pub(crate) fn view_id(schema: &str, name: &str) -> Option<i64> {
    super::lookup(&schema.to_lowercase(), &name.to_lowercase()).map(|v| object_id(&v))
}

/// The schema and name of the system view with object id `id` (OBJECT_NAME of a negative
/// id), INFORMATION_SCHEMA's in capitals.
pub(crate) fn view_named(id: i64) -> Option<(&'static str, String)> {
    let view = all().find(|v| object_id(v) == id)?;
    Some(if view.schema == "sys" {
        ("sys", view.name.to_string())
    } else {
        ("INFORMATION_SCHEMA", view.name.to_uppercase())
    })
}

fn system_objects(_: &ExecCtx, _: &str) -> Rows<OBJECT_WIDTH> {
    Ok(all()
        .map(|v| {
            // INFORMATION_SCHEMA's views are named in capitals, sys's in small letters.
            let (schema_id, name) = if v.schema == "sys" {
                (SYS_SCHEMA_ID, v.name.to_string())
            } else {
                (INFORMATION_SCHEMA_ID, v.name.to_uppercase())
            };
            let head = [
                s(&name),
                int(object_id(&v)),
                Value::Null,
                int(schema_id),
                int(0),
                s("V "),
                s("VIEW"),
                datetime(SYSTEM_CREATED_EPOCH),
                datetime(SYSTEM_CREATED_EPOCH),
            ];
            concat(head, object_tail(true))
        })
        .collect())
}

/// The database's views, then the system views.
fn all_views(ctx: &ExecCtx, db: &str) -> Rows<OBJECT_WIDTH> {
    let mut out: Vec<_> =
        objects(ctx, db)?.into_iter().filter(|o| matches!(&o[5], Value::Str(t) if t.trim_end() == "V")).collect();
    out.extend(system_objects(ctx, db)?);
    Ok(out)
}

fn all_objects(ctx: &ExecCtx, db: &str) -> Rows<OBJECT_WIDTH> {
    let mut out = objects(ctx, db)?;
    out.extend(system_objects(ctx, db)?);
    Ok(out)
}

fn system_columns(_: &ExecCtx, _: &str) -> Rows<COLUMN_WIDTH> {
    let mut out = Vec::new();
    for v in all() {
        for (i, c) in v.columns.iter().enumerate() {
            out.push(column_values(object_id(&v), i, c.name, &c.ty, c.nullable, false, 0));
        }
    }
    Ok(out)
}

fn all_columns(ctx: &ExecCtx, db: &str) -> Rows<COLUMN_WIDTH> {
    let mut out = columns(ctx, db)?;
    out.extend(system_columns(ctx, db)?);
    Ok(out)
}
