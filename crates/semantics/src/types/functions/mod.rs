//! Built-in scalar functions that need no session state beyond the statement's clock and
//! the session's random number generator: string, math and date functions.
//!
//! [`function_type`] gives a call's result type (and checks the argument count);
//! [`call_function`] evaluates it. Arguments arrive with their own types; the functions
//! convert them as SQL Server does (`LEN(123)` is 3, `DATEADD(day, 1, 0)` is 1900-01-02).
//!
//! This file is the dispatch: which functions exist and how many arguments each takes
//! (174/189 otherwise), their result types, the statement's clock and the functions that
//! read it (GETDATE, SYSDATETIME, …), and reading arguments. The functions by group:
//!
//! * `string` — string functions: LEN, DATALENGTH, SUBSTRING, LEFT/RIGHT, UPPER/LOWER, the
//!   trims, REPLACE, REPLICATE, REVERSE, CHARINDEX, PATINDEX, CONCAT[_WS], STR, SPACE,
//!   CHAR/NCHAR, ASCII/UNICODE, STUFF, QUOTENAME, TRANSLATE.
//! * `math` — mathematical functions: ABS, SIGN, ROUND, FLOOR/CEILING, POWER, SQRT, SQUARE,
//!   EXP, LOG, LOG10, PI, the trigonometric ones, RAND.
//! * `date` — date and time functions: DATEADD, DATEDIFF[_BIG], DATEPART/DATENAME,
//!   YEAR/MONTH/DAY, EOMONTH, DATEFROMPARTS, DATETIMEFROMPARTS, ISDATE.
//! * `datepart` — the dateparts (`yy`, `mm`, `dw`, …) and a date's number for each.
//! * `offset` — time zone offsets: TODATETIMEOFFSET, SWITCHOFFSET, DATEPART/DATENAME(tzoffset).
//! * `system` — system functions: NEWID, CHECKSUM, BINARY_CHECKSUM, HASHBYTES, ISNUMERIC,
//!   GREATEST and LEAST.
//! * `json` — ISJSON, JSON_VALUE, JSON_QUERY, JSON_MODIFY and the JSON path language
//!   (OPENJSON, in the execution layer, uses it too).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::convert::{cast, fit_string, round_datetime};
use super::datetime::{days_from_civil, TICKS_PER_MINUTE};
use super::typing::{base_type_name, family, fraction_digits, is_string, is_unicode, Family, MAX_BYTES, MAX_NCHARS};
use super::{SqlType, Value};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_types::{MAX, MAX_OFFSET_MINUTES, MIN_OFFSET_MINUTES, TICKS_PER_DAY};

// before the `mod` lines, so that the groups' files see it
macro_rules! or_null {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return Ok(Value::Null),
        }
    };
}

mod date;
mod datepart;
mod format;
pub mod json;
mod large;
mod parse;
pub use large::like_in_place;
mod math;
mod offset;
mod string;
mod system;
#[cfg(test)]
mod tests;
pub mod xml;
mod zone;

pub use datepart::{date_part, DatePart};
use math::rand;
use system::new_guid;

/// What the functions need from the session and statement: the statement's clock (set
/// once per statement, so that every GETDATE() in a statement agrees, as in SQL Server)
/// and the session's random number generator for RAND and NEWID.
pub struct FunctionContext {
    /// The statement's time, UTC, as days since 0001-01-01 and 100 ns ticks; read from
    /// the system clock when the statement first asks (None: not yet).
    now_utc: Option<(i32, u64)>,
    /// Local time minus UTC, in minutes (GETDATE and SYSDATETIME are local).
    pub utc_offset_minutes: i32,
    /// The session's generator; `RAND(seed)` reseeds it (a small fast generator: seeding
    /// happens on every `RAND(seed)` call, once per row in seed 002's query).
    pub rng: SmallRng,
    /// `SET DATEFIRST`: the first day of the week, 1 = Monday … 7 = Sunday.
    pub datefirst: u8,
    /// Storage's key form of values, which CHECKSUM hashes; the execution layer sets it
    /// (without it CHECKSUM fails with 8630, and the binder folds no CHECKSUM of constants).
    pub keys: Option<&'static dyn KeyEncoding>,
}

/// The memcomparable form of a value as an ascending index key column, in which values
/// equal under the collation (`'a'`, `'A '`) have equal bytes. The form is storage's, so
/// the execution layer, which knows it, implements this; CHECKSUM hashes it.
pub trait KeyEncoding: Sync {
    /// Calls `with` with the key bytes of `v` of type `t` (no bytes when `v` is not a
    /// value of `t`).
    fn key(&self, v: &Value, t: &SqlType, with: &mut dyn FnMut(&[u8]));
}

