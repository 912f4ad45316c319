//! Query Store over TDS: turned on per database with ALTER DATABASE, it keeps each
//! query's text, plans and runtime statistics per interval, in the database (they survive
//! a restart), answers "what got slower" through the sys.query_store_* views, keeps
//! waits by category, removes queries and plans, stays within MAX_STORAGE_SIZE_MB, and
//! refuses what SQL Server refuses.

mod common;

use common::tds::{connect_as, count, refused, run, text, Conn};
use common::{TestServer, PASSWORD};

/// (executions, error runs, plans) per query whose text contains `marker`, by text.
async fn history(c: &mut Conn, marker: &str) -> Vec<(String, i64, i64, i64)> {
    let sql = format!(
        "SELECT qt.query_sql_text, SUM(rs.count_executions), \
           SUM(CASE WHEN rs.execution_type = 4 THEN rs.count_executions ELSE 0 END), COUNT(DISTINCT p.plan_id) \
         FROM sys.query_store_query_text qt \
         JOIN sys.query_store_query q ON q.query_text_id = qt.query_text_id \
         JOIN sys.query_store_plan p ON p.query_id = q.query_id \
         JOIN sys.query_store_runtime_stats rs ON rs.plan_id = p.plan_id \
         WHERE qt.query_sql_text LIKE '%{marker}%' AND qt.query_sql_text NOT LIKE '%query_store%' \
         GROUP BY qt.query_sql_text ORDER BY qt.query_sql_text"
    );
    let rows = c.query(sql.as_str(), &[]).await.unwrap().into_first_result().await.unwrap();
    rows.iter()
        .map(|r| {
            (
                r.get::<&str, _>(0).unwrap().to_string(),
                r.get::<i64, _>(1).unwrap(),
                r.get::<i64, _>(2).unwrap(),
                i64::from(r.get::<i32, _>(3).unwrap()),
            )
        })
        .collect()
}

async fn state(c: &mut Conn) -> String {
    text(c, "SELECT actual_state_desc FROM sys.database_query_store_options").await.unwrap()
}

