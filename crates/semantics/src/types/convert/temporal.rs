//! Conversion to and from the date and time types: text in the default format or a
//! `CONVERT` style, parsing strings, numbers as days since 1900, binary forms, rounding to
//! each type's grid and the range checks.

use super::super::datetime::{self, DateOrder, DAYS_TO_1900, TICKS_PER_MINUTE, TICKS_PER_SECOND};
use super::super::typing::{base_type_name, family, fraction_digits, Family};
use super::super::{SqlType, Value};
use super::numeric::{int_from_bytes, to_float};
use super::{bad_style, overflow, string_type_name, unexpected};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_types::{
    datetime_parts, ticks_from_t300, DATETIME_MAX_DAYS, DATETIME_MIN_DAYS, DATETIME_TICKS_PER_DAY, MAX, MAX_DATE_DAYS,
    MAX_OFFSET_MINUTES, MIN_OFFSET_MINUTES, TICKS_PER_DAY,
};

/// A datetimeoffset as text: the local date and time, then the offset
/// (`2025-03-04 10:11:12.1234567 +05:30`, style 121 and the default); style 126 puts the
/// offset right after the time (`2025-03-04T10:11:12.1234567+05:30`), style 127 gives the
/// UTC time (`2025-03-04T04:41:12.1234567Z`). Other styles format the local date/time,
/// with the offset after it when they show both a date and a time of day.
fn offset_text(days: i32, ticks: u64, offset: i16, from: &SqlType, style: Option<i32>) -> SqlResult<String> {
    let digits = fraction_digits(from);
    let style = style.unwrap_or(121);
    if style == 127 {
        return datetime::format_style(days, ticks, digits, false, 127).ok_or_else(|| bad_style(style, from));
    }
    let (local_days, local_ticks) = datetime::shift_minutes(days, ticks, offset.into());
    let text =
        datetime::format_style(local_days, local_ticks, digits, false, style).ok_or_else(|| bad_style(style, from))?;
    let zone = datetime::format_offset(offset);
    Ok(match style {
        126 => format!("{text}{zone}"),
        0 | 100 | 9 | 109 | 13 | 113 | 20 | 120 | 21 | 25 | 121 | 22 => format!("{text} {zone}"),
        _ => text,
    })
}

/// A temporal value as text: the type's default format, or a `CONVERT` style.
pub(super) fn temporal_text(v: &Value, from: &SqlType, style: Option<i32>) -> SqlResult<String> {
    let (days, ticks) = match v {
        Value::Date(d) => (*d, 0),
        Value::Time(t) => (DAYS_TO_1900, *t),
        Value::DateTime { days, ticks } => (*days, *ticks),
        Value::DateTimeOffset { days, ticks, offset } => return offset_text(*days, *ticks, *offset, from, style),
        _ => return Err(unexpected(v, &SqlType::VarChar(MAX))),
    };
    let digits = fraction_digits(from);
    let default = match from {
        SqlType::Date => Some(datetime::format_date(days)),
        SqlType::Time { scale } => Some(datetime::format_time(ticks, *scale)),
        SqlType::DateTime2 { scale } => {
            Some(format!("{} {}", datetime::format_date(days), datetime::format_time(ticks, *scale)))
        }
        _ => None,
    };
    let datetime_ms = matches!(from, SqlType::DateTime | SqlType::SmallDateTime);
    match (style, default) {
        (None, Some(text)) => Ok(text),
        (s, _) => {
            let s = s.unwrap_or(0);
            let text = datetime::format_style(days, ticks, if datetime_ms { 3 } else { digits }, datetime_ms, s)
                .ok_or_else(|| bad_style(s, from))?;
            // A date has no time to show and a time no date: of a style that shows both,
            // each keeps its own part (`date` in style 121 is `2006-01-02`, `time` is
            // `22:04:05.0000000`).
            Ok(match (from, date_width(s)) {
                (SqlType::Date, Some(width)) => text.get(..width).unwrap_or(&text).to_string(),
                (SqlType::Time { .. }, Some(width)) => text.get(width + 1..).unwrap_or(&text).to_string(),
                _ => text,
            })
        }
    }
}

/// How many characters the date takes at the start of a style that shows a date and a
/// time (then one separator, then the time); None for a style that shows one of them.
fn date_width(style: i32) -> Option<usize> {
    match style {
        0 | 100 | 9 | 109 | 13 | 113 => Some(11),
        20 | 120 | 21 | 121 | 25 | 126 | 127 => Some(10),
        22 => Some(8),
        _ => None,
    }
}

