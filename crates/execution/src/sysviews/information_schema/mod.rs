//! The INFORMATION_SCHEMA views, with SQL Server's columns and the rows its definitions
//! give: TABLES, COLUMNS, VIEWS, ROUTINES, PARAMETERS, SCHEMATA, TABLE_CONSTRAINTS, KEY_COLUMN_USAGE,
//! REFERENTIAL_CONSTRAINTS, CONSTRAINT_COLUMN_USAGE, CONSTRAINT_TABLE_USAGE,
//! CHECK_CONSTRAINTS and SEQUENCES; `usage` has what views and functions use and domains,
//! `privileges` the table and column privileges. Like SQL Server's, they list only the
//! objects the session may see (`super::catalog`).

mod privileges;
mod usage;

pub(super) use privileges::{COLUMN_PRIVILEGES, TABLE_PRIVILEGES};
pub(super) use usage::{COLUMN_DOMAIN_USAGE, DOMAINS, ROUTINE_COLUMNS, VIEW_COLUMN_USAGE, VIEW_TABLE_USAGE};

use super::indexes::constraint_objects;
use super::system_types::{is_string, type_ids};
use super::{catalog, col, concat, concat_columns, datetime, int, s, Rows, ViewDef, COLLATION, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_semantics::catalog::{Action, ModuleKind, Object, Table};
use tessera_semantics::plan::Col;
use tessera_semantics::types::{self, SqlType, SqlType::*, Value};

pub(super) static TABLES: ViewDef<4> = ViewDef {
    schema: "information_schema",
    name: "tables",
    columns: concat_columns(TABLE_NAME, [col("TABLE_TYPE", VarChar(10), true)]),
    rows: tables,
};

/// Tables and views.
fn tables(ctx: &ExecCtx, db: &str) -> Rows<4> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        match o {
            Object::Table(t) => out.push([s(database.name()), s(&t.schema), s(&t.name), s("BASE TABLE")]),
            Object::Module(m) if m.kind == ModuleKind::View => {
                out.push([s(database.name()), s(&m.schema), s(&m.name), s("VIEW")])
            }
            Object::Module(_) | Object::Sequence(_) => {}
        }
    }
    Ok(out)
}

/// A column of a table, view or function (COLUMNS and ROUTINE_COLUMNS).
const COLUMN_DESCRIPTION: [Col; 23] = [
    col("TABLE_CATALOG", SYSNAME, true),
    col("TABLE_SCHEMA", SYSNAME, true),
    col("TABLE_NAME", SYSNAME, false),
    col("COLUMN_NAME", SYSNAME, true),
    col("ORDINAL_POSITION", Int, true),
    col("COLUMN_DEFAULT", NVarChar(4000), true),
    col("IS_NULLABLE", VarChar(3), true),
    col("DATA_TYPE", NVarChar(128), true),
    col("CHARACTER_MAXIMUM_LENGTH", Int, true),
    col("CHARACTER_OCTET_LENGTH", Int, true),
    col("NUMERIC_PRECISION", TinyInt, true),
    col("NUMERIC_PRECISION_RADIX", SmallInt, true),
    col("NUMERIC_SCALE", Int, true),
    col("DATETIME_PRECISION", SmallInt, true),
    col("CHARACTER_SET_CATALOG", SYSNAME, true),
    col("CHARACTER_SET_SCHEMA", SYSNAME, true),
    col("CHARACTER_SET_NAME", SYSNAME, true),
    col("COLLATION_CATALOG", SYSNAME, true),
    col("COLLATION_SCHEMA", SYSNAME, true),
    col("COLLATION_NAME", SYSNAME, true),
    col("DOMAIN_CATALOG", SYSNAME, true),
    col("DOMAIN_SCHEMA", SYSNAME, true),
    col("DOMAIN_NAME", SYSNAME, true),
];

pub(super) static COLUMNS: ViewDef<23> =
    ViewDef { schema: "information_schema", name: "columns", columns: COLUMN_DESCRIPTION, rows: columns };

