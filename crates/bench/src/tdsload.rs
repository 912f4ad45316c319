//! A lean TDS load generator, what pgbench is to PostgreSQL: N connections to a TDS server
//! on plain TCP, all driven from one thread, each sending the same SQL batch over and over.
//!
//! Each connection logs in with [`tessera_server::client::login_plaintext`] (PRELOGIN with
//! encryption not supported, LOGIN7), on a current-thread runtime that is then dropped; the
//! sockets become non-blocking std sockets multiplexed with `poll(2)` by the generator's
//! thread, named [`THREAD_NAME`]. The request's packet bytes are encoded once and written
//! as they are for every query. A reply is read into the connection's buffer and decoded
//! only as far as needed: packet headers up to the one marked end-of-message, then the
//! tokens — COLMETADATA (each column's value framing only), ROW and NBCROW (counted,
//! values skipped), ERROR (the query failed: its message is kept), DONE, and the few others
//! a reply may carry, skipped by their length. No allocation happens per query; one clock
//! read per reply gives the latency sum.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use tessera_server::client::{batch_body, login_plaintext};
use tessera_server::packet::{self, kind, status, HEADER_LEN};
use tessera_server::tokens;
use tessera_server::types::code;

use crate::cpu::rusage_cpu;
use crate::error::{BenchError, Result};

/// The generator thread's name (15 characters at most: Linux's limit), so a benchmark can
/// tell its CPU time from the server's.
pub const THREAD_NAME: &str = "bench-tdsload";

/// How long the generator waits for a reply before it gives up on the run.
const STALL: Duration = Duration::from_secs(60);
/// Each connection's read buffer: two packets of the largest size, so a whole packet always
/// fits after compaction.
const READ_BUFFER: usize = 2 * (packet::MAX_PACKET_SIZE + 1);

/// When the generator stops sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this long (queries in flight then are still awaited and counted).
    After(Duration),
    /// After this many queries on each connection.
    Queries(u64),
}

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadSpec<'a> {
    pub port: u16,
    pub user: &'a str,
    pub password: &'a str,
    /// The database LOGIN7 asks for (empty: the login's default).
    pub database: &'a str,
    /// The batches the queries send, in turn: query k of the run (over every connection)
    /// sends `batches[k % batches.len()]`.
    pub batches: &'a [&'a str],
    pub connections: usize,
    pub stop: Stop,
    /// The rows every reply must carry: a reply with another count is an error.
    pub expect_rows: Option<u64>,
    /// Keep every counted query's latency ([`LoadRun::latencies_us`]).
    pub record_latencies: bool,
    /// Queries per second over all connections (open loop: the k-th query is due at
    /// k ÷ rate after the start, sent then on a connection that is free, or as soon as one
    /// is when the server is behind); None sends each next query as soon as its
    /// connection's reply is in.
    pub rate: Option<f64>,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadRun {
    /// Batches sent (every one was answered).
    pub sent: u64,
    /// Batches answered without an error: the queries counted.
    pub queries: u64,
    /// Batches answered with an error (an ERROR token, or the wrong number of rows); the
    /// connection stops sending after its first.
    pub errors: u64,
    /// The first error's text.
    pub first_error: Option<String>,
    /// Rows in the counted queries' replies.
    pub rows: u64,
    /// From the first send to the last reply.
    pub seconds: f64,
    /// The sum of every counted query's latency (send to end of reply).
    pub latency_seconds: f64,
    /// Every counted query's latency in microseconds, in reply order, if
    /// [`LoadSpec::record_latencies`] asked for them.
    pub latencies_us: Vec<u32>,
    /// CPU time of the generator's thread over the same span.
    pub cpu_seconds: f64,
    /// CPU time of the whole process over the same span (getrusage), so that a server in
    /// the same process can be charged what is left after the generator's share; the
    /// logins, before the span, are in neither.
    pub process_cpu_seconds: f64,
}

/// The `q`-quantile (0 to 1) of latencies in µs, in ms (0 for none): the value below which
/// `q` of them lie. Sorts them.
pub fn quantile_ms(latencies_us: &mut [u32], q: f64) -> f64 {
    latencies_us.sort_unstable();
    let i = ((latencies_us.len() as f64 * q) as usize).min(latencies_us.len().saturating_sub(1));
    latencies_us.get(i).map_or(0.0, |&us| f64::from(us) / 1000.0)
}

impl LoadRun {
    pub fn rate(&self) -> f64 {
        self.queries as f64 / self.seconds.max(1e-9)
    }

