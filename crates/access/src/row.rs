//! The on-page row format, modelled on SQL Server's FixedVar record.
//!
//! ```text
//! offset           size        field
//!      0              1        status A: 0x10 = NULL bitmap present (always set),
//!                                        0x20 = variable-length block present,
//!                                        0x40 = some var column is stored off the row,
//!                                        0x0E = record type (0 = primary row; free for the
//!                                               layers above, e.g. ghost records)
//!      1              1        status B: 0
//!      2              2        F = offset of the column-count field (= 4 + fixed data size)
//!      4          F - 4        fixed-length columns, in schema order
//!      F              2        column count N
//!  F + 2   ceil(N / 8)         NULL bitmap, bit i (LSB first) set = column i is NULL;
//!                              pad bits are zero
//!      V              2        var-column count C   } only when status A has 0x20, i.e.
//!  V + 2          2 * C        var-column end offsets} some variable-length column is
//!  V+2+2C             .        var-column data       } non-NULL
//! ```
//!
//! * All integers are little-endian. Offsets are from the start of the row.
//! * A fixed-length column always occupies its bytes, zeroed when NULL.
//! * Variable-length columns are numbered in schema order; end offset k is where the data of
//!   var column k ends (it starts where var column k-1 ends, or right after the offset array).
//!   A NULL var column has zero length. Trailing NULL var columns are omitted (C counts up to
//!   the last non-NULL one), and with no non-NULL var column the whole block is omitted.
//! * A row may carry fewer columns than the schema (N < schema length): the missing trailing
//!   columns read as NULL. This is what lets `ALTER TABLE ... ADD <nullable column>` leave
//!   existing rows alone. The layout of the first N columns never depends on later columns.
//! * Rows are at most [`MAX_ROW_SIZE`] (8060) bytes, SQL Server's limit. A variable-length
//!   value may live outside the row (see `crate::lob`): its end offset then has the high
//!   bit [`OFF_ROW_BIT`] set (offsets are below 8060, so the bit is free) and its data in the
//!   row is an [`OffRow`] pointer of [`OFF_ROW_POINTER`] bytes — the value's id in the
//!   table's large-value tree (u64), its length in bytes (u32) and its generation (u32,
//!   counted by partial updates: see `crate::lob`). [`off_row_columns`]
//!   says which values go out, in SQL Server's model: a `(max)` value longer than
//!   [`MAX_IN_ROW`] (8000) bytes always, then the longest values until the row fits
//!   (row overflow). A row still too large fails with [`Error::RowTooLarge`] (error 511).
//! * A `char(1000)` + `int` row is 4 + 1000 + 4 + 2 + 1 = 1011 bytes, as in SQL Server.
//!
//! Fixed-size encodings (value representation in [`Value`]):
//!
//! | type | bytes | encoding |
//! |---|---|---|
//! | bit | 1 | 0 or 1 (not packed with other bits) |
//! | tinyint, smallint, int, bigint | 1, 2, 4, 8 | two's complement |
//! | real, float | 4, 8 | IEEE 754; NaN and infinities are rejected, as in SQL Server |
//! | decimal(p, s) | 5, 9, 13, 17 for p ≤ 9, 19, 28, 38 | sign byte (1 = positive or zero, 0 = negative), then the magnitude of the scaled integer |
//! | money, smallmoney | 8, 4 | scaled integer, 1/10000 units |
//! | date | 3 | days since 0001-01-01 |
//! | time(s) | 3, 4, 5 for s ≤ 2, 4, 7 | units of 10^-s s since midnight |
//! | datetime2(s) | time(s) + 3 | time part, then date part |
//! | datetimeoffset(s) | time(s) + 5 | UTC time part, UTC date part, then the offset in minutes (i16) |
//! | datetime | 8 | days since 1900-01-01 (i32), then 1/300 s ticks since midnight (u32) |
//! | smalldatetime | 4 | days since 1900-01-01 (u16), then minutes since midnight (u16) |
//! | uniqueidentifier | 16 | the bytes as held in [`Value::Guid`] |
//! | char(n), binary(n) | n | padded with spaces / zero bytes |
//! | nchar(n) | 2n | UTF-16LE code units, padded with U+0020 |
//!
//! Variable-length data is the raw bytes (`varchar`, `varbinary`) or UTF-16LE code units
//! (`nvarchar`).

use std::ops::Range;
use tessera_errors::{Error, Result};

/// The largest row, in bytes (SQL Server's limit).
pub const MAX_ROW_SIZE: usize = 8060;
/// The most columns a row can have (SQL Server's limit for non-sparse tables).
pub const MAX_COLUMNS: usize = 1024;
// A row is laid out by its columns' SQL types, which are `tessera-types`' (below this
// crate and the T-SQL layers alike): a column's type is a `SqlType`, here `ColumnType`.
use tessera_types::time_size;
pub use tessera_types::{
    SqlType as ColumnType, DATETIME_MAX_DAYS, DATETIME_MIN_DAYS, DATETIME_TICKS_PER_DAY, MAX, MAX_DATE_DAYS,
    MAX_OFFSET_MINUTES, MINUTES_PER_DAY, MIN_OFFSET_MINUTES, TICKS_PER_DAY,
};

const HEADER: usize = 4;
const STATUS_NULL_BITMAP: u8 = 0x10;
const STATUS_VAR_COLUMNS: u8 = 0x20;
const STATUS_RECORD_TYPE: u8 = 0x0E;
const STATUS_OFF_ROW: u8 = 0x40;
/// Set in a var column's end offset when its value is stored off the row.
pub const OFF_ROW_BIT: u16 = 0x8000;
/// Bytes of an [`OffRow`] pointer in the row.
pub const OFF_ROW_POINTER: usize = 16;
/// The longest `(max)` value kept in its row (SQL Server's default for large value types).
pub const MAX_IN_ROW: usize = 8000;

/// Where a variable-length value stored off its row is: its id in the table's
/// large-value tree, its length in bytes, and its generation (0 as first written; one
/// more with each partial update, which writes again only the chunks it changes: see
/// `crate::lob`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OffRow {
    pub id: u64,
    pub len: u64,
    pub gen: u32,
}

