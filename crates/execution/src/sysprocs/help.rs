//! The sp_help family: sp_help, sp_helpindex, sp_helpconstraint, sp_helptext and
//! sp_depends, with SQL Server's result sets and messages.

use super::{col, current_catalog, int, object_name, result, s, text_arg, too_many, NamedArg, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_errors::{msg, SqlResult};
use tessera_semantics::catalog::{Action, Catalog, Object, Table};
use tessera_semantics::output::{OutputColumn, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};

/// The object `name` (`t`, `dbo.t`, `db.dbo.t`, bracketed or not) names in the session's
/// catalog (its schema `dbo` when it names none); 15009 if there is none.
fn find_object(ctx: &ExecCtx, catalog: &Catalog, name: &str) -> SqlResult<Object> {
    let missing = || msg::OBJECT_NOT_IN_DATABASE.with(&[&name, &ctx.session.database]);
    let parts = object_name(name).ok_or_else(missing)?;
    let schema = match &parts.0[..] {
        [.., schema, _] if !schema.value.is_empty() => schema.value.as_str(),
        _ => "dbo",
    };
    catalog.lookup(schema, &parts.name().value).cloned().ok_or_else(missing)
}

/// The table `name` names (15009 for none, or for an object that is not a table).
fn find_table(ctx: &ExecCtx, catalog: &Catalog, name: &str) -> SqlResult<std::sync::Arc<Table>> {
    match find_object(ctx, catalog, name)? {
        Object::Table(t) => Ok(t),
        Object::Module(_) | Object::Sequence(_) => {
            Err(msg::OBJECT_NOT_IN_DATABASE.with(&[&name, &ctx.session.database]))
        }
    }
}

/// The columns of sp_help's and sp_helpindex's index result set.
fn index_columns() -> [OutputColumn; 3] {
    [
        col("index_name", SYSNAME, false),
        col("index_description", SqlType::VarChar(210), true),
        col("index_keys", SqlType::NVarChar(2078), true),
    ]
}

/// A table's indexes as sp_helpindex describes them, by name: name, `clustered, unique,
/// primary key located on PRIMARY`, and the keys (`name(-)` for a descending one).
fn index_rows(t: &Table) -> Vec<Vec<Value>> {
    let mut indexes: Vec<_> = t.indexes.iter().filter(|ix| !ix.is_heap()).collect();
    indexes.sort_by_key(|ix| ix.name.to_lowercase());
    indexes
        .into_iter()
        .map(|ix| {
            let mut desc = if ix.is_clustered() { "clustered".to_string() } else { "nonclustered".to_string() };
            if ix.unique {
                desc.push_str(", unique");
            }
            if ix.primary_key {
                desc.push_str(", primary key");
            } else if ix.unique_constraint {
                desc.push_str(", unique key");
            }
            desc.push_str(" located on PRIMARY");
            let keys: Vec<String> = ix
                .columns
                .iter()
                .map(|&(c, d)| if d { format!("{}(-)", t.columns[c].name) } else { t.columns[c].name.clone() })
                .collect();
            vec![s(&ix.name), s(&desc), s(&keys.join(", "))]
        })
        .collect()
}

/// sp_help [@objname]: every object, or one object's description (a table's columns,
/// identity, indexes and constraints).
pub(super) fn help(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    too_many("sp_help", args, 1)?;
    let (_, catalog) = current_catalog(ctx)?;
    let Some(name) = text_arg(args, 0, "@objname") else {
        let columns =
            [col("Name", SYSNAME, true), col("Owner", SYSNAME, true), col("Object_type", SqlType::NVarChar(31), true)];
        let rows: Vec<_> =
            catalog.objects().into_iter().map(|o| vec![s(o.name()), s(o.schema()), s(object_type(o))]).collect();
        result(ctx, sink, &columns, &rows);
        return Ok(0);
    };
    let object = find_object(ctx, &catalog, &name)?;
    let header = [
        col("Name", SYSNAME, false),
        col("Owner", SYSNAME, false),
        col("Type", SqlType::NVarChar(31), false),
        col("Created_datetime", SqlType::DateTime, false),
    ];
    let created = match &object {
        Object::Table(t) => t.created,
        Object::Module(m) => m.created,
        Object::Sequence(s) => s.created,
    };
    let created = types::cast(&Value::Int(created), &SqlType::BigInt, &SqlType::Float, None)
        .and_then(|secs| match secs {
            Value::Float(f) => {
                types::cast(&Value::Float(f / 86_400.0 + 25_567.0), &SqlType::Float, &SqlType::DateTime, None)
            }
            v => Ok(v),
        })
        .unwrap_or(Value::Null);
    result(ctx, sink, &header, &[vec![s(object.name()), s(object.schema()), s(object_type(&object)), created]]);
    if let Object::Table(t) = &object {
        help_table(t, ctx, sink);
    }
    Ok(0)
}

fn help_table(t: &Table, ctx: &ExecCtx, sink: &mut dyn ResultSink) {
    let columns = [
        col("Column_name", SYSNAME, true),
        col("Type", SYSNAME, true),
        col("Computed", SqlType::VarChar(35), false),
        col("Length", SqlType::Int, false),
        col("Prec", SqlType::Char(5), true),
        col("Scale", SqlType::Char(5), true),
        col("Nullable", SqlType::VarChar(35), false),
    ];
    let rows: Vec<_> = t
        .columns
        .iter()
        .map(|c| {
            let numeric = types::is_numeric(&c.ty);
            let (prec, scale) = match c.ty {
                SqlType::Decimal { precision, scale } => (precision.to_string(), scale.to_string()),
                SqlType::TinyInt => ("3".into(), "0".into()),
                SqlType::SmallInt => ("5".into(), "0".into()),
                SqlType::Int => ("10".into(), "0".into()),
                SqlType::BigInt => ("19".into(), "0".into()),
                SqlType::Money => ("19".into(), "4".into()),
                SqlType::SmallMoney => ("10".into(), "4".into()),
                SqlType::Real => ("24".into(), "NULL".into()),
                SqlType::Float => ("53".into(), "NULL".into()),
                _ => (String::new(), String::new()),
            };
            let length = match c.ty {
                SqlType::NChar(n) | SqlType::NVarChar(n) if n != tessera_access::row::MAX => i64::from(n) * 2,
                SqlType::Char(n)
                | SqlType::VarChar(n)
                | SqlType::Binary(n)
                | SqlType::VarBinary(n)
                | SqlType::NChar(n)
                | SqlType::NVarChar(n) => {
                    if n == tessera_access::row::MAX {
                        -1
                    } else {
                        i64::from(n)
                    }
                }
                _ => c.ty.fixed_size().map_or(-1, |n| n as i64),
            };
            let pad = |v: String| if numeric { s(&format!("{v:<5}")) } else { s("     ") };
            vec![
                s(&c.name),
                s(types::base_type_name(&c.ty)),
                s("no"),
                int(length),
                pad(prec),
                pad(scale),
                s(if c.nullable { "yes" } else { "no" }),
            ]
        })
        .collect();
    result(ctx, sink, &columns, &rows);
    let identity_columns = [
        col("Identity", SYSNAME, true),
        col("Seed", SqlType::Decimal { precision: 38, scale: 0 }, true),
        col("Increment", SqlType::Decimal { precision: 38, scale: 0 }, true),
    ];
    let identity = match t.identity_column() {
        Some(i) => {
            let (seed, inc) = t.columns[i].identity.expect("identity column");
            vec![
                s(&t.columns[i].name),
                Value::Decimal { value: i128::from(seed), scale: 0 },
                Value::Decimal { value: i128::from(inc), scale: 0 },
            ]
        }
        None => vec![s("No identity column defined."), Value::Null, Value::Null],
    };
    result(ctx, sink, &identity_columns, &[identity]);
    let indexes = index_rows(t);
    if !indexes.is_empty() {
        result(ctx, sink, &index_columns(), &indexes);
    }
    let constraint_columns = [
        col("constraint_type", SqlType::NVarChar(146), true),
        col("constraint_name", SYSNAME, true),
        col("constraint_keys", SqlType::NVarChar(2078), true),
    ];
    let mut constraints = Vec::new();
    for ix in t.indexes.iter().filter(|ix| ix.primary_key || ix.unique_constraint) {
        let kind = if ix.primary_key { "PRIMARY KEY" } else { "UNIQUE" };
        let clustering = if ix.is_clustered() { "clustered" } else { "non-clustered" };
        let keys: Vec<&str> = ix.columns.iter().map(|&(c, _)| t.columns[c].name.as_str()).collect();
        constraints.push(vec![s(&format!("{kind} ({clustering})")), s(&ix.name), s(&keys.join(", "))]);
    }
    for c in &t.checks {
        constraints.push(vec![s("CHECK on table"), s(&c.name), s(&c.text)]);
    }
    for col_def in &t.columns {
        if let Some(d) = &col_def.default {
            constraints.push(vec![s(&format!("DEFAULT on column {}", col_def.name)), s(&d.name), s(&d.text)]);
        }
    }
    for fk in &t.foreign_keys {
        let keys: Vec<&str> = fk.columns.iter().map(|&c| t.columns[c].name.as_str()).collect();
        constraints.push(vec![s("FOREIGN KEY"), s(&fk.name), s(&keys.join(", "))]);
    }
    if !constraints.is_empty() {
        result(ctx, sink, &constraint_columns, &constraints);
    }
}

fn object_type(o: &Object) -> &'static str {
    match o {
        Object::Table(_) => "user table",
        Object::Module(m) => match m.kind {
            tessera_semantics::catalog::ModuleKind::View => "view",
            tessera_semantics::catalog::ModuleKind::Procedure => "stored procedure",
            tessera_semantics::catalog::ModuleKind::ScalarFunction => "scalar function",
            tessera_semantics::catalog::ModuleKind::TableFunction => "inline function",
            tessera_semantics::catalog::ModuleKind::MultiStatementFunction => "table function",
            tessera_semantics::catalog::ModuleKind::Synonym => "synonym",
            tessera_semantics::catalog::ModuleKind::Trigger => "trigger",
            tessera_semantics::catalog::ModuleKind::TableType => "table type",
        },
        Object::Sequence(_) => "sequence object",
    }
}

