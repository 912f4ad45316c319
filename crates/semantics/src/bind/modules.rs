//! Views and user-defined functions: their definitions bound in their own database, as
//! derived tables or scalar function calls.

use super::conversion::convert;
use super::names::Scope;
use super::{invalid_object, Binder, InDb};
use crate::cache::CachedBatch;
use crate::catalog::{name_key, Access, Module, Object};
use crate::plan::{columns_used, BoundQuery, Expr, Plan, Prepared};
use crate::types::{self, SqlType};
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{self, ObjectName};

/// A view's or inline function's columns and the tables and columns it reads
/// ([`Binder::module_shape`]).
pub struct ModuleShape {
    pub columns: Vec<crate::output::OutputColumn>,
    pub uses: Vec<(crate::catalog::DbRef, String, Vec<u16>)>,
}

/// SQL Server's most nested module calls (procedures, functions, views).
pub const MAX_NESTING: i32 = 32;

pub fn nesting_error() -> SqlError {
    msg::MAX_NESTING_LEVEL_EXCEEDED.err()
}

impl<'a> Binder<'a> {
    /// A view, procedure or function by name: (its database, module), which the statement
    /// uses as `access` says. What the name found (a table, nothing) is a dependency of
    /// the plan too.
    pub(super) fn module(&mut self, name: &ObjectName, access: Access) -> SqlResult<Option<(InDb, Arc<Module>)>> {
        let (db, schema, obj) = self.qualify_at(name)?;
        if obj.starts_with('#') || name.name().value.starts_with('@') || !self.catalogs.exists(&db.name) {
            return Ok(None);
        }
        self.depend_on_default_schema(name, &db.at, &schema);
        let (database, catalog) = self.snapshot(&db.name)?;
        let key = name_key(&schema, &obj);
        let found = catalog.lookup_key(&key);
        let module = match found {
            Some(Object::Module(m)) if m.kind == crate::catalog::ModuleKind::Synonym => {
                let m = m.clone();
                self.depend(&db.at, key.clone(), catalog.fingerprint_of(&key), false, Access::NONE);
                let target = self.synonym_target(&database, &m)?;
                return self.module(&target, access);
            }
            Some(Object::Module(m)) => Some(m.clone()),
            _ => None,
        };
        let access = if module.is_some() { access } else { Access::NONE };
        self.depend(&db.at, key.clone(), catalog.fingerprint_of(&key), false, access);
        Ok(module.map(|m| (InDb { at: db.at, name: database.to_string() }, m)))
    }

    /// The name the synonym `m` of database `database` stands for, with that database
    /// named when its own name has none (a synonym's one- and two-part names are its
    /// database's). 5313 for a synonym whose target is a synonym.
    pub(super) fn synonym_target(&mut self, database: &str, m: &Module) -> SqlResult<ObjectName> {
        let cached = self.definition(m)?;
        let Some(ast::StatementKind::CreateSynonym { target, .. }) = cached.batch.statements.first().map(|s| &s.kind)
        else {
            return Err(invalid_object(&m.name));
        };
        let mut parts = target.0.clone();
        match parts.len() {
            1 => {
                parts.insert(0, ast::Ident::new(""));
                parts.insert(0, ast::Ident::new(database));
            }
            2 => parts.insert(0, ast::Ident::new(database)),
            _ => {}
        }
        let target = ObjectName(parts);
        let (db, schema, obj) = self.qualify_at(&target)?;
        if let Ok((_, catalog)) = self.snapshot(&db.name) {
            if let Some(Object::Module(t)) = catalog.lookup(&schema, &obj) {
                if t.kind == crate::catalog::ModuleKind::Synonym {
                    return Err(msg::SYNONYM_INVALID_OBJECT.with(&[&m.name]));
                }
            }
        }
        Ok(target)
    }

    /// The sequence `name` names for NEXT VALUE FOR (which needs UPDATE on it): how the
    /// plan refers to its database, and its definition; 208 when there is none.
    pub(super) fn sequence(
        &mut self,
        name: &ObjectName,
    ) -> SqlResult<(crate::catalog::DbRef, Arc<crate::catalog::Sequence>)> {
        let (db, schema, obj) = self.qualify_at(name)?;
        if !self.catalogs.exists(&db.name) {
            return Err(crate::catalog::database_not_found(&db.name));
        }
        self.depend_on_default_schema(name, &db.at, &schema);
        let (database, catalog) = self.snapshot(&db.name)?;
        let key = name_key(&schema, &obj);
        let sequence = match catalog.lookup_key(&key).cloned() {
            Some(Object::Sequence(sequence)) => sequence,
            Some(Object::Module(m)) if m.kind == crate::catalog::ModuleKind::Synonym => {
                self.depend(&db.at, key.clone(), catalog.fingerprint_of(&key), false, Access::NONE);
                let target = self.synonym_target(&database, &m)?;
                return self.sequence(&target).map_err(|e| super::names::synonym_error(e, &m.name));
            }
            _ => return Err(invalid_object(&super::names::object_display(name))),
        };
        self.depend(&db.at, key.clone(), catalog.fingerprint_of(&key), false, Access::UPDATE);
        Ok((db.at, sequence))
    }

