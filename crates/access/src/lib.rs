//! The access layer: B+tree indexes over the buffer pool, row and key formats, space
//! allocation, locks and transactions. See `README.md` beside this crate.

pub mod account;
pub mod btree;
pub mod bulk;
pub mod changes;
pub mod key;
pub mod lob;
pub mod lock;
pub mod mtr;
pub mod ops;
pub mod read;
pub mod reserve;
pub mod row;
pub mod slotted;
pub mod space;
pub mod txn;
pub mod versions;

pub use account::PageAccount;
pub use btree::Direction;
pub use bulk::BulkOutcome;
pub use lock::LockMode;
pub use read::{OnLocked, ReadLocks, RowLock, Scan};
pub use space::Space;
pub use txn::{Durability, Hold, Txn};
pub use versions::{Snapshot, Versioning};
