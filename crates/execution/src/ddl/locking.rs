//! DDL's locks: a schema-modification lock on a table's definition, shared locks on its trees.

use std::sync::Arc;
use tessera_database::{LockMode, ReadLocks, RowLock};

use crate::runtime::ExecCtx;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::Table;
use tessera_syntax::ast::ObjectName;

/// Finds a table for DDL: (database, table).
pub(super) fn find_table(
    ctx: &mut ExecCtx,
    name: &ObjectName,
) -> SqlResult<(Arc<tessera_database::Database>, Arc<Table>)> {
    let session = &*ctx.session;
    let mut b = Binder::new(ctx.shared, session, &[]);
    let rt = b.resolve_table(name)?;
    let database = ctx.shared.database(&rt.db)?;
    Ok((database, rt.table))
}

/// Resolves a table for DDL and locks it: a schema-modification lock on its definition
/// (waiting for every statement using it, and keeping new ones out until this statement
/// ends), then a shared table lock on each of its trees, which waits for every other
/// transaction with uncommitted changes in them (they hold IX to their end) and keeps new
/// writers out. Nobody else can then read or change the trees, so DDL may copy, replace
/// or drop them. The session's own transaction may have changed the table (a migration
/// that inserts rows, then adds a key or an index): DDL reads the rows in that
/// transaction, and writes new trees in one of its own (`in_own_transaction`), which
/// the definition's fate at the session's commit or rollback keeps or drops. A temporary
/// table's DDL is final at once, so for one of those the session's own changes are still
/// refused (574, see [`lock_trees`]). Returns the definition as it is once locked.
/// `statement` names the DDL for its error.
pub(super) fn lock_for_ddl(
    ctx: &mut ExecCtx,
    name: &ObjectName,
    statement: &str,
) -> SqlResult<(Arc<tessera_database::Database>, Arc<Table>)> {
    loop {
        let (database, table) = find_table(ctx, name)?;
        ctx.transaction(database.name())?.lock_schema(table.id as u32, LockMode::SchemaModification)?;
        let (database, now) = find_table(ctx, name)?;
        if now.id != table.id {
            // Dropped and created again while this statement waited.
            continue;
        }
        let own_writes =
            if super::rebuild::goes_with_transaction(&now.name) { OwnWrites::Allowed } else { OwnWrites::Refused };
        lock_trees(ctx, &database, &now, statement, own_writes)?;
        return Ok((database, now));
    }
}

/// Whether DDL may take a table the session's own open transaction has changed (see
/// [`lock_for_ddl`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum OwnWrites {
    Refused,
    Allowed,
}

/// The shared table locks `lock_for_ddl` takes on each tree of a table. DDL on a temporary
/// table is final at once: it copies, replaces or drops the trees then. So such a table the
/// session's own open transaction has changed is refused (574, `OwnWrites::Refused`): its
/// rollback would undo rows in trees that are gone, reading pages freed and reused since.
pub(super) fn lock_trees(
    ctx: &mut ExecCtx,
    database: &tessera_database::Database,
    table: &Table,
    statement: &str,
    own_writes: OwnWrites,
) -> SqlResult<()> {
    let shared =
        ReadLocks { row: RowLock::Committed, table: Some(LockMode::Shared), skip_locked: false, ranges: false };
    for ix in &table.indexes {
        if let Some(tree) = database.table(&ix.tree) {
            let tx = ctx.transaction(database.name())?;
            if own_writes == OwnWrites::Refused && tx.may_have_written(tree) {
                return Err(msg::NOT_IN_USER_TRANSACTION.with(&[&statement]));
            }
            tx.lock_table_for_read(tree, shared)?;
        }
    }
    Ok(())
}

/// The schema-lock object that stands for the table name `schema.name` in its database
/// (object ids are positive `i32`s; names take the other half of the `u32` space). DROP
/// TABLE holds it to the end of its transaction and CREATE TABLE takes it before it looks
/// the name up, so a table made under the name of one whose drop may yet roll back waits
/// for that transaction's end instead of taking the name twice.
pub(super) fn name_lock(schema: &str, name: &str) -> u32 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (schema.to_lowercase(), name.to_lowercase()).hash(&mut h);
    0x8000_0000 | (h.finish() as u32 & 0x7FFF_FFFF)
}
