//! Compiled statements: what the binder makes of a query or a data change, and the plan
//! cache keeps.

use std::sync::Arc;

use super::{Expr, Plan};
use crate::catalog::{DbRef, Table};
use crate::output::OutputColumn;
use crate::types::SqlType;

/// A compiled statement, kept in the plan cache.
#[derive(Debug)]
pub enum Prepared {
    Query(BoundQuery),
    /// `SELECT @a = …, @b = … [FROM …]` and `SET @a = …`: the last row wins.
    Assign {
        plan: Plan,
        targets: Vec<(usize, SqlType, SqlType)>,
    },
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
    Merge(Box<MergePlan>),
}

/// A bound query: its plan and result columns.
#[derive(Clone, Debug)]
pub struct BoundQuery {
    pub plan: Plan,
    pub columns: Vec<OutputColumn>,
}

/// The table a data change targets, with its CHECK and DEFAULT definitions bound.

#[derive(Debug, Clone)]
pub struct Target {
    pub db: DbRef,
    /// The definition the plan was bound against (`ExecCtx::table` finds the table of
    /// that name in the database the plan runs in).
    pub table: Arc<Table>,
    /// Bound CHECK constraints over the table's row, one per `table.checks`.
    pub checks: Vec<Expr>,
    /// Bound DEFAULT expressions per column.
    pub defaults: Vec<Option<(Expr, SqlType)>>,
    /// Each index's bound filter predicate (None: an index of every row), by position in
    /// `table.indexes`.
    pub filters: Vec<Option<Expr>>,
    /// Each computed column's bound expression over the table's row (None: a column that
    /// is not computed), with its type.
    pub computed: Vec<Option<(Expr, SqlType)>>,
    /// A view, changed only by the INSTEAD OF trigger on it that runs in the statement's
    /// place: `table` stands for it with its columns, and nothing else (no storage, no
    /// constraints, no indexes).
    pub view: bool,
}

#[derive(Debug)]
pub enum InsertSource {
    /// VALUES rows; None is the DEFAULT keyword.
    Rows(Vec<Vec<Option<Expr>>>),
    Query(Box<Plan>),
    DefaultValues,
}

#[derive(Debug)]
pub struct InsertPlan {
    pub target: Target,
    /// Table column receiving each source column.
    pub columns: Vec<usize>,
    pub source_types: Vec<SqlType>,
    pub source: InsertSource,
    pub output: Option<OutputPlan>,
    pub top: Option<Expr>,
    /// The column list names the identity column (needs IDENTITY_INSERT ON).
    pub explicit_identity: bool,
}

#[derive(Debug)]
pub struct UpdatePlan {
    pub target: Target,
    /// Rows of the FROM clause, including the target's columns and key.
    pub source: Plan,
    /// Where the target table's columns start in a source row, and its key column.
    pub offset: usize,
    pub key: usize,
    pub set: SetList,
    pub output: Option<OutputPlan>,
}

/// What a SET list assigns, over the row it is evaluated on: an UPDATE's, or a MERGE's
/// UPDATE action.
#[derive(Debug, Default)]
pub struct SetList {
    /// (column, value over the source row, value type)
    pub sets: Vec<(usize, Expr, SqlType)>,
    /// Variables assigned in the SET list: (slot, value, value type, variable type).
    pub variables: Vec<(usize, VarSource, SqlType, SqlType)>,
    /// `SET col.WRITE(…)`: parts of `(max)` values replaced.
    pub writes: Vec<PartialWrite>,
}

impl SetList {
    /// The table columns the list changes.
    pub fn changed(&self) -> Vec<usize> {
        self.sets.iter().map(|s| s.0).chain(self.writes.iter().map(|w| w.column)).collect()
    }
}

/// `SET col.WRITE(value, offset, length)` over the source row: `length` characters (bytes
/// of varchar and varbinary, UTF-16 code units of nvarchar) from `offset` replaced by
/// `value`; a NULL offset appends, a NULL length or value cuts the rest.
#[derive(Debug)]
pub struct PartialWrite {
    pub column: usize,
    /// The value and its type (cast to the column's).
    pub value: (Expr, SqlType),
    /// The offset and the length, with their types (cast to bigint).
    pub offset: (Expr, SqlType),
    pub length: (Expr, SqlType),
}

/// What an UPDATE's `SET @v = …` assigns.
#[derive(Debug)]
pub enum VarSource {
    /// An expression over the source row.
    Expr(Expr),
    /// `SET @v = col = expr`: the column's new value.
    NewColumn(usize),
}

#[derive(Debug)]
pub struct DeletePlan {
    pub target: Target,
    pub source: Plan,
    pub offset: usize,
    pub key: usize,
    pub output: Option<OutputPlan>,
}

/// A MERGE: the source joined to the target, and what each WHEN clause does with a row
/// of the join. Every expression of a clause is over the join's row (source columns, then
/// the target's, then its key); an OUTPUT expression is over the deleted and inserted rows,
/// then the join's row, then `$action`.
#[derive(Debug)]
pub struct MergePlan {
    pub target: Target,
    /// Each source row with the target rows that match it ON the condition (a left join
    /// when a clause inserts, so a source row without a match comes once, its target
    /// columns and key NULL).
    pub source: Plan,
    /// Where the target's columns start in a row of `source`, and its key column.
    pub offset: usize,
    pub key: usize,
    /// With WHEN NOT MATCHED BY SOURCE clauses: every target row with its key (the rows
    /// no source row matched are theirs), to be put at `offset` of a row of NULLs.
    pub unmatched: Option<Plan>,
    pub clauses: Vec<MergeClause>,
    pub output: Option<OutputPlan>,
    /// `MERGE TOP (n)`: at most n rows acted on.
    pub top: Option<Expr>,
}

/// A WHEN clause: which rows, the condition they must meet, and the action.
#[derive(Debug)]
pub struct MergeClause {
    pub when: tessera_syntax::ast::MergeWhen,
    pub condition: Option<Expr>,
    pub action: MergeAction,
}

#[derive(Debug)]
pub enum MergeAction {
    Update(SetList),
    Delete,
    /// The table column receiving each value, the values (None: DEFAULT) and their types;
    /// `explicit_identity` when the columns name the identity column.
    Insert {
        columns: Vec<usize>,
        values: Vec<Option<Expr>>,
        source_types: Vec<SqlType>,
        explicit_identity: bool,
    },
}

/// An OUTPUT clause: expressions over `deleted` columns followed by `inserted` columns.
#[derive(Debug)]
pub struct OutputPlan {
    pub exprs: Vec<Expr>,
    pub columns: Vec<OutputColumn>,
    /// `OUTPUT … INTO t [(cols)]`: the rows go into this insert instead of to the client.
    pub into: Option<Box<InsertPlan>>,
}
