//! INSERT: the column list and the source (VALUES, a query, DEFAULT VALUES); and OUTPUT
//! clauses with their INTO target, which is an INSERT.

use super::output::bind_output_rows;
use super::target::{bind_resolved, resolve_target};
use crate::bind::{convert, invalid_column, Binder};
use crate::catalog::Access;
use crate::catalog::Table;
use crate::plan::{Expr, InsertPlan, InsertSource, OutputPlan};
use crate::types::{self, SqlType, Value};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast;

/// An INSERT without a column list whose values do not fit the table's columns (a value
/// for every column, identity included, is an identity error).
fn mismatched_insert(table: &Table, values: usize) -> SqlError {
    if table.identity_column().is_some() && values == table.columns.len() {
        return explicit_identity(table);
    }
    msg::INSERT_COLUMN_COUNT_MISMATCH.err()
}

fn explicit_identity(table: &Table) -> SqlError {
    msg::IDENTITY_INSERT_NEEDS_COLUMN_LIST.with(&[&table.name])
}

pub(super) fn bind_top(b: &mut Binder, top: Option<&ast::Top>) -> SqlResult<Option<Expr>> {
    match top {
        None => Ok(None),
        Some(t) => {
            let (e, ty) = b.bind_for(&t.count, &SqlType::BigInt)?;
            Ok(Some(convert(e, &ty, &SqlType::BigInt)?))
        }
    }
}

/// The table columns an INSERT's column list names (each once; no computed one: 271), or
/// without a list every column but the identity and the computed ones (an identity value
/// then needs the list: 8101).
pub(super) fn insert_columns(b: &Binder, db: &str, table: &Table, names: &[ast::Ident]) -> SqlResult<Vec<usize>> {
    let identity = table.identity_column();
    if names.is_empty() {
        let identity_insert =
            b.session.identity_insert().is_some_and(|(on, id)| on.eq_ignore_ascii_case(db) && id == table.id);
        if identity_insert && identity.is_some() {
            return Err(explicit_identity(table));
        }
        let stored = |&i: &usize| Some(i) != identity && table.columns[i].computed.is_none();
        return Ok((0..table.columns.len()).filter(stored).collect());
    }
    let mut cols = Vec::new();
    for c in names {
        let i = table.column(&c.value).ok_or_else(|| invalid_column(&c.value))?;
        if table.columns[i].computed.is_some() {
            return Err(msg::COLUMN_NOT_MODIFIABLE.with(&[&table.columns[i].name]));
        }
        if cols.contains(&i) {
            return Err(msg::COLUMN_ASSIGNED_TWICE.with(&[&c.value]));
        }
        cols.push(i);
    }
    Ok(cols)
}

/// A VALUES row of `values` items for `columns`: 109 or 110 when the counts differ (an
/// identity error without a column list, when a value is given for every column).
pub(super) fn check_values_count(table: &Table, listed: bool, columns: usize, values: usize) -> SqlResult<()> {
    if values == columns {
        return Ok(());
    }
    if !listed {
        return Err(mismatched_insert(table, values));
    }
    Err(if values > columns {
        msg::INSERT_FEWER_COLUMNS_THAN_VALUES.err()
    } else {
        msg::INSERT_MORE_COLUMNS_THAN_VALUES.err()
    })
}

