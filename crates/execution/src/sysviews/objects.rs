//! The objects of a database: sys.objects (tables, constraints, modules), sys.tables,
//! sys.views, sys.procedures, sys.sql_modules, sys.parameters, sys.schemas and
//! INFORMATION_SCHEMA.ROUTINES.

use super::indexes::constraint_objects;
use super::system_types::type_ids;
use super::{
    bit, catalog, col, concat, concat_columns, datetime, int, s, schema_ids, Rows, ViewDef, NVARCHAR_MAX, SYSNAME,
};
use crate::runtime::ExecCtx;
use tessera_semantics::catalog::{Module, ModuleKind, Object, Sequence, Table};
use tessera_semantics::plan::Col;
use tessera_semantics::types::{self, SqlType, SqlType::*, Value};

/// The columns every object view begins with (sys.views and sys.procedures have only these).
const OBJECT_HEAD: [Col; 9] = [
    col("name", SYSNAME, false),
    col("object_id", Int, false),
    col("principal_id", Int, true),
    col("schema_id", Int, false),
    col("parent_object_id", Int, false),
    col("type", Char(2), true),
    col("type_desc", NVarChar(60), true),
    col("create_date", DateTime, false),
    col("modify_date", DateTime, false),
];

/// How many columns sys.objects has.
pub(super) const OBJECT_WIDTH: usize = 12;

/// sys.objects' columns, which sys.system_objects, sys.all_objects and (with more)
/// sys.tables share.
pub(super) const OBJECT_COLUMNS: [Col; OBJECT_WIDTH] = concat_columns(
    OBJECT_HEAD,
    [col("is_ms_shipped", Bit, false), col("is_published", Bit, false), col("is_schema_published", Bit, false)],
);

/// sys.objects' last columns: whether the object came with the product (nothing tessera
/// has is published for replication).
pub(super) fn object_tail(shipped: bool) -> [Value; 3] {
    [bit(shipped), bit(false), bit(false)]
}

pub(super) static OBJECTS: ViewDef<OBJECT_WIDTH> =
    ViewDef { schema: "sys", name: "objects", columns: OBJECT_COLUMNS, rows: objects };

/// Each table followed by its constraints, and each module, in object id order.
pub(super) fn objects(ctx: &ExecCtx, db: &str) -> Rows<OBJECT_WIDTH> {
    let (_, catalog) = catalog(ctx, db)?;
    let schema_id = schema_ids(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        match o {
            Object::Table(t) => {
                out.push(table_object(t, schema_id(&t.schema)));
                for c in constraint_objects(t) {
                    let head = [
                        s(&c.name),
                        int(i64::from(c.id)),
                        Value::Null,
                        schema_id(&t.schema),
                        int(i64::from(t.id)),
                        s(&format!("{:<2}", c.kind)),
                        s(c.object_desc),
                        datetime(t.created),
                        datetime(t.modified),
                    ];
                    out.push(concat(head, object_tail(false)));
                }
            }
            Object::Module(m) => out.push(module_object(m, schema_id(&m.schema))),
            Object::Sequence(q) => out.push(sequence_object(q, schema_id(&q.schema))),
        }
    }
    Ok(out)
}

/// A module's row of sys.objects (and the first columns of sys.synonyms).
fn module_object(m: &Module, schema_id: Value) -> [Value; OBJECT_WIDTH] {
    let head = [
        s(&m.name),
        int(i64::from(m.id)),
        Value::Null,
        schema_id,
        int(i64::from(m.parent.unwrap_or(0))),
        s(&format!("{:<2}", m.kind.type_code())),
        s(m.kind.type_desc()),
        datetime(m.created),
        datetime(m.modified),
    ];
    concat(head, object_tail(false))
}

pub(super) static SYNONYMS: ViewDef<{ OBJECT_WIDTH + 1 }> = ViewDef {
    schema: "sys",
    name: "synonyms",
    columns: concat_columns(OBJECT_COLUMNS, [col("base_object_name", NVarChar(1035), true)]),
    rows: synonyms,
};

