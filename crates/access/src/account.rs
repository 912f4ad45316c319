//! Page accounts: the pages of a set of trees counted against someone's quota (tempdb's
//! per-database limit, `MAX_TEMPDB_MB`). A tree is charged to at most one account, from
//! when it is attached to it; every page its splits allocate and its merges free moves
//! the count, and when the tree is dropped or emptied the account gets back everything
//! the tree was charged. So the count cannot drift past a tree's life, even where a page
//! is freed by a path that does not charge (a rolled-back bulk load's pages).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use tessera_buffer::page::PageNo;
use tessera_errors::Result;

use crate::btree;
use crate::space::Space;
use crate::txn::TreeMeta;

/// Pages charged to one quota.
#[derive(Debug, Default)]
pub struct PageAccount {
    pages: AtomicI64,
}

impl PageAccount {
    /// Pages held by the trees charged to it.
    pub fn pages(&self) -> u64 {
        self.pages.load(Ordering::Relaxed).max(0) as u64
    }

    fn charge(&self, pages: i64) {
        self.pages.fetch_add(pages, Ordering::Relaxed);
    }
}

/// A tree's charge: its account and the pages it has charged there.
#[derive(Debug)]
pub(crate) struct TreeCharge {
    account: Arc<PageAccount>,
    pages: AtomicI64,
}

/// The body of [`Space::charge_tree_to`].
pub(crate) fn charge_tree_to(space: &Space, root: PageNo, account: Arc<PageAccount>) -> Result<()> {
    let meta = space.tree(root);
    let pages = {
        let _latch = meta.latch.read();
        btree::tree_pages(space, root)?.len() as i64
    };
    let mut slot = meta.charge.lock();
    if slot.is_none() {
        *slot = Some(TreeCharge { account: account.clone(), pages: AtomicI64::new(pages) });
        account.charge(pages);
        space.has_charged_trees.store(true, Ordering::Release);
    }
    Ok(())
}

/// The in-memory state of the tree rooted at `root`, when trees of `space` may be
/// charged at all: one load for a space none of whose trees is (no map lookup).
fn charged_space_tree(space: &Space, root: PageNo) -> Option<Arc<TreeMeta>> {
    if !space.has_charged_trees.load(Ordering::Acquire) {
        return None;
    }
    space.trees.read().get(&root).cloned()
}

/// Counts `pages` allocated (or, negative, freed) by the tree rooted at `root` against its
/// account, if it has one.
pub(crate) fn charge_pages(space: &Space, root: PageNo, pages: i64) {
    if pages == 0 {
        return;
    }
    let Some(meta) = charged_space_tree(space, root) else { return };
    let slot = meta.charge.lock();
    if let Some(charge) = &*slot {
        charge.pages.fetch_add(pages, Ordering::Relaxed);
        charge.account.charge(pages);
    }
}

/// The tree rooted at `root` now holds `pages` (1 once emptied; 0 once freed, when it
/// also leaves its account: the root page may start another tree, which the in-memory
/// state of trees, kept by root page, would otherwise charge there too).
pub(crate) fn settle_tree(space: &Space, root: PageNo, pages: i64) {
    let Some(meta) = charged_space_tree(space, root) else { return };
    let mut slot = meta.charge.lock();
    if let Some(charge) = &*slot {
        let before = charge.pages.swap(pages, Ordering::Relaxed);
        charge.account.charge(pages - before);
    }
    if pages == 0 {
        *slot = None;
    }
}
