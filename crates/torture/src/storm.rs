//! The storm: a real `tessera serve` holding thousands of idle connections while busy
//! clients work and hostile ones do what hostile clients do — connect and say nothing,
//! send a byte a second, send oversized packets, batches and parameters, stall inside a
//! request, and flood the server with failed logins.
//!
//! The busy clients' latency is measured alone first, then under the storm, and both
//! printed with their ratio (a figure for docs/benchmarks.md, never a check). What is
//! checked: every busy request succeeds and none is lost (the counters they bump add up
//! to the acknowledged updates), every idle connection still answers at the end, and
//! every hostile client gets the answer its limit promises — a clear error, or its
//! connection closed within the time the configuration gives it. The server's memory is
//! read from /proc and from its own `sys.dm_os_process_memory` at each stage.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tessera_io::faults::Rng;
use tessera_server::packet::{kind, status, HEADER_LEN, MAX_PACKET_SIZE};
use tiberius::{AuthMethod, Client, Config, EncryptionLevel};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use crate::server::{cpu_seconds, Server, PASSWORD};

/// Rows of the busy clients' table.
const ROWS: u64 = 1000;
/// Logins opened at once while the idle connections are set up.
const OPENING_AT_ONCE: usize = 64;
/// A hostile client's connection counts as closed promptly within this.
const PROMPTLY: Duration = Duration::from_secs(3);
/// A hostile client's pause between two attempts: ten a second each, so that the clients
/// (which share the machine's cores with the server) flood the server rather than
/// themselves.
pub const HOSTILE_PACE: Duration = Duration::from_millis(100);

/// What one storm runs.
#[derive(Clone, Debug)]
pub struct StormPlan {
    pub idle: usize,
    pub busy: usize,
    /// Seconds of each measured phase (alone, then under the storm).
    pub seconds: u64,
    /// Clients of each hostile kind.
    pub hostile: usize,
    pub seed: u64,
}

/// The server's limits the storm runs under (its configuration file).
#[derive(Clone, Copy, Debug)]
struct Limits {
    login_timeout_secs: u64,
    request_stall_secs: u64,
    max_message_mb: usize,
    max_spool_mb: u64,
}

const LIMITS: Limits = Limits { login_timeout_secs: 4, request_stall_secs: 4, max_message_mb: 2, max_spool_mb: 8 };

/// Request latencies of one phase, and the CPU the server and this process (every
/// client) used meanwhile.
#[derive(Clone, Debug, Default)]
pub struct Latency {
    pub requests: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub server_cpu_seconds: f64,
    pub clients_cpu_seconds: f64,
}

impl Latency {
    fn of(mut micros: Vec<u64>) -> Latency {
        micros.sort_unstable();
        let at = |q: f64| micros.get(((micros.len() as f64 * q) as usize).min(micros.len().saturating_sub(1)));
        Latency {
            requests: micros.len() as u64,
            p50_us: at(0.50).copied().unwrap_or_default(),
            p99_us: at(0.99).copied().unwrap_or_default(),
            max_us: micros.last().copied().unwrap_or_default(),
            ..Latency::default()
        }
    }
}

/// The server's memory at one stage: resident now and at its peak (/proc), and what the
/// server itself reports (`sys.dm_os_process_memory.physical_memory_in_use_kb`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    pub resident_kib: u64,
    pub peak_kib: u64,
    pub reported_kib: u64,
}

/// What the clients of one hostile kind got.
#[derive(Clone, Debug, Default)]
pub struct Hostile {
    pub attempts: u64,
    /// Outcomes by what they were ("closed in 4 s", "error 4002", …).
    pub outcomes: BTreeMap<String, u64>,
    /// Outcomes that were not what the limit promises.
    pub unexpected: Vec<String>,
}

