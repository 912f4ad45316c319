//! The server's log: SQL Server style lines (`2024-05-06 10:11:12.34 Server      text`,
//! `spid52` in place of `Server` for a session's lines), UTC timestamps, written to stderr
//! and appended to `ERRORLOG` in the data directory; its archives beside it, as SQL
//! Server keeps them: `ERRORLOG.1` (the previous log) to `ERRORLOG.n` (the oldest).
//!
//! Invariants:
//! - Logging never fails a caller; a write error on the file is reported once on stderr
//!   and the file is then left alone (until the log is cycled, which opens a new one).
//! - A line that any client can cause at will, without logging in (a refused or timed-out
//!   connection, a malformed login), goes through a [`Sampled`]: at most [`SAMPLE_LINES`]
//!   such lines per [`SAMPLE_PERIOD`] and kind, so a flood of them cannot fill the disk
//!   the log is on.
//! - The log rotates — `ERRORLOG.n` becomes `ERRORLOG.n+1`, `ERRORLOG` becomes
//!   `ERRORLOG.1`, archives past `errorlog_files` are deleted — when the server starts,
//!   when `sp_cycle_errorlog` asks, and when the current file reaches `errorlog_max_mb`
//!   (counted from the bytes written, with no `stat` per line). So the files take at most
//!   about (`errorlog_files` + 1) × `errorlog_max_mb`.
//! - Rotation never fails a line's writer: a rename that fails is reported once on
//!   stderr and the log goes on in whatever file `ERRORLOG` then is (the old one, if it
//!   could not be moved). Only `sp_cycle_errorlog` hears of the failure, as its error.
//! - Every file the server starts after its first begins with the server's header lines
//!   (its version first: [`ErrorLog::header`]) and "The error log has been reinitialized.",
//!   so each file says what wrote it.
//! - A line is `timestamp source text`, the source padded to 11 characters and always
//!   followed by a space: `xp_readerrorlog` (tessera-execution's `sysprocs/errorlog.rs`)
//!   reads the files back in this shape, and a line that does not begin with a timestamp
//!   continues the entry before it.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

/// The current log's name in the data directory; archive n is `ERRORLOG.n`.
pub const FILE_NAME: &str = "ERRORLOG";
/// The fewest archives SQL Server keeps (`errorlog_files`).
pub const MIN_ARCHIVES: u32 = 6;
/// The most archives SQL Server keeps (`errorlog_files`).
pub const MAX_ARCHIVES: u32 = 99;

/// The line SQL Server writes to the old log before cycling it.
pub const CYCLE_LINE: &str =
    "Attempting to cycle error log. This is an informational message only; no user action is required.";
/// The line after the header in each new file the server starts while it runs.
pub const REINITIALIZED_LINE: &str = "The error log has been reinitialized. See the previous log for older entries.";

/// How many archives the log keeps and how large the current file may grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// `ERRORLOG.1` to `ERRORLOG.archives` are kept; older ones are deleted.
    pub archives: u32,
    /// The current file rotates once this many bytes are in it; 0: no limit.
    pub max_bytes: u64,
}

impl Default for Rotation {
    fn default() -> Rotation {
        Rotation { archives: MIN_ARCHIVES, max_bytes: 0 }
    }
}

pub struct ErrorLog {
    /// Where the files are; `None` when no file is kept.
    dir: Option<PathBuf>,
    rotation: Rotation,
    current: Mutex<Current>,
    stderr: bool,
    file_failed: AtomicBool,
    rotate_failed: AtomicBool,
}

/// The file lines go to, and what a new one begins with.
struct Current {
    file: Option<File>,
    /// Bytes in `file`: its length when opened plus what was written since.
    bytes: u64,
    /// The header lines ([`ErrorLog::header`]), written again at the top of each new file.
    header: Vec<String>,
}

/// Formats seconds and hundredths since the Unix epoch as `YYYY-MM-DD hh:mm:ss.cc` (UTC).
pub fn timestamp(since_epoch: std::time::Duration) -> String {
    let secs = since_epoch.as_secs() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        since_epoch.subsec_millis() / 10
    )
}

