//! Order-preserving ("memcomparable") key encoding.
//!
//! B+tree pages compare keys with plain `memcmp`, so the typed key columns of an index are
//! encoded such that byte order equals SQL order. A key is the concatenation of its columns;
//! every column encoding is prefix-free, so composite keys compare column by column and a key
//! made of the first k columns is a prefix of (and sorts with) the full keys that start with
//! those values.
//!
//! Each column is one of:
//!
//! * NULL: the single byte `0x00`. NULL sorts before every value, as in SQL Server.
//! * a value: the marker `0x01`, then the payload:
//!   * integers: big-endian, with the sign bit flipped for signed types;
//!   * `f32`/`f64`: the IEEE bits, big-endian, with the sign bit flipped for positive numbers
//!     and all bits flipped for negative ones; `-0.0` is stored as `0.0` and every NaN as one
//!     canonical NaN, which sorts after `+inf`;
//!   * variable-length bytes: each `0x00` becomes `0x00 0xFF`, and `0x00 0x00` terminates, so a
//!     string sorts before its extensions and the encoding is prefix-free;
//!   * UTF-16 (`nchar`/`nvarchar`): the code units big-endian, then escaped like bytes (binary
//!     code-unit order; collations are the SQL layer's business: it feeds a sort key as bytes);
//!   * fixed-width bytes: as they are (the column's width makes them prefix-free);
//!   * `datetimeoffset`: its UTC instant only, as `datetime2`, so that two values naming the
//!     same instant with different offsets are equal keys, as SQL Server compares them (the
//!     offset is not in the key: [`KeyReader::read_value`] gives it back as +00:00).
//! * descending columns: every byte of the column's encoding (marker included) is inverted, so
//!   the column sorts in reverse and NULLs come last, as in a SQL Server DESC index.
//!
//! [`KeyBuf`] writes keys; [`KeyReader`] reads them back given the same sequence of types and
//! `desc` flags. [`KeyBuf::value`] / [`KeyReader::read_value`] do the same for a [`Value`] of
//! a [`ColumnType`], which is how the layers above build index keys from rows.

use crate::row::{rescale, ColumnType, Value};
use tessera_errors::{Error, Result};

const NULL: u8 = 0x00;
const PRESENT: u8 = 0x01;
const ESCAPED_ZERO: u8 = 0xFF;
const TERMINATOR: u8 = 0x00;

/// The order in which SQL Server compares the 16 bytes of a `uniqueidentifier` (as held in
/// [`Value::Guid`]): the last six bytes first, then bytes 8-9, 6-7, 4-5 and 0-3.
const GUID_ORDER: [usize; 16] = [10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3];

/// Builds a key, one column at a time. Every column method takes `desc`: true for a column
/// sorted descending.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyBuf {
    /// Inline up to [`INLINE_KEY_BYTES`]: most keys (integers, GUIDs, short strings) are
    /// built without allocating.
    buf: KeyBytes,
}

/// How many key bytes a [`KeyBuf`] holds before it allocates.
pub const INLINE_KEY_BYTES: usize = 32;

type KeyBytes = smallvec::SmallVec<[u8; INLINE_KEY_BYTES]>;

fn f32_bits(v: f32) -> u32 {
    let v = if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f32::NAN
    } else {
        v
    };
    let b = v.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | 1 << 31
    }
}

fn f32_from_bits(k: u32) -> f32 {
    f32::from_bits(if k >> 31 == 1 { k ^ 1 << 31 } else { !k })
}

fn f64_bits(v: f64) -> u64 {
    let v = if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f64::NAN
    } else {
        v
    };
    let b = v.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

fn f64_from_bits(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k ^ 1 << 63 } else { !k })
}

/// Appends `v` escaped and terminated.
fn push_escaped(buf: &mut KeyBytes, v: &[u8]) {
    let mut rest = v;
    while let Some(z) = rest.iter().position(|&b| b == 0) {
        buf.extend_from_slice(&rest[..z]);
        buf.extend_from_slice(&[0, ESCAPED_ZERO]);
        rest = &rest[z + 1..];
    }
    buf.extend_from_slice(rest);
    buf.extend_from_slice(&[0, TERMINATOR]);
}

impl KeyBuf {
    pub fn new() -> KeyBuf {
        KeyBuf::default()
    }

