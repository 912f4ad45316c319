//! Scopes and name resolution: columns (of this query, or of enclosing queries as outer
//! references), variables, and table names to (database, schema, name).

use super::{invalid_column, invalid_object, Binder, InDb, ResolvedTable};
use crate::catalog::{name_key, DbRef, Object, Table};
use crate::plan::{Expr, View};
use crate::types::SqlType;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::ObjectName;

#[derive(Clone, Debug)]
pub(super) struct ScopeColumn {
    /// The alias or table name that qualifies the column (lower-cased).
    pub(super) qualifier: Option<String>,
    pub(super) name: String,
    pub(super) ty: SqlType,
    pub(super) nullable: bool,
    /// The table column it is (its dependency's index and the column's position), for
    /// column permissions; `None` for anything else.
    pub(super) source: Option<(usize, u16)>,
}

#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub(super) columns: Vec<ScopeColumn>,
    /// Set when this query references columns of an enclosing query.
    pub(super) correlated: bool,
}

impl Scope {
    /// Position of the hidden storage-key column of the UPDATE/DELETE target, and where
    /// that table's columns start.
    pub fn target_key(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.name == KEY_COLUMN)
    }

    /// Where the first column of the source called `qualifier` is.
    pub(super) fn first_of(&self, qualifier: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.qualifier.as_deref() == Some(qualifier))
    }

    /// Puts the columns at `range` out of reach of names; they keep their positions.
    pub(super) fn hide(&mut self, range: std::ops::Range<usize>) {
        for c in &mut self.columns[range] {
            c.qualifier = Some(HIDDEN.into());
            c.name = HIDDEN.into();
        }
    }

    /// Appends another scope's columns after this one's.
    pub(super) fn extend(&mut self, other: Scope) {
        self.columns.extend(other.columns);
        self.correlated |= other.correlated;
    }

    /// Appends an unqualified column that is no table's (MERGE's `$action`).
    pub(super) fn push_column(&mut self, name: &str, ty: SqlType) {
        self.columns.push(ScopeColumn { qualifier: None, name: name.into(), ty, nullable: false, source: None });
    }
}

/// The name and qualifier of a column no name reaches (a name cannot hold a NUL).
const HIDDEN: &str = "\0";

/// Name of the hidden column carrying a row's storage key.
pub(super) const KEY_COLUMN: &str = "%%key%%";

/// A scope column as SQL Server names it in errors: `qualifier.name`.
pub(super) fn qualified_name(c: &ScopeColumn) -> String {
    match &c.qualifier {
        Some(q) => format!("{q}.{}", c.name),
        None => c.name.clone(),
    }
}

pub(super) fn object_display(name: &ObjectName) -> String {
    name.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".")
}

impl<'a> Binder<'a> {
    /// Resolves a table name to (database, schema, name); `#temp` names map to the
    /// session's table in tempdb.
    pub fn qualify(&self, name: &ObjectName) -> SqlResult<(String, String, String)> {
        self.qualify_at(name).map(|(db, schema, obj)| (db.name, schema, obj))
    }

    /// As `qualify`, for an object about to be created: a one-part name goes in the
    /// session's default schema.
    pub fn qualify_new(&self, name: &ObjectName) -> SqlResult<(String, String, String)> {
        let (db, schema, obj) = self.qualify(name)?;
        if name.0.len() == 1 && !obj.starts_with(['#', '@']) && self.default_db.is_none() {
            return Ok((db, self.session.default_schema().to_string(), obj));
        }
        Ok((db, schema, obj))
    }

    /// SQL Server's active default schema: inside a view or function being bound, its
    /// schema; elsewhere the session's (a procedure's while one runs, the user's default
    /// schema otherwise).
    fn active_schema(&self) -> String {
        match &self.via {
            Some((_, key)) => key.split('.').next().unwrap_or("dbo").to_string(),
            None => self.session.default_schema().to_string(),
        }
    }

    /// The schema a one-part name means: the active default schema when the object is
    /// there, else dbo.
    fn unqualified_schema(&self, db: &str, own: &str) -> String {
        let active = self.active_schema();
        if active.eq_ignore_ascii_case("dbo") {
            return "dbo".to_string();
        }
        match self.catalogs.catalog(db) {
            Ok((_, catalog)) if catalog.lookup(&active, own).is_some() => active,
            _ => "dbo".to_string(),
        }
    }

    /// A one-part name that fell back to dbo depends on there being nothing of that name
    /// in the active default schema: a plan bound so must not run where there is.
    pub(super) fn depend_on_default_schema(&mut self, name: &ObjectName, at: &DbRef, schema: &str) {
        let active = self.active_schema();
        if name.0.len() == 1 && !active.eq_ignore_ascii_case(schema) {
            self.depend(at, name_key(&active, &name.name().value), None, false, crate::catalog::Access::NONE);
        }
    }

