//! `sp_getapplock` and `sp_releaseapplock`: locks on names the application chooses, in
//! the current database's lock manager, with SQL Server's modes, owners and return codes.
//!
//! A lock is named by the database principal and the resource name (nvarchar(255),
//! compared as binary, so case-sensitive), hashed to 64 bits. `@LockOwner = 'Transaction'`
//! (the default) needs an open transaction and ends with it; `'Session'` locks end with
//! `sp_releaseapplock` or the session. Waiting follows `@LockTimeout` (default
//! `@@LOCK_TIMEOUT`) and is seen by the deadlock detector. Return codes: 0 granted at
//! once, 1 granted after waiting, -1 timed out, -2 cancelled, -3 deadlock victim, -999 a
//! parameter or call error. Deviation: a lock taken twice by one owner is held once (SQL
//! Server counts them and needs as many releases).

use std::time::Duration;

use tessera_database::{Error as EngineError, LockMode};

use super::NamedArg;
use crate::runtime::{lock_timeout, ExecCtx};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::types::{self, SqlType, Value};

use tessera_database::session_lock_owner as session_owner;

/// An argument by name, or at its position when not named.
fn arg<'a>(args: &'a [NamedArg], position: usize, name: &str) -> Option<&'a (Value, SqlType)> {
    let by_name = args.iter().find(|(n, _)| n.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(name)));
    by_name.or_else(|| args.get(position).filter(|(n, _)| n.is_none()))?.1.as_ref()
}

fn text(args: &[NamedArg], position: usize, name: &str) -> Option<String> {
    match arg(args, position, name)? {
        (Value::Null, _) => None,
        (v, t) => match types::cast(v, t, &SqlType::NVarChar(4000), None) {
            Ok(Value::Str(s)) => Some(s.to_string()),
            _ => None,
        },
    }
}

/// (resource, principal) hashed into the lock's name; the resource truncated to 255.
fn name_hash(resource: &str, principal: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let resource: String = resource.chars().take(255).collect();
    let mut h = std::hash::DefaultHasher::new();
    (principal, resource).hash(&mut h);
    h.finish()
}

enum Owner {
    Transaction,
    Session,
}

fn owner(args: &[NamedArg], position: usize) -> Option<Owner> {
    match text(args, position, "@LockOwner").map(|s| s.to_ascii_lowercase()).as_deref() {
        None | Some("transaction") => Some(Owner::Transaction),
        Some("session") => Some(Owner::Session),
        Some(_) => None,
    }
}

/// `sp_getapplock @Resource, @LockMode [, @LockOwner] [, @LockTimeout] [, @DbPrincipal]`.
pub fn get(args: &[NamedArg], ctx: &mut ExecCtx) -> SqlResult<i32> {
    let mode = match text(args, 1, "@LockMode").map(|s| s.to_ascii_lowercase()).as_deref() {
        Some("shared") => LockMode::Shared,
        Some("update") => LockMode::Update,
        Some("intentshared") => LockMode::IntentShared,
        Some("intentexclusive") => LockMode::IntentExclusive,
        Some("exclusive") => LockMode::Exclusive,
        _ => return Ok(-999),
    };
    let (Some(resource), Some(owner)) = (text(args, 0, "@Resource"), owner(args, 2)) else { return Ok(-999) };
    let timeout_ms = match arg(args, 3, "@LockTimeout") {
        None | Some((Value::Null, _)) => ctx.session.options.lock_timeout,
        Some((v, t)) => match types::cast(v, t, &SqlType::Int, None) {
            Ok(Value::Int(n)) => n,
            _ => return Ok(-999),
        },
    };
    let principal = text(args, 4, "@DbPrincipal").unwrap_or_else(|| "public".to_string());
    let hash = name_hash(&resource, &principal);
    let timeout: Option<Duration> = lock_timeout(timeout_ms);
    let db = ctx.session.database.clone();
    let granted = match owner {
        Owner::Transaction => {
            if ctx.session.txns.count == 0 {
                return Ok(-999);
            }
            ctx.transaction(&db)?.lock_app(hash, mode, timeout)
        }
        Owner::Session => {
            let database = ctx.shared.database(&db)?;
            let cancel = ctx.session.cancel.clone();
            let wait = tessera_database::LockWait { timeout, cancel: Some(&cancel), fast: None };
            let granted = database.lock_app_for_session(session_owner(ctx.session.spid), hash, mode, wait);
            if granted.is_ok() && !ctx.session.app_locks.contains(&(db.clone(), hash)) {
                ctx.session.app_locks.push((db.clone(), hash));
            }
            granted
        }
    };
    Ok(match granted {
        Ok(false) => 0,
        Ok(true) => 1,
        Err(EngineError::LockTimeout) => -1,
        Err(EngineError::Cancelled) => -2,
        Err(EngineError::Deadlock) => -3,
        Err(e) => return Err(e.into()),
    })
}

/// `sp_releaseapplock @Resource [, @LockOwner] [, @DbPrincipal]`: 0, or error 1223 (and
/// -999) when the lock is not held.
pub fn release(args: &[NamedArg], ctx: &mut ExecCtx) -> SqlResult<i32> {
    let (Some(resource), Some(owner)) = (text(args, 0, "@Resource"), owner(args, 1)) else { return Ok(-999) };
    let principal = text(args, 2, "@DbPrincipal").unwrap_or_else(|| "public".to_string());
    let hash = name_hash(&resource, &principal);
    let db = ctx.session.database.clone();
    let released = match owner {
        Owner::Transaction => ctx.session.txns.count > 0 && ctx.transaction(&db)?.release_app(hash),
        Owner::Session => {
            let released = ctx.shared.database(&db)?.release_app_for_session(session_owner(ctx.session.spid), hash);
            ctx.session.app_locks.retain(|l| *l != (db.clone(), hash));
            released
        }
    };
    if !released {
        return Err(msg::APP_LOCK_NOT_HELD.with(&[&principal, &resource]));
    }
    Ok(0)
}

/// Releases a closing session's application locks.
pub fn release_session_locks(ctx: &mut ExecCtx) {
    for (db, hash) in std::mem::take(&mut ctx.session.app_locks) {
        if let Ok(database) = ctx.shared.database(&db) {
            database.release_app_for_session(session_owner(ctx.session.spid), hash);
        }
    }
}
