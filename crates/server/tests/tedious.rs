//! The tedious (Node.js) client scenario (`tests/clients/tedious/scenario.js`) against a
//! real server, with tedious's default options: TLS for the whole connection, the server's
//! self-signed certificate trusted through NODE_EXTRA_CA_CERTS. Skipped only when node is
//! missing; missing node_modules are a failure (`scripts/install-clients.sh` runs npm ci).

mod common;

#[test]
fn tedious_scenario() {
    if !common::have("node") {
        eprintln!("node is missing: tedious scenario skipped");
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/tedious");
    let mut node = std::process::Command::new("node");
    node.current_dir(dir).arg("scenario.js");
    common::run_scenario_with("tedious", node, |server, command| {
        command.env("NODE_EXTRA_CA_CERTS", server.dir.path().join("data").join("tls").join("cert.pem"));
    });
}

/// Connection resets through tedious (`tests/clients/tedious/reset.js`): a contained
/// user stays itself after a reset, and a connection that took another security context
/// ends with 18059 instead of being reset under it.
#[test]
fn tedious_connection_reset() {
    if !common::have("node") {
        eprintln!("node is missing: tedious reset scenario skipped");
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/tedious");
    let mut node = std::process::Command::new("node");
    node.current_dir(dir).arg("reset.js");
    common::run_scenario_with("tedious reset", node, |_, _| {});
}
