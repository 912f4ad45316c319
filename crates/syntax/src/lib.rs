//! T-SQL syntax: the lexer, the parser and its syntax tree, the unparser, and splitting a
//! sqlcmd script into batches. Nothing here knows about storage, catalogs or types'
//! values; see README.md.

pub mod ast;
pub mod lexer;
pub mod parser;
pub mod references;
pub mod script;
pub mod unparse;
