//! System views (`sys.*`, `INFORMATION_SCHEMA.*`): relations computed when a query reads
//! them, from the engine, the catalogs and the plan cache, so they join and filter like
//! tables.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::bind::OutputColumn;
use crate::catalog::{ModuleKind, Object, Table};
use crate::plan::{Plan, Row};
use crate::runtime::ExecCtx;
use crate::types::{self, SqlType, Value};
use tessera_errors::SqlResult;
use tessera_syntax::ast::ObjectName;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Databases,
    CachedPlans,
    PerformanceCounters,
    Objects,
    Tables,
    Columns,
    Schemas,
    Types,
    Indexes,
    InfoTables,
    InfoColumns,
    InfoRoutines,
    Procedures,
    Views,
    SqlModules,
    Parameters,
    IndexColumns,
    KeyConstraints,
    ForeignKeys,
    ForeignKeyColumns,
    CheckConstraints,
    DefaultConstraints,
    Configurations,
    Sessions,
    Requests,
    Connections,
    ServerPrincipals,
    SqlLogins,
    ServerRoleMembers,
    SysMemory,
    ProcessMemory,
    ExtensionConfiguration,
    BufferDescriptors,
}

const VIEWS: &[(&str, &str, View)] = &[
    ("sys", "databases", View::Databases),
    ("sys", "dm_exec_cached_plans", View::CachedPlans),
    ("sys", "dm_os_performance_counters", View::PerformanceCounters),
    ("sys", "objects", View::Objects),
    ("sys", "tables", View::Tables),
    ("sys", "columns", View::Columns),
    ("sys", "schemas", View::Schemas),
    ("sys", "types", View::Types),
    ("sys", "indexes", View::Indexes),
    ("information_schema", "tables", View::InfoTables),
    ("information_schema", "columns", View::InfoColumns),
    ("information_schema", "routines", View::InfoRoutines),
    ("sys", "procedures", View::Procedures),
    ("sys", "views", View::Views),
    ("sys", "sql_modules", View::SqlModules),
    ("sys", "parameters", View::Parameters),
    ("sys", "index_columns", View::IndexColumns),
    ("sys", "key_constraints", View::KeyConstraints),
    ("sys", "foreign_keys", View::ForeignKeys),
    ("sys", "foreign_key_columns", View::ForeignKeyColumns),
    ("sys", "check_constraints", View::CheckConstraints),
    ("sys", "default_constraints", View::DefaultConstraints),
    ("sys", "configurations", View::Configurations),
    ("sys", "dm_exec_sessions", View::Sessions),
    ("sys", "dm_exec_requests", View::Requests),
    ("sys", "dm_exec_connections", View::Connections),
    ("sys", "server_principals", View::ServerPrincipals),
    ("sys", "sql_logins", View::SqlLogins),
    ("sys", "server_role_members", View::ServerRoleMembers),
    ("sys", "dm_os_sys_memory", View::SysMemory),
    ("sys", "dm_os_process_memory", View::ProcessMemory),
    ("sys", "dm_os_buffer_pool_extension_configuration", View::ExtensionConfiguration),
    ("sys", "dm_os_buffer_descriptors", View::BufferDescriptors),
];

/// The system view a name refers to (`sys.x`, `db.sys.x`, `INFORMATION_SCHEMA.x`).
pub fn lookup(name: &ObjectName) -> Option<View> {
    let n = name.0.len();
    if n < 2 {
        return None;
    }
    let schema = name.0[n - 2].value.to_lowercase();
    let obj = name.0[n - 1].value.to_lowercase();
    VIEWS.iter().find(|(s, o, _)| *s == schema && *o == obj).map(|v| v.2)
}

pub fn plan(view: View, db: String) -> Plan {
    Plan::System { view, db }
}

fn col(name: &str, ty: SqlType, nullable: bool) -> OutputColumn {
    OutputColumn { name: name.to_string(), ty, nullable }
}

const SYSNAME: SqlType = SqlType::NVarChar(128);

