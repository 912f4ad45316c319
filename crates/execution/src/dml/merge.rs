//! MERGE: each row of the source's join with the target takes the first WHEN clause of
//! its kind whose condition holds; then the target's rows no source row matched take the
//! NOT MATCHED BY SOURCE clauses. Every action is decided against the statement's
//! starting state — a target row that two source rows would update or delete is 8672 —
//! and then applied: deletes, then updates (all old rows unlinked before any new one is
//! linked, as UPDATE does), then inserts.

use super::constraints::check_row;
use super::foreign_keys::check_parents;
use super::insert::{check_identity_insert, new_row, note_identity, top_limit, Identity};
use super::partial::Splice;
use super::row_changes::{check_update, delete_row, link_new_row, unlink_old_row};
use super::rowcount_limit;
use super::store::store_row;
use super::target::{count_maintenance, update_touches, BoundTarget, TargetAt};
use super::update::{assign, changed_columns, set_expressions};
use crate::exec::{eval, expressions_run, is_true, run};
use crate::identity::load_counters;
use crate::runtime::ExecCtx;
use std::collections::HashSet;
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::plan::{Expr, MergeAction, MergePlan, Row};
use tessera_semantics::types::Value;
use tessera_syntax::ast::MergeWhen;

/// What a MERGE does to one row, decided before anything changes. `row` is the join's
/// row the action was chosen on (what OUTPUT reads of the source).
enum Planned {
    Update {
        key: Arc<[u8]>,
        old: Row,
        new: Row,
        changed: Vec<usize>,
        splices: Vec<Splice>,
        row: Row,
    },
    Delete {
        key: Arc<[u8]>,
        old: Row,
        row: Row,
    },
    /// The values for the clause's columns (None: DEFAULT).
    Insert {
        clause: usize,
        values: Vec<Option<Value>>,
        row: Row,
    },
}

pub fn run_merge(ctx: &mut ExecCtx, p: &MergePlan) -> SqlResult<(u64, Vec<Row>)> {
    let target = p.target.at(ctx)?;
    let table = target.table.clone();
    let n = table.columns.len();
    let limit = top_limit(ctx, p.top.as_ref())?.min(rowcount_limit(ctx));
    // The indexes its actions maintain, and the subqueries its clauses evaluate.
    let (mut changed, mut every, mut exprs) = (Vec::new(), false, Vec::<&Expr>::new());
    for c in &p.clauses {
        exprs.extend(&c.condition);
        match &c.action {
            MergeAction::Update(set) => {
                changed.extend(changed_columns(set, &target));
                exprs.extend(set_expressions(set));
            }
            MergeAction::Insert { values, .. } => {
                every = true;
                exprs.extend(values.iter().flatten());
            }
            MergeAction::Delete => every = true,
        }
    }
    count_maintenance(&table, |ix| every || update_touches(&table, ix, &changed));
    expressions_run(exprs, ctx);
    for c in &p.clauses {
        if let MergeAction::Insert { explicit_identity, .. } = &c.action {
            check_identity_insert(ctx, &target, *explicit_identity)?;
            if table.identity_column().is_some() {
                load_counters(ctx, &target.db, &table)?;
            }
        }
    }
    let mut planned: Vec<Planned> = Vec::new();
    // Target rows the join matched, and those an action of a MATCHED clause takes.
    let mut matched: HashSet<Arc<[u8]>> = HashSet::new();
    let mut taken: HashSet<Arc<[u8]>> = HashSet::new();
    for row in run(&p.source, &[], ctx)? {
        ctx.yield_point()?;
        let key = match &row[p.key] {
            Value::Binary(k) => Some(k.clone()),
            _ => None,
        };
        if let Some(k) = &key {
            matched.insert(k.clone());
        }
        if planned.len() >= limit {
            continue;
        }
        let when = if key.is_some() { MergeWhen::Matched } else { MergeWhen::NotMatchedByTarget };
        let Some(action) = plan_row(ctx, p, &target, when, row)? else { continue };
        if let Planned::Update { key, .. } | Planned::Delete { key, .. } = &action {
            if !taken.insert(key.clone()) {
                return Err(msg::MERGE_ROW_MATCHED_TWICE.err());
            }
        }
        planned.push(action);
    }
    if let Some(unmatched) = &p.unmatched {
        for target_row in run(unmatched, &[], ctx)? {
            ctx.yield_point()?;
            if planned.len() >= limit {
                break;
            }
            if matches!(&target_row[n], Value::Binary(k) if matched.contains(k)) {
                continue;
            }
            let mut row = vec![Value::Null; p.offset];
            row.extend(target_row);
            if let Some(action) = plan_row(ctx, p, &target, MergeWhen::NotMatchedBySource, row)? {
                planned.push(action);
            }
        }
    }
    apply(ctx, p, &target, planned)
}

