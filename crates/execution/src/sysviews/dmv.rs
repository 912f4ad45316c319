//! Dynamic management views: sessions and connections; the plan cache; the
//! performance counters; memory; the buffer pool and its extension.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{bit, col, datetime, int, s, Rows, ViewDef, NVARCHAR_MAX, SYSNAME};
use crate::runtime::{ExecCtx, SessionInfo};
use tessera_database::PAGE_SIZE;
use tessera_semantics::types::{SqlType::*, Value};

/// The columns of SQL Server's view that tessera keeps, in its order.
pub(super) static EXEC_SESSIONS: ViewDef<24> = ViewDef {
    schema: "sys",
    name: "dm_exec_sessions",
    columns: [
        col("session_id", SmallInt, false),
        col("login_time", DateTime, false),
        col("host_name", SYSNAME, true),
        col("program_name", SYSNAME, true),
        col("login_name", SYSNAME, false),
        col("status", NVarChar(30), false),
        col("is_user_process", Bit, false),
        col("text_size", Int, false),
        col("language", SYSNAME, true),
        col("date_format", NVarChar(3), true),
        col("date_first", SmallInt, false),
        col("quoted_identifier", Bit, false),
        col("arithabort", Bit, false),
        col("ansi_null_dflt_on", Bit, false),
        col("ansi_warnings", Bit, false),
        col("ansi_padding", Bit, false),
        col("ansi_nulls", Bit, false),
        col("concat_null_yields_null", Bit, false),
        col("transaction_isolation_level", SmallInt, false),
        col("lock_timeout", Int, false),
        col("original_login_name", SYSNAME, false),
        col("group_id", Int, false),
        col("database_id", SmallInt, false),
        col("open_transaction_count", Int, false),
    ],
    rows: exec_sessions,
};

fn exec_sessions(ctx: &ExecCtx, _db: &str) -> Rows<24> {
    Ok(sessions(ctx)
        .into_iter()
        .map(|info| {
            let now = info.activity.lock().clone();
            let set = &now.settings;
            [
                int(i64::from(info.spid)),
                datetime(info.login_time),
                s(&info.host_name),
                s(&info.program_name),
                s(&info.login),
                s(if now.running { "running" } else { "sleeping" }),
                bit(true),
                int(set.text_size),
                s(&set.language),
                s(&set.date_format),
                int(set.date_first),
                bit(set.quoted_identifier),
                bit(set.arithabort),
                bit(set.ansi_null_dflt_on),
                bit(set.ansi_warnings),
                bit(set.ansi_padding),
                bit(set.ansi_nulls),
                bit(set.concat_null_yields_null),
                int(i64::from(set.isolation_level)),
                int(set.lock_timeout),
                s(&info.login),
                int(i64::from(info.group_id)),
                int(database_id(ctx, &now.database)),
                int(i64::from(now.open_transactions)),
            ]
        })
        .collect())
}

pub(super) static EXEC_CONNECTIONS: ViewDef<13> = ViewDef {
    schema: "sys",
    name: "dm_exec_connections",
    columns: [
        col("session_id", Int, true),
        col("most_recent_session_id", Int, true),
        col("connect_time", DateTime, false),
        col("net_transport", NVarChar(40), false),
        col("protocol_type", NVarChar(40), true),
        col("protocol_version", Int, true),
        col("encrypt_option", NVarChar(40), false),
        col("auth_scheme", NVarChar(40), false),
        col("net_packet_size", Int, true),
        col("client_net_address", VarChar(48), true),
        col("client_tcp_port", Int, true),
        col("local_net_address", VarChar(48), true),
        col("local_tcp_port", Int, true),
    ],
    rows: exec_connections,
};

/// The sessions with a TDS connection. Unlike sys.dm_exec_sessions (whose rows shrink to
/// the caller's own), it needs VIEW SERVER STATE: without it, 300 and 297.
fn exec_connections(ctx: &ExecCtx, _db: &str) -> Rows<13> {
    super::server_state(ctx)?;
    Ok(sessions(ctx)
        .into_iter()
        .filter_map(|info| {
            let c = info.connection?;
            Some([
                int(i64::from(info.spid)),
                int(i64::from(info.spid)),
                datetime(info.login_time),
                s("TCP"),
                s("TSQL"),
                int(i64::from(c.protocol_version)),
                s(if c.encrypted { "TRUE" } else { "FALSE" }),
                s("SQL"),
                int(i64::from(c.packet_size)),
                s(&c.client_address),
                int(i64::from(c.client_port)),
                s(&c.local_address),
                int(i64::from(c.local_port)),
            ])
        })
        .collect())
}

