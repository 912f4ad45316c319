//! The log file: header with the master record, then virtual log files (VLFs).
//!
//! ```text
//! file:   [header 4096: magic, version, family @16, master slot A @512, master slot B @1024] [VLF] ...
//! VLF:    [VLF header 512: magic, seq, size, crc] [frame] [frame] ... [end marker]
//! frame:  len u32 | crc32c(seq, len, payload) u32 | payload (a LogRecord)
//! ```
//! A VLF with sequence `seq` holds the LSNs `seq:512 .. seq:size`. Because the frame
//! checksum covers the VLF's sequence, frames left over from an earlier use of a
//! recycled VLF never validate: the log ends at the first frame that does not.
//! A frame with `len == 0` marks the end of a VLF: the log continues in the VLF whose
//! sequence is one higher.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tessera_errors::{Error, Result};
use tessera_io::stats::{FileKind, FileSample, Histogram};
use tessera_io::{DataFile, OpenMode};

use crate::buffers::{Chunk, LogBuffers, CHUNK_BYTES};
use crate::growth::{grown_size, Growth, LOG_GROWTH};
use crate::reader::WalReader;
use crate::record::LogRecord;
use crate::writer::{background_writer, Turn};
use crate::Lsn;

pub(crate) const MAGIC: &[u8; 8] = b"TSRALOG1";
/// The log file format this build writes and reads (docs/FORMAT.md, "Format versions").
pub const LOG_FORMAT_VERSION: u32 = 1;
const VLF_MAGIC: &[u8; 4] = b"VLF1";
pub(crate) const FILE_HEADER: u64 = 4096;
/// Where the header keeps the file family (u128 LE), after the magic and the version.
const FAMILY_OFFSET: u64 = 16;
pub(crate) const MASTER_SLOTS: [u64; 2] = [512, 1024];
pub(crate) const VLF_HEADER: u32 = 512;
pub(crate) const FRAME_HEADER: u32 = 8;
/// Largest record payload; bounds every read buffer.
pub const MAX_RECORD: usize = 4 << 20;
/// Buffered log bytes (in multiples of `write_buffer`) at which an appender writes them
/// itself instead of leaving it to the background log writer.
const BACKPRESSURE: usize = 8;

/// A VLF must fit the 32-bit offset of an LSN.
pub(crate) const MAX_VLF_SIZE: u64 = 1 << 30;
/// The smallest VLF of a log split four ways at creation.
const MIN_SPLIT_VLF: u64 = 64 << 10;
/// The smallest VLF a new log starts with: room for what creating a database logs (its
/// first pages and catalog, about 8.5 KiB) beside the largest frame of a change.
pub const MIN_FIRST_VLF: u64 = 24 << 10;

/// Sizes of the log file.
#[derive(Clone, Debug)]
pub struct LogConfig {
    /// Size of a new log file in bytes: its header and four VLFs of a quarter of this each
    /// when that is at least 64 KiB, otherwise its header and one VLF of the rest (at
    /// least [`MIN_FIRST_VLF`]): an empty database's log stays small and grows as it fills.
    pub initial_size: u64,
    /// How the file grows (None: a quarter of its size, 128 KiB to 256 MiB at a time).
    pub growth: Option<Growth>,
    /// The log file never grows beyond this many bytes; appending past it fails with
    /// error 9002.
    pub max_size: u64,
    /// Buffered log bytes that trigger a write (without sync) by the appender.
    pub write_buffer: usize,
    /// Where the log borrows its buffers; an engine's databases share one pool.
    pub buffers: Arc<LogBuffers>,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            initial_size: FILE_HEADER + MIN_FIRST_VLF,
            growth: None,
            max_size: 2 << 40,
            write_buffer: 1 << 20,
            buffers: LogBuffers::new(16 << 20),
        }
    }
}

/// The record that says where recovery starts; stored twice in the file header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Master {
    /// LSN of the last complete checkpoint record (0: none yet).
    pub checkpoint_lsn: Lsn,
    /// Lowest LSN recovery or rollback may still need; VLFs below it are reusable.
    pub begin_lsn: Lsn,
}

