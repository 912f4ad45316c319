//! The python-tds (pytds) client scenario (`tests/clients/pytds_scenario.py`) against a
//! real server. Skipped only when python3 is missing; a missing `pytds` module is a
//! failure (`scripts/install-clients.sh` installs it).

mod common;

#[test]
fn pytds_scenario() {
    if !common::have("python3") {
        eprintln!("python3 is missing: pytds scenario skipped");
        return;
    }
    let mut python = std::process::Command::new("python3");
    python.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/pytds_scenario.py"));
    common::run_scenario("pytds", python);
}
