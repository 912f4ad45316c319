//! `RESTORE DATABASE | LOG`, `RESTORE HEADERONLY | FILELISTONLY | VERIFYONLY`.
//!
//! A restore sequence — full, then optionally the latest differential, then log
//! backups in order — rebuilds the data file and a log file whose records keep their
//! LSNs. Between steps (WITH NORECOVERY) the database is RESTORING and a small JSON
//! file beside its data file (`<data file>.restoring`) says what has been applied.
//! WITH RECOVERY opens the database, which runs ordinary crash recovery over the
//! rebuilt log: redo from the backup's checkpoint, undo of what never committed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tessera_buffer::page::{self, PageNo, PAGE_SIZE};
use tessera_database::{BackupChain, DatabaseOptions, DbState, Engine, Exclusive, RecoveryModel};
use tessera_errors::msg;
use tessera_io::{DataFile, OpenMode};
use tessera_log::{split_frames, LogBuilder, LogRecord, LogSegment, Lsn, Master};

use crate::media::{
    damaged_set, list_sets, read_media_header, BackupType, ChunkKind, MediaHeader, SetHeader, SetLocation, Trailer,
};
use crate::pipeline::read_set;
use crate::{check_devices, device_missing, succeeded, BackupError, BufferConfig, Notice, Stats};

#[derive(Clone, Debug, Default)]
pub struct RestoreOptions {
    pub devices: Vec<PathBuf>,
    /// RESTORE LOG (else RESTORE DATABASE).
    pub log: bool,
    /// FILE = n (1-based).
    pub file: Option<u32>,
    /// WITH NORECOVERY sets this to false.
    pub recovery: bool,
    pub replace: bool,
    /// MOVE 'logical' TO 'path'.
    pub moves: Vec<(String, PathBuf)>,
    pub stats: Option<u32>,
    /// STOPAT, in microseconds since the Unix epoch (the clock commit records carry).
    pub stop_at: Option<i64>,
    pub buffer_count: Option<u32>,
    pub max_transfer_size: Option<u32>,
    /// CHECKSUM: fail if the backup has no page checksums.
    pub checksum: bool,
}

#[derive(Clone, Debug)]
pub struct RestoreReport {
    pub header: SetHeader,
    pub trailer: Trailer,
    pub buffers: BufferConfig,
    pub pages: u64,
    pub seconds: f64,
    /// The database is ONLINE now (else it stays RESTORING).
    pub recovered: bool,
    pub data_path: PathBuf,
    pub log_path: PathBuf,
}

/// What a RESTORING database has had applied so far.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Progress {
    /// The full backup the data file comes from (differentials must name it).
    base_guid: u128,
    base_first_lsn: u64,
    checkpoint_lsn: u64,
    begin_lsn: u64,
    recovery_model: String,
    /// RESTORING since a tail-log backup WITH NORECOVERY: its files are whole and its log
    /// its own; only `RESTORE … WITH RECOVERY` (no FROM) brings it back.
    #[serde(default)]
    tail: bool,
}

fn progress_path(data_path: &Path) -> PathBuf {
    let mut p = data_path.as_os_str().to_owned();
    p.push(".restoring");
    PathBuf::from(p)
}

fn load_progress(data_path: &Path, name: &str) -> Result<Progress, BackupError> {
    std::fs::read(progress_path(data_path))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| msg::NO_FILES_TO_ROLL_FORWARD.with(&[&format!(" (database '{name}')")]).into())
}

fn save_progress(data_path: &Path, p: &Progress) -> Result<(), BackupError> {
    let path = progress_path(data_path);
    let bytes = serde_json::to_vec(p).expect("progress serializes");
    Ok(tessera_io::durable::write_atomically(&path, &bytes, 0o644)?)
}

/// The media set on `devices`: every family present once, all of one set.
fn open_media(devices: &[PathBuf]) -> Result<Vec<MediaHeader>, BackupError> {
    check_devices(devices)?;
    let mut headers = Vec::new();
    for d in devices {
        let h = read_media_header(d)?.ok_or_else(|| device_missing(d))?;
        headers.push(h);
    }
    let first = headers[0].clone();
    for (i, h) in headers.iter().enumerate() {
        if h.media_set_guid != first.media_set_guid {
            let text = format!(
                "The volume on device '{}' belongs to a different media set than the volume on device '{}'.",
                devices[i].display(),
                devices[0].display()
            );
            return Err(msg::DUPLICATE_MEDIA_FAMILY.with(&[&text]).into());
        }
        if headers[..i].iter().any(|o| o.family_sequence == h.family_sequence) {
            let text = format!("The volume on device '{}' is a duplicate of stripe set media family {}. Remove it and insert another volume which holds a different media family.", devices[i].display(), h.family_sequence);
            return Err(msg::DUPLICATE_MEDIA_FAMILY.with(&[&text]).into());
        }
    }
    if first.family_count as usize != devices.len() {
        return Err(msg::MEDIA_FAMILIES_MISSING.with(&[&first.family_count, &devices.len()]).into());
    }
    Ok(headers)
}

