//! The Hibernate ORM 6 and Flyway scenario over mssql-jdbc
//! (`tests/clients/hibernate/Scenario.java`: Flyway migrate of versioned and repeatable
//! migrations, its history table, info, validate, clean; Hibernate's schema create,
//! validate and update, CRUD, associations with lazy proxies and join fetch, HQL group by
//! and functions, pagination, rollback, JDBC batches, Unicode, decimal, date and time
//! types, long strings, optimistic and pessimistic locking) against a real server, with
//! their default SQL Server support. Skipped only when java is missing; the libraries come
//! from Maven Central (`scripts/install-clients.sh` copies them into
//! `tests/clients/hibernate/lib`). The ways tessera still differs from SQL Server are
//! marked TESSERA-GAP in the scenario (SCENARIO_NO_GAPS=1 runs them as on SQL Server).

mod common;

#[test]
fn hibernate_scenario() {
    if !common::have("java") {
        eprintln!("java is missing: Hibernate and Flyway scenario skipped");
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/hibernate");
    let mut java = std::process::Command::new("java");
    java.current_dir(dir).args(["-cp", "lib/*", "Scenario.java"]);
    common::run_scenario_with("hibernate", java, |_, _| {});
}
