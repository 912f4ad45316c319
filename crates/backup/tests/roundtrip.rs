//! BACKUP and RESTORE through the engine API: round trips of every kind, chains,
//! point-in-time, striping, compression, a backup under concurrent writers, and the
//! bad inputs (missing, foreign or damaged stripes, out-of-sequence logs, full disks).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tessera_backup::{backup, restore, verify, BackupOptions, BackupType, Notice, RestoreOptions};
use tessera_database::{DatabaseOptions, DbState, Direction, Engine, EngineConfig, RecoveryModel};

fn engine(dir: &Path) -> Arc<Engine> {
    let mut c = EngineConfig::new(dir.join("data"));
    c.pool_bytes = 32 << 20;
    c.background = false;
    Engine::open(c).unwrap()
}

fn key(i: u32) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

fn put(engine: &Engine, db: &str, rows: impl IntoIterator<Item = (u32, String)>) {
    let db = engine.database(db).unwrap();
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    for (k, v) in rows {
        if !tx.update(t, &key(k), v.as_bytes()).unwrap() {
            tx.insert(t, &key(k), v.as_bytes()).unwrap();
        }
    }
    tx.commit().unwrap();
}

fn contents(engine: &Engine, db: &str) -> BTreeMap<u32, String> {
    let db = engine.database(db).unwrap();
    db.check().unwrap();
    let t = db.table("t").unwrap();
    let tx = db.begin();
    let out = tx
        .scan(t, Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .map(|r| {
            let (k, v) = r.unwrap();
            (u32::from_be_bytes(k[..4].try_into().unwrap()), String::from_utf8(v).unwrap())
        })
        .collect();
    tx.commit().unwrap();
    out
}

fn make_db(engine: &Engine, name: &str, model: RecoveryModel, rows: u32) {
    engine.create_database(name, DatabaseOptions { recovery_model: model, ..Default::default() }).unwrap();
    engine.database(name).unwrap().create_table("t").unwrap();
    put(engine, name, (0..rows).map(|i| (i, format!("row {i} {}", "x".repeat((i % 200) as usize)))));
}

fn opts(devices: &[PathBuf], kind: BackupType) -> BackupOptions {
    BackupOptions { devices: devices.to_vec(), kind: Some(kind), ..Default::default() }
}

fn run_backup(engine: &Engine, db: &str, o: &BackupOptions) -> Vec<Notice> {
    let mut notes = Vec::new();
    backup(engine, db, o, &mut |n| notes.push(n)).unwrap();
    notes
}

fn restore_as(engine: &Engine, db: &str, devices: &[PathBuf], dir: &Path, recovery: bool) -> Vec<Notice> {
    let o = RestoreOptions {
        devices: devices.to_vec(),
        recovery,
        moves: vec![
            (db_source(devices), dir.join(format!("{db}.mdf"))),
            (format!("{}_log", db_source(devices)), dir.join(format!("{db}_log.ldf"))),
        ],
        ..Default::default()
    };
    let mut notes = Vec::new();
    restore(engine, db, &o, &mut |n| notes.push(n)).unwrap();
    notes
}

fn db_source(devices: &[PathBuf]) -> String {
    tessera_backup::file_list(devices, 1).unwrap().database_name
}

fn restore_log(
    engine: &Engine,
    db: &str,
    devices: &[PathBuf],
    file: u32,
    recovery: bool,
    stop_at: Option<i64>,
) -> Result<Vec<Notice>, tessera_backup::BackupError> {
    let o = RestoreOptions {
        devices: devices.to_vec(),
        log: true,
        file: Some(file),
        recovery,
        stop_at,
        ..Default::default()
    };
    let mut notes = Vec::new();
    restore(engine, db, &o, &mut |n| notes.push(n)).map(|_| notes)
}

#[test]
fn full_backup_restores_identical_data_under_another_name_with_messages() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    make_db(&e, "src", RecoveryModel::Full, 3000);
    let bak = vec![dir.path().join("full.bak")];
    let notes = run_backup(&e, "src", &BackupOptions { stats: Some(10), ..opts(&bak, BackupType::Database) });
    let texts: Vec<&str> = notes.iter().map(|n| n.text.as_str()).collect();
    assert!(texts.iter().any(|t| t.ends_with("percent processed.")), "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("Processed ") && t.contains("file 'src' on file 1.")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("file 'src_log' on file 1.")), "{texts:?}");
    let last = texts.last().unwrap();
    assert!(last.starts_with("BACKUP DATABASE successfully processed ") && last.ends_with(" MB/sec)."), "{last}");

    put(&e, "src", [(1, "changed after the backup".to_string())]);
    let restored = dir.path().join("restored");
    std::fs::create_dir_all(&restored).unwrap();
    let notes = restore_as(&e, "copy", &bak, &restored, true);
    assert!(notes.last().unwrap().text.starts_with("RESTORE DATABASE successfully processed "));
    let mut expected = contents(&e, "src");
    expected.insert(1, "row 1 x".to_string());
    assert_eq!(contents(&e, "copy"), expected);
    assert!(restored.join("copy.mdf").exists());

    // The copy is a working database: it takes writes and survives a restart.
    put(&e, "copy", [(99_999, "new".to_string())]);
    drop(e);
    let e = engine(dir.path());
    assert_eq!(contents(&e, "copy").get(&99_999).map(String::as_str), Some("new"));
}

#[test]
fn striped_compressed_backup_taken_under_concurrent_writers_is_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    make_db(&e, "busy", RecoveryModel::Full, 2000);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (e, stop) = (e.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut committed = Vec::new();
            let mut i = 10_000u32;
            while !stop.load(Ordering::Relaxed) {
                put(&e, "busy", (i..i + 20).map(|k| (k, format!("w{k}"))));
                committed.push(i);
                i += 20;
            }
            committed
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(50));
    let stripes: Vec<PathBuf> = (0..4).map(|i| dir.path().join(format!("s{i}.bak"))).collect();
    let o = BackupOptions {
        compression: true,
        checksum: true,
        max_transfer_size: Some(64 << 10),
        buffer_count: Some(5),
        ..opts(&stripes, BackupType::Database)
    };
    run_backup(&e, "busy", &o);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    for s in &stripes {
        assert!(std::fs::metadata(s).unwrap().len() > 4096, "every stripe holds chunks");
    }
    let mut notes = Vec::new();
    verify(&stripes, 1, &mut |n| notes.push(n)).unwrap();
    assert_eq!(notes.last().unwrap().text, "The backup set on file 1 is valid.");

    // Stripes may be given in any order; the copy holds whole batches only.
    let mut shuffled = stripes.clone();
    shuffled.reverse();
    restore_as(&e, "busy2", &shuffled, dir.path(), true);
    let copy = contents(&e, "busy2");
    for k in 0..2000 {
        assert!(copy.contains_key(&k));
    }
    let extra: Vec<u32> = copy.keys().copied().filter(|&k| k >= 10_000).collect();
    assert_eq!(extra.len() % 20, 0, "a writer's batch is all there or not at all");
    let src = contents(&e, "busy");
    for k in extra {
        assert_eq!(copy[&k], src[&k]);
    }
}

