//! sys.databases, and the files of databases: sys.database_files (the database read in)
//! and sys.master_files (every database). All from the registry: nothing is opened.

use super::{bit, col, datetime, int, s, Rows, ViewDef, COLLATION, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_database::{DatabaseEntry, EngineConfig, Growth};
use tessera_semantics::plan::Col;
use tessera_semantics::types::SqlType::*;
use tessera_semantics::types::Value;

pub(super) static DATABASES: ViewDef<20> = ViewDef {
    schema: "sys",
    name: "databases",
    columns: [
        col("name", SYSNAME, false),
        col("database_id", Int, false),
        col("create_date", DateTime, false),
        col("compatibility_level", TinyInt, false),
        col("collation_name", SYSNAME, true),
        col("user_access_desc", NVarChar(60), true),
        col("is_read_only", Bit, true),
        col("state", TinyInt, true),
        col("state_desc", NVarChar(60), true),
        col("snapshot_isolation_state", TinyInt, true),
        col("snapshot_isolation_state_desc", NVarChar(60), true),
        col("is_read_committed_snapshot_on", Bit, true),
        col("recovery_model", TinyInt, true),
        col("recovery_model_desc", NVarChar(60), true),
        col("log_reuse_wait_desc", NVarChar(60), true),
        col("delayed_durability", Int, true),
        col("delayed_durability_desc", NVarChar(60), true),
        col("owner_sid", VarBinary(85), true),
        col("is_db_chaining_on", Bit, true),
        col("is_recursive_triggers_on", Bit, true),
    ],
    rows: databases,
};

/// Every database the session may see, from the registry: none is opened to be listed (a
/// closed one's log waits for nothing).
fn databases(ctx: &ExecCtx, _db: &str) -> Rows<20> {
    let mut out = Vec::new();
    for d in ctx.shared.visible_databases(ctx.session) {
        let o = &d.options;
        let model = o.recovery_model;
        let dd = o.delayed_durability.name();
        let dd_id = match dd {
            "DISABLED" => 0,
            "ALLOWED" => 1,
            _ => 2,
        };
        let (state, state_desc) = ctx.shared.database_state(&d);
        let reuse_wait = ctx.shared.engine.database_if_open(&d.name).map(|db| db.wal().reuse_wait());
        out.push([
            s(&d.name),
            int(i64::from(d.id)),
            datetime(0),
            int(160),
            s(COLLATION),
            s("MULTI_USER"),
            bit(false),
            int(state),
            s(state_desc),
            int(if o.allow_snapshot_isolation { 1 } else { 0 }),
            s(if o.allow_snapshot_isolation { "ON" } else { "OFF" }),
            bit(o.read_committed_snapshot),
            int(recovery_model_id(model.name())),
            s(model.name()),
            s(reuse_wait.unwrap_or("NOTHING")),
            int(dd_id),
            s(dd),
            Value::Binary(d.options.owner_sid.clone().unwrap_or_else(|| vec![1]).into()),
            bit(o.db_chaining),
            bit(o.recursive_triggers),
        ]);
    }
    Ok(out)
}

/// `sys.dm_tessera_databases` (a tessera extension): every database with whether it is
/// open, what it holds in memory, its share of the plan cache and when it was last used.
pub(super) static TESSERA_DATABASES: ViewDef<11> = ViewDef {
    schema: "sys",
    name: "dm_tessera_databases",
    columns: [
        col("database_id", Int, false),
        col("name", SYSNAME, false),
        col("state_desc", NVarChar(60), false),
        col("is_open", Bit, false),
        col("last_used", DateTime, true),
        col("idle_seconds", BigInt, true),
        col("catalog_kb", BigInt, false),
        col("buffer_pool_kb", BigInt, false),
        col("cached_plans", Int, false),
        col("plan_cache_kb", BigInt, false),
        col("file_size_kb", BigInt, false),
    ],
    rows: tessera_databases,
};

/// Reads the registry, the open databases, the loaded catalogs, the buffer pool and the
/// plan cache; opens nothing.
fn tessera_databases(ctx: &ExecCtx, _db: &str) -> Rows<11> {
    super::server_state(ctx)?;
    let shared = &ctx.shared;
    let engine = &shared.engine;
    let mut pages: std::collections::HashMap<u32, i64> = std::collections::HashMap::new();
    for d in engine.buffer_descriptors() {
        *pages.entry(d.database_id).or_default() += 1;
    }
    let plans = shared.plans.database_shares();
    let now = std::time::SystemTime::now();
    let mut out = Vec::new();
    for d in engine.entries() {
        let is_open = engine.database_if_open(&d.name).is_some();
        let last_used = engine.last_used(&d.name);
        let since_epoch = |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).ok();
        let share = plans.get(&d.id).copied().unwrap_or_default();
        let (data_bytes, log_bytes) = d.file_bytes();
        let kb = |b: u64| int(i64::try_from(b / 1024).unwrap_or(i64::MAX));
        out.push([
            int(i64::from(d.id)),
            s(&d.name),
            s(d.state.name()),
            bit(is_open),
            last_used.and_then(since_epoch).map_or(Value::Null, |t| datetime(t.as_secs() as i64)),
            last_used
                .filter(|_| is_open)
                .and_then(|t| now.duration_since(t).ok())
                .map_or(Value::Null, |idle| int(idle.as_secs() as i64)),
            // Rounded up: a loaded catalog never shows as 0 KB.
            kb(shared.loaded_catalog(&d.name).map_or(0, |c| c.approx_bytes() as u64).div_ceil(1024) * 1024),
            int(pages.get(&d.id).copied().unwrap_or(0) * 8),
            int(share.entries as i64),
            kb(share.bytes as u64),
            kb(data_bytes + log_bytes),
        ]);
    }
    Ok(out)
}

