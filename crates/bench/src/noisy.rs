//! `tessera bench noisy` (issue 21): quiet tenants beside a noisy one. 100 tenant
//! databases of seed 000's PACE-like schema (`consolidation`'s tenants, 200 procedures
//! each) get short procedure calls at a fixed rate (open loop, from connections in master
//! as seed 000's application sent them), while one more database, the noisy tenant, runs
//! scans of a 131,072-row table and bulk inserts of 5,000 rows flat out on connections of
//! its own. The quiet tenants' p99 latency is measured alone, beside the noisy tenant
//! without limits, and beside it with its limits on (`ALTER DATABASE noisy SET
//! MAX_CPU_PERCENT, MAX_CONCURRENT_REQUESTS, MAX_LOG_RATE_KB`); the goal is the last at
//! most [`GOAL_LIMITED_OVER_ALONE`] × the first. PostgreSQL runs the same tenants (a
//! schema per tenant, its best layout at this count: see [`postgres_side`]) and the same
//! noisy tenant in the same run, with no equivalent control: the baseline its users have.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::consolidation::postgres::{Layout, PgSide};
use crate::consolidation::schema::{schedule, Skew, PROCEDURES};
use crate::consolidation::tessera::{drive, Instance, InstanceSpec};
use crate::consolidation::{tenant_schema, Sample};
use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::peers::pgwire::PgConn;
use crate::peers::postgres::psql;
use crate::pointselect::PASSWORD;
use crate::report::{Report, ResultRow};
use crate::tdsload::{self, LoadSpec, Stop};

pub const NAME: &str = "noisy";
/// The quiet tenants' p99 beside the noisy tenant with its limits on may be at most this
/// multiple of their p99 alone.
pub const GOAL_LIMITED_OVER_ALONE: f64 = 2.0;

/// The noisy tenant's database (on both sides).
const NOISY: &str = "noisy";
/// The noisy tenant's scan: every row of `big` read and tested, one row answered.
const SCAN: &str = "select count(*) from big where pad like '%zz%'";
/// Rows in `big`: one row doubled this many times.
const DOUBLINGS: u32 = 17;

/// The noisy tenant's limits in the limited phase.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct NoisyLimits {
    pub max_cpu_percent: u32,
    pub max_concurrent_requests: u32,
    pub max_log_rate_kb: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct NoisyParams {
    pub quiet_tenants: usize,
    /// Procedure calls per second offered to the quiet tenants in all (open loop).
    pub quiet_per_second: f64,
    pub quiet_connections: usize,
    /// The noisy tenant's connections running scans, and running bulk inserts.
    pub scan_connections: usize,
    pub insert_connections: usize,
    /// Rows each bulk insert copies.
    pub insert_rows: usize,
    pub limits: NoisyLimits,
    pub warmup_seconds: u64,
    pub seconds: u64,
    /// tessera's buffer pool and PostgreSQL's shared_buffers.
    pub memory_mb: usize,
    pub postgres: bool,
    /// The `tessera` binary the server is started from (`tessera serve`); None runs it in
    /// this process (the crate's tests).
    #[serde(skip)]
    pub binary: Option<PathBuf>,
}

impl NoisyParams {
    pub fn full(binary: Option<PathBuf>) -> NoisyParams {
        NoisyParams {
            quiet_tenants: 100,
            quiet_per_second: 500.0,
            quiet_connections: 8,
            scan_connections: 2,
            insert_connections: 1,
            insert_rows: 5000,
            limits: NoisyLimits { max_cpu_percent: 20, max_concurrent_requests: 2, max_log_rate_kb: 8192 },
            warmup_seconds: 3,
            seconds: 20,
            memory_mb: 1024,
            postgres: true,
            binary,
        }
    }

    pub fn quick(binary: Option<PathBuf>) -> NoisyParams {
        NoisyParams { quiet_tenants: 20, quiet_per_second: 200.0, warmup_seconds: 2, seconds: 5, ..Self::full(binary) }
    }

    fn warmup(&self) -> Duration {
        Duration::from_secs(self.warmup_seconds)
    }

