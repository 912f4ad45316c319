//! One client connection: PRELOGIN (encryption negotiation, TLS), LOGIN7, then requests
//! until the client leaves.
//!
//! Structure of a logged-in connection:
//! - a **reader task** owns the read half and turns packets into whole messages, handed
//!   over a small bounded channel (so a flooding client is throttled by TCP, not buffered).
//!   It sets the session's cancel flag the moment an Attention packet arrives, so a running
//!   batch stops without waiting for the connection loop;
//! - the **connection loop** owns the write half and the [`Session`] (behind a mutex that
//!   only one request at a time takes). A request runs on a blocking thread
//!   (`spawn_blocking`) with a [`TokenSink`] that encodes results as tokens and ships full
//!   packets back over a bounded channel, which the loop writes to the socket. A slow
//!   client therefore stalls only its own request (back-pressure), never other sessions.
//!
//! Invariants:
//! - Every request gets exactly one response message, ending in a DONE/DONEPROC without
//!   DONE_MORE in a packet marked end-of-message. An attention gets a DONE with DONE_ATTN
//!   (inside the response it interrupted, or as its own message when none was running).
//! - Malformed, truncated or oversized packets end this connection only (logged); a
//!   malformed request body (an RPC parameter this server cannot decode) fails that
//!   request with an error and the connection goes on.
//! - When the connection ends, however it ends, the session is closed on a blocking
//!   thread: an open transaction is rolled back and temp tables dropped.
//! - Before login completes, messages are bounded by a small size and the whole exchange
//!   by the login timeout; wrong credentials get error 18456 and nothing else.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tessera_sql::bind::OutputColumn;
use tessera_sql::logins::Refusal;
use tessera_sql::output::EnvChange;
use tessera_sql::session::RpcParam;
use tessera_sql::types::{SqlType, Value};
use tessera_sql::{ResultSink, Session, SqlError};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::packet::{self, kind, status, Limits, Message};
use crate::prelogin::{self, ENCRYPT_NOT_SUP, ENCRYPT_OFF, ENCRYPT_ON};
use crate::tls::PreloginWrapped;
use crate::tokens::{self, done, Version};
use crate::{bulk, login7, request, rpc, tm, ServerState};

pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Messages before login are small: PRELOGIN and LOGIN7 fit in a few KiB.
const LOGIN_LIMITS: Limits = Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: 128 << 10 };

/// Packets queued between the executing thread and the socket writer.
const OUTPUT_QUEUE: usize = 4;

/// Serves one TCP connection to its end. Errors are logged, never propagated.
pub async fn serve(state: Arc<ServerState>, tcp: tokio::net::TcpStream, peer: SocketAddr) {
    let _ = tcp.set_nodelay(true);
    let timeout = std::time::Duration::from_secs(state.config.login_timeout_secs);
    let login = tokio::time::timeout(timeout, login_phase(&state, tcp, peer)).await;
    let conn = match login {
        Ok(Ok(Some(c))) => c,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            if e.kind() != io::ErrorKind::UnexpectedEof {
                state.log.session(0, &format!("Connection from {peer} closed during login: {e}"));
            }
            return;
        }
        Err(_) => {
            state.log.session(0, &format!("Login timeout for the connection from {peer}; closed."));
            return;
        }
    };
    let spid = conn.spid;
    let session = conn.session.clone();
    match request_loop(&state, conn).await {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
            ) => {}
        Err(e) => state.log.session(spid, &format!("Connection from {peer} closed: {e}")),
    }
    // Close on a blocking thread: rolling back may write to the log.
    let _ = tokio::task::spawn_blocking(move || {
        let mut s = session.lock();
        s.close();
    })
    .await;
}

struct Connection {
    stream: Box<dyn Stream>,
    session: Arc<Mutex<Session>>,
    spid: i32,
    version: Version,
    packet_size: usize,
    login: String,
    database: String,
    /// The current transaction descriptor (0 = none), echoed in ENVCHANGE 8/9/10.
    transaction: u64,
    next_descriptor: u64,
}

