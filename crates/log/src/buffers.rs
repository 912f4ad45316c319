//! Log buffers shared by every database's log.
//!
//! A log appends its records into chunks it borrows from one [`LogBuffers`] and gives
//! them back as soon as the log writer has written them, so a database that is not
//! logging holds no log memory at all, however many databases are open. The pool keeps
//! given-back chunks for reuse up to its budget (the engine carves the budget out of max
//! server memory) and frees the rest. Appending never waits for a chunk: a log that needs
//! one while the pool is over budget still gets it, and then writes its own pending
//! records at once (see `Wal::append`), which gives its chunks back.
//!
//! Invariant: `lent_bytes + spare_bytes` is the capacity of every chunk alive, and
//! `spare_bytes <= budget_bytes` after every [`LogBuffers::give`].

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// Capacity of an ordinary chunk. A record bigger than this gets a chunk of its own
/// size, which is freed, not kept, when given back.
pub const CHUNK_BYTES: usize = 128 << 10;

/// The frames of one chunk whose CRC is still zero, as (offset in the chunk, VLF
/// sequence number); a small record's frame is about 150 bytes.
const UNSEALED_PER_CHUNK: usize = CHUNK_BYTES / 128;

/// Bytes of an ordinary chunk's bookkeeping beside its data.
const CHUNK_OVERHEAD_BYTES: usize = UNSEALED_PER_CHUNK * std::mem::size_of::<(usize, u32)>();

/// A stretch of log bytes waiting to be written at `file_offset`.
pub(crate) struct Chunk {
    pub(crate) file_offset: u64,
    pub(crate) data: Vec<u8>,
    /// Frames appended without their CRC: the writer fills them in just before it
    /// writes the chunk, so an appender copies its record in and leaves checksumming to
    /// the log writer.
    pub(crate) unsealed: Vec<(usize, u32)>,
    /// What the pool counted as lent for this chunk (the bookkeeping may grow since).
    lent_bytes: usize,
}

impl Chunk {
    /// Memory the chunk takes.
    fn bytes(&self) -> usize {
        self.data.capacity() + self.unsealed.capacity() * std::mem::size_of::<(usize, u32)>()
    }

    /// Bytes that still fit without growing the buffer.
    pub(crate) fn room(&self) -> usize {
        self.data.capacity() - self.data.len()
    }
}

/// What [`LogBuffers::stats`] reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogBufferStats {
    /// Bytes of chunks the logs hold now (records not yet written).
    pub lent_bytes: usize,
    /// Bytes of written chunks kept for reuse.
    pub spare_bytes: usize,
    /// Most bytes kept for reuse, and the level above which appenders write their own
    /// records at once.
    pub budget_bytes: usize,
    /// Chunks lent while the pool was over its budget.
    pub overdrafts: u64,
}

/// The pool of log chunks one engine's databases share.
pub struct LogBuffers {
    spare: Mutex<Vec<Chunk>>,
    lent_bytes: AtomicUsize,
    spare_bytes: AtomicUsize,
    budget_bytes: AtomicUsize,
    overdrafts: AtomicU64,
}

impl fmt::Debug for LogBuffers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogBuffers").field("stats", &self.stats()).finish()
    }
}

impl LogBuffers {
    /// A pool that keeps at most `budget_bytes` of chunks for reuse.
    pub fn new(budget_bytes: usize) -> Arc<LogBuffers> {
        Arc::new(LogBuffers {
            spare: Mutex::new(Vec::new()),
            lent_bytes: AtomicUsize::new(0),
            spare_bytes: AtomicUsize::new(0),
            budget_bytes: AtomicUsize::new(budget_bytes),
            overdrafts: AtomicU64::new(0),
        })
    }

    /// Changes the budget; spare chunks beyond the new one are freed now.
    pub fn set_budget(&self, budget_bytes: usize) {
        self.budget_bytes.store(budget_bytes, Ordering::Relaxed);
        let surplus = {
            let mut spare = self.spare.lock();
            let mut surplus = Vec::new();
            while self.spare_bytes.load(Ordering::Relaxed) > budget_bytes {
                let Some(chunk) = spare.pop() else { break };
                self.spare_bytes.fetch_sub(chunk.bytes(), Ordering::Relaxed);
                surplus.push(chunk);
            }
            surplus
        };
        // Freed outside the mutex: giving memory back to the OS can wait for the
        // process's mmap lock, and appenders must not wait with the pool's mutex.
        drop(surplus);
    }

