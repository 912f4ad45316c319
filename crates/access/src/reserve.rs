//! Room reserved before a change: how a full disk, a log at its maximum size or a data
//! file at its maximum size fails a statement (9002, 1105) before any page is touched,
//! and never a structure modification half done or a rollback.
//!
//! A mini-transaction changes pages in memory first and logs them when it commits; from
//! its first change to its log record it cannot fail. So before its first change it
//! *claims* (see [`Claim`]) an upper bound of the log bytes it will append and of the
//! pages it will allocate, and [`claim`] makes sure that much exists — log space the file
//! already holds, pages inside the data file — growing the files, in their growth steps,
//! if needed. What must exist at that moment is:
//!
//! - log: the claims of every mini-transaction in flight, plus the active transactions'
//!   rollback (`Space::undo_reserve`: each change's compensation record, counted exactly
//!   when the change is made), plus room for full page images in their compensation
//!   records (a compensation record changes one page, and a page needs at most one image
//!   per checkpoint interval: one per change, but never more than the file's pages nor
//!   [`MAX_IMAGED_PAGES`]), plus [`LOG_FLOOR`] for the records written without a claim
//!   (checkpoints; commits and end records are reserved with their transaction);
//! - data: the pages every mini-transaction in flight may allocate, plus the pages the
//!   active transactions' rollbacks may need for splits (`Space::rollback_pages`).
//!
//! Nothing is kept in reserve beyond that: a small database has small files, and
//! reserves grow with the work in flight and with the data file, not with a constant.
//! The accounting is by counters: a claim is added before the check and removed when the
//! mini-transaction ends, so concurrent mini-transactions each find the others' claims
//! counted. Log room is counted per VLF as what frames up to the largest promised are
//! sure to fill (`Wal::set_frame_limit`): a frame never spans two VLFs, so each VLF may
//! leave up to one frame's worth unused. The largest promised frame is that of a row
//! change, or while bigger ones are in flight (splits, merges) or may come from a
//! rollback (a split, see below), the biggest of those.
//!
//! Rollback and recovery claim nothing: the reserve exists for them. Why it suffices:
//! a compensation record redoes the inverse of one change and is at most as big as the
//! change's key and bigger record plus [`UNDO_OVERHEAD`] (what `undo_reserve` counts per
//! change) and, when its page was not changed since the checkpoint began, a page image
//! instead of its operation (counted apart, above). Undoing an insert removes a record;
//! undoing an update or a delete puts back a record no bigger than the one there now —
//! except when the change made the record smaller (an update that shrank a row, an insert
//! over a bigger ghost): only then can a rollback need a page split, and such a
//! transaction reserves one split (log, pages and its frame) of its tree with a level
//! more than it has (`txn::reserve_undo`). Merges of underfull
//! pages claim room like any change and are skipped when there is none: a tree with an
//! underfull page is still a valid tree. Freeing the pages of a tree the transaction
//! created costs about 30 bytes of log per page, which the per-change overhead covers
//! (every page of such a tree was allocated by a split one of its changes caused).

use std::sync::atomic::Ordering;

use tessera_buffer::page::PAGE_SIZE;
use tessera_errors::{Error, Result};

use crate::btree::{MAX_KEY, MAX_LEAF_RECORD};
use crate::space::Space;

/// Log bytes a page contributes to a record at most: its operations or, instead, its
/// image. A page a mini-transaction formats and fills is logged as its image (see
/// `Mtr::log_as_image`), so that no page costs more than about its own size.
pub const PAGE_BYTES: u64 = PAGE_SIZE as u64 + 64;
/// A record's envelope and frame header plus the biggest undo information it carries (a
/// key and a leaf record).
const RECORD_BYTES: u64 = (MAX_KEY + MAX_LEAF_RECORD) as u64 + 128;
/// A full page image in a compensation record, beyond what its change reserved.
pub const IMAGE_BYTES: u64 = PAGE_SIZE as u64 + 32;
/// The most page images the reserve covers for rollbacks in one checkpoint interval
/// (4 MiB, the reserve every change kept before reserves were counted: every page of a
/// database up to that size).
pub const MAX_IMAGED_PAGES: u64 = 512;
/// Log room for records written without a claim: checkpoints, and the records of
/// recovery at the next open.
pub const LOG_FLOOR: u64 = 16 << 10;
/// Reserved by a transaction with its first change: its commit or end record and its
/// entry in checkpoint records.
pub const TXN_RECORDS: u64 = 128;
/// Reserved per change beyond its key and record: the compensation record's envelope,
/// page operation and frame, and the freeing of a page its splits may have added to a
/// tree it created.
pub const UNDO_OVERHEAD: u64 = 96;

/// What a mini-transaction may need: log bytes (its whole record, framed), the largest
/// of its records (a mini-transaction has one), and pages it may allocate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub log: u64,
    pub frame: u64,
    pub pages: u32,
}

impl Claim {
    /// A mini-transaction that touches at most `pages` pages and allocates at most
    /// `allocs` of them.
    pub const fn pages(pages: u64, allocs: u32) -> Claim {
        let log = pages * PAGE_BYTES + RECORD_BYTES;
        Claim { log, frame: log, pages: allocs }
    }

