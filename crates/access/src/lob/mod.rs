//! Large values stored outside their rows.
//!
//! A variable-length value that does not stay in its row (see `row::off_row_columns`) is
//! written to the table's *large-value tree*, a B+tree of its own, as chunks of
//! [`CHUNK_BYTES`] (the last one shorter), each a leaf record keyed by
//! `value id (u64 BE) ‖ chunk number (u32 BE)`; the row keeps an `OffRow` pointer (the
//! id, the length and the generation). A chunk of 8,000 bytes fills one page, as a SQL
//! Server text page.
//!
//! **Generations.** A stored value is never changed in place: its readers may hold its
//! pointer without a lock. A partial update (`UPDATE … SET col.WRITE`, [`Rewriter`])
//! makes the next generation of the value under the same id, writing again only the
//! chunks that change — from the one where the change starts to the one where it ends
//! (to the value's end when the bytes after it move) — keyed `id ‖ n ‖ generation (u32
//! BE)`. Chunk `n` of generation `g` is its version of the newest generation `≤ g`, so
//! the old generation reads as it was and the log holds the changed chunks only. The new
//! generation's pointer is entered in the free list as a *compaction* (see below): after
//! its commit, once no reader can hold an older pointer, the versions no generation from
//! it on reads (older versions of a chunk rewritten, chunks past its end) are removed.
//! A value's generations belong to one row, one writer at a time (the row's lock).
//!
//! Ids come from a counter per tree, loaded from the largest key in the tree at first
//! use: an id is never handed out twice while a value under it exists.
//!
//! **Locks.** The row's key lock covers its values: a writer holds X on the row while it
//! writes or frees them, and no one reaches a value but through its row. So chunks take
//! no key locks of their own — only the intent lock on the tree (its writers count, as
//! in any tree), and before it the intent lock on the rows tree the value belongs to: a
//! shared lock on the rows tree (a check, TABLOCK) then keeps every writer of its values
//! out, and the two intent locks are always taken in that order.
//!
//! **Freeing.** A value that a row change drops (DELETE, an UPDATE that replaces it) is
//! not touched by the transaction: [`free`] enters it in the database's *free list* —
//! records in the boot tree keyed `'L' ‖ large-value tree root (u32 BE) ‖ value id (u64
//! BE)`, holding its length — as part of the transaction, so a rollback (whole or to a
//! savepoint) takes the entry out again and keeps the value. Once the transaction has
//! committed, its chunks and then its entry are removed with redo-only records (as ghosts
//! are cleaned): freeing costs a few bytes of log per chunk, never a copy of the value.
//! A reader at READ COMMITTED copies a row and reads its values later, holding no lock:
//! so the removal also waits for every reader that might hold a pointer to the value —
//! each reader *pins* the horizon ([`Horizon::pin`]) before it reads rows and unpins when
//! done, and a value freed while a pin older than its commit is held stays until that pin
//! goes. A snapshot (`crate::versions`) may read a row version that points to a value
//! freed after it was taken: so a value also waits until every snapshot older than the
//! commit that freed it has ended (`Horizon::snapshot_ended` looks again). What a crash (or a full queue) leaves in the free list is committed and
//! unreferenced: [`sweep`] removes it when the database next opens, before anyone reads.
//! Dropping a large-value tree takes its entries out in the same transaction
//! ([`forget`]), so an entry always names a live tree. A compaction entry is keyed
//! `'L' ‖ tree root ‖ value id ‖ generation (u32 BE)`; a value's removal takes every
//! generation's chunks.
//!
//! **Latch order.** The large-value tree's latch is taken only while no other tree latch
//! is held, or after the latch of its own table's rows tree (a read inside a row read);
//! never the other way round. Chunk writes and removals hold no other latch.

mod free;
mod write;

use std::ops::Bound;

use tessera_buffer::page::PageNo;
use tessera_errors::{msg, Error, Result};

use crate::btree::{self, Direction, ReadAhead};
use crate::row::OffRow;
use crate::space::Space;

pub(crate) use free::{dropped, forget, free, sweep, Freed};
pub use free::{FreeEntry, Horizon, Pin};
pub(crate) use write::write;
pub use write::{Rewriter, Writer};

/// Bytes of value in every chunk but a value's last.
pub const CHUNK_BYTES: usize = 8000;
/// The longest value (SQL Server's 2^31 - 1 bytes; longer is error 7119).
pub const MAX_VALUE_BYTES: u64 = tessera_types::MAX_LARGE_BYTES;
/// Chunk records read per latch acquisition.
const READ_BATCH_CHUNKS: usize = 64;
/// Values waiting in memory for their removal, at most (see `Horizon::committed`).
const MAX_PENDING_VALUES: usize = 1 << 20;
/// First byte of the free list's keys in the boot tree.
const FREE_PREFIX: u8 = b'L';

