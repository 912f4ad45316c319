//! How indexes are used: sys.dm_db_index_usage_stats (runs of statements that sought,
//! scanned, looked rows up in or maintained each index), the function
//! sys.dm_db_index_operational_stats (the rows behind them), and the missing-index views
//! sys.dm_db_missing_index_details, dm_db_missing_index_groups and
//! dm_db_missing_index_group_stats (the indexes scans of whole tables wanted).
//!
//! The counts are kept in memory (`crate::index_usage`): a database's go when it closes,
//! as SQL Server's do, so only open databases have rows, and these views open none. Where
//! they are counted, and what is not kept (the columns always 0):
//! - usage: per run of a statement's plan (`exec::usage`), and per data change for
//!   `user_updates` (`dml`). The `system_*` columns are 0 and their times NULL: tessera
//!   runs no internal queries on user indexes (statistics, maintenance). Not counted: the
//!   reads of IF and WHILE conditions and of DECLARE or EXEC values (evaluated outside a
//!   plan), foreign key checks and cascades (not planned as statements).
//! - operational stats: leaf inserts, deletes and in-place updates of data changes (an
//!   index build or a table rebuilt by ALTER TABLE counts none), range and whole scans
//!   started, and single-row retrievals (point lookups and the key lookups of reads
//!   through a nonclustered index). tessera does not keep the others: ghosts (deletes
//!   remove their entries at once), page allocations, splits and merges, forwarded rows
//!   (heaps are keyed by row number), large-value and row-overflow fetches, lock and latch
//!   counts and waits (waits are counted by wait type for the process and per session, in
//!   sys.dm_os_wait_stats, not per index), lock escalation, page compression and row
//!   versions: they are 0.
//! - missing indexes: the optimizer notes the index a scan of a whole table wants when it
//!   compiles the plan (`ScanNode::wanted`); the suggestion is recorded when such a plan
//!   first runs in a database, and each run of it is a `user_seeks` (`unique_compiles`
//!   counts the compiled plans that ran). tessera has no cost model: `avg_total_user_cost` is NULL, and
//!   `avg_user_impact` comes from SQL Server's fixed selectivity guesses (see
//!   `WantedIndex`).

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::requests::datetime_ms;
use super::{col, int, s, server_state, FunctionDef, Rows, ViewDef};
use crate::index_usage::MissingGroup;
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{Catalog, IndexUsage, Object};
use tessera_semantics::types::{SqlType::*, Value};

/// A time the counters kept (see `index_usage::now`), NULL for never (0).
fn time(kept: &std::sync::atomic::AtomicI64) -> Value {
    match kept.load(Relaxed) {
        0 => Value::Null,
        t => datetime_ms(crate::index_usage::epoch_ms(t)),
    }
}

fn count(n: &std::sync::atomic::AtomicU64) -> Value {
    int(n.load(Relaxed) as i64)
}

/// Each open database with a catalog loaded (its id and its catalog), by id.
fn open_catalogs(ctx: &ExecCtx) -> Vec<(i64, Arc<Catalog>)> {
    let mut open = Vec::new();
    ctx.shared.engine.for_each_open(|d| open.push((i64::from(d.id()), d.name().to_string())));
    open.sort();
    open.into_iter().filter_map(|(id, name)| Some((id, ctx.shared.loaded_catalog(&name)?))).collect()
}

/// Every index of the tables of `catalog`: (object id, index id, its counters), by object
/// and index.
fn indexes(catalog: &Catalog) -> Vec<(i64, i64, Arc<IndexUsage>)> {
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for ix in &t.indexes {
            out.push((i64::from(t.id), i64::from(ix.id), ix.usage.clone()));
        }
    }
    out.sort_by_key(|(object, index, _)| (*object, *index));
    out
}

pub(super) static INDEX_USAGE_STATS: ViewDef<19> = ViewDef {
    schema: "sys",
    name: "dm_db_index_usage_stats",
    columns: [
        col("database_id", SmallInt, false),
        col("object_id", Int, false),
        col("index_id", Int, false),
        col("user_seeks", BigInt, false),
        col("user_scans", BigInt, false),
        col("user_lookups", BigInt, false),
        col("user_updates", BigInt, false),
        col("last_user_seek", DateTime, true),
        col("last_user_scan", DateTime, true),
        col("last_user_lookup", DateTime, true),
        col("last_user_update", DateTime, true),
        col("system_seeks", BigInt, false),
        col("system_scans", BigInt, false),
        col("system_lookups", BigInt, false),
        col("system_updates", BigInt, false),
        col("last_system_seek", DateTime, true),
        col("last_system_scan", DateTime, true),
        col("last_system_lookup", DateTime, true),
        col("last_system_update", DateTime, true),
    ],
    rows: index_usage_stats,
};