/// Each synonym with the name it stands for, each part bracketed.
fn synonyms(ctx: &ExecCtx, db: &str) -> Rows<{ OBJECT_WIDTH + 1 }> {
    let (_, catalog) = catalog(ctx, db)?;
    let schema_id = schema_ids(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Module(m) = o else { continue };
        if m.kind != ModuleKind::Synonym {
            continue;
        }
        let cached = ctx.shared.plans.get_or_parse(&m.text, tessera_syntax::parser::parse_batch)?;
        let base = match cached.batch.statements.first().map(|s| &s.kind) {
            Some(tessera_syntax::ast::StatementKind::CreateSynonym { target, .. }) => {
                let parts: Vec<String> = target.0.iter().map(|p| format!("[{}]", p.value.replace(']', "]]"))).collect();
                s(&parts.join("."))
            }
            _ => Value::Null,
        };
        out.push(concat(module_object(m, schema_id(&m.schema)), [base]));
    }
    Ok(out)
}

/// A sequence's row of sys.objects (and the first columns of sys.sequences).
fn sequence_object(q: &Sequence, schema_id: Value) -> [Value; OBJECT_WIDTH] {
    let head = [
        s(&q.name),
        int(i64::from(q.id)),
        Value::Null,
        schema_id,
        int(0),
        s("SO"),
        s("SEQUENCE_OBJECT"),
        datetime(q.created),
        datetime(q.modified),
    ];
    concat(head, object_tail(false))
}

/// A table's row of sys.objects (and the first columns of sys.tables).
fn table_object(t: &Table, schema_id: Value) -> [Value; OBJECT_WIDTH] {
    let head = [
        s(&t.name),
        int(i64::from(t.id)),
        Value::Null,
        schema_id,
        int(0),
        s("U "),
        s("USER_TABLE"),
        datetime(t.created),
        datetime(t.modified),
    ];
    concat(head, object_tail(false))
}

pub(super) static TABLES: ViewDef<{ OBJECT_WIDTH + 29 }> = ViewDef {
    schema: "sys",
    name: "tables",
    columns: concat_columns(
        OBJECT_COLUMNS,
        [
            col("lob_data_space_id", Int, false),
            col("filestream_data_space_id", Int, true),
            col("max_column_id_used", Int, false),
            col("lock_on_bulk_load", Bit, false),
            col("uses_ansi_nulls", Bit, true),
            col("is_replicated", Bit, true),
            col("has_replication_filter", Bit, true),
            col("is_merge_published", Bit, true),
            col("is_sync_tran_subscribed", Bit, true),
            col("has_unchecked_assembly_data", Bit, false),
            col("text_in_row_limit", Int, true),
            col("large_value_types_out_of_row", Bit, true),
            col("is_tracked_by_cdc", Bit, true),
            col("lock_escalation", TinyInt, true),
            col("lock_escalation_desc", NVarChar(60), true),
            col("is_filetable", Bit, true),
            col("is_memory_optimized", Bit, true),
            col("durability", TinyInt, true),
            col("durability_desc", NVarChar(60), true),
            col("temporal_type", TinyInt, true),
            col("temporal_type_desc", NVarChar(60), true),
            col("history_table_id", Int, true),
            col("is_remote_data_archive_enabled", Bit, true),
            col("is_external", Bit, false),
            col("history_retention_period", Int, true),
            col("history_retention_period_unit", Int, true),
            col("history_retention_period_unit_desc", NVarChar(10), true),
            col("is_node", Bit, true),
            col("is_edge", Bit, true),
        ],
    ),
    rows: tables,
};

/// What tessera's tables are: on the one filegroup (their large values too, when they
/// have `(max)` columns), ANSI_NULLS on, locks escalating to the table, durable, neither
/// temporal, replicated, memory-optimized, external nor graph tables. `text_in_row_limit`
/// is 0: there are no text, ntext or image columns to keep in rows.
fn tables(ctx: &ExecCtx, db: &str) -> Rows<{ OBJECT_WIDTH + 29 }> {
    let (_, catalog) = catalog(ctx, db)?;
    let schema_id = schema_ids(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        if let Object::Table(t) = o {
            let has_lobs = t.columns.iter().any(|c| c.ty.is_max());
            let more = [
                int(i64::from(has_lobs)),
                Value::Null,
                int(t.columns.len() as i64),
                bit(false),
                bit(true),
                bit(false),
                bit(false),
                bit(false),
                bit(false),
                bit(false),
                int(0),
                bit(t.large_values_out_of_row),
                bit(false),
                int(0),
                s("TABLE"),
                bit(false),
                bit(false),
                int(0),
                s("SCHEMA_AND_DATA"),
                int(0),
                s("NON_TEMPORAL_TABLE"),
                Value::Null,
                bit(false),
                bit(false),
                Value::Null,
                Value::Null,
                Value::Null,
                bit(false),
                bit(false),
            ];
            out.push(concat(table_object(t, schema_id(&t.schema)), more));
        }
    }
    Ok(out)
}

