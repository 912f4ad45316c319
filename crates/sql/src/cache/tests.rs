use super::*;

fn parse(_: &str) -> SqlResult<Batch> {
    Ok(Batch { statements: Vec::new() })
}

fn compiled(db: &str, version: u64, plan: u32) -> Compiled<u32> {
    Compiled {
        versions: vec![(db.into(), version)],
        context: 0,
        plan: Arc::new(plan),
        objects: Arc::from([(db.to_string(), 5)]),
    }
}

fn texts(cache: &PlanCache<u32>) -> Vec<String> {
    cache.entries().into_iter().map(|e| e.text).collect()
}

#[test]
fn hits_misses_and_recency() {
    let cache: PlanCache<u32> = PlanCache::new(SHARDS * 4096);
    cache.get_or_parse("db", "select 1", parse).unwrap();
    cache.get_or_parse("DB", "select 1", parse).unwrap();
    assert_eq!(cache.hits.load(Ordering::Relaxed), 1);
    assert_eq!(cache.misses.load(Ordering::Relaxed), 1);
    for i in 0..2000 {
        cache.get_or_parse("db", &format!("select {i}"), parse).unwrap();
        cache.get_or_parse("db", "select 1", parse).unwrap();
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
    let costly = cache.get_or_parse("db", "costly", parse).unwrap();
    costly.store(1, compiled("db", 1, 1), 500);
    for i in 0..5000 {
        cache.get_or_parse("db", &format!("cheap {i}"), parse).unwrap();
    }
    let kept = texts(&cache);
    assert!(kept.contains(&"costly".to_string()), "0.5 ms of compiling is worth keeping");
    assert!(!kept.contains(&"cheap 0".to_string()));
    // Unused for long enough, even the costly entry goes.
    for i in 0..400_000 {
        cache.get_or_parse("db", &format!("later {i}"), parse).unwrap();
    }
    assert!(!texts(&cache).contains(&"costly".to_string()));
}

#[test]
fn plans_are_accounted_and_rebound_when_versions_change() {
    let cache: PlanCache<u32> = PlanCache::new(1 << 20);
    let b = cache.get_or_parse("db", "x", parse).unwrap();
    let before = (b.size(), cache.bytes());
    b.store(7, compiled("db", 3, 42), 10);
    assert!(b.size() > before.0 && cache.bytes() - before.1 == b.size() - before.0, "a bound plan is accounted");
    assert_eq!(&b.objects(7)[..], &[("db".to_string(), 5)]);
    assert_eq!(b.plan(7, 0, |_| Some(3)).as_deref(), Some(&42));
    assert!(b.plan(7, 0, |_| Some(4)).is_none());
    assert!(b.plan(7, 1, |_| Some(3)).is_none(), "another session's context");
    assert!(b.plan(8, 0, |_| Some(3)).is_none());
}

#[test]
fn forgetting_a_database_evicts_only_what_depends_on_it() {
    let cache: PlanCache<u32> = PlanCache::new(1 << 20);
    for db in ["a", "b", "c"] {
        for i in 0..10 {
            cache.get_or_parse(db, &format!("q{i}"), parse).unwrap();
        }
    }
    // A batch compiled in c that reads a table of b.
    cache.get_or_parse("c", "cross", parse).unwrap().store(1, compiled("b", 1, 1), 1);
    assert_eq!(cache.forget_database("B"), 11);
    let left = cache.entries();
    assert_eq!(left.len(), 20);
    assert!(left.iter().all(|e| e.database != "b" && e.text != "cross"));
    assert_eq!(cache.bytes(), left.iter().map(|e| e.size).sum::<usize>());
    cache.clear();
    assert!(cache.is_empty());
    assert_eq!(cache.bytes(), 0);
}

#[test]
fn a_smaller_budget_evicts_at_once() {
    let cache: PlanCache<u32> = PlanCache::new(64 << 20);
    for i in 0..5000 {
        cache.get_or_parse("db", &format!("select {i}"), parse).unwrap();
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
                    let b = cache.get_or_parse("db", &format!("q{}", i % 100), parse).unwrap();
                    if i % 7 == t {
                        b.store(i, compiled("db", 1, i as u32), 1);
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
