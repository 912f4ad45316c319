//! BACKUP and RESTORE. See `README.md` beside this crate for the media format, the
//! pipeline and the invariants.
//!
//! [`backup`] copies a database (full or differential) or its log to a media set of
//! 1–64 stripe files; [`restore`] writes a database back from one, and
//! [`restore_log`]-style chains are the same call with a log set. [`headers`],
//! [`file_list`] and [`verify`] read media without restoring. Everything the client
//! should see as informational messages goes through a `notify` callback; failures are
//! [`BackupError`]s carrying SQL Server's error numbers.

use std::path::{Path, PathBuf};

use tessera_errors::catalog::Message;
use tessera_errors::{msg, SqlError};

mod backup;
mod copy;
pub mod media;
mod pipeline;
mod restore;

pub use backup::{backup, backup_database, BackupOptions, BackupReport};
pub use copy::{copy_database, CopyReport};
pub use media::{BackupType, FileEntry, MediaHeader, SetHeader, Trailer};
pub use restore::{
    file_list, headers, recover_only, restore, restoring_after_tail, verify, RestoreOptions, RestoreReport,
};

/// Most stripes in one media set (SQL Server's limit).
pub const MAX_DEVICES: usize = 64;
/// MAXTRANSFERSIZE bounds and step.
pub const MIN_TRANSFER: u32 = 64 << 10;
pub const MAX_TRANSFER: u32 = 4 << 20;
/// The most memory one backup or restore may use for its buffers.
pub const MAX_BUFFER_MEMORY: u64 = 2 << 30;

/// A failure, with SQL Server's error number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupError {
    pub number: i32,
    pub message: String,
}

impl std::fmt::Display for BackupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BackupError {}

impl From<tessera_errors::Error> for BackupError {
    fn from(e: tessera_errors::Error) -> BackupError {
        BackupError { number: e.number(), message: e.to_string() }
    }
}

impl From<SqlError> for BackupError {
    /// An error raised by name from the catalog (`msg::NAME.err()`), carried as a backup
    /// error.
    fn from(e: SqlError) -> BackupError {
        let e = e.into_detail();
        BackupError { number: e.number, message: e.message }
    }
}

fn os_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    format!("{}({text})", e.raw_os_error().unwrap_or(0))
}

fn device_open_failed(path: &Path, os_error: &str) -> BackupError {
    let text = format!("Cannot open backup device '{}'. Operating system error {os_error}.", path.display());
    msg::BACKUP_DEVICE_OPEN_FAILED.with(&[&text]).into()
}

pub(crate) fn open_failed(path: &Path, e: &std::io::Error) -> BackupError {
    device_open_failed(path, &os_error(e))
}

/// 3201 for a backup device that is not there (or holds no media header).
pub(crate) fn device_missing(path: &Path) -> BackupError {
    device_open_failed(path, "2(The system cannot find the file specified.)")
}

pub(crate) fn read_failed(path: &Path, e: &std::io::Error) -> BackupError {
    msg::BACKUP_READ_FAILED.with(&[&path.display(), &os_error(e)]).into()
}

pub(crate) fn write_failed(path: &Path, e: &std::io::Error) -> BackupError {
    msg::BACKUP_WRITE_FAILED.with(&[&path.display(), &os_error(e)]).into()
}

/// An informational message for the client (`N percent processed.`, `Processed N pages
/// …`, the final `… successfully processed …`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub number: i32,
    pub text: String,
}

impl Notice {
    /// The catalog's informational `message` (`msg::PERCENT_PROCESSED`, …), its
    /// placeholders filled by `args`: the catalog holds its number and its text.
    pub fn of(message: &Message, args: &[&dyn std::fmt::Display]) -> Notice {
        let m = message.with(args).into_detail();
        Notice { number: m.number, text: m.message }
    }
}

/// Reports `STATS = n` progress: a notice each time the done fraction passes a multiple
/// of `step` percent.
pub(crate) struct Stats {
    step: Option<u32>,
    next: u32,
}

impl Stats {
    pub(crate) fn new(step: Option<u32>) -> Stats {
        let step = step.map(|s| s.clamp(1, 100));
        Stats { step, next: step.unwrap_or(101) }
    }

    /// Also tells the session's views how far the work has got (percent_complete).
    pub(crate) fn update(&mut self, done: u64, total: u64, notify: &mut dyn FnMut(Notice)) {
        tessera_waits::progress(done, total);
        let Some(step) = self.step else { return };
        let pct = (done.min(total) * 100).checked_div(total).map_or(100, |p| p as u32);
        if pct >= self.next && self.next <= 100 {
            let shown = pct / step * step;
            notify(Notice::of(&msg::PERCENT_PROCESSED, &[&shown]));
            self.next = shown + step;
        }
    }
}

