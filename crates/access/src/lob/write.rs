//! Writing values: a new one ([`Writer`]), or a value's next generation that changes part
//! of it ([`Rewriter`]).

use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tessera_buffer::page::PageNo;
use tessera_errors::{msg, Result};

use super::{chunk_key, damaged, free, read, CHUNK_BYTES, MAX_VALUE_BYTES};
use crate::btree::{self, Direction, ReadAhead};
use crate::row::OffRow;
use crate::space::Space;
use crate::txn::{write, TreeMeta, Txn};

/// Bytes of the old value copied per read by a [`Rewriter`].
const COPY_BYTES: usize = 32 * CHUNK_BYTES;

/// The body of [`Space::lob_write`].
pub(crate) fn write(space: &Space, txn: &mut Txn, rows: PageNo, tree: PageNo, data: &[u8]) -> Result<OffRow> {
    let mut w = Writer::start(space, txn, rows, tree)?;
    w.append(space, txn, data)?;
    w.finish(space, txn)
}

/// A value being written in pieces ([`Space::lob_writer`]): whole chunks go to the tree as
/// they fill, so a value of any length passes through a chunk of memory.
pub struct Writer {
    meta: Arc<TreeMeta>,
    id: u64,
    /// The generation whose chunks it writes (0 for a new value).
    gen: u32,
    /// The next chunk's number, and the value's bytes up to it.
    chunks: u32,
    written: u64,
    /// The start of the next chunk (shorter than a chunk).
    pending: Vec<u8>,
}

impl Writer {
    /// The body of [`Space::lob_writer`].
    pub(crate) fn start(space: &Space, txn: &mut Txn, rows: PageNo, tree: PageNo) -> Result<Writer> {
        let meta = intent_locks(space, txn, rows, tree)?;
        let id = next_id(space, &meta)?;
        Ok(Writer { meta, id, gen: 0, chunks: 0, written: 0, pending: Vec::new() })
    }

    /// Appends `data` to the value (error 7119 past [`MAX_VALUE_BYTES`]).
    pub fn append(&mut self, space: &Space, txn: &mut Txn, mut data: &[u8]) -> Result<()> {
        if self.written + (self.pending.len() + data.len()) as u64 > MAX_VALUE_BYTES {
            return Err(msg::LOB_TOO_LARGE.engine(&[]));
        }
        if !self.pending.is_empty() {
            let take = (CHUNK_BYTES - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() < CHUNK_BYTES {
                return Ok(());
            }
            let chunk = std::mem::take(&mut self.pending);
            self.put(space, txn, &chunk)?;
        }
        let mut whole = data.chunks_exact(CHUNK_BYTES);
        for chunk in whole.by_ref() {
            self.put(space, txn, chunk)?;
        }
        self.pending.extend_from_slice(whole.remainder());
        Ok(())
    }

    /// Writes the last chunk; the pointer a row keeps to the value.
    pub fn finish(mut self, space: &Space, txn: &mut Txn) -> Result<OffRow> {
        self.flush(space, txn)?;
        Ok(OffRow { id: self.id, len: self.written, gen: self.gen })
    }

    fn flush(&mut self, space: &Space, txn: &mut Txn) -> Result<()> {
        if !self.pending.is_empty() {
            let chunk = std::mem::take(&mut self.pending);
            self.put(space, txn, &chunk)?;
        }
        Ok(())
    }

    fn put(&mut self, space: &Space, txn: &mut Txn, chunk: &[u8]) -> Result<()> {
        debug_assert!(chunk.len() <= CHUNK_BYTES && !chunk.is_empty());
        let key = chunk_key(self.id, self.chunks, self.gen);
        match txn.lob_bulk.take() {
            // A minimally logged load of this tree: new values' chunks come in key order.
            Some(mut load) if load.tree() == self.meta.root => {
                load.push(space, txn, &key, chunk)?;
                txn.lob_bulk = Some(load);
            }
            other => {
                txn.lob_bulk = other;
                write::insert_locked(space, txn, &self.meta, &key, chunk)?;
            }
        }
        self.chunks += 1;
        self.written += chunk.len() as u64;
        Ok(())
    }
}

/// A partial update of a stored value ([`Space::lob_rewriter`]): `removed` bytes from
/// byte `at` of the old value replaced with the bytes appended, written as the value's
/// next generation (see the module's documentation) — the chunks from the one holding
/// `at`, to the end of the change when the length stays, else to the value's end.
pub struct Rewriter {
    tree: PageNo,
    old: OffRow,
    at: u64,
    removed: u64,
    inserted: u64,
    w: Writer,
}

impl Rewriter {
    /// The body of [`Space::lob_rewriter`]. `removed` past the value's end stops at it.
    pub(crate) fn start(
        space: &Space,
        txn: &mut Txn,
        rows: PageNo,
        tree: PageNo,
        old: OffRow,
        at: u64,
        removed: u64,
    ) -> Result<Rewriter> {
        assert!(at <= old.len, "a partial update starts within the value");
        let removed = removed.min(old.len - at);
        let meta = intent_locks(space, txn, rows, tree)?;
        let mut w = match old.gen.checked_add(1) {
            Some(gen) => {
                let first = (at / CHUNK_BYTES as u64) as u32;
                let written = u64::from(first) * CHUNK_BYTES as u64;
                Writer { meta, id: old.id, gen, chunks: first, written, pending: Vec::new() }
            }
            // Out of generations: written again whole, as a new value.
            None => Writer { id: next_id(space, &meta)?, meta, gen: 0, chunks: 0, written: 0, pending: Vec::new() },
        };
        // The start of the first chunk written, before the change.
        let from = w.written;
        copy(space, txn, tree, old, from, at, &mut w)?;
        Ok(Rewriter { tree, old, at, removed, inserted: 0, w })
    }