impl Default for FunctionContext {
    fn default() -> Self {
        FunctionContext::new()
    }
}

impl FunctionContext {
    /// A context at the current time, UTC as local time, with a randomly seeded RNG (and
    /// no [`KeyEncoding`]).
    pub fn new() -> FunctionContext {
        FunctionContext { now_utc: None, utc_offset_minutes: 0, rng: SmallRng::from_os_rng(), datefirst: 7, keys: None }
    }

    /// [`FunctionContext::new`] with storage's key form (which the execution layer has).
    pub fn with_keys(keys: &'static dyn KeyEncoding) -> FunctionContext {
        FunctionContext { keys: Some(keys), ..FunctionContext::new() }
    }

    /// A new statement: its clock is read when it first asks for the time.
    pub fn start_statement(&mut self) {
        self.now_utc = None;
    }

    /// The statement's time, UTC (read from the system clock on the first call).
    pub fn now_utc(&mut self) -> (i32, u64) {
        *self.now_utc.get_or_insert_with(|| utc_ticks(SystemTime::now()))
    }

    /// Sets the statement's clock to `now`.
    pub fn set_now(&mut self, now: SystemTime) {
        self.now_utc = Some(utc_ticks(now));
    }

    fn now_local(&mut self) -> (i32, u64) {
        let (d, t) = self.now_utc();
        let total = i128::from(d) * i128::from(TICKS_PER_DAY)
            + i128::from(t)
            + i128::from(self.utc_offset_minutes) * i128::from(TICKS_PER_MINUTE);
        let per_day = i128::from(TICKS_PER_DAY);
        (total.div_euclid(per_day) as i32, total.rem_euclid(per_day) as u64)
    }
}

/// `now` as days since 0001-01-01 and 100 ns ticks.
fn utc_ticks(now: SystemTime) -> (i32, u64) {
    let ticks = match now.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() / 100,
        Err(_) => 0,
    };
    let unix_epoch_days = days_from_civil(1970, 1, 1);
    let per_day = u128::from(TICKS_PER_DAY);
    (unix_epoch_days + (ticks / per_day) as i32, (ticks % per_day) as u64)
}

fn arg_count(name: &str, n: usize, min: usize, max: usize) -> SqlResult<()> {
    if (min..=max).contains(&n) {
        return Ok(());
    }
    let lower = name.to_ascii_lowercase();
    Err(if min == max {
        msg::WRONG_ARGUMENT_COUNT.with(&[&lower, &min])
    } else {
        msg::ARGUMENT_COUNT_OUT_OF_RANGE.with(&[&lower, &min, &max])
    })
}

