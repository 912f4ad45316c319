//! Crash tests: a worker process runs concurrent transactions and is killed with
//! SIGKILL at random instants; after each kill the database is recovered and checked.
//! See `src/bin/tessera-crashtest-worker.rs` for the workload and its invariant.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::ops::Bound;
use std::process::{Command, Stdio};
use std::time::Duration;

use tessera_database::{DatabaseOptions, Direction, Engine, EngineConfig};

const KILLS: usize = 50;
const THREADS: u32 = 4;

fn config(dir: &std::path::Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.pool_bytes = 8 << 20;
    c.background = false;
    c
}

/// Checks the invariant and returns each thread's counter.
fn check(dir: &std::path::Path, acked: &HashMap<u32, u64>, losers: &mut usize) -> HashMap<u32, u64> {
    let engine = Engine::open(config(dir)).expect("recovery succeeds");
    let db = engine.database("crash").unwrap();
    *losers += db.recovery().expect("opened by recovery").losers;
    db.check().expect("structure and allocation are consistent after recovery");
    let table = db.table("t").unwrap();
    let tx = db.begin();
    let rows: BTreeMap<Vec<u8>, Vec<u8>> =
        tx.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Forward).collect::<Result<_, _>>().unwrap();
    let back: Vec<Vec<u8>> =
        tx.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Backward).map(|r| r.unwrap().0).collect();
    assert!(back.iter().rev().eq(rows.keys()), "backward scan mirrors forward scan");
    tx.commit().unwrap();
    let mut counters = HashMap::new();
    let mut expected: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
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
    counters
}

#[test]
fn every_acknowledged_commit_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = Engine::open(config(dir.path())).unwrap();
        engine.create_database("crash", DatabaseOptions::default()).unwrap();
        engine.database("crash").unwrap().create_table("t").unwrap();
        engine.shutdown().unwrap();
    }
    let mut acked: HashMap<u32, u64> = HashMap::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut progress = 0u64;
    let mut losers = 0usize;
    for round in 0..KILLS {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(30 + seed % 400);
        let mut child = Command::new(env!("CARGO_BIN_EXE_tessera-crashtest-worker"))
            .arg(dir.path())
            .arg(THREADS.to_string())
            .arg(seed.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let f: Vec<&str> = line.split(' ').collect();
                if f.len() == 3 && f[0] == "C" {
                    got.push((f[1].parse::<u32>().unwrap(), f[2].parse::<u64>().unwrap()));
                }
            }
            got
        });
        std::thread::sleep(delay);
        if let Ok(Some(status)) = child.try_wait() {
            panic!("round {round}: worker exited early with {status}");
        }
        child.kill().unwrap();
        child.wait().unwrap();
        for (t, k) in reader.join().unwrap() {
            let e = acked.entry(t).or_insert(0);
            *e = (*e).max(k);
        }
        let counters = check(dir.path(), &acked, &mut losers);
        progress = counters.values().sum();
    }
    eprintln!(
        "{KILLS} kills; acknowledged commits per thread: {acked:?}; counters sum {progress}; {losers} losers undone"
    );
    assert!(progress > 0, "the workers committed something");
    assert!(losers > 0, "some kills interrupted transactions, whose changes recovery undid");
}
