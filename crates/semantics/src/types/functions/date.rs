//! The date and time functions: DATEADD, DATEDIFF, DATEDIFF_BIG, DATEPART, DATENAME,
//! YEAR, MONTH, DAY, EOMONTH, DATEFROMPARTS, DATETIMEFROMPARTS and ISDATE (the time zone
//! ones are in `offset`, the clock ones in the dispatch).

use super::super::convert::{cast, check_int, display_text};
use super::super::datetime::{
    civil_from_days, days_from_civil, days_in_month, shift_minutes, DAYS_TO_1900, MONTHS, TICKS_PER_HOUR,
    TICKS_PER_MINUTE, TICKS_PER_SECOND, WEEKDAYS,
};
use super::super::typing::{base_type_name, family, Family};
use super::super::{SqlType, Value};
use super::datepart::datepart_value;
use super::offset::offset_minutes;
use super::{date_part, Call, DatePart};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_types::{MAX_DATE_DAYS, TICKS_PER_DAY};

/// A date argument as (days, ticks) and the type it has (strings and numbers become
/// `as_type`); a datetimeoffset gives its local date and time.
fn instant(v: &Value, t: &SqlType, as_type: SqlType) -> SqlResult<Option<((i32, u64), SqlType)>> {
    let (v, t) = match (v, family(t)) {
        (Value::Null, _) => return Ok(None),
        (_, Family::Date | Family::Time | Family::DateTime | Family::DateTime2 | Family::DateTimeOffset) => {
            (v.clone(), *t)
        }
        (_, Family::Char | Family::NChar) => (cast(v, t, &as_type, None)?, as_type),
        // numbers are days since 1900-01-01, as datetime
        _ => (cast(v, t, &SqlType::DateTime, None)?, SqlType::DateTime),
    };
    Ok(match v {
        Value::Date(d) => Some(((d, 0), t)),
        Value::Time(x) => Some(((DAYS_TO_1900, x), t)),
        Value::DateTime { days, ticks } => Some(((days, ticks), t)),
        Value::DateTimeOffset { days, ticks, offset } => Some((shift_minutes(days, ticks, offset.into()), t)),
        _ => None,
    })
}

