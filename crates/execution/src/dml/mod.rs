//! Running data changes and assignments: SELECT @v = …, INSERT, UPDATE, DELETE and MERGE —
//! with identity values, defaults, NOT NULL, CHECK and FOREIGN KEY constraints, unique
//! keys and nonclustered index maintenance. (Binding them is
//! `tessera_semantics::bind::dml`.)
//!
//! Files, each using only those before it: `target` (a plan's target as it runs, each
//! source row once), `storage` (clustered keys, stored rows, whole-table reads),
//! `constraints` (column length, NOT NULL, CHECK, duplicate-key errors), `indexes`
//! (nonclustered index entries and builds), `foreign_keys` (a row's parents),
//! `partial` (`SET col.WRITE`: a value's new part and its partial rewrite), `row_changes`
//! (deleting and updating one row, with the cascades they set off),
//! `store` (storing new rows; loads and checks for DDL), `bulk` (INSERTs staged and
//! stored as one bulk load), then one file per statement: `assign`, `insert`, `output`
//! (OUTPUT … INTO), `update`, `delete`, and `merge` (which uses INSERT's new rows and
//! UPDATE's SET lists); last `instead`, the rows of the changes INSTEAD OF triggers take
//! in their statements' place.

mod assign;
mod bulk;
mod constraints;
mod delete;
mod foreign_keys;
mod indexes;
mod insert;
mod instead;
mod merge;
mod output;
mod partial;
mod row_changes;
mod storage;
mod store;
mod target;
mod update;

pub use assign::run_assign;
pub use constraints::assign_value;
pub use delete::run_delete;
pub use indexes::build_index;
pub use insert::{compute_columns, run_insert};
pub use instead::{take_delete, take_insert, take_update, Taken};
pub use merge::run_merge;
pub use output::run_output_into;
pub use storage::{row_key, table_rows, to_storage_row};
pub use store::{load_rows, validate_rows};
pub use target::{BoundTarget, TargetAt};
pub use update::run_update;

use crate::runtime::ExecCtx;
use tessera_semantics::catalog::Table;

/// Largest clustered index key, in bytes (SQL Server's limit).
pub const MAX_CLUSTERED_KEY: usize = 900;

fn object_name(t: &Table) -> String {
    format!("{}.{}", t.schema, tessera_semantics::catalog::display_name(&t.name))
}

/// `SET ROWCOUNT n`: the most rows a statement may return or change (0 = no limit).
fn rowcount_limit(ctx: &ExecCtx) -> usize {
    match ctx.session.options.rowcount {
        n if n > 0 => n as usize,
        _ => usize::MAX,
    }
}
