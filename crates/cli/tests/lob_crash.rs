//! Large values survive a crash as their transactions do (issue 34): a server killed
//! while one session inserts rows with values off the row (each committed before the
//! next begins), another rewrites them in transactions, and a third holds a large
//! uncommitted value, comes back with every committed value whole, each rewritten row at
//! one of its generations, and nothing of the uncommitted one; CHECKDB finds no damage.
//! A fourth session changes parts of two values in each transaction (`SET col.WRITE`: an
//! overwrite in the middle and an append), which come back at the same generation.

use std::time::{Duration, Instant};

mod common;

use common::{start, Server};

/// The result rows of `query`, their fields split on spaces.
fn rows(server: &Server, query: &str) -> Vec<Vec<i64>> {
    server
        .sql(query)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('(') && !l.starts_with("Changed database context"))
        .map(|l| l.split_whitespace().map(|f| f.parse().unwrap_or_else(|_| panic!("{l}"))).collect())
        .collect()
}

#[test]
fn committed_large_values_survive_a_kill_and_uncommitted_ones_go() {
    crash_with_large_values(false);
}

/// The same with READ COMMITTED SNAPSHOT and snapshot isolation on and a SNAPSHOT reader
/// holding its snapshot across the kill: versions are not kept across a restart, the
/// options are, and snapshots read the recovered rows afterwards.
#[test]
fn a_kill_with_row_versions_in_flight_recovers_the_same() {
    crash_with_large_values(true);
}

