//! Hermitage's isolation cases (github.com/ept/hermitage, `sqlserver.md`) over TDS with
//! tiberius, written as this project's own tests: each anomaly at READ COMMITTED with
//! locks, READ COMMITTED SNAPSHOT and SNAPSHOT gives the outcome Hermitage documents for
//! SQL Server — which anomalies each level prevents, where a statement waits for another
//! transaction, and where it fails with an update conflict (3960).
//!
//! A statement that must wait runs in a task of its own; it is checked to be still
//! waiting a moment later (a server that wrongly answered at once fails the check), and
//! its result is read after the transaction it waits for ends.

mod common;

use std::time::Duration;

use common::tds::{connect_to, run, Conn};
use common::{TestServer, PASSWORD};
use tokio::task::JoinHandle;

type Rows = Vec<(i32, i32)>;
/// A statement's rows, or its error number.
type Outcome = Result<Rows, u32>;

/// Runs `sql`: the (id, value) rows it answers, or its error's number.
async fn exec(c: &mut Conn, sql: &str) -> Outcome {
    let results = match c.simple_query(sql).await {
        Ok(stream) => stream.into_results().await,
        Err(e) => Err(e),
    };
    match results {
        Ok(sets) => Ok(sets
            .iter()
            .flatten()
            .map(|r| (r.get::<i32, _>(0).expect("an id"), r.get::<i32, _>(1).expect("a value")))
            .collect()),
        Err(tiberius::error::Error::Server(e)) => Err(e.code()),
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// Runs `sql`, which must answer at once (a guard against a hang: a minute).
async fn now(c: &mut Conn, sql: &str) -> Outcome {
    tokio::time::timeout(Duration::from_secs(60), exec(c, sql)).await.unwrap_or_else(|_| panic!("{sql} waited"))
}

/// Runs `sql` in a task of its own, and checks that it waits (for another transaction).
async fn waits(mut c: Conn, sql: &'static str) -> JoinHandle<(Conn, Outcome)> {
    let task = tokio::spawn(async move {
        let outcome = exec(&mut c, sql).await;
        (c, outcome)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!task.is_finished(), "{sql} should wait for the other transaction");
    task
}

/// The outcome of a statement that waited, once it ends (a minute at most).
async fn after(task: JoinHandle<(Conn, Outcome)>) -> (Conn, Outcome) {
    tokio::time::timeout(Duration::from_secs(60), task).await.expect("the statement ended").expect("the task ran")
}

fn rows(r: &[(i32, i32)]) -> Outcome {
    Ok(r.to_vec())
}

const SETUP: &str = "IF OBJECT_ID('test') IS NOT NULL DROP TABLE test; \
     CREATE TABLE test (id int PRIMARY KEY, value int); INSERT INTO test (id, value) VALUES (1, 10), (2, 20)";

/// Three sessions in `db` at `level`, the table made afresh.
async fn sessions(port: u16, db: &str, level: &str) -> (Conn, Conn, Conn) {
    let mut setup = connect_to(port, "sa", PASSWORD, db).await.unwrap();
    run(&mut setup, SETUP).await;
    let mut out = Vec::new();
    for _ in 0..3 {
        let mut c = connect_to(port, "sa", PASSWORD, db).await.unwrap();
        run(&mut c, &format!("SET TRANSACTION ISOLATION LEVEL {level}")).await;
        out.push(c);
    }
    let mut it = out.into_iter();
    (it.next().unwrap(), it.next().unwrap(), it.next().unwrap())
}

/// G1b: a reader never sees a writer's intermediate value, without waiting for it; after
/// the writer commits, it reads `then`.
async fn g1b(port: u16, db: &str, level: &str, then: &[(i32, i32)]) {
    let (mut t1, mut t2, _) = sessions(port, db, level).await;
    now(&mut t1, "BEGIN TRAN; UPDATE test SET value = 101 WHERE id = 1").await.unwrap();
    assert_eq!(now(&mut t2, "BEGIN TRAN; SELECT * FROM test").await, rows(&[(1, 10), (2, 20)]));
    now(&mut t1, "UPDATE test SET value = 11 WHERE id = 1; COMMIT").await.unwrap();
    assert_eq!(now(&mut t2, "SELECT * FROM test; COMMIT").await, rows(then));
}

/// G1c: two writers each read the row the other changed, and see it as committed.
async fn g1c(port: u16, db: &str, level: &str) {
    let (mut t1, mut t2, _) = sessions(port, db, level).await;
    now(&mut t1, "BEGIN TRAN; UPDATE test SET value = 11 WHERE id = 1").await.unwrap();
    now(&mut t2, "BEGIN TRAN; UPDATE test SET value = 22 WHERE id = 2").await.unwrap();
    assert_eq!(now(&mut t1, "SELECT * FROM test WHERE id = 2").await, rows(&[(2, 20)]));
    assert_eq!(now(&mut t2, "SELECT * FROM test WHERE id = 1").await, rows(&[(1, 10)]));
    now(&mut t1, "COMMIT").await.unwrap();
    now(&mut t2, "COMMIT").await.unwrap();
}

/// OTV's start: T1 changes both rows; T2's update of row 1 waits for it, and T1 commits.
/// T2's update (to be awaited) and the third session.
async fn otv_begin(port: u16, db: &str, level: &str) -> (JoinHandle<(Conn, Outcome)>, Conn) {
    let (mut t1, t2, t3) = sessions(port, db, level).await;
    now(&mut t1, "BEGIN TRAN; UPDATE test SET value = 11 WHERE id = 1; UPDATE test SET value = 19 WHERE id = 2")
        .await
        .unwrap();
    let update = waits(t2, "BEGIN TRAN; UPDATE test SET value = 12 WHERE id = 1").await;
    now(&mut t1, "COMMIT").await.unwrap();
    (update, t3)
}

/// Two transactions that both read a range insert into it: `first` waits for `t2`'s range
/// lock, then `second` for `t1`'s — one of them is the deadlock victim (1205), the other
/// goes in and commits.
async fn one_is_the_victim(t1: Conn, first: &'static str, mut t2: Conn, second: &'static str) {
    let insert = waits(t1, first).await;
    let second = now(&mut t2, second).await;
    let (mut t1, first) = after(insert).await;
    match (first, second) {
        (Ok(_), Err(1205)) => now(&mut t1, "COMMIT").await.unwrap(),
        (Err(1205), Ok(_)) => now(&mut t2, "COMMIT").await.unwrap(),
        other => panic!("one of the two must be the deadlock victim: {other:?}"),
    };
}

fn server_with_databases() -> (TestServer, tokio::runtime::Runtime) {
    let server = TestServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut sa = connect_to(server.port(), "sa", PASSWORD, "master").await.unwrap();
        run(&mut sa, "CREATE DATABASE locking; CREATE DATABASE rcsi; CREATE DATABASE snap").await;
        run(&mut sa, "ALTER DATABASE rcsi SET READ_COMMITTED_SNAPSHOT ON").await;
        run(&mut sa, "ALTER DATABASE snap SET ALLOW_SNAPSHOT_ISOLATION ON").await;
    });
    (server, runtime)
}

#[test]
fn read_committed_with_locks() {
    let (server, runtime) = server_with_databases();
    let port = server.port();
    runtime.block_on(async {
        // G1a, aborted reads: prevented, by waiting for the writer.
        let (mut t1, t2, _) = sessions(port, "locking", "READ COMMITTED").await;
        now(&mut t1, "BEGIN TRAN; UPDATE test SET value = 101 WHERE id = 1").await.unwrap();
        let read = waits(t2, "SELECT * FROM test").await;
        now(&mut t1, "ROLLBACK").await.unwrap();
        assert_eq!(after(read).await.1, rows(&[(1, 10), (2, 20)]));

        // G1b, intermediate reads: prevented, by waiting.
        let (mut t1, t2, _) = sessions(port, "locking", "READ COMMITTED").await;
        now(&mut t1, "BEGIN TRAN; UPDATE test SET value = 101 WHERE id = 1").await.unwrap();
        let read = waits(t2, "SELECT * FROM test").await;
        now(&mut t1, "UPDATE test SET value = 11 WHERE id = 1; COMMIT").await.unwrap();
        assert_eq!(after(read).await.1, rows(&[(1, 11), (2, 20)]));

        // P4, lost update: not prevented (the second update waits, then overwrites).
        let (mut t1, mut t2, _) = sessions(port, "locking", "READ COMMITTED").await;
        now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE id = 1").await.unwrap();
        now(&mut t2, "BEGIN TRAN; SELECT * FROM test WHERE id = 1").await.unwrap();
        now(&mut t1, "UPDATE test SET value = 11 WHERE id = 1").await.unwrap();
        let update = waits(t2, "UPDATE test SET value = 11 WHERE id = 1").await;
        now(&mut t1, "COMMIT").await.unwrap();
        let (mut t2, outcome) = after(update).await;
        assert_eq!(outcome, rows(&[]));
        now(&mut t2, "COMMIT").await.unwrap();
    });
}

#[test]
fn read_committed_snapshot() {
    let (server, runtime) = server_with_databases();
    let port = server.port();
    let level = "READ COMMITTED";
    runtime.block_on(async {
        // G0, write cycles: prevented (writers still wait for writers).
        let (mut t1, t2, mut t3) = sessions(port, "rcsi", level).await;
        now(&mut t1, "BEGIN TRAN; UPDATE test SET value = 11 WHERE id = 1").await.unwrap();
        let update = waits(t2, "BEGIN TRAN; UPDATE test SET value = 12 WHERE id = 1").await;
        now(&mut t1, "UPDATE test SET value = 21 WHERE id = 2; COMMIT").await.unwrap();
        let (mut t2, outcome) = after(update).await;
        outcome.unwrap();
        assert_eq!(now(&mut t3, "SELECT * FROM test").await, rows(&[(1, 11), (2, 21)]));
        now(&mut t2, "UPDATE test SET value = 22 WHERE id = 2; COMMIT").await.unwrap();
        assert_eq!(now(&mut t3, "SELECT * FROM test").await, rows(&[(1, 12), (2, 22)]));

        // G1a, aborted reads: prevented, and the reader does not wait.
        let (mut t1, mut t2, _) = sessions(port, "rcsi", level).await;
        now(&mut t1, "BEGIN TRAN; UPDATE test SET value = 101 WHERE id = 1").await.unwrap();
        assert_eq!(now(&mut t2, "BEGIN TRAN; SELECT * FROM test").await, rows(&[(1, 10), (2, 20)]));
        now(&mut t1, "ROLLBACK").await.unwrap();
        assert_eq!(now(&mut t2, "SELECT * FROM test; COMMIT").await, rows(&[(1, 10), (2, 20)]));

        // G1b, intermediate reads: prevented; each statement sees the newest commit.
        g1b(port, "rcsi", level, &[(1, 11), (2, 20)]).await;

        // G1c, circular information flow: prevented.
        g1c(port, "rcsi", level).await;

        // OTV, observed transaction vanishes: prevented.
        let (update, mut t3) = otv_begin(port, "rcsi", level).await;
        let (mut t2, outcome) = after(update).await;
        outcome.unwrap();
        assert_eq!(now(&mut t3, "BEGIN TRAN; SELECT * FROM test WHERE id = 1").await, rows(&[(1, 11)]));
        now(&mut t2, "UPDATE test SET value = 18 WHERE id = 2").await.unwrap();
        assert_eq!(now(&mut t3, "SELECT * FROM test WHERE id = 2").await, rows(&[(2, 19)]));
        now(&mut t2, "COMMIT").await.unwrap();
        assert_eq!(now(&mut t3, "SELECT * FROM test; COMMIT").await, rows(&[(1, 12), (2, 18)]));

        // PMP, predicate many preceders: not prevented.
        let (mut t1, mut t2, _) = sessions(port, "rcsi", level).await;
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE value = 30").await, rows(&[]));
        now(&mut t2, "INSERT INTO test (id, value) VALUES (3, 30)").await.unwrap();
        assert_eq!(now(&mut t1, "SELECT * FROM test WHERE value % 3 = 0; COMMIT").await, rows(&[(3, 30)]));

        // P4, lost update: not prevented.
        let (mut t1, mut t2, _) = sessions(port, "rcsi", level).await;
        now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE id = 1").await.unwrap();
        now(&mut t2, "BEGIN TRAN; SELECT * FROM test WHERE id = 1").await.unwrap();
        now(&mut t1, "UPDATE test SET value = 11 WHERE id = 1").await.unwrap();
        let update = waits(t2, "UPDATE test SET value = 11 WHERE id = 1").await;
        now(&mut t1, "COMMIT").await.unwrap();
        let (mut t2, outcome) = after(update).await;
        outcome.unwrap();
        now(&mut t2, "COMMIT").await.unwrap();

        // G-single, read skew: not prevented.
        let (mut t1, mut t2, _) = sessions(port, "rcsi", level).await;
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE id = 1").await, rows(&[(1, 10)]));
        now(&mut t2, "BEGIN TRAN; UPDATE test SET value = 12 WHERE id = 1; UPDATE test SET value = 18 WHERE id = 2")
            .await
            .unwrap();
        now(&mut t2, "COMMIT").await.unwrap();
        assert_eq!(now(&mut t1, "SELECT * FROM test WHERE id = 2; COMMIT").await, rows(&[(2, 18)]));
    });
}

#[test]
fn snapshot_isolation() {
    let (server, runtime) = server_with_databases();
    let port = server.port();
    let level = "SNAPSHOT";
    runtime.block_on(async {
        // Refused where the database does not allow it.
        let (mut t1, _, _) = sessions(port, "locking", level).await;
        assert_eq!(now(&mut t1, "SELECT * FROM test").await, Err(3952));

        // G0, write cycles: prevented; the second writer's update conflicts (3960) once
        // the first commits, and its transaction is rolled back.
        let (mut t1, t2, mut t3) = sessions(port, "snap", level).await;
        now(&mut t1, "BEGIN TRAN; UPDATE test SET value = 11 WHERE id = 1").await.unwrap();
        let update = waits(t2, "BEGIN TRAN; UPDATE test SET value = 12 WHERE id = 1").await;
        now(&mut t1, "UPDATE test SET value = 21 WHERE id = 2; COMMIT").await.unwrap();
        let (mut t2, outcome) = after(update).await;
        assert_eq!(outcome, Err(3960));
        assert_eq!(now(&mut t2, "SELECT @@TRANCOUNT, 0").await, rows(&[(0, 0)]), "3960 ends the transaction");
        assert_eq!(now(&mut t3, "SELECT * FROM test").await, rows(&[(1, 11), (2, 21)]));

        // G1a, G1b: prevented; the reader waits for nobody and keeps its snapshot.
        g1b(port, "snap", level, &[(1, 10), (2, 20)]).await;

        // G1c: prevented.
        g1c(port, "snap", level).await;

        // OTV: prevented (the second writer conflicts).
        let (update, mut t3) = otv_begin(port, "snap", level).await;
        assert_eq!(after(update).await.1, Err(3960));
        assert_eq!(now(&mut t3, "SELECT * FROM test").await, rows(&[(1, 11), (2, 19)]));

        // PMP, predicate many preceders: prevented.
        let (mut t1, mut t2, _) = sessions(port, "snap", level).await;
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE value = 30").await, rows(&[]));
        now(&mut t2, "INSERT INTO test (id, value) VALUES (3, 30)").await.unwrap();
        assert_eq!(now(&mut t1, "SELECT * FROM test WHERE value % 3 = 0; COMMIT").await, rows(&[]));

        // P4, lost update: prevented (3960).
        let (mut t1, mut t2, _) = sessions(port, "snap", level).await;
        now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE id = 1").await.unwrap();
        now(&mut t2, "BEGIN TRAN; SELECT * FROM test WHERE id = 1").await.unwrap();
        now(&mut t1, "UPDATE test SET value = 11 WHERE id = 1").await.unwrap();
        let update = waits(t2, "UPDATE test SET value = 11 WHERE id = 1").await;
        now(&mut t1, "COMMIT").await.unwrap();
        assert_eq!(after(update).await.1, Err(3960));

        // G-single, read skew: prevented.
        let (mut t1, mut t2, _) = sessions(port, "snap", level).await;
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE id = 1").await, rows(&[(1, 10)]));
        now(&mut t2, "BEGIN TRAN; UPDATE test SET value = 12 WHERE id = 1; UPDATE test SET value = 18 WHERE id = 2")
            .await
            .unwrap();
        now(&mut t2, "COMMIT").await.unwrap();
        assert_eq!(now(&mut t1, "SELECT * FROM test WHERE id = 2; COMMIT").await, rows(&[(2, 20)]));

        // G2-item, write skew: not prevented (both commit).
        let (mut t1, mut t2, mut t3) = sessions(port, "snap", level).await;
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE id IN (1, 2)").await, rows(&[(1, 10), (2, 20)]));
        assert_eq!(now(&mut t2, "BEGIN TRAN; SELECT * FROM test WHERE id IN (1, 2)").await, rows(&[(1, 10), (2, 20)]));
        now(&mut t1, "UPDATE test SET value = 11 WHERE id = 1").await.unwrap();
        now(&mut t2, "UPDATE test SET value = 21 WHERE id = 2").await.unwrap();
        now(&mut t1, "COMMIT").await.unwrap();
        now(&mut t2, "COMMIT").await.unwrap();
        assert_eq!(now(&mut t3, "SELECT * FROM test").await, rows(&[(1, 11), (2, 21)]));

        // A row deleted after the snapshot is still read, and changing it conflicts.
        let (mut t1, mut t2, _) = sessions(port, "snap", level).await;
        now(&mut t1, "BEGIN TRAN; SELECT * FROM test").await.unwrap();
        now(&mut t2, "DELETE FROM test WHERE id = 2").await.unwrap();
        assert_eq!(now(&mut t1, "SELECT * FROM test").await, rows(&[(1, 10), (2, 20)]));
        assert_eq!(now(&mut t1, "UPDATE test SET value = 0 WHERE id = 2").await, Err(3960));
    });
}

#[test]
fn repeatable_read_and_serializable() {
    let (server, runtime) = server_with_databases();
    let port = server.port();
    runtime.block_on(async {
        // PMP at REPEATABLE READ: not prevented (rows read stay as they were, but a new
        // row may appear).
        let (mut t1, mut t2, _) = sessions(port, "locking", "REPEATABLE READ").await;
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE value = 30").await, rows(&[]));
        now(&mut t2, "INSERT INTO test (id, value) VALUES (3, 30)").await.unwrap();
        assert_eq!(now(&mut t1, "SELECT * FROM test WHERE value % 3 = 0; COMMIT").await, rows(&[(3, 30)]));

        // PMP at SERIALIZABLE: prevented (the insert waits for the reader's range locks).
        let (mut t1, t2, _) = sessions(port, "locking", "SERIALIZABLE").await;
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE value = 30").await, rows(&[]));
        let insert = waits(t2, "INSERT INTO test (id, value) VALUES (3, 30)").await;
        assert_eq!(now(&mut t1, "SELECT * FROM test WHERE value % 3 = 0").await, rows(&[]));
        now(&mut t1, "COMMIT").await.unwrap();
        assert_eq!(after(insert).await.1, rows(&[]));

        // The same read in EXISTS (insert if absent).
        let (mut t1, t2, _) = sessions(port, "locking", "SERIALIZABLE").await;
        assert_eq!(
            now(&mut t1, "BEGIN TRAN; IF NOT EXISTS (SELECT * FROM test WHERE value = 31) SELECT 1, 1").await,
            rows(&[(1, 1)])
        );
        let insert = waits(t2, "INSERT INTO test (id, value) VALUES (7, 31)").await;
        now(&mut t1, "COMMIT").await.unwrap();
        after(insert).await.1.unwrap();

        // An empty range at the end of the index, and one in the middle of it.
        let (mut t1, t2, mut t3) = sessions(port, "locking", "SERIALIZABLE").await;
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE id > 5").await, rows(&[]));
        let insert = waits(t2, "INSERT INTO test (id, value) VALUES (10, 100)").await;
        // Outside the range read: goes in at once.
        now(&mut t3, "INSERT INTO test (id, value) VALUES (-1, 0)").await.unwrap();
        now(&mut t1, "COMMIT").await.unwrap();
        after(insert).await.1.unwrap();
        let (mut t1, t2, _) = sessions(port, "locking", "SERIALIZABLE").await;
        now(&mut t3, "INSERT INTO test (id, value) VALUES (10, 100)").await.unwrap();
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE id BETWEEN 3 AND 9").await, rows(&[]));
        let insert = waits(t2, "INSERT INTO test (id, value) VALUES (5, 50)").await;
        assert_eq!(
            now(&mut t1, "SELECT COUNT(*), 0 FROM test WHERE id BETWEEN 3 AND 9; COMMIT").await,
            rows(&[(0, 0)])
        );
        after(insert).await.1.unwrap();

        // G2, anti-dependency cycles: prevented (two readers of one range each insert
        // into it: one is the deadlock victim, 1205).
        let (mut t1, t2, mut t3) = sessions(port, "locking", "SERIALIZABLE").await;
        assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test WHERE value % 3 = 0").await, rows(&[]));
        let mut t2 = t2;
        assert_eq!(now(&mut t2, "BEGIN TRAN; SELECT * FROM test WHERE value % 3 = 0").await, rows(&[]));
        one_is_the_victim(t1, "INSERT INTO test (id, value) VALUES (3, 30)", t2, "INSERT INTO test (id, value) VALUES (4, 42)").await;
        assert_eq!(now(&mut t3, "SELECT COUNT(*), 0 FROM test WHERE id IN (3, 4)").await, rows(&[(1, 0)]));

        // The same through a non-unique index: two "insert if absent" of one value.
        run(&mut t3, "CREATE TABLE ti (id int IDENTITY PRIMARY KEY, k int NOT NULL, INDEX by_k (k)); INSERT ti (k) VALUES (1), (9)")
            .await;
        let (mut t1, mut t2, mut t3) = sessions(port, "locking", "SERIALIZABLE").await;
        let absent = "BEGIN TRAN; IF NOT EXISTS (SELECT * FROM ti WHERE k = 5) SELECT 1, 1";
        assert_eq!(now(&mut t1, absent).await, rows(&[(1, 1)]));
        assert_eq!(now(&mut t2, absent).await, rows(&[(1, 1)]));
        one_is_the_victim(t1, "INSERT ti (k) VALUES (5)", t2, "INSERT ti (k) VALUES (5)").await;
        assert_eq!(now(&mut t3, "SELECT COUNT(*), 0 FROM ti WHERE k = 5").await, rows(&[(1, 0)]));

        // The key above a range read is another transaction's uncommitted insert: the
        // reader waits for it (a rollback would take it away and merge the ranges), then
        // locks the range up to the key that is really next.
        run(&mut t3, "DELETE ti WHERE k = 5").await;
        let (mut t1, t2, t3) = sessions(port, "locking", "SERIALIZABLE").await;
        now(&mut t1, "BEGIN TRAN; INSERT ti (k) VALUES (6)").await.unwrap();
        let read = waits(t2, "BEGIN TRAN; SELECT id, k FROM ti WHERE k = 5").await;
        now(&mut t1, "ROLLBACK").await.unwrap();
        let (mut t2, outcome) = after(read).await;
        assert_eq!(outcome, rows(&[]));
        let insert = waits(t3, "INSERT ti (k) VALUES (5)").await;
        now(&mut t2, "COMMIT").await.unwrap();
        after(insert).await.1.unwrap();
    });
}

/// Definitions are not versioned: a SNAPSHOT transaction may not use a table that a
/// transaction committed after its snapshot redefined (ALTER TABLE, TRUNCATE, an index):
/// 3961, which ends it. Tables not redefined, transactions that begin after the DDL,
/// READ COMMITTED SNAPSHOT statements and DDL that rolled back are unaffected.
#[test]
fn snapshot_transactions_refuse_tables_redefined_since() {
    let (server, runtime) = server_with_databases();
    let port = server.port();
    runtime.block_on(async {
        for ddl in ["ALTER TABLE test ADD extra int", "TRUNCATE TABLE test", "CREATE INDEX ix_value ON test (value)"] {
            let (mut t1, _, mut ddl_session) = sessions(port, "snap", "SNAPSHOT").await;
            run(&mut ddl_session, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED").await;
            run(
                &mut ddl_session,
                "IF OBJECT_ID('other') IS NULL CREATE TABLE other (id int PRIMARY KEY, value int); \
                 DELETE FROM other; INSERT INTO other VALUES (7, 70)",
            )
            .await;
            assert_eq!(now(&mut t1, "BEGIN TRAN; SELECT * FROM test").await, rows(&[(1, 10), (2, 20)]));
            now(&mut ddl_session, ddl).await.unwrap();
            assert_eq!(now(&mut t1, "SELECT id, value FROM other").await, rows(&[(7, 70)]), "{ddl}");
            assert_eq!(now(&mut t1, "SELECT id, value FROM test").await, Err(3961), "{ddl}");
            assert_eq!(now(&mut t1, "SELECT @@TRANCOUNT, 0").await, rows(&[(0, 0)]), "3961 ends the transaction");
            // A transaction that begins after the DDL uses the new definition.
            now(&mut t1, "BEGIN TRAN; SELECT id, value FROM test; COMMIT").await.unwrap();
        }

        // DDL that rolled back leaves the table usable.
        let (mut t1, _, mut ddl_session) = sessions(port, "snap", "SNAPSHOT").await;
        run(&mut ddl_session, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED").await;
        now(&mut t1, "BEGIN TRAN; SELECT * FROM test").await.unwrap();
        now(&mut ddl_session, "BEGIN TRAN; ALTER TABLE test ADD extra int; ROLLBACK").await.unwrap();
        assert_eq!(now(&mut t1, "SELECT * FROM test; COMMIT").await, rows(&[(1, 10), (2, 20)]));

        // READ COMMITTED SNAPSHOT takes a snapshot per statement: the next one sees the
        // new definition.
        let (mut t1, _, mut ddl_session) = sessions(port, "rcsi", "READ COMMITTED").await;
        now(&mut t1, "BEGIN TRAN; SELECT * FROM test").await.unwrap();
        now(&mut ddl_session, "ALTER TABLE test ADD extra int").await.unwrap();
        assert_eq!(now(&mut t1, "SELECT id, value FROM test; COMMIT").await, rows(&[(1, 10), (2, 20)]));
    });
}
