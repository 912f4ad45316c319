//! Table types (`CREATE TYPE … AS TABLE`): declaring a table variable of one (finding it
//! is `runtime::table_type`).

use super::tables::declare_table_variable;
use crate::runtime::{table_type, ExecCtx, TableType};
use tessera_errors::SqlResult;
use tessera_syntax::ast;

/// `DECLARE @name type`: a table variable of the table type `ty`; returns the type.
pub fn declare_typed_table_variable(ctx: &mut ExecCtx, name: &str, ty: &ast::TypeName) -> SqlResult<TableType> {
    let found = table_type(ctx, ty)?;
    declare_table_variable(ctx, name, &found.definition.columns, &found.definition.constraints)?;
    Ok(found)
}
