//! The start of a connection, before credentials: PRELOGIN (encryption negotiation and,
//! when agreed, the TLS handshake inside PRELOGIN packets) — or, for TDS 8.0 strict, TLS
//! first on the bare socket and PRELOGIN inside it — up to the LOGIN7 message. The server
//! (`session`) then checks the credentials; the gateway reads the database LOGIN7 names
//! and hands the connection on to the server that holds it.
//!
//! Messages are bounded by [`LOGIN_LIMITS`]; the caller bounds the whole exchange by the
//! login timeout.

use std::io;

use bytes::BytesMut;
use tessera_errors::SqlError;
use tokio::io::AsyncWriteExt;

use crate::packet::{self, kind, Limits, Message};
use crate::prelogin::{self, ENCRYPT_NOT_SUP, ENCRYPT_OFF, ENCRYPT_ON};
use crate::tls::{PreloginWrapped, ServerTls};
use crate::tokens::{self, done, Version};
use crate::transport::LoginStream;

/// Messages before login are small: PRELOGIN and LOGIN7 fit in a few KiB.
pub const LOGIN_LIMITS: Limits = Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: 128 << 10 };

/// The first byte of a TDS 8.0 strict connection: a TLS record of type handshake (its
/// ClientHello). A TDS 7.x connection opens with a PRELOGIN packet (0x12).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// What the accepting side offers.
pub struct Handshake<'a> {
    /// The certificate (None: no encryption offered).
    pub tls: Option<&'a ServerTls>,
    /// The version PRELOGIN's reply announces.
    pub version_bytes: [u8; 4],
    /// Refuse a client that will not encrypt at least its login.
    pub encrypt_login: bool,
    /// Refuse a client that does not open with TLS (TDS 8.0 strict).
    pub force_strict_encryption: bool,
}

/// What the exchange came to.
pub enum Prelogged {
    /// LOGIN7 arrived: the stream it came on (plaintext again after login-only
    /// encryption), the message, whether the connection stays encrypted, and whether it
    /// is TDS 8.0 strict.
    Login { stream: LoginStream, login: Message, encrypted: bool, strict: bool },
    /// The client went away before LOGIN7.
    Gone,
    /// Refused, for this reason (the client has been told, as far as TDS can).
    Refused(String),
}

