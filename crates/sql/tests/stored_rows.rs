//! Rows handed over as they are stored: a query whose result columns are columns of one
//! table, read at READ COMMITTED by a seek or scan (a filter inside it, a TOP over it, a
//! sort its index delivers), reaches a sink that takes stored rows through
//! `stored_row`; any other query through `row`. Both give the same rows, row counts and
//! SET STATISTICS IO messages.

use tessera_database::{Engine, EngineConfig};
use tessera_semantics::output::{Command, OutputColumn, ResultSink, StoredRow};
use tessera_semantics::types::Value;
use tessera_sql::{Session, SqlError};

/// What a batch gave, and through which path its rows came.
#[derive(Default, Debug, PartialEq)]
struct Seen {
    rows: Vec<Vec<Value>>,
    counts: Vec<Option<u64>>,
    messages: Vec<String>,
    stored: usize,
    values: usize,
}

/// A sink that takes stored rows (as the TDS server's does) or only values.
struct Sink {
    takes_stored: bool,
    seen: Seen,
}

impl ResultSink for Sink {
    fn columns(&mut self, _: &[OutputColumn]) {}
    fn row(&mut self, row: &[Value]) {
        self.seen.values += 1;
        self.seen.rows.push(row.to_vec());
    }
    fn takes_stored_rows(&self) -> bool {
        self.takes_stored
    }
    fn stored_row(&mut self, row: &StoredRow<'_>) {
        self.seen.stored += 1;
        self.seen.rows.push(row.values());
    }
    fn done(&mut self, count: Option<u64>, _: Command) {
        self.seen.counts.push(count);
    }
    fn message(&mut self, m: &SqlError) {
        self.seen.messages.push(format!("{} {}", m.number, m.message));
    }
}

fn session(dir: &std::path::Path) -> Session {
    let shared = tessera_sql::start_instance(Engine::open(EngineConfig::new(dir)).unwrap()).unwrap();
    Session::new(shared, "sa", "master").unwrap()
}

fn run(session: &mut Session, text: &str, takes_stored: bool) -> Seen {
    let mut sink = Sink { takes_stored, seen: Seen::default() };
    let failed = session.execute(text, &mut sink);
    assert!(!failed, "{text}: {:?}", sink.seen.messages);
    sink.seen
}

