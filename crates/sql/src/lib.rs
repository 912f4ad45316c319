//! tessera's T-SQL layer. See README.md.

pub mod ast;
pub mod error;
pub mod lexer;
pub mod parser;
pub mod script;
pub mod types;

pub use error::{SqlError, SqlResult};
