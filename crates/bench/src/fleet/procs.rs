//! The fleet's processes: a one-member etcd on loopback, `tessera serve --etcd` servers
//! (started as [`Instance`]s with the directory's flags), `tessera gateway`s, and the
//! tenants each server holds — copies of a template, published in the directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::consolidation::scale::each_once;
use crate::consolidation::tessera::{free_port, Instance, InstanceSpec};
use crate::error::{BenchError, Result};
use tessera_gateway::etcd::KeyValue;

/// How long etcd and a gateway may take to listen.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(30);
/// `CREATE DATABASE … AS COPY OF` statements in one batch.
const COPIES_PER_BATCH: usize = 10;
/// Connections making one server's copies.
const COPY_CONNECTIONS: usize = 2;

/// A child process, killed (if still running) when dropped.
pub(crate) struct Spawned(pub Child);

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// A one-member etcd cluster on loopback (Debian's `etcd` on PATH), as the gateway's
/// tests start it: its client address.
pub(crate) struct Etcd {
    _process: Spawned,
    pub address: String,
}

impl Etcd {
    pub fn start(dir: &Path) -> Result<Etcd> {
        let (client, peer) = (free_port()?, free_port()?);
        let child = Command::new("etcd")
            .args(["--name", "tessera-bench", "--data-dir"])
            .arg(dir)
            .args([
                &format!("--listen-client-urls=http://127.0.0.1:{client}"),
                &format!("--advertise-client-urls=http://127.0.0.1:{client}"),
                &format!("--listen-peer-urls=http://127.0.0.1:{peer}"),
                &format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"),
                &format!("--initial-cluster=tessera-bench=http://127.0.0.1:{peer}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                BenchError::new(format!("etcd: {e} (Debian's etcd-server; scripts/install-clients.sh installs it)"))
            })?;
        let mut process = Spawned(child);
        let address = format!("127.0.0.1:{client}");
        let started = Instant::now();
        while std::net::TcpStream::connect(&address).is_err() {
            if let Some(status) = process.0.try_wait()? {
                return Err(BenchError::new(format!("etcd exited with {status}")));
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(BenchError::new("etcd did not listen in time"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Etcd { _process: process, address })
    }
}

/// A `tessera gateway --port 0`, its stderr in a file of the work directory.
pub(crate) struct Gateway {
    pub process: Spawned,
    pub port: u16,
    pub log: PathBuf,
}

impl Gateway {
    pub fn start(binary: &Path, etcd: &str, tls_dir: &Path, log: PathBuf) -> Result<Gateway> {
        let child = Command::new(binary)
            .args(["gateway", "--port", "0", "--etcd", etcd, "--tls-dir"])
            .arg(tls_dir)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log)?)
            .spawn()
            .map_err(|e| BenchError::new(format!("{} gateway: {e}", binary.display())))?;
        let mut process = Spawned(child);
        let started = Instant::now();
        let port = loop {
            let text = fs::read_to_string(&log).unwrap_or_default();
            if let Some(port) = listening_port(&text) {
                break port;
            }
            if let Some(status) = process.0.try_wait()? {
                return Err(BenchError::new(format!("tessera gateway exited with {status}: {text}")));
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(BenchError::new(format!("tessera gateway did not listen in time: {text}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Ok(Gateway { process, port, log })
    }

    pub fn pid(&self) -> u32 {
        self.process.0.id()
    }
}

/// The port of "listening on 127.0.0.1:PORT" in a gateway's stderr.
fn listening_port(text: &str) -> Option<u16> {
    let rest = &text[text.find("listening on 127.0.0.1:")? + "listening on 127.0.0.1:".len()..];
    rest[..rest.find(|c: char| !c.is_ascii_digit())?].parse().ok()
}

/// A server of the fleet (`--etcd`, `--server-name name`) or, with `etcd` None, the
/// peer: on `dir`, with `memory_mb` and room for `databases` open at once.
pub(crate) fn start_server(
    binary: &Path,
    dir: PathBuf,
    memory_mb: usize,
    databases: usize,
    directory: Option<(&str, &str)>,
) -> Result<(Instance, InstanceSpec)> {
    let spec = InstanceSpec {
        binary: Some(binary.to_path_buf()),
        dir,
        memory_mb,
        max_open: databases + 64,
        affinity_mask: None,
        metrics_port: None,
        descriptor_limit: None,
    };
    let args: Vec<String> = match directory {
        Some((etcd, name)) => ["--etcd", etcd, "--server-name", name].map(String::from).to_vec(),
        None => Vec::new(),
    };
    Ok((Instance::start_with(&spec, Vec::new(), &args)?, spec))
}

/// A tenant's name: one namespace over the whole fleet.
pub(crate) fn tenant(i: usize) -> String {
    format!("t{i:06}")
}

/// The tenants `tenants` on `server`: a template (`template`, a table `t` of `rows` rows)
/// copied as each (`CREATE DATABASE … AS COPY OF`, [`COPIES_PER_BATCH`] to a batch, on
/// [`COPY_CONNECTIONS`] connections), then dropped.
pub(crate) fn make_tenants(
    server: &Instance,
    template: &str,
    tenants: std::ops::Range<usize>,
    rows: usize,
) -> Result<()> {
    let values: Vec<String> = (1..=rows).map(|i| format!("({i}, 0, 'row {i}')")).collect();
    let mut setup = vec![format!("create database [{template}]")];
    for chunk in values.chunks(1000) {
        setup.push(format!(
            "use [{template}]; if object_id('t') is null create table t (id int primary key, v int not null, \
             note varchar(40)); insert t values {}",
            chunk.join(", ")
        ));
    }
    server.admin(&setup)?;
    let names: Vec<usize> = tenants.collect();
    let batches: Vec<String> = names
        .chunks(COPIES_PER_BATCH)
        .map(|c| c.iter().map(|&i| format!("create database [{}] as copy of [{template}];", tenant(i))).collect())
        .collect();
    // Each connection runs the same share; what does not divide runs on one.
    let even = batches.len() - batches.len() % COPY_CONNECTIONS;
    for (part, connections) in [(&batches[..even], COPY_CONNECTIONS), (&batches[even..], 1)] {
        if !part.is_empty() {
            each_once(server.port, part, connections, None, "copying the template")?;
        }
    }
    server.admin(&[format!("drop database [{template}]")])?;
    Ok(())
}

/// Reads the directory keys under `prefix` every `every` until `done` says it has what it
/// waits for (Ok), or `timeout` passes (Err: what `done` said last); the time it took.
fn poll_directory(
    etcd: &str,
    prefix: &[u8],
    every: Duration,
    timeout: Duration,
    done: impl Fn(&[KeyValue]) -> std::result::Result<(), String>,
) -> Result<Duration> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let client = tessera_gateway::etcd::Etcd::new(etcd);
    let started = Instant::now();
    loop {
        let (kvs, _) = runtime
            .block_on(client.range_prefix(prefix))
            .map_err(|e| BenchError::new(format!("reading the directory: {e}")))?;
        match done(&kvs) {
            Ok(()) => return Ok(started.elapsed()),
            Err(e) if started.elapsed() > timeout => {
                return Err(BenchError::new(format!("{e} after {} s", timeout.as_secs())))
            }
            Err(_) => std::thread::sleep(every),
        }
    }
}

/// Waits until every server `names[i]` has published itself in the directory at `etcd`:
/// its fence is live from then on (before, it serves no tenant, USE included).
pub(crate) fn wait_registered(etcd: &str, names: &[String], timeout: Duration) -> Result<()> {
    poll_directory(etcd, b"/tessera/servers/", Duration::from_millis(50), timeout, |kvs| {
        let registered = |n: &String| kvs.iter().any(|kv| kv.key.ends_with(format!("/{n}").as_bytes()));
        if names.iter().all(registered) {
            Ok(())
        } else {
            Err(format!("servers {names:?} did not all publish themselves"))
        }
    })
    .map(drop)
}

/// Waits until the directory in etcd at `etcd` names `expected[i]` tenants for each server
/// `names[i]` (and nothing else); the time it took.
pub(crate) fn wait_published(etcd: &str, names: &[String], expected: &[usize], timeout: Duration) -> Result<Duration> {
    poll_directory(etcd, b"/tessera/databases/", Duration::from_millis(200), timeout, |kvs| {
        let counts: Vec<usize> =
            names.iter().map(|n| kvs.iter().filter(|kv| kv.value == n.as_bytes()).count()).collect();
        if counts == expected && kvs.len() == expected.iter().sum::<usize>() {
            Ok(())
        } else {
            Err(format!(
                "the directory names {counts:?} tenants for servers {names:?} ({} keys), not {expected:?}",
                kvs.len()
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_port_is_read_from_its_first_line() {
        let line = "tessera gateway: listening on 127.0.0.1:40123, directory in etcd at 127.0.0.1:2379\n";
        assert_eq!(listening_port(line), Some(40123));
        assert_eq!(listening_port("tessera gateway: listening on 127.0.0.1:4"), None);
        assert_eq!(listening_port(""), None);
    }
}