impl Call<'_> {
    pub(super) fn isdate(&self) -> SqlResult<Value> {
        let ok = match (&self.args[0], family(&self.types[0])) {
            (Value::Null, _) => false,
            (_, Family::Date | Family::DateTime | Family::DateTime2) => true,
            (Value::Str(_), _) => cast(&self.args[0], &self.types[0], &SqlType::DateTime, None).is_ok(),
            _ => false,
        };
        Ok(Value::Int(i64::from(ok)))
    }

    fn date_part_arg(&self) -> SqlResult<DatePart> {
        match &self.args[0] {
            Value::Str(s) => date_part(s),
            other => Err(msg::UNRECOGNIZED_OPTION.with(&[&display_text(other, &self.types[0]), &"datepart"])),
        }
    }

    pub(super) fn unsupported(&self, part: DatePart, t: &SqlType) -> SqlError {
        msg::UNSUPPORTED_DATEPART.with(&[&part.name(), &self.lower(), &base_type_name(t)])
    }

    fn check_part(&self, part: DatePart, t: &SqlType) -> SqlResult<()> {
        let ok = match family(t) {
            _ if part == DatePart::TzOffset => {
                matches!(self.name, "DATEPART" | "DATENAME")
                    && matches!(family(t), Family::DateTime2 | Family::DateTimeOffset)
            }
            Family::Date => !part.is_time(),
            Family::Time => part.is_time(),
            _ => true,
        };
        if ok {
            Ok(())
        } else {
            Err(self.unsupported(part, t))
        }
    }

    pub(super) fn date(&self) -> SqlResult<Value> {
        match self.name {
            "DATEADD" => self.dateadd(),
            "DATE_BUCKET" => self.date_bucket(),
            "DATEDIFF" | "DATEDIFF_BIG" => self.datediff(),
            "DATEPART" | "DATENAME" if self.date_part_arg()? == DatePart::TzOffset => self.tzoffset(),
            "DATEPART" | "DATENAME" => {
                let part = self.date_part_arg()?;
                let ((days, ticks), t) =
                    or_null!(instant(&self.args[1], &self.types[1], SqlType::DateTime2 { scale: 7 })?);
                if self.name == "DATEPART" || !matches!(part, DatePart::Month | DatePart::Weekday) {
                    self.check_part(part, &t)?;
                }
                let n = datepart_value(part, days, ticks, &t);
                if self.name == "DATEPART" {
                    // The weekday number counts from SET DATEFIRST (Sunday = 1 by default).
                    if part == DatePart::Weekday {
                        let shift = i64::from(self.datefirst % 7);
                        return Ok(Value::Int((n - 1 - shift).rem_euclid(7) + 1));
                    }
                    return Ok(Value::Int(n));
                }
                let name = match part {
                    DatePart::Month => MONTHS[(n - 1).clamp(0, 11) as usize].to_string(),
                    DatePart::Weekday => WEEKDAYS[(n - 1).clamp(0, 6) as usize].to_string(),
                    _ => n.to_string(),
                };
                Ok(Value::str(&name))
            }
            "YEAR" | "MONTH" | "DAY" => {
                let ((days, ticks), t) = or_null!(instant(&self.args[0], &self.types[0], SqlType::DateTime)?);
                let part = match self.name {
                    "YEAR" => DatePart::Year,
                    "MONTH" => DatePart::Month,
                    _ => DatePart::Day,
                };
                Ok(Value::Int(datepart_value(part, days, ticks, &t)))
            }
            "EOMONTH" => {
                let ((days, _), _) = or_null!(instant(&self.args[0], &self.types[0], SqlType::DateTime)?);
                let months = match self.args.get(1) {
                    Some(_) => or_null!(self.int(1)?),
                    None => 0,
                };
                let (y, m, _) = civil_from_days(days);
                let total = i64::from(y) * 12 + i64::from(m) - 1 + months;
                let (y, m) = (total.div_euclid(12), total.rem_euclid(12) as u32 + 1);
                if !(1..=9999).contains(&y) {
                    return Err(msg::DATE_ADD_OVERFLOW.with(&[&"date"]));
                }
                let y = y as i32;
                Ok(Value::Date(days_from_civil(y, m, days_in_month(y, m))))
            }
            "DATEFROMPARTS" => {
                let (y, m, d) = (or_null!(self.int(0)?), or_null!(self.int(1)?), or_null!(self.int(2)?));
                let days = valid_date(y, m, d).ok_or_else(|| msg::CANNOT_CONSTRUCT_TYPE.with(&[&"date"]))?;
                Ok(Value::Date(days))
            }
            "DATETIMEFROMPARTS" => self.datetimefromparts(),
            "TODATETIMEOFFSET" => {
                let local = or_null!(self.arg_as(0, &SqlType::DateTime2 { scale: 7 })?);
                let offset = or_null!(offset_minutes(&self.args[1], &self.types[1], self.name)?);
                let Value::DateTime { days, ticks } = local else { return Ok(Value::Null) };
                self.with_offset(shift_minutes(days, ticks, -i32::from(offset)), offset)
            }
            "SWITCHOFFSET" => {
                let v = or_null!(self.arg_as(0, &SqlType::DateTimeOffset { scale: 7 })?);
                let offset = or_null!(offset_minutes(&self.args[1], &self.types[1], self.name)?);
                let Value::DateTimeOffset { days, ticks, .. } = v else { return Ok(Value::Null) };
                self.with_offset((days, ticks), offset)
            }
            _ => Err(msg::UNRECOGNIZED_NAME.with(&[&self.lower(), &"built-in function name"])),
        }
    }

    /// Argument `i` converted to `to` (None for NULL).
    fn arg_as(&self, i: usize, to: &SqlType) -> SqlResult<Option<Value>> {
        match cast(&self.args[i], &self.types[i], to, None)? {
            Value::Null => Ok(None),
            v => Ok(Some(v)),
        }
    }

    fn datetimefromparts(&self) -> SqlResult<Value> {
        let mut p = [0i64; 7];
        for (i, slot) in p.iter_mut().enumerate() {
            *slot = or_null!(self.int(i)?);
        }
        let bad = || msg::CANNOT_CONSTRUCT_TYPE.with(&[&"datetime"]);
        let days = valid_date(p[0], p[1], p[2]).ok_or_else(bad)?;
        if !(0..24).contains(&p[3])
            || !(0..60).contains(&p[4])
            || !(0..60).contains(&p[5])
            || !(0..1000).contains(&p[6])
        {
            return Err(bad());
        }
        let ticks = p[3] as u64 * TICKS_PER_HOUR
            + p[4] as u64 * TICKS_PER_MINUTE
            + p[5] as u64 * TICKS_PER_SECOND
            + p[6] as u64 * 10_000;
        cast(&Value::DateTime { days, ticks }, &SqlType::DateTime2 { scale: 7 }, &SqlType::DateTime, None)
            .map_err(|_| bad())
    }

    fn dateadd(&self) -> SqlResult<Value> {
        let part = self.date_part_arg()?;
        let n = or_null!(self.int(1)?);
        let ((days, ticks), t) = or_null!(instant(&self.args[2], &self.types[2], SqlType::DateTime)?);
        self.check_part(part, &t)?;
        let overflow = || msg::DATE_ADD_OVERFLOW.with(&[&base_type_name(&t)]);
        let (d, tk) = match part {
            DatePart::Year | DatePart::Quarter | DatePart::Month => {
                let months = match part {
                    DatePart::Year => n.checked_mul(12),
                    DatePart::Quarter => n.checked_mul(3),
                    _ => Some(n),
                }
                .ok_or_else(overflow)?;
                (add_months(days, months).ok_or_else(overflow)?, ticks)
            }
            DatePart::IsoWeek => add_ticks(days, ticks, n, 7 * TICKS_PER_DAY).ok_or_else(overflow)?,
            // 100 ns ticks: nanoseconds round to the nearest tick
            DatePart::Nanosecond => {
                let n = (i128::from(n) + 50 * i128::from(n.signum())) / 100;
                add_ticks(days, ticks, n as i64, 1).ok_or_else(overflow)?
            }
            _ => add_ticks(days, ticks, n, part.ticks().unwrap_or(TICKS_PER_DAY)).ok_or_else(overflow)?,
        };
        if family(&t) == Family::Time {
            return Ok(Value::Time(tk));
        }
        if !(0..=MAX_DATE_DAYS).contains(&d) {
            return Err(overflow());
        }
        if let Value::DateTimeOffset { offset, .. } = self.args[2] {
            // the local time moved; the offset stays
            let (days, ticks) = shift_minutes(d, tk, -i32::from(offset));
            if !(0..=MAX_DATE_DAYS).contains(&days) {
                return Err(overflow());
            }
            return cast(
                &Value::DateTimeOffset { days, ticks, offset },
                &SqlType::DateTimeOffset { scale: 7 },
                &t,
                None,
            )
            .map_err(|_| overflow());
        }
        cast(&Value::DateTime { days: d, ticks: tk }, &SqlType::DateTime2 { scale: 7 }, &t, None)
            .map_err(|_| overflow())
    }

    /// DATE_BUCKET(part, width, date [, origin]): the start of the bucket of `width` parts,
    /// counted from `origin` (1900-01-01 00:00), that holds `date`, in `date`'s type.
    fn date_bucket(&self) -> SqlResult<Value> {
        let part = self.date_part_arg()?;
        let width = or_null!(self.int(1)?);
        if width <= 0 {
            return Err(msg::DATE_BUCKET_WIDTH.err());
        }
        let ((days, ticks), t) = or_null!(instant(&self.args[2], &self.types[2], SqlType::DateTime)?);
        let (origin_days, origin_ticks) = match self.args.get(3) {
            Some(o) => or_null!(instant(o, &self.types[3], SqlType::DateTime)?).0,
            None => (DAYS_TO_1900, 0),
        };
        let overflow = || msg::DATE_ADD_OVERFLOW.with(&[&base_type_name(&t)]);
        let (d, tk) = match part {
            DatePart::Year | DatePart::Quarter | DatePart::Month => {
                let months_per = i64::from(match part {
                    DatePart::Year => 12,
                    DatePart::Quarter => 3,
                    _ => 1,
                });
                let size = width.checked_mul(months_per).ok_or_else(overflow)?;
                let (y, m, day) = civil_from_days(days);
                let (oy, om, oday) = civil_from_days(origin_days);
                let mut diff = (i64::from(y) * 12 + i64::from(m)) - (i64::from(oy) * 12 + i64::from(om));
                // Not yet at the origin's day and time of this month: still the month before.
                if (day, ticks) < (oday, origin_ticks) {
                    diff -= 1;
                }
                let months = diff.div_euclid(size) * size;
                (add_months(origin_days, months).ok_or_else(overflow)?, origin_ticks)
            }
            DatePart::Week
            | DatePart::Day
            | DatePart::Hour
            | DatePart::Minute
            | DatePart::Second
            | DatePart::Millisecond => {
                let unit = i128::from(part.ticks().unwrap_or(TICKS_PER_DAY));
                let size = i128::from(width) * unit;
                let per_day = i128::from(TICKS_PER_DAY);
                let at = i128::from(days) * per_day + i128::from(ticks);
                let origin = i128::from(origin_days) * per_day + i128::from(origin_ticks);
                let start = origin + (at - origin).div_euclid(size) * size;
                (start.div_euclid(per_day) as i32, start.rem_euclid(per_day) as u64)
            }
            _ => return Err(self.unsupported(part, &t)),
        };
        if family(&t) == Family::Time {
            return Ok(Value::Time(tk));
        }
        if !(0..=MAX_DATE_DAYS).contains(&d) {
            return Err(overflow());
        }
        if let Value::DateTimeOffset { offset, .. } = self.args[2] {
            // The bucket is of the local time; the offset stays.
            let (days, ticks) = shift_minutes(d, tk, -i32::from(offset));
            let bucket = Value::DateTimeOffset { days, ticks, offset };
            return cast(&bucket, &SqlType::DateTimeOffset { scale: 7 }, &t, None).map_err(|_| overflow());
        }
        cast(&Value::DateTime { days: d, ticks: tk }, &SqlType::DateTime2 { scale: 7 }, &t, None)
            .map_err(|_| overflow())
    }

    fn datediff(&self) -> SqlResult<Value> {
        let part = self.date_part_arg()?;
        let as_type = SqlType::DateTime2 { scale: 7 };
        // datetimeoffset values count from their UTC instants
        let utc = |i: usize| -> SqlResult<Option<((i32, u64), SqlType)>> {
            match self.args[i] {
                Value::DateTimeOffset { days, ticks, .. } => Ok(Some(((days, ticks), self.types[i]))),
                _ => instant(&self.args[i], &self.types[i], as_type),
            }
        };
        let ((d1, t1), ta) = or_null!(utc(1)?);
        let ((d2, t2), tb) = or_null!(utc(2)?);
        self.check_part(part, &ta)?;
        self.check_part(part, &tb)?;
        let diff = datediff(part, (d1, t1), (d2, t2));
        let result = if self.name == "DATEDIFF" { SqlType::Int } else { SqlType::BigInt };
        check_int(diff, &result).map_err(|_| msg::DATEDIFF_OVERFLOW.with(&[&self.lower(), &self.lower()]))
    }
}

