//! `BACKUP DATABASE` (full, differential) and `BACKUP LOG`.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tessera_buffer::page::{self, PageNo, PAGE_SIZE};
use tessera_database::{BackupChain, Database, Engine, RecoveryModel};
use tessera_errors::msg;
use tessera_io::MediaFile;
use tessera_log::Lsn;

use crate::media::{
    encode_json_block, encode_media_header, list_sets, BackupType, ChunkKind, FileEntry, MediaHeader, SetHeader,
    Trailer, MEDIA_HEADER_SIZE, SET_MAGIC,
};
use crate::pipeline::{StripeOut, WritePipeline};
use crate::{check_devices, now_micros, succeeded, write_failed, BackupError, BufferConfig, Notice, Stats};

#[derive(Clone, Debug, Default)]
pub struct BackupOptions {
    pub devices: Vec<PathBuf>,
    pub kind: Option<BackupType>,
    pub init: bool,
    pub format: bool,
    pub skip: bool,
    pub name: Option<String>,
    pub description: Option<String>,
    pub media_name: Option<String>,
    pub media_description: Option<String>,
    pub stats: Option<u32>,
    pub buffer_count: Option<u32>,
    pub max_transfer_size: Option<u32>,
    pub block_size: Option<u32>,
    pub compression: bool,
    pub checksum: bool,
    pub copy_only: bool,
    pub server_name: String,
    pub user_name: String,
}

#[derive(Clone, Debug)]
pub struct BackupReport {
    pub header: SetHeader,
    pub trailer: Trailer,
    pub media: Vec<MediaHeader>,
    pub buffers: BufferConfig,
    /// Pages reported in the final message (data pages copied + log pages).
    pub pages: u64,
    /// Data file pages read to find them (a differential reads only changed extents).
    pub pages_scanned: u64,
    pub seconds: f64,
}

/// Times a torn read (a page being written while it is copied) is retried.
const TORN_RETRIES: u32 = 20;

/// Reads the pages from `first` on into `buf` (whole pages), reading each one that does
/// not verify again, up to [`TORN_RETRIES`] times (most likely torn by a concurrent write
/// of it). Returns the pages that still do not verify, with what is wrong with them.
pub(crate) fn read_pages(
    file: &File,
    path: &std::path::Path,
    first: PageNo,
    buf: &mut [u8],
) -> Result<Vec<(PageNo, String)>, BackupError> {
    let read_err = |e: std::io::Error| tessera_errors::Error::io("backup read", path, 0, e);
    file.read_exact_at(buf, first.byte_offset()).map_err(read_err)?;
    let mut damaged = Vec::new();
    for (i, p) in buf.chunks_exact_mut(PAGE_SIZE).enumerate() {
        let page_no = first + i as u32;
        let mut tries = 0;
        while page::verify(p, page_no).is_err() && tries < TORN_RETRIES {
            std::thread::sleep(std::time::Duration::from_millis(1));
            file.read_exact_at(p, page_no.byte_offset()).map_err(read_err)?;
            tries += 1;
        }
        if let Err(damage) = page::verify(p, page_no) {
            damaged.push((page_no, damage.to_string()));
        }
    }
    Ok(damaged)
}

/// Backs up `database` to `opts.devices`. Progress and the closing messages go to
/// `notify`; on failure no partial set is left on the media.
pub fn backup(
    engine: &Engine,
    database: &str,
    opts: &BackupOptions,
    notify: &mut dyn FnMut(Notice),
) -> Result<BackupReport, BackupError> {
    backup_database(&engine.database(database)?, opts, notify)
}

