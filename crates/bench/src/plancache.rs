//! `tessera bench plancache` (issue 19): thousands of tenant databases of one schema, each
//! with the same stored procedures, sharing compiled plans.
//!
//! Every database holds four tables and `procedures` stored procedures of eight shapes
//! (point select, SELECT into a variable then compute, UPDATE in a transaction then
//! SELECT, a procedure calling another with EXEC, a join, an INSERT into an IDENTITY
//! table returning SCOPE_IDENTITY(), IF EXISTS, TOP … ORDER BY). The plan cache is emptied
//! (DBCC FREEPROCCACHE), then every procedure runs once in every database, called as a
//! TDS client calls it (an RPC with an `int` parameter, `Session::execute_rpc`), each
//! first call timed: in the first database it compiles (parse, bind, run); in every other
//! it finds the shared plans (fingerprints checked, run). A sample of databases runs each
//! procedure a second time (warm). Then one table is altered in a tenth of the databases
//! and everything runs again: those databases fork their plans, the others keep sharing.
//! Every call's result is checked.
//!
//! There is no peer: the goals compare tessera with its own compile. Rows against
//! "compile" have ratio = compile ÷ ours; the ceilings on counts are written as rows
//! against the ceiling (ratio = ceiling ÷ ours, goal ≥ 1).

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use tessera_database::{Engine, EngineConfig};
use tessera_semantics::types::{SqlType, Value};
use tessera_sql::session::RpcParam;
use tessera_sql::{Session, Shared};

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::report::{fmt_value, Report, ResultRow};
use crate::tenants::{
    check_free_space, checked, create_tenant, create_tenants, disk_usage, execute, open_session, LastValue,
    TenantSchema, PROGRESS_EVERY,
};

/// The benchmark's name, as in `tessera bench plancache`.
pub const NAME: &str = "plancache";

/// Cache entries holding compiled plans may be at most this many (the "≤ 250").
pub const GOAL_COMPILED_ENTRIES: f64 = 250.0;
/// The plan cache's accounted memory may be at most this (MiB).
pub const GOAL_CACHE_MIB: f64 = 64.0;
/// A shared plan's first run in a new database, net of a warm run, may cost at most this
/// share of a compile net of a warm run.
pub const GOAL_FIRST_RUN_SHARE_OF_COMPILE: f64 = 0.10;
/// The plan cache hit ratio over a phase must be at least this (%).
pub const GOAL_HIT_RATIO_PERCENT: f64 = 99.0;

/// Rows of `customers` (and the range of the procedures' `@id` argument).
const CUSTOMERS: i64 = 10;
/// Rows of `products`.
const PRODUCTS: i64 = 5;
/// Orders per customer.
const ORDERS_PER_CUSTOMER: i64 = 2;
/// Procedure shapes; procedure `p` has shape `p % SHAPES`.
const SHAPES: usize = 8;
/// What each shape does, for the report.
const SHAPE_NAMES: [&str; SHAPES] = [
    "point select",
    "select into a variable",
    "update in a transaction",
    "exec of another",
    "join",
    "identity insert",
    "if exists",
    "top … order by",
];
/// The shape that inserts into `events` and returns SCOPE_IDENTITY().
const INSERT_SHAPE: usize = 5;
/// The DDL that forks the altered databases' plans.
const ALTER: &str = "alter table customers add loyalty_tier int null";
/// Buffer pool of the engine.
const POOL_BYTES: usize = 1 << 30;
/// Size of each database's new log file.
const LOG_INITIAL_BYTES: u64 = 256 << 10;
/// Databases in which the compile reference is measured.
const COMPILE_ROUNDS: usize = 10;

#[derive(Debug, Clone, Serialize)]
pub struct PlancacheParams {
    pub databases: usize,
    pub procedures: usize,
    /// Every `altered_every`-th database is altered in the second phase.
    pub altered_every: usize,
    /// Databases in which every procedure also runs a second (warm) time, spread evenly
    /// over the databases sharing plans bound elsewhere.
    pub warm_sample_databases: usize,
    /// Sessions creating databases at once during setup.
    pub setup_threads: usize,
}

