//! Data definition: databases, tables, constraints and indexes.
//!
//! DDL goes with the session's transaction, as in SQL Server: the catalog row is written
//! in it and what the log cannot undo (trees to drop) waits for its end
//! (`ExecCtx::redefine_in_transaction`, `runtime/deferred.rs`). Changes that alter the row
//! layout or the clustered key (DROP COLUMN, ALTER COLUMN, a clustered index or primary
//! key added or dropped) rebuild the table into new trees.
//!
//! Files: `files` (SIZE, MAXSIZE and FILEGROWTH of a database's files), `databases`
//! (CREATE/ALTER/DROP DATABASE), `tables` (CREATE/DROP/TRUNCATE TABLE,
//! table variables, column definitions), `alter` (ALTER TABLE), `constraints` (PRIMARY KEY,
//! UNIQUE, CHECK, DEFAULT, FOREIGN KEY), `indexes` (CREATE/DROP INDEX, REPAIR_REBUILD of an
//! index), `locking` (the Sch-M and shared table locks DDL takes), `rebuild` (new trees
//! loaded in DDL's own transaction, definitions saved), `table_types` (table variables
//! of a table type); this file keeps the helpers they
//! share (tree names, a table's trees, a heap's index, a table as a DML target).

mod alter;
pub mod application_roles;
mod constraints;
mod databases;
mod files;
mod indexes;
mod locking;
pub mod logins;
pub mod principals;
mod query_store;
mod rebuild;
mod rename;
pub mod resource_governor;
mod table_types;
mod tables;

pub use alter::alter_table;
pub use databases::{alter_database, attach_files, create_database, detach_database, drop_database};
pub use indexes::{create_index, drop_index, rebuild_index};
pub use rename::{name_in_use, rename, RenameKind};
pub use table_types::declare_typed_table_variable;
pub use tables::{
    change_table_properties, create_table, declare_table_variable, drop_table, set_large_values_out_of_row,
    truncate_table,
};

use std::sync::Arc;

use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::{Index, Table};

fn tree_name(table_id: i32, index_id: u32, version: u64) -> String {
    format!("#{table_id}.{index_id}.{version}")
}

/// Creates a table's storage trees.
fn create_trees(ctx: &ExecCtx, db: &tessera_database::Database, table: &Table) -> SqlResult<()> {
    for ix in &table.indexes {
        create_tree(ctx, db, &ix.tree)?;
    }
    Ok(())
}

/// Creates one storage tree (in tempdb, charged to the request's tempdb quota).
fn create_tree(ctx: &ExecCtx, db: &tessera_database::Database, name: &str) -> SqlResult<()> {
    let id = db.create_table(name)?;
    ctx.charge_new_tree(db, id)
}

use crate::runtime::drop_trees;

fn heap_index(table_id: i32, version: u64) -> Index {
    Index {
        id: 0,
        name: String::new(),
        tree: tree_name(table_id, 0, version),
        columns: Vec::new(),
        unique: false,
        primary_key: false,
        unique_constraint: false,
        include: Vec::new(),
        filter: None,
        usage: Default::default(),
    }
}

fn target_for(ctx: &mut ExecCtx, db: &str, table: Arc<Table>) -> SqlResult<tessera_semantics::plan::Target> {
    let session = &*ctx.session;
    let mut b = Binder::new(ctx.shared, session, &[]);
    tessera_semantics::bind::bind_target(&mut b, tessera_semantics::catalog::DbRef::Named(db.to_string()), table)
}
