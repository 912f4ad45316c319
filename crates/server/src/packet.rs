//! TDS packet framing: the 8-byte header, reading whole messages (one or more packets up to
//! the one marked end-of-message) and cutting outgoing messages into packets.
//!
//! Invariants:
//! - A packet's length field covers its header; a length below 8 or above the connection's
//!   packet-size limit is a protocol error, never a panic or an allocation of that size.
//! - A message is at most [`Limits::max_message`] bytes of payload; reading stops with an
//!   error as soon as the packets seen so far exceed it (nothing larger is buffered).
//! - All packets of one message have the same type; only an Attention packet may arrive
//!   alone in the middle of a response (the session handles that, not this module).

use std::io;

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::budget::{Budget, Charge};

pub const HEADER_LEN: usize = 8;

/// Packet types (MS-TDS 2.2.3.1.1).
pub mod kind {
    pub const SQL_BATCH: u8 = 0x01;
    pub const RPC: u8 = 0x03;
    pub const REPLY: u8 = 0x04;
    pub const ATTENTION: u8 = 0x06;
    pub const BULK_LOAD: u8 = 0x07;
    pub const TRANSACTION_MANAGER: u8 = 0x0E;
    pub const LOGIN7: u8 = 0x10;
    pub const SSPI: u8 = 0x11;
    pub const PRELOGIN: u8 = 0x12;
}

/// Packet status bits.
pub mod status {
    pub const EOM: u8 = 0x01;
    pub const IGNORE: u8 = 0x02;
    pub const RESET_CONNECTION: u8 = 0x08;
    pub const RESET_CONNECTION_SKIP_TRAN: u8 = 0x10;
}

/// The smallest and largest packet sizes a client may negotiate.
pub const MIN_PACKET_SIZE: usize = 4096;
pub const MAX_PACKET_SIZE: usize = 32767;

/// Bounds on what one connection may send.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest packet accepted, header included (clients may send up to the negotiated
    /// size; we accept up to this bound whatever was negotiated).
    pub max_packet: usize,
    /// Largest message payload (all packets of one request).
    pub max_message: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_packet: MAX_PACKET_SIZE + 1, max_message: 64 << 20 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: u8,
    pub status: u8,
    pub length: usize,
    pub spid: u16,
    pub packet_id: u8,
}

impl Header {
    pub fn parse(b: &[u8; HEADER_LEN], limits: &Limits) -> io::Result<Header> {
        let length = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if length < HEADER_LEN || length > limits.max_packet {
            return Err(protocol(format!("packet length {length} out of range")));
        }
        Ok(Header { kind: b[0], status: b[1], length, spid: u16::from_be_bytes([b[4], b[5]]), packet_id: b[6] })
    }
}

/// A whole request message.
#[derive(Debug)]
pub struct Message {
    pub kind: u8,
    /// Status bits of the first packet (RESETCONNECTION lives there).
    pub status: u8,
    pub payload: BytesMut,
}

pub fn protocol(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Assembles one message from its packets. The same mechanism serves the async readers
/// (login phase, client) and the blocking one (a busy session's thread): a driver reads a
/// header, hands it to [`Assembler::begin_packet`], fills [`Assembler::body`] and calls
/// [`Assembler::end_packet`] until a message comes out.
struct Assembler<'a> {
    limits: &'a Limits,
    kinds: &'a [u8],
    payload: BytesMut,
    first: Option<Header>,
    current: Option<Header>,
    before: usize,
}

