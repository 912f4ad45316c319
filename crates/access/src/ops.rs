//! Physiological page operations: the redo half of every log record.
//!
//! A change to the database is a list of `(page, PageOp)`. At run time a mini-
//! transaction ([`crate::mtr::Mtr`]) applies each operation to its latched page and logs
//! the list; during redo the same [`apply`] replays it on pages whose LSN is older than
//! the record. One function serves both, so what is logged is exactly what was done.
//!
//! Record body layout (after the log envelope):
//! ```text
//! op_count u16 | (page_no u32, op)* | has_undo u8 | [undo]
//! ```
//! `has_undo` is the undo's kind (0: none). A row insert's undo ("remove the key") does
//! not repeat the key when the record's first `Insert` stores it: kind 5 names only the
//! tree, and decoding takes the key from that insert.

use std::borrow::Cow;

use tessera_buffer::page::{self, PageNo, PageType};
use tessera_errors::{Error, Result};
use tessera_log::Lsn;

use crate::slotted;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageOp {
    /// Re-initialises the page: no records, the given header fields.
    Format {
        object: u32,
        ty: PageType,
        level: u8,
        prev: PageNo,
        next: PageNo,
        aux: u32,
    },
    Insert {
        slot: u16,
        rec: Vec<u8>,
    },
    Remove {
        slot: u16,
    },
    Replace {
        slot: u16,
        rec: Vec<u8>,
    },
    /// Keeps the first `keep` records.
    Truncate {
        keep: u16,
    },
    SetLinks {
        prev: PageNo,
        next: PageNo,
    },
    SetAux {
        aux: u32,
    },
    /// Sets or clears `count` bits starting at bit `first` of an allocation map.
    SetBits {
        first: u32,
        count: u32,
        value: bool,
    },
    /// Overwrites bytes after the header (file header fields).
    Raw {
        offset: u16,
        bytes: Vec<u8>,
    },
    /// The whole page as it is after the record's changes, less an all-free gap of
    /// `hole_len` bytes at `hole_at` (zeros on redo): logged instead of the changes on a
    /// page's first change after a checkpoint began, so redo never needs what a torn
    /// write may have left on disk. See [`image`].
    Image {
        hole_at: u16,
        hole_len: u16,
        bytes: Vec<u8>,
    },
}

impl PageOp {
    /// Formats an allocation map page (no object, no links).
    pub fn alloc_map() -> PageOp {
        PageOp::Format { object: 0, ty: PageType::AllocMap, level: 0, prev: PageNo::NONE, next: PageNo::NONE, aux: 0 }
    }

    /// Whether this operation replaces the page's whole contents: redo then accepts a
    /// page that fails its checksum (torn), starting from zeros.
    pub fn overwrites_page(&self) -> bool {
        matches!(self, PageOp::Format { .. } | PageOp::Image { .. })
    }
}

/// A full-page image of `p` (see [`PageOp::Image`]). The free gap of a B+tree page
/// (between its slot directory and its record heap) is left out.
pub fn image(p: &[u8]) -> PageOp {
    debug_assert_eq!(p.len(), page::PAGE_SIZE);
    let (hole_at, hole_len) = match page::page_type(p) {
        Some(PageType::BTreeLeaf | PageType::BTreeInternal) => {
            let at = (page::HEADER_SIZE + slotted::count(p) * slotted::SLOT_SIZE).min(page::PAGE_SIZE);
            (at, slotted::contiguous_free(p))
        }
        _ => (page::PAGE_SIZE, 0),
    };
    debug_assert!(hole_at + hole_len <= page::PAGE_SIZE);
    let mut bytes = Vec::with_capacity(page::PAGE_SIZE - hole_len);
    bytes.extend_from_slice(&p[..hole_at]);
    bytes.extend_from_slice(&p[hole_at + hole_len..]);
    PageOp::Image { hole_at: hole_at as u16, hole_len: hole_len as u16, bytes }
}

