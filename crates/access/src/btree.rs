//! B+trees over byte-string keys compared with memcmp (see `key.rs` for the
//! order-preserving encoding of typed keys).
//!
//! Leaf record: `flags u8 | key_len u16 | key | value`; flag bit 0 marks a ghost (a row
//! deleted by a transaction that may still roll back). Internal record:
//! `key_len u16 | key | child u32`; the page's `aux` header field is the leftmost child,
//! and the child of record i holds keys >= key i. Leaves are doubly linked.
//!
//! A tree is named by its root page, which never moves: a root split moves the root's
//! records into two new children, and when the root is left with one child, that
//! child's records move back up.
//!
//! Concurrency: callers hold the tree's latch (`TreeMeta::latch`, from `Space::tree`)
//! shared to read and exclusive to change, for the duration of one operation, never
//! across a transaction.
//! Page latches inside are taken root-to-leaf and, for sibling links, left-to-right.
//!
//! Splits and merges are structure modifications logged as one System record each
//! (never undone); the row change that needed them is logged after, on its own.

mod check;

use std::ops::Bound;

use smallvec::SmallVec;
use tessera_buffer::page::{self, PageNo, PageType, HEADER_SIZE, PAGE_SIZE};
use tessera_buffer::{PageHandle, PageReadGuard};
use tessera_errors::{Error, Result};
use tessera_log::Lsn;

use crate::mtr::{LogCtx, Mtr};
use crate::ops::PageOp;
use crate::reserve::Claim;
use crate::slotted::{self, SLOT_SIZE};
use crate::space::{Space, BITS_PER_MAP};

pub use check::{check, TreeStats};

pub const MAX_KEY: usize = 900;
pub const GHOST: u8 = 1;
/// Capacity of a page for records and their slots.
const CAPACITY: usize = PAGE_SIZE - HEADER_SIZE;
/// Largest leaf record (flags + key length + key + value).
pub const MAX_LEAF_RECORD: usize = slotted::MAX_RECORD;
/// A leaf emptier than this is merged with a sibling when they fit in one page.
const MERGE_BELOW: usize = CAPACITY / 4;
/// More levels than any valid tree has (a key is at most 900 bytes, so an internal page
/// has at least 8 children): a descent that goes deeper has met a cycle of damaged pages.
const MAX_DEPTH: usize = 32;

pub fn leaf_record(flags: u8, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(3 + key.len() + value.len());
    r.push(flags);
    r.extend_from_slice(&(key.len() as u16).to_le_bytes());
    r.extend_from_slice(key);
    r.extend_from_slice(value);
    r
}

pub fn leaf_key(rec: &[u8]) -> &[u8] {
    leaf_key_checked(rec).expect("a leaf record holds its key")
}

/// [`leaf_key`] of bytes that may not be a leaf record (read from a damaged log).
#[inline]
pub fn leaf_key_checked(rec: &[u8]) -> Option<&[u8]> {
    let n = u16::from_le_bytes(rec.get(1..3)?.try_into().ok()?) as usize;
    rec.get(3..3 + n)
}

pub fn leaf_value(rec: &[u8]) -> &[u8] {
    let n = u16::from_le_bytes([rec[1], rec[2]]) as usize;
    &rec[3 + n..]
}

pub fn is_ghost(rec: &[u8]) -> bool {
    rec[0] & GHOST != 0
}

pub(crate) fn internal_record(key: &[u8], child: PageNo) -> Vec<u8> {
    let mut r = Vec::with_capacity(6 + key.len());
    r.extend_from_slice(&(key.len() as u16).to_le_bytes());
    r.extend_from_slice(key);
    r.extend_from_slice(&child.raw().to_le_bytes());
    r
}

pub fn internal_key(rec: &[u8]) -> &[u8] {
    let n = u16::from_le_bytes([rec[0], rec[1]]) as usize;
    &rec[2..2 + n]
}

pub fn internal_child(rec: &[u8]) -> PageNo {
    PageNo::from_raw(u32::from_le_bytes(rec[rec.len() - 4..].try_into().unwrap()))
}

pub fn is_leaf(p: &[u8]) -> bool {
    page::page_type(p) == Some(PageType::BTreeLeaf)
}

/// Child to follow for `key` and its position: -1 for the leftmost (aux) child.
fn route(p: &[u8], key: &[u8]) -> (PageNo, isize) {
    match slotted::search(p, key, internal_key) {
        Ok(i) => (internal_child(slotted::record(p, i)), i as isize),
        Err(0) => (PageNo::from_raw(page::aux(p)), -1),
        Err(i) => (internal_child(slotted::record(p, i - 1)), i as isize - 1),
    }
}

fn child_at(p: &[u8], pos: isize) -> PageNo {
    if pos < 0 {
        PageNo::from_raw(page::aux(p))
    } else {
        internal_child(slotted::record(p, pos as usize))
    }
}

fn read(space: &Space, no: PageNo) -> Result<PageReadGuard> {
    Ok(space.pool.fetch(space.file, no)?.into_read())
}

pub(crate) fn damaged(space: &Space, no: PageNo, what: &str) -> Error {
    Error::Corrupt {
        database: space.name().to_string(),
        path: tessera_buffer::PageStore::path(&*space.store).to_path_buf(),
        page: no.raw(),
        detail: format!("B-tree page is inconsistent: {what}"),
    }
}

