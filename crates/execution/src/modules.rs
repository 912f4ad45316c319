//! Modules: stored procedures, scalar and inline table functions, and views. A module is
//! stored as its CREATE text (what `sys.sql_modules.definition` shows) and parsed again
//! when used; the parsed form and the plans of its statements live in the plan cache
//! under that text, like any batch's.

use std::sync::Arc;
use tessera_errors::msg;

use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::{self, Catalog, Module, ModuleKind, Object};
use tessera_syntax::ast::{self, ObjectName};

fn kind_word(kind: ModuleKind) -> &'static str {
    match kind {
        ModuleKind::Procedure => "PROCEDURE",
        ModuleKind::ScalarFunction | ModuleKind::TableFunction | ModuleKind::MultiStatementFunction => "FUNCTION",
        ModuleKind::View => "VIEW",
        ModuleKind::Trigger => "TRIGGER",
        ModuleKind::Synonym => "SYNONYM",
        ModuleKind::TableType => "TYPE",
    }
}

/// What a CREATE or ALTER of a module says: its name and kind, which of CREATE, ALTER and
/// CREATE OR ALTER it is, its text, and where a trigger is.
pub struct Definition<'a> {
    pub name: &'a ObjectName,
    pub kind: ModuleKind,
    pub or_alter: bool,
    pub alter: bool,
    pub text: &'a str,
    pub trigger: Option<TriggerSite>,
}

/// A DML trigger's table or view (its object id), and whether it runs instead of the
/// change (INSTEAD OF) or after it.
#[derive(Clone, Copy)]
pub struct TriggerSite {
    pub parent: i32,
    pub instead_of: bool,
}

/// Creates, alters or creates-or-alters a module.
pub fn define(ctx: &mut ExecCtx, def: Definition) -> SqlResult<()> {
    let Definition { name, kind, or_alter, alter, text, trigger } = def;
    let parent = trigger.map(|t| t.parent);
    let instead_of = trigger.is_some_and(|t| t.instead_of);
    let b = Binder::new(ctx.shared, ctx.session, &[]);
    // A new module goes in the default schema; ALTER finds the one the name means.
    let (db, schema, obj) = if alter { b.qualify(name)? } else { b.qualify_new(name)? };
    if name.name().value.starts_with('#') {
        return Err(msg::TEMPORARY_MODULES_NOT_SUPPORTED.err());
    }
    if kind == ModuleKind::ScalarFunction && (alter || or_alter) {
        crate::ddl::resource_governor::check_not_classifier(ctx, "alter", &db, &schema, &obj)?;
    }
    let schema_exists = schema.eq_ignore_ascii_case("dbo")
        || (ctx.shared.engine.exists(&db)
            && ctx.shared.security(&ctx.session.catalog_memo, &db)?.schema(&schema).is_some());
    if !schema_exists {
        return Err(msg::SCHEMA_NOT_FOUND.with(&[&schema]));
    }
    if !db.eq_ignore_ascii_case(&ctx.session.database) {
        return Err(msg::DATABASE_PREFIX_NOT_ALLOWED.with(&[&kind_word(kind)]));
    }
    let database = ctx.shared.database(&db)?;
    let altered_by = ctx.shared.access(ctx.session, &db).ok().map(|(_, token)| token.user);
    lock_existing(ctx, &database, &schema, &obj)?;
    let shared = ctx.shared;
    shared.alter_catalog(&database, |catalog: &Catalog, version| {
        let existing = catalog.lookup(&schema, &obj).filter(|o| !ctx.dropped(database.name(), o.id())).cloned();
        let now = catalog::now_epoch();
        let (id, created, properties, disabled) = match (&existing, alter, or_alter) {
            (Some(Object::Module(m)), true, _) | (Some(Object::Module(m)), _, true) => {
                if m.kind != kind && !(is_function(m.kind) && is_function(kind)) {
                    return Err(msg::ALTER_WRONG_OBJECT_TYPE.with(&[&obj]));
                }
                (m.id, m.created, m.properties.clone(), m.disabled)
            }
            (Some(_), false, false) => {
                return Err(msg::OBJECT_ALREADY_EXISTS.with(&[&"an object", &obj]));
            }
            (Some(Object::Table(_) | Object::Sequence(_)), _, _) => {
                return Err(msg::ALTER_WRONG_OBJECT_TYPE.with(&[&obj]));
            }
            (None, true, false) => {
                return Err(msg::INVALID_OBJECT_NAME.with(&[&obj]));
            }
            (None, _, _) => {
                let mut c = catalog.clone();
                let id = c.allocate_id()?;
                return save(
                    ctx,
                    &database,
                    &c,
                    None,
                    Module {
                        id,
                        schema: schema.clone(),
                        name: obj.clone(),
                        kind,
                        text: text.to_string(),
                        created: now,
                        modified: now,
                        altered_by,
                        properties: Vec::new(),
                        parent,
                        disabled: false,
                        instead_of,
                    },
                    version,
                );
            }
        };
        save(
            ctx,
            &database,
            catalog,
            existing,
            Module {
                id,
                schema: schema.clone(),
                name: obj.clone(),
                kind,
                text: text.to_string(),
                created,
                modified: now,
                altered_by,
                properties,
                parent,
                disabled,
                instead_of,
            },
            version,
        )
    })
}