/// The set at `position` in every stripe, in family order.
fn locate(devices: &[PathBuf], position: u32) -> Result<Vec<(PathBuf, SetLocation)>, BackupError> {
    let headers = open_media(devices)?;
    let mut found = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let (_, sets) = list_sets(d)?;
        let Some(loc) = sets.into_iter().nth(position as usize - 1) else {
            return Err(msg::BACKUP_FILE_ID_NOT_FOUND.with(&[&position, &d.display()]).into());
        };
        if loc.trailer.is_none() {
            return Err(damaged_set(&format!(
                "the backup set on file {position} of device '{}' is incomplete (its backup did not finish)",
                d.display()
            )));
        }
        found.push((headers[i].family_sequence, d.clone(), loc));
    }
    let guid = found[0].2.header.backup_set_guid;
    if let Some((_, d, _)) = found.iter().find(|(_, _, l)| l.header.backup_set_guid != guid) {
        let text = format!(
            "The backup set on file {position} of device '{}' belongs to a different backup than the other devices.",
            d.display()
        );
        return Err(msg::DUPLICATE_MEDIA_FAMILY.with(&[&text]).into());
    }
    found.sort_by_key(|(seq, _, _)| *seq);
    Ok(found.into_iter().map(|(_, d, l)| (d, l)).collect())
}

/// RESTORE HEADERONLY: every backup set on the media (read from the first device).
pub fn headers(devices: &[PathBuf]) -> Result<Vec<(SetHeader, Option<Trailer>)>, BackupError> {
    check_devices(devices)?;
    let (_, sets) = list_sets(&devices[0])?;
    Ok(sets.into_iter().map(|s| (s.header, s.trailer)).collect())
}

/// RESTORE FILELISTONLY: the files of the set at `position`.
pub fn file_list(devices: &[PathBuf], position: u32) -> Result<SetHeader, BackupError> {
    check_devices(devices)?;
    let (_, sets) = list_sets(&devices[0])?;
    sets.into_iter()
        .nth(position.max(1) as usize - 1)
        .map(|s| s.header)
        .ok_or_else(|| msg::BACKUP_FILE_ID_NOT_FOUND.with(&[&position, &devices[0].display()]).into())
}

/// RESTORE VERIFYONLY: reads the whole set from every stripe, checking chunk checksums,
/// that no chunk is missing and (if the backup has them) every page's checksum.
pub fn verify(devices: &[PathBuf], position: u32, notify: &mut dyn FnMut(Notice)) -> Result<(), BackupError> {
    let stripes = locate(devices, position.max(1))?;
    let header = stripes[0].1.header.clone();
    let buffers = BufferConfig::choose(devices.len(), None, Some(header.max_transfer_size), false)?;
    read_set(stripes, buffers.buffer_count, buffers.max_transfer_size, |c| {
        match c.kind {
            ChunkKind::Pages => {
                for (no, image) in page_entries(&c.data)? {
                    if let Err(damage) = page::verify(image, PageNo::from_raw(no)) {
                        if header.checksums {
                            return Err(msg::RESTORE_PAGE_ERROR.with(&[&no, &header.database_name, &damage]).into());
                        }
                    }
                }
            }
            ChunkKind::Log => {
                log_segment(&c.data)?;
            }
            ChunkKind::Trailer => {}
        }
        Ok(())
    })?;
    notify(Notice::of(&msg::BACKUP_SET_VALID, &[&position.max(1)]));
    Ok(())
}

fn page_entries(data: &[u8]) -> Result<Vec<(u32, &[u8])>, BackupError> {
    if !data.len().is_multiple_of(PAGE_SIZE + 4) {
        return Err(damaged_set("a data chunk has a partial page"));
    }
    Ok(data.chunks_exact(PAGE_SIZE + 4).map(|e| (u32::from_le_bytes(e[0..4].try_into().unwrap()), &e[4..])).collect())
}

