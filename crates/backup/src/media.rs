//! The on-disk format of backup media. See the crate README for the picture.
//!
//! Every stripe (media family) file starts with a media header; backup sets follow one
//! after the other (FILE = 1, 2, …). A set is a set header, chunks, and a trailer chunk.
//! Headers carry JSON (so HEADERONLY can grow columns without a format change) behind a
//! magic, a length and a crc32c; chunks carry a fixed binary header with the set's GUID,
//! the chunk's global sequence number and a crc32c of the stored bytes.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use tessera_errors::msg;
use tessera_io::MediaFile;

use crate::BackupError;

pub const MEDIA_MAGIC: &[u8; 8] = b"TSRAMED1";
pub const SET_MAGIC: &[u8; 8] = b"TSRASET1";
pub const CHUNK_MAGIC: &[u8; 4] = b"CHNK";
/// The media header occupies the first 4 KiB of every stripe.
pub const MEDIA_HEADER_SIZE: u64 = 4096;
pub const CHUNK_HEADER_SIZE: usize = 48;
/// Bound on a JSON header (names and descriptions are bounded, file lists are short).
const MAX_HEADER_JSON: usize = 64 << 10;
/// Bound on one chunk: MAXTRANSFERSIZE plus its framing (a compressed chunk may be a
/// little larger than its input).
pub const MAX_CHUNK: usize = (4 << 20) + (64 << 10);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaHeader {
    pub media_set_guid: u128,
    pub family_count: u32,
    /// 1-based position of this stripe in the media set.
    pub family_sequence: u32,
    pub media_name: String,
    pub media_description: String,
    pub created_unix_micros: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BackupType {
    Database,
    Differential,
    Log,
}

impl BackupType {
    /// `RESTORE HEADERONLY`'s BackupType column.
    pub fn code(self) -> i32 {
        match self {
            BackupType::Database => 1,
            BackupType::Log => 2,
            BackupType::Differential => 5,
        }
    }

    /// `msdb.dbo.backupset.type`.
    pub fn letter(self) -> &'static str {
        match self {
            BackupType::Database => "D",
            BackupType::Log => "L",
            BackupType::Differential => "I",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub logical_name: String,
    pub physical_name: String,
    /// 'D' data, 'L' log.
    pub kind: char,
    pub size_bytes: u64,
}

/// What a backup set is; written before its chunks, identical in every stripe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetHeader {
    pub backup_set_guid: u128,
    pub position: u32,
    pub backup_type: BackupType,
    pub name: String,
    pub description: String,
    pub database_name: String,
    pub server_name: String,
    pub user_name: String,
    pub recovery_model: String,
    /// Where recovery of a full or differential copy starts; where a log backup starts.
    pub first_lsn: u64,
    pub checkpoint_lsn: u64,
    /// The full backup a differential applies to (0 for others).
    pub differential_base_lsn: u64,
    pub differential_base_guid: u128,
    pub begins_log_chain: bool,
    pub copy_only: bool,
    pub compressed: bool,
    pub checksums: bool,
    pub data_pages: u32,
    pub files: Vec<FileEntry>,
    pub family_count: u32,
    pub family_sequence: u32,
    pub max_transfer_size: u32,
    pub block_size: u32,
    pub start_unix_micros: i64,
}

/// Written last in every stripe of a completed set; a set without one is unusable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trailer {
    /// Chunks of the set in all stripes (their sequence numbers are 0..total).
    pub chunks_total: u64,
    pub chunks_in_family: u64,
    /// The LSN just past the last log record in the set.
    pub last_lsn: u64,
    pub finish_unix_micros: i64,
    pub data_pages_copied: u64,
    pub log_bytes: u64,
    /// Bytes before compression and as stored (all stripes).
    pub backup_size: u64,
    pub compressed_size: u64,
    /// The set holds pages of minimally logged bulk loads (copied because the log lacks
    /// their contents): a restore cannot stop at a point inside it.
    #[serde(default)]
    pub has_bulk_logged_data: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ChunkKind {
    /// `page u32 | 8 KiB image`, repeated.
    Pages = 1,
    /// `seq u32 | vlf_size u64 | offset u32 | frames`: one log segment.
    Log = 2,
    /// JSON [`Trailer`].
    Trailer = 3,
}

impl ChunkKind {
    fn from_u8(v: u8) -> Option<ChunkKind> {
        Some(match v {
            1 => ChunkKind::Pages,
            2 => ChunkKind::Log,
            3 => ChunkKind::Trailer,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkHeader {
    pub kind: ChunkKind,
    pub compressed: bool,
    pub seq: u64,
    pub raw_len: u32,
    pub stored_len: u32,
    pub data_crc: u32,
    pub set_guid: u128,
}

impl ChunkHeader {
    pub fn encode(&self) -> [u8; CHUNK_HEADER_SIZE] {
        let mut h = [0u8; CHUNK_HEADER_SIZE];
        h[0..4].copy_from_slice(CHUNK_MAGIC);
        h[4] = self.kind as u8;
        h[5] = u8::from(self.compressed);
        h[8..16].copy_from_slice(&self.seq.to_le_bytes());
        h[16..20].copy_from_slice(&self.raw_len.to_le_bytes());
        h[20..24].copy_from_slice(&self.stored_len.to_le_bytes());
        h[24..28].copy_from_slice(&self.data_crc.to_le_bytes());
        h[28..44].copy_from_slice(&self.set_guid.to_le_bytes());
        let crc = crc32c::crc32c(&h[0..44]);
        h[44..48].copy_from_slice(&crc.to_le_bytes());
        h
    }

    pub fn decode(h: &[u8; CHUNK_HEADER_SIZE]) -> Option<ChunkHeader> {
        if &h[0..4] != CHUNK_MAGIC || crc32c::crc32c(&h[0..44]).to_le_bytes() != h[44..48] {
            return None;
        }
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().unwrap());
        let header = ChunkHeader {
            kind: ChunkKind::from_u8(h[4])?,
            compressed: h[5] != 0,
            seq: u64::from_le_bytes(h[8..16].try_into().unwrap()),
            raw_len: u32_at(16),
            stored_len: u32_at(20),
            data_crc: u32_at(24),
            set_guid: u128::from_le_bytes(h[28..44].try_into().unwrap()),
        };
        (header.stored_len as usize <= MAX_CHUNK && header.raw_len as usize <= MAX_CHUNK).then_some(header)
    }
}

/// `magic | len u32 | crc32c u32 | json`.
pub fn encode_json_block<T: Serialize>(magic: &[u8; 8], value: &T) -> Vec<u8> {
    let json = serde_json::to_vec(value).expect("headers serialize");
    assert!(json.len() <= MAX_HEADER_JSON, "backup header of {} bytes", json.len());
    let mut out = Vec::with_capacity(16 + json.len());
    out.extend_from_slice(magic);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&json).to_le_bytes());
    out.extend_from_slice(&json);
    out
}

/// Reads a JSON block at the reader's position; None if it is not one (wrong magic,
/// bad checksum, unreadable JSON).
pub fn read_json_block<T: for<'de> Deserialize<'de>>(r: &mut impl Read, magic: &[u8; 8]) -> Option<T> {
    let mut head = [0u8; 16];
    r.read_exact(&mut head).ok()?;
    if &head[0..8] != magic {
        return None;
    }
    let len = u32::from_le_bytes(head[8..12].try_into().unwrap()) as usize;
    let crc = u32::from_le_bytes(head[12..16].try_into().unwrap());
    if len > MAX_HEADER_JSON {
        return None;
    }
    let mut json = vec![0u8; len];
    r.read_exact(&mut json).ok()?;
    if crc32c::crc32c(&json) != crc {
        return None;
    }
    serde_json::from_slice(&json).ok()
}

pub fn encode_media_header(h: &MediaHeader) -> Vec<u8> {
    let mut block = encode_json_block(MEDIA_MAGIC, h);
    assert!(block.len() <= MEDIA_HEADER_SIZE as usize, "media header too large");
    block.resize(MEDIA_HEADER_SIZE as usize, 0);
    block
}

/// The media header of a stripe file: Ok(None) if the file is missing or empty,
/// error 3241 if it is not tessera backup media, 3203 if it cannot be read.
pub fn read_media_header(path: &Path) -> Result<Option<MediaHeader>, BackupError> {
    let mut f = match MediaFile::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(crate::open_failed(path, &e)),
    };
    let len = f.len().map_err(|e| crate::read_failed(path, &e))?;
    if len == 0 {
        return Ok(None);
    }
    // Read first, then decoded: a read that fails is 3203, not media that are not ours.
    let mut block = vec![0u8; len.min(MEDIA_HEADER_SIZE) as usize];
    f.read_exact(&mut block).map_err(|e| crate::read_failed(path, &e))?;
    read_json_block(&mut block.as_slice(), MEDIA_MAGIC).map(Some).ok_or_else(|| not_media(path))
}

pub fn not_media(path: &Path) -> BackupError {
    msg::MEDIA_FAMILY_MALFORMED.with(&[&path.display()]).into()
}

/// Where a backup set sits in one stripe file.
#[derive(Clone, Debug)]
pub struct SetLocation {
    pub header: SetHeader,
    /// File offset of the set header.
    pub start: u64,
    /// File offset of the first chunk.
    pub chunks_at: u64,
    /// None when the set never completed (no trailer): it cannot be restored.
    pub trailer: Option<Trailer>,
    /// File offset just past the set (where the next one starts).
    pub end: u64,
}

/// Reads a chunk header and its stored bytes (into `data`, whose old contents are
/// discarded), verifying the crc. `Ok(None)` at a clean end of file.
pub fn read_chunk(
    r: &mut impl Read,
    path: &Path,
    mut data: Vec<u8>,
) -> Result<Option<(ChunkHeader, Vec<u8>)>, BackupError> {
    let mut h = [0u8; CHUNK_HEADER_SIZE];
    match r.read_exact(&mut h) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(crate::read_failed(path, &e)),
    }
    let header = ChunkHeader::decode(&h).ok_or_else(|| damaged(path, "a chunk header is damaged"))?;
    data.clear();
    data.resize(header.stored_len as usize, 0);
    r.read_exact(&mut data).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            damaged(path, "the file ends inside a chunk")
        } else {
            crate::read_failed(path, &e)
        }
    })?;
    if crc32c::crc32c(&data) != header.data_crc {
        return Err(damaged(path, &format!("chunk {} fails its checksum", header.seq)));
    }
    Ok(Some((header, data)))
}

