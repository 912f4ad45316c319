//! Indexes and constraints: sys.indexes, sys.index_columns, sys.key_constraints,
//! sys.foreign_keys, sys.foreign_key_columns, sys.check_constraints and
//! sys.default_constraints; and the constraints as objects of their own (sys.objects
//! lists them).

use super::{bit, catalog, col, int, s, Rows, ViewDef, NVARCHAR_MAX, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_semantics::catalog::{Action, Object, Table};
use tessera_semantics::types::{SqlType::*, Value};

pub(super) static INDEXES: ViewDef<19> = ViewDef {
    schema: "sys",
    name: "indexes",
    columns: [
        col("object_id", Int, false),
        col("name", SYSNAME, true),
        col("index_id", Int, false),
        col("type", TinyInt, false),
        col("type_desc", NVarChar(60), true),
        col("is_unique", Bit, true),
        col("data_space_id", Int, true),
        col("ignore_dup_key", Bit, true),
        col("is_primary_key", Bit, true),
        col("is_unique_constraint", Bit, true),
        col("fill_factor", TinyInt, false),
        col("is_padded", Bit, true),
        col("is_disabled", Bit, true),
        col("is_hypothetical", Bit, true),
        col("allow_row_locks", Bit, true),
        col("allow_page_locks", Bit, true),
        col("has_filter", Bit, true),
        col("filter_definition", NVARCHAR_MAX, true),
        col("auto_created", Bit, true),
    ],
    rows: indexes,
};

/// Every index of every table: the heap or clustered index (id 0 or 1), then the others,
/// with sys.indexes' columns (tessera's indexes have SQL Server's default options).
fn indexes(ctx: &ExecCtx, db: &str) -> Rows<19> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for ix in &t.indexes {
            let (kind, desc) = match ix.id {
                0 => (0, "HEAP"),
                1 => (1, "CLUSTERED"),
                _ => (2, "NONCLUSTERED"),
            };
            out.push([
                int(i64::from(t.id)),
                if ix.is_heap() { Value::Null } else { s(&ix.name) },
                int(i64::from(ix.id)),
                int(kind),
                s(desc),
                bit(ix.unique),
                // Every index on PRIMARY, none disabled or padded; the rest of its options
                // are SQL Server's defaults (row and page locks allowed).
                int(1),
                bit(false),
                bit(ix.primary_key),
                bit(ix.unique_constraint),
                int(0),
                bit(false),
                bit(false),
                bit(false),
                bit(true),
                bit(true),
                bit(ix.filter.is_some()),
                ix.filter.as_deref().map_or(Value::Null, s),
                bit(false),
            ]);
        }
    }
    Ok(out)
}

pub(super) static INDEX_COLUMNS: ViewDef<7> = ViewDef {
    schema: "sys",
    name: "index_columns",
    columns: [
        col("object_id", Int, false),
        col("index_id", Int, false),
        col("index_column_id", Int, false),
        col("column_id", Int, false),
        col("key_ordinal", TinyInt, false),
        col("is_descending_key", Bit, true),
        col("is_included_column", Bit, true),
    ],
    rows: index_columns,
};

/// The key columns of each index (not of heaps), then its included columns.
fn index_columns(ctx: &ExecCtx, db: &str) -> Rows<7> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for ix in t.indexes.iter().filter(|ix| !ix.is_heap()) {
            let mut n = 0;
            for (k, &(c, desc)) in ix.columns.iter().enumerate() {
                n += 1;
                out.push([
                    int(i64::from(t.id)),
                    int(i64::from(ix.id)),
                    int(n),
                    int(c as i64 + 1),
                    int(k as i64 + 1),
                    bit(desc),
                    bit(false),
                ]);
            }
            for &c in &ix.include {
                n += 1;
                out.push([
                    int(i64::from(t.id)),
                    int(i64::from(ix.id)),
                    int(n),
                    int(c as i64 + 1),
                    int(0),
                    bit(false),
                    bit(true),
                ]);
            }
        }
    }
    Ok(out)
}