/// The key of chunk `n` of value `id` as generation `gen` of the value wrote it: value id
/// (u64 BE) ‖ chunk number (u32 BE) for generation 0, then the generation (u32 BE) for
/// the chunks a partial update wrote again. A chunk's versions sort together, oldest
/// first.
pub fn chunk_key(id: u64, n: u32, gen: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(16);
    k.extend_from_slice(&id.to_be_bytes());
    k.extend_from_slice(&n.to_be_bytes());
    if gen > 0 {
        k.extend_from_slice(&gen.to_be_bytes());
    }
    k
}

/// A chunk key's value id, chunk number and generation ([`chunk_key`]).
pub fn parse_chunk_key(key: &[u8]) -> Option<(u64, u32, u32)> {
    if key.len() != 12 && key.len() != 16 {
        return None;
    }
    let id = u64::from_be_bytes(key[..8].try_into().expect("8 bytes"));
    let n = u32::from_be_bytes(key[8..12].try_into().expect("4 bytes"));
    let gen = key.get(12..16).map_or(0, |g| u32::from_be_bytes(g.try_into().expect("4 bytes")));
    Some((id, n, gen))
}

/// How many chunks a value of `len` bytes has.
pub fn chunks(len: u64) -> u32 {
    len.div_ceil(CHUNK_BYTES as u64) as u32
}

/// The length of chunk `n` of a value of `len` bytes.
pub fn chunk_len(len: u64, n: u32) -> usize {
    (len - u64::from(n) * CHUNK_BYTES as u64).min(CHUNK_BYTES as u64) as usize
}

/// The body of [`Space::lob_read`]. Chunk `n` of `value` is the version of the newest
/// generation at or before the value's own (a later generation belongs to a partial
/// update of the value made since).
pub(crate) fn read(space: &Space, tree: PageNo, value: OffRow, from: u64, out: &mut [u8]) -> Result<()> {
    let end = from + out.len() as u64;
    if end > value.len {
        return Err(Error::Invalid(format!("bytes {from}..{end} of a value of {} bytes", value.len)));
    }
    if out.is_empty() {
        return Ok(());
    }
    let meta = space.tree(tree);
    let chunk = CHUNK_BYTES as u64;
    let (first, last) = ((from / chunk) as u32, ((end - 1) / chunk) as u32);
    // The chunk being read and the length of its newest version seen so far (a newer
    // one is copied over an older one).
    let (mut next, mut seen_len) = (first, None::<usize>);
    let fits = |n: u32, seen: Option<usize>| -> Result<()> {
        match seen {
            None => Err(missing(space, tree, value, n)),
            Some(l) if l != chunk_len(value.len, n) => {
                Err(damaged(space, tree, &format!("chunk {n} of value {} holds {l} bytes", value.id)))
            }
            Some(_) => Ok(()),
        }
    };
    let mut lo = Bound::Included(chunk_key(value.id, first, 0));
    let hi = Bound::Excluded(chunk_key(value.id, last + 1, 0));
    // The value's later chunks are asked of the disk while the first ones are copied.
    let mut ahead = ReadAhead::default();
    loop {
        let mut fault = None;
        let mut last_key = None;
        let (_, more) = {
            let _latch = meta.latch.read();
            btree::scan_visit(space, tree, &lo, &hi, Direction::Forward, READ_BATCH_CHUNKS, &mut ahead, |rec| {
                if fault.is_some() {
                    return;
                }
                let key = btree::leaf_key(rec);
                let Some((_, n, gen)) = parse_chunk_key(key) else {
                    fault = Some(damaged(space, tree, "a chunk key of the wrong size"));
                    return;
                };
                last_key = Some((n, gen));
                if gen > value.gen {
                    return;
                }
                if n != next {
                    if let Err(e) = fits(next, seen_len) {
                        fault = Some(e);
                        return;
                    }
                    if n != next + 1 {
                        fault = Some(missing(space, tree, value, next + 1));
                        return;
                    }
                    (next, seen_len) = (n, None);
                }
                let data = btree::leaf_value(rec);
                seen_len = Some(data.len());
                // This chunk's bytes within from..end, and where they go in `out`.
                let start = u64::from(n) * chunk;
                let lo = from.saturating_sub(start) as usize;
                let hi = ((end - start) as usize).min(data.len());
                if lo < hi {
                    let at = (start + lo as u64 - from) as usize;
                    out[at..at + hi - lo].copy_from_slice(&data[lo..hi]);
                }
            })?
        };
        if let Some(e) = fault {
            return Err(e);
        }
        match last_key {
            Some((n, gen)) if more => lo = Bound::Excluded(chunk_key(value.id, n, gen)),
            _ => break,
        }
    }
    fits(next, seen_len)?;
    if next != last {
        return Err(missing(space, tree, value, next + 1));
    }
    Ok(())
}

fn missing(space: &Space, tree: PageNo, value: OffRow, chunk: u32) -> Error {
    let page = format!("(1:{}), value {}", tree.raw(), value.id);
    msg::LOB_NODE_MISSING.engine(&[&space.name(), &page, &chunk])
}

fn damaged(space: &Space, tree: PageNo, detail: &str) -> Error {
    btree::damaged(space, tree, &format!("large-value tree: {detail}"))
}
