//! A session's server cursors, as data: the cursors open in it (API cursors by handle,
//! and the T-SQL cursors that are open), the statements prepared for API cursors, and the
//! T-SQL cursors declared in it with the names and cursor variables that reach them. How
//! they are opened, fetched and changed is `tessera_sql`'s (session/cursors); this is what
//! a statement's expressions read of them (`@@FETCH_STATUS`, `@@CURSOR_ROWS`,
//! `CURSOR_STATUS`).
//!
//! Invariants: a T-SQL cursor exists while a name or cursor variable reaches it (it goes
//! with the last one); an open T-SQL cursor's rows are the `open` entry its `handle`
//! names, and no other cursor holds that handle; LOCAL names and cursor variables belong
//! to the scope (batch, procedure, trigger, function) that declared them and go when it
//! ends.

use std::collections::HashMap;

use tessera_governance::grant::Reservation;
use tessera_semantics::output::{ColumnOrigins, OutputColumn};
use tessera_semantics::types::{SqlType, Value};

/// Open cursors a session may hold at once (16960 past it).
pub const MAX_OPEN_CURSORS: usize = 1024;
/// T-SQL cursors a session may have declared at once (16960 past it).
pub const MAX_DECLARED_CURSORS: usize = 4096;
const FIRST_CURSOR_HANDLE: i32 = 180_150_001;
pub const FIRST_PREPARED_HANDLE: i32 = 1_073_741_825;

/// A session's cursors.
pub struct Cursors {
    pub open: HashMap<i32, Cursor>,
    pub prepared: HashMap<i32, PreparedCursor>,
    pub next_prepared: i32,
    next_cursor: i32,
    /// T-SQL cursors by id, and the names and variables that reach them.
    declared: HashMap<u64, Declared>,
    bindings: Vec<Binding>,
    next_id: u64,
    /// The scopes running, innermost last (each batch, module or trigger body has one).
    scopes: Vec<u64>,
    next_scope: u64,
    /// `@@FETCH_STATUS`: the last FETCH's outcome in the session (0, -1 or -2).
    pub fetch_status: i32,
    /// `@@CURSOR_ROWS`: the rows of the last cursor opened (-1 while unknown: dynamic
    /// and forward-only cursors), 0 when none.
    pub cursor_rows: i64,
}

impl Default for Cursors {
    fn default() -> Cursors {
        Cursors {
            open: HashMap::new(),
            prepared: HashMap::new(),
            next_prepared: FIRST_PREPARED_HANDLE,
            next_cursor: FIRST_CURSOR_HANDLE,
            declared: HashMap::new(),
            bindings: Vec::new(),
            next_id: 1,
            scopes: Vec::new(),
            next_scope: 1,
            fetch_status: -1,
            cursor_rows: 0,
        }
    }
}

/// A statement prepared by `sp_cursorprepare` or `sp_cursorprepexec`.
#[derive(Clone)]
pub struct PreparedCursor {
    pub paramdef: String,
    pub stmt: String,
}

/// An open cursor: its rows and where its fetch buffer is.
pub struct Cursor {
    /// The scroll type and concurrency granted (`sp_cursoropen`'s `@scrollopt` and
    /// `@ccopt` bits).
    pub scroll: i64,
    pub concurrency: i64,
    /// The select list's columns, then the hidden ROWSTAT.
    pub columns: Vec<OutputColumn>,
    pub origins: ColumnOrigins,
    pub rows: Vec<CursorRow>,
    /// What the rows hold of the query memory.
    pub memory: Reservation,
    pub keyed: Option<Keyed>,
    /// The fetch buffer: its first row (1-based; 0 before the first row, `rows.len() + 1`
    /// after the last) and how many rows it holds.
    pub start: i64,
    pub len: usize,
    /// `sp_cursoroption … CURSOR_NAME`.
    pub name: Option<String>,
}

pub struct CursorRow {
    /// The select list's values as last read.
    pub values: Vec<Value>,
    /// The row's key (keyed cursors; empty otherwise).
    pub key: Vec<Value>,
    /// Deleted since the cursor opened (ROWSTAT 2).
    pub missing: bool,
}

/// A keyed cursor's base table and how rows are found again.
#[derive(Clone)]
pub struct Keyed {
    /// Database, schema and table.
    pub table: Vec<String>,
    /// The key columns, with their types.
    pub keys: Vec<(String, SqlType)>,
    /// For each select-list column, the base column it reads (None: an expression).
    pub bases: Vec<Option<String>>,
    /// Reads one row again by key (`@__k1`, …).
    pub reread: String,
    pub reread_params: String,
}