/// A row for each index of an open database that a statement used since the database
/// opened (SQL Server lists no others). Needs VIEW SERVER STATE.
fn index_usage_stats(ctx: &ExecCtx, _db: &str) -> Rows<19> {
    server_state(ctx)?;
    let mut rows = Vec::new();
    for (db_id, catalog) in open_catalogs(ctx) {
        for (object, index, u) in indexes(&catalog) {
            let runs = [&u.seeks, &u.scans, &u.lookups, &u.updates].map(|c| c.load(Relaxed));
            if runs == [0; 4] {
                continue;
            }
            rows.push([
                int(db_id),
                int(object),
                int(index),
                int(runs[0] as i64),
                int(runs[1] as i64),
                int(runs[2] as i64),
                int(runs[3] as i64),
                time(&u.last_seek),
                time(&u.last_scan),
                time(&u.last_lookup),
                time(&u.last_update),
                int(0),
                int(0),
                int(0),
                int(0),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            ]);
        }
    }
    Ok(rows)
}

/// sys.dm_db_index_operational_stats' columns (SQL Server 2019's), in order.
const OPERATIONAL_COLUMNS: [&str; 46] = [
    "leaf_insert_count",
    "leaf_delete_count",
    "leaf_update_count",
    "leaf_ghost_count",
    "nonleaf_insert_count",
    "nonleaf_delete_count",
    "nonleaf_update_count",
    "leaf_allocation_count",
    "nonleaf_allocation_count",
    "leaf_page_merge_count",
    "nonleaf_page_merge_count",
    "range_scan_count",
    "singleton_lookup_count",
    "forwarded_fetch_count",
    "lob_fetch_in_pages",
    "lob_fetch_in_bytes",
    "lob_orphan_create_count",
    "lob_orphan_insert_count",
    "row_overflow_fetch_in_pages",
    "row_overflow_fetch_in_bytes",
    "column_value_push_off_row_count",
    "column_value_pull_in_row_count",
    "row_lock_count",
    "row_lock_wait_count",
    "row_lock_wait_in_ms",
    "page_lock_count",
    "page_lock_wait_count",
    "page_lock_wait_in_ms",
    "index_lock_promotion_attempt_count",
    "index_lock_promotion_count",
    "page_latch_wait_count",
    "page_latch_wait_in_ms",
    "page_io_latch_wait_count",
    "page_io_latch_wait_in_ms",
    "tree_page_latch_wait_count",
    "tree_page_latch_wait_in_ms",
    "tree_page_io_latch_wait_count",
    "tree_page_io_latch_wait_in_ms",
    "page_compression_attempt_count",
    "page_compression_success_count",
    "version_generated_inrow",
    "version_generated_offrow",
    "ghost_version_inrow",
    "ghost_version_offrow",
    "insert_over_ghost_version_inrow",
    "insert_over_ghost_version_offrow",
];

/// The identifying columns, then a bigint counter per [`OPERATIONAL_COLUMNS`].
const fn operational_columns() -> [tessera_semantics::plan::Col; 51] {
    let mut out = [col("", BigInt, false); 51];
    out[0] = col("database_id", SmallInt, false);
    out[1] = col("object_id", Int, false);
    out[2] = col("index_id", Int, false);
    out[3] = col("partition_number", Int, false);
    out[4] = col("hobt_id", BigInt, true);
    let mut i = 0;
    while i < OPERATIONAL_COLUMNS.len() {
        out[5 + i] = col(OPERATIONAL_COLUMNS[i], BigInt, false);
        i += 1;
    }
    out
}

/// `sys.dm_db_index_operational_stats(database_id, object_id, index_id,
/// partition_number)`: a row per index of the open databases' tables (one partition
/// each), NULL or 0 (and -1 for the index) standing for all. Needs VIEW SERVER STATE, or
/// for one database VIEW DATABASE STATE there.
pub(super) static INDEX_OPERATIONAL_STATS: FunctionDef<51> =
    FunctionDef { name: "dm_db_index_operational_stats", columns: operational_columns(), rows: operational_stats };

