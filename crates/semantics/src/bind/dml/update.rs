//! UPDATE: SET lists, of columns and of variables.

use super::insert::bind_output;
use super::target::{bind_dml_source, bind_resolved};
use crate::bind::{invalid_column, Binder};
use crate::catalog::{Access, DbRef, Table};
use crate::plan::{Expr, PartialWrite, SetList, UpdatePlan, VarSource};
use crate::types::{SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast;

pub fn compile_update(b: &mut Binder, up: &ast::Update) -> SqlResult<UpdatePlan> {
    b.bind_ctes(&up.with, &up.hints)?;
    let (rt, view, source, scope, offset, key) =
        bind_dml_source(b, &up.table, &up.table_hints, &up.from, up.selection.as_ref(), up.top.as_ref())?;
    let (db, table) = (rt.at.clone(), rt.table.clone());
    let target_key = crate::catalog::name_key(&table.schema, &table.name);
    b.add_access(&db, &target_key, Access::UPDATE);
    let set = b.with_bound_scope(scope, |b| bind_set_list(b, &db, &table, &up.assignments))?;
    let output = bind_output(b, &table, up.output.as_ref())?;
    // SELECT on the target is needed when the statement reads it: rows chosen by a WHERE
    // or FROM clause, or a column read by a SET expression or OUTPUT (as SQL Server asks).
    let reads = up.output.is_some() || b.reads_columns_of(&db, &target_key);
    if up.selection.is_none() && up.from.is_empty() && !reads {
        b.remove_access(&db, &target_key, Access::SELECT);
    }
    let target = bind_resolved(b, rt, view)?;
    Ok(UpdatePlan { target, source, offset, key, set, output })
}

/// Binds a SET list over the scope in force (the row the statement changes, with whatever
/// it is joined to): columns of `table` (not its identity, each once), `.WRITE` on its
/// large columns, and variables.
pub(super) fn bind_set_list(
    b: &mut Binder,
    db: &DbRef,
    table: &Table,
    assignments: &[ast::Assignment],
) -> SqlResult<SetList> {
    let target_key = crate::catalog::name_key(&table.schema, &table.name);
    let mut list = SetList::default();
    let assigned = |list: &SetList, col: usize| {
        if list.changed().contains(&col) {
            return Err(msg::COLUMN_ASSIGNED_TWICE.with(&[&(table.columns[col].name)]));
        }
        Ok(())
    };
    for a in assignments {
        match a {
            ast::Assignment::Column { column, op, value } => {
                let col = table.column(&column.name().value).ok_or_else(|| invalid_column(&column.name().value))?;
                if table.columns[col].identity.is_some() {
                    return Err(msg::UPDATE_IDENTITY_COLUMN.with(&[&table.columns[col].name]));
                }
                if table.columns[col].computed.is_some() {
                    return Err(msg::COLUMN_NOT_MODIFIABLE.with(&[&table.columns[col].name]));
                }
                assigned(&list, col)?;
                let value = match op {
                    Some(op) => ast::Expr::Binary {
                        op: *op,
                        left: Box::new(ast::Expr::Column(column.clone())),
                        right: Box::new(value.clone()),
                    },
                    None => value.clone(),
                };
                let (e, t) = match value {
                    ast::Expr::Default => match &table.columns[col].default {
                        Some(d) => b.bind_expr(&tessera_syntax::unparse::parse_definition(&d.text)?)?,
                        None => (Expr::Const(Value::Null), table.columns[col].ty),
                    },
                    v => b.bind_for(&v, &table.columns[col].ty)?,
                };
                b.note_column_of(db, &target_key, col as u16, Access::UPDATE);
                list.sets.push((col, e, t));
            }
            ast::Assignment::Variable { name, op, value } => {
                let (slot, vt) = b.variable_slot(name)?;
                let value = match op {
                    Some(op) => ast::Expr::Binary {
                        op: *op,
                        left: Box::new(ast::Expr::Variable(name.clone())),
                        right: Box::new(value.clone()),
                    },
                    None => value.clone(),
                };
                let (e, t) = b.bind_for(&value, &vt)?;
                list.variables.push((slot, VarSource::Expr(e), t, vt));
            }
            ast::Assignment::Write { column, value, offset, length } => {
                let col = table.column(&column.value).ok_or_else(|| invalid_column(&column.value))?;
                let ty = table.columns[col].ty;
                if crate::types::LargeKind::of(&ty).is_none() {
                    return Err(msg::METHOD_ON_TYPE.with(&[&crate::types::base_type_name(&ty)]));
                }
                assigned(&list, col)?;
                let bigint = SqlType::BigInt;
                let value = b.bind_for(value, &ty)?;
                let offset = b.bind_for(offset, &bigint)?;
                let length = b.bind_for(length, &bigint)?;
                // The statement reads the column's value to change it.
                b.note_column_of(db, &target_key, col as u16, Access::SELECT);
                b.note_column_of(db, &target_key, col as u16, Access::UPDATE);
                list.writes.push(PartialWrite { column: col, value, offset, length });
            }
            ast::Assignment::Both { variable, column, value } => {
                let col = table.column(&column.name().value).ok_or_else(|| invalid_column(&column.name().value))?;
                let (slot, vt) = b.variable_slot(variable)?;
                let (e, t) = b.bind_for(value, &table.columns[col].ty)?;
                b.note_column_of(db, &target_key, col as u16, Access::UPDATE);
                list.sets.push((col, e, t));
                list.variables.push((slot, VarSource::NewColumn(col), table.columns[col].ty, vt));
            }
        }
    }
    Ok(list)
}
