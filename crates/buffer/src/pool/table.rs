//! The page table: one radix tree per registered file translating a page number to a frame,
//! the slot table that finds a file's radix from its `FileId` without a lock, and the 64
//! shard mutexes that serialise every change of a `(file, page)` translation.
//!
//! Readers on the hot path take no lock and trust nothing they read here: whatever frame
//! they find, they pin it and then check that it holds their page (README, "Page table").
//! What makes that sound is that the memory they walk is never freed while the pool lives:
//! radix nodes only grow, a discarded file's radix is kept (empty) for the next file, and
//! replaced slot tables are kept too. All of it is freed when the pool's shared state drops.

use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::FileId;
use crate::page::PageNo;

pub(super) const SHARDS: usize = 64;

pub(super) type Key = u64;

pub(super) fn key(file: FileId, no: PageNo) -> Key {
    (u64::from(file.0) << 32) | u64::from(no.raw())
}

pub(super) fn key_file(k: Key) -> u32 {
    (k >> 32) as u32
}

pub(super) fn key_page(k: Key) -> PageNo {
    PageNo::from_raw(k as u32)
}

/// A 64-bit finaliser with full avalanche (every input bit flips each output bit with
/// probability about 1/2), so that neighbouring pages land in different shards.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 31;
    h = h.wrapping_mul(0x7fb5_d329_728e_a185);
    h ^= h >> 27;
    h = h.wrapping_mul(0x81da_def4_bc2d_d44d);
    h ^= h >> 33;
    h
}

pub(super) fn shard_of(k: Key) -> usize {
    (mix(k) >> 58) as usize
}

/// One shard: the mutex that serialises changes to the translations of its keys, and its
/// miss counter (hits are counted per thread stripe, see `Proxy` in `pool.rs`).
#[derive(Default)]
pub(super) struct ShardState {
    pub misses: u64,
}

/// Padded to two cache lines so neighbouring shard mutexes do not false-share.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Shard(pub Mutex<ShardState>);

// ----- the per-file radix tree ------------------------------------------------------------------

/// Page-number bits resolved by a leaf and by each interior node.
const LEAF_BITS: u32 = 8;
const NODE_BITS: u32 = 10;
const LEAF_LEN: usize = 1 << LEAF_BITS;
const NODE_LEN: usize = 1 << NODE_BITS;
/// The low bits of the root word hold the tree's height (0 = empty); nodes are 64-aligned.
const HEIGHT_MASK: usize = 7;
/// A tree of this height covers every `u32` page number (8 + 3 * 10 >= 32).
const MAX_HEIGHT: usize = 4;

/// A leaf: 256 entries, each 0 (not resident) or frame index + 1. 1 KiB: a small
/// database's file costs one (thousands of them are open at once).
#[repr(C, align(64))]
struct Leaf([AtomicU32; LEAF_LEN]);

/// An interior node: 1024 children, leaves at height 2 and nodes above. 8 KiB.
#[repr(C, align(64))]
struct Node([AtomicPtr<u8>; NODE_LEN]);

fn new_leaf() -> *mut u8 {
    Box::into_raw(Box::new(Leaf([const { AtomicU32::new(0) }; LEAF_LEN]))) as *mut u8
}

fn new_node() -> *mut Node {
    Box::into_raw(Box::new(Node([const { AtomicPtr::new(ptr::null_mut()) }; NODE_LEN])))
}

/// How many page numbers a tree (or subtree) of this height covers.
fn span(height: usize) -> u64 {
    1u64 << (LEAF_BITS as usize + NODE_BITS as usize * (height - 1))
}

/// The child of a node at `height` (>= 2) on the way to page `no`.
fn child_index(no: u32, height: usize) -> usize {
    (u64::from(no) >> (LEAF_BITS as usize + NODE_BITS as usize * (height - 2))) as usize & (NODE_LEN - 1)
}

/// One file's translation table: page number -> frame index + 1 (0 = not resident).
///
/// A radix tree of 1 KiB leaves under 8 KiB interior nodes. It starts as one leaf and grows
/// upward (a new root whose first child is the old root) when a larger page number arrives,
/// so a small file costs one leaf and a lookup in a file below 256 K pages (2 GiB) is two
/// dependent loads after the root word. Nothing is freed before the tree drops.
///
/// Entries change only under the shard mutex of their key; lookups take no lock.
pub(super) struct Radix {
    /// The root node's address | its height.
    root: AtomicUsize,
}