    /// As `qualify`, with how a plan refers to the database: a name without a database
    /// part means the database the plan runs in (inside a module, the module's database,
    /// which is itself relative when the module was named so).
    pub(super) fn qualify_at(&self, name: &ObjectName) -> SqlResult<(InDb, String, String)> {
        let parts = &name.0;
        let own = &name.name().value;
        let tempdb = || InDb::named("tempdb");
        if own.starts_with('@') && parts.len() == 1 {
            // A table variable: a table of this session in tempdb.
            return match self.session.temp_table(&own.to_lowercase()) {
                Some(real) => Ok((tempdb(), "dbo".to_string(), real.to_string())),
                None => Err(msg::UNDECLARED_TABLE_VARIABLE.with(&[&own])),
            };
        }
        if own.starts_with('#') {
            let real = self.session.temp_table(&own.to_lowercase()).map_or_else(|| own.clone(), str::to_string);
            return Ok((tempdb(), "dbo".to_string(), real));
        }
        let current = self
            .default_db
            .clone()
            .unwrap_or_else(|| InDb { at: DbRef::Current, name: self.session.database().to_string() });
        let part = |i: usize, default: &str| -> String {
            match parts.get(i) {
                Some(p) if !p.value.is_empty() => p.value.clone(),
                _ => default.to_string(),
            }
        };
        let database = |i: usize| match parts.get(i) {
            Some(p) if !p.value.is_empty() => InDb::named(&p.value),
            _ => current.clone(),
        };
        Ok(match parts.len() {
            1 => {
                let schema = self.unqualified_schema(&current.name, own);
                (current.clone(), schema, own.clone())
            }
            2 => (current.clone(), part(0, "dbo"), own.clone()),
            3 => (database(0), part(1, "dbo"), own.clone()),
            4 => (database(1), part(2, "dbo"), own.clone()),
            _ => return Err(msg::TOO_MANY_NAME_PREFIXES.with(&[&object_display(name)])),
        })
    }

    pub fn resolve_table(&mut self, name: &ObjectName) -> SqlResult<ResolvedTable> {
        let (db, schema, obj) = self.qualify_at(name)?;
        self.depend_on_default_schema(name, &db.at, &schema);
        let (database, catalog) = match self.snapshot(&db.name) {
            Ok(found) => found,
            // A table of a database that does not exist is an invalid object name, as in
            // SQL Server (911 is for USE and the statements that name a database alone).
            Err(e) if e.number == msg::DATABASE_NOT_FOUND.number => return Err(invalid_object(&object_display(name))),
            Err(e) => return Err(e),
        };
        let key = name_key(&schema, &obj);
        let found = catalog.lookup_key(&key);
        self.depend(&db.at, key.clone(), catalog.fingerprint_of(&key), true, crate::catalog::Access::SELECT);
        let dep =
            self.deps.iter().position(|d| d.db == db.at && d.key == key && d.via == self.via).unwrap_or(usize::MAX);
        match found {
            Some(Object::Table(t)) => Ok(ResolvedTable { at: db.at, db: database.to_string(), table: t.clone(), dep }),
            Some(Object::Module(m)) if m.kind == crate::catalog::ModuleKind::Synonym => {
                let m = m.clone();
                let target = self.synonym_target(&database, &m)?;
                self.resolve_table(&target).map_err(|e| synonym_error(e, &m.name))
            }
            _ => Err(invalid_object(&object_display(name))),
        }
    }

    /// The system view a name refers to (`sys.x`, `db.sys.x`, `INFORMATION_SCHEMA.x`).
    pub(super) fn system_view(&self, name: &ObjectName) -> Option<View> {
        let n = name.0.len();
        if n < 2 {
            return None;
        }
        self.catalogs.system_view(&name.0[n - 2].value.to_lowercase(), &name.0[n - 1].value.to_lowercase())
    }

    /// The system table-valued function `name` names (`f`, `sys.f` or `db.sys.f`), if any.
    pub(super) fn system_function(&self, name: &ObjectName) -> Option<View> {
        match name.0.as_slice() {
            [f] => self.catalogs.system_function(&f.value.to_lowercase()),
            [schema, f] | [_, schema, f] if schema.is("sys") => self.catalogs.system_function(&f.value.to_lowercase()),
            _ => None,
        }
    }

