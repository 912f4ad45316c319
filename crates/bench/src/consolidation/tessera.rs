//! tessera's side: `tessera serve` processes of the benchmark's own (one, or two each
//! pinned to half the CPUs), tenants created in process on their data directories while
//! they are stopped (setup, not measured), and the transaction mix driven over TDS by
//! [`crate::tdsload`].

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::schema::{tenant_name, Call};
use super::{Point, Sample};
use crate::cpu::process_cpu;
use crate::error::{BenchError, Result};
use crate::pointselect::{batch, connect, PASSWORD};
use crate::rss::PidProbe;
use crate::tdsload::{self, LoadSpec, Stop};
use crate::tenants::{TenantSchema, PROGRESS_EVERY};

/// Connections creating tenants at once.
const SETUP_CONNECTIONS: usize = 4;
/// Seconds after which an idle database closes: longer than any run, so that the open
/// databases are the ones used.
const IDLE_CLOSE_SECS: u64 = 86_400;
/// Client connections a server allows: the benchmark's few, so that the descriptors a
/// server shares out between connections and open databases go to databases.
const MAX_CONNECTIONS: usize = 256;
/// Descriptors asked for (soft and hard RLIMIT_NOFILE) before servers start, so that
/// 10,000 databases of two files each can be open at once.
const DESCRIPTORS: u64 = 65_536;
/// How long a server may take to accept a login.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How a server runs.
enum Process {
    /// `tessera serve`, a process of its own.
    Child(Child),
    /// A server in this process (when no binary is given: the crate's tests), whose CPU
    /// time and memory figures then include the clients'.
    InProcess(Option<tessera_server::RunningServer>),
}

/// One server of the benchmark's, on its own data directory and port.
pub struct Instance {
    process: Process,
    pub dir: PathBuf,
    pub port: u16,
    /// `sp_configure 'affinity mask'`, if the instance is pinned.
    pub affinity_mask: Option<u64>,
    /// Tenants `tenants` of this instance exist (global tenant numbers).
    pub tenants: Vec<usize>,
}

pub(crate) fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// What an instance is asked to be.
pub struct InstanceSpec {
    /// The `tessera` binary to run `serve` from; None runs the server in this process.
    pub binary: Option<PathBuf>,
    pub dir: PathBuf,
    pub memory_mb: usize,
    /// Most databases open at once (the config file's `max_open_databases`; also set with
    /// sp_configure).
    pub max_open: usize,
    pub affinity_mask: Option<u64>,
    /// Serve Prometheus metrics on this port (`metrics_port`); None: no listener.
    pub metrics_port: Option<u16>,
    /// The server process's descriptor limit, soft and hard (so that it cannot raise
    /// it); None: this process's (a server in this process always has this process's).
    pub descriptor_limit: Option<u64>,
}

impl Instance {
    /// Starts `tessera serve` on `spec.dir` and waits until it accepts a login; then sets
    /// the open-database limit, a long idle close, and the affinity mask, by sp_configure.
    pub fn start(spec: &InstanceSpec, tenants: Vec<usize>) -> Result<Instance> {
        Instance::start_with(spec, tenants, &[])
    }

