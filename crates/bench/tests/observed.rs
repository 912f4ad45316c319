//! `tessera bench observed` at its smallest: both workloads run on the plain and the
//! observed server, the observed one's Query Store counts the runs and its metrics are
//! scraped, and the report carries the four comparisons. No timing is checked: whether
//! the goal is met is the benchmark's to say, not this test's.

use tessera_bench::observed::{run, ObservedParams};

#[test]
fn both_workloads_run_plain_and_observed() {
    let dir = tempfile::tempdir().unwrap();
    let params = ObservedParams {
        rows: 200,
        connections: 2,
        pairs: 1,
        seconds: 1,
        tenants: 3,
        tenant_rate: 20.0,
        tenant_seconds: 1,
        scrape_seconds: 1,
        ..ObservedParams::quick(None)
    };
    let outcome = run(dir.path(), &params, &|_| {}).unwrap();
    let report = outcome.report;
    assert_eq!(report.results.len(), 4, "{:?}", report.results);
    assert!(
        report.results.iter().all(|r| r.ours > 0.0 && r.peer_value.is_some_and(|v| v > 0.0)),
        "{:?}",
        report.results
    );
    assert!(
        !outcome.failures.iter().any(|f| f.contains("counted no run")),
        "Query Store counted the observed runs: {:?}",
        outcome.failures
    );
    let scraped = report.notes.iter().find(|n| n.starts_with("point select:")).expect("a note");
    assert!(!scraped.contains(" 0 scrapes"), "{scraped}");
}