impl OffRow {
    /// Id u64 LE ‖ length u32 LE ‖ generation u32 LE (a value is shorter than 2^31 bytes:
    /// a pointer written as id ‖ length u64 before generations existed reads the same).
    pub fn to_bytes(self) -> [u8; OFF_ROW_POINTER] {
        debug_assert!(self.len <= u64::from(u32::MAX));
        let mut b = [0u8; OFF_ROW_POINTER];
        b[..8].copy_from_slice(&self.id.to_le_bytes());
        b[8..12].copy_from_slice(&(self.len as u32).to_le_bytes());
        b[12..].copy_from_slice(&self.gen.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> Result<OffRow> {
        if b.len() != OFF_ROW_POINTER {
            return Err(malformed(format_args!("an off-row pointer of {} bytes", b.len())));
        }
        let id = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let len = u64::from(u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")));
        let gen = u32::from_le_bytes(b[12..].try_into().expect("4 bytes"));
        Ok(OffRow { id, len, gen })
    }
}

/// Whether a stored row holds a value off the row (see [`OffRow`]).
pub fn has_off_row(row: &[u8]) -> bool {
    row.first().is_some_and(|a| a & STATUS_OFF_ROW != 0)
}

/// 100 ns ticks per unit of a `time(scale)` value as stored.
fn time_unit(scale: u8) -> u64 {
    10u64.pow(7 - u32::from(scale.min(7)))
}

/// A column value.
///
/// * Character and binary data are kept as bytes: [`Value::Bytes`] for `char`, `varchar`
///   (bytes in the column's code page), `binary` and `varbinary`; [`Value::Unicode`] for
///   `nchar` and `nvarchar`, as UTF-16 code units (what TDS carries and what is stored, so
///   unpaired surrogates survive). Fixed-length values shorter than the column are padded on
///   encode; decoding returns them padded.
/// * `decimal`/`numeric` is a scaled integer: `value * 10^-scale`. Encoding rescales to the
///   column's scale when that is exact and fails otherwise (rounding is the SQL layer's job).
/// * `money` and `smallmoney` are both [`Value::Money`] (1/10000 units).
/// * `date` and `datetime2` count days from 0001-01-01; `time` and `datetime2` count 100 ns
///   ticks from midnight, and must be a whole number of the column's units (`time(3)`: 10 000
///   ticks); `datetime` and `smalldatetime` count days from 1900-01-01.
/// * [`Value::DateTimeOffset`] holds the UTC instant (days from 0001-01-01 and ticks, as
///   `datetime2`) and the offset of the local time from UTC in minutes,
///   [`MIN_OFFSET_MINUTES`]..=[`MAX_OFFSET_MINUTES`].
/// * [`Value::Guid`] holds the 16 bytes in SQL Server's (and TDS's) byte order.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bit(bool),
    TinyInt(u8),
    SmallInt(i16),
    Int(i32),
    BigInt(i64),
    Real(f32),
    Float(f64),
    Decimal {
        value: i128,
        scale: u8,
    },
    Money(i64),
    Date(i32),
    Time(u64),
    DateTime {
        days: i32,
        ticks: u32,
    },
    DateTime2 {
        days: i32,
        ticks: u64,
    },
    SmallDateTime {
        days: u16,
        minutes: u16,
    },
    DateTimeOffset {
        days: i32,
        ticks: u64,
        offset: i16,
    },
    Guid([u8; 16]),
    Bytes(Vec<u8>),
    Unicode(Vec<u16>),
    /// A variable-length column's value already stored off the row.
    OffRow(OffRow),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A [`Value::Unicode`] holding `s`.
    pub fn unicode(s: &str) -> Value {
        Value::Unicode(s.encode_utf16().collect())
    }

    /// Name of the variant, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Bit(_) => "bit",
            Value::TinyInt(_) => "tinyint",
            Value::SmallInt(_) => "smallint",
            Value::Int(_) => "int",
            Value::BigInt(_) => "bigint",
            Value::Real(_) => "real",
            Value::Float(_) => "float",
            Value::Decimal { .. } => "decimal",
            Value::Money(_) => "money",
            Value::Date(_) => "date",
            Value::Time(_) => "time",
            Value::DateTime { .. } => "datetime",
            Value::DateTime2 { .. } => "datetime2",
            Value::SmallDateTime { .. } => "smalldatetime",
            Value::DateTimeOffset { .. } => "datetimeoffset",
            Value::Guid(_) => "uniqueidentifier",
            Value::Bytes(_) => "bytes",
            Value::Unicode(_) => "unicode",
            Value::OffRow(_) => "off-row value",
        }
    }
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::Invalid(msg.into())
}

fn malformed(msg: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("malformed row: {msg}"))
}

fn mismatch(ty: &ColumnType, v: &Value) -> Error {
    invalid(format!("a {} value cannot be stored in a column of type {ty:?}", v.kind()))
}

/// Converts a scaled integer from scale `from` to scale `to`, failing if that would overflow
/// or drop non-zero digits.
pub fn rescale(value: i128, from: u8, to: u8) -> Result<i128> {
    use std::cmp::Ordering::*;
    let pow = |d: u8| 10i128.checked_pow(u32::from(d));
    let r = match from.cmp(&to) {
        Equal => Some(value),
        Less => pow(to - from).and_then(|m| value.checked_mul(m)),
        Greater => match pow(from - to) {
            Some(d) if value % d == 0 => Some(value / d),
            Some(_) => {
                return Err(invalid(format!(
                    "decimal value with scale {from} cannot be stored at scale {to} without rounding"
                )))
            }
            None if value == 0 => Some(0),
            None => None,
        },
    };
    r.ok_or_else(|| invalid(format!("arithmetic overflow converting decimal from scale {from} to {to}")))
}

/// True when `value` has at most `precision` digits.
fn fits_precision(value: i128, precision: u8) -> bool {
    match 10u128.checked_pow(u32::from(precision)) {
        Some(limit) => value.unsigned_abs() < limit,
        None => true,
    }
}

/// The column types of a row, with the byte layout derived from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSchema {
    columns: Vec<ColumnType>,
    /// Per column: offset in the row of a fixed-length column, or the ordinal among the
    /// variable-length columns.
    place: Vec<u16>,
    /// `fixed_end[i]` = offset of the column-count field of a row holding the first i columns.
    fixed_end: Vec<u16>,
    /// `vars[i]` = number of variable-length columns among the first i columns.
    vars: Vec<u16>,
    /// Whether a row can be too large to keep its values in it: some `(max)` column, or
    /// variable-length columns whose longest values together exceed [`MAX_ROW_SIZE`].
    overflows: bool,
}

impl RowSchema {
    /// Builds a schema. Fails with [`Error::Invalid`] for a bad type or too many columns, and
    /// with [`Error::RowTooLarge`] when even a row of NULLs would exceed [`MAX_ROW_SIZE`]
    /// (SQL Server refuses such a table at CREATE TABLE).
    pub fn new(columns: Vec<ColumnType>) -> Result<RowSchema> {
        if columns.len() > MAX_COLUMNS {
            return Err(invalid(format!("a row can have at most {MAX_COLUMNS} columns, not {}", columns.len())));
        }
        let mut place = Vec::with_capacity(columns.len());
        let mut fixed_end = Vec::with_capacity(columns.len() + 1);
        let mut vars = Vec::with_capacity(columns.len() + 1);
        let mut end = HEADER;
        let mut nvar = 0usize;
        fixed_end.push(end as u16);
        vars.push(0);
        for ty in &columns {
            ty.validate()?;
            match ty.fixed_size() {
                Some(size) => {
                    place.push(end as u16);
                    end += size;
                }
                None => {
                    place.push(nvar as u16);
                    nvar += 1;
                }
            }
            let min = end + 2 + columns.len().div_ceil(8);
            if min > MAX_ROW_SIZE {
                return Err(Error::RowTooLarge { size: min, max: MAX_ROW_SIZE });
            }
            fixed_end.push(end as u16);
            vars.push(nvar as u16);
        }
        let longest = columns
            .iter()
            .filter(|t| t.is_variable())
            .try_fold(0usize, |sum, t| (!t.is_max()).then(|| sum + var_capacity(t)).filter(|&s| s <= MAX_ROW_SIZE));
        let overflows =
            longest.is_none_or(|var| end + 2 + columns.len().div_ceil(8) + 2 + 2 * nvar + var > MAX_ROW_SIZE);
        Ok(RowSchema { columns, place, fixed_end, vars, overflows })
    }

    /// Whether some rows of this layout may hold values off the row (see [`OffRow`]);
    /// when not, none ever does.
    pub fn overflows(&self) -> bool {
        self.overflows
    }

    pub fn columns(&self) -> &[ColumnType] {
        &self.columns
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }
}

/// Size of a row of `columns` whose variable-length columns are all NULL, whether or not
/// it fits (what CREATE TABLE checks, error 1701).
pub fn min_row_size_of(columns: &[ColumnType]) -> usize {
    HEADER + columns.iter().filter_map(ColumnType::fixed_size).sum::<usize>() + 2 + columns.len().div_ceil(8)
}

/// Encodes a row. `values` must have one value per schema column.
pub fn encode(schema: &RowSchema, values: &[Value]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    encode_into(schema, values, &mut out)?;
    Ok(out)
}

/// Appends the encoded row to `out` (which is left as it was on error).
pub fn encode_into(schema: &RowSchema, values: &[Value], out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    let r = encode_append(schema, values, out);
    if r.is_err() {
        out.truncate(start);
    }
    r
}

