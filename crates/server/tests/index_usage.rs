//! Index usage over TDS, as SQL Server's operators and tuning scripts read it:
//! sys.dm_db_index_usage_stats counts each run of a statement's plan once per index it
//! seeks, scans, looks rows up in or maintains; sys.dm_db_index_operational_stats the rows
//! behind them; a scan of a whole table under a comparison no index serves shows in the
//! missing-index views until an index serves it (creating it drops the table's
//! suggestions, as SQL Server does when a table's definition changes); all of them need
//! VIEW SERVER STATE.

mod common;

use common::tds::{connect_as, count, refused, run, Conn};
use common::{TestServer, PASSWORD};

/// The rows `sql` answers, each column cast to text by the query (NULL as "NULL").
async fn rows(c: &mut Conn, sql: &str) -> Vec<Vec<String>> {
    let rows = c.query(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).into_first_result().await.unwrap();
    rows.into_iter()
        .map(|r| (0..r.len()).map(|i| r.get::<&str, _>(i).map_or("NULL".to_string(), str::to_string)).collect())
        .collect()
}

/// t's usage counters: (index_id, user_seeks, user_scans, user_lookups, user_updates, and
/// whether the last time of each is set), by index.
const USAGE: &str = "SELECT CONCAT(index_id, ':', user_seeks, ',', user_scans, ',', user_lookups, ',', user_updates, ' ', \
     IIF(last_user_seek IS NULL, 'n', 'y'), IIF(last_user_scan IS NULL, 'n', 'y'), \
     IIF(last_user_lookup IS NULL, 'n', 'y'), IIF(last_user_update IS NULL, 'n', 'y'), ' ', \
     system_seeks + system_scans + system_lookups + system_updates) \
     FROM sys.dm_db_index_usage_stats WHERE database_id = DB_ID('iu') AND object_id = OBJECT_ID('iu.dbo.t') ORDER BY index_id";

/// t's operational counters: (index_id, leaf inserts, deletes, updates, range scans,
/// singleton lookups, row lock waits), by index.
const OPERATIONAL: &str = "SELECT CONCAT(index_id, ':', leaf_insert_count, ',', leaf_delete_count, ',', leaf_update_count, ',', \
     range_scan_count, ',', singleton_lookup_count, ',', leaf_ghost_count + row_lock_wait_count + page_latch_wait_count, \
     ' ', partition_number, ' ', ISNULL(CAST(hobt_id AS varchar(20)), 'NULL')) \
     FROM sys.dm_db_index_operational_stats(DB_ID('iu'), OBJECT_ID('iu.dbo.t'), NULL, NULL) ORDER BY index_id";

/// The missing-index suggestions for t, with their group's statistics.
const MISSING: &str = "SELECT CONCAT(ISNULL(d.equality_columns, 'NULL'), ' | ', ISNULL(d.inequality_columns, 'NULL'), ' | ', \
     ISNULL(d.included_columns, 'NULL'), ' | ', d.statement, ' | ', s.unique_compiles, ',', s.user_seeks, ',', s.user_scans, \
     ' ', IIF(s.last_user_seek IS NULL, 'n', 'y'), ' ', CAST(s.avg_user_impact AS decimal(5, 2)), ' ', \
     IIF(s.avg_total_user_cost IS NULL, 'NULL', 'cost')) \
     FROM sys.dm_db_missing_index_details d \
     JOIN sys.dm_db_missing_index_groups g ON g.index_handle = d.index_handle \
     JOIN sys.dm_db_missing_index_group_stats s ON s.group_handle = g.index_group_handle \
     WHERE d.database_id = DB_ID('iu') AND d.object_id = OBJECT_ID('iu.dbo.t') ORDER BY d.index_handle";

async fn lines(c: &mut Conn, sql: &str) -> Vec<String> {
    rows(c, sql).await.into_iter().map(|mut r| r.remove(0)).collect()
}