/// 3189: damage on the device at `path`, as `detail` describes it.
pub fn damaged(path: &Path, detail: &str) -> BackupError {
    msg::BACKUP_SET_DAMAGED.with(&[&format!(" on device '{}': {detail}", path.display())]).into()
}

/// 3189: damage to the set as a whole, as `detail` describes it.
pub(crate) fn damaged_set(detail: &str) -> BackupError {
    msg::BACKUP_SET_DAMAGED.with(&[&format!(": {detail}")]).into()
}

/// Follows every completed set in a stripe: `magic | set start u64 | trailer offset u64
/// | crc32c u32 | 0 u32`. Walking these backwards from the end of the file finds every
/// set with a handful of reads, however many chunks the sets hold.
pub const FOOTER_MAGIC: &[u8; 8] = b"TSRAFTR1";
pub const FOOTER_SIZE: usize = 32;

pub fn encode_footer(set_start: u64, trailer_offset: u64) -> [u8; FOOTER_SIZE] {
    let mut f = [0u8; FOOTER_SIZE];
    f[0..8].copy_from_slice(FOOTER_MAGIC);
    f[8..16].copy_from_slice(&set_start.to_le_bytes());
    f[16..24].copy_from_slice(&trailer_offset.to_le_bytes());
    let crc = crc32c::crc32c(&f[0..24]);
    f[24..28].copy_from_slice(&crc.to_le_bytes());
    f
}

