//! What each cached statement's runs cost, over TDS: sys.dm_exec_query_stats counts runs,
//! rows and reads per statement plan, the classic query (CROSS APPLY dm_exec_sql_text,
//! SUBSTRING by the statement offsets) finds each statement of a batch and
//! dm_exec_text_query_plan its plan, DBCC
//! FREEPROCCACHE forgets them, and the view needs VIEW SERVER STATE.

mod common;

use common::tds::{connect_as, count, refused, run, text, Conn};
use common::{TestServer, PASSWORD};

/// (execution_count, total_rows, last_rows, total_logical_reads > 0, the statement's text)
/// of every statement whose batch text contains `marker`, by statement offset.
async fn stats(c: &mut Conn, marker: &str) -> Vec<(i64, i64, i64, bool, String)> {
    let sql = format!(
        "SELECT qs.execution_count, qs.total_rows, qs.last_rows, qs.total_logical_reads, \
         SUBSTRING(st.text, qs.statement_start_offset / 2 + 1, \
           (CASE qs.statement_end_offset WHEN -1 THEN DATALENGTH(st.text) ELSE qs.statement_end_offset END \
            - qs.statement_start_offset) / 2 + 1) \
         FROM sys.dm_exec_query_stats qs CROSS APPLY sys.dm_exec_sql_text(qs.sql_handle) st \
         WHERE st.text LIKE '%{marker}%' AND st.text NOT LIKE '%dm_exec_query_stats%' \
         ORDER BY qs.statement_start_offset"
    );
    let rows = c.query(sql.as_str(), &[]).await.unwrap().into_first_result().await.unwrap();
    rows.iter()
        .map(|r| {
            (
                r.get::<i64, _>(0).unwrap(),
                r.get::<i64, _>(1).unwrap(),
                r.get::<i64, _>(2).unwrap(),
                r.get::<i64, _>(3).unwrap() > 0,
                r.get::<&str, _>(4).unwrap().trim().to_string(),
            )
        })
        .collect()
}

#[test]
fn statements_runs_rows_and_reads_are_counted_per_plan() {
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE q").await;
        run(&mut sa, "USE q; CREATE TABLE t (id int PRIMARY KEY, v int)").await;
        run(&mut sa, "INSERT t SELECT value, 0 FROM GENERATE_SERIES(1, 100)").await;
        for _ in 0..3 {
            run(&mut sa, "SELECT v FROM t WHERE id = 5 /* one */").await;
        }
        run(&mut sa, "UPDATE t SET v = v + 1 WHERE id < 10 /* two */").await;
        run(&mut sa, "SELECT 1 AS a; SELECT v FROM t WHERE id BETWEEN 1 AND 4 /* three */").await;

        let one = stats(&mut sa, "/* one */").await;
        assert_eq!(one.len(), 1, "{one:?}");
        assert_eq!((one[0].0, one[0].1, one[0].2, one[0].3), (3, 3, 1, true), "{one:?}");
        assert_eq!(one[0].4, "SELECT v FROM t WHERE id = 5", "a statement ends at its last token");
        let plan = text(
            &mut sa,
            "SELECT p.query_plan FROM sys.dm_exec_query_stats qs \
             CROSS APPLY sys.dm_exec_sql_text(qs.sql_handle) st \
             CROSS APPLY sys.dm_exec_text_query_plan(qs.plan_handle, qs.statement_start_offset, qs.statement_end_offset) p \
             WHERE st.text LIKE '%/* one */%' AND st.text NOT LIKE '%dm_exec_query_stats%'",
        )
        .await
        .expect("a plan");
        assert!(plan.starts_with("SELECT v FROM t WHERE id = 5") && plan.contains("Clustered Index Seek"), "{plan}");
        let two = stats(&mut sa, "/* two */").await;
        assert_eq!((two[0].0, two[0].1), (1, 9), "{two:?}");
        let three = stats(&mut sa, "/* three */").await;
        assert_eq!(three.len(), 2, "{three:?}");
        assert!(three[0].4.starts_with("SELECT 1 AS a;"), "{three:?}");
        assert!(three[1].4.starts_with("SELECT v FROM t WHERE id BETWEEN 1 AND 4"), "{three:?}");
        assert_eq!((three[1].0, three[1].1), (1, 4));
        let timed = "SELECT COUNT(*) FROM sys.dm_exec_query_stats WHERE total_elapsed_time > 0 AND execution_count > 0 \
                     AND last_execution_time >= creation_time AND min_elapsed_time <= max_elapsed_time";
        assert!(count(&mut sa, timed).await >= 4);

        run(&mut sa, "DBCC FREEPROCCACHE").await;
        assert!(stats(&mut sa, "/* one */").await.is_empty());

        run(&mut sa, "CREATE LOGIN quinn WITH PASSWORD = 'Quinn-Pass-123'").await;
        let mut quinn = connect_as(port, "quinn", "Quinn-Pass-123").await;
        assert_eq!(refused(&mut quinn, "SELECT * FROM sys.dm_exec_query_stats").await.0, 300);
    });
}
