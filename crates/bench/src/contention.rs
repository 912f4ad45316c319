//! `tessera bench contention`: writers on the same rows, next to PostgreSQL running the same
//! transactions in the same run, both checked for exact results afterwards.
//!
//! Workloads (each with 1, 4 and 16 connections, each connection in autocommit mode or one
//! explicit transaction per unit of work, as written):
//! - **counter**: one hot row, `UPDATE counter SET v = v + 1 WHERE id = 1`; afterwards `v`
//!   must equal the number of acknowledged updates.
//! - **bank N** (N = 10 and 10,000 accounts of 1,000): a transfer of 1..50 from account `a`
//!   to another account `b`, both random, as one transaction of two UPDATEs that touch the
//!   lower id first (so neither side deadlocks); afterwards the total must be exactly
//!   N × 1,000.
//!
//! tessera runs in process (`RunningServer`) and is driven by tiberius clients on a
//! 2-thread runtime, each sending the unit of work as one batch
//! (`BEGIN TRAN; UPDATE …; UPDATE …; COMMIT`); PostgreSQL is driven by `pgbench -M simple`
//! whose script sends the same four commands in one message (`\;`). Both draw the random
//! values on the client, both commit durably (fdatasync per commit; PostgreSQL with
//! `synchronous_commit=on`).

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use serde::Serialize;

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::peers::postgres::{pgbench, psql, start_postgres, Sides};
use crate::pointselect::{batch, connect, Conn, Outcome, PASSWORD};
use crate::report::{fmt_value, Report, ResultRow};

pub const NAME: &str = "contention";

/// tessera's throughput must be at least this multiple of PostgreSQL's on every row.
pub const GOAL_THROUGHPUT_VS_POSTGRES: f64 = 1.0;

/// Starting balance of every account.
const BALANCE: i64 = 1000;

#[derive(Debug, Clone, Serialize)]
pub struct ContentionParams {
    /// Timed seconds per (workload, connection count, side).
    pub seconds: u64,
    pub connections: Vec<usize>,
    /// Account counts of the bank workloads.
    pub accounts: Vec<u64>,
}

impl ContentionParams {
    pub fn full() -> ContentionParams {
        ContentionParams { seconds: 15, connections: vec![1, 4, 16], accounts: vec![10, 10_000] }
    }

    pub fn quick() -> ContentionParams {
        ContentionParams { seconds: 2, connections: vec![1, 4, 16], accounts: vec![10, 10_000] }
    }
}

/// One workload.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Workload {
    Counter,
    Bank(u64),
}

impl Workload {
    fn label(self) -> String {
        match self {
            Workload::Counter => "counter (1 hot row)".to_string(),
            Workload::Bank(n) => format!("bank, {n} accounts"),
        }
    }

    /// The table and its rows, in T-SQL (tessera) and in PostgreSQL's dialect.
    fn setup(self) -> (String, String) {
        match self {
            Workload::Counter => (
                "create table counter (id int primary key, v bigint not null); insert into counter values (1, 0)".into(),
                "CREATE TABLE counter (id int PRIMARY KEY, v bigint NOT NULL); INSERT INTO counter VALUES (1, 0)".into(),
            ),
            Workload::Bank(n) => (
                format!(
                    "create table acct (id int primary key, bal bigint not null);
                     set nocount on; declare @i int = 1;
                     begin tran; while @i <= {n} begin insert into acct values (@i, {BALANCE}); set @i += 1; end; commit"
                ),
                format!(
                    "CREATE TABLE acct (id int PRIMARY KEY, bal bigint NOT NULL);
                     INSERT INTO acct SELECT g, {BALANCE} FROM generate_series(1, {n}) g"
                ),
            ),
        }
    }

    /// The pgbench script of one unit of work.
    fn pgbench_script(self) -> String {
        match self {
            Workload::Counter => "UPDATE counter SET v = v + 1 WHERE id = 1;\n".to_string(),
            Workload::Bank(n) => format!(
                "\\set a random(1, {n})\n\\set d random(1, {})\n\\set b 1 + (:a + :d - 1) % {n}\n\\set x random(1, 50)\n\
                 \\set lo least(:a, :b)\n\\set hi greatest(:a, :b)\n\\set dlo case when :lo = :a then 0 - :x else :x end\n\\set dhi 0 - :dlo\n\
                 BEGIN \\; UPDATE acct SET bal = bal + :dlo WHERE id = :lo \\; UPDATE acct SET bal = bal + :dhi WHERE id = :hi \\; COMMIT;\n",
                n - 1
            ),
        }
    }

