//! Crash tests: a worker process runs concurrent transactions and is killed with
//! SIGKILL at random instants; after each kill the database is recovered and checked.
//! See `src/bin/tessera-crashtest-worker.rs` for the workload and its invariant. The
//! same again with a database that starts at the default (tiny) size and may not grow
//! its files past small maximums: statements fail with 9002 and 1105 all along, their
//! transactions roll back, and still every acknowledged commit survives.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::ops::Bound;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tessera_database::{Database, DatabaseOptions, Direction, Engine, EngineConfig, RecoveryModel};

const THREADS: u32 = 4;

fn config(dir: &std::path::Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.pool_bytes = 8 << 20;
    c.background = false;
    c
}

/// The rows of table `b<k>` (the worker's bulk loads), in key order.
fn bulk_rows(db: &Arc<Database>, k: u64) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let table = db.table(&format!("b{k}"))?;
    let tx = db.begin();
    let rows = tx.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Forward).collect::<Result<_, _>>();
    tx.commit().unwrap();
    Some(rows.unwrap())
}

/// Whether `rows` are rows `0..n` of bulk load `k`, each complete.
fn bulk_complete(k: u64, rows: &[(Vec<u8>, Vec<u8>)], n: u64) -> bool {
    rows.len() as u64 == n
        && rows.iter().enumerate().all(|(i, (key, value))| {
            *key == format!("{i:08}").into_bytes()
                && value.len() == 40 + (i as u64 * 7 % 300) as usize
                && value.iter().all(|&b| b == (k % 251) as u8)
        })
}

/// Checks the bulk loads' invariant (see the worker) and returns the last committed one.
fn check_bulk(db: &Arc<Database>, rows_of_t: &BTreeMap<Vec<u8>, Vec<u8>>, acked: u64) -> u64 {
    let (k, n) = rows_of_t.get(&b"bulk"[..]).map_or((0, 0), |v| {
        (u64::from_le_bytes(v[..8].try_into().unwrap()), u64::from_le_bytes(v[8..16].try_into().unwrap()))
    });
    assert!(k >= acked, "bulk load {acked} was acknowledged but the database holds only up to {k}");
    if k > 0 {
        let rows = bulk_rows(db, k).unwrap_or_else(|| panic!("table b{k} of the last committed load is missing"));
        assert!(bulk_complete(k, &rows, n), "bulk load {k}: {} rows, not its {n}", rows.len());
    }
    for j in k.saturating_sub(3).max(1)..k {
        if let Some(rows) = bulk_rows(db, j) {
            assert!(bulk_complete(j, &rows, rows.len() as u64) && !rows.is_empty(), "bulk load {j} is incomplete");
        }
    }
    if let Some(rows) = bulk_rows(db, k + 1) {
        assert!(rows.is_empty(), "an uncommitted bulk load left {} rows", rows.len());
    }
    k
}

/// Checks the invariant and returns each thread's counter.
fn check(
    dir: &std::path::Path,
    acked: &HashMap<u32, u64>,
    acked_bulk: u64,
    losers: &mut usize,
) -> (HashMap<u32, u64>, u64) {
    let engine = Engine::open(config(dir)).expect("recovery succeeds");
    let db = engine.database("crash").unwrap();
    *losers += db.recovery().expect("opened by recovery").losers;
    db.check().expect("structure and allocation are consistent after recovery");
    engine.pool().check_invariants(false);
    let table = db.table("t").unwrap();
    let tx = db.begin();
    let rows: BTreeMap<Vec<u8>, Vec<u8>> =
        tx.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Forward).collect::<Result<_, _>>().unwrap();
    let back: Vec<Vec<u8>> =
        tx.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Backward).map(|r| r.unwrap().0).collect();
    assert!(back.iter().rev().eq(rows.keys()), "backward scan mirrors forward scan");
    tx.commit().unwrap();
    let bulk = check_bulk(&db, &rows, acked_bulk);
    let mut counters = HashMap::new();
    let mut expected: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
    expected.insert(b"bulk".to_vec(), None);
    for t in 0..THREADS {
        let v = rows.get(format!("c/{t}").as_bytes()).map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()));
        let a = acked.get(&t).copied().unwrap_or(0);
        assert!(v >= a, "thread {t}: commit {a} was acknowledged but the database holds only up to {v}");
        counters.insert(t, v);
        if v > 0 {
            expected.insert(format!("c/{t}").into_bytes(), Some(v.to_le_bytes().to_vec()));
        }
        for k in v.saturating_sub(4).max(1)..=v {
            let m = rows
                .get(format!("m/{t}/{k:08}").as_bytes())
                .unwrap_or_else(|| panic!("thread {t}: group {k} missing (counter {v})"));
            let n = u64::from_le_bytes(m[..8].try_into().unwrap());
            expected.insert(format!("m/{t}/{k:08}").into_bytes(), None);
            for i in 0..n {
                let key = format!("d/{t}/{k:08}/{i}").into_bytes();
                let val = rows.get(&key).unwrap_or_else(|| panic!("thread {t}: row {i} of group {k} missing"));
                assert!(val.iter().all(|&b| b == (k % 251) as u8), "row content of group {k}");
                expected.insert(key, None);
            }
        }
    }
    let extra: Vec<_> = rows
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .take(5)
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    assert!(extra.is_empty(), "rows of uncommitted or deleted groups survived: {extra:?}");
    drop(db);
    engine.shutdown().unwrap();
    (counters, bulk)
}

