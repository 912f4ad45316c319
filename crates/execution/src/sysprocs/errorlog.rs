//! The error log's procedures, over the server's ERRORLOG (`runtime::ErrorLogSink`):
//! `sp_cycle_errorlog` (sysadmin), and `sp_readerrorlog` / `xp_readerrorlog` (securityadmin
//! or sysadmin), which read the current log or an archive back as rows.
//!
//! A log's lines are `YYYY-MM-DD hh:mm:ss.cc source     text` (UTC; the source padded to
//! 11 characters and a space, as tessera-server's `errorlog` writes them); a line that
//! does not begin with a timestamp continues the entry before it, and is part of that
//! entry's Text after a newline (SQL Server's version block is one row too). Each entry is
//! one row: LogDate (in the session's time, as GETDATE() gives it), ProcessInfo (`Server`,
//! `Logon`, `spid52`), Text. The search strings are matched, case-insensitively, against
//! Text.

use std::io::{BufRead, BufReader, ErrorKind};

use tessera_errors::{msg, SqlError, SqlResult};
use tessera_semantics::output::{Command, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};

use super::{arg, col, int_arg, text_arg, too_many, NamedArg};
use crate::runtime::ExecCtx;

/// SQL Server's text for a log that does not exist (Windows error 2).
const NOT_FOUND: &str = "The system cannot find the file specified.";

/// `datetime` ticks (100 ns) in a day.
const TICKS_PER_DAY: i64 = 86_400 * 10_000_000;

/// sp_cycle_errorlog: the current ERRORLOG ends with "Attempting to cycle error log." and
/// becomes ERRORLOG.1 (each archive moving one up, the oldest past `errorlog_files`
/// deleted); the new ERRORLOG begins with the server's header lines.
pub fn cycle(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    too_many("sp_cycle_errorlog", args, 0)?;
    cycle_log(ctx)?;
    // The procedure runs DBCC ERRORLOG, whose message it passes on.
    sink.message(&msg::DBCC_COMPLETED.err());
    Ok(0)
}

/// DBCC ERRORLOG (what sp_cycle_errorlog runs): sysadmin only.
pub fn cycle_log(ctx: &ExecCtx) -> SqlResult<()> {
    if !ctx.shared.session_in_role(ctx.session, "sysadmin") {
        return Err(msg::ADMIN_ACTION_DENIED.err());
    }
    let Some(log) = ctx.shared.errorlog() else {
        return Err(
            msg::ERRORLOG_NOT_CYCLED.with(&[&"tessera runs embedded here, not as a server, and keeps no ERRORLOG"])
        );
    };
    log.cycle(ctx.session.spid).map_err(|reason| msg::ERRORLOG_NOT_CYCLED.with(&[&reason]))
}

/// Which procedure reads the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// sp_readerrorlog @p1 log, @p2 type, @p3, @p4 search strings (only with @p2, since
    /// SQL Server's passes on @p1 alone when @p2 is NULL).
    Procedure,
    /// xp_readerrorlog p1 log, p2 type, p3, p4 search strings, p5 start, p6 end, p7 N'asc'
    /// or N'desc'.
    Extended,
}

/// What to read and which entries to keep.
struct Request {
    log: i64,
    /// Lower-cased; an entry's Text must contain each.
    search: Vec<String>,
    /// `datetime` (days, ticks) bounds, both inclusive.
    from: Option<(i32, u64)>,
    to: Option<(i32, u64)>,
    descending: bool,
}

