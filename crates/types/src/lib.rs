//! SQL Server's data types: the type enum and the domains of its values. See README.md.
//!
//! Both the storage layer (which lays rows out by type) and the T-SQL layers (which bind,
//! convert and compute with types) use what is here; neither owns it.

use tessera_errors::{Error, Result};

/// Length parameter meaning `max` in `varchar(max)`, `nvarchar(max)`, `varbinary(max)`.
pub const MAX: u16 = 0xFFFF;
/// The longest `(max)` value, in bytes (2^31 - 1; longer is error 7119).
pub const MAX_LARGE_BYTES: u64 = i32::MAX as u64;

/// Days from 0001-01-01 to 9999-12-31 (the largest `date`).
pub const MAX_DATE_DAYS: i32 = 3_652_058;
/// 100 ns ticks in a day (`time`, `datetime2`).
pub const TICKS_PER_DAY: u64 = 864_000_000_000;
/// 100 ns ticks in a second and in a minute.
pub const TICKS_PER_SECOND: u64 = 10_000_000;
pub const TICKS_PER_MINUTE: u64 = 60 * TICKS_PER_SECOND;
/// 1/300 s ticks in a day (`datetime`).
pub const DATETIME_TICKS_PER_DAY: u32 = 25_920_000;
/// Days from 0001-01-01 to 1900-01-01 (`datetime`'s and `smalldatetime`'s day zero).
pub const DAYS_TO_1900: i32 = 693_595;
/// `datetime` range, in days relative to 1900-01-01: 1753-01-01 ..= 9999-12-31.
pub const DATETIME_MIN_DAYS: i32 = -53_690;
pub const DATETIME_MAX_DAYS: i32 = 2_958_463;
/// Minutes in a day (`smalldatetime`).
pub const MINUTES_PER_DAY: u16 = 1440;
/// `datetimeoffset`'s offset range, in minutes: -14:00 ..= +14:00.
pub const MIN_OFFSET_MINUTES: i16 = -840;
pub const MAX_OFFSET_MINUTES: i16 = 840;

/// `datetime`'s own form of a value on its grid (days since 0001-01-01 and 100 ns
/// ticks): days since 1900 and 1/300 s ticks since midnight.
pub fn datetime_parts(days: i32, ticks: u64) -> (i32, u32) {
    (days - DAYS_TO_1900, ((ticks * 3 + 50_000) / 100_000) as u32)
}

/// 100 ns ticks of a 1/300 s tick count (rounded: 1 → 33 333, 2 → 66 667).
pub fn ticks_from_t300(t300: u32) -> u64 {
    (u64::from(t300) * 100_000 + 1) / 3
}

/// A SQL type (of a column, a variable, an expression). Length parameters are in
/// characters for `nchar`/`nvarchar` and in bytes otherwise; [`MAX`] means `max` for the
/// variable-length types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SqlType {
    Bit,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Real,
    Float,
    Decimal { precision: u8, scale: u8 },
    Money,
    SmallMoney,
    Char(u16),
    VarChar(u16),
    NChar(u16),
    NVarChar(u16),
    Binary(u16),
    VarBinary(u16),
    Date,
    Time { scale: u8 },
    DateTime,
    DateTime2 { scale: u8 },
    SmallDateTime,
    DateTimeOffset { scale: u8 },
    UniqueIdentifier,
}

fn decimal_size(precision: u8) -> usize {
    match precision {
        0..=9 => 5,
        10..=19 => 9,
        20..=28 => 13,
        _ => 17,
    }
}

/// Bytes of the time part of a `time(scale)`, `datetime2(scale)` or
/// `datetimeoffset(scale)` value.
pub fn time_size(scale: u8) -> usize {
    match scale {
        0..=2 => 3,
        3..=4 => 4,
        _ => 5,
    }
}

impl SqlType {
    /// Bytes a value of the type takes (SQL Server's storage size, the width of a
    /// fixed-length column), or `None` for the variable-length types.
    pub fn fixed_size(&self) -> Option<usize> {
        use SqlType::*;
        Some(match *self {
            Bit | TinyInt => 1,
            SmallInt => 2,
            Int | Real | SmallMoney | SmallDateTime => 4,
            BigInt | Float | Money | DateTime => 8,
            Decimal { precision, .. } => decimal_size(precision),
            Char(n) | Binary(n) => n as usize,
            NChar(n) => 2 * n as usize,
            Date => 3,
            Time { scale } => time_size(scale),
            DateTime2 { scale } => time_size(scale) + 3,
            DateTimeOffset { scale } => time_size(scale) + 5,
            UniqueIdentifier => 16,
            VarChar(_) | NVarChar(_) | VarBinary(_) => return None,
        })
    }

    /// True for `varchar`, `nvarchar` and `varbinary`.
    pub fn is_variable(&self) -> bool {
        self.fixed_size().is_none()
    }

    /// True for `varchar(max)`, `nvarchar(max)` and `varbinary(max)`.
    pub fn is_max(&self) -> bool {
        matches!(self, SqlType::VarChar(MAX) | SqlType::NVarChar(MAX) | SqlType::VarBinary(MAX))
    }

    /// Checks the type's parameters against SQL Server's ranges: lengths 1..=8000 bytes
    /// (1..=4000 for the n-types) or `max` for the variable-length types, decimal precision
    /// 1..=38 with scale ≤ precision, time/datetime2/datetimeoffset scale ≤ 7.
    pub fn validate(&self) -> Result<()> {
        use SqlType::*;
        let ok = match *self {
            Char(n) | Binary(n) => (1..=8000).contains(&n),
            NChar(n) => (1..=4000).contains(&n),
            VarChar(n) | VarBinary(n) => (1..=8000).contains(&n) || n == MAX,
            NVarChar(n) => (1..=4000).contains(&n) || n == MAX,
            Decimal { precision, scale } => (1..=38).contains(&precision) && scale <= precision,
            Time { scale } | DateTime2 { scale } | DateTimeOffset { scale } => scale <= 7,
            _ => true,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::Invalid(format!("invalid column type {self:?}")))
        }
    }
}
