//! Slotted-page record layout, on a raw page image of [`PAGE_SIZE`] bytes.
//!
//! ```text
//! 0            48                      heap_start                       8192
//! | header     | slot 0 | slot 1 | ... |   free gap   | rec 1 |~~| rec 0 |
//!              '--- grows right --->                  <--- grows left ---'
//! ```
//!
//! * The slot directory starts right after the page header ([`HEADER_SIZE`]); each slot is 4
//!   bytes: record offset (u16 LE) and record length (u16 LE). Slots are kept in the caller's
//!   order (key order for B+tree pages): inserting at `idx` shifts slots `idx..` right.
//! * Records live in a heap that grows down from the end of the page. `heap_start` (page header)
//!   is the lowest heap byte in use; everything between the end of the directory and
//!   `heap_start` is the contiguous free gap.
//! * Removing or shrinking a record leaves garbage inside the heap; `frag_bytes` counts it. When
//!   an insert (or a growing replace) needs the fragmented bytes, the page is compacted first.
//! * Invariant (checked by [`check`]): the sum of the record lengths plus `frag_bytes` equals
//!   `PAGE_SIZE - heap_start`, records lie inside the heap and do not overlap.
//! * A zero-length record is allowed; its slot offset is always `PAGE_SIZE`.
//! * An all-zero page (allocated, never written) reads as an empty page: a stored `heap_start`
//!   of 0 is taken to mean `PAGE_SIZE`.
//!
//! Index arguments out of range are caller bugs and panic. The read functions trust the page
//! (callers validate pages read from disk with [`check`] where it matters); slicing keeps even a
//! corrupt page from reading outside the page image.

use std::cmp::Ordering;

use tessera_buffer::page::{self, PageNo, PageType, HEADER_SIZE, PAGE_SIZE};

/// Bytes per slot directory entry.
pub const SLOT_SIZE: usize = 4;

/// The largest record a page can hold (a page with a single slot).
pub const MAX_RECORD: usize = PAGE_SIZE - HEADER_SIZE - SLOT_SIZE;

/// Initializes `page` as an empty slotted page: zeroes it and sets the header.
pub fn init(page: &mut [u8], page_no: PageNo, object_id: u32, ty: PageType, level: u8) {
    assert_eq!(page.len(), PAGE_SIZE);
    page.fill(0);
    page::set_page_no(page, page_no);
    page::set_object_id(page, object_id);
    page::set_page_type(page, ty);
    page::set_level(page, level);
    page::set_slot_count(page, 0);
    page::set_heap_start(page, PAGE_SIZE as u16);
    page::set_frag_bytes(page, 0);
}

#[inline]
fn slot_pos(idx: usize) -> usize {
    HEADER_SIZE + idx * SLOT_SIZE
}

#[inline]
fn heap_start(page: &[u8]) -> usize {
    match page::heap_start(page) as usize {
        0 => PAGE_SIZE,
        h => h,
    }
}

#[inline]
fn set_heap_start(page: &mut [u8], v: usize) {
    debug_assert!(v <= PAGE_SIZE);
    page::set_heap_start(page, v as u16);
}

#[inline]
fn frag(page: &[u8]) -> usize {
    page::frag_bytes(page) as usize
}

#[inline]
fn set_frag(page: &mut [u8], v: usize) {
    debug_assert!(v <= PAGE_SIZE);
    page::set_frag_bytes(page, v as u16);
}

#[inline]
fn slot(page: &[u8], idx: usize) -> (usize, usize) {
    let s = slot_pos(idx);
    let off = u16::from_le_bytes([page[s], page[s + 1]]) as usize;
    let len = u16::from_le_bytes([page[s + 2], page[s + 3]]) as usize;
    (off, len)
}

#[inline]
fn set_slot(page: &mut [u8], idx: usize, off: usize, len: usize) {
    debug_assert!(off <= PAGE_SIZE && len <= MAX_RECORD && (len == 0 || off + len <= PAGE_SIZE));
    let s = slot_pos(idx);
    page[s..s + 2].copy_from_slice(&(off as u16).to_le_bytes());
    page[s + 2..s + 4].copy_from_slice(&(len as u16).to_le_bytes());
}

/// Marks the page as holding no records (keeps the rest of the header).
fn reset_heap(page: &mut [u8]) {
    page::set_slot_count(page, 0);
    set_heap_start(page, PAGE_SIZE);
    set_frag(page, 0);
}

/// Number of records (slots) on the page.
#[inline]
pub fn count(page: &[u8]) -> usize {
    page::slot_count(page) as usize
}

/// Offset and length of record `idx` within the page image.
#[inline]
pub fn slot_entry(page: &[u8], idx: usize) -> (usize, usize) {
    assert!(idx < count(page), "slot {idx} out of range ({} slots)", count(page));
    slot(page, idx)
}

