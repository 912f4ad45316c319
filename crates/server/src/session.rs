//! One client connection: PRELOGIN (encryption negotiation, TLS) — or, for TDS 8.0 strict,
//! TLS first and PRELOGIN inside it — LOGIN7, then requests until the client leaves.
//!
//! Structure of a logged-in connection (see `transport` for why):
//! - while **idle**, the connection is an async task waiting in the reactor for its socket
//!   to become readable; it costs no thread;
//! - while **busy**, one blocking thread owns it (the [`Busy`] state: socket, session,
//!   transaction descriptors): it reads a request, executes it with a [`TokenSink`] that
//!   encodes results as tokens and writes full packets straight to the socket, and waits a
//!   little for the next request before handing the connection back to the reactor. A
//!   slow client therefore blocks only its own thread (back-pressure), never other
//!   sessions. An Attention that arrives while a request runs is noticed by the
//!   attention watchdog, which sets the session's cancel flag.
//!
//! Invariants:
//! - Every request gets exactly one response message, ending in a DONE/DONEPROC without
//!   DONE_MORE in a packet marked end-of-message. An attention gets a DONE with DONE_ATTN
//!   in a message of its own (after the response it interrupted, or alone when none was
//!   running).
//! - Malformed, truncated or oversized packets end this connection only (logged); a
//!   malformed request body (an RPC parameter this server cannot decode) fails that
//!   request with an error and the connection goes on.
//! - When the connection ends, however it ends, the session is closed on a blocking
//!   thread: an open transaction is rolled back and temp tables dropped.
//! - Before login completes, messages are bounded by a small size and the whole exchange
//!   by the login timeout; wrong credentials get error 18456 and nothing else (18486 for
//!   a login that is locked out). An address with many failed logins waits before its
//!   credentials are checked (see `throttle`).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tessera_errors::msg;

use bytes::BytesMut;
use parking_lot::Mutex;
use tessera_semantics::types::SqlType;
use tessera_sql::session::RpcParam;
use tessera_sql::{check_contained_login, ContainedLogin, Refusal};
use tessera_sql::{ResultSink, Session, SqlError};
use tokio::sync::OwnedSemaphorePermit;

use crate::handshake::{refuse, Handshake, Prelogged};
use crate::packet::{self, kind, status, Incoming, Limits, Message, PacketInput};
use crate::throttle::Verdict;
use crate::token_sink::TokenSink;
use crate::tokens::{self, done, Version};
use crate::transport::{self, LoginStream, Transport, Watch};
use crate::{bulk, login7, request, rpc, tm, ServerState};

/// Serves one TCP connection to its end. Errors are logged, never propagated. `pending`
/// is the connection's place among those not yet logged in, given up once it has.
pub async fn serve(
    state: Arc<ServerState>,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    pending: OwnedSemaphorePermit,
) {
    let _ = tcp.set_nodelay(true);
    let timeout = std::time::Duration::from_secs(state.config.login_timeout_secs);
    let deadline = std::time::Instant::now() + timeout;
    let login = tokio::time::timeout(timeout, login_phase(&state, tcp, peer, deadline)).await;
    drop(pending);
    let conn = match login {
        Ok(Ok(Some(c))) => c,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            if e.kind() != io::ErrorKind::UnexpectedEof {
                let text = || format!("Connection from {peer} closed during login: {e}");
                state.sampled.login_errors.line(&state.log, text);
            }
            return;
        }
        Err(_) => {
            let text = || format!("Login timeout for the connection from {peer}; closed.");
            state.sampled.login_timeouts.line(&state.log, text);
            return;
        }
    };
    let spid = conn.logged.spid;
    let session = conn.logged.session.clone();
    match request_loop(&state, conn).await {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
            ) => {}
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => state.log.session(
            spid,
            &format!(
                "Connection from {peer} closed: the client paused more than {} s inside a request (request_stall_secs).",
                state.config.request_stall_secs
            ),
        ),
        Err(e) => state.log.session(spid, &format!("Connection from {peer} closed: {e}")),
    }
    // Close on a blocking thread: rolling back may write to the log.
    let _ = tokio::task::spawn_blocking(move || {
        let mut s = session.lock();
        s.close();
    })
    .await;
}

