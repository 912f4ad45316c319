//! The soak of `tessera torture` (crates/torture/src/soak.rs), short: this crate's
//! `tessera` serves four clients moving money over TDS and is killed with SIGKILL every
//! one to three seconds; after each restart the bank's balances add up and every
//! acknowledged transfer is in the ledger.

#[test]
fn a_server_killed_every_few_seconds_keeps_every_acknowledged_transfer() {
    let dir = tempfile::tempdir().unwrap();
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_tessera"));
    let report = tessera_torture::soak::soak(binary, dir.path(), 12, 4, 7).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.kills >= 3, "{report:?}");
    assert_eq!(report.checks, report.kills, "{report:?}");
    assert!(report.acknowledged > 50, "the clients got work done between kills: {report:?}");
}
