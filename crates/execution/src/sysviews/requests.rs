//! Requests: sys.dm_exec_requests (what each session runs now: since when, waiting for
//! what and for whom, its CPU and its progress), and the functions that give a request's
//! text: sys.dm_exec_sql_text (by `sql_handle`) and sys.dm_exec_input_buffer (by session).
//!
//! A request is a batch, an RPC or a bulk load; tessera knows its whole text, not which
//! of its statements runs, so `statement_start_offset` is 0 and `statement_end_offset`
//! -1 (the whole batch), as SQL Server reports for a batch of one statement.

use std::sync::Arc;

use super::dmv::{database_id, sessions};
use super::locks::{wait_resource, Trees};
use super::{bit, col, int, s, FunctionDef, Rows, ViewDef, NVARCHAR_MAX, SYSNAME};
use crate::runtime::{ExecCtx, SessionInfo};
use tessera_semantics::types::{SqlType::*, Value};

/// `datetime` from milliseconds since the Unix epoch (on datetime's 1/300 s grid).
pub(super) fn datetime_ms(epoch_ms: i64) -> Value {
    let Value::DateTime { days, .. } = super::datetime(epoch_ms.div_euclid(1000)) else {
        unreachable!("datetime makes a DateTime")
    };
    let seconds = epoch_ms.div_euclid(1000).rem_euclid(86_400) as u64;
    let t300 = (epoch_ms.rem_euclid(1000) * 3 / 10) as u32;
    Value::DateTime { days, ticks: seconds * 10_000_000 + tessera_types::ticks_from_t300(t300) }
}

/// The handle of a request's text (`sql_handle`): `0x02` then 8 bytes of its FNV-1a hash,
/// so one text has one handle.
pub(super) fn sql_handle(text: &str) -> [u8; 16] {
    let hash = crate::fnv::fnv1a(crate::fnv::START, text.as_bytes());
    let mut handle = [0u8; 16];
    handle[0] = 0x02;
    handle[8..].copy_from_slice(&hash.to_be_bytes());
    handle
}

/// The command a request runs, as SQL Server names it: its first statement's first
/// word (`SELECT`, `UPDATE`, `WAITFOR`, `DBCC`), with the second for BACKUP and RESTORE
/// (`BACKUP DATABASE`, `RESTORE LOG`).
pub(crate) fn command(text: &str) -> String {
    let mut words = text
        .lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .flat_map(|l| l.split(|c: char| c.is_whitespace() || c == ';'))
        .filter(|w| !w.is_empty());
    let first = words.next().unwrap_or("").to_uppercase();
    match first.as_str() {
        "BACKUP" | "RESTORE" => match words.next() {
            Some(second) => format!("{first} {}", second.to_uppercase()),
            None => first,
        },
        "EXEC" => "EXECUTE".to_string(),
        _ => first,
    }
}

/// The id of the login's user in database `db` (dbo, 1, for sysadmins and the owner; 0
/// when it has none there).
fn user_id(ctx: &ExecCtx, login: &str, db: &str) -> i64 {
    if ctx.shared.logins.is_sysadmin(login) {
        return 1;
    }
    let (Some(l), Ok(security)) = (ctx.shared.logins.get(login), ctx.shared.security(&ctx.session.catalog_memo, db))
    else {
        return 0;
    };
    security.user_for_sid(&l.sid).map_or(0, |u| i64::from(u.id))
}

pub(super) static EXEC_REQUESTS: ViewDef<61> = ViewDef {
    schema: "sys",
    name: "dm_exec_requests",
    columns: [
        col("session_id", SmallInt, false),
        col("request_id", Int, false),
        col("start_time", DateTime, false),
        col("status", NVarChar(30), false),
        col("command", NVarChar(32), false),
        col("sql_handle", VarBinary(64), true),
        col("statement_start_offset", Int, true),
        col("statement_end_offset", Int, true),
        col("plan_handle", VarBinary(64), true),
        col("database_id", SmallInt, false),
        col("user_id", Int, false),
        col("connection_id", UniqueIdentifier, true),
        col("blocking_session_id", SmallInt, true),
        col("wait_type", NVarChar(60), true),
        col("wait_time", Int, false),
        col("last_wait_type", NVarChar(60), false),
        col("wait_resource", NVarChar(256), false),
        col("open_transaction_count", Int, false),
        col("open_resultset_count", Int, false),
        col("transaction_id", BigInt, false),
        col("context_info", VarBinary(128), true),
        col("percent_complete", Real, false),
        col("estimated_completion_time", BigInt, false),
        col("cpu_time", Int, false),
        col("total_elapsed_time", Int, false),
        col("scheduler_id", Int, true),
        col("task_address", VarBinary(8), true),
        col("reads", BigInt, false),
        col("writes", BigInt, false),
        col("logical_reads", BigInt, false),
        col("text_size", Int, false),
        col("language", SYSNAME, true),
        col("date_format", NVarChar(3), true),
        col("date_first", SmallInt, false),
        col("quoted_identifier", Bit, false),
        col("arithabort", Bit, false),
        col("ansi_null_dflt_on", Bit, false),
        col("ansi_defaults", Bit, false),
        col("ansi_warnings", Bit, false),
        col("ansi_padding", Bit, false),
        col("ansi_nulls", Bit, false),
        col("concat_null_yields_null", Bit, false),
        col("transaction_isolation_level", SmallInt, false),
        col("lock_timeout", Int, false),
        col("deadlock_priority", Int, false),
        col("row_count", BigInt, false),
        col("prev_error", Int, false),
        col("nest_level", Int, false),
        col("granted_query_memory", Int, false),
        col("executing_managed_code", Bit, false),
        col("group_id", Int, false),
        col("query_hash", Binary(8), true),
        col("query_plan_hash", Binary(8), true),
        col("statement_sql_handle", VarBinary(64), true),
        col("statement_context_id", BigInt, true),
        col("dop", Int, false),
        col("parallel_worker_count", Int, true),
        col("external_script_request_id", UniqueIdentifier, true),
        col("is_resumable", Bit, false),
        col("page_resource", Binary(8), true),
        col("page_server_reads", BigInt, false),
    ],
    rows: exec_requests,
};

