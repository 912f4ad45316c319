//! The listener and the per-connection loop.
//!
//! Each connection is an async task: PRELOGIN, LOGIN7, then requests. A request runs on
//! the blocking pool (the T-SQL layer is synchronous) while the task keeps reading the
//! socket, so an Attention packet can cancel it: the session's cancel flag is set, the
//! running batch stops with error 3617 at its next check (kept from the client, as SQL
//! Server does), and the reply ends with DONE
//! carrying the attention bit. A malformed or oversized message ends only its connection.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use tessera_sql::{Session, Shared, SqlError};

use crate::login::{self, ENCRYPT_NOT_SUP, ENCRYPT_OFF, ENCRYPT_ON, ENCRYPT_REQ};
use crate::packet::{self, Message, PacketType};
use crate::rpc;
use crate::tls::PreloginFramed;
use crate::tokens::{self, TokenSink, COLLATION, DONE_ATTN, DONE_ERROR, DONE_FINAL};

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The `sa` login's password.
    pub sa_password: String,
    /// The most connections served at once; more are refused.
    pub max_connections: usize,
    /// TLS for clients that ask for encryption (None: encryption is not supported).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Refuse clients that cannot encrypt, and encrypt whole connections of clients that
    /// asked for login-only encryption.
    pub force_encryption: bool,
}

impl ServerConfig {
    /// Plain TCP only, at most 10,000 connections.
    pub fn new(sa_password: &str) -> ServerConfig {
        ServerConfig {
            sa_password: sa_password.to_string(),
            max_connections: 10_000,
            tls: None,
            force_encryption: false,
        }
    }
}

/// Accepts connections until the listener fails.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, config: ServerConfig) -> io::Result<()> {
    let config = Arc::new(config);
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let (stream, peer) = listener.accept().await?;
        if open.load(Ordering::Relaxed) >= config.max_connections {
            eprintln!("tessera: refusing connection from {peer}: {} connections open", config.max_connections);
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let (shared, config, open) = (shared.clone(), config.clone(), open.clone());
        open.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            if let Err(e) = connection(stream, shared, config).await {
                if e.kind() != io::ErrorKind::UnexpectedEof && e.kind() != io::ErrorKind::ConnectionReset {
                    eprintln!("tessera: connection from {peer} closed: {e}");
                }
            }
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

fn protocol(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

/// How long a client has for each step of the handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

async fn expect<R: AsyncRead + Unpin>(r: &mut R, kind: PacketType) -> io::Result<Message> {
    let read = tokio::time::timeout(HANDSHAKE_TIMEOUT, packet::read_message_of(r, Some(kind)))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "handshake timed out"))?;
    match read? {
        Some(m) if m.kind == kind => Ok(m),
        Some(m) => Err(protocol(&format!("expected {kind:?}, got {:?}", m.kind))),
        None => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "client left")),
    }
}

async fn reply<W: AsyncWrite + Unpin>(w: &mut W, payload: &[u8], packet_size: usize) -> io::Result<()> {
    packet::write_message(w, PacketType::TabularResult, payload, packet_size).await
}

/// The TDS version the server answers with: the client's, among 7.1–7.4.
fn ack_version(requested: u32) -> u32 {
    match requested {
        v if v >= 0x7400_0004 => 0x7400_0004,
        v if v >= 0x730B_0003 => 0x730B_0003,
        v if v >= 0x730A_0003 => 0x730A_0003,
        v if v >= 0x7209_0002 => 0x7209_0002,
        _ => 0x7100_0001,
    }
}

/// What PRELOGIN settled about encryption.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encryption {
    /// No TLS.
    None,
    /// TLS for LOGIN7 only (the client said ENCRYPT_OFF): the password never travels in
    /// the clear, the rest does.
    LoginOnly,
    /// TLS for the whole connection.
    Full,
    /// The server requires encryption and the client cannot do it: answer and hang up.
    Refused,
}

/// The encryption rules of MS-TDS 2.2.6.5 for the client's PRELOGIN byte; the answer byte.
fn negotiate(asked: u8, tls: bool, forced: bool) -> (Encryption, u8) {
    match (asked, tls, forced) {
        (_, false, _) => (Encryption::None, ENCRYPT_NOT_SUP),
        (ENCRYPT_NOT_SUP, true, false) => (Encryption::None, ENCRYPT_NOT_SUP),
        (ENCRYPT_NOT_SUP, true, true) => (Encryption::Refused, ENCRYPT_REQ),
        (ENCRYPT_OFF, true, false) => (Encryption::LoginOnly, ENCRYPT_OFF),
        (ENCRYPT_OFF, true, true) => (Encryption::Full, ENCRYPT_REQ),
        _ => (Encryption::Full, ENCRYPT_ON),
    }
}

