//! Changing one stored row: deleting or updating it with its index entries, after the
//! foreign keys that reference it are enforced. A cascade deletes or updates the
//! referencing rows through the same functions, one level deeper each time.

use super::constraints::{check_row, map_duplicate};
use super::foreign_keys::check_parents;
use super::indexes::{delete_index_entry, insert_index_entry};
use super::partial::{rewrite_stored, Splice};
use super::storage::{free_values, row_key, store_form, values_off_the_row};
use super::target::BoundTarget;
use super::{object_name, TargetAt};
use crate::encoding::decode_row;
use crate::exec::eval;
use crate::index_usage::add;
use crate::runtime::ExecCtx;
use std::collections::HashSet;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::bind::{bind_target, Binder};
use tessera_semantics::catalog::{Action, DbRef, Table};
use tessera_semantics::plan::Row;
use tessera_semantics::types::{self, Value};

pub(super) const MAX_CASCADE_DEPTH: usize = 32;

/// Rows of other tables referencing `row` of `table` through foreign key columns.
fn referencing_rows(
    ctx: &mut ExecCtx,
    db: &str,
    child: &std::sync::Arc<Table>,
    fk: &tessera_semantics::catalog::ForeignKey,
    parent: &Table,
    row: &[Value],
) -> SqlResult<Vec<(Vec<u8>, Row)>> {
    let values: Vec<Value> = fk
        .ref_columns
        .iter()
        .zip(&fk.columns)
        .map(|(&pc, &cc)| types::cast(&row[pc], &parent.columns[pc].ty, &child.columns[cc].ty, None))
        .collect::<SqlResult<_>>()?;
    if values.iter().any(Value::is_null) {
        return Ok(Vec::new());
    }
    // Scan the child's rows (through an index whose leading columns are the FK columns
    // when there is one).
    let schema = crate::encoding::row_schema(child)?;
    let rows_tree = ctx.tree(db, &child.indexes[0].tree, child)?;
    let lobs = ctx.lobs(db, child, &schema)?;
    // The children as they are now, never versions (as the parent check in
    // `foreign_keys`).
    ctx.transaction(db)?.reading_current(|tx| {
        let mut out = Vec::new();
        let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
        for item in tx.scan(rows_tree, all.0, all.1, tessera_database::Direction::Forward) {
            let (k, v) = item?;
            let r = decode_row(child, &schema, &v, &lobs)?;
            let hit = fk
                .columns
                .iter()
                .zip(&values)
                .all(|(&c, v)| types::compare(&r[c], v) == Some(std::cmp::Ordering::Equal));
            if hit {
                out.push((k, r));
            }
        }
        Ok(out)
    })
}

/// Enforces foreign keys referencing `table` when `row` is deleted or its key changes:
/// NO ACTION fails, CASCADE deletes (or updates) children, SET NULL/DEFAULT updates them.
/// `leaving` are the keys of the target's rows the statement deletes after this one: a row
/// of the same table among them is no child that stays (SQL Server checks a statement's
/// constraints at its end, so `DELETE FROM t` may empty a table that references itself).
pub(super) fn check_children(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    old: &[Value],
    new: Option<&[Value]>,
    kind: &str,
    depth: usize,
    leaving: &HashSet<Vec<u8>>,
) -> SqlResult<()> {
    let database = ctx.shared.database(&target.db)?;
    let catalog = ctx.catalog(&database)?;
    let table = &target.table;
    for (child, i) in catalog.referencing(table.id) {
        let fk = &child.foreign_keys[i];
        if let Some(new) = new {
            let same =
                fk.ref_columns.iter().all(|&c| types::compare(&old[c], &new[c]) == Some(std::cmp::Ordering::Equal));
            if same {
                continue;
            }
        }
        let mut rows = referencing_rows(ctx, &target.db, &child, fk, table, old)?;
        if child.id == table.id {
            rows.retain(|(k, _)| !leaving.contains(k));
        }
        if rows.is_empty() {
            continue;
        }
        let action = if new.is_some() { fk.on_update } else { fk.on_delete };
        let child_target = {
            let shared = ctx.shared;
            let session = &*ctx.session;
            let mut b = Binder::new(shared, session, &[]);
            bind_target(&mut b, DbRef::Named(target.db.to_string()), child.clone())?
        };
        match action {
            Action::NoAction => {
                let column = format!(", column '{}'", child.columns[fk.columns[0]].name);
                return Err(msg::CONSTRAINT_CONFLICT
                    .with(&[&kind, &"REFERENCE", &fk.name, &target.db, &object_name(&child), &column])
                    .with_state(0));
            }
            Action::Cascade if new.is_none() => {
                for (k, r) in rows {
                    delete_row(ctx, &child_target.as_is(), &k, &r, depth + 1, &HashSet::new())?;
                }
            }
            Action::Cascade | Action::SetNull | Action::SetDefault => {
                for (k, r) in rows {
                    let mut changed = r.clone();
                    for (j, &c) in fk.columns.iter().enumerate() {
                        changed[c] = match action {
                            Action::Cascade => new.map(|n| n[fk.ref_columns[j]].clone()).unwrap_or(Value::Null),
                            Action::SetNull => Value::Null,
                            _ => match &child_target.defaults[c] {
                                Some((e, t)) => types::cast(&eval(e, &[], ctx)?, t, &child.columns[c].ty, None)?,
                                None => Value::Null,
                            },
                        };
                    }
                    update_row(ctx, &child_target.as_is(), &k, &r, changed, &fk.columns, depth + 1)?;
                }
            }
        }
    }
    Ok(())
}

