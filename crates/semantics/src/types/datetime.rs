//! Calendar arithmetic, parsing of date/time strings and the `CONVERT` date styles.
//!
//! Every temporal value is handled as days since 0001-01-01 plus 100 ns ticks since
//! midnight, the representation of [`super::Value`].

use tessera_types::TICKS_PER_DAY;

pub(crate) use tessera_types::{DAYS_TO_1900, TICKS_PER_MINUTE, TICKS_PER_SECOND};
pub(crate) const TICKS_PER_HOUR: u64 = 60 * TICKS_PER_MINUTE;

pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(crate) const WEEKDAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

pub(crate) fn is_leap(y: i32) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

pub(crate) fn days_in_month(y: i32, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 0001-01-01 of a proleptic Gregorian date (any year; callers check ranges).
pub fn days_from_civil(y: i32, m: u32, d: u32) -> i32 {
    let y = i64::from(y) - i64::from(m <= 2);
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe - 719_468 + 719_162) as i32
}

/// The date of a day count since 0001-01-01: (year, month, day).
pub fn civil_from_days(days: i32) -> (i32, u32, u32) {
    let z = i64::from(days) - 719_162 + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = (yoe + era * 400 + i64::from(m <= 2)) as i32;
    (y, m, d)
}

/// Day of the week, 0 = Sunday … 6 = Saturday.
pub(crate) fn weekday(days: i32) -> u32 {
    // 0001-01-01 was a Monday
    ((i64::from(days) + 1).rem_euclid(7)) as u32
}

/// A date/time string taken apart. Without a date part the date is 1900-01-01; without a
/// time part the time is midnight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub days: i32,
    pub ticks: u64,
    /// Digits of fractional seconds as written.
    pub fraction_digits: u8,
    pub has_date: bool,
    pub has_time: bool,
}

/// Order of day, month and year in numeric dates (`SET DATEFORMAT`, or a `CONVERT` style).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DateOrder {
    Mdy,
    Dmy,
    Ymd,
}

thread_local! {
    /// The session's `SET DATEFORMAT` order for the statement this thread binds or runs.
    static SESSION_ORDER: std::cell::Cell<DateOrder> = const { std::cell::Cell::new(DateOrder::Mdy) };
}

impl DateOrder {
    /// The input order a `CONVERT` style implies, or the session's `SET DATEFORMAT`
    /// (us_english's mdy by default) when there is no style.
    pub(crate) fn for_style(style: Option<i32>) -> DateOrder {
        match style.map(|s| s % 100) {
            None => SESSION_ORDER.with(|o| o.get()),
            Some(3 | 4 | 5 | 6 | 13 | 31) => DateOrder::Dmy,
            Some(2 | 11 | 12 | 20 | 21 | 23 | 26 | 27) => DateOrder::Ymd,
            _ => DateOrder::Mdy,
        }
    }
}

/// Sets the `SET DATEFORMAT` order string conversions without a style use on this thread
/// (`mdy`, `dmy`, `ymd`, `ydm`, `myd`, `dym`; the last three read as their nearest of the
/// first three). The session sets it before binding or running a statement.
pub fn set_session_date_format(format: &str) {
    let is = |name: &str| format.eq_ignore_ascii_case(name);
    let order = if is("dmy") || is("dym") {
        DateOrder::Dmy
    } else if is("ymd") || is("ydm") {
        DateOrder::Ymd
    } else {
        DateOrder::Mdy
    };
    SESSION_ORDER.with(|o| o.set(order));
}

fn month_number(tok: &str) -> Option<u32> {
    let t = tok.to_ascii_lowercase();
    if t.len() < 3 {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| m.to_ascii_lowercase().starts_with(&t) || (t.len() == 3 && m[..3].eq_ignore_ascii_case(&t)))
        .map(|i| i as u32 + 1)
}

fn number(tok: &str, max_len: usize) -> Option<u32> {
    if tok.is_empty() || tok.len() > max_len || !tok.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    tok.parse().ok()
}

/// A year as written: two digits use SQL Server's 2049 cutoff.
fn year(tok: &str) -> Option<i32> {
    let y = number(tok, 4)? as i32;
    Some(match tok.len() {
        1 | 2 if y < 50 => 2000 + y,
        1 | 2 => 1900 + y,
        _ => y,
    })
}