/// sp_readerrorlog and xp_readerrorlog: the entries of log `p1` (0: the current ERRORLOG,
/// n: ERRORLOG.n) as rows.
pub fn read(reader: Reader, args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let request = match reader {
        Reader::Procedure => {
            too_many("sp_readerrorlog", args, 4)?;
            if !may_read(ctx) {
                return Err(msg::ONLY_ROLE_MEMBERS.with(&[&"securityadmin"]));
            }
            let kind = int_arg(args, 1, "@p2")?;
            Request {
                log: int_arg(args, 0, "@p1")?.unwrap_or(0),
                search: if kind.is_some() { search_strings(args) } else { Vec::new() },
                from: None,
                to: None,
                descending: false,
            }
        }
        Reader::Extended => {
            too_many("xp_readerrorlog", args, 7)?;
            if !may_read(ctx) {
                return Err(msg::OBJECT_PERMISSION_DENIED.with(&[
                    &"EXECUTE",
                    &"xp_readerrorlog",
                    &"mssqlsystemresource",
                    &"sys",
                ]));
            }
            let descending = match text_arg(args, 6, "@p7") {
                None => false,
                Some(order) if order.trim().eq_ignore_ascii_case("asc") => false,
                Some(order) if order.trim().eq_ignore_ascii_case("desc") => true,
                Some(_) => return Err(msg::INVALID_PROCEDURE_PARAMETER.with(&[&"xp_readerrorlog"])),
            };
            Request {
                log: int_arg(args, 0, "@p1")?.unwrap_or(0),
                search: search_strings(args),
                from: datetime_arg(args, 4, "@p5")?,
                to: datetime_arg(args, 5, "@p6")?,
                descending,
            }
        }
    };
    match int_arg(args, 1, "@p2")? {
        None | Some(1) => {}
        Some(2) => {
            return Err(read_failed(
                2,
                &format!("{NOT_FOUND} tessera has no SQL Server Agent, so it keeps no SQL Server Agent log"),
            ))
        }
        Some(_) => return Err(msg::INVALID_PROCEDURE_PARAMETER.with(&[&"xp_readerrorlog"])),
    }
    let Some(log) = ctx.shared.errorlog() else {
        return Err(read_failed(
            2,
            &format!("{NOT_FOUND} tessera runs embedded here, not as a server, and keeps no ERRORLOG"),
        ));
    };
    let path = u32::try_from(request.log).ok().and_then(|n| log.path(n));
    let Some(path) = path else {
        let why = if log.path(0).is_none() {
            " The server writes no ERRORLOG file (errorlog = false in its configuration)."
        } else {
            ""
        };
        return Err(read_failed(2, &format!("{NOT_FOUND}{why}")));
    };
    let file = std::fs::File::open(&path).map_err(|e| io_failed(&e))?;
    send(&request, BufReader::new(file), ctx, sink)
}

/// securityadmin's members (and sysadmin's) may read the log, as SQL Server's procedures
/// require.
fn may_read(ctx: &ExecCtx) -> bool {
    ctx.shared.session_in_role(ctx.session, "securityadmin") || ctx.shared.session_in_role(ctx.session, "sysadmin")
}

fn read_failed(code: i32, text: &str) -> SqlError {
    msg::READ_ERRORLOG_FAILED.with(&[&code, &text])
}

/// A file error as SQL Server reports it: the Windows error code and text where there is
/// one, else the system's own.
fn io_failed(e: &std::io::Error) -> SqlError {
    match e.kind() {
        ErrorKind::NotFound => read_failed(2, NOT_FOUND),
        ErrorKind::PermissionDenied => read_failed(5, "Access is denied."),
        _ => read_failed(e.raw_os_error().unwrap_or(0), &e.to_string()),
    }
}

fn search_strings(args: &[NamedArg]) -> Vec<String> {
    [(2, "@p3"), (3, "@p4")].iter().filter_map(|&(i, name)| text_arg(args, i, name)).map(|s| s.to_lowercase()).collect()
}

fn datetime_arg(args: &[NamedArg], position: usize, name: &str) -> SqlResult<Option<(i32, u64)>> {
    let Some((v, t)) = arg(args, position, name) else { return Ok(None) };
    match types::cast(v, t, &SqlType::DateTime, None)? {
        Value::DateTime { days, ticks } => Ok(Some((days, ticks))),
        _ => Ok(None),
    }
}

/// One entry of the log: a timestamped line and the lines that continue it.
struct Entry {
    /// `datetime` (days, ticks) in the session's time; None for lines before the first
    /// timestamp.
    date: Option<(i32, u64)>,
    process: String,
    text: String,
}

impl Entry {
    fn row(self) -> Vec<Value> {
        let date = self.date.map_or(Value::Null, |(days, ticks)| Value::DateTime { days, ticks });
        vec![date, Value::str(&self.process), Value::str(&self.text)]
    }
}