/// Reads page `no` of a tree whose latch the caller holds (shared or exclusive), pinned
/// but without the page's own latch. Every change to a tree's pages is made under the
/// tree latch held exclusively (`Space::insert`, `change`, rollback, ghost cleanup, bulk
/// loads, frees; recovery runs before anyone reads), so while the caller holds it no one
/// writes the page, and the page latch would only cost two atomic operations per level.
fn read_in_tree<R>(space: &Space, no: PageNo, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
    // SAFETY: the caller holds the tree latch, which excludes every writer of the tree's
    // pages (above); the pool itself never writes a pinned Valid frame.
    unsafe { space.pool.read_with_unlatched(space.file, no, f) }
}

/// The number of levels of the tree rooted at `root` (1: the root is a leaf); the caller
/// holds the tree latch.
pub fn depth(space: &Space, root: PageNo) -> Result<usize> {
    read_in_tree(space, root, |p| usize::from(page::level(p)) + 1)
}

/// The format of an empty tree's root page.
pub fn empty_root(root: PageNo) -> PageOp {
    leaf_format(root, PageNo::NONE, PageNo::NONE)
}

/// Creates an empty tree inside `mtr` and returns its root page.
pub fn create(space: &Space, mtr: &mut Mtr) -> Result<PageNo> {
    let root = space.alloc_page(mtr)?;
    let i = mtr.latch_new(root)?;
    mtr.apply(i, empty_root(root));
    Ok(root)
}

/// Pages from the root to the leaf that holds (or would hold) `key`.
/// The pages from the root down to a leaf (inline up to a five-level tree).
type Path = SmallVec<[PageNo; 5]>;

/// The caller holds the tree latch (see [`read_in_tree`]). The leaf itself is not read:
/// a level-1 page's children are leaves, and the caller latches the leaf next, checking
/// it with [`latch_leaf`].
fn descend(space: &Space, root: PageNo, key: &[u8]) -> Result<Path> {
    let mut path = Path::new();
    path.push(root);
    let mut no = root;
    loop {
        let step = read_in_tree(space, no, |p| match page::page_type(p) {
            Some(PageType::BTreeLeaf) => Ok(None),
            Some(PageType::BTreeInternal) => Ok(Some((route(p, key).0, page::level(p) == 1))),
            _ => Err(()),
        })?;
        match step {
            Ok(None) => return Ok(path),
            Ok(Some((child, last))) if !child.is_none() && path.len() <= MAX_DEPTH => {
                no = child;
                path.push(no);
                if last {
                    return Ok(path);
                }
            }
            Ok(Some(_)) => return Err(damaged(space, no, "bad child pointer")),
            Err(()) => return Err(damaged(space, no, "not a B-tree page")),
        }
    }
}

/// Write-latches the leaf that [`descend`] arrived at, checking that it is one.
fn latch_leaf(space: &Space, mtr: &mut Mtr, leaf: PageNo) -> Result<usize> {
    let li = mtr.latch(leaf)?;
    if is_leaf(mtr.page(li)) {
        Ok(li)
    } else {
        Err(damaged(space, leaf, "a level-1 page's child is not a leaf"))
    }
}

/// Calls `f` with the leaf record stored under `key` (ghosts included). The caller holds
/// the tree latch (shared or exclusive), so no page of the tree changes during the descent
/// and each page is released before its child is read.
pub fn lookup_with<R>(space: &Space, root: PageNo, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
    enum Step<R> {
        Child(PageNo),
        Found(Option<R>),
        Damaged,
    }
    let mut f = Some(f);
    let mut no = root;
    for _ in 0..=MAX_DEPTH {
        let step = read_in_tree(space, no, |p| {
            if is_leaf(p) {
                slotted::prefetch_records(p);
                let found = slotted::search(p, key, leaf_key).ok();
                Step::Found(found.map(|i| (f.take().expect("one leaf per lookup"))(slotted::record(p, i))))
            } else if page::page_type(p) == Some(PageType::BTreeInternal) {
                Step::Child(route(p, key).0)
            } else {
                Step::Damaged
            }
        })?;
        match step {
            Step::Child(child) => no = child,
            Step::Found(found) => return Ok(found),
            Step::Damaged => break,
        }
    }
    Err(damaged(space, root, "not a B-tree page"))
}

/// Where a record is going, for choosing a split point.
#[derive(Clone, Copy)]
enum Target {
    Insert { idx: usize, len: usize },
    Replace { slot: usize, len: usize },
}

/// Stores `rec` under `key` (inserting or replacing), splitting pages as needed, and
/// logs the row change with `ctx`. Returns the row change's LSN.
pub fn put(space: &Space, root: PageNo, key: &[u8], rec: &[u8], ctx: LogCtx) -> Result<Lsn> {
    put_placed(space, root, key, rec.to_vec(), ctx).map(|p| p.lsn)
}

/// Where [`put_placed`] stored a record.
#[derive(Clone, Copy, Debug)]
pub struct Placed {
    pub lsn: Lsn,
    pub leaf: PageNo,
    /// The leaf has no right sibling (a hint for [`try_append`]).
    pub rightmost: bool,
}

