//! DELETE: compiling it, and deleting rows with their index entries after the foreign keys
//! that reference them are enforced.

use super::row_changes::delete_row;
use super::rowcount_limit;
use super::target::{count_maintenance, unique_targets, BoundTarget};
use crate::exec::{eval, run};
use crate::runtime::ExecCtx;
use std::collections::HashSet;
use tessera_errors::SqlResult;
use tessera_semantics::plan::{DeletePlan, Row};
use tessera_semantics::types::Value;

pub fn run_delete(ctx: &mut ExecCtx, p: &DeletePlan) -> SqlResult<(u64, Vec<Row>)> {
    let mut rows = unique_targets(run(&p.source, &[], ctx)?, p.key);
    rows.truncate(rowcount_limit(ctx));
    let target = p.target.at(ctx)?;
    count_maintenance(&target.table, |_| true);
    let n = target.table.columns.len();
    let mut count = 0;
    let mut output = Vec::new();
    // The rows still to delete: a row of this table that references one being deleted is
    // no obstacle if it goes too (the statement's constraints hold at its end).
    let mut leaving: HashSet<Vec<u8>> =
        rows.iter().filter_map(|r| if let Value::Binary(k) = &r[p.key] { Some(k.to_vec()) } else { None }).collect();
    for r in rows {
        ctx.yield_point()?;
        let old: Row = r[p.offset..p.offset + n].to_vec();
        let Value::Binary(key) = &r[p.key] else { continue };
        leaving.remove(&key[..]);
        if delete_row(ctx, &target, key, &old, 0, &leaving)? {
            count += 1;
            if let Some(t) = ctx.session.transitions.as_mut() {
                t.deleted.push(old.clone());
            }
            if let Some(out) = &p.output {
                let mut both = old;
                both.extend(std::iter::repeat_n(Value::Null, n));
                output.push(out.exprs.iter().map(|e| eval(e, &both, ctx)).collect::<SqlResult<Row>>()?);
            }
        }
    }
    Ok((count, output))
}