    /// What must hold afterwards: (query, expected value) — the counter equals the
    /// acknowledged updates (`done`), the bank's total is unchanged.
    fn check(self, done: u64) -> (&'static str, i64) {
        match self {
            Workload::Counter => ("SELECT v FROM counter WHERE id = 1", done as i64),
            Workload::Bank(n) => ("SELECT SUM(bal) FROM acct", n as i64 * BALANCE),
        }
    }
}

/// tessera's unit of work as one batch.
fn tessera_batch(w: Workload, rng: &mut StdRng) -> String {
    match w {
        Workload::Counter => "update counter set v = v + 1 where id = 1".to_string(),
        Workload::Bank(n) => {
            let a = rng.random_range(0..n) + 1;
            let b = (a + rng.random_range(0..n - 1)) % n + 1;
            let x = rng.random_range(0..50) as i64 + 1;
            let (lo, hi) = (a.min(b), a.max(b));
            let dlo = if lo == a { -x } else { x };
            format!(
                "begin tran; update acct set bal = bal + {dlo} where id = {lo}; update acct set bal = bal + {} where id = {hi}; commit",
                -dlo
            )
        }
    }
}

/// One measured (workload, connections) cell of one side.
#[derive(Debug, Clone, Copy)]
struct Cell {
    rate: f64,
    /// Units of work acknowledged, and the check's value afterwards vs. what it must be.
    done: u64,
    checked: (i64, i64),
}

fn scalar(rows: &[tiberius::Row]) -> Option<i64> {
    let r = rows.first()?;
    r.try_get::<i64, _>(0).ok().flatten().or_else(|| r.try_get::<i32, _>(0).ok().flatten().map(i64::from))
}