/// `sys.dm_tran_version_store_space_usage`: the row versions each database keeps for
/// snapshots (in memory: see `tessera_access::versions`), as pages of 8 KiB and KB. A
/// database is listed while it keeps versions or still holds some.
pub(super) static VERSION_STORE_SPACE_USAGE: ViewDef<3> = ViewDef {
    schema: "sys",
    name: "dm_tran_version_store_space_usage",
    columns: [
        col("database_id", Int, false),
        col("reserved_page_count", BigInt, false),
        col("reserved_space_kb", BigInt, false),
    ],
    rows: version_store_space_usage,
};

fn version_store_space_usage(ctx: &ExecCtx, _db: &str) -> Rows<3> {
    super::server_state(ctx)?;
    let mut out = Vec::new();
    ctx.shared.engine.for_each_open(|db| {
        let usage = db.version_usage();
        if usage.versions != 0 || db.versioning() != tessera_database::Versioning::Off {
            let pages = usage.bytes.div_ceil(tessera_database::PAGE_SIZE as u64);
            out.push([int(i64::from(db.id())), int(pages as i64), int((pages * 8) as i64)]);
        }
    });
    Ok(out)
}

/// `sys.dm_tran_active_snapshot_database_transactions`: the snapshots held in every open
/// database — SNAPSHOT transactions (`is_snapshot` 1) and READ COMMITTED SNAPSHOT
/// statements (0). Version chains are not measured (their columns are 0).
pub(super) static ACTIVE_SNAPSHOT_TRANSACTIONS: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "dm_tran_active_snapshot_database_transactions",
    columns: [
        col("transaction_id", BigInt, false),
        col("transaction_sequence_num", BigInt, false),
        col("commit_sequence_num", BigInt, true),
        col("session_id", Int, false),
        col("is_snapshot", Bit, false),
        col("first_snapshot_sequence_num", BigInt, false),
        col("max_version_chain_traversed", Int, true),
        col("average_version_chain_traversed", Real, true),
        col("elapsed_time_seconds", BigInt, false),
    ],
    rows: active_snapshot_transactions,
};

fn active_snapshot_transactions(ctx: &ExecCtx, _db: &str) -> Rows<9> {
    super::server_state(ctx)?;
    let mut out = Vec::new();
    ctx.shared.engine.for_each_open(|db| {
        for h in db.held_snapshots() {
            out.push([
                int(h.txn as i64),
                int(h.csn as i64),
                Value::Null,
                int(i64::from(h.owner)),
                bit(!h.statement),
                int(h.csn as i64),
                int(0),
                Value::Float(0.0),
                int((h.held_ms / 1000) as i64),
            ]);
        }
    });
    Ok(out)
}

/// sys.databases.recovery_model from its description.
fn recovery_model_id(name: &str) -> i64 {
    match name {
        "FULL" => 1,
        "BULK_LOGGED" => 2,
        _ => 3,
    }
}

/// The columns of a database file, as both file views have them.
const FILE_COLUMNS: [Col; 10] = [
    col("file_id", Int, false),
    col("type", TinyInt, false),
    col("type_desc", NVarChar(60), true),
    col("name", SYSNAME, false),
    col("physical_name", NVarChar(260), false),
    col("state_desc", NVarChar(60), true),
    col("size", Int, false),
    col("max_size", Int, false),
    col("growth", Int, false),
    col("is_percent_growth", Bit, false),
];

