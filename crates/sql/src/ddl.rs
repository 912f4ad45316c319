//! Data definition: databases, tables, constraints and indexes.
//!
//! DDL takes effect at once and is not part of the session's transaction (a documented
//! deviation from SQL Server, where DDL can be rolled back): the catalog row and the
//! storage trees are written in their own transactions. Changes that alter the row layout
//! or the clustered key (DROP COLUMN, ALTER COLUMN, a clustered index or primary key added
//! or dropped) rebuild the table into new trees inside the session's transaction.

use std::sync::Arc;
use tessera_database::{LockMode, ReadLocks, RowLock};

use tessera_database::{DatabaseOptions, DelayedDurability, RecoveryModel};

use crate::bind::Binder;
use crate::catalog::{self, Catalog, Column, ForeignKey, Index, NamedExpr, Object, Table};
use crate::dml;
use crate::plan::Row;
use crate::runtime::{database_not_found, ExecCtx};
use crate::types::{self, SqlType, Value};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{self, ConstraintKind, Ident, ObjectName};
use tessera_syntax::unparse;

fn hex_suffix(table_id: i32, salt: u64) -> String {
    // FNV-1a over (table, salt): stable names for golden tests, unique per constraint.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in table_id.to_le_bytes().iter().chain(salt.to_le_bytes().iter()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016X}")
}

fn auto_name(prefix: &str, table: &str, column: Option<&str>, table_id: i32, salt: u64) -> String {
    let t: String = catalog::display_name(table).trim_start_matches(['#', '@']).chars().take(8).collect();
    match column {
        Some(c) => {
            format!("{prefix}__{t}__{}__{}", c.chars().take(8).collect::<String>(), &hex_suffix(table_id, salt)[..8])
        }
        None => format!("{prefix}__{t}__{}", hex_suffix(table_id, salt)),
    }
}

fn tree_name(table_id: i32, index_id: u32, version: u64) -> String {
    format!("#{table_id}.{index_id}.{version}")
}

fn resolve_column_type(t: &ast::TypeName, position: usize) -> SqlResult<SqlType> {
    types::resolve_type(t, false).map_err(|mut e| {
        if e.number == 2715 {
            e.message = e.message.replacen("#1", &format!("#{position}"), 1);
        }
        e
    })
}

/// Where a new table goes: (database, schema, name); `#temp` tables get a session-unique
/// name in tempdb.
fn placement(ctx: &mut ExecCtx, name: &ObjectName) -> SqlResult<(String, String, String)> {
    let own = &name.name().value;
    if own.starts_with('#') {
        let real = format!("{own}_{:04X}_{:08X}", ctx.session.spid, ctx.session.temp_tables.len() as u32 + 1);
        return Ok(("tempdb".to_string(), "dbo".to_string(), real));
    }
    let b = Binder::new(ctx.shared, ctx.session, &[]);
    let (db, schema, obj) = b.qualify(name)?;
    if !schema.eq_ignore_ascii_case("dbo") {
        return Err(SqlError::new(
            2760,
            format!(
                "The specified schema name \"{schema}\" either does not exist or you do not have permission to use it."
            ),
        ));
    }
    if !ctx.shared.engine.exists(&db) {
        return Err(database_not_found(&db));
    }
    Ok((db, "dbo".to_string(), obj))
}

fn column_def(c: &ast::ColumnDef, position: usize) -> SqlResult<Column> {
    let ty = resolve_column_type(&c.ty, position)?;
    if c.computed.is_some() {
        return Err(SqlError::new(40520, "Computed columns are not supported yet."));
    }
    if let Some((seed, inc)) = c.identity {
        let ok = matches!(ty, SqlType::TinyInt | SqlType::SmallInt | SqlType::Int | SqlType::BigInt)
            || matches!(ty, SqlType::Decimal { scale: 0, .. });
        if !ok || c.nullable == Some(true) {
            return Err(SqlError::new(
                2749,
                format!("Identity column '{}' must be of data type int, bigint, smallint, tinyint, or decimal or numeric with a scale of 0, and constrained to be nonnullable.", c.name.value),
            ));
        }
        if inc == 0 {
            return Err(SqlError::new(2750, "Identity increment cannot be zero."));
        }
        let _ = seed;
    }
    Ok(Column {
        name: c.name.value.clone(),
        ty,
        nullable: c.nullable.unwrap_or(c.identity.is_none()),
        identity: c.identity,
        default: None,
    })
}

/// Column positions of an index column list.
fn index_columns(table: &Table, cols: &[ast::IndexColumn], what: &str) -> SqlResult<Vec<(usize, bool)>> {
    let mut out = Vec::new();
    for c in cols {
        let i = table.column(&c.name.value).ok_or_else(|| {
            SqlError::new(1911, format!("Column name '{}' does not exist in the target table or view.", c.name.value))
        })?;
        if out.iter().any(|(x, _)| *x == i) {
            return Err(SqlError::new(
                1909,
                format!(
                    "Cannot use duplicate column names in {what}. Column name '{}' listed more than once.",
                    c.name.value
                ),
            ));
        }
        if table.columns[i].ty.is_max() {
            return Err(SqlError::new(
                1919,
                format!(
                    "Column '{}' in table '{}' is of a type that is invalid for use as a key column in an index.",
                    c.name.value, table.name
                ),
            ));
        }
        out.push((i, c.descending));
    }
    Ok(out)
}

