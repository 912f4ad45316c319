//! Query Store's views of the database they are read in (`crate::query_store`), with
//! SQL Server 2019's columns: sys.database_query_store_options, sys.query_store_query_text,
//! sys.query_store_query, sys.query_store_plan, sys.query_store_runtime_stats_interval,
//! sys.query_store_runtime_stats, sys.query_store_wait_stats and sys.query_context_settings.
//! They read what the database's Query Store tree holds with what is pending in memory
//! laid over it, as SQL Server's views show flushed and in-memory data together.
//!
//! What tessera does not measure is shown as SQL Server shows it where it does not apply:
//! logical writes, CLR time, memory grants, log and tempdb use are 0, every plan runs at
//! dop 1; bind and optimize times are not told apart from the compile time (NULL), nor is
//! compile memory. Plans are SHOWPLAN_TEXT, not XML. No plan is forced (plan forcing is
//! not built): `is_forced_plan` is 0.

use std::sync::Arc;

use super::space_usage::database_state;
use super::{bit, col, int, s, Rows, ViewDef, NVARCHAR_MAX};
use crate::query_store::rows::{
    self as qs, parts, ContextRow, IntervalRow, Measure, PlanRow, QueryRow, StatsRow, WaitRow,
};
use crate::query_store::{storage, Mode, Options};
use crate::runtime::ExecCtx;
use tessera_database::Database;
use tessera_semantics::types::{SqlType::*, Value};

/// The database's Query Store rows (storage with what is pending laid over it) and its
/// settings (None: never turned on).
fn store_rows(ctx: &ExecCtx, db: &str) -> tessera_errors::SqlResult<(Arc<Database>, storage::Rows)> {
    database_state(ctx, db)?;
    let database = ctx.shared.database(db)?;
    let rows = match ctx.shared.query_stores.get(database.name()) {
        Some(store) => {
            crate::query_store_flusher::with_site(ctx.shared, &database, |site| store.rows(&database, site))?
        }
        None => storage::all_rows(&database)?,
    };
    Ok((database, rows))
}

/// `datetimeoffset` (UTC) from milliseconds since the Unix epoch.
fn offset_ms(epoch_ms: i64) -> Value {
    const UNIX_DAYS: i64 = 719_162;
    let days = epoch_ms.div_euclid(86_400_000) + UNIX_DAYS;
    let ticks = epoch_ms.rem_euclid(86_400_000) as u64 * 10_000;
    Value::DateTimeOffset { days: days as i32, ticks, offset: 0 }
}

/// `datetimeoffset`, NULL for 0 (never).
fn offset_or_null(epoch_ms: i64) -> Value {
    if epoch_ms == 0 {
        Value::Null
    } else {
        offset_ms(epoch_ms)
    }
}

fn binary8(v: u64) -> Value {
    Value::Binary(Arc::from(&v.to_be_bytes()[..]))
}

fn handle(v: u64) -> Value {
    let mut h = [0u8; 16];
    h[0] = 0x02;
    h[8..].copy_from_slice(&v.to_be_bytes());
    Value::Binary(Arc::from(&h[..]))
}

/// `execution_type_desc`.
fn execution_type(kind: u64) -> &'static str {
    match kind {
        3 => "Aborted",
        4 => "Exception",
        _ => "Regular",
    }
}

pub(super) static DATABASE_QUERY_STORE_OPTIONS: ViewDef<22> = ViewDef {
    schema: "sys",
    name: "database_query_store_options",
    columns: [
        col("desired_state", SmallInt, false),
        col("desired_state_desc", NVarChar(60), true),
        col("actual_state", SmallInt, false),
        col("actual_state_desc", NVarChar(60), true),
        col("readonly_reason", Int, true),
        col("current_storage_size_mb", BigInt, true),
        col("flush_interval_seconds", BigInt, true),
        col("interval_length_minutes", BigInt, true),
        col("max_storage_size_mb", BigInt, true),
        col("stale_query_threshold_days", BigInt, true),
        col("max_plans_per_query", BigInt, true),
        col("query_capture_mode", SmallInt, false),
        col("query_capture_mode_desc", NVarChar(60), true),
        col("capture_policy_execution_count", Int, true),
        col("capture_policy_total_compile_cpu_time_ms", BigInt, true),
        col("capture_policy_total_execution_cpu_time_ms", BigInt, true),
        col("capture_policy_stale_threshold_hours", Int, true),
        col("size_based_cleanup_mode", SmallInt, false),
        col("size_based_cleanup_mode_desc", NVarChar(60), true),
        col("wait_stats_capture_mode", SmallInt, false),
        col("wait_stats_capture_mode_desc", NVarChar(60), true),
        col("actual_state_additional_info", NVarChar(4000), true),
    ],
    rows: options_rows,
};