impl View {
    pub fn columns(self) -> Vec<OutputColumn> {
        use SqlType::*;
        match self {
            View::Databases => vec![
                col("name", SYSNAME, false),
                col("database_id", Int, false),
                col("create_date", DateTime, false),
                col("compatibility_level", TinyInt, false),
                col("collation_name", SYSNAME, true),
                col("user_access_desc", NVarChar(60), true),
                col("is_read_only", Bit, true),
                col("state", TinyInt, true),
                col("state_desc", NVarChar(60), true),
                col("recovery_model", TinyInt, true),
                col("recovery_model_desc", NVarChar(60), true),
                col("log_reuse_wait_desc", NVarChar(60), true),
                col("delayed_durability", Int, true),
                col("delayed_durability_desc", NVarChar(60), true),
            ],
            View::CachedPlans => vec![
                col("bucketid", Int, false),
                col("refcounts", Int, false),
                col("usecounts", Int, false),
                col("size_in_bytes", Int, false),
                col("cacheobjtype", NVarChar(50), false),
                col("objtype", NVarChar(20), false),
                col("plan_handle", VarBinary(64), false),
                col("text", NVarChar(tessera_access::row::MAX), true),
            ],
            View::PerformanceCounters => vec![
                col("object_name", NChar(128), false),
                col("counter_name", NChar(128), false),
                col("instance_name", NChar(128), true),
                col("cntr_value", BigInt, false),
                col("cntr_type", Int, false),
            ],
            View::Objects | View::Tables => {
                let mut v = vec![
                    col("name", SYSNAME, false),
                    col("object_id", Int, false),
                    col("principal_id", Int, true),
                    col("schema_id", Int, false),
                    col("parent_object_id", Int, false),
                    col("type", Char(2), true),
                    col("type_desc", NVarChar(60), true),
                    col("create_date", DateTime, false),
                    col("modify_date", DateTime, false),
                    col("is_ms_shipped", Bit, false),
                ];
                if self == View::Tables {
                    v.push(col("max_column_id_used", Int, false));
                }
                v
            }
            View::Columns => vec![
                col("object_id", Int, false),
                col("name", SYSNAME, true),
                col("column_id", Int, false),
                col("system_type_id", TinyInt, false),
                col("user_type_id", Int, false),
                col("max_length", SmallInt, false),
                col("precision", TinyInt, false),
                col("scale", TinyInt, false),
                col("collation_name", SYSNAME, true),
                col("is_nullable", Bit, true),
                col("is_identity", Bit, false),
                col("is_computed", Bit, false),
                col("default_object_id", Int, false),
            ],
            View::Schemas => {
                vec![col("name", SYSNAME, false), col("schema_id", Int, false), col("principal_id", Int, true)]
            }
            View::Types => vec![
                col("name", SYSNAME, false),
                col("system_type_id", TinyInt, false),
                col("user_type_id", Int, false),
                col("schema_id", Int, false),
                col("max_length", SmallInt, false),
                col("precision", TinyInt, false),
                col("scale", TinyInt, false),
                col("is_nullable", Bit, true),
                col("is_user_defined", Bit, false),
            ],
            View::Indexes => vec![
                col("object_id", Int, false),
                col("name", SYSNAME, true),
                col("index_id", Int, false),
                col("type", TinyInt, false),
                col("type_desc", NVarChar(60), true),
                col("is_unique", Bit, true),
                col("is_primary_key", Bit, true),
                col("is_unique_constraint", Bit, true),
            ],
            View::InfoTables => vec![
                col("TABLE_CATALOG", SYSNAME, true),
                col("TABLE_SCHEMA", SYSNAME, true),
                col("TABLE_NAME", SYSNAME, false),
                col("TABLE_TYPE", VarChar(10), true),
            ],
            View::InfoRoutines => vec![
                col("ROUTINE_CATALOG", SYSNAME, true),
                col("ROUTINE_SCHEMA", SYSNAME, true),
                col("ROUTINE_NAME", SYSNAME, false),
                col("ROUTINE_TYPE", NVarChar(20), true),
                col("DATA_TYPE", SYSNAME, true),
                col("ROUTINE_DEFINITION", NVarChar(4000), true),
                col("CREATED", DateTime, false),
                col("LAST_ALTERED", DateTime, false),
            ],
            View::Procedures | View::Views => vec![
                col("name", SYSNAME, false),
                col("object_id", Int, false),
                col("principal_id", Int, true),
                col("schema_id", Int, false),
                col("parent_object_id", Int, false),
                col("type", Char(2), true),
                col("type_desc", NVarChar(60), true),
                col("create_date", DateTime, false),
                col("modify_date", DateTime, false),
            ],
            View::SqlModules => {
                vec![col("object_id", Int, false), col("definition", NVarChar(tessera_access::row::MAX), true)]
            }
            View::Parameters => vec![
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
            ],
            View::IndexColumns => vec![
                col("object_id", Int, false),
                col("index_id", Int, false),
                col("index_column_id", Int, false),
                col("column_id", Int, false),
                col("key_ordinal", TinyInt, false),
                col("is_descending_key", Bit, true),
                col("is_included_column", Bit, true),
            ],
            View::KeyConstraints => vec![
                col("name", SYSNAME, false),
                col("object_id", Int, false),
                col("parent_object_id", Int, false),
                col("type", Char(2), true),
                col("type_desc", NVarChar(60), true),
                col("unique_index_id", Int, true),
            ],
            View::ForeignKeys => vec![
                col("name", SYSNAME, false),
                col("object_id", Int, false),
                col("parent_object_id", Int, false),
                col("referenced_object_id", Int, true),
                col("delete_referential_action_desc", NVarChar(60), true),
                col("update_referential_action_desc", NVarChar(60), true),
            ],
            View::ForeignKeyColumns => vec![
                col("constraint_object_id", Int, false),
                col("constraint_column_id", Int, false),
                col("parent_object_id", Int, false),
                col("parent_column_id", Int, false),
                col("referenced_object_id", Int, false),
                col("referenced_column_id", Int, false),
            ],
            View::CheckConstraints => vec![
                col("name", SYSNAME, false),
                col("object_id", Int, false),
                col("parent_object_id", Int, false),
                col("parent_column_id", Int, false),
                col("definition", NVarChar(tessera_access::row::MAX), true),
            ],
            View::DefaultConstraints => vec![
                col("name", SYSNAME, false),
                col("object_id", Int, false),
                col("parent_object_id", Int, false),
                col("parent_column_id", Int, false),
                col("definition", NVarChar(tessera_access::row::MAX), true),
            ],
            View::Configurations => vec![
                col("configuration_id", Int, false),
                col("name", NVarChar(35), false),
                col("value", BigInt, true),
                col("minimum", BigInt, true),
                col("maximum", BigInt, true),
                col("value_in_use", BigInt, true),
                col("description", NVarChar(255), false),
                col("is_dynamic", Bit, false),
                col("is_advanced", Bit, false),
            ],
            View::ServerPrincipals | View::SqlLogins => {
                let mut c = vec![
                    col("name", SYSNAME, false),
                    col("principal_id", Int, false),
                    col("sid", VarBinary(85), true),
                    col("type", Char(1), false),
                    col("type_desc", NVarChar(60), true),
                    col("is_disabled", Bit, true),
                    col("create_date", DateTime, false),
                    col("modify_date", DateTime, false),
                    col("default_database_name", SYSNAME, true),
                    col("default_language_name", SYSNAME, true),
                    col("credential_id", Int, true),
                ];
                if self == View::ServerPrincipals {
                    c.push(col("owning_principal_id", Int, true));
                    c.push(col("is_fixed_role", Bit, false));
                } else {
                    c.push(col("is_policy_checked", Bit, true));
                    c.push(col("is_expiration_checked", Bit, true));
                    c.push(col("password_hash", VarBinary(256), true));
                }
                c
            }
            View::ServerRoleMembers => {
                vec![col("role_principal_id", Int, false), col("member_principal_id", Int, false)]
            }
            View::ExtensionConfiguration => vec![
                col("path", NVarChar(256), true),
                col("file_id", Int, true),
                col("state", Int, false),
                col("state_description", NVarChar(60), false),
                col("current_size_in_kb", BigInt, false),
            ],
            View::BufferDescriptors => vec![
                col("database_id", Int, true),
                col("file_id", Int, true),
                col("page_id", Int, true),
                col("page_level", Int, true),
                col("allocation_unit_id", BigInt, true),
                col("page_type", NVarChar(60), true),
                col("row_count", Int, true),
                col("free_space_in_bytes", Int, true),
                col("is_modified", Bit, true),
                col("numa_node", Int, true),
                col("read_microsec", BigInt, true),
                col("is_in_bpool_extension", Bit, true),
            ],
            View::SysMemory => vec![
                col("total_physical_memory_kb", BigInt, false),
                col("available_physical_memory_kb", BigInt, false),
                col("total_page_file_kb", BigInt, false),
                col("available_page_file_kb", BigInt, false),
                col("system_cache_kb", BigInt, false),
                col("kernel_paged_pool_kb", BigInt, false),
                col("kernel_nonpaged_pool_kb", BigInt, false),
                col("system_high_memory_signal_state", Bit, false),
                col("system_low_memory_signal_state", Bit, false),
                col("system_memory_state_desc", NVarChar(256), false),
            ],
            View::ProcessMemory => vec![
                col("physical_memory_in_use_kb", BigInt, false),
                col("large_page_allocations_kb", BigInt, false),
                col("locked_page_allocations_kb", BigInt, false),
                col("total_virtual_address_space_kb", BigInt, false),
                col("virtual_address_space_reserved_kb", BigInt, false),
                col("virtual_address_space_committed_kb", BigInt, false),
                col("virtual_address_space_available_kb", BigInt, false),
                col("page_fault_count", BigInt, false),
                col("memory_utilization_percentage", Int, false),
                col("available_commit_limit_kb", BigInt, false),
                col("process_physical_memory_low", Bit, false),
                col("process_virtual_memory_low", Bit, false),
            ],
            View::Sessions => vec![
                col("session_id", SmallInt, false),
                col("login_time", DateTime, false),
                col("host_name", SYSNAME, true),
                col("program_name", SYSNAME, true),
                col("login_name", SYSNAME, false),
                col("status", NVarChar(30), false),
                col("database_id", SmallInt, false),
                col("open_transaction_count", Int, false),
                col("is_user_process", Bit, false),
            ],
            View::Connections => vec![
                col("session_id", Int, true),
                col("most_recent_session_id", Int, true),
                col("connect_time", DateTime, false),
                col("net_transport", NVarChar(40), false),
                col("protocol_type", NVarChar(40), true),
                col("protocol_version", Int, true),
                col("encrypt_option", NVarChar(40), false),
                col("auth_scheme", NVarChar(40), false),
                col("net_packet_size", Int, true),
                col("client_net_address", VarChar(48), true),
                col("client_tcp_port", Int, true),
                col("local_net_address", VarChar(48), true),
                col("local_tcp_port", Int, true),
            ],
            View::Requests => vec![
                col("session_id", SmallInt, false),
                col("request_id", Int, false),
                col("status", NVarChar(30), false),
                col("command", NVarChar(32), false),
                col("database_id", SmallInt, false),
                col("open_transaction_count", Int, false),
                col("text", NVarChar(tessera_access::row::MAX), true),
            ],
            View::InfoColumns => vec![
                col("TABLE_CATALOG", SYSNAME, true),
                col("TABLE_SCHEMA", SYSNAME, true),
                col("TABLE_NAME", SYSNAME, false),
                col("COLUMN_NAME", SYSNAME, true),
                col("ORDINAL_POSITION", Int, true),
                col("COLUMN_DEFAULT", NVarChar(4000), true),
                col("IS_NULLABLE", VarChar(3), true),
                col("DATA_TYPE", NVarChar(128), true),
                col("CHARACTER_MAXIMUM_LENGTH", Int, true),
                col("NUMERIC_PRECISION", TinyInt, true),
                col("NUMERIC_SCALE", Int, true),
            ],
        }
    }
}

