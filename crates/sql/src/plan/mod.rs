//! Bound expressions and relational plans, and their evaluation.
//!
//! The binder turns syntax into these trees: every name resolved to a row position, a
//! variable slot or a catalog object, every operand converted to the type its operator
//! works on. Evaluation is a tree walk; relational operators materialise their output as
//! `Vec<Row>`, bounded by [`MAX_MATERIALIZED_BYTES`].
//!
//! Files: `tree` (the expression and plan types), `evaluate` (expressions), `execute`
//! (the operator dispatch, TOP/OFFSET/FETCH counts, recursive CTEs), `scan` (scans and
//! seeks), `locked_read` (scans that lock their rows), `operators` (joins, sort,
//! aggregation, set operations, ROW_NUMBER), `encoding` (stored rows and key bytes),
//! `showplan` (a plan as SET SHOWPLAN_TEXT shows it).

mod encoding;
mod evaluate;
mod execute;
mod locked_read;
mod operators;
mod scan;
mod showplan;
mod tree;

pub use encoding::{decode_row, encode_prefix, encode_value, group_key, index_entry, prefix_successor, row_schema};
pub use evaluate::{eval, is_true};
pub use execute::{fetch_count, offset_count, run};
pub use showplan::{select_into_plan, statement_plan};
pub use tree::{
    AggCall, AggFunc, Expr, Plan, RangeBound, ScanNode, SessionFn, SortKey, Subquery, SubqueryKind, UserCall,
};

use crate::types::Value;
use tessera_errors::{SqlError, SqlResult};

pub type Row = Vec<Value>;

/// The most bytes one operator may hold in memory before the query fails with error 701.
pub const MAX_MATERIALIZED_BYTES: usize = 2 << 30;

/// Approximate in-memory size of a row, for the materialisation limit.
fn row_bytes(r: &Row) -> usize {
    r.iter()
        .map(|v| match v {
            Value::Str(s) => 16 + s.len(),
            Value::Binary(b) => 16 + b.len(),
            _ => 32,
        })
        .sum()
}

/// Collects rows while enforcing [`MAX_MATERIALIZED_BYTES`].
struct Collector {
    rows: Vec<Row>,
    bytes: usize,
}

impl Collector {
    fn new() -> Collector {
        Collector { rows: Vec::new(), bytes: 0 }
    }
    fn push(&mut self, r: Row) -> SqlResult<()> {
        self.bytes += row_bytes(&r);
        if self.bytes > MAX_MATERIALIZED_BYTES {
            return Err(insufficient_memory());
        }
        self.rows.push(r);
        Ok(())
    }
}

fn insufficient_memory() -> SqlError {
    SqlError::new(701, "There is insufficient system memory in resource pool 'default' to run this query.")
        .with_severity(17)
}

fn missing_tree(table: &str) -> SqlError {
    SqlError::new(208, format!("Invalid object name '{table}'."))
}
