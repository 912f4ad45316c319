//! Transactions: sys.dm_tran_active_transactions, sys.dm_tran_session_transactions and
//! sys.dm_tran_database_transactions, and what DBCC OPENTRAN reports (the oldest
//! transaction in a database's log).
//!
//! A session's transaction is one transaction for the views (one `transaction_id`,
//! unique in the process) with a storage transaction in each database it touched; it
//! appears when it first touches a database (a BEGIN TRANSACTION that has touched none
//! is not listed yet). Its log records, LSNs and state in a database come from that
//! database's table of transactions that have logged.

use std::collections::HashMap;
use std::sync::Arc;

use super::dmv::sessions;
use super::requests::datetime_ms;
use super::{bit, col, int, s, Rows, ViewDef};
use crate::runtime::{ExecCtx, SessionInfo, TransactionInfo};
use tessera_access::txn::LoggedTxn;
use tessera_log::Lsn;
use tessera_semantics::types::{SqlType::*, Value};

/// Every session's open transaction (the sessions the caller may see).
fn open_transactions(ctx: &ExecCtx) -> Vec<(SessionInfo, TransactionInfo)> {
    sessions(ctx)
        .into_iter()
        .filter_map(|info| {
            let t = info.transaction.lock().clone()?;
            Some((info, t))
        })
        .collect()
}

/// The logged transactions of the open databases, by (database id, storage transaction).
fn logged(ctx: &ExecCtx) -> HashMap<(u32, u64), LoggedTxn> {
    let mut out = HashMap::new();
    ctx.shared.engine.for_each_open(|d| {
        for t in d.logged_transactions() {
            out.insert((d.id(), t.txn.raw()), t);
        }
    });
    out
}

/// An LSN as SQL Server's `numeric(25,0)` form: VLF sequence, then the offset in it as
/// the log block, then record slot 1 (`seq × 10^15 + offset × 10^5 + 1`).
fn lsn_numeric(lsn: Lsn) -> Value {
    if lsn.is_none() {
        return Value::Null;
    }
    let value = i128::from(lsn.seq()) * 1_000_000_000_000_000 + i128::from(lsn.offset()) * 100_000 + 1;
    Value::Decimal { value, scale: 0 }
}

/// An LSN as DBCC OPENTRAN prints it: `(seq:offset:1)`.
fn lsn_text(lsn: Lsn) -> String {
    format!("({}:{}:1)", lsn.seq(), lsn.offset())
}

/// A transaction's name as SQL Server shows it: the one BEGIN TRANSACTION gave it, else
/// `user_transaction` (or `implicit_transaction`), else the statement's command.
fn name(t: &TransactionInfo, info: &SessionInfo) -> String {
    if let Some(n) = &t.name {
        return n.clone();
    }
    if t.user {
        return "user_transaction".to_string();
    }
    let command = info.activity.lock().command.clone();
    command.split_whitespace().next().unwrap_or("transaction").to_uppercase()
}

pub(super) static TRAN_ACTIVE_TRANSACTIONS: ViewDef<12> = ViewDef {
    schema: "sys",
    name: "dm_tran_active_transactions",
    columns: [
        col("transaction_id", BigInt, false),
        col("name", NVarChar(32), false),
        col("transaction_begin_time", DateTime, false),
        col("transaction_type", Int, false),
        col("transaction_uow", UniqueIdentifier, true),
        col("transaction_state", Int, false),
        col("transaction_status", Int, false),
        col("transaction_status2", Int, false),
        col("dtc_state", Int, false),
        col("dtc_status", Int, false),
        col("dtc_isolation_level", Int, false),
        col("filestream_transaction_id", VarBinary(128), true),
    ],
    rows: tran_active_transactions,
};

/// Each open transaction: read/write (type 1) once it has logged in a database, else
/// read-only (2); state 2, active. Needs VIEW SERVER STATE.
fn tran_active_transactions(ctx: &ExecCtx, _db: &str) -> Rows<12> {
    super::server_state(ctx)?;
    let logged = logged(ctx);
    Ok(open_transactions(ctx)
        .into_iter()
        .map(|(info, t)| {
            let writes = t.databases.iter().any(|d| logged.contains_key(&(d.database_id, d.txn)));
            let mut n = name(&t, &info);
            n.truncate(32);
            [
                int(i64::try_from(t.id).unwrap_or(i64::MAX)),
                s(&n),
                datetime_ms(t.begin_ms),
                int(if writes { 1 } else { 2 }),
                Value::Null,
                int(2),
                int(0),
                int(0),
                int(0),
                int(0),
                int(0),
                Value::Null,
            ]
        })
        .collect())
}

pub(super) static TRAN_SESSION_TRANSACTIONS: ViewDef<9> = ViewDef {
    schema: "sys",
    name: "dm_tran_session_transactions",
    columns: [
        col("session_id", Int, false),
        col("transaction_id", BigInt, false),
        col("transaction_descriptor", Binary(8), false),
        col("enlist_count", Int, false),
        col("is_user_transaction", Bit, false),
        col("is_local", Bit, false),
        col("is_enlisted", Bit, false),
        col("is_bound", Bit, false),
        col("open_transaction_count", Int, false),
    ],
    rows: tran_session_transactions,
};