/// One line of the file, newline included: the source is padded to 11 characters and a
/// space always follows it (SQL Server's 12 columns for `spid52`, `Server`, `Logon`).
fn format_line(source: &str, text: &str) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    format!("{} {source:<11} {text}\n", timestamp(now))
}

/// Log `n`'s file in `dir`: `ERRORLOG` for 0, `ERRORLOG.n` for an archive.
fn file_path(dir: &Path, n: u32) -> PathBuf {
    if n == 0 {
        dir.join(FILE_NAME)
    } else {
        dir.join(format!("{FILE_NAME}.{n}"))
    }
}

/// Moves `ERRORLOG` to `ERRORLOG.1` and each archive one number up, deleting those past
/// `archives`. Nothing moves when there is no `ERRORLOG`. Every step is tried; the error
/// names the first that failed.
fn rotate_files(dir: &Path, archives: u32) -> Result<(), String> {
    let current = file_path(dir, 0);
    if let Err(e) = std::fs::symlink_metadata(&current) {
        return if e.kind() == ErrorKind::NotFound {
            Ok(())
        } else {
            Err(format!("cannot read '{}': {e}", current.display()))
        };
    }
    let mut failure = None;
    let mut failed = |what: String| {
        failure.get_or_insert(what);
    };
    for n in (archives..=MAX_ARCHIVES).rev() {
        let old = file_path(dir, n);
        match std::fs::remove_file(&old) {
            Err(e) if e.kind() != ErrorKind::NotFound => failed(format!("cannot delete '{}': {e}", old.display())),
            _ => {}
        }
    }
    for n in (0..archives).rev() {
        let (from, to) = (file_path(dir, n), file_path(dir, n + 1));
        match std::fs::rename(&from, &to) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                failed(format!("cannot rename '{}' to '{}': {e}", from.display(), to.display()))
            }
            _ => {}
        }
    }
    failure.map_or(Ok(()), Err)
}

impl ErrorLog {
    /// When `file` is set: rotates the files in `dir` (the last run's `ERRORLOG` becomes
    /// `ERRORLOG.1`) and opens a new `ERRORLOG`, or appends to the old one if it could not
    /// be moved.
    pub fn open(dir: &Path, file: bool, stderr: bool, rotation: Rotation) -> ErrorLog {
        let log = ErrorLog {
            dir: file.then(|| dir.to_path_buf()),
            rotation,
            current: Mutex::new(Current { file: None, bytes: 0, header: Vec::new() }),
            stderr,
            file_failed: AtomicBool::new(false),
            rotate_failed: AtomicBool::new(false),
        };
        if file {
            if let Err(e) = rotate_files(dir, rotation.archives) {
                log.rotate_failed.store(true, Ordering::Relaxed);
                eprintln!("tessera: cannot rotate ERRORLOG: {e}");
            }
            log.open_file(&mut log.current.lock(), dir);
        }
        log
    }

    /// A log that writes nowhere (tests).
    pub fn disabled() -> ErrorLog {
        ErrorLog {
            dir: None,
            rotation: Rotation::default(),
            current: Mutex::new(Current { file: None, bytes: 0, header: Vec::new() }),
            stderr: false,
            file_failed: AtomicBool::new(false),
            rotate_failed: AtomicBool::new(false),
        }
    }

    /// A server-wide line.
    pub fn server(&self, text: &str) {
        self.line("Server", text);
    }

    /// A server-wide line that also begins every file started later (the version, the
    /// process id, where the log is).
    pub fn header(&self, text: &str) {
        self.line("Server", text);
        self.current.lock().header.push(text.to_string());
    }

    /// A line about one session (`spid` 0 before a session exists: "Logon").
    pub fn session(&self, spid: i32, text: &str) {
        if spid > 0 {
            self.line(&format!("spid{spid}"), text);
        } else {
            self.line("Logon", text);
        }
    }

    /// Log `n`'s file (0: the current `ERRORLOG`, n: `ERRORLOG.n`; it may not exist), or
    /// None when no file is kept.
    pub fn path(&self, n: u32) -> Option<PathBuf> {
        self.dir.as_deref().map(|dir| file_path(dir, n))
    }

