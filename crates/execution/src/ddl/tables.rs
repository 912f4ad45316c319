//! Tables: CREATE, DROP and TRUNCATE TABLE, table variables, column definitions.

use super::constraints::{apply_constraint, constraint_failed, ensure_constraint_name_free, set_default};
use super::indexes::{index_columns, place_index};
use super::locking::{lock_for_ddl, name_lock};
use super::rebuild::{goes_with_transaction, replace_storage, write_definition};
use super::{create_trees, drop_trees, heap_index, tree_name};
use crate::runtime::ExecCtx;
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::{self, database_not_found, Catalog, Column, Computed, Index, Object, Table};
use tessera_semantics::types::{self, SqlType};
use tessera_syntax::ast::{self, ConstraintKind, Ident, ObjectName};

pub(super) fn resolve_column_type(t: &ast::TypeName, position: usize) -> SqlResult<SqlType> {
    types::resolve_type(t, false).map_err(|mut e| {
        if e.number == 2715 {
            e.message = e.message.replacen("#1", &format!("#{position}"), 1);
        }
        e
    })
}

/// The longest name of a local temporary table (SQL Server's: 128 less the suffix).
const MAX_TEMP_NAME_CHARS: usize = 116;

/// Where a new table goes: (database, schema, name). A `##global` temporary table is named
/// exactly in tempdb, so every session finds it; a `#local` one gets a name unique to the
/// session as SQL Server makes it: padded with underscores to 116 characters, then 12 hex
/// digits (the session id and a serial), so `LIKE '#name[_][_][_]%'` finds it.
fn placement(ctx: &mut ExecCtx, name: &ObjectName) -> SqlResult<(String, String, String)> {
    let own = &name.name().value;
    let tempdb = |real: String| Ok(("tempdb".to_string(), "dbo".to_string(), real));
    if own.starts_with("##") {
        return tempdb(own.clone());
    }
    if own.starts_with('#') {
        let chars = own.chars().count();
        if chars > MAX_TEMP_NAME_CHARS {
            let start: String = own.chars().take(30).collect();
            return Err(msg::NAME_TOO_LONG.with(&[&start, &(MAX_TEMP_NAME_CHARS as i64)]));
        }
        ctx.session.temp_serial += 1;
        let suffix = ((ctx.session.spid as u64 & 0xFFFF) << 32) | u64::from(ctx.session.temp_serial);
        return tempdb(format!("{own}{}{suffix:012X}", "_".repeat(MAX_TEMP_NAME_CHARS - chars)));
    }
    let b = Binder::new(ctx.shared, ctx.session, &[]);
    let (db, schema, obj) = b.qualify_new(name)?;
    let schema_exists = schema.eq_ignore_ascii_case("dbo")
        || (ctx.shared.engine.exists(&db)
            && ctx.shared.security(&ctx.session.catalog_memo, &db)?.schema(&schema).is_some());
    if !schema_exists {
        return Err(msg::SCHEMA_NOT_FOUND.with(&[&schema]));
    }
    if !ctx.shared.engine.exists(&db) {
        return Err(database_not_found(&db));
    }
    Ok((db, schema, obj))
}

