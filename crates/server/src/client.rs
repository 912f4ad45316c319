//! A TDS client: what `tessera sql -S` uses to run batches on a server, turning the
//! server's tokens back into the T-SQL layer's result stream, so that the sqlcmd-format
//! output over the network is the same as in process.

use std::io;
use std::sync::Arc;

use tessera_semantics::output::Command;
use tessera_semantics::output::OutputColumn;
use tessera_semantics::output::ResultSink;
use tessera_semantics::types::Value;
use tessera_sql::{ErrorDetail, SqlError};
use tokio::net::TcpStream;

use crate::codec::{DecodeError, Input, Reader};
use crate::packet::{self, kind, Limits};
use crate::prelogin::{self, ENCRYPT_OFF, ENCRYPT_ON, ENCRYPT_REQ};
use crate::tls::PreloginWrapped;
use crate::tokens::{self, done};
use crate::types::{read_type_info, read_value, TypeInfo};

/// The client's connection: plain TCP or TLS.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Stream for T {}

/// TDS 7.4, the version the client asks for in TDS 7.x.
const TDS_VERSION: u32 = 0x7400_0004;
/// TDS 8.0, what a strict connection's LOGIN7 says (as go-mssqldb's does).
const TDS8_VERSION: u32 = 0x0800_0000;

pub struct Client {
    stream: Box<dyn Stream>,
    packet_size: usize,
}

fn tls_config(
    versions: &[&'static rustls::SupportedProtocolVersion],
    trust_server_certificate: bool,
) -> io::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| protocol(e.to_string()))?;
    Ok(if trust_server_certificate {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(TrustAny(provider))).with_no_client_auth()
    } else {
        builder.with_root_certificates(system_roots()?).with_no_client_auth()
    })
}

fn server_name(host: &str) -> io::Result<rustls::pki_types::ServerName<'static>> {
    rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| protocol(format!("'{host}' is not a valid server name: {e}")))
}

fn handshake_failed(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("TLS handshake failed: {e}"))
}

/// The TLS handshake of TDS 7.x, inside PRELOGIN packets.
async fn handshake(
    tcp: TcpStream,
    host: &str,
    trust_server_certificate: bool,
) -> io::Result<tokio_rustls::client::TlsStream<PreloginWrapped<TcpStream>>> {
    let config = tls_config(&[&rustls::version::TLS12], trust_server_certificate)?;
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(server_name(host)?, PreloginWrapped::new(tcp))
        .await
        .map_err(handshake_failed)?;
    tls.get_mut().0.finish_handshake();
    Ok(tls)
}

/// The TLS handshake of TDS 8.0 strict, first thing on the socket: TLS 1.3 or 1.2, ALPN
/// "tds/8.0".
async fn strict_handshake(
    tcp: TcpStream,
    host: &str,
    trust_server_certificate: bool,
) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut config = tls_config(&[&rustls::version::TLS13, &rustls::version::TLS12], trust_server_certificate)?;
    config.alpn_protocols = vec![crate::tls::ALPN_TDS8.to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config)).connect(server_name(host)?, tcp).await.map_err(handshake_failed)
}

/// The system's trusted CAs: `SSL_CERT_FILE`, else Debian's bundle.
fn system_roots() -> io::Result<rustls::RootCertStore> {
    use rustls::pki_types::pem::PemObject;
    let path = std::env::var("SSL_CERT_FILE").unwrap_or_else(|_| "/etc/ssl/certs/ca-certificates.crt".to_string());
    let mut roots = rustls::RootCertStore::empty();
    let certs = rustls::pki_types::CertificateDer::pem_file_iter(&path)
        .map_err(|e| protocol(format!("cannot read the trusted certificates in '{path}': {e}")))?;
    for cert in certs.flatten() {
        let _ = roots.add(cert);
    }
    Ok(roots)
}

