//! The dashboard: `GET /` is one self-contained page (`dashboard.html`: inline CSS and
//! JS, no other asset) that reads `GET /api/summary` every second and shows throughput,
//! request latency percentiles, buffer pool and extension hit ratios, memory, the busiest
//! databases, blocking chains and the top waits. The summary is a [`Snapshot`] as JSON
//! with the server's clock (counters since start; the page computes rates and
//! percentiles from two summaries, over the server's time between them).

use serde_json::{json, Value};

use super::collect::Snapshot;

/// The page.
pub(super) const PAGE: &str = include_str!("dashboard.html");

/// The waits the summary lists, the longest first.
const TOP_WAITS: usize = 10;

fn histogram(h: &tessera_io::stats::HistogramSnapshot) -> Value {
    json!({ "bounds_us": h.bounds_us.to_vec(), "counts": h.counts.to_vec(), "count": h.count, "sum_us": h.sum_us })
}

/// The snapshot as the page reads it.
pub(super) fn summary(s: &Snapshot) -> String {
    let mut waits: Vec<_> = s.waits.iter().filter(|(_, w)| w.waits > 0).collect();
    waits.sort_by(|(_, a), (_, b)| b.total_us.cmp(&a.total_us).then(b.waits.cmp(&a.waits)));
    waits.truncate(TOP_WAITS);
    let ext = s.extension.unwrap_or_default();
    let page = tessera_database::PAGE_SIZE as u64;
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let summary = json!({
        "time_ms": now_ms,
        "requests": s.requests.iter().map(|(_, n)| n).sum::<u64>(),
        "request_duration": histogram(&s.request_duration),
        "committed": s.transactions.committed,
        "rolled_back": s.transactions.rolled_back,
        "log_written_bytes": s.log_written_bytes,
        "log_flush": histogram(&s.log_flush),
        "buffer_pool": {
            "hits": s.pool.hits,
            "misses": s.pool.misses,
            "resident_bytes": s.pool.resident_pages * page,
            "capacity_bytes": s.pool.capacity_pages * page,
            "extension_reads": ext.reads,
            "extension_used_bytes": ext.used * page,
            "extension_size_bytes": ext.slots * page,
        },
        "memory": {
            "target_bytes": s.memory.target_bytes,
            "clerks": s.clerks.iter().map(|(k, n)| json!({ "clerk": k, "bytes": n })).collect::<Vec<_>>(),
        },
        "connections": s.connections,
        "pending_logins": s.pending_logins,
        "sessions": s.sessions,
        "running": s.running,
        "databases": s.databases,
        "open_databases": s.open_databases,
        "busiest": s.busiest.iter().map(|r| json!({
            "database": r.sample.name,
            "committed": r.sample.transactions.committed,
            "rolled_back": r.sample.transactions.rolled_back,
            "log_bytes": r.sample.log_bytes,
            "activity": r.activity,
        })).collect::<Vec<_>>(),
        "blocking": s.blocking.iter().map(|b| json!({
            "session": b.session,
            "blocker": b.blocker,
            "wait_type": b.wait_type,
            "wait_ms": b.waited.as_millis() as u64,
            "database": b.database,
            "command": b.command,
        })).collect::<Vec<_>>(),
        "waits": waits.iter().map(|(k, w)| json!({
            "wait_type": k,
            "waits": w.waits,
            "seconds": w.total_us as f64 / 1e6,
        })).collect::<Vec<_>>(),
    });
    summary.to_string()
}
