use super::*;
use crate::catalog::{DbRef, ObjectDep};

fn parse(_: &str) -> SqlResult<Batch> {
    Ok(Batch { statements: Vec::new() })
}

/// A plan that read table `dbo.t` (fingerprint `fingerprint`) in `db` (None: the
/// database the plan runs in).
fn compiled(db: Option<&str>, fingerprint: u64, plan: u32) -> Compiled<u32> {
    let db = db.map_or(DbRef::Current, |d| DbRef::Named(d.to_string()));
    Compiled {
        context: 0,
        plan: Arc::new(plan),
        deps: Arc::from([ObjectDep {
            db,
            key: "dbo.t".into(),
            fingerprint: Some(fingerprint),
            locked: true,
            access: crate::catalog::Access::SELECT,
            via: None,
            columns: Vec::new(),
        }]),
    }
}

/// Whether a dependency holds in a database whose `dbo.t` has `fingerprint`.
fn holds_with(fingerprint: u64) -> impl Fn(&ObjectDep) -> bool {
    move |d: &ObjectDep| d.fingerprint == Some(fingerprint)
}

fn texts(cache: &PlanCache<u32>) -> Vec<String> {
    cache.entries().into_iter().map(|e| e.text).collect()
}

#[test]
fn hits_misses_and_recency() {
    let cache: PlanCache<u32> = PlanCache::new(SHARDS * 4096);
    cache.get_or_parse("select 1", parse).unwrap();
    cache.get_or_parse("select 1", parse).unwrap();
    assert_eq!(cache.hits.load(Ordering::Relaxed), 1);
    assert_eq!(cache.misses.load(Ordering::Relaxed), 1);
    for i in 0..2000 {
        cache.get_or_parse(&format!("select {i}"), parse).unwrap();
        cache.get_or_parse("select 1", parse).unwrap();
    }
    assert!(cache.bytes() <= cache.budget_bytes(), "{} > {}", cache.bytes(), cache.budget_bytes());
    assert!(cache.len() < 2000, "the budget bounds the cache");
    let texts = texts(&cache);
    assert!(texts.contains(&"select 1999".to_string()), "the newest entry stays");
    assert!(texts.contains(&"select 1".to_string()), "a recently used entry stays");
    assert!(!texts.contains(&"select 2".to_string()), "an old entry went");
}

#[test]
fn an_expensive_plan_outlives_cheap_ones_used_as_recently() {
    let cache: PlanCache<u32> = PlanCache::new(SHARDS * 8192);
    let costly = cache.get_or_parse("costly", parse).unwrap();
    costly.store(1, compiled(None, 1, 1), 1, 500, (0, -1));
    for i in 0..5000 {
        cache.get_or_parse(&format!("cheap {i}"), parse).unwrap();
    }
    let kept = texts(&cache);
    assert!(kept.contains(&"costly".to_string()), "0.5 ms of compiling is worth keeping");
    assert!(!kept.contains(&"cheap 0".to_string()));
    // Unused for long enough, even the costly entry goes.
    for i in 0..400_000 {
        cache.get_or_parse(&format!("later {i}"), parse).unwrap();
    }
    assert!(!texts(&cache).contains(&"costly".to_string()));
}

#[test]
fn plans_are_accounted_and_shared_by_databases_with_the_same_definitions() {
    let cache: PlanCache<u32> = PlanCache::new(1 << 20);
    let b = cache.get_or_parse("x", parse).unwrap();
    let before = (b.size(), cache.bytes());
    b.store(7, compiled(None, 3, 42), 1, 10, (0, -1));
    assert!(b.size() > before.0 && cache.bytes() - before.1 == b.size() - before.0, "a bound plan is accounted");
    for database in 1..=50 {
        assert_eq!(b.plan(7, 0, database, 0, holds_with(3)).map(|f| *f.plan), Some(42));
    }
    assert!(b.plan(7, 0, 51, 0, holds_with(4)).is_none(), "a database whose table differs");
    assert!(b.plan(7, 1, 1, 0, holds_with(3)).is_none(), "another session's context");
    assert!(b.plan(8, 0, 1, 0, holds_with(3)).is_none());
    // The differing database binds its own plan; the shared one stays.
    b.store(7, compiled(None, 4, 43), 1, 10, (0, -1));
    assert_eq!(b.plan(7, 0, 51, 0, holds_with(4)).map(|f| *f.plan), Some(43));
    assert_eq!(b.plan(7, 0, 2, 0, holds_with(3)).map(|f| *f.plan), Some(42));
    let info = &cache.entries()[0];
    assert_eq!((info.databases, info.plans), (51, 2));
}

