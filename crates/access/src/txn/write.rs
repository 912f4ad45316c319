//! Row changes: insert, update and delete.
//!
//! Protocol of a row change:
//! 1. IX lock on the table and X lock on the key, held to the end of the transaction;
//! 2. exclusive tree latch for the one operation;
//! 3. read the current record; log one Update record whose redo is the page change and
//!    whose undo is the old record (or "remove the key");
//! 4. release the tree latch.
//!
//! Deletes leave a ghost (the record flagged, same key): a reader that meets a ghost
//! whose deleter is still active waits for it like for any uncommitted row, so READ
//! COMMITTED never sees an uncommitted delete. After commit the transaction removes
//! its ghosts (redo-only System records); ghosts left by a crash are skipped by readers
//! and reused by inserts.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tessera_buffer::page::PageNo;
use tessera_buffer::PageHandle;
use tessera_errors::{Error, Result};

use super::locks::RangeCheck;
use super::{locks, reserve_undo, unreserve_undo, with_undo_reserved, Hold, TreeMeta, Txn};
use crate::btree;
use crate::lock::LockMode;
use crate::mtr::LogCtx;
use crate::ops::Undo;
use crate::space::Space;

/// Ghost keys a transaction remembers for cleanup after commit; beyond this, ghosts
/// are left for later inserts to reuse.
const MAX_TRACKED_GHOSTS: usize = 100_000;

/// Takes the locks a change of `key` in `tree` needs: IX on the table and X on the
/// key, or nothing more once the transaction holds X on the whole table.
fn lock_for_write(space: &Space, txn: &mut Txn, tree: PageNo, key: &[u8]) -> Result<Arc<TreeMeta>> {
    let i = space.tree_locks(txn, tree, true)?;
    locks::lock_key(space, txn, i, key, LockMode::Exclusive, Hold::Transaction)?;
    Ok(txn.trees[i].meta.clone())
}

/// Applies a row change: `new` is the leaf record to store (None: remove the key). A
/// `versioned` change keeps the row it replaces while the database keeps versions
/// (`crate::versions`).
fn change(
    space: &Space,
    txn: &mut Txn,
    meta: &Arc<TreeMeta>,
    key: &[u8],
    new: Option<Vec<u8>>,
    old: Option<Vec<u8>>,
    versioned: bool,
) -> Result<()> {
    space.note_first_lsn(txn);
    let tree = meta.root;
    let (old_len, new_len) = (old.as_ref().map_or(0, Vec::len), new.as_ref().map_or(0, Vec::len));
    // The row before the change, as a version: a ghost is no row.
    let keep = versioned && space.versions.keeping();
    let before =
        if keep { old.as_ref().filter(|r| !btree::is_ghost(r)).map(|r| btree::leaf_value(r).to_vec()) } else { None };
    // Putting back a record bigger than the one there now may need a split.
    let shrinks_in = if old.is_some() && old_len > new_len { Some(btree::depth(space, tree)?) } else { None };
    with_undo_reserved(space, txn, key.len(), old_len.max(new_len), shrinks_in, |txn| {
        let undo = Undo::Row { tree, key: Cow::Borrowed(key), old };
        let ctx = LogCtx::update(txn.id, txn.last_lsn(), &undo);
        match new {
            Some(rec) => {
                let placed = btree::put_placed(space, tree, key, rec, ctx)?;
                note_placed(txn, meta, placed);
            }
            None => txn.set_last_lsn(btree::remove(space, tree, key, ctx)?),
        }
        Ok(())
    })?;
    if keep {
        space.versions.keep(&mut txn.versions, txn.id, meta, key, before.as_deref());
    }
    Ok(())
}

/// Bookkeeping after a row change stored a record: the transaction's last LSN and
/// the tree's append hint.
fn note_placed(txn: &Txn, meta: &TreeMeta, placed: btree::Placed) {
    if placed.rightmost {
        meta.append_hint.store(placed.leaf.raw(), Ordering::Relaxed);
    }
    txn.set_last_lsn(placed.lsn);
}

/// The body of [`Space::insert`].
pub(crate) fn insert(space: &Space, txn: &mut Txn, tree: PageNo, key: &[u8], value: &[u8]) -> Result<()> {
    let meta = lock_for_write(space, txn, tree, key)?;
    insert_new(space, txn, &meta, key, value, true)
}

/// Inserts a record once the locks it needs are held, keeping no version: the chunks of
/// a large value (the lock on its row covers them, see `crate::lob`) and the free list,
/// which no snapshot reads.
pub(crate) fn insert_locked(
    space: &Space,
    txn: &mut Txn,
    meta: &Arc<TreeMeta>,
    key: &[u8],
    value: &[u8],
) -> Result<()> {
    insert_new(space, txn, meta, key, value, false)
}

/// Inserts a record; a table's `row` (or index entry) keeps its version ("absent
/// before") while the database keeps versions, and respects the key-range locks of
/// SERIALIZABLE readers.
fn insert_new(space: &Space, txn: &mut Txn, meta: &Arc<TreeMeta>, key: &[u8], value: &[u8], row: bool) -> Result<()> {
    let (_latch, range) = latch_in_range(space, txn, meta, key, RangeOf::Insert, row)?;
    space.note_first_lsn(txn);
    let reserved = reserve_undo(space, txn, key.len(), 0, None);
    let stored = store_new(space, txn, meta, key, value);
    if row && matches!(stored, Ok(None)) && space.versions.keeping() {
        space.versions.keep(&mut txn.versions, txn.id, meta, key, None);
    }
    // The key is in (or not): its own X lock now keeps its range's readers waiting.
    if let Some(r) = range {
        space.locks.release(txn.id, r);
    }
    if !matches!(stored, Ok(None)) {
        unreserve_undo(space, txn, reserved);
    }
    match stored? {
        None => Ok(()),
        // A deleted row not yet cleaned: the insert replaces it (reserving its own room),
        // and undoing the insert puts the ghost back.
        Some(ghost) => change(space, txn, meta, key, Some(btree::leaf_record(0, key, value)), Some(ghost), row),
    }
}