/// Record `idx`.
#[inline]
pub fn record(page: &[u8], idx: usize) -> &[u8] {
    let (off, len) = slot_entry(page, idx);
    &page[off..off + len]
}

/// Record `idx`, writable in place (its length cannot change; see [`replace`]).
#[inline]
pub fn record_mut(page: &mut [u8], idx: usize) -> &mut [u8] {
    let (off, len) = slot_entry(page, idx);
    &mut page[off..off + len]
}

/// The records in slot order.
pub fn records(page: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    (0..count(page)).map(move |i| record(page, i))
}

/// Bytes between the end of the slot directory and the start of the heap.
#[inline]
pub fn contiguous_free(page: &[u8]) -> usize {
    heap_start(page).saturating_sub(slot_pos(count(page)))
}

/// All free bytes: the contiguous gap plus the garbage inside the heap (reclaimable by
/// [`compact`]). A new record needs its length plus [`SLOT_SIZE`].
#[inline]
pub fn free_space(page: &[u8]) -> usize {
    contiguous_free(page) + frag(page)
}

/// Bytes used by records and their slots (`PAGE_SIZE - HEADER_SIZE - free_space`).
#[inline]
pub fn used_bytes(page: &[u8]) -> usize {
    (PAGE_SIZE - heap_start(page)).saturating_sub(frag(page)) + count(page) * SLOT_SIZE
}

/// True when a record of `len` bytes (plus its slot) fits, compacting if need be.
#[inline]
pub fn fits(page: &[u8], len: usize) -> bool {
    len <= MAX_RECORD && len + SLOT_SIZE <= free_space(page)
}

/// Inserts `rec` as record `idx` (`idx <= count`), shifting records `idx..` right.
/// Returns false, leaving the page unchanged, when it does not fit.
pub fn insert(page: &mut [u8], idx: usize, rec: &[u8]) -> bool {
    insert_with(page, idx, rec.len(), |dst| dst.copy_from_slice(rec))
}

/// Like [`insert`], but reserves `len` bytes and lets `fill` write the record in place
/// (saves building the record in a separate buffer). `fill` receives exactly `len` bytes.
pub fn insert_with(page: &mut [u8], idx: usize, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
    debug_assert_eq!(page.len(), PAGE_SIZE);
    let n = count(page);
    assert!(idx <= n, "insert at slot {idx} of {n}");
    if !fits(page, len) {
        return false;
    }
    if contiguous_free(page) < len + SLOT_SIZE {
        compact(page);
        debug_assert!(contiguous_free(page) >= len + SLOT_SIZE);
    }
    let hs = heap_start(page);
    let off = if len == 0 { PAGE_SIZE } else { hs - len };
    let s = slot_pos(idx);
    page.copy_within(s..slot_pos(n), s + SLOT_SIZE);
    set_slot(page, idx, off, len);
    page::set_slot_count(page, (n + 1) as u16);
    if len > 0 {
        set_heap_start(page, off);
    }
    fill(&mut page[off..off + len]);
    true
}

/// Removes record `idx`, shifting records `idx+1..` left.
pub fn remove(page: &mut [u8], idx: usize) {
    debug_assert_eq!(page.len(), PAGE_SIZE);
    let n = count(page);
    assert!(idx < n, "remove slot {idx} of {n}");
    if n == 1 {
        reset_heap(page);
        return;
    }
    let (off, len) = slot(page, idx);
    page.copy_within(slot_pos(idx + 1)..slot_pos(n), slot_pos(idx));
    page::set_slot_count(page, (n - 1) as u16);
    release(page, off, len);
}

/// Accounts for the freed heap range `off..off+len` (no longer referenced by any slot).
fn release(page: &mut [u8], off: usize, len: usize) {
    if len == 0 {
        return;
    }
    let hs = heap_start(page);
    if off == hs {
        set_heap_start(page, hs + len);
    } else {
        set_frag(page, frag(page) + len);
    }
}

