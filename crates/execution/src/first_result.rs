//! The first result set a batch would send, found by static analysis
//! (`sp_describe_first_result_set`, `sys.dm_exec_describe_first_result_set`): the batch
//! is parsed and its queries bound, nothing runs. Every code path is followed (IF/ELSE,
//! WHILE, TRY/CATCH, RETURN, and the bodies of the procedures it EXECs, bound in their
//! own database and schema); where paths give different first results they are merged as
//! SQL Server documents: a name that differs becomes NULL, nullability is the union, a
//! type may only widen within `varchar`, `nvarchar` or `varbinary`, and anything else is
//! 11509–11512. Dynamic SQL is 11513/11514, a procedure that reaches itself 11523/11524,
//! a temp table in a batch of more than one statement 11525/11526.
//!
//! Limits: at most [`MAX_VISITS`] statements are looked at over all paths (SQL Server
//! also stops "at some point"); paths beyond that are not followed.

use std::sync::Arc;

use crate::runtime::Shared;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::bind::{Binder, SessionNames};
use tessera_semantics::catalog::ModuleKind;
use tessera_semantics::frame::{addr, Frame};
use tessera_semantics::output::OutputColumn;
use tessera_semantics::types::SqlType;
use tessera_syntax::ast::{self, SelectItem, SetExpr, Statement, StatementKind};
use tessera_syntax::references::mentions_temp_table;

/// The most statements the analysis looks at, over every path.
const MAX_VISITS: usize = 10_000;

/// A first result found on one path: its columns, the statement that sends it and the
/// procedure that statement is in (None: the batch itself).
struct First {
    columns: Vec<OutputColumn>,
    statement: String,
    procedure: Option<String>,
}

/// Where the statements being walked come from.
struct Scope<'t> {
    /// The batch or procedure text the statements' spans index.
    text: &'t str,
    frame: &'t Frame,
    procedure: Option<String>,
    /// The batch is one statement (the only case where a temp table may be described).
    single: bool,
}

impl Scope<'_> {
    fn shown(&self, s: &Statement) -> String {
        self.text.get(s.span.0..s.span.1).unwrap_or("").trim().to_string()
    }

    /// The statement-level error `in_batch` or, inside a procedure, `in_procedure`.
    fn error(
        &self,
        s: &Statement,
        in_batch: &tessera_errors::catalog::Message,
        in_procedure: &tessera_errors::catalog::Message,
    ) -> SqlError {
        let statement = self.shown(s);
        match &self.procedure {
            None => in_batch.with(&[&statement]),
            Some(p) => in_procedure.with(&[&statement, p]),
        }
    }
}

/// The parameters `params_text` declares (`@a int, @b nvarchar(10) OUTPUT`), as a
/// procedure's header would: sp_executesql's `@params`, and the describing procedures'.
pub fn declared_parameters(shared: &Shared, params_text: &str) -> SqlResult<Vec<ast::Parameter>> {
    let header = format!("CREATE PROCEDURE sp_executesql_parameters {params_text}\nAS RETURN");
    let declared = shared.plans.get_or_parse(&header, tessera_syntax::parser::parse_batch)?;
    match declared.batch.statements.first().map(|st| &st.kind) {
        Some(StatementKind::CreateProcedure(cp)) => Ok(cp.params.clone()),
        _ => Err(msg::PARAMETERS_NOT_SUPPLIED.err()),
    }
}

/// The columns of the first result set `tsql` (with the parameters `params`) would send,
/// bound as the session `names` would bind it; none when it sends none.
pub fn first_result_of_batch(
    shared: &Shared,
    names: &dyn SessionNames,
    tsql: &str,
    params: &[ast::Parameter],
) -> SqlResult<Vec<OutputColumn>> {
    let cached = shared.plans.get_or_parse(tsql, tessera_syntax::parser::parse_batch)?;
    let statements = &cached.batch.statements;
    let frame = Frame::of_procedure(params, statements)?;
    let scope = Scope { text: tsql, frame: &frame, procedure: None, single: statements.len() == 1 };
    let all: Vec<&Statement> = statements.iter().collect();
    let mut walk = Walk { visits: 0, procedures: Vec::new() };
    let analysis = Analysis { shared, names };
    Ok(analysis.first_of(&scope, &all, &mut walk)?.map(|f| f.columns).unwrap_or_default())
}

/// The server and the session names the batch's statements are bound with.
struct Analysis<'a> {
    shared: &'a Shared,
    names: &'a dyn SessionNames,
}

