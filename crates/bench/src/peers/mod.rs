//! The peers tessera is measured against, in-process, on files in a directory the caller gives.
//! Every function has the signature of its counterpart in [`crate::tessera_side`].

pub mod lmdb;
pub mod pgwire;
pub mod postgres;
pub mod sqlite;
