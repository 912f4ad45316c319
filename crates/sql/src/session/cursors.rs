//! API server cursors: the procedures clients call by RPC (procedure ids 1–9) for
//! server-side result sets — the Microsoft JDBC driver's `selectMethod=cursor`, its
//! scrollable and updatable result sets, ODBC's and OLE DB's scrollable cursors:
//! `sp_cursoropen`, `sp_cursorprepare`, `sp_cursorexecute`, `sp_cursorprepexec`,
//! `sp_cursorunprepare`, `sp_cursorfetch`, `sp_cursoroption`, `sp_cursorclose` and
//! `sp_cursor` (positioned UPDATE, DELETE, INSERT and REFRESH).
//!
//! # What a cursor is here
//!
//! Opening a cursor runs its SELECT once (as `sp_executesql`, so parameters, permissions,
//! errors and autocommit are those of any statement) and keeps its rows in memory. How it
//! is served depends on the statement, as SQL Server's implicit cursor conversions decide
//! (the type granted goes back in `@scrollopt`, the concurrency in `@ccopt`, with the
//! informational message 16956 when either differs from what was asked):
//!
//! - **Keyed** — a SELECT of one base table with a unique index (no DISTINCT, GROUP BY,
//!   HAVING, aggregate, window function, set operator or CTE). The key columns are
//!   appended to the select list, hidden; each fetch reads its rows again by key, so the
//!   values are current and a deleted row comes back as missing (ROWSTAT 2), and rows can
//!   be updated, deleted and inserted through the cursor (`sp_cursor`). Served as KEYSET
//!   when KEYSET or DYNAMIC is asked (a DYNAMIC cursor sees no rows inserted after it
//!   opened: a deviation), as FORWARD_ONLY when FORWARD_ONLY is.
//! - **Snapshot** — any other single SELECT: the rows as they were at open, READ_ONLY.
//!   STATIC and FAST_FORWARD cursors are always snapshots; KEYSET and DYNAMIC ones become
//!   STATIC; FORWARD_ONLY stays forward-only unless the query reads no table or
//!   aggregates (then STATIC, as in SQL Server).
//! - **Direct** — anything else (several statements, a data change, EXEC, SELECT INTO):
//!   with `ALLOW_DIRECT` in `@ccopt` it runs as a batch would, after the message 16954
//!   ("Executing SQL directly; no cursor.", sent as information, which is how the JDBC
//!   driver expects it), and the cursor handle is 0; without it, error 16937.
//!
//! Concurrency: READ_ONLY, or OPTIMISTIC for a keyed cursor asked for OPTIMISTIC (either
//! kind) or SCROLL_LOCKS (granted as OPTIMISTIC: no row locks are held between fetches).
//! An update or delete through an optimistic cursor succeeds only if the row's selected
//! columns still hold the values last fetched (a value comparison, SQL Server's
//! OPTIMISTIC with values); otherwise 16934 (information) and 16947.
//!
//! # Invariants and limits
//!
//! - Cursors and prepared cursor statements belong to their session: handles are ints
//!   (cursors from 180150001, prepared statements from 1073741825), valid only in the
//!   session that made them, gone at `sp_cursorclose`/`sp_cursorunprepare` and when the
//!   session ends or is reset.
//! - At most [`MAX_OPEN_CURSORS`] cursors are open and [`MAX_PREPARED`] statements
//!   prepared in a session; past either, 16960.
//! - A cursor's rows (and its keys) are held under a query memory grant of their own,
//!   kept while the cursor is open: at most a quarter of max server memory for one cursor,
//!   and all grants together at most three quarters (Resource Governor's pool limits when
//!   it is on). Past it the open fails with 701 and no cursor is made.
//! - The fetch buffer is the block of rows the last fetch returned, `start` (1-based; 0
//!   before the first row, `rows + 1` after the last) and `len`; every fetch type moves
//!   it as `sp_cursorfetch` documents (FIRST, NEXT, PREV, LAST, ABSOLUTE, RELATIVE,
//!   REFRESH, INFO, PREV_NOADJUST); forward-only cursors take NEXT, REFRESH and INFO only
//!   (16911). `sp_cursor` row numbers are positions in this buffer (or in the whole
//!   keyset with ABSOLUTE).
//! - A failed open leaves no cursor; a failed fetch leaves the buffer where it was.
//!
//! Not supported: AUTO_FETCH and AUTO_CLOSE (left out of the granted `@scrollopt`),
//! `sp_cursor` LOCK (16901), the RETURN_METADATA option of `sp_cursorprepare`, cursors on
//! EXEC of a procedure (run directly), and T-SQL `EXEC sp_cursor…` (these procedures are
//! RPC entry points only).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tessera_errors::msg;
use tessera_errors::SqlError;
use tessera_governance::grant::{row_bytes, Grant, Reservation};
use tessera_semantics::catalog::Table;
use tessera_semantics::output::{ColumnOrigin, ColumnOrigins, Command, EnvChange, OutputColumn, ResultSink, StoredRow};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{self, Expr, SelectItem, SetExpr, StatementKind, TableRef};
use tessera_syntax::lexer::{tokenize, Punct, TokenKind};

use super::{RpcParam, Session};

/// Open cursors a session may hold at once.
pub const MAX_OPEN_CURSORS: usize = 1024;
/// Prepared cursor statements a session may hold at once.
pub const MAX_PREPARED: usize = 4096;
const FIRST_CURSOR_HANDLE: i32 = 180_150_001;
const FIRST_PREPARED_HANDLE: i32 = 1_073_741_825;

// @scrollopt
const KEYSET: i64 = 0x1;
const DYNAMIC: i64 = 0x2;
const FORWARD_ONLY: i64 = 0x4;
const STATIC: i64 = 0x8;
const FAST_FORWARD: i64 = 0x10;
const CHECK_ACCEPTED_TYPES: i64 = 0x8000;
// @ccopt
const READ_ONLY: i64 = 0x1;
const SCROLL_LOCKS: i64 = 0x2;
const OPTIMISTIC: i64 = 0x4;
const OPTIMISTIC_VALUES: i64 = 0x8;
const ALLOW_DIRECT: i64 = 0x2000;
const CHECK_ACCEPTED_OPTS: i64 = 0x8000;
// sp_cursorfetch @fetchtype
const FETCH_FIRST: i64 = 0x1;
const FETCH_NEXT: i64 = 0x2;
const FETCH_PREV: i64 = 0x4;
const FETCH_LAST: i64 = 0x8;
const FETCH_ABSOLUTE: i64 = 0x10;
const FETCH_RELATIVE: i64 = 0x20;
const FETCH_REFRESH: i64 = 0x80;
const FETCH_INFO: i64 = 0x100;
const FETCH_PREV_NOADJUST: i64 = 0x200;
const FETCH_SKIP_UPDT_CNCY: i64 = 0x400;
// sp_cursor @optype
const OP_UPDATE: i64 = 0x1;
const OP_DELETE: i64 = 0x2;
const OP_INSERT: i64 = 0x4;
const OP_REFRESH: i64 = 0x8;
const OP_LOCK: i64 = 0x10;
const OP_SETPOSITION: i64 = 0x20;
const OP_ABSOLUTE: i64 = 0x40;
// ROWSTAT
const FETCH_SUCCEEDED: i64 = 1;
const FETCH_MISSING: i64 = 2;
/// Return status of a fetch whose negative move was stopped at the first row.
const STATUS_ADJUSTED: i32 = 2;

/// A session's cursors and prepared cursor statements.
pub(super) struct Cursors {
    open: HashMap<i32, Cursor>,
    prepared: HashMap<i32, PreparedCursor>,
    next_cursor: i32,
    next_prepared: i32,
}

impl Default for Cursors {
    fn default() -> Cursors {
        Cursors {
            open: HashMap::new(),
            prepared: HashMap::new(),
            next_cursor: FIRST_CURSOR_HANDLE,
            next_prepared: FIRST_PREPARED_HANDLE,
        }
    }
}

impl Cursors {
    /// Closes every cursor and forgets every prepared statement (the session ends).
    pub(super) fn clear(&mut self) {
        self.open.clear();
        self.prepared.clear();
    }
}

/// A statement prepared by `sp_cursorprepare` or `sp_cursorprepexec`.
#[derive(Clone)]
struct PreparedCursor {
    paramdef: String,
    stmt: String,
}

