//! Per-database resource limits over TDS (tessera extensions to ALTER DATABASE … SET):
//! requests beyond MAX_CONCURRENT_REQUESTS wait their turn, a database over its
//! MAX_CPU_PERCENT or MAX_LOG_RATE_KB waits and gets its answer, a throttled request can
//! be killed, and sys.dm_tessera_resource_limits shows the limits and what they held back.
//! Only the hoster sets them; they survive a restart. No timing is asserted: the DMV's
//! counters say whether a request was held back.

mod common;

use common::tds::{connect_as, connect_to, count, eventually, refused, run, BUSY_LOOP};
use common::{TestServer, PASSWORD};

const BOB: &str = "Bob-Pass-12";

/// A column of `sys.dm_tessera_resource_limits` for database `db`, as an int.
fn limits_column(column: &str, db: &str) -> String {
    format!("SELECT CAST({column} AS int) FROM sys.dm_tessera_resource_limits WHERE name = '{db}'")
}

#[test]
fn a_database_s_request_limit_queues_the_rest_in_turn_and_never_deadlocks_a_transaction() {
    let mut server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let running = "SELECT running_requests FROM sys.dm_tessera_resource_limits WHERE name = 'busy'";
    let queued = "SELECT queued_requests FROM sys.dm_tessera_resource_limits WHERE name = 'busy'";
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, &format!("CREATE LOGIN gus WITH PASSWORD = '{BOB}'; GRANT CREATE ANY DATABASE TO gus")).await;
        let mut gus = connect_as(port, "gus", BOB).await;
        run(&mut gus, "CREATE DATABASE busy").await;
        run(&mut gus, "USE busy; CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)").await;
        assert_eq!(
            refused(&mut gus, "ALTER DATABASE busy SET MAX_CONCURRENT_REQUESTS = 1").await.0,
            15247,
            "the hoster's setting"
        );
        run(&mut sa, "ALTER DATABASE busy SET MAX_CONCURRENT_REQUESTS = 1").await;

        // One request runs; the next waits its turn, then runs.
        let mut c1 = connect_to(port, "gus", BOB, "busy").await.unwrap();
        let mut c2 = connect_to(port, "gus", BOB, "busy").await.unwrap();
        let watcher = async {
            eventually(&mut sa, running, 1).await;
            eventually(&mut sa, queued, 1).await;
        };
        let second = async {
            eventually(&mut connect_as(port, "sa", PASSWORD).await, running, 1).await;
            count(&mut c2, "SELECT 41 + 1").await
        };
        let (_, _, answer) = tokio::join!(run(&mut c1, "WAITFOR DELAY '00:00:03'"), watcher, second);
        assert_eq!(answer, 42);
        assert!(
            count(
                &mut sa,
                "SELECT CAST(queued_requests_total AS int) FROM sys.dm_tessera_resource_limits WHERE name = 'busy'"
            )
            .await
                >= 1
        );

        // A session inside a transaction is never queued behind a request waiting for its
        // locks: no deadlock.
        run(&mut c1, "BEGIN TRAN; UPDATE t SET v = 1 WHERE id = 1").await;
        let blocked = async {
            run(&mut c2, "SET LOCK_TIMEOUT 20000; UPDATE t SET v = 2 WHERE id = 1").await;
        };
        let commit = async {
            eventually(&mut connect_as(port, "sa", PASSWORD).await, running, 1).await;
            run(&mut c1, "COMMIT").await;
        };
        tokio::join!(blocked, commit);
        assert_eq!(count(&mut sa, "SELECT v FROM busy.dbo.t WHERE id = 1").await, 2);
    });
    server.restart();
    rt.block_on(async {
        let mut sa = connect_as(server.port(), "sa", PASSWORD).await;
        let limit = "SELECT max_concurrent_requests FROM sys.dm_tessera_resource_limits WHERE name = 'busy'";
        assert_eq!(count(&mut sa, limit).await, 1, "the limit survives a restart");
        run(&mut sa, "ALTER DATABASE busy SET MAX_CONCURRENT_REQUESTS = 0").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.dm_tessera_resource_limits").await, 0);
    });
}

