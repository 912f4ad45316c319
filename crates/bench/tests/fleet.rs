//! `tessera bench fleet` at its smallest: etcd, three `tessera serve --etcd` servers of two
//! tenants each, two gateways and the one server; the workload runs both ways, `select 1`
//! through a gateway and direct, and a tenant moves under a writer with every acknowledged
//! insert checked. No timing is checked. The servers, gateways and mover are the `tessera`
//! binary `cargo test --workspace` builds beside this test's directory.

use std::path::PathBuf;

use tessera_bench::fleet::{run, FleetParams};

/// `target/<profile>/tessera`, beside `target/<profile>/deps/` where this test runs.
fn tessera_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let binary = exe.parent()?.parent()?.join("tessera");
    binary.is_file().then_some(binary)
}

#[test]
fn a_tiny_fleet_runs_every_part() {
    let Some(binary) = tessera_binary() else {
        eprintln!("SKIPPED: no tessera binary beside this test (cargo build -p tessera, or cargo test --workspace)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let params = FleetParams {
        databases_per_server: 2,
        connections: 2,
        seconds: 1,
        pairs: 1,
        pings: 40,
        moves: 1,
        memory_mb: 64,
        ..FleetParams::quick(binary)
    };
    let outcome = run(dir.path(), &params, &|_| {}).unwrap();
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    let report = outcome.report;
    assert_eq!(report.results.len(), 10, "{:?}", report.results);
    assert!(report.results.iter().all(|r| r.ours.is_finite()), "{:?}", report.results);
    let rates: Vec<_> = report.results.iter().filter(|r| r.unit == "queries/s").collect();
    assert!(rates.len() == 1 && rates[0].ours > 0.0 && rates[0].peer_value.is_some_and(|v| v > 0.0), "{rates:?}");
    let moves = report.notes.iter().find(|n| n.starts_with("moves:")).expect("a note on the moves");
    assert!(moves.contains("t00000"), "{moves}");
}
