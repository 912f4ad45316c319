//! `CAST`/`CONVERT` with SQL Server's results and errors, how a client shows a value, and
//! the mapping to and from the storage layer's values.

use std::sync::Arc;

use super::datetime::{self, DateOrder, DAYS_TO_1900, TICKS_PER_MINUTE, TICKS_PER_SECOND};
use super::num::{self, decimal_to_f64, f64_to_decimal, fits_precision, format_decimal, parse_decimal_text};
use super::text::{decode_cp1252, encode_cp1252, to_code_page};
use super::typing::{base_type_name, conversion, family, fraction_digits, is_unicode, Conversion, Family};
use super::{SqlType, Value};
use tessera_access::row::{
    self, DATETIME_MAX_DAYS, DATETIME_MIN_DAYS, DATETIME_TICKS_PER_DAY, MAX, MAX_DATE_DAYS, MAX_OFFSET_MINUTES,
    MINUTES_PER_DAY, MIN_OFFSET_MINUTES, TICKS_PER_DAY,
};
use tessera_errors::{SqlError, SqlResult};

/// Converts `v` of type `from` to type `to` as `CAST`, or `CONVERT` with `style`, does:
/// range checks and rounding per SQL Server, string parsing and formatting, and SQL
/// Server's error numbers and messages. The result is in `to`'s canonical form (integers
/// in range, decimals at the target scale, `char(n)` padded, `datetime` on its 1/300 s
/// grid, times rounded to the scale). NULL converts to NULL.
pub fn cast(v: &Value, from: &SqlType, to: &SqlType, style: Option<i32>) -> SqlResult<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    check_explicit(from, to)?;
    match family(to) {
        Family::Bit => to_bit(v, from),
        Family::Int => to_int(v, from, to),
        Family::Float => to_float(v, from, to),
        Family::Decimal | Family::Money => to_decimal(v, from, to),
        Family::Char | Family::NChar => to_string(v, from, to, style),
        Family::Binary => to_binary(v, from, to, style),
        Family::Date | Family::Time | Family::DateTime | Family::DateTime2 | Family::DateTimeOffset => {
            to_temporal(v, from, to, style)
        }
        Family::Guid => to_guid(v, from),
    }
}

/// Error 529 when not even `CAST` converts `from` to `to` (`CAST(date AS int)`).
pub fn check_explicit(from: &SqlType, to: &SqlType) -> SqlResult<()> {
    if conversion(from, to) == Conversion::NotAllowed {
        return Err(SqlError::new(
            529,
            format!(
                "Explicit conversion from data type {} to {} is not allowed.",
                base_type_name(from),
                base_type_name(to)
            ),
        ));
    }
    Ok(())
}

fn unexpected(v: &Value, to: &SqlType) -> SqlError {
    SqlError::new(8114, format!("Error converting a {:?} value to data type {}.", v, base_type_name(to)))
}

fn overflow(to: &SqlType) -> SqlError {
    SqlError::new(8115, format!("Arithmetic overflow error converting expression to data type {}.", base_type_name(to)))
}

fn numeric_overflow(from: &SqlType) -> SqlError {
    let from = if matches!(from, SqlType::Decimal { .. }) { "numeric" } else { base_type_name(from) };
    SqlError::new(8115, format!("Arithmetic overflow error converting {from} to data type numeric."))
}

/// The integer range of an integer type.
pub(crate) fn int_range(t: &SqlType) -> (i64, i64) {
    match t {
        SqlType::Bit => (0, 1),
        SqlType::TinyInt => (0, 255),
        SqlType::SmallInt => (i16::MIN.into(), i16::MAX.into()),
        SqlType::Int => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN, i64::MAX),
    }
}

/// Checks `x` against the integer type's range (8115 otherwise).
pub(crate) fn check_int(x: i128, t: &SqlType) -> SqlResult<Value> {
    let (lo, hi) = int_range(t);
    if x < i128::from(lo) || x > i128::from(hi) {
        return Err(overflow(t));
    }
    Ok(Value::Int(x as i64))
}

fn trim_ws(s: &str) -> &str {
    s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\r' | '\n'))
}

fn string_type_name(from: &SqlType) -> &'static str {
    if is_unicode(from) {
        "nvarchar"
    } else {
        "varchar"
    }
}

fn conversion_failed(s: &str, from: &SqlType, to: &SqlType) -> SqlError {
    SqlError::new(
        245,
        format!(
            "Conversion failed when converting the {} value '{}' to data type {}.",
            string_type_name(from),
            s,
            base_type_name(to)
        ),
    )
}

/// Parses `[+-]digits` with surrounding white space (empty → 0).
fn parse_int_text(s: &str) -> Option<Option<i128>> {
    let t = trim_ws(s);
    if t.is_empty() {
        return Some(Some(0));
    }
    let (neg, digits) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = digits.trim_start_matches('0');
    if digits.len() > 20 {
        return Some(None);
    }
    let v: i128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    Some(Some(if neg { -v } else { v }))
}

fn int_from_string(s: &str, from: &SqlType, to: &SqlType) -> SqlResult<Value> {
    let Some(parsed) = parse_int_text(s) else { return Err(conversion_failed(s, from, to)) };
    let (lo, hi) = int_range(to);
    match parsed {
        Some(x) if x >= i128::from(lo) && x <= i128::from(hi) => Ok(Value::Int(x as i64)),
        _ => {
            let column = match to {
                SqlType::TinyInt => "INT1 column. Use a larger integer column.",
                SqlType::SmallInt => "INT2 column. Use a larger integer column.",
                SqlType::Int => "int column.",
                _ => return Err(overflow(to)),
            };
            let number = if matches!(to, SqlType::Int) { 248 } else { 244 };
            Err(SqlError::new(
                number,
                format!("The conversion of the {} value '{}' overflowed an {column}", string_type_name(from), s),
            ))
        }
    }
}

/// Big-endian two's complement of the last `width` bytes (zero-extended on the left).
fn int_from_bytes(b: &[u8], width: usize) -> i64 {
    let tail = &b[b.len().saturating_sub(width)..];
    let mut buf = [0u8; 8];
    buf[8 - tail.len()..].copy_from_slice(tail);
    let x = u64::from_be_bytes(buf);
    let shift = 64 - 8 * width as u32;
    if width == 1 {
        return x as i64; // tinyint is unsigned
    }
    ((x << shift) as i64) >> shift
}

fn int_width(t: &SqlType) -> usize {
    match t {
        SqlType::Bit | SqlType::TinyInt => 1,
        SqlType::SmallInt => 2,
        SqlType::Int | SqlType::SmallMoney | SqlType::Real => 4,
        _ => 8,
    }
}

/// Days since 1900-01-01 with the time of day as a fraction (datetime → float).
fn datetime_as_days(days: i32, ticks: u64) -> f64 {
    f64::from(days - DAYS_TO_1900) + ticks as f64 / TICKS_PER_DAY as f64
}

fn to_int(v: &Value, from: &SqlType, to: &SqlType) -> SqlResult<Value> {
    let x: i128 = match v {
        Value::Bit(b) => i128::from(*b),
        Value::Int(i) => {
            let (lo, hi) = int_range(to);
            if *i < lo || *i > hi {
                return Err(SqlError::new(
                    220,
                    format!("Arithmetic overflow error for data type {}, value = {i}.", base_type_name(to)),
                ));
            }
            return Ok(Value::Int(*i));
        }
        Value::Float(f) if f.trunc().abs() < 1e30 => f.trunc() as i128,
        Value::Float(_) => return Err(overflow(to)),
        Value::Decimal { value, scale } => {
            let to_units = if family(from) == Family::Money { num::rescale_round } else { num::rescale_trunc };
            to_units(*value, *scale, 0).ok_or_else(|| overflow(to))?
        }
        Value::Str(s) => return int_from_string(s, from, to),
        Value::Binary(b) => {
            let w = int_width(to);
            return Ok(Value::Int(int_from_bytes(b, w)));
        }
        Value::DateTime { days, ticks } => i128::from(*days - DAYS_TO_1900) + i128::from(*ticks >= TICKS_PER_DAY / 2),
        _ => return Err(unexpected(v, to)),
    };
    check_int(x, to)
}