pub(super) static VIEWS: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "views",
    columns: OBJECT_HEAD,
    rows: |ctx, db| modules_of_kind(ctx, db, ModuleKind::View, "VIEW"),
};

pub(super) static PROCEDURES: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "procedures",
    columns: OBJECT_HEAD,
    rows: |ctx, db| modules_of_kind(ctx, db, ModuleKind::Procedure, "SQL_STORED_PROCEDURE"),
};

/// The rows of sys.views or sys.procedures: the modules of one kind.
fn modules_of_kind(ctx: &ExecCtx, db: &str, kind: ModuleKind, type_desc: &str) -> Rows<9> {
    let (_, catalog) = catalog(ctx, db)?;
    let schema_id = schema_ids(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        match o {
            Object::Module(m) if m.kind == kind => out.push([
                s(&m.name),
                int(i64::from(m.id)),
                Value::Null,
                schema_id(&m.schema),
                int(0),
                s(&format!("{:<2}", m.kind.type_code())),
                s(type_desc),
                datetime(m.created),
                datetime(m.modified),
            ]),
            _ => {}
        }
    }
    Ok(out)
}

pub(super) static SQL_MODULES: ViewDef<2> = ViewDef {
    schema: "sys",
    name: "sql_modules",
    columns: [col("object_id", Int, false), col("definition", NVARCHAR_MAX, true)],
    rows: sql_modules,
};

/// Modules and their definitions (NULL without VIEW DEFINITION on the module).
fn sql_modules(ctx: &ExecCtx, db: &str) -> Rows<2> {
    let (_, catalog) = catalog(ctx, db)?;
    let visible = super::definitions_visible(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        // A synonym has no definition of its own here, as in SQL Server.
        if let Object::Module(m) = o {
            if m.kind == ModuleKind::Synonym {
                continue;
            }
            let text = if visible(&m.schema, m.id) { s(&m.text) } else { Value::Null };
            out.push([int(i64::from(m.id)), text]);
        }
    }
    Ok(out)
}

pub(super) static SEQUENCES: ViewDef<{ OBJECT_WIDTH + 15 }> = ViewDef {
    schema: "sys",
    name: "sequences",
    columns: concat_columns(
        OBJECT_COLUMNS,
        [
            col("start_value", NVarChar(128), false),
            col("increment", NVarChar(128), false),
            col("minimum_value", NVarChar(128), true),
            col("maximum_value", NVarChar(128), true),
            col("is_cycling", Bit, true),
            col("is_cached", Bit, true),
            col("cache_size", Int, true),
            col("system_type_id", TinyInt, false),
            col("user_type_id", Int, false),
            col("precision", TinyInt, false),
            col("scale", TinyInt, false),
            col("current_value", NVarChar(128), false),
            col("is_exhausted", Bit, false),
            col("last_used_value", NVarChar(128), true),
            col("is_ms_shipped_sequence", Bit, true),
        ],
    ),
    rows: sequences,
};

/// Each sequence with its options and where it stands (`crate::sequences::shown_position`);
/// the values of SQL Server's sql_variant columns as text.
fn sequences(ctx: &ExecCtx, db: &str) -> Rows<{ OBJECT_WIDTH + 15 }> {
    let (_, catalog) = catalog(ctx, db)?;
    let schema_id = schema_ids(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Sequence(q) = o else { continue };
        let (current, exhausted, last) = crate::sequences::shown_position(ctx, db, q)?;
        let text = |v: Value| match types::cast(&v, &q.ty, &NVarChar(128), None) {
            Ok(t) => t,
            Err(_) => Value::Null,
        };
        let (type_id, _, precision, scale) = type_ids(&q.ty);
        let more = [
            s(&q.start.to_string()),
            s(&q.increment.to_string()),
            s(&q.min.to_string()),
            s(&q.max.to_string()),
            bit(q.cycle),
            bit(q.cache.is_some()),
            q.cache.map_or(Value::Null, |c| int(i64::from(c))),
            int(type_id),
            int(type_id),
            int(precision),
            int(scale),
            text(current),
            bit(exhausted),
            last.map_or(Value::Null, text),
            bit(false),
        ];
        out.push(concat(sequence_object(q, schema_id(&q.schema)), more));
    }
    Ok(out)
}