/// The action the first applicable clause of kind `when` takes on a row of the join, its
/// new values computed and checked; None when no clause applies.
fn plan_row(
    ctx: &mut ExecCtx,
    p: &MergePlan,
    target: &TargetAt,
    when: MergeWhen,
    row: Row,
) -> SqlResult<Option<Planned>> {
    let mut chosen = None;
    for (i, c) in p.clauses.iter().enumerate() {
        if c.when != when {
            continue;
        }
        if let Some(condition) = &c.condition {
            if !is_true(condition, &row, ctx)? {
                continue;
            }
        }
        chosen = Some(i);
        break;
    }
    let Some(clause) = chosen else { return Ok(None) };
    ctx.row_sequence_values.clear();
    let n = target.table.columns.len();
    let old = || row[p.offset..p.offset + n].to_vec();
    let key = || match &row[p.key] {
        Value::Binary(k) => k.clone(),
        _ => unreachable!("a matched row has its target's key"),
    };
    Ok(Some(match &p.clauses[clause].action {
        MergeAction::Update(set) => {
            let (old, key) = (old(), key());
            let (new, splices) = assign(ctx, set, &row, &old, target)?;
            let changed = changed_columns(set, target);
            check_update(ctx, target, &old, &new, &changed, 0, "MERGE")?;
            Planned::Update { key, old, new, changed, splices, row }
        }
        MergeAction::Delete => Planned::Delete { key: key(), old: old(), row },
        MergeAction::Insert { values, .. } => {
            let mut given = Vec::with_capacity(values.len());
            for v in values {
                given.push(match v {
                    Some(e) => Some(eval(e, &row, ctx)?),
                    None => None,
                });
            }
            Planned::Insert { clause, values: given, row }
        }
    }))
}

/// Applies the planned actions (deletes, updates, inserts); returns how many rows changed
/// and the OUTPUT rows, in the order the actions were decided.
fn apply(ctx: &mut ExecCtx, p: &MergePlan, target: &TargetAt, planned: Vec<Planned>) -> SqlResult<(u64, Vec<Row>)> {
    let n = target.table.columns.len();
    let count = planned.len() as u64;
    let mut output: Vec<Option<Row>> = vec![None; planned.len()];
    let mut leaving: HashSet<Vec<u8>> = planned
        .iter()
        .filter_map(|a| match a {
            Planned::Delete { key, .. } => Some(key.to_vec()),
            _ => None,
        })
        .collect();
    let nulls = || vec![Value::Null; n];
    for (i, a) in planned.iter().enumerate() {
        if let Planned::Delete { key, old, row } = a {
            ctx.yield_point()?;
            leaving.remove(&key[..]);
            delete_row(ctx, target, key, old, 0, &leaving)?;
            output[i] = output_row(ctx, p, old.clone(), nulls(), row, "DELETE")?;
            if let Some(t) = ctx.session.transitions.as_mut() {
                t.deleted.push(old.clone());
            }
        }
    }
    for a in &planned {
        if let Planned::Update { key, old, new, changed, .. } = a {
            ctx.yield_point()?;
            unlink_old_row(ctx, target, key, old, new, changed)?;
        }
    }
    for (i, a) in planned.iter().enumerate() {
        if let Planned::Update { key, old, new, changed, splices, row } = a {
            ctx.yield_point()?;
            link_new_row(ctx, target, key, old, new, changed, splices)?;
            output[i] = output_row(ctx, p, old.clone(), new.clone(), row, "UPDATE")?;
            if let Some(t) = ctx.session.transitions.as_mut() {
                t.updated.push((old.clone(), new.clone()));
                for c in changed {
                    if !t.updated_columns.contains(c) {
                        t.updated_columns.push(*c);
                    }
                }
            }
        }
    }
    for (i, a) in planned.into_iter().enumerate() {
        if let Planned::Insert { clause, values, row } = a {
            ctx.yield_point()?;
            let MergeAction::Insert { columns, source_types, .. } = &p.clauses[clause].action else {
                unreachable!("an insert is planned by an INSERT clause")
            };
            let new = new_row(ctx, target, columns, source_types, values, Identity::Take)?;
            check_row(ctx, target, &new, "MERGE", true)?;
            check_parents(ctx, target, &new, None, "MERGE")?;
            store_row(ctx, target, &new)?;
            note_identity(ctx, &target.table, &new)?;
            if let Some(t) = ctx.session.transitions.as_mut() {
                t.inserted.push(new.clone());
            }
            output[i] = output_row(ctx, p, nulls(), new, &row, "INSERT")?;
        }
    }
    Ok((count, output.into_iter().flatten().collect()))
}

/// The OUTPUT row of one action: over the deleted and inserted rows, the join's row and
/// `$action`.
fn output_row(
    ctx: &mut ExecCtx,
    p: &MergePlan,
    deleted: Row,
    inserted: Row,
    row: &[Value],
    action: &str,
) -> SqlResult<Option<Row>> {
    let Some(out) = &p.output else { return Ok(None) };
    let mut all = deleted;
    all.extend(inserted);
    all.extend(row.iter().cloned());
    all.push(Value::Str(Arc::from(action)));
    out.exprs.iter().map(|e| eval(e, &all, ctx)).collect::<SqlResult<Row>>().map(Some)
}
