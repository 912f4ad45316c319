//! System views (`sys.*`, `INFORMATION_SCHEMA.*`): relations computed when a query reads
//! them, from the engine, the catalogs and the plan cache, so they join and filter like
//! tables.
//!
//! Each view is defined once, as a [`ViewDef`]: its schema and name, its columns and the
//! function that makes its rows, side by side. The number of columns `N` is part of the
//! definition's type: the columns are a `[Col; N]` and every row is a `[Value; N]`, so a
//! view cannot gain or lose a column without every row it makes following (the compiler
//! checks it); `tests.rs` reads every view and checks each value against its column's
//! type and nullability. [`ALL`] lists the definitions; a plan names one by [`View`].
//!
//! One file per family:
//! - `databases`: sys.databases, database_files, master_files, data_spaces, filegroups
//! - `objects`: sys.objects, tables, views, procedures, sql_modules, parameters,
//!   sequences and triggers
//! - `properties`: sys.extended_properties and fn_listextendedproperty
//! - `columns`: sys.columns, identity_columns, computed_columns, sys.types
//! - `information_schema`: the INFORMATION_SCHEMA views (tables, columns, views, routines,
//!   schemata, constraints and the columns and tables they use, sequences; what views and
//!   functions use, domains, table and column privileges)
//! - `indexes`: sys.indexes, index_columns, key/check/default constraints, foreign keys
//!   and their columns (and constraints as objects, for sys.objects)
//! - `dmv`: the dynamic management views (sessions, connections, cached plans,
//!   performance counters, memory, the buffer pool and its extension, tessera's
//!   per-database request limits); the machine, the process and its CPUs
//!   (sys.dm_os_sys_info, sys.dm_os_schedulers) are in `os`
//! - `requests`: sys.dm_exec_requests, and a request's text (dm_exec_sql_text,
//!   dm_exec_input_buffer)
//! - `waits`: sys.dm_os_wait_stats and sys.dm_exec_session_wait_stats
//! - `query_stats`: sys.dm_exec_query_stats (what each cached statement plan's runs cost)
//!   and sys.dm_exec_procedure_stats (what each cached procedure's calls cost)
//! - `query_store`: the Query Store views (sys.query_store_*, sys.query_context_settings,
//!   sys.database_query_store_options)
//! - `io_stats`: the function sys.dm_io_virtual_file_stats (each open database's files)
//! - `locks`: sys.dm_tran_locks, and how lock resources are named
//! - `index_usage`: sys.dm_db_index_usage_stats, the function
//!   sys.dm_db_index_operational_stats, and the missing-index views
//! - `transactions`: sys.dm_tran_active_transactions, dm_tran_session_transactions,
//!   dm_tran_database_transactions, and DBCC OPENTRAN's oldest transaction
//! - `space_usage`: sys.dm_db_log_space_usage, dm_db_file_space_usage, DBCC SQLPERF(LOGSPACE)
//! - `security`: sys.server_principals, sql_logins, server_role_members, server_permissions
//! - `principals`: sys.database_principals, database_role_members, database_permissions,
//!   schemas, sysusers
//! - `storage`: sys.partitions, allocation_units, stats and stats_columns
//! - `dependencies`: sys.sql_expression_dependencies, and what sp_depends reports
//! - `describe`: how a first result set is described (sp_describe_first_result_set and
//!   the function sys.dm_exec_describe_first_result_set)
//! - `config`: sys.configurations
//! - `messages`: sys.messages, from the error catalog
//! - `resource_governor`: sys.resource_governor_* and sys.dm_resource_governor_*
//! - `system_types`: the system types' ids and sizes (sys.types, sys.columns, TYPE_ID, TYPE_NAME)
//! - `functions`: the system table-valued functions (fn_my_permissions, and
//!   fn_listextendedproperty from `properties`)
//! - `system_objects`: the system views as objects: sys.system_objects, system_views,
//!   system_columns, all_objects, all_views, all_columns
//! - `absent`: the catalogs of kinds of objects tessera has none of yet (assemblies, XML
//!   schema collections, queues and services, partition schemes and functions)

