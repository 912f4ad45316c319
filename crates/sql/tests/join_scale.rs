//! Joins of 2,000 × 2,000 rows must use index nested loops or hash joins: every query
//! here would take minutes if planned as a quadratic nested loop in a debug build.

use tessera_database::{Engine, EngineConfig};
use tessera_semantics::types::Value;
use tessera_sql::{Collected, Session};

fn scalar(s: &mut Session, sql: &str) -> i64 {
    let mut out = Collected::default();
    assert!(!s.execute(sql, &mut out), "{sql}: {:?}", out.errors());
    match &out.result_sets.last().expect("a result set").1[0][0] {
        Value::Int(n) => *n,
        v => panic!("{sql}: unexpected {v:?}"),
    }
}

#[test]
fn large_joins_are_not_quadratic() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 64 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine).unwrap();
    let mut s = Session::new(shared, "sa", "master").unwrap();
    let mut out = Collected::default();
    assert!(!s.execute(
        "SET NOCOUNT ON;
         CREATE TABLE a (id int PRIMARY KEY, k int, g int);
         CREATE TABLE b (id int PRIMARY KEY, k int, g int);
         CREATE INDEX ix_b_k ON b (k);
         DECLARE @i int = 0;
         BEGIN TRANSACTION;
         WHILE @i < 2000
         BEGIN
           INSERT INTO a VALUES (@i, @i % 1000, @i % 7);
           INSERT INTO b VALUES (@i, (@i * 3) % 2000, @i % 11);
           SET @i = @i + 1;
         END;
         COMMIT;",
        &mut out
    ));
    assert!(out.errors().is_empty(), "{:?}", out.errors());
    // clustered key seek per outer row
    assert_eq!(scalar(&mut s, "SELECT COUNT(*) FROM a JOIN b ON b.id = a.id"), 2000);
    // nonclustered index seek per outer row
    assert_eq!(scalar(&mut s, "SELECT COUNT(*) FROM a JOIN b ON b.k = a.k"), 2000);
    assert_eq!(scalar(&mut s, "SELECT COUNT(*) FROM a LEFT JOIN b ON b.k = a.id"), 2000);
    // hash joins on unindexed columns, also for outer joins
    assert_eq!(scalar(&mut s, "SELECT COUNT(*) FROM a JOIN b ON b.g = a.k"), 4000);
    assert_eq!(scalar(&mut s, "SELECT COUNT(*) FROM a RIGHT JOIN b ON b.id = a.id AND a.g = 0"), 2000);
    assert_eq!(scalar(&mut s, "SELECT COUNT(*) FROM a FULL JOIN b ON b.id = a.id + 1000"), 3000);
    assert_eq!(scalar(&mut s, "SELECT COUNT(*) FROM b x JOIN b y ON x.k = y.id"), 2000);
}
