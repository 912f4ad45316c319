//! TDS data types: the TYPE_INFO and value encoding of every [`SqlType`] for COLMETADATA,
//! ROW and RETURNVALUE, and the decoding of typed RPC parameters (every type a client may
//! send, NULLs and PLP included).
//!
//! Mapping (server → client):
//!
//! | SqlType | TDS type |
//! |---|---|
//! | bit | BITN (0x68) |
//! | tinyint, smallint, int, bigint | INTN (0x26) of 1/2/4/8 bytes |
//! | real, float | FLTN (0x6D) of 4/8 bytes |
//! | decimal/numeric(p, s) | DECIMALN (0x6A) |
//! | money, smallmoney | MONEYN (0x6E) of 8/4 bytes |
//! | char/varchar(n) | BIGCHAR (0xAF) / BIGVARCHAR (0xA7) with the collation, Windows-1252 bytes |
//! | nchar/nvarchar(n) | NCHAR (0xEF) / NVARCHAR (0xE7), UTF-16LE |
//! | binary/varbinary(n) | BIGBINARY (0xAD) / BIGVARBINARY (0xA5) |
//! | (max) types | the variable type with length 0xFFFF, values as PLP |
//! | date, time(s), datetime2(s) | DATEN (0x28), TIMEN (0x29), DATETIME2N (0x2A) |
//! | datetimeoffset(s) | DATETIMEOFFSETN (0x2B): UTC time and date as DATETIME2N, then the offset in minutes (i16) |
//! | datetime, smalldatetime | DATETIMN (0x6F) of 8/4 bytes |
//! | uniqueidentifier | GUIDTYPE (0x24) |
//!
//! Values go through [`tessera_execution::encoding::to_storage`], which gives each type's canonical
//! storage form (varchar as Windows-1252, nvarchar as UTF-16 units, datetime as days since
//! 1900 and 1/300 s ticks, money in 1/10000 units) — the same forms TDS carries — except
//! text and binary values whose bytes the value itself holds in that form, written
//! straight from it (`put_direct`): varchar text that is ASCII (where Windows-1252 and
//! UTF-8 agree), nvarchar text (UTF-16 units made as they are written), binary. A row
//! handed over as it is stored ([`put_stored_value`]) is written from its stored bytes,
//! which are the bytes above but for money, whose halves TDS swaps.
//!
//! Invariant: encoders never fail; a value that does not fit its static type (which the
//! SQL layer rules out) is sent as NULL rather than as malformed bytes.

use bytes::{BufMut, BytesMut};
use tessera_access::row::{self, MAX};
use tessera_execution::encoding::{from_storage, to_storage};
use tessera_semantics::types::{large, LargeKind, SqlType, Value};

use crate::codec::{bad, cp1252_decode, ucs2_decode, DecodeError, DecodeResult, Input};
use crate::spool;

/// SQL_Latin1_General_CP1_CI_AS: LCID 0x0409 with IgnoreCase/IgnoreKana/IgnoreWidth, sort
/// order 52.
pub const COLLATION: [u8; 5] = [0x09, 0x04, 0xD0, 0x00, 0x34];

/// TDS type bytes.
pub mod code {
    pub const NULL: u8 = 0x1F;
    pub const IMAGE: u8 = 0x22;
    pub const TEXT: u8 = 0x23;
    pub const GUID: u8 = 0x24;
    pub const VARBINARY: u8 = 0x25;
    pub const INTN: u8 = 0x26;
    pub const VARCHAR: u8 = 0x27;
    pub const DATEN: u8 = 0x28;
    pub const TIMEN: u8 = 0x29;
    pub const DATETIME2N: u8 = 0x2A;
    pub const DATETIMEOFFSETN: u8 = 0x2B;
    pub const BINARY: u8 = 0x2D;
    pub const CHAR: u8 = 0x2F;
    pub const INT1: u8 = 0x30;
    pub const BIT: u8 = 0x32;
    pub const INT2: u8 = 0x34;
    pub const DECIMAL: u8 = 0x37;
    pub const INT4: u8 = 0x38;
    pub const DATETIM4: u8 = 0x3A;
    pub const FLT4: u8 = 0x3B;
    pub const MONEY: u8 = 0x3C;
    pub const DATETIME: u8 = 0x3D;
    pub const FLT8: u8 = 0x3E;
    pub const NUMERIC: u8 = 0x3F;
    pub const SSVARIANT: u8 = 0x62;
    pub const NTEXT: u8 = 0x63;
    pub const BITN: u8 = 0x68;
    pub const DECIMALN: u8 = 0x6A;
    pub const NUMERICN: u8 = 0x6C;
    pub const FLTN: u8 = 0x6D;
    pub const MONEYN: u8 = 0x6E;
    pub const DATETIMN: u8 = 0x6F;
    pub const MONEY4: u8 = 0x7A;
    pub const INT8: u8 = 0x7F;
    pub const BIGVARBIN: u8 = 0xA5;
    pub const BIGVARCHR: u8 = 0xA7;
    pub const BIGBINARY: u8 = 0xAD;
    pub const BIGCHAR: u8 = 0xAF;
    pub const NVARCHAR: u8 = 0xE7;
    pub const NCHAR: u8 = 0xEF;
    pub const UDT: u8 = 0xF0;
    pub const XML: u8 = 0xF1;
    pub const TVP: u8 = 0xF3;
}