mod absent;
mod columns;
mod config;
mod databases;
mod dependencies;
pub(crate) mod describe;
mod dmv;
pub mod functions;
mod index_usage;
mod indexes;
mod information_schema;
mod io_stats;
mod locks;
mod messages;
mod objects;
mod os;
mod principals;
mod properties;
mod query_stats;
mod query_store;
mod requests;
mod resource_governor;
mod security;
mod space_usage;
mod storage;
mod system_objects;
pub(crate) mod system_types;
#[cfg(test)]
mod tests;
mod transactions;
mod waits;

use std::sync::Arc;

use crate::runtime::ExecCtx;
use tessera_database::Database;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::Catalog;
use tessera_semantics::plan::{Col, Row, View};
use tessera_semantics::types::{SqlType, Value};

pub use databases::{growth_in_force, FileKind};
pub(crate) use dependencies::{dependencies, object_kind};
pub(crate) use indexes::{constraint_objects, ConstraintObject};
pub(crate) use information_schema::columns_named;
pub(crate) use objects::module_signature;
pub(crate) use properties::module_level_type;
pub(crate) use requests::command;
pub use requests::input_buffer;
pub use space_usage::{log_space, LogSpace};
pub(crate) use system_objects::{view_id, view_named};
pub use system_types::{type_id, type_name};
pub use transactions::{oldest_active, OldestTransaction};

