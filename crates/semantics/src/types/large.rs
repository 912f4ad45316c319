//! Large values read where they are kept.
//!
//! A `(max)` value of at least [`LAZY_BYTES`] is not made into a [`Value::Str`] or
//! [`Value::Binary`] when a row is read or a request arrives: it stays where it is kept
//! (its table's large-value tree, a request's spool file) and travels as a
//! [`Value::Large`] handle, which the consumers that can — a result sent to a client, a
//! value stored in a row, DATALENGTH, LEN, SUBSTRING, LEFT, RIGHT, CHARINDEX — read in
//! pieces, so a value of a gigabyte passes through the server in bounded memory. Every
//! other consumer (operators, most functions, variables) reads it whole first
//! ([`LargeValue::value`]), as SQL Server does for values it cannot stream.
//!
//! The bytes are the value's stored form: binary as it is, `varchar` in code page 1252,
//! `nvarchar` in UTF-16LE ([`LargeKind`]), which is also the form TDS carries.

use std::fmt;
use std::sync::Arc;

use tessera_errors::SqlResult;

use super::text::decode_cp1252;
use super::value::{LargeKind, LargeSource, LargeValue};
use super::{SqlType, Value};

/// Values of at least this many bytes are read lazily.
pub const LAZY_BYTES: u64 = 1 << 20;

/// The bytes read at once by the consumers that read a large value in pieces.
pub const PIECE_BYTES: usize = 256 << 10;

impl LargeKind {
    /// The `(max)` type whose values have this form.
    pub fn max_type(self) -> SqlType {
        match self {
            LargeKind::Binary => SqlType::VarBinary(tessera_types::MAX),
            LargeKind::Ansi => SqlType::VarChar(tessera_types::MAX),
            LargeKind::Unicode => SqlType::NVarChar(tessera_types::MAX),
        }
    }

    /// The kind of a `(max)` type's values (None for other types).
    pub fn of(ty: &SqlType) -> Option<LargeKind> {
        match *ty {
            SqlType::VarBinary(tessera_types::MAX) => Some(LargeKind::Binary),
            SqlType::VarChar(tessera_types::MAX) => Some(LargeKind::Ansi),
            SqlType::NVarChar(tessera_types::MAX) => Some(LargeKind::Unicode),
            _ => None,
        }
    }

    /// Bytes per character (per UTF-16 code unit for nvarchar; binary: per byte).
    pub fn unit_bytes(self) -> u64 {
        if self == LargeKind::Unicode {
            2
        } else {
            1
        }
    }
}

impl LargeValue {
    pub fn new(kind: LargeKind, len: u64, source: Arc<dyn LargeSource>) -> LargeValue {
        debug_assert!(kind != LargeKind::Unicode || len.is_multiple_of(2), "UTF-16 of {len} bytes");
        LargeValue { kind, len, source }
    }

    pub fn kind(&self) -> LargeKind {
        self.kind
    }

    /// Length in bytes (DATALENGTH).
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    /// Length in characters (UTF-16 code units for nvarchar, bytes for binary).
    pub fn len_units(&self) -> u64 {
        self.len / self.kind.unit_bytes()
    }

    /// Length in characters without the trailing spaces (LEN; binary values keep every
    /// byte). Reads the value backwards from its end until a character that is not a
    /// space.
    pub fn trimmed_len_units(&self) -> SqlResult<u64> {
        let unit = self.kind.unit_bytes();
        if self.kind == LargeKind::Binary {
            return Ok(self.len);
        }
        let mut buf = vec![0u8; PIECE_BYTES.min(self.len as usize)];
        let mut end = self.len;
        while end > 0 {
            let from = end.saturating_sub(buf.len() as u64);
            let piece = &mut buf[..(end - from) as usize];
            self.read(from, piece)?;
            let last =
                piece.chunks_exact(unit as usize).rposition(|c| c[0] != b' ' || c.get(1).is_some_and(|&b| b != 0));
            if let Some(i) = last {
                return Ok((from + (i as u64 + 1) * unit) / unit);
            }
            end = from;
        }
        Ok(0)
    }

    /// Reads bytes `from..from + out.len()`.
    pub fn read(&self, from: u64, out: &mut [u8]) -> SqlResult<()> {
        let end = from + out.len() as u64;
        assert!(end <= self.len, "bytes {from}..{end} of a large value of {}", self.len);
        self.source.read(from, out)
    }

