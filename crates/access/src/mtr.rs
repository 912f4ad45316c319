//! Mini-transactions: the unit of atomic page change.
//!
//! A [`Mtr`] write-latches every page it touches, applies page operations to them as it
//! goes, and on commit appends ONE log record holding all the operations, stamps that
//! record's LSN into every touched page, marks them dirty and releases the latches.
//! Because the latches are held from before the first change until the LSN is stamped,
//! a checkpoint (which flushes pages under their shared latch) never writes a change
//! whose log record could land after the checkpoint's redo LSN, and a page split that
//! touches several pages is redone all or nothing.
//!
//! Before the first change, [`Mtr::new`] and [`Mtr::claiming`] claim the log bytes and
//! pages the mini-transaction may need, which must exist beside everything already
//! reserved (see [`crate::reserve`]); a full log (9002) or data file (1105) is reported
//! before anything is modified. Rollback and recovery use [`Mtr::without_reserve`]: the
//! reserve exists for them.

use std::ops::{Deref, DerefMut};

use smallvec::SmallVec;

use tessera_buffer::page::{self, PageNo};
use tessera_buffer::{PageHandle, PageWrite, PageWriteGuard};
use tessera_errors::Result;
use tessera_log::{LogRecord, Lsn, RecordKind, TxnId};

use crate::ops::{self, PageOp, Undo};
use crate::reserve::{self, Claim, Claimed};
use crate::space::Space;

/// Bounds one mini-transaction (a split of a five-level tree touches about a dozen).
const MAX_PAGES: usize = 64;

/// Largest log-record body buffer a thread keeps for its next mini-transaction (bodies
/// with page images can be far bigger; those buffers are freed).
const MAX_KEPT_BODY: usize = 16 << 10;

thread_local! {
    /// The thread's reusable log-record body buffer (see [`Mtr::commit`]).
    static BODY: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Most mini-transactions change one or two pages with one operation each; those keep
/// their pages and operations inline.
const INLINE: usize = 4;

pub struct Mtr<'a> {
    space: &'a Space,
    pages: SmallVec<[(PageNo, Latched<'a>); INLINE]>,
    ops: SmallVec<[(PageNo, PageOp); INLINE]>,
    /// The room claimed before the first change (None for rollback and recovery),
    /// released when the mini-transaction is dropped, after its record is appended.
    claim: Option<Claimed<'a>>,
    /// Pages allocated less pages freed so far (a tree's page account, `crate::account`).
    pages_delta: i64,
}

/// A page the mini-transaction holds exclusively latched: pinned by the mini-transaction
/// itself, or through a handle its caller keeps pinned for longer (a transaction's
/// rightmost leaf, see [`Mtr::latch_pinned`]).
enum Latched<'a> {
    Own(PageWriteGuard),
    Pinned(PageWrite<'a>),
}

impl Latched<'_> {
    fn mark_dirty(&mut self) {
        match self {
            Latched::Own(g) => g.mark_dirty(),
            Latched::Pinned(g) => g.mark_dirty(),
        }
    }
}

impl Deref for Latched<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Latched::Own(g) => g,
            Latched::Pinned(g) => g,
        }
    }
}

impl DerefMut for Latched<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Latched::Own(g) => g,
            Latched::Pinned(g) => g,
        }
    }
}

/// How a mini-transaction's record is logged.
#[derive(Clone, Copy, Debug)]
pub struct LogCtx<'u> {
    pub kind: RecordKind,
    pub txn: TxnId,
    pub prev_lsn: Lsn,
    pub undo_next: Lsn,
    pub undo: Option<&'u Undo<'u>>,
}

impl<'u> LogCtx<'u> {
    pub fn system() -> LogCtx<'static> {
        LogCtx { kind: RecordKind::System, txn: TxnId::SYSTEM, prev_lsn: Lsn::NONE, undo_next: Lsn::NONE, undo: None }
    }

    /// A user transaction's change, undone by `undo`, chained after its last record.
    pub fn update(txn: TxnId, prev_lsn: Lsn, undo: &'u Undo<'u>) -> LogCtx<'u> {
        LogCtx { kind: RecordKind::Update, txn, prev_lsn, undo_next: Lsn::NONE, undo: Some(undo) }
    }
}

