//! sys.configurations: the `sp_configure` options.

use super::{bit, col, int, s, Rows, ViewDef};
use crate::runtime::ExecCtx;
use tessera_semantics::types::SqlType::*;

pub(super) static CONFIGURATIONS: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "configurations",
    columns: [
        col("configuration_id", Int, false),
        col("name", NVarChar(35), false),
        col("value", BigInt, true),
        col("minimum", BigInt, true),
        col("maximum", BigInt, true),
        col("value_in_use", BigInt, true),
        col("description", NVarChar(255), false),
        col("is_dynamic", Bit, false),
        col("is_advanced", Bit, false),
    ],
    rows: configurations,
};

/// Every option, by id: its configured and its running value.
fn configurations(ctx: &ExecCtx, _db: &str) -> Rows<9> {
    Ok(ctx
        .shared
        .config
        .all()
        .into_iter()
        .map(|(d, configured, running)| {
            [
                int(i64::from(d.id)),
                s(d.name),
                int(configured),
                int(d.minimum),
                int(d.maximum),
                int(running),
                s(d.description),
                bit(d.dynamic),
                bit(d.advanced),
            ]
        })
        .collect())
}