#[test]
fn a_statement_keeps_a_bounded_number_of_plans_the_least_recently_used_going() {
    let cache: PlanCache<u32> = PlanCache::new(1 << 20);
    let b = cache.get_or_parse("x", parse).unwrap();
    b.store(1, compiled(None, 0, 0), 1, 1, (0, -1));
    for v in 1..=(MAX_VARIANTS as u64 + 3) {
        cache.get_or_parse("x", parse).unwrap();
        // Plan 0 stays in use.
        assert!(b.plan(1, 0, 1, 0, holds_with(0)).is_some());
        b.store(1, compiled(None, v, v as u32), 1, 1, (0, -1));
    }
    assert_eq!(b.plan_count(), MAX_VARIANTS);
    assert!(b.plan(1, 0, 1, 0, holds_with(0)).is_some(), "the plan in use stays");
    assert!(b.plan(1, 0, 1, 0, holds_with(1)).is_none(), "an unused one went");
    assert_eq!(cache.bytes(), b.size());
}

#[test]
fn forgetting_a_database_drops_only_the_plans_that_name_it() {
    let cache: PlanCache<u32> = PlanCache::new(1 << 20);
    for i in 0..10 {
        cache.get_or_parse(&format!("q{i}"), parse).unwrap().store(1, compiled(None, 1, 1), 1, 1, (0, -1));
    }
    // A batch that reads a table of b by name, and one run in b.
    let cross = cache.get_or_parse("cross", parse).unwrap();
    cross.store(1, compiled(Some("b"), 1, 1), 1, 1, (0, -1));
    let local = cache.get_or_parse("q0", parse).unwrap();
    assert!(local.plan(1, 0, 9, 0, holds_with(1)).is_some());
    cache.forget_database("B", 9);
    assert_eq!(cross.plan_count(), 0);
    assert_eq!(cache.entries().iter().map(|e| e.plans).sum::<usize>(), 10, "the shared plans stay");
    // Each plan counts the database that bound it (1); b (9) no longer counts.
    assert_eq!(cache.entries().iter().map(|e| e.databases).sum::<usize>(), 10);
    assert_eq!(cache.bytes(), cache.entries().iter().map(|e| e.size).sum::<usize>());
    cache.clear();
    assert!(cache.is_empty());
    assert_eq!(cache.bytes(), 0);
}

#[test]
fn a_smaller_budget_evicts_at_once() {
    let cache: PlanCache<u32> = PlanCache::new(64 << 20);
    for i in 0..5000 {
        cache.get_or_parse(&format!("select {i}"), parse).unwrap();
    }
    assert_eq!(cache.len(), 5000);
    cache.set_budget_bytes(SHARDS * 4096);
    assert!(cache.bytes() <= SHARDS * 4096);
    assert!(cache.len() < 5000);
}

#[test]
fn sessions_share_the_cache_from_many_threads() {
    let cache: Arc<PlanCache<u32>> = Arc::new(PlanCache::new(64 << 20));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let cache = cache.clone();
            std::thread::spawn(move || {
                for i in 0..2000 {
                    let b = cache.get_or_parse(&format!("q{}", i % 100), parse).unwrap();
                    if i % 7 == t {
                        b.store(i, compiled(None, 1, i as u32), 1, 1, (0, -1));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(cache.len(), 100, "one entry per text, whoever parsed it first");
    assert_eq!(cache.hits.load(Ordering::Relaxed) + cache.misses.load(Ordering::Relaxed), 8000);
    assert_eq!(cache.bytes(), cache.entries().iter().map(|e| e.size).sum::<usize>());
}

#[test]
fn a_plan_found_to_hold_in_a_catalog_snapshot_is_not_checked_again_in_it() {
    let cache: PlanCache<u32> = PlanCache::new(1 << 20);
    let b = cache.get_or_parse("x", parse).unwrap();
    b.store(7, compiled(None, 3, 42), 1, 10, (0, -1));
    let never = |_: &ObjectDep| false;
    assert!(b.plan(7, 0, 1, 9, never).is_none(), "not yet found to hold in snapshot 9");
    assert!(b.plan(7, 0, 1, 9, holds_with(3)).is_some());
    assert!(b.plan(7, 0, 1, 9, never).is_some(), "snapshot 9 never changes: it still holds there");
    assert!(b.plan(7, 0, 1, 10, never).is_none(), "another snapshot is checked");
    assert!(b.plan(7, 0, 1, 0, never).is_none(), "a snapshot without a version is always checked");
    // A plan naming another database is always checked: the snapshot is only this one's.
    b.store(8, compiled(Some("other"), 3, 43), 1, 10, (0, -1));
    assert!(b.plan(8, 0, 1, 9, holds_with(3)).is_some());
    assert!(b.plan(8, 0, 1, 9, never).is_none());
}