fn bad_arg(name: &str, t: &SqlType, i: usize) -> SqlError {
    msg::INVALID_ARGUMENT_TYPE.with(&[&base_type_name(t), &(i + 1), &name.to_ascii_lowercase()])
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
        | "SWITCHOFFSET" | "LEFT_SHIFT" | "RIGHT_SHIFT" => (2, 2),
        "LOG" | "EOMONTH" | "QUOTENAME" => (1, 2),
        "STR" => (1, 3),
        "CHARINDEX" => (2, 3),
        "PATINDEX" => (2, 2),
        "ROUND" => (2, 3),
        "SUBSTRING" | "REPLACE" | "DATEADD" | "DATEDIFF" | "DATEDIFF_BIG" | "DATEFROMPARTS" => (3, 3),
        "STUFF" => (4, 4),
        "DATE_BUCKET" => (3, 4),
        "TRANSLATE" => (3, 3),
        "FORMAT" => (2, 3),
        "$PARSE" | "$TRY_PARSE" => (3, 3),
        "$AT_TIME_ZONE" => (2, 2),
        "ISJSON" | "$XML_TEXT" => (1, 1),
        "$XML_NODE_VALUE" => (2, 2),
        "$BIT" => (2, 2),
        "JSON_VALUE" => (2, 2),
        "JSON_QUERY" => (1, 2),
        "JSON_MODIFY" => (3, 3),
        "GREATEST" | "LEAST" => (1, 254),
        "DATETIMEFROMPARTS" => (7, 7),
        "CONCAT" => (2, 254),
        "CONCAT_WS" => (3, 254),
        "CHECKSUM" | "BINARY_CHECKSUM" => (1, 4096),
        "HASHBYTES" => (2, 2),
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
        "TRANSLATE" => text_type(&first),
        "$AT_TIME_ZONE" => match first {
            T::DateTime | T::SmallDateTime | T::DateTime2 { .. } | T::DateTimeOffset { .. } => {
                T::DateTimeOffset { scale: fraction_digits(&first) }
            }
            _ => return Err(msg::INVALID_ARGUMENT_TYPE.with(&[&base_type_name(&first), &1, &"AT TIME ZONE"])),
        },
        "$PARSE" | "$TRY_PARSE" => {
            if !is_string(&first) {
                return Err(bad_arg("PARSE", &first, 0));
            }
            args[1]
        }
        "FORMAT" => {
            use Family as F;
            let formats = [
                F::Int,
                F::Float,
                F::Decimal,
                F::Money,
                F::Date,
                F::Time,
                F::DateTime,
                F::DateTime2,
                F::DateTimeOffset,
            ];
            if !formats.contains(&family(&first)) {
                return Err(bad_arg(name, &first, 0));
            }
            T::NVarChar(4000)
        }
        "ISJSON" | "JSON_VALUE" | "JSON_QUERY" | "JSON_MODIFY" => json::json_type(name),
        "$XML_TEXT" | "$XML_NODE_VALUE" => T::NVarChar(MAX),
        // Bit `args[1]` of `args[0]` (GROUPING over the grouping bits).
        "$BIT" => T::Int,
        // The argument type of highest precedence; each argument must convert to it.
        "GREATEST" | "LEAST" => {
            let mut t = first;
            for (i, a) in args.iter().enumerate().skip(1) {
                t = super::typing::common_type(&t, a).map_err(|_| bad_arg(name, a, i))?;
            }
            if matches!(family(&t), Family::Binary | Family::Guid) || t.is_max() {
                return Err(bad_arg(name, &t, 0));
            }
            t
        }
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
        "ASCII" | "UNICODE" | "CHECKSUM" | "BINARY_CHECKSUM" | "ISDATE" | "ISNUMERIC" => T::Int,
        "HASHBYTES" => T::VarBinary(8000),
        "ABS" | "SIGN" => numeric_result(name, &first, 0)?,
        // The shifted value's type; the amount must be an integer.
        "LEFT_SHIFT" | "RIGHT_SHIFT" => {
            let integer = |t: &T| matches!(t, T::TinyInt | T::SmallInt | T::Int | T::BigInt);
            if !integer(&first) {
                return Err(bad_arg(name, &first, 0));
            }
            if !integer(&args[1]) {
                return Err(bad_arg(name, &args[1], 1));
            }
            first
        }
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
        "DATE_BUCKET" => {
            if !matches!(
                family(&args[2]),
                Family::Date | Family::Time | Family::DateTime | Family::DateTime2 | Family::DateTimeOffset
            ) {
                return Err(bad_arg(name, &args[2], 2));
            }
            args[2]
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

/// The text of an XML document: its tags dropped and its entities decoded (what the
/// xml value() method reads at '.').
fn xml_text(xml: &str) -> String {
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(c) = rest.chars().next() {
        if c == '<' {
            rest = rest.find('>').map_or("", |end| &rest[end + 1..]);
            continue;
        }
        if c == '&' {
            if let Some(end) = rest.find(';') {
                let entity = &rest[1..end];
                let decoded = match entity {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    _ => entity
                        .strip_prefix("#x")
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                        .and_then(char::from_u32),
                };
                if let Some(d) = decoded {
                    out.push(d);
                    rest = &rest[end + 1..];
                    continue;
                }
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn result_string(s: &str, result: &SqlType) -> Value {
    if is_string(result) {
        fit_string(s, result)
    } else {
        Value::str(s)
    }
}

/// Evaluates the built-in `name` (upper-case) with `args` of types `arg_types`; `result`
/// is what [`function_type`] returned, which also checked the name and the argument count
/// (so they are not checked again on every call). NULL arguments give NULL except where
/// SQL Server says otherwise (CONCAT, CONCAT_WS, CHECKSUM, ISDATE, ISNUMERIC).
pub fn call_function(
    name: &str,
    args: &[Value],
    arg_types: &[SqlType],
    result: &SqlType,
    ctx: &mut FunctionContext,
) -> SqlResult<Value> {
    debug_assert!(
        arity(name).is_some_and(|(min, max)| (min..=max).contains(&args.len())),
        "{name} with {} arguments was not bound",
        args.len()
    );
    debug_assert_eq!(arg_types.len(), args.len(), "{name}: argument types do not match the arguments");
    let call = Call { name, args, types: arg_types, result, datefirst: ctx.datefirst };
    if args.iter().any(|a| matches!(a, Value::Large(_))) {
        if let Some(v) = call.on_large()? {
            return Ok(v);
        }
        let whole = args.iter().map(|a| a.clone().materialized()).collect::<SqlResult<Vec<_>>>()?;
        return call_function(name, &whole, arg_types, result, ctx);
    }
    match name {
        "LEN" | "DATALENGTH" | "SUBSTRING" | "LEFT" | "RIGHT" | "UPPER" | "LOWER" | "LTRIM" | "RTRIM" | "TRIM"
        | "REPLACE" | "REPLICATE" | "REVERSE" | "CHARINDEX" | "PATINDEX" | "CONCAT" | "CONCAT_WS" | "STR" | "SPACE"
        | "CHAR" | "ASCII" | "NCHAR" | "UNICODE" | "STUFF" | "QUOTENAME" | "TRANSLATE" => call.string(),
        "GREATEST" | "LEAST" => call.extreme(),
        "$AT_TIME_ZONE" => {
            let Some(name) = call.text(1)? else { return Ok(Value::Null) };
            zone::at_time_zone(&args[0], &arg_types[0], result, &name)
        }
        "$PARSE" | "$TRY_PARSE" => {
            let (Some(text), culture) = (call.text(0)?, call.text(2)?) else { return Ok(Value::Null) };
            let culture = if args[2].is_null() { None } else { culture };
            parse::parse(&text, result, culture.as_deref(), name == "$TRY_PARSE")
        }
        "FORMAT" => {
            let (Some(pattern), culture) = (call.text(1)?, if args.len() > 2 { call.text(2)? } else { None }) else {
                return Ok(Value::Null);
            };
            if args.len() > 2 && culture.is_none() {
                return Ok(Value::Null);
            }
            format::format(&args[0], &arg_types[0], &pattern, culture.as_deref())
        }
        "ISJSON" | "JSON_VALUE" | "JSON_QUERY" | "JSON_MODIFY" => call.json(),
        "$XML_TEXT" => Ok(call.text(0)?.map_or(Value::Null, |x| Value::str(&xml_text(&x)))),
        "$XML_NODE_VALUE" => match (call.text(0)?, call.text(1)?) {
            (Some(doc), Some(path)) => Ok(xml::parse(&path)?.value(&doc).map_or(Value::Null, |v| Value::str(&v))),
            _ => Ok(Value::Null),
        },
        "$BIT" => {
            let (v, b) = (or_null!(call.int(0)?), or_null!(call.int(1)?));
            Ok(Value::Int((v >> b) & 1))
        }
        "ABS" | "ROUND" | "FLOOR" | "CEILING" | "POWER" | "SQRT" | "SQUARE" | "SIGN" | "EXP" | "LOG" | "LOG10"
        | "PI" | "SIN" | "COS" | "TAN" | "ASIN" | "ACOS" | "ATAN" | "ATN2" | "COT" | "DEGREES" | "RADIANS"
        | "LEFT_SHIFT" | "RIGHT_SHIFT" => call.math(),
        "RAND" => rand(&call, ctx),
        "NEWID" => Ok(Value::Guid(new_guid(&mut ctx.rng))),
        "CHECKSUM" => call.checksum(ctx.keys),
        "BINARY_CHECKSUM" => call.binary_checksum(),
        "HASHBYTES" => call.hashbytes(),
        "ISNUMERIC" => call.isnumeric(),
        "ISDATE" => call.isdate(),
        "GETDATE" | "CURRENT_TIMESTAMP" => {
            let (d, t) = ctx.now_local();
            let (d, t) = round_datetime(d, t);
            Ok(Value::DateTime { days: d, ticks: t })
        }
        "GETUTCDATE" => {
            let (d, t) = ctx.now_utc();
            let (d, t) = round_datetime(d, t);
            Ok(Value::DateTime { days: d, ticks: t })
        }
        "SYSDATETIME" => {
            let (days, ticks) = ctx.now_local();
            Ok(Value::DateTime { days, ticks })
        }
        "SYSUTCDATETIME" => {
            let (days, ticks) = ctx.now_utc();
            Ok(Value::DateTime { days, ticks })
        }
        "SYSDATETIMEOFFSET" => {
            let (days, ticks) = ctx.now_utc();
            Ok(Value::DateTimeOffset {
                days,
                ticks,
                offset: ctx.utc_offset_minutes.clamp(MIN_OFFSET_MINUTES.into(), MAX_OFFSET_MINUTES.into()) as i16,
            })
        }
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
}
