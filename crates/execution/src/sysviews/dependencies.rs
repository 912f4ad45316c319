//! What each module names: sys.sql_expression_dependencies, and sp_depends's reports.
//! A view's or inline table-valued function's references come from binding its
//! definition now (tables, with the columns read); a procedure's or other function's from
//! its definition's text (`tessera_syntax::references`), by name, as SQL Server records
//! them when the module is created: a name that finds nothing has no id.

use std::sync::Arc;

use super::{bit, catalog, col, int, s, ViewDef, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{Catalog, Module, ModuleKind, Object};
use tessera_semantics::types::{SqlType::*, Value};
use tessera_syntax::ast::StatementKind;

/// One object a module names.
pub(crate) struct Dependency {
    pub referencing: Arc<Module>,
    /// The database the name gives, when it is not the module's.
    pub database: Option<String>,
    /// The schema as the name gives it (None: the name has none).
    pub schema: Option<String>,
    pub entity: String,
    /// What the name finds in the module's database now.
    pub found: Option<Object>,
    pub read: bool,
    pub written: bool,
    /// The columns read, when they are known (a view's or inline function's).
    pub columns: Vec<String>,
}

/// What every module of database `db` the session may see names.
pub(crate) fn dependencies(ctx: &ExecCtx, db: &str) -> SqlResult<Vec<Dependency>> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    let bound = [ModuleKind::View, ModuleKind::TableFunction];
    for (m, shape) in super::module_shapes(ctx, db, &catalog, &bound) {
        for (at, key, columns) in &shape.uses {
            let table_db = ctx.db_name(at);
            let Ok(table_catalog) = ctx.catalog_of(&table_db) else { continue };
            let Some(Object::Table(t)) = table_catalog.lookup_key(key) else { continue };
            let same = table_db.eq_ignore_ascii_case(db);
            out.push(Dependency {
                referencing: m.clone(),
                database: (!same).then(|| table_db.clone()),
                schema: Some(t.schema.clone()),
                entity: t.name.clone(),
                found: same.then(|| Object::Table(t.clone())),
                read: true,
                written: false,
                columns: columns
                    .iter()
                    .filter_map(|&c| t.columns.get(usize::from(c)))
                    .map(|c| c.name.clone())
                    .collect(),
            });
        }
    }
    for o in catalog.objects() {
        let Object::Module(m) = o else { continue };
        if bound.contains(&m.kind) {
            continue;
        }
        out.extend(named_by(ctx, &catalog, m)?);
    }
    Ok(out)
}

/// What a procedure's or scalar function's body names, each resolved as SQL Server would
/// resolve it when the module runs: in the module's schema, then dbo.
fn named_by(ctx: &ExecCtx, catalog: &Catalog, m: &Arc<Module>) -> SqlResult<Vec<Dependency>> {
    use tessera_semantics::bind::Catalogs;
    let Ok(cached) = ctx.shared.module_definition(&m.text) else { return Ok(Vec::new()) };
    let body = match cached.batch.statements.first().map(|s| &s.kind) {
        Some(StatementKind::CreateProcedure(p)) => &p.body,
        Some(StatementKind::CreateFunction(f)) => match &f.returns {
            tessera_syntax::ast::FunctionReturns::Scalar { body, .. }
            | tessera_syntax::ast::FunctionReturns::MultiStatement { body, .. } => body,
            tessera_syntax::ast::FunctionReturns::InlineTable(_) => return Ok(Vec::new()),
        },
        _ => return Ok(Vec::new()),
    };
    let mut out = Vec::new();
    for r in tessera_syntax::references::references(body) {
        let parts = &r.name.0;
        let (database, schema) = match parts.len() {
            1 => (None, None),
            2 => (None, Some(parts[0].value.clone())),
            _ => (Some(parts[parts.len() - 3].value.clone()), Some(parts[parts.len() - 2].value.clone())),
        };
        let entity = r.name.name().value.clone();
        let other = database.as_deref().filter(|d| !d.eq_ignore_ascii_case(ctx.session.database.as_str()));
        let found = match (other, &schema) {
            (Some(_), _) => None,
            (None, Some(s)) => catalog.lookup(s, &entity).cloned(),
            (None, None) => catalog.lookup(&m.schema, &entity).or_else(|| catalog.lookup("dbo", &entity)).cloned(),
        };
        // A system procedure (`sp_…`, found in master) names nothing of the database's.
        if r.executed && found.is_none() && entity.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("sp_")) {
            continue;
        }
        out.push(Dependency {
            referencing: m.clone(),
            database: other.map(str::to_string),
            schema,
            entity,
            found,
            read: r.read || r.executed,
            written: r.written,
            columns: Vec::new(),
        });
    }
    Ok(out)
}

pub(super) static SQL_EXPRESSION_DEPENDENCIES: ViewDef<15> = ViewDef {
    schema: "sys",
    name: "sql_expression_dependencies",
    columns: [
        col("referencing_id", Int, false),
        col("referencing_minor_id", Int, false),
        col("referencing_class", TinyInt, true),
        col("referencing_class_desc", NVarChar(60), true),
        col("is_schema_bound_reference", Bit, false),
        col("referenced_class", TinyInt, true),
        col("referenced_class_desc", NVarChar(60), true),
        col("referenced_server_name", SYSNAME, true),
        col("referenced_database_name", SYSNAME, true),
        col("referenced_schema_name", SYSNAME, true),
        col("referenced_entity_name", SYSNAME, true),
        col("referenced_id", Int, true),
        col("referenced_minor_id", Int, false),
        col("is_caller_dependent", Bit, false),
        col("is_ambiguous", Bit, false),
    ],
    rows: |ctx, db| {
        Ok(dependencies(ctx, db)?
            .into_iter()
            .map(|d| {
                [
                    int(i64::from(d.referencing.id)),
                    int(0),
                    int(1),
                    s("OBJECT_OR_COLUMN"),
                    bit(false),
                    int(1),
                    s("OBJECT_OR_COLUMN"),
                    Value::Null,
                    d.database.as_deref().map_or(Value::Null, s),
                    d.schema.as_deref().map_or(Value::Null, s),
                    s(&d.entity),
                    d.found.as_ref().map_or(Value::Null, |o| int(i64::from(o.id()))),
                    int(0),
                    bit(false),
                    bit(false),
                ]
            })
            .collect::<Vec<_>>())
    },
};

/// sp_depends' word for what kind of object `o` is.
pub(crate) fn object_kind(o: &Object) -> &'static str {
    match o {
        Object::Table(_) => "user table",
        Object::Module(m) => match m.kind {
            ModuleKind::View => "view",
            ModuleKind::Procedure => "stored procedure",
            ModuleKind::ScalarFunction | ModuleKind::TableFunction | ModuleKind::MultiStatementFunction => "function",
            ModuleKind::Trigger => "trigger",
            ModuleKind::Synonym => "synonym",
            ModuleKind::TableType => "table type",
        },
        Object::Sequence(_) => "sequence object",
    }
}
