//! `tessera gateway`: one TDS address in front of many servers. A client connects as to
//! any SQL Server; the gateway answers PRELOGIN (and terminates TLS when the client asks
//! for it), reads LOGIN7 for the database it names, looks up in the directory which
//! server holds that database, logs in to that server with the client's own LOGIN7, and
//! from then on passes bytes both ways unchanged: the server checks the credentials and
//! answers the client itself, so logins, errors and results are the server's.
//!
//! A database no live server holds gets 4060 (SQL Server's "Cannot open database … requested
//! by the login"); a server the directory names but that does not answer gets 40613
//! (Azure SQL Database's "not currently available", which clients' retry logic knows).
//! Either way the client's connection ends there and the gateway serves everyone else.
//!
//! The link from the gateway to a server is plaintext TDS: the servers sit on the
//! fleet's own network, as behind Azure's gateway. Under [`Policy::Redirect`] the
//! server's answer to the login also tells a client that follows routing to reconnect
//! to the server itself (`redirect.rs`).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_errors::msg;
use tessera_errors::SqlError;
use tessera_server::handshake::{refuse, Handshake, Prelogged, LOGIN_LIMITS};
use tessera_server::packet::{self, kind};
use tessera_server::prelogin::{self, ENCRYPT_NOT_SUP, ENCRYPT_ON, ENCRYPT_REQ};
use tessera_server::tls::ServerTls;
use tessera_server::tokens::Version;
use tokio::net::{TcpListener, TcpStream};

use crate::directory::Directory;
use crate::stats::{Outcome, Stats};
use crate::{passthrough, redirect};

/// The most a client has from connecting to sending LOGIN7, and a server from being
/// dialled to answering PRELOGIN.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(15);

/// LOGIN7's TDS version field (after the length): TDS 7.4, for a strict (TDS 8.0)
/// client's login passed on to a server over plain TDS 7.x.
const TDS_7_4: u32 = 0x7400_0004;
const LOGIN7_VERSION_AT: usize = 4;

/// The name the gateway gives itself in the messages it sends.
const GATEWAY_NAME: &str = "tessera-gateway";

/// How a gateway hands a client's connection to the server that holds its database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Every byte of the connection passes through the gateway.
    Proxy,
    /// The login passes through the gateway and its answer routes the client to the
    /// server (ENVCHANGE 20); clients that do not follow routing stay proxied.
    Redirect,
}

/// The most a server's answer to a login may be.
const ANSWER_LIMITS: packet::Limits = packet::Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: 1 << 20 };

/// The first byte of a TDS 8.0 strict connection: a TLS handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// A gateway: the directory it reads and the certificate it offers.
pub struct Gateway {
    pub directory: Directory,
    pub policy: Policy,
    /// Whether TDS 8.0 strict connections pass through to their server, routed by the
    /// ClientHello's server name (`passthrough.rs`), rather than end here.
    pub tls_passthrough: bool,
    /// What the gateway counts (`/metrics`).
    pub stats: Arc<Stats>,
    pub tls: Option<ServerTls>,
    /// The version PRELOGIN's reply announces (the servers').
    pub version_bytes: [u8; 4],
    /// Told of each connection the gateway could not route.
    pub log: Box<dyn Fn(&str) + Send + Sync>,
}

impl Gateway {
    /// Accepts connections until the listener fails.
    pub async fn run(self: Arc<Self>, listener: TcpListener) -> io::Result<()> {
        loop {
            let (tcp, peer) = listener.accept().await?;
            let _ = tcp.set_nodelay(true);
            let gateway = self.clone();
            tokio::spawn(async move {
                let _open = gateway.stats.open();
                if let Err(e) = gateway.serve(tcp, peer).await {
                    (gateway.log)(&format!("Connection from {peer} ended: {e}"));
                }
            });
        }
    }

    /// One client connection, to its end: routed, counted, then its bytes passed both
    /// ways until either side ends.
    async fn serve(&self, tcp: TcpStream, peer: SocketAddr) -> io::Result<()> {
        let handed = match self.route(tcp, peer).await {
            Ok(handed) => handed,
            Err(e) => {
                self.stats.routed(Outcome::Dropped, None);
                return Err(e);
            }
        };
        self.stats.routed(handed.outcome, handed.took);
        match handed.link {
            Some((mut client, mut server)) => splice(&mut client, &mut server).await,
            None => Ok(()),
        }
    }

