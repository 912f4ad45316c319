//! Query statistics: sys.dm_exec_query_stats, one row per statement plan in the plan
//! cache with what its runs have cost (from `tessera_semantics::cache::QueryStats`,
//! counted as each run ends), sys.dm_exec_procedure_stats, one row per cached stored
//! procedure with what its calls have cost, and sys.dm_exec_text_query_plan, the
//! SHOWPLAN_TEXT of a cached batch's statement plans.
//!
//! Worker time is the time the statement took on its thread less the time it waited
//! (its CPU time, and any time the thread was ready but not running); elapsed time the
//! wall clock; reads the pages it fetched (logical) and read from disk or the buffer pool
//! extension (physical); rows what @@ROWCOUNT says after it. tessera runs a statement on
//! one thread (dop 1) and keeps no count of the pages it wrote, of grants, spills or
//! threads reserved: those columns hold 0. Figures live with the plan and go with it (an
//! eviction, DBCC FREEPROCCACHE, a restart), as SQL Server's do.

use std::sync::Arc;

use super::requests::{datetime_ms, sql_handle};
use super::{bit, col, int, s, FunctionDef, Rows, ViewDef, NVARCHAR_MAX};
use crate::fnv::{fnv1a, START as FNV_START};
use crate::runtime::ExecCtx;
use tessera_semantics::cache::Figures;
use tessera_semantics::types::{SqlType::*, Value};

fn binary8(v: u64) -> Value {
    Value::Binary(Arc::from(&v.to_be_bytes()[..]))
}

/// The statement at SQL Server's UTF-16 byte `offsets` in `text` (-1: to the end).
pub(super) fn statement_text(text: &str, offsets: (i32, i32)) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    let start = usize::try_from(offsets.0 / 2).unwrap_or(0).min(units.len());
    let end = if offsets.1 < 0 { units.len() } else { usize::try_from(offsets.1 / 2).unwrap_or(0).min(units.len()) };
    String::from_utf16_lossy(&units[start..end.max(start)])
}