/// -C: any certificate is accepted (signatures are still checked).
#[derive(Debug)]
struct TrustAny(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for TrustAny {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What the client accepts from a server: whole replies up to 1 GiB.
const REPLY_LIMITS: Limits = Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: 1 << 30 };

fn protocol(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

impl From<DecodeError> for io::Error {
    fn from(e: DecodeError) -> io::Error {
        protocol(format!("malformed reply: {e}"))
    }
}

fn ucs2(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// LOGIN7 passwords: each byte's nibbles swapped, then XOR 0xA5.
fn scramble(password: &str) -> Vec<u8> {
    ucs2(password).into_iter().map(|b| b.rotate_left(4) ^ 0xA5).collect()
}

fn login7(user: &str, password: &str, database: &str, app: &str, version: u32) -> Vec<u8> {
    const FIXED: usize = 94;
    let host = std::env::var("HOSTNAME").unwrap_or_default();
    let fields: [Vec<u8>; 9] = [
        ucs2(&host),
        ucs2(user),
        scramble(password),
        ucs2(app),
        ucs2(""),
        Vec::new(),
        ucs2("tessera"),
        ucs2(""),
        ucs2(database),
    ];
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let chars = if i == 5 { 0 } else { f.len() / 2 };
        offsets.extend_from_slice(&((FIXED + data.len()) as u16).to_le_bytes());
        offsets.extend_from_slice(&(chars as u16).to_le_bytes());
        data.extend_from_slice(f);
    }
    let mut out = Vec::with_capacity(FIXED + data.len());
    out.extend_from_slice(&((FIXED + data.len()) as u32).to_le_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&4096u32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // client program version
    out.extend_from_slice(&std::process::id().to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // connection id
    out.extend_from_slice(&[0xE0, 0x03, 0x00, 0x00]); // option flags 1, 2, type flags, flags 3
    out.extend_from_slice(&0i32.to_le_bytes()); // time zone
    out.extend_from_slice(&0x0409u32.to_le_bytes()); // LCID
    out.extend_from_slice(&offsets);
    out.extend_from_slice(&[0; 6]); // client id
    out.extend_from_slice(&[0; 4]); // SSPI
    out.extend_from_slice(&[0; 4]); // attach db file
    out.extend_from_slice(&[0; 4]); // change password
    out.extend_from_slice(&0u32.to_le_bytes()); // long SSPI
    debug_assert_eq!(out.len(), FIXED);
    out.extend_from_slice(&data);
    out
}

/// What a response carried besides the tokens handed to the sink.
#[derive(Default)]
struct Outcome {
    failed: bool,
    logged_in: bool,
    /// A DONE acknowledged an Attention.
    attention: bool,
}

/// How the client encrypts (sqlcmd's -N and -C).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encryption {
    /// The whole connection in TLS (-N); the server's certificate must be trusted by the
    /// system's CA store unless `trust_server_certificate` (-C).
    Full { trust_server_certificate: bool },
    /// TLS for the login only when the server offers it (so the password never travels
    /// in the clear); plaintext against a server without TLS. The certificate is not
    /// checked, as SQL Server's drivers do not check it for login-only encryption.
    LoginOnly,
    /// TDS 8.0 strict: TLS before PRELOGIN, the whole connection encrypted; the
    /// certificate is checked as for `Full`.
    Strict { trust_server_certificate: bool },
}

/// What `connect` needs.
#[derive(Clone, Debug)]
pub struct ConnectOptions<'a> {
    pub host: &'a str,
    pub port: u16,
    pub user: &'a str,
    pub password: &'a str,
    pub database: &'a str,
    pub encryption: Encryption,
}

/// TDS 7.x: PRELOGIN in plaintext, TLS as the server agreed, LOGIN7. `full` is
/// `Some(trust_server_certificate)` for [`Encryption::Full`], `None` for login-only.
async fn tds7_login(
    mut tcp: TcpStream,
    options: &ConnectOptions<'_>,
    full: Option<bool>,
) -> io::Result<Box<dyn Stream>> {
    let asked = if full.is_some() { ENCRYPT_ON } else { ENCRYPT_OFF };
    packet::write_message(&mut tcp, kind::PRELOGIN, &prelogin::reply([0, 1, 0, 0], asked), 4096).await?;
    let answer = prelogin::parse(&reply_payload(packet::read_message(&mut tcp, &REPLY_LIMITS).await?)?)?;
    let body = login7(options.user, options.password, options.database, "tessera sql", TDS_VERSION);
    Ok(match (full, answer.encryption) {
        (None, Some(ENCRYPT_OFF)) => {
            let mut tls = handshake(tcp, options.host, true).await?;
            packet::write_message(&mut tls, kind::LOGIN7, &body, 4096).await?;
            // Login-only: the server answers LOGIN7 in plaintext.
            Box::new(tls.into_inner().0.into_inner())
        }
        (_, Some(ENCRYPT_ON | ENCRYPT_REQ)) => {
            let mut tls = handshake(tcp, options.host, full.unwrap_or(true)).await?;
            packet::write_message(&mut tls, kind::LOGIN7, &body, 4096).await?;
            Box::new(tls)
        }
        (Some(_), _) => return Err(protocol("the server does not support encryption, which -N requires")),
        (None, _) => {
            packet::write_message(&mut tcp, kind::LOGIN7, &body, 4096).await?;
            Box::new(tcp)
        }
    })
}

/// Logs in over plain TCP — PRELOGIN saying encryption is not supported, LOGIN7 in the
/// clear — and hands the socket back with the packet size the server agreed, for callers
/// that speak TDS on it themselves (the benchmark's load generator). A refused login is the
/// server's error, as for [`Client::connect`].
pub async fn login_plaintext(
    mut tcp: TcpStream,
    user: &str,
    password: &str,
    database: &str,
) -> io::Result<(TcpStream, usize)> {
    let hello = prelogin::reply([0, 1, 0, 0], prelogin::ENCRYPT_NOT_SUP);
    packet::write_message(&mut tcp, kind::PRELOGIN, &hello, 4096).await?;
    let answer = prelogin::parse(&reply_payload(packet::read_message(&mut tcp, &REPLY_LIMITS).await?)?)?;
    if matches!(answer.encryption, Some(ENCRYPT_ON | ENCRYPT_REQ)) {
        return Err(protocol("the server requires encryption"));
    }
    let body = login7(user, password, database, "tessera bench", TDS_VERSION);
    packet::write_message(&mut tcp, kind::LOGIN7, &body, 4096).await?;
    let reply = reply_payload(packet::read_message(&mut tcp, &REPLY_LIMITS).await?)?;
    let mut messages = Vec::new();
    let mut packet_size = 4096;
    let outcome = decode(&reply, &mut Messages(&mut messages), &mut packet_size)?;
    if !outcome.logged_in {
        let text =
            messages.iter().filter(|m| m.severity > 10).map(|m| m.message.clone()).collect::<Vec<_>>().join("\n");
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, text));
    }
    Ok((tcp, packet_size))
}

