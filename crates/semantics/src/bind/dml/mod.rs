//! Binding data changes and assignments: INSERT, UPDATE, DELETE (with their targets'
//! CHECK and DEFAULT definitions and their OUTPUT clauses) and `SELECT @v = …`.
//!
//! Files: `insert`, `update`, `delete` and `assign` (one statement each), `target` (the
//! target table and the source rows of an UPDATE or DELETE), `output` (OUTPUT clauses).

mod assign;
mod delete;
mod insert;
mod output;
mod target;
mod update;

pub use assign::compile_assign;
pub use delete::compile_delete;
pub use insert::compile_insert;
pub use target::bind_target;
pub use update::compile_update;