    /// Records of these sizes (framed), logged one after another.
    pub fn records(sizes: impl Iterator<Item = u64> + Clone) -> Claim {
        Claim { log: sizes.clone().sum(), frame: sizes.max().unwrap_or(0), pages: 0 }
    }

    /// One change to one page (a row change on its leaf, a page image).
    pub const CHANGE: Claim = Claim::pages(1, 0);

    /// A new tree: its root and the allocation map (a new map, at a map's boundary).
    pub const NEW_PAGE: Claim = Claim::pages(2, 2);

    /// A merge of two leaves: the parent, both leaves, the next leaf's link, the
    /// allocation map (and the root, when it collapses, is the parent).
    pub const MERGE: Claim = Claim::pages(6, 0);

    /// The most a leaf split in a tree of `depth` levels may need, when every level
    /// splits: the leaf, its new sibling, the next leaf's link, two pages per level above
    /// (a split parent and its new sibling), the root's two new children, and up to two
    /// allocation maps; one new page per level and two for the root, and a new map.
    /// (A split claims what its tree's pages say it may need: `btree::split_claim`.)
    pub const fn split(depth: usize) -> Claim {
        Claim::pages(2 * depth as u64 + 4, depth as u32 + 2)
    }

    /// A free of up to `pages` pages whose allocation bits lie in `maps` maps, plus
    /// `extra` pages changed in the same mini-transaction.
    pub const fn free(pages: u64, maps: u64, extra: u64) -> Claim {
        let log = pages * 64 + (maps + extra) * PAGE_BYTES + RECORD_BYTES;
        Claim { log, frame: log, pages: 0 }
    }
}

/// A claim being held; released when dropped.
pub struct Claimed<'a> {
    space: &'a Space,
    claim: Claim,
}

impl Claimed<'_> {
    pub fn claim(&self) -> Claim {
        self.claim
    }
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        self.space.claimed_log.fetch_sub(self.claim.log, Ordering::AcqRel);
        if self.claim.pages > 0 {
            self.space.claimed_pages.fetch_sub(self.claim.pages, Ordering::AcqRel);
        }
        drop_frame(self.space, self.claim.frame);
    }
}

/// Promises a frame of `frame` bytes (see `Wal::set_frame_limit`): one of a claim in
/// flight, or of a split a rollback may log. A row change's is always promised.
pub(crate) fn promise_frame(space: &Space, frame: u64) {
    if frame > Claim::CHANGE.frame {
        let mut big = space.big_frames.lock();
        big.push(frame);
        space.wal.set_frame_limit(big.iter().copied().max().unwrap_or(0).max(Claim::CHANGE.frame));
    }
}

/// Withdraws what [`promise_frame`] promised.
pub(crate) fn drop_frame(space: &Space, frame: u64) {
    if frame > Claim::CHANGE.frame {
        let mut big = space.big_frames.lock();
        if let Some(i) = big.iter().position(|&f| f == frame) {
            big.swap_remove(i);
        }
        space.wal.set_frame_limit(big.iter().copied().max().unwrap_or(0).max(Claim::CHANGE.frame));
    }
}

/// The body of [`Space::claim`].
pub(crate) fn claim(space: &Space, claim: Claim) -> Result<Claimed<'_>> {
    let claimed_log = space.claimed_log.fetch_add(claim.log, Ordering::AcqRel) + claim.log;
    let claimed_pages = if claim.pages > 0 {
        space.claimed_pages.fetch_add(claim.pages, Ordering::AcqRel) + claim.pages
    } else {
        space.claimed_pages.load(Ordering::Acquire)
    };
    promise_frame(space, claim.frame);
    // From here on the claim is counted; dropping the guard (also on error) uncounts it.
    let held = Claimed { space, claim };
    let undo = space.undo_reserve.load(Ordering::Acquire);
    let imaged = space.undo_images.load(Ordering::Acquire).min(space.high_water()).min(MAX_IMAGED_PAGES as u32);
    let images = u64::from(imaged) * IMAGE_BYTES;
    space.wal.ensure_room(claimed_log + undo + images + LOG_FLOOR).map_err(|e| match e {
        Error::LogFull { database, reason } => Error::LogFull { database, reason: full_reason(space, reason) },
        e => e,
    })?;
    space.ensure_data_room(claimed_pages + space.rollback_pages.load(Ordering::Acquire))?;
    Ok(held)
}

/// Why the log cannot be reused, as `log_reuse_wait_desc` would say: a hold (a backup, the
/// log backup chain) if one keeps it, else an active transaction that has logged
/// something, else nothing but the next checkpoint.
fn full_reason(space: &Space, wal_reason: String) -> String {
    if matches!(wal_reason.as_str(), "LOG_BACKUP" | "ACTIVE_BACKUP_OR_RESTORE") {
        return wal_reason;
    }
    if space.txns.any_logged() { "ACTIVE_TRANSACTION" } else { "CHECKPOINT" }.into()
}

/// Whether `e` says a file is full (9002, 1105): a change that claimed room and found
/// none, which optional work (a merge, ghost cleanup) may simply skip.
pub fn is_full(e: &Error) -> bool {
    matches!(e, Error::LogFull { .. } | Error::DataFull { .. })
}
