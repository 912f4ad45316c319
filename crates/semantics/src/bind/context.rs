//! What the binder learns from outside the T-SQL semantics: the databases and their
//! catalogs, the system views, module definitions parsed once, and the session settings
//! that change what a statement means. The execution layer implements both traits (for
//! its shared server state and its session state).

use std::sync::Arc;

use crate::cache::CachedBatch;
use crate::catalog::Catalog;
use crate::plan::{Prepared, View};
use crate::types::KeyEncoding;
use tessera_errors::SqlResult;

/// The server's databases, as a statement's names find them.
pub trait Catalogs {
    /// Whether a database of that name exists (any case).
    fn exists(&self, database: &str) -> bool;
    /// The database's name as it is spelt, and a snapshot of its current catalog; error
    /// 911 when there is no such database.
    fn catalog(&self, database: &str) -> SqlResult<(Arc<str>, Arc<Catalog>)>;
    /// The system view `schema.name` (both lower case), if there is one.
    fn system_view(&self, schema: &str, name: &str) -> Option<View>;
    /// A system table-valued function by its lower-case name (`fn_my_permissions`).
    fn system_function(&self, name: &str) -> Option<View>;
    /// A module's definition parsed, shared by every database that defines it the same.
    fn module_definition(&self, text: &str) -> SqlResult<Arc<CachedBatch<Prepared>>>;
}

/// The session settings a statement is bound under.
pub trait SessionNames {
    /// The session's current database.
    fn database(&self) -> &str;
    /// The real name in tempdb of the session's `#temp` table or table variable
    /// (`name` lower case, with its `#` or `@`).
    fn temp_table(&self, name: &str) -> Option<&str>;
    /// SET ANSI_NULLS.
    fn ansi_nulls(&self) -> bool;
    /// SET CONCAT_NULL_YIELDS_NULL.
    fn concat_null_yields_null(&self) -> bool;
    /// SET IDENTITY_INSERT … ON: the table (database, object id) whose identity column
    /// takes explicit values.
    fn identity_insert(&self) -> Option<(&str, i32)>;
    /// SET DATEFORMAT, which constants converted while binding are read in.
    fn dateformat(&self) -> &str;
    /// The session user's default schema in the current database, where one-part names
    /// are looked for before dbo (and where objects they name are created).
    fn default_schema(&self) -> &str;
    /// In a trigger's body: its table (database, schema, name), whose rows the names
    /// `inserted` and `deleted` read.
    fn trigger_table(&self) -> Option<(String, String, String)> {
        None
    }
    /// Storage's key form of values, for folding CHECKSUM of constants (none: not folded).
    fn key_encoding(&self) -> Option<&'static dyn KeyEncoding> {
        None
    }
    /// The database's catalog as this session sees it: without the objects its open
    /// transaction dropped, which other sessions still see (and wait for) until it
    /// commits. A changed catalog carries a version of its own, so no plan bound against
    /// it is taken for one bound against the shared catalog.
    fn own_view(&self, database: &str, catalog: Arc<Catalog>) -> Arc<Catalog> {
        let _ = database;
        catalog
    }
}