/// A logged-in connection: its stream as login left it, and what it keeps from request
/// to request.
struct Connection {
    stream: LoginStream,
    logged: LoggedIn,
}

struct LoggedIn {
    session: Arc<Mutex<Session>>,
    spid: i32,
    version: Version,
    packet_size: usize,
    /// The current transaction descriptor (0 = none), echoed in ENVCHANGE 8/9/10.
    transaction: u64,
    next_descriptor: u64,
}

/// PRELOGIN (TLS first for a strict connection, or optional TLS after it for TDS 7.x),
/// LOGIN7 and the login response, by `deadline` (the login timeout). `Ok(None)` when the
/// client went away or was refused (already answered and logged).
async fn login_phase(
    state: &Arc<ServerState>,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    deadline: std::time::Instant,
) -> io::Result<Option<Connection>> {
    let local = tcp.local_addr()?;
    let handshake = Handshake {
        tls: state.tls.as_ref(),
        version_bytes: state.version_bytes,
        encrypt_login: state.config.encrypt_login,
        force_strict_encryption: state.config.force_strict_encryption,
    };
    let (stream, login_msg, encrypted, strict) = match handshake.prelogin(tcp).await? {
        Prelogged::Login { stream, login, encrypted, strict } => (stream, login, encrypted, strict),
        Prelogged::Gone => return Ok(None),
        Prelogged::Refused(why) => {
            state.log.session(0, &format!("Connection from {peer} refused: {why}."));
            return Ok(None);
        }
    };
    let mut stream = stream;
    if login_msg.kind != kind::LOGIN7 {
        return Err(packet::protocol(format!("expected LOGIN7, got packet type {:#04x}", login_msg.kind)));
    }
    let login = login7::parse(&login_msg.payload).map_err(|e| packet::protocol(e.0))?;
    // In TDS 8.0 the version comes from the TLS handshake (ALPN) and LOGIN7's is ignored
    // (MS-TDS 1.7); its features are TDS 7.4's.
    let version = if strict { Version::V7_4 } else { Version::negotiate(login.tds_version).unwrap_or(Version::V7_1) };

    // An address with many failed logins waits (a timer, holding no permit) or is refused
    // — refused, too, when the wait would outlast the connection's login timeout (less a
    // second for the hash): a clear 18456 rather than a closed connection.
    let now = std::time::Instant::now();
    let longest = deadline.saturating_duration_since(now).saturating_sub(std::time::Duration::from_secs(1));
    let (verdict, report) = state.throttle.admit(peer.ip(), now, longest);
    if let Some(report) = report {
        state.log.session(0, &report.line(peer.ip()));
    }
    match verdict {
        Verdict::Go => {}
        Verdict::Wait(wait) => tokio::time::sleep(wait).await,
        Verdict::Refuse => {
            let refused = login_failed(&login.user_name);
            refuse(&mut stream, &state.shared.server_name, version, &[refused]).await?;
            return Ok(None);
        }
    }
    // Credentials: the slow hash runs on a blocking thread, a bounded number at a time.
    let checked = if login.sspi {
        Err(Refusal::failed(58, "Windows authentication is not supported; use a SQL Server login."))
    } else {
        let _permit = state.login_permits.acquire().await.map_err(|_| io::Error::other("server stopping"))?;
        let st = state.clone();
        let (user, password, database) = (login.user_name.clone(), login.password.clone(), login.database.clone());
        tokio::task::spawn_blocking(move || {
            // A contained database's own users first, then the server's logins.
            match check_contained_login(&st.shared, &database, &user, &password) {
                Ok(ContainedLogin::Accepted(name, id)) => return Ok(Who::Contained(name, id)),
                Ok(ContainedLogin::Refused) => {
                    return Err(Refusal::failed(
                        8,
                        "Password did not match that for the user provided in the contained database.",
                    ))
                }
                Ok(ContainedLogin::NotContained) | Err(_) => {}
            }
            let policy = st.shared.lockout_policy();
            st.shared.logins.check(&user, &password, &policy).map(Who::Login)
        })
        .await
        .map_err(|e| io::Error::other(e.to_string()))?
    };
    let who = match checked {
        Ok(who) => who,
        Err(refusal) => {
            state.throttle.failure(peer.ip(), std::time::Instant::now());
            state.log.session(0, &format!("Error: {}, Severity: 14, State: {}.", refusal.number(), refusal.state));
            state.log.session(
                0,
                &format!(
                    "Login failed for user '{}'. Reason: {} [CLIENT: {}]",
                    login.user_name,
                    refusal.reason,
                    peer.ip()
                ),
            );
            let refused = refusal.error.with(&[&login.user_name]).at_line(1);
            refuse(&mut stream, &state.shared.server_name, version, &[refused]).await?;
            return Ok(None);
        }
    };
    // No database asked for: the login's default database.
    let explicit = !login.database.is_empty();
    let (login_name, database, contained) = match who {
        Who::Contained(user, id) => (user, login.database.clone(), Some(id)),
        Who::Login(a) => (a.name, if explicit { login.database.clone() } else { a.default_database }, None),
    };
    if !state.fence.admits(&database) {
        let e = msg::DATABASE_NOT_CURRENTLY_AVAILABLE.with(&[&database, &state.shared.server_name]);
        state.log.session(0, &format!("Login failed for user '{}'. Reason: database '{database}' is not this server's to serve now (tenant directory). [CLIENT: {}]", login.user_name, peer.ip()));
        refuse(&mut stream, &state.shared.server_name, version, &[e]).await?;
        return Ok(None);
    }
    let shared = state.shared.clone();
    let (db, host, app, name) = (database.clone(), login.host_name.clone(), login.app_name.clone(), login_name.clone());
    let created = tokio::task::spawn_blocking(move || {
        let session = match contained {
            Some(user_id) => Session::contained(shared, &db, &name, user_id),
            None => Session::new(shared, &name, &db),
        };
        session.map(|mut s| {
            s.set_client(&host, &app);
            s.classify();
            s
        })
    })
    .await
    .map_err(|e| io::Error::other(e.to_string()))?;
    let mut session = match created {
        Ok(s) => s,
        Err(_) if explicit => {
            let e4060 = msg::CANNOT_OPEN_LOGIN_DATABASE.with(&[&database]);
            state.log.session(0, &format!("Login failed for user '{}'. Reason: Failed to open the explicitly specified database '{database}'. [CLIENT: {}]", login.user_name, peer.ip()));
            refuse(&mut stream, &state.shared.server_name, version, &[e4060, login_failed(&login.user_name)]).await?;
            return Ok(None);
        }
        Err(_) => {
            let e4064 = msg::DEFAULT_DATABASE_UNAVAILABLE.err();
            state.log.session(0, &format!("Login failed for user '{}'. Reason: Failed to open the database '{database}' configured in the login object while revalidating the login on the connection. [CLIENT: {}]", login.user_name, peer.ip()));
            refuse(&mut stream, &state.shared.server_name, version, &[e4064, login_failed(&login.user_name)]).await?;
            return Ok(None);
        }
    };
    let spid = session.state.spid;
    let database = session.database().to_string();
    let requested = login.packet_size as usize;
    let packet_size =
        if requested == 0 { 4096 } else { requested.clamp(packet::MIN_PACKET_SIZE, state.config.max_packet_size) };
    session.set_connection(tessera_sql::ConnectionInfo {
        encrypted,
        client_address: peer.ip().to_string(),
        client_port: peer.port(),
        local_address: local.ip().to_string(),
        local_port: local.port(),
        protocol_version: version.0,
        packet_size: packet_size as u32,
    });

    let mut out = BytesMut::new();
    tokens::env_change_text(&mut out, tokens::ENV_DATABASE, &database, "master");
    // SQL Server sends the login's two messages at line 1 (pymssql's message handler tests read it).
    let context_changed = msg::DATABASE_CONTEXT_CHANGED.with(&[&database]).at_line(1);
    tokens::message(&mut out, version, &context_changed, &state.shared.server_name);
    tokens::env_change_collation(&mut out);
    tokens::env_change_text(&mut out, tokens::ENV_LANGUAGE, "us_english", "");
    tokens::message(&mut out, version, &msg::LANGUAGE_CHANGED.err().at_line(1), &state.shared.server_name);
    tokens::login_ack(&mut out, version, "Microsoft SQL Server", state.version_bytes);
    tokens::env_change_text(&mut out, tokens::ENV_PACKET_SIZE, &packet_size.to_string(), "4096");
    tokens::done(&mut out, version, tokens::DONE, done::FINAL, 0, 0);
    packet::write_message(&mut stream, kind::REPLY, &out, 4096).await?;
    Ok(Some(Connection {
        stream,
        logged: LoggedIn {
            session: Arc::new(Mutex::new(session)),
            spid,
            version,
            packet_size,
            transaction: 0,
            next_descriptor: 1,
        },
    }))
}