impl Client {
    /// Connects and logs in; a refused login is the server's error (18456 and the like).
    pub async fn connect(options: &ConnectOptions<'_>) -> io::Result<Client> {
        let tcp = TcpStream::connect((options.host, options.port)).await?;
        let _ = tcp.set_nodelay(true);
        let stream: Box<dyn Stream> = match options.encryption {
            Encryption::Strict { trust_server_certificate } => {
                let mut tls = strict_handshake(tcp, options.host, trust_server_certificate).await?;
                let hello = prelogin::reply([0, 1, 0, 0], ENCRYPT_ON);
                packet::write_message(&mut tls, kind::PRELOGIN, &hello, 4096).await?;
                // The answer's ENCRYPTION means nothing here: the connection is in TLS.
                prelogin::parse(&reply_payload(packet::read_message(&mut tls, &REPLY_LIMITS).await?)?)?;
                let body = login7(options.user, options.password, options.database, "tessera sql", TDS8_VERSION);
                packet::write_message(&mut tls, kind::LOGIN7, &body, 4096).await?;
                Box::new(tls)
            }
            Encryption::Full { trust_server_certificate } => {
                tds7_login(tcp, options, Some(trust_server_certificate)).await?
            }
            Encryption::LoginOnly => tds7_login(tcp, options, None).await?,
        };
        let mut client = Client { stream, packet_size: 4096 };
        let reply = client.read_reply().await?;
        let mut messages = Vec::new();
        let mut sink = Messages(&mut messages);
        let outcome = decode(&reply, &mut sink, &mut client.packet_size)?;
        if !outcome.logged_in {
            let text =
                messages.iter().filter(|m| m.severity > 10).map(|m| m.message.clone()).collect::<Vec<_>>().join("\n");
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, text));
        }
        Ok(client)
    }

    async fn read_reply(&mut self) -> io::Result<Vec<u8>> {
        reply_payload(packet::read_message(&mut self.stream, &REPLY_LIMITS).await?)
    }

    /// Runs one batch; true if it raised an error.
    pub async fn execute(&mut self, text: &str, sink: &mut dyn ResultSink) -> io::Result<bool> {
        packet::write_message(&mut self.stream, kind::SQL_BATCH, &batch_body(text), self.packet_size).await?;
        let reply = self.read_reply().await?;
        Ok(decode(&reply, sink, &mut self.packet_size)?.failed)
    }

    /// Runs one batch, cancelling it with an Attention once it has run for `limit`; a
    /// cancelled batch is a `TimedOut` error (after what it produced went to the sink), and
    /// the connection stays usable.
    pub async fn execute_with_timeout(
        &mut self,
        text: &str,
        sink: &mut dyn ResultSink,
        limit: std::time::Duration,
    ) -> io::Result<bool> {
        packet::write_message(&mut self.stream, kind::SQL_BATCH, &batch_body(text), self.packet_size).await?;
        let packet_size = self.packet_size;
        let (message, cancelled) = {
            let (mut rd, mut wr) = tokio::io::split(&mut self.stream);
            let read = packet::read_message(&mut rd, &REPLY_LIMITS);
            tokio::pin!(read);
            tokio::select! {
                m = &mut read => (m?, false),
                _ = tokio::time::sleep(limit) => {
                    packet::write_message(&mut wr, kind::ATTENTION, &[], packet_size).await?;
                    (read.await?, true)
                }
            }
        };
        let reply = reply_payload(message)?;
        let mut outcome = decode(&reply, sink, &mut self.packet_size)?;
        // The batch may have finished before the Attention arrived: the server then
        // acknowledges it in a reply of its own.
        while cancelled && !outcome.attention {
            let reply = self.read_reply().await?;
            outcome = decode(&reply, sink, &mut self.packet_size)?;
        }
        if cancelled {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "Query timeout expired"));
        }
        Ok(outcome.failed)
    }
}

