//! The 8 KiB page and the header every page starts with.
//!
//! ```text
//! offset size field
//!      0    4 checksum   crc32c of bytes 4..8192, written just before the page goes to disk
//!      4    4 page_no    the page's own number in its file (catches misdirected writes)
//!      8    4 object_id  the root page of the tree that owns the page; 0 for the file
//!                        header, allocation maps and free pages
//!     12    1 page_type  see [`PageType`]
//!     13    1 level      B+tree level, 0 = leaf
//!     14    2 flags
//!     16    8 lsn        LSN of the last log record applied to this page
//!     24    4 prev       left sibling (0 = none)
//!     28    4 next       right sibling (0 = none)
//!     32    2 slot_count
//!     34    2 heap_start lowest byte used by the record heap
//!     36    2 frag_bytes garbage bytes inside the heap
//!     38    2 reserved
//!     40    4 aux        leftmost child of an internal page, or type-specific
//!     44    4 reserved
//! ```
//! A page of all zero bytes is a valid, never-written page.

pub const PAGE_SIZE: usize = 8192;
pub const HEADER_SIZE: usize = 48;
/// Header flag: the page's contents were written without log records (a minimally
/// logged bulk load), so its next logged change must log a full image of it.
pub const FLAG_UNLOGGED: u16 = 1;

/// A page's number in its file: its byte offset divided by [`PAGE_SIZE`]. Page 0 is the
/// file's header page, which no link, root or hint ever names, so [`PageNo::NONE`] (0) in
/// one of those means "no page".
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct PageNo(u32);

impl PageNo {
    pub const NONE: PageNo = PageNo(0);

    /// The page stored as `raw` (a page header, a log record, a map).
    pub const fn from_raw(raw: u32) -> PageNo {
        PageNo(raw)
    }

    /// The form it is stored in.
    pub const fn raw(self) -> u32 {
        self.0
    }

    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// Its position in a file, in bytes.
    pub const fn byte_offset(self) -> u64 {
        self.0 as u64 * PAGE_SIZE as u64
    }

    /// The page `n` pages further on, if there is one.
    pub fn checked_add(self, n: u32) -> Option<PageNo> {
        self.0.checked_add(n).map(PageNo)
    }

    /// The page `n` pages further on, or the last page there can be.
    pub fn saturating_add(self, n: u32) -> PageNo {
        PageNo(self.0.saturating_add(n))
    }

    /// Pages `self`, `self + 1`, … to the last there can be.
    pub fn onward(self) -> impl Iterator<Item = PageNo> {
        (self.0..=u32::MAX).map(PageNo)
    }

    /// Pages `self`, `self + 1`, … up to but not including `end`.
    pub fn up_to(self, end: PageNo) -> impl DoubleEndedIterator<Item = PageNo> + ExactSizeIterator {
        (self.0..end.0).map(PageNo)
    }
}

/// The page `n` pages further on.
impl std::ops::Add<u32> for PageNo {
    type Output = PageNo;
    fn add(self, n: u32) -> PageNo {
        PageNo(self.0.checked_add(n).expect("page number overflow"))
    }
}

impl std::ops::AddAssign<u32> for PageNo {
    fn add_assign(&mut self, n: u32) {
        *self = *self + n;
    }
}

/// The page `n` pages before.
impl std::ops::Sub<u32> for PageNo {
    type Output = PageNo;
    fn sub(self, n: u32) -> PageNo {
        PageNo(self.0.checked_sub(n).expect("page number underflow"))
    }
}

/// How many pages `other` is before `self`.
impl std::ops::Sub<PageNo> for PageNo {
    type Output = u32;
    fn sub(self, other: PageNo) -> u32 {
        self.0.checked_sub(other.0).expect("page distance underflow")
    }
}

impl std::fmt::Display for PageNo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A log sequence number: `(VLF sequence << 32) | byte offset inside the VLF`, strictly
/// increasing in log order; [`Lsn::NONE`] (0) means "none". Defined here, below the log,
/// because a page header carries the LSN of its last change and the pool obeys the WAL
/// rule with it; `tessera_log` re-exports it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Lsn(u64);

impl Lsn {
    pub const NONE: Lsn = Lsn(0);
    /// The largest LSN: "everything" as a bound.
    pub const MAX: Lsn = Lsn(u64::MAX);

