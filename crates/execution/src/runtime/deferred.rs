//! DDL that ends with its transaction (issue 34): a table created or dropped inside the
//! session's transaction. Its catalog row changes under that transaction (recovery and
//! ROLLBACK undo it with the transaction's rows), the in-memory catalog changes at once,
//! and what the log cannot undo waits for the transaction's end, as PostgreSQL's pending
//! deletes do: a dropped table's trees are dropped once the transaction commits; a
//! rollback (whole, to a savepoint, or of the failed statement) puts a dropped table's
//! definition back, and takes a created table's out and drops its trees.
//!
//! The table stays locked (schema modification, and its trees) by the transaction to its
//! end, so no other transaction writes rows into a table that may yet disappear. Crash
//! windows leave only space behind: trees of a table created by a transaction that never
//! committed, or of one dropped by a transaction that committed just before the crash,
//! are named by no catalog row.

use std::sync::Arc;

use tessera_database::Database;
use tessera_semantics::catalog::{Object, Table};

use super::DbCatalog;

/// What a transaction did to a table that its end settles.
pub struct Deferred {
    database: Arc<Database>,
    catalog: Arc<DbCatalog>,
    table: Arc<Table>,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Created,
    Dropped,
}

impl Deferred {
    pub(super) fn created(database: Arc<Database>, catalog: Arc<DbCatalog>, table: Arc<Table>) -> Deferred {
        Deferred { database, catalog, table, kind: Kind::Created }
    }

    pub(super) fn dropped(database: Arc<Database>, catalog: Arc<DbCatalog>, table: Arc<Table>) -> Deferred {
        Deferred { database, catalog, table, kind: Kind::Dropped }
    }

    pub(super) fn database(&self) -> &Arc<Database> {
        &self.database
    }

    /// The transaction committed: a dropped table's trees go.
    pub(super) fn committed(self) {
        if self.kind == Kind::Dropped {
            // A tree left behind by a failure here is only space: no catalog row names it.
            let _ = drop_trees(&self.database, &self.table);
        }
    }

    /// The transaction (or the part of it that did this) rolled back.
    pub(super) fn rolled_back(self) {
        let Deferred { database, catalog, table, kind } = self;
        match kind {
            Kind::Dropped => {
                let _ = catalog.alter(|c, version| Ok((c.with(Object::Table(table), version), ())));
            }
            Kind::Created => {
                let id = table.id;
                let _ = catalog.alter(|c, version| Ok((c.without(id, version), ())));
                let _ = drop_trees(&database, &table);
            }
        }
    }
}

/// Drops the storage trees of `table` that exist.
pub(crate) fn drop_trees(db: &Database, table: &Table) -> tessera_errors::SqlResult<()> {
    for ix in &table.indexes {
        if db.table(&ix.tree).is_some() {
            db.drop_table(&ix.tree)?;
        }
    }
    Ok(())
}
