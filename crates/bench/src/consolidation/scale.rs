//! `tessera bench consolidation --scale N,…` (issue 39): one server holding far more
//! databases than it has descriptors. The server runs under a low descriptor limit (soft
//! and hard, 4,096 by default) with room for 20,000 open databases; a template database
//! (a table of ten accounts and two procedures) is made, then the largest N databases as
//! `CREATE DATABASE … AS COPY OF` the template (each copy timed), listed, and touched once
//! each (a connection to each that calls a procedure), and left idle. Then, for each N, a uniform load over
//! the first N databases (a procedure that updates and reads an account) for the timed
//! seconds. Reported per N: throughput in all and per database, p50/p99 latency, server
//! RSS, databases open, disk per database, and the descriptor cache's hits and misses
//! (from the server's Prometheus metrics). Before all that, a second template of
//! [`LARGE_TABLES`] tables (each with a primary key, an index, a row and a procedure) is
//! copied [`LARGE_COPIES`] times one at a time, then dropped with its copies: the copy's time
//! against the template's object count.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{BenchError, Result};
use crate::pointselect::PASSWORD;
use crate::report::{fmt_value, Report, ResultRow};
use crate::tdsload::{self, quantile_ms, LoadSpec, Stop};
use crate::tenants::disk_usage;

use super::tessera::{free_port, Instance, InstanceSpec};
use super::ConsolidationParams;

/// The template every database is a copy of.
const TEMPLATE: &str = "tpl";
/// An empty database made beside the copies: the disk an empty one takes at rest.
const EMPTY: &str = "empty_probe";
/// Accounts in each database.
const ACCOUNTS: usize = 10;
/// Connections that create the copies after the first [`TIMED_COPIES`], and then touch
/// every database once (the largest size must be a multiple of it: each does the same
/// share).
const SETUP_CONNECTIONS: usize = 4;
/// Copies made one at a time on one connection first: their latencies are the copy's
/// (with more connections, copies of one template wait for each other).
const TIMED_COPIES: usize = 500;
/// The template with many objects, and its tables (each with a primary key, an index, a
/// row and a procedure that reads it).
const LARGE_TEMPLATE: &str = "tpl_large";
const LARGE_TABLES: usize = 100;
/// Copies of the large template, one at a time (then dropped).
const LARGE_COPIES: usize = 50;
/// Goal: a copy of the template in at most this (ms, median).
pub const GOAL_COPY_MS: f64 = 10.0;
/// Goal: an empty database's files on disk (KiB).
pub const GOAL_EMPTY_DATABASE_KIB: f64 = 64.0;
/// Goal: an open idle database's memory outside the buffer pool (KiB).
pub const GOAL_IDLE_OUTSIDE_POOL_KIB: f64 = 16.0;

/// What the scale run is asked to do.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScaleParams {
    /// Databases in use, ascending; the largest is how many are made.
    pub sizes: Vec<usize>,
    /// The server's descriptor limit (soft and hard).
    pub descriptors: u64,
    /// Databases open at once at most (`max_open_databases`).
    pub max_open: usize,
}

impl ScaleParams {
    /// The issue's: 500, 4,000, 20,000 and 100,000 databases, 20,000 open at once under
    /// 4,096 descriptors.
    pub fn full() -> ScaleParams {
        ScaleParams { sizes: vec![500, 4_000, 20_000, 100_000], descriptors: 4_096, max_open: 20_000 }
    }
}

/// One N's figures.
#[derive(Debug, Clone)]
struct Point {
    size: usize,
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    rss: u64,
    open: i64,
    hits: f64,
    misses: f64,
    evictions: f64,
}

/// The server's `/metrics`, each sample by its full name (labels included).
fn scrape(port: u16) -> Result<HashMap<String, f64>> {
    let text = crate::observed::scrape(std::net::SocketAddr::from(([127, 0, 0, 1], port)))?;
    Ok(text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect())
}

/// Runs `batches` once each over `connections` connections (`batches.len()` must be a
/// multiple of it); the run's figures, an error if any batch failed.
pub(crate) fn each_once(
    port: u16,
    batches: &[String],
    connections: usize,
    rows: Option<u64>,
    what: &str,
) -> Result<tdsload::LoadRun> {
    let texts: Vec<&str> = batches.iter().map(String::as_str).collect();
    let run = tdsload::run(&LoadSpec {
        port,
        user: "sa",
        password: PASSWORD,
        database: "master",
        batches: &texts,
        connections,
        stop: Stop::Queries((batches.len() / connections) as u64),
        expect_rows: rows,
        record_latencies: true,
        rate: None,
    })?;
    match run.first_error {
        Some(e) => Err(BenchError::new(format!("{what}: {e}"))),
        None => Ok(run),
    }
}