/// The columns of every table and view, described as SQL Server's view describes them
/// (by the column's system type id).
fn columns(ctx: &ExecCtx, db: &str) -> Rows<23> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for (i, c) in t.columns.iter().enumerate() {
            let default = c.default.as_ref().map(|d| d.text.as_str());
            out.push((t.id, column_row((database.name(), &t.schema, &t.name), i, &c.name, default, c.nullable, &c.ty)));
        }
    }
    for (v, shape) in super::view_shapes(ctx, db, &catalog) {
        for (i, c) in shape.columns.iter().enumerate() {
            out.push((v.id, column_row((database.name(), &v.schema, &v.name), i, &c.name, None, c.nullable, &c.ty)));
        }
    }
    out.sort_by_key(|(id, _)| *id);
    Ok(out.into_iter().map(|(_, row)| row).collect())
}

/// One INFORMATION_SCHEMA.COLUMNS row: column `i` of the table or view `(db, schema, name)`.
fn column_row(
    (db, schema, name): (&str, &str, &str),
    i: usize,
    column: &str,
    default: Option<&str>,
    nullable: bool,
    ty: &SqlType,
) -> [Value; 23] {
    let d = ColumnType::of(ty);
    [
        s(db),
        s(schema),
        s(name),
        s(column),
        int(i as i64 + 1),
        default.map_or(Value::Null, s),
        s(if nullable { "YES" } else { "NO" }),
        s(types::base_type_name(ty)),
        d.max_chars,
        d.max_bytes,
        d.precision,
        d.radix,
        d.scale,
        d.datetime_precision,
        Value::Null,
        Value::Null,
        d.charset.map_or(Value::Null, s),
        Value::Null,
        Value::Null,
        if d.charset.is_some() { s(COLLATION) } else { Value::Null },
        Value::Null,
        Value::Null,
        Value::Null,
    ]
}

/// What INFORMATION_SCHEMA.COLUMNS says of a type.
struct ColumnType {
    max_chars: Value,
    max_bytes: Value,
    precision: Value,
    radix: Value,
    scale: Value,
    datetime_precision: Value,
    charset: Option<&'static str>,
}

impl ColumnType {
    /// SQL Server's rules, by system type id: precision for the numeric types (radix 10,
    /// or 2 for float and real), scale for the exact ones, a datetime precision for the
    /// date and time types, lengths (-1 for `(max)`) and a character set for the strings.
    fn of(ty: &SqlType) -> ColumnType {
        let (id, len, precision, scale) = type_ids(ty);
        let binary = matches!(ty, Binary(_) | VarBinary(_));
        let unicode = matches!(ty, NChar(_) | NVarChar(_));
        let (max_chars, max_bytes) = match len {
            _ if !is_string(ty) && !binary => (Value::Null, Value::Null),
            -1 => (int(-1), int(-1)),
            n if unicode => (int(n / 2), int(n)),
            n => (int(n), int(n)),
        };
        let numeric = [48, 52, 56, 59, 60, 62, 106, 108, 122, 127].contains(&id);
        let date = [40, 41, 42, 43, 58, 61].contains(&id);
        let radix = match id {
            59 | 62 => int(2),
            _ if numeric => int(10),
            _ => Value::Null,
        };
        ColumnType {
            max_chars,
            max_bytes,
            precision: if numeric { int(precision) } else { Value::Null },
            radix,
            scale: if numeric && !matches!(id, 59 | 62) { int(scale) } else { Value::Null },
            datetime_precision: if date { int(scale) } else { Value::Null },
            charset: match ty {
                _ if unicode => Some("UNICODE"),
                _ if is_string(ty) => Some("iso_1"),
                _ => None,
            },
        }
    }
}

pub(super) static VIEWS: ViewDef<6> = ViewDef {
    schema: "information_schema",
    name: "views",
    columns: concat_columns(
        TABLE_NAME,
        [
            col("VIEW_DEFINITION", NVarChar(4000), true),
            col("CHECK_OPTION", VarChar(7), true),
            col("IS_UPDATABLE", VarChar(2), true),
        ],
    ),
    rows: views,
};

/// Views, with the first 4,000 characters of their definitions (NULL without VIEW
/// DEFINITION).
fn views(ctx: &ExecCtx, db: &str) -> Rows<6> {
    let (database, catalog) = catalog(ctx, db)?;
    let visible = super::definitions_visible(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Module(m) = o else { continue };
        if m.kind != ModuleKind::View {
            continue;
        }
        let text: String = m.text.chars().take(4000).collect();
        let check = m.text.to_ascii_uppercase().contains("WITH CHECK OPTION");
        out.push([
            s(database.name()),
            s(&m.schema),
            s(&m.name),
            if visible(&m.schema, m.id) { s(&text) } else { Value::Null },
            s(if check { "CASCADE" } else { "NONE" }),
            s("NO"),
        ]);
    }
    Ok(out)
}