/// sys.data_spaces' columns, which sys.filegroups starts with.
const DATA_SPACE_COLUMNS: [Col; 6] = [
    col("name", SYSNAME, false),
    col("data_space_id", Int, false),
    col("type", Char(2), false),
    col("type_desc", NVarChar(60), true),
    col("is_default", Bit, true),
    col("is_system", Bit, true),
];

/// A database's one filegroup, PRIMARY (every table and index is on it), as sys.data_spaces
/// shows it.
fn primary_data_space() -> [Value; 6] {
    [s("PRIMARY"), int(1), s("FG"), s("ROWS_FILEGROUP"), bit(true), bit(false)]
}

pub(super) static DATA_SPACES: ViewDef<6> = ViewDef {
    schema: "sys",
    name: "data_spaces",
    columns: DATA_SPACE_COLUMNS,
    rows: |_, _| Ok(vec![primary_data_space()]),
};

pub(super) static FILEGROUPS: ViewDef<10> = ViewDef {
    schema: "sys",
    name: "filegroups",
    columns: super::concat_columns(
        DATA_SPACE_COLUMNS,
        [
            col("filegroup_guid", UniqueIdentifier, true),
            col("log_filegroup_id", Int, true),
            col("is_read_only", Bit, true),
            col("is_autogrow_all_files", Bit, true),
        ],
    ),
    rows: |_, _| Ok(vec![super::concat(primary_data_space(), [Value::Null, Value::Null, bit(false), bit(false)])]),
};

pub(super) static DATABASE_FILES: ViewDef<10> =
    ViewDef { schema: "sys", name: "database_files", columns: FILE_COLUMNS, rows: database_files };

pub(super) static MASTER_FILES: ViewDef<11> =
    ViewDef { schema: "sys", name: "master_files", columns: with_database_id(FILE_COLUMNS), rows: master_files };

/// `database_id`, then the file columns.
const fn with_database_id(files: [Col; 10]) -> [Col; 11] {
    let mut out = [col("database_id", Int, false); 11];
    let mut i = 0;
    while i < 10 {
        out[i + 1] = files[i];
        i += 1;
    }
    out
}

/// A database's two files as the file views show them: file id, type, logical name,
/// path, state, then size, maximum and growth in 8 KiB pages (max -1: unlimited; growth
/// a percentage when the last value is true).
fn files_of(d: &DatabaseEntry, ctx: &ExecCtx) -> [[Value; 10]; 2] {
    let engine = ctx.shared.engine.config();
    let (data_bytes, log_bytes) = d.file_bytes();
    let pages = |b: u64| int(i64::try_from(b / 8192).unwrap_or(i64::MAX));
    let max = |m: Option<u64>| m.map_or(int(-1), pages);
    let growth = |kind: FileKind| match growth_in_force(d, kind, engine) {
        Growth::Percent(p) => [int(i64::from(p)), bit(true)],
        Growth::Bytes(b) => [pages(b), bit(false)],
    };
    let state = s(d.state.name());
    let o = &d.options;
    let [dg, dp] = growth(FileKind::Data);
    let [lg, lp] = growth(FileKind::Log);
    [
        [
            int(1),
            int(0),
            s("ROWS"),
            s(&d.name),
            s(&d.data_path.display().to_string()),
            state.clone(),
            pages(data_bytes),
            max(o.max_data_size),
            dg,
            dp,
        ],
        [
            int(2),
            int(1),
            s("LOG"),
            s(&format!("{}_log", d.name)),
            s(&d.log_path.display().to_string()),
            state,
            pages(log_bytes),
            max(o.max_log_size),
            lg,
            lp,
        ],
    ]
}

fn database_files(ctx: &ExecCtx, db: &str) -> Rows<10> {
    Ok(ctx.shared.engine.entry(db).map(|d| files_of(&d, ctx).to_vec()).unwrap_or_default())
}

fn master_files(ctx: &ExecCtx, _db: &str) -> Rows<11> {
    let mut out = Vec::new();
    for d in ctx.shared.visible_databases(ctx.session) {
        for f in files_of(&d, ctx) {
            out.push(super::concat([int(i64::from(d.id))], f));
        }
    }
    Ok(out)
}

/// Which of a database's two files.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Data,
    Log,
}

/// How a database's file grows: its own setting, else the engine's, else what the
/// engine does without one — a data file by an eighth of its size (shown as 12 %), a log
/// by a quarter.
pub fn growth_in_force(entry: &DatabaseEntry, kind: FileKind, engine: &EngineConfig) -> Growth {
    match kind {
        FileKind::Data => entry.options.data_growth.or(engine.data.growth).unwrap_or(Growth::Percent(12)),
        FileKind::Log => entry.options.log_growth.or(engine.log.growth).unwrap_or(Growth::Percent(25)),
    }
}