    pub fn mean_latency_ms(&self) -> f64 {
        1000.0 * self.latency_seconds / (self.queries.max(1) as f64)
    }

    /// The generator's CPU time per counted query, in microseconds.
    pub fn cpu_per_query_us(&self) -> f64 {
        1e6 * self.cpu_seconds / (self.queries.max(1) as f64)
    }
}

/// Where one connection logs in: a port on 127.0.0.1 and the database its LOGIN7 names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a> {
    pub port: u16,
    pub database: &'a str,
}

/// Connects `spec.connections` connections and runs the load on a thread of its own (named
/// [`THREAD_NAME`]); returns when every connection has stopped and its last reply is in.
pub fn run(spec: &LoadSpec<'_>) -> Result<LoadRun> {
    run_on(spec, &vec![Target { port: spec.port, database: spec.database }; spec.connections])
}

/// As [`run`], with one connection per target, each logged in where its target says
/// (`spec.port`, `spec.database` and `spec.connections` are not used).
pub fn run_on(spec: &LoadSpec<'_>, targets: &[Target<'_>]) -> Result<LoadRun> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(THREAD_NAME.to_string())
            .spawn_scoped(scope, || drive(spec, targets))?
            .join()
            .map_err(|_| BenchError::new("the TDS load generator panicked"))?
    })
}

/// One connection's state.
struct Conn {
    stream: std::net::TcpStream,
    buf: Box<[u8]>,
    /// Bytes of `buf` read and not yet consumed.
    filled: usize,
    /// A reply spanning several packets: their payloads so far.
    message: Vec<u8>,
    /// Bytes of the request written so far (the request is in flight once all are).
    written: usize,
    in_flight: bool,
    sent_at: Instant,
    sent: u64,
    /// Scratch for the reply's column framing (reused).
    columns: Vec<Framing>,
    stopped: bool,
    /// Waiting for its next query to be due (paced runs).
    idle: bool,
    /// The request in flight (an index into the encoded requests).
    request: usize,
}

/// Latencies kept before the buffer grows, when they are recorded.
const LATENCIES_PREALLOCATED: usize = 1 << 20;

