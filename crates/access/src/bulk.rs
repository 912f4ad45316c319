//! Minimally logged bulk loads: a B+tree built bottom-up from rows in key order, its
//! pages written without log records (SQL Server's minimal logging under the SIMPLE and
//! BULK_LOGGED recovery models).
//!
//! What is logged, in order:
//! 1. one Update record per page the load allocates: the allocation-map change, with
//!    undo `BulkPage` (free the page without reading it);
//! 2. after the last row and after every page has been forced to disk, the root's new
//!    contents as one image, with undo `EmptyTree` (free every page of the tree but the
//!    root, empty the root, and resume undo before step 1 — the walk freed those pages);
//! 3. System notes naming the loaded pages (`ops::encode_bulk_note`), which backups use
//!    to copy them.
//!
//! The pages themselves are installed in the pool stamped with their allocation's LSN
//! and the header flag `FLAG_UNLOGGED`, so their first later change logs a full image
//! (see `mtr`). A load cut short (error, rollback, crash) before step 2 is undone by the
//! `BulkPage` records, which never read the pages: nothing depends on their contents
//! having reached the disk. After step 2 the pages are on disk, so `EmptyTree` may walk
//! the tree — which also frees pages later splits added (the tree may have grown by
//! logged inserts after the load). Redo never overwrites a loaded page: its LSN is newer
//! than every record of its earlier lives.

use tessera_buffer::page::{self, PageNo, PageType, PAGE_SIZE};
use tessera_errors::{Error, Result};
use tessera_log::{LogRecord, Lsn, RecordKind, TxnId};

use crate::btree::{self, MAX_LEAF_RECORD};
use crate::mtr::Mtr;
use crate::ops::{self, Undo};
use crate::reserve::Claim;
use crate::slotted;
use crate::space::Space;
use crate::txn::{self, Txn};

/// A bounded tree: 32 levels is far beyond any file the allocation maps can address.
const MAX_LEVELS: usize = 32;

/// What a bulk load did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkOutcome {
    pub rows: u64,
    /// Pages written without log records (the root, which is logged, not counted).
    pub pages: u64,
}

/// The page being filled at one level of the tree.
struct Open {
    buf: Vec<u8>,
    /// Its page number and the LSN of its allocation, once known (a leaf learns them
    /// when its predecessor links to it).
    no: Option<(PageNo, Lsn)>,
    /// The smallest key below it: its separator in the level above.
    first_key: Vec<u8>,
    /// Pages of this level already written.
    written: u64,
}

/// A bulk load under way ([`BulkBuild::start`]): rows pushed in key order, the tree
/// made part of the table by [`BulkBuild::finish`]. Until then the tree's root is as it
/// was (empty) and its new pages are reachable from nowhere; the table's exclusive lock,
/// taken at the start, keeps every other transaction out.
pub struct BulkBuild {
    root: PageNo,
    levels: Vec<Open>,
    /// Every page written.
    pages: Vec<PageNo>,
    rows: u64,
    /// The transaction's last record before the load (undo resumes there).
    before: Lsn,
    /// The last key pushed (keys come strictly ascending).
    last: Option<Vec<u8>>,
}

/// The body of [`Space::bulk_load`].
pub(crate) fn load<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    space: &Space,
    txn: &mut Txn,
    tree: PageNo,
    rows: impl IntoIterator<Item = (K, V)>,
) -> Result<Option<BulkOutcome>> {
    let Some(mut b) = BulkBuild::start(space, txn, tree)? else { return Ok(None) };
    for (key, value) in rows {
        b.push(space, txn, key.as_ref(), value.as_ref())?;
    }
    b.finish(space, txn).map(Some)
}

impl BulkBuild {
    /// Starts a load of the tree `tree` as part of `txn`, which takes the table's
    /// exclusive lock; none (and nothing done but the lock) when the tree is not empty.
    pub(crate) fn start(space: &Space, txn: &mut Txn, tree: PageNo) -> Result<Option<BulkBuild>> {
        let meta = space.lock_table_exclusive(txn, tree)?;
        {
            let _latch = meta.latch.read();
            let g = space.pool.fetch(space.file, tree)?.into_read();
            if !btree::is_leaf(&g) || slotted::count(&g) != 0 {
                return Ok(None);
            }
        }
        space.note_first_lsn(txn);
        let before = txn.last_lsn();
        Ok(Some(BulkBuild { root: tree, levels: Vec::new(), pages: Vec::new(), rows: 0, before, last: None }))
    }

