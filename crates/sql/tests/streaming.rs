//! Streaming execution: rows reach the client as the plan produces them, TOP, EXISTS,
//! IN, OFFSET/FETCH and SET ROWCOUNT stop reading early, and operators that hold their
//! input work within the statement's memory grant (error 701 past it, the session goes
//! on). Page counts come from the buffer pool's fetch counters, in one session.

use tessera_database::{Engine, EngineConfig};
use tessera_semantics::output::{Command, OutputColumn, ResultSink};
use tessera_semantics::types::Value;
use tessera_sql::{Collected, Session, SqlError};

const ROWS: usize = 40_000;

fn run(session: &mut Session, text: &str) -> Collected {
    let mut out = Collected::default();
    let failed = session.execute(text, &mut out);
    assert!(!failed, "{text}: {:?}", out.errors());
    out
}

/// Pages fetched from the buffer pool while `text` runs.
fn pages_read(engine: &Engine, session: &mut Session, text: &str) -> u64 {
    let before = engine.stats().pool;
    run(session, text);
    let after = engine.stats().pool;
    (after.hits + after.misses) - (before.hits + before.misses)
}

/// Records the order in which rows and errors arrive.
#[derive(Default)]
struct Arrivals(Vec<String>);

impl ResultSink for Arrivals {
    fn columns(&mut self, _: &[OutputColumn]) {}
    fn row(&mut self, row: &[Value]) {
        self.0.push(format!("row {:?}", row[0]));
    }
    fn done(&mut self, _: Option<u64>, _: Command) {}
    fn message(&mut self, m: &SqlError) {
        self.0.push(format!("error {}", m.number));
    }
}