impl Analysis<'_> {
    /// The first result on every path through `stmts`, merged.
    fn first_of<'s>(&self, scope: &Scope, stmts: &[&'s Statement], walk: &mut Walk) -> SqlResult<Option<First>> {
        for (i, s) in stmts.iter().enumerate() {
            walk.visits += 1;
            if walk.visits > MAX_VISITS {
                return Ok(None);
            }
            let rest = &stmts[i + 1..];
            let then = |first: &[&'s Statement]| -> Vec<&'s Statement> { first.iter().chain(rest).copied().collect() };
            match &s.kind {
                StatementKind::Block(body) => {
                    let body: Vec<&Statement> = body.iter().collect();
                    return self.first_of(scope, &then(&body), walk);
                }
                StatementKind::If { then: yes, otherwise, .. } => {
                    let a = self.first_of(scope, &then(&[&**yes]), walk)?;
                    let no: Vec<&Statement> = otherwise.iter().map(|o| &**o).collect();
                    let b = self.first_of(scope, &then(&no), walk)?;
                    return merge(a, b);
                }
                StatementKind::While { body, .. } => {
                    let a = self.first_of(scope, &then(&[&**body]), walk)?;
                    let b = self.first_of(scope, rest, walk)?;
                    return merge(a, b);
                }
                StatementKind::TryCatch { try_block, catch_block } => {
                    let a = self.first_of(scope, &then(&try_block.iter().collect::<Vec<_>>()), walk)?;
                    let b = self.first_of(scope, &then(&catch_block.iter().collect::<Vec<_>>()), walk)?;
                    return merge(a, b);
                }
                StatementKind::Return(_) => return Ok(None),
                StatementKind::Query(q) if sends_rows(q) => {
                    if !scope.single && mentions_temp_table(s) {
                        return Err(scope.error(s, &msg::DESCRIBE_TEMP_TABLE, &msg::DESCRIBE_TEMP_TABLE_IN_PROCEDURE));
                    }
                    let n = scope.frame.visible.get(&addr(*s)).copied().unwrap_or(scope.frame.decls.len());
                    let vars: &[(String, SqlType)] = &scope.frame.decls[..n];
                    let bound = Binder::new(self.shared, self.names, vars).bind_query(q)?;
                    return Ok(Some(First {
                        columns: bound.columns,
                        statement: scope.shown(s),
                        procedure: scope.procedure.clone(),
                    }));
                }
                StatementKind::ExecuteString(_) => {
                    return Err(scope.error(s, &msg::DESCRIBE_DYNAMIC_SQL, &msg::DESCRIBE_DYNAMIC_SQL_IN_PROCEDURE));
                }
                StatementKind::Execute(e) => {
                    if let Some(found) = self.first_of_procedure(scope, s, e, walk)? {
                        return Ok(Some(found));
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// The first result of the procedure `e` calls (None if it sends none, or names a
    /// system procedure that sends none).
    fn first_of_procedure(
        &self,
        scope: &Scope,
        s: &Statement,
        e: &ast::Execute,
        walk: &mut Walk,
    ) -> SqlResult<Option<First>> {
        let name = e.procedure.name().value.clone();
        if name.eq_ignore_ascii_case("sp_executesql") {
            return Err(scope.error(s, &msg::DESCRIBE_DYNAMIC_SQL, &msg::DESCRIBE_DYNAMIC_SQL_IN_PROCEDURE));
        }
        // A system procedure (`sp_…` that is not the database's own) sends no first result
        // the analysis can see.
        let system = name.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("sp_"));
        let missing = || {
            let shown = e.procedure.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
            msg::PROCEDURE_NOT_FOUND.with(&[&shown])
        };
        let (db, schema, object) = Binder::new(self.shared, self.names, &[]).qualify(&e.procedure)?;
        if !self.shared.engine.exists(&db) {
            return if system { Ok(None) } else { Err(missing()) };
        }
        let database = self.shared.database(&db)?;
        let catalog = self.names.own_view(database.name(), self.shared.catalog(&database)?);
        let module = catalog.module(&schema, &object).filter(|m| m.kind == ModuleKind::Procedure).cloned();
        let Some(module) = module else {
            return if system { Ok(None) } else { Err(missing()) };
        };
        let qualified = format!("{}.{}", module.schema, module.name);
        if walk.procedures.iter().any(|p| p.eq_ignore_ascii_case(&qualified)) {
            return Err(scope.error(
                s,
                &msg::DESCRIBE_INDIRECT_RECURSION,
                &msg::DESCRIBE_INDIRECT_RECURSION_IN_PROCEDURE,
            ));
        }
        let cached = self.shared.plans.get_or_parse(&module.text, tessera_syntax::parser::parse_batch)?;
        let Some(StatementKind::CreateProcedure(cp)) = cached.batch.statements.first().map(|st| &st.kind) else {
            return Err(msg::PROCEDURE_NOT_FOUND.with(&[&module.name]));
        };
        let frame = Frame::of_procedure(&cp.params, &cp.body)?;
        let inner = Scope { text: &module.text, frame: &frame, procedure: Some(module.name.clone()), single: false };
        let body: Vec<&Statement> = cp.body.iter().collect();
        // The body's names are the procedure's database's and schema's.
        let within = Within { names: self.names, database: database.name().to_string(), schema: module.schema.clone() };
        let nested = Analysis { shared: self.shared, names: &within };
        walk.procedures.push(qualified);
        let first = nested.first_of(&inner, &body, walk);
        walk.procedures.pop();
        first
    }
}

/// A session's names with another current database and default schema (a procedure's,
/// whose body binds there).
struct Within<'a> {
    names: &'a dyn SessionNames,
    database: String,
    schema: String,
}

impl SessionNames for Within<'_> {
    fn database(&self) -> &str {
        &self.database
    }
    fn temp_table(&self, name: &str) -> Option<&str> {
        self.names.temp_table(name)
    }
    fn ansi_nulls(&self) -> bool {
        self.names.ansi_nulls()
    }
    fn concat_null_yields_null(&self) -> bool {
        self.names.concat_null_yields_null()
    }
    fn identity_insert(&self) -> Option<(&str, i32)> {
        self.names.identity_insert()
    }
    fn dateformat(&self) -> &str {
        self.names.dateformat()
    }
    fn default_schema(&self) -> &str {
        &self.schema
    }
    fn key_encoding(&self) -> Option<&'static dyn tessera_semantics::types::KeyEncoding> {
        self.names.key_encoding()
    }
    fn own_view(
        &self,
        database: &str,
        catalog: Arc<tessera_semantics::catalog::Catalog>,
    ) -> Arc<tessera_semantics::catalog::Catalog> {
        self.names.own_view(database, catalog)
    }
}

/// The analysis' state across paths.
struct Walk {
    visits: usize,
    /// The procedures being analysed, outermost first (`schema.name`).
    procedures: Vec<String>,
}

/// Whether a query statement sends rows to the client (not an assignment, not SELECT INTO).
fn sends_rows(q: &ast::Query) -> bool {
    match &q.body {
        SetExpr::Select(sel) => sel.into.is_none() && !sel.items.iter().any(|i| matches!(i, SelectItem::Assign { .. })),
        _ => true,
    }
}

/// Two paths' first results as one (SQL Server's rules; see the top of this file).
fn merge(a: Option<First>, b: Option<First>) -> SqlResult<Option<First>> {
    let (mut a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (a, b) => return Ok(a.or(b)),
    };
    let incompatible = || match (&a.procedure, &b.procedure) {
        (None, None) => msg::DESCRIBE_INCOMPATIBLE_STATEMENTS.with(&[&a.statement, &b.statement]),
        (None, Some(q)) => msg::DESCRIBE_INCOMPATIBLE_WITH_PROCEDURE.with(&[&a.statement, &b.statement, q]),
        (Some(p), None) => msg::DESCRIBE_PROCEDURE_INCOMPATIBLE_WITH_BATCH.with(&[&a.statement, p, &b.statement]),
        (Some(p), Some(q)) => msg::DESCRIBE_INCOMPATIBLE_PROCEDURES.with(&[&a.statement, p, &b.statement, q]),
    };
    if a.columns.len() != b.columns.len() {
        return Err(incompatible());
    }
    let mut merged = Vec::with_capacity(a.columns.len());
    for (x, y) in a.columns.iter().zip(&b.columns) {
        let Some(ty) = wider(x.ty, y.ty) else { return Err(incompatible()) };
        let name = if x.name == y.name { x.name.clone() } else { String::new() };
        merged.push(OutputColumn { name, ty, nullable: x.nullable || y.nullable });
    }
    a.columns = merged;
    Ok(Some(a))
}

/// The type two paths' columns share: the same type, or the longer of two `varchar`,
/// `nvarchar` or `varbinary` lengths.
fn wider(x: SqlType, y: SqlType) -> Option<SqlType> {
    use SqlType::{NVarChar, VarBinary, VarChar};
    match (x, y) {
        _ if x == y => Some(x),
        (VarChar(a), VarChar(b)) => Some(VarChar(a.max(b))),
        (NVarChar(a), NVarChar(b)) => Some(NVarChar(a.max(b))),
        (VarBinary(a), VarBinary(b)) => Some(VarBinary(a.max(b))),
        _ => None,
    }
}