    /// A declared variable's slot and type (error 137 if undeclared).
    pub fn variable_slot(&self, name: &str) -> SqlResult<(usize, SqlType)> {
        self.variable(name)
    }

    /// Binds with a table's own row as the scope (CHECK and DEFAULT definitions).
    pub fn with_table_scope<T>(&mut self, table: &Table, f: impl FnOnce(&mut Self) -> T) -> T {
        let q = table.name.to_lowercase();
        let columns = table
            .columns
            .iter()
            .map(|c| ScopeColumn {
                qualifier: Some(q.clone()),
                name: c.name.clone(),
                ty: c.ty,
                nullable: c.nullable,
                source: None,
            })
            .collect();
        self.with_scope(Scope { columns, correlated: false }, f)
    }

    /// The scope of an OUTPUT clause: the `deleted` row, then the `inserted` row.
    pub(super) fn output_scope(table: &Table) -> Scope {
        let mut columns = Vec::new();
        for q in ["deleted", "inserted"] {
            for c in &table.columns {
                columns.push(ScopeColumn {
                    qualifier: Some(q.to_string()),
                    name: c.name.clone(),
                    ty: c.ty,
                    nullable: true,
                    source: None,
                });
            }
        }
        Scope { columns, correlated: false }
    }

    pub fn with_bound_scope<T>(&mut self, scope: Scope, f: impl FnOnce(&mut Self) -> T) -> T {
        self.with_scope(scope, f)
    }

    /// Runs `f` with the innermost scope replaced by `scope`, keeping what `f` learnt
    /// about correlation.
    pub fn with_scope<T>(&mut self, scope: Scope, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = std::mem::replace(self.scopes.last_mut().expect("a scope"), scope);
        let out = f(self);
        let used = std::mem::replace(self.scopes.last_mut().expect("a scope"), saved);
        self.scopes.last_mut().expect("a scope").correlated |= used.correlated;
        out
    }

    pub(super) fn variable(&self, name: &str) -> SqlResult<(usize, SqlType)> {
        let lower = name.to_lowercase();
        self.variables
            .iter()
            .rposition(|(n, _)| *n == lower)
            .map(|i| (i, self.variables[i].1))
            .ok_or_else(|| msg::UNDECLARED_VARIABLE.with(&[&name]).with_state(2))
    }

    pub(super) fn find_in_scope(scope: &Scope, name: &ObjectName) -> SqlResult<Option<usize>> {
        let col = &name.name().value;
        let qualifier = (name.0.len() >= 2).then(|| name.0[name.0.len() - 2].value.to_lowercase());
        let mut found = None;
        for (i, c) in scope.columns.iter().enumerate() {
            if !c.name.eq_ignore_ascii_case(col) {
                continue;
            }
            if let Some(q) = &qualifier {
                if c.qualifier.as_deref() != Some(q.as_str()) {
                    continue;
                }
            }
            if found.is_some() {
                return Err(msg::AMBIGUOUS_COLUMN_NAME.with(&[&col]));
            }
            found = Some(i);
        }
        Ok(found)
    }

    pub(super) fn resolve_column(&mut self, name: &ObjectName) -> SqlResult<(Expr, SqlType, bool)> {
        let n = self.scopes.len();
        for depth in 0..n {
            let scope = &self.scopes[n - 1 - depth];
            if let Some(i) = Self::find_in_scope(scope, name)? {
                let c = &scope.columns[i];
                let (ty, nullable, source) = (c.ty, c.nullable, c.source);
                if let Some((dep, column)) = source {
                    self.note_column(dep, column, crate::catalog::Access::SELECT);
                }
                if depth == 0 {
                    return Ok((Expr::Column(i), ty, nullable));
                }
                for s in &mut self.scopes[n - depth..] {
                    s.correlated = true;
                }
                return Ok((Expr::OuterRef { depth: depth - 1, index: i }, ty, nullable));
            }
        }
        if name.0.len() >= 2 {
            let q = &name.0[name.0.len() - 2].value;
            let known =
                self.scopes.iter().any(|s| s.columns.iter().any(|c| c.qualifier.as_deref() == Some(&q.to_lowercase())));
            if !known {
                return Err(msg::MULTIPART_ID_NOT_BOUND.with(&[&object_display(name)]));
            }
        }
        Err(invalid_column(&name.name().value))
    }
}

/// A synonym's target that does not resolve: 5313, naming the synonym (208 said the
/// target's name).
pub(super) fn synonym_error(e: SqlError, synonym: &str) -> SqlError {
    if e.number == msg::INVALID_OBJECT_NAME.number {
        msg::SYNONYM_INVALID_OBJECT.with(&[&synonym])
    } else {
        e
    }
}
