//! Built-in scalar functions that need no session state beyond the statement's clock and
//! the session's random number generator: string, math and date functions.
//!
//! [`function_type`] gives a call's result type (and checks the argument count);
//! [`call_function`] evaluates it. Arguments arrive with their own types; the functions
//! convert them as SQL Server does (`LEN(123)` is 3, `DATEADD(day, 1, 0)` is 1900-01-02).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use super::compare::{encode_key, like};
use super::convert::{cast, check_int, fit_string, round_datetime};
use super::datetime::{
    civil_from_days, days_from_civil, days_in_month, format_offset, shift_minutes, weekday, Parts, DAYS_TO_1900,
    MONTHS, TICKS_PER_HOUR, TICKS_PER_MINUTE, TICKS_PER_SECOND, WEEKDAYS,
};
use super::num::{self, f64_to_decimal, fits_precision};
use super::text::{cp1252_byte, decode_cp1252, find_ci, trim_trailing_spaces};
use super::typing::{base_type_name, family, fraction_digits, is_string, is_unicode, Family, MAX_BYTES, MAX_NCHARS};
use super::{SqlType, Value};
use tessera_access::key::KeyBuf;
use tessera_access::row::{MAX, MAX_DATE_DAYS, MAX_OFFSET_MINUTES, MIN_OFFSET_MINUTES, TICKS_PER_DAY};
use tessera_errors::{SqlError, SqlResult};

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

    fn is_time(self) -> bool {
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
    fn ticks(self) -> Option<u64> {
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
        _ => return Err(SqlError::new(155, format!("'{name}' is not a recognized datepart option."))),
    })
}

/// What the functions need from the session and statement: the statement's clock (set
/// once per statement, so that every GETDATE() in a statement agrees, as in SQL Server)
/// and the session's random number generator for RAND and NEWID.
pub struct FunctionContext {
    /// The statement's time, UTC, as days since 0001-01-01 and 100 ns ticks.
    pub now_utc: (i32, u64),
    /// Local time minus UTC, in minutes (GETDATE and SYSDATETIME are local).
    pub utc_offset_minutes: i32,
    /// The session's generator; `RAND(seed)` reseeds it (a small fast generator: seeding
    /// happens on every `RAND(seed)` call, once per row in seed 002's query).
    pub rng: SmallRng,
    /// `SET DATEFIRST`: the first day of the week, 1 = Monday … 7 = Sunday.
    pub datefirst: u8,
}

impl Default for FunctionContext {
    fn default() -> Self {
        FunctionContext::new()
    }
}

impl FunctionContext {
    /// A context at the current time, UTC as local time, with a randomly seeded RNG.
    pub fn new() -> FunctionContext {
        let mut ctx =
            FunctionContext { now_utc: (0, 0), utc_offset_minutes: 0, rng: SmallRng::from_os_rng(), datefirst: 7 };
        ctx.set_now(SystemTime::now());
        ctx
    }

    /// Sets the statement's clock (call at the start of each statement).
    pub fn set_now(&mut self, now: SystemTime) {
        let ticks = match now.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_nanos() / 100,
            Err(_) => 0,
        };
        let unix_epoch_days = days_from_civil(1970, 1, 1);
        let per_day = u128::from(TICKS_PER_DAY);
        self.now_utc = (unix_epoch_days + (ticks / per_day) as i32, (ticks % per_day) as u64);
    }

    fn now_local(&self) -> (i32, u64) {
        let (d, t) = self.now_utc;
        let total = i128::from(d) * i128::from(TICKS_PER_DAY)
            + i128::from(t)
            + i128::from(self.utc_offset_minutes) * i128::from(TICKS_PER_MINUTE);
        let per_day = i128::from(TICKS_PER_DAY);
        (total.div_euclid(per_day) as i32, total.rem_euclid(per_day) as u64)
    }
}

fn arg_count(name: &str, n: usize, min: usize, max: usize) -> SqlResult<()> {
    if (min..=max).contains(&n) {
        return Ok(());
    }
    let lower = name.to_ascii_lowercase();
    let message = if min == max {
        format!("The {lower} function requires {min} argument(s).")
    } else {
        format!("The {lower} function requires {min} to {max} arguments.")
    };
    Err(SqlError::new(if min == max { 174 } else { 189 }, message).with_severity(15))
}

fn bad_arg(name: &str, t: &SqlType, i: usize) -> SqlError {
    SqlError::new(
        8116,
        format!(
            "Argument data type {} is invalid for argument {} of {} function.",
            base_type_name(t),
            i + 1,
            name.to_ascii_lowercase()
        ),
    )
}

/// The number of arguments a function takes, as (min, max).
fn arity(name: &str) -> Option<(usize, usize)> {
    Some(match name {
        "PI" | "NEWID" | "GETDATE" | "GETUTCDATE" | "SYSDATETIME" | "SYSUTCDATETIME" | "SYSDATETIMEOFFSET"
        | "CURRENT_TIMESTAMP" => (0, 0),
        "RAND" => (0, 1),
        "LEN" | "DATALENGTH" | "UPPER" | "LOWER" | "LTRIM" | "RTRIM" | "TRIM" | "REVERSE" | "SPACE" | "CHAR"
        | "ASCII" | "NCHAR" | "UNICODE" | "ABS" | "FLOOR" | "CEILING" | "SQRT" | "SQUARE" | "SIGN" | "EXP"
        | "LOG10" | "SIN" | "COS" | "TAN" | "ASIN" | "ACOS" | "ATAN" | "COT" | "DEGREES" | "RADIANS" | "YEAR"
        | "MONTH" | "DAY" | "ISDATE" | "ISNUMERIC" => (1, 1),
        "LEFT" | "RIGHT" | "REPLICATE" | "POWER" | "DATEPART" | "DATENAME" | "ATN2" | "TODATETIMEOFFSET"
        | "SWITCHOFFSET" => (2, 2),
        "LOG" | "EOMONTH" | "QUOTENAME" => (1, 2),
        "STR" => (1, 3),
        "CHARINDEX" => (2, 3),
        "PATINDEX" => (2, 2),
        "ROUND" => (2, 3),
        "SUBSTRING" | "REPLACE" | "DATEADD" | "DATEDIFF" | "DATEDIFF_BIG" | "DATEFROMPARTS" => (3, 3),
        "STUFF" => (4, 4),
        "DATETIMEFROMPARTS" => (7, 7),
        "CONCAT" => (2, 254),
        "CONCAT_WS" => (3, 254),
        "CHECKSUM" => (1, 4096),
        _ => return None,
    })
}

/// Characters of a string type (bytes for varchar), or the text length of another type
/// converted to varchar.
fn text_length(t: &SqlType) -> u16 {
    use SqlType as T;
    match *t {
        T::Char(n) | T::VarChar(n) | T::NChar(n) | T::NVarChar(n) | T::Binary(n) | T::VarBinary(n) => n,
        T::Bit => 1,
        T::TinyInt => 3,
        T::SmallInt => 6,
        T::Int => 12,
        T::BigInt => 20,
        T::Decimal { precision, .. } => u16::from(precision) + 2,
        T::Money | T::SmallMoney => 30,
        T::UniqueIdentifier => 36,
        _ => 30,
    }
}

/// `varchar(n)` or `nvarchar(n)` (n capped at 8000/4000; `max` stays `max`).
fn var_string(unicode: bool, n: u32) -> SqlType {
    if n == u32::from(MAX) {
        return if unicode { SqlType::NVarChar(MAX) } else { SqlType::VarChar(MAX) };
    }
    if unicode {
        SqlType::NVarChar(n.clamp(1, u32::from(MAX_NCHARS)) as u16)
    } else {
        SqlType::VarChar(n.clamp(1, u32::from(MAX_BYTES)) as u16)
    }
}

/// The string type a function's text argument works in: strings keep their kind, other
/// types become varchar of their text length.
fn text_type(t: &SqlType) -> SqlType {
    match *t {
        SqlType::VarChar(_) | SqlType::NVarChar(_) => *t,
        SqlType::Char(n) => SqlType::VarChar(n),
        SqlType::NChar(n) => SqlType::NVarChar(n),
        _ => SqlType::VarChar(text_length(t)),
    }
}

fn long_string(unicode: bool, any_max: bool) -> SqlType {
    if any_max {
        var_string(unicode, u32::from(MAX))
    } else if unicode {
        SqlType::NVarChar(MAX_NCHARS)
    } else {
        SqlType::VarChar(MAX_BYTES)
    }
}

fn int_or_big(t: &SqlType) -> SqlType {
    if t.is_max() {
        SqlType::BigInt
    } else {
        SqlType::Int
    }
}

/// Whether a type can be a date argument (temporal, string, or number taken as days since
/// 1900-01-01).
fn date_like(t: &SqlType) -> bool {
    !matches!(family(t), Family::Binary | Family::Guid)
}

