//! Starts a real server on 127.0.0.1 with a free port and a fresh data directory.

#![allow(dead_code)]

pub mod tds;

use tessera_server::{Config, RunningServer};
use tiberius::{AuthMethod, Client, EncryptionLevel};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

pub const PASSWORD: &str = "Tessera-Test-1";

pub struct TestServer {
    pub server: Option<RunningServer>,
    pub dir: tempfile::TempDir,
    pub config: Config,
}

impl TestServer {
    pub fn start() -> TestServer {
        TestServer::start_with(|_| {})
    }

    pub fn start_with(tweak: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config {
            port: 0,
            data_dir: dir.path().join("data"),
            sa_password: Some(PASSWORD.to_string()),
            memory_mb: 64,
            log_stderr: std::env::var_os("TESSERA_TEST_LOG").is_some(),
            ..Config::default()
        };
        tweak(&mut config);
        let server = RunningServer::start(config.clone()).unwrap();
        TestServer { server: Some(server), dir, config }
    }

    /// Stops the server (as SIGTERM would) and starts a new one on the same data
    /// directory and port.
    pub fn restart(&mut self) {
        if let Some(s) = self.server.take() {
            self.config.port = s.addr.port();
            s.stop().unwrap();
        }
        self.server = Some(RunningServer::start(self.config.clone()).unwrap());
    }

    pub fn port(&self) -> u16 {
        self.server.as_ref().unwrap().addr.port()
    }

    pub fn errorlog(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("data").join("ERRORLOG")).unwrap_or_default()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop().unwrap();
        }
    }
}

/// Whether `program` can be started (`program --version` runs).
pub fn have(program: &str) -> bool {
    std::process::Command::new(program).arg("--version").output().is_ok()
}

/// Runs a client scenario (`command` gets the server's host, port and sa password as its
/// last three arguments) against a fresh server; fails with the client's output and the
/// server's ERRORLOG unless it exits 0 having printed "all checks passed".
pub fn run_scenario(name: &str, command: std::process::Command) {
    run_scenario_with(name, command, |_, _| {});
}

/// [`run_scenario`], with `prepare` adjusting the client's command for the started server.
pub fn run_scenario_with(
    name: &str,
    mut command: std::process::Command,
    prepare: impl FnOnce(&TestServer, &mut std::process::Command),
) {
    let server = TestServer::start();
    prepare(&server, &mut command);
    let out = command
        .args(["127.0.0.1", &server.port().to_string(), PASSWORD])
        .output()
        .unwrap_or_else(|e| panic!("{name}: cannot start the client: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "{name} scenario failed (are the clients installed? scripts/install-clients.sh)\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- ERRORLOG\n{}",
        server.errorlog()
    );
}

/// A tiberius connection as sa, without encryption.
pub async fn connect_sa(port: u16) -> Client<Compat<TcpStream>> {
    let mut config = tiberius::Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server("sa", PASSWORD));
    config.encryption(EncryptionLevel::NotSupported);
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    Client::connect(config, tcp.compat_write()).await.expect("login")
}
