//! The catalog procedures ODBC and JDBC drivers learn a database from
//! (`DatabaseMetaData.getColumns` → `sp_columns_100`, `getPrimaryKeys` → `sp_pkeys`, …),
//! with SQL Server's result shapes for ODBC 3: `sp_tables`, `sp_columns[_100]`,
//! `sp_pkeys`, `sp_fkeys`, `sp_statistics[_100]`, `sp_special_columns[_100]`,
//! `sp_stored_procedures`, `sp_sproc_columns[_100]` and `sp_datatype_info[_100]`.
//! Names are matched as LIKE patterns where SQL Server does (table, owner, column and
//! procedure names), and exactly where it does not (`sp_pkeys`, `sp_fkeys`,
//! `sp_statistics`, `sp_special_columns`).

use super::{col, current_catalog, int, result, s, text_arg, NamedArg, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_access::row::MAX;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{Action, Catalog, Module, ModuleKind, Object, Table};
use tessera_semantics::output::{OutputColumn, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};

/// What ODBC says of a SQL type: the columns `sp_columns` and its kin describe it with.
struct OdbcType {
    /// DATA_TYPE (ODBC 3).
    data_type: i64,
    /// PRECISION (COLUMN_SIZE): digits, characters or bytes; 0 for `(max)`.
    precision: i64,
    /// LENGTH: bytes transferred.
    length: i64,
    scale: Option<i64>,
    radix: Option<i64>,
    /// SQL_DATA_TYPE and SQL_DATETIME_SUB: the verbose type (9, SQL_DATETIME, for the
    /// date and time types, with the subcode).
    sql_data_type: i64,
    datetime_sub: Option<i64>,
    /// CHAR_OCTET_LENGTH, for character and binary types.
    octets: Option<i64>,
}

fn odbc(t: &SqlType) -> OdbcType {
    use SqlType::*;
    let number = |data_type, precision, length, scale| OdbcType {
        data_type,
        precision,
        length,
        scale: Some(scale),
        radix: Some(10),
        sql_data_type: data_type,
        datetime_sub: None,
        octets: None,
    };
    let chars = |data_type, n: u16, unit: i64| {
        let n = if n == MAX { 0 } else { i64::from(n) };
        OdbcType {
            data_type,
            precision: n,
            length: n * unit,
            scale: None,
            radix: None,
            sql_data_type: data_type,
            datetime_sub: None,
            octets: Some(n * unit),
        }
    };
    let temporal = |data_type, precision, length, scale: Option<i64>, sub| OdbcType {
        data_type,
        precision,
        length,
        scale,
        radix: None,
        sql_data_type: if sub > 0 { 9 } else { data_type },
        datetime_sub: (sub > 0).then_some(sub),
        octets: None,
    };
    let fraction = |scale: u8| if scale > 0 { 1 + i64::from(scale) } else { 0 };
    match *t {
        Bit => OdbcType { radix: None, scale: None, ..number(-7, 1, 1, 0) },
        TinyInt => number(-6, 3, 1, 0),
        SmallInt => number(5, 5, 2, 0),
        Int => number(4, 10, 4, 0),
        BigInt => number(-5, 19, 8, 0),
        Real => OdbcType { scale: None, ..number(7, 7, 4, 0) },
        Float => OdbcType { scale: None, ..number(6, 15, 8, 0) },
        Decimal { precision, scale } => number(3, i64::from(precision), i64::from(precision) + 2, i64::from(scale)),
        Money => number(3, 19, 21, 4),
        SmallMoney => number(3, 10, 12, 4),
        Char(n) => chars(1, n, 1),
        VarChar(n) => chars(12, n, 1),
        NChar(n) => chars(-8, n, 2),
        NVarChar(n) => chars(-9, n, 2),
        Binary(n) => chars(-2, n, 1),
        VarBinary(n) => chars(-3, n, 1),
        Date => temporal(91, 10, 6, None, 1),
        Time { scale } => temporal(-154, 8 + fraction(scale), 12, Some(i64::from(scale)), 0),
        DateTime => temporal(93, 23, 16, Some(3), 3),
        SmallDateTime => temporal(93, 16, 16, Some(0), 3),
        DateTime2 { scale } => temporal(93, 19 + fraction(scale), 16, Some(i64::from(scale)), 3),
        DateTimeOffset { scale } => temporal(-155, 26 + fraction(scale), 20, Some(i64::from(scale)), 0),
        UniqueIdentifier => OdbcType {
            data_type: -11,
            precision: 36,
            length: 16,
            scale: None,
            radix: None,
            sql_data_type: -11,
            datetime_sub: None,
            octets: None,
        },
    }
}

/// SS_DATA_TYPE: the TDS type a column of `t` travels as (the nullable form when it has
/// one, as SQL Server reports for nullable columns).
fn ss_data_type(t: &SqlType, nullable: bool) -> i64 {
    use SqlType::*;
    match (t, nullable) {
        (TinyInt | SmallInt | Int | BigInt, true) => 38,
        (TinyInt, false) => 48,
        (SmallInt, false) => 52,
        (Int, false) => 56,
        (BigInt, false) => 127,
        (Bit, _) => 50,
        (Real | Float, true) => 109,
        (Real, false) => 59,
        (Float, false) => 62,
        (Money | SmallMoney, true) => 110,
        (Money, false) => 60,
        (SmallMoney, false) => 122,
        (DateTime | SmallDateTime, true) => 111,
        (DateTime, false) => 61,
        (SmallDateTime, false) => 58,
        (Decimal { .. }, _) => 106,
        (Char(_), _) => 47,
        (VarChar(_), _) => 39,
        (Binary(_), _) => 45,
        (VarBinary(_), _) => 37,
        _ => 0,
    }
}

fn opt(v: Option<i64>) -> Value {
    v.map_or(Value::Null, int)
}

/// The columns `sp_columns` and `sp_sproc_columns` describe a value's type with, from
/// DATA_TYPE to IS_NULLABLE.
fn described_type_columns() -> [OutputColumn; 14] {
    [
        col("DATA_TYPE", SqlType::SmallInt, true),
        col("TYPE_NAME", SYSNAME, true),
        col("PRECISION", SqlType::Int, true),
        col("LENGTH", SqlType::Int, true),
        col("SCALE", SqlType::SmallInt, true),
        col("RADIX", SqlType::SmallInt, true),
        col("NULLABLE", SqlType::SmallInt, true),
        col("REMARKS", SqlType::VarChar(254), true),
        col("COLUMN_DEF", SqlType::NVarChar(4000), true),
        col("SQL_DATA_TYPE", SqlType::SmallInt, true),
        col("SQL_DATETIME_SUB", SqlType::SmallInt, true),
        col("CHAR_OCTET_LENGTH", SqlType::Int, true),
        col("ORDINAL_POSITION", SqlType::Int, true),
        col("IS_NULLABLE", SqlType::VarChar(254), true),
    ]
}

/// The cells of [`described_type_columns`] for a value of type `ty`.
fn described_type(ty: &SqlType, type_name: &str, nullable: bool, default: Value, ordinal: i64) -> [Value; 14] {
    let o = odbc(ty);
    [
        int(o.data_type),
        s(type_name),
        int(o.precision),
        int(o.length),
        opt(o.scale),
        opt(o.radix),
        int(i64::from(nullable)),
        Value::Null,
        default,
        int(o.sql_data_type),
        opt(o.datetime_sub),
        opt(o.octets),
        int(ordinal),
        s(if nullable { "YES" } else { "NO" }),
    ]
}

/// A row's text cell, upper-cased, as a sort key (the catalog's collation ignores case).
fn text(v: &Value) -> String {
    match v {
        Value::Str(t) => t.to_uppercase(),
        _ => String::new(),
    }
}

/// A row's integer cell as a sort key.
fn number(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        _ => 0,
    }
}