fn encode_append(schema: &RowSchema, values: &[Value], out: &mut Vec<u8>) -> Result<()> {
    let n = schema.len();
    if values.len() != n {
        return Err(invalid(format!("a row of this table has {n} columns, not {}", values.len())));
    }
    // First pass: size of the variable-length part, and how many var columns to write.
    let mut vc = 0usize;
    let mut var_bytes = 0usize;
    let mut off_row = false;
    for (i, (ty, v)) in schema.columns.iter().zip(values).enumerate() {
        if ty.is_variable() && !v.is_null() {
            var_bytes += var_len(ty, v)?;
            vc = schema.place[i] as usize + 1;
            off_row |= matches!(v, Value::OffRow(_));
        }
    }
    let fixed_end = schema.fixed_end[n] as usize;
    let bitmap_len = n.div_ceil(8);
    let mut size = fixed_end + 2 + bitmap_len;
    if vc > 0 {
        size += 2 + 2 * vc + var_bytes;
    }
    if size > MAX_ROW_SIZE {
        return Err(Error::RowTooLarge { size, max: MAX_ROW_SIZE });
    }

    let start = out.len();
    out.reserve(size);
    out.resize(start + fixed_end, 0);
    out[start] =
        STATUS_NULL_BITMAP | if vc > 0 { STATUS_VAR_COLUMNS } else { 0 } | if off_row { STATUS_OFF_ROW } else { 0 };
    out[start + 2..start + 4].copy_from_slice(&(fixed_end as u16).to_le_bytes());
    for (i, (ty, v)) in schema.columns.iter().zip(values).enumerate() {
        if let (Some(sz), false) = (ty.fixed_size(), v.is_null()) {
            let off = start + schema.place[i] as usize;
            write_fixed(ty, v, &mut out[off..off + sz])?;
        }
    }
    out.extend_from_slice(&(n as u16).to_le_bytes());
    let bitmap = out.len();
    out.resize(bitmap + bitmap_len, 0);
    for (i, v) in values.iter().enumerate() {
        if v.is_null() {
            out[bitmap + i / 8] |= 1 << (i % 8);
        }
    }
    if vc > 0 {
        out.extend_from_slice(&(vc as u16).to_le_bytes());
        let offs = out.len();
        out.resize(offs + 2 * vc, 0);
        for (i, (ty, v)) in schema.columns.iter().zip(values).enumerate() {
            if !ty.is_variable() {
                continue;
            }
            let k = schema.place[i] as usize;
            if k >= vc {
                break;
            }
            let mut end = 0;
            match v {
                Value::Bytes(b) => out.extend_from_slice(b),
                Value::Unicode(u) => u.iter().for_each(|c| out.extend_from_slice(&c.to_le_bytes())),
                Value::OffRow(p) => {
                    out.extend_from_slice(&p.to_bytes());
                    end = OFF_ROW_BIT;
                }
                _ => {}
            }
            let end = end | (out.len() - start) as u16;
            out[offs + 2 * k..offs + 2 * k + 2].copy_from_slice(&end.to_le_bytes());
        }
    }
    debug_assert_eq!(out.len() - start, size);
    Ok(())
}

/// Which variable-length values of a row to store off the row so that it fits, in SQL
/// Server's order: each `(max)` value longer than [`MAX_IN_ROW`] bytes (with
/// `max_out_of_row`, the table option "large value types out of row": every non-empty
/// `(max)` value), then the longest of the rest (longer than a pointer) until the row is
/// at most [`MAX_ROW_SIZE`] bytes. Values already off the row count as pointers. Fails
/// with [`Error::RowTooLarge`] when no choice makes the row fit.
pub fn off_row_columns(schema: &RowSchema, values: &[Value], max_out_of_row: bool) -> Result<Vec<usize>> {
    let n = schema.len();
    if values.len() != n {
        return Err(invalid(format!("a row of this table has {n} columns, not {}", values.len())));
    }
    let mut out = Vec::new();
    let mut lens: Vec<(usize, usize)> = Vec::new();
    let mut vc = 0usize;
    let mut var_bytes = 0usize;
    for (i, (ty, v)) in schema.columns.iter().zip(values).enumerate() {
        if !ty.is_variable() || v.is_null() {
            continue;
        }
        vc = schema.place[i] as usize + 1;
        let len = var_len(ty, v)?;
        if matches!(v, Value::OffRow(_)) {
            var_bytes += len;
        } else if ty.is_max() && (len > MAX_IN_ROW || (max_out_of_row && len > 0)) {
            out.push(i);
            var_bytes += OFF_ROW_POINTER;
        } else {
            var_bytes += len;
            lens.push((len, i));
        }
    }
    let mut size = schema.fixed_end[n] as usize + 2 + n.div_ceil(8) + if vc > 0 { 2 + 2 * vc } else { 0 } + var_bytes;
    // Longest first; among equals, the later column first (as SQL Server moves them).
    lens.sort_unstable_by(|a, b| b.cmp(a));
    for (len, i) in lens {
        if size <= MAX_ROW_SIZE || len <= OFF_ROW_POINTER {
            break;
        }
        size -= len - OFF_ROW_POINTER;
        out.push(i);
    }
    if size > MAX_ROW_SIZE {
        return Err(Error::RowTooLarge { size, max: MAX_ROW_SIZE });
    }
    out.sort_unstable();
    Ok(out)
}

/// The longest value a variable-length column of type `ty` holds in bytes (`(max)`: none
/// in a row; callers treat it apart).
fn var_capacity(ty: &ColumnType) -> usize {
    match *ty {
        ColumnType::NVarChar(n) => 2 * n as usize,
        ColumnType::VarChar(n) | ColumnType::VarBinary(n) => n as usize,
        _ => 0,
    }
}

/// Data length of a non-NULL value of a variable-length column (validating it).
fn var_len(ty: &ColumnType, v: &Value) -> Result<usize> {
    let (n, units, width) = match (ty, v) {
        (ColumnType::VarChar(n) | ColumnType::VarBinary(n), Value::Bytes(b)) => (*n, b.len(), 1),
        (ColumnType::NVarChar(n), Value::Unicode(u)) => (*n, u.len(), 2),
        (ColumnType::VarChar(_) | ColumnType::VarBinary(_) | ColumnType::NVarChar(_), Value::OffRow(_)) => {
            return Ok(OFF_ROW_POINTER)
        }
        _ => return Err(mismatch(ty, v)),
    };
    if n != MAX && units > n as usize {
        return Err(invalid(format!(
            "a value of length {units} does not fit in a column of type {ty:?} (would be truncated)"
        )));
    }
    Ok(units * width)
}

fn put_uint(dst: &mut [u8], v: u64) {
    let b = v.to_le_bytes();
    dst.copy_from_slice(&b[..dst.len()]);
}

fn get_uint(src: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..src.len()].copy_from_slice(src);
    u64::from_le_bytes(b)
}

fn check_date(days: i32) -> Result<()> {
    if (0..=MAX_DATE_DAYS).contains(&days) {
        Ok(())
    } else {
        Err(invalid(format!("date out of range: {days} days since 0001-01-01")))
    }
}

/// Stored units of a `time(scale)` value given in 100 ns ticks.
fn time_units(ticks: u64, scale: u8) -> Result<u64> {
    let unit = time_unit(scale);
    if ticks >= TICKS_PER_DAY {
        return Err(invalid(format!("time out of range: {ticks} ticks since midnight")));
    }
    if ticks / unit * unit != ticks {
        return Err(invalid(format!("time value {ticks} has more precision than time({scale})")));
    }
    Ok(ticks / unit)
}

