//! tessera's workload benchmarks: each runs tessera and its peers in the same process and run,
//! and reports figures, ratios and goals by the project's one convention ([`report`]).
//!
//! - [`report`]: the result model and its outputs (table, JSON, chart).
//! - [`machine`]: the machine a run happened on, with its measured fdatasync latency.
//! - [`workload`]: the engine workloads' parameters, data and figures.
//! - [`peers`]: SQLite and LMDB running those workloads.
//! - [`tessera_side`]: tessera running them.
//! - [`engine`]: `tessera bench engine`, the storage-engine benchmark.
//! - [`sql`]: `tessera bench sql`, seed 002's point select through the T-SQL layer.
//! - [`pointselect`]: `tessera bench pointselect`, the same over TDS against PostgreSQL.
//! - [`tdsload`]: the lean TDS load generator `pointselect` drives tessera with.
//! - [`plancache`]: `tessera bench plancache`, thousands of tenant databases of one schema
//!   sharing their procedures' compiled plans (tenants made by `tenants`).
//! - [`consolidation`]: `tessera bench consolidation`, seed 000's PACE-like tenants under a
//!   mix of procedure calls at 500 … 8,000 databases, against PostgreSQL's two ways of
//!   serving many tenants.
//! - [`noisy`]: `tessera bench noisy`, quiet tenants' latency beside a noisy tenant, alone,
//!   without and with its resource limits, against PostgreSQL.
//! - [`benchbase`]: `tessera bench benchbase`, BenchBase's TPC-C, YCSB, SmallBank and TATP
//!   through mssql-jdbc against the same through pgjdbc on PostgreSQL.
//! - [`fleet`]: `tessera bench fleet`, three servers behind two gateways (a tenant directory
//!   in etcd) against one server holding every tenant: throughput, the proxy's latency and
//!   the write pause of moving tenants between servers.
//! - [`streaming`]: `tessera bench streaming`, `SELECT *` of a table larger than memory
//!   over TDS against PostgreSQL, read by [`tdsstream`] and sampled by [`rss`].

pub mod backup;
pub mod benchbase;
pub mod bpe;
pub mod burst;
mod chart;
pub mod consolidation;
pub mod contention;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod fleet;
pub mod lob;
pub mod machine;
pub mod noisy;
pub mod observed;
pub mod peers;
pub mod plancache;
pub mod pointselect;
pub mod rcsi;
pub mod report;
pub mod rss;
pub mod sql;
pub mod streaming;
pub mod tdsload;
pub mod tdsstream;
mod tenants;
pub mod tessera_side;
pub mod workload;

pub use error::{BenchError, Result};
pub use machine::Machine;
pub use report::{Report, ResultRow};
pub use workload::{EngineParams, Figures};
