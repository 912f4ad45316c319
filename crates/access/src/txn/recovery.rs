//! Undoing a logged change — for rollback and crash recovery alike — and crash recovery.
//!
//! Rollback and recovery undo logically, by key, through the same B+tree code, writing
//! compensation records, because the row may have moved to another page since.

use std::sync::atomic::Ordering;

use tessera_errors::{Error, Result};
use tessera_log::recovery::{self, RecoveryHandler, RecoveryOutcome};
use tessera_log::{LogRecord, Lsn, RecordKind};

use crate::btree;
use crate::mtr::{self, LogCtx};
use crate::ops::{self, Undo};
use crate::space::Space;

/// Undoes one Update record and logs the compensation; returns its LSN and its
/// undo-next (where undoing goes on).
pub(super) fn undo_record(space: &Space, rec: &LogRecord, last: Lsn) -> Result<(Lsn, Lsn)> {
    let (_, undo) = ops::decode(&rec.body)?;
    let undo = undo.ok_or_else(|| Error::Invalid("update record without undo information".into()))?;
    // The inverse of a bulk load's root frees every page of the tree, so the load's
    // page allocations before it are skipped.
    let undo_next = match undo {
        Undo::EmptyTree { before, .. } => before,
        _ => rec.prev_lsn,
    };
    let ctx = LogCtx { kind: RecordKind::Compensation, txn: rec.txn, prev_lsn: last, undo_next, undo: None };
    let clr = match undo {
        Undo::Row { tree, key, old } => {
            let meta = space.tree(tree);
            let _latch = meta.latch.write();
            let clr = match old {
                Some(old) => btree::put(space, tree, &key, &old, ctx),
                None => btree::remove(space, tree, &key, ctx),
            }?;
            space.versions.undone(&meta, &key, rec.txn);
            Ok(clr)
        }
        Undo::CreateTree { root } => {
            let meta = space.tree(root);
            let _latch = meta.latch.write();
            btree::free_tree(space, root, ctx)
        }
        Undo::BulkPage { page } => {
            let mut mtr = mtr::Mtr::without_reserve(space);
            space.free_page_unread(&mut mtr, page)?;
            mtr.commit(ctx)
        }
        Undo::EmptyTree { root, .. } => {
            let meta = space.tree(root);
            let _latch = meta.latch.write();
            btree::empty_tree(space, root, ctx)
        }
    }?;
    Ok((clr, undo_next))
}

/// The body of [`Space::recover`].
pub(crate) fn recover(
    space: &Space,
    master: tessera_log::Master,
    decided_to_commit: &dyn Fn(u128) -> bool,
) -> Result<RecoveryOutcome> {
    struct Handler<'a>(&'a Space, &'a dyn Fn(u128) -> bool);
    impl RecoveryHandler for Handler<'_> {
        fn decided_to_commit(&mut self, decision: u128) -> Result<bool> {
            Ok((self.1)(decision))
        }
        fn redo(&mut self, lsn: Lsn, rec: &LogRecord) -> Result<()> {
            let (ops, _) = ops::decode(&rec.body)?;
            mtr::redo(self.0, lsn, &ops)
        }
        fn undo(&mut self, _lsn: Lsn, rec: &LogRecord, last_lsn: Lsn) -> Result<(Lsn, Lsn)> {
            undo_record(self.0, rec, last_lsn)
        }
    }
    let outcome = recovery::recover(&space.wal, master, &mut Handler(space, decided_to_commit))?;
    space.txns.next.fetch_max(outcome.next_txn.raw(), Ordering::AcqRel);
    Ok(outcome)
}