/// The sessions running a request (every one with VIEW SERVER STATE, else the caller's
/// own). A request in a wait is `suspended`, with the wait's type, time and resource and
/// the session it waits for; one that reports its progress (BACKUP, RESTORE) has its
/// percentage and an estimate of the milliseconds left, from the rate so far.
///
/// `reads`, `logical_reads` and `row_count` add up the request's finished statements
/// (pages read from disk, pages fetched, rows), counted as each statement ends. Not
/// tracked per request, so SQL Server's defaults: `writes`, `prev_error`, `nest_level`,
/// `granted_query_memory`, `deadlock_priority` (0), and `ansi_defaults` (0).
fn exec_requests(ctx: &ExecCtx, _db: &str) -> Rows<61> {
    let now_ms = crate::runtime::now_ms();
    let mut out = Vec::new();
    for info in sessions(ctx) {
        let activity = info.activity.lock().clone();
        let Some(text) = activity.running_text() else { continue };
        out.push(request_row(ctx, &info, &activity, text, now_ms));
    }
    Ok(out)
}

fn request_row(
    ctx: &ExecCtx,
    info: &SessionInfo,
    activity: &crate::runtime::Activity,
    text: &str,
    now_ms: i64,
) -> [Value; 61] {
    let waits = &info.waits;
    let current = waits.current();
    let elapsed_ms = (now_ms - activity.start_ms).max(0);
    let progress = waits.request_progress();
    let remaining_ms = match progress {
        Some(f) if f > 0.0 => (elapsed_ms as f64 * (1.0 - f) / f) as i64,
        _ => 0,
    };
    let cpu_ms = waits.request_cpu().map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let plan_handle = ctx.shared.plans.handle_of(text).map(|h| Value::Binary(Arc::from(&h.to_be_bytes()[..])));
    let set = &activity.settings;
    let wait_ms = current.map_or(0, |w| i64::try_from(w.since.elapsed().as_millis()).unwrap_or(i64::MAX));
    let resource = current.map_or(String::new(), |w| {
        wait_resource(w.resource, |id| {
            let database = ctx.shared.engine.entry_by_id(id).and_then(|e| ctx.shared.engine.database_if_open(&e.name));
            database.map(|d| Trees::of(ctx, &d)).unwrap_or_default()
        })
    });
    let ms = |v: i64| int(v.min(i64::from(i32::MAX)));
    let count = |v: u64| int(i64::try_from(v).unwrap_or(i64::MAX));
    let (physical_reads, logical_reads, rows) = waits.request_work();
    [
        int(i64::from(info.spid)),
        int(0),
        datetime_ms(activity.start_ms),
        s(if current.is_some() { "suspended" } else { "running" }),
        s(&command(text)),
        Value::Binary(Arc::from(&sql_handle(text)[..])),
        int(0),
        int(-1),
        plan_handle.unwrap_or(Value::Null),
        int(database_id(ctx, &activity.database)),
        int(user_id(ctx, &info.login, &activity.database)),
        Value::Null,
        int(current.map_or(0, |w| i64::from(w.blocker))),
        current.map_or(Value::Null, |w| s(w.kind.name())),
        ms(wait_ms),
        s(waits.last().map_or("MISCELLANEOUS", |k| k.name())),
        s(&resource),
        int(i64::from(activity.open_transactions)),
        int(1),
        int(info.transaction.lock().as_ref().map_or(0, |t| i64::try_from(t.id).unwrap_or(0))),
        Value::Null,
        Value::Float(progress.map_or(0.0, |f| (f * 100.0) as f32 as f64)),
        int(remaining_ms),
        ms(cpu_ms),
        ms(elapsed_ms),
        Value::Null,
        Value::Null,
        count(physical_reads),
        int(0),
        count(logical_reads),
        int(set.text_size),
        s(&set.language),
        s(&set.date_format),
        int(set.date_first),
        bit(set.quoted_identifier),
        bit(set.arithabort),
        bit(set.ansi_null_dflt_on),
        bit(false),
        bit(set.ansi_warnings),
        bit(set.ansi_padding),
        bit(set.ansi_nulls),
        bit(set.concat_null_yields_null),
        int(i64::from(set.isolation_level)),
        int(set.lock_timeout),
        int(0),
        count(rows),
        int(0),
        int(0),
        int(0),
        bit(false),
        int(i64::from(info.group_id)),
        Value::Null,
        Value::Null,
        Value::Null,
        Value::Null,
        int(1),
        Value::Null,
        Value::Null,
        bit(false),
        Value::Null,
        int(0),
    ]
}