/// A T-SQL cursor as DECLARE CURSOR (or `SET @c = CURSOR …`) made it.
pub struct Declared {
    /// The SELECT's text, with the variables it reads as parameters (their values as
    /// they were when the cursor was declared, as SQL Server takes them).
    pub text: String,
    pub paramdef: String,
    pub args: Vec<(String, SqlType, Value)>,
    /// The scroll type and concurrency asked for (`@scrollopt`, `@ccopt` bits).
    pub scroll: i64,
    pub concurrency: i64,
    /// FOR UPDATE OF: the columns positioned updates may set (None: every column).
    pub update_of: Option<Vec<String>>,
    /// Only FETCH NEXT moves it (FORWARD_ONLY, FAST_FORWARD, or neither SCROLL nor a
    /// scrollable type asked).
    pub forward_only: bool,
    /// DYNAMIC (asked, or by default): rows deleted since it opened are passed over, and
    /// `@@CURSOR_ROWS` is -1.
    pub dynamic: bool,
    /// TYPE_WARNING: a cursor converted to another type says so (16956).
    pub type_warning: bool,
    /// The open cursor's handle in [`Cursors::open`].
    pub handle: Option<i32>,
}

/// What reaches a T-SQL cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    Global,
    Local,
    Variable,
}

struct Binding {
    /// As declared; compared without case.
    name: String,
    reach: Reach,
    /// The scope that declared it (0 for GLOBAL names).
    scope: u64,
    /// The cursor (None: a cursor variable with no cursor set).
    cursor: Option<u64>,
}

impl Cursors {
    /// Closes every cursor and forgets every prepared statement and declaration (the
    /// session ends).
    pub fn clear(&mut self) {
        *self = Cursors::default();
    }

    pub fn new_handle(&mut self) -> i32 {
        loop {
            let handle = self.next_cursor;
            self.next_cursor = handle.checked_add(1).unwrap_or(FIRST_CURSOR_HANDLE);
            if !self.open.contains_key(&handle) {
                return handle;
            }
        }
    }

    /// A batch, module or trigger body starts: its LOCAL cursors and cursor variables
    /// belong to the scope returned, until [`Cursors::leave_scope`].
    pub fn enter_scope(&mut self) -> u64 {
        let scope = self.next_scope;
        self.next_scope += 1;
        self.scopes.push(scope);
        scope
    }

    /// The scope ends: its LOCAL cursors and cursor variables go (and the cursors only
    /// they reached, closed).
    pub fn leave_scope(&mut self, scope: u64) {
        debug_assert_eq!(self.scopes.last(), Some(&scope), "scopes end innermost first");
        self.scopes.retain(|s| *s != scope);
        let gone: Vec<Option<u64>> =
            self.bindings.iter().filter(|b| b.scope == scope && b.reach != Reach::Global).map(|b| b.cursor).collect();
        self.bindings.retain(|b| !(b.scope == scope && b.reach != Reach::Global));
        for id in gone.into_iter().flatten() {
            self.release(id);
        }
    }

    fn current_scope(&self) -> u64 {
        self.scopes.last().copied().unwrap_or(0)
    }

    fn position(&self, name: &str, reach: Reach) -> Option<usize> {
        let scope = self.current_scope();
        self.bindings.iter().position(|b| {
            b.reach == reach && (reach == Reach::Global || b.scope == scope) && b.name.eq_ignore_ascii_case(name)
        })
    }

    /// Whether `name` is taken for `reach` (in the running scope unless GLOBAL).
    pub fn is_declared(&self, name: &str, reach: Reach) -> bool {
        self.position(name, reach).is_some()
    }

    pub fn declared_count(&self) -> usize {
        self.declared.len()
    }

    /// Declares a cursor reached by `name` (a cursor name, or a cursor variable that has
    /// been declared: it then reaches this cursor instead of the one it had).
    pub fn declare(&mut self, name: &str, reach: Reach, cursor: Declared) {
        let id = self.next_id;
        self.next_id += 1;
        self.declared.insert(id, cursor);
        self.bind(name, reach, Some(id));
    }

    /// `DECLARE @c CURSOR`: a cursor variable with no cursor.
    pub fn declare_variable(&mut self, name: &str) {
        self.bind(name, Reach::Variable, None);
    }