fn numeric_result(name: &str, t: &SqlType, i: usize) -> SqlResult<SqlType> {
    match family(t) {
        Family::Int | Family::Decimal | Family::Money | Family::Float => Ok(*t),
        Family::Char | Family::NChar => Ok(SqlType::Float),
        _ => Err(bad_arg(name, t, i)),
    }
}

/// The result type of a call of the built-in `name` (upper-case) with arguments of the
/// given types; `Ok(None)` when `name` is not a function known here. Wrong argument counts
/// fail with 174/189, unusable argument types with 8116.
pub fn function_type(name: &str, args: &[SqlType]) -> SqlResult<Option<SqlType>> {
    use SqlType as T;
    let Some((min, max)) = arity(name) else { return Ok(None) };
    arg_count(name, args.len(), min, max)?;
    let unicode_any = args.iter().any(is_unicode);
    let max_any = args.iter().any(|t| t.is_max());
    let first = args.first().copied().unwrap_or(T::Int);
    let t = match name {
        "LEN" | "DATALENGTH" => int_or_big(&first),
        "CHARINDEX" | "PATINDEX" => int_or_big(&args[1]),
        "SUBSTRING" => match family(&first) {
            Family::Char | Family::NChar => text_type(&first),
            Family::Binary => T::VarBinary(text_length(&first)),
            _ => return Err(bad_arg(name, &first, 0)),
        },
        "LEFT" | "RIGHT" | "LTRIM" | "RTRIM" | "TRIM" | "REVERSE" => {
            if family(&first) == Family::Binary && name != "REVERSE" {
                return Err(bad_arg(name, &first, 0));
            }
            text_type(&first)
        }
        "UPPER" | "LOWER" => match first {
            T::Char(_) | T::NChar(_) => first,
            _ => text_type(&first),
        },
        "REPLACE" | "STUFF" => long_string(unicode_any, max_any),
        "REPLICATE" => long_string(is_unicode(&first), first.is_max()),
        "SPACE" => T::VarChar(MAX_BYTES),
        "QUOTENAME" => T::NVarChar(258),
        "CONCAT" | "CONCAT_WS" => {
            let total: u32 = args.iter().map(|t| u32::from(text_length(t))).sum();
            let total = if max_any { u32::from(MAX) } else { total };
            var_string(unicode_any, total)
        }
        "STR" => T::VarChar(if args.len() == 1 { 10 } else { MAX_BYTES }),
        "CHAR" => T::Char(1),
        "NCHAR" => T::NChar(1),
        "ASCII" | "UNICODE" | "CHECKSUM" | "ISDATE" | "ISNUMERIC" => T::Int,
        "ABS" | "SIGN" => numeric_result(name, &first, 0)?,
        "FLOOR" | "CEILING" => match numeric_result(name, &first, 0)? {
            T::Decimal { precision, .. } => T::Decimal { precision, scale: 0 },
            t => t,
        },
        "ROUND" => numeric_result(name, &first, 0)?,
        "POWER" => match numeric_result(name, &first, 0)? {
            T::Decimal { scale, .. } => T::Decimal { precision: 38, scale },
            T::TinyInt | T::SmallInt => T::Int,
            T::Real => T::Float,
            t => t,
        },
        "SQRT" | "SQUARE" | "EXP" | "LOG" | "LOG10" | "PI" | "RAND" | "SIN" | "COS" | "TAN" | "ASIN" | "ACOS"
        | "ATAN" | "ATN2" | "COT" | "DEGREES" | "RADIANS" => {
            if let Some((i, t)) = args.iter().enumerate().find(|(_, t)| !is_float_arg(t)) {
                return Err(bad_arg(name, t, i));
            }
            T::Float
        }
        "NEWID" => T::UniqueIdentifier,
        "GETDATE" | "GETUTCDATE" | "CURRENT_TIMESTAMP" => T::DateTime,
        "SYSDATETIME" | "SYSUTCDATETIME" => T::DateTime2 { scale: 7 },
        "SYSDATETIMEOFFSET" => T::DateTimeOffset { scale: 7 },
        "TODATETIMEOFFSET" | "SWITCHOFFSET" => {
            let scale = match family(&first) {
                Family::Char | Family::NChar => 7,
                Family::DateTime2 | Family::DateTimeOffset | Family::DateTime | Family::Date => fraction_digits(&first),
                Family::Time if name == "SWITCHOFFSET" => fraction_digits(&first),
                _ => return Err(bad_arg(name, &first, 0)),
            };
            if !matches!(family(&args[1]), Family::Char | Family::NChar | Family::Int | Family::Bit) {
                return Err(bad_arg(name, &args[1], 1));
            }
            T::DateTimeOffset { scale }
        }
        "DATEADD" => {
            if !date_like(&args[2]) {
                return Err(bad_arg(name, &args[2], 2));
            }
            match family(&args[2]) {
                Family::Date | Family::Time | Family::DateTime | Family::DateTime2 | Family::DateTimeOffset => args[2],
                _ => T::DateTime,
            }
        }
        "DATEDIFF" | "DATEDIFF_BIG" => {
            for i in [1, 2] {
                if !date_like(&args[i]) {
                    return Err(bad_arg(name, &args[i], i));
                }
            }
            if name == "DATEDIFF" {
                T::Int
            } else {
                T::BigInt
            }
        }
        "DATEPART" | "YEAR" | "MONTH" | "DAY" => {
            let d = args.last().unwrap_or(&first);
            if !date_like(d) {
                return Err(bad_arg(name, d, args.len() - 1));
            }
            T::Int
        }
        "DATENAME" => T::NVarChar(30),
        "EOMONTH" | "DATEFROMPARTS" => T::Date,
        "DATETIMEFROMPARTS" => T::DateTime,
        _ => return Ok(None),
    };
    Ok(Some(t))
}

fn is_float_arg(t: &SqlType) -> bool {
    matches!(
        family(t),
        Family::Int | Family::Decimal | Family::Money | Family::Float | Family::Char | Family::NChar | Family::Bit
    )
}

// ---- argument access -----------------------------------------------------------------------

/// The text of an argument (converted from other types as SQL Server does implicitly).
fn text(v: &Value, t: &SqlType) -> SqlResult<Option<Arc<str>>> {
    match v {
        Value::Null => Ok(None),
        Value::Str(s) => Ok(Some(s.clone())),
        _ => match cast(v, t, &SqlType::NVarChar(MAX), None)? {
            Value::Str(s) => Ok(Some(s)),
            _ => Ok(None),
        },
    }
}

/// An integer argument (decimals and floats truncated).
fn int(v: &Value, t: &SqlType) -> SqlResult<Option<i64>> {
    match v {
        Value::Null => Ok(None),
        Value::Int(i) => Ok(Some(*i)),
        _ => match cast(v, t, &SqlType::BigInt, None)? {
            Value::Int(i) => Ok(Some(i)),
            _ => Ok(None),
        },
    }
}

fn float(v: &Value, t: &SqlType) -> SqlResult<Option<f64>> {
    match v {
        Value::Null => Ok(None),
        Value::Float(x) => Ok(Some(*x)),
        _ => match cast(v, t, &SqlType::Float, None)? {
            Value::Float(x) => Ok(Some(x)),
            _ => Ok(None),
        },
    }
}

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

/// Error 9812 for an offset TODATETIMEOFFSET or SWITCHOFFSET cannot use.
fn invalid_timezone(function: &str) -> SqlError {
    SqlError::new(
        9812,
        format!("The timezone provided to builtin function {} is invalid.", function.to_ascii_lowercase()),
    )
}