    /// Parses a module's definition (through the plan cache).
    fn definition(&self, m: &Module) -> SqlResult<Arc<CachedBatch<Prepared>>> {
        self.catalogs.module_definition(&m.text)
    }

    /// Binds the query of the module `m` in its own database, one nesting level down;
    /// what it names is reached through `m` (see `ObjectDep::via`).
    fn bind_in_module<T>(&mut self, db: &InDb, m: &Module, f: impl FnOnce(&mut Self) -> SqlResult<T>) -> SqlResult<T> {
        if self.module_depth >= MAX_NESTING {
            return Err(nesting_error());
        }
        let saved_via = self.via.replace((db.at.clone(), name_key(&m.schema, &m.name)));
        let saved_db = self.default_db.replace(db.clone());
        let saved_ctes = std::mem::take(&mut self.ctes);
        self.module_depth += 1;
        self.scopes.push(Scope::default());
        let r = f(self);
        self.scopes.pop();
        self.module_depth -= 1;
        self.ctes = saved_ctes;
        self.default_db = saved_db;
        self.via = saved_via;
        r
    }

    /// A view as a derived table.
    pub(super) fn bind_view(&mut self, db: &InDb, m: &Module) -> SqlResult<BoundQuery> {
        let cached = self.definition(m)?;
        let Some(ast::StatementKind::CreateView(cv)) = cached.batch.statements.first().map(|s| &s.kind) else {
            return Err(invalid_object(&m.name));
        };
        let mut bound = self.bind_in_module(db, m, |b| b.bind_query(&cv.query))?;
        for (c, n) in bound.columns.iter_mut().zip(&cv.columns) {
            c.name = n.value.clone();
        }
        Ok(bound)
    }

    /// What the view or inline table-valued function `m` of database `db` is as its
    /// definition binds now (a function's with every parameter NULL), for the catalog
    /// views that describe it: its columns, and the tables it reads (their database, as
    /// the definition names it, and lower-cased `schema.name`) with the columns of each it
    /// reads (by position, ascending). 208 for a module of another kind.
    pub fn module_shape(&mut self, db: &str, m: &Module) -> SqlResult<ModuleShape> {
        let in_db = InDb::named(db);
        let bound = match m.kind {
            crate::catalog::ModuleKind::View => self.bind_view(&in_db, m)?,
            crate::catalog::ModuleKind::TableFunction => {
                let cached = self.definition(m)?;
                let Some(ast::StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind)
                else {
                    return Err(invalid_object(&m.name));
                };
                let nulls = vec![ast::Expr::Literal(ast::Literal::Null); cf.params.len()];
                self.bind_table_function(&in_db, m, &nulls)?
            }
            crate::catalog::ModuleKind::MultiStatementFunction => {
                let cached = self.definition(m)?;
                let Some(ast::StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind)
                else {
                    return Err(invalid_object(&m.name));
                };
                let nulls = vec![ast::Expr::Literal(ast::Literal::Null); cf.params.len()];
                self.bind_multi_statement_function(&in_db, m, &nulls)?
            }
            _ => return Err(invalid_object(&m.name)),
        };
        let via = (in_db.at, name_key(&m.schema, &m.name));
        let mut uses: Vec<(crate::catalog::DbRef, String, Vec<u16>)> = Vec::new();
        for d in self.deps.iter().filter(|d| d.via.as_ref() == Some(&via) && d.locked) {
            let mut columns: Vec<u16> = d.columns.iter().map(|(c, _)| *c).collect();
            columns.sort_unstable();
            uses.push((d.db.clone(), d.key.clone(), columns));
        }
        Ok(ModuleShape { columns: bound.columns, uses })
    }

