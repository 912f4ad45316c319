//! Bound expressions and relational plans: what the binder makes of syntax, what the plan
//! cache keeps and the execution layer runs.
//!
//! Files: `tree` (the expression and plan types), `statement` (compiled statements: a
//! query, an assignment, an INSERT, UPDATE, DELETE or MERGE with its target), `showplan` (a plan
//! as SET SHOWPLAN_TEXT shows it).

mod showplan;
mod statement;
mod tree;

pub use showplan::{select_into_plan, statement_plan, PlanSite};
pub use statement::{
    BoundQuery, DeletePlan, InsertPlan, InsertSource, MergeAction, MergeClause, MergePlan, OutputPlan, PartialWrite,
    Prepared, SetList, Target, UpdatePlan, VarSource,
};
pub use tree::{
    columns_used, AggCall, AggFunc, Col, DocumentFormat, Expr, Plan, RangeBound, ScanNode, SessionFn, SortKey,
    StringAgg, Subquery, SubqueryKind, TableCall, UserCall, View, WantedIndex, WindowCall, WindowFunc,
};

use crate::types::Value;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};

/// A row of values, as operators pass them on.
pub type Row = Vec<Value>;

/// The row count of an OFFSET clause (errors 10742 and, for NULL, 10743).
pub fn offset_count(v: &Value) -> SqlResult<usize> {
    match v {
        Value::Int(n) if *n >= 0 => Ok(*n as usize),
        Value::Int(_) => Err(msg::NEGATIVE_OFFSET.err()),
        _ => Err(row_count_not_integer("OFFSET")),
    }
}

/// The row count of a FETCH clause (errors 10744 and, for NULL, 10743).
pub fn fetch_count(v: &Value) -> SqlResult<usize> {
    match v {
        Value::Int(n) if *n > 0 => Ok(*n as usize),
        Value::Int(_) => Err(msg::FETCH_ROWS_NOT_POSITIVE.err()),
        _ => Err(row_count_not_integer("FETCH")),
    }
}

fn row_count_not_integer(clause: &str) -> SqlError {
    msg::OFFSET_FETCH_ROWS_NOT_INTEGER.with(&[&clause])
}
