//! UPDATE: compiling SET lists (columns and variables), and running it in two phases —
//! every row checked, then all old rows unlinked, then all new rows linked.

use super::BoundTarget;
use std::sync::Arc;
use tessera_semantics::plan::UpdatePlan;
use tessera_semantics::plan::VarSource;

use super::constraints::{check_row, map_duplicate};
use super::foreign_keys::{check_children, check_parents, MAX_CASCADE_DEPTH};
use super::indexes::{delete_index_entry, insert_index_entry};
use super::target::unique_targets;
use super::{assign_value, row_key, rowcount_limit, to_storage_row, TargetAt};
use crate::exec::{eval, run};
use crate::runtime::ExecCtx;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::catalog::Table;
use tessera_semantics::plan::Row;
use tessera_semantics::types::{self, Value};

pub(super) fn update_row(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    key: &[u8],
    old: &[Value],
    new: Row,
    changed: &[usize],
    depth: usize,
) -> SqlResult<()> {
    check_update(ctx, target, old, &new, changed, depth)?;
    unlink_old_row(ctx, target, key, old, &new, changed)?;
    link_new_row(ctx, target, key, old, &new, changed)
}

/// The constraints an updated row must meet, and the actions on referencing rows.
fn check_update(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    old: &[Value],
    new: &[Value],
    changed: &[usize],
    depth: usize,
) -> SqlResult<()> {
    if depth > MAX_CASCADE_DEPTH {
        return Err(SqlError::new(
            217,
            "Maximum stored procedure, function, trigger, or view nesting level exceeded (limit 32).",
        ));
    }
    check_row(ctx, target, new, "UPDATE")?;
    check_parents(ctx, target, new, Some(changed), "UPDATE")?;
    check_children(ctx, target, old, Some(new), "UPDATE", depth)
}

/// Whether an update moves the row to another clustered key.
fn clustered_key_changes(table: &Table, old: &[Value], new: &[Value], changed: &[usize]) -> bool {
    let key_cols = || table.indexes[0].columns.iter().map(|&(c, _)| c);
    key_cols().any(|c| changed.contains(&c))
        && key_cols().any(|c| {
            types::compare(&old[c], &new[c]) != Some(std::cmp::Ordering::Equal) || old[c].is_null() != new[c].is_null()
        })
}

/// First half of an update: removes the old row's clustered entry if its key changes and
/// its entries in the nonclustered indexes the update touches.
fn unlink_old_row(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    key: &[u8],
    old: &[Value],
    new: &[Value],
    changed: &[usize],
) -> SqlResult<()> {
    let table = &target.table;
    let key_changed = clustered_key_changes(table, old, new, changed);
    if key_changed {
        let rows_tree = ctx.tree(&target.db, &table.indexes[0].tree, table)?;
        ctx.transaction(&target.db)?.delete(rows_tree, key)?;
    }
    for ix in &table.indexes[1..] {
        if key_changed || ix.columns.iter().any(|(c, _)| changed.contains(c)) {
            delete_index_entry(ctx, target, ix, old, key)?;
        }
    }
    Ok(())
}

/// Second half of an update: stores the new row (in place, or under its new clustered
/// key) and its entries in the touched nonclustered indexes; duplicates are 2627/2601.
fn link_new_row(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    key: &[u8],
    old: &[Value],
    new: &[Value],
    changed: &[usize],
) -> SqlResult<()> {
    let table = &target.table;
    let key_changed = clustered_key_changes(table, old, new, changed);
    let rows_tree = ctx.tree(&target.db, &table.indexes[0].tree, table)?;
    let bytes = to_storage_row(table, new)?;
    let new_key = if key_changed {
        let uniq =
            table.has_uniquifier().then(|| u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes")));
        let nk = row_key(table, new, uniq)?;
        ctx.transaction(&target.db)?
            .insert(rows_tree, &nk, &bytes)
            .map_err(|e| map_duplicate(e, table, &table.indexes[0], new))?;
        nk
    } else {
        ctx.transaction(&target.db)?.update(rows_tree, key, &bytes)?;
        key.to_vec()
    };
    for ix in &table.indexes[1..] {
        if key_changed || ix.columns.iter().any(|(c, _)| changed.contains(c)) {
            insert_index_entry(ctx, target, ix, new, &new_key)?;
        }
    }
    Ok(())
}

pub fn run_update(ctx: &mut ExecCtx, p: &UpdatePlan) -> SqlResult<(u64, Vec<Row>)> {
    let mut rows = unique_targets(run(&p.source, &[], ctx)?, p.key);
    rows.truncate(rowcount_limit(ctx));
    let target = p.target.at(ctx)?;
    let table = &target.table;
    let n = table.columns.len();
    let changed: Vec<usize> = p.sets.iter().map(|s| s.0).collect();
    // Every row is evaluated and checked against the statement's starting state, then
    // all old rows are unlinked before any new row is stored, so that an update that
    // shifts keys (`SET id = id + 1`) only fails when its final state has duplicates.
    let mut changes: Vec<(Arc<[u8]>, Row, Row)> = Vec::with_capacity(rows.len());
    let mut output = Vec::new();
    for r in rows {
        ctx.check_cancel()?;
        let old: Row = r[p.offset..p.offset + n].to_vec();
        let Value::Binary(key) = &r[p.key] else { continue };
        let mut new = old.clone();
        for (col, e, t) in &p.sets {
            let v = eval(e, &r, ctx)?;
            new[*col] = assign_value(&v, t, &target.db, table, *col)?;
        }
        for (slot, e, t, vt) in &p.variables {
            let v = match e {
                VarSource::NewColumn(c) => new[*c].clone(),
                VarSource::Expr(e) => eval(e, &r, ctx)?,
            };
            ctx.session.vars[*slot] = types::cast(&v, t, vt, None)?;
        }
        check_update(ctx, &target, &old, &new, &changed, 0)?;
        if let Some(out) = &p.output {
            let mut both = old.clone();
            both.extend(new.iter().cloned());
            output.push(out.exprs.iter().map(|e| eval(e, &both, ctx)).collect::<SqlResult<Row>>()?);
        }
        changes.push((key.clone(), old, new));
    }
    for (key, old, new) in &changes {
        ctx.check_cancel()?;
        unlink_old_row(ctx, &target, key, old, new, &changed)?;
    }
    for (key, old, new) in &changes {
        ctx.check_cancel()?;
        link_new_row(ctx, &target, key, old, new, &changed)?;
    }
    let count = changes.len() as u64;
    Ok((count, output))
}