/// Makes the large template, copies it [`LARGE_COPIES`] times one at a time and drops
/// it and the copies: the template's objects in `sys.objects` and `sys.indexes`, and each
/// copy's latency (µs).
fn copy_large_template(server: &Instance) -> Result<(i64, Vec<u32>)> {
    let mut batches = vec![format!("create database {LARGE_TEMPLATE}")];
    batches.extend((0..LARGE_TABLES).map(|t| {
        format!(
            "use {LARGE_TEMPLATE}; create table t{t} (id int primary key, v int not null, note varchar(40)); \
             create index v{t} on t{t} (v); insert t{t} values (1, 1, 'one'); \
             exec('create procedure p{t} @id int as select v from t{t} where id = @id')"
        )
    }));
    batches.push(format!(
        "use {LARGE_TEMPLATE}; select (select count(*) from sys.objects where type in ('U', 'P', 'PK')) \
         + (select count(*) from sys.indexes where name like 'v%'), 0"
    ));
    let objects = server.admin(&batches)?.first().map_or(0, |r| r.0);
    let name = |i: usize| format!("l{i:06}");
    let copies: Vec<String> =
        (0..LARGE_COPIES).map(|i| format!("create database [{}] as copy of {LARGE_TEMPLATE}", name(i))).collect();
    let run = each_once(server.port, &copies, 1, None, "copying the large template")?;
    let mut drops: Vec<String> = (0..LARGE_COPIES).map(|i| format!("drop database [{}]", name(i))).collect();
    drops.push(format!("drop database {LARGE_TEMPLATE}"));
    each_once(server.port, &drops, 1, None, "dropping the large template and its copies")?;
    Ok((objects, run.latencies_us))
}