async fn connection(mut stream: TcpStream, shared: Arc<Shared>, config: Arc<ServerConfig>) -> io::Result<()> {
    let pre = expect(&mut stream, PacketType::PreLogin).await?;
    let asked = login::parse_prelogin(&pre.payload)?.encryption.unwrap_or(ENCRYPT_NOT_SUP);
    let (encryption, answer) = negotiate(asked, config.tls.is_some(), config.force_encryption);
    packet::write_message(&mut stream, PacketType::TabularResult, &login::prelogin_response(answer), 4096).await?;
    let tls = match (encryption, &config.tls) {
        (Encryption::Refused, _) => {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the server requires encryption and the client does not support it",
            ));
        }
        (Encryption::None, _) | (_, None) => {
            let login = expect(&mut stream, PacketType::Login7).await?;
            return serve_session(stream, login, shared, config).await;
        }
        (_, Some(tls)) => tls.clone(),
    };
    let handshake = tokio_rustls::TlsAcceptor::from(tls).accept(PreloginFramed::new(stream));
    let mut stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
    stream.get_mut().0.handshake_done();
    let login = expect(&mut stream, PacketType::Login7).await?;
    if encryption == Encryption::LoginOnly {
        // The client sends nothing more until LOGIN7 is answered, so no bytes are left in
        // TLS buffers when the connection goes back to plain TCP.
        let (framed, _) = stream.into_inner();
        return serve_session(framed.into_inner(), login, shared, config).await;
    }
    serve_session(stream, login, shared, config).await
}

/// LOGIN7 and the session's requests, on a plain or TLS stream.
async fn serve_session<S>(
    stream: S,
    login_message: Message,
    shared: Arc<Shared>,
    config: Arc<ServerConfig>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut rd, mut wr) = tokio::io::split(stream);
    let login = login::parse_login7(&login_message.payload)?;
    let packet_size = (login.packet_size as usize).clamp(packet::MIN_PACKET_SIZE, packet::MAX_PACKET_SIZE);
    if !login.user_name.eq_ignore_ascii_case("sa") || login.password != config.sa_password {
        let mut out = Vec::new();
        let e = SqlError::new(18456, format!("Login failed for user '{}'.", login.user_name)).with_severity(14);
        tokens::message(&mut out, &e);
        tokens::done_final(&mut out, DONE_ERROR, 0);
        reply(&mut wr, &out, packet_size).await?;
        return Ok(());
    }
    let database = if login.database.is_empty() { "master".to_string() } else { login.database.clone() };
    let opened = {
        let shared = shared.clone();
        let (db, host, app) = (database.clone(), login.host_name.clone(), login.app_name.clone());
        tokio::task::spawn_blocking(move || {
            Session::new(shared, "sa", &db).map(|mut s| {
                s.set_client(&host, &app);
                s
            })
        })
        .await
        .map_err(|e| io::Error::other(e.to_string()))?
    };
    let mut session = match opened {
        Ok(s) => s,
        Err(e) => {
            let mut out = Vec::new();
            tokens::message(&mut out, &e);
            let e = SqlError::new(
                4060,
                format!("Cannot open database \"{database}\" requested by the login. The login failed."),
            )
            .with_severity(11);
            tokens::message(&mut out, &e);
            tokens::done_final(&mut out, DONE_ERROR, 0);
            reply(&mut wr, &out, packet_size).await?;
            return Ok(());
        }
    };
    let tds_version = ack_version(login.tds_version);
    let mut out = Vec::new();
    tokens::envchange_text(&mut out, 1, session.database(), "master");
    tokens::message(&mut out, &info(5701, &format!("Changed database context to '{}'.", session.database())));
    tokens::envchange_bytes(&mut out, 7, &COLLATION, &[]);
    tokens::envchange_text(&mut out, 2, "us_english", "");
    tokens::message(&mut out, &info(5703, "Changed language setting to us_english."));
    tokens::loginack(&mut out, tds_version);
    tokens::envchange_text(&mut out, 4, &packet_size.to_string(), "4096");
    tokens::done_final(&mut out, DONE_FINAL, 0);
    reply(&mut wr, &out, packet_size).await?;

    // Requests. A reader task forwards messages; an Attention sets the cancel flag at once.
    let cancel = session.cancel_handle();
    let (tx, mut requests) = mpsc::channel::<io::Result<Message>>(4);
    let reader = tokio::spawn(async move {
        loop {
            match packet::read_message(&mut rd).await {
                Ok(Some(m)) => {
                    if m.kind == PacketType::Attention {
                        cancel.store(true, Ordering::Relaxed);
                    }
                    if tx.send(Ok(m)).await.is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            }
        }
    });
    let result = async {
        // Attentions already acknowledged by the DONE of the batch they cancelled; their
        // messages, still queued, get no second acknowledgement.
        let mut acknowledged = 0usize;
        while let Some(message) = requests.recv().await {
            let message = message?;
            if message.kind == PacketType::Attention && acknowledged > 0 {
                acknowledged -= 1;
                continue;
            }
            let (reply_bytes, s) = handle(session, message, tds_version, &mut acknowledged).await?;
            session = s;
            if let Some(bytes) = reply_bytes {
                reply(&mut wr, &bytes, packet_size).await?;
            }
        }
        Ok::<_, io::Error>(session)
    }
    .await;
    reader.abort();
    // On disconnect the session is closed: an open transaction rolls back.
    if let Ok(mut session) = result {
        tokio::task::spawn_blocking(move || session.close()).await.map_err(|e| io::Error::other(e.to_string()))?;
        return Ok(());
    }
    result.map(|_| ())
}

