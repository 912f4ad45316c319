//! How the first result set a batch would send is described (`sp_describe_first_result_set`
//! and the function `sys.dm_exec_describe_first_result_set`): one row per column, in SQL
//! Server's columns — its sys.types facts (`system_type_id`, `max_length`, `precision`,
//! `scale`), its collation, and the TDS type tessera sends it as (`tds_type_id`,
//! `tds_length`: always the nullable form, as the server's COLMETADATA does). Browse
//! information (`source_*`, key and updatability columns) is not collected: those columns
//! are NULL, which SQL Server documents as "cannot be determined". The columns themselves
//! come from `crate::first_result`.

use super::system_types::{is_string, type_ids};
use super::{bit, col, int, s, FunctionDef, Rows, SYSNAME};
use crate::runtime::{ExecCtx, DEFAULT_COLLATION};
use tessera_access::row::MAX;
use tessera_semantics::output::OutputColumn;
use tessera_semantics::plan::Col;
use tessera_semantics::types::{self, SqlType, SqlType::*, Value};

/// SQL_Latin1_General_CP1_CI_AS as TDS carries it: the LCID and flags word, and the SQL
/// sort order id.
pub(crate) const COLLATION_ID: i64 = 0x00D0_0409;
pub(crate) const COLLATION_SORT_ID: i64 = 52;

/// The TDS type tessera sends a column of `t` as, and the length its TYPE_INFO carries
/// (-1 for a `(max)` type, sent as PLP).
pub(crate) fn tds_type(t: &SqlType) -> (i64, i64) {
    use SqlType::*;
    let sized = |n: u16, unit: i64| if n == MAX { -1 } else { i64::from(n) * unit };
    match *t {
        Bit => (104, 1),
        TinyInt => (38, 1),
        SmallInt => (38, 2),
        Int => (38, 4),
        BigInt => (38, 8),
        Real => (109, 4),
        Float => (109, 8),
        Decimal { .. } => (106, type_ids(t).1),
        Money => (110, 8),
        SmallMoney => (110, 4),
        Char(n) => (175, sized(n, 1)),
        VarChar(n) => (167, sized(n, 1)),
        NChar(n) => (239, sized(n, 2)),
        NVarChar(n) => (231, sized(n, 2)),
        Binary(n) => (173, sized(n, 1)),
        VarBinary(n) => (165, sized(n, 1)),
        Date => (40, 3),
        Time { .. } => (41, type_ids(t).1),
        DateTime2 { .. } => (42, type_ids(t).1),
        DateTimeOffset { .. } => (43, type_ids(t).1),
        DateTime => (111, 8),
        SmallDateTime => (111, 4),
        UniqueIdentifier => (36, 16),
    }
}

/// The twelve columns both descriptions give about alias, CLR and XML types, for a
/// type that is none of them: `user_type_*` and `assembly_qualified_type_name` (alias and
/// CLR types only) and `xml_collection_*` (typed XML only) NULL; then `is_xml_document`,
/// `is_case_sensitive` (the collation is CI) and `is_fixed_length_clr_type` 0.
pub(crate) fn no_alias_clr_or_xml_type() -> impl Iterator<Item = Value> {
    std::iter::repeat_n(Value::Null, 9).chain([bit(false), bit(false), bit(false)])
}

/// The columns describing a column, as sp_describe_first_result_set sends them.
pub(crate) const FIRST_RESULT_COLUMNS: [Col; 39] = [
    col("is_hidden", Bit, false),
    col("column_ordinal", Int, false),
    col("name", SYSNAME, true),
    col("is_nullable", Bit, false),
    col("system_type_id", Int, false),
    col("system_type_name", NVarChar(256), true),
    col("max_length", SmallInt, false),
    col("precision", TinyInt, false),
    col("scale", TinyInt, false),
    col("collation_name", SYSNAME, true),
    col("user_type_id", Int, true),
    col("user_type_database", SYSNAME, true),
    col("user_type_schema", SYSNAME, true),
    col("user_type_name", SYSNAME, true),
    col("assembly_qualified_type_name", NVarChar(4000), true),
    col("xml_collection_id", Int, true),
    col("xml_collection_database", SYSNAME, true),
    col("xml_collection_schema", SYSNAME, true),
    col("xml_collection_name", SYSNAME, true),
    col("is_xml_document", Bit, false),
    col("is_case_sensitive", Bit, false),
    col("is_fixed_length_clr_type", Bit, false),
    col("source_server", SYSNAME, true),
    col("source_database", SYSNAME, true),
    col("source_schema", SYSNAME, true),
    col("source_table", SYSNAME, true),
    col("source_column", SYSNAME, true),
    col("is_identity_column", Bit, true),
    col("is_part_of_unique_key", Bit, true),
    col("is_updateable", Bit, true),
    col("is_computed_column", Bit, true),
    col("is_sparse_column_set", Bit, true),
    col("ordinal_in_order_by_list", SmallInt, true),
    col("order_by_list_length", SmallInt, true),
    col("order_by_is_descending", SmallInt, true),
    col("tds_type_id", Int, false),
    col("tds_length", Int, false),
    col("tds_collation_id", Int, true),
    col("tds_collation_sort_id", TinyInt, true),
];

