//! Data changes an INSTEAD OF trigger takes: the rows a statement would insert, update or
//! delete, worked out as it would work them out and handed to the trigger as `inserted`
//! and `deleted` — nothing is stored, no constraint is checked, no identity value is
//! taken. The target is a table or a view (`Target::view`: a view's rows are its
//! columns, read through its definition).
//!
//! The rows of an INSERT are its values for the columns it names; a table's other columns
//! get their defaults, a view's NULL, and identity columns NULL (the trigger inserts
//! into the table, which takes the identity values then). An UPDATE's new rows are its
//! SET lists applied to the rows it reads, a table's computed columns computed again.

use super::insert::{check_identity_insert, new_row, source_rows, top_limit, Identity};
use super::rowcount_limit;
use super::target::{unique_targets, BoundTarget, TargetAt};
use super::update::{assign, changed_columns};
use crate::exec::{eval, run};
use crate::runtime::{ExecCtx, Transitions};
use std::sync::Arc;
use tessera_errors::SqlResult;
use tessera_semantics::plan::{DeletePlan, InsertPlan, OutputPlan, Plan, Row, Target, UpdatePlan};
use tessera_semantics::types::Value;

/// What a statement an INSTEAD OF trigger takes would have changed: its rows, as the
/// trigger sees them, and its OUTPUT rows.
pub struct Taken {
    pub transitions: Transitions,
    pub output: Vec<Row>,
}

impl Taken {
    /// How many rows the statement would have changed (its DONE count, @@ROWCOUNT).
    pub fn count(&self) -> u64 {
        let t = &self.transitions;
        (t.inserted.len() + t.updated.len() + t.deleted.len()) as u64
    }
}

/// The target as the rows are worked out: a table's as it is now, a view's as bound.
fn target_at<'p>(ctx: &ExecCtx, target: &'p Target) -> SqlResult<TargetAt<'p>> {
    if !target.view {
        return target.at(ctx);
    }
    Ok(TargetAt {
        db: Arc::from(target.db.name(&ctx.session.database)),
        table: target.table.clone(),
        checks: &target.checks,
        defaults: &target.defaults,
        filters: &target.filters,
        computed: &target.computed,
    })
}

/// An OUTPUT row over a deleted row and an inserted one (either all NULL).
fn output_row(ctx: &mut ExecCtx, out: &OutputPlan, deleted: &[Value], inserted: &[Value]) -> SqlResult<Row> {
    let both: Row = deleted.iter().chain(inserted).cloned().collect();
    out.exprs.iter().map(|e| eval(e, &both, ctx)).collect()
}

pub fn take_insert(ctx: &mut ExecCtx, p: &InsertPlan) -> SqlResult<Taken> {
    let target = target_at(ctx, &p.target)?;
    let table = &target.table;
    if !p.target.view {
        check_identity_insert(ctx, &target, p.explicit_identity)?;
    }
    let rows = source_rows(ctx, p)?;
    let limit = top_limit(ctx, p.top.as_ref())?.min(rowcount_limit(ctx));
    let n = table.columns.len();
    let mut transitions = Transitions::default();
    let mut output = Vec::new();
    for src in rows.into_iter().take(limit) {
        ctx.yield_point()?;
        let row = new_row(ctx, &target, &p.columns, &p.source_types, src, Identity::Leave)?;
        if let Some(out) = &p.output {
            output.push(output_row(ctx, out, &vec![Value::Null; n], &row)?);
        }
        transitions.inserted.push(row);
    }
    Ok(Taken { transitions, output })
}

/// The rows an UPDATE or DELETE reads from `source`: a table's each once (by `key`), a
/// view's as they come.
fn read_rows(ctx: &mut ExecCtx, source: &Plan, target: &Target, key: usize) -> SqlResult<Vec<Row>> {
    let mut rows = run(source, &[], ctx)?;
    if !target.view {
        rows = unique_targets(rows, key);
    }
    rows.truncate(rowcount_limit(ctx));
    Ok(rows)
}

pub fn take_update(ctx: &mut ExecCtx, p: &UpdatePlan) -> SqlResult<Taken> {
    let rows = read_rows(ctx, &p.source, &p.target, p.key)?;
    let target = target_at(ctx, &p.target)?;
    let n = target.table.columns.len();
    let mut transitions = Transitions { updated_columns: changed_columns(&p.set, &target), ..Default::default() };
    let mut output = Vec::new();
    for r in rows {
        ctx.yield_point()?;
        let old: Row = r[p.offset..p.offset + n].to_vec();
        let (new, _) = assign(ctx, &p.set, &r, &old, &target)?;
        if let Some(out) = &p.output {
            output.push(output_row(ctx, out, &old, &new)?);
        }
        transitions.updated.push((old, new));
    }
    Ok(Taken { transitions, output })
}

pub fn take_delete(ctx: &mut ExecCtx, p: &DeletePlan) -> SqlResult<Taken> {
    let rows = read_rows(ctx, &p.source, &p.target, p.key)?;
    let n = p.target.table.columns.len();
    let mut transitions = Transitions::default();
    let mut output = Vec::new();
    for r in rows {
        ctx.yield_point()?;
        let old: Row = r[p.offset..p.offset + n].to_vec();
        if let Some(out) = &p.output {
            output.push(output_row(ctx, out, &old, &vec![Value::Null; n])?);
        }
        transitions.deleted.push(old);
    }
    Ok(Taken { transitions, output })
}