/// sp_helpindex @objname: the table's indexes, or message 15472 when it has none.
pub(super) fn helpindex(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    too_many("sp_helpindex", args, 1)?;
    let name =
        text_arg(args, 0, "@objname").ok_or_else(|| msg::MISSING_PARAMETER.with(&[&"sp_helpindex", &"@objname"]))?;
    let (_, catalog) = current_catalog(ctx)?;
    let t = find_table(ctx, &catalog, &name)?;
    let rows = index_rows(&t);
    if rows.is_empty() {
        sink.message(&msg::NO_INDEXES_ON_OBJECT.with(&[&name]));
    } else {
        result(ctx, sink, &index_columns(), &rows);
    }
    Ok(0)
}

/// sp_helpconstraint @objname [, @nomsg = 'nomsg']: the object's name (unless 'nomsg'),
/// its constraints — foreign keys with a second row naming what they reference — and the
/// foreign keys that reference it; messages 15469 and 15470 stand for empty sets.
pub(super) fn helpconstraint(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    const PROC: &str = "sp_helpconstraint";
    too_many(PROC, args, 2)?;
    let name = text_arg(args, 0, "@objname").ok_or_else(|| msg::MISSING_PARAMETER.with(&[&PROC, &"@objname"]))?;
    let nomsg = match text_arg(args, 1, "@nomsg") {
        None => false,
        Some(m) if m.eq_ignore_ascii_case("nomsg") => true,
        Some(m) if m.eq_ignore_ascii_case("msg") => false,
        Some(_) => return Err(msg::INVALID_PROCEDURE_PARAMETER.with(&[&PROC])),
    };
    let (db, catalog) = current_catalog(ctx)?;
    let t = find_table(ctx, &catalog, &name)?;
    if !nomsg {
        result(ctx, sink, &[col("Object Name", SqlType::NVarChar(776), false)], &[vec![s(&name)]]);
    }
    let na = || s("(n/a)");
    let action = |a: Action| match a {
        Action::NoAction => "No Action",
        Action::Cascade => "Cascade",
        Action::SetNull => "Set Null",
        Action::SetDefault => "Set Default",
    };
    // (constraint_type, name, rows): sorted by name; a foreign key's second row follows
    // its first.
    let mut found: Vec<(String, String, Vec<Vec<Value>>)> = Vec::new();
    for ix in t.indexes.iter().filter(|ix| ix.primary_key || ix.unique_constraint) {
        let kind = if ix.primary_key { "PRIMARY KEY" } else { "UNIQUE" };
        let clustering = if ix.is_clustered() { "clustered" } else { "non-clustered" };
        let kind = format!("{kind} ({clustering})");
        let keys: Vec<&str> = ix.columns.iter().map(|&(c, _)| t.columns[c].name.as_str()).collect();
        let row = vec![s(&kind), s(&ix.name), na(), na(), na(), na(), s(&keys.join(", "))];
        found.push((kind, ix.name.clone(), vec![row]));
    }
    for c in &t.checks {
        let kind = match crate::sysviews::columns_named(&t, &c.text)[..] {
            [one] => format!("CHECK on column {}", t.columns[one].name),
            _ => "CHECK Table Level ".to_string(),
        };
        let row = vec![s(&kind), s(&c.name), na(), na(), s("Enabled"), s("Is_For_Replication"), s(&c.text)];
        found.push((kind, c.name.clone(), vec![row]));
    }
    for column in &t.columns {
        if let Some(d) = &column.default {
            let kind = format!("DEFAULT on column {}", column.name);
            found.push((
                kind.clone(),
                d.name.clone(),
                vec![vec![s(&kind), s(&d.name), na(), na(), na(), na(), s(&d.text)]],
            ));
        }
    }
    for fk in &t.foreign_keys {
        let keys: Vec<&str> = fk.columns.iter().map(|&c| t.columns[c].name.as_str()).collect();
        let first = vec![
            s("FOREIGN KEY"),
            s(&fk.name),
            s(action(fk.on_delete)),
            s(action(fk.on_update)),
            s("Enabled"),
            s("Is_For_Replication"),
            s(&keys.join(", ")),
        ];
        let references = match catalog.table_by_id(fk.ref_table) {
            Some(p) => {
                let cols: Vec<&str> = fk.ref_columns.iter().map(|&c| p.columns[c].name.as_str()).collect();
                format!("REFERENCES {db}.{}.{} ({})", p.schema, p.name, cols.join(", "))
            }
            None => String::new(),
        };
        let blank = || s(" ");
        let second = vec![blank(), blank(), blank(), blank(), blank(), blank(), s(&references)];
        found.push(("FOREIGN KEY".to_string(), fk.name.clone(), vec![first, second]));
    }
    found.sort_by_key(|(_, name, _)| name.to_lowercase());
    if found.is_empty() {
        sink.message(&msg::NO_CONSTRAINTS_DEFINED.with(&[&name]));
    } else {
        let columns = [
            col("constraint_type", SqlType::NVarChar(256), true),
            col("constraint_name", SYSNAME, true),
            col("delete_action", SqlType::VarChar(11), true),
            col("update_action", SqlType::VarChar(11), true),
            col("status_enabled", SqlType::VarChar(8), true),
            col("status_for_replication", SqlType::VarChar(19), true),
            col("constraint_keys", SqlType::NVarChar(2126), true),
        ];
        let rows: Vec<Vec<Value>> = found.into_iter().flat_map(|(_, _, rows)| rows).collect();
        result(ctx, sink, &columns, &rows);
    }
    let mut referencing: Vec<String> = catalog
        .referencing(t.id)
        .into_iter()
        .map(|(child, i)| format!("{db}.{}.{}: {}", child.schema, child.name, child.foreign_keys[i].name))
        .collect();
    referencing.sort();
    if referencing.is_empty() {
        sink.message(&msg::NO_FOREIGN_KEYS_REFERENCE.with(&[&name]));
    } else {
        let rows: Vec<Vec<Value>> = referencing.iter().map(|r| vec![s(r)]).collect();
        result(ctx, sink, &[col("Table is referenced by foreign key", SqlType::NVarChar(516), true)], &rows);
    }
    Ok(0)
}

