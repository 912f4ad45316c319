//! The Microsoft JDBC driver's scenario (`tests/clients/jdbc/Scenario.java`: update
//! counts, auto-commit off, savepoints, prepared statements and batches, generated keys,
//! callable statements, table-valued parameters, parameter types, DatabaseMetaData, server cursors:
//! `selectMethod=cursor`, scrollable and updatable result sets) against a real server. Skipped only when java
//! is missing; the driver's jar comes from Maven Central (`scripts/install-clients.sh`
//! copies it into `tests/clients/jdbc/lib`).

mod common;

#[test]
fn jdbc_scenario() {
    if !common::have("java") {
        eprintln!("java is missing: mssql-jdbc scenario skipped");
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/jdbc");
    let mut java = std::process::Command::new("java");
    java.current_dir(dir).args(["-cp", "lib/*", "Scenario.java"]);
    common::run_scenario_with("mssql-jdbc", java, |_, _| {});
}
