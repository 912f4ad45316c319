//! The pymssql client scenario (`tests/clients/pymssql_scenario.py`: FreeTDS's dblib
//! inside) against a real server. Skipped only when python3 is missing; a missing
//! `pymssql` module is a failure (`scripts/install-clients.sh` installs it).

mod common;

#[test]
fn pymssql_scenario() {
    if !common::have("python3") {
        eprintln!("python3 is missing: pymssql scenario skipped");
        return;
    }
    let mut python = std::process::Command::new("python3");
    python.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/pymssql_scenario.py"));
    common::run_scenario("pymssql", python);
}