impl PlancacheParams {
    /// The scale: 4,000 databases × 200 procedures, 10 % altered.
    pub fn full() -> PlancacheParams {
        PlancacheParams {
            databases: 4000,
            procedures: 200,
            altered_every: 10,
            warm_sample_databases: 100,
            setup_threads: 2,
        }
    }

    pub fn quick() -> PlancacheParams {
        PlancacheParams {
            databases: 200,
            procedures: 200,
            altered_every: 10,
            warm_sample_databases: 20,
            ..Self::full()
        }
    }

    fn is_altered(&self, d: usize) -> bool {
        d % self.altered_every == self.altered_every / 2
    }
}

/// A finished run: the report, and what could not be measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

fn database_name(d: usize) -> String {
    format!("tenant{d}")
}

/// The tables and their rows, run in each new database.
fn schema_batch() -> String {
    let mut text = String::from(
        "create table customers (id int primary key, name varchar(40) not null, region int not null, \
             balance int not null, visits int not null default 0);
         create table products (id int primary key, name varchar(40) not null, price int not null);
         create table orders (id int identity primary key, customer_id int not null, product_id int not null, qty int not null);
         create table events (id int identity primary key, customer_id int not null, kind int not null);\n",
    );
    for id in 1..=CUSTOMERS {
        text.push_str(&format!(
            "insert into customers (id, name, region, balance) values ({id}, 'customer {id}', {}, {});\n",
            id % 3,
            id * 100
        ));
    }
    for id in 1..=PRODUCTS {
        text.push_str(&format!("insert into products values ({id}, 'product {id}', {});\n", id * 10));
    }
    for id in 1..=CUSTOMERS {
        for k in 0..ORDERS_PER_CUSTOMER {
            text.push_str(&format!("insert into orders (customer_id, product_id, qty) values ({id}, {}, 1);\n", k + 1));
        }
    }
    text
}

/// `create procedure p{p} @id int as …`: one of [`SHAPES`] shapes, each returning one
/// `int` column `v` as its last result set.
fn procedure_text(p: usize) -> String {
    let body = match p % SHAPES {
        0 => format!("select balance + {p} as v from customers where id = @id"),
        1 => format!(
            "begin declare @x int; select @x = balance from customers where id = @id; select @x * 2 + {p} as v; end"
        ),
        2 => format!(
            "begin begin tran; update customers set visits = visits + 1 where id = @id; commit; \
             select balance - {p} as v from customers where id = @id; end"
        ),
        3 => format!("begin declare @r int; exec @r = p{} @id; select @r + {p} as v; end", p - 1),
        4 => format!(
            "select count(*) + {p} as v from orders o join customers c on c.id = o.customer_id \
             join products pr on pr.id = o.product_id where c.id = @id"
        ),
        INSERT_SHAPE => format!(
            "begin insert into events (customer_id, kind) values (@id, {p}); \
             select cast(scope_identity() as int) + {p} as v; end"
        ),
        6 => format!(
            "if exists (select 1 from customers where id = @id and region = {}) select 1 + {p} as v \
             else select {p} as v",
            p % 3
        ),
        _ => format!("select top 1 id + {p} as v from products where price >= @id order by price"),
    };
    format!("create procedure p{p} @id int as {body}")
}

/// The argument procedure `p` gets in database `d`.
fn argument(d: usize, p: usize) -> i64 {
    ((d + p) as i64) % CUSTOMERS + 1
}

/// What procedure `p` returns for `id`; `identity` is the IDENTITY value the insert shape
/// gets.
fn expected(p: usize, id: i64, identity: i64) -> i64 {
    let p_ = p as i64;
    match p % SHAPES {
        0 => id * 100 + p_,
        1 => id * 200 + p_,
        2 => id * 100 - p_,
        3 => p_,
        4 => ORDERS_PER_CUSTOMER + p_,
        INSERT_SHAPE => identity + p_,
        6 => p_ + i64::from(id % 3 == p_ % 3),
        _ => 1 + p_,
    }
}