/// Parses a float literal as SQL Server's conversion accepts it (`1e5`, `.5`, `-2.`).
fn parse_float_text(s: &str) -> Option<f64> {
    let t = trim_ws(s);
    if t.is_empty() {
        return Some(0.0);
    }
    if !t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E')) {
        return None;
    }
    let t = t.strip_suffix(['e', 'E']).unwrap_or(t);
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn to_float(v: &Value, from: &SqlType, to: &SqlType) -> SqlResult<Value> {
    let x = match v {
        Value::Bit(b) => f64::from(u8::from(*b)),
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Decimal { value, scale } => decimal_to_f64(*value, *scale),
        Value::Str(s) => parse_float_text(s).ok_or_else(|| {
            SqlError::new(8114, format!("Error converting data type {} to float.", string_type_name(from)))
        })?,
        Value::DateTime { days, ticks } => datetime_as_days(*days, *ticks),
        Value::Binary(b) if b.len() >= 8 => f64::from_be_bytes(b[b.len() - 8..].try_into().unwrap_or([0; 8])),
        _ => return Err(unexpected(v, to)),
    };
    if matches!(to, SqlType::Real) {
        let r = x as f32;
        if !r.is_finite() {
            return Err(overflow(to));
        }
        return Ok(Value::Float(f64::from(r)));
    }
    Ok(Value::Float(x))
}

/// Precision and scale of a decimal or money target, and the integer range of money.
fn decimal_target(to: &SqlType) -> (u8, u8, Option<(i64, i64)>) {
    match *to {
        SqlType::Decimal { precision, scale } => (precision, scale, None),
        SqlType::SmallMoney => (10, 4, Some((i32::MIN.into(), i32::MAX.into()))),
        _ => (19, 4, Some((i64::MIN, i64::MAX))),
    }
}

fn to_decimal(v: &Value, from: &SqlType, to: &SqlType) -> SqlResult<Value> {
    let (precision, scale, money) = decimal_target(to);
    let over = || if money.is_some() { overflow(to) } else { numeric_overflow(from) };
    let value = match v {
        Value::Bit(b) => num::rescale_round(i128::from(*b), 0, scale),
        Value::Int(i) => num::rescale_round(i128::from(*i), 0, scale),
        Value::Decimal { value, scale: s } => num::rescale_round(*value, *s, scale),
        Value::Float(f) => f64_to_decimal(*f, scale),
        Value::DateTime { days, ticks } => f64_to_decimal(datetime_as_days(*days, *ticks), scale),
        Value::Str(s) => return decimal_from_string(s, from, to),
        Value::Binary(b) => return decimal_from_binary(b, to),
        _ => return Err(unexpected(v, to)),
    };
    finish_decimal(value.ok_or_else(over)?, precision, scale, money).ok_or_else(over)
}

fn finish_decimal(value: i128, precision: u8, scale: u8, money: Option<(i64, i64)>) -> Option<Value> {
    let ok = match money {
        Some((lo, hi)) => value >= i128::from(lo) && value <= i128::from(hi),
        None => fits_precision(value, precision),
    };
    ok.then_some(Value::Decimal { value, scale })
}

fn decimal_from_string(s: &str, from: &SqlType, to: &SqlType) -> SqlResult<Value> {
    let (precision, scale, money) = decimal_target(to);
    let src = string_type_name(from);
    if money.is_some() {
        let cleaned: String = trim_ws(s).chars().filter(|c| !matches!(c, ',' | '$' | '€' | '£' | '¥')).collect();
        let text = if trim_ws(s).is_empty() { "0" } else { cleaned.as_str() };
        let bad = || SqlError::new(235, "Cannot convert a char value to money. The char value has incorrect syntax.");
        let t = parse_decimal_text(text).ok_or_else(bad)?;
        let value = t.scaled(scale).ok_or_else(|| overflow(to))?;
        return finish_decimal(value, precision, scale, money).ok_or_else(|| overflow(to));
    }
    let t = parse_decimal_text(s)
        .ok_or_else(|| SqlError::new(8114, format!("Error converting data type {src} to numeric.")))?;
    let over = || SqlError::new(8115, format!("Arithmetic overflow error converting {src} to data type numeric."));
    if t.integral_digits() > usize::from(precision.saturating_sub(scale)) {
        return Err(over());
    }
    let value = t.scaled(scale).ok_or_else(over)?;
    finish_decimal(value, precision, scale, None).ok_or_else(over)
}

/// SQL Server's binary form of a decimal: precision, scale, sign (1 = positive), then the
/// magnitude little-endian.
fn decimal_to_binary(value: i128, precision: u8, scale: u8) -> Vec<u8> {
    let size = SqlType::Decimal { precision, scale }.fixed_size().unwrap_or(17) - 1;
    let mut out = vec![precision, scale, u8::from(value >= 0)];
    out.extend_from_slice(&value.unsigned_abs().to_le_bytes()[..size]);
    out
}

fn decimal_from_binary(b: &[u8], to: &SqlType) -> SqlResult<Value> {
    let (precision, scale, money) = decimal_target(to);
    if money.is_some() {
        let x = int_from_bytes(b, int_width(to));
        return Ok(Value::Decimal { value: i128::from(x), scale: 4 });
    }
    let bad = || SqlError::new(8114, "Error converting data type varbinary to numeric.");
    let [_, s, sign, mag @ ..] = b else { return Err(bad()) };
    if mag.len() > 16 || *sign > 1 || *s > 38 {
        return Err(bad());
    }
    let mut buf = [0u8; 16];
    buf[..mag.len()].copy_from_slice(mag);
    let m = i128::try_from(u128::from_le_bytes(buf)).map_err(|_| bad())?;
    let v = if *sign == 1 { m } else { -m };
    let value = num::rescale_round(v, *s, scale).ok_or_else(|| numeric_overflow(&SqlType::VarBinary(MAX)))?;
    finish_decimal(value, precision, scale, None).ok_or_else(|| numeric_overflow(&SqlType::VarBinary(MAX)))
}

