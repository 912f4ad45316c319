//! UPDATE: compiling SET lists (columns and variables), and running it in two phases —
//! every row checked, then all old rows unlinked, then all new rows linked.

use super::constraints::assign_value;
use super::insert::compute_columns;
use super::partial::{apply, Splice};
use super::row_changes::{check_update, link_new_row, unlink_old_row};
use super::rowcount_limit;
use super::target::{count_maintenance, unique_targets, update_touches, BoundTarget, TargetAt};
use crate::exec::{eval, expressions_run, run};
use crate::runtime::ExecCtx;
use std::sync::Arc;
use tessera_errors::SqlResult;
use tessera_semantics::plan::{Expr, Row, SetList, UpdatePlan, VarSource};
use tessera_semantics::types::{self, Value};

/// A row to change: its key, its values before and after, and the parts of its large
/// values that `SET col.WRITE` replaces.
type RowChange = (Arc<[u8]>, Row, Row, Vec<Splice>);

pub fn run_update(ctx: &mut ExecCtx, p: &UpdatePlan) -> SqlResult<(u64, Vec<Row>)> {
    let mut rows = unique_targets(run(&p.source, &[], ctx)?, p.key);
    rows.truncate(rowcount_limit(ctx));
    let target = p.target.at(ctx)?;
    let table = &target.table;
    let n = table.columns.len();
    let changed = changed_columns(&p.set, &target);
    count_maintenance(table, |ix| update_touches(table, ix, &changed));
    expressions_run(set_expressions(&p.set), ctx);
    // Every row is evaluated and checked against the statement's starting state, then
    // all old rows are unlinked before any new row is stored, so that an update that
    // shifts keys (`SET id = id + 1`) only fails when its final state has duplicates.
    let mut changes: Vec<RowChange> = Vec::with_capacity(rows.len());
    let mut output = Vec::new();
    for r in rows {
        ctx.yield_point()?;
        let old: Row = r[p.offset..p.offset + n].to_vec();
        let Value::Binary(key) = &r[p.key] else { continue };
        let (new, splices) = assign(ctx, &p.set, &r, &old, &target)?;
        check_update(ctx, &target, &old, &new, &changed, 0, "UPDATE")?;
        if let Some(out) = &p.output {
            let mut both = old.clone();
            both.extend(new.iter().cloned());
            output.push(out.exprs.iter().map(|e| eval(e, &both, ctx)).collect::<SqlResult<Row>>()?);
        }
        changes.push((key.clone(), old, new, splices));
    }
    for (key, old, new, _) in &changes {
        ctx.yield_point()?;
        unlink_old_row(ctx, &target, key, old, new, &changed)?;
    }
    for (key, old, new, splices) in &changes {
        ctx.yield_point()?;
        link_new_row(ctx, &target, key, old, new, &changed, splices)?;
    }
    let count = changes.len() as u64;
    if let Some(t) = ctx.session.transitions.as_mut() {
        t.updated_columns = changed;
        t.updated.extend(changes.into_iter().map(|(_, old, new, _)| (old, new)));
    }
    Ok((count, output))
}

/// A row's new values under a SET list evaluated over `source` (the row the statement
/// read, `old` the target's part of it), with the parts of large values `.WRITE`
/// replaces; the list's variables are assigned on the way.
pub(super) fn assign(
    ctx: &mut ExecCtx,
    set: &SetList,
    source: &[Value],
    old: &[Value],
    target: &TargetAt,
) -> SqlResult<(Row, Vec<Splice>)> {
    let table = &target.table;
    // A new row: NEXT VALUE FOR in the SET list gives this row's own values.
    ctx.row_sequence_values.clear();
    let mut new = old.to_vec();
    for (col, e, t) in &set.sets {
        let v = eval(e, source, ctx)?;
        new[*col] = assign_value(&v, t, &target.db, table, *col)?;
    }
    let mut splices = Vec::with_capacity(set.writes.len());
    for w in &set.writes {
        let (v, splice) = apply(ctx, w, source, old, table)?;
        new[w.column] = v;
        splices.push(splice);
    }
    compute_columns(ctx, target, &mut new)?;
    for (slot, e, t, vt) in &set.variables {
        let v = match e {
            VarSource::NewColumn(c) => new[*c].clone(),
            VarSource::Expr(e) => eval(e, source, ctx)?,
        };
        ctx.session.vars[*slot] = types::cast(&v, t, vt, None)?.to_keep()?;
    }
    Ok((new, splices))
}

/// The expressions a SET list evaluates for each row.
pub(super) fn set_expressions(set: &SetList) -> impl Iterator<Item = &Expr> {
    let writes = set.writes.iter().flat_map(|w| [&w.value.0, &w.offset.0, &w.length.0]);
    let variables = set.variables.iter().filter_map(|(_, v, ..)| match v {
        VarSource::Expr(e) => Some(e),
        VarSource::NewColumn(_) => None,
    });
    set.sets.iter().map(|(_, e, _)| e).chain(writes).chain(variables)
}

/// The columns a SET list changes, with the table's computed columns (recomputed with
/// every change of the row).
pub(super) fn changed_columns(set: &SetList, target: &TargetAt) -> Vec<usize> {
    let mut changed = set.changed();
    changed.extend(target.computed.iter().enumerate().filter(|(_, c)| c.is_some()).map(|(i, _)| i));
    changed
}
