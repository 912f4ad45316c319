//! Space: sys.dm_db_log_space_usage and sys.dm_db_file_space_usage (the database read
//! in), and the rows of DBCC SQLPERF(LOGSPACE) (every open database).
//!
//! A log's used space is what lies between its truncation point and its end: what
//! recovery or a rollback still needs, and under FULL and BULK_LOGGED recovery what the
//! next log backup will carry (SQL Server's `log_space_in_bytes_since_last_backup` is
//! that part: tessera reports the same bytes in both columns).

use super::{col, int, Rows, ViewDef};
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::types::{SqlType::*, Value};

/// The per-database DMVs need VIEW DATABASE STATE in their database (held by its owner
/// and by sysadmins), else SQL Server's 300 and 297.
pub(super) fn database_state(ctx: &ExecCtx, db: &str) -> SqlResult<()> {
    use tessera_security::principals::check::{allowed, On};
    let (security, token) = ctx.shared.access(ctx.session, db)?;
    if token.unrestricted || allowed(&security, &token, "VIEW DATABASE STATE", On::Database) {
        return Ok(());
    }
    let denied = tessera_errors::msg::SERVER_PERMISSION_DENIED.with(&[&"VIEW DATABASE STATE", &"database", &db]);
    Err(tessera_errors::msg::ACTION_PERMISSION_DENIED.err().after(denied))
}

pub(super) static DB_LOG_SPACE_USAGE: ViewDef<5> = ViewDef {
    schema: "sys",
    name: "dm_db_log_space_usage",
    columns: [
        col("database_id", SmallInt, true),
        col("total_log_size_in_bytes", BigInt, true),
        col("used_log_space_in_bytes", BigInt, true),
        col("used_log_space_in_percent", Real, true),
        col("log_space_in_bytes_since_last_backup", BigInt, true),
    ],
    rows: db_log_space_usage,
};

fn db_log_space_usage(ctx: &ExecCtx, db: &str) -> Rows<5> {
    database_state(ctx, db)?;
    let database = ctx.shared.database(db)?;
    let log = database.log_stats();
    let used = i64::try_from(log.used_bytes).unwrap_or(i64::MAX);
    Ok(vec![[
        int(i64::from(database.id())),
        int(i64::try_from(log.file_size).unwrap_or(i64::MAX)),
        int(used),
        Value::Float(f64::from(percent(log.used_bytes, log.file_size))),
        int(used),
    ]])
}

/// `part` of `whole` in percent, as a `real`.
fn percent(part: u64, whole: u64) -> f32 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 100.0 / whole as f64) as f32
    }
}

pub(super) static DB_FILE_SPACE_USAGE: ViewDef<11> = ViewDef {
    schema: "sys",
    name: "dm_db_file_space_usage",
    columns: [
        col("database_id", SmallInt, true),
        col("file_id", SmallInt, true),
        col("filegroup_id", SmallInt, true),
        col("total_page_count", BigInt, true),
        col("allocated_extent_page_count", BigInt, true),
        col("unallocated_extent_page_count", BigInt, true),
        col("version_store_reserved_page_count", BigInt, true),
        col("user_object_reserved_page_count", BigInt, true),
        col("internal_object_reserved_page_count", BigInt, true),
        col("mixed_extent_page_count", BigInt, true),
        col("modified_extent_page_count", BigInt, true),
    ],
    rows: db_file_space_usage,
};

/// The data file (file 1) of the database read in: its pages, those the allocation maps
/// mark in use (tessera allocates pages, not extents: its counts are pages), and the
/// pages changed since the last full backup (what a differential backup would read).
/// Row versions live in memory, not in pages: none reserved.
fn db_file_space_usage(ctx: &ExecCtx, db: &str) -> Rows<11> {
    database_state(ctx, db)?;
    let database = ctx.shared.database(db)?;
    let (total, allocated) = database.data_file_pages()?;
    let count = |n: u64| int(i64::try_from(n).unwrap_or(i64::MAX));
    let changed = database.changed_page_count().map_or(Value::Null, count);
    Ok(vec![[
        int(i64::from(database.id())),
        int(1),
        int(1),
        count(total),
        count(allocated),
        count(total.saturating_sub(allocated)),
        int(0),
        count(allocated),
        int(0),
        int(0),
        changed,
    ]])
}

/// One row of DBCC SQLPERF(LOGSPACE): database name, log size in MB, percent used,
/// status (0).
pub struct LogSpace {
    pub database: String,
    pub size_mb: f32,
    pub used_percent: f32,
}

/// DBCC SQLPERF(LOGSPACE)'s rows: every open database the session may see, by name
/// (a closed database is not opened to be measured: it was checkpointed as it closed).
pub fn log_space(ctx: &ExecCtx) -> Vec<LogSpace> {
    let mut databases = Vec::new();
    ctx.shared.engine.for_each_open(|d| databases.push(d.clone()));
    databases.sort_by(|a, b| a.name().cmp(b.name()));
    databases
        .into_iter()
        .map(|d| {
            let log = d.log_stats();
            LogSpace {
                database: d.name().to_string(),
                size_mb: (log.file_size as f64 / (1 << 20) as f64) as f32,
                used_percent: percent(log.used_bytes, log.file_size),
            }
        })
        .collect()
}
