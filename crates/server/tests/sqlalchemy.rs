//! The SQLAlchemy 2 scenario over pymssql and over pyodbc (`tests/clients/sqlalchemy_scenario.py`:
//! ORM models, reflection, sessions, pagination, transactions, then an Alembic migration up
//! and down) against a real server. Skipped only when python3 is missing; a missing
//! `sqlalchemy` or `alembic` module is a failure (`scripts/install-clients.sh` installs
//! them).

mod common;

#[test]
fn sqlalchemy_scenario() {
    if !common::have("python3") {
        eprintln!("python3 is missing: SQLAlchemy scenario skipped");
        return;
    }
    let mut python = std::process::Command::new("python3");
    python.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/sqlalchemy_scenario.py"));
    common::run_scenario("sqlalchemy", python);
}