/// One row: the settings (SQL Server's defaults, OFF, for a database that never turned
/// Query Store on) and the state it is in.
fn options_rows(ctx: &ExecCtx, db: &str) -> Rows<22> {
    database_state(ctx, db)?;
    let database = ctx.shared.database(db)?;
    let store = ctx.shared.query_stores.get(database.name());
    let options = match &store {
        Some(s) => s.options(),
        None => storage::read_options(&database)?.unwrap_or(Options { desired: Mode::Off, ..Options::default() }),
    };
    let (actual, reason) = match &store {
        Some(s) => (s.actual(), s.readonly_reason()),
        None => (options.desired, 0),
    };
    let bytes = match &store {
        Some(s) => s.stored_bytes(&database)?,
        None => storage::load(&database)?.bytes,
    };
    let p = options.policy;
    Ok(vec![[
        int(options.desired.code()),
        s(options.desired.desc()),
        int(actual.code()),
        s(actual.desc()),
        int(reason),
        int(i64::try_from(bytes.div_ceil(1 << 20)).unwrap_or(i64::MAX)),
        int(options.flush_interval_seconds),
        int(options.interval_length_minutes),
        int(options.max_storage_size_mb),
        int(options.stale_query_threshold_days),
        int(options.max_plans_per_query),
        int(options.capture.code()),
        s(options.capture.desc()),
        int(p.execution_count),
        int(p.total_compile_cpu_ms),
        int(p.total_execution_cpu_ms),
        int(p.stale_threshold_hours),
        int(i64::from(options.size_based_cleanup)),
        s(if options.size_based_cleanup { "AUTO" } else { "OFF" }),
        int(i64::from(options.wait_stats)),
        s(if options.wait_stats { "ON" } else { "OFF" }),
        Value::Null,
    ]])
}

pub(super) static QUERY_TEXT: ViewDef<5> = ViewDef {
    schema: "sys",
    name: "query_store_query_text",
    columns: [
        col("query_text_id", BigInt, false),
        col("query_sql_text", NVARCHAR_MAX, true),
        col("statement_sql_handle", VarBinary(44), true),
        col("is_part_of_encrypted_module", Bit, false),
        col("has_restricted_text", Bit, false),
    ],
    rows: |ctx, db| {
        let (_, rows) = store_rows(ctx, db)?;
        let mut out = Vec::new();
        for (k, _) in storage::of_kind(&rows, qs::TEXT_BY_HASH) {
            let Some(v) = rows.get(k) else { continue };
            let id = i64::from_be_bytes(v[..8].try_into().expect("8 bytes"));
            let text = storage::text(&rows, qs::TEXT, id);
            let hash = u64::from_be_bytes(k[1..9].try_into().expect("8 bytes"));
            out.push([int(id), s(&text), handle(hash), bit(false), bit(false)]);
        }
        out.sort_by_key(|r| match r[0] {
            Value::Int(i) => i,
            _ => 0,
        });
        Ok(out)
    },
};