/// `sys.dm_exec_sql_text(handle)`: the text of a running request or a cached batch
/// whose `sql_handle` is `handle` (a `plan_handle` of the plan cache finds its batch too);
/// no row for a handle no longer known.
pub(super) static SQL_TEXT: FunctionDef<5> = FunctionDef {
    name: "dm_exec_sql_text",
    columns: [
        col("dbid", SmallInt, true),
        col("objectid", Int, true),
        col("number", SmallInt, true),
        col("encrypted", Bit, false),
        col("text", NVARCHAR_MAX, true),
    ],
    rows: |ctx, _db, args| {
        let Some(Value::Binary(handle)) = args.first() else { return Ok(Vec::new()) };
        let row = |dbid: Value, text: &str| [dbid, Value::Null, Value::Null, bit(false), s(text)];
        for info in sessions(ctx) {
            let activity = info.activity.lock().clone();
            if let Some(text) = activity.running_text().filter(|t| sql_handle(t)[..] == handle[..]) {
                return Ok(vec![row(int(database_id(ctx, &activity.database)), text)]);
            }
        }
        let by_plan = <[u8; 8]>::try_from(&handle[..]).ok().map(u64::from_be_bytes);
        Ok(ctx
            .shared
            .plans
            .entries()
            .into_iter()
            .find(|e| Some(e.handle) == by_plan || sql_handle(&e.text)[..] == handle[..])
            .map(|e| vec![row(Value::Null, &e.text)])
            .unwrap_or_default())
    },
};

/// `sys.dm_exec_input_buffer(session_id, request_id)`: the last request a session sent
/// (running or not): a batch (`Language Event`) or an RPC (`RPC Event`). The caller's own
/// session, or any with VIEW SERVER STATE (SQL Server's rule); nothing for others.
pub(super) static INPUT_BUFFER: FunctionDef<3> = FunctionDef {
    name: "dm_exec_input_buffer",
    columns: [
        col("event_type", NVarChar(256), true),
        col("parameters", SmallInt, true),
        col("event_info", NVARCHAR_MAX, true),
    ],
    rows: |ctx, _db, args| {
        let Some(Value::Int(spid)) = args.first() else { return Ok(Vec::new()) };
        Ok(input_buffer(ctx, *spid).map(|row| vec![row]).unwrap_or_default())
    },
};

/// The row of `sys.dm_exec_input_buffer` (and DBCC INPUTBUFFER) for session `spid`.
pub fn input_buffer(ctx: &ExecCtx, spid: i64) -> Option<[Value; 3]> {
    let info = sessions(ctx).into_iter().find(|i| i64::from(i.spid) == spid)?;
    let activity = info.activity.lock().clone();
    // An RPC's text is a comment naming its parameters' types, then the call.
    match activity.command.strip_prefix("-- rpc:") {
        Some(rpc) => Some([s("RPC Event"), int(0), s(rpc.split_once('\n').map_or("", |(_, call)| call))]),
        None => Some([s("Language Event"), int(0), s(&activity.command)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_named_as_sql_server_names_them() {
        assert_eq!(command("  select 1"), "SELECT");
        assert_eq!(command("-- note\nwaitfor delay '0:0:1'"), "WAITFOR");
        assert_eq!(command("backup database d to disk = 'x'"), "BACKUP DATABASE");
        assert_eq!(command("RESTORE LOG d FROM DISK = 'x'"), "RESTORE LOG");
        assert_eq!(command("exec sp_who"), "EXECUTE");
        assert_eq!(command(""), "");
    }

    #[test]
    fn a_text_has_one_handle_and_two_texts_two() {
        assert_eq!(sql_handle("select 1"), sql_handle("select 1"));
        assert_ne!(sql_handle("select 1"), sql_handle("select 2"));
        assert_eq!(sql_handle("select 1")[0], 0x02);
    }

    #[test]
    fn milliseconds_land_on_datetime_s_grid() {
        let Value::DateTime { days, ticks } = datetime_ms(1_000_010) else { panic!() };
        assert_eq!(days, 719_162, "1970-01-01");
        assert_eq!(ticks, 1_000 * 10_000_000 + tessera_types::ticks_from_t300(3));
    }
}