#[test]
fn differential_and_log_chain_with_point_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    make_db(&e, "acct", RecoveryModel::Full, 500);
    let full = vec![dir.path().join("full.bak")];
    let diff = vec![dir.path().join("diff.bak")];
    let logs = vec![dir.path().join("log.bak")];
    run_backup(&e, "acct", &opts(&full, BackupType::Database));
    put(&e, "acct", (0..100).map(|i| (i, format!("v2 {i}"))));
    run_backup(&e, "acct", &opts(&diff, BackupType::Differential));
    put(&e, "acct", [(1000, "after diff".to_string())]);
    run_backup(&e, "acct", &opts(&logs, BackupType::Log)); // file 1
    put(&e, "acct", [(1001, "first".to_string())]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let between = tessera_backup_now();
    std::thread::sleep(std::time::Duration::from_millis(20));
    put(&e, "acct", [(1002, "second".to_string())]);
    run_backup(&e, "acct", &opts(&logs, BackupType::Log)); // file 2
    let final_state = contents(&e, "acct");

    // Full + differential + both logs = the source as of the last log backup.
    restore_as(&e, "r1", &full, dir.path(), false);
    assert_eq!(e.database_state("r1"), Some(DbState::Restoring));
    assert_eq!(e.database("r1").unwrap_err().number(), 927);
    let o = RestoreOptions { devices: diff.clone(), recovery: false, ..Default::default() };
    restore(&e, "r1", &o, &mut |_| {}).unwrap();
    restore_log(&e, "r1", &logs, 1, false, None).unwrap();
    restore_log(&e, "r1", &logs, 2, true, None).unwrap();
    assert_eq!(contents(&e, "r1"), final_state);

    // Skipping the first log backup: the second is too recent (4305).
    restore_as(&e, "r2", &full, dir.path(), false);
    assert_eq!(restore_log(&e, "r2", &logs, 2, true, None).unwrap_err().number, 4305);
    // Point in time: between the two commits of the second log backup.
    restore_log(&e, "r2", &logs, 1, false, None).unwrap();
    restore_log(&e, "r2", &logs, 2, true, Some(between)).unwrap();
    let r2 = contents(&e, "r2");
    assert_eq!(r2.get(&1001).map(String::as_str), Some("first"));
    assert!(!r2.contains_key(&1002), "the commit after STOPAT is not there");
    assert_eq!(r2.get(&5).map(String::as_str), Some("v2 5"));
    // Applying an old log backup again is too early (4326).
    assert_eq!(e.database_state("r2"), Some(DbState::Online));
}