impl Handshake<'_> {
    /// Runs the exchange on a new connection.
    pub async fn prelogin(&self, tcp: tokio::net::TcpStream) -> io::Result<Prelogged> {
        // Both kinds of connection share the port: the first byte tells them apart (MS-TDS
        // 3.3.5.1), peeked so that either path reads the stream from its start.
        let mut first = [0u8; 1];
        if tcp.peek(&mut first).await? == 0 {
            return Ok(Prelogged::Gone);
        }
        match first[0] {
            TLS_HANDSHAKE_RECORD => self.strict(tcp).await,
            kind::PRELOGIN if self.force_strict_encryption => Ok(Prelogged::Refused(
                "Force Strict Encryption is on and the client did not open with TLS (TDS 8.0 strict)".to_string(),
            )),
            kind::PRELOGIN => self.tds7(tcp).await,
            b => Err(packet::protocol(format!(
                "the first byte {b:#04x} is neither a PRELOGIN packet nor a TLS handshake"
            ))),
        }
    }

    /// TDS 8.0 strict: the TLS handshake on the bare socket (TLS 1.3 or 1.2, ALPN
    /// "tds/8.0"), then PRELOGIN and LOGIN7 inside TLS; the connection stays in TLS.
    async fn strict(&self, tcp: tokio::net::TcpStream) -> io::Result<Prelogged> {
        let Some(tls) = self.tls else {
            return Err(packet::protocol("a TLS handshake, and no certificate is configured"));
        };
        let mut stream = tokio_rustls::TlsAcceptor::from(tls.strict.clone())
            .accept(tcp)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("TLS handshake (TDS 8.0 strict) failed: {e}")))?;
        let Some(pre) = packet::read_message_of(&mut stream, &LOGIN_LIMITS, &[kind::PRELOGIN]).await? else {
            return Ok(Prelogged::Gone);
        };
        prelogin::parse(&pre.payload).map_err(|e| packet::protocol(e.0))?;
        let reply = prelogin::reply(self.version_bytes, prelogin::STRICT_ENCRYPTION);
        packet::write_message(&mut stream, kind::REPLY, &reply, 4096).await?;
        let Some(login) = packet::read_message_of(&mut stream, &LOGIN_LIMITS, &[kind::LOGIN7]).await? else {
            return Ok(Prelogged::Gone);
        };
        Ok(Prelogged::Login { stream: LoginStream::Strict(Box::new(stream)), login, encrypted: true, strict: true })
    }

    /// TDS 7.x: PRELOGIN in plaintext, the encryption decision, the TLS handshake inside
    /// PRELOGIN packets when encryption was agreed, then LOGIN7.
    async fn tds7(&self, tcp: tokio::net::TcpStream) -> io::Result<Prelogged> {
        let mut tcp = tcp;
        let Some(pre) = packet::read_message_of(&mut tcp, &LOGIN_LIMITS, &[kind::PRELOGIN]).await? else {
            return Ok(Prelogged::Gone);
        };
        if pre.kind != kind::PRELOGIN {
            return Err(packet::protocol(format!("expected PRELOGIN, got packet type {:#04x}", pre.kind)));
        }
        let client = prelogin::parse(&pre.payload).map_err(|e| packet::protocol(e.0))?;
        let encryption = match prelogin::negotiate(client.encryption, self.tls.is_some(), self.encrypt_login) {
            Ok(e) => e,
            Err(why) => {
                // Tell the client we cannot encrypt; it will give up.
                let reply = prelogin::reply(self.version_bytes, ENCRYPT_NOT_SUP);
                packet::write_message(&mut tcp, kind::REPLY, &reply, 4096).await?;
                return Ok(Prelogged::Refused(why.to_string()));
            }
        };
        let reply = prelogin::reply(self.version_bytes, encryption);
        packet::write_message(&mut tcp, kind::REPLY, &reply, 4096).await?;

        Ok(match (encryption, self.tls) {
            (ENCRYPT_ON | ENCRYPT_OFF, Some(tls)) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(tls.tds7.clone());
                let mut tls_stream = acceptor.accept(PreloginWrapped::new(tcp)).await?;
                tls_stream.get_mut().0.finish_handshake();
                let Some(login) = packet::read_message_of(&mut tls_stream, &LOGIN_LIMITS, &[kind::LOGIN7]).await?
                else {
                    return Ok(Prelogged::Gone);
                };
                if encryption == ENCRYPT_OFF {
                    // Login-only encryption: the rest of the conversation is plaintext.
                    let (wrapped, _) = tls_stream.into_inner();
                    Prelogged::Login {
                        stream: LoginStream::Plain(wrapped.into_inner()),
                        login,
                        encrypted: false,
                        strict: false,
                    }
                } else {
                    Prelogged::Login {
                        stream: LoginStream::Tls(Box::new(tls_stream)),
                        login,
                        encrypted: true,
                        strict: false,
                    }
                }
            }
            _ => {
                let Some(login) = packet::read_message_of(&mut tcp, &LOGIN_LIMITS, &[kind::LOGIN7]).await? else {
                    return Ok(Prelogged::Gone);
                };
                Prelogged::Login { stream: LoginStream::Plain(tcp), login, encrypted: false, strict: false }
            }
        })
    }
}

/// Answers LOGIN7 with `errors` (sent as from `server`) and closes the connection.
pub async fn refuse(stream: &mut LoginStream, server: &str, version: Version, errors: &[SqlError]) -> io::Result<()> {
    let mut out = BytesMut::new();
    for e in errors {
        tokens::message(&mut out, version, e, server);
    }
    tokens::done(&mut out, version, tokens::DONE, done::ERROR, 0, 0);
    packet::write_message(stream, kind::REPLY, &out, 4096).await?;
    let _ = stream.shutdown().await;
    Ok(())
}
