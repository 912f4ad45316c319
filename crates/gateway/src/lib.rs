//! Many servers behind one address (issue 39, "Out"): the tenant directory in etcd
//! (`directory`: which servers are up, which holds each database, published by each
//! server under a lease) and the TDS gateway that routes each connection to the server
//! that holds its database (`proxy`), each server's side of the directory (`publish`)
//! and moving a tenant between servers while in use (`mover`). See `README.md` beside
//! this crate.

pub mod directory;
pub mod etcd;
pub mod mover;
pub mod proxy;
pub mod publish;
pub mod redirect;
