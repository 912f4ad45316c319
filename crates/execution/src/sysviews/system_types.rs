//! SQL Server's system types as the catalog views show them: their ids, sizes, precision
//! and scale (sys.types, sys.columns, sys.parameters, INFORMATION_SCHEMA.COLUMNS), and
//! `TYPE_NAME` / `TYPE_ID`.

use tessera_semantics::types::SqlType;

/// The types sys.types lists, TYPE_NAME and TYPE_ID know.
pub(super) const SYSTEM_TYPES: &[(&str, SqlType)] = &[
    ("bigint", SqlType::BigInt),
    ("binary", SqlType::Binary(8000)),
    ("bit", SqlType::Bit),
    ("char", SqlType::Char(8000)),
    ("date", SqlType::Date),
    ("datetime", SqlType::DateTime),
    ("datetime2", SqlType::DateTime2 { scale: 7 }),
    ("datetimeoffset", SqlType::DateTimeOffset { scale: 7 }),
    ("decimal", SqlType::Decimal { precision: 38, scale: 38 }),
    ("float", SqlType::Float),
    ("int", SqlType::Int),
    ("money", SqlType::Money),
    ("nchar", SqlType::NChar(4000)),
    ("numeric", SqlType::Decimal { precision: 38, scale: 38 }),
    ("nvarchar", SqlType::NVarChar(4000)),
    ("real", SqlType::Real),
    ("smalldatetime", SqlType::SmallDateTime),
    ("smallint", SqlType::SmallInt),
    ("smallmoney", SqlType::SmallMoney),
    ("sysname", SqlType::NVarChar(128)),
    ("time", SqlType::Time { scale: 7 }),
    ("tinyint", SqlType::TinyInt),
    ("uniqueidentifier", SqlType::UniqueIdentifier),
    ("varbinary", SqlType::VarBinary(8000)),
    ("varchar", SqlType::VarChar(8000)),
];

/// sys.types' user_type_id: the storage type's id, except numeric (108) and sysname (256).
pub(super) fn user_type_id(name: &str, t: &SqlType) -> i64 {
    match name {
        "numeric" => 108,
        "sysname" => 256,
        _ => type_ids(t).0,
    }
}

/// `TYPE_NAME(id)`: the name of a system type by its user_type_id.
pub fn type_name(id: i64) -> Option<&'static str> {
    SYSTEM_TYPES.iter().find(|(n, t)| user_type_id(n, t) == id).map(|(n, _)| *n)
}

/// `TYPE_ID('name')`: a system type's user_type_id (`sys.` or `dbo.` may qualify it).
pub fn type_id(name: &str) -> Option<i64> {
    let name = name.trim();
    let lower = name.to_lowercase();
    let bare = lower.strip_prefix("sys.").or_else(|| lower.strip_prefix("dbo.")).unwrap_or(&lower);
    let bare = bare.trim_start_matches('[').trim_end_matches(']');
    SYSTEM_TYPES.iter().find(|(n, _)| *n == bare).map(|(n, t)| user_type_id(n, t))
}

/// The system type `name` names (`sys.` or `dbo.` may qualify it), at its widest.
pub(crate) fn system_type(name: &str) -> Option<SqlType> {
    let lower = name.trim().to_lowercase();
    let bare = lower.strip_prefix("sys.").or_else(|| lower.strip_prefix("dbo.")).unwrap_or(&lower);
    let bare = bare.trim_start_matches('[').trim_end_matches(']');
    SYSTEM_TYPES.iter().find(|(n, _)| *n == bare).map(|(_, t)| *t)
}

/// A type's `(system_type_id, max_length, precision, scale)` as SQL Server reports them.
pub(crate) fn type_ids(t: &SqlType) -> (i64, i64, i64, i64) {
    use SqlType::*;
    let max = tessera_access::row::MAX;
    let len = |n: u16, unit: i64| if n == max { -1 } else { i64::from(n) * unit };
    // (system_type_id, max_length, precision, scale)
    match *t {
        Bit => (104, 1, 1, 0),
        TinyInt => (48, 1, 3, 0),
        SmallInt => (52, 2, 5, 0),
        Int => (56, 4, 10, 0),
        BigInt => (127, 8, 19, 0),
        Real => (59, 4, 24, 0),
        Float => (62, 8, 53, 0),
        Decimal { precision, scale } => {
            (106, t.fixed_size().unwrap_or(17) as i64, i64::from(precision), i64::from(scale))
        }
        Money => (60, 8, 19, 4),
        SmallMoney => (122, 4, 10, 4),
        Char(n) => (175, len(n, 1), 0, 0),
        VarChar(n) => (167, len(n, 1), 0, 0),
        NChar(n) => (239, len(n, 2), 0, 0),
        NVarChar(n) => (231, len(n, 2), 0, 0),
        Binary(n) => (173, len(n, 1), 0, 0),
        VarBinary(n) => (165, len(n, 1), 0, 0),
        Date => (40, 3, 10, 0),
        // Precision counts the characters of the longest value: a fraction of n digits
        // adds n and its point (time(7) is 16, datetime2(3) is 23).
        Time { scale } => (41, t.fixed_size().unwrap_or(5) as i64, 8 + fraction_digits(scale), i64::from(scale)),
        DateTime => (61, 8, 23, 3),
        DateTime2 { scale } => (42, t.fixed_size().unwrap_or(8) as i64, 19 + fraction_digits(scale), i64::from(scale)),
        SmallDateTime => (58, 4, 16, 0),
        DateTimeOffset { scale } => {
            (43, t.fixed_size().unwrap_or(10) as i64, 26 + fraction_digits(scale), i64::from(scale))
        }
        UniqueIdentifier => (36, 16, 0, 0),
    }
}

/// The characters a fraction of `scale` digits adds to a time's text: its digits and point.
fn fraction_digits(scale: u8) -> i64 {
    if scale > 0 {
        i64::from(scale) + 1
    } else {
        0
    }
}

pub(crate) fn is_string(t: &SqlType) -> bool {
    matches!(t, SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_))
}
