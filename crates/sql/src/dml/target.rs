//! The target of a data change: its table with bound CHECK and DEFAULT definitions, and
//! the source rows of an UPDATE or DELETE (the target among its FROM tables, each row once).

use std::collections::HashSet;
use std::sync::Arc;

use crate::bind::{convert, Binder};
use crate::catalog::{DbRef, Table};
use crate::plan::{Expr, Plan, Row};
use crate::runtime::ExecCtx;
use crate::types::{SqlType, Value};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast;

#[derive(Debug, Clone)]
pub struct Target {
    pub db: DbRef,
    /// The definition the plan was bound against (`ExecCtx::table` finds the table of
    /// that name in the database the plan runs in).
    pub table: Arc<Table>,
    /// Bound CHECK constraints over the table's row, one per `table.checks`.
    pub checks: Vec<Expr>,
    /// Bound DEFAULT expressions per column.
    pub defaults: Vec<Option<(Expr, SqlType)>>,
}

/// A target as a statement changes it: the database, the table there (its storage trees,
/// object id, counters and constraint names), and the bound CHECK and DEFAULT expressions.
pub struct TargetAt<'p> {
    pub db: String,
    pub table: Arc<Table>,
    pub checks: &'p [Expr],
    pub defaults: &'p [Option<(Expr, SqlType)>],
}

impl Target {
    /// The target of a plan as the plan runs now (see `ExecCtx::table`).
    pub fn at(&self, ctx: &ExecCtx) -> SqlResult<TargetAt<'_>> {
        let (db, table) = ctx.table(&self.db, &self.table)?;
        Ok(TargetAt { db, table, checks: &self.checks, defaults: &self.defaults })
    }

    /// A target bound while a statement runs (a DDL's table, possibly not in the catalog
    /// yet; a cascade's referencing table): its table is the one changed.
    pub fn as_is(&self) -> TargetAt<'_> {
        let DbRef::Named(db) = &self.db else { unreachable!("targets bound at run time name their database") };
        TargetAt { db: db.clone(), table: self.table.clone(), checks: &self.checks, defaults: &self.defaults }
    }
}

/// Binds CHECK and DEFAULT definitions of a table against its own row.
pub fn bind_target(b: &mut Binder, db: DbRef, table: Arc<Table>) -> SqlResult<Target> {
    let mut checks = Vec::new();
    let mut defaults = Vec::new();
    b.with_table_scope(&table, |b| -> SqlResult<()> {
        for c in &table.checks {
            let e = tessera_syntax::unparse::parse_definition(&c.text)?;
            checks.push(b.bind_predicate(&e)?);
        }
        for col in &table.columns {
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
    Ok(Target { db, table, checks, defaults })
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

pub(super) fn bind_dml_source(
    b: &mut Binder,
    target: &ast::ObjectName,
    hints: &[String],
    from: &[ast::TableRef],
    selection: Option<&ast::Expr>,
    top: Option<&ast::Top>,
) -> SqlResult<(DbRef, Arc<Table>, Plan, crate::bind::Scope, usize, usize)> {
    if hints.iter().any(|h| h == "NOLOCK" || h == "READUNCOMMITTED") {
        return Err(SqlError::new(
            1065,
            "The NOLOCK and READUNCOMMITTED lock hints are not allowed for target tables of INSERT, UPDATE, DELETE or MERGE statements.",
        )
        .with_severity(15));
    }
    let (from, qualifier) = dml_from(target, hints, from);
    let name = find_named(&from, &qualifier).cloned().unwrap_or_else(|| target.clone());
    let rt = b.resolve_table(&name)?;
    let (mut plan, scope) = b.bind_from_where(&from, selection, Some(&qualifier))?;
    let key = scope.target_key().ok_or_else(|| crate::bind::invalid_object(&target.name().value))?;
    let offset = key - rt.table.columns.len();
    if let Some(t) = top {
        let (e, ty) = b.bind_expr(&t.count)?;
        plan = Plan::Top {
            input: Box::new(plan),
            count: convert(e, &ty, &SqlType::BigInt)?,
            percent: t.percent,
            ties: Vec::new(),
        };
    }
    Ok((rt.at, rt.table, plan, scope, offset, key))
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