impl<'a> Assembler<'a> {
    fn new(limits: &'a Limits, kinds: &'a [u8]) -> Assembler<'a> {
        Assembler { limits, kinds, payload: BytesMut::new(), first: None, current: None, before: 0 }
    }

    /// What a clean end of stream before a header means: no message (`Ok(None)`) between
    /// messages, an error inside one.
    fn end_of_stream(&self, header_bytes: usize) -> io::Result<Option<Message>> {
        if header_bytes > 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated packet header"));
        }
        if self.first.is_some() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "end of stream inside a message"));
        }
        Ok(None)
    }

    /// Checks a header (type, length, limits) before its body is read.
    fn begin_packet(&mut self, h: &[u8; HEADER_LEN]) -> io::Result<()> {
        if !self.kinds.is_empty() && !self.kinds.contains(&h[0]) {
            return Err(protocol(format!("unexpected packet type {:#04x}", h[0])));
        }
        let header = Header::parse(h, self.limits)?;
        let body = header.length - HEADER_LEN;
        if self.payload.len() + body > self.limits.max_message {
            return Err(protocol(format!("message larger than {} bytes", self.limits.max_message)));
        }
        if let Some(f) = self.first {
            if f.kind != header.kind {
                return Err(protocol(format!(
                    "packet type {:#04x} inside a message of type {:#04x}",
                    header.kind, f.kind
                )));
            }
        }
        self.before = self.payload.len();
        self.payload.resize(self.before + body, 0);
        self.current = Some(header);
        Ok(())
    }

    /// Where the current packet's body goes.
    fn body(&mut self) -> &mut [u8] {
        &mut self.payload[self.before..]
    }

    /// The message, once the packet marked end-of-message is in.
    fn end_packet(&mut self) -> Option<Message> {
        let h = self.current.take().expect("begin_packet before end_packet");
        if h.status & status::IGNORE != 0 {
            // The client abandoned this message (a request cancelled while it was being
            // sent): drop what it sent (MS-TDS 2.2.3.1.2). Its end comes out as an empty
            // message with the IGNORE bit, which the client awaits an answer to.
            self.payload.truncate(self.before);
            if h.status & status::EOM != 0 {
                self.payload.clear();
                let first = self.first.take().unwrap_or(h);
                return Some(Message { kind: first.kind, status: h.status, payload: Default::default() });
            }
            return None;
        }
        let first = *self.first.get_or_insert(h);
        if h.status & status::EOM == 0 {
            return None;
        }
        self.first = None;
        Some(Message { kind: first.kind, status: first.status, payload: std::mem::take(&mut self.payload) })
    }
}

/// Reads packets up to end-of-message. `Ok(None)` on a clean end of stream between
/// messages.
pub async fn read_message<R: AsyncRead + Unpin>(r: &mut R, limits: &Limits) -> io::Result<Option<Message>> {
    read_message_of(r, limits, &[]).await
}

/// [`read_message`] that fails at the first header whose type is not in `kinds` (any type
/// when empty), before reading its body: garbage is refused without waiting for it.
pub async fn read_message_of<R: AsyncRead + Unpin>(
    r: &mut R,
    limits: &Limits,
    kinds: &[u8],
) -> io::Result<Option<Message>> {
    let mut a = Assembler::new(limits, kinds);
    loop {
        let mut h = [0u8; HEADER_LEN];
        let mut got = 0;
        while got < HEADER_LEN {
            let n = r.read(&mut h[got..]).await?;
            if n == 0 {
                return a.end_of_stream(got);
            }
            got += n;
        }
        a.begin_packet(&h)?;
        r.read_exact(a.body()).await?;
        if let Some(m) = a.end_packet() {
            return Ok(Some(m));
        }
    }
}

/// Reads a packet header on a blocking reader: None on a clean end of stream before its
/// first byte.
pub fn read_header_blocking<R: io::Read>(r: &mut R) -> io::Result<Option<[u8; HEADER_LEN]>> {
    let mut h = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        let n = match r.read(&mut h[got..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            if got > 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated packet header"));
            }
            return Ok(None);
        }
        got += n;
    }
    Ok(Some(h))
}

/// [`read_message`] on a blocking reader (a busy session's thread).
pub fn read_message_blocking<R: io::Read>(r: &mut R, limits: &Limits) -> io::Result<Option<Message>> {
    match read_header_blocking(r)? {
        Some(h) => read_message_after(r, limits, h).map(Some),
        None => Ok(None),
    }
}

/// What a busy session's thread reads: a whole message with the memory it holds, or the
/// end of one whose packets were read and dropped (the request fails; the connection goes
/// on) because it was larger than [`Limits::max_message`] or the requests' memory budget
/// had no room for it.
#[derive(Debug)]
pub enum Incoming {
    /// The message, and its bytes charged to the requests' budget: kept until the request
    /// has run.
    Message(Message, Charge),
    TooLarge {
        kind: u8,
        status: u8,
        bytes: usize,
    },
    NoMemory {
        kind: u8,
        status: u8,
        bytes: usize,
    },
}