/// Deletes one row (its children first, as their foreign keys say); false when it is gone
/// already. `leaving` as for [`check_children`].
pub(super) fn delete_row(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    key: &[u8],
    row: &[Value],
    depth: usize,
    leaving: &HashSet<Vec<u8>>,
) -> SqlResult<bool> {
    if depth > MAX_CASCADE_DEPTH {
        return Err(msg::MAX_NESTING_LEVEL_EXCEEDED.err());
    }
    check_children(ctx, target, row, None, "DELETE", depth, leaving)?;
    let table = &target.table;
    let rows_tree = ctx.tree(&target.db, &table.indexes[0].tree, table)?;
    let values = values_off_the_row(ctx, &target.db, table, key)?;
    if !ctx.transaction(&target.db)?.delete(rows_tree, key)? {
        return Ok(false);
    }
    add(&table.indexes[0].usage.leaf_deletes, 1);
    free_values(ctx, &target.db, table, &values, &[])?;
    for ix in &table.indexes[1..] {
        delete_index_entry(ctx, target, ix, row, key)?;
    }
    Ok(true)
}

pub(super) fn update_row(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    key: &[u8],
    old: &[Value],
    new: Row,
    changed: &[usize],
    depth: usize,
) -> SqlResult<()> {
    check_update(ctx, target, old, &new, changed, depth, "UPDATE")?;
    unlink_old_row(ctx, target, key, old, &new, changed)?;
    link_new_row(ctx, target, key, old, &new, changed, &[])
}

/// The constraints an updated row must meet, and the actions on referencing rows; `kind`
/// is the statement their errors name (UPDATE, MERGE).
pub(super) fn check_update(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    old: &[Value],
    new: &[Value],
    changed: &[usize],
    depth: usize,
    kind: &str,
) -> SqlResult<()> {
    if depth > MAX_CASCADE_DEPTH {
        return Err(msg::MAX_NESTING_LEVEL_EXCEEDED.err());
    }
    check_row(ctx, target, new, kind, false)?;
    check_parents(ctx, target, new, Some(changed), kind)?;
    check_children(ctx, target, old, Some(new), kind, depth, &HashSet::new())
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
pub(super) fn unlink_old_row(
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
        // The row moves: its values are stored again under the new key.
        let rows_tree = ctx.tree(&target.db, &table.indexes[0].tree, table)?;
        let values = values_off_the_row(ctx, &target.db, table, key)?;
        ctx.transaction(&target.db)?.delete(rows_tree, key)?;
        add(&table.indexes[0].usage.leaf_deletes, 1);
        free_values(ctx, &target.db, table, &values, &[])?;
    }
    for ix in &table.indexes[1..] {
        // A filtered index's entry may come or go with any column its predicate reads.
        if key_changed || ix.filter.is_some() || ix.columns.iter().any(|(c, _)| changed.contains(c)) {
            delete_index_entry(ctx, target, ix, old, key)?;
        }
    }
    Ok(())
}

/// Second half of an update: stores the new row (in place, or under its new clustered
/// key) and its entries in the touched nonclustered indexes; duplicates are 2627/2601.
/// `splices` (`SET col.WRITE`) change the values stored off the row in place when the
/// row stays where it is.
pub(super) fn link_new_row(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    key: &[u8],
    old: &[Value],
    new: &[Value],
    changed: &[usize],
    splices: &[Splice],
) -> SqlResult<()> {
    let table = &target.table;
    ctx.check_tempdb_room(&target.db, 0)?;
    let key_changed = clustered_key_changes(table, old, new, changed);
    let rows_tree = ctx.tree(&target.db, &table.indexes[0].tree, table)?;
    // Updated in place, the row keeps the off-row values of the columns not changed, and
    // the values partly rewritten point at their new generation (the old one is not
    // freed: only its chunks the new one does not read go).
    let mut before = if key_changed { Vec::new() } else { values_off_the_row(ctx, &target.db, table, key)? };
    let rewritten = rewrite_stored(ctx, &target.db, table, &before, splices)?;
    before.retain(|(c, _)| !rewritten.iter().any(|(r, _)| r == c));
    // Exactly the same value (not merely equal under the collation).
    let unchanged = |c: usize| !changed.contains(&c) || old[c] == new[c];
    let kept: Vec<_> = before.iter().copied().filter(|&(c, _)| unchanged(c)).chain(rewritten).collect();
    let bytes = store_form(ctx, &target.db, table, new, &kept)?;
    let new_key = if key_changed {
        let uniq =
            table.has_uniquifier().then(|| u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes")));
        let nk = row_key(table, new, uniq)?;
        ctx.transaction(&target.db)?
            .insert(rows_tree, &nk, &bytes)
            .map_err(|e| map_duplicate(e, table, &table.indexes[0], new))?;
        add(&table.indexes[0].usage.leaf_inserts, 1);
        nk
    } else {
        ctx.transaction(&target.db)?.update(rows_tree, key, &bytes)?;
        add(&table.indexes[0].usage.leaf_updates, 1);
        free_values(ctx, &target.db, table, &before, &kept)?;
        key.to_vec()
    };
    for ix in &table.indexes[1..] {
        if key_changed || ix.filter.is_some() || ix.columns.iter().any(|(c, _)| changed.contains(c)) {
            insert_index_entry(ctx, target, ix, new, &new_key)?;
        }
    }
    Ok(())
}
