//! What the binder learns from the server and the session (see
//! `tessera_semantics::bind::context`): catalogs, system views and parsed module
//! definitions from the shared state, and the settings that change a statement's
//! meaning from the session.

use std::sync::Arc;

use crate::runtime::{SessionState, Shared};
use tessera_errors::SqlResult;
use tessera_semantics::bind::{Catalogs, SessionNames};
use tessera_semantics::cache::CachedBatch;
use tessera_semantics::catalog::Catalog;
use tessera_semantics::plan::{Prepared, View};
use tessera_semantics::types::KeyEncoding;

impl Catalogs for Shared {
    fn exists(&self, database: &str) -> bool {
        self.engine.exists(database)
    }

    fn catalog(&self, database: &str) -> SqlResult<(Arc<str>, Arc<Catalog>)> {
        let of = self.catalog_named(database)?;
        Ok((of.database, of.catalog))
    }

    fn system_view(&self, schema: &str, name: &str) -> Option<View> {
        crate::sysviews::lookup(schema, name)
    }

    fn system_function(&self, name: &str) -> Option<View> {
        crate::sysviews::functions::lookup(name)
    }

    fn module_definition(&self, text: &str) -> SqlResult<Arc<CachedBatch<Prepared>>> {
        self.plans.get_or_parse(text, tessera_syntax::parser::parse_batch)
    }
}

impl SessionNames for SessionState {
    fn database(&self) -> &str {
        &self.database
    }

    fn trigger_table(&self) -> Option<(String, String, String)> {
        let frame = self.triggers.last()?;
        Some((frame.db.clone(), frame.table.schema.clone(), frame.table.name.clone()))
    }

    fn temp_table(&self, name: &str) -> Option<&str> {
        self.temp_tables.get(name).map(String::as_str)
    }

    fn ansi_nulls(&self) -> bool {
        self.options.ansi_nulls
    }

    fn concat_null_yields_null(&self) -> bool {
        self.options.concat_null_yields_null
    }

    fn identity_insert(&self) -> Option<(&str, i32)> {
        self.options.identity_insert.as_ref().map(|(db, id)| (db.as_str(), *id))
    }

    fn dateformat(&self) -> &str {
        &self.options.dateformat
    }

    fn default_schema(&self) -> &str {
        &self.default_schema
    }
    fn key_encoding(&self) -> Option<&'static dyn KeyEncoding> {
        self.functions.keys
    }

    fn own_view(&self, database: &str, catalog: Arc<Catalog>) -> Arc<Catalog> {
        SessionState::own_view(self, database, catalog)
    }
}