pub(super) static KEY_CONSTRAINTS: ViewDef<6> = ViewDef {
    schema: "sys",
    name: "key_constraints",
    columns: [
        col("name", SYSNAME, false),
        col("object_id", Int, false),
        col("parent_object_id", Int, false),
        col("type", Char(2), true),
        col("type_desc", NVarChar(60), true),
        col("unique_index_id", Int, true),
    ],
    rows: key_constraints,
};

/// Primary keys and unique constraints.
fn key_constraints(ctx: &ExecCtx, db: &str) -> Rows<6> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for c in constraint_objects(t).into_iter().filter(|c| c.kind == "PK" || c.kind == "UQ") {
            out.push([
                s(&c.name),
                int(i64::from(c.id)),
                int(i64::from(t.id)),
                s(c.kind),
                s(c.kind_desc),
                c.index_id.map_or(Value::Null, |i| int(i64::from(i))),
            ]);
        }
    }
    Ok(out)
}

pub(super) static FOREIGN_KEYS: ViewDef<15> = ViewDef {
    schema: "sys",
    name: "foreign_keys",
    columns: [
        col("name", SYSNAME, false),
        col("object_id", Int, false),
        col("principal_id", Int, true),
        col("schema_id", Int, false),
        col("parent_object_id", Int, false),
        col("type", Char(2), true),
        col("type_desc", NVarChar(60), true),
        col("referenced_object_id", Int, true),
        col("is_disabled", Bit, false),
        col("is_not_for_replication", Bit, false),
        col("is_not_trusted", Bit, false),
        col("delete_referential_action", TinyInt, true),
        col("delete_referential_action_desc", NVarChar(60), true),
        col("update_referential_action", TinyInt, true),
        col("update_referential_action_desc", NVarChar(60), true),
    ],
    rows: foreign_keys,
};

fn foreign_keys(ctx: &ExecCtx, db: &str) -> Rows<15> {
    let (_, catalog) = catalog(ctx, db)?;
    let schema_id = super::schema_ids(ctx, db)?;
    // sys.foreign_keys' codes: 0 NO_ACTION, 1 CASCADE, 2 SET_NULL, 3 SET_DEFAULT.
    let action = |a: Action| match a {
        Action::NoAction => (0, "NO_ACTION"),
        Action::Cascade => (1, "CASCADE"),
        Action::SetNull => (2, "SET_NULL"),
        Action::SetDefault => (3, "SET_DEFAULT"),
    };
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for (c, fk) in constraint_objects(t).into_iter().filter(|c| c.kind == "F").zip(&t.foreign_keys) {
            let (on_delete, on_update) = (action(fk.on_delete), action(fk.on_update));
            out.push([
                s(&c.name),
                int(i64::from(c.id)),
                Value::Null,
                schema_id(&t.schema),
                int(i64::from(t.id)),
                s("F"),
                s("FOREIGN_KEY_CONSTRAINT"),
                int(i64::from(fk.ref_table)),
                bit(false),
                bit(false),
                bit(false),
                int(on_delete.0),
                s(on_delete.1),
                int(on_update.0),
                s(on_update.1),
            ]);
        }
    }
    Ok(out)
}

pub(super) static FOREIGN_KEY_COLUMNS: ViewDef<6> = ViewDef {
    schema: "sys",
    name: "foreign_key_columns",
    columns: [
        col("constraint_object_id", Int, false),
        col("constraint_column_id", Int, false),
        col("parent_object_id", Int, false),
        col("parent_column_id", Int, false),
        col("referenced_object_id", Int, false),
        col("referenced_column_id", Int, false),
    ],
    rows: foreign_key_columns,
};

fn foreign_key_columns(ctx: &ExecCtx, db: &str) -> Rows<6> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for (c, fk) in constraint_objects(t).into_iter().filter(|c| c.kind == "F").zip(&t.foreign_keys) {
            for (k, (&pc, &rc)) in fk.columns.iter().zip(&fk.ref_columns).enumerate() {
                out.push([
                    int(i64::from(c.id)),
                    int(k as i64 + 1),
                    int(i64::from(t.id)),
                    int(pc as i64 + 1),
                    int(i64::from(fk.ref_table)),
                    int(rc as i64 + 1),
                ]);
            }
        }
    }
    Ok(out)
}