#[test]
fn rows_stream_early_stops_and_memory_grants() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 128 << 20;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine.clone()).unwrap();
    let mut s = Session::new(shared.clone(), "sa", "master").unwrap();
    run(&mut s, "CREATE DATABASE stream; USE stream; CREATE TABLE big (id int PRIMARY KEY, pad char(1000) NOT NULL)");
    for chunk in 0..ROWS / 1000 {
        let values: Vec<String> = (0..1000).map(|i| format!("({}, 'x')", chunk * 1000 + i)).collect();
        run(&mut s, &format!("INSERT INTO big VALUES {}", values.join(", ")));
    }

    // A full scan touches every leaf (~8 rows of 1 KB per page); these stop at once.
    let full = pages_read(&engine, &mut s, "SELECT COUNT(*) FROM big");
    assert!(full >= (ROWS / 8) as u64, "{full} pages for a full scan");
    for early in [
        "SELECT TOP 3 id FROM big",
        "SET ROWCOUNT 3; SELECT id, pad FROM big; SET ROWCOUNT 0",
        "SELECT id FROM big ORDER BY id OFFSET 10 ROWS FETCH NEXT 5 ROWS ONLY",
        "SELECT CASE WHEN EXISTS (SELECT * FROM big WHERE pad = 'x') THEN 1 ELSE 0 END",
        "SELECT COUNT(*) FROM (VALUES (1), (2)) v(n) WHERE EXISTS (SELECT * FROM big b WHERE b.id >= v.n)",
        "SELECT CASE WHEN 5 IN (SELECT id FROM big) THEN 1 ELSE 0 END",
        "SELECT TOP 3 id, pad FROM big ORDER BY id DESC",
        "SELECT MAX(id) FROM big",
        "SELECT MIN(id) FROM big WHERE id > 100",
        "SELECT id FROM big WHERE id < 30000 ORDER BY id DESC OFFSET 2 ROWS FETCH NEXT 3 ROWS ONLY",
    ] {
        let pages = pages_read(&engine, &mut s, early);
        assert!(pages < full / 20, "{early}: {pages} pages of {full}");
    }
    assert_eq!(run(&mut s, "SELECT TOP 3 id FROM big").result_sets[0].1.len(), 3);
    let offset = run(&mut s, "SELECT id FROM big ORDER BY id OFFSET 10 ROWS FETCH NEXT 2 ROWS ONLY");
    assert_eq!(offset.result_sets[0].1, vec![vec![Value::Int(10)], vec![Value::Int(11)]]);
    // ORDER BY the key descending reads the index backward, from the range's end.
    let last = run(&mut s, "SELECT TOP 3 id FROM big ORDER BY id DESC");
    let ids = |n: &[i64]| n.iter().map(|&i| vec![Value::Int(i)]).collect::<Vec<_>>();
    assert_eq!(last.result_sets[0].1, ids(&[ROWS as i64 - 1, ROWS as i64 - 2, ROWS as i64 - 3]));
    let below =
        run(&mut s, "SELECT id FROM big WHERE id < 30000 ORDER BY id DESC OFFSET 2 ROWS FETCH NEXT 3 ROWS ONLY");
    assert_eq!(below.result_sets[0].1, ids(&[29_997, 29_996, 29_995]));
    let max = run(&mut s, "SELECT MAX(id), (SELECT MIN(id) FROM big WHERE id > 100) FROM big");
    assert_eq!(max.result_sets[0].1, vec![vec![Value::Int(ROWS as i64 - 1), Value::Int(101)]]);
    let between = run(&mut s, "SELECT id FROM big WHERE id BETWEEN 10 AND 14 ORDER BY id DESC");
    assert_eq!(between.result_sets[0].1, ids(&[14, 13, 12, 11, 10]));

    // Rows stream to the client as they are made: an error at the sixth row arrives
    // after the first five.
    let mut arrivals = Arrivals::default();
    s.execute("SELECT 100 / (id - 5) FROM big WHERE id BETWEEN 1 AND 9", &mut arrivals);
    assert_eq!(arrivals.0[..4], ["row Int(-25)", "row Int(-33)", "row Int(-50)", "row Int(-100)"]);
    assert_eq!(arrivals.0[4], "error 8134", "{:?}", arrivals.0);

    // A filter on a column the scan does not key on is evaluated inside the scan (only
    // `id` decoded for rows it rejects); its rows and an error it raises still arrive in
    // scan order: the rows before the failing one (past a 256-row batch), then the error.
    let sevens = run(&mut s, "SELECT id FROM big WHERE id % 1000 = 7");
    let expected: Vec<Vec<Value>> = (0..ROWS / 1000).map(|k| vec![Value::Int((k * 1000 + 7) as i64)]).collect();
    assert_eq!(sevens.result_sets[0].1, expected);
    let mut arrivals = Arrivals::default();
    s.execute("SELECT id FROM big WHERE 100 / (300 - id) >= 0", &mut arrivals);
    assert_eq!(arrivals.0.len(), 301, "{:?}", &arrivals.0[arrivals.0.len().saturating_sub(3)..]);
    assert_eq!((arrivals.0[299].as_str(), arrivals.0[300].as_str()), ("row Int(299)", "error 8134"));

    // 40 MB of rows stream through a scan, but a sort of them exceeds the statement's
    // grant (a quarter of max server memory, at least 32 MB): 701, and the session goes on.
    let all = run(&mut s, "SELECT id, pad FROM big");
    assert_eq!(all.result_sets[0].1.len(), ROWS);
    let mut out = Collected::default();
    assert!(s.execute("SELECT id, pad FROM big ORDER BY pad DESC, id DESC", &mut out));
    assert_eq!(out.errors()[0].number, 701, "{:?}", out.errors());
    assert_eq!(shared.query_memory.used_bytes(), 0, "the failed statement gave its memory back");
    // A sort's keys count with its rows: 21 MB of rows fit sorted by small keys, not by
    // keys as large as the rows.
    run(&mut s, "CREATE TABLE wide (id int PRIMARY KEY, s varchar(1000) NOT NULL)");
    run(&mut s, "INSERT INTO wide SELECT id, REPLICATE('y', 990) + CAST(id AS varchar(10)) FROM big WHERE id < 20000");
    let small_keys = run(&mut s, "SELECT id, s FROM wide ORDER BY id % 7, id");
    assert_eq!(small_keys.result_sets[0].1.len(), 20_000);
    let mut out = Collected::default();
    assert!(s.execute("SELECT id, s FROM wide ORDER BY s", &mut out));
    assert_eq!(out.errors()[0].number, 701, "{:?}", out.errors());
    assert_eq!(shared.query_memory.used_bytes(), 0);
    // So do a hash join's keys with its build rows.
    let small_keys = run(&mut s, "SELECT COUNT(*) FROM big b JOIN wide w ON w.id + 0 = b.id + 0");
    assert_eq!(small_keys.result_sets[0].1, vec![vec![Value::Int(20_000)]]);
    let mut out = Collected::default();
    assert!(s.execute("SELECT COUNT(*) FROM big b JOIN wide w ON w.s = b.pad", &mut out));
    assert_eq!(out.errors()[0].number, 701, "{:?}", out.errors());
    assert_eq!(shared.query_memory.used_bytes(), 0);
    // TOP (n) … ORDER BY and OFFSET/FETCH over the same sort hold only their rows (a top-N
    // sort), so they fit; rows with equal keys keep their scan order.
    let top = run(&mut s, "SELECT TOP 5 id, pad FROM big ORDER BY pad DESC, id DESC");
    let firsts: Vec<&Value> = top.result_sets[0].1.iter().map(|r| &r[0]).collect();
    let n = ROWS as i64;
    assert_eq!(firsts, [n - 1, n - 2, n - 3, n - 4, n - 5].map(Value::Int).iter().collect::<Vec<_>>());
    let page = run(&mut s, "SELECT id FROM big ORDER BY pad DESC, id DESC OFFSET 10 ROWS FETCH NEXT 3 ROWS ONLY");
    assert_eq!(
        page.result_sets[0].1,
        vec![vec![Value::Int(n - 11)], vec![Value::Int(n - 12)], vec![Value::Int(n - 13)]]
    );
    let tied = run(&mut s, "SELECT TOP 2 WITH TIES id, pad FROM big ORDER BY id % 1000 DESC");
    let expected: Vec<Value> = (0..ROWS as i64 / 1000).map(|k| Value::Int(k * 1000 + 999)).collect();
    assert_eq!(tied.result_sets[0].1.iter().map(|r| r[0].clone()).collect::<Vec<_>>(), expected);
    // The top-N sort against the full sort, cut as TOP, WITH TIES and OFFSET/FETCH say.
    run(&mut s, "CREATE TABLE small (id int PRIMARY KEY, k int)");
    let values: Vec<String> = (0..300).map(|i| format!("({i}, {})", (i * 7) % 13)).collect();
    run(&mut s, &format!("INSERT INTO small VALUES {}", values.join(", ")));
    let full = run(&mut s, "SELECT id, k FROM small ORDER BY k DESC");
    let full = &full.result_sets[0].1;
    for n in [0usize, 1, 2, 5, 23, 24, 46, 299, 300, 301] {
        let top = run(&mut s, &format!("SELECT TOP ({n}) id, k FROM small ORDER BY k DESC"));
        assert_eq!(top.result_sets[0].1, full[..n.min(300)], "TOP {n}");
        let with_ties = run(&mut s, &format!("SELECT TOP ({n}) WITH TIES id, k FROM small ORDER BY k DESC"));
        let mut cut = n.min(300);
        while n > 0 && cut < 300 && full[cut][1] == full[n - 1][1] {
            cut += 1;
        }
        assert_eq!(with_ties.result_sets[0].1, full[..cut], "TOP {n} WITH TIES");
        let page =
            run(&mut s, &format!("SELECT id, k FROM small ORDER BY k DESC OFFSET {n} ROWS FETCH NEXT 7 ROWS ONLY"));
        assert_eq!(page.result_sets[0].1, full[n.min(300)..(n + 7).min(300)], "OFFSET {n}");
    }
    let ties = run(&mut s, "SELECT TOP 3 id FROM big ORDER BY pad");
    assert_eq!(ties.result_sets[0].1, vec![vec![Value::Int(0)], vec![Value::Int(1)], vec![Value::Int(2)]]);
    assert_eq!(shared.query_memory.used_bytes(), 0);
    let counted = run(&mut s, "SELECT COUNT(*) FROM big");
    assert_eq!(counted.result_sets[0].1[0][0], Value::Int(ROWS as i64));
}