/// A SQL batch request's payload: ALL_HEADERS with a transaction descriptor (none), then
/// the text in UCS-2.
pub fn batch_body(text: &str) -> Vec<u8> {
    let mut body = Vec::with_capacity(22 + text.len() * 2);
    body.extend_from_slice(&22u32.to_le_bytes());
    body.extend_from_slice(&18u32.to_le_bytes());
    body.extend_from_slice(&2u16.to_le_bytes());
    body.extend_from_slice(&0u64.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&ucs2(text));
    body
}

fn reply_payload(message: Option<packet::Message>) -> io::Result<Vec<u8>> {
    match message {
        Some(m) if m.kind == kind::REPLY => Ok(m.payload.to_vec()),
        Some(m) => Err(protocol(format!("unexpected packet type {:#04x} from the server", m.kind))),
        None => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection")),
    }
}

/// Collects only messages (during login).
struct Messages<'a>(&'a mut Vec<SqlError>);

impl ResultSink for Messages<'_> {
    fn columns(&mut self, _: &[OutputColumn]) {}
    fn row(&mut self, _: &[tessera_semantics::types::Value]) {}
    fn done(&mut self, _: Option<u64>, _: Command) {}
    fn message(&mut self, m: &SqlError) {
        self.0.push(m.clone());
    }
}

