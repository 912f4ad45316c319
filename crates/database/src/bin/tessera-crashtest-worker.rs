//! Test harness for the crash tests in `crates/database/tests/crash.rs` (not a user
//! command): runs concurrent transactions on `<dir>` until it is killed, printing
//! `C <thread> <seq>` after each commit returns.
//!
//! Transaction `seq` of thread `t`, on table `t` of database `crash`:
//! inserts `m/t/seq` (value: row count n) and `d/t/seq/i` for i < n, sets `c/t` to seq,
//! and deletes the rows of `seq - 5`. So after any crash, with `v = c/t`, exactly the
//! row groups `v-4 ..= v` of thread t exist, each complete. Every seventh transaction
//! does the same work and rolls back: none of it may survive.
//!
//! One more thread bulk-loads (minimally logged: the database is BULK_LOGGED): load `k`
//! creates table `b<k>` and, in one transaction, bulk-loads rows `i = 0..n` (key
//! `{i:08}`, value `bulk_value(k, i)`) and sets row `bulk` of table `t` to `k, n`; it
//! prints `B <k>` after the commit returns and then drops `b<k-3>`. Every fifth load
//! rolls back. So after any crash, with `k = bulk`, table `b<k>` holds exactly its `n`
//! rows, tables of later loads are empty, and every other table is complete.
//!
//! With `databases` as its second argument, the worker instead creates, alters,
//! detaches and drops databases one after another in `<dir>`'s instance, printing
//! `c|a|x|d <name>` before each starts and `C|A|X|D <name>` when it returns (an ALTER also
//! prints the recovery model it sets): after any crash, every database whose CREATE
//! returned exists unless its DROP or detach began, none whose DROP or detach returned
//! does, an ALTER that returned holds unless a later one began, and every file in the
//! directory is a database's, a detached one's, or the one operation's in flight.
//!
//! With a fourth argument `full-ok` the database's files have maximum sizes the work
//! reaches: a statement that fails with 9002 or 1105 has its transaction rolled back
//! (which must succeed), the worker prints `F <error number>` and goes on.

use std::io::Write;
use std::sync::Arc;

use tessera_database::{Database, Engine, EngineConfig, Error, Result};

/// How the workers take an error: a full log or data file is expected with `full-ok`
/// (printed as `F <number>`), anything else is a failure of the test.
#[derive(Clone)]
struct Out {
    stdout: Arc<std::sync::Mutex<std::io::Stdout>>,
    full_ok: bool,
}

impl Out {
    fn line(&self, text: &str) {
        let mut out = self.stdout.lock().unwrap();
        writeln!(out, "{text}").unwrap();
        out.flush().unwrap();
    }

    fn expected(&self, who: &str, e: Error) {
        if self.full_ok && matches!(e.number(), 9002 | 1105) {
            self.line(&format!("F {}", e.number()));
            // As a client would, wait a little before trying again.
            std::thread::sleep(std::time::Duration::from_millis(1));
        } else {
            panic!("{who}: {e}");
        }
    }
}

/// The value of row `i` of bulk load `k` (`tests/crash.rs` checks it).
fn bulk_value(k: u64, i: u64) -> Vec<u8> {
    vec![(k % 251) as u8; 40 + (i * 7 % 300) as usize]
}

/// One bulk load (see the module documentation): whether it committed.
fn bulk_load(db: &Arc<Database>, k: u64, n: u64, roll_back: bool) -> Result<bool> {
    let t = db.table("t").expect("table exists");
    let name = format!("b{k}");
    let table = match db.table(&name) {
        Some(table) => table,
        None => db.create_table(&name)?,
    };
    let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..n).map(|i| (format!("{i:08}").into_bytes(), bulk_value(k, i))).collect();
    let mut tx = db.begin();
    let work = (|| -> Result<()> {
        let loaded = tx.bulk_load(table, rows.iter().map(|(k, v)| (&k[..], &v[..])))?;
        assert_eq!(loaded.map(|o| o.rows), Some(n), "table {name} is empty and the database BULK_LOGGED");
        let mut value = k.to_le_bytes().to_vec();
        value.extend_from_slice(&n.to_le_bytes());
        if !tx.update(t, b"bulk", &value)? {
            tx.insert(t, b"bulk", &value)?;
        }
        Ok(())
    })();
    if let Err(e) = work {
        tx.rollback().expect("a failed load rolls back");
        return Err(e);
    }
    if roll_back {
        tx.rollback().unwrap();
        return Ok(false);
    }
    tx.commit()?;
    Ok(true)
}

/// The bulk-loading thread (see the module documentation).
fn bulk_loads(db: Arc<Database>, seed: u64, out: Out) {
    let t = db.table("t").expect("table exists");
    let counter = b"bulk".to_vec();
    let mut seq = {
        let tx = db.begin();
        let v = tx.get(t, &counter).unwrap();
        tx.commit().unwrap();
        v.map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()))
    };
    let mut rng = seed | 1;
    for attempt in 1u64.. {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let k = seq + 1;
        match bulk_load(&db, k, 50 + rng % 1500, attempt.is_multiple_of(5)) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(e) => {
                out.expected("bulk loader", e);
                continue;
            }
        }
        seq = k;
        out.line(&format!("B {k}"));
        if k > 3 && db.table(&format!("b{}", k - 3)).is_some() {
            if let Err(e) = db.drop_table(&format!("b{}", k - 3)) {
                out.expected("bulk loader's drop", e);
            }
        }
    }
}

