//! The bottom of the tree: every error tessera can report. The storage engine's failures
//! ([`Error`]), errors in SQL Server's shape ([`SqlError`]), and how one becomes the other.
//! No dependency on any other tessera crate, so every layer — the storage engine and the
//! T-SQL syntax layer alike — can use it.

pub mod catalog;
/// The catalog's errors by name (`msg::DUPLICATE_KEY.with(&[…])`): what call sites raise.
pub use catalog::messages as msg;
mod engine;
mod sql;

pub use engine::{Error, Result};
pub use sql::{ErrorDetail, SqlError, SqlResult};
