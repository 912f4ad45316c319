//! tessera's T-SQL layer. See README.md.

pub mod backup;
pub mod bind;
pub mod cache;
pub mod catalog;
pub mod checkdb;
pub mod config;
pub mod ddl;
pub mod dml;

pub mod locking;
pub mod logins;
pub mod modules;
pub mod output;
pub mod plan;
pub mod runner;
pub mod runtime;
pub mod security;
pub mod session;
pub mod statistics;
pub mod sysprocs;
pub mod sysviews;
pub mod types;

pub use output::{Collected, ResultSink, SqlcmdFormat, SqlcmdWriter};
pub use runtime::Shared;
pub use session::Session;
pub use tessera_errors::{SqlError, SqlResult};
