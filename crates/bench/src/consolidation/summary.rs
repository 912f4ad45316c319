//! The consolidation report: goal rows at the goal's N, a table of every point as notes,
//! and the throughput-versus-databases curves.

use super::schema::{Skew, HOT_SHARE, HOT_TRANSACTIONS, SHAPE_NAMES};
use super::{ConsolidationParams, Point, Side, SideRun, GOAL_PER_DATABASE_RETENTION_PERCENT, GOAL_VS_POSTGRES};
use crate::report::{fmt_value, Report, ResultRow, Series};

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// The best PostgreSQL point at size index `k` and skew index `s`, and its variant.
fn best_postgres(sides: &[SideRun], k: usize, s: usize) -> Option<(&'static str, Point)> {
    sides
        .iter()
        .filter(|r| matches!(r.side, Side::PgDatabases | Side::PgSchemas))
        .filter_map(|r| r.points.get(k).and_then(|row| row.get(s)).map(|p| (r.side.label(), *p)))
        .max_by(|a, b| a.1.sample.per_minute().total_cmp(&b.1.sample.per_minute()))
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), fmt_value)
}

/// One line of the per-point table.
fn point_line(side: Side, n: usize, skew: Skew, offered_per_minute: f64, p: &Point) -> String {
    let s = &p.sample;
    format!(
        "{} | {n} | {} | offered {} tx/min | {} tx/min | {} per db | p50 {} ms | p99 {} ms | server {} µs/tx | client {} µs/tx | \
         plans {} | plan cache {} MiB | RSS {} MiB | open dbs {}",
        side.label(),
        skew.label(),
        fmt_value(offered_per_minute),
        fmt_value(s.per_minute()),
        fmt_value(s.per_minute() / n as f64),
        fmt_value(s.p50_ms),
        fmt_value(s.p99_ms),
        fmt_value(s.cpu_us(s.server_cpu_seconds)),
        fmt_value(s.cpu_us(s.client_cpu_seconds)),
        opt(p.compiled_plans.map(|v| v as f64)),
        opt(p.plan_cache_bytes.map(mib)),
        fmt_value(mib(p.rss_bytes)),
        opt(p.open_databases.map(|v| v as f64)),
    )
}

