//! Resource Governor's views: `sys.resource_governor_*` show the stored configuration,
//! `sys.dm_resource_governor_*` the one in force and its use (`tessera_governance::resource_governor`).
//! All need VIEW SERVER STATE (297/300).

use tessera_semantics::types::SqlType::{BigInt, Bit, Int};
use tessera_semantics::types::Value;

use super::{bit, col, datetime, int, s, Rows, ViewDef, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_governance::resource_governor::{Classifier, Group, Pool};

/// OBJECT_ID of the classifier function in master (0: none).
fn classifier_id(ctx: &ExecCtx, classifier: Option<&Classifier>) -> Value {
    let id = classifier.and_then(|c| {
        let master = ctx.shared.catalog_named("master").ok()?;
        master.catalog.module(&c.schema, &c.name).map(|m| m.id)
    });
    int(i64::from(id.unwrap_or(0)))
}

pub(super) static CONFIGURATION: ViewDef<3> = ViewDef {
    schema: "sys",
    name: "resource_governor_configuration",
    columns: [
        col("classifier_function_id", Int, false),
        col("is_enabled", Bit, false),
        col("max_outstanding_io_per_volume", Int, false),
    ],
    rows: configuration,
};

fn configuration(ctx: &ExecCtx, _db: &str) -> Rows<3> {
    super::server_state(ctx)?;
    let stored = ctx.shared.resource_governor.stored();
    Ok(vec![[classifier_id(ctx, stored.classifier.as_ref()), bit(stored.enabled), int(0)]])
}

pub(super) static DM_CONFIGURATION: ViewDef<3> = ViewDef {
    schema: "sys",
    name: "dm_resource_governor_configuration",
    columns: [
        col("classifier_function_id", Int, false),
        col("is_reconfiguration_pending", Bit, false),
        col("max_outstanding_io_per_volume", Int, false),
    ],
    rows: dm_configuration,
};

fn dm_configuration(ctx: &ExecCtx, _db: &str) -> Rows<3> {
    super::server_state(ctx)?;
    let rg = &ctx.shared.resource_governor;
    let classifier = rg.classifier();
    Ok(vec![[classifier_id(ctx, classifier.as_ref()), bit(rg.reconfiguration_pending()), int(0)]])
}

/// A setting of a pool or group: its column, and its value read from the definition.
type Setting<T> = (super::Col, fn(&T) -> Value);

/// The columns of `settings`, in order.
const fn setting_columns<T, const N: usize>(settings: [Setting<T>; N]) -> [super::Col; N] {
    let mut out = [col("", Int, false); N];
    let mut i = 0;
    while i < N {
        out[i] = settings[i].0;
        i += 1;
    }
    out
}

fn number(v: u32) -> Value {
    int(i64::from(v))
}

/// A pool's settings, as both pool views show them.
const POOL_SETTINGS: [Setting<Pool>; 7] = [
    (col("min_cpu_percent", Int, false), |p| number(p.min_cpu_percent)),
    (col("max_cpu_percent", Int, false), |p| number(p.max_cpu_percent)),
    (col("min_memory_percent", Int, false), |p| number(p.min_memory_percent)),
    (col("max_memory_percent", Int, false), |p| number(p.max_memory_percent)),
    (col("cap_cpu_percent", Int, false), |p| number(p.cap_cpu_percent)),
    (col("min_iops_per_volume", Int, false), |p| number(p.min_iops_per_volume)),
    (col("max_iops_per_volume", Int, false), |p| number(p.max_iops_per_volume)),
];
const POOL_SETTING_COLUMNS: [super::Col; 7] = setting_columns(POOL_SETTINGS);

fn pool_settings(p: &Pool) -> [Value; 7] {
    POOL_SETTINGS.map(|(_, value)| value(p))
}

pub(super) static POOLS: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "resource_governor_resource_pools",
    columns: super::concat_columns([col("pool_id", Int, false), col("name", SYSNAME, false)], POOL_SETTING_COLUMNS),
    rows: pools,
};

fn pools(ctx: &ExecCtx, _db: &str) -> Rows<9> {
    super::server_state(ctx)?;
    let stored = ctx.shared.resource_governor.stored();
    Ok(stored.pools.iter().map(|p| super::concat([int(i64::from(p.id)), s(&p.name)], pool_settings(p))).collect())
}