/// Adds a PRIMARY KEY or UNIQUE constraint's index to a table definition (not yet built).
/// `implicit_null[c]`: column c is nullable only because its definition did not say.
fn add_key_constraint(
    table: &mut Table,
    name: Option<&Ident>,
    kind: &ConstraintKind,
    implicit_null: &[bool],
    version: u64,
    salt: u64,
) -> SqlResult<Index> {
    let (primary, clustered, cols) = match kind {
        ConstraintKind::PrimaryKey { clustered, columns } => {
            (true, clustered.unwrap_or(table.indexes[0].is_heap()), columns)
        }
        ConstraintKind::Unique { clustered, columns } => (false, clustered.unwrap_or(false), columns),
        _ => unreachable!("key constraints only"),
    };
    if primary && table.primary_key().is_some() {
        return Err(SqlError::new(
            8110,
            format!("Cannot add multiple PRIMARY KEY constraints to table '{}'.", table.name),
        ));
    }
    if clustered && !table.indexes[0].is_heap() {
        return Err(SqlError::new(
            1902,
            format!("Cannot create more than one clustered index on table '{}'. Drop the existing clustered index '{}' before creating another.", table.name, table.indexes[0].name),
        ));
    }
    let columns = index_columns(table, cols, "key or index")?;
    if primary {
        // Columns whose nullability was not written become NOT NULL; a column declared
        // NULL (or already nullable in an ALTER) cannot be part of a primary key.
        for &(c, _) in &columns {
            if table.columns[c].nullable {
                if !implicit_null.get(c).copied().unwrap_or(false) {
                    return Err(SqlError::new(
                        8111,
                        format!("Cannot define PRIMARY KEY constraint on nullable column in table '{}'.", table.name),
                    ));
                }
                table.columns[c].nullable = false;
            }
        }
    }
    let cname = match name {
        Some(n) => n.value.clone(),
        None => auto_name(if primary { "PK" } else { "UQ" }, &table.name, None, table.id, salt),
    };
    let id = if clustered { 1 } else { table.indexes.iter().map(|i| i.id).max().unwrap_or(1).max(1) + 1 };
    Ok(Index {
        id,
        name: cname,
        tree: tree_name(table.id, id, version),
        columns,
        unique: true,
        primary_key: primary,
        unique_constraint: !primary,
        include: Vec::new(),
    })
}

fn place_index(table: &mut Table, ix: Index) {
    if ix.is_clustered() {
        table.indexes[0] = ix;
    } else {
        table.indexes.push(ix);
    }
}

fn bind_check(ctx: &mut ExecCtx, table: &Table, e: &ast::Expr) -> SqlResult<()> {
    let session = &*ctx.session;
    let mut b = Binder::new(ctx.shared, session, &[]);
    b.with_table_scope(table, |b| b.bind_predicate(e)).map(|_| ())
}

fn foreign_key(
    ctx: &mut ExecCtx,
    catalog: &Catalog,
    table: &Table,
    name: Option<&Ident>,
    kind: &ConstraintKind,
    salt: u64,
) -> SqlResult<ForeignKey> {
    let ConstraintKind::ForeignKey { columns, ref_table, ref_columns, on_delete, on_update } = kind else {
        unreachable!("foreign keys only")
    };
    let fk_name = match name {
        Some(n) => n.value.clone(),
        None => auto_name("FK", &table.name, columns.first().map(|c| c.value.as_str()), table.id, salt),
    };
    let b = Binder::new(ctx.shared, ctx.session, &[]);
    let (_, schema, obj) = b.qualify(ref_table)?;
    let parent: Arc<Table> = if obj.eq_ignore_ascii_case(&table.name) {
        Arc::new(table.clone())
    } else {
        catalog.table(&schema, &obj).cloned().ok_or_else(|| {
            SqlError::new(
                1767,
                format!("Foreign key '{fk_name}' references invalid table '{}'.", ref_table.name().value),
            )
        })?
    };
    let cols: Vec<usize> = columns
        .iter()
        .map(|c| {
            table.column(&c.value).ok_or_else(|| {
                SqlError::new(
                    1769,
                    format!(
                        "Foreign key '{fk_name}' references invalid column '{}' in referencing table '{}'.",
                        c.value, table.name
                    ),
                )
            })
        })
        .collect::<SqlResult<_>>()?;
    let ref_cols: Vec<usize> = if ref_columns.is_empty() {
        parent.primary_key().map(|pk| pk.columns.iter().map(|c| c.0).collect()).unwrap_or_default()
    } else {
        ref_columns
            .iter()
            .map(|c| {
                parent.column(&c.value).ok_or_else(|| {
                    SqlError::new(
                        1770,
                        format!(
                            "Foreign key '{fk_name}' references invalid column '{}' in referenced table '{}'.",
                            c.value, parent.name
                        ),
                    )
                })
            })
            .collect::<SqlResult<_>>()?
    };
    if cols.len() != ref_cols.len() {
        return Err(SqlError::new(
            8139,
            format!(
                "Number of referencing columns in foreign key differs from number of referenced columns, table '{}'.",
                table.name
            ),
        ));
    }
    let candidate = parent.indexes.iter().any(|ix| {
        ix.unique && ix.columns.len() == ref_cols.len() && ix.columns.iter().all(|(c, _)| ref_cols.contains(c))
    });
    if !candidate {
        return Err(SqlError::new(
            1776,
            format!("There are no primary or candidate keys in the referenced table '{}' that match the referencing column list in the foreign key '{fk_name}'.", parent.name),
        ));
    }
    for (&c, &p) in cols.iter().zip(&ref_cols) {
        let (a, b) = (&table.columns[c].ty, &parent.columns[p].ty);
        if types::base_type_name(a) != types::base_type_name(b) {
            return Err(SqlError::new(
                1778,
                format!("Column '{}.{}' is not the same data type as referencing column '{}.{}' in foreign key '{fk_name}'.", parent.name, parent.columns[p].name, table.name, table.columns[c].name),
            ));
        }
    }
    Ok(ForeignKey {
        name: fk_name,
        columns: cols,
        ref_table: parent.id,
        ref_columns: ref_cols,
        on_delete: (*on_delete).into(),
        on_update: (*on_update).into(),
    })
}

fn ensure_constraint_name_free(catalog: &Catalog, table: &Table, name: &str) -> SqlResult<()> {
    let taken = catalog.constraint_exists(name)
        || catalog.lookup("dbo", name).is_some()
        || table.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(name))
        || table.checks.iter().any(|c| c.name.eq_ignore_ascii_case(name))
        || table.foreign_keys.iter().any(|f| f.name.eq_ignore_ascii_case(name));
    if taken {
        return Err(SqlError::new(2714, format!("There is already an object named '{name}' in the database.")));
    }
    Ok(())
}

/// Creates a table's storage trees.
fn create_trees(db: &tessera_database::Database, table: &Table) -> SqlResult<()> {
    for ix in &table.indexes {
        db.create_table(&ix.tree)?;
    }
    Ok(())
}

fn drop_trees(db: &tessera_database::Database, table: &Table) -> SqlResult<()> {
    for ix in &table.indexes {
        if db.table(&ix.tree).is_some() {
            db.drop_table(&ix.tree)?;
        }
    }
    Ok(())
}