/// The sessions, by session id: every one with VIEW SERVER STATE, else only the caller's.
pub(super) fn sessions(ctx: &ExecCtx) -> Vec<SessionInfo> {
    let everyone = ctx.shared.holds_server(ctx.session, "VIEW SERVER STATE");
    let me = ctx.session.spid;
    let mut sessions: Vec<_> =
        ctx.shared.sessions.lock().values().filter(|i| everyone || i.spid == me).cloned().collect();
    sessions.sort_by_key(|i| i.spid);
    sessions
}

/// The id of a session's database (0 if it is gone).
pub(super) fn database_id(ctx: &ExecCtx, database: &str) -> i64 {
    if ctx.shared.engine.exists(database) {
        ctx.shared.database(database).map_or(0, |d| i64::from(d.id()))
    } else {
        0
    }
}

/// `database_count` (how many databases ran the entry's plans) is tessera's own column.
pub(super) static EXEC_CACHED_PLANS: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "dm_exec_cached_plans",
    columns: [
        col("bucketid", Int, false),
        col("refcounts", Int, false),
        col("usecounts", Int, false),
        col("size_in_bytes", Int, false),
        col("cacheobjtype", NVarChar(50), false),
        col("objtype", NVarChar(20), false),
        col("plan_handle", VarBinary(64), false),
        col("text", NVARCHAR_MAX, true),
        col("database_count", Int, false),
    ],
    rows: exec_cached_plans,
};

/// One row per cached batch: a "Compiled Plan" once a statement of it is bound, a
/// "Parse Tree" before.
fn exec_cached_plans(ctx: &ExecCtx, _db: &str) -> Rows<9> {
    super::server_state(ctx)?;
    Ok(ctx
        .shared
        .plans
        .entries()
        .into_iter()
        .map(|e| {
            [
                int((e.handle % 40009) as i64),
                int(1),
                int(e.use_count as i64),
                int(e.size as i64),
                s(if e.plans > 0 { "Compiled Plan" } else { "Parse Tree" }),
                s(e.object_type),
                Value::Binary(Arc::from(&e.handle.to_be_bytes()[..])),
                s(&e.text),
                int(e.databases as i64),
            ]
        })
        .collect())
}

pub(super) static OS_PERFORMANCE_COUNTERS: ViewDef<5> = ViewDef {
    schema: "sys",
    name: "dm_os_performance_counters",
    columns: [
        col("object_name", NChar(128), false),
        col("counter_name", NChar(128), false),
        col("instance_name", NChar(128), true),
        col("cntr_value", BigInt, false),
        col("cntr_type", Int, false),
    ],
    rows: os_performance_counters,
};

