//! `CREATE DATABASE target AS COPY OF source`: a full backup restored at once, with no
//! media between them. The source checkpoints and holds its log (as for a backup); its
//! data file is copied page by page (a page torn by a concurrent write is read again)
//! into the target's new data file; the source's log from the checkpoint's begin LSN to
//! its end is laid out in the target's new log with every LSN kept ([`LogBuilder`]);
//! then the target opens, and crash recovery makes it the source as of the copy's end
//! (committed work in, the rest rolled back). The target is registered RESTORING first,
//! so nothing opens it half-made, and dropped if any step fails: a copy that fails
//! leaves no database behind. The copy costs what the source holds (pages and log since
//! its checkpoint) and a few syncs, not a replay of the statements that built it.

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use tessera_buffer::page::{self, PageNo, PAGE_SIZE};
use tessera_database::{DatabaseOptions, Engine};
use tessera_errors::msg;
use tessera_io::{DataFile, OpenMode};
use tessera_log::{split_frames, LogBuilder, LogRecord, LogSegment, Lsn, Master, RecordKind, TxnId};

use crate::backup::read_pages;
use crate::BackupError;

/// What a copy did.
#[derive(Clone, Debug)]
pub struct CopyReport {
    /// Data file pages copied.
    pub pages: u64,
    /// Log bytes copied (from the source's checkpoint to its end).
    pub log_bytes: u64,
    pub seconds: f64,
}

/// Bytes of pages read and written at a time.
const RUN_BYTES: usize = 1 << 20;

/// Makes `target` a copy of `source` (see the module documentation), its files where new
/// databases' files go, its options the source's but its owner (`owner_sid`). Errors:
/// the name cannot name files; the source is missing or not online; a file of the
/// target's already exists (as `begin_restore` reports it); an I/O error.
pub fn copy_database(
    engine: &Engine,
    source: &str,
    target: &str,
    owner_sid: Option<Vec<u8>>,
) -> Result<CopyReport, BackupError> {
    let started = Instant::now();
    Engine::check_new_name(target)?;
    let db = engine.database(source)?;
    let (data_path, log_path) = engine.new_database_paths(target);
    let options = DatabaseOptions { data_path: None, log_path: None, owner_sid, ..db.options() };
    engine.begin_restore(target, &data_path, &log_path, options, false)?;
    let copied = (|| -> Result<CopyReport, BackupError> {
        let point = db.begin_copy()?;
        let (source_data, _) = db.file_paths();
        let file = File::open(&source_data).map_err(|e| tessera_errors::Error::io("open", &source_data, 0, e))?;
        let out = DataFile::open(&data_path, OpenMode::CreateNew, false)?;
        out.allocate(u64::from(point.data_pages) * PAGE_SIZE as u64)?;
        let mut pages = copy_pages(&file, &source_data, &out, source, PageNo::NONE, point.data_pages)?;
        // Pages written by minimally logged bulk loads whose notes fall in the copied log
        // are copied as they are now (the log lacks their contents), as a backup does.
        let mut end = db.wal().end_lsn();
        let mut scanned = point.begin_lsn;
        loop {
            let loaded = db.bulk_loaded_pages(scanned, end)?;
            if loaded.is_empty() {
                break;
            }
            for (first, count) in page::runs(&loaded) {
                pages += copy_pages(&file, &source_data, &out, source, first, count)?;
            }
            scanned = end;
            end = db.wal().end_lsn();
        }
        // The log the copy needs: none but a fresh checkpoint when the source's log from
        // its checkpoint on is that checkpoint alone (nothing was active or came after:
        // the copied pages are the checkpoint's state); else all of it, LSNs kept.
        let mut segments = Vec::new();
        db.wal().copy_segments(point.begin_lsn, end, RUN_BYTES, |seg| {
            segments.push(seg);
            Ok(())
        })?;
        let log_bytes = segments.iter().map(|s| s.frames.len() as u64).sum();
        out.sync_all()?;
        match quiet_checkpoint(&segments, point.checkpoint_lsn, scanned == point.begin_lsn) {
            Some(next_txn) => LogBuilder::fresh(&log_path, target, end.seq() + 1, next_txn)?,
            None => {
                let mut log = LogBuilder::create(&log_path, target, point.begin_lsn)?;
                for seg in &segments {
                    log.append(seg)?;
                }
                log.finish(Master { checkpoint_lsn: point.checkpoint_lsn, begin_lsn: point.begin_lsn })?;
            }
        }
        Ok(CopyReport { pages, log_bytes, seconds: 0.0 })
    })();
    drop(db);
    let report = copied.and_then(|r| {
        engine.finish_restore(target)?;
        Ok(r)
    });
    match report {
        Ok(r) => Ok(CopyReport { seconds: started.elapsed().as_secs_f64(), ..r }),
        Err(e) => {
            let _ = engine.drop_database(target);
            for p in [&data_path, &log_path] {
                let _ = tessera_io::durable::remove_file(p);
            }
            Err(e)
        }
    }
}

/// The next transaction id of the checkpoint at `checkpoint`, if `segments` (the log
/// copied from the checkpoint's begin LSN to the end) hold that one record and nothing
/// else and no bulk load's pages had to be copied (`no_bulk_pages`).
fn quiet_checkpoint(segments: &[LogSegment], checkpoint: Lsn, no_bulk_pages: bool) -> Option<TxnId> {
    let [only] = segments else { return None };
    if !no_bulk_pages || only.first_lsn() != checkpoint {
        return None;
    }
    // One whole frame, starting at the checkpoint and ending where the copied log ends.
    let [(0, payload)] = split_frames(only.seq, &only.frames)[..] else { return None };
    if payload.as_ptr_range().end != only.frames.as_ptr_range().end {
        return None;
    }
    let record = LogRecord::decode(payload).ok()?;
    if record.kind != RecordKind::Checkpoint {
        return None;
    }
    let state = tessera_log::recovery::Checkpoint::decode(&record.body).ok()?;
    state.active.is_empty().then_some(state.next_txn)
}

/// Copies pages `[first, first + count)` of `file` to the same places in `out`, reading
/// each one that does not verify again (torn by a concurrent write); a page still damaged
/// is error 3043. Returns the pages copied.
fn copy_pages(
    file: &File,
    path: &Path,
    out: &DataFile,
    database: &str,
    first: PageNo,
    count: u32,
) -> Result<u64, BackupError> {
    let run_pages = (RUN_BYTES / PAGE_SIZE) as u32;
    let mut buf = tessera_io::AlignedBuf::new(RUN_BYTES);
    let (mut no, end) = (first, first + count);
    while no < end {
        let n = run_pages.min(end - no);
        let run = &mut buf[..n as usize * PAGE_SIZE];
        if let Some((page_no, damage)) = read_pages(file, path, no, run)?.into_iter().next() {
            return Err(msg::BACKUP_PAGE_ERROR.with(&[&database, &page_no, &path.display(), &damage]).into());
        }
        out.write_all_at(run, no.byte_offset())?;
        no += n;
    }
    Ok(u64::from(count))
}