pub(super) static EXEC_QUERY_STATS: ViewDef<88> = ViewDef {
    schema: "sys",
    name: "dm_exec_query_stats",
    columns: [
        col("sql_handle", VarBinary(64), false),
        col("statement_start_offset", Int, false),
        col("statement_end_offset", Int, false),
        col("plan_generation_num", BigInt, false),
        col("plan_handle", VarBinary(64), false),
        col("creation_time", DateTime, false),
        col("last_execution_time", DateTime, false),
        col("execution_count", BigInt, false),
        col("total_worker_time", BigInt, false),
        col("last_worker_time", BigInt, false),
        col("min_worker_time", BigInt, false),
        col("max_worker_time", BigInt, false),
        col("total_physical_reads", BigInt, false),
        col("last_physical_reads", BigInt, false),
        col("min_physical_reads", BigInt, false),
        col("max_physical_reads", BigInt, false),
        col("total_logical_writes", BigInt, false),
        col("last_logical_writes", BigInt, false),
        col("min_logical_writes", BigInt, false),
        col("max_logical_writes", BigInt, false),
        col("total_logical_reads", BigInt, false),
        col("last_logical_reads", BigInt, false),
        col("min_logical_reads", BigInt, false),
        col("max_logical_reads", BigInt, false),
        col("total_clr_time", BigInt, false),
        col("last_clr_time", BigInt, false),
        col("min_clr_time", BigInt, false),
        col("max_clr_time", BigInt, false),
        col("total_elapsed_time", BigInt, false),
        col("last_elapsed_time", BigInt, false),
        col("min_elapsed_time", BigInt, false),
        col("max_elapsed_time", BigInt, false),
        col("query_hash", Binary(8), false),
        col("query_plan_hash", Binary(8), false),
        col("total_rows", BigInt, false),
        col("last_rows", BigInt, false),
        col("min_rows", BigInt, false),
        col("max_rows", BigInt, false),
        col("statement_sql_handle", VarBinary(64), true),
        col("statement_context_id", BigInt, true),
        col("total_dop", BigInt, false),
        col("last_dop", BigInt, false),
        col("min_dop", BigInt, false),
        col("max_dop", BigInt, false),
        col("total_grant_kb", BigInt, false),
        col("last_grant_kb", BigInt, false),
        col("min_grant_kb", BigInt, false),
        col("max_grant_kb", BigInt, false),
        col("total_used_grant_kb", BigInt, false),
        col("last_used_grant_kb", BigInt, false),
        col("min_used_grant_kb", BigInt, false),
        col("max_used_grant_kb", BigInt, false),
        col("total_ideal_grant_kb", BigInt, false),
        col("last_ideal_grant_kb", BigInt, false),
        col("min_ideal_grant_kb", BigInt, false),
        col("max_ideal_grant_kb", BigInt, false),
        col("total_reserved_threads", BigInt, false),
        col("last_reserved_threads", BigInt, false),
        col("min_reserved_threads", BigInt, false),
        col("max_reserved_threads", BigInt, false),
        col("total_used_threads", BigInt, false),
        col("last_used_threads", BigInt, false),
        col("min_used_threads", BigInt, false),
        col("max_used_threads", BigInt, false),
        col("total_columnstore_segment_reads", BigInt, false),
        col("last_columnstore_segment_reads", BigInt, false),
        col("min_columnstore_segment_reads", BigInt, false),
        col("max_columnstore_segment_reads", BigInt, false),
        col("total_columnstore_segment_skips", BigInt, false),
        col("last_columnstore_segment_skips", BigInt, false),
        col("min_columnstore_segment_skips", BigInt, false),
        col("max_columnstore_segment_skips", BigInt, false),
        col("total_spills", BigInt, false),
        col("last_spills", BigInt, false),
        col("min_spills", BigInt, false),
        col("max_spills", BigInt, false),
        col("total_num_physical_reads", BigInt, false),
        col("last_num_physical_reads", BigInt, false),
        col("min_num_physical_reads", BigInt, false),
        col("max_num_physical_reads", BigInt, false),
        col("total_page_server_reads", BigInt, false),
        col("last_page_server_reads", BigInt, false),
        col("min_page_server_reads", BigInt, false),
        col("max_page_server_reads", BigInt, false),
        col("total_num_page_server_reads", BigInt, false),
        col("last_num_page_server_reads", BigInt, false),
        col("min_num_page_server_reads", BigInt, false),
        col("max_num_page_server_reads", BigInt, false),
    ],
    rows: exec_query_stats,
};

/// Every statement plan that has run at least once. Needs VIEW SERVER STATE.
fn exec_query_stats(ctx: &ExecCtx, _db: &str) -> Rows<88> {
    super::server_state(ctx)?;
    let mut rows = Vec::new();
    for entry in ctx.shared.plans.statement_stats() {
        let st = &entry.stats;
        let t = st.totals();
        let executions = t.executions;
        if executions == 0 {
            continue;
        }
        let n = |v: u64| int(i64::try_from(v).unwrap_or(i64::MAX));
        let measure = |f: Figures| [n(f.total), n(f.last), n(f.min), n(f.max)];
        let zero = || [int(0), int(0), int(0), int(0)];
        let one_thread = [n(executions), int(1), int(1), int(1)];
        let query_hash = fnv1a(FNV_START, statement_text(&entry.text, st.offsets).as_bytes());
        let plan_hash = fnv1a(query_hash, &entry.context.to_be_bytes());
        let mut row: Vec<Value> = vec![
            Value::Binary(Arc::from(&sql_handle(&entry.text)[..])),
            int(i64::from(st.offsets.0)),
            int(i64::from(st.offsets.1)),
            int(1),
            binary8(entry.handle),
            datetime_ms(st.created_ms),
            datetime_ms(t.last_execution_ms),
            n(executions),
        ];
        row.extend(measure(t.worker_us));
        row.extend(measure(t.physical_reads));
        row.extend(zero());
        row.extend(measure(t.logical_reads));
        row.extend(zero());
        row.extend(measure(t.elapsed_us));
        row.extend([binary8(query_hash), binary8(plan_hash)]);
        row.extend(measure(t.rows));
        row.extend([Value::Null, Value::Null]);
        row.extend(one_thread);
        for _ in 0..8 {
            row.extend(zero());
        }
        row.extend(measure(t.physical_reads));
        row.extend(zero());
        row.extend(zero());
        rows.push(row.try_into().expect("88 values"));
    }
    Ok(rows)
}

