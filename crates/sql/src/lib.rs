//! tessera's T-SQL sessions. See README.md.

pub mod runner;
pub mod session;

pub use session::{start_instance, Session};
pub use tessera_errors::{ErrorDetail, SqlError, SqlResult};
pub use tessera_execution::ddl::principals::{check_contained_login, ContainedLogin};
pub use tessera_execution::runtime::{BulkTarget, ConnectionInfo, Shared, TableRows, VERSION};
pub use tessera_security::logins::{Accepted, Refusal};
pub use tessera_semantics::output::{Collected, ResultSink, SqlcmdFormat, SqlcmdWriter};