/// The longest line sp_helptext returns; longer lines go on in the next row.
const HELPTEXT_LINE_CHARS: usize = 255;

/// sp_helptext @objname: the definition of a view, procedure, function, check or default,
/// a row per line (each with its CR LF); 15197 for an object without one.
pub(super) fn helptext(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    too_many("sp_helptext", args, 2)?;
    let name =
        text_arg(args, 0, "@objname").ok_or_else(|| msg::MISSING_PARAMETER.with(&[&"sp_helptext", &"@objname"]))?;
    let (db, catalog) = current_catalog(ctx)?;
    let visible = crate::sysviews::definitions_visible(ctx, &db)?;
    // Without VIEW DEFINITION an object has no text the session may read.
    let text = match find_object(ctx, &catalog, &name) {
        Ok(Object::Module(m)) if visible(&m.schema, m.id) => m.text.clone(),
        Ok(_) => return Err(msg::NO_TEXT_FOR_OBJECT.with(&[&name])),
        Err(e) => match constraint_text(&catalog, &name) {
            Some((t, text)) if visible(&t.schema, t.id) => text,
            Some(_) => return Err(msg::NO_TEXT_FOR_OBJECT.with(&[&name])),
            None => return Err(e),
        },
    };
    // Lines end at CR LF pairs (kept at their ends), as SQL Server splits them; a lone LF
    // is not a break.
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("\r\n") {
        lines.push(&rest[..at + 2]);
        rest = &rest[at + 2..];
    }
    if !rest.is_empty() {
        lines.push(rest);
    }
    for line in lines {
        let chars: Vec<char> = line.chars().collect();
        for piece in chars.chunks(HELPTEXT_LINE_CHARS) {
            rows.push(vec![s(&piece.iter().collect::<String>())]);
        }
    }
    result(ctx, sink, &[col("Text", SqlType::NVarChar(255), true)], &rows);
    Ok(0)
}

