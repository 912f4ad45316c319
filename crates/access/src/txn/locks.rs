//! The locks a transaction takes: key locks (escalated to a table lock after
//! `ESCALATE_AT` in one tree), table, schema and application locks.
//!
//! Locks last to the end of the transaction, or to the end of the statement for READ
//! COMMITTED update locks that no write converted to X ([`Space::end_statement`]).

use std::sync::atomic::Ordering;
use std::time::Duration;

use tessera_buffer::page::PageNo;
use tessera_errors::{Error, Result};

use super::{Hold, TreeLocks, Txn};
use crate::lock::{LockMode, Resource, Wait};
use crate::space::Space;

/// Key locks one transaction takes in one tree before it tries to escalate to an
/// exclusive table lock (SQL Server's threshold); a failed attempt is retried after
/// another `ESCALATE_RETRY` locks.
const ESCALATE_AT: usize = 5000;
const ESCALATE_RETRY: usize = 1250;

/// Takes `mode` on `key` in the tree of `txn.trees[i]` unless a table lock the
/// transaction holds covers it; returns whether a new lock was taken. A new lock is
/// remembered for release (at the statement's or the transaction's end, per `hold`)
/// and counted toward escalation: after `ESCALATE_AT` key locks in one tree the
/// transaction tries, without waiting, to lock the whole table (X if it writes
/// there, S otherwise) and drops its key locks there.
pub(super) fn lock_key(space: &Space, txn: &mut Txn, i: usize, key: &[u8], mode: LockMode, hold: Hold) -> Result<bool> {
    if txn.trees[i].covers(mode) {
        return Ok(false);
    }
    let tree = txn.trees[i].meta.root;
    let r = Resource::key(tree.raw(), key);
    if !space.locks.lock(txn.id, r, mode, txn.wait())? {
        return Ok(false);
    }
    space.keep_lock(txn, i, r, hold)?;
    Ok(true)
}

/// The body of [`Space::lock_range`]: a shared key-range lock on the keys just below
/// `above` (None: above the tree's last key), held to the end of the transaction — what
/// SQL Server's RangeS-S gives a SERIALIZABLE read. An insert first takes the range it
/// lands in ([`insert_into_range`]), which waits for every shared holder: so no key can
/// appear in a range a SERIALIZABLE transaction read (no phantom), empty ranges and the
/// ends of an index included. A table lock that covers S makes it unnecessary.
pub(crate) fn lock_range(space: &Space, txn: &mut Txn, tree: PageNo, above: Option<&[u8]>) -> Result<()> {
    let i = space.tree_locks(txn, tree, false)?;
    if txn.trees[i].covers(LockMode::Shared) {
        return Ok(());
    }
    if !txn.trees[i].ranges {
        txn.trees[i].ranges = true;
        txn.trees[i].meta.range_readers.fetch_add(1, Ordering::AcqRel);
    }
    let r = Resource::range(tree.raw(), above);
    if space.locks.lock(txn.id, r, LockMode::Shared, txn.wait())? {
        txn.locks.push(r);
    }
    Ok(())
}

/// The body of [`Space::lock_ranges_above`].
pub(crate) fn lock_ranges_above(
    space: &Space,
    txn: &mut Txn,
    tree: PageNo,
    lo: &std::ops::Bound<Vec<u8>>,
) -> Result<()> {
    let meta = space.tree(tree);
    let mut keys = {
        let _latch = meta.latch.read();
        crate::btree::keys_to_next_live(space, tree, lo)?
    };
    loop {
        let (ghosts, live) = &keys;
        for key in ghosts.iter().map(|g| Some(&g[..])).chain(std::iter::once(live.as_deref())) {
            lock_range(space, txn, tree, key)?;
        }
        if let Some(l) = live {
            space.locks.wait_compatible(txn.id, Resource::key(tree.raw(), l), LockMode::Shared, txn.wait())?;
        }
        let again = {
            let _latch = meta.latch.read();
            crate::btree::keys_to_next_live(space, tree, lo)?
        };
        if again == keys {
            return Ok(());
        }
        keys = again;
    }
}