const PLP_NULL: u64 = u64::MAX;
const PLP_UNKNOWN: u64 = u64::MAX - 1;

pub fn decimal_len(precision: u8) -> u8 {
    match precision {
        0..=9 => 5,
        10..=19 => 9,
        20..=28 => 13,
        _ => 17,
    }
}

fn time_len(scale: u8) -> u8 {
    match scale {
        0..=2 => 3,
        3..=4 => 4,
        _ => 5,
    }
}

/// Writes TYPE_INFO for `ty`.
pub fn put_type_info(out: &mut BytesMut, ty: &SqlType) {
    use SqlType as T;
    let var = |out: &mut BytesMut, code: u8, n: u16, chars: bool, collation: bool| {
        out.put_u8(code);
        let len = if n == MAX {
            0xFFFF
        } else if chars {
            n.saturating_mul(2)
        } else {
            n
        };
        out.put_u16_le(len);
        if collation {
            out.put_slice(&COLLATION);
        }
    };
    match *ty {
        T::Bit => out.put_slice(&[code::BITN, 1]),
        T::TinyInt => out.put_slice(&[code::INTN, 1]),
        T::SmallInt => out.put_slice(&[code::INTN, 2]),
        T::Int => out.put_slice(&[code::INTN, 4]),
        T::BigInt => out.put_slice(&[code::INTN, 8]),
        T::Real => out.put_slice(&[code::FLTN, 4]),
        T::Float => out.put_slice(&[code::FLTN, 8]),
        T::Decimal { precision, scale } => out.put_slice(&[code::DECIMALN, decimal_len(precision), precision, scale]),
        T::Money => out.put_slice(&[code::MONEYN, 8]),
        T::SmallMoney => out.put_slice(&[code::MONEYN, 4]),
        T::Char(n) => var(out, code::BIGCHAR, n, false, true),
        T::VarChar(n) => var(out, code::BIGVARCHR, n, false, true),
        T::NChar(n) => var(out, code::NCHAR, n, true, true),
        T::NVarChar(n) => var(out, code::NVARCHAR, n, true, true),
        T::Binary(n) => var(out, code::BIGBINARY, n, false, false),
        T::VarBinary(n) => var(out, code::BIGVARBIN, n, false, false),
        T::Date => out.put_u8(code::DATEN),
        T::Time { scale } => out.put_slice(&[code::TIMEN, scale]),
        T::DateTime2 { scale } => out.put_slice(&[code::DATETIME2N, scale]),
        T::DateTimeOffset { scale } => out.put_slice(&[code::DATETIMEOFFSETN, scale]),
        T::DateTime => out.put_slice(&[code::DATETIMN, 8]),
        T::SmallDateTime => out.put_slice(&[code::DATETIMN, 4]),
        T::UniqueIdentifier => out.put_slice(&[code::GUID, 16]),
    }
}

fn is_plp(ty: &SqlType) -> bool {
    matches!(*ty, SqlType::VarChar(MAX) | SqlType::NVarChar(MAX) | SqlType::VarBinary(MAX))
}

/// Whether values of `ty` use a two-byte length (0xFFFF = NULL) rather than one byte.
fn is_ushort(ty: &SqlType) -> bool {
    use SqlType as T;
    !is_plp(ty)
        && matches!(ty, T::Char(_) | T::VarChar(_) | T::NChar(_) | T::NVarChar(_) | T::Binary(_) | T::VarBinary(_))
}

/// Writes the NULL form of a value of `ty`.
pub fn put_null(out: &mut BytesMut, ty: &SqlType) {
    if is_plp(ty) {
        out.put_u64_le(PLP_NULL);
    } else if is_ushort(ty) {
        out.put_u16_le(0xFFFF);
    } else {
        out.put_u8(0);
    }
}

/// The length that starts a PLP value sent in chunks (each a u32 LE length and its
/// bytes, then [`put_plp_end`]).
pub fn put_plp_len(out: &mut BytesMut, len: u64) {
    out.put_u64_le(len);
}

/// The terminator of a PLP value.
pub fn put_plp_end(out: &mut BytesMut) {
    out.put_u32_le(0);
}

/// Whether a value of static type `ty` goes as PLP in the form of `kind` (the form a large
/// value's bytes are in).
pub fn is_plp_of(ty: &SqlType, kind: LargeKind) -> bool {
    is_plp(ty) && LargeKind::of(ty) == Some(kind)
}

fn put_plp(out: &mut BytesMut, bytes: &[u8]) {
    out.put_u64_le(bytes.len() as u64);
    // One chunk per 2^31 bytes at most (values are far smaller in practice).
    for chunk in bytes.chunks(PLP_CHUNK) {
        out.put_u32_le(chunk.len() as u32);
        out.put_slice(chunk);
    }
    out.put_u32_le(0);
}