pub(super) static QUERY: ViewDef<30> = ViewDef {
    schema: "sys",
    name: "query_store_query",
    columns: [
        col("query_id", BigInt, false),
        col("query_text_id", BigInt, false),
        col("context_settings_id", BigInt, false),
        col("object_id", BigInt, true),
        col("batch_sql_handle", VarBinary(44), true),
        col("query_hash", Binary(8), false),
        col("is_internal_query", Bit, false),
        col("query_parameterization_type", TinyInt, false),
        col("query_parameterization_type_desc", NVarChar(60), true),
        col("initial_compile_start_time", DateTimeOffset { scale: 7 }, false),
        col("last_compile_start_time", DateTimeOffset { scale: 7 }, true),
        col("last_execution_time", DateTimeOffset { scale: 7 }, true),
        col("last_compile_batch_sql_handle", VarBinary(44), true),
        col("last_compile_batch_offset_start", BigInt, true),
        col("last_compile_batch_offset_end", BigInt, true),
        col("count_compiles", BigInt, true),
        col("avg_compile_duration", Float, true),
        col("last_compile_duration", BigInt, true),
        col("avg_bind_duration", Float, true),
        col("last_bind_duration", BigInt, true),
        col("avg_bind_cpu_time", Float, true),
        col("last_bind_cpu_time", BigInt, true),
        col("avg_optimize_duration", Float, true),
        col("last_optimize_duration", BigInt, true),
        col("avg_optimize_cpu_time", Float, true),
        col("last_optimize_cpu_time", BigInt, true),
        col("avg_compile_memory_kb", Float, true),
        col("last_compile_memory_kb", BigInt, true),
        col("max_compile_memory_kb", BigInt, true),
        col("is_clouddb_internal_query", Bit, true),
    ],
    rows: |ctx, db| {
        let (database, rows) = store_rows(ctx, db)?;
        let mut out = Vec::new();
        for (k, v) in storage::of_kind(&rows, qs::QUERY) {
            let q: QueryRow = storage::decode(&database, v)?;
            let avg_compile =
                if q.count_compiles > 0 { q.compile_us_total as f64 / q.count_compiles as f64 } else { 0.0 };
            let (start, end) = q.batch_offsets;
            out.push([
                int(parts(k)[0] as i64),
                int(q.text_id),
                int(q.context_id),
                int(q.object_id),
                Value::Null,
                binary8(q.query_hash),
                bit(false),
                int(0),
                s("None"),
                offset_ms(q.initial_compile_ms),
                offset_ms(q.last_compile_ms),
                offset_or_null(q.last_execution_ms),
                handle(q.batch_handle),
                int(i64::from(start)),
                int(i64::from(end)),
                int(q.count_compiles),
                Value::Float(avg_compile),
                int(q.last_compile_us),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                bit(false),
            ]);
        }
        Ok(out)
    },
};

pub(super) static PLAN: ViewDef<23> = ViewDef {
    schema: "sys",
    name: "query_store_plan",
    columns: [
        col("plan_id", BigInt, false),
        col("query_id", BigInt, false),
        col("plan_group_id", BigInt, true),
        col("engine_version", NVarChar(32), true),
        col("compatibility_level", SmallInt, false),
        col("query_plan_hash", Binary(8), false),
        col("query_plan", NVARCHAR_MAX, true),
        col("is_online_index_plan", Bit, false),
        col("is_trivial_plan", Bit, false),
        col("is_parallel_plan", Bit, false),
        col("is_forced_plan", Bit, false),
        col("is_natively_compiled", Bit, false),
        col("force_failure_count", BigInt, false),
        col("last_force_failure_reason", Int, false),
        col("last_force_failure_reason_desc", NVarChar(128), true),
        col("count_compiles", BigInt, true),
        col("initial_compile_start_time", DateTimeOffset { scale: 7 }, false),
        col("last_compile_start_time", DateTimeOffset { scale: 7 }, true),
        col("last_execution_time", DateTimeOffset { scale: 7 }, true),
        col("avg_compile_duration", Float, true),
        col("last_compile_duration", BigInt, true),
        col("plan_forcing_type", Int, false),
        col("plan_forcing_type_desc", NVarChar(60), true),
    ],
    rows: |ctx, db| {
        let (database, rows) = store_rows(ctx, db)?;
        let mut out = Vec::new();
        for (k, v) in storage::of_kind(&rows, qs::PLAN) {
            let id = parts(k)[0] as i64;
            let p: PlanRow = storage::decode(&database, v)?;
            let avg_compile =
                if p.count_compiles > 0 { p.compile_us_total as f64 / p.count_compiles as f64 } else { 0.0 };
            out.push([
                int(id),
                int(p.query_id),
                int(0),
                s(crate::runtime::PRODUCT_VERSION),
                int(160),
                binary8(p.plan_hash),
                s(&storage::text(&rows, qs::PLAN_TEXT, id)),
                bit(false),
                bit(false),
                bit(false),
                bit(false),
                bit(false),
                int(0),
                int(0),
                s("NONE"),
                int(p.count_compiles),
                offset_ms(p.initial_compile_ms),
                offset_ms(p.last_compile_ms),
                offset_or_null(p.last_execution_ms),
                Value::Float(avg_compile),
                int(p.last_compile_us),
                int(0),
                s("NONE"),
            ]);
        }
        Ok(out)
    },
};