fn tessera_backup_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64
}

#[test]
fn recovery_models_decide_what_the_log_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    make_db(&e, "simple", RecoveryModel::Simple, 10);
    let bak = vec![dir.path().join("x.bak")];
    let err = backup(&e, "simple", &opts(&bak, BackupType::Log), &mut |_| {}).unwrap_err();
    assert_eq!(err.number, 4208);
    make_db(&e, "full", RecoveryModel::Full, 10);
    assert_eq!(backup(&e, "full", &opts(&bak, BackupType::Log), &mut |_| {}).unwrap_err().number, 4214);
    assert_eq!(backup(&e, "full", &opts(&bak, BackupType::Differential), &mut |_| {}).unwrap_err().number, 3035);
    run_backup(&e, "full", &opts(&bak, BackupType::Database));
    // Under FULL with a log chain, checkpoints keep the log for the next log backup.
    let db = e.database("full").unwrap();
    for round in 0..3 {
        put(&e, "full", (0..300).map(|i| (i, format!("round {round} {}", "y".repeat(300)))));
        db.checkpoint().unwrap();
    }
    assert_eq!(db.wal().reuse_wait(), "LOG_BACKUP");
    let kept = db.wal().truncation_lsn();
    let report = backup(&e, "full", &opts(&bak, BackupType::Log), &mut |_| {}).unwrap();
    assert!(report.trailer.last_lsn > kept.raw());
    db.checkpoint().unwrap();
    assert_eq!(
        db.wal().truncation_lsn(),
        tessera_log::Lsn::from_raw(report.trailer.last_lsn),
        "the log backup let the log go"
    );
    // Switching to SIMPLE breaks the chain: log backups need a new full backup.
    e.alter_database("full", DatabaseOptions { recovery_model: RecoveryModel::Simple, ..Default::default() }).unwrap();
    e.alter_database("full", DatabaseOptions { recovery_model: RecoveryModel::Full, ..Default::default() }).unwrap();
    assert_eq!(backup(&e, "full", &opts(&bak, BackupType::Log), &mut |_| {}).unwrap_err().number, 4214);
}

#[test]
fn bad_media_and_bad_requests_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    make_db(&e, "src", RecoveryModel::Full, 800);
    let stripes: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("m{i}.bak"))).collect();
    run_backup(&e, "src", &BackupOptions { max_transfer_size: Some(64 << 10), ..opts(&stripes, BackupType::Database) });
    let ro = |devices: &[PathBuf], name: &str| RestoreOptions {
        devices: devices.to_vec(),
        recovery: true,
        moves: vec![
            ("src".into(), dir.path().join(format!("{name}.mdf"))),
            ("src_log".into(), dir.path().join(format!("{name}_log.ldf"))),
        ],
        ..Default::default()
    };
    // A missing stripe.
    assert_eq!(restore(&e, "x", &ro(&stripes[..1], "x"), &mut |_| {}).unwrap_err().number, 3132);
    // Over a live database without REPLACE: the tail of its log would be lost.
    let mut over = ro(&stripes, "src2");
    over.moves.clear();
    assert_eq!(restore(&e, "src", &over, &mut |_| {}).unwrap_err().number, 3159);
    // Another database's files.
    assert_eq!(restore(&e, "other", &over, &mut |_| {}).unwrap_err().number, 1834);
    // A stripe of another media set.
    let foreign = vec![dir.path().join("f.bak")];
    run_backup(&e, "src", &opts(&foreign, BackupType::Database));
    let mixed = vec![stripes[0].clone(), foreign[0].clone()];
    assert_eq!(restore(&e, "x", &ro(&mixed, "x"), &mut |_| {}).unwrap_err().number, 3227);
    // A corrupted chunk: found by VERIFYONLY and by RESTORE, and the source is untouched.
    let mut bytes = std::fs::read(&stripes[1]).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(&stripes[1], &bytes).unwrap();
    assert_eq!(verify(&stripes, 1, &mut |_| {}).unwrap_err().number, 3189);
    assert_eq!(restore(&e, "x", &ro(&stripes, "x"), &mut |_| {}).unwrap_err().number, 3189);
    assert_eq!(contents(&e, "src").len(), 800);
    // Bad options.
    let bad = BackupOptions { max_transfer_size: Some(100_000), ..opts(&foreign, BackupType::Database) };
    assert_eq!(backup(&e, "src", &bad, &mut |_| {}).unwrap_err().number, 3250);
    let bad = BackupOptions { buffer_count: Some(100_000), ..opts(&foreign, BackupType::Database) };
    assert_eq!(backup(&e, "src", &bad, &mut |_| {}).unwrap_err().number, 701);
    // FILE = n beyond the media.
    let o = RestoreOptions { file: Some(5), ..ro(&foreign, "y") };
    assert_eq!(restore(&e, "y", &o, &mut |_| {}).unwrap_err().number, 4038);
}