/// The logical inverse of a transaction's change. A change being logged borrows its key;
/// one decoded from the log owns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Undo<'k> {
    /// Put `old` back under `key` in the tree rooted at `tree`, or remove the key when
    /// `old` is `None`.
    Row { tree: PageNo, key: Cow<'k, [u8]>, old: Option<Vec<u8>> },
    /// Free every page of the tree rooted at `root`: the inverse of its creation.
    CreateTree { root: PageNo },
    /// Free `page`, allocated to a bulk load, without reading it (its unlogged contents
    /// may never have reached the disk whole).
    BulkPage { page: PageNo },
    /// Free every page of the bulk-loaded tree rooted at `root` but the root, which
    /// becomes an empty leaf again; then continue undoing at `before` (the transaction's
    /// record before the load), skipping the load's `BulkPage` records, whose pages this
    /// already freed.
    EmptyTree { root: PageNo, before: Lsn },
}

/// First byte of the allocation bitmap inside an allocation-map page.
pub const BITMAP_OFFSET: usize = page::HEADER_SIZE;

/// Applies one operation to a page image. Operations are only ever built against the
/// page state they will be applied to, so failure here is a bug (or a damaged log).
pub fn apply(p: &mut [u8], page_no: PageNo, op: &PageOp) {
    match op {
        PageOp::Format { object, ty, level, prev, next, aux } => {
            slotted::init(p, page_no, *object, *ty, *level);
            page::set_prev(p, *prev);
            page::set_next(p, *next);
            page::set_aux(p, *aux);
        }
        PageOp::Insert { slot, rec } => {
            let ok = slotted::insert(p, *slot as usize, rec);
            assert!(ok, "logged insert does not fit page {page_no}");
        }
        PageOp::Remove { slot } => slotted::remove(p, *slot as usize),
        PageOp::Replace { slot, rec } => {
            let ok = slotted::replace(p, *slot as usize, rec);
            assert!(ok, "logged replace does not fit page {page_no}");
        }
        PageOp::Truncate { keep } => slotted::truncate(p, *keep as usize),
        PageOp::SetLinks { prev, next } => {
            page::set_prev(p, *prev);
            page::set_next(p, *next);
        }
        PageOp::SetAux { aux } => page::set_aux(p, *aux),
        PageOp::SetBits { first, count, value } => {
            for bit in *first..*first + *count {
                let byte = BITMAP_OFFSET + (bit / 8) as usize;
                let mask = 1u8 << (bit % 8);
                if *value {
                    p[byte] |= mask;
                } else {
                    p[byte] &= !mask;
                }
            }
        }
        PageOp::Raw { offset, bytes } => {
            let at = *offset as usize;
            assert!(at >= page::HEADER_SIZE && at + bytes.len() <= page::PAGE_SIZE, "raw op outside the page body");
            p[at..at + bytes.len()].copy_from_slice(bytes);
        }
        PageOp::Image { hole_at, hole_len, bytes } => {
            let (at, len) = (*hole_at as usize, *hole_len as usize);
            assert!(at + len <= page::PAGE_SIZE && bytes.len() + len == page::PAGE_SIZE, "malformed page image");
            p[..at].copy_from_slice(&bytes[..at]);
            p[at..at + len].fill(0);
            p[at + len..].copy_from_slice(&bytes[at..]);
            debug_assert_eq!(page::page_no(p), page_no, "page image of another page");
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u16).to_le_bytes());
    out.extend_from_slice(b);
}

/// The key of the leaf record the first `Insert` of `ops` stores (None: no insert, or a
/// record too short to hold its key). The undo of a row insert says "remove this key",
/// which is the inserted record's key: encoded as undo kind 5, the record names it
/// instead of repeating it (12 of a row insert's ~150 log bytes).
fn inserted_key(ops: &[(PageNo, PageOp)]) -> Option<&[u8]> {
    ops.iter().find_map(|(_, op)| match op {
        PageOp::Insert { rec, .. } => crate::btree::leaf_key_checked(rec),
        _ => None,
    })
}

