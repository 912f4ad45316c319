//! ALTER TABLE: columns and constraints added, columns dropped or altered, constraints dropped.

use crate::dml::{self, BoundTarget};
use std::sync::Arc;
use tessera_errors::msg;

use super::constraints::{apply_constraint, constraint_failed, set_default};
use super::indexes::place_index;
use super::locking::lock_for_ddl;
use super::rebuild::{in_own_transaction, rebuild, replace_storage, save_definition};
use super::tables::{column_def, resolve_column_type};
use super::{heap_index, target_for, tree_name};
use crate::runtime::ExecCtx;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::catalog::Table;
use tessera_semantics::plan::Row;
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{self, ConstraintKind, ObjectName};

/// Whether the table holds no row: its first stored row is looked for, nothing decoded.
fn is_empty(ctx: &mut ExecCtx, db: &str, table: &Table) -> SqlResult<bool> {
    let rows_tree = ctx.tree(db, &table.indexes[0].tree, table)?;
    let tx = ctx.transaction(db)?;
    let unbounded = std::ops::Bound::Unbounded;
    // The table as it is now, never a version: its rows are what the change must fit.
    let first = tx.reading_current(|tx| {
        tx.scan(rows_tree, unbounded, unbounded, tessera_database::Direction::Forward).next().transpose()
    })?;
    Ok(first.is_none())
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

/// The table an ALTER TABLE changes, locked for DDL, and what every action needs of it.
struct Altering {
    database: Arc<tessera_database::Database>,
    table: Arc<Table>,
    /// The database's name.
    db: String,
    catalog: Arc<tessera_semantics::catalog::Catalog>,
    /// Seeds the names of generated defaults (distinct per catalog version).
    salt: u64,
}

fn alter_table_inner(ctx: &mut ExecCtx, name: &ObjectName, action: &ast::AlterTableAction) -> SqlResult<()> {
    let (database, table) = lock_for_ddl(ctx, name, "ALTER TABLE")?;
    let db = database.name().to_string();
    let catalog = ctx.catalog(&database)?;
    let salt = catalog.version.wrapping_mul(31);
    let at = Altering { database, table, db, catalog, salt };
    match action {
        ast::AlterTableAction::Add { columns, constraints } => add(ctx, &at, columns, constraints),
        ast::AlterTableAction::DropColumns { names, if_exists } => drop_columns(ctx, &at, names, if_exists),
        ast::AlterTableAction::DropConstraints { names, if_exists } => drop_constraints(ctx, &at, names, if_exists),
        ast::AlterTableAction::AlterColumn { name: col_name, ty, nullable } => {
            alter_column(ctx, &at, col_name, ty, nullable)
        }
        ast::AlterTableAction::CheckConstraints { .. } => Err(msg::CHECK_NOCHECK_NOT_SUPPORTED.err()),
    }
}

/// ADD: columns (a rebuild when a non-empty table gets a NOT NULL column with a default,
/// an identity or a computed value) and constraints.
fn add(
    ctx: &mut ExecCtx,
    at: &Altering,
    columns: &[ast::ColumnDef],
    constraints: &[ast::TableConstraint],
) -> SqlResult<()> {
    let Altering { database, table, db, catalog, salt } = at;
    let mut new = (**table).clone();
    let mut rewrite = false;
    let first_new = new.columns.len();
    for (k, c) in columns.iter().enumerate() {
        if new.column(&c.name.value).is_some() {
            return Err(msg::DUPLICATE_COLUMN_NAME.with(&[&c.name.value, &table.name]));
        }
        let col = column_def(c, first_new + k + 1, ctx.session.options.ansi_null_dflt_on)?;
        if col.identity.is_some() && new.identity_column().is_some() {
            return Err(msg::MULTIPLE_IDENTITY_COLUMNS.with(&[&table.name]));
        }
        let computed = col.computed.is_some();
        let needs_value = (!col.nullable || col.identity.is_some()) && !computed;
        new.columns.push(col);
        let idx = new.columns.len() - 1;
        if computed {
            // Its type is its expression's; every row gets its value.
            super::tables::type_computed_columns(ctx, &mut new)?;
            rewrite = true;
        }
        if let Some(d) = &c.default {
            set_default(&mut new, idx, d, salt + k as u64);
        }
        if needs_value {
            if new.columns[idx].default.is_none() && new.columns[idx].identity.is_none() && !is_empty(ctx, db, table)? {
                return Err(msg::ADD_COLUMN_TO_NONEMPTY_TABLE.with(&[&c.name.value, &table.name]));
            }
            rewrite = true;
        }
        for con in &c.constraints {
            let column = Some(c.name.value.as_str());
            let mut implicit_null = vec![false; new.columns.len()];
            implicit_null[idx] = c.nullable.is_none();
            let salt = salt + 100 + k as u64;
            if let Some(ix) =
                apply_constraint(ctx, catalog, &mut new, con, column, &implicit_null, catalog.version, salt)
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
            return Err(constraint_failed(msg::TABLE_ALREADY_HAS_PRIMARY_KEY.with(&[&table.name]).with_state(0)));
        }
        let salt = salt + 200 + k as u64;
        if let Some(ix) = apply_constraint(ctx, catalog, &mut new, con, None, &[], catalog.version, salt)
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
        let target = target_for(ctx, db, Arc::new(new.clone()))?;
        let defaults = target.defaults.clone();
        let added: Vec<usize> = (first_new..new.columns.len()).collect();
        let new_table = new.clone();
        // Values for the added columns: identity, default, or NULL.
        let mut fill: Vec<Value> = Vec::new();
        for &i in &added {
            fill.push(match (&new_table.columns[i].identity, &defaults[i]) {
                (Some(_), _) => Value::Null,
                (None, Some((tessera_semantics::plan::Expr::Const(v), t))) => {
                    types::cast(v, t, &new_table.columns[i].ty, None)?
                }
                (None, Some((e, t))) => {
                    let v = crate::exec::eval(e, &[], ctx)?;
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
        // The rows with the added columns' values, computed columns last (they may read
        // the others).
        let rows = dml::table_rows(ctx, database.name(), table)?;
        let mut out = Vec::with_capacity(rows.len());
        for (_, r) in rows {
            let mut r = transform(r)?;
            dml::compute_columns(ctx, &target.as_is(), &mut r)?;
            out.push(r);
        }
        replace_storage(ctx, database, table, new, out)?;
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
            super::create_tree(ctx, database, &ix.tree)?;
        }
        let target = target_for(ctx, db, Arc::new(new.clone()))?;
        // The rows are read, and checked against new constraints, in the session's
        // transaction (its own uncommitted rows among them); the new indexes' entries are
        // written in DDL's own.
        let built = (|| {
            if validate {
                dml::validate_rows(ctx, &target.as_is())?;
            }
            let rows = if new_indexes.is_empty() { Vec::new() } else { dml::table_rows(ctx, db, &target.table)? };
            in_own_transaction(ctx, |ctx| {
                for ix in &new_indexes {
                    dml::build_index(ctx, &target.as_is(), ix, &rows)?;
                }
                Ok(())
            })
        })();
        if let Err(e) = built {
            for ix in &new_indexes {
                let _ = database.drop_table(&ix.tree);
            }
            return Err(e.with_alter_context());
        }
        save_definition(ctx, database, table, new)?;
    }
    Ok(())
}

/// DROP COLUMN: the columns go, and the table is rebuilt without them.
fn drop_columns(ctx: &mut ExecCtx, at: &Altering, names: &[ast::Ident], if_exists: &bool) -> SqlResult<()> {
    let Altering { database, table, .. } = at;
    let mut new = (**table).clone();
    let mut keep: Vec<usize> = (0..table.columns.len()).collect();
    for n in names {
        let Some(i) = table.column(&n.value) else {
            if *if_exists {
                continue;
            }
            return Err(msg::DROP_COLUMN_NOT_FOUND.with(&[&n.value, &table.name]));
        };
        let dependent = table
            .indexes
            .iter()
            .find(|ix| ix.columns.iter().any(|(c, _)| *c == i))
            .map(|ix| (ix.name.clone(), if ix.primary_key || ix.unique_constraint { "object" } else { "index" }))
            .or_else(|| table.foreign_keys.iter().find(|f| f.columns.contains(&i)).map(|f| (f.name.clone(), "object")))
            .or_else(|| table.columns[i].default.as_ref().map(|d| (d.name.clone(), "object")))
            .or_else(|| {
                table
                    .checks
                    .iter()
                    .find(|c| c.text.to_lowercase().contains(&format!("[{}]", table.columns[i].name.to_lowercase())))
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
        return Err(msg::DROP_ONLY_COLUMN.with(&[&names[0].value, &table.name]));
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
    rebuild(ctx, database, table, new, &move |r: Row| Ok(keep2.iter().map(|&i| r[i].clone()).collect()))
}

/// DROP CONSTRAINT: keys (and their indexes), checks, defaults and foreign keys.
fn drop_constraints(ctx: &mut ExecCtx, at: &Altering, names: &[ast::Ident], if_exists: &bool) -> SqlResult<()> {
    let Altering { database, table, catalog, .. } = at;
    let mut new = (**table).clone();
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
                return Err(msg::CONSTRAINT_REFERENCED_BY_FK.with(&[
                    &ix.name,
                    &child.name,
                    &(child.foreign_keys[fk].name),
                ]));
            }
            if pos == 0 {
                new.indexes[0] = heap_index(table.id, catalog.version);
                rewrite = true;
            } else {
                // Its tree goes when the change is final (`save_definition`).
                new.indexes.remove(pos);
            }
        } else if let Some(pos) = new.checks.iter().position(|c| c.name.eq_ignore_ascii_case(name)) {
            new.checks.remove(pos);
        } else if let Some(pos) = new.foreign_keys.iter().position(|f| f.name.eq_ignore_ascii_case(name)) {
            new.foreign_keys.remove(pos);
        } else if let Some(col) =
            new.columns.iter_mut().find(|c| c.default.as_ref().is_some_and(|d| d.name.eq_ignore_ascii_case(name)))
        {
            col.default = None;
        } else if !*if_exists {
            return Err(msg::DROP_CONSTRAINT_FAILED.err().with_state(0).after(msg::NOT_A_CONSTRAINT.with(&[&name])));
        }
    }
    if rewrite {
        rebuild(ctx, database, table, new, &Ok)
    } else {
        save_definition(ctx, database, table, new)
    }
}

/// ALTER COLUMN: a new type or nullability, every row converted and checked.
fn alter_column(
    ctx: &mut ExecCtx,
    at: &Altering,
    col_name: &ast::Ident,
    ty: &ast::TypeName,
    nullable: &Option<bool>,
) -> SqlResult<()> {
    let Altering { database, table, db, .. } = at;
    let i = table.column(&col_name.value).ok_or_else(|| msg::ALTER_TABLE_NOT_FOUND.with(&[&table.name]))?;
    let old_ty = table.columns[i].ty;
    let new_ty = resolve_column_type(ty, i + 1)?;
    // An index on the column stands in the way, but (as SQL Server documents) an index
    // other than a primary key on a varchar, nvarchar or varbinary column kept the same
    // type, no shorter: what an ORM's schema sync sends for an unchanged column.
    let widening = match (old_ty, new_ty) {
        (SqlType::VarChar(a), SqlType::VarChar(b))
        | (SqlType::NVarChar(a), SqlType::NVarChar(b))
        | (SqlType::VarBinary(a), SqlType::VarBinary(b)) => b >= a,
        _ => false,
    };
    let blocking = |ix: &&tessera_semantics::catalog::Index| {
        ix.columns.iter().any(|(c, _)| *c == i) && (ix.primary_key || !widening)
    };
    if let Some(ix) = table.indexes.iter().find(blocking) {
        let what = if ix.primary_key || ix.unique_constraint { "object" } else { "index" };
        return Err(column_in_use("ALTER", &col_name.value, &ix.name, what));
    }
    let mut new = (**table).clone();
    new.columns[i].ty = new_ty;
    new.columns[i].nullable = nullable.unwrap_or(true);
    let target_table = new.clone();
    let db_name = db.clone();
    rebuild(ctx, database, table, new, &move |mut r: Row| {
        r[i] = dml::assign_value(&r[i], &old_ty, &db_name, &target_table, i)?;
        Ok(r)
    })
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
    msg::ALTER_COLUMN_HAS_DEPENDENTS
        .with(&[&verb, &column])
        .with_state(9)
        .after(msg::OBJECT_DEPENDS_ON_COLUMN.with(&[&what, &dependent, &column]))
}