pub(super) static ROUTINES: ViewDef<8> = ViewDef {
    schema: "information_schema",
    name: "routines",
    columns: [
        col("ROUTINE_CATALOG", SYSNAME, true),
        col("ROUTINE_SCHEMA", SYSNAME, true),
        col("ROUTINE_NAME", SYSNAME, false),
        col("ROUTINE_TYPE", NVarChar(20), true),
        col("DATA_TYPE", SYSNAME, true),
        col("ROUTINE_DEFINITION", NVarChar(4000), true),
        col("CREATED", DateTime, false),
        col("LAST_ALTERED", DateTime, false),
    ],
    rows: routines,
};

/// Procedures and functions; the definition's first 4,000 characters (NULL without VIEW
/// DEFINITION).
fn routines(ctx: &ExecCtx, db: &str) -> Rows<8> {
    let (database, catalog) = catalog(ctx, db)?;
    let visible = super::definitions_visible(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Module(m) = o else { continue };
        if !matches!(
            m.kind,
            ModuleKind::Procedure
                | ModuleKind::ScalarFunction
                | ModuleKind::TableFunction
                | ModuleKind::MultiStatementFunction
        ) {
            continue;
        }
        let is_proc = m.kind == ModuleKind::Procedure;
        let text: String = m.text.chars().take(4000).collect();
        out.push([
            s(database.name()),
            s(&m.schema),
            s(&m.name),
            s(if is_proc { "PROCEDURE" } else { "FUNCTION" }),
            if is_proc {
                Value::Null
            } else {
                s(if matches!(m.kind, ModuleKind::TableFunction | ModuleKind::MultiStatementFunction) {
                    "TABLE"
                } else {
                    ""
                })
            },
            if visible(&m.schema, m.id) { s(&text) } else { Value::Null },
            datetime(m.created),
            datetime(m.modified),
        ]);
    }
    Ok(out)
}

pub(super) static PARAMETERS: ViewDef<29> = ViewDef {
    schema: "information_schema",
    name: "parameters",
    columns: [
        col("SPECIFIC_CATALOG", SYSNAME, true),
        col("SPECIFIC_SCHEMA", SYSNAME, true),
        col("SPECIFIC_NAME", SYSNAME, false),
        col("ORDINAL_POSITION", Int, true),
        col("PARAMETER_MODE", NVarChar(10), true),
        col("IS_RESULT", NVarChar(10), true),
        col("AS_LOCATOR", NVarChar(10), true),
        col("PARAMETER_NAME", SYSNAME, true),
        col("DATA_TYPE", NVarChar(128), true),
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
        col("INTERVAL_TYPE", NVarChar(30), true),
        col("INTERVAL_PRECISION", SmallInt, true),
        col("USER_DEFINED_TYPE_CATALOG", SYSNAME, true),
        col("USER_DEFINED_TYPE_SCHEMA", SYSNAME, true),
        col("USER_DEFINED_TYPE_NAME", SYSNAME, true),
        col("SCOPE_CATALOG", SYSNAME, true),
        col("SCOPE_SCHEMA", SYSNAME, true),
        col("SCOPE_NAME", SYSNAME, true),
    ],
    rows: parameters,
};

/// The parameters of procedures and functions, in order (a scalar function's result
/// first, at position 0, unnamed): OUTPUT parameters are INOUT, as in SQL Server.
fn parameters(ctx: &ExecCtx, db: &str) -> Rows<29> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Module(m) = o else { continue };
        let (params, returns) = super::module_signature(m);
        let mut row = |position: i64, mode: &str, result: bool, name: &str, ty: &SqlType| {
            let d = ColumnType::of(ty);
            out.push([
                s(database.name()),
                s(&m.schema),
                s(&m.name),
                int(position),
                s(mode),
                s(if result { "YES" } else { "NO" }),
                s("NO"),
                s(name),
                s(types::base_type_name(ty)),
                d.max_chars,
                d.max_bytes,
                Value::Null,
                Value::Null,
                if d.charset.is_some() { s(COLLATION) } else { Value::Null },
                Value::Null,
                Value::Null,
                d.charset.map_or(Value::Null, s),
                d.precision,
                d.radix,
                d.scale,
                d.datetime_precision,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            ]);
        };
        if let Some(ty) = returns {
            row(0, "OUT", true, "", &ty);
        }
        for (i, p) in params.iter().enumerate() {
            let ty = types::resolve_type(&p.ty, false).unwrap_or(SqlType::Int);
            row(i as i64 + 1, if p.output { "INOUT" } else { "IN" }, false, &p.name, &ty);
        }
    }
    Ok(out)
}