/// Appends `rec` to `leaf` (a handle the caller keeps pinned: the page it last saw as the
/// rightmost leaf) without descending the tree, when that page is still the rightmost
/// leaf of the tree and `key` is above every key in it (ever-increasing keys such as
/// identity columns). Returns None when the fast path does not apply; the caller then
/// takes the normal path. The page is validated under its latch, so a stale handle is
/// harmless. On success `rec` has been moved into the log record.
pub fn try_append(
    space: &Space,
    root: PageNo,
    leaf: &PageHandle,
    key: &[u8],
    rec: &mut Vec<u8>,
    ctx: LogCtx,
) -> Result<Option<Lsn>> {
    if rec.len() > MAX_LEAF_RECORD || key.len() > MAX_KEY {
        return Ok(None);
    }
    let mut mtr = Mtr::new(space)?;
    let li = mtr.latch_pinned(leaf);
    let p = mtr.page(li);
    let n = slotted::count(p);
    let applies = is_leaf(p)
        && page::object_id(p) == root.raw()
        && page::next(p) == PageNo::NONE
        && n > 0
        && key > leaf_key(slotted::record(p, n - 1))
        && slotted::fits(p, rec.len());
    if !applies {
        return Ok(None);
    }
    mtr.apply(li, PageOp::Insert { slot: n as u16, rec: std::mem::take(rec) });
    mtr.commit_latched(ctx).map(Some)
}

/// [`put`], also telling where the record went.
pub fn put_placed(space: &Space, root: PageNo, key: &[u8], rec: Vec<u8>, ctx: LogCtx) -> Result<Placed> {
    place(space, root, key, rec, ctx, true).map(|placed| placed.expect("a put replaces an existing record"))
}

/// Inserts `rec` under `key` unless a record (live or ghost) is stored there: then nothing
/// changes and a copy of that record is returned instead. One descent both checks and places.
pub fn insert_placed(
    space: &Space,
    root: PageNo,
    key: &[u8],
    rec: Vec<u8>,
    ctx: LogCtx,
) -> Result<std::result::Result<Placed, Vec<u8>>> {
    place(space, root, key, rec, ctx, false)
}

/// Stores `rec` under `key`; a record already there is replaced if `replace`, else returned.
fn place(
    space: &Space,
    root: PageNo,
    key: &[u8],
    mut rec: Vec<u8>,
    ctx: LogCtx,
    replace: bool,
) -> Result<std::result::Result<Placed, Vec<u8>>> {
    debug_assert_eq!(leaf_key(&rec), key);
    if rec.len() > MAX_LEAF_RECORD {
        return Err(Error::RowTooLarge { size: rec.len(), max: MAX_LEAF_RECORD });
    }
    if key.len() > MAX_KEY {
        return Err(Error::KeyTooLarge { size: key.len(), max: MAX_KEY });
    }
    let mut splits = 0;
    loop {
        let path = descend(space, root, key)?;
        let leaf = *path.last().unwrap();
        let rollback = ctx.kind == tessera_log::RecordKind::Compensation;
        let mut mtr = if rollback { Mtr::without_reserve(space) } else { Mtr::new(space)? };
        let li = latch_leaf(space, &mut mtr, leaf)?;
        let p = mtr.page(li);
        let rightmost = page::next(p) == PageNo::NONE;
        let target = match slotted::search(p, key, leaf_key) {
            Ok(slot) if !replace => return Ok(Err(slotted::record(p, slot).to_vec())),
            Ok(slot) => {
                let old = slotted::record(p, slot).len();
                if slotted::free_space(p) + old >= rec.len() {
                    mtr.apply(li, PageOp::Replace { slot: slot as u16, rec: std::mem::take(&mut rec) });
                    return Ok(Ok(Placed { lsn: mtr.commit(ctx)?, leaf, rightmost }));
                }
                Target::Replace { slot, len: rec.len() }
            }
            Err(idx) => {
                if slotted::fits(p, rec.len()) {
                    mtr.apply(li, PageOp::Insert { slot: idx as u16, rec: std::mem::take(&mut rec) });
                    return Ok(Ok(Placed { lsn: mtr.commit(ctx)?, leaf, rightmost }));
                }
                Target::Insert { idx, len: rec.len() }
            }
        };
        drop(mtr);
        splits += 1;
        assert!(splits <= 4, "a record that fits a page needs at most three splits");
        split_leaf(space, root, &path, key, target, rollback)?;
    }
}