/// PRELOGIN, optional TLS, LOGIN7 and the login response. `Ok(None)` when the client went
/// away or was refused (already answered and logged).
async fn login_phase(
    state: &Arc<ServerState>,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
) -> io::Result<Option<Connection>> {
    let mut tcp = tcp;
    let local = tcp.local_addr()?;
    let Some(pre) = packet::read_message_of(&mut tcp, &LOGIN_LIMITS, &[kind::PRELOGIN]).await? else {
        return Ok(None);
    };
    if pre.kind != kind::PRELOGIN {
        return Err(packet::protocol(format!("expected PRELOGIN, got packet type {:#04x}", pre.kind)));
    }
    let client = prelogin::parse(&pre.payload).map_err(|e| packet::protocol(e.0))?;
    let encryption = match prelogin::negotiate(client.encryption, state.tls.is_some(), state.config.encrypt_login) {
        Ok(e) => e,
        Err(why) => {
            // Tell the client we cannot encrypt; it will give up.
            let reply = prelogin::reply(state.version_bytes, ENCRYPT_NOT_SUP);
            packet::write_message(&mut tcp, kind::REPLY, &reply, 4096).await?;
            state.log.session(0, &format!("Connection from {peer} refused: {why}."));
            return Ok(None);
        }
    };
    let reply = prelogin::reply(state.version_bytes, encryption);
    packet::write_message(&mut tcp, kind::REPLY, &reply, 4096).await?;

    let (stream, login_msg): (Box<dyn Stream>, Message) = match (encryption, &state.tls) {
        (ENCRYPT_ON | ENCRYPT_OFF, Some(tls)) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
            let mut tls_stream = acceptor.accept(PreloginWrapped::new(tcp)).await?;
            tls_stream.get_mut().0.finish_handshake();
            let Some(m) = packet::read_message_of(&mut tls_stream, &LOGIN_LIMITS, &[kind::LOGIN7]).await? else {
                return Ok(None);
            };
            if encryption == ENCRYPT_OFF {
                // Login-only encryption: the rest of the conversation is plaintext.
                let (wrapped, _) = tls_stream.into_inner();
                (Box::new(wrapped.into_inner()), m)
            } else {
                (Box::new(tls_stream), m)
            }
        }
        _ => {
            let Some(m) = packet::read_message_of(&mut tcp, &LOGIN_LIMITS, &[kind::LOGIN7]).await? else {
                return Ok(None);
            };
            (Box::new(tcp), m)
        }
    };
    let mut stream = stream;
    if login_msg.kind != kind::LOGIN7 {
        return Err(packet::protocol(format!("expected LOGIN7, got packet type {:#04x}", login_msg.kind)));
    }
    let login = login7::parse(&login_msg.payload).map_err(|e| packet::protocol(e.0))?;
    let version = Version::negotiate(login.tds_version).unwrap_or(Version::V7_1);

    // Credentials: the slow hash runs on a blocking thread, a bounded number at a time.
    let checked = if login.sspi {
        Err(Refusal { state: 58, reason: "Windows authentication is not supported; use a SQL Server login." })
    } else {
        let _permit = state.login_permits.acquire().await.map_err(|_| io::Error::other("server stopping"))?;
        let st = state.clone();
        let (user, password) = (login.user_name.clone(), login.password.clone());
        tokio::task::spawn_blocking(move || st.shared.logins.check(&user, &password))
            .await
            .map_err(|e| io::Error::other(e.to_string()))?
    };
    let accepted = match checked {
        Ok(a) => a,
        Err(refusal) => {
            state.log.session(0, &format!("Error: 18456, Severity: 14, State: {}.", refusal.state));
            state.log.session(
                0,
                &format!(
                    "Login failed for user '{}'. Reason: {} [CLIENT: {}]",
                    login.user_name,
                    refusal.reason,
                    peer.ip()
                ),
            );
            refuse(&mut stream, &state.shared.server_name, version, &[login_failed(&login.user_name)]).await?;
            return Ok(None);
        }
    };
    let login_name = accepted.name;

    // No database asked for: the login's default database.
    let explicit = !login.database.is_empty();
    let database = if explicit { login.database.clone() } else { accepted.default_database };
    let shared = state.shared.clone();
    let (db, host, app, name) = (database.clone(), login.host_name.clone(), login.app_name.clone(), login_name.clone());
    let created = tokio::task::spawn_blocking(move || {
        Session::new(shared, &name, &db).map(|mut s| {
            s.set_client(&host, &app);
            s
        })
    })
    .await
    .map_err(|e| io::Error::other(e.to_string()))?;
    let mut session = match created {
        Ok(s) => s,
        Err(_) if explicit => {
            let e4060 = SqlError::new(
                4060,
                format!("Cannot open database \"{database}\" requested by the login. The login failed."),
            )
            .with_severity(11);
            state.log.session(0, &format!("Login failed for user '{}'. Reason: Failed to open the explicitly specified database '{database}'. [CLIENT: {}]", login.user_name, peer.ip()));
            refuse(&mut stream, &state.shared.server_name, version, &[e4060, login_failed(&login.user_name)]).await?;
            return Ok(None);
        }
        Err(_) => {
            let e4064 = SqlError::new(4064, "Cannot open user default database. Login failed.").with_severity(11);
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
    session.set_connection(tessera_sql::runtime::ConnectionInfo {
        encrypted: encryption == ENCRYPT_ON,
        client_address: peer.ip().to_string(),
        client_port: peer.port(),
        local_address: local.ip().to_string(),
        local_port: local.port(),
        protocol_version: version.0,
        packet_size: packet_size as u32,
    });

    let mut out = BytesMut::new();
    tokens::env_change_text(&mut out, tokens::ENV_DATABASE, &database, "master");
    tokens::message(
        &mut out,
        version,
        &info(5701, format!("Changed database context to '{database}'.")),
        &state.shared.server_name,
    );
    tokens::env_change_collation(&mut out);
    tokens::env_change_text(&mut out, tokens::ENV_LANGUAGE, "us_english", "");
    tokens::message(
        &mut out,
        version,
        &info(5703, "Changed language setting to us_english."),
        &state.shared.server_name,
    );
    tokens::login_ack(&mut out, version, "Microsoft SQL Server", state.version_bytes);
    tokens::env_change_text(&mut out, tokens::ENV_PACKET_SIZE, &packet_size.to_string(), "4096");
    tokens::done(&mut out, version, tokens::DONE, done::FINAL, 0, 0);
    packet::write_message(&mut stream, kind::REPLY, &out, 4096).await?;
    Ok(Some(Connection {
        stream,
        session: Arc::new(Mutex::new(session)),
        spid,
        version,
        packet_size,
        login: login_name,
        database,
        transaction: 0,
        next_descriptor: 1,
    }))
}

fn info(number: i32, text: impl Into<String>) -> SqlError {
    SqlError { number, severity: 0, state: 1, message: text.into(), line: 0, procedure: None, preceding: Vec::new() }
}

fn login_failed(user: &str) -> SqlError {
    SqlError {
        number: 18456,
        severity: 14,
        state: 1,
        message: format!("Login failed for user '{user}'."),
        line: 1,
        procedure: None,
        preceding: Vec::new(),
    }
}

async fn refuse(stream: &mut Box<dyn Stream>, server: &str, version: Version, errors: &[SqlError]) -> io::Result<()> {
    let mut out = BytesMut::new();
    for e in errors {
        tokens::message(&mut out, version, e, server);
    }
    tokens::done(&mut out, version, tokens::DONE, done::ERROR, 0, 0);
    packet::write_message(stream, kind::REPLY, &out, 4096).await?;
    let _ = stream.shutdown().await;
    Ok(())
}

/// What the reader task hands the connection loop.
enum Incoming {
    Message(Message),
    Failed(io::Error),
}

async fn reader_task(
    mut r: tokio::io::ReadHalf<Box<dyn Stream>>,
    limits: Limits,
    cancel: Arc<AtomicBool>,
    tx: mpsc::Sender<Incoming>,
) {
    loop {
        match packet::read_message(&mut r, &limits).await {
            Ok(Some(m)) => {
                if m.kind == kind::ATTENTION {
                    cancel.store(true, Ordering::Relaxed);
                }
                if tx.send(Incoming::Message(m)).await.is_err() {
                    return;
                }
            }
            Ok(None) => return,
            Err(e) => {
                let _ = tx.send(Incoming::Failed(e)).await;
                return;
            }
        }
    }
}

/// A unit of work for the blocking thread.
type Job = Box<dyn FnOnce(&mut Session, &mut TokenSink) + Send>;

async fn request_loop(state: &Arc<ServerState>, conn: Connection) -> io::Result<()> {
    let Connection {
        stream,
        session,
        spid: _,
        version,
        packet_size,
        login,
        database,
        mut transaction,
        mut next_descriptor,
    } = conn;
    let (rd, mut wr) = tokio::io::split(stream);
    let cancel = session.lock().cancel_handle();
    let limits = Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: state.config.max_message_mb << 20 };
    let (in_tx, mut in_rx) = mpsc::channel::<Incoming>(2);
    // The target an INSERT BULK announced, waiting for its BULK_LOAD message.
    let pending_bulk: Arc<Mutex<Option<bulk::BulkTarget>>> = Arc::new(Mutex::new(None));
    let reader = tokio::spawn(reader_task(rd, limits, cancel.clone(), in_tx));
    let _abort_reader = AbortOnDrop(reader);

    while let Some(incoming) = in_rx.recv().await {
        let msg = match incoming {
            Incoming::Message(m) => m,
            Incoming::Failed(e) => return Err(e),
        };
        let reset = msg.status & (status::RESET_CONNECTION | status::RESET_CONNECTION_SKIP_TRAN) != 0;
        let job: Job = match msg.kind {
            kind::ATTENTION => {
                // Nothing running: acknowledge at once.
                cancel.store(false, Ordering::Relaxed);
                let mut out = BytesMut::new();
                tokens::done(&mut out, version, tokens::DONE, done::ATTN, 0, 0);
                packet::write_message(&mut wr, kind::REPLY, &out, packet_size).await?;
                continue;
            }
            kind::SQL_BATCH => match request::decode_batch(&msg.payload, version) {
                Ok(text) => match bulk::parse_insert_bulk(&text) {
                    None => Box::new(move |s: &mut Session, sink: &mut TokenSink| {
                        s.execute(&text, sink);
                        sink.finish_batch();
                    }),
                    Some(Ok(mut target)) => {
                        let pending = pending_bulk.clone();
                        Box::new(move |s: &mut Session, sink: &mut TokenSink| {
                            if bulk::check_target(s, &mut target, sink) {
                                *pending.lock() = Some(target);
                            }
                            sink.finish_batch();
                        })
                    }
                    Some(Err(e)) => Box::new(move |_s: &mut Session, sink: &mut TokenSink| {
                        sink.message(&e);
                        sink.finish_batch();
                    }),
                },
                Err(e) => bad_request(e),
            },
            kind::RPC => match request::decode_rpc(&msg.payload, version) {
                Ok(calls) => Box::new(move |s: &mut Session, sink: &mut TokenSink| run_rpc(s, sink, calls)),
                Err(e) => bad_request(e),
            },
            kind::TRANSACTION_MANAGER => match request::decode_tm(&msg.payload, version) {
                Ok(tm::Request::Unsupported(k)) => bad_request(format!(
                    "The transaction manager request {k} (distributed transactions) is not supported."
                )),
                Ok(req) => Box::new(move |s: &mut Session, sink: &mut TokenSink| {
                    for text in req.statements() {
                        if s.execute(&text, sink) {
                            break;
                        }
                    }
                    sink.finish_batch();
                }),
                Err(e) => bad_request(e),
            },
            kind::BULK_LOAD => match pending_bulk.lock().take() {
                Some(target) => {
                    let payload = msg.payload.clone();
                    Box::new(move |s: &mut Session, sink: &mut TokenSink| {
                        bulk::load(s, &target, &payload, version, sink);
                        sink.finish_batch();
                    })
                }
                None => bad_request("A bulk load (BULK_LOAD) must follow an INSERT BULK statement.".to_string()),
            },
            k => return Err(packet::protocol(format!("unexpected packet type {k:#04x} after login"))),
        };

        // The request runs on a blocking thread; full packets come back over `out_rx`.
        cancel.store(false, Ordering::Relaxed);
        let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(OUTPUT_QUEUE);
        let mut sink = TokenSink::new(version, packet_size, out_tx, cancel.clone(), state.shared.server_name.clone());
        sink.transaction = transaction;
        sink.next_descriptor = next_descriptor;
        let sess = session.clone();
        let shared = state.shared.clone();
        let (login_c, db_c) = (login.clone(), database.clone());
        let mut handle = tokio::task::spawn_blocking(move || {
            let mut s = sess.lock();
            if reset {
                sink.reset(&mut s, shared, &login_c, &db_c);
            }
            job(&mut s, &mut sink);
            sink
        });
        let mut attention = false;
        let mut write_error: Option<io::Error> = None;
        let sink = loop {
            tokio::select! {
                biased;
                Some(p) = out_rx.recv(), if write_error.is_none() => {
                    if let Err(e) = wr.write_all(&p).await {
                        // The client is gone: stop the request and discard its output.
                        cancel.store(true, Ordering::Relaxed);
                        write_error = Some(e);
                        out_rx.close();
                    }
                }
                res = &mut handle => {
                    break res.map_err(|e| io::Error::other(format!("request failed: {e}")))?;
                }
                m = in_rx.recv(), if !attention => match m {
                    Some(Incoming::Message(m)) if m.kind == kind::ATTENTION => attention = true,
                    Some(Incoming::Message(m)) => {
                        cancel.store(true, Ordering::Relaxed);
                        let _ = (&mut handle).await;
                        return Err(packet::protocol(format!("packet type {:#04x} while a request was running", m.kind)));
                    }
                    Some(Incoming::Failed(e)) => {
                        cancel.store(true, Ordering::Relaxed);
                        let _ = (&mut handle).await;
                        return Err(e);
                    }
                    None => {
                        cancel.store(true, Ordering::Relaxed);
                        let _ = (&mut handle).await;
                        return Ok(());
                    }
                },
            }
        };
        if let Some(e) = write_error {
            return Err(e);
        }
        while let Ok(p) = out_rx.try_recv() {
            wr.write_all(&p).await?;
        }
        // An attention that arrived while the request ran: the reader task sets the flag
        // before it queues the message, so a flag without the message means it is on its way.
        if cancel.swap(false, Ordering::Relaxed) && !attention {
            match in_rx.recv().await {
                Some(Incoming::Message(m)) if m.kind == kind::ATTENTION => attention = true,
                Some(Incoming::Failed(e)) => return Err(e),
                Some(Incoming::Message(m)) => {
                    return Err(packet::protocol(format!("packet type {:#04x} while a request was running", m.kind)))
                }
                None => return Ok(()),
            }
        }
        transaction = sink.transaction;
        next_descriptor = sink.next_descriptor;
        let last = sink.finish(attention);
        wr.write_all(&last).await?;
        wr.flush().await?;
    }
    Ok(())
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn bad_request(message: String) -> Job {
    Box::new(move |_s: &mut Session, sink: &mut TokenSink| {
        sink.message(&SqlError::new(8009, message).with_severity(16));
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
                RpcParam { name, value: p.value, ty: p.ty, output: p.output }
            })
            .collect();
        let outcome = s.execute_rpc(&call.procedure, params, sink);
        sink.in_proc = false;
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

/// Encodes a request's results as TDS tokens and ships full packets to the writer.
pub struct TokenSink {
    buf: BytesMut,
    version: Version,
    packet_size: usize,
    packet_id: u8,
    tx: Option<mpsc::Sender<Bytes>>,
    cancel: Arc<AtomicBool>,
    server: String,
    columns: Vec<SqlType>,
    /// The last DONE, held back until we know whether more follows (DONE_MORE).
    pending: Option<(u16, u64)>,
    error_since_done: bool,
    in_proc: bool,
    /// Rows of the last count (DONEPROC carries it).
    last_count: Option<u64>,
    transaction: u64,
    next_descriptor: u64,
    finished: bool,
}

impl TokenSink {
    fn new(
        version: Version,
        packet_size: usize,
        tx: mpsc::Sender<Bytes>,
        cancel: Arc<AtomicBool>,
        server: String,
    ) -> TokenSink {
        TokenSink {
            buf: BytesMut::with_capacity(packet_size),
            version,
            packet_size,
            packet_id: 1,
            tx: Some(tx),
            cancel,
            server,
            columns: Vec::new(),
            pending: None,
            error_since_done: false,
            in_proc: false,
            last_count: None,
            transaction: 0,
            next_descriptor: 1,
            finished: false,
        }
    }

    /// RESETCONNECTION: a fresh session for the same login and database.
    fn reset(&mut self, s: &mut Session, shared: Arc<tessera_sql::Shared>, login: &str, database: &str) {
        let (host, app) = (s.state.host_name.clone(), s.state.program_name.clone());
        s.close();
        match Session::new(shared, login, database) {
            Ok(mut fresh) => {
                fresh.set_client(&host, &app);
                *s = fresh;
            }
            Err(e) => self.message(&e),
        }
        self.transaction = 0;
        tokens::env_change_reset_ack(&mut self.buf);
    }

    fn flush_pending(&mut self) {
        if let Some((status, count)) = self.pending.take() {
            tokens::done(&mut self.buf, self.version, tokens::DONE, status | done::MORE, 0, count);
        }
    }

    /// Ships every full packet's worth of tokens.
    fn ship(&mut self) {
        let room = self.packet_size - packet::HEADER_LEN;
        while self.buf.len() > room {
            let chunk = self.buf.split_to(room);
            if let Some(tx) = &self.tx {
                let mut p = BytesMut::with_capacity(self.packet_size);
                packet::frame(kind::REPLY, &chunk, self.packet_size, false, &mut self.packet_id, &mut p);
                if tx.blocking_send(p.freeze()).is_err() {
                    // The writer is gone (client disconnected): stop the request.
                    self.tx = None;
                    self.cancel.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    fn finish_batch(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let status = match self.pending.take() {
            Some((status, count)) => {
                tokens::done(&mut self.buf, self.version, tokens::DONE, status, 0, count);
                return;
            }
            None if self.error_since_done => done::ERROR,
            None => done::FINAL,
        };
        tokens::done(&mut self.buf, self.version, tokens::DONE, status, 0, 0);
    }

    fn return_value(&mut self, ordinal: u16, name: &str, ty: &SqlType, value: &Value) {
        tokens::return_value(&mut self.buf, self.version, ordinal, name, ty, value);
        self.ship();
    }

    fn finish_proc(&mut self, failed: bool, more: bool) {
        let mut status = if failed { done::ERROR } else { done::FINAL };
        if more {
            status |= done::MORE;
        }
        let _ = self.last_count;
        tokens::done(&mut self.buf, self.version, tokens::DONEPROC, status, 0xE0, 0);
        self.error_since_done = false;
        if !more {
            self.finished = true;
        }
        self.ship();
    }

    /// The last packet(s) of the response, marked end-of-message, with DONE_ATTN if an
    /// attention interrupted the request.
    fn finish(mut self, attention: bool) -> BytesMut {
        if !self.finished {
            self.finish_batch();
        }
        if attention {
            tokens::done(&mut self.buf, self.version, tokens::DONE, done::ATTN, 0, 0);
        }
        let mut out = BytesMut::with_capacity(self.buf.len() + 16);
        let mut id = self.packet_id;
        packet::frame(kind::REPLY, &self.buf, self.packet_size, true, &mut id, &mut out);
        out
    }
}

impl ResultSink for TokenSink {
    fn columns(&mut self, columns: &[OutputColumn]) {
        self.flush_pending();
        tokens::col_metadata(&mut self.buf, self.version, columns);
        self.columns = columns.iter().map(|c| c.ty).collect();
        self.ship();
    }

    fn order(&mut self, columns: &[u16]) {
        tokens::order(&mut self.buf, columns);
        self.ship();
    }

    fn row(&mut self, row: &[Value]) {
        if self.tx.is_none() {
            return;
        }
        tokens::row(&mut self.buf, &self.columns, row);
        self.ship();
    }

    fn done(&mut self, count: Option<u64>, _result_set: bool) {
        let mut status = if count.is_some() { done::COUNT } else { done::FINAL };
        if self.error_since_done {
            status |= done::ERROR;
        }
        self.error_since_done = false;
        self.last_count = count;
        if self.in_proc {
            tokens::done(&mut self.buf, self.version, tokens::DONEINPROC, status | done::MORE, 0, count.unwrap_or(0));
        } else {
            self.flush_pending();
            self.pending = Some((status, count.unwrap_or(0)));
        }
        self.ship();
    }

    fn message(&mut self, m: &SqlError) {
        if m.number == 3617 && self.cancel.load(Ordering::Relaxed) {
            // Cancelled by an attention: the client is told by DONE_ATTN, not an error.
            return;
        }
        self.flush_pending();
        tokens::message(&mut self.buf, self.version, m, &self.server);
        if m.severity > 10 {
            self.error_since_done = true;
        }
        self.ship();
    }

    fn env_change(&mut self, change: &EnvChange) {
        self.flush_pending();
        match change {
            EnvChange::Database { old, new } => tokens::env_change_text(&mut self.buf, tokens::ENV_DATABASE, new, old),
            EnvChange::BeginTransaction => {
                self.transaction = self.next_descriptor;
                self.next_descriptor += 1;
                tokens::env_change_transaction(&mut self.buf, tokens::ENV_BEGIN_TRAN, self.transaction);
            }
            EnvChange::CommitTransaction => {
                tokens::env_change_transaction(&mut self.buf, tokens::ENV_COMMIT_TRAN, self.transaction);
                self.transaction = 0;
            }
            EnvChange::RollbackTransaction => {
                tokens::env_change_transaction(&mut self.buf, tokens::ENV_ROLLBACK_TRAN, self.transaction);
                self.transaction = 0;
            }
        }
    }

    fn return_status(&mut self, status: i32) {
        self.flush_pending();
        tokens::return_status(&mut self.buf, status);
    }
}
