//! The server's log: SQL Server style lines (`2024-05-06 10:11:12.34 Server      text`,
//! `spid52` in place of `Server` for a session's lines), UTC timestamps, written to stderr
//! and appended to `ERRORLOG` in the data directory.
//!
//! Invariants:
//! - Logging never fails a caller; a write error on the file is reported once on stderr
//!   and the file is then left alone.
//! - A line that any client can cause at will, without logging in (a refused or timed-out
//!   connection, a malformed login), goes through a [`Sampled`]: at most [`SAMPLE_LINES`]
//!   such lines per [`SAMPLE_PERIOD`] and kind, so a flood of them cannot fill the disk
//!   the log is on.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

pub struct ErrorLog {
    file: Mutex<Option<File>>,
    stderr: bool,
    file_failed: AtomicBool,
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

impl ErrorLog {
    /// Opens (appends to) `dir/ERRORLOG` when `file` is set.
    pub fn open(dir: &Path, file: bool, stderr: bool) -> ErrorLog {
        let f = if file {
            match OpenOptions::new().create(true).append(true).open(dir.join("ERRORLOG")) {
                Ok(f) => Some(f),
                Err(e) => {
                    eprintln!("tessera: cannot open ERRORLOG in '{}': {e}", dir.display());
                    None
                }
            }
        } else {
            None
        };
        ErrorLog { file: Mutex::new(f), stderr, file_failed: AtomicBool::new(false) }
    }

    /// A log that writes nowhere (tests).
    pub fn disabled() -> ErrorLog {
        ErrorLog { file: Mutex::new(None), stderr: false, file_failed: AtomicBool::new(false) }
    }

    /// A server-wide line.
    pub fn server(&self, text: &str) {
        self.line("Server", text);
    }

    /// A line about one session (`spid` 0 before a session exists: "Logon").
    pub fn session(&self, spid: i32, text: &str) {
        if spid > 0 {
            self.line(&format!("spid{spid}"), text);
        } else {
            self.line("Logon", text);
        }
    }

    fn line(&self, source: &str, text: &str) {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let line = format!("{} {source:<12}{text}\n", timestamp(now));
        if self.stderr {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        let mut f = self.file.lock();
        if let Some(file) = f.as_mut() {
            if let Err(e) = file.write_all(line.as_bytes()) {
                if !self.file_failed.swap(true, Ordering::Relaxed) {
                    eprintln!("tessera: cannot write ERRORLOG: {e}");
                }
                *f = None;
            }
        }
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
        let log = ErrorLog::open(dir.path(), true, false);
        log.server("Server is listening on [ 127.0.0.1 <ipv4> 1433].");
        log.session(52, "Login succeeded for user 'sa'.");
        let text = std::fs::read_to_string(dir.path().join("ERRORLOG")).unwrap();
        assert!(text.contains(" Server      Server is listening"), "{text}");
        assert!(text.contains(" spid52      Login succeeded"), "{text}");
    }

    #[test]
    fn sampled_lines_are_written_a_few_times_a_period_with_the_count_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let log = ErrorLog::open(dir.path(), true, false);
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
}
