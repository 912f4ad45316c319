//! The binder and planner: syntax in, typed plans out.
//!
//! Names resolve against a stack of scopes (the innermost query first, then enclosing
//! queries, whose columns become outer references). Operands are converted to the type
//! their operator works on with SQL Server's precedence rules. FROM clauses are planned
//! in three steps: bind the join tree against one combined row, push each WHERE/ON
//! conjunct down to the single table it touches (unless an outer join forbids it), then
//! choose for every table the index whose key the pushed conjuncts pin down best and for
//! every join a method: index nested loops when the inner table has an index on the join
//! columns, hash join for other equi-joins, nested loops otherwise.

use crate::catalog::{Access, Catalog, DbRef, ObjectDep, Table};
use crate::plan::{BoundQuery, Expr};
use crate::types::{self, SqlType};
use aggregate::AggContext;
use cte::DEFAULT_MAX_RECURSION;
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::Ident;

mod access;
mod aggregate;
mod context;
mod conversion;
mod cte;
mod deduce;
mod dml;
mod expr;
mod expr_walk;
mod from;
mod functions;
mod modules;
mod names;
mod pivot;
mod query;
mod select;
mod window;

pub use aggregate::contains_aggregate;
pub use context::{Catalogs, SessionNames};
pub use conversion::{cast_to, convert, literal};
pub use deduce::Deduced;
pub use dml::{
    bind_target, compile_assign, compile_delete, compile_insert, compile_merge, compile_update, ACTION_COLUMN,
};
pub use expr_walk::map_columns;
pub use modules::{nesting_error, ModuleShape, MAX_NESTING};
pub use names::Scope;

/// A database as a plan refers to it, and its name while the plan is bound.
#[derive(Clone, Debug)]
pub struct InDb {
    pub at: DbRef,
    pub name: String,
}

impl InDb {
    fn named(name: &str) -> InDb {
        InDb { at: DbRef::Named(name.to_string()), name: name.to_string() }
    }
}

pub struct Binder<'a> {
    pub catalogs: &'a dyn Catalogs,
    pub session: &'a dyn SessionNames,
    /// Declared variables of the frame: name (lower-cased, with `@`) and type, by slot.
    pub variables: &'a [(String, SqlType)],
    scopes: Vec<Scope>,
    ctes: Vec<(String, BoundQuery)>,
    /// Recursive CTEs: the next work table id, how many times a work table has been
    /// referenced so far (a member that references one is recursive), and the statement's
    /// recursion limit (`OPTION (MAXRECURSION n)`, default 100, 0 = none).
    next_work_table: usize,
    work_table_uses: usize,
    max_recursion: u16,
    /// The statement's join hint (`OPTION (LOOP JOIN)`): how every join is made.
    join_hint: Option<tessera_syntax::ast::JoinHint>,
    agg: Option<AggContext>,
    /// While binding a select list and its ORDER BY: the window calls met (elsewhere a
    /// window call is 4108).
    windows: Option<window::WindowContext>,
    /// While binding a FROM clause: the table that gets a hidden key column.
    key_target: Option<String>,
    /// The database unqualified names resolve in when not the session's (inside a view
    /// or function, its own database).
    default_db: Option<InDb>,
    /// Inside an inline table-valued function: its parameters, bound to the arguments.
    substitutions: Vec<(Expr, SqlType, String)>,
    /// How many scopes deep the substituted arguments were bound (see `expr_walk::deeper`).
    substitution_depth: usize,
    /// Views and functions being expanded (nesting limit).
    module_depth: i32,
    /// Every name looked up, and what was found (see `ObjectDep`).
    pub deps: Vec<ObjectDep>,
    /// The view or function whose definition is being bound (see `ObjectDep::via`).
    via: Option<(DbRef, String)>,
    /// The catalog snapshot of each database the statement names, taken at its first
    /// lookup there: a statement is bound against one snapshot per database, so what its
    /// names found and the definitions in its plan always agree.
    snapshots: Vec<(Arc<str>, Arc<Catalog>)>,
    /// While deducing undeclared parameters' types (`deduce.rs`): what was found.
    deduced: Option<Vec<deduce::Deduced>>,
}

/// A resolved table reference: how a plan refers to its database, the database's name
/// now, and the table's definition.
pub struct ResolvedTable {
    pub at: DbRef,
    pub db: String,
    pub table: Arc<Table>,
    /// Its entry among the binder's dependencies.
    pub dep: usize,
}

