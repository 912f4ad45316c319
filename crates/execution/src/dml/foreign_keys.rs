//! FOREIGN KEY constraints: a new or changed row's parents must exist; deleting or
//! changing a referenced row applies NO ACTION, CASCADE, SET NULL or SET DEFAULT to its
//! children, 32 levels deep at most.

use super::delete::delete_row;
use super::indexes::index_key;
use super::update::update_row;
use super::BoundTarget;
use super::{object_name, row_key, TargetAt};
use crate::encoding::decode_row;
use crate::exec::eval;
use crate::runtime::ExecCtx;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::bind::bind_target;
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::DbRef;
use tessera_semantics::catalog::{Action, Table};
use tessera_semantics::plan::Row;
use tessera_semantics::types::{self, Value};

/// Foreign keys of `table` whose columns in `row` must find a parent row.
pub(super) fn check_parents(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    row: &[Value],
    changed: Option<&[usize]>,
    kind: &str,
) -> SqlResult<()> {
    let table = &target.table;
    if table.foreign_keys.is_empty() {
        return Ok(());
    }
    let database = ctx.shared.database(&target.db)?;
    let catalog = ctx.shared.catalog(&database)?;
    for fk in &table.foreign_keys {
        if let Some(ch) = changed {
            if !fk.columns.iter().any(|c| ch.contains(c)) {
                continue;
            }
        }
        if fk.columns.iter().any(|&c| row[c].is_null()) {
            continue;
        }
        let parent = catalog
            .table_by_id(fk.ref_table)
            .cloned()
            .ok_or_else(|| tessera_semantics::bind::invalid_object("(referenced table)"))?;
        let values: Vec<Value> = fk
            .columns
            .iter()
            .zip(&fk.ref_columns)
            .map(|(&c, &pc)| types::cast(&row[c], &table.columns[c].ty, &parent.columns[pc].ty, None))
            .collect::<SqlResult<_>>()?;
        if !parent_exists(ctx, &target.db, &parent, &fk.ref_columns, &values)? {
            return Err(SqlError::new(
                547,
                format!(
                    "The {kind} statement conflicted with the FOREIGN KEY constraint \"{}\". The conflict occurred in database \"{}\", table \"{}\", column '{}'.",
                    fk.name,
                    target.db,
                    object_name(&parent),
                    parent.columns[fk.ref_columns[0]].name
                ),
            )
            .with_state(0));
        }
    }
    Ok(())
}

/// Whether `table` has a row whose `columns` equal `values`, through an index on them.
fn parent_exists(ctx: &mut ExecCtx, db: &str, table: &Table, columns: &[usize], values: &[Value]) -> SqlResult<bool> {
    let found = table.indexes.iter().position(|ix| {
        ix.unique && ix.columns.len() == columns.len() && ix.columns.iter().all(|(c, _)| columns.contains(c))
    });
    let Some(pos) = found else { return Ok(false) };
    let ix = &table.indexes[pos];
    let mut full = vec![Value::Null; table.columns.len()];
    for (c, v) in columns.iter().zip(values) {
        full[*c] = v.clone();
    }
    let key = if pos == 0 { row_key(table, &full, None)? } else { index_key(table, ix, &full)? };
    let t = ctx.tree(db, &ix.tree, table)?;
    let tx = ctx.transaction(db)?;
    Ok(tx.get(t, &key)?.is_some())
}

/// Rows of other tables referencing `row` of `table` through foreign key columns.
fn referencing_rows(
    ctx: &mut ExecCtx,
    db: &str,
    child: &Table,
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
    let mut out = Vec::new();
    let tx = ctx.transaction(db)?;
    for item in
        tx.scan(rows_tree, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, tessera_database::Direction::Forward)
    {
        let (k, v) = item?;
        let r = decode_row(child, &schema, &v)?;
        let hit =
            fk.columns.iter().zip(&values).all(|(&c, v)| types::compare(&r[c], v) == Some(std::cmp::Ordering::Equal));
        if hit {
            out.push((k, r));
        }
    }
    Ok(out)
}

/// Enforces foreign keys referencing `table` when `row` is deleted or its key changes:
/// NO ACTION fails, CASCADE deletes (or updates) children, SET NULL/DEFAULT updates them.
pub(super) fn check_children(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    old: &[Value],
    new: Option<&[Value]>,
    kind: &str,
    depth: usize,
) -> SqlResult<()> {
    let database = ctx.shared.database(&target.db)?;
    let catalog = ctx.shared.catalog(&database)?;
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
        let rows = referencing_rows(ctx, &target.db, &child, fk, table, old)?;
        if rows.is_empty() {
            continue;
        }
        let action = if new.is_some() { fk.on_update } else { fk.on_delete };
        let child_target = {
            let shared = ctx.shared;
            let session = &*ctx.session;
            let mut b = Binder::new(shared, session, &[]);
            bind_target(&mut b, DbRef::Named(target.db.clone()), child.clone())?
        };
        match action {
            Action::NoAction => {
                return Err(SqlError::new(
                    547,
                    format!(
                        "The {kind} statement conflicted with the REFERENCE constraint \"{}\". The conflict occurred in database \"{}\", table \"{}\", column '{}'.",
                        fk.name,
                        target.db,
                        object_name(&child),
                        child.columns[fk.columns[0]].name
                    ),
                )
                .with_state(0))
            }
            Action::Cascade if new.is_none() => {
                for (k, r) in rows {
                    delete_row(ctx, &child_target.as_is(), &k, &r, depth + 1)?;
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

pub(super) const MAX_CASCADE_DEPTH: usize = 32;
