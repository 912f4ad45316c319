//! The runtime value of a SQL expression.
//!
//! A [`Value`] is always interpreted together with its static [`SqlType`], which the binder
//! knows for every expression: `Int` carries tinyint, smallint, int and bigint alike, and the
//! type says which range applies. The binder inserts explicit conversions so that operators
//! see operands of one type.

use std::sync::Arc;

use tessera_errors::SqlResult;

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
    /// A varchar(max), nvarchar(max) or varbinary(max) value of at least
    /// [`super::large::LAZY_BYTES`], read where it is kept (see [`super::large`]).
    Large(LargeValue),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn str(s: &str) -> Value {
        Value::Str(Arc::from(s))
    }
}

/// What a large value's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LargeKind {
    /// varbinary(max): the bytes themselves.
    Binary,
    /// varchar(max): code page 1252, a byte per character.
    Ansi,
    /// nvarchar(max): UTF-16LE, two bytes per code unit.
    Unicode,
}

/// Where a large value's bytes are read from.
pub trait LargeSource: Send + Sync {
    /// Fills `out` with the value's bytes from byte `from` on (the caller keeps within
    /// the value's length).
    fn read(&self, from: u64, out: &mut [u8]) -> SqlResult<()>;

    /// Whether the bytes belong to the value alone (a request's spool file), so that it
    /// may be kept past the statement that made it; false for a value still in a table,
    /// which a later statement may drop.
    fn detached(&self) -> bool {
        false
    }
}

/// A large value: its form, its length in bytes and where its bytes are. Cloning shares
/// the source (whatever keeps the value readable, a pin or a file, lives while a clone
/// does).
#[derive(Clone)]
pub struct LargeValue {
    pub(super) kind: LargeKind,
    pub(super) len: u64,
    pub(super) source: Arc<dyn LargeSource>,
}
