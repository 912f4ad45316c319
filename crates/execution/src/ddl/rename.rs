//! sp_rename: a table or constraint (`@objtype` NULL or OBJECT), a column (COLUMN) or an
//! index (INDEX) gets a new name, in the session's transaction like any DDL (a view,
//! procedure or function: `crate::modules::rename`). The definitions that name it are left as they are (SQL
//! Server's caution says so), but for the CHECK constraints of a renamed column, which
//! name it in the table's own definition.

use std::sync::Arc;

use super::locking::lock_for_ddl;
use super::rebuild::save_definition;
use crate::runtime::ExecCtx;
use tessera_errors::{msg, SqlResult};
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::{Catalog, Object, Part, Table};
use tessera_syntax::ast::{Ident, ObjectName};

/// What sp_rename's `@objtype` says is renamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenameKind {
    /// NULL: an object or a constraint.
    Unspecified,
    Object,
    Column,
    Index,
}

impl RenameKind {
    /// The kind as SQL Server's messages name it.
    fn word(self) -> &'static str {
        match self {
            RenameKind::Unspecified => "(null)",
            RenameKind::Object => "OBJECT",
            RenameKind::Column => "COLUMN",
            RenameKind::Index => "INDEX",
        }
    }
}

/// Renames what `name` (as given: `written`) names to `new`.
pub fn rename(ctx: &mut ExecCtx, name: &ObjectName, written: &str, new: &str, kind: RenameKind) -> SqlResult<()> {
    match kind {
        RenameKind::Unspecified | RenameKind::Object => rename_object(ctx, name, written, new, kind),
        RenameKind::Column | RenameKind::Index => rename_part(ctx, name, new, kind),
    }
}

/// A table, module or constraint of the current database.
fn rename_object(ctx: &mut ExecCtx, name: &ObjectName, written: &str, new: &str, kind: RenameKind) -> SqlResult<()> {
    let not_found = || msg::RENAME_ITEM_NOT_FOUND.with(&[&written, &ctx.session.database, &kind.word()]);
    let (db, schema, obj) = Binder::new(ctx.shared, ctx.session, &[]).qualify(name).map_err(|_| not_found())?;
    if !db.eq_ignore_ascii_case(&ctx.session.database) {
        return Err(not_found());
    }
    let database = ctx.shared.database(&db)?;
    let catalog = ctx.catalog(&database)?;
    let taken = |catalog: &Catalog| name_in_use(catalog, &schema, new);
    match catalog.lookup(&schema, &obj).cloned() {
        Some(Object::Table(_)) => {
            if taken(&catalog) {
                return Err(msg::RENAME_NAME_IN_USE.with(&[&new, &"object"]));
            }
            let (database, table) = lock_for_ddl(ctx, name, "sp_rename")?;
            let mut renamed = (*table).clone();
            renamed.name = new.to_string();
            save_definition(ctx, &database, &table, renamed)
        }
        // Modules and sequences are renamed by `crate::modules::rename` and
        // `crate::sequences::rename` (the caller looks for one first).
        Some(Object::Module(_) | Object::Sequence(_)) => Err(not_found()),
        None => {
            // A constraint: an object of its own, named in its table's definition.
            let owner = catalog.objects().into_iter().find_map(|o| match o {
                Object::Table(t) if t.schema.eq_ignore_ascii_case(&schema) && has_constraint(t, &obj) => {
                    Some(t.clone())
                }
                _ => None,
            });
            let Some(owner) = owner else { return Err(not_found()) };
            if taken(&catalog) {
                return Err(msg::RENAME_NAME_IN_USE.with(&[&new, &"object"]));
            }
            let table_name = ObjectName(vec![Ident::new(owner.schema.clone()), Ident::new(owner.name.clone())]);
            let (database, table) = lock_for_ddl(ctx, &table_name, "sp_rename")?;
            let mut renamed = (*table).clone();
            rename_constraint(&mut renamed, &obj, new);
            renamed.rename_part(&Part::Constraint(obj.clone()), new);
            renamed.rename_part(&Part::Index(obj.clone()), new);
            save_definition(ctx, &database, &table, renamed)
        }
    }
}