/// Applies a constraint to a table definition being built or altered. Returns an index to
/// build when the constraint needs one. `implicit_null` as for [`add_key_constraint`].
#[allow(clippy::too_many_arguments)]
fn apply_constraint(
    ctx: &mut ExecCtx,
    catalog: &Catalog,
    table: &mut Table,
    c: &ast::TableConstraint,
    column: Option<&str>,
    implicit_null: &[bool],
    version: u64,
    salt: u64,
) -> SqlResult<Option<Index>> {
    if let Some(n) = &c.name {
        ensure_constraint_name_free(catalog, table, &n.value)?;
    }
    match &c.kind {
        ConstraintKind::PrimaryKey { .. } | ConstraintKind::Unique { .. } => {
            let ix = add_key_constraint(table, c.name.as_ref(), &c.kind, implicit_null, version, salt)?;
            Ok(Some(ix))
        }
        ConstraintKind::Check(e) => {
            bind_check(ctx, table, e)?;
            let name = match &c.name {
                Some(n) => n.value.clone(),
                None => auto_name("CK", &table.name, column, table.id, salt),
            };
            table.checks.push(NamedExpr { name, text: unparse::definition(e), column: column.map(str::to_string) });
            Ok(None)
        }
        ConstraintKind::ForeignKey { .. } => {
            let fk = foreign_key(ctx, catalog, table, c.name.as_ref(), &c.kind, salt)?;
            table.foreign_keys.push(fk);
            Ok(None)
        }
        ConstraintKind::Default { expr, column } => {
            let i = table.column(&column.value).ok_or_else(|| {
                SqlError::new(
                    1752,
                    format!(
                        "Column '{}' in table '{}' is invalid for creating a default constraint.",
                        column.value, table.name
                    ),
                )
            })?;
            if table.columns[i].default.is_some() {
                return Err(SqlError::new(1781, "Column already has a DEFAULT bound to it."));
            }
            let name = match &c.name {
                Some(n) => n.value.clone(),
                None => auto_name("DF", &table.name, Some(&column.value), table.id, salt),
            };
            table.columns[i].default = Some(NamedExpr { name, text: unparse::definition(expr), column: None });
            Ok(None)
        }
    }
}

fn set_default(table: &mut Table, col: usize, def: &(Option<Ident>, ast::Expr), salt: u64) {
    let name = match &def.0 {
        Some(n) => n.value.clone(),
        None => auto_name("DF", &table.name, Some(&table.columns[col].name), table.id, salt),
    };
    table.columns[col].default = Some(NamedExpr { name, text: unparse::definition(&def.1), column: None });
}

fn heap_index(table_id: i32, version: u64) -> Index {
    Index {
        id: 0,
        name: String::new(),
        tree: tree_name(table_id, 0, version),
        columns: Vec::new(),
        unique: false,
        primary_key: false,
        unique_constraint: false,
        include: Vec::new(),
    }
}

pub fn create_table(ctx: &mut ExecCtx, ct: &ast::CreateTable) -> SqlResult<()> {
    let (db_name, schema, name) = placement(ctx, &ct.name)?;
    if name.chars().count() > 128 {
        return Err(SqlError::new(
            103,
            format!(
                "The identifier that starts with '{}' is too long. Maximum length is 128.",
                &name[..30.min(name.len())]
            ),
        )
        .with_severity(15));
    }
    let database = ctx.shared.database(&db_name)?;
    let temp = ct.name.name().value.starts_with('#');
    if temp && ctx.session.temp_tables.contains_key(&ct.name.name().value.to_lowercase()) {
        return Err(SqlError::new(
            2714,
            format!("There is already an object named '{}' in the database.", ct.name.name().value),
        ));
    }
    let shared = ctx.shared;
    let table = shared.alter_catalog(&database, |catalog, version| -> SqlResult<(Catalog, Table)> {
        if catalog.lookup(&schema, &name).is_some() {
            return Err(SqlError::new(2714, format!("There is already an object named '{name}' in the database.")));
        }
        if ct.columns.is_empty() {
            return Err(SqlError::new(102, "Incorrect syntax near ')'.").with_severity(15));
        }
        if ct.columns.len() > tessera_access::row::MAX_COLUMNS {
            return Err(SqlError::new(1702, format!("CREATE TABLE failed because column '{}' in table '{name}' exceeds the maximum of 1024 columns.", ct.columns[1024].name.value)));
        }
        let mut catalog = catalog.clone();
        let id = catalog.allocate_id();
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
            counters: Arc::default(),
        };
        for (i, c) in ct.columns.iter().enumerate() {
            if table.column(&c.name.value).is_some() {
                return Err(SqlError::new(
                    2705,
                    format!("Column names in each table must be unique. Column name '{}' in table '{name}' is specified more than once.", c.name.value),
                ));
            }
            table.columns.push(column_def(c, i + 1)?);
        }
        if table.columns.iter().filter(|c| c.identity.is_some()).count() > 1 {
            return Err(SqlError::new(2744, format!("Multiple identity columns specified for table '{name}'. Only one identity column per table is allowed.")));
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
        let clustered_unique = all
            .iter()
            .any(|(_, c)| matches!(c.kind, ConstraintKind::Unique { clustered: Some(true), .. }))
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
                return Err(SqlError::new(1902, format!("Cannot create more than one clustered index on table '{name}'. Drop the existing clustered index '{}' before creating another.", table.indexes[0].name)));
            }
            let iid = if clustered { 1 } else { table.indexes.iter().map(|i| i.id).max().unwrap_or(1).max(1) + 1 };
            place_index(&mut table, Index { id: iid, name: ix.name.value.clone(), tree: tree_name(id, iid, version), columns, unique: ix.unique, primary_key: false, unique_constraint: false, include: Vec::new() });
        }
        let row_min = tessera_access::row::RowSchema::new(table.columns.iter().map(|c| c.ty).collect())?.min_row_size();
        if row_min > tessera_access::row::MAX_ROW_SIZE {
            return Err(SqlError::new(
                1701,
                format!("Creating or altering table '{name}' failed because the minimum row size would be {row_min}, including 7 bytes of internal overhead. This exceeds the maximum allowable table row size of 8060 bytes."),
            ));
        }
        create_trees(&database, &table)?;
        let obj = Object::Table(Arc::new(table.clone()));
        if let Err(e) = catalog::store::save(&database, &obj) {
            let _ = drop_trees(&database, &table);
            return Err(e);
        }
        Ok((catalog.with(obj, version), table))
    })?;
    if temp {
        ctx.session.temp_tables.insert(ct.name.name().value.to_lowercase(), table.name.clone());
    }
    Ok(())
}

