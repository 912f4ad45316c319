//! The catalog's rows in storage: each object's definition as JSON in the tree
//! `sys$objects`, split into chunks keyed by (object id, chunk number), both big-endian
//! (docs/FORMAT.md). The catalog itself, in memory, is `tessera_semantics::catalog`;
//! this is its persistence, which belongs with the storage the executor drives.

use std::sync::Arc;

use std::ops::Bound;
use tessera_database::{Database, Direction, Transaction};
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::catalog::{Catalog, Object, OBJECTS_TREE};

const CHUNK: usize = 7000;

fn key(id: i32, chunk: u16) -> [u8; 6] {
    let mut k = [0; 6];
    k[..4].copy_from_slice(&(id as u32).to_be_bytes());
    k[4..].copy_from_slice(&chunk.to_be_bytes());
    k
}

fn tree(db: &Database) -> SqlResult<tessera_database::TableId> {
    match db.table(OBJECTS_TREE) {
        Some(t) => Ok(t),
        None => match db.create_table(OBJECTS_TREE) {
            Ok(t) => Ok(t),
            Err(tessera_database::Error::AlreadyExists { .. }) => {
                db.table(OBJECTS_TREE).ok_or_else(|| SqlError::new(50000, "catalog tree vanished"))
            }
            Err(e) => Err(e.into()),
        },
    }
}

fn damaged(db: &Database, detail: impl std::fmt::Display) -> SqlError {
    SqlError::new(50000, format!("Damaged catalog entry in database '{}': {detail}", db.name())).with_severity(21)
}

pub fn load(db: &Arc<Database>, version: u64) -> SqlResult<Catalog> {
    let t = tree(db)?;
    let tx = db.begin();
    let mut objects = Vec::new();
    let mut current: Option<(u32, Vec<u8>)> = None;
    for item in tx.scan(t, Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
        let (k, v) = item?;
        if k.len() != 6 {
            return Err(damaged(db, "bad key"));
        }
        let id = u32::from_be_bytes(k[..4].try_into().expect("4 bytes"));
        match &mut current {
            Some((cur, bytes)) if *cur == id => bytes.extend_from_slice(&v),
            _ => {
                if let Some((_, bytes)) = current.take() {
                    objects.push(serde_json::from_slice(&bytes).map_err(|e| damaged(db, e))?);
                }
                current = Some((id, v));
            }
        }
    }
    if let Some((_, bytes)) = current {
        objects.push(serde_json::from_slice(&bytes).map_err(|e| damaged(db, e))?);
    }
    tx.commit()?;
    Ok(Catalog::from_objects(version, objects))
}

fn remove_chunks(tx: &mut Transaction, t: tessera_database::TableId, id: i32) -> SqlResult<()> {
    let mut chunk = 0;
    while tx.delete(t, &key(id, chunk))? {
        chunk += 1;
    }
    Ok(())
}

/// Writes (or replaces) one object's definition, durably.
pub fn save(db: &Arc<Database>, o: &Object) -> SqlResult<()> {
    let mut tx = db.begin();
    save_in(&mut tx, o)?;
    tx.commit()?;
    Ok(())
}

/// Writes (or replaces) one object's definition in the transaction `tx` (of the object's
/// database): it lasts if `tx` commits.
pub fn save_in(tx: &mut Transaction, o: &Object) -> SqlResult<()> {
    let t = tree(tx.database())?;
    let bytes = serde_json::to_vec(o).map_err(|e| SqlError::new(50000, e.to_string()))?;
    remove_chunks(tx, t, o.id())?;
    for (i, chunk) in bytes.chunks(CHUNK).enumerate() {
        let n = u16::try_from(i).map_err(|_| SqlError::new(50000, "object definition too large"))?;
        tx.insert(t, &key(o.id(), n), chunk)?;
    }
    Ok(())
}

pub fn delete(db: &Arc<Database>, id: i32) -> SqlResult<()> {
    let mut tx = db.begin();
    delete_in(&mut tx, id)?;
    tx.commit()?;
    Ok(())
}

/// Removes one object's definition in the transaction `tx`: gone if `tx` commits.
pub fn delete_in(tx: &mut Transaction, id: i32) -> SqlResult<()> {
    let t = tree(tx.database())?;
    remove_chunks(tx, t, id)
}
