//! `tessera serve` started as users start it (here on a port the system picks), and
//! `tessera sql -S` against it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{start, PASSWORD};

#[test]
fn serve_refuses_to_start_without_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .env_remove("TESSERA_SA_PASSWORD")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("TESSERA_SA_PASSWORD"));
}

/// Runs `tessera sql` with `args`, feeding `stdin`; returns (success, stdout, stderr).
#[test]
fn serve_with_explicit_huge_pages_it_cannot_have_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // More explicit huge pages than any test machine keeps free (1 TiB).
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["serve", "--port", "0", "--huge-pages", "on", "--memory-mb", "1048576", "--data-dir"])
        .arg(dir.path())
        .env("TESSERA_SA_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("huge_pages = on") && err.contains("vm.nr_hugepages"), "{err}");
}

fn tessera_sql(args: &[&str], stdin: &str) -> (bool, String, String) {
    tessera_sql_env(args, stdin, &[])
}

fn tessera_sql_env(args: &[&str], stdin: &str, env: &[(&str, &std::path::Path)]) -> (bool, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("sql")
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn tessera_sql_over_tds_prints_what_it_prints_in_process() {
    let server = start();
    let address = format!("127.0.0.1,{}", server.port);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/sql/seed002.sql");
    let scale = ["-v", "rows=300", "queries=20"];
    let (ok, remote, err) =
        tessera_sql(&[&["-S", &address, "-U", "sa", "-P", PASSWORD, "-b", "-i", script], &scale[..]].concat(), "");
    assert!(ok, "tessera sql -S failed: {err}\n{remote}");
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let (ok, local, err) = tessera_sql(&[&["--data-dir", data_dir, "-b", "-i", script], &scale[..]].concat(), "");
    assert!(ok, "tessera sql --data-dir failed: {err}");
    assert!(remote.contains("Batch execution completed 300 times."), "{remote}");
    assert_eq!(remote, local, "the same script prints the same over TDS and in process");

    // Errors keep their number, level, state and line; -b turns them into exit code 1.
    let bad = "select 1 as one\nselect * from no_such_table";
    let (ok, remote, _) = tessera_sql(&["-S", &address, "-P", PASSWORD, "-b", "-Q", bad], "");
    assert!(!ok);
    let (_, local, _) = tessera_sql(&["--data-dir", data_dir, "-Q", bad], "");
    assert!(remote.contains("Msg 208, Level 16, State 1, Line 2"), "{remote}");
    assert_eq!(remote, local);
}

#[test]
fn tessera_sql_logins_timeouts_and_the_prompt() {
    let server = start();
    let address = format!("127.0.0.1,{}", server.port);
    let (ok, out, err) = tessera_sql(&["-S", &address, "-U", "sa", "-P", "wrong", "-Q", "select 1"], "");
    assert!(!ok, "{out}");
    assert!(err.contains("Login failed for user 'sa'."), "{err}");

    // -t cancels a batch that runs too long; the connection goes on with the next batch.
    let slow = "waitfor delay '00:00:30'\ngo\nselect 42 as answer";
    let started = Instant::now();
    let (_, out, err) = tessera_sql(&["-S", &address, "-P", PASSWORD, "-t", "1", "-W", "-Q", slow], "");
    assert!(started.elapsed() < Duration::from_secs(20), "the slow batch was cancelled");
    assert!(err.contains("Query timeout expired"), "{err}");
    assert!(!out.contains("Msg 3617"), "an Attention is acknowledged, not reported as an error: {out}");
    assert!(out.contains("answer\n------\n42"), "{out}");

    // Without -Q or -i: sqlcmd's prompt, GO runs the batch, EXIT ends.
    let input =
        "create table t (a int)\ninsert t values (1), (2)\ngo\nselect count(*) as n from t\ngo 2\nexit\nselect 1\ngo\n";
    let (ok, out, err) = tessera_sql(&["-S", &address, "-P", PASSWORD, "-W"], input);
    assert!(ok, "{err}");
    assert_eq!(out, "1> 2> 3> \n(2 rows affected)\n1> 2> Beginning execution loop\nn\n-\n2\n\n(1 row affected)\nn\n-\n2\n\n(1 row affected)\nBatch execution completed 2 times.\n1> ");
}

#[test]
fn tessera_sql_encrypts() {
    let server = start();
    let address = format!("localhost,{}", server.port);
    let query =
        ["-W", "-h", "-1", "-Q", "select encrypt_option from sys.dm_exec_connections where session_id = @@spid"];
    // -N -C: the whole connection in TLS, the self-signed certificate taken on trust.
    let (ok, out, err) = tessera_sql(&[&["-S", &address, "-P", PASSWORD, "-N", "-C"], &query[..]].concat(), "");
    assert!(ok, "{err}");
    assert_eq!(out.lines().next(), Some("TRUE"), "{out}");
    // -N alone checks the certificate: unknown to the system's CAs, it is refused...
    let (ok, _, err) = tessera_sql(&["-S", &address, "-P", PASSWORD, "-N", "-Q", "select 1"], "");
    assert!(!ok);
    assert!(err.contains("certificate"), "{err}");
    // ...and accepted once trusted (SSL_CERT_FILE stands for the system's store).
    let cert = server.dir.path().join("tls/cert.pem");
    let (ok, out, err) = tessera_sql_env(
        &[&["-S", &address, "-P", PASSWORD, "-N"], &query[..]].concat(),
        "",
        &[("SSL_CERT_FILE", &cert)],
    );
    assert!(ok, "{err}");
    assert_eq!(out.lines().next(), Some("TRUE"), "{out}");
    // Without -N, or with -N o, only the login is encrypted.
    for optional in [&[][..], &["-N", "o"][..]] {
        let (ok, out, err) = tessera_sql(&[&["-S", &address, "-P", PASSWORD], optional, &query[..]].concat(), "");
        assert!(ok, "{err}");
        assert_eq!(out.lines().next(), Some("FALSE"), "{out}");
    }
    // -N s: TDS 8.0 strict, TLS before PRELOGIN.
    let (ok, out, err) = tessera_sql(&[&["-S", &address, "-P", PASSWORD, "-N", "s", "-C"], &query[..]].concat(), "");
    assert!(ok, "{err}");
    assert_eq!(out.lines().next(), Some("TRUE"), "{out}");
    let (ok, _, err) = tessera_sql(&["-S", &address, "-P", PASSWORD, "-N", "x", "-Q", "select 1"], "");
    assert!(!ok);
    assert!(err.contains("s[trict], m[andatory] or o[ptional]"), "{err}");
}
