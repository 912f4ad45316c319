//! INSERT: compiling the column list and source (VALUES, a query, DEFAULT VALUES), and
//! running it with identity values, defaults, constraints and OUTPUT.

use super::bulk::StagedRows;
use super::constraints::check_row;
use super::foreign_keys::check_parents;
use super::identity::{next_identity, observe_identity};
use super::output::bind_output;
use super::storage::store_row;
use super::{assign_value, bind_target, load_counters, rowcount_limit, OutputPlan, Target};
use crate::bind::{convert, invalid_column, Binder};
use crate::catalog::Table;
use crate::plan::{eval, run, Expr, Plan, Row};
use crate::runtime::ExecCtx;
use crate::types::{self, SqlType, Value};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast;

#[derive(Debug)]
pub enum InsertSource {
    /// VALUES rows; None is the DEFAULT keyword.
    Rows(Vec<Vec<Option<Expr>>>),
    Query(Box<Plan>),
    DefaultValues,
}

#[derive(Debug)]
pub struct InsertPlan {
    pub target: Target,
    /// Table column receiving each source column.
    pub columns: Vec<usize>,
    pub source_types: Vec<SqlType>,
    pub source: InsertSource,
    pub output: Option<OutputPlan>,
    pub top: Option<Expr>,
    /// The column list names the identity column (needs IDENTITY_INSERT ON).
    pub explicit_identity: bool,
}

/// An INSERT without a column list whose values do not fit the table's columns (a value
/// for every column, identity included, is an identity error).
fn mismatched_insert(table: &Table, values: usize) -> SqlError {
    if table.identity_column().is_some() && values == table.columns.len() {
        return explicit_identity(table);
    }
    SqlError::new(213, "Column name or number of supplied values does not match table definition.")
}

fn explicit_identity(table: &Table) -> SqlError {
    SqlError::new(
        8101,
        format!("An explicit value for the identity column in table '{}' can only be specified when a column list is used and IDENTITY_INSERT is ON.", table.name),
    )
}

fn bind_top(b: &mut Binder, top: Option<&ast::Top>) -> SqlResult<Option<Expr>> {
    match top {
        None => Ok(None),
        Some(t) => {
            let (e, ty) = b.bind_expr(&t.count)?;
            Ok(Some(convert(e, &ty, &SqlType::BigInt)?))
        }
    }
}