fn drive(spec: &LoadSpec<'_>, targets: &[Target<'_>]) -> Result<LoadRun> {
    if spec.batches.is_empty() {
        return Err(BenchError::new("the load has no batch to send"));
    }
    let (streams, packet_size) = login_all(spec, targets)?;
    let requests: Vec<Vec<u8>> = spec.batches.iter().map(|b| frame_batch(&batch_body(b), packet_size)).collect();
    let mut next_request = 0usize;
    let mut next = || {
        let r = next_request % requests.len();
        next_request += 1;
        r
    };
    let now = Instant::now();
    let mut conns: Vec<Conn> = streams
        .into_iter()
        .map(|stream| Conn {
            stream,
            buf: vec![0; READ_BUFFER].into_boxed_slice(),
            filled: 0,
            message: Vec::with_capacity(READ_BUFFER),
            written: 0,
            in_flight: false,
            sent_at: now,
            sent: 0,
            columns: Vec::with_capacity(16),
            stopped: false,
            idle: false,
            request: 0,
        })
        .collect();
    let mut fds: Vec<libc::pollfd> =
        conns.iter().map(|c| libc::pollfd { fd: c.stream.as_raw_fd(), events: 0, revents: 0 }).collect();
    let mut out = LoadRun::default();
    if spec.record_latencies {
        out.latencies_us.reserve(LATENCIES_PREALLOCATED);
    }
    let (cpu_start, process_start) = (thread_cpu_seconds(), rusage_cpu(libc::RUSAGE_SELF));
    let start = Instant::now();
    let deadline = match spec.stop {
        Stop::After(d) => Some(start + d),
        Stop::Queries(_) => None,
    };
    let wants_more = |c: &Conn, now: Instant| match spec.stop {
        Stop::After(_) => deadline.is_some_and(|d| now < d),
        Stop::Queries(n) => c.sent < n,
    };
    let interval = spec.rate.map(|r| Duration::from_secs_f64(1.0 / r.max(1e-6)));
    let mut due = start;
    for c in &mut conns {
        if !wants_more(c, start) {
            c.stopped = true;
        } else if interval.is_some() {
            c.idle = true;
        } else {
            c.request = next();
            send(c, &requests[c.request], start)?;
        }
    }
    let mut last_reply = start;
    loop {
        let mut wake = STALL;
        if let Some(interval) = interval {
            let now = Instant::now();
            for c in conns.iter_mut().filter(|c| c.idle) {
                if !wants_more(c, now) {
                    c.idle = false;
                    c.stopped = true;
                } else if due <= now {
                    c.idle = false;
                    c.request = next();
                    send(c, &requests[c.request], now)?;
                    due += interval;
                }
            }
            if conns.iter().any(|c| c.idle) {
                wake = due.saturating_duration_since(now).max(Duration::from_millis(1));
            }
        }
        let mut live = 0;
        for (c, fd) in conns.iter().zip(fds.iter_mut()) {
            fd.events = 0;
            if c.stopped {
                continue;
            }
            live += 1;
            if c.idle {
                continue;
            }
            let pending = c.written < requests[c.request].len();
            fd.events = if pending { libc::POLLOUT } else { 0 } | if c.in_flight { libc::POLLIN } else { 0 };
        }
        if live == 0 {
            break;
        }
        // Every live connection waits for a reply (or to write), or for its next query to
        // be due.
        let timeout_ms = wake.as_millis().max(1) as i32;
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if ready < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e.into());
        }
        if ready == 0 && wake == STALL {
            return Err(BenchError::new(format!("no reply from the server for {} s", STALL.as_secs())));
        }
        // One clock read per wake-up: the end of every reply it brings, and the start of
        // the queries sent next.
        let now = Instant::now();
        for (c, fd) in conns.iter_mut().zip(fds.iter()) {
            if fd.revents == 0 {
                continue;
            }
            let request = &requests[c.request];
            if fd.revents & libc::POLLOUT != 0 && c.written < request.len() {
                write_some(c, request)?;
            }
            if fd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) == 0 {
                continue;
            }
            let Some(reply) = read_reply(c)? else { continue };
            last_reply = now;
            c.in_flight = false;
            let failure = match (reply.error, spec.expect_rows) {
                (Some(e), _) => Some(e),
                (None, Some(n)) if reply.rows != n => Some(format!("a reply carried {} rows, not {n}", reply.rows)),
                (None, _) => None,
            };
            match failure {
                Some(e) => {
                    out.errors += 1;
                    out.first_error.get_or_insert(e);
                    c.stopped = true;
                }
                None => {
                    out.queries += 1;
                    out.rows += reply.rows;
                    let latency = now.duration_since(c.sent_at);
                    out.latency_seconds += latency.as_secs_f64();
                    if spec.record_latencies {
                        out.latencies_us.push(u32::try_from(latency.as_micros()).unwrap_or(u32::MAX));
                    }
                    if interval.is_some() && wants_more(c, now) {
                        c.idle = true;
                    } else if wants_more(c, now) {
                        c.request = next();
                        send(c, &requests[c.request], now)?;
                    } else {
                        c.stopped = true;
                    }
                }
            }
        }
    }
    out.seconds = last_reply.duration_since(start).as_secs_f64();
    out.cpu_seconds = thread_cpu_seconds() - cpu_start;
    out.process_cpu_seconds = rusage_cpu(libc::RUSAGE_SELF) - process_start;
    out.sent = conns.iter().map(|c| c.sent).sum();
    Ok(out)
}

/// Logs a connection in at every target on a current-thread runtime, then hands the
/// sockets back as non-blocking std sockets (with the packet size the server agreed for
/// the last).
fn login_all(spec: &LoadSpec<'_>, targets: &[Target<'_>]) -> Result<(Vec<std::net::TcpStream>, usize)> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut streams = Vec::with_capacity(targets.len());
        let mut packet_size = packet::MIN_PACKET_SIZE;
        for target in targets {
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", target.port)).await?;
            tcp.set_nodelay(true)?;
            let (tcp, size) = login_plaintext(tcp, spec.user, spec.password, target.database).await.map_err(|e| {
                BenchError::new(format!("TDS login to {} on port {}: {e}", target.database, target.port))
            })?;
            packet_size = size;
            // into_std leaves the socket non-blocking.
            streams.push(tcp.into_std()?);
        }
        Ok((streams, packet_size))
    })
}

/// The request's packets, encoded once: `payload` cut to the packet size, the last packet
/// marked end-of-message.
pub(crate) fn frame_batch(payload: &[u8], packet_size: usize) -> Vec<u8> {
    frame(kind::SQL_BATCH, payload, packet_size)
}

