//! Indexes: CREATE and DROP INDEX, index column lists, an index rebuilt by REPAIR_REBUILD.

use crate::dml::{self, BoundTarget};
use std::sync::Arc;
use tessera_database::LockMode;
use tessera_errors::msg;

use super::locking::{lock_for_ddl, lock_trees, OwnWrites};
use super::rebuild::{in_own_transaction, rebuild, save_definition};
use super::{heap_index, target_for, tree_name};
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{Index, Table};
use tessera_syntax::ast::{self, Ident, ObjectName};

/// Column positions of an index column list.
pub(super) fn index_columns(table: &Table, cols: &[ast::IndexColumn], what: &str) -> SqlResult<Vec<(usize, bool)>> {
    let mut out = Vec::new();
    for c in cols {
        let i = table.column(&c.name.value).ok_or_else(|| msg::INDEX_COLUMN_NOT_FOUND.with(&[&c.name.value]))?;
        if out.iter().any(|(x, _)| *x == i) {
            return Err(msg::DUPLICATE_COLUMN_IN_INDEX.with(&[&what, &c.name.value]));
        }
        if table.columns[i].ty.is_max() {
            return Err(msg::INVALID_INDEX_KEY_TYPE.with(&[&c.name.value, &table.name]));
        }
        out.push((i, c.descending));
    }
    Ok(out)
}

pub(super) fn place_index(table: &mut Table, ix: Index) {
    if ix.is_clustered() {
        table.indexes[0] = ix;
    } else {
        table.indexes.push(ix);
    }
}

pub fn create_index(ctx: &mut ExecCtx, ci: &ast::CreateIndex) -> SqlResult<()> {
    let (database, table) = lock_for_ddl(ctx, &ci.table, "CREATE INDEX")?;
    if table.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&ci.name.value)) {
        return Err(msg::INDEX_ALREADY_EXISTS.with(&[&ci.name.value, &table.schema, &table.name]));
    }
    if ci.filter.is_some() && ci.clustered == Some(true) {
        return Err(msg::FILTERED_INDEX_MUST_BE_NONCLUSTERED.err());
    }
    let columns = index_columns(&table, &ci.columns, "key or index")?;
    let include = ci
        .include
        .iter()
        .map(|c| table.column(&c.value).ok_or_else(|| msg::INDEX_COLUMN_NOT_FOUND.with(&[&c.value])))
        .collect::<SqlResult<Vec<_>>>()?;
    let mut new = (*table).clone();
    let version = ctx.shared.catalog(&database)?.version;
    if ci.clustered == Some(true) {
        if !table.indexes[0].is_heap() {
            return Err(msg::MULTIPLE_CLUSTERED_INDEXES.with(&[&table.name, &(table.indexes[0].name)]));
        }
        new.indexes[0] = Index {
            id: 1,
            name: ci.name.value.clone(),
            tree: String::new(),
            columns,
            unique: ci.unique,
            primary_key: false,
            unique_constraint: false,
            include,
            filter: None,
            usage: Default::default(),
        };
        return rebuild(ctx, &database, &table, new, &Ok).map_err(|e| {
            if e.number == 2601 || e.number == 2627 {
                let object = format!("{}.{}", table.schema, table.name);
                msg::CREATE_UNIQUE_INDEX_DUPLICATE.with(&[&object, &ci.name.value, &""])
            } else {
                e
            }
        });
    }
    let id = table.indexes.iter().map(|i| i.id).max().unwrap_or(1).max(1) + 1;
    let ix = Index {
        id,
        name: ci.name.value.clone(),
        tree: tree_name(table.id, id, version.wrapping_add(1_000_000)),
        columns,
        unique: ci.unique,
        primary_key: false,
        unique_constraint: false,
        include,
        filter: ci.filter.as_ref().map(tessera_syntax::unparse::definition),
        usage: Default::default(),
    };
    new.indexes.push(ix.clone());
    // Binding the target binds the filter: a column it names must exist.
    let target = target_for(ctx, database.name(), Arc::new(new.clone()))?;
    super::create_tree(ctx, &database, &ix.tree)?;
    let rows = dml::table_rows(ctx, database.name(), &target.table)?;
    if let Err(e) = in_own_transaction(ctx, |ctx| dml::build_index(ctx, &target.as_is(), &ix, &rows)) {
        let _ = database.drop_table(&ix.tree);
        return Err(e);
    }
    save_definition(ctx, &database, &table, new)
}

pub fn drop_index(ctx: &mut ExecCtx, index: &Ident, table_name: &ObjectName, if_exists: bool) -> SqlResult<()> {
    let (database, table) = lock_for_ddl(ctx, table_name, "DROP INDEX")?;
    let Some(pos) = table.indexes.iter().position(|i| !i.is_heap() && i.name.eq_ignore_ascii_case(&index.value)) else {
        if if_exists {
            return Ok(());
        }
        return Err(msg::DROP_OBJECT_NOT_FOUND
            .with(&[&"index", &format!("{}.{}", table.name, index.value)])
            .with_severity(11)
            .with_state(7));
    };
    let ix = &table.indexes[pos];
    if ix.primary_key || ix.unique_constraint {
        return Err(msg::DROP_CONSTRAINT_INDEX.with(&[
            &table.name,
            &ix.name,
            &(if ix.primary_key { "PRIMARY KEY" } else { "UNIQUE KEY" }),
        ]));
    }
    let mut new = (*table).clone();
    if pos == 0 {
        let version = ctx.shared.catalog(&database)?.version;
        new.indexes[0] = heap_index(table.id, version);
        return rebuild(ctx, &database, &table, new, &Ok);
    }
    // Its tree goes when the change is final (`save_definition`).
    new.indexes.remove(pos);
    save_definition(ctx, &database, &table, new)
}

/// Rebuilds the nonclustered index `ix` of `table` from the table's rows into a new tree
/// (DBCC CHECKDB … REPAIR_REBUILD): the table is locked as for DDL, the new tree built in
/// a transaction of its own, the definition pointed at it, the old tree dropped.
pub fn rebuild_index(ctx: &mut ExecCtx, db: &str, table: &Table, ix: usize) -> SqlResult<()> {
    let database = ctx.shared.database(db)?;
    ctx.transaction(db)?.lock_schema(table.id as u32, LockMode::SchemaModification)?;
    let Some(now) = ctx.shared.catalog(&database)?.table(&table.schema, &table.name).cloned() else {
        return Ok(());
    };
    if now.id != table.id || ix >= now.indexes.len() || now.indexes[ix].name != table.indexes[ix].name {
        // Changed by DDL since it was checked: nothing to repair here.
        return Ok(());
    }
    lock_trees(ctx, &database, &now, "DBCC CHECKDB", OwnWrites::Refused)?;
    let version = ctx.shared.catalog(&database)?.version;
    let mut new = (*now).clone();
    new.indexes[ix].tree = tree_name(now.id, now.indexes[ix].id, version.wrapping_add(2_000_000));
    super::create_tree(ctx, &database, &new.indexes[ix].tree)?;
    let target = target_for(ctx, db, Arc::new(new.clone()))?;
    let index = new.indexes[ix].clone();
    let rows = dml::table_rows(ctx, db, &target.table)?;
    if let Err(e) = in_own_transaction(ctx, |ctx| dml::build_index(ctx, &target.as_is(), &index, &rows)) {
        let _ = database.drop_table(&index.tree);
        return Err(e);
    }
    // The old tree goes when the change is final (`save_definition`).
    save_definition(ctx, &database, &now, new)
}