pub fn compile_insert(b: &mut Binder, ins: &ast::Insert) -> SqlResult<InsertPlan> {
    let rt = b.resolve_table(&ins.table)?;
    let table = rt.table.clone();
    let identity = table.identity_column();
    let identity_insert = b
        .session
        .options
        .identity_insert
        .as_ref()
        .is_some_and(|(db, id)| db.eq_ignore_ascii_case(&rt.db) && *id == table.id);
    let columns: Vec<usize> = if ins.columns.is_empty() {
        if identity_insert && identity.is_some() {
            return Err(explicit_identity(&table));
        }
        (0..table.columns.len()).filter(|&i| Some(i) != identity).collect()
    } else {
        let mut cols = Vec::new();
        for c in &ins.columns {
            let i = table.column(&c.value).ok_or_else(|| invalid_column(&c.value))?;
            if cols.contains(&i) {
                return Err(SqlError::new(
                    264,
                    format!("The column name '{}' is specified more than once in the SET clause or column list of an INSERT. A column cannot be assigned more than one value in the same clause. Modify the clause to make sure that a column is updated only once. If this statement updates or inserts columns into a view, column aliasing can conceal the duplication in your code.", c.value),
                ));
            }
            cols.push(i);
        }
        cols
    };
    // Whether IDENTITY_INSERT allows it is checked when the statement runs: a SET earlier
    // in the same batch may turn it on.
    let explicit_identity = identity.is_some_and(|id| columns.contains(&id));
    let (source, source_types) = match &ins.source {
        ast::InsertSource::DefaultValues => (InsertSource::DefaultValues, Vec::new()),
        ast::InsertSource::Values(rows) => {
            let mut bound_rows = Vec::with_capacity(rows.len());
            for r in rows {
                if r.len() != columns.len() && ins.columns.is_empty() {
                    return Err(mismatched_insert(&table, r.len()));
                }
                if r.len() != columns.len() {
                    let (n, msg) = if r.len() > columns.len() {
                        (110, "There are fewer columns in the INSERT statement than values specified in the VALUES clause. The number of values in the VALUES clause must match the number of columns specified in the INSERT statement.")
                    } else {
                        (109, "There are more columns in the INSERT statement than values specified in the VALUES clause. The number of values in the VALUES clause must match the number of columns specified in the INSERT statement.")
                    };
                    return Err(SqlError::new(n, msg).with_severity(15));
                }
                let mut br = Vec::with_capacity(r.len());
                for e in r {
                    br.push(match e {
                        ast::Expr::Default => None,
                        e => Some(b.bind_expr(e)?),
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
            let bound = b.bind_query(q)?;
            if bound.columns.len() != columns.len() && ins.columns.is_empty() {
                return Err(mismatched_insert(&table, bound.columns.len()));
            }
            if bound.columns.len() != columns.len() {
                return Err(SqlError::new(
                    if bound.columns.len() > columns.len() { 121 } else { 120 },
                    if bound.columns.len() > columns.len() {
                        "The select list for the INSERT statement contains more items than the insert list. The number of SELECT values must match the number of INSERT columns."
                    } else {
                        "The select list for the INSERT statement contains fewer items than the insert list. The number of SELECT values must match the number of INSERT columns."
                    },
                ).with_severity(15));
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
    let top = bind_top(b, ins.top.as_ref())?;
    let target = bind_target(b, rt.at, table)?;
    Ok(InsertPlan { target, columns, source_types, source, output, top, explicit_identity })
}

fn top_limit(ctx: &mut ExecCtx, top: Option<&Expr>) -> SqlResult<usize> {
    match top {
        None => Ok(usize::MAX),
        Some(e) => match eval(e, &[], ctx)? {
            Value::Int(n) if n >= 0 => Ok(n as usize),
            _ => Err(SqlError::new(
                1060,
                "The number of rows provided for a TOP or FETCH clauses row count parameter must be an integer.",
            )),
        },
    }
}

/// Runs an INSERT; returns the rows inserted and OUTPUT rows.
pub fn run_insert(ctx: &mut ExecCtx, p: &InsertPlan) -> SqlResult<(u64, Vec<Row>)> {
    let target = p.target.at(ctx)?;
    let table = &target.table;
    let on = ctx.session.options.identity_insert.as_ref();
    let identity_insert = on.is_some_and(|(db, id)| db.eq_ignore_ascii_case(&target.db) && *id == table.id);
    if p.explicit_identity && !identity_insert {
        return Err(SqlError::new(
            544,
            format!(
                "Cannot insert explicit value for identity column in table '{}' when IDENTITY_INSERT is set to OFF.",
                table.name
            ),
        ));
    }
    if identity_insert && !p.explicit_identity {
        return Err(SqlError::new(
            545,
            format!("Explicit value must be specified for identity column in table '{}' either when IDENTITY_INSERT is set to ON or when a replication user is inserting into a NOT FOR REPLICATION identity column.", table.name),
        ));
    }
    let source_rows: Vec<Vec<Option<Value>>> = match &p.source {
        InsertSource::DefaultValues => vec![Vec::new()],
        // A TDS bulk load: the statement names one row of parameters; the load's rows,
        // typed as those parameters, replace it.
        InsertSource::Rows(_) if ctx.session.bulk_rows.is_some() => {
            let rows = ctx.session.bulk_rows.take().unwrap_or_default();
            rows.into_iter().map(|r| r.into_iter().map(Some).collect()).collect()
        }
        InsertSource::Rows(rows) => {
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
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
    };
    let limit = top_limit(ctx, p.top.as_ref())?.min(rowcount_limit(ctx));
    let identity = table.identity_column();
    if identity.is_some() {
        load_counters(ctx, &target.db, table)?;
    }
    let mut count = 0u64;
    let mut output = Vec::new();
    let mut staged = StagedRows::new(ctx, &target, source_rows.len())?;
    for src in source_rows.into_iter().take(limit) {
        ctx.check_cancel()?;
        let mut row: Row = vec![Value::Null; table.columns.len()];
        let mut given = vec![false; table.columns.len()];
        for (j, v) in src.into_iter().enumerate() {
            let col = p.columns[j];
            if let Some(v) = v {
                row[col] = assign_value(&v, &p.source_types[j], &target.db, table, col)?;
                given[col] = true;
            }
        }
        for (i, c) in table.columns.iter().enumerate() {
            if given[i] {
                if c.identity.is_some() {
                    observe_identity(table, i, &row[i]);
                }
                continue;
            }
            if c.identity.is_some() {
                row[i] = next_identity(table, i)?;
            } else if let Some((e, t)) = &target.defaults[i] {
                let v = eval(e, &[], ctx)?;
                row[i] = assign_value(&v, t, &target.db, table, i)?;
            }
        }
        check_row(ctx, &target, &row, "INSERT")?;
        check_parents(ctx, &target, &row, None, "INSERT")?;
        match staged.as_mut() {
            Some(staged) => staged.add(ctx, &target, &row)?,
            None => {
                store_row(ctx, &target, &row)?;
            }
        }
        if let Some(i) = identity {
            let id = types::cast(&row[i], &table.columns[i].ty, &SqlType::Decimal { precision: 38, scale: 0 }, None)?;
            ctx.session.identity = Some(id.clone());
            ctx.session.scope_identity = Some(id);
        }
        if let Some(out) = &p.output {
            let mut both: Row = vec![Value::Null; table.columns.len()];
            both.extend(row.iter().cloned());
            output.push(out.exprs.iter().map(|e| eval(e, &both, ctx)).collect::<SqlResult<Row>>()?);
        }
        count += 1;
    }
    if let Some(staged) = staged {
        staged.store(ctx, &target)?;
    }
    Ok((count, output))
}
