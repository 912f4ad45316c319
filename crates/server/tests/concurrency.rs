//! Concurrency control over TDS: many connections (tiberius, each on its own thread) run
//! against the same rows, indexes and tables, and the tests check exact invariants — a
//! counter, a bank total, an index that agrees with its table, work claimed once, MERGE
//! upserts counted once, a trigger's summary and audit exact, changes through T-SQL
//! cursors counted once — plus
//! lock timeouts (1222), NOLOCK, UPDLOCK/HOLDLOCK/XLOCK/READPAST/TABLOCK and deadlock
//! victims (1205).
//!
//! Each scenario runs for a short while in the default suite; `TESSERA_CAMPAIGN=<seconds>`
//! runs every timed scenario that long instead (the longer campaign whose figures
//! docs/benchmarks.md records).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{TestServer, PASSWORD};
use tiberius::{AuthMethod, Client, Config, EncryptionLevel};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

/// One blocking connection: its own current-thread runtime and client.
struct Conn {
    rt: tokio::runtime::Runtime,
    client: Client<Compat<TcpStream>>,
}

/// A server error: number and message.
type SqlErr = (u32, String);

impl Conn {
    fn open(port: u16) -> Conn {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let client = rt.block_on(async {
            let mut config = Config::new();
            config.host("127.0.0.1");
            config.port(port);
            config.authentication(AuthMethod::sql_server("sa", PASSWORD));
            config.encryption(EncryptionLevel::NotSupported);
            let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            tcp.set_nodelay(true).unwrap();
            Client::connect(config, tcp.compat_write()).await.expect("login")
        });
        Conn { rt, client }
    }

    /// Runs a batch and returns the rows of every result set as i64 columns (NULL: i64::MIN).
    fn try_query(&mut self, sql: &str) -> Result<Vec<Vec<i64>>, SqlErr> {
        let client = &mut self.client;
        self.rt.block_on(async {
            let results = match client.simple_query(sql).await {
                Ok(stream) => stream.into_results().await,
                Err(e) => Err(e),
            };
            match results {
                Ok(sets) => Ok(sets
                    .into_iter()
                    .flatten()
                    .map(|row| {
                        (0..row.len())
                            .map(|i| {
                                row.try_get::<i32, _>(i)
                                    .map(|v| v.map(i64::from))
                                    .or_else(|_| row.try_get::<i64, _>(i))
                                    .ok()
                                    .flatten()
                                    .unwrap_or(i64::MIN)
                            })
                            .collect()
                    })
                    .collect()),
                Err(tiberius::error::Error::Server(t)) => Err((t.code(), t.message().to_string())),
                // The connection ended (the server shut down): no server error number.
                Err(other) => Err((0, other.to_string())),
            }
        })
    }

    fn exec(&mut self, sql: &str) {
        if let Err(e) = self.try_query(sql) {
            panic!("{sql}: {e:?}");
        }
    }

    fn scalar(&mut self, sql: &str) -> i64 {
        let rows = self.try_query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        rows.first().and_then(|r| r.first()).copied().unwrap_or_else(|| panic!("{sql}: no row"))
    }

    fn column(&mut self, sql: &str) -> Vec<i64> {
        let rows = self.try_query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        rows.into_iter().map(|r| r[0]).collect()
    }
}

/// How long a timed scenario runs.
fn run_for(default: Duration) -> Duration {
    std::env::var("TESSERA_CAMPAIGN").ok().and_then(|s| s.parse().ok()).map_or(default, Duration::from_secs)
}

/// Runs `workers` threads, each with its own connection, until each returns.
fn in_parallel<T: Send + 'static>(
    port: u16,
    workers: usize,
    work: impl Fn(usize, &mut Conn) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let work = Arc::new(work);
    let start = Arc::new(Barrier::new(workers));
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let (work, start) = (work.clone(), start.clone());
            std::thread::spawn(move || {
                let mut c = Conn::open(port);
                c.exec("USE conc");
                start.wait();
                work(w, &mut c)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("worker panicked")).collect()
}

fn setup(server: &TestServer, script: &str) -> Conn {
    let mut c = Conn::open(server.port());
    c.exec("CREATE DATABASE conc");
    c.exec("USE conc");
    c.exec(script);
    c
}

#[test]
fn counter_increments_are_never_lost() {
    let server = TestServer::start();
    let mut c =
        setup(&server, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL); INSERT INTO t VALUES (1, 0), (2, 0)");
    let (workers, each) = (4, 300);
    in_parallel(server.port(), workers, move |w, c| {
        for i in 0..each {
            match (w + i) % 5 {
                0 => c.exec("UPDATE t SET v = v + 1 WHERE id = 1"),
                1 => c.exec("UPDATE t SET v += 1 WHERE id = 1"),
                // Through a scan with a residual predicate, and in an explicit transaction.
                2 => c.exec("BEGIN TRAN; UPDATE t SET v = v + 1 WHERE id + 0 = 1; COMMIT"),
                // UPDATE … FROM a join, the target found through the join.
                3 => c.exec("UPDATE t SET v = t.v + 1 FROM t INNER JOIN (SELECT 1 AS id) AS s ON s.id = t.id"),
                // With OUTPUT, and a variable assigned from the row.
                _ => c.exec("DECLARE @v int; UPDATE t SET @v = v = v + 1 OUTPUT inserted.v WHERE id = 1"),
            }
        }
    });
    assert_eq!(c.scalar("SELECT v FROM t WHERE id = 1"), (workers * each) as i64);
    assert_eq!(c.scalar("SELECT v FROM t WHERE id = 2"), 0);
}

#[test]
fn bank_total_holds_under_transfers() {
    let server = TestServer::start();
    let mut c = setup(
        &server,
        "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL);
         DECLARE @i int = 0; WHILE @i < 10 BEGIN INSERT INTO acct VALUES (@i, 1000); SET @i += 1; END",
    );
    let stop = Arc::new(AtomicBool::new(false));
    let deadlocks = Arc::new(AtomicU64::new(0));
    let transfers = Arc::new(AtomicU64::new(0));
    let duration = run_for(Duration::from_secs(3));
    // A reader that locks the table sees the exact total while only transactional
    // transfers run (the first half); then pairs of autocommit updates join in.
    let reader = {
        let (stop, port) = (stop.clone(), server.port());
        std::thread::spawn(move || {
            let mut c = Conn::open(port);
            c.exec("USE conc");
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                let hint = if reads % 2 == 0 { "TABLOCK" } else { "HOLDLOCK" };
                let sql = format!("BEGIN TRAN; SELECT SUM(bal) FROM acct WITH ({hint}); COMMIT");
                match c.try_query(&sql) {
                    Ok(rows) => assert_eq!(rows[0][0], 10_000, "a locking reader saw a partial transfer"),
                    Err((1205, _)) => {}
                    Err(e) => panic!("{sql}: {e:?}"),
                }
                reads += 1;
            }
            reads
        })
    };
    let transfer = {
        let (deadlocks, transfers) = (deadlocks.clone(), transfers.clone());
        move |w: usize, c: &mut Conn, pairs: bool| {
            let mut rng = StdRng::seed_from_u64(0x9E37_79B9 + w as u64 + u64::from(pairs) * 1000);
            let started = Instant::now();
            while started.elapsed() < duration / 2 {
                let (a, x) = (rng.random_range(0..10), rng.random_range(0..50) + 1);
                let b = (a + 1 + rng.random_range(0..9)) % 10;
                let sql = match rng.random_range(0..3) {
                    0 => format!("BEGIN TRAN; UPDATE acct SET bal = bal - {x} WHERE id = {a}; UPDATE acct SET bal = bal + {x} WHERE id = {b}; COMMIT"),
                    1 => format!("SET XACT_ABORT ON; BEGIN TRAN; DECLARE @x int = {x}; UPDATE acct SET bal -= @x WHERE id = {a}; UPDATE acct SET bal += @x WHERE id = {b}; COMMIT"),
                    // Both rows in one statement.
                    _ => format!("UPDATE acct SET bal = bal + CASE WHEN id = {a} THEN -{x} ELSE {x} END WHERE id IN ({a}, {b})"),
                };
                match c.try_query(&sql) {
                    Ok(_) => {
                        transfers.fetch_add(1, Ordering::Relaxed);
                    }
                    // The victim's transaction is rolled back whole; it simply goes on.
                    Err((1205, _)) => {
                        deadlocks.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => panic!("{sql}: {e:?}"),
                }
                if pairs {
                    // Two autocommit statements: the total is off between them, exact after.
                    let (p, q) = (rng.random_range(0..10), rng.random_range(0..10));
                    c.exec(&format!("UPDATE acct SET bal = bal - 7 WHERE id = {p}"));
                    c.exec(&format!("UPDATE acct SET bal = bal + 7 WHERE id = {q}"));
                }
            }
        }
    };
    let first = transfer.clone();
    in_parallel(server.port(), 4, move |w, c| first(w, c, false));
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert_eq!(c.scalar("SELECT SUM(bal) FROM acct"), 10_000);
    in_parallel(server.port(), 4, move |w, c| transfer(w, c, true));
    assert_eq!(c.scalar("SELECT SUM(bal) FROM acct"), 10_000);
    assert_eq!(c.scalar("SELECT COUNT(*) FROM acct"), 10);
    assert!(transfers.load(Ordering::Relaxed) > 0 && reads > 0);
    eprintln!(
        "bank: {} transfers, {} deadlock victims, {reads} locking reads",
        transfers.load(Ordering::Relaxed),
        deadlocks.load(Ordering::Relaxed)
    );
}