/// Reads the log's entries and sends those `request` keeps, oldest first (newest first
/// with N'desc', for which they are gathered).
fn send(request: &Request, mut file: impl BufRead, ctx: &ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let offset = i64::from(ctx.session.functions.utc_offset_minutes) * 60 * 10_000_000;
    sink.columns(&[
        col("LogDate", SqlType::DateTime, true),
        col("ProcessInfo", SqlType::NVarChar(50), true),
        col("Text", SqlType::NVarChar(tessera_types::MAX), true),
    ]);
    let mut sent = 0u64;
    let mut newest_first = Vec::new();
    let mut keep = |entry: Entry, sink: &mut dyn ResultSink| {
        if !request.keeps(&entry) {
            return;
        }
        if request.descending {
            newest_first.push(entry);
        } else {
            sink.row(&entry.row());
            sent += 1;
        }
    };
    let mut pending: Option<Entry> = None;
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        if file.read_until(b'\n', &mut buffer).map_err(|e| io_failed(&e))? == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&buffer);
        let line = line.trim_end_matches(['\n', '\r']);
        match parse_line(line, offset) {
            Some(entry) => {
                if let Some(done) = pending.replace(entry) {
                    keep(done, sink);
                }
            }
            None => match pending.as_mut() {
                Some(entry) => {
                    entry.text.push('\n');
                    entry.text.push_str(line);
                }
                None => pending = Some(Entry { date: None, process: String::new(), text: line.to_string() }),
            },
        }
    }
    if let Some(done) = pending {
        keep(done, sink);
    }
    for entry in newest_first.into_iter().rev() {
        sink.row(&entry.row());
        sent += 1;
    }
    sink.done((!ctx.session.options.nocount).then_some(sent), Command::Select);
    Ok(0)
}

impl Request {
    fn keeps(&self, entry: &Entry) -> bool {
        let in_range = match entry.date {
            Some(date) => self.from.is_none_or(|from| date >= from) && self.to.is_none_or(|to| date <= to),
            None => self.from.is_none() && self.to.is_none(),
        };
        if !in_range {
            return false;
        }
        if self.search.is_empty() {
            return true;
        }
        let text = entry.text.to_lowercase();
        self.search.iter().all(|s| text.contains(s.as_str()))
    }
}

/// A line that begins an entry (`2024-05-06 10:11:12.34 spid52      text`), its date moved
/// by `offset` ticks and rounded to `datetime`'s 1/300 s; None for a line that does not.
fn parse_line(line: &str, offset: i64) -> Option<Entry> {
    let b = line.as_bytes();
    if b.len() < 23 || b[22] != b' ' {
        return None;
    }
    let shape_ok = b[..22].iter().enumerate().all(|(i, &c)| match i {
        4 | 7 => c == b'-',
        10 => c == b' ',
        13 | 16 => c == b':',
        19 => c == b'.',
        _ => c.is_ascii_digit(),
    });
    if !shape_ok {
        return None;
    }
    let num = |from: usize, to: usize| line[from..to].parse::<u32>().ok();
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, s, cs) = (num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 22)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let days = i64::from(types::days_from_civil(y as i32, mo, d));
    let ticks = (i64::from(h * 3600 + mi * 60 + s) * 100 + i64::from(cs)) * 100_000;
    let total = days * TICKS_PER_DAY + ticks + offset;
    let exact =
        Value::DateTime { days: total.div_euclid(TICKS_PER_DAY) as i32, ticks: total.rem_euclid(TICKS_PER_DAY) as u64 };
    let date = match types::cast(&exact, &SqlType::DateTime2 { scale: 2 }, &SqlType::DateTime, None).ok()? {
        Value::DateTime { days, ticks } => (days, ticks),
        _ => return None,
    };
    let rest = &line[23..];
    let process = rest.split(' ').next().unwrap_or("");
    // The source is padded to 11 characters and followed by a space.
    let text = rest.get(process.len().max(11) + 1..).unwrap_or_else(|| rest[process.len()..].trim_start());
    Some(Entry { date: Some(date), process: process.chars().take(50).collect(), text: text.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_sql_server_writes_them() {
        let e = parse_line("2024-02-29 12:34:56.12 spid52      Login succeeded for user 'sa'.", 0).unwrap();
        assert_eq!((e.process.as_str(), e.text.as_str()), ("spid52", "Login succeeded for user 'sa'."));
        let (days, ticks) = e.date.unwrap();
        assert_eq!(days, types::days_from_civil(2024, 2, 29));
        // 12:34:56.12 rounds to datetime's 12:34:56.120 (a multiple of 1/300 s).
        assert_eq!(ticks, (45_296 * 1000 + 120) * 10_000);
        let e = parse_line("2024-02-29 23:59:59.99 Server      The text  keeps  its spaces ", 60 * 60 * 10_000_000)
            .unwrap();
        assert_eq!(e.text, "The text  keeps  its spaces ");
        assert_eq!(e.date.unwrap().0, types::days_from_civil(2024, 3, 1), "an hour east is the next day");
        let long = parse_line("2024-02-29 00:00:00.00 spid123456789 text", 0).unwrap();
        assert_eq!((long.process.as_str(), long.text.as_str()), ("spid123456789", "text"));
        for other in ["\tcontinued", "", "2024-02-29 00:00:00.00", "2024-13-01 00:00:00.00 Server      x", "not a date"]
        {
            assert!(parse_line(other, 0).is_none(), "{other}");
        }
    }
}
