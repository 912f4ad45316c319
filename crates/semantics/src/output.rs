//! What a batch produces, as a stream of events ([`ResultSink`]), and the sqlcmd-style
//! text rendering of that stream ([`SqlcmdWriter`]) that `tessera sql` prints — in
//! process and, through the TDS client, over the network alike.

use crate::types::{self, SqlType, Value};
use std::ops::Range;
use tessera_errors::SqlError;

/// A change of session environment that clients are told about (TDS ENVCHANGE).
#[derive(Clone, Debug, PartialEq)]
pub enum EnvChange {
    Database { old: String, new: String },
    BeginTransaction,
    CommitTransaction,
    RollbackTransaction,
}

/// A result column: name, type and nullability.
#[derive(Clone, Debug)]
pub struct OutputColumn {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
}

/// Where the columns of a server cursor's result come from, which a client needs to
/// update rows through the cursor (TDS TABNAME and COLINFO, sent after the cursor's
/// COLMETADATA as SQL Server sends them for cursors and FOR BROWSE).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnOrigins {
    /// The base tables, each as its name's parts (database, schema, table).
    pub tables: Vec<Vec<String>>,
    /// One per result column, in order.
    pub columns: Vec<ColumnOrigin>,
}

/// Where one result column comes from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnOrigin {
    /// 1-based position of its table in [`ColumnOrigins::tables`]; 0 for none.
    pub table: u8,
    /// The base column's name, when it differs from the result column's.
    pub base_name: Option<String>,
    /// Computed from an expression rather than read from a column.
    pub expression: bool,
    /// Part of its table's key.
    pub key: bool,
    /// Not one of the select list's columns (a cursor's trailing ROWSTAT).
    pub hidden: bool,
}

/// What a statement that ended was, for the DONE that ends it: TDS carries it as the
/// token's CurCmd, and drivers read it (the Microsoft JDBC driver takes a row count only
/// from a DONE that ends a data change, and reports 0 for one that ends DDL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// A result set (a query's, or the rows a procedure, DBCC or RESTORE … ONLY returns).
    Select,
    SelectInto,
    Insert,
    Update,
    Delete,
    Merge,
    BulkInsert,
    CreateTable,
    DropTable,
    AlterTable,
    CreateIndex,
    DropIndex,
    CreateView,
    DropView,
    CreateProcedure,
    DropProcedure,
    CreateFunction,
    DropFunction,
    CreateSchema,
    DropSchema,
    CreateDatabase,
    DropDatabase,
    AlterDatabase,
    CreateUser,
    AlterUser,
    DropUser,
    CreateRole,
    AlterRole,
    DropRole,
    CreateLogin,
    AlterLogin,
    DropLogin,
    Grant,
    Revoke,
    Deny,
    /// Another definition or administration statement (TRUNCATE TABLE, ALTER
    /// AUTHORIZATION, application roles, server roles).
    OtherDdl,
}

impl Command {
    /// Whether the DONE ends a result set.
    pub fn is_result_set(self) -> bool {
        self == Command::Select
    }
}

/// Receives a batch's results in order.
pub trait ResultSink {
    /// A result set starts.
    fn columns(&mut self, columns: &[OutputColumn]);
    /// A server cursor's result starts: its columns (the hidden ones last) and where they
    /// come from. By default, as [`ResultSink::columns`].
    fn cursor_columns(&mut self, columns: &[OutputColumn], _origins: &ColumnOrigins) {
        self.columns(columns);
    }
    /// The result columns (1-based) the rows come ordered by (ORDER BY), after `columns`.
    fn order(&mut self, _columns: &[u16]) {}
    fn row(&mut self, row: &[Value]);
    /// Whether the sink wants the rows of a query that reads a table's columns as they
    /// are stored ([`ResultSink::stored_row`]) rather than as values.
    fn takes_stored_rows(&self) -> bool {
        false
    }
    /// A row in its stored form (only to a sink that [takes
    /// them](ResultSink::takes_stored_rows)); by default decoded into values for
    /// [`ResultSink::row`].
    fn stored_row(&mut self, row: &StoredRow<'_>) {
        self.row(&row.values());
    }
    /// A result set or a statement ended; `count` is the row count to report (None under
    /// SET NOCOUNT ON or for statements without a count).
    fn done(&mut self, count: Option<u64>, command: Command);
    /// An error (severity ≥ 11) or an informational message (PRINT, RAISERROR ≤ 10).
    fn message(&mut self, message: &SqlError);
    fn env_change(&mut self, _change: &EnvChange) {}
    /// A procedure's return status (`EXEC p` as an RPC).
    fn return_status(&mut self, _status: i32) {}
}

