//! T-SQL cursors: DECLARE CURSOR (SQL Server's options and the ISO form), OPEN, FETCH,
//! CLOSE, DEALLOCATE, cursor variables and `WHERE CURRENT OF`.

use super::{Expr, Ident, Query};

/// `DECLARE name CURSOR [options] FOR select [FOR {READ ONLY | UPDATE [OF cols]}]`,
/// `DECLARE name [INSENSITIVE] [SCROLL] CURSOR FOR …` (ISO), and the `CURSOR …` value of
/// `SET @c = CURSOR …`.
#[derive(Clone, Debug, PartialEq)]
pub struct CursorDefinition {
    pub options: CursorOptions,
    pub query: Box<Query>,
    /// Byte range of the SELECT in the batch text (what OPEN runs).
    pub query_span: (usize, usize),
    pub update: CursorUpdate,
}

/// The options as written; what they add up to is decided when the cursor is declared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CursorOptions {
    /// LOCAL (Some(false)) or GLOBAL (Some(true)); None: the database default (GLOBAL).
    pub global: Option<bool>,
    pub scroll: bool,
    pub forward_only: bool,
    /// INSENSITIVE (ISO): a STATIC, READ_ONLY cursor.
    pub insensitive: bool,
    pub kind: Option<CursorKind>,
    pub concurrency: Option<CursorConcurrency>,
    pub type_warning: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CursorKind {
    Static,
    Keyset,
    Dynamic,
    FastForward,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CursorConcurrency {
    ReadOnly,
    ScrollLocks,
    Optimistic,
}

/// The FOR clause after the cursor's SELECT.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum CursorUpdate {
    #[default]
    Unspecified,
    ReadOnly,
    /// `FOR UPDATE [OF col, …]`: an empty list allows every column.
    Update(Vec<Ident>),
}

/// A cursor a statement names: `[GLOBAL] name` or `@variable`.
#[derive(Clone, Debug, PartialEq)]
pub enum CursorRef {
    Name { name: Ident, global: bool },
    Variable(String),
}

/// FETCH's orientation.
#[derive(Clone, Debug, PartialEq)]
pub enum FetchDirection {
    Next,
    Prior,
    First,
    Last,
    Absolute(Expr),
    Relative(Expr),
}

/// The cursor statements.
#[derive(Clone, Debug, PartialEq)]
pub enum CursorStatement {
    Declare {
        name: Ident,
        definition: CursorDefinition,
    },
    /// `SET @c = CURSOR … FOR …`
    SetDefinition {
        variable: String,
        definition: CursorDefinition,
    },
    Open(CursorRef),
    Fetch {
        direction: FetchDirection,
        cursor: CursorRef,
        into: Vec<String>,
    },
    Close(CursorRef),
    Deallocate(CursorRef),
}

/// `WHERE CURRENT OF cursor` ending an UPDATE or DELETE, with the clause's byte range in
/// the batch text.
#[derive(Clone, Debug, PartialEq)]
pub struct CurrentOf {
    pub cursor: CursorRef,
    pub span: (usize, usize),
}
