//! sys.messages: the error catalog (`tessera_errors::catalog`), every number tessera
//! raises with its severity and message template, in us_english.

use super::{bit, col, int, s, Rows, ViewDef};
use crate::runtime::ExecCtx;
use tessera_errors::catalog::MESSAGES as CATALOG;
use tessera_semantics::types::SqlType::*;

/// `language_id` of us_english, the only language tessera has.
const US_ENGLISH: i64 = 1033;

pub(super) static MESSAGES: ViewDef<5> = ViewDef {
    schema: "sys",
    name: "messages",
    columns: [
        col("message_id", Int, false),
        col("language_id", SmallInt, false),
        col("severity", TinyInt, true),
        col("is_event_logged", Bit, true),
        col("text", NVarChar(2048), false),
    ],
    rows: messages,
};

/// One row per catalog entry, by number. Messages of severity 19 and above are written
/// to the error log (as SQL Server's are).
fn messages(_: &ExecCtx, _db: &str) -> Rows<5> {
    Ok(CATALOG
        .iter()
        .map(|m| {
            [
                int(i64::from(m.number)),
                int(US_ENGLISH),
                int(i64::from(m.severity)),
                bit(m.severity >= 19),
                s(m.template),
            ]
        })
        .collect())
}
