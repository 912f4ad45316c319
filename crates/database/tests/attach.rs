//! Detach and attach: files moved between instances, errors, and what the registry
//! remembers of detached files.

use std::path::Path;

use tessera_access::key::KeyBuf;
use tessera_database::{DatabaseOptions, Engine, EngineConfig, RecoveryModel};

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.pool_bytes = 16 << 20;
    c.background = false;
    c
}

fn int_key(i: i32) -> Vec<u8> {
    KeyBuf::new().i32(i, false).as_bytes().to_vec()
}

fn fill(engine: &Engine, name: &str, rows: std::ops::Range<i32>) {
    let db = engine.database(name).unwrap();
    let t = db.table("t").unwrap_or_else(|| db.create_table("t").unwrap());
    let mut tx = db.begin();
    for i in rows {
        tx.insert(t, &int_key(i), format!("row {i}").as_bytes()).unwrap();
    }
    tx.commit().unwrap();
}

fn count(engine: &Engine, name: &str) -> usize {
    let db = engine.database(name).unwrap();
    let t = db.table("t").unwrap();
    let tx = db.begin();
    let n = tx
        .scan(t, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, tessera_database::Direction::Forward)
        .count();
    tx.commit().unwrap();
    db.check().unwrap();
    n
}

#[test]
fn files_detached_from_one_instance_attach_to_another() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let ea = Engine::open(config(a.path())).unwrap();
    ea.create_database("tenant", DatabaseOptions::default()).unwrap();
    fill(&ea, "tenant", 0..3000);
    ea.detach_database("tenant").unwrap();
    assert!(!ea.exists("tenant"));
    for f in ["tenant.mdf", "tenant_log.ldf"] {
        assert!(a.path().join(f).exists(), "detach leaves {f}");
        std::fs::copy(a.path().join(f), b.path().join(f)).unwrap();
    }
    let eb = Engine::open(config(b.path())).unwrap();
    eb.attach_database("moved", &b.path().join("tenant.mdf"), &b.path().join("tenant_log.ldf"), Default::default())
        .unwrap();
    assert_eq!(count(&eb, "moved"), 3000);
    fill(&eb, "moved", 3000..3500);
    drop(eb);
    let eb = Engine::open(config(b.path())).unwrap();
    assert_eq!(count(&eb, "moved"), 3500, "the attached database is registered and durable");
}

#[test]
fn detach_then_attach_back_keeps_options_and_create_never_deletes_detached_files() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    let options = DatabaseOptions { recovery_model: RecoveryModel::Simple, ..Default::default() };
    e.create_database("d", options).unwrap();
    fill(&e, "d", 0..100);
    e.detach_database("d").unwrap();
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert!(!e.exists("d"), "the detach is in the registry");
    let err = e.create_database("d", DatabaseOptions::default()).unwrap_err();
    assert_eq!(err.number(), 5170, "detached files are not a crash's orphans: {err}");
    assert!(dir.path().join("d.mdf").exists());
    e.attach_database("d", &dir.path().join("d.mdf"), &dir.path().join("d_log.ldf"), Default::default()).unwrap();
    assert_eq!(e.database("d").unwrap().options().recovery_model, RecoveryModel::Simple);
    assert_eq!(count(&e, "d"), 100);
}

#[test]
fn detach_and_attach_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(e.detach_database("master").unwrap_err().number(), 7940);
    assert_eq!(e.detach_database("nope").unwrap_err().number(), 911);
    e.create_database("busy", DatabaseOptions::default()).unwrap();
    let held = e.database("busy").unwrap();
    assert_eq!(e.detach_database("busy").unwrap_err().number(), 3703);
    assert!(e.exists("busy"), "a refused detach leaves it attached");
    drop(held);

    let (data, log) = (dir.path().join("busy.mdf"), dir.path().join("busy_log.ldf"));
    assert_eq!(e.attach_database("busy", &data, &log, Default::default()).unwrap_err().number(), 1801);
    let err = e.attach_database("other", &data, &log, Default::default()).unwrap_err();
    assert_eq!(err.number(), 5120, "files in use by another database: {err}");
    let missing = dir.path().join("missing.mdf");
    let err = e.attach_database("other", &missing, &log, Default::default()).unwrap_err();
    assert_eq!(err.number(), 5120);
    assert!(err.to_string().contains("missing.mdf"), "{err}");

    let junk = dir.path().join("junk.mdf");
    std::fs::write(&junk, vec![7u8; 64 << 10]).unwrap();
    e.detach_database("busy").unwrap();
    let err = e.attach_database("other", &junk, &log, Default::default()).unwrap_err();
    assert_eq!(err.number(), 5172, "{err}");
    assert_eq!(std::fs::read(&junk).unwrap(), vec![7u8; 64 << 10], "a refused file is not written");
    let err = e.attach_database("other", &data, &junk, Default::default()).unwrap_err();
    assert_eq!(err.number(), 5172, "a log that is not a tessera log: {err}");
    assert!(!e.exists("other"));
    e.attach_database("busy", &data, &log, Default::default()).unwrap();
    assert!(e.database("busy").unwrap().table("t").is_none(), "empty, as it was made");
}

/// A data file and a log of two different databases are refused (5173) before recovery
/// touches either, and both databases attach afterwards with their own files, intact.
#[test]
fn a_data_file_with_another_database_s_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(config(dir.path())).unwrap();
    let mut paths = Vec::new();
    for (name, rows) in [("one", 0..100), ("two", 0..250)] {
        engine.create_database(name, DatabaseOptions::default()).unwrap();
        fill(&engine, name, rows);
        paths.push(engine.database(name).unwrap().file_paths());
        engine.detach_database(name).unwrap();
    }
    let (one, two) = (&paths[0], &paths[1]);
    let before = [std::fs::read(&one.0).unwrap(), std::fs::read(&two.1).unwrap()];
    let e = engine.attach_database("mixed", &one.0, &two.1, DatabaseOptions::default()).unwrap_err();
    assert_eq!(e.number(), 5173, "{e}");
    assert!(!engine.exists("mixed"));
    let after = [std::fs::read(&one.0).unwrap(), std::fs::read(&two.1).unwrap()];
    assert!(before == after, "the refused files are untouched");
    engine.attach_database("one", &one.0, &one.1, DatabaseOptions::default()).unwrap();
    engine.attach_database("two", &two.0, &two.1, DatabaseOptions::default()).unwrap();
    assert_eq!((count(&engine, "one"), count(&engine, "two")), (100, 250));
}
