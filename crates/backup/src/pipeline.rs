//! The threads that move chunks between the database and the stripes.
//!
//! Backup: the caller produces chunks (raw bytes, numbered 0, 1, 2, …) under a budget
//! of BUFFERCOUNT buffers; compressor threads (with COMPRESSION) turn them into stored
//! bytes; one writer thread per stripe writes chunk `k` to stripe `k mod n`, in order,
//! and ends the stripe with a trailer. Restore: one reader thread per stripe verifies
//! and decompresses; the caller merges the stripes back into chunk order.

use std::collections::BTreeMap;
use std::io::{BufReader, IoSlice, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use parking_lot::Condvar;
use tessera_io::MediaFile;

use crate::media::{damaged, damaged_set};
use crate::media::{encode_footer, read_chunk, ChunkHeader, ChunkKind, SetLocation, Trailer};
use crate::{write_failed, BackupError};

/// zstd level for COMPRESSION: fast enough to keep up with a disk.
const ZSTD_LEVEL: i32 = 1;

/// Chunk buffers handed back after use, so a backup or restore allocates (and the
/// kernel zeroes) its buffers once instead of once per chunk.
#[derive(Clone, Default)]
pub(crate) struct Recycler(Arc<Mutex<Vec<Vec<u8>>>>);

/// Spare buffers kept at most (beyond them, buffers are freed).
const MAX_SPARE_BUFFERS: usize = 64;

impl Recycler {
    pub fn take(&self, capacity: usize) -> Vec<u8> {
        let spare = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut v = spare.unwrap_or_default();
        v.clear();
        v.reserve(capacity);
        v
    }

    pub fn give(&self, v: Vec<u8>) {
        let mut pool = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < MAX_SPARE_BUFFERS {
            pool.push(v);
        }
    }
}

/// Counts free buffers; the producer waits for one before making a chunk.
struct Budget {
    free: parking_lot::Mutex<u32>,
    cv: Condvar,
}

impl Budget {
    fn acquire(&self, failed: &AtomicBool) -> bool {
        let mut free = self.free.lock();
        while *free == 0 && !failed.load(Ordering::Acquire) {
            self.cv.wait_for(&mut free, std::time::Duration::from_millis(50));
        }
        if failed.load(Ordering::Acquire) {
            return false;
        }
        *free -= 1;
        true
    }

    fn release(&self) {
        *self.free.lock() += 1;
        self.cv.notify_one();
    }
}

struct Stored {
    seq: u64,
    kind: ChunkKind,
    compressed: bool,
    raw_len: u32,
    bytes: Vec<u8>,
}

impl Stored {
    fn from_raw(seq: u64, kind: ChunkKind, raw: Vec<u8>, compress: bool, recycler: &Recycler) -> Stored {
        let raw_len = raw.len() as u32;
        if compress {
            let mut out = recycler.take(zstd::zstd_safe::compress_bound(raw.len()));
            if zstd::bulk::compress_to_buffer(&raw, &mut out, ZSTD_LEVEL).is_ok() && out.len() < raw.len() {
                recycler.give(raw);
                return Stored { seq, kind, compressed: true, raw_len, bytes: out };
            }
            recycler.give(out);
        }
        Stored { seq, kind, compressed: false, raw_len, bytes: raw }
    }
}

enum ToWriter {
    Chunk(Stored),
    Finish(Trailer),
}

/// A stripe file positioned where the set's first chunk goes.
pub(crate) struct StripeOut {
    pub path: PathBuf,
    pub file: MediaFile,
    /// Where the set starts: a failed backup cuts the file back to here.
    pub set_start: u64,
}

#[derive(Default)]
pub(crate) struct Totals {
    pub raw_bytes: AtomicU64,
    pub stored_bytes: AtomicU64,
}

pub(crate) struct WritePipeline {
    budget: Arc<Budget>,
    failed: Arc<AtomicBool>,
    to_compress: Option<Sender<(u64, ChunkKind, Vec<u8>)>>,
    compressors: Vec<JoinHandle<()>>,
    stripes: Vec<Sender<ToWriter>>,
    writers: Vec<JoinHandle<Result<(), BackupError>>>,
    next_seq: u64,
    pub totals: Arc<Totals>,
    recycler: Recycler,
}

impl WritePipeline {
    pub fn start(outs: Vec<StripeOut>, set_guid: u128, buffers: u32, compress: bool) -> WritePipeline {
        let n = outs.len() as u64;
        let budget = Arc::new(Budget { free: parking_lot::Mutex::new(buffers), cv: Condvar::new() });
        let failed = Arc::new(AtomicBool::new(false));
        let totals = Arc::new(Totals::default());
        let recycler = Recycler::default();
        let mut stripes = Vec::new();
        let mut writers = Vec::new();
        for (i, out) in outs.into_iter().enumerate() {
            let (tx, rx) = channel();
            stripes.push(tx);
            let (budget, failed, totals, recycler) = (budget.clone(), failed.clone(), totals.clone(), recycler.clone());
            writers.push(
                std::thread::Builder::new()
                    .name(format!("tessera-backup-write-{i}"))
                    .spawn(move || write_stripe(out, rx, i as u64, n, set_guid, &budget, &failed, &totals, &recycler))
                    .expect("spawn a backup writer"),
            );
        }
        let (to_compress, compressors) = if compress {
            let (tx, rx) = channel::<(u64, ChunkKind, Vec<u8>)>();
            let rx = Arc::new(Mutex::new(rx));
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
            let handles = (0..threads)
                .map(|i| {
                    let rx = rx.clone();
                    let stripes = stripes.clone();
                    let recycler = recycler.clone();
                    std::thread::Builder::new()
                        .name(format!("tessera-backup-zstd-{i}"))
                        .spawn(move || loop {
                            let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                            let Ok((seq, kind, raw)) = job else { return };
                            let stored = Stored::from_raw(seq, kind, raw, true, &recycler);
                            let _ = stripes[(seq % n) as usize].send(ToWriter::Chunk(stored));
                        })
                        .expect("spawn a compressor")
                })
                .collect();
            (Some(tx), handles)
        } else {
            (None, Vec::new())
        };
        WritePipeline { budget, failed, to_compress, compressors, stripes, writers, next_seq: 0, totals, recycler }
    }

    /// An empty buffer for the next chunk (a recycled one when available).
    pub fn buffer(&self, capacity: usize) -> Vec<u8> {
        self.recycler.take(capacity)
    }

    /// Waits for a free buffer. False once a writer has failed: stop producing and call
    /// [`WritePipeline::finish`] to collect the error.
    pub fn reserve(&self) -> bool {
        self.budget.acquire(&self.failed)
    }

    /// Hands a chunk (a buffer reserved with [`WritePipeline::reserve`]) to the stripes.
    pub fn send(&mut self, kind: ChunkKind, raw: Vec<u8>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.totals.raw_bytes.fetch_add(raw.len() as u64, Ordering::Relaxed);
        match &self.to_compress {
            Some(tx) => {
                let _ = tx.send((seq, kind, raw));
            }
            None => {
                let n = self.stripes.len() as u64;
                let stored = Stored::from_raw(seq, kind, raw, false, &self.recycler);
                let _ = self.stripes[(seq % n) as usize].send(ToWriter::Chunk(stored));
            }
        }
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Flushes everything, writes each stripe's trailer (unless something failed) and
    /// returns the first error. On error every stripe is cut back to where the set
    /// began, so the media holds no partial set.
    pub fn finish(mut self, trailer: Option<Trailer>) -> Result<(), BackupError> {
        drop(self.to_compress.take());
        for h in self.compressors.drain(..) {
            let _ = h.join();
        }
        if trailer.is_none() {
            self.failed.store(true, Ordering::Release);
        }
        for tx in &self.stripes {
            let t = Trailer { chunks_total: self.next_seq, ..trailer.clone().unwrap_or_default() };
            let _ = tx.send(ToWriter::Finish(t));
        }
        self.stripes.clear();
        let mut first = None;
        for h in self.writers.drain(..) {
            // A writer that panicked is tessera's failure, reported as SQL Server reports its own.
            let r = h.join().unwrap_or_else(|_| Err(tessera_errors::msg::INTERNAL_QUERY_PROCESSOR_ERROR.err().into()));
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

#[allow(clippy::too_many_arguments)]
fn write_stripe(
    mut out: StripeOut,
    rx: Receiver<ToWriter>,
    index: u64,
    n: u64,
    set_guid: u128,
    budget: &Budget,
    failed: &AtomicBool,
    totals: &Totals,
    recycler: &Recycler,
) -> Result<(), BackupError> {
    let mut pending: BTreeMap<u64, Stored> = BTreeMap::new();
    let mut expect = index;
    let mut written = 0u64;
    let mut error: Option<BackupError> = None;
    // Header and bytes in one system call (writev), looping over short writes.
    let write = |out: &mut StripeOut, header: &ChunkHeader, bytes: &[u8]| -> Result<(), BackupError> {
        let h = header.encode();
        let mut done = 0usize;
        let total = h.len() + bytes.len();
        while done < total {
            let r = if done < h.len() {
                out.file.write_vectored(&[IoSlice::new(&h[done..]), IoSlice::new(bytes)])
            } else {
                out.file.write(&bytes[done - h.len()..])
            };
            match r {
                Ok(0) => return Err(write_failed(&out.path, &std::io::Error::from(std::io::ErrorKind::WriteZero))),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(write_failed(&out.path, &e)),
            }
        }
        Ok(())
    };
    for msg in rx {
        match msg {
            ToWriter::Chunk(c) => {
                pending.insert(c.seq, c);
                while let Some(c) = pending.remove(&expect) {
                    if error.is_none() {
                        let header = ChunkHeader {
                            kind: c.kind,
                            compressed: c.compressed,
                            seq: c.seq,
                            raw_len: c.raw_len,
                            stored_len: c.bytes.len() as u32,
                            data_crc: crc32c::crc32c(&c.bytes),
                            set_guid,
                        };
                        match write(&mut out, &header, &c.bytes) {
                            Ok(()) => {
                                totals.stored_bytes.fetch_add(c.bytes.len() as u64, Ordering::Relaxed);
                                written += 1;
                            }
                            Err(e) => {
                                error = Some(e);
                                failed.store(true, Ordering::Release);
                            }
                        }
                    }
                    recycler.give(c.bytes);
                    budget.release();
                    expect += n;
                }
            }
            ToWriter::Finish(mut trailer) => {
                debug_assert!(pending.is_empty() || error.is_some() || failed.load(Ordering::Acquire));
                if error.is_none() && !failed.load(Ordering::Acquire) {
                    trailer.chunks_in_family = written;
                    let json = serde_json::to_vec(&trailer).expect("trailer serializes");
                    let header = ChunkHeader {
                        kind: ChunkKind::Trailer,
                        compressed: false,
                        seq: trailer.chunks_total + index,
                        raw_len: json.len() as u32,
                        stored_len: json.len() as u32,
                        data_crc: crc32c::crc32c(&json),
                        set_guid,
                    };
                    let trailer_at = out.file.stream_position().map_err(|e| write_failed(&out.path, &e));
                    let r = trailer_at.and_then(|at| {
                        write(&mut out, &header, &json)?;
                        out.file
                            .write_all(&encode_footer(out.set_start, at))
                            .map_err(|e| write_failed(&out.path, &e))?;
                        out.file.sync_all().map_err(|e| write_failed(&out.path, &e))
                    });
                    if let Err(e) = r {
                        error = Some(e);
                        failed.store(true, Ordering::Release);
                    }
                }
                break;
            }
        }
    }
    if error.is_some() || failed.load(Ordering::Acquire) {
        // The set is unusable: take it off the media. Should even that fail, it has no
        // trailer, and restores refuse a set without one.
        let _ = out.file.set_len(out.set_start);
        let _ = out.file.sync_all();
    }
    error.map_or(Ok(()), Err)
}

/// One chunk as restore sees it: verified and decompressed.
pub(crate) struct Chunk {
    pub kind: ChunkKind,
    pub seq: u64,
    pub data: Vec<u8>,
}

type FromReader = Result<Chunk, BackupError>;

/// Reads one stripe's chunks of a set in order and sends them on.
fn read_stripe(
    path: PathBuf,
    loc: SetLocation,
    buffer: usize,
    tx: std::sync::mpsc::SyncSender<FromReader>,
    recycler: Recycler,
) {
    let result = (|| -> Result<(), BackupError> {
        let mut file = MediaFile::open(&path).map_err(|e| crate::open_failed(&path, &e))?;
        file.seek(SeekFrom::Start(loc.chunks_at)).map_err(|e| crate::read_failed(&path, &e))?;
        let mut r = BufReader::with_capacity(buffer, file);
        loop {
            let Some((h, bytes)) = read_chunk(&mut r, &path, recycler.take(buffer))? else {
                return Err(damaged(&path, "the backup set ends before its trailer"));
            };
            if h.set_guid != loc.header.backup_set_guid {
                return Err(damaged(&path, "a chunk belongs to another backup set"));
            }
            let data = if h.compressed {
                let mut out = recycler.take(h.raw_len as usize);
                let ok = zstd::bulk::decompress_to_buffer(&bytes, &mut out).is_ok_and(|n| n == h.raw_len as usize);
                recycler.give(bytes);
                if !ok {
                    return Err(damaged(&path, &format!("chunk {} does not decompress", h.seq)));
                }
                out
            } else {
                bytes
            };
            let last = h.kind == ChunkKind::Trailer;
            if tx.send(Ok(Chunk { kind: h.kind, seq: h.seq, data })).is_err() || last {
                return Ok(());
            }
        }
    })();
    if let Err(e) = result {
        let _ = tx.send(Err(e));
    }
}

/// Reads a set from all its stripes (in parallel) and hands its chunks to `apply` in
/// sequence order. Checks that every chunk is there exactly once and that every
/// stripe's trailer agrees. Returns the trailer.
pub(crate) fn read_set(
    stripes: Vec<(PathBuf, SetLocation)>,
    buffers: u32,
    buffer_size: u32,
    mut apply: impl FnMut(&Chunk) -> Result<(), BackupError>,
) -> Result<Trailer, BackupError> {
    let n = stripes.len();
    let recycler = Recycler::default();
    let per_stripe = (buffers as usize / n).max(1);
    let mut rxs = Vec::new();
    let mut handles = Vec::new();
    let paths: Vec<PathBuf> = stripes.iter().map(|(p, _)| p.clone()).collect();
    for (path, loc) in stripes {
        let (tx, rx) = sync_channel(per_stripe);
        rxs.push(rx);
        let recycler = recycler.clone();
        handles.push(
            std::thread::Builder::new()
                .name("tessera-restore-read".into())
                .spawn(move || read_stripe(path, loc, buffer_size as usize, tx, recycler))
                .expect("spawn a restore reader"),
        );
    }
    let result = merge(&rxs, &paths, &mut |c: Chunk| {
        let r = apply(&c);
        recycler.give(c.data);
        r
    });
    drop(rxs);
    for h in handles {
        let _ = h.join();
    }
    result
}

fn merge(
    rxs: &[Receiver<FromReader>],
    paths: &[PathBuf],
    apply: &mut impl FnMut(Chunk) -> Result<(), BackupError>,
) -> Result<Trailer, BackupError> {
    let n = rxs.len();
    let mut heads: Vec<Option<Chunk>> = (0..n).map(|_| None).collect();
    let mut trailers: Vec<Option<(Trailer, u64)>> = vec![None; n];
    let mut counts = vec![0u64; n];
    let mut expect = 0u64;
    loop {
        for i in 0..n {
            if heads[i].is_none() && trailers[i].is_none() {
                let c = rxs[i].recv().map_err(|_| damaged(&paths[i], "the stripe could not be read to its end"))??;
                if c.kind == ChunkKind::Trailer {
                    let t: Trailer = serde_json::from_slice(&c.data)
                        .map_err(|_| damaged(&paths[i], "the backup set trailer is damaged"))?;
                    trailers[i] = Some((t, counts[i]));
                } else {
                    heads[i] = Some(c);
                }
            }
        }
        let next = (0..n).find(|&i| heads[i].as_ref().is_some_and(|c| c.seq == expect));
        match next {
            Some(i) => {
                let c = heads[i].take().expect("a head");
                counts[i] += 1;
                expect += 1;
                apply(c)?;
            }
            None if heads.iter().all(Option::is_none) => break,
            None => return Err(damaged_set(&format!("chunk {expect} is missing from every stripe"))),
        }
    }
    let (first, _) = trailers[0].clone().expect("every stripe ended with a trailer");
    for (i, t) in trailers.iter().enumerate() {
        let (t, got) = t.as_ref().expect("every stripe ended with a trailer");
        if t.chunks_total != first.chunks_total || t.chunks_in_family != *got {
            return Err(damaged(&paths[i], "the stripe does not hold the chunks its trailer lists"));
        }
    }
    if expect != first.chunks_total {
        return Err(damaged_set(&format!("{expect} of its {} chunks were found", first.chunks_total)));
    }
    Ok(first)
}