/// The buffer configuration of one backup or restore (printed with trace flag 3213).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferConfig {
    pub buffer_count: u32,
    pub max_transfer_size: u32,
    pub devices: u32,
    pub compression: bool,
}

impl BufferConfig {
    /// SQL Server's defaults: 1 MiB transfers to disk; `devices × 3 + devices + 2 ×
    /// data devices` buffers. MAXTRANSFERSIZE must be a multiple of 64 KiB up to 4 MiB,
    /// and the buffers must fit [`MAX_BUFFER_MEMORY`].
    pub fn choose(
        devices: usize,
        buffer_count: Option<u32>,
        max_transfer_size: Option<u32>,
        compression: bool,
    ) -> Result<BufferConfig, BackupError> {
        let mts = max_transfer_size.unwrap_or(1 << 20);
        if !(MIN_TRANSFER..=MAX_TRANSFER).contains(&mts) || !mts.is_multiple_of(MIN_TRANSFER) {
            return Err(msg::INVALID_MAXTRANSFERSIZE.with(&[&mts]).into());
        }
        let n = devices as u32;
        let count = buffer_count.unwrap_or(n * 3 + n + 2);
        if count == 0 {
            return Err(msg::INVALID_BUFFERCOUNT.err().into());
        }
        let memory = u64::from(count) * u64::from(mts);
        if memory > MAX_BUFFER_MEMORY {
            let what = format!(
                "to run this backup or restore: BUFFERCOUNT {count} × MAXTRANSFERSIZE {} KB = {} MB exceeds the limit of {} MB",
                mts >> 10,
                memory >> 20,
                MAX_BUFFER_MEMORY >> 20
            );
            return Err(msg::OUT_OF_MEMORY.with(&[&what]).into());
        }
        Ok(BufferConfig { buffer_count: count.max(n), max_transfer_size: mts, devices: n, compression })
    }

    /// The trace flag 3213 block, as SQL Server writes it.
    pub fn trace_lines(&self) -> Vec<String> {
        let sets = if self.compression { 3 } else { 1 };
        let total = u64::from(self.buffer_count) * u64::from(self.max_transfer_size) * sets;
        vec![
            "Backup/Restore buffer configuration parameters".into(),
            format!("Memory limit:               {} MB", MAX_BUFFER_MEMORY >> 20),
            format!("BufferCount:                {}", self.buffer_count),
            format!("Sets Of Buffers:            {sets}"),
            format!("MaxTransferSize:            {} KB", self.max_transfer_size >> 10),
            format!("Min MaxTransferSize:        {} KB", MIN_TRANSFER >> 10),
            format!("Total buffer space:         {} MB", total >> 20),
            "Tabular data device count:  1".into(),
            "Fulltext data device count: 0".into(),
            "Filestream device count:    0".into(),
            "TXF device count:           0".into(),
            "Filesystem i/o alignment:   512".into(),
            format!("Media Buffer count:         {}", self.buffer_count),
            format!("Media Buffer size:          {} KB", self.max_transfer_size >> 10),
            format!("Backup device count:        {}", self.devices),
        ]
    }
}

/// Checks the device list of a BACKUP or RESTORE.
pub(crate) fn check_devices(devices: &[PathBuf]) -> Result<(), BackupError> {
    if devices.is_empty() {
        return Err(msg::ZERO_LENGTH_DEVICE_NAME.err().into());
    }
    if devices.len() > MAX_DEVICES {
        return Err(msg::TOO_MANY_BACKUP_DEVICES.err().into());
    }
    for (i, d) in devices.iter().enumerate() {
        if devices[..i].contains(d) {
            return Err(msg::DUPLICATE_BACKUP_DEVICE.with(&[&d.display()]).into());
        }
    }
    Ok(())
}

pub(crate) fn now_micros() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

/// `… successfully processed N pages in S.sss seconds (X.xxx MB/sec).` (MB = MiB).
pub(crate) fn succeeded(what: &str, pages: u64, seconds: f64) -> Notice {
    let seconds = seconds.max(0.001);
    let mb = pages as f64 * 8192.0 / 1_048_576.0 / seconds;
    Notice::of(&msg::BACKUP_RESTORE_SUCCEEDED, &[&what, &pages, &format!("{seconds:.3}"), &format!("{mb:.3}")])
}