    /// Routes a client connection: how, and the two streams to join when it was.
    async fn route(&self, tcp: TcpStream, peer: SocketAddr) -> io::Result<Handed> {
        if self.tls_passthrough {
            let mut first = [0u8; 1];
            if tcp.peek(&mut first).await? == 1 && first[0] == TLS_HANDSHAKE_RECORD {
                return self.pass_through(tcp, peer).await;
            }
        }
        let handshake = Handshake {
            tls: self.tls.as_ref(),
            version_bytes: self.version_bytes,
            encrypt_login: false,
            force_strict_encryption: false,
        };
        let prelogged = tokio::time::timeout(LOGIN_TIMEOUT, handshake.prelogin(tcp))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no LOGIN7 within the login timeout"))??;
        let (mut client, mut login_msg, strict) = match prelogged {
            Prelogged::Login { stream, login, strict, .. } => (stream, login, strict),
            Prelogged::Gone => return Ok(Handed::ended(Outcome::Dropped, None)),
            Prelogged::Refused(why) => {
                (self.log)(&format!("Connection from {peer} refused: {why}."));
                return Ok(Handed::ended(Outcome::Dropped, None));
            }
        };
        let started = Instant::now();
        let login = tessera_server::login7::parse(&login_msg.payload).map_err(|e| packet::protocol(e.0))?;
        let version =
            if strict { Version::V7_4 } else { Version::negotiate(login.tds_version).unwrap_or(Version::V7_1) };
        let database = login.database.clone();
        let target = match self.directory.locate(&database).await {
            Ok(Some(server)) => server,
            Ok(None) => {
                (self.log)(&format!("Connection from {peer}: no server holds database '{database}'."));
                let e = msg::CANNOT_OPEN_LOGIN_DATABASE.with(&[&database]);
                refuse(&mut client, GATEWAY_NAME, version, &[e, login_failed(&login.user_name)]).await?;
                return Ok(Handed::ended(Outcome::NoDatabase, Some(started.elapsed())));
            }
            Err(e) => {
                (self.log)(&format!("Connection from {peer}: {e}"));
                let e = msg::DATABASE_NOT_CURRENTLY_AVAILABLE.with(&[&database, &GATEWAY_NAME]);
                refuse(&mut client, GATEWAY_NAME, version, &[e]).await?;
                return Ok(Handed::ended(Outcome::Unavailable, Some(started.elapsed())));
            }
        };
        if strict {
            login_msg.payload[LOGIN7_VERSION_AT..LOGIN7_VERSION_AT + 4].copy_from_slice(&TDS_7_4.to_le_bytes());
        }
        let mut server = match tokio::time::timeout(LOGIN_TIMEOUT, connect(&target.address)).await {
            Ok(Ok(server)) => server,
            outcome => {
                let why = match outcome {
                    Ok(Err(e)) => e.to_string(),
                    _ => "no answer within the login timeout".to_string(),
                };
                (self.log)(&format!(
                    "Connection from {peer}: server '{}' at {} (database '{database}') is unreachable: {why}",
                    target.name, target.address
                ));
                let e = msg::DATABASE_NOT_CURRENTLY_AVAILABLE.with(&[&database, &target.name]);
                refuse(&mut client, GATEWAY_NAME, version, &[e]).await?;
                return Ok(Handed::ended(Outcome::Unavailable, Some(started.elapsed())));
            }
        };
        packet::write_message(&mut server, kind::LOGIN7, &login_msg.payload, 4096).await?;
        let mut outcome = Outcome::Proxied;
        if self.policy == Policy::Redirect {
            // The answer, with the routing to the server when it accepted the login.
            let Some(answer) = packet::read_message(&mut server, &ANSWER_LIMITS).await? else {
                return Ok(Handed::ended(Outcome::Dropped, None));
            };
            let (host, port) = target.address.rsplit_once(':').unwrap_or((&target.address, "1433"));
            let routed =
                port.parse().ok().and_then(|port| redirect::routed(&answer.payload, login.tds_version, host, port));
            if routed.is_some() {
                outcome = Outcome::Redirected;
            }
            packet::write_message(&mut client, kind::REPLY, routed.as_deref().unwrap_or(&answer.payload), 4096).await?;
        }
        // The server's answer to LOGIN7 (under the proxy policy) and everything after
        // it pass through unchanged.
        Ok(Handed { outcome, took: Some(started.elapsed()), link: Some((Box::new(client), server)) })
    }
}