/// Finds a table for DDL: (database, table).
fn find_table(ctx: &mut ExecCtx, name: &ObjectName) -> SqlResult<(Arc<tessera_database::Database>, Arc<Table>)> {
    let session = &*ctx.session;
    let mut b = Binder::new(ctx.shared, session, &[]);
    let rt = b.resolve_table(name)?;
    let database = ctx.shared.database(&rt.db)?;
    Ok((database, rt.table))
}

/// Resolves a table for DDL and locks it: a schema-modification lock on its definition
/// (waiting for every statement using it, and keeping new ones out until this statement
/// ends), then a shared table lock on each of its trees, which waits for every
/// transaction with uncommitted changes in them (they hold IX to their end) and keeps new
/// writers out. Nobody else can then read or change the trees, so DDL may copy, replace
/// or drop them; the shared lock (not X) lets DDL's own transaction (`in_own_transaction`)
/// read them. Returns the definition as it is once locked.
fn lock_for_ddl(ctx: &mut ExecCtx, name: &ObjectName) -> SqlResult<(Arc<tessera_database::Database>, Arc<Table>)> {
    loop {
        let (database, table) = find_table(ctx, name)?;
        ctx.transaction(database.name())?.lock_schema(table.id as u32, LockMode::SchemaModification)?;
        let (database, now) = find_table(ctx, name)?;
        if now.id != table.id {
            // Dropped and created again while this statement waited.
            continue;
        }
        lock_trees(ctx, &database, &now)?;
        return Ok((database, now));
    }
}

/// The shared table locks `lock_for_ddl` takes on each tree of a table.
fn lock_trees(ctx: &mut ExecCtx, database: &tessera_database::Database, table: &Table) -> SqlResult<()> {
    let shared = ReadLocks { row: RowLock::Committed, table: Some(LockMode::Shared), skip_locked: false };
    for ix in &table.indexes {
        if let Some(tree) = database.table(&ix.tree) {
            ctx.transaction(database.name())?.lock_table_for_read(tree, shared)?;
        }
    }
    Ok(())
}

/// Rebuilds the nonclustered index `ix` of `table` from the table's rows into a new tree
/// (DBCC CHECKDB … REPAIR_REBUILD): the table is locked as for DDL, the new tree built in
/// a transaction of its own, the definition pointed at it, the old tree dropped.
pub fn rebuild_index(ctx: &mut ExecCtx, db: &str, table: &Table, ix: usize) -> SqlResult<()> {
    let database = ctx.shared.database(db)?;
    ctx.transaction(db)?.lock_schema(table.id as u32, LockMode::SchemaModification)?;
    let Some(now) = ctx.shared.catalog(&database)?.table(&table.schema, &table.name).cloned() else {
        return Ok(());
    };
    if now.id != table.id || ix >= now.indexes.len() || now.indexes[ix].name != table.indexes[ix].name {
        // Changed by DDL since it was checked: nothing to repair here.
        return Ok(());
    }
    lock_trees(ctx, &database, &now)?;
    let version = ctx.shared.catalog(&database)?.version;
    let mut new = (*now).clone();
    let old_tree = new.indexes[ix].tree.clone();
    new.indexes[ix].tree = tree_name(now.id, now.indexes[ix].id, version.wrapping_add(2_000_000));
    database.create_table(&new.indexes[ix].tree)?;
    let target = target_for(ctx, db, Arc::new(new.clone()))?;
    let index = new.indexes[ix].clone();
    if let Err(e) = in_own_transaction(ctx, |ctx| dml::build_index(ctx, &target, &index)) {
        let _ = database.drop_table(&index.tree);
        return Err(e);
    }
    save_definition(ctx, &database, new)?;
    database.drop_table(&old_tree)?;
    Ok(())
}

