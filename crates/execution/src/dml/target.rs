//! The target of a data change as it runs: the table in the database the plan runs in,
//! and the source rows of an UPDATE or DELETE (each row once).

use std::collections::HashSet;
use std::sync::Arc;

use crate::index_usage::{now, used};
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{DbRef, Index, Table};
use tessera_semantics::plan::{Expr, Row, Target};
use tessera_semantics::types::{SqlType, Value};

/// A target as a statement changes it: the database, the table there (its storage trees,
/// object id, counters and constraint names), and the bound CHECK and DEFAULT expressions.
pub struct TargetAt<'p> {
    pub db: Arc<str>,
    pub table: Arc<Table>,
    pub checks: &'p [Expr],
    pub defaults: &'p [Option<(Expr, SqlType)>],
    /// Each index's filter predicate (see `Target::filters`).
    pub filters: &'p [Option<Expr>],
    /// Each computed column's expression (see `Target::computed`).
    pub computed: &'p [Option<(Expr, SqlType)>],
}

/// A bound target, as a statement changes it.
pub trait BoundTarget {
    /// The target of a plan as the plan runs now (see `ExecCtx::table`).
    fn at(&self, ctx: &ExecCtx) -> SqlResult<TargetAt<'_>>;
    /// A target bound while a statement runs (a DDL's table, possibly not in the catalog
    /// yet; a cascade's referencing table): its table is the one changed.
    fn as_is(&self) -> TargetAt<'_>;
}

impl BoundTarget for Target {
    fn at(&self, ctx: &ExecCtx) -> SqlResult<TargetAt<'_>> {
        let (db, table) = ctx.table(&self.db, &self.table)?;
        Ok(TargetAt {
            db,
            table,
            checks: &self.checks,
            defaults: &self.defaults,
            filters: &self.filters,
            computed: &self.computed,
        })
    }

    fn as_is(&self) -> TargetAt<'_> {
        let DbRef::Named(db) = &self.db else { unreachable!("targets bound at run time name their database") };
        TargetAt {
            db: Arc::from(db.as_str()),
            table: self.table.clone(),
            checks: &self.checks,
            defaults: &self.defaults,
            filters: &self.filters,
            computed: &self.computed,
        }
    }
}

/// One more run of a statement that maintains `table`'s rows and the nonclustered indexes
/// of it `nonclustered` picks (sys.dm_db_index_usage_stats' user_updates: one a statement,
/// however many rows it changes).
pub(super) fn count_maintenance(table: &Table, nonclustered: impl Fn(&Index) -> bool) {
    let now = now();
    for (i, ix) in table.indexes.iter().enumerate() {
        if i == 0 || nonclustered(ix) {
            used(&ix.usage.updates, &ix.usage.last_update, now);
        }
    }
}

/// Whether changing the `changed` columns of `table`'s rows may change entries of its
/// nonclustered index `ix`: those of its key, of the clustered key (which every entry
/// holds) or any, for a filtered index (see `row_changes::unlink_old_row`).
pub(super) fn update_touches(table: &Table, ix: &Index, changed: &[usize]) -> bool {
    let keyed = |ix: &Index| ix.columns.iter().any(|(c, _)| changed.contains(c));
    keyed(&table.indexes[0]) || ix.filter.is_some() || keyed(ix)
}

pub(super) fn unique_targets(rows: Vec<Row>, key: usize) -> Vec<Row> {
    let mut seen = HashSet::new();
    rows.into_iter()
        .filter(|r| match &r[key] {
            Value::Binary(k) => seen.insert(k.clone()),
            _ => false,
        })
        .collect()
}