/// A result row whose columns are columns of one stored row, handed over in their stored
/// form (the storage layer's row layout), which for every type but money is the form TDS
/// carries: the row's bytes are written to the client without becoming values.
#[derive(Clone, Copy, Debug)]
pub struct StoredRow<'r> {
    /// The stored row.
    bytes: &'r [u8],
    /// Per result column: its type, and where its bytes are in the row (None for NULL).
    types: &'r [SqlType],
    spans: &'r [Option<Range<usize>>],
    /// The value of a column's stored bytes: the form is storage's, so the layer that
    /// made the row says how.
    decode: DecodeStored,
}

/// The value of a column's stored bytes, given its type (bytes the row's maker checked).
pub type DecodeStored = fn(&SqlType, &[u8]) -> Value;

impl<'r> StoredRow<'r> {
    /// A row whose columns were found at `spans`; each span's bytes must be a valid
    /// stored value of its column's type in `types` (the maker checked them), which
    /// `decode` turns into a value.
    pub fn new(
        bytes: &'r [u8],
        types: &'r [SqlType],
        spans: &'r [Option<Range<usize>>],
        decode: DecodeStored,
    ) -> StoredRow<'r> {
        assert_eq!(types.len(), spans.len(), "a type and a span per column");
        debug_assert!(spans.iter().flatten().all(|s| s.end <= bytes.len()));
        StoredRow { bytes, types, spans, decode }
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// Result column `i`: its type and its stored bytes (None when NULL).
    pub fn column(&self, i: usize) -> (&'r SqlType, Option<&'r [u8]>) {
        (&self.types[i], self.spans[i].clone().map(|s| &self.bytes[s]))
    }

    /// The row as values.
    pub fn values(&self) -> Vec<Value> {
        (0..self.len())
            .map(|i| match self.column(i) {
                (_, None) => Value::Null,
                (ty, Some(bytes)) => (self.decode)(ty, bytes),
            })
            .collect()
    }
}

/// Collects everything, for tests and embedders.
#[derive(Debug, Default)]
pub struct Collected {
    pub result_sets: Vec<(Vec<OutputColumn>, Vec<Vec<Value>>)>,
    pub counts: Vec<u64>,
    pub messages: Vec<SqlError>,
}

impl Collected {
    pub fn errors(&self) -> Vec<&SqlError> {
        self.messages.iter().filter(|m| m.severity > 10).collect()
    }
}

impl ResultSink for Collected {
    fn columns(&mut self, columns: &[OutputColumn]) {
        self.result_sets.push((columns.to_vec(), Vec::new()));
    }
    /// Stored rows are decoded here rather than by the query, so that in-process runs
    /// take the path a TDS client's queries take.
    fn takes_stored_rows(&self) -> bool {
        true
    }
    /// Large values are read whole (the rows outlive the statement); one that cannot be
    /// read is NULL in the row and its error is among the messages.
    fn row(&mut self, row: &[Value]) {
        let mut failed = Vec::new();
        let row: Vec<Value> = row
            .iter()
            .map(|v| {
                v.clone().materialized().unwrap_or_else(|e| {
                    failed.push(e);
                    Value::Null
                })
            })
            .collect();
        self.messages.append(&mut failed);
        if let Some(rs) = self.result_sets.last_mut() {
            rs.1.push(row);
        }
    }
    fn done(&mut self, count: Option<u64>, _command: Command) {
        if let Some(c) = count {
            self.counts.push(c);
        }
    }
    fn message(&mut self, message: &SqlError) {
        self.messages.push(message.clone());
    }
}

/// sqlcmd's formatting switches.
#[derive(Clone, Debug)]
pub struct SqlcmdFormat {
    /// `-W`: remove trailing spaces and pad no column.
    pub trim: bool,
    /// `-h -1`: no headers.
    pub headers: bool,
    /// `-s`: column separator.
    pub separator: String,
    /// Display width of `(max)` columns (sqlcmd's `-y`, 256 by default).
    pub max_width: usize,
}

impl Default for SqlcmdFormat {
    fn default() -> SqlcmdFormat {
        SqlcmdFormat { trim: false, headers: true, separator: " ".to_string(), max_width: 256 }
    }
}

/// Renders results as sqlcmd does.
pub struct SqlcmdWriter<W: std::io::Write> {
    out: W,
    format: SqlcmdFormat,
    widths: Vec<usize>,
    right: Vec<bool>,
    column_types: Vec<SqlType>,
    /// An error number seen (for `-b` exit codes).
    pub last_error: Option<SqlError>,
    /// A result set's header was shown and neither its DONE nor an error has come yet.
    open_result: bool,
}

fn is_numeric(t: &SqlType) -> bool {
    use SqlType::*;
    matches!(t, Bit | TinyInt | SmallInt | Int | BigInt | Real | Float | Decimal { .. } | Money | SmallMoney)
}

