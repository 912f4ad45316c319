//! Locks: sys.dm_tran_locks (every lock request of every open database, granted or
//! waiting), and the names SQL Server gives a lock's resource, which a blocked request's
//! `wait_resource` (sys.dm_exec_requests) shares.
//!
//! tessera locks a table and its keys by the storage tree they are in (the tree's root
//! page); the views name the object and the hobt (the partition, as sys.partitions
//! numbers it) that tree stores, as SQL Server does. A lock of a tree no catalog
//! definition names (the catalog's own trees, a temporary table's being dropped) names
//! object and hobt 0.

use std::collections::HashMap;
use std::sync::Arc;

use super::{col, int, s, Rows, ViewDef};
use crate::runtime::ExecCtx;
use tessera_access::lock::{LockMode, LockStatus, Resource};
use tessera_database::Database;
use tessera_semantics::catalog::Object;
use tessera_semantics::types::{SqlType::*, Value};
use tessera_waits::Resource as WaitResource;

/// A database's trees by root page: the object each belongs to and its hobt id.
#[derive(Default)]
pub(super) struct Trees(HashMap<u32, (i64, i64)>);

impl Trees {
    /// The trees of `database`'s tables and indexes (empty when its catalog cannot be
    /// read).
    pub(super) fn of(ctx: &ExecCtx, database: &Arc<Database>) -> Trees {
        let Ok(catalog) = ctx.catalog(database) else { return Trees::default() };
        let mut trees = HashMap::new();
        for o in catalog.objects() {
            let Object::Table(t) = o else { continue };
            for ix in &t.indexes {
                if let Some(root) = database.table(&ix.tree) {
                    trees.insert(root.0.raw(), (i64::from(t.id), super::storage::partition_id(t, ix)));
                }
            }
        }
        Trees(trees)
    }

    /// The object tree `root` belongs to (0: none known).
    fn object(&self, root: u32) -> i64 {
        self.0.get(&root).map_or(0, |t| t.0)
    }

    /// The hobt id of tree `root` (0: none known).
    fn hobt(&self, root: u32) -> i64 {
        self.0.get(&root).map_or(0, |t| t.1)
    }
}

/// A key's hash as SQL Server shows one: 12 hexadecimal digits in parentheses.
fn key_hash(hash: u64) -> String {
    format!("({:012x})", hash & 0xFFFF_FFFF_FFFF)
}

/// A wait's resource as sys.dm_exec_requests' `wait_resource` names it
/// (`KEY: 5:72057594043039744 (8194443284a0)`, `OBJECT: 5:245575913:0 `), with `trees` of
/// the database it is in; empty for a wait with no resource to name.
pub(super) fn wait_resource(resource: WaitResource, trees: impl FnOnce(u32) -> Trees) -> String {
    match resource {
        WaitResource::Nothing => String::new(),
        WaitResource::Table { database, tree } => {
            format!("OBJECT: {database}:{}:0 ", trees(database).object(tree))
        }
        WaitResource::Key { database, tree, hash } => {
            format!("KEY: {database}:{} {}", trees(database).hobt(tree), key_hash(hash))
        }
        WaitResource::Object { database, object } => format!("OBJECT: {database}:{object}:0 "),
        WaitResource::Application { database, hash } => format!("APPLICATION: {database}:0:{}", key_hash(hash)),
    }
}

/// A lock mode as SQL Server names it (`request_mode`).
fn mode_name(resource: Resource, mode: LockMode) -> &'static str {
    use LockMode::*;
    match (resource, mode) {
        (Resource::Range(..), Shared | IntentShared) => "RangeS-S",
        (Resource::Range(..), IntentExclusive) => "RangeI-N",
        (Resource::Range(..), _) => "RangeX-X",
        (_, IntentShared) => "IS",
        (_, IntentExclusive) => "IX",
        (_, Shared) => "S",
        (_, Update) => "U",
        (_, Exclusive) => "X",
        (_, SchemaStability) => "Sch-S",
        (_, SchemaModification) => "Sch-M",
    }
}

pub(super) static TRAN_LOCKS: ViewDef<19> = ViewDef {
    schema: "sys",
    name: "dm_tran_locks",
    columns: [
        col("resource_type", NVarChar(60), false),
        col("resource_subtype", NVarChar(60), false),
        col("resource_database_id", Int, false),
        col("resource_description", NVarChar(256), false),
        col("resource_associated_entity_id", BigInt, true),
        col("resource_lock_partition", Int, true),
        col("request_mode", NVarChar(60), false),
        col("request_type", NVarChar(60), false),
        col("request_status", NVarChar(60), false),
        col("request_reference_count", SmallInt, false),
        col("request_lifetime", Int, false),
        col("request_session_id", Int, false),
        col("request_exec_context_id", Int, true),
        col("request_request_id", Int, true),
        col("request_owner_type", NVarChar(60), false),
        col("request_owner_id", BigInt, true),
        col("request_owner_guid", UniqueIdentifier, true),
        col("request_owner_lockspace_id", NVarChar(32), true),
        col("lock_owner_address", VarBinary(8), false),
    ],
    rows: tran_locks,
};

/// Every lock request of the open databases (a closed database has none), granted
/// (`GRANT`), waiting (`WAIT`) or waiting to convert a lock held (`CONVERT`). A
/// statement's schema-stability locks are counted, not listed, unless DDL is waiting
/// for them (see `tessera_access::lock`). Needs VIEW SERVER STATE.
fn tran_locks(ctx: &ExecCtx, _db: &str) -> Rows<19> {
    super::server_state(ctx)?;
    let mut databases = Vec::new();
    ctx.shared.engine.for_each_open(|d| databases.push(d.clone()));
    let mut rows = Vec::new();
    for database in databases {
        let requests = database.lock_requests();
        if requests.is_empty() {
            continue;
        }
        let trees = Trees::of(ctx, &database);
        let db_id = i64::from(database.id());
        for r in requests {
            let (kind, description, entity) = match r.resource {
                Resource::Table(tree) => ("OBJECT", String::new(), trees.object(tree)),
                Resource::Schema(object) => ("OBJECT", String::new(), i64::from(object)),
                Resource::Key(tree, hash) | Resource::Range(tree, hash) => ("KEY", key_hash(hash), trees.hobt(tree)),
                Resource::App(hash) => ("APPLICATION", format!("0:{}", key_hash(hash)), 0),
            };
            let session_owned = tessera_database::is_session_lock_owner(r.txn.raw());
            let status = match r.status {
                LockStatus::Grant => "GRANT",
                LockStatus::Wait => "WAIT",
                LockStatus::Convert => "CONVERT",
            };
            // A lock's address: unique among the rows, as SQL Server's is.
            let address = (r.txn.raw() ^ (rows.len() as u64).rotate_left(32)).to_be_bytes();
            rows.push([
                s(kind),
                s(""),
                int(db_id),
                s(&description),
                int(entity),
                int(0),
                s(mode_name(r.resource, r.mode)),
                s("LOCK"),
                s(status),
                int(1),
                int(0),
                int(i64::from(r.session)),
                int(0),
                int(0),
                s(if session_owned { "SESSION" } else { "TRANSACTION" }),
                int(if session_owned { i64::from(r.session) } else { i64::try_from(r.txn.raw()).unwrap_or(0) }),
                Value::Null,
                Value::Null,
                Value::Binary(Arc::from(&address[..])),
            ]);
        }
    }
    Ok(rows)
}