/// [`read_message_after`] for a busy session's thread: each packet's body is charged to
/// `memory` before it is read, and a message past the limit or the budget is read to its
/// end and dropped rather than ending the connection (nothing of it is kept past the
/// point where it failed).
pub fn read_request_after<R: io::Read>(
    r: &mut R,
    limits: &Limits,
    first: [u8; HEADER_LEN],
    memory: &Arc<Budget>,
) -> io::Result<Incoming> {
    let mut a = Assembler::new(limits, &[]);
    let mut charge = Charge::new(memory);
    let mut h = first;
    loop {
        let header = Header::parse(&h, limits)?;
        let body = header.length - HEADER_LEN;
        let first = a.first.unwrap_or(header);
        if a.payload.len() + body > limits.max_message {
            let bytes = skip_rest(r, limits, first, h, a.payload.len())?;
            return Ok(bytes.map_or_else(Incoming::ignored(first), |bytes| Incoming::TooLarge {
                kind: first.kind,
                status: first.status,
                bytes,
            }));
        }
        if !charge.grow(body as u64) {
            let bytes = skip_rest(r, limits, first, h, a.payload.len())?;
            return Ok(bytes.map_or_else(Incoming::ignored(first), |bytes| Incoming::NoMemory {
                kind: first.kind,
                status: first.status,
                bytes,
            }));
        }
        a.begin_packet(&h)?;
        r.read_exact(a.body())?;
        if let Some(m) = a.end_packet() {
            return Ok(Incoming::Message(m, charge));
        }
        h = read_header_blocking(r)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "end of stream inside a message"))?;
    }
}

impl Incoming {
    /// A message the client abandoned while it was being dropped: answered as any
    /// abandoned message (an empty one with the IGNORE bit).
    fn ignored(first: Header) -> impl FnOnce() -> Incoming {
        move || {
            let message = Message { kind: first.kind, status: status::IGNORE | status::EOM, payload: BytesMut::new() };
            Incoming::Message(message, Charge::none())
        }
    }
}

/// Reads and drops the packets of the message `first` began, from the one whose header
/// is `h`, to its end; `kept` bytes of it were read before. Its length in all, or None
/// when the client abandoned it (the IGNORE bit on its last packet).
fn skip_rest<R: io::Read>(
    r: &mut R,
    limits: &Limits,
    first: Header,
    mut h: [u8; HEADER_LEN],
    kept: usize,
) -> io::Result<Option<usize>> {
    let mut scratch = vec![0u8; limits.max_packet];
    let mut bytes = kept;
    loop {
        let header = Header::parse(&h, limits)?;
        if header.kind != first.kind {
            return Err(protocol(format!(
                "packet type {:#04x} inside a message of type {:#04x}",
                header.kind, first.kind
            )));
        }
        r.read_exact(&mut scratch[..header.length - HEADER_LEN])?;
        bytes += header.length - HEADER_LEN;
        if header.status & status::EOM != 0 {
            return Ok((header.status & status::IGNORE == 0).then_some(bytes));
        }
        h = read_header_blocking(r)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "end of stream inside a message"))?;
    }
}

/// The rest of a message whose first packet header `first` was read already.
fn read_message_after<R: io::Read>(r: &mut R, limits: &Limits, first: [u8; HEADER_LEN]) -> io::Result<Message> {
    let mut a = Assembler::new(limits, &[]);
    let mut h = first;
    loop {
        a.begin_packet(&h)?;
        r.read_exact(a.body())?;
        if let Some(m) = a.end_packet() {
            return Ok(m);
        }
        h = read_header_blocking(r)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "end of stream inside a message"))?;
    }
}

/// A request read as its packets arrive (a busy session's thread), for decoders that
/// take their fields one by one (`codec::Input`): the request need not be in memory
/// whole. Fields are bounded by [`Limits::max_message`] together; a long PLP value read
/// with [`Input::take_into`] passes through a packet at a time (see `spool`), and does
/// not count. A failure of the socket or the framing ends the decoding with the error
/// kept in [`PacketInput::failure`] (the connection ends); a client that abandons the
/// message (the IGNORE bit) ends it too, [`PacketInput::ignored`] set.
pub struct PacketInput<'r, R: io::Read> {
    r: &'r mut R,
    limits: Limits,
    first: Header,
    /// Bytes received and not yet read, from `pos` on.
    buf: Vec<u8>,
    pos: usize,
    /// Bytes handed out as fields so far.
    taken: usize,
    /// The packet marked end-of-message is in.
    eom: bool,
    ignored: bool,
    failure: Option<io::Error>,
    spool: crate::spool::Place,
    /// The fields handed out, charged to the requests' memory budget.
    memory: Charge,
    /// A field got no room in that budget.
    out_of_memory: bool,
    /// Where [`PacketInput::rewind`] goes back to (`pos` and `taken` then): the buffer
    /// keeps what follows it.
    mark: Option<(usize, usize)>,
}

