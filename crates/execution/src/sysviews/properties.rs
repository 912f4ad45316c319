//! Extended properties as SQL Server lists them: sys.extended_properties and the function
//! fn_listextendedproperty. They are kept with what they describe (an object's and its
//! parts' in its catalog definition, the database's and its schemas' with its security;
//! see `tessera_semantics::catalog::properties`); [`listed`] gathers them with the names
//! of what each describes, as the level types and names the procedures take.

use super::indexes::constraint_objects;
use super::objects::module_signature;
use super::{catalog, col, int, s, FunctionDef, Rows, ViewDef, NVARCHAR_MAX, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_security::principals::Class;
use tessera_semantics::catalog::{ModuleKind, Object, Part};
use tessera_semantics::types::{SqlType::*, Value};

/// One extended property of database `db`, with what it describes.
pub(crate) struct Listed {
    /// sys.extended_properties' class (0 database, 1 object or column, 2 parameter, 3
    /// schema, 7 index) and its description.
    class: (i64, &'static str),
    major_id: i64,
    minor_id: i64,
    /// What it describes as the procedures' levels name it: `[]` for the database,
    /// `[SCHEMA]`, `[SCHEMA, TABLE]`, `[SCHEMA, TABLE, COLUMN]`, … (type, name).
    levels: Vec<(&'static str, String)>,
    name: String,
    value: Option<String>,
}

/// The level-1 type word of a module kind.
pub(crate) fn module_level_type(kind: ModuleKind) -> &'static str {
    match kind {
        ModuleKind::View => "VIEW",
        ModuleKind::Procedure => "PROCEDURE",
        ModuleKind::ScalarFunction | ModuleKind::TableFunction | ModuleKind::MultiStatementFunction => "FUNCTION",
        ModuleKind::Trigger => "TRIGGER",
        ModuleKind::Synonym => "SYNONYM",
        ModuleKind::TableType => "TYPE",
    }
}

/// Every extended property of database `db` the session may see (those of the objects it
/// may see, and the database's and schemas'), the database's first, then the schemas',
/// then each object's in object id order.
pub(crate) fn listed(ctx: &ExecCtx, db: &str) -> SqlResult<Vec<Listed>> {
    let (_, catalog) = catalog(ctx, db)?;
    let security = ctx.shared.security(&ctx.session.catalog_memo, db)?;
    let mut out = Vec::new();
    for p in security.properties() {
        let (class, levels) = match p.class {
            Class::Database => ((0, "DATABASE"), Vec::new()),
            Class::Schema => match security.schema_by_id(p.major_id) {
                Some(schema) => ((3, "SCHEMA"), vec![("SCHEMA", schema.name.clone())]),
                None => continue,
            },
            Class::Object | Class::Principal => continue,
        };
        out.push(Listed {
            class,
            major_id: i64::from(p.major_id),
            minor_id: 0,
            levels,
            name: p.name.clone(),
            value: p.value.clone(),
        });
    }
    out.sort_by_key(|l| (l.class.0, l.major_id));
    for o in catalog.objects() {
        let object_level = |ty: &'static str| vec![("SCHEMA", o.schema().to_string()), (ty, o.name().to_string())];
        let object_id = i64::from(o.id());
        match o {
            Object::Table(t) => {
                let constraints = constraint_objects(t);
                for p in &t.properties {
                    let mut levels = object_level("TABLE");
                    let (class, major_id, minor_id) = match &p.part {
                        Part::Object => ((1, "OBJECT_OR_COLUMN"), object_id, 0),
                        Part::Column(c) => {
                            let Some(i) = t.column(c) else { continue };
                            levels.push(("COLUMN", t.columns[i].name.clone()));
                            ((1, "OBJECT_OR_COLUMN"), object_id, i as i64 + 1)
                        }
                        Part::Index(name) => {
                            let found = t.indexes.iter().find(|ix| !ix.is_heap() && ix.name.eq_ignore_ascii_case(name));
                            let Some(ix) = found else { continue };
                            levels.push(("INDEX", ix.name.clone()));
                            ((7, "INDEX"), object_id, i64::from(ix.id))
                        }
                        Part::Constraint(name) => {
                            let Some(c) = constraints.iter().find(|c| c.name.eq_ignore_ascii_case(name)) else {
                                continue;
                            };
                            levels.push(("CONSTRAINT", c.name.clone()));
                            ((1, "OBJECT_OR_COLUMN"), i64::from(c.id), 0)
                        }
                        Part::Parameter(_) => continue,
                    };
                    out.push(Listed {
                        class,
                        major_id,
                        minor_id,
                        levels,
                        name: p.name.clone(),
                        value: p.value.clone(),
                    });
                }
            }
            Object::Module(m) => {
                let params = if m.properties.iter().any(|p| matches!(p.part, Part::Parameter(_))) {
                    module_signature(m).0
                } else {
                    Vec::new()
                };
                let columns = if m.properties.iter().any(|p| matches!(p.part, Part::Column(_))) {
                    let mut binder = tessera_semantics::bind::Binder::new(ctx.shared, &*ctx.session, &[]);
                    binder.module_shape(db, m).map(|s| s.columns).unwrap_or_default()
                } else {
                    Vec::new()
                };
                for p in &m.properties {
                    let mut levels = object_level(module_level_type(m.kind));
                    let (class, minor_id) = match &p.part {
                        Part::Object => ((1, "OBJECT_OR_COLUMN"), 0),
                        Part::Parameter(name) => {
                            let Some(i) = params.iter().position(|q| q.name.eq_ignore_ascii_case(name)) else {
                                continue;
                            };
                            levels.push(("PARAMETER", params[i].name.clone()));
                            ((2, "PARAMETER"), i as i64 + 1)
                        }
                        Part::Column(name) => {
                            let Some(i) = columns.iter().position(|c| c.name.eq_ignore_ascii_case(name)) else {
                                continue;
                            };
                            levels.push(("COLUMN", columns[i].name.clone()));
                            ((1, "OBJECT_OR_COLUMN"), i as i64 + 1)
                        }
                        Part::Index(_) | Part::Constraint(_) => continue,
                    };
                    out.push(Listed {
                        class,
                        major_id: object_id,
                        minor_id,
                        levels,
                        name: p.name.clone(),
                        value: p.value.clone(),
                    });
                }
            }
            Object::Sequence(q) => {
                for p in q.properties.iter().filter(|p| p.part.is_object()) {
                    out.push(Listed {
                        class: (1, "OBJECT_OR_COLUMN"),
                        major_id: object_id,
                        minor_id: 0,
                        levels: object_level("SEQUENCE"),
                        name: p.name.clone(),
                        value: p.value.clone(),
                    });
                }
            }
        }
    }
    Ok(out)
}

pub(super) static EXTENDED_PROPERTIES: ViewDef<6> = ViewDef {
    schema: "sys",
    name: "extended_properties",
    columns: [
        col("class", TinyInt, false),
        col("class_desc", NVarChar(60), true),
        col("major_id", Int, false),
        col("minor_id", Int, false),
        col("name", SYSNAME, false),
        // sql_variant in SQL Server: tessera keeps a value as its text.
        col("value", NVARCHAR_MAX, true),
    ],
    rows: extended_properties,
};

fn extended_properties(ctx: &ExecCtx, db: &str) -> Rows<6> {
    Ok(listed(ctx, db)?
        .into_iter()
        .map(|l| {
            [
                int(l.class.0),
                s(l.class.1),
                int(l.major_id),
                int(l.minor_id),
                s(&l.name),
                l.value.as_deref().map_or(Value::Null, s),
            ]
        })
        .collect())
}

/// `fn_listextendedproperty(name, level0type, level0name, level1type, level1name,
/// level2type, level2name)`: the properties (all of them for a NULL name) of what the
/// levels name. The deepest level with a type says what is listed; its name may be NULL
/// (every object of that type under the levels above), the names above it may not; no
/// level type at all lists the database's own.
pub(super) static LIST_EXTENDED_PROPERTY: FunctionDef<4> = FunctionDef {
    name: "fn_listextendedproperty",
    columns: [
        col("objtype", SYSNAME, true),
        col("objname", SYSNAME, true),
        col("name", SYSNAME, true),
        col("value", NVARCHAR_MAX, true),
    ],
    rows: list_extended_property,
};

fn list_extended_property(ctx: &ExecCtx, db: &str, args: &[Value]) -> Rows<4> {
    let arg = |i: usize| match args.get(i) {
        Some(Value::Str(v)) => Some(v.trim_end().to_string()),
        _ => None,
    };
    let name = arg(0);
    let mut levels = Vec::new();
    for level in 0..3 {
        match arg(1 + level * 2) {
            Some(ty) if levels.len() == level => levels.push((ty, arg(2 + level * 2))),
            Some(_) => return Ok(Vec::new()),
            None => {}
        }
    }
    if levels.iter().rev().skip(1).any(|(_, n)| n.is_none()) {
        return Ok(Vec::new());
    }
    let wanted = |l: &Listed| {
        l.levels.len() == levels.len()
            && l.levels.iter().zip(&levels).all(|((ty, n), (want_ty, want_n))| {
                ty.eq_ignore_ascii_case(want_ty) && want_n.as_ref().is_none_or(|w| w.eq_ignore_ascii_case(n))
            })
            && name.as_ref().is_none_or(|w| w.eq_ignore_ascii_case(&l.name))
    };
    Ok(listed(ctx, db)?
        .into_iter()
        .filter(wanted)
        .map(|l| {
            let (objtype, objname) = l.levels.last().map_or((Value::Null, Value::Null), |(t, n)| (s(t), s(n)));
            [objtype, objname, s(&l.name), l.value.as_deref().map_or(Value::Null, s)]
        })
        .collect())
}
