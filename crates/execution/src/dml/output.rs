//! OUTPUT clauses: `deleted.*` / `inserted.*` and expressions over both rows, and
//! `OUTPUT … INTO`.

use super::insert::run_insert;
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::plan::{Expr, InsertPlan, InsertSource, Row};

/// Inserts OUTPUT rows into the `OUTPUT … INTO` target.
pub fn run_output_into(ctx: &mut ExecCtx, into: &InsertPlan, rows: Vec<Row>) -> SqlResult<u64> {
    let source =
        InsertSource::Rows(rows.into_iter().map(|r| r.into_iter().map(|v| Some(Expr::Const(v))).collect()).collect());
    let plan = InsertPlan {
        target: into.target.clone(),
        columns: into.columns.clone(),
        source_types: into.source_types.clone(),
        source,
        output: None,
        top: None,
        explicit_identity: into.explicit_identity,
    };
    Ok(run_insert(ctx, &plan)?.0)
}