#[derive(Clone, Debug, Default)]
pub struct LogStats {
    pub file_size: u64,
    pub vlf_count: usize,
    pub active_vlfs: usize,
    /// Bytes of the log from the truncation point to its end: what recovery, a rollback
    /// or the next log backup still needs (SQL Server's "log space used").
    pub used_bytes: u64,
    pub end_lsn: Lsn,
    pub durable_lsn: Lsn,
    pub flushes: u64,
    pub bytes_written: u64,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Vlf {
    pub(crate) offset: u64,
    pub(crate) size: u64,
    pub(crate) seq: u32,
}

/// Fills in the CRC of every frame of `chunk` appended without one.
fn seal(chunk: &mut Chunk) {
    for &(at, seq) in &chunk.unsealed {
        let len = u32::from_le_bytes(chunk.data[at..at + 4].try_into().unwrap());
        let end = at + FRAME_HEADER as usize + len as usize;
        let crc = frame_crc(seq, len, &chunk.data[at + FRAME_HEADER as usize..end]);
        chunk.data[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
    }
    chunk.unsealed.clear();
}

struct State {
    vlfs: Vec<Vlf>,
    cur: usize,
    next_off: u32,
    /// Records not yet written, in chunks borrowed from `LogConfig::buffers`.
    pending: Vec<Chunk>,
    pending_bytes: usize,
    /// Cached capacity of the reusable VLFs other than the current one (None: stale).
    reusable: Option<u64>,
    truncation_lsn: Lsn,
    file_len: u64,
    master_serial: u64,
    reuse_wait: &'static str,
    /// Truncation stops at the lowest of these (`Lsn::MAX`: no hold), see [`Hold`].
    holds: [Lsn; 2],
    /// The redo point of the newest checkpoint begun (see [`Wal::begin_checkpoint`]).
    redo_point: Lsn,
    /// How the file grows, and how big it may get.
    growth: Option<Growth>,
    max_size: u64,
    /// The largest frame appenders promise (see [`Wal::set_frame_limit`]): room is
    /// counted in the VLFs as what frames of this size are sure to fill.
    frame_limit: u64,
}

impl State {
    /// Bytes of frames the VLFs below the truncation point (other than the current one)
    /// are sure to take (see [`State::sure_room`]).
    fn reusable_bytes(&mut self) -> u64 {
        if let Some(r) = self.reusable {
            return r;
        }
        let trunc_seq = self.truncation_lsn.seq();
        let cur = self.cur;
        let r = self
            .vlfs
            .iter()
            .enumerate()
            .filter(|&(i, v)| i != cur && v.seq < trunc_seq)
            .map(|(_, v)| self.sure_room(v.size - u64::from(VLF_HEADER)))
            .sum();
        self.reusable = Some(r);
        r
    }

    /// What a stretch of `free` bytes in one VLF is sure to take of frames no bigger than
    /// the frame limit: appending moves to another VLF only when the next frame does not
    /// fit, which leaves less than one frame unused.
    fn sure_room(&self, free: u64) -> u64 {
        free.saturating_sub(self.frame_limit)
    }

    fn end_lsn(&self) -> Lsn {
        Lsn::new(self.vlfs[self.cur].seq, self.next_off)
    }

    /// The pending chunk that continues at `file_offset` with room for `bytes`, borrowed
    /// from `buffers` if the last one has no room (a buffer is never regrown: each
    /// regrowth of a big allocation is an mremap, which waits for the process's mmap lock,
    /// while appenders wait for this state).
    fn chunk_at(&mut self, file_offset: u64, bytes: usize, buffers: &LogBuffers) -> &mut Chunk {
        let fits = matches!(self.pending.last(),
            Some(c) if c.file_offset + c.data.len() as u64 == file_offset && c.room() >= bytes);
        if !fits {
            self.pending.push(buffers.take(file_offset, bytes));
        }
        self.pending.last_mut().expect("a pending chunk")
    }

    fn push_bytes(&mut self, file_offset: u64, bytes: &[u8], buffers: &LogBuffers) {
        self.chunk_at(file_offset, bytes.len(), buffers).data.extend_from_slice(bytes);
        self.pending_bytes += bytes.len();
    }
}

/// Something that keeps log records from being truncated, whatever checkpoints say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// A backup in progress needs the log from its checkpoint on.
    Backup = 0,
    /// FULL and BULK_LOGGED databases keep the log until a log backup has copied it.
    LogBackup = 1,
}

impl Hold {
    /// The `log_reuse_wait_desc` this hold shows when it is what keeps the log.
    pub fn reason(self) -> &'static str {
        match self {
            Hold::Backup => "ACTIVE_BACKUP_OR_RESTORE",
            Hold::LogBackup => "LOG_BACKUP",
        }
    }
}

/// How long each fdatasync of a log by [`Wal::flush`] (a group commit's) took, for every
/// log of the process.
static FLUSH_LATENCY: Histogram = Histogram::new();

/// The latencies of the logs' flushes ([`Wal::flush`]'s fdatasync, failed ones too) since
/// the process started.
pub fn flush_latency() -> &'static Histogram {
    &FLUSH_LATENCY
}

/// Bytes every log of the process has written to its file.
static BYTES_WRITTEN: AtomicU64 = AtomicU64::new(0);

/// The bytes every log has written to its file since the process started (each
/// [`Wal::bytes_written`] counts one log's since it opened).
pub fn bytes_written_total() -> u64 {
    BYTES_WRITTEN.load(Ordering::Relaxed)
}

/// A database's write-ahead log.
pub struct Wal {
    /// This log, for handing to the background log writer.
    me: Weak<Wal>,
    /// A background write of pending bytes has been requested and not started yet.
    pub(crate) write_queued: AtomicBool,
    pub(crate) file: DataFile,
    database: String,
    config: LogConfig,
    state: Mutex<State>,
    /// One writer of pending bytes at a time.
    writing: Turn,
    /// One fdatasync at a time. Writers never wait for a sync: a checkpoint's or a
    /// commit's sync does not stop the log writer, nor make appenders write for it.
    syncing: Turn,
    /// Every frame starting below this LSN has been written to the file.
    written: AtomicU64,
    /// Every frame starting below this LSN is durable.
    durable: AtomicU64,
    failed: AtomicBool,
    flushes: AtomicU64,
    bytes_written: AtomicU64,
    /// Lock-free copy of `State::redo_point`.
    redo_point: AtomicU64,
    /// Bytes appendable without growing the file (the current VLF's rest plus the
    /// reusable VLFs) as of the last append or room check (0 until then): lets
    /// `ensure_room` answer without the state mutex while there is plenty of room. Only
    /// appends take room away (truncation only adds), and they refresh it.
    room_hint: AtomicU64,
    /// Lock-free copy of `State::frame_limit`.
    frame_limit: AtomicU64,
}

