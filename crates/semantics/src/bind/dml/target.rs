//! The target of a data change: its table with bound CHECK and DEFAULT definitions, and
//! the source rows of an UPDATE or DELETE (the target among its FROM tables).

use crate::bind::{convert, Binder, ResolvedTable};
use crate::catalog::{Access, Column, DbRef, ModuleKind, Table};
use crate::plan::{Plan, Target};
use crate::types::SqlType;
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast;

/// Binds CHECK and DEFAULT definitions of a table against its own row.
pub fn bind_target(b: &mut Binder, db: DbRef, table: Arc<Table>) -> SqlResult<Target> {
    let mut checks = Vec::new();
    let mut defaults = Vec::new();
    let mut filters = Vec::new();
    let mut computed = Vec::new();
    b.with_table_scope(&table, |b| -> SqlResult<()> {
        for ix in &table.indexes {
            filters.push(match &ix.filter {
                Some(text) => Some(b.bind_predicate(&tessera_syntax::unparse::parse_definition(text)?)?),
                None => None,
            });
        }
        for c in &table.checks {
            let e = tessera_syntax::unparse::parse_definition(&c.text)?;
            checks.push(b.bind_predicate(&e)?);
        }
        for col in &table.columns {
            computed.push(match &col.computed {
                Some(c) => Some(b.bind_expr(&tessera_syntax::unparse::parse_definition(&c.text)?)?),
                None => None,
            });
            defaults.push(match &col.default {
                Some(d) => {
                    let e = tessera_syntax::unparse::parse_definition(&d.text)?;
                    Some(b.bind_expr(&e)?)
                }
                None => None,
            });
        }
        Ok(())
    })?;
    Ok(Target { db, table, checks, defaults, filters, computed, view: false })
}

/// The table a data change names, or a view, which stands as a table of its columns (see
/// `Target::view`): the second item says which.
pub(super) fn resolve_target(b: &mut Binder, name: &ast::ObjectName) -> SqlResult<(ResolvedTable, bool)> {
    if let Some((db, m)) = b.module(name, Access::NONE)? {
        if m.kind == ModuleKind::View {
            let bound = b.bind_view(&db, &m)?;
            let columns = bound
                .columns
                .iter()
                .map(|c| Column {
                    name: c.name.clone(),
                    ty: c.ty,
                    nullable: c.nullable,
                    identity: None,
                    default: None,
                    computed: None,
                })
                .collect();
            let table = Table {
                id: m.id,
                schema: m.schema.clone(),
                name: m.name.clone(),
                columns,
                indexes: Vec::new(),
                checks: Vec::new(),
                foreign_keys: Vec::new(),
                created: m.created,
                modified: m.modified,
                large_values_out_of_row: false,
                properties: Vec::new(),
                counters: Default::default(),
                layout: Default::default(),
            };
            let rt = ResolvedTable { at: db.at, db: db.name, table: Arc::new(table), dep: usize::MAX };
            return Ok((rt, true));
        }
    }
    Ok((b.resolve_table(name)?, false))
}

/// The table of the trigger that is running, or the view of an INSTEAD OF trigger (as
/// `resolve_target` gives it): what its `inserted` and `deleted` rows are rows of.
pub(in crate::bind) fn trigger_target(b: &mut Binder) -> SqlResult<Option<ResolvedTable>> {
    let Some((db, schema, table)) = b.session.trigger_table() else { return Ok(None) };
    let name = ast::ObjectName(vec![ast::Ident::new(&db), ast::Ident::new(&schema), ast::Ident::new(&table)]);
    Ok(Some(resolve_target(b, &name)?.0))
}

/// The target of a data change: a table's with its constraints, a view's alone.
pub(super) fn bind_resolved(b: &mut Binder, rt: ResolvedTable, view: bool) -> SqlResult<Target> {
    if view {
        let none = |n: usize| (0..n).map(|_| None).collect();
        let n = rt.table.columns.len();
        let (defaults, computed) = (none(n), none(n));
        return Ok(Target {
            db: rt.at,
            table: rt.table,
            checks: Vec::new(),
            defaults,
            filters: Vec::new(),
            computed,
            view,
        });
    }
    bind_target(b, rt.at, rt.table)
}

/// Resolves the UPDATE/DELETE target among the FROM tables (by alias or name).
fn dml_from(target: &ast::ObjectName, hints: &[String], from: &[ast::TableRef]) -> (Vec<ast::TableRef>, String) {
    let qualifier = target.name().value.to_lowercase();
    if from.is_empty() {
        let t = ast::TableRef::Named { name: target.clone(), alias: None, hints: hints.to_vec() };
        return (vec![t], qualifier);
    }
    let mut from = from.to_vec();
    for r in &mut from {
        if let ast::TableRef::Named { name, alias, hints: named_hints } = r {
            if alias.as_ref().unwrap_or(name.name()).value.eq_ignore_ascii_case(&qualifier) {
                named_hints.extend(hints.iter().cloned());
            }
        }
    }
    (from, qualifier)
}

fn find_named<'x>(refs: &'x [ast::TableRef], qualifier: &str) -> Option<&'x ast::ObjectName> {
    for r in refs {
        match r {
            ast::TableRef::Named { name, alias, .. } => {
                let q = alias.as_ref().unwrap_or(name.name()).value.to_lowercase();
                if q == qualifier {
                    return Some(name);
                }
            }
            ast::TableRef::Join { left, right, .. } => {
                if let Some(n) = find_named(std::slice::from_ref(left), qualifier)
                    .or_else(|| find_named(std::slice::from_ref(right), qualifier))
                {
                    return Some(n);
                }
            }
            _ => {}
        }
    }
    None
}

/// The rows an UPDATE or DELETE reads: its FROM clause (or its target alone) filtered by
/// its WHERE and TOP, with the resolved target (and whether it is a view), the scope of
/// the rows, where the target's columns start in them, and its storage key (a view's rows
/// have none: the key is then where its columns end).
pub(super) fn bind_dml_source(
    b: &mut Binder,
    target: &ast::ObjectName,
    hints: &[String],
    from: &[ast::TableRef],
    selection: Option<&ast::Expr>,
    top: Option<&ast::Top>,
) -> SqlResult<(ResolvedTable, bool, Plan, crate::bind::Scope, usize, usize)> {
    if hints.iter().any(|h| h == "NOLOCK" || h == "READUNCOMMITTED") {
        return Err(msg::NOLOCK_ON_TARGET_TABLE.err());
    }
    let (from, qualifier) = dml_from(target, hints, from);
    let name = find_named(&from, &qualifier).cloned().unwrap_or_else(|| target.clone());
    let (rt, view) = resolve_target(b, &name)?;
    let (mut plan, scope) = b.bind_from_where(&from, selection, Some(&qualifier))?;
    let (offset, key) = if view {
        let offset = scope.first_of(&qualifier).ok_or_else(|| crate::bind::invalid_object(&target.name().value))?;
        (offset, offset + rt.table.columns.len())
    } else {
        let key = scope.target_key().ok_or_else(|| crate::bind::invalid_object(&target.name().value))?;
        (key - rt.table.columns.len(), key)
    };
    if let Some(t) = top {
        let (e, ty) = b.bind_for(&t.count, &SqlType::BigInt)?;
        plan = Plan::Top {
            input: Box::new(plan),
            count: convert(e, &ty, &SqlType::BigInt)?,
            percent: t.percent,
            ties: Vec::new(),
        };
    }
    Ok((rt, view, plan, scope, offset, key))
}
