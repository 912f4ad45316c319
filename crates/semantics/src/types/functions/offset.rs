//! Time zone offsets: the offset argument of TODATETIMEOFFSET and SWITCHOFFSET, the
//! datetimeoffset they make, and DATEPART/DATENAME(tzoffset, …).

use super::super::convert::cast;
use super::super::datetime::{format_offset, shift_minutes};
use super::super::typing::{family, Family};
use super::super::{SqlType, Value};
use super::{int, Call, DatePart};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_types::{MAX_DATE_DAYS, MAX_OFFSET_MINUTES, MIN_OFFSET_MINUTES};

/// Error 9812 for an offset TODATETIMEOFFSET or SWITCHOFFSET cannot use.
fn invalid_timezone(function: &str) -> SqlError {
    msg::INVALID_TIME_ZONE.with(&[&function.to_ascii_lowercase()])
}

/// A time zone offset argument: `{+|-}hh:mm`, or an integer number of minutes, within
/// -14:00..=+14:00.
pub(super) fn offset_minutes(v: &Value, t: &SqlType, function: &str) -> SqlResult<Option<i16>> {
    let minutes = match v {
        Value::Null => return Ok(None),
        Value::Str(s) => {
            let s = s.trim();
            let (sign, body) = match s.as_bytes().first() {
                Some(b'-') => (-1, &s[1..]),
                Some(b'+') => (1, &s[1..]),
                _ => (1, s),
            };
            let (h, m) = body.split_once(':').ok_or_else(|| invalid_timezone(function))?;
            let field = |x: &str| {
                (x.len() == 2 && x.bytes().all(|b| b.is_ascii_digit())).then(|| x.parse::<i64>().ok()).flatten()
            };
            match (field(h), field(m)) {
                (Some(h), Some(m)) if m < 60 => sign * (h * 60 + m),
                _ => return Err(invalid_timezone(function)),
            }
        }
        _ => match int(v, t)? {
            Some(m) => m,
            None => return Ok(None),
        },
    };
    if !(i64::from(MIN_OFFSET_MINUTES)..=i64::from(MAX_OFFSET_MINUTES)).contains(&minutes) {
        return Err(invalid_timezone(function));
    }
    Ok(Some(minutes as i16))
}

impl Call<'_> {
    /// The datetimeoffset of a UTC instant and an offset, at the result's scale (517 when
    /// its local time leaves the date range).
    pub(super) fn with_offset(&self, (days, ticks): (i32, u64), offset: i16) -> SqlResult<Value> {
        let overflow = || msg::DATE_ADD_OVERFLOW.with(&[&"datetimeoffset"]);
        let local = shift_minutes(days, ticks, offset.into()).0;
        if !(0..=MAX_DATE_DAYS).contains(&days) || !(0..=MAX_DATE_DAYS).contains(&local) {
            return Err(overflow());
        }
        let v = Value::DateTimeOffset { days, ticks, offset };
        cast(&v, &SqlType::DateTimeOffset { scale: 7 }, self.result, None).map_err(|_| overflow())
    }

    /// DATEPART(tzoffset, …): the offset in minutes; DATENAME(tzoffset, …): `+hh:mm`.
    /// datetime2 has offset 0 and strings are read as datetimeoffset; the other date and
    /// time types are error 9810.
    pub(super) fn tzoffset(&self) -> SqlResult<Value> {
        let (v, t) = (&self.args[1], &self.types[1]);
        let offset = match (v, family(t)) {
            (Value::Null, _) => return Ok(Value::Null),
            (Value::DateTimeOffset { offset, .. }, _) => *offset,
            (_, Family::DateTime2) => 0,
            (_, Family::Char | Family::NChar) => match cast(v, t, &SqlType::DateTimeOffset { scale: 7 }, None)? {
                Value::DateTimeOffset { offset, .. } => offset,
                _ => return Ok(Value::Null),
            },
            _ => return Err(self.unsupported(DatePart::TzOffset, t)),
        };
        if self.name == "DATEPART" {
            Ok(Value::Int(i64::from(offset)))
        } else {
            Ok(Value::str(&format_offset(offset)))
        }
    }
}
