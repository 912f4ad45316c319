//! `tessera bench consolidation` at its smallest: a few tenants, servers in process, no
//! PostgreSQL; every call answered with its one row, the report and curves complete, and
//! the idle measurement's and the scale run's rows present. No timing is checked.

use tessera_bench::consolidation::scale::ScaleParams;
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

#[test]
fn the_scale_run_copies_lists_touches_and_loads_every_size() {
    let dir = tempfile::tempdir().unwrap();
    let params = ConsolidationParams {
        scale: Some(ScaleParams { sizes: vec![8, 16], descriptors: 4_096, max_open: 8 }),
        ..tiny()
    };
    let outcome = run(dir.path(), &params, &|_| {}).unwrap();
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    let row = |metric: &str| {
        let r = outcome.report.results.iter().find(|r| r.metric.starts_with(metric));
        r.unwrap_or_else(|| panic!("no row {metric:?} in {:?}", outcome.report.results)).ours
    };
    // The 16 copies, the template and master, tempdb and msdb.
    assert_eq!(row("scale: databases listed of 16"), 20.0);
    let open = row("scale: databases open after touching 16");
    assert!(open > 0.0 && open <= 8.0 + 4.0, "{open}");
    assert!(row("scale: copy of the template") > 0.0);
    // The large template holds what it says: 100 tables, their primary keys, indexes and
    // procedures.
    assert!(row("scale: copy of a template of 100 tables, 400 objects") > 0.0);
    assert!(row("scale: disk of an empty database at rest") > 0.0);
    for n in [8, 16] {
        assert!(row(&format!("scale: {n} databases in use")) > 0.0);
    }
}
