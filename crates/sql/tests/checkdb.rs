//! DBCC CHECKDB finds a nonclustered index that disagrees with its table — an entry
//! missing, an entry that points at a row with other values, two rows under one unique
//! key — reports it with SQL Server's numbers, and REPAIR_REBUILD rebuilds the index.
//! The damage is done on purpose through the storage API, below the SQL layer.

use std::sync::Arc;

use tessera_database::{Engine, EngineConfig, TableId};
use tessera_semantics::catalog::Table;
use tessera_semantics::types::Value;
use tessera_sql::{Collected, Session, Shared};

fn run(s: &mut Session, sql: &str) -> Collected {
    let mut out = Collected::default();
    s.execute(sql, &mut out);
    out
}

fn numbers(out: &Collected) -> Vec<i32> {
    out.messages.iter().map(|m| m.number).collect()
}

fn table(shared: &Shared, name: &str) -> Arc<Table> {
    let db = shared.database("shop").unwrap();
    shared.catalog(&db).unwrap().table("dbo", name).unwrap().clone()
}

fn tree(shared: &Shared, t: &Table, index: usize) -> TableId {
    shared.database("shop").unwrap().table(&t.indexes[index].tree).unwrap()
}

#[test]
fn checkdb_reports_index_damage_and_repair_rebuild_fixes_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    config.background = false;
    let shared = tessera_sql::start_instance(Engine::open(config).unwrap()).unwrap();
    let mut s = Session::new(shared.clone(), "sa", "master").unwrap();
    let out = run(
        &mut s,
        "CREATE DATABASE shop; USE shop;
         CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, u int NOT NULL);
         CREATE INDEX ik ON t(k); CREATE UNIQUE INDEX iu ON t(u);
         DECLARE @i int = 0; WHILE @i < 100 BEGIN INSERT INTO t VALUES (@i, @i % 10, @i); SET @i += 1; END",
    );
    assert!(out.errors().is_empty(), "{:?}", out.errors());
    let clean = run(&mut s, "DBCC CHECKDB");
    assert_eq!(numbers(&clean), vec![8989, 2528], "{:?}", clean.messages);
    assert!(clean.messages[0].message.contains("0 consistency errors"));

    // Damage: row 5's entry in ik removed; an entry for k = 99 pointing at row 7 added;
    // row 1000 stored with u = 3, a value row 3 already holds, and no index entries.
    let t = table(&shared, "t");
    let row = |id: i64, k: i64, u: i64| vec![Value::Int(id), Value::Int(k), Value::Int(u)];
    let key_of = |r: &[Value]| tessera_execution::dml::row_key(&t, r, None).unwrap();
    let db = shared.database("shop").unwrap();
    let mut tx = db.begin();
    let five = row(5, 5, 5);
    let entry = tessera_execution::encoding::index_entry(&t, 1, &five, &key_of(&five)).unwrap();
    assert!(tx.delete(tree(&shared, &t, 1), &entry).unwrap());
    let seven = row(7, 99, 7);
    let stray = tessera_execution::encoding::index_entry(&t, 1, &seven, &key_of(&seven)).unwrap();
    tx.insert(tree(&shared, &t, 1), &stray, &key_of(&seven)).unwrap();
    tx.commit().unwrap();

    let out = run(&mut s, "DBCC CHECKDB (shop) WITH NO_INFOMSGS");
    let n = numbers(&out);
    assert_eq!(n.iter().filter(|&&x| x == 8951).count(), 1, "{:?}", out.messages);
    assert_eq!(n.iter().filter(|&&x| x == 8955).count(), 1);
    assert_eq!(n.iter().filter(|&&x| x == 8952).count(), 1);
    assert_eq!(n.iter().filter(|&&x| x == 8956).count(), 1);
    assert!(n.contains(&8990) && n.contains(&8989) && n.contains(&8958), "{n:?}");
    let summary = out.messages.iter().find(|m| m.number == 8989).unwrap();
    assert!(summary.message.contains("2 consistency errors in database 'shop'"), "{}", summary.message);
    let missing = out.messages.iter().find(|m| m.number == 8955).unwrap();
    assert!(missing.message.contains("(id = 5)") && missing.message.contains("'k = 5'"), "{}", missing.message);
    let missing_head = out.messages.iter().find(|m| m.number == 8951).unwrap();
    assert!(missing_head.message.contains("index 'ik' (ID 2)"), "{}", missing_head.message);
    assert_eq!(missing_head.severity, 16);

    // The damage is visible to queries through the index, as it would be in SQL Server.
    let by_index = run(&mut s, "SELECT COUNT(*) FROM t WHERE k = 5");
    assert_eq!(by_index.result_sets[0].1[0][0], Value::Int(9));

    let repaired = run(&mut s, "DBCC CHECKDB (shop, REPAIR_REBUILD)");
    let fixed = repaired.messages.iter().find(|m| m.message.starts_with("CHECKDB fixed")).expect("a repair summary");
    assert!(fixed.message.contains("2 consistency errors"), "{}", fixed.message);
    let clean = run(&mut s, "DBCC CHECKDB (shop)");
    assert_eq!(numbers(&clean), vec![8989, 2528], "{:?}", clean.messages);
    let by_index = run(&mut s, "SELECT COUNT(*) FROM t WHERE k = 5");
    assert_eq!(by_index.result_sets[0].1[0][0], Value::Int(10));
    let stray = run(&mut s, "SELECT COUNT(*) FROM t WHERE k = 99");
    assert_eq!(stray.result_sets[0].1[0][0], Value::Int(0));

    // Two rows under one key of a unique index: the index holds one entry, so the other
    // row is reported as missing its entry.
    let t = table(&shared, "t");
    let twin = row(1000, 0, 3);
    let twin_key = tessera_execution::dml::row_key(&t, &twin, None).unwrap();
    let mut tx = db.begin();
    let bytes = tessera_execution::dml::to_storage_row(&t, &twin).unwrap();
    tx.insert(tree(&shared, &t, 0), &twin_key, &bytes).unwrap();
    let entry = tessera_execution::encoding::index_entry(&t, 1, &twin, &twin_key).unwrap();
    tx.insert(tree(&shared, &t, 1), &entry, &twin_key).unwrap();
    tx.commit().unwrap();
    let out = run(&mut s, "DBCC CHECKDB");
    let missing: Vec<&str> = out.messages.iter().filter(|m| m.number == 8951).map(|m| m.message.as_str()).collect();
    assert_eq!(missing.len(), 1, "{:?}", out.messages);
    assert!(missing[0].contains("index 'iu' (ID 3)"), "{}", missing[0]);
}