fn is_function(k: ModuleKind) -> bool {
    matches!(k, ModuleKind::ScalarFunction | ModuleKind::TableFunction | ModuleKind::MultiStatementFunction)
}

/// Makes `m` the definition in place of `before` (None: a new module), in the session's
/// transaction: a rollback puts `before` back.
fn save(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    catalog: &Catalog,
    before: Option<Object>,
    m: Module,
    version: u64,
) -> SqlResult<(Catalog, ())> {
    let obj = Object::Module(Arc::new(m));
    ctx.redefine_in_transaction(database, before, Some(obj.clone()))?;
    Ok((catalog.with(obj, version), ()))
}

/// sp_rename of the module `schema.name` to `new` (its definition keeps the name it was
/// created with, as SQL Server's does), in the session's transaction.
pub fn rename(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    schema: &str,
    name: &str,
    new: &str,
) -> SqlResult<()> {
    redefine(ctx, database, schema, name, |m| {
        m.name = new.to_string();
        m.modified = catalog::now_epoch();
        Ok(())
    })
}

/// Changes the extended properties of the module `schema.name` (sp_addextendedproperty
/// and its kin; the caller checked what it may do), in the session's transaction.
pub fn change_properties(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    schema: &str,
    name: &str,
    change: impl FnOnce(&mut Vec<tessera_semantics::catalog::Property>) -> SqlResult<()>,
) -> SqlResult<()> {
    redefine(ctx, database, schema, name, |m| change(&mut m.properties))
}

/// Gives the module `schema.name` the definition `change` makes of it, in the session's
/// transaction.
fn redefine(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    schema: &str,
    name: &str,
    change: impl FnOnce(&mut Module) -> SqlResult<()>,
) -> SqlResult<()> {
    lock_existing(ctx, database, schema, name)?;
    let shared = ctx.shared;
    shared.alter_catalog(database, |catalog: &Catalog, version| {
        let Some(m) = catalog.module(schema, name).cloned() else {
            return Err(msg::INVALID_OBJECT_NAME.with(&[&name]));
        };
        let mut changed = (*m).clone();
        change(&mut changed)?;
        save(ctx, database, catalog, Some(Object::Module(m)), changed, version)
    })
}

/// What a trigger can be on: a table, or (an INSTEAD OF trigger) a view.
struct TriggerParent {
    id: i32,
    schema: String,
    view: bool,
    /// A table's foreign keys cascade a DELETE or an UPDATE.
    cascades: bool,
}

fn trigger_parent(catalog: &Catalog, schema: &str, object: &str) -> Option<TriggerParent> {
    if let Some(t) = catalog.table(schema, object) {
        let cascades = t
            .foreign_keys
            .iter()
            .any(|fk| fk.on_delete != catalog::Action::NoAction || fk.on_update != catalog::Action::NoAction);
        return Some(TriggerParent { id: t.id, schema: t.schema.clone(), view: false, cascades });
    }
    let m = catalog.module(schema, object).filter(|m| m.kind == ModuleKind::View)?;
    Some(TriggerParent { id: m.id, schema: m.schema.clone(), view: true, cascades: false })
}