fn put_var_bytes(out: &mut BytesMut, ty: &SqlType, bytes: &[u8]) {
    if is_plp(ty) {
        put_plp(out, bytes);
    } else {
        let n = bytes.len().min(0xFFFE);
        out.put_u16_le(n as u16);
        out.put_slice(&bytes[..n]);
    }
}

/// The largest PLP value written in one chunk (`put_plp`'s chunk).
const PLP_CHUNK: usize = 1 << 30;

/// Writes a text or binary value of type `ty` from the value's own bytes, without making
/// its storage form first; false (nothing written) when it needs that form: varchar text
/// that is not ASCII, a value of another type, a PLP value of more than one chunk.
fn put_direct(out: &mut BytesMut, ty: &SqlType, v: &Value) -> bool {
    use SqlType as T;
    match (ty, v) {
        (T::Char(_) | T::VarChar(_), Value::Str(s)) if s.is_ascii() && s.len() <= PLP_CHUNK => {
            put_var_bytes(out, ty, s.as_bytes());
        }
        (T::Binary(_) | T::VarBinary(_), Value::Binary(b)) if b.len() <= PLP_CHUNK => put_var_bytes(out, ty, b),
        (T::NChar(_) | T::NVarChar(_), Value::Str(s)) => {
            let bytes = s.encode_utf16().count() * 2;
            if bytes > PLP_CHUNK {
                return false;
            }
            let put_units = |out: &mut BytesMut, limit: usize| {
                for unit in s.encode_utf16().take(limit / 2) {
                    out.put_u16_le(unit);
                }
            };
            if is_plp(ty) {
                out.put_u64_le(bytes as u64);
                if bytes > 0 {
                    out.put_u32_le(bytes as u32);
                    put_units(out, bytes);
                }
                out.put_u32_le(0);
            } else {
                let n = bytes.min(0xFFFE);
                out.put_u16_le(n as u16);
                put_units(out, n);
            }
        }
        _ => return false,
    }
    true
}

/// Writes a value of static type `ty` (as in a ROW token or a RETURNVALUE).
pub fn put_value(out: &mut BytesMut, ty: &SqlType, v: &Value) {
    if v.is_null() {
        return put_null(out, ty);
    }
    if let Value::Large(l) = v {
        unreachable!("{l:?} is sent in chunks as it is read (`TokenSink`), never made whole here");
    }
    if !put_direct(out, ty, v) {
        put_stored(out, ty, v);
    }
}

/// Writes a non-NULL value of static type `ty` from its stored bytes (a valid stored value
/// of that type, as `row::locate` checks): a fixed-length type's bytes with their length,
/// money with its halves swapped, text and binary as the variable types carry them.
pub fn put_stored_value(out: &mut BytesMut, ty: &SqlType, bytes: &[u8]) {
    use SqlType as T;
    debug_assert_eq!(ty.fixed_size().map_or(bytes.len(), |n| n), bytes.len(), "{ty:?}");
    match ty {
        T::Money => {
            let m = i64::from_le_bytes(bytes.try_into().expect("money is 8 bytes"));
            out.put_u8(8);
            out.put_i32_le((m >> 32) as i32);
            out.put_u32_le(m as u32);
        }
        T::Char(_) | T::VarChar(_) | T::NChar(_) | T::NVarChar(_) | T::Binary(_) | T::VarBinary(_) => {
            put_var_bytes(out, ty, bytes)
        }
        T::Bit
        | T::TinyInt
        | T::SmallInt
        | T::Int
        | T::BigInt
        | T::Real
        | T::Float
        | T::Decimal { .. }
        | T::SmallMoney
        | T::Date
        | T::Time { .. }
        | T::DateTime2 { .. }
        | T::DateTimeOffset { .. }
        | T::DateTime
        | T::SmallDateTime
        | T::UniqueIdentifier => {
            out.put_u8(bytes.len() as u8);
            out.put_slice(bytes);
        }
    }
}