/// The error a refused login gets when the reason is not for the client to know (18456).
fn login_failed(user: &str) -> SqlError {
    msg::LOGIN_FAILED.with(&[&user]).at_line(1)
}

/// Whom a login's credentials named.
enum Who {
    /// A server login.
    Login(tessera_sql::Accepted),
    /// A contained database's user: (its name, its principal id).
    Contained(String, i32),
}

/// A unit of work for the busy thread.
type Job = Box<dyn FnOnce(&mut Session, &mut TokenSink)>;

/// Serves the connection until it ends: waits in the reactor while idle, hands it to a
/// blocking thread while busy.
async fn request_loop(state: &Arc<ServerState>, conn: Connection) -> io::Result<()> {
    let transport = Transport::from_login(conn.stream)?;
    // A client that pauses inside a request holds a thread: not for longer than this.
    let stall = std::time::Duration::from_secs(state.config.request_stall_secs);
    transport.socket().set_read_timeout(Some(stall))?;
    let (cancel, spid) = {
        let session = conn.logged.session.lock();
        (session.cancel_handle(), session.state.spid)
    };
    let watch = Watch::new(&transport, cancel.clone());
    let _listed = Listed::new(state, &cancel, spid, transport.socket().try_clone()?);
    let mut busy = Busy {
        state: state.clone(),
        limits: Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: state.config.max_message_mb << 20 },
        conn: conn.logged,
        cancel,
        watch,
        transport,
    };
    loop {
        if !busy.transport.buffered() {
            transport::idle_until_readable(&busy.transport).await?;
        }
        let working = Working::start(state);
        let (b, outcome, working) = tokio::task::spawn_blocking(move || {
            let outcome = busy.serve();
            // Dropped in this order if shutdown no longer waits for the result: the
            // connection (its session rolls back), then the count shutdown waits on.
            (busy, outcome, working)
        })
        .await
        .map_err(|e| io::Error::other(format!("request failed: {e}")))?;
        drop(working);
        busy = b;
        if !outcome? {
            return Ok(());
        }
    }
}