/// Both directions of a client's stream (plain TCP or TLS).
trait Duplex: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Duplex for T {}

/// How a connection was routed, how long that took from its login, and (when it was
/// handed on) the client's stream and its server's.
struct Handed {
    outcome: Outcome,
    took: Option<Duration>,
    link: Option<(Box<dyn Duplex>, TcpStream)>,
}

impl Handed {
    fn ended(outcome: Outcome, took: Option<Duration>) -> Handed {
        Handed { outcome, took, link: None }
    }
}

impl Gateway {
    /// A strict connection passed through to the server its ClientHello's server name
    /// routes to; one that cannot be routed is closed (it has no TDS to read an error in
    /// before its TLS), and the reason logged.
    async fn pass_through(&self, mut tcp: TcpStream, peer: SocketAddr) -> io::Result<Handed> {
        let (hello, name) = tokio::time::timeout(LOGIN_TIMEOUT, passthrough::client_hello(&mut tcp))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no ClientHello within the login timeout"))??;
        let started = Instant::now();
        let Some(database) = name.as_deref().and_then(passthrough::database_of) else {
            (self.log)(&format!(
                "Connection from {peer}: TLS passes through, but its server name ({name:?}) names no database."
            ));
            return Ok(Handed::ended(Outcome::NoDatabase, Some(started.elapsed())));
        };
        let target = match self.directory.locate(database).await {
            Ok(Some(server)) => server,
            Ok(None) => {
                (self.log)(&format!("Connection from {peer}: no server holds database '{database}'."));
                return Ok(Handed::ended(Outcome::NoDatabase, Some(started.elapsed())));
            }
            Err(e) => {
                (self.log)(&format!("Connection from {peer}: {e}"));
                return Ok(Handed::ended(Outcome::Unavailable, Some(started.elapsed())));
            }
        };
        let mut server = match tokio::time::timeout(LOGIN_TIMEOUT, TcpStream::connect(&target.address)).await {
            Ok(Ok(server)) => server,
            outcome => {
                let why =
                    outcome.map_or_else(|_| "no answer within the login timeout".to_string(), |e| format!("{e:?}"));
                (self.log)(&format!(
                    "Connection from {peer}: server '{}' at {} (database '{database}') is unreachable: {why}",
                    target.name, target.address
                ));
                return Ok(Handed::ended(Outcome::Unavailable, Some(started.elapsed())));
            }
        };
        let _ = server.set_nodelay(true);
        tokio::io::AsyncWriteExt::write_all(&mut server, &hello).await?;
        Ok(Handed {
            outcome: Outcome::PassedThrough,
            took: Some(started.elapsed()),
            link: Some((Box::new(tcp), server)),
        })
    }
}

/// Bytes both ways until either side ends.
async fn splice(
    client: &mut (impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin),
    server: &mut TcpStream,
) -> io::Result<()> {
    match tokio::io::copy_bidirectional(client, server).await {
        Ok(_) => Ok(()),
        // A side that went away mid-conversation ends the other: nothing to report.
        Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Dials a server and has PRELOGIN agree on no encryption.
async fn connect(address: &str) -> io::Result<TcpStream> {
    let mut tcp = TcpStream::connect(address).await?;
    let _ = tcp.set_nodelay(true);
    let hello = prelogin::reply([0, 1, 0, 0], ENCRYPT_NOT_SUP);
    packet::write_message(&mut tcp, kind::PRELOGIN, &hello, 4096).await?;
    let Some(reply) = packet::read_message(&mut tcp, &LOGIN_LIMITS).await? else {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection at PRELOGIN"));
    };
    let answer = prelogin::parse(&reply.payload).map_err(|e| packet::protocol(e.0))?;
    if matches!(answer.encryption, Some(ENCRYPT_ON | ENCRYPT_REQ)) {
        return Err(packet::protocol("the server requires encryption on the gateway's link"));
    }
    Ok(tcp)
}

fn login_failed(user: &str) -> SqlError {
    msg::LOGIN_FAILED.with(&[&user]).at_line(1)
}
