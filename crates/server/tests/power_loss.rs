//! What a power loss can do to the files the server writes outside its data and log
//! files, and that the server starts anyway (docs/ARCHITECTURE.md, "Files and crash
//! safety"). A power loss drops what was written but not synced: a file written in place
//! comes back empty or cut short, a file or directory whose name was never synced is gone.
//! Each case below leaves a file as such a loss would, then starts the server on it.

mod common;

use common::{TestServer, PASSWORD};
use tiberius::{AuthMethod, Client, Config, EncryptionLevel};
use tokio::net::TcpStream;
use tokio_util::compat::TokioAsyncWriteCompatExt;

/// Logs in with the whole connection encrypted (the server's certificate must load) and
/// reads a row written before the loss.
fn check_serves(server: &TestServer) {
    let port = server.port();
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let mut config = Config::new();
        config.host("127.0.0.1");
        config.port(port);
        config.authentication(AuthMethod::sql_server("sa", PASSWORD));
        config.encryption(EncryptionLevel::Required);
        config.trust_cert();
        let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut c = Client::connect(config, tcp.compat_write()).await.expect("an encrypted login");
        let n = c.simple_query("SELECT COUNT(*) FROM kept.dbo.t").await.unwrap().into_row().await.unwrap().unwrap();
        assert_eq!(n.get::<i32, _>(0), Some(3), "the acknowledged rows");
    });
}

/// A server that has run once and holds a database with three acknowledged rows.
fn first_start() -> TestServer {
    let server = TestServer::start();
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let mut sa = common::connect_sa(server.port()).await;
        for sql in [
            "CREATE DATABASE kept",
            "CREATE TABLE kept.dbo.t (id int PRIMARY KEY)",
            "INSERT INTO kept.dbo.t VALUES (1), (2), (3)",
        ] {
            common::tds::run(&mut sa, sql).await;
        }
    });
    server
}

/// Stops the server, applies `loss` to its data directory, starts it again.
fn after_loss(loss: impl FnOnce(&std::path::Path)) -> TestServer {
    let mut server = first_start();
    let port = server.port();
    server.server.take().unwrap().stop().unwrap();
    loss(&server.config.data_dir);
    server.config.port = port;
    server.server = Some(tessera_server::RunningServer::start(server.config.clone()).expect("the server starts"));
    server
}

fn tls(data: &std::path::Path, file: &str) -> std::path::PathBuf {
    data.join("tls").join(file)
}

#[test]
fn an_empty_certificate_and_key_are_made_afresh() {
    let server = after_loss(|data| {
        for f in ["cert.pem", "key.pem"] {
            std::fs::write(tls(data, f), b"").unwrap();
        }
    });
    check_serves(&server);
    let log = server.errorlog();
    assert!(log.contains("A self-signed certificate was generated"), "{log}");
    assert!(log.contains("no certificate in"), "the reason is logged: {log}");
}

#[test]
fn a_certificate_cut_short_is_made_afresh() {
    let server = after_loss(|data| {
        let cert = std::fs::read(tls(data, "cert.pem")).unwrap();
        std::fs::write(tls(data, "cert.pem"), &cert[..cert.len() / 2]).unwrap();
    });
    check_serves(&server);
    assert!(server.errorlog().contains("A self-signed certificate was generated"));
}

#[test]
fn a_key_lost_alone_is_made_afresh_with_its_certificate() {
    let server = after_loss(|data| std::fs::remove_file(tls(data, "key.pem")).unwrap());
    check_serves(&server);
    assert!(server.errorlog().contains("A self-signed certificate was generated"));
}

#[test]
fn a_key_that_does_not_match_its_certificate_is_made_afresh() {
    // A crash between the two renames of a regeneration: a new key beside an old cert.
    let other = tempfile::tempdir().unwrap();
    let fresh = TestServer::start_with(|c| c.data_dir = other.path().join("data"));
    drop(fresh);
    let server = after_loss(|data| {
        std::fs::copy(tls(&other.path().join("data"), "key.pem"), tls(data, "key.pem")).unwrap();
    });
    check_serves(&server);
    let log = server.errorlog();
    assert!(log.contains("do not match"), "{log}");
}

#[test]
fn the_tls_directory_lost_whole_is_made_again() {
    let server = after_loss(|data| std::fs::remove_dir_all(data.join("tls")).unwrap());
    check_serves(&server);
}

#[test]
fn an_empty_lock_file_errorlog_and_temporary_registry_do_not_stop_a_start() {
    let server = after_loss(|data| {
        std::fs::write(data.join(tessera_io::LOCK_FILE), b"").unwrap();
        std::fs::write(data.join("ERRORLOG"), b"").unwrap();
        // A registry rewrite that a crash interrupted before its rename.
        std::fs::write(data.join("databases.reg.tmp"), b"tessera-registry 2\nhalf writ").unwrap();
    });
    check_serves(&server);
}

#[test]
fn a_configured_certificate_that_cannot_be_used_is_refused_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&cert, b"").unwrap();
    std::fs::write(&key, b"").unwrap();
    let config = tessera_server::Config {
        port: 0,
        data_dir: dir.path().join("data"),
        sa_password: Some(PASSWORD.to_string()),
        memory_mb: 64,
        tls_cert: Some(cert.clone()),
        tls_key: Some(key),
        log_stderr: false,
        ..tessera_server::Config::default()
    };
    let e = tessera_server::RunningServer::start(config).err().expect("refused");
    assert!(e.contains("no certificate in"), "{e}");
    assert_eq!(std::fs::read(&cert).unwrap(), b"", "the operator's file is left alone");
}