fn log_segment(data: &[u8]) -> Result<LogSegment, BackupError> {
    if data.len() < 16 {
        return Err(damaged_set("a log chunk is truncated"));
    }
    let seg = LogSegment {
        seq: u32::from_le_bytes(data[0..4].try_into().unwrap()),
        vlf_size: u64::from_le_bytes(data[4..12].try_into().unwrap()),
        offset: u32::from_le_bytes(data[12..16].try_into().unwrap()),
        frames: data[16..].to_vec(),
    };
    let whole: usize = split_frames(seg.seq, &seg.frames).last().map_or(0, |&(at, p)| at + 8 + p.len());
    if whole != seg.frames.len() {
        return Err(damaged_set("a log chunk holds a damaged record"));
    }
    Ok(seg)
}

/// Restores a database or applies a log backup to a RESTORING one.
pub fn restore(
    engine: &Engine,
    database: &str,
    opts: &RestoreOptions,
    notify: &mut dyn FnMut(Notice),
) -> Result<RestoreReport, BackupError> {
    let started = Instant::now();
    let position = opts.file.unwrap_or(1).max(1);
    let stripes = locate(&opts.devices, position)?;
    let header = stripes[0].1.header.clone();
    let set_trailer = stripes[0].1.trailer.clone().expect("located sets are complete");
    let device = opts.devices[0].display().to_string();
    match (opts.log, header.backup_type) {
        (true, BackupType::Log) | (false, BackupType::Database | BackupType::Differential) => {}
        (_, t) => {
            let by = if t == BackupType::Log { "BACKUP LOG" } else { "BACKUP DATABASE" };
            return Err(msg::BACKUP_SET_INCOMPATIBLE.with(&[&device, &by]).into());
        }
    }
    if opts.checksum && !header.checksums {
        return Err(msg::BACKUP_HAS_NO_CHECKSUM.err().into());
    }
    for (logical, _) in &opts.moves {
        if !header.files.iter().any(|f| f.logical_name.eq_ignore_ascii_case(logical)) {
            return Err(msg::LOGICAL_FILE_NOT_IN_DATABASE.with(&[logical, &database]).into());
        }
    }
    let buffers = BufferConfig::choose(
        opts.devices.len(),
        opts.buffer_count,
        opts.max_transfer_size.or(Some(header.max_transfer_size)),
        false,
    )?;
    let state = engine.database_state(database);

    // Where the files go, and what the database has so far.
    let (data_path, log_path, mut progress, mut builder) = match header.backup_type {
        BackupType::Database => {
            if let Some(stop) = opts.stop_at {
                if stop < set_trailer.finish_unix_micros {
                    return Err(msg::STOPAT_TOO_EARLY.err().into());
                }
            }
            if state == Some(DbState::Online) && !opts.replace {
                if !header.database_name.eq_ignore_ascii_case(database) {
                    return Err(msg::BACKUP_OF_DIFFERENT_DATABASE.with(&[&database]).into());
                }
                let (_, _, current) = engine.database_info(database).expect("the database exists");
                if current.recovery_model != RecoveryModel::Simple {
                    return Err(msg::LOG_TAIL_NOT_BACKED_UP.with(&[&database]).into());
                }
            }
            let target = |kind: char| -> PathBuf {
                let f = header.files.iter().find(|f| f.kind == kind).expect("a data and a log file");
                opts.moves
                    .iter()
                    .find(|(l, _)| l.eq_ignore_ascii_case(&f.logical_name))
                    .map(|(_, p)| p.clone())
                    .unwrap_or_else(|| PathBuf::from(&f.physical_name))
            };
            let (data_path, log_path) = (target('D'), target('L'));
            let options = DatabaseOptions {
                recovery_model: RecoveryModel::parse(&header.recovery_model).unwrap_or_default(),
                ..DatabaseOptions::default()
            };
            engine.begin_restore(database, &data_path, &log_path, options, opts.replace)?;
            for p in [&data_path, &log_path] {
                remove_if_exists(p)?;
            }
            let _ = tessera_io::durable::remove_file(&progress_path(&data_path));
            let file = DataFile::open(&data_path, OpenMode::CreateNew, false)?;
            file.allocate(u64::from(header.data_pages) * PAGE_SIZE as u64)?;
            drop(file);
            let progress = Progress {
                base_guid: header.backup_set_guid,
                base_first_lsn: header.first_lsn,
                checkpoint_lsn: header.checkpoint_lsn,
                begin_lsn: header.first_lsn,
                recovery_model: header.recovery_model.clone(),
                tail: false,
            };
            (
                data_path.clone(),
                log_path.clone(),
                progress,
                LogBuilder::create(&log_path, database, Lsn::from_raw(header.first_lsn))?,
            )
        }
        BackupType::Differential | BackupType::Log => {
            if state != Some(DbState::Restoring) {
                return Err(msg::NO_FILES_TO_ROLL_FORWARD.with(&[&""]).into());
            }
            let (data_path, log_path, _) = engine.database_info(database).expect("the database exists");
            let progress = load_progress(&data_path, database)?;
            if progress.tail {
                return Err(msg::NO_FILES_TO_ROLL_FORWARD.with(&[&format!(" (database '{database}')")]).into());
            }
            if header.backup_type == BackupType::Differential {
                if header.differential_base_guid != progress.base_guid {
                    return Err(msg::DIFFERENTIAL_BASE_MISMATCH.err().into());
                }
                remove_if_exists(&log_path)?;
                let progress =
                    Progress { checkpoint_lsn: header.checkpoint_lsn, begin_lsn: header.first_lsn, ..progress };
                (
                    data_path,
                    log_path.clone(),
                    progress,
                    LogBuilder::create(&log_path, database, Lsn::from_raw(header.first_lsn))?,
                )
            } else {
                if opts.stop_at.is_some_and(|stop| stop < set_trailer.finish_unix_micros)
                    && set_trailer.has_bulk_logged_data
                {
                    return Err(msg::BULK_LOGGED_NO_STOPAT.err().into());
                }
                let builder = LogBuilder::open(&log_path, database)?;
                let end = builder.end_lsn();
                if header.first_lsn > end.raw() {
                    return Err(msg::LOG_BACKUP_TOO_RECENT.with(&[&Lsn::from_raw(header.first_lsn), &end]).into());
                }
                if set_trailer.last_lsn < end.raw() {
                    return Err(msg::LOG_BACKUP_TOO_EARLY.with(&[&Lsn::from_raw(set_trailer.last_lsn), &end]).into());
                }
                (data_path, log_path, progress, builder)
            }
        }
    };

    let data_file = DataFile::open(&data_path, OpenMode::Existing, false)?;
    if header.data_pages as u64 * PAGE_SIZE as u64 > data_file.len()? {
        data_file.set_len(u64::from(header.data_pages) * PAGE_SIZE as u64)?;
    }
    let mut stats = Stats::new(opts.stats);
    let total = set_trailer.backup_size.max(1);
    let mut done = 0u64;
    let mut pages = 0u64;
    let mut log_bytes = 0u64;
    let mut stopped = false;
    let mut run: Vec<u8> = Vec::with_capacity(buffers.max_transfer_size as usize);
    let trailer = read_set(stripes, buffers.buffer_count, buffers.max_transfer_size, |c| {
        done += c.data.len() as u64;
        match c.kind {
            ChunkKind::Pages => {
                let entries = page_entries(&c.data)?;
                if header.checksums {
                    for &(no, image) in &entries {
                        if let Err(damage) = page::verify(image, PageNo::from_raw(no)) {
                            return Err(msg::RESTORE_PAGE_ERROR.with(&[&no, &database, &damage]).into());
                        }
                    }
                }
                // Runs of consecutive pages go to the file in one write each.
                let mut i = 0;
                while i < entries.len() {
                    let first = entries[i].0;
                    let mut n = 1;
                    while i + n < entries.len() && entries[i + n].0 == first + n as u32 {
                        n += 1;
                    }
                    run.clear();
                    for &(_, image) in &entries[i..i + n] {
                        run.extend_from_slice(image);
                    }
                    data_file.write_all_at(&run, u64::from(first) * PAGE_SIZE as u64)?;
                    pages += n as u64;
                    i += n;
                }
            }
            ChunkKind::Log if !stopped => {
                let mut seg = log_segment(&c.data)?;
                if let Some(stop) = opts.stop_at.filter(|_| header.backup_type == BackupType::Log) {
                    let cut = split_frames(seg.seq, &seg.frames).into_iter().find_map(|(at, payload)| {
                        let rec = LogRecord::decode(payload).ok()?;
                        rec.commit_time().filter(|&t| t > stop).map(|_| at)
                    });
                    if let Some(at) = cut {
                        seg.frames.truncate(at);
                        stopped = true;
                    }
                }
                log_bytes += seg.frames.len() as u64;
                builder.append(&seg)?;
            }
            ChunkKind::Log | ChunkKind::Trailer => {}
        }
        stats.update(done, total, notify);
        Ok(())
    })?;
    data_file.sync_all()?;
    drop(data_file);
    let end = builder.end_lsn();
    builder.finish(Master {
        checkpoint_lsn: Lsn::from_raw(progress.checkpoint_lsn),
        begin_lsn: Lsn::from_raw(progress.begin_lsn),
    })?;
    save_progress(&data_path, &progress)?;

    let name = &header.database_name;
    let log_pages = log_bytes.div_ceil(PAGE_SIZE as u64);
    if header.backup_type != BackupType::Log || pages > 0 {
        notify(Notice::of(&msg::BACKUP_PAGES_PROCESSED, &[&pages, &database, name, &position]));
    }
    let log_file = format!("{name}_log");
    notify(Notice::of(&msg::BACKUP_PAGES_PROCESSED, &[&log_pages, &database, &log_file, &position]));

    // STOPAT beyond this backup: the point lies in a later log backup.
    let stop_pending = opts.stop_at.is_some() && !stopped;
    if stop_pending && opts.recovery {
        notify(Notice::of(&msg::LOG_ENDS_BEFORE_STOP_POINT, &[]));
    }
    let recover = opts.recovery && !stop_pending;
    if recover {
        finish_recovery(engine, database, &data_path, &mut progress, end.raw())?;
    }
    let what = if header.backup_type == BackupType::Log { "RESTORE LOG" } else { "RESTORE DATABASE" };
    let total_pages = pages + log_pages;
    let seconds = started.elapsed().as_secs_f64();
    notify(succeeded(what, total_pages, seconds));
    Ok(RestoreReport { header, trailer, buffers, pages: total_pages, seconds, recovered: recover, data_path, log_path })
}

