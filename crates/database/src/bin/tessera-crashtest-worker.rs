//! Test harness for the crash tests in `crates/database/tests/crash.rs` (not a user
//! command): runs concurrent transactions on `<dir>` until it is killed, printing
//! `C <thread> <seq>` after each commit returns.
//!
//! Transaction `seq` of thread `t`, on table `t` of database `crash`:
//! inserts `m/t/seq` (value: row count n) and `d/t/seq/i` for i < n, sets `c/t` to seq,
//! and deletes the rows of `seq - 5`. So after any crash, with `v = c/t`, exactly the
//! row groups `v-4 ..= v` of thread t exist, each complete. Every seventh transaction
//! does the same work and rolls back: none of it may survive.

use std::io::Write;
use std::sync::Arc;

use tessera_database::{Engine, EngineConfig};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: worker DIR THREADS SEED");
    let threads: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(4);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut config = EngineConfig::new(&dir);
    config.pool_bytes = 2 << 20;
    config.checkpoint_log_bytes = 256 << 10;
    let engine = Engine::open(config).expect("engine opens (recovery)");
    let db = engine.database("crash").expect("database exists");
    let table = db.table("t").expect("table exists");
    let stdout = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            let stdout = stdout.clone();
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
                        Err(e) => panic!("worker {t}: {e}"),
                        Ok(()) if abort => tx.rollback().unwrap(),
                        Ok(()) => {
                            tx.commit().unwrap();
                            seq = k;
                            let mut out = stdout.lock().unwrap();
                            writeln!(out, "C {t} {k}").unwrap();
                            out.flush().unwrap();
                        }
                    }
                    if t == 0 && attempt.is_multiple_of(40) {
                        db.checkpoint().unwrap();
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}