/// Writes a non-NULL fixed-length value into `dst`, which is exactly the column's size.
fn write_fixed(ty: &ColumnType, v: &Value, dst: &mut [u8]) -> Result<()> {
    use ColumnType as T;
    match (ty, v) {
        (T::Bit, Value::Bit(b)) => dst[0] = *b as u8,
        (T::TinyInt, Value::TinyInt(x)) => dst[0] = *x,
        (T::SmallInt, Value::SmallInt(x)) => dst.copy_from_slice(&x.to_le_bytes()),
        (T::Int, Value::Int(x)) => dst.copy_from_slice(&x.to_le_bytes()),
        (T::BigInt, Value::BigInt(x)) => dst.copy_from_slice(&x.to_le_bytes()),
        (T::Real, Value::Real(x)) => {
            if !x.is_finite() {
                return Err(invalid("real value is not a finite number"));
            }
            dst.copy_from_slice(&x.to_le_bytes())
        }
        (T::Float, Value::Float(x)) => {
            if !x.is_finite() {
                return Err(invalid("float value is not a finite number"));
            }
            dst.copy_from_slice(&x.to_le_bytes())
        }
        (T::Decimal { precision, scale }, Value::Decimal { value, scale: vs }) => {
            let v = rescale(*value, *vs, *scale)?;
            if !fits_precision(v, *precision) {
                return Err(invalid(format!("arithmetic overflow converting to decimal({precision}, {scale})")));
            }
            dst[0] = (v >= 0) as u8;
            let mag = v.unsigned_abs().to_le_bytes();
            let n = dst.len() - 1;
            dst[1..].copy_from_slice(&mag[..n]);
        }
        (T::Money, Value::Money(x)) => dst.copy_from_slice(&x.to_le_bytes()),
        (T::SmallMoney, Value::Money(x)) => {
            let x = i32::try_from(*x).map_err(|_| invalid("arithmetic overflow converting to smallmoney"))?;
            dst.copy_from_slice(&x.to_le_bytes())
        }
        (T::Char(_), Value::Bytes(b)) => pad(ty, dst, b, b' ')?,
        (T::Binary(_), Value::Bytes(b)) => pad(ty, dst, b, 0)?,
        (T::NChar(n), Value::Unicode(u)) => {
            if u.len() > *n as usize {
                return Err(invalid(format!(
                    "a value of length {} does not fit in a column of type {ty:?} (would be truncated)",
                    u.len()
                )));
            }
            for (i, pair) in dst.chunks_exact_mut(2).enumerate() {
                pair.copy_from_slice(&u.get(i).copied().unwrap_or(0x20).to_le_bytes());
            }
        }
        (T::Date, Value::Date(d)) => {
            check_date(*d)?;
            put_uint(dst, *d as u64);
        }
        (T::Time { scale }, Value::Time(t)) => put_uint(dst, time_units(*t, *scale)?),
        (T::DateTime2 { scale }, Value::DateTime2 { days, ticks }) => {
            check_date(*days)?;
            let (time, date) = dst.split_at_mut(time_size(*scale));
            put_uint(time, time_units(*ticks, *scale)?);
            put_uint(date, *days as u64);
        }
        (T::DateTimeOffset { scale }, Value::DateTimeOffset { days, ticks, offset }) => {
            check_date(*days)?;
            if !(MIN_OFFSET_MINUTES..=MAX_OFFSET_MINUTES).contains(offset) {
                return Err(invalid(format!("datetimeoffset offset out of range: {offset} minutes")));
            }
            let (time, rest) = dst.split_at_mut(time_size(*scale));
            put_uint(time, time_units(*ticks, *scale)?);
            put_uint(&mut rest[..3], *days as u64);
            rest[3..].copy_from_slice(&offset.to_le_bytes());
        }
        (T::DateTime, Value::DateTime { days, ticks }) => {
            if !(DATETIME_MIN_DAYS..=DATETIME_MAX_DAYS).contains(days) || *ticks >= DATETIME_TICKS_PER_DAY {
                return Err(invalid(format!("datetime out of range: day {days}, tick {ticks}")));
            }
            dst[..4].copy_from_slice(&days.to_le_bytes());
            dst[4..].copy_from_slice(&ticks.to_le_bytes());
        }
        (T::SmallDateTime, Value::SmallDateTime { days, minutes }) => {
            if *minutes >= MINUTES_PER_DAY {
                return Err(invalid(format!("smalldatetime out of range: minute {minutes}")));
            }
            dst[..2].copy_from_slice(&days.to_le_bytes());
            dst[2..].copy_from_slice(&minutes.to_le_bytes());
        }
        (T::UniqueIdentifier, Value::Guid(g)) => dst.copy_from_slice(g),
        _ => return Err(mismatch(ty, v)),
    }
    Ok(())
}

fn pad(ty: &ColumnType, dst: &mut [u8], src: &[u8], fill: u8) -> Result<()> {
    if src.len() > dst.len() {
        return Err(invalid(format!(
            "a value of length {} does not fit in a column of type {ty:?} (would be truncated)",
            src.len()
        )));
    }
    dst[..src.len()].copy_from_slice(src);
    dst[src.len()..].fill(fill);
    Ok(())
}

/// Decodes a fixed-length column's bytes (exactly its size).
fn read_fixed(ty: &ColumnType, b: &[u8]) -> Result<Value> {
    use ColumnType as T;
    Ok(match *ty {
        T::Bit => match b[0] {
            0 => Value::Bit(false),
            1 => Value::Bit(true),
            x => return Err(malformed(format_args!("bit column holds {x}"))),
        },
        T::TinyInt => Value::TinyInt(b[0]),
        T::SmallInt => Value::SmallInt(i16::from_le_bytes([b[0], b[1]])),
        T::Int => Value::Int(i32::from_le_bytes(b.try_into().unwrap())),
        T::BigInt => Value::BigInt(i64::from_le_bytes(b.try_into().unwrap())),
        T::Real => {
            let x = f32::from_le_bytes(b.try_into().unwrap());
            if !x.is_finite() {
                return Err(malformed("real column is not a finite number"));
            }
            Value::Real(x)
        }
        T::Float => {
            let x = f64::from_le_bytes(b.try_into().unwrap());
            if !x.is_finite() {
                return Err(malformed("float column is not a finite number"));
            }
            Value::Float(x)
        }
        T::Decimal { precision, scale } => {
            let mut mag = [0u8; 16];
            mag[..b.len() - 1].copy_from_slice(&b[1..]);
            let mag = u128::from_le_bytes(mag);
            if b[0] > 1 || mag > i128::MAX as u128 {
                return Err(malformed("bad decimal encoding"));
            }
            let v = if b[0] == 1 { mag as i128 } else { -(mag as i128) };
            if !fits_precision(v, precision) {
                return Err(malformed(format_args!("decimal value exceeds precision {precision}")));
            }
            Value::Decimal { value: v, scale }
        }
        T::Money => Value::Money(i64::from_le_bytes(b.try_into().unwrap())),
        T::SmallMoney => Value::Money(i32::from_le_bytes(b.try_into().unwrap()) as i64),
        T::Char(_) | T::Binary(_) | T::NChar(_) => unreachable!("read as fields"),
        T::Date => Value::Date(read_date(b)?),
        T::Time { scale } => Value::Time(read_time(b, scale)?),
        T::DateTime2 { scale } => {
            let (time, date) = b.split_at(time_size(scale));
            Value::DateTime2 { days: read_date(date)?, ticks: read_time(time, scale)? }
        }
        T::DateTimeOffset { scale } => {
            let (time, rest) = b.split_at(time_size(scale));
            let offset = i16::from_le_bytes([rest[3], rest[4]]);
            if !(MIN_OFFSET_MINUTES..=MAX_OFFSET_MINUTES).contains(&offset) {
                return Err(malformed("datetimeoffset offset out of range"));
            }
            Value::DateTimeOffset { days: read_date(&rest[..3])?, ticks: read_time(time, scale)?, offset }
        }
        T::DateTime => {
            let days = i32::from_le_bytes(b[..4].try_into().unwrap());
            let ticks = u32::from_le_bytes(b[4..].try_into().unwrap());
            if !(DATETIME_MIN_DAYS..=DATETIME_MAX_DAYS).contains(&days) || ticks >= DATETIME_TICKS_PER_DAY {
                return Err(malformed("datetime out of range"));
            }
            Value::DateTime { days, ticks }
        }
        T::SmallDateTime => {
            let days = u16::from_le_bytes([b[0], b[1]]);
            let minutes = u16::from_le_bytes([b[2], b[3]]);
            if minutes >= MINUTES_PER_DAY {
                return Err(malformed("smalldatetime out of range"));
            }
            Value::SmallDateTime { days, minutes }
        }
        T::UniqueIdentifier => Value::Guid(b.try_into().unwrap()),
        T::VarChar(_) | T::NVarChar(_) | T::VarBinary(_) => unreachable!("not a fixed-length type"),
    })
}

fn read_date(b: &[u8]) -> Result<i32> {
    let d = get_uint(b) as i32;
    if d > MAX_DATE_DAYS {
        return Err(malformed("date out of range"));
    }
    Ok(d)
}

fn read_time(b: &[u8], scale: u8) -> Result<u64> {
    let units = get_uint(b);
    let unit = time_unit(scale);
    if units >= TICKS_PER_DAY / unit {
        return Err(malformed("time out of range"));
    }
    Ok(units * unit)
}

fn read_var<'r>(ty: &ColumnType, b: &'r [u8]) -> Result<Field<'r>> {
    match *ty {
        ColumnType::VarChar(n) | ColumnType::VarBinary(n) => {
            if n != MAX && b.len() > n as usize {
                return Err(malformed(format_args!("{} bytes in a {ty:?} column", b.len())));
            }
            Ok(Field::Bytes(b))
        }
        ColumnType::NVarChar(n) => {
            if b.len() & 1 == 1 || (n != MAX && b.len() > 2 * n as usize) {
                return Err(malformed(format_args!("{} bytes in a {ty:?} column", b.len())));
            }
            Ok(Field::Unicode(b))
        }
        _ => unreachable!("not a variable-length type"),
    }
}