/// Chooses how many records stay in the left page so that the target record fits.
fn choose_split(sizes: &[usize], target: Target, rightmost: bool) -> usize {
    let n = sizes.len();
    let total: usize = sizes.iter().sum();
    let fits = |k: usize| -> bool {
        let left: usize = sizes[..k].iter().sum();
        let right = total - left;
        match target {
            Target::Insert { idx, len } => {
                let to_left = idx < k || (idx == k && k < n);
                if to_left {
                    left + len + SLOT_SIZE <= CAPACITY && right <= CAPACITY
                } else {
                    left <= CAPACITY && right + len + SLOT_SIZE <= CAPACITY
                }
            }
            Target::Replace { slot, len } => {
                let old = sizes[slot];
                if k == 0 || k == n {
                    return false;
                }
                if slot < k {
                    left - old + len + SLOT_SIZE <= CAPACITY
                } else {
                    right - old + len + SLOT_SIZE <= CAPACITY
                }
            }
        }
    };
    if let Target::Insert { idx, .. } = target {
        if idx == n && rightmost {
            return n; // ever-increasing keys: start a fresh page, keep this one full
        }
    }
    let mut best: Option<(usize, usize)> = None;
    let mut left = 0usize;
    for (k, size) in sizes.iter().chain(std::iter::once(&0)).enumerate() {
        if fits(k) {
            let imbalance = left.abs_diff(total - left);
            if best.is_none_or(|(_, b)| imbalance < b) {
                best = Some((k, imbalance));
            }
        }
        left += size;
    }
    match (best, target) {
        (Some((k, _)), _) => k,
        // No single split makes room: split at the target and try again.
        (None, Target::Insert { idx, .. }) => idx,
        (None, Target::Replace { slot, .. }) => {
            if slot == 0 {
                1
            } else {
                slot
            }
        }
    }
}

/// Splits the leaf at the end of `path` so that `target` fits. A split for a rollback
/// (`rollback`) claims nothing: its transaction reserved it (see `crate::reserve`), and
/// the files only grow ahead for it if they can.
fn split_leaf(space: &Space, root: PageNo, path: &[PageNo], key: &[u8], target: Target, rollback: bool) -> Result<()> {
    let leaf = *path.last().unwrap();
    let claim = split_claim(space, path)?;
    let mut mtr = if rollback {
        space.grow_ahead(claim);
        Mtr::without_reserve(space)
    } else {
        Mtr::claiming(space, claim)?
    };
    let li = mtr.latch(leaf)?;
    let p = mtr.page(li);
    let n = slotted::count(p);
    let sizes: Vec<usize> = (0..n).map(|i| slotted::record(p, i).len() + SLOT_SIZE).collect();
    let k = choose_split(&sizes, target, page::next(p) == PageNo::NONE);
    let sep = if k < n { leaf_key(slotted::record(p, k)).to_vec() } else { key.to_vec() };
    // The split rule, checked where it is made: the separator is above every key that
    // stays left (and is the first key that moves right), so a search finds each key
    // on the side it went to.
    assert!(
        k == 0 || leaf_key(slotted::record(p, k - 1)) < sep.as_slice(),
        "leaf {leaf} split at {k} of {n} with a separator not above the left half"
    );
    let (old_prev, old_next) = (page::prev(p), page::next(p));
    // Only the records that move are copied: all of a root leaf's, the upper part of
    // another's (none when an ever-increasing key starts a new rightmost leaf).
    let first_moving = if path.len() == 1 { 0 } else { k };
    let records: Vec<Vec<u8>> = (first_moving..n).map(|i| slotted::record(p, i).to_vec()).collect();

    if path.len() == 1 {
        // Root leaf: its records move into two new leaves; the root becomes internal.
        let l = space.alloc_page(&mut mtr)?;
        let r = space.alloc_page(&mut mtr)?;
        let lf = leaf_format(root, PageNo::NONE, r);
        fill(&mut mtr, l, lf, &records[..k])?;
        fill(&mut mtr, r, leaf_format(root, l, PageNo::NONE), &records[k..])?;
        let ri = mtr.latch(root)?;
        mtr.apply(
            ri,
            PageOp::Format {
                object: root.raw(),
                ty: PageType::BTreeInternal,
                level: 1,
                prev: PageNo::NONE,
                next: PageNo::NONE,
                aux: l.raw(),
            },
        );
        mtr.apply(ri, PageOp::Insert { slot: 0, rec: internal_record(&sep, r) });
    } else {
        let q = space.alloc_page(&mut mtr)?;
        fill(&mut mtr, q, leaf_format(root, leaf, old_next), &records)?;
        mtr.apply(li, PageOp::Truncate { keep: k as u16 });
        mtr.apply(li, PageOp::SetLinks { prev: old_prev, next: q });
        if !old_next.is_none() {
            let ni = mtr.latch(old_next)?;
            let nn = page::next(mtr.page(ni));
            mtr.apply(ni, PageOp::SetLinks { prev: q, next: nn });
        }
        insert_into_parent(space, root, &mut mtr, &path[..path.len() - 1], &sep, q)?;
    }
    crate::account::charge_pages(space, root, mtr.pages_delta());
    mtr.commit_system()?;
    Ok(())
}

/// What splitting the leaf at the end of `path` may need: the leaf, its new sibling, the
/// next leaf (its link), up to two allocation maps, and above them each ancestor that may
/// not take one more entry (it splits too: itself and its new sibling, or the root and
/// its two new children) up to the first that can (it takes the entry). Read under the
/// tree latch the caller holds, so the tree cannot change before the split.
fn split_claim(space: &Space, path: &[PageNo]) -> Result<Claim> {
    if path.len() == 1 {
        // A root leaf: its records move to two new leaves.
        return Ok(Claim::pages(5, 3));
    }
    let (mut pages, mut allocs) = (5, 2);
    for (level, &no) in path[..path.len() - 1].iter().enumerate().rev() {
        if read_in_tree(space, no, |p| slotted::fits(p, MAX_KEY + 6))? {
            pages += 1;
            break;
        }
        if level == 0 {
            pages += 3;
            allocs += 2;
        } else {
            pages += 2;
            allocs += 1;
        }
    }
    Ok(Claim::pages(pages, allocs))
}