pub fn encode(ops: &[(PageNo, PageOp)], undo: Option<&Undo>, out: &mut Vec<u8>) {
    // Room for every byte string plus a generous allowance for the fixed fields, so the
    // buffer is allocated once.
    let strings = |op: &PageOp| match op {
        PageOp::Insert { rec, .. } | PageOp::Replace { rec, .. } => rec.len(),
        PageOp::Raw { bytes, .. } | PageOp::Image { bytes, .. } => bytes.len(),
        _ => 0,
    };
    let undo_strings = match undo {
        Some(Undo::Row { key, old, .. }) => key.len() + old.as_ref().map_or(0, Vec::len),
        _ => 0,
    };
    out.reserve(64 + ops.iter().map(|(_, op)| 32 + strings(op)).sum::<usize>() + undo_strings);
    assert!(ops.len() <= u16::MAX as usize, "too many page operations in one record");
    out.extend_from_slice(&(ops.len() as u16).to_le_bytes());
    for (no, op) in ops {
        out.extend_from_slice(&no.raw().to_le_bytes());
        match op {
            PageOp::Format { object, ty, level, prev, next, aux } => {
                out.push(1);
                out.extend_from_slice(&object.to_le_bytes());
                out.push(*ty as u8);
                out.push(*level);
                out.extend_from_slice(&prev.raw().to_le_bytes());
                out.extend_from_slice(&next.raw().to_le_bytes());
                out.extend_from_slice(&aux.to_le_bytes());
            }
            PageOp::Insert { slot, rec } => {
                out.push(2);
                out.extend_from_slice(&slot.to_le_bytes());
                put_bytes(out, rec);
            }
            PageOp::Remove { slot } => {
                out.push(3);
                out.extend_from_slice(&slot.to_le_bytes());
            }
            PageOp::Replace { slot, rec } => {
                out.push(4);
                out.extend_from_slice(&slot.to_le_bytes());
                put_bytes(out, rec);
            }
            PageOp::Truncate { keep } => {
                out.push(5);
                out.extend_from_slice(&keep.to_le_bytes());
            }
            PageOp::SetLinks { prev, next } => {
                out.push(6);
                out.extend_from_slice(&prev.raw().to_le_bytes());
                out.extend_from_slice(&next.raw().to_le_bytes());
            }
            PageOp::SetAux { aux } => {
                out.push(7);
                out.extend_from_slice(&aux.to_le_bytes());
            }
            PageOp::SetBits { first, count, value } => {
                out.push(8);
                out.extend_from_slice(&first.to_le_bytes());
                out.extend_from_slice(&count.to_le_bytes());
                out.push(u8::from(*value));
            }
            PageOp::Raw { offset, bytes } => {
                out.push(9);
                out.extend_from_slice(&offset.to_le_bytes());
                put_bytes(out, bytes);
            }
            PageOp::Image { hole_at, hole_len, bytes } => {
                out.push(10);
                out.extend_from_slice(&hole_at.to_le_bytes());
                out.extend_from_slice(&hole_len.to_le_bytes());
                put_bytes(out, bytes);
            }
        }
    }
    match undo {
        None => out.push(0),
        Some(Undo::Row { tree, key, old: None }) if inserted_key(ops) == Some(key.as_ref()) => {
            out.push(5);
            out.extend_from_slice(&tree.raw().to_le_bytes());
        }
        Some(Undo::Row { tree, key, old }) => {
            out.push(1);
            out.extend_from_slice(&tree.raw().to_le_bytes());
            put_bytes(out, key);
            match old {
                None => out.push(0),
                Some(old) => {
                    out.push(1);
                    put_bytes(out, old);
                }
            }
        }
        Some(Undo::CreateTree { root }) => {
            out.push(2);
            out.extend_from_slice(&root.raw().to_le_bytes());
        }
        Some(Undo::BulkPage { page }) => {
            out.push(3);
            out.extend_from_slice(&page.raw().to_le_bytes());
        }
        Some(Undo::EmptyTree { root, before }) => {
            out.push(4);
            out.extend_from_slice(&root.raw().to_le_bytes());
            out.extend_from_slice(&before.raw().to_le_bytes());
        }
    }
}

/// Most page runs one bulk-load note lists (8 bytes each; a record is at most 4 MiB).
pub const MAX_NOTE_RUNS: usize = 64 * 1024;
/// Most pages one bulk-load note names (8 GiB of pages, 4 MiB as a list of page numbers):
/// a larger load takes more notes, so that reading a note back takes bounded memory
/// whatever a damaged record claims.
pub const MAX_NOTE_PAGES: u32 = 1 << 20;

