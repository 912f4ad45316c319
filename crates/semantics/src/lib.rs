//! tessera's T-SQL semantics. See README.md.

pub mod bind;
pub mod cache;
pub mod catalog;
pub mod frame;
pub mod locking;
pub mod output;
pub mod plan;
pub mod types;