/// A column's definition. One that says neither NULL nor NOT NULL is nullable when
/// `null_by_default` (the session's ANSI_NULL_DFLT_ON, on unless SET OFF or
/// ANSI_NULL_DFLT_OFF ON; then the database's ANSI_NULL_DEFAULT, OFF, applies) and it is
/// not an identity.
pub(super) fn column_def(c: &ast::ColumnDef, position: usize, null_by_default: bool) -> SqlResult<Column> {
    if let Some(e) = &c.computed {
        if e.any(&|x| matches!(x, ast::Expr::Subquery(_) | ast::Expr::Exists(_) | ast::Expr::InSubquery { .. })) {
            return Err(msg::SUBQUERY_NOT_ALLOWED.err());
        }
        // Its type is its expression's, found once the table's columns are known
        // (`type_computed_columns`).
        return Ok(Column {
            name: c.name.value.clone(),
            ty: SqlType::Int,
            nullable: !(c.persisted && c.nullable == Some(false)),
            identity: None,
            default: None,
            computed: Some(Computed { text: tessera_syntax::unparse::definition(e), persisted: c.persisted }),
        });
    }
    let ty = resolve_column_type(&c.ty, position)?;
    if let Some((seed, inc)) = c.identity {
        let ok = matches!(ty, SqlType::TinyInt | SqlType::SmallInt | SqlType::Int | SqlType::BigInt)
            || matches!(ty, SqlType::Decimal { scale: 0, .. });
        if !ok || c.nullable == Some(true) {
            return Err(msg::INVALID_IDENTITY_TYPE.with(&[&c.name.value]));
        }
        if inc == 0 {
            return Err(msg::IDENTITY_INVALID_INCREMENT.with(&[&c.name.value]));
        }
        let _ = seed;
    }
    Ok(Column {
        name: c.name.value.clone(),
        ty,
        nullable: c.nullable.unwrap_or(null_by_default && c.identity.is_none()),
        identity: c.identity,
        default: None,
        computed: None,
    })
}

/// Gives each computed column of `table` its expression's type. A computed column may
/// read the table's other columns, but no computed one (1759; `column_def` refused
/// subqueries, 1046).
pub(super) fn type_computed_columns(ctx: &ExecCtx, table: &mut Table) -> SqlResult<()> {
    for i in 0..table.columns.len() {
        let Some(computed) = &table.columns[i].computed else { continue };
        let e = tessera_syntax::unparse::parse_definition(&computed.text)?;
        // The computed column it reads, if any (the error names that one).
        let read = std::cell::RefCell::new(None);
        e.any(&|x| {
            let ast::Expr::Column(n) = x else { return false };
            let found =
                table.columns.iter().find(|c| c.computed.is_some() && c.name.eq_ignore_ascii_case(&n.name().value));
            if let Some(c) = found {
                read.replace(Some(c.name.clone()));
            }
            found.is_some()
        });
        if let Some(used) = read.into_inner() {
            return Err(msg::COMPUTED_READS_COMPUTED.with(&[&used, &table.name]));
        }
        let mut b = Binder::new(ctx.shared, &*ctx.session, &[]);
        let (_, ty) = b.with_table_scope(table, |b| b.bind_expr(&e))?;
        table.columns[i].ty = ty;
    }
    Ok(())
}