pub(super) fn temporal_to_binary(v: &Value, from: &SqlType) -> Vec<u8> {
    match (v, from) {
        (Value::DateTime { days, ticks }, SqlType::DateTime) => {
            let (d, t300) = datetime_parts(*days, *ticks);
            [d.to_be_bytes(), t300.to_be_bytes()].concat()
        }
        (Value::DateTime { days, ticks }, SqlType::SmallDateTime) => {
            let d = (*days - DAYS_TO_1900) as u16;
            let m = (*ticks / TICKS_PER_MINUTE) as u16;
            [d.to_be_bytes(), m.to_be_bytes()].concat()
        }
        (Value::Date(d), _) => d.to_le_bytes()[..3].to_vec(),
        (Value::Time(t), _) => t.to_le_bytes()[..5].to_vec(),
        (Value::DateTime { days, ticks }, _) => [&ticks.to_le_bytes()[..5], &days.to_le_bytes()[..3]].concat(),
        (Value::DateTimeOffset { days, ticks, offset }, _) => {
            [&ticks.to_le_bytes()[..5], &days.to_le_bytes()[..3], &offset.to_le_bytes()[..]].concat()
        }
        _ => Vec::new(),
    }
}

/// Rounds to `datetime`'s 1/300 s grid, carrying into the next day.
pub(crate) fn round_datetime(days: i32, ticks: u64) -> (i32, u64) {
    let t300 = (ticks * 3 + 50_000) / 100_000;
    if t300 >= u64::from(DATETIME_TICKS_PER_DAY) {
        return (days + 1, 0);
    }
    (days, ticks_from_t300(t300 as u32))
}

/// Rounds to whole units of a time scale (`time(3)`: milliseconds), carrying into the
/// next day.
fn round_scale(days: i32, ticks: u64, scale: u8) -> (i32, u64) {
    let unit = 10u64.pow(7 - u32::from(scale.min(7)));
    let t = (ticks + unit / 2) / unit * unit;
    if t >= TICKS_PER_DAY {
        (days + 1, t - TICKS_PER_DAY)
    } else {
        (days, t)
    }
}

/// Rounds to the minute (`smalldatetime`: 29.998 s and less down, else up).
fn round_minute(days: i32, ticks: u64) -> (i32, u64) {
    let t = (ticks + 30 * TICKS_PER_SECOND + 10_000) / TICKS_PER_MINUTE * TICKS_PER_MINUTE;
    if t >= TICKS_PER_DAY {
        (days + 1, t - TICKS_PER_DAY)
    } else {
        (days, t)
    }
}

fn out_of_range(from: &SqlType, to: &SqlType) -> SqlError {
    let from = if family(from) == Family::Char || family(from) == Family::NChar {
        string_type_name(from)
    } else {
        base_type_name(from)
    };
    msg::CONVERSION_OUT_OF_RANGE.with(&[&from, &base_type_name(to)])
}

pub(super) fn to_temporal(v: &Value, from: &SqlType, to: &SqlType, style: Option<i32>) -> SqlResult<Value> {
    // the local date/time, and the offset it has (datetimeoffset, or a string with one)
    let mut offset = 0;
    let (days, ticks) = match v {
        Value::Date(d) => (*d, 0),
        Value::Time(t) => (DAYS_TO_1900, *t),
        Value::DateTime { days, ticks } => (*days, *ticks),
        Value::DateTimeOffset { days, ticks, offset: o } => {
            offset = *o;
            datetime::shift_minutes(*days, *ticks, (*o).into())
        }
        Value::Str(s) if matches!(style, Some(130 | 131)) => {
            let bad = || msg::DATETIME_CONVERSION_FAILED.err();
            let (days, time) = super::super::hijri::parse_date(s, style.unwrap_or(131)).ok_or_else(bad)?;
            let ticks =
                if time.trim().is_empty() { 0 } else { datetime::parse(time, DateOrder::Dmy).ok_or_else(bad)?.ticks };
            (days, ticks)
        }
        Value::Str(s) => {
            let bad = || msg::DATETIME_CONVERSION_FAILED.err();
            let order = DateOrder::for_style(style);
            if matches!(to, SqlType::DateTime | SqlType::SmallDateTime) {
                let p = datetime::parse(s, order).ok_or_else(bad)?;
                if p.fraction_digits > 3 {
                    return Err(bad());
                }
                (p.days, p.ticks)
            } else {
                let (p, o) = datetime::parse_with_offset(s, order).ok_or_else(bad)?;
                offset = o.unwrap_or(0);
                (p.days, p.ticks)
            }
        }
        Value::Int(_) | Value::Bit(_) | Value::Decimal { .. } | Value::Float(_) => {
            let x = match to_float(v, from, &SqlType::Float)? {
                Value::Float(x) => x,
                _ => 0.0,
            };
            let day = x.floor();
            if day.abs() > 1e7 {
                return Err(overflow(to));
            }
            let ticks = ((x - day) * TICKS_PER_DAY as f64).round() as u64;
            (DAYS_TO_1900 + day as i32, ticks)
        }
        Value::Binary(b) if matches!(to, SqlType::DateTimeOffset { .. }) => {
            let (days, ticks, o) = binary_to_offset(b).ok_or_else(|| overflow(to))?;
            offset = o;
            datetime::shift_minutes(days, ticks, o.into())
        }
        Value::Binary(b) => binary_to_datetime(b, to)?,
        _ => return Err(unexpected(v, to)),
    };
    finish_temporal(days, ticks, offset, from, to)
}

