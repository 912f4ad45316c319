//! The runtime value of a SQL expression.
//!
//! A [`Value`] is always interpreted together with its static [`SqlType`], which the binder
//! knows for every expression: `Int` carries tinyint, smallint, int and bigint alike, and the
//! type says which range applies. The binder inserts explicit conversions so that operators
//! see operands of one type.

use std::sync::Arc;

/// A SQL Server data type. Storage and the SQL layer share one definition: length
/// parameters are characters for `nchar`/`nvarchar` and bytes otherwise, and
/// [`tessera_types::MAX`] means `(max)`.
pub use tessera_types::SqlType;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bit(bool),
    /// tinyint, smallint, int, bigint.
    Int(i64),
    /// real (widened) and float.
    Float(f64),
    /// decimal/numeric(p, s): `value × 10^-scale`; money and smallmoney with scale 4.
    Decimal {
        value: i128,
        scale: u8,
    },
    /// char, varchar, nchar, nvarchar. `char(n)`/`nchar(n)` values are padded to n.
    Str(Arc<str>),
    /// binary, varbinary. `binary(n)` values are padded to n.
    Binary(Arc<[u8]>),
    /// Days since 0001-01-01.
    Date(i32),
    /// 100 ns ticks since midnight.
    Time(u64),
    /// datetime, smalldatetime, datetime2: days since 0001-01-01 and 100 ns ticks since
    /// midnight (datetime values are rounded to its 1/300 s grid by conversion).
    DateTime {
        days: i32,
        ticks: u64,
    },
    /// datetimeoffset: the UTC instant (as `DateTime`) and the local time's offset from UTC
    /// in minutes (-840..=840). The local time is the instant plus the offset.
    DateTimeOffset {
        days: i32,
        ticks: u64,
        offset: i16,
    },
    /// uniqueidentifier, bytes in SQL Server's order (as the storage layer keeps them).
    Guid([u8; 16]),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn str(s: &str) -> Value {
        Value::Str(Arc::from(s))
    }
}