/// A request of packet type `kind`, cut as [`frame_batch`] cuts a batch.
pub(crate) fn frame(kind: u8, payload: &[u8], packet_size: usize) -> Vec<u8> {
    let room = packet_size - HEADER_LEN;
    let mut out = Vec::with_capacity(payload.len() + HEADER_LEN * payload.len().div_ceil(room));
    let count = payload.chunks(room).count();
    for (i, chunk) in payload.chunks(room).enumerate() {
        let eom = if i + 1 == count { status::EOM } else { 0 };
        out.extend_from_slice(&[kind, eom]);
        out.extend_from_slice(&((chunk.len() + HEADER_LEN) as u16).to_be_bytes());
        out.extend_from_slice(&[0, 0, (i + 1) as u8, 0]); // spid, packet id, window
        out.extend_from_slice(chunk);
    }
    out
}

/// Starts a query: writes as much of the request as the socket takes (all of it, on
/// loopback, unless the request is large); `poll` finishes the rest.
fn send(c: &mut Conn, request: &[u8], now: Instant) -> Result<()> {
    c.written = 0;
    c.in_flight = true;
    c.sent_at = now;
    c.sent += 1;
    write_some(c, request)
}

fn write_some(c: &mut Conn, request: &[u8]) -> Result<()> {
    while c.written < request.len() {
        match c.stream.write(&request[c.written..]) {
            Ok(0) => return Err(BenchError::new("the server closed the connection")),
            Ok(n) => c.written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// What the generator keeps of a reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Reply {
    rows: u64,
    /// The first ERROR token's message (with its number), or a DONE's error bit.
    error: Option<String>,
}

/// Reads what the socket has and consumes whole packets; the reply once its
/// end-of-message packet is in.
fn read_reply(c: &mut Conn) -> Result<Option<Reply>> {
    loop {
        match c.stream.read(&mut c.buf[c.filled..]) {
            Ok(0) => return Err(BenchError::new("the server closed the connection")),
            Ok(n) => {
                c.filled += n;
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut pos = 0;
    let mut reply = None;
    while c.filled - pos >= HEADER_LEN {
        let header = &c.buf[pos..pos + HEADER_LEN];
        let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
        if header[0] != kind::REPLY || len < HEADER_LEN {
            return Err(BenchError::new(format!("unexpected packet (type {:#04x}, length {len})", header[0])));
        }
        if c.filled - pos < len {
            break;
        }
        let eom = header[1] & status::EOM != 0;
        let payload = &c.buf[pos + HEADER_LEN..pos + len];
        pos += len;
        if !eom {
            c.message.extend_from_slice(payload);
            continue;
        }
        if reply.is_some() || pos != c.filled {
            return Err(BenchError::new("the server sent more than one reply to a batch"));
        }
        reply = Some(if c.message.is_empty() {
            scan(payload, &mut c.columns)
        } else {
            c.message.extend_from_slice(payload);
            let r = scan(&c.message, &mut c.columns);
            c.message.clear();
            r
        }?);
    }
    c.buf.copy_within(pos..c.filled, 0);
    c.filled -= pos;
    Ok(reply)
}

/// How a column's values are framed in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Fixed(usize),
    /// A one-byte length (0: NULL for most types).
    ByteLen,
    /// A two-byte length (0xFFFF: NULL).
    UShortLen,
    /// PLP: an eight-byte total, then chunks each with a four-byte length, up to an empty one.
    Plp,
}

/// A cursor over a reply's payload.
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pub pos: usize,
    /// A read ran past the end of `data` (the token is incomplete, or malformed).
    pub short: bool,
}

fn malformed() -> BenchError {
    BenchError::new("malformed reply: a token runs past the end of the message")
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8]) -> Cursor<'a> {
        Cursor { data, pos: 0, short: false }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let Some(end) = self.pos.checked_add(n).filter(|&e| e <= self.data.len()) else {
            self.short = true;
            return Err(malformed());
        };
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    fn skip(&mut self, n: usize) -> Result<()> {
        self.take(n).map(|_| ())
    }

    pub(crate) fn value(&mut self, framing: Framing) -> Result<()> {
        match framing {
            Framing::Fixed(n) => self.skip(n),
            Framing::ByteLen => {
                let n = self.u8()?;
                self.skip(n.into())
            }
            Framing::UShortLen => match self.u16()? {
                0xFFFF => Ok(()),
                n => self.skip(n.into()),
            },
            Framing::Plp => {
                if self.u64()? == u64::MAX {
                    return Ok(());
                }
                loop {
                    match self.u32()? {
                        0 => return Ok(()),
                        n => self.skip(n as usize)?,
                    }
                }
            }
        }
    }
}

/// One column's framing from its TYPE_INFO (the cursor is after the type byte).
fn framing(r: &mut Cursor<'_>, ty: u8) -> Result<Framing> {
    Ok(match ty {
        code::NULL => Framing::Fixed(0),
        code::INT1 | code::BIT => Framing::Fixed(1),
        code::INT2 => Framing::Fixed(2),
        code::INT4 | code::DATETIM4 | code::FLT4 | code::MONEY4 => Framing::Fixed(4),
        code::INT8 | code::MONEY | code::DATETIME | code::FLT8 => Framing::Fixed(8),
        code::GUID | code::INTN | code::BITN | code::FLTN | code::MONEYN | code::DATETIMN => {
            r.skip(1)?;
            Framing::ByteLen
        }
        code::DECIMALN | code::NUMERICN => {
            r.skip(3)?;
            Framing::ByteLen
        }
        code::DATEN => Framing::ByteLen,
        code::TIMEN | code::DATETIME2N | code::DATETIMEOFFSETN => {
            r.skip(1)?;
            Framing::ByteLen
        }
        code::BIGVARBIN | code::BIGBINARY | code::BIGVARCHR | code::BIGCHAR | code::NVARCHAR | code::NCHAR => {
            let max = r.u16()?;
            if matches!(ty, code::BIGVARCHR | code::BIGCHAR | code::NVARCHAR | code::NCHAR) {
                r.skip(5)?; // collation
            }
            if max == 0xFFFF {
                Framing::Plp
            } else {
                Framing::UShortLen
            }
        }
        other => {
            return Err(BenchError::new(format!("the load generator does not decode columns of type {other:#04x}")))
        }
    })
}

/// What [`token`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    Row,
    /// DONE, DONEPROC or DONEINPROC: its status, its row count, whether it ends a batch's
    /// reply (a DONE without DONE_MORE) and whether it ends an RPC's (a DONEPROC without).
    Done {
        status: u16,
        count: u64,
        last: bool,
        last_of_rpc: bool,
    },
    /// An ERROR token's text.
    Error(String),
    /// COLMETADATA (`columns` now frames its rows) or a token skipped by its length.
    Other,
}