/// What a database does with the plans in a phase.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The first database of its schema in the phase: its first calls bind the plans.
    Binder,
    /// A database of a schema whose plans are bound already: its first calls share them.
    Sharer,
    /// A database whose plans were bound and used in it before (the second phase's
    /// unaltered databases): its calls must find them again.
    Unchanged,
}

/// The plan cache as `sys.dm_exec_cached_plans` shows it.
#[derive(Clone, Copy, Default)]
struct CacheFigures {
    /// Entries holding at least one statement plan ('Compiled Plan').
    compiled_entries: usize,
    /// Of those, stored procedures ('Proc').
    procedure_entries: usize,
    /// Statement plans over every entry (variants included).
    statement_plans: usize,
    bytes: usize,
    /// The fewest databases any procedure entry served.
    fewest_databases_per_procedure: usize,
}

impl CacheFigures {
    fn of(shared: &Shared) -> CacheFigures {
        let entries = shared.plans.entries();
        let procedures = || entries.iter().filter(|e| e.object_type == "Proc" && e.plans > 0);
        CacheFigures {
            compiled_entries: entries.iter().filter(|e| e.plans > 0).count(),
            procedure_entries: procedures().count(),
            statement_plans: entries.iter().map(|e| e.plans).sum(),
            bytes: shared.plans.bytes(),
            fewest_databases_per_procedure: procedures().map(|e| e.databases).min().unwrap_or(0),
        }
    }

    fn mib(&self) -> f64 {
        self.bytes as f64 / (1 << 20) as f64
    }
}

/// Call times (µs) of one kind. Every loop calls the procedures in order, so call `i` is
/// of procedure `i % procedures`.
#[derive(Default)]
struct Calls(Vec<f64>);

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

impl Calls {
    fn push(&mut self, us: f64) {
        self.0.push(us);
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn mean_us(&self) -> f64 {
        mean(&self.0)
    }

    /// Each procedure's median call, in procedure order: a call that other work on the
    /// machine preempted moves a median little.
    fn medians_us(&self, procedures: usize) -> Vec<f64> {
        (0..procedures)
            .map(|p| {
                let mut of_p: Vec<f64> = self.0.iter().skip(p).step_by(procedures).copied().collect();
                of_p.sort_by(f64::total_cmp);
                of_p.get(of_p.len() / 2).copied().unwrap_or(f64::NAN)
            })
            .collect()
    }

    /// The typical call: the mean over the procedures of each one's median call.
    fn typical_us(&self, procedures: usize) -> f64 {
        mean(&self.medians_us(procedures))
    }

    /// [`Calls::typical_us`] of each procedure shape.
    fn by_shape_us(&self, procedures: usize) -> [f64; SHAPES] {
        let medians = self.medians_us(procedures);
        std::array::from_fn(|shape| mean(&medians.iter().skip(shape).step_by(SHAPES).copied().collect::<Vec<_>>()))
    }
}

/// Per-shape typical calls of three kinds, as text: "point select 18/6/6, …".
fn shapes_text(calls: [&Calls; 3], procedures: usize) -> String {
    let [a, b, c] = calls.map(|v| v.by_shape_us(procedures));
    let shapes = SHAPE_NAMES.iter().enumerate().map(|(i, name)| format!("{name} {:.0}/{:.0}/{:.0}", a[i], b[i], c[i]));
    shapes.collect::<Vec<_>>().join(", ")
}

/// Times and cache figures of one phase.
#[derive(Default)]
struct Phase {
    /// First call of each procedure in the database that bound the phase's new plans.
    binder: Calls,
    /// First calls in databases sharing plans bound elsewhere.
    first_run: Calls,
    /// Calls in databases running plans they ran before ([`Role::Unchanged`]).
    unchanged: Calls,
    /// Second calls in a sample of the databases sharing plans.
    warm: Calls,
    /// Statement plans once the binding database's calls were done.
    plans_after_binder: usize,
    cache: CacheFigures,
    hits: u64,
    misses: u64,
}

impl Phase {
    fn hit_ratio_percent(&self) -> f64 {
        100.0 * self.hits as f64 / (self.hits + self.misses).max(1) as f64
    }