/// sys.dm_exec_procedure_stats: one row per cached stored procedure body and database
/// whose procedure ran it, with what its calls cost. A call is counted once, as it ends
/// (in an error too), however many statements it ran (those are counted per statement in
/// sys.dm_exec_query_stats); its figures include the procedures it called. Worker time,
/// elapsed time and reads are measured as dm_exec_query_stats measures a statement's.
///
/// Tenants of one schema share the cached body of a procedure whose text is the same:
/// the body counts its calls per (database id, object id), so each database's procedure
/// is a row of its own, all with the body's `sql_handle`, `plan_handle` and
/// `cached_time` (when the body was parsed into the cache). A dropped database's rows go.
///
/// tessera keeps no count of the pages a call wrote and never spills, and has no page
/// servers: `*_logical_writes`, `*_spills` and `*_page_server_reads` hold 0;
/// `*_num_physical_reads` are the physical reads. Only stored procedures written in T-SQL
/// are counted (`type` 'P ', SQL_STORED_PROCEDURE). Needs VIEW SERVER STATE.
pub(super) static EXEC_PROCEDURE_STATS: ViewDef<45> = ViewDef {
    schema: "sys",
    name: "dm_exec_procedure_stats",
    columns: [
        col("database_id", Int, false),
        col("object_id", Int, false),
        col("type", Char(2), false),
        col("type_desc", NVarChar(60), true),
        col("sql_handle", VarBinary(64), false),
        col("plan_handle", VarBinary(64), false),
        col("cached_time", DateTime, false),
        col("last_execution_time", DateTime, false),
        col("execution_count", BigInt, false),
        col("total_worker_time", BigInt, false),
        col("last_worker_time", BigInt, false),
        col("min_worker_time", BigInt, false),
        col("max_worker_time", BigInt, false),
        col("total_physical_reads", BigInt, false),
        col("last_physical_reads", BigInt, false),
        col("min_physical_reads", BigInt, false),
        col("max_physical_reads", BigInt, false),
        col("total_logical_writes", BigInt, false),
        col("last_logical_writes", BigInt, false),
        col("min_logical_writes", BigInt, false),
        col("max_logical_writes", BigInt, false),
        col("total_logical_reads", BigInt, false),
        col("last_logical_reads", BigInt, false),
        col("min_logical_reads", BigInt, false),
        col("max_logical_reads", BigInt, false),
        col("total_elapsed_time", BigInt, false),
        col("last_elapsed_time", BigInt, false),
        col("min_elapsed_time", BigInt, false),
        col("max_elapsed_time", BigInt, false),
        col("total_spills", BigInt, false),
        col("last_spills", BigInt, false),
        col("min_spills", BigInt, false),
        col("max_spills", BigInt, false),
        col("total_num_physical_reads", BigInt, false),
        col("last_num_physical_reads", BigInt, false),
        col("min_num_physical_reads", BigInt, false),
        col("max_num_physical_reads", BigInt, false),
        col("total_page_server_reads", BigInt, false),
        col("last_page_server_reads", BigInt, false),
        col("min_page_server_reads", BigInt, false),
        col("max_page_server_reads", BigInt, false),
        col("total_num_page_server_reads", BigInt, false),
        col("last_num_page_server_reads", BigInt, false),
        col("min_num_page_server_reads", BigInt, false),
        col("max_num_page_server_reads", BigInt, false),
    ],
    rows: exec_procedure_stats,
};