/// Every system view. Names are unique and lower case (a lookup lowers the name it is given).
static ALL: &[&dyn SystemView] = &[
    &databases::DATABASES,
    &databases::DATABASE_FILES,
    &databases::MASTER_FILES,
    &databases::DATA_SPACES,
    &databases::FILEGROUPS,
    &objects::OBJECTS,
    &objects::TABLES,
    &objects::VIEWS,
    &objects::PROCEDURES,
    &objects::SQL_MODULES,
    &objects::PARAMETERS,
    &properties::EXTENDED_PROPERTIES,
    &objects::SEQUENCES,
    &objects::SYNONYMS,
    &objects::TRIGGERS,
    &dependencies::SQL_EXPRESSION_DEPENDENCIES,
    &principals::SCHEMAS,
    &principals::DATABASE_PRINCIPALS,
    &principals::DATABASE_ROLE_MEMBERS,
    &principals::DATABASE_PERMISSIONS,
    &principals::SYSUSERS,
    &absent::ASSEMBLIES,
    &absent::XML_SCHEMA_COLLECTIONS,
    &absent::SERVICE_QUEUES,
    &absent::SERVICES,
    &absent::PARTITION_SCHEMES,
    &absent::PARTITION_FUNCTIONS,
    &columns::TABLE_TYPES,
    &information_schema::ROUTINES,
    &columns::COLUMNS,
    &columns::IDENTITY_COLUMNS,
    &columns::COMPUTED_COLUMNS,
    &columns::TYPES,
    &information_schema::TABLES,
    &information_schema::COLUMNS,
    &information_schema::VIEWS,
    &information_schema::SCHEMATA,
    &information_schema::PARAMETERS,
    &information_schema::TABLE_CONSTRAINTS,
    &information_schema::KEY_COLUMN_USAGE,
    &information_schema::REFERENTIAL_CONSTRAINTS,
    &information_schema::CONSTRAINT_COLUMN_USAGE,
    &information_schema::CONSTRAINT_TABLE_USAGE,
    &information_schema::CHECK_CONSTRAINTS,
    &information_schema::SEQUENCES,
    &information_schema::VIEW_TABLE_USAGE,
    &information_schema::VIEW_COLUMN_USAGE,
    &information_schema::ROUTINE_COLUMNS,
    &information_schema::DOMAINS,
    &information_schema::COLUMN_DOMAIN_USAGE,
    &information_schema::TABLE_PRIVILEGES,
    &information_schema::COLUMN_PRIVILEGES,
    &indexes::INDEXES,
    &indexes::INDEX_COLUMNS,
    &indexes::KEY_CONSTRAINTS,
    &indexes::FOREIGN_KEYS,
    &indexes::FOREIGN_KEY_COLUMNS,
    &indexes::CHECK_CONSTRAINTS,
    &indexes::DEFAULT_CONSTRAINTS,
    &storage::PARTITIONS,
    &storage::ALLOCATION_UNITS,
    &storage::STATS,
    &storage::STATS_COLUMNS,
    &databases::TESSERA_DATABASES,
    &databases::VERSION_STORE_SPACE_USAGE,
    &databases::ACTIVE_SNAPSHOT_TRANSACTIONS,
    &dmv::EXEC_SESSIONS,
    &requests::EXEC_REQUESTS,
    &query_stats::EXEC_QUERY_STATS,
    &query_stats::EXEC_PROCEDURE_STATS,
    &query_store::DATABASE_QUERY_STORE_OPTIONS,
    &query_store::QUERY_TEXT,
    &query_store::QUERY,
    &query_store::PLAN,
    &query_store::RUNTIME_STATS_INTERVAL,
    &query_store::RUNTIME_STATS,
    &query_store::WAIT_STATS,
    &query_store::CONTEXT_SETTINGS,
    &waits::OS_WAIT_STATS,
    &waits::EXEC_SESSION_WAIT_STATS,
    &locks::TRAN_LOCKS,
    &transactions::TRAN_ACTIVE_TRANSACTIONS,
    &transactions::TRAN_SESSION_TRANSACTIONS,
    &transactions::TRAN_DATABASE_TRANSACTIONS,
    &space_usage::DB_LOG_SPACE_USAGE,
    &space_usage::DB_FILE_SPACE_USAGE,
    &dmv::EXEC_CONNECTIONS,
    &dmv::EXEC_CACHED_PLANS,
    &dmv::OS_PERFORMANCE_COUNTERS,
    &dmv::OS_SYS_MEMORY,
    &dmv::OS_PROCESS_MEMORY,
    &os::OS_SYS_INFO,
    &os::OS_SCHEDULERS,
    &dmv::OS_BUFFER_DESCRIPTORS,
    &dmv::OS_BUFFER_POOL_EXTENSION_CONFIGURATION,
    &dmv::TESSERA_RESOURCE_LIMITS,
    &resource_governor::CONFIGURATION,
    &resource_governor::DM_CONFIGURATION,
    &resource_governor::POOLS,
    &resource_governor::DM_POOLS,
    &resource_governor::GROUPS,
    &resource_governor::DM_GROUPS,
    &security::SERVER_PRINCIPALS,
    &security::SQL_LOGINS,
    &security::SERVER_ROLE_MEMBERS,
    &security::SERVER_PERMISSIONS,
    &config::CONFIGURATIONS,
    &messages::MESSAGES,
    &system_objects::SYSTEM_OBJECTS,
    &system_objects::ALL_OBJECTS,
    &system_objects::SYSTEM_VIEWS,
    &system_objects::ALL_VIEWS,
    &system_objects::SYSTEM_COLUMNS,
    &system_objects::ALL_COLUMNS,
    &index_usage::INDEX_USAGE_STATS,
    &index_usage::MISSING_INDEX_DETAILS,
    &index_usage::MISSING_INDEX_GROUPS,
    &index_usage::MISSING_INDEX_GROUP_STATS,
];

/// One system table-valued function (`functions` lists them): its name (lower case), its
/// columns and how its rows are made from its arguments.
pub struct FunctionDef<const N: usize> {
    pub name: &'static str,
    pub columns: [Col; N],
    /// The rows for the arguments (evaluated), read in database `db`.
    pub rows: fn(&ExecCtx, &str, &[Value]) -> Rows<N>,
}