/// What a run of kills saw.
struct Run {
    progress: u64,
    bulk: u64,
    losers: usize,
    /// Statements that failed because the log (9002) or the data file (1105) was full.
    log_full: usize,
    data_full: usize,
}

/// Creates database `crash` with `options` and kills the worker `kills` times.
fn run(kills: usize, options: DatabaseOptions, full_ok: bool) -> Run {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = Engine::open(config(dir.path())).unwrap();
        engine.create_database("crash", options).unwrap();
        engine.database("crash").unwrap().create_table("t").unwrap();
        engine.shutdown().unwrap();
    }
    let mut acked: HashMap<u32, u64> = HashMap::new();
    let mut acked_bulk = 0u64;
    let mut bulk = 0u64;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut progress = 0u64;
    let mut losers = 0usize;
    let (mut log_full, mut data_full) = (0usize, 0usize);
    for round in 0..kills {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(30 + seed % 400);
        let mut child = Command::new(env!("CARGO_BIN_EXE_tessera-crashtest-worker"))
            .arg(dir.path())
            .arg(THREADS.to_string())
            .arg(seed.to_string())
            .args(full_ok.then_some("full-ok"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut got, mut bulk, mut fulls) = (Vec::new(), 0u64, (0usize, 0usize));
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let f: Vec<&str> = line.split(' ').collect();
                if f.len() == 3 && f[0] == "C" {
                    got.push((f[1].parse::<u32>().unwrap(), f[2].parse::<u64>().unwrap()));
                } else if f.len() == 2 && f[0] == "B" {
                    bulk = bulk.max(f[1].parse::<u64>().unwrap());
                } else if f == ["F", "9002"] {
                    fulls.0 += 1;
                } else if f == ["F", "1105"] {
                    fulls.1 += 1;
                }
            }
            (got, bulk, fulls)
        });
        std::thread::sleep(delay);
        if let Ok(Some(status)) = child.try_wait() {
            panic!("round {round}: worker exited early with {status}");
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let (got, got_bulk, (got_log_full, got_data_full)) = reader.join().unwrap();
        log_full += got_log_full;
        data_full += got_data_full;
        for (t, k) in got {
            let e = acked.entry(t).or_insert(0);
            *e = (*e).max(k);
        }
        acked_bulk = acked_bulk.max(got_bulk);
        let (counters, b) = check(dir.path(), &acked, acked_bulk, &mut losers);
        progress = counters.values().sum();
        bulk = b;
    }
    eprintln!(
        "{kills} kills; acknowledged commits per thread: {acked:?}; counters sum {progress}; {bulk} bulk loads; {losers} losers undone; {log_full} statements found the log full, {data_full} the data file"
    );
    Run { progress, bulk, losers, log_full, data_full }
}

#[test]
fn every_acknowledged_commit_survives_sigkill() {
    let options = DatabaseOptions { recovery_model: RecoveryModel::BulkLogged, ..Default::default() };
    let r = run(50, options, false);
    assert!(r.progress > 0, "the workers committed something");
    assert!(r.bulk > 0, "the bulk loader committed something");
    assert!(r.losers > 0, "some kills interrupted transactions, whose changes recovery undid");
}

#[test]
fn every_acknowledged_commit_survives_sigkill_with_files_at_their_maximum_sizes() {
    let options = DatabaseOptions {
        recovery_model: RecoveryModel::BulkLogged,
        max_data_size: Some(2 << 20),
        max_log_size: Some(1 << 20),
        ..Default::default()
    };
    let r = run(20, options, true);
    assert!(r.progress > 0, "the workers committed something");
    assert!(r.log_full > 0 && r.data_full > 0, "both files reached their maximum sizes");
    assert!(r.losers > 0, "some kills interrupted transactions, whose changes recovery undid");
}