pub fn compile_insert(b: &mut Binder, ins: &ast::Insert) -> SqlResult<InsertPlan> {
    let (rt, view) = resolve_target(b, &ins.table)?;
    let table = rt.table.clone();
    let key = crate::catalog::name_key(&table.schema, &table.name);
    b.remove_access(&rt.at, &key, Access::SELECT);
    b.add_access(&rt.at, &key, Access::INSERT);
    let identity = table.identity_column();
    let columns = insert_columns(b, &rt.db, &table, &ins.columns)?;
    // Whether IDENTITY_INSERT allows it is checked when the statement runs: a SET earlier
    // in the same batch may turn it on.
    let explicit_identity = identity.is_some_and(|id| columns.contains(&id));
    let (source, source_types) = match &ins.source {
        ast::InsertSource::DefaultValues => (InsertSource::DefaultValues, Vec::new()),
        ast::InsertSource::Values(rows) => {
            let mut bound_rows = Vec::with_capacity(rows.len());
            for r in rows {
                check_values_count(&table, !ins.columns.is_empty(), columns.len(), r.len())?;
                let mut br = Vec::with_capacity(r.len());
                for (e, &col) in r.iter().zip(&columns) {
                    br.push(match e {
                        ast::Expr::Default => None,
                        e => Some(b.bind_for(e, &table.columns[col].ty)?),
                    });
                }
                bound_rows.push(br);
            }
            // One type per column across the rows, as a table value constructor has.
            let mut types_ = Vec::with_capacity(columns.len());
            for (j, &col) in columns.iter().enumerate() {
                let mut t: Option<SqlType> = None;
                for r in &bound_rows {
                    if let Some((e, et)) = &r[j] {
                        if matches!(e, Expr::Const(Value::Null)) {
                            continue;
                        }
                        t = Some(match t {
                            None => *et,
                            Some(acc) if bound_rows.len() > 1 => types::common_type(&acc, et)?,
                            Some(acc) => acc,
                        });
                    }
                }
                types_.push(t.unwrap_or(table.columns[col].ty));
            }
            let mut out = Vec::with_capacity(bound_rows.len());
            for r in bound_rows {
                let mut row = Vec::with_capacity(r.len());
                for (j, v) in r.into_iter().enumerate() {
                    row.push(match v {
                        None => None,
                        Some((e, et)) => {
                            Some(if matches!(e, Expr::Const(Value::Null)) { e } else { convert(e, &et, &types_[j])? })
                        }
                    });
                }
                out.push(row);
            }
            (InsertSource::Rows(out), types_)
        }
        ast::InsertSource::Query(q) => {
            // While deducing undeclared parameters' types: one that is a select item of
            // the source is of the column it goes to.
            if let ast::SetExpr::Select(sel) = &q.body {
                for (item, &col) in sel.items.iter().zip(&columns) {
                    if let ast::SelectItem::Expr { expr, .. } = item {
                        if let Some(p) = b.undeclared(expr) {
                            b.note_deduced(p, table.columns[col].ty, false, None);
                        }
                    }
                }
            }
            let bound = b.bind_query(q)?;
            if bound.columns.len() != columns.len() && ins.columns.is_empty() {
                return Err(mismatched_insert(&table, bound.columns.len()));
            }
            if bound.columns.len() != columns.len() {
                return Err(if bound.columns.len() > columns.len() {
                    msg::INSERT_SELECT_TOO_MANY_VALUES.err()
                } else {
                    msg::INSERT_SELECT_TOO_FEW_VALUES.err()
                });
            }
            let types_ = bound.columns.iter().map(|c| c.ty).collect();
            (InsertSource::Query(Box::new(bound.plan)), types_)
        }
        ast::InsertSource::Execute(_) => {
            // The session runs the procedure first and supplies its rows (session.rs).
            (InsertSource::Rows(Vec::new()), Vec::new())
        }
    };
    let output = bind_output(b, &table, ins.output.as_ref())?;
    if ins.output.is_some() {
        // OUTPUT reads the rows inserted: SELECT on the table, as SQL Server asks.
        b.add_access(&rt.at, &key, Access::SELECT);
    }
    let top = bind_top(b, ins.top.as_ref())?;
    let target = bind_resolved(b, rt, view)?;
    Ok(InsertPlan { target, columns, source_types, source, output, top, explicit_identity })
}

/// An OUTPUT clause of a data change on `table`; `OUTPUT … INTO t` binds an INSERT into `t`
/// whose rows are the clause's.
pub(super) fn bind_output(
    b: &mut Binder,
    table: &Table,
    output: Option<&ast::Output>,
) -> SqlResult<Option<OutputPlan>> {
    bind_output_over(b, table, output, Binder::output_scope(table))
}

/// An OUTPUT clause of a data change on `table` over `scope` (see `bind_output_rows`).
pub(super) fn bind_output_over(
    b: &mut Binder,
    table: &Table,
    output: Option<&ast::Output>,
    scope: crate::bind::Scope,
) -> SqlResult<Option<OutputPlan>> {
    let Some(out) = output else { return Ok(None) };
    let mut plan = bind_output_rows(b, table, out, scope)?;
    if let Some((target, cols)) = &out.into {
        let insert = ast::Insert {
            top: None,
            table: target.clone(),
            columns: cols.clone(),
            output: None,
            source: ast::InsertSource::Values(Vec::new()),
        };
        let mut into = compile_insert(b, &insert)?;
        if into.target.view {
            let shown = target.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
            return Err(msg::OUTPUT_INTO_VIEW.with(&[&shown]));
        }
        if into.columns.len() != plan.columns.len() {
            return Err(msg::INSERT_COLUMN_COUNT_MISMATCH.err());
        }
        into.source_types = plan.columns.iter().map(|c| c.ty).collect();
        plan.into = Some(Box::new(into));
    }
    Ok(Some(plan))
}