/// Writes a non-NULL value through its storage form.
fn put_stored(out: &mut BytesMut, ty: &SqlType, v: &Value) {
    use SqlType as T;
    let stored = to_storage(v, ty);
    match (ty, stored) {
        (_, row::Value::Null) => put_null(out, ty),
        (T::Bit, row::Value::Bit(b)) => out.put_slice(&[1, u8::from(b)]),
        (T::TinyInt, row::Value::TinyInt(x)) => out.put_slice(&[1, x]),
        (T::SmallInt, row::Value::SmallInt(x)) => {
            out.put_u8(2);
            out.put_i16_le(x);
        }
        (T::Int, row::Value::Int(x)) => {
            out.put_u8(4);
            out.put_i32_le(x);
        }
        (T::BigInt, row::Value::BigInt(x)) => {
            out.put_u8(8);
            out.put_i64_le(x);
        }
        (T::Real, row::Value::Real(x)) => {
            out.put_u8(4);
            out.put_f32_le(x);
        }
        (T::Float, row::Value::Float(x)) => {
            out.put_u8(8);
            out.put_f64_le(x);
        }
        (T::Decimal { precision, scale }, row::Value::Decimal { value, scale: vs }) => {
            match row::rescale(value, vs, *scale) {
                Ok(value) => {
                    let len = decimal_len(*precision);
                    out.put_u8(len);
                    out.put_u8(u8::from(value >= 0));
                    let mag = value.unsigned_abs().to_le_bytes();
                    out.put_slice(&mag[..usize::from(len - 1)]);
                }
                Err(_) => out.put_u8(0),
            }
        }
        (T::Money, row::Value::Money(m)) => {
            out.put_u8(8);
            out.put_i32_le((m >> 32) as i32);
            out.put_u32_le(m as u32);
        }
        (T::SmallMoney, row::Value::Money(m)) => {
            out.put_u8(4);
            out.put_i32_le(m.clamp(i32::MIN.into(), i32::MAX.into()) as i32);
        }
        (T::Char(_) | T::VarChar(_) | T::Binary(_) | T::VarBinary(_), row::Value::Bytes(b)) => {
            put_var_bytes(out, ty, &b)
        }
        (T::NChar(_) | T::NVarChar(_), row::Value::Unicode(u)) => {
            let mut b = Vec::with_capacity(u.len() * 2);
            for c in u {
                b.extend_from_slice(&c.to_le_bytes());
            }
            put_var_bytes(out, ty, &b)
        }
        (T::Date, row::Value::Date(d)) => {
            out.put_u8(3);
            put_u24(out, d);
        }
        (T::Time { scale }, row::Value::Time(t)) => {
            out.put_u8(time_len(*scale));
            put_time(out, t, *scale);
        }
        (T::DateTime2 { scale }, row::Value::DateTime2 { days, ticks }) => {
            out.put_u8(time_len(*scale) + 3);
            put_time(out, ticks, *scale);
            put_u24(out, days);
        }
        (T::DateTimeOffset { scale }, row::Value::DateTimeOffset { days, ticks, offset }) => {
            out.put_u8(time_len(*scale) + 5);
            put_time(out, ticks, *scale);
            put_u24(out, days);
            out.put_i16_le(offset);
        }
        (T::DateTime, row::Value::DateTime { days, ticks }) => {
            out.put_u8(8);
            out.put_i32_le(days);
            out.put_u32_le(ticks);
        }
        (T::SmallDateTime, row::Value::SmallDateTime { days, minutes }) => {
            out.put_u8(4);
            out.put_u16_le(days);
            out.put_u16_le(minutes);
        }
        (T::UniqueIdentifier, row::Value::Guid(g)) => {
            out.put_u8(16);
            out.put_slice(&g);
        }
        _ => put_null(out, ty),
    }
}

fn put_u24(out: &mut BytesMut, d: i32) {
    let b = (d.max(0) as u32).to_le_bytes();
    out.put_slice(&b[..3]);
}

fn put_time(out: &mut BytesMut, ticks: u64, scale: u8) {
    let units = ticks / 10u64.pow(7 - u32::from(scale.min(7)));
    let b = units.to_le_bytes();
    out.put_slice(&b[..usize::from(time_len(scale))]);
}

/// The TYPE_INFO of an RPC parameter (or a bulk-load column), as the client sent it.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeInfo {
    pub code: u8,
    /// Declared length (bytes) for length-prefixed types; 0xFFFF for (max).
    pub len: u32,
    pub precision: u8,
    pub scale: u8,
}

/// Reads a TYPE_INFO. Types the server cannot take as parameters (sql_variant, UDT, TVP)
/// are decode errors: the request fails, the connection stays.
pub fn read_type_info(r: &mut (impl Input + ?Sized)) -> DecodeResult<TypeInfo> {
    let c = r.u8()?;
    let mut ti = TypeInfo { code: c, len: 0, precision: 0, scale: 0 };
    match c {
        code::NULL
        | code::INT1
        | code::BIT
        | code::INT2
        | code::INT4
        | code::INT8
        | code::DATETIM4
        | code::FLT4
        | code::FLT8
        | code::MONEY
        | code::MONEY4
        | code::DATETIME => {}
        code::DATEN => {}
        code::GUID | code::INTN | code::BITN | code::FLTN | code::MONEYN | code::DATETIMN => ti.len = r.u8()?.into(),
        code::CHAR | code::VARCHAR | code::BINARY | code::VARBINARY => ti.len = r.u8()?.into(),
        code::DECIMAL | code::NUMERIC | code::DECIMALN | code::NUMERICN => {
            ti.len = r.u8()?.into();
            ti.precision = r.u8()?;
            ti.scale = r.u8()?;
            if ti.precision == 0 || ti.precision > 38 || ti.scale > ti.precision || ti.len > 17 {
                return bad(format!("invalid decimal precision/scale {}/{}", ti.precision, ti.scale));
            }
        }
        code::TIMEN | code::DATETIME2N | code::DATETIMEOFFSETN => {
            ti.scale = r.u8()?;
            if ti.scale > 7 {
                return bad(format!("invalid time scale {}", ti.scale));
            }
        }
        code::BIGVARBIN | code::BIGBINARY => ti.len = r.u16()?.into(),
        code::BIGVARCHR | code::BIGCHAR | code::NVARCHAR | code::NCHAR => {
            ti.len = r.u16()?.into();
            r.skip(5)?;
        }
        code::TEXT | code::NTEXT => {
            ti.len = r.u32()?;
            r.skip(5)?;
        }
        code::IMAGE => ti.len = r.u32()?,
        code::XML => {
            if r.u8()? != 0 {
                r.b_varchar()?;
                r.b_varchar()?;
                r.us_varchar()?;
            }
            ti.len = 0xFFFF;
        }
        code::SSVARIANT | code::UDT | code::TVP => return bad(format!("parameter type {c:#04x} is not supported")),
        _ => return bad(format!("unknown data type {c:#04x}")),
    }
    Ok(ti)
}