    pub fn stats(&self) -> LogBufferStats {
        LogBufferStats {
            lent_bytes: self.lent_bytes.load(Ordering::Relaxed),
            spare_bytes: self.spare_bytes.load(Ordering::Relaxed),
            budget_bytes: self.budget_bytes.load(Ordering::Relaxed),
            overdrafts: self.overdrafts.load(Ordering::Relaxed),
        }
    }

    /// Whether the chunks alive take more than the budget.
    pub(crate) fn over_budget(&self) -> bool {
        self.lent_bytes.load(Ordering::Relaxed) + self.spare_bytes.load(Ordering::Relaxed)
            > self.budget_bytes.load(Ordering::Relaxed)
    }

    /// An empty chunk with room for at least `bytes`, to be written at `file_offset`.
    pub(crate) fn take(&self, file_offset: u64, bytes: usize) -> Chunk {
        if self.over_budget() {
            self.overdrafts.fetch_add(1, Ordering::Relaxed);
        }
        let reused = if bytes <= CHUNK_BYTES { self.spare.lock().pop() } else { None };
        let mut chunk = match reused {
            Some(chunk) => {
                self.spare_bytes.fetch_sub(chunk.bytes(), Ordering::Relaxed);
                chunk
            }
            None => Chunk {
                file_offset: 0,
                data: Vec::with_capacity(bytes.max(CHUNK_BYTES)),
                unsealed: Vec::with_capacity(UNSEALED_PER_CHUNK),
                lent_bytes: 0,
            },
        };
        assert!(chunk.data.is_empty() && chunk.unsealed.is_empty(), "a lent chunk is empty");
        chunk.file_offset = file_offset;
        chunk.lent_bytes = chunk.bytes();
        self.lent_bytes.fetch_add(chunk.lent_bytes, Ordering::Relaxed);
        chunk
    }

    /// Takes back a written chunk: kept for reuse while the spare chunks fit the
    /// budget, freed otherwise (and always when it is bigger than an ordinary chunk).
    pub(crate) fn give(&self, mut chunk: Chunk) {
        assert!(chunk.unsealed.is_empty(), "a written chunk is sealed");
        self.lent_bytes.fetch_sub(chunk.lent_bytes, Ordering::Relaxed);
        let bytes = chunk.bytes();
        let ordinary = chunk.data.capacity() == CHUNK_BYTES && bytes <= CHUNK_BYTES + CHUNK_OVERHEAD_BYTES;
        if ordinary && self.spare_bytes.load(Ordering::Relaxed) + bytes <= self.budget_bytes.load(Ordering::Relaxed) {
            chunk.data.clear();
            let mut spare = self.spare.lock();
            self.spare_bytes.fetch_add(bytes, Ordering::Relaxed);
            spare.push(chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_reused_within_the_budget_and_freed_beyond_it() {
        let pool = LogBuffers::new(2 * (CHUNK_BYTES + CHUNK_OVERHEAD_BYTES));
        let chunks: Vec<Chunk> = (0..3).map(|i| pool.take(i, 100)).collect();
        assert_eq!(pool.stats().lent_bytes, 3 * (CHUNK_BYTES + CHUNK_OVERHEAD_BYTES));
        assert!(pool.over_budget());
        for c in chunks {
            pool.give(c);
        }
        let s = pool.stats();
        assert_eq!((s.lent_bytes, s.spare_bytes), (0, 2 * (CHUNK_BYTES + CHUNK_OVERHEAD_BYTES)));
        let big = pool.take(7, CHUNK_BYTES + 1);
        assert!(big.room() > CHUNK_BYTES);
        assert_eq!(big.file_offset, 7);
        pool.give(big);
        assert_eq!(pool.stats().spare_bytes, 2 * (CHUNK_BYTES + CHUNK_OVERHEAD_BYTES), "a big chunk is not kept");
        pool.set_budget(0);
        assert_eq!(pool.stats().spare_bytes, 0);
    }
}