pub fn drop_table(ctx: &mut ExecCtx, name: &ObjectName, if_exists: bool) -> SqlResult<()> {
    let (database, table) = match lock_for_ddl(ctx, name) {
        Ok(t) => t,
        Err(e) if e.number == 208 || e.number == 911 => {
            if if_exists {
                return Ok(());
            }
            return Err(SqlError::new(
                3701,
                format!(
                    "Cannot drop the table '{}', because it does not exist or you do not have permission.",
                    name.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".")
                ),
            )
            .with_severity(11)
            .with_state(5));
        }
        Err(e) => return Err(e),
    };
    ctx.shared.alter_catalog(&database, |catalog, version| {
        if let Some((child, _)) = catalog.referencing(table.id).into_iter().find(|(c, _)| c.id != table.id) {
            let _ = child;
            return Err(SqlError::new(
                3726,
                format!(
                    "Could not drop object '{}.{}' because it is referenced by a FOREIGN KEY constraint.",
                    table.schema, table.name
                ),
            ));
        }
        catalog::store::delete(&database, table.id)?;
        drop_trees(&database, &table)?;
        Ok((catalog.without(table.id, version), ()))
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

/// Runs `f` in a storage transaction of its own, committed when `f` succeeds: what DDL
/// writes into new trees must not depend on the session's transaction, since the catalog
/// change it goes with is not transactional.
fn in_own_transaction<T>(ctx: &mut ExecCtx, f: impl FnOnce(&mut ExecCtx) -> SqlResult<T>) -> SqlResult<T> {
    let saved = std::mem::take(&mut ctx.session.txns);
    let result = f(ctx).and_then(|v| ctx.session.txns.commit_all(false).map(|_| v));
    if result.is_err() {
        let _ = ctx.session.txns.rollback_all();
    }
    ctx.session.txns = saved;
    result
}

/// Replaces a table's definition and rebuilds its storage: every row goes through
/// `transform` into new trees; the old trees are dropped.
fn rebuild(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    old: &Arc<Table>,
    new: Table,
    transform: &dyn Fn(Row) -> SqlResult<Row>,
) -> SqlResult<()> {
    let rows = dml::table_rows(ctx, database.name(), old)?;
    let mut out = Vec::with_capacity(rows.len());
    for (_, r) in rows {
        out.push(transform(r)?);
    }
    replace_storage(ctx, database, old, new, out)
}

/// Gives a table new trees holding `rows`, then drops the old trees.
fn replace_storage(
    ctx: &mut ExecCtx,
    database: &Arc<tessera_database::Database>,
    old: &Arc<Table>,
    mut new: Table,
    rows: Vec<Row>,
) -> SqlResult<()> {
    let shared = ctx.shared;
    shared.alter_catalog(database, |catalog, version| {
        for ix in &mut new.indexes {
            ix.tree = tree_name(new.id, ix.id, version);
        }
        new.modified = catalog::now_epoch();
        new.counters = Arc::default();
        create_trees(database, &new)?;
        let table = Arc::new(new.clone());
        let loaded = in_own_transaction(ctx, |ctx| {
            let target = target_for(ctx, database.name(), table.clone())?;
            dml::load_rows(ctx, &target, rows)
        });
        if let Err(e) = loaded {
            let _ = drop_trees(database, &new);
            return Err(e);
        }
        let obj = Object::Table(table.clone());
        if let Err(e) = catalog::store::save(database, &obj) {
            let _ = drop_trees(database, &new);
            return Err(e);
        }
        drop_trees(database, old)?;
        Ok((catalog.with(obj, version), ()))
    })
}

/// Saves a changed definition whose storage layout is unchanged.
fn save_definition(ctx: &mut ExecCtx, database: &Arc<tessera_database::Database>, mut table: Table) -> SqlResult<()> {
    table.modified = catalog::now_epoch();
    ctx.shared.alter_catalog(database, |catalog, version| {
        let obj = Object::Table(Arc::new(table));
        catalog::store::save(database, &obj)?;
        Ok((catalog.with(obj, version), ()))
    })
}

fn target_for(ctx: &mut ExecCtx, db: &str, table: Arc<Table>) -> SqlResult<dml::Target> {
    let session = &*ctx.session;
    let mut b = Binder::new(ctx.shared, session, &[]);
    dml::bind_target(&mut b, db.to_string(), table)
}

fn is_empty(ctx: &mut ExecCtx, db: &str, table: &Table) -> SqlResult<bool> {
    Ok(dml::table_rows(ctx, db, table)?.is_empty())
}

pub fn alter_table(ctx: &mut ExecCtx, name: &ObjectName, action: &ast::AlterTableAction) -> SqlResult<()> {
    let adds_constraint = matches!(action, ast::AlterTableAction::Add { constraints, .. } if !constraints.is_empty());
    alter_table_inner(ctx, name, action).map_err(|e| {
        if adds_constraint && e.number == 1505 {
            constraint_failed(e)
        } else {
            e
        }
    })
}

fn alter_table_inner(ctx: &mut ExecCtx, name: &ObjectName, action: &ast::AlterTableAction) -> SqlResult<()> {
    let (database, table) = lock_for_ddl(ctx, name)?;
    let db = database.name().to_string();
    let catalog = ctx.shared.catalog(&database)?;
    let salt = catalog.version.wrapping_mul(31);
    match action {
        ast::AlterTableAction::Add { columns, constraints } => {
            let mut new = (*table).clone();
            let mut rewrite = false;
            let first_new = new.columns.len();
            for (k, c) in columns.iter().enumerate() {
                if new.column(&c.name.value).is_some() {
                    return Err(SqlError::new(
                        2705,
                        format!("Column names in each table must be unique. Column name '{}' in table '{}' is specified more than once.", c.name.value, table.name),
                    ));
                }
                let col = column_def(c, first_new + k + 1)?;
                if col.identity.is_some() && new.identity_column().is_some() {
                    return Err(SqlError::new(2744, format!("Multiple identity columns specified for table '{}'. Only one identity column per table is allowed.", table.name)));
                }
                let needs_value = !col.nullable || col.identity.is_some();
                new.columns.push(col);
                let idx = new.columns.len() - 1;
                if let Some(d) = &c.default {
                    set_default(&mut new, idx, d, salt + k as u64);
                }
                if needs_value {
                    if new.columns[idx].default.is_none()
                        && new.columns[idx].identity.is_none()
                        && !is_empty(ctx, &db, &table)?
                    {
                        return Err(SqlError::new(
                            4901,
                            format!("ALTER TABLE only allows columns to be added that can contain nulls, or have a DEFAULT definition specified, or the column being added is an identity or timestamp column, or alternatively if none of the previous conditions are satisfied the table must be empty to allow addition of this column. Column '{}' cannot be added to non-empty table '{}' because it does not satisfy these conditions.", c.name.value, table.name),
                        ));
                    }
                    rewrite = true;
                }
                for con in &c.constraints {
                    let column = Some(c.name.value.as_str());
                    let mut implicit_null = vec![false; new.columns.len()];
                    implicit_null[idx] = c.nullable.is_none();
                    let salt = salt + 100 + k as u64;
                    if let Some(ix) =
                        apply_constraint(ctx, &catalog, &mut new, con, column, &implicit_null, catalog.version, salt)
                            .map_err(constraint_failed)?
                    {
                        place_index(&mut new, ix);
                        rewrite = true;
                    }
                }
            }
            let mut new_indexes = Vec::new();
            let mut validate = false;
            for (k, con) in constraints.iter().enumerate() {
                if matches!(con.kind, ConstraintKind::PrimaryKey { .. }) && new.primary_key().is_some() {
                    return Err(constraint_failed(
                        SqlError::new(1779, format!("Table '{}' already has a primary key defined on it.", table.name))
                            .with_state(0),
                    ));
                }
                let salt = salt + 200 + k as u64;
                if let Some(ix) = apply_constraint(ctx, &catalog, &mut new, con, None, &[], catalog.version, salt)
                    .map_err(constraint_failed)?
                {
                    if ix.is_clustered() {
                        rewrite = true;
                    } else {
                        new_indexes.push(ix.clone());
                    }
                    place_index(&mut new, ix);
                }
                validate |= matches!(con.kind, ConstraintKind::Check(_) | ConstraintKind::ForeignKey { .. });
            }
            if rewrite {
                let defaults = target_for(ctx, &db, Arc::new(new.clone()))?.defaults;
                let added: Vec<usize> = (first_new..new.columns.len()).collect();
                let new_table = new.clone();
                // Values for the added columns: identity, default, or NULL.
                let mut fill: Vec<Value> = Vec::new();
                for &i in &added {
                    fill.push(match (&new_table.columns[i].identity, &defaults[i]) {
                        (Some(_), _) => Value::Null,
                        (None, Some((crate::plan::Expr::Const(v), t))) => {
                            types::cast(v, t, &new_table.columns[i].ty, None)?
                        }
                        (None, Some((e, t))) => {
                            let v = crate::plan::eval(e, &[], ctx)?;
                            types::cast(&v, t, &new_table.columns[i].ty, None)?
                        }
                        (None, None) => Value::Null,
                    });
                }
                let identity = new_table.identity_column().filter(|i| added.contains(i));
                let counter = std::cell::Cell::new(0i64);
                let ident = new_table.identity_column().and_then(|i| new_table.columns[i].identity);
                let transform = move |mut r: Row| -> SqlResult<Row> {
                    for v in &fill {
                        r.push(v.clone());
                    }
                    if let (Some(i), Some((seed, inc))) = (identity, ident) {
                        let n = seed + counter.get() * inc;
                        counter.set(counter.get() + 1);
                        r[i] = types::cast(&Value::Int(n), &SqlType::BigInt, &new_table.columns[i].ty, None)?;
                    }
                    Ok(r)
                };
                rebuild(ctx, &database, &table, new, &transform)?;
            } else {
                for ix in &mut new_indexes {
                    ix.tree = tree_name(new.id, ix.id, catalog.version.wrapping_add(ix.id as u64));
                }
                for ix in &new_indexes {
                    if let Some(slot) = new.indexes.iter_mut().find(|i| i.id == ix.id) {
                        slot.tree = ix.tree.clone();
                    }
                }
                for ix in &new_indexes {
                    database.create_table(&ix.tree)?;
                }
                let target = target_for(ctx, &db, Arc::new(new.clone()))?;
                let built = in_own_transaction(ctx, |ctx| {
                    for ix in &new_indexes {
                        dml::build_index(ctx, &target, ix)?;
                    }
                    if validate {
                        dml::validate_rows(ctx, &target)?;
                    }
                    Ok(())
                });
                if let Err(e) = built {
                    for ix in &new_indexes {
                        let _ = database.drop_table(&ix.tree);
                    }
                    return Err(e.with_alter_context());
                }
                save_definition(ctx, &database, new)?;
            }
            Ok(())
        }
        ast::AlterTableAction::DropColumns { names, if_exists } => {
            let mut new = (*table).clone();
            let mut keep: Vec<usize> = (0..table.columns.len()).collect();
            for n in names {
                let Some(i) = table.column(&n.value) else {
                    if *if_exists {
                        continue;
                    }
                    return Err(SqlError::new(
                        4924,
                        format!(
                            "ALTER TABLE DROP COLUMN failed because column '{}' does not exist in table '{}'.",
                            n.value, table.name
                        ),
                    ));
                };
                let dependent = table
                    .indexes
                    .iter()
                    .find(|ix| ix.columns.iter().any(|(c, _)| *c == i))
                    .map(|ix| {
                        (ix.name.clone(), if ix.primary_key || ix.unique_constraint { "object" } else { "index" })
                    })
                    .or_else(|| {
                        table.foreign_keys.iter().find(|f| f.columns.contains(&i)).map(|f| (f.name.clone(), "object"))
                    })
                    .or_else(|| table.columns[i].default.as_ref().map(|d| (d.name.clone(), "object")))
                    .or_else(|| {
                        table
                            .checks
                            .iter()
                            .find(|c| {
                                c.text.to_lowercase().contains(&format!("[{}]", table.columns[i].name.to_lowercase()))
                            })
                            .map(|c| (c.name.clone(), "object"))
                    });
                if let Some((dep, what)) = dependent {
                    return Err(column_in_use("DROP", &table.columns[i].name, &dep, what));
                }
                keep.retain(|&k| k != i);
            }
            if keep.len() == table.columns.len() {
                return Ok(());
            }
            if keep.is_empty() {
                return Err(SqlError::new(4923, format!("ALTER TABLE DROP COLUMN failed because '{}' is the only data column in table '{}'. A table must have at least one data column.", names[0].value, table.name)));
            }
            let remap = |c: usize| keep.iter().position(|&k| k == c).expect("kept column");
            new.columns = keep.iter().map(|&i| table.columns[i].clone()).collect();
            for ix in &mut new.indexes {
                for c in &mut ix.columns {
                    c.0 = remap(c.0);
                }
                ix.include = ix.include.iter().filter(|c| keep.contains(c)).map(|&c| remap(c)).collect();
            }
            for fk in &mut new.foreign_keys {
                fk.columns = fk.columns.iter().map(|&c| remap(c)).collect();
            }
            let keep2 = keep.clone();
            rebuild(ctx, &database, &table, new, &move |r: Row| Ok(keep2.iter().map(|&i| r[i].clone()).collect()))
        }
        ast::AlterTableAction::DropConstraints { names, if_exists } => {
            let mut new = (*table).clone();
            let mut rewrite = false;
            for n in names {
                let name = &n.value;
                if let Some(pos) = new
                    .indexes
                    .iter()
                    .position(|ix| (ix.primary_key || ix.unique_constraint) && ix.name.eq_ignore_ascii_case(name))
                {
                    let ix = new.indexes[pos].clone();
                    if let Some((child, fk)) = catalog.referencing(table.id).into_iter().find(|(c, k)| {
                        let fk = &c.foreign_keys[*k];
                        fk.ref_columns.len() == ix.columns.len()
                            && fk.ref_columns.iter().all(|rc| ix.columns.iter().any(|(c, _)| c == rc))
                    }) {
                        return Err(SqlError::new(
                            3725,
                            format!(
                                "The constraint '{}' is being referenced by table '{}', foreign key constraint '{}'.",
                                ix.name, child.name, child.foreign_keys[fk].name
                            ),
                        ));
                    }
                    if pos == 0 {
                        new.indexes[0] = heap_index(table.id, catalog.version);
                        rewrite = true;
                    } else {
                        new.indexes.remove(pos);
                        database.drop_table(&ix.tree)?;
                    }
                } else if let Some(pos) = new.checks.iter().position(|c| c.name.eq_ignore_ascii_case(name)) {
                    new.checks.remove(pos);
                } else if let Some(pos) = new.foreign_keys.iter().position(|f| f.name.eq_ignore_ascii_case(name)) {
                    new.foreign_keys.remove(pos);
                } else if let Some(col) = new
                    .columns
                    .iter_mut()
                    .find(|c| c.default.as_ref().is_some_and(|d| d.name.eq_ignore_ascii_case(name)))
                {
                    col.default = None;
                } else if !*if_exists {
                    return Err(SqlError::new(3727, "Could not drop constraint. See previous errors.")
                        .with_state(0)
                        .after(SqlError::new(3728, format!("'{name}' is not a constraint."))));
                }
            }
            if rewrite {
                rebuild(ctx, &database, &table, new, &Ok)
            } else {
                save_definition(ctx, &database, new)
            }
        }
        ast::AlterTableAction::AlterColumn { name: col_name, ty, nullable } => {
            let i = table.column(&col_name.value).ok_or_else(|| {
                SqlError::new(
                    4902,
                    format!(
                        "Cannot find the object \"{}\" because it does not exist or you do not have permissions.",
                        table.name
                    ),
                )
            })?;
            if let Some(ix) = table.indexes.iter().find(|ix| ix.columns.iter().any(|(c, _)| *c == i)) {
                let what = if ix.primary_key || ix.unique_constraint { "object" } else { "index" };
                return Err(column_in_use("ALTER", &col_name.value, &ix.name, what));
            }
            let mut new = (*table).clone();
            let old_ty = table.columns[i].ty;
            let new_ty = resolve_column_type(ty, i + 1)?;
            new.columns[i].ty = new_ty;
            new.columns[i].nullable = nullable.unwrap_or(true);
            let target_table = new.clone();
            let db_name = db.clone();
            rebuild(ctx, &database, &table, new, &move |mut r: Row| {
                r[i] = dml::assign_value(&r[i], &old_ty, &db_name, &target_table, i)?;
                Ok(r)
            })
        }
        ast::AlterTableAction::CheckConstraints { .. } => {
            Err(SqlError::new(40521, "CHECK/NOCHECK CONSTRAINT is not supported yet: constraints are always enforced."))
        }
    }
}

trait AlterContext {
    fn with_alter_context(self) -> Self;
}

impl AlterContext for SqlError {
    /// SQL Server reports a constraint that existing rows violate with the ALTER TABLE
    /// statement's name.
    fn with_alter_context(mut self) -> SqlError {
        self.message = self.message.replace("The INSERT statement", "The ALTER TABLE statement");
        self
    }
}

/// A column that an index or constraint depends on cannot be dropped or altered.
fn column_in_use(verb: &str, column: &str, dependent: &str, what: &str) -> SqlError {
    SqlError::new(
        4922,
        format!("ALTER TABLE {verb} COLUMN {column} failed because one or more objects access this column."),
    )
    .with_state(9)
    .after(SqlError::new(5074, format!("The {what} '{dependent}' is dependent on column '{column}'.")))
}

/// Errors in a constraint definition are summed up by error 1750.
fn constraint_failed(e: SqlError) -> SqlError {
    if matches!(e.number, 1505 | 1753 | 1767 | 1769 | 1776 | 1779 | 1911 | 2714 | 8111) {
        SqlError::new(1750, "Could not create constraint or index. See previous errors.").with_state(0).after(e)
    } else {
        e
    }
}

pub fn truncate_table(ctx: &mut ExecCtx, name: &ObjectName) -> SqlResult<()> {
    let (database, table) = lock_for_ddl(ctx, name).map_err(|e| match e.number {
        208 | 911 => SqlError::new(
            4701,
            format!(
                "Cannot find the object \"{}\" because it does not exist or you do not have permissions.",
                name.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".")
            ),
        ),
        _ => e,
    })?;
    let catalog = ctx.shared.catalog(&database)?;
    if catalog.referencing(table.id).iter().any(|(c, _)| c.id != table.id) {
        return Err(SqlError::new(
            4712,
            format!(
                "Cannot truncate table '{}' because it is being referenced by a FOREIGN KEY constraint.",
                table.name
            ),
        ));
    }
    replace_storage(ctx, &database, &table, (*table).clone(), Vec::new())
}

pub fn create_index(ctx: &mut ExecCtx, ci: &ast::CreateIndex) -> SqlResult<()> {
    let (database, table) = lock_for_ddl(ctx, &ci.table)?;
    if table.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&ci.name.value)) {
        return Err(SqlError::new(
            1913,
            format!(
                "The operation failed because an index or statistics with name '{}' already exists on table '{}.{}'.",
                ci.name.value, table.schema, table.name
            ),
        ));
    }
    if ci.filter.is_some() {
        return Err(SqlError::new(40522, "Filtered indexes are not supported yet."));
    }
    let columns = index_columns(&table, &ci.columns, "key or index")?;
    let include = ci
        .include
        .iter()
        .map(|c| {
            table.column(&c.value).ok_or_else(|| {
                SqlError::new(1911, format!("Column name '{}' does not exist in the target table or view.", c.value))
            })
        })
        .collect::<SqlResult<Vec<_>>>()?;
    let mut new = (*table).clone();
    let version = ctx.shared.catalog(&database)?.version;
    if ci.clustered == Some(true) {
        if !table.indexes[0].is_heap() {
            return Err(SqlError::new(
                1902,
                format!("Cannot create more than one clustered index on table '{}'. Drop the existing clustered index '{}' before creating another.", table.name, table.indexes[0].name),
            ));
        }
        new.indexes[0] = Index {
            id: 1,
            name: ci.name.value.clone(),
            tree: String::new(),
            columns,
            unique: ci.unique,
            primary_key: false,
            unique_constraint: false,
            include,
        };
        return rebuild(ctx, &database, &table, new, &Ok).map_err(|e| {
            if e.number == 2601 || e.number == 2627 {
                SqlError::new(1505, format!("The CREATE UNIQUE INDEX statement terminated because a duplicate key was found for the object name '{}.{}' and the index name '{}'.", table.schema, table.name, ci.name.value))
            } else {
                e
            }
        });
    }
    let id = table.indexes.iter().map(|i| i.id).max().unwrap_or(1).max(1) + 1;
    let ix = Index {
        id,
        name: ci.name.value.clone(),
        tree: tree_name(table.id, id, version.wrapping_add(1_000_000)),
        columns,
        unique: ci.unique,
        primary_key: false,
        unique_constraint: false,
        include,
    };
    database.create_table(&ix.tree)?;
    new.indexes.push(ix.clone());
    let target = target_for(ctx, database.name(), Arc::new(new.clone()))?;
    if let Err(e) = in_own_transaction(ctx, |ctx| dml::build_index(ctx, &target, &ix)) {
        let _ = database.drop_table(&ix.tree);
        return Err(e);
    }
    save_definition(ctx, &database, new)
}