/// Where trigger `ct` goes: its name in its table's or view's schema (2103 when the name
/// gives another; `verb` is create or alter), and the object it is on (8197 when that is
/// no table of the current database, nor a view for an INSTEAD OF trigger). An object
/// has at most one INSTEAD OF trigger per kind of change (2111), and none for DELETE or
/// UPDATE on a table whose foreign keys cascade (2113).
pub fn trigger_site(
    ctx: &mut ExecCtx,
    ct: &ast::CreateTrigger,
    table: &ObjectName,
) -> SqlResult<(ObjectName, TriggerSite)> {
    let verb = if ct.alter { "alter" } else { "create" };
    let b = Binder::new(ctx.shared, ctx.session, &[]);
    let shown = table.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
    let (db, schema, object) = b.qualify(table)?;
    let invalid = || msg::OBJECT_INVALID_FOR_OPERATION.with(&[&shown]);
    if !db.eq_ignore_ascii_case(&ctx.session.database) || !ctx.shared.engine.exists(&db) {
        return Err(invalid());
    }
    let database = ctx.shared.database(&db)?;
    let catalog = ctx.catalog(&database)?;
    let found = trigger_parent(&catalog, &schema, &object).filter(|p| ct.instead_of || !p.view).ok_or_else(invalid)?;
    let name = &ct.name;
    if name.0.len() >= 2 && !name.0[name.0.len() - 2].value.eq_ignore_ascii_case(&found.schema) {
        return Err(msg::TRIGGER_SCHEMA_DIFFERS.with(&[&verb, &name.name().value]));
    }
    let trigger = name.name().value.as_str();
    if ct.instead_of {
        let upper = verb.to_uppercase();
        if found.cascades && (ct.events.delete || ct.events.update) {
            return Err(msg::INSTEAD_OF_TRIGGER_ON_CASCADE.with(&[&upper, &trigger, &object]));
        }
        let others = catalog.triggers_on(found.id).filter(|m| m.instead_of && !m.name.eq_ignore_ascii_case(trigger));
        for other in others {
            let Some(events) = crate::runtime::trigger_events(ctx, other) else { continue };
            let taken = [
                (events.insert && ct.events.insert, "INSERT"),
                (events.update && ct.events.update, "UPDATE"),
                (events.delete && ct.events.delete, "DELETE"),
            ];
            if let Some((_, event)) = taken.into_iter().find(|(both, _)| *both) {
                let kind = if found.view { "view" } else { "table" };
                return Err(msg::INSTEAD_OF_TRIGGER_EXISTS.with(&[&upper, &trigger, &kind, &object, &event]));
            }
        }
    }
    let name = ObjectName(vec![ast::Ident::new(&found.schema), name.name().clone()]);
    Ok((name, TriggerSite { parent: found.id, instead_of: ct.instead_of }))
}

/// `ENABLE | DISABLE TRIGGER {names | ALL} ON {table | DATABASE}` (`table` None: the
/// current database's DDL triggers), in the session's transaction.
pub fn enable_triggers(
    ctx: &mut ExecCtx,
    table: Option<&ObjectName>,
    names: &[ObjectName],
    enable: bool,
) -> SqlResult<()> {
    let (database, on_table) = match table {
        Some(table) => {
            let b = Binder::new(ctx.shared, ctx.session, &[]);
            let shown = table.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
            let (db, schema, object) = b.qualify(table)?;
            if !ctx.shared.engine.exists(&db) {
                return Err(msg::OBJECT_INVALID_FOR_OPERATION.with(&[&shown]));
            }
            let database = ctx.shared.database(&db)?;
            let catalog = ctx.catalog(&database)?;
            let Some(found) = trigger_parent(&catalog, &schema, &object) else {
                return Err(msg::OBJECT_INVALID_FOR_OPERATION.with(&[&shown]));
            };
            let on_table: Vec<(String, String)> =
                catalog.triggers_on(found.id).map(|m| (m.schema.clone(), m.name.clone())).collect();
            (database, on_table)
        }
        None => {
            let database = ctx.shared.database(&ctx.session.database.clone())?;
            let catalog = ctx.catalog(&database)?;
            let on_database = ddl_triggers(&catalog).iter().map(|m| (m.schema.clone(), m.name.clone())).collect();
            (database, on_database)
        }
    };
    let chosen: Vec<(String, String)> = if names.is_empty() {
        on_table
    } else {
        let mut chosen = Vec::with_capacity(names.len());
        for n in names {
            let wanted = &n.name().value;
            match on_table.iter().find(|(_, t)| t.eq_ignore_ascii_case(wanted)) {
                Some(t) => chosen.push(t.clone()),
                None => return Err(msg::INDEX_TABLE_NOT_FOUND.with(&[wanted])),
            }
        }
        chosen
    };
    for (schema, trigger) in chosen {
        redefine(ctx, &database, &schema, &trigger, |m| {
            m.disabled = !enable;
            m.modified = catalog::now_epoch();
            Ok(())
        })?;
    }
    Ok(())
}

/// `DROP PROCEDURE|FUNCTION|VIEW|TRIGGER [IF EXISTS] name`.
pub fn drop(ctx: &mut ExecCtx, kind: ast::ModuleKind, name: &ObjectName, if_exists: bool) -> SqlResult<()> {
    let b = Binder::new(ctx.shared, ctx.session, &[]);
    let (db, schema, obj) = b.qualify(name)?;
    let word = kind.word();
    let missing = || msg::DROP_OBJECT_NOT_FOUND.with(&[&word, &obj]);
    if !ctx.shared.engine.exists(&db) {
        return if if_exists { Ok(()) } else { Err(missing()) };
    }
    if kind == ast::ModuleKind::Function {
        crate::ddl::resource_governor::check_not_classifier(ctx, "drop", &db, &schema, &obj)?;
    }
    let database = ctx.shared.database(&db)?;
    lock_existing(ctx, &database, &schema, &obj)?;
    let shared = ctx.shared;
    shared.alter_catalog(&database, |catalog: &Catalog, _| {
        let m = match catalog.module(&schema, &obj) {
            Some(m) if matches_kind(m.kind, kind) => m.clone(),
            _ if if_exists => return Ok((catalog.clone(), ())),
            _ => return Err(missing()),
        };
        if m.kind == ModuleKind::TableType {
            if let Some(user) = type_user(ctx, catalog, &m) {
                return Err(msg::TYPE_REFERENCED.with(&[&m.name, &user]));
            }
        }
        ctx.redefine_in_transaction(&database, Some(Object::Module(m.clone())), None)?;
        // A view's INSTEAD OF triggers go with it.
        for trigger in catalog.triggers_on(m.id).cloned().collect::<Vec<_>>() {
            ctx.redefine_in_transaction(&database, Some(Object::Module(trigger)), None)?;
        }
        // Gone for this session at once, for the others when the transaction commits.
        Ok((catalog.clone(), ()))
    })
}

