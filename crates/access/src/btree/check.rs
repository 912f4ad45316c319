//! The structural checker of one tree (the future DBCC CHECKDB's per-tree part).

use tessera_buffer::page::{self, PageNo, PageType};
use tessera_errors::Result;

use super::{child_at, damaged, internal_key, is_ghost, is_leaf, leaf_key, read};
use crate::slotted;
use crate::space::Space;

/// Counts and statistics used by the checker and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    pub depth: usize,
    pub leaf_pages: usize,
    pub internal_pages: usize,
    pub records: usize,
    pub ghosts: usize,
}

/// A page the checker still has to visit: the key range its parent allows and the
/// level it must have (None for the root).
struct Visit {
    page: PageNo,
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
    level: Option<u8>,
}

/// Structural check of one tree: page types and levels, record order, keys inside
/// their parent's bounds, slotted-page consistency, leaf sibling links, equal depth.
/// Returns statistics and the pages the tree uses.
pub fn check(space: &Space, root: PageNo) -> Result<(TreeStats, Vec<PageNo>)> {
    let mut stats = TreeStats::default();
    let mut pages = Vec::new();
    let mut leaves: Vec<(PageNo, PageNo, PageNo)> = Vec::new();
    let mut stack: Vec<Visit> = vec![Visit { page: root, lo: None, hi: None, level: None }];
    let mut leaf_depth: Option<usize> = None;
    let mut depth_of = std::collections::HashMap::new();
    depth_of.insert(root, 1usize);
    while let Some(Visit { page: no, lo, hi, level: want_level }) = stack.pop() {
        let depth = depth_of[&no];
        pages.push(no);
        let g = read(space, no)?;
        let bad = |what: String| damaged(space, no, &what);
        slotted::check(&g).map_err(bad)?;
        if page::object_id(&g) != root.raw() {
            return Err(bad(format!("page belongs to object {} not {root}", page::object_id(&g))));
        }
        let level = page::level(&g);
        if let Some(w) = want_level {
            if level != w {
                return Err(bad(format!("level {level}, expected {w}")));
            }
        }
        let leaf = is_leaf(&g);
        let key_of: fn(&[u8]) -> &[u8] = if leaf { leaf_key } else { internal_key };
        let n = slotted::count(&g);
        for i in 0..n {
            let k = key_of(slotted::record(&g, i));
            if i > 0 && key_of(slotted::record(&g, i - 1)) >= k {
                return Err(bad(format!("keys out of order at slot {i}")));
            }
            if lo.as_ref().is_some_and(|l| k < l.as_slice()) || hi.as_ref().is_some_and(|h| k >= h.as_slice()) {
                return Err(bad(format!("key at slot {i} outside the parent's range")));
            }
        }
        if leaf {
            if level != 0 {
                return Err(bad("leaf with non-zero level".into()));
            }
            stats.leaf_pages += 1;
            stats.records += n;
            stats.ghosts += slotted::records(&g).filter(|r| is_ghost(r)).count();
            leaves.push((no, page::prev(&g), page::next(&g)));
            match leaf_depth {
                None => leaf_depth = Some(depth),
                Some(d) if d != depth => return Err(bad("leaves at different depths".into())),
                _ => {}
            }
        } else {
            if page::page_type(&g) != Some(PageType::BTreeInternal) || level == 0 {
                return Err(bad("not an internal page".into()));
            }
            stats.internal_pages += 1;
            let children: Vec<Visit> = (-1..n as isize)
                .map(|i| {
                    let clo =
                        if i < 0 { lo.clone() } else { Some(internal_key(slotted::record(&g, i as usize)).to_vec()) };
                    let chi = if i + 1 < n as isize {
                        Some(internal_key(slotted::record(&g, (i + 1) as usize)).to_vec())
                    } else {
                        hi.clone()
                    };
                    Visit { page: child_at(&g, i), lo: clo, hi: chi, level: Some(level - 1) }
                })
                .collect();
            // Push right to left so leaves are visited left to right.
            for child in children.into_iter().rev() {
                if child.page.is_none() || depth_of.insert(child.page, depth + 1).is_some() {
                    return Err(bad(format!("child {} is null or referenced twice", child.page)));
                }
                stack.push(child);
            }
        }
    }
    stats.depth = leaf_depth.unwrap_or(1);
    for (i, &(no, prev, next)) in leaves.iter().enumerate() {
        let want_prev = if i == 0 { PageNo::NONE } else { leaves[i - 1].0 };
        let want_next = if i + 1 == leaves.len() { PageNo::NONE } else { leaves[i + 1].0 };
        if prev != want_prev || next != want_next {
            return Err(damaged(space, no, &format!("sibling links {prev}/{next}, expected {want_prev}/{want_next}")));
        }
    }
    Ok((stats, pages))
}
