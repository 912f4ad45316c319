//! The mapping between SQL values and the storage layer's values.

use super::super::datetime::{DAYS_TO_1900, TICKS_PER_MINUTE};
use super::super::text::{decode_cp1252, encode_cp1252};
use super::super::{num, SqlType, Value};
use super::cast;
use std::sync::Arc;
use tessera_access::row;
use tessera_types::{datetime_parts, ticks_from_t300, MAX, MINUTES_PER_DAY};

/// A SQL type that holds `v` as it is, for values whose type is unknown.
pub(super) fn natural_type(v: &Value) -> SqlType {
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
            let (days, ticks) = datetime_parts(*days, *ticks);
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
        row::Value::Bytes(b) => from_bytes(&b, t),
        row::Value::Unicode(u) => Value::Str(Arc::from(String::from_utf16_lossy(&u))),
    }
}

/// A column of a stored row as a SQL value: character and binary data copied once, from
/// the row into the value.
pub fn from_field(f: row::Field<'_>, t: &SqlType) -> Value {
    match f {
        row::Field::Value(v) => from_storage(v, t),
        row::Field::Bytes(b) => from_bytes(b, t),
        row::Field::Unicode(b) => {
            let units = b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
            Value::Str(Arc::from(char::decode_utf16(units).map(|c| c.unwrap_or('\u{FFFD}')).collect::<String>()))
        }
    }
}

/// char/varchar (code page 1252) or binary/varbinary bytes as a SQL value.
fn from_bytes(b: &[u8], t: &SqlType) -> Value {
    match t {
        SqlType::Binary(_) | SqlType::VarBinary(_) => Value::Binary(Arc::from(b)),
        _ => Value::Str(Arc::from(&*decode_cp1252(b))),
    }
}