fn leaf_format(root: PageNo, prev: PageNo, next: PageNo) -> PageOp {
    PageOp::Format { object: root.raw(), ty: PageType::BTreeLeaf, level: 0, prev, next, aux: 0 }
}

/// Formats page `no` (already allocated) and fills it with `records` in order; logged as
/// the page's image.
fn fill(mtr: &mut Mtr, no: PageNo, format: PageOp, records: &[Vec<u8>]) -> Result<()> {
    let i = mtr.latch_new(no)?;
    mtr.apply(i, format);
    for (slot, r) in records.iter().enumerate() {
        mtr.apply(i, PageOp::Insert { slot: slot as u16, rec: r.clone() });
    }
    mtr.log_as_image(i);
    Ok(())
}

/// Inserts the separator `(sep, child)` into the last page of `ancestors`, splitting
/// internal pages upwards as needed, all inside `mtr`.
fn insert_into_parent(
    space: &Space,
    root: PageNo,
    mtr: &mut Mtr,
    ancestors: &[PageNo],
    sep: &[u8],
    child: PageNo,
) -> Result<()> {
    let parent = *ancestors.last().unwrap();
    let pi = mtr.latch(parent)?;
    let p = mtr.page(pi);
    let rec = internal_record(sep, child);
    let idx = match slotted::search(p, sep, internal_key) {
        Ok(i) => i + 1,
        Err(i) => i,
    };
    if slotted::fits(p, rec.len()) {
        mtr.apply(pi, PageOp::Insert { slot: idx as u16, rec });
        return Ok(());
    }
    let level = page::level(p);
    let aux = page::aux(p);
    let mut entries: Vec<Vec<u8>> = (0..slotted::count(p)).map(|i| slotted::record(p, i).to_vec()).collect();
    entries.insert(idx, rec);
    // Balance by bytes; the middle entry moves up.
    let total: usize = entries.iter().map(|e| e.len() + SLOT_SIZE).sum();
    let mut acc = 0;
    let mut m = 1;
    for (i, e) in entries.iter().enumerate() {
        acc += e.len() + SLOT_SIZE;
        if acc * 2 >= total {
            m = i.clamp(1, entries.len() - 2);
            break;
        }
    }
    let mid_key = internal_key(&entries[m]).to_vec();
    let mid_child = internal_child(&entries[m]);
    let internal = |aux: PageNo, level: u8| PageOp::Format {
        object: root.raw(),
        ty: PageType::BTreeInternal,
        level,
        prev: PageNo::NONE,
        next: PageNo::NONE,
        aux: aux.raw(),
    };
    if ancestors.len() == 1 {
        let l = space.alloc_page(mtr)?;
        let r = space.alloc_page(mtr)?;
        fill(mtr, l, internal(PageNo::from_raw(aux), level), &entries[..m])?;
        fill(mtr, r, internal(mid_child, level), &entries[m + 1..])?;
        let pi = mtr.latch(parent)?;
        mtr.apply(pi, internal(l, level + 1));
        mtr.apply(pi, PageOp::Insert { slot: 0, rec: internal_record(&mid_key, r) });
    } else {
        let q = space.alloc_page(mtr)?;
        fill(mtr, q, internal(mid_child, level), &entries[m + 1..])?;
        fill(mtr, parent, internal(PageNo::from_raw(aux), level), &entries[..m])?;
        insert_into_parent(space, root, mtr, &ancestors[..ancestors.len() - 1], &mid_key, q)?;
    }
    Ok(())
}

/// Removes the record under `key` (which must exist) and logs it with `ctx`; then
/// merges an underfull leaf with a sibling. Returns the row change's LSN.
pub fn remove(space: &Space, root: PageNo, key: &[u8], ctx: LogCtx) -> Result<Lsn> {
    let path = descend(space, root, key)?;
    let leaf = *path.last().unwrap();
    let mut mtr =
        if ctx.kind == tessera_log::RecordKind::Compensation { Mtr::without_reserve(space) } else { Mtr::new(space)? };
    let li = latch_leaf(space, &mut mtr, leaf)?;
    let slot = slotted::search(mtr.page(li), key, leaf_key)
        .map_err(|_| damaged(space, leaf, "record to remove is missing"))?;
    mtr.apply(li, PageOp::Remove { slot: slot as u16 });
    let underfull = slotted::used_bytes(mtr.page(li)) < MERGE_BELOW;
    let lsn = mtr.commit(ctx)?;
    if underfull && path.len() > 1 {
        merge(space, root, &path)?;
    }
    Ok(lsn)
}