impl<'r, R: io::Read> PacketInput<'r, R> {
    /// Starts reading the message whose first header is `first`.
    pub fn start(
        r: &'r mut R,
        limits: Limits,
        first: [u8; HEADER_LEN],
        spool: crate::spool::Place,
        memory: &Arc<Budget>,
    ) -> io::Result<PacketInput<'r, R>> {
        let header = Header::parse(&first, &limits)?;
        let mut input = PacketInput {
            r,
            limits,
            first: header,
            buf: Vec::new(),
            pos: 0,
            taken: 0,
            eom: false,
            ignored: false,
            failure: None,
            spool,
            memory: Charge::new(memory),
            out_of_memory: false,
            mark: None,
        };
        input.body(header)?;
        Ok(input)
    }

    /// The status bits of the message's first packet.
    pub fn status(&self) -> u8 {
        self.first.status
    }

    /// Whether the client abandoned the message.
    pub fn ignored(&self) -> bool {
        self.ignored
    }

    /// The socket or framing error that stopped the reading, if one did.
    pub fn failure(&mut self) -> Option<io::Error> {
        self.failure.take()
    }

    /// Keeps what is read from here on, to read it again ([`PacketInput::rewind`]): for a
    /// short stretch that may need a second reading (a bulk load's column list).
    pub fn mark(&mut self) {
        self.mark = Some((self.pos, self.taken));
    }

    /// Goes back to the mark.
    pub fn rewind(&mut self) {
        let (pos, taken) = self.mark.expect("a mark to rewind to");
        (self.pos, self.taken) = (pos, taken);
    }

    /// Forgets the mark.
    pub fn unmark(&mut self) {
        self.mark = None;
    }

    /// Reads what is left of the message and drops it (after a decoding error, so that
    /// the next message starts where it should).
    /// Whether decoding failed for want of room in the requests' memory budget.
    pub fn out_of_memory(&self) -> bool {
        self.out_of_memory
    }

    /// The memory the decoded fields hold, to be kept until the request has run.
    pub fn into_charge(self) -> Charge {
        self.memory
    }

    pub fn drain(&mut self) -> io::Result<()> {
        self.mark = None;
        while !self.eom {
            self.buf.clear();
            self.pos = 0;
            self.next_packet()?;
        }
        Ok(())
    }

    /// Reads the next packet's body onto the buffer.
    fn next_packet(&mut self) -> io::Result<()> {
        let Some(h) = read_header_blocking(self.r)? else {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "end of stream inside a message"));
        };
        let header = Header::parse(&h, &self.limits)?;
        if header.kind != self.first.kind {
            let (inner, outer) = (header.kind, self.first.kind);
            return Err(protocol(format!("packet type {inner:#04x} inside a message of type {outer:#04x}")));
        }
        self.body(header)
    }

    fn body(&mut self, header: Header) -> io::Result<()> {
        let at = self.buf.len();
        self.buf.resize(at + header.length - HEADER_LEN, 0);
        self.r.read_exact(&mut self.buf[at..])?;
        self.eom = header.status & status::EOM != 0;
        if header.status & status::IGNORE != 0 {
            self.ignored = true;
            self.buf.truncate(at);
        }
        Ok(())
    }

    /// At least `n` bytes in the buffer, unless the message ends first.
    fn fill(&mut self, n: usize) -> crate::codec::DecodeResult<()> {
        while self.buf.len() - self.pos < n {
            if self.eom || self.ignored {
                let why = if self.ignored { "the client abandoned the request" } else { "truncated" };
                return crate::codec::bad(format!("{why}: wanted {n} bytes, {} left", self.buf.len() - self.pos));
            }
            let keep_from = self.mark.map_or(self.pos, |(at, _)| at);
            if keep_from > 0 {
                self.buf.drain(..keep_from);
                self.pos -= keep_from;
                if let Some((at, _)) = &mut self.mark {
                    *at = 0;
                }
            }
            if let Err(e) = self.next_packet() {
                let why = e.to_string();
                self.failure = Some(e);
                return crate::codec::bad(why);
            }
        }
        Ok(())
    }
}