fn valid_date(y: i64, m: i64, d: i64) -> Option<i32> {
    if !(1..=9999).contains(&y) || !(1..=12).contains(&m) {
        return None;
    }
    let (y, m) = (y as i32, m as u32);
    if d < 1 || d > i64::from(days_in_month(y, m)) {
        return None;
    }
    Some(days_from_civil(y, m, d as u32))
}

fn add_months(days: i32, months: i64) -> Option<i32> {
    let (y, m, d) = civil_from_days(days);
    let total = (i64::from(y) * 12 + i64::from(m) - 1).checked_add(months)?;
    let (y, m) = (total.div_euclid(12), total.rem_euclid(12) as u32 + 1);
    if !(1..=9999).contains(&y) {
        return None;
    }
    let y = y as i32;
    Some(days_from_civil(y, m, d.min(days_in_month(y, m))))
}

fn add_ticks(days: i32, ticks: u64, n: i64, unit: u64) -> Option<(i32, u64)> {
    let total = (i128::from(days) * i128::from(TICKS_PER_DAY) + i128::from(ticks))
        .checked_add(i128::from(n).checked_mul(i128::from(unit))?)?;
    let per_day = i128::from(TICKS_PER_DAY);
    let d = i32::try_from(total.div_euclid(per_day)).ok()?;
    Some((d, total.rem_euclid(per_day) as u64))
}

