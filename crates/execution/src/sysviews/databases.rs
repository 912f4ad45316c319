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

/// Every database; one being restored (which cannot be opened) from its stored options.
fn databases(ctx: &ExecCtx, _db: &str) -> Rows<14> {
    let mut out = Vec::new();
    for name in ctx.shared.engine.database_names() {
        if ctx.shared.engine.database_state(&name) == Some(tessera_database::DbState::Restoring) {
            let Some((_, _, o)) = ctx.shared.engine.database_info(&name) else { continue };
            let model = o.recovery_model;
            out.push([
                s(&name),
                int(i64::from(ctx.shared.engine.database_id(&name).unwrap_or(0))),
                datetime(0),
                int(160),
                s(COLLATION),
                s("MULTI_USER"),
                bit(false),
                int(1),
                s("RESTORING"),
                int(recovery_model_id(model.name())),
                s(model.name()),
                s("NOTHING"),
                int(0),
                s(o.delayed_durability.name()),
            ]);
            continue;
        }
        let d = ctx.shared.database(&name)?;
        let o = d.options();
        let model = o.recovery_model;
        let dd = o.delayed_durability.name();
        let dd_id = match dd {
            "DISABLED" => 0,
            "ALLOWED" => 1,
            _ => 2,
        };
        out.push([
            s(d.name()),
            int(i64::from(d.id())),
            datetime(0),
            int(160),
            s(COLLATION),
            s("MULTI_USER"),
            bit(false),
            int(0),
            s("ONLINE"),
            int(recovery_model_id(model.name())),
            s(model.name()),
            s(d.wal().reuse_wait()),
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
