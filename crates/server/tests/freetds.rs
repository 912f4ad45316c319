//! FreeTDS's command-line tools against a real server: `tsql` (batches from stdin, an
//! error with its number, a wrong password) and `freebcp` (10,000 rows in through INSERT
//! BULK + BULK_LOAD, then out again, compared byte for byte). They come from Debian's
//! freetds-bin, which `scripts/install-clients.sh` installs; missing tools are a failure.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{TestServer, PASSWORD};

/// A FreeTDS configuration naming the server "tessera".
fn freetds_conf(dir: &Path, port: u16) -> std::path::PathBuf {
    let path = dir.join("freetds.conf");
    std::fs::write(
        &path,
        format!("[tessera]\n\thost = 127.0.0.1\n\tport = {port}\n\ttds version = 7.4\n\tencryption = off\n"),
    )
    .unwrap();
    path
}

fn tsql(conf: &Path, password: &str, script: &str) -> Output {
    let mut child = Command::new("tsql")
        .args(["-S", "tessera", "-U", "sa", "-P", password, "-o", "q"])
        .env("FREETDSCONF", conf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tsql is missing: run scripts/install-clients.sh (Debian's freetds-bin)");
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn freebcp(conf: &Path, args: &[&str]) -> Output {
    Command::new("freebcp")
        .args(args)
        .args(["-c", "-S", "tessera", "-U", "sa", "-P", PASSWORD])
        .env("FREETDSCONF", conf)
        .output()
        .expect("freebcp is missing: run scripts/install-clients.sh (Debian's freetds-bin)")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn tsql_and_freebcp() {
    let server = TestServer::start();
    let conf = freetds_conf(server.dir.path(), server.port());

    let out = tsql(
        &conf,
        PASSWORD,
        "CREATE DATABASE ftds\ngo\nUSE ftds\ngo\n\
         CREATE TABLE t (id int PRIMARY KEY, name nvarchar(30), amount decimal(10,2))\ngo\n\
         SELECT 40 + 2 AS answer, N'caf\u{e9}' AS word\ngo\n\
         SELECT * FROM no_such_table\ngo\n\
         CREATE PROCEDURE double_it @a int, @b int OUTPUT AS BEGIN SET @b = @a * 2; RETURN 7 END\ngo\n\
         DECLARE @o int, @rc int; EXEC @rc = double_it 21, @o OUTPUT; SELECT @o AS o, @rc AS rc\ngo\nexit\n",
    );
    let all = text(&out);
    assert!(all.contains("42") && all.contains("caf\u{e9}"), "{all}");
    assert!(all.contains("Msg 208") && all.contains("Invalid object name 'no_such_table'"), "{all}");
    assert!(all.contains("42\t7"), "OUTPUT parameter and return status: {all}");

    let wrong = tsql(&conf, "wrong", "select 1\ngo\nexit\n");
    assert!(!wrong.status.success() && text(&wrong).contains("18456"), "{}", text(&wrong));

    // 10,000 rows in with freebcp (batches of 1,000, each INSERT BULK + BULK_LOAD), then out.
    let rows: String = (1..=10_000).map(|i| format!("{i}\trow {i}\t{i}.25\n")).collect();
    let data_in = server.dir.path().join("in.tsv");
    std::fs::write(&data_in, &rows).unwrap();
    let load = freebcp(&conf, &["ftds.dbo.t", "in", data_in.to_str().unwrap()]);
    assert!(
        load.status.success() && text(&load).contains("10000 rows copied"),
        "{}\n{}",
        text(&load),
        server.errorlog()
    );
    let sum = tsql(&conf, PASSWORD, "SELECT COUNT(*), SUM(amount) FROM ftds.dbo.t\ngo\nexit\n");
    assert!(text(&sum).contains("10000\t50007500.00"), "{}", text(&sum));
    let data_out = server.dir.path().join("out.tsv");
    let unload = freebcp(&conf, &["ftds.dbo.t", "out", data_out.to_str().unwrap()]);
    assert!(unload.status.success(), "{}", text(&unload));
    assert_eq!(std::fs::read_to_string(&data_out).unwrap(), rows, "freebcp out gives back what went in");
}