fn date_days(y: i32, m: u32, d: u32) -> Option<i32> {
    if !(1..=9999).contains(&y) || !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// Parses the date part: `2024-01-31`, `20240131`, `01/31/2024`, `31.01.24`, `Jan 31 2024`,
/// `31 January 2024`, `January 31, 2024`.
fn parse_date(tokens: &[&str], order: DateOrder) -> Option<i32> {
    match tokens {
        [one] => parse_numeric_date(one, order),
        _ => parse_alpha_date(tokens),
    }
}

fn parse_numeric_date(tok: &str, order: DateOrder) -> Option<i32> {
    if tok.bytes().all(|b| b.is_ascii_digit()) {
        return match tok.len() {
            8 => date_days(year(&tok[..4])?, number(&tok[4..6], 2)?, number(&tok[6..], 2)?),
            6 => date_days(year(&tok[..2])?, number(&tok[2..4], 2)?, number(&tok[4..], 2)?),
            4 => date_days(year(tok)?, 1, 1),
            _ => None,
        };
    }
    let sep = tok.chars().find(|c| matches!(c, '-' | '/' | '.'))?;
    let parts: Vec<&str> = tok.split(sep).collect();
    if parts.iter().any(|p| month_number(p).is_some()) {
        return parse_alpha_date(&parts);
    }
    let [a, b, c] = parts.as_slice() else { return None };
    if a.len() == 4 {
        // yyyy-mm-dd always, whatever the date format
        return date_days(year(a)?, number(b, 2)?, number(c, 2)?);
    }
    let (y, m, d) = match order {
        DateOrder::Mdy => (c, a, b),
        DateOrder::Dmy => (c, b, a),
        DateOrder::Ymd => (a, b, c),
    };
    date_days(year(y)?, number(m, 2)?, number(d, 2)?)
}

fn parse_alpha_date(tokens: &[&str]) -> Option<i32> {
    let mi = tokens.iter().position(|t| month_number(t).is_some())?;
    let month = month_number(tokens[mi])?;
    let rest: Vec<&str> = tokens.iter().enumerate().filter(|(i, _)| *i != mi).map(|(_, t)| *t).collect();
    let (d, y) = match rest.as_slice() {
        [y] if y.len() == 4 => ("1", *y),
        [a, b] if a.len() == 4 => (*b, *a),
        [a, b] => (*a, *b),
        _ => return None,
    };
    date_days(year(y)?, month, number(d, 2)?)
}

/// Time of day from `hh:mm[:ss[.fffffff]]` or `hh:mm:ss:fff` (milliseconds), with an
/// optional AM/PM meridiem: (ticks, fraction digits).
fn parse_time(tok: &str, meridiem: Option<bool>) -> Option<(u64, u8)> {
    let parts: Vec<&str> = tok.split(':').collect();
    if parts.len() > 4 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let mut h = u64::from(number(parts[0], 2)?);
    let mi = match parts.get(1) {
        Some(p) => u64::from(number(p, 2)?),
        None => 0,
    };
    let (s, frac, digits) = match parts.get(2) {
        None => (0, 0, 0),
        Some(p) => {
            let (sec, frac) = p.split_once('.').unwrap_or((p, ""));
            if frac.len() > 7 || !frac.bytes().all(|b| b.is_ascii_digit()) || (p.contains('.') && parts.len() > 3) {
                return None;
            }
            let ticks =
                if frac.is_empty() { 0 } else { u64::from(number(frac, 7)?) * 10u64.pow(7 - frac.len() as u32) };
            (u64::from(number(sec, 2)?), ticks, frac.len() as u8)
        }
    };
    let (frac, digits) = match parts.get(3) {
        Some(ms) => (u64::from(number(ms, 3)?) * 10_000, 3),
        None => (frac, digits),
    };
    match meridiem {
        Some(pm) if (1..=12).contains(&h) || h == 0 => h = h % 12 + if pm { 12 } else { 0 },
        Some(_) => return None,
        None => {}
    }
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some((h * TICKS_PER_HOUR + mi * TICKS_PER_MINUTE + s * TICKS_PER_SECOND + frac, digits))
}

/// Splits an `AM`/`PM` suffix off a token: (rest, Some(pm)).
fn meridiem_suffix(tok: &str) -> (&str, Option<bool>) {
    let lower = tok.to_ascii_lowercase();
    for (suffix, pm) in [("am", false), ("pm", true)] {
        if lower.ends_with(suffix) {
            return (&tok[..tok.len() - 2], Some(pm));
        }
    }
    (tok, None)
}

/// Parses a date/time string as SQL Server's conversions accept it; `None` when it is not
/// a valid date/time (error 241).
pub(crate) fn parse(s: &str, order: DateOrder) -> Option<Parsed> {
    let s = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let mut out = Parsed { days: DAYS_TO_1900, ticks: 0, fraction_digits: 0, has_date: false, has_time: false };
    if s.is_empty() {
        return Some(out);
    }
    // ISO 8601: yyyy-mm-ddThh:mm:ss[.fffffff][Z|±hh:mm]
    let iso = s.len() > 10 && s.as_bytes()[10].eq_ignore_ascii_case(&b'T') && s.as_bytes()[4] == b'-';
    let normalized = if iso { format!("{} {}", &s[..10], strip_zone(&s[11..])) } else { s.replace(',', " ") };
    let mut date_tokens = Vec::new();
    let mut time_token = None;
    let mut meridiem = None;
    for tok in normalized.split_ascii_whitespace() {
        let (body, m) = meridiem_suffix(tok);
        if m.is_some()
            && meridiem.is_none()
            && (body.is_empty() || body.contains(':') || body.bytes().all(|b| b.is_ascii_digit()))
        {
            meridiem = m;
            if !body.is_empty() {
                time_token = Some(body);
            }
        } else if tok.contains(':') && time_token.is_none() {
            time_token = Some(tok);
        } else {
            date_tokens.push(tok);
        }
    }
    if !date_tokens.is_empty() {
        out.days = parse_date(&date_tokens, order)?;
        out.has_date = true;
    }
    match time_token {
        Some(t) => {
            let (ticks, digits) = parse_time(t, meridiem)?;
            out.ticks = ticks;
            out.fraction_digits = digits;
            out.has_time = true;
        }
        None if meridiem.is_some() => return None,
        None => {}
    }
    Some(out)
}

/// Parses a date/time string that may end in a time zone offset (`+05:30`, `-08:00`,
/// after a space or right after the time, or ISO 8601's `Z`), as the conversions to
/// datetimeoffset, datetime2, date and time accept it: the local date/time and the offset
/// in minutes (`None` without one). `None` when it is not a valid date/time or the offset
/// is outside -14:00..=+14:00 (error 241).
pub(crate) fn parse_with_offset(s: &str, order: DateOrder) -> Option<(Parsed, Option<i16>)> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    if let Some(rest) = t.strip_suffix(['Z', 'z']) {
        if rest.ends_with(|c: char| c.is_ascii_digit()) {
            return Some((parse(rest, order)?, Some(0)));
        }
    }
    let b = t.as_bytes();
    let n = b.len();
    let zone = n >= 6
        && matches!(b[n - 6], b'+' | b'-')
        && b[n - 3] == b':'
        && [n - 5, n - 4, n - 2, n - 1].iter().all(|&i| b[i].is_ascii_digit())
        && (n == 6 || b[n - 7].is_ascii_digit() || b[n - 7].is_ascii_whitespace());
    if !zone {
        return Some((parse(t, order)?, None));
    }
    let hours = i16::from(b[n - 5] - b'0') * 10 + i16::from(b[n - 4] - b'0');
    let minutes = i16::from(b[n - 2] - b'0') * 10 + i16::from(b[n - 1] - b'0');
    let total = hours * 60 + minutes;
    if minutes > 59 || total > 840 {
        return None;
    }
    let offset = if b[n - 6] == b'-' { -total } else { total };
    Some((parse(&t[..n - 6], order)?, Some(offset)))
}