/// A time zone offset argument: `{+|-}hh:mm`, or an integer number of minutes, within
/// -14:00..=+14:00.
fn offset_minutes(v: &Value, t: &SqlType, function: &str) -> SqlResult<Option<i16>> {
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

fn result_string(s: &str, result: &SqlType) -> Value {
    if is_string(result) {
        fit_string(s, result)
    } else {
        Value::str(s)
    }
}

fn invalid_float() -> SqlError {
    SqlError::new(3623, "An invalid floating point operation occurred.")
}

fn float_value(x: f64) -> SqlResult<Value> {
    if x.is_finite() {
        Ok(Value::Float(x))
    } else {
        Err(invalid_float())
    }
}

/// Evaluates the built-in `name` (upper-case) with `args` of types `arg_types`; `result`
/// is what [`function_type`] returned. NULL arguments give NULL except where SQL Server
/// says otherwise (CONCAT, CONCAT_WS, CHECKSUM, ISDATE, ISNUMERIC).
pub fn call_function(
    name: &str,
    args: &[Value],
    arg_types: &[SqlType],
    result: &SqlType,
    ctx: &mut FunctionContext,
) -> SqlResult<Value> {
    let (min, max) = arity(name).ok_or_else(|| {
        SqlError::new(195, format!("'{}' is not a recognized built-in function name.", name.to_ascii_lowercase()))
    })?;
    arg_count(name, args.len(), min, max)?;
    if arg_types.len() != args.len() {
        return Err(SqlError::new(8116, format!("{name}: argument types do not match the arguments.")));
    }
    let call = Call { name, args, types: arg_types, result, datefirst: ctx.datefirst };
    match name {
        "LEN" | "DATALENGTH" | "SUBSTRING" | "LEFT" | "RIGHT" | "UPPER" | "LOWER" | "LTRIM" | "RTRIM" | "TRIM"
        | "REPLACE" | "REPLICATE" | "REVERSE" | "CHARINDEX" | "PATINDEX" | "CONCAT" | "CONCAT_WS" | "STR" | "SPACE"
        | "CHAR" | "ASCII" | "NCHAR" | "UNICODE" | "STUFF" | "QUOTENAME" => call.string(),
        "ABS" | "ROUND" | "FLOOR" | "CEILING" | "POWER" | "SQRT" | "SQUARE" | "SIGN" | "EXP" | "LOG" | "LOG10"
        | "PI" | "SIN" | "COS" | "TAN" | "ASIN" | "ACOS" | "ATAN" | "ATN2" | "COT" | "DEGREES" | "RADIANS" => {
            call.math()
        }
        "RAND" => rand(&call, ctx),
        "NEWID" => Ok(Value::Guid(new_guid(&mut ctx.rng))),
        "CHECKSUM" => call.checksum(),
        "ISNUMERIC" => call.isnumeric(),
        "ISDATE" => call.isdate(),
        "GETDATE" | "CURRENT_TIMESTAMP" => {
            let (d, t) = ctx.now_local();
            let (d, t) = round_datetime(d, t);
            Ok(Value::DateTime { days: d, ticks: t })
        }
        "GETUTCDATE" => {
            let (d, t) = round_datetime(ctx.now_utc.0, ctx.now_utc.1);
            Ok(Value::DateTime { days: d, ticks: t })
        }
        "SYSDATETIME" => {
            let (days, ticks) = ctx.now_local();
            Ok(Value::DateTime { days, ticks })
        }
        "SYSUTCDATETIME" => Ok(Value::DateTime { days: ctx.now_utc.0, ticks: ctx.now_utc.1 }),
        "SYSDATETIMEOFFSET" => Ok(Value::DateTimeOffset {
            days: ctx.now_utc.0,
            ticks: ctx.now_utc.1,
            offset: ctx.utc_offset_minutes.clamp(MIN_OFFSET_MINUTES.into(), MAX_OFFSET_MINUTES.into()) as i16,
        }),
        _ => call.date(),
    }
}

/// One function call being evaluated.
struct Call<'a> {
    name: &'a str,
    args: &'a [Value],
    types: &'a [SqlType],
    result: &'a SqlType,
    datefirst: u8,
}

macro_rules! or_null {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return Ok(Value::Null),
        }
    };
}