/// A column as [`decode_each`] hands it over: character and binary data borrowed from the
/// row (so a reader builds its own representation with one copy), anything else decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Field<'r> {
    Value(Value),
    /// char, varchar, binary, varbinary.
    Bytes(&'r [u8]),
    /// nchar, nvarchar: UTF-16LE code units.
    Unicode(&'r [u8]),
    /// varchar, nvarchar, varbinary stored off the row.
    OffRow(OffRow),
}

impl Field<'_> {
    pub fn into_value(self) -> Value {
        match self {
            Field::Value(v) => v,
            Field::Bytes(b) => Value::Bytes(b.to_vec()),
            Field::Unicode(b) => Value::Unicode(b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()),
            Field::OffRow(p) => Value::OffRow(p),
        }
    }
}

/// Where things are in one row (validated against the schema and the row's length).
struct Layout {
    ncols: usize,
    bitmap: usize,
    /// Var columns present in the row.
    vc: usize,
    /// Start of the var-column end-offset array.
    offs: usize,
    /// Start of the var data.
    data: usize,
}

#[inline]
fn get_u16(row: &[u8], off: usize) -> usize {
    u16::from_le_bytes([row[off], row[off + 1]]) as usize
}

fn parse(schema: &RowSchema, row: &[u8]) -> Result<Layout> {
    let len = row.len();
    if len < HEADER + 2 {
        return Err(malformed(format_args!("{len} bytes is shorter than a row header")));
    }
    if len > MAX_ROW_SIZE {
        return Err(malformed(format_args!("{len} bytes is longer than the largest row")));
    }
    let a = row[0];
    if a & STATUS_NULL_BITMAP == 0
        || a & !(STATUS_NULL_BITMAP | STATUS_VAR_COLUMNS | STATUS_RECORD_TYPE | STATUS_OFF_ROW) != 0
        || row[1] != 0
    {
        return Err(malformed(format_args!("bad status bytes {:#04x} {:#04x}", row[0], row[1])));
    }
    let fixed_end = get_u16(row, 2);
    if fixed_end < HEADER || fixed_end + 2 > len {
        return Err(malformed(format_args!("column count offset {fixed_end} out of range")));
    }
    let ncols = get_u16(row, fixed_end);
    if ncols > schema.len() {
        return Err(malformed(format_args!("{ncols} columns in a row of a {}-column table", schema.len())));
    }
    if schema.fixed_end[ncols] as usize != fixed_end {
        return Err(malformed(format_args!("fixed-length data of {} bytes for {ncols} columns", fixed_end - HEADER)));
    }
    let bitmap = fixed_end + 2;
    let p = bitmap + ncols.div_ceil(8);
    if p > len {
        return Err(malformed("NULL bitmap runs past the end of the row"));
    }
    if a & STATUS_VAR_COLUMNS == 0 {
        return Ok(Layout { ncols, bitmap, vc: 0, offs: p, data: p });
    }
    if p + 2 > len {
        return Err(malformed("var-column count runs past the end of the row"));
    }
    let vc = get_u16(row, p);
    if vc == 0 || vc > schema.vars[ncols] as usize {
        return Err(malformed(format_args!("{vc} var columns in a row of {ncols} columns")));
    }
    let offs = p + 2;
    let data = offs + 2 * vc;
    if data > len {
        return Err(malformed("var-column offsets run past the end of the row"));
    }
    Ok(Layout { ncols, bitmap, vc, offs, data })
}

#[inline]
fn null_bit(row: &[u8], l: &Layout, i: usize) -> bool {
    row[l.bitmap + i / 8] >> (i % 8) & 1 == 1
}

/// Where var column `k`'s data ends, and whether it is an off-row pointer.
#[inline]
fn var_end(row: &[u8], l: &Layout, k: usize) -> (usize, bool) {
    let end = get_u16(row, l.offs + 2 * k);
    (end & !(OFF_ROW_BIT as usize), end & OFF_ROW_BIT as usize != 0)
}

/// Byte range of var column `k` (< vc), and whether it holds an off-row pointer.
fn var_span(row: &[u8], l: &Layout, k: usize) -> Result<(usize, usize, bool)> {
    let start = if k == 0 { l.data } else { var_end(row, l, k - 1).0 };
    let (end, off_row) = var_end(row, l, k);
    if start < l.data || start > end || end > row.len() {
        return Err(malformed(format_args!("var column {k} spans {start}..{end}")));
    }
    Ok((start, end, off_row))
}

/// Where column `i`'s stored bytes are in the row, None when it is NULL, and whether they
/// are an off-row pointer.
fn column_span(schema: &RowSchema, row: &[u8], l: &Layout, i: usize) -> Result<Option<(Range<usize>, bool)>> {
    if i >= l.ncols || null_bit(row, l, i) {
        return Ok(None);
    }
    let place = schema.place[i] as usize;
    match schema.columns[i].fixed_size() {
        Some(size) => Ok(Some((place..place + size, false))),
        None => {
            if place >= l.vc {
                return Err(malformed(format_args!("column {i} is not NULL but has no data")));
            }
            let (s, e, off_row) = var_span(row, l, place)?;
            Ok(Some((s..e, off_row)))
        }
    }
}

fn read_column<'r>(schema: &RowSchema, row: &'r [u8], l: &Layout, i: usize) -> Result<Field<'r>> {
    match column_span(schema, row, l, i)? {
        None => Ok(Field::Value(Value::Null)),
        Some((span, true)) => Ok(Field::OffRow(OffRow::from_bytes(&row[span])?)),
        Some((span, false)) => field(&schema.columns[i], &row[span]),
    }
}

/// A non-NULL column of type `ty` from its stored bytes (as [`locate`] finds them).
/// Malformed bytes give [`Error::Invalid`].
pub fn field<'r>(ty: &ColumnType, bytes: &'r [u8]) -> Result<Field<'r>> {
    match ty.fixed_size() {
        Some(size) => {
            if bytes.len() != size {
                return Err(malformed(format_args!("{} bytes in a {ty:?} column", bytes.len())));
            }
            Ok(match ty {
                ColumnType::Char(_) | ColumnType::Binary(_) => Field::Bytes(bytes),
                ColumnType::NChar(_) => Field::Unicode(bytes),
                _ => Field::Value(read_fixed(ty, bytes)?),
            })
        }
        None => read_var(ty, bytes),
    }
}

/// Decodes every column of a row. Malformed bytes give [`Error::Invalid`].
pub fn decode(schema: &RowSchema, row: &[u8]) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(schema.len());
    decode_into(schema, row, &mut out)?;
    Ok(out)
}

/// Decodes every column of a row into `out` (cleared first). Checks the whole row: NULL
/// bitmap padding, var-column offsets in order and ending exactly at the end of the row.
pub fn decode_into(schema: &RowSchema, row: &[u8], out: &mut Vec<Value>) -> Result<()> {
    out.clear();
    decode_each(schema, row, |_, field| out.push(field.into_value()))
}

/// Hands every column of a row to `f` in order, character and binary data borrowed.
/// Checks the whole row as [`decode_into`] does.
pub fn decode_each<'r>(schema: &RowSchema, row: &'r [u8], mut f: impl FnMut(usize, Field<'r>)) -> Result<()> {
    let l = check(schema, row)?;
    for i in 0..schema.len() {
        f(i, read_column(schema, row, &l, i)?);
    }
    Ok(())
}

/// Where the stored bytes of each of `columns` are in a row, in that order, None for a
/// NULL column: `out` is cleared and filled with one entry per column. Checks the whole
/// row as [`decode_into`] does, and the values of the columns located, so the bytes it
/// points at are valid stored values of their types (see [`field`]). A column stored off
/// the row has no such bytes: locating it is an error.
pub fn locate(schema: &RowSchema, row: &[u8], columns: &[usize], out: &mut Vec<Option<Range<usize>>>) -> Result<()> {
    out.clear();
    let l = check(schema, row)?;
    for &i in columns {
        if i >= schema.len() {
            return Err(invalid(format!("column {i} of a {}-column row", schema.len())));
        }
        let span = match column_span(schema, row, &l, i)? {
            Some((_, true)) => return Err(invalid(format!("column {i} is stored off the row"))),
            Some((span, false)) => {
                field(&schema.columns[i], &row[span.clone()])?;
                Some(span)
            }
            None => None,
        };
        out.push(span);
    }
    Ok(())
}