    /// Hands bytes `from..to` to `each` in pieces of at most [`PIECE_BYTES`], in order.
    pub fn for_each_piece(&self, from: u64, to: u64, mut each: impl FnMut(&[u8]) -> SqlResult<()>) -> SqlResult<()> {
        let to = to.min(self.len);
        let mut buf = vec![0u8; (to.saturating_sub(from)).min(PIECE_BYTES as u64) as usize];
        let mut at = from;
        while at < to {
            let n = (to - at).min(buf.len() as u64) as usize;
            self.read(at, &mut buf[..n])?;
            each(&buf[..n])?;
            at += n as u64;
        }
        Ok(())
    }

    /// Characters `first..first + count` (0-based, clamped to the value) as a value of
    /// their own: a binary value's bytes, a string's characters. Reads only them.
    pub fn slice(&self, first: u64, count: u64) -> SqlResult<Value> {
        let unit = self.kind.unit_bytes();
        let from = first.saturating_mul(unit).min(self.len);
        let to = first.saturating_add(count).saturating_mul(unit).min(self.len);
        let mut bytes = vec![0u8; (to - from) as usize];
        self.read(from, &mut bytes)?;
        Ok(self.decode(&bytes))
    }

    /// The whole value as a [`Value::Str`] or [`Value::Binary`].
    pub fn value(&self) -> SqlResult<Value> {
        let len = usize::try_from(self.len).map_err(|_| tessera_errors::msg::LOB_TOO_LARGE.err())?;
        if self.kind == LargeKind::Binary {
            let mut bytes: Arc<[u8]> = std::iter::repeat_n(0, len).collect();
            self.read(0, Arc::get_mut(&mut bytes).expect("a new value has one owner"))?;
            return Ok(Value::Binary(bytes));
        }
        let mut bytes = vec![0u8; len];
        self.read(0, &mut bytes)?;
        Ok(self.decode(&bytes))
    }

    /// A value of `kind` whose bytes (in its form) are in memory.
    pub fn in_memory(kind: LargeKind, bytes: Vec<u8>) -> LargeValue {
        LargeValue::new(kind, bytes.len() as u64, Arc::new(InMemory(bytes)))
    }

    /// This value with `removed` bytes from byte `at` replaced by `inserted` (of the same
    /// form) — `.WRITE` — read from the two where they are, without a copy.
    pub fn spliced(&self, at: u64, removed: u64, inserted: LargeValue) -> LargeValue {
        assert!(at + removed <= self.len && inserted.kind == self.kind, "a splice within the value, of its form");
        let len = self.len - removed + inserted.len;
        LargeValue::new(self.kind, len, Arc::new(Spliced { base: self.clone(), at, removed, inserted }))
    }

    /// Bytes of this value's form as a value.
    fn decode(&self, bytes: &[u8]) -> Value {
        match self.kind {
            LargeKind::Binary => Value::Binary(Arc::from(bytes)),
            LargeKind::Ansi => Value::Str(Arc::from(&*decode_cp1252(bytes))),
            LargeKind::Unicode => {
                let units = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
                Value::Str(Arc::from(char::decode_utf16(units).map(|c| c.unwrap_or('\u{FFFD}')).collect::<String>()))
            }
        }
    }

    /// Whether two large values hold the same bytes (compared in pieces; a value that
    /// cannot be read equals nothing).
    fn same_bytes(&self, other: &LargeValue) -> bool {
        if Arc::ptr_eq(&self.source, &other.source) && self.len == other.len {
            return true;
        }
        if self.kind != other.kind || self.len != other.len {
            return false;
        }
        let mut theirs = vec![0u8; PIECE_BYTES.min(self.len as usize)];
        let mut at = 0;
        self.for_each_piece(0, self.len, |mine| {
            let part = &mut theirs[..mine.len()];
            other.read(at, part)?;
            at += mine.len() as u64;
            if mine != part {
                return Err(tessera_errors::Error::Invalid("different".into()).into());
            }
            Ok(())
        })
        .is_ok()
    }
}

/// Bytes in memory ([`LargeValue::in_memory`]).
struct InMemory(Vec<u8>);

impl LargeSource for InMemory {
    fn read(&self, from: u64, out: &mut [u8]) -> SqlResult<()> {
        out.copy_from_slice(&self.0[from as usize..from as usize + out.len()]);
        Ok(())
    }

    fn detached(&self) -> bool {
        true
    }
}

/// A value with part of it replaced ([`LargeValue::spliced`]): the base's bytes before
/// `at`, the inserted ones, then the base's from `at + removed` on.
struct Spliced {
    base: LargeValue,
    at: u64,
    removed: u64,
    inserted: LargeValue,
}