/// The table and definition of the check or default constraint `name` (of any table).
fn constraint_text(catalog: &Catalog, name: &str) -> Option<(std::sync::Arc<Table>, String)> {
    let bare = object_name(name)?.name().value.clone();
    catalog.objects().into_iter().find_map(|o| {
        let Object::Table(t) = o else { return None };
        let check = t.checks.iter().find(|c| c.name.eq_ignore_ascii_case(&bare)).map(|c| c.text.clone());
        let text = check.or_else(|| {
            let mut defaults = t.columns.iter().filter_map(|c| c.default.as_ref());
            defaults.find(|d| d.name.eq_ignore_ascii_case(&bare)).map(|d| d.text.clone())
        })?;
        Some((t.clone(), text))
    })
}

/// sp_depends @objname: what the object names (its database's objects: a view's or
/// inline function's tables column by column, a procedure's or function's objects with
/// whether it reads and changes them), then what names it; a message when neither.
pub(super) fn depends(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    too_many("sp_depends", args, 1)?;
    let name =
        text_arg(args, 0, "@objname").ok_or_else(|| msg::MISSING_PARAMETER.with(&[&"sp_depends", &"@objname"]))?;
    let (db, catalog) = current_catalog(ctx)?;
    let object = find_object(ctx, &catalog, &name)?;
    let dependencies = crate::sysviews::dependencies(ctx, &db)?;
    let shown = |o: &Object| format!("{}.{}", o.schema(), o.name());
    let yes_no = |b: bool| s(if b { "yes" } else { "no" });
    // Each object once (a procedure may name it several ways), column by column when the
    // columns are known.
    let mut named: Vec<(Object, bool, bool, Vec<String>)> = Vec::new();
    for d in dependencies.iter().filter(|d| d.referencing.id == object.id()) {
        let Some(found) = &d.found else { continue };
        match named.iter_mut().find(|(o, ..)| o.id() == found.id()) {
            Some((_, read, written, columns)) => {
                *read |= d.read;
                *written |= d.written;
                columns.extend(d.columns.iter().filter(|c| !columns.contains(c)).cloned().collect::<Vec<_>>());
            }
            None => named.push((found.clone(), d.read, d.written, d.columns.clone())),
        }
    }
    let mut uses = Vec::new();
    for (found, read, written, columns) in &named {
        let (name, kind) = (s(&shown(found)), s(crate::sysviews::object_kind(found)));
        if columns.is_empty() {
            uses.push(vec![name.clone(), kind.clone(), yes_no(*written), yes_no(*read), Value::Null]);
        }
        for c in columns {
            uses.push(vec![name.clone(), kind.clone(), yes_no(*written), yes_no(*read), s(c)]);
        }
    }
    let mut users: Vec<Vec<Value>> = Vec::new();
    for d in dependencies.iter().filter(|d| d.found.as_ref().is_some_and(|f| f.id() == object.id())) {
        let referencing = Object::Module(d.referencing.clone());
        let row = vec![s(&shown(&referencing)), s(crate::sysviews::object_kind(&referencing))];
        if !users.contains(&row) {
            users.push(row);
        }
    }
    if uses.is_empty() && users.is_empty() {
        sink.message(&tessera_errors::SqlError::informational(
            0,
            "Object does not reference any object, and no objects reference it.".to_string(),
        ));
        return Ok(0);
    }
    let name_column = col("name", SqlType::NVarChar(257), false);
    let type_column = col("type", SqlType::NVarChar(16), false);
    if !uses.is_empty() {
        let columns = [
            name_column.clone(),
            type_column.clone(),
            col("updated", SqlType::NVarChar(7), true),
            col("selected", SqlType::NVarChar(8), true),
            col("column", SYSNAME, true),
        ];
        result(ctx, sink, &columns, &uses);
    }
    if !users.is_empty() {
        result(ctx, sink, &[name_column, type_column], &users);
    }
    Ok(0)
}