    fn seconds(&self) -> Duration {
        Duration::from_secs(self.seconds)
    }

    /// The noisy tenant's bulk insert: the copy replaces the last one, so the table
    /// stays small while the log takes every row.
    fn insert_batch(&self, dialect: Dialect) -> String {
        match dialect {
            Dialect::Tessera => format!(
                "truncate table sink; insert into sink (grp, pad) select top ({}) grp, pad from big",
                self.insert_rows
            ),
            Dialect::Postgres => {
                format!(
                    "truncate sink; insert into sink (grp, pad) select grp, pad from big limit {}",
                    self.insert_rows
                )
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Dialect {
    Tessera,
    Postgres,
}

/// The noisy tenant's tables, filled.
fn noisy_schema(dialect: Dialect) -> String {
    let (identity, replicate) = match dialect {
        Dialect::Tessera => ("int identity primary key", "replicate('x', 180)"),
        Dialect::Postgres => ("int generated always as identity primary key", "repeat('x', 180)"),
    };
    let tables = format!(
        "create table big (id {identity}, grp int not null, pad varchar(200) not null); \
         create table sink (id {identity}, grp int not null, pad varchar(200) not null); \
         insert into big (grp, pad) values (0, {replicate});"
    );
    let doubling = "insert into big (grp, pad) select grp + 1, pad from big";
    match dialect {
        Dialect::Tessera => {
            format!("{tables} declare @i int = 0; while @i < {DOUBLINGS} begin {doubling}; set @i += 1; end")
        }
        Dialect::Postgres => {
            format!("{tables} do $$ begin for i in 1..{DOUBLINGS} loop {doubling}; end loop; end $$; analyze big;")
        }
    }
}

/// What one phase measured: the quiet tenants' calls, and what the noisy tenant got done
/// meanwhile.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Phase {
    pub quiet: Sample,
    pub scans: u64,
    pub inserts: u64,
    pub seconds: f64,
}

impl Phase {
    fn scans_per_second(&self) -> f64 {
        self.scans as f64 / self.seconds.max(1e-9)
    }

    fn inserted_rows_per_second(&self, p: &NoisyParams) -> f64 {
        (self.inserts as f64 * p.insert_rows as f64) / self.seconds.max(1e-9)
    }
}

/// One side's phases: alone, beside the noisy tenant, and (tessera) with its limits on,
/// then with its CPU share instead of its CPU cap.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SidePhases {
    pub alone: Phase,
    pub noisy: Phase,
    pub limited: Option<Phase>,
    pub shared: Option<Phase>,
    pub notes: Vec<String>,
}

/// tessera: one `tessera serve`, the quiet tenants and the noisy one created over TDS.
fn tessera_side(dir: &Path, p: &NoisyParams, progress: &dyn Fn(&str)) -> Result<SidePhases> {
    let spec = InstanceSpec {
        binary: p.binary.clone(),
        dir: dir.join("instance"),
        memory_mb: p.memory_mb,
        max_open: p.quiet_tenants + 64,
        affinity_mask: None,
        metrics_port: None,
        descriptor_limit: None,
    };
    let tenants: Vec<usize> = (0..p.quiet_tenants).collect();
    let mut server = Instance::start(&spec, Vec::new())?;
    progress(&format!("tessera: creating {} quiet tenants and the noisy one", p.quiet_tenants));
    server.create_tenants(&tenant_schema(), &tenants, progress)?;
    server.tenants = tenants;
    server.admin(&[
        format!("create database {NOISY}"),
        format!("alter database {NOISY} set delayed_durability = forced"),
        format!("use {NOISY}; {}", noisy_schema(Dialect::Tessera)),
    ])?;
    let calls = schedule(p.quiet_tenants, PROCEDURES, Skew::Uniform, p.quiet_tenants as u64);
    let quiet = |server: &Instance| {
        drive(std::slice::from_ref(server), &calls, p.quiet_connections, p.quiet_per_second, p.warmup(), p.seconds())
    };
    let mut out = SidePhases::default();
    progress(&format!("tessera: quiet tenants alone, {} s", p.seconds));
    out.alone = Phase { quiet: quiet(&server)?, ..Phase::default() };
    progress(&format!("tessera: quiet tenants beside the noisy one, no limits, {} s", p.seconds));
    out.noisy = beside_tessera(&server, p, || quiet(&server))?;
    let l = p.limits;
    server.admin(&[format!(
        "alter database {NOISY} set max_cpu_percent = {}; alter database {NOISY} set max_concurrent_requests = {}; \
         alter database {NOISY} set max_log_rate_kb = {}",
        l.max_cpu_percent, l.max_concurrent_requests, l.max_log_rate_kb
    )])?;
    progress(&format!("tessera: quiet tenants beside the noisy one, limits on, {} s", p.seconds));
    out.limited = Some(beside_tessera(&server, p, || quiet(&server))?);
    let held =
        server.admin(&["select cast(cpu_throttled_ms_total as bigint), cast(log_throttled_ms_total as bigint) \
         from sys.dm_tessera_resource_limits where name = 'noisy'"
            .to_string()])?;
    if let Some((cpu_ms, log_ms)) = held.first() {
        out.notes.push(format!(
            "tessera: sys.dm_tessera_resource_limits after the limited phase: the noisy tenant's requests waited \
             {cpu_ms} ms for its CPU cap and {log_ms} ms for its log rate"
        ));
    }
    // The same with a share (held only while the CPU is contended) instead of the cap.
    server.admin(&[format!(
        "alter database {NOISY} set max_cpu_percent = 0; alter database {NOISY} set cpu_share_percent = {}",
        l.max_cpu_percent
    )])?;
    progress(&format!("tessera: quiet tenants beside the noisy one, a CPU share instead of the cap, {} s", p.seconds));
    out.shared = Some(beside_tessera(&server, p, || quiet(&server))?);
    let held = server.admin(&["select cast(cpu_share_throttled_ms_total as bigint), 0 \
         from sys.dm_tessera_resource_limits where name = 'noisy'"
        .to_string()])?;
    if let Some((share_ms, _)) = held.first() {
        out.notes.push(format!(
            "tessera: in the share phase the noisy tenant's requests waited {share_ms} ms for its CPU share"
        ));
    }
    server.stop()?;
    Ok(out)
}

/// Runs `quiet` while the noisy tenant's loads run on tessera, flat out, for as long.
fn beside_tessera(server: &Instance, p: &NoisyParams, quiet: impl FnOnce() -> Result<Sample>) -> Result<Phase> {
    let insert = p.insert_batch(Dialect::Tessera);
    let noisy_for = p.warmup() + p.seconds();
    let load = |batch: &str, connections: usize, rows: u64| {
        tdsload::run(&LoadSpec {
            port: server.port,
            user: "sa",
            password: PASSWORD,
            database: NOISY,
            batches: &[batch],
            connections,
            stop: Stop::After(noisy_for),
            expect_rows: Some(rows),
            record_latencies: false,
            rate: None,
        })
    };
    std::thread::scope(|scope| {
        let scans = scope.spawn(|| load(SCAN, p.scan_connections, 1));
        let inserts = scope.spawn(|| load(&insert, p.insert_connections, 0));
        let quiet = quiet();
        let scans = scans.join().map_err(|_| BenchError::new("the noisy scans panicked"))??;
        let inserts = inserts.join().map_err(|_| BenchError::new("the noisy inserts panicked"))??;
        for (what, run) in [("scan", &scans), ("insert", &inserts)] {
            if let Some(e) = &run.first_error {
                return Err(BenchError::new(format!("tessera noisy {what}: {e}")));
            }
        }
        Ok(Phase { quiet: quiet?, scans: scans.queries, inserts: inserts.queries, seconds: scans.seconds })
    })
}

/// PostgreSQL: a schema per quiet tenant in one database, the client connections
/// straight to the cluster (a database per tenant behind PgBouncer, `consolidation`'s
/// other layout, spent its quiet p99 on server connections closed and opened between
/// tenants: 46 ms alone, which no noisy neighbour explains); the noisy tenant in the
/// cluster's `postgres` database, its connections straight to the cluster too.
fn postgres_side(dir: &Path, p: &NoisyParams, progress: &dyn Fn(&str)) -> Result<SidePhases> {
    let mut pg = PgSide::start(dir, Layout::SchemaPerTenant, p.memory_mb, p.quiet_tenants)?;
    progress(&format!("postgresql: creating {} quiet tenants and the noisy one", p.quiet_tenants));
    pg.grow(p.quiet_tenants, progress)?;
    psql(pg.server_port(), &noisy_schema(Dialect::Postgres))?;
    let calls = schedule(p.quiet_tenants, PROCEDURES, Skew::Uniform, p.quiet_tenants as u64);
    let quiet = |pg: &PgSide| {
        pg.drive(&calls, p.quiet_tenants, p.quiet_connections, p.quiet_per_second, p.warmup(), p.seconds())
            .map(|point| point.sample)
    };
    let mut out = SidePhases::default();
    progress(&format!("postgresql: quiet tenants alone, {} s", p.seconds));
    out.alone = Phase { quiet: quiet(&pg)?, ..Phase::default() };
    progress(&format!("postgresql: quiet tenants beside the noisy one, {} s", p.seconds));
    out.noisy = beside_postgres(pg.server_port(), p, || quiet(&pg))?;
    out.notes.push("postgresql: no per-database CPU, request or log-rate limit exists to turn on".to_string());
    Ok(out)
}

/// Runs `quiet` while the noisy tenant's connections run on PostgreSQL, flat out.
fn beside_postgres(port: u16, p: &NoisyParams, quiet: impl FnOnce() -> Result<Sample>) -> Result<Phase> {
    let insert = p.insert_batch(Dialect::Postgres);
    let stop = AtomicBool::new(false);
    let (scans, inserts) = (AtomicU64::new(0), AtomicU64::new(0));
    let started = Instant::now();
    let noisy = |sql: &str, done: &AtomicU64| -> Result<()> {
        let mut c = PgConn::connect(port, "postgres", "postgres")?;
        while !stop.load(Ordering::Relaxed) {
            let reply = c.query(sql)?;
            if let Some(e) = reply.error {
                return Err(BenchError::new(format!("postgresql noisy {sql}: {e}")));
            }
            done.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    };
    let (quiet, seconds) = std::thread::scope(|scope| {
        let (noisy, scans, inserts, insert) = (&noisy, &scans, &inserts, &insert);
        let mut loads = Vec::new();
        for _ in 0..p.scan_connections {
            loads.push(scope.spawn(move || noisy(SCAN, scans)));
        }
        for _ in 0..p.insert_connections {
            loads.push(scope.spawn(move || noisy(insert, inserts)));
        }
        let quiet = quiet();
        stop.store(true, Ordering::Relaxed);
        let seconds = started.elapsed().as_secs_f64();
        for load in loads {
            load.join().map_err(|_| BenchError::new("a noisy postgresql client panicked"))??;
        }
        Ok::<_, BenchError>((quiet, seconds))
    })?;
    Ok(Phase { quiet: quiet?, scans: scans.into_inner(), inserts: inserts.into_inner(), seconds })
}

/// A finished run: the report, and what could not be measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

pub fn run(dir: &Path, params: &NoisyParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    let side = |sub: &str, f: &dyn Fn(&Path) -> Result<SidePhases>| {
        let path = dir.join(sub);
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        let out = f(&path);
        let _ = std::fs::remove_dir_all(&path);
        out
    };
    let tessera =
        side("tessera", &|d| tessera_side(d, params, progress)).map_err(|e| failures.push(format!("tessera: {e}")));
    let postgres = if params.postgres {
        side("postgres", &|d| postgres_side(d, params, progress))
            .map_err(|e| failures.push(format!("postgresql: {e}")))
            .ok()
    } else {
        None
    };
    if let Ok(t) = &tessera {
        push_rows(&mut report, params, t, postgres.as_ref());
    }
    for f in &failures {
        report.note(format!("not measured: {f}"));
    }
    Ok(Outcome { report, failures })
}

fn push_rows(report: &mut Report, p: &NoisyParams, t: &SidePhases, pg: Option<&SidePhases>) {
    let limited = t.limited.unwrap_or_default();
    let shared = t.shared.unwrap_or_default();
    let p99 = |phase: &Phase| phase.quiet.p99_ms;
    // (metric, tessera's p99, peer, the peer's p99, goal). The goal, limited ≤ 2 ×
    // alone, is a time ratio: alone ÷ limited ≥ ½. Goals of 0 are figures to compare.
    let mut rows = vec![
        (
            "quiet tenants' p99, noisy tenant limited (peer: the same alone)",
            p99(&limited),
            "tessera alone",
            p99(&t.alone),
            1.0 / GOAL_LIMITED_OVER_ALONE,
        ),
        (
            "quiet tenants' p99, noisy tenant without limits (peer: the same alone)",
            p99(&t.noisy),
            "tessera alone",
            p99(&t.alone),
            0.0,
        ),
        (
            "quiet tenants' p99, noisy tenant under a CPU share instead of the cap (peer: the same alone)",
            p99(&shared),
            "tessera alone",
            p99(&t.alone),
            0.0,
        ),
    ];
    if let Some(pg) = pg {
        rows.extend([
            ("quiet tenants' p99 alone", p99(&t.alone), "postgresql", p99(&pg.alone), 0.0),
            (
                "quiet tenants' p99 beside the noisy tenant (tessera limited, postgresql cannot be)",
                p99(&limited),
                "postgresql",
                p99(&pg.noisy),
                1.0,
            ),
            (
                "quiet tenants' p99 beside the noisy tenant, neither limited",
                p99(&t.noisy),
                "postgresql",
                p99(&pg.noisy),
                0.0,
            ),
        ]);
    }
    for (metric, ours, peer, peer_value, goal) in rows {
        report.push(ResultRow::time(metric, "ms", ours, peer, peer_value, goal));
    }
    let quiet_phases =
        [("alone", &t.alone), ("noisy, no limits", &t.noisy), ("noisy, limited", &limited), ("noisy, shared", &shared)];
    for (label, phase) in quiet_phases {
        report.note(format!(
            "tessera, quiet {label}: {} calls in {:.1} s, p50 {:.2} ms, p99 {:.2} ms",
            phase.quiet.transactions, phase.quiet.seconds, phase.quiet.p50_ms, phase.quiet.p99_ms
        ));
    }
    for (label, phase) in [("no limits", &t.noisy), ("limited", &limited), ("under a share", &shared)] {
        report.note(format!(
            "tessera, noisy tenant {label}: {:.1} scans/s, {:.0} rows inserted/s",
            phase.scans_per_second(),
            phase.inserted_rows_per_second(p)
        ));
    }
    if let Some(pg) = pg {
        for (label, phase) in [("alone", &pg.alone), ("beside the noisy tenant", &pg.noisy)] {
            report.note(format!(
                "postgresql, quiet {label}: {} calls in {:.1} s, p50 {:.2} ms, p99 {:.2} ms",
                phase.quiet.transactions, phase.quiet.seconds, phase.quiet.p50_ms, phase.quiet.p99_ms
            ));
        }
        report.note(format!(
            "postgresql, noisy tenant: {:.1} scans/s, {:.0} rows inserted/s",
            pg.noisy.scans_per_second(),
            pg.noisy.inserted_rows_per_second(p)
        ));
        report.notes.extend(pg.notes.iter().cloned());
    }
    let l = p.limits;
    report.note(format!(
        "limits in the limited phase: MAX_CPU_PERCENT = {}, MAX_CONCURRENT_REQUESTS = {}, MAX_LOG_RATE_KB = {}",
        l.max_cpu_percent, l.max_concurrent_requests, l.max_log_rate_kb
    ));
    report.notes.extend(t.notes.iter().cloned());
}