fn crash_with_large_values(versions: bool) {
    let server = start();
    server.sql(
        "CREATE DATABASE d; \
         EXEC ('USE d; CREATE TABLE ins (id int PRIMARY KEY, v varchar(max) NOT NULL); \
                CREATE TABLE upd (id int PRIMARY KEY, g int NOT NULL, v nvarchar(max) NOT NULL); \
                DECLARE @i int = 0; WHILE @i < 4 BEGIN \
                  INSERT upd VALUES (@i, 0, REPLICATE(CAST(N''a'' AS nvarchar(max)), 6000)); SET @i += 1; END; \
                CREATE TABLE big (id int PRIMARY KEY, v varbinary(max));                 CREATE TABLE part (id int PRIMARY KEY, g int NOT NULL, v varchar(max) NOT NULL, w varchar(max) NOT NULL);                 INSERT part VALUES (1, 0, REPLICATE(CAST(''0'' AS varchar(max)), 30000), REPLICATE(CAST(''A'' AS varchar(max)), 9000));')",
    );
    if versions {
        server.sql("ALTER DATABASE d SET READ_COMMITTED_SNAPSHOT ON; ALTER DATABASE d SET ALLOW_SNAPSHOT_ISOLATION ON");
    }
    // A snapshot held open across the kill, reading the rows being rewritten (so versions
    // are kept for it while the kill comes).
    let mut reader = versions.then(|| {
        server.sql_in_background(
            "USE d; SET TRANSACTION ISOLATION LEVEL SNAPSHOT; BEGIN TRAN; \
             DECLARE @n int = 0, @g int; WHILE @n < 1000000 BEGIN SET @g = (SELECT SUM(g) FROM upd); SET @n += 1; END; \
             COMMIT",
        )
    });
    // Row i holds i % 26 + 'A' repeated 8,001 + 997·i % 20,000 times.
    let mut inserter = server.sql_in_background(
        "USE d; DECLARE @i int = 1; WHILE @i < 400 BEGIN \
           INSERT ins VALUES (@i, REPLICATE(CAST(CHAR(65 + @i % 26) AS varchar(max)), 8001 + (997 * @i) % 20000)); \
           SET @i += 1; END",
    );
    // Each generation g of a row is the letter 'a' + g % 26, 6,000 + 13·g % 5,000 long.
    let mut updater = server.sql_in_background("USE d; DECLARE @n int = 0; WHILE @n < 1000000 BEGIN \
           BEGIN TRAN; \
           UPDATE upd SET g = g + 1, v = REPLICATE(CAST(NCHAR(97 + (g + 1) % 26) AS nvarchar(max)), 6000 + (13 * (g + 1)) % 5000) \
             WHERE id = @n % 4; \
           UPDATE upd SET g = g + 1, v = REPLICATE(CAST(NCHAR(97 + (g + 1) % 26) AS nvarchar(max)), 6000 + (13 * (g + 1)) % 5000) \
             WHERE id = (@n + 1) % 4; \
           COMMIT; SET @n += 1; END",
    );
    // Generation g of the row: 10 times the digit g % 10 at (1009·g) % 29,990 in v, and w
    // 9,000 + g long, ending in 'A' + g % 26.
    let mut partial = server.sql_in_background(
        "USE d; DECLARE @n int = 0; WHILE @n < 1000000 BEGIN \
           BEGIN TRAN; \
           UPDATE part SET g = g + 1, v.WRITE(REPLICATE(CHAR(48 + (g + 1) % 10), 10), (1009 * (g + 1)) % 29990, 10), \
             w.WRITE(CHAR(65 + (g + 1) % 26), NULL, NULL) WHERE id = 1; \
           COMMIT; SET @n += 1; END",
    );
    // A 5 MB value, never committed.
    let mut open = server.sql_in_background(
        "USE d; BEGIN TRAN; \
         INSERT big VALUES (1, CAST(REPLICATE(CAST('z' AS varchar(max)), 5000000) AS varbinary(max))); \
         WAITFOR DELAY '00:01:00'; COMMIT;",
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let n = rows(
            &server,
            "SELECT COUNT(*) FROM d.dbo.ins WITH (NOLOCK); SELECT COUNT(*) FROM d.dbo.big WITH (NOLOCK); \
                           SELECT g FROM d.dbo.part WITH (NOLOCK)",
        );
        if n[0][0] >= 20 && n[1][0] == 1 && n[2][0] >= 20 {
            break;
        }
        assert!(Instant::now() < deadline, "the sessions did not get going: {n:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let server = server.kill_and_restart();
    for c in [&mut inserter, &mut updater, &mut partial, &mut open].into_iter().chain(reader.as_mut()) {
        let _ = c.kill();
        let _ = c.wait();
    }
    // Committed one after another: ids 1..=n, each whole.
    let ins = rows(
        &server,
        "USE d; SELECT COUNT(*), MIN(id), MAX(id), \
           SUM(CASE WHEN LEN(v) = 8001 + (997 * id) % 20000 AND ASCII(v) = 65 + id % 26 \
                     AND REPLACE(v, LEFT(v, 1), '') = '' THEN 1 ELSE 0 END) FROM ins",
    );
    let [n, lo, hi, whole] = ins[0][..] else { panic!("{ins:?}") };
    assert!(n >= 20 && lo == 1 && hi == n && whole == n, "{ins:?}");
    let upd = rows(
        &server,
        "USE d; SELECT g, CASE WHEN LEN(v) = 6000 + (13 * g) % 5000 AND UNICODE(v) = 97 + g % 26 \
           AND REPLACE(v, LEFT(v, 1), N'') = N'' THEN 1 ELSE 0 END FROM upd ORDER BY id",
    );
    assert_eq!(upd.len(), 4);
    assert!(upd.iter().all(|r| r[1] == 1), "{upd:?}");
    let total: i64 = upd.iter().map(|r| r[0]).sum();
    assert_eq!(total % 2, 0, "each transaction moved two rows on: {upd:?}");
    let part = rows(
        &server,
        "USE d; SELECT g, CASE WHEN DATALENGTH(v) = 30000 \
           AND SUBSTRING(v, (1009 * g) % 29990 + 1, 10) = REPLICATE(CHAR(48 + g % 10), 10) \
           AND DATALENGTH(w) = 9000 + g AND RIGHT(w, 1) = CHAR(65 + g % 26) THEN 1 ELSE 0 END FROM part",
    );
    assert!(part[0][0] >= 20 && part[0][1] == 1, "{part:?}");
    assert_eq!(rows(&server, "SELECT COUNT(*) FROM d.dbo.big"), [[0]]);
    let check = server.sql("DBCC CHECKDB ('d')");
    assert!(check.contains("0 allocation errors and 0 consistency errors"), "{check}");
    // The database works on with large values.
    let again = rows(
        &server,
        "USE d; INSERT big VALUES (2, CAST(REPLICATE(CAST('y' AS varchar(max)), 100000) AS varbinary(max))); \
         SELECT DATALENGTH(v) FROM big",
    );
    assert_eq!(again, [[100_000]]);
    if versions {
        let options = rows(
            &server,
            "SELECT is_read_committed_snapshot_on, snapshot_isolation_state FROM sys.databases WHERE name = 'd'",
        );
        assert_eq!(options, [[1, 1]], "the options outlive the restart");
        let snapshot = rows(
            &server,
            "USE d; SET TRANSACTION ISOLATION LEVEL SNAPSHOT; BEGIN TRAN; SELECT SUM(g) % 2, COUNT(*) FROM upd; COMMIT",
        );
        assert_eq!(snapshot, [[0, 4]]);
        assert_eq!(
            rows(&server, "SELECT COUNT(*) FROM sys.dm_tran_version_store_space_usage WHERE reserved_page_count > 0"),
            [[0]]
        );
    }
}

/// The log the database `d` has written since it opened.
fn log_bytes(server: &Server) -> i64 {
    rows(
        server,
        "SELECT cntr_value FROM sys.dm_os_performance_counters \
         WHERE counter_name = 'Log Bytes Flushed/sec' AND instance_name = 'd'",
    )[0][0]
}

/// In a SIMPLE database, an INSERT of large values into a table with none writes their
/// chunks minimally logged: the log holds far less than the values, the values survive a
/// kill right after the commit (their pages were forced to disk before it), a full backup
/// restores them, and a load that fails halfway leaves nothing and lets its transaction
/// go on. In FULL recovery the same INSERT logs every byte.
#[test]
fn minimally_logged_large_values_survive_a_kill_and_a_restore() {
    let server = start();
    server.sql(
        "CREATE DATABASE d; ALTER DATABASE d SET RECOVERY SIMPLE; \
         EXEC ('USE d; CREATE TABLE t (id int PRIMARY KEY, v varbinary(max) NOT NULL, CHECK (id < 1000)); \
                CREATE TABLE f (id int PRIMARY KEY, v varbinary(max) NOT NULL); CREATE TABLE nums (n int PRIMARY KEY); \
                DECLARE @i int = 1; WHILE @i <= 1000 BEGIN INSERT nums VALUES (@i); SET @i += 1; END')",
    );
    // 40 values of 200,000 bytes, id i made of the byte i.
    let insert = |table: &str, from: i64, to: i64| {
        format!(
            "USE d; INSERT {table} (id, v) SELECT n, CAST(REPLICATE(CAST(CHAR(n % 256) AS varchar(max)), 200000) AS varbinary(max)) \
             FROM nums WHERE n BETWEEN {from} AND {to}"
        )
    };
    // A load that fails at its last row (the CHECK) in a transaction that goes on.
    let failed = server.sql(&format!(
        "USE d; BEGIN TRAN; INSERT f VALUES (1, 0x01); \
         BEGIN TRY {} END TRY BEGIN CATCH SELECT ERROR_NUMBER() END CATCH; \
         INSERT f VALUES (2, 0x02); COMMIT; SELECT COUNT(*) FROM t",
        insert("t", 961, 1000)
    ));
    assert!(failed.contains("547"), "{failed}");
    let before = log_bytes(&server);
    server.sql(&insert("t", 1, 40));
    let logged = log_bytes(&server) - before;
    assert!(logged < 2_000_000, "{logged} bytes of log for 8,000,000 bytes of values, minimally logged");
    let server = server.kill_and_restart();
    let check = |server: &Server, db: &str| {
        let got = rows(
            server,
            &format!(
                "USE {db}; SELECT COUNT(*), SUM(CASE WHEN DATALENGTH(v) = 200000 \
                   AND v = CAST(REPLICATE(CAST(CHAR(id % 256) AS varchar(max)), 200000) AS varbinary(max)) \
                   THEN 1 ELSE 0 END) FROM t"
            ),
        );
        assert_eq!(got, [[40, 40]], "{db}");
        let dbcc = server.sql(&format!("DBCC CHECKDB ('{db}')"));
        assert!(dbcc.contains("0 allocation errors and 0 consistency errors"), "{dbcc}");
    };
    check(&server, "d");
    assert_eq!(rows(&server, "SELECT COUNT(*) FROM d.dbo.f"), [[2]]);
    let media = server.dir.path().join("d.bak");
    server.sql(&format!("BACKUP DATABASE d TO DISK = '{}'", media.display()));
    server.sql(&format!(
        "RESTORE DATABASE d2 FROM DISK = '{}' WITH MOVE 'd' TO '{}', MOVE 'd_log' TO '{}'",
        media.display(),
        server.dir.path().join("d2.mdf").display(),
        server.dir.path().join("d2.ldf").display()
    ));
    check(&server, "d2");
    // The same INSERT in FULL recovery (into the other table, whose tree is empty) logs
    // the values.
    server.sql(
        "ALTER DATABASE d SET RECOVERY FULL; EXEC ('USE d; CREATE TABLE t2 (id int PRIMARY KEY, v varbinary(max))')",
    );
    let before = log_bytes(&server);
    server.sql(&insert("t2", 1, 40));
    let full = log_bytes(&server) - before;
    assert!(full > 8_000_000, "{full} bytes of log in FULL recovery");
    eprintln!("log bytes for 8,000,000 bytes of values: {logged} in SIMPLE, {full} in FULL");
}
