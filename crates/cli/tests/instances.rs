//! Named instances as SQL Server runs them: `tessera serve --instance NAME` processes on
//! 127.0.0.1, found by real clients through the SQL Server Browser (SSRP on UDP 1434) as
//! `127.0.0.1\NAME` — python-tds, pymssql (FreeTDS), FreeTDS's tsql, tedious and
//! `tessera sql -S` — two instances at once, the browser handed over when its holder stops or
//! dies, malformed datagrams, and the locks on a data directory and on an instance name.
//!
//! UDP 1434 is one per host, so everything that needs it is this one test, and no other
//! test binary starts a named instance (default-instance servers never bind 1434).
//! The clients come from `scripts/install-clients.sh`; a missing one is a failure.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use tessera_server::browser::parse_response;

const PASSWORD: &str = "Str0ng!pass";

/// How long a step may take before the test gives up (never a pass/fail criterion).
const PATIENCE: Duration = Duration::from_secs(120);

struct Instance {
    name: &'static str,
    child: Child,
    lines: Receiver<String>,
    port: u16,
}

impl Instance {
    /// Starts `tessera serve --instance name` with no port (a free one is picked) and
    /// returns once it accepts connections.
    fn start(name: &'static str, data_dir: &Path, registry: &Path) -> Instance {
        let mut child =
            serve(&["--instance", name, "--data-dir"], data_dir, registry).stderr(Stdio::piped()).spawn().unwrap();
        let (tx, lines) = channel();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                eprintln!("[{name}] {line}");
                let _ = tx.send(line);
            }
        });
        let mut instance = Instance { name, child, lines, port: 0 };
        let listening = instance.wait_for("Server is listening on [ 127.0.0.1 <ipv4> ");
        instance.port = listening.rsplit(' ').next().unwrap().trim_end_matches("].").parse().unwrap();
        instance.wait_for("Named instance ");
        instance
    }

    /// Waits for the next log line containing `needle`.
    fn wait_for(&self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(PATIENCE) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("{}: no log line with {needle:?} ({e})", self.name),
            }
        }
    }

    /// Stops the server as SIGTERM does and waits for it to exit.
    fn stop(mut self) {
        let status = Command::new("kill").arg(self.child.id().to_string()).status().unwrap();
        assert!(status.success());
        assert!(self.child.wait().unwrap().success(), "{} exits cleanly on SIGTERM", self.name);
    }

    /// Kills the server (SIGKILL): its instance entry stays behind, unlocked.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str], data_dir: &Path, registry: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.args(["serve", "--memory-mb", "64"])
        .args(args)
        .arg(data_dir)
        .arg("--instances-dir")
        .arg(registry)
        .env("TESSERA_SA_PASSWORD", PASSWORD)
        .stdout(Stdio::null());
    c
}

/// Sends `request` to the browser on 127.0.0.1:1434 and returns its reply.
fn ssrp(socket: &UdpSocket, request: &[u8]) -> Vec<u8> {
    socket.send_to(request, ("127.0.0.1", 1434)).unwrap();
    let mut buf = vec![0u8; 65_536];
    let n = socket.recv(&mut buf).expect("an answer from the SQL Server Browser");
    buf.truncate(n);
    buf
}

fn udp() -> UdpSocket {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(PATIENCE)).unwrap();
    socket
}

fn listed(socket: &UdpSocket) -> Vec<(String, u16)> {
    parse_response(&ssrp(socket, &[0x03])).expect("an SVR_RESP")
}

