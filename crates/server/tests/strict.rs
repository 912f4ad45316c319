//! TDS 8.0 "strict" encryption: TLS first (TLS 1.3 offered, ALPN "tds/8.0"), then PRELOGIN
//! and LOGIN7 inside TLS, served on the same port as TDS 7.x connections, told apart by
//! their first byte; garbage and failed handshakes end only their own connection; Force
//! Strict Encryption refuses TDS 7.x connections.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{TestServer, PASSWORD};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tessera_semantics::output::Collected;
use tessera_semantics::types::Value;
use tessera_server::client::{Client, ConnectOptions, Encryption};
use tessera_server::packet::{self, kind, Limits};
use tessera_server::prelogin::{self, ENCRYPT_ON};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const REPLY_LIMITS: Limits = Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: 1 << 20 };

/// A client TLS configuration that trusts only the server's self-signed certificate.
fn trusting(
    server: &TestServer,
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[u8],
) -> Arc<rustls::ClientConfig> {
    let cert = server.dir.path().join("data").join("tls").join("cert.pem");
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(&cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(config)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn options(port: u16, encryption: Encryption) -> ConnectOptions<'static> {
    ConnectOptions { host: "127.0.0.1", port, user: "sa", password: PASSWORD, database: "master", encryption }
}

/// The first column of the first row of `sql`'s result, as text.
async fn scalar(client: &mut Client, sql: &str) -> String {
    let mut out = Collected::default();
    let failed = client.execute(sql, &mut out).await.unwrap();
    assert!(!failed, "{sql}: {:?}", out.errors());
    match &out.result_sets[0].1[0][0] {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        v => panic!("{sql}: unexpected {v:?}"),
    }
}

/// The number of the error `sql` raises; the connection stays usable.
async fn error_number(client: &mut Client, sql: &str) -> i32 {
    let mut out = Collected::default();
    assert!(client.execute(sql, &mut out).await.unwrap(), "{sql} did not fail");
    out.errors()[0].number
}

/// Waits (a little) for `text` to reach the ERRORLOG.
async fn logged(server: &TestServer, text: &str) -> bool {
    for _ in 0..50 {
        if server.errorlog().contains(text) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Whether the server closed the connection (EOF or reset) within a few seconds, after
/// at most a TLS alert.
async fn closed_by_server(tcp: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    matches!(tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut rest)).await, Ok(Ok(_) | Err(_)))
        && rest.len() < 64
}

#[test]
fn strict_handshake_negotiates_tls13_and_alpn() {
    let server = TestServer::start();
    runtime().block_on(strict_handshake(&server));
}

async fn strict_handshake(server: &TestServer) {
    let tcp = TcpStream::connect(("127.0.0.1", server.port())).await.unwrap();
    let config = trusting(server, &[&rustls::version::TLS13, &rustls::version::TLS12], b"tds/8.0");
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.unwrap();
    let (_, conn) = tls.get_ref();
    assert_eq!(conn.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_3));
    assert_eq!(conn.alpn_protocol(), Some(&b"tds/8.0"[..]));
    // PRELOGIN inside TLS with go-mssqldb's ENCRYPTION value (4): ignored, and the answer
    // says ON, the connection being encrypted already.
    let hello = prelogin::reply([1, 8, 0, 0], 4);
    packet::write_message(&mut tls, kind::PRELOGIN, &hello, 4096).await.unwrap();
    let answer = packet::read_message(&mut tls, &REPLY_LIMITS).await.unwrap().unwrap();
    assert_eq!(answer.kind, kind::REPLY);
    assert_eq!(prelogin::parse(&answer.payload).unwrap().encryption, Some(ENCRYPT_ON));

    // TLS 1.2 is served too.
    let tcp = TcpStream::connect(("127.0.0.1", server.port())).await.unwrap();
    let config = trusting(server, &[&rustls::version::TLS12], b"tds/8.0");
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let tls12 = tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.unwrap();
    assert_eq!(tls12.get_ref().1.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_2));
}

#[test]
fn strict_and_tds7_share_the_port_and_garbage_ends_only_its_connection() {
    let server = TestServer::start();
    runtime().block_on(one_port(&server));
}

async fn one_port(server: &TestServer) {
    let port = server.port();
    let mut strict =
        Client::connect(&options(port, Encryption::Strict { trust_server_certificate: true })).await.unwrap();
    let mut plain = Client::connect(&options(port, Encryption::LoginOnly)).await.unwrap();
    let mut tds7_tls =
        Client::connect(&options(port, Encryption::Full { trust_server_certificate: true })).await.unwrap();
    let encrypt = "SELECT encrypt_option FROM sys.dm_exec_connections WHERE session_id = @@SPID";
    assert_eq!(scalar(&mut strict, encrypt).await, "TRUE");
    assert_eq!(scalar(&mut plain, encrypt).await, "FALSE");
    assert_eq!(scalar(&mut tds7_tls, encrypt).await, "TRUE");
    assert_eq!(error_number(&mut strict, "SELECT * FROM no_such_table").await, 208);
    assert_eq!(scalar(&mut strict, "SELECT 6 * 7").await, "42");

    // Neither a PRELOGIN packet nor a TLS record: closed and logged.
    let mut garbage = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    garbage.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    assert!(closed_by_server(&mut garbage).await);
    assert!(logged(server, "the first byte 0x47 is neither a PRELOGIN packet nor a TLS handshake").await);

    // A TLS record that is no ClientHello: the handshake fails, closed and logged.
    let mut bad_tls = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    bad_tls.write_all(&[0x16, 0x03, 0x01, 0x00, 0x04, 0xFF, 0x00, 0x00, 0x00]).await.unwrap();
    assert!(closed_by_server(&mut bad_tls).await);
    assert!(logged(server, "TLS handshake (TDS 8.0 strict) failed").await);

    // A client that offers only another ALPN protocol is refused in the handshake.
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let config = trusting(server, &[&rustls::version::TLS13], b"h2");
    let name = ServerName::try_from("127.0.0.1").unwrap();
    assert!(tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.is_err());

    // The sessions already logged in are untouched, and new connections of both kinds work.
    assert_eq!(scalar(&mut strict, "SELECT 1").await, "1");
    assert_eq!(scalar(&mut plain, "SELECT 2").await, "2");
    assert_eq!(scalar(&mut tds7_tls, "SELECT 3").await, "3");
    let mut again =
        Client::connect(&options(port, Encryption::Strict { trust_server_certificate: true })).await.unwrap();
    assert_eq!(scalar(&mut again, "SELECT 4").await, "4");
    let mut again7 = Client::connect(&options(port, Encryption::LoginOnly)).await.unwrap();
    assert_eq!(scalar(&mut again7, "SELECT 5").await, "5");
}

#[test]
fn force_strict_encryption_refuses_tds7_connections() {
    let server = TestServer::start_with(|c| c.force_strict_encryption = true);
    runtime().block_on(force_strict(&server));
}

async fn force_strict(server: &TestServer) {
    let port = server.port();
    assert!(logged(server, "Force Strict Encryption is on").await);
    for encryption in [Encryption::LoginOnly, Encryption::Full { trust_server_certificate: true }] {
        assert!(Client::connect(&options(port, encryption)).await.is_err(), "{encryption:?} was served");
    }
    assert!(logged(server, "refused: Force Strict Encryption is on").await);
    let mut strict =
        Client::connect(&options(port, Encryption::Strict { trust_server_certificate: true })).await.unwrap();
    assert_eq!(scalar(&mut strict, "SELECT 'strict'").await, "strict");
}