impl<'a> Mtr<'a> {
    /// A mini-transaction changing one page ([`Claim::CHANGE`]: a row change).
    ///
    /// Inlined, like [`Mtr::commit`], so that the mini-transaction (a few hundred bytes
    /// with its inline pages and operations) is built where the caller keeps it instead
    /// of being copied out of a `Result`: per row, those copies cost as much as the row.
    #[inline]
    pub fn new(space: &'a Space) -> Result<Mtr<'a>> {
        Mtr::claiming(space, Claim::CHANGE)
    }

    /// A mini-transaction that may need up to `claim` (9002 or 1105 if the files cannot
    /// hold it beside what is already reserved).
    #[inline]
    pub fn claiming(space: &'a Space, claim: Claim) -> Result<Mtr<'a>> {
        let claimed = space.claim(claim)?;
        Ok(Mtr { space, pages: SmallVec::new(), ops: SmallVec::new(), claim: Some(claimed), pages_delta: 0 })
    }

    /// [`Mtr::claiming`] for optional work (a merge, a ghost's removal): None, and nothing
    /// to do, when the log or the data file is full.
    pub fn try_claiming(space: &'a Space, claim: Claim) -> Result<Option<Mtr<'a>>> {
        match Mtr::claiming(space, claim) {
            Ok(mtr) => Ok(Some(mtr)),
            Err(e) if reserve::is_full(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// For rollback and recovery: compensation must proceed even when the log is
    /// nearly full (the reserve exists for it).
    #[inline]
    pub fn without_reserve(space: &'a Space) -> Mtr<'a> {
        Mtr { space, pages: SmallVec::new(), ops: SmallVec::new(), claim: None, pages_delta: 0 }
    }

    /// Notes `pages` allocated (negative: freed) by this mini-transaction.
    pub(crate) fn count_pages(&mut self, pages: i64) {
        self.pages_delta += pages;
    }

    /// Pages allocated less pages freed by this mini-transaction.
    pub(crate) fn pages_delta(&self) -> i64 {
        self.pages_delta
    }

    fn find(&self, no: PageNo) -> Option<usize> {
        self.pages.iter().position(|(n, _)| *n == no)
    }

    /// Write-latches page `no` (once per mini-transaction) and returns its handle index.
    pub fn latch(&mut self, no: PageNo) -> Result<usize> {
        if let Some(i) = self.find(no) {
            return Ok(i);
        }
        assert!(self.pages.len() < MAX_PAGES, "mini-transaction touches too many pages");
        let g = self.space.pool.fetch(self.space.file, no)?.into_write();
        self.pages.push((no, Latched::Own(g)));
        Ok(self.pages.len() - 1)
    }

    /// Write-latches the page of a handle the caller keeps pinned: no page-table lookup
    /// and no pin of its own, for a page used again and again (an append's leaf).
    pub fn latch_pinned(&mut self, handle: &'a PageHandle) -> usize {
        let no = handle.page_no();
        if let Some(i) = self.find(no) {
            return i;
        }
        assert!(self.pages.len() < MAX_PAGES, "mini-transaction touches too many pages");
        self.pages.push((no, Latched::Pinned(handle.write())));
        self.pages.len() - 1
    }

    /// Write-latches a page that is being allocated (no disk read).
    pub fn latch_new(&mut self, no: PageNo) -> Result<usize> {
        if let Some(i) = self.find(no) {
            return Ok(i);
        }
        assert!(self.pages.len() < MAX_PAGES, "mini-transaction touches too many pages");
        let g = self.space.pool.fetch_new(self.space.file, no)?.into_write();
        self.pages.push((no, Latched::Own(g)));
        Ok(self.pages.len() - 1)
    }

    pub fn page(&self, i: usize) -> &[u8] {
        &self.pages[i].1
    }

    pub fn page_no(&self, i: usize) -> PageNo {
        self.pages[i].0
    }

    pub fn apply(&mut self, i: usize, op: PageOp) {
        let (no, g) = &mut self.pages[i];
        ops::apply(g, *no, &op);
        self.ops.push((*no, op));
    }

    /// Logs page `i` as one image of its contents now instead of the operations applied
    /// to it so far: for a page the mini-transaction rewrote (formatted and filled with
    /// records), whose image is smaller than its operations and never bigger than a page,
    /// which is what claims count on (see `crate::reserve::PAGE_BYTES`).
    pub fn log_as_image(&mut self, i: usize) {
        let no = self.pages[i].0;
        self.ops.retain(|(n, _)| *n != no);
        self.ops.push((no, ops::image(&self.pages[i].1)));
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn commit_system(self) -> Result<Lsn> {
        self.commit(LogCtx::system())
    }

    /// Logs the operations as one record and stamps its LSN into the touched pages.
    /// Returns the LSN (0 if nothing was changed).
    pub fn commit(mut self, ctx: LogCtx) -> Result<Lsn> {
        self.commit_latched(ctx)
        // Dropping `self` here releases the latches and pins.
    }

    /// [`Mtr::commit`] that leaves the pages latched until the mini-transaction is
    /// dropped, for a caller that drops it at once: passing it by value copies it (a few
    /// hundred bytes), a cost the once-per-row append path does not pay.
    pub fn commit_latched(&mut self, ctx: LogCtx) -> Result<Lsn> {
        if self.ops.is_empty() {
            return Ok(Lsn::NONE);
        }
        let lsn = loop {
            let redo_point = self.space.wal.redo_point();
            // The body is copied into the log by the append: its buffer is kept for the
            // thread's next mini-transaction instead of being allocated for each.
            let mut body = BODY.take();
            body.clear();
            match self.logged_ops(redo_point) {
                Some(ops) => ops::encode(&ops, ctx.undo, &mut body),
                None => ops::encode(&self.ops, ctx.undo, &mut body),
            }
            let mut rec = LogRecord::new(ctx.kind, ctx.txn, ctx.prev_lsn, body);
            rec.undo_next = ctx.undo_next;
            debug_assert!(
                self.claim.as_ref().is_none_or(|c| rec.encoded_len() as u64 + 8 <= c.claim().log),
                "a record of {} bytes exceeds its claim {:?}",
                rec.encoded_len(),
                self.claim.as_ref().map(Claimed::claim)
            );
            // A checkpoint that began meanwhile may require more images: build again.
            let appended = self.space.wal.append_since(&rec, redo_point);
            if rec.body.capacity() <= MAX_KEPT_BODY {
                BODY.set(rec.body);
            }
            if let Some(lsn) = appended? {
                break lsn;
            }
        };
        for (no, g) in self.pages.iter_mut() {
            if self.ops.iter().any(|(n, _)| n == no) {
                assert!(page::lsn(g) < lsn, "page LSNs only grow");
                let flags = page::flags(g);
                page::set_flags(g, flags & !page::FLAG_UNLOGGED);
                page::set_lsn(g, lsn);
                g.mark_dirty();
            }
        }
        Ok(lsn)
    }

    /// Torn-write protection: a page not changed since the checkpoint that began at
    /// `redo_point` (its LSN is older) may be half-written to disk before the next
    /// checkpoint completes, and redo would then start from that torn image. Such a
    /// page's operations are logged as one full image of its new state instead, unless
    /// they begin by formatting it (redo then ignores the old contents anyway). So is
    /// the first change of a bulk-loaded page (`FLAG_UNLOGGED`), whose contents the log
    /// does not have.
    /// Returns `None` when no page needs an image (the operations are logged as done).
    fn logged_ops(&self, redo_point: Lsn) -> Option<Vec<(PageNo, PageOp)>> {
        let needs_image = |no: PageNo, g: &Latched| {
            (page::lsn(g) < redo_point || page::flags(g) & page::FLAG_UNLOGGED != 0)
                && self.ops.iter().find(|(n, _)| *n == no).is_some_and(|(_, op)| !op.overwrites_page())
        };
        let imaged: Vec<PageNo> = self.pages.iter().filter(|(no, g)| needs_image(*no, g)).map(|(no, _)| *no).collect();
        if imaged.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(self.ops.len());
        for (no, op) in &self.ops {
            if !imaged.contains(no) {
                out.push((*no, op.clone()));
            } else if !out.iter().any(|(n, _)| n == no) {
                let (_, g) = self.pages.iter().find(|(n, _)| n == no).expect("an imaged page is latched");
                let mut image = ops::image(g);
                if let PageOp::Image { bytes, .. } = &mut image {
                    // The image puts the page in the log: it is no longer unlogged.
                    let flags = page::flags(bytes);
                    page::set_flags(bytes, flags & !page::FLAG_UNLOGGED);
                }
                out.push((*no, image));
            }
        }
        Some(out)
    }
}

/// Redo of one logged record: applies its operations to every page whose LSN is older
/// than the record. Pages are decided once per record, since a record may hold several
/// operations on one page. A page whose first operation overwrites it (a format or a
/// full image) may be torn on disk: it then starts from zeros instead of failing (824).
/// It is still read when it can be, since its LSN may show the change is already there
/// (a bulk-loaded page's contents are nowhere in the log).
pub fn redo(space: &Space, lsn: Lsn, ops: &[(PageNo, PageOp)]) -> Result<()> {
    let mut decided: Vec<(PageNo, Option<PageWriteGuard>)> = Vec::new();
    for (no, op) in ops {
        let at = match decided.iter().position(|(n, _)| n == no) {
            Some(i) => i,
            None => {
                let h = if op.overwrites_page() {
                    space.pool.fetch_for_overwrite(space.file, *no)?
                } else {
                    space.pool.fetch(space.file, *no)?
                };
                let g = h.into_write();
                let apply = page::lsn(&g) < lsn;
                decided.push((*no, apply.then_some(g)));
                decided.len() - 1
            }
        };
        if let Some(g) = decided[at].1.as_mut() {
            ops::apply(g, *no, op);
        }
    }
    for (_, g) in decided.iter_mut() {
        if let Some(g) = g {
            page::set_lsn(g, lsn);
            g.mark_dirty();
        }
    }
    Ok(())
}