impl Radix {
    pub fn new() -> Radix {
        Radix { root: AtomicUsize::new(0) }
    }

    /// The entry of page `no`, if the path to it exists.
    #[inline]
    pub fn entry(&self, no: PageNo) -> Option<&AtomicU32> {
        let no = no.raw();
        let root = self.root.load(Ordering::Acquire);
        let mut height = root & HEIGHT_MASK;
        if height == 0 || u64::from(no) >= span(height) {
            return None;
        }
        let mut p = (root & !HEIGHT_MASK) as *const u8;
        while height > 1 {
            // SAFETY: the levels above the leaves are `Node`s, initialised before they were
            // published (Release, read here with Acquire), and freed only when `self` drops.
            let node = unsafe { &*(p as *const Node) };
            p = node.0[child_index(no, height)].load(Ordering::Acquire);
            if p.is_null() {
                return None;
            }
            height -= 1;
        }
        // SAFETY: as above; the bottom level is a `Leaf`.
        let leaf = unsafe { &*(p as *const Leaf) };
        Some(&leaf.0[no as usize & (LEAF_LEN - 1)])
    }

    /// The frame holding page `no`, if resident.
    #[inline]
    pub fn get(&self, no: PageNo) -> Option<u32> {
        self.entry(no)?.load(Ordering::Acquire).checked_sub(1)
    }

    /// The entry of page `no`, creating the path to it. Concurrent callers (holding
    /// different shard mutexes) may race to add the same node: each installs with a
    /// compare-and-swap and the loser frees its unpublished copy.
    pub fn entry_or_grow(&self, no: PageNo) -> &AtomicU32 {
        let no = no.raw();
        loop {
            let root = self.root.load(Ordering::Acquire);
            let height = root & HEIGHT_MASK;
            if height != 0 && u64::from(no) < span(height) {
                break;
            }
            debug_assert!(height < MAX_HEIGHT);
            let new_root = if height == 0 {
                new_leaf() as usize | 1
            } else {
                let node = new_node();
                // SAFETY: just allocated, not yet shared.
                unsafe { (*node).0[0].store((root & !HEIGHT_MASK) as *mut u8, Ordering::Relaxed) };
                node as usize | (height + 1)
            };
            if self.root.compare_exchange(root, new_root, Ordering::AcqRel, Ordering::Acquire).is_err() {
                // SAFETY: never published. Only the new node itself is freed, not the old root
                // it points to.
                unsafe { free_one(new_root & !HEIGHT_MASK, new_root & HEIGHT_MASK) };
            }
        }
        let root = self.root.load(Ordering::Acquire);
        let mut height = root & HEIGHT_MASK;
        let mut p = (root & !HEIGHT_MASK) as *mut u8;
        while height > 1 {
            // SAFETY: see `entry`.
            let node = unsafe { &*(p as *const Node) };
            let slot = &node.0[child_index(no, height)];
            let mut child = slot.load(Ordering::Acquire);
            if child.is_null() {
                let fresh = if height == 2 { new_leaf() } else { new_node() as *mut u8 };
                match slot.compare_exchange(ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => child = fresh,
                    Err(winner) => {
                        // SAFETY: never published.
                        unsafe { free_one(fresh as usize, height - 1) };
                        child = winner;
                    }
                }
            }
            p = child;
            height -= 1;
        }
        // SAFETY: see `entry`.
        let leaf = unsafe { &*(p as *const Leaf) };
        &leaf.0[no as usize & (LEAF_LEN - 1)]
    }

    /// Every resident page and its frame, in page order. Without the shard mutexes this is
    /// a snapshot that may be stale by the time it returns.
    pub fn resident(&self) -> Vec<(PageNo, u32)> {
        let mut out = Vec::new();
        let root = self.root.load(Ordering::Acquire);
        if root & HEIGHT_MASK != 0 {
            collect(root & !HEIGHT_MASK, root & HEIGHT_MASK, 0, &mut out);
        }
        out
    }

    /// The first resident page at or after `from`, with its frame: a walk that skips
    /// absent subtrees (a file's own clock, `pool/quota.rs`).
    pub fn next_resident(&self, from: PageNo) -> Option<(PageNo, u32)> {
        let root = self.root.load(Ordering::Acquire);
        let height = root & HEIGHT_MASK;
        if height == 0 || u64::from(from.raw()) >= span(height) {
            return None;
        }
        first_from(root & !HEIGHT_MASK, height, 0, u64::from(from.raw()))
    }