fn s(v: &str) -> Value {
    Value::str(v)
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

fn bit(b: bool) -> Value {
    Value::Bit(b)
}

/// `datetime` from seconds since the Unix epoch.
fn datetime(epoch: i64) -> Value {
    // Days from 0001-01-01 to 1970-01-01.
    const UNIX_DAYS: i64 = 719_162;
    let days = epoch.div_euclid(86_400) + UNIX_DAYS;
    let ticks = epoch.rem_euclid(86_400) as u64 * 10_000_000;
    Value::DateTime { days: days as i32, ticks }
}

/// SQL Server's system type ids.
/// The types sys.types lists, TYPE_NAME and TYPE_ID know.
const SYSTEM_TYPES: &[(&str, SqlType)] = &[
    ("bigint", SqlType::BigInt),
    ("binary", SqlType::Binary(8000)),
    ("bit", SqlType::Bit),
    ("char", SqlType::Char(8000)),
    ("date", SqlType::Date),
    ("datetime", SqlType::DateTime),
    ("datetime2", SqlType::DateTime2 { scale: 7 }),
    ("datetimeoffset", SqlType::DateTimeOffset { scale: 7 }),
    ("decimal", SqlType::Decimal { precision: 38, scale: 38 }),
    ("float", SqlType::Float),
    ("int", SqlType::Int),
    ("money", SqlType::Money),
    ("nchar", SqlType::NChar(4000)),
    ("numeric", SqlType::Decimal { precision: 38, scale: 38 }),
    ("nvarchar", SqlType::NVarChar(4000)),
    ("real", SqlType::Real),
    ("smalldatetime", SqlType::SmallDateTime),
    ("smallint", SqlType::SmallInt),
    ("smallmoney", SqlType::SmallMoney),
    ("sysname", SqlType::NVarChar(128)),
    ("time", SqlType::Time { scale: 7 }),
    ("tinyint", SqlType::TinyInt),
    ("uniqueidentifier", SqlType::UniqueIdentifier),
    ("varbinary", SqlType::VarBinary(8000)),
    ("varchar", SqlType::VarChar(8000)),
];

/// sys.types' user_type_id: the storage type's id, except numeric (108) and sysname (256).
fn user_type_id(name: &str, t: &SqlType) -> i64 {
    match name {
        "numeric" => 108,
        "sysname" => 256,
        _ => type_ids(t).0,
    }
}

/// `TYPE_NAME(id)`: the name of a system type by its user_type_id.
pub fn type_name(id: i64) -> Option<&'static str> {
    SYSTEM_TYPES.iter().find(|(n, t)| user_type_id(n, t) == id).map(|(n, _)| *n)
}

