//! tessera's T-SQL execution. See README.md.

pub mod backup;
pub mod binding;
pub mod catalog_store;
pub mod checkdb;
pub mod config;
pub mod ddl;
pub mod dml;
pub mod encoding;
pub mod exec;
pub mod first_result;
pub mod fnv;
pub mod functions;
pub mod identity;
pub mod index_usage;
pub mod modules;
pub mod open_close_log;
pub mod query_store;
pub mod query_store_flusher;
pub mod read_locks;
pub mod runtime;
pub mod sequence_positions;
pub mod sequences;
pub mod statistics;
pub mod sysprocs;
pub mod sysviews;

pub use runtime::Shared;