/// Touches each of `databases` once as its tenant's application would: a connection that
/// logs in to it and calls `dbo.touch` (the same text in every database, so the plan
/// cache holds one batch, not one per database), `SETUP_CONNECTIONS` databases at a time.
fn touch_each(port: u16, databases: &[String]) -> Result<()> {
    let share = databases.len().div_ceil(SETUP_CONNECTIONS).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = databases
            .chunks(share)
            .map(|chunk| {
                scope.spawn(move || {
                    for database in chunk {
                        let run = tdsload::run(&LoadSpec {
                            port,
                            user: "sa",
                            password: PASSWORD,
                            database,
                            batches: &["exec dbo.touch 1"],
                            connections: 1,
                            stop: Stop::Queries(1),
                            expect_rows: Some(1),
                            record_latencies: false,
                            rate: None,
                        })?;
                        if let Some(e) = run.first_error {
                            return Err(BenchError::new(format!("touching {database}: {e}")));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| w.join().map_err(|_| BenchError::new("a touching thread panicked"))?)
    })
}

fn name(i: usize) -> String {
    format!("s{i:06}")
}

/// The scale run in `dir` (see the module documentation); its rows go to `report`.
pub fn run(
    dir: &Path,
    p: &ConsolidationParams,
    s: &ScaleParams,
    report: &mut Report,
    progress: &dyn Fn(&str),
) -> Result<()> {
    let most = *s.sizes.iter().max().ok_or_else(|| BenchError::new("--scale needs at least one size"))?;
    if most % SETUP_CONNECTIONS != 0 {
        return Err(BenchError::new(format!("the largest --scale size must be a multiple of {SETUP_CONNECTIONS}")));
    }
    let metrics_port = free_port()?;
    let spec = InstanceSpec {
        binary: p.binary.clone(),
        dir: dir.to_path_buf(),
        memory_mb: p.memory_mb,
        max_open: s.max_open,
        affinity_mask: None,
        metrics_port: Some(metrics_port),
        descriptor_limit: Some(s.descriptors),
    };
    let server = Instance::start(&spec, Vec::new())?;
    let accounts: Vec<String> = (1..=ACCOUNTS).map(|a| format!("({a}, 100, 'account {a}')")).collect();
    server.admin(&[
        format!("create database {TEMPLATE}"),
        format!(
            "use {TEMPLATE}; create table accounts (id int primary key, balance int not null, note varchar(40)); \
             insert accounts values {}",
            accounts.join(", ")
        ),
        format!(
            "use {TEMPLATE}; exec('create procedure touch @id int as select balance from accounts where id = @id')"
        ),
        format!(
            "use {TEMPLATE}; exec('create procedure move @id int as begin set nocount on; \
             update accounts set balance = balance + 1 where id = @id; \
             select balance from accounts where id = @id; end')"
        ),
    ])?;
    progress(&format!("scale: {LARGE_COPIES} copies of a template of {LARGE_TABLES} tables"));
    let (large_objects, mut large_copy_us) = copy_large_template(&server)?;
    // The pool's memory is its committed frames (those it commits ahead of demand too).
    let pool_bytes = |m: &HashMap<String, f64>| m.get("tessera_buffer_pool_committed_bytes").copied().unwrap_or(0.0);
    let rss_before = server.rss();
    let pool_before = pool_bytes(&scrape(metrics_port)?);
    let disk_before = disk_usage(&server.data_dir())?;

    progress(&format!("scale: {most} copies of the template"));
    let copies: Vec<String> =
        (0..most).map(|i| format!("create database [{}] as copy of {TEMPLATE}", name(i))).collect();
    let timed = TIMED_COPIES.min(most).next_multiple_of(SETUP_CONNECTIONS).min(most);
    let one_by_one = each_once(server.port, &copies[..timed], 1, None, "copying the template")?;
    let mut copy_us = one_by_one.latencies_us.clone();
    let made = match &copies[timed..] {
        [] => one_by_one,
        rest => each_once(server.port, rest, SETUP_CONNECTIONS, None, "copying the template")?,
    };
    let disk = disk_usage(&server.data_dir())?.saturating_sub(disk_before);
    // An empty database beside them, for the goal's own figure (dropped after the restart).
    server.admin(&[format!("create database {EMPTY}"), "select 0, 0".to_string()])?;
    // Stopped, each copy is closed and has cut what its claims grew and never used: the
    // disk an idle database costs. Then every database is opened again by its first use.
    let data_dir = server.data_dir();
    server.stop()?;
    let empty_at_rest = [format!("{EMPTY}.mdf"), format!("{EMPTY}_log.ldf")]
        .iter()
        .map(|f| std::fs::metadata(data_dir.join(f)).map(|m| std::os::unix::fs::MetadataExt::blocks(&m) * 512))
        .sum::<std::io::Result<u64>>()?;
    let disk_at_rest = disk_usage(&data_dir)?.saturating_sub(disk_before + empty_at_rest);
    let server = Instance::start(&spec, Vec::new())?;
    server.admin(&[format!("drop database {EMPTY}"), "select 0, 0".to_string()])?;

    progress("scale: listing them");
    let listed_at = Instant::now();
    let listed = server.admin(&["select count(*), 0 from sys.databases".to_string()])?;
    let list_ms = listed_at.elapsed().as_secs_f64() * 1000.0;
    let listed = listed.first().map_or(0, |r| r.0);

    progress(&format!("scale: touching each of {most} once"));
    let touched_at = Instant::now();
    touch_each(server.port, &(0..most).map(name).collect::<Vec<_>>())?;
    let touch_seconds = touched_at.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(2));
    let idle_rss = server.rss();
    let idle_pool = pool_bytes(&scrape(metrics_port)?);
    let idle_open = open_databases(&server)?;
    // What each open idle database holds outside the buffer pool's pages.
    let outside_pool_kib = (idle_rss.saturating_sub(rss_before) as f64 - (idle_pool - pool_before).max(0.0))
        / 1024.0
        / idle_open.max(1) as f64;

    let mut points = Vec::new();
    for &size in &s.sizes {
        progress(&format!("scale: {} s of load over {size} databases", p.seconds));
        // A fixed random order of (database, account) pairs, uniform over the first `size`.
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ size as u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let calls: Vec<String> = (0..size.max(20_000))
            .map(|_| format!("exec [{}].dbo.move {}", name(next() as usize % size), next() as usize % ACCOUNTS + 1))
            .collect();
        let texts: Vec<&str> = calls.iter().map(String::as_str).collect();
        let before = scrape(metrics_port)?;
        let run = tdsload::run(&LoadSpec {
            port: server.port,
            user: "sa",
            password: PASSWORD,
            database: "master",
            batches: &texts,
            connections: p.connections,
            stop: Stop::After(Duration::from_secs(p.seconds)),
            expect_rows: Some(1),
            record_latencies: true,
            rate: None,
        })?;
        if let Some(e) = run.first_error {
            return Err(BenchError::new(format!("load over {size} databases: {e}")));
        }
        let after = scrape(metrics_port)?;
        let moved = |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);
        let mut lat = run.latencies_us.clone();
        points.push(Point {
            size,
            per_second: run.queries as f64 / run.seconds.max(1e-9),
            p50_ms: quantile_ms(&mut lat, 0.50),
            p99_ms: quantile_ms(&mut lat, 0.99),
            rss: server.rss(),
            open: open_databases(&server)?,
            hits: moved("tessera_file_descriptor_hits_total"),
            misses: moved("tessera_file_descriptor_misses_total"),
            evictions: moved("tessera_file_descriptor_evictions_total"),
        });
    }
    let figures = scrape(metrics_port)?;
    let budget = super::tessera::descriptor_budget(&server);
    server.stop()?;

    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    let per_db_kib = |bytes: u64| bytes as f64 / 1024.0 / most as f64;
    report.push(ResultRow::own(
        format!("scale: copy of the template (CREATE DATABASE … AS COPY OF), median of {timed} one at a time"),
        "ms",
        quantile_ms(&mut copy_us, 0.50),
        GOAL_COPY_MS,
    ));
    report.push(ResultRow::own(
        format!(
            "scale: copy of a template of {LARGE_TABLES} tables, {large_objects} objects (AS COPY OF), median of \
             {LARGE_COPIES} one at a time"
        ),
        "ms",
        quantile_ms(&mut large_copy_us, 0.50),
        GOAL_COPY_MS,
    ));
    report.note(format!(
        "scale: the template of {LARGE_TABLES} tables (each a primary key, an index, a row and a procedure; \
         {large_objects} objects): copies p99 {} ms",
        fmt_value(quantile_ms(&mut large_copy_us, 0.99))
    ));
    report.push(ResultRow::own(
        format!("scale: memory per open idle database outside the buffer pool, {idle_open} open"),
        "KiB",
        outside_pool_kib,
        GOAL_IDLE_OUTSIDE_POOL_KIB,
    ));
    report.push(ResultRow::own(
        "scale: disk of an empty database at rest (server stopped), data and log allocated",
        "KiB",
        empty_at_rest as f64 / 1024.0,
        GOAL_EMPTY_DATABASE_KIB,
    ));

    report.push(ResultRow::own(
        format!("scale: databases listed of {most}"),
        "databases",
        listed as f64,
        most as f64 + 4.0,
    ));
    report.push(ResultRow::own(
        format!("scale: databases open after touching {most} (max_open_databases {})", s.max_open),
        "databases",
        idle_open as f64,
        most.min(s.max_open) as f64,
    ));
    report.note(format!(
        "scale: the first {timed} copies one at a time (p99 {} ms), the rest on {SETUP_CONNECTIONS} connections in {} s \
         ({} per second); disk {} MiB while they were open ({} KiB per database), {} MiB once closed ({} KiB per \
         database); listed in {} \
         ms (after a restart); touched each once in {} s; idle server RSS {} MiB ({} MiB before the copies), \
         {idle_open} databases open, {} KiB per open database beyond the empty server, buffer pool pages included",
        fmt_value(quantile_ms(&mut copy_us, 0.99)),
        fmt_value(made.seconds),
        fmt_value(most.saturating_sub(timed) as f64 / made.seconds.max(1e-9)),
        fmt_value(mib(disk)),
        fmt_value(per_db_kib(disk)),
        fmt_value(mib(disk_at_rest)),
        fmt_value(per_db_kib(disk_at_rest)),
        fmt_value(list_ms),
        fmt_value(touch_seconds),
        fmt_value(mib(idle_rss)),
        fmt_value(mib(rss_before)),
        fmt_value(idle_rss.saturating_sub(rss_before) as f64 / 1024.0 / idle_open.max(1) as f64),
    ));
    for pt in &points {
        let per_db_minute = pt.per_second * 60.0 / pt.size as f64;
        report.push(ResultRow::own(
            format!("scale: {} databases in use, transactions per second", pt.size),
            "tx/s",
            pt.per_second,
            0.0,
        ));
        let lookups = pt.hits + pt.misses;
        report.note(format!(
            "scale, {} in use: {} tx/s ({} per database per minute), p50 {} ms, p99 {} ms; RSS {} MiB, {} open; \
             descriptor cache {}% hits of {} uses, {} evictions",
            pt.size,
            fmt_value(pt.per_second),
            fmt_value(per_db_minute),
            fmt_value(pt.p50_ms),
            fmt_value(pt.p99_ms),
            fmt_value(mib(pt.rss)),
            pt.open,
            fmt_value(if lookups > 0.0 { 100.0 * pt.hits / lookups } else { 100.0 }),
            fmt_value(lookups),
            fmt_value(pt.evictions),
        ));
    }
    report.note(format!(
        "scale: server descriptor limit {} (soft and hard), descriptor cache capacity {}; {}",
        s.descriptors,
        figures.get("tessera_file_descriptors_capacity").copied().unwrap_or(0.0),
        budget.unwrap_or_default()
    ));
    Ok(())
}

/// Databases the server has open now (`sys.dm_tessera_databases`).
fn open_databases(server: &Instance) -> Result<i64> {
    let rows = server.admin(&["select count(*), 0 from sys.dm_tessera_databases where is_open = 1".to_string()])?;
    Ok(rows.first().map_or(0, |r| r.0))
}
