//! Binding data changes and assignments: INSERT, UPDATE, DELETE, MERGE (with their
//! targets' CHECK and DEFAULT definitions and their OUTPUT clauses) and `SELECT @v = …`.
//!
//! Files: `insert`, `update`, `delete`, `merge` and `assign` (one statement each; MERGE
//! uses INSERT's column lists and UPDATE's SET lists), `target` (the target table, or a view
//! an INSTEAD OF trigger changes, and the source rows of an UPDATE or DELETE), `output` (OUTPUT clauses).

mod assign;
mod delete;
mod insert;
mod merge;
mod output;
mod target;
mod update;

pub use assign::compile_assign;
pub use delete::compile_delete;
pub use insert::compile_insert;
pub use merge::{compile_merge, ACTION_COLUMN};
pub use target::bind_target;
pub(super) use target::trigger_target;
pub use update::compile_update;