    /// Bytes allocated for the tree's nodes.
    #[cfg(test)]
    pub fn footprint(&self) -> usize {
        fn walk(p: usize, height: usize) -> usize {
            if height == 1 {
                return std::mem::size_of::<Leaf>();
            }
            // SAFETY: see `entry`.
            let node = unsafe { &*(p as *const Node) };
            let children = node.0.iter().map(|c| c.load(Ordering::Acquire)).filter(|c| !c.is_null());
            std::mem::size_of::<Node>() + children.map(|c| walk(c as usize, height - 1)).sum::<usize>()
        }
        let root = self.root.load(Ordering::Acquire);
        if root & HEIGHT_MASK == 0 {
            0
        } else {
            walk(root & !HEIGHT_MASK, root & HEIGHT_MASK)
        }
    }
}

/// The first resident entry at or after page `from` in the subtree at `p` (of `height`,
/// covering pages from `base`).
fn first_from(p: usize, height: usize, base: u64, from: u64) -> Option<(PageNo, u32)> {
    if height == 1 {
        // SAFETY: see `Radix::entry`.
        let leaf = unsafe { &*(p as *const Leaf) };
        let start = from.saturating_sub(base) as usize;
        return leaf.0[start..].iter().enumerate().find_map(|(j, e)| {
            let i = e.load(Ordering::Acquire).checked_sub(1)?;
            Some((PageNo::from_raw((base + (start + j) as u64) as u32), i))
        });
    }
    // SAFETY: see `Radix::entry`.
    let node = unsafe { &*(p as *const Node) };
    let child_span = span(height - 1);
    let start = (from.saturating_sub(base) / child_span) as usize;
    node.0[start..].iter().enumerate().find_map(|(j, c)| {
        let c = c.load(Ordering::Acquire);
        let child_base = base + (start + j) as u64 * child_span;
        (!c.is_null()).then(|| first_from(c as usize, height - 1, child_base, from.max(child_base))).flatten()
    })
}

fn collect(p: usize, height: usize, base: u64, out: &mut Vec<(PageNo, u32)>) {
    if height == 1 {
        // SAFETY: see `Radix::entry`.
        let leaf = unsafe { &*(p as *const Leaf) };
        for (j, e) in leaf.0.iter().enumerate() {
            if let Some(i) = e.load(Ordering::Acquire).checked_sub(1) {
                out.push((PageNo::from_raw((base + j as u64) as u32), i));
            }
        }
        return;
    }
    // SAFETY: see `Radix::entry`.
    let node = unsafe { &*(p as *const Node) };
    for (j, c) in node.0.iter().enumerate() {
        let c = c.load(Ordering::Acquire);
        if !c.is_null() {
            collect(c as usize, height - 1, base + j as u64 * span(height - 1), out);
        }
    }
}

/// Frees one leaf (`height` 1) or interior node, not its children.
///
/// # Safety
/// `p` came from `new_leaf`/`new_node` with that height, and no one can reach it any more.
unsafe fn free_one(p: usize, height: usize) {
    // SAFETY: per the contract, these are the boxes the constructors leaked.
    unsafe {
        if height == 1 {
            drop(Box::from_raw(p as *mut Leaf));
        } else {
            drop(Box::from_raw(p as *mut Node));
        }
    }
}

/// Frees a subtree.
///
/// # Safety
/// As for `free_one`, for the whole subtree.
unsafe fn free_tree(p: usize, height: usize) {
    if height > 1 {
        // SAFETY: per the contract.
        let node = unsafe { &*(p as *const Node) };
        for c in node.0.iter() {
            let c = c.load(Ordering::Relaxed);
            if !c.is_null() {
                // SAFETY: a child of an unreachable subtree is unreachable.
                unsafe { free_tree(c as usize, height - 1) };
            }
        }
    }
    // SAFETY: per the contract.
    unsafe { free_one(p, height) };
}

impl Drop for Radix {
    fn drop(&mut self) {
        let root = *self.root.get_mut();
        if root & HEIGHT_MASK != 0 {
            // SAFETY: `&mut self`: no one else can reach the tree.
            unsafe { free_tree(root & !HEIGHT_MASK, root & HEIGHT_MASK) };
        }
    }
}

/// A radix owned by the pool's file registry. Registry radixes are never freed while the pool
/// lives (a discarded file's radix is emptied and kept for the next file), so the reference
/// stays valid for as long as the pool's shared state does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RadixRef(NonNull<Radix>);

