//! Many servers behind one address (issue 39, "Out"): the tenant directory in etcd
//! (`directory`: which servers are up, which holds each database, published by each
//! server under a lease), the TDS gateway that routes each connection to the server that
//! holds its database (`proxy`, `redirect`, `passthrough`), each server's side of the directory
//! (`publish`), moving a tenant between servers while in use (`mover`) and keeping
//! servers within a load band (`rebalance`). See `README.md` beside this crate.

pub mod directory;
pub mod etcd;
pub mod mover;
pub mod passthrough;
pub mod proxy;
pub mod publish;
pub mod rebalance;
pub mod redirect;
pub mod stats;
