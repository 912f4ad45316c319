//! The ODBC client scenario (`tests/clients/pyodbc_scenario.py`: pyodbc over unixODBC with
//! FreeTDS's ODBC driver) against a real server. Skipped only when python3 is missing; a
//! missing `pyodbc` module or ODBC driver is a failure (`scripts/install-clients.sh`
//! installs them).

mod common;

#[test]
fn pyodbc_scenario() {
    if !common::have("python3") {
        eprintln!("python3 is missing: pyodbc scenario skipped");
        return;
    }
    let mut python = std::process::Command::new("python3");
    python.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/pyodbc_scenario.py"));
    common::run_scenario("pyodbc", python);
}