/// One system view: where it is found, its columns and how its rows are made.
pub struct ViewDef<const N: usize> {
    /// `sys` or `information_schema` (lower case).
    pub schema: &'static str,
    /// Lower case.
    pub name: &'static str,
    pub columns: [Col; N],
    /// The rows, read in database `db` (the catalog views list its objects; the others
    /// are the same from every database). One value per column, in column order.
    pub rows: fn(&ExecCtx, &str) -> Rows<N>,
}

const fn col(name: &'static str, ty: SqlType, nullable: bool) -> Col {
    Col { name, ty, nullable }
}

/// The columns sys.database_permissions and sys.server_permissions share (SQL Server's).
const PERMISSION_COLUMNS: [Col; 10] = [
    col("class", SqlType::TinyInt, false),
    col("class_desc", SqlType::NVarChar(60), true),
    col("major_id", SqlType::Int, false),
    col("minor_id", SqlType::Int, false),
    col("grantee_principal_id", SqlType::Int, false),
    col("grantor_principal_id", SqlType::Int, false),
    col("type", SqlType::Char(4), false),
    col("permission_name", SqlType::NVarChar(128), true),
    col("state", SqlType::Char(1), false),
    col("state_desc", SqlType::NVarChar(60), true),
];

/// The rows of a view of `N` columns.
pub type Rows<const N: usize> = SqlResult<Vec<[Value; N]>>;