#[test]
fn a_database_over_its_cpu_cap_or_log_rate_waits_and_the_dmv_shows_it() {
    let mut server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, &format!("CREATE LOGIN gus WITH PASSWORD = '{BOB}'")).await;
        run(&mut sa, "CREATE DATABASE capped; CREATE DATABASE logged; CREATE DATABASE free").await;
        run(&mut sa, "ALTER AUTHORIZATION ON DATABASE::capped TO gus").await;
        let mut gus = connect_to(port, "gus", BOB, "capped").await.unwrap();
        assert_eq!(refused(&mut gus, "ALTER DATABASE capped SET MAX_CPU_PERCENT = 1").await.0, 15247);
        assert_eq!(refused(&mut sa, "ALTER DATABASE capped SET MAX_CPU_PERCENT = 101").await.0, 15129);
        assert_eq!(refused(&mut sa, "ALTER DATABASE capped SET MAX_LOG_RATE_KB = -1").await.0, 102);
        run(&mut sa, "ALTER DATABASE capped SET MAX_CPU_PERCENT = 1").await;
        run(&mut sa, "ALTER DATABASE logged SET MAX_LOG_RATE_KB = 512").await;
        assert_eq!(refused(&mut sa, "ALTER DATABASE logged SET CPU_SHARE_PERCENT = 101").await.0, 15129);
        run(&mut sa, "ALTER DATABASE logged SET CPU_SHARE_PERCENT = 30").await;

        // The capped database's loop is held back and still answers; the same loop in a
        // database without limits is not governed at all.
        let answer = count(&mut gus, BUSY_LOOP).await;
        assert!(count(&mut sa, &limits_column("cpu_throttled_count", "capped")).await > 0);
        assert!(count(&mut sa, &limits_column("cpu_throttled_ms_total", "capped")).await > 0);
        assert!(count(&mut sa, &limits_column("cpu_used_ms_total", "capped")).await > 0);
        let mut free = connect_to(port, "sa", PASSWORD, "free").await.unwrap();
        assert_eq!(count(&mut free, BUSY_LOOP).await, answer);
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.dm_tessera_resource_limits WHERE name = 'free'").await, 0);

        // About 900 KiB of log at 512 KiB/s: the writer waits for the log's rate, and every
        // row is there.
        let mut writer = connect_to(port, "sa", PASSWORD, "logged").await.unwrap();
        run(&mut writer, "CREATE TABLE t (id int PRIMARY KEY, v char(1000))").await;
        run(&mut writer, "DECLARE @i int = 0; WHILE @i < 800 BEGIN INSERT INTO t VALUES (@i, 'x'); SET @i += 1; END")
            .await;
        assert_eq!(count(&mut writer, "SELECT COUNT(*) FROM t").await, 800);
        assert!(count(&mut sa, &limits_column("log_throttled_count", "logged")).await > 0);
        assert!(count(&mut sa, &limits_column("log_written_kb_total", "logged")).await >= 800);
        assert_eq!(count(&mut sa, &limits_column("cpu_throttled_count", "logged")).await, 0, "no CPU cap there");

        // A request held back for a long time can be killed: its session ends.
        let spid = count(&mut gus, "SELECT CAST(@@SPID AS int)").await;
        let throttled_before = count(&mut sa, &limits_column("cpu_throttled_count", "capped")).await;
        let long = BUSY_LOOP.replace("1500", "10000000");
        let kill = async {
            let throttled = limits_column("cpu_throttled_count", "capped");
            for _ in 0..2_000 {
                if count(&mut sa, &throttled).await > throttled_before {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            run(&mut sa, &format!("KILL {spid}")).await;
            eventually(&mut sa, &format!("SELECT COUNT(*) FROM sys.dm_exec_sessions WHERE session_id = {spid}"), 0)
                .await;
        };
        let (killed, ()) = tokio::join!(async { gus.simple_query(long.as_str()).await.map(|_| ()) }, kill);
        drop(killed);
    });
    server.restart();
    rt.block_on(async {
        let mut sa = connect_as(server.port(), "sa", PASSWORD).await;
        assert_eq!(count(&mut sa, &limits_column("max_cpu_percent", "capped")).await, 1, "kept over a restart");
        assert_eq!(count(&mut sa, &limits_column("max_log_rate_kb", "logged")).await, 512);
        assert_eq!(count(&mut sa, &limits_column("cpu_share_percent", "logged")).await, 30);
        run(
            &mut sa,
            "ALTER DATABASE capped SET MAX_CPU_PERCENT = 100; ALTER DATABASE logged SET MAX_LOG_RATE_KB = 0; \
             ALTER DATABASE logged SET CPU_SHARE_PERCENT = 0",
        )
        .await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.dm_tessera_resource_limits").await, 0);
    });
}