struct Cursor {
    /// The scroll type and concurrency granted (`@scrollopt`, `@ccopt` bits).
    scroll: i64,
    concurrency: i64,
    /// The select list's columns, then the hidden ROWSTAT.
    columns: Vec<OutputColumn>,
    origins: ColumnOrigins,
    rows: Vec<CursorRow>,
    /// What the rows hold of the query memory.
    memory: Reservation,
    keyed: Option<Keyed>,
    /// The fetch buffer: its first row (1-based; 0 before the first row, `rows.len() + 1`
    /// after the last) and how many rows it holds.
    start: i64,
    len: usize,
    /// `sp_cursoroption … CURSOR_NAME`.
    name: Option<String>,
}

struct CursorRow {
    /// The select list's values as last read.
    values: Vec<Value>,
    /// The row's key (keyed cursors; empty otherwise).
    key: Vec<Value>,
    /// Deleted since the cursor opened (ROWSTAT 2).
    missing: bool,
}

/// A keyed cursor's base table and how rows are found again.
#[derive(Clone)]
struct Keyed {
    table: Vec<String>,
    /// The key columns, with their types.
    keys: Vec<(String, SqlType)>,
    /// For each select-list column, the base column it reads (None: an expression).
    bases: Vec<Option<String>>,
    /// Reads one row again by key (`@__k1`, …).
    reread: String,
    reread_params: String,
}

impl Keyed {
    fn qualified_table(&self) -> String {
        self.table.iter().map(|p| quote(p)).collect::<Vec<_>>().join(".")
    }

    /// `[k1] = @__k1 AND …`, and the parameters' declarations and values.
    fn key_match(&self, key: &[Value]) -> (String, Vec<String>, Vec<RpcParam>) {
        let mut conditions = Vec::new();
        let mut decls = Vec::new();
        let mut params = Vec::new();
        for (i, ((name, ty), value)) in self.keys.iter().zip(key).enumerate() {
            let p = format!("@__k{}", i + 1);
            conditions.push(format!("{} = {p}", quote(name)));
            decls.push(format!("{p} {}", types::type_name(ty)));
            params.push(RpcParam { name: Some(p), value: value.clone(), ty: *ty, output: false });
        }
        (conditions.join(" AND "), decls, params)
    }
}

/// What `sp_cursoropen` makes of a statement (before running it).
enum Shape {
    /// Not a single SELECT a cursor can serve: run directly, or refused.
    Direct,
    /// Served as the rows it returned at open. `converts`: SQL Server makes such a cursor
    /// STATIC whatever was asked (no table, aggregates, DISTINCT, set operators …).
    Snapshot {
        converts: bool,
    },
    Keyed(KeyPlan),
}

/// A keyed cursor's statement and table, found before it runs.
struct KeyPlan {
    /// The statement with the key columns appended to its select list.
    text: String,
    keyed: Keyed,
}

/// The scroll type and concurrency a cursor gets for a request, and whether it is keyed
/// (else a snapshot).
struct Granted {
    scroll: i64,
    concurrency: i64,
    keyed: bool,
}

/// The API cursor procedures.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Proc {
    Cursor,
    Open,
    Prepare,
    Execute,
    PrepExec,
    Unprepare,
    Fetch,
    Option,
    Close,
}

impl Proc {
    const ALL: [Proc; 9] = [
        Proc::Cursor,
        Proc::Open,
        Proc::Prepare,
        Proc::Execute,
        Proc::PrepExec,
        Proc::Unprepare,
        Proc::Fetch,
        Proc::Option,
        Proc::Close,
    ];

    /// The procedure `name` (`sp_cursorfetch`, `..sp_cursorfetch`, `sys.sp_cursorfetch`)
    /// names.
    fn lookup(name: &str) -> Option<Proc> {
        let name = name.rsplit('.').next().unwrap_or(name);
        Proc::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(name))
    }

    fn name(self) -> &'static str {
        match self {
            Proc::Cursor => "sp_cursor",
            Proc::Open => "sp_cursoropen",
            Proc::Prepare => "sp_cursorprepare",
            Proc::Execute => "sp_cursorexecute",
            Proc::PrepExec => "sp_cursorprepexec",
            Proc::Unprepare => "sp_cursorunprepare",
            Proc::Fetch => "sp_cursorfetch",
            Proc::Option => "sp_cursoroption",
            Proc::Close => "sp_cursorclose",
        }
    }
}

/// A call's parameters (positional, as these procedures take them) and the values its
/// OUTPUT parameters get.
struct Call<'p> {
    proc: Proc,
    params: &'p [RpcParam],
    outputs: Vec<Option<Value>>,
}

impl Call<'_> {
    fn int(&self, i: usize) -> Option<i64> {
        match self.params.get(i).map(|p| &p.value) {
            Some(Value::Int(n)) => Some(*n),
            Some(Value::Null) | None => None,
            Some(v) => match types::cast(v, &self.params[i].ty, &SqlType::BigInt, None) {
                Ok(Value::Int(n)) => Some(n),
                _ => None,
            },
        }
    }

    fn text(&self, i: usize) -> Option<String> {
        self.params.get(i).and_then(|p| super::rpc::as_text(&p.value))
    }

    fn set(&mut self, i: usize, value: i64) {
        if i < self.outputs.len() {
            self.outputs[i] = Some(Value::Int(value));
        }
    }

    fn error(&self, e: SqlError) -> SqlError {
        let mut e = e;
        e.procedure = Some(self.proc.name().to_string());
        e
    }

    fn invalid(&self, parameter: &str) -> SqlError {
        self.error(msg::CURSOR_PARAMETER_INVALID.with(&[&self.proc.name(), &parameter]))
    }

    fn bad_handle(&self, handle: i64) -> SqlError {
        self.error(msg::CURSOR_HANDLE_INVALID.with(&[&self.proc.name(), &format!("{:x}", handle as i32)]))
    }

    /// The statement text at `i`, once the call is seen to have `need` parameters.
    fn statement(&self, need: usize, i: usize) -> Result<String, SqlError> {
        self.need(need)?;
        self.text(i).ok_or_else(|| self.invalid("stmt"))
    }

    /// The scroll and concurrency options at `scrollopt` and `ccopt`: KEYSET and
    /// OPTIMISTIC when not given (whatever `sp_cursorprepare` was told, for
    /// `sp_cursorexecute`).
    fn request(&self, scrollopt: usize, ccopt: usize) -> (i64, i64) {
        (self.int(scrollopt).unwrap_or(KEYSET), self.int(ccopt).unwrap_or(OPTIMISTIC))
    }

    fn need(&self, count: usize) -> Result<(), SqlError> {
        if self.params.len() < count {
            return Err(self.error(msg::CURSOR_PARAMETER_COUNT.with(&[&self.proc.name()])));
        }
        Ok(())
    }
}

/// How a call ended: its return status, or an error already sent.
type Outcome = Result<i32, ()>;

impl Session {
    /// Whether `name` is one of the API cursor procedures this module serves.
    pub(super) fn is_api_cursor_procedure(name: &str) -> bool {
        Proc::lookup(name).is_some()
    }

    /// Runs an API cursor procedure called by RPC; returns its OUTPUT parameters' values.
    pub(super) fn run_api_cursor_procedure(
        &mut self,
        procedure: &str,
        params: &[RpcParam],
        sink: &mut dyn ResultSink,
    ) -> Vec<(Option<String>, Value, SqlType)> {
        let proc = Proc::lookup(procedure).expect("an API cursor procedure");
        let mut call = Call { proc, params, outputs: vec![None; params.len()] };
        let result = match proc {
            Proc::Open => self.cursor_open(&mut call, sink),
            Proc::Prepare => self.cursor_prepare(&mut call, sink),
            Proc::Execute => self.cursor_execute(&mut call, sink),
            Proc::PrepExec => self.cursor_prepexec(&mut call, sink),
            Proc::Unprepare => self.cursor_unprepare(&call, sink),
            Proc::Fetch => self.with_cursor(&mut call, 1, sink, Session::fetch),
            Proc::Option => self.cursor_option(&mut call, sink),
            Proc::Close => self.cursor_close(&call, sink),
            Proc::Cursor => self.with_cursor(&mut call, 3, sink, Session::positioned),
        };
        sink.return_status(result.unwrap_or(1));
        params
            .iter()
            .zip(call.outputs)
            .filter(|(p, _)| p.output)
            .map(|(p, out)| {
                let value = match out {
                    Some(v) => types::cast(&v, &SqlType::Int, &p.ty, None).unwrap_or(Value::Null),
                    None => p.value.clone(),
                };
                (p.name.clone(), value, p.ty)
            })
            .collect()
    }

