//! Conversion to the numeric types: bit, tinyint/smallint/int/bigint, real/float,
//! decimal/numeric and money/smallmoney — from numbers, strings, binary and datetime.

use super::super::datetime::DAYS_TO_1900;
use super::super::num::{self, decimal_to_f64, f64_to_decimal, fits_precision, parse_decimal_text};
use super::super::typing::{base_type_name, family, Family};
use super::super::{SqlType, Value};
use super::{overflow, string_type_name, unexpected};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_types::{MAX, TICKS_PER_DAY};

fn numeric_overflow(from: &SqlType) -> SqlError {
    let from = if matches!(from, SqlType::Decimal { .. }) { "numeric" } else { base_type_name(from) };
    msg::ARITHMETIC_OVERFLOW.with(&[&from, &"numeric"])
}

/// The integer range of an integer type.
fn int_range(t: &SqlType) -> (i64, i64) {
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

fn conversion_failed(s: &str, from: &SqlType, to: &SqlType) -> SqlError {
    msg::CONVERSION_FAILED.with(&[&string_type_name(from), &s, &base_type_name(to)])
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
            let from = string_type_name(from);
            Err(match to {
                SqlType::TinyInt => msg::CONVERSION_OVERFLOWED_COLUMN.with(&[&from, &s, &"INT1"]),
                SqlType::SmallInt => msg::CONVERSION_OVERFLOWED_COLUMN.with(&[&from, &s, &"INT2"]),
                SqlType::Int => msg::CONVERSION_OVERFLOWED_INT.with(&[&from, &s]),
                _ => overflow(to),
            })
        }
    }
}

/// Big-endian two's complement of the last `width` bytes (zero-extended on the left).
pub(super) fn int_from_bytes(b: &[u8], width: usize) -> i64 {
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

pub(super) fn int_width(t: &SqlType) -> usize {
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

pub(super) fn to_int(v: &Value, from: &SqlType, to: &SqlType) -> SqlResult<Value> {
    let x: i128 = match v {
        Value::Bit(b) => i128::from(*b),
        Value::Int(i) => {
            let (lo, hi) = int_range(to);
            if *i < lo || *i > hi {
                return Err(msg::ARITHMETIC_OVERFLOW_FOR_TYPE.with(&[&base_type_name(to), &i]));
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

pub(super) fn to_float(v: &Value, from: &SqlType, to: &SqlType) -> SqlResult<Value> {
    let x = match v {
        Value::Bit(b) => f64::from(u8::from(*b)),
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Decimal { value, scale } => decimal_to_f64(*value, *scale),
        Value::Str(s) => {
            parse_float_text(s).ok_or_else(|| msg::TYPE_CONVERSION_ERROR.with(&[&string_type_name(from), &"float"]))?
        }
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

pub(super) fn to_decimal(v: &Value, from: &SqlType, to: &SqlType) -> SqlResult<Value> {
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
        let bad = || msg::INVALID_MONEY_STRING.err();
        let t = parse_decimal_text(text).ok_or_else(bad)?;
        let value = t.scaled(scale).ok_or_else(|| overflow(to))?;
        return finish_decimal(value, precision, scale, money).ok_or_else(|| overflow(to));
    }
    let t = parse_decimal_text(s).ok_or_else(|| msg::TYPE_CONVERSION_ERROR.with(&[&src, &"numeric"]))?;
    let over = || msg::ARITHMETIC_OVERFLOW.with(&[&src, &"numeric"]);
    if t.integral_digits() > usize::from(precision.saturating_sub(scale)) {
        return Err(over());
    }
    let value = t.scaled(scale).ok_or_else(over)?;
    finish_decimal(value, precision, scale, None).ok_or_else(over)
}

/// SQL Server's binary form of a decimal: precision, scale, sign (1 = positive), then the
/// magnitude little-endian.
pub(super) fn decimal_to_binary(value: i128, precision: u8, scale: u8) -> Vec<u8> {
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
    let bad = || msg::TYPE_CONVERSION_ERROR.with(&[&"varbinary", &"numeric"]);
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

pub(super) fn to_bit(v: &Value, from: &SqlType) -> SqlResult<Value> {
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
