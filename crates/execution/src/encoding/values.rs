//! The mapping between SQL values and the storage layer's values: what a value of each
//! SQL type is as `tessera_access::row` stores it, and back.

use std::sync::Arc;
use tessera_access::row::{self, MINUTES_PER_DAY};
use tessera_semantics::types::{cast, decode_cp1252, encode_cp1252, natural_type, rescale_round, SqlType, Value};
use tessera_types::{datetime_parts, ticks_from_t300, DAYS_TO_1900, TICKS_PER_MINUTE};

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
            let v = rescale_round(*value, *scale, 4).unwrap_or(*value);
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
        (Value::Large(l), _) => unreachable!("{l:?} is stored in pieces (`dml::storage`), never made whole here"),
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
                Value::Decimal { value: rescale_round(value, scale, s).unwrap_or(value), scale: s }
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
        row::Value::OffRow(_) => unreachable!("an off-row value is read where its row is decoded (`lobs`)"),
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
        row::Field::OffRow(_) => unreachable!("an off-row value is read where its row is decoded (`lobs`)"),
    }
}

/// char/varchar (code page 1252) or binary/varbinary bytes as a SQL value.
fn from_bytes(b: &[u8], t: &SqlType) -> Value {
    match t {
        SqlType::Binary(_) | SqlType::VarBinary(_) => Value::Binary(Arc::from(b)),
        _ => Value::Str(Arc::from(&*decode_cp1252(b))),
    }
}

/// The value of a column's bytes in a stored row (located and checked by `row::locate`):
/// how a `StoredRow` becomes values.
pub fn stored_value(t: &SqlType, bytes: &[u8]) -> Value {
    from_field(row::field(t, bytes).expect("located values were checked"), t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tessera_errors::SqlResult;
    use tessera_semantics::types::display_text;
    use tessera_types::MAX;
    use SqlType as T;

    fn c(v: Value, from: T, to: T) -> SqlResult<Value> {
        cast(&v, &from, &to, None)
    }

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    fn dec(value: i128, scale: u8) -> Value {
        Value::Decimal { value, scale }
    }

    fn d(p: u8, s: u8) -> T {
        T::Decimal { precision: p, scale: s }
    }

    fn dt(s: &str) -> Value {
        c(Value::str(s), T::VarChar(30), T::DateTime2 { scale: 7 }).unwrap()
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
        let dto = T::DateTimeOffset { scale: 7 };
        let v = c(s("2025-03-04 10:11:12.1234567 +05:30"), T::VarChar(40), dto).unwrap();
        assert_eq!(from_storage(to_storage(&v, &dto), &dto), v);
        assert_eq!(display_text(&from_storage(to_storage(&v, &dto), &dto), &dto), "2025-03-04 10:11:12.1234567 +05:30");
    }

    proptest! {
        #[test]
        fn every_cast_result_maps_to_storage_and_back(x in any::<i64>(), f in any::<f64>(), text in "\\PC{0,12}") {
            let types = [T::Bit, T::TinyInt, T::Int, T::BigInt, T::Real, T::Float, d(5, 2), d(38, 10), T::Money, T::SmallMoney,
                T::Char(3), T::VarChar(5), T::NVarChar(2), T::Binary(3), T::VarBinary(MAX), T::Date, T::Time { scale: 2 },
                T::DateTime, T::SmallDateTime, T::DateTime2 { scale: 0 }, T::DateTimeOffset { scale: 3 }, T::UniqueIdentifier];
            for from in [T::BigInt, T::Float, T::NVarChar(MAX)] {
                let v = match from { T::BigInt => Value::Int(x), T::Float if f.is_finite() => Value::Float(f), T::Float => Value::Float(0.0), _ => s(&text) };
                for to in &types {
                    if let Ok(r) = cast(&v, &from, to, None) {
                        let _ = from_storage(to_storage(&r, to), to);
                    }
                }
            }
        }
    }
}