    /// A DONE's count, unless SET NOCOUNT ON hides it.
    fn counted(&self, rows: u64) -> Option<u64> {
        (!self.state.options.nocount).then_some(rows)
    }

    /// Sends `e` to the client as a failure of the call.
    fn cursor_fail(&mut self, e: SqlError, sink: &mut dyn ResultSink) -> Outcome {
        sink.message(&e);
        self.state.error = e.number;
        Err(())
    }

    /// `sp_cursoropen @cursor OUTPUT, @stmt [, @scrollopt [OUTPUT] [, @ccopt [OUTPUT]
    /// [, @rowcount OUTPUT [, @paramdef, values…]]]]`
    fn cursor_open(&mut self, call: &mut Call, sink: &mut dyn ResultSink) -> Outcome {
        let stmt = match call.statement(2, 1) {
            Ok(stmt) => stmt,
            Err(e) => return self.cursor_fail(e, sink),
        };
        let paramdef = call.text(5).unwrap_or_default();
        let args = call.params.get(6..).unwrap_or_default().to_vec();
        let request = call.request(2, 3);
        let slots = OpenSlots { cursor: 0, scrollopt: 2, ccopt: 3, rowcount: 4 };
        self.open_cursor(call, slots, &stmt, &paramdef, &args, request, sink)
    }

    /// `sp_cursorprepare @handle OUTPUT, @params, @stmt, @options [, @scrollopt [OUTPUT]
    /// [, @ccopt [OUTPUT]]]`: the statement is checked and kept; no cursor is made.
    fn cursor_prepare(&mut self, call: &mut Call, sink: &mut dyn ResultSink) -> Outcome {
        let stmt = match call.statement(3, 2) {
            Ok(stmt) => stmt,
            Err(e) => return self.cursor_fail(e, sink),
        };
        let paramdef = call.text(1).unwrap_or_default();
        let request = call.request(4, 5);
        let granted = match self.plan_cursor(call, &stmt, request) {
            Ok((_, granted)) => granted,
            Err(e) => return self.cursor_fail(e, sink),
        };
        let handle = match self.keep_prepared(call, paramdef, stmt) {
            Ok(h) => h,
            Err(e) => return self.cursor_fail(e, sink),
        };
        call.set(0, i64::from(handle));
        if let Some(g) = granted {
            call.set(4, g.scroll);
            call.set(5, g.concurrency);
        }
        Ok(0)
    }

    /// `sp_cursorexecute @handle, @cursor OUTPUT [, @scrollopt [OUTPUT] [, @ccopt [OUTPUT]
    /// [, @rowcount OUTPUT [, values…]]]]`
    fn cursor_execute(&mut self, call: &mut Call, sink: &mut dyn ResultSink) -> Outcome {
        if let Err(e) = call.need(2) {
            return self.cursor_fail(e, sink);
        }
        let handle = call.int(0).unwrap_or(0);
        let Some(prepared) = i32::try_from(handle).ok().and_then(|h| self.cursors.prepared.get(&h)).cloned() else {
            return self.cursor_fail(call.error(msg::PREPARED_HANDLE_NOT_FOUND.with(&[&handle])), sink);
        };
        let args = call.params.get(5..).unwrap_or_default().to_vec();
        let request = call.request(2, 3);
        let slots = OpenSlots { cursor: 1, scrollopt: 2, ccopt: 3, rowcount: 4 };
        self.open_cursor(call, slots, &prepared.stmt, &prepared.paramdef, &args, request, sink)
    }

    /// `sp_cursorprepexec @handle OUTPUT, @cursor OUTPUT, @params, @stmt [, @scrollopt
    /// [OUTPUT] [, @ccopt [OUTPUT] [, @rowcount OUTPUT [, values…]]]]` (the order the
    /// Microsoft JDBC driver sends).
    fn cursor_prepexec(&mut self, call: &mut Call, sink: &mut dyn ResultSink) -> Outcome {
        let stmt = match call.statement(4, 3) {
            Ok(stmt) => stmt,
            Err(e) => return self.cursor_fail(e, sink),
        };
        let paramdef = call.text(2).unwrap_or_default();
        let handle = match self.keep_prepared(call, paramdef.clone(), stmt.clone()) {
            Ok(h) => h,
            Err(e) => return self.cursor_fail(e, sink),
        };
        call.set(0, i64::from(handle));
        let args = call.params.get(7..).unwrap_or_default().to_vec();
        let request = call.request(4, 5);
        let slots = OpenSlots { cursor: 1, scrollopt: 4, ccopt: 5, rowcount: 6 };
        self.open_cursor(call, slots, &stmt, &paramdef, &args, request, sink)
    }

    /// `sp_cursorunprepare @handle`
    fn cursor_unprepare(&mut self, call: &Call, sink: &mut dyn ResultSink) -> Outcome {
        let handle = call.int(0).unwrap_or(0);
        if i32::try_from(handle).ok().and_then(|h| self.cursors.prepared.remove(&h)).is_none() {
            return self.cursor_fail(call.error(msg::PREPARED_HANDLE_NOT_FOUND.with(&[&handle])), sink);
        }
        Ok(0)
    }

    fn keep_prepared(&mut self, call: &Call, paramdef: String, stmt: String) -> Result<i32, SqlError> {
        if self.cursors.prepared.len() >= MAX_PREPARED {
            return Err(call.error(msg::CURSOR_LIMIT_REACHED.err()));
        }
        let handle = self.cursors.next_prepared;
        self.cursors.next_prepared = handle.checked_add(1).unwrap_or(FIRST_PREPARED_HANDLE);
        self.cursors.prepared.insert(handle, PreparedCursor { paramdef, stmt });
        Ok(handle)
    }

    /// `sp_cursorclose @cursor`
    fn cursor_close(&mut self, call: &Call, sink: &mut dyn ResultSink) -> Outcome {
        let handle = call.int(0).unwrap_or(0);
        if i32::try_from(handle).ok().and_then(|h| self.cursors.open.remove(&h)).is_none() {
            return self.cursor_fail(call.bad_handle(handle), sink);
        }
        Ok(0)
    }

