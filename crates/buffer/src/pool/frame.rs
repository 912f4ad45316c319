//! Frame descriptors: the per-frame state word, dirty word, key and content latch.

use std::sync::atomic::{AtomicU32, AtomicU64};

use parking_lot::lock_api::RawRwLock as _;

/// Bits 0..24 of the state word: the pin count.
pub(super) const PIN_MASK: u64 = (1 << 24) - 1;
/// Bits 24..28: the usage (clock) count, 0..=MAX_USAGE.
pub(super) const USAGE_SHIFT: u32 = 24;
const USAGE_MASK: u64 = 0xF << USAGE_SHIFT;
/// Saturation point of the usage count.
pub(super) const MAX_USAGE: u64 = 5;
/// Bits 28..31: the frame's [`Kind`].
const KIND_SHIFT: u32 = 28;
const KIND_MASK: u64 = 0x7 << KIND_SHIFT;

/// Dirty word, bit 0: the frame differs from the page on disk.
pub(super) const DIRTY: u64 = 1;
/// Dirty word, bit 1: a copy of the frame is being written; no second write may start.
pub(super) const WRITING: u64 = 2;
/// Dirty word, bits 2..64: modification generation, bumped by every `mark_dirty`.
pub(super) const GEN_SHIFT: u32 = 2;

/// A key no page can have (file ids never reach `u32::MAX`).
pub(super) const NO_KEY: u64 = u64::MAX;
/// End of the intrusive free list.
pub(super) const NIL: u32 = u32::MAX;

/// What a frame is doing. See the README for the transitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Holds nothing; on the free list, or above the high-water mark, or retired beyond the limit.
    Free = 0,
    /// Claimed by exactly one thread (allocator, evictor or reclaimer); not in the page table.
    Owned = 1,
    /// In the page table, exclusively latched by the thread reading it from disk.
    Loading = 2,
    /// In the page table with valid contents.
    Valid = 3,
    /// Removed from the page table while pinned (failed read, discarded file);
    /// freed by whoever drops the last pin.
    Orphan = 4,
}

/// A decoded copy of a state word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct State(pub u64);

impl State {
    pub fn new(kind: Kind, pins: u64, usage: u64) -> State {
        assert!(pins <= PIN_MASK && usage <= MAX_USAGE);
        State(pins | (usage << USAGE_SHIFT) | ((kind as u64) << KIND_SHIFT))
    }
    pub fn pins(self) -> u64 {
        self.0 & PIN_MASK
    }
    pub fn usage(self) -> u64 {
        (self.0 & USAGE_MASK) >> USAGE_SHIFT
    }
    pub fn kind(self) -> Kind {
        match (self.0 & KIND_MASK) >> KIND_SHIFT {
            0 => Kind::Free,
            1 => Kind::Owned,
            2 => Kind::Loading,
            3 => Kind::Valid,
            4 => Kind::Orphan,
            k => unreachable!("corrupt frame state kind {k}"),
        }
    }
    pub fn with_kind(self, kind: Kind) -> State {
        State((self.0 & !KIND_MASK) | ((kind as u64) << KIND_SHIFT))
    }
}

/// One frame descriptor. Descriptors live in their own reserved mapping, one per frame,
/// written in place the first time the frame is handed out; 64 bytes so that two frames'
/// pin counts never share a cache line.
#[repr(C, align(64))]
pub(super) struct Frame {
    /// Pin count, usage count and kind; see [`State`].
    pub state: AtomicU64,
    /// [`DIRTY`], [`WRITING`] and the modification generation.
    pub dirty: AtomicU64,
    /// `(file << 32) | page` of the page held, or [`NO_KEY`].
    pub key: AtomicU64,
    /// Next frame on the free list (meaningful only while on it, guarded by the free-list mutex).
    pub next_free: AtomicU32,
    /// The content latch: shared for readers and writers-to-disk, exclusive for modifiers and loaders.
    pub latch: parking_lot::RawRwLock,
}

impl Frame {
    pub fn new() -> Frame {
        Frame {
            state: AtomicU64::new(State::new(Kind::Free, 0, 0).0),
            dirty: AtomicU64::new(0),
            key: AtomicU64::new(NO_KEY),
            next_free: AtomicU32::new(NIL),
            latch: parking_lot::RawRwLock::INIT,
        }
    }
}

const _: () = assert!(std::mem::size_of::<Frame>() == 64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_word_round_trips() {
        let s = State::new(Kind::Valid, 3, 5);
        assert_eq!((s.kind(), s.pins(), s.usage()), (Kind::Valid, 3, 5));
        let t = s.with_kind(Kind::Orphan);
        assert_eq!((t.kind(), t.pins(), t.usage()), (Kind::Orphan, 3, 5));
        assert_eq!(State(s.0 + 1).pins(), 4);
        assert_eq!(State::new(Kind::Free, 0, 0).0, 0);
    }
}
