//! Per-file I/O statistics over TDS: sys.dm_io_virtual_file_stats counts the writes of a
//! database's data file and log as rows are written and checkpointed, and the data file's
//! reads once the buffer pool has been emptied; its arguments filter by database and
//! file; a closed database has no rows and starts counting again when it reopens; it
//! needs VIEW SERVER STATE.

mod common;

use common::tds::{connect_as, count, eventually, refused, run, Conn};
use common::{TestServer, PASSWORD};

/// A file's counters as the function shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct File {
    reads: i64,
    bytes_read: i64,
    stall_read_ms: i64,
    writes: i64,
    bytes_written: i64,
    stall_write_ms: i64,
    stall_ms: i64,
    size: i64,
}

/// The rows of `sys.dm_io_virtual_file_stats(<args>)`, as (database_id, file_id, counters),
/// in the function's order.
async fn files(c: &mut Conn, args: &str) -> Vec<(i16, i16, File)> {
    let sql = format!(
        "SELECT database_id, file_id, num_of_reads, num_of_bytes_read, io_stall_read_ms, num_of_writes, \
         num_of_bytes_written, io_stall_write_ms, io_stall, size_on_disk_bytes FROM sys.dm_io_virtual_file_stats({args})"
    );
    let rows = c.query(&sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).into_first_result().await.unwrap();
    rows.iter()
        .map(|r| {
            let n = |i: usize| r.get::<i64, _>(i).unwrap_or_else(|| panic!("{sql}: column {i} is NULL"));
            let file = File {
                reads: n(2),
                bytes_read: n(3),
                stall_read_ms: n(4),
                writes: n(5),
                bytes_written: n(6),
                stall_write_ms: n(7),
                stall_ms: n(8),
                size: n(9),
            };
            (r.get::<i16, _>(0).unwrap(), r.get::<i16, _>(1).unwrap(), file)
        })
        .collect()
}

/// The data file's and the log's counters of database `db`.
async fn both(c: &mut Conn, db: i32) -> (File, File) {
    let rows = files(c, &format!("{db}, NULL")).await;
    let ids: Vec<_> = rows.iter().map(|&(d, f, _)| (i32::from(d), f)).collect();
    assert_eq!(ids, [(db, 1), (db, 2)], "the data file, then the log");
    (rows[0].2, rows[1].2)
}

#[test]
fn file_stats_count_each_files_reads_and_writes() {
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE io").await;
        run(&mut sa, "USE io; CREATE TABLE t (id int PRIMARY KEY, v char(200))").await;
        let db = count(&mut sa, "SELECT DB_ID('io')").await;
        let (data0, log0) = both(&mut sa, db).await;
        assert!(data0.writes > 0 && log0.writes > 0, "creating the files wrote them: {data0:?} {log0:?}");

        run(&mut sa, "INSERT t SELECT value, REPLICATE('x', 200) FROM GENERATE_SERIES(1, 2000)").await;
        run(&mut sa, "CHECKPOINT").await;
        run(&mut sa, "DBCC DROPCLEANBUFFERS").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM t WHERE v = REPLICATE('x', 200)").await, 2000);
        let (data, log) = both(&mut sa, db).await;
        assert!(data.writes > data0.writes, "the checkpoint wrote pages: {data0:?} → {data:?}");
        assert!(data.bytes_written >= data0.bytes_written + 2000 * 200, "{data0:?} → {data:?}");
        assert!(log.writes > log0.writes, "{log0:?} → {log:?}");
        assert!(log.bytes_written >= log0.bytes_written + 2000 * 200, "the rows are in the log: {log0:?} → {log:?}");
        assert!(data.reads > data0.reads, "the scan read the pages back: {data0:?} → {data:?}");
        assert!(data.bytes_read >= data0.bytes_read + 2000 * 200, "{data0:?} → {data:?}");
        assert_eq!(data.bytes_read % 8192, 0, "the data file is read in whole pages");
        for f in [data, log] {
            assert_eq!(f.stall_ms, f.stall_read_ms + f.stall_write_ms, "{f:?}");
            assert!(f.size > 0);
        }
        assert_eq!(data.size % 8192, 0);

        // The arguments: NULL is every database (file); a database or a file names its own.
        let all = files(&mut sa, "NULL, NULL").await;
        assert!(all.iter().filter(|&&(d, ..)| i32::from(d) == db).count() == 2, "{all:?}");
        assert!(all.iter().any(|&(d, f, _)| d == 1 && f == 2), "master's log: {all:?}");
        assert!(all.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)), "ordered, each file once: {all:?}");
        let logs = files(&mut sa, "DB_ID('io'), 2").await;
        assert_eq!(logs.iter().map(|&(d, f, _)| (i32::from(d), f)).collect::<Vec<_>>(), [(db, 2)]);
        assert!(files(&mut sa, "NULL, 1").await.iter().all(|&(_, f, _)| f == 1));
        assert!(files(&mut sa, &format!("{db}, 3")).await.is_empty(), "no third file");
        assert!(files(&mut sa, "32000, NULL").await.is_empty(), "no such database");
        let columns = "SELECT COUNT(*) FROM sys.dm_io_virtual_file_stats(DB_ID(), NULL) \
                       WHERE sample_ms > 0 AND DATALENGTH(file_handle) = 8 \
                       AND io_stall_queued_read_ms = 0 AND io_stall_queued_write_ms = 0";
        assert_eq!(count(&mut sa, columns).await, 2);
        assert_eq!(refused(&mut sa, "SELECT * FROM sys.dm_io_virtual_file_stats(NULL)").await.0, 313);

        // Without VIEW SERVER STATE, 300; with it, the rows.
        run(&mut sa, "USE master; CREATE LOGIN pat WITH PASSWORD = 'Pat-Pass-123'").await;
        let mut pat = connect_as(port, "pat", "Pat-Pass-123").await;
        let of_io = format!("SELECT COUNT(*) FROM sys.dm_io_virtual_file_stats({db}, NULL)");
        assert_eq!(refused(&mut pat, &of_io).await.0, 300);
        run(&mut sa, "GRANT VIEW SERVER STATE TO pat").await;
        assert_eq!(count(&mut pat, &of_io).await, 2);

        // A closed database has no rows; reopened, it counts from zero again.
        run(&mut sa, "EXEC sp_configure 'show advanced options', 1; RECONFIGURE").await;
        run(&mut sa, "EXEC sp_configure 'idle database close (s)', 1; RECONFIGURE").await;
        eventually(&mut sa, &of_io, 0).await;
        run(&mut sa, "EXEC sp_configure 'idle database close (s)', 300; RECONFIGURE").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM io.dbo.t").await, 2000);
        let (data, log_again) = both(&mut sa, db).await;
        assert!(data.reads > 0, "opening reads the data file: {data:?}");
        assert!(log_again.bytes_written < 2000 * 200, "the log's counters started again: {log_again:?}");
    });
}