    /// As [`Instance::start`], with `args` after `tessera serve --config FILE` (a server
    /// in this process takes none).
    pub fn start_with(spec: &InstanceSpec, tenants: Vec<usize>, args: &[String]) -> Result<Instance> {
        if spec.binary.is_none() && !args.is_empty() {
            return Err(BenchError::new("a server in this process takes no command-line flags"));
        }
        fs::create_dir_all(&spec.dir)?;
        raise_descriptor_limit();
        let (process, port) = match &spec.binary {
            Some(binary) => {
                let port = free_port()?;
                let config = spec.dir.join("tessera.toml");
                fs::write(
                    &config,
                    format!(
                        "listen = \"127.0.0.1\"\nport = {port}\ndata_dir = {:?}\nmemory_mb = {}\n\
                         max_open_databases = {}\nidle_close_secs = {IDLE_CLOSE_SECS}\nmax_connections = {MAX_CONNECTIONS}\n\
                         log_stderr = false\n{}",
                        spec.dir.join("data"),
                        spec.memory_mb,
                        spec.max_open,
                        spec.metrics_port.map_or(String::new(), |p| format!("metrics_port = {p}\n")),
                    ),
                )?;
                let mut command = Command::new(binary);
                if let Some(limit) = spec.descriptor_limit {
                    let limit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                    // SAFETY: between fork and exec the child only calls setrlimit, which
                    // is async-signal-safe, on a struct copied into the closure.
                    unsafe {
                        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
                            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                                Ok(())
                            } else {
                                Err(std::io::Error::last_os_error())
                            }
                        });
                    }
                }
                let child = command
                    .args(["serve", "--config"])
                    .arg(&config)
                    .args(args)
                    .env("TESSERA_SA_PASSWORD", PASSWORD)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| BenchError::new(format!("{} serve: {e}", binary.display())))?;
                (Process::Child(child), port)
            }
            None => {
                let server = tessera_server::RunningServer::start(tessera_server::Config {
                    port: 0,
                    data_dir: spec.dir.join("data"),
                    sa_password: Some(PASSWORD.to_string()),
                    memory_mb: spec.memory_mb,
                    max_open_databases: spec.max_open,
                    idle_close_secs: IDLE_CLOSE_SECS,
                    max_connections: MAX_CONNECTIONS,
                    metrics_port: spec.metrics_port,
                    errorlog: false,
                    log_stderr: false,
                    ..tessera_server::Config::default()
                })
                .map_err(BenchError::new)?;
                let port = server.addr.port();
                (Process::InProcess(Some(server)), port)
            }
        };
        let mut instance =
            Instance { process, dir: spec.dir.clone(), port, affinity_mask: spec.affinity_mask, tenants };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Process::Child(child) = &mut instance.process {
                if let Some(status) = child.try_wait()? {
                    let log = spec.dir.join("data").join("ERRORLOG");
                    return Err(BenchError::new(format!("tessera serve exited with {status} (see {})", log.display())));
                }
            }
            if instance.admin(&[]).is_ok() {
                break;
            }
            if Instant::now() > deadline {
                return Err(BenchError::new("tessera serve did not accept a login in time"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut settings = vec![
            "exec sp_configure 'show advanced options', 1; reconfigure".to_string(),
            format!("exec sp_configure 'max open databases', {}; reconfigure", spec.max_open),
            format!("exec sp_configure 'idle database close (s)', {IDLE_CLOSE_SECS}; reconfigure"),
        ];
        if let Some(mask) = spec.affinity_mask {
            settings.push(format!("exec sp_configure 'affinity mask', {mask}; reconfigure"));
        }
        instance.admin(&settings)?;
        Ok(instance)
    }

    /// Creates the tenants `todo` (global numbers) over TDS as an application would, on
    /// [`SETUP_CONNECTIONS`] connections: CREATE DATABASE, DELAYED_DURABILITY = FORCED, and
    /// the schema in one batch in the new database.
    pub fn create_tenants(&self, schema: &TenantSchema, todo: &[usize], progress: &dyn Fn(&str)) -> Result<()> {
        let body = Arc::new(schema.one_batch());
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let port = self.port;
        let started = Instant::now();
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..SETUP_CONNECTIONS)
            .map(|t| {
                let mine: Vec<usize> = todo.iter().copied().skip(t).step_by(SETUP_CONNECTIONS).collect();
                let (body, done) = (body.clone(), done.clone());
                runtime.spawn(async move {
                    let mut c = connect(port).await?;
                    for d in mine {
                        let name = tenant_name(d);
                        batch(&mut c, &format!("use master; create database [{name}]"), "create database").await?;
                        let durability = format!("alter database [{name}] set delayed_durability = forced");
                        batch(&mut c, &durability, "alter database").await?;
                        batch(&mut c, &format!("use [{name}]; {body}"), "tenant schema")
                            .await
                            .map_err(|e| e.context(name))?;
                        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Ok::<(), BenchError>(())
                })
            })
            .collect();
        let mut reported = Instant::now();
        while !tasks.iter().all(|t| t.is_finished()) {
            std::thread::sleep(Duration::from_millis(100));
            if reported.elapsed() >= PROGRESS_EVERY {
                reported = Instant::now();
                let n = done.load(std::sync::atomic::Ordering::Relaxed);
                progress(&format!("setup: {n} of {} tenants, {:.0} s", todo.len(), started.elapsed().as_secs_f64()));
            }
        }
        for t in tasks {
            runtime.block_on(t).map_err(|e| BenchError::new(e.to_string()))??;
        }
        Ok(())
    }

    /// A server as after a fresh start: `tessera serve` is stopped and started again (an
    /// empty plan cache, no database open); a server in this process, which cannot
    /// reopen its directory, gets DBCC FREEPROCCACHE instead.
    pub fn restart(self, spec: &InstanceSpec) -> Result<Instance> {
        if let Process::InProcess(_) = self.process {
            self.admin(&["dbcc freeproccache".to_string()])?;
            return Ok(self);
        }
        let tenants = self.tenants.clone();
        self.stop()?;
        Instance::start(spec, tenants)
    }

    /// The data directory the server runs on.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    pub fn pid(&self) -> u32 {
        match &self.process {
            Process::Child(child) => child.id(),
            Process::InProcess(_) => std::process::id(),
        }
    }

    /// Runs `batches` on one admin connection; the rows of the last as (i64, i64) pairs.
    pub fn admin(&self, batches: &[String]) -> Result<Vec<(i64, i64)>> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let port = self.port;
        runtime.block_on(async move {
            let mut c = connect(port).await?;
            let mut rows = Vec::new();
            for (i, text) in batches.iter().enumerate() {
                if i + 1 < batches.len() {
                    batch(&mut c, text, "admin").await?;
                    continue;
                }
                let result = c
                    .simple_query(text.as_str())
                    .await
                    .map_err(|e| BenchError::new(format!("tessera {text}: {e}")))?
                    .into_first_result()
                    .await
                    .map_err(|e| BenchError::new(format!("tessera {text}: {e}")))?;
                let int = |r: &tiberius::Row, k: usize| {
                    r.try_get::<i64, _>(k)
                        .ok()
                        .flatten()
                        .or_else(|| r.try_get::<i32, _>(k).ok().flatten().map(i64::from))
                        .unwrap_or(0)
                };
                rows = result.iter().map(|r| (int(r, 0), int(r, 1))).collect();
            }
            Ok(rows)
        })
    }

    /// (entries holding compiled plans, their bytes) from sys.dm_exec_cached_plans.
    pub fn plan_cache(&self) -> Result<(i64, i64)> {
        let rows =
            self.admin(&["select count(*), sum(cast(size_in_bytes as bigint)) from sys.dm_exec_cached_plans \
             where cacheobjtype = 'Compiled Plan'"
                .to_string()])?;
        Ok(rows.first().copied().unwrap_or((0, 0)))
    }

    /// Databases the server has open (`sys.dm_tessera_databases`; their files'
    /// descriptors are cached, so counting open files would not tell).
    pub fn open_databases(&self) -> Result<usize> {
        let rows = self.admin(&["select count(*), 0 from sys.dm_tessera_databases where is_open = 1".to_string()])?;
        Ok(rows.first().map_or(0, |r| usize::try_from(r.0).unwrap_or(0)))
    }

    /// Whether every thread of the server may run only on the CPUs of its affinity mask
    /// (from /proc/…/task/…/status): what the mask did, not what was asked.
    pub fn pinned(&self) -> Option<bool> {
        let mask = self.affinity_mask?;
        let tasks = fs::read_dir(format!("/proc/{}/task", self.pid())).ok()?;
        let mut all = true;
        for task in tasks.flatten() {
            let status = fs::read_to_string(task.path().join("status")).ok()?;
            let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed:"))?.trim().replace(',', "");
            all &= u64::from_str_radix(&allowed, 16).ok()? & !mask == 0;
        }
        Some(all)
    }

    /// The server's resident memory (VmRSS) in bytes.
    pub fn rss(&self) -> u64 {
        PidProbe::new(self.pid()).read().rss
    }

    /// Stops the server (SIGTERM, as a service manager would) and waits for it.
    pub fn stop(mut self) -> Result<()> {
        match &mut self.process {
            Process::Child(child) => {
                // SAFETY: kill has no memory preconditions; the pid is our child's.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
                child.wait()?;
                Ok(())
            }
            Process::InProcess(server) => server.take().map_or(Ok(()), |s| s.stop().map_err(BenchError::new)),
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Process::Child(child) = self {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Raises this process's descriptor limit (inherited by the servers it starts) to
/// [`DESCRIPTORS`], as a service unit's `LimitNOFILE` would; the hard limit rises only with
/// the privilege to raise it, and a server shares out what it gets (its ERRORLOG says how).
fn raise_descriptor_limit() {
    // SAFETY: a zeroed rlimit is valid for getrlimit to fill; both calls only read and
    // write that struct.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= DESCRIPTORS {
            return;
        }
        let wanted = libc::rlimit { rlim_cur: DESCRIPTORS, rlim_max: limit.rlim_max.max(DESCRIPTORS) };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) != 0 {
            let soft = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            libc::setrlimit(libc::RLIMIT_NOFILE, &soft);
        }
    }
}

