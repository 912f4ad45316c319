//! Conversion to the character types: numbers, money and floats as text (with `CONVERT`
//! styles), binary, uniqueidentifier and date/time text, and fitting text to a type's
//! length.

use super::super::num::{self, format_decimal};
use super::super::text::{decode_cp1252, to_code_page};
use super::super::typing::{base_type_name, family, is_unicode, Family};
use super::super::{SqlType, Value};
use super::binary::hex;
use super::temporal::temporal_text;
use super::{bad_style, guid_text, overflow};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_types::MAX;

/// Formats a float as C's `%.{precision}g` with SQL Server's three-digit exponent
/// (`1.23457e+008`).
pub(super) fn format_g(x: f64, precision: usize) -> String {
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

/// Length of a string in the units of a character type's length (bytes for varchar,
/// UTF-16 code units for nvarchar).
pub(super) fn char_units(s: &str, unicode: bool) -> usize {
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

pub(super) fn to_string(v: &Value, from: &SqlType, to: &SqlType, style: Option<i32>) -> SqlResult<Value> {
    let limit = string_length_limit(to);
    let too_long = |text: &str| limit.is_some_and(|n| char_units(text, is_unicode(to)) > n);
    let text = match v {
        // A (max) type keeps a string it can hold as it is (no copy of a long value).
        Value::Str(s)
            if to.is_max() && (is_unicode(to) || matches!(to_code_page(s), std::borrow::Cow::Borrowed(_))) =>
        {
            return Ok(v.clone())
        }
        Value::Str(s) => return Ok(fit_string(s, to)),
        // `cast` reads a large value whole before it converts it.
        Value::Large(l) => return to_string(&l.value()?, from, to, style),
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
                return Err(msg::ARITHMETIC_OVERFLOW.with(&[&src, &base_type_name(to)]));
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
                return Err(msg::UNIQUEIDENTIFIER_RESULT_TOO_SMALL.with(&[&target]));
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