/// The `databases` workload (see the module documentation): CREATE, ALTER, detach and
/// DROP DATABASE one after another, each announced before it starts and reported when it
/// returns.
fn databases(dir: &str, seed: u64) {
    use tessera_database::{DatabaseOptions, RecoveryModel};
    let engine = Engine::open(EngineConfig::new(dir)).expect("engine opens (recovery)");
    let out = Out { stdout: Arc::new(std::sync::Mutex::new(std::io::stdout())), full_ok: false };
    let mut rng = seed | 1;
    let mut live: Vec<String> = Vec::new();
    for i in 0u64.. {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        match (rng % 8, live.is_empty()) {
            (0..=3, _) | (_, true) => {
                let name = format!("s{seed}_{i}");
                out.line(&format!("c {name}"));
                engine.create_database(&name, DatabaseOptions::default()).unwrap();
                out.line(&format!("C {name}"));
                live.push(name);
            }
            (4 | 5, false) => {
                let name = live.swap_remove((rng >> 8) as usize % live.len());
                out.line(&format!("d {name}"));
                engine.drop_database(&name).unwrap();
                out.line(&format!("D {name}"));
            }
            (6, false) => {
                let name = live.swap_remove((rng >> 8) as usize % live.len());
                out.line(&format!("x {name}"));
                engine.detach_database(&name).unwrap();
                out.line(&format!("X {name}"));
            }
            _ => {
                let name = &live[(rng >> 8) as usize % live.len()];
                let model = if rng & 1 == 0 { RecoveryModel::Simple } else { RecoveryModel::Full };
                out.line(&format!("a {name} {}", model.name()));
                engine.alter_database(name, DatabaseOptions { recovery_model: model, ..Default::default() }).unwrap();
                out.line(&format!("A {name} {}", model.name()));
            }
        }
    }
}

fn main() {
    // A panic in any thread ends the process, so the test sees the worker exit early
    // instead of losing one thread's work unnoticed.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort();
    }));
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: worker DIR (THREADS SEED [full-ok] | databases SEED)");
    let second = args.next();
    if second.as_deref() == Some("databases") {
        databases(&dir, args.next().and_then(|s| s.parse().ok()).unwrap_or(1));
        return;
    }
    let threads: u32 = second.and_then(|s| s.parse().ok()).unwrap_or(4);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let full_ok = args.next().as_deref() == Some("full-ok");
    let mut config = EngineConfig::new(&dir);
    config.pool_bytes = 2 << 20;
    config.checkpoint_log_bytes = 256 << 10;
    let engine = Engine::open(config).expect("engine opens (recovery)");
    let db = engine.database("crash").expect("database exists");
    let table = db.table("t").expect("table exists");
    let out = Out { stdout: Arc::new(std::sync::Mutex::new(std::io::stdout())), full_ok };
    let bulk = {
        let (db, out) = (db.clone(), out.clone());
        std::thread::spawn(move || bulk_loads(db, seed, out))
    };
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            let out = out.clone();
            std::thread::spawn(move || {
                let mut rng =
                    seed.wrapping_mul(6364136223846793005).wrapping_add(u64::from(t) * 1442695040888963407 + 1);
                let mut next = || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                let counter = format!("c/{t}").into_bytes();
                let start = {
                    let tx = db.begin();
                    let v = tx.get(table, &counter).unwrap();
                    tx.commit().unwrap();
                    v.map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()))
                };
                let mut seq = start;
                let mut attempt = 0u64;
                loop {
                    attempt += 1;
                    let abort = attempt.is_multiple_of(7);
                    let k = seq + 1;
                    let n = 1 + next() % 6;
                    let mut tx = db.begin();
                    let work = (|| -> tessera_database::Result<()> {
                        tx.insert(table, format!("m/{t}/{k:08}").as_bytes(), &n.to_le_bytes())?;
                        for i in 0..n {
                            let len = (next() % 700) as usize;
                            tx.insert(table, format!("d/{t}/{k:08}/{i}").as_bytes(), &vec![(k % 251) as u8; len])?;
                        }
                        if !tx.update(table, &counter, &k.to_le_bytes())? {
                            tx.insert(table, &counter, &k.to_le_bytes())?;
                        }
                        if k > 5 {
                            let old = k - 5;
                            let m = tx.get(table, format!("m/{t}/{old:08}").as_bytes())?.expect("old group exists");
                            let on = u64::from_le_bytes(m[..8].try_into().unwrap());
                            tx.delete(table, format!("m/{t}/{old:08}").as_bytes())?;
                            for i in 0..on {
                                tx.delete(table, format!("d/{t}/{old:08}/{i}").as_bytes())?;
                            }
                        }
                        Ok(())
                    })();
                    match work {
                        Err(e) if e.number() == 1205 => {
                            tx.rollback().unwrap();
                            continue;
                        }
                        Err(e) => {
                            tx.rollback().expect("a failed transaction rolls back");
                            out.expected(&format!("worker {t}"), e);
                        }
                        Ok(()) if abort => tx.rollback().unwrap(),
                        Ok(()) => match tx.commit() {
                            Ok(()) => {
                                seq = k;
                                out.line(&format!("C {t} {k}"));
                            }
                            Err(e) => out.expected(&format!("worker {t}'s commit"), e),
                        },
                    }
                    if t == 0 && attempt.is_multiple_of(40) {
                        if let Err(e) = db.checkpoint() {
                            out.expected("checkpoint", e);
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    bulk.join().unwrap();
}