/// The row's layout, the whole row checked: NULL bitmap padding, var-column offsets in
/// order and ending exactly at the end of the row, no data for a NULL var column.
fn check(schema: &RowSchema, row: &[u8]) -> Result<Layout> {
    let l = parse(schema, row)?;
    if l.ncols % 8 != 0 && row[l.bitmap + l.ncols / 8] >> (l.ncols % 8) != 0 {
        return Err(malformed("NULL bitmap padding is not zero"));
    }
    let mut prev = l.data;
    let mut off_row = false;
    for k in 0..l.vc {
        let (end, out) = var_end(row, &l, k);
        if end < prev || end > row.len() || (out && end - prev != OFF_ROW_POINTER) {
            return Err(malformed(format_args!("var column {k} ends at {end}")));
        }
        off_row |= out;
        prev = end;
    }
    if off_row != has_off_row(row) {
        return Err(malformed("the off-row status bit does not match the var columns"));
    }
    if prev != row.len() {
        return Err(malformed(format_args!("{} trailing bytes", row.len() - prev)));
    }
    // Only a row with var data can hold data for a NULL var column.
    for i in (0..schema.len()).take_while(|_| l.vc > 0) {
        let ty = &schema.columns[i];
        if i < l.ncols && ty.is_variable() && null_bit(row, &l, i) {
            let k = schema.place[i] as usize;
            if k < l.vc && (var_span(row, &l, k)?.0 != var_span(row, &l, k)?.1 || var_end(row, &l, k).1) {
                return Err(malformed(format_args!("NULL column {i} has data")));
            }
        }
    }
    Ok(l)
}

/// Reads column `idx` of a row without decoding the others.
pub fn column(schema: &RowSchema, row: &[u8], idx: usize) -> Result<Value> {
    if idx >= schema.len() {
        return Err(invalid(format!("column {idx} of a {}-column row", schema.len())));
    }
    let l = parse(schema, row)?;
    read_column(schema, row, &l, idx).map(Field::into_value)
}