/// Transfers between accounts while snapshot readers run (READ COMMITTED SNAPSHOT
/// statements and SNAPSHOT transactions reading twice): every read sees the exact total,
/// never waits for a writer, and a SNAPSHOT transaction reads the same total twice. SNAPSHOT
/// writers join the transfers; their update conflicts (3960) roll them back whole. After
/// all of it the total is exact, the index agrees with the table, and no version is left.
#[test]
fn snapshot_readers_see_exact_bank_totals() {
    let server = TestServer::start();
    let mut c = setup(
        &server,
        "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, INDEX by_bal (bal));
         DECLARE @i int = 0; WHILE @i < 20 BEGIN INSERT INTO acct VALUES (@i, 1000); SET @i += 1; END",
    );
    c.exec("ALTER DATABASE conc SET ALLOW_SNAPSHOT_ISOLATION ON; ALTER DATABASE conc SET READ_COMMITTED_SNAPSHOT ON");
    let stop = Arc::new(AtomicBool::new(false));
    let (transfers, conflicts) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let duration = run_for(Duration::from_secs(3));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (stop, port) = (stop.clone(), server.port());
            std::thread::spawn(move || {
                let mut c = Conn::open(port);
                c.exec("USE conc");
                // A lock timeout of zero: a reader that waited for a writer would fail.
                c.exec("SET LOCK_TIMEOUT 0");
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if r == 0 {
                        let sql = "SELECT SUM(bal), COUNT(*) FROM acct; SELECT SUM(bal) FROM acct WITH (INDEX(by_bal))";
                        let rows = c.try_query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
                        assert_eq!(
                            (rows[0][0], rows[0][1], rows[1][0]),
                            (20_000, 20, 20_000),
                            "an RCSI reader saw a partial transfer"
                        );
                    } else {
                        let sql = "SET TRANSACTION ISOLATION LEVEL SNAPSHOT; BEGIN TRAN; SELECT SUM(bal) FROM acct; \
                             SELECT SUM(bal) FROM acct WHERE id >= 0; SELECT bal FROM acct WHERE id = 3; \
                             SELECT bal FROM acct WHERE id = 3; COMMIT";
                        let rows = c.try_query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
                        assert_eq!((rows[0][0], rows[1][0]), (20_000, 20_000), "a snapshot saw a partial transfer");
                        assert_eq!(rows[2][0], rows[3][0], "a snapshot read one row twice differently");
                    }
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let (t, k) = (transfers.clone(), conflicts.clone());
    in_parallel(server.port(), 4, move |w, c| {
        let mut rng = StdRng::seed_from_u64(0x5EED + w as u64);
        // Half the writers run at SNAPSHOT isolation.
        if w % 2 == 1 {
            c.exec("SET TRANSACTION ISOLATION LEVEL SNAPSHOT");
        }
        let started = Instant::now();
        while started.elapsed() < duration {
            let (a, x) = (rng.random_range(0..20), rng.random_range(0..50) + 1);
            let b = (a + 1 + rng.random_range(0..19)) % 20;
            let sql = format!(
                "BEGIN TRAN; UPDATE acct SET bal = bal - {x} WHERE id = {a}; UPDATE acct SET bal = bal + {x} WHERE id = {b}; COMMIT"
            );
            match c.try_query(&sql) {
                Ok(_) => t.fetch_add(1, Ordering::Relaxed),
                Err((1205 | 3960, _)) => k.fetch_add(1, Ordering::Relaxed),
                Err(e) => panic!("{sql}: {e:?}"),
            };
            // A failed transaction left nothing open.
            assert_eq!(c.scalar("SELECT @@TRANCOUNT"), 0);
        }
    });
    stop.store(true, Ordering::Relaxed);
    let reads: Vec<u64> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    assert_eq!(c.scalar("SELECT SUM(bal) FROM acct"), 20_000);
    assert_eq!(c.scalar("SELECT SUM(bal) FROM acct WITH (INDEX(by_bal))"), 20_000);
    assert_eq!(c.scalar("SELECT COUNT(*) FROM acct"), 20);
    assert!(transfers.load(Ordering::Relaxed) > 0 && reads.iter().all(|&r| r > 0));
    assert_eq!(
        c.scalar("SELECT COUNT(*) FROM sys.dm_tran_version_store_space_usage WHERE reserved_page_count > 0"),
        0,
        "versions left once every transaction ended"
    );
    eprintln!(
        "snapshot bank: {} transfers, {} conflicts or deadlocks, {reads:?} snapshot reads",
        transfers.load(Ordering::Relaxed),
        conflicts.load(Ordering::Relaxed)
    );
}

/// "Insert if absent" on a column that is not a key, at SERIALIZABLE: each worker looks for
/// a value through a non-unique index and inserts a row with it if none is there (others
/// delete values meanwhile). The
/// key-range locks of the look (on the index) make the pair atomic: however many workers
/// race for one value, exactly one row has it afterwards (deadlock victims retry).
///
/// It found a hole once: the key above a range read was a deadlock victim's uncommitted
/// insert, whose rollback merged the range the reader locked with the next one.
#[test]
fn serializable_insert_if_absent_makes_no_duplicates() {
    let server = TestServer::start();
    let mut c = setup(&server, "CREATE TABLE t (id int IDENTITY PRIMARY KEY, k int NOT NULL, INDEX by_k (k))");
    let duration = run_for(Duration::from_secs(3));
    let victims = Arc::new(AtomicU64::new(0));
    let v = victims.clone();
    let inserted: Vec<i64> = in_parallel(server.port(), 4, move |w, c| {
        let mut rng = StdRng::seed_from_u64(0x5E71 + w as u64);
        c.exec("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
        let started = Instant::now();
        let mut inserted = 0;
        while started.elapsed() < duration {
            let k = rng.random_range(0..10);
            // The look and the insert a moment apart; now and then a value is deleted, so
            // that the race goes on.
            let sql = if rng.random_bool(0.3) {
                format!("DELETE t WHERE k = {k}; SELECT -@@ROWCOUNT")
            } else {
                format!(
                    "BEGIN TRAN; IF NOT EXISTS (SELECT * FROM t WHERE k = {k}) BEGIN WAITFOR DELAY '00:00:00.002'; \
                     INSERT t (k) VALUES ({k}); SELECT 1; END; COMMIT"
                )
            };
            match c.try_query(&sql) {
                Ok(rows) => inserted += rows.iter().map(|r| r[0]).sum::<i64>(),
                Err((1205, _)) => {
                    v.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("{sql}: {e:?}"),
            }
        }
        inserted
    });
    let dupes = c.scalar("SELECT COUNT(*) FROM (SELECT k FROM t GROUP BY k HAVING COUNT(*) > 1) d");
    assert_eq!(dupes, 0, "a value was inserted twice");
    assert_eq!(c.scalar("SELECT COUNT(*) FROM t"), inserted.iter().sum::<i64>(), "rows = inserted - deleted");
    eprintln!("serializable insert-if-absent: {inserted:?} rows, {} deadlock victims", victims.load(Ordering::Relaxed));
}

#[test]
fn merge_upserts_with_holdlock_count_every_call() {
    let server = TestServer::start();
    let mut c = setup(&server, "CREATE TABLE hits (k int PRIMARY KEY, n int NOT NULL)");
    let duration = run_for(Duration::from_secs(3));
    let victims = Arc::new(AtomicU64::new(0));
    let v = victims.clone();
    // Each worker's upserts that committed, less the counts its deletes took away.
    let counted: Vec<(i64, u64)> = in_parallel(server.port(), 4, move |w, c| {
        let mut rng = StdRng::seed_from_u64(0x3E26 + w as u64);
        let started = Instant::now();
        let (mut counted, mut calls) = (0, 0);
        while started.elapsed() < duration {
            calls += 1;
            let k = rng.random_range(0..6);
            // Now and then a key goes, so that the race to insert it goes on.
            let sql = if rng.random_bool(0.2) {
                format!("DELETE hits OUTPUT -deleted.n WHERE k = {k}")
            } else {
                format!(
                    "MERGE hits WITH (HOLDLOCK) AS t USING (SELECT {k} AS k) AS s ON t.k = s.k \
                     WHEN MATCHED THEN UPDATE SET n = t.n + 1 \
                     WHEN NOT MATCHED THEN INSERT (k, n) VALUES (s.k, 1) OUTPUT 1;"
                )
            };
            match c.try_query(&sql) {
                Ok(rows) => counted += rows.iter().map(|r| r[0]).sum::<i64>(),
                Err((1205, _)) => {
                    v.fetch_add(1, Ordering::Relaxed);
                }
                // A duplicate key (2627) would be the upsert's race lost.
                Err(e) => panic!("{sql}: {e:?}"),
            }
        }
        (counted, calls)
    });
    let total: i64 = counted.iter().map(|c| c.0).sum();
    let calls: u64 = counted.iter().map(|c| c.1).sum();
    assert_eq!(c.scalar("SELECT ISNULL(SUM(n), 0) FROM hits"), total, "every upsert counted once");
    assert_eq!(c.scalar("SELECT COUNT(*) FROM hits WHERE n < 1"), 0);
    eprintln!(
        "MERGE upserts: {calls} calls, {total} counted now, {} deadlock victims",
        victims.load(Ordering::Relaxed)
    );
}

#[test]
fn triggers_keep_a_summary_and_an_audit_exact() {
    let server = TestServer::start();
    let mut c = setup(
        &server,
        "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL); \
         CREATE TABLE summary (total int NOT NULL); \
         CREATE TABLE audit (seq int IDENTITY PRIMARY KEY, id int, delta int); \
         INSERT INTO summary VALUES (0); \
         INSERT INTO acct VALUES (1, 0), (2, 0), (3, 0), (4, 0);",
    );
    c.exec(
        "CREATE TRIGGER acct_changes ON acct AFTER INSERT, UPDATE, DELETE AS \
         SET NOCOUNT ON; \
         UPDATE summary SET total = total + ISNULL((SELECT SUM(bal) FROM inserted), 0) \
                                         - ISNULL((SELECT SUM(bal) FROM deleted), 0); \
         INSERT INTO audit (id, delta) \
         SELECT COALESCE(i.id, d.id), ISNULL(i.bal, 0) - ISNULL(d.bal, 0) \
         FROM inserted i FULL JOIN deleted d ON i.id = d.id;",
    );
    let duration = run_for(Duration::from_secs(3));
    let changes: Vec<u64> = in_parallel(server.port(), 4, move |w, c| {
        let mut rng = StdRng::seed_from_u64(0x7216 + w as u64);
        let started = Instant::now();
        let mut changes = 0;
        while started.elapsed() < duration {
            let (k, d) = (rng.random_range(1..=4), rng.random_range(-5..=5));
            let sql = match rng.random_range(0..3) {
                0 => format!("UPDATE acct SET bal = bal + {d} WHERE id = {k}"),
                // Two rows in one statement, in an explicit transaction.
                1 => format!("BEGIN TRAN; UPDATE acct SET bal = bal + {d} WHERE id IN ({k}, {}); COMMIT", k % 4 + 1),
                // A MERGE's update fires the same trigger.
                _ => format!(
                    "MERGE acct t USING (SELECT {k} AS id) s ON t.id = s.id \
                     WHEN MATCHED THEN UPDATE SET bal = t.bal + {d};"
                ),
            };
            match c.try_query(&sql) {
                Ok(_) => changes += if sql.contains(" IN (") { 2 } else { 1 },
                Err((1205, _)) => {}
                Err(e) => panic!("{sql}: {e:?}"),
            }
        }
        changes
    });
    let total = c.scalar("SELECT total FROM summary");
    assert_eq!(total, c.scalar("SELECT SUM(bal) FROM acct"), "the trigger's summary agrees with the table");
    assert_eq!(total, c.scalar("SELECT ISNULL(SUM(delta), 0) FROM audit"), "the audit adds up to the changes");
    assert_eq!(
        c.scalar("SELECT COUNT(*) FROM audit") as u64,
        changes.iter().sum::<u64>(),
        "one audit row per row changed"
    );
    eprintln!("trigger summary: {} row changes audited", changes.iter().sum::<u64>());
}

#[test]
fn instead_of_triggers_on_a_view_apply_every_change_once() {
    let server = TestServer::start();
    let mut c = setup(
        &server,
        "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL); \
         CREATE TABLE ledger (seq int IDENTITY PRIMARY KEY, id int NOT NULL, delta int NOT NULL); \
         INSERT INTO acct VALUES (1, 0), (2, 0), (3, 0), (4, 0);",
    );
    c.exec("CREATE VIEW balances AS SELECT id, bal FROM acct");
    // The view's changes become a change of the table and a ledger row per account.
    c.exec(
        "CREATE TRIGGER balances_update ON balances INSTEAD OF UPDATE AS \
         SET NOCOUNT ON; \
         UPDATE a SET bal = a.bal + (i.bal - d.bal) \
         FROM acct a JOIN inserted i ON i.id = a.id JOIN deleted d ON d.id = i.id; \
         INSERT INTO ledger (id, delta) SELECT i.id, i.bal - d.bal FROM inserted i JOIN deleted d ON d.id = i.id;",
    );
    let duration = run_for(Duration::from_secs(3));
    let changes: Vec<u64> = in_parallel(server.port(), 4, move |w, c| {
        let mut rng = StdRng::seed_from_u64(0x1257 + w as u64);
        let started = Instant::now();
        let mut changes = 0;
        while started.elapsed() < duration {
            let (k, d) = (rng.random_range(1..=4), rng.random_range(-5..=5));
            let sql = if rng.random_bool(0.5) {
                format!("UPDATE balances SET bal = bal + {d} WHERE id = {k}")
            } else {
                format!("BEGIN TRAN; UPDATE balances SET bal = bal + {d} WHERE id IN ({k}, {}); COMMIT", k % 4 + 1)
            };
            match c.try_query(&sql) {
                Ok(_) => changes += if sql.contains(" IN (") { 2 } else { 1 },
                Err((1205, _)) => {}
                Err(e) => panic!("{sql}: {e:?}"),
            }
        }
        changes
    });
    let total = c.scalar("SELECT SUM(bal) FROM acct");
    assert_eq!(total, c.scalar("SELECT ISNULL(SUM(delta), 0) FROM ledger"), "the ledger adds up to the balances");
    assert_eq!(
        c.scalar("SELECT COUNT(*) FROM ledger") as u64,
        changes.iter().sum::<u64>(),
        "one ledger row per row changed through the view"
    );
    eprintln!("INSTEAD OF on a view: {} row changes", changes.iter().sum::<u64>());
}

#[test]
fn cursor_loops_change_rows_through_where_current_of_exactly() {
    let server = TestServer::start();
    let mut c = setup(
        &server,
        "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL); \
         INSERT INTO acct VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0);",
    );
    let duration = run_for(Duration::from_secs(3));
    // Each worker's loops over the rows (T-SQL cursors, optimistic by default) add one to
    // each row through the cursor; a row another worker changed since the fetch is 16947
    // (caught), never a lost or doubled change.
    let counted: Vec<(i64, u64)> = in_parallel(server.port(), 4, move |w, c| {
        let started = Instant::now();
        let (mut added, mut loops) = (0, 0);
        while started.elapsed() < duration {
            loops += 1;
            let kind = ["", "KEYSET", "DYNAMIC", "FORWARD_ONLY"][(w + loops as usize) % 4];
            let sql = format!(
                "SET NOCOUNT ON; \
                 DECLARE @id int, @bal int, @n int = 0; \
                 DECLARE c CURSOR LOCAL {kind} FOR SELECT id, bal FROM acct ORDER BY id FOR UPDATE OF bal; \
                 OPEN c; \
                 FETCH NEXT FROM c INTO @id, @bal; \
                 WHILE @@FETCH_STATUS = 0 \
                 BEGIN \
                     BEGIN TRY \
                         UPDATE acct SET bal = bal + 1 WHERE CURRENT OF c; \
                         SET @n += 1; \
                     END TRY \
                     BEGIN CATCH \
                         IF ERROR_NUMBER() NOT IN (16947, 1205) THROW; \
                     END CATCH \
                     FETCH NEXT FROM c INTO @id, @bal; \
                 END \
                 CLOSE c; DEALLOCATE c; \
                 SELECT @n;"
            );
            match c.try_query(&sql) {
                Ok(rows) => added += rows.last().map_or(0, |r| r[0]),
                Err(e) => panic!("{sql}: {e:?}"),
            }
        }
        (added, loops)
    });
    let added: i64 = counted.iter().map(|c| c.0).sum();
    let loops: u64 = counted.iter().map(|c| c.1).sum();
    assert_eq!(c.scalar("SELECT SUM(bal) FROM acct"), added, "each change through a cursor counted once");
    eprintln!("cursor loops: {loops} loops, {added} rows changed through WHERE CURRENT OF");
}

/// The length and the letter of a large value at generation `g` (off the row: over
/// 8,000 bytes).
fn large_value_of(g: i64) -> (i64, i64) {
    (9_000 + (g * 7_919) % 30_000, 65 + g % 26)
}

#[test]
fn large_values_are_read_whole_while_rewritten() {
    large_values_rewritten_under_readers(false);
}

/// The same under READ COMMITTED SNAPSHOT, the readers with a lock timeout of zero (they
/// never wait): a row version read after its value was replaced and the replacing
/// transaction committed still leads to its whole value, which stays until the snapshot
/// ends.
#[test]
fn large_values_are_read_whole_from_row_versions() {
    large_values_rewritten_under_readers(true);
}

fn large_values_rewritten_under_readers(rcsi: bool) {
    let server = TestServer::start();
    let mut c = setup(
        &server,
        "CREATE TABLE t (id int PRIMARY KEY, g int NOT NULL, v varchar(max) NOT NULL, w nvarchar(max));
         DECLARE @i int = 0; WHILE @i < 8 BEGIN
           INSERT INTO t VALUES (@i, 0, REPLICATE(CAST('A' AS varchar(max)), 9000), REPLICATE(CAST(N'w' AS nvarchar(max)), 5000));
           SET @i += 1; END",
    );
    if rcsi {
        c.exec("ALTER DATABASE conc SET READ_COMMITTED_SNAPSHOT ON");
    }
    let duration = run_for(Duration::from_secs(3));
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let (d, r) = (done.clone(), reads.clone());
    in_parallel(server.port(), 4, move |w, c| {
        let mut rng = StdRng::seed_from_u64(0x10B + w as u64);
        if rcsi && w >= 2 {
            c.exec("SET LOCK_TIMEOUT 0");
        }
        let started = Instant::now();
        if w < 2 {
            // Writers: each new generation replaces the value (sometimes rolled back,
            // sometimes leaving the other large column alone, sometimes deleting and
            // inserting the row again).
            while started.elapsed() < duration {
                let id = rng.random_range(0..8);
                let sql = match rng.random_range(0..4) {
                    0 => format!(
                        "BEGIN TRAN; UPDATE t SET g = g + 1, v = REPLICATE(CAST(CHAR(65 + (g + 1) % 26) AS varchar(max)),                          9000 + ((g + 1) * 7919) % 30000) WHERE id = {id}; ROLLBACK"
                    ),
                    1 => format!(
                        "DECLARE @g int = (SELECT g FROM t WHERE id = {id}) + 1; BEGIN TRAN; DELETE t WHERE id = {id};                          INSERT t VALUES ({id}, @g, REPLICATE(CAST(CHAR(65 + @g % 26) AS varchar(max)), 9000 + (@g * 7919) % 30000),                          REPLICATE(CAST(N'w' AS nvarchar(max)), 5000)); COMMIT"
                    ),
                    _ => format!(
                        "UPDATE t SET g = g + 1, v = REPLICATE(CAST(CHAR(65 + (g + 1) % 26) AS varchar(max)),                          9000 + ((g + 1) * 7919) % 30000) WHERE id = {id}"
                    ),
                };
                match c.try_query(&sql) {
                    Ok(_) | Err((1205, _)) => {}
                    Err(e) => panic!("{sql}: {e:?}"),
                }
            }
            d.store(true, Ordering::Release);
        } else {
            // Readers: every value read is whole and of its row's generation.
            while !d.load(Ordering::Acquire) {
                let sql = if rng.random_bool(0.5) {
                    "SELECT g, LEN(v), ASCII(v), CASE WHEN REPLACE(v, LEFT(v, 1), '') = '' THEN 1 ELSE 0 END, LEN(w) FROM t"
                        .to_string()
                } else {
                    format!(
                        "SELECT g, LEN(v), ASCII(v), CASE WHEN REPLACE(v, LEFT(v, 1), '') = '' THEN 1 ELSE 0 END, LEN(w)                          FROM t WHERE id = {}",
                        rng.random_range(0..8)
                    )
                };
                let rows = c.try_query(&sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
                for row in rows {
                    let (len, letter) = large_value_of(row[0]);
                    assert_eq!(&row[1..], &[len, letter, 1, 5000], "generation {} read as {row:?}", row[0]);
                }
                r.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    assert!(reads.load(Ordering::Relaxed) > 0);
    for row in c.try_query("SELECT g, LEN(v), ASCII(v) FROM t").unwrap() {
        let (len, letter) = large_value_of(row[0]);
        assert_eq!(&row[1..], &[len, letter]);
    }
    assert_eq!(c.scalar("SELECT COUNT(*) FROM t"), 8);
    c.exec("DBCC CHECKDB WITH NO_INFOMSGS");
    if rcsi {
        assert_eq!(
            c.scalar("SELECT COUNT(*) FROM sys.dm_tran_version_store_space_usage WHERE reserved_page_count > 0"),
            0
        );
    }
}

#[test]
fn nonclustered_index_agrees_with_its_table() {
    let server = TestServer::start();
    let mut c = setup(
        &server,
        "CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL); CREATE INDEX ik ON t(k);
         DECLARE @i int = 0; WHILE @i < 400 BEGIN INSERT INTO t VALUES (@i, @i % 50); SET @i += 1; END",
    );
    let duration = run_for(Duration::from_secs(3));
    in_parallel(server.port(), 4, move |w, c| {
        let mut rng = StdRng::seed_from_u64(0xC0FF_EE00 + w as u64);
        let started = Instant::now();
        while started.elapsed() < duration {
            let id = rng.random_range(0..400);
            let k = rng.random_range(0..50);
            let sql = match rng.random_range(0..4) {
                0 => format!("UPDATE t SET k = {k} WHERE id = {id}"),
                1 => format!("UPDATE t SET k = k + 1 WHERE k = {k} AND id % 7 = {}", id % 7),
                2 => format!("DELETE FROM t WHERE id = {id}; INSERT INTO t SELECT {id}, {k} WHERE NOT EXISTS (SELECT 1 FROM t WHERE id = {id})"),
                _ => format!("DELETE FROM t WHERE k = {k} AND id = {id}"),
            };
            match c.try_query(&sql) {
                // Two sessions re-inserting the same id: one wins.
                Ok(_) | Err((1205 | 2627, _)) => {}
                Err(e) => panic!("{sql}: {e:?}"),
            }
        }
    });
    let by_scan = c.column("SELECT id FROM t ORDER BY id");
    let mut by_index = c.column("SELECT id FROM t WHERE k BETWEEN -1000 AND 1000");
    by_index.sort_unstable();
    assert_eq!(by_index, by_scan, "the index lists other rows than the table holds");
    for k in 0..60 {
        assert_eq!(
            c.scalar(&format!("SELECT COUNT(*) FROM t WHERE k = {k}")),
            c.scalar(&format!("SELECT COUNT(*) FROM t WHERE k + 0 = {k}")),
            "index seek and scan disagree on k = {k}"
        );
    }
    // No stale entry makes a re-insert fail.
    c.exec("DELETE FROM t; INSERT INTO t VALUES (1, 1), (2, 1)");
    assert_eq!(c.scalar("SELECT COUNT(*) FROM t WHERE k = 1"), 2);
}

#[test]
fn work_queue_claims_each_job_once() {
    let server = TestServer::start();
    let mut c = setup(
        &server,
        "CREATE TABLE job (id int PRIMARY KEY, owner int NULL);
         DECLARE @i int = 0; WHILE @i < 200 BEGIN INSERT INTO job VALUES (@i, NULL); SET @i += 1; END",
    );
    // A consumer holding its claim open locks only the job it took: the next consumer
    // skips that one and takes the next, in both the plain and the assignment form.
    let mut b = Conn::open(server.port());
    b.exec("USE conc");
    c.exec("BEGIN TRAN");
    let take = "SELECT TOP 1 id FROM job WITH (UPDLOCK, READPAST) WHERE owner IS NULL ORDER BY id";
    assert_eq!(c.column(take), vec![0]);
    assert_eq!(b.column(take), vec![1]);
    let assign = "DECLARE @j int; SELECT TOP 1 @j = id FROM job WITH (UPDLOCK, READPAST) WHERE owner IS NULL ORDER BY id; SELECT @j";
    assert_eq!(b.scalar(&format!("BEGIN TRAN; {assign}")), 1, "b holds 1 itself");
    c.exec("COMMIT");
    b.exec("COMMIT");
    let claimed = in_parallel(server.port(), 4, move |w, c| {
        let mut mine = Vec::new();
        loop {
            // The classic queue: find a free job without waiting on ones others are taking.
            let sql = format!(
                "SET NOCOUNT ON; BEGIN TRAN; DECLARE @j int;
                 SELECT TOP 1 @j = id FROM job WITH (UPDLOCK, READPAST) WHERE owner IS NULL ORDER BY id;
                 IF @j IS NOT NULL UPDATE job SET owner = {w} WHERE id = @j;
                 COMMIT; SELECT @j"
            );
            match c.try_query(&sql) {
                Ok(rows) if rows[0][0] == i64::MIN => {
                    if c.scalar("SELECT COUNT(*) FROM job WHERE owner IS NULL") == 0 {
                        break;
                    }
                }
                Ok(rows) => mine.push(rows[0][0]),
                Err((1205, _)) => {}
                Err(e) => panic!("{sql}: {e:?}"),
            }
        }
        mine
    });
    let mut all: Vec<i64> = claimed.iter().flatten().copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..200).collect::<Vec<_>>(), "every job claimed exactly once");
    for (w, mine) in claimed.iter().enumerate() {
        assert_eq!(c.scalar(&format!("SELECT COUNT(*) FROM job WHERE owner = {w}")), mine.len() as i64);
    }
}

#[test]
fn lock_timeout_nolock_and_update_locks() {
    let server = TestServer::start();
    let mut a =
        setup(&server, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL); INSERT INTO t VALUES (1, 10), (2, 20)");
    let mut b = Conn::open(server.port());
    b.exec("USE conc");

    // A reader blocked by an uncommitted change fails with 1222 after LOCK_TIMEOUT.
    a.exec("BEGIN TRAN; UPDATE t SET v = 11 WHERE id = 1");
    b.exec("SET LOCK_TIMEOUT 500");
    assert_eq!(b.scalar("SELECT @@LOCK_TIMEOUT"), 500);
    let started = Instant::now();
    let e = b.try_query("SELECT v FROM t WHERE id = 1").unwrap_err();
    assert_eq!(e.0, 1222, "{e:?}");
    assert_eq!(e.1, "Lock request time out period exceeded.");
    assert!(started.elapsed() < Duration::from_secs(10));
    // The other row is not locked; NOLOCK reads the uncommitted value without waiting.
    assert_eq!(b.scalar("SELECT v FROM t WHERE id = 2"), 20);
    assert_eq!(b.scalar("SELECT v FROM t WITH (NOLOCK) WHERE id = 1"), 11);
    b.exec("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED");
    assert_eq!(b.scalar("SELECT SUM(v) FROM t"), 31);
    b.exec("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
    // READPAST leaves the locked row out.
    assert_eq!(b.column("SELECT id FROM t WITH (READPAST) ORDER BY id"), vec![2]);
    // A blocked UPDATE times out too and changes nothing.
    assert_eq!(b.try_query("UPDATE t SET v = v + 100").unwrap_err().0, 1222);
    a.exec("ROLLBACK");
    assert_eq!(b.column("SELECT v FROM t ORDER BY id"), vec![10, 20]);

    // UPDLOCK holds an update lock to the end of the transaction: readers pass, a
    // second UPDLOCK or a writer waits.
    a.exec("BEGIN TRAN; SELECT v FROM t WITH (UPDLOCK) WHERE id = 1");
    assert_eq!(b.scalar("SELECT v FROM t WHERE id = 1"), 10);
    assert_eq!(b.try_query("SELECT v FROM t WITH (UPDLOCK) WHERE id = 1").unwrap_err().0, 1222);
    assert_eq!(b.try_query("UPDATE t SET v = 0 WHERE id = 1").unwrap_err().0, 1222);
    a.exec("COMMIT");
    // HOLDLOCK keeps S locks: writers wait, readers pass.
    a.exec("BEGIN TRAN; SELECT v FROM t WITH (HOLDLOCK) WHERE id = 2");
    assert_eq!(b.scalar("SELECT v FROM t WITH (HOLDLOCK) WHERE id = 2"), 20);
    assert_eq!(b.try_query("DELETE FROM t WHERE id = 2").unwrap_err().0, 1222);
    a.exec("COMMIT");
    // XLOCK and TABLOCKX keep readers out.
    a.exec("BEGIN TRAN; SELECT v FROM t WITH (XLOCK) WHERE id = 2");
    assert_eq!(b.try_query("SELECT v FROM t WHERE id = 2").unwrap_err().0, 1222);
    a.exec("COMMIT");
    a.exec("BEGIN TRAN; SELECT COUNT(*) FROM t WITH (TABLOCKX)");
    assert_eq!(b.try_query("SELECT v FROM t WHERE id = 1").unwrap_err().0, 1222);
    a.exec("COMMIT");
    // TABLOCK (shared) keeps writers out for the transaction with HOLDLOCK.
    a.exec("BEGIN TRAN; SELECT COUNT(*) FROM t WITH (TABLOCK, HOLDLOCK)");
    assert_eq!(b.scalar("SELECT COUNT(*) FROM t"), 2);
    assert_eq!(b.try_query("INSERT INTO t VALUES (3, 30)").unwrap_err().0, 1222);
    a.exec("COMMIT");
    // An UPDATE's update locks on rows it did not change end with the statement.
    a.exec("BEGIN TRAN; UPDATE t SET v = v + 1 WHERE id = 1 AND v > 1000");
    b.exec("UPDATE t SET v = v + 1 WHERE id = 1");
    a.exec("COMMIT");
    assert_eq!(b.scalar("SELECT v FROM t WHERE id = 1"), 11);

    // Bad hints are errors; NOLOCK on a target is 1065.
    assert_eq!(b.try_query("SELECT * FROM t WITH (FROBNICATE)").unwrap_err().0, 321);
    assert_eq!(b.try_query("UPDATE t WITH (NOLOCK) SET v = 1").unwrap_err().0, 1065);
    assert_eq!(b.try_query("DELETE t WITH (READUNCOMMITTED) WHERE id = 1").unwrap_err().0, 1065);
}

/// A table or procedure created, or a table dropped, in an open transaction: other
/// sessions' statements on the table and another CREATE of its name wait for the
/// transaction (Sch-M to its end), then find what it left: a created table gone after a
/// ROLLBACK (208, 2812 for the procedure) or there after a COMMIT, a dropped one back
/// after a ROLLBACK or gone after a COMMIT. The dropping session itself finds it gone at
/// once.
#[test]
fn uncommitted_ddl_is_waited_for_and_goes_with_its_transaction() {
    let server = TestServer::start();
    let mut a = setup(&server, "CREATE TABLE anchor (x int)");
    let mut b = Conn::open(server.port());
    b.exec("USE conc; SET LOCK_TIMEOUT 300");

    a.exec("BEGIN TRAN; CREATE TABLE nt (id int PRIMARY KEY); INSERT nt VALUES (1)");
    a.exec("EXEC ('CREATE PROCEDURE pn AS SELECT 7')");
    assert_eq!(b.try_query("SELECT COUNT(*) FROM nt").unwrap_err().0, 1222);
    assert_eq!(b.try_query("CREATE TABLE nt (other int)").unwrap_err().0, 1222);
    // Without a timeout the reader waits for the end of the transaction.
    b.exec("SET LOCK_TIMEOUT -1");
    let (mut b, r) = waits_for_end(&mut a, b, "SELECT COUNT(*) FROM nt", "ROLLBACK");
    assert_eq!(r.unwrap_err().0, 208);
    assert_eq!(b.try_query("EXEC pn").unwrap_err().0, 2812);
    assert_eq!(b.scalar("SELECT COUNT(*) FROM sys.tables WHERE name = 'nt'"), 0);

    // Committed: the waiting reader sees the table and its rows.
    a.exec("BEGIN TRAN; CREATE TABLE nt (id int PRIMARY KEY); INSERT nt VALUES (1), (2)");
    let (b, r) = waits_for_end(&mut a, b, "SELECT COUNT(*) FROM nt", "COMMIT");
    assert_eq!(r.unwrap(), vec![vec![2]]);

    // Dropped: gone for the dropping session, waited for by the others.
    a.exec("BEGIN TRAN; DROP TABLE nt");
    assert_eq!(a.try_query("SELECT COUNT(*) FROM nt").unwrap_err().0, 208);
    assert_eq!(a.scalar("SELECT ISNULL(OBJECT_ID('nt'), -1)"), -1);
    let (b, r) = waits_for_end(&mut a, b, "SELECT COUNT(*) FROM nt", "ROLLBACK");
    assert_eq!(r.unwrap(), vec![vec![2]]);
    a.exec("BEGIN TRAN; DROP TABLE nt; CREATE TABLE nt (other int); INSERT nt VALUES (7)");
    let (b, r) = waits_for_end(&mut a, b, "SELECT COUNT(*) FROM nt", "ROLLBACK");
    assert_eq!(r.unwrap(), vec![vec![2]], "the dropped table is back, the one made in its place gone");
    a.exec("BEGIN TRAN; DROP TABLE nt");
    let (mut b, r) = waits_for_end(&mut a, b, "SELECT COUNT(*) FROM nt", "COMMIT");
    assert_eq!(r.unwrap_err().0, 208);
    assert_eq!(b.scalar("SELECT ISNULL(OBJECT_ID('nt'), -1)"), -1);
}

/// Runs `query` on `b` while `a`'s transaction is open, checks that it waits, ends the
/// transaction with `end`, and returns `b` with what the query got.
fn waits_for_end(a: &mut Conn, mut b: Conn, query: &'static str, end: &str) -> (Conn, Result<Vec<Vec<i64>>, SqlErr>) {
    let waiting = std::thread::spawn(move || {
        let r = b.try_query(query);
        (b, r)
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiting.is_finished(), "{query} did not wait for the uncommitted DDL");
    a.exec(end);
    waiting.join().unwrap()
}

#[test]
fn crossing_updates_pick_one_deadlock_victim() {
    let server = TestServer::start();
    let mut c =
        setup(&server, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL); INSERT INTO t VALUES (1, 0), (2, 0)");
    let results = in_parallel(server.port(), 2, |w, c| {
        let (first, second) = if w == 0 { (1, 2) } else { (2, 1) };
        c.exec(&format!("BEGIN TRAN; UPDATE t SET v = v + 1 WHERE id = {first}"));
        std::thread::sleep(Duration::from_millis(300));
        let r = c.try_query(&format!("UPDATE t SET v = v + 1 WHERE id = {second}; COMMIT"));
        if r.is_ok() {
            return 0;
        }
        // The victim's transaction is gone: @@TRANCOUNT is 0, its first update undone.
        assert_eq!(c.scalar("SELECT @@TRANCOUNT"), 0);
        r.unwrap_err().0
    });
    let mut numbers = results.clone();
    numbers.sort_unstable();
    assert_eq!(numbers, vec![0, 1205], "{results:?}");
    // The survivor's two increments, nothing of the victim's.
    assert_eq!(c.column("SELECT v FROM t ORDER BY id"), vec![1, 1]);
}

/// A connection of its own that runs the batches `round(n)` gives for n = 0, 1, … until
/// `stop` (a deadlock victim, 1205, is the one error allowed; a transaction one leaves
/// open is rolled back); the thread returns how many rounds it ran.
fn ddl_rounds(
    port: u16,
    stop: Arc<AtomicBool>,
    round: impl Fn(u64) -> Vec<String> + Send + 'static,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut c = Conn::open(port);
        c.exec("USE conc");
        let mut rounds = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for sql in round(rounds) {
                match c.try_query(&sql) {
                    Ok(_) | Err((1205, _)) => {}
                    Err(e) => panic!("{sql}: {e:?}"),
                }
                c.exec("IF @@TRANCOUNT > 0 ROLLBACK");
            }
            rounds += 1;
        }
        rounds
    })
}

#[test]
fn ddl_under_load_loses_no_write() {
    let server = TestServer::start();
    let mut c = setup(&server, "CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, v int NOT NULL DEFAULT 0)");
    let duration = run_for(Duration::from_secs(4));
    let stop = Arc::new(AtomicBool::new(false));
    let ddl = ddl_rounds(server.port(), stop.clone(), |round| {
        vec![
            "CREATE INDEX ik ON t(k)".to_string(),
            format!("ALTER TABLE t ADD c{round} int NULL"),
            "DROP INDEX ik ON t".to_string(),
            format!("ALTER TABLE t DROP COLUMN c{round}"),
        ]
    });
    let acknowledged = in_parallel(server.port(), 3, move |w, c| {
        let mut mine = Vec::new();
        let mut victims = 0;
        let started = Instant::now();
        let mut i = 0i64;
        while started.elapsed() < duration {
            let id = w as i64 * 1_000_000 + i;
            let sql = match w {
                0 => format!("INSERT INTO t (id, k) VALUES ({id}, {})", i % 100),
                1 if i % 2 == 0 => "SELECT COUNT(*), SUM(k) FROM t WHERE k >= 0".to_string(),
                // A condition that reads the table holds schema stability as a statement does.
                1 => format!("IF EXISTS (SELECT 1 FROM t WHERE k = {}) SELECT 1 ELSE SELECT 0", i % 100),
                _ => format!("UPDATE t SET v = v + 1 WHERE k = {}", i % 100),
            };
            match c.try_query(&sql) {
                Ok(_) if w == 0 => mine.push(id),
                Ok(_) => {}
                Err((1205, _)) => victims += 1,
                Err(e) => panic!("{sql}: {e:?}"),
            }
            i += 1;
        }
        (mine, victims)
    });
    stop.store(true, Ordering::Relaxed);
    let rounds = ddl.join().expect("the DDL connection failed");
    let inserted: Vec<i64> = acknowledged.iter().flat_map(|(m, _)| m.iter().copied()).collect();
    let stored = c.column("SELECT id FROM t ORDER BY id");
    assert_eq!(stored, inserted, "every acknowledged insert is there, nothing else");
    assert_eq!(c.scalar("SELECT COUNT(*) FROM t WHERE k >= 0"), inserted.len() as i64);
    assert!(rounds > 0 && !inserted.is_empty());
    eprintln!(
        "ddl under load: {rounds} DDL rounds, {} inserts, {} deadlock victims",
        inserted.len(),
        acknowledged.iter().map(|(_, v)| v).sum::<u64>()
    );
}

/// DDL rolled back under load (issue 34): a transaction truncates, drops, alters or
/// indexes the table while others insert, read and update it, and rolls back. Every
/// acknowledged insert is there at the end, nothing else; while a drop is pending the
/// others wait for it (never 208: the table stays theirs until the commit), and no row is
/// lost or made up.
#[test]
fn ddl_rolled_back_under_load_loses_no_write() {
    let server = TestServer::start();
    let mut c = setup(&server, "CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, v int NOT NULL DEFAULT 0)");
    let duration = run_for(Duration::from_secs(4));
    let stop = Arc::new(AtomicBool::new(false));
    let ddl = ddl_rounds(server.port(), stop.clone(), |round| {
        [
            "TRUNCATE TABLE t".to_string(),
            "DROP TABLE t".to_string(),
            format!("ALTER TABLE t ADD c{round} int NULL"),
            "CREATE INDEX ik ON t(k)".to_string(),
        ]
        .map(|change| format!("BEGIN TRAN; {change}; ROLLBACK"))
        .to_vec()
    });
    let acknowledged = in_parallel(server.port(), 3, move |w, c| {
        let mut mine = Vec::new();
        let started = Instant::now();
        let mut i = 0i64;
        while started.elapsed() < duration {
            let id = w as i64 * 1_000_000 + i;
            let sql = match w {
                0 => format!("INSERT INTO t (id, k) VALUES ({id}, {})", i % 100),
                1 => "SELECT COUNT(*), SUM(k) FROM t WHERE k >= 0".to_string(),
                _ => format!("UPDATE t SET v = v + 1 WHERE k = {}", i % 100),
            };
            match c.try_query(&sql) {
                Ok(_) if w == 0 => mine.push(id),
                Ok(_) | Err((1205, _)) => {}
                Err(e) => panic!("{sql}: {e:?}"),
            }
            i += 1;
        }
        mine
    });
    stop.store(true, Ordering::Relaxed);
    let rounds = ddl.join().expect("the DDL connection failed");
    let inserted: Vec<i64> = acknowledged.iter().flatten().copied().collect();
    let stored = c.column("SELECT id FROM t ORDER BY id");
    assert_eq!(stored, inserted, "every acknowledged insert is there, nothing else");
    assert_eq!(c.scalar("SELECT COUNT(*) FROM t WHERE k >= 0"), inserted.len() as i64);
    assert_eq!(c.scalar("SELECT COUNT(*) FROM sys.columns WHERE object_id = OBJECT_ID('t')"), 3);
    assert!(rounds > 0 && !inserted.is_empty());
    eprintln!("ddl rolled back under load: {rounds} rounds, {} inserts", inserted.len());
}

#[test]
fn shutdown_ends_blocked_and_busy_sessions_and_loses_nothing_committed() {
    let mut server = TestServer::start();
    let mut c = setup(&server, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL); INSERT INTO t VALUES (1, 0)");
    // An open transaction with an uncommitted change, a session blocked behind it with
    // no lock timeout, and a session inserting flat out.
    c.exec("BEGIN TRAN; UPDATE t SET v = 99 WHERE id = 1");
    let port = server.port();
    // Each session says when it is logged in (the inserter: once it has committed), so a
    // slow machine cannot shut the server down before they exist.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let blocked_ready = ready_tx.clone();
    let blocked = std::thread::spawn(move || {
        let mut b = Conn::open(port);
        b.exec("USE conc");
        blocked_ready.send(()).unwrap();
        b.try_query("UPDATE t SET v = v + 1 WHERE id = 1").map(|_| ())
    });
    let inserter = std::thread::spawn(move || {
        let mut w = Conn::open(port);
        w.exec("USE conc");
        let mut committed = Vec::new();
        for id in 2.. {
            match w.try_query(&format!("INSERT INTO t VALUES ({id}, {id})")) {
                Ok(_) => committed.push(id),
                Err(_) => break,
            }
            if id == 2 {
                ready_tx.send(()).unwrap();
            }
        }
        committed
    });
    for _ in 0..2 {
        ready_rx.recv_timeout(Duration::from_secs(60)).expect("both sessions logged in");
    }
    // Time for the blocked update to reach its lock wait.
    std::thread::sleep(Duration::from_millis(500));
    // A second server on the same data directory is refused while this one runs.
    let mut second = server.config.clone();
    second.port = 0;
    let refused = tessera_server::RunningServer::start(second).err().expect("the data directory is in use");
    assert!(refused.contains("another tessera process"), "{refused}");

    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let stopper = std::thread::spawn(move || {
        server.restart();
        done_tx.send(()).unwrap();
        server
    });
    done_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("shutdown finished with sessions busy, blocked and in a transaction");
    let server = stopper.join().unwrap();
    // The blocked update was cancelled, or got its lock when the open transaction rolled
    // back and committed before its connection closed.
    let blocked = blocked.join().unwrap();
    let committed = inserter.join().unwrap();
    // The restart moved the log of the run it stopped to ERRORLOG.1.
    let stopped_log = std::fs::read_to_string(server.config.data_dir.join("ERRORLOG.1")).unwrap_or_default();
    assert!(stopped_log.contains("Server shutdown has been initiated."), "{stopped_log}");

    let mut c = Conn::open(server.port());
    c.exec("USE conc");
    let expected = if blocked.is_ok() { 1 } else { 0 };
    assert_eq!(c.scalar("SELECT v FROM t WHERE id = 1"), expected, "the open transaction rolled back ({blocked:?})");
    let stored = c.column("SELECT id FROM t WHERE id > 1 ORDER BY id");
    // Every acknowledged insert is there (one more may have committed as the connection closed).
    assert!(
        stored.len() >= committed.len() && stored.len() <= committed.len() + 1,
        "{} of {}",
        stored.len(),
        committed.len()
    );
    assert_eq!(&stored[..committed.len()], &committed[..]);
}

#[test]
fn application_locks() {
    let server = TestServer::start();
    let mut a = setup(&server, "SELECT 1");
    let mut b = Conn::open(server.port());
    b.exec("USE conc");
    let get =
        |c: &mut Conn, args: &str| c.scalar(&format!("DECLARE @rc int; EXEC @rc = sp_getapplock {args}; SELECT @rc"));

    // A transaction's lock: others time out (-1); outside a transaction the default owner is
    // a call error (-999).
    a.exec("BEGIN TRAN");
    assert_eq!(get(&mut a, "@Resource = 'job', @LockMode = 'Exclusive'"), 0);
    assert_eq!(get(&mut b, "'job', 'Exclusive', 'Session', 100"), -1);
    assert_eq!(get(&mut b, "'job', 'Exclusive'"), -999);
    assert_eq!(get(&mut b, "'job', 'Sideways', 'Session'"), -999);
    // Names are case-sensitive: 'Job' is another lock.
    assert_eq!(get(&mut b, "'Job', 'Exclusive', 'Session', 0"), 0);
    // A waiter is granted when the holder's transaction ends, and says it waited (1).
    let port = server.port();
    let waiter = std::thread::spawn(move || {
        let mut c = Conn::open(port);
        c.exec("USE conc");
        c.scalar("DECLARE @rc int; EXEC @rc = sp_getapplock 'job', 'Shared', 'Session'; SELECT @rc")
    });
    std::thread::sleep(Duration::from_millis(300));
    a.exec("COMMIT");
    assert_eq!(waiter.join().unwrap(), 1);
    // Shared with shared, not with exclusive.
    assert_eq!(get(&mut b, "'job', 'Shared', 'Session', 0"), 0);
    assert_eq!(get(&mut a, "'job', 'Exclusive', 'Session', 0"), -1);
    // Release: 0, then 1223 when it is no longer held.
    assert_eq!(b.scalar("DECLARE @rc int; EXEC @rc = sp_releaseapplock 'job', 'Session'; SELECT @rc"), 0);
    let e = b.try_query("EXEC sp_releaseapplock 'job', 'Session'").unwrap_err();
    assert_eq!(e.0, 1223, "{e:?}");
    // A session's locks end with the session.
    drop(b);
    std::thread::sleep(Duration::from_millis(200));
    assert!(get(&mut a, "'Job', 'Exclusive', 'Session', 2000") >= 0);
}

/// One transaction of the list-append history: its appends (key, element) and reads
/// (key, list), and whether it committed.
struct Txn {
    appends: Vec<(usize, String)>,
    reads: Vec<(usize, Vec<String>)>,
    committed: bool,
}

fn parse_list(v: &str) -> Vec<String> {
    v.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// A history checker in the manner of Jepsen's Elle, for list-append histories: workers
/// run transactions of appends (`UPDATE … SET v = v + ',x'`, unique elements) and reads,
/// committing or rolling back at random; afterwards the history must show none of the
/// anomalies READ COMMITTED forbids — no lost committed append (lost update), no aborted
/// element anywhere (dirty write surviving a rollback, or a dirty read: G1a), every read a
/// committed prefix of the final list plus the reader's own appends (G1b, G1c), and no
/// cycle in the write-write order the final lists imply (G0).
#[test]
fn list_append_histories_show_no_read_committed_anomaly() {
    let server = TestServer::start();
    let duration = run_for(Duration::from_secs(3));
    let keys = 40 * (duration.as_secs() as usize / 3).max(1);
    let mut c = setup(
        &server,
        &format!(
            "CREATE TABLE lists (k int PRIMARY KEY, v varchar(8000) NOT NULL);
             DECLARE @i int = 0; WHILE @i < {keys} BEGIN INSERT INTO lists VALUES (@i, ''); SET @i += 1; END"
        ),
    );
    let histories = in_parallel(server.port(), 4, move |w, c| {
        let mut rng = StdRng::seed_from_u64(0xE11E + w as u64);
        let mut txns = Vec::new();
        let started = Instant::now();
        let mut n = 0;
        while started.elapsed() < duration {
            let mut t = Txn { appends: Vec::new(), reads: Vec::new(), committed: false };
            let mut sql = String::from("SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRAN;");
            for _ in 0..1 + rng.random_range(0..4) {
                let k = rng.random_range(0..keys as u64) as usize;
                if rng.random_range(0..2) == 0 {
                    let x = format!("{w}.{n}");
                    n += 1;
                    sql.push_str(&format!("UPDATE lists SET v = v + ',{x}' WHERE k = {k};"));
                    t.appends.push((k, x));
                } else {
                    sql.push_str(&format!("SELECT k, v FROM lists WHERE k = {k};"));
                    t.reads.push((k, Vec::new()));
                }
            }
            t.committed = rng.random_range(0..5) != 0;
            sql.push_str(if t.committed { "COMMIT" } else { "ROLLBACK" });
            // Results: one set per read, in order.
            let outcome = c.rt.block_on(async {
                let stream = c.client.simple_query(sql.as_str()).await?;
                stream.into_results().await
            });
            match outcome {
                Ok(sets) => {
                    let lists = sets
                        .into_iter()
                        .filter(|s| !s.is_empty())
                        .map(|rows| parse_list(rows[0].get::<&str, _>(1).unwrap_or("")));
                    for (read, list) in t.reads.iter_mut().zip(lists) {
                        read.1 = list;
                    }
                }
                Err(tiberius::error::Error::Server(e)) if e.code() == 1205 => t.committed = false,
                Err(e) => panic!("{sql}: {e:?}"),
            }
            txns.push(t);
        }
        txns
    });
    let txns: Vec<Txn> = histories.into_iter().flatten().collect();
    let finals: Vec<Vec<String>> = c
        .rt
        .block_on(async { c.client.simple_query("SELECT k, v FROM lists ORDER BY k").await?.into_first_result().await })
        .unwrap()
        .iter()
        .map(|r| parse_list(r.get::<&str, _>(1).unwrap_or("")))
        .collect();
    let writer: std::collections::HashMap<&str, (usize, bool)> = txns
        .iter()
        .enumerate()
        .flat_map(|(i, t)| t.appends.iter().map(move |(_, x)| (x.as_str(), (i, t.committed))))
        .collect();
    // Lost updates and aborted elements.
    for (i, t) in txns.iter().enumerate() {
        for (k, x) in &t.appends {
            let found = finals[*k].iter().filter(|e| *e == x).count();
            if t.committed {
                assert_eq!(
                    found, 1,
                    "committed append {x} to key {k} (txn {i}) appears {found} times: {:?}",
                    finals[*k]
                );
            } else {
                assert_eq!(found, 0, "aborted append {x} to key {k} survived: {:?}", finals[*k]);
            }
        }
    }
    // Reads: a committed prefix of the final list, then the reader's own appends (G1a/G1b).
    for (i, t) in txns.iter().enumerate() {
        for (k, list) in &t.reads {
            let is_own = |x: &String| writer.get(x.as_str()).is_some_and(|w| w.0 == i);
            if let Some(p) = list.iter().position(is_own) {
                assert!(list[p..].iter().all(is_own), "txn {i} read {list:?}: others' elements after its own");
            }
            let others: Vec<&String> = list.iter().filter(|x| !is_own(x)).collect();
            for x in &others {
                let (_, committed) =
                    writer.get(x.as_str()).copied().unwrap_or_else(|| panic!("read of an unknown element {x}"));
                assert!(committed, "txn {i} read {x} of an aborted transaction (dirty read) on key {k}");
            }
            assert!(
                others.len() <= finals[*k].len() && others.iter().zip(&finals[*k]).all(|(a, b)| *a == b),
                "txn {i} read {list:?} on key {k}, not a committed prefix of {:?}",
                finals[*k]
            );
        }
    }
    // G0: the write-write order the final lists imply has no cycle.
    let mut edges: std::collections::HashMap<usize, std::collections::HashSet<usize>> = Default::default();
    for list in &finals {
        for pair in list.windows(2) {
            let (a, b) = (writer[pair[0].as_str()].0, writer[pair[1].as_str()].0);
            if a != b {
                edges.entry(a).or_default().insert(b);
            }
        }
    }
    // Kahn's algorithm: every transaction is removed iff there is no cycle.
    let mut indegree: std::collections::HashMap<usize, usize> = Default::default();
    for (a, bs) in &edges {
        indegree.entry(*a).or_default();
        for b in bs {
            *indegree.entry(*b).or_default() += 1;
        }
    }
    let mut ready: Vec<usize> = indegree.iter().filter(|(_, d)| **d == 0).map(|(t, _)| *t).collect();
    let mut removed = 0;
    while let Some(t) = ready.pop() {
        removed += 1;
        for b in edges.get(&t).into_iter().flatten() {
            let d = indegree.get_mut(b).unwrap();
            *d -= 1;
            if *d == 0 {
                ready.push(*b);
            }
        }
    }
    assert_eq!(removed, indegree.len(), "a write-write cycle (G0) among the committed transactions");
    let committed = txns.iter().filter(|t| t.committed).count();
    assert!(committed > 0);
    eprintln!("list-append: {} transactions ({committed} committed), {} appends checked", txns.len(), writer.len());
}

#[test]
fn upsert_under_updlock_holdlock_is_serialised() {
    let server = TestServer::start();
    let mut c = setup(&server, "CREATE TABLE kv (id int PRIMARY KEY, n int NOT NULL)");
    let (workers, keys) = (4, 150);
    in_parallel(server.port(), workers, move |_, c| {
        for id in 0..keys {
            // The classic upsert: the locking read of a missing key keeps its lock, so no
            // other session inserts the key between the check and the insert.
            c.exec(&format!(
                "SET XACT_ABORT ON; BEGIN TRAN;
                 IF NOT EXISTS (SELECT 1 FROM kv WITH (UPDLOCK, HOLDLOCK) WHERE id = {id})
                     INSERT INTO kv VALUES ({id}, 1)
                 ELSE
                     UPDATE kv SET n = n + 1 WHERE id = {id};
                 COMMIT"
            ));
        }
    });
    assert_eq!(c.scalar("SELECT COUNT(*) FROM kv"), keys as i64);
    assert_eq!(c.scalar("SELECT COUNT(*) FROM kv WHERE n = 4"), keys as i64, "every key upserted by every worker");
}
