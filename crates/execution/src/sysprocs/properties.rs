//! sp_addextendedproperty, sp_updateextendedproperty and sp_dropextendedproperty: a named
//! value set on the database (no level), a schema (level 0 SCHEMA), an object in it
//! (level 1 TABLE, VIEW, PROCEDURE or FUNCTION) or a part of one (level 2 COLUMN, INDEX,
//! CONSTRAINT or PARAMETER), in the session's transaction like any DDL. Who may: whoever
//! may ALTER what the property is on. Listed by sys.extended_properties and
//! fn_listextendedproperty (`sysviews/properties.rs`).

use super::{too_many, NamedArg};
use crate::runtime::ExecCtx;
use tessera_errors::{msg, SqlResult};
use tessera_security::principals::check::{allowed, On};
use tessera_security::principals::{Class, DatabaseProperty};
use tessera_semantics::catalog::properties::{find, MAX_VALUE_BYTES};
use tessera_semantics::catalog::{ModuleKind, Object, Part, Property};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{Ident, ObjectName};

/// What a call does to the property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropertyChange {
    Add,
    Update,
    Drop,
}

impl PropertyChange {
    fn procedure(self) -> &'static str {
        match self {
            PropertyChange::Add => "sp_addextendedproperty",
            PropertyChange::Update => "sp_updateextendedproperty",
            PropertyChange::Drop => "sp_dropextendedproperty",
        }
    }
}

/// What the level arguments name.
enum Target {
    Database,
    Schema(i32),
    /// An object of the current database (schema, name), what kind of object it is, and
    /// the part of it.
    Object {
        schema: String,
        name: String,
        kind: Kind,
        part: Part,
    },
}

/// Where an object's properties are kept: a table's, a module's or a sequence's definition.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Table,
    Module,
    Sequence,
}

/// Runs one of the three procedures.
pub fn run(change: PropertyChange, args: &[NamedArg], ctx: &mut ExecCtx) -> SqlResult<i32> {
    let proc_name = change.procedure();
    // sp_dropextendedproperty takes no @value: its levels start one argument earlier.
    let first_level = if change == PropertyChange::Drop { 1 } else { 2 };
    too_many(proc_name, args, first_level + 6)?;
    let arg = |i: usize, name: &str| super::text_arg(args, i, name);
    let invalid = || msg::INVALID_PROCEDURE_PARAMETER.with(&[&proc_name]);
    let name = arg(0, "@name").ok_or_else(invalid)?;
    let mut levels: Vec<(String, Option<String>)> = Vec::new();
    for level in 0..3 {
        let ty = arg(first_level + level * 2, &format!("@level{level}type"));
        let level_name = arg(first_level + level * 2 + 1, &format!("@level{level}name"));
        match ty {
            Some(ty) if levels.len() == level => levels.push((ty.trim().to_uppercase(), level_name)),
            Some(_) => return Err(invalid()),
            None if level_name.is_some() => return Err(invalid()),
            None => {}
        }
    }
    let shown = levels.iter().filter_map(|(_, n)| n.clone()).collect::<Vec<_>>().join(".");
    let shown = if shown.is_empty() { ctx.session.database.clone() } else { shown };
    let value = match change {
        PropertyChange::Drop => None,
        PropertyChange::Add | PropertyChange::Update => property_value(args)?,
    };
    let target = resolve(ctx, &levels, &shown)?;
    let db = ctx.session.database.clone();
    let database = ctx.shared.database(&db)?;
    // Who may: ALTER on what the property is on (its owner, db_owner, sysadmin hold it).
    let (security, token) = ctx.shared.access(ctx.session, &db)?;
    let may = match &target {
        Target::Database => allowed(&security, &token, "ALTER", On::Database),
        Target::Schema(id) => {
            security.schema_by_id(*id).is_some_and(|s| allowed(&security, &token, "ALTER", On::Schema(&s.name)))
        }
        Target::Object { schema, name, .. } => {
            let catalog = ctx.catalog(&database)?;
            let id = catalog.lookup(schema, name).map_or(0, Object::id);
            allowed(&security, &token, "ALTER", On::Object { schema, id })
        }
    };
    if !may {
        return Err(msg::ADMIN_ACTION_DENIED.err());
    }
    let apply = |properties: &mut Vec<Property>, part: &Part| -> SqlResult<()> {
        let at = find(properties, part, &name);
        match (change, at) {
            (PropertyChange::Add, Some(_)) => Err(msg::PROPERTY_EXISTS.with(&[&name, &shown])),
            (PropertyChange::Add, None) => {
                properties.push(Property { name: name.clone(), part: part.clone(), value: value.clone() });
                Ok(())
            }
            (PropertyChange::Update | PropertyChange::Drop, None) => Err(msg::PROPERTY_MISSING.with(&[&name, &shown])),
            (PropertyChange::Update, Some(i)) => {
                properties[i].value = value.clone();
                Ok(())
            }
            (PropertyChange::Drop, Some(i)) => {
                properties.remove(i);
                Ok(())
            }
        }
    };
    match target {
        Target::Object { schema, name: object, kind: Kind::Table, part } => {
            let table = ObjectName(vec![Ident::new(schema), Ident::new(object)]);
            crate::ddl::change_table_properties(ctx, &table, |properties| apply(properties, &part))?;
        }
        Target::Object { schema, name: object, kind: Kind::Module, part } => {
            crate::modules::change_properties(ctx, &database, &schema, &object, |properties| apply(properties, &part))?;
        }
        Target::Object { schema, name: object, kind: Kind::Sequence, part } => {
            let name = ObjectName(vec![Ident::new(schema), Ident::new(object)]);
            let (database, sequence) =
                crate::sequences::find(ctx, &name)?.ok_or_else(|| msg::PROPERTY_OBJECT_INVALID.with(&[&shown]))?;
            crate::sequences::change_properties(ctx, &database, sequence, |properties| apply(properties, &part))?;
        }
        Target::Database | Target::Schema(_) => {
            let (class, major_id) = match target {
                Target::Schema(id) => (Class::Schema, id),
                _ => (Class::Database, 0),
            };
            ctx.alter_security(&database, |security| {
                let mut changed = security.clone();
                match (change, security.property(class, major_id, &name).is_some()) {
                    (PropertyChange::Add, true) => return Err(msg::PROPERTY_EXISTS.with(&[&name, &shown])),
                    (PropertyChange::Update | PropertyChange::Drop, false) => {
                        return Err(msg::PROPERTY_MISSING.with(&[&name, &shown]))
                    }
                    (PropertyChange::Drop, true) => changed.remove_property(class, major_id, &name),
                    (PropertyChange::Add | PropertyChange::Update, _) => changed.put_property(DatabaseProperty {
                        class,
                        major_id,
                        name: name.clone(),
                        value: value.clone(),
                    })?,
                }
                Ok((changed, ()))
            })?;
        }
    }
    Ok(0)
}

