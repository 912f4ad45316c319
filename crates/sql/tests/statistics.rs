//! SET STATISTICS TIME (whose numbers no golden file can hold), SET STATISTICS IO from a
//! cold cache (physical and read-ahead reads), and SET SHOWPLAN_TEXT's result sets as a
//! client receives them.

use tessera_database::{Engine, EngineConfig};
use tessera_semantics::types::Value;
use tessera_sql::{Collected, Session, SqlError};

fn session() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 64 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine).unwrap();
    let s = Session::new(shared, "sa", "master").unwrap();
    (dir, s)
}

fn run(s: &mut Session, sql: &str) -> Collected {
    let mut out = Collected::default();
    assert!(!s.execute(sql, &mut out), "{sql}: {:?}", out.errors());
    out
}

/// Digits replaced by `N` (a run of them by one), to compare a message's shape.
fn masked(m: &SqlError) -> String {
    let mut out = String::new();
    for c in m.message.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('N') {
                out.push('N');
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn statistics_time_reports_compile_and_execution_times_as_sql_server_does() {
    let (_dir, mut s) = session();
    run(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 10), (2, 20);");
    let out = run(&mut s, "SET STATISTICS TIME ON;");
    assert!(out.messages.is_empty(), "the batch that turns it on is not timed: {:?}", out.messages);
    let out = run(&mut s, "SELECT v FROM t WHERE id = 2; PRINT 'between'; UPDATE t SET v = 0 WHERE id = 1;");
    let shapes: Vec<(i32, u8, String)> = out.messages.iter().map(|m| (m.number, m.severity, masked(m))).collect();
    let compile =
        (3613, 0, "SQL Server parse and compile time: \n   CPU time = N ms, elapsed time = N ms.".to_string());
    let execution = (3612, 0, " SQL Server Execution Times:\n   CPU time = N ms,  elapsed time = N ms.".to_string());
    assert_eq!(
        shapes,
        [compile.clone(), execution.clone(), (0, 0, "between".to_string()), execution.clone()],
        "compile time first, then each query's and data change's execution times after it"
    );
    assert_eq!(out.result_sets[0].1, [vec![Value::Int(20)]]);
    // The batch that turns it off still reports its compile time, as SQL Server does.
    let out = run(&mut s, "SET STATISTICS TIME OFF;");
    assert_eq!(out.messages.iter().map(|m| (m.number, m.severity, masked(m))).collect::<Vec<_>>(), [compile]);
    let out = run(&mut s, "SELECT v FROM t WHERE id = 2;");
    assert!(out.messages.is_empty());
}

/// (scans, logical, physical, read-ahead) from a message 3615 for `table`.
fn io_counts(out: &Collected, table: &str) -> (u64, u64, u64, u64) {
    let prefix = format!("Table '{table}'. ");
    let m = out
        .messages
        .iter()
        .find(|m| m.number == 3615 && m.message.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no message for {table}: {:?}", out.messages));
    assert_eq!(m.severity, 0);
    let field = |name: &str| -> u64 {
        let at = m.message.find(&format!(" {name} ")).unwrap_or_else(|| panic!("{name} in {}", m.message));
        let rest = &m.message[at + name.len() + 2..];
        rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap()].parse().unwrap()
    };
    (field("Scan count"), field("logical reads"), field("physical reads"), field("read-ahead reads"))
}

#[test]
fn statistics_io_counts_pages_read_from_disk_and_read_ahead_on_a_cold_cache() {
    let (_dir, mut s) = session();
    run(
        &mut s,
        "CREATE TABLE big (id int PRIMARY KEY, pad char(1000));
         DECLARE @i int = 1;
         SET NOCOUNT ON;
         WHILE @i <= 2000 BEGIN INSERT INTO big VALUES (@i, 'x'); SET @i += 1; END;",
    );
    run(&mut s, "CHECKPOINT; DBCC DROPCLEANBUFFERS; SET STATISTICS IO ON;");
    let cold = run(&mut s, "SELECT COUNT(*) AS n FROM big;");
    assert_eq!(cold.result_sets[0].1, [vec![Value::Int(2000)]]);
    let (scans, logical, physical, read_ahead) = io_counts(&cold, "big");
    assert_eq!(scans, 1);
    // About 7 rows of 1 KiB to a page: some 290 leaves, every one read from disk once,
    // by the scan itself or ahead of it.
    assert!(logical > 250, "{logical}");
    assert!(physical + read_ahead >= 250, "physical {physical}, read-ahead {read_ahead}");
    assert!(physical + read_ahead <= logical + 128, "physical {physical}, read-ahead {read_ahead}");
    assert!(read_ahead > 0, "the scan asked for its leaves ahead");
    let warm = run(&mut s, "SELECT COUNT(*) AS n FROM big;");
    assert_eq!(io_counts(&warm, "big"), (1, logical, 0, 0), "the same pages, all cached now");
    // A point seek: root, maybe an inner page, a leaf; no scan.
    let seek = run(&mut s, "SELECT pad FROM big WHERE id = 1234;");
    let (scans, logical, physical, read_ahead) = io_counts(&seek, "big");
    assert_eq!((scans, physical, read_ahead), (0, 0, 0));
    assert!((2..=3).contains(&logical), "{logical}");
    run(&mut s, "SET STATISTICS IO OFF;");
    let off = run(&mut s, "SELECT COUNT(*) AS n FROM big;");
    assert!(off.messages.is_empty());
}

#[test]
fn showplan_text_returns_the_statement_then_its_plan_and_runs_nothing() {
    let (_dir, mut s) = session();
    run(&mut s, "CREATE TABLE t (id int CONSTRAINT pk_t PRIMARY KEY, v int);");
    let on = run(&mut s, "SET SHOWPLAN_TEXT ON");
    assert!(on.result_sets.is_empty());
    let out = run(&mut s, "INSERT INTO t VALUES (1, 2);\nSELECT v FROM t WHERE id = 1;");
    let sets: Vec<(Vec<String>, Vec<Vec<Value>>)> =
        out.result_sets.iter().map(|(c, rows)| (c.iter().map(|c| c.name.clone()).collect(), rows.clone())).collect();
    let text = |s: &str| vec![Value::str(s)];
    assert_eq!(
        sets,
        [
            (vec!["StmtText".to_string()], vec![text("INSERT INTO t VALUES (1, 2);")]),
            (
                vec!["StmtText".to_string()],
                vec![text("  |--Clustered Index Insert(OBJECT:([master].[dbo].[t].[pk_t]), SET:([master].[dbo].[t].[id] = (1),[master].[dbo].[t].[v] = (2)))")]
            ),
            (vec!["StmtText".to_string()], vec![text("SELECT v FROM t WHERE id = 1;")]),
            (
                vec!["StmtText".to_string()],
                vec![text("  |--Clustered Index Seek(OBJECT:([master].[dbo].[t].[pk_t]), SEEK:([master].[dbo].[t].[id]=(1)) ORDERED FORWARD)")]
            ),
        ]
    );
    assert_eq!(out.result_sets[0].0[0].ty, tessera_semantics::types::SqlType::NVarChar(tessera_access::row::MAX));
    // Not alone in its batch: error 1067, and nothing of the batch runs.
    let mut bad = Collected::default();
    assert!(s.execute("SET SHOWPLAN_TEXT OFF; SELECT 1;", &mut bad));
    assert_eq!((bad.errors()[0].number, bad.errors()[0].severity), (1067, 15));
    assert!(bad.result_sets.is_empty());
    run(&mut s, "SET SHOWPLAN_TEXT OFF");
    let out = run(&mut s, "SELECT COUNT(*) FROM t;");
    assert_eq!(out.result_sets[0].1, [vec![Value::Int(0)]], "the INSERT was shown, not run");
}