impl<R: io::Read> crate::codec::Input for PacketInput<'_, R> {
    fn take(&mut self, n: usize) -> crate::codec::DecodeResult<&[u8]> {
        if self.taken + n > self.limits.max_message {
            return crate::codec::bad(format!("message larger than {} bytes", self.limits.max_message));
        }
        if !self.memory.grow(n as u64) {
            self.out_of_memory = true;
            return crate::codec::bad("no room in the server's memory for requests (max_request_memory_mb)");
        }
        self.fill(n)?;
        self.taken += n;
        self.pos += n;
        Ok(&self.buf[self.pos - n..self.pos])
    }

    fn peek(&mut self) -> crate::codec::DecodeResult<Option<u8>> {
        if self.buf.len() == self.pos && (self.eom || self.ignored) {
            return Ok(None);
        }
        self.fill(1)?;
        Ok(Some(self.buf[self.pos]))
    }

    fn take_into(
        &mut self,
        mut n: usize,
        each: &mut dyn FnMut(&[u8]) -> crate::codec::DecodeResult<()>,
    ) -> crate::codec::DecodeResult<()> {
        while n > 0 {
            self.fill(1)?;
            let piece = n.min(self.buf.len() - self.pos);
            each(&self.buf[self.pos..self.pos + piece])?;
            self.pos += piece;
            n -= piece;
        }
        Ok(())
    }

    fn spool(&self) -> Option<&crate::spool::Place> {
        Some(&self.spool)
    }
}

/// Writes `payload` as one message of `kind` and flushes.
pub async fn write_message<W: AsyncWrite + Unpin + ?Sized>(
    w: &mut W,
    kind: u8,
    payload: &[u8],
    packet_size: usize,
) -> io::Result<()> {
    let mut out = BytesMut::with_capacity(payload.len() + 64);
    let mut id = 1;
    frame(kind, payload, packet_size, true, &mut id, &mut out);
    w.write_all(&out).await?;
    w.flush().await
}

/// Cuts `payload` into packets of at most `packet_size` bytes (header included), the last
/// one marked end-of-message when `last` is set. Appends to `out`.
pub fn frame(kind: u8, payload: &[u8], packet_size: usize, last: bool, packet_id: &mut u8, out: &mut BytesMut) {
    let room = packet_size.saturating_sub(HEADER_LEN).max(1);
    let mut chunks = payload.chunks(room).peekable();
    if payload.is_empty() {
        if last {
            put_header(out, kind, status::EOM, 0, packet_id);
        }
        return;
    }
    while let Some(c) = chunks.next() {
        let eom = last && chunks.peek().is_none();
        put_header(out, kind, if eom { status::EOM } else { 0 }, c.len(), packet_id);
        out.put_slice(c);
    }
}

