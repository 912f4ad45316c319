//! `tessera bench plancache` at a tiny scale: the report has its rows, every call returned
//! the right value, and the databases shared plans (statement plans do not grow with the
//! number of databases). No timing is checked.

use tessera_bench::plancache::{run, PlancacheParams};
use tessera_bench::Report;

fn tiny(databases: usize) -> PlancacheParams {
    PlancacheParams { databases, procedures: 16, altered_every: 3, warm_sample_databases: 2, setup_threads: 2 }
}

fn report(databases: usize) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(dir.path(), &tiny(databases), &|_| {}).unwrap();
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    outcome.report
}

fn figure(report: &Report, metric: &str) -> f64 {
    let row = report.results.iter().find(|r| r.metric == metric);
    row.unwrap_or_else(|| panic!("no row {metric:?} in {:?}", report.results)).ours
}

#[test]
fn databases_of_one_schema_share_plans() {
    let few = report(3);
    let more = report(6);
    for metric in [
        "shared: cache entries with compiled plans (the RPC call batches included)",
        "shared: procedure entries with compiled plans (objtype 'Proc')",
        "shared: plan cache memory",
        "shared: plan cache hit ratio",
        "shared: first call in a new database (shared plan), net of a warm call",
        "shared: warm call",
        "altered 1 in 3: statement plans",
        "altered: call in an unaltered database (its plan found again)",
    ] {
        figure(&more, metric);
    }
    assert_eq!(figure(&more, "shared: procedure entries with compiled plans (objtype 'Proc')"), 16.0);
    let plans = |r: &Report| figure(r, "shared: statement plans");
    assert!(plans(&few) > 16.0, "{}", plans(&few));
    assert_eq!(plans(&few), plans(&more), "statement plans grew with the databases");
    let statements = more.results.iter().find(|r| r.metric == "shared: statement plans").unwrap();
    assert_eq!(statements.peer_value, Some(statements.ours), "no plan bound after the first database");
    let altered = figure(&more, "altered 1 in 3: statement plans");
    assert!(altered > plans(&more) && altered < 2.0 * plans(&more), "{altered} plans after altering");
}