fn tessera(dir: &Path, p: &ContentionParams, workloads: &[Workload], progress: &dyn Fn(&str)) -> Result<Vec<Cell>> {
    let config = tessera_server::Config {
        port: 0,
        data_dir: dir.to_path_buf(),
        sa_password: Some(PASSWORD.to_string()),
        memory_mb: 256,
        errorlog: false,
        log_stderr: false,
        ..tessera_server::Config::default()
    };
    let server = tessera_server::RunningServer::start(config).map_err(BenchError::new)?;
    let port = server.addr.port();
    let clients = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let result = clients.block_on(async {
        let mut admin = connect(port).await?;
        let mut cells = Vec::new();
        for (i, &w) in workloads.iter().enumerate() {
            for &n in &p.connections {
                let db = format!("contention_{i}_{n}");
                batch(&mut admin, &format!("create database [{db}]"), "create database").await?;
                batch(&mut admin, &format!("use [{db}]; {}", w.setup().0), "setup").await?;
                progress(&format!("tessera: {}, {n} connection(s) for {} s", w.label(), p.seconds));
                let done = Arc::new(AtomicU64::new(0));
                let mut conns: Vec<Conn> = Vec::with_capacity(n);
                for _ in 0..n {
                    let mut c = connect(port).await?;
                    batch(&mut c, &format!("use [{db}]"), "use").await?;
                    conns.push(c);
                }
                let start = Instant::now();
                let deadline = start + Duration::from_secs(p.seconds);
                let tasks: Vec<_> = conns
                    .into_iter()
                    .enumerate()
                    .map(|(k, mut c)| {
                        let done = done.clone();
                        tokio::spawn(async move {
                            let mut rng = StdRng::seed_from_u64(0x9E37_79B9_7F4A_7C15 ^ ((k as u64 + 1) << 17));
                            while Instant::now() < deadline {
                                batch(&mut c, &tessera_batch(w, &mut rng), "unit of work").await?;
                                done.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok::<(), BenchError>(())
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.map_err(|e| BenchError::new(e.to_string()))??;
                }
                let seconds = start.elapsed().as_secs_f64();
                let done = done.load(Ordering::Relaxed);
                let (query, expected) = w.check(done);
                let rows = admin
                    .simple_query(format!("use [{db}]; {query}"))
                    .await
                    .map_err(|e| BenchError::new(e.to_string()))?
                    .into_first_result()
                    .await
                    .map_err(|e| BenchError::new(e.to_string()))?;
                let got = scalar(&rows).ok_or_else(|| BenchError::new("the check returned no value"))?;
                cells.push(Cell { rate: done as f64 / seconds, done, checked: (got, expected) });
                batch(&mut admin, &format!("use master; drop database [{db}]"), "drop database").await?;
            }
        }
        Ok(cells)
    });
    drop(clients);
    server.stop().map_err(BenchError::new)?;
    result
}

fn postgres_side(
    dir: &Path,
    p: &ContentionParams,
    workloads: &[Workload],
    progress: &dyn Fn(&str),
) -> Result<Vec<Cell>> {
    let server = start_postgres(dir, 128)?;
    let mut cells = Vec::new();
    for &w in workloads {
        for &n in &p.connections {
            let table = if w == Workload::Counter { "counter" } else { "acct" };
            psql(server.port, &format!("DROP TABLE IF EXISTS {table}; {}", w.setup().1))?;
            psql(server.port, &format!("VACUUM ANALYZE {table}"))?;
            let script = dir.join("contention.sql");
            fs::write(&script, w.pgbench_script())?;
            progress(&format!("postgresql: {}, pgbench {n} connection(s) for {} s", w.label(), p.seconds));
            let (run, _) = pgbench(&server, &script, n, p.seconds)?;
            let (query, expected) = w.check(run.transactions);
            let out = psql(server.port, query)?;
            let got = out
                .lines()
                .filter_map(|l| l.trim().parse::<i64>().ok())
                .next()
                .ok_or_else(|| BenchError::new(format!("no value in psql's output: {out}")))?;
            cells.push(Cell { rate: run.tps, done: run.transactions, checked: (got, expected) });
        }
    }
    Ok(cells)
}

/// Runs both sides in fresh subdirectories of `dir` (removed afterwards).
pub fn run(dir: &Path, params: &ContentionParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    let workloads: Vec<Workload> =
        std::iter::once(Workload::Counter).chain(params.accounts.iter().map(|&n| Workload::Bank(n))).collect();
    let sides = Sides::run(
        dir,
        |d| tessera(d, params, &workloads, progress),
        |d| postgres_side(d, params, &workloads, progress),
    )?;
    failures.extend(sides.failures());
    if let (Ok(o), Ok(pg)) = (&sides.ours, &sides.peer) {
        let cells = workloads.iter().flat_map(|w| params.connections.iter().map(move |&n| (*w, n)));
        for (((w, n), t), q) in cells.zip(o).zip(pg) {
            report.push(ResultRow::rate(
                format!("{}, {n} connection(s): throughput", w.label()),
                "transactions/s",
                t.rate,
                "postgresql",
                q.rate,
                GOAL_THROUGHPUT_VS_POSTGRES,
            ));
            for (who, c) in [("tessera", t), ("postgresql", q)] {
                if c.checked.0 != c.checked.1 {
                    failures.push(format!(
                        "{who}, {}, {n} connection(s): {} after {} transactions, {} expected",
                        w.label(),
                        c.checked.0,
                        c.done,
                        c.checked.1
                    ));
                }
            }
            report.note(format!(
                    "{}, {n} connection(s): tessera {} tx/s ({} transactions, check {} = {}), postgresql {} tx/s ({} transactions, check {} = {})",
                    w.label(),
                    fmt_value(t.rate),
                    t.done,
                    t.checked.0,
                    t.checked.1,
                    fmt_value(q.rate),
                    q.done,
                    q.checked.0,
                    q.checked.1
                ));
        }
    }
    report.note("throughput ratio = tessera's ÷ PostgreSQL's (goal ≥ 1.0 on every row); both sides must end exact (counter = acknowledged updates, bank total unchanged)");
    report.note(
        "tessera: RunningServer in process, tiberius clients on a 2-thread runtime, one batch per unit of work; postgresql: initdb'd by the benchmark, synchronous_commit=on, pgbench -M simple with the unit of work in one message; both on the same 2 cores as their clients",
    );
    for f in &failures {
        report.note(format!("failed: {f}"));
    }
    Ok(Outcome { report, failures })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bank_transfers_move_money_between_two_accounts_lower_id_first() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..1000 {
            let text = tessera_batch(Workload::Bank(10), &mut rng);
            let ids: Vec<u64> =
                text.split("where id = ").skip(1).map(|s| s.split(';').next().unwrap().parse().unwrap()).collect();
            assert_eq!(ids.len(), 2);
            assert!(ids[0] < ids[1] && ids[1] <= 10 && ids[0] >= 1, "{text}");
            let amounts: Vec<i64> =
                text.split("bal = bal + ").skip(1).map(|s| s.split(' ').next().unwrap().parse().unwrap()).collect();
            assert_eq!(amounts[0], -amounts[1]);
        }
        assert!(Workload::Bank(10).pgbench_script().contains("\\; COMMIT;"));
    }
}