/// A name argument matched as a LIKE pattern (`None`: everything).
fn matches(pattern: &Option<String>, name: &str) -> bool {
    pattern.as_ref().is_none_or(|p| types::like(name, p, None))
}

/// A name argument matched exactly, case-insensitively (`None`: everything).
fn is(name_arg: &Option<String>, name: &str) -> bool {
    name_arg.as_ref().is_none_or(|n| n.eq_ignore_ascii_case(name))
}

/// The catalog a qualifier names: the current database's (a qualifier naming another
/// database is error 15250, as SQL Server reports it).
fn qualified_catalog(ctx: &ExecCtx, qualifier: &Option<String>) -> SqlResult<(String, std::sync::Arc<Catalog>)> {
    let (db, catalog) = current_catalog(ctx)?;
    match qualifier {
        Some(q) if !q.eq_ignore_ascii_case(&db) => Err(msg::QUALIFIER_NOT_CURRENT_DATABASE.err()),
        _ => Ok((db, catalog)),
    }
}

/// The arguments of a procedure about one table: `@table_name` (required, else 201),
/// `@table_owner`, and the current database's name and catalog (`@table_qualifier` may
/// only name it).
fn table_args(
    proc_name: &str,
    args: &[NamedArg],
    ctx: &ExecCtx,
) -> SqlResult<(String, Option<String>, String, std::sync::Arc<Catalog>)> {
    let Some(table) = text_arg(args, 0, "@table_name") else {
        return Err(msg::MISSING_PARAMETER.with(&[&proc_name, &"@table_name"]).with_state(4));
    };
    let (db, catalog) = qualified_catalog(ctx, &text_arg(args, 2, "@table_qualifier"))?;
    Ok((table, text_arg(args, 1, "@table_owner"), db, catalog))
}