/// The server's ERRORLOG line on its descriptor budget, if it wrote one.
pub fn descriptor_budget(instance: &Instance) -> Option<String> {
    let log = fs::read_to_string(instance.data_dir().join("ERRORLOG")).ok()?;
    log.lines()
        .rev()
        .find(|l| l.contains("Open file limit"))
        .map(|l| l.split("Server").last().unwrap_or(l).trim().to_string())
}

/// The transaction mix against `instances` for `duration` after `warmup`, `rate`
/// transactions per second offered in all: each instance gets `connections / instances`
/// connections (in master), the schedule's calls to its own tenants and its share of the
/// rate, run by one generator thread per instance.
pub fn drive(
    instances: &[Instance],
    schedule: &[Call],
    connections: usize,
    rate: f64,
    warmup: Duration,
    duration: Duration,
) -> Result<Sample> {
    let per_instance = (connections / instances.len()).max(1);
    let texts: Vec<Vec<String>> = instances
        .iter()
        .map(|i| {
            let mine: std::collections::HashSet<usize> = i.tenants.iter().copied().collect();
            schedule.iter().filter(|c| mine.contains(&c.tenant)).map(Call::tessera_batch).collect()
        })
        .collect();
    let run_all = |stop: Stop, record: bool| -> Result<Vec<tdsload::LoadRun>> {
        std::thread::scope(|scope| {
            let runs: Vec<_> = instances
                .iter()
                .zip(&texts)
                .map(|(instance, texts)| {
                    let port = instance.port;
                    let share = rate * texts.len() as f64 / schedule.len().max(1) as f64;
                    scope.spawn(move || {
                        let batches: Vec<&str> = texts.iter().map(String::as_str).collect();
                        tdsload::run(&LoadSpec {
                            port,
                            user: "sa",
                            password: PASSWORD,
                            database: "master",
                            batches: &batches,
                            connections: per_instance,
                            stop,
                            expect_rows: Some(1),
                            record_latencies: record,
                            rate: Some(share),
                        })
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().map_err(|_| BenchError::new("a load thread panicked"))?).collect()
        })
    };
    let warm = run_all(Stop::After(warmup), false)?;
    if let Some(e) = warm.iter().find_map(|r| r.first_error.clone()) {
        return Err(BenchError::new(format!("tessera warm-up: {e}")));
    }
    let cpu_before: Vec<f64> = instances.iter().map(|i| process_cpu(i.pid())).collect();
    let runs = run_all(Stop::After(duration), true)?;
    let server_cpu: f64 = instances.iter().zip(&cpu_before).map(|(i, before)| process_cpu(i.pid()) - before).sum();
    if let Some(e) = runs.iter().find_map(|r| r.first_error.clone()) {
        return Err(BenchError::new(format!("tessera: {e}")));
    }
    let mut latencies: Vec<u32> = runs.iter().flat_map(|r| r.latencies_us.iter().copied()).collect();
    let seconds = runs.iter().map(|r| r.seconds).fold(0.0, f64::max);
    Ok(Sample::new(
        runs.iter().map(|r| r.queries).sum(),
        seconds,
        &mut latencies,
        server_cpu,
        runs.iter().map(|r| r.cpu_seconds).sum(),
    ))
}

/// The figures of `instances` after a run, added to `sample`.
pub fn finish_point(instances: &[Instance], sample: Sample) -> Result<Point> {
    let mut plans = 0;
    let mut plan_bytes = 0;
    for i in instances {
        let (n, b) = i.plan_cache()?;
        plans += n;
        plan_bytes += b;
    }
    Ok(Point {
        sample,
        compiled_plans: Some(plans as u64),
        plan_cache_bytes: Some(plan_bytes as u64),
        rss_bytes: instances.iter().map(Instance::rss).sum(),
        open_databases: Some(instances.iter().map(Instance::open_databases).sum::<Result<usize>>()?),
    })
}