/// The display size sqlcmd reserves for a type.
pub fn display_width(t: &SqlType, max_width: usize) -> usize {
    use tessera_types::MAX;
    use SqlType::*;
    let frac = |s: u8| if s > 0 { usize::from(s) + 1 } else { 0 };
    match *t {
        Bit => 1,
        TinyInt => 3,
        SmallInt => 6,
        Int => 11,
        BigInt => 20,
        Real => 14,
        Float => 24,
        Decimal { precision, .. } => usize::from(precision) + 2,
        Money => 21,
        SmallMoney => 12,
        Char(n) | VarChar(n) | NChar(n) | NVarChar(n) => {
            if n == MAX {
                max_width
            } else {
                usize::from(n)
            }
        }
        Binary(n) | VarBinary(n) => {
            if n == MAX {
                max_width
            } else {
                2 + 2 * usize::from(n)
            }
        }
        Date => 10,
        Time { scale } => 8 + frac(scale),
        DateTime => 23,
        SmallDateTime => 19,
        DateTime2 { scale } => 19 + frac(scale),
        DateTimeOffset { scale } => 26 + frac(scale),
        UniqueIdentifier => 36,
    }
}

impl<W: std::io::Write> SqlcmdWriter<W> {
    pub fn new(out: W, format: SqlcmdFormat) -> SqlcmdWriter<W> {
        SqlcmdWriter {
            out,
            format,
            widths: Vec::new(),
            right: Vec::new(),
            column_types: Vec::new(),
            last_error: None,
            open_result: false,
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn line(&mut self, s: &str) {
        let s = if self.format.trim { s.trim_end() } else { s };
        let _ = writeln!(self.out, "{s}");
    }

    fn cells(&self, cells: &[String]) -> String {
        let mut line = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                line.push_str(&self.format.separator);
            }
            if self.format.trim {
                line.push_str(cell);
                continue;
            }
            let w = self.widths[i];
            let shown: String = cell.chars().take(w).collect();
            let pad = w.saturating_sub(shown.chars().count());
            if self.right[i] {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(&shown);
            } else {
                line.push_str(&shown);
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        line
    }
}

impl<W: std::io::Write> ResultSink for SqlcmdWriter<W> {
    fn columns(&mut self, columns: &[OutputColumn]) {
        self.open_result = true;
        self.widths = columns
            .iter()
            .map(|c| {
                let w = display_width(&c.ty, self.format.max_width).max(c.name.chars().count());
                if c.nullable {
                    w.max(4)
                } else {
                    w
                }
            })
            .collect();
        self.right = columns.iter().map(|c| is_numeric(&c.ty)).collect();
        self.column_types = columns.iter().map(|c| c.ty).collect();
        if self.format.headers {
            let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
            let saved = std::mem::replace(&mut self.right, vec![false; columns.len()]);
            let header = self.cells(&names);
            self.right = saved;
            self.line(&header);
            let dashes: Vec<String> = if self.format.trim {
                columns.iter().map(|c| "-".repeat(c.name.chars().count().max(1))).collect()
            } else {
                self.widths.iter().map(|w| "-".repeat(*w)).collect()
            };
            let saved = std::mem::take(&mut self.format.trim);
            let dash_line = if saved { dashes.join(&self.format.separator) } else { self.cells(&dashes) };
            self.format.trim = saved;
            self.line(&dash_line);
        }
    }

    /// As [`Collected`]: the text is made from values decoded here.
    fn takes_stored_rows(&self) -> bool {
        true
    }

    fn row(&mut self, row: &[Value]) {
        let cells: Vec<String> = row.iter().zip(&self.column_types).map(|(v, t)| types::display_text(v, t)).collect();
        let line = self.cells(&cells);
        self.line(&line);
    }

    fn done(&mut self, count: Option<u64>, command: Command) {
        match count {
            Some(n) => {
                self.line("");
                self.line(&format!("({n} row{} affected)", if n == 1 { "" } else { "s" }));
            }
            // The end of a result set shown without its count (NOCOUNT ON); a failed
            // statement's DONE shows nothing.
            None if command.is_result_set() && self.open_result => self.line(""),
            None => {}
        }
        self.open_result = false;
    }

    fn message(&mut self, m: &SqlError) {
        if m.severity > 10 {
            // A result set an error ended shows no blank line after it.
            self.open_result = false;
            let place = match &m.procedure {
                Some(p) => format!("Procedure {p}, Line {}", m.line),
                None => format!("Line {}", m.line),
            };
            self.line(&format!("Msg {}, Level {}, State {}, {place}", m.number, m.severity, m.state));
            self.last_error = Some(m.clone());
        }
        self.line(&m.message);
    }
}
