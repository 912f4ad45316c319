//! Server cursors: the machinery API cursors (`api`: the `sp_cursor…` procedures clients
//! call by RPC) and T-SQL cursors (`tsql`: DECLARE CURSOR, OPEN, FETCH, `WHERE CURRENT
//! OF`, …) share. A cursor is the same thing for both (`tessera_execution::runtime::
//! cursors`): its SELECT is run once when it opens and its rows kept, as a keyset read
//! again by key at each fetch when the SELECT reads one table with a unique key (then rows
//! can be changed through it), else as a snapshot. What differs is who runs the cursor's
//! statements ([`Host`]): the session, as an RPC `sp_executesql` (API cursors), or the
//! running batch or module, one nesting level down in its security context (T-SQL).

mod api;
mod tsql;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tessera_errors::msg;
use tessera_errors::SqlError;
use tessera_execution::runtime::cursors::{Cursor, CursorRow, Keyed};
use tessera_execution::runtime::{SessionState, Shared};
use tessera_governance::grant::{row_bytes, Grant, Reservation};
use tessera_semantics::catalog::Table;
use tessera_semantics::output::{ColumnOrigin, ColumnOrigins, Command, EnvChange, OutputColumn, ResultSink, StoredRow};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{self, Expr, SelectItem, SetExpr, StatementKind, TableRef};
use tessera_syntax::lexer::{tokenize, Punct, TokenKind};

use super::RpcParam;

/// What runs a cursor's statements, as `sp_executesql @text, @paramdef, args…` would.
pub(super) trait Host {
    fn shared(&self) -> &Shared;
    fn state(&mut self) -> &mut SessionState;
    /// Runs `text`: its results go to `sink`, its errors too (API cursors, then Ok) or
    /// come back (T-SQL cursors, whose statement fails with them).
    fn run(&mut self, text: &str, paramdef: &str, args: &[RpcParam], sink: &mut dyn ResultSink)
        -> Result<(), SqlError>;
}

/// Why a cursor operation stopped: an error to raise, or one the client has been sent.
pub(super) enum Failure {
    Error(SqlError),
    Reported,
}

impl From<SqlError> for Failure {
    fn from(e: SqlError) -> Failure {
        Failure::Error(e)
    }
}