/// Reads one token at the cursor. A token that runs past the end of the data is an error
/// with the cursor marked [`Cursor::short`] (a streaming reader then waits for more).
pub(crate) fn token(r: &mut Cursor<'_>, columns: &mut Vec<Framing>) -> Result<Token> {
    let token = r.u8()?;
    Ok(match token {
        tokens::COLMETADATA => {
            columns.clear();
            let count = r.u16()?;
            if count != 0xFFFF {
                for _ in 0..count {
                    r.skip(4 + 2)?; // user type, flags
                    let ty = r.u8()?;
                    columns.push(framing(r, ty)?);
                    let name_chars = r.u8()?;
                    r.skip(2 * usize::from(name_chars))?;
                }
            }
            Token::Other
        }
        tokens::ROW => {
            for &f in columns.iter() {
                r.value(f)?;
            }
            Token::Row
        }
        tokens::NBCROW => {
            let bitmap = r.take(columns.len().div_ceil(8))?;
            for (i, &f) in columns.iter().enumerate() {
                if bitmap[i / 8] & (1 << (i % 8)) == 0 {
                    r.value(f)?;
                }
            }
            Token::Row
        }
        tokens::DONE | tokens::DONEPROC | tokens::DONEINPROC => {
            let status = r.u16()?;
            r.skip(2)?; // current command
            let count = r.u64()?;
            let more = status & tokens::done::MORE != 0;
            Token::Done {
                status,
                count,
                last: token == tokens::DONE && !more,
                last_of_rpc: token == tokens::DONEPROC && !more,
            }
        }
        tokens::ERROR => {
            let len = usize::from(r.u16()?);
            Token::Error(error_text(r.take(len)?))
        }
        tokens::INFO | tokens::ENVCHANGE | tokens::LOGINACK | tokens::ORDER | 0xA4 | 0xA5 => {
            let len = usize::from(r.u16()?);
            r.skip(len)?;
            Token::Other
        }
        tokens::RETURNSTATUS => {
            r.skip(4)?;
            Token::Other
        }
        other => return Err(BenchError::new(format!("the TDS reader does not decode token {other:#04x}"))),
    })
}

