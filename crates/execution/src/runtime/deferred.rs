//! DDL that ends with its transaction (issue 34): a table created, dropped or redefined
//! (TRUNCATE, ALTER TABLE, indexes), or a view, procedure or function created, altered or
//! dropped, inside the session's transaction. Its catalog row
//! changes under that transaction (ROLLBACK and crash recovery undo it with the
//! transaction's rows), the in-memory catalog changes at once (a drop only for the
//! dropping session, see `SessionState::own_view`, and for the others when the
//! transaction commits), and what the log cannot
//! undo waits for the transaction's end, as PostgreSQL's pending deletes do: when it
//! commits, the trees only the old definition used are dropped; when it rolls back (whole,
//! to a savepoint, or the failed statement), the old definition is put back and the trees
//! only the new one used are dropped.
//!
//! The object stays locked (schema modification) by the transaction to its end, so no other
//! transaction uses a definition that may yet disappear or writes rows into trees that may.
//! Crash windows leave only space behind: trees of a change that never committed, or of one
//! committed just before the crash, are named by no catalog row.

use std::sync::Arc;

use tessera_database::Database;
use tessera_security::principals::Security;
use tessera_semantics::catalog::{Object, Table};

use super::DbCatalog;

/// An object's definition before and after a transaction's DDL (None: not there), or the
/// database's principals, schemas and permissions before a change to them.
pub struct Deferred {
    database: Arc<Database>,
    catalog: Arc<DbCatalog>,
    before: Option<Object>,
    after: Option<Object>,
    /// The principals before a security change (CREATE USER, ROLE, SCHEMA, GRANT …),
    /// which the transaction locked to its end: nobody else changed them since.
    principals: Option<Arc<Security>>,
}

/// The table an object's definition is, if it is one.
fn table(o: &Option<Object>) -> Option<&Table> {
    match o {
        Some(Object::Table(t)) => Some(t),
        _ => None,
    }
}

impl Deferred {
    pub(super) fn new(
        database: Arc<Database>,
        catalog: Arc<DbCatalog>,
        before: Option<Object>,
        after: Option<Object>,
    ) -> Deferred {
        assert!(before.is_some() || after.is_some(), "DDL changes an object");
        if let (Some(b), Some(a)) = (&before, &after) {
            assert_eq!(b.id(), a.id(), "a redefinition keeps the object's id");
        }
        Deferred { database, catalog, before, after, principals: None }
    }

    /// A change to the database's principals, schemas or permissions, `before` them.
    pub(super) fn security(database: Arc<Database>, catalog: Arc<DbCatalog>, before: Arc<Security>) -> Deferred {
        Deferred { database, catalog, before: None, after: None, principals: Some(before) }
    }

    pub(super) fn database(&self) -> &Arc<Database> {
        &self.database
    }

    /// The table this redefined (ALTER TABLE, TRUNCATE, an index created or dropped),
    /// which SNAPSHOT transactions older than its commit may not use (3961).
    pub(super) fn redefined_table(&self) -> Option<u32> {
        match (table(&self.before), table(&self.after)) {
            (Some(b), Some(_)) => Some(b.id as u32),
            _ => None,
        }
    }

    /// The object of `database` this dropped, while its transaction is open.
    pub(super) fn dropped_in(&self, database: &str) -> Option<i32> {
        match (&self.before, &self.after) {
            (Some(b), None) if self.database.name().eq_ignore_ascii_case(database) => Some(b.id()),
            _ => None,
        }
    }

    /// A drop about to commit: the object leaves the shared catalog (other sessions saw
    /// it, and waited for its lock, until now).
    pub(super) fn publish_drop(&self) {
        if let (Some(b), None) = (&self.before, &self.after) {
            let _ = self.catalog.alter(|c, version| Ok((c.without(b.id(), version), ())));
        }
    }

    /// The transaction committed: the trees only the old definition used go. A tree
    /// left behind by a failure here is only space: no catalog row names it.
    pub(super) fn committed(self) {
        if let Some(before) = table(&self.before) {
            let _ = drop_trees_not_in(&self.database, before, table(&self.after));
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
        if let Some(principals) = &self.principals {
            *self.catalog.security.write() = Some(principals.clone());
        }
        let _ = match (&self.before, &self.after) {
            (Some(b), _) => self.catalog.alter(|c, version| Ok((c.with(b.clone(), version), ()))),
            (None, Some(a)) => self.catalog.alter(|c, version| Ok((c.without(a.id(), version), ()))),
            (None, None) => Ok(()),
        };
    }

    /// Drops the trees only the new definition used (after the storage rollback, whose
    /// undo may still touch them).
    pub(super) fn drop_new_trees(self) {
        if let Some(after) = table(&self.after) {
            let _ = drop_trees_not_in(&self.database, after, table(&self.before));
        }
    }
}

/// Drops the storage trees of `table` that exist and that `keep` does not use, with the
/// large-value tree of a rows tree that goes.
pub(crate) fn drop_trees_not_in(db: &Database, table: &Table, keep: Option<&Table>) -> tessera_errors::SqlResult<()> {
    for (i, ix) in table.indexes.iter().enumerate() {
        let kept = keep.is_some_and(|k| k.indexes.iter().any(|other| other.tree == ix.tree));
        if kept {
            continue;
        }
        // Only the rows tree (index 0) can have a large-value tree.
        let lob = (i == 0).then(|| crate::encoding::lob_tree_name(&ix.tree));
        for tree in std::iter::once(&ix.tree).chain(lob.as_ref()) {
            if db.table(tree).is_some() {
                db.drop_table(tree)?;
            }
        }
    }
    Ok(())
}

/// Drops the storage trees of `table` that exist.
pub(crate) fn drop_trees(db: &Database, table: &Table) -> tessera_errors::SqlResult<()> {
    drop_trees_not_in(db, table, None)
}
