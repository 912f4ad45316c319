//! A log whose fdatasync fails (injected under the test's own data directory, see
//! `tessera_io::faults`): the client must see the failure as the statement's result and
//! never a row count for a change that was not made durable — in raw TDS tokens, through
//! tiberius and through python-tds, for an autocommit statement and for COMMIT. The
//! database then refuses work with 9001, the server goes on serving its other databases,
//! and after a restart the database opens again.

mod common;

use common::tds::{connect_to, run};
use common::{TestServer, PASSWORD};
use tessera_io::faults::{self, Fault, Op};
use tessera_server::{client, packet};

/// The next fdatasync of `database`'s log fails with EIO.
fn fail_log_sync(server: &TestServer, database: &str) {
    faults::arm(Fault::new(Op::Sync, server.dir.path(), &format!("/{database}_log.ldf"), libc::EIO));
}

/// The tokens of a reply as (token, DONE status, DONE count, error number): enough of
/// TDS 7.4 for what a data change answers (ENVCHANGE, ERROR, INFO, DONE*).
fn tokens(reply: &[u8]) -> Vec<(u8, u16, u64, i32)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < reply.len() {
        let token = reply[at];
        match token {
            0xFD..=0xFF => {
                let status = u16::from_le_bytes([reply[at + 1], reply[at + 2]]);
                let count = u64::from_le_bytes(reply[at + 5..at + 13].try_into().unwrap());
                out.push((token, status, count, 0));
                at += 13;
            }
            0xAA | 0xAB | 0xE3 => {
                let len = usize::from(u16::from_le_bytes([reply[at + 1], reply[at + 2]]));
                let number =
                    if token == 0xE3 { 0 } else { i32::from_le_bytes(reply[at + 3..at + 7].try_into().unwrap()) };
                out.push((token, 0, 0, number));
                at += 3 + len;
            }
            t => panic!("unexpected token {t:#04x} in {reply:02x?}"),
        }
    }
    out
}

/// The error `sql` must end in.
async fn failure(c: &mut common::tds::Conn, sql: &str) -> tiberius::error::Error {
    match c.simple_query(sql).await {
        Err(e) => e,
        Ok(stream) => stream.into_results().await.expect_err(sql),
    }
}

const DONE_ERROR: u16 = 0x2;
const DONE_COUNT: u16 = 0x10;

