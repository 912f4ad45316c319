//! A streaming TDS reader: one connection that sends a batch and reads its reply off the
//! socket as it arrives, discarding the rows — counting them and the bytes, and noting when
//! the first byte and the first ROW token came in. What `tessera bench streaming` measures
//! the server with; unlike [`crate::tdsload`], which holds a whole reply before scanning
//! it, this reader never holds more than one read buffer and one incomplete token.
//!
//! The connection logs in over plain TCP ([`tessera_server::client::login_plaintext`]) and
//! is then a blocking std socket. A query writes the batch's packets, then loops: one
//! `read(2)` into a fixed buffer, one clock read, each whole packet's payload scanned where
//! it was read ([`crate::tdsload::token`]: COLMETADATA's value framing, ROW/NBCROW counted
//! as they arrive, ERROR kept, DONE), only a token the packet's end cuts copied to the
//! token buffer to be completed by the next packets. The reply ends with the packet marked
//! end-of-message.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde::Serialize;
use tessera_server::client::{batch_body, login_plaintext};
use tessera_server::packet::{self, kind, status, HEADER_LEN};
use tessera_server::tokens;

use crate::error::{BenchError, Result};
use crate::tdsload::{frame, frame_batch, token, Cursor, Framing, Token};

/// The socket read buffer: two packets of the largest size.
pub const READ_BUFFER: usize = 2 * (packet::MAX_PACKET_SIZE + 1);

/// What one streamed query did, on either side (the PostgreSQL reader fills the same).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StreamRun {
    /// Rows received (ROW/NBCROW tokens, or PostgreSQL DataRow messages).
    pub rows: u64,
    /// The row count the server's completion reported (DONE's count, CommandComplete's).
    pub reported_rows: Option<u64>,
    /// Bytes read off the socket (packet or message headers included).
    pub bytes: u64,
    /// From sending the request to the first reply byte's arrival.
    pub first_byte_seconds: Option<f64>,
    /// From sending the request to the read that completed the first row.
    pub first_row_seconds: Option<f64>,
    /// Bytes the first read returned: how much the server had gathered before its first
    /// write reached the socket.
    pub first_read_bytes: u64,
    /// From sending the request to the end of the reply.
    pub seconds: f64,
    /// The first error the server sent.
    pub error: Option<String>,
    /// The most bytes held in the token buffer at once: an incomplete token plus at most
    /// one packet's payload (or one read, for PostgreSQL). Bounded by the widest row.
    pub max_buffered: usize,
}

impl StreamRun {
    /// Megabytes (10^6 bytes) per second of what came off the socket.
    pub fn mb_per_second(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }

    pub fn rows_per_second(&self) -> f64 {
        self.rows as f64 / self.seconds.max(1e-9)
    }
}

/// Scans a reply's tokens as they arrive.
#[derive(Debug, Default)]
pub(crate) struct TokenScanner {
    columns: Vec<Framing>,
    pub rows: u64,
    pub reported_rows: Option<u64>,
    pub error: Option<String>,
    pub finished: bool,
    /// The reply is an RPC's: it ends with a DONEPROC.
    pub rpc: bool,
    /// The row being read, when its end has not arrived yet.
    row: Option<PartRow>,
}

/// A ROW or NBCROW token read as it arrives, so that a row holding a value of a GiB is
/// never held whole: the column it is at, the NULL bitmap (NBCROW), and where it is in a
/// PLP value.
#[derive(Debug, Default)]
struct PartRow {
    column: usize,
    nulls: Vec<u8>,
    plp: Option<PlpAt>,
}

#[derive(Debug, Clone, Copy)]
enum PlpAt {
    /// A chunk's four-byte length comes next (0 ends the value).
    ChunkLength,
    /// Bytes left in the current chunk.
    InChunk(u64),
}