/// A column or an index: `name` is `[schema.]table.part`.
fn rename_part(ctx: &mut ExecCtx, name: &ObjectName, new: &str, kind: RenameKind) -> SqlResult<()> {
    let wrong = || msg::RENAME_AMBIGUOUS.with(&[&kind.word()]);
    let [table_parts @ .., part] = &name.0[..] else { return Err(wrong()) };
    if table_parts.is_empty() {
        return Err(wrong());
    }
    let table_name = ObjectName(table_parts.to_vec());
    let (database, table): (_, Arc<Table>) = lock_for_ddl(ctx, &table_name, "sp_rename").map_err(|_| wrong())?;
    let mut renamed = (*table).clone();
    if kind == RenameKind::Column {
        let c = table.column(&part.value).ok_or_else(wrong)?;
        if table.column(new).is_some_and(|other| other != c) {
            return Err(msg::RENAME_NAME_IN_USE.with(&[&new, &"COLUMN"]));
        }
        let old = std::mem::replace(&mut renamed.columns[c].name, new.to_string());
        renamed.rename_part(&Part::Column(old.clone()), new);
        for check in &mut renamed.checks {
            check.text = renamed_in(&check.text, &old, new);
        }
    } else {
        let i = renamed.indexes.iter().position(|ix| !ix.is_heap() && ix.name.eq_ignore_ascii_case(&part.value));
        let i = i.ok_or_else(wrong)?;
        if renamed.indexes.iter().enumerate().any(|(j, ix)| j != i && ix.name.eq_ignore_ascii_case(new)) {
            return Err(msg::RENAME_NAME_IN_USE.with(&[&new, &"INDEX"]));
        }
        let old = std::mem::replace(&mut renamed.indexes[i].name, new.to_string());
        renamed.rename_part(&Part::Index(old.clone()), new);
        if renamed.indexes[i].primary_key || renamed.indexes[i].unique_constraint {
            renamed.rename_part(&Part::Constraint(old), new);
        }
    }
    save_definition(ctx, &database, &table, renamed)
}

/// Whether `name` names an object or a constraint of `schema` (a rename to it is 15335).
pub fn name_in_use(catalog: &Catalog, schema: &str, name: &str) -> bool {
    catalog.lookup(schema, name).is_some()
        || catalog.objects().into_iter().any(|o| match o {
            Object::Table(t) => t.schema.eq_ignore_ascii_case(schema) && has_constraint(t, name),
            Object::Module(_) | Object::Sequence(_) => false,
        })
}

fn has_constraint(t: &Table, name: &str) -> bool {
    crate::sysviews::constraint_objects(t).iter().any(|c| c.name.eq_ignore_ascii_case(name))
}

/// Renames `t`'s constraint `old` (a key's index, a foreign key, a check or a default).
fn rename_constraint(t: &mut Table, old: &str, new: &str) {
    let is = |n: &str| n.eq_ignore_ascii_case(old);
    if let Some(ix) = t.indexes.iter_mut().find(|ix| (ix.primary_key || ix.unique_constraint) && is(&ix.name)) {
        ix.name = new.to_string();
    } else if let Some(fk) = t.foreign_keys.iter_mut().find(|fk| is(&fk.name)) {
        fk.name = new.to_string();
    } else if let Some(c) = t.checks.iter_mut().find(|c| is(&c.name)) {
        c.name = new.to_string();
    } else if let Some(d) = t.columns.iter_mut().filter_map(|c| c.default.as_mut()).find(|d| is(&d.name)) {
        d.name = new.to_string();
    }
}

/// `text` (a CHECK's definition) with every reference to the column `old` naming `new`
/// (an identifier not followed by a parenthesis, which would make it a function's name).
fn renamed_in(text: &str, old: &str, new: &str) -> String {
    let Some(names) = tessera_syntax::lexer::name_references(text) else { return text.to_string() };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (name, span) in names {
        if Ident::new(name) == Ident::new(old) {
            out.push_str(&text[at..span.start]);
            out.push('[');
            out.push_str(&new.replace(']', "]]"));
            out.push(']');
            at = span.end;
        }
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::renamed_in;

    #[test]
    fn a_renamed_column_is_renamed_in_checks() {
        assert_eq!(renamed_in("([amount]>=(0))", "amount", "cost"), "([cost]>=(0))");
        assert_eq!(renamed_in("([Amount]<abs([ratio]))", "AMOUNT", "a]b"), "([a]]b]<abs([ratio]))");
        assert_eq!(renamed_in("(abs([x])>(0))", "abs", "y"), "(abs([x])>(0))", "a function keeps its name");
    }
}