pub(super) static DM_POOLS: ViewDef<15> = ViewDef {
    schema: "sys",
    name: "dm_resource_governor_resource_pools",
    columns: super::concat_columns(
        super::concat_columns::<4, 7, 11>(
            [
                col("pool_id", Int, false),
                col("name", SYSNAME, false),
                col("statistics_start_time", tessera_semantics::types::SqlType::DateTime, false),
                col("total_cpu_usage_ms", BigInt, false),
            ],
            POOL_SETTING_COLUMNS,
        ),
        [
            col("total_cpu_delayed_ms", BigInt, false),
            col("used_memory_kb", BigInt, false),
            col("max_memory_kb", BigInt, false),
            col("out_of_memory_count", BigInt, false),
        ],
    ),
    rows: dm_pools,
};

fn dm_pools(ctx: &ExecCtx, _db: &str) -> Rows<15> {
    super::server_state(ctx)?;
    let (pools, since) = ctx.shared.resource_governor.running_pools();
    let big = |n: u64| int(i64::try_from(n).unwrap_or(i64::MAX));
    Ok(pools
        .iter()
        .map(|r| {
            let p = &r.definition;
            let head = [int(i64::from(p.id)), s(&p.name), datetime(since), big(r.usage.cpu.used_total / 1_000_000)];
            // Query memory: what the pool's grants hold now and may hold together.
            let memory = ctx.shared.resource_governor.pool_memory(p.id);
            let (used, max, refused) = memory
                .map_or((0, 0, 0), |m| (m.used_bytes(), ctx.shared.query_memory.pool_limit_bytes(&m), m.refusals()));
            super::concat::<11, 4, 15>(
                super::concat::<4, 7, 11>(head, pool_settings(p)),
                [
                    big(r.usage.cpu.waited_ms_total + r.usage.share.waited_ms_total),
                    big(used as u64 >> 10),
                    big(max as u64 >> 10),
                    big(refused),
                ],
            )
        })
        .collect())
}

/// A group's settings, as both group views show them.
const GROUP_SETTINGS: [Setting<Group>; 7] = [
    (col("importance", SYSNAME, false), |g| s(&g.importance)),
    (col("request_max_memory_grant_percent", Int, false), |g| number(g.request_max_memory_grant_percent)),
    (col("request_max_cpu_time_sec", Int, false), |g| number(g.request_max_cpu_time_sec)),
    (col("request_memory_grant_timeout_sec", Int, false), |g| number(g.request_memory_grant_timeout_sec)),
    (col("max_dop", Int, false), |g| number(g.max_dop)),
    (col("group_max_requests", Int, false), |g| number(g.group_max_requests)),
    (col("pool_id", Int, false), |g| int(i64::from(g.pool_id))),
];
const GROUP_SETTING_COLUMNS: [super::Col; 7] = setting_columns(GROUP_SETTINGS);

fn group_settings(g: &Group) -> [Value; 7] {
    GROUP_SETTINGS.map(|(_, value)| value(g))
}

pub(super) static GROUPS: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "resource_governor_workload_groups",
    columns: super::concat_columns([col("group_id", Int, false), col("name", SYSNAME, false)], GROUP_SETTING_COLUMNS),
    rows: groups,
};

fn groups(ctx: &ExecCtx, _db: &str) -> Rows<9> {
    super::server_state(ctx)?;
    let stored = ctx.shared.resource_governor.stored();
    Ok(stored.groups.iter().map(|g| super::concat([int(i64::from(g.id)), s(&g.name)], group_settings(g))).collect())
}

pub(super) static DM_GROUPS: ViewDef<15> = ViewDef {
    schema: "sys",
    name: "dm_resource_governor_workload_groups",
    columns: super::concat_columns(
        [
            col("group_id", Int, false),
            col("name", SYSNAME, false),
            col("statistics_start_time", tessera_semantics::types::SqlType::DateTime, false),
            col("total_request_count", BigInt, false),
            col("total_queued_request_count", BigInt, false),
            col("active_request_count", Int, false),
            col("queued_request_count", Int, false),
            col("total_cpu_usage_ms", BigInt, false),
        ],
        GROUP_SETTING_COLUMNS,
    ),
    rows: dm_groups,
};

fn dm_groups(ctx: &ExecCtx, _db: &str) -> Rows<15> {
    super::server_state(ctx)?;
    let (groups, since) = ctx.shared.resource_governor.running_groups();
    let big = |n: u64| int(i64::try_from(n).unwrap_or(i64::MAX));
    Ok(groups
        .iter()
        .map(|r| {
            let (g, u) = (&r.definition, &r.usage);
            let head = [
                int(i64::from(g.id)),
                s(&g.name),
                datetime(since),
                big(u.requests.admitted_total),
                big(u.requests.queued_total),
                int(i64::from(u.requests.running)),
                int(i64::from(u.requests.queued)),
                big(u.cpu.used_total / 1_000_000),
            ];
            super::concat(head, group_settings(g))
        })
        .collect())
}
