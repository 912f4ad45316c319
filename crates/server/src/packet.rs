//! TDS packets: an 8-byte header (type, status, big-endian length including the header,
//! SPID, packet id, window) and a payload. A message is one or more packets of the same
//! type, the last with the end-of-message status bit.
//!
//! Invariants: a packet's length is at least the header and at most the negotiated packet
//! size (clients may not send larger ones; we reject them); a message is at most
//! [`MAX_MESSAGE_BYTES`] — a client sending more loses its connection, nobody else notices.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub const HEADER_LEN: usize = 8;
/// The largest packet a client may send or we use (SQL Server's maximum packet size).
pub const MAX_PACKET_SIZE: usize = 32_767;
/// The smallest packet size a client may negotiate.
pub const MIN_PACKET_SIZE: usize = 512;
/// The largest request message (SQL batch, RPC, LOGIN7) we accept.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// Status bit: the last packet of a message.
pub const STATUS_EOM: u8 = 0x01;
/// Status bit: reset the connection's session before running this request.
pub const STATUS_RESET_CONNECTION: u8 = 0x08;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketType {
    SqlBatch,
    Rpc,
    TabularResult,
    Attention,
    BulkLoad,
    TransactionManager,
    Login7,
    PreLogin,
    Other(u8),
}

impl PacketType {
    pub fn from_byte(b: u8) -> PacketType {
        match b {
            0x01 => PacketType::SqlBatch,
            0x03 => PacketType::Rpc,
            0x04 => PacketType::TabularResult,
            0x06 => PacketType::Attention,
            0x07 => PacketType::BulkLoad,
            0x0E => PacketType::TransactionManager,
            0x10 => PacketType::Login7,
            0x12 => PacketType::PreLogin,
            b => PacketType::Other(b),
        }
    }

    pub fn byte(self) -> u8 {
        match self {
            PacketType::SqlBatch => 0x01,
            PacketType::Rpc => 0x03,
            PacketType::TabularResult => 0x04,
            PacketType::Attention => 0x06,
            PacketType::BulkLoad => 0x07,
            PacketType::TransactionManager => 0x0E,
            PacketType::Login7 => 0x10,
            PacketType::PreLogin => 0x12,
            PacketType::Other(b) => b,
        }
    }
}

/// A whole request message.
#[derive(Debug)]
pub struct Message {
    pub kind: PacketType,
    /// Status bits of the first packet (RESETCONNECTION lives there).
    pub status: u8,
    pub payload: Vec<u8>,
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// Reads one message (all its packets). `Ok(None)` at a clean end of stream.
pub async fn read_message<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<Option<Message>> {
    read_message_of(r, None).await
}

/// Reads one message, failing as soon as the first header shows another type than
/// `expected` (so garbage from a client that does not speak TDS ends the connection at
/// once instead of waiting for bytes that never come).
pub async fn read_message_of<R: AsyncRead + Unpin>(
    r: &mut R,
    expected: Option<PacketType>,
) -> io::Result<Option<Message>> {
    let mut payload = Vec::new();
    let mut first: Option<(PacketType, u8)> = None;
    loop {
        let mut header = [0u8; HEADER_LEN];
        match r.read_exact(&mut header).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && first.is_none() => return Ok(None),
            Err(e) => return Err(e),
        }
        let kind = PacketType::from_byte(header[0]);
        if expected.is_some_and(|e| e != kind) {
            return Err(invalid(format!("expected a {expected:?} packet, got type 0x{:02X}", header[0])));
        }
        let status = header[1];
        let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
        if !(HEADER_LEN..=MAX_PACKET_SIZE).contains(&len) {
            return Err(invalid(format!("packet length {len} out of range")));
        }
        match first {
            None => first = Some((kind, status)),
            Some((k, _)) if k != kind => return Err(invalid("packet type changed inside a message")),
            Some(_) => {}
        }
        if payload.len() + len - HEADER_LEN > MAX_MESSAGE_BYTES {
            return Err(invalid(format!("message larger than {MAX_MESSAGE_BYTES} bytes")));
        }
        let start = payload.len();
        payload.resize(start + len - HEADER_LEN, 0);
        r.read_exact(&mut payload[start..]).await?;
        if status & STATUS_EOM != 0 {
            let (kind, status) = first.expect("set above");
            return Ok(Some(Message { kind, status, payload }));
        }
    }
}

