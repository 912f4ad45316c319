//! TLS for TDS 7.x: the server's certificate, and the framing that carries the TLS
//! handshake inside PRELOGIN packets.
//!
//! In TDS 7.x the client and server negotiate encryption in PRELOGIN; the TLS handshake
//! then travels as the payload of PRELOGIN (0x12) packets, and once it is done the TLS
//! records travel bare on the TCP stream, with TDS packets inside them. [`PreloginFramed`]
//! is the stream rustls works on: while `handshaking` it strips packet headers from what it
//! reads and wraps what rustls writes (one message per flush, i.e. per TLS flight) into
//! PRELOGIN packets; afterwards it passes bytes through.
//!
//! TDS 7.x runs TLS 1.2 only (as SQL Server does): TLS 1.3 sends session tickets after the
//! handshake, which clients that have switched to bare records would misread.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::packet::{HEADER_LEN, MAX_PACKET_SIZE, STATUS_EOM};

/// PRELOGIN's packet type, which carries the handshake.
const PRELOGIN: u8 = 0x12;
/// Packet size for handshake messages (the client's packet size is not known yet).
const HANDSHAKE_PACKET_SIZE: usize = 4096;
/// The largest handshake flight accepted, bounding what a client can make the server buffer.
const MAX_FLIGHT_BYTES: usize = 256 << 10;

/// Where the server's certificate comes from.
#[derive(Clone, Debug)]
pub enum CertificateSource {
    /// PEM files given by the administrator: the certificate chain and its private key.
    Files { certificate: PathBuf, key: PathBuf },
    /// A self-signed certificate kept in this directory, made on first start.
    SelfSigned { dir: PathBuf },
}

