//! A sequence never hands out a value twice, whatever happens to the server: killed while
//! sessions take values (through a default, and in a loop), it starts again past every
//! value it may have handed out — past the end of each cache it had reserved, and past
//! the last value of a NO CACHE sequence.

use std::time::{Duration, Instant};

mod common;

use common::start;

/// The values in `out`'s result rows, in order (messages and counts left out).
fn values(out: &str) -> Vec<i64> {
    out.lines()
        .filter(|l| !l.trim_start().starts_with('(') && !l.starts_with("Changed database context"))
        .flat_map(|l| l.split_whitespace().filter_map(|w| w.parse::<i64>().ok()).collect::<Vec<_>>())
        .collect()
}

#[test]
fn values_taken_before_a_kill_are_never_handed_out_again() {
    let server = start();
    server.sql(
        "CREATE DATABASE d; \
         EXEC ('USE d; CREATE SEQUENCE cached AS int START WITH 1 CACHE 10; \
                CREATE SEQUENCE uncached AS int START WITH 1 NO CACHE; \
                CREATE TABLE t (id int NOT NULL DEFAULT (NEXT VALUE FOR cached) PRIMARY KEY, n int);')",
    );
    let taken = values(&server.sql(
        "USE d; SELECT NEXT VALUE FOR cached; SELECT NEXT VALUE FOR cached; SELECT NEXT VALUE FOR cached; \
         SELECT NEXT VALUE FOR uncached; SELECT NEXT VALUE FOR uncached;",
    ));
    assert_eq!(taken, [1, 2, 3, 1, 2]);
    // Another session inserts rows numbered by the sequence until the server dies.
    let mut inserting = server.sql_in_background(
        "USE d; DECLARE @i int = 0; WHILE @i < 1000000 BEGIN INSERT t (n) VALUES (@i); SET @i += 1; END",
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while values(&server.sql("SELECT COUNT(*) FROM d.dbo.t")).first().copied().unwrap_or(0) < 25 {
        assert!(Instant::now() < deadline, "the inserting session never inserted");
        std::thread::sleep(Duration::from_millis(50));
    }
    let server = server.kill_and_restart();
    let _ = inserting.kill();
    let _ = inserting.wait();
    let before = values(&server.sql("USE d; SELECT COUNT(*), MAX(id) FROM t;"));
    let (rows, max_id) = (before[0], before[1]);
    assert!(rows >= 25, "committed inserts survive: {before:?}");
    // New values are past everything that may have been handed out.
    let after = values(&server.sql("USE d; SELECT NEXT VALUE FOR cached; SELECT NEXT VALUE FOR uncached;"));
    assert!(after[0] > max_id, "cached restarts past {max_id}: {after:?}");
    assert_eq!(after[1], 3, "a NO CACHE sequence goes on from its last value");
    // And the table takes more rows numbered by it without a duplicate key.
    let more = server.sql(
        "USE d; DECLARE @i int = 0; WHILE @i < 200 BEGIN INSERT t (n) VALUES (-1); SET @i += 1; END; \
         SELECT COUNT(*), COUNT(DISTINCT id) FROM t;",
    );
    assert!(!more.contains("Msg 2627"), "{more}");
    let counts = values(&more);
    assert_eq!(counts[counts.len() - 2], counts[counts.len() - 1], "{more}");
    assert_eq!(counts[counts.len() - 1], rows + 200, "{more}");
}
