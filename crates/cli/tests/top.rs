//! `tessera top --batch` against a real server: a blocked session, its blocker and the
//! chain between them, the lock wait, the busier of two databases first; a login without
//! VIEW SERVER STATE and a server that stops end it with a message and exit status 1.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{start, Server, PASSWORD};

fn top(server: &Server, user: &str, password: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["top", "-S", &server.address(), "-U", user, "-P", password])
        .args(["--batch", "--iterations", "2", "--interval", "0.5"])
        .output()
        .unwrap()
}

/// Runs `query` (`tessera sql -h -1 -W`) until its output is not empty, for at most 20 s.
fn wait_for(server: &Server, query: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = server.sql(&format!("SET NOCOUNT ON; {query}"));
        if !out.trim().is_empty() {
            return out;
        }
        assert!(Instant::now() < deadline, "nothing from {query}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Killed when dropped.
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn top_shows_the_blocked_session_its_blocker_the_chain_and_the_busier_database() {
    let server = start();
    server.sql("CREATE DATABASE quiet_db");
    server.sql("CREATE DATABASE busy_db");
    server.sql("USE quiet_db; CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL); INSERT INTO t VALUES (1, 0)");
    server.sql("USE busy_db; CREATE TABLE events (id int IDENTITY PRIMARY KEY, v int NOT NULL)");

    // A: an open transaction holding the row, its session idle at the prompt.
    let mut holder = Background(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["sql", "-S", &server.address(), "-U", "sa", "-P", PASSWORD, "-d", "quiet_db"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdin = holder.0.stdin.as_mut().unwrap();
    stdin.write_all(b"BEGIN TRAN\nUPDATE t SET v = 1 WHERE id = 1\nGO\n").unwrap();
    stdin.flush().unwrap();
    wait_for(&server, "SELECT session_id FROM sys.dm_exec_sessions WHERE open_transaction_count > 0");
    // B: the same row, blocked by A.
    let _blocked = Background(server.sql_in_background("UPDATE quiet_db.dbo.t SET v = 2 WHERE id = 1"));
    let pair = wait_for(
        &server,
        "SELECT session_id, blocking_session_id FROM sys.dm_exec_requests WHERE blocking_session_id <> 0",
    );
    let ids: Vec<&str> = pair.split_whitespace().collect();
    let (blocked, blocker) = (ids[0], ids[1]);
    // Inserts in busy_db, one commit (and log write) each, while top samples.
    let _workload = Background(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["sql", "-S", &server.address(), "-U", "sa", "-P", PASSWORD, "-d", "busy_db", "-Q"])
            .arg(
                "DECLARE @start datetime2 = SYSDATETIME(); \
                 WHILE DATEDIFF(millisecond, @start, SYSDATETIME()) < 60000 INSERT INTO events (v) VALUES (1)",
            )
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for(&server, "SELECT TOP 1 id FROM busy_db.dbo.events");

    let out = top(&server, "sa", PASSWORD);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("=== refresh 1 ===") && text.contains("=== refresh 2 ==="), "{text}");
    let last = text.split("=== refresh 2 ===").nth(1).unwrap();
    let lines: Vec<&str> = last.lines().collect();
    let starts = |line: &str, word: &str| line.split_whitespace().next() == Some(word);

    // The blocked session's row: its lock wait and its blocker.
    let row = lines.iter().find(|l| starts(l, blocked)).unwrap_or_else(|| panic!("no row for {blocked}:\n{last}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(cells.iter().any(|c| c.starts_with("LCK_M_")), "{row}");
    assert!(cells.contains(&blocker), "{row}");
    // The blocker's row says it heads a chain.
    let head = lines.iter().find(|l| starts(l, blocker)).unwrap_or_else(|| panic!("no row for {blocker}:\n{last}"));
    assert!(head.split_whitespace().any(|c| c == "head"), "{head}");

    // The chain: the head blocker, the blocked session beneath it.
    let chain = lines.iter().position(|l| l.starts_with("BLOCKING CHAINS")).expect("a chains section");
    assert!(lines[chain + 1].starts_with(&format!("{blocker} ")), "{last}");
    assert!(lines[chain + 1].contains("head blocker"), "{last}");
    assert!(lines[chain + 2].starts_with(&format!("└─ {blocked} ")), "{last}");
    assert!(lines[chain + 2].contains("LCK_M_"), "{last}");

    // The lock wait is among the top waits (waiting now).
    let waits = lines.iter().position(|l| l.starts_with("TOP WAITS")).expect("a waits section");
    assert!(lines[waits..].iter().any(|l| l.starts_with("LCK_M_")), "{last}");

    // busy_db (thousands of log writes) before quiet_db (two sessions, one blocked).
    let databases = lines.iter().position(|l| l.starts_with("BUSIEST DATABASES")).expect("a databases section");
    let rank = |name: &str| {
        lines[databases..].iter().position(|l| starts(l, name)).unwrap_or_else(|| panic!("no {name}:\n{last}"))
    };
    assert!(rank("busy_db") < rank("quiet_db"), "{last}");

    // A login without VIEW SERVER STATE is told so, with exit status 1.
    server.sql("CREATE LOGIN peek WITH PASSWORD = 'Peek!pass1'");
    let out = top(&server, "peek", "Peek!pass1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("lacks VIEW SERVER STATE"), "{stderr}");
    server.sql("GRANT VIEW SERVER STATE TO peek");
    let out = top(&server, "peek", "Peek!pass1");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn top_exits_with_status_1_when_the_server_stops() {
    let mut server = start();
    let mut top = Background(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["top", "-S", &server.address(), "--batch", "--interval", "0.2"])
            .env("TESSERA_SA_PASSWORD", PASSWORD)
            .env_remove("SQLCMDPASSWORD")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(top.0.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a first refresh").unwrap();
    assert_eq!(first, "=== refresh 1 ===");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    lines.for_each(drop);
    let status = top.0.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut top.0.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("lost the connection"), "{stderr}");
}