/// The plan cache's, the buffer manager's (and its extension's), the memory manager's
/// and each open database's log counters.
fn os_performance_counters(ctx: &ExecCtx, _db: &str) -> Rows<5> {
    super::server_state(ctx)?;
    let p = &ctx.shared.plans;
    let hits = p.hits.load(Ordering::Relaxed) as i64;
    let misses = p.misses.load(Ordering::Relaxed) as i64;
    let counter = |object: &str, name: &str, instance: &str, value: i64, kind: i64| {
        [s(object), s(name), s(instance), int(value), int(kind)]
    };
    let mut rows = vec![
        counter("SQLServer:Plan Cache", "Cache Hit Ratio", "SQL Plans", hits, 537003264),
        counter("SQLServer:Plan Cache", "Cache Hit Ratio Base", "SQL Plans", hits + misses, 1073939712),
        counter("SQLServer:Plan Cache", "Cache Object Counts", "SQL Plans", p.len() as i64, 65792),
        counter("SQLServer:Plan Cache", "Cache Pages", "SQL Plans", (p.bytes() / 8192) as i64, 65792),
        counter("SQLServer:SQL Statistics", "SQL Compilations/sec", "", misses, 272696576),
        counter("SQLServer:SQL Statistics", "Batch Requests/sec", "", hits + misses, 272696576),
    ];
    let engine = &ctx.shared.engine;
    let pool = engine.stats().pool;
    let memory = engine.memory_status();
    let pages = |n: u64| n as i64;
    let kb = |bytes: u64| (bytes >> 10) as i64;
    let buffer = "SQLServer:Buffer Manager";
    rows.extend([
        counter(buffer, "Buffer cache hit ratio", "", pages(pool.hits), 537003264),
        counter(buffer, "Buffer cache hit ratio base", "", pages(pool.hits + pool.misses), 1073939712),
        counter(buffer, "Page life expectancy", "", engine.page_life_expectancy() as i64, 65792),
        counter(buffer, "Database pages", "", pages(pool.resident_pages), 65792),
        counter(buffer, "Target pages", "", pages(pool.capacity_pages), 65792),
        counter(buffer, "Page reads/sec", "", pages(pool.reads), 272696576),
        counter(buffer, "Readahead pages/sec", "", pages(pool.read_ahead_pages), 272696576),
        counter(buffer, "Page writes/sec", "", pages(pool.writes), 272696576),
        counter(buffer, "Lazy writes/sec", "", pages(pool.evictions), 272696576),
    ]);
    let ext = engine.pool().extension().map(|e| e.stats()).unwrap_or_default();
    rows.extend([
        counter(buffer, "Extension page reads/sec", "", pages(ext.reads), 272696576),
        counter(buffer, "Extension page writes/sec", "", pages(ext.writes), 272696576),
        counter(buffer, "Extension page evictions/sec", "", pages(ext.evictions), 272696576),
        counter(buffer, "Extension allocated pages", "", pages(ext.used), 65792),
        counter(buffer, "Extension free pages", "", pages(ext.slots - ext.used), 65792),
        counter(
            buffer,
            "Extension in use as percentage",
            "",
            (100 * ext.used).checked_div(ext.slots).unwrap_or(0) as i64,
            65792,
        ),
        counter(buffer, "Extension outstanding IO counter", "", pages(ext.queued), 65792),
    ]);
    let manager = "SQLServer:Memory Manager";
    let log_buffers = engine.log_buffer_stats();
    let log_bytes = (log_buffers.lent_bytes + log_buffers.spare_bytes) as u64;
    let total = pool.resident_pages * tessera_database::PAGE_SIZE as u64 + log_bytes;
    rows.extend([
        counter(manager, "Target Server Memory (KB)", "", kb(memory.target_bytes), 65792),
        counter(manager, "Total Server Memory (KB)", "", kb(total), 65792),
        counter(manager, "Free Memory (KB)", "", kb(memory.target_bytes.saturating_sub(total)), 65792),
        counter(manager, "Memory pressure events", "", memory.pressure_events as i64, 65792),
        counter(manager, "Log Pool Memory (KB)", "", kb(log_bytes), 65792),
    ]);
    // The log each open database has written since it opened (one row per database, as
    // SQL Server has; the closed ones have none).
    for d in engine.entries() {
        if let Some(db) = engine.database_if_open(&d.name) {
            let flushed = i64::try_from(db.log_bytes_written()).unwrap_or(i64::MAX);
            rows.push(counter("SQLServer:Databases", "Log Bytes Flushed/sec", &d.name, flushed, 272696576));
        }
    }
    Ok(rows)
}

pub(super) static OS_SYS_MEMORY: ViewDef<10> = ViewDef {
    schema: "sys",
    name: "dm_os_sys_memory",
    columns: [
        col("total_physical_memory_kb", BigInt, false),
        col("available_physical_memory_kb", BigInt, false),
        col("total_page_file_kb", BigInt, false),
        col("available_page_file_kb", BigInt, false),
        col("system_cache_kb", BigInt, false),
        col("kernel_paged_pool_kb", BigInt, false),
        col("kernel_nonpaged_pool_kb", BigInt, false),
        col("system_high_memory_signal_state", Bit, false),
        col("system_low_memory_signal_state", Bit, false),
        col("system_memory_state_desc", NVarChar(256), false),
    ],
    rows: os_sys_memory,
};