#[test]
fn queries_plans_and_runtime_statistics_are_kept_in_the_database() {
    let mut server = TestServer::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let query_id = "SELECT CAST(q.query_id AS int) FROM sys.query_store_query q \
         JOIN sys.query_store_query_text qt ON qt.query_text_id = q.query_text_id \
         WHERE qt.query_sql_text LIKE '% AS scan %'";
    let options = "SELECT COUNT(*) FROM sys.database_query_store_options WHERE desired_state = 2 \
         AND actual_state_desc = 'READ_WRITE' AND query_capture_mode_desc = 'ALL' AND interval_length_minutes = 1 \
         AND flush_interval_seconds = 60 AND stale_query_threshold_days = 7 AND max_storage_size_mb = 1000 \
         AND size_based_cleanup_mode_desc = 'AUTO' AND max_plans_per_query = 200 AND wait_stats_capture_mode = 1";
    let before = rt.block_on(async {
        let mut sa = connect_as(server.port(), "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE qs").await;
        run(&mut sa, "USE qs; CREATE TABLE t (id int PRIMARY KEY, v int)").await;
        run(&mut sa, "USE qs; INSERT t SELECT value, value FROM GENERATE_SERIES(1, 500)").await;
        assert_eq!(state(&mut sa).await, "OFF", "master's: never on");
        run(&mut sa, "USE qs").await;
        assert_eq!(state(&mut sa).await, "OFF");
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.query_store_query").await, 0);

        run(
            &mut sa,
            "ALTER DATABASE qs SET QUERY_STORE = ON (QUERY_CAPTURE_MODE = ALL, INTERVAL_LENGTH_MINUTES = 1, \
             DATA_FLUSH_INTERVAL_SECONDS = 60, CLEANUP_POLICY = (STALE_QUERY_THRESHOLD_DAYS = 7))",
        )
        .await;
        assert_eq!(count(&mut sa, options).await, 1);

        for i in 0..5 {
            run(&mut sa, &format!("SELECT v AS seek FROM t WHERE id = {}", i + 1)).await;
        }
        for _ in 0..2 {
            run(&mut sa, "SELECT SUM(v) AS scan FROM t WHERE v > 10").await;
        }
        let (number, _) = refused(&mut sa, "SELECT v / 0 AS fails FROM t WHERE id = 1").await;
        assert_eq!(number, 8134);

        let seek = history(&mut sa, " AS seek ").await;
        assert_eq!(seek.len(), 5, "a literal makes each text its own query: {seek:?}");
        let scan = history(&mut sa, " AS scan ").await;
        assert_eq!(scan, vec![("SELECT SUM(v) AS scan FROM t WHERE v > 10".to_string(), 2, 0, 1)]);
        let fails = history(&mut sa, " AS fails ").await;
        assert_eq!((fails[0].1, fails[0].2), (1, 1), "an error is an Exception run: {fails:?}");

        let plan = text(
            &mut sa,
            "SELECT p.query_plan FROM sys.query_store_plan p JOIN sys.query_store_query q ON q.query_id = p.query_id \
             JOIN sys.query_store_query_text qt ON qt.query_text_id = q.query_text_id \
             WHERE qt.query_sql_text = 'SELECT v AS seek FROM t WHERE id = 1'",
        )
        .await
        .unwrap();
        assert!(plan.contains("Clustered Index Seek"), "{plan}");
        let measured = "SELECT COUNT(*) FROM sys.query_store_runtime_stats rs \
             JOIN sys.query_store_runtime_stats_interval i ON i.runtime_stats_interval_id = rs.runtime_stats_interval_id \
             WHERE rs.avg_duration > 0 AND rs.min_duration <= rs.max_duration AND rs.avg_logical_io_reads > 0 \
             AND rs.last_execution_time >= rs.first_execution_time AND i.end_time > i.start_time \
             AND DATEDIFF(second, i.start_time, i.end_time) = 60 AND rs.avg_dop = 1";
        assert!(count(&mut sa, measured).await >= 7);
        let context = "SELECT COUNT(*) FROM sys.query_context_settings c JOIN sys.query_store_query q \
             ON q.context_settings_id = c.context_settings_id WHERE c.date_first = 7 AND c.date_format = 1";
        assert!(count(&mut sa, context).await >= 7);

        // A run that waits for a lock is counted under the Lock category.
        let mut holder = connect_as(server.port(), "sa", PASSWORD).await;
        run(&mut holder, "USE qs; BEGIN TRAN; UPDATE t SET v = v WHERE id = 42").await;
        let blocked = async {
            run(&mut sa, "SELECT v AS blocked FROM t WHERE id = 42").await;
        };
        let release = async {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            run(&mut holder, "COMMIT").await;
        };
        tokio::join!(blocked, release);
        let lock_waits = "SELECT COUNT(*) FROM sys.query_store_wait_stats w JOIN sys.query_store_plan p ON p.plan_id = w.plan_id \
             JOIN sys.query_store_query q ON q.query_id = p.query_id \
             JOIN sys.query_store_query_text qt ON qt.query_text_id = q.query_text_id \
             WHERE qt.query_sql_text LIKE '% AS blocked %' AND w.wait_category_desc = 'Lock' \
             AND w.total_query_wait_time_ms > 0";
        assert_eq!(count(&mut sa, lock_waits).await, 1);

        // Kept in the database: after a restart the history is there, and new runs add
        // to the same query.
        count(&mut sa, query_id).await
    });
    server.restart();
    rt.block_on(async {
        let mut sa = connect_as(server.port(), "sa", PASSWORD).await;
        run(&mut sa, "USE qs").await;
        assert_eq!(count(&mut sa, query_id).await, before);
        run(&mut sa, "SELECT SUM(v) AS scan FROM t WHERE v > 10").await;
        assert_eq!(history(&mut sa, " AS scan ").await[0].1, 3);
        assert_eq!(count(&mut sa, options).await, 1, "settings kept");

        // Removing: an unknown id is SQL Server's 12402; a query goes with its plans and
        // statistics; reset clears a plan's statistics only.
        let (number, message) = refused(&mut sa, "EXEC sp_query_store_remove_query @query_id = 999999").await;
        assert_eq!(number, 12402, "{message}");
        let (number, _) = refused(&mut sa, "EXEC sp_query_store_remove_plan 999999").await;
        assert_eq!(number, 12403);
        run(&mut sa, &format!("EXEC sp_query_store_remove_query @query_id = {before}")).await;
        assert!(history(&mut sa, " AS scan ").await.is_empty());
        let plan_id = "SELECT CAST(MIN(p.plan_id) AS int) FROM sys.query_store_plan p JOIN sys.query_store_query q \
             ON q.query_id = p.query_id JOIN sys.query_store_query_text qt ON qt.query_text_id = q.query_text_id \
             WHERE qt.query_sql_text LIKE '% AS seek %'";
        let plan = count(&mut sa, plan_id).await;
        run(&mut sa, &format!("EXEC sp_query_store_reset_exec_stats {plan}")).await;
        let stats_of = format!("SELECT COUNT(*) FROM sys.query_store_runtime_stats WHERE plan_id = {plan}");
        assert_eq!(count(&mut sa, &stats_of).await, 0);
        assert_eq!(
            count(&mut sa, &format!("SELECT COUNT(*) FROM sys.query_store_plan WHERE plan_id = {plan}")).await,
            1
        );
        run(&mut sa, &format!("EXEC sp_query_store_remove_plan {plan}")).await;
        assert_eq!(
            count(&mut sa, &format!("SELECT COUNT(*) FROM sys.query_store_plan WHERE plan_id = {plan}")).await,
            0
        );
        run(&mut sa, "EXEC sp_query_store_flush_db").await;

        // OFF keeps what was counted and counts no more; CLEAR ALL empties it.
        run(&mut sa, "ALTER DATABASE qs SET QUERY_STORE = OFF").await;
        assert_eq!(state(&mut sa).await, "OFF");
        let kept = count(&mut sa, "SELECT COUNT(*) FROM sys.query_store_query").await;
        assert!(kept > 0);
        run(&mut sa, "SELECT v AS turned_off FROM t WHERE id = 300").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.query_store_query").await, kept);
        run(&mut sa, "ALTER DATABASE qs SET QUERY_STORE CLEAR ALL").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.query_store_query").await, 0);
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.query_store_query_text").await, 0);

        // What SQL Server refuses.
        let (number, _) = refused(&mut sa, "ALTER DATABASE master SET QUERY_STORE = ON").await;
        assert_eq!(number, 12438, "then 5069, which tiberius does not keep");
        let (number, _) = refused(&mut sa, "ALTER DATABASE qs SET QUERY_STORE (INTERVAL_LENGTH_MINUTES = 7)").await;
        assert_eq!(number, 12432);
        let (number, _) = refused(&mut sa, "ALTER DATABASE qs SET QUERY_STORE (MAX_STORAGE_SIZE_MB = 0)").await;
        assert_eq!(number, 12452);
        run(&mut sa, "CREATE LOGIN plain WITH PASSWORD = 'Plain-Pass-1'; CREATE USER plain FOR LOGIN plain").await;
        let mut plain = connect_as(server.port(), "plain", "Plain-Pass-1").await;
        run(&mut plain, "USE qs").await;
        assert_eq!(refused(&mut plain, "SELECT * FROM sys.query_store_query").await.0, 300);
        assert_eq!(refused(&mut plain, "EXEC sp_query_store_flush_db").await.0, 300);
    });
}