/// `TYPE_ID('name')`: a system type's user_type_id (`sys.` or `dbo.` may qualify it).
pub fn type_id(name: &str) -> Option<i64> {
    let name = name.trim();
    let lower = name.to_lowercase();
    let bare = lower.strip_prefix("sys.").or_else(|| lower.strip_prefix("dbo.")).unwrap_or(&lower);
    let bare = bare.trim_start_matches('[').trim_end_matches(']');
    SYSTEM_TYPES.iter().find(|(n, _)| *n == bare).map(|(n, t)| user_type_id(n, t))
}

fn type_ids(t: &SqlType) -> (i64, i64, i64, i64) {
    use SqlType::*;
    let max = tessera_access::row::MAX;
    let len = |n: u16, unit: i64| if n == max { -1 } else { i64::from(n) * unit };
    // (system_type_id, max_length, precision, scale)
    match *t {
        Bit => (104, 1, 1, 0),
        TinyInt => (48, 1, 3, 0),
        SmallInt => (52, 2, 5, 0),
        Int => (56, 4, 10, 0),
        BigInt => (127, 8, 19, 0),
        Real => (59, 4, 24, 0),
        Float => (62, 8, 53, 0),
        Decimal { precision, scale } => {
            (106, t.fixed_size().unwrap_or(17) as i64, i64::from(precision), i64::from(scale))
        }
        Money => (60, 8, 19, 4),
        SmallMoney => (122, 4, 10, 4),
        Char(n) => (175, len(n, 1), 0, 0),
        VarChar(n) => (167, len(n, 1), 0, 0),
        NChar(n) => (239, len(n, 2), 0, 0),
        NVarChar(n) => (231, len(n, 2), 0, 0),
        Binary(n) => (173, len(n, 1), 0, 0),
        VarBinary(n) => (165, len(n, 1), 0, 0),
        Date => (40, 3, 10, 0),
        Time { scale } => (41, t.fixed_size().unwrap_or(5) as i64, 16, i64::from(scale)),
        DateTime => (61, 8, 23, 3),
        DateTime2 { scale } => (42, t.fixed_size().unwrap_or(8) as i64, 27, i64::from(scale)),
        SmallDateTime => (58, 4, 16, 0),
        DateTimeOffset { scale } => {
            let precision = 26 + if scale > 0 { i64::from(scale) + 1 } else { 0 };
            (43, t.fixed_size().unwrap_or(10) as i64, precision, i64::from(scale))
        }
        UniqueIdentifier => (36, 16, 0, 0),
    }
}

fn is_string(t: &SqlType) -> bool {
    matches!(t, SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_))
}

const COLLATION: &str = "SQL_Latin1_General_CP1_CI_AS";

/// A constraint as an object of its own (SQL Server gives constraints object ids).
struct ConstraintObject {
    id: i32,
    name: String,
    /// sys.objects.type: PK, UQ, F, C, D.
    kind: &'static str,
    kind_desc: &'static str,
    object_desc: &'static str,
    index_id: Option<u32>,
    /// 1-based column for column-level constraints (defaults), else 0.
    column: i64,
    definition: String,
}

