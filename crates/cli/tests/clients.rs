//! Real SQL Server client libraries against `tessera serve`, started here on a free port.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PASSWORD: &str = "Str0ng!pass";

struct Server {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["serve", "--port", &port.to_string(), "--memory-mb", "64", "--data-dir"])
        .arg(dir.path())
        .env("TESSERA_SA_PASSWORD", PASSWORD)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Server { child, port, _dir: dir }
}

#[test]
fn serve_refuses_to_start_without_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .env_remove("TESSERA_SA_PASSWORD")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("TESSERA_SA_PASSWORD"));
}

#[test]
fn python_tds_scenario() {
    let server = start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/pytds_scenario.py");
    let out = Command::new("python3").arg(script).arg(server.port.to_string()).arg(PASSWORD).output().unwrap();
    assert!(
        out.status.success(),
        "pytds scenario failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