#[test]
fn a_full_disk_leaves_no_partial_set_and_the_media_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    make_db(&e, "small", RecoveryModel::Simple, 20);
    make_db(&e, "big", RecoveryModel::Full, 12_000);
    // /dev/full fails every write with ENOSPC.
    let err = backup(&e, "big", &opts(&[PathBuf::from("/dev/full")], BackupType::Database), &mut |_| {}).unwrap_err();
    assert_eq!(err.number, 3202, "{err}");
    assert!(err.message.contains("space"), "{err}");

    // A disk that fills in the middle of the backup: a 1 MiB tmpfs (needs root to mount;
    // skipped elsewhere).
    let small_disk = dir.path().join("disk");
    std::fs::create_dir_all(&small_disk).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&small_disk)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if mounted {
        let bak = vec![small_disk.join("x.bak")];
        run_backup(&e, "small", &opts(&bak, BackupType::Database));
        let before = std::fs::metadata(&bak[0]).unwrap().len();
        let err = backup(&e, "big", &opts(&bak, BackupType::Database), &mut |_| {}).unwrap_err();
        assert_eq!(err.number, 3202, "{err}");
        assert_eq!(std::fs::metadata(&bak[0]).unwrap().len(), before, "the partial set was cut off");
        assert_eq!(tessera_backup::headers(&bak).unwrap().len(), 1);
        run_backup(&e, "small", &opts(&bak, BackupType::Database));
        assert_eq!(tessera_backup::headers(&bak).unwrap().len(), 2, "the media takes the next set");
        let o = RestoreOptions {
            devices: bak.clone(),
            file: Some(2),
            recovery: true,
            moves: vec![("small".into(), dir.path().join("s2.mdf")), ("small_log".into(), dir.path().join("s2.ldf"))],
            ..Default::default()
        };
        restore(&e, "small2", &o, &mut |_| {}).unwrap();
        assert_eq!(contents(&e, "small2").len(), 20);
        let _ = std::process::Command::new("umount").arg(&small_disk).status();
    } else {
        eprintln!("skipped the mid-backup full disk: cannot mount a tmpfs here");
    }
    // The source database is unaffected.
    assert_eq!(contents(&e, "big").len(), 12_000);
}

/// The rows of table `name`, as strings.
fn table_rows(engine: &Engine, db: &str, name: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = engine.database(db).unwrap();
    db.check().unwrap();
    let t = db.table(name).unwrap();
    let tx = db.begin();
    let rows = tx.scan(t, Bound::Unbounded, Bound::Unbounded, Direction::Forward).map(Result::unwrap).collect();
    tx.commit().unwrap();
    rows
}

