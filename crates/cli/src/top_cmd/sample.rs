//! One sample of the server's state: a single batch of DMV queries over the connection,
//! parsed into plain rows. Everything `tessera top` shows comes from two samples.

use std::collections::HashMap;
use std::time::Instant;

use tessera_semantics::output::{Command, OutputColumn, ResultSink};
use tessera_semantics::types::Value;
use tessera_sql::runner::Batches;
use tessera_sql::SqlError;

use crate::sql_cmd::{Login, Remote};

/// The batch each sample runs: one result set per statement, in this order. The DMVs
/// that need VIEW SERVER STATE come first after the caller's own facts, so a login
/// without it fails at once (error 300).
const BATCH: &str = "SET NOCOUNT ON;
SELECT @@SPID, @@SERVERNAME;
SELECT DATEDIFF(second, sqlserver_start_time, GETDATE()) FROM sys.dm_os_sys_info;
SELECT object_name, counter_name, cntr_value FROM sys.dm_os_performance_counters;
SELECT database_id, name, is_open, buffer_pool_kb, file_size_kb FROM sys.dm_tessera_databases;
SELECT database_id, num_of_reads, num_of_writes, num_of_bytes_read, num_of_bytes_written, io_stall
  FROM sys.dm_io_virtual_file_stats(NULL, NULL);
SELECT wait_type, waiting_tasks_count, wait_time_ms FROM sys.dm_os_wait_stats;
SELECT request_session_id, request_status FROM sys.dm_tran_locks;
SELECT session_id, login_name, status, database_id, open_transaction_count FROM sys.dm_exec_sessions;
SELECT session_id, status, command, database_id, blocking_session_id, wait_type, wait_time, wait_resource,
  cpu_time, total_elapsed_time, percent_complete FROM sys.dm_exec_requests;";

/// How many result sets `BATCH` returns.
const RESULT_SETS: usize = 9;

/// SQL Server's "permission denied" (300) and its summary (297).
const PERMISSION_DENIED: [i32; 2] = [300, 297];

/// A database, by `sys.dm_tessera_databases`.
#[derive(Clone, Debug)]
pub struct DatabaseRow {
    pub id: i64,
    pub name: String,
    pub is_open: bool,
    pub buffer_pool_kb: i64,
    pub file_size_kb: i64,
}

/// A database's files added up (`sys.dm_io_virtual_file_stats`): cumulative since it
/// opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileTotals {
    pub reads: i64,
    pub writes: i64,
    pub bytes_read: i64,
    pub bytes_written: i64,
    pub stall_ms: i64,
}

impl FileTotals {
    /// What happened between `before` and `self`; a database that closed and opened
    /// again in between started its counters from zero, so all of `self` is new.
    pub fn since(&self, before: Option<&FileTotals>) -> FileTotals {
        match before {
            Some(b) if b.reads <= self.reads && b.writes <= self.writes => FileTotals {
                reads: self.reads - b.reads,
                writes: self.writes - b.writes,
                bytes_read: (self.bytes_read - b.bytes_read).max(0),
                bytes_written: (self.bytes_written - b.bytes_written).max(0),
                stall_ms: (self.stall_ms - b.stall_ms).max(0),
            },
            _ => *self,
        }
    }
}

/// A wait type's cumulative figures (`sys.dm_os_wait_stats`).
#[derive(Clone, Copy, Debug, Default)]
pub struct WaitTotals {
    pub waits: i64,
    pub wait_ms: i64,
}

/// A session (`sys.dm_exec_sessions`).
#[derive(Clone, Debug)]
pub struct SessionRow {
    pub id: i64,
    pub login: String,
    pub status: String,
    pub database_id: i64,
    pub open_transactions: i64,
}

/// A running request (`sys.dm_exec_requests`).
#[derive(Clone, Debug)]
pub struct RequestRow {
    pub session_id: i64,
    pub status: String,
    pub command: String,
    pub database_id: i64,
    /// 0: not blocked.
    pub blocker: i64,
    pub wait_type: Option<String>,
    pub wait_ms: i64,
    pub wait_resource: String,
    pub cpu_ms: i64,
    pub elapsed_ms: i64,
    pub percent_complete: f64,
}

/// A session's lock requests (`sys.dm_tran_locks`).
#[derive(Clone, Copy, Debug, Default)]
pub struct LockCounts {
    pub granted: i64,
    pub waiting: i64,
}

/// The server at one moment. The sampling session itself (`own_session`) is left out of
/// the sessions and requests.
#[derive(Clone, Debug)]
pub struct Sample {
    pub taken: Instant,
    pub server_name: String,
    /// Seconds since the server started (`sqlserver_start_time` of sys.dm_os_sys_info).
    pub uptime_s: Option<i64>,
    /// "SQLServer:SQL Statistics" counters by name (cumulative).
    pub statistics: HashMap<String, i64>,
    pub databases: Vec<DatabaseRow>,
    pub files: HashMap<i64, FileTotals>,
    pub waits: HashMap<String, WaitTotals>,
    pub locks: HashMap<i64, LockCounts>,
    pub sessions: Vec<SessionRow>,
    pub requests: Vec<RequestRow>,
}

impl Sample {
    /// A database's name by id (`#id` for one no longer listed).
    pub fn database_name(&self, id: i64) -> String {
        self.databases.iter().find(|d| d.id == id).map_or_else(|| format!("#{id}"), |d| d.name.clone())
    }

    pub fn request(&self, session: i64) -> Option<&RequestRow> {
        self.requests.iter().find(|r| r.session_id == session)
    }
}

