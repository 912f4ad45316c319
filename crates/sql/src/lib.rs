//! tessera's T-SQL layer. See README.md.

pub mod backup;
pub mod checkdb;
pub mod config;
pub mod ddl;
pub mod dml;

pub mod exec;
pub mod logins;
pub mod modules;
pub mod runner;
pub mod runtime;
pub mod security;
pub mod session;
pub mod statistics;
pub mod sysprocs;
pub mod sysviews;

pub use runtime::Shared;
pub use session::Session;
pub use tessera_errors::{SqlError, SqlResult};
pub use tessera_semantics::output::{Collected, ResultSink, SqlcmdFormat, SqlcmdWriter};
