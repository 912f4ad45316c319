//! PostgreSQL's side, served the two ways its users serve many tenants, each on a cluster
//! of the benchmark's own (`peers::postgres`), the workload as PL/pgSQL functions:
//!
//! - **database per tenant behind PgBouncer** (Debian's package) in transaction mode: one
//!   template database with the tables and functions, every tenant `CREATE DATABASE …
//!   TEMPLATE` of it; the application keeps a small pool of client connections per tenant
//!   (one opened per tenant before the run, more only if two clients want the same tenant at
//!   once), as an application server with a pool per connection string does, so a
//!   transaction never pays a client login; PgBouncer maps them onto at most
//!   [`SERVER_CONNECTIONS`] server connections, `default_pool_size` =
//!   [`POOL_PER_DATABASE`] per tenant, closing an idle one of another tenant when a tenant
//!   without one needs it.
//! - **schema per tenant** in one database: the benchmark's client connections straight to
//!   PostgreSQL, each transaction one message `BEGIN; SET LOCAL search_path TO tenantN;
//!   SELECT pNNN(…); COMMIT`.
//!
//! Both run `synchronous_commit = off`, as tessera's tenants run DELAYED_DURABILITY =
//! FORCED: no transaction waits for a log flush on either side.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::schema::{postgres_function, postgres_tables, tenant_name, Call, PROCEDURES};
use super::{Point, Sample};
use crate::cpu::{postgres_cpu, process_and_children, process_cpu};
use crate::error::{BenchError, Result};
use crate::peers::pgwire::PgConn;
use crate::peers::postgres::{is_root, pg_command, psql, psql_file, run_checked, start_postgres, Postgres};
use crate::rss::PidProbe;
use crate::tdsload::thread_cpu_seconds;
use crate::tenants::PROGRESS_EVERY;

/// Server connections PgBouncer may hold for all tenants together (`max_user_connections`;
/// the cluster allows 64).
pub const SERVER_CONNECTIONS: usize = 40;
/// PgBouncer's `default_pool_size` (and `max_db_connections`): server connections per tenant.
pub const POOL_PER_DATABASE: usize = 2;
/// Tenants per psql script during setup.
const SETUP_CHUNK: usize = 50;
/// What the client threads did.
#[derive(Default)]
struct Run {
    transactions: u64,
    seconds: f64,
    client_cpu: f64,
    latencies: Vec<u32>,
}

/// The client threads' name prefix (as `top -H` and perf show them).
const CLIENT_THREADS: &str = "bench-pg";
/// The database holding every tenant's schema.
const SCHEMAS_DATABASE: &str = "tenants";
const TEMPLATE: &str = "tenant_template";

/// How the tenants are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    DatabasePerTenant,
    SchemaPerTenant,
}

/// PgBouncer of our own, stopped on drop.
struct Bouncer {
    child: Child,
    pidfile: PathBuf,
    port: u16,
}

impl Bouncer {
    fn pid(&self) -> u32 {
        fs::read_to_string(&self.pidfile).ok().and_then(|s| s.trim().parse().ok()).unwrap_or_else(|| self.child.id())
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").args(["-INT", &self.pid().to_string()]).status();
        let _ = self.child.wait();
    }
}

