//! Index usage as SQL Server counts it (sys.dm_db_index_usage_stats): once per run of a
//! statement's plan, for each scan in it — its operators' and its subqueries', each once
//! however often it runs (the inner side of a nested loop is one seek, not one per outer
//! row): a seek (a key prefix or range), or a scan of the whole index; a read through a
//! nonclustered index is also a lookup in the table's rows, and a scan that wanted an
//! index a run of that suggestion. Each count is a relaxed atomic add on the index's
//! counters, which hang on its definition in the database's catalog: the table the scan
//! resolves to anyway, so nothing is looked up to find them. Uses nothing else of `exec`.

use std::sync::Arc;

use crate::index_usage::used;
use crate::runtime::ExecCtx;
use tessera_semantics::catalog::Table;
use tessera_semantics::plan::{Expr, Plan, ScanNode};

/// Counts a run of `plan`: each of its scans resolved to the table it reads where it runs.
pub(super) fn plan_runs(plan: &Plan, ctx: &ExecCtx) {
    let mut now = None;
    plan.each_scan(&mut |node| scan_in_plan_runs(node, ctx, &mut now));
}

/// Counts the scans of the subqueries in `exprs`, for a statement that evaluates them
/// outside a plan (an INSERT's VALUES, an UPDATE's SET list).
pub fn expressions_run<'e>(exprs: impl IntoIterator<Item = &'e Expr>, ctx: &ExecCtx) {
    let mut now = None;
    for e in exprs {
        e.each_scan(&mut |node| scan_in_plan_runs(node, ctx, &mut now));
    }
}

fn scan_in_plan_runs(node: &ScanNode, ctx: &ExecCtx, now: &mut Option<i64>) {
    // A table that is gone fails the statement when the scan opens.
    if let Ok((db, table)) = ctx.table(&node.db, &node.table) {
        scan_runs(node, &db, &table, ctx, *now.get_or_insert_with(crate::index_usage::now));
    }
}

/// A run at `now` of the scan `node` of `table`, its definition in database `db`.
pub(super) fn scan_runs(node: &ScanNode, db: &Arc<str>, table: &Arc<Table>, ctx: &ExecCtx, now: i64) {
    let Some(ix) = table.indexes.get(node.index) else { return };
    let u = &ix.usage;
    if node.prefix.is_empty() && node.lower.is_none() && node.upper.is_none() {
        used(&u.scans, &u.last_scan, now);
    } else {
        used(&u.seeks, &u.last_seek, now);
    }
    if node.index != 0 {
        let rows = &table.indexes[0].usage;
        used(&rows.lookups, &rows.last_lookup, now);
    }
    if let Some(wanted) = &node.wanted {
        let current = |g: &crate::index_usage::MissingGroup| g.is_current(ctx.shared.loaded_catalog(&g.database));
        ctx.shared.missing_indexes.ran(db, table, wanted, now, current);
    }
}