pub fn create_table(ctx: &mut ExecCtx, ct: &ast::CreateTable) -> SqlResult<()> {
    let (db_name, schema, name) = placement(ctx, &ct.name)?;
    if name.chars().count() > 128 {
        return Err(msg::IDENTIFIER_TOO_LONG.with(&[&&name[..30.min(name.len())]]));
    }
    let database = ctx.shared.database(&db_name)?;
    let temp = ct.name.name().value.starts_with('#');
    if temp && ctx.session.temp_tables.contains_key(&ct.name.name().value.to_lowercase()) {
        return Err(msg::OBJECT_ALREADY_EXISTS.with(&[&"an object", &(ct.name.name().value)]));
    }
    if !temp {
        // Held to the transaction's end: another CREATE of this name waits to see whether
        // this one commits, and this one waits for a DROP of the name that may roll back.
        ctx.transaction(database.name())?.lock_schema_to_end(name_lock(&schema, &name))?;
    }
    let shared = ctx.shared;
    let table = shared.alter_catalog(&database, |catalog, version| -> SqlResult<(Catalog, Table)> {
        // A table this transaction dropped still has its name in the shared catalog until
        // the transaction commits; the new one takes the name.
        if catalog.lookup(&schema, &name).is_some_and(|o| temp || !ctx.dropped(database.name(), o.id())) {
            return Err(msg::OBJECT_ALREADY_EXISTS.with(&[&"an object", &name]));
        }
        if ct.columns.is_empty() {
            return Err(msg::SYNTAX_ERROR_NEAR.with(&[&")"]));
        }
        if ct.columns.len() > tessera_access::row::MAX_COLUMNS {
            return Err(msg::TOO_MANY_COLUMNS.with(&[&ct.columns[1024].name.value, &name]));
        }
        let mut catalog = catalog.clone();
        let id = catalog.allocate_id()?;
        let now = catalog::now_epoch();
        let mut table = Table {
            id,
            schema: schema.clone(),
            name: name.clone(),
            columns: Vec::new(),
            indexes: vec![heap_index(id, version)],
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            created: now,
            modified: now,
            large_values_out_of_row: false,
            properties: Vec::new(),
            counters: Arc::default(),
            layout: Default::default(),
        };
        for (i, c) in ct.columns.iter().enumerate() {
            if table.column(&c.name.value).is_some() {
                return Err(msg::DUPLICATE_COLUMN_NAME.with(&[&c.name.value, &name]));
            }
            table.columns.push(column_def(c, i + 1, ctx.session.options.ansi_null_dflt_on)?);
        }
        type_computed_columns(ctx, &mut table)?;
        if table.columns.iter().filter(|c| c.identity.is_some()).count() > 1 {
            return Err(msg::MULTIPLE_IDENTITY_COLUMNS.with(&[&name]));
        }
        // Constraints: column-level ones name their column; then table-level ones. Keys
        // first so that foreign keys may reference this table's own key.
        let mut all: Vec<(Option<&str>, ast::TableConstraint)> = Vec::new();
        for c in &ct.columns {
            all.extend(c.constraints.iter().map(|k| (Some(c.name.value.as_str()), k.clone())));
        }
        all.extend(ct.constraints.iter().map(|k| (None, k.clone())));
        all.sort_by_key(|(_, c)| match c.kind {
            ConstraintKind::PrimaryKey { .. } => 0,
            ConstraintKind::Unique { .. } => 1,
            _ => 2,
        });
        // A clustered UNIQUE makes the primary key nonclustered by default.
        let clustered_unique =
            all.iter().any(|(_, c)| matches!(c.kind, ConstraintKind::Unique { clustered: Some(true), .. }))
                || ct.indexes.iter().any(|i| i.clustered == Some(true));
        let implicit_null: Vec<bool> = ct.columns.iter().map(|c| c.nullable.is_none()).collect();
        let mut salt = 0u64;
        for (column, c) in &all {
            salt += 1;
            let c = match (&c.kind, clustered_unique) {
                (ConstraintKind::PrimaryKey { clustered: None, columns }, true) => ast::TableConstraint {
                    name: c.name.clone(),
                    kind: ConstraintKind::PrimaryKey { clustered: Some(false), columns: columns.clone() },
                },
                _ => c.clone(),
            };
            if let Some(ix) = apply_constraint(ctx, &catalog, &mut table, &c, *column, &implicit_null, version, salt)
                .map_err(constraint_failed)?
            {
                place_index(&mut table, ix);
            }
        }
        for (i, c) in ct.columns.iter().enumerate() {
            if let Some(d) = &c.default {
                salt += 1;
                if let Some(n) = &d.0 {
                    ensure_constraint_name_free(&catalog, &table, &n.value)?;
                }
                set_default(&mut table, i, d, salt);
            }
        }
        for ix in &ct.indexes {
            let columns = index_columns(&table, &ix.columns, "key or index")?;
            let clustered = ix.clustered == Some(true);
            if clustered && !table.indexes[0].is_heap() {
                return Err(msg::MULTIPLE_CLUSTERED_INDEXES.with(&[&name, &table.indexes[0].name]));
            }
            let iid = if clustered { 1 } else { table.indexes.iter().map(|i| i.id).max().unwrap_or(1).max(1) + 1 };
            place_index(
                &mut table,
                Index {
                    id: iid,
                    name: ix.name.value.clone(),
                    tree: tree_name(id, iid, version),
                    columns,
                    unique: ix.unique,
                    primary_key: false,
                    unique_constraint: false,
                    include: Vec::new(),
                    filter: None,
                    usage: Default::default(),
                },
            );
        }
        let types: Vec<_> = table.columns.iter().map(|c| c.ty).collect();
        let row_min = tessera_access::row::min_row_size_of(&types);
        if row_min > tessera_access::row::MAX_ROW_SIZE {
            return Err(msg::MIN_ROW_SIZE_TOO_LARGE.with(&[&name, &row_min]));
        }
        create_trees(ctx, &database, &table)?;
        let created = Arc::new(table.clone());
        // A new table goes with the transaction: its rollback takes the table out (and
        // then brings back one of its name that the transaction dropped). Other sessions
        // see it in the catalog, and their statements on it wait for its Sch-M lock.
        if let Err(e) = write_definition(ctx, &database, None, Some(&created)) {
            let _ = drop_trees(&database, &table);
            return Err(e);
        }
        Ok((catalog.with(Object::Table(created), version), table))
    })?;
    if temp {
        ctx.session.temp_tables.insert(ct.name.name().value.to_lowercase(), table.name.clone());
    }
    Ok(())
}

