//! tessera's TDS server: SQL Server clients (python-tds, pymssql/FreeTDS, go-mssqldb,
//! tedious, JDBC, tiberius) connect over TCP and run T-SQL through
//! [`tessera_sql::Session`]. See README.md.
//!
//! Layers, bottom up: [`packet`] (framing) → [`codec`] (bounded readers, string
//! encodings) → [`types`] (TYPE_INFO and values) → [`tokens`] (response tokens) →
//! [`prelogin`], [`login7`], [`rpc`], [`tm`] (request decoders) → [`session`] (one
//! connection's async loop) → [`Server`] (listener, limits, TLS, logins, log). Beside
//! them: [`instance`] (named instances and their host-wide registry) and [`browser`] (the
//! SQL Server Browser on UDP 1434).

pub mod browser;
pub mod budget;
pub mod bulk;
pub mod client;
pub mod codec;
pub mod config;
pub mod descriptors;
pub mod errorlog;
pub mod fence;
pub mod handshake;
pub mod instance;
pub mod login7;
pub mod metrics;
pub mod packet;
pub mod prelogin;
pub mod request;
pub mod rpc;
pub mod session;
pub mod spool;
pub mod throttle;
pub mod tls;
pub mod tm;
pub mod token_sink;
pub mod tokens;
pub mod transport;
pub mod types;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tessera_database::{Engine, EngineConfig};
use tessera_sql::Shared;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

pub use config::Config;

/// The version PRELOGIN's reply announces: 16.0.4000 (SQL Server 2022's major version).
pub const VERSION_BYTES: [u8; 4] = [16, 0, 0x0F, 0xA0];
use errorlog::ErrorLog;

/// What every connection shares.
pub struct ServerState {
    pub config: Config,
    pub shared: Arc<Shared>,
    pub log: Arc<ErrorLog>,
    pub tls: Option<tls::ServerTls>,
    pub login_permits: Semaphore,
    /// Failed logins by client address, which delay that address's next attempts.
    pub throttle: throttle::LoginThrottle,
    /// Places for connections not yet logged in (`max_pending_logins`).
    pub pending_logins: Arc<Semaphore>,
    /// Where long request values are spooled, and the bytes they may take there.
    pub spool: spool::Place,
    /// The memory request messages may hold at once, over all connections.
    pub request_memory: Arc<budget::Budget>,
    /// ERRORLOG lines any client can cause at will (connections refused or closed before
    /// their login), written at most once a period with the count of those left out.
    pub sampled: errorlog::SampledLines,
    /// The server version announced in PRELOGIN and LOGINACK (16.0.4000: SQL Server 2022's
    /// major version, which clients use to pick features).
    pub version_bytes: [u8; 4],
    /// Set when shutdown begins: connections end after the request they are serving.
    pub stopping: Arc<AtomicBool>,
    /// Connections being served by a thread right now (shutdown waits for them).
    pub busy: AtomicUsize,
    /// Each logged-in connection's cancel flag (shutdown sets them all).
    pub cancels: parking_lot::Mutex<Vec<Arc<AtomicBool>>>,
    /// Each logged-in connection by its session id: its cancel flag and a handle on its
    /// socket, which KILL shuts down.
    pub connections: parking_lot::Mutex<std::collections::HashMap<i32, (Arc<AtomicBool>, std::net::TcpStream)>>,
    /// Requests served, by kind, and their latencies (the metrics' `tessera_requests`).
    pub requests: metrics::RequestStats,
    /// The databases' recent activity, which picks those the metrics show one by one.
    pub busiest: metrics::busiest::Busiest,
    /// Which databases a fleet's directory lets this server serve (all, without one).
    pub fence: fence::Fence,
}

/// How long shutdown waits for running requests (cancelled when it begins) to end
/// before it closes the engine anyway; their transactions then roll back at the next start.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// A server bound to its port, not yet accepting.
pub struct Server {
    state: Arc<ServerState>,
    listener: TcpListener,
    engine: Arc<Engine>,
    /// A named instance's entry in the host's instances directory, held while it runs.
    registration: Option<instance::Registration>,
    /// The HTTP listener of `/metrics` (`metrics_port`).
    metrics: Option<TcpListener>,
}