    /// An inline table-valued function call as a derived table; its parameters take the
    /// arguments' values (which may not read columns).
    pub(super) fn bind_table_function(&mut self, db: &InDb, m: &Module, args: &[ast::Expr]) -> SqlResult<BoundQuery> {
        let cached = self.definition(m)?;
        let Some(ast::StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind) else {
            return Err(invalid_object(&m.name));
        };
        let ast::FunctionReturns::InlineTable(query) = &cf.returns else {
            return Err(invalid_object(&m.name));
        };
        let bound_args = self.function_arguments(&m.name, &cf.params, args)?;
        for (e, _, _) in &bound_args {
            let mut used = Vec::new();
            if !columns_used(e, &mut used) || !used.is_empty() {
                return Err(msg::CORRELATED_TVF_ARGS_NOT_SUPPORTED.err());
            }
        }
        let saved = std::mem::replace(&mut self.substitutions, bound_args);
        let saved_depth = self.substitution_depth;
        // The body's query is the level the arguments were bound for (the module's own
        // scope stands in for the one they were bound in).
        let r = self.bind_in_module(db, m, |b| {
            b.substitution_depth = b.scopes.len();
            b.bind_query(query)
        });
        self.substitutions = saved;
        self.substitution_depth = saved_depth;
        r
    }

    /// A multi-statement table-valued function call: a node that runs the body with the
    /// arguments' values (bound here, converted to the parameters' types) when it opens.
    pub(super) fn bind_multi_statement_function(
        &mut self,
        db: &InDb,
        m: &Module,
        args: &[ast::Expr],
    ) -> SqlResult<BoundQuery> {
        let cached = self.definition(m)?;
        let Some(ast::StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind) else {
            return Err(invalid_object(&m.name));
        };
        let ast::FunctionReturns::MultiStatement { columns, .. } = &cf.returns else {
            return Err(invalid_object(&m.name));
        };
        let bound = self.function_arguments(&m.name, &cf.params, args)?;
        let columns = columns
            .iter()
            .map(|c| {
                Ok(crate::output::OutputColumn {
                    name: c.name.value.clone(),
                    ty: types::resolve_type(&c.ty, false)?,
                    nullable: c.nullable != Some(false),
                })
            })
            .collect::<SqlResult<Vec<_>>>()?;
        let call = crate::plan::TableCall {
            db: db.at.clone(),
            schema: m.schema.clone(),
            name: m.name.clone(),
            text: Arc::from(m.text.as_str()),
            arg_types: bound.iter().map(|b| b.1).collect(),
            columns: columns.clone(),
        };
        let plan = Plan::TableFunctionCall { call: Arc::new(call), args: bound.into_iter().map(|b| b.0).collect() };
        Ok(BoundQuery { plan, columns })
    }

    /// Binds call arguments against a function's parameters (defaults via `DEFAULT`),
    /// converted to the parameter types: (expression, type, parameter name).
    fn function_arguments(
        &mut self,
        fname: &str,
        params: &[ast::Parameter],
        args: &[ast::Expr],
    ) -> SqlResult<Vec<(Expr, SqlType, String)>> {
        if args.len() > params.len() {
            return Err(msg::TOO_MANY_ARGUMENTS.with(&[&fname]));
        }
        let mut out = Vec::with_capacity(params.len());
        for (i, p) in params.iter().enumerate() {
            let ty = types::resolve_type(&p.ty, false)?;
            let (e, t) = match args.get(i) {
                Some(ast::Expr::Default) | None => match (&p.default, args.get(i)) {
                    (Some(d), Some(_)) => self.bind_expr(d)?,
                    _ => return Err(msg::TOO_FEW_ARGUMENTS.with(&[&fname])),
                },
                Some(a) => self.bind_passed(a, &ty, Some(&p.name))?,
            };
            out.push((convert(e, &t, &ty)?, ty, p.name.to_lowercase()));
        }
        Ok(out)
    }

    pub(super) fn bind_scalar_function(
        &mut self,
        db: &InDb,
        m: &Arc<Module>,
        args: &[ast::Expr],
    ) -> SqlResult<(Expr, SqlType, bool)> {
        let cached = self.definition(m)?;
        let Some(ast::StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind) else {
            return Err(invalid_object(&m.name));
        };
        let ast::FunctionReturns::Scalar { ty, .. } = &cf.returns else {
            return Err(invalid_object(&m.name));
        };
        let ty = types::resolve_type(ty, false)?;
        let bound = self.function_arguments(&m.name, &cf.params, args)?;
        let call = crate::plan::UserCall {
            db: db.at.clone(),
            schema: m.schema.clone(),
            name: m.name.clone(),
            text: Arc::from(m.text.as_str()),
            arg_types: bound.iter().map(|b| b.1).collect(),
            ty,
        };
        Ok((Expr::UserFunction { call: Arc::new(call), args: bound.into_iter().map(|b| b.0).collect() }, ty, true))
    }
}
