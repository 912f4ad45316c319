//! PostgreSQL as a peer: a server of the benchmark's own (`initdb` + `postgres` on a free
//! port, as the `postgres` user when run as root), psql for setup and checks, and pgbench
//! driving it. Install it with scripts/install-postgres.sh.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cpu::{postgres_cpu, rusage_cpu};
use crate::error::{BenchError, Result};

/// The PostgreSQL tools, from PATH or Debian's versioned directory.
pub fn pg_tool(name: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    let mut versions: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql").ok()?.flatten().map(|e| e.path()).collect();
    versions.sort();
    versions.into_iter().rev().map(|v| v.join("bin").join(name)).find(|p| p.is_file())
}

pub(crate) fn is_root() -> bool {
    std::env::var("USER").map(|u| u == "root").unwrap_or(false)
        || fs::read_to_string("/proc/self/status")
            .map(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")))
            .unwrap_or(false)
}

/// A command run as the `postgres` user when we are root (initdb and postgres refuse root).
pub(crate) fn pg_command(tool: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(tool);
        c
    } else {
        Command::new(tool)
    }
}

pub(crate) fn run_checked(mut command: Command, what: &str) -> Result<String> {
    let out = command.output().map_err(|e| BenchError::new(format!("{what}: {e}")))?;
    if !out.status.success() {
        return Err(BenchError::new(format!(
            "{what} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A PostgreSQL server of our own, stopped on drop.
pub struct Postgres {
    child: Child,
    data: PathBuf,
    pub port: u16,
}

impl Postgres {
    /// The postmaster's pid (the child may be `runuser`).
    pub fn postmaster_pid(&self) -> u32 {
        fs::read_to_string(self.data.join("postmaster.pid"))
            .ok()
            .and_then(|s| s.lines().next().and_then(|l| l.trim().parse().ok()))
            .unwrap_or_else(|| self.child.id())
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT to the postmaster (named in postmaster.pid: the child may be `runuser`, which
        // does not forward signals) asks for a fast shutdown.
        let postmaster = self.postmaster_pid().to_string();
        let _ = Command::new("kill").args(["-INT", &postmaster]).status();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

pub fn start_postgres(dir: &Path, shared_buffers_mb: usize) -> Result<Postgres> {
    let missing =
        || BenchError::new("PostgreSQL is not installed (initdb, postgres, pgbench): run scripts/install-postgres.sh");
    let initdb = pg_tool("initdb").ok_or_else(missing)?;
    let data = dir.join("pgdata");
    fs::create_dir_all(dir)?;
    if is_root() {
        run_checked(
            {
                let mut c = Command::new("chown");
                c.args(["-R", "postgres:postgres"]).arg(dir);
                c
            },
            "chown to postgres",
        )?;
    }
    let mut init = pg_command(&initdb);
    init.args(["-D"]).arg(&data).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
    run_checked(init, "initdb")?;
    restart_postgres(dir, shared_buffers_mb)
}

/// Starts a server on the cluster `start_postgres` made in `dir` (after the previous one
/// was dropped): a new postmaster, so shared buffers start empty.
pub fn restart_postgres(dir: &Path, shared_buffers_mb: usize) -> Result<Postgres> {
    let postgres = pg_tool("postgres").ok_or_else(|| {
        BenchError::new("PostgreSQL is not installed (initdb, postgres, pgbench): run scripts/install-postgres.sh")
    })?;
    let data = dir.join("pgdata");
    let port = free_port()?;
    let mut start = pg_command(&postgres);
    start
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-k"])
        .arg(dir)
        .args(["-c", "listen_addresses=127.0.0.1", "-c", &format!("shared_buffers={shared_buffers_mb}MB")])
        .args(["-c", "max_connections=64", "-c", "synchronous_commit=on"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = start.spawn().map_err(|e| BenchError::new(format!("postgres: {e}")))?;
    let server = Postgres { child, data, port };
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err(BenchError::new("postgres did not start within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Accepting TCP is not yet accepting logins: wait for a query to work.
    while psql(port, "SELECT 1").is_err() {
        if Instant::now() > deadline {
            return Err(BenchError::new("postgres did not accept logins within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(server)
}

/// Runs the script `file` with psql in `database`, stopping at the first error; in one
/// transaction if `single_transaction`.
pub fn psql_file(port: u16, database: &str, file: &Path, single_transaction: bool) -> Result<String> {
    let tool = pg_tool("psql").ok_or_else(|| BenchError::new("psql is not installed"))?;
    let mut c = Command::new(tool);
    c.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
        .args(["-d", database, "-f"])
        .arg(file);
    if single_transaction {
        c.arg("-1");
    }
    run_checked(c, "psql")
}

pub fn psql(port: u16, sql: &str) -> Result<String> {
    let tool = pg_tool("psql").ok_or_else(|| BenchError::new("psql is not installed"))?;
    let mut c = Command::new(tool);
    c.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
        .args(["-d", "postgres", "-c", sql]);
    run_checked(c, "psql")
}

/// Runs `sql` in `database` and returns its rows unaligned, without headers (`-At`:
/// columns separated by `|`).
pub fn psql_in(port: u16, database: &str, sql: &str) -> Result<String> {
    let tool = pg_tool("psql").ok_or_else(|| BenchError::new("psql is not installed"))?;
    let mut c = Command::new(tool);
    c.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-U", "postgres", "-d", database, "-c", sql]);
    run_checked(c, "psql")
}

/// Both sides of a benchmark against PostgreSQL, each run in a fresh subdirectory of the
/// benchmark's directory (`tessera`, then `postgres`) that is removed afterwards.
pub struct Sides<A, B> {
    pub ours: Result<A>,
    pub peer: Result<B>,
}

impl<A, B> Sides<A, B> {
    pub fn run(
        dir: &Path,
        ours: impl FnOnce(&Path) -> Result<A>,
        peer: impl FnOnce(&Path) -> Result<B>,
    ) -> Result<Sides<A, B>> {
        let side = |sub: &str| {
            let path = dir.join(sub);
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).map(|_| path)
        };
        let path = side("tessera")?;
        let ours = ours(&path);
        let _ = fs::remove_dir_all(&path);
        let path = side("postgres")?;
        let peer = peer(&path);
        let _ = fs::remove_dir_all(&path);
        Ok(Sides { ours, peer })
    }

    /// The sides that failed, as a report's failures.
    pub fn failures(&self) -> Vec<String> {
        let ours = self.ours.as_ref().err().map(|e| format!("tessera: {e}"));
        let peer = self.peer.as_ref().err().map(|e| format!("postgresql: {e}"));
        ours.into_iter().chain(peer).collect()
    }
}

/// What pgbench reports of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PgbenchRun {
    /// Transactions per second (without the initial connection time).
    pub tps: f64,
    pub latency_ms: f64,
    /// "number of transactions actually processed".
    pub transactions: u64,
}

/// `tps = …`, `latency average = … ms` and the transactions processed, from pgbench's report.
pub fn parse_pgbench(out: &str) -> Result<PgbenchRun> {
    let field = |prefix: &str| {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .and_then(|rest| rest.split(|c: char| c.is_whitespace() || c == '/').next())
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| BenchError::new(format!("no '{prefix}' in pgbench's output: {out}")))
    };
    Ok(PgbenchRun {
        tps: field("tps = ")?,
        latency_ms: field("latency average = ")?,
        transactions: field("number of transactions actually processed: ")? as u64,
    })
}

/// Runs pgbench against `server`: `clients` connections for `seconds`, the script in
/// `script`, the simple protocol; its CPU (server's, pgbench's) per transaction in µs too.
pub fn pgbench(server: &Postgres, script: &Path, clients: usize, seconds: u64) -> Result<(PgbenchRun, (f64, f64))> {
    let (run, cpu, _) = pgbench_logged(server, script, clients, seconds, None, None)?;
    Ok((run, cpu))
}

/// [`pgbench`], keeping every transaction's latency (µs) when `log_dir` is given: pgbench
/// writes them there (`-l`), one file per thread, and they are read back. With `rate`,
/// pgbench sends that many transactions per second in all (`-R`) instead of flat out.
pub fn pgbench_logged(
    server: &Postgres,
    script: &Path,
    clients: usize,
    seconds: u64,
    log_dir: Option<&Path>,
    rate: Option<f64>,
) -> Result<(PgbenchRun, (f64, f64), Vec<u32>)> {
    let tool = pg_tool("pgbench").ok_or_else(|| BenchError::new("pgbench is not installed"))?;
    let mut c = Command::new(&tool);
    c.args(["-n", "-M", "simple", "-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "postgres"])
        .args(["-c", &clients.to_string(), "-j", &clients.min(2).to_string(), "-T", &seconds.to_string(), "-f"])
        .arg(script);
    if let Some(rate) = rate {
        c.arg("-R").arg(format!("{rate}"));
    }
    if let Some(dir) = log_dir {
        fs::create_dir_all(dir)?;
        c.arg("-l").arg(format!("--log-prefix={}", dir.join("pgbench").display()));
    }
    c.arg("postgres");
    let postmaster = server.postmaster_pid();
    let (server_before, client_before) = (postgres_cpu(postmaster), rusage_cpu(libc::RUSAGE_CHILDREN));
    let run = parse_pgbench(&run_checked(c, "pgbench")?)?;
    // The backends exit with pgbench; give the postmaster a moment to reap them.
    std::thread::sleep(Duration::from_millis(300));
    let per_transaction = |cpu: f64| 1e6 * cpu / (run.transactions.max(1) as f64);
    let cpu = (
        per_transaction(postgres_cpu(postmaster) - server_before),
        per_transaction(rusage_cpu(libc::RUSAGE_CHILDREN) - client_before),
    );
    let mut latencies = Vec::new();
    if let Some(dir) = log_dir {
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("pgbench.")) {
                latencies.extend(parse_pgbench_log(&fs::read_to_string(&path)?));
                fs::remove_file(&path)?;
            }
        }
    }
    Ok((run, cpu, latencies))
}

/// The latencies (µs, the third field) of a pgbench per-transaction log:
/// `client_id transaction_no time script_no time_epoch time_us …`.
fn parse_pgbench_log(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .map(|us| us.min(u64::from(u32::MAX)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_report_lines() {
        let out = "transaction type: pointselect.sql\nnumber of clients: 16\nnumber of transactions actually processed: 394049/394049\nlatency average = 0.812 ms\ninitial connection time = 12.3 ms\ntps = 19702.480251 (without initial connection time)\n";
        let run = parse_pgbench(out).unwrap();
        assert!((run.tps - 19702.480251).abs() < 1e-6);
        assert!((run.latency_ms - 0.812).abs() < 1e-9);
        assert_eq!(run.transactions, 394049);
        assert!(parse_pgbench("nothing").is_err());
    }

    #[test]
    fn pgbench_log_latencies() {
        let log = "0 1 812 0 1700000000 123456\n3 7 95 0 1700000000 123999\nbad line\n";
        assert_eq!(parse_pgbench_log(log).collect::<Vec<_>>(), vec![812, 95]);
    }
}