pub(super) static SCHEMATA: ViewDef<6> = ViewDef {
    schema: "information_schema",
    name: "schemata",
    columns: [
        col("CATALOG_NAME", SYSNAME, true),
        col("SCHEMA_NAME", SYSNAME, false),
        col("SCHEMA_OWNER", SYSNAME, true),
        col("DEFAULT_CHARACTER_SET_CATALOG", VarChar(6), true),
        col("DEFAULT_CHARACTER_SET_SCHEMA", VarChar(3), true),
        col("DEFAULT_CHARACTER_SET_NAME", SYSNAME, true),
    ],
    rows: schemata,
};

/// The database's schemas, by id, with their owners.
fn schemata(ctx: &ExecCtx, db: &str) -> Rows<6> {
    let security = ctx.shared.security(&ctx.session.catalog_memo, db)?;
    let database = ctx.shared.database(db)?;
    let mut schemas: Vec<_> = security.schemas().collect();
    schemas.sort_by_key(|sc| sc.id);
    Ok(schemas
        .into_iter()
        .map(|sc| {
            let owner = security.principal_by_id(sc.owner).map_or(Value::Null, |p| s(&p.name));
            [s(database.name()), s(&sc.name), owner, Value::Null, Value::Null, s("iso_1")]
        })
        .collect())
}

/// The columns that name a constraint: its catalog, schema and name (a constraint is in
/// its table's schema).
const CONSTRAINT_NAME: [Col; 3] = [
    col("CONSTRAINT_CATALOG", SYSNAME, true),
    col("CONSTRAINT_SCHEMA", SYSNAME, true),
    col("CONSTRAINT_NAME", SYSNAME, false),
];

/// The columns that name a table: its catalog, schema and name.
const TABLE_NAME: [Col; 3] =
    [col("TABLE_CATALOG", SYSNAME, true), col("TABLE_SCHEMA", SYSNAME, true), col("TABLE_NAME", SYSNAME, false)];

/// A constraint named as [`CONSTRAINT_NAME`].
fn constraint_name(database: &str, t: &Table, name: &str) -> [Value; 3] {
    [s(database), s(&t.schema), s(name)]
}

/// A table named as [`TABLE_NAME`].
fn table_name(database: &str, t: &Table) -> [Value; 3] {
    [s(database), s(&t.schema), s(&t.name)]
}

/// A constraint, then its table, as [`CONSTRAINT_NAME`] then [`TABLE_NAME`].
const CONSTRAINT_AND_TABLE: [Col; 6] = concat_columns(CONSTRAINT_NAME, TABLE_NAME);

/// A constraint of `t` and `t`, as [`CONSTRAINT_AND_TABLE`].
fn constraint_and_table(database: &str, t: &Table, name: &str) -> [Value; 6] {
    concat(constraint_name(database, t, name), table_name(database, t))
}

/// A table, then one of its constraints.
const TABLE_AND_CONSTRAINT: [Col; 6] = concat_columns(TABLE_NAME, CONSTRAINT_NAME);

pub(super) static TABLE_CONSTRAINTS: ViewDef<9> = ViewDef {
    schema: "information_schema",
    name: "table_constraints",
    columns: concat_columns(
        CONSTRAINT_AND_TABLE,
        [
            col("CONSTRAINT_TYPE", VarChar(11), true),
            col("IS_DEFERRABLE", VarChar(2), false),
            col("INITIALLY_DEFERRED", VarChar(2), false),
        ],
    ),
    rows: table_constraints,
};