    /// A typical first call in a new database beyond a warm call (0 if not slower).
    fn net_first_run_us(&self, procedures: usize) -> f64 {
        (self.first_run.typical_us(procedures) - self.warm.typical_us(procedures)).max(0.0)
    }
}

/// The reference: every procedure's first call right after DBCC FREEPROCCACHE (parse,
/// bind, run) and its second call, in several databases.
#[derive(Default)]
struct Compiles {
    compile: Calls,
    warm: Calls,
}

impl Compiles {
    /// A typical compile beyond a warm call.
    fn net_us(&self, procedures: usize) -> f64 {
        (self.compile.typical_us(procedures) - self.warm.typical_us(procedures)).max(0.0)
    }
}

/// A session in database `d` with its pages and catalog read (untimed), as a tenant's
/// connection would find it.
fn tenant_session(shared: &Arc<Shared>, d: usize) -> Result<Session> {
    let mut session = open_session(shared, &database_name(d))?;
    execute(
        &mut session,
        "select count(*) from customers; select count(*) from products; select count(*) from orders; \
         select count(*) from events",
        "warming the database",
    )?;
    Ok(session)
}

/// Calls procedure `p` in database `d` (an RPC, as a client calls it), checks its result
/// and returns the call's time in µs. `identities[d]` counts the database's inserts.
fn call(session: &mut Session, d: usize, p: usize, identities: &mut [i64]) -> Result<f64> {
    let id = argument(d, p);
    let param = RpcParam { name: None, value: Value::Int(id), ty: SqlType::Int, output: false, table: None };
    let mut sink = LastValue::default();
    let started = Instant::now();
    session.execute_rpc(&format!("p{p}"), vec![param], &mut sink);
    let us = started.elapsed().as_secs_f64() * 1e6;
    let value = checked(sink, &format!("{}.p{p}", database_name(d)))?;
    if p % SHAPES == INSERT_SHAPE {
        identities[d] += 1;
    }
    let want = expected(p, id, identities[d]);
    if value != Some(Value::Int(want)) {
        return Err(BenchError::new(format!("{}.p{p} @id = {id} returned {value:?}, not {want}", database_name(d))));
    }
    Ok(us)
}

/// Runs every procedure once in every database (twice in the warm sample), in database
/// order, timing each call by the database's role.
fn run_phase(
    shared: &Arc<Shared>,
    p: &PlancacheParams,
    role: impl Fn(usize) -> Role,
    identities: &mut [i64],
    progress: &dyn Fn(&str),
) -> Result<Phase> {
    let mut phase = Phase::default();
    let (hits, misses) = (shared.plans.hits.load(Ordering::Relaxed), shared.plans.misses.load(Ordering::Relaxed));
    let sharers: Vec<usize> = (0..p.databases).filter(|&d| role(d) == Role::Sharer).collect();
    let step = (sharers.len() / p.warm_sample_databases.max(1)).max(1);
    let warm_sample: HashSet<usize> = sharers.into_iter().skip(step / 2).step_by(step).collect();
    let started = Instant::now();
    let mut reported = started;
    for d in 0..p.databases {
        let mut session = tenant_session(shared, d)?;
        let role = role(d);
        for proc in 0..p.procedures {
            let us = call(&mut session, d, proc, identities)?;
            match role {
                Role::Binder => phase.binder.push(us),
                Role::Sharer => phase.first_run.push(us),
                Role::Unchanged => phase.unchanged.push(us),
            }
        }
        if role == Role::Binder {
            phase.plans_after_binder = CacheFigures::of(shared).statement_plans;
        }
        if warm_sample.contains(&d) {
            for proc in 0..p.procedures {
                phase.warm.push(call(&mut session, d, proc, identities)?);
            }
        }
        if reported.elapsed() >= PROGRESS_EVERY {
            reported = Instant::now();
            progress(&format!("{d} of {} databases, {:.0} s", p.databases, started.elapsed().as_secs_f64()));
        }
    }
    phase.cache = CacheFigures::of(shared);
    phase.hits = shared.plans.hits.load(Ordering::Relaxed) - hits;
    phase.misses = shared.plans.misses.load(Ordering::Relaxed) - misses;
    Ok(phase)
}

/// [`COMPILE_ROUNDS`] times: DBCC FREEPROCCACHE, then every procedure twice in one of
/// the databases (the first ones the altered phase left unaltered, after the first).
fn compile_rounds(shared: &Arc<Shared>, p: &PlancacheParams, identities: &mut [i64]) -> Result<Compiles> {
    let mut compiles = Compiles::default();
    for d in (1..p.databases).filter(|&d| !p.is_altered(d)).take(COMPILE_ROUNDS) {
        let mut session = tenant_session(shared, d)?;
        execute(&mut session, "dbcc freeproccache", "dbcc freeproccache")?;
        for proc in 0..p.procedures {
            compiles.compile.push(call(&mut session, d, proc, identities)?);
        }
        for proc in 0..p.procedures {
            compiles.warm.push(call(&mut session, d, proc, identities)?);
        }
    }
    Ok(compiles)
}

/// Everything measured in one run.
struct Measured {
    setup_seconds: f64,
    disk_bytes_per_database: u64,
    /// The data directory's size on disk after every phase.
    disk_bytes: u64,
    shared: Phase,
    altered: Phase,
    compiles: Compiles,
}

/// The engine, the databases, both phases.
fn measure(dir: &Path, p: &PlancacheParams, progress: &dyn Fn(&str)) -> Result<Measured> {
    let mut config = EngineConfig::new(dir);
    config.pool_bytes = POOL_BYTES;
    config.log.initial_size = LOG_INITIAL_BYTES;
    config.max_open_databases = config.max_open_databases.max(p.databases + 16);
    let engine = Engine::open(config)?;
    let shared =
        tessera_sql::start_instance(engine.clone()).map_err(|e| BenchError::new(format!("tessera start: {e}")))?;
    let schema = TenantSchema { tables: schema_batch(), procedures: (0..p.procedures).map(procedure_text).collect() };

    let setup = Instant::now();
    let before = disk_usage(dir)?;
    let mut session = open_session(&shared, "master")?;
    create_tenant(&mut session, &database_name(0), &schema)?;
    let disk_bytes_per_database = disk_usage(dir)?.saturating_sub(before);
    check_free_space(dir, disk_bytes_per_database, p.databases, "`tessera bench plancache --databases N`")?;
    progress(&format!(
        "setup: {} databases × {} procedures on {} sessions ({} KiB of disk each, {} MiB in all)",
        p.databases,
        p.procedures,
        p.setup_threads,
        disk_bytes_per_database >> 10,
        (disk_bytes_per_database * p.databases as u64) >> 20
    ));
    create_tenants(&shared, &schema, &database_name, 1..p.databases, p.setup_threads, progress)?;
    let setup_seconds = setup.elapsed().as_secs_f64();

    execute(&mut session, "dbcc freeproccache", "dbcc freeproccache")?;
    let mut identities = vec![0; p.databases];
    progress("phase 'shared': every procedure once in every database");
    let role = |d: usize| if d == 0 { Role::Binder } else { Role::Sharer };
    let shared_phase = run_phase(&shared, p, role, &mut identities, progress)?;

    progress(&format!("altering one table in every {}th database", p.altered_every));
    for d in (0..p.databases).filter(|&d| p.is_altered(d)) {
        execute(&mut session, &format!("use [{}]; {ALTER}", database_name(d)), "alter table")?;
    }
    progress("phase 'altered': every procedure once more in every database");
    let first_altered = (0..p.databases).find(|&d| p.is_altered(d));
    let role = |d: usize| match (p.is_altered(d), Some(d) == first_altered) {
        (true, true) => Role::Binder,
        (true, false) => Role::Sharer,
        (false, _) => Role::Unchanged,
    };
    let altered = run_phase(&shared, p, role, &mut identities, progress)?;
    progress(&format!("compiles: DBCC FREEPROCCACHE and every procedure twice, in {COMPILE_ROUNDS} databases"));
    let compiles = compile_rounds(&shared, p, &mut identities)?;
    let disk_bytes = disk_usage(dir)?;
    session.close();
    drop(session);
    engine.shutdown()?;
    Ok(Measured { setup_seconds, disk_bytes_per_database, disk_bytes, shared: shared_phase, altered, compiles })
}

/// The rows every phase reports; `plans_before` is the statement-plan count the phase's
/// growth is measured against.
fn push_phase_rows(
    report: &mut Report,
    label: &str,
    phase: &Phase,
    plans_before: (&str, usize),
    c: &Compiles,
    procedures: usize,
) {
    let cache = &phase.cache;
    let ceiling = "ceiling (issue 19)";
    report.push(ResultRow::time(
        format!("{label}: cache entries with compiled plans (the RPC call batches included)"),
        "entries",
        cache.compiled_entries as f64,
        ceiling,
        GOAL_COMPILED_ENTRIES,
        1.0,
    ));
    report.push(ResultRow::time(
        format!("{label}: procedure entries with compiled plans (objtype 'Proc')"),
        "entries",
        cache.procedure_entries as f64,
        ceiling,
        GOAL_COMPILED_ENTRIES,
        1.0,
    ));
    report.push(ResultRow::time(
        format!("{label}: statement plans"),
        "plans",
        cache.statement_plans as f64,
        plans_before.0,
        plans_before.1 as f64,
        1.0,
    ));
    report.push(ResultRow::own(format!("{label}: plan cache memory"), "MiB", cache.mib(), GOAL_CACHE_MIB));
    report.push(ResultRow::own(
        format!("{label}: plan cache hit ratio"),
        "%",
        phase.hit_ratio_percent(),
        GOAL_HIT_RATIO_PERCENT,
    ));
    report.push(ResultRow::time(
        format!("{label}: first call in a new database (shared plan), net of a warm call"),
        "µs",
        phase.net_first_run_us(procedures),
        "compile, net of a warm call",
        c.net_us(procedures),
        1.0 / GOAL_FIRST_RUN_SHARE_OF_COMPILE,
    ));
    let compile = c.compile.typical_us(procedures);
    report.push(ResultRow::time(
        format!("{label}: first call in a new database (shared plan)"),
        "µs",
        phase.first_run.typical_us(procedures),
        "compile",
        compile,
        0.0,
    ));
    let warm = phase.warm.typical_us(procedures);
    report.push(ResultRow::time(format!("{label}: warm call"), "µs", warm, "compile", compile, 0.0));
}

/// Runs the benchmark in a fresh subdirectory of `dir` (removed afterwards).
pub fn run(dir: &Path, params: &PlancacheParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    let path = dir.join("tessera");
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path)?;
    let measured = measure(&path, params, progress);
    let _ = fs::remove_dir_all(&path);
    match measured {
        Ok(m) => {
            let (s, a, c) = (&m.shared, &m.altered, &m.compiles);
            let procedures = params.procedures;
            let shared_before = ("after the first database", s.plans_after_binder);
            push_phase_rows(&mut report, "shared", s, shared_before, c, procedures);
            let altered_before = ("after the first altered database", a.plans_after_binder);
            let label = format!("altered 1 in {}", params.altered_every);
            push_phase_rows(&mut report, &label, a, altered_before, c, procedures);
            let altered_rows = [
                (
                    "first call in the first altered database (the altered table's plans bound again)",
                    &a.binder,
                    "compile",
                    &c.compile,
                ),
                (
                    "call in an unaltered database (its plan found again)",
                    &a.unchanged,
                    "warm call, shared phase",
                    &s.warm,
                ),
            ];
            for (what, ours, peer, theirs) in altered_rows {
                let (ours, theirs) = (ours.typical_us(procedures), theirs.typical_us(procedures));
                report.push(ResultRow::time(format!("altered: {what}"), "µs", ours, peer, theirs, 0.0));
            }
            report.note(format!(
                "call times are typical calls: the mean over the procedures of each one's median call; compile: \
                 {:.1} µs, every procedure's first call right after DBCC FREEPROCCACHE in {COMPILE_ROUNDS} databases \
                 ({} calls; warm: {:.1} µs, the second call there); the shared phase's first database, which bound \
                 the shared plans: {:.1} µs",
                c.compile.typical_us(procedures),
                fmt_value(c.compile.len() as f64),
                c.warm.typical_us(procedures),
                s.binder.typical_us(procedures),
            ));
            report.note(format!(
                "(first − warm) ÷ (compile − warm), a first call no slower than a warm one counting 0: shared {:.3}, \
                 altered {:.3} (goal ≤ {GOAL_FIRST_RUN_SHARE_OF_COMPILE}); first ÷ compile: shared {:.3}, altered {:.3}",
                s.net_first_run_us(procedures) / c.net_us(procedures),
                a.net_first_run_us(procedures) / c.net_us(procedures),
                s.first_run.typical_us(procedures) / c.compile.typical_us(procedures),
                a.first_run.typical_us(procedures) / c.compile.typical_us(procedures),
            ));
            report.note(format!(
                "plain means of all calls, µs: compile {:.1}, warm {:.1}; shared phase: first {:.1}, warm {:.1}; \
                 altered phase: first {:.1}, unaltered {:.1}, warm {:.1}",
                c.compile.mean_us(),
                c.warm.mean_us(),
                s.first_run.mean_us(),
                s.warm.mean_us(),
                a.first_run.mean_us(),
                a.unchanged.mean_us(),
                a.warm.mean_us(),
            ));
            report.note(format!(
                "by shape, compile/first/warm µs: {}",
                shapes_text([&c.compile, &s.first_run, &s.warm], procedures)
            ));
            report.note(format!(
                "altered phase by shape, rebind in the first altered database/first in the others/unaltered µs: {}",
                shapes_text([&a.binder, &a.first_run, &a.unchanged], procedures)
            ));
            report.note(format!(
                "statement plans: {} after the shared phase, {} after the altered one ({:.2}×); \
                 every procedure entry served {} databases at least (shared phase), {} (altered)",
                s.cache.statement_plans,
                a.cache.statement_plans,
                a.cache.statement_plans as f64 / s.cache.statement_plans.max(1) as f64,
                s.cache.fewest_databases_per_procedure,
                a.cache.fewest_databases_per_procedure,
            ));
            report.note(format!(
                "calls: {} first calls sharing and {} warm (shared phase); {} first calls sharing, {} in unaltered \
                 databases and {} warm (altered phase)",
                fmt_value(s.first_run.len() as f64),
                fmt_value(s.warm.len() as f64),
                fmt_value(a.first_run.len() as f64),
                fmt_value(a.unchanged.len() as f64),
                fmt_value(a.warm.len() as f64),
            ));
            report.note(format!(
                "setup (not a metric): {:.0} s for {} databases × {} procedures on {} sessions; {} KiB of disk per \
                 database when created, {} MiB in the data directory at the end",
                m.setup_seconds,
                params.databases,
                params.procedures,
                params.setup_threads,
                m.disk_bytes_per_database >> 10,
                m.disk_bytes >> 20
            ));
        }
        Err(e) => failures.push(e.to_string()),
    }
    report.note(
        "no peer: the goals compare tessera with its own compile (a procedure's first call after DBCC \
         FREEPROCCACHE: parse, bind, run); counts are compared with the issue's ceiling (ratio = ceiling ÷ ours)",
    );
    report.note(
        "calls are RPCs (Session::execute_rpc, one int parameter), as a TDS client calls a procedure, each checked \
         against the expected value; a tenant's connection is a new Session in its database that first reads its four \
         tables (untimed), so first-call times hold no page reads; the databases run DELAYED_DURABILITY = FORCED, so \
         no call waits for fdatasync",
    );
    for f in &failures {
        report.note(format!("not measured: {f}"));
    }
    Ok(Outcome { report, failures })
}
