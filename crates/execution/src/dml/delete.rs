//! DELETE: compiling it, and deleting rows with their index entries after the foreign keys
//! that reference them are enforced.

use super::foreign_keys::{check_children, MAX_CASCADE_DEPTH};
use super::indexes::delete_index_entry;
use super::target::unique_targets;
use super::BoundTarget;
use super::{rowcount_limit, TargetAt};
use crate::exec::{eval, run};
use crate::runtime::ExecCtx;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::plan::DeletePlan;
use tessera_semantics::plan::Row;
use tessera_semantics::types::Value;

pub(super) fn delete_row(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    key: &[u8],
    row: &[Value],
    depth: usize,
) -> SqlResult<bool> {
    if depth > MAX_CASCADE_DEPTH {
        return Err(SqlError::new(
            217,
            "Maximum stored procedure, function, trigger, or view nesting level exceeded (limit 32).",
        ));
    }
    check_children(ctx, target, row, None, "DELETE", depth)?;
    let table = &target.table;
    let rows_tree = ctx.tree(&target.db, &table.indexes[0].tree, table)?;
    if !ctx.transaction(&target.db)?.delete(rows_tree, key)? {
        return Ok(false);
    }
    for ix in &table.indexes[1..] {
        delete_index_entry(ctx, target, ix, row, key)?;
    }
    Ok(true)
}

pub fn run_delete(ctx: &mut ExecCtx, p: &DeletePlan) -> SqlResult<(u64, Vec<Row>)> {
    let mut rows = unique_targets(run(&p.source, &[], ctx)?, p.key);
    rows.truncate(rowcount_limit(ctx));
    let target = p.target.at(ctx)?;
    let n = target.table.columns.len();
    let mut count = 0;
    let mut output = Vec::new();
    for r in rows {
        ctx.check_cancel()?;
        let old: Row = r[p.offset..p.offset + n].to_vec();
        let Value::Binary(key) = &r[p.key] else { continue };
        if delete_row(ctx, &target, key, &old, 0)? {
            count += 1;
            if let Some(out) = &p.output {
                let mut both = old;
                both.extend(std::iter::repeat_n(Value::Null, n));
                output.push(out.exprs.iter().map(|e| eval(e, &both, ctx)).collect::<SqlResult<Row>>()?);
            }
        }
    }
    Ok((count, output))
}