impl Call<'_> {
    fn lower(&self) -> String {
        self.name.to_ascii_lowercase()
    }

    fn text(&self, i: usize) -> SqlResult<Option<Arc<str>>> {
        text(&self.args[i], &self.types[i])
    }

    fn int(&self, i: usize) -> SqlResult<Option<i64>> {
        int(&self.args[i], &self.types[i])
    }

    fn float(&self, i: usize) -> SqlResult<Option<f64>> {
        float(&self.args[i], &self.types[i])
    }

    fn string(&self) -> SqlResult<Value> {
        match self.name {
            "LEN" => {
                let s = or_null!(self.text(0)?);
                Ok(Value::Int(trim_trailing_spaces(&s).chars().count() as i64))
            }
            "DATALENGTH" => Ok(datalength(&self.args[0], &self.types[0])),
            "SUBSTRING" => self.substring(),
            "LEFT" | "RIGHT" => {
                let s = or_null!(self.text(0)?);
                let n = or_null!(self.int(1)?);
                if n < 0 {
                    return Err(SqlError::new(
                        536,
                        format!("Invalid length parameter passed to the {} function.", self.lower()),
                    ));
                }
                let chars: Vec<char> = s.chars().collect();
                let n = (n as usize).min(chars.len());
                let part: String = if self.name == "LEFT" {
                    chars[..n].iter().collect()
                } else {
                    chars[chars.len() - n..].iter().collect()
                };
                Ok(result_string(&part, self.result))
            }
            "UPPER" => Ok(result_string(&or_null!(self.text(0)?).to_uppercase(), self.result)),
            "LOWER" => Ok(result_string(&or_null!(self.text(0)?).to_lowercase(), self.result)),
            "LTRIM" => Ok(result_string(or_null!(self.text(0)?).trim_start_matches(' '), self.result)),
            "RTRIM" => Ok(result_string(or_null!(self.text(0)?).trim_end_matches(' '), self.result)),
            "TRIM" => Ok(result_string(or_null!(self.text(0)?).trim_matches(' '), self.result)),
            "REVERSE" => match &self.args[0] {
                Value::Binary(b) => Ok(Value::Binary(b.iter().rev().copied().collect())),
                _ => Ok(result_string(&or_null!(self.text(0)?).chars().rev().collect::<String>(), self.result)),
            },
            "REPLACE" => {
                let (s, find, repl) = (or_null!(self.text(0)?), or_null!(self.text(1)?), or_null!(self.text(2)?));
                Ok(result_string(&replace_ci(&s, &find, &repl), self.result))
            }
            "REPLICATE" => {
                let s = or_null!(self.text(0)?);
                let n = or_null!(self.int(1)?);
                if n < 0 {
                    return Ok(Value::Null);
                }
                let limit = if self.result.is_max() { 1 << 30 } else { 8000 };
                let count = (n as usize).min(limit / s.chars().count().max(1) + 1);
                Ok(result_string(&s.repeat(count), self.result))
            }
            "SPACE" => {
                let n = or_null!(self.int(0)?);
                if n < 0 {
                    return Ok(Value::Null);
                }
                Ok(result_string(&" ".repeat((n as usize).min(8000)), self.result))
            }
            "CHARINDEX" => self.charindex(),
            "PATINDEX" => {
                let (pattern, s) = (or_null!(self.text(0)?), or_null!(self.text(1)?));
                Ok(Value::Int(patindex(&pattern, &s) as i64))
            }
            "CONCAT" => {
                let mut out = String::new();
                for i in 0..self.args.len() {
                    out.push_str(&self.text(i)?.unwrap_or_default());
                }
                Ok(result_string(&out, self.result))
            }
            "CONCAT_WS" => {
                let sep = self.text(0)?.unwrap_or_default();
                let parts: Vec<Arc<str>> = (1..self.args.len())
                    .map(|i| self.text(i))
                    .collect::<SqlResult<Vec<_>>>()?
                    .into_iter()
                    .flatten()
                    .collect();
                let joined = parts.iter().map(|p| &**p).collect::<Vec<&str>>().join(&sep);
                Ok(result_string(&joined, self.result))
            }
            "STR" => self.str(),
            "CHAR" => {
                let n = or_null!(self.int(0)?);
                let Ok(b) = u8::try_from(n) else { return Ok(Value::Null) };
                Ok(Value::str(&decode_cp1252(&[b])))
            }
            "NCHAR" => {
                let n = or_null!(self.int(0)?);
                let c = u32::try_from(n).ok().and_then(char::from_u32);
                Ok(c.map_or(Value::Null, |c| Value::str(c.encode_utf8(&mut [0; 4]))))
            }
            "ASCII" => {
                let s = or_null!(self.text(0)?);
                let c = or_null!(s.chars().next());
                Ok(Value::Int(i64::from(cp1252_byte(c).unwrap_or(b'?'))))
            }
            "UNICODE" => {
                let s = or_null!(self.text(0)?);
                let c = or_null!(s.chars().next());
                Ok(Value::Int(i64::from(u32::from(c))))
            }
            "STUFF" => self.stuff(),
            _ => self.quotename(),
        }
    }

    fn substring(&self) -> SqlResult<Value> {
        let start = or_null!(self.int(1)?);
        let len = or_null!(self.int(2)?);
        if len < 0 {
            return Err(SqlError::new(537, "Invalid length parameter passed to the LEFT or SUBSTRING function."));
        }
        // characters start..start+len (1-based) intersected with the string
        let from = start.max(1);
        let to = start.saturating_add(len).max(from);
        let (from, to) = ((from - 1) as usize, (to - 1) as usize);
        match &self.args[0] {
            Value::Null => Ok(Value::Null),
            Value::Binary(b) => {
                let (from, to) = (from.min(b.len()), to.min(b.len()));
                Ok(Value::Binary(Arc::from(&b[from..to])))
            }
            _ => {
                let s = or_null!(self.text(0)?);
                let part: String = s.chars().skip(from).take(to - from).collect();
                Ok(result_string(&part, self.result))
            }
        }
    }

    fn charindex(&self) -> SqlResult<Value> {
        let (find, s) = (or_null!(self.text(0)?), or_null!(self.text(1)?));
        let start = match self.args.get(2) {
            Some(_) => or_null!(self.int(2)?),
            None => 1,
        };
        let skip = (start.max(1) - 1) as usize;
        let from_byte = s.char_indices().nth(skip).map_or(s.len(), |(i, _)| i);
        let pos = find_ci(&s[from_byte..], &find, 0).map_or(0, |b| skip + s[from_byte..][..b].chars().count() + 1);
        Ok(Value::Int(pos as i64))
    }

    fn str(&self) -> SqlResult<Value> {
        let x = or_null!(self.float(0)?);
        let len = match self.args.get(1) {
            Some(_) => or_null!(self.int(1)?),
            None => 10,
        };
        let dec = match self.args.get(2) {
            Some(_) => or_null!(self.int(2)?),
            None => 0,
        };
        if !(1..=8000).contains(&len) || dec < 0 {
            return Ok(Value::Null);
        }
        Ok(Value::str(&str_text(x, len as usize, dec.min(16) as usize)))
    }

    fn stuff(&self) -> SqlResult<Value> {
        let s = or_null!(self.text(0)?);
        let start = or_null!(self.int(1)?);
        let len = or_null!(self.int(2)?);
        let repl = self.text(3)?.unwrap_or_default();
        let chars: Vec<char> = s.chars().collect();
        if start < 1 || start as usize > chars.len() || len < 0 {
            return Ok(Value::Null);
        }
        let from = start as usize - 1;
        let to = from.saturating_add(len as usize).min(chars.len());
        let out: String =
            chars[..from].iter().chain(repl.chars().collect::<Vec<_>>().iter()).chain(chars[to..].iter()).collect();
        Ok(result_string(&out, self.result))
    }

    fn quotename(&self) -> SqlResult<Value> {
        let s = or_null!(self.text(0)?);
        let q = match self.args.get(1) {
            Some(_) => or_null!(self.text(1)?).chars().next().unwrap_or('['),
            None => '[',
        };
        let (open, close) = match q {
            '[' | ']' => ('[', ']'),
            '\'' => ('\'', '\''),
            '"' => ('"', '"'),
            '(' | ')' => ('(', ')'),
            '<' | '>' => ('<', '>'),
            '{' | '}' => ('{', '}'),
            '`' => ('`', '`'),
            _ => return Ok(Value::Null),
        };
        if s.chars().count() > 128 {
            return Ok(Value::Null);
        }
        let doubled = s.replace(close, &format!("{close}{close}"));
        Ok(Value::str(&format!("{open}{doubled}{close}")))
    }

    fn math(&self) -> SqlResult<Value> {
        if self.name == "PI" {
            return Ok(Value::Float(std::f64::consts::PI));
        }
        if self.args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        match self.name {
            "ABS" | "SIGN" | "FLOOR" | "CEILING" | "ROUND" | "POWER" => self.exact_math(),
            _ => {
                let x = or_null!(self.float(0)?);
                let y = if self.args.len() > 1 { self.float(1)? } else { None };
                let r = match (self.name, y) {
                    ("SQRT", _) if x < 0.0 => return Err(invalid_float()),
                    ("SQRT", _) => x.sqrt(),
                    ("SQUARE", _) => x * x,
                    ("EXP", _) => x.exp(),
                    ("LOG" | "LOG10", _) if x <= 0.0 => return Err(invalid_float()),
                    ("LOG", Some(b)) if b <= 0.0 || b == 1.0 => return Err(invalid_float()),
                    ("LOG", Some(b)) => x.ln() / b.ln(),
                    ("LOG", None) => x.ln(),
                    ("LOG10", _) => x.log10(),
                    ("SIN", _) => x.sin(),
                    ("COS", _) => x.cos(),
                    ("TAN", _) => x.tan(),
                    ("ASIN", _) if x.abs() > 1.0 => return Err(invalid_float()),
                    ("ASIN", _) => x.asin(),
                    ("ACOS", _) if x.abs() > 1.0 => return Err(invalid_float()),
                    ("ACOS", _) => x.acos(),
                    ("ATAN", _) => x.atan(),
                    ("ATN2", Some(y)) => x.atan2(y),
                    ("COT", _) => 1.0 / x.tan(),
                    ("DEGREES", _) => x.to_degrees(),
                    ("RADIANS", _) => x.to_radians(),
                    _ => return Err(invalid_float()),
                };
                float_value(r)
            }
        }
    }

    /// ABS, SIGN, FLOOR, CEILING, ROUND and POWER, which keep exact types exact.
    fn exact_math(&self) -> SqlResult<Value> {
        let result = self.result;
        match family(result) {
            Family::Float => {
                let x = or_null!(self.float(0)?);
                let r = match self.name {
                    "ABS" => x.abs(),
                    "SIGN" => {
                        if x > 0.0 {
                            1.0
                        } else if x < 0.0 {
                            -1.0
                        } else {
                            0.0
                        }
                    }
                    "FLOOR" => x.floor(),
                    "CEILING" => x.ceil(),
                    "ROUND" => {
                        let n = or_null!(self.int(1)?);
                        let truncate = self.args.get(2).is_some_and(|v| !matches!(v, Value::Int(0) | Value::Null));
                        round_float(x, n, truncate)
                    }
                    _ => x.powf(or_null!(self.float(1)?)),
                };
                let r = if matches!(result, SqlType::Real) { f64::from(r as f32) } else { r };
                float_value(r)
            }
            Family::Int => {
                let x = i128::from(or_null!(self.int(0)?));
                let r = match self.name {
                    "ABS" => x.abs(),
                    "SIGN" => x.signum(),
                    "FLOOR" | "CEILING" => x,
                    "ROUND" => {
                        let n = or_null!(self.int(1)?);
                        let truncate = self.args.get(2).is_some_and(|v| !matches!(v, Value::Int(0) | Value::Null));
                        if n >= 0 {
                            x
                        } else {
                            let r = num::rescale_trunc(x, 0, 0).unwrap_or(x);
                            let digits = n.unsigned_abs().min(38) as u8;
                            let rounded = if truncate {
                                num::rescale_trunc(r, digits, 0)
                            } else {
                                num::rescale_round(r, digits, 0)
                            };
                            rounded.and_then(|q| q.checked_mul(num::pow10(digits)?)).unwrap_or(0)
                        }
                    }
                    _ => {
                        let y = or_null!(self.float(1)?);
                        let p = (x as f64).powf(y);
                        if !p.is_finite() {
                            return Err(invalid_float());
                        }
                        if p.abs() > 1e19 {
                            return check_int(i128::MAX, result);
                        }
                        p.trunc() as i128
                    }
                };
                check_int(r, result)
            }
            Family::Decimal | Family::Money => self.decimal_math(),
            _ => Err(bad_arg(self.name, &self.types[0], 0)),
        }
    }

    fn decimal_math(&self) -> SqlResult<Value> {
        let arg = match &self.args[0] {
            Value::Decimal { .. } => self.args[0].clone(),
            other => cast(other, &self.types[0], self.result, None)?,
        };
        let Value::Decimal { value: x, scale: sx } = arg else { return Ok(Value::Null) };
        let (precision, scale) = match *self.result {
            SqlType::Decimal { precision, scale } => (precision, scale),
            SqlType::SmallMoney => (10, 4),
            _ => (19, 4),
        };
        let unit = num::pow10(sx).unwrap_or(1);
        let r = match self.name {
            "ABS" => x.abs(),
            "SIGN" => x.signum() * unit,
            "FLOOR" => x.div_euclid(unit) * unit,
            "CEILING" => -((-x).div_euclid(unit)) * unit,
            "ROUND" => {
                let n = or_null!(self.int(1)?);
                let truncate = self.args.get(2).is_some_and(|v| !matches!(v, Value::Int(0) | Value::Null));
                round_decimal(x, sx, n, truncate).ok_or_else(|| overflow(self.result))?
            }
            _ => {
                let base = num::decimal_to_f64(x, sx);
                let p = base.powf(or_null!(self.float(1)?));
                if !p.is_finite() {
                    return Err(invalid_float());
                }
                f64_to_decimal(p, sx).ok_or_else(|| overflow(self.result))?
            }
        };
        let value = num::rescale_round(r, sx, scale).ok_or_else(|| overflow(self.result))?;
        let fits = match self.result {
            SqlType::Money => i64::try_from(value).is_ok(),
            SqlType::SmallMoney => i32::try_from(value).is_ok(),
            _ => fits_precision(value, precision),
        };
        if !fits {
            return Err(overflow(self.result));
        }
        Ok(Value::Decimal { value, scale })
    }

    fn checksum(&self) -> SqlResult<Value> {
        // FNV-1a over each argument's collation key, so that CHECKSUM('a') = CHECKSUM('A')
        let mut h: u32 = 0x811C_9DC5;
        for (v, t) in self.args.iter().zip(self.types) {
            let mut key = KeyBuf::new();
            if encode_key(v, t, false, &mut key).is_err() {
                key.clear();
            }
            for &b in key.as_bytes() {
                h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
            }
        }
        Ok(Value::Int(i64::from(h as i32)))
    }

    fn isnumeric(&self) -> SqlResult<Value> {
        let ok = match (&self.args[0], family(&self.types[0])) {
            (Value::Null, _) => false,
            (_, Family::Int | Family::Decimal | Family::Money | Family::Float | Family::Bit) => true,
            (Value::Str(s), _) => is_numeric_text(s),
            _ => false,
        };
        Ok(Value::Int(i64::from(ok)))
    }

    fn isdate(&self) -> SqlResult<Value> {
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
            other => Err(SqlError::new(155, format!("'{other:?}' is not a recognized datepart option."))),
        }
    }

    fn unsupported(&self, part: DatePart, t: &SqlType) -> SqlError {
        SqlError::new(
            9810,
            format!(
                "The datepart {} is not supported by date function {} for data type {}.",
                part.name(),
                self.lower(),
                base_type_name(t)
            ),
        )
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

    fn date(&self) -> SqlResult<Value> {
        match self.name {
            "DATEADD" => self.dateadd(),
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
                    return Err(SqlError::new(517, "Adding a value to a 'date' column caused an overflow."));
                }
                let y = y as i32;
                Ok(Value::Date(days_from_civil(y, m, days_in_month(y, m))))
            }
            "DATEFROMPARTS" => {
                let (y, m, d) = (or_null!(self.int(0)?), or_null!(self.int(1)?), or_null!(self.int(2)?));
                let days = valid_date(y, m, d).ok_or_else(|| {
                    SqlError::new(
                        289,
                        "Cannot construct data type date, some of the arguments have values which are not valid.",
                    )
                })?;
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
            _ => Err(SqlError::new(195, format!("'{}' is not a recognized built-in function name.", self.lower()))),
        }
    }

    /// Argument `i` converted to `to` (None for NULL).
    fn arg_as(&self, i: usize, to: &SqlType) -> SqlResult<Option<Value>> {
        match cast(&self.args[i], &self.types[i], to, None)? {
            Value::Null => Ok(None),
            v => Ok(Some(v)),
        }
    }

    /// The datetimeoffset of a UTC instant and an offset, at the result's scale (517 when
    /// its local time leaves the date range).
    fn with_offset(&self, (days, ticks): (i32, u64), offset: i16) -> SqlResult<Value> {
        let overflow = || SqlError::new(517, "Adding a value to a 'datetimeoffset' column caused an overflow.");
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
    fn tzoffset(&self) -> SqlResult<Value> {
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

    fn datetimefromparts(&self) -> SqlResult<Value> {
        let mut p = [0i64; 7];
        for (i, slot) in p.iter_mut().enumerate() {
            *slot = or_null!(self.int(i)?);
        }
        let bad = || {
            SqlError::new(
                289,
                "Cannot construct data type datetime, some of the arguments have values which are not valid.",
            )
        };
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
        let overflow =
            || SqlError::new(517, format!("Adding a value to a '{}' column caused an overflow.", base_type_name(&t)));
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
        check_int(diff, &result).map_err(|_| {
            SqlError::new(
                535,
                format!(
                    "The {} function resulted in an overflow. The number of dateparts separating two date/time instances is too large. Try to use {} with a less precise datepart.",
                    self.lower(),
                    self.lower()
                ),
            )
        })
    }
}

fn overflow(t: &SqlType) -> SqlError {
    let name = if matches!(t, SqlType::Decimal { .. }) { "numeric" } else { base_type_name(t) };
    SqlError::new(8115, format!("Arithmetic overflow error converting expression to data type {name}."))
}

fn rand(call: &Call<'_>, ctx: &mut FunctionContext) -> SqlResult<Value> {
    if let Some(v) = call.args.first() {
        if let Some(seed) = int(v, &call.types[0])? {
            ctx.rng = SmallRng::seed_from_u64(seed as u64);
        }
    }
    Ok(Value::Float(ctx.rng.random::<f64>()))
}

/// A random (version 4) uniqueidentifier, in SQL Server's byte order.
fn new_guid(rng: &mut SmallRng) -> [u8; 16] {
    let mut g = [0u8; 16];
    rng.fill_bytes(&mut g);
    g[7] = 0x40 | (g[7] & 0x0F); // the version nibble of the third group (stored little-endian)
    g[8] = 0x80 | (g[8] & 0x3F);
    g
}

/// DATALENGTH: bytes of the value as stored (varchar 1 per character, nvarchar 2 per
/// UTF-16 unit).
fn datalength(v: &Value, t: &SqlType) -> Value {
    let n = match v {
        Value::Null => return Value::Null,
        Value::Str(s) if is_unicode(t) => 2 * s.encode_utf16().count(),
        Value::Str(s) => s.chars().count(),
        Value::Binary(b) => b.len(),
        _ => t.fixed_size().unwrap_or(8),
    };
    Value::Int(n as i64)
}

/// REPLACE with the collation's case-insensitive matching.
fn replace_ci(s: &str, find: &str, repl: &str) -> String {
    if find.is_empty() {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = find_ci(rest, find, 0) {
        out.push_str(&rest[..i]);
        out.push_str(repl);
        let matched: usize = rest[i..].chars().take(find.chars().count()).map(char::len_utf8).sum();
        rest = &rest[i + matched..];
    }
    out.push_str(rest);
    out
}

/// PATINDEX: 1-based position of the first match of a LIKE pattern, 0 if none.
fn patindex(pattern: &str, s: &str) -> usize {
    let (anchored, body) = match pattern.strip_prefix('%') {
        Some(rest) => (false, rest),
        None => (true, pattern),
    };
    for (n, (i, _)) in s.char_indices().enumerate() {
        if like(&s[i..], body, None) {
            return n + 1;
        }
        if anchored {
            break;
        }
    }
    0
}

/// STR's text: right-aligned in `len` characters with `dec` decimals, fewer decimals when
/// they do not fit, `*`s when the integer part does not.
fn str_text(x: f64, len: usize, dec: usize) -> String {
    for d in (0..=dec).rev() {
        let text = match f64_to_decimal(x, d as u8) {
            Some(v) => num::format_decimal(v, d as u8),
            None => format!("{x:.d$}"),
        };
        if text.len() <= len {
            return format!("{text:>len$}");
        }
    }
    "*".repeat(len)
}

fn is_numeric_text(s: &str) -> bool {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    if t.is_empty() {
        return false;
    }
    let money: String = t.chars().filter(|c| !matches!(c, ',' | '$' | '€' | '£' | '¥')).collect();
    let body = money.trim_start_matches(['+', '-']);
    if body.is_empty() || body == "." || num::parse_decimal_text(&money).is_some() {
        return true;
    }
    t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && t.trim_end_matches(['e', 'E']).parse::<f64>().is_ok_and(f64::is_finite)
}

fn round_float(x: f64, n: i64, truncate: bool) -> f64 {
    let n = n.clamp(-308, 308) as i32;
    let p = 10f64.powi(n);
    let y = x * p;
    let r = if truncate { y.trunc() } else { y.round() };
    if !r.is_finite() || !p.is_finite() || p == 0.0 {
        return x;
    }
    r / p
}

/// ROUND of a scaled decimal to `n` digits (negative: left of the point), keeping its
/// scale.
fn round_decimal(x: i128, scale: u8, n: i64, truncate: bool) -> Option<i128> {
    if n >= i64::from(scale) {
        return Some(x);
    }
    let drop = i64::from(scale).saturating_sub(n).min(76) as u8;
    if drop > 38 {
        return Some(0);
    }
    let q = if truncate { num::rescale_trunc(x, drop, 0)? } else { num::rescale_round(x, drop, 0)? };
    q.checked_mul(num::pow10(drop)?)
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

/// DATEPART's number for a date/time (weeks start on Sunday, us_english).
fn datepart_value(part: DatePart, days: i32, ticks: u64, t: &SqlType) -> i64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use SqlType as T;

    fn ctx() -> FunctionContext {
        let mut c = FunctionContext::new();
        c.rng = SmallRng::seed_from_u64(1);
        c
    }

    /// Calls `name` with literal-typed arguments (strings varchar, ints int, floats float).
    fn call(name: &str, args: &[Value]) -> SqlResult<Value> {
        let types: Vec<SqlType> = args
            .iter()
            .map(|v| match v {
                Value::Str(s) => T::VarChar(s.len().max(1) as u16),
                Value::Int(_) | Value::Null => T::Int,
                Value::Float(_) => T::Float,
                Value::Decimal { value, scale } => T::Decimal {
                    precision: (value.unsigned_abs().to_string().len() as u8).max(*scale).max(1),
                    scale: *scale,
                },
                Value::Date(_) => T::Date,
                Value::Time(_) => T::Time { scale: 7 },
                Value::DateTime { .. } => T::DateTime2 { scale: 7 },
                Value::DateTimeOffset { .. } => T::DateTimeOffset { scale: 7 },
                Value::Binary(b) => T::VarBinary(b.len() as u16),
                Value::Bit(_) => T::Bit,
                Value::Guid(_) => T::UniqueIdentifier,
            })
            .collect();
        let result = function_type(name, &types)?.expect("known function");
        call_function(name, args, &types, &result, &mut ctx())
    }

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    fn i(x: i64) -> Value {
        Value::Int(x)
    }

    fn ok(name: &str, args: &[Value]) -> Value {
        call(name, args).unwrap()
    }

    fn dt(text: &str) -> Value {
        cast(&s(text), &T::VarChar(30), &T::DateTime2 { scale: 7 }, None).unwrap()
    }

    #[test]
    fn types_and_arity() {
        assert_eq!(function_type("LEN", &[T::VarChar(10)]).unwrap(), Some(T::Int));
        assert_eq!(function_type("LEN", &[T::VarChar(MAX)]).unwrap(), Some(T::BigInt));
        assert_eq!(function_type("NOPE", &[]).unwrap(), None);
        assert_eq!(function_type("SUBSTRING", &[T::Char(10), T::Int, T::Int]).unwrap(), Some(T::VarChar(10)));
        assert_eq!(
            function_type("REPLACE", &[T::VarChar(10), T::VarChar(1), T::NVarChar(1)]).unwrap(),
            Some(T::NVarChar(4000))
        );
        assert_eq!(function_type("CONCAT", &[T::VarChar(10), T::Int]).unwrap(), Some(T::VarChar(22)));
        assert_eq!(
            function_type("ROUND", &[T::Decimal { precision: 5, scale: 2 }, T::Int]).unwrap(),
            Some(T::Decimal { precision: 5, scale: 2 })
        );
        assert_eq!(
            function_type("POWER", &[T::Decimal { precision: 5, scale: 2 }, T::Int]).unwrap(),
            Some(T::Decimal { precision: 38, scale: 2 })
        );
        assert_eq!(
            function_type("FLOOR", &[T::Decimal { precision: 5, scale: 2 }]).unwrap(),
            Some(T::Decimal { precision: 5, scale: 0 })
        );
        assert_eq!(function_type("DATEADD", &[T::VarChar(3), T::Int, T::VarChar(10)]).unwrap(), Some(T::DateTime));
        assert_eq!(function_type("DATEADD", &[T::VarChar(3), T::Int, T::Date]).unwrap(), Some(T::Date));
        assert_eq!(function_type("SYSDATETIME", &[]).unwrap(), Some(T::DateTime2 { scale: 7 }));
        let e = function_type("LEN", &[]).unwrap_err();
        assert_eq!((e.number, e.message.as_str()), (174, "The len function requires 1 argument(s)."));
        let e = function_type("CHARINDEX", &[T::Int]).unwrap_err();
        assert_eq!((e.number, e.message.as_str()), (189, "The charindex function requires 2 to 3 arguments."));
        let e = function_type("SUBSTRING", &[T::Int, T::Int, T::Int]).unwrap_err();
        assert_eq!(
            (e.number, e.message.as_str()),
            (8116, "Argument data type int is invalid for argument 1 of substring function.")
        );
        let e = function_type("DATEADD", &[T::VarChar(3), T::Int, T::UniqueIdentifier]).unwrap_err();
        assert_eq!(e.message, "Argument data type uniqueidentifier is invalid for argument 3 of dateadd function.");
    }

    #[test]
    fn string_functions() {
        assert_eq!(ok("LEN", &[s("abc  ")]), i(3));
        assert_eq!(ok("LEN", &[i(12345)]), i(5));
        assert_eq!(ok("LEN", &[Value::Null]), Value::Null);
        assert_eq!(ok("DATALENGTH", &[s("abc  ")]), i(5));
        assert_eq!(call_function("DATALENGTH", &[s("ab")], &[T::NVarChar(2)], &T::Int, &mut ctx()).unwrap(), i(4));
        assert_eq!(ok("DATALENGTH", &[i(1)]), i(4));
        assert_eq!(ok("SUBSTRING", &[s("abcdef"), i(2), i(3)]), s("bcd"));
        assert_eq!(ok("SUBSTRING", &[s("abcdef"), i(0), i(3)]), s("ab"));
        assert_eq!(ok("SUBSTRING", &[s("abc"), i(5), i(3)]), s(""));
        assert_eq!(call("SUBSTRING", &[s("abc"), i(1), i(-1)]).unwrap_err().number, 537);
        assert_eq!(ok("LEFT", &[s("abcdef"), i(2)]), s("ab"));
        assert_eq!(ok("RIGHT", &[s("abcdef"), i(2)]), s("ef"));
        assert_eq!(ok("RIGHT", &[s("ab"), i(5)]), s("ab"));
        assert_eq!(ok("UPPER", &[s("abé")]), s("ABÉ"));
        assert_eq!(ok("LOWER", &[s("ABC")]), s("abc"));
        assert_eq!(ok("LTRIM", &[s("  a ")]), s("a "));
        assert_eq!(ok("RTRIM", &[s("  a ")]), s("  a"));
        assert_eq!(ok("TRIM", &[s("  a ")]), s("a"));
        assert_eq!(ok("REPLACE", &[s("Hello hello"), s("HELLO"), s("x")]), s("x x"));
        assert_eq!(ok("REPLACE", &[s("abc"), s(""), s("x")]), s("abc"));
        assert_eq!(ok("REPLICATE", &[s("ab"), i(3)]), s("ababab"));
        assert_eq!(ok("REPLICATE", &[s("ab"), i(-1)]), Value::Null);
        assert_eq!(ok("REVERSE", &[s("abc")]), s("cba"));
        assert_eq!(ok("CHARINDEX", &[s("B"), s("abcb")]), i(2));
        assert_eq!(ok("CHARINDEX", &[s("b"), s("abcb"), i(3)]), i(4));
        assert_eq!(ok("CHARINDEX", &[s("z"), s("abcb")]), i(0));
        assert_eq!(ok("PATINDEX", &[s("%c%"), s("abcb")]), i(3));
        assert_eq!(ok("PATINDEX", &[s("%[0-9]%"), s("ab1")]), i(3));
        assert_eq!(ok("PATINDEX", &[s("b%"), s("abc")]), i(0));
        assert_eq!(ok("CONCAT", &[s("a"), Value::Null, i(1)]), s("a1"));
        assert_eq!(ok("CONCAT_WS", &[s(","), s("a"), Value::Null, s("b")]), s("a,b"));
        assert_eq!(ok("STR", &[Value::Float(123.45), i(6), i(1)]), s(" 123.5"));
        assert_eq!(ok("STR", &[Value::Float(123.0)]), s("       123"));
        assert_eq!(ok("STR", &[Value::Float(1234567.0), i(5)]), s("*****"));
        assert_eq!(ok("SPACE", &[i(3)]), s("   "));
        assert_eq!(ok("CHAR", &[i(65)]), s("A"));
        assert_eq!(ok("CHAR", &[i(128)]), s("€"));
        assert_eq!(ok("CHAR", &[i(300)]), Value::Null);
        assert_eq!(ok("ASCII", &[s("A")]), i(65));
        assert_eq!(ok("NCHAR", &[i(233)]), s("é"));
        assert_eq!(ok("UNICODE", &[s("é")]), i(233));
        assert_eq!(ok("STUFF", &[s("abcdef"), i(2), i(3), s("XY")]), s("aXYef"));
        assert_eq!(ok("STUFF", &[s("abc"), i(5), i(1), s("X")]), Value::Null);
        assert_eq!(ok("QUOTENAME", &[s("a]b")]), s("[a]]b]"));
    }

    #[test]
    fn math_functions() {
        let dec = |value, scale| Value::Decimal { value, scale };
        assert_eq!(ok("ABS", &[i(-5)]), i(5));
        assert_eq!(call("ABS", &[i(i32::MIN.into())]).unwrap_err().number, 8115);
        assert_eq!(ok("ABS", &[dec(-150, 2)]), dec(150, 2));
        assert_eq!(ok("ROUND", &[dec(12345, 3), i(2)]), dec(12350, 3));
        assert_eq!(ok("ROUND", &[dec(12345, 3), i(2), i(1)]), dec(12340, 3));
        assert_eq!(ok("ROUND", &[dec(74858, 2), i(-2)]), dec(70000, 2));
        // ROUND(748.58, -3) overflows decimal(5,2) (documented)
        assert_eq!(call("ROUND", &[dec(74858, 2), i(-3)]).unwrap_err().number, 8115);
        assert_eq!(ok("ROUND", &[i(1234), i(-2)]), i(1200));
        assert_eq!(ok("ROUND", &[Value::Float(2.5), i(0)]), Value::Float(3.0));
        assert_eq!(ok("FLOOR", &[dec(-15, 1)]), dec(-2, 0));
        assert_eq!(ok("CEILING", &[dec(-15, 1)]), dec(-1, 0));
        assert_eq!(ok("CEILING", &[dec(11, 1)]), dec(2, 0));
        assert_eq!(ok("FLOOR", &[Value::Float(-1.5)]), Value::Float(-2.0));
        assert_eq!(ok("SIGN", &[i(-7)]), i(-1));
        assert_eq!(ok("POWER", &[i(2), i(10)]), i(1024));
        assert_eq!(ok("POWER", &[i(2), i(-1)]), i(0));
        assert_eq!(ok("POWER", &[dec(20, 1), i(-1)]), dec(5, 1));
        assert_eq!(ok("SQRT", &[i(16)]), Value::Float(4.0));
        let e = call("SQRT", &[i(-1)]).unwrap_err();
        assert_eq!((e.number, e.message.as_str()), (3623, "An invalid floating point operation occurred."));
        assert_eq!(ok("SQUARE", &[i(3)]), Value::Float(9.0));
        assert_eq!(ok("LOG10", &[i(100)]), Value::Float(2.0));
        assert_eq!(ok("LOG", &[i(8), i(2)]), Value::Float(3.0));
        assert_eq!(ok("PI", &[]), Value::Float(std::f64::consts::PI));
        assert_eq!(ok("EXP", &[i(0)]), Value::Float(1.0));
    }

    #[test]
    fn rand_newid_checksum() {
        let mut c = ctx();
        let r1 = call_function("RAND", &[i(42)], &[T::Int], &T::Float, &mut c).unwrap();
        let r2 = call_function("RAND", &[i(42)], &[T::Int], &T::Float, &mut c).unwrap();
        assert_eq!(r1, r2);
        let Value::Float(x) = call_function("RAND", &[], &[], &T::Float, &mut c).unwrap() else { panic!() };
        assert!((0.0..1.0).contains(&x));
        let Value::Guid(g) = call_function("NEWID", &[], &[], &T::UniqueIdentifier, &mut c).unwrap() else { panic!() };
        assert_eq!(super::super::convert::guid_text(&g).as_bytes()[14], b'4');
        assert_eq!(ok("CHECKSUM", &[s("a")]), ok("CHECKSUM", &[s("A")]));
        assert_ne!(ok("CHECKSUM", &[s("a")]), ok("CHECKSUM", &[s("b")]));
        assert_eq!(ok("ISNUMERIC", &[s("12.5")]), i(1));
        assert_eq!(ok("ISNUMERIC", &[s("$")]), i(1));
        assert_eq!(ok("ISNUMERIC", &[s("1e5")]), i(1));
        assert_eq!(ok("ISNUMERIC", &[s("abc")]), i(0));
        assert_eq!(ok("ISNUMERIC", &[s("")]), i(0));
        assert_eq!(ok("ISDATE", &[s("2024-01-31")]), i(1));
        assert_eq!(ok("ISDATE", &[s("2024-02-30")]), i(0));
        assert_eq!(ok("ISDATE", &[s("1700-01-01")]), i(0));
    }

    #[test]
    fn clock() {
        let mut c = ctx();
        c.set_now(UNIX_EPOCH + std::time::Duration::from_millis(1_706_708_700_123)); // 2024-01-31 13:45:00.123 UTC
        let v = call_function("GETDATE", &[], &[], &T::DateTime, &mut c).unwrap();
        assert_eq!(super::super::convert::display_text(&v, &T::DateTime), "2024-01-31 13:45:00.123");
        assert_eq!(v, call_function("CURRENT_TIMESTAMP", &[], &[], &T::DateTime, &mut c).unwrap());
        c.utc_offset_minutes = 60;
        let v = call_function("SYSDATETIME", &[], &[], &T::DateTime2 { scale: 7 }, &mut c).unwrap();
        assert_eq!(super::super::convert::display_text(&v, &T::DateTime2 { scale: 7 }), "2024-01-31 14:45:00.1230000");
        let v = call_function("GETUTCDATE", &[], &[], &T::DateTime, &mut c).unwrap();
        assert_eq!(super::super::convert::display_text(&v, &T::DateTime), "2024-01-31 13:45:00.123");
        let dto = T::DateTimeOffset { scale: 7 };
        assert_eq!(function_type("SYSDATETIMEOFFSET", &[]).unwrap(), Some(dto));
        let v = call_function("SYSDATETIMEOFFSET", &[], &[], &dto, &mut c).unwrap();
        assert_eq!(super::super::convert::display_text(&v, &dto), "2024-01-31 14:45:00.1230000 +01:00");
    }

    fn dto(text: &str) -> Value {
        cast(&s(text), &T::VarChar(40), &T::DateTimeOffset { scale: 7 }, None).unwrap()
    }

    fn shown(v: &Value) -> String {
        super::super::convert::display_text(v, &T::DateTimeOffset { scale: 7 })
    }

    #[test]
    fn datetimeoffset_functions() {
        let d = dto("2025-03-04 10:11:12.1234567 +05:30");
        assert_eq!(shown(&ok("SWITCHOFFSET", &[d.clone(), s("-05:00")])), "2025-03-03 23:41:12.1234567 -05:00");
        assert_eq!(shown(&ok("SWITCHOFFSET", &[d.clone(), i(-840)])), "2025-03-03 14:41:12.1234567 -14:00");
        assert_eq!(ok("SWITCHOFFSET", &[d.clone(), s("+01:00")]), ok("SWITCHOFFSET", &[d.clone(), i(60)]));
        let local = dt("2025-03-04 10:11:12.1234567");
        assert_eq!(shown(&ok("TODATETIMEOFFSET", &[local.clone(), s("+13:00")])), "2025-03-04 10:11:12.1234567 +13:00");
        assert_eq!(shown(&ok("TODATETIMEOFFSET", &[local.clone(), i(-120)])), "2025-03-04 10:11:12.1234567 -02:00");
        assert_eq!(ok("TODATETIMEOFFSET", &[local.clone(), Value::Null]), Value::Null);
        for bad in [s("+14:01"), s("5"), s("+5:00"), s("+05:60"), i(841), i(-841)] {
            let e = call("TODATETIMEOFFSET", &[local.clone(), bad.clone()]).unwrap_err();
            assert_eq!(
                (e.number, e.message.as_str()),
                (9812, "The timezone provided to builtin function todatetimeoffset is invalid."),
                "{bad:?}"
            );
        }
        assert_eq!(call("SWITCHOFFSET", &[d.clone(), i(900)]).unwrap_err().number, 9812);
        // an offset that moves the local date out of range
        let first = dto("0001-01-01 00:00:00 +00:00");
        assert_eq!(call("SWITCHOFFSET", &[first, s("-01:00")]).unwrap_err().number, 517);
        // dateparts are of the local time; tzoffset is the offset
        let part = |p: &str| ok("DATEPART", &[s(p), d.clone()]);
        assert_eq!((part("hour"), part("minute"), part("day")), (i(10), i(11), i(4)));
        assert_eq!((part("tz"), part("TZoffset")), (i(330), i(330)));
        assert_eq!(ok("DATENAME", &[s("tz"), d.clone()]), s("+05:30"));
        assert_eq!(ok("DATEPART", &[s("tz"), s("2007-05-10 00:00:01.1234567 +05:10")]), i(310));
        assert_eq!(ok("DATEPART", &[s("tz"), local.clone()]), i(0));
        let e = call("DATEPART", &[s("tz"), Value::Date(1)]).unwrap_err();
        assert_eq!(
            (e.number, e.message.as_str()),
            (9810, "The datepart tzoffset is not supported by date function datepart for data type date.")
        );
        assert_eq!(call("DATEADD", &[s("tz"), i(1), d.clone()]).unwrap_err().number, 9810);
        // DATEADD moves the local time and keeps the offset; DATEDIFF counts UTC boundaries
        assert_eq!(shown(&ok("DATEADD", &[s("hour"), i(20), d.clone()])), "2025-03-05 06:11:12.1234567 +05:30");
        let (a, b) = (dto("2025-03-04 23:00 -05:00"), dto("2025-03-05 01:00 -05:00"));
        assert_eq!(ok("DATEDIFF", &[s("day"), a.clone(), b.clone()]), i(0));
        assert_eq!(ok("DATEDIFF", &[s("hour"), a, b]), i(2));
        assert_eq!(ok("YEAR", &[dto("2025-01-01 01:00 +05:00")]), i(2025));
    }

    #[test]
    fn date_parts() {
        assert_eq!(date_part("YYYY").unwrap(), DatePart::Year);
        assert_eq!(date_part("dw").unwrap(), DatePart::Weekday);
        let e = date_part("foo").unwrap_err();
        assert_eq!((e.number, e.message.as_str()), (155, "'foo' is not a recognized datepart option."));
        let d = dt("2024-01-31 13:45:07.1234567");
        let part = |p: &str| ok("DATEPART", &[s(p), d.clone()]);
        assert_eq!(part("year"), i(2024));
        assert_eq!(part("quarter"), i(1));
        assert_eq!(part("month"), i(1));
        assert_eq!(part("dayofyear"), i(31));
        assert_eq!(part("day"), i(31));
        assert_eq!(part("week"), i(5));
        assert_eq!(part("weekday"), i(4)); // Wednesday, Sunday = 1
        assert_eq!(part("hour"), i(13));
        assert_eq!(part("minute"), i(45));
        assert_eq!(part("second"), i(7));
        assert_eq!(part("millisecond"), i(123));
        assert_eq!(part("microsecond"), i(123_456));
        assert_eq!(part("nanosecond"), i(123_456_700));
        assert_eq!(part("iso_week"), i(5));
        assert_eq!(ok("DATEPART", &[s("iso_week"), dt("2021-01-03")]), i(53));
        assert_eq!(ok("DATEPART", &[s("week"), dt("2024-01-06")]), i(1));
        assert_eq!(ok("DATEPART", &[s("week"), dt("2024-01-07")]), i(2));
        assert_eq!(ok("DATENAME", &[s("month"), d.clone()]), s("January"));
        assert_eq!(ok("DATENAME", &[s("weekday"), d.clone()]), s("Wednesday"));
        assert_eq!(ok("DATENAME", &[s("year"), d.clone()]), s("2024"));
        assert_eq!(ok("YEAR", &[s("2024-01-31")]), i(2024));
        assert_eq!(ok("MONTH", std::slice::from_ref(&d)), i(1));
        assert_eq!(ok("DAY", &[i(0)]), i(1));
        let e = call("DATEPART", &[s("hour"), Value::Date(738_915)]).unwrap_err();
        assert_eq!(
            (e.number, e.message.as_str()),
            (9810, "The datepart hour is not supported by date function datepart for data type date.")
        );
        let ms = cast(&s("2024-01-31 00:00:00.007"), &T::VarChar(30), &T::DateTime, None).unwrap();
        assert_eq!(
            call_function("DATEPART", &[s("ms"), ms], &[T::VarChar(2), T::DateTime], &T::Int, &mut ctx()).unwrap(),
            i(7)
        );
    }

    #[test]
    fn dateadd_and_datediff() {
        assert_eq!(ok("DATEADD", &[s("month"), i(1), dt("2024-01-31")]), dt("2024-02-29"));
        assert_eq!(ok("DATEADD", &[s("year"), i(-1), dt("2024-02-29")]), dt("2023-02-28"));
        assert_eq!(ok("DATEADD", &[s("quarter"), i(1), dt("2024-01-15")]), dt("2024-04-15"));
        assert_eq!(ok("DATEADD", &[s("day"), i(1), dt("2024-12-31 10:00")]), dt("2025-01-01 10:00"));
        assert_eq!(ok("DATEADD", &[s("hour"), i(-11), dt("2024-01-01 10:00")]), dt("2023-12-31 23:00"));
        assert_eq!(ok("DATEADD", &[s("week"), i(1), Value::Date(738_915)]), Value::Date(738_922));
        assert_eq!(ok("DATEADD", &[s("hour"), i(25), Value::Time(0)]), Value::Time(TICKS_PER_HOUR));
        // a string date becomes datetime
        let v = ok("DATEADD", &[s("dd"), i(1), s("2024-01-31")]);
        assert_eq!(v, cast(&s("2024-02-01"), &T::VarChar(10), &T::DateTime, None).unwrap());
        // the classic DATEADD(dd, DATEDIFF(dd, 0, x), 0)
        assert_eq!(ok("DATEDIFF", &[s("dd"), i(0), s("2024-01-31 13:45")]), i(45_320));
        let e = call("DATEADD", &[s("year"), i(1), dt("9999-06-01")]).unwrap_err();
        assert_eq!((e.number, e.message.as_str()), (517, "Adding a value to a 'datetime2' column caused an overflow."));
        assert_eq!(call("DATEADD", &[s("hour"), i(1), Value::Date(1)]).unwrap_err().number, 9810);
        let diff = |p: &str, a: &str, b: &str| ok("DATEDIFF", &[s(p), dt(a), dt(b)]);
        assert_eq!(diff("year", "2023-12-31 23:59:59", "2024-01-01"), i(1));
        assert_eq!(diff("month", "2024-01-31", "2024-02-01"), i(1));
        assert_eq!(diff("quarter", "2024-03-31", "2024-04-01"), i(1));
        assert_eq!(diff("day", "2024-01-31 23:59", "2024-02-01 00:01"), i(1));
        assert_eq!(diff("week", "2024-01-06", "2024-01-07"), i(1)); // Saturday → Sunday
        assert_eq!(diff("week", "2024-01-07", "2024-01-13"), i(0));
        assert_eq!(diff("hour", "2024-01-01 10:59", "2024-01-01 11:00"), i(1));
        assert_eq!(diff("second", "2024-01-01 10:00:00.9", "2024-01-01 10:00:01.1"), i(1));
        assert_eq!(diff("day", "2024-02-01", "2024-01-31"), i(-1));
        let e = call("DATEDIFF", &[s("ns"), dt("2000-01-01"), dt("2024-01-01")]).unwrap_err();
        assert_eq!(e.number, 535);
        assert_eq!(ok("DATEDIFF_BIG", &[s("ns"), dt("2024-01-01"), dt("2024-01-02")]), i(86_400_000_000_000));
    }

    #[test]
    fn date_construction() {
        assert_eq!(ok("EOMONTH", &[dt("2024-02-10")]), Value::Date(days_from_civil(2024, 2, 29)));
        assert_eq!(ok("EOMONTH", &[dt("2024-01-31"), i(1)]), Value::Date(days_from_civil(2024, 2, 29)));
        assert_eq!(ok("DATEFROMPARTS", &[i(2024), i(1), i(31)]), Value::Date(738_915));
        assert_eq!(call("DATEFROMPARTS", &[i(2024), i(2), i(30)]).unwrap_err().number, 289);
        assert_eq!(ok("DATEFROMPARTS", &[i(2024), Value::Null, i(31)]), Value::Null);
        let v = ok("DATETIMEFROMPARTS", &[i(2024), i(1), i(31), i(13), i(45), i(0), i(123)]);
        assert_eq!(super::super::convert::display_text(&v, &T::DateTime), "2024-01-31 13:45:00.123");
    }

    proptest::proptest! {
        #[test]
        fn functions_never_panic(
            text in "\\PC{0,8}",
            n in proptest::prelude::any::<i64>(),
            m in -50i64..50,
            x in proptest::prelude::any::<f64>(),
            pick in proptest::collection::vec(0usize..6, 0..5),
        ) {
            let x = if x.is_finite() { x } else { 0.0 };
            let parts = ["year", "month", "day", "week", "hour", "ns", "iso_week", "quarter"];
            let pool = [
                (s(&text), T::NVarChar(20)),
                (i(n), T::BigInt),
                (i(m), T::Int),
                (Value::Float(x), T::Float),
                (Value::Decimal { value: i128::from(m) * 12345, scale: 3 }, T::Decimal { precision: 10, scale: 3 }),
                (dt("2024-01-31 13:45"), T::DateTime2 { scale: 7 }),
            ];
            let names = ["LEN", "DATALENGTH", "SUBSTRING", "LEFT", "RIGHT", "UPPER", "LTRIM", "REPLACE", "REPLICATE",
                "REVERSE", "CHARINDEX", "PATINDEX", "CONCAT", "CONCAT_WS", "STR", "SPACE", "CHAR", "ASCII", "NCHAR",
                "UNICODE", "STUFF", "QUOTENAME", "ABS", "ROUND", "FLOOR", "CEILING", "POWER", "SQRT", "SQUARE", "SIGN",
                "EXP", "LOG", "LOG10", "CHECKSUM", "ISNUMERIC", "ISDATE", "DATEADD", "DATEDIFF", "DATEDIFF_BIG",
                "DATEPART", "DATENAME", "YEAR", "EOMONTH", "DATEFROMPARTS"];
            let mut c = ctx();
            for name in names {
                let mut args: Vec<Value> = pick.iter().map(|&k| pool[k].0.clone()).collect();
                let mut types: Vec<SqlType> = pick.iter().map(|&k| pool[k].1).collect();
                if name.starts_with("DATE") && !name.ends_with("PARTS") {
                    args.insert(0, s(parts[(n.unsigned_abs() % 8) as usize]));
                    types.insert(0, T::VarChar(10));
                }
                if let Ok(Some(result)) = function_type(name, &types) {
                    let _ = call_function(name, &args, &types, &result, &mut c);
                }
            }
        }
    }
}
