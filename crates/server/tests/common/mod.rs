//! Starts a real server on 127.0.0.1 with a free port and a fresh data directory.

#![allow(dead_code)]

use tessera_server::{Config, RunningServer};

pub const PASSWORD: &str = "Tessera-Test-1";

pub struct TestServer {
    pub server: Option<RunningServer>,
    pub dir: tempfile::TempDir,
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
        let server = RunningServer::start(config).unwrap();
        TestServer { server: Some(server), dir }
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