    /// The tree being loaded.
    pub fn tree(&self) -> PageNo {
        self.root
    }

    /// Adds a row, whose key must follow the last one's.
    pub(crate) fn push(&mut self, space: &Space, txn: &mut Txn, key: &[u8], value: &[u8]) -> Result<()> {
        match self.last.as_mut() {
            Some(l) if l.as_slice() >= key => {
                return Err(Error::Invalid("bulk load rows must come in strictly ascending key order".into()));
            }
            Some(l) => {
                l.clear();
                l.extend_from_slice(key);
            }
            None => self.last = Some(key.to_vec()),
        }
        self.push_row(space, txn, key, value)
    }

    fn fresh(&self, level: usize, prev: PageNo, aux: PageNo) -> Vec<u8> {
        let mut buf = vec![0u8; PAGE_SIZE];
        let ty = if level == 0 { PageType::BTreeLeaf } else { PageType::BTreeInternal };
        slotted::init(&mut buf, PageNo::NONE, self.root.raw(), ty, level as u8);
        page::set_prev(&mut buf, prev);
        page::set_aux(&mut buf, aux.raw());
        buf
    }

    fn push_row(&mut self, space: &Space, txn: &mut Txn, key: &[u8], value: &[u8]) -> Result<()> {
        // The same limits, and errors, as a row-by-row insert (`btree::put_placed`).
        if key.len() > btree::MAX_KEY {
            return Err(Error::KeyTooLarge { size: key.len(), max: btree::MAX_KEY });
        }
        let rec = btree::leaf_record(0, key, value);
        if rec.len() > MAX_LEAF_RECORD {
            return Err(Error::RowTooLarge { size: rec.len(), max: MAX_LEAF_RECORD });
        }
        if self.levels.is_empty() {
            let buf = self.fresh(0, PageNo::NONE, PageNo::NONE);
            self.levels.push(Open { buf, no: None, first_key: Vec::new(), written: 0 });
        }
        if !slotted::fits(&self.levels[0].buf, rec.len()) {
            self.write_full(space, txn, 0)?;
        }
        let leaf = &mut self.levels[0];
        let slot = slotted::count(&leaf.buf);
        if slot == 0 {
            leaf.first_key = key.to_vec();
        }
        let ok = slotted::insert(&mut leaf.buf, slot, &rec);
        debug_assert!(ok, "a record that fits an empty leaf");
        self.rows += 1;
        Ok(())
    }

    /// Allocates one page for the load, logging the allocation with its undo.
    fn alloc(&mut self, space: &Space, txn: &mut Txn) -> Result<(PageNo, Lsn)> {
        let root = self.root;
        txn::with_undo_reserved(space, txn, 0, 0, None, |txn| {
            let mut mtr = Mtr::claiming(space, Claim::NEW_PAGE)?;
            let no = space.alloc_page(&mut mtr)?;
            let lsn = space.commit_update(txn, mtr, &Undo::BulkPage { page: no })?;
            Ok((no, lsn))
        })
        .inspect(|_| crate::account::charge_pages(space, root, 1))
    }

    /// Writes `buf` as page `no` into the pool: dirty, unlogged, stamped `lsn`.
    fn install(&mut self, space: &Space, no: PageNo, lsn: Lsn, buf: &[u8]) -> Result<()> {
        let mut g = space.pool.fetch_new(space.file, no)?.into_write();
        g.copy_from_slice(buf);
        page::set_page_no(&mut g, no);
        page::set_flags(&mut g, page::FLAG_UNLOGGED);
        page::set_lsn(&mut g, lsn);
        g.mark_dirty();
        self.pages.push(no);
        Ok(())
    }

    /// The page at `level` is full and another follows it at the same level: write it,
    /// add it to its parent and start the next one.
    fn write_full(&mut self, space: &Space, txn: &mut Txn, level: usize) -> Result<()> {
        let next = if level == 0 { Some(self.alloc(space, txn)?) } else { None };
        let done = self.write_page(space, txn, level, next.map_or(PageNo::NONE, |(n, _)| n))?;
        let first_key = std::mem::take(&mut self.levels[level].first_key);
        let buf = self.fresh(level, if level == 0 { done } else { PageNo::NONE }, PageNo::NONE);
        let open = &mut self.levels[level];
        open.buf = buf;
        open.no = next;
        self.add_child(space, txn, level + 1, first_key, done)
    }