impl<'a> Binder<'a> {
    pub fn new(
        catalogs: &'a dyn Catalogs,
        session: &'a dyn SessionNames,
        variables: &'a [(String, SqlType)],
    ) -> Binder<'a> {
        // Constants converted while binding read dates in the session's order.
        types::set_session_date_format(session.dateformat());
        Binder {
            catalogs,
            session,
            variables,
            scopes: vec![Scope::default()],
            ctes: Vec::new(),
            next_work_table: 0,
            work_table_uses: 0,
            max_recursion: DEFAULT_MAX_RECURSION,
            join_hint: None,
            agg: None,
            windows: None,
            key_target: None,
            default_db: None,
            substitutions: Vec::new(),
            substitution_depth: 0,
            module_depth: 0,
            deps: Vec::new(),
            via: None,
            snapshots: Vec::new(),
            deduced: None,
        }
    }

    /// The database `name` as it is spelt and the catalog snapshot this statement binds
    /// against there; error 911 when there is no such database.
    fn snapshot(&mut self, name: &str) -> SqlResult<(Arc<str>, Arc<Catalog>)> {
        if let Some(found) = self.snapshots.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return Ok(found.clone());
        }
        let (spelt, shared) = self.catalogs.catalog(name)?;
        let found = (spelt.clone(), self.session.own_view(&spelt, shared));
        self.snapshots.push(found.clone());
        Ok(found)
    }

    /// Records what the name `key` found in database `db` (a table the plan reads or
    /// changes when `locked`) and what the statement does to it: the plan holds wherever
    /// the name finds the same.
    fn depend(&mut self, db: &DbRef, key: String, fingerprint: Option<u64>, locked: bool, access: Access) {
        let locked = locked && fingerprint.is_some();
        let access = if fingerprint.is_some() { access } else { Access::NONE };
        match self.deps.iter_mut().find(|d| d.db == *db && d.key == key && d.via == self.via) {
            Some(d) => {
                d.locked |= locked;
                d.access = d.access.union(access);
            }
            None => self.deps.push(ObjectDep {
                db: db.clone(),
                key,
                fingerprint,
                locked,
                access,
                via: self.via.clone(),
                columns: Vec::new(),
            }),
        }
    }

    /// Adds `access` to what the statement does to the object under `key` in `db` (named
    /// by the statement itself, or by the module being bound).
    pub fn add_access(&mut self, db: &DbRef, key: &str, access: Access) {
        if let Some(d) = self.deps.iter_mut().find(|d| d.db == *db && d.key == key && d.via == self.via) {
            if d.fingerprint.is_some() {
                d.access = d.access.union(access);
            }
        }
    }

    /// Notes that the statement reads (SELECT) or sets (UPDATE) column `column` of the
    /// table of dependency `dep` (see [`ObjectDep::columns`]).
    pub(super) fn note_column(&mut self, dep: usize, column: u16, access: Access) {
        let Some(d) = self.deps.get_mut(dep) else { return };
        match d.columns.iter_mut().find(|(c, _)| *c == column) {
            Some((_, a)) => *a = a.union(access),
            None => d.columns.push((column, access)),
        }
    }

    /// [`Binder::note_column`] for the table under `key` in `db`.
    pub fn note_column_of(&mut self, db: &DbRef, key: &str, column: u16, access: Access) {
        if let Some(i) = self.deps.iter().position(|d| d.db == *db && d.key == key && d.via == self.via) {
            self.note_column(i, column, access);
        }
    }

    /// Whether the statement reads (SELECT) any column of the table under `key` in `db`.
    pub fn reads_columns_of(&self, db: &DbRef, key: &str) -> bool {
        self.deps
            .iter()
            .find(|d| d.db == *db && d.key == key && d.via == self.via)
            .is_some_and(|d| d.columns.iter().any(|(_, a)| a.includes("SELECT")))
    }

    /// Takes `access` away from the object under `key` in `db` (an UPDATE or DELETE that
    /// reads nothing of its target needs no SELECT on it).
    pub fn remove_access(&mut self, db: &DbRef, key: &str, access: Access) {
        if let Some(d) = self.deps.iter_mut().find(|d| d.db == *db && d.key == key && d.via == self.via) {
            d.access = d.access.without(access);
        }
    }
}

pub fn invalid_object(name: &str) -> SqlError {
    msg::INVALID_OBJECT_NAME.with(&[&name])
}

pub fn invalid_column(name: &str) -> SqlError {
    msg::INVALID_COLUMN_NAME.with(&[&name])
}

pub fn ident_list(ids: &[Ident]) -> String {
    ids.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(", ")
}