// SAFETY: `Radix` is made of atomics and is `Sync`; the pointer is valid for the pool's life.
unsafe impl Send for RadixRef {}
// SAFETY: as above.
unsafe impl Sync for RadixRef {}

impl RadixRef {
    /// # Safety
    /// `r` must stay at its address until every `RadixRef` made from it is gone: it is boxed
    /// and owned by the registry, which keeps it until the pool drops.
    pub unsafe fn new(r: &Radix) -> RadixRef {
        RadixRef(NonNull::from(r))
    }

    pub fn get(&self) -> &Radix {
        // SAFETY: see `new`.
        unsafe { self.0.as_ref() }
    }

    fn as_ptr(self) -> *mut Radix {
        self.0.as_ptr()
    }
}

// ----- the slot table: FileId -> radix without a lock ---------------------------------------------

/// One slot: the `FileId` registered in it (0 = none) and that file's radix.
#[derive(Default)]
pub(super) struct FileSlot {
    id: AtomicU32,
    radix: AtomicPtr<Radix>,
}

/// A power-of-two table of slots indexed by `FileId & (len - 1)`. A registered file always
/// holds its own slot in the current table: registration skips ids whose slot is taken, and
/// the table doubles (old tables are kept, see the module comment) before it is half full.
pub(super) struct SlotTable {
    slots: Box<[FileSlot]>,
}