/// Merges the leaf at the end of `path` with a sibling under the same parent when both
/// fit in one page; collapses the root when it is left with a single child. Skipped
/// when the log or the data file has no room for it: an underfull leaf is a valid one.
fn merge(space: &Space, root: PageNo, path: &[PageNo]) -> Result<()> {
    let leaf = *path.last().unwrap();
    let parent = path[path.len() - 2];
    let Some(mut mtr) = Mtr::try_claiming(space, Claim::MERGE)? else { return Ok(()) };
    let pi = mtr.latch(parent)?;
    let pp = mtr.page(pi);
    let n = slotted::count(pp);
    let pos = (-1..n as isize).find(|&i| child_at(pp, i) == leaf);
    let Some(pos) = pos else { return Err(damaged(space, parent, "child missing from parent")) };
    // Merge the right one of the pair into the left one.
    let (left_pos, right_pos) = if pos + 1 < n as isize {
        (pos, pos + 1)
    } else if pos >= 0 {
        (pos - 1, pos)
    } else {
        return Ok(());
    };
    let (left, right) = (child_at(pp, left_pos), child_at(pp, right_pos));
    let lg = mtr.latch(left)?;
    let rg = mtr.latch(right)?;
    let (lp, rp) = (mtr.page(lg), mtr.page(rg));
    if !is_leaf(lp) || !is_leaf(rp) || slotted::used_bytes(lp) + slotted::used_bytes(rp) > CAPACITY {
        return Ok(());
    }
    let base = slotted::count(lp);
    let moved: Vec<Vec<u8>> = slotted::records(rp).map(|r| r.to_vec()).collect();
    let right_next = page::next(rp);
    let left_prev = page::prev(lp);
    for (j, r) in moved.into_iter().enumerate() {
        mtr.apply(lg, PageOp::Insert { slot: (base + j) as u16, rec: r });
    }
    mtr.apply(lg, PageOp::SetLinks { prev: left_prev, next: right_next });
    mtr.log_as_image(lg);
    if !right_next.is_none() {
        let ni = mtr.latch(right_next)?;
        let nn = page::next(mtr.page(ni));
        mtr.apply(ni, PageOp::SetLinks { prev: left, next: nn });
    }
    mtr.apply(pi, PageOp::Remove { slot: right_pos as u16 });
    space.free_page(&mut mtr, right)?;
    if slotted::count(mtr.page(pi)) == 0 && parent == root {
        // The root has one child left: pull its records up.
        let lp = mtr.page(lg);
        let records: Vec<Vec<u8>> = slotted::records(lp).map(|r| r.to_vec()).collect();
        let format = PageOp::Format {
            object: root.raw(),
            ty: page::page_type(lp).unwrap(),
            level: page::level(lp),
            prev: PageNo::NONE,
            next: PageNo::NONE,
            aux: page::aux(lp),
        };
        fill(&mut mtr, root, format, &records)?;
        space.free_page(&mut mtr, left)?;
    }
    crate::account::charge_pages(space, root, mtr.pages_delta());
    mtr.commit_system()?;
    Ok(())
}

/// Direction of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Backward,
}

