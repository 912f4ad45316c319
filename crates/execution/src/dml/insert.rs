//! INSERT: compiling the column list and source (VALUES, a query, DEFAULT VALUES), and
//! running it with identity values, defaults, constraints and OUTPUT.

use super::bulk::{finish_lob_load, start_lob_load, StagedRows};
use super::constraints::{assign_value, check_row};
use super::foreign_keys::check_parents;
use super::rowcount_limit;
use super::store::store_row;
use super::target::{count_maintenance, BoundTarget, TargetAt};
use crate::exec::{eval, expressions_run, run};
use crate::identity::{load_counters, next_identity, observe_identity};
use crate::runtime::ExecCtx;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::Table;
use tessera_semantics::plan::{Expr, InsertPlan, InsertSource, Row};
use tessera_semantics::types::{self, SqlType, Value};

pub(super) fn top_limit(ctx: &mut ExecCtx, top: Option<&Expr>) -> SqlResult<usize> {
    match top {
        None => Ok(usize::MAX),
        Some(e) => match eval(e, &[], ctx)? {
            Value::Int(n) if n >= 0 => Ok(n as usize),
            _ => {
                Err(msg::TOP_ROW_COUNT_NOT_INTEGER.with(&[&"provided for a TOP or FETCH clauses row count parameter"]))
            }
        },
    }
}

/// IDENTITY_INSERT and an insert's column list must agree: a list naming the identity
/// column needs it ON (544), and while it is ON the list must name it (545).
pub(super) fn check_identity_insert(ctx: &ExecCtx, target: &TargetAt, explicit_identity: bool) -> SqlResult<()> {
    let table = &target.table;
    let on = ctx.session.options.identity_insert.as_ref();
    let identity_insert = on.is_some_and(|(db, id)| db.eq_ignore_ascii_case(&target.db) && *id == table.id);
    if explicit_identity && !identity_insert {
        return Err(msg::IDENTITY_INSERT_OFF.with(&[&table.name]));
    }
    if identity_insert && !explicit_identity {
        return Err(msg::IDENTITY_VALUE_REQUIRED.with(&[&table.name]));
    }
    Ok(())
}

/// What a new row does with its table's identity column.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Identity {
    /// The row is stored: an identity value not given is the table's next, one given is
    /// noted (the next ones go past it).
    Take,
    /// The row goes to an INSTEAD OF trigger: an identity value not given is NULL, and
    /// the table's counter is left alone.
    Leave,
}

/// A new row of the target from the values given for `columns` (typed `types`; None is
/// DEFAULT): the column's default for the columns not given, an identity value as
/// `identity` says, the computed columns computed.
pub(super) fn new_row(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    columns: &[usize],
    types: &[SqlType],
    values: Vec<Option<Value>>,
    identity: Identity,
) -> SqlResult<Row> {
    let table = &target.table;
    // Its defaults' NEXT VALUE FOR are this row's own.
    ctx.row_sequence_values.clear();
    let mut row: Row = vec![Value::Null; table.columns.len()];
    let mut given = vec![false; table.columns.len()];
    for (j, v) in values.into_iter().enumerate() {
        let col = columns[j];
        if let Some(v) = v {
            row[col] = assign_value(&v, &types[j], &target.db, table, col)?;
            given[col] = true;
        }
    }
    for (i, c) in table.columns.iter().enumerate() {
        if given[i] {
            if c.identity.is_some() && identity == Identity::Take {
                observe_identity(table, i, &row[i]);
            }
            continue;
        }
        if c.identity.is_some() {
            if identity == Identity::Take {
                row[i] = next_identity(table, i)?;
            }
        } else if let Some((e, t)) = &target.defaults[i] {
            let v = eval(e, &[], ctx)?;
            row[i] = assign_value(&v, t, &target.db, table, i)?;
        }
    }
    compute_columns(ctx, target, &mut row)?;
    Ok(row)
}

