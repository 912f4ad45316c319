//! The storage tree `sys$principals` of a database: one row per principal (`p:<id>`),
//! schema (`s:<id>`), role membership (`m:<role>:<member>`) and permission
//! (`g:<class>:<major>:<grantee>:<permission>`) and extended property of the database or a
//! schema (`x:<class>:<major>:<lower-cased name>`), values as JSON, and `c` (empty) in a
//! contained database. The tree is created at a
//! database's first security change with every row of its defaults; a change writes only
//! the rows that differ from the snapshot before it, in one transaction.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use tessera_database::{Database, Direction};
use tessera_errors::{SqlError, SqlResult};

use super::{DatabaseProperty, PermissionRow, Principal, Schema, Security};

const TREE: &str = "sys$principals";

/// The owner `sa` has when nothing else is recorded (`sa`'s security id).
const SA_SID: &[u8] = &[1];

fn damaged(db: &Database, detail: impl std::fmt::Display) -> SqlError {
    SqlError::new(50000, format!("Damaged security entry in database '{}': {detail}", db.name())).with_severity(21)
}

fn json<T: serde::Serialize>(value: &T) -> SqlResult<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| SqlError::new(50000, e.to_string()))
}

/// Every row of `s`, by key.
fn rows(s: &Security) -> SqlResult<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut out = BTreeMap::new();
    for p in s.principals.values() {
        out.insert(format!("p:{}", p.id).into_bytes(), json(p)?);
    }
    for sc in s.schemas.values() {
        out.insert(format!("s:{}", sc.id).into_bytes(), json(sc)?);
    }
    for (role, member) in &s.members {
        out.insert(format!("m:{role}:{member}").into_bytes(), Vec::new());
    }
    if s.contained {
        out.insert(b"c".to_vec(), Vec::new());
    }
    for g in &s.permissions {
        let key = format!("g:{:?}:{}:{}:{}", g.class, g.major_id, g.grantee, g.permission);
        out.insert(key.into_bytes(), json(g)?);
    }
    for p in &s.properties {
        let key = format!("x:{:?}:{}:{}", p.class, p.major_id, p.name.to_lowercase());
        out.insert(key.into_bytes(), json(p)?);
    }
    Ok(out)
}

/// A database's security: its rows, or the defaults when it has none (shared with every
/// live snapshot equal to it: see `shared`).
pub fn load(db: &Arc<Database>) -> SqlResult<Arc<Security>> {
    let Some(tree) = db.table(TREE) else {
        return Ok(super::shared(Security::defaults(db.name(), SA_SID.to_vec())));
    };
    let mut s = Security::empty();
    let tx = db.begin();
    for item in tx.scan(tree, Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
        let (k, v) = item?;
        let key = std::str::from_utf8(&k).map_err(|e| damaged(db, e))?;
        match key.split(':').next() {
            Some("p") => s.insert_principal(serde_json::from_slice::<Principal>(&v).map_err(|e| damaged(db, e))?),
            Some("s") => s.insert_schema(serde_json::from_slice::<Schema>(&v).map_err(|e| damaged(db, e))?),
            Some("m") => {
                let mut parts = key.split(':').skip(1).map(str::parse::<i32>);
                match (parts.next(), parts.next()) {
                    (Some(Ok(role)), Some(Ok(member))) => s.members.push((role, member)),
                    _ => return Err(damaged(db, key)),
                }
            }
            Some("g") => s.permissions.push(serde_json::from_slice::<PermissionRow>(&v).map_err(|e| damaged(db, e))?),
            Some("x") => s.properties.push(serde_json::from_slice::<DatabaseProperty>(&v).map_err(|e| damaged(db, e))?),
            Some("c") => s.contained = true,
            _ => return Err(damaged(db, key)),
        }
    }
    tx.commit()?;
    Ok(super::shared(s))
}

/// Writes what differs between `before` and `after` durably, in one transaction.
pub fn save(db: &Arc<Database>, before: &Security, after: &Security) -> SqlResult<()> {
    let mut tx = db.begin();
    save_in(&mut tx, before, after)?;
    tx.commit()?;
    Ok(())
}

/// Writes what differs between `before` and `after` in the transaction `tx` (of their
/// database): it lasts if `tx` commits.
pub fn save_in(tx: &mut tessera_database::Transaction, before: &Security, after: &Security) -> SqlResult<()> {
    let db = tx.database().clone();
    let db = &db;
    let old = rows(before)?;
    let tree = match db.table(TREE) {
        Some(t) => t,
        None => match db.create_table(TREE) {
            Ok(t) => {
                // The first change: `before` (the defaults a new database starts with) is
                // written and committed on its own, so that a rollback of `tx`, or a crash
                // before it commits, leaves them and not an empty store.
                let mut base = db.begin();
                for (key, value) in &old {
                    base.insert(t, key, value)?;
                }
                base.commit()?;
                t
            }
            Err(tessera_database::Error::AlreadyExists { .. }) => {
                db.table(TREE).ok_or_else(|| damaged(db, "tree vanished"))?
            }
            Err(e) => return Err(e.into()),
        },
    };
    let new = rows(after)?;
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        tx.delete(tree, key)?;
    }
    for (key, value) in &new {
        if old.get(key) != Some(value) {
            tx.delete(tree, key)?;
            tx.insert(tree, key, value)?;
        }
    }
    Ok(())
}
