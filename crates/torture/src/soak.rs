//! The soak: a real `tessera serve` killed with SIGKILL every few seconds while clients
//! move money over TDS (tiberius), then started again on the same directory. After every
//! restart a fresh connection checks the bank: the balances add up to what the accounts
//! were opened with, and every transfer a client saw committed is in the ledger.
//!
//! Each transfer is one transaction: two balance updates and a ledger row whose id the
//! client chose. A client whose COMMIT got no answer (the server died under it) counts
//! the transfer in doubt: it may or may not be there, but never half of it.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tessera_io::faults::Rng;
use tiberius::{AuthMethod, Client, Config, EncryptionLevel};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use crate::server::{Server, PASSWORD};

const ACCOUNTS: i64 = 100;
const BALANCE: i64 = 1000;

/// What a soak did.
#[derive(Debug, Default)]
pub struct SoakReport {
    pub seconds: f64,
    pub kills: u32,
    /// Transfers the clients saw committed, and those whose commit got no answer.
    pub acknowledged: u64,
    pub in_doubt: u64,
    /// Checks after restarts, all of which held (a failed one ends the soak with an error).
    pub checks: u32,
}

type Conn = Client<Compat<TcpStream>>;

async fn connect(port: u16) -> Result<Conn, String> {
    let mut config = Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server("sa", PASSWORD));
    config.encryption(EncryptionLevel::NotSupported);
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| e.to_string())?;
    Client::connect(config, tcp.compat_write()).await.map_err(|e| e.to_string())
}

async fn run(c: &mut Conn, sql: &str) -> Result<Vec<Vec<i64>>, String> {
    let results =
        c.simple_query(sql).await.map_err(|e| e.to_string())?.into_results().await.map_err(|e| e.to_string())?;
    Ok(results
        .iter()
        .flatten()
        .map(|row| (0..row.len()).map(|i| row.get::<i64, _>(i).unwrap_or_default()).collect())
        .collect())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// What the clients share with the killer.
struct Shared {
    port: AtomicU16,
    stop: AtomicBool,
    acknowledged: Mutex<HashSet<i64>>,
    in_doubt: AtomicU64,
}

/// One client: transfers until told to stop, reconnecting whenever the server is gone.
fn client(shared: &Shared, number: i64, seed: u64) {
    let rt = runtime();
    let mut rng = Rng::new(seed ^ number as u64);
    let mut seq = 0i64;
    while !shared.stop.load(Ordering::Acquire) {
        let Ok(mut c) = rt.block_on(connect(shared.port.load(Ordering::Acquire))) else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        while !shared.stop.load(Ordering::Acquire) {
            seq += 1;
            let id = number * 1_000_000_000 + seq;
            let (a, b) = (rng.below(ACCOUNTS as u64), rng.below(ACCOUNTS as u64));
            let amount = 1 + rng.below(20);
            let sql = format!(
                "SET XACT_ABORT ON; BEGIN TRANSACTION; \
                 UPDATE bank.dbo.acct SET bal = bal - {amount} WHERE id = {a}; \
                 UPDATE bank.dbo.acct SET bal = bal + {amount} WHERE id = {b}; \
                 INSERT bank.dbo.ledger (id, amount) VALUES ({id}, {amount}); COMMIT"
            );
            match rt.block_on(run(&mut c, &sql)) {
                Ok(_) => {
                    shared.acknowledged.lock().expect("not poisoned").insert(id);
                }
                Err(_) => {
                    shared.in_doubt.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
}

/// Checks the bank on a fresh connection to `port`: every id of `acknowledged` is in the
/// ledger, and the balances add up.
fn check(port: u16, acknowledged: &HashSet<i64>) -> Result<(), String> {
    let rt = runtime();
    rt.block_on(async {
        let mut c = connect(port).await.map_err(|e| format!("no login after the restart: {e}"))?;
        // The clients are back already: a READ COMMITTED scan could read one account
        // before a transfer and the other after it. A shared table lock held to the end
        // makes the sum one moment's (the transfers wait for it).
        let total = run(
            &mut c,
            "SELECT CAST(SUM(bal) AS bigint), CAST(COUNT(*) AS bigint) FROM bank.dbo.acct WITH (TABLOCK, HOLDLOCK)",
        )
        .await?;
        if total[0] != [ACCOUNTS * BALANCE, ACCOUNTS] {
            return Err(format!("the balances add up to {:?}, not {}", total[0], ACCOUNTS * BALANCE));
        }
        let ids: HashSet<i64> =
            run(&mut c, "SELECT id FROM bank.dbo.ledger").await?.into_iter().map(|r| r[0]).collect();
        let missing: Vec<&i64> = acknowledged.iter().filter(|id| !ids.contains(id)).take(5).collect();
        if !missing.is_empty() {
            return Err(format!("acknowledged transfers missing after the restart: {missing:?}"));
        }
        Ok(())
    })
}

/// Runs the soak for `seconds` with `clients` clients on `binary` (the `tessera`
/// server), killing it every 1 to 3 s (from `seed`), under `dir`.
pub fn soak(binary: &Path, dir: &Path, seconds: u64, clients: usize, seed: u64) -> Result<SoakReport, String> {
    let data = dir.join("soak");
    let _ = std::fs::remove_dir_all(&data);
    let mut server = Server::start(binary, &data, &[])?;
    runtime().block_on(async {
        let mut c = connect(server.port).await?;
        let accounts: Vec<String> = (0..ACCOUNTS).map(|i| format!("({i}, {BALANCE})")).collect();
        run(
            &mut c,
            &format!(
                "CREATE DATABASE bank; ALTER DATABASE bank SET RECOVERY FULL; \
                 CREATE TABLE bank.dbo.acct (id int PRIMARY KEY, bal int NOT NULL); \
                 CREATE TABLE bank.dbo.ledger (id bigint PRIMARY KEY, amount int NOT NULL); \
                 INSERT INTO bank.dbo.acct (id, bal) VALUES {}",
                accounts.join(", ")
            ),
        )
        .await
        .map(drop)
    })?;
    let shared = Arc::new(Shared {
        port: AtomicU16::new(server.port),
        stop: AtomicBool::new(false),
        acknowledged: Mutex::new(HashSet::new()),
        in_doubt: AtomicU64::new(0),
    });
    let threads: Vec<_> = (0..clients as i64)
        .map(|n| {
            let shared = shared.clone();
            std::thread::spawn(move || client(&shared, n + 1, seed))
        })
        .collect();
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let mut report = SoakReport::default();
    let mut result = Ok(());
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_millis(1000 + rng.below(2000)));
        server.kill();
        report.kills += 1;
        // Everything acknowledged so far was acknowledged before the kill.
        let acknowledged = shared.acknowledged.lock().expect("not poisoned").clone();
        server = match Server::start(binary, &data, &[]) {
            Ok(s) => s,
            Err(e) => {
                result = Err(format!("after kill {}: {e}", report.kills));
                break;
            }
        };
        shared.port.store(server.port, Ordering::Release);
        if let Err(e) = check(server.port, &acknowledged) {
            result = Err(format!("after kill {}: {e}", report.kills));
            break;
        }
        report.checks += 1;
    }
    shared.stop.store(true, Ordering::Release);
    for t in threads {
        let _ = t.join();
    }
    server.kill();
    report.seconds = started.elapsed().as_secs_f64();
    report.acknowledged = shared.acknowledged.lock().expect("not poisoned").len() as u64;
    report.in_doubt = shared.in_doubt.load(Ordering::Relaxed);
    result.map(|()| report)
}
