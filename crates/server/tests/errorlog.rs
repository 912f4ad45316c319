//! The ERRORLOG as a SQL Server operator uses it, over TDS with tiberius: sp_cycle_errorlog
//! ends the current log with "Attempting to cycle error log" and starts a new one that
//! begins with the server's version; xp_readerrorlog and sp_readerrorlog read the current
//! log or an archive, with search strings, a time window and an order; only sysadmin
//! cycles, only securityadmin and sysadmin read; a log that does not exist is 22004; and
//! each start rotates the log.

mod common;

use common::tds::{connect_as, connect_to, count, refused, run, Conn};
use common::{TestServer, PASSWORD};
use tiberius::ColumnData;

const CYCLE_LINE: &str =
    "Attempting to cycle error log. This is an informational message only; no user action is required.";
const CAROL: &str = "Carol-Pass-1";

/// One row of the log: LogDate (datetime's days and 1/300 s), ProcessInfo, Text.
type Entry = (Option<(i32, u32)>, String, String);

/// The rows `sql` (a read of the log) answers.
async fn read(c: &mut Conn, sql: &str) -> Vec<Entry> {
    let rows = c
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_first_result()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.into_iter()
        .map(|row| {
            let mut cells = row.into_iter();
            let date = match cells.next() {
                Some(ColumnData::DateTime(d)) => d.map(|d| (d.days(), d.seconds_fragments())),
                other => panic!("{sql}: LogDate is {other:?}"),
            };
            let mut text = || match cells.next() {
                Some(ColumnData::String(s)) => s.map(|s| s.into_owned()).unwrap_or_default(),
                other => panic!("{sql}: {other:?}"),
            };
            let process = text();
            (date, process, text())
        })
        .collect()
}

fn texts(entries: &[Entry]) -> Vec<&str> {
    entries.iter().map(|(_, _, t)| t.as_str()).collect()
}

/// A login that fails, which the ERRORLOG records ("Login failed for user 'name'.").
async fn fail_login(port: u16, name: &str) {
    assert!(connect_to(port, name, "wrong-Password-1", "master").await.is_err());
}