pub(super) static CHECK_CONSTRAINTS: ViewDef<5> = ViewDef {
    schema: "sys",
    name: "check_constraints",
    columns: [
        col("name", SYSNAME, false),
        col("object_id", Int, false),
        col("parent_object_id", Int, false),
        col("parent_column_id", Int, false),
        col("definition", NVARCHAR_MAX, true),
    ],
    rows: |ctx, db| constraints_of_kind(ctx, db, "C"),
};

pub(super) static DEFAULT_CONSTRAINTS: ViewDef<5> = ViewDef {
    schema: "sys",
    name: "default_constraints",
    columns: [
        col("name", SYSNAME, false),
        col("object_id", Int, false),
        col("parent_object_id", Int, false),
        col("parent_column_id", Int, false),
        col("definition", NVARCHAR_MAX, true),
    ],
    rows: |ctx, db| constraints_of_kind(ctx, db, "D"),
};

/// The rows of sys.check_constraints (`C`) or sys.default_constraints (`D`).
fn constraints_of_kind(ctx: &ExecCtx, db: &str, kind: &str) -> Rows<5> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Table(t) = o else { continue };
        for c in constraint_objects(t).into_iter().filter(|c| c.kind == kind) {
            out.push([s(&c.name), int(i64::from(c.id)), int(i64::from(t.id)), int(c.column), s(&c.definition)]);
        }
    }
    Ok(out)
}

/// A constraint as an object of its own (SQL Server gives constraints object ids).
pub(crate) struct ConstraintObject {
    pub id: i32,
    pub name: String,
    /// sys.objects.type: PK, UQ, F, C, D.
    pub kind: &'static str,
    pub kind_desc: &'static str,
    pub object_desc: &'static str,
    pub index_id: Option<u32>,
    /// 1-based column for column-level constraints (defaults), else 0.
    pub column: i64,
    pub definition: String,
}

/// The constraints of a table, with ids derived from the table's (stable while the
/// table's constraints are).
pub(crate) fn constraint_objects(t: &Table) -> Vec<ConstraintObject> {
    let mut out = Vec::new();
    let mut next = 0;
    let mut id = || {
        next += 1;
        1_000_000_000 + (t.id % 10_000_000) * 100 + next
    };
    for ix in t.indexes.iter().filter(|ix| ix.primary_key || ix.unique_constraint) {
        let pk = ix.primary_key;
        out.push(ConstraintObject {
            id: id(),
            name: ix.name.clone(),
            kind: if pk { "PK" } else { "UQ" },
            kind_desc: if pk { "PRIMARY_KEY_CONSTRAINT" } else { "UNIQUE_CONSTRAINT" },
            object_desc: if pk { "PRIMARY_KEY_CONSTRAINT" } else { "UNIQUE_CONSTRAINT" },
            index_id: Some(ix.id),
            column: 0,
            definition: String::new(),
        });
    }
    for fk in &t.foreign_keys {
        out.push(ConstraintObject {
            id: id(),
            name: fk.name.clone(),
            kind: "F",
            kind_desc: "FOREIGN_KEY_CONSTRAINT",
            object_desc: "FOREIGN_KEY_CONSTRAINT",
            index_id: None,
            column: 0,
            definition: String::new(),
        });
    }
    for c in &t.checks {
        out.push(ConstraintObject {
            id: id(),
            name: c.name.clone(),
            kind: "C",
            kind_desc: "CHECK_CONSTRAINT",
            object_desc: "CHECK_CONSTRAINT",
            index_id: None,
            column: 0,
            definition: c.text.clone(),
        });
    }
    for (i, col) in t.columns.iter().enumerate() {
        if let Some(d) = &col.default {
            out.push(ConstraintObject {
                id: id(),
                name: d.name.clone(),
                kind: "D",
                kind_desc: "DEFAULT_CONSTRAINT",
                object_desc: "DEFAULT_CONSTRAINT",
                index_id: None,
                column: i as i64 + 1,
                definition: d.text.clone(),
            });
        }
    }
    out
}