    /// Writes the open page of `level` (with `next` as its right sibling for leaves) and
    /// returns its number.
    fn write_page(&mut self, space: &Space, txn: &mut Txn, level: usize, next: PageNo) -> Result<PageNo> {
        let (no, lsn) = match self.levels[level].no {
            Some(numbered) => numbered,
            None => self.alloc(space, txn)?,
        };
        let mut buf = std::mem::take(&mut self.levels[level].buf);
        if level == 0 {
            page::set_next(&mut buf, next);
        }
        self.install(space, no, lsn, &buf)?;
        self.levels[level].written += 1;
        Ok(no)
    }

    /// Adds `(first_key, child)` to the open page of `level`.
    fn add_child(
        &mut self,
        space: &Space,
        txn: &mut Txn,
        level: usize,
        first_key: Vec<u8>,
        child: PageNo,
    ) -> Result<()> {
        if level == self.levels.len() {
            if level >= MAX_LEVELS {
                return Err(Error::Invalid("bulk load tree exceeds the level limit".into()));
            }
            let buf = self.fresh(level, PageNo::NONE, child);
            self.levels.push(Open { buf, no: None, first_key, written: 0 });
            return Ok(());
        }
        let rec = btree::internal_record(&first_key, child);
        if !slotted::fits(&self.levels[level].buf, rec.len()) {
            self.write_full(space, txn, level)?;
            let open = &mut self.levels[level];
            page::set_aux(&mut open.buf, child.raw());
            open.first_key = first_key;
            return Ok(());
        }
        let open = &mut self.levels[level];
        let slot = slotted::count(&open.buf);
        let ok = slotted::insert(&mut open.buf, slot, &rec);
        debug_assert!(ok, "checked to fit");
        Ok(())
    }

    /// Writes the last page of every level; the single page of the top level becomes
    /// the root (logged as an image); forces the pages and notes them in the log.
    pub(crate) fn finish(mut self, space: &Space, txn: &mut Txn) -> Result<BulkOutcome> {
        if self.rows == 0 {
            return Ok(BulkOutcome::default());
        }
        let meta = space.tree(self.root);
        let _latch = meta.latch.write();
        let mut level = 0;
        while !(level + 1 == self.levels.len() && self.levels[level].written == 0) {
            let done = self.write_page(space, txn, level, PageNo::NONE)?;
            let first_key = std::mem::take(&mut self.levels[level].first_key);
            self.add_child(space, txn, level + 1, first_key, done)?;
            level += 1;
        }
        // The unlogged pages reach the disk before the root makes them part of the tree:
        // once the root's record exists, undoing it may walk (and free) them.
        space.pool.flush_file(space.file)?;
        let mut top = std::mem::take(&mut self.levels[level].buf);
        page::set_page_no(&mut top, self.root);
        let (root, before) = (self.root, self.before);
        txn::with_undo_reserved(space, txn, 0, 0, None, |txn| {
            let mut mtr = Mtr::new(space)?;
            let i = mtr.latch(root)?;
            mtr.apply(i, ops::image(&top));
            space.commit_update(txn, mtr, &Undo::EmptyTree { root, before })
        })?;
        self.pages.sort_unstable();
        let notes = ops::encode_bulk_note(&self.pages);
        // The notes' room is claimed like a mini-transaction's; if there is none the load
        // fails here and its transaction rolls it back.
        let _claimed = space.claim(Claim::records(notes.iter().map(|body| body.len() as u64 + 64)))?;
        // Held while appending, so whoever reads the end of the log after a note finds
        // the note's LSN here (see `Space::may_have_bulk_notes`).
        let mut newest = space.newest_bulk_note.lock();
        for body in notes {
            *newest = space.wal.append(&LogRecord::new(RecordKind::System, TxnId::SYSTEM, Lsn::NONE, body))?;
        }
        meta.forget_append_hint();
        Ok(BulkOutcome { rows: self.rows, pages: self.pages.len() as u64 })
    }
}
