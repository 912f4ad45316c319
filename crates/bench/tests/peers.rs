//! Each peer runs each workload at a tiny scale and returns sensible figures; the engine
//! benchmark runs end to end.

use tessera_bench::peers::{lmdb, sqlite};
use tessera_bench::workload::{expected_lookup_checksum, lookup_ids};
use tessera_bench::{engine, EngineParams, Figures};

fn tiny() -> EngineParams {
    EngineParams {
        scale: "tiny".into(),
        lookup_rows: 1000,
        lookups: 5000,
        bulk_rows: 2000,
        commit_seconds: 0.2,
        commit_threads: 4,
        pool_release_bytes: 1 << 20,
        ..EngineParams::quick()
    }
}

fn positive(f: &Figures) {
    assert!(f.count > 0 && f.seconds > 0.0 && f.per_second() > 0.0, "{f:?}");
}

#[test]
fn sqlite_point_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let p = tiny();
    let f = sqlite::point_lookups(dir.path(), &p).unwrap();
    positive(&f);
    assert_eq!(f.count, p.lookups);
    assert_eq!(f.checksum, expected_lookup_checksum(&lookup_ids(p.lookup_rows, p.lookups, p.seed)));
}

#[test]
fn lmdb_point_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let p = tiny();
    let f = lmdb::point_lookups(dir.path(), &p).unwrap();
    positive(&f);
    assert_eq!(f.count, p.lookups);
    assert_eq!(f.checksum, expected_lookup_checksum(&lookup_ids(p.lookup_rows, p.lookups, p.seed)));
    // The environment was closed: the same path opens again.
    positive(&lmdb::point_lookups(dir.path(), &p).unwrap());
}

#[test]
fn sqlite_bulk_insert() {
    let dir = tempfile::tempdir().unwrap();
    let f = sqlite::bulk_insert(dir.path(), &tiny()).unwrap();
    positive(&f);
    assert_eq!(f.count, 2000);
}

#[test]
fn lmdb_bulk_insert() {
    let dir = tempfile::tempdir().unwrap();
    let f = lmdb::bulk_insert(dir.path(), &tiny()).unwrap();
    positive(&f);
    assert_eq!(f.count, 2000);
}

#[test]
fn sqlite_durable_commits_one_and_many_threads() {
    let dir = tempfile::tempdir().unwrap();
    // A second: on a loaded machine (CI compiling beside it), four threads contending
    // for SQLite's write lock finished no commit at all within 0.2 s.
    let p = EngineParams { commit_seconds: 1.0, ..tiny() };
    for threads in [1, 4] {
        let started = std::time::Instant::now();
        let f = sqlite::durable_commits(dir.path(), threads, &p).unwrap();
        positive(&f);
        assert_eq!(f.seconds, 1.0);
        // The run stops soon after its deadline, even with threads waiting for the lock.
        assert!(started.elapsed().as_secs_f64() < 5.0, "{f:?}");
    }
}

#[test]
fn engine_runs_every_side_and_reports_every_metric() {
    let dir = tempfile::tempdir().unwrap();
    let lines = std::cell::RefCell::new(Vec::new());
    let progress = |line: &str| lines.borrow_mut().push(line.to_string());
    let outcome = engine::run(&dir.path().join("work"), &tiny(), &progress).unwrap();
    let report = &outcome.report;
    assert_eq!(report.benchmark, "engine");
    assert_eq!(report.params["lookup_rows"], 1000);
    assert!(report.machine.disk_fsync_us > 0.0 && report.machine.cores >= 1);
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    let metrics: Vec<&str> = report.results.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(report.results.len(), 7, "{metrics:?}");
    for row in &report.results {
        assert!(row.ours > 0.0, "{row:?}");
    }
    let notes = report.notes.join("\n");
    for peer_figure in ["sqlite", "lmdb"] {
        assert!(notes.contains(peer_figure), "{notes}");
    }
    assert!(!notes.contains("sqlite not measured") && !notes.contains("lmdb not measured"), "{notes}");
    assert!(!lines.borrow().is_empty());
    // The work directory holds nothing left behind by the scenarios.
    assert_eq!(std::fs::read_dir(dir.path().join("work")).unwrap().count(), 0);
}