    /// The LSN at `offset` bytes into the VLF with sequence number `seq`.
    pub const fn new(seq: u32, offset: u32) -> Lsn {
        Lsn(((seq as u64) << 32) | offset as u64)
    }

    /// The LSN stored as `raw` (a page header, a log record, a backup header).
    pub const fn from_raw(raw: u64) -> Lsn {
        Lsn(raw)
    }

    /// The form it is stored in.
    pub const fn raw(self) -> u64 {
        self.0
    }

    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The sequence number of its VLF.
    pub const fn seq(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Its byte offset inside its VLF.
    pub const fn offset(self) -> u32 {
        self.0 as u32
    }

    /// The position just before this one: "every record that starts before `self`" as an
    /// inclusive bound.
    pub fn just_before(self) -> Lsn {
        assert!(self.0 > 0, "no LSN precedes NONE");
        Lsn(self.0 - 1)
    }
}

impl std::fmt::Display for Lsn {
    /// `seq:offset`, the VLF's sequence number and the byte offset in it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.seq(), self.offset())
    }
}

const OFF_CHECKSUM: usize = 0;
const OFF_PAGE_NO: usize = 4;
const OFF_OBJECT: usize = 8;
const OFF_TYPE: usize = 12;
const OFF_LEVEL: usize = 13;
const OFF_FLAGS: usize = 14;
const OFF_LSN: usize = 16;
const OFF_PREV: usize = 24;
const OFF_NEXT: usize = 28;
const OFF_SLOTS: usize = 32;
const OFF_HEAP: usize = 34;
const OFF_FRAG: usize = 36;
const OFF_AUX: usize = 40;

/// What a page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageType {
    Free = 0,
    FileHeader = 1,
    AllocMap = 2,
    BTreeLeaf = 3,
    BTreeInternal = 4,
}

impl PageType {
    pub fn from_u8(v: u8) -> Option<PageType> {
        Some(match v {
            0 => PageType::Free,
            1 => PageType::FileHeader,
            2 => PageType::AllocMap,
            3 => PageType::BTreeLeaf,
            4 => PageType::BTreeInternal,
            _ => return None,
        })
    }
}

