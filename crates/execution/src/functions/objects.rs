//! The metadata functions that describe an object by its id: OBJECT_NAME,
//! OBJECT_SCHEMA_NAME, COL_NAME, OBJECT_DEFINITION, OBJECTPROPERTY, OBJECTPROPERTYEX, COLUMNPROPERTY, INDEXPROPERTY,
//! INDEXKEY_PROPERTY, and TYPEPROPERTY of a type by name. As in SQL Server, an object the
//! session may not see, an unknown property or a wrong argument gives NULL.

use std::sync::Arc;

use crate::runtime::ExecCtx;
use crate::sysviews::{constraint_objects, ConstraintObject};
use tessera_semantics::catalog::{Catalog, ModuleKind, Object, Table};
use tessera_semantics::plan::SessionFn;
use tessera_semantics::types::{SqlType, Value};

/// What an object id names in a database: a table or module, or a constraint of a table.
enum Described {
    Object(Object),
    Constraint(Arc<Table>, ConstraintObject),
}

/// The value of one of this module's functions for `args`.
pub(super) fn object_function(ctx: &ExecCtx, func: &SessionFn, args: &[Value]) -> Value {
    let int = |i: usize| match args.get(i) {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    };
    let text = |i: usize| match args.get(i) {
        Some(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    };
    // The database named by the id at `i` (the current one when there is none).
    let database = |i: usize| match args.get(i) {
        Some(Value::Int(dbid)) => ctx.database_name(*dbid),
        Some(_) => None,
        None => Some(ctx.session.database.clone()),
    };
    let answer = match func {
        SessionFn::ObjectName | SessionFn::ObjectSchemaName => int(0).and_then(|id| {
            if id < 0 {
                let (schema, name) = crate::sysviews::view_named(id)?;
                return Some(Value::str(if *func == SessionFn::ObjectName { &name } else { schema }));
            }
            let (described, _) = described(ctx, &database(1)?, id)?;
            let (schema, name) = match &described {
                Described::Object(o) => (o.schema(), o.name()),
                Described::Constraint(t, c) => (t.schema.as_str(), c.name.as_str()),
            };
            Some(Value::str(if *func == SessionFn::ObjectName { name } else { schema }))
        }),
        SessionFn::ColName => int(0).zip(int(1)).and_then(|(id, column)| {
            let i = usize::try_from(column).ok()?.checked_sub(1)?;
            match described(ctx, &ctx.session.database, id)?.0 {
                Described::Object(Object::Table(t)) => Some(Value::str(&t.columns.get(i)?.name)),
                Described::Object(Object::Module(m)) if m.kind == ModuleKind::View => {
                    let mut binder = tessera_semantics::bind::Binder::new(ctx.shared, &*ctx.session, &[]);
                    let shape = binder.module_shape(&ctx.session.database, &m).ok()?;
                    Some(Value::str(&shape.columns.get(i)?.name))
                }
                _ => None,
            }
        }),
        SessionFn::ObjectDefinition => int(0).and_then(|id| {
            let db = &ctx.session.database;
            let visible = crate::sysviews::definitions_visible(ctx, db).ok()?;
            match described(ctx, db, id)?.0 {
                Described::Object(Object::Module(m)) => visible(&m.schema, m.id).then(|| Value::str(&m.text)),
                Described::Constraint(t, c) if !c.definition.is_empty() => {
                    visible(&t.schema, t.id).then(|| Value::str(&c.definition))
                }
                _ => None,
            }
        }),
        SessionFn::ObjectProperty | SessionFn::ObjectPropertyEx => int(0).zip(text(1)).and_then(|(id, p)| {
            let (d, catalog) = described(ctx, &ctx.session.database, id)?;
            let v = object_property(ctx, &catalog, &d, &p)?;
            Some(if *func == SessionFn::ObjectPropertyEx { as_variant(v) } else { v })
        }),
        SessionFn::ColumnProperty => int(0).zip(text(1)).zip(text(2)).and_then(|((id, c), p)| {
            match described(ctx, &ctx.session.database, id)?.0 {
                Described::Object(Object::Table(t)) => column_property(&t, &c, &p),
                _ => None,
            }
        }),
        SessionFn::IndexProperty => int(0).zip(text(1)).zip(text(2)).and_then(|((id, ix), p)| {
            match described(ctx, &ctx.session.database, id)?.0 {
                Described::Object(Object::Table(t)) => index_property(&t, &ix, &p),
                _ => None,
            }
        }),
        SessionFn::IndexKeyProperty => int(0).zip(int(1)).zip(int(2)).zip(text(3)).and_then(|(((id, ix), key), p)| {
            let Described::Object(Object::Table(t)) = described(ctx, &ctx.session.database, id)?.0 else { return None };
            let index = t.indexes.iter().find(|i| i64::from(i.id) == ix)?;
            let &(column, descending) = index.columns.get(usize::try_from(key).ok()?.checked_sub(1)?)?;
            match p.to_ascii_lowercase().as_str() {
                "columnid" => Some(Value::Int(column as i64 + 1)),
                "isdescending" => Some(Value::Int(i64::from(descending))),
                _ => None,
            }
        }),
        SessionFn::TypeProperty => text(0).zip(text(1)).and_then(|(ty, p)| type_property(&ty, &p)),
        _ => unreachable!("not an object function: {func:?}"),
    };
    answer.unwrap_or(Value::Null)
}

/// The id of the constraint `name` (`name` or `schema.name` in the current database) of a
/// table the session may see.
pub(super) fn constraint_id(ctx: &ExecCtx, name: &str) -> Option<i32> {
    let parts = super::name_parts(name)?;
    let (schema, bare) = match &parts[..] {
        [bare] => (None, bare),
        [schema, bare] => (Some(schema.as_str()).filter(|s| !s.is_empty()), bare),
        _ => return None,
    };
    let db = ctx.session.database.clone();
    let catalog = ctx.catalog_of(&db).ok()?;
    catalog.objects().into_iter().find_map(|o| {
        let Object::Table(t) = o else { return None };
        if schema.is_some_and(|s| !s.eq_ignore_ascii_case(&t.schema)) || !ctx.may_see(&db, o) {
            return None;
        }
        constraint_objects(t).into_iter().find(|c| c.name.eq_ignore_ascii_case(bare)).map(|c| c.id)
    })
}

/// What `id` names in database `db`, if the session may see it, with the catalog.
fn described(ctx: &ExecCtx, db: &str, id: i64) -> Option<(Described, Arc<Catalog>)> {
    let id = i32::try_from(id).ok()?;
    let catalog = ctx.catalog_of(db).ok()?;
    if let Some(o) = catalog.by_id(id) {
        return ctx.may_see(db, o).then(|| (Described::Object(o.clone()), catalog.clone()));
    }
    let found = catalog.objects().into_iter().find_map(|o| {
        let Object::Table(t) = o else { return None };
        let c = constraint_objects(t).into_iter().find(|c| c.id == id)?;
        ctx.may_see(db, o).then(|| Described::Constraint(t.clone(), c))
    });
    found.map(|d| (d, catalog))
}

/// `OBJECTPROPERTYEX` gives sql_variant: tessera's variant results are text.
fn as_variant(v: Value) -> Value {
    match v {
        Value::Int(n) => Value::str(&n.to_string()),
        v => v,
    }
}

fn flag(b: bool) -> Option<Value> {
    Some(Value::Int(i64::from(b)))
}

/// OBJECTPROPERTY's answer for `d` (None: NULL, a property it does not have).
fn object_property(ctx: &ExecCtx, catalog: &Catalog, d: &Described, property: &str) -> Option<Value> {
    let p = property.to_ascii_lowercase();
    let kind = |k: &str| match d {
        Described::Constraint(_, c) => c.kind == k,
        _ => false,
    };
    let module = |k: ModuleKind| matches!(d, Described::Object(Object::Module(m)) if m.kind == k);
    let trigger = |instead_of: bool| matches!(d, Described::Object(Object::Module(m)) if m.kind == ModuleKind::Trigger && m.instead_of == instead_of);
    let table = match d {
        Described::Object(Object::Table(t)) => Some(t),
        _ => None,
    };
    let table_has = |f: &dyn Fn(&Table) -> bool| table.map_or(Some(Value::Null), |t| flag(f(t)));
    match p.as_str() {
        "istable" | "isusertable" => flag(table.is_some()),
        "isview" => flag(module(ModuleKind::View)),
        "isprocedure" => flag(module(ModuleKind::Procedure)),
        "isscalarfunction" => flag(module(ModuleKind::ScalarFunction)),
        "isinlinefunction" => flag(module(ModuleKind::TableFunction)),
        "istablefunction" => flag(module(ModuleKind::TableFunction) || module(ModuleKind::MultiStatementFunction)),
        "isconstraint" => flag(matches!(d, Described::Constraint(..))),
        "isprimarykey" => flag(kind("PK")),
        "isforeignkey" => flag(kind("F")),
        "ischeckcnst" => flag(kind("C")),
        "isdefaultcnst" => flag(kind("D")),
        "isuniquecnst" => flag(kind("UQ")),
        "istrigger" => flag(module(ModuleKind::Trigger)),
        "execistriggerdisabled" => match d {
            Described::Object(Object::Module(m)) if m.kind == ModuleKind::Trigger => flag(m.disabled),
            _ => None,
        },
        "execisaftertrigger" => flag(trigger(false)),
        "execisinsteadoftrigger" => flag(trigger(true)),
        "execisinserttrigger" | "execisupdatetrigger" | "execisdeletetrigger" => match d {
            Described::Object(Object::Module(m)) if m.kind == ModuleKind::Trigger => {
                let events = crate::runtime::trigger_events(ctx, m)?;
                flag(match p.as_str() {
                    "execisinserttrigger" => events.insert,
                    "execisupdatetrigger" => events.update,
                    _ => events.delete,
                })
            }
            _ => flag(false),
        },
        "issystemtable" | "ismsshipped" | "isencrypted" | "isreplproc" | "tableisfake" => flag(false),
        "tablehasprimarykey" => table_has(&|t| t.indexes.iter().any(|ix| ix.primary_key)),
        "tablehasidentity" => table_has(&|t| t.identity_column().is_some()),
        "tablehasclustindex" => table_has(&|t| !t.indexes[0].is_heap()),
        "tablehasnonclustindex" => table_has(&|t| t.indexes.len() > 1),
        "tablehasindex" => table_has(&|t| t.indexes.iter().any(|ix| !ix.is_heap())),
        "tablehasuniquecnst" => table_has(&|t| t.indexes.iter().any(|ix| ix.unique_constraint)),
        "tablehascheckcnst" => table_has(&|t| !t.checks.is_empty()),
        "tablehasdefaultcnst" => table_has(&|t| t.columns.iter().any(|c| c.default.is_some())),
        "tablehasforeignkey" => table_has(&|t| !t.foreign_keys.is_empty()),
        "tablehasforeignref" => table_has(&|t| !catalog.referencing(t.id).is_empty()),
        "tablehastextimage" | "tablehasrowguidcol" | "tablehascolumnset" => table_has(&|_| false),
        "hasaftertrigger" => table_has(&|t| catalog.triggers_on(t.id).any(|m| !m.instead_of)),
        // A view's INSTEAD OF triggers count as a table's.
        "hasinsteadoftrigger" => match d {
            Described::Object(o @ (Object::Table(_) | Object::Module(_))) => {
                flag(catalog.triggers_on(o.id()).any(|m| m.instead_of))
            }
            _ => None,
        },
        "hasinserttrigger" | "hasupdatetrigger" | "hasdeletetrigger" => table_has(&|t| {
            catalog.triggers_on(t.id).any(|m| {
                let events = crate::runtime::trigger_events(ctx, m).unwrap_or_default();
                match p.as_str() {
                    "hasinserttrigger" => events.insert,
                    "hasupdatetrigger" => events.update,
                    _ => events.delete,
                }
            })
        }),
        "tablehasvardecimalstorageformat" => flag(false),
        "ownerid" => {
            let schema = match d {
                Described::Object(o) => o.schema(),
                Described::Constraint(t, _) => &t.schema,
            };
            let security = ctx.shared.security(&ctx.session.catalog_memo, &ctx.session.database).ok()?;
            security.schema(schema).map(|s| Value::Int(i64::from(s.owner)))
        }
        "basetype" => Some(Value::str(match d {
            Described::Object(Object::Table(_)) => "U",
            Described::Object(Object::Module(m)) => m.kind.type_code(),
            Described::Object(Object::Sequence(_)) => "SO",
            Described::Constraint(_, c) => c.kind,
        })),
        _ => None,
    }
}

/// The data changes the trigger `m` fires on (None: its text does not parse).
/// COLUMNPROPERTY of column `name` of `t`.
fn column_property(t: &Table, name: &str, property: &str) -> Option<Value> {
    let i = t.column(name)?;
    let c = &t.columns[i];
    let (_, len, precision, scale) = crate::sysviews::system_types::type_ids(&c.ty);
    let max = len == -1;
    let float = matches!(c.ty, SqlType::Float | SqlType::Real);
    match property.to_ascii_lowercase().as_str() {
        "allowsnull" => flag(c.nullable),
        "columnid" => Some(Value::Int(i as i64 + 1)),
        "isidentity" => flag(c.identity.is_some()),
        "iscomputed" => flag(c.computed.is_some()),
        "isrowguidcol"
        | "issparse"
        | "iscolumnset"
        | "ishidden"
        | "isfulltextindexed"
        | "isidnotforrepl"
        | "generatedalwaystype"
        | "fulltexttypecolumn" => flag(false),
        "isindexable" => flag(!max),
        "isprecise" => flag(!float),
        "precision" => Some(Value::Int(column_precision(&c.ty, precision))),
        "scale" => match c.ty {
            SqlType::Decimal { .. }
            | SqlType::Money
            | SqlType::SmallMoney
            | SqlType::TinyInt
            | SqlType::SmallInt
            | SqlType::Int
            | SqlType::BigInt
            | SqlType::Bit => Some(Value::Int(scale)),
            SqlType::Time { scale } | SqlType::DateTime2 { scale } | SqlType::DateTimeOffset { scale } => {
                Some(Value::Int(i64::from(scale)))
            }
            SqlType::DateTime => Some(Value::Int(3)),
            _ => None,
        },
        "charmaxlen" => match c.ty {
            SqlType::NChar(_) | SqlType::NVarChar(_) if !max => Some(Value::Int(len / 2)),
            _ if is_text(&c.ty) => Some(Value::Int(len)),
            _ => None,
        },
        "octetmaxlen" => is_text(&c.ty).then_some(Value::Int(len)),
        _ => None,
    }
}

/// Whether values of `ty` are characters or bytes of a declared length.
fn is_text(ty: &SqlType) -> bool {
    use SqlType::*;
    matches!(ty, Char(_) | VarChar(_) | NChar(_) | NVarChar(_) | Binary(_) | VarBinary(_))
}

/// COLUMNPROPERTY's and TYPEPROPERTY's precision: digits of a number, characters of a
/// string (-1 for `(max)`), the length of a date or time's text.
fn column_precision(ty: &SqlType, numeric_precision: i64) -> i64 {
    use SqlType::*;
    let max = tessera_access::row::MAX;
    let fraction = |s: u8| if s > 0 { 1 + i64::from(s) } else { 0 };
    match *ty {
        Char(n) | VarChar(n) | NChar(n) | NVarChar(n) | Binary(n) | VarBinary(n) => {
            if n == max {
                -1
            } else {
                i64::from(n)
            }
        }
        Date => 10,
        Time { scale } => 8 + fraction(scale),
        DateTime => 23,
        SmallDateTime => 16,
        DateTime2 { scale } => 19 + fraction(scale),
        DateTimeOffset { scale } => 26 + fraction(scale),
        UniqueIdentifier => 36,
        _ => numeric_precision,
    }
}

/// INDEXPROPERTY of the index `name` of `t`.
fn index_property(t: &Table, name: &str, property: &str) -> Option<Value> {
    let ix = t.indexes.iter().find(|ix| !ix.is_heap() && ix.name.eq_ignore_ascii_case(name))?;
    match property.to_ascii_lowercase().as_str() {
        "isclustered" => flag(ix.is_clustered()),
        "isunique" => flag(ix.unique),
        "indexid" => Some(Value::Int(i64::from(ix.id))),
        "isdisabled"
        | "ishypothetical"
        | "isstatistics"
        | "isautostatistics"
        | "ispadindex"
        | "ispagelockdisallowed"
        | "isrowlockdisallowed"
        | "isfulltextkey"
        | "iscolumnstore"
        | "isoptimizedforsequentialkey" => flag(false),
        _ => None,
    }
}

/// TYPEPROPERTY of the system type `name`.
fn type_property(name: &str, property: &str) -> Option<Value> {
    let ty = crate::sysviews::system_types::system_type(name)?;
    let (_, _, precision, scale) = crate::sysviews::system_types::type_ids(&ty);
    match property.to_ascii_lowercase().as_str() {
        "precision" => Some(Value::Int(column_precision(&ty, precision))),
        "scale" => Some(Value::Int(scale)),
        "allowsnull" => flag(true),
        "ownerid" => Some(Value::Int(4)),
        "istabletype" | "isuserdefinedtype" => flag(false),
        _ => None,
    }
}