fn to_bit(v: &Value, from: &SqlType) -> SqlResult<Value> {
    Ok(Value::Bit(match v {
        Value::Bit(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Decimal { value, .. } => *value != 0,
        Value::Binary(b) => b.iter().any(|&x| x != 0),
        Value::DateTime { days, ticks } => datetime_as_days(*days, *ticks) != 0.0,
        Value::Str(s) => {
            let t = trim_ws(s);
            if t.eq_ignore_ascii_case("true") {
                true
            } else if t.eq_ignore_ascii_case("false") {
                false
            } else {
                match parse_int_text(s) {
                    Some(Some(x)) => x != 0,
                    _ => return Err(conversion_failed(s, from, &SqlType::Bit)),
                }
            }
        }
        _ => return Err(unexpected(v, &SqlType::Bit)),
    }))
}

/// Formats a float as C's `%.{precision}g` with SQL Server's three-digit exponent
/// (`1.23457e+008`).
pub(crate) fn format_g(x: f64, precision: usize) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    let sci = format!("{:.*e}", precision.saturating_sub(1), x);
    let (_, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= precision as i32 {
        let (mantissa, _) = sci.split_once('e').unwrap_or((&sci, ""));
        return format!("{}{}", trim_fraction(mantissa), exponent(exp));
    }
    let decimals = (precision as i32 - 1 - exp).max(0) as usize;
    trim_fraction(&format!("{x:.decimals$}")).to_string()
}

/// Formats a float as C's `%.{digits}e` with a three-digit exponent.
fn format_e(x: f64, digits: usize) -> String {
    let sci = format!("{x:.digits$e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    format!("{mantissa}{}", exponent(exp.parse().unwrap_or(0)))
}

fn exponent(e: i32) -> String {
    format!("e{}{:03}", if e < 0 { '-' } else { '+' }, e.unsigned_abs())
}

fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn group_thousands(int: &str) -> String {
    let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

fn money_text(value: i128, style: i32) -> String {
    match style {
        1 => {
            let text = format_decimal(num::rescale_round(value, 4, 2).unwrap_or(value), 2);
            let (int, frac) = text.split_once('.').unwrap_or((&text, "00"));
            format!("{}.{frac}", group_thousands(int))
        }
        2 | 126 => format_decimal(value, 4),
        _ => format_decimal(num::rescale_round(value, 4, 2).unwrap_or(value), 2),
    }
}

fn float_text(x: f64, real: bool, style: i32) -> String {
    match style {
        1 => format_e(x, 7),
        2 => format_e(x, 15),
        3 if real => format_g(x, 9),
        3 => format_g(x, 17),
        _ => format_g(x, 6),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// The text of a uniqueidentifier, `6F9619FF-8B86-D011-B42D-00C04FC964FF`.
pub(crate) fn guid_text(g: &[u8; 16]) -> String {
    format!(
        "{:02X}{:02X}{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{}-{}",
        g[3],
        g[2],
        g[1],
        g[0],
        g[5],
        g[4],
        g[7],
        g[6],
        hex(&g[8..10]),
        hex(&g[10..])
    )
}

fn bad_style(style: i32, from: &SqlType) -> SqlError {
    SqlError::new(
        281,
        format!(
            "{style} is not a valid style number when converting from {} to a character string.",
            base_type_name(from)
        ),
    )
}

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
fn temporal_text(v: &Value, from: &SqlType, style: Option<i32>) -> SqlResult<String> {
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
            datetime::format_style(days, ticks, if datetime_ms { 3 } else { digits }, datetime_ms, s)
                .ok_or_else(|| bad_style(s, from))
        }
    }
}

/// Length of a string in the units of a character type's length (bytes for varchar,
/// UTF-16 code units for nvarchar).
fn char_units(s: &str, unicode: bool) -> usize {
    if unicode {
        s.chars().map(char::len_utf16).sum()
    } else {
        s.chars().count()
    }
}

/// Cuts `s` to at most `n` units.
fn truncate_units(s: &str, n: usize, unicode: bool) -> &str {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        let w = if unicode { c.len_utf16() } else { 1 };
        if used + w > n {
            return &s[..i];
        }
        used += w;
    }
    s
}

/// Fits text to a character type: truncated to its length, `char(n)` padded, code page
/// applied for `char`/`varchar`.
pub(crate) fn fit_string(s: &str, to: &SqlType) -> Value {
    let unicode = is_unicode(to);
    let s = if unicode { std::borrow::Cow::Borrowed(s) } else { to_code_page(s) };
    let (n, pad) = match *to {
        SqlType::Char(n) | SqlType::NChar(n) => (n, true),
        SqlType::VarChar(n) | SqlType::NVarChar(n) => (n, false),
        _ => (MAX, false),
    };
    if n == MAX {
        return Value::str(&s);
    }
    let cut = truncate_units(&s, usize::from(n), unicode);
    let len = char_units(cut, unicode);
    if pad && len < usize::from(n) {
        let mut out = String::with_capacity(usize::from(n));
        out.push_str(cut);
        out.extend(std::iter::repeat_n(' ', usize::from(n) - len));
        return Value::str(&out);
    }
    Value::str(cut)
}

fn string_length_limit(to: &SqlType) -> Option<usize> {
    match *to {
        SqlType::Char(n) | SqlType::VarChar(n) | SqlType::NChar(n) | SqlType::NVarChar(n) if n != MAX => {
            Some(usize::from(n))
        }
        _ => None,
    }
}

fn to_string(v: &Value, from: &SqlType, to: &SqlType, style: Option<i32>) -> SqlResult<Value> {
    let limit = string_length_limit(to);
    let too_long = |text: &str| limit.is_some_and(|n| char_units(text, is_unicode(to)) > n);
    let text = match v {
        Value::Str(s) => return Ok(fit_string(s, to)),
        Value::Bit(b) => if *b { "1" } else { "0" }.to_string(),
        Value::Int(i) => {
            let text = i.to_string();
            if too_long(&text) {
                if is_unicode(to) {
                    return Err(overflow(to));
                }
                return Ok(fit_string("*", to));
            }
            text
        }
        Value::Decimal { value, scale } => {
            let text = if family(from) == Family::Money {
                money_text(*value, style.unwrap_or(0))
            } else {
                format_decimal(*value, *scale)
            };
            if too_long(&text) {
                let src = if family(from) == Family::Money { "expression" } else { "numeric" };
                return Err(SqlError::new(
                    8115,
                    format!("Arithmetic overflow error converting {src} to data type {}.", base_type_name(to)),
                ));
            }
            text
        }
        Value::Float(x) => {
            let text = float_text(*x, matches!(from, SqlType::Real), style.unwrap_or(0));
            if too_long(&text) {
                return Err(overflow(to));
            }
            text
        }
        Value::Binary(b) => match style.unwrap_or(0) {
            0 if is_unicode(to) => {
                let units: Vec<u16> =
                    b.chunks(2).map(|c| u16::from_le_bytes([c[0], *c.get(1).unwrap_or(&0)])).collect();
                String::from_utf16_lossy(&units)
            }
            0 => decode_cp1252(b).into_owned(),
            1 => format!("0x{}", hex(b)),
            2 => hex(b),
            s => return Err(bad_style(s, from)),
        },
        Value::Guid(g) => {
            let text = guid_text(g);
            if too_long(&text) {
                let target = if is_unicode(to) { "nchar" } else { "char" };
                return Err(SqlError::new(
                    8170,
                    format!("Insufficient result space to convert uniqueidentifier value to {target}."),
                ));
            }
            text
        }
        Value::Date(_) | Value::Time(_) | Value::DateTime { .. } | Value::DateTimeOffset { .. } => {
            temporal_text(v, from, style)?
        }
        Value::Null => return Ok(Value::Null),
    };
    Ok(fit_string(&text, to))
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = s.bytes().map(|b| (b as char).to_digit(16).map(|d| d as u8)).collect::<Option<_>>()?;
    // an odd number of digits gets a leading zero
    let mut padded = Vec::with_capacity(digits.len() + 1);
    if digits.len() % 2 == 1 {
        padded.push(0);
    }
    padded.extend(digits);
    Some(padded.chunks(2).map(|p| p[0] << 4 | p[1]).collect())
}

fn to_binary(v: &Value, from: &SqlType, to: &SqlType, style: Option<i32>) -> SqlResult<Value> {
    let (n, pad) = match *to {
        SqlType::Binary(n) => (n, true),
        SqlType::VarBinary(n) => (n, false),
        _ => (MAX, false),
    };
    let (bytes, numeric) = match v {
        Value::Str(s) => (string_to_bytes(s, from, style)?, false),
        Value::Binary(b) => (b.to_vec(), false),
        Value::Bit(b) => (vec![u8::from(*b)], true),
        Value::Int(i) => (i.to_be_bytes()[8 - int_width(from)..].to_vec(), true),
        Value::Float(x) if matches!(from, SqlType::Real) => ((*x as f32).to_be_bytes().to_vec(), true),
        Value::Float(x) => (x.to_be_bytes().to_vec(), true),
        Value::Decimal { value, scale } => match *from {
            SqlType::Decimal { precision, .. } => (decimal_to_binary(*value, precision, *scale), true),
            _ => (value.to_be_bytes()[16 - int_width(from)..].to_vec(), true),
        },
        Value::Guid(g) => (g.to_vec(), false),
        Value::Date(_) | Value::Time(_) | Value::DateTime { .. } | Value::DateTimeOffset { .. } => {
            (temporal_to_binary(v, from), true)
        }
        Value::Null => return Ok(Value::Null),
    };
    Ok(Value::Binary(Arc::from(fit_binary(bytes, n, pad, numeric))))
}

/// Truncates or pads to a binary type's length: numbers on the left, everything else on
/// the right (as SQL Server does).
fn fit_binary(mut bytes: Vec<u8>, n: u16, pad: bool, numeric: bool) -> Vec<u8> {
    if n == MAX {
        return bytes;
    }
    let n = usize::from(n);
    if bytes.len() > n {
        if numeric {
            bytes.drain(..bytes.len() - n);
        } else {
            bytes.truncate(n);
        }
    } else if pad && bytes.len() < n {
        if numeric {
            let mut out = vec![0; n - bytes.len()];
            out.extend(bytes);
            return out;
        }
        bytes.resize(n, 0);
    }
    bytes
}

fn string_to_bytes(s: &str, from: &SqlType, style: Option<i32>) -> SqlResult<Vec<u8>> {
    let bad = || SqlError::new(8114, format!("Error converting data type {} to varbinary.", string_type_name(from)));
    match style.unwrap_or(0) {
        0 if is_unicode(from) => Ok(s.encode_utf16().flat_map(u16::to_le_bytes).collect()),
        0 => Ok(encode_cp1252(s)),
        1 => {
            let body = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).ok_or_else(bad)?;
            parse_hex(body).ok_or_else(bad)
        }
        2 => parse_hex(s).ok_or_else(bad),
        other => Err(SqlError::new(
            281,
            format!("{other} is not a valid style number when converting from {} to binary.", string_type_name(from)),
        )),
    }
}

fn temporal_to_binary(v: &Value, from: &SqlType) -> Vec<u8> {
    match (v, from) {
        (Value::DateTime { days, ticks }, SqlType::DateTime) => {
            let (d, t300) = datetime_storage(*days, *ticks);
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

/// Parses `6F9619FF-8B86-D011-B42D-00C04FC964FF` (optionally in braces; characters past
/// the 36th are ignored, as SQL Server does).
pub(crate) fn parse_guid(s: &str) -> Option<[u8; 16]> {
    let t = s.strip_prefix('{').unwrap_or(s);
    let t = t.get(..36)?;
    let groups: Vec<&str> = t.split('-').collect();
    let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    if lens != [8, 4, 4, 4, 12] {
        return None;
    }
    let b = parse_hex(&groups.concat())?;
    if b.len() != 16 || !t.bytes().all(|c| c == b'-' || c.is_ascii_hexdigit()) {
        return None;
    }
    Some([b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]])
}

fn to_guid(v: &Value, _from: &SqlType) -> SqlResult<Value> {
    match v {
        Value::Guid(g) => Ok(Value::Guid(*g)),
        Value::Str(s) => parse_guid(s).map(Value::Guid).ok_or_else(|| {
            SqlError::new(8169, "Conversion failed when converting from a character string to uniqueidentifier.")
        }),
        Value::Binary(b) => {
            let mut g = [0u8; 16];
            let n = b.len().min(16);
            g[..n].copy_from_slice(&b[..n]);
            Ok(Value::Guid(g))
        }
        _ => Err(unexpected(v, &SqlType::UniqueIdentifier)),
    }
}

/// `datetime`'s on-disk form of a value on its grid: days since 1900, 1/300 s ticks.
fn datetime_storage(days: i32, ticks: u64) -> (i32, u32) {
    (days - DAYS_TO_1900, ((ticks * 3 + 50_000) / 100_000) as u32)
}

/// 100 ns ticks of a 1/300 s tick count (rounded: 1 → 33 333, 2 → 66 667).
fn ticks_from_t300(t300: u32) -> u64 {
    (u64::from(t300) * 100_000 + 1) / 3
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
pub(crate) fn round_scale(days: i32, ticks: u64, scale: u8) -> (i32, u64) {
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
    SqlError::new(
        242,
        format!(
            "The conversion of a {from} data type to a {} data type resulted in an out-of-range value.",
            base_type_name(to)
        ),
    )
}

fn to_temporal(v: &Value, from: &SqlType, to: &SqlType, style: Option<i32>) -> SqlResult<Value> {
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
        Value::Str(s) => {
            let bad =
                || SqlError::new(241, "Conversion failed when converting date and/or time from character string.");
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

/// Whether storing `v` (of a string or binary type) in a column of type `to` would cut
/// data off — SQL Server's error 2628 on INSERT/UPDATE, where [`cast`] truncates silently.
/// Trailing spaces of strings may be cut without error, as in SQL Server.
pub fn would_truncate(v: &Value, to: &SqlType) -> bool {
    let limit = match *to {
        SqlType::Char(n)
        | SqlType::VarChar(n)
        | SqlType::NChar(n)
        | SqlType::NVarChar(n)
        | SqlType::Binary(n)
        | SqlType::VarBinary(n)
            if n != MAX =>
        {
            usize::from(n)
        }
        _ => return false,
    };
    match v {
        Value::Str(s) => char_units(s.trim_end_matches(' '), is_unicode(to)) > limit,
        Value::Binary(b) => b.len() > limit,
        _ => false,
    }
}

/// How sqlcmd/SSMS show a value in a result grid: `1.50`, `12.5000`, `0.33333333333333331`,
/// `2024-01-31 13:45:00.000`, `0x0AFF`, `NULL`.
pub fn display_text(v: &Value, t: &SqlType) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Bit(b) => if *b { "1" } else { "0" }.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) if matches!(t, SqlType::Real) => format_g(*x, 7),
        Value::Float(x) => format_g(*x, 17),
        Value::Decimal { value, scale } => match *t {
            SqlType::Decimal { scale: s, .. } if s != *scale => {
                format_decimal(num::rescale_round(*value, *scale, s).unwrap_or(*value), s)
            }
            _ => format_decimal(*value, *scale),
        },
        Value::Str(s) => s.to_string(),
        Value::Binary(b) => format!("0x{}", hex(b)),
        Value::Date(d) => datetime::format_date(*d),
        Value::Time(ticks) => datetime::format_time(*ticks, fraction_digits_or_7(t)),
        Value::DateTime { days, ticks } => {
            let digits = match t {
                SqlType::SmallDateTime => 0,
                _ => fraction_digits_or_7(t),
            };
            format!("{} {}", datetime::format_date(*days), datetime::format_time(*ticks, digits))
        }
        Value::DateTimeOffset { days, ticks, offset } => {
            let (d, tk) = datetime::shift_minutes(*days, *ticks, (*offset).into());
            format!(
                "{} {} {}",
                datetime::format_date(d),
                datetime::format_time(tk, fraction_digits_or_7(t)),
                datetime::format_offset(*offset)
            )
        }
        Value::Guid(g) => guid_text(g),
    }
}

fn fraction_digits_or_7(t: &SqlType) -> u8 {
    match t {
        SqlType::Time { .. } | SqlType::DateTime2 { .. } | SqlType::DateTimeOffset { .. } | SqlType::DateTime => {
            fraction_digits(t)
        }
        _ => 7,
    }
}

/// A SQL type that holds `v` as it is, for values whose type is unknown.
fn natural_type(v: &Value) -> SqlType {
    match v {
        Value::Null | Value::Int(_) => SqlType::BigInt,
        Value::Bit(_) => SqlType::Bit,
        Value::Float(_) => SqlType::Float,
        Value::Decimal { scale, .. } => SqlType::Decimal { precision: 38, scale: *scale },
        Value::Str(_) => SqlType::NVarChar(MAX),
        Value::Binary(_) => SqlType::VarBinary(MAX),
        Value::Date(_) => SqlType::Date,
        Value::Time(_) => SqlType::Time { scale: 7 },
        Value::DateTime { .. } => SqlType::DateTime2 { scale: 7 },
        Value::DateTimeOffset { .. } => SqlType::DateTimeOffset { scale: 7 },
        Value::Guid(_) => SqlType::UniqueIdentifier,
    }
}

/// The storage layer's value for `v` of type `t` (which must already be in `t`'s canonical
/// form, as [`cast`] leaves it): `varchar` as Windows-1252 bytes (other characters become
/// `?`), `nvarchar` as UTF-16, `datetime` as days since 1900 and 1/300 s ticks, money in
/// 1/10000 units.
pub fn to_storage(v: &Value, t: &SqlType) -> row::Value {
    use SqlType as T;
    let clamp = |x: i64, lo: i64, hi: i64| x.clamp(lo, hi);
    match (v, t) {
        (Value::Null, _) => row::Value::Null,
        (Value::Bit(b), T::Bit) => row::Value::Bit(*b),
        (Value::Int(i), T::TinyInt) => row::Value::TinyInt(clamp(*i, 0, 255) as u8),
        (Value::Int(i), T::SmallInt) => row::Value::SmallInt(clamp(*i, i16::MIN.into(), i16::MAX.into()) as i16),
        (Value::Int(i), T::Int) => row::Value::Int(clamp(*i, i32::MIN.into(), i32::MAX.into()) as i32),
        (Value::Int(i), T::BigInt) => row::Value::BigInt(*i),
        (Value::Float(x), T::Real) => row::Value::Real(*x as f32),
        (Value::Float(x), T::Float) => row::Value::Float(*x),
        (Value::Decimal { value, scale }, T::Decimal { .. }) => row::Value::Decimal { value: *value, scale: *scale },
        (Value::Decimal { value, scale }, T::Money | T::SmallMoney) => {
            let v = num::rescale_round(*value, *scale, 4).unwrap_or(*value);
            row::Value::Money(v.clamp(i64::MIN.into(), i64::MAX.into()) as i64)
        }
        (Value::Str(s), T::Char(_) | T::VarChar(_)) => row::Value::Bytes(encode_cp1252(s)),
        (Value::Str(s), T::NChar(_) | T::NVarChar(_)) => row::Value::unicode(s),
        (Value::Binary(b), T::Binary(_) | T::VarBinary(_)) => row::Value::Bytes(b.to_vec()),
        (Value::Date(d), T::Date) => row::Value::Date(*d),
        (Value::Time(x), T::Time { .. }) => row::Value::Time(*x),
        (Value::DateTime { days, ticks }, T::DateTime2 { .. }) => row::Value::DateTime2 { days: *days, ticks: *ticks },
        (Value::DateTime { days, ticks }, T::DateTime) => {
            let (days, ticks) = datetime_storage(*days, *ticks);
            row::Value::DateTime { days, ticks }
        }
        (Value::DateTime { days, ticks }, T::SmallDateTime) => row::Value::SmallDateTime {
            days: (*days - DAYS_TO_1900).clamp(0, u16::MAX.into()) as u16,
            minutes: (*ticks / TICKS_PER_MINUTE).min(u64::from(MINUTES_PER_DAY) - 1) as u16,
        },
        (Value::DateTimeOffset { days, ticks, offset }, T::DateTimeOffset { .. }) => {
            row::Value::DateTimeOffset { days: *days, ticks: *ticks, offset: *offset }
        }
        (Value::Guid(g), T::UniqueIdentifier) => row::Value::Guid(*g),
        // not in the type's form: convert first
        _ => match cast(v, &natural_type(v), t, None) {
            Ok(c) if c != *v => to_storage(&c, t),
            _ => row::Value::Null,
        },
    }
}

/// The SQL value of a storage value of type `t`.
pub fn from_storage(v: row::Value, t: &SqlType) -> Value {
    use SqlType as T;
    match v {
        row::Value::Null => Value::Null,
        row::Value::Bit(b) => Value::Bit(b),
        row::Value::TinyInt(x) => Value::Int(x.into()),
        row::Value::SmallInt(x) => Value::Int(x.into()),
        row::Value::Int(x) => Value::Int(x.into()),
        row::Value::BigInt(x) => Value::Int(x),
        row::Value::Real(x) => Value::Float(x.into()),
        row::Value::Float(x) => Value::Float(x),
        row::Value::Decimal { value, scale } => match *t {
            T::Decimal { scale: s, .. } if s != scale => {
                Value::Decimal { value: num::rescale_round(value, scale, s).unwrap_or(value), scale: s }
            }
            _ => Value::Decimal { value, scale },
        },
        row::Value::Money(m) => Value::Decimal { value: m.into(), scale: 4 },
        row::Value::Date(d) => Value::Date(d),
        row::Value::Time(x) => Value::Time(x),
        row::Value::DateTime { days, ticks } => {
            Value::DateTime { days: days + DAYS_TO_1900, ticks: ticks_from_t300(ticks) }
        }
        row::Value::DateTime2 { days, ticks } => Value::DateTime { days, ticks },
        row::Value::SmallDateTime { days, minutes } => {
            Value::DateTime { days: i32::from(days) + DAYS_TO_1900, ticks: u64::from(minutes) * TICKS_PER_MINUTE }
        }
        row::Value::DateTimeOffset { days, ticks, offset } => Value::DateTimeOffset { days, ticks, offset },
        row::Value::Guid(g) => Value::Guid(g),
        row::Value::Bytes(b) => match t {
            T::Binary(_) | T::VarBinary(_) => Value::Binary(Arc::from(b)),
            _ => Value::Str(Arc::from(&*decode_cp1252(&b))),
        },
        row::Value::Unicode(u) => Value::Str(Arc::from(String::from_utf16_lossy(&u))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use SqlType as T;

    fn c(v: Value, from: T, to: T) -> SqlResult<Value> {
        cast(&v, &from, &to, None)
    }

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    fn err(r: SqlResult<Value>) -> (i32, String) {
        let e = r.unwrap_err();
        (e.number, e.message)
    }

    fn dec(value: i128, scale: u8) -> Value {
        Value::Decimal { value, scale }
    }

    fn d(p: u8, s: u8) -> T {
        T::Decimal { precision: p, scale: s }
    }

    #[test]
    fn integer_narrowing() {
        assert_eq!(c(Value::Int(300), T::Int, T::SmallInt).unwrap(), Value::Int(300));
        assert_eq!(
            err(c(Value::Int(300), T::Int, T::TinyInt)),
            (220, "Arithmetic overflow error for data type tinyint, value = 300.".into())
        );
        assert_eq!(
            err(c(dec(3_000_000_000, 0), d(10, 0), T::Int)),
            (8115, "Arithmetic overflow error converting expression to data type int.".into())
        );
        assert_eq!(c(Value::Float(2.7), T::Float, T::Int).unwrap(), Value::Int(2));
        assert_eq!(c(Value::Float(-2.7), T::Float, T::Int).unwrap(), Value::Int(-2));
        assert_eq!(c(dec(-25, 1), d(2, 1), T::Int).unwrap(), Value::Int(-2));
        // money rounds
        assert_eq!(c(dec(25_000, 4), T::Money, T::Int).unwrap(), Value::Int(3));
        assert_eq!(c(Value::Float(1e20), T::Float, T::Int).unwrap_err().number, 8115);
        assert_eq!(c(Value::Bit(true), T::Bit, T::Int).unwrap(), Value::Int(1));
    }

    #[test]
    fn strings_to_numbers() {
        assert_eq!(c(s(" 42 "), T::VarChar(10), T::Int).unwrap(), Value::Int(42));
        assert_eq!(c(s("-7"), T::VarChar(10), T::Int).unwrap(), Value::Int(-7));
        assert_eq!(c(s(""), T::VarChar(10), T::Int).unwrap(), Value::Int(0));
        assert_eq!(
            err(c(s("1.5"), T::VarChar(10), T::Int)),
            (245, "Conversion failed when converting the varchar value '1.5' to data type int.".into())
        );
        assert_eq!(
            err(c(s("x"), T::NVarChar(10), T::Int)).1,
            "Conversion failed when converting the nvarchar value 'x' to data type int."
        );
        assert_eq!(err(c(s("99999999999"), T::VarChar(20), T::Int)).0, 248);
        assert_eq!(c(s("1.255"), T::VarChar(10), d(5, 2)).unwrap(), dec(126, 2));
        assert_eq!(
            err(c(s("abc"), T::VarChar(10), d(5, 2))),
            (8114, "Error converting data type varchar to numeric.".into())
        );
        assert_eq!(
            err(c(s("12345"), T::VarChar(10), d(5, 2))),
            (8115, "Arithmetic overflow error converting varchar to data type numeric.".into())
        );
        assert_eq!(c(s("1e3"), T::VarChar(10), T::Float).unwrap(), Value::Float(1000.0));
        assert_eq!(
            err(c(s("abc"), T::VarChar(10), T::Float)),
            (8114, "Error converting data type varchar to float.".into())
        );
        assert_eq!(c(s("$1,234.56"), T::VarChar(10), T::Money).unwrap(), dec(12_345_600, 4));
        assert_eq!(err(c(s("x"), T::VarChar(10), T::Money)).0, 235);
        assert_eq!(c(s("true"), T::VarChar(10), T::Bit).unwrap(), Value::Bit(true));
        assert_eq!(c(s("0"), T::VarChar(10), T::Bit).unwrap(), Value::Bit(false));
        assert_eq!(c(s("5"), T::VarChar(10), T::Bit).unwrap(), Value::Bit(true));
        assert_eq!(err(c(s("yes"), T::VarChar(10), T::Bit)).0, 245);
    }

    #[test]
    fn decimals() {
        assert_eq!(c(dec(12345, 3), d(10, 3), d(10, 2)).unwrap(), dec(1235, 2));
        assert_eq!(c(dec(-12345, 3), d(10, 3), d(10, 2)).unwrap(), dec(-1235, 2));
        assert_eq!(
            err(c(dec(12345, 2), d(10, 2), d(4, 2))),
            (8115, "Arithmetic overflow error converting numeric to data type numeric.".into())
        );
        assert_eq!(
            err(c(Value::Int(1000), T::Int, d(3, 0))).1,
            "Arithmetic overflow error converting int to data type numeric."
        );
        assert_eq!(c(Value::Float(2.675), T::Float, d(5, 2)).unwrap(), dec(268, 2));
        assert_eq!(c(Value::Int(5), T::Int, T::Money).unwrap(), dec(50_000, 4));
        assert_eq!(c(dec(15, 1), d(2, 1), T::Float).unwrap(), Value::Float(1.5));
        assert_eq!(c(Value::Int(i64::MAX), T::BigInt, T::SmallMoney).unwrap_err().number, 8115);
    }

    #[test]
    fn numbers_to_strings() {
        assert_eq!(c(Value::Int(123), T::Int, T::VarChar(10)).unwrap(), s("123"));
        // too short: '*' for int to varchar, an error for decimal
        assert_eq!(c(Value::Int(123), T::Int, T::VarChar(2)).unwrap(), s("*"));
        assert_eq!(c(Value::Int(123), T::Int, T::NVarChar(2)).unwrap_err().number, 8115);
        assert_eq!(
            err(c(dec(12345, 2), d(5, 2), T::VarChar(2))),
            (8115, "Arithmetic overflow error converting numeric to data type varchar.".into())
        );
        assert_eq!(c(dec(150, 2), d(5, 2), T::VarChar(10)).unwrap(), s("1.50"));
        assert_eq!(c(dec(5, 2), d(5, 2), T::VarChar(10)).unwrap(), s("0.05"));
        assert_eq!(c(dec(125_000, 4), T::Money, T::VarChar(10)).unwrap(), s("12.50"));
        assert_eq!(cast(&dec(12_345_678_900, 4), &T::Money, &T::VarChar(20), Some(1)).unwrap(), s("1,234,567.89"));
        assert_eq!(cast(&dec(125_000, 4), &T::Money, &T::VarChar(20), Some(2)).unwrap(), s("12.5000"));
        // float: CAST uses 6 significant digits
        assert_eq!(c(Value::Float(1.0 / 3.0), T::Float, T::VarChar(30)).unwrap(), s("0.333333"));
        assert_eq!(c(Value::Float(123_456_789.0), T::Float, T::VarChar(30)).unwrap(), s("1.23457e+008"));
        assert_eq!(c(Value::Float(123_456.0), T::Float, T::VarChar(30)).unwrap(), s("123456"));
        assert_eq!(c(Value::Float(0.0001), T::Float, T::VarChar(30)).unwrap(), s("0.0001"));
        assert_eq!(c(Value::Float(0.00001), T::Float, T::VarChar(30)).unwrap(), s("1e-005"));
        assert_eq!(cast(&Value::Float(1.0 / 3.0), &T::Float, &T::VarChar(30), Some(1)).unwrap(), s("3.3333333e-001"));
        assert_eq!(
            cast(&Value::Float(1.0 / 3.0), &T::Float, &T::VarChar(30), Some(2)).unwrap(),
            s("3.333333333333333e-001")
        );
        assert_eq!(
            cast(&Value::Float(1.0 / 3.0), &T::Float, &T::VarChar(30), Some(3)).unwrap(),
            s("0.33333333333333331")
        );
        assert_eq!(c(Value::Bit(true), T::Bit, T::VarChar(3)).unwrap(), s("1"));
    }

    #[test]
    fn strings_to_strings() {
        assert_eq!(c(s("abcdef"), T::VarChar(10), T::VarChar(3)).unwrap(), s("abc"));
        assert_eq!(c(s("ab"), T::VarChar(10), T::Char(4)).unwrap(), s("ab  "));
        assert_eq!(c(s("中a"), T::NVarChar(10), T::VarChar(10)).unwrap(), s("?a"));
        assert_eq!(c(s("😀x"), T::NVarChar(10), T::NVarChar(2)).unwrap(), s("😀"));
        assert_eq!(c(s("😀x"), T::NVarChar(10), T::NVarChar(1)).unwrap(), s(""));
    }

    #[test]
    fn binary() {
        let b = |x: &[u8]| Value::Binary(Arc::from(x));
        assert_eq!(c(s("AB"), T::VarChar(2), T::VarBinary(10)).unwrap(), b(b"AB"));
        assert_eq!(c(s("A"), T::NVarChar(2), T::VarBinary(10)).unwrap(), b(&[0x41, 0]));
        assert_eq!(c(s("A"), T::VarChar(2), T::Binary(3)).unwrap(), b(&[0x41, 0, 0]));
        assert_eq!(c(Value::Int(258), T::Int, T::VarBinary(10)).unwrap(), b(&[0, 0, 1, 2]));
        assert_eq!(c(Value::Int(258), T::Int, T::Binary(2)).unwrap(), b(&[1, 2]));
        assert_eq!(c(Value::Int(1), T::Int, T::Binary(6)).unwrap(), b(&[0, 0, 0, 0, 0, 1]));
        assert_eq!(c(b(&[1, 2]), T::VarBinary(2), T::Int).unwrap(), Value::Int(258));
        assert_eq!(c(b(&[0xFF, 0xFF, 0xFF, 0xFF]), T::VarBinary(4), T::Int).unwrap(), Value::Int(-1));
        assert_eq!(c(b(&[0xFF]), T::VarBinary(4), T::TinyInt).unwrap(), Value::Int(255));
        assert_eq!(cast(&b(&[0x0A, 0xFF]), &T::VarBinary(2), &T::VarChar(10), Some(1)).unwrap(), s("0x0AFF"));
        assert_eq!(cast(&b(&[0x0A, 0xFF]), &T::VarBinary(2), &T::VarChar(10), Some(2)).unwrap(), s("0AFF"));
        assert_eq!(cast(&s("0x0aff"), &T::VarChar(10), &T::VarBinary(10), Some(1)).unwrap(), b(&[0x0A, 0xFF]));
        assert_eq!(c(b(b"hi"), T::VarBinary(2), T::VarChar(10)).unwrap(), s("hi"));
        let bytes = c(dec(-15, 1), d(5, 1), T::VarBinary(20)).unwrap();
        assert_eq!(c(bytes, T::VarBinary(20), d(5, 1)).unwrap(), dec(-15, 1));
    }

    fn dt(s: &str) -> Value {
        c(Value::str(s), T::VarChar(30), T::DateTime2 { scale: 7 }).unwrap()
    }

    #[test]
    fn dates_from_strings() {
        let v = c(s("2024-01-31 13:45:00.123"), T::VarChar(30), T::DateTime).unwrap();
        assert_eq!(display_text(&v, &T::DateTime), "2024-01-31 13:45:00.123");
        // datetime rounds to .000, .003, .007
        for (text, shown) in
            [("00:00:00.001", ".000"), ("00:00:00.002", ".003"), ("00:00:00.005", ".007"), ("00:00:00.009", ".010")]
        {
            let v = c(s(text), T::VarChar(30), T::DateTime).unwrap();
            assert!(display_text(&v, &T::DateTime).ends_with(shown), "{text}");
        }
        let v = c(s("23:59:59.999"), T::VarChar(30), T::DateTime).unwrap();
        assert_eq!(display_text(&v, &T::DateTime), "1900-01-02 00:00:00.000");
        assert_eq!(
            err(c(s("1700-01-01"), T::VarChar(30), T::DateTime)),
            (
                242,
                "The conversion of a varchar data type to a datetime data type resulted in an out-of-range value."
                    .into()
            )
        );
        assert_eq!(
            err(c(s("garbage"), T::VarChar(30), T::DateTime)),
            (241, "Conversion failed when converting date and/or time from character string.".into())
        );
        assert_eq!(err(c(s("2024-01-31 10:00:00.1234"), T::VarChar(30), T::DateTime)).0, 241);
        assert_eq!(c(s("2024-01-31 13:45"), T::VarChar(30), T::Date).unwrap(), Value::Date(738_915));
        let v = c(s("2024-01-31 13:45:29.999"), T::VarChar(30), T::SmallDateTime).unwrap();
        assert_eq!(display_text(&v, &T::SmallDateTime), "2024-01-31 13:46:00");
        let v = c(s("2024-01-31 13:45:29.998"), T::VarChar(30), T::SmallDateTime).unwrap();
        assert_eq!(display_text(&v, &T::SmallDateTime), "2024-01-31 13:45:00");
        let v = c(s("13:45:00.1234567"), T::VarChar(30), T::Time { scale: 3 }).unwrap();
        assert_eq!(display_text(&v, &T::Time { scale: 3 }), "13:45:00.123");
        let v = cast(&s("31/01/2024"), &T::VarChar(30), &T::Date, Some(103)).unwrap();
        assert_eq!(v, Value::Date(738_915));
    }

    #[test]
    fn dates_to_strings() {
        let v = c(s("2024-01-31 13:45:00.123"), T::VarChar(30), T::DateTime).unwrap();
        assert_eq!(c(v.clone(), T::DateTime, T::VarChar(30)).unwrap(), s("Jan 31 2024  1:45PM"));
        assert_eq!(cast(&v, &T::DateTime, &T::VarChar(30), Some(121)).unwrap(), s("2024-01-31 13:45:00.123"));
        assert_eq!(cast(&v, &T::DateTime, &T::VarChar(30), Some(112)).unwrap(), s("20240131"));
        assert_eq!(err(cast(&v, &T::DateTime, &T::VarChar(30), Some(99))).0, 281);
        let v2 = c(v.clone(), T::DateTime, T::DateTime2 { scale: 7 }).unwrap();
        assert_eq!(c(v2, T::DateTime2 { scale: 7 }, T::VarChar(30)).unwrap(), s("2024-01-31 13:45:00.1233333"));
        assert_eq!(c(Value::Date(738_915), T::Date, T::VarChar(30)).unwrap(), s("2024-01-31"));
        let t = c(v.clone(), T::DateTime, T::Time { scale: 7 }).unwrap();
        assert_eq!(c(t, T::Time { scale: 7 }, T::VarChar(30)).unwrap(), s("13:45:00.1233333"));
        assert_eq!(c(Value::Date(738_915), T::Date, T::DateTime).unwrap(), Value::DateTime { days: 738_915, ticks: 0 });
    }

    #[test]
    fn dates_and_numbers() {
        let v = c(Value::Int(1), T::Int, T::DateTime).unwrap();
        assert_eq!(display_text(&v, &T::DateTime), "1900-01-02 00:00:00.000");
        let v = c(Value::Float(1.5), T::Float, T::DateTime).unwrap();
        assert_eq!(display_text(&v, &T::DateTime), "1900-01-02 12:00:00.000");
        assert_eq!(c(v.clone(), T::DateTime, T::Float).unwrap(), Value::Float(1.5));
        // datetime → int rounds to the nearest day
        assert_eq!(c(v, T::DateTime, T::Int).unwrap(), Value::Int(2));
        assert_eq!(
            err(c(Value::Int(1), T::Int, T::Date)),
            (529, "Explicit conversion from data type int to date is not allowed.".into())
        );
        assert_eq!(err(c(Value::Date(1), T::Date, T::Int)).0, 529);
        let v = dt("2024-01-31 13:45:00.1234567");
        assert_eq!(
            c(v.clone(), T::DateTime2 { scale: 7 }, T::DateTime2 { scale: 2 }).unwrap(),
            dt("2024-01-31 13:45:00.12")
        );
        assert_eq!(display_text(&v, &T::DateTime2 { scale: 7 }), "2024-01-31 13:45:00.1234567");
    }

    #[test]
    fn datetimeoffset() {
        let dto = |scale| T::DateTimeOffset { scale };
        let v = c(s("2025-03-04 10:11:12.1234567 +05:30"), T::VarChar(40), dto(7)).unwrap();
        // stored as the UTC instant
        let day = super::super::days_from_civil(2025, 3, 4);
        let utc = (4 * 3600 + 41 * 60 + 12) * TICKS_PER_SECOND + 1_234_567;
        assert_eq!(v, Value::DateTimeOffset { days: day, ticks: utc, offset: 330 });
        assert_eq!(display_text(&v, &dto(7)), "2025-03-04 10:11:12.1234567 +05:30");
        assert_eq!(c(v.clone(), dto(7), T::VarChar(40)).unwrap(), s("2025-03-04 10:11:12.1234567 +05:30"));
        assert_eq!(cast(&v, &dto(7), &T::VarChar(40), Some(126)).unwrap(), s("2025-03-04T10:11:12.1234567+05:30"));
        assert_eq!(cast(&v, &dto(7), &T::VarChar(40), Some(127)).unwrap(), s("2025-03-04T04:41:12.1234567Z"));
        // the local time survives conversion to the types without an offset
        assert_eq!(c(v.clone(), dto(7), T::DateTime2 { scale: 7 }).unwrap(), dt("2025-03-04 10:11:12.1234567"));
        assert_eq!(c(v.clone(), dto(7), T::Date).unwrap(), Value::Date(day));
        // … and datetime2 gets +00:00
        let back = c(dt("2025-03-04 10:11:12.1234567"), T::DateTime2 { scale: 7 }, dto(7)).unwrap();
        assert_eq!(display_text(&back, &dto(7)), "2025-03-04 10:11:12.1234567 +00:00");
        // scale: rounded half up, carrying into the next day
        let r = c(s("2025-12-31 23:59:59.9999999 -02:00"), T::VarChar(40), dto(0)).unwrap();
        assert_eq!(display_text(&r, &dto(0)), "2026-01-01 00:00:00 -02:00");
        assert_eq!(display_text(&c(v.clone(), dto(7), dto(3)).unwrap(), &dto(3)), "2025-03-04 10:11:12.123 +05:30");
        // range: both the UTC and the local date must exist
        assert_eq!(err(c(s("0001-01-01 00:00 +01:00"), T::VarChar(40), dto(7))).0, 242);
        assert_eq!(err(c(s("9999-12-31 23:00 -01:00"), T::VarChar(40), dto(7))).0, 242);
        assert_eq!(err(c(s("2025-01-01 +14:30"), T::VarChar(40), dto(7))).0, 241);
        assert_eq!(err(c(v.clone(), dto(7), T::Int)).0, 529);
        let bytes = c(v.clone(), dto(7), T::VarBinary(20)).unwrap();
        assert_eq!(c(bytes, T::VarBinary(20), dto(7)).unwrap(), v);
        assert_eq!(from_storage(to_storage(&v, &dto(7)), &dto(7)), v);
    }

    #[test]
    fn guids() {
        let text = "6F9619FF-8B86-D011-B42D-00C04FC964FF";
        let g = c(s(&text.to_lowercase()), T::VarChar(36), T::UniqueIdentifier).unwrap();
        assert_eq!(
            g,
            Value::Guid([
                0xFF, 0x19, 0x96, 0x6F, 0x86, 0x8B, 0x11, 0xD0, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF
            ])
        );
        assert_eq!(c(g.clone(), T::UniqueIdentifier, T::VarChar(36)).unwrap(), s(text));
        assert_eq!(display_text(&g, &T::UniqueIdentifier), text);
        assert_eq!(c(s(&format!("{{{text}}}")), T::VarChar(38), T::UniqueIdentifier).unwrap(), g);
        assert_eq!(
            err(c(s("nope"), T::VarChar(36), T::UniqueIdentifier)),
            (8169, "Conversion failed when converting from a character string to uniqueidentifier.".into())
        );
        assert_eq!(err(c(g, T::UniqueIdentifier, T::Char(10))).0, 8170);
    }

    #[test]
    fn truncation() {
        assert!(would_truncate(&s("abcd"), &T::VarChar(3)));
        assert!(!would_truncate(&s("abc   "), &T::VarChar(3)));
        assert!(!would_truncate(&s("中文"), &T::NVarChar(2)));
        assert!(would_truncate(&Value::Binary(Arc::from(&[0u8; 4][..])), &T::Binary(3)));
        assert!(!would_truncate(&s("abcd"), &T::VarChar(MAX)));
    }

    #[test]
    fn display() {
        assert_eq!(display_text(&Value::Null, &T::Int), "NULL");
        assert_eq!(display_text(&dec(150, 2), &d(5, 2)), "1.50");
        assert_eq!(display_text(&dec(125_000, 4), &T::Money), "12.5000");
        assert_eq!(display_text(&Value::Float(1.0 / 3.0), &T::Float), "0.33333333333333331");
        assert_eq!(display_text(&Value::Float(f64::from(1.0f32 / 3.0)), &T::Real), "0.3333333");
        assert_eq!(display_text(&Value::Float(1.0), &T::Float), "1");
        assert_eq!(display_text(&Value::Binary(Arc::from(&[0x0A, 0xFF][..])), &T::VarBinary(2)), "0x0AFF");
        assert_eq!(display_text(&Value::Bit(true), &T::Bit), "1");
        assert_eq!(display_text(&Value::Time(0), &T::Time { scale: 7 }), "00:00:00.0000000");
    }

    #[test]
    fn storage_round_trip() {
        let cases = [
            (Value::Int(-5), T::SmallInt),
            (Value::Int(200), T::TinyInt),
            (Value::Float(0.5), T::Real),
            (dec(-12345, 2), d(7, 2)),
            (dec(125_000, 4), T::Money),
            (s("héllo€"), T::VarChar(10)),
            (s("ab  "), T::Char(4)),
            (s("中文"), T::NVarChar(10)),
            (Value::Binary(Arc::from(&[1u8, 2][..])), T::VarBinary(5)),
            (dt("2024-01-31 13:45:00.1234567"), T::DateTime2 { scale: 7 }),
            (c(s("2024-01-31 13:45:00.997"), T::VarChar(30), T::DateTime).unwrap(), T::DateTime),
            (c(s("2024-01-31 13:45"), T::VarChar(30), T::SmallDateTime).unwrap(), T::SmallDateTime),
            (Value::Date(738_915), T::Date),
            (Value::Time(123_450_000), T::Time { scale: 3 }),
            (Value::Guid([7; 16]), T::UniqueIdentifier),
            (Value::Null, T::Int),
        ];
        for (v, t) in cases {
            let stored = to_storage(&v, &t);
            assert_eq!(from_storage(stored, &t), v, "{t:?}");
        }
        assert_eq!(to_storage(&s("中"), &T::VarChar(2)), row::Value::Bytes(b"?".to_vec()));
        let stored = to_storage(&c(s("1900-01-01 00:00:00.003"), T::VarChar(30), T::DateTime).unwrap(), &T::DateTime);
        assert_eq!(stored, row::Value::DateTime { days: 0, ticks: 1 });
        // a value not in the type's form is converted first
        assert_eq!(to_storage(&Value::Int(3), &d(5, 2)), row::Value::Decimal { value: 300, scale: 2 });
    }

    proptest! {
        #[test]
        fn int_varchar_round_trip(x in any::<i64>()) {
            let text = c(Value::Int(x), T::BigInt, T::VarChar(30)).unwrap();
            prop_assert_eq!(c(text, T::VarChar(30), T::BigInt).unwrap(), Value::Int(x));
        }

        #[test]
        fn decimal_varchar_round_trip(x in -10i128.pow(20)..10i128.pow(20), scale in 0u8..10) {
            let t = d(38, scale);
            let text = c(dec(x, scale), t, T::VarChar(50)).unwrap();
            prop_assert_eq!(c(text, T::VarChar(50), t).unwrap(), dec(x, scale));
        }

        #[test]
        fn float_style3_round_trip(x in any::<f64>()) {
            prop_assume!(x.is_finite());
            let text = cast(&Value::Float(x), &T::Float, &T::VarChar(40), Some(3)).unwrap();
            prop_assert_eq!(c(text, T::VarChar(40), T::Float).unwrap(), Value::Float(x));
        }

        #[test]
        fn datetime2_text_round_trip(days in 0i32..=tessera_access::row::MAX_DATE_DAYS, ticks in 0u64..TICKS_PER_DAY) {
            let t = T::DateTime2 { scale: 7 };
            let v = Value::DateTime { days, ticks };
            let text = c(v.clone(), t, T::VarChar(40)).unwrap();
            prop_assert_eq!(c(text, T::VarChar(40), t).unwrap(), v);
        }

        #[test]
        fn datetimeoffset_text_round_trip(
            days in 1i32..tessera_access::row::MAX_DATE_DAYS,
            ticks in 0u64..TICKS_PER_DAY,
            offset in -840i16..=840,
        ) {
            let t = T::DateTimeOffset { scale: 7 };
            let v = Value::DateTimeOffset { days, ticks, offset };
            let text = c(v.clone(), t, T::VarChar(40)).unwrap();
            prop_assert_eq!(c(text, T::VarChar(40), t).unwrap(), v.clone());
            let iso = cast(&v, &t, &T::VarChar(40), Some(126)).unwrap();
            prop_assert_eq!(c(iso, T::VarChar(40), t).unwrap(), v);
        }

        #[test]
        fn casts_never_panic(x in any::<i64>(), f in any::<f64>(), text in "\\PC{0,12}") {
            let types = [T::Bit, T::TinyInt, T::Int, T::BigInt, T::Real, T::Float, d(5, 2), d(38, 10), T::Money, T::SmallMoney,
                T::Char(3), T::VarChar(5), T::NVarChar(2), T::Binary(3), T::VarBinary(MAX), T::Date, T::Time { scale: 2 },
                T::DateTime, T::SmallDateTime, T::DateTime2 { scale: 0 }, T::DateTimeOffset { scale: 3 }, T::UniqueIdentifier];
            for from in [T::BigInt, T::Float, T::NVarChar(MAX)] {
                let v = match from { T::BigInt => Value::Int(x), T::Float if f.is_finite() => Value::Float(f), T::Float => Value::Float(0.0), _ => s(&text) };
                for to in &types {
                    if let Ok(r) = cast(&v, &from, to, None) {
                        let _ = display_text(&r, to);
                        let _ = from_storage(to_storage(&r, to), to);
                        for back in &types {
                            let _ = cast(&r, to, back, None);
                        }
                    }
                }
            }
        }
    }
}