impl TypeInfo {
    /// The SQL type a parameter of this TYPE_INFO has.
    pub fn sql_type(&self) -> SqlType {
        use SqlType as T;
        let n = |len: u32| if len == 0xFFFF || len > 8000 { MAX } else { (len as u16).max(1) };
        let nchars = |len: u32| if len == 0xFFFF || len > 8000 { MAX } else { ((len / 2) as u16).max(1) };
        match self.code {
            code::INT1 => T::TinyInt,
            code::BIT | code::BITN => T::Bit,
            code::INT2 => T::SmallInt,
            code::INT4 | code::NULL => T::Int,
            code::INT8 => T::BigInt,
            code::INTN => match self.len {
                1 => T::TinyInt,
                2 => T::SmallInt,
                8 => T::BigInt,
                _ => T::Int,
            },
            code::FLT4 => T::Real,
            code::FLT8 => T::Float,
            code::FLTN => {
                if self.len == 4 {
                    T::Real
                } else {
                    T::Float
                }
            }
            code::MONEY => T::Money,
            code::MONEY4 => T::SmallMoney,
            code::MONEYN => {
                if self.len == 4 {
                    T::SmallMoney
                } else {
                    T::Money
                }
            }
            code::DATETIME => T::DateTime,
            code::DATETIM4 => T::SmallDateTime,
            code::DATETIMN => {
                if self.len == 4 {
                    T::SmallDateTime
                } else {
                    T::DateTime
                }
            }
            code::DECIMAL | code::NUMERIC | code::DECIMALN | code::NUMERICN => {
                T::Decimal { precision: self.precision, scale: self.scale }
            }
            code::GUID => T::UniqueIdentifier,
            code::DATEN => T::Date,
            code::TIMEN => T::Time { scale: self.scale },
            code::DATETIME2N => T::DateTime2 { scale: self.scale },
            code::DATETIMEOFFSETN => T::DateTimeOffset { scale: self.scale },
            code::CHAR | code::BIGCHAR => T::Char(n(self.len)),
            code::VARCHAR | code::BIGVARCHR => T::VarChar(n(self.len)),
            code::NCHAR => T::NChar(nchars(self.len)),
            code::NVARCHAR => T::NVarChar(nchars(self.len)),
            code::BINARY | code::BIGBINARY => T::Binary(n(self.len)),
            code::VARBINARY | code::BIGVARBIN => T::VarBinary(n(self.len)),
            code::TEXT => T::VarChar(MAX),
            code::NTEXT | code::XML => T::NVarChar(MAX),
            code::IMAGE => T::VarBinary(MAX),
            _ => T::Int,
        }
    }

    fn is_plp(&self) -> bool {
        self.code == code::XML
            || (self.len == 0xFFFF
                && matches!(self.code, code::BIGVARBIN | code::BIGVARCHR | code::NVARCHAR | code::BIGBINARY))
    }
}

/// A PLP value as it arrived: in memory, or — a value of at least
/// [`large::LAZY_BYTES`] from an input that spools — in a spool file.
enum Plp {
    Bytes(Vec<u8>),
    Spooled(spool::Spooled),
}

/// Room reserved at once for a PLP value whose length is announced (a lying header
/// reserves no more; the value grows as its chunks arrive).
const PLP_RESERVE: u64 = 1 << 20;