/// A connection's cancel flag in `ServerState::cancels` while the connection lives.
struct Listed(Arc<ServerState>, Arc<AtomicBool>, i32);

impl Listed {
    fn new(state: &Arc<ServerState>, cancel: &Arc<AtomicBool>, spid: i32, socket: std::net::TcpStream) -> Listed {
        state.cancels.lock().push(cancel.clone());
        state.connections.lock().insert(spid, (cancel.clone(), socket));
        Listed(state.clone(), cancel.clone(), spid)
    }
}

impl Drop for Listed {
    fn drop(&mut self) {
        self.0.cancels.lock().retain(|c| !Arc::ptr_eq(c, &self.1));
        self.0.connections.lock().remove(&self.2);
    }
}

/// Counts a connection served by a thread in `ServerState::busy` while it lives.
struct Working(Arc<ServerState>);

impl Working {
    fn start(state: &Arc<ServerState>) -> Working {
        state.busy.fetch_add(1, Ordering::SeqCst);
        Working(state.clone())
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A connection while a thread serves it.
struct Busy {
    state: Arc<ServerState>,
    limits: Limits,
    conn: LoggedIn,
    cancel: Arc<AtomicBool>,
    /// Declared before the transport: the watchdog forgets the socket before it closes.
    watch: Watch,
    transport: Transport,
}

impl Busy {
    /// Serves requests while they keep coming: `Ok(true)` when the connection goes idle,
    /// `Ok(false)` when the client left.
    fn serve(&mut self) -> io::Result<bool> {
        loop {
            if self.state.stopping.load(Ordering::SeqCst) {
                return Ok(false);
            }
            if !transport::wait_readable(&mut self.transport)? {
                return Ok(true);
            }
            let Some(first) = packet::read_header_blocking(&mut self.transport)? else {
                return Ok(false);
            };
            let go_on = if first[0] == kind::RPC || first[0] == kind::BULK_LOAD {
                self.handle_streamed(first)?
            } else {
                let read =
                    packet::read_request_after(&mut self.transport, &self.limits, first, &self.state.request_memory);
                match read? {
                    Incoming::Message(msg, _held) => self.handle(msg)?,
                    Incoming::TooLarge { status, bytes, .. } => {
                        let why = format!(
                            "a request of {bytes} bytes is larger than the server's limit of {} MB (max_message_mb)",
                            self.state.config.max_message_mb
                        );
                        self.run(first[0], resets(status), bad_request(msg::TDS_STREAM_INCORRECT.with(&[&why])))?
                    }
                    Incoming::NoMemory { status, .. } => {
                        self.run(first[0], resets(status), bad_request(no_request_memory()))?
                    }
                }
            };
            if !go_on {
                return Ok(false);
            }
        }
    }

    /// An RPC request or a bulk load's rows, decoded as its packets arrive (long values go
    /// to spool files in the data directory, see `spool`), then run; false when the
    /// client left.
    fn handle_streamed(&mut self, first: [u8; packet::HEADER_LEN]) -> io::Result<bool> {
        let version = self.conn.version;
        let spool = self.state.spool.clone();
        let mut input = PacketInput::start(&mut self.transport, self.limits, first, spool, &self.state.request_memory)?;
        let (job, failed): (Job, bool) = if first[0] == kind::RPC {
            match request::decode_rpc_from(&mut input, version) {
                Ok(calls) => (Box::new(move |s: &mut Session, sink: &mut TokenSink| run_rpc(s, sink, calls)), false),
                Err(_) if input.out_of_memory() => (bad_request(no_request_memory()), true),
                Err(e) => (bad_request(msg::TDS_RPC_STREAM_INCORRECT.with(&[&e])), true),
            }
        } else {
            let decoded = bulk::decode_from(&mut input, version);
            let failed = decoded.is_err();
            let job = Box::new(move |s: &mut Session, sink: &mut TokenSink| {
                match s.take_bulk_target() {
                    Some(target) => bulk::load(s, &target, decoded, sink),
                    None => sink.message(&not_announced()),
                }
                sink.finish_batch();
            });
            (job, failed)
        };
        if let Some(e) = input.failure() {
            return Err(e);
        }
        let (status, ignored) = (input.status(), input.ignored());
        if failed || ignored {
            // The next request starts after this one's last packet.
            input.drain()?;
        }
        if ignored {
            // Abandoned by the client while it was sending it: nothing runs, and a DONE
            // tells the client the server is ready for the next one.
            self.reply_done(done::FINAL)?;
            return Ok(true);
        }
        // The decoded request's memory stays charged until it has run.
        let _held = input.into_charge();
        self.run(first[0], resets(status), job)
    }

    /// One request and its whole response; false when the client left.
    fn handle(&mut self, msg: Message) -> io::Result<bool> {
        let version = self.conn.version;
        let reset = resets(msg.status);
        if msg.status & status::IGNORE != 0 {
            // A request the client cancelled while sending it: nothing runs, and a DONE
            // tells the client the server is ready for the next one.
            self.reply_done(done::FINAL)?;
            return Ok(true);
        }
        let job: Job = match msg.kind {
            kind::ATTENTION => {
                // Nothing running: acknowledge at once.
                self.cancel.store(false, Ordering::Relaxed);
                self.reply_done(done::ATTN)?;
                return Ok(true);
            }
            kind::SQL_BATCH => match request::decode_batch(&msg.payload, version) {
                Ok(text) => Box::new(move |s: &mut Session, sink: &mut TokenSink| {
                    s.execute(&text, sink);
                    sink.finish_batch();
                }),
                Err(e) => bad_request(msg::TDS_STREAM_INCORRECT.with(&[&e])),
            },
            kind::TRANSACTION_MANAGER => match request::decode_tm(&msg.payload, version) {
                Ok(tm::Request::Unsupported(k)) => bad_request(msg::DISTRIBUTED_TRANSACTIONS_NOT_SUPPORTED.with(&[&k])),
                Ok(req) => Box::new(move |s: &mut Session, sink: &mut TokenSink| {
                    for text in req.statements() {
                        if s.execute(&text, sink) {
                            break;
                        }
                    }
                    sink.finish_batch();
                }),
                Err(e) => bad_request(msg::TDS_STREAM_INCORRECT.with(&[&e])),
            },
            k => return Err(packet::protocol(format!("unexpected packet type {k:#04x} after login"))),
        };
        self.run(msg.kind, reset, job)
    }

    /// Answers with one DONE token of `status`, when nothing runs.
    fn reply_done(&mut self, status: u16) -> io::Result<()> {
        let mut out = BytesMut::new();
        tokens::done(&mut out, self.conn.version, tokens::DONE, status, 0, 0);
        let mut framed = BytesMut::new();
        packet::frame(kind::REPLY, &out, self.conn.packet_size, true, &mut 1, &mut framed);
        io::Write::write_all(&mut self.transport, &framed)?;
        io::Write::flush(&mut self.transport)
    }

    /// Runs a job of a request of packet type `packet_type` and writes its whole response,
    /// counted and timed in `ServerState::requests`; false when the client left.
    fn run(&mut self, packet_type: u8, reset: bool, job: Job) -> io::Result<bool> {
        let started = std::time::Instant::now();
        let served = self.respond(reset, job);
        self.state.requests.record(packet_type, started.elapsed());
        served
    }

    /// Runs a job and writes its whole response; false when the client left.
    fn respond(&mut self, reset: bool, job: Job) -> io::Result<bool> {
        // A shutdown that began meanwhile cancels this request too.
        self.cancel.store(self.state.stopping.load(Ordering::SeqCst), Ordering::Relaxed);
        let attention_read = self.transport.attention_waiting();
        let server = self.state.shared.server_name.clone();
        let c = &mut self.conn;
        let mut sink = TokenSink::new(c.version, c.packet_size, &mut self.transport, self.cancel.clone(), server);
        sink.transaction = c.transaction;
        sink.next_descriptor = c.next_descriptor;
        sink.stopping = Some(self.state.stopping.clone());
        self.watch.running(true);
        if attention_read {
            self.watch.attention_read();
        }
        let (keep, fatal) = {
            let mut s = c.session.lock();
            let keep = !reset || sink.reset(&mut s);
            if keep {
                job(&mut s, &mut sink);
            }
            (keep, s.must_close())
        };
        self.watch.running(false);
        c.transaction = sink.transaction;
        c.next_descriptor = sink.next_descriptor;
        if !keep || fatal {
            // The reset was refused, or a fatal error (severity 20 or more) was raised:
            // the client gets why, then the connection ends.
            sink.finish(false)?;
            return Ok(false);
        }
        if self.state.stopping.load(Ordering::SeqCst) {
            // The shutdown cancelled the request, not the client: no Attention to read.
            // The client gets the response (the cancelled request's error), then the
            // connection ends.
            sink.finish(false)?;
            return Ok(false);
        }
        // The watchdog saw bytes from the client while the request ran: an Attention (the
        // only message a client may send then), or its end of stream.
        let mut attention = false;
        if self.cancel.swap(false, Ordering::Relaxed) && sink.write_error.is_none() {
            match sink.read_message(&self.limits)? {
                Some(m) if m.kind == kind::ATTENTION => attention = true,
                Some(m) => {
                    return Err(packet::protocol(format!("packet type {:#04x} while a request was running", m.kind)))
                }
                None => return Ok(false),
            }
        }
        sink.finish(attention)?;
        Ok(true)
    }
}

/// A BULK_LOAD message with no `INSERT BULK` before it.
fn not_announced() -> SqlError {
    msg::TDS_STREAM_INCORRECT.with(&[&"a bulk load (BULK_LOAD) must follow an INSERT BULK statement"])
}

/// Whether a request's first packet `status` asks for the connection to be reset.
fn resets(status: u8) -> bool {
    status & (status::RESET_CONNECTION | status::RESET_CONNECTION_SKIP_TRAN) != 0
}

/// A request the requests' memory budget had no room for (SQL Server's 701).
fn no_request_memory() -> SqlError {
    msg::OUT_OF_MEMORY.with(&[&"in resource pool 'internal' to run this query"]).with_severity(17)
}

fn bad_request(error: SqlError) -> Job {
    Box::new(move |_s: &mut Session, sink: &mut TokenSink| {
        sink.message(&error);
        sink.finish_batch();
    })
}

fn run_rpc(s: &mut Session, sink: &mut TokenSink, calls: Vec<rpc::Call>) {
    let n = calls.len();
    for (i, call) in calls.into_iter().enumerate() {
        sink.in_proc = true;
        let outputs: Vec<(u16, String, SqlType)> = call
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.output)
            .map(|(i, p)| {
                (
                    i as u16,
                    if p.name.starts_with('@') || p.name.is_empty() { p.name.clone() } else { format!("@{}", p.name) },
                    p.ty,
                )
            })
            .collect();
        let params = call
            .params
            .into_iter()
            .map(|p| {
                // Some clients (tiberius) send parameter names without their '@'.
                let name = match p.name {
                    n if n.is_empty() => None,
                    n if n.starts_with('@') => Some(n),
                    n => Some(format!("@{n}")),
                };
                RpcParam { name, value: p.value, ty: p.ty, output: p.output, table: p.table }
            })
            .collect();
        sink.no_metadata = call.options & rpc::OPTION_NO_METADATA != 0;
        let outcome = s.execute_rpc(&call.procedure, params, sink);
        sink.in_proc = false;
        sink.no_metadata = false;
        for ((ordinal, name, ty), (_, value, vty)) in outputs.iter().zip(outcome.outputs.iter()) {
            let _ = ty;
            sink.return_value(*ordinal, name, vty, value);
        }
        sink.finish_proc(outcome.failed, i + 1 < n);
        if sink.cancel.load(Ordering::Relaxed) {
            break;
        }
    }
}
