//! Conversion to binary/varbinary: the byte forms of numbers and strings (hex text with
//! styles 1 and 2), truncated or padded to the type's length.

use std::sync::Arc;

use super::super::text::encode_cp1252;
use super::super::typing::is_unicode;
use super::super::{SqlType, Value};
use super::numeric::{decimal_to_binary, int_width};
use super::string_type_name;
use super::temporal::temporal_to_binary;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_types::MAX;

pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

pub(super) fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = s.bytes().map(|b| (b as char).to_digit(16).map(|d| d as u8)).collect::<Option<_>>()?;
    // an odd number of digits gets a leading zero
    let mut padded = Vec::with_capacity(digits.len() + 1);
    if digits.len() % 2 == 1 {
        padded.push(0);
    }
    padded.extend(digits);
    Some(padded.chunks(2).map(|p| p[0] << 4 | p[1]).collect())
}

pub(super) fn to_binary(v: &Value, from: &SqlType, to: &SqlType, style: Option<i32>) -> SqlResult<Value> {
    let (n, pad) = match *to {
        SqlType::Binary(n) => (n, true),
        SqlType::VarBinary(n) => (n, false),
        _ => (MAX, false),
    };
    let (bytes, numeric) = match v {
        // A varbinary that holds the bytes keeps them as they are (no copy of a long value).
        Value::Binary(b) if !pad && (n == MAX || b.len() <= usize::from(n)) => return Ok(v.clone()),
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
        // `cast` reads a large value whole before it converts it.
        Value::Large(l) => return to_binary(&l.value()?, from, to, style),
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
    let bad = || msg::TYPE_CONVERSION_ERROR.with(&[&string_type_name(from), &"varbinary"]);
    match style.unwrap_or(0) {
        0 if is_unicode(from) => Ok(s.encode_utf16().flat_map(u16::to_le_bytes).collect()),
        0 => Ok(encode_cp1252(s)),
        1 => {
            let body = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).ok_or_else(bad)?;
            parse_hex(body).ok_or_else(bad)
        }
        2 => parse_hex(s).ok_or_else(bad),
        other => Err(msg::INVALID_CONVERT_STYLE.with(&[&other, &string_type_name(from), &"binary"])),
    }
}