/// Runs `command`, requiring success and the given words in its output.
fn run(what: &str, command: &mut Command, expect: &[&str]) {
    let out =
        command.output().unwrap_or_else(|e| panic!("{what}: cannot start it ({e}); run scripts/install-clients.sh"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed:\n{text}");
    for word in expect {
        assert!(text.contains(word), "{what}: no {word:?} in\n{text}");
    }
}

const PROBE: &str = "SELECT @@SERVICENAME AS svc, CAST(SERVERPROPERTY('InstanceName') AS nvarchar(16)) AS inst";

fn tessera_sql(server: &str, query: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.args(["sql", "-S", server, "-U", "sa", "-P", PASSWORD, "-h", "-1", "-W", "-Q", query]);
    c
}

fn pytds(instance: &str) -> Command {
    let mut c = Command::new("python3");
    c.args([
        "-c",
        "import sys, pytds\n\
         with pytds.connect(dsn=sys.argv[1], user='sa', password=sys.argv[2], autocommit=True) as conn:\n\
         \x20   cur = conn.cursor(); cur.execute(sys.argv[3]); print('pytds', *cur.fetchone())\n",
        &format!("127.0.0.1\\{instance}"),
        PASSWORD,
        PROBE,
    ]);
    c
}

fn pymssql(instance: &str) -> Command {
    let mut c = Command::new("python3");
    c.args([
        "-c",
        "import sys, pymssql\n\
         conn = pymssql.connect(server=sys.argv[1], user='sa', password=sys.argv[2], tds_version='7.4')\n\
         cur = conn.cursor(); cur.execute(sys.argv[3]); print('pymssql', *cur.fetchone()); conn.close()\n",
        &format!("127.0.0.1\\{instance}"),
        PASSWORD,
        PROBE,
    ]);
    c
}

/// FreeTDS's tsql, with a freetds.conf entry naming the instance (no port: FreeTDS asks
/// the browser).
fn tsql(dir: &Path, instance: &str) -> Command {
    let conf = dir.join("freetds.conf");
    std::fs::write(
        &conf,
        format!("[named]\n\thost = 127.0.0.1\n\tinstance = {instance}\n\ttds version = 7.4\n\tencryption = off\n"),
    )
    .unwrap();
    let mut c = Command::new("tsql");
    c.args(["-S", "named", "-U", "sa", "-P", PASSWORD, "-o", "q"])
        .env("FREETDSCONF", conf)
        .stdin(std::fs::File::open(write(dir, "probe.sql", &format!("{PROBE}\ngo\nexit\n"))).unwrap());
    c
}

fn tedious(instance: &str) -> Command {
    let modules = concat!(env!("CARGO_MANIFEST_DIR"), "/../server/tests/clients/tedious/node_modules");
    let mut c = Command::new("node");
    c.env("NODE_PATH", modules).args([
        "-e",
        "const { Connection, Request } = require('tedious');\n\
         const [instanceName, password, sql] = process.argv.slice(1);\n\
         const conn = new Connection({ server: '127.0.0.1', authentication: { type: 'default',\n\
           options: { userName: 'sa', password } }, options: { instanceName, trustServerCertificate: true } });\n\
         conn.on('connect', (err) => { if (err) { console.error(err); process.exit(1); }\n\
           const req = new Request(sql, (e) => { if (e) { console.error(e); process.exit(1); } conn.close(); });\n\
           req.on('row', (cols) => console.log('tedious', cols.map((c) => c.value).join(' ')));\n\
           conn.execSql(req); });\n\
         conn.connect();\n",
        instance,
        PASSWORD,
        PROBE,
    ]);
    c
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn named_instances_through_the_sql_server_browser() {
    let root = tempfile::tempdir().unwrap();
    let registry = root.path().join("instances");
    let (alpha_dir, beta_dir) = (root.path().join("alpha"), root.path().join("beta"));

    // The first named instance holds UDP 1434; the second finds it taken and waits.
    let alpha = Instance::start("ALPHA", &alpha_dir, &registry);
    alpha.wait_for("SQL Server Browser is listening on UDP port 1434");
    let beta = Instance::start("beta", &beta_dir, &registry);
    beta.wait_for("SQL Server Browser: UDP port 1434 on 127.0.0.1 is held by another process");
    assert_ne!(alpha.port, beta.port);

    // The holder answers for both, by CLNT_UCAST_EX and CLNT_UCAST_INST.
    let socket = udp();
    assert_eq!(listed(&socket), [("ALPHA".to_string(), alpha.port), ("BETA".to_string(), beta.port)]);
    assert_eq!(parse_response(&ssrp(&socket, b"\x04beta\0")).unwrap(), [("BETA".to_string(), beta.port)]);
    // Malformed datagrams get no answer and change nothing: the next reply is the answer
    // to the valid request that follows them.
    for bad in [&b""[..], b"\x00garbage", b"\x02\x02", b"\x04", b"\x0f\x01ALPHA\0", &[0x04; 200][..], b"\x04NOPE\0"] {
        socket.send_to(bad, ("127.0.0.1", 1434)).unwrap();
    }
    assert_eq!(parse_response(&ssrp(&socket, b"\x04ALPHA\0")).unwrap(), [("ALPHA".to_string(), alpha.port)]);

    // Real clients reach each instance by name.
    for (name, svc) in [("ALPHA", "ALPHA ALPHA"), ("BETA", "BETA BETA")] {
        run("tessera sql", &mut tessera_sql(&format!("127.0.0.1\\{}", name.to_lowercase()), PROBE), &[svc]);
        run("python-tds", &mut pytds(name), &[&format!("pytds {svc}")]);
        run("pymssql", &mut pymssql(name), &[&format!("pymssql {svc}")]);
        run("tsql", &mut tsql(root.path(), name), &[&svc.replace(' ', "\t")]);
        run("tedious", &mut tedious(name), &[&format!("tedious {svc}")]);
    }
    run(
        "@@SERVERNAME",
        &mut tessera_sql("127.0.0.1\\ALPHA", "SELECT @@SERVERNAME, SERVERPROPERTY('ServerName')"),
        &["tessera\\ALPHA tessera\\ALPHA"],
    );
    let unknown = tessera_sql("127.0.0.1\\NOPE", PROBE).args(["-l", "1"]).output().unwrap();
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("Error Locating Server/Instance Specified"));

    // A second server on a data directory in use fails at start, clearly; so does a second
    // instance of a running name, and an invalid name. The first goes on serving.
    let second = serve(&["--port", "0", "--data-dir"], &alpha_dir, &registry).output().unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{err}");
    assert!(err.contains("another tessera process") && err.contains(&format!("(pid {})", alpha.child.id())), "{err}");
    let twin = serve(&["--instance", "Alpha", "--data-dir"], &root.path().join("twin"), &registry).output().unwrap();
    let err = String::from_utf8_lossy(&twin.stderr);
    assert!(!twin.status.success() && err.contains("the instance ALPHA is already running"), "{err}");
    let bad =
        serve(&["--instance", "MSSQLSERVER", "--data-dir"], &root.path().join("bad"), &registry).output().unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && err.contains("'MSSQLSERVER' is not a valid instance name"), "{err}");
    run("tessera sql after the refusals", &mut tessera_sql("127.0.0.1\\ALPHA", PROBE), &["ALPHA ALPHA"]);

    // The holder stops: the other instance takes UDP 1434 over and answers for itself only.
    alpha.stop();
    beta.wait_for("SQL Server Browser took over UDP port 1434");
    assert_eq!(listed(&socket), [("BETA".to_string(), beta.port)]);
    run("python-tds after the handover", &mut pytds("BETA"), &["pytds BETA BETA"]);

    // ALPHA again (on its data directory, a new port); then the holder dies without
    // cleaning up: ALPHA takes over and the dead instance's entry is ignored and removed.
    let alpha = Instance::start("ALPHA", &alpha_dir, &registry);
    alpha.wait_for("SQL Server Browser: UDP port 1434 on 127.0.0.1 is held by another process");
    assert_eq!(listed(&socket), [("ALPHA".to_string(), alpha.port), ("BETA".to_string(), beta.port)]);
    beta.kill();
    assert!(registry.join("BETA").exists(), "a killed instance leaves its entry");
    alpha.wait_for("SQL Server Browser took over UDP port 1434");
    assert_eq!(listed(&socket), [("ALPHA".to_string(), alpha.port)]);
    assert!(!registry.join("BETA").exists(), "the dead instance's entry is removed");
    run("tedious after the takeover", &mut tedious("ALPHA"), &["tedious ALPHA ALPHA"]);
    alpha.stop();
    assert!(!registry.join("ALPHA").exists(), "a stopped instance removes its entry");
}