/// Waits (a little) until the current log has `expected` rows matching `search`.
async fn logged(c: &mut Conn, search: &str, expected: usize) -> Vec<Entry> {
    let sql = format!("EXEC xp_readerrorlog 0, 1, N'{search}'");
    for _ in 0..200 {
        let found = read(c, &sql).await;
        if found.len() == expected {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{sql} never found {expected} rows: {:?}", read(c, &sql).await);
}

#[test]
fn the_error_log_cycles_and_reads_back_as_sql_server_s() {
    let mut server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        let spid = count(&mut sa, "SELECT CAST(@@SPID AS int)").await;
        fail_login(port, "before_cycle").await;
        logged(&mut sa, "before_cycle", 1).await;
        assert_eq!(count(&mut sa, "DECLARE @rc int; EXEC @rc = sp_cycle_errorlog; SELECT @rc").await, 0);
        fail_login(port, "nobody1").await;
        fail_login(port, "nobody2").await;

        // The old log, now archive 1, begins with the version and ends with the cycle.
        let old = read(&mut sa, "EXEC xp_readerrorlog 1").await;
        assert!(old[0].2.starts_with("Microsoft SQL Server compatible (tessera"), "{old:?}");
        assert_eq!(old[0].1, "Server");
        let last = old.last().unwrap();
        assert_eq!((last.1.as_str(), last.2.as_str()), (format!("spid{spid}").as_str(), CYCLE_LINE), "{old:?}");
        assert!(old.iter().all(|(date, _, _)| date.is_some()));
        assert!(texts(&old).iter().any(|t| t.contains("before_cycle")));
        assert!(!texts(&old).iter().any(|t| t.contains("nobody1")));

        // The new one begins with the server's header, then the lines written since.
        let new = logged(&mut sa, "Login failed", 2).await;
        assert!(new[0].2.contains("'nobody1'") && new[1].2.contains("'nobody2'"), "{new:?}");
        assert_eq!(new[0].1, "Logon");
        let current = read(&mut sa, "EXEC xp_readerrorlog 0").await;
        let head: Vec<&str> = texts(&current).into_iter().take(5).collect();
        assert!(head[0].starts_with("Microsoft SQL Server compatible (tessera"), "{head:?}");
        assert!(head[1].starts_with("Server process ID is "), "{head:?}");
        assert!(head.contains(&"The error log has been reinitialized. See the previous log for older entries."));
        assert!(!texts(&current).contains(&CYCLE_LINE));
        let dates: Vec<_> = current.iter().map(|(d, _, _)| d.unwrap()).collect();
        assert!(dates.windows(2).all(|w| w[0] <= w[1]), "oldest first");

        // Search strings: a row has both, in any case; sp_readerrorlog passes them on
        // only with @p2, as SQL Server's does.
        let both = read(&mut sa, "EXEC xp_readerrorlog 0, 1, N'LOGIN FAILED', N'nobody2'").await;
        assert_eq!(both.len(), 1, "{both:?}");
        assert!(both[0].2.starts_with("Login failed for user 'nobody2'."), "{both:?}");
        assert!(read(&mut sa, "EXEC xp_readerrorlog 0, 1, N'login failed', N'carol'").await.is_empty());
        assert_eq!(read(&mut sa, "EXEC sp_readerrorlog 0, 1, N'nobody2'").await, both);
        assert_eq!(read(&mut sa, "EXEC sys.sp_readerrorlog @p1 = 0, @p2 = 1, @p3 = N'nobody'").await.len(), 2);
        assert!(read(&mut sa, "EXEC sp_readerrorlog @p1 = 0, @p3 = N'nobody'").await.len() > 2);
        assert_eq!(read(&mut sa, "EXEC master.dbo.sp_readerrorlog 1").await, old);

        // Newest first, and a time window.
        let newest_first = read(&mut sa, "EXEC xp_readerrorlog 0, 1, N'nobody', NULL, NULL, NULL, N'DESC'").await;
        assert_eq!(newest_first, new.iter().rev().cloned().collect::<Vec<_>>());
        let asc = read(&mut sa, "EXEC xp_readerrorlog 0, 1, N'nobody', NULL, NULL, NULL, N'asc'").await;
        assert_eq!(asc, new);
        let window = "EXEC xp_readerrorlog 0, 1, N'nobody', NULL";
        assert_eq!(read(&mut sa, &format!("{window}, '2000-01-01', '2999-12-31'")).await, new);
        assert!(read(&mut sa, &format!("{window}, DATEADD(hour, 1, GETDATE()), NULL")).await.is_empty());
        assert!(read(&mut sa, &format!("{window}, NULL, '2000-01-01'")).await.is_empty());
        assert_eq!(read(&mut sa, &format!("{window}, DATEADD(hour, -1, GETDATE()), GETDATE()")).await, new);
        let (n, m) = refused(&mut sa, "EXEC xp_readerrorlog 0, 1, NULL, NULL, NULL, NULL, N'up'").await;
        assert_eq!(n, 15600, "{m}");

        // Logs that do not exist: SQL Server's 22004.
        let (n, m) = refused(&mut sa, "EXEC xp_readerrorlog 99").await;
        assert_eq!(
            (n, m.as_str()),
            (22004, "xp_readerrorlog() returned error 2, 'The system cannot find the file specified.'")
        );
        assert_eq!(refused(&mut sa, "EXEC sp_readerrorlog 7").await.0, 22004);
        assert_eq!(refused(&mut sa, "EXEC xp_readerrorlog -1").await.0, 22004);
        let (n, m) = refused(&mut sa, "EXEC sp_readerrorlog 0, 2").await;
        assert!(n == 22004 && m.contains("SQL Server Agent"), "{n}: {m}");

        // Only sysadmin cycles; securityadmin (and sysadmin) read.
        run(&mut sa, &format!("CREATE LOGIN carol WITH PASSWORD = '{CAROL}'")).await;
        let mut carol = connect_as(port, "carol", CAROL).await;
        let (n, m) = refused(&mut carol, "EXEC sp_cycle_errorlog").await;
        assert_eq!((n, m.as_str()), (15247, "User does not have permission to perform this action."));
        let (n, m) = refused(&mut carol, "EXEC xp_readerrorlog").await;
        assert_eq!(
            (n, m.as_str()),
            (
                229,
                "The EXECUTE permission was denied on the object 'xp_readerrorlog', database 'mssqlsystemresource', schema 'sys'."
            )
        );
        let (n, m) = refused(&mut carol, "EXEC sp_readerrorlog").await;
        assert_eq!((n, m.as_str()), (15003, "Only members of the securityadmin role can execute this stored procedure."));
        run(&mut sa, "ALTER SERVER ROLE securityadmin ADD MEMBER carol").await;
        assert_eq!(read(&mut carol, "EXEC sp_readerrorlog 0, 1, N'nobody2'").await, both);
        assert_eq!(read(&mut carol, "EXEC xp_readerrorlog 1").await, old);
        assert_eq!(refused(&mut carol, "EXEC sp_cycle_errorlog").await.0, 15247);
        fail_login(port, "before_restart").await;
        logged(&mut sa, "before_restart", 1).await;
    });

    // Each start rotates: the log before becomes ERRORLOG.1, the one before that .2.
    server.restart();
    let port = server.port();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        assert!(read(&mut sa, "EXEC xp_readerrorlog 0, 1, N'before_restart'").await.is_empty());
        let previous = read(&mut sa, "EXEC xp_readerrorlog 1").await;
        assert!(texts(&previous).iter().any(|t| t.contains("'before_restart'")), "{previous:?}");
        assert!(texts(&previous).contains(&"Server shutdown has been initiated."), "{previous:?}");
        let cycled = read(&mut sa, "EXEC xp_readerrorlog 2").await;
        assert_eq!(cycled.last().unwrap().2, CYCLE_LINE);
        let current = read(&mut sa, "EXEC xp_readerrorlog").await;
        assert!(current[0].2.starts_with("Microsoft SQL Server compatible (tessera"), "{current:?}");
    });
    let dir = server.dir.path().join("data");
    assert!(dir.join("ERRORLOG.2").exists() && !dir.join("ERRORLOG.3").exists());
}