/// Collects every result set's rows and the errors; prints nothing.
#[derive(Default)]
struct Collect {
    sets: Vec<Vec<Vec<Value>>>,
    errors: Vec<SqlError>,
}

impl ResultSink for Collect {
    fn columns(&mut self, _columns: &[OutputColumn]) {
        self.sets.push(Vec::new());
    }
    fn row(&mut self, row: &[Value]) {
        if let Some(set) = self.sets.last_mut() {
            set.push(row.to_vec());
        }
    }
    fn done(&mut self, _count: Option<u64>, _command: Command) {}
    fn message(&mut self, m: &SqlError) {
        if m.severity > 10 {
            self.errors.push(m.clone());
        }
    }
}

fn number(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Bit(b) => i64::from(*b),
        Value::Float(f) => *f as i64,
        _ => 0,
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Str(s) => s.trim_end().to_string(),
        Value::Null => String::new(),
        other => format!("{other:?}"),
    }
}

fn column(row: &[Value], i: usize) -> &Value {
    row.get(i).unwrap_or(&Value::Null)
}

/// The connection `tessera top` samples over.
pub struct Sampler {
    remote: Remote,
    server: String,
    login: String,
}

impl Sampler {
    pub fn connect(server: &str, login: &Login) -> Result<Sampler, String> {
        let remote = Remote::connect(server, "master", login).map_err(|e| format!("tessera top: {e}"))?;
        Ok(Sampler { remote, server: server.to_string(), login: login.user.clone() })
    }

    /// Runs the batch once; the error is the message to print before exiting 1.
    pub fn sample(&mut self) -> Result<Sample, String> {
        let mut sink = Collect::default();
        let failed = self.remote.run_batch(BATCH, &mut sink);
        if !self.remote.connected() {
            return Err(format!(
                "tessera top: lost the connection to {}: the server stopped or the network failed.",
                self.server
            ));
        }
        if sink.errors.iter().any(|e| PERMISSION_DENIED.contains(&e.number)) {
            return Err(format!(
                "tessera top: login '{}' lacks VIEW SERVER STATE, which the server's DMVs need \
                 (GRANT VIEW SERVER STATE TO [{}] as a sysadmin).",
                self.login, self.login
            ));
        }
        if let Some(e) = sink.errors.first() {
            return Err(format!("tessera top: the server refused a DMV query: Msg {}: {}", e.number, e.message));
        }
        if failed || sink.sets.len() != RESULT_SETS {
            return Err(format!("tessera top: {} answered the DMV queries unexpectedly.", self.server));
        }
        Ok(parse(sink.sets))
    }
}

fn parse(sets: Vec<Vec<Vec<Value>>>) -> Sample {
    let mut sets = sets.into_iter();
    let mut next = || sets.next().unwrap_or_default();
    let me = next();
    let own_session = me.first().map_or(0, |r| number(column(r, 0)));
    let server_name = me.first().map_or_else(String::new, |r| text(column(r, 1)));
    let uptime_s = next().first().map(|r| number(column(r, 0)));
    let statistics = next()
        .iter()
        .filter(|r| text(column(r, 0)) == "SQLServer:SQL Statistics")
        .map(|r| (text(column(r, 1)), number(column(r, 2))))
        .collect();
    let databases = next()
        .iter()
        .map(|r| DatabaseRow {
            id: number(column(r, 0)),
            name: text(column(r, 1)),
            is_open: number(column(r, 2)) != 0,
            buffer_pool_kb: number(column(r, 3)),
            file_size_kb: number(column(r, 4)),
        })
        .collect();
    let mut files: HashMap<i64, FileTotals> = HashMap::new();
    for r in next() {
        let f = files.entry(number(column(&r, 0))).or_default();
        f.reads += number(column(&r, 1));
        f.writes += number(column(&r, 2));
        f.bytes_read += number(column(&r, 3));
        f.bytes_written += number(column(&r, 4));
        f.stall_ms += number(column(&r, 5));
    }
    let waits = next()
        .iter()
        .map(|r| (text(column(r, 0)), WaitTotals { waits: number(column(r, 1)), wait_ms: number(column(r, 2)) }))
        .collect();
    let mut locks: HashMap<i64, LockCounts> = HashMap::new();
    for r in next() {
        let l = locks.entry(number(column(&r, 0))).or_default();
        match text(column(&r, 1)).as_str() {
            "GRANT" => l.granted += 1,
            _ => l.waiting += 1,
        }
    }
    let sessions = next()
        .iter()
        .filter(|r| number(column(r, 0)) != own_session)
        .map(|r| SessionRow {
            id: number(column(r, 0)),
            login: text(column(r, 1)),
            status: text(column(r, 2)),
            database_id: number(column(r, 3)),
            open_transactions: number(column(r, 4)),
        })
        .collect();
    let requests = next()
        .iter()
        .filter(|r| number(column(r, 0)) != own_session)
        .map(|r| RequestRow {
            session_id: number(column(r, 0)),
            status: text(column(r, 1)),
            command: text(column(r, 2)),
            database_id: number(column(r, 3)),
            blocker: number(column(r, 4)),
            wait_type: Some(text(column(r, 5))).filter(|w| !w.is_empty()),
            wait_ms: number(column(r, 6)),
            wait_resource: text(column(r, 7)),
            cpu_ms: number(column(r, 8)),
            elapsed_ms: number(column(r, 9)),
            percent_complete: match column(r, 10) {
                Value::Float(f) => *f,
                _ => 0.0,
            },
        })
        .collect();
    Sample {
        taken: Instant::now(),
        server_name,
        uptime_s,
        statistics,
        databases,
        files,
        waits,
        locks,
        sessions,
        requests,
    }
}