fn info(number: i32, text: &str) -> SqlError {
    SqlError {
        number,
        severity: 0,
        state: 1,
        message: text.to_string(),
        line: 0,
        procedure: None,
        preceding: Vec::new(),
    }
}

/// Runs one request on the blocking pool; returns the reply (None for an Attention that
/// arrived between requests: its DONE is sent at once) and the session.
async fn handle(
    mut session: Session,
    message: Message,
    tds_version: u32,
    acknowledged: &mut usize,
) -> io::Result<(Option<Vec<u8>>, Session)> {
    let cancel = session.cancel_handle();
    match message.kind {
        PacketType::Attention => {
            cancel.store(false, Ordering::Relaxed);
            let mut out = Vec::new();
            tokens::done_final(&mut out, DONE_ATTN, 0);
            return Ok((Some(out), session));
        }
        PacketType::SqlBatch | PacketType::Rpc | PacketType::TransactionManager => {}
        other => return Err(protocol(&format!("unexpected request {other:?}"))),
    }
    if message.status & packet::STATUS_RESET_CONNECTION != 0 {
        session = tokio::task::spawn_blocking(move || {
            session.reset();
            session
        })
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
    }
    let (out, session, attention) = tokio::task::spawn_blocking(move || -> io::Result<(Vec<u8>, Session, bool)> {
        let mut sink = TokenSink::new(message.kind == PacketType::Rpc);
        let attention = match message.kind {
            PacketType::SqlBatch => {
                let text = rpc::batch_text(&message.payload, tds_version)?;
                session.execute(&text, &mut sink);
                finish(&mut sink, &session, false)
            }
            PacketType::TransactionManager => {
                let text = rpc::transaction_request(&message.payload, tds_version)?;
                session.execute(&text, &mut sink);
                finish(&mut sink, &session, false)
            }
            _ => {
                let call = rpc::parse_rpc(&message.payload, tds_version)?;
                let outputs: Vec<(u16, Option<String>)> = call
                    .params
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.output)
                    .map(|(i, p)| (i as u16, p.name.clone()))
                    .collect();
                let outcome = session.execute_rpc(&call.procedure, call.params, &mut sink);
                for ((ordinal, name), (_, value, ty)) in outputs.iter().zip(&outcome.outputs) {
                    tokens::return_value(&mut sink.out, *ordinal, name.as_deref().unwrap_or(""), value, ty);
                }
                finish(&mut sink, &session, true)
            }
        };
        Ok((sink.out, session, attention))
    })
    .await
    .map_err(|e| io::Error::other(e.to_string()))??;
    *acknowledged += usize::from(attention);
    Ok((Some(out), session))
}

/// The reply's last token: DONE (or DONEPROC after an RPC), with the error and attention
/// bits as they apply; true if it acknowledged an Attention.
fn finish(sink: &mut TokenSink, session: &Session, rpc: bool) -> bool {
    let mut status = DONE_FINAL;
    if sink.failed {
        status |= DONE_ERROR;
    }
    let attention = session.cancel_handle().swap(false, Ordering::Relaxed);
    if attention {
        status |= DONE_ATTN;
    }
    if rpc {
        tokens::doneproc(&mut sink.out, status, 0);
    } else {
        tokens::done_final(&mut sink.out, status, 0);
    }
    attention
}
