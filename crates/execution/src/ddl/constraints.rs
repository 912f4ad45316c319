//! Constraints: PRIMARY KEY, UNIQUE, CHECK, DEFAULT and FOREIGN KEY definitions and their names.

use std::sync::Arc;
use tessera_errors::msg;

use super::indexes::index_columns;
use super::tree_name;
use crate::runtime::ExecCtx;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::{self, Catalog, ForeignKey, Index, NamedExpr, Table};
use tessera_semantics::types;
use tessera_syntax::ast::{self, ConstraintKind, Ident};
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
        return Err(msg::MULTIPLE_PRIMARY_KEYS.with(&[&table.name]));
    }
    if clustered && !table.indexes[0].is_heap() {
        return Err(msg::MULTIPLE_CLUSTERED_INDEXES.with(&[&table.name, &(table.indexes[0].name)]));
    }
    let columns = index_columns(table, cols, "key or index")?;
    if primary {
        // Columns whose nullability was not written become NOT NULL; a column declared
        // NULL (or already nullable in an ALTER) cannot be part of a primary key.
        for &(c, _) in &columns {
            if table.columns[c].nullable {
                if !implicit_null.get(c).copied().unwrap_or(false) {
                    return Err(msg::NULLABLE_PRIMARY_KEY_COLUMN.with(&[&table.name]));
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
        filter: None,
        usage: Default::default(),
    })
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
        catalog
            .table(&schema, &obj)
            .cloned()
            .ok_or_else(|| msg::FOREIGN_KEY_INVALID_TABLE.with(&[&fk_name, &(ref_table.name().value)]))?
    };
    let cols: Vec<usize> = columns
        .iter()
        .map(|c| {
            table
                .column(&c.value)
                .ok_or_else(|| msg::FOREIGN_KEY_BAD_REFERENCING_COLUMN.with(&[&fk_name, &c.value, &table.name]))
        })
        .collect::<SqlResult<_>>()?;
    let ref_cols: Vec<usize> = if ref_columns.is_empty() {
        parent.primary_key().map(|pk| pk.columns.iter().map(|c| c.0).collect()).unwrap_or_default()
    } else {
        ref_columns
            .iter()
            .map(|c| {
                parent
                    .column(&c.value)
                    .ok_or_else(|| msg::FOREIGN_KEY_BAD_REFERENCED_COLUMN.with(&[&fk_name, &c.value, &parent.name]))
            })
            .collect::<SqlResult<_>>()?
    };
    if cols.len() != ref_cols.len() {
        return Err(msg::FOREIGN_KEY_COLUMN_COUNT_MISMATCH.with(&[&table.name]));
    }
    let candidate = parent.indexes.iter().any(|ix| {
        ix.unique && ix.columns.len() == ref_cols.len() && ix.columns.iter().all(|(c, _)| ref_cols.contains(c))
    });
    if !candidate {
        return Err(msg::FOREIGN_KEY_NO_MATCHING_KEY.with(&[&parent.name, &fk_name]));
    }
    for (&c, &p) in cols.iter().zip(&ref_cols) {
        let (a, b) = (&table.columns[c].ty, &parent.columns[p].ty);
        if types::base_type_name(a) != types::base_type_name(b) {
            return Err(msg::FOREIGN_KEY_TYPE_MISMATCH.with(&[
                &parent.name,
                &(parent.columns[p].name),
                &table.name,
                &(table.columns[c].name),
                &fk_name,
            ]));
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

/// A constraint's name must be free among the objects and constraints of its table's
/// schema (another schema may use it, as in SQL Server): 2714 otherwise.
pub(super) fn ensure_constraint_name_free(catalog: &Catalog, table: &Table, name: &str) -> SqlResult<()> {
    let taken = catalog.constraint_exists(&table.schema, name)
        || catalog.lookup(&table.schema, name).is_some()
        || table.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(name))
        || table.checks.iter().any(|c| c.name.eq_ignore_ascii_case(name))
        || table.foreign_keys.iter().any(|f| f.name.eq_ignore_ascii_case(name));
    if taken {
        return Err(msg::OBJECT_ALREADY_EXISTS.with(&[&"an object", &name]));
    }
    Ok(())
}

/// Applies a constraint to a table definition being built or altered. Returns an index to
/// build when the constraint needs one. `implicit_null` as for [`add_key_constraint`].
#[allow(clippy::too_many_arguments)]
pub(super) fn apply_constraint(
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
            let i = table
                .column(&column.value)
                .ok_or_else(|| msg::INVALID_DEFAULT_COLUMN.with(&[&column.value, &table.name]))?;
            if table.columns[i].default.is_some() {
                return Err(msg::DEFAULT_ALREADY_BOUND.err());
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

pub(super) fn set_default(table: &mut Table, col: usize, def: &(Option<Ident>, ast::Expr), salt: u64) {
    let name = match &def.0 {
        Some(n) => n.value.clone(),
        None => auto_name("DF", &table.name, Some(&table.columns[col].name), table.id, salt),
    };
    table.columns[col].default = Some(NamedExpr { name, text: unparse::definition(&def.1), column: None });
}

/// Errors in a constraint definition are summed up by error 1750.
pub(super) fn constraint_failed(e: SqlError) -> SqlError {
    if matches!(e.number, 1505 | 1753 | 1767 | 1769 | 1776 | 1779 | 1911 | 2714 | 8111) {
        msg::CONSTRAINT_OR_INDEX_NOT_CREATED.err().with_state(0).after(e)
    } else {
        e
    }
}