/// A procedure or function with a parameter of the table type `ty`, by name: what keeps
/// the type from being dropped (3732).
fn type_user(ctx: &ExecCtx, catalog: &Catalog, ty: &Module) -> Option<String> {
    catalog.objects().into_iter().find_map(|o| {
        let Object::Module(m) = o else { return None };
        let cached = ctx.shared.plans.get_or_parse(&m.text, tessera_syntax::parser::parse_batch).ok()?;
        let params = match cached.batch.statements.first().map(|s| &s.kind) {
            Some(ast::StatementKind::CreateProcedure(p)) => &p.params,
            Some(ast::StatementKind::CreateFunction(f)) => &f.params,
            _ => return None,
        };
        params
            .iter()
            .any(|p| catalog.table_type(&p.ty.name, &m.schema).is_some_and(|t| t.id == ty.id))
            .then(|| m.name.clone())
    })
}

/// The DDL triggers of a database (triggers on no table or view), oldest first.
pub fn ddl_triggers(catalog: &Catalog) -> Vec<Arc<Module>> {
    let mut found: Vec<Arc<Module>> = catalog
        .objects()
        .into_iter()
        .filter_map(|o| match o {
            Object::Module(m) if m.kind == ModuleKind::Trigger && m.parent.is_none() => Some(m.clone()),
            _ => None,
        })
        .collect();
    found.sort_by_key(|m| m.id);
    found
}

/// Locks the object `schema.name` (if there is one) for a change to the end of the
/// session's transaction, before the catalog's DDL mutex is taken: waiting for the
/// statements that use it must not hold up every other DDL of the database.
fn lock_existing(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    schema: &str,
    name: &str,
) -> SqlResult<()> {
    if let Some(id) = ctx.catalog(database)?.lookup(schema, name).map(|o| o.id()) {
        ctx.transaction(database.name())?.lock_schema_to_end(id as u32)?;
    }
    Ok(())
}

fn matches_kind(k: ModuleKind, kind: ast::ModuleKind) -> bool {
    match kind {
        ast::ModuleKind::Procedure => k == ModuleKind::Procedure,
        ast::ModuleKind::Function => is_function(k),
        ast::ModuleKind::View => k == ModuleKind::View,
        ast::ModuleKind::Trigger => k == ModuleKind::Trigger,
        ast::ModuleKind::Synonym => k == ModuleKind::Synonym,
        ast::ModuleKind::Type => k == ModuleKind::TableType,
    }
}

/// Finds a module by name: (database, module).
pub fn find(ctx: &ExecCtx, name: &ObjectName) -> SqlResult<Option<(String, Arc<Module>)>> {
    let b = Binder::new(ctx.shared, ctx.session, &[]);
    let (db, schema, obj) = b.qualify(name)?;
    if !ctx.shared.engine.exists(&db) {
        return Ok(None);
    }
    let database = ctx.shared.database(&db)?;
    let catalog = ctx.catalog(&database)?;
    match catalog.module(&schema, &obj).cloned() {
        // A synonym: the module its target names (one- and two-part names are the
        // synonym's database's).
        Some(m) if m.kind == ModuleKind::Synonym => {
            let cached = ctx.shared.plans.get_or_parse(&m.text, tessera_syntax::parser::parse_batch)?;
            let Some(ast::StatementKind::CreateSynonym { target, .. }) =
                cached.batch.statements.first().map(|s| &s.kind)
            else {
                return Ok(None);
            };
            let mut parts = target.0.clone();
            while parts.len() < 3 {
                let filler = if parts.len() == 2 { database.name() } else { "" };
                parts.insert(0, ast::Ident::new(filler));
            }
            let found = find(ctx, &ObjectName(parts))?;
            Ok(found.filter(|(_, t)| t.kind != ModuleKind::Synonym))
        }
        m => Ok(m.map(|m| (database.name().to_string(), m))),
    }
}