/// Which session each open transaction belongs to (every session with VIEW SERVER
/// STATE, else the caller's own).
fn tran_session_transactions(ctx: &ExecCtx, _db: &str) -> Rows<9> {
    Ok(open_transactions(ctx)
        .into_iter()
        .map(|(info, t)| {
            let open = info.activity.lock().open_transactions;
            [
                int(i64::from(info.spid)),
                int(i64::try_from(t.id).unwrap_or(i64::MAX)),
                Value::Binary(Arc::from(&t.id.to_be_bytes()[..])),
                int(1),
                bit(t.user),
                bit(true),
                bit(false),
                bit(false),
                int(i64::from(open)),
            ]
        })
        .collect())
}

pub(super) static TRAN_DATABASE_TRANSACTIONS: ViewDef<19> = ViewDef {
    schema: "sys",
    name: "dm_tran_database_transactions",
    columns: [
        col("transaction_id", BigInt, false),
        col("database_id", Int, false),
        col("database_transaction_begin_time", DateTime, true),
        col("database_transaction_type", Int, false),
        col("database_transaction_state", Int, false),
        col("database_transaction_status", Int, false),
        col("database_transaction_status2", Int, false),
        col("database_transaction_log_record_count", BigInt, false),
        col("database_transaction_replicate_record_count", Int, false),
        col("database_transaction_log_bytes_used", BigInt, false),
        col("database_transaction_log_bytes_reserved", BigInt, false),
        col("database_transaction_log_bytes_used_system", Int, false),
        col("database_transaction_log_bytes_reserved_system", Int, false),
        col("database_transaction_begin_lsn", Decimal { precision: 25, scale: 0 }, true),
        col("database_transaction_last_lsn", Decimal { precision: 25, scale: 0 }, true),
        col("database_transaction_most_recent_savepoint_lsn", Decimal { precision: 25, scale: 0 }, true),
        col("database_transaction_commit_lsn", Decimal { precision: 25, scale: 0 }, true),
        col("database_transaction_last_rollback_lsn", Decimal { precision: 25, scale: 0 }, true),
        col("database_transaction_next_undo_lsn", Decimal { precision: 25, scale: 0 }, true),
    ],
    rows: tran_database_transactions,
};

/// Each open transaction in each database it touched: state 4 with its log records and
/// first and last LSNs once it has logged there, else 3 (begun, nothing logged) and
/// read-only. The log bytes a transaction wrote and reserved are not counted by tessera
/// (0); its records are. Needs VIEW SERVER STATE.
fn tran_database_transactions(ctx: &ExecCtx, _db: &str) -> Rows<19> {
    super::server_state(ctx)?;
    let logged = logged(ctx);
    let mut rows = Vec::new();
    for (_, t) in open_transactions(ctx) {
        for d in &t.databases {
            let log = logged.get(&(d.database_id, d.txn));
            rows.push([
                int(i64::try_from(t.id).unwrap_or(i64::MAX)),
                int(i64::from(d.database_id)),
                datetime_ms(d.begin_ms),
                int(if log.is_some() { 1 } else { 2 }),
                int(if log.is_some() { 4 } else { 3 }),
                int(0),
                int(0),
                int(log.map_or(0, |l| i64::try_from(l.records).unwrap_or(i64::MAX))),
                int(0),
                int(0),
                int(0),
                int(0),
                int(0),
                log.map_or(Value::Null, |l| lsn_numeric(l.first_lsn)),
                log.map_or(Value::Null, |l| lsn_numeric(l.last_lsn)),
                Value::Null,
                Value::Null,
                Value::Null,
                log.map_or(Value::Null, |l| lsn_numeric(l.last_lsn)),
            ]);
        }
    }
    Ok(rows)
}

/// The oldest active transaction in a database's log, as DBCC OPENTRAN reports it.
pub struct OldestTransaction {
    pub spid: i32,
    pub name: String,
    pub lsn: String,
    pub begin_ms: i64,
    /// The session's login's SID, as hexadecimal (`0x01` for sa).
    pub sid: String,
}

/// The transaction of database `db` whose first log record is the oldest (None: no
/// transaction has logged there). Which session it is comes from the sessions' open
/// transactions; one no session claims (being recovered) names session 0.
pub fn oldest_active(ctx: &ExecCtx, db: &str) -> tessera_errors::SqlResult<Option<OldestTransaction>> {
    let database = ctx.shared.database(db)?;
    let Some(oldest) = database.logged_transactions().into_iter().min_by_key(|t| t.first_lsn) else {
        return Ok(None);
    };
    let owner = open_transactions(ctx)
        .into_iter()
        .find(|(_, t)| t.databases.iter().any(|d| d.database_id == database.id() && d.txn == oldest.txn.raw()));
    let (spid, name, begin_ms, login) = match &owner {
        Some((info, t)) => (info.spid, self::name(t, info), t.begin_ms, info.login.clone()),
        None => (0, "recovery".to_string(), crate::runtime::now_ms(), "sa".to_string()),
    };
    let sid = ctx.shared.logins.get(&login).map_or_else(Vec::new, |l| l.sid);
    let hex: String = sid.iter().map(|b| format!("{b:02x}")).collect();
    Ok(Some(OldestTransaction { spid, name, lsn: lsn_text(oldest.first_lsn), begin_ms, sid: format!("0x{hex}") }))
}