/// DATEDIFF: the number of `part` boundaries crossed from `a` to `b`.
fn datediff(part: DatePart, (d1, t1): (i32, u64), (d2, t2): (i32, u64)) -> i128 {
    let months = |d: i32| {
        let (y, m, _) = civil_from_days(d);
        i128::from(y) * 12 + i128::from(m) - 1
    };
    let total = |d: i32, t: u64| i128::from(d) * i128::from(TICKS_PER_DAY) + i128::from(t);
    match part {
        DatePart::Year => i128::from(civil_from_days(d2).0) - i128::from(civil_from_days(d1).0),
        DatePart::Quarter => months(d2).div_euclid(3) - months(d1).div_euclid(3),
        DatePart::Month => months(d2) - months(d1),
        DatePart::Day | DatePart::DayOfYear | DatePart::Weekday => i128::from(d2) - i128::from(d1),
        // weeks end on Saturday night, whatever DATEFIRST says
        DatePart::Week | DatePart::IsoWeek => (i128::from(d2) + 1).div_euclid(7) - (i128::from(d1) + 1).div_euclid(7),
        // ticks are 100 ns
        DatePart::Nanosecond => (total(d2, t2) - total(d1, t1)) * 100,
        _ => {
            let unit = i128::from(part.ticks().unwrap_or(1));
            total(d2, t2).div_euclid(unit) - total(d1, t1).div_euclid(unit)
        }
    }
}