/// Replaces record `idx` with `rec`. A record of the same or a smaller size is rewritten in
/// place; a larger one is relocated (compacting if need be). Returns false, leaving the page
/// unchanged, when there is no room.
pub fn replace(page: &mut [u8], idx: usize, rec: &[u8]) -> bool {
    debug_assert_eq!(page.len(), PAGE_SIZE);
    let n = count(page);
    assert!(idx < n, "replace slot {idx} of {n}");
    let (off, old) = slot(page, idx);
    let new = rec.len();
    if new <= old {
        // Keep the record at the top of its old space so that, when it sat at heap_start,
        // the freed bytes return to the contiguous gap instead of becoming garbage.
        let freed = old - new;
        let noff = if new == 0 { PAGE_SIZE } else { off + freed };
        page[off + freed..off + old].copy_from_slice(rec);
        set_slot(page, idx, noff, new);
        release(page, off, freed);
        return true;
    }
    if new > MAX_RECORD || new > free_space(page) + old {
        return false;
    }
    if contiguous_free(page) < new {
        // Give the old space up first, then compact: the record is rewritten from `rec`.
        set_slot(page, idx, PAGE_SIZE, 0);
        release(page, off, old);
        compact(page);
        debug_assert!(contiguous_free(page) >= new);
    } else {
        // The new copy goes below heap_start, so the old space becomes garbage.
        if old > 0 {
            set_frag(page, frag(page) + old);
        }
    }
    let noff = heap_start(page) - new;
    page[noff..noff + new].copy_from_slice(rec);
    set_slot(page, idx, noff, new);
    set_heap_start(page, noff);
    true
}

/// Drops records `keep..` (used after moving the upper half of a page elsewhere).
pub fn truncate(page: &mut [u8], keep: usize) {
    let n = count(page);
    assert!(keep <= n, "truncate to {keep} of {n} slots");
    if keep == n {
        return;
    }
    if keep == 0 {
        reset_heap(page);
        return;
    }
    let freed: usize = (keep..n).map(|i| slot(page, i).1).sum();
    page::set_slot_count(page, keep as u16);
    set_frag(page, frag(page) + freed);
}

/// Moves records `at..` of `src` to the end of `dst` (in order) and truncates `src` to `at`.
/// Returns false, changing neither page, if they do not all fit in `dst`.
pub fn move_tail(src: &mut [u8], at: usize, dst: &mut [u8]) -> bool {
    let n = count(src);
    assert!(at <= n, "move_tail from {at} of {n} slots");
    let need: usize = (at..n).map(|i| slot(src, i).1 + SLOT_SIZE).sum();
    if need > free_space(dst) {
        return false;
    }
    for i in at..n {
        let d = count(dst);
        let ok = insert(dst, d, record(src, i));
        debug_assert!(ok);
    }
    truncate(src, at);
    true
}

/// Rewrites the heap so that it holds no garbage: records are packed against the end of the
/// page in slot order, and the free gap is zeroed.
pub fn compact(page: &mut [u8]) {
    debug_assert_eq!(page.len(), PAGE_SIZE);
    if frag(page) == 0 {
        return; // the records already tile heap_start..PAGE_SIZE exactly
    }
    let n = count(page);
    let hs = heap_start(page);
    let mut scratch = [0u8; PAGE_SIZE];
    scratch[hs..].copy_from_slice(&page[hs..]);
    let mut top = PAGE_SIZE;
    for i in 0..n {
        let (off, len) = slot(page, i);
        if len == 0 {
            set_slot(page, i, PAGE_SIZE, 0);
            continue;
        }
        top -= len;
        page[top..top + len].copy_from_slice(&scratch[off..off + len]);
        set_slot(page, i, top, len);
    }
    debug_assert!(top >= hs);
    // Clear the whole gap (stale slots and old record bytes) so page images stay tidy.
    page[slot_pos(n)..top].fill(0);
    set_heap_start(page, top);
    set_frag(page, 0);
}