    /// `sp_cursoroption @cursor, @code, @value [OUTPUT]`: TEXTPTR_ONLY and TEXTDATA (no
    /// text, ntext or image columns here: nothing to do), CURSOR_NAME, and SCROLLOPT, CCOPT
    /// and ROWCOUNT, which answer in @value.
    fn cursor_option(&mut self, call: &mut Call, sink: &mut dyn ResultSink) -> Outcome {
        if let Err(e) = call.need(3) {
            return self.cursor_fail(e, sink);
        }
        let handle = call.int(0).unwrap_or(0);
        let Some(cursor) = i32::try_from(handle).ok().and_then(|h| self.cursors.open.get(&h)) else {
            return self.cursor_fail(call.bad_handle(handle), sink);
        };
        let answer = match call.int(1) {
            Some(1 | 3) => None,
            Some(2) => {
                let Some(name) = call.text(2).filter(|n| !n.is_empty()) else {
                    return self.cursor_fail(call.invalid("value"), sink);
                };
                let taken = self.cursors.open.iter().any(|(h, c)| {
                    i64::from(*h) != handle && c.name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(&name))
                });
                if taken {
                    return self.cursor_fail(call.error(msg::CURSOR_NAME_EXISTS.with(&[&name])), sink);
                }
                if let Some(c) = i32::try_from(handle).ok().and_then(|h| self.cursors.open.get_mut(&h)) {
                    c.name = Some(name);
                }
                None
            }
            Some(4) => Some(cursor.scroll),
            Some(5) => Some(cursor.concurrency),
            Some(6) => Some(cursor.row_count()),
            _ => return self.cursor_fail(call.invalid("code"), sink),
        };
        if let Some(v) = answer {
            call.set(2, v);
        }
        Ok(0)
    }

    /// What a statement is (see [`Shape`]) and the cursor it gets for `request` (scrollopt,
    /// ccopt): None for a statement run directly. Errors: a statement that does not parse,
    /// a bad option, 16937 (no cursor and no ALLOW_DIRECT), 16955 (no acceptable cursor).
    fn plan_cursor(
        &mut self,
        call: &Call,
        stmt: &str,
        (scrollopt, ccopt): (i64, i64),
    ) -> Result<(Shape, Option<Granted>), SqlError> {
        let scroll_asked = scrollopt & 0x1F;
        if ![KEYSET, DYNAMIC, FORWARD_ONLY, STATIC, FAST_FORWARD].contains(&scroll_asked) {
            return Err(call.invalid("scrollopt"));
        }
        let cc_asked = ccopt & 0xF;
        if ![READ_ONLY, SCROLL_LOCKS, OPTIMISTIC, OPTIMISTIC_VALUES].contains(&cc_asked) {
            return Err(call.invalid("ccopt"));
        }
        let cached =
            self.shared.plans.get_or_parse(stmt, tessera_syntax::parser::parse_batch).map_err(|e| call.error(e))?;
        let shape = self.shape_of(&cached.batch.statements, stmt);
        let (scroll, keyed) = match (&shape, scroll_asked) {
            (Shape::Direct, _) => {
                if ccopt & ALLOW_DIRECT == 0 {
                    return Err(call.error(msg::CURSOR_NOT_ALLOWED.err()));
                }
                return Ok((shape, None));
            }
            (_, FAST_FORWARD) => (FAST_FORWARD, false),
            (_, STATIC) => (STATIC, false),
            (Shape::Keyed(_), FORWARD_ONLY) => (FORWARD_ONLY, true),
            (Shape::Keyed(_), _) => (KEYSET, true),
            (Shape::Snapshot { converts: false }, FORWARD_ONLY) => (FORWARD_ONLY, false),
            (Shape::Snapshot { .. }, _) => (STATIC, false),
        };
        let concurrency = match cc_asked {
            _ if !keyed => READ_ONLY,
            SCROLL_LOCKS => OPTIMISTIC,
            cc => cc,
        };
        let acceptable =
            |options: i64, check: i64, granted: i64| options & check == 0 || (options >> 16) & granted != 0;
        if !acceptable(scrollopt, CHECK_ACCEPTED_TYPES, scroll) || !acceptable(ccopt, CHECK_ACCEPTED_OPTS, concurrency)
        {
            return Err(call.error(msg::CURSOR_NOT_ACCEPTABLE.err()));
        }
        Ok((shape, Some(Granted { scroll, concurrency, keyed })))
    }

    /// Opens a cursor on `stmt` (or runs it directly) and answers in `call`'s OUTPUT
    /// parameters at `slots`.
    #[allow(clippy::too_many_arguments)]
    fn open_cursor(
        &mut self,
        call: &mut Call,
        slots: OpenSlots,
        stmt: &str,
        paramdef: &str,
        args: &[RpcParam],
        request: (i64, i64),
        sink: &mut dyn ResultSink,
    ) -> Outcome {
        call.set(slots.cursor, 0);
        call.set(slots.rowcount, -1);
        let (shape, granted) = match self.plan_cursor(call, stmt, request) {
            Ok(p) => p,
            Err(e) => return self.cursor_fail(e, sink),
        };
        let Some(granted) = granted else {
            // Executed directly: its results go to the client as a batch's do.
            sink.message(&msg::CURSOR_EXECUTED_DIRECTLY.err());
            let mut direct = Capture { pass: true, ..Capture::new(sink, None, self.state.cancel.clone()) };
            self.run_statement(stmt, paramdef, args, &mut direct);
            return if direct.failed { Err(()) } else { Ok(0) };
        };
        if self.cursors.open.len() >= MAX_OPEN_CURSORS {
            return self.cursor_fail(call.error(msg::CURSOR_LIMIT_REACHED.err()), sink);
        }
        let plan = match shape {
            Shape::Keyed(plan) if granted.keyed => Some(plan),
            _ => None,
        };
        let text = plan.as_ref().map_or(stmt, |p| p.text.as_str());
        let grant = Grant::new(self.shared.query_memory.clone(), self.state.query_pool.as_ref());
        let mut capture = Capture::new(sink, Some(Reservation::new(&grant)), self.state.cancel.clone());
        self.run_statement(text, paramdef, args, &mut capture);
        if let Some(e) = capture.overflow.take() {
            self.state.cancel.store(false, Ordering::Relaxed);
            return self.cursor_fail(e, capture.client);
        }
        if capture.failed {
            return Err(());
        }
        let Capture { columns: mut visible, rows, memory, .. } = capture;
        let memory = memory.expect("rows held under a grant");
        let key_count = plan.as_ref().map_or(0, |p| p.keyed.keys.len());
        let split = visible.len().saturating_sub(key_count);
        visible.truncate(split);
        let keyed = plan.map(|p| {
            let mut keyed = p.keyed;
            if keyed.bases.len() != split {
                keyed.bases = vec![None; split];
            }
            keyed
        });
        let rows = rows
            .into_iter()
            .map(|mut values| {
                let key = values.split_off(split.min(values.len()));
                CursorRow { values, key, missing: false }
            })
            .collect();
        let origins = origins(&visible, keyed.as_ref());
        let mut columns = visible;
        columns.push(OutputColumn { name: "ROWSTAT".to_string(), ty: SqlType::Int, nullable: false });
        let cursor = Cursor {
            scroll: granted.scroll,
            concurrency: granted.concurrency,
            columns,
            origins,
            rows,
            memory,
            keyed,
            start: 0,
            len: 0,
            name: None,
        };
        let handle = self.new_cursor_handle();
        if granted.scroll != request.0 & 0x1F || granted.concurrency != request.1 & 0xF {
            sink.message(&msg::CURSOR_TYPE_CONVERTED.err());
        }
        sink.cursor_columns(&cursor.columns, &cursor.origins);
        call.set(slots.cursor, i64::from(handle));
        call.set(slots.scrollopt, granted.scroll);
        call.set(slots.ccopt, granted.concurrency);
        call.set(slots.rowcount, cursor.row_count());
        self.cursors.open.insert(handle, cursor);
        Ok(0)
    }

    fn new_cursor_handle(&mut self) -> i32 {
        loop {
            let handle = self.cursors.next_cursor;
            self.cursors.next_cursor = handle.checked_add(1).unwrap_or(FIRST_CURSOR_HANDLE);
            if !self.cursors.open.contains_key(&handle) {
                return handle;
            }
        }
    }

    /// Runs `text` as `sp_executesql @text, @paramdef, args…`.
    fn run_statement(&mut self, text: &str, paramdef: &str, args: &[RpcParam], sink: &mut dyn ResultSink) {
        let nvarchar = |s: &str| RpcParam {
            name: None,
            value: Value::str(s),
            ty: SqlType::NVarChar(tessera_access::row::MAX),
            output: false,
        };
        let mut params = vec![nvarchar(text), nvarchar(paramdef)];
        params.extend(args.iter().cloned());
        self.call_rpc("sp_executesql", &params, sink);
    }

    /// The [`Shape`] of a batch's statements.
    fn shape_of(&self, statements: &[ast::Statement], text: &str) -> Shape {
        let [statement] = statements else { return Shape::Direct };
        let StatementKind::Query(query) = &statement.kind else { return Shape::Direct };
        let select = match &query.body {
            SetExpr::Select(s) => s,
            _ => return Shape::Snapshot { converts: true },
        };
        if select.into.is_some() || select.items.iter().any(|i| matches!(i, SelectItem::Assign { .. })) {
            return Shape::Direct;
        }
        let aggregates = select.items.iter().any(|i| match i {
            SelectItem::Expr { expr, .. } => aggregates(expr),
            _ => false,
        });
        if select.distinct
            || !select.group_by.is_empty()
            || select.having.is_some()
            || aggregates
            || select.from.is_empty()
        {
            return Shape::Snapshot { converts: true };
        }
        let snapshot = Shape::Snapshot { converts: false };
        // A select list that reads parameters cannot be read again by key alone.
        let variables = select.items.iter().any(|i| match i {
            SelectItem::Expr { expr, .. } => expr.any(&|x| matches!(x, Expr::Variable(_))),
            _ => false,
        });
        let ([TableRef::Named { name, alias, .. }], true) =
            (select.from.as_slice(), query.with.is_empty() && !variables)
        else {
            return snapshot;
        };
        let Some((database, table)) = self.base_table(name) else { return snapshot };
        let Some(key) = unique_key(&table) else { return snapshot };
        let Some(parts) = split_select(&text[statement.span.0..statement.span.1.min(text.len())]) else {
            return snapshot;
        };
        let qualifier = quote(&alias.as_ref().unwrap_or(name.name()).value);
        let keys: Vec<(String, SqlType)> =
            key.iter().map(|&c| (table.columns[c].name.clone(), table.columns[c].ty)).collect();
        let hidden = keys
            .iter()
            .enumerate()
            .map(|(i, (k, _))| format!("{qualifier}.{} AS [__tessera_key{}]", quote(k), i + 1))
            .collect::<Vec<_>>()
            .join(", ");
        let text = format!("{}{}, {hidden} {}{}", parts.head, parts.items.trim_end(), parts.from, parts.rest);
        let mut decls = Vec::new();
        let mut conditions = Vec::new();
        for (i, (k, ty)) in keys.iter().enumerate() {
            decls.push(format!("@__k{} {}", i + 1, types::type_name(ty)));
            conditions.push(format!("{qualifier}.{} = @__k{}", quote(k), i + 1));
        }
        let reread = format!(
            "SELECT {}, {hidden} {} WHERE {}",
            parts.items.trim_end(),
            parts.from.trim_end(),
            conditions.join(" AND ")
        );
        let mut bases = Vec::new();
        for item in &select.items {
            match item {
                SelectItem::Wildcard | SelectItem::QualifiedWildcard(_) => {
                    bases.extend(table.columns.iter().map(|c| Some(c.name.clone())))
                }
                SelectItem::Expr { expr: Expr::Column(c), .. } => bases.push(Some(c.name().value.clone())),
                _ => bases.push(None),
            }
        }
        Shape::Keyed(KeyPlan {
            text,
            keyed: Keyed {
                table: vec![database, table.schema.clone(), table.name.clone()],
                keys,
                bases,
                reread,
                reread_params: decls.join(", "),
            },
        })
    }

    /// The base table `name` names (a permanent table of the session's databases, not a
    /// view, temp table or table variable), with its database's name as the catalog has it.
    fn base_table(&self, name: &ast::ObjectName) -> Option<(String, Arc<Table>)> {
        let parts: Vec<&str> = name.0.iter().map(|p| p.value.as_str()).collect();
        let (db, schemas, table): (&str, Vec<&str>, &str) = match parts.as_slice() {
            [t] => (&self.state.database, vec![&self.state.default_schema, "dbo"], t),
            [s, t] => (&self.state.database, vec![if s.is_empty() { "dbo" } else { s }], t),
            [d, s, t] => {
                (if d.is_empty() { &self.state.database } else { d }, vec![if s.is_empty() { "dbo" } else { s }], t)
            }
            _ => return None,
        };
        if table.starts_with('#') || table.starts_with('@') {
            return None;
        }
        let of = self.state.catalog_of(&self.shared, db).ok()?;
        let found = schemas.iter().find_map(|s| of.catalog.table(s, table).cloned())?;
        Some((of.database.to_string(), found))
    }

    /// Runs `f` on the cursor `call`'s first parameter names (taken out of the session's
    /// cursors while it runs), once the call is seen to have `need` parameters.
    fn with_cursor(
        &mut self,
        call: &mut Call,
        need: usize,
        sink: &mut dyn ResultSink,
        f: impl FnOnce(&mut Session, &mut Cursor, &mut Call, &mut dyn ResultSink) -> Outcome,
    ) -> Outcome {
        if let Err(e) = call.need(need) {
            return self.cursor_fail(e, sink);
        }
        let handle = call.int(0).unwrap_or(0);
        let Some((handle, mut cursor)) =
            i32::try_from(handle).ok().and_then(|h| self.cursors.open.remove(&h).map(|c| (h, c)))
        else {
            return self.cursor_fail(call.bad_handle(handle), sink);
        };
        let result = f(self, &mut cursor, call, sink);
        self.cursors.open.insert(handle, cursor);
        result
    }

    /// `sp_cursorfetch @cursor [, @fetchtype [, @rownum [, @nrows]]]`
    fn fetch(&mut self, cursor: &mut Cursor, call: &mut Call, sink: &mut dyn ResultSink) -> Outcome {
        let fetchtype = call.int(1).unwrap_or(FETCH_NEXT) & !FETCH_SKIP_UPDT_CNCY;
        let rownum = call.int(2).unwrap_or(0);
        let nrows = call.int(3).unwrap_or(20);
        let count = cursor.rows.len() as i64;
        if fetchtype == FETCH_INFO {
            let position = match cursor.start {
                0 => 0,
                s if s > count => -1,
                s => s,
            };
            call.set(2, position);
            call.set(3, cursor.row_count());
            return Ok(0);
        }
        let name = match fetchtype {
            FETCH_FIRST => "FIRST",
            FETCH_NEXT => "NEXT",
            FETCH_PREV => "PREV",
            FETCH_LAST => "LAST",
            FETCH_ABSOLUTE => "ABSOLUTE",
            FETCH_RELATIVE => "RELATIVE",
            FETCH_REFRESH => "REFRESH",
            FETCH_PREV_NOADJUST => "PREV_NOADJUST",
            _ => return self.cursor_fail(call.invalid("fetchtype"), sink),
        };
        if cursor.forward_only() && !matches!(fetchtype, FETCH_NEXT | FETCH_REFRESH) {
            return self
                .cursor_fail(call.error(msg::CURSOR_FORWARD_ONLY_FETCH.with(&[&call.proc.name(), &name])), sink);
        }
        if nrows < 0 || (nrows == 0 && !matches!(fetchtype, FETCH_FIRST | FETCH_LAST | FETCH_REFRESH)) {
            return self.cursor_fail(call.invalid("nrows"), sink);
        }
        let before = 0;
        let after = count + 1;
        let mut status = 0;
        // The new buffer's first row and length (clamped to the rows there are below).
        let (start, want) = match fetchtype {
            FETCH_FIRST if nrows == 0 => (before, 0),
            FETCH_FIRST => (1, nrows),
            FETCH_NEXT => match cursor.start {
                0 => (1, nrows),
                s => (s + cursor.len as i64, nrows),
            },
            FETCH_PREV => {
                if cursor.start <= 1 {
                    (before, 0)
                } else if cursor.start - nrows < 1 {
                    status = STATUS_ADJUSTED;
                    (1, nrows)
                } else {
                    (cursor.start - nrows, nrows)
                }
            }
            FETCH_PREV_NOADJUST => {
                if cursor.start <= 1 {
                    (before, 0)
                } else {
                    let first = (cursor.start - nrows).max(1);
                    (first, cursor.start - first)
                }
            }
            FETCH_LAST if nrows == 0 => (after, 0),
            FETCH_LAST => ((count - nrows + 1).max(1), nrows),
            FETCH_ABSOLUTE => match rownum {
                0 => (before, 0),
                r if r > 0 => (r, nrows),
                r => (count + r + 1, nrows),
            },
            FETCH_RELATIVE => (cursor.start.min(after) + rownum, nrows),
            _ => (cursor.start, cursor.len as i64),
        };
        let (start, len) = if count == 0 && fetchtype != FETCH_REFRESH {
            (if matches!(fetchtype, FETCH_PREV | FETCH_PREV_NOADJUST) || start < 1 { before } else { after }, 0)
        } else if start < 1 {
            (before, 0)
        } else if start > count {
            (after, 0)
        } else {
            (start, want.min(count - start + 1).max(0) as usize)
        };
        self.reread(cursor, start, len, sink)?;
        cursor.start = start;
        cursor.len = len;
        cursor.send_rows(start, len, self.state.options.nocount, sink);
        Ok(status)
    }

    /// Reads rows `start ..` (`len` of them) of a keyed cursor again from its table: the
    /// current values, or missing when deleted. Nothing to do for a snapshot.
    fn reread(&mut self, cursor: &mut Cursor, start: i64, len: usize, sink: &mut dyn ResultSink) -> Result<(), ()> {
        let Some(keyed) = &cursor.keyed else { return Ok(()) };
        if start < 1 {
            return Ok(());
        }
        let first = (start - 1) as usize;
        for row in cursor.rows.iter_mut().skip(first).take(len) {
            if row.missing {
                continue;
            }
            let (_, _, params) = keyed.key_match(&row.key);
            let mut capture = Capture::new(sink, None, self.state.cancel.clone());
            self.run_statement(&keyed.reread, &keyed.reread_params, &params, &mut capture);
            if capture.failed {
                return Err(());
            }
            match capture.rows.into_iter().next() {
                Some(mut values) => {
                    values.truncate(row.values.len());
                    if values.len() == row.values.len() {
                        row.values = values;
                    }
                }
                None => row.missing = true,
            }
        }
        Ok(())
    }

    /// `sp_cursor @cursor, @optype, @rownum, @table [, values…]`
    fn positioned(&mut self, cursor: &mut Cursor, call: &mut Call, sink: &mut dyn ResultSink) -> Outcome {
        let optype = call.int(1).unwrap_or(0);
        let rownum = call.int(2).unwrap_or(0);
        let op = optype & !(OP_SETPOSITION | OP_ABSOLUTE);
        if optype & OP_ABSOLUTE != 0 && !matches!(op, OP_UPDATE | OP_DELETE) {
            return self.cursor_fail(call.error(msg::CURSOR_ABSOLUTE_OPTYPE.err()), sink);
        }
        if !matches!(op, 0 | OP_UPDATE | OP_DELETE | OP_INSERT | OP_REFRESH | OP_LOCK) {
            return self.cursor_fail(call.invalid("optype"), sink);
        }
        if op == OP_LOCK {
            return self.cursor_fail(call.error(msg::CURSOR_FEATURE_NOT_IMPLEMENTED.with(&[&"sp_cursor LOCK"])), sink);
        }
        if op == 0 {
            // SETPOSITION alone: positioned T-SQL statements are not supported, so the
            // position matters to nothing.
            return Ok(0);
        }
        // The rows it acts on: positions in the whole keyset (0-based).
        let targets: Vec<usize> = if op == OP_INSERT {
            Vec::new()
        } else if optype & OP_ABSOLUTE != 0 {
            match usize::try_from(rownum) {
                Ok(r) if r >= 1 && r <= cursor.rows.len() => vec![r - 1],
                _ => return self.cursor_fail(call.error(msg::CURSOR_ROW_NOT_IN_BUFFER.err()), sink),
            }
        } else {
            if cursor.len == 0 {
                return self.cursor_fail(call.error(msg::CURSOR_FETCH_BUFFER_EMPTY.err()), sink);
            }
            let first = (cursor.start - 1) as usize;
            match usize::try_from(rownum) {
                Ok(0) => (first..first + cursor.len).collect(),
                Ok(r) if r <= cursor.len => vec![first + r - 1],
                _ => return self.cursor_fail(call.error(msg::CURSOR_ROW_NOT_IN_BUFFER.err()), sink),
            }
        };
        if op == OP_REFRESH {
            let (start, len) = match targets.as_slice() {
                [one] if targets.len() < cursor.len || rownum != 0 => (*one as i64 + 1, 1),
                _ => (cursor.start, cursor.len),
            };
            self.reread(cursor, start, len, sink)?;
            cursor.send_rows(start, len, self.state.options.nocount, sink);
            return Ok(0);
        }
        let keyed = match (&cursor.keyed, cursor.concurrency) {
            (Some(k), cc) if cc != READ_ONLY => k.clone(),
            _ => return self.cursor_fail(call.error(msg::CURSOR_READ_ONLY.err()), sink),
        };
        let keyed = &keyed;
        if let Some(table) = call.text(3).filter(|t| !t.trim().is_empty()) {
            if !names_table(&table, &keyed.table) {
                return self.cursor_fail(call.error(msg::CURSOR_TABLE_NOT_UPDATABLE.err()), sink);
            }
        }
        let values = call.params.get(4..).unwrap_or_default();
        let verb = match op {
            OP_UPDATE => "UPDATE",
            OP_INSERT => "INSERT",
            _ => "DELETE",
        };
        let assignments = if op == OP_DELETE {
            Assignments::default()
        } else {
            match Assignments::of(values, cursor, keyed) {
                Ok(a) if a.is_empty() => {
                    return self.cursor_fail(call.error(msg::CURSOR_NO_VALUES.with(&[&verb])), sink);
                }
                Ok(a) => a,
                Err(e) => return self.cursor_fail(call.error(e), sink),
            }
        };
        let table = keyed.qualified_table();
        if op == OP_INSERT {
            let text = assignments.insert(&table, keyed);
            let mut capture = Capture::new(sink, None, self.state.cancel.clone());
            self.run_statement(&text, &assignments.decls.join(", "), &assignments.params, &mut capture);
            if capture.failed {
                return Err(());
            }
            let width = cursor.columns.len() - 1;
            // Rows inserted through a keyset cursor are seen at its end.
            for key in capture.rows.iter().filter(|k| k.len() == keyed.keys.len()) {
                let bytes = row_bytes(key);
                if cursor.memory.take(bytes).is_ok() {
                    cursor.rows.push(CursorRow { values: vec![Value::Null; width], key: key.clone(), missing: false });
                }
            }
            let inserted = capture.rows.len() as u64;
            let counted = self.counted(inserted);
            sink.done(counted, Command::Insert);
            return Ok(0);
        }
        let mut changed = 0;
        for &target in &targets {
            let row = &cursor.rows[target];
            if row.missing {
                sink.message(&msg::CURSOR_OPTIMISTIC_CHECK_FAILED.err());
                return self.cursor_fail(call.error(msg::CURSOR_NO_ROWS_CHANGED.err()), sink);
            }
            let (key_match, mut decls, mut params) = keyed.key_match(&row.key);
            let mut conditions = vec![key_match];
            // Optimistic concurrency: the row still holds what was fetched.
            for (i, (base, value)) in keyed.bases.iter().zip(&row.values).enumerate() {
                let Some(base) = base else { continue };
                if keyed.keys.iter().any(|(k, _)| k.eq_ignore_ascii_case(base)) {
                    continue;
                }
                if value.is_null() {
                    conditions.push(format!("{} IS NULL", quote(base)));
                } else {
                    let p = format!("@__o{}", i + 1);
                    conditions.push(format!("{} = {p}", quote(base)));
                    decls.push(format!("{p} {}", types::type_name(&cursor.columns[i].ty)));
                    params.push(RpcParam {
                        name: Some(p),
                        value: value.clone(),
                        ty: cursor.columns[i].ty,
                        output: false,
                    });
                }
            }
            let filter = conditions.join(" AND ");
            let statement = if op == OP_UPDATE {
                decls.extend(assignments.decls.iter().cloned());
                params.extend(assignments.params.iter().cloned());
                assignments.update(&table, &filter)
            } else {
                format!("DELETE FROM {table} WHERE {filter}")
            };
            // The count comes from @@ROWCOUNT: under SET NOCOUNT ON a DONE carries none.
            let text = format!("{statement};\nSELECT @@ROWCOUNT");
            let mut capture = Capture::new(sink, None, self.state.cancel.clone());
            self.run_statement(&text, &decls.join(", "), &params, &mut capture);
            if capture.failed {
                return Err(());
            }
            let count = match capture.rows.first().and_then(|r| r.first()) {
                Some(Value::Int(n)) => u64::try_from(*n).unwrap_or(0),
                _ => 0,
            };
            if count == 0 {
                sink.message(&msg::CURSOR_OPTIMISTIC_CHECK_FAILED.err());
                return self.cursor_fail(call.error(msg::CURSOR_NO_ROWS_CHANGED.err()), sink);
            }
            changed += count;
            if op == OP_DELETE {
                cursor.rows[target].missing = true;
            } else {
                // A key changed in place (UPDT_IN_PLACE): the row keeps its place under
                // its new key.
                for (i, (k, ty)) in keyed.keys.iter().enumerate() {
                    if let Some(p) = assignments.value_of(k) {
                        if let Ok(v) = types::cast(&p.value, &p.ty, ty, None) {
                            cursor.rows[target].key[i] = v;
                        }
                    }
                }
                self.reread(cursor, target as i64 + 1, 1, sink)?;
            }
        }
        let counted = self.counted(changed);
        sink.done(counted, if op == OP_UPDATE { Command::Update } else { Command::Delete });
        Ok(0)
    }
}