/// Stores a new row unless a record is stored under its key: a live one is error 2627,
/// a ghost is returned (and nothing changed).
fn store_new(space: &Space, txn: &mut Txn, meta: &TreeMeta, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
    let tree = meta.root;
    let mut rec = btree::leaf_record(0, key, value);
    let undo = Undo::Row { tree, key: Cow::Borrowed(key), old: None };
    let ctx = LogCtx::update(txn.id, txn.last_lsn(), &undo);
    // Ever-increasing keys go straight to the rightmost leaf: a key above every key in
    // the tree cannot be a duplicate.
    if let Some(leaf) = append_leaf(space, txn, tree, meta)? {
        if let Some(lsn) = btree::try_append(space, tree, leaf, key, &mut rec, ctx)? {
            txn.set_last_lsn(lsn);
            return Ok(None);
        }
    }
    match btree::insert_placed(space, tree, key, rec, ctx)? {
        Ok(placed) => {
            note_placed(txn, meta, placed);
            Ok(None)
        }
        Err(existing) if !btree::is_ghost(&existing) => {
            Err(Error::DuplicateKey { object: format!("tree {tree}"), key: format!("{key:02x?}") })
        }
        Err(ghost) => Ok(Some(ghost)),
    }
}

/// The transaction's pinned handle on the tree's rightmost leaf as last seen by an
/// insert (`None`: not known yet), pinning it first if the transaction holds another.
fn append_leaf<'t>(space: &Space, txn: &'t mut Txn, tree: PageNo, meta: &TreeMeta) -> Result<Option<&'t PageHandle>> {
    let hint = meta.append_hint.load(Ordering::Relaxed);
    if hint == 0 {
        return Ok(None);
    }
    let held = matches!(&txn.append_leaf, Some((t, h)) if *t == tree && h.page_no() == PageNo::from_raw(hint));
    if !held {
        // Unpin the old leaf before pinning the new one: a transaction holds one.
        txn.append_leaf = None;
        txn.append_leaf = Some((tree, space.pool.fetch(space.file, PageNo::from_raw(hint))?));
    }
    Ok(txn.append_leaf.as_ref().map(|(_, h)| h))
}

/// The body of [`Space::update`].
pub(crate) fn update(space: &Space, txn: &mut Txn, tree: PageNo, key: &[u8], value: &[u8]) -> Result<bool> {
    let meta = lock_for_write(space, txn, tree, key)?;
    let _latch = meta.latch.write();
    let Some(current) = btree::lookup_with(space, tree, key, |r| r.to_vec())? else { return Ok(false) };
    if btree::is_ghost(&current) {
        return Ok(false);
    }
    change(space, txn, &meta, key, Some(btree::leaf_record(0, key, value)), Some(current), true)?;
    Ok(true)
}

/// Which range a change of a key must find free of SERIALIZABLE readers.
#[derive(Clone, Copy)]
enum RangeOf {
    /// An insert: the range it lands in (below the next key).
    Insert,
    /// A delete: the range below the key, which its removal merges with the next one.
    Delete,
}

/// Latches `meta`'s tree exclusively for a change of `key`; while transactions hold
/// key-range locks in it (and the change is to a `row`), first takes the range the change
/// touches in IX, waiting (without the latch) for its readers and looking again. Returns
/// the latch and the range lock to release once the change is made.
fn latch_in_range<'m>(
    space: &Space,
    txn: &Txn,
    meta: &'m TreeMeta,
    key: &[u8],
    of: RangeOf,
    row: bool,
) -> Result<(parking_lot::RwLockWriteGuard<'m, ()>, Option<crate::lock::Resource>)> {
    loop {
        let latch = meta.latch.write();
        if !row || meta.range_readers.load(Ordering::Acquire) == 0 {
            return Ok((latch, None));
        }
        let check = match of {
            RangeOf::Insert => locks::insert_into_range(space, txn, meta.root, key)?,
            RangeOf::Delete => locks::take_range(space, txn, meta.root, Some(key)),
        };
        match check {
            RangeCheck::Clear => return Ok((latch, None)),
            RangeCheck::Taken(r) => return Ok((latch, Some(r))),
            RangeCheck::Wait(r) => {
                drop(latch);
                if space.locks.lock(txn.id, r, LockMode::IntentExclusive, txn.wait())? {
                    space.locks.release(txn.id, r);
                }
            }
        }
    }
}

/// The body of [`Space::delete`].
pub(crate) fn delete(space: &Space, txn: &mut Txn, tree: PageNo, key: &[u8]) -> Result<bool> {
    let meta = lock_for_write(space, txn, tree, key)?;
    let (_latch, range) = latch_in_range(space, txn, &meta, key, RangeOf::Delete, true)?;
    // The key keeps its X lock: readers of its ranges wait for it from here on.
    if let Some(r) = range {
        space.locks.release(txn.id, r);
    }
    let Some(mut current) = btree::lookup_with(space, tree, key, |r| r.to_vec())? else { return Ok(false) };
    if btree::is_ghost(&current) {
        return Ok(false);
    }
    let mut ghost = current.clone();
    ghost[0] |= btree::GHOST;
    current[0] &= !btree::GHOST;
    change(space, txn, &meta, key, Some(ghost), Some(current), true)?;
    if txn.ghosts.len() < MAX_TRACKED_GHOSTS {
        txn.ghosts.push((tree, key.to_vec()));
    }
    Ok(true)
}
