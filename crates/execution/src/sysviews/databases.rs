//! sys.databases.

use super::{bit, col, datetime, int, s, Rows, ViewDef, COLLATION, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_semantics::types::SqlType::*;

pub(super) static DATABASES: ViewDef<14> = ViewDef {
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
        col("recovery_model", TinyInt, true),
        col("recovery_model_desc", NVarChar(60), true),
        col("log_reuse_wait_desc", NVarChar(60), true),
        col("delayed_durability", Int, true),
        col("delayed_durability_desc", NVarChar(60), true),
    ],
    rows: databases,
};

/// Every database, from the registry: none is opened to be listed (a closed one's log
/// waits for nothing).
fn databases(ctx: &ExecCtx, _db: &str) -> Rows<14> {
    let mut out = Vec::new();
    for d in crate::registry::all(&ctx.shared.engine) {
        let o = &d.options;
        let model = o.recovery_model;
        let dd = o.delayed_durability.name();
        let dd_id = match dd {
            "DISABLED" => 0,
            "ALLOWED" => 1,
            _ => 2,
        };
        let restoring = d.state == tessera_database::DbState::Restoring;
        let reuse_wait = ctx.shared.engine.database_if_open(&d.name).map(|db| db.wal().reuse_wait());
        out.push([
            s(&d.name),
            int(i64::from(d.id)),
            datetime(0),
            int(160),
            s(COLLATION),
            s("MULTI_USER"),
            bit(false),
            int(if restoring { 1 } else { 0 }),
            s(if restoring { "RESTORING" } else { "ONLINE" }),
            int(recovery_model_id(model.name())),
            s(model.name()),
            s(reuse_wait.unwrap_or("NOTHING")),
            int(dd_id),
            s(dd),
        ]);
    }
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