    pub fn with_capacity(n: usize) -> KeyBuf {
        KeyBuf { buf: KeyBytes::with_capacity(n) }
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// Drops bytes past `len` (e.g. to reuse a common key prefix).
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn into_vec(self) -> Vec<u8> {
        self.buf.into_vec()
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Fails with [`Error::KeyTooLarge`] (SQL Server 1946) when the key exceeds `max` bytes.
    pub fn check_len(&self, max: usize) -> Result<()> {
        if self.buf.len() > max {
            return Err(Error::KeyTooLarge { size: self.buf.len(), max });
        }
        Ok(())
    }

    fn finish(&mut self, start: usize, desc: bool) -> &mut Self {
        if desc {
            self.buf[start..].iter_mut().for_each(|b| *b = !*b);
        }
        self
    }

    fn present(&mut self, payload: &[u8], desc: bool) -> &mut Self {
        let start = self.buf.len();
        self.buf.reserve(1 + payload.len());
        self.buf.push(PRESENT);
        self.buf.extend_from_slice(payload);
        self.finish(start, desc)
    }

    /// A NULL column.
    pub fn null(&mut self, desc: bool) -> &mut Self {
        self.buf.push(if desc { !NULL } else { NULL });
        self
    }

    pub fn bool(&mut self, v: bool, desc: bool) -> &mut Self {
        self.present(&[v as u8], desc)
    }

    pub fn u8(&mut self, v: u8, desc: bool) -> &mut Self {
        self.present(&[v], desc)
    }

    pub fn u16(&mut self, v: u16, desc: bool) -> &mut Self {
        self.present(&v.to_be_bytes(), desc)
    }

    pub fn u32(&mut self, v: u32, desc: bool) -> &mut Self {
        self.present(&v.to_be_bytes(), desc)
    }

    pub fn u64(&mut self, v: u64, desc: bool) -> &mut Self {
        self.present(&v.to_be_bytes(), desc)
    }

    pub fn i16(&mut self, v: i16, desc: bool) -> &mut Self {
        self.present(&((v as u16) ^ 1 << 15).to_be_bytes(), desc)
    }

    pub fn i32(&mut self, v: i32, desc: bool) -> &mut Self {
        self.present(&((v as u32) ^ 1 << 31).to_be_bytes(), desc)
    }

    pub fn i64(&mut self, v: i64, desc: bool) -> &mut Self {
        self.present(&((v as u64) ^ 1 << 63).to_be_bytes(), desc)
    }

    /// For decimal/numeric and money as scaled integers.
    pub fn i128(&mut self, v: i128, desc: bool) -> &mut Self {
        self.present(&((v as u128) ^ 1 << 127).to_be_bytes(), desc)
    }

    pub fn f32(&mut self, v: f32, desc: bool) -> &mut Self {
        self.present(&f32_bits(v).to_be_bytes(), desc)
    }

    pub fn f64(&mut self, v: f64, desc: bool) -> &mut Self {
        self.present(&f64_bits(v).to_be_bytes(), desc)
    }

    /// Variable-length bytes (escaped and terminated).
    pub fn bytes(&mut self, v: &[u8], desc: bool) -> &mut Self {
        let start = self.buf.len();
        self.buf.reserve(v.len() + 3);
        self.buf.push(PRESENT);
        push_escaped(&mut self.buf, v);
        self.finish(start, desc)
    }

    /// UTF-16 code units, compared by code unit (escaped and terminated).
    pub fn utf16(&mut self, v: &[u16], desc: bool) -> &mut Self {
        let start = self.buf.len();
        self.buf.reserve(2 * v.len() + 3);
        self.buf.push(PRESENT);
        for &u in v {
            for b in u.to_be_bytes() {
                if b == 0 {
                    self.buf.extend_from_slice(&[0, ESCAPED_ZERO]);
                } else {
                    self.buf.push(b);
                }
            }
        }
        self.buf.extend_from_slice(&[0, TERMINATOR]);
        self.finish(start, desc)
    }

    /// Bytes of a column whose every value has the same width (the reader must know it).
    pub fn fixed(&mut self, v: &[u8], desc: bool) -> &mut Self {
        self.present(v, desc)
    }

    /// Appends `v` as a key column of type `ty`. Numeric types map to the integer and float
    /// encodings above (decimal rescaled to the column's scale; money in 1/10000 units; date
    /// and time types as their day and tick counts); character and binary types to
    /// [`KeyBuf::bytes`] / [`KeyBuf::utf16`]; `uniqueidentifier` in SQL Server's comparison
    /// order. Fails with [`Error::Invalid`] when the value does not belong to the type.
    pub fn value(&mut self, ty: &ColumnType, v: &Value, desc: bool) -> Result<&mut Self> {
        use ColumnType as T;
        Ok(match (ty, v) {
            (_, Value::Null) => self.null(desc),
            (T::Bit, Value::Bit(b)) => self.bool(*b, desc),
            (T::TinyInt, Value::TinyInt(x)) => self.u8(*x, desc),
            (T::SmallInt, Value::SmallInt(x)) => self.i16(*x, desc),
            (T::Int, Value::Int(x)) => self.i32(*x, desc),
            (T::BigInt, Value::BigInt(x)) => self.i64(*x, desc),
            (T::Real, Value::Real(x)) => self.f32(*x, desc),
            (T::Float, Value::Float(x)) => self.f64(*x, desc),
            (T::Decimal { scale, .. }, Value::Decimal { value, scale: vs }) => {
                self.i128(rescale(*value, *vs, *scale)?, desc)
            }
            (T::Money | T::SmallMoney, Value::Money(x)) => self.i64(*x, desc),
            (T::Date, Value::Date(d)) => self.i32(*d, desc),
            (T::Time { .. }, Value::Time(t)) => self.u64(*t, desc),
            (T::DateTime, Value::DateTime { days, ticks }) => {
                let mut p = [0u8; 8];
                p[..4].copy_from_slice(&((*days as u32) ^ 1 << 31).to_be_bytes());
                p[4..].copy_from_slice(&ticks.to_be_bytes());
                self.present(&p, desc)
            }
            (T::DateTime2 { .. }, Value::DateTime2 { days, ticks }) => {
                let mut p = [0u8; 12];
                p[..4].copy_from_slice(&((*days as u32) ^ 1 << 31).to_be_bytes());
                p[4..].copy_from_slice(&ticks.to_be_bytes());
                self.present(&p, desc)
            }
            (T::DateTimeOffset { .. }, Value::DateTimeOffset { days, ticks, .. }) => {
                let mut p = [0u8; 12];
                p[..4].copy_from_slice(&((*days as u32) ^ 1 << 31).to_be_bytes());
                p[4..].copy_from_slice(&ticks.to_be_bytes());
                self.present(&p, desc)
            }
            (T::SmallDateTime, Value::SmallDateTime { days, minutes }) => {
                let mut p = [0u8; 4];
                p[..2].copy_from_slice(&days.to_be_bytes());
                p[2..].copy_from_slice(&minutes.to_be_bytes());
                self.present(&p, desc)
            }
            (T::UniqueIdentifier, Value::Guid(g)) => self.present(&GUID_ORDER.map(|i| g[i]), desc),
            (T::Char(_) | T::VarChar(_) | T::Binary(_) | T::VarBinary(_), Value::Bytes(b)) => self.bytes(b, desc),
            (T::NChar(_) | T::NVarChar(_), Value::Unicode(u)) => self.utf16(u, desc),
            _ => return Err(Error::Invalid(format!("a {} value cannot be a key of type {ty:?}", v.kind()))),
        })
    }
}

fn malformed(msg: &str) -> Error {
    Error::Invalid(format!("malformed key: {msg}"))
}

/// Reads a key written by [`KeyBuf`], column by column, given the same types and `desc`
/// flags. Each `read_*` consumes one column and returns `None` for NULL. Malformed input
/// gives [`Error::Invalid`], never a panic.
#[derive(Clone, Debug)]
pub struct KeyReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

macro_rules! read_int {
    ($name:ident, $t:ty, $n:literal, $map:expr) => {
        pub fn $name(&mut self, desc: bool) -> Result<Option<$t>> {
            if !self.marker(desc)? {
                return Ok(None);
            }
            let b: [u8; $n] = self.take(desc)?;
            Ok(Some($map(b)))
        }
    };
}

impl<'a> KeyReader<'a> {
    pub fn new(buf: &'a [u8]) -> KeyReader<'a> {
        KeyReader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// True when every column has been read.
    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// Whether the next column is NULL (without consuming it).
    pub fn is_null(&self, desc: bool) -> Result<bool> {
        let m = mask(desc);
        match self.buf.get(self.pos) {
            None => Err(malformed("no more columns")),
            Some(&b) => match b ^ m {
                NULL => Ok(true),
                PRESENT => Ok(false),
                _ => Err(malformed("bad column marker")),
            },
        }
    }

    /// Consumes the next column's marker: true for a value, false for NULL.
    fn marker(&mut self, desc: bool) -> Result<bool> {
        let null = self.is_null(desc)?;
        self.pos += 1;
        Ok(!null)
    }

    fn byte(&mut self, desc: bool) -> Result<u8> {
        let b = *self.buf.get(self.pos).ok_or_else(|| malformed("truncated"))?;
        self.pos += 1;
        Ok(b ^ mask(desc))
    }

    fn take<const N: usize>(&mut self, desc: bool) -> Result<[u8; N]> {
        let s = self.buf.get(self.pos..self.pos + N).ok_or_else(|| malformed("truncated"))?;
        self.pos += N;
        let mut b: [u8; N] = s.try_into().unwrap();
        if desc {
            b.iter_mut().for_each(|x| *x = !*x);
        }
        Ok(b)
    }

    /// Reads an escaped byte string (after its marker), appending it to `out`.
    fn unescape(&mut self, desc: bool, out: &mut Vec<u8>) -> Result<()> {
        loop {
            let b = self.byte(desc)?;
            if b != 0 {
                out.push(b);
                continue;
            }
            match self.byte(desc)? {
                TERMINATOR => return Ok(()),
                ESCAPED_ZERO => out.push(0),
                _ => return Err(malformed("bad escape in a variable-length column")),
            }
        }
    }

    /// Skips a NULL column; fails if the column is not NULL.
    pub fn read_null(&mut self, desc: bool) -> Result<()> {
        if self.marker(desc)? {
            return Err(malformed("expected NULL"));
        }
        Ok(())
    }

    pub fn read_bool(&mut self, desc: bool) -> Result<Option<bool>> {
        match self.read_u8(desc)? {
            None => Ok(None),
            Some(0) => Ok(Some(false)),
            Some(1) => Ok(Some(true)),
            Some(_) => Err(malformed("bad bool")),
        }
    }

    read_int!(read_u8, u8, 1, |b: [u8; 1]| b[0]);
    read_int!(read_u16, u16, 2, u16::from_be_bytes);
    read_int!(read_u32, u32, 4, u32::from_be_bytes);
    read_int!(read_u64, u64, 8, u64::from_be_bytes);
    read_int!(read_i16, i16, 2, |b| (u16::from_be_bytes(b) ^ 1 << 15) as i16);
    read_int!(read_i32, i32, 4, |b| (u32::from_be_bytes(b) ^ 1 << 31) as i32);
    read_int!(read_i64, i64, 8, |b| (u64::from_be_bytes(b) ^ 1 << 63) as i64);
    read_int!(read_i128, i128, 16, |b| (u128::from_be_bytes(b) ^ 1 << 127) as i128);
    read_int!(read_f32, f32, 4, |b| f32_from_bits(u32::from_be_bytes(b)));
    read_int!(read_f64, f64, 8, |b| f64_from_bits(u64::from_be_bytes(b)));

    /// A variable-length byte column.
    pub fn read_bytes(&mut self, desc: bool) -> Result<Option<Vec<u8>>> {
        let mut out = Vec::new();
        Ok(self.read_bytes_into(desc, &mut out)?.then_some(out))
    }

    /// A variable-length byte column, appended to `out`; false for NULL.
    pub fn read_bytes_into(&mut self, desc: bool, out: &mut Vec<u8>) -> Result<bool> {
        if !self.marker(desc)? {
            return Ok(false);
        }
        self.unescape(desc, out)?;
        Ok(true)
    }

    /// A UTF-16 column written by [`KeyBuf::utf16`].
    pub fn read_utf16(&mut self, desc: bool) -> Result<Option<Vec<u16>>> {
        if !self.marker(desc)? {
            return Ok(None);
        }
        let mut raw = Vec::new();
        self.unescape(desc, &mut raw)?;
        if raw.len() & 1 == 1 {
            return Err(malformed("odd length in a UTF-16 column"));
        }
        Ok(Some(raw.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect()))
    }

    /// A fixed-width column of `n` bytes.
    pub fn read_fixed(&mut self, n: usize, desc: bool) -> Result<Option<Vec<u8>>> {
        if !self.marker(desc)? {
            return Ok(None);
        }
        let s = self.buf.get(self.pos..self.pos + n).ok_or_else(|| malformed("truncated"))?;
        self.pos += n;
        Ok(Some(s.iter().map(|&b| b ^ mask(desc)).collect()))
    }

    /// Reads a column written by [`KeyBuf::value`] for type `ty`. Decimal values come back at
    /// the column's scale, `smallmoney` as [`Value::Money`].
    pub fn read_value(&mut self, ty: &ColumnType, desc: bool) -> Result<Value> {
        use ColumnType as T;
        if self.is_null(desc)? {
            self.pos += 1;
            return Ok(Value::Null);
        }
        let v = match *ty {
            T::Bit => self.read_bool(desc)?.map(Value::Bit),
            T::TinyInt => self.read_u8(desc)?.map(Value::TinyInt),
            T::SmallInt => self.read_i16(desc)?.map(Value::SmallInt),
            T::Int => self.read_i32(desc)?.map(Value::Int),
            T::BigInt => self.read_i64(desc)?.map(Value::BigInt),
            T::Real => self.read_f32(desc)?.map(Value::Real),
            T::Float => self.read_f64(desc)?.map(Value::Float),
            T::Decimal { scale, .. } => self.read_i128(desc)?.map(|value| Value::Decimal { value, scale }),
            T::Money | T::SmallMoney => self.read_i64(desc)?.map(Value::Money),
            T::Date => self.read_i32(desc)?.map(Value::Date),
            T::Time { .. } => self.read_u64(desc)?.map(Value::Time),
            T::DateTime => {
                self.marker(desc)?;
                let b: [u8; 8] = self.take(desc)?;
                let days = (u32::from_be_bytes(b[..4].try_into().unwrap()) ^ 1 << 31) as i32;
                let ticks = u32::from_be_bytes(b[4..].try_into().unwrap());
                Some(Value::DateTime { days, ticks })
            }
            T::DateTime2 { .. } => {
                self.marker(desc)?;
                let b: [u8; 12] = self.take(desc)?;
                let days = (u32::from_be_bytes(b[..4].try_into().unwrap()) ^ 1 << 31) as i32;
                let ticks = u64::from_be_bytes(b[4..].try_into().unwrap());
                Some(Value::DateTime2 { days, ticks })
            }
            T::DateTimeOffset { .. } => {
                self.marker(desc)?;
                let b: [u8; 12] = self.take(desc)?;
                let days = (u32::from_be_bytes(b[..4].try_into().unwrap()) ^ 1 << 31) as i32;
                let ticks = u64::from_be_bytes(b[4..].try_into().unwrap());
                Some(Value::DateTimeOffset { days, ticks, offset: 0 })
            }
            T::SmallDateTime => {
                self.marker(desc)?;
                let b: [u8; 4] = self.take(desc)?;
                Some(Value::SmallDateTime {
                    days: u16::from_be_bytes([b[0], b[1]]),
                    minutes: u16::from_be_bytes([b[2], b[3]]),
                })
            }
            T::UniqueIdentifier => {
                self.marker(desc)?;
                let b: [u8; 16] = self.take(desc)?;
                let mut g = [0u8; 16];
                for (k, &i) in GUID_ORDER.iter().enumerate() {
                    g[i] = b[k];
                }
                Some(Value::Guid(g))
            }
            T::Char(_) | T::VarChar(_) | T::Binary(_) | T::VarBinary(_) => self.read_bytes(desc)?.map(Value::Bytes),
            T::NChar(_) | T::NVarChar(_) => self.read_utf16(desc)?.map(Value::Unicode),
        };
        Ok(v.expect("marker checked above"))
    }
}

#[inline]
fn mask(desc: bool) -> u8 {
    if desc {
        0xFF
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Ordering;
    use std::fmt::Debug;

    /// SQL order of two nullable values (NULL first), reversed for a descending column.
    fn sql_cmp<T>(a: &Option<T>, b: &Option<T>, desc: bool, cmp: impl Fn(&T, &T) -> Ordering) -> Ordering {
        let o = match (a, b) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => cmp(x, y),
        };
        if desc {
            o.reverse()
        } else {
            o
        }
    }

    fn enc<T: Clone>(v: &Option<T>, desc: bool, put: &impl Fn(&mut KeyBuf, T, bool)) -> Vec<u8> {
        let mut k = KeyBuf::new();
        match v {
            None => k.null(desc),
            Some(x) => {
                put(&mut k, x.clone(), desc);
                &mut k
            }
        };
        k.into_vec()
    }

    /// Order and round trip for one column type.
    fn check<T: Clone + Debug>(
        a: Option<T>,
        b: Option<T>,
        desc: bool,
        put: impl Fn(&mut KeyBuf, T, bool),
        get: impl Fn(&mut KeyReader, bool) -> Result<Option<T>>,
        cmp: impl Fn(&T, &T) -> Ordering,
    ) -> std::result::Result<(), TestCaseError> {
        let (ka, kb) = (enc(&a, desc, &put), enc(&b, desc, &put));
        prop_assert_eq!(ka.cmp(&kb), sql_cmp(&a, &b, desc, &cmp), "{:?} vs {:?} desc={}", a, b, desc);
        for (v, k) in [(&a, &ka), (&b, &kb)] {
            let mut r = KeyReader::new(k);
            prop_assert_eq!(r.is_null(desc).unwrap(), v.is_none());
            let got = get(&mut r, desc).unwrap();
            prop_assert!(r.at_end());
            let same = match (v, &got) {
                (None, None) => true,
                (Some(x), Some(y)) => cmp(x, y) == Ordering::Equal,
                _ => false,
            };
            prop_assert!(same, "round trip of {:?} gave {:?}", v, got);
        }
        Ok(())
    }

    fn f64_cmp(a: &f64, b: &f64) -> Ordering {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => a.partial_cmp(b).unwrap(),
        }
    }

    fn f32_cmp(a: &f32, b: &f32) -> Ordering {
        f64_cmp(&(*a as f64), &(*b as f64))
    }

    fn nasty_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop_oneof![Just(0u8), Just(0xFF), Just(1u8), any::<u8>()], 0..8)
    }

    fn nasty_units() -> impl Strategy<Value = Vec<u16>> {
        prop::collection::vec(
            prop_oneof![Just(0u16), Just(0xFF), Just(0xFF00), Just(0x0100), Just(0xFFFF), any::<u16>()],
            0..6,
        )
    }

    fn floats() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            Just(0.0),
            Just(-0.0),
            Just(f64::NAN),
            Just(-f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::MIN_POSITIVE),
            Just(-f64::MIN_POSITIVE),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn bool_order(a in any::<Option<bool>>(), b in any::<Option<bool>>(), d in any::<bool>()) {
            check(a, b, d, |k, v, d| { k.bool(v, d); }, |r, d| r.read_bool(d), Ord::cmp)?;
        }

        #[test]
        fn u8_order(a in any::<Option<u8>>(), b in any::<Option<u8>>(), d in any::<bool>()) {
            check(a, b, d, |k, v, d| { k.u8(v, d); }, |r, d| r.read_u8(d), Ord::cmp)?;
        }

        #[test]
        fn i16_order(a in any::<Option<i16>>(), b in any::<Option<i16>>(), d in any::<bool>()) {
            check(a, b, d, |k, v, d| { k.i16(v, d); }, |r, d| r.read_i16(d), Ord::cmp)?;
        }

        #[test]
        fn i32_order(a in any::<Option<i32>>(), b in any::<Option<i32>>(), d in any::<bool>()) {
            check(a, b, d, |k, v, d| { k.i32(v, d); }, |r, d| r.read_i32(d), Ord::cmp)?;
        }

        #[test]
        fn i64_order(a in any::<Option<i64>>(), b in any::<Option<i64>>(), d in any::<bool>()) {
            check(a, b, d, |k, v, d| { k.i64(v, d); }, |r, d| r.read_i64(d), Ord::cmp)?;
        }

        #[test]
        fn u64_order(a in any::<Option<u64>>(), b in any::<Option<u64>>(), d in any::<bool>()) {
            check(a, b, d, |k, v, d| { k.u64(v, d); }, |r, d| r.read_u64(d), Ord::cmp)?;
        }

        #[test]
        fn i128_order(a in any::<Option<i128>>(), b in any::<Option<i128>>(), d in any::<bool>()) {
            check(a, b, d, |k, v, d| { k.i128(v, d); }, |r, d| r.read_i128(d), Ord::cmp)?;
        }

        #[test]
        fn f64_order(a in prop::option::of(floats()), b in prop::option::of(floats()), d in any::<bool>()) {
            check(a, b, d, |k, v, d| { k.f64(v, d); }, |r, d| r.read_f64(d), f64_cmp)?;
        }

        #[test]
        fn f32_order(
            a in prop::option::of(floats().prop_map(|x| x as f32)),
            b in prop::option::of(floats().prop_map(|x| x as f32)),
            d in any::<bool>(),
        ) {
            check(a, b, d, |k, v, d| { k.f32(v, d); }, |r, d| r.read_f32(d), f32_cmp)?;
        }

        #[test]
        fn bytes_order(a in prop::option::of(nasty_bytes()), b in prop::option::of(nasty_bytes()), d in any::<bool>()) {
            check(a, b, d, |k, v: Vec<u8>, d| { k.bytes(&v, d); }, |r, d| r.read_bytes(d), Ord::cmp)?;
        }

        #[test]
        fn utf16_order(a in prop::option::of(nasty_units()), b in prop::option::of(nasty_units()), d in any::<bool>()) {
            check(a, b, d, |k, v: Vec<u16>, d| { k.utf16(&v, d); }, |r, d| r.read_utf16(d), Ord::cmp)?;
        }

        #[test]
        fn fixed_order(
            a in prop::option::of(any::<[u8; 5]>()),
            b in prop::option::of(any::<[u8; 5]>()),
            d in any::<bool>(),
        ) {
            check(
                a, b, d,
                |k, v: [u8; 5], d| { k.fixed(&v, d); },
                |r, d| Ok(r.read_fixed(5, d)?.map(|v| v.try_into().unwrap())),
                Ord::cmp,
            )?;
        }

        #[test]
        fn composite_order(
            a in (any::<Option<i32>>(), prop::option::of(nasty_bytes()), any::<Option<i64>>()),
            b in (any::<Option<i32>>(), prop::option::of(nasty_bytes()), any::<Option<i64>>()),
            same_prefix in 0usize..3,
            desc in any::<[bool; 3]>(),
        ) {
            // Often share leading columns so later columns decide the order.
            let mut b = b;
            if same_prefix >= 1 { b.0 = a.0; }
            if same_prefix >= 2 { b.1 = a.1.clone(); }
            let key = |t: &(Option<i32>, Option<Vec<u8>>, Option<i64>)| {
                let mut k = KeyBuf::new();
                match t.0 { Some(x) => k.i32(x, desc[0]), None => k.null(desc[0]) };
                match &t.1 { Some(x) => k.bytes(x, desc[1]), None => k.null(desc[1]) };
                match t.2 { Some(x) => k.i64(x, desc[2]), None => k.null(desc[2]) };
                k.into_vec()
            };
            let want = sql_cmp(&a.0, &b.0, desc[0], Ord::cmp)
                .then_with(|| sql_cmp(&a.1, &b.1, desc[1], Ord::cmp))
                .then_with(|| sql_cmp(&a.2, &b.2, desc[2], Ord::cmp));
            let (ka, kb) = (key(&a), key(&b));
            prop_assert_eq!(ka.cmp(&kb), want);
            let mut r = KeyReader::new(&ka);
            prop_assert_eq!(r.read_i32(desc[0]).unwrap(), a.0);
            prop_assert_eq!(r.read_bytes(desc[1]).unwrap(), a.1.clone());
            // a prefix of the columns is a prefix of the key
            prop_assert!(ka.starts_with(&ka[..r.position()]));
            prop_assert_eq!(r.read_i64(desc[2]).unwrap(), a.2);
            prop_assert!(r.at_end());
        }

        #[test]
        fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..24), d in any::<bool>()) {
            let mut r = KeyReader::new(&bytes);
            let _ = r.read_bytes(d);
            let _ = KeyReader::new(&bytes).read_utf16(d);
            let _ = KeyReader::new(&bytes).read_i128(d);
            let _ = KeyReader::new(&bytes).read_fixed(7, d);
            let _ = KeyReader::new(&bytes).read_value(&ColumnType::DateTime2 { scale: 7 }, d);
            let _ = KeyReader::new(&bytes).read_value(&ColumnType::UniqueIdentifier, d);
        }
    }

    #[test]
    fn documented_bytes() {
        let mut k = KeyBuf::new();
        k.null(false).i32(1, false).bytes(b"a\0b", false).u8(7, true).null(true);
        assert_eq!(k.as_bytes(), &[0x00, 0x01, 0x80, 0, 0, 1, 0x01, b'a', 0, 0xFF, b'b', 0, 0, 0xFE, !7, 0xFF]);
        // -0.0 and 0.0 are one key; NaN sorts after +inf
        let f = |x: f64| KeyBuf::new().f64(x, false).as_bytes().to_vec();
        assert_eq!(f(-0.0), f(0.0));
        assert!(f(f64::NAN) > f(f64::INFINITY));
        assert_eq!(f(f64::NAN), f(-f64::NAN));
        assert!(f(-1.0) < f(-0.5));
        // limits
        let mut k = KeyBuf::new();
        k.bytes(&[1; 900], false);
        assert!(matches!(k.check_len(900), Err(Error::KeyTooLarge { size: 903, max: 900 })));
        assert!(k.check_len(903).is_ok());
    }

    #[test]
    fn datetimeoffset_keys_are_the_utc_instant() {
        let ty = ColumnType::DateTimeOffset { scale: 7 };
        let key = |days, ticks, offset| {
            KeyBuf::new().value(&ty, &Value::DateTimeOffset { days, ticks, offset }, false).unwrap().as_bytes().to_vec()
        };
        // one instant, two offsets: one key
        assert_eq!(key(10, 5, 330), key(10, 5, -480));
        // ordered by the instant, whatever the offsets
        assert!(key(10, 5, 840) < key(10, 6, -840));
        assert!(key(9, 863_999_999_999, -840) < key(10, 0, 840));
    }

    #[test]
    fn guid_order_is_sql_servers() {
        // In SQL Server, ORDER BY on uniqueidentifier weighs the last group most heavily;
        // these are in ascending SQL Server order (bytes as stored / sent by TDS).
        let ty = ColumnType::UniqueIdentifier;
        let mut guids = Vec::new();
        for &i in GUID_ORDER.iter().rev() {
            let mut g = [0u8; 16];
            g[i] = 1;
            guids.push(g);
        }
        let keys: Vec<Vec<u8>> = guids
            .iter()
            .map(|g| KeyBuf::new().value(&ty, &Value::Guid(*g), false).unwrap().as_bytes().to_vec())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        for (g, k) in guids.iter().zip(&keys) {
            assert_eq!(KeyReader::new(k).read_value(&ty, false).unwrap(), Value::Guid(*g));
        }
    }

    fn typed_values() -> Vec<(ColumnType, Vec<Value>)> {
        use ColumnType as T;
        // each list is in ascending order
        vec![
            (T::Bit, vec![Value::Null, Value::Bit(false), Value::Bit(true)]),
            (T::SmallInt, vec![Value::SmallInt(-5), Value::SmallInt(0), Value::SmallInt(300)]),
            (
                T::Decimal { precision: 10, scale: 2 },
                vec![
                    Value::Decimal { value: -1001, scale: 2 },
                    Value::Decimal { value: -10, scale: 0 },
                    Value::Decimal { value: 5, scale: 1 },
                    Value::Decimal { value: 51, scale: 2 },
                ],
            ),
            (T::SmallMoney, vec![Value::Money(-1), Value::Money(10_000)]),
            (T::Date, vec![Value::Date(0), Value::Date(738_000)]),
            (T::Time { scale: 7 }, vec![Value::Time(0), Value::Time(1), Value::Time(10_000_000)]),
            (
                T::DateTime,
                vec![
                    Value::DateTime { days: -5, ticks: 25_000_000 },
                    Value::DateTime { days: 0, ticks: 0 },
                    Value::DateTime { days: 0, ticks: 1 },
                ],
            ),
            (
                T::DateTime2 { scale: 3 },
                vec![Value::DateTime2 { days: 1, ticks: 99 }, Value::DateTime2 { days: 2, ticks: 0 }],
            ),
            (
                T::DateTimeOffset { scale: 7 },
                vec![
                    Value::DateTimeOffset { days: 1, ticks: 99, offset: 0 },
                    Value::DateTimeOffset { days: 2, ticks: 0, offset: 0 },
                ],
            ),
            (
                T::SmallDateTime,
                vec![Value::SmallDateTime { days: 1, minutes: 1439 }, Value::SmallDateTime { days: 2, minutes: 0 }],
            ),
            (T::Real, vec![Value::Real(-1.5), Value::Real(0.25)]),
            (
                T::VarChar(10),
                vec![Value::Bytes(b"".to_vec()), Value::Bytes(b"a".to_vec()), Value::Bytes(b"ab".to_vec())],
            ),
            (T::NVarChar(10), vec![Value::unicode(""), Value::unicode("A"), Value::unicode("a"), Value::unicode("é")]),
        ]
    }

    #[test]
    fn typed_values_order_and_round_trip() {
        for (ty, vals) in typed_values() {
            for desc in [false, true] {
                let keys: Vec<Vec<u8>> =
                    vals.iter().map(|v| KeyBuf::new().value(&ty, v, desc).unwrap().as_bytes().to_vec()).collect();
                for w in keys.windows(2) {
                    assert_eq!(w[0] < w[1], !desc, "{ty:?} desc={desc}");
                }
                for (v, k) in vals.iter().zip(&keys) {
                    let mut r = KeyReader::new(k);
                    let got = r.read_value(&ty, desc).unwrap();
                    assert!(r.at_end());
                    let want = match (ty, v) {
                        (ColumnType::Decimal { scale, .. }, Value::Decimal { value, scale: s }) => {
                            Value::Decimal { value: rescale(*value, *s, scale).unwrap(), scale }
                        }
                        _ => v.clone(),
                    };
                    assert_eq!(got, want, "{ty:?}");
                }
            }
        }
        assert!(KeyBuf::new().value(&ColumnType::Int, &Value::BigInt(1), false).is_err());
        assert!(KeyBuf::new()
            .value(&ColumnType::Decimal { precision: 5, scale: 0 }, &Value::Decimal { value: 15, scale: 1 }, false)
            .is_err());
    }
}