    /// `sp_cycle_errorlog` by session `spid`: says so in the current file, then starts a
    /// new one. The error says why it could not (the log goes on in `ERRORLOG` anyway).
    pub fn cycle(&self, spid: i32) -> Result<(), String> {
        if self.dir.is_none() {
            return Err("the server writes no ERRORLOG file (errorlog = false in its configuration)".to_string());
        }
        let line = format_line(&format!("spid{spid}"), CYCLE_LINE);
        if self.stderr {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        let mut current = self.current.lock();
        self.append(&mut current, &line);
        self.start_new_file(&mut current)
    }

    fn line(&self, source: &str, text: &str) {
        let line = format_line(source, text);
        if self.stderr {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        let mut current = self.current.lock();
        self.append(&mut current, &line);
        if self.rotation.max_bytes > 0 && current.bytes >= self.rotation.max_bytes {
            if let Err(e) = self.start_new_file(&mut current) {
                if !self.rotate_failed.swap(true, Ordering::Relaxed) {
                    eprintln!("tessera: cannot rotate ERRORLOG: {e}");
                }
            }
        }
    }

    /// Appends to the current file; a failed write is reported once and the file dropped.
    fn append(&self, current: &mut Current, line: &str) {
        if let Some(file) = current.file.as_mut() {
            match file.write_all(line.as_bytes()) {
                Ok(()) => current.bytes += line.len() as u64,
                Err(e) => {
                    if !self.file_failed.swap(true, Ordering::Relaxed) {
                        eprintln!("tessera: cannot write ERRORLOG: {e}");
                    }
                    current.file = None;
                }
            }
        }
    }

    /// Opens (appends to) `dir/ERRORLOG` as the current file.
    fn open_file(&self, current: &mut Current, dir: &Path) {
        match OpenOptions::new().create(true).append(true).open(file_path(dir, 0)) {
            Ok(f) => {
                current.bytes = f.metadata().map_or(0, |m| m.len());
                current.file = Some(f);
            }
            Err(e) => {
                if !self.file_failed.swap(true, Ordering::Relaxed) {
                    eprintln!("tessera: cannot open ERRORLOG in '{}': {e}", dir.display());
                }
                current.file = None;
            }
        }
    }

    /// Rotates the files and opens a new `ERRORLOG` beginning with the header. When the
    /// files could not be moved, the old file goes on, counted as empty so that the next
    /// try comes only after another `max_bytes`.
    fn start_new_file(&self, current: &mut Current) -> Result<(), String> {
        let Some(dir) = self.dir.as_deref() else { return Ok(()) };
        current.file = None;
        let rotated = rotate_files(dir, self.rotation.archives);
        // A log cycled by hand gets a new chance to write its file.
        self.file_failed.store(false, Ordering::Relaxed);
        self.open_file(current, dir);
        match rotated {
            Ok(()) => {
                let header: Vec<String> = current.header.iter().map(|text| format_line("Server", text)).collect();
                for line in header {
                    self.append(current, &line);
                }
                self.append(current, &format_line("Server", REINITIALIZED_LINE));
                Ok(())
            }
            Err(e) => {
                current.bytes = 0;
                Err(e)
            }
        }
    }
}

impl tessera_execution::runtime::ErrorLogSink for ErrorLog {
    fn write(&self, spid: i32, text: &str) {
        if spid > 0 {
            self.session(spid, text)
        } else {
            self.server(text)
        }
    }

    fn cycle(&self, spid: i32) -> Result<(), String> {
        ErrorLog::cycle(self, spid)
    }

    fn path(&self, n: u32) -> Option<PathBuf> {
        ErrorLog::path(self, n)
    }
}

/// A [`Sampled`] kind writes at most [`SAMPLE_LINES`] lines per period of this length.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(10);
/// Lines of one [`Sampled`] kind written per [`SAMPLE_PERIOD`] at most.
pub const SAMPLE_LINES: u32 = 10;

/// One kind of line written at most [`SAMPLE_LINES`] times per [`SAMPLE_PERIOD`]; the
/// first line written after others were left out says how many.
#[derive(Debug, Default)]
pub struct Sampled {
    state: Mutex<Period>,
}

#[derive(Debug, Default)]
struct Period {
    started: Option<Instant>,
    written: u32,
    left_out: u64,
}

impl Sampled {
    /// Writes the line `text` makes as a "Logon" line, unless this period's lines are
    /// all written (then it is only counted).
    pub fn line(&self, log: &ErrorLog, text: impl FnOnce() -> String) {
        self.line_at(log, Instant::now(), text);
    }

    fn line_at(&self, log: &ErrorLog, now: Instant, text: impl FnOnce() -> String) {
        let left_out = {
            let mut p = self.state.lock();
            if p.started.is_none_or(|s| now.duration_since(s) >= SAMPLE_PERIOD) {
                p.started = Some(now);
                p.written = 0;
            }
            if p.written == SAMPLE_LINES {
                p.left_out += 1;
                return;
            }
            p.written += 1;
            std::mem::take(&mut p.left_out)
        };
        let text = text();
        if left_out == 0 {
            log.session(0, &text);
        } else {
            log.session(0, &format!("{text} ({left_out} similar messages before it were not logged.)"));
        }
    }
}

/// The kinds of line any client can cause at will.
#[derive(Debug, Default)]
pub struct SampledLines {
    /// Connections refused at accept (too many, or too many not logged in).
    pub connections_refused: Sampled,
    /// Connections that ran out of time to log in.
    pub login_timeouts: Sampled,
    /// Connections closed during their login for a protocol error.
    pub login_errors: Sampled,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_sql_server_style() {
        assert_eq!(timestamp(Duration::from_millis(0)), "1970-01-01 00:00:00.00");
        assert_eq!(timestamp(Duration::from_millis(1_709_210_096_123)), "2024-02-29 12:34:56.12");
    }

    #[test]
    fn writes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = ErrorLog::open(dir.path(), true, false, Rotation::default());
        log.server("Server is listening on [ 127.0.0.1 <ipv4> 1433].");
        log.session(52, "Login succeeded for user 'sa'.");
        let text = std::fs::read_to_string(dir.path().join("ERRORLOG")).unwrap();
        assert!(text.contains(" Server      Server is listening"), "{text}");
        assert!(text.contains(" spid52      Login succeeded"), "{text}");
    }

    #[test]
    fn sampled_lines_are_written_a_few_times_a_period_with_the_count_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let log = ErrorLog::open(dir.path(), true, false, Rotation::default());
        let sampled = Sampled::default();
        let start = Instant::now();
        for i in 0..SAMPLE_LINES + 5 {
            sampled.line_at(&log, start + Duration::from_millis(u64::from(i)), || format!("refused {i}"));
        }
        sampled.line_at(&log, start + SAMPLE_PERIOD, || "refused later".to_string());
        let text = std::fs::read_to_string(dir.path().join("ERRORLOG")).unwrap();
        let lines: Vec<&str> = text.lines().map(|l| l.split("Logon       ").nth(1).unwrap()).collect();
        let mut expected: Vec<String> = (0..SAMPLE_LINES).map(|i| format!("refused {i}")).collect();
        expected.push("refused later (5 similar messages before it were not logged.)".to_string());
        assert_eq!(lines, expected, "{text}");
    }