    /// Appends the bytes that replace the removed ones (error 7119 if the value would
    /// grow past [`MAX_VALUE_BYTES`]).
    pub fn append(&mut self, space: &Space, txn: &mut Txn, data: &[u8]) -> Result<()> {
        let rest = self.old.len - self.at - self.removed;
        if self.at + self.inserted + data.len() as u64 + rest > MAX_VALUE_BYTES {
            return Err(msg::LOB_TOO_LARGE.engine(&[]));
        }
        self.w.append(space, txn, data)?;
        self.inserted += data.len() as u64;
        Ok(())
    }

    /// Writes the rest of the changed chunks; the pointer to the new generation (the old
    /// pointer itself when nothing changes). The old generation's chunks that only it
    /// reads are removed after the commit (its compaction is entered in the free list;
    /// the old value is freed instead when it was written again whole).
    pub fn finish(mut self, space: &Space, txn: &mut Txn) -> Result<OffRow> {
        let Rewriter { tree, old, at, removed, inserted, .. } = self;
        let same_id = self.w.id == old.id;
        if same_id && removed == 0 && inserted == 0 {
            // Nothing is written: what was copied is the start of one chunk.
            return Ok(old);
        }
        let tail = at + removed;
        let new_len = at + inserted + (old.len - tail);
        if same_id && inserted == removed {
            // The bytes after the change stay where they are: only the chunks it touched.
            let touched_end = (at + inserted).next_multiple_of(CHUNK_BYTES as u64).min(old.len);
            copy(space, txn, tree, old, tail, touched_end, &mut self.w)?;
        } else {
            copy(space, txn, tree, old, tail, old.len, &mut self.w)?;
        }
        self.w.flush(space, txn)?;
        let new = OffRow { id: self.w.id, len: new_len, gen: self.w.gen };
        if same_id {
            free::compact(space, txn, tree, new)?;
        } else {
            free::free(space, txn, tree, old)?;
        }
        Ok(new)
    }
}

/// Appends bytes `from..to` of the stored value `old` to `w`, a piece at a time.
fn copy(space: &Space, txn: &mut Txn, tree: PageNo, old: OffRow, from: u64, to: u64, w: &mut Writer) -> Result<()> {
    let mut buf = vec![0u8; COPY_BYTES.min(to.saturating_sub(from) as usize)];
    let mut at = from;
    while at < to {
        let n = buf.len().min((to - at) as usize);
        read(space, tree, old, at, &mut buf[..n])?;
        w.append(space, txn, &buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

/// The intent locks a writer of `tree`'s values takes: on the rows tree first, then on
/// the large-value tree (whose meta it returns).
fn intent_locks(space: &Space, txn: &mut Txn, rows: PageNo, tree: PageNo) -> Result<Arc<TreeMeta>> {
    space.tree_locks(txn, rows, true)?;
    let i = space.tree_locks(txn, tree, true)?;
    Ok(txn.trees[i].meta.clone())
}

/// A new value id for the tree: one more than the largest stored, then counting up.
fn next_id(space: &Space, meta: &TreeMeta) -> Result<u64> {
    if meta.lob_next_id.load(Ordering::Acquire) == 0 {
        let _latch = meta.latch.read();
        let (last, _) = btree::scan_batch(
            space,
            meta.root,
            &Bound::Unbounded,
            &Bound::Unbounded,
            Direction::Backward,
            1,
            &mut ReadAhead::off(),
        )?;
        let first = match last.first() {
            Some(rec) => {
                let key = btree::leaf_key(rec);
                let id = key.get(..8).ok_or_else(|| damaged(space, meta.root, "a chunk key shorter than 12 bytes"))?;
                u64::from_be_bytes(id.try_into().expect("8 bytes")) + 1
            }
            None => 1,
        };
        let _ = meta.lob_next_id.compare_exchange(0, first, Ordering::AcqRel, Ordering::Acquire);
    }
    Ok(meta.lob_next_id.fetch_add(1, Ordering::AcqRel))
}