/// Writers on one row in a limited database while its limits change under them: every
/// update lands (the counter is exact), none waits for ever, and the queues empty.
#[test]
fn limits_changed_under_load_lose_no_request_and_no_update() {
    const WRITERS: usize = 6;
    const UPDATES: i32 = 40;
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE churn").await;
        run(&mut sa, "USE churn; CREATE TABLE counter (id int PRIMARY KEY, n int); INSERT INTO counter VALUES (1, 0)")
            .await;
        run(&mut sa, "ALTER DATABASE churn SET MAX_CONCURRENT_REQUESTS = 1").await;
    });
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    let mut c = connect_to(port, "sa", PASSWORD, "churn").await.unwrap();
                    for i in 0..UPDATES {
                        // Every third in an explicit transaction (never queued inside one).
                        let sql = if (i + w as i32) % 3 == 0 {
                            "BEGIN TRAN; UPDATE counter SET n = n + 1 WHERE id = 1; COMMIT"
                        } else {
                            "UPDATE counter SET n = n + 1 WHERE id = 1"
                        };
                        run(&mut c, sql).await;
                    }
                })
            })
        })
        .collect();
    let toggler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let mut sa = connect_as(port, "sa", PASSWORD).await;
                let mut i = 0u32;
                // At least a few changes, however fast the writers are.
                while i < 3 || !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let settings = format!(
                        "ALTER DATABASE churn SET MAX_CONCURRENT_REQUESTS = {}; ALTER DATABASE churn SET MAX_CPU_PERCENT = {}; \
                         ALTER DATABASE churn SET MAX_LOG_RATE_KB = {}",
                        i % 3,
                        [0, 50, 100][(i % 3) as usize],
                        [0, 4096][(i % 2) as usize]
                    );
                    run(&mut sa, &settings).await;
                    i += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            })
        })
    };
    for w in writers {
        w.join().expect("a writer finished");
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    toggler.join().expect("the toggler finished");
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        assert_eq!(count(&mut sa, "SELECT n FROM churn.dbo.counter WHERE id = 1").await, WRITERS as i32 * UPDATES);
        run(&mut sa, "ALTER DATABASE churn SET MAX_CONCURRENT_REQUESTS = 1").await;
        assert_eq!(count(&mut sa, &limits_column("queued_requests", "churn")).await, 0);
        assert_eq!(count(&mut sa, &limits_column("running_requests", "churn")).await, 0);
    });
}

/// MAX_BUFFER_POOL_MB: a database's pages hold no more of the pool than its limit, at once
/// when the limit is set and through a scan and an update of every row, which still give
/// the right answers and lose nothing (dirty pages are written before they are replaced).
#[test]
fn a_database_s_buffer_pool_limit_holds_its_pages_and_loses_no_change() {
    let mut server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let pool_kb = limits_column("buffer_pool_kb", "big");
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE big").await;
        let mut c = connect_to(port, "sa", PASSWORD, "big").await.unwrap();
        // About 6 MiB of rows: 1,500 rows of 4 KB, two to a page.
        run(&mut c, "CREATE TABLE t (id int PRIMARY KEY, v int, pad char(4000))").await;
        run(&mut c, "DECLARE @i int = 0; WHILE @i < 1500 BEGIN INSERT INTO t VALUES (@i, 0, 'x'); SET @i += 1; END")
            .await;
        assert_eq!(refused(&mut sa, "ALTER DATABASE big SET MAX_BUFFER_POOL_MB = 16777217").await.0, 15129);
        run(&mut sa, "ALTER DATABASE big SET MAX_BUFFER_POOL_MB = 1").await;
        let held = count(&mut sa, &pool_kb).await;
        assert!(held <= 1024, "{held} KiB held right after the limit was set");

        assert_eq!(count(&mut c, "SELECT COUNT(*) FROM t WHERE pad = 'x'").await, 1500);
        run(&mut c, "UPDATE t SET v = v + id").await;
        assert_eq!(count(&mut c, "SELECT SUM(v) FROM t").await, 1499 * 1500 / 2);
        // Concurrent loads may each pass the limit by a page or two.
        let held = count(&mut sa, &pool_kb).await;
        assert!(held <= 1024 + 64, "{held} KiB held after a scan and an update");
        assert!(count(&mut sa, &limits_column("buffer_pool_limit_evictions_total", "big")).await > 500);
        let rows = "SELECT COUNT(*) FROM sys.dm_os_buffer_descriptors WHERE database_id = DB_ID('big')";
        assert!(count(&mut sa, rows).await <= 128 + 8, "the buffer descriptors agree");
    });
    server.restart();
    rt.block_on(async {
        let mut sa = connect_as(server.port(), "sa", PASSWORD).await;
        assert_eq!(count(&mut sa, "SELECT SUM(v) FROM big.dbo.t").await, 1499 * 1500 / 2, "every change kept");
        assert_eq!(count(&mut sa, &limits_column("max_buffer_pool_mb", "big")).await, 1, "kept over a restart");
        assert!(count(&mut sa, &pool_kb).await <= 1024 + 64);
        run(&mut sa, "ALTER DATABASE big SET MAX_BUFFER_POOL_MB = 0").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.dm_tessera_resource_limits").await, 0);
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM big.dbo.t WHERE pad = 'x'").await, 1500);
        let rows = "SELECT COUNT(*) FROM sys.dm_os_buffer_descriptors WHERE database_id = DB_ID('big')";
        assert!(count(&mut sa, rows).await > 700, "without a limit the table is cached whole");
    });
}

