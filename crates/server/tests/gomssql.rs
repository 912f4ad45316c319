//! The go-mssqldb client scenario (`tests/clients/gomssql`: database/sql with the
//! sqlserver driver) against a real server. Skipped only when go is missing; its module
//! comes from the Go module proxy (`scripts/install-clients.sh` runs go mod download).
//! Its `encrypt=strict` connection checks the server's self-signed certificate against
//! the file named by TESSERA_TLS_CERT.

mod common;

#[test]
fn gomssql_scenario() {
    if !common::have("go") {
        eprintln!("go is missing: go-mssqldb scenario skipped");
        return;
    }
    let mut go = std::process::Command::new("go");
    go.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/gomssql")).args(["run", "."]);
    common::run_scenario_with("go-mssqldb", go, |server, command| {
        command.env("TESSERA_TLS_CERT", server.dir.path().join("data").join("tls").join("cert.pem"));
    });
}
