//! A logged-in connection's socket as a busy session's thread uses it: blocking reads and
//! writes (plain TCP, or TLS through rustls' blocking stream), a readiness check that does
//! not block, and the attention watchdog.
//!
//! Why blocking I/O after login: a request served by async tasks crossed threads four
//! times (reader task → connection loop → blocking executor → writer), and on a VM each
//! crossing to an idle CPU costs tens of microseconds — more than executing a point
//! select. A busy connection is therefore served by one thread from the request's first
//! byte to the response's last: it reads, executes and writes, then waits a little for
//! the next request (spinning briefly when a CPU is free, see [`wait_readable`]). Idle
//! connections go back to the async reactor and cost no thread.
//!
//! A plain socket is read through a buffer ([`Plain`]): a request's header and body
//! usually arrive in one `recv`, and waiting for the next request tries a non-blocking
//! `recv` rather than only polling, so a point select costs two system calls (a `recv` and
//! a `send`) where it cost four.
//!
//! Invariants:
//! - The socket is in blocking mode while a thread owns the connection. Bytes read ahead
//!   stay in the transport's buffer, which [`Transport::buffered`] reports, and the
//!   reactor is asked to wait only when it is empty (its readiness check, poll(2) or
//!   MSG_PEEK, consumes nothing), so no request is lost between the thread and the
//!   reactor. An Attention read ahead with the request it interrupts is reported to the
//!   watchdog ([`Transport::attention_waiting`], [`Watch::attention_read`]), which cancels
//!   the request as if it had seen the Attention on the socket.
//! - At most [`MAX_SPINNERS`] threads spin at once, and at most [`MAX_PARKED`] threads
//!   block waiting for a next request; beyond that a connection goes idle at once.
//! - A request that has run for [`WATCH_AFTER`] is watched: bytes from its client (an
//!   Attention) or the client's end of stream set its cancel flag.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustls::{ServerConnection, StreamOwned};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::tls::PreloginWrapped;

/// How long a thread spins (yielding) for the next request before it blocks.
const SPIN: Duration = Duration::from_micros(200);
/// How long a thread blocks for the next request before the connection goes idle.
const PARK: Duration = Duration::from_millis(500);
/// Threads spinning at once: one CPU's worth on small machines.
static MAX_SPINNERS: OnceLock<usize> = OnceLock::new();
/// Threads blocked waiting for a next request at once.
pub const MAX_PARKED: usize = 128;
/// A request running longer than this is watched for an Attention.
pub const WATCH_AFTER: Duration = Duration::from_millis(5);

static SPINNERS: AtomicUsize = AtomicUsize::new(0);
static PARKED: AtomicUsize = AtomicUsize::new(0);
/// Requests executing right now, server-wide: spinning only pays while CPUs are idle.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

fn max_spinners() -> usize {
    *MAX_SPINNERS.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        (cpus / 2).max(1)
    })
}

/// The connection's byte stream after login.
pub enum Transport {
    Plain(Plain),
    Tls(Box<StreamOwned<ServerConnection, std::net::TcpStream>>),
}

/// Bytes of a plain socket read ahead: a default-size request with room to spare.
const READ_AHEAD_BYTES: usize = 16 << 10;

/// A plain TCP socket with a read buffer.
pub struct Plain {
    stream: std::net::TcpStream,
    buf: Box<[u8]>,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// A non-blocking read saw the end of the stream.
    eof: bool,
}

impl Plain {
    fn new(stream: std::net::TcpStream) -> Plain {
        Plain { stream, buf: vec![0; READ_AHEAD_BYTES].into_boxed_slice(), start: 0, end: 0, eof: false }
    }