fn tables_of<'c>(catalog: &'c Catalog, owner: &Option<String>, name: &Option<String>, pattern: bool) -> Vec<&'c Table> {
    let mut out: Vec<&Table> = catalog
        .objects()
        .into_iter()
        .filter_map(|o| match o {
            Object::Table(t) => Some(&**t),
            Object::Module(_) | Object::Sequence(_) => None,
        })
        .filter(|t| {
            if pattern {
                matches(owner, &t.schema) && matches(name, &t.name)
            } else {
                is(owner, &t.schema) && is(name, &t.name)
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
    out
}

/// `sp_tables [@table_name] [, @table_owner] [, @table_qualifier] [, @table_type]`.
pub(super) fn sp_tables(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let name = text_arg(args, 0, "@table_name");
    let owner = text_arg(args, 1, "@table_owner");
    let (db, catalog) = qualified_catalog(ctx, &text_arg(args, 2, "@table_qualifier"))?;
    // @table_type: "'TABLE','VIEW'" (the quotes doubled inside the argument's own).
    let wanted = text_arg(args, 3, "@table_type").map(|t| t.to_ascii_uppercase());
    let columns = [
        col("TABLE_QUALIFIER", SYSNAME, true),
        col("TABLE_OWNER", SYSNAME, true),
        col("TABLE_NAME", SYSNAME, true),
        col("TABLE_TYPE", SqlType::VarChar(32), true),
        col("REMARKS", SqlType::VarChar(254), true),
    ];
    let mut rows = Vec::new();
    for o in catalog.objects() {
        let kind = match o {
            Object::Table(_) => "TABLE",
            Object::Module(m) if m.kind == ModuleKind::View => "VIEW",
            _ => continue,
        };
        if !matches(&name, o.name()) || !matches(&owner, o.schema()) {
            continue;
        }
        if wanted.as_ref().is_some_and(|w| !w.contains(&format!("'{kind}'"))) {
            continue;
        }
        rows.push(vec![s(&db), s(o.schema()), s(o.name()), s(kind), Value::Null]);
    }
    // Ordered by TABLE_TYPE, TABLE_OWNER, TABLE_NAME.
    rows.sort_by_key(|r| (text(&r[3]), text(&r[1]), text(&r[2])));
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

/// `sp_columns` and `sp_columns_100 @table_name [, @table_owner] [, @table_qualifier]
/// [, @column_name] [, @NameScope] [, @ODBCVer] [, @fUsePattern]`: the 19 columns of
/// `sp_columns`, and `sp_columns_100`'s ten more.
pub(super) fn sp_columns(
    wide: bool,
    args: &[NamedArg],
    ctx: &mut ExecCtx,
    sink: &mut dyn ResultSink,
) -> SqlResult<i32> {
    let (table, owner, db, catalog) = table_args(if wide { "sp_columns_100" } else { "sp_columns" }, args, ctx)?;
    let column = text_arg(args, 3, "@column_name");
    let mut columns = vec![
        col("TABLE_QUALIFIER", SYSNAME, true),
        col("TABLE_OWNER", SYSNAME, true),
        col("TABLE_NAME", SYSNAME, true),
        col("COLUMN_NAME", SYSNAME, true),
    ];
    columns.extend(described_type_columns());
    if wide {
        columns.extend([
            col("SS_IS_SPARSE", SqlType::SmallInt, true),
            col("SS_IS_COLUMN_SET", SqlType::SmallInt, true),
            col("SS_IS_COMPUTED", SqlType::SmallInt, true),
            col("SS_IS_IDENTITY", SqlType::SmallInt, true),
            col("SS_UDT_CATALOG_NAME", SqlType::NVarChar(128), true),
            col("SS_UDT_SCHEMA_NAME", SqlType::NVarChar(128), true),
            col("SS_UDT_ASSEMBLY_TYPE_NAME", SqlType::NVarChar(MAX), true),
            col("SS_XML_SCHEMACOLLECTION_CATALOG_NAME", SqlType::NVarChar(128), true),
            col("SS_XML_SCHEMACOLLECTION_SCHEMA_NAME", SqlType::NVarChar(128), true),
            col("SS_XML_SCHEMACOLLECTION_NAME", SqlType::NVarChar(128), true),
        ]);
    }
    columns.push(col("SS_DATA_TYPE", SqlType::TinyInt, true));
    let mut rows = Vec::new();
    for t in tables_of(&catalog, &owner, &Some(table), true) {
        for (i, c) in t.columns.iter().enumerate() {
            if !matches(&column, &c.name) {
                continue;
            }
            let mut type_name = types::base_type_name(&c.ty).to_string();
            if c.identity.is_some() {
                type_name.push_str(" identity");
            }
            let mut row = vec![s(&db), s(&t.schema), s(&t.name), s(&c.name)];
            let default = c.default.as_ref().map_or(Value::Null, |d| s(&d.text));
            row.extend(described_type(&c.ty, &type_name, c.nullable, default, i as i64 + 1));
            if wide {
                row.extend([int(0), int(0), int(0), int(i64::from(c.identity.is_some()))]);
                row.extend(std::iter::repeat_n(Value::Null, 6));
            }
            row.push(int(ss_data_type(&c.ty, c.nullable)));
            rows.push(row);
        }
    }
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

/// `sp_pkeys @table_name [, @table_owner] [, @table_qualifier]`: the primary key's
/// columns in key order.
pub(super) fn sp_pkeys(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let (table, owner, db, catalog) = table_args("sp_pkeys", args, ctx)?;
    let columns = [
        col("TABLE_QUALIFIER", SYSNAME, true),
        col("TABLE_OWNER", SYSNAME, true),
        col("TABLE_NAME", SYSNAME, false),
        col("COLUMN_NAME", SYSNAME, false),
        col("KEY_SEQ", SqlType::SmallInt, true),
        col("PK_NAME", SYSNAME, true),
    ];
    let mut rows = Vec::new();
    for t in tables_of(&catalog, &owner, &Some(table), false) {
        let Some(pk) = t.primary_key() else { continue };
        for (seq, &(c, _)) in pk.columns.iter().enumerate() {
            rows.push(vec![s(&db), s(&t.schema), s(&t.name), s(&t.columns[c].name), int(seq as i64 + 1), s(&pk.name)]);
        }
    }
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

fn rule(a: Action) -> i64 {
    match a {
        Action::Cascade => 0,
        Action::NoAction => 1,
        Action::SetNull => 2,
        Action::SetDefault => 3,
    }
}

/// `sp_fkeys [@pktable_name] [, @pktable_owner] [, @pktable_qualifier] [, @fktable_name]
/// [, @fktable_owner] [, @fktable_qualifier]`: the foreign keys that reference the
/// primary-key table, or that the foreign-key table declares (either name is needed).
pub(super) fn sp_fkeys(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let pk_table = text_arg(args, 0, "@pktable_name");
    let pk_owner = text_arg(args, 1, "@pktable_owner");
    let fk_table = text_arg(args, 3, "@fktable_name");
    let fk_owner = text_arg(args, 4, "@fktable_owner");
    if pk_table.is_none() && fk_table.is_none() {
        return Err(msg::FKEYS_NEED_A_TABLE.err());
    }
    let qualifier = text_arg(args, 2, "@pktable_qualifier").or_else(|| text_arg(args, 5, "@fktable_qualifier"));
    let (db, catalog) = qualified_catalog(ctx, &qualifier)?;
    let columns = [
        col("PKTABLE_QUALIFIER", SYSNAME, true),
        col("PKTABLE_OWNER", SYSNAME, true),
        col("PKTABLE_NAME", SYSNAME, false),
        col("PKCOLUMN_NAME", SYSNAME, false),
        col("FKTABLE_QUALIFIER", SYSNAME, true),
        col("FKTABLE_OWNER", SYSNAME, true),
        col("FKTABLE_NAME", SYSNAME, false),
        col("FKCOLUMN_NAME", SYSNAME, false),
        col("KEY_SEQ", SqlType::SmallInt, false),
        col("UPDATE_RULE", SqlType::SmallInt, true),
        col("DELETE_RULE", SqlType::SmallInt, true),
        col("FK_NAME", SYSNAME, true),
        col("PK_NAME", SYSNAME, true),
        col("DEFERRABILITY", SqlType::SmallInt, true),
    ];
    let mut rows = Vec::new();
    for child in tables_of(&catalog, &fk_owner, &fk_table, false) {
        for fk in &child.foreign_keys {
            let Some(parent) = catalog.table_by_id(fk.ref_table) else { continue };
            if !is(&pk_table, &parent.name) || !is(&pk_owner, &parent.schema) {
                continue;
            }
            // The parent's key the reference matches: its primary key or a unique index on
            // the referenced columns.
            let key_name = parent
                .indexes
                .iter()
                .filter(|ix| ix.unique)
                .find(|ix| {
                    let mut cols: Vec<usize> = ix.columns.iter().map(|&(c, _)| c).collect();
                    let mut refs = fk.ref_columns.clone();
                    cols.sort_unstable();
                    refs.sort_unstable();
                    cols == refs
                })
                .map_or(Value::Null, |ix| s(&ix.name));
            for (seq, (&c, &r)) in fk.columns.iter().zip(&fk.ref_columns).enumerate() {
                rows.push(vec![
                    s(&db),
                    s(&parent.schema),
                    s(&parent.name),
                    s(&parent.columns[r].name),
                    s(&db),
                    s(&child.schema),
                    s(&child.name),
                    s(&child.columns[c].name),
                    int(seq as i64 + 1),
                    int(rule(fk.on_update)),
                    int(rule(fk.on_delete)),
                    s(&fk.name),
                    key_name.clone(),
                    int(7),
                ]);
            }
        }
    }
    // SQL Server orders by the foreign-key table, then the key sequence.
    rows.sort_by_key(|r| (text(&r[5]), text(&r[6]), text(&r[11]), number(&r[8])));
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

/// `sp_statistics[_100] @table_name [, @table_owner] [, @table_qualifier]
/// [, @index_name] [, @is_unique] [, @accuracy]`: a row for the table (TYPE 0), then a
/// row per key column of each index (TYPE 1 clustered, 3 other), unique ones first.
pub(super) fn sp_statistics(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let (table, owner, db, catalog) = table_args("sp_statistics", args, ctx)?;
    let index_name = text_arg(args, 3, "@index_name");
    let unique_only = text_arg(args, 4, "@is_unique").is_some_and(|u| u.eq_ignore_ascii_case("Y"));
    let columns = [
        col("TABLE_QUALIFIER", SYSNAME, true),
        col("TABLE_OWNER", SYSNAME, true),
        col("TABLE_NAME", SYSNAME, false),
        col("NON_UNIQUE", SqlType::SmallInt, true),
        col("INDEX_QUALIFIER", SYSNAME, true),
        col("INDEX_NAME", SYSNAME, true),
        col("TYPE", SqlType::SmallInt, false),
        col("SEQ_IN_INDEX", SqlType::SmallInt, true),
        col("COLUMN_NAME", SYSNAME, true),
        col("COLLATION", SqlType::Char(1), true),
        col("CARDINALITY", SqlType::Int, true),
        col("PAGES", SqlType::Int, true),
        col("FILTER_CONDITION", SqlType::VarChar(128), true),
    ];
    let mut rows = Vec::new();
    for t in tables_of(&catalog, &owner, &Some(table), false) {
        rows.push(vec![
            s(&db),
            s(&t.schema),
            s(&t.name),
            Value::Null,
            Value::Null,
            Value::Null,
            int(0),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
        ]);
        let mut indexes: Vec<_> = t
            .indexes
            .iter()
            .filter(|ix| !ix.is_heap() && matches(&index_name, &ix.name) && (ix.unique || !unique_only))
            .collect();
        indexes.sort_by(|a, b| (!a.unique, &a.name).cmp(&(!b.unique, &b.name)));
        for ix in indexes {
            for (seq, &(c, desc)) in ix.columns.iter().enumerate() {
                rows.push(vec![
                    s(&db),
                    s(&t.schema),
                    s(&t.name),
                    int(i64::from(!ix.unique)),
                    s(&t.name),
                    s(&ix.name),
                    int(if ix.is_clustered() { 1 } else { 3 }),
                    int(seq as i64 + 1),
                    s(&t.columns[c].name),
                    s(if desc { "D" } else { "A" }),
                    Value::Null,
                    Value::Null,
                    Value::Null,
                ]);
            }
        }
    }
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

/// `sp_special_columns[_100] @table_name [, @table_owner] [, @table_qualifier]
/// [, @col_type] [, @scope] [, @nullable] [, @ODBCVer]`: for `@col_type = 'R'` (the
/// default) the columns that identify a row best, the primary key or else the first
/// unique index; for 'V' the columns updated automatically (tessera has none).
pub(super) fn sp_special_columns(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let (table, owner, _, catalog) = table_args("sp_special_columns", args, ctx)?;
    let row_id = text_arg(args, 3, "@col_type").is_none_or(|t| t.eq_ignore_ascii_case("R"));
    let columns = [
        col("SCOPE", SqlType::SmallInt, true),
        col("COLUMN_NAME", SYSNAME, false),
        col("DATA_TYPE", SqlType::SmallInt, true),
        col("TYPE_NAME", SYSNAME, false),
        col("PRECISION", SqlType::Int, true),
        col("LENGTH", SqlType::Int, true),
        col("SCALE", SqlType::SmallInt, true),
        col("PSEUDO_COLUMN", SqlType::SmallInt, true),
    ];
    let mut rows = Vec::new();
    if row_id {
        for t in tables_of(&catalog, &owner, &Some(table), false) {
            let Some(key) = t.primary_key().or_else(|| t.indexes.iter().find(|ix| ix.unique && !ix.is_heap())) else {
                continue;
            };
            for &(c, _) in &key.columns {
                let column = &t.columns[c];
                let o = odbc(&column.ty);
                rows.push(vec![
                    int(1),
                    s(&column.name),
                    int(o.data_type),
                    s(types::base_type_name(&column.ty)),
                    int(o.precision),
                    int(o.length),
                    opt(o.scale),
                    int(1),
                ]);
            }
        }
    }
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

fn procedures_of<'c>(catalog: &'c Catalog, owner: &Option<String>, name: &Option<String>) -> Vec<&'c Module> {
    let mut out: Vec<&Module> = catalog
        .objects()
        .into_iter()
        .filter_map(|o| match o {
            Object::Module(m) if m.kind != ModuleKind::View => Some(&**m),
            _ => None,
        })
        .filter(|m| matches(owner, &m.schema) && matches(name, &m.name))
        .collect();
    out.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
    out
}

/// `sp_stored_procedures [@sp_name] [, @sp_owner] [, @sp_qualifier] [, @fUsePattern]`:
/// procedures and functions, named `name;1` as SQL Server names them.
pub(super) fn sp_stored_procedures(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let name = text_arg(args, 0, "@sp_name");
    let owner = text_arg(args, 1, "@sp_owner");
    let (db, catalog) = qualified_catalog(ctx, &text_arg(args, 2, "@sp_qualifier"))?;
    let columns = [
        col("PROCEDURE_QUALIFIER", SYSNAME, true),
        col("PROCEDURE_OWNER", SYSNAME, true),
        col("PROCEDURE_NAME", SqlType::NVarChar(134), true),
        col("NUM_INPUT_PARAMS", SqlType::Int, true),
        col("NUM_OUTPUT_PARAMS", SqlType::Int, true),
        col("NUM_RESULT_SETS", SqlType::Int, true),
        col("REMARKS", SqlType::VarChar(254), true),
        col("PROCEDURE_TYPE", SqlType::SmallInt, true),
    ];
    let rows: Vec<Vec<Value>> = procedures_of(&catalog, &owner, &name)
        .into_iter()
        .map(|m| {
            vec![s(&db), s(&m.schema), s(&format!("{};1", m.name)), int(-1), int(-1), int(-1), Value::Null, int(2)]
        })
        .collect();
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

/// `sp_sproc_columns[_100] [@procedure_name] [, @procedure_owner] [, @procedure_qualifier]
/// [, @column_name] [, @ODBCVer] [, @fUsePattern]`: each procedure's return value
/// (`@RETURN_VALUE`, COLUMN_TYPE 5) and parameters (1 input, 2 OUTPUT).
pub(super) fn sp_sproc_columns(
    wide: bool,
    args: &[NamedArg],
    ctx: &mut ExecCtx,
    sink: &mut dyn ResultSink,
) -> SqlResult<i32> {
    let name = text_arg(args, 0, "@procedure_name");
    let owner = text_arg(args, 1, "@procedure_owner");
    let (db, catalog) = qualified_catalog(ctx, &text_arg(args, 2, "@procedure_qualifier"))?;
    let column = text_arg(args, 3, "@column_name");
    let mut columns = vec![
        col("PROCEDURE_QUALIFIER", SYSNAME, true),
        col("PROCEDURE_OWNER", SYSNAME, true),
        col("PROCEDURE_NAME", SqlType::NVarChar(134), true),
        col("COLUMN_NAME", SYSNAME, true),
        col("COLUMN_TYPE", SqlType::SmallInt, true),
    ];
    columns.extend(described_type_columns());
    if wide {
        columns.push(col("SS_DATA_TYPE", SqlType::TinyInt, true));
    }
    let mut rows = Vec::new();
    for m in procedures_of(&catalog, &owner, &name) {
        let (params, function_returns) = crate::sysviews::module_signature(m);
        let returns = if m.kind == ModuleKind::Procedure { Some(SqlType::Int) } else { function_returns };
        // The return value first (COLUMN_TYPE 5), then the parameters (1 input, 2 OUTPUT).
        let mut entries: Vec<(String, i64, SqlType)> = Vec::new();
        if let Some(t) = returns {
            entries.push(("@RETURN_VALUE".to_string(), 5, t));
        }
        for p in params {
            let ty = types::resolve_type(&p.ty, false).unwrap_or(SqlType::Int);
            entries.push((p.name.clone(), if p.output { 2 } else { 1 }, ty));
        }
        for (ordinal, (param, kind, ty)) in entries.into_iter().enumerate() {
            if !matches(&column, &param) {
                continue;
            }
            let mut row = vec![s(&db), s(&m.schema), s(&format!("{};1", m.name)), s(&param), int(kind)];
            // SQL Server keeps no text of a parameter's default.
            row.extend(described_type(&ty, types::base_type_name(&ty), true, Value::Null, ordinal as i64));
            if wide {
                row.push(int(ss_data_type(&ty, true)));
            }
            rows.push(row);
        }
    }
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

/// Type info rows: the type's name, its SQL type at its largest, and the ODBC facts the
/// type's declaration needs.
struct TypeInfo {
    name: &'static str,
    ty: SqlType,
    /// CREATE_PARAMS.
    params: Option<&'static str>,
    /// Quotes around a literal of the type (LITERAL_PREFIX, LITERAL_SUFFIX).
    quoted: Option<(&'static str, &'static str)>,
    auto_increment: bool,
}

const TYPE_INFO: &[TypeInfo] = &[
    TypeInfo { name: "bit", ty: SqlType::Bit, params: None, quoted: None, auto_increment: false },
    TypeInfo { name: "tinyint", ty: SqlType::TinyInt, params: None, quoted: None, auto_increment: false },
    TypeInfo { name: "tinyint identity", ty: SqlType::TinyInt, params: None, quoted: None, auto_increment: true },
    TypeInfo { name: "bigint", ty: SqlType::BigInt, params: None, quoted: None, auto_increment: false },
    TypeInfo { name: "bigint identity", ty: SqlType::BigInt, params: None, quoted: None, auto_increment: true },
    TypeInfo {
        name: "varbinary",
        ty: SqlType::VarBinary(8000),
        params: Some("max length"),
        quoted: Some(("0x", "")),
        auto_increment: false,
    },
    TypeInfo {
        name: "binary",
        ty: SqlType::Binary(8000),
        params: Some("length"),
        quoted: Some(("0x", "")),
        auto_increment: false,
    },
    TypeInfo {
        name: "char",
        ty: SqlType::Char(8000),
        params: Some("length"),
        quoted: Some(("'", "'")),
        auto_increment: false,
    },
    TypeInfo {
        name: "numeric",
        ty: SqlType::Decimal { precision: 38, scale: 38 },
        params: Some("precision,scale"),
        quoted: None,
        auto_increment: false,
    },
    TypeInfo {
        name: "decimal",
        ty: SqlType::Decimal { precision: 38, scale: 38 },
        params: Some("precision,scale"),
        quoted: None,
        auto_increment: false,
    },
    TypeInfo { name: "money", ty: SqlType::Money, params: None, quoted: Some(("$", "")), auto_increment: false },
    TypeInfo {
        name: "smallmoney",
        ty: SqlType::SmallMoney,
        params: None,
        quoted: Some(("$", "")),
        auto_increment: false,
    },
    TypeInfo { name: "int", ty: SqlType::Int, params: None, quoted: None, auto_increment: false },
    TypeInfo { name: "int identity", ty: SqlType::Int, params: None, quoted: None, auto_increment: true },
    TypeInfo { name: "smallint", ty: SqlType::SmallInt, params: None, quoted: None, auto_increment: false },
    TypeInfo { name: "smallint identity", ty: SqlType::SmallInt, params: None, quoted: None, auto_increment: true },
    TypeInfo { name: "float", ty: SqlType::Float, params: None, quoted: None, auto_increment: false },
    TypeInfo { name: "real", ty: SqlType::Real, params: None, quoted: None, auto_increment: false },
    TypeInfo {
        name: "varchar",
        ty: SqlType::VarChar(8000),
        params: Some("max length"),
        quoted: Some(("'", "'")),
        auto_increment: false,
    },
    TypeInfo {
        name: "nchar",
        ty: SqlType::NChar(4000),
        params: Some("length"),
        quoted: Some(("N'", "'")),
        auto_increment: false,
    },
    TypeInfo {
        name: "nvarchar",
        ty: SqlType::NVarChar(4000),
        params: Some("max length"),
        quoted: Some(("N'", "'")),
        auto_increment: false,
    },
    TypeInfo {
        name: "uniqueidentifier",
        ty: SqlType::UniqueIdentifier,
        params: None,
        quoted: Some(("'", "'")),
        auto_increment: false,
    },
    TypeInfo { name: "date", ty: SqlType::Date, params: None, quoted: Some(("'", "'")), auto_increment: false },
    TypeInfo {
        name: "time",
        ty: SqlType::Time { scale: 7 },
        params: Some("scale"),
        quoted: Some(("'", "'")),
        auto_increment: false,
    },
    TypeInfo { name: "datetime", ty: SqlType::DateTime, params: None, quoted: Some(("'", "'")), auto_increment: false },
    TypeInfo {
        name: "smalldatetime",
        ty: SqlType::SmallDateTime,
        params: None,
        quoted: Some(("'", "'")),
        auto_increment: false,
    },
    TypeInfo {
        name: "datetime2",
        ty: SqlType::DateTime2 { scale: 7 },
        params: Some("scale"),
        quoted: Some(("'", "'")),
        auto_increment: false,
    },
    TypeInfo {
        name: "datetimeoffset",
        ty: SqlType::DateTimeOffset { scale: 7 },
        params: Some("scale"),
        quoted: Some(("'", "'")),
        auto_increment: false,
    },
];

/// `sp_datatype_info[_100] [@data_type] [, @ODBCVer]`: the types, ordered by DATA_TYPE
/// and then name (ODBC's SQLGetTypeInfo).
pub(super) fn sp_datatype_info(
    wide: bool,
    args: &[NamedArg],
    ctx: &mut ExecCtx,
    sink: &mut dyn ResultSink,
) -> SqlResult<i32> {
    // @data_type: one type's rows only (0 or NULL: every type).
    let only = text_arg(args, 0, "@data_type").and_then(|t| t.trim().parse::<i64>().ok()).filter(|&n| n != 0);
    let mut columns: Vec<OutputColumn> = vec![
        col("TYPE_NAME", SYSNAME, false),
        col("DATA_TYPE", SqlType::SmallInt, false),
        col("PRECISION", SqlType::Int, true),
        col("LITERAL_PREFIX", SqlType::VarChar(32), true),
        col("LITERAL_SUFFIX", SqlType::VarChar(32), true),
        col("CREATE_PARAMS", SqlType::VarChar(32), true),
        col("NULLABLE", SqlType::SmallInt, false),
        col("CASE_SENSITIVE", SqlType::SmallInt, false),
        col("SEARCHABLE", SqlType::SmallInt, false),
        col("UNSIGNED_ATTRIBUTE", SqlType::SmallInt, true),
        col("MONEY", SqlType::SmallInt, false),
        col("AUTO_INCREMENT", SqlType::SmallInt, true),
        col("LOCAL_TYPE_NAME", SYSNAME, true),
        col("MINIMUM_SCALE", SqlType::SmallInt, true),
        col("MAXIMUM_SCALE", SqlType::SmallInt, true),
        col("SQL_DATA_TYPE", SqlType::SmallInt, false),
        col("SQL_DATETIME_SUB", SqlType::SmallInt, true),
        col("NUM_PREC_RADIX", SqlType::Int, true),
        col("INTERVAL_PRECISION", SqlType::SmallInt, true),
        col("USERTYPE", SqlType::SmallInt, true),
    ];
    if wide {
        columns.push(col("SS_DATA_TYPE", SqlType::TinyInt, true));
    }
    let mut rows = Vec::new();
    for info in TYPE_INFO {
        let o = odbc(&info.ty);
        if only.is_some_and(|n| n != o.data_type) {
            continue;
        }
        let numeric = o.radix.is_some();
        let text = info.quoted.is_some_and(|(p, _)| p.ends_with('\''));
        let scaled = matches!(
            info.ty,
            SqlType::Decimal { .. } | SqlType::Time { .. } | SqlType::DateTime2 { .. } | SqlType::DateTimeOffset { .. }
        );
        let precision = match info.ty {
            SqlType::Float => 53,
            SqlType::Real => 24,
            _ => o.precision,
        };
        let (min_scale, max_scale) = match (info.ty, o.scale) {
            (SqlType::Decimal { .. }, _) => (Some(0), Some(38)),
            (_, Some(sc)) if scaled => (Some(0), Some(sc)),
            (_, Some(sc)) => (Some(sc), Some(sc)),
            _ => (None, None),
        };
        let mut row = vec![
            s(info.name),
            int(o.data_type),
            int(precision),
            info.quoted.map_or(Value::Null, |(p, _)| s(p)),
            info.quoted.map_or(Value::Null, |(_, q)| if q.is_empty() { Value::Null } else { s(q) }),
            info.params.map_or(Value::Null, s),
            int(i64::from(!info.auto_increment)),
            int(0),
            int(if text { 3 } else { 2 }),
            if numeric { int(i64::from(matches!(info.ty, SqlType::TinyInt | SqlType::Bit))) } else { Value::Null },
            int(i64::from(matches!(info.ty, SqlType::Money | SqlType::SmallMoney))),
            if numeric { int(i64::from(info.auto_increment)) } else { Value::Null },
            s(info.name),
            opt(min_scale),
            opt(max_scale),
            int(o.sql_data_type),
            opt(o.datetime_sub),
            opt(o.radix.map(|_| if matches!(info.ty, SqlType::Float | SqlType::Real) { 2 } else { 10 })),
            Value::Null,
            Value::Null,
        ];
        if wide {
            row.push(int(ss_data_type(&info.ty, false)));
        }
        rows.push(row);
    }
    rows.sort_by_key(|r| (number(&r[1]), text(&r[0])));
    result(ctx, sink, &columns, &rows);
    Ok(0)
}