/// The `@value` argument as the text kept (NULL: None), refused past 7,500 bytes (15097).
fn property_value(args: &[NamedArg]) -> SqlResult<Option<String>> {
    let by_name = args.iter().find(|(n, _)| n.as_deref().is_some_and(|n| n.eq_ignore_ascii_case("@value")));
    let arg = by_name.or_else(|| args.get(1).filter(|(n, _)| n.is_none()));
    let Some((_, Some((value, ty)))) = arg else { return Ok(None) };
    if matches!(value, Value::Null) {
        return Ok(None);
    }
    let text = match types::cast(value, ty, &SqlType::NVarChar(tessera_access::row::MAX), None)? {
        Value::Str(text) => text.to_string(),
        // Only a value of a megabyte or more stays a large value as nvarchar(max).
        _ => return Err(msg::PROPERTY_TOO_LARGE.err()),
    };
    let bytes = match ty {
        SqlType::NVarChar(_) | SqlType::NChar(_) => text.encode_utf16().count() * 2,
        SqlType::VarChar(_) | SqlType::Char(_) | SqlType::VarBinary(_) | SqlType::Binary(_) => text.len(),
        _ => 0,
    };
    if bytes > MAX_VALUE_BYTES {
        return Err(msg::PROPERTY_TOO_LARGE.err());
    }
    Ok(Some(text))
}

/// What `levels` name in the current database, or 15135 (`shown` names it).
fn resolve(ctx: &mut ExecCtx, levels: &[(String, Option<String>)], shown: &str) -> SqlResult<Target> {
    let invalid = || msg::PROPERTY_OBJECT_INVALID.with(&[&shown]);
    let named = |i: usize| levels[i].1.clone().ok_or_else(invalid);
    if levels.is_empty() {
        return Ok(Target::Database);
    }
    if levels[0].0 != "SCHEMA" {
        return Err(invalid());
    }
    let schema_name = named(0)?;
    let db = ctx.session.database.clone();
    let security = ctx.shared.security(&ctx.session.catalog_memo, &db)?;
    let schema = security.schema(&schema_name).ok_or_else(invalid)?;
    if levels.len() == 1 {
        return Ok(Target::Schema(schema.id));
    }
    let object_name = named(1)?;
    let database = ctx.shared.database(&db)?;
    let catalog = ctx.catalog(&database)?;
    let object = catalog.lookup(&schema.name, &object_name).ok_or_else(invalid)?;
    let (kind_ok, kind) = match object {
        Object::Table(_) => (levels[1].0 == "TABLE", Kind::Table),
        Object::Module(m) => (levels[1].0 == crate::sysviews::module_level_type(m.kind), Kind::Module),
        Object::Sequence(_) => (levels[1].0 == "SEQUENCE", Kind::Sequence),
    };
    if !kind_ok {
        return Err(invalid());
    }
    let part = match levels.get(2) {
        None => Part::Object,
        Some((ty, _)) => {
            let part_name = named(2)?;
            let found = match (ty.as_str(), object) {
                ("COLUMN", Object::Table(t)) => t.column(&part_name).map(|i| Part::Column(t.columns[i].name.clone())),
                ("INDEX", Object::Table(t)) => t
                    .indexes
                    .iter()
                    .find(|ix| !ix.is_heap() && ix.name.eq_ignore_ascii_case(&part_name))
                    .map(|ix| Part::Index(ix.name.clone())),
                ("CONSTRAINT", Object::Table(t)) => crate::sysviews::constraint_objects(t)
                    .into_iter()
                    .find(|c| c.name.eq_ignore_ascii_case(&part_name))
                    .map(|c| Part::Constraint(c.name)),
                // A view's or inline function's column, as its definition binds now.
                ("COLUMN", Object::Module(m)) => {
                    let mut binder = tessera_semantics::bind::Binder::new(ctx.shared, &*ctx.session, &[]);
                    let shape = binder.module_shape(&db, m).ok();
                    shape
                        .and_then(|s| s.columns.into_iter().find(|c| c.name.eq_ignore_ascii_case(&part_name)))
                        .map(|c| Part::Column(c.name))
                }
                ("PARAMETER", Object::Module(m)) if m.kind != ModuleKind::View => crate::sysviews::module_signature(m)
                    .0
                    .into_iter()
                    .find(|p| p.name.eq_ignore_ascii_case(&part_name))
                    .map(|p| Part::Parameter(p.name)),
                _ => None,
            };
            found.ok_or_else(invalid)?
        }
    };
    Ok(Target::Object { schema: schema.name.clone(), name: object.name().to_string(), kind, part })
}