pub(super) static RUNTIME_STATS_INTERVAL: ViewDef<4> = ViewDef {
    schema: "sys",
    name: "query_store_runtime_stats_interval",
    columns: [
        col("runtime_stats_interval_id", BigInt, false),
        col("start_time", DateTimeOffset { scale: 7 }, false),
        col("end_time", DateTimeOffset { scale: 7 }, false),
        col("comment", NVARCHAR_MAX, true),
    ],
    rows: |ctx, db| {
        let (database, rows) = store_rows(ctx, db)?;
        let mut out = Vec::new();
        for (k, v) in storage::of_kind(&rows, qs::INTERVAL) {
            let i: IntervalRow = storage::decode(&database, v)?;
            out.push([int(parts(k)[0] as i64), offset_ms(i.start_ms), offset_ms(i.end_ms), Value::Null]);
        }
        Ok(out)
    },
};

/// The five columns of one measure: average, last, least, most, standard deviation.
fn measure(m: &Measure, n: i64) -> [Value; 5] {
    let whole = |v: f64| int(v.round() as i64);
    [Value::Float(m.avg(n)), whole(m.last), whole(m.min), whole(m.max), Value::Float(m.stdev(n))]
}

/// A measure tessera does not take (0 in every run).
fn zeros() -> [Value; 5] {
    [Value::Float(0.0), int(0), int(0), int(0), Value::Float(0.0)]
}