/// Writes `payload` as a message of `kind`, split into packets of at most `packet_size`.
pub async fn write_message<W: AsyncWrite + Unpin>(
    w: &mut W,
    kind: PacketType,
    payload: &[u8],
    packet_size: usize,
) -> io::Result<()> {
    let chunk = packet_size.clamp(MIN_PACKET_SIZE, MAX_PACKET_SIZE) - HEADER_LEN;
    let mut out = Vec::with_capacity(payload.len() + (payload.len() / chunk + 1) * HEADER_LEN);
    let mut id: u8 = 1;
    let mut rest = payload;
    loop {
        let n = rest.len().min(chunk);
        let last = n == rest.len();
        out.push(kind.byte());
        out.push(if last { STATUS_EOM } else { 0 });
        out.extend_from_slice(&((n + HEADER_LEN) as u16).to_be_bytes());
        out.extend_from_slice(&[0, 0, id, 0]);
        out.extend_from_slice(&rest[..n]);
        id = id.wrapping_add(1);
        rest = &rest[n..];
        if last {
            break;
        }
    }
    w.write_all(&out).await?;
    w.flush().await
}

/// A little-endian reader over a payload that reports truncation as an error.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn bytes(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(invalid("message truncated"));
        }
        let b = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    pub fn u8(&mut self) -> io::Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u16(&mut self) -> io::Result<u16> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().expect("2 bytes")))
    }

    pub fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().expect("4 bytes")))
    }

    pub fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().expect("8 bytes")))
    }

    /// UCS-2 text of `chars` characters.
    pub fn ucs2(&mut self, chars: usize) -> io::Result<String> {
        let b = self.bytes(chars * 2)?;
        let units: Vec<u16> = b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        Ok(String::from_utf16_lossy(&units))
    }

    /// B_VARCHAR: a byte count of characters, then UCS-2.
    pub fn b_varchar(&mut self) -> io::Result<String> {
        let n = usize::from(self.u8()?);
        self.ucs2(n)
    }

    /// US_VARCHAR: a 16-bit count of characters, then UCS-2.
    pub fn us_varchar(&mut self) -> io::Result<String> {
        let n = usize::from(self.u16()?);
        self.ucs2(n)
    }
}

/// UCS-2 (UTF-16LE) bytes of a string.
pub fn ucs2(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_split_into_packets_and_back() {
        let payload: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let mut wire = Vec::new();
        write_message(&mut wire, PacketType::TabularResult, &payload, 4096).await.unwrap();
        assert_eq!(wire.len(), payload.len() + 3 * HEADER_LEN, "three packets");
        let mut r = &wire[..];
        let m = read_message(&mut r).await.unwrap().unwrap();
        assert_eq!(m.kind, PacketType::TabularResult);
        assert_eq!(m.payload, payload);
        assert!(read_message(&mut r).await.unwrap().is_none(), "clean end of stream");
    }

    #[tokio::test]
    async fn bad_lengths_and_truncation_are_errors() {
        let mut r = &[0x01u8, 0x01, 0x00, 0x04, 0, 0, 1, 0][..];
        assert!(read_message(&mut r).await.is_err(), "length below the header");
        let mut r = &[0x01u8, 0x01, 0x00, 0x20, 0, 0, 1, 0, 1, 2][..];
        assert!(read_message(&mut r).await.is_err(), "truncated payload");
        let mut reader = Reader::new(&[1, 0]);
        assert!(reader.u32().is_err());
    }
}
