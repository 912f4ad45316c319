//! The Sequelize 6 scenario over tedious (`tests/clients/sequelize/scenario.js`: sync with
//! associations and `alter`, describeTable and showIndex, CRUD, include, pagination, a
//! rolled-back transaction, then a QueryInterface migration and its undoing) against a
//! real server. Skipped only when node is missing; missing node_modules are a failure
//! (`scripts/install-clients.sh` runs npm ci).

mod common;

#[test]
fn sequelize_scenario() {
    if !common::have("node") {
        eprintln!("node is missing: Sequelize scenario skipped");
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/sequelize");
    let mut node = std::process::Command::new("node");
    node.current_dir(dir).arg("scenario.js");
    common::run_scenario("sequelize", node);
}
