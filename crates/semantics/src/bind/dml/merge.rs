//! MERGE: the source joined to the target, each WHEN clause's condition and action bound
//! over the join's row, and OUTPUT with `$action`.
//!
//! The join is `source LEFT JOIN target` when a clause inserts (a source row no target row
//! matches comes once, its target columns NULL), an inner join otherwise, so an index on
//! the ON columns is sought once per source row. Rows no source row matches (WHEN NOT
//! MATCHED BY SOURCE) come from a second read of the target, less the rows the join
//! matched. A clause sees only what SQL Server lets it: NOT MATCHED [BY TARGET] the
//! source's columns, NOT MATCHED BY SOURCE the target's; the others are hidden, at the
//! same positions of the row.

use super::insert::{bind_output_over, bind_top, check_values_count, insert_columns};
use super::target::{bind_target, resolve_target};
use super::update::bind_set_list;
use crate::bind::{invalid_object, Binder, Scope};
use crate::catalog::Access;
use crate::plan::{MergeAction, MergeClause, MergePlan};
use crate::types::SqlType;
use std::ops::Range;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast::{self, JoinKind, MergeWhen};

/// The name of MERGE's OUTPUT pseudo-column (nvarchar(10): INSERT, UPDATE or DELETE).
pub const ACTION_COLUMN: &str = "$action";

pub fn compile_merge(b: &mut Binder, m: &ast::Merge) -> SqlResult<MergePlan> {
    b.bind_ctes(&m.with, &m.hints)?;
    if m.target_hints.iter().any(|h| h == "NOLOCK" || h == "READUNCOMMITTED") {
        return Err(msg::NOLOCK_ON_TARGET_TABLE.err());
    }
    let (rt, view) = resolve_target(b, &m.target)?;
    if view {
        return Err(msg::MERGE_INSTEAD_OF_NOT_SUPPORTED.with(&[&rt.table.name]));
    }
    let (db, table) = (rt.at.clone(), rt.table.clone());
    let target_key = crate::catalog::name_key(&table.schema, &table.name);
    let qualifier = m.target_alias.as_ref().unwrap_or(m.target.name()).value.to_lowercase();
    let has = |when: MergeWhen| m.clauses.iter().any(|c| c.when == when);
    let target_ref =
        ast::TableRef::Named { name: m.target.clone(), alias: m.target_alias.clone(), hints: m.target_hints.clone() };
    let join = ast::TableRef::Join {
        left: Box::new(m.source.clone()),
        right: Box::new(target_ref.clone()),
        kind: if has(MergeWhen::NotMatchedByTarget) { JoinKind::Left } else { JoinKind::Inner },
        on: Some(m.on.clone()),
        hint: None,
    };
    let (source, scope) = b.bind_from_where(&[join], None, Some(&qualifier))?;
    let key = scope.target_key().ok_or_else(|| invalid_object(&m.target.name().value))?;
    let offset = key - table.columns.len();
    let source_columns = 0..offset;
    let target_columns = offset..key + 1;
    let mut clauses = Vec::with_capacity(m.clauses.len());
    for c in &m.clauses {
        let visible = match c.when {
            MergeWhen::Matched => scope.clone(),
            MergeWhen::NotMatchedByTarget => hidden(&scope, target_columns.clone()),
            MergeWhen::NotMatchedBySource => hidden(&scope, source_columns.clone()),
        };
        let condition =
            c.condition.as_ref().map(|e| b.with_bound_scope(visible.clone(), |b| b.bind_predicate(e))).transpose()?;
        let action = match &c.action {
            ast::MergeAction::Update(assignments) => {
                b.add_access(&db, &target_key, Access::UPDATE);
                MergeAction::Update(b.with_bound_scope(visible, |b| bind_set_list(b, &db, &table, assignments))?)
            }
            ast::MergeAction::Delete => {
                b.add_access(&db, &target_key, Access::DELETE);
                MergeAction::Delete
            }
            ast::MergeAction::Insert { columns: names, values } => {
                b.add_access(&db, &target_key, Access::INSERT);
                let columns = match values {
                    Some(_) => insert_columns(b, &rt.db, &table, names)?,
                    None => Vec::new(),
                };
                let values = values.as_deref().unwrap_or_default();
                check_values_count(&table, !names.is_empty(), columns.len(), values.len())?;
                let mut bound = Vec::with_capacity(values.len());
                let mut source_types = Vec::with_capacity(values.len());
                for (e, &col) in values.iter().zip(&columns) {
                    let column_type = table.columns[col].ty;
                    match e {
                        ast::Expr::Default => {
                            bound.push(None);
                            source_types.push(column_type);
                        }
                        e => {
                            let (e, t) = b.with_bound_scope(visible.clone(), |b| b.bind_for(e, &column_type))?;
                            bound.push(Some(e));
                            source_types.push(t);
                        }
                    }
                }
                let explicit_identity = table.identity_column().is_some_and(|id| columns.contains(&id));
                MergeAction::Insert { columns, values: bound, source_types, explicit_identity }
            }
        };
        clauses.push(MergeClause { when: c.when, condition, action });
    }
    let unmatched = if has(MergeWhen::NotMatchedBySource) {
        Some(b.bind_from_where(&[target_ref], None, Some(&qualifier))?.0)
    } else {
        None
    };
    // OUTPUT sees the deleted and inserted rows, the source's columns and `$action`.
    let mut output_scope = Binder::output_scope(&table);
    output_scope.extend(hidden(&scope, target_columns));
    output_scope.push_column(ACTION_COLUMN, SqlType::NVarChar(10));
    let output = bind_output_over(b, &table, m.output.as_ref(), output_scope)?;
    let top = bind_top(b, m.top.as_ref())?;
    let target = bind_target(b, db, table)?;
    Ok(MergePlan { target, source, offset, key, unmatched, clauses, output, top })
}

/// `scope` with the columns at `range` out of reach of names (they keep their positions).
fn hidden(scope: &Scope, range: Range<usize>) -> Scope {
    let mut scope = scope.clone();
    scope.hide(range);
    scope
}