/// Stores in `row` the values of its table's computed columns, computed from its other
/// columns.
pub fn compute_columns(ctx: &mut ExecCtx, target: &TargetAt, row: &mut Row) -> SqlResult<()> {
    for (i, c) in target.computed.iter().enumerate() {
        if let Some((e, t)) = c {
            let v = eval(e, row, ctx)?;
            row[i] = assign_value(&v, t, &target.db, &target.table, i)?;
        }
    }
    Ok(())
}

/// After a row is inserted into a table with an identity: `@@IDENTITY` and
/// `SCOPE_IDENTITY()` are its value.
pub(super) fn note_identity(ctx: &mut ExecCtx, table: &Table, row: &[Value]) -> SqlResult<()> {
    if let Some(i) = table.identity_column() {
        let id = types::cast(&row[i], &table.columns[i].ty, &SqlType::Decimal { precision: 38, scale: 0 }, None)?;
        ctx.session.identity = Some(id.clone());
        ctx.session.scope_identity = Some(id);
    }
    Ok(())
}

/// An INSERT's source rows: a value for each column it names (None: DEFAULT).
pub(super) fn source_rows(ctx: &mut ExecCtx, p: &InsertPlan) -> SqlResult<Vec<Vec<Option<Value>>>> {
    Ok(match &p.source {
        InsertSource::DefaultValues => vec![Vec::new()],
        // A TDS bulk load: the statement names one row of parameters; the load's rows,
        // typed as those parameters, replace it.
        InsertSource::Rows(_) if ctx.session.bulk_rows.is_some() => {
            let rows = ctx.session.bulk_rows.take().unwrap_or_default();
            rows.into_iter().map(|r| r.into_iter().map(Some).collect()).collect()
        }
        InsertSource::Rows(rows) => {
            expressions_run(rows.iter().flatten().flatten(), ctx);
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                ctx.row_sequence_values.clear();
                let mut vals = Vec::with_capacity(r.len());
                for e in r {
                    vals.push(match e {
                        Some(e) => Some(eval(e, &[], ctx)?),
                        None => None,
                    });
                }
                out.push(vals);
            }
            out
        }
        InsertSource::Query(plan) => {
            run(plan, &[], ctx)?.into_iter().map(|r| r.into_iter().map(Some).collect()).collect()
        }
    })
}

/// Runs an INSERT; returns the rows inserted and OUTPUT rows.
pub fn run_insert(ctx: &mut ExecCtx, p: &InsertPlan) -> SqlResult<(u64, Vec<Row>)> {
    let target = p.target.at(ctx)?;
    let table = &target.table;
    check_identity_insert(ctx, &target, p.explicit_identity)?;
    let source_rows = source_rows(ctx, p)?;
    count_maintenance(table, |_| true);
    let limit = top_limit(ctx, p.top.as_ref())?.min(rowcount_limit(ctx));
    if table.identity_column().is_some() {
        load_counters(ctx, &target.db, table)?;
    }
    let mut count = 0u64;
    let mut output = Vec::new();
    let mut staged = StagedRows::new(ctx, &target, source_rows.len())?;
    let lob_load = start_lob_load(ctx, &target, &p.columns, &source_rows)?;
    for src in source_rows.into_iter().take(limit) {
        ctx.yield_point()?;
        let row = new_row(ctx, &target, &p.columns, &p.source_types, src, Identity::Take)?;
        check_row(ctx, &target, &row, "INSERT", true)?;
        check_parents(ctx, &target, &row, None, "INSERT")?;
        match staged.as_mut() {
            Some(staged) => staged.add(ctx, &target, &row)?,
            None => {
                store_row(ctx, &target, &row)?;
            }
        }
        note_identity(ctx, table, &row)?;
        if let Some(t) = ctx.session.transitions.as_mut() {
            t.inserted.push(row.clone());
        }
        if let Some(out) = &p.output {
            let mut both: Row = vec![Value::Null; table.columns.len()];
            both.extend(row.iter().cloned());
            output.push(out.exprs.iter().map(|e| eval(e, &both, ctx)).collect::<SqlResult<Row>>()?);
        }
        count += 1;
    }
    if lob_load {
        finish_lob_load(ctx, &target)?;
    }
    if let Some(staged) = staged {
        staged.store(ctx, &target)?;
    }
    Ok((count, output))
}