impl SlotTable {
    pub fn new(len: usize) -> SlotTable {
        debug_assert!(len.is_power_of_two());
        SlotTable { slots: (0..len).map(|_| FileSlot::default()).collect() }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    fn slot(&self, id: u32) -> &FileSlot {
        &self.slots[id as usize & (self.slots.len() - 1)]
    }

    /// Whether `id`'s slot is free. Registry write lock held.
    pub fn is_free(&self, id: u32) -> bool {
        self.slot(id).id.load(Ordering::Relaxed) == 0
    }

    /// Puts `id` in its slot. Registry write lock held; the slot is free.
    pub fn set(&self, id: u32, radix: RadixRef) {
        let s = self.slot(id);
        debug_assert_eq!(s.id.load(Ordering::Relaxed), 0);
        s.radix.store(radix.as_ptr(), Ordering::Relaxed);
        s.id.store(id, Ordering::Release);
    }

    /// Empties `id`'s slot. Registry write lock held.
    pub fn clear(&self, id: u32) {
        let s = self.slot(id);
        if s.id.load(Ordering::Relaxed) == id {
            s.id.store(0, Ordering::Release);
            s.radix.store(ptr::null_mut(), Ordering::Relaxed);
        }
    }

    /// The radix of file `id`, if it holds its slot. Lock-free and possibly stale (the file
    /// may be discarded, and its radix reused, the moment after; a racing reader may even
    /// pair the id with the next file's radix): callers validate what they find through it.
    /// The radix is valid memory for as long as the registry is.
    #[inline]
    pub fn radix(&self, id: u32) -> Option<&Radix> {
        let s = self.slot(id);
        if s.id.load(Ordering::Acquire) != id {
            return None;
        }
        let r = s.radix.load(Ordering::Relaxed);
        // SAFETY: slot radixes are registry radixes (see `RadixRef`), which the registry keeps
        // as long as it keeps this table.
        (!r.is_null()).then(|| unsafe { &*r })
    }

    /// Every occupied slot: `(id, radix)` (for the invariant checker).
    pub fn occupied(&self) -> Vec<(u32, *const Radix)> {
        self.slots
            .iter()
            .filter(|s| s.id.load(Ordering::Relaxed) != 0)
            .map(|s| (s.id.load(Ordering::Relaxed), s.radix.load(Ordering::Relaxed) as *const Radix))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(n: u32) -> PageNo {
        PageNo::from_raw(n)
    }

    #[test]
    fn keys_round_trip_and_spread_over_shards() {
        let k = key(FileId(7), pg(123_456));
        assert_eq!((key_file(k), key_page(k)), (7, pg(123_456)));
        let mut counts = [0usize; SHARDS];
        for no in 0..64_000 {
            counts[shard_of(key(FileId(1), pg(no)))] += 1;
        }
        assert!(counts.iter().all(|&c| (700..1300).contains(&c)), "{counts:?}");
    }

    #[test]
    fn radix_grows_upward_and_keeps_entries() {
        let r = Radix::new();
        assert_eq!((r.get(pg(0)), r.get(pg(u32::MAX))), (None, None));
        assert!(r.entry(pg(5)).is_none() && r.resident().is_empty());
        r.entry_or_grow(pg(5)).store(11, Ordering::Relaxed);
        assert_eq!(r.footprint(), 1024, "a small file costs one leaf");
        assert_eq!((r.get(pg(5)), r.get(pg(6)), r.get(pg(256))), (Some(10), None, None));
        let pages = [0, 255, 256, 1023, 1024, 70_000, 1 << 20, (1 << 30) + 3, u32::MAX - 1, u32::MAX];
        for (j, &no) in pages.iter().enumerate() {
            r.entry_or_grow(pg(no)).store(100 + j as u32, Ordering::Relaxed);
        }
        assert_eq!(r.get(pg(5)), Some(10), "growing keeps the old root as the first child");
        for (j, &no) in pages.iter().enumerate() {
            assert_eq!(r.get(pg(no)), Some(99 + j as u32), "page {no}");
        }
        assert_eq!(r.root.load(Ordering::Relaxed) & HEIGHT_MASK, MAX_HEIGHT);
        let mut want: Vec<(PageNo, u32)> = pages.iter().enumerate().map(|(j, &no)| (pg(no), 99 + j as u32)).collect();
        want.push((pg(5), 10));
        want.sort_unstable();
        assert_eq!(r.resident(), want);
        // Walking from any page finds the next resident one, skipping absent subtrees.
        let mut walked = Vec::new();
        let mut at = 0;
        while let Some((no, i)) = r.next_resident(pg(at)) {
            walked.push((no, i));
            match no.checked_add(1) {
                Some(n) => at = n.raw(),
                None => break,
            }
        }
        assert_eq!(walked, want, "a walk with next_resident visits what resident() lists");
        assert_eq!(r.next_resident(pg(6)), Some((pg(255), 100)));
        assert_eq!(r.next_resident(pg(257)), Some((pg(1023), 102)));
        assert_eq!(r.next_resident(pg(70_001)), Some((pg(1 << 20), 105)));
        assert_eq!(r.next_resident(pg((1 << 30) + 4)), Some((pg(u32::MAX - 1), 107)));
        r.entry(pg(70_000)).unwrap().store(0, Ordering::Relaxed);
        assert_eq!(r.get(pg(70_000)), None);
        assert_eq!(r.resident().len(), want.len() - 1);
        assert_eq!(r.next_resident(pg(1025)), Some((pg(1 << 20), 105)));
        assert_eq!(Radix::new().next_resident(pg(0)), None);
    }

    #[test]
    fn radix_concurrent_growth_loses_nothing() {
        let r = Radix::new();
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let r = &r;
                s.spawn(move || {
                    for j in 0..20_000u32 {
                        let no = j.wrapping_mul(2_654_435_761).rotate_left(t * 8) | t;
                        r.entry_or_grow(pg(no)).store(no % 1000 + 1, Ordering::Relaxed);
                    }
                });
            }
        });
        for t in 0..4u32 {
            for j in 0..20_000u32 {
                let no = j.wrapping_mul(2_654_435_761).rotate_left(t * 8) | t;
                assert_eq!(r.get(pg(no)), Some(no % 1000), "page {no}");
            }
        }
    }

    #[test]
    fn slot_table_finds_only_its_ids() {
        let t = SlotTable::new(8);
        let (a, b) = (Radix::new(), Radix::new());
        // SAFETY: both outlive the table's use below.
        let (ra, rb) = unsafe { (RadixRef::new(&a), RadixRef::new(&b)) };
        assert!(t.is_free(3) && t.radix(3).is_none());
        t.set(3, ra);
        assert!(!t.is_free(11), "11 shares slot 3");
        assert!(t.radix(11).is_none());
        assert!(std::ptr::eq(t.radix(3).unwrap(), &a));
        t.clear(11);
        assert!(t.radix(3).is_some(), "clearing another id leaves the slot alone");
        t.clear(3);
        t.set(11, rb);
        assert!(t.radix(3).is_none() && std::ptr::eq(t.radix(11).unwrap(), &b));
        assert_eq!(t.occupied().len(), 1);
        // An emptied slot reads as id 0; the invalid FileId 0 must still find nothing.
        t.set(8, ra);
        t.clear(8);
        assert!(t.radix(0).is_none() && t.radix(8).is_none());
    }
}