/// Moves a (days, ticks) date/time by a number of minutes (UTC ↔ local time).
pub(crate) fn shift_minutes(days: i32, ticks: u64, minutes: i32) -> (i32, u64) {
    let total = i128::from(days) * i128::from(TICKS_PER_DAY)
        + i128::from(ticks)
        + i128::from(minutes) * i128::from(TICKS_PER_MINUTE);
    let per_day = i128::from(TICKS_PER_DAY);
    (total.div_euclid(per_day) as i32, total.rem_euclid(per_day) as u64)
}

/// A time zone offset as SQL Server writes it: `+05:30`, `-08:00`, `+00:00`.
pub(crate) fn format_offset(minutes: i16) -> String {
    let sign = if minutes < 0 { '-' } else { '+' };
    let m = minutes.unsigned_abs();
    format!("{sign}{:02}:{:02}", m / 60, m % 60)
}

fn strip_zone(t: &str) -> &str {
    if let Some(rest) = t.strip_suffix(['Z', 'z']) {
        return rest;
    }
    match t.rfind(['+', '-']) {
        Some(i) if t[i..].len() == 6 && t.as_bytes()[i + 3] == b':' => &t[..i],
        _ => t,
    }
}

/// The pieces of a date and time for formatting.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Parts {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
    /// 100 ns ticks within the second.
    pub fraction: u64,
}