    fn read(log: &ErrorLog, n: u32) -> String {
        std::fs::read_to_string(log.path(n).unwrap()).unwrap()
    }

    #[test]
    fn each_start_rotates_keeping_the_newest_archives() {
        let dir = tempfile::tempdir().unwrap();
        let rotation = Rotation { archives: 6, max_bytes: 0 };
        // A leftover from a run that kept more archives goes too.
        std::fs::write(dir.path().join("ERRORLOG.40"), "older\n").unwrap();
        for run in 0..9 {
            let log = ErrorLog::open(dir.path(), true, false, rotation);
            log.server(&format!("run {run}"));
        }
        let log = ErrorLog::open(dir.path(), true, false, rotation);
        assert_eq!(read(&log, 0), "", "a new file at each start");
        for n in 1..=6 {
            assert!(read(&log, n).ends_with(&format!("run {}\n", 9 - n)), "ERRORLOG.{n}: {}", read(&log, n));
        }
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(
            names,
            ["ERRORLOG", "ERRORLOG.1", "ERRORLOG.2", "ERRORLOG.3", "ERRORLOG.4", "ERRORLOG.5", "ERRORLOG.6"]
        );
        // The first start has nothing to rotate.
        let fresh = tempfile::tempdir().unwrap();
        let log = ErrorLog::open(fresh.path(), true, false, rotation);
        log.server("first");
        assert!(!log.path(1).unwrap().exists());
    }

