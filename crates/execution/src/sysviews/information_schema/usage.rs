//! What views and functions are made of: VIEW_TABLE_USAGE and VIEW_COLUMN_USAGE (the
//! tables and columns each view's definition reads, as it binds now), ROUTINE_COLUMNS (the
//! columns an inline table-valued function returns), and DOMAINS and COLUMN_DOMAIN_USAGE
//! (alias types, which tessera has none of: CREATE TYPE is not there yet).

use super::{column_row, COLUMN_DESCRIPTION, TABLE_NAME};
use crate::runtime::ExecCtx;
use crate::sysviews::{catalog, col, concat, concat_columns, s, view_shapes, Rows, ViewDef, SYSNAME};
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{ModuleKind, Object};
use tessera_semantics::plan::Col;
use tessera_semantics::types::{SqlType::*, Value};

/// The view a usage row is about.
const VIEW_NAME: [Col; 3] =
    [col("VIEW_CATALOG", SYSNAME, true), col("VIEW_SCHEMA", SYSNAME, true), col("VIEW_NAME", SYSNAME, false)];

const VIEW_AND_TABLE: [Col; 6] = concat_columns(VIEW_NAME, TABLE_NAME);

pub(in crate::sysviews) static VIEW_TABLE_USAGE: ViewDef<6> = ViewDef {
    schema: "information_schema",
    name: "view_table_usage",
    columns: VIEW_AND_TABLE,
    rows: |ctx, db| Ok(view_uses(ctx, db)?.into_iter().map(|u| concat(u.view, u.table)).collect()),
};

pub(in crate::sysviews) static VIEW_COLUMN_USAGE: ViewDef<7> = ViewDef {
    schema: "information_schema",
    name: "view_column_usage",
    columns: concat_columns(VIEW_AND_TABLE, [col("COLUMN_NAME", SYSNAME, true)]),
    rows: |ctx, db| {
        let mut out = Vec::new();
        for u in view_uses(ctx, db)? {
            for c in &u.columns {
                let head: [Value; 6] = concat(u.view.clone(), u.table.clone());
                out.push(concat(head, [s(c)]));
            }
        }
        Ok(out)
    },
};

/// A table a view's definition reads: the view and the table, named as VIEW_NAME and
/// TABLE_NAME, and the names of the table's columns it reads.
struct ViewUse {
    view: [Value; 3],
    table: [Value; 3],
    columns: Vec<String>,
}

/// Each table each view of `db` reads.
fn view_uses(ctx: &ExecCtx, db: &str) -> SqlResult<Vec<ViewUse>> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for (view, shape) in view_shapes(ctx, db, &catalog) {
        for (at, key, columns) in &shape.uses {
            let table_db = ctx.db_name(at);
            let Ok(table_catalog) = ctx.catalog_of(&table_db) else { continue };
            let Some(Object::Table(t)) = table_catalog.lookup_key(key) else { continue };
            out.push(ViewUse {
                view: [s(database.name()), s(&view.schema), s(&view.name)],
                table: [s(&table_db), s(&t.schema), s(&t.name)],
                columns: columns
                    .iter()
                    .filter_map(|&c| t.columns.get(usize::from(c)))
                    .map(|c| c.name.clone())
                    .collect(),
            });
        }
    }
    Ok(out)
}

pub(in crate::sysviews) static ROUTINE_COLUMNS: ViewDef<23> = ViewDef {
    schema: "information_schema",
    name: "routine_columns",
    columns: COLUMN_DESCRIPTION,
    rows: routine_columns,
};

/// The columns each inline table-valued function returns.
fn routine_columns(ctx: &ExecCtx, db: &str) -> Rows<23> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Module(m) = o else { continue };
        if m.kind != ModuleKind::TableFunction {
            continue;
        }
        let mut binder = tessera_semantics::bind::Binder::new(ctx.shared, &*ctx.session, &[]);
        let Ok(shape) = binder.module_shape(db, m) else { continue };
        for (i, c) in shape.columns.iter().enumerate() {
            out.push(column_row((database.name(), &m.schema, &m.name), i, &c.name, None, c.nullable, &c.ty));
        }
    }
    Ok(out)
}

/// An alias type (`CREATE TYPE … FROM`), as DOMAINS and COLUMN_DOMAIN_USAGE name it.
const DOMAIN_NAME: [Col; 3] =
    [col("DOMAIN_CATALOG", SYSNAME, true), col("DOMAIN_SCHEMA", SYSNAME, true), col("DOMAIN_NAME", SYSNAME, false)];

const DOMAIN_AND_TABLE: [Col; 6] = concat_columns(DOMAIN_NAME, TABLE_NAME);

pub(in crate::sysviews) static DOMAINS: ViewDef<17> = ViewDef {
    schema: "information_schema",
    name: "domains",
    columns: concat_columns(
        DOMAIN_NAME,
        [
            col("DATA_TYPE", SYSNAME, false),
            col("CHARACTER_MAXIMUM_LENGTH", Int, true),
            col("CHARACTER_OCTET_LENGTH", Int, true),
            col("COLLATION_CATALOG", SYSNAME, true),
            col("COLLATION_SCHEMA", SYSNAME, true),
            col("COLLATION_NAME", SYSNAME, true),
            col("CHARACTER_SET_CATALOG", SYSNAME, true),
            col("CHARACTER_SET_SCHEMA", SYSNAME, true),
            col("CHARACTER_SET_NAME", SYSNAME, true),
            col("NUMERIC_PRECISION", TinyInt, true),
            col("NUMERIC_PRECISION_RADIX", SmallInt, true),
            col("NUMERIC_SCALE", Int, true),
            col("DATETIME_PRECISION", SmallInt, true),
            col("DOMAIN_DEFAULT", NVarChar(4000), true),
        ],
    ),
    // No alias types exist in tessera yet, so there are none to list.
    rows: |_, _| Ok(Vec::new()),
};

pub(in crate::sysviews) static COLUMN_DOMAIN_USAGE: ViewDef<7> = ViewDef {
    schema: "information_schema",
    name: "column_domain_usage",
    columns: concat_columns(DOMAIN_AND_TABLE, [col("COLUMN_NAME", SYSNAME, true)]),
    // No column can be of an alias type yet.
    rows: |_, _| Ok(Vec::new()),
};