impl Parts {
    pub(crate) fn new(days: i32, ticks: u64) -> Parts {
        let (year, month, day) = civil_from_days(days);
        let ticks = ticks.min(TICKS_PER_DAY - 1);
        Parts {
            year,
            month,
            day,
            hour: ticks / TICKS_PER_HOUR,
            minute: ticks / TICKS_PER_MINUTE % 60,
            second: ticks / TICKS_PER_SECOND % 60,
            fraction: ticks % TICKS_PER_SECOND,
        }
    }

    /// `digits` of fractional seconds, rounded (datetime's 1/300 s shows as .003, .007).
    fn fraction_text(&self, digits: u8) -> String {
        if digits == 0 {
            return String::new();
        }
        let unit = 10u64.pow(7 - u32::from(digits.min(7)));
        let v = ((self.fraction + unit / 2) / unit).min(10u64.pow(u32::from(digits)) - 1);
        format!("{v:0width$}", width = usize::from(digits))
    }

    fn hour12(&self) -> (u64, &'static str) {
        let h = match self.hour % 12 {
            0 => 12,
            h => h,
        };
        (h, if self.hour < 12 { "AM" } else { "PM" })
    }

    fn mon(&self) -> &'static str {
        &MONTHS[(self.month - 1) as usize][..3]
    }
}

/// Formats a date/time with a `CONVERT` style; `fraction` is the number of fractional
/// second digits of the type (datetime: 3, shown after `:` in styles 9, 13, 14).
/// `None` for a style SQL Server does not have.
pub(crate) fn format_style(days: i32, ticks: u64, fraction: u8, datetime_ms: bool, style: i32) -> Option<String> {
    let p = Parts::new(days, ticks);
    let century = style >= 100 || matches!(style, 0 | 9 | 13 | 20 | 21 | 23 | 25);
    let y = if century { format!("{:04}", p.year) } else { format!("{:02}", p.year % 100) };
    let (mm, dd) = (format!("{:02}", p.month), format!("{:02}", p.day));
    let hms = format!("{:02}:{:02}:{:02}", p.hour, p.minute, p.second);
    let (h12, ampm) = p.hour12();
    let frac = p.fraction_text(fraction);
    let dot_frac = if frac.is_empty() { String::new() } else { format!(".{frac}") };
    let ms = if datetime_ms { format!(":{frac}") } else { dot_frac.clone() };
    Some(match style {
        0 | 100 => format!("{} {:>2} {} {:>2}:{:02}{}", p.mon(), p.day, y, h12, p.minute, ampm),
        1 | 101 => format!("{mm}/{dd}/{y}"),
        2 | 102 => format!("{y}.{mm}.{dd}"),
        3 | 103 => format!("{dd}/{mm}/{y}"),
        4 | 104 => format!("{dd}.{mm}.{y}"),
        5 | 105 => format!("{dd}-{mm}-{y}"),
        6 | 106 => format!("{dd} {} {y}", p.mon()),
        7 | 107 => format!("{} {dd}, {y}", p.mon()),
        8 | 24 | 108 => hms,
        9 | 109 => format!("{} {:>2} {} {:>2}:{:02}:{:02}{}{}", p.mon(), p.day, y, h12, p.minute, p.second, ms, ampm),
        10 | 110 => format!("{mm}-{dd}-{y}"),
        11 | 111 => format!("{y}/{mm}/{dd}"),
        12 | 112 => format!("{y}{mm}{dd}"),
        13 | 113 => format!("{dd} {} {y} {hms}{ms}", p.mon()),
        14 | 114 => format!("{hms}{ms}"),
        20 | 120 => format!("{y}-{mm}-{dd} {hms}"),
        21 | 25 | 121 => format!("{y}-{mm}-{dd} {hms}{dot_frac}"),
        22 => format!("{mm}/{dd}/{y} {:>2}:{:02}:{:02} {ampm}", h12, p.minute, p.second),
        23 => format!("{y}-{mm}-{dd}"),
        // Hijri (see `hijri`): a day before its calendar began has no date there.
        130 | 131 => {
            let date = super::hijri::format_date(days, style)?;
            format!("{date} {:>2}:{:02}:{:02}{}{}", h12, p.minute, p.second, ms, ampm)
        }
        126 | 127 => {
            let frac = if p.fraction == 0 { String::new() } else { dot_frac };
            let zone = if style == 127 { "Z" } else { "" };
            format!("{y}-{mm}-{dd}T{hms}{frac}{zone}")
        }
        _ => return None,
    })
}

