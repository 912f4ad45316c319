//! TLS: the certificate (configured, or self-signed and kept in the data directory on
//! first start), the two server configurations built over it ([`ServerTls`]), and
//! [`PreloginWrapped`], the stream adapter that carries a TDS 7.x handshake inside PRELOGIN
//! packets.
//!
//! TDS 7.x: during the handshake the client wraps its TLS records in PRELOGIN (0x12)
//! packets and expects the server's records wrapped the same way; once the handshake is
//! done both sides exchange raw TLS records, with TDS packets inside them. The adapter
//! therefore has two modes, switched by [`PreloginWrapped::finish_handshake`]:
//! - handshake: reads strip 8-byte packet headers (only PRELOGIN packets are accepted);
//!   writes are buffered and sent as one PRELOGIN packet on flush;
//! - passthrough: bytes go through untouched.
//!
//! TDS 8.0 "strict": the client's first bytes are a TLS ClientHello on the bare socket, so
//! the handshake needs no adapter; PRELOGIN and everything after it travel inside TLS.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::packet::{kind, HEADER_LEN};

/// The ALPN protocol of TDS 8.0 (MS-TDS 1.9).
pub const ALPN_TDS8: &[u8] = b"tds/8.0";

/// The server's TLS configurations, both over the same certificate.
pub struct ServerTls {
    /// TDS 7.x, the handshake inside PRELOGIN packets: TLS 1.2 only, as SQL Server for
    /// TDS 7.x. With 1.3 the client speaks last in the handshake, and go-mssqldb keeps its
    /// final handshake packet buffered until its next read, which never comes, so its
    /// Finished is lost.
    pub tds7: Arc<rustls::ServerConfig>,
    /// TDS 8.0 strict, the handshake first on the bare socket: TLS 1.3 or 1.2, ALPN
    /// "tds/8.0" (a client that offers ALPN without it is refused; one that offers no ALPN
    /// is served, as MS-TDS says the server then assumes TDS 8.0).
    pub strict: Arc<rustls::ServerConfig>,
}

/// The certificate the server presents, loaded by [`server_config`].
pub struct LoadedTls {
    pub tls: ServerTls,
    /// The certificate's file.
    pub cert_path: PathBuf,
    /// Why the self-signed pair in the data directory was made afresh (for the ERRORLOG):
    /// it was missing, or what was there could not be used.
    pub generated: Option<String>,
}

/// Loads the configured certificate and key, or the self-signed pair under
/// `data_dir/tls/`, making it when it is missing. A configured pair that cannot be used
/// is an error; the self-signed pair is the server's own, so one that cannot be used (a
/// power loss right after it was written can leave it empty or half written) is made
/// afresh, and the reason reported in [`LoadedTls::generated`].
pub fn server_config(cert: Option<&Path>, key: Option<&Path>, data_dir: &Path) -> Result<LoadedTls, String> {
    if let (Some(c), Some(k)) = (cert, key) {
        let tls = load_pair(c, k)?;
        return Ok(LoadedTls { tls, cert_path: c.to_path_buf(), generated: None });
    }
    let dir = data_dir.join("tls");
    let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
    let reason = if !c.exists() && !k.exists() {
        "there was none".to_string()
    } else {
        match load_pair(&c, &k) {
            Ok(tls) => return Ok(LoadedTls { tls, cert_path: c, generated: None }),
            Err(e) => e,
        }
    };
    generate(&dir, &c, &k)?;
    let tls = load_pair(&c, &k)?;
    Ok(LoadedTls { tls, cert_path: c, generated: Some(reason) })
}

/// Makes a self-signed certificate for this host and writes it and its key, each file
/// replaced whole and durably (the key first: a crash between the two leaves a pair that
/// does not match, which the next start replaces).
fn generate(dir: &Path, cert_path: &Path, key_path: &Path) -> Result<(), String> {
    tessera_io::durable::create_dir_all(dir).map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
    let hostname = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".to_string());
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    if hostname != "localhost" {
        names.push(hostname);
    }
    let ck = rcgen::generate_simple_self_signed(names).map_err(|e| format!("cannot make a certificate: {e}"))?;
    let write = |path: &Path, bytes: &[u8], mode| {
        tessera_io::durable::write_atomically(path, bytes, mode)
            .map_err(|e| format!("cannot write '{}': {e}", path.display()))
    };
    write(key_path, ck.key_pair.serialize_pem().as_bytes(), 0o600)?;
    write(cert_path, ck.cert.pem().as_bytes(), 0o644)
}