/// DROP TABLE. The table's catalog row goes in the session's transaction and its trees
/// when that commits; a rollback brings it back (`write_definition`).
pub fn drop_table(ctx: &mut ExecCtx, name: &ObjectName, if_exists: bool) -> SqlResult<()> {
    let (database, table) = match lock_for_ddl(ctx, name, "DROP TABLE") {
        Ok(t) => t,
        Err(e) if e.number == 208 || e.number == 911 => {
            if if_exists {
                return Ok(());
            }
            return Err(msg::DROP_OBJECT_NOT_FOUND
                .with(&[&"table", &(name.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join("."))])
                .with_state(5));
        }
        Err(e) => return Err(e),
    };
    if goes_with_transaction(&table.name) {
        // Nobody makes a table of this name while this drop may yet roll back.
        ctx.transaction(database.name())?.lock_schema_to_end(name_lock(&table.schema, &table.name))?;
    }
    let shared = ctx.shared;
    shared.alter_catalog(&database, |catalog, version| {
        // A referencing table this transaction dropped no longer counts.
        let referencing = catalog.referencing(table.id);
        let child = referencing.into_iter().find(|(c, _)| c.id != table.id && !ctx.dropped(database.name(), c.id));
        if let Some((child, _)) = child {
            let _ = child;
            return Err(msg::DROP_OBJECT_REFERENCED_BY_FK.with(&[&table.schema, &table.name]));
        }
        write_definition(ctx, &database, Some(&table), None)?;
        // Its triggers go with it.
        for trigger in catalog.triggers_on(table.id).cloned().collect::<Vec<_>>() {
            let trigger = tessera_semantics::catalog::Object::Module(trigger);
            ctx.redefine_in_transaction(&database, Some(trigger), None)?;
        }
        if goes_with_transaction(&table.name) {
            // Gone for this session at once (`SessionState::own_view`); for the others
            // when the transaction commits, until then waiting for its lock.
            Ok((catalog.clone(), ()))
        } else {
            Ok((catalog.without(table.id, version), ()))
        }
    })?;
    let own = name.name().value.to_lowercase();
    if own.starts_with('#') || own.starts_with('@') {
        ctx.session.temp_tables.remove(&own);
    }
    Ok(())
}

