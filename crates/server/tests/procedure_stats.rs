//! What each cached stored procedure's calls cost, over TDS: sys.dm_exec_procedure_stats
//! counts a call once however many statements it runs (dm_exec_query_stats still counts
//! each statement, under the same plan handle), one row per database whose procedure
//! shares the cached body, DBCC FREEPROCCACHE forgets them, and the view needs VIEW
//! SERVER STATE.

mod common;

use common::tds::{connect_as, count, refused, run, text, Conn};
use common::{TestServer, PASSWORD};

const PROCEDURE: &str = "CREATE PROCEDURE dbo.p AS \
                         SELECT COUNT(*) FROM t WHERE v >= 0; \
                         UPDATE t SET v = v + 1 WHERE id < 5";

/// (execution_count, total_worker_time, total_elapsed_time, total_logical_reads) of
/// procedure `dbo.p` of database `db`, if it has a row.
async fn calls(c: &mut Conn, db: &str) -> Option<(i64, i64, i64, i64)> {
    let sql = format!(
        "SELECT execution_count, total_worker_time, total_elapsed_time, total_logical_reads \
         FROM sys.dm_exec_procedure_stats \
         WHERE database_id = DB_ID('{db}') AND object_id = OBJECT_ID('{db}.dbo.p')"
    );
    let rows = c.query(sql.as_str(), &[]).await.unwrap().into_first_result().await.unwrap();
    assert!(rows.len() <= 1, "one row per database and procedure");
    rows.first().map(|r| {
        (r.get::<i64, _>(0).unwrap(), r.get::<i64, _>(1).unwrap(), r.get::<i64, _>(2).unwrap(), r.get(3).unwrap())
    })
}

#[test]
fn calls_are_counted_once_per_exec_per_database() {
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        for db in ["ps", "ps2"] {
            run(&mut sa, &format!("CREATE DATABASE {db}")).await;
            run(&mut sa, &format!("USE {db}; CREATE TABLE t (id int PRIMARY KEY, v int)")).await;
            run(&mut sa, "INSERT t SELECT value, 0 FROM GENERATE_SERIES(1, 100)").await;
            run(&mut sa, PROCEDURE).await;
        }
        run(&mut sa, "USE ps").await;
        for _ in 0..3 {
            run(&mut sa, "EXEC dbo.p").await;
        }

        let (executions, worker, elapsed, reads) = calls(&mut sa, "ps").await.expect("a row for ps.dbo.p");
        assert_eq!(executions, 3, "once per EXEC, not per statement");
        assert!(worker > 0 && elapsed > 0 && reads > 0, "{worker} {elapsed} {reads}");
        assert_eq!(calls(&mut sa, "ps2").await, None, "ps2's procedure has not run");
        let shown = "SELECT OBJECT_NAME(object_id, database_id) + ' ' + RTRIM(type) + ' ' + type_desc \
                     FROM sys.dm_exec_procedure_stats WHERE database_id = DB_ID('ps')";
        assert_eq!(text(&mut sa, shown).await.as_deref(), Some("p P SQL_STORED_PROCEDURE"));
        let consistent = "SELECT COUNT(*) FROM sys.dm_exec_procedure_stats WHERE database_id = DB_ID('ps') \
                          AND last_execution_time >= cached_time AND min_worker_time <= max_worker_time \
                          AND last_elapsed_time <= max_elapsed_time AND total_spills = 0";
        assert_eq!(count(&mut sa, consistent).await, 1);
        // Every column reaches the client with its declared type.
        let all = sa
            .query("SELECT * FROM sys.dm_exec_procedure_stats", &[])
            .await
            .unwrap()
            .into_first_result()
            .await
            .unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].columns().len(), 45);
        assert_eq!(all[0].get::<&str, _>("type"), Some("P "));
        assert!(all[0].get::<&[u8], _>("plan_handle").is_some_and(|h| h.len() == 8));
        // The procedure's statements are still counted one by one, under its plan handle
        // and sql_handle.
        let statements = "SELECT COUNT(*) FROM sys.dm_exec_query_stats qs \
                          JOIN sys.dm_exec_procedure_stats ps \
                            ON ps.plan_handle = qs.plan_handle AND ps.sql_handle = qs.sql_handle \
                          WHERE ps.database_id = DB_ID('ps') AND qs.execution_count = 3";
        assert_eq!(count(&mut sa, statements).await, 2);

        // Another tenant of the same schema shares the cached body, in a row of its own.
        run(&mut sa, "USE ps2; EXEC dbo.p").await;
        assert_eq!(calls(&mut sa, "ps2").await.map(|c| c.0), Some(1));
        assert_eq!(calls(&mut sa, "ps").await.map(|c| c.0), Some(3));
        let shared = "SELECT COUNT(DISTINCT plan_handle) FROM sys.dm_exec_procedure_stats \
                      WHERE database_id IN (DB_ID('ps'), DB_ID('ps2'))";
        assert_eq!(count(&mut sa, shared).await, 1);

        run(&mut sa, "DBCC FREEPROCCACHE").await;
        assert_eq!(calls(&mut sa, "ps").await, None);
        assert_eq!(calls(&mut sa, "ps2").await, None);

        run(&mut sa, "CREATE LOGIN quinn WITH PASSWORD = 'Quinn-Pass-123'").await;
        let mut quinn = connect_as(port, "quinn", "Quinn-Pass-123").await;
        assert_eq!(refused(&mut quinn, "SELECT * FROM sys.dm_exec_procedure_stats").await.0, 300);
    });
}