/// `yyyy-mm-dd`.
pub(crate) fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `hh:mm:ss[.fffffff]` with `digits` fractional digits.
pub(crate) fn format_time(ticks: u64, digits: u8) -> String {
    let p = Parts::new(0, ticks);
    let frac = p.fraction_text(digits);
    let dot = if frac.is_empty() { "" } else { "." };
    format!("{:02}:{:02}:{:02}{dot}{frac}", p.hour, p.minute, p.second)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ymd(y: i32, m: u32, d: u32) -> i32 {
        days_from_civil(y, m, d)
    }

    #[test]
    fn calendar() {
        assert_eq!(ymd(1, 1, 1), 0);
        assert_eq!(ymd(1900, 1, 1), DAYS_TO_1900);
        assert_eq!(ymd(9999, 12, 31), tessera_types::MAX_DATE_DAYS);
        assert_eq!(ymd(1753, 1, 1) - DAYS_TO_1900, tessera_types::DATETIME_MIN_DAYS);
        for days in [0, 1, 59, 60, 365, 693_595, 738_915, 3_652_058] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(ymd(y, m, d), days);
        }
        assert_eq!(civil_from_days(ymd(2024, 2, 29)), (2024, 2, 29));
        // 2024-01-31 was a Wednesday
        assert_eq!(WEEKDAYS[weekday(ymd(2024, 1, 31)) as usize], "Wednesday");
        assert_eq!(weekday(DAYS_TO_1900), 1);
    }

    fn p(s: &str) -> Option<(i32, u32, u32, u64)> {
        let r = parse(s, DateOrder::Mdy)?;
        let (y, m, d) = civil_from_days(r.days);
        Some((y, m, d, r.ticks))
    }

    const H: u64 = TICKS_PER_HOUR;
    const M: u64 = TICKS_PER_MINUTE;

    #[test]
    fn parses_common_formats() {
        assert_eq!(p("2024-01-31"), Some((2024, 1, 31, 0)));
        assert_eq!(p("20240131"), Some((2024, 1, 31, 0)));
        assert_eq!(p("2024-01-31 13:45:00.123"), Some((2024, 1, 31, 13 * H + 45 * M + 1_230_000)));
        assert_eq!(p("2024-01-31T13:45:00"), Some((2024, 1, 31, 13 * H + 45 * M)));
        assert_eq!(p("2024-01-31T13:45:00Z"), Some((2024, 1, 31, 13 * H + 45 * M)));
        assert_eq!(p("Jan 31 2024"), Some((2024, 1, 31, 0)));
        assert_eq!(p("Jan 31 2024  1:45PM"), Some((2024, 1, 31, 13 * H + 45 * M)));
        assert_eq!(p("January 31, 2024"), Some((2024, 1, 31, 0)));
        assert_eq!(p("31 Jan 2024"), Some((2024, 1, 31, 0)));
        assert_eq!(p("01/31/2024"), Some((2024, 1, 31, 0)));
        assert_eq!(p("1/31/24"), Some((2024, 1, 31, 0)));
        assert_eq!(p("1/31/51"), Some((1951, 1, 31, 0)));
        assert_eq!(p("13:45"), Some((1900, 1, 1, 13 * H + 45 * M)));
        assert_eq!(p("12:00 AM"), Some((1900, 1, 1, 0)));
        assert_eq!(p("10:00:00:500"), Some((1900, 1, 1, 10 * H + 5_000_000)));
        assert_eq!(p(""), Some((1900, 1, 1, 0)));
        assert_eq!(parse("31/01/2024", DateOrder::Dmy).map(|r| r.days), Some(ymd(2024, 1, 31)));
        for bad in ["2024-02-30", "abc", "2024-13-01", "25:00", "1/2", "2024-01-31 10:00 XM", "12345"] {
            assert_eq!(p(bad), None, "{bad}");
        }
        assert_eq!(parse("13:45:00.1234567", DateOrder::Mdy).unwrap().fraction_digits, 7);
    }

    #[test]
    fn offsets() {
        let o = |s: &str| parse_with_offset(s, DateOrder::Mdy).map(|(p, off)| (p.days, p.ticks, off));
        let day = ymd(2025, 3, 4);
        assert_eq!(o("2025-03-04 10:00 +05:30"), Some((day, 10 * H, Some(330))));
        assert_eq!(o("2025-03-04T10:00:00-08:00"), Some((day, 10 * H, Some(-480))));
        assert_eq!(o("2025-03-04 10:00:00.5+14:00"), Some((day, 10 * H + 5_000_000, Some(840))));
        assert_eq!(o("2025-03-04T10:00:00Z"), Some((day, 10 * H, Some(0))));
        assert_eq!(o("2025-03-04 10:00"), Some((day, 10 * H, None)));
        assert_eq!(o("2025-03-04"), Some((day, 0, None)));
        assert_eq!(o("2025-03-04 10:00 +14:01"), None);
        assert_eq!(o("2025-03-04 10:00 +05:60"), None);
        assert_eq!(o("2025-03-04 10:00 +5:30"), None);
        assert_eq!(format_offset(330), "+05:30");
        assert_eq!(format_offset(-480), "-08:00");
        assert_eq!(format_offset(0), "+00:00");
        assert_eq!(shift_minutes(day, 0, -1), (day - 1, TICKS_PER_DAY - M));
        assert_eq!(shift_minutes(day, 23 * H, 90), (day + 1, 30 * M));
    }

    #[test]
    fn styles() {
        let d = ymd(2024, 1, 31);
        let t = 13 * H + 45 * M + 7 * TICKS_PER_SECOND + 1_230_000;
        let f = |s| format_style(d, t, 3, true, s).unwrap();
        assert_eq!(f(0), "Jan 31 2024  1:45PM");
        assert_eq!(f(100), "Jan 31 2024  1:45PM");
        assert_eq!(f(1), "01/31/24");
        assert_eq!(f(101), "01/31/2024");
        assert_eq!(f(102), "2024.01.31");
        assert_eq!(f(103), "31/01/2024");
        assert_eq!(f(104), "31.01.2024");
        assert_eq!(f(105), "31-01-2024");
        assert_eq!(f(106), "31 Jan 2024");
        assert_eq!(f(107), "Jan 31, 2024");
        assert_eq!(f(108), "13:45:07");
        assert_eq!(f(109), "Jan 31 2024  1:45:07:123PM");
        assert_eq!(f(110), "01-31-2024");
        assert_eq!(f(111), "2024/01/31");
        assert_eq!(f(112), "20240131");
        assert_eq!(f(12), "240131");
        assert_eq!(f(113), "31 Jan 2024 13:45:07:123");
        assert_eq!(f(114), "13:45:07:123");
        assert_eq!(f(120), "2024-01-31 13:45:07");
        assert_eq!(f(121), "2024-01-31 13:45:07.123");
        assert_eq!(f(126), "2024-01-31T13:45:07.123");
        assert_eq!(f(127), "2024-01-31T13:45:07.123Z");
        assert_eq!(format_style(d, 13 * H, 3, true, 126).unwrap(), "2024-01-31T13:00:00");
        assert!(format_style(d, t, 3, true, 99).is_none());
        assert_eq!(format_time(t, 7), "13:45:07.1230000");
        assert_eq!(format_time(t, 0), "13:45:07");
        assert_eq!(format_date(d), "2024-01-31");
    }
}
