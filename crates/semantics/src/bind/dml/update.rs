//! UPDATE: SET lists, of columns and of variables.

use super::insert::bind_output;
use super::target::{bind_dml_source, bind_target};
use crate::bind::{invalid_column, Binder};
use crate::plan::{Expr, PartialWrite, UpdatePlan, VarSource};
use crate::types::{SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast;

pub fn compile_update(b: &mut Binder, up: &ast::Update) -> SqlResult<UpdatePlan> {
    b.bind_ctes(&up.with, &up.hints)?;
    let (db, table, source, scope, offset, key) =
        bind_dml_source(b, &up.table, &up.table_hints, &up.from, up.selection.as_ref(), up.top.as_ref())?;
    let target_key = crate::catalog::name_key(&table.schema, &table.name);
    b.add_access(&db, &target_key, crate::catalog::Access::UPDATE);
    let mut sets = Vec::new();
    let mut variables = Vec::new();
    let mut writes: Vec<PartialWrite> = Vec::new();
    b.with_bound_scope(scope, |b| -> SqlResult<()> {
        for a in &up.assignments {
            match a {
                ast::Assignment::Column { column, op, value } => {
                    let col = table.column(&column.name().value).ok_or_else(|| invalid_column(&column.name().value))?;
                    if table.columns[col].identity.is_some() {
                        return Err(msg::UPDATE_IDENTITY_COLUMN.with(&[&table.columns[col].name]));
                    }
                    if sets.iter().any(|(c, _, _)| *c == col) || writes.iter().any(|w| w.column == col) {
                        return Err(msg::COLUMN_ASSIGNED_TWICE.with(&[&(table.columns[col].name)]));
                    }
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
                    b.note_column_of(&db, &target_key, col as u16, crate::catalog::Access::UPDATE);
                    sets.push((col, e, t));
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
                    variables.push((slot, VarSource::Expr(e), t, vt));
                }
                ast::Assignment::Write { column, value, offset, length } => {
                    let col = table.column(&column.value).ok_or_else(|| invalid_column(&column.value))?;
                    let ty = table.columns[col].ty;
                    if crate::types::LargeKind::of(&ty).is_none() {
                        return Err(msg::METHOD_ON_TYPE.with(&[&crate::types::base_type_name(&ty)]));
                    }
                    if sets.iter().any(|(c, _, _)| *c == col) || writes.iter().any(|w| w.column == col) {
                        return Err(msg::COLUMN_ASSIGNED_TWICE.with(&[&(table.columns[col].name)]));
                    }
                    let bigint = SqlType::BigInt;
                    let value = b.bind_for(value, &ty)?;
                    let offset = b.bind_for(offset, &bigint)?;
                    let length = b.bind_for(length, &bigint)?;
                    // The statement reads the column's value to change it.
                    b.note_column_of(&db, &target_key, col as u16, crate::catalog::Access::SELECT);
                    b.note_column_of(&db, &target_key, col as u16, crate::catalog::Access::UPDATE);
                    writes.push(PartialWrite { column: col, value, offset, length });
                }
                ast::Assignment::Both { variable, column, value } => {
                    let col = table.column(&column.name().value).ok_or_else(|| invalid_column(&column.name().value))?;
                    let (slot, vt) = b.variable_slot(variable)?;
                    let (e, t) = b.bind_for(value, &table.columns[col].ty)?;
                    b.note_column_of(&db, &target_key, col as u16, crate::catalog::Access::UPDATE);
                    sets.push((col, e, t));
                    variables.push((slot, VarSource::NewColumn(col), table.columns[col].ty, vt));
                }
            }
        }
        Ok(())
    })?;
    let output = bind_output(b, &table, up.output.as_ref())?;
    // SELECT on the target is needed when the statement reads it: rows chosen by a WHERE
    // or FROM clause, or a column read by a SET expression or OUTPUT (as SQL Server asks).
    let reads = up.output.is_some() || b.reads_columns_of(&db, &target_key);
    if up.selection.is_none() && up.from.is_empty() && !reads {
        b.remove_access(&db, &target_key, crate::catalog::Access::SELECT);
    }
    let target = bind_target(b, db, table)?;
    Ok(UpdatePlan { target, source, offset, key, sets, variables, writes, output })
}