/// Every (database, procedure) whose cached body ran at least once. Needs VIEW SERVER
/// STATE.
fn exec_procedure_stats(ctx: &ExecCtx, _db: &str) -> Rows<45> {
    super::server_state(ctx)?;
    let mut rows = Vec::new();
    for p in ctx.shared.plans.procedure_stats() {
        let t = p.totals;
        if t.executions == 0 {
            continue;
        }
        let n = |v: u64| int(i64::try_from(v).unwrap_or(i64::MAX));
        let measure = |f: Figures| [n(f.total), n(f.last), n(f.min), n(f.max)];
        let zero = || [int(0), int(0), int(0), int(0)];
        let mut row: Vec<Value> = vec![
            int(i64::from(p.database_id)),
            int(i64::from(p.object_id)),
            s("P "),
            s("SQL_STORED_PROCEDURE"),
            Value::Binary(Arc::from(&sql_handle(&p.text)[..])),
            binary8(p.handle),
            datetime_ms(p.cached_ms),
            datetime_ms(t.last_execution_ms),
            n(t.executions),
        ];
        row.extend(measure(t.worker_us));
        row.extend(measure(t.physical_reads));
        row.extend(zero());
        row.extend(measure(t.logical_reads));
        row.extend(measure(t.elapsed_us));
        row.extend(zero());
        row.extend(measure(t.physical_reads));
        row.extend(zero());
        row.extend(zero());
        rows.push(row.try_into().expect("45 values"));
    }
    Ok(rows)
}

/// `sys.dm_exec_text_query_plan(plan_handle, statement_start_offset,
/// statement_end_offset)`: the plans of the cached batch's statements that start within
/// the offsets (0 and -1, or DEFAULT: all of them), as SHOWPLAN_TEXT prints them, shown
/// in the caller's database; no row for a handle no longer cached. Needs VIEW SERVER
/// STATE.
pub(super) static TEXT_QUERY_PLAN: FunctionDef<5> = FunctionDef {
    name: "dm_exec_text_query_plan",
    columns: [
        col("dbid", SmallInt, true),
        col("objectid", Int, true),
        col("number", SmallInt, true),
        col("encrypted", Bit, false),
        col("query_plan", NVARCHAR_MAX, true),
    ],
    rows: |ctx, _db, args| {
        super::server_state(ctx)?;
        let Some(Value::Binary(handle)) = args.first() else { return Ok(Vec::new()) };
        let Ok(handle) = <[u8; 8]>::try_from(&handle[..]).map(u64::from_be_bytes) else { return Ok(Vec::new()) };
        let offset = |i: usize, default: i64| match args.get(i) {
            Some(Value::Int(n)) => *n,
            _ => default,
        };
        let (from, to) = (offset(1, 0), offset(2, -1));
        let statements: Vec<_> = ctx
            .shared
            .plans
            .statement_stats()
            .into_iter()
            .filter(|e| e.handle == handle)
            .filter(|e| i64::from(e.stats.offsets.0) >= from && (to < 0 || i64::from(e.stats.offsets.0) < to))
            .collect();
        if statements.is_empty() {
            return Ok(Vec::new());
        }
        let current = ctx.session.database.clone();
        let table = |db: &tessera_semantics::catalog::DbRef, def: &Arc<tessera_semantics::catalog::Table>| {
            ctx.shared
                .table_for_plan(ctx.session, db, def)
                .unwrap_or_else(|_| (Arc::from(db.name(&current)), def.clone()))
        };
        let site = tessera_semantics::plan::PlanSite { database: &current, table: &table };
        let mut lines = Vec::new();
        for e in &statements {
            lines.push(statement_text(&e.text, e.stats.offsets));
            lines.extend(tessera_semantics::plan::statement_plan(&e.plan, &[], &site));
        }
        Ok(vec![[Value::Null, Value::Null, Value::Null, bit(false), s(&lines.join("\n"))]])
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_is_found_by_its_utf16_offsets() {
        let text = "select N'\u{e9}'; select 2";
        let (start, _) = tessera_semantics::cache::utf16_offsets(text, (text.find("select 2").unwrap(), text.len()));
        assert_eq!(statement_text(text, (start, -1)), "select 2");
        assert_eq!(statement_text(text, (0, 24)), "select N'\u{e9}';");
    }
}
