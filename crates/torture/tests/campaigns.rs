//! The campaigns, short: power losses spread over two seeds' workloads, and I/O faults
//! on their databases' files, each recovered and checked against the model (`tessera
//! torture --quick` runs more; the figures of the long runs are in docs/reliability.md).
//! And the command replays a point from its seed and cut.

use std::process::Command;

use tessera_torture::{fault_campaign, power_campaign, Campaign};

#[test]
fn every_power_loss_point_recovers_to_the_acknowledged_state() {
    let dir = tempfile::tempdir().unwrap();
    let campaign = Campaign { seed: 11, steps: 40, points: 40, points_per_seed: 20, dir: dir.path().to_path_buf() };
    let mut seeds = Vec::new();
    let report = power_campaign(&campaign, |seed, operations| seeds.push((seed, operations)), |_, _| {}).unwrap();
    assert_eq!(report.points, 40);
    assert_eq!(seeds.len(), 2, "{seeds:?}");
    let failures: Vec<String> =
        report.failures.iter().map(|(seed, p)| format!("seed {seed} cut {}: {:?}", p.cut, p.failure)).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(report.unsynced_writes > 0 && report.torn > 0, "the cuts lost something: {report:?}");
    assert!(report.by_kind.len() > 3, "the cuts fell in several kinds of step: {:?}", report.by_kind);
}

#[test]
fn every_io_fault_is_an_error_that_loses_nothing_and_leaves_the_other_database_serving() {
    let dir = tempfile::tempdir().unwrap();
    let campaign = Campaign { seed: 21, steps: 40, points: 40, points_per_seed: 40, dir: dir.path().to_path_buf() };
    let report = fault_campaign(&campaign, |_, _, _| {}).unwrap();
    let failures: Vec<String> =
        report.failures.iter().map(|(seed, p)| format!("seed {seed} {:?}: {:?}", p.armed, p.failure)).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    let failed_steps: usize = report.by_kind.values().map(|k| k.step_failed).sum();
    assert!(failed_steps >= 5, "the faults made steps fail: {:?}", report.by_kind);
    assert!(report.by_kind.len() >= 4, "every kind of fault was armed: {:?}", report.by_kind);
}

#[test]
fn the_command_replays_one_point() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera-torture"))
        .args(["--seed", "3", "--steps", "10", "--cut", "200", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("cut: 200") && stdout.contains("failure: None"), "{stdout}");
}