fn start_bouncer(dir: &Path, pg_port: u16, max_clients: usize) -> Result<Bouncer> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let tool = Path::new("/usr/sbin/pgbouncer");
    if !tool.is_file() {
        return Err(BenchError::new("pgbouncer is not installed: run scripts/install-postgres.sh"));
    }
    let (ini, users, pidfile) = (dir.join("pgbouncer.ini"), dir.join("users.txt"), dir.join("pgbouncer.pid"));
    fs::write(&users, "\"postgres\" \"\"\n")?;
    fs::write(
        &ini,
        format!(
            "[databases]\n* = host=127.0.0.1 port={pg_port}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
             unix_socket_dir =\nauth_type = trust\nauth_file = {}\npool_mode = transaction\nmax_client_conn = {}\n\
             default_pool_size = {POOL_PER_DATABASE}\nmax_db_connections = {POOL_PER_DATABASE}\n\
             max_user_connections = {SERVER_CONNECTIONS}\nlogfile = {}\npidfile = {}\n",
            users.display(),
            max_clients,
            dir.join("pgbouncer.log").display(),
            pidfile.display()
        ),
    )?;
    if is_root() {
        let mut c = std::process::Command::new("chown");
        c.args(["-R", "postgres:postgres"]).arg(dir);
        run_checked(c, "chown to postgres")?;
    }
    // runuser starts it with the login default of 1,024 descriptors; it needs one per
    // client and server connection.
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(BenchError::new(format!("getrlimit: {}", std::io::Error::last_os_error())));
    }
    let descriptors = limit.rlim_max.min(max_clients as u64 + 1024);
    let child = pg_command(Path::new("/usr/bin/prlimit"))
        .arg(format!("--nofile={descriptors}:{}", limit.rlim_max))
        .arg(tool)
        .arg(&ini)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| BenchError::new(format!("pgbouncer: {e}")))?;
    let bouncer = Bouncer { child, pidfile, port };
    let deadline = Instant::now() + Duration::from_secs(30);
    while PgConn::connect(port, "postgres", "postgres").is_err() {
        if Instant::now() > deadline {
            return Err(BenchError::new("pgbouncer did not accept a login within 30 s"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(bouncer)
}

/// One PostgreSQL variant: its cluster, PgBouncer for the database-per-tenant layout,
/// and how many tenants exist.
pub struct PgSide {
    layout: Layout,
    dir: PathBuf,
    server: Postgres,
    bouncer: Option<Bouncer>,
    tenants: usize,
}

impl PgSide {
    pub fn start(dir: &Path, layout: Layout, shared_buffers_mb: usize, max_tenants: usize) -> Result<PgSide> {
        let server = start_postgres(dir, shared_buffers_mb)?;
        psql(server.port, "ALTER SYSTEM SET synchronous_commit = off")?;
        psql(server.port, "SELECT pg_reload_conf()")?;
        let setup = dir.join("setup.sql");
        let objects = format!("{}\n{}", postgres_tables(), (0..PROCEDURES).map(postgres_function).collect::<String>());
        let bouncer = match layout {
            Layout::DatabasePerTenant => {
                psql(server.port, &format!("CREATE DATABASE {TEMPLATE}"))?;
                fs::write(&setup, &objects)?;
                psql_file(server.port, TEMPLATE, &setup, true)?;
                let bouncer_dir = dir.join("pgbouncer");
                fs::create_dir_all(&bouncer_dir)?;
                Some(start_bouncer(&bouncer_dir, server.port, 2 * max_tenants + 256)?)
            }
            Layout::SchemaPerTenant => {
                psql(server.port, &format!("CREATE DATABASE {SCHEMAS_DATABASE}"))?;
                None
            }
        };
        Ok(PgSide { layout, dir: dir.to_path_buf(), server, bouncer, tenants: 0 })
    }

    /// The cluster's own port (not PgBouncer's).
    pub fn server_port(&self) -> u16 {
        self.server.port
    }

    /// Tenants created so far.
    pub fn tenants(&self) -> usize {
        self.tenants
    }

    /// Makes tenants up to `n` (the first `self.tenants` exist), in scripts of
    /// [`SETUP_CHUNK`] tenants.
    pub fn grow(&mut self, n: usize, progress: &dyn Fn(&str)) -> Result<()> {
        let objects = format!("{}\n{}", postgres_tables(), (0..PROCEDURES).map(postgres_function).collect::<String>());
        let script = self.dir.join("grow.sql");
        let started = Instant::now();
        let mut reported = started;
        for first in (self.tenants..n).step_by(SETUP_CHUNK) {
            let last = (first + SETUP_CHUNK).min(n);
            let mut text = String::new();
            for d in first..last {
                let name = tenant_name(d);
                match self.layout {
                    Layout::DatabasePerTenant => {
                        text.push_str(&format!("CREATE DATABASE {name} TEMPLATE {TEMPLATE};\n"))
                    }
                    Layout::SchemaPerTenant => {
                        text.push_str(&format!("CREATE SCHEMA {name};\nSET search_path TO {name};\n{objects}\n"))
                    }
                }
            }
            fs::write(&script, text)?;
            let database = if self.layout == Layout::SchemaPerTenant { SCHEMAS_DATABASE } else { "postgres" };
            psql_file(self.server.port, database, &script, self.layout == Layout::SchemaPerTenant)?;
            self.tenants = last;
            if reported.elapsed() >= PROGRESS_EVERY {
                reported = Instant::now();
                progress(&format!("setup: {last} of {n} tenants, {:.0} s", started.elapsed().as_secs_f64()));
            }
        }
        Ok(())
    }

    /// PostgreSQL's processes (postmaster and its children) and PgBouncer's.
    fn pids(&self) -> Vec<u32> {
        let mut pids = process_and_children(self.server.postmaster_pid());
        pids.extend(self.bouncer.as_ref().map(Bouncer::pid));
        pids
    }

    fn server_cpu(&self) -> f64 {
        postgres_cpu(self.server.postmaster_pid()) + self.bouncer.as_ref().map_or(0.0, |b| process_cpu(b.pid()))
    }

    /// Resident memory of the server: every process's private and file-backed pages, and
    /// the shared memory (shared buffers) once.
    fn rss(&self) -> u64 {
        let samples: Vec<_> = self.pids().into_iter().map(|pid| PidProbe::new(pid).read()).collect();
        samples.iter().map(|s| s.other).sum::<u64>() + samples.iter().map(|s| s.cache).max().unwrap_or(0)
    }

    /// A connection to tenant `d` (through PgBouncer) or to the schemas' database.
    fn connect(&self, d: usize) -> Result<PgConn> {
        match &self.bouncer {
            Some(b) => PgConn::connect(b.port, "postgres", &tenant_name(d)),
            None => PgConn::connect(self.server.port, "postgres", SCHEMAS_DATABASE),
        }
    }

    /// The transaction mix over the first `tenants` tenants for `duration` after `warmup`,
    /// on `connections` client threads, `rate` transactions per second offered (the k-th
    /// due at k ÷ rate, sent then by a free thread, or as soon as one is free).
    pub fn drive(
        &self,
        schedule: &[Call],
        tenants: usize,
        connections: usize,
        rate: f64,
        warmup: Duration,
        duration: Duration,
    ) -> Result<Point> {
        let interval = 1.0 / rate.max(1e-6);
        let per_tenant: Vec<Mutex<Vec<PgConn>>> = match self.layout {
            Layout::DatabasePerTenant => {
                (0..tenants).map(|d| self.connect(d).map(|c| Mutex::new(vec![c]))).collect::<Result<_>>()?
            }
            Layout::SchemaPerTenant => Vec::new(),
        };
        let queries: Vec<String> = schedule
            .iter()
            .map(|c| match self.layout {
                Layout::DatabasePerTenant => c.postgres_query(),
                Layout::SchemaPerTenant => c.postgres_schema_query(),
            })
            .collect();
        let run = |seconds: Duration, record: bool| -> Result<Run> {
            let next = AtomicUsize::new(0);
            let start = Instant::now();
            let deadline = start + seconds;
            let client = |k: usize| -> Result<Run> {
                let cpu_start = thread_cpu_seconds();
                let mut own = match self.layout {
                    Layout::SchemaPerTenant => Some(self.connect(k % tenants)?),
                    Layout::DatabasePerTenant => None,
                };
                let mut out = Run { latencies: Vec::with_capacity(if record { 1 << 18 } else { 0 }), ..Run::default() };
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let due = start + Duration::from_secs_f64(k as f64 * interval);
                    if due >= deadline {
                        break;
                    }
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                    let i = k % queries.len();
                    let sent = Instant::now();
                    let reply = match own.as_mut() {
                        Some(c) => c.query(&queries[i])?,
                        None => {
                            let pool = &per_tenant[schedule[i].tenant];
                            let pooled = pool.lock().map_err(|_| BenchError::new("a poisoned pool"))?.pop();
                            let mut c = match pooled {
                                Some(c) => c,
                                None => self.connect(schedule[i].tenant)?,
                            };
                            let reply = c.query(&queries[i])?;
                            pool.lock().map_err(|_| BenchError::new("a poisoned pool"))?.push(c);
                            reply
                        }
                    };
                    if let Some(e) = reply.error {
                        return Err(BenchError::new(format!("postgresql {}: {e}", queries[i])));
                    }
                    if reply.rows != 1 {
                        return Err(BenchError::new(format!("postgresql {}: {} rows", queries[i], reply.rows)));
                    }
                    out.transactions += 1;
                    if record {
                        out.latencies.push(u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX));
                    }
                }
                out.client_cpu = thread_cpu_seconds() - cpu_start;
                Ok(out)
            };
            let runs: Vec<Result<Run>> = std::thread::scope(|scope| {
                let client = &client;
                let threads = (0..connections)
                    .map(|k| {
                        std::thread::Builder::new()
                            .name(format!("{CLIENT_THREADS}-{k}"))
                            .spawn_scoped(scope, move || client(k))
                    })
                    .collect::<std::io::Result<Vec<_>>>()?;
                Ok::<_, BenchError>(
                    threads
                        .into_iter()
                        .map(|t| t.join().map_err(|_| BenchError::new("a client thread panicked"))?)
                        .collect(),
                )
            })?;
            let mut total = Run { seconds: start.elapsed().as_secs_f64(), ..Run::default() };
            for r in runs {
                let r = r?;
                total.transactions += r.transactions;
                total.client_cpu += r.client_cpu;
                total.latencies.extend(r.latencies);
            }
            Ok(total)
        };
        run(warmup, false)?;
        let server_before = self.server_cpu();
        let mut timed = run(duration, true)?;
        let server_cpu = self.server_cpu() - server_before;
        let sample = Sample::new(timed.transactions, timed.seconds, &mut timed.latencies, server_cpu, timed.client_cpu);
        Ok(Point { sample, compiled_plans: None, plan_cache_bytes: None, rss_bytes: self.rss(), open_databases: None })
    }
}