/// Primary keys, unique constraints, foreign keys and checks (defaults are not
/// constraints here, as in SQL Server).
fn table_constraints(ctx: &ExecCtx, db: &str) -> Rows<9> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for c in constraint_objects(t) {
            let kind = match c.kind {
                "PK" => "PRIMARY KEY",
                "UQ" => "UNIQUE",
                "F" => "FOREIGN KEY",
                "C" => "CHECK",
                _ => continue,
            };
            out.push(concat(constraint_and_table(database.name(), t, &c.name), [s(kind), s("NO"), s("NO")]));
        }
    }
    Ok(out)
}

/// A table's key constraints and foreign keys with the columns they hold, in order:
/// (constraint name, columns).
fn key_columns(t: &Table) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = t
        .indexes
        .iter()
        .filter(|ix| ix.primary_key || ix.unique_constraint)
        .map(|ix| (ix.name.clone(), ix.columns.iter().map(|&(c, _)| c).collect()))
        .collect();
    out.extend(t.foreign_keys.iter().map(|fk| (fk.name.clone(), fk.columns.clone())));
    out
}

pub(super) static KEY_COLUMN_USAGE: ViewDef<8> = ViewDef {
    schema: "information_schema",
    name: "key_column_usage",
    columns: concat_columns(
        CONSTRAINT_AND_TABLE,
        [col("COLUMN_NAME", SYSNAME, true), col("ORDINAL_POSITION", Int, true)],
    ),
    rows: key_column_usage,
};

/// The columns of primary keys, unique constraints and foreign keys, by position.
fn key_column_usage(ctx: &ExecCtx, db: &str) -> Rows<8> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for (name, columns) in key_columns(t) {
            for (i, &c) in columns.iter().enumerate() {
                let named = constraint_and_table(database.name(), t, &name);
                out.push(concat(named, [s(&t.columns[c].name), int(i as i64 + 1)]));
            }
        }
    }
    Ok(out)
}

pub(super) static REFERENTIAL_CONSTRAINTS: ViewDef<9> = ViewDef {
    schema: "information_schema",
    name: "referential_constraints",
    columns: [
        CONSTRAINT_NAME[0],
        CONSTRAINT_NAME[1],
        CONSTRAINT_NAME[2],
        col("UNIQUE_CONSTRAINT_CATALOG", SYSNAME, true),
        col("UNIQUE_CONSTRAINT_SCHEMA", SYSNAME, true),
        col("UNIQUE_CONSTRAINT_NAME", SYSNAME, true),
        col("MATCH_OPTION", VarChar(7), true),
        col("UPDATE_RULE", VarChar(11), true),
        col("DELETE_RULE", VarChar(11), true),
    ],
    rows: referential_constraints,
};

/// Foreign keys, each with the key of the referenced table whose columns it references
/// (the primary key or unique constraint on them; NULL for a unique index that is not a
/// constraint, as in SQL Server).
fn referential_constraints(ctx: &ExecCtx, db: &str) -> Rows<9> {
    let (database, catalog) = catalog(ctx, db)?;
    let rule = |a: Action| match a {
        Action::NoAction => "NO ACTION",
        Action::Cascade => "CASCADE",
        Action::SetNull => "SET NULL",
        Action::SetDefault => "SET DEFAULT",
    };
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for fk in &t.foreign_keys {
            let parent = catalog.table_by_id(fk.ref_table);
            let key = parent.and_then(|p| {
                let mut wanted = fk.ref_columns.clone();
                wanted.sort_unstable();
                p.indexes.iter().filter(|ix| ix.primary_key || ix.unique_constraint).find(|ix| {
                    let mut cols: Vec<usize> = ix.columns.iter().map(|&(c, _)| c).collect();
                    cols.sort_unstable();
                    cols == wanted
                })
            });
            let unique = match (parent, key) {
                (Some(p), Some(ix)) => [s(database.name()), s(&p.schema), s(&ix.name)],
                _ => [Value::Null, Value::Null, Value::Null],
            };
            let named: [Value; 6] = concat(constraint_name(database.name(), t, &fk.name), unique);
            out.push(concat(named, [s("SIMPLE"), s(rule(fk.on_update)), s(rule(fk.on_delete))]));
        }
    }
    Ok(out)
}

/// Every constraint of a table (keys, foreign keys, checks) with the columns it uses:
/// a check's are the table's columns its text names.
fn constraint_columns(t: &Table) -> Vec<(String, Vec<usize>)> {
    let mut out = key_columns(t);
    for c in &t.checks {
        out.push((c.name.clone(), columns_named(t, &c.text)));
    }
    out
}

