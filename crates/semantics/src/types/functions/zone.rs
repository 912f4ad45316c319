//! `value AT TIME ZONE zone`: a datetimeoffset's instant shown in a Windows time zone, or
//! a datetime, smalldatetime or datetime2 taken as a local time of that zone. Zone names
//! are Windows' (`Pacific Standard Time`, without regard to case), mapped to the tz
//! database by CLDR's table (`windows-timezones`) and its rules from `chrono-tz`. A
//! local time in a spring-forward gap moves forward by the gap, taking the offset after
//! it; one in a fall-back overlap takes the offset before the change (daylight time), as
//! SQL Server documents.

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Timelike};
use chrono_tz::Tz;
use strum::IntoEnumIterator;
use windows_timezones::WindowsTimezone;

use super::super::convert::cast;
use super::{SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_types::TICKS_PER_DAY;

/// The zone a Windows zone name (any case) names.
fn zone(name: &str) -> Option<Tz> {
    static ZONES: OnceLock<HashMap<String, Tz>> = OnceLock::new();
    let zones = ZONES.get_or_init(|| {
        WindowsTimezone::iter()
            .filter_map(|w| Some((w.name().to_ascii_lowercase(), w.tzdb_id().parse::<Tz>().ok()?)))
            .collect()
    });
    zones.get(&name.trim().to_ascii_lowercase()).copied()
}

fn naive(days: i32, ticks: u64) -> Option<NaiveDateTime> {
    let date = NaiveDate::from_num_days_from_ce_opt(days + 1)?;
    let seconds = u32::try_from(ticks / 10_000_000).ok()?;
    let nanos = u32::try_from(ticks % 10_000_000 * 100).ok()?;
    Some(date.and_time(NaiveTime::from_num_seconds_from_midnight_opt(seconds, nanos)?))
}

fn parts(t: &NaiveDateTime) -> (i32, u64) {
    let days = t.date().num_days_from_ce() - 1;
    let ticks = u64::from(t.time().num_seconds_from_midnight()) * 10_000_000 + u64::from(t.time().nanosecond() / 100);
    debug_assert!(ticks < TICKS_PER_DAY, "a time of day");
    (days, ticks)
}

/// The offset (seconds east of UTC) of `tz` at the instant `utc`.
fn offset_at(tz: &Tz, utc: &NaiveDateTime) -> i32 {
    tz.offset_from_utc_datetime(utc).fix().local_minus_utc()
}

pub(super) fn at_time_zone(value: &Value, ty: &SqlType, result: &SqlType, name: &str) -> SqlResult<Value> {
    let tz = zone(name).ok_or_else(|| msg::AT_TIME_ZONE_INVALID.with(&[&name]))?;
    let (utc, offset) = match value {
        Value::Null => return Ok(Value::Null),
        Value::DateTimeOffset { days, ticks, .. } => {
            let utc = naive(*days, *ticks).ok_or_else(|| msg::AT_TIME_ZONE_INVALID.with(&[&name]))?;
            (utc, offset_at(&tz, &utc))
        }
        Value::DateTime { days, ticks } => {
            let local = naive(*days, *ticks).ok_or_else(|| msg::AT_TIME_ZONE_INVALID.with(&[&name]))?;
            let before = match tz.offset_from_local_datetime(&local) {
                chrono::LocalResult::Single(o) => o.fix().local_minus_utc(),
                chrono::LocalResult::Ambiguous(earliest, _) => earliest.fix().local_minus_utc(),
                // In a gap: the offset in force before it.
                chrono::LocalResult::None => offset_at(&tz, &(local - chrono::Duration::days(1))),
            };
            let utc = local - chrono::Duration::seconds(i64::from(before));
            (utc, offset_at(&tz, &utc))
        }
        _ => {
            return Err(msg::INVALID_ARGUMENT_TYPE.with(&[
                &super::super::typing::base_type_name(ty),
                &1,
                &"AT TIME ZONE",
            ]))
        }
    };
    let (days, ticks) = parts(&utc);
    let v = Value::DateTimeOffset { days, ticks, offset: (offset / 60) as i16 };
    cast(&v, &SqlType::DateTimeOffset { scale: 7 }, result, None)
}