/// The CRC-32C of `seq ‖ payload_len ‖ payload` (little-endian): the VLF's sequence
/// number makes a stale frame left from the VLF's previous use fail the check.
pub(crate) fn frame_crc(seq: u32, payload_len: u32, payload: &[u8]) -> u32 {
    /// Aligned, so the eight header bytes are one CRC instruction.
    #[repr(align(8))]
    struct Head([u8; 8]);
    let head = Head((u64::from(seq) | u64::from(payload_len) << 32).to_le_bytes());
    crc32c::crc32c_append(crc32c::crc32c(&head.0), payload)
}

pub(crate) fn vlf_header(seq: u32, size: u64) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0..4].copy_from_slice(VLF_MAGIC);
    h[4..8].copy_from_slice(&seq.to_le_bytes());
    h[8..16].copy_from_slice(&size.to_le_bytes());
    let crc = crc32c::crc32c(&h[0..16]);
    h[16..20].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The VLFs of a log file, in file order, and the offset just past the last one.
pub(crate) fn scan_vlfs(file: &DataFile) -> Result<(Vec<Vlf>, u64)> {
    let file_len = file.len()?;
    let mut vlfs = Vec::new();
    let mut offset = FILE_HEADER;
    let mut h = [0u8; 20];
    while offset + u64::from(VLF_HEADER) <= file_len {
        file.read_exact_at(&mut h, offset)?;
        let Some((seq, size)) = parse_vlf_header(&h) else {
            break;
        };
        if size < u64::from(VLF_HEADER) * 2 || offset + size > file_len {
            break;
        }
        vlfs.push(Vlf { offset, size, seq });
        offset += size;
    }
    Ok((vlfs, offset))
}

