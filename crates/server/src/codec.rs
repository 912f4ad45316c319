//! Bounds-checked reading of request payloads and the string encodings TDS uses (UCS-2 /
//! UTF-16LE for Unicode, Windows-1252 for varchar under SQL_Latin1_General_CP1_CI_AS).
//!
//! Invariant: every read checks the remaining length first and returns [`DecodeError`] on
//! short input; nothing here indexes past the end or panics on client bytes.

use std::fmt;

use bytes::{BufMut, BytesMut};

/// A malformed request: the connection's session reports it and ends the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

pub type DecodeResult<T> = Result<T, DecodeError>;

pub fn bad<T>(msg: impl Into<String>) -> DecodeResult<T> {
    Err(DecodeError(msg.into()))
}

/// A cursor over a payload.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn bytes(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        if n > self.remaining() {
            return bad(format!("truncated: wanted {n} bytes at offset {}, {} left", self.pos, self.remaining()));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn peek_u8(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }
}

/// Where a request's fields are read from: a whole payload in memory ([`Reader`]), or the
/// packets of a message as they arrive (`packet::PacketInput`), which may put a long
/// value in a spool file rather than in memory ([`Input::spool`]). Every read checks
/// its length first.
pub trait Input {
    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> DecodeResult<&[u8]>;

    /// The next byte, left to be read; None at the end of the request.
    fn peek(&mut self) -> DecodeResult<Option<u8>>;

    /// Hands the next `n` bytes to `each` in the pieces they arrive in (a long PLP chunk
    /// need not be in memory at once).
    fn take_into(&mut self, n: usize, each: &mut dyn FnMut(&[u8]) -> DecodeResult<()>) -> DecodeResult<()> {
        each(self.take(n)?)
    }

    /// Where a long value may be spooled instead of kept in memory (None: it may not;
    /// the whole request is in memory already).
    fn spool(&self) -> Option<&crate::spool::Place> {
        None
    }

    fn skip(&mut self, n: usize) -> DecodeResult<()> {
        self.take(n).map(|_| ())
    }

    fn u8(&mut self) -> DecodeResult<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> DecodeResult<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> DecodeResult<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> DecodeResult<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// B_VARCHAR: a one-byte character count and UCS-2 text.
    fn b_varchar(&mut self) -> DecodeResult<String> {
        let n = usize::from(self.u8()?);
        ucs2_decode(self.take(n * 2)?)
    }

    /// B_VARBYTE holding UCS-2 text: a one-byte *byte* count (a transaction manager
    /// request's transaction name, as SqlClient and tedious write it).
    fn b_varbyte_text(&mut self) -> DecodeResult<String> {
        let n = usize::from(self.u8()?);
        if n % 2 != 0 {
            return bad(format!("a UCS-2 name of {n} bytes"));
        }
        ucs2_decode(self.take(n)?)
    }

    /// US_VARCHAR: a two-byte character count and UCS-2 text.
    fn us_varchar(&mut self) -> DecodeResult<String> {
        let n = usize::from(self.u16()?);
        ucs2_decode(self.take(n * 2)?)
    }
}

impl Input for Reader<'_> {
    fn take(&mut self, n: usize) -> DecodeResult<&[u8]> {
        self.bytes(n)
    }

    fn peek(&mut self) -> DecodeResult<Option<u8>> {
        Ok(self.peek_u8())
    }
}

/// UTF-16LE bytes to a string (unpaired surrogates become U+FFFD).
pub fn ucs2_decode(b: &[u8]) -> DecodeResult<String> {
    if !b.len().is_multiple_of(2) {
        return bad("odd length for UCS-2 text");
    }
    let units = b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
    Ok(char::decode_utf16(units).map(|r| r.unwrap_or('\u{FFFD}')).collect())
}

pub fn put_ucs2(out: &mut BytesMut, s: &str) {
    for u in s.encode_utf16() {
        out.put_u16_le(u);
    }
}

pub fn ucs2_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// B_VARCHAR, truncated to 255 UTF-16 units.
pub fn put_b_varchar(out: &mut BytesMut, s: &str) {
    let units: Vec<u16> = s.encode_utf16().take(255).collect();
    out.put_u8(units.len() as u8);
    for u in units {
        out.put_u16_le(u);
    }
}

/// US_VARCHAR, truncated to 65535 UTF-16 units.
pub fn put_us_varchar(out: &mut BytesMut, s: &str) {
    let units: Vec<u16> = s.encode_utf16().take(65535).collect();
    out.put_u16_le(units.len() as u16);
    for u in units {
        out.put_u16_le(u);
    }
}

/// Windows-1252's assignments for 0x80..=0x9F (0 = unassigned, decoded as the C1 control).
const CP1252_HIGH: [u16; 32] = [
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0, 0,
    0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
];

pub fn cp1252_decode(b: &[u8]) -> String {
    b.iter()
        .map(|&c| {
            if (0x80..0xA0).contains(&c) {
                let u = CP1252_HIGH[usize::from(c - 0x80)];
                if u == 0 {
                    char::from(c)
                } else {
                    char::from_u32(u32::from(u)).unwrap_or('?')
                }
            } else {
                char::from(c)
            }
        })
        .collect()
}

/// Encodes to Windows-1252; characters it lacks become '?', as SQL Server converts them.
pub fn cp1252_encode(s: &str, out: &mut Vec<u8>) {
    for ch in s.chars() {
        let c = ch as u32;
        let b = if c < 0x80 || (0xA0..0x100).contains(&c) {
            c as u8
        } else if let Some(i) = CP1252_HIGH.iter().position(|&u| u != 0 && u32::from(u) == c) {
            0x80 + i as u8
        } else if (0x80..0xA0).contains(&c) && CP1252_HIGH[(c - 0x80) as usize] == 0 {
            c as u8
        } else {
            b'?'
        };
        out.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cp1252_round_trip() {
        let s = "caf\u{e9} \u{20ac}5 \u{2014} \u{153}";
        let mut b = Vec::new();
        cp1252_encode(s, &mut b);
        assert_eq!(b, [b'c', b'a', b'f', 0xE9, b' ', 0x80, b'5', b' ', 0x97, b' ', 0x9C]);
        assert_eq!(cp1252_decode(&b), s);
        let mut b = Vec::new();
        cp1252_encode("\u{4e2d}", &mut b);
        assert_eq!(b, b"?");
    }

    #[test]
    fn reader_is_bounded() {
        let mut r = Reader::new(&[1, 0, 2]);
        assert_eq!(r.u16().unwrap(), 1);
        assert!(r.u16().is_err());
        assert_eq!(r.u8().unwrap(), 2);
        assert!(r.b_varchar().is_err());
        let mut r = Reader::new(&[5, b'a', 0]);
        assert!(r.b_varchar().is_err());
    }
}