pub(super) fn push(report: &mut Report, p: &ConsolidationParams, sides: &[SideRun]) {
    let goal_k = p.sizes.iter().position(|&n| n == p.goal_size);
    for run in sides.iter().filter(|r| matches!(r.side, Side::OneInstance | Side::TwoInstances)) {
        for (s, skew) in p.skews.iter().enumerate() {
            for (k, &n) in p.sizes.iter().enumerate() {
                let Some(ours) = run.points.get(k).and_then(|row| row.get(s)) else { continue };
                let at_goal = Some(k) == goal_k;
                if let Some((peer, theirs)) = best_postgres(sides, k, s) {
                    report.push(ResultRow::rate(
                        format!(
                            "{}, {n} databases, {}: throughput (vs the better variant: {peer})",
                            run.side.label(),
                            skew.label()
                        ),
                        "transactions/min",
                        ours.sample.per_minute(),
                        "postgresql",
                        theirs.sample.per_minute(),
                        if at_goal { GOAL_VS_POSTGRES } else { 0.0 },
                    ));
                }
                let base = run.points.first().and_then(|row| row.get(s));
                if let (true, Some(base)) = (k > 0, base) {
                    let per_db = |pt: &Point, n: usize| pt.sample.per_minute() / n as f64;
                    report.push(ResultRow::own(
                        format!(
                            "{}, {}: per-database throughput at {n} databases ÷ at {}",
                            run.side.label(),
                            skew.label(),
                            p.sizes[0]
                        ),
                        "%",
                        100.0 * per_db(ours, n) / per_db(base, p.sizes[0]),
                        if at_goal { GOAL_PER_DATABASE_RETENTION_PERCENT } else { 0.0 },
                    ));
                }
            }
        }
    }
    for run in sides {
        for (k, &n) in p.sizes.iter().enumerate() {
            for (s, skew) in p.skews.iter().enumerate() {
                if let Some(pt) = run.points.get(k).and_then(|row| row.get(s)) {
                    report.note(point_line(run.side, n, *skew, 60.0 * p.rate(n), pt));
                }
            }
        }
        for note in &run.notes {
            report.note(format!("{}: {note}", run.side.label()));
        }
        let cpu = |f: fn(&Point) -> f64| run.points.iter().flatten().map(f).sum::<f64>();
        let (server, client) = (cpu(|pt| pt.sample.server_cpu_seconds), cpu(|pt| pt.sample.client_cpu_seconds));
        report.note(format!(
            "{}: the clients used {:.0} % as much CPU as the server over the timed runs ({:.1} s against {:.1} s){}",
            run.side.label(),
            100.0 * client / server.max(1e-9),
            client,
            server,
            if client > 0.5 * server {
                " — the client side may be a bottleneck on this machine"
            } else {
                " — the client is not the bottleneck"
            }
        ));
    }
    for (s, skew) in p.skews.iter().enumerate() {
        for run in sides {
            let points = |f: &dyn Fn(usize, &Point) -> f64| -> Vec<(f64, f64)> {
                p.sizes
                    .iter()
                    .enumerate()
                    .filter_map(|(k, &n)| run.points.get(k).and_then(|row| row.get(s)).map(|pt| (n as f64, f(n, pt))))
                    .collect()
            };
            report.series.push(Series {
                panel: format!("throughput, {}", skew.label()),
                name: run.side.label().to_string(),
                x_label: "databases".to_string(),
                y_label: "transactions per minute".to_string(),
                points: points(&|_, pt| pt.sample.per_minute()),
            });
            report.series.push(Series {
                panel: format!("per database, {}", skew.label()),
                name: run.side.label().to_string(),
                x_label: "databases".to_string(),
                y_label: "transactions per minute per database".to_string(),
                points: points(&|n, pt| pt.sample.per_minute() / n as f64),
            });
        }
    }
    report.note(
        "table columns: side | databases | tenant choice | offered | throughput | per database | latency p50, p99 | CPU per \
         transaction of the server (PostgreSQL: postmaster, backends, PgBouncer) and of the clients | compiled plans \
         and plan-cache bytes (sys.dm_exec_cached_plans) | server RSS (PostgreSQL: every process's private pages \
         plus shared memory once) | databases with files open",
    );
    report.note(format!(
        "the load: open loop, {} transactions per minute offered per database at every size (the k-th transaction \
         due at k ÷ rate; latency from its send, so a server that falls behind shows as throughput below the offered \
         rate rather than as latency); {} clients each sending one procedure call at a time, tenant per transaction (uniform, or {:.0} % of \
         the transactions to 1/{HOT_SHARE} of the tenants), procedure uniform over 200 of {} shapes ({}); tessera: \
         EXEC by three-part name from connections in master; PostgreSQL: SELECT of the PL/pgSQL function",
        fmt_value(60.0 * p.offered_per_second_at_goal / p.goal_size.max(1) as f64),
        p.connections,
        100.0 * HOT_TRANSACTIONS,
        SHAPE_NAMES.len(),
        SHAPE_NAMES.join("; ")
    ));
    report.note(
        "durability alike: tessera's tenants run DELAYED_DURABILITY = FORCED, PostgreSQL synchronous_commit = off, so \
         no transaction waits for a log flush; tessera's tenants are created over TDS (CREATE DATABASE, then the \
         tables and the procedures through EXEC('…') in one batch, on 4 connections; setup, not measured) on \
         `tessera serve` processes of the benchmark's own, restarted before each size's runs, so the plan cache \
         starts empty and only the runs open databases; PostgreSQL's with psql scripts (CREATE DATABASE … TEMPLATE, \
         or CREATE SCHEMA and the objects), its server not restarted",
    );
    report.note(format!(
        "goals at {} databases: throughput ≥ {GOAL_VS_POSTGRES}× the better PostgreSQL variant, per-database \
         throughput ≥ {GOAL_PER_DATABASE_RETENTION_PERCENT} % of that at {} (rows at other sizes carry no goal); \
         {} s timed after {} s of warm-up per point",
        p.goal_size, p.sizes[0], p.seconds, p.warmup_seconds
    ));
}
