//! DELETE.

use super::insert::bind_output;
use super::target::{bind_dml_source, bind_resolved};
use crate::bind::Binder;
use crate::plan::DeletePlan;
use tessera_errors::SqlResult;
use tessera_syntax::ast;

pub fn compile_delete(b: &mut Binder, del: &ast::Delete) -> SqlResult<DeletePlan> {
    b.bind_ctes(&del.with, &del.hints)?;
    let (rt, view, source, _scope, offset, key) =
        bind_dml_source(b, &del.table, &del.table_hints, &del.from, del.selection.as_ref(), del.top.as_ref())?;
    let (db, table) = (rt.at.clone(), rt.table.clone());
    let target_key = crate::catalog::name_key(&table.schema, &table.name);
    b.add_access(&db, &target_key, crate::catalog::Access::DELETE);
    let output = bind_output(b, &table, del.output.as_ref())?;
    // SELECT on the target is needed when the statement reads it: rows chosen by a WHERE
    // or FROM clause, or columns returned by OUTPUT.
    let reads = del.output.is_some() || b.reads_columns_of(&db, &target_key);
    if del.selection.is_none() && del.from.is_empty() && !reads {
        b.remove_access(&db, &target_key, crate::catalog::Access::SELECT);
    }
    let target = bind_resolved(b, rt, view)?;
    Ok(DeletePlan { target, source, offset, key, output })
}