/// [`backup`] of a database the caller holds open (a tail-log backup holds it alone:
/// [`tessera_database::Engine::hold_exclusive`]).
pub fn backup_database(
    db: &Arc<Database>,
    opts: &BackupOptions,
    notify: &mut dyn FnMut(Notice),
) -> Result<BackupReport, BackupError> {
    let started = Instant::now();
    let kind = opts.kind.unwrap_or(BackupType::Database);
    check_devices(&opts.devices)?;
    for (limit, value, what) in [
        (128, &opts.name, "NAME"),
        (255, &opts.description, "DESCRIPTION"),
        (128, &opts.media_name, "MEDIANAME"),
        (255, &opts.media_description, "MEDIADESCRIPTION"),
    ] {
        if value.as_ref().is_some_and(|v| v.chars().count() > limit) {
            return Err(msg::BACKUP_OPTION_TOO_LONG.with(&[&what, &limit]).into());
        }
    }
    if let Some(b) = opts.block_size {
        if ![512, 1024, 2048, 4096, 8192, 16384, 32768, 65536].contains(&b) {
            return Err(msg::INVALID_BLOCKSIZE.with(&[&b]).into());
        }
    }
    let buffers =
        BufferConfig::choose(opts.devices.len(), opts.buffer_count, opts.max_transfer_size, opts.compression)?;
    let name = db.name().to_string();
    let model = db.options().recovery_model;
    let chain = db.backup_chain();
    match kind {
        BackupType::Log if model == RecoveryModel::Simple => {
            return Err(msg::LOG_BACKUP_IN_SIMPLE_RECOVERY.err().into())
        }
        BackupType::Log if chain.log_backup_lsn.is_none() => return Err(msg::NO_DATABASE_BACKUP_FOR_LOG.err().into()),
        BackupType::Differential if chain.differential_base_lsn.is_none() => {
            return Err(msg::NO_BASE_FOR_DIFFERENTIAL.with(&[&name]).into())
        }
        _ => {}
    }

    let (media, mut outs, position) = prepare_media(opts)?;
    let new_base = kind == BackupType::Database && !opts.copy_only;
    let point = db.begin_backup(kind != BackupType::Log, new_base)?;
    let (data_path, log_path) = db.file_paths();
    let set_guid: u128 = rand::random();
    let first_lsn = if kind == BackupType::Log { chain.log_backup_lsn } else { point.begin_lsn };
    let header = SetHeader {
        backup_set_guid: set_guid,
        position,
        backup_type: kind,
        name: opts.name.clone().unwrap_or_default(),
        description: opts.description.clone().unwrap_or_default(),
        database_name: name.clone(),
        server_name: opts.server_name.clone(),
        user_name: opts.user_name.clone(),
        recovery_model: model.name().to_string(),
        first_lsn: first_lsn.raw(),
        checkpoint_lsn: point.checkpoint_lsn.raw(),
        differential_base_lsn: if kind == BackupType::Database { 0 } else { chain.differential_base_lsn.raw() },
        differential_base_guid: if kind == BackupType::Database { 0 } else { chain.differential_base_guid },
        begins_log_chain: kind == BackupType::Database
            && chain.log_backup_lsn.is_none()
            && model != RecoveryModel::Simple,
        copy_only: opts.copy_only && kind != BackupType::Differential,
        compressed: opts.compression,
        checksums: opts.checksum,
        data_pages: point.data_pages,
        files: vec![
            FileEntry {
                logical_name: name.clone(),
                physical_name: data_path.display().to_string(),
                kind: 'D',
                size_bytes: u64::from(point.data_pages) * PAGE_SIZE as u64,
            },
            FileEntry {
                logical_name: format!("{name}_log"),
                physical_name: log_path.display().to_string(),
                kind: 'L',
                size_bytes: db.log_stats().file_size,
            },
        ],
        family_count: opts.devices.len() as u32,
        family_sequence: 0,
        max_transfer_size: buffers.max_transfer_size,
        block_size: opts.block_size.unwrap_or(512),
        start_unix_micros: now_micros(),
    };
    for (i, out) in outs.iter_mut().enumerate() {
        let block =
            encode_json_block(SET_MAGIC, &SetHeader { family_sequence: media[i].family_sequence, ..header.clone() });
        out.file.write_all(&block).map_err(|e| {
            let _ = out.file.set_len(out.set_start);
            write_failed(&out.path, &e)
        })?;
    }

    let mts = buffers.max_transfer_size as usize;
    let mut pipe = WritePipeline::start(outs, set_guid, buffers.buffer_count, opts.compression);
    let mut stats = Stats::new(opts.stats);
    let log_estimate = db.wal().end_lsn().raw().saturating_sub(first_lsn.raw()).min(1 << 40);
    let since = if kind == BackupType::Differential { chain.differential_base_lsn } else { Lsn::NONE };
    // The data file pages to read: none for a log backup; for a differential, the
    // extents changed since its base when this open of the database tracked them;
    // else every page.
    let every_page = || vec![(PageNo::NONE, point.data_pages)];
    let runs = match kind {
        BackupType::Log => Vec::new(),
        BackupType::Differential => db.changed_page_runs(since, point.data_pages).unwrap_or_else(every_page),
        BackupType::Database => every_page(),
    };
    let pages_scanned: u64 = runs.iter().map(|&(_, n)| u64::from(n)).sum();
    let total_estimate = pages_scanned * PAGE_SIZE as u64 + log_estimate;
    let mut done = 0u64;
    let mut bulk_pages = 0u64;
    let produced = (|| -> Result<(u64, u64, Lsn), BackupError> {
        let mut data_pages = 0u64;
        if !runs.is_empty() {
            data_pages =
                copy_data_file(&data_path, &runs, since, opts.checksum, &name, mts, &mut pipe, &mut |bytes| {
                    done += bytes;
                    stats.update(done, total_estimate, notify);
                })?;
        }
        // Pages written by minimally logged bulk loads whose notes fall in the copied
        // log are copied as they are now: the log lacks their contents. The end of
        // the log is read after each copy, so it covers every change the copies hold.
        let mut end = db.wal().end_lsn();
        let mut scanned = first_lsn;
        loop {
            let loaded = db.bulk_loaded_pages(scanned, end)?;
            if loaded.is_empty() {
                break;
            }
            bulk_pages += loaded.len() as u64;
            data_pages += copy_data_file(
                &data_path,
                &page::runs(&loaded),
                Lsn::NONE,
                opts.checksum,
                &name,
                mts,
                &mut pipe,
                &mut |_| {},
            )?;
            scanned = end;
            end = db.wal().end_lsn();
        }
        let mut log_bytes = 0u64;
        let mut stopped = false;
        db.wal().copy_segments(first_lsn, end, mts - 16, |seg| {
            if stopped || !pipe.reserve() {
                stopped = true;
                return Ok(());
            }
            let mut raw = pipe.buffer(16 + seg.frames.len());
            raw.extend_from_slice(&seg.seq.to_le_bytes());
            raw.extend_from_slice(&seg.vlf_size.to_le_bytes());
            raw.extend_from_slice(&seg.offset.to_le_bytes());
            raw.extend_from_slice(&seg.frames);
            log_bytes += seg.frames.len() as u64;
            done += seg.frames.len() as u64;
            pipe.send(ChunkKind::Log, raw);
            stats.update(done, total_estimate, notify);
            Ok(())
        })?;
        Ok((data_pages, log_bytes, end))
    })();
    let (data_pages, log_bytes, last_lsn) = match produced {
        Ok(p) if !pipe.failed() => p,
        Ok(_) => {
            pipe.finish(None)?;
            return Err(msg::BACKUP_RESTORE_TERMINATED.with(&[&"BACKUP"]).into());
        }
        Err(e) => {
            let _ = pipe.finish(None);
            return Err(e);
        }
    };
    let totals = pipe.totals.clone();
    let mut trailer = Trailer {
        last_lsn: last_lsn.raw(),
        finish_unix_micros: now_micros(),
        data_pages_copied: data_pages,
        log_bytes,
        has_bulk_logged_data: bulk_pages > 0,
        ..Trailer::default()
    };
    trailer.backup_size = totals.raw_bytes.load(Ordering::Relaxed);
    trailer.compressed_size = totals.stored_bytes.load(Ordering::Relaxed);
    pipe.finish(Some(trailer.clone()))?;
    trailer.compressed_size = totals.stored_bytes.load(Ordering::Relaxed);
    if new_base {
        point.completed_differential_base();
    }
    drop(point);

    if !header.copy_only {
        let next = match kind {
            BackupType::Database => BackupChain {
                differential_base_lsn: first_lsn,
                differential_base_guid: set_guid,
                log_backup_lsn: if chain.log_backup_lsn.is_none() && model != RecoveryModel::Simple {
                    first_lsn
                } else {
                    chain.log_backup_lsn
                },
            },
            BackupType::Differential => chain,
            BackupType::Log => BackupChain { log_backup_lsn: last_lsn, ..chain },
        };
        if next != chain {
            db.set_backup_chain(next)?;
        }
    }

    let log_pages = log_bytes.div_ceil(PAGE_SIZE as u64);
    if kind != BackupType::Log || data_pages > 0 {
        notify(Notice::of(&msg::BACKUP_PAGES_PROCESSED, &[&data_pages, &name, &name, &position]));
    }
    let log_file = format!("{name}_log");
    notify(Notice::of(&msg::BACKUP_PAGES_PROCESSED, &[&log_pages, &name, &log_file, &position]));
    let pages = data_pages + log_pages;
    let seconds = started.elapsed().as_secs_f64();
    let what = match kind {
        BackupType::Database => "BACKUP DATABASE",
        BackupType::Differential => "BACKUP DATABASE WITH DIFFERENTIAL",
        BackupType::Log => "BACKUP LOG",
    };
    notify(succeeded(what, pages, seconds));
    Ok(BackupReport { header, trailer, media, buffers, pages, pages_scanned, seconds })
}