/// True when column `idx` of the row is NULL (cheaper than [`column()`]).
pub fn is_null(schema: &RowSchema, row: &[u8], idx: usize) -> Result<bool> {
    if idx >= schema.len() {
        return Err(invalid(format!("column {idx} of a {}-column row", schema.len())));
    }
    let l = parse(schema, row)?;
    Ok(idx >= l.ncols || null_bit(row, &l, idx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slotted;
    use proptest::prelude::*;
    use tessera_buffer::page::{PageNo, PageType, PAGE_SIZE};
    use ColumnType as T;

    fn schema(cols: &[ColumnType]) -> RowSchema {
        RowSchema::new(cols.to_vec()).unwrap()
    }

    #[test]
    fn int_char1000_row_is_1011_bytes_and_7_fit_a_page() {
        let s = schema(&[T::Int, T::Char(1000)]);
        let mut page = vec![0u8; PAGE_SIZE];
        slotted::init(&mut page, PageNo::from_raw(1), 1, PageType::BTreeLeaf, 0);
        for i in 0..7 {
            let row = encode(&s, &[Value::Int(i), Value::Bytes(b"x".to_vec())]).unwrap();
            assert_eq!(row.len(), 1011);
            assert!(slotted::insert(&mut page, i as usize, &row), "row {i} does not fit");
        }
        slotted::check(&page).unwrap();
        for i in 0..7 {
            let v = decode(&s, slotted::record(&page, i)).unwrap();
            assert_eq!(v[0], Value::Int(i as i32));
            let mut want = vec![b' '; 1000];
            want[0] = b'x';
            assert_eq!(v[1], Value::Bytes(want));
        }
    }

    #[test]
    fn layout_matches_the_documented_format() {
        let s = schema(&[T::Int, T::VarChar(10), T::SmallInt, T::NVarChar(5), T::VarBinary(4)]);
        let row =
            encode(&s, &[Value::Int(-2), Value::Bytes(b"ab".to_vec()), Value::Null, Value::unicode("é"), Value::Null])
                .unwrap();
        #[rustfmt::skip]
        let want = [
            0x30, 0x00, 10, 0,          // status, fixed end = 4 + 4 + 2
            0xFE, 0xFF, 0xFF, 0xFF,     // int -2
            0, 0,                       // smallint NULL
            5, 0,                       // 5 columns
            0b10100,                    // NULL bitmap: columns 2 and 4
            2, 0,                       // two var columns (trailing NULL omitted)
            21, 0, 23, 0,               // end offsets
            b'a', b'b', 0xE9, 0x00,     // data
        ];
        assert_eq!(row, want);
        assert_eq!(decode(&s, &row).unwrap()[3], Value::unicode("é"));

        // No var data at all: no var block.
        let row = encode(&s, &[Value::Int(1), Value::Null, Value::SmallInt(3), Value::Null, Value::Null]).unwrap();
        assert_eq!(row.len(), 4 + 6 + 2 + 1);
        assert_eq!(row[0], STATUS_NULL_BITMAP);
        assert_eq!(min_row_size_of(s.columns()), 13);
    }

    #[test]
    fn padding_and_length_limits() {
        let s = schema(&[T::Char(4), T::Binary(3), T::NChar(3), T::VarChar(2), T::NVarChar(1)]);
        let v = decode(
            &s,
            &encode(
                &s,
                &[Value::Bytes(b"a".to_vec()), Value::Bytes(vec![7]), Value::unicode("z"), Value::Null, Value::Null],
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(v[0], Value::Bytes(b"a   ".to_vec()));
        assert_eq!(v[1], Value::Bytes(vec![7, 0, 0]));
        assert_eq!(v[2], Value::unicode("z  "));
        let too_long = |i: usize, val: Value| {
            let mut vals = vec![Value::Null; 5];
            vals[i] = val;
            assert!(matches!(encode(&s, &vals), Err(Error::Invalid(_))), "column {i}");
        };
        too_long(0, Value::Bytes(b"abcde".to_vec()));
        too_long(1, Value::Bytes(vec![0; 4]));
        too_long(2, Value::unicode("abcd"));
        too_long(3, Value::Bytes(b"abc".to_vec()));
        too_long(4, Value::unicode("ab"));
        too_long(0, Value::Int(1)); // type mismatch
    }

    #[test]
    fn row_size_limit() {
        let s = schema(&[T::Int, T::VarChar(MAX)]);
        // 4 + 4 + 2 + 1 + 2 + 2 = 15 bytes of overhead
        let ok = encode(&s, &[Value::Int(1), Value::Bytes(vec![b'a'; MAX_ROW_SIZE - 15])]).unwrap();
        assert_eq!(ok.len(), MAX_ROW_SIZE);
        const { assert!(slotted::MAX_RECORD >= MAX_ROW_SIZE) };
        let err = encode(&s, &[Value::Int(1), Value::Bytes(vec![b'a'; MAX_ROW_SIZE - 14])]).unwrap_err();
        assert!(matches!(err, Error::RowTooLarge { size: 8061, max: 8060 }));
        assert_eq!(err.number(), 511);
        // A table whose fixed part alone is too large is refused.
        assert!(matches!(RowSchema::new(vec![T::Char(8000), T::Char(100)]), Err(Error::RowTooLarge { .. })));
        assert!(RowSchema::new(vec![T::Char(0)]).is_err());
        assert!(RowSchema::new(vec![T::Decimal { precision: 5, scale: 6 }]).is_err());
        assert!(RowSchema::new(vec![T::Int; MAX_COLUMNS + 1]).is_err());
        // encode_into leaves the buffer alone on error
        let mut buf = vec![1, 2, 3];
        assert!(encode_into(&s, &[Value::Int(1), Value::Bytes(vec![0; 9000])], &mut buf).is_err());
        assert_eq!(buf, [1, 2, 3]);
        encode_into(&s, &[Value::Int(1), Value::Null], &mut buf).unwrap();
        assert_eq!(decode(&s, &buf[3..]).unwrap(), vec![Value::Int(1), Value::Null]);
    }

    #[test]
    fn value_ranges() {
        let one = |ty: ColumnType, v: Value| encode(&schema(&[ty]), &[v]);
        assert!(one(T::Decimal { precision: 5, scale: 2 }, Value::Decimal { value: 99999, scale: 2 }).is_ok());
        assert!(one(T::Decimal { precision: 5, scale: 2 }, Value::Decimal { value: 100000, scale: 2 }).is_err());
        assert!(one(T::Decimal { precision: 5, scale: 2 }, Value::Decimal { value: 1234, scale: 4 }).is_err());
        let s = schema(&[T::Decimal { precision: 38, scale: 4 }]);
        let row = encode(&s, &[Value::Decimal { value: -15, scale: 1 }]).unwrap();
        assert_eq!(decode(&s, &row).unwrap(), vec![Value::Decimal { value: -15000, scale: 4 }]);
        assert!(one(T::Decimal { precision: 38, scale: 0 }, Value::Decimal { value: i128::MIN, scale: 0 }).is_err());
        assert!(one(T::SmallMoney, Value::Money(i32::MAX as i64 + 1)).is_err());
        assert!(one(T::Float, Value::Float(f64::NAN)).is_err());
        assert!(one(T::Real, Value::Real(f32::INFINITY)).is_err());
        assert!(one(T::Date, Value::Date(MAX_DATE_DAYS + 1)).is_err());
        assert!(one(T::Date, Value::Date(-1)).is_err());
        assert!(one(T::Time { scale: 3 }, Value::Time(123_450_000)).is_ok());
        assert!(one(T::Time { scale: 3 }, Value::Time(123_456_789)).is_err());
        assert!(one(T::Time { scale: 7 }, Value::Time(TICKS_PER_DAY)).is_err());
        assert!(one(T::DateTime, Value::DateTime { days: DATETIME_MIN_DAYS - 1, ticks: 0 }).is_err());
        assert!(one(T::DateTime, Value::DateTime { days: 0, ticks: DATETIME_TICKS_PER_DAY }).is_err());
        assert!(one(T::SmallDateTime, Value::SmallDateTime { days: 65535, minutes: 1440 }).is_err());
        assert_eq!(T::Time { scale: 2 }.fixed_size(), Some(3));
        assert_eq!(T::DateTime2 { scale: 7 }.fixed_size(), Some(8));
        assert_eq!(T::DateTimeOffset { scale: 7 }.fixed_size(), Some(10));
        assert_eq!(T::DateTimeOffset { scale: 0 }.fixed_size(), Some(8));
        let dto = |offset| Value::DateTimeOffset { days: 1, ticks: 0, offset };
        assert!(one(T::DateTimeOffset { scale: 7 }, dto(MAX_OFFSET_MINUTES)).is_ok());
        assert!(one(T::DateTimeOffset { scale: 7 }, dto(MIN_OFFSET_MINUTES - 1)).is_err());
        assert!(one(T::DateTimeOffset { scale: 7 }, dto(MAX_OFFSET_MINUTES + 1)).is_err());
        let s = schema(&[T::DateTimeOffset { scale: 2 }]);
        let v = Value::DateTimeOffset { days: MAX_DATE_DAYS, ticks: 100_000, offset: -330 };
        let row = encode(&s, std::slice::from_ref(&v)).unwrap();
        // time(2) in 1/100 s units, the UTC date, then the offset
        assert_eq!(&row[4..12], &[1, 0, 0, 0xDA, 0xB9, 0x37, 0xB6, 0xFE]);
        assert_eq!(decode(&s, &row).unwrap(), vec![v]);
        assert_eq!(T::Decimal { precision: 19, scale: 0 }.fixed_size(), Some(9));
    }

    #[test]
    fn rows_written_before_add_column_read_as_null() {
        let old = schema(&[T::Int, T::VarChar(10)]);
        let new = schema(&[T::Int, T::VarChar(10), T::BigInt, T::NVarChar(4)]);
        let row = encode(&old, &[Value::Int(5), Value::Bytes(b"hi".to_vec())]).unwrap();
        assert_eq!(
            decode(&new, &row).unwrap(),
            vec![Value::Int(5), Value::Bytes(b"hi".to_vec()), Value::Null, Value::Null]
        );
        assert_eq!(column(&new, &row, 2).unwrap(), Value::Null);
        assert!(is_null(&new, &row, 3).unwrap());
        assert!(!is_null(&new, &row, 1).unwrap());
        // but a row with more columns than the schema is rejected
        let row = encode(&new, &[Value::Int(5), Value::Null, Value::Null, Value::Null]).unwrap();
        assert!(decode(&old, &row).is_err());
        assert!(column(&new, &row, 4).is_err());
    }

    #[test]
    fn malformed_rows_are_rejected() {
        let s = schema(&[T::Int, T::VarChar(10), T::Bit]);
        let good = encode(&s, &[Value::Int(1), Value::Bytes(b"abc".to_vec()), Value::Bit(true)]).unwrap();
        let bad = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut r = good.clone();
            f(&mut r);
            assert!(matches!(decode(&s, &r), Err(Error::Invalid(_))), "{r:?}");
        };
        bad(&|r| r.truncate(3));
        bad(&|r| r[0] = 0);
        bad(&|r| r[1] = 1);
        bad(&|r| r[2] = 200);
        bad(&|r| r[8] = 0x55); // bit column holds 0x55
        bad(&|r| r.push(0)); // trailing byte
        bad(&|r| r.pop().map(|_| ()).unwrap());
        bad(&|r| r[11] |= 0x80); // bitmap padding
        bad(&|r| r[11] |= 0x02); // NULL var column with data
        bad(&|r| r[12] = 2); // more var columns than the schema has
        bad(&|r| r.clear());
        assert!(decode(&s, &good).is_ok());
    }

    fn arb_type() -> impl Strategy<Value = ColumnType> {
        let len = || prop_oneof![1u16..40, Just(MAX)];
        prop_oneof![
            Just(T::Bit),
            Just(T::TinyInt),
            Just(T::SmallInt),
            Just(T::Int),
            Just(T::BigInt),
            Just(T::Real),
            Just(T::Float),
            (1u8..=38)
                .prop_flat_map(|p| (Just(p), 0..=p))
                .prop_map(|(precision, scale)| T::Decimal { precision, scale }),
            Just(T::Money),
            Just(T::SmallMoney),
            (1u16..40).prop_map(T::Char),
            len().prop_map(T::VarChar),
            (1u16..20).prop_map(T::NChar),
            len().prop_map(T::NVarChar),
            (1u16..40).prop_map(T::Binary),
            len().prop_map(T::VarBinary),
            Just(T::Date),
            (0u8..=7).prop_map(|scale| T::Time { scale }),
            Just(T::DateTime),
            (0u8..=7).prop_map(|scale| T::DateTime2 { scale }),
            Just(T::SmallDateTime),
            (0u8..=7).prop_map(|scale| T::DateTimeOffset { scale }),
            Just(T::UniqueIdentifier),
        ]
    }

    fn arb_time(scale: u8) -> impl Strategy<Value = u64> {
        let unit = time_unit(scale);
        (0..TICKS_PER_DAY / unit).prop_map(move |u| u * unit)
    }

    fn var_limit(n: u16) -> usize {
        if n == MAX {
            100
        } else {
            n as usize
        }
    }

    /// A value for `ty`, and what decoding it must give back (fixed-length values padded).
    fn arb_value(ty: ColumnType) -> BoxedStrategy<(Value, Value)> {
        let same = |s: BoxedStrategy<Value>| s.prop_map(|v| (v.clone(), v)).boxed();
        let val = match ty {
            T::Bit => same(any::<bool>().prop_map(Value::Bit).boxed()),
            T::TinyInt => same(any::<u8>().prop_map(Value::TinyInt).boxed()),
            T::SmallInt => same(any::<i16>().prop_map(Value::SmallInt).boxed()),
            T::Int => same(any::<i32>().prop_map(Value::Int).boxed()),
            T::BigInt => same(any::<i64>().prop_map(Value::BigInt).boxed()),
            T::Real => same(any::<f32>().prop_filter("finite", |x| x.is_finite()).prop_map(Value::Real).boxed()),
            T::Float => same(any::<f64>().prop_filter("finite", |x| x.is_finite()).prop_map(Value::Float).boxed()),
            T::Decimal { precision, scale } => {
                let m = 10i128.pow(precision as u32) - 1;
                same((-m..=m).prop_map(move |value| Value::Decimal { value, scale }).boxed())
            }
            T::Money => same(any::<i64>().prop_map(Value::Money).boxed()),
            T::SmallMoney => same(any::<i32>().prop_map(|x| Value::Money(x as i64)).boxed()),
            T::Char(n) | T::Binary(n) => {
                let fill = if matches!(ty, T::Char(_)) { b' ' } else { 0 };
                prop::collection::vec(any::<u8>(), 0..=n as usize)
                    .prop_map(move |b| {
                        let mut p = b.clone();
                        p.resize(n as usize, fill);
                        (Value::Bytes(b), Value::Bytes(p))
                    })
                    .boxed()
            }
            T::NChar(n) => prop::collection::vec(any::<u16>(), 0..=n as usize)
                .prop_map(move |u| {
                    let mut p = u.clone();
                    p.resize(n as usize, 0x20);
                    (Value::Unicode(u), Value::Unicode(p))
                })
                .boxed(),
            T::VarChar(n) | T::VarBinary(n) => {
                same(prop::collection::vec(any::<u8>(), 0..=var_limit(n)).prop_map(Value::Bytes).boxed())
            }
            T::NVarChar(n) => {
                same(prop::collection::vec(any::<u16>(), 0..=var_limit(n)).prop_map(Value::Unicode).boxed())
            }
            T::Date => same((0..=MAX_DATE_DAYS).prop_map(Value::Date).boxed()),
            T::Time { scale } => same(arb_time(scale).prop_map(Value::Time).boxed()),
            T::DateTime => same(
                (DATETIME_MIN_DAYS..=DATETIME_MAX_DAYS, 0..DATETIME_TICKS_PER_DAY)
                    .prop_map(|(days, ticks)| Value::DateTime { days, ticks })
                    .boxed(),
            ),
            T::DateTime2 { scale } => same(
                (0..=MAX_DATE_DAYS, arb_time(scale)).prop_map(|(days, ticks)| Value::DateTime2 { days, ticks }).boxed(),
            ),
            T::DateTimeOffset { scale } => same(
                (0..=MAX_DATE_DAYS, arb_time(scale), MIN_OFFSET_MINUTES..=MAX_OFFSET_MINUTES)
                    .prop_map(|(days, ticks, offset)| Value::DateTimeOffset { days, ticks, offset })
                    .boxed(),
            ),
            T::SmallDateTime => same(
                (any::<u16>(), 0..MINUTES_PER_DAY)
                    .prop_map(|(days, minutes)| Value::SmallDateTime { days, minutes })
                    .boxed(),
            ),
            T::UniqueIdentifier => same(any::<[u8; 16]>().prop_map(Value::Guid).boxed()),
        };
        prop_oneof![1 => Just((Value::Null, Value::Null)), 4 => val].boxed()
    }

    fn arb_row() -> impl Strategy<Value = (RowSchema, Vec<Value>, Vec<Value>)> {
        prop::collection::vec(arb_type(), 0..20).prop_flat_map(|types| {
            let vals: Vec<_> = types.iter().map(|t| arb_value(*t)).collect();
            (Just(RowSchema::new(types).unwrap()), vals).prop_map(|(s, pairs)| {
                let (input, expect) = pairs.into_iter().unzip();
                (s, input, expect)
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn round_trip((s, input, expect) in arb_row()) {
            let row = encode(&s, &input).unwrap();
            prop_assert!(row.len() <= MAX_ROW_SIZE);
            prop_assert_eq!(decode(&s, &row).unwrap(), expect.clone());
            for (i, want) in expect.iter().enumerate() {
                prop_assert_eq!(&column(&s, &row, i).unwrap(), want);
                prop_assert_eq!(is_null(&s, &row, i).unwrap(), want.is_null());
            }
            // re-encoding the decoded (padded) values gives the same bytes
            prop_assert_eq!(&encode(&s, &expect).unwrap(), &row);
            // each column located, in reverse order, reads as its decoded value
            let columns: Vec<usize> = (0..s.len()).rev().collect();
            let mut spans = Vec::new();
            locate(&s, &row, &columns, &mut spans).unwrap();
            prop_assert_eq!(spans.len(), columns.len());
            for (&i, span) in columns.iter().zip(&spans) {
                let got = match span {
                    None => Value::Null,
                    Some(span) => field(&s.columns()[i], &row[span.clone()]).unwrap().into_value(),
                };
                prop_assert_eq!(&got, &expect[i]);
            }
        }

        #[test]
        fn values_that_do_not_fit_go_off_the_row(
            lens in prop::collection::vec((0usize..3, 0usize..12_000), 1..6),
            fixed in 0u16..4000,
        ) {
            // Columns of the kinds that overflow: varchar(8000), nvarchar(4000), varbinary(max).
            let mut types = vec![T::Char(fixed.max(1))];
            let mut input = vec![Value::Bytes(vec![b' '; fixed.max(1) as usize])];
            for &(kind, len) in &lens {
                let (ty, v) = match kind {
                    0 => (T::VarChar(8000), Value::Bytes(vec![b'a'; len.min(8000)])),
                    1 => (T::NVarChar(4000), Value::Unicode(vec![0x263a; len.min(4000)])),
                    _ => (T::VarBinary(MAX), Value::Bytes(vec![7; len])),
                };
                types.push(ty);
                input.push(v);
            }
            let s = RowSchema::new(types).unwrap();
            let Ok(out) = off_row_columns(&s, &input, false) else {
                // Only when even every movable value as a pointer leaves the row too large.
                let floor = min_row_size_of(s.columns()) + 2 + 2 * lens.len() + lens.len() * OFF_ROW_POINTER;
                prop_assert!(floor > MAX_ROW_SIZE);
                return Ok(());
            };
            let mut stored = input.clone();
            for (n, &i) in out.iter().enumerate() {
                let len = var_len(&s.columns()[i], &input[i]).unwrap() as u64;
                stored[i] = Value::OffRow(OffRow { id: n as u64 + 1, len, gen: 0 });
            }
            // With 'large value types out of row', every non-empty (max) value goes out too.
            if let Ok(all) = off_row_columns(&s, &input, true) {
                for (i, v) in input.iter().enumerate() {
                    if s.columns()[i].is_max() && var_len(&s.columns()[i], v).unwrap() > 0 {
                        prop_assert!(all.contains(&i));
                    }
                }
            }
            // (max) values over MAX_IN_ROW bytes are always out; the row then fits.
            for (i, v) in input.iter().enumerate() {
                if s.columns()[i].is_max() && var_len(&s.columns()[i], v).unwrap() > MAX_IN_ROW {
                    prop_assert!(out.contains(&i));
                }
            }
            let row = encode(&s, &stored).unwrap();
            prop_assert!(row.len() <= MAX_ROW_SIZE);
            prop_assert_eq!(has_off_row(&row), !out.is_empty());
            prop_assert!(s.overflows() || out.is_empty());
            prop_assert_eq!(decode(&s, &row).unwrap(), stored.clone());
            // Moving one value fewer (the shortest moved, not a forced one) would not fit.
            let optional: Vec<usize> = out.iter().copied().filter(|&i| !s.columns()[i].is_max()
                || var_len(&s.columns()[i], &input[i]).unwrap() <= MAX_IN_ROW).collect();
            if let Some(&keep) = optional.iter().min_by_key(|&&i| var_len(&s.columns()[i], &input[i]).unwrap()) {
                let mut fewer = stored.clone();
                fewer[keep] = input[keep].clone();
                prop_assert!(encode(&s, &fewer).is_err());
            }
        }

        #[test]
        fn damaged_rows_never_panic(
            (s, input, _) in arb_row(),
            flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
            cut in any::<prop::sample::Index>(),
            do_cut in any::<bool>(),
        ) {
            let mut row = encode(&s, &input).unwrap();
            for (at, x) in flips {
                let i = at.index(row.len());
                row[i] ^= x;
            }
            if do_cut {
                row.truncate(cut.index(row.len() + 1));
            }
            let decoded = decode(&s, &row);
            for i in 0..s.len() {
                let _ = column(&s, &row, i);
                let _ = is_null(&s, &row, i);
            }
            // A row that decodes is one that locates, and the other way round.
            let all: Vec<usize> = (0..s.len()).collect();
            prop_assert_eq!(locate(&s, &row, &all, &mut Vec::new()).is_ok(), decoded.is_ok());
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
            let s = schema(&[T::Int, T::VarChar(10), T::Decimal { precision: 20, scale: 2 }, T::NVarChar(MAX), T::DateTime2 { scale: 3 }]);
            let _ = decode(&s, &bytes);
            for i in 0..s.len() {
                let _ = column(&s, &bytes, i);
            }
        }
    }
}