#[test]
fn a_failed_log_sync_is_the_statements_result_and_never_a_count() {
    let mut server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = common::connect_sa(port).await;
        for db in ["f_raw", "f_tiberius", "f_commit", "f_pytds", "f_pytds_commit", "healthy"] {
            run(&mut sa, &format!("CREATE DATABASE {db}")).await;
            run(&mut sa, &format!("CREATE TABLE {db}.dbo.t (id int PRIMARY KEY, v varchar(20))")).await;
            run(&mut sa, &format!("INSERT INTO {db}.dbo.t VALUES (0, 'before')")).await;
        }

        // Raw TDS: the reply to an autocommit INSERT whose commit cannot be made durable.
        fail_log_sync(&server, "f_raw");
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (mut tcp, packet_size) = client::login_plaintext(tcp, "sa", PASSWORD, "f_raw").await.unwrap();
        let body = client::batch_body("INSERT INTO t VALUES (1, 'lost')");
        packet::write_message(&mut tcp, packet::kind::SQL_BATCH, &body, packet_size).await.unwrap();
        let limits = packet::Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: 1 << 20 };
        let reply = packet::read_message(&mut tcp, &limits).await.unwrap().expect("a reply");
        let seen = tokens(&reply.payload);
        let error = seen.iter().position(|t| t.0 == 0xAA).unwrap_or_else(|| panic!("no ERROR token: {seen:?}"));
        assert_eq!(seen[error].3, 823, "the operating system's error: {seen:?}");
        assert!(!seen.iter().any(|t| t.0 >= 0xFD && t.1 & DONE_COUNT != 0), "a row count went out: {seen:?}");
        let last = seen.last().unwrap();
        assert!(last.0 == 0xFD && last.1 & DONE_ERROR != 0, "the statement ends in DONE_ERROR: {seen:?}");

        // tiberius, autocommit: the INSERT fails; no count reaches the application.
        fail_log_sync(&server, "f_tiberius");
        let mut c = connect_to(port, "sa", PASSWORD, "f_tiberius").await.unwrap();
        let e = c.execute("INSERT INTO t VALUES (1, 'lost')", &[]).await.expect_err("the commit failed");
        assert!(e.to_string().contains("sync"), "{e}");

        // tiberius, COMMIT of an explicit transaction: the INSERT's count is the
        // statement's (inside the transaction), COMMIT's failure is COMMIT's result.
        let mut c = connect_to(port, "sa", PASSWORD, "f_commit").await.unwrap();
        run(&mut c, "BEGIN TRAN; INSERT INTO t VALUES (1, 'lost')").await;
        fail_log_sync(&server, "f_commit");
        let e = failure(&mut c, "COMMIT").await;
        assert!(e.to_string().contains("sync"), "{e}");

        // The failed databases refuse work (9001, severity 21: the connection that met it
        // ends, as in SQL Server); the others serve on.
        for db in ["f_raw", "f_tiberius", "f_commit"] {
            let mut c = connect_to(port, "sa", PASSWORD, "healthy").await.unwrap();
            let e = failure(&mut c, &format!("SELECT COUNT(*) FROM {db}.dbo.t")).await;
            assert!(e.to_string().contains("9001") || e.to_string().contains("not available"), "{db}: {e}");
        }
        let mut c = connect_to(port, "sa", PASSWORD, "healthy").await.unwrap();
        run(&mut c, "INSERT INTO t VALUES (1, 'fine')").await;
        assert_eq!(common::tds::count(&mut c, "SELECT COUNT(*) FROM t").await, 2);
        // They show as SUSPECT until they are opened again; the others as ONLINE.
        let suspect = "SELECT COUNT(*) FROM sys.databases WHERE state_desc = 'SUSPECT' AND state = 4 \
                       AND name IN ('f_raw', 'f_tiberius', 'f_commit')";
        assert_eq!(common::tds::count(&mut c, suspect).await, 3);
        let status = "SELECT COUNT(*) WHERE DATABASEPROPERTYEX('f_raw', 'Status') = 'SUSPECT' \
                      AND DATABASEPROPERTYEX('healthy', 'Status') = 'ONLINE'";
        assert_eq!(common::tds::count(&mut c, status).await, 1);
    });
    // The failures are in ERRORLOG, as SQL Server logs errors of severity 19 and above.
    let errorlog = server.errorlog();
    assert!(errorlog.contains("Error: 823, Severity: 24") && errorlog.contains("_log.ldf'"), "{errorlog}");
    assert!(errorlog.contains("Error: 9001, Severity: 21"), "{errorlog}");

    // python-tds, the driver whose execute() returns at the first DONE.
    // It signals when its transaction's INSERT is done, and commits when told to (the
    // fault is armed in between, so that the COMMIT is what fails).
    if common::have("python3") {
        use std::io::{BufRead, Write};
        fail_log_sync(&server, "f_pytds");
        let mut python = std::process::Command::new("python3")
            .args(["-c", PYTDS, "127.0.0.1", &port.to_string(), PASSWORD])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut stdout = std::io::BufReader::new(python.stdout.take().unwrap());
        let mut seen = String::new();
        while stdout.read_line(&mut seen).unwrap() > 0 && !seen.contains("inserted") {}
        fail_log_sync(&server, "f_pytds_commit");
        writeln!(python.stdin.take().unwrap(), "commit").unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        seen.push_str(&rest);
        let out = python.wait_with_output().unwrap();
        faults::disarm(server.dir.path());
        assert!(
            out.status.success() && seen.contains("all checks passed"),
            "python-tds:\n{seen}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // After a restart every database opens: what its log holds decides each change in
    // doubt, and the rows acknowledged before stay.
    faults::disarm(server.dir.path());
    server.restart();
    rt.block_on(async {
        let mut sa = common::connect_sa(server.port()).await;
        for db in ["f_raw", "f_tiberius", "f_commit", "f_pytds", "f_pytds_commit"] {
            let before = common::tds::count(&mut sa, &format!("SELECT COUNT(*) FROM {db}.dbo.t WHERE id = 0")).await;
            assert_eq!(before, 1, "{db}: the acknowledged row");
            run(&mut sa, &format!("INSERT INTO {db}.dbo.t VALUES (2, 'after')")).await;
        }
        assert_eq!(common::tds::count(&mut sa, "SELECT COUNT(*) FROM healthy.dbo.t").await, 2);
    });
}

const PYTDS: &str = r#"
import sys, pytds
host, port, password = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def connect(db, autocommit):
    return pytds.connect(server=host, port=port, user="sa", password=password, database=db,
                         autocommit=autocommit, login_timeout=30, timeout=60)

# Autocommit: execute() must raise, never report a row count.
conn = connect("f_pytds", True)
cur = conn.cursor()
try:
    cur.execute("INSERT INTO t VALUES (1, 'lost')")
    raise AssertionError("INSERT reported done, rowcount %r" % cur.rowcount)
except pytds.Error as e:
    assert "sync" in str(e), str(e)
    print("ok: autocommit INSERT failed:", e)

# pytds's own transactions (TM requests): the INSERT runs, commit() must raise.
conn = connect("f_pytds_commit", False)
cur = conn.cursor()
cur.execute("INSERT INTO t VALUES (1, 'lost')")
print("inserted", flush=True)
sys.stdin.readline()
try:
    conn.commit()
    raise AssertionError("commit() reported done")
except pytds.Error as e:
    assert "sync" in str(e), str(e)
    print("ok: commit failed:", e)
print("all checks passed")
"#;