/// Scans one reply's tokens: counts rows, notes the first error, checks that it ends with
/// a final DONE. `columns` is scratch, reused from reply to reply.
fn scan(payload: &[u8], columns: &mut Vec<Framing>) -> Result<Reply> {
    let mut r = Cursor::new(payload);
    let mut reply = Reply::default();
    let mut final_done = false;
    while r.pos < payload.len() {
        if final_done {
            return Err(BenchError::new("tokens after the final DONE"));
        }
        match token(&mut r, columns)? {
            Token::Row => reply.rows += 1,
            Token::Done { status, last, .. } => {
                if status & tokens::done::ERROR != 0 && reply.error.is_none() {
                    reply.error = Some("the server ended the batch in error".to_string());
                }
                final_done = last;
            }
            Token::Error(text) => {
                reply.error.get_or_insert(text);
            }
            Token::Other => {}
        }
    }
    if !final_done {
        return Err(BenchError::new("a reply without its final DONE"));
    }
    Ok(reply)
}

/// "Msg 208: Invalid object name 'x'." from an ERROR token's body.
fn error_text(body: &[u8]) -> String {
    let mut r = Cursor::new(body);
    let parsed = (|| -> Result<String> {
        let number = r.u32()?;
        r.skip(2)?; // state, class
        let chars = usize::from(r.u16()?);
        let text = r.take(2 * chars)?;
        let units: Vec<u16> = text.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        Ok(format!("Msg {number}: {}", String::from_utf16_lossy(&units)))
    })();
    parsed.unwrap_or_else(|_| "an ERROR token the load generator could not read".to_string())
}

/// CPU seconds of the calling thread.
pub(crate) fn thread_cpu_seconds() -> f64 {
    // SAFETY: a zeroed timespec is valid for clock_gettime to fill.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_latencies() {
        let mut l: Vec<u32> = (1..=1000).rev().collect();
        assert_eq!(quantile_ms(&mut l, 0.99), 0.991);
        assert_eq!(quantile_ms(&mut l, 0.5), 0.501);
        assert_eq!(quantile_ms(&mut l, 1.0), 1.0);
        assert_eq!(quantile_ms(&mut [], 0.99), 0.0);
    }

    fn le16(v: u16) -> [u8; 2] {
        v.to_le_bytes()
    }

    /// COLMETADATA with one char(n) column named "n", `rows` ROWs of n 'A's, DONE(count).
    fn char_reply(n: u16, rows: u64) -> Vec<u8> {
        let mut p = vec![tokens::COLMETADATA];
        p.extend_from_slice(&le16(1));
        p.extend_from_slice(&[0, 0, 0, 0, 1, 0, code::BIGCHAR]);
        p.extend_from_slice(&le16(n));
        p.extend_from_slice(&[0x09, 0x04, 0xD0, 0x00, 0x34, 1, b'n', 0]);
        for _ in 0..rows {
            p.push(tokens::ROW);
            p.extend_from_slice(&le16(n));
            p.extend_from_slice(&vec![b'A'; n.into()]);
        }
        p.push(tokens::DONE);
        p.extend_from_slice(&le16(tokens::done::COUNT));
        p.extend_from_slice(&le16(0xC1));
        p.extend_from_slice(&rows.to_le_bytes());
        p
    }

    #[test]
    fn counts_rows_and_needs_the_final_done() {
        let mut cols = Vec::new();
        assert_eq!(scan(&char_reply(1000, 1), &mut cols).unwrap(), Reply { rows: 1, error: None });
        assert_eq!(scan(&char_reply(10, 3), &mut cols).unwrap().rows, 3);
        let whole = char_reply(10, 1);
        assert!(scan(&whole[..whole.len() - 12], &mut cols).is_err());
        assert!(scan(&whole[..whole.len() - 3], &mut cols).is_err());
    }

    #[test]
    fn an_error_token_is_an_error() {
        let text: Vec<u8> = "Invalid object name 'x'.".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let mut body = 208u32.to_le_bytes().to_vec();
        body.extend_from_slice(&[1, 16]);
        body.extend_from_slice(&le16((text.len() / 2) as u16));
        body.extend_from_slice(&text);
        body.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0]);
        let mut p = vec![tokens::ERROR];
        p.extend_from_slice(&le16(body.len() as u16));
        p.extend_from_slice(&body);
        p.push(tokens::DONE);
        p.extend_from_slice(&le16(tokens::done::ERROR));
        p.extend_from_slice(&[0; 10]);
        let reply = scan(&p, &mut Vec::new()).unwrap();
        assert_eq!(reply.rows, 0);
        assert_eq!(reply.error.as_deref(), Some("Msg 208: Invalid object name 'x'."));
    }
}