impl LargeSource for Spliced {
    fn read(&self, from: u64, out: &mut [u8]) -> SqlResult<()> {
        let (at, ins) = (self.at, self.inserted.len);
        let mut pos = from;
        let mut done = 0;
        while done < out.len() {
            let want = out.len() - done;
            let part = &mut out[done..];
            let n = if pos < at {
                let n = want.min((at - pos) as usize);
                self.base.read(pos, &mut part[..n])?;
                n
            } else if pos < at + ins {
                let n = want.min((at + ins - pos) as usize);
                self.inserted.read(pos - at, &mut part[..n])?;
                n
            } else {
                self.base.read(pos - ins + self.removed, part)?;
                want
            };
            done += n;
            pos += n as u64;
        }
        Ok(())
    }

    fn detached(&self) -> bool {
        self.base.source.detached() && self.inserted.source.detached()
    }
}

impl fmt::Debug for LargeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LargeValue({:?}, {} bytes)", self.kind, self.len)
    }
}

impl PartialEq for LargeValue {
    fn eq(&self, other: &LargeValue) -> bool {
        self.same_bytes(other)
    }
}

impl Value {
    /// The value with a [`Value::Large`] read whole; any other value as it is.
    pub fn materialized(self) -> SqlResult<Value> {
        match self {
            Value::Large(l) => l.value(),
            v => Ok(v),
        }
    }

    /// The value as a variable keeps it past the statement: a large value still in its
    /// table read whole, a [detached](LargeSource::detached) one as it is.
    pub fn to_keep(self) -> SqlResult<Value> {
        match self {
            Value::Large(l) if !l.source.detached() => l.value(),
            v => Ok(v),
        }
    }

    /// [`Value::materialized`] of a borrowed value (a copy only of a large one).
    pub fn whole(&self) -> SqlResult<std::borrow::Cow<'_, Value>> {
        match self {
            Value::Large(l) => Ok(std::borrow::Cow::Owned(l.value()?)),
            v => Ok(std::borrow::Cow::Borrowed(v)),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A large value of `kind` holding `bytes`.
    pub(crate) fn large(kind: LargeKind, bytes: Vec<u8>) -> LargeValue {
        LargeValue::in_memory(kind, bytes)
    }

    #[test]
    fn splices_read_both_parts() {
        let base: Vec<u8> = (0..50u8).collect();
        let v = large(LargeKind::Binary, base.clone());
        for (at, removed, ins) in [(0, 0, 3), (10, 5, 0), (10, 5, 7), (50, 0, 4), (20, 30, 2), (0, 50, 0)] {
            let inserted: Vec<u8> = (0..ins).map(|i| 200 + i as u8).collect();
            let s = v.spliced(at, removed, large(LargeKind::Binary, inserted.clone()));
            let mut want = base.clone();
            want.splice(at as usize..(at + removed) as usize, inserted);
            assert_eq!(s.len_bytes(), want.len() as u64);
            assert_eq!(s.value().unwrap(), Value::Binary(want.clone().into()));
            for from in 0..want.len() {
                let mut out = vec![0; want.len() - from];
                s.read(from as u64, &mut out).unwrap();
                assert_eq!(out, want[from..], "from {from} of {at}/{removed}/{ins}");
            }
        }
    }

    #[test]
    fn reads_whole_and_in_slices() {
        let text: Vec<u8> = "héllo wörld".encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        let v = large(LargeKind::Unicode, text);
        assert_eq!(v.len_units(), 11);
        assert_eq!(v.value().unwrap(), Value::str("héllo wörld"));
        assert_eq!(v.slice(6, 3).unwrap(), Value::str("wör"));
        assert_eq!(v.slice(9, 100).unwrap(), Value::str("ld"));
        assert_eq!(v.slice(50, 2).unwrap(), Value::str(""));
        let b = large(LargeKind::Ansi, vec![b'a', 0xE9, b'b']);
        assert_eq!(b.value().unwrap(), Value::str("aéb"));
        let n = PIECE_BYTES * 2 + 5;
        let bin: Vec<u8> = (0..n).map(|i| i as u8).collect();
        let v = large(LargeKind::Binary, bin.clone());
        let mut seen = Vec::new();
        v.for_each_piece(3, n as u64, |p| {
            assert!(p.len() <= PIECE_BYTES);
            seen.extend_from_slice(p);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, bin[3..]);
        assert_eq!(v, large(LargeKind::Binary, bin.clone()));
        let mut other = bin;
        other[n - 1] ^= 1;
        assert_ne!(v, large(LargeKind::Binary, other));
        assert_eq!(Value::Large(v).materialized().unwrap(), Value::Binary((0..n).map(|i| i as u8).collect()));
    }
}