pub fn drop_index(ctx: &mut ExecCtx, index: &Ident, table_name: &ObjectName, if_exists: bool) -> SqlResult<()> {
    let (database, table) = lock_for_ddl(ctx, table_name)?;
    let Some(pos) = table.indexes.iter().position(|i| !i.is_heap() && i.name.eq_ignore_ascii_case(&index.value)) else {
        if if_exists {
            return Ok(());
        }
        return Err(SqlError::new(
            3701,
            format!(
                "Cannot drop the index '{}.{}', because it does not exist or you do not have permission.",
                table.name, index.value
            ),
        )
        .with_severity(11)
        .with_state(7));
    };
    let ix = &table.indexes[pos];
    if ix.primary_key || ix.unique_constraint {
        return Err(SqlError::new(
            3723,
            format!("An explicit DROP INDEX is not allowed on index '{}.{}'. It is being used for {} constraint enforcement.", table.name, ix.name, if ix.primary_key { "PRIMARY KEY" } else { "UNIQUE KEY" }),
        ));
    }
    let mut new = (*table).clone();
    if pos == 0 {
        let version = ctx.shared.catalog(&database)?.version;
        new.indexes[0] = heap_index(table.id, version);
        return rebuild(ctx, &database, &table, new, &Ok);
    }
    let removed = new.indexes.remove(pos);
    save_definition(ctx, &database, new)?;
    database.drop_table(&removed.tree)?;
    Ok(())
}