fn within(key: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> (bool, bool) {
    let above_lo = match lo {
        Bound::Unbounded => true,
        Bound::Included(b) => key >= b.as_slice(),
        Bound::Excluded(b) => key > b.as_slice(),
    };
    let below_hi = match hi {
        Bound::Unbounded => true,
        Bound::Included(b) => key <= b.as_slice(),
        Bound::Excluded(b) => key < b.as_slice(),
    };
    (above_lo, below_hi)
}

/// How many leaves ahead of itself a scan asks to be read (1 MiB); it asks again when
/// fewer than half of them are left ahead.
pub const READ_AHEAD_LEAVES: isize = 128;

/// How far a scan's read-ahead has got: the level-1 page whose children it last asked
/// for, and the position (in that page) of the last child asked for.
#[derive(Default)]
pub struct ReadAhead {
    parent: PageNo,
    through: isize,
    off: bool,
}

impl ReadAhead {
    /// For a scan that reads no leaf before it needs it.
    pub fn off() -> ReadAhead {
        ReadAhead { off: true, ..ReadAhead::default() }
    }
}

/// At the level-1 page `p` (number `parent`), whose child at `pos` the scan is about to
/// read, asks the pool to read the children that follow in the scan's direction, up to
/// `READ_AHEAD_LEAVES` ahead and not beyond the range's end.
fn read_ahead_leaves(
    space: &Space,
    p: &[u8],
    parent: PageNo,
    pos: isize,
    (lo, hi, dir): (&Bound<Vec<u8>>, &Bound<Vec<u8>>, Direction),
    ra: &mut ReadAhead,
) {
    let forward = dir == Direction::Forward;
    let step = if forward { 1 } else { -1 };
    let mut at = pos;
    if ra.parent == parent {
        let ahead = (ra.through - pos) * step;
        if ahead > READ_AHEAD_LEAVES / 2 {
            return;
        }
        if ahead > 0 {
            at = ra.through;
        }
    }
    let n = slotted::count(p) as isize;
    let mut pages: SmallVec<[PageNo; READ_AHEAD_LEAVES as usize]> = SmallVec::new();
    while (at - pos) * step < READ_AHEAD_LEAVES {
        let next = at + step;
        if next < -1 || next >= n {
            break;
        }
        // Child `i` holds the keys from separator `i` up to separator `i + 1`.
        let needed = if forward {
            within(internal_key(slotted::record(p, next as usize)), &Bound::Unbounded, hi).1
        } else {
            let upper = internal_key(slotted::record(p, (next + 1) as usize));
            match lo {
                Bound::Unbounded => true,
                Bound::Included(b) | Bound::Excluded(b) => upper > b.as_slice(),
            }
        };
        if !needed {
            break;
        }
        pages.push(child_at(p, next));
        at = next;
    }
    *ra = ReadAhead { parent, through: at, off: false };
    if !pages.is_empty() {
        space.pool.read_ahead(space.file, &pages);
    }
}

/// Reads up to `limit` leaf records (ghosts included) within `[lo, hi]` in `dir`
/// order. Returns the records and whether the range may hold more after them.
pub fn scan_batch(
    space: &Space,
    root: PageNo,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    dir: Direction,
    limit: usize,
    ra: &mut ReadAhead,
) -> Result<(Vec<Vec<u8>>, bool)> {
    let mut out = Vec::new();
    let (_, more) = scan_visit(space, root, lo, hi, dir, limit, ra, |rec| out.push(rec.to_vec()))?;
    Ok((out, more))
}

/// The smallest key above `lo` whose record is not a ghost (None: there is none), the
/// caller holding the tree latch. Key-range locks are named by it.
pub fn next_live_key(space: &Space, root: PageNo, lo: &Bound<Vec<u8>>) -> Result<Option<Vec<u8>>> {
    Ok(keys_to_next_live(space, root, lo)?.1)
}

/// The keys above a bound up to the first live record: the ghosts met on the way, and
/// that record's key (None: there is none).
pub type KeysToLive = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// [`KeysToLive`] above `lo`, the caller holding the tree latch.
pub fn keys_to_next_live(space: &Space, root: PageNo, lo: &Bound<Vec<u8>>) -> Result<KeysToLive> {
    let mut lo = lo.clone();
    let mut ghosts = Vec::new();
    loop {
        let mut found = None;
        let (_, more) =
            scan_visit(space, root, &lo, &Bound::Unbounded, Direction::Forward, 16, &mut ReadAhead::off(), |r| {
                if found.is_none() {
                    if is_ghost(r) {
                        ghosts.push(leaf_key(r).to_vec());
                    } else {
                        found = Some(leaf_key(r).to_vec());
                    }
                }
            })?;
        match (found, ghosts.last()) {
            (Some(k), _) => return Ok((ghosts, Some(k))),
            (None, Some(l)) if more => lo = Bound::Excluded(l.clone()),
            _ => return Ok((ghosts, None)),
        }
    }
}

/// [`scan_batch`] handing each record to `visit` in place (under its page's latch)
/// instead of copying it. Returns how many it visited and whether the range may hold
/// more after them.
#[allow(clippy::too_many_arguments)]
pub fn scan_visit(
    space: &Space,
    root: PageNo,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    dir: Direction,
    limit: usize,
    ra: &mut ReadAhead,
    mut visit: impl FnMut(&[u8]),
) -> Result<(usize, bool)> {
    // Descend to the leaf where the scan starts.
    let start_key: Option<&[u8]> = match (dir, lo, hi) {
        (Direction::Forward, Bound::Included(k) | Bound::Excluded(k), _) => Some(k),
        (Direction::Backward, _, Bound::Included(k) | Bound::Excluded(k)) => Some(k),
        _ => None,
    };
    let mut g = read(space, root)?;
    let mut depth = 0;
    while !is_leaf(&g) {
        if depth > MAX_DEPTH {
            return Err(damaged(space, root, "tree too deep"));
        }
        let (child, pos) = match start_key {
            Some(k) => route(&g, k),
            None if dir == Direction::Forward => (PageNo::from_raw(page::aux(&g)), -1),
            None => {
                let n = slotted::count(&g) as isize;
                (child_at(&g, n - 1), n - 1)
            }
        };
        if page::level(&g) == 1 && !ra.off {
            read_ahead_leaves(space, &g, g.page_no(), pos, (lo, hi, dir), ra);
        }
        g = read(space, child)?;
        depth += 1;
    }
    let mut seen = 0;
    let mut pos: isize = match (dir, start_key) {
        (Direction::Forward, Some(k)) => match slotted::search(&g, k, leaf_key) {
            Ok(i) | Err(i) => i as isize,
        },
        (Direction::Forward, None) => 0,
        (Direction::Backward, Some(k)) => match slotted::search(&g, k, leaf_key) {
            Ok(i) => i as isize,
            Err(i) => i as isize - 1,
        },
        (Direction::Backward, None) => slotted::count(&g) as isize - 1,
    };
    let mut hops = 0usize;
    loop {
        let n = slotted::count(&g) as isize;
        while pos >= 0 && pos < n {
            let rec = slotted::record(&g, pos as usize);
            let (above_lo, below_hi) = within(leaf_key(rec), lo, hi);
            match dir {
                Direction::Forward if !below_hi => return Ok((seen, false)),
                Direction::Backward if !above_lo => return Ok((seen, false)),
                _ => {}
            }
            if above_lo && below_hi {
                if seen == limit {
                    return Ok((seen, true));
                }
                visit(rec);
                seen += 1;
            }
            pos += if dir == Direction::Forward { 1 } else { -1 };
        }
        let next = if dir == Direction::Forward { page::next(&g) } else { page::prev(&g) };
        if next.is_none() {
            return Ok((seen, false));
        }
        hops += 1;
        if hops > 1_000_000_000 {
            return Err(damaged(space, next, "sibling chain loops"));
        }
        g = read(space, next)?;
        pos = if dir == Direction::Forward { 0 } else { slotted::count(&g) as isize - 1 };
    }
}

/// Frees every page of the tree rooted at `root`, children before parents, the root
/// last, in the record described by `last` (a System record for a committed drop, a
/// Compensation record when a creation is undone); earlier chunks are System records.
/// Pages that no longer belong to the tree are skipped, so a free interrupted by a crash
/// can simply run again. Returns the LSN of the last record.
pub fn free_tree(space: &Space, root: PageNo, last: LogCtx) -> Result<Lsn> {
    let lsn = free_pages_then(space, &tree_pages(space, root)?, last, |_| Ok(()))?;
    crate::account::settle_tree(space, root, 0);
    Ok(lsn)
}

/// Whether the page `root` still holds the root of the tree dropped when the log ended
/// at `dropped_at`. Once a drop's walk has freed the root, every other page of the tree
/// is free too, and the root page may already be the root of a new tree: formatted as
/// the same object (a tree is named by its root page), but changed after the drop.
pub fn holds_dropped_root(space: &Space, root: PageNo, dropped_at: Lsn) -> Result<bool> {
    let g = read(space, root)?;
    Ok(page::object_id(&g) == root.raw() && page::lsn(&g) < dropped_at)
}

/// Frees every page of the tree rooted at `root` but the root, which becomes an empty
/// leaf in the last mini-transaction (logged with `last`). Like [`free_tree`], safe to
/// repeat after a crash part-way.
pub fn empty_tree(space: &Space, root: PageNo, last: LogCtx) -> Result<Lsn> {
    let mut pages = tree_pages(space, root)?;
    pages.retain(|&no| no != root);
    let lsn = free_pages_then(space, &pages, last, |mtr| {
        let i = mtr.latch(root)?;
        mtr.apply(i, empty_root(root));
        Ok(())
    })?;
    crate::account::settle_tree(space, root, 1);
    Ok(lsn)
}

/// The pages of the tree rooted at `root`, each after all of its children (root last);
/// pages no longer formatted as this tree's (freed by an interrupted walk: a freed page is
/// formatted as free) are left out.
pub fn tree_pages(space: &Space, root: PageNo) -> Result<Vec<PageNo>> {
    let mut order = Vec::new();
    let mut stack = vec![(root, false)];
    while let Some((no, expanded)) = stack.pop() {
        let g = read(space, no)?;
        let ours = page::object_id(&g) == root.raw()
            && matches!(page::page_type(&g), Some(PageType::BTreeLeaf | PageType::BTreeInternal));
        if !ours {
            continue;
        }
        if expanded || is_leaf(&g) {
            order.push(no);
            continue;
        }
        stack.push((no, true));
        stack.push((PageNo::from_raw(page::aux(&g)), false));
        for r in slotted::records(&g) {
            stack.push((internal_child(r), false));
        }
    }
    Ok(order)
}

/// Frees `order` in mini-transactions of a few pages each; the last one also runs
/// `finish` and is logged with `last`. A rollback's frees claim nothing (its transaction
/// reserved them); a committed drop's claim their room, so a full log stops it between
/// two of them (it is finished at the next open).
fn free_pages_then(
    space: &Space,
    order: &[PageNo],
    last: LogCtx,
    finish: impl FnOnce(&mut Mtr) -> Result<()>,
) -> Result<Lsn> {
    const CHUNK: usize = 16;
    let mut finish = Some(finish);
    if order.is_empty() {
        let mut mtr = Mtr::without_reserve(space);
        (finish.take().expect("runs once"))(&mut mtr)?;
        if !mtr.is_empty() || last.kind != tessera_log::RecordKind::Compensation {
            return mtr.commit(last);
        }
        // Nothing left to free, but the compensation record must still be written.
        let mut body = Vec::new();
        crate::ops::encode(&[], None, &mut body);
        let mut rec = tessera_log::LogRecord::new(last.kind, last.txn, last.prev_lsn, body);
        rec.undo_next = last.undo_next;
        return space.wal.append(&rec);
    }
    let mut lsn = Lsn::NONE;
    let chunks: Vec<&[PageNo]> = order.chunks(CHUNK).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let mut mtr = if last.kind == tessera_log::RecordKind::Compensation {
            Mtr::without_reserve(space)
        } else {
            let mut maps: Vec<u32> = chunk.iter().map(|&no| (no.raw() - 1) / BITS_PER_MAP).collect();
            maps.sort_unstable();
            maps.dedup();
            Mtr::claiming(space, Claim::free(chunk.len() as u64, maps.len() as u64, 1))?
        };
        for &no in *chunk {
            space.free_page(&mut mtr, no)?;
        }
        let is_last = i + 1 == chunks.len();
        if is_last {
            (finish.take().expect("runs once"))(&mut mtr)?;
        }
        lsn = mtr.commit(if is_last { last } else { LogCtx::system() })?;
    }
    Ok(lsn)
}
