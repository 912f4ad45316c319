//! Databases and the engine that hosts thousands of them in one process. This is the
//! embedded API the SQL layer (and any Rust program) uses. See `README.md` beside this
//! crate.
//!
//! ```no_run
//! use tessera_database::{Engine, EngineConfig, DatabaseOptions};
//!
//! # fn main() -> tessera_errors::Result<()> {
//! let engine = Engine::open(EngineConfig::new("/var/lib/tessera"))?;
//! engine.create_database("shop", DatabaseOptions::default())?;
//! let db = engine.database("shop")?;            // opened on first use
//! let orders = db.create_table("orders")?;      // a clustered B+tree
//! let mut tx = db.begin();
//! tx.insert(orders, b"order-1", b"2 apples")?;
//! tx.commit()?;                                 // durable when it returns
//! let tx = db.begin();
//! assert_eq!(tx.get(orders, b"order-1")?.as_deref(), Some(&b"2 apples"[..]));
//! tx.commit()?;
//! # Ok(()) }
//! ```

mod database;
mod decisions;
mod engine;
pub mod memory;
pub mod redefinitions;
mod registry;
pub use registry::{DbState, Entry as DatabaseEntry};
mod transaction;

pub use database::{
    is_session_lock_owner, session_lock_owner, BackupChain, BackupPoint, Database, DatabaseOptions, DelayedDurability,
    RecoveryModel, ResourceLimits, TableId,
};
pub use engine::{
    with_lowercase, BufferDescriptor, DatabaseEvent, DatabaseListener, Engine, EngineConfig, EngineStats, Exclusive,
};
pub use tessera_access::btree::TreeStats;
pub use tessera_access::lob::FreeEntry as LobFreeEntry;
pub use tessera_access::lob::Pin as LobPin;
pub use tessera_access::lob::Rewriter as LobRewriter;
pub use tessera_access::lob::Writer as LobWriter;
pub use tessera_access::lock::Wait as LockWait;
pub use tessera_access::row::OffRow;
pub use tessera_access::space::DataConfig;
pub use tessera_access::versions::VersionUsage;
pub use tessera_access::{
    BulkOutcome, Direction, Hold, LockMode, OnLocked, PageAccount, ReadLocks, RowLock, Snapshot, Versioning,
};
pub use tessera_buffer::{ExtensionStats, FileUsage, HugePages, PoolStats, PAGE_SIZE};
pub use tessera_errors::{Error, Result};
pub use tessera_io::DirLock;
pub use tessera_log::recovery::RecoveryOutcome;
pub use tessera_log::{Growth, LogConfig};
pub use transaction::{transaction_counts, NotCommitted, Savepoint, Transaction, TransactionCounts};