/// Opens every device for writing and positions it where the new set goes, checking
/// (or, with FORMAT, writing) the media headers. Returns the media headers, the open
/// stripes in family order and the new set's position (FILE = n).
fn prepare_media(opts: &BackupOptions) -> Result<(Vec<MediaHeader>, Vec<StripeOut>, u32), BackupError> {
    let n = opts.devices.len() as u32;
    let existing: Vec<Option<MediaHeader>> =
        opts.devices.iter().map(|d| crate::media::read_media_header(d)).collect::<Result<_, _>>()?;
    let reuse = !opts.format && existing.iter().any(Option::is_some);
    let mut headers = Vec::new();
    if reuse {
        let first = existing.iter().flatten().next().expect("an existing header").clone();
        for (i, h) in existing.iter().enumerate() {
            let d = opts.devices[i].display();
            let formatted_for = |families: u32| -> BackupError {
                let text = format!("The media loaded on \"{d}\" is formatted to support {families} media families, but {n} media families are expected according to the backup device specification.");
                msg::MEDIA_FAMILY_COUNT_MISMATCH.with(&[&text]).into()
            };
            let Some(h) = h else {
                return Err(formatted_for(0));
            };
            if h.family_count != n || h.media_set_guid != first.media_set_guid {
                return Err(formatted_for(h.family_count));
            }
            if !opts.skip {
                if let Some(want) = &opts.media_name {
                    if *want != h.media_name {
                        return Err(msg::MEDIANAME_MISMATCH.with(&[want, &h.media_name, &d]).into());
                    }
                }
            }
            headers.push(h.clone());
        }
        let mut seqs: Vec<u32> = headers.iter().map(|h| h.family_sequence).collect();
        seqs.sort_unstable();
        if seqs != (1..=n).collect::<Vec<_>>() {
            let text = "The devices do not form one complete media set: a media family is given twice.";
            return Err(msg::MEDIA_FAMILY_COUNT_MISMATCH.with(&[&text]).into());
        }
    } else {
        let guid: u128 = rand::random();
        for i in 0..n {
            headers.push(MediaHeader {
                media_set_guid: guid,
                family_count: n,
                family_sequence: i + 1,
                media_name: opts.media_name.clone().unwrap_or_default(),
                media_description: opts.media_description.clone().unwrap_or_default(),
                created_unix_micros: now_micros(),
            });
        }
    }
    let mut outs = Vec::new();
    let mut position = None;
    for (i, path) in opts.devices.iter().enumerate() {
        let (start, pos) = if reuse && !opts.init {
            let (_, sets) = list_sets(path)?;
            // A trailing incomplete set (a backup that failed and could not even cut
            // itself off) is overwritten.
            let complete: Vec<_> = sets.iter().filter(|s| s.trailer.is_some()).collect();
            (complete.last().map_or(MEDIA_HEADER_SIZE, |s| s.end), complete.len() as u32 + 1)
        } else {
            (MEDIA_HEADER_SIZE, 1)
        };
        if *position.get_or_insert(pos) != pos {
            let text = "The media families of this media set hold different numbers of backup sets.";
            return Err(msg::MEDIA_FAMILY_COUNT_MISMATCH.with(&[&text]).into());
        }
        // A backup reported done must not lose its file to a power loss: the contents
        // are synced when the set is finished, a new file's name as it is made.
        let mut file = MediaFile::open_or_create(path).map_err(|e| crate::open_failed(path, &e))?;
        // Devices that are not regular files (/dev/null-like) are written, never cut.
        let regular = file.is_regular().unwrap_or(false);
        if !reuse {
            if regular {
                file.set_len(0).map_err(|e| write_failed(path, &e))?;
            }
            file.write_all_at(&encode_media_header(&headers[i]), 0).map_err(|e| write_failed(path, &e))?;
        }
        if regular {
            file.set_len(start).map_err(|e| write_failed(path, &e))?;
        }
        file.seek(SeekFrom::Start(start)).map_err(|e| write_failed(path, &e))?;
        outs.push((headers[i].family_sequence, StripeOut { path: path.clone(), file, set_start: start }));
    }
    // Writers are numbered by family: chunk k goes to family (k mod n) + 1.
    let mut order: Vec<usize> = (0..outs.len()).collect();
    order.sort_by_key(|&i| outs[i].0);
    let media_sorted: Vec<MediaHeader> = order.iter().map(|&i| headers[i].clone()).collect();
    let mut outs: Vec<Option<StripeOut>> = outs.into_iter().map(|(_, o)| Some(o)).collect();
    let outs_sorted = order.iter().map(|&i| outs[i].take().expect("each stripe once")).collect();
    Ok((media_sorted, outs_sorted, position.unwrap_or(1)))
}