/// Where `open_cursor` writes its answers: positions of the OUTPUT parameters.
#[derive(Clone, Copy)]
struct OpenSlots {
    cursor: usize,
    scrollopt: usize,
    ccopt: usize,
    rowcount: usize,
}

impl Cursor {
    fn forward_only(&self) -> bool {
        matches!(self.scroll, FORWARD_ONLY | FAST_FORWARD)
    }

    /// `@rowcount`: the rows of a static or keyset cursor, -1 (unknown) for the others.
    fn row_count(&self) -> i64 {
        if self.forward_only() {
            -1
        } else {
            self.rows.len() as i64
        }
    }

    /// Rows `start ..` (`len` of them; none before the first row) as a result set, each
    /// with its ROWSTAT; `nocount`: its DONE has no count (SET NOCOUNT ON).
    fn send_rows(&self, start: i64, len: usize, nocount: bool, sink: &mut dyn ResultSink) {
        sink.cursor_columns(&self.columns, &self.origins);
        let first = usize::try_from(start.max(1) - 1).unwrap_or(0);
        let mut sent = 0;
        for row in self.rows.iter().skip(first).take(if start < 1 { 0 } else { len }) {
            let mut out = if row.missing { vec![Value::Null; row.values.len()] } else { row.values.clone() };
            out.push(Value::Int(if row.missing { FETCH_MISSING } else { FETCH_SUCCEEDED }));
            sink.row(&out);
            sent += 1;
        }
        sink.done((!nocount).then_some(sent), Command::Select);
    }
}

