//! The dateparts of DATEADD, DATEDIFF, DATEPART and DATENAME: their names and
//! abbreviations, and a date's number for each.

use super::super::datetime::{
    civil_from_days, days_from_civil, weekday, Parts, TICKS_PER_HOUR, TICKS_PER_MINUTE, TICKS_PER_SECOND,
};
use super::super::SqlType;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_types::TICKS_PER_DAY;

/// A part of a date for DATEADD, DATEDIFF, DATEPART and DATENAME.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatePart {
    Year,
    Quarter,
    Month,
    DayOfYear,
    Day,
    Week,
    Weekday,
    Hour,
    Minute,
    Second,
    Millisecond,
    Microsecond,
    Nanosecond,
    IsoWeek,
    /// The time zone offset in minutes (DATEPART) or as `+hh:mm` (DATENAME).
    TzOffset,
}

impl DatePart {
    /// SQL Server's canonical name, as in its messages.
    pub fn name(self) -> &'static str {
        match self {
            DatePart::Year => "year",
            DatePart::Quarter => "quarter",
            DatePart::Month => "month",
            DatePart::DayOfYear => "dayofyear",
            DatePart::Day => "day",
            DatePart::Week => "week",
            DatePart::Weekday => "weekday",
            DatePart::Hour => "hour",
            DatePart::Minute => "minute",
            DatePart::Second => "second",
            DatePart::Millisecond => "millisecond",
            DatePart::Microsecond => "microsecond",
            DatePart::Nanosecond => "nanosecond",
            DatePart::IsoWeek => "iso_week",
            DatePart::TzOffset => "tzoffset",
        }
    }

    pub(super) fn is_time(self) -> bool {
        matches!(
            self,
            DatePart::Hour
                | DatePart::Minute
                | DatePart::Second
                | DatePart::Millisecond
                | DatePart::Microsecond
                | DatePart::Nanosecond
        )
    }

    /// 100 ns ticks in one unit of a time part.
    pub(super) fn ticks(self) -> Option<u64> {
        Some(match self {
            DatePart::Hour => TICKS_PER_HOUR,
            DatePart::Minute => TICKS_PER_MINUTE,
            DatePart::Second => TICKS_PER_SECOND,
            DatePart::Millisecond => 10_000,
            DatePart::Microsecond => 10,
            DatePart::Nanosecond => 1, // per tick: see DATEADD and DATEDIFF
            DatePart::Day | DatePart::DayOfYear | DatePart::Weekday => TICKS_PER_DAY,
            DatePart::Week => 7 * TICKS_PER_DAY,
            _ => return None,
        })
    }
}

/// Parses a datepart name or abbreviation (`yy`, `mm`, `dw`, …), case-insensitively;
/// 155 for an unknown one.
pub fn date_part(name: &str) -> SqlResult<DatePart> {
    Ok(match name.trim().to_ascii_lowercase().as_str() {
        "year" | "yy" | "yyyy" => DatePart::Year,
        "quarter" | "qq" | "q" => DatePart::Quarter,
        "month" | "mm" | "m" => DatePart::Month,
        "dayofyear" | "dy" | "y" => DatePart::DayOfYear,
        "day" | "dd" | "d" => DatePart::Day,
        "week" | "wk" | "ww" => DatePart::Week,
        "weekday" | "dw" | "w" => DatePart::Weekday,
        "hour" | "hh" => DatePart::Hour,
        "minute" | "mi" | "n" => DatePart::Minute,
        "second" | "ss" | "s" => DatePart::Second,
        "millisecond" | "ms" => DatePart::Millisecond,
        "microsecond" | "mcs" => DatePart::Microsecond,
        "nanosecond" | "ns" => DatePart::Nanosecond,
        "iso_week" | "isowk" | "isoww" => DatePart::IsoWeek,
        "tzoffset" | "tz" => DatePart::TzOffset,
        _ => return Err(msg::UNRECOGNIZED_OPTION.with(&[&name, &"datepart"])),
    })
}

/// DATEPART's number for a date/time (weeks start on Sunday, us_english).
pub(super) fn datepart_value(part: DatePart, days: i32, ticks: u64, t: &SqlType) -> i64 {
    let (y, m, d) = civil_from_days(days);
    let p = Parts::new(days, ticks);
    let day_of_year = i64::from(days - days_from_civil(y, 1, 1)) + 1;
    match part {
        DatePart::Year => i64::from(y),
        DatePart::Quarter => i64::from((m - 1) / 3 + 1),
        DatePart::Month => i64::from(m),
        DatePart::DayOfYear => day_of_year,
        DatePart::Day => i64::from(d),
        DatePart::Week => {
            let jan1 = i64::from(weekday(days_from_civil(y, 1, 1)));
            (day_of_year - 1 + jan1) / 7 + 1
        }
        DatePart::Weekday => i64::from(weekday(days)) + 1,
        DatePart::Hour => p.hour as i64,
        DatePart::Minute => p.minute as i64,
        DatePart::Second => p.second as i64,
        DatePart::Millisecond if matches!(t, SqlType::DateTime) => ((p.fraction + 5_000) / 10_000).min(999) as i64,
        DatePart::Millisecond => (p.fraction / 10_000) as i64,
        DatePart::Microsecond => (p.fraction / 10) as i64,
        DatePart::Nanosecond => (p.fraction * 100) as i64,
        DatePart::IsoWeek => iso_week(days),
        // the offset is not part of the local date/time: see `Call::tzoffset`
        DatePart::TzOffset => 0,
    }
}

/// ISO 8601 week number: weeks start on Monday, week 1 holds the year's first Thursday.
fn iso_week(days: i32) -> i64 {
    // Monday = 0
    let dow = i64::from((weekday(days) + 6) % 7);
    let thursday = i64::from(days) - dow + 3;
    let (y, _, _) = civil_from_days(thursday as i32);
    (thursday - i64::from(days_from_civil(y, 1, 1))) / 7 + 1
}