/// The cursor a request (`@scrollopt`, `@ccopt`, checked) gets for a statement of this
/// shape: None for a statement run directly (ALLOW_DIRECT), else 16937; 16955 when
/// CHECK_ACCEPTED_TYPES or CHECK_ACCEPTED_OPTS refuse what it would get.
fn grant(shape: &Shape, (scrollopt, ccopt): (i64, i64)) -> Result<Option<Granted>, SqlError> {
    let scroll_asked = scrollopt & 0x1F;
    let cc_asked = ccopt & 0xF;
    let (scroll, keyed) = match (shape, scroll_asked) {
        (Shape::Direct, _) => {
            if ccopt & ALLOW_DIRECT == 0 {
                return Err(msg::CURSOR_NOT_ALLOWED.err());
            }
            return Ok(None);
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
    let acceptable = |options: i64, check: i64, granted: i64| options & check == 0 || (options >> 16) & granted != 0;
    if !acceptable(scrollopt, CHECK_ACCEPTED_TYPES, scroll) || !acceptable(ccopt, CHECK_ACCEPTED_OPTS, concurrency) {
        return Err(msg::CURSOR_NOT_ACCEPTABLE.err());
    }
    Ok(Some(Granted { scroll, concurrency, keyed }))
}

/// Runs a cursor's statement (`stmt`, or its keyed form) and keeps its rows under a query
/// memory grant of the cursor's own: the open cursor (no handle yet, the buffer before
/// its first row). 701 when its rows pass the grant.
fn open(
    host: &mut dyn Host,
    stmt: &str,
    paramdef: &str,
    args: &[RpcParam],
    shape: Shape,
    granted: &Granted,
    sink: &mut dyn ResultSink,
) -> Result<Cursor, Failure> {
    let plan = match shape {
        Shape::Keyed(plan) if granted.keyed => Some(plan),
        _ => None,
    };
    let text = plan.as_ref().map_or(stmt, |p| p.text.as_str());
    let memory = host.shared().query_memory.clone();
    let state = host.state();
    let grant = Grant::new(memory, state.query_pool.as_ref());
    let mut capture = Capture::new(sink, Some(Reservation::new(&grant)), state.cancel.clone());
    let ran = host.run(text, paramdef, args, &mut capture);
    if let Some(e) = capture.overflow.take() {
        host.state().cancel.store(false, Ordering::Relaxed);
        return Err(Failure::Error(e));
    }
    ran?;
    if capture.failed {
        return Err(Failure::Reported);
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
    Ok(Cursor {
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
    })
}

/// Reads rows `start ..` (`len` of them) of a keyed cursor again from its table: the
/// current values, or missing when deleted. Nothing to do for a snapshot.
fn reread(
    host: &mut dyn Host,
    cursor: &mut Cursor,
    start: i64,
    len: usize,
    sink: &mut dyn ResultSink,
) -> Result<(), Failure> {
    let Some(keyed) = &cursor.keyed else { return Ok(()) };
    if start < 1 {
        return Ok(());
    }
    let first = (start - 1) as usize;
    for row in cursor.rows.iter_mut().skip(first).take(len) {
        if row.missing {
            continue;
        }
        let (_, _, params) = key_match(keyed, &row.key);
        let cancel = host.state().cancel.clone();
        let mut capture = Capture::new(sink, None, cancel);
        host.run(&keyed.reread, &keyed.reread_params, &params, &mut capture)?;
        if capture.failed {
            return Err(Failure::Reported);
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

/// Where a fetch of `fetchtype` (a valid one, other than INFO) moves the fetch buffer:
/// its new first row and length, and the fetch's return status.
fn move_buffer(cursor: &Cursor, fetchtype: i64, rownum: i64, nrows: i64) -> (i64, usize, i32) {
    let count = cursor.rows.len() as i64;
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
    (start, len, status)
}

fn forward_only(cursor: &Cursor) -> bool {
    matches!(cursor.scroll, FORWARD_ONLY | FAST_FORWARD)
}

/// `@rowcount`: the rows of a static or keyset cursor, -1 (unknown) for the others.
fn row_count(cursor: &Cursor) -> i64 {
    if forward_only(cursor) {
        -1
    } else {
        cursor.rows.len() as i64
    }
}

/// Rows `start ..` (`len` of them; none before the first row) as a result set, each with
/// its ROWSTAT; `nocount`: its DONE has no count (SET NOCOUNT ON).
fn send_rows(cursor: &Cursor, start: i64, len: usize, nocount: bool, sink: &mut dyn ResultSink) {
    sink.cursor_columns(&cursor.columns, &cursor.origins);
    let first = usize::try_from(start.max(1) - 1).unwrap_or(0);
    let mut sent = 0;
    for row in cursor.rows.iter().skip(first).take(if start < 1 { 0 } else { len }) {
        let mut out = if row.missing { vec![Value::Null; row.values.len()] } else { row.values.clone() };
        out.push(Value::Int(if row.missing { FETCH_MISSING } else { FETCH_SUCCEEDED }));
        sink.row(&out);
        sent += 1;
    }
    sink.done((!nocount).then_some(sent), Command::Select);
}

fn qualified_table(keyed: &Keyed) -> String {
    keyed.table.iter().map(|p| quote(p)).collect::<Vec<_>>().join(".")
}

/// `[k1] = @__k1 AND …`, and the parameters' declarations and values.
fn key_match(keyed: &Keyed, key: &[Value]) -> (String, Vec<String>, Vec<RpcParam>) {
    let mut conditions = Vec::new();
    let mut decls = Vec::new();
    let mut params = Vec::new();
    for (i, ((name, ty), value)) in keyed.keys.iter().zip(key).enumerate() {
        let p = format!("@__k{}", i + 1);
        conditions.push(format!("{} = {p}", quote(name)));
        decls.push(format!("{p} {}", types::type_name(ty)));
        params.push(RpcParam { name: Some(p), value: value.clone(), ty: *ty, output: false, table: None });
    }
    (conditions.join(" AND "), decls, params)
}

/// The filter that finds row `target` of a keyed cursor again (its key; with
/// `optimistic`, also the values it was fetched with, so a row changed since does not
/// match), with the parameters it reads.
fn row_filter(cursor: &Cursor, keyed: &Keyed, target: usize, optimistic: bool) -> (String, Vec<String>, Vec<RpcParam>) {
    let row = &cursor.rows[target];
    let (key_match, mut decls, mut params) = key_match(keyed, &row.key);
    let mut conditions = vec![key_match];
    for (i, (base, value)) in keyed.bases.iter().zip(&row.values).enumerate() {
        let Some(base) = base.as_ref().filter(|_| optimistic) else { continue };
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
                table: None,
            });
        }
    }
    (conditions.join(" AND "), decls, params)
}

/// The [`Shape`] of a batch's statements.
fn shape_of(shared: &Shared, state: &SessionState, statements: &[ast::Statement], text: &str) -> Shape {
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
    if select.distinct || !select.group_by.is_empty() || select.having.is_some() || aggregates || select.from.is_empty()
    {
        return Shape::Snapshot { converts: true };
    }
    let snapshot = Shape::Snapshot { converts: false };
    // A select list that reads parameters cannot be read again by key alone.
    let variables = select.items.iter().any(|i| match i {
        SelectItem::Expr { expr, .. } => expr.any(&|x| matches!(x, Expr::Variable(_))),
        _ => false,
    });
    let ([TableRef::Named { name, alias, .. }], true) = (select.from.as_slice(), query.with.is_empty() && !variables)
    else {
        return snapshot;
    };
    let Some((database, table)) = base_table(shared, state, name) else { return snapshot };
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

fn base_table(shared: &Shared, state: &SessionState, name: &ast::ObjectName) -> Option<(String, Arc<Table>)> {
    let parts: Vec<&str> = name.0.iter().map(|p| p.value.as_str()).collect();
    let (db, schemas, table): (&str, Vec<&str>, &str) = match parts.as_slice() {
        [t] => (&state.database, vec![&state.default_schema, "dbo"], t),
        [s, t] => (&state.database, vec![if s.is_empty() { "dbo" } else { s }], t),
        [d, s, t] => (if d.is_empty() { &state.database } else { d }, vec![if s.is_empty() { "dbo" } else { s }], t),
        _ => return None,
    };
    if table.starts_with('#') || table.starts_with('@') {
        return None;
    }
    let of = state.catalog_of(shared, db).ok()?;
    let found = schemas.iter().find_map(|s| of.catalog.table(s, table).cloned())?;
    Some((of.database.to_string(), found))
}

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