/// The description of `columns`, a row per column (a column with an empty name has none:
/// NULL).
pub(crate) fn first_result_rows(columns: &[OutputColumn]) -> Vec<[Value; 39]> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (system_type_id, max_length, precision, scale) = type_ids(&c.ty);
            let (tds_type_id, tds_length) = tds_type(&c.ty);
            let text = is_string(&c.ty);
            let mut row = vec![
                bit(false),
                int(i as i64 + 1),
                if c.name.is_empty() { Value::Null } else { s(&c.name) },
                bit(c.nullable),
                int(system_type_id),
                s(&types::type_name(&c.ty)),
                int(max_length),
                int(precision),
                int(scale),
                if text { s(DEFAULT_COLLATION) } else { Value::Null },
            ];
            row.extend(no_alias_clr_or_xml_type());
            // source_*, the key and updatability columns, ORDER BY positions: browse
            // information, not collected.
            row.extend(std::iter::repeat_n(Value::Null, 13));
            row.extend([
                int(tds_type_id),
                int(tds_length),
                if text { int(COLLATION_ID) } else { Value::Null },
                if text { int(COLLATION_SORT_ID) } else { Value::Null },
            ]);
            row.try_into().expect("39 values")
        })
        .collect()
}

/// The function's columns: sp_describe_first_result_set's (NULL allowed throughout: an
/// error's row has only the error), then the error of a batch that cannot be described.
const DESCRIBE_FUNCTION_COLUMNS: [Col; 45] = {
    let mut out = [col("", Int, true); 45];
    let mut i = 0;
    while i < 39 {
        out[i] = Col { nullable: true, ..FIRST_RESULT_COLUMNS[i] };
        i += 1;
    }
    out[39] = col("error_number", Int, true);
    out[40] = col("error_severity", Int, true);
    out[41] = col("error_state", Int, true);
    out[42] = col("error_message", NVarChar(4000), true);
    out[43] = col("error_type", Int, true);
    out[44] = col("error_type_desc", NVarChar(60), true);
    out
};

/// `sys.dm_exec_describe_first_result_set(@tsql, @params, @include_browse_information)`:
/// sp_describe_first_result_set's rows as a table; a batch that cannot be described is one
/// row with the error (its number, severity, state and message; `error_type` 1, MISC).
pub(super) static DESCRIBE_FIRST_RESULT_SET: FunctionDef<45> = FunctionDef {
    name: "dm_exec_describe_first_result_set",
    columns: DESCRIBE_FUNCTION_COLUMNS,
    rows: describe_first_result_set,
};

fn describe_first_result_set(ctx: &ExecCtx, _db: &str, args: &[Value]) -> Rows<45> {
    let text = |i: usize| match args.get(i) {
        Some(Value::Str(t)) => Some(t.to_string()),
        _ => None,
    };
    let Some(tsql) = text(0) else { return Ok(Vec::new()) };
    let described = crate::first_result::declared_parameters(ctx.shared, &text(1).unwrap_or_default())
        .and_then(|params| crate::first_result::first_result_of_batch(ctx.shared, &*ctx.session, &tsql, &params));
    Ok(match described {
        Ok(columns) => first_result_rows(&columns)
            .into_iter()
            .map(|row| {
                let mut values = row.into_iter().chain(std::iter::repeat_n(Value::Null, 6));
                std::array::from_fn(|_| values.next().expect("45 values"))
            })
            .collect(),
        Err(e) => {
            let mut row: [Value; 45] = std::array::from_fn(|_| Value::Null);
            row[39] = int(i64::from(e.number));
            row[40] = int(i64::from(e.severity));
            row[41] = int(i64::from(e.state));
            row[42] = s(&e.message);
            row[43] = int(1);
            row[44] = s("MISC");
            vec![row]
        }
    })
}