/// What a storm did.
#[derive(Clone, Debug, Default)]
pub struct StormReport {
    pub alone: Latency,
    pub storm: Latency,
    pub idle_held: usize,
    pub idle_login_seconds: f64,
    pub memory_start: Memory,
    /// With half the idle connections open.
    pub memory_half: Memory,
    pub memory_idle: Memory,
    pub memory_storm: Memory,
    pub hostile: BTreeMap<&'static str, Hostile>,
    /// Checks that did not hold.
    pub failures: Vec<String>,
}

impl StormReport {
    /// The busy clients' p99 under the storm over their p99 alone.
    pub fn p99_ratio(&self) -> f64 {
        self.storm.p99_us as f64 / self.alone.p99_us.max(1) as f64
    }

    /// Resident memory each idle connection of the second half added, in KiB.
    pub fn kib_per_idle_connection(&self) -> f64 {
        self.memory_idle.resident_kib.saturating_sub(self.memory_half.resident_kib) as f64
            / (self.idle_held - self.idle_held / 2).max(1) as f64
    }
}

type Conn = Client<Compat<TcpStream>>;

/// Where the clients come from: every 127.x.y.z address is this host's loopback, so the
/// hostile clients get addresses of their own, as they would from elsewhere — the
/// failed-login throttle, which works by address, then holds back only the flood's.
const BUSY_AND_IDLE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const FLOOD: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const LOGGED_IN_HOSTILE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
const UNKNOWN_HOSTILE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 4);

/// A TCP connection to the server from `source`.
async fn tcp_from(source: Ipv4Addr, port: u16) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(source.into(), 0))?;
    let tcp = socket.connect(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port)).await?;
    tcp.set_nodelay(true)?;
    Ok(tcp)
}

async fn connect(port: u16, user: &str, password: &str) -> Result<Conn, tiberius::error::Error> {
    connect_from(BUSY_AND_IDLE, port, user, password).await
}

async fn connect_from(source: Ipv4Addr, port: u16, user: &str, password: &str) -> Result<Conn, tiberius::error::Error> {
    let mut config = Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server(user, password));
    config.encryption(EncryptionLevel::NotSupported);
    let tcp = tcp_from(source, port).await?;
    Client::connect(config, tcp.compat_write()).await
}

async fn scalar(c: &mut Conn, sql: &str) -> Result<i64, String> {
    let row = c.simple_query(sql).await.map_err(|e| e.to_string())?.into_row().await.map_err(|e| e.to_string())?;
    let row = row.ok_or_else(|| format!("no row from: {sql}"))?;
    let value = match row.try_get::<i64, _>(0) {
        Ok(v) => v,
        Err(_) => row.try_get::<i32, _>(0).map_err(|e| e.to_string())?.map(i64::from),
    };
    value.ok_or_else(|| format!("NULL from: {sql}"))
}

async fn memory(server: &Server, c: &mut Conn) -> Result<Memory, String> {
    let (resident_kib, peak_kib) = server.memory_kib()?;
    let reported = scalar(c, "SELECT CAST(physical_memory_in_use_kb AS bigint) FROM sys.dm_os_process_memory").await?;
    Ok(Memory { resident_kib, peak_kib, reported_kib: reported.max(0) as u64 })
}

/// Runs the storm on `binary` (the `tessera` server) under `dir`.
pub fn storm(binary: &Path, dir: &Path, plan: &StormPlan) -> Result<StormReport, String> {
    let data = dir.join("storm");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
    let config = dir.join("storm.toml");
    std::fs::write(
        &config,
        format!(
            "max_connections = {}\nlogin_timeout_secs = {}\nrequest_stall_secs = {}\nmax_message_mb = {}\nmax_spool_mb = {}\n",
            // Room for the hostile clients' connections while the server closes them.
            plan.idle + plan.busy + plan.hostile * KINDS.len() * 4 + 64,
            LIMITS.login_timeout_secs,
            LIMITS.request_stall_secs,
            LIMITS.max_message_mb,
            LIMITS.max_spool_mb
        ),
    )
    .map_err(|e| e.to_string())?;
    let server = Server::start(binary, &data, &["--config", config.to_str().ok_or("a path that is not UTF-8")?])?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(run(&server, plan))
}