fn operational_stats(ctx: &ExecCtx, _db: &str, args: &[Value]) -> Rows<51> {
    // An argument that picks one: a number other than the ones meaning all.
    let pick = |i: usize, all: &[i64]| match args.get(i) {
        Some(Value::Int(n)) if !all.contains(n) => Some(*n),
        _ => None,
    };
    let (database, object, index, partition) = (pick(0, &[0]), pick(1, &[0]), pick(2, &[-1]), pick(3, &[0]));
    let catalogs = match database {
        None => {
            server_state(ctx)?;
            open_catalogs(ctx)
        }
        Some(id) => {
            let Some(entry) = u32::try_from(id).ok().and_then(|id| ctx.shared.engine.entry_by_id(id)) else {
                return Ok(Vec::new());
            };
            if server_state(ctx).is_err() {
                super::space_usage::database_state(ctx, &entry.name)?;
            }
            ctx.shared.loaded_catalog(&entry.name).map(|c| vec![(id, c)]).unwrap_or_default()
        }
    };
    if partition.is_some_and(|p| p != 1) {
        return Ok(Vec::new());
    }
    let mut rows = Vec::new();
    for (db_id, catalog) in catalogs {
        for (object_id, index_id, u) in indexes(&catalog) {
            if object.is_some_and(|o| o != object_id) || index.is_some_and(|i| i != index_id) {
                continue;
            }
            let mut row: [Value; 51] = std::array::from_fn(|_| int(0));
            row[..5].clone_from_slice(&[int(db_id), int(object_id), int(index_id), int(1), Value::Null]);
            let kept = [
                ("leaf_insert_count", &u.leaf_inserts),
                ("leaf_delete_count", &u.leaf_deletes),
                ("leaf_update_count", &u.leaf_updates),
                ("range_scan_count", &u.range_scans),
                ("singleton_lookup_count", &u.singleton_lookups),
            ];
            for (name, n) in kept {
                let at = OPERATIONAL_COLUMNS.iter().position(|c| *c == name).expect("a column");
                row[5 + at] = count(n);
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

pub(super) static MISSING_INDEX_DETAILS: ViewDef<7> = ViewDef {
    schema: "sys",
    name: "dm_db_missing_index_details",
    columns: [
        col("index_handle", Int, false),
        col("database_id", SmallInt, false),
        col("object_id", Int, false),
        col("equality_columns", NVarChar(4000), true),
        col("inequality_columns", NVarChar(4000), true),
        col("included_columns", NVarChar(4000), true),
        col("statement", NVarChar(4000), true),
    ],
    rows: missing_index_details,
};

pub(super) static MISSING_INDEX_GROUPS: ViewDef<2> = ViewDef {
    schema: "sys",
    name: "dm_db_missing_index_groups",
    columns: [col("index_group_handle", Int, false), col("index_handle", Int, false)],
    rows: |ctx, _| {
        Ok(missing_groups(ctx)?
            .into_iter()
            .map(|(g, _)| [int(g.group_handle.into()), int(g.index_handle.into())])
            .collect())
    },
};

pub(super) static MISSING_INDEX_GROUP_STATS: ViewDef<14> = ViewDef {
    schema: "sys",
    name: "dm_db_missing_index_group_stats",
    columns: [
        col("group_handle", Int, false),
        col("unique_compiles", BigInt, false),
        col("user_seeks", BigInt, false),
        col("user_scans", BigInt, false),
        col("last_user_seek", DateTime, true),
        col("last_user_scan", DateTime, true),
        col("avg_total_user_cost", Float, true),
        col("avg_user_impact", Float, true),
        col("system_seeks", BigInt, false),
        col("system_scans", BigInt, false),
        col("last_system_seek", DateTime, true),
        col("last_system_scan", DateTime, true),
        col("avg_total_system_cost", Float, true),
        col("avg_system_impact", Float, true),
    ],
    rows: missing_index_group_stats,
};

/// The current missing-index groups (those of tables whose definitions changed, or of
/// databases that closed, are dropped now) with their databases' ids. Needs VIEW SERVER
/// STATE.
fn missing_groups(ctx: &ExecCtx) -> SqlResult<Vec<(Arc<MissingGroup>, i64)>> {
    server_state(ctx)?;
    let mut ids = HashMap::new();
    ctx.shared.engine.for_each_open(|d| {
        ids.insert(d.name().to_lowercase(), i64::from(d.id()));
    });
    let groups = ctx.shared.missing_indexes.current(|g| g.is_current(ctx.shared.loaded_catalog(&g.database)));
    Ok(groups.into_iter().filter_map(|g| Some((g.clone(), *ids.get(&g.database.to_lowercase())?))).collect())
}

fn missing_index_details(ctx: &ExecCtx, _db: &str) -> Rows<7> {
    let text = |t: &Option<String>| t.as_deref().map_or(Value::Null, s);
    Ok(missing_groups(ctx)?
        .into_iter()
        .map(|(g, db_id)| {
            [
                int(g.index_handle.into()),
                int(db_id),
                int(g.object_id.into()),
                text(&g.equality),
                text(&g.inequality),
                text(&g.included),
                s(&g.statement),
            ]
        })
        .collect())
}

fn missing_index_group_stats(ctx: &ExecCtx, _db: &str) -> Rows<14> {
    Ok(missing_groups(ctx)?
        .into_iter()
        .map(|(g, _)| {
            [
                int(g.group_handle.into()),
                count(&g.compiles),
                count(&g.seeks),
                int(0),
                time(&g.last_seek),
                Value::Null,
                Value::Null,
                Value::Float(g.impact),
                int(0),
                int(0),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            ]
        })
        .collect())
}
