//! Compiling and running queries and data changes: SELECT, variable assignment, INSERT,
//! UPDATE, DELETE — with identity values, defaults, NOT NULL, CHECK and FOREIGN KEY
//! constraints, unique keys and nonclustered index maintenance.
//!
//! Files: `insert`, `update`, `delete` and `assign` (each statement compiled and run),
//! `target` (the target table and the rows an UPDATE/DELETE changes), `output` (OUTPUT
//! clauses), `constraints` (column length,
//! NOT NULL, CHECK, duplicate keys), `foreign_keys` (parents, children and cascades),
//! `storage` (clustered keys and stored rows), `indexes` (nonclustered index maintenance),
//! `bulk` (INSERTs staged and stored as one bulk load).

mod assign;
mod bulk;
mod constraints;
mod delete;
mod foreign_keys;
mod indexes;
mod insert;
mod output;
mod storage;
mod target;
mod update;

pub use assign::run_assign;
pub use constraints::{assign_value, validate_rows};
pub use delete::run_delete;
pub use indexes::build_index;
pub use insert::run_insert;
pub use output::run_output_into;
pub use storage::{load_rows, row_key, table_rows, to_storage_row};
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