/// A packet's header for `body` bytes of payload, numbered `packet_id` (then counted on).
pub(crate) fn put_header(out: &mut BytesMut, kind: u8, status: u8, body: usize, packet_id: &mut u8) {
    out.put_u8(kind);
    out.put_u8(status);
    out.put_u16((body + HEADER_LEN) as u16);
    out.put_u16(0);
    out.put_u8(*packet_id);
    out.put_u8(0);
    *packet_id = packet_id.wrapping_add(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reassembles_and_limits() {
        let mut wire = BytesMut::new();
        let mut id = 1;
        let payload: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        frame(kind::SQL_BATCH, &payload, 4096, true, &mut id, &mut wire);
        assert_eq!(id, 4);
        let mut r = &wire[..];
        let m = read_message(&mut r, &Limits::default()).await.unwrap().unwrap();
        assert_eq!(m.kind, kind::SQL_BATCH);
        assert_eq!(&m.payload[..], &payload[..]);
        assert!(read_message(&mut r, &Limits::default()).await.unwrap().is_none());

        let mut r = &wire[..];
        let small = Limits { max_packet: 4096, max_message: 5000 };
        assert!(read_message(&mut r, &small).await.is_err());

        // The blocking reader assembles the same messages.
        let mut r = &wire[..];
        let m = read_message_blocking(&mut r, &Limits::default()).unwrap().unwrap();
        assert_eq!(&m.payload[..], &payload[..]);
        assert!(read_message_blocking(&mut r, &Limits::default()).unwrap().is_none());
        let mut r: &[u8] = &[1, 0, 0, 9, 0, 0, 0, 0, 7];
        assert!(read_message_blocking(&mut r, &Limits::default()).is_err(), "end of stream inside a message");
    }

    #[test]
    fn an_ignored_message_ends_as_an_empty_one_with_the_ignore_bit() {
        // A batch's first packet, then its last with IGNORE (tedious cancelling while it
        // sends), then a whole batch "x".
        let wire: &[u8] = &[
            1, 0, 0, 10, 0, 0, 1, 0, b'a', b'b', //
            1, 3, 0, 8, 0, 0, 2, 0, //
            1, 1, 0, 9, 0, 0, 1, 0, b'x',
        ];
        let mut r = wire;
        let m = read_message_blocking(&mut r, &Limits::default()).unwrap().unwrap();
        assert_eq!((m.kind, m.status & status::IGNORE, m.payload.len()), (kind::SQL_BATCH, status::IGNORE, 0));
        let m = read_message_blocking(&mut r, &Limits::default()).unwrap().unwrap();
        assert_eq!((m.status & status::IGNORE, &m.payload[..]), (0, &b"x"[..]));
    }

    #[test]
    fn a_request_past_the_limit_is_read_to_its_end_and_dropped() {
        let mut wire = BytesMut::new();
        let big: Vec<u8> = vec![9; 20_000];
        frame(kind::SQL_BATCH, &big, 4096, true, &mut 1, &mut wire);
        frame(kind::SQL_BATCH, b"next", 4096, true, &mut 1, &mut wire);
        let small = Limits { max_packet: 4096, max_message: 10_000 };
        let memory = Budget::new(1 << 20);
        let mut r = &wire[..];
        let first = read_header_blocking(&mut r).unwrap().unwrap();
        match read_request_after(&mut r, &small, first, &memory).unwrap() {
            Incoming::TooLarge { kind, bytes, .. } => assert_eq!((kind, bytes), (kind::SQL_BATCH, 20_000)),
            other => panic!("{other:?}"),
        }
        assert_eq!(memory.used_bytes(), 0, "nothing of it is held");
        // The next request starts where the dropped one ended, and holds its bytes while
        // it is kept.
        let first = read_header_blocking(&mut r).unwrap().unwrap();
        let Incoming::Message(m, held) = read_request_after(&mut r, &small, first, &memory).unwrap() else {
            panic!("a message")
        };
        assert_eq!(&m.payload[..], b"next");
        assert_eq!(memory.used_bytes(), 4);
        drop(held);
        // A message the budget has no room for is dropped too.
        let tight = Budget::new(5_000);
        let mut r = &wire[..];
        let first = read_header_blocking(&mut r).unwrap().unwrap();
        let unlimited = Limits { max_packet: 4096, max_message: 1 << 20 };
        match read_request_after(&mut r, &unlimited, first, &tight).unwrap() {
            Incoming::NoMemory { bytes, .. } => assert_eq!(bytes, 20_000),
            other => panic!("{other:?}"),
        }
        assert_eq!(tight.used_bytes(), 0);
        // A packet of another type inside the dropped message is a protocol error.
        let mut mixed = BytesMut::new();
        frame(kind::SQL_BATCH, &big, 4096, false, &mut 1, &mut mixed);
        frame(kind::RPC, b"x", 4096, true, &mut 1, &mut mixed);
        let mut r = &mixed[..];
        let first = read_header_blocking(&mut r).unwrap().unwrap();
        assert!(read_request_after(&mut r, &small, first, &memory).is_err());
    }

    #[tokio::test]
    async fn rejects_bad_lengths_and_truncation() {
        let l = Limits::default();
        let mut r: &[u8] = &[1, 1, 0, 4, 0, 0, 0, 0];
        assert!(read_message(&mut r, &l).await.is_err());
        let mut r: &[u8] = &[1, 1, 0, 20, 0, 0, 0, 0, 1, 2];
        assert!(read_message(&mut r, &l).await.is_err());
        let mut r: &[u8] = &[1, 1, 0];
        assert!(read_message(&mut r, &l).await.is_err());
        let small = Limits { max_packet: 4096, max_message: 1 << 20 };
        let mut r: &[u8] = &[1, 1, 0x20, 0, 0, 0, 0, 0];
        assert!(read_message(&mut r, &small).await.is_err());
    }
}
