//! DDL that ends with its transaction (issue 34): a table dropped or redefined (TRUNCATE,
//! ALTER TABLE, indexes), or created under the name of one it dropped, inside the
//! session's transaction. Its catalog row
//! changes under that transaction (ROLLBACK and crash recovery undo it with the
//! transaction's rows), the in-memory catalog changes at once, and what the log cannot
//! undo waits for the transaction's end, as PostgreSQL's pending deletes do: when it
//! commits, the trees only the old definition used are dropped; when it rolls back (whole,
//! to a savepoint, or the failed statement), the old definition is put back and the trees
//! only the new one used are dropped.
//!
//! The table stays locked (schema modification) by the transaction to its end, so no other
//! transaction writes rows into trees that may yet disappear. Crash windows leave only
//! space behind: trees of a change that never committed, or of one committed just before
//! the crash, are named by no catalog row.

use std::sync::Arc;

use tessera_database::Database;
use tessera_semantics::catalog::{Object, Table};

use super::DbCatalog;

/// A table's definition before and after a transaction's DDL (None: not there).
pub struct Deferred {
    database: Arc<Database>,
    catalog: Arc<DbCatalog>,
    before: Option<Arc<Table>>,
    after: Option<Arc<Table>>,
}

impl Deferred {
    pub(super) fn new(
        database: Arc<Database>,
        catalog: Arc<DbCatalog>,
        before: Option<Arc<Table>>,
        after: Option<Arc<Table>>,
    ) -> Deferred {
        debug_assert!(before.is_some() || after.is_some(), "DDL changes a table");
        Deferred { database, catalog, before, after }
    }

    pub(super) fn database(&self) -> &Arc<Database> {
        &self.database
    }

    /// Whether this is the drop of table `schema.name` of `database`.
    pub(super) fn drops(&self, database: &Database, schema: &str, name: &str) -> bool {
        self.after.is_none()
            && self.database.name().eq_ignore_ascii_case(database.name())
            && self
                .before
                .as_ref()
                .is_some_and(|t| t.schema.eq_ignore_ascii_case(schema) && t.name.eq_ignore_ascii_case(name))
    }

    /// The transaction committed: the trees only the old definition used go. A tree
    /// left behind by a failure here is only space: no catalog row names it.
    pub(super) fn committed(self) {
        if let Some(before) = &self.before {
            let _ = drop_trees_not_in(&self.database, before, self.after.as_deref());
        }
    }

    /// The transaction (or the part of it that did this) rolled back, its locks still
    /// held: the old definition is back, and the trees only the new one used go.
    pub(super) fn rolled_back(self) {
        self.restore_definition();
        self.drop_new_trees();
    }

    /// Puts the old definition back in the in-memory catalog. A whole transaction's
    /// rollback does this before its storage rollback lets go of the table's locks, so
    /// that no statement waiting for them runs a plan checked against the new one.
    pub(super) fn restore_definition(&self) {
        let _ = match (&self.before, &self.after) {
            (Some(b), _) => self.catalog.alter(|c, version| Ok((c.with(Object::Table(b.clone()), version), ()))),
            (None, Some(a)) => self.catalog.alter(|c, version| Ok((c.without(a.id, version), ()))),
            (None, None) => Ok(()),
        };
    }

    /// Drops the trees only the new definition used (after the storage rollback, whose
    /// undo may still touch them).
    pub(super) fn drop_new_trees(self) {
        if let Some(after) = &self.after {
            let _ = drop_trees_not_in(&self.database, after, self.before.as_deref());
        }
    }
}

/// Drops the storage trees of `table` that exist and that `keep` does not use.
pub(crate) fn drop_trees_not_in(db: &Database, table: &Table, keep: Option<&Table>) -> tessera_errors::SqlResult<()> {
    for ix in &table.indexes {
        let kept = keep.is_some_and(|k| k.indexes.iter().any(|other| other.tree == ix.tree));
        if !kept && db.table(&ix.tree).is_some() {
            db.drop_table(&ix.tree)?;
        }
    }
    Ok(())
}

/// Drops the storage trees of `table` that exist.
pub(crate) fn drop_trees(db: &Database, table: &Table) -> tessera_errors::SqlResult<()> {
    drop_trees_not_in(db, table, None)
}