fn get_u16(p: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([p[off], p[off + 1]])
}
fn get_u32(p: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(p[off..off + 4].try_into().unwrap())
}
fn put_u16(p: &mut [u8], off: usize, v: u16) {
    p[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(p: &mut [u8], off: usize, v: u32) {
    p[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Runs `(first, count)` of consecutive page numbers in ascending `pages`.
pub fn runs(pages: &[PageNo]) -> Vec<(PageNo, u32)> {
    debug_assert!(pages.windows(2).all(|w| w[0] < w[1]), "pages ascend");
    let mut runs: Vec<(PageNo, u32)> = Vec::new();
    for &p in pages {
        match runs.last_mut() {
            Some((first, count)) if *first + *count == p => *count += 1,
            _ => runs.push((p, 1)),
        }
    }
    runs
}

/// Hints the CPU to load the cache line at `p` (a read, kept in all cache levels): for
/// code about to look at a page's header or records, so that its cache misses overlap.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching never faults and does not change memory.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(p as *const i8, _MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

pub fn checksum(p: &[u8]) -> u32 {
    get_u32(p, OFF_CHECKSUM)
}
pub fn page_no(p: &[u8]) -> PageNo {
    PageNo::from_raw(get_u32(p, OFF_PAGE_NO))
}
pub fn set_page_no(p: &mut [u8], v: PageNo) {
    put_u32(p, OFF_PAGE_NO, v.raw())
}
pub fn object_id(p: &[u8]) -> u32 {
    get_u32(p, OFF_OBJECT)
}
pub fn set_object_id(p: &mut [u8], v: u32) {
    put_u32(p, OFF_OBJECT, v)
}
pub fn page_type(p: &[u8]) -> Option<PageType> {
    PageType::from_u8(p[OFF_TYPE])
}
pub fn set_page_type(p: &mut [u8], t: PageType) {
    p[OFF_TYPE] = t as u8
}
pub fn level(p: &[u8]) -> u8 {
    p[OFF_LEVEL]
}
pub fn set_level(p: &mut [u8], v: u8) {
    p[OFF_LEVEL] = v
}
pub fn flags(p: &[u8]) -> u16 {
    get_u16(p, OFF_FLAGS)
}
pub fn set_flags(p: &mut [u8], v: u16) {
    put_u16(p, OFF_FLAGS, v)
}
pub fn lsn(p: &[u8]) -> Lsn {
    Lsn(u64::from_le_bytes(p[OFF_LSN..OFF_LSN + 8].try_into().unwrap()))
}
pub fn set_lsn(p: &mut [u8], v: Lsn) {
    p[OFF_LSN..OFF_LSN + 8].copy_from_slice(&v.0.to_le_bytes())
}
pub fn prev(p: &[u8]) -> PageNo {
    PageNo::from_raw(get_u32(p, OFF_PREV))
}
pub fn set_prev(p: &mut [u8], v: PageNo) {
    put_u32(p, OFF_PREV, v.raw())
}
pub fn next(p: &[u8]) -> PageNo {
    PageNo::from_raw(get_u32(p, OFF_NEXT))
}
pub fn set_next(p: &mut [u8], v: PageNo) {
    put_u32(p, OFF_NEXT, v.raw())
}
pub fn slot_count(p: &[u8]) -> u16 {
    get_u16(p, OFF_SLOTS)
}
pub fn set_slot_count(p: &mut [u8], v: u16) {
    put_u16(p, OFF_SLOTS, v)
}
pub fn heap_start(p: &[u8]) -> u16 {
    get_u16(p, OFF_HEAP)
}
pub fn set_heap_start(p: &mut [u8], v: u16) {
    put_u16(p, OFF_HEAP, v)
}
pub fn frag_bytes(p: &[u8]) -> u16 {
    get_u16(p, OFF_FRAG)
}
pub fn set_frag_bytes(p: &mut [u8], v: u16) {
    put_u16(p, OFF_FRAG, v)
}
pub fn aux(p: &[u8]) -> u32 {
    get_u32(p, OFF_AUX)
}
pub fn set_aux(p: &mut [u8], v: u32) {
    put_u32(p, OFF_AUX, v)
}

/// Computes the checksum of a page image (bytes 4..PAGE_SIZE).
pub fn compute_checksum(p: &[u8]) -> u32 {
    debug_assert_eq!(p.len(), PAGE_SIZE);
    crc32c::crc32c(&p[4..])
}

/// Stamps the checksum into a page image about to be written.
pub fn seal(p: &mut [u8]) {
    let c = compute_checksum(p);
    put_u32(p, OFF_CHECKSUM, c);
}

/// Why a page image read from disk cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageDamage {
    Checksum { expected: u32, actual: u32 },
    WrongPage { expected: PageNo, actual: PageNo },
}

impl std::fmt::Display for PageDamage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageDamage::Checksum { expected, actual } => {
                write!(f, "incorrect checksum (expected: {expected:#010x}; actual: {actual:#010x})")
            }
            PageDamage::WrongPage { expected, actual } => {
                write!(f, "incorrect pageid (expected 1:{expected}; actual 1:{actual})")
            }
        }
    }
}

/// Verifies a page image just read from disk as page `no`.
/// An all-zero page (allocated, never written) is accepted.
pub fn verify(p: &[u8], no: PageNo) -> Result<(), PageDamage> {
    debug_assert_eq!(p.len(), PAGE_SIZE);
    let stored = checksum(p);
    let actual = compute_checksum(p);
    if stored != actual {
        if stored == 0 && p.iter().all(|&b| b == 0) {
            return Ok(());
        }
        return Err(PageDamage::Checksum { expected: stored, actual });
    }
    if page_no(p) != no {
        return Err(PageDamage::WrongPage { expected: no, actual: page_no(p) });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_verify_and_detect_flips() {
        let mut p = vec![0u8; PAGE_SIZE];
        assert!(verify(&p, PageNo::from_raw(5)).is_ok(), "zero page is a valid unwritten page");
        set_page_no(&mut p, PageNo::from_raw(5));
        set_lsn(&mut p, Lsn::from_raw(77));
        set_page_type(&mut p, PageType::BTreeLeaf);
        p[4000] = 0xAB;
        seal(&mut p);
        assert!(verify(&p, PageNo::from_raw(5)).is_ok());
        assert!(matches!(verify(&p, PageNo::from_raw(6)), Err(PageDamage::WrongPage { .. })));
        p[4001] ^= 1;
        assert!(matches!(verify(&p, PageNo::from_raw(5)), Err(PageDamage::Checksum { .. })));
    }
}