/// The TABNAME and COLINFO of a cursor's columns (the select list's, then ROWSTAT).
fn origins(visible: &[OutputColumn], keyed: Option<&Keyed>) -> ColumnOrigins {
    let mut columns: Vec<ColumnOrigin> = visible
        .iter()
        .enumerate()
        .map(|(i, c)| match keyed.and_then(|k| k.bases.get(i).cloned().flatten().map(|b| (k, b))) {
            Some((k, base)) => ColumnOrigin {
                table: 1,
                key: k.keys.iter().any(|(n, _)| n.eq_ignore_ascii_case(&base)),
                base_name: (base != c.name).then_some(base),
                ..ColumnOrigin::default()
            },
            None => ColumnOrigin { expression: keyed.is_some(), ..ColumnOrigin::default() },
        })
        .collect();
    columns.push(ColumnOrigin { hidden: true, expression: true, ..ColumnOrigin::default() });
    ColumnOrigins { tables: keyed.map(|k| k.table.clone()).into_iter().collect(), columns }
}

/// The values of a positioned UPDATE or INSERT: `@column = value` parameters (named
/// after the select list's column or its base column), or text parameters holding the
/// statement or its SET list / VALUES list (`sp_cursor`'s documented forms).
#[derive(Default)]
struct Assignments {
    /// (base column, parameter) pairs.
    columns: Vec<(String, String)>,
    decls: Vec<String>,
    params: Vec<RpcParam>,
    /// The text form, when given that way.
    text: Option<String>,
}