/// The table's columns that `text` (a check's definition) names, in column order: the
/// identifiers in it that are column names and not followed by a parenthesis (a
/// function's name).
pub(crate) fn columns_named(t: &Table, text: &str) -> Vec<usize> {
    let mut used = vec![false; t.columns.len()];
    for (name, _) in tessera_syntax::lexer::name_references(text).unwrap_or_default() {
        if let Some(c) = t.column(&name) {
            used[c] = true;
        }
    }
    (0..used.len()).filter(|&c| used[c]).collect()
}

pub(super) static CONSTRAINT_COLUMN_USAGE: ViewDef<7> = ViewDef {
    schema: "information_schema",
    name: "constraint_column_usage",
    columns: concat_columns(
        concat_columns::<3, 1, 4>(TABLE_NAME, [col("COLUMN_NAME", SYSNAME, true)]),
        CONSTRAINT_NAME,
    ),
    rows: constraint_column_usage,
};

fn constraint_column_usage(ctx: &ExecCtx, db: &str) -> Rows<7> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for (name, columns) in constraint_columns(t) {
            for c in columns {
                let column: [Value; 4] = concat(table_name(database.name(), t), [s(&t.columns[c].name)]);
                out.push(concat(column, constraint_name(database.name(), t, &name)));
            }
        }
    }
    Ok(out)
}

pub(super) static CONSTRAINT_TABLE_USAGE: ViewDef<6> = ViewDef {
    schema: "information_schema",
    name: "constraint_table_usage",
    columns: TABLE_AND_CONSTRAINT,
    rows: constraint_table_usage,
};

fn constraint_table_usage(ctx: &ExecCtx, db: &str) -> Rows<6> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for (name, _) in constraint_columns(t) {
            out.push(concat(table_name(database.name(), t), constraint_name(database.name(), t, &name)));
        }
    }
    Ok(out)
}

pub(super) static CHECK_CONSTRAINTS: ViewDef<4> = ViewDef {
    schema: "information_schema",
    name: "check_constraints",
    columns: concat_columns(CONSTRAINT_NAME, [col("CHECK_CLAUSE", NVarChar(4000), true)]),
    rows: check_constraints,
};

fn check_constraints(ctx: &ExecCtx, db: &str) -> Rows<4> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for c in &t.checks {
            out.push(concat(constraint_name(database.name(), t, &c.name), [s(&c.text)]));
        }
    }
    Ok(out)
}

pub(super) static SEQUENCES: ViewDef<15> = ViewDef {
    schema: "information_schema",
    name: "sequences",
    columns: [
        col("SEQUENCE_CATALOG", SYSNAME, true),
        col("SEQUENCE_SCHEMA", SYSNAME, true),
        col("SEQUENCE_NAME", SYSNAME, false),
        col("DATA_TYPE", SYSNAME, true),
        col("NUMERIC_PRECISION", TinyInt, true),
        col("NUMERIC_PRECISION_RADIX", SmallInt, true),
        col("NUMERIC_SCALE", Int, true),
        col("START_VALUE", NVarChar(128), true),
        col("MINIMUM_VALUE", NVarChar(128), true),
        col("MAXIMUM_VALUE", NVarChar(128), true),
        col("INCREMENT", NVarChar(128), true),
        col("CYCLE_OPTION", VarChar(2), true),
        col("DECLARED_DATA_TYPE", Int, true),
        col("DECLARED_NUMERIC_PRECISION", Int, true),
        col("DECLARED_NUMERIC_SCALE", Int, true),
    ],
    rows: sequences,
};

/// Each sequence: its type's name, precision and scale, and its options (SQL Server's
/// sql_variant values as text).
fn sequences(ctx: &ExecCtx, db: &str) -> Rows<15> {
    let (database, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Sequence(q) = o else { continue };
        let (_, _, precision, scale) = type_ids(&q.ty);
        out.push([
            s(database.name()),
            s(&q.schema),
            s(&q.name),
            s(types::base_type_name(&q.ty)),
            int(precision),
            int(10),
            int(scale),
            s(&q.start.to_string()),
            s(&q.min.to_string()),
            s(&q.max.to_string()),
            s(&q.increment.to_string()),
            s(if q.cycle { "1" } else { "0" }),
            Value::Null,
            Value::Null,
            Value::Null,
        ]);
    }
    Ok(out)
}
