//! DDL that goes with its transaction survives a crash as the transaction does (issue 34):
//! a table dropped, one truncated and given an index, and a table, a schema and a procedure created
//! by a transaction still open when the server is killed are, after the restart, as they
//! were before it; a committed DROP TABLE stays done.

use std::time::{Duration, Instant};

mod common;

use common::start;

#[test]
fn ddl_of_a_transaction_killed_open_is_undone_and_a_committed_drop_stays_done() {
    let server = start();
    server.sql(
        "CREATE DATABASE d; \
         EXEC ('USE d; CREATE TABLE kept (a int PRIMARY KEY, b varchar(20)); \
                INSERT kept VALUES (1, ''one''), (2, ''two''), (3, ''three''); \
                CREATE TABLE gone (a int); INSERT gone VALUES (1); \
                DROP TABLE gone; \
                CREATE TABLE trunc (a int); INSERT trunc VALUES (1), (2);')",
    );
    // A transaction drops `kept` and creates `fresh`, then waits: the server dies with it open.
    let mut open = server.sql_in_background(
        "USE d; BEGIN TRAN; DROP TABLE kept; TRUNCATE TABLE trunc; CREATE INDEX ix ON trunc (a); \
         CREATE TABLE fresh (x int); INSERT fresh VALUES (1); EXEC ('CREATE SCHEMA s_fresh'); \
         EXEC ('CREATE PROCEDURE p_fresh AS SELECT 1'); \
         WAITFOR DELAY '00:01:00'; COMMIT;",
    );
    // Uncommitted DDL shows in the catalog at once: wait for it to be there.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !server.sql("SELECT OBJECT_ID('d.dbo.p_fresh')").lines().any(|l| l.trim().parse::<i64>().is_ok()) {
        assert!(Instant::now() < deadline, "the open transaction never created its table");
        std::thread::sleep(Duration::from_millis(100));
    }
    let server = server.kill_and_restart();
    let _ = open.kill();
    let _ = open.wait();
    let after = server.sql(
        "USE d; SELECT COUNT(*), MAX(b) FROM kept; \
         SELECT ISNULL(OBJECT_ID('fresh'), -1), ISNULL(OBJECT_ID('p_fresh'), -1), ISNULL(OBJECT_ID('gone'), -1), \
                (SELECT COUNT(*) FROM sys.schemas WHERE name = 's_fresh'); \
         SELECT COUNT(*), (SELECT COUNT(*) FROM sys.indexes WHERE name = 'ix') FROM trunc;",
    );
    let rows: Vec<&str> = after
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('(') && !l.starts_with("Changed database context"))
        .collect();
    assert_eq!(rows, ["3 two", "-1 -1 -1 0", "2 0"], "{after}");
    // The database works on, and the names are free.
    let again = server
        .sql("USE d; CREATE TABLE fresh (x int); INSERT fresh VALUES (5); DROP TABLE kept; SELECT SUM(x) FROM fresh;");
    assert!(again.lines().any(|l| l.trim() == "5"), "{again}");
}