/// Search over the records, comparing `key_of(record)` with `probe` bytewise (memcmp
/// order). Same contract as [`slice::binary_search`]: `Ok(i)` for a match (any of several
/// equal keys), `Err(i)` for the insertion point.
///
/// On a page with many records the first probes interpolate: the 8 bytes that follow the
/// prefix the page's first and last keys share, read as a number, place the probe
/// between those keys, and the record there (and its neighbour) is compared first. Keys
/// spread evenly (identity columns, and the separators of a tree they built) are found
/// in two or three probes instead of the nine a binary search of an internal page takes,
/// each a cache miss. Skipping the shared prefix matters: an `int` key is stored as a
/// marker byte and eight bytes of `bigint`, so its first 8 bytes tell apart only keys 256
/// apart. A probe only narrows the range the binary search then finishes, so a poor
/// guess costs at most [`INTERPOLATION_PROBES`] comparisons.
pub fn search(page: &[u8], probe: &[u8], key_of: impl Fn(&[u8]) -> &[u8]) -> Result<usize, usize> {
    let key_at = |i: usize| {
        let (off, len) = slot(page, i);
        key_of(&page[off..off + len])
    };
    let mut lo = 0usize;
    let mut hi = count(page);
    if hi >= INTERPOLATE_FROM {
        // Invariant from here on, as in the binary search: keys before `lo` are below the
        // probe, keys from `hi` on are above it.
        let (first, last) = (key_at(0), key_at(hi - 1));
        match compare_keys(first, probe) {
            Ordering::Greater => return Err(0),
            Ordering::Equal => return Ok(0),
            Ordering::Less => lo = 1,
        }
        match compare_keys(last, probe) {
            Ordering::Less => return Err(hi),
            Ordering::Equal => return Ok(hi - 1),
            Ordering::Greater => hi -= 1,
        }
        // first < probe < last, so the probe shares the prefix the two share.
        let shared = first.iter().zip(last).take_while(|(x, y)| x == y).count();
        let head_after_shared = |k: &[u8]| key_head(k.get(shared..).unwrap_or_default());
        let (a, b, p) = (head_after_shared(first), head_after_shared(last), head_after_shared(probe));
        if a < b {
            // first < probe < last, so a <= p <= b.
            let span = (hi - lo + 1) as u128; // positions 0 ..= count-1 over heads a ..= b
            let at = (u128::from(p - a) * span / u128::from(b - a)) as usize;
            let mut guess = at.clamp(lo, hi.saturating_sub(1));
            for _ in 0..INTERPOLATION_PROBES {
                if lo >= hi {
                    break;
                }
                match compare_keys(key_at(guess), probe) {
                    Ordering::Equal => return Ok(guess),
                    Ordering::Less => {
                        lo = guess + 1;
                        guess = lo;
                    }
                    Ordering::Greater => {
                        hi = guess;
                        guess = hi.saturating_sub(1).max(lo);
                    }
                }
            }
        }
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match compare_keys(key_at(mid), probe) {
            Ordering::Less => lo = mid + 1,
            Ordering::Greater => hi = mid,
            Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

/// Pages with fewer records are searched by bisection alone.
const INTERPOLATE_FROM: usize = 16;
/// Probes next to the interpolated position before bisection takes over.
const INTERPOLATION_PROBES: usize = 2;

/// Pages with at most this many records have all their records prefetched before a search.
const PREFETCH_RECORDS: usize = 16;

/// On a page with few records (the leaves of a table with wide rows), starts loading the
/// first cache line of every record, so that the binary search's probes, which would each
/// miss the cache one after another, find their records arriving together.
#[inline]
pub fn prefetch_records(page: &[u8]) {
    let n = count(page);
    if n > PREFETCH_RECORDS {
        return;
    }
    for i in 0..n {
        let (off, _) = slot(page, i);
        tessera_buffer::page::prefetch(page.as_ptr().wrapping_add(off));
    }
}

/// `a.cmp(b)` for byte strings, without a call to `memcmp` for the short keys most
/// indexes have: the first 8 bytes are compared as big-endian integers (zero-padded, so a
/// proper prefix ties and the length decides).
/// Keys longer than 8 bytes that tie on their heads go on 8 bytes at a time while both are
/// at most 16 bytes long (an `int` or `bigint` key is 9), and to `memcmp` otherwise.
#[inline(always)]
pub fn compare_keys(a: &[u8], b: &[u8]) -> Ordering {
    match key_head(a).cmp(&key_head(b)) {
        Ordering::Equal if a.len() > 8 && b.len() > 8 => {
            let (a, b) = (&a[8..], &b[8..]);
            if a.len() > 8 || b.len() > 8 {
                return a.cmp(b);
            }
            match key_head(a).cmp(&key_head(b)) {
                Ordering::Equal => a.len().cmp(&b.len()),
                unequal => unequal,
            }
        }
        Ordering::Equal => a.len().cmp(&b.len()),
        unequal => unequal,
    }
}

/// A key's first 8 bytes as a big-endian number, zero-padded: keys in memcmp order have
/// non-decreasing heads.
#[inline(always)]
fn key_head(s: &[u8]) -> u64 {
    let be32 = |at: usize| u64::from(u32::from_be_bytes(s[at..at + 4].try_into().unwrap()));
    let at = |p: usize| u64::from(s[p]) << (8 * (7 - p));
    match s.len() {
        8.. => u64::from_be_bytes(*s.first_chunk::<8>().unwrap()),
        // Two overlapping 4-byte reads cover 4..8 bytes; the overlap ORs equal bytes.
        n @ 4..8 => be32(0) << 32 | be32(n - 4) << (8 * (8 - n)),
        n @ 1..4 => at(0) | at(n / 2) | at(n - 1),
        _ => 0,
    }
}

/// Structural validation of a slotted page: the directory fits below the heap, every record
/// lies inside the heap, no two records overlap, and the byte accounting adds up
/// (`sum of lengths + frag_bytes == PAGE_SIZE - heap_start`).
pub fn check(page: &[u8]) -> Result<(), String> {
    if page.len() != PAGE_SIZE {
        return Err(format!("page image is {} bytes, expected {PAGE_SIZE}", page.len()));
    }
    let n = count(page);
    let dir_end = slot_pos(n);
    let raw_hs = page::heap_start(page) as usize;
    if raw_hs == 0 && n > 0 {
        return Err(format!("heap_start is 0 with {n} slots"));
    }
    let hs = heap_start(page);
    if dir_end > PAGE_SIZE {
        return Err(format!("slot directory of {n} slots runs past the end of the page"));
    }
    if hs > PAGE_SIZE {
        return Err(format!("heap_start {hs} is past the end of the page"));
    }
    if hs < dir_end {
        return Err(format!("heap_start {hs} overlaps the slot directory ending at {dir_end}"));
    }
    let fr = frag(page);
    if fr > PAGE_SIZE - hs {
        return Err(format!("frag_bytes {fr} exceeds the heap size {}", PAGE_SIZE - hs));
    }
    let mut spans = Vec::with_capacity(n);
    let mut total = 0usize;
    for i in 0..n {
        let (off, len) = slot(page, i);
        if len == 0 {
            if off != PAGE_SIZE {
                return Err(format!("slot {i}: empty record at offset {off}, expected {PAGE_SIZE}"));
            }
            continue;
        }
        if off < hs || off + len > PAGE_SIZE {
            return Err(format!("slot {i}: record {off}..{} lies outside the heap {hs}..{PAGE_SIZE}", off + len));
        }
        total += len;
        spans.push((off, len, i));
    }
    spans.sort_unstable();
    for w in spans.windows(2) {
        let (a_off, a_len, a) = w[0];
        let (b_off, _, b) = w[1];
        if a_off + a_len > b_off {
            return Err(format!("slot {a}: record {a_off}..{} overlaps slot {b} at {b_off}", a_off + a_len));
        }
    }
    if total + fr != PAGE_SIZE - hs {
        return Err(format!(
            "record bytes {total} + frag_bytes {fr} != heap size {} (heap_start {hs})",
            PAGE_SIZE - hs
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn new_page() -> Vec<u8> {
        let mut p = vec![0u8; PAGE_SIZE];
        init(&mut p, PageNo::from_raw(7), 42, PageType::BTreeLeaf, 0);
        p
    }

    fn recs(p: &[u8]) -> Vec<Vec<u8>> {
        records(p).map(|r| r.to_vec()).collect()
    }

    proptest! {
        /// Short byte strings over a tiny alphabet, so that prefixes, ties and zero bytes
        /// (the padding value) are common.
        #[test]
        fn compare_keys_is_memcmp_order(
            a in proptest::collection::vec(0u8..3, 0..20),
            b in proptest::collection::vec(0u8..3, 0..20),
        ) {
            prop_assert_eq!(compare_keys(&a, &b), a.cmp(&b));
            prop_assert_eq!(compare_keys(&b, &a), b.cmp(&a));
            prop_assert_eq!(compare_keys(&a, &a), std::cmp::Ordering::Equal);
        }

        /// Search (interpolating on big pages) answers as a binary search of the sorted keys
        /// does: the page holds distinct keys, of any length, spread evenly or clustered.
        #[test]
        fn search_matches_binary_search(
            keys in proptest::collection::btree_set(
                prop_oneof![
                    proptest::collection::vec(0u8..4, 0..12),
                    any::<u32>().prop_map(|v| v.to_be_bytes().to_vec()),
                    (0u32..64).prop_map(|v| (v * 1000).to_be_bytes().to_vec()),
                    any::<u64>().prop_map(|v| [&[1u8][..], &v.to_be_bytes()].concat()),
                    (0u64..100_000).prop_map(stored_int_key),
                ],
                0..400,
            ),
            probes in proptest::collection::vec(
                prop_oneof![
                    proptest::collection::vec(0u8..4, 0..12),
                    any::<u32>().prop_map(|v| v.to_be_bytes().to_vec()),
                    (0u32..64_000).prop_map(|v| v.to_be_bytes().to_vec()),
                    (0u64..100_000).prop_map(stored_int_key),
                ],
                1..40,
            ),
        ) {
            let mut p = new_page();
            let mut held: Vec<Vec<u8>> = Vec::new();
            for k in &keys {
                if !insert(&mut p, held.len(), k) {
                    break;
                }
                held.push(k.clone());
            }
            for probe in probes.iter().chain(held.iter()) {
                prop_assert_eq!(search(&p, probe, |r| r), held.binary_search(probe), "probe {:?}", probe);
            }
        }
    }

    /// An `int` key as the clustered index stores it: a not-null marker and the value as a
    /// sign-flipped big-endian `bigint`.
    fn stored_int_key(v: u64) -> Vec<u8> {
        [&[1u8][..], &(v ^ (1 << 63)).to_be_bytes()].concat()
    }

    /// The separators of an identity column's tree, 7 ids apart: each differs from the
    /// next only in the key's ninth byte, past the first 8 an interpolation reads unless it
    /// skips the prefix all keys of the page share. Each lookup takes at most 4 key
    /// comparisons (first, last, the guess and its neighbour), where bisection of 500
    /// records takes 9.
    #[test]
    fn interpolation_reads_past_the_shared_prefix() {
        let mut p = new_page();
        let keys: Vec<Vec<u8>> = (0..500u64).map(|i| stored_int_key(6_000 + 7 * i)).collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(insert(&mut p, i, k));
        }
        let compared = std::cell::Cell::new(0);
        fn counted<'a>(compared: &std::cell::Cell<usize>, r: &'a [u8]) -> &'a [u8] {
            compared.set(compared.get() + 1);
            r
        }
        for i in 1..499u64 {
            for id in 6_000 + 7 * i..6_000 + 7 * (i + 1) {
                compared.set(0);
                let at = usize::try_from(i).unwrap();
                let expected = if id == 6_000 + 7 * i { Ok(at) } else { Err(at + 1) };
                assert_eq!(search(&p, &stored_int_key(id), |r| counted(&compared, r)), expected, "id {id}");
                assert!(compared.get() <= 4, "id {id}: {} comparisons", compared.get());
            }
        }
    }

    #[test]
    fn interpolation_finds_evenly_spread_keys() {
        let mut p = new_page();
        let keys: Vec<[u8; 4]> = (0..500u32).map(|i| (1000 + 7 * i).to_be_bytes()).collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(insert(&mut p, i, k));
        }
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(search(&p, k, |r| r), Ok(i));
            assert_eq!(search(&p, &(u32::from_be_bytes(*k) + 1).to_be_bytes(), |r| r), Err(i + 1));
        }
        assert_eq!(search(&p, &0u32.to_be_bytes(), |r| r), Err(0));
        assert_eq!(search(&p, &u32::MAX.to_be_bytes(), |r| r), Err(500));
    }

    #[test]
    fn init_sets_header() {
        let p = new_page();
        assert_eq!(page::page_no(&p), PageNo::from_raw(7));
        assert_eq!(page::object_id(&p), 42);
        assert_eq!(page::page_type(&p), Some(PageType::BTreeLeaf));
        assert_eq!(page::level(&p), 0);
        assert_eq!(page::heap_start(&p) as usize, PAGE_SIZE);
        assert_eq!(count(&p), 0);
        assert_eq!(free_space(&p), PAGE_SIZE - HEADER_SIZE);
        assert_eq!(contiguous_free(&p), PAGE_SIZE - HEADER_SIZE);
        assert_eq!(used_bytes(&p), 0);
        check(&p).unwrap();
        // A never-written page reads as empty too.
        let z = vec![0u8; PAGE_SIZE];
        assert_eq!(count(&z), 0);
        assert_eq!(free_space(&z), PAGE_SIZE - HEADER_SIZE);
        check(&z).unwrap();
    }

    #[test]
    fn insert_in_order_and_search() {
        let mut p = new_page();
        for k in [5u8, 1, 9, 3, 7] {
            let idx = search(&p, &[k], |r| &r[..1]).unwrap_err();
            assert!(insert(&mut p, idx, &[k, k, k]));
            check(&p).unwrap();
        }
        assert_eq!(recs(&p), vec![vec![1, 1, 1], vec![3, 3, 3], vec![5, 5, 5], vec![7, 7, 7], vec![9, 9, 9]]);
        assert_eq!(search(&p, &[7], |r| &r[..1]), Ok(3));
        assert_eq!(search(&p, &[0], |r| &r[..1]), Err(0));
        assert_eq!(search(&p, &[8], |r| &r[..1]), Err(4));
        assert_eq!(search(&p, &[10], |r| &r[..1]), Err(5));
        assert_eq!(used_bytes(&p), 5 * 3 + 5 * SLOT_SIZE);
        record_mut(&mut p, 0)[1] = 0xEE;
        assert_eq!(record(&p, 0), &[1, 0xEE, 1]);
    }

    #[test]
    fn max_record_fills_page() {
        let mut p = new_page();
        let big = vec![0xAB; MAX_RECORD];
        assert!(!fits(&p, MAX_RECORD + 1));
        assert!(!insert(&mut p, 0, &vec![1; MAX_RECORD + 1]));
        assert!(insert(&mut p, 0, &big));
        assert_eq!(free_space(&p), 0);
        assert!(!insert(&mut p, 1, &[]));
        check(&p).unwrap();
        assert_eq!(record(&p, 0), &big[..]);
        remove(&mut p, 0);
        assert_eq!(free_space(&p), PAGE_SIZE - HEADER_SIZE);
        check(&p).unwrap();
    }

    #[test]
    fn insert_compacts_fragmented_space() {
        let mut p = new_page();
        let mut n = 0;
        while insert(&mut p, n, &[n as u8; 100]) {
            n += 1;
        }
        assert_eq!(n, (PAGE_SIZE - HEADER_SIZE) / 104);
        // Free every other record: plenty of space, none of it contiguous.
        let mut i = 0;
        while i < count(&p) {
            remove(&mut p, i);
            i += 1;
        }
        check(&p).unwrap();
        assert!(contiguous_free(&p) < 300);
        assert!(free_space(&p) > 300);
        let before = free_space(&p);
        assert!(insert(&mut p, 0, &[0xCC; 296]));
        check(&p).unwrap();
        assert_eq!(free_space(&p), before - 300);
        assert_eq!(record(&p, 0), &[0xCC; 296][..]);
        for (j, r) in records(&p).skip(1).enumerate() {
            assert_eq!(r, &[(2 * j + 1) as u8; 100][..]);
        }
    }

    #[test]
    fn replace_paths() {
        let mut p = new_page();
        assert!(insert(&mut p, 0, b"aaaaaaaa"));
        assert!(insert(&mut p, 1, b"bbbbbbbb"));
        // shrink at heap_start: space returns to the gap
        assert!(replace(&mut p, 1, b"BB"));
        check(&p).unwrap();
        assert_eq!(page::frag_bytes(&p), 0);
        // shrink elsewhere: garbage
        assert!(replace(&mut p, 0, b"A"));
        check(&p).unwrap();
        assert_eq!(page::frag_bytes(&p), 7);
        // grow: relocated
        assert!(replace(&mut p, 0, b"AAAAAAAAAAAA"));
        check(&p).unwrap();
        assert_eq!(recs(&p), vec![b"AAAAAAAAAAAA".to_vec(), b"BB".to_vec()]);
        // to empty and back
        assert!(replace(&mut p, 1, b""));
        check(&p).unwrap();
        assert_eq!(record(&p, 1), b"");
        assert!(replace(&mut p, 1, b"xyz"));
        check(&p).unwrap();
        assert_eq!(used_bytes(&p), 12 + 3 + 2 * SLOT_SIZE);
        // too big: unchanged
        let snapshot = p.clone();
        let too_big = vec![0; free_space(&p) + 13];
        assert!(!replace(&mut p, 0, &too_big));
        assert_eq!(p, snapshot);
        // exactly all the room there is, which needs a compaction
        let room = free_space(&p) + 12;
        assert!(replace(&mut p, 0, &vec![9; room]));
        check(&p).unwrap();
        assert_eq!(free_space(&p), 0);
        assert_eq!(record(&p, 1), b"xyz");
    }

    #[test]
    fn truncate_and_move_tail() {
        let mut a = new_page();
        for i in 0..10u8 {
            assert!(insert(&mut a, i as usize, &[i; 50]));
        }
        let mut b = new_page();
        init(&mut b, PageNo::from_raw(8), 42, PageType::BTreeLeaf, 0);
        assert!(move_tail(&mut a, 6, &mut b));
        check(&a).unwrap();
        check(&b).unwrap();
        assert_eq!(count(&a), 6);
        assert_eq!(count(&b), 4);
        assert_eq!(record(&b, 0), &[6; 50][..]);
        assert_eq!(free_space(&a), PAGE_SIZE - HEADER_SIZE - 6 * 54);
        truncate(&mut a, 0);
        check(&a).unwrap();
        assert_eq!(free_space(&a), PAGE_SIZE - HEADER_SIZE);
        // a destination without room changes nothing
        let mut full = new_page();
        assert!(insert(&mut full, 0, &vec![0; MAX_RECORD - 100]));
        let (bs, fs) = (b.clone(), full.clone());
        assert!(!move_tail(&mut b, 0, &mut full));
        assert_eq!((b, full), (bs, fs));
    }

    #[test]
    fn compact_is_idempotent_and_zeroes_gap() {
        let mut p = new_page();
        for i in 0..20u8 {
            assert!(insert(&mut p, i as usize, &[i + 1; 30]));
        }
        for i in (0..20).step_by(3).rev() {
            remove(&mut p, i);
        }
        let before = recs(&p);
        compact(&mut p);
        check(&p).unwrap();
        assert_eq!(page::frag_bytes(&p), 0);
        assert_eq!(recs(&p), before);
        let hs = page::heap_start(&p) as usize;
        assert!(p[slot_pos(count(&p))..hs].iter().all(|&b| b == 0));
        let again = p.clone();
        compact(&mut p);
        assert_eq!(p, again);
    }

    #[test]
    fn check_detects_damage() {
        let mut p = new_page();
        assert!(insert(&mut p, 0, b"hello"));
        assert!(insert(&mut p, 1, b"world"));
        let good = p.clone();
        // overlapping records
        let (off0, _) = slot(&p, 0);
        set_slot(&mut p, 1, off0, 5);
        assert!(check(&p).is_err());
        // bad accounting
        p = good.clone();
        page::set_frag_bytes(&mut p, 3);
        assert!(check(&p).is_err());
        // heap_start inside the directory
        p = good.clone();
        page::set_heap_start(&mut p, 50);
        assert!(check(&p).is_err());
        // record past the end of the page
        p = good.clone();
        let s = slot_pos(0);
        p[s..s + 2].copy_from_slice(&(PAGE_SIZE as u16 - 2).to_le_bytes());
        assert!(check(&p).is_err());
        // absurd slot count
        p = good;
        page::set_slot_count(&mut p, 5000);
        assert!(check(&p).is_err());
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(prop::sample::Index, usize, u8),
        Remove(prop::sample::Index),
        Replace(prop::sample::Index, usize, u8),
        Truncate(prop::sample::Index),
        Compact,
    }

    fn rec_len() -> impl Strategy<Value = usize> {
        prop_oneof![4 => 0usize..40, 3 => 40usize..400, 1 => 400usize..3000, 1 => Just(MAX_RECORD)]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (any::<prop::sample::Index>(), rec_len(), any::<u8>()).prop_map(|(i, l, b)| Op::Insert(i, l, b)),
            3 => any::<prop::sample::Index>().prop_map(Op::Remove),
            3 => (any::<prop::sample::Index>(), rec_len(), any::<u8>()).prop_map(|(i, l, b)| Op::Replace(i, l, b)),
            1 => any::<prop::sample::Index>().prop_map(Op::Truncate),
            1 => Just(Op::Compact),
        ]
    }

    fn fill(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| seed.wrapping_add(i as u8).wrapping_mul(31)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn model(ops in prop::collection::vec(op(), 1..200)) {
            let mut p = new_page();
            let mut model: Vec<Vec<u8>> = Vec::new();
            for op in ops {
                let model_free = PAGE_SIZE - HEADER_SIZE
                    - model.iter().map(|r| r.len() + SLOT_SIZE).sum::<usize>();
                match op {
                    Op::Insert(i, len, seed) => {
                        let idx = i.index(model.len() + 1);
                        let rec = fill(len, seed);
                        let before = p.clone();
                        let ok = insert(&mut p, idx, &rec);
                        prop_assert_eq!(ok, len + SLOT_SIZE <= model_free);
                        if ok { model.insert(idx, rec) } else { prop_assert!(p == before) }
                    }
                    Op::Remove(i) => {
                        if model.is_empty() { continue }
                        let idx = i.index(model.len());
                        remove(&mut p, idx);
                        model.remove(idx);
                    }
                    Op::Replace(i, len, seed) => {
                        if model.is_empty() { continue }
                        let idx = i.index(model.len());
                        let rec = fill(len, seed);
                        let before = p.clone();
                        let ok = replace(&mut p, idx, &rec);
                        prop_assert_eq!(ok, len <= model_free + model[idx].len());
                        if ok { model[idx] = rec } else { prop_assert!(p == before) }
                    }
                    Op::Truncate(i) => {
                        let keep = i.index(model.len() + 1);
                        truncate(&mut p, keep);
                        model.truncate(keep);
                    }
                    Op::Compact => {
                        compact(&mut p);
                        prop_assert_eq!(page::frag_bytes(&p), 0);
                    }
                }
                if let Err(e) = check(&p) { return Err(TestCaseError::fail(e)); }
                prop_assert_eq!(count(&p), model.len());
                for (j, r) in model.iter().enumerate() {
                    prop_assert_eq!(record(&p, j), &r[..]);
                }
                let used: usize = model.iter().map(|r| r.len() + SLOT_SIZE).sum();
                prop_assert_eq!(used_bytes(&p), used);
                prop_assert_eq!(free_space(&p), PAGE_SIZE - HEADER_SIZE - used);
                prop_assert!(contiguous_free(&p) <= free_space(&p));
                // header fields outside the slotted area are untouched
                prop_assert_eq!(page::page_no(&p), PageNo::from_raw(7));
                prop_assert_eq!(page::object_id(&p), 42);
            }
        }
    }
}