#[test]
fn each_run_counts_once_per_index_it_seeks_scans_looks_up_or_maintains() {
    let mut server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE iu").await;
        run(&mut sa, "USE iu; CREATE TABLE t (id int PRIMARY KEY, code int NOT NULL, note varchar(20), free int)")
            .await;
        run(&mut sa, "CREATE INDEX ix_code ON t (code)").await;
        assert!(lines(&mut sa, USAGE).await.is_empty(), "no index used yet");
        // One statement, three rows: one update of each index, three leaf inserts.
        run(&mut sa, "INSERT t VALUES (1, 10, 'a', 100), (2, 20, 'b', 200), (3, 30, 'c', 300)").await;
        assert_eq!(lines(&mut sa, USAGE).await, ["1:0,0,0,1 nnny 0", "2:0,0,0,1 nnny 0"]);

        // A seek by the primary key, three times (one cached plan): three seeks.
        for _ in 0..3 {
            assert_eq!(count(&mut sa, "SELECT code FROM t WHERE id = 2").await, 20);
        }
        // A scan of the clustered index.
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM t").await, 3);
        // A seek of the nonclustered index, whose row is looked up in the clustered one.
        assert_eq!(count(&mut sa, "SELECT LEN(note) FROM t WHERE code = 30").await, 1);
        assert_eq!(lines(&mut sa, USAGE).await, ["1:3,1,1,1 yyyy 0", "2:1,0,0,1 ynny 0"]);
        let recent = "SELECT COUNT(*) FROM sys.dm_db_index_usage_stats WHERE database_id = DB_ID('iu') \
                      AND ABS(DATEDIFF(second, last_user_seek, GETUTCDATE())) < 60 AND last_user_seek >= last_user_update";
        assert_eq!(count(&mut sa, recent).await, 2, "the last seek's time, as the other DMVs' times (UTC)");

        // An insert maintains both indexes; an update of a column neither keys only the
        // clustered one (after seeking its row); a delete both (after its seek).
        run(&mut sa, "INSERT t VALUES (4, 40, 'd', 400)").await;
        run(&mut sa, "UPDATE t SET note = 'x' WHERE id = 4").await;
        run(&mut sa, "DELETE FROM t WHERE id = 4").await;
        assert_eq!(lines(&mut sa, USAGE).await, ["1:5,1,1,4 yyyy 0", "2:1,0,0,3 ynny 0"]);

        // The rows behind them: 4 inserted, 1 deleted, 1 updated in place; one scan of
        // each index; single-row retrievals by the three seeks, the key lookup, the
        // update's and the delete's seeks. What tessera does not keep is 0.
        assert_eq!(lines(&mut sa, OPERATIONAL).await, ["1:4,1,1,1,6,0 1 NULL", "2:4,1,0,1,0,0 1 NULL"]);
        let all = "SELECT COUNT(*) FROM sys.dm_db_index_operational_stats(NULL, NULL, NULL, NULL) \
                   WHERE database_id = DB_ID('iu') AND object_id = OBJECT_ID('iu.dbo.t')";
        assert_eq!(count(&mut sa, all).await, 2);
        let one = "SELECT COUNT(*) FROM sys.dm_db_index_operational_stats(DB_ID('iu'), OBJECT_ID('iu.dbo.t'), 2, 1)";
        assert_eq!(count(&mut sa, one).await, 1);
    });

    // The counters live in memory: a restart starts them afresh, as SQL Server's.
    server.restart();
    rt.block_on(async {
        let mut sa = connect_as(server.port(), "sa", PASSWORD).await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM iu.dbo.t").await, 3);
        assert_eq!(lines(&mut sa, USAGE).await, ["1:0,1,0,0 nynn 0"]);
    });
}

#[test]
fn a_scan_under_an_unindexed_comparison_is_a_missing_index_until_one_is_made() {
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE iu").await;
        run(&mut sa, "USE iu; CREATE TABLE t (id int PRIMARY KEY, code int NOT NULL, note varchar(20), free int)").await;
        run(&mut sa, "INSERT t VALUES (1, 10, 'a', 100), (2, 20, 'b', 200), (3, 30, 'c', 300)").await;

        // Twice the same statement (one compiled plan), once another wanting `free` by range.
        for _ in 0..2 {
            assert_eq!(count(&mut sa, "SELECT LEN(note) FROM t WHERE free = 200").await, 1);
        }
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM t WHERE free > 100 AND code < 40").await, 2);
        assert_eq!(
            lines(&mut sa, MISSING).await,
            [
                "[free] | NULL | [note] | [iu].[dbo].[t] | 1,2,0 y 90.00 NULL",
                "NULL | [code], [free] | NULL | [iu].[dbo].[t] | 1,1,0 y 91.00 NULL",
            ]
        );
        // A query an index serves wants none.
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM t WHERE id > 1").await, 2);
        assert_eq!(lines(&mut sa, MISSING).await.len(), 2);

        // An index on the column: the table's definition changed, its suggestions go (SQL
        // Server drops a table's missing-index information when its metadata changes),
        // and the statement's plan now seeks the index and wants nothing.
        run(&mut sa, "CREATE INDEX ix_free ON t (free)").await;
        assert!(lines(&mut sa, MISSING).await.is_empty());
        assert_eq!(count(&mut sa, "SELECT LEN(note) FROM t WHERE free = 200").await, 1);
        assert!(lines(&mut sa, MISSING).await.is_empty());
        let seeks = "SELECT CAST(user_seeks AS int) FROM sys.dm_db_index_usage_stats \
                     WHERE database_id = DB_ID('iu') AND object_id = OBJECT_ID('iu.dbo.t') AND index_id = (SELECT index_id FROM iu.sys.indexes WHERE name = 'ix_free')";
        assert_eq!(count(&mut sa, seeks).await, 1);
    });
}

#[test]
fn the_index_views_need_view_server_state() {
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE LOGIN pat WITH PASSWORD = 'Pat-Pass-123'").await;
        let mut pat = connect_as(port, "pat", "Pat-Pass-123").await;
        let views = [
            "sys.dm_db_index_usage_stats",
            "sys.dm_db_missing_index_details",
            "sys.dm_db_missing_index_groups",
            "sys.dm_db_missing_index_group_stats",
            "sys.dm_db_index_operational_stats(NULL, NULL, NULL, NULL)",
        ];
        for view in views {
            assert_eq!(refused(&mut pat, &format!("SELECT * FROM {view}")).await.0, 300, "{view}");
        }
        run(&mut sa, "GRANT VIEW SERVER STATE TO pat").await;
        for view in views {
            run(&mut pat, &format!("SELECT * FROM {view}")).await;
        }
    });
}