/// The two server configurations over the certificate chain at `cert_path` and the key at
/// `key_path`; an error says what is wrong with them.
fn load_pair(cert_path: &Path, key_path: &Path) -> Result<ServerTls, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| format!("cannot read certificate '{}': {e}", cert_path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("bad certificate '{}': {e}", cert_path.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in '{}'", cert_path.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| format!("cannot read private key '{}': {e}", key_path.display()))?;
    let tds7 = config(&[&rustls::version::TLS12], certs.clone(), key.clone_key())?;
    let mut strict = config(&[&rustls::version::TLS13, &rustls::version::TLS12], certs, key)?;
    strict.alpn_protocols = vec![ALPN_TDS8.to_vec()];
    Ok(ServerTls { tds7: Arc::new(tds7), strict: Arc::new(strict) })
}

fn config(
    versions: &[&'static rustls::SupportedProtocolVersion],
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<rustls::ServerConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("certificate and key do not match: {e}"))?;
    // TLS 1.3 session tickets follow the handshake; written while a TDS 7.x handshake is
    // still wrapped in PRELOGIN packets they would corrupt the client's stream. Clients
    // here do not resume sessions, so none are sent, strict connections included.
    config.send_tls13_tickets = 0;
    Ok(config)
}

/// See the module documentation.
pub struct PreloginWrapped<S> {
    inner: S,
    handshake: bool,
    /// Header bytes of the packet being read, and how much of its payload is left.
    header: [u8; HEADER_LEN],
    header_got: usize,
    body_left: usize,
    /// Outgoing handshake bytes waiting for flush; `sent` of the framed packet are written.
    out: Vec<u8>,
    framed: Vec<u8>,
    sent: usize,
    /// Bytes read while looking for a packet header that turned out to be raw TLS (the
    /// client's first record after its handshake); handed out before reading on.
    leftover: Vec<u8>,
}

impl<S> PreloginWrapped<S> {
    pub fn new(inner: S) -> PreloginWrapped<S> {
        PreloginWrapped {
            inner,
            handshake: true,
            header: [0; HEADER_LEN],
            header_got: 0,
            body_left: 0,
            out: Vec::new(),
            framed: Vec::new(),
            sent: 0,
            leftover: Vec::new(),
        }
    }

    pub fn finish_handshake(&mut self) {
        self.handshake = false;
    }

    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The socket, for a connection that goes on in TLS with the socket used directly:
    /// the handshake must be over and nothing may be buffered here.
    pub fn into_raw(self) -> std::io::Result<S> {
        if self.handshake || !self.leftover.is_empty() || !self.framed.is_empty() || !self.out.is_empty() {
            return Err(crate::packet::protocol("TLS handshake bytes left over after login"));
        }
        Ok(self.inner)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for PreloginWrapped<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.leftover.is_empty() {
            let n = this.leftover.len().min(buf.remaining());
            buf.put_slice(&this.leftover[..n]);
            this.leftover.drain(..n);
            return Poll::Ready(Ok(()));
        }
        if !this.handshake {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        while this.body_left == 0 {
            while this.header_got < HEADER_LEN {
                let mut hb = ReadBuf::new(&mut this.header[this.header_got..]);
                std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut hb))?;
                let n = hb.filled().len();
                if n == 0 {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "end of stream in TLS handshake",
                    )));
                }
                this.header_got += n;
                if this.header[0] != kind::PRELOGIN && (0x14..=0x17).contains(&this.header[0]) {
                    // A raw TLS record: the client finished its handshake and sent its
                    // first record (LOGIN7) before we switched modes.
                    this.handshake = false;
                    this.leftover = this.header[..this.header_got].to_vec();
                    this.header_got = 0;
                    let n = this.leftover.len().min(buf.remaining());
                    buf.put_slice(&this.leftover[..n]);
                    this.leftover.drain(..n);
                    return Poll::Ready(Ok(()));
                }
            }
            // SQL Server answers the client's handshake in REPLY packets, tessera in
            // PRELOGIN packets; the client side takes either.
            if this.header[0] != kind::PRELOGIN && this.header[0] != kind::REPLY {
                return Poll::Ready(Err(crate::packet::protocol(format!(
                    "packet type {:#04x} during the TLS handshake",
                    this.header[0]
                ))));
            }
            let len = usize::from(u16::from_be_bytes([this.header[2], this.header[3]]));
            if len < HEADER_LEN {
                return Poll::Ready(Err(crate::packet::protocol("bad packet length in the TLS handshake")));
            }
            this.body_left = len - HEADER_LEN;
            this.header_got = 0;
        }
        let want = this.body_left.min(buf.remaining());
        let mut limited = ReadBuf::new(buf.initialize_unfilled_to(want));
        std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut limited))?;
        let n = limited.filled().len();
        if n == 0 {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::UnexpectedEof, "end of stream in TLS handshake")));
        }
        buf.advance(n);
        this.body_left -= n;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for PreloginWrapped<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if !this.handshake && this.framed.is_empty() {
            return Pin::new(&mut this.inner).poll_write(cx, data);
        }
        if !this.handshake {
            std::task::ready!(this.poll_drain(cx))?;
            return Pin::new(&mut this.inner).poll_write(cx, data);
        }
        this.out.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.framed.is_empty() && !this.out.is_empty() {
            // One PRELOGIN packet per flight (split at the packet size limit).
            let mut id = 1u8;
            let mut framed = bytes::BytesMut::new();
            crate::packet::frame(kind::PRELOGIN, &this.out, 4096, true, &mut id, &mut framed);
            this.framed = framed.to_vec();
            this.out.clear();
            this.sent = 0;
        }
        std::task::ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: AsyncWrite + Unpin> PreloginWrapped<S> {
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.framed.len() {
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &self.framed[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.framed.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}
