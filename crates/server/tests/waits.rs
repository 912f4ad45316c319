//! Who waits for whom, over TDS: a session blocked on a row another session's open
//! transaction changed shows in sys.dm_exec_requests (suspended, its lock wait type, the
//! blocking session, the key it waits for), in sys.dm_tran_locks (the holder's GRANT and
//! its WAIT on the same resource) and, once it ends, in the wait statistics of the
//! process and of the session. WAITFOR shows as its own wait; a request's text comes
//! back through its sql_handle and the input buffer; DBCC SQLPERF reports log space and
//! clears the wait statistics; the server-wide views need VIEW SERVER STATE.

mod common;

use common::tds::{connect_as, count, eventually, refused, run, text, Conn};
use common::{TestServer, PASSWORD};

async fn spid(c: &mut Conn) -> i32 {
    count(c, "SELECT CAST(@@SPID AS int)").await
}

/// The rows `sql` answers, every column as text (NULL as "NULL").
async fn rows(c: &mut Conn, sql: &str) -> Vec<Vec<String>> {
    let rows = c.query(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).into_first_result().await.unwrap();
    rows.into_iter()
        .map(|r| {
            (0..r.len())
                .map(|i| {
                    r.try_get::<&str, _>(i)
                        .map(|v| v.map_or("NULL".to_string(), str::to_string))
                        .or_else(|_| r.try_get::<i64, _>(i).map(|v| v.map_or("NULL".into(), |v| v.to_string())))
                        .or_else(|_| r.try_get::<i32, _>(i).map(|v| v.map_or("NULL".into(), |v| v.to_string())))
                        .or_else(|_| r.try_get::<i16, _>(i).map(|v| v.map_or("NULL".into(), |v| v.to_string())))
                        .unwrap_or_else(|_| "?".to_string())
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_blocked_request_names_its_wait_its_blocker_and_the_key() {
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE w").await;
        run(&mut sa, "USE w; CREATE TABLE t (id int PRIMARY KEY, v int); INSERT t VALUES (1, 0), (2, 0)").await;
        let mut holder = connect_as(port, "sa", PASSWORD).await;
        let mut waiter = connect_as(port, "sa", PASSWORD).await;
        let (holder_spid, waiter_spid) = (spid(&mut holder).await, spid(&mut waiter).await);
        run(&mut holder, "USE w; BEGIN TRAN; UPDATE t SET v = v + 1 WHERE id = 1").await;
        run(&mut waiter, "USE w").await;
        let blocked = tokio::spawn(async move {
            run(&mut waiter, "UPDATE t SET v = v + 10 WHERE id = 1").await;
            waiter
        });

        let request = format!("FROM sys.dm_exec_requests WHERE session_id = {waiter_spid}");
        eventually(&mut sa, &format!("SELECT COUNT(*) {request} AND wait_type LIKE 'LCK_M_%'"), 1).await;
        let hobt = text(
            &mut sa,
            "SELECT CAST(p.hobt_id AS varchar(20)) FROM w.sys.partitions p WHERE p.object_id = OBJECT_ID('w.dbo.t') AND p.index_id = 1",
        )
        .await
        .expect("t's clustered index");
        let db = count(&mut sa, "SELECT DB_ID('w')").await;
        let seen = rows(
            &mut sa,
            &format!(
                "SELECT status, command, CAST(blocking_session_id AS int), wait_type, wait_resource, \
                 CAST(database_id AS int), last_wait_type {request}"
            ),
        )
        .await;
        let row = &seen[0];
        assert_eq!(row[0], "suspended", "{row:?}");
        assert_eq!(row[1], "UPDATE", "{row:?}");
        assert_eq!(row[2], holder_spid.to_string(), "{row:?}");
        assert!(row[3] == "LCK_M_U" || row[3] == "LCK_M_X", "{row:?}");
        assert!(row[4].starts_with(&format!("KEY: {db}:{hobt} (")), "{row:?} (hobt {hobt})");
        assert_eq!(row[5], db.to_string());
        assert_eq!(row[6], row[3], "the wait in progress is the last one");
        assert!(count(&mut sa, &format!("SELECT wait_time {request}")).await >= 0);

        // The same key in sys.dm_tran_locks: the holder's X granted, the waiter's request waiting.
        let locks = rows(
            &mut sa,
            &format!(
                "SELECT request_session_id, request_mode, request_status, resource_description, \
                 CAST(resource_associated_entity_id AS varchar(20)), request_owner_type FROM sys.dm_tran_locks \
                 WHERE resource_type = 'KEY' AND resource_database_id = {db} ORDER BY request_status, request_session_id"
            ),
        )
        .await;
        let granted = locks.iter().find(|l| l[0] == holder_spid.to_string() && l[2] == "GRANT").expect("held");
        let waiting = locks.iter().find(|l| l[0] == waiter_spid.to_string() && l[2] == "WAIT").expect("waiting");
        assert_eq!(granted[1], "X");
        assert_eq!(granted[3], waiting[3], "one key: {locks:?}");
        assert_eq!((granted[4].as_str(), granted[5].as_str()), (hobt.as_str(), "TRANSACTION"));
        assert!(row[4].ends_with(&granted[3]), "wait_resource names the locked key: {row:?} {granted:?}");
        let table_lock = format!(
            "SELECT COUNT(*) FROM sys.dm_tran_locks WHERE resource_type = 'OBJECT' AND request_mode = 'IX' \
             AND request_session_id = {holder_spid} AND resource_associated_entity_id = OBJECT_ID('w.dbo.t')"
        );
        assert_eq!(count(&mut sa, &table_lock).await, 1);

        // The request's text through its handle, and the holder's last batch.
        let via_handle = text(
            &mut sa,
            &format!("SELECT s.text FROM sys.dm_exec_requests r CROSS APPLY sys.dm_exec_sql_text(r.sql_handle) s WHERE r.session_id = {waiter_spid}"),
        )
        .await;
        assert_eq!(via_handle.as_deref(), Some("UPDATE t SET v = v + 10 WHERE id = 1"));
        let buffer = rows(&mut sa, &format!("SELECT event_type, event_info FROM sys.dm_exec_input_buffer({holder_spid}, NULL)")).await;
        assert_eq!(buffer, [["Language Event".to_string(), "USE w; BEGIN TRAN; UPDATE t SET v = v + 1 WHERE id = 1".to_string()]]);
        let dbcc = rows(&mut sa, &format!("DBCC INPUTBUFFER({holder_spid})")).await;
        assert_eq!(dbcc[0][2], buffer[0][1]);

        // sp_who and sp_who2 name the blocker too.
        let who = rows(&mut sa, &format!("EXEC sp_who {waiter_spid}")).await;
        assert_eq!((who[0][2].trim(), who[0][5].trim()), ("suspended", holder_spid.to_string().as_str()), "{who:?}");
        let who2 = rows(&mut sa, "EXEC sp_who2").await;
        let blocked_row = who2.iter().find(|r| r[0].trim() == waiter_spid.to_string()).expect("the waiter");
        assert_eq!((blocked_row[1].as_str(), blocked_row[4].trim()), ("suspended", holder_spid.to_string().as_str()));
        assert_eq!(blocked_row[6], "UPDATE");
        let holder_row = who2.iter().find(|r| r[0].trim() == holder_spid.to_string()).expect("the holder");
        assert_eq!((holder_row[1].as_str(), holder_row[4].as_str()), ("sleeping", "  .  "));

        let lock_waits = "SELECT CAST(SUM(waiting_tasks_count) AS int) FROM sys.dm_os_wait_stats WHERE wait_type LIKE 'LCK_M_%'";
        let before = count(&mut sa, lock_waits).await;
        run(&mut holder, "COMMIT").await;
        let mut waiter = blocked.await.unwrap();
        assert_eq!(count(&mut sa, "SELECT v FROM w.dbo.t WHERE id = 1").await, 11);
        assert!(count(&mut sa, lock_waits).await > before, "the ended wait is counted");
        let mine = "SELECT CAST(SUM(waiting_tasks_count) AS int) FROM sys.dm_exec_session_wait_stats \
                    WHERE session_id = @@SPID AND wait_type LIKE 'LCK_M_%'";
        assert_eq!(count(&mut waiter, mine).await, 1, "the waiter's own session counted its one wait");
        assert_eq!(count(&mut sa, &format!("SELECT COUNT(*) {request}")).await, 0, "no request runs now");

        // WAITFOR is a wait of its own; the request shows in the database a USE in its
        // batch moved it to, with what its finished statements read and returned.
        let sleeper_spid = spid(&mut waiter).await;
        run(&mut waiter, "USE master").await;
        let sleeper = tokio::spawn(async move { run(&mut waiter, "USE w; SELECT v FROM t; WAITFOR DELAY '00:00:01'").await });
        eventually(
            &mut sa,
            &format!("SELECT COUNT(*) FROM sys.dm_exec_requests WHERE session_id = {sleeper_spid} AND wait_type = 'WAITFOR' AND command = 'USE' AND database_id = DB_ID('w') \
                 AND logical_reads > 0 AND row_count = 2"),
            1,
        )
        .await;
        sleeper.await.unwrap();

        // Log space, and clearing the wait statistics.
        let logspace = rows(&mut sa, "DBCC SQLPERF(LOGSPACE)").await;
        assert!(logspace.iter().any(|r| r[0] == "w"), "{logspace:?}");
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM w.sys.dm_db_log_space_usage WHERE used_log_space_in_bytes > 0 AND total_log_size_in_bytes >= used_log_space_in_bytes").await, 1);
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM w.sys.dm_db_file_space_usage WHERE total_page_count >= allocated_extent_page_count AND allocated_extent_page_count > 0").await, 1);
        run(&mut sa, "DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)").await;
        assert_eq!(count(&mut sa, "SELECT CAST(SUM(waiting_tasks_count) AS int) FROM sys.dm_os_wait_stats WHERE wait_type = 'WAITFOR'").await, 0);

        // The server-wide views need VIEW SERVER STATE; a session's own waits do not.
        run(&mut sa, "CREATE LOGIN pat WITH PASSWORD = 'Pat-Pass-123'").await;
        let mut pat = connect_as(port, "pat", "Pat-Pass-123").await;
        for view in ["sys.dm_os_wait_stats", "sys.dm_tran_locks"] {
            assert_eq!(refused(&mut pat, &format!("SELECT * FROM {view}")).await.0, 300, "{view}");
        }
        assert_eq!(refused(&mut pat, "DBCC SQLPERF(LOGSPACE)").await.0, 2571);
        assert_eq!(refused(&mut pat, "DBCC ERRORLOG").await.0, 2571);
        assert_eq!(refused(&mut pat, &format!("DBCC INPUTBUFFER({holder_spid})")).await.0, 2571);
        let own = format!("DBCC INPUTBUFFER({})", spid(&mut pat).await);
        assert_eq!(rows(&mut pat, &own).await.len(), 1);
        assert_eq!(count(&mut pat, "SELECT COUNT(*) FROM sys.dm_exec_session_wait_stats WHERE session_id <> @@SPID").await, 0);
    });
}

#[test]
fn open_transactions_show_in_the_transaction_views_and_dbcc_opentran() {
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE tx").await;
        run(&mut sa, "USE tx; CREATE TABLE t (id int PRIMARY KEY, v int); INSERT t VALUES (1, 0), (2, 0)").await;
        assert!(rows(&mut sa, "DBCC OPENTRAN('tx') WITH TABLERESULTS").await.is_empty(), "nothing open");

        let mut writer = connect_as(port, "sa", PASSWORD).await;
        let mut reader = connect_as(port, "sa", PASSWORD).await;
        let (writer_spid, reader_spid) = (spid(&mut writer).await, spid(&mut reader).await);
        run(&mut writer, "USE tx; BEGIN TRAN payroll; UPDATE t SET v = 1 WHERE id = 1; UPDATE t SET v = 2 WHERE id = 1").await;
        // A row the writer does not hold: the reader does not wait.
        run(&mut reader, "USE tx; BEGIN TRAN; SELECT v FROM t WHERE id = 2").await;

        let of = |spid: i32| {
            format!(
                "SELECT a.name, CAST(a.transaction_type AS varchar(4)), CAST(s.is_user_transaction AS varchar(4)), \
                 CAST(d.database_transaction_state AS varchar(4)), CAST(d.database_transaction_log_record_count AS varchar(9)), \
                 CAST(d.database_transaction_begin_lsn AS varchar(30)) \
                 FROM sys.dm_tran_session_transactions s \
                 JOIN sys.dm_tran_active_transactions a ON a.transaction_id = s.transaction_id \
                 JOIN sys.dm_tran_database_transactions d ON d.transaction_id = s.transaction_id \
                 WHERE s.session_id = {spid} AND d.database_id = DB_ID('tx')"
            )
        };
        let w = rows(&mut sa, &of(writer_spid)).await;
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(&w[0][..4], ["payroll", "1", "1", "4"], "{w:?}");
        assert!(w[0][4].parse::<u32>().unwrap() >= 2, "two updates logged: {w:?}");
        assert_ne!(w[0][5], "NULL");
        let r = rows(&mut sa, &of(reader_spid)).await;
        assert_eq!(r, [["user_transaction", "2", "1", "3", "0", "NULL"]], "a reader has logged nothing");

        let oldest = rows(&mut sa, "DBCC OPENTRAN('tx') WITH TABLERESULTS").await;
        let property = |p: &str| oldest.iter().find(|r| r[0] == p).map(|r| r[1].clone()).unwrap_or_default();
        assert_eq!(property("OLDACT_SPID"), writer_spid.to_string(), "{oldest:?}");
        assert_eq!(property("OLDACT_NAME"), "payroll");
        assert!(property("OLDACT_LSN").starts_with('('), "{oldest:?}");
        assert_eq!(property("OLDACT_SID"), "0x01");

        run(&mut writer, "COMMIT").await;
        run(&mut reader, "COMMIT").await;
        assert_eq!(
            count(&mut sa, &format!("SELECT COUNT(*) FROM sys.dm_tran_session_transactions WHERE session_id IN ({writer_spid}, {reader_spid})")).await,
            0
        );
        assert!(rows(&mut sa, "DBCC OPENTRAN('tx') WITH TABLERESULTS").await.is_empty());
    });
}