#[test]
fn log_backups_carry_bulk_loaded_pages_and_refuse_a_stop_inside() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    make_db(&e, "bl", RecoveryModel::BulkLogged, 200);
    let full = vec![dir.path().join("full.bak")];
    let logs = vec![dir.path().join("log.bak")];
    run_backup(&e, "bl", &opts(&full, BackupType::Database));
    put(&e, "bl", [(5000, "before the load".to_string())]);
    run_backup(&e, "bl", &opts(&logs, BackupType::Log)); // file 1: no bulk load

    // A minimally logged load, then logged changes to the loaded pages.
    let db = e.database("bl").unwrap();
    let loaded = db.create_table("loaded").unwrap();
    let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..20_000u32)
        .map(|i| (i.to_be_bytes().to_vec(), format!("bulk {i} {}", "y".repeat(60)).into_bytes()))
        .collect();
    let mut tx = db.begin();
    let out = tx.bulk_load(loaded, rows.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap().unwrap();
    tx.commit().unwrap();
    assert!(out.pages > 100);
    let mut tx = db.begin();
    tx.update(loaded, &7u32.to_be_bytes(), b"changed after the load").unwrap();
    tx.commit().unwrap();
    drop(db);
    let between = tessera_backup_now();
    std::thread::sleep(std::time::Duration::from_millis(20));
    put(&e, "bl", [(5001, "after the load".to_string())]);
    let notes = run_backup(&e, "bl", &opts(&logs, BackupType::Log)); // file 2: the load
    assert!(
        notes
            .iter()
            .any(|n| n.number == 4035 && n.text.starts_with("Processed") && n.text.contains("file 'bl' on file 2")),
        "the log backup reports the data pages it copied: {notes:?}"
    );
    let sets = tessera_backup::headers(&logs).unwrap();
    let flags: Vec<bool> = sets.iter().map(|(_, t)| t.as_ref().unwrap().has_bulk_logged_data).collect();
    assert_eq!(flags, vec![false, true]);
    let expected_t = contents(&e, "bl");
    let expected_loaded = table_rows(&e, "bl", "loaded");
    assert_eq!(expected_loaded.len(), 20_000);

    // Full + both logs: identical, loaded table included.
    restore_as(&e, "bl1", &full, dir.path(), false);
    restore_log(&e, "bl1", &logs, 1, false, None).unwrap();
    restore_log(&e, "bl1", &logs, 2, true, None).unwrap();
    assert_eq!(contents(&e, "bl1"), expected_t);
    assert_eq!(table_rows(&e, "bl1", "loaded"), expected_loaded);

    // A stop inside the bulk-logged backup is refused (4341); inside the first one is fine.
    restore_as(&e, "bl2", &full, dir.path(), false);
    restore_log(&e, "bl2", &logs, 1, false, None).unwrap();
    let refused = restore_log(&e, "bl2", &logs, 2, true, Some(between)).unwrap_err();
    assert_eq!(refused.number, 4341, "{refused}");
    assert_eq!(e.database_state("bl2"), Some(DbState::Restoring));
    restore_log(&e, "bl2", &logs, 2, true, None).unwrap();
    assert_eq!(table_rows(&e, "bl2", "loaded"), expected_loaded);
}

#[test]
fn differentials_read_only_the_extents_changed_since_their_base() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    make_db(&e, "dcm", RecoveryModel::Full, 20_000);
    let full = vec![dir.path().join("full.bak")];
    let report = |e: &Engine, o: &BackupOptions| backup(e, "dcm", o, &mut |_| {}).unwrap();
    let base = report(&e, &opts(&full, BackupType::Database));
    let all_pages = base.pages_scanned;
    // 20,000 rows take about 300 pages (the data file keeps no fixed reserve beyond them).
    assert!(all_pages > 250, "{all_pages} pages");
    put(&e, "dcm", [(7, "seven".to_string()), (19_000, "late".to_string())]);

    // COPY_ONLY full backups leave the base (and its map) alone.
    let copy = BackupOptions { copy_only: true, ..opts(&[dir.path().join("copy.bak")], BackupType::Database) };
    report(&e, &copy);
    let diff1 = vec![dir.path().join("diff1.bak")];
    let d1 = report(&e, &opts(&diff1, BackupType::Differential));
    assert!(d1.pages_scanned <= 64, "a differential after two row changes read {} pages", d1.pages_scanned);
    assert!(d1.trailer.data_pages_copied >= 2);
    let after_d1 = contents(&e, "dcm");

    restore_as(&e, "dcm1", &full, dir.path(), false);
    let o = RestoreOptions { devices: diff1.clone(), recovery: true, ..Default::default() };
    restore(&e, "dcm1", &o, &mut |_| {}).unwrap();
    assert_eq!(contents(&e, "dcm1"), after_d1);

    // After a restart the map is gone: the next differential reads every page.
    drop(e);
    let e = engine(dir.path());
    put(&e, "dcm", [(8, "eight".to_string())]);
    let diff2 = vec![dir.path().join("diff2.bak")];
    let d2 = report(&e, &opts(&diff2, BackupType::Differential));
    assert!(d2.pages_scanned >= all_pages, "{} of {all_pages} pages read after a restart", d2.pages_scanned);
    let o = RestoreOptions {
        devices: full.clone(),
        recovery: false,
        replace: true,
        moves: vec![("dcm".into(), dir.path().join("dcm2.mdf")), ("dcm_log".into(), dir.path().join("dcm2_log.ldf"))],
        ..Default::default()
    };
    restore(&e, "dcm2", &o, &mut |_| {}).unwrap();
    let o = RestoreOptions { devices: diff2.clone(), recovery: true, ..Default::default() };
    restore(&e, "dcm2", &o, &mut |_| {}).unwrap();
    assert_eq!(contents(&e, "dcm2"), contents(&e, "dcm"));
}