    /// Points `name` at `cursor` (the cursor it reached before goes if nothing else
    /// reaches it).
    fn bind(&mut self, name: &str, reach: Reach, cursor: Option<u64>) {
        let scope = if reach == Reach::Global { 0 } else { self.current_scope() };
        match self.position(name, reach) {
            Some(i) => {
                let old = std::mem::replace(&mut self.bindings[i].cursor, cursor);
                if let Some(old) = old.filter(|o| Some(*o) != cursor) {
                    self.release(old);
                }
            }
            None => self.bindings.push(Binding { name: name.to_string(), reach, scope, cursor }),
        }
    }

    /// The cursor `name` reaches: for a name, the LOCAL one of the running scope, else
    /// the GLOBAL one (`global`: only that); for a variable, its cursor. Err(true): the
    /// variable exists with no cursor; Err(false): nothing of that name.
    pub fn find(&self, name: &str, reach: Reach) -> Result<u64, bool> {
        let found = match reach {
            Reach::Local => self.position(name, Reach::Local).or_else(|| self.position(name, Reach::Global)),
            other => self.position(name, other),
        };
        match found {
            Some(i) => self.bindings[i].cursor.ok_or(true),
            None => Err(false),
        }
    }

    /// Points the cursor variable `name` at cursor `id` (`SET @c = name | @other`).
    pub fn assign_variable(&mut self, name: &str, id: u64) {
        self.bind(name, Reach::Variable, Some(id));
    }

    /// A procedure's cursor OUTPUT parameter `parameter` comes back: the caller's cursor
    /// variable `variable` (of the scope below the running one) reaches its cursor.
    pub fn return_cursor(&mut self, parameter: &str, variable: &str) {
        let Ok(id) = self.find(parameter, Reach::Variable) else { return };
        let caller = self.scopes.len().checked_sub(2).map_or(0, |i| self.scopes[i]);
        match self
            .bindings
            .iter()
            .position(|b| b.reach == Reach::Variable && b.scope == caller && b.name.eq_ignore_ascii_case(variable))
        {
            Some(i) => self.bindings[i].cursor = Some(id),
            None => self.bindings.push(Binding {
                name: variable.to_string(),
                reach: Reach::Variable,
                scope: caller,
                cursor: Some(id),
            }),
        }
    }

    pub fn declared(&self, id: u64) -> Option<&Declared> {
        self.declared.get(&id)
    }

    pub fn declared_mut(&mut self, id: u64) -> Option<&mut Declared> {
        self.declared.get_mut(&id)
    }

    /// DEALLOCATE: `name` no longer reaches its cursor (a variable stays declared, with
    /// no cursor); the cursor goes once nothing reaches it.
    pub fn deallocate(&mut self, name: &str, reach: Reach, global_only: bool) {
        let found = match (reach, global_only) {
            (Reach::Local, false) => self.position(name, Reach::Local).or_else(|| self.position(name, Reach::Global)),
            (Reach::Local, true) => self.position(name, Reach::Global),
            (other, _) => self.position(name, other),
        };
        let Some(i) = found else { return };
        let cursor = if self.bindings[i].reach == Reach::Variable {
            self.bindings[i].cursor.take()
        } else {
            self.bindings.remove(i).cursor
        };
        if let Some(id) = cursor {
            self.release(id);
        }
    }

    /// Cursor `id` goes, closed, if no name or variable reaches it any more.
    fn release(&mut self, id: u64) {
        if self.bindings.iter().any(|b| b.cursor == Some(id)) {
            return;
        }
        if let Some(handle) = self.declared.remove(&id).and_then(|d| d.handle) {
            self.open.remove(&handle);
        }
    }

    /// `CURSOR_STATUS(kind, name)`: 1 open (with rows, or of a type whose rows are not
    /// counted), 0 open and empty, -1 closed, -2 a variable with no cursor, -3 no such
    /// cursor or variable; None for a kind other than 'local', 'global' or 'variable'.
    pub fn status(&self, kind: &str, name: &str) -> Option<i32> {
        let reach = match kind.trim_end().to_ascii_lowercase().as_str() {
            "local" => Reach::Local,
            "global" => Reach::Global,
            "variable" => Reach::Variable,
            _ => return None,
        };
        let found = self.position(name.trim_end(), reach).map(|i| self.bindings[i].cursor);
        Some(match found {
            None => -3,
            Some(None) => -2,
            Some(Some(id)) => match self.declared.get(&id).and_then(|d| d.handle).and_then(|h| self.open.get(&h)) {
                None => -1,
                Some(c) if c.counts_rows() && c.rows.is_empty() => 0,
                Some(_) => 1,
            },
        })
    }
}

impl Cursor {
    /// Whether the cursor knows how many rows it has (STATIC and KEYSET ones).
    pub fn counts_rows(&self) -> bool {
        self.scroll & (0x1 | 0x8) != 0
    }
}