/// Appends a frame (header and payload) for a record of VLF `seq` to `out`.
pub fn encode_frame(seq: u32, payload: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&frame_crc(seq, payload.len() as u32, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Splits concatenated frames into (offset inside `bytes`, payload); stops at the first
/// frame that does not fit or whose checksum fails for `seq`.
pub fn split_frames(seq: u32, bytes: &[u8]) -> Vec<(usize, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + FRAME_HEADER as usize <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
        let body = at + FRAME_HEADER as usize;
        if len == 0 || body + len > bytes.len() || frame_crc(seq, len as u32, &bytes[body..body + len]) != crc {
            break;
        }
        out.push((at, &bytes[body..body + len]));
        at = body + len;
    }
    out
}

fn parse_vlf_header(h: &[u8]) -> Option<(u32, u64)> {
    if &h[0..4] != VLF_MAGIC || crc32c::crc32c(&h[0..16]).to_le_bytes() != h[16..20] {
        return None;
    }
    Some((u32::from_le_bytes(h[4..8].try_into().unwrap()), u64::from_le_bytes(h[8..16].try_into().unwrap())))
}

pub(crate) fn encode_master(m: &Master, serial: u64) -> [u8; 28] {
    let mut b = [0u8; 28];
    b[0..8].copy_from_slice(&serial.to_le_bytes());
    b[8..16].copy_from_slice(&m.checkpoint_lsn.raw().to_le_bytes());
    b[16..24].copy_from_slice(&m.begin_lsn.raw().to_le_bytes());
    let crc = crc32c::crc32c(&b[0..24]);
    b[24..28].copy_from_slice(&crc.to_le_bytes());
    b
}

pub(crate) fn decode_master(b: &[u8]) -> Option<(u64, Master)> {
    if crc32c::crc32c(&b[0..24]).to_le_bytes() != b[24..28] {
        return None;
    }
    let u = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let serial = u(0);
    (serial != 0).then(|| (serial, Master { checkpoint_lsn: Lsn::from_raw(u(8)), begin_lsn: Lsn::from_raw(u(16)) }))
}

impl Wal {
    /// Creates a new log file. Its first VLF is active and the log is empty.
    pub fn create(path: &Path, database: &str, config: LogConfig) -> Result<Arc<Wal>> {
        let file = DataFile::open(path, OpenMode::CreateNew, false)?.measured(FileKind::Log);
        let (count, vlf_size) = if config.initial_size >= 4 * MIN_SPLIT_VLF {
            (4, (config.initial_size / 4).min(MAX_VLF_SIZE) & !4095)
        } else {
            (1, config.initial_size.saturating_sub(FILE_HEADER).clamp(MIN_FIRST_VLF, MAX_VLF_SIZE) & !4095)
        };
        let total = FILE_HEADER + count * vlf_size;
        file.allocate(total)?;
        let mut header = vec![0u8; FILE_HEADER as usize];
        header[0..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&LOG_FORMAT_VERSION.to_le_bytes());
        file.write_all_at(&header, 0)?;
        let mut vlfs = Vec::new();
        for i in 0..count {
            let offset = FILE_HEADER + i * vlf_size;
            let seq = if i == 0 { 1 } else { 0 };
            file.write_all_at(&vlf_header(seq, vlf_size), offset)?;
            vlfs.push(Vlf { offset, size: vlf_size, seq });
        }
        let begin = Lsn::new(1, VLF_HEADER);
        let master = Master { checkpoint_lsn: Lsn::NONE, begin_lsn: begin };
        file.write_all_at(&encode_master(&master, 1), MASTER_SLOTS[1])?;
        file.sync_all()?;
        Ok(Wal::assemble(file, database, config, vlfs, 0, VLF_HEADER, begin, total, 1))
    }

    /// Opens an existing log file and finds the end of the log. Returns the log and the
    /// master record (where recovery starts).
    pub fn open(path: &Path, database: &str, config: LogConfig) -> Result<(Arc<Wal>, Master)> {
        let file = DataFile::open(path, OpenMode::Existing, false)?.measured(FileKind::Log);
        let corrupt = |detail: String| Error::Corrupt { database: database.into(), path: path.into(), page: 0, detail };
        let mut header = vec![0u8; FILE_HEADER as usize];
        file.read_exact_at(&mut header, 0)?;
        if &header[0..8] != MAGIC {
            return Err(corrupt("the file is not a tessera log file".into()));
        }
        match u32::from_le_bytes(header[8..12].try_into().expect("4 bytes")) {
            LOG_FORMAT_VERSION => {}
            newer if newer > LOG_FORMAT_VERSION => {
                return Err(Error::NewerFormat {
                    database: database.into(),
                    version: newer,
                    supported: LOG_FORMAT_VERSION,
                })
            }
            older => return Err(corrupt(format!("the log file's format version {older} is not one this build reads"))),
        }
        let (serial, master) = MASTER_SLOTS
            .iter()
            .filter_map(|&o| decode_master(&header[o as usize..o as usize + 28]))
            .max_by_key(|(s, _)| *s)
            .ok_or_else(|| corrupt("both copies of the log master record are damaged".into()))?;
        let (vlfs, offset) = scan_vlfs(&file)?;
        let start = if !master.checkpoint_lsn.is_none() { master.checkpoint_lsn } else { master.begin_lsn };
        let cur = vlfs
            .iter()
            .position(|v| v.seq == start.seq())
            .ok_or_else(|| corrupt(format!("the log has no virtual log file for LSN {}", start)))?;
        let wal = Wal::assemble(file, database, config, vlfs, cur, start.offset(), master.begin_lsn, offset, serial);
        // Walk to the end of the valid log; appending continues there.
        let mut reader = WalReader::new(&wal, start);
        while let Some(item) = reader.next_record() {
            item?;
        }
        let end = reader.position();
        {
            let mut st = wal.state.lock();
            st.cur = st.vlfs.iter().position(|v| v.seq == end.seq()).expect("reader ends inside a known VLF");
            st.next_off = end.offset();
            // VLFs activated after the end of the valid log hold nothing durable: mark them
            // unused on disk so no sequence number can appear twice.
            let stale: Vec<usize> = (0..st.vlfs.len()).filter(|&i| st.vlfs[i].seq > end.seq()).collect();
            for &i in &stale {
                st.vlfs[i].seq = 0;
                wal.file.write_all_at(&vlf_header(0, st.vlfs[i].size), st.vlfs[i].offset)?;
            }
            if !stale.is_empty() {
                wal.file.sync_data()?;
            }
            st.reusable = None;
            // Every page change made from here on is judged against the end of the log
            // as found: a page's first change after this open carries its image.
            st.redo_point = end;
        }
        wal.redo_point.store(end.raw(), Ordering::Release);
        wal.written.store(end.raw(), Ordering::Release);
        wal.durable.store(end.raw(), Ordering::Release);
        Ok((wal, master))
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        file: DataFile,
        database: &str,
        config: LogConfig,
        vlfs: Vec<Vlf>,
        cur: usize,
        next_off: u32,
        truncation_lsn: Lsn,
        file_len: u64,
        master_serial: u64,
    ) -> Arc<Wal> {
        let end = Lsn::new(vlfs[cur].seq, next_off);
        let (growth, max_size) = (config.growth, config.max_size);
        Arc::new_cyclic(|me| Wal {
            me: me.clone(),
            write_queued: AtomicBool::new(false),
            file,
            database: database.to_string(),
            config,
            state: Mutex::new(State {
                vlfs,
                cur,
                next_off,
                pending: Vec::new(),
                pending_bytes: 0,
                reusable: None,
                truncation_lsn,
                file_len,
                master_serial,
                reuse_wait: "NOTHING",
                holds: [Lsn::MAX; 2],
                redo_point: end,
                growth,
                max_size,
                frame_limit: 0,
            }),
            writing: Turn::default(),
            syncing: Turn::default(),
            written: AtomicU64::new(end.raw()),
            durable: AtomicU64::new(end.raw()),
            failed: AtomicBool::new(false),
            flushes: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            redo_point: AtomicU64::new(end.raw()),
            room_hint: AtomicU64::new(0),
            frame_limit: AtomicU64::new(0),
        })
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The name of the database whose log this is.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// The file family in the header: the id its database's data file carries too (0:
    /// not set; logs made before it existed, and logs a RESTORE rebuilt).
    pub fn family(&self) -> Result<u128> {
        let mut b = [0u8; 16];
        self.file.read_exact_at(&mut b, FAMILY_OFFSET)?;
        Ok(u128::from_le_bytes(b))
    }

    /// Writes the file family into the header, durably.
    pub fn set_family(&self, family: u128) -> Result<()> {
        self.file.write_all_at(&family.to_le_bytes(), FAMILY_OFFSET)?;
        self.file.sync_data()
    }

    /// The LSN the next appended record will get.
    pub fn end_lsn(&self) -> Lsn {
        self.state.lock().end_lsn()
    }

    /// Every record starting below this LSN is durable.
    pub fn durable_lsn(&self) -> Lsn {
        Lsn::from_raw(self.durable.load(Ordering::Acquire))
    }

    /// Fails with 9001 once a write or sync of the log has failed: from then on nothing
    /// is appended or acknowledged, and the database must be opened again (its recovery
    /// reads what the disk really holds).
    pub fn check_failed(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(Error::LogUnavailable { database: self.database.clone() });
        }
        Ok(())
    }

    /// Refuses everything from now on (9001), as after a failed write or sync: used when
    /// a change in memory can no longer be undone, so that nothing is read or logged on
    /// top of it until the database is opened again and its recovery finishes the undo
    /// from what the disk holds.
    pub fn take_offline(&self) {
        self.failed.store(true, Ordering::Release);
    }

    /// The redo point of the newest checkpoint begun: recovery never starts redo later
    /// than this. A page whose LSN is below it has not been changed since, so its next
    /// change must log a full image of the page (torn-write protection).
    pub fn redo_point(&self) -> Lsn {
        Lsn::from_raw(self.redo_point.load(Ordering::Acquire))
    }

    /// Starts a checkpoint: the end of the log becomes the redo point, atomically with
    /// respect to [`Wal::append_since`], and is returned.
    pub fn begin_checkpoint(&self) -> Lsn {
        let mut st = self.state.lock();
        let end = st.end_lsn();
        assert!(end >= st.redo_point, "redo points only grow");
        st.redo_point = end;
        self.redo_point.store(end.raw(), Ordering::Release);
        end
    }

    /// Appends a record and returns its LSN. The record is not durable until
    /// [`Wal::flush`] covers it.
    pub fn append(&self, rec: &LogRecord) -> Result<Lsn> {
        Ok(self.append_inner(rec, None)?.expect("an unconditional append always appends"))
    }

    /// Appends a record built against redo point `redo_seen` unless a checkpoint has
    /// begun since (then returns `None` and appends nothing: the caller rebuilds the
    /// record, adding the page images the new redo point requires).
    pub fn append_since(&self, rec: &LogRecord, redo_seen: Lsn) -> Result<Option<Lsn>> {
        self.append_inner(rec, Some(redo_seen))
    }

    fn append_inner(&self, rec: &LogRecord, redo_seen: Option<Lsn>) -> Result<Option<Lsn>> {
        self.check_failed()?;
        let payload_len = rec.encoded_len();
        if payload_len > MAX_RECORD {
            return Err(Error::Invalid(format!("log record of {payload_len} bytes exceeds the limit of {MAX_RECORD}")));
        }
        let frame = FRAME_HEADER + payload_len as u32;
        let (lsn, pending) = {
            let mut st = self.state.lock();
            if redo_seen.is_some_and(|r| r != st.redo_point) {
                return Ok(None);
            }
            if u64::from(st.next_off) + u64::from(frame) > st.vlfs[st.cur].size {
                self.switch_vlf(&mut st, u64::from(frame))?;
            }
            let seq = st.vlfs[st.cur].seq;
            let lsn = Lsn::new(seq, st.next_off);
            let at = st.vlfs[st.cur].offset + u64::from(st.next_off);
            // Encode straight into the pending chunk: no temporary buffer per record.
            // The CRC is left to whoever writes the chunk out (usually the log writer).
            let chunk = st.chunk_at(at, frame as usize, &self.config.buffers);
            let start = chunk.data.len();
            chunk.data.extend_from_slice(&(payload_len as u32).to_le_bytes());
            chunk.data.extend_from_slice(&[0; 4]);
            rec.encode_into(&mut chunk.data);
            debug_assert_eq!(chunk.data.len() - start, frame as usize);
            chunk.unsealed.push((start, seq));
            st.pending_bytes += frame as usize;
            st.next_off += frame;
            self.refresh_room_hint(&mut st);
            (lsn, st.pending_bytes)
        };
        if pending >= BACKPRESSURE * self.config.write_buffer
            || (pending >= CHUNK_BYTES && self.config.buffers.over_budget())
        {
            // The background writer is behind, or the shared buffers are over their
            // budget: write here (giving the chunks back) rather than buffer more.
            self.write_out()?;
        } else if pending >= self.config.write_buffer && !self.write_queued.swap(true, Ordering::AcqRel) {
            background_writer().send(self.me.clone());
        }
        Ok(Some(lsn))
    }

    /// Publishes and returns the bytes appendable without growing the file: what is left
    /// of the current VLF plus the reusable ones (see [`Wal::ensure_room`]). A big
    /// transaction's rollback reserve exceeds any one VLF, so counting only the current
    /// one would send every change of it to the mutex.
    fn refresh_room_hint(&self, st: &mut State) -> u64 {
        let room = st.sure_room(st.vlfs[st.cur].size - u64::from(st.next_off)) + st.reusable_bytes();
        self.room_hint.store(room, Ordering::Relaxed);
        room
    }

    /// Moves appending to the next VLF: a free one (below the truncation point) or a new
    /// one at the end of the file.
    fn switch_vlf(&self, st: &mut State, frame: u64) -> Result<()> {
        let cur = st.vlfs[st.cur];
        let room = cur.size - u64::from(st.next_off);
        if room >= u64::from(FRAME_HEADER) {
            let mut marker = [0u8; 8];
            marker[4..8].copy_from_slice(&frame_crc(cur.seq, 0, &[]).to_le_bytes());
            st.push_bytes(cur.offset + u64::from(st.next_off), &marker, &self.config.buffers);
        }
        let new_seq = cur.seq + 1;
        let trunc_seq = st.truncation_lsn.seq();
        let n = st.vlfs.len();
        let need = frame + u64::from(VLF_HEADER);
        let reusable =
            (1..n).map(|i| (st.cur + i) % n).find(|&i| st.vlfs[i].seq < trunc_seq && st.vlfs[i].size >= need);
        let idx = match reusable {
            Some(i) => i,
            None => {
                let full = || Error::LogFull { database: self.database.clone(), reason: st.reuse_wait.into() };
                let grown = grown_size(st.file_len, st.file_len + need, st.growth, LOG_GROWTH, st.max_size, 4096);
                let size = grown.ok_or_else(full)? - st.file_len;
                if size > MAX_VLF_SIZE {
                    return Err(full());
                }
                let offset = st.file_len;
                self.file.allocate(offset + size).map_err(|e| {
                    if e.is_disk_full() {
                        Error::LogFull { database: self.database.clone(), reason: st.reuse_wait.into() }
                    } else {
                        e
                    }
                })?;
                st.file_len = offset + size;
                st.vlfs.push(Vlf { offset, size, seq: 0 });
                st.vlfs.len() - 1
            }
        };
        st.vlfs[idx].seq = new_seq;
        st.reusable = None;
        let v = st.vlfs[idx];
        st.push_bytes(v.offset, &vlf_header(new_seq, v.size), &self.config.buffers);
        st.cur = idx;
        st.next_off = VLF_HEADER;
        Ok(())
    }

    /// Makes sure at least `bytes` of log space can be appended without growing the
    /// file, as frames no bigger than the frame limit, growing it now (in steps of its
    /// growth, up to its maximum size) if needed. Callers check before they change any
    /// page, so a full log or disk is reported (error 9002) while nothing has been
    /// modified yet.
    pub fn ensure_room(&self, bytes: u64) -> Result<()> {
        self.check_failed()?;
        // Room only shrinks through appends, which refresh the hint under the mutex; a hint
        // read here is as current as a look under the mutex released at once would be.
        if self.room_hint.load(Ordering::Relaxed) >= bytes {
            return Ok(());
        }
        let mut st = self.state.lock();
        loop {
            let room = self.refresh_room_hint(&mut st);
            if room >= bytes {
                return Ok(());
            }
            let full = || Error::LogFull { database: self.database.clone(), reason: st.reuse_wait.into() };
            // A new VLF counts for what it holds beyond one frame (see `State::sure_room`).
            let want = (bytes - room + st.frame_limit + u64::from(VLF_HEADER)).next_multiple_of(4096);
            let grown = grown_size(st.file_len, st.file_len + want, st.growth, LOG_GROWTH, st.max_size, 4096);
            let size = (grown.ok_or_else(full)? - st.file_len).min(MAX_VLF_SIZE);
            if size < 4096 {
                return Err(full());
            }
            let offset = st.file_len;
            match self.file.allocate(offset + size) {
                Ok(()) => {}
                Err(e) if e.is_disk_full() => return Err(full()),
                Err(e) => return Err(e),
            }
            self.file.write_all_at(&vlf_header(0, size), offset)?;
            st.file_len = offset + size;
            st.vlfs.push(Vlf { offset, size, seq: 0 });
            st.reusable = None;
        }
    }

    /// Cuts off the VLFs at the end of the file that were never used: grown for room a
    /// claim might have needed and then did not. Never below the size the file was made
    /// with. Called when nothing is claimed (as a new database's creation ends, as it
    /// closes), so an empty database keeps only the log it wrote.
    pub fn trim_unused_tail(&self) -> Result<()> {
        let mut st = self.state.lock();
        let mut len = st.file_len;
        while let Some(&last) = st.vlfs.last() {
            if st.vlfs.len() - 1 == st.cur || last.seq != 0 || last.offset < self.config.initial_size {
                break;
            }
            st.vlfs.pop();
            len = last.offset;
        }
        if len == st.file_len {
            return Ok(());
        }
        self.file.set_len(len)?;
        st.file_len = len;
        st.reusable = None;
        self.refresh_room_hint(&mut st);
        Ok(())
    }

    /// Sets the frame limit to `frame` bytes: the largest frame (a record plus its 8-byte
    /// header) that may be appended from now on by anyone counting on
    /// [`Wal::ensure_room`], which counts room as what frames of that size are sure to
    /// fill, since a frame never spans two VLFs. The caller lowers it only when no bigger
    /// frame is promised any more.
    pub fn set_frame_limit(&self, frame: u64) {
        if frame == self.frame_limit.load(Ordering::Relaxed) {
            return;
        }
        let mut st = self.state.lock();
        st.frame_limit = frame;
        st.reusable = None;
        self.frame_limit.store(frame, Ordering::Relaxed);
        self.refresh_room_hint(&mut st);
    }

    /// Sets how the file grows from now on and the size it may not pass (ALTER DATABASE
    /// … MODIFY FILE); a file already bigger stays as it is and no longer grows.
    pub fn set_limits(&self, growth: Option<Growth>, max_size: u64) {
        let mut st = self.state.lock();
        st.growth = growth;
        st.max_size = max_size;
    }

    /// Makes every record starting at or below `lsn` durable. Concurrent callers share
    /// one fdatasync (group commit): whoever syncs covers everything written before it
    /// began, and those waiting behind it find their records durable.
    pub fn flush(&self, lsn: Lsn) -> Result<()> {
        if self.durable.load(Ordering::Acquire) > lsn.raw() {
            return Ok(());
        }
        let _waiting = tessera_waits::begin(tessera_waits::WaitType::WriteLog, tessera_waits::Resource::Nothing);
        self.write_through(lsn)?;
        self.syncing.until(
            || self.durable.load(Ordering::Acquire) > lsn.raw(),
            || self.check_failed(),
            || {
                let written = self.written.load(Ordering::Acquire);
                assert!(written > lsn.raw(), "a record is written before it is synced");
                let started = std::time::Instant::now();
                let synced = self.file.sync_data();
                FLUSH_LATENCY.record(started.elapsed());
                match synced {
                    Ok(()) => {
                        self.flushes.fetch_add(1, Ordering::Relaxed);
                        self.durable.fetch_max(written, Ordering::AcqRel);
                        Ok(())
                    }
                    // What the kernel failed to store may be gone from its cache as well:
                    // nothing may be acknowledged after it.
                    Err(e) => {
                        self.failed.store(true, Ordering::Release);
                        Err(e)
                    }
                }
            },
        )
    }

    /// Makes everything appended so far durable.
    pub fn flush_all(&self) -> Result<()> {
        let end = self.end_lsn();
        if end.is_none() {
            return Ok(());
        }
        self.flush(end.just_before())
    }

    /// Writes (without syncing) at least every record starting at or below `lsn`,
    /// waiting for a writer already at work rather than skipping it.
    fn write_through(&self, lsn: Lsn) -> Result<()> {
        self.writing.until(
            || self.written.load(Ordering::Acquire) > lsn.raw(),
            || self.check_failed(),
            || self.write_pending(),
        )
    }

    /// Writes buffered records without waiting for durability, unless another thread is
    /// already writing.
    pub(crate) fn write_out(&self) -> Result<()> {
        self.writing.unless_busy(|| self.write_pending())
    }

    /// Called only by the thread whose turn `writing` is.
    fn write_pending(&self) -> Result<()> {
        let (mut chunks, end) = {
            let mut st = self.state.lock();
            st.pending_bytes = 0;
            (std::mem::take(&mut st.pending), st.end_lsn())
        };
        let result = (|| {
            for chunk in &mut chunks {
                seal(chunk);
                self.file.write_all_at(&chunk.data, chunk.file_offset)?;
                self.bytes_written.fetch_add(chunk.data.len() as u64, Ordering::Relaxed);
                BYTES_WRITTEN.fetch_add(chunk.data.len() as u64, Ordering::Relaxed);
            }
            self.written.store(end.raw(), Ordering::Release);
            Ok(())
        })();
        // Given back outside the state mutex, written or not (after a failed write the
        // records are lost to memory anyway and the log refuses all further appends).
        for mut chunk in chunks {
            chunk.unsealed.clear();
            self.config.buffers.give(chunk);
        }
        if result.is_err() {
            // The buffered records are gone from memory and not on disk: nothing may be
            // appended or acknowledged after them.
            self.failed.store(true, Ordering::Release);
        }
        result
    }

    /// Declares that no LSN below `lsn` will be needed again: the VLFs holding only
    /// older records become reusable. Never moves backwards.
    /// Never moves backwards, and never past a [`Hold`].
    pub fn truncate_before(&self, lsn: Lsn, reuse_wait: &'static str) {
        let mut st = self.state.lock();
        assert!(lsn <= st.end_lsn(), "truncation point beyond the end of the log");
        let (held, hold) = [Hold::Backup, Hold::LogBackup]
            .into_iter()
            .map(|h| (st.holds[h as usize], h))
            .min_by_key(|&(l, _)| l)
            .expect("two holds");
        let (lsn, reuse_wait) = if held < lsn { (held, hold.reason()) } else { (lsn, reuse_wait) };
        st.truncation_lsn = st.truncation_lsn.max(lsn);
        st.reusable = None;
        st.reuse_wait = reuse_wait;
    }

    /// Sets (`Some`) or releases (`None`) a hold: from now on truncation stops below
    /// `lsn`. A hold below the current truncation point protects only what is still
    /// there; callers set holds at or above it.
    pub fn set_hold(&self, hold: Hold, lsn: Option<Lsn>) {
        let mut st = self.state.lock();
        st.holds[hold as usize] = lsn.unwrap_or(Lsn::MAX);
    }

    /// Why the log cannot be truncated further right now (`log_reuse_wait_desc`).
    pub fn reuse_wait(&self) -> &'static str {
        self.state.lock().reuse_wait
    }

    /// Lowest LSN still kept.
    pub fn truncation_lsn(&self) -> Lsn {
        self.state.lock().truncation_lsn
    }

    /// Durably records where recovery starts. The log must already be durable up to
    /// `master.checkpoint_lsn`.
    pub fn write_master(&self, master: Master) -> Result<()> {
        assert!(master.checkpoint_lsn < self.durable_lsn(), "checkpoint record must be durable first");
        let serial = {
            let mut st = self.state.lock();
            st.master_serial += 1;
            st.master_serial
        };
        let slot = MASTER_SLOTS[(serial % 2) as usize];
        self.file.write_all_at(&encode_master(&master, serial), slot)?;
        self.file.sync_data()
    }

    /// Reads the record at `lsn` (which must be a record boundary): two exact reads,
    /// header then payload, so rolling back reads no more than it needs.
    pub fn read(&self, lsn: Lsn) -> Result<LogRecord> {
        if lsn >= Lsn::from_raw(self.written.load(Ordering::Acquire)) {
            self.write_through(lsn)?;
        }
        let missing = || self.corrupt(format!("no log record at LSN {}", lsn));
        let vlf = self.vlf_for_seq(lsn.seq()).ok_or_else(missing)?;
        let off = u64::from(lsn.offset());
        let mut header = [0u8; FRAME_HEADER as usize];
        if off + u64::from(FRAME_HEADER) > vlf.size {
            return Err(missing());
        }
        self.file.read_exact_at(&mut header, vlf.offset + off)?;
        let len = u32::from_le_bytes(header[0..4].try_into().unwrap());
        let crc = u32::from_le_bytes(header[4..8].try_into().unwrap());
        if len == 0 || len as usize > MAX_RECORD || off + u64::from(FRAME_HEADER + len) > vlf.size {
            return Err(missing());
        }
        let mut payload = vec![0u8; len as usize];
        self.file.read_exact_at(&mut payload, vlf.offset + off + u64::from(FRAME_HEADER))?;
        if frame_crc(vlf.seq, len, &payload) != crc {
            return Err(missing());
        }
        LogRecord::decode(&payload)
            .map_err(|e| self.corrupt(format!("log record at LSN {} cannot be decoded: {e}", lsn)))
    }

    /// Copies the frames in `[from, to)` (both record boundaries, `from` not truncated
    /// yet) as segments of at most `max_bytes` (a bigger single frame gets a segment of
    /// its own), in log order.
    pub fn copy_segments(
        &self,
        from: Lsn,
        to: Lsn,
        max_bytes: usize,
        mut sink: impl FnMut(crate::LogSegment) -> Result<()>,
    ) -> Result<()> {
        if to <= from {
            return Ok(());
        }
        self.flush(to.just_before())?;
        let mut reader = WalReader::new(self, from);
        let mut cur: Option<crate::LogSegment> = None;
        let mut reached = from;
        while let Some(item) = reader.next_frame() {
            let (lsn, payload) = item?;
            if lsn >= to {
                break;
            }
            let seq = lsn.seq();
            let frame_len = FRAME_HEADER as usize + payload.len();
            if cur.as_ref().is_some_and(|c| c.seq != seq || c.frames.len() + frame_len > max_bytes) {
                sink(cur.take().expect("a segment"))?;
            }
            let seg = cur.get_or_insert_with(|| crate::LogSegment {
                seq,
                vlf_size: reader.vlf_size(),
                offset: lsn.offset(),
                frames: Vec::with_capacity(max_bytes.min(1 << 20)),
            });
            encode_frame(seq, &payload, &mut seg.frames);
            reached = Lsn::new(seq, lsn.offset() + frame_len as u32);
        }
        if let Some(seg) = cur {
            sink(seg)?;
        }
        // The end of a VLF and the start of the next one are the same place in the log.
        let next_vlf_start = to.seq() == reached.seq() + 1 && to.offset() == VLF_HEADER;
        if reached < to && !next_vlf_start {
            return Err(
                self.corrupt(format!("the log from LSN {} to {} is not available (it ends at {})", from, to, reached))
            );
        }
        Ok(())
    }

    /// What the log file's reads and writes have cost since this open, its size and its
    /// descriptor (`sys.dm_io_virtual_file_stats`).
    pub fn io_sample(&self) -> Result<FileSample> {
        self.file.sample()
    }

    /// Bytes written to the file since it opened.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written.load(Ordering::Relaxed)
    }

    pub fn stats(&self) -> LogStats {
        let st = self.state.lock();
        let trunc = st.truncation_lsn;
        let trunc_seq = trunc.seq();
        let end = st.end_lsn();
        let used_bytes = st
            .vlfs
            .iter()
            .filter(|v| v.seq >= trunc_seq && v.seq != 0 && v.seq <= end.seq())
            .map(|v| {
                let from =
                    if v.seq == trunc_seq { u64::from(trunc.offset().max(VLF_HEADER)) } else { u64::from(VLF_HEADER) };
                let to = if v.seq == end.seq() { u64::from(end.offset()) } else { v.size };
                to.saturating_sub(from)
            })
            .sum();
        LogStats {
            file_size: st.file_len,
            vlf_count: st.vlfs.len(),
            active_vlfs: st.vlfs.iter().filter(|v| v.seq >= trunc_seq && v.seq != 0).count(),
            used_bytes,
            end_lsn: st.end_lsn(),
            durable_lsn: self.durable_lsn(),
            flushes: self.flushes.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn vlf_for_seq(&self, seq: u32) -> Option<Vlf> {
        self.state.lock().vlfs.iter().find(|v| v.seq == seq).copied()
    }

    pub(crate) fn corrupt(&self, detail: String) -> Error {
        Error::Corrupt { database: self.database.clone(), path: self.file.path().to_path_buf(), page: 0, detail }
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        if !self.failed.load(Ordering::Acquire) {
            let _ = self.flush_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_crc_covers_seq_length_and_payload_in_that_order() {
        for (seq, payload) in [(1u32, &b""[..]), (7, b"x"), (0xDEAD_BEEF, &[0xA5; 301][..])] {
            let mut whole = seq.to_le_bytes().to_vec();
            whole.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            whole.extend_from_slice(payload);
            assert_eq!(frame_crc(seq, payload.len() as u32, payload), crc32c::crc32c(&whole));
        }
    }
}