/// Reads a PLP value; None for NULL. Past [`large::LAZY_BYTES`], from an input that
/// spools ([`Input::spool`]), the value goes to a spool file as its chunks arrive.
fn read_plp(r: &mut (impl Input + ?Sized)) -> DecodeResult<Option<Plp>> {
    let total = r.u64()?;
    if total == PLP_NULL {
        return Ok(None);
    }
    let mut v = Vec::with_capacity(if total == PLP_UNKNOWN { 0 } else { total.min(PLP_RESERVE) as usize });
    let mut spooled: Option<spool::Spool> = None;
    let mut len = 0u64;
    loop {
        let n = r.u32()? as usize;
        if n == 0 {
            break;
        }
        len += n as u64;
        if len > tessera_access::lob::MAX_VALUE_BYTES {
            return bad(format!("a PLP value longer than {} bytes", tessera_access::lob::MAX_VALUE_BYTES));
        }
        if spooled.is_none() && len >= large::LAZY_BYTES {
            if let Some(place) = r.spool() {
                if total != PLP_UNKNOWN {
                    place.check_room(total).map_err(spool_failed)?;
                }
                let mut s = spool::Spool::create(place).map_err(spool_failed)?;
                s.write(&v).map_err(spool_failed)?;
                v = Vec::new();
                spooled = Some(s);
            }
        }
        match &mut spooled {
            Some(s) => r.take_into(n, &mut |piece| s.write(piece).map_err(spool_failed))?,
            None => v.extend_from_slice(r.take(n)?),
        }
    }
    Ok(Some(match spooled {
        Some(s) => Plp::Spooled(s.finish().map_err(spool_failed)?),
        None => Plp::Bytes(v),
    }))
}

fn spool_failed(e: std::io::Error) -> DecodeError {
    DecodeError(format!("a long value could not be spooled to disk: {e}"))
}

fn le_int(b: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    let v = i64::from_le_bytes(a);
    let shift = 64 - 8 * b.len() as u32;
    if shift == 64 {
        0
    } else {
        (v << shift) >> shift
    }
}

fn u24(b: &[u8]) -> i32 {
    i32::from(b[0]) | i32::from(b[1]) << 8 | i32::from(b[2]) << 16
}

fn time_ticks(b: &[u8], scale: u8) -> DecodeResult<u64> {
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    let units = u64::from_le_bytes(a);
    let ticks = units.saturating_mul(10u64.pow(7 - u32::from(scale.min(7))));
    if ticks >= 864_000_000_000 {
        return bad("time value out of range");
    }
    Ok(ticks)
}