impl Assignments {
    fn of(values: &[RpcParam], cursor: &Cursor, keyed: &Keyed) -> Result<Assignments, SqlError> {
        let mut a = Assignments::default();
        let mut texts = Vec::new();
        for (i, p) in values.iter().enumerate() {
            match &p.name {
                Some(name) => {
                    let column = name.trim_start_matches('@');
                    let base = keyed.bases.iter().zip(&cursor.columns).find_map(|(base, c)| {
                        let base = base.as_ref()?;
                        (base.eq_ignore_ascii_case(column) || c.name.eq_ignore_ascii_case(column)).then(|| base.clone())
                    });
                    let Some(base) = base else { return Err(msg::CURSOR_VALUES_INVALID.err()) };
                    let param = format!("@__v{}", i + 1);
                    a.decls.push(format!("{param} {}", types::type_name(&p.ty)));
                    a.params.push(RpcParam {
                        name: Some(param.clone()),
                        value: p.value.clone(),
                        ty: p.ty,
                        output: false,
                    });
                    a.columns.push((base, param));
                }
                None => match super::rpc::as_text(&p.value) {
                    Some(s) => texts.push(s),
                    None => return Err(msg::CURSOR_VALUES_INVALID.err()),
                },
            }
        }
        if !texts.is_empty() {
            if !a.columns.is_empty() {
                return Err(msg::CURSOR_VALUES_INVALID.err());
            }
            a.text = Some(texts.join(", "));
        }
        Ok(a)
    }

    /// The value given for `column` (named parameters only).
    fn value_of(&self, column: &str) -> Option<&RpcParam> {
        let at = self.columns.iter().position(|(c, _)| c.eq_ignore_ascii_case(column))?;
        self.params.get(at)
    }

    fn is_empty(&self) -> bool {
        self.columns.is_empty() && self.text.as_deref().is_none_or(|t| t.trim().is_empty())
    }

    /// `UPDATE table SET … WHERE filter`.
    fn update(&self, table: &str, filter: &str) -> String {
        match &self.text {
            Some(text) => {
                let t = text.trim_start();
                if starts_with_word(t, "UPDATE") {
                    format!("{t} WHERE {filter}")
                } else if starts_with_word(t, "SET") {
                    format!("UPDATE {table} {t} WHERE {filter}")
                } else {
                    format!("UPDATE {table} SET {t} WHERE {filter}")
                }
            }
            None => {
                let set: Vec<String> = self.columns.iter().map(|(c, p)| format!("{} = {p}", quote(c))).collect();
                format!("UPDATE {table} SET {} WHERE {filter}", set.join(", "))
            }
        }
    }

    /// `INSERT INTO table (…) OUTPUT inserted.key… VALUES (…)`: the new row's key comes
    /// back, so the cursor can show the row at its end.
    fn insert(&self, table: &str, keyed: &Keyed) -> String {
        let output = keyed.keys.iter().map(|(k, _)| format!("inserted.{}", quote(k))).collect::<Vec<_>>().join(", ");
        match &self.text {
            Some(text) => {
                let t = text.trim_start();
                if starts_with_word(t, "INSERT") {
                    with_output(t, &output).unwrap_or_else(|| t.to_string())
                } else if starts_with_word(t, "VALUES") {
                    format!("INSERT INTO {table} OUTPUT {output} {t}")
                } else {
                    format!("INSERT INTO {table} OUTPUT {output} VALUES ({t})")
                }
            }
            None => {
                let columns: Vec<String> = self.columns.iter().map(|(c, _)| quote(c)).collect();
                let values: Vec<&str> = self.columns.iter().map(|(_, p)| p.as_str()).collect();
                format!("INSERT INTO {table} ({}) OUTPUT {output} VALUES ({})", columns.join(", "), values.join(", "))
            }
        }
    }
}

/// `INSERT … VALUES|DEFAULT VALUES|SELECT …` with `OUTPUT output` before its source, when
/// the statement has no OUTPUT of its own.
fn with_output(insert: &str, output: &str) -> Option<String> {
    let tokens = tokenize(insert).ok()?;
    let mut depth = 0i32;
    for t in &tokens {
        match &t.kind {
            TokenKind::Punct(Punct::LParen) => depth += 1,
            TokenKind::Punct(Punct::RParen) => depth -= 1,
            TokenKind::Word if depth == 0 && t.is_word("OUTPUT") => return None,
            TokenKind::Word if depth == 0 && (t.is_word("VALUES") || t.is_word("DEFAULT") || t.is_word("SELECT")) => {
                return Some(format!("{}OUTPUT {output} {}", &insert[..t.start], &insert[t.start..]));
            }
            _ => {}
        }
    }
    None
}

fn starts_with_word(text: &str, word: &str) -> bool {
    text.len() >= word.len()
        && text[..word.len()].eq_ignore_ascii_case(word)
        && text[word.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '_')
}

/// Whether `sp_cursor`'s @table (`t`, `s.t`, `[d].[s].[t]`) names the cursor's table.
fn names_table(name: &str, table: &[String]) -> bool {
    let Ok(tokens) = tokenize(name) else { return false };
    let parts: Vec<String> = tokens
        .iter()
        .filter_map(|t| match &t.kind {
            TokenKind::Word => Some(t.text.to_string()),
            TokenKind::QuotedIdent(v) => Some(v.clone()),
            _ => None,
        })
        .collect();
    !parts.is_empty()
        && parts.len() <= table.len()
        && parts.iter().rev().zip(table.iter().rev()).all(|(a, b)| a.is_empty() || a.eq_ignore_ascii_case(b))
}