impl TokenScanner {
    /// Scans the complete tokens at the start of `data` and returns how many bytes they
    /// took; an incomplete token at the end is left for the next call, unless `last` (the
    /// reply's end-of-message has been read), when it is an error.
    pub fn feed(&mut self, data: &[u8], last: bool) -> Result<usize> {
        let mut done = 0;
        while done < data.len() {
            if self.row.is_some() {
                let (used, ended) = self.row_on(&data[done..])?;
                done += used;
                if !ended {
                    return if last { Err(BenchError::new("a reply that ends inside a row")) } else { Ok(done) };
                }
                self.row = None;
                self.rows += 1;
                continue;
            }
            if self.finished {
                return Err(BenchError::new("tokens after the final DONE"));
            }
            if data[done] == tokens::ROW || data[done] == tokens::NBCROW {
                let bitmap = if data[done] == tokens::NBCROW { self.columns.len().div_ceil(8) } else { 0 };
                if data.len() - done < 1 + bitmap {
                    return if last { Err(BenchError::new("a reply that ends inside a row")) } else { Ok(done) };
                }
                self.row = Some(PartRow { nulls: data[done + 1..done + 1 + bitmap].to_vec(), ..PartRow::default() });
                done += 1 + bitmap;
                continue;
            }
            let mut r = Cursor::new(&data[done..]);
            match token(&mut r, &mut self.columns) {
                Ok(Token::Row) => self.rows += 1,
                Ok(Token::Done { status, count, last, last_of_rpc }) => {
                    let end = if self.rpc { last_of_rpc } else { last };
                    if status & tokens::done::ERROR != 0 && self.error.is_none() {
                        self.error = Some("the server ended the batch in error".to_string());
                    }
                    if status & tokens::done::COUNT != 0 {
                        self.reported_rows = Some(count);
                    }
                    self.finished = end;
                }
                Ok(Token::Error(text)) => {
                    self.error.get_or_insert(text);
                }
                Ok(Token::Other) => {}
                Err(_) if r.short && !last => return Ok(done),
                Err(e) => return Err(e),
            }
            done += r.pos;
        }
        if last && !self.finished {
            return Err(BenchError::new("a reply without its final DONE"));
        }
        Ok(done)
    }