/// Before an insert of `key` into `meta`'s tree (its tree latch held exclusively by the
/// caller's `latch`): while transactions hold key-range locks in the tree, the range the
/// key lands in — the one below the next key — is taken in IX for the insert only
/// (compatible with other inserts, not with a reader's S). On conflict the latch is let
/// go, the lock waited for and released, and `Retry` returned: the caller latches again
/// and looks again (the next key may have changed meanwhile).
pub(crate) fn insert_into_range(space: &Space, txn: &Txn, tree: PageNo, key: &[u8]) -> Result<RangeCheck> {
    let next = crate::btree::next_live_key(space, tree, &std::ops::Bound::Excluded(key.to_vec()))?;
    Ok(take_range(space, txn, tree, next.as_deref()))
}

/// Tries the range below `above` in IX for a change (an insert into it, or the delete of
/// `above`, which merges it with the next), without waiting.
pub(crate) fn take_range(space: &Space, txn: &Txn, tree: PageNo, above: Option<&[u8]>) -> RangeCheck {
    let r = Resource::range(tree.raw(), above);
    match space.locks.try_lock(txn.id, r, LockMode::IntentExclusive) {
        Some(true) => RangeCheck::Taken(r),
        Some(false) => RangeCheck::Clear,
        None => RangeCheck::Wait(r),
    }
}

/// What [`insert_into_range`] found.
pub(crate) enum RangeCheck {
    /// The transaction holds the range already (its own read): nothing to release.
    Clear,
    /// Taken for the insert: release it once the key is in.
    Taken(Resource),
    /// Another transaction holds it: wait (without the latch), then look again.
    Wait(Resource),
}

/// The body of [`Space::keep_lock`]: escalation as [`lock_key`] describes it.
pub(crate) fn keep_lock(space: &Space, txn: &mut Txn, i: usize, r: Resource, hold: Hold) -> Result<()> {
    if txn.locks.len() + txn.statement_locks.len() >= crate::lock::MAX_LOCKS_PER_TXN {
        space.locks.release_all(txn.id, &[r]);
        return Err(Error::Invalid(format!(
            "the transaction holds {} locks, the most one transaction may hold",
            crate::lock::MAX_LOCKS_PER_TXN
        )));
    }
    match hold {
        Hold::Transaction => txn.locks.push(r),
        Hold::Statement => txn.statement_locks.push(r),
    }
    let t = &mut txn.trees[i];
    t.keys += 1;
    if t.keys >= t.next_escalation {
        let tree = t.meta.root;
        let mode = if t.writer { LockMode::Exclusive } else { LockMode::Shared };
        match space.locks.try_lock(txn.id, Resource::Table(tree.raw()), mode) {
            Some(new) => {
                t.table = Some(mode);
                if new {
                    txn.locks.push(Resource::Table(tree.raw()));
                }
                let in_tree = |r: &Resource| matches!(r, Resource::Key(t, _) if *t == tree.raw());
                let (released, kept): (Vec<Resource>, Vec<Resource>) = txn.locks.iter().partition(|r| in_tree(r));
                space.locks.release_all(txn.id, &released);
                txn.locks = kept;
                let (released, kept): (crate::txn::StatementLocks, crate::txn::StatementLocks) =
                    txn.statement_locks.iter().copied().partition(|r| in_tree(r));
                space.locks.release_all(txn.id, &released);
                txn.statement_locks = kept;
            }
            None => t.next_escalation += ESCALATE_RETRY,
        }
    }
    Ok(())
}