impl Server {
    /// Opens (creating on first start) the data directory, loads or makes the TLS
    /// certificate, hashes the sa password and binds the listener. Call inside a tokio
    /// runtime.
    pub async fn bind(mut config: Config) -> Result<Server, String> {
        config.validate()?;
        // A named instance claims its name on the host before it touches anything.
        let mut registration = match &config.instance {
            Some(name) => {
                let name = instance::validate_name(name)?;
                let entry = instance::register(&config.instances_dir(), &name, config.port)?;
                config.instance = Some(name);
                Some(entry)
            }
            None => None,
        };
        tessera_io::durable::create_dir_all(&config.data_dir)
            .map_err(|e| format!("cannot create the data directory '{}': {e}", config.data_dir.display()))?;
        // Before anything is written there: another server may own the directory.
        let dir_lock = Arc::new(tessera_database::DirLock::acquire(&config.data_dir).map_err(|e| e.to_string())?);
        // The last run's ERRORLOG becomes ERRORLOG.1 (as SQL Server's does at each start).
        let rotation = errorlog::Rotation {
            archives: config.errorlog_files,
            max_bytes: config.errorlog_max_mb.saturating_mul(1 << 20),
        };
        let log = Arc::new(ErrorLog::open(&config.data_dir, config.errorlog, config.log_stderr, rotation));
        log.header(tessera_sql::VERSION.lines().next().unwrap_or("tessera"));
        log.header(&format!("Server process ID is {}.", std::process::id()));
        log.header(&format!(
            "Logging SQL Server messages in file '{}'.",
            config.data_dir.join(errorlog::FILE_NAME).display()
        ));
        let data_dir = std::fs::canonicalize(&config.data_dir).unwrap_or_else(|_| config.data_dir.clone());
        log.header(&format!("Data directory: '{}'.", data_dir.display()));
        let loaded = tls::server_config(config.tls_cert.as_deref(), config.tls_key.as_deref(), &config.data_dir)?;
        if let Some(reason) = &loaded.generated {
            log.server(&format!(
                "A self-signed certificate was generated in '{}' ({reason}).",
                loaded.cert_path.display()
            ));
        }
        log.server(&format!(
            "The certificate '{}' was successfully loaded for encryption.",
            loaded.cert_path.display()
        ));
        let tls = loaded.tls;
        if config.force_strict_encryption {
            log.server("Force Strict Encryption is on: only TDS 8.0 strict (TLS-first) connections are accepted.");
        }
        let (before, limit) =
            descriptors::raise_limit().map_err(|e| format!("cannot read the open file limit: {e}"))?;
        let budget = descriptors::plan(limit, (before < limit).then_some(before), config.max_connections)?;
        log.server(&budget.describe());
        config.max_connections = budget.max_connections;
        tessera_io::descriptors::set_capacity(budget.file_descriptors);
        let mut ec = EngineConfig::new(&config.data_dir);
        ec.max_open_databases = config.max_open_databases;
        ec.idle_close_after = std::time::Duration::from_secs(config.idle_close_secs);
        ec.log_dir = config.log_dir.clone();
        ec.pool_bytes = config.memory_mb.max(16) << 20;
        // Each database's row versions may hold up to a quarter of the server's memory
        // (SQL Server's are bounded by tempdb's size).
        ec.version_store_max_bytes = (config.memory_mb.max(16) as u64) << 18;
        ec.huge_pages = config.huge_pages.parse()?;
        ec.dir_lock = Some(dir_lock);
        log.server(&format!(
            "Buffer pool: {} MB, huge pages {}.",
            ec.pool_bytes >> 20,
            match ec.huge_pages {
                tessera_database::HugePages::Off => "off (4 KB pages)",
                tessera_database::HugePages::Transparent => "transparent (where the kernel provides them)",
                tessera_database::HugePages::On => "on (explicit 2 MB pages, reserved now)",
            }
        ));
        let dir = config.data_dir.clone();
        let engine = tokio::task::spawn_blocking(move || Engine::open(ec))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot open the data directory '{}': {e}", dir.display()))?;
        let shared = tessera_sql::start_instance(engine.clone()).map_err(|e| e.to_string())?;
        if let Some(name) = &config.instance {
            let _ = shared.instance_name.set(name.clone());
        }
        shared.set_errorlog(log.clone());
        let password = config.sa_password.clone().unwrap_or_default();
        let sa = shared.clone();
        tokio::task::spawn_blocking(move || sa.logins.set_sa_password(&password))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let addr = format!("{}:{}", config.listen, config.port);
        let listener = TcpListener::bind(&addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        log.server(&format!(
            "Server is listening on [ {} <{}> {}].",
            local.ip(),
            if local.is_ipv4() { "ipv4" } else { "ipv6" },
            local.port()
        ));
        let metrics = match config.metrics_port {
            Some(port) => {
                let addr = format!("{}:{port}", config.listen);
                let l =
                    TcpListener::bind(&addr).await.map_err(|e| format!("cannot listen on {addr} for metrics: {e}"))?;
                let at = l.local_addr().map_err(|e| e.to_string())?;
                log.server(&format!("Metrics are served on http://{at}/metrics."));
                Some(l)
            }
            None => None,
        };
        if let (Some(name), Some(entry)) = (&config.instance, registration.as_mut()) {
            entry.set_port(local.port())?;
            log.server(&format!(
                "Named instance {name}: TCP port {}, registered in '{}'{}.",
                local.port(),
                config.instances_dir().display(),
                if config.browser { "" } else { " (this instance's SQL Server Browser is off)" }
            ));
        }
        let state = Arc::new(ServerState {
            login_permits: Semaphore::new(config.max_concurrent_logins),
            throttle: throttle::LoginThrottle::default(),
            pending_logins: Arc::new(Semaphore::new(config.max_pending_logins)),
            spool: spool::Place {
                dir: config.data_dir.clone(),
                budget: budget::Budget::new(config.max_spool_mb.saturating_mul(1 << 20)),
            },
            sampled: errorlog::SampledLines::default(),
            request_memory: budget::Budget::new((config.max_request_memory_mb as u64).saturating_mul(1 << 20)),
            config,
            shared,
            log,
            tls: Some(tls),
            version_bytes: VERSION_BYTES,
            stopping: Arc::new(AtomicBool::new(false)),
            busy: AtomicUsize::new(0),
            cancels: parking_lot::Mutex::new(Vec::new()),
            connections: parking_lot::Mutex::new(std::collections::HashMap::new()),
            requests: metrics::RequestStats::default(),
            busiest: metrics::busiest::Busiest::default(),
            fence: fence::Fence::default(),
        });
        // KILL: cancel the session's request and shut its socket, which ends its
        // connection (idle or once the request stops).
        let weak = Arc::downgrade(&state);
        state.shared.set_kill_hook(Arc::new(move |spid| {
            let Some(state) = weak.upgrade() else { return false };
            let Some((cancel, socket)) = state.connections.lock().remove(&spid) else { return false };
            cancel.store(true, Ordering::SeqCst);
            let _ = socket.shutdown(std::net::Shutdown::Both);
            true
        }));
        // USE asks the fence too (a login is checked in session.rs).
        let weak = Arc::downgrade(&state);
        state.shared.set_admit_hook(Arc::new(move |database| weak.upgrade().is_none_or(|s| s.fence.admits(database))));
        Ok(Server { state, listener, engine, registration, metrics })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("bound listener has an address")
    }

    /// The metrics listener's address, if it has one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The engine it serves.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn state(&self) -> &Arc<ServerState> {
        &self.state
    }