fn os_sys_memory(ctx: &ExecCtx, _db: &str) -> Rows<10> {
    super::server_state(ctx)?;
    let m = tessera_database::memory::system_memory();
    let low = tessera_database::memory::low_water(m.total);
    let (high_signal, low_signal) = (m.available > 2 * low, m.available < low);
    let desc = match (high_signal, low_signal) {
        (true, _) => "Available physical memory is high",
        (_, true) => "Available physical memory is low",
        _ => "Physical memory usage is steady",
    };
    let kb = |b: u64| int((b >> 10) as i64);
    Ok(vec![[
        kb(m.total),
        kb(m.available),
        kb(m.total + m.swap_total),
        kb(m.available + m.swap_free),
        kb(m.cached),
        kb(m.slab_reclaimable),
        kb(m.slab_unreclaimable),
        bit(high_signal),
        bit(low_signal),
        s(desc),
    ]])
}

pub(super) static OS_PROCESS_MEMORY: ViewDef<12> = ViewDef {
    schema: "sys",
    name: "dm_os_process_memory",
    columns: [
        col("physical_memory_in_use_kb", BigInt, false),
        col("large_page_allocations_kb", BigInt, false),
        col("locked_page_allocations_kb", BigInt, false),
        col("total_virtual_address_space_kb", BigInt, false),
        col("virtual_address_space_reserved_kb", BigInt, false),
        col("virtual_address_space_committed_kb", BigInt, false),
        col("virtual_address_space_available_kb", BigInt, false),
        col("page_fault_count", BigInt, false),
        col("memory_utilization_percentage", Int, false),
        col("available_commit_limit_kb", BigInt, false),
        col("process_physical_memory_low", Bit, false),
        col("process_virtual_memory_low", Bit, false),
    ],
    rows: os_process_memory,
};

fn os_process_memory(ctx: &ExecCtx, _db: &str) -> Rows<12> {
    super::server_state(ctx)?;
    let p = tessera_database::memory::process_memory();
    let m = tessera_database::memory::system_memory();
    let low = m.available < tessera_database::memory::low_water(m.total);
    let kb = |b: u64| int((b >> 10) as i64);
    // A 47-bit user address space.
    let address_space = 1u64 << 47;
    Ok(vec![[
        kb(p.resident),
        kb(p.huge_pages),
        kb(p.locked),
        kb(address_space),
        kb(p.virtual_size),
        kb(p.resident + p.swapped),
        kb(address_space.saturating_sub(p.virtual_size)),
        int(p.page_faults as i64),
        int((100 * p.resident).checked_div(p.resident + p.swapped).unwrap_or(100) as i64),
        kb(m.available + m.swap_free),
        bit(low),
        bit(false),
    ]])
}

pub(super) static OS_BUFFER_DESCRIPTORS: ViewDef<12> = ViewDef {
    schema: "sys",
    name: "dm_os_buffer_descriptors",
    columns: [
        col("database_id", Int, true),
        col("file_id", Int, true),
        col("page_id", Int, true),
        col("page_level", Int, true),
        col("allocation_unit_id", BigInt, true),
        col("page_type", NVarChar(60), true),
        col("row_count", Int, true),
        col("free_space_in_bytes", Int, true),
        col("is_modified", Bit, true),
        col("numa_node", Int, true),
        col("read_microsec", BigInt, true),
        col("is_in_bpool_extension", Bit, true),
    ],
    rows: os_buffer_descriptors,
};

/// The pages in the buffer pool (and its extension).
fn os_buffer_descriptors(ctx: &ExecCtx, _db: &str) -> Rows<12> {
    super::server_state(ctx)?;
    Ok(ctx
        .shared
        .engine
        .buffer_descriptors()
        .into_iter()
        .map(|d| {
            [
                int(i64::from(d.database_id)),
                int(1),
                int(i64::from(d.page)),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                bit(d.dirty),
                int(0),
                Value::Null,
                bit(d.in_extension),
            ]
        })
        .collect())
}

pub(super) static OS_BUFFER_POOL_EXTENSION_CONFIGURATION: ViewDef<5> = ViewDef {
    schema: "sys",
    name: "dm_os_buffer_pool_extension_configuration",
    columns: [
        col("path", NVarChar(256), true),
        col("file_id", Int, true),
        col("state", Int, false),
        col("state_description", NVarChar(60), false),
        col("current_size_in_kb", BigInt, false),
    ],
    rows: os_buffer_pool_extension_configuration,
};

