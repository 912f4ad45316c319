//! The result sets of `sp_describe_first_result_set` and
//! `sp_describe_undeclared_parameters`. The first: one row per column of the first
//! result a batch would send (`crate::first_result` finds the columns,
//! `crate::sysviews::describe` says how each is described). The second: one row per
//! undeclared parameter, with the type the session deduced for
//! it (`tessera_semantics::bind::Deduced`), in SQL Server's 24 columns.

use super::{col, int, result, s, NamedArg, SYSNAME};
use crate::runtime::ExecCtx;
use crate::sysviews::describe::{first_result_rows, no_alias_clr_or_xml_type, tds_type, FIRST_RESULT_COLUMNS};
use crate::sysviews::system_types::type_ids;
use tessera_semantics::bind::Deduced;
use tessera_semantics::output::{OutputColumn, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};

/// Sends the description of `columns` (see `crate::sysviews::describe`).
pub fn first_result_set(columns: &[OutputColumn], ctx: &ExecCtx, sink: &mut dyn ResultSink) {
    let header: Vec<OutputColumn> = FIRST_RESULT_COLUMNS
        .iter()
        .map(|c| OutputColumn { name: c.name.to_string(), ty: c.ty, nullable: c.nullable })
        .collect();
    let rows: Vec<Vec<Value>> = first_result_rows(columns).into_iter().map(Vec::from).collect();
    result(ctx, sink, &header, &rows);
}

fn bit(b: bool) -> Value {
    Value::Bit(b)
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
