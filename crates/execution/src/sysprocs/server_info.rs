//! `sp_server_info [@attribute_id]`: what the server says of itself to ODBC drivers
//! (a subset of SQLGetInfo; Microsoft's ODBC libraries read attributes 1, 2, 18, 22 and
//! 500 at connection time). SQL Server's attributes and values, except where tessera
//! differs: it has no `sp_rename` yet, so the renaming attributes are `N`.

use super::{col, int, result, s, text_arg, too_many, NamedArg};
use crate::runtime::{ExecCtx, PRODUCT_VERSION};
use tessera_errors::SqlResult;
use tessera_semantics::output::ResultSink;
use tessera_semantics::types::{SqlType, Value};

/// One attribute: its id, its name and tessera's value (`None`: made from the version).
struct Attribute {
    id: i64,
    name: &'static str,
    value: Option<&'static str>,
}

const fn attribute(id: i64, name: &'static str, value: &'static str) -> Attribute {
    Attribute { id, name, value: Some(value) }
}

const ATTRIBUTES: [Attribute; 29] = [
    attribute(1, "DBMS_NAME", "Microsoft SQL Server"),
    Attribute { id: 2, name: "DBMS_VER", value: None },
    attribute(10, "OWNER_TERM", "owner"),
    attribute(11, "TABLE_TERM", "table"),
    attribute(12, "MAX_OWNER_NAME_LENGTH", "128"),
    attribute(13, "TABLE_LENGTH", "128"),
    attribute(14, "MAX_QUAL_LENGTH", "128"),
    attribute(15, "COLUMN_LENGTH", "128"),
    // Names keep the case they were created with and compare without it.
    attribute(16, "IDENTIFIER_CASE", "MIXED"),
    // READ COMMITTED.
    attribute(17, "TX_ISOLATION", "2"),
    // SQL_Latin1_General_CP1_CI_AS, the server's collation.
    attribute(18, "COLLATION_SEQ", "charset=iso_1 sort_order=nocase_iso charset_num=1 sort_order_num=52"),
    attribute(19, "SAVEPOINT_SUPPORT", "Y"),
    attribute(20, "MULTI_RESULT_SETS", "Y"),
    attribute(22, "ACCESSIBLE_TABLES", "Y"),
    attribute(100, "USERID_LENGTH", "128"),
    attribute(101, "QUALIFIER_TERM", "database"),
    attribute(102, "NAMED_TRANSACTIONS", "Y"),
    attribute(103, "SPROC_AS_LANGUAGE", "Y"),
    attribute(104, "ACCESSIBLE_SPROC", "Y"),
    attribute(105, "MAX_INDEX_COLS", "16"),
    attribute(106, "RENAME_TABLE", "N"),
    attribute(107, "RENAME_COLUMN", "N"),
    attribute(108, "DROP_COLUMN", "Y"),
    attribute(109, "INCREASE_COLUMN_LENGTH", "Y"),
    attribute(110, "DDL_IN_TRANSACTION", "Y"),
    attribute(111, "DESCENDING_INDEXES", "Y"),
    attribute(112, "SP_RENAME", "N"),
    attribute(113, "REMOTE_SPROC", "Y"),
    Attribute { id: 500, name: "SYS_SPROC_VERSION", value: None },
];

/// The value of an attribute made from the version: `DBMS_VER` ("Microsoft SQL Server
/// 2022 - 16.0.1000.6") and `SYS_SPROC_VERSION` ("16.00.1000").
fn from_version(id: i64) -> String {
    let mut parts = PRODUCT_VERSION.split('.');
    let (major, minor, build) = (parts.next().unwrap_or("0"), parts.next().unwrap_or("0"), parts.next().unwrap_or("0"));
    if id == 2 {
        format!("Microsoft SQL Server 2022 - {PRODUCT_VERSION}")
    } else {
        format!("{major}.{minor:0>2}.{build}")
    }
}

pub(super) fn sp_server_info(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    too_many("sp_server_info", args, 1)?;
    let only = text_arg(args, 0, "@attribute_id").and_then(|t| t.trim().parse::<i64>().ok());
    let columns = [
        col("ATTRIBUTE_ID", SqlType::Int, false),
        col("ATTRIBUTE_NAME", SqlType::VarChar(60), false),
        col("ATTRIBUTE_VALUE", SqlType::VarChar(255), true),
    ];
    let rows: Vec<Vec<Value>> = ATTRIBUTES
        .iter()
        .filter(|a| only.is_none_or(|id| id == a.id))
        .map(|a| vec![int(a.id), s(a.name), a.value.map_or_else(|| s(&from_version(a.id)), s)])
        .collect();
    result(ctx, sink, &columns, &rows);
    Ok(0)
}