/// Hands a response's tokens to the sink.
fn decode(payload: &[u8], sink: &mut dyn ResultSink, packet_size: &mut usize) -> io::Result<Outcome> {
    let mut r = Reader::new(payload);
    let mut outcome = Outcome::default();
    let mut columns: Vec<TypeInfo> = Vec::new();
    let mut in_result = false;
    while r.remaining() > 0 {
        let token = r.u8()?;
        match token {
            tokens::COLMETADATA => {
                let count = usize::from(r.u16()?);
                let mut described = Vec::with_capacity(count);
                columns.clear();
                for _ in 0..count {
                    r.u32()?;
                    let flags = r.u16()?;
                    let info = read_type_info(&mut r)?;
                    let name = r.b_varchar()?;
                    described.push(OutputColumn { name, ty: info.sql_type(), nullable: flags & 1 != 0 });
                    columns.push(info);
                }
                sink.columns(&described);
                in_result = true;
            }
            tokens::ROW => {
                let mut row = Vec::with_capacity(columns.len());
                for info in &columns {
                    row.push(read_value(&mut r, info)?);
                }
                sink.row(&row);
            }
            tokens::NBCROW => {
                let bitmap = r.bytes(columns.len().div_ceil(8))?;
                let mut row = Vec::with_capacity(columns.len());
                for (i, info) in columns.iter().enumerate() {
                    let null = bitmap[i / 8] & (1 << (i % 8)) != 0;
                    row.push(if null { Value::Null } else { read_value(&mut r, info)? });
                }
                sink.row(&row);
            }
            tokens::DONE | tokens::DONEPROC | tokens::DONEINPROC => {
                let status = r.u16()?;
                let cur_cmd = r.u16()?;
                let count = r.u64()?;
                let counted = status & done::COUNT != 0;
                outcome.attention |= status & done::ATTN != 0;
                if counted || in_result {
                    // What this sink needs to know: a result set's end, or a count of
                    // rows a statement changed (which one, the CurCmd says).
                    let command = match cur_cmd {
                        _ if in_result => Command::Select,
                        0xC2 => Command::SelectInto,
                        0xC4 => Command::Delete,
                        0xC5 => Command::Update,
                        0x117 => Command::Merge,
                        0xF0 => Command::BulkInsert,
                        _ => Command::Insert,
                    };
                    sink.done(counted.then_some(count), command);
                }
                in_result = false;
            }
            tokens::ERROR | tokens::INFO => {
                let _len = r.u16()?;
                let number = r.u32()? as i32;
                let state = r.u8()?;
                let severity = r.u8()?;
                let message = r.us_varchar()?;
                let _server = r.b_varchar()?;
                let procedure = r.b_varchar()?;
                let line = r.u32()?;
                if severity > 10 {
                    outcome.failed = true;
                    // A result set an error interrupted ends without its DONE count.
                    in_result = false;
                }
                sink.message(&SqlError::from(ErrorDetail {
                    number,
                    severity,
                    state,
                    message,
                    line,
                    procedure: (!procedure.is_empty()).then_some(procedure),
                    preceding: Vec::new(),
                }));
            }
            tokens::ENVCHANGE => {
                let len = usize::from(r.u16()?);
                let body = r.bytes(len)?;
                if body.first() == Some(&4) {
                    let mut b = Reader::new(&body[1..]);
                    if let Ok(size) = b.b_varchar()?.parse::<usize>() {
                        *packet_size = size.clamp(packet::MIN_PACKET_SIZE, packet::MAX_PACKET_SIZE);
                    }
                }
            }
            tokens::LOGINACK => {
                let len = usize::from(r.u16()?);
                r.bytes(len)?;
                outcome.logged_in = true;
            }
            tokens::RETURNSTATUS => {
                let status = r.u32()? as i32;
                sink.return_status(status);
            }
            // ORDER: the columns a result is sorted by.
            tokens::ORDER => {
                let len = usize::from(r.u16()?);
                r.bytes(len)?;
            }
            // FEATUREEXTACK: (feature id, length, data) entries up to 0xFF.
            0xAE => loop {
                if r.u8()? == 0xFF {
                    break;
                }
                let len = r.u32()? as usize;
                r.bytes(len)?;
            },
            other => return Err(protocol(format!("unexpected token 0x{other:02X} from the server"))),
        }
    }
    Ok(outcome)
}