    #[test]
    fn the_file_rotates_at_its_size_limit_and_begins_with_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let log = ErrorLog::open(dir.path(), true, false, Rotation { archives: 6, max_bytes: 1000 });
        log.header("tessera 1.0 (version line)");
        for i in 0..40 {
            log.server(&format!("line {i:02} {}", "x".repeat(40)));
        }
        // Each line is 35 + 49 bytes: a file holds what fits past 1000 bytes, then the
        // next begins with the header.
        let archived = read(&log, 1);
        let current = read(&log, 0);
        assert!(archived.len() >= 1000 && archived.len() < 1100, "{}", archived.len());
        let first: Vec<&str> = current.lines().take(2).map(|l| &l[35..]).collect();
        assert_eq!(first, ["tessera 1.0 (version line)", REINITIALIZED_LINE], "{current}");
        assert!(current.contains("line 39"), "{current}");
        assert!(current.len() < 1100);
        let all: String = (1..=6).rev().filter_map(|n| std::fs::read_to_string(log.path(n).unwrap()).ok()).collect();
        assert!((all + &current).contains("line 20"));
    }

    #[test]
    fn cycling_says_so_in_the_old_file_and_starts_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = ErrorLog::open(dir.path(), true, false, Rotation::default());
        log.header("version line");
        log.header("Server process ID is 1.");
        log.session(52, "before");
        log.cycle(53).unwrap();
        log.session(52, "after");
        let old = read(&log, 1);
        assert!(old.ends_with(&format!(" spid53      {CYCLE_LINE}\n")), "{old}");
        assert!(old.contains("before") && !old.contains("after"), "{old}");
        let new = read(&log, 0);
        let texts: Vec<&str> = new.lines().map(|l| &l[35..]).collect();
        assert_eq!(texts, ["version line", "Server process ID is 1.", REINITIALIZED_LINE, "after"]);
        // Without a file there is nothing to cycle.
        let none = ErrorLog::open(dir.path(), false, false, Rotation::default());
        assert!(none.cycle(52).unwrap_err().contains("errorlog = false"));
        assert_eq!(none.path(0), None);
    }

    #[test]
    fn a_rotation_that_cannot_rename_goes_on_in_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = ErrorLog::open(dir.path(), true, false, Rotation { archives: 6, max_bytes: 200 });
        log.server("first");
        // Archives that are directories with something in them can be neither deleted nor
        // replaced (not even by root): no file can move.
        for n in 1..=6 {
            std::fs::create_dir_all(log.path(n).unwrap().join("x")).unwrap();
        }
        let e = log.cycle(52).unwrap_err();
        assert!(e.contains("ERRORLOG.6"), "{e}");
        for i in 0..10 {
            log.server(&format!("line {i} {}", "y".repeat(40)));
        }
        let text = read(&log, 0);
        assert!(text.contains("first") && text.contains(CYCLE_LINE) && text.contains("line 9"), "{text}");
        assert!(!text.contains(REINITIALIZED_LINE), "{text}");
        // Once they are gone the log cycles again.
        for n in 1..=6 {
            std::fs::remove_dir_all(log.path(n).unwrap()).unwrap();
        }
        log.cycle(52).unwrap();
        assert!(read(&log, 1).contains("line 9"));
    }
}