/// Reads one parameter value of TYPE_INFO `ti` (its SQL type is `ti.sql_type()`).
pub fn read_value(r: &mut (impl Input + ?Sized), ti: &TypeInfo) -> DecodeResult<Value> {
    let ty = ti.sql_type();
    if ti.is_plp() {
        return match read_plp(r)? {
            None => Ok(Value::Null),
            Some(Plp::Bytes(b)) => bytes_value(ti, &ty, &b),
            Some(Plp::Spooled(s)) => spooled_value(ti, s),
        };
    }
    // The value's bytes, by the type's length prefix.
    let data: &[u8] = match ti.code {
        code::NULL => return Ok(Value::Null),
        code::INT1 | code::BIT => r.take(1)?,
        code::INT2 => r.take(2)?,
        code::INT4 | code::DATETIM4 | code::FLT4 | code::MONEY4 => r.take(4)?,
        code::INT8 | code::FLT8 | code::MONEY | code::DATETIME => r.take(8)?,
        code::BIGVARBIN | code::BIGBINARY | code::BIGVARCHR | code::BIGCHAR | code::NVARCHAR | code::NCHAR => {
            let n = r.u16()?;
            if n == 0xFFFF {
                return Ok(Value::Null);
            }
            r.take(usize::from(n))?
        }
        code::TEXT | code::NTEXT | code::IMAGE => {
            let n = r.u32()?;
            if n == u32::MAX {
                return Ok(Value::Null);
            }
            r.take(n as usize)?
        }
        _ => {
            let n = r.u8()?;
            if n == 0 || (n == 0xFF && matches!(ti.code, code::CHAR | code::VARCHAR | code::BINARY | code::VARBINARY)) {
                return Ok(Value::Null);
            }
            r.take(usize::from(n))?
        }
    };
    if matches!(
        ti.code,
        code::BIGVARBIN
            | code::BIGBINARY
            | code::BIGVARCHR
            | code::BIGCHAR
            | code::NVARCHAR
            | code::NCHAR
            | code::TEXT
            | code::NTEXT
            | code::IMAGE
            | code::CHAR
            | code::VARCHAR
            | code::BINARY
            | code::VARBINARY
    ) {
        return bytes_value(ti, &ty, data);
    }
    let wrong = || bad(format!("invalid length {} for type {:#04x}", data.len(), ti.code));
    let stored = match ty {
        SqlType::Bit => row::Value::Bit(data[0] != 0),
        SqlType::TinyInt | SqlType::SmallInt | SqlType::Int | SqlType::BigInt => {
            if !matches!(data.len(), 1 | 2 | 4 | 8) {
                return wrong();
            }
            let v = if data.len() == 1 { i64::from(data[0]) } else { le_int(data) };
            return Ok(Value::Int(v));
        }
        SqlType::Real | SqlType::Float => match data.len() {
            4 => row::Value::Float(f64::from(f32::from_le_bytes([data[0], data[1], data[2], data[3]]))),
            8 => row::Value::Float(f64::from_le_bytes(data.try_into().unwrap_or([0; 8]))),
            _ => return wrong(),
        },
        SqlType::Money | SqlType::SmallMoney => match data.len() {
            4 => row::Value::Money(le_int(data)),
            8 => {
                let hi = le_int(&data[..4]);
                let lo = u32::from_le_bytes([data[4], data[5], data[6], data[7]]);
                row::Value::Money((hi << 32) | i64::from(lo))
            }
            _ => return wrong(),
        },
        SqlType::Decimal { scale, .. } => {
            if data.len() < 2 || data.len() > 17 {
                return wrong();
            }
            let mut a = [0u8; 16];
            a[..data.len() - 1].copy_from_slice(&data[1..]);
            let mag = u128::from_le_bytes(a);
            if mag >= 10u128.pow(38) {
                return bad("decimal value out of range");
            }
            let v = mag as i128;
            row::Value::Decimal { value: if data[0] == 0 { -v } else { v }, scale }
        }
        SqlType::DateTime | SqlType::SmallDateTime => match data.len() {
            8 => {
                let days = le_int(&data[..4]) as i32;
                let t300 = u32::from_le_bytes([data[4], data[5], data[6], data[7]]);
                if t300 >= 25_920_000 || !(-53_690..=2_958_463).contains(&days) {
                    return bad("datetime value out of range");
                }
                row::Value::DateTime { days, ticks: t300 }
            }
            4 => {
                let days = u16::from_le_bytes([data[0], data[1]]);
                let minutes = u16::from_le_bytes([data[2], data[3]]);
                if minutes >= 1440 {
                    return bad("smalldatetime value out of range");
                }
                row::Value::SmallDateTime { days, minutes }
            }
            _ => return wrong(),
        },
        SqlType::UniqueIdentifier => {
            let g: [u8; 16] = data.try_into().map_err(|_| crate::codec::DecodeError("bad GUID length".into()))?;
            row::Value::Guid(g)
        }
        SqlType::Date => {
            if data.len() != 3 {
                return wrong();
            }
            row::Value::Date(check_days(u24(data))?)
        }
        SqlType::Time { scale } => {
            if data.len() != usize::from(time_len(scale)) {
                return wrong();
            }
            row::Value::Time(time_ticks(data, scale)?)
        }
        SqlType::DateTime2 { scale } => {
            let tl = usize::from(time_len(scale));
            if data.len() != tl + 3 {
                return wrong();
            }
            row::Value::DateTime2 { days: check_days(u24(&data[tl..]))?, ticks: time_ticks(&data[..tl], scale)? }
        }
        SqlType::DateTimeOffset { scale } => {
            // the UTC time and date, then the offset in minutes
            let tl = usize::from(time_len(scale));
            if data.len() != tl + 5 {
                return wrong();
            }
            let offset = i16::from_le_bytes([data[tl + 3], data[tl + 4]]);
            if !(row::MIN_OFFSET_MINUTES..=row::MAX_OFFSET_MINUTES).contains(&offset) {
                return bad("datetimeoffset offset out of range");
            }
            let days = check_days(u24(&data[tl..tl + 3]))?;
            let ticks = time_ticks(&data[..tl], scale)?;
            // the local date must be in range too
            let per_day = row::TICKS_PER_DAY as i64;
            let local = i64::from(days) * per_day + ticks as i64 + i64::from(offset) * 600_000_000;
            check_days(local.div_euclid(per_day) as i32)?;
            row::Value::DateTimeOffset { days, ticks, offset }
        }
        _ => return wrong(),
    };
    Ok(from_storage(stored, &ty))
}

fn check_days(d: i32) -> DecodeResult<i32> {
    if (0..=row::MAX_DATE_DAYS).contains(&d) {
        Ok(d)
    } else {
        bad("date value out of range")
    }
}

/// A spooled PLP value as a [`Value::Large`] in the form its type's values take.
fn spooled_value(ti: &TypeInfo, s: spool::Spooled) -> DecodeResult<Value> {
    let kind = match ti.code {
        code::NVARCHAR | code::NCHAR | code::NTEXT | code::XML => LargeKind::Unicode,
        code::BIGVARCHR | code::BIGCHAR | code::TEXT | code::CHAR | code::VARCHAR => LargeKind::Ansi,
        _ => LargeKind::Binary,
    };
    if kind == LargeKind::Unicode && !s.len_bytes().is_multiple_of(2) {
        return bad("odd length for UCS-2 text");
    }
    Ok(Value::Large(s.into_value(kind)))
}