/// A view definition of any width, as [`ALL`] holds it.
pub trait SystemView: Sync {
    fn schema(&self) -> &'static str;
    fn name(&self) -> &'static str;
    fn columns(&'static self) -> &'static [Col];
    fn rows(&self, ctx: &ExecCtx, db: &str) -> SqlResult<Vec<Row>>;
}

impl<const N: usize> SystemView for ViewDef<N> {
    fn schema(&self) -> &'static str {
        self.schema
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn columns(&'static self) -> &'static [Col] {
        &self.columns
    }

    fn rows(&self, ctx: &ExecCtx, db: &str) -> SqlResult<Vec<Row>> {
        Ok((self.rows)(ctx, db)?.into_iter().map(Vec::from).collect())
    }
}

/// The system view `schema.name` (both lower case), if there is one.
pub fn lookup(schema: &str, name: &str) -> Option<View> {
    let id = ALL.iter().position(|v| v.schema() == schema && v.name() == name)?;
    let view = ALL[id];
    Some(View { id, schema: view.schema(), name: view.name(), columns: view.columns() })
}

/// Every system view.
pub fn all() -> impl Iterator<Item = View> {
    ALL.iter().filter_map(|v| lookup(v.schema(), v.name()))
}

/// The rows of `view` read in database `db`.
pub fn rows(view: View, db: &str, ctx: &ExecCtx) -> SqlResult<Vec<Row>> {
    ALL[view.id].rows(ctx, db)
}

// Shared by the families.

const SYSNAME: SqlType = SqlType::NVarChar(128);
/// `nvarchar(max)`.
const NVARCHAR_MAX: SqlType = SqlType::NVarChar(tessera_access::row::MAX);
const COLLATION: &str = "SQL_Latin1_General_CP1_CI_AS";

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
pub(crate) fn datetime(epoch: i64) -> Value {
    // Days from 0001-01-01 to 1970-01-01.
    const UNIX_DAYS: i64 = 719_162;
    let days = epoch.div_euclid(86_400) + UNIX_DAYS;
    let ticks = epoch.rem_euclid(86_400) as u64 * 10_000_000;
    Value::DateTime { days: days as i32, ticks }
}

/// The columns `a` then `b`, for views that share some of their columns.
const fn concat_columns<const A: usize, const B: usize, const C: usize>(a: [Col; A], b: [Col; B]) -> [Col; C] {
    assert!(A + B == C, "C columns are A columns and B columns");
    let mut out = [col("", SqlType::Int, false); C];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < C {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

/// The values `a` then `b` as one row, for views that share their first columns.
fn concat<const A: usize, const B: usize, const C: usize>(a: [Value; A], b: [Value; B]) -> [Value; C] {
    const { assert!(A + B == C, "a row of C values is A values and B values") };
    let mut values = a.into_iter().chain(b);
    std::array::from_fn(|_| values.next().expect("A + B = C values"))
}

/// The server-wide DMVs need VIEW SERVER STATE: without it, SQL Server's errors 300 and
/// 297.
fn server_state(ctx: &ExecCtx) -> SqlResult<()> {
    if ctx.shared.holds_server(ctx.session, "VIEW SERVER STATE") {
        return Ok(());
    }
    let denied = tessera_errors::msg::SERVER_PERMISSION_DENIED.with(&[&"VIEW SERVER STATE", &"server", &"master"]);
    Err(tessera_errors::msg::ACTION_PERMISSION_DENIED.err().after(denied))
}

/// The `schema_id` of a schema of database `db`, by name.
pub(super) fn schema_ids(ctx: &ExecCtx, db: &str) -> tessera_errors::SqlResult<impl Fn(&str) -> Value> {
    let security = ctx.shared.security(&ctx.session.catalog_memo, db)?;
    Ok(move |schema: &str| int(i64::from(security.schema(schema).map_or(1, |s| s.id))))
}

/// Database `db` and its current catalog as the session may see it, for the views that
/// list its objects: only the objects it holds some permission on (all of them for dbo
/// and sysadmins).
pub(crate) fn catalog(ctx: &ExecCtx, db: &str) -> SqlResult<(Arc<Database>, Arc<Catalog>)> {
    let database = ctx.shared.database(db)?;
    let catalog = ctx.catalog(&database)?;
    let (security, token) = ctx.shared.access(ctx.session, database.name())?;
    if token.unrestricted {
        return Ok((database, catalog));
    }
    let seen = catalog
        .objects()
        .into_iter()
        .filter(|o| tessera_security::principals::check::may_see(&security, &token, o.schema(), o.id()))
        .cloned()
        .collect();
    Ok((database, Arc::new(Catalog::from_objects(catalog.version, seen))))
}

/// The views of `catalog` (database `db`) with what their definitions bind to now (their
/// columns and the tables and columns they read); a view that no longer binds (a table it
/// reads was dropped) is left out.
pub(crate) fn view_shapes(
    ctx: &ExecCtx,
    db: &str,
    catalog: &Catalog,
) -> Vec<(Arc<tessera_semantics::catalog::Module>, tessera_semantics::bind::ModuleShape)> {
    module_shapes(ctx, db, catalog, &[tessera_semantics::catalog::ModuleKind::View])
}

/// [`view_shapes`] for the modules of `kinds` (views and inline table-valued functions).
pub(crate) fn module_shapes(
    ctx: &ExecCtx,
    db: &str,
    catalog: &Catalog,
    kinds: &[tessera_semantics::catalog::ModuleKind],
) -> Vec<(Arc<tessera_semantics::catalog::Module>, tessera_semantics::bind::ModuleShape)> {
    use tessera_semantics::catalog::Object;
    let mut out = Vec::new();
    for o in catalog.objects() {
        let Object::Module(m) = o else { continue };
        if !kinds.contains(&m.kind) {
            continue;
        }
        let mut binder = tessera_semantics::bind::Binder::new(ctx.shared, &*ctx.session, &[]);
        if let Ok(shape) = binder.module_shape(db, m) {
            out.push((m.clone(), shape));
        }
    }
    out
}

/// Whether the session may read the definitions of database `db`'s objects: a test of
/// (schema, object id) — VIEW DEFINITION on the object (or what implies it: CONTROL,
/// owning its schema, sysadmin), as SQL Server asks before it shows a module's text.
pub(crate) fn definitions_visible(ctx: &ExecCtx, db: &str) -> SqlResult<impl Fn(&str, i32) -> bool> {
    use tessera_security::principals::check::{allowed, On};
    let (security, token) = ctx.shared.access(ctx.session, db)?;
    Ok(move |schema: &str, id: i32| allowed(&security, &token, "VIEW DEFINITION", On::Object { schema, id }))
}