/// CREATE, ALTER, detach and DROP DATABASE killed at random instants: the registry says
/// what the operations that returned did, the one in flight is all or nothing, and no
/// file is left that is no database's (see the worker's `databases` workload).
#[test]
fn database_creation_and_removal_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    // name → (state acknowledged, state begun): "C" created, "D" dropped, "X" detached.
    let mut known: BTreeMap<String, (Option<char>, char)> = BTreeMap::new();
    let mut models: BTreeMap<String, (Option<String>, String)> = BTreeMap::new();
    // Names whose operation a kill cut off: their files may stay behind (the next CREATE
    // of the name removes them).
    let mut cut_off: Vec<String> = Vec::new();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..12 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = Command::new(env!("CARGO_BIN_EXE_tessera-crashtest-worker"))
            .arg(dir.path())
            .arg("databases")
            .arg((seed % 1_000_000).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader =
            std::thread::spawn(move || BufReader::new(stdout).lines().map_while(|l| l.ok()).collect::<Vec<_>>());
        std::thread::sleep(Duration::from_millis(100 + seed % 500));
        if let Ok(Some(status)) = child.try_wait() {
            panic!("round {round}: worker exited early with {status}");
        }
        child.kill().unwrap();
        child.wait().unwrap();
        for line in reader.join().unwrap() {
            let f: Vec<&str> = line.split(' ').collect();
            let op = f[0].chars().next().unwrap();
            if op.eq_ignore_ascii_case(&'a') {
                let m = models.entry(f[1].to_string()).or_insert((None, String::new()));
                if op == 'A' {
                    m.0 = Some(f[2].to_string());
                }
                m.1 = f[2].to_string();
                continue;
            }
            let k = known.entry(f[1].to_string()).or_insert((None, 'c'));
            if op.is_ascii_uppercase() {
                k.0 = Some(op);
            }
            k.1 = op.to_ascii_uppercase();
        }
        let engine = Engine::open(config(dir.path())).expect("the instance opens");
        let names: Vec<String> = known.keys().cloned().collect();
        for name in &names {
            let (acked, begun) = known[name];
            let exists = engine.exists(name);
            match (acked, begun) {
                (Some(a), b) if a == b => assert_eq!(exists, a == 'C', "round {round}: {name} after {a}"),
                (acked, begun) => {
                    // Its last operation was cut off: either outcome, but whole.
                    let before = acked == Some('C');
                    let after = begun == 'C';
                    assert!(exists == before || exists == after, "round {round}: {name} {acked:?} → {begun}");
                    cut_off.push(name.clone());
                    let settled = if exists {
                        'C'
                    } else if begun == 'C' {
                        'D'
                    } else {
                        begun
                    };
                    known.insert(name.clone(), (Some(settled), settled));
                }
            }
            if engine.exists(name) {
                let db = engine.database(name).unwrap_or_else(|e| panic!("round {round}: {name} opens: {e}"));
                db.check().unwrap();
            }
        }
        for (name, (acked, begun)) in &mut models {
            if !engine.exists(name) {
                continue;
            }
            let (_, _, options) = engine.database_info(name).unwrap();
            let model = options.recovery_model.name().to_string();
            assert!(
                Some(&model) == acked.as_ref() || model == *begun,
                "round {round}: {name} is {model}, acknowledged {acked:?}, begun {begun}"
            );
            *acked = Some(model.clone());
            *begun = model;
        }
        // Every file is a registered database's or a detached one's, or the cut-off
        // operation's.
        for file in std::fs::read_dir(dir.path()).unwrap() {
            let file = file.unwrap().file_name().into_string().unwrap();
            let Some(stem) = file.strip_suffix(".mdf").or_else(|| file.strip_suffix("_log.ldf")) else { continue };
            let detached = known.get(stem).is_some_and(|s| s.0 == Some('X'));
            assert!(
                stem == "master" || engine.exists(stem) || detached || cut_off.iter().any(|n| n == stem),
                "round {round}: {file} is no database's"
            );
        }
        engine.shutdown().unwrap();
        drop(engine);
    }
    let created = known.values().filter(|s| s.0 == Some('C')).count();
    let removed = known.values().filter(|s| matches!(s.0, Some('D' | 'X'))).count();
    eprintln!("12 kills; {} databases named, {created} exist, {removed} dropped or detached", known.len());
    assert!(created > 0 && removed > 0);
}