fn decode_footer(f: &[u8]) -> Option<(u64, u64)> {
    if &f[0..8] != FOOTER_MAGIC || crc32c::crc32c(&f[0..24]).to_le_bytes() != f[24..28] {
        return None;
    }
    Some((u64::from_le_bytes(f[8..16].try_into().unwrap()), u64::from_le_bytes(f[16..24].try_into().unwrap())))
}

fn read_at(file: &MediaFile, buf: &mut [u8], offset: u64) -> bool {
    file.read_exact_at(buf, offset).is_ok()
}

/// Reads one set's header at `start` and its trailer chunk at `trailer_at`.
fn read_set_at(file: &MediaFile, start: u64, trailer_at: u64, end: u64) -> Option<SetLocation> {
    let mut r = std::io::BufReader::with_capacity(4096, file.try_clone().ok()?);
    r.seek(SeekFrom::Start(start)).ok()?;
    let header = read_json_block::<SetHeader>(&mut r, SET_MAGIC)?;
    let chunks_at = r.stream_position().ok()?;
    let mut h = [0u8; CHUNK_HEADER_SIZE];
    if !read_at(file, &mut h, trailer_at) {
        return None;
    }
    let ch =
        ChunkHeader::decode(&h).filter(|c| c.kind == ChunkKind::Trailer && c.set_guid == header.backup_set_guid)?;
    let mut data = vec![0u8; ch.stored_len as usize];
    if !read_at(file, &mut data, trailer_at + CHUNK_HEADER_SIZE as u64) || crc32c::crc32c(&data) != ch.data_crc {
        return None;
    }
    let trailer = serde_json::from_slice(&data).ok()?;
    Some(SetLocation { header, start, chunks_at, trailer: Some(trailer), end })
}