/// Whole-number columns: `name` and its four companions (avg float, the rest bigint).
const fn five(name: [&'static str; 5], nullable: bool) -> [tessera_semantics::plan::Col; 5] {
    [
        col(name[0], Float, true),
        col(name[1], BigInt, nullable),
        col(name[2], BigInt, nullable),
        col(name[3], BigInt, nullable),
        col(name[4], Float, true),
    ]
}

macro_rules! measure_columns {
    ($nullable:expr, $($name:literal),*) => {
        [$(five(
            [concat!("avg_", $name), concat!("last_", $name), concat!("min_", $name), concat!("max_", $name), concat!("stdev_", $name)],
            $nullable,
        )),*]
    };
}

/// The 68 columns of sys.query_store_runtime_stats.
const RUNTIME_STATS_COLUMNS: [tessera_semantics::plan::Col; 68] = {
    let head = [
        col("runtime_stats_id", BigInt, false),
        col("plan_id", BigInt, false),
        col("runtime_stats_interval_id", BigInt, false),
        col("execution_type", TinyInt, false),
        col("execution_type_desc", NVarChar(60), true),
        col("first_execution_time", DateTimeOffset { scale: 7 }, false),
        col("last_execution_time", DateTimeOffset { scale: 7 }, false),
        col("count_executions", BigInt, false),
    ];
    let measured = measure_columns!(
        false,
        "duration",
        "cpu_time",
        "logical_io_reads",
        "logical_io_writes",
        "physical_io_reads",
        "clr_time",
        "dop",
        "query_max_used_memory",
        "rowcount"
    );
    let later = measure_columns!(true, "num_physical_io_reads", "log_bytes_used", "tempdb_space_used");
    let mut out = [col("", Int, false); 68];
    let mut i = 0;
    while i < 8 {
        out[i] = head[i];
        i += 1;
    }
    let mut m = 0;
    while m < 9 {
        let mut j = 0;
        while j < 5 {
            out[8 + m * 5 + j] = measured[m][j];
            j += 1;
        }
        m += 1;
    }
    let mut m = 0;
    while m < 3 {
        let mut j = 0;
        while j < 5 {
            out[53 + m * 5 + j] = later[m][j];
            j += 1;
        }
        m += 1;
    }
    out
};

pub(super) static RUNTIME_STATS: ViewDef<68> = ViewDef {
    schema: "sys",
    name: "query_store_runtime_stats",
    columns: RUNTIME_STATS_COLUMNS,
    rows: |ctx, db| {
        let (database, rows) = store_rows(ctx, db)?;
        let mut out = Vec::new();
        for (k, v) in storage::of_kind(&rows, qs::STATS) {
            let p = parts(k);
            let kind = u64::from(*k.last().expect("key"));
            let st: StatsRow = storage::decode(&database, v)?;
            let n = st.count;
            let dop = Measure { sum: n as f64, sum_squares: n as f64, min: 1.0, max: 1.0, last: 1.0 };
            let mut row: Vec<Value> = vec![
                int(st.id),
                int(p[1] as i64),
                int(p[0] as i64),
                int(kind as i64),
                s(execution_type(kind)),
                offset_ms(st.first_ms),
                offset_ms(st.last_ms),
                int(n),
            ];
            row.extend(measure(&st.measures[qs::DURATION], n));
            row.extend(measure(&st.measures[qs::CPU], n));
            row.extend(measure(&st.measures[qs::LOGICAL_READS], n));
            row.extend(zeros());
            row.extend(measure(&st.measures[qs::PHYSICAL_READS], n));
            row.extend(zeros());
            row.extend(measure(&dop, n));
            row.extend(zeros());
            row.extend(measure(&st.measures[qs::ROWS], n));
            // Each page tessera reads from disk is one read.
            row.extend(measure(&st.measures[qs::PHYSICAL_READS], n));
            row.extend(zeros());
            row.extend(zeros());
            out.push(row.try_into().expect("68 values"));
        }
        Ok(out)
    },
};

pub(super) static WAIT_STATS: ViewDef<13> = ViewDef {
    schema: "sys",
    name: "query_store_wait_stats",
    columns: [
        col("wait_stats_id", BigInt, false),
        col("plan_id", BigInt, false),
        col("runtime_stats_interval_id", BigInt, false),
        col("wait_category", SmallInt, false),
        col("wait_category_desc", NVarChar(60), true),
        col("execution_type", TinyInt, false),
        col("execution_type_desc", NVarChar(60), true),
        col("total_query_wait_time_ms", BigInt, false),
        col("avg_query_wait_time_ms", Float, true),
        col("last_query_wait_time_ms", BigInt, false),
        col("min_query_wait_time_ms", BigInt, false),
        col("max_query_wait_time_ms", BigInt, false),
        col("stdev_query_wait_time_ms", Float, true),
    ],
    rows: |ctx, db| {
        let (database, rows) = store_rows(ctx, db)?;
        let mut out = Vec::new();
        for (k, v) in storage::of_kind(&rows, qs::WAITS) {
            let p = parts(k);
            let (kind, category) = (p[2], p[3]);
            let w: WaitRow = storage::decode(&database, v)?;
            let name = tessera_waits::WaitCategory::from_id(category as u8).map_or("Unknown", |c| c.name());
            let [avg, last, min, max, stdev] = measure(&w.time, w.count);
            out.push([
                int(w.id),
                int(p[1] as i64),
                int(p[0] as i64),
                int(category as i64),
                s(name),
                int(kind as i64),
                s(execution_type(kind)),
                int(w.time.sum.round() as i64),
                avg,
                last,
                min,
                max,
                stdev,
            ]);
        }
        Ok(out)
    },
};

pub(super) static CONTEXT_SETTINGS: ViewDef<12> = ViewDef {
    schema: "sys",
    name: "query_context_settings",
    columns: [
        col("context_settings_id", BigInt, false),
        col("set_options", VarBinary(8), true),
        col("language_id", SmallInt, false),
        col("date_format", SmallInt, false),
        col("date_first", TinyInt, false),
        col("status", VarBinary(2), true),
        col("required_cursor_options", Int, false),
        col("acceptable_cursor_options", Int, false),
        col("merge_action_type", SmallInt, false),
        col("default_schema_id", Int, false),
        col("is_replication_specific", Bit, false),
        col("is_contained", VarBinary(1), true),
    ],
    rows: |ctx, db| {
        let (database, rows) = store_rows(ctx, db)?;
        let contained = ctx.shared.security(&ctx.session.catalog_memo, database.name())?.is_contained();
        let mut out = Vec::new();
        for (k, v) in storage::of_kind(&rows, qs::CONTEXT) {
            let c: ContextRow = storage::decode(&database, v)?;
            out.push([
                int(parts(k)[0] as i64),
                Value::Binary(Arc::from(&(c.set_options as u32).to_be_bytes()[..])),
                int(c.language_id),
                int(c.date_format),
                int(c.date_first),
                Value::Binary(Arc::from(&[0u8, 0][..])),
                int(0),
                int(0),
                int(0),
                int(c.default_schema_id),
                bit(false),
                Value::Binary(Arc::from(&[u8::from(contained)][..])),
            ]);
        }
        Ok(out)
    },
};
