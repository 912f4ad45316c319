//! Query Store's procedures, on the current database's store (`crate::query_store`):
//! `sp_query_store_flush_db`, `sp_query_store_remove_query @query_id`,
//! `sp_query_store_remove_plan @plan_id` and `sp_query_store_reset_exec_stats @plan_id`.
//! Each needs ALTER on the database, as SQL Server asks.

use tessera_errors::{msg, SqlResult};
use tessera_security::principals::check::{allowed, On};

use super::{int_arg, too_many, NamedArg};
use crate::query_store::rows::{self, key};
use crate::query_store::storage::{self, Removal};
use crate::query_store_flusher::with_site;
use crate::runtime::ExecCtx;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Procedure {
    Flush,
    RemoveQuery,
    RemovePlan,
    ResetExecStats,
}

impl Procedure {
    fn name(self) -> &'static str {
        match self {
            Procedure::Flush => "sp_query_store_flush_db",
            Procedure::RemoveQuery => "sp_query_store_remove_query",
            Procedure::RemovePlan => "sp_query_store_remove_plan",
            Procedure::ResetExecStats => "sp_query_store_reset_exec_stats",
        }
    }
}

pub fn run(procedure: Procedure, args: &[NamedArg], ctx: &mut ExecCtx) -> SqlResult<i32> {
    let name = procedure.name();
    let db_name = ctx.session.database.clone();
    let (security, token) = ctx.shared.access(ctx.session, &db_name)?;
    if !token.unrestricted && !allowed(&security, &token, "ALTER", On::Database) {
        let denied = msg::SERVER_PERMISSION_DENIED.with(&[&"ALTER", &"database", &db_name]);
        return Err(msg::ACTION_PERMISSION_DENIED.err().after(denied));
    }
    let db = ctx.shared.database(&db_name)?;
    let store = ctx.shared.query_stores.get(db.name());
    if procedure == Procedure::Flush {
        too_many(name, args, 0)?;
        if let Some(store) = store {
            with_site(ctx.shared, &db, |site| store.flush(&db, site))?;
        }
        return Ok(0);
    }
    too_many(name, args, 1)?;
    let (param, kind) = match procedure {
        Procedure::RemoveQuery => ("@query_id", rows::QUERY),
        _ => ("@plan_id", rows::PLAN),
    };
    let id = int_arg(args, 0, param)?.ok_or_else(|| msg::MISSING_PARAMETER.with(&[&name, &param]))?;
    let not_found = || match procedure {
        Procedure::RemoveQuery => msg::QUERY_STORE_QUERY_NOT_FOUND.with(&[&id, &db.id()]),
        _ => msg::QUERY_STORE_PLAN_NOT_FOUND.with(&[&id, &db.id()]),
    };
    let rows = match &store {
        Some(store) => with_site(ctx.shared, &db, |site| store.rows(&db, site))?,
        None => storage::all_rows(&db)?,
    };
    if id < 1 || !rows.contains_key(&key(kind, &[id as u64])) {
        return Err(not_found());
    }
    let removal = match procedure {
        Procedure::RemoveQuery => Removal { queries: vec![id], ..Removal::default() },
        Procedure::RemovePlan => Removal { plans: vec![id], ..Removal::default() },
        _ => Removal { stats_of_plans: vec![id], ..Removal::default() },
    };
    match store {
        Some(store) => with_site(ctx.shared, &db, |site| store.remove(&db, &removal, site))?,
        None => storage::remove_stored(&db, &removal)?,
    }
    Ok(0)
}
