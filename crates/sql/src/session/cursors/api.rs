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

use tessera_errors::msg;
use tessera_errors::SqlError;
use tessera_execution::runtime::cursors::{
    Cursor, CursorRow, Keyed, PreparedCursor, FIRST_PREPARED_HANDLE, MAX_OPEN_CURSORS,
};
use tessera_execution::runtime::{SessionState, Shared};
use tessera_governance::grant::row_bytes;
use tessera_semantics::output::{Command, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::lexer::{tokenize, Punct, TokenKind};

use super::super::{RpcParam, Session};
use super::*;

/// Prepared cursor statements a session may hold at once.
pub const MAX_PREPARED: usize = 4096;

impl Host for Session {
    fn shared(&self) -> &Shared {
        &self.shared
    }
    fn state(&mut self) -> &mut SessionState {
        &mut self.state
    }
    fn run(
        &mut self,
        text: &str,
        paramdef: &str,
        args: &[RpcParam],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        self.run_statement(text, paramdef, args, sink);
        Ok(())
    }
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
        self.params.get(i).and_then(|p| super::super::rpc::as_text(&p.value))
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
    pub(in crate::session) fn is_api_cursor_procedure(name: &str) -> bool {
        Proc::lookup(name).is_some()
    }

    /// Runs an API cursor procedure called by RPC; returns its OUTPUT parameters' values.
    pub(in crate::session) fn run_api_cursor_procedure(
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
        let Some(prepared) = i32::try_from(handle).ok().and_then(|h| self.state.cursors.prepared.get(&h)).cloned()
        else {
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
        if i32::try_from(handle).ok().and_then(|h| self.state.cursors.prepared.remove(&h)).is_none() {
            return self.cursor_fail(call.error(msg::PREPARED_HANDLE_NOT_FOUND.with(&[&handle])), sink);
        }
        Ok(0)
    }

    fn keep_prepared(&mut self, call: &Call, paramdef: String, stmt: String) -> Result<i32, SqlError> {
        if self.state.cursors.prepared.len() >= MAX_PREPARED {
            return Err(call.error(msg::CURSOR_LIMIT_REACHED.err()));
        }
        let handle = self.state.cursors.next_prepared;
        self.state.cursors.next_prepared = handle.checked_add(1).unwrap_or(FIRST_PREPARED_HANDLE);
        self.state.cursors.prepared.insert(handle, PreparedCursor { paramdef, stmt });
        Ok(handle)
    }

    /// `sp_cursorclose @cursor`
    fn cursor_close(&mut self, call: &Call, sink: &mut dyn ResultSink) -> Outcome {
        let handle = call.int(0).unwrap_or(0);
        if i32::try_from(handle).ok().and_then(|h| self.state.cursors.open.remove(&h)).is_none() {
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
        let Some(cursor) = i32::try_from(handle).ok().and_then(|h| self.state.cursors.open.get(&h)) else {
            return self.cursor_fail(call.bad_handle(handle), sink);
        };
        let answer = match call.int(1) {
            Some(1 | 3) => None,
            Some(2) => {
                let Some(name) = call.text(2).filter(|n| !n.is_empty()) else {
                    return self.cursor_fail(call.invalid("value"), sink);
                };
                let taken = self.state.cursors.open.iter().any(|(h, c)| {
                    i64::from(*h) != handle && c.name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(&name))
                });
                if taken {
                    return self.cursor_fail(call.error(msg::CURSOR_NAME_EXISTS.with(&[&name])), sink);
                }
                if let Some(c) = i32::try_from(handle).ok().and_then(|h| self.state.cursors.open.get_mut(&h)) {
                    c.name = Some(name);
                }
                None
            }
            Some(4) => Some(cursor.scroll),
            Some(5) => Some(cursor.concurrency),
            Some(6) => Some(row_count(cursor)),
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
        let shape = shape_of(&self.shared, &self.state, &cached.batch.statements, stmt);
        let granted = grant(&shape, (scrollopt, ccopt)).map_err(|e| call.error(e))?;
        Ok((shape, granted))
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
        if self.state.cursors.open.len() >= MAX_OPEN_CURSORS {
            return self.cursor_fail(call.error(msg::CURSOR_LIMIT_REACHED.err()), sink);
        }
        let cursor = match open(self, stmt, paramdef, args, shape, &granted, sink) {
            Ok(cursor) => cursor,
            Err(Failure::Error(e)) => return self.cursor_fail(e, sink),
            Err(Failure::Reported) => return Err(()),
        };
        let handle = self.state.cursors.new_handle();
        if granted.scroll != request.0 & 0x1F || granted.concurrency != request.1 & 0xF {
            sink.message(&msg::CURSOR_TYPE_CONVERTED.err());
        }
        sink.cursor_columns(&cursor.columns, &cursor.origins);
        call.set(slots.cursor, i64::from(handle));
        call.set(slots.scrollopt, granted.scroll);
        call.set(slots.ccopt, granted.concurrency);
        call.set(slots.rowcount, row_count(&cursor));
        self.state.cursors.open.insert(handle, cursor);
        Ok(0)
    }

    /// Runs `text` as `sp_executesql @text, @paramdef, args…`.
    fn run_statement(&mut self, text: &str, paramdef: &str, args: &[RpcParam], sink: &mut dyn ResultSink) {
        let nvarchar = |s: &str| RpcParam {
            name: None,
            value: Value::str(s),
            ty: SqlType::NVarChar(tessera_access::row::MAX),
            output: false,
            table: None,
        };
        let mut params = vec![nvarchar(text), nvarchar(paramdef)];
        params.extend(args.iter().cloned());
        self.call_rpc("sp_executesql", &params, sink);
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
            i32::try_from(handle).ok().and_then(|h| self.state.cursors.open.remove(&h).map(|c| (h, c)))
        else {
            return self.cursor_fail(call.bad_handle(handle), sink);
        };
        let result = f(self, &mut cursor, call, sink);
        self.state.cursors.open.insert(handle, cursor);
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
            call.set(3, row_count(cursor));
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
        if forward_only(cursor) && !matches!(fetchtype, FETCH_NEXT | FETCH_REFRESH) {
            return self
                .cursor_fail(call.error(msg::CURSOR_FORWARD_ONLY_FETCH.with(&[&call.proc.name(), &name])), sink);
        }
        if nrows < 0 || (nrows == 0 && !matches!(fetchtype, FETCH_FIRST | FETCH_LAST | FETCH_REFRESH)) {
            return self.cursor_fail(call.invalid("nrows"), sink);
        }
        let (start, len, status) = move_buffer(cursor, fetchtype, rownum, nrows);
        self.reread(cursor, start, len, sink)?;
        cursor.start = start;
        cursor.len = len;
        send_rows(cursor, start, len, self.state.options.nocount, sink);
        Ok(status)
    }

    /// [`reread`], its error sent to the client.
    fn reread(&mut self, cursor: &mut Cursor, start: i64, len: usize, sink: &mut dyn ResultSink) -> Result<(), ()> {
        match reread(self, cursor, start, len, sink) {
            Ok(()) => Ok(()),
            Err(Failure::Error(e)) => self.cursor_fail(e, sink).map(|_| ()),
            Err(Failure::Reported) => Err(()),
        }
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
            send_rows(cursor, start, len, self.state.options.nocount, sink);
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
        let table = qualified_table(keyed);
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
            // Optimistic concurrency: the row still holds what was fetched.
            let (filter, mut decls, mut params) = row_filter(cursor, keyed, target, true);
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
                        table: None,
                    });
                    a.columns.push((base, param));
                }
                None => match super::super::rpc::as_text(&p.value) {
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
    // `get`: the word's length may fall inside a character of the text (a client's).
    text.get(..word.len()).is_some_and(|head| head.eq_ignore_ascii_case(word))
        && text[word.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '_')
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_word_test_never_cuts_a_character() {
        assert!(!starts_with_word("a\u{e9}\u{e9}\u{e9}", "UPDATE"));
        assert!(starts_with_word("update t set a = 1", "UPDATE"));
        assert!(!starts_with_word("UPDATEX", "UPDATE"));
    }
}
