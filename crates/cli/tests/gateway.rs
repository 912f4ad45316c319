//! Many servers behind one address: etcd (Debian's etcd-server, started here on loopback),
//! two `tessera serve --etcd` publishing their databases, and two `tessera gateway`s.
//! Clients — `tessera sql`, python-tds, tedious, go-mssqldb and mssql-jdbc — connect to a gateway naming a database and
//! land on the server that holds it; a database no server holds gets 4060; a CREATE
//! DATABASE through a gateway lands on the least-loaded server; a server refuses logins
//! into a database the directory gives to another (40613), also one it published
//! itself and the directory then gave away (whose sessions it ends); a killed
//! server's tenants fail cleanly while the other's go on; a killed gateway leaves the
//! other serving; a tenant moves between servers under a writer with every acknowledged
//! insert; python-tds, tedious, go-mssqldb and mssql-jdbc follow a redirecting gateway's
//! routing to the server itself.

mod common;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{listening_port, start_with, Server, PASSWORD};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A one-member etcd cluster on loopback: its client address.
fn start_etcd(dir: &std::path::Path) -> (Process, String) {
    let (client, peer) = (free_port(), free_port());
    let child = Command::new("etcd")
        .args(["--name", "tessera-test", "--data-dir"])
        .arg(dir)
        .args([
            &format!("--listen-client-urls=http://127.0.0.1:{client}"),
            &format!("--advertise-client-urls=http://127.0.0.1:{client}"),
            &format!("--listen-peer-urls=http://127.0.0.1:{peer}"),
            &format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"),
            &format!("--initial-cluster=tessera-test=http://127.0.0.1:{peer}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd (Debian's etcd-server; scripts/install-clients.sh installs it)");
    let address = format!("127.0.0.1:{client}");
    let started = Instant::now();
    while std::net::TcpStream::connect(&address).is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "etcd did not start listening");
        std::thread::sleep(Duration::from_millis(50));
    }
    (Process(child), address)
}

/// `tessera gateway --port 0`: the process and its port (from its first line on stderr).
fn start_gateway(etcd: &str, tls_dir: &std::path::Path) -> (Process, u16) {
    start_gateway_with(etcd, tls_dir, &[])
}

fn start_gateway_with(etcd: &str, tls_dir: &std::path::Path, extra: &[&str]) -> (Process, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["gateway", "--port", "0", "--etcd", etcd, "--tls-dir"])
        .arg(tls_dir)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let port = listening_port(&mut child, "listening on 127.0.0.1:");
    (Process(child), port)
}

fn serve(etcd: &str, name: &str) -> Server {
    serve_with(etcd, name, &[])
}

fn serve_with(etcd: &str, name: &str, extra: &[String]) -> Server {
    let mut args = serve_args(etcd, name);
    args.extend_from_slice(extra);
    start_with(&args)
}

/// `tessera serve`'s flags for a server named `name` in the directory at `etcd`.
fn serve_args(etcd: &str, name: &str) -> Vec<String> {
    vec!["--etcd".to_string(), etcd.to_string(), "--server-name".to_string(), name.to_string()]
}