/// `DECLARE @t TABLE (…)`: a table of the session in tempdb, named by the variable.
pub fn declare_table_variable(
    ctx: &mut ExecCtx,
    name: &str,
    columns: &[ast::ColumnDef],
    constraints: &[ast::TableConstraint],
) -> SqlResult<()> {
    let hidden = format!("#{name}");
    let ct = ast::CreateTable {
        name: ObjectName(vec![Ident::new(hidden.clone())]),
        columns: columns.to_vec(),
        constraints: constraints.to_vec(),
        indexes: Vec::new(),
    };
    create_table(ctx, &ct)?;
    let real = ctx.session.temp_tables.remove(&hidden.to_lowercase()).expect("created above");
    ctx.session.temp_tables.insert(name.to_lowercase(), real);
    Ok(())
}

/// sp_tableoption 'large value types out of row': the table's definition changes (under
/// a schema-modification lock, with the session's transaction); values already stored
/// stay where they are until they are written again.
/// Needs ALTER on the table (or CONTROL, or to own it); without it the table is as good as
/// missing (15388), so nothing is revealed.
pub fn set_large_values_out_of_row(ctx: &mut ExecCtx, name: &ObjectName, on: bool) -> SqlResult<()> {
    let missing = |e: tessera_errors::SqlError| if e.number == 208 { no_user_table(name) } else { e };
    // Permission first: no lock is taken on a table the caller may not change.
    let (database, table) = super::locking::find_table(ctx, name).map_err(missing)?;
    let (security, token) = ctx.shared.access(ctx.session, database.name())?;
    let on_table = tessera_security::principals::check::On::Object { schema: &table.schema, id: table.id };
    if !token.unrestricted && !tessera_security::principals::check::allowed(&security, &token, "ALTER", on_table) {
        return Err(no_user_table(name));
    }
    let (database, table) = super::locking::lock_for_ddl(ctx, name, "sp_tableoption").map_err(missing)?;
    if table.large_values_out_of_row == on {
        return Ok(());
    }
    let mut new = (*table).clone();
    new.large_values_out_of_row = on;
    super::rebuild::save_definition(ctx, &database, &table, new)
}

/// Changes the extended properties of the table `name` (sp_addextendedproperty and its
/// kin; the caller checked what it may do): under a schema-modification lock on its
/// definition, held to the end of the session's transaction like any DDL's, which does not
/// wait for writers of its rows (the properties are not in the rows).
pub fn change_table_properties(
    ctx: &mut ExecCtx,
    name: &ObjectName,
    change: impl FnOnce(&mut Vec<tessera_semantics::catalog::Property>) -> SqlResult<()>,
) -> SqlResult<()> {
    let (database, table) = loop {
        let (database, table) = super::locking::find_table(ctx, name)?;
        ctx.transaction(database.name())?
            .lock_schema(table.id as u32, tessera_database::LockMode::SchemaModification)?;
        let (database, now) = super::locking::find_table(ctx, name)?;
        if now.id == table.id {
            break (database, now);
        }
    };
    let mut changed = (*table).clone();
    change(&mut changed.properties)?;
    super::rebuild::save_definition(ctx, &database, &table, changed)
}

fn no_user_table(name: &ObjectName) -> tessera_errors::SqlError {
    msg::NO_USER_TABLE_MATCHING.with(&[&name.name().value])
}

pub fn truncate_table(ctx: &mut ExecCtx, name: &ObjectName) -> SqlResult<()> {
    let (database, table) = lock_for_ddl(ctx, name, "TRUNCATE TABLE").map_err(|e| match e.number {
        208 | 911 => msg::TRUNCATE_TABLE_NOT_FOUND.with(&[&(name
            .0
            .iter()
            .map(|i| i.value.as_str())
            .collect::<Vec<_>>()
            .join("."))]),
        _ => e,
    })?;
    let catalog = ctx.catalog(&database)?;
    if catalog.referencing(table.id).iter().any(|(c, _)| c.id != table.id) {
        return Err(msg::TRUNCATE_REFERENCED_TABLE.with(&[&table.name]));
    }
    replace_storage(ctx, &database, &table, (*table).clone(), Vec::new())
}
