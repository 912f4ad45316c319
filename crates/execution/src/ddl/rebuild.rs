//! Table rebuilds: new trees loaded in DDL's own transaction, changed definitions saved.

use crate::dml::{self, BoundTarget};
use std::sync::Arc;

use super::{create_trees, drop_trees, target_for, tree_name};
use crate::runtime::drop_trees_not_in;
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{self, Object, Table};
use tessera_semantics::plan::Row;

/// Runs `f` in a storage transaction of its own, committed when `f` succeeds: what DDL
/// writes into new trees must not depend on the session's transaction: the trees belong to
/// the definition, which that transaction's end keeps or drops (`write_definition`).
pub(super) fn in_own_transaction<T>(ctx: &mut ExecCtx, f: impl FnOnce(&mut ExecCtx) -> SqlResult<T>) -> SqlResult<T> {
    let saved = std::mem::take(&mut ctx.session.txns);
    let result = f(ctx).and_then(|v| ctx.session.txns.commit_all(false).map(|_| v));
    if result.is_err() {
        let _ = ctx.session.txns.rollback_all();
    }
    ctx.session.txns = saved;
    result
}

/// Replaces a table's definition and rebuilds its storage: every row goes through
/// `transform` into new trees; the old trees are dropped.
pub(super) fn rebuild(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    old: &Arc<Table>,
    new: Table,
    transform: &dyn Fn(Row) -> SqlResult<Row>,
) -> SqlResult<()> {
    let rows = dml::table_rows(ctx, database.name(), old)?;
    let mut out = Vec::with_capacity(rows.len());
    for (_, r) in rows {
        out.push(transform(r)?);
    }
    replace_storage(ctx, database, old, new, out)
}

/// Gives a table new trees holding `rows`, then drops the old trees.
pub(super) fn replace_storage(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    old: &Arc<Table>,
    mut new: Table,
    rows: Vec<Row>,
) -> SqlResult<()> {
    let shared = ctx.shared;
    shared.alter_catalog(database, |catalog, version| {
        for ix in &mut new.indexes {
            ix.tree = tree_name(new.id, ix.id, version);
        }
        new.modified = catalog::now_epoch();
        new.counters = Arc::default();
        new.prune_properties();
        create_trees(ctx, database, &new)?;
        let table = Arc::new(new.clone());
        let loaded = in_own_transaction(ctx, |ctx| {
            let target = target_for(ctx, database.name(), table.clone())?;
            dml::load_rows(ctx, &target.as_is(), rows)
        });
        if let Err(e) = loaded {
            let _ = drop_trees(database, &new);
            return Err(e);
        }
        if let Err(e) = write_definition(ctx, database, Some(old), Some(&table)) {
            let _ = drop_trees(database, &new);
            return Err(e);
        }
        Ok((catalog.with(Object::Table(table), version), ()))
    })
}

/// Saves `table`'s changed definition in place of `old`: trees `old` used that it does not
/// (a dropped index) go when the change is final, trees only it uses (a new index) when
/// the change is undone (see [`write_definition`]).
pub(super) fn save_definition(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    old: &Arc<Table>,
    mut table: Table,
) -> SqlResult<()> {
    table.modified = catalog::now_epoch();
    table.prune_properties();
    let shared = ctx.shared;
    shared.alter_catalog(database, |catalog, version| {
        let table = Arc::new(table);
        write_definition(ctx, database, Some(old), Some(&table))?;
        Ok((catalog.with(Object::Table(table), version), ()))
    })
}

/// Whether DDL on the table named `name` goes with the session's transaction: all but
/// temporary tables and table variables (their storage names start with `#`), whose
/// changes are final at once (issue 34 leaves them so).
pub(super) fn goes_with_transaction(name: &str) -> bool {
    !name.starts_with('#')
}

/// Makes `after` a table's catalog definition in place of `before` (None: created, or
/// dropped). For a table whose DDL goes with the session's transaction, the catalog row
/// changes in that transaction and the trees are settled at its end
/// (`ExecCtx::redefine_in_transaction`); otherwise the row changes at once and the trees
/// only `before` used are dropped at once. The caller changes the in-memory catalog.
pub(super) fn write_definition(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    before: Option<&Arc<Table>>,
    after: Option<&Arc<Table>>,
) -> SqlResult<()> {
    let Some(name) = before.or(after).map(|t| t.name.clone()) else { return Ok(()) };
    if goes_with_transaction(&name) {
        let object = |t: Option<&Arc<Table>>| t.map(|t| Object::Table(t.clone()));
        return ctx.redefine_in_transaction(database, object(before), object(after));
    }
    match (before, after) {
        (_, Some(a)) => crate::catalog_store::save(database, &Object::Table(a.clone()))?,
        (Some(b), None) => crate::catalog_store::delete(database, b.id)?,
        (None, None) => {}
    }
    if let Some(b) = before {
        drop_trees_not_in(database, b, after.map(|a| &**a))?;
    }
    Ok(())
}