#[test]
fn column_queries_hand_over_stored_rows_and_others_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    run(
        &mut s,
        "CREATE DATABASE st; USE st;
         CREATE TABLE t (id int PRIMARY KEY, a varchar(20) NULL, n nvarchar(10) NULL, m money NULL,
                         d decimal(9, 2) NULL, k int NOT NULL, at datetime NULL, g uniqueidentifier NULL,
                         b varbinary(8) NULL, c char(3) NULL);
         CREATE INDEX t_k ON t (k);",
        false,
    );
    for i in 1..=600 {
        let text = if i % 7 == 0 {
            format!("INSERT INTO t (id, k) VALUES ({i}, {})", i % 50)
        } else {
            format!(
                "INSERT INTO t VALUES ({i}, 'caf{}{i}', N'\u{1f600}{i}', {i}.1234, -{i}.5, {}, \
                 DATEADD(minute, {i}, '2024-02-29T10:00:00'), NEWID(), 0x{i:04X}, 'x')",
                if i % 2 == 0 { "\u{e9}" } else { "e" },
                i % 50,
            )
        };
        run(&mut s, &text, false);
    }

    let stored = [
        "SELECT * FROM t",
        "SELECT a, id, a FROM t WHERE id = 14",
        "SELECT n FROM t WHERE id = 700",
        "SELECT m, d FROM t WHERE id BETWEEN 90 AND 120",
        "SELECT TOP (5) n, k FROM t WHERE k > 40",
        "SELECT TOP (0) n FROM t",
        "SELECT id, at FROM t WHERE a LIKE 'caf\u{e9}%' AND k < 10",
        "SELECT id, k FROM t WHERE k = 7",
        "SELECT id, a FROM t ORDER BY id",
        "SELECT TOP (4) id, c FROM t WHERE id < 300 ORDER BY id DESC",
        "SELECT k, id FROM t WHERE k > 45 ORDER BY k DESC",
        "SELECT k, id FROM t WHERE k = 9 ORDER BY k DESC, id DESC",
        "SELECT id FROM t WHERE k BETWEEN 3 AND 5 ORDER BY k, id",
        "SELECT g, b, c FROM t WHERE id = 21 AND k = 21",
        "SET ROWCOUNT 3; SELECT d FROM t WHERE id > 500; SET ROWCOUNT 0",
    ];
    for q in stored {
        let (by_stored, by_values) = (run(&mut s, q, true), run(&mut s, q, false));
        assert!(by_stored.values == 0, "{q}: {} rows came as values", by_stored.values);
        assert_eq!(by_values.stored, 0, "{q}");
        assert_eq!(by_stored.rows, by_values.rows, "{q}");
        assert_eq!(by_stored.counts, by_values.counts, "{q}");
    }
    assert_eq!(run(&mut s, "SELECT * FROM t", true).stored, 600);
    assert_eq!(run(&mut s, "SELECT TOP (5) n, k FROM t WHERE k > 40", true).stored, 5);

    let values = [
        "SELECT id + 1 FROM t WHERE id < 5",
        "SELECT * FROM t WITH (HOLDLOCK) WHERE id < 5",
        "SELECT id FROM t WITH (NOLOCK) WHERE id < 4",
        "SELECT a FROM t ORDER BY a",
        "SELECT TOP (10) PERCENT id FROM t",
        "SELECT DISTINCT k FROM t",
        "SELECT t.id FROM t JOIN t AS u ON u.id = t.k",
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; SELECT id FROM t WHERE id = 3; \
         SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
    ];
    for q in values {
        let seen = run(&mut s, q, true);
        assert_eq!(seen.stored, 0, "{q}");
        assert!(seen.values > 0, "{q}");
    }

    // SET STATISTICS IO counts the same reads either way.
    for q in ["SELECT n FROM t WHERE k = 3", "SELECT * FROM t WHERE id = 5", "SELECT a FROM t"] {
        let io = format!("SET STATISTICS IO ON; {q}; SET STATISTICS IO OFF");
        let (by_stored, by_values) = (run(&mut s, &io, true), run(&mut s, &io, false));
        assert!(by_stored.stored > 0, "{q}");
        assert_eq!(by_stored.messages, by_values.messages, "{q}");
        assert!(by_stored.messages.iter().any(|m| m.contains("logical reads")), "{q}: {:?}", by_stored.messages);
    }

    // A column's type changed after its query ran: the rows come in the new type.
    let q = "SELECT d FROM t WHERE id = 1";
    assert_eq!(run(&mut s, q, true).rows, vec![vec![Value::Decimal { value: -150, scale: 2 }]]);
    run(&mut s, "ALTER TABLE t ALTER COLUMN d decimal(12, 4) NULL", false);
    let after = run(&mut s, q, true);
    assert_eq!(after.rows, vec![vec![Value::Decimal { value: -15_000, scale: 4 }]]);
    assert_eq!(after.stored, 1);
}

/// A table with (max) columns keeps the stored-row path for rows whose values are all in
/// the row; a row that keeps one off the row comes as values, read whole, in its place.
#[test]
fn rows_with_values_off_the_row_come_as_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    run(
        &mut s,
        "CREATE DATABASE lv; USE lv;
         CREATE TABLE d (id int PRIMARY KEY, body varchar(max) NULL, note nvarchar(100) NULL);
         INSERT d VALUES (1, 'small', N'a'), (2, REPLICATE(CAST('x' AS varchar(max)), 9000), N'b'), (3, NULL, N'c');",
        false,
    );
    for q in ["SELECT id, body, note FROM d", "SELECT body FROM d WHERE id = 2", "SELECT note, id FROM d WHERE id > 1"]
    {
        let (by_stored, by_values) = (run(&mut s, q, true), run(&mut s, q, false));
        assert_eq!(by_stored.rows, by_values.rows, "{q}");
        assert_eq!(by_stored.counts, by_values.counts, "{q}");
    }
    let all = run(&mut s, "SELECT id, body FROM d", true);
    assert_eq!((all.stored, all.values), (2, 1), "only the row with a value off the row comes as values");
    assert_eq!(all.rows[1][1], Value::str(&"x".repeat(9000)));
}