// ---- databases -----------------------------------------------------------------------------

fn file_path(spec: &ast::FileSpec) -> Option<std::path::PathBuf> {
    spec.options.iter().find(|(k, _)| k == "FILENAME").map(|(_, v)| std::path::PathBuf::from(v))
}

pub fn create_database(ctx: &mut ExecCtx, cd: &ast::CreateDatabase) -> SqlResult<()> {
    let name = &cd.name.value;
    if ctx.shared.engine.exists(name) {
        return Err(SqlError::new(
            1801,
            format!("Database '{name}' already exists. Choose a different database name."),
        )
        .with_state(3));
    }
    let data_path = cd.files.first().and_then(file_path);
    let log_path = cd.log_files.first().and_then(file_path);
    for p in data_path.iter().chain(log_path.iter()) {
        if let Some(dir) = p.parent() {
            if !dir.as_os_str().is_empty() && !dir.is_dir() {
                return Err(SqlError::new(
                    5133,
                    format!("Directory lookup for the file \"{}\" failed with the operating system error 2(The system cannot find the file specified.).", p.display()),
                ));
            }
        }
    }
    let options = DatabaseOptions { data_path, log_path, ..DatabaseOptions::default() };
    ctx.shared.engine.create_database(name, options).map_err(|e| match e {
        tessera_database::Error::Invalid(m) => SqlError::new(1038, m),
        e => e.into(),
    })
}