pub(super) static TRIGGERS: ViewDef<13> = ViewDef {
    schema: "sys",
    name: "triggers",
    columns: [
        col("name", SYSNAME, false),
        col("object_id", Int, false),
        col("parent_class", TinyInt, false),
        col("parent_class_desc", NVarChar(60), true),
        col("parent_id", Int, false),
        col("type", Char(2), false),
        col("type_desc", NVarChar(60), true),
        col("create_date", DateTime, false),
        col("modify_date", DateTime, false),
        col("is_ms_shipped", Bit, false),
        col("is_disabled", Bit, false),
        col("is_not_for_replication", Bit, false),
        col("is_instead_of_trigger", Bit, false),
    ],
    // What tools look here for: whether a table has triggers (EF Core's choice of OUTPUT
    // … INTO, for one).
    rows: |ctx, db| {
        let (_, catalog) = catalog(ctx, db)?;
        let mut out = Vec::new();
        for o in catalog.objects() {
            let Object::Module(m) = o else { continue };
            if m.kind != ModuleKind::Trigger {
                continue;
            }
            // A DDL trigger's parent is the database (class 0).
            let (class, class_desc) = if m.parent.is_some() { (1, "OBJECT_OR_COLUMN") } else { (0, "DATABASE") };
            out.push([
                s(&m.name),
                int(i64::from(m.id)),
                Value::Int(class),
                s(class_desc),
                int(i64::from(m.parent.unwrap_or(0))),
                s("TR"),
                s(m.kind.type_desc()),
                datetime(m.created),
                datetime(m.modified),
                bit(false),
                bit(m.disabled),
                bit(false),
                bit(m.instead_of),
            ]);
        }
        Ok(out)
    },
};

pub(super) static PARAMETERS: ViewDef<11> = ViewDef {
    schema: "sys",
    name: "parameters",
    columns: [
        col("object_id", Int, false),
        col("name", SYSNAME, true),
        col("parameter_id", Int, false),
        col("system_type_id", TinyInt, false),
        col("user_type_id", Int, false),
        col("max_length", SmallInt, false),
        col("precision", TinyInt, false),
        col("scale", TinyInt, false),
        col("is_output", Bit, false),
        col("has_default_value", Bit, false),
        col("is_readonly", Bit, false),
    ],
    rows: parameters,
};

fn parameters(ctx: &ExecCtx, db: &str) -> Rows<11> {
    let (_, catalog) = catalog(ctx, db)?;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Module(m) = o else { continue };
        for (i, p) in module_signature(m).0.into_iter().enumerate() {
            // A table-valued parameter's type is a table type (system type 243).
            let (system_id, user_id, len, prec, sc) = match types::resolve_type(&p.ty, false) {
                Err(_) if p.readonly => {
                    let id = catalog.table_type(&p.ty.name, &m.schema).map_or(0, |t| i64::from(t.id));
                    (super::columns::TABLE_TYPE_SYSTEM_ID, id, -1, 0, 0)
                }
                resolved => {
                    let (id, len, prec, sc) = type_ids(&resolved.unwrap_or(SqlType::Int));
                    (id, id, len, prec, sc)
                }
            };
            out.push([
                int(i64::from(m.id)),
                s(&p.name),
                int(i as i64 + 1),
                int(system_id),
                int(user_id),
                int(len),
                int(prec),
                int(sc),
                bit(p.output),
                bit(p.default.is_some()),
                bit(p.readonly),
            ]);
        }
    }
    Ok(out)
}

/// The parameters of a procedure or function, and a scalar function's return type, from
/// its definition.
pub(crate) fn module_signature(m: &Module) -> (Vec<tessera_syntax::ast::Parameter>, Option<SqlType>) {
    use tessera_syntax::ast::{FunctionReturns, StatementKind};
    let Ok(batch) = tessera_syntax::parser::parse_batch(&m.text) else { return (Vec::new(), None) };
    match batch.statements.into_iter().next().map(|s| s.kind) {
        Some(StatementKind::CreateProcedure(p)) => (p.params, None),
        Some(StatementKind::CreateFunction(f)) => {
            let returns = match &f.returns {
                FunctionReturns::Scalar { ty, .. } => types::resolve_type(ty, false).ok(),
                _ => None,
            };
            (f.params, returns)
        }
        _ => (Vec::new(), None),
    }
}