/// MAX_TEMPDB_MB: what a database's requests create in tempdb (temporary tables, table
/// variables, their indexes) is counted, a statement that would go past the quota fails
/// with 40544 and changes nothing, and dropping the objects (or ending the session) gives
/// the space back. Other databases' temporary objects are not counted.
#[test]
fn a_database_s_tempdb_quota_refuses_rows_beyond_it_and_frees_with_its_objects() {
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tempdb_kb = limits_column("tempdb_kb", "tenant");
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE tenant; CREATE DATABASE other").await;
        run(&mut sa, "ALTER DATABASE tenant SET MAX_TEMPDB_MB = 1").await;
        for db in ["tenant", "other"] {
            let mut c = connect_to(port, "sa", PASSWORD, db).await.unwrap();
            run(&mut c, "CREATE TABLE src (id int PRIMARY KEY, pad char(2000))").await;
            run(&mut c, "DECLARE @i int = 0; WHILE @i < 600 BEGIN INSERT INTO src VALUES (@i, 'x'); SET @i += 1; END")
                .await;
        }

        // 200 rows of 2 KB (about 400 KiB) fit; 400 more do not, and the statement that
        // tried leaves the table as it was.
        let mut c = connect_to(port, "sa", PASSWORD, "tenant").await.unwrap();
        run(&mut c, "CREATE TABLE #t (id int PRIMARY KEY, pad char(2000)); INSERT INTO #t SELECT id, pad FROM src WHERE id < 200")
            .await;
        let used = count(&mut sa, &tempdb_kb).await;
        assert!((400..1024).contains(&used), "{used} KiB");
        let (number, message) = refused(&mut c, "INSERT INTO #t SELECT id, pad FROM src WHERE id >= 200").await;
        assert_eq!(number, 40544, "{message}");
        assert!(message.contains("'tempdb' has reached its size quota"), "{message}");
        assert_eq!(count(&mut c, "SELECT COUNT(*) FROM #t").await, 200, "the failed statement changed nothing");
        assert!(count(&mut sa, &limits_column("tempdb_refused_count", "tenant")).await >= 1);
        // A table variable is counted as well.
        assert_eq!(
            refused(&mut c, "DECLARE @v TABLE (id int PRIMARY KEY, pad char(2000)); INSERT INTO @v SELECT id, pad FROM src")
                .await
                .0,
            40544
        );
        // Deleting rows and dropping the table give the space back.
        run(&mut c, "DROP TABLE #t").await;
        let left = count(&mut sa, &tempdb_kb).await;
        assert!(left < 64, "{left} KiB left");
        run(&mut c, "CREATE TABLE #u (id int PRIMARY KEY, pad char(2000)); INSERT INTO #u SELECT id, pad FROM src WHERE id < 300")
            .await;
        assert!(count(&mut sa, &tempdb_kb).await >= 600);
        drop(c);
        eventually(&mut sa, &format!("SELECT CASE WHEN ({}) < 64 THEN 1 ELSE 0 END", tempdb_kb), 1).await;

        // Another database's session is not held to the tenant's quota.
        let mut o = connect_to(port, "sa", PASSWORD, "other").await.unwrap();
        run(&mut o, "CREATE TABLE #big (id int PRIMARY KEY, pad char(2000)); INSERT INTO #big SELECT id, pad FROM src").await;
        assert_eq!(count(&mut o, "SELECT COUNT(*) FROM #big").await, 600);
        let used = count(&mut sa, &tempdb_kb).await;
        assert!(used < 64, "{used} KiB charged to the tenant");
    });
}