    /// Reads on in the row in progress: the bytes it took, and whether the row ended.
    fn row_on(&mut self, data: &[u8]) -> Result<(usize, bool)> {
        let row = self.row.as_mut().expect("a row in progress");
        let mut pos = 0;
        while row.column < self.columns.len() {
            let i = row.column;
            if row.nulls.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0) {
                row.column += 1;
                continue;
            }
            let left = &data[pos..];
            match (self.columns[i], row.plp) {
                (Framing::Plp, None) => {
                    let Some(total) = left.get(..8) else { return Ok((pos, false)) };
                    pos += 8;
                    if total == [0xFF; 8] {
                        row.column += 1;
                    } else {
                        row.plp = Some(PlpAt::ChunkLength);
                    }
                }
                (Framing::Plp, Some(PlpAt::ChunkLength)) => {
                    let Some(n) = left.get(..4) else { return Ok((pos, false)) };
                    pos += 4;
                    match u32::from_le_bytes(n.try_into().expect("4 bytes")) {
                        0 => {
                            row.plp = None;
                            row.column += 1;
                        }
                        n => row.plp = Some(PlpAt::InChunk(n.into())),
                    }
                }
                (Framing::Plp, Some(PlpAt::InChunk(n))) => {
                    let took = n.min(left.len() as u64);
                    if took == 0 {
                        return Ok((pos, false));
                    }
                    pos += took as usize;
                    row.plp = Some(if took == n { PlpAt::ChunkLength } else { PlpAt::InChunk(n - took) });
                }
                (framing, _) => {
                    let mut r = Cursor::new(left);
                    match r.value(framing) {
                        Ok(()) => {
                            pos += r.pos;
                            row.column += 1;
                        }
                        Err(_) if r.short => return Ok((pos, false)),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok((pos, true))
    }
}

/// One logged-in connection that streams replies.
pub struct StreamConn {
    stream: TcpStream,
    packet_size: usize,
    buf: Box<[u8]>,
    tokens: Vec<u8>,
}

impl StreamConn {
    /// Connects to 127.0.0.1:`port` and logs in (plain TCP).
    pub fn connect(port: u16, user: &str, password: &str, database: &str) -> Result<StreamConn> {
        StreamConn::connect_within(port, user, password, database, None)
    }

    /// As [`StreamConn::connect`], but the login, and then each read and write of the
    /// connection, fails after `timeout` (None: waits as long as it takes).
    pub fn connect_within(
        port: u16,
        user: &str,
        password: &str,
        database: &str,
        timeout: Option<Duration>,
    ) -> Result<StreamConn> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (stream, packet_size) = runtime.block_on(async {
            let login = async {
                let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
                tcp.set_nodelay(true)?;
                let (tcp, size) = login_plaintext(tcp, user, password, database)
                    .await
                    .map_err(|e| BenchError::new(format!("TDS login: {e}")))?;
                Ok::<_, BenchError>((tcp.into_std()?, size))
            };
            match timeout {
                Some(t) => tokio::time::timeout(t, login)
                    .await
                    .map_err(|_| BenchError::new(format!("TDS login: no answer in {} ms", t.as_millis())))?,
                None => login.await,
            }
        })?;
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(timeout)?;
        stream.set_write_timeout(timeout)?;
        Ok(StreamConn {
            stream,
            packet_size,
            buf: vec![0; READ_BUFFER].into_boxed_slice(),
            tokens: Vec::with_capacity(READ_BUFFER),
        })
    }

    /// The packet size the server agreed.
    pub fn packet_size(&self) -> usize {
        self.packet_size
    }

    /// Sends `batch` and reads its reply as it arrives. A server error is reported in the
    /// run (`error`), not as an `Err`.
    pub fn query(&mut self, batch: &str) -> Result<StreamRun> {
        let request = frame_batch(&batch_body(batch), self.packet_size);
        self.request(&request, false)
    }

    /// Sends an RPC request whose payload is `body` (ALL_HEADERS and the calls, as
    /// [`executesql_body`] makes one) and reads its reply as [`StreamConn::query`] does.
    pub fn rpc(&mut self, body: &[u8]) -> Result<StreamRun> {
        let request = self.frame_rpc(body);
        self.send_rpc(&request)
    }

    /// An RPC request's packets, framed for this connection ([`StreamConn::send_rpc`]
    /// sends them): a caller that times the server frames first.
    pub fn frame_rpc(&self, body: &[u8]) -> Vec<u8> {
        frame(kind::RPC, body, self.packet_size)
    }

    /// Sends an RPC request framed by [`StreamConn::frame_rpc`] and reads its reply.
    pub fn send_rpc(&mut self, request: &[u8]) -> Result<StreamRun> {
        self.request(request, true)
    }

    fn request(&mut self, request: &[u8], rpc: bool) -> Result<StreamRun> {
        let mut run = StreamRun::default();
        let mut scanner = TokenScanner { rpc, ..TokenScanner::default() };
        self.tokens.clear();
        let start = Instant::now();
        self.stream.write_all(request)?;
        let mut filled = 0;
        loop {
            let n = match self.stream.read(&mut self.buf[filled..]) {
                Ok(0) => return Err(BenchError::new("the server closed the connection")),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            let now = Instant::now();
            if run.first_byte_seconds.is_none() {
                run.first_byte_seconds = Some(now.duration_since(start).as_secs_f64());
                run.first_read_bytes = n as u64;
            }
            run.bytes += n as u64;
            filled += n;
            let mut pos = 0;
            let mut eom = false;
            while filled - pos >= HEADER_LEN {
                let header = &self.buf[pos..pos + HEADER_LEN];
                let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
                if header[0] != kind::REPLY || len < HEADER_LEN {
                    return Err(BenchError::new(format!("unexpected packet (type {:#04x}, length {len})", header[0])));
                }
                if filled - pos < len {
                    break;
                }
                eom = header[1] & status::EOM != 0;
                let payload = pos + HEADER_LEN..pos + len;
                pos += len;
                let rows_before = scanner.rows;
                if self.tokens.is_empty() {
                    // Scanned where it was read: only a token the packet's end cuts is
                    // copied (each byte copied once more would cost the reader as much
                    // as the kernel's copy).
                    let data = &self.buf[payload];
                    run.max_buffered = run.max_buffered.max(data.len());
                    let used = scanner.feed(data, eom)?;
                    self.tokens.extend_from_slice(&data[used..]);
                } else {
                    self.tokens.extend_from_slice(&self.buf[payload]);
                    run.max_buffered = run.max_buffered.max(self.tokens.len());
                    let used = scanner.feed(&self.tokens, eom)?;
                    self.tokens.drain(..used);
                }
                if rows_before == 0 && scanner.rows > 0 {
                    run.first_row_seconds = Some(now.duration_since(start).as_secs_f64());
                }
                if eom {
                    if pos != filled {
                        return Err(BenchError::new("bytes after the reply's last packet"));
                    }
                    break;
                }
            }
            if eom {
                run.seconds = now.duration_since(start).as_secs_f64();
                break;
            }
            self.buf.copy_within(pos..filled, 0);
            filled -= pos;
        }
        run.rows = scanner.rows;
        run.reported_rows = scanner.reported_rows;
        run.error = scanner.error;
        Ok(run)
    }
}

/// A parameter of [`executesql_body`].
pub enum RpcValue<'a> {
    Int(i32),
    /// varbinary(max), sent PLP-framed in chunks of at most 64 KiB.
    Binary(&'a [u8]),
}

/// An RPC request's payload calling `sp_executesql` (by its procedure id) with the
/// statement, its parameter declarations and the parameters `@name = value`, as a driver
/// sends a parameterized statement (MS-TDS 2.2.6.6).
pub fn executesql_body(statement: &str, declared: &str, params: &[(&str, RpcValue<'_>)]) -> Vec<u8> {
    const SP_EXECUTESQL: u16 = 10;
    const PLP_CHUNK: usize = 64 << 10;
    let mut body = batch_body("");
    body.extend_from_slice(&0xFFFFu16.to_le_bytes());
    body.extend_from_slice(&SP_EXECUTESQL.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    let name = |body: &mut Vec<u8>, n: &str| {
        let units: Vec<u16> = n.encode_utf16().collect();
        body.push(units.len() as u8);
        units.iter().for_each(|u| body.extend_from_slice(&u.to_le_bytes()));
        body.push(0); // status: input
    };
    let plp = |body: &mut Vec<u8>, data: &[u8]| {
        body.extend_from_slice(&(data.len() as u64).to_le_bytes());
        for chunk in data.chunks(PLP_CHUNK) {
            body.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
            body.extend_from_slice(chunk);
        }
        body.extend_from_slice(&0u32.to_le_bytes());
    };
    for text in [statement, declared] {
        name(&mut body, "");
        body.extend_from_slice(&[tessera_server::types::code::NVARCHAR, 0xFF, 0xFF, 0x09, 0x04, 0xD0, 0x00, 0x34]);
        let bytes: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        plp(&mut body, &bytes);
    }
    for (n, value) in params {
        name(&mut body, n);
        match value {
            RpcValue::Int(x) => {
                body.extend_from_slice(&[tessera_server::types::code::INTN, 4, 4]);
                body.extend_from_slice(&x.to_le_bytes());
            }
            RpcValue::Binary(data) => {
                body.extend_from_slice(&[tessera_server::types::code::BIGVARBIN, 0xFF, 0xFF]);
                plp(&mut body, data);
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_server::types::code;

    /// COLMETADATA (bigint, char(n)), `rows` ROWs, DONE with the count.
    fn reply(n: u16, rows: u64) -> Vec<u8> {
        let mut p = vec![tokens::COLMETADATA];
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&[0, 0, 0, 0, 1, 0, code::INTN, 8, 2, b'i', 0, b'd', 0]);
        p.extend_from_slice(&[0, 0, 0, 0, 1, 0, code::BIGCHAR]);
        p.extend_from_slice(&n.to_le_bytes());
        p.extend_from_slice(&[0x09, 0x04, 0xD0, 0x00, 0x34, 1, b'n', 0]);
        for i in 0..rows {
            p.extend_from_slice(&[tokens::ROW, 8]);
            p.extend_from_slice(&i.to_le_bytes());
            p.extend_from_slice(&n.to_le_bytes());
            p.extend_from_slice(&vec![b'A'; n.into()]);
        }
        p.push(tokens::DONE);
        p.extend_from_slice(&tokens::done::COUNT.to_le_bytes());
        p.extend_from_slice(&0xC1u16.to_le_bytes());
        p.extend_from_slice(&rows.to_le_bytes());
        p
    }

    /// Feeds `data` in pieces of `step` bytes, as packets would bring it.
    fn feed_in_pieces(data: &[u8], step: usize) -> (TokenScanner, usize) {
        let mut s = TokenScanner::default();
        let mut held = Vec::new();
        let mut most = 0;
        for (i, piece) in data.chunks(step).enumerate() {
            held.extend_from_slice(piece);
            most = most.max(held.len());
            let last = (i + 1) * step >= data.len();
            let used = s.feed(&held, last).unwrap();
            held.drain(..used);
        }
        assert!(held.is_empty());
        (s, most)
    }

    #[test]
    fn tokens_split_anywhere_are_counted_once() {
        let data = reply(300, 50);
        for step in [1, 2, 3, 7, 100, 311, 4088, data.len()] {
            let (s, most) = feed_in_pieces(&data, step);
            assert_eq!((s.rows, s.reported_rows, s.finished, s.error.as_deref()), (50, Some(50), true, None), "{step}");
            // Never more than one incomplete row plus one piece.
            assert!(most < 300 + 20 + step, "step {step}: {most} bytes held");
        }
    }

    /// A row whose PLP value is many times the pieces it arrives in is read as it comes:
    /// what the reader holds stays within a piece (plus a few bytes of framing).
    #[test]
    fn a_long_plp_value_is_never_held_whole() {
        let mut p = vec![tokens::COLMETADATA];
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&[0, 0, 0, 0, 1, 0, code::INTN, 4, 1, b'i', 0]);
        p.extend_from_slice(&[0, 0, 0, 0, 1, 0, code::BIGVARBIN, 0xFF, 0xFF, 1, b'v', 0]);
        let value = vec![7u8; 100_000];
        p.extend_from_slice(&[tokens::ROW, 4, 1, 0, 0, 0]);
        p.extend_from_slice(&(value.len() as u64).to_le_bytes());
        for chunk in value.chunks(30_000) {
            p.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
            p.extend_from_slice(chunk);
        }
        p.extend_from_slice(&0u32.to_le_bytes());
        // A row whose value is NULL in the bitmap (NBCROW), then one with a PLP NULL.
        p.extend_from_slice(&[tokens::NBCROW, 0b10, 4, 2, 0, 0, 0]);
        p.extend_from_slice(&[tokens::ROW, 4, 3, 0, 0, 0]);
        p.extend_from_slice(&u64::MAX.to_le_bytes());
        p.push(tokens::DONE);
        p.extend_from_slice(&tokens::done::COUNT.to_le_bytes());
        p.extend_from_slice(&0xC1u16.to_le_bytes());
        p.extend_from_slice(&3u64.to_le_bytes());
        for step in [1, 5, 4096, 65_536] {
            let (s, most) = feed_in_pieces(&p, step);
            assert_eq!((s.rows, s.reported_rows, s.finished), (3, Some(3), true), "{step}");
            assert!(most < step + 64, "step {step}: {most} bytes held");
        }
    }

    #[test]
    fn a_truncated_reply_is_an_error_at_its_end() {
        let data = reply(10, 3);
        let mut s = TokenScanner::default();
        assert!(s.feed(&data[..data.len() - 4], true).is_err());
        let mut s = TokenScanner::default();
        assert_eq!(s.feed(&data[..data.len() - 4], false).unwrap(), data.len() - 13);
    }
}