/// Lists the backup sets of one stripe file, in position order: backwards through the
/// footers when every set is complete, else forward through the chunks. The forward walk
/// stops at the first set that is incomplete or damaged (listed with no trailer).
pub fn list_sets(path: &Path) -> Result<(MediaHeader, Vec<SetLocation>), BackupError> {
    let media = read_media_header(path)?.ok_or_else(|| crate::device_missing(path))?;
    let file = MediaFile::open(path).map_err(|e| crate::open_failed(path, &e))?;
    let len = file.len().map_err(|e| crate::read_failed(path, &e))?;
    let mut at = len;
    let mut found = Vec::new();
    let mut f = [0u8; FOOTER_SIZE];
    while at >= MEDIA_HEADER_SIZE + FOOTER_SIZE as u64 && read_at(&file, &mut f, at - FOOTER_SIZE as u64) {
        let Some((start, trailer_at)) = decode_footer(&f) else { break };
        if start < MEDIA_HEADER_SIZE || start >= trailer_at || trailer_at >= at {
            break;
        }
        match read_set_at(&file, start, trailer_at, at) {
            Some(set) => found.push(set),
            None => break,
        }
        at = start;
    }
    if at == MEDIA_HEADER_SIZE {
        found.reverse();
        return Ok((media, found));
    }
    walk_sets(path, &file, len).map(|sets| (media, sets))
}

/// The forward walk: set header, chunk headers (skipping their bytes), trailer, footer.
fn walk_sets(path: &Path, file: &MediaFile, len: u64) -> Result<Vec<SetLocation>, BackupError> {
    // Small buffer: the walk reads chunk headers and skips their bytes, so a big buffer
    // would read the whole file.
    let reader = file.try_clone().map_err(|e| crate::read_failed(path, &e))?;
    let mut r = std::io::BufReader::with_capacity(4096, reader);
    let mut sets = Vec::new();
    let mut at = MEDIA_HEADER_SIZE;
    while at < len {
        r.seek(SeekFrom::Start(at)).map_err(|e| crate::read_failed(path, &e))?;
        let Some(header) = read_json_block::<SetHeader>(&mut r, SET_MAGIC) else { break };
        let chunks_at = r.stream_position().map_err(|e| crate::read_failed(path, &e))?;
        let mut trailer = None;
        let mut pos = chunks_at;
        loop {
            let mut h = [0u8; CHUNK_HEADER_SIZE];
            if r.read_exact(&mut h).is_err() {
                break;
            }
            let Some(ch) = ChunkHeader::decode(&h).filter(|c| c.set_guid == header.backup_set_guid) else { break };
            pos += (CHUNK_HEADER_SIZE + ch.stored_len as usize) as u64;
            if ch.kind == ChunkKind::Trailer {
                let mut data = vec![0u8; ch.stored_len as usize];
                if r.read_exact(&mut data).is_ok() && crc32c::crc32c(&data) == ch.data_crc {
                    trailer = serde_json::from_slice(&data).ok();
                }
                let mut f = [0u8; FOOTER_SIZE];
                if r.read_exact(&mut f).is_ok() && decode_footer(&f).is_some() {
                    pos += FOOTER_SIZE as u64;
                }
                break;
            }
            if r.seek_relative(i64::from(ch.stored_len)).is_err() || pos > len {
                break;
            }
        }
        let complete = trailer.is_some();
        sets.push(SetLocation { header, start: at, chunks_at, trailer, end: pos });
        if !complete {
            break;
        }
        at = pos;
    }
    Ok(sets)
}