async fn run(server: &Server, plan: &StormPlan) -> Result<StormReport, String> {
    let port = server.port;
    let mut report = StormReport::default();
    let mut sa = connect(port, "sa", PASSWORD).await.map_err(|e| e.to_string())?;
    let rows: Vec<String> = (0..ROWS).map(|i| format!("({i}, 0)")).collect();
    sa.simple_query(format!(
        "CREATE DATABASE storm; CREATE TABLE storm.dbo.t (id int PRIMARY KEY, v bigint NOT NULL); \
         INSERT INTO storm.dbo.t VALUES {}",
        rows.join(", ")
    ))
    .await
    .map_err(|e| e.to_string())?
    .into_results()
    .await
    .map_err(|e| e.to_string())?;
    report.memory_start = memory(server, &mut sa).await?;

    // The busy clients connect first and stay connected through both phases.
    let mut busy = Vec::new();
    for _ in 0..plan.busy {
        busy.push(connect(port, "sa", PASSWORD).await.map_err(|e| format!("a busy client's login: {e}"))?);
    }
    let acknowledged = Arc::new(AtomicU64::new(0));
    let cpu = Cpu::start(server)?;
    let (alone, back) = busy_phase(busy, plan.seconds, plan.seed, &acknowledged).await;
    busy = back;
    report.alone = cpu.stop(alone?)?;

    // Half the idle connections, then the other half: what the second half adds is what
    // connections cost, without the memory the first logins' password hashes left with
    // the allocator.
    let started = Instant::now();
    let mut idle = open_idle(port, plan.idle / 2).await?;
    report.memory_half = memory(server, &mut sa).await?;
    idle.extend(open_idle(port, plan.idle - idle.len()).await?);
    report.idle_login_seconds = started.elapsed().as_secs_f64();
    report.idle_held = idle.len();
    report.memory_idle = memory(server, &mut sa).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let hostile = tokio::spawn(hostile_clients(port, plan.hostile, plan.seed, stop.clone()));
    let cpu = Cpu::start(server)?;
    let (storm, _busy) = busy_phase(busy, plan.seconds, plan.seed + 1, &acknowledged).await;
    report.storm = cpu.stop(storm?)?;
    report.memory_storm = memory(server, &mut sa).await?;
    stop.store(true, Ordering::Release);
    report.hostile = hostile.await.map_err(|e| e.to_string())?;
    for (kind, h) in &report.hostile {
        for u in &h.unexpected {
            report.failures.push(format!("{kind}: {u}"));
        }
    }

    // Nothing lost, nothing dropped.
    let total = scalar(&mut sa, "SELECT SUM(v) FROM storm.dbo.t").await?;
    let acknowledged = acknowledged.load(Ordering::Acquire);
    if total as u64 != acknowledged {
        report.failures.push(format!("the counters add up to {total}, not the {acknowledged} acknowledged updates"));
    }
    let mut dropped = 0;
    for mut c in idle {
        if scalar(&mut c, "SELECT 1").await.ok() != Some(1) {
            dropped += 1;
        }
    }
    if dropped > 0 {
        report.failures.push(format!("{dropped} of {} idle connections no longer answer", report.idle_held));
    }
    Ok(report)
}

/// CPU used from its start: the server's and this process's.
struct Cpu<'s> {
    server: &'s Server,
    at: (f64, f64),
}