/// Copies the data file's pages in `runs` (`(first, count)`; `[(0, n)]` for the whole
/// file) whose LSN is at least `since` (0: all), skipping never-written (all-zero) pages.
/// Returns pages copied.
#[allow(clippy::too_many_arguments)]
fn copy_data_file(
    path: &std::path::Path,
    runs: &[(PageNo, u32)],
    since: Lsn,
    checksum: bool,
    database: &str,
    mts: usize,
    pipe: &mut WritePipeline,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, BackupError> {
    let file = File::open(path).map_err(|e| {
        let text = format!("Cannot open database file '{}': {e}", path.display());
        BackupError::from(msg::BACKUP_DEVICE_OPEN_FAILED.with(&[&text]))
    })?;
    // SAFETY: plain syscall on an owned descriptor: the file is read once, in order.
    unsafe { libc::posix_fadvise(std::os::unix::io::AsRawFd::as_raw_fd(&file), 0, 0, libc::POSIX_FADV_SEQUENTIAL) };
    let per_chunk = (mts / (PAGE_SIZE + 4)).max(1);
    // Reads are 1 MiB or more whatever the transfer size: small reads cost system calls.
    let run_pages = (mts.max(1 << 20) / PAGE_SIZE).max(1);
    let mut run = vec![0u8; run_pages * PAGE_SIZE];
    let mut chunk: Vec<u8> = pipe.buffer(per_chunk * (PAGE_SIZE + 4));
    let mut in_chunk = 0usize;
    let mut copied = 0u64;
    for &(first, count) in runs {
        let (mut no, pages) = (first, first + count);
        while no < pages {
            let n = (run_pages as u32).min(pages - no) as usize;
            let buf = &mut run[..n * PAGE_SIZE];
            let damaged = read_pages(&file, path, no, buf)?;
            if let Some((page_no, damage)) = damaged.first().filter(|_| checksum) {
                return Err(msg::BACKUP_PAGE_ERROR.with(&[&database, page_no, &path.display(), damage]).into());
            }
            for i in 0..n {
                let page_no = no + i as u32;
                let p = &buf[i * PAGE_SIZE..(i + 1) * PAGE_SIZE];
                if p.iter().all(|&b| b == 0) || page::lsn(p) < since {
                    continue;
                }
                if in_chunk == 0 && !pipe.reserve() {
                    return Ok(copied);
                }
                chunk.extend_from_slice(&page_no.raw().to_le_bytes());
                chunk.extend_from_slice(p);
                in_chunk += 1;
                copied += 1;
                if in_chunk == per_chunk {
                    let next = pipe.buffer(per_chunk * (PAGE_SIZE + 4));
                    pipe.send(ChunkKind::Pages, std::mem::replace(&mut chunk, next));
                    in_chunk = 0;
                }
            }
            no += n as u32;
            progress((n * PAGE_SIZE) as u64);
        }
    }
    if in_chunk > 0 {
        pipe.send(ChunkKind::Pages, chunk);
    }
    Ok(copied)
}