/// The constraints of a table, with ids derived from the table's (stable while the
/// table's constraints are).
fn constraint_objects(t: &Table) -> Vec<ConstraintObject> {
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

/// The parameters of a procedure or function, from its definition.
fn module_parameters(m: &crate::catalog::Module) -> Vec<tessera_syntax::ast::Parameter> {
    let Ok(batch) = tessera_syntax::parser::parse_batch(&m.text) else { return Vec::new() };
    match batch.statements.into_iter().next().map(|s| s.kind) {
        Some(tessera_syntax::ast::StatementKind::CreateProcedure(p)) => p.params,
        Some(tessera_syntax::ast::StatementKind::CreateFunction(f)) => f.params,
        _ => Vec::new(),
    }
}

pub fn rows(view: View, db: &str, ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    Ok(match view {
        View::Databases => {
            let mut out = Vec::new();
            for name in ctx.shared.engine.database_names() {
                if ctx.shared.engine.database_state(&name) == Some(tessera_database::DbState::Restoring) {
                    let Some((_, _, o)) = ctx.shared.engine.database_info(&name) else { continue };
                    let model = o.recovery_model;
                    out.push(vec![
                        s(&name),
                        int(i64::from(ctx.shared.engine.database_id(&name).unwrap_or(0))),
                        datetime(0),
                        int(160),
                        s(COLLATION),
                        s("MULTI_USER"),
                        bit(false),
                        int(1),
                        s("RESTORING"),
                        int(match model.name() {
                            "FULL" => 1,
                            "BULK_LOGGED" => 2,
                            _ => 3,
                        }),
                        s(model.name()),
                        s("NOTHING"),
                        int(0),
                        s(o.delayed_durability.name()),
                    ]);
                    continue;
                }
                let d = ctx.shared.database(&name)?;
                let o = d.options();
                let model = o.recovery_model;
                let model_id = match model.name() {
                    "FULL" => 1,
                    "BULK_LOGGED" => 2,
                    _ => 3,
                };
                let dd = o.delayed_durability.name();
                let dd_id = match dd {
                    "DISABLED" => 0,
                    "ALLOWED" => 1,
                    _ => 2,
                };
                out.push(vec![
                    s(d.name()),
                    int(i64::from(d.id())),
                    datetime(0),
                    int(160),
                    s(COLLATION),
                    s("MULTI_USER"),
                    bit(false),
                    int(0),
                    s("ONLINE"),
                    int(model_id),
                    s(model.name()),
                    s(d.wal().reuse_wait()),
                    int(dd_id),
                    s(dd),
                ]);
            }
            out
        }
        View::CachedPlans => ctx
            .shared
            .plans
            .entries()
            .into_iter()
            .map(|e| {
                vec![
                    int((e.handle % 40009) as i64),
                    int(1),
                    int(e.use_count as i64),
                    int(e.size as i64),
                    s("Compiled Plan"),
                    s("Adhoc"),
                    Value::Binary(Arc::from(&e.handle.to_be_bytes()[..])),
                    s(&e.text),
                ]
            })
            .collect(),
        View::PerformanceCounters => {
            let p = &ctx.shared.plans;
            let hits = p.hits.load(Ordering::Relaxed) as i64;
            let misses = p.misses.load(Ordering::Relaxed) as i64;
            let counter = |object: &str, name: &str, instance: &str, value: i64, kind: i64| {
                vec![s(object), s(name), s(instance), int(value), int(kind)]
            };
            let mut rows = vec![
                counter("SQLServer:Plan Cache", "Cache Hit Ratio", "SQL Plans", hits, 537003264),
                counter("SQLServer:Plan Cache", "Cache Hit Ratio Base", "SQL Plans", hits + misses, 1073939712),
                counter("SQLServer:Plan Cache", "Cache Object Counts", "SQL Plans", p.len() as i64, 65792),
                counter("SQLServer:SQL Statistics", "SQL Compilations/sec", "", misses, 272696576),
                counter("SQLServer:SQL Statistics", "Batch Requests/sec", "", hits + misses, 272696576),
            ];
            let engine = &ctx.shared.engine;
            let pool = engine.stats().pool;
            let memory = engine.memory_status();
            let pages = |n: u64| n as i64;
            let kb = |bytes: u64| (bytes >> 10) as i64;
            let buffer = "SQLServer:Buffer Manager";
            rows.extend([
                counter(buffer, "Buffer cache hit ratio", "", pages(pool.hits), 537003264),
                counter(buffer, "Buffer cache hit ratio base", "", pages(pool.hits + pool.misses), 1073939712),
                counter(buffer, "Page life expectancy", "", engine.page_life_expectancy() as i64, 65792),
                counter(buffer, "Database pages", "", pages(pool.resident_pages), 65792),
                counter(buffer, "Target pages", "", pages(pool.capacity_pages), 65792),
                counter(buffer, "Page reads/sec", "", pages(pool.reads), 272696576),
                counter(buffer, "Readahead pages/sec", "", pages(pool.read_ahead_pages), 272696576),
                counter(buffer, "Page writes/sec", "", pages(pool.writes), 272696576),
                counter(buffer, "Lazy writes/sec", "", pages(pool.evictions), 272696576),
            ]);
            let ext = engine.pool().extension().map(|e| e.stats()).unwrap_or_default();
            rows.extend([
                counter(buffer, "Extension page reads/sec", "", pages(ext.reads), 272696576),
                counter(buffer, "Extension page writes/sec", "", pages(ext.writes), 272696576),
                counter(buffer, "Extension page evictions/sec", "", pages(ext.evictions), 272696576),
                counter(buffer, "Extension allocated pages", "", pages(ext.used), 65792),
                counter(buffer, "Extension free pages", "", pages(ext.slots - ext.used), 65792),
                counter(
                    buffer,
                    "Extension in use as percentage",
                    "",
                    (100 * ext.used).checked_div(ext.slots).unwrap_or(0) as i64,
                    65792,
                ),
                counter(buffer, "Extension outstanding IO counter", "", pages(ext.queued), 65792),
            ]);
            let manager = "SQLServer:Memory Manager";
            let total = pool.resident_pages * tessera_database::PAGE_SIZE as u64;
            rows.extend([
                counter(manager, "Target Server Memory (KB)", "", kb(memory.target_bytes), 65792),
                counter(manager, "Total Server Memory (KB)", "", kb(total), 65792),
                counter(manager, "Free Memory (KB)", "", kb(memory.target_bytes.saturating_sub(total)), 65792),
                counter(manager, "Memory pressure events", "", memory.pressure_events as i64, 65792),
            ]);
            rows
        }
        View::ExtensionConfiguration => {
            let engine = &ctx.shared.engine;
            let row = match (engine.pool().extension(), ctx.shared.config.extension()) {
                (Some(ext), _) => vec![
                    s(&ext.path().to_string_lossy()),
                    int(0),
                    int(5),
                    s("BUFFER POOL EXTENSION ENABLED"),
                    int((ext.size_bytes() >> 10) as i64),
                ],
                // Configured but not running (its file could not be made at start).
                (None, Some(setting)) => {
                    vec![s(&setting.file), int(0), int(0), s("BUFFER POOL EXTENSION DISABLED"), int(0)]
                }
                (None, None) => vec![Value::Null, Value::Null, int(0), s("BUFFER POOL EXTENSION DISABLED"), int(0)],
            };
            vec![row]
        }
        View::BufferDescriptors => ctx
            .shared
            .engine
            .buffer_descriptors()
            .into_iter()
            .map(|d| {
                vec![
                    int(i64::from(d.database_id)),
                    int(1),
                    int(i64::from(d.page)),
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    bit(d.dirty),
                    int(0),
                    Value::Null,
                    bit(d.in_extension),
                ]
            })
            .collect(),
        View::SysMemory => {
            let m = tessera_database::memory::system_memory();
            let low = tessera_database::memory::low_water(m.total);
            let (high_signal, low_signal) = (m.available > 2 * low, m.available < low);
            let desc = match (high_signal, low_signal) {
                (true, _) => "Available physical memory is high",
                (_, true) => "Available physical memory is low",
                _ => "Physical memory usage is steady",
            };
            let kb = |b: u64| int((b >> 10) as i64);
            vec![vec![
                kb(m.total),
                kb(m.available),
                kb(m.total + m.swap_total),
                kb(m.available + m.swap_free),
                kb(m.cached),
                kb(m.slab_reclaimable),
                kb(m.slab_unreclaimable),
                bit(high_signal),
                bit(low_signal),
                s(desc),
            ]]
        }
        View::ProcessMemory => {
            let p = tessera_database::memory::process_memory();
            let m = tessera_database::memory::system_memory();
            let low = m.available < tessera_database::memory::low_water(m.total);
            let kb = |b: u64| int((b >> 10) as i64);
            // A 47-bit user address space.
            let address_space = 1u64 << 47;
            vec![vec![
                kb(p.resident),
                kb(p.huge_pages),
                kb(p.locked),
                kb(address_space),
                kb(p.virtual_size),
                kb(p.resident + p.swapped),
                kb(address_space.saturating_sub(p.virtual_size)),
                int(p.page_faults as i64),
                int((100 * p.resident).checked_div(p.resident + p.swapped).unwrap_or(100) as i64),
                kb(m.available + m.swap_free),
                bit(low),
                bit(false),
            ]]
        }
        View::Schemas => vec![
            vec![s("dbo"), int(1), int(1)],
            vec![s("guest"), int(2), int(2)],
            vec![s("INFORMATION_SCHEMA"), int(3), int(3)],
            vec![s("sys"), int(4), int(4)],
        ],
        View::Types => SYSTEM_TYPES
            .iter()
            .map(|(n, t)| {
                let (_, len, p, sc) = type_ids(t);
                let user_id = user_type_id(n, t);
                let sys_id = if *n == "sysname" { type_ids(t).0 } else { user_id };
                vec![
                    s(n),
                    int(sys_id),
                    int(user_id),
                    int(4),
                    int(len),
                    int(p),
                    int(sc),
                    bit(*n != "sysname"),
                    bit(false),
                ]
            })
            .collect(),
        View::Configurations => ctx
            .shared
            .config
            .all()
            .into_iter()
            .map(|(d, configured, running)| {
                vec![
                    int(i64::from(d.id)),
                    s(d.name),
                    int(configured),
                    int(d.minimum),
                    int(d.maximum),
                    int(running),
                    s(d.description),
                    bit(d.dynamic),
                    bit(d.advanced),
                ]
            })
            .collect(),
        View::ServerPrincipals | View::SqlLogins => {
            let principals = view == View::ServerPrincipals;
            let mut out = Vec::new();
            for login in ctx.shared.logins.all() {
                let mut row = vec![
                    s(&login.name),
                    int(i64::from(login.principal_id)),
                    Value::Binary(login.sid.clone().into()),
                    s("S"),
                    s("SQL_LOGIN"),
                    bit(login.disabled),
                    datetime(login.create_date),
                    datetime(login.modify_date),
                    s(&login.default_database),
                    s(&login.default_language),
                    Value::Null,
                ];
                if principals {
                    row.extend([Value::Null, bit(false)]);
                } else {
                    row.extend([
                        bit(login.check_policy),
                        bit(login.check_expiration),
                        Value::Binary(login.password_hash.as_bytes().into()),
                    ]);
                }
                out.push(row);
            }
            if principals {
                for (id, name) in crate::logins::SERVER_ROLES {
                    out.push(vec![
                        s(name),
                        int(i64::from(*id)),
                        Value::Binary(vec![*id as u8].into()),
                        s("R"),
                        s("SERVER_ROLE"),
                        bit(false),
                        datetime(0),
                        datetime(0),
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        int(1),
                        bit(*name != "public"),
                    ]);
                }
                out.sort_by_key(|r| match r[1] {
                    Value::Int(i) => i,
                    _ => 0,
                });
            }
            out
        }
        View::ServerRoleMembers => {
            let mut out = Vec::new();
            for login in ctx.shared.logins.all() {
                for (id, name) in crate::logins::SERVER_ROLES {
                    if *name != "public" && login.roles.iter().any(|r| r == name) {
                        out.push(vec![int(i64::from(*id)), int(i64::from(login.principal_id))]);
                    }
                }
            }
            out
        }
        View::Sessions | View::Requests => {
            let mut sessions: Vec<_> = ctx.shared.sessions.lock().values().cloned().collect();
            sessions.sort_by_key(|i| i.spid);
            let mut out = Vec::new();
            for info in sessions {
                let db_id = if ctx.shared.engine.exists(&info.database) {
                    ctx.shared.database(&info.database).map_or(0, |d| i64::from(d.id()))
                } else {
                    0
                };
                if view == View::Sessions {
                    out.push(vec![
                        int(i64::from(info.spid)),
                        datetime(info.login_time),
                        s(&info.host_name),
                        s(&info.program_name),
                        s(&info.login),
                        s(if info.status == "running" { "running" } else { "sleeping" }),
                        int(db_id),
                        int(i64::from(info.open_transactions)),
                        bit(true),
                    ]);
                } else if let Some(text) = &info.command {
                    let command = text
                        .split(|c: char| c.is_whitespace() || c == ';')
                        .find(|w| !w.is_empty() && !w.starts_with("--"))
                        .unwrap_or("")
                        .to_uppercase();
                    out.push(vec![
                        int(i64::from(info.spid)),
                        int(0),
                        s("running"),
                        s(&command),
                        int(db_id),
                        int(i64::from(info.open_transactions)),
                        s(text),
                    ]);
                }
            }
            out
        }
        View::Connections => {
            let mut sessions: Vec<_> = ctx.shared.sessions.lock().values().cloned().collect();
            sessions.sort_by_key(|i| i.spid);
            sessions
                .into_iter()
                .filter_map(|info| {
                    let c = info.connection?;
                    Some(vec![
                        int(i64::from(info.spid)),
                        int(i64::from(info.spid)),
                        datetime(info.login_time),
                        s("TCP"),
                        s("TSQL"),
                        int(i64::from(c.protocol_version)),
                        s(if c.encrypted { "TRUE" } else { "FALSE" }),
                        s("SQL"),
                        int(i64::from(c.packet_size)),
                        s(&c.client_address),
                        int(i64::from(c.client_port)),
                        s(&c.local_address),
                        int(i64::from(c.local_port)),
                    ])
                })
                .collect()
        }
        View::Objects
        | View::Tables
        | View::Columns
        | View::Indexes
        | View::InfoTables
        | View::InfoColumns
        | View::InfoRoutines
        | View::Procedures
        | View::Views
        | View::SqlModules
        | View::Parameters
        | View::IndexColumns
        | View::KeyConstraints
        | View::ForeignKeys
        | View::ForeignKeyColumns
        | View::CheckConstraints
        | View::DefaultConstraints => {
            let database = ctx.shared.database(db)?;
            let catalog = ctx.shared.catalog(&database)?;
            let mut out = Vec::new();
            for o in catalog.objects() {
                match (view, o) {
                    (View::Objects | View::Tables, Object::Table(t)) => {
                        let mut r = vec![
                            s(&t.name),
                            int(i64::from(t.id)),
                            Value::Null,
                            int(1),
                            int(0),
                            s("U "),
                            s("USER_TABLE"),
                            datetime(t.created),
                            datetime(t.modified),
                            bit(false),
                        ];
                        if view == View::Tables {
                            r.push(int(t.columns.len() as i64));
                        }
                        out.push(r);
                        if view == View::Objects {
                            for c in constraint_objects(t) {
                                out.push(vec![
                                    s(&c.name),
                                    int(i64::from(c.id)),
                                    Value::Null,
                                    int(1),
                                    int(i64::from(t.id)),
                                    s(&format!("{:<2}", c.kind)),
                                    s(c.object_desc),
                                    datetime(t.created),
                                    datetime(t.modified),
                                    bit(false),
                                ]);
                            }
                        }
                    }
                    (View::Objects, Object::Module(m)) => out.push(vec![
                        s(&m.name),
                        int(i64::from(m.id)),
                        Value::Null,
                        int(1),
                        int(0),
                        s(&format!("{:<2}", m.kind.type_code())),
                        s(match m.kind {
                            crate::catalog::ModuleKind::View => "VIEW",
                            crate::catalog::ModuleKind::Procedure => "SQL_STORED_PROCEDURE",
                            crate::catalog::ModuleKind::ScalarFunction => "SQL_SCALAR_FUNCTION",
                            crate::catalog::ModuleKind::TableFunction => "SQL_INLINE_TABLE_VALUED_FUNCTION",
                        }),
                        datetime(m.created),
                        datetime(m.modified),
                        bit(false),
                    ]),
                    (View::Columns, Object::Table(t)) => {
                        for (i, c) in t.columns.iter().enumerate() {
                            let (id, len, p, sc) = type_ids(&c.ty);
                            out.push(vec![
                                int(i64::from(t.id)),
                                s(&c.name),
                                int(i as i64 + 1),
                                int(id),
                                int(id),
                                int(len),
                                int(p),
                                int(sc),
                                if is_string(&c.ty) { s(COLLATION) } else { Value::Null },
                                bit(c.nullable),
                                bit(c.identity.is_some()),
                                bit(false),
                                int(0),
                            ]);
                        }
                    }
                    (View::Indexes, Object::Table(t)) => {
                        for ix in &t.indexes {
                            let (kind, desc) = match ix.id {
                                0 => (0, "HEAP"),
                                1 => (1, "CLUSTERED"),
                                _ => (2, "NONCLUSTERED"),
                            };
                            out.push(vec![
                                int(i64::from(t.id)),
                                if ix.is_heap() { Value::Null } else { s(&ix.name) },
                                int(i64::from(ix.id)),
                                int(kind),
                                s(desc),
                                bit(ix.unique),
                                bit(ix.primary_key),
                                bit(ix.unique_constraint),
                            ]);
                        }
                    }
                    (View::InfoTables, Object::Table(t)) => {
                        out.push(vec![s(database.name()), s(&t.schema), s(&t.name), s("BASE TABLE")]);
                    }
                    (View::InfoTables, Object::Module(m)) if m.kind == crate::catalog::ModuleKind::View => {
                        out.push(vec![s(database.name()), s(&m.schema), s(&m.name), s("VIEW")]);
                    }
                    (View::Procedures, Object::Module(m)) | (View::Views, Object::Module(m))
                        if (view == View::Procedures) == (m.kind == ModuleKind::Procedure)
                            && (view == View::Views) == (m.kind == ModuleKind::View) =>
                    {
                        out.push(vec![
                            s(&m.name),
                            int(i64::from(m.id)),
                            Value::Null,
                            int(1),
                            int(0),
                            s(&format!("{:<2}", m.kind.type_code())),
                            s(if m.kind == ModuleKind::View { "VIEW" } else { "SQL_STORED_PROCEDURE" }),
                            datetime(m.created),
                            datetime(m.modified),
                        ]);
                    }
                    (View::SqlModules, Object::Module(m)) => out.push(vec![int(i64::from(m.id)), s(&m.text)]),
                    (View::InfoRoutines, Object::Module(m))
                        if matches!(
                            m.kind,
                            ModuleKind::Procedure | ModuleKind::ScalarFunction | ModuleKind::TableFunction
                        ) =>
                    {
                        let is_proc = m.kind == ModuleKind::Procedure;
                        let text: String = m.text.chars().take(4000).collect();
                        out.push(vec![
                            s(database.name()),
                            s(&m.schema),
                            s(&m.name),
                            s(if is_proc { "PROCEDURE" } else { "FUNCTION" }),
                            if is_proc {
                                Value::Null
                            } else {
                                s(if m.kind == ModuleKind::TableFunction { "TABLE" } else { "" })
                            },
                            s(&text),
                            datetime(m.created),
                            datetime(m.modified),
                        ]);
                    }
                    (View::Parameters, Object::Module(m)) => {
                        for (i, p) in module_parameters(m).into_iter().enumerate() {
                            let ty = types::resolve_type(&p.ty, false).unwrap_or(SqlType::Int);
                            let (id, len, prec, sc) = type_ids(&ty);
                            out.push(vec![
                                int(i64::from(m.id)),
                                s(&p.name),
                                int(i as i64 + 1),
                                int(id),
                                int(id),
                                int(len),
                                int(prec),
                                int(sc),
                                bit(p.output),
                                bit(p.default.is_some()),
                            ]);
                        }
                    }
                    (View::IndexColumns, Object::Table(t)) => {
                        for ix in t.indexes.iter().filter(|ix| !ix.is_heap()) {
                            let mut n = 0;
                            for (k, &(c, desc)) in ix.columns.iter().enumerate() {
                                n += 1;
                                out.push(vec![
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
                                out.push(vec![
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
                    (View::KeyConstraints, Object::Table(t)) => {
                        for c in constraint_objects(t).into_iter().filter(|c| c.kind == "PK" || c.kind == "UQ") {
                            out.push(vec![
                                s(&c.name),
                                int(i64::from(c.id)),
                                int(i64::from(t.id)),
                                s(c.kind),
                                s(c.kind_desc),
                                c.index_id.map_or(Value::Null, |i| int(i64::from(i))),
                            ]);
                        }
                    }
                    (View::ForeignKeys, Object::Table(t)) => {
                        for (c, fk) in constraint_objects(t).into_iter().filter(|c| c.kind == "F").zip(&t.foreign_keys)
                        {
                            let action = |a: crate::catalog::Action| match a {
                                crate::catalog::Action::NoAction => "NO_ACTION",
                                crate::catalog::Action::Cascade => "CASCADE",
                                crate::catalog::Action::SetNull => "SET_NULL",
                                crate::catalog::Action::SetDefault => "SET_DEFAULT",
                            };
                            out.push(vec![
                                s(&c.name),
                                int(i64::from(c.id)),
                                int(i64::from(t.id)),
                                int(i64::from(fk.ref_table)),
                                s(action(fk.on_delete)),
                                s(action(fk.on_update)),
                            ]);
                        }
                    }
                    (View::ForeignKeyColumns, Object::Table(t)) => {
                        for (c, fk) in constraint_objects(t).into_iter().filter(|c| c.kind == "F").zip(&t.foreign_keys)
                        {
                            for (k, (&pc, &rc)) in fk.columns.iter().zip(&fk.ref_columns).enumerate() {
                                out.push(vec![
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
                    (View::CheckConstraints, Object::Table(t)) => {
                        for c in constraint_objects(t).into_iter().filter(|c| c.kind == "C") {
                            out.push(vec![
                                s(&c.name),
                                int(i64::from(c.id)),
                                int(i64::from(t.id)),
                                int(c.column),
                                s(&c.definition),
                            ]);
                        }
                    }
                    (View::DefaultConstraints, Object::Table(t)) => {
                        for c in constraint_objects(t).into_iter().filter(|c| c.kind == "D") {
                            out.push(vec![
                                s(&c.name),
                                int(i64::from(c.id)),
                                int(i64::from(t.id)),
                                int(c.column),
                                s(&c.definition),
                            ]);
                        }
                    }
                    (View::InfoColumns, Object::Table(t)) => {
                        for (i, c) in t.columns.iter().enumerate() {
                            let (_, len, p, sc) = type_ids(&c.ty);
                            let chars = match c.ty {
                                SqlType::NChar(_) | SqlType::NVarChar(_) if len > 0 => Value::Int(len / 2),
                                _ if is_string(&c.ty) || matches!(c.ty, SqlType::Binary(_) | SqlType::VarBinary(_)) => {
                                    Value::Int(len)
                                }
                                _ => Value::Null,
                            };
                            let numeric = matches!(
                                c.ty,
                                SqlType::TinyInt
                                    | SqlType::SmallInt
                                    | SqlType::Int
                                    | SqlType::BigInt
                                    | SqlType::Decimal { .. }
                                    | SqlType::Money
                                    | SqlType::SmallMoney
                                    | SqlType::Real
                                    | SqlType::Float
                            );
                            out.push(vec![
                                s(database.name()),
                                s(&t.schema),
                                s(&t.name),
                                s(&c.name),
                                int(i as i64 + 1),
                                c.default.as_ref().map_or(Value::Null, |d| s(&d.text)),
                                s(if c.nullable { "YES" } else { "NO" }),
                                s(types::base_type_name(&c.ty)),
                                chars,
                                if numeric { int(p) } else { Value::Null },
                                if numeric { int(sc) } else { Value::Null },
                            ]);
                        }
                    }
                    _ => {}
                }
            }
            out
        }
    })
}
