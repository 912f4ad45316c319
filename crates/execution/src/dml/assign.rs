//! Variable assignment: `SELECT @a = …` and `SET @v = …`, the last row winning.

use crate::exec::run;
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::plan::Plan;
use tessera_semantics::types::{self, SqlType};

/// Runs `SELECT @v = …`: assigns from the last row (variables keep their values when
/// there is none); returns the number of rows.
pub fn run_assign(ctx: &mut ExecCtx, plan: &Plan, targets: &[(usize, SqlType, SqlType)]) -> SqlResult<u64> {
    let rows = run(plan, &[], ctx)?;
    if let Some(last) = rows.last() {
        for ((slot, var_ty, expr_ty), v) in targets.iter().zip(last) {
            ctx.session.vars[*slot] = types::cast(v, expr_ty, var_ty, None)?.to_keep()?;
        }
    }
    Ok(rows.len() as u64)
}
