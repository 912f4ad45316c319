//! The sessions as the server's views show them (sys.dm_exec_sessions, requests and
//! connections): who each is, what it is doing, its SET options and its connection.

use std::sync::Arc;

use parking_lot::Mutex;

use super::Options;

/// What a session is doing, as the server's views show it.
#[derive(Clone, Debug, Default)]
pub struct Activity {
    pub database: String,
    /// A batch is running ("running"), or none is ("sleeping").
    pub running: bool,
    /// The running batch's text (sys.dm_exec_requests); kept between batches, so that
    /// publishing the next one reuses its allocation.
    pub command: String,
    /// When the running (or last) request began, in milliseconds since the Unix epoch.
    pub start_ms: i64,
    pub open_transactions: u32,
    /// Its SET options as of the last request's start or end.
    pub settings: Settings,
}

/// The SET options of a session that sys.dm_exec_sessions shows.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `@@TEXTSIZE`.
    pub text_size: i64,
    pub language: String,
    pub date_format: String,
    pub date_first: i64,
    pub quoted_identifier: bool,
    pub arithabort: bool,
    pub ansi_null_dflt_on: bool,
    pub ansi_warnings: bool,
    pub ansi_padding: bool,
    pub ansi_nulls: bool,
    pub concat_null_yields_null: bool,
    /// 1 READ UNCOMMITTED, 2 READ COMMITTED, 3 REPEATABLE READ, 4 SERIALIZABLE, 5 SNAPSHOT.
    pub isolation_level: i16,
    /// SET LOCK_TIMEOUT in milliseconds (-1: wait for ever).
    pub lock_timeout: i64,
}

impl Settings {
    /// Takes the session's options (reusing the strings' room).
    pub fn update(&mut self, o: &Options) {
        self.text_size = o.text_size();
        self.language.clone_from(&o.language);
        self.date_format.clone_from(&o.dateformat);
        self.date_first = o.datefirst;
        self.quoted_identifier = o.quoted_identifier;
        self.arithabort = o.arithabort;
        self.ansi_null_dflt_on = o.ansi_null_dflt_on;
        self.ansi_warnings = o.ansi_warnings;
        self.ansi_padding = o.ansi_padding;
        self.ansi_nulls = o.ansi_nulls;
        self.concat_null_yields_null = o.concat_null_yields_null;
        self.isolation_level = match o.isolation_level.as_str() {
            "READ UNCOMMITTED" => 1,
            "READ COMMITTED" => 2,
            "REPEATABLE READ" => 3,
            "SERIALIZABLE" => 4,
            "SNAPSHOT" => 5,
            _ => 0,
        };
        self.lock_timeout = o.lock_timeout;
    }
}

impl Activity {
    /// The running batch's text, if one is running.
    pub fn running_text(&self) -> Option<&str> {
        self.running.then_some(self.command.as_str())
    }
}

/// A session as the server's views show it.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub spid: i32,
    /// The name it logged in with: a login's, or a contained database user's.
    pub login: String,
    /// It logged in as a contained database user, which no login stands behind.
    pub contained: bool,
    pub host_name: String,
    pub program_name: String,
    /// Seconds since the Unix epoch.
    pub login_time: i64,
    /// What the session is doing now. The session updates it as each request starts and
    /// ends, under this lock alone (not the instance-wide list's).
    pub activity: Arc<Mutex<Activity>>,
    /// The network connection, for sessions of the TDS server (sys.dm_exec_connections).
    pub connection: Option<ConnectionInfo>,
    /// Its Resource Governor workload group.
    pub group_id: i32,
    /// Its waits (sys.dm_exec_session_wait_stats, the wait columns of
    /// sys.dm_exec_requests) and its running request's CPU time and progress.
    pub waits: Arc<tessera_waits::SessionWaits>,
    /// Its open transaction (sys.dm_tran_*), as its `Transactions` publishes it.
    pub transaction: Arc<Mutex<Option<TransactionInfo>>>,
}

/// A session's open transaction as the views show it: published when it first touches
/// a database, and when it touches another; gone when it ends.
#[derive(Clone, Debug)]
pub struct TransactionInfo {
    /// Unique in the process (SQL Server's `transaction_id`), counted from 1.
    pub id: u64,
    /// Milliseconds since the Unix epoch.
    pub begin_ms: i64,
    /// The name BEGIN TRANSACTION gave it.
    pub name: Option<String>,
    /// Begun by BEGIN TRANSACTION or implicit transactions (not a statement's own).
    pub user: bool,
    /// The databases it has touched, in order.
    pub databases: Vec<DatabaseTransaction>,
}

/// A session's transaction in one database.
#[derive(Clone, Copy, Debug)]
pub struct DatabaseTransaction {
    pub database_id: u32,
    /// The storage transaction's id in that database.
    pub txn: u64,
    pub begin_ms: i64,
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A client's TDS connection, as sys.dm_exec_connections shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The whole connection is in TLS (login-only encryption is not).
    pub encrypted: bool,
    pub client_address: String,
    pub client_port: u16,
    pub local_address: String,
    pub local_port: u16,
    /// The TDS version acknowledged at login, as LOGINACK sends it.
    pub protocol_version: u32,
    pub packet_size: u32,
}