/// The columns (positions) of a table's unique key: its primary key, or else its first
/// unique index.
fn unique_key(table: &Table) -> Option<Vec<usize>> {
    let unique = |i: &&tessera_semantics::catalog::Index| i.unique && !i.is_heap() && !i.columns.is_empty();
    let index =
        table.indexes.iter().filter(unique).find(|i| i.primary_key).or_else(|| table.indexes.iter().find(unique))?;
    Some(index.columns.iter().map(|&(c, _)| c).collect())
}

/// Whether an expression calls an aggregate or a window function.
fn aggregates(e: &Expr) -> bool {
    tessera_semantics::bind::contains_aggregate(e) || e.any(&|x| matches!(x, Expr::Function { over: Some(_), .. }))
}

/// A single SELECT's text in pieces: `SELECT [ALL] [TOP …]`, the select list, the FROM
/// clause (with its table hints), and the rest (WHERE, ORDER BY, OPTION, …).
struct SelectText<'t> {
    head: &'t str,
    items: &'t str,
    from: &'t str,
    rest: &'t str,
}

fn split_select(text: &str) -> Option<SelectText<'_>> {
    let tokens = tokenize(text).ok()?;
    let word = |i: usize, w: &str| tokens.get(i).is_some_and(|t| t.is_word(w));
    let punct = |i: usize, p: Punct| tokens.get(i).is_some_and(|t| t.is_punct(p));
    if !word(0, "SELECT") {
        return None;
    }
    let mut i = 1;
    if word(i, "ALL") {
        i += 1;
    }
    if word(i, "TOP") {
        i += 1;
        if punct(i, Punct::LParen) {
            i = closing(&tokens, i)? + 1;
        } else {
            i += 1;
        }
        if word(i, "PERCENT") {
            i += 1;
        }
        if word(i, "WITH") && word(i + 1, "TIES") {
            i += 2;
        }
    }
    let items_start = tokens.get(i)?.start;
    let from = depth_zero(&tokens, i, |t| t.is_word("FROM"))?;
    let end = depth_zero(&tokens, from + 1, |t| {
        ["WHERE", "GROUP", "HAVING", "ORDER", "OPTION", "FOR", "UNION", "EXCEPT", "INTERSECT"]
            .iter()
            .any(|w| t.is_word(w))
            || t.is_punct(Punct::Semicolon)
            || t.kind == TokenKind::Eof
    })?;
    let (from_start, from_end) = (tokens[from].start, tokens[end].start);
    Some(SelectText {
        head: &text[..items_start],
        items: &text[items_start..from_start],
        from: &text[from_start..from_end],
        rest: &text[from_end..],
    })
}

/// The first token from `i` on, outside parentheses, that `is` accepts.
fn depth_zero(
    tokens: &[tessera_syntax::lexer::Token<'_>],
    i: usize,
    is: impl Fn(&tessera_syntax::lexer::Token<'_>) -> bool,
) -> Option<usize> {
    let mut depth = 0i32;
    for (j, t) in tokens.iter().enumerate().skip(i) {
        if depth == 0 && is(t) {
            return Some(j);
        }
        match t.kind {
            TokenKind::Punct(Punct::LParen) => depth += 1,
            TokenKind::Punct(Punct::RParen) => depth -= 1,
            TokenKind::Eof => return None,
            _ => {}
        }
    }
    None
}

/// The `)` that closes the `(` at `open`.
fn closing(tokens: &[tessera_syntax::lexer::Token<'_>], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        match t.kind {
            TokenKind::Punct(Punct::LParen) => depth += 1,
            TokenKind::Punct(Punct::RParen) => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            TokenKind::Eof => return None,
            _ => {}
        }
    }
    None
}

fn quote(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}

/// Keeps an inner statement's results (its rows under `memory`, when given), or passes
/// them on to the client (`pass`: a statement executed directly); its messages and
/// environment changes go to the client, its return status nowhere (the cursor
/// procedure sends its own).
struct Capture<'s> {
    client: &'s mut dyn ResultSink,
    pass: bool,
    columns: Vec<OutputColumn>,
    sets: usize,
    rows: Vec<Vec<Value>>,
    memory: Option<Reservation>,
    /// The memory grant ran out: the statement was cancelled, and this is the error.
    overflow: Option<SqlError>,
    cancel: Arc<AtomicBool>,
    failed: bool,
}

impl<'s> Capture<'s> {
    fn new(client: &'s mut dyn ResultSink, memory: Option<Reservation>, cancel: Arc<AtomicBool>) -> Capture<'s> {
        Capture {
            client,
            pass: false,
            columns: Vec::new(),
            sets: 0,
            rows: Vec::new(),
            memory,
            overflow: None,
            cancel,
            failed: false,
        }
    }
}

impl ResultSink for Capture<'_> {
    fn columns(&mut self, columns: &[OutputColumn]) {
        if self.pass {
            return self.client.columns(columns);
        }
        if self.sets == 0 {
            self.columns = columns.to_vec();
        }
        self.sets += 1;
    }
    fn order(&mut self, columns: &[u16]) {
        if self.pass {
            self.client.order(columns);
        }
    }
    fn takes_stored_rows(&self) -> bool {
        self.pass && self.client.takes_stored_rows()
    }
    fn stored_row(&mut self, row: &StoredRow<'_>) {
        self.client.stored_row(row);
    }
    fn row(&mut self, row: &[Value]) {
        if self.pass {
            return self.client.row(row);
        }
        if self.overflow.is_some() || self.sets > 1 {
            return;
        }
        // Kept past the statement: a large value still in its table is read whole.
        let row = match row.iter().map(|v| v.clone().to_keep()).collect::<Result<Vec<_>, _>>() {
            Ok(row) => row,
            Err(e) => {
                self.overflow = Some(e);
                self.cancel.store(true, Ordering::Relaxed);
                return;
            }
        };
        if let Some(memory) = &mut self.memory {
            if let Err(e) = memory.take(row_bytes(&row)) {
                // Past the grant: stop the statement; the error replaces its 3617.
                self.overflow = Some(e);
                self.cancel.store(true, Ordering::Relaxed);
                return;
            }
        }
        self.rows.push(row);
    }
    fn done(&mut self, count: Option<u64>, command: Command) {
        if self.pass {
            self.client.done(count, command);
        }
    }
    fn message(&mut self, message: &SqlError) {
        if self.overflow.is_some() && message.number == 3617 {
            return;
        }
        self.failed |= message.severity > 10;
        self.client.message(message);
    }
    fn env_change(&mut self, change: &EnvChange) {
        self.client.env_change(change);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_select_splits_around_its_select_list_and_from_clause() {
        let s =
            split_select("SELECT TOP (5) a, (SELECT 1 FROM x) AS b FROM dbo.t WITH (NOLOCK) WHERE a > 1 ORDER BY a")
                .unwrap();
        assert_eq!(s.head, "SELECT TOP (5) ");
        assert_eq!(s.items, "a, (SELECT 1 FROM x) AS b ");
        assert_eq!(s.from, "FROM dbo.t WITH (NOLOCK) ");
        assert_eq!(s.rest, "WHERE a > 1 ORDER BY a");
        let s = split_select("select * from t").unwrap();
        assert_eq!((s.head, s.items, s.from, s.rest), ("select ", "* ", "from t", ""));
        assert!(split_select("SELECT 1").is_none());
        assert!(split_select("UPDATE t SET a = 1").is_none());
    }

    #[test]
    fn an_insert_gets_its_output_before_its_source() {
        assert_eq!(
            with_output("INSERT INTO t DEFAULT VALUES", "inserted.[id]").unwrap(),
            "INSERT INTO t OUTPUT inserted.[id] DEFAULT VALUES"
        );
        assert_eq!(
            with_output("insert t (a, b) values (1, 2)", "inserted.[a]").unwrap(),
            "insert t (a, b) OUTPUT inserted.[a] values (1, 2)"
        );
        assert!(with_output("INSERT t OUTPUT inserted.a VALUES (1)", "inserted.[a]").is_none());
    }

    #[test]
    fn table_names_match_by_their_last_parts() {
        let table = vec!["db".to_string(), "dbo".to_string(), "Items".to_string()];
        assert!(names_table("items", &table));
        assert!(names_table("[dbo].[items]", &table));
        assert!(names_table("[db].[dbo].[ITEMS]", &table));
        assert!(!names_table("other", &table));
        assert!(!names_table("sales.items", &table));
        assert!(!names_table("x.db.dbo.items", &table));
    }
}
