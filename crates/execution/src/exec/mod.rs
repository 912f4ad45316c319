//! Bound expressions and relational plans, and their evaluation.
//!
//! The binder turns syntax into these trees: every name resolved to a row position, a
//! variable slot or a catalog object, every operand converted to the type its operator
//! works on. Evaluation is a tree walk; relational operators are opened as cursors that
//! stream their rows on demand, and those that need all of their input first hold it
//! under the statement's memory grant.
//!
//! Files: `tree` (the expression and plan types), `evaluate` (expressions), `cursor`
//! (each operator as a streaming cursor), `execute` (running a plan to its end,
//! TOP/OFFSET/FETCH counts, recursive CTEs), `scan` (scans and seeks), `locked_read`
//! (scans that lock their rows), `operators` (sort, aggregation, set operations,
//! ROW_NUMBER), `grant` (query memory), `encoding` (stored rows and key bytes), `showplan`
//! (a plan as SET SHOWPLAN_TEXT shows it).

mod cursor;
mod evaluate;
mod execute;
mod locked_read;
mod operators;
mod scan;

pub use cursor::{drain, open, Cursor, Rows};
pub use evaluate::{eval, is_true};
pub use execute::run;

use tessera_errors::SqlError;

fn missing_tree(table: &str) -> SqlError {
    SqlError::new(208, format!("Invalid object name '{table}'."))
}
