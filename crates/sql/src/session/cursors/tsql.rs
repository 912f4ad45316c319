//! T-SQL cursors: DECLARE CURSOR, `DECLARE @c CURSOR` and `SET @c = CURSOR … | @other |
//! name`, OPEN, FETCH (every orientation, INTO variables or as a result set), CLOSE,
//! DEALLOCATE and `UPDATE|DELETE … WHERE CURRENT OF`, on the machinery API cursors use.
//!
//! - **Declaring** keeps the SELECT's text with the variables it reads as parameters,
//!   their values taken now (SQL Server's rule: a cursor's variables do not change after
//!   it is declared). GLOBAL cursors (the default) live until DEALLOCATE or the session's
//!   end; LOCAL ones and cursor variables until their batch, procedure or trigger ends.
//! - **What a cursor is**: STATIC, INSENSITIVE and FAST_FORWARD cursors are snapshots;
//!   KEYSET, DYNAMIC and the default (forward-only dynamic) ones are keyed when the
//!   SELECT reads one table with a unique key (each fetch reads the row again: current
//!   values; a keyset cursor reports a deleted row as @@FETCH_STATUS -2, a dynamic one
//!   passes over it), else snapshots (with TYPE_WARNING, message 16956 says so). A
//!   dynamic cursor does not see rows inserted after it opened: a deviation.
//! - **Changing rows through it** (`WHERE CURRENT OF`) needs a keyed, updatable cursor
//!   (16929 otherwise); the statement runs with its WHERE clause replaced by the current
//!   row's key, and, for OPTIMISTIC cursors, the values it was fetched with (16934 and
//!   16947 when it changed since). SCROLL_LOCKS holds no lock between fetches.

