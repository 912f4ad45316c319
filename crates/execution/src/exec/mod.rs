//! Running bound plans: each relational operator opened as a cursor that streams its rows
//! on demand (those that need all of their input first hold it under the statement's
//! memory grant, `tessera_governance::grant`), and expressions evaluated as a tree walk.
//!
//! Files: `usage` (the index usage a run of a plan counts), `rows` (what an open
//! operator is, rows held in memory), `evaluate`
//! (expressions), `ranges` (the key range of a scan or seek), `locked_read` (scans that
//! lock their rows), `scan` (scans and seeks), `operators` (sort, aggregation, set
//! operations), `window` (window functions), `document` (FOR JSON, FOR XML), `cursor` (every operator opened; a plan run to its end;
//! recursive CTE rounds; TOP counts), `stored` (queries whose rows go out as they are
//! stored, not as values).
//!
//! One recursion crosses files: an expression may hold a query (a subquery, which
//! `evaluate` opens with `cursor::open`) and a query holds expressions. Every other file
//! uses only those listed before it.

mod cursor;
mod document;
mod evaluate;
mod locked_read;
mod operators;
mod ranges;
mod rows;
mod scan;
mod stored;
mod usage;
mod window;

pub use evaluate::{eval, is_true};
pub use rows::{drain, Cursor, Rows};
pub use stored::{open_stored, Next as StoredNext, StoredRows};
pub use usage::expressions_run;

use crate::runtime::ExecCtx;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::plan::{Plan, Row};
use tessera_semantics::types::Value;

/// Opens a statement's plan (see `cursor::open`), counting the run's index use
/// (sys.dm_db_index_usage_stats) once, before any of it is read.
pub fn open<'p>(plan: &'p Plan, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Rows<'p>> {
    usage::plan_runs(plan, ctx);
    cursor::open(plan, corr, ctx)
}

/// Runs a statement's plan to its end (see `cursor::run`), counting its index use once.
pub fn run(plan: &Plan, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    usage::plan_runs(plan, ctx);
    cursor::run(plan, corr, ctx)
}

fn missing_tree(table: &str) -> SqlError {
    msg::INVALID_OBJECT_NAME.with(&[&table])
}