pub fn drop_database(ctx: &mut ExecCtx, name: &Ident, if_exists: bool) -> SqlResult<()> {
    let n = &name.value;
    if !ctx.shared.engine.exists(n) {
        if if_exists {
            return Ok(());
        }
        return Err(SqlError::new(
            3701,
            format!("Cannot drop the database '{n}', because it does not exist or you do not have permission."),
        )
        .with_severity(11));
    }
    if ["master", "tempdb", "model", "msdb"].iter().any(|s| s.eq_ignore_ascii_case(n)) {
        return Err(SqlError::new(3708, format!("Cannot drop the database '{n}' because it is a system database.")));
    }
    if ctx.session.database.eq_ignore_ascii_case(n)
        || ctx.session.txns.open.iter().any(|t| t.database().name().eq_ignore_ascii_case(n))
    {
        return Err(
            SqlError::new(3702, format!("Cannot drop database \"{n}\" because it is currently in use.")).with_state(4)
        );
    }
    ctx.shared.forget(n);
    ctx.shared.engine.drop_database(n).map_err(|e| match e.number() {
        3702 => {
            SqlError::new(3702, format!("Cannot drop database \"{n}\" because it is currently in use.")).with_state(4)
        }
        _ => e.into(),
    })?;
    ctx.shared.plans.forget_database(n);
    Ok(())
}

pub fn alter_database(ctx: &mut ExecCtx, name: &Ident, action: &ast::AlterDatabaseAction) -> SqlResult<()> {
    let n = if name.value.eq_ignore_ascii_case("current") { ctx.session.database.clone() } else { name.value.clone() };
    let database = ctx.shared.database(&n).map_err(|e| match e.number {
        911 => SqlError::new(5069, "ALTER DATABASE statement failed.").after(
            SqlError::new(
                5011,
                format!("User does not have permission to alter database '{n}', the database does not exist, or the database is not in a state that allows access checks."),
            )
            .with_severity(14)
            .with_state(5),
        ),
        _ => e,
    })?;
    let mut options = database.options();
    match action {
        ast::AlterDatabaseAction::Set(settings) => {
            for (opt, value) in settings {
                match opt.as_str() {
                    "RECOVERY" => {
                        options.recovery_model = RecoveryModel::parse(value).ok_or_else(|| {
                            SqlError::new(102, format!("Incorrect syntax near '{value}'.")).with_severity(15)
                        })?;
                    }
                    "DELAYED_DURABILITY" => {
                        options.delayed_durability = DelayedDurability::parse(value).ok_or_else(|| {
                            SqlError::new(102, format!("Incorrect syntax near '{value}'.")).with_severity(15)
                        })?;
                    }
                    _ => {
                        return Err(SqlError::new(5058, format!("Option '{opt}' cannot be set in database '{n}'.")));
                    }
                }
            }
            ctx.shared.engine.alter_database(&n, options)?;
            Ok(())
        }
        ast::AlterDatabaseAction::Rename(_) | ast::AlterDatabaseAction::Collate(_) => {
            Err(SqlError::new(5058, format!("This ALTER DATABASE option is not supported for database '{n}'.")))
        }
    }
}