/// Builds the TLS configuration for TDS 7.x from `source`, making the self-signed
/// certificate if it does not exist yet. Returns the configuration and the certificate's
/// path (for the log).
pub fn server_config(source: &CertificateSource) -> io::Result<(Arc<rustls::ServerConfig>, PathBuf)> {
    let (cert_path, key_path) = match source {
        CertificateSource::Files { certificate, key } => (certificate.clone(), key.clone()),
        CertificateSource::SelfSigned { dir } => {
            let cert = dir.join("tessera.crt");
            let key = dir.join("tessera.key");
            if !cert.exists() || !key.exists() {
                make_self_signed(&cert, &key)?;
            }
            (cert, key)
        }
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| invalid(format!("cannot read the certificate '{}': {e}", cert_path.display())))?;
    if chain.is_empty() {
        return Err(invalid(format!("no certificate in '{}'", cert_path.display())));
    }
    let key = PrivateKeyDer::from_pem_file(&key_path)
        .map_err(|e| invalid(format!("cannot read the private key '{}': {e}", key_path.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS12])
        .map_err(|e| invalid(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| invalid(format!("the certificate and key in '{}' do not fit: {e}", cert_path.display())))?;
    config.send_tls13_tickets = 0;
    Ok((Arc::new(config), cert_path))
}

/// A self-signed certificate for localhost, 127.0.0.1 and this host's name; the key is
/// readable by its owner only.
fn make_self_signed(cert_path: &Path, key_path: &Path) -> io::Result<()> {
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
    if let Ok(host) = std::fs::read_to_string("/etc/hostname") {
        let host = host.trim();
        if !host.is_empty() {
            names.push(host.to_string());
        }
    }
    let made = rcgen::generate_simple_self_signed(names).map_err(|e| invalid(e.to_string()))?;
    if let Some(dir) = cert_path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let key_tmp = key_path.with_extension("key.tmp");
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&key_tmp)?;
        f.write_all(made.key_pair.serialize_pem().as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&key_tmp, key_path)?;
    std::fs::write(cert_path, made.cert.pem())?;
    Ok(())
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// The stream under rustls during a TDS 7.x TLS handshake; see the module docs.
pub struct PreloginFramed<S> {
    inner: S,
    handshaking: bool,
    /// The header of the packet being read, and how much of it has arrived.
    header: [u8; HEADER_LEN],
    header_read: usize,
    /// Payload bytes of the current packet not yet read.
    payload_left: usize,
    /// Bytes rustls wrote that are not framed yet.
    pending: Vec<u8>,
    /// Framed bytes being written, and how far.
    framed: Vec<u8>,
    framed_written: usize,
}

impl<S> PreloginFramed<S> {
    pub fn new(inner: S) -> PreloginFramed<S> {
        PreloginFramed {
            inner,
            handshaking: true,
            header: [0; HEADER_LEN],
            header_read: 0,
            payload_left: 0,
            pending: Vec::new(),
            framed: Vec::new(),
            framed_written: 0,
        }
    }

    /// The handshake is over: bytes pass through from now on.
    pub fn handshake_done(&mut self) {
        debug_assert!(self.pending.is_empty() && self.framed_written == self.framed.len());
        self.handshaking = false;
    }

    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Wraps `pending` into PRELOGIN packets, the last one marked end of message.
    fn frame_pending(&mut self) {
        let chunk = HANDSHAKE_PACKET_SIZE - HEADER_LEN;
        let pending = std::mem::take(&mut self.pending);
        self.framed.clear();
        self.framed_written = 0;
        let count = pending.len().div_ceil(chunk);
        for (i, part) in pending.chunks(chunk).enumerate() {
            let len = (part.len() + HEADER_LEN) as u16;
            let status = if i + 1 == count { STATUS_EOM } else { 0 };
            self.framed.extend_from_slice(&[PRELOGIN, status]);
            self.framed.extend_from_slice(&len.to_be_bytes());
            self.framed.extend_from_slice(&[0, 0, (i + 1) as u8, 0]);
            self.framed.extend_from_slice(part);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for PreloginFramed<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.handshaking {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        while this.payload_left == 0 {
            let mut header = ReadBuf::new(&mut this.header[this.header_read..]);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut header))?;
            let n = header.filled().len();
            if n == 0 {
                return if this.header_read == 0 {
                    Poll::Ready(Ok(()))
                } else {
                    Poll::Ready(Err(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated packet header")))
                };
            }
            this.header_read += n;
            if this.header_read < HEADER_LEN {
                continue;
            }
            this.header_read = 0;
            if this.header[0] != PRELOGIN {
                return Poll::Ready(Err(invalid(format!(
                    "expected the TLS handshake in a PRELOGIN packet, got type 0x{:02X}",
                    this.header[0]
                ))));
            }
            let len = usize::from(u16::from_be_bytes([this.header[2], this.header[3]]));
            if !(HEADER_LEN..=MAX_PACKET_SIZE).contains(&len) {
                return Poll::Ready(Err(invalid(format!("packet length {len} out of range"))));
            }
            this.payload_left = len - HEADER_LEN;
        }
        // Handshake packets are small: copying through a stack buffer keeps this safe code.
        let mut chunk = [0u8; 2048];
        let want = this.payload_left.min(buf.remaining()).min(chunk.len());
        let mut part = ReadBuf::new(&mut chunk[..want]);
        ready!(Pin::new(&mut this.inner).poll_read(cx, &mut part))?;
        let n = part.filled().len();
        if n == 0 {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated packet")));
        }
        buf.put_slice(part.filled());
        this.payload_left -= n;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for PreloginFramed<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if !this.handshaking {
            return Pin::new(&mut this.inner).poll_write(cx, data);
        }
        if this.pending.len() + data.len() > MAX_FLIGHT_BYTES {
            return Poll::Ready(Err(invalid("TLS handshake flight too large")));
        }
        this.pending.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.framed_written == this.framed.len() && !this.pending.is_empty() {
            this.frame_pending();
        }
        while this.framed_written < this.framed.len() {
            let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &this.framed[this.framed_written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            this.framed_written += n;
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
