//! The storm of `tessera torture` (crates/torture/src/storm.rs), small: this crate's
//! `tessera` holds idle connections while busy clients bump counters and hostile clients
//! connect and say nothing, send a byte a second, oversized packets, batches and
//! parameters, garbage, wrong passwords, and stall inside requests. Every busy update is
//! counted, every idle connection still answers, and every hostile client gets what its
//! limit promises. Latencies are printed by the campaign, never checked here.

#[test]
fn hostile_clients_get_clear_answers_and_nothing_of_the_busy_clients_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_tessera"));
    let plan = tessera_torture::storm::StormPlan { idle: 200, busy: 8, seconds: 2, hostile: 1, seed: 5 };
    let report = tessera_torture::storm::storm(binary, dir.path(), &plan).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert_eq!(report.idle_held, 200);
    assert!(report.alone.requests > 0 && report.storm.requests > 0, "{report:?}");
    for kind in tessera_torture::storm::KIND_NAMES {
        let seen = report.hostile.get(kind).map_or(0, |h| h.attempts);
        assert!(seen > 0, "no attempt of kind '{kind}': {:?}", report.hostile);
    }
    assert!(report.memory_idle.reported_kib > 0, "the server reports its memory");
}
