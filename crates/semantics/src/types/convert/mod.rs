//! `CAST`/`CONVERT` with SQL Server's results and errors, how a client shows a value, and
//! the mapping to and from the storage layer's values.
//!
//! [`cast`] hands a value to the conversion for its target type's family, one file each:
//!
//! * `numeric` — to bit, the integer types, float/real, decimal and money.
//! * `string` — to char/varchar/nchar/nvarchar: number, money and float text with
//!   `CONVERT` styles, fitting text to a length.
//! * `binary` — to binary/varbinary: byte forms, hex text.
//! * `temporal` — to and from the date and time types: parsing and `CONVERT` styles,
//!   rounding to each type's grid, range checks, binary forms.
//! * `guid` — to uniqueidentifier, and its text.
//!
//! `display` is how a client shows a value; `storage` maps values to and from the
//! storage layer's. This file holds [`cast`], [`check_explicit`], [`would_truncate`] and
//! the errors the families share.

use super::typing::{base_type_name, conversion, family, is_unicode, Conversion, Family};
use super::{LargeKind, SqlType, Value};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_types::MAX;

mod binary;
mod display;
mod guid;
mod numeric;
mod string;
mod temporal;
#[cfg(test)]
mod tests;

pub use display::display_text;
pub(crate) use guid::guid_text;
pub(crate) use numeric::check_int;
pub(crate) use string::fit_string;
pub(crate) use temporal::round_datetime;

use binary::to_binary;
use guid::to_guid;
use numeric::{to_bit, to_decimal, to_float, to_int};
use string::{char_units, to_string};
use temporal::to_temporal;

/// A SQL type that holds `v` as it is, for values whose type is unknown.
pub fn natural_type(v: &Value) -> SqlType {
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
        Value::Large(l) => l.kind().max_type(),
    }
}

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
    if let Value::Large(l) = v {
        // Kept where it is when its form does not change; read whole to be converted.
        if LargeKind::of(to) == Some(l.kind()) {
            return Ok(v.clone());
        }
        return cast(&l.value()?, from, to, style);
    }
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
        return Err(msg::EXPLICIT_CONVERSION_NOT_ALLOWED.with(&[&base_type_name(from), &base_type_name(to)]));
    }
    Ok(())
}

/// A value this conversion has no rule for, named by the type that holds it as it is.
fn unexpected(v: &Value, to: &SqlType) -> SqlError {
    msg::TYPE_CONVERSION_ERROR.with(&[&base_type_name(&natural_type(v)), &base_type_name(to)])
}

fn overflow(to: &SqlType) -> SqlError {
    msg::ARITHMETIC_OVERFLOW.with(&[&"expression", &base_type_name(to)])
}

fn string_type_name(from: &SqlType) -> &'static str {
    if is_unicode(from) {
        "nvarchar"
    } else {
        "varchar"
    }
}

fn bad_style(style: i32, from: &SqlType) -> SqlError {
    msg::INVALID_CONVERT_STYLE.with(&[&style, &base_type_name(from), &"a character string"])
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
        // A value that cannot be read is not stored either.
        Value::Large(l) => l.trimmed_len_units().map_or(true, |n| n > limit as u64),
        _ => false,
    }
}