fn bytes_value(ti: &TypeInfo, ty: &SqlType, b: &[u8]) -> DecodeResult<Value> {
    Ok(match ti.code {
        code::NVARCHAR | code::NCHAR | code::NTEXT | code::XML => Value::str(&ucs2_decode(b)?),
        code::BIGVARCHR | code::BIGCHAR | code::TEXT | code::CHAR | code::VARCHAR => Value::str(&cp1252_decode(b)),
        _ => {
            let _ = ty;
            Value::Binary(b.into())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Reader;

    fn round_trip(ty: SqlType, v: Value) {
        let mut out = BytesMut::new();
        put_type_info(&mut out, &ty);
        put_value(&mut out, &ty, &v);
        let mut r = Reader::new(&out);
        let ti = read_type_info(&mut r).unwrap();
        assert_eq!(ti.sql_type(), ty, "{ty:?}");
        let back = read_value(&mut r, &ti).unwrap();
        assert!(r.is_empty(), "{ty:?} left {} bytes", r.remaining());
        assert_eq!(back, v, "{ty:?}");
    }

    /// The bytes written straight from a value are the bytes its storage form gives.
    #[test]
    fn direct_text_and_binary_match_their_storage_form() {
        use SqlType as T;
        let long = "x".repeat(70_000);
        let cases = [
            (T::VarChar(10), Value::str("plain")),
            (T::Char(5), Value::str("ab   ")),
            (T::VarChar(MAX), Value::str(&long)),
            (T::VarChar(MAX), Value::str("")),
            (T::NVarChar(10), Value::str("caf\u{e9} \u{1f600}")),
            (T::NChar(3), Value::str("\u{4e2d}  ")),
            (T::NVarChar(MAX), Value::str(&long)),
            (T::NVarChar(MAX), Value::str("")),
            (T::NVarChar(4000), Value::str("")),
            (T::VarBinary(4), Value::Binary(vec![0, 1, 255].into())),
            (T::VarBinary(MAX), Value::Binary(vec![7; 70_000].into())),
        ];
        for (ty, v) in cases {
            let (mut direct, mut stored) = (BytesMut::new(), BytesMut::new());
            assert!(put_direct(&mut direct, &ty, &v), "{ty:?} is written directly");
            put_stored(&mut stored, &ty, &v);
            assert_eq!(direct, stored, "{ty:?}");
        }
        assert!(!put_direct(&mut BytesMut::new(), &T::VarChar(10), &Value::str("caf\u{e9}")), "not ASCII");
    }

    #[test]
    fn every_type_round_trips() {
        use SqlType as T;
        round_trip(T::Bit, Value::Bit(true));
        round_trip(T::TinyInt, Value::Int(255));
        round_trip(T::SmallInt, Value::Int(-32768));
        round_trip(T::Int, Value::Int(-5));
        round_trip(T::BigInt, Value::Int(i64::MIN));
        round_trip(T::Real, Value::Float(1.5));
        round_trip(T::Float, Value::Float(-2.25e100));
        round_trip(
            T::Decimal { precision: 38, scale: 4 },
            Value::Decimal { value: -12_345_678_901_234_567_890_123, scale: 4 },
        );
        round_trip(T::Decimal { precision: 5, scale: 2 }, Value::Decimal { value: 12345, scale: 2 });
        round_trip(T::Money, Value::Decimal { value: -9_223_372_036_854_775_808, scale: 4 });
        round_trip(T::SmallMoney, Value::Decimal { value: 12_345, scale: 4 });
        round_trip(T::VarChar(10), Value::str("caf\u{e9}"));
        round_trip(T::VarChar(MAX), Value::str(&"x".repeat(100_000)));
        round_trip(T::NVarChar(10), Value::str("\u{4e2d}\u{6587}"));
        round_trip(T::NVarChar(MAX), Value::str(""));
        round_trip(T::VarBinary(MAX), Value::Binary(vec![1u8, 2, 3].into()));
        round_trip(T::VarBinary(4), Value::Binary(vec![0u8; 4].into()));
        round_trip(T::Date, Value::Date(738_000));
        round_trip(T::Time { scale: 7 }, Value::Time(863_999_999_999));
        round_trip(T::Time { scale: 3 }, Value::Time(10_000 * 1234));
        round_trip(T::DateTime2 { scale: 0 }, Value::DateTime { days: 1, ticks: 10_000_000 });
        round_trip(T::DateTime, Value::DateTime { days: 738_000, ticks: 33_333 });
        round_trip(T::DateTimeOffset { scale: 7 }, Value::DateTimeOffset { days: 738_000, ticks: 12_345, offset: 330 });
        round_trip(T::DateTimeOffset { scale: 0 }, Value::DateTimeOffset { days: 1, ticks: 10_000_000, offset: -840 });
        round_trip(T::DateTimeOffset { scale: 3 }, Value::Null);
        round_trip(T::SmallDateTime, Value::DateTime { days: 738_000, ticks: 600_000_000 });
        round_trip(T::UniqueIdentifier, Value::Guid([7; 16]));
        for t in [T::Int, T::VarChar(5), T::NVarChar(MAX), T::Decimal { precision: 10, scale: 0 }, T::Date] {
            round_trip(t, Value::Null);
        }
    }

    #[test]
    fn truncated_values_are_errors() {
        let mut out = BytesMut::new();
        put_type_info(&mut out, &SqlType::NVarChar(MAX));
        put_value(&mut out, &SqlType::NVarChar(MAX), &Value::str("hello"));
        for cut in 0..out.len() {
            let mut r = Reader::new(&out[..cut]);
            let ok = read_type_info(&mut r).and_then(|ti| read_value(&mut r, &ti));
            assert!(ok.is_err(), "cut at {cut}");
        }
    }
}
