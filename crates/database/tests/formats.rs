//! Format versions (docs/FORMAT.md): a data or log file written by a newer build is
//! refused with 948 before anything is written to it — on open and on attach — and the
//! files are left byte for byte as they were.

use std::path::Path;

use tessera_access::key::KeyBuf;
use tessera_access::space::{FORMAT_VERSION, OLDEST_FORMAT_VERSION};
use tessera_buffer::page::{self, PAGE_SIZE};
use tessera_database::{DatabaseOptions, Engine, EngineConfig};
use tessera_log::LOG_FORMAT_VERSION;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.pool_bytes = 16 << 20;
    c.background = false;
    c
}

/// An engine in `dir` with database `d` holding one committed row, closed.
fn make(dir: &Path) {
    let engine = Engine::open(config(dir)).unwrap();
    engine.create_database("d", DatabaseOptions::default()).unwrap();
    let db = engine.database("d").unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.insert(t, KeyBuf::new().i32(1, false).as_bytes(), b"kept").unwrap();
    tx.commit().unwrap();
}

/// Writes `version` into the data file's header page (offset 56, after the magic), with
/// the page's checksum made good, as a newer build would have written it.
fn set_data_version(path: &Path, version: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    let p = &mut bytes[..PAGE_SIZE];
    p[page::HEADER_SIZE + 8..page::HEADER_SIZE + 12].copy_from_slice(&version.to_le_bytes());
    page::seal(p);
    std::fs::write(path, bytes).unwrap();
}

/// Writes `version` into the log file's header (offset 8, after the magic).
fn set_log_version(path: &Path, version: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[8..12].copy_from_slice(&version.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

fn refused<T>(r: tessera_errors::Result<T>) -> tessera_errors::Error {
    match r {
        Ok(_) => panic!("opened a file this build must refuse"),
        Err(e) => e,
    }
}

fn refused_948(e: tessera_errors::Error, version: u32, supported: u32) {
    assert_eq!(e.number(), 948, "{e}");
    let text = e.to_string();
    assert!(
        text.contains(&format!("is version {version}")) && text.contains(&format!("supports version {supported}")),
        "{text}"
    );
}

#[test]
fn a_data_file_of_a_newer_format_is_refused_before_recovery_writes_to_it() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let (data, log) = (dir.path().join("d.mdf"), dir.path().join("d_log.ldf"));
    let newer = FORMAT_VERSION + 1;
    set_data_version(&data, newer);
    let before = (std::fs::read(&data).unwrap(), std::fs::read(&log).unwrap());
    let engine = Engine::open(config(dir.path())).unwrap();
    refused_948(refused(engine.database("d")), newer, FORMAT_VERSION);
    drop(engine);
    assert!(before == (std::fs::read(&data).unwrap(), std::fs::read(&log).unwrap()), "nothing was written");

    // Back at this build's version, the database opens with its row.
    set_data_version(&data, FORMAT_VERSION);
    let engine = Engine::open(config(dir.path())).unwrap();
    let db = engine.database("d").unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(db.begin().get(t, KeyBuf::new().i32(1, false).as_bytes()).unwrap().as_deref(), Some(&b"kept"[..]));
}

#[test]
fn a_log_file_of_a_newer_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let log = dir.path().join("d_log.ldf");
    let newer = LOG_FORMAT_VERSION + 7;
    set_log_version(&log, newer);
    let before = std::fs::read(&log).unwrap();
    let engine = Engine::open(config(dir.path())).unwrap();
    refused_948(refused(engine.database("d")), newer, LOG_FORMAT_VERSION);
    drop(engine);
    assert!(before == std::fs::read(&log).unwrap(), "nothing was written");
    // An older (unknown) version is damage, not a newer build's file.
    set_log_version(&log, 0);
    let engine = Engine::open(config(dir.path())).unwrap();
    assert_eq!(refused(engine.database("d")).number(), 824);
}

#[test]
fn attaching_files_of_a_newer_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let engine = Engine::open(config(dir.path())).unwrap();
    engine.detach_database("d").unwrap();
    let (data, log) = (dir.path().join("d.mdf"), dir.path().join("d_log.ldf"));
    set_data_version(&data, FORMAT_VERSION + 1);
    let e = refused(engine.attach_database("d", &data, &log, DatabaseOptions::default()));
    refused_948(e, FORMAT_VERSION + 1, FORMAT_VERSION);
    assert!(engine.database("d").is_err(), "not attached");
}

#[test]
fn a_data_file_of_an_older_format_opens_and_is_brought_to_this_one() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let data = dir.path().join("d.mdf");
    set_data_version(&data, OLDEST_FORMAT_VERSION);
    let engine = Engine::open(config(dir.path())).unwrap();
    let db = engine.database("d").unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(db.begin().get(t, KeyBuf::new().i32(1, false).as_bytes()).unwrap().as_deref(), Some(&b"kept"[..]));
    db.checkpoint().unwrap();
    drop(db);
    engine.shutdown().unwrap();
    drop(engine);
    let bytes = std::fs::read(&data).unwrap();
    let version = u32::from_le_bytes(bytes[page::HEADER_SIZE + 8..page::HEADER_SIZE + 12].try_into().unwrap());
    assert_eq!(version, FORMAT_VERSION, "the header says the file may now hold this format's rows");
    // Older than the oldest is damage.
    set_data_version(&data, OLDEST_FORMAT_VERSION - 1);
    let engine = Engine::open(config(dir.path())).unwrap();
    assert_eq!(refused(engine.database("d")).number(), 824);
}