impl<'s> Cpu<'s> {
    fn start(server: &'s Server) -> Result<Cpu<'s>, String> {
        Ok(Cpu { server, at: (server.cpu_seconds()?, cpu_seconds("/proc/self/stat")?) })
    }

    fn stop(self, mut phase: Latency) -> Result<Latency, String> {
        phase.server_cpu_seconds = self.server.cpu_seconds()? - self.at.0;
        phase.clients_cpu_seconds = cpu_seconds("/proc/self/stat")? - self.at.1;
        Ok(phase)
    }
}

/// Opens `count` logged-in connections and keeps them.
async fn open_idle(port: u16, count: usize) -> Result<Vec<Conn>, String> {
    let gate = Arc::new(Semaphore::new(OPENING_AT_ONCE));
    let tasks: Vec<_> = (0..count)
        .map(|_| {
            let gate = gate.clone();
            tokio::spawn(async move {
                let _turn = gate.acquire_owned().await.expect("never closed");
                connect(port, "sa", PASSWORD).await
            })
        })
        .collect();
    let mut held = Vec::with_capacity(count);
    for t in tasks {
        held.push(t.await.map_err(|e| e.to_string())?.map_err(|e| format!("an idle connection's login: {e}"))?);
    }
    Ok(held)
}

/// Runs the busy clients for `seconds`, each bumping random counters one request at a
/// time; returns their latencies and the clients.
async fn busy_phase(
    clients: Vec<Conn>,
    seconds: u64,
    seed: u64,
    acknowledged: &Arc<AtomicU64>,
) -> (Result<Latency, String>, Vec<Conn>) {
    let until = Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(n, mut c)| {
            let acknowledged = acknowledged.clone();
            tokio::spawn(async move {
                let mut rng = Rng::new(seed.wrapping_mul(1_000_003) ^ n as u64);
                let mut micros = Vec::new();
                let mut failure = None;
                while Instant::now() < until {
                    let id = rng.below(ROWS);
                    let sql = format!(
                        "UPDATE storm.dbo.t SET v = v + 1 WHERE id = {id}; SELECT v FROM storm.dbo.t WHERE id = {id}"
                    );
                    let at = Instant::now();
                    match scalar(&mut c, &sql).await {
                        Ok(_) => {
                            micros.push(at.elapsed().as_micros() as u64);
                            acknowledged.fetch_add(1, Ordering::AcqRel);
                        }
                        Err(e) => {
                            failure = Some(format!("a busy client's request failed: {e}"));
                            break;
                        }
                    }
                }
                (micros, failure, c)
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut back = Vec::new();
    let mut failure = None;
    for t in tasks {
        match t.await {
            Ok((micros, f, c)) => {
                all.extend(micros);
                failure = failure.or(f);
                back.push(c);
            }
            Err(e) => failure = Some(e.to_string()),
        }
    }
    (failure.map_or_else(|| Ok(Latency::of(all)), Err), back)
}

/// The hostile clients, `per_kind` of each kind, until `stop`.
async fn hostile_clients(
    port: u16,
    per_kind: usize,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> BTreeMap<&'static str, Hostile> {
    let mut tasks = Vec::new();
    for n in 0..per_kind {
        let seed = seed ^ (n as u64) << 8;
        for kind in KINDS {
            let stop = stop.clone();
            tasks.push(tokio::spawn(async move {
                let mut outcomes = Vec::new();
                let mut logged_in = None;
                while !stop.load(Ordering::Acquire) {
                    outcomes.push(kind.run(port, seed ^ outcomes.len() as u64, &mut logged_in).await);
                    tokio::time::sleep(HOSTILE_PACE).await;
                }
                (kind.name(), outcomes)
            }));
        }
    }
    let mut by_kind: BTreeMap<&'static str, Hostile> = BTreeMap::new();
    for t in tasks {
        let Ok((name, outcomes)) = t.await else { continue };
        let entry = by_kind.entry(name).or_default();
        for o in outcomes {
            entry.attempts += 1;
            *entry.outcomes.entry(o.what.clone()).or_default() += 1;
            if !o.expected && entry.unexpected.len() < 5 {
                entry.unexpected.push(o.what);
            }
        }
    }
    by_kind
}

/// One hostile attempt's outcome.
struct Outcome {
    what: String,
    expected: bool,
}

impl Outcome {
    fn new(what: impl Into<String>, expected: bool) -> Outcome {
        Outcome { what: what.into(), expected }
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Connects and sends nothing: closed at the login timeout.
    Silent,
    /// Sends a PRELOGIN a byte a second: closed at the login timeout.
    Slow,
    /// A packet whose header claims 65,535 bytes: closed at once.
    OversizedPacket,
    /// Random bytes: closed, at the latest at the login timeout.
    Garbage,
    /// Wrong passwords, one login after another: 18456 each time.
    FailedLogins,
    /// A batch over `max_message_mb`: error 4002, and the connection goes on.
    OversizedBatch,
    /// A parameter over `max_spool_mb`: error 8009, and the connection goes on.
    OversizedParameter,
    /// Logs in, starts a request and stops sending: closed after `request_stall_secs`.
    StalledRequest,
}

const KINDS: [Kind; 8] = [
    Kind::Silent,
    Kind::Slow,
    Kind::OversizedPacket,
    Kind::Garbage,
    Kind::FailedLogins,
    Kind::OversizedBatch,
    Kind::OversizedParameter,
    Kind::StalledRequest,
];

/// The hostile kinds' names, as reports give them.
pub const KIND_NAMES: [&str; 8] = [
    "silent",
    "a byte a second",
    "oversized packet",
    "garbage",
    "failed logins",
    "oversized batch",
    "oversized parameter",
    "stalled request",
];

impl Kind {
    fn name(self) -> &'static str {
        KIND_NAMES[self as usize]
    }

    /// One attempt; `logged_in` is the client's connection, for the kinds that keep one
    /// from attempt to attempt (as a misbehaving application's pooled connection would).
    async fn run(self, port: u16, seed: u64, logged_in: &mut Option<TcpStream>) -> Outcome {
        let login_timeout = Duration::from_secs(LIMITS.login_timeout_secs);
        let at_timeout = (login_timeout, login_timeout + PROMPTLY);
        match self {
            Kind::Silent => match tcp_from(UNKNOWN_HOSTILE, port).await {
                Ok(tcp) => closed_within(tcp, &[], Duration::ZERO, at_timeout).await,
                Err(e) => Outcome::new(format!("no connection: {e}"), false),
            },
            Kind::Slow => match tcp_from(UNKNOWN_HOSTILE, port).await {
                Ok(tcp) => closed_within(tcp, &prelogin_packet(), Duration::from_secs(1), at_timeout).await,
                Err(e) => Outcome::new(format!("no connection: {e}"), false),
            },
            Kind::OversizedPacket => match tcp_from(UNKNOWN_HOSTILE, port).await {
                Ok(tcp) => {
                    let mut bytes = vec![kind::PRELOGIN, status::EOM, 0xFF, 0xFF, 0, 0, 1, 0];
                    bytes.extend(std::iter::repeat_n(0u8, 4096));
                    closed_within(tcp, &bytes, Duration::ZERO, (Duration::ZERO, PROMPTLY)).await
                }
                Err(e) => Outcome::new(format!("no connection: {e}"), false),
            },
            Kind::Garbage => match tcp_from(UNKNOWN_HOSTILE, port).await {
                Ok(tcp) => {
                    let mut rng = Rng::new(seed);
                    let bytes: Vec<u8> = (0..1 + rng.below(2000)).map(|_| rng.below(256) as u8).collect();
                    closed_within(tcp, &bytes, Duration::ZERO, (Duration::ZERO, at_timeout.1)).await
                }
                Err(e) => Outcome::new(format!("no connection: {e}"), false),
            },
            Kind::FailedLogins => match connect_from(FLOOD, port, "sa", "not the password").await {
                Ok(_) => Outcome::new("a wrong password was accepted", false),
                Err(tiberius::error::Error::Server(e)) => {
                    Outcome::new(format!("error {}", e.code()), e.code() == 18456)
                }
                Err(e) => Outcome::new(format!("failed otherwise: {e}"), false),
            },
            Kind::OversizedBatch => {
                static WIRE: OnceLock<Vec<u8>> = OnceLock::new();
                let wire = WIRE.get_or_init(|| {
                    let text = format!("SELECT '{}'", "x".repeat(LIMITS.max_message_mb << 20));
                    framed(kind::SQL_BATCH, &tessera_server::client::batch_body(&text))
                });
                refused_then_served(port, logged_in, 4002, wire).await
            }
            Kind::OversizedParameter => {
                static WIRE: OnceLock<Vec<u8>> = OnceLock::new();
                let wire = WIRE.get_or_init(|| {
                    framed(kind::RPC, &rpc_with_binary(&vec![7; (LIMITS.max_spool_mb as usize + 1) << 20]))
                });
                refused_then_served(port, logged_in, 8009, wire).await
            }
            Kind::StalledRequest => stalled_request(port).await,
        }
    }
}

/// Sends `bytes` (a byte every `pace`, or all at once) and waits for the server to close
/// the connection: expected after `window.0` less a second and before `window.1`.
async fn closed_within(mut tcp: TcpStream, bytes: &[u8], pace: Duration, window: (Duration, Duration)) -> Outcome {
    let started = Instant::now();
    let (not_before, deadline) = window;
    let closed = async {
        if pace.is_zero() {
            // The server may close before it has read everything: a failed write is a close.
            if tcp.write_all(bytes).await.is_err() {
                return;
            }
        } else {
            for b in bytes {
                if tcp.write_all(&[*b]).await.is_err() {
                    return;
                }
                tokio::time::sleep(pace).await;
            }
        }
        // Read until the end of the stream: a reply (garbage may look like a PRELOGIN)
        // is read and dropped.
        let mut sink = [0u8; 4096];
        while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {}
    };
    match tokio::time::timeout(deadline + Duration::from_secs(2), closed).await {
        Err(_) => Outcome::new(format!("still open after {} s", deadline.as_secs() + 2), false),
        Ok(()) => {
            let took = started.elapsed();
            let early = took + Duration::from_secs(1) < not_before;
            Outcome::new(format!("closed in {} s", took.as_secs()), !early && took <= deadline)
        }
    }
}

/// Sends the prebuilt request `wire` on the client's connection (logging in first if it
/// has none), expects error `number`, then a `SELECT 1` on the same connection, which it
/// keeps. The requests are built once and sent as they are, so that the clients spend
/// their time sending, not encoding.
async fn refused_then_served(port: u16, logged_in: &mut Option<TcpStream>, number: u32, wire: &[u8]) -> Outcome {
    static SELECT_1: OnceLock<Vec<u8>> = OnceLock::new();
    let select_1 = SELECT_1.get_or_init(|| framed(kind::SQL_BATCH, &tessera_server::client::batch_body("SELECT 1")));
    let mut tcp = match logged_in.take() {
        Some(c) => c,
        None => {
            let login = async {
                let tcp = tcp_from(LOGGED_IN_HOSTILE, port).await?;
                tessera_server::client::login_plaintext(tcp, "sa", PASSWORD, "master").await
            };
            match login.await {
                Ok((tcp, _)) => tcp,
                Err(e) => return Outcome::new(format!("no login: {e}"), false),
            }
        }
    };
    match first_error(&mut tcp, wire).await {
        Ok(Some(n)) if n == number => match first_error(&mut tcp, select_1).await {
            Ok(None) => {
                *logged_in = Some(tcp);
                Outcome::new(format!("error {number}, then served"), true)
            }
            other => Outcome::new(format!("error {number}, then {other:?}"), false),
        },
        Ok(Some(n)) => Outcome::new(format!("error {n}"), false),
        Ok(None) => Outcome::new("accepted", false),
        Err(e) => Outcome::new(format!("failed otherwise: {e}"), false),
    }
}

/// Sends `wire` and reads the reply: the number of the error it begins with, if it does.
async fn first_error(tcp: &mut TcpStream, wire: &[u8]) -> std::io::Result<Option<u32>> {
    tcp.write_all(wire).await?;
    let limits = tessera_server::packet::Limits { max_packet: MAX_PACKET_SIZE + 1, max_message: 1 << 20 };
    let reply = tessera_server::packet::read_message(tcp, &limits)
        .await?
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "no reply"))?;
    const ERROR_TOKEN: u8 = 0xAA;
    Ok(match reply.payload.get(..7) {
        Some(&[ERROR_TOKEN, _, _, a, b, c, d]) => Some(u32::from_le_bytes([a, b, c, d])),
        _ => None,
    })
}

/// `payload` as a message of packets of 4,096 bytes.
fn framed(kind: u8, payload: &[u8]) -> Vec<u8> {
    const PACKET: usize = 4096;
    let mut wire = Vec::with_capacity(payload.len() + payload.len() / (PACKET - HEADER_LEN) * HEADER_LEN + HEADER_LEN);
    let pieces: Vec<&[u8]> = payload.chunks(PACKET - HEADER_LEN).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let last = if i + 1 == pieces.len() { status::EOM } else { 0 };
        wire.extend_from_slice(&[kind, last]);
        wire.extend_from_slice(&((piece.len() + HEADER_LEN) as u16).to_be_bytes());
        wire.extend_from_slice(&[0, 0, (i + 1) as u8, 0]);
        wire.extend_from_slice(piece);
    }
    wire
}

/// An RPC request: sp_executesql (procedure id 10) with one unnamed varbinary(max)
/// parameter holding `value`, sent as one PLP chunk.
fn rpc_with_binary(value: &[u8]) -> Vec<u8> {
    const SP_EXECUTESQL: u16 = 10;
    const BIGVARBINARY: u8 = 0xA5;
    let mut b = Vec::with_capacity(value.len() + 64);
    b.extend_from_slice(&4u32.to_le_bytes()); // ALL_HEADERS: none
    b.extend_from_slice(&0xFFFFu16.to_le_bytes());
    b.extend_from_slice(&SP_EXECUTESQL.to_le_bytes());
    b.extend_from_slice(&[0, 0]); // option flags
    b.extend_from_slice(&[0, 0]); // no name, status 0
    b.push(BIGVARBINARY);
    b.extend_from_slice(&0xFFFFu16.to_le_bytes()); // (max): a PLP value
    b.extend_from_slice(&(value.len() as u64).to_le_bytes());
    b.extend_from_slice(&(value.len() as u32).to_le_bytes());
    b.extend_from_slice(value);
    b.extend_from_slice(&0u32.to_le_bytes());
    b
}

/// Logs in, sends the header and a few bytes of a batch packet, then nothing: the server
/// closes the connection after `request_stall_secs`.
async fn stalled_request(port: u16) -> Outcome {
    let tcp = match tcp_from(LOGGED_IN_HOSTILE, port).await {
        Ok(t) => t,
        Err(e) => return Outcome::new(format!("no connection: {e}"), false),
    };
    let (tcp, _) = match tessera_server::client::login_plaintext(tcp, "sa", PASSWORD, "master").await {
        Ok(x) => x,
        Err(e) => return Outcome::new(format!("no login: {e}"), false),
    };
    let mut start = vec![kind::SQL_BATCH, status::EOM, 0x10, 0x00, 0, 0, 1, 0];
    start.extend_from_slice(&[0u8; 10]);
    let stall = Duration::from_secs(LIMITS.request_stall_secs);
    closed_within(tcp, &start, Duration::ZERO, (stall, stall + PROMPTLY)).await
}

/// A PRELOGIN packet saying encryption is not supported.
fn prelogin_packet() -> Vec<u8> {
    let body = tessera_server::prelogin::reply([0, 1, 0, 0], tessera_server::prelogin::ENCRYPT_NOT_SUP);
    let mut packet = vec![kind::PRELOGIN, status::EOM];
    packet.extend_from_slice(&((body.len() + HEADER_LEN) as u16).to_be_bytes());
    packet.extend_from_slice(&[0, 0, 1, 0]);
    packet.extend_from_slice(&body);
    packet
}