/// The bodies of records that name pages a bulk load wrote without logging them: no
/// page operations, no undo, then `run_count u32 | (first u32, count u32)*`, runs in
/// ascending order, at most [`MAX_NOTE_RUNS`] runs and [`MAX_NOTE_PAGES`] pages a note.
/// Log backups copy those pages (see the backup crate). `pages` must be ascending.
pub fn encode_bulk_note(pages: &[PageNo]) -> Vec<Vec<u8>> {
    // A run longer than a note may name is cut into pieces.
    let mut runs = Vec::new();
    for (first, count) in page::runs(pages) {
        let mut done = 0;
        while done < count {
            let n = (count - done).min(MAX_NOTE_PAGES);
            runs.push((first + done, n));
            done += n;
        }
    }
    let mut notes = Vec::new();
    let mut rest = &runs[..];
    while !rest.is_empty() {
        let mut pages = 0;
        let take = rest
            .iter()
            .take(MAX_NOTE_RUNS)
            .take_while(|&&(_, count)| {
                pages += count;
                pages <= MAX_NOTE_PAGES
            })
            .count();
        let (chunk, tail) = rest.split_at(take);
        let mut out = Vec::with_capacity(7 + chunk.len() * 8);
        encode(&[], None, &mut out);
        out.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
        for (first, count) in chunk {
            out.extend_from_slice(&first.raw().to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
        }
        notes.push(out);
        rest = tail;
    }
    notes
}

/// The pages a bulk-load note names (empty for every other record body). A note that
/// names its runs out of order, an empty run, a run past the last page number or more
/// than [`MAX_NOTE_PAGES`] pages is damaged: an error, not a list of billions of pages.
pub fn bulk_note_pages(body: &[u8]) -> Result<Vec<PageNo>> {
    let (_, _, runs) = decode_all(body)?;
    let mut pages = Vec::new();
    for (first, count) in runs {
        // Checked on decoding: count >= 1 and the run ends by the last page number.
        pages.extend((first.raw()..=first.raw() + (count - 1)).map(PageNo::from_raw));
    }
    Ok(pages)
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self.b.get(self.at..self.at + n).ok_or_else(|| Error::Invalid("truncated page operation".into()))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn bytes(&mut self) -> Result<Vec<u8>> {
        let n = self.u16()? as usize;
        Ok(self.take(n)?.to_vec())
    }
}

pub type PageOps = Vec<(PageNo, PageOp)>;
pub type Decoded = (PageOps, Option<Undo<'static>>);

pub fn decode(body: &[u8]) -> Result<Decoded> {
    let (ops, undo, _) = decode_all(body)?;
    Ok((ops, undo))
}

/// Runs of pages `(first, count)` named by a bulk-load note.
type PageRuns = Vec<(PageNo, u32)>;

fn decode_all(body: &[u8]) -> Result<(PageOps, Option<Undo<'static>>, PageRuns)> {
    let mut c = Cursor { b: body, at: 0 };
    let n = c.u16()? as usize;
    let mut ops = Vec::with_capacity(n);
    for _ in 0..n {
        let no = PageNo::from_raw(c.u32()?);
        let op = match c.u8()? {
            1 => {
                let object = c.u32()?;
                let ty = PageType::from_u8(c.u8()?).ok_or_else(|| Error::Invalid("bad page type in log".into()))?;
                PageOp::Format {
                    object,
                    ty,
                    level: c.u8()?,
                    prev: PageNo::from_raw(c.u32()?),
                    next: PageNo::from_raw(c.u32()?),
                    aux: c.u32()?,
                }
            }
            2 => PageOp::Insert { slot: c.u16()?, rec: c.bytes()? },
            3 => PageOp::Remove { slot: c.u16()? },
            4 => PageOp::Replace { slot: c.u16()?, rec: c.bytes()? },
            5 => PageOp::Truncate { keep: c.u16()? },
            6 => PageOp::SetLinks { prev: PageNo::from_raw(c.u32()?), next: PageNo::from_raw(c.u32()?) },
            7 => PageOp::SetAux { aux: c.u32()? },
            8 => PageOp::SetBits { first: c.u32()?, count: c.u32()?, value: c.u8()? != 0 },
            9 => PageOp::Raw { offset: c.u16()?, bytes: c.bytes()? },
            10 => {
                let (hole_at, hole_len, bytes) = (c.u16()?, c.u16()?, c.bytes()?);
                if hole_at as usize + hole_len as usize > page::PAGE_SIZE
                    || bytes.len() + hole_len as usize != page::PAGE_SIZE
                {
                    return Err(Error::Invalid("malformed page image in log".into()));
                }
                PageOp::Image { hole_at, hole_len, bytes }
            }
            t => return Err(Error::Invalid(format!("unknown page operation {t} in log"))),
        };
        ops.push((no, op));
    }
    let undo = match c.u8()? {
        0 => None,
        1 => {
            let tree = c.u32()?;
            let key = c.bytes()?;
            let old = match c.u8()? {
                0 => None,
                _ => Some(c.bytes()?),
            };
            Some(Undo::Row { tree: PageNo::from_raw(tree), key: Cow::Owned(key), old })
        }
        2 => Some(Undo::CreateTree { root: PageNo::from_raw(c.u32()?) }),
        3 => Some(Undo::BulkPage { page: PageNo::from_raw(c.u32()?) }),
        5 => {
            let tree = c.u32()?;
            let key = inserted_key(&ops).ok_or_else(|| Error::Invalid("an insert's undo without its insert".into()))?;
            Some(Undo::Row { tree: PageNo::from_raw(tree), key: Cow::Owned(key.to_vec()), old: None })
        }
        4 => Some(Undo::EmptyTree { root: PageNo::from_raw(c.u32()?), before: Lsn::from_raw(c.u64()?) }),
        t => return Err(Error::Invalid(format!("unknown undo kind {t} in log"))),
    };
    let mut runs = Vec::new();
    if c.at != body.len() {
        let n = c.u32()? as usize;
        if !ops.is_empty() || undo.is_some() || n > MAX_NOTE_RUNS {
            return Err(Error::Invalid("trailing bytes after page operations".into()));
        }
        let damaged = || Error::Invalid("damaged bulk-load note".into());
        let (mut next, mut pages) = (0u64, 0u32);
        for _ in 0..n {
            let (first, count) = (c.u32()?, c.u32()?);
            let end = u64::from(first) + u64::from(count);
            pages = pages.checked_add(count).filter(|&p| p <= MAX_NOTE_PAGES).ok_or_else(damaged)?;
            if count == 0 || u64::from(first) < next || end > 1 << 32 {
                return Err(damaged());
            }
            next = end;
            runs.push((PageNo::from_raw(first), count));
        }
        if c.at != body.len() {
            return Err(Error::Invalid("trailing bytes after a bulk-load note".into()));
        }
    }
    Ok((ops, undo, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(n: u32) -> PageNo {
        PageNo::from_raw(n)
    }

    #[test]
    fn an_inserts_undo_names_the_inserted_record_instead_of_repeating_its_key() {
        let rec = crate::btree::leaf_record(0, b"key-42", b"value");
        let ops = vec![(pg(9), PageOp::Insert { slot: 3, rec: rec.clone() })];
        let undo = Undo::Row { tree: pg(2), key: Cow::Borrowed(b"key-42"), old: None };
        let (mut compact, mut full) = (Vec::new(), Vec::new());
        encode(&ops, Some(&undo), &mut compact);
        assert_eq!(decode(&compact).unwrap(), (ops.clone(), Some(undo.clone())));
        // Another key (or an image instead of the insert) keeps the key in the undo.
        let other = Undo::Row { tree: pg(2), key: Cow::Borrowed(b"key-43"), old: None };
        encode(&ops, Some(&other), &mut full);
        assert_eq!(decode(&full).unwrap(), (ops.clone(), Some(other)));
        assert_eq!(full.len(), compact.len() + 2 + 6 + 1, "key length, key and old flag left out");
        // A damaged record cannot make decoding panic.
        let mut bad = compact.clone();
        bad[2 + 4 + 1 + 2 + 2 + 1] = 0xFF; // the inserted record's key length
        assert!(decode(&bad).is_err());
    }

    #[test]
    fn encode_decode_round_trip() {
        let ops = vec![
            (pg(7), PageOp::Format { object: 3, ty: PageType::BTreeLeaf, level: 0, prev: pg(1), next: pg(2), aux: 0 }),
            (pg(7), PageOp::Insert { slot: 0, rec: vec![1, 2, 3] }),
            (pg(7), PageOp::Replace { slot: 0, rec: vec![9] }),
            (pg(7), PageOp::Remove { slot: 0 }),
            (pg(8), PageOp::Truncate { keep: 4 }),
            (pg(8), PageOp::SetLinks { prev: pg(5), next: pg(6) }),
            (pg(8), PageOp::SetAux { aux: 11 }),
            (pg(1), PageOp::SetBits { first: 3, count: 9, value: true }),
            (pg(0), PageOp::Raw { offset: 60, bytes: vec![4, 4] }),
        ];
        for undo in [
            Undo::Row { tree: pg(2), key: Cow::Borrowed(b"k"), old: Some(b"v".to_vec()) },
            Undo::Row { tree: pg(2), key: Cow::Borrowed(b"k"), old: None },
            Undo::CreateTree { root: pg(77) },
            Undo::BulkPage { page: pg(9) },
            Undo::EmptyTree { root: pg(12), before: Lsn::from_raw(77) },
        ] {
            let mut b = Vec::new();
            encode(&ops, Some(&undo), &mut b);
            assert_eq!(decode(&b).unwrap(), (ops.clone(), Some(undo)));
        }
        let mut b = Vec::new();
        encode(&ops, None, &mut b);
        assert_eq!(decode(&b).unwrap(), (ops, None));
        assert!(decode(&b[..b.len() - 3]).is_err());
    }

    #[test]
    fn bulk_notes_list_pages_as_runs() {
        let pages: Vec<PageNo> = (10..20).chain(30..31).chain(40..45).map(pg).collect();
        let bodies = encode_bulk_note(&pages);
        assert_eq!(bodies.len(), 1);
        assert_eq!(bodies[0].len(), 3 + 4 + 3 * 8);
        assert_eq!(bulk_note_pages(&bodies[0]).unwrap(), pages);
        assert_eq!(decode(&bodies[0]).unwrap(), (Vec::new(), None));
        let mut plain = Vec::new();
        encode(&[(pg(3), PageOp::SetAux { aux: 1 })], None, &mut plain);
        assert!(bulk_note_pages(&plain).unwrap().is_empty());
        let many: Vec<PageNo> = (0..(MAX_NOTE_RUNS as u32 + 5)).map(|i| pg(i * 2)).collect();
        let bodies = encode_bulk_note(&many);
        assert_eq!(bodies.len(), 2);
        let back: Vec<PageNo> = bodies.iter().flat_map(|b| bulk_note_pages(b).unwrap()).collect();
        assert_eq!(back, many);
    }

    /// Found by fuzz/fuzz_targets/storage_decoder.rs: a 15-byte note naming one run of
    /// 4,285,697,134 pages made `bulk_note_pages` try to allocate 16 GiB.
    #[test]
    fn a_damaged_bulk_note_is_an_error_not_billions_of_pages() {
        let note = |runs: &[(u32, u32)]| {
            let mut b = Vec::new();
            encode(&[], None, &mut b);
            b.extend_from_slice(&(runs.len() as u32).to_le_bytes());
            for (first, count) in runs {
                b.extend_from_slice(&first.to_le_bytes());
                b.extend_from_slice(&count.to_le_bytes());
            }
            b
        };
        let found = [0, 0, 0, 1, 0, 0, 0, 0xDF, 0x06, 0x06, 0x69, 0x6E, 0x8C, 0x72, 0xFF];
        assert_eq!(found, note(&[(0x6906_06DF, 0xFF72_8C6E)])[..]);
        assert!(bulk_note_pages(&found).is_err());
        assert!(decode(&found).is_err());
        for damaged in [
            vec![(10, 0)],                            // an empty run
            vec![(20, 5), (10, 5)],                   // out of order
            vec![(10, 5), (12, 5)],                   // overlapping
            vec![(u32::MAX, 2)],                      // past the last page number
            vec![(1, MAX_NOTE_PAGES + 1)],            // too many pages
            vec![(1, MAX_NOTE_PAGES), (u32::MAX, 1)], // too many pages in all
        ] {
            assert!(bulk_note_pages(&note(&damaged)).is_err(), "{damaged:?}");
        }
        assert_eq!(bulk_note_pages(&note(&[(10, 2), (12, 1), (u32::MAX, 1)])).unwrap(), [10, 11, 12, u32::MAX].map(pg));
    }

    #[test]
    fn a_large_load_takes_several_notes() {
        let pages: Vec<PageNo> =
            (5..5 + MAX_NOTE_PAGES + 3).chain(MAX_NOTE_PAGES + 100..MAX_NOTE_PAGES + 102).map(pg).collect();
        let bodies = encode_bulk_note(&pages);
        assert_eq!(bodies.len(), 2);
        let back: Vec<PageNo> = bodies.iter().flat_map(|b| bulk_note_pages(b).unwrap()).collect();
        assert_eq!(back, pages);
    }

    #[test]
    fn bits_and_records_apply() {
        let mut p = vec![0u8; page::PAGE_SIZE];
        apply(
            &mut p,
            pg(4),
            &PageOp::Format { object: 1, ty: PageType::BTreeLeaf, level: 0, prev: PageNo::NONE, next: pg(9), aux: 0 },
        );
        apply(&mut p, pg(4), &PageOp::Insert { slot: 0, rec: b"b".to_vec() });
        apply(&mut p, pg(4), &PageOp::Insert { slot: 0, rec: b"a".to_vec() });
        assert_eq!(slotted::record(&p, 1), b"b");
        assert_eq!(page::next(&p), pg(9));
        let mut map = vec![0u8; page::PAGE_SIZE];
        apply(&mut map, pg(1), &PageOp::alloc_map());
        apply(&mut map, pg(1), &PageOp::SetBits { first: 6, count: 4, value: true });
        assert_eq!(map[BITMAP_OFFSET], 0b1100_0000);
        assert_eq!(map[BITMAP_OFFSET + 1], 0b0000_0011);
        apply(&mut map, pg(1), &PageOp::SetBits { first: 7, count: 1, value: false });
        assert_eq!(map[BITMAP_OFFSET], 0b0100_0000);
    }

    #[test]
    fn page_images_leave_out_the_free_gap_and_rebuild_the_page() {
        let mut leaf = vec![0u8; page::PAGE_SIZE];
        apply(
            &mut leaf,
            pg(5),
            &PageOp::Format { object: 2, ty: PageType::BTreeLeaf, level: 0, prev: pg(3), next: pg(8), aux: 1 },
        );
        for i in 0..20u8 {
            apply(&mut leaf, pg(5), &PageOp::Insert { slot: u16::from(i), rec: vec![i; 100] });
        }
        let mut map = vec![0u8; page::PAGE_SIZE];
        apply(&mut map, pg(1), &PageOp::alloc_map());
        apply(&mut map, pg(1), &PageOp::SetBits { first: 60_000, count: 5, value: true });
        for (no, p, logged_at_most) in [(5, &leaf, page::PAGE_SIZE / 3), (1, &map, page::PAGE_SIZE)] {
            let op = image(p);
            let PageOp::Image { bytes, .. } = &op else { panic!("not an image") };
            assert!(bytes.len() <= logged_at_most, "{} bytes logged", bytes.len());
            let mut b = Vec::new();
            encode(&[(pg(no), op.clone())], None, &mut b);
            let (ops, _) = decode(&b).unwrap();
            assert_eq!(ops, vec![(pg(no), op)]);
            let mut rebuilt = vec![0xEEu8; page::PAGE_SIZE];
            apply(&mut rebuilt, pg(no), &ops[0].1);
            assert_eq!(&rebuilt, p);
        }
        let mut b = Vec::new();
        encode(&[(pg(5), PageOp::Image { hole_at: 8000, hole_len: 1000, bytes: vec![0; 7192] })], None, &mut b);
        assert!(decode(&b).is_err(), "an image that does not add up to a page is refused");
    }
}
