//! The result sets of `sp_describe_first_result_set` and
//! `sp_describe_undeclared_parameters`. The first: one row per column of the first
//! result a batch would send, in SQL Server's 39 columns. The session finds the columns
//! (it binds the batch's first query on every code path, without running anything);
//! this file says how each is described: its sys.types facts (`system_type_id`,
//! `max_length`, `precision`, `scale`), its collation, and the TDS type tessera sends it
//! as (`tds_type_id`, `tds_length`: always the nullable form, as the server's COLMETADATA
//! does). Browse information (`source_*`, key and updatability columns) is not collected:
//! those columns are NULL, which SQL Server documents as "cannot be determined".
//! The second: one row per undeclared parameter, with the type the session deduced for
//! it (`tessera_semantics::bind::Deduced`), in SQL Server's 24 columns.

use super::{col, int, result, s, NamedArg, SYSNAME};
use crate::runtime::{ExecCtx, DEFAULT_COLLATION};
use crate::sysviews::system_types::{is_string, type_ids};
use tessera_access::row::MAX;
use tessera_semantics::bind::Deduced;
use tessera_semantics::output::{OutputColumn, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};

/// SQL_Latin1_General_CP1_CI_AS as TDS carries it: the LCID and flags word, and the SQL
/// sort order id.
const COLLATION_ID: i64 = 0x00D0_0409;
const COLLATION_SORT_ID: i64 = 52;

/// The TDS type tessera sends a column of `t` as, and the length its TYPE_INFO carries
/// (-1 for a `(max)` type, sent as PLP).
fn tds_type(t: &SqlType) -> (i64, i64) {
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

fn bit(b: bool) -> Value {
    Value::Bit(b)
}

/// The twelve columns both descriptions give about alias, CLR and XML types, for a
/// type that is none of them: `user_type_*` and `assembly_qualified_type_name` (alias and
/// CLR types only) and `xml_collection_*` (typed XML only) NULL; then `is_xml_document`,
/// `is_case_sensitive` (the collation is CI) and `is_fixed_length_clr_type` 0.
fn no_alias_clr_or_xml_type() -> impl Iterator<Item = Value> {
    std::iter::repeat_n(Value::Null, 9).chain([bit(false), bit(false), bit(false)])
}

/// Sends the description of `columns` (a column with an empty name has none: NULL).
pub fn first_result_set(columns: &[OutputColumn], ctx: &ExecCtx, sink: &mut dyn ResultSink) {
    use SqlType::{Bit, Int, NVarChar, SmallInt, TinyInt};
    let header = [
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
    let rows: Vec<Vec<Value>> = columns
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
            row
        })
        .collect();
    result(ctx, sink, &header, &rows);
}

/// Sends the description of the undeclared parameters `params`, in the order given.
pub fn undeclared_parameters(params: &[Deduced], ctx: &ExecCtx, sink: &mut dyn ResultSink) {
    use SqlType::{Bit, Int, NVarChar, SmallInt, TinyInt};
    let header = [
        col("parameter_ordinal", Int, false),
        col("name", SYSNAME, false),
        col("suggested_system_type_id", Int, false),
        col("suggested_system_type_name", NVarChar(256), true),
        col("suggested_max_length", SmallInt, false),
        col("suggested_precision", TinyInt, false),
        col("suggested_scale", TinyInt, false),
        col("suggested_user_type_id", Int, true),
        col("suggested_user_type_database", SYSNAME, true),
        col("suggested_user_type_schema", SYSNAME, true),
        col("suggested_user_type_name", SYSNAME, true),
        col("suggested_assembly_qualified_type_name", NVarChar(4000), true),
        col("suggested_xml_collection_id", Int, true),
        col("suggested_xml_collection_database", SYSNAME, true),
        col("suggested_xml_collection_schema", SYSNAME, true),
        col("suggested_xml_collection_name", SYSNAME, true),
        col("suggested_is_xml_document", Bit, false),
        col("suggested_is_case_sensitive", Bit, false),
        col("suggested_is_fixed_length_clr_type", Bit, false),
        col("suggested_is_input", Bit, false),
        col("suggested_is_output", Bit, false),
        col("formal_parameter_name", SYSNAME, true),
        col("suggested_tds_type_id", Int, false),
        col("suggested_tds_length", Int, false),
    ];
    let rows: Vec<Vec<Value>> = params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (system_type_id, max_length, precision, scale) = type_ids(&p.ty);
            let (tds_type_id, tds_length) = tds_type(&p.ty);
            let mut row = vec![
                int(i as i64 + 1),
                s(&p.name),
                int(system_type_id),
                s(&types::type_name(&p.ty)),
                int(max_length),
                int(precision),
                int(scale),
            ];
            row.extend(no_alias_clr_or_xml_type());
            row.extend([
                bit(!p.output),
                bit(p.output),
                p.formal.as_deref().map_or(Value::Null, s),
                int(tds_type_id),
                int(tds_length),
            ]);
            row
        })
        .collect();
    result(ctx, sink, &header, &rows);
}

/// `@browse_information_mode`: 0, 1 or 2 (11552 otherwise). tessera collects no browse
/// information, so every mode describes the same columns.
pub fn browse_mode(args: &[NamedArg]) -> tessera_errors::SqlResult<()> {
    let mode = super::text_arg(args, 2, "@browse_information_mode");
    match mode.as_deref().map(str::trim) {
        None | Some("0" | "1" | "2") => Ok(()),
        Some(_) => Err(tessera_errors::msg::DESCRIBE_BROWSE_MODE_INVALID.err()),
    }
}