/// Ends a tail-log backup WITH NORECOVERY taken under `hold`: the database becomes
/// RESTORING with its files kept, so that `RESTORE DATABASE … WITH RECOVERY` can bring
/// it back as it was (a tenant move that fails after its tail). See
/// [`Engine::restoring_after_tail`] for when it refuses (3101).
pub fn restoring_after_tail(engine: &Engine, hold: Exclusive) -> Result<(), BackupError> {
    let db = hold.database();
    let (data_path, _) = db.file_paths();
    let progress =
        Progress { recovery_model: db.options().recovery_model.name().to_string(), tail: true, ..Progress::default() };
    save_progress(&data_path, &progress)?;
    engine.restoring_after_tail(hold).inspect_err(|_| {
        let _ = tessera_io::durable::remove_file(&progress_path(&data_path));
    })?;
    Ok(())
}

/// `RESTORE DATABASE name WITH RECOVERY` (no FROM): brings a RESTORING database online
/// with what has been applied.
pub fn recover_only(engine: &Engine, database: &str, notify: &mut dyn FnMut(Notice)) -> Result<(), BackupError> {
    let started = Instant::now();
    match engine.database_state(database) {
        None => return Err(tessera_errors::Error::NotFound { kind: "database", name: database.into() }.into()),
        Some(DbState::Online) => return Err(msg::DATABASE_ALREADY_ONLINE.with(&[&database]).into()),
        Some(DbState::Restoring) => {}
    }
    let (data_path, log_path, _) = engine.database_info(database).expect("the database exists");
    let mut progress = load_progress(&data_path, database)?;
    if progress.tail {
        // Its backup chain is its own, as the tail left it.
        engine.finish_restore(database)?;
        let _ = tessera_io::durable::remove_file(&progress_path(&data_path));
        notify(succeeded("RESTORE DATABASE", 0, started.elapsed().as_secs_f64()));
        return Ok(());
    }
    let end = LogBuilder::open(&log_path, database)?.end_lsn();
    finish_recovery(engine, database, &data_path, &mut progress, end.raw())?;
    notify(succeeded("RESTORE DATABASE", 0, started.elapsed().as_secs_f64()));
    Ok(())
}

fn finish_recovery(
    engine: &Engine,
    database: &str,
    data_path: &Path,
    progress: &mut Progress,
    end: u64,
) -> Result<(), BackupError> {
    engine.finish_restore(database)?;
    let db = engine.database(database)?;
    // The restored database continues the backup chain it came from: differentials
    // apply to the restored full backup, and log backups start where the log now ends.
    let simple = db.options().recovery_model == RecoveryModel::Simple;
    db.set_backup_chain(BackupChain {
        differential_base_lsn: Lsn::from_raw(progress.base_first_lsn),
        differential_base_guid: progress.base_guid,
        log_backup_lsn: if simple { Lsn::NONE } else { Lsn::from_raw(end) },
    })?;
    let _ = tessera_io::durable::remove_file(&progress_path(data_path));
    Ok(())
}

fn remove_if_exists(p: &Path) -> Result<(), BackupError> {
    match tessera_io::durable::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(tessera_errors::Error::io("delete", p, 0, e).into()),
    }
}