    fn unread(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Reads what the socket has without blocking: true when there are bytes to read (or
    /// the peer closed).
    fn try_fill(&mut self) -> io::Result<bool> {
        if self.start < self.end || self.eof {
            return Ok(true);
        }
        // SAFETY: `buf` is valid for writes of its length for the call's duration.
        let n = unsafe {
            libc::recv(self.stream.as_raw_fd(), self.buf.as_mut_ptr().cast(), self.buf.len(), libc::MSG_DONTWAIT)
        };
        match n {
            0 => {
                self.eof = true;
                Ok(true)
            }
            n if n > 0 => {
                (self.start, self.end) = (0, n as usize);
                Ok(true)
            }
            _ => match io::Error::last_os_error() {
                e if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => Ok(false),
                e => Err(e),
            },
        }
    }
}

impl Read for Plain {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.start == self.end {
            if self.eof {
                return Ok(0);
            }
            if out.len() >= self.buf.len() {
                return self.stream.read(out);
            }
            let n = self.stream.read(&mut self.buf)?;
            (self.start, self.end) = (0, n);
        }
        let n = out.len().min(self.end - self.start);
        out[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        Ok(n)
    }
}

/// What login produced: the async stream the login phase used.
pub enum LoginStream {
    Plain(tokio::net::TcpStream),
    /// TDS 7.x TLS, its handshake carried in PRELOGIN packets.
    Tls(Box<tokio_rustls::server::TlsStream<PreloginWrapped<tokio::net::TcpStream>>>),
    /// TDS 8.0 strict: TLS from the connection's first byte.
    Strict(Box<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>),
}

impl AsyncRead for LoginStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LoginStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            LoginStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            LoginStream::Strict(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for LoginStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            LoginStream::Plain(s) => Pin::new(s).poll_write(cx, data),
            LoginStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, data),
            LoginStream::Strict(s) => Pin::new(s.as_mut()).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LoginStream::Plain(s) => Pin::new(s).poll_flush(cx),
            LoginStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            LoginStream::Strict(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LoginStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            LoginStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            LoginStream::Strict(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

impl Transport {
    /// Takes the socket out of the reactor and makes it blocking.
    pub fn from_login(stream: LoginStream) -> io::Result<Transport> {
        let blocking = |tcp: tokio::net::TcpStream| -> io::Result<std::net::TcpStream> {
            let std = tcp.into_std()?;
            std.set_nonblocking(false)?;
            Ok(std)
        };
        Ok(match stream {
            LoginStream::Plain(tcp) => Transport::Plain(Plain::new(blocking(tcp)?)),
            LoginStream::Tls(tls) => {
                let (wrapped, conn) = tls.into_inner();
                let tcp = wrapped.into_raw()?;
                Transport::Tls(Box::new(StreamOwned::new(conn, blocking(tcp)?)))
            }
            LoginStream::Strict(tls) => {
                let (tcp, conn) = tls.into_inner();
                Transport::Tls(Box::new(StreamOwned::new(conn, blocking(tcp)?)))
            }
        })
    }

    pub fn socket(&self) -> &std::net::TcpStream {
        match self {
            Transport::Plain(p) => &p.stream,
            Transport::Tls(s) => &s.sock,
        }
    }

    /// Request bytes already read from the socket (and decrypted), waiting to be consumed.
    pub fn buffered(&mut self) -> bool {
        match self {
            Transport::Plain(p) => p.start < p.end || p.eof,
            Transport::Tls(s) => s.conn.process_new_packets().is_ok_and(|st| st.plaintext_bytes_to_read() > 0),
        }
    }

    /// Whether an Attention packet was read ahead, after the request just read: the
    /// client cancelled that request before it began.
    pub fn attention_waiting(&self) -> bool {
        match self {
            Transport::Plain(p) => p.unread().first() == Some(&crate::packet::kind::ATTENTION),
            Transport::Tls(_) => false,
        }
    }

    /// Whether the next request has arrived, reading it if it has, without blocking.
    fn ready(&mut self) -> io::Result<bool> {
        match self {
            Transport::Plain(p) => p.try_fill(),
            Transport::Tls(_) => poll_readable(self.socket().as_raw_fd(), Duration::ZERO),
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(p) => p.stream.write(buf),
            Transport::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(p) => p.stream.flush(),
            Transport::Tls(s) => s.flush(),
        }
    }
}

/// A raw descriptor for the reactor to watch while the connection is idle (it does not
/// own or close the descriptor).
struct WatchFd(RawFd);

impl AsRawFd for WatchFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Waits in the reactor, costing no thread, until an idle connection has bytes to read
/// (or its peer closed). The socket is registered only for the wait.
pub async fn idle_until_readable(t: &Transport) -> io::Result<()> {
    let fd = WatchFd(t.socket().as_raw_fd());
    // SAFETY: `t` owns the descriptor and outlives the registration, which is dropped at
    // the end of this function.
    let idle = unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }?;
    idle.readable().await?.clear_ready();
    Ok(())
}

/// Whether `fd` has bytes to read (or its peer closed), waiting at most `timeout`.
fn poll_readable(fd: RawFd, timeout: Duration) -> io::Result<bool> {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the call's duration.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    match n {
        n if n < 0 => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// Decrements a counter when dropped.
struct Slot(&'static AtomicUsize);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn take_slot(counter: &'static AtomicUsize, max: usize) -> Option<Slot> {
    counter
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1))
        .ok()
        .map(|_| Slot(counter))
}

/// Waits for the next request on a busy connection: true when it has bytes (or its peer
/// closed), false when the connection should go idle. Spins (yielding the CPU to anything
/// runnable) while no request is executing and a spinner slot is free — under load the
/// CPUs are better spent executing — then blocks while a parking slot is free.
pub fn wait_readable(t: &mut Transport) -> io::Result<bool> {
    if t.buffered() {
        return Ok(true);
    }
    let fd = t.socket().as_raw_fd();
    let spin = if RUNNING.load(Ordering::Relaxed) == 0 { take_slot(&SPINNERS, max_spinners()) } else { None };
    if let Some(_spin) = spin {
        let start = Instant::now();
        while start.elapsed() < SPIN {
            if t.ready()? {
                return Ok(true);
            }
            std::thread::yield_now();
        }
    }
    match take_slot(&PARKED, MAX_PARKED) {
        Some(_park) => poll_readable(fd, PARK),
        None => Ok(false),
    }
}

/// One watched request: when it started (0 = not running), whether its Attention was
/// read ahead with it, and how to cancel it.
pub struct Watched {
    fd: RawFd,
    started: AtomicU64,
    attention_read: AtomicBool,
    cancel: Arc<AtomicBool>,
}

/// A connection's entry in the watchdog; removed when dropped (before the socket closes).
pub struct Watch(Arc<Watched>);

impl Watch {
    pub fn new(t: &Transport, cancel: Arc<AtomicBool>) -> Watch {
        let w = Arc::new(Watched {
            fd: t.socket().as_raw_fd(),
            started: AtomicU64::new(0),
            attention_read: AtomicBool::new(false),
            cancel,
        });
        watchdog().lock().push(w.clone());
        Watch(w)
    }

    /// Marks the running request's Attention as read already (it came in one read with the
    /// request): the watchdog cancels the request as if it had seen it on the socket.
    pub fn attention_read(&self) {
        self.0.attention_read.store(true, Ordering::Relaxed);
    }

    /// Marks the start (`true`) or end of a request.
    pub fn running(&self, on: bool) {
        if !on {
            self.0.attention_read.store(false, Ordering::Relaxed);
        }
        let v = if on { epoch().elapsed().as_nanos().max(1) as u64 } else { 0 };
        let was = self.0.started.swap(v, Ordering::Relaxed);
        match (was == 0, on) {
            (true, true) => {
                RUNNING.fetch_add(1, Ordering::Relaxed);
            }
            (false, false) => {
                RUNNING.fetch_sub(1, Ordering::Relaxed);
            }
            _ => debug_assert!(false, "running({on}) twice"),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        watchdog().lock().retain(|w| !Arc::ptr_eq(w, &self.0));
    }
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The watched connections, and the thread that looks at them every few milliseconds.
fn watchdog() -> &'static Mutex<Vec<Arc<Watched>>> {
    static LIST: OnceLock<Mutex<Vec<Arc<Watched>>>> = OnceLock::new();
    LIST.get_or_init(|| {
        std::thread::Builder::new()
            .name("tessera-attention".into())
            .spawn(|| loop {
                std::thread::sleep(WATCH_AFTER);
                let now = epoch().elapsed().as_nanos() as u64;
                let list = watchdog().lock();
                for w in list.iter() {
                    let started = w.started.load(Ordering::Relaxed);
                    if started == 0 || now.saturating_sub(started) < WATCH_AFTER.as_nanos() as u64 {
                        continue;
                    }
                    let mut b = 0u8;
                    // SAFETY: the descriptor stays open while its entry is listed (Watch is
                    // dropped before the socket); one byte buffer, peek only.
                    let n =
                        unsafe { libc::recv(w.fd, (&mut b as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
                    if n >= 0 || w.attention_read.load(Ordering::Relaxed) {
                        // Bytes (an Attention) or the client's end of stream.
                        w.cancel.store(true, Ordering::Relaxed);
                    }
                }
            })
            .expect("start the attention watchdog thread");
        Mutex::new(Vec::new())
    })
}
