//! `tessera bench consolidation` at its smallest: a few tenants, servers in process, no
//! PostgreSQL; every call answered with its one row, the report and curves complete, and
//! the idle measurement's rows present. No timing is checked.

use tessera_bench::consolidation::schema::Skew;
use tessera_bench::consolidation::{run, ConsolidationParams};

fn tiny() -> ConsolidationParams {
    ConsolidationParams {
        sizes: vec![2, 4],
        goal_size: 4,
        connections: 2,
        warmup_seconds: 0,
        seconds: 1,
        skews: vec![Skew::Uniform, Skew::Skewed],
        memory_mb: 64,
        two_instances: false,
        postgres: false,
        ..ConsolidationParams::quick(None)
    }
}

#[test]
fn the_mix_runs_over_every_size_and_skew() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(dir.path(), &tiny(), &|_| {}).unwrap();
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    let report = outcome.report;
    for skew in ["uniform", "skewed 80/20"] {
        let metric = format!("tessera, 1 instance, {skew}: per-database throughput at 4 databases ÷ at 2");
        let row = report.results.iter().find(|r| r.metric == metric);
        assert!(row.is_some_and(|r| r.ours > 0.0), "no row {metric:?} in {:?}", report.results);
    }
    let points = report.notes.iter().filter(|n| n.starts_with("tessera, 1 instance | ")).count();
    assert_eq!(points, 4, "{:?}", report.notes);
    assert_eq!(report.series.len(), 4);
    assert!(report.series.iter().all(|s| s.points.len() == 2 && s.points.iter().all(|p| p.1 > 0.0)));
}

#[test]
fn idle_databases_are_opened_and_measured() {
    let dir = tempfile::tempdir().unwrap();
    let params = ConsolidationParams { idle: Some(3), ..tiny() };
    let outcome = run(dir.path(), &params, &|_| {}).unwrap();
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    let open = outcome.report.results.iter().find(|r| r.metric == "idle: databases open of the 3 touched").unwrap();
    assert!(open.ours >= 3.0, "{open:?}");
}
