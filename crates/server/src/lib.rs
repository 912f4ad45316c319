//! tessera's TDS server: SQL Server's wire protocol over the T-SQL layer. See README.md.

pub mod client;
pub mod login;
pub mod packet;
pub mod rpc;
pub mod server;
pub mod tls;
pub mod tokens;

pub use server::{serve, ServerConfig};