    /// Accepts connections until `shutdown` turns true, then shuts the engine down
    /// (connections still open are dropped; their sessions close and roll back).
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) -> Result<(), String> {
        let Server { state, listener, engine, registration, metrics } = self;
        let metrics = metrics.map(|l| tokio::spawn(metrics::serve(l, state.clone(), shutdown.clone())));
        let connections = Arc::new(Semaphore::new(state.config.max_connections));
        // Only named instances take part in the SQL Server Browser, so default-instance
        // servers (and the tests that start them) never touch UDP 1434.
        let browser = (registration.is_some() && state.config.browser).then(|| {
            tokio::spawn(browser::run(
                state.config.listen.clone(),
                state.config.instances_dir(),
                state.log.clone(),
                shutdown.clone(),
            ))
        });
        state.log.server("SQL Server is now ready for client connections. This is an informational message; no user action is required.");
        let mut tasks = tokio::task::JoinSet::new();
        let (mut accept_failures, mut last_accept_log): (u64, Option<std::time::Instant>) = (0, None);
        loop {
            tokio::select! {
                r = shutdown.changed() => {
                    if r.is_err() || *shutdown.borrow() {
                        break;
                    }
                }
                accepted = listener.accept() => {
                    let (tcp, peer) = match accepted {
                        Ok(x) => x,
                        Err(e) => {
                            // Out of file descriptors and the like (other processes'
                            // files count too): log at most every 10 s, pause, go on.
                            accept_failures += 1;
                            let due = match last_accept_log {
                                Some(t) => std::time::Instant::elapsed(&t).as_secs() >= 10,
                                None => true,
                            };
                            if due {
                                state.log.server(&format!("accept failed {accept_failures} time(s) since the last report: {e}"));
                                accept_failures = 0;
                                last_accept_log = Some(std::time::Instant::now());
                            }
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let Ok(permit) = connections.clone().try_acquire_owned() else {
                        state.sampled.connections_refused.line(&state.log, || format!(
                            "Could not connect because the maximum number of '{}' user connections has already been reached. [CLIENT: {}]",
                            state.config.max_connections, peer.ip()
                        ));
                        drop(tcp);
                        continue;
                    };
                    let Ok(pending) = state.pending_logins.clone().try_acquire_owned() else {
                        state.sampled.connections_refused.line(&state.log, || format!(
                            "Could not connect because {} connections are already waiting to log in (max_pending_logins). [CLIENT: {}]",
                            state.config.max_pending_logins, peer.ip()
                        ));
                        drop(tcp);
                        continue;
                    };
                    let st = state.clone();
                    tasks.spawn(async move {
                        session::serve(st, tcp, peer, pending).await;
                        drop(permit);
                    });
                    // Reap finished connection tasks so the set stays small.
                    while tasks.try_join_next().is_some() {}
                }
            }
        }
        state.log.server("Server shutdown has been initiated.");
        drop(listener);
        if let Some(task) = browser {
            let _ = task.await;
        }
        if let Some(task) = metrics {
            let _ = task.await;
        }
        // Running requests are cancelled (a lock wait ends with 3617) and every connection
        // ends after its current request; idle ones end now. Each session rolls back
        // what it has not committed as it closes.
        state.stopping.store(true, Ordering::SeqCst);
        for cancel in state.cancels.lock().iter() {
            cancel.store(true, Ordering::SeqCst);
        }
        tasks.shutdown().await;
        let started = std::time::Instant::now();
        while state.busy.load(Ordering::SeqCst) > 0 && started.elapsed() < SHUTDOWN_GRACE {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let running = state.busy.load(Ordering::SeqCst);
        if running > 0 {
            state.log.server(&format!(
                "{running} requests were still running after {} s; their transactions will be rolled back when the databases are next opened.",
                SHUTDOWN_GRACE.as_secs()
            ));
        }
        let shared = state.shared.clone();
        drop(state);
        let stopped = tokio::task::spawn_blocking(move || {
            // What Query Stores counted since their last flush is kept.
            tessera_execution::query_store_flusher::flush_all(&shared);
            drop(shared);
            engine.stop_background();
            engine.shutdown()
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string());
        // The instance's name is free again once its data directory is.
        drop(registration);
        stopped
    }
}

/// A server running on its own runtime thread (for tests and embedders): stop it with
/// [`RunningServer::stop`] (or by dropping it).
pub struct RunningServer {
    pub addr: SocketAddr,
    /// The metrics listener's address (`metrics_port`), if it has one.
    pub metrics_addr: Option<SocketAddr>,
    shutdown: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl RunningServer {
    pub fn start(config: Config) -> Result<RunningServer, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("tessera-net")
            .build()
            .map_err(|e| e.to_string())?;
        let server = rt.block_on(Server::bind(config))?;
        let (addr, metrics_addr) = (server.local_addr(), server.metrics_addr());
        let (tx, rx) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("tessera-server".into())
            .spawn(move || rt.block_on(server.run(rx)))
            .map_err(|e| e.to_string())?;
        Ok(RunningServer { addr, metrics_addr, shutdown: tx, thread: Some(thread) })
    }

    pub fn stop(mut self) -> Result<(), String> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<(), String> {
        let _ = self.shutdown.send(true);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| "server thread panicked".to_string())?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// `tessera serve`: runs until SIGINT/SIGTERM.
pub fn serve_forever(config: Config) -> Result<(), String> {
    serve_forever_with(config, |_| {})
}

/// `tessera serve` with `on_bound` called once the server is bound, inside its runtime
/// (where it may spawn tasks that run beside the server: publishing it in a directory).
pub fn serve_forever_with(config: Config, on_bound: impl FnOnce(&Server)) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tessera-net")
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let server = Server::bind(config).await?;
        on_bound(&server);
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            terminated().await;
            let _ = tx.send(true);
        });
        server.run(rx).await
    })
}

/// Returns when the process is asked to end: SIGTERM (as Kubernetes and systemd send it)
/// or ^C.
pub async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