/// The body of [`Space::tree_locks`].
pub(crate) fn tree_locks(space: &Space, txn: &mut Txn, tree: PageNo, write: bool) -> Result<usize> {
    let found = txn.trees.iter().position(|t| t.meta.root == tree);
    if let Some(i) = found {
        if !write || txn.trees[i].writer {
            return Ok(i);
        }
    }
    let intent = if write { LockMode::IntentExclusive } else { LockMode::IntentShared };
    if space.locks.lock(txn.id, Resource::Table(tree.raw()), intent, txn.wait())? {
        txn.locks.push(Resource::Table(tree.raw()));
    }
    let i = match found {
        Some(i) => i,
        None => {
            let meta = space.tree(tree);
            txn.trees.push(TreeLocks {
                meta,
                keys: 0,
                next_escalation: ESCALATE_AT,
                table: None,
                writer: false,
                ranges: false,
            });
            txn.trees.len() - 1
        }
    };
    if write {
        txn.trees[i].writer = true;
        txn.trees[i].meta.writers.fetch_add(1, Ordering::AcqRel);
    }
    Ok(i)
}

/// The body of [`Space::lock_schema`].
/// Sch-S is a fast hold unless a DDL on the object's stripe is pending (see `crate::lock`).
pub(crate) fn lock_schema(space: &Space, txn: &mut Txn, object: u32, mode: LockMode) -> Result<()> {
    debug_assert!(matches!(mode, LockMode::SchemaStability | LockMode::SchemaModification));
    if mode == LockMode::SchemaStability && space.locks.try_fast_schema_stability(object, &mut txn.schema_holds) {
        return Ok(());
    }
    let r = Resource::Schema(object);
    if space.locks.lock(txn.id, r, mode, txn.wait())? {
        txn.statement_locks.push(r);
    }
    Ok(())
}

/// The body of [`Space::lock_schema_to_end`]: Sch-M until the transaction ends (one held
/// for the running statement already is kept to the end instead).
pub(crate) fn lock_schema_to_end(space: &Space, txn: &mut Txn, object: u32) -> Result<()> {
    let r = Resource::Schema(object);
    if space.locks.lock(txn.id, r, LockMode::SchemaModification, txn.wait())? {
        txn.locks.push(r);
    } else if let Some(i) = txn.statement_locks.iter().position(|held| *held == r) {
        txn.statement_locks.swap_remove(i);
        txn.locks.push(r);
    }
    Ok(())
}

/// The body of [`Space::lock_app`].
pub(crate) fn lock_app(
    space: &Space,
    txn: &mut Txn,
    r: Resource,
    mode: LockMode,
    timeout: Option<Duration>,
) -> Result<bool> {
    debug_assert!(matches!(r, Resource::App(_)));
    let wait = Wait { timeout, ..txn.wait() };
    let (new, waited) = space.locks.lock_noting_wait(txn.id, r, mode, wait)?;
    if new {
        txn.locks.push(r);
    }
    Ok(waited)
}

/// The body of [`Space::release_key`].
pub(crate) fn release_key(space: &Space, txn: &mut Txn, tree: PageNo, key: &[u8]) {
    let r = Resource::key(tree.raw(), key);
    if space.locks.release_unless(txn.id, r, |m| m == LockMode::Exclusive).is_none() {
        txn.locks.retain(|&l| l != r);
        txn.statement_locks.retain(|l| *l != r);
    }
}

/// The body of [`Space::end_statement`].
pub(crate) fn end_statement(space: &Space, txn: &mut Txn) {
    for r in std::mem::take(&mut txn.statement_locks) {
        if space.locks.release_unless(txn.id, r, |m| m == LockMode::Exclusive).is_some() {
            txn.locks.push(r);
        }
    }
    space.locks.release_schema_holds(txn.id, &mut txn.schema_holds);
}

/// The body of [`Space::lock_table`].
pub(crate) fn lock_table(space: &Space, txn: &mut Txn, i: usize, mode: LockMode) -> Result<()> {
    if txn.trees[i].table.is_some_and(|m| m.max(mode) == m) {
        return Ok(());
    }
    let r = Resource::Table(txn.trees[i].meta.root.raw());
    if space.locks.lock(txn.id, r, mode, txn.wait())? {
        txn.locks.push(r);
    }
    // What the transaction holds now (an intent lock combined with S makes X).
    txn.trees[i].table = space.locks.held(txn.id, r).filter(|&m| m >= LockMode::Shared);
    Ok(())
}