use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::runtime::cursors::{Declared, Reach, MAX_DECLARED_CURSORS, MAX_OPEN_CURSORS};
use tessera_execution::runtime::{SessionState, Shared};
use tessera_semantics::output::{Collected, Command, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::cursor::{
    CurrentOf, CursorConcurrency, CursorDefinition, CursorKind, CursorRef, CursorStatement, CursorUpdate,
    FetchDirection,
};
use tessera_syntax::ast::{self, Statement};
use tessera_syntax::lexer::{tokenize, TokenKind};

use super::super::calls::Argument;
use super::super::{Runner, Stop};
use super::*;

/// A runner running a cursor's statements for its statement `stmt`: as `sp_executesql`
/// would, one nesting level down, in the runner's security context; their errors come
/// back (the statement fails with them, or goes to CATCH).
struct RunnerHost<'r, 'a> {
    runner: &'r mut Runner<'a>,
    stmt: &'r Statement,
}

impl Host for RunnerHost<'_, '_> {
    fn shared(&self) -> &Shared {
        self.runner.shared
    }
    fn state(&mut self) -> &mut SessionState {
        self.runner.state
    }
    fn run(
        &mut self,
        text: &str,
        paramdef: &str,
        args: &[RpcParam],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        let r = &mut *self.runner;
        let mut inner = Runner {
            try_depth: 1,
            procedure: r.procedure.clone(),
            owner: r.owner.clone(),
            ..Runner::new(r.shared, &mut *r.state, r.batch, r.frame, sink)
        };
        let mut all = vec![Argument::text(text), Argument::text(paramdef)];
        all.extend(args.iter().map(|p| Argument::input(p.name.clone(), p.value.clone(), p.ty)));
        match inner.run_executesql(self.stmt, all) {
            Err(Stop::Error(e)) => Err(e),
            // Reported already: the capture saw it.
            Ok(_) | Err(Stop::Abort) => Ok(()),
        }
    }
}

impl Runner<'_> {
    /// Runs a cursor statement.
    pub(in crate::session) fn cursor_statement(&mut self, s: &Statement, c: &CursorStatement) -> SqlResult<()> {
        match c {
            CursorStatement::Declare { name, definition } => {
                let reach = if definition.options.global == Some(false) { Reach::Local } else { Reach::Global };
                if self.state.cursors.is_declared(&name.value, reach) {
                    return Err(msg::CURSOR_NAME_EXISTS.with(&[&name.value]));
                }
                self.declare_cursor(s, &name.value, reach, definition)
            }
            CursorStatement::SetDefinition { variable, definition } => {
                self.cursor_variable(variable)?;
                self.declare_cursor(s, variable, Reach::Variable, definition)
            }
            CursorStatement::Open(r) => self.open_cursor(s, r),
            CursorStatement::Fetch { direction, cursor, into } => self.fetch_cursor(s, direction, cursor, into),
            CursorStatement::Close(r) => {
                let id = self.find_cursor(r)?;
                let handle = self.state.cursors.declared_mut(id).and_then(|d| d.handle.take());
                let Some(handle) = handle else { return Err(msg::CURSOR_NOT_OPEN.err()) };
                self.state.cursors.open.remove(&handle);
                self.state.cursors.cursor_rows = 0;
                self.state.rowcount = 0;
                Ok(())
            }
            CursorStatement::Deallocate(r) => {
                self.find_cursor(r)?;
                let (name, reach, global) = reach_of(r);
                self.state.cursors.deallocate(name, reach, global);
                self.state.cursors.cursor_rows = 0;
                self.state.rowcount = 0;
                Ok(())
            }
        }
    }

    /// Checks that `name` is a cursor variable this frame declared: 16948 for another
    /// variable, 137 for none.
    fn cursor_variable(&self, name: &str) -> SqlResult<()> {
        let lower = name.to_lowercase();
        if self.frame.cursor_variables.contains(&lower) {
            return Ok(());
        }
        if self.frame.decls.iter().any(|(n, _)| *n == lower) {
            return Err(msg::NOT_A_CURSOR_VARIABLE.with(&[&name]));
        }
        Err(msg::UNDECLARED_VARIABLE.with(&[&name]))
    }

    /// Whether `name` is one of this frame's cursor variables (`SET @c = …` assigns a
    /// cursor then).
    pub(in crate::session) fn is_cursor_variable(&self, name: &str) -> bool {
        self.frame.cursor_variables.contains(&name.to_lowercase())
    }

    /// `SET @c = @other | name`: the variable reaches the same cursor.
    pub(in crate::session) fn set_cursor_variable(&mut self, name: &str, value: &ast::Expr) -> SqlResult<()> {
        let source = match value {
            ast::Expr::Variable(v) => CursorRef::Variable(v.clone()),
            ast::Expr::Column(c) if c.0.len() == 1 => CursorRef::Name { name: c.0[0].clone(), global: false },
            _ => return Err(msg::NOT_A_CURSOR_VARIABLE.with(&[&name])),
        };
        let id = self.find_cursor(&source)?;
        self.state.cursors.assign_variable(name, id);
        self.state.rowcount = 1;
        Ok(())
    }

    /// The cursor `r` names: 16916 when there is none, 16950 for a cursor variable with
    /// no cursor.
    fn find_cursor(&self, r: &CursorRef) -> SqlResult<u64> {
        if let CursorRef::Variable(v) = r {
            self.cursor_variable(v)?;
        }
        let (name, reach, global) = reach_of(r);
        let reach = if global { Reach::Global } else { reach };
        match self.state.cursors.find(name, reach) {
            Ok(id) => Ok(id),
            Err(true) => Err(msg::CURSOR_VARIABLE_UNSET.with(&[&name])),
            Err(false) => Err(msg::CURSOR_NOT_FOUND.with(&[&name])),
        }
    }

    /// DECLARE CURSOR, or `SET @c = CURSOR …`: the options checked and what they ask of
    /// the machinery worked out, the SELECT kept with the values of its variables.
    fn declare_cursor(&mut self, s: &Statement, name: &str, reach: Reach, d: &CursorDefinition) -> SqlResult<()> {
        let o = &d.options;
        if o.forward_only && o.scroll {
            return Err(msg::CURSOR_OPTIONS_CONFLICT.with(&[&"FORWARD_ONLY", &"SCROLL"]));
        }
        if o.kind == Some(CursorKind::FastForward) {
            if o.scroll {
                return Err(msg::CURSOR_OPTIONS_CONFLICT.with(&[&"FAST_FORWARD", &"SCROLL"]));
            }
            if let Some(cc @ (CursorConcurrency::ScrollLocks | CursorConcurrency::Optimistic)) = o.concurrency {
                let cc = if cc == CursorConcurrency::ScrollLocks { "SCROLL_LOCKS" } else { "OPTIMISTIC" };
                return Err(msg::CURSOR_OPTIONS_CONFLICT.with(&[&"FAST_FORWARD", &cc]));
            }
        }
        let read_only = o.insensitive
            || matches!(o.kind, Some(CursorKind::Static | CursorKind::FastForward))
            || o.concurrency == Some(CursorConcurrency::ReadOnly)
            || d.update == CursorUpdate::ReadOnly;
        if read_only && matches!(d.update, CursorUpdate::Update(_)) {
            return Err(msg::CURSOR_UPDATE_ON_READ_ONLY.err());
        }
        if self.state.cursors.declared_count() >= MAX_DECLARED_CURSORS {
            return Err(msg::CURSOR_LIMIT_REACHED.err());
        }
        let scrollable_kind = matches!(o.kind, Some(CursorKind::Static | CursorKind::Keyset | CursorKind::Dynamic));
        let forward_only = o.forward_only || o.kind == Some(CursorKind::FastForward) || (!o.scroll && !scrollable_kind);
        let scroll = match o.kind {
            _ if o.insensitive => STATIC,
            Some(CursorKind::Static) => STATIC,
            Some(CursorKind::Keyset) => KEYSET,
            Some(CursorKind::FastForward) => FAST_FORWARD,
            Some(CursorKind::Dynamic) => DYNAMIC,
            None if forward_only => FORWARD_ONLY,
            None => DYNAMIC,
        };
        let concurrency = match o.concurrency {
            _ if read_only => READ_ONLY,
            Some(CursorConcurrency::ScrollLocks) => SCROLL_LOCKS,
            _ => OPTIMISTIC,
        };
        let text = self.batch.text.get(d.query_span.0..d.query_span.1).unwrap_or_default().to_string();
        let (paramdef, args) = self.variables_read(s, &text)?;
        let update_of = match &d.update {
            CursorUpdate::Update(columns) if !columns.is_empty() => {
                Some(columns.iter().map(|c| c.value.clone()).collect())
            }
            _ => None,
        };
        let dynamic = scroll == DYNAMIC || scroll == FORWARD_ONLY;
        let declared = Declared {
            text,
            paramdef,
            args,
            scroll,
            concurrency,
            update_of,
            forward_only,
            dynamic,
            type_warning: o.type_warning,
            handle: None,
        };
        self.state.cursors.declare(name, reach, declared);
        self.state.rowcount = 1;
        Ok(())
    }

    /// The frame's variables `text` reads, as a parameter list and their values now.
    #[allow(clippy::type_complexity)]
    fn variables_read(&self, s: &Statement, text: &str) -> SqlResult<(String, Vec<(String, SqlType, Value)>)> {
        let tokens = tokenize(text)?;
        let visible = self.visible(s);
        let mut decls = Vec::new();
        let mut args: Vec<(String, SqlType, Value)> = Vec::new();
        for t in tokens.iter().filter(|t| t.kind == TokenKind::Variable) {
            let lower = t.text.to_lowercase();
            if args.iter().any(|(n, _, _)| n.eq_ignore_ascii_case(&lower)) {
                continue;
            }
            // Table variables are the session's tables: the statement reaches them by name.
            let Some(slot) = visible.iter().position(|(n, _)| *n == lower) else { continue };
            let ty = visible[slot].1;
            decls.push(format!("{} {}", t.text, types::type_name(&ty)));
            args.push((t.text.to_string(), ty, self.state.vars[slot].clone()));
        }
        Ok((decls.join(", "), args))
    }

    /// OPEN: the SELECT runs and the cursor keeps its rows (or their keys).
    fn open_cursor(&mut self, s: &Statement, r: &CursorRef) -> SqlResult<()> {
        let id = self.find_cursor(r)?;
        let d = self.state.cursors.declared(id).expect("a cursor found is declared");
        if d.handle.is_some() {
            return Err(msg::CURSOR_ALREADY_OPEN.err());
        }
        if self.state.cursors.open.len() >= MAX_OPEN_CURSORS {
            return Err(msg::CURSOR_LIMIT_REACHED.err());
        }
        let (text, paramdef, request, dynamic, type_warning) =
            (d.text.clone(), d.paramdef.clone(), (d.scroll, d.concurrency), d.dynamic, d.type_warning);
        let args: Vec<RpcParam> = d
            .args
            .iter()
            .map(|(name, ty, value)| RpcParam {
                name: Some(name.clone()),
                value: value.clone(),
                ty: *ty,
                output: false,
                table: None,
            })
            .collect();
        let cached = self.shared.plans.get_or_parse(&text, tessera_syntax::parser::parse_batch)?;
        let shape = shape_of(self.shared, self.state, &cached.batch.statements, &text);
        let Some(granted) = grant(&shape, request)? else { return Err(msg::CURSOR_NOT_ALLOWED.err()) };
        let converted = granted.scroll != request.0 && !(granted.scroll == FORWARD_ONLY && request.0 == DYNAMIC);
        let mut client = Collected::default();
        let opened = {
            let mut host = RunnerHost { runner: self, stmt: s };
            open(&mut host, &text, &paramdef, &args, shape, &granted, &mut client)
        };
        self.pass_messages(&client);
        let cursor = self.failed(opened)?;
        if type_warning && converted {
            self.sink.message(&msg::CURSOR_TYPE_CONVERTED.err());
        }
        let rows =
            if dynamic || matches!(cursor.scroll, FORWARD_ONLY | FAST_FORWARD) { -1 } else { cursor.rows.len() as i64 };
        let handle = self.state.cursors.new_handle();
        self.state.cursors.open.insert(handle, cursor);
        if let Some(d) = self.state.cursors.declared_mut(id) {
            d.handle = Some(handle);
        }
        self.state.cursors.cursor_rows = rows;
        Ok(())
    }

    /// A [`Failure`] as this statement's error (Reported: the batch ends, as the statement
    /// that reported it ended it).
    fn failed<T>(&mut self, result: Result<T, Failure>) -> SqlResult<T> {
        match result {
            Ok(v) => Ok(v),
            Err(Failure::Error(e)) => Err(e),
            Err(Failure::Reported) => {
                self.nested_aborted = true;
                Err(SqlError::new(50000, "The cursor's statement ended the batch."))
            }
        }
    }

    /// The messages a cursor's statements sent (their errors came back as errors).
    fn pass_messages(&mut self, client: &Collected) {
        for m in &client.messages {
            self.sink.message(m);
        }
    }

    /// FETCH: the buffer moves one row (or to where ABSOLUTE and RELATIVE say), the row is
    /// read again when the cursor is keyed, and goes into the INTO variables or out as a
    /// result set; @@FETCH_STATUS says how it went.
    fn fetch_cursor(
        &mut self,
        s: &Statement,
        direction: &FetchDirection,
        r: &CursorRef,
        into: &[String],
    ) -> SqlResult<()> {
        let id = self.find_cursor(r)?;
        let d = self.state.cursors.declared(id).expect("a cursor found is declared");
        let Some(handle) = d.handle else { return Err(msg::CURSOR_NOT_OPEN.err()) };
        let (forward_only, dynamic) = (d.forward_only, d.dynamic);
        let (fetchtype, name, rownum) = match direction {
            FetchDirection::Next => (FETCH_NEXT, "NEXT", 0),
            FetchDirection::Prior => (FETCH_PREV, "PRIOR", 0),
            FetchDirection::First => (FETCH_FIRST, "FIRST", 0),
            FetchDirection::Last => (FETCH_LAST, "LAST", 0),
            FetchDirection::Absolute(n) => (FETCH_ABSOLUTE, "ABSOLUTE", self.fetch_offset(s, n)?),
            FetchDirection::Relative(n) => (FETCH_RELATIVE, "RELATIVE", self.fetch_offset(s, n)?),
        };
        if forward_only && fetchtype != FETCH_NEXT {
            return Err(msg::CURSOR_FORWARD_ONLY_FETCH.with(&[&"fetch", &name]));
        }
        // The INTO list is checked against the select list, and each variable found.
        let Some(width) = self.state.cursors.open.get(&handle).map(|c| c.columns.len() - 1) else {
            return Err(msg::CURSOR_NOT_OPEN.err());
        };
        let visible = self.visible(s);
        let mut slots = Vec::new();
        for v in into {
            let lower = v.to_lowercase();
            match visible.iter().position(|(n, _)| *n == lower) {
                Some(slot) => slots.push((slot, visible[slot].1)),
                None => return Err(msg::UNDECLARED_VARIABLE.with(&[&v])),
            }
        }
        if !into.is_empty() && into.len() != width {
            return Err(msg::CURSOR_FETCH_INTO_COUNT.err());
        }
        let mut cursor = self.state.cursors.open.remove(&handle).expect("an open cursor's rows");
        let mut client = Collected::default();
        let mut moved = move_buffer(&cursor, fetchtype, rownum, 1);
        let result = loop {
            let (start, len, _) = moved;
            let reread = {
                let mut host = RunnerHost { runner: self, stmt: s };
                reread(&mut host, &mut cursor, start, len, &mut client)
            };
            if let Err(e) = reread {
                break Err(e);
            }
            cursor.start = start;
            cursor.len = len;
            // A dynamic cursor passes over rows deleted since it opened.
            let missing = len == 1 && cursor.rows[(start - 1) as usize].missing;
            if !(dynamic && missing) {
                break Ok(());
            }
            let step = if fetchtype == FETCH_PREV || fetchtype == FETCH_LAST { FETCH_PREV } else { FETCH_NEXT };
            moved = move_buffer(&cursor, step, 0, 1);
        };
        self.pass_messages(&client);
        let row = match cursor.len {
            0 => None,
            _ => Some(&cursor.rows[(cursor.start - 1) as usize]),
        };
        let status = match row {
            None => -1,
            Some(r) if r.missing => -2,
            Some(_) => 0,
        };
        let values = row.filter(|r| !r.missing).map(|r| r.values.clone());
        let columns: Vec<_> = cursor.columns[..width].to_vec();
        self.state.cursors.open.insert(handle, cursor);
        self.failed(result)?;
        self.state.cursors.fetch_status = status;
        if into.is_empty() {
            self.sink.columns(&columns);
            let count = u64::from(values.is_some());
            if let Some(values) = &values {
                self.sink.row(values);
            }
            let counted = (!self.state.options.nocount).then_some(count);
            self.sink.done(counted, Command::Select);
        } else if let Some(values) = values {
            for ((slot, ty), (value, column)) in slots.iter().zip(values.iter().zip(&columns)) {
                self.state.vars[*slot] = types::cast(value, &column.ty, ty, None)?.to_keep()?;
            }
        }
        self.state.rowcount = 1;
        Ok(())
    }

    /// ABSOLUTE's or RELATIVE's row number.
    fn fetch_offset(&mut self, s: &Statement, n: &ast::Expr) -> SqlResult<i64> {
        let (v, t) = self.eval_scalar(s, n)?;
        match types::cast(&v, &t, &SqlType::BigInt, None)? {
            Value::Int(n) => Ok(n),
            _ => Ok(0),
        }
    }

    /// `UPDATE … WHERE CURRENT OF c` / `DELETE … WHERE CURRENT OF c`: the statement runs
    /// on the cursor's current row.
    pub(in crate::session) fn change_current_row(
        &mut self,
        s: &Statement,
        target: &ast::ObjectName,
        assigned: &[String],
        current: &CurrentOf,
    ) -> SqlResult<()> {
        let delete = matches!(s.kind, ast::StatementKind::Delete(_));
        let id = self.find_cursor(&current.cursor)?;
        let d = self.state.cursors.declared(id).expect("a cursor found is declared");
        let Some(handle) = d.handle else { return Err(msg::CURSOR_NOT_OPEN.err()) };
        if let Some(columns) = &d.update_of {
            if assigned.iter().any(|a| !columns.iter().any(|c| c.eq_ignore_ascii_case(a))) {
                return Err(msg::CURSOR_COLUMN_NOT_IN_UPDATE_LIST.err());
            }
        }
        let cursor = self.state.cursors.open.get(&handle).expect("an open cursor's rows");
        let keyed = match (&cursor.keyed, cursor.concurrency) {
            (Some(k), cc) if cc != READ_ONLY => k.clone(),
            _ => return Err(msg::CURSOR_READ_ONLY.err()),
        };
        let target_name = target.0.iter().map(|p| quote(&p.value)).collect::<Vec<_>>().join(".");
        if !names_table(&target_name, &keyed.table) {
            return Err(msg::CURSOR_TABLE_NOT_UPDATABLE.err());
        }
        if cursor.len == 0 {
            return Err(msg::CURSOR_ROW_NOT_IN_BUFFER.err());
        }
        let row = (cursor.start - 1) as usize;
        if cursor.rows[row].missing {
            self.sink.message(&msg::CURSOR_OPTIMISTIC_CHECK_FAILED.err());
            return Err(msg::CURSOR_NO_ROWS_CHANGED.err());
        }
        let optimistic = cursor.concurrency == OPTIMISTIC;
        let (filter, mut decls, mut params) = row_filter(cursor, &keyed, row, optimistic);
        let text = &self.batch.text;
        let statement = format!(
            "{}WHERE {filter}{}",
            text.get(s.span.0..current.span.0).unwrap_or_default(),
            text.get(current.span.1..s.span.1).unwrap_or_default()
        );
        let (paramdef, args) = self.variables_read(s, &statement)?;
        if !paramdef.is_empty() {
            decls.push(paramdef);
        }
        params.extend(args.into_iter().map(|(name, ty, value)| RpcParam {
            name: Some(name),
            value,
            ty,
            output: false,
            table: None,
        }));
        let mut client = Collected::default();
        let ran = {
            let mut host = RunnerHost { runner: self, stmt: s };
            let mut capture = Capture::new(&mut client, None, host.state().cancel.clone());
            let ran = host.run(&statement, &decls.join(", "), &params, &mut capture);
            match ran {
                Err(e) => Err(Failure::Error(e)),
                Ok(()) if capture.failed => Err(Failure::Reported),
                Ok(()) => Ok(()),
            }
        };
        self.pass_messages(&client);
        self.failed(ran)?;
        let changed = self.state.rowcount;
        if changed == 0 {
            self.sink.message(&msg::CURSOR_OPTIMISTIC_CHECK_FAILED.err());
            return Err(msg::CURSOR_NO_ROWS_CHANGED.err());
        }
        let command = if delete { Command::Delete } else { Command::Update };
        let counted = (!self.state.options.nocount).then_some(changed as u64);
        self.sink.done(counted, command);
        let mut cursor = self.state.cursors.open.remove(&handle).expect("an open cursor's rows");
        let result = if delete {
            cursor.rows[row].missing = true;
            Ok(())
        } else {
            let mut host = RunnerHost { runner: self, stmt: s };
            reread(&mut host, &mut cursor, row as i64 + 1, 1, &mut client)
        };
        self.state.cursors.open.insert(handle, cursor);
        self.failed(result)
    }
}

/// The name a cursor reference looks for, where, and whether only GLOBAL cursors count.
fn reach_of(r: &CursorRef) -> (&str, Reach, bool) {
    match r {
        CursorRef::Name { name, global } => (&name.value, Reach::Local, *global),
        CursorRef::Variable(v) => (v, Reach::Variable, false),
    }
}
