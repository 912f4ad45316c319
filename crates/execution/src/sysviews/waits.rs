//! Waits: sys.dm_os_wait_stats (the process's, by wait type) and
//! sys.dm_exec_session_wait_stats (each session's), from `tessera_waits`. The wait types
//! tessera records, and what each means, are `tessera_waits::WaitType` (docs/waits.md).

use super::{col, int, s, Rows, ViewDef};
use crate::runtime::ExecCtx;
use tessera_semantics::types::SqlType::*;
use tessera_waits::{WaitFigures, WaitType};

/// A wait type's counters as SQL Server's views show them (milliseconds; signal waits
/// are the time between being woken and running again, which tessera's threads do not
/// queue for: 0).
fn figures(f: WaitFigures) -> [tessera_semantics::types::Value; 4] {
    let ms = |us: u64| int(i64::try_from(us / 1000).unwrap_or(i64::MAX));
    [int(i64::try_from(f.waits).unwrap_or(i64::MAX)), ms(f.total_us), ms(f.longest_us), int(0)]
}

pub(super) static OS_WAIT_STATS: ViewDef<5> = ViewDef {
    schema: "sys",
    name: "dm_os_wait_stats",
    columns: [
        col("wait_type", NVarChar(60), false),
        col("waiting_tasks_count", BigInt, false),
        col("wait_time_ms", BigInt, false),
        col("max_wait_time_ms", BigInt, false),
        col("signal_wait_time_ms", BigInt, false),
    ],
    rows: os_wait_stats,
};

/// Every wait type, waited for or not (as SQL Server lists them), since the process
/// started or the counters were last cleared.
fn os_wait_stats(ctx: &ExecCtx, _db: &str) -> Rows<5> {
    super::server_state(ctx)?;
    Ok(tessera_waits::process().all().map(|(kind, f)| super::concat([s(kind.name())], figures(f))).collect())
}

pub(super) static EXEC_SESSION_WAIT_STATS: ViewDef<6> = ViewDef {
    schema: "sys",
    name: "dm_exec_session_wait_stats",
    columns: [
        col("session_id", SmallInt, false),
        col("wait_type", NVarChar(60), false),
        col("waiting_tasks_count", BigInt, false),
        col("wait_time_ms", BigInt, false),
        col("max_wait_time_ms", BigInt, false),
        col("signal_wait_time_ms", BigInt, false),
    ],
    rows: exec_session_wait_stats,
};

/// The wait types each session has waited for since it began (every session with VIEW
/// SERVER STATE, else the caller's own).
fn exec_session_wait_stats(ctx: &ExecCtx, _db: &str) -> Rows<6> {
    let mut rows = Vec::new();
    for info in super::dmv::sessions(ctx) {
        for &kind in WaitType::ALL {
            let f = info.waits.stats().figures(kind);
            if f.waits > 0 {
                rows.push(super::concat([int(i64::from(info.spid)), s(kind.name())], figures(f)));
            }
        }
    }
    Ok(rows)
}
