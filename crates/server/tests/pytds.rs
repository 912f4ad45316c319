//! The python-tds (pytds) client scenario (`tests/clients/pytds_scenario.py`) against a
//! real server. Skipped only when python3 is missing; a missing `pytds` module is a
//! failure (the README test command installs it: `python3 -m pip install python-tds`).

mod common;

use std::process::Command;

use common::{TestServer, PASSWORD};

#[test]
fn pytds_scenario() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("python3 is missing: pytds scenario skipped");
        return;
    }
    let server = TestServer::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/pytds_scenario.py");
    let out = Command::new("python3")
        .args([script, "127.0.0.1", &server.port().to_string(), PASSWORD])
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pytds scenario failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- ERRORLOG\n{}",
        server.errorlog()
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
}