/// `tessera sql` through the gateway at `port`, in `database`: (succeeded, all output).
fn through(port: u16, database: &str, query: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sql", "-S", &format!("127.0.0.1,{port}"), "-U", "sa", "-P", PASSWORD, "-d", database])
        .args(["-b", "-h", "-1", "-W", "-Q", &format!("SET NOCOUNT ON; {query}")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// Retries `query` through the gateway until it succeeds (the directory is updated
/// within a second of a CREATE DATABASE), for at most 15 s.
fn eventually(port: u16, database: &str, query: &str) -> String {
    let started = Instant::now();
    loop {
        let (ok, text) = through(port, database, query);
        if ok {
            return text;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{database}: {query}: {text}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn gateways_route_each_login_to_the_server_that_holds_its_database() {
    let dir = tempfile::tempdir().unwrap();
    let (_etcd, etcd) = start_etcd(&dir.path().join("etcd"));
    let s1 = serve(&etcd, "s1");
    let s2 = serve(&etcd, "s2");
    s1.sql("create database t1");
    s2.sql("create database t2");
    let metrics_port = free_port();
    let (gateway1, port1) =
        start_gateway_with(&etcd, &dir.path().join("tls"), &["--metrics-port", &metrics_port.to_string()]);
    let (_gateway2, port2) = start_gateway(&etcd, &dir.path().join("tls"));

    // Each login lands where its database is: writes through the gateway are read back on
    // that server directly, and the other server has no such database.
    assert_eq!(eventually(port1, "t1", "select db_name()").trim(), "t1");
    assert_eq!(eventually(port1, "t2", "select db_name()").trim(), "t2");
    let (ok, text) = through(port1, "t1", "create table a (v int); insert a values (1)");
    assert!(ok, "{text}");
    let (ok, text) = through(port2, "t2", "create table a (v int); insert a values (2)");
    assert!(ok, "{text}");
    assert_eq!(s1.sql("set nocount on; select v from t1.dbo.a").trim(), "1");
    assert_eq!(s2.sql("set nocount on; select v from t2.dbo.a").trim(), "2");
    assert_eq!(s1.sql("set nocount on; select count(*) from sys.databases where name = 't2'").trim(), "0");

    // Outside drivers through the proxying gateway, each into a database on each server:
    // python-tds, tedious, go-mssqldb and mssql-jdbc (`tessera sql` above encrypts its
    // login, terminated at the gateway).
    let drivers = [("python-tds", "t2"), ("tedious", "t1"), ("go-mssqldb", "t2"), ("mssql-jdbc", "t1")];
    finish_drivers(start_drivers(port1, &drivers, None, None));

    // A database no server holds: SQL Server's 4060, from the gateway.
    let (ok, text) = through(port1, "nowhere", "select 1");
    assert!(!ok);
    assert!(text.contains("Cannot open database \"nowhere\" requested by the login"), "{text}");

    // The gateway counts what it routed and is ready while its directory copy is current.
    let metrics = http_get(metrics_port, "/metrics");
    let figure = |name: &str| -> f64 {
        let line = metrics.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}: {metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(figure("tessera_gateway_connections_total{outcome=\"proxied\"}") >= 4.0, "{metrics}");
    assert!(figure("tessera_gateway_connections_total{outcome=\"no_database\"}") >= 1.0, "{metrics}");
    assert_eq!(figure("tessera_gateway_directory_current"), 1.0);
    assert_eq!(figure("tessera_gateway_directory_servers"), 2.0);
    assert!(figure("tessera_gateway_routing_seconds_count") >= 5.0, "{metrics}");
    assert!(http_get(metrics_port, "/healthz").starts_with("HTTP/1.0 200 OK"));

    // A database created later is routed as soon as its server publishes it.
    s2.sql("create database t3");
    assert_eq!(eventually(port2, "t3", "select db_name()").trim(), "t3");

    // CREATE DATABASE through a gateway (a login into master) lands on the server that
    // holds the fewest databases: s1 gets two more, so s2 (t2, t3) is the lighter.
    s1.sql("create database t4; create database t5");
    // (s1 alone has t4: a login into master that sees none is on s2)
    let on_s2 = |port| through(port, "master", "select count(*) from sys.databases where name = 't4'").1.trim() == "0";
    let started = Instant::now();
    while !on_s2(port1) {
        assert!(started.elapsed() < Duration::from_secs(15), "master logins never went to s2");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (ok, text) = through(port1, "master", "create database placed");
    assert!(ok, "{text}");
    assert_eq!(s2.sql("set nocount on; select count(*) from sys.databases where name = 'placed'").trim(), "1");
    assert_eq!(eventually(port2, "placed", "select count(*) from sys.databases where name = 't4'").trim(), "0");

    // A server is fenced from a database the directory gives to another: s2 makes its own
    // t1, which s1 owns, and refuses logins into it (40613) while s1's t1 is served.
    s2.sql("create database t1");
    let direct = |server: &Server| {
        let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["sql", "-S", &server.address(), "-U", "sa", "-P", PASSWORD, "-d", "t1", "-b", "-Q", "select 1"])
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    };
    let started = Instant::now();
    let refused = loop {
        let (ok, text) = direct(&s2);
        if !ok {
            break text;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "s2 kept serving s1's t1: {text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(refused.contains("Database 't1' on server") && refused.contains("is not currently available"), "{refused}");
    assert!(direct(&s1).0);
    assert_eq!(through(port1, "t1", "select v from dbo.a").1.trim(), "1");

    // A server learns that a tenant it published was taken from it: the directory flips
    // t1 to s2, as a move does (and a mover cut off after the flip leaves it, its source's
    // copy not yet dropped). s1 refuses t1 from then on, s2 serves its own, and the
    // gateway routes there; flipped back, s1 serves it again.
    let directory = |from: &str, to: &str| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let directory = tessera_gateway::directory::Directory::new(tessera_gateway::etcd::Etcd::new(&etcd));
        rt.block_on(directory.transfer("t1", from, to)).unwrap();
    };
    let refuses = |server: &Server| {
        let started = Instant::now();
        loop {
            let (ok, text) = direct(server);
            if !ok {
                break text;
            }
            assert!(started.elapsed() < Duration::from_secs(15), "kept serving t1 the directory gave away: {text}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    // A session already in t1 on s1 (it logged in to master and then USEd t1) is ended.
    let mut inside = s1.sql_in_background("use t1; while 1 = 1 begin waitfor delay '00:00:00.050' end");
    std::thread::sleep(Duration::from_millis(500));
    assert!(inside.try_wait().unwrap().is_none(), "the session in t1 ended before the flip");
    directory("s1", "s2");
    assert!(refuses(&s1).contains("is not currently available"));
    let started = Instant::now();
    while inside.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(10), "s1 kept a session in t1 the directory gave away");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nor may a session log in to master and USE it.
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sql", "-S", &s1.address(), "-U", "sa", "-P", PASSWORD, "-b", "-Q", "use t1; select 1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && text.contains("Database 't1' on server"), "{text}");
    assert!(text.contains("is not currently available"), "{text}");
    assert_eq!(eventually(port1, "t1", "select count(*) from sys.tables").trim(), "0", "s2's own t1");
    directory("s2", "s1");
    assert!(refuses(&s2).contains("is not currently available"));
    assert_eq!(eventually(port1, "t1", "select v from dbo.a").trim(), "1");

    // A killed server: its tenants' logins fail cleanly (40613 while the directory still
    // names it, 4060 once its lease has gone), the other server's go on; back on its
    // data directory (at a new port), it publishes itself again and its tenants are
    // routed to it with their data.
    let mut s2 = s2;
    s2.kill();
    let (ok, text) = through(port1, "t2", "select 1");
    assert!(!ok);
    assert!(text.contains("not currently available") || text.contains("Cannot open database"), "{text}");
    assert_eq!(through(port1, "t1", "select v from dbo.a").1.trim(), "1");
    let s2 = s2.restart_with(&serve_args(&etcd, "s2"));
    assert_eq!(eventually(port1, "t2", "select v from dbo.a").trim(), "2");
    drop(s2);

    // A killed gateway: the other serves on.
    drop(gateway1);
    assert_eq!(through(port2, "t1", "select v from dbo.a").1.trim(), "1");
}

/// Inserts 1, 2, 3 … into `mv.dbo.w` through the gateway at argv[1] until the file
/// argv[3] exists, reconnecting after any error and retrying the same value (a duplicate
/// key on the retry means the insert had committed before the connection broke). Prints
/// the values acknowledged, the longest gap between two acknowledgements (ms) and the
/// errors seen.
const WRITER: &str = r#"
import os, sys, time, pytds
port, password, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conn, n, errors, gap = None, 0, 0, 0.0
last = time.monotonic()
while not os.path.exists(stop):
    try:
        if conn is None:
            conn = pytds.connect(server='127.0.0.1', port=port, database='mv', user='sa', password=password,
                                 autocommit=True, login_timeout=5)
        try:
            conn.cursor().execute('insert dbo.w values (%d)' % (n + 1))
        except pytds.IntegrityError:
            pass
        n += 1
        now = time.monotonic()
        gap, last = max(gap, now - last), now
    except Exception:
        errors += 1
        try:
            conn.close()
        except Exception:
            pass
        conn = None
        time.sleep(0.01)
print(n, int(gap * 1000), errors)
"#;

#[test]
fn a_tenant_moves_between_servers_while_a_client_writes_through_a_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let (_etcd, etcd) = start_etcd(&dir.path().join("etcd"));
    let s1 = serve(&etcd, "s1");
    let s2 = serve(&etcd, "s2");
    s1.sql("create database mv");
    s1.sql("create table mv.dbo.w (n int primary key)");
    let (_gateway, port) = start_gateway(&etcd, &dir.path().join("tls"));
    eventually(port, "mv", "select count(*) from dbo.w");
    let through = dir.path().join("through");
    std::fs::create_dir(&through).unwrap();
    let mover = |database: &str, to: &str| {
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["move", "--etcd", &etcd, "--database", database, "--to", to, "--through"])
            .arg(&through)
            .args(["-P", PASSWORD])
            .output()
            .unwrap()
    };

    // Moves that cannot be made fail before anything changes.
    let out = mover("mv", "s9");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("server 's9' is not live"), "{out:?}");
    let out = mover("mv", "s1");
    assert!(String::from_utf8_lossy(&out.stderr).contains("already on server 's1'"), "{out:?}");
    s2.sql("create database mv");
    let out = mover("mv", "s2");
    assert!(String::from_utf8_lossy(&out.stderr).contains("already has a database named 'mv'"), "{out:?}");
    s2.sql("drop database mv");
    let recovery = s1.sql("set nocount on; select recovery_model_desc from sys.databases where name = 'mv'");

    // A client writes through the gateway all along; the tenant moves under it.
    let stop = dir.path().join("stop");
    let writer = Command::new("python3")
        .args(["-c", WRITER, &port.to_string(), PASSWORD])
        .arg(&stop)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let out = mover("mv", "s2");
    let report = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}{report}", String::from_utf8_lossy(&out.stderr));
    assert!(report.starts_with("Moved 'mv' from s1 to s2:"), "{report}");
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::write(&stop, b"").unwrap();
    let out = writer.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "writer: {}", String::from_utf8_lossy(&out.stderr));
    let figures: Vec<u64> = text.split_whitespace().map(|f| f.parse().unwrap()).collect();
    let (acknowledged, gap_ms) = (figures[0], figures[1]);
    eprintln!(
        "move: {report}client: {acknowledged} inserts acknowledged, longest gap {gap_ms} ms, {} errors",
        figures[2]
    );

    // Every acknowledged insert is on s2, nothing else, and s1 holds the tenant no more.
    let on_s2 = s2.sql("set nocount on; select count(*), isnull(max(n), 0) from mv.dbo.w");
    let on_s2: Vec<u64> = on_s2.split_whitespace().map(|f| f.parse().unwrap()).collect();
    assert_eq!(on_s2, [acknowledged, acknowledged], "rows on s2 and their highest value");
    assert!(acknowledged > 10, "the writer wrote: {acknowledged}");
    assert_eq!(s1.sql("set nocount on; select count(*) from sys.databases where name = 'mv'").trim(), "0");
    assert_eq!(s2.sql("set nocount on; select recovery_model_desc from sys.databases where name = 'mv'"), recovery);
    assert_eq!(eventually(port, "mv", "select count(*) from dbo.w").trim(), acknowledged.to_string());
    assert!(std::fs::read_dir(&through).unwrap().next().is_none(), "the backups were deleted");
}

/// `GET path` on 127.0.0.1:`port`: the whole response (HTTP/1.0, so the server closes).
fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(tcp, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).unwrap();
    response
}

/// Whether `program` can be started (the drivers' runtimes; scripts/install-clients.sh
/// installs them, and a test skips a driver whose runtime is missing).
fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

#[test]
fn drivers_follow_a_redirecting_gateway_to_the_server_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (_etcd, etcd) = start_etcd(&dir.path().join("etcd"));
    let s1 = serve(&etcd, "s1");
    let s2 = serve(&etcd, "s2");
    s1.sql("create database r1; create table r1.dbo.a (v int); insert r1.dbo.a values (1)");
    s2.sql("create database r2; create table r2.dbo.a (v int); insert r2.dbo.a values (2)");
    let (gateway, port) = start_gateway_with(&etcd, &dir.path().join("tls"), &["--connection-policy", "redirect"]);
    eventually(port, "r1", "select 1");
    eventually(port, "r2", "select 1");
    // A client that does not follow routing (tessera sql) stays proxied.
    assert_eq!(through(port, "r2", "select v from dbo.a").1.trim(), "2");

    // Each driver logs in through the gateway, is routed to the server that holds its
    // database, and keeps its connection after the gateway is gone: its queries never
    // passed through the gateway.
    let stop = dir.path().join("stop");
    let drivers = [("python-tds", "r1"), ("tedious", "r2"), ("go-mssqldb", "r1"), ("mssql-jdbc", "r2")];
    let running = start_drivers(port, &drivers, Some(&stop), None);
    drop(gateway);
    std::fs::write(&stop, b"").unwrap();
    finish_drivers(running);
    drop((s1, s2));
}

#[test]
fn strict_tls_passes_through_the_gateway_to_the_server_its_name_routes_to() {
    let dir = tempfile::tempdir().unwrap();
    let (_etcd, etcd) = start_etcd(&dir.path().join("etcd"));
    // The servers answer for every tenant's name with one wildcard certificate, as a
    // fleet behind `*.fleet.example.com` would.
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=fleet.test", "-addext", "subjectAltName=DNS:*.fleet.test", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "openssl: {}", String::from_utf8_lossy(&made.stderr));
    let tls =
        ["--tls-cert".to_string(), cert.display().to_string(), "--tls-key".to_string(), key.display().to_string()];
    let s1 = serve_with(&etcd, "s1", &tls);
    let s2 = serve_with(&etcd, "s2", &tls);
    s1.sql("create database r1; create table r1.dbo.a (v int); insert r1.dbo.a values (1)");
    s2.sql("create database r2; create table r2.dbo.a (v int); insert r2.dbo.a values (2)");
    let (_gateway, port) = start_gateway_with(&etcd, &dir.path().join("tls"), &["--tls", "passthrough"]);
    eventually(port, "r1", "select 1");
    eventually(port, "r2", "select 1");
    // TDS 8.0 strict, routed by the TLS server name `<database>.fleet.test`: the server
    // itself sees the connection encrypted (the gateway's link to a server is plaintext,
    // so a terminated connection would show FALSE there).
    let running = start_drivers(port, &[("tedious", "r2"), ("go-mssqldb", "r1")], None, Some(&cert));
    finish_drivers(running);
    // A connection that opens with PRELOGIN is still terminated and proxied.
    assert_eq!(through(port, "r1", "select v from dbo.a").1.trim(), "1");
    drop((s1, s2));
}

/// A driver's script connected to `database` through the gateway at `port`.
struct Running {
    name: &'static str,
    database: &'static str,
    child: Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

/// Starts each driver's script (tests/clients/redirect; a driver whose runtime is missing
/// is skipped) and checks its first lines: its database, and whether the server sees its
/// connection encrypted (`strict`: TDS 8.0 with the TLS server name
/// `<database>.fleet.test`, which must be, the servers' certificate `strict` checked by
/// the drivers). With `stop`, the scripts then wait for that file before their last query.
fn start_drivers(
    port: u16,
    drivers: &[(&'static str, &'static str)],
    stop: Option<&std::path::Path>,
    strict: Option<&std::path::Path>,
) -> Vec<Running> {
    let clients = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/redirect");
    let modules = concat!(env!("CARGO_MANIFEST_DIR"), "/../server/tests/clients/tedious/node_modules");
    let jdbc = concat!(env!("CARGO_MANIFEST_DIR"), "/../server/tests/clients/jdbc/lib/*");
    let pytds = "import sys, os, time, pytds\n\
        c = pytds.connect(server='127.0.0.1', port=int(sys.argv[1]), database=sys.argv[3], user='sa', \
        password=sys.argv[2], autocommit=True)\n\
        cur = c.cursor(); cur.execute('select db_name()'); print(cur.fetchall()[0][0])\n\
        cur.execute('select encrypt_option from sys.dm_exec_connections where session_id = @@spid')\n\
        print(cur.fetchall()[0][0], flush=True)\n\
        while sys.argv[4] != '-' and not os.path.exists(sys.argv[4]): time.sleep(0.02)\n\
        cur.execute('select v from dbo.a'); print(cur.fetchall()[0][0])\n";
    let port = port.to_string();
    let stop = stop.map_or("-".to_string(), |s| s.display().to_string());
    let mut running = Vec::new();
    for &(name, database) in drivers {
        let sni = format!("{database}.fleet.test");
        let mut args = vec![port.as_str(), PASSWORD, database, stop.as_str()];
        if strict.is_some() {
            args.push(&sni);
        }
        let (program, mut command) = match name {
            "python-tds" => ("python3", Command::new("python3")),
            "tedious" => ("node", Command::new("node")),
            "go-mssqldb" => ("go", Command::new("go")),
            _ => ("java", Command::new("java")),
        };
        if !have(program) {
            eprintln!("{program} is missing: {name} skipped");
            continue;
        }
        match name {
            "python-tds" => command.args(["-c", pytds]),
            "tedious" => {
                if let Some(ca) = strict {
                    command.env("NODE_EXTRA_CA_CERTS", ca);
                }
                command.arg(format!("{clients}/tedious.js")).arg(modules)
            }
            "go-mssqldb" => {
                if let Some(ca) = strict {
                    command.env("TESSERA_TLS_CERT", ca);
                }
                command.current_dir(format!("{clients}/go")).args(["run", "."])
            }
            _ => command.args(["-cp", jdbc, &format!("{clients}/Redirect.java")]),
        };
        let mut child = command.args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut lines = [String::new(), String::new()];
        for line in &mut lines {
            std::io::BufRead::read_line(&mut out, line).unwrap();
        }
        assert_eq!(lines[0].trim(), database, "{name} did not connect: {}", stderr_of(child));
        if strict.is_some() {
            assert_eq!(lines[1].trim(), "TRUE", "{name}: the server saw its connection unencrypted");
        }
        running.push(Running { name, database, child, out });
    }
    running
}

/// Each script's last query on its connection: r1's row is 1, r2's is 2.
fn finish_drivers(running: Vec<Running>) {
    for Running { name, database, mut child, mut out } in running {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        // Each test's databases end in the value their table holds (r1: 1, t2: 2).
        let expected = &database[database.len() - 1..];
        assert_eq!(line.trim(), expected, "{name} in {database}: {}", stderr_of(child));
        assert!(child.wait().unwrap().success(), "{name}");
    }
}

fn stderr_of(mut child: Child) -> String {
    let _ = child.kill();
    let mut text = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut text);
    }
    text
}

#[test]
fn rebalancing_brings_the_servers_within_the_band_and_keeps_every_tenant_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (_etcd, etcd) = start_etcd(&dir.path().join("etcd"));
    let servers = [serve(&etcd, "s1"), serve(&etcd, "s2"), serve(&etcd, "s3")];
    let tenants = |server: &Server| -> Vec<String> {
        let out = server.sql("set nocount on; select name from sys.databases where name not in ('master', 'tempdb', 'model', 'msdb') order by name");
        out.split_whitespace().map(str::to_string).collect()
    };
    for i in 0..6 {
        servers[0]
            .sql(&format!("create database b{i}; create table b{i}.dbo.a (v int); insert b{i}.dbo.a values ({i})"));
    }
    let (_gateway, port) = start_gateway(&etcd, &dir.path().join("tls"));
    eventually(port, "b5", "select 1");
    let through = dir.path().join("through");
    std::fs::create_dir(&through).unwrap();
    let rebalance = |extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
        c.args(["rebalance", "--etcd", &etcd, "--through"]).arg(&through).args(["-P", PASSWORD]).args(extra);
        c
    };
    // The directory has s1's count once it published (within a second).
    std::thread::sleep(Duration::from_millis(1500));

    // One round: 6/0/0 becomes 2/2/2, the smallest tenants first.
    let out = rebalance(&["--max-moves", "10"]).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{report}{}", String::from_utf8_lossy(&out.stderr));
    assert!(report.contains("4 tenants moved."), "{report}{}", String::from_utf8_lossy(&out.stderr));
    let counts: Vec<usize> = servers.iter().map(|s| tenants(s).len()).collect();
    assert_eq!(counts, [2, 2, 2]);
    // A round with nothing to do moves nothing.
    let out = rebalance(&[]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 tenants moved."));

    // Two controllers side by side (one holds the controller key and acts): three new
    // tenants on s3 are spread until each server holds three.
    let controllers: Vec<Process> =
        (0..2).map(|_| Process(rebalance(&["--watch", "1"]).stderr(Stdio::piped()).spawn().unwrap())).collect();
    for i in 6..9 {
        servers[2]
            .sql(&format!("create database b{i}; create table b{i}.dbo.a (v int); insert b{i}.dbo.a values ({i})"));
    }
    let started = Instant::now();
    loop {
        let counts: Vec<usize> = servers.iter().map(|s| tenants(s).len()).collect();
        if counts == [3, 3, 3] {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "not rebalanced: {counts:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    // Every tenant is whole, once, and the gateway finds it.
    let mut all: Vec<String> = servers.iter().flat_map(tenants).collect();
    all.sort();
    assert_eq!(all, (0..9).map(|i| format!("b{i}")).collect::<Vec<_>>());
    for i in 0..9 {
        assert_eq!(eventually(port, &format!("b{i}"), "select v from dbo.a").trim(), i.to_string());
    }

    // SIGTERM stops a controller between moves; the one that held the controller key
    // gives it up at once (no waiting out its lease).
    let controller_key = || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(tessera_gateway::etcd::Etcd::new(&etcd).get(b"/tessera/rebalancer")).unwrap()
    };
    assert!(controller_key().is_some());
    for mut c in controllers {
        assert_eq!(stopped(&mut c), "tessera rebalance: Stopped.");
    }
    assert_eq!(controller_key(), None);
    // A controller whose rounds are further apart than its lease lasts holds the key
    // across the wait, and a SIGTERM cuts the wait short.
    let mut lone = Process(rebalance(&["--watch", "600"]).stderr(Stdio::piped()).spawn().unwrap());
    let started = Instant::now();
    let holder = loop {
        if let Some(holder) = controller_key() {
            break holder;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the controller did not take the key");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(tessera_gateway::directory::LEASE_TTL + Duration::from_secs(2));
    assert_eq!(controller_key(), Some(holder), "the controller's key lapsed between its rounds");
    assert_eq!(stopped(&mut lone), "tessera rebalance: Stopped.");
    assert_eq!(controller_key(), None);
}

/// Sends SIGTERM to a `tessera rebalance --watch` and waits (10 s at most) for it to exit
/// successfully: its last line on stderr.
fn stopped(process: &mut Process) -> String {
    let child = &mut process.0;
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the controller did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut text).unwrap();
    assert!(status.success(), "{status}: {text}");
    text.lines().last().unwrap_or_default().to_string()
}