/// A datetimeoffset from its binary form (time, date, offset, as
/// [`temporal_to_binary`] writes it): UTC days, ticks and the offset.
fn binary_to_offset(b: &[u8]) -> Option<(i32, u64, i16)> {
    let b: &[u8; 10] = b.try_into().ok()?;
    let mut t = [0u8; 8];
    t[..5].copy_from_slice(&b[..5]);
    let ticks = u64::from_le_bytes(t);
    let days = i32::from(b[5]) | i32::from(b[6]) << 8 | i32::from(b[7]) << 16;
    let offset = i16::from_le_bytes([b[8], b[9]]);
    let ok =
        ticks < TICKS_PER_DAY && days <= MAX_DATE_DAYS && (MIN_OFFSET_MINUTES..=MAX_OFFSET_MINUTES).contains(&offset);
    ok.then_some((days, ticks, offset))
}

fn binary_to_datetime(b: &[u8], to: &SqlType) -> SqlResult<(i32, u64)> {
    if matches!(to, SqlType::SmallDateTime) {
        let x = int_from_bytes(b, 4) as u32;
        return Ok((DAYS_TO_1900 + (x >> 16) as i32, u64::from(x & 0xFFFF) * TICKS_PER_MINUTE));
    }
    let x = int_from_bytes(b, 8) as u64;
    let t300 = (x & 0xFFFF_FFFF) as u32;
    if t300 >= DATETIME_TICKS_PER_DAY {
        return Err(overflow(to));
    }
    Ok((DAYS_TO_1900 + (x >> 32) as i32, ticks_from_t300(t300)))
}

/// Brings a local (days, ticks) date/time to the target type's precision and range; a
/// datetimeoffset gets `offset` (minutes), the others keep the local time.
fn finish_temporal(days: i32, ticks: u64, offset: i16, from: &SqlType, to: &SqlType) -> SqlResult<Value> {
    let ticks = ticks.min(TICKS_PER_DAY - 1);
    match *to {
        SqlType::DateTimeOffset { scale } => {
            let (d, t) = round_scale(days, ticks, scale);
            let (ud, ut) = datetime::shift_minutes(d, t, -i32::from(offset));
            if !(0..=MAX_DATE_DAYS).contains(&d) || !(0..=MAX_DATE_DAYS).contains(&ud) {
                return Err(out_of_range(from, to));
            }
            Ok(Value::DateTimeOffset { days: ud, ticks: ut, offset })
        }
        SqlType::Date => {
            if !(0..=MAX_DATE_DAYS).contains(&days) {
                return Err(out_of_range(from, to));
            }
            Ok(Value::Date(days))
        }
        SqlType::Time { scale } => Ok(Value::Time(round_scale(0, ticks, scale).1)),
        SqlType::DateTime2 { scale } => {
            let (d, t) = round_scale(days, ticks, scale);
            if !(0..=MAX_DATE_DAYS).contains(&d) {
                return Err(out_of_range(from, to));
            }
            Ok(Value::DateTime { days: d, ticks: t })
        }
        SqlType::DateTime => {
            let (d, t) = round_datetime(days, ticks);
            if !(DATETIME_MIN_DAYS..=DATETIME_MAX_DAYS).contains(&(d - DAYS_TO_1900)) {
                return Err(out_of_range(from, to));
            }
            Ok(Value::DateTime { days: d, ticks: t })
        }
        _ => {
            let (d, t) = round_minute(days, ticks);
            // 1900-01-01 through 2079-06-06
            if !(0..=i32::from(u16::MAX)).contains(&(d - DAYS_TO_1900)) {
                return Err(out_of_range(from, to));
            }
            Ok(Value::DateTime { days: d, ticks: t })
        }
    }
}