/// One row: the running extension, or the configured one that could not start, or none.
fn os_buffer_pool_extension_configuration(ctx: &ExecCtx, _db: &str) -> Rows<5> {
    super::server_state(ctx)?;
    let row = match (ctx.shared.engine.pool().extension(), ctx.shared.config.extension()) {
        (Some(ext), _) => [
            s(&ext.path().to_string_lossy()),
            int(0),
            int(5),
            s("BUFFER POOL EXTENSION ENABLED"),
            int((ext.size_bytes() >> 10) as i64),
        ],
        // Configured but not running (its file could not be made at start).
        (None, Some(setting)) => [s(&setting.file), int(0), int(0), s("BUFFER POOL EXTENSION DISABLED"), int(0)],
        (None, None) => [Value::Null, Value::Null, int(0), s("BUFFER POOL EXTENSION DISABLED"), int(0)],
    };
    Ok(vec![row])
}

/// `sys.dm_tessera_resource_limits` (a tessera extension): each database with a resource
/// limit (`tessera_governance::governor`), its limits (NULL: none) and its use since the first was set.
pub(super) static TESSERA_RESOURCE_LIMITS: ViewDef<26> = ViewDef {
    schema: "sys",
    name: "dm_tessera_resource_limits",
    columns: [
        col("database_id", Int, false),
        col("name", SYSNAME, true),
        col("max_concurrent_requests", Int, true),
        col("running_requests", Int, false),
        col("queued_requests", Int, false),
        col("admitted_requests", BigInt, false),
        col("queued_requests_total", BigInt, false),
        col("queued_wait_ms_total", BigInt, false),
        col("max_cpu_percent", Int, true),
        col("cpu_used_ms_total", BigInt, false),
        col("cpu_throttled_count", BigInt, false),
        col("cpu_throttled_ms_total", BigInt, false),
        col("cpu_share_percent", Int, true),
        col("cpu_share_throttled_count", BigInt, false),
        col("cpu_share_throttled_ms_total", BigInt, false),
        col("max_log_rate_kb", Int, true),
        col("log_written_kb_total", BigInt, false),
        col("log_throttled_count", BigInt, false),
        col("log_throttled_ms_total", BigInt, false),
        col("max_buffer_pool_mb", Int, true),
        col("buffer_pool_kb", BigInt, false),
        col("buffer_pool_limit_evictions_total", BigInt, false),
        col("buffer_pool_limit_overruns_total", BigInt, false),
        col("max_tempdb_mb", Int, true),
        col("tempdb_kb", BigInt, false),
        col("tempdb_refused_count", BigInt, false),
    ],
    rows: tessera_resource_limits,
};

fn tessera_resource_limits(ctx: &ExecCtx, _db: &str) -> Rows<26> {
    super::server_state(ctx)?;
    let big = |n: u64| int(i64::try_from(n).unwrap_or(i64::MAX));
    let limit = |n: Option<u32>| n.map_or(Value::Null, |n| int(i64::from(n)));
    Ok(ctx
        .shared
        .governors
        .usage()
        .into_iter()
        .map(|(id, u)| {
            let entry = ctx.shared.engine.entry_by_id(id);
            let name = entry.as_ref().map_or(Value::Null, |e| s(&e.name));
            // A database that is not open holds nothing in the pool.
            let pool = entry
                .and_then(|e| ctx.shared.engine.database_if_open(&e.name))
                .and_then(|db| db.pool_usage())
                .unwrap_or_default();
            let kb = |pages: u64| big(pages * (PAGE_SIZE as u64 / 1024));
            [
                int(i64::from(id)),
                name,
                limit(u.limits.max_concurrent_requests),
                int(i64::from(u.requests.running)),
                int(i64::from(u.requests.queued)),
                big(u.requests.admitted_total),
                big(u.requests.queued_total),
                big(u.requests.wait_total_ms),
                limit(u.limits.max_cpu_percent),
                big(u.cpu.used_total / 1_000_000),
                big(u.cpu.waits_total),
                big(u.cpu.waited_ms_total),
                limit(u.limits.cpu_share_percent),
                big(u.share.waits_total),
                big(u.share.waited_ms_total),
                limit(u.limits.max_log_rate_kb),
                big(u.log.used_total >> 10),
                big(u.log.waits_total),
                big(u.log.waited_ms_total),
                limit(u.limits.max_buffer_pool_mb),
                kb(pool.resident_pages as u64),
                big(pool.evictions_within_limit),
                big(pool.overruns),
                limit(u.limits.max_tempdb_mb),
                kb(u.tempdb.pages),
                big(u.tempdb.refusals),
            ]
        })
        .collect())
}
