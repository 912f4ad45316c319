//! Table rebuilds: new trees loaded in DDL's own transaction, changed definitions saved.

use crate::dml::{self, BoundTarget};
use std::sync::Arc;

use super::{create_trees, drop_trees, target_for, tree_name};
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{self, Object, Table};
use tessera_semantics::plan::Row;

/// Runs `f` in a storage transaction of its own, committed when `f` succeeds: what DDL
/// writes into new trees must not depend on the session's transaction, since the catalog
/// change it goes with is not transactional.
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
        let obj = Object::Table(table.clone());
        if let Err(e) = crate::catalog_store::save(database, &obj) {
            let _ = drop_trees(database, &new);
            return Err(e);
        }
        drop_trees(database, old)?;
        Ok((catalog.with(obj, version), ()))
    })
}

/// Saves a changed definition whose storage layout is unchanged.
pub(super) fn save_definition(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    mut table: Table,
) -> SqlResult<()> {
    table.modified = catalog::now_epoch();
    ctx.shared.alter_catalog(database, |catalog, version| {
        let obj = Object::Table(Arc::new(table));
        crate::catalog_store::save(database, &obj)?;
        Ok((catalog.with(obj, version), ()))
    })
}