#[test]
fn the_store_stays_within_its_size_limit() {
    let server = TestServer::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(server.port(), "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE small; USE small; CREATE TABLE t (id int PRIMARY KEY)").await;
        run(&mut sa, "ALTER DATABASE small SET QUERY_STORE = ON (QUERY_CAPTURE_MODE = ALL, MAX_STORAGE_SIZE_MB = 1)")
            .await;
        let padding = "x".repeat(600);
        let distinct = |i: usize| format!("SELECT id, '{padding}' AS p FROM t WHERE id = {i}");
        for i in 0..2500 {
            run(&mut sa, &distinct(i)).await;
        }
        run(&mut sa, "EXEC sp_query_store_flush_db").await;
        let size = "SELECT CAST(current_storage_size_mb AS int) FROM sys.database_query_store_options";
        assert_eq!(count(&mut sa, size).await, 1, "at most 1 MB");
        let kept = count(&mut sa, "SELECT COUNT(*) FROM sys.query_store_query").await;
        assert!(kept > 0 && kept < 2500, "the least recently run went: {kept} kept");
        assert_eq!(state(&mut sa).await, "READ_WRITE");
        let newest = "SELECT COUNT(*) FROM sys.query_store_query_text WHERE query_sql_text LIKE '%id = 2499'";
        assert_eq!(count(&mut sa, newest).await, 1, "the most recent is kept");

        // With size-based cleanup off, the store turns READ_ONLY at its limit.
        run(&mut sa, "ALTER DATABASE small SET QUERY_STORE (SIZE_BASED_CLEANUP_MODE = OFF)").await;
        for i in 2500..5000 {
            run(&mut sa, &distinct(i)).await;
        }
        run(&mut sa, "EXEC sp_query_store_flush_db").await;
        assert_eq!(state(&mut sa).await, "READ_ONLY");
        let reason = "SELECT readonly_reason FROM sys.database_query_store_options";
        assert_eq!(count(&mut sa, reason).await, 65536);
        let before = count(&mut sa, "SELECT COUNT(*) FROM sys.query_store_query").await;
        run(&mut sa, &distinct(9999)).await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.query_store_query").await, before, "nothing more is kept");
    });
}
