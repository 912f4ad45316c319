//! The syntax tree of a T-SQL batch, as the parser produces it.
//!
//! The tree is purely syntactic: names are not resolved and types are not checked (that
//! is the binder's job). Identifiers keep their spelling; comparisons between names are
//! case-insensitive everywhere above this module (SQL_Latin1_General_CP1_CI_AS).
//! Every statement records the 1-based line of the batch it starts on, which is the line
//! SQL Server reports in `Msg …, Line n` for errors raised while running it.

pub mod cursor;
pub mod governor;

/// An identifier: `name`, `[name with spaces]` or `"name"`.
#[derive(Clone, Debug)]
pub struct Ident {
    pub value: String,
    /// Written with brackets or double quotes.
    pub quoted: bool,
}

/// Two identifiers are the same name whether quoted or not, in any case (the server's
/// collation, SQL_Latin1_General_CP1_CI_AS, ignores case): so `author.name` and
/// `"Author"."NAME"` are one column to GROUP BY, ORDER BY and every other comparison of
/// expressions.
impl PartialEq for Ident {
    fn eq(&self, other: &Ident) -> bool {
        if self.value.is_ascii() && other.value.is_ascii() {
            return self.value.eq_ignore_ascii_case(&other.value);
        }
        self.value.chars().flat_map(char::to_lowercase).eq(other.value.chars().flat_map(char::to_lowercase))
    }
}

impl Ident {
    pub fn new(value: impl Into<String>) -> Ident {
        Ident { value: value.into(), quoted: false }
    }

    /// Case-insensitive comparison with a name.
    pub fn is(&self, name: &str) -> bool {
        self.value.eq_ignore_ascii_case(name)
    }
}

/// A possibly qualified name: `t`, `dbo.t`, `db.dbo.t`, `server.db.dbo.t`, `db..t` (an
/// empty part is an `Ident` with an empty value), `#temp`, `##global`. The last part is the
/// object's own name.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectName(pub Vec<Ident>);

impl ObjectName {
    pub fn name(&self) -> &Ident {
        self.0.last().expect("an object name has at least one part")
    }
}

/// A batch: the text between two `GO` lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    pub statements: Vec<Statement>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// 1-based line in the batch where the statement starts.
    pub line: u32,
    /// Byte range of the statement in the batch text: its first token to its last, with a
    /// semicolon that ends it (what SHOWPLAN_TEXT shows as the statement's text).
    pub span: (usize, usize),
    pub kind: StatementKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StatementKind {
    // ---- queries and DML -------------------------------------------------------------
    /// `[WITH …] SELECT …`, also `SELECT … INTO t` (see [`Select::into`]).
    Query(Box<Query>),
    Insert(Box<Insert>),
    /// `INSERT BULK t (col type, …) [WITH (…)]`: what a bulk-load client announces
    /// before its BULK_LOAD message.
    InsertBulk(InsertBulk),
    Update(Box<Update>),
    Delete(Box<Delete>),
    Merge(Box<Merge>),
    /// DECLARE CURSOR, OPEN, FETCH, CLOSE, DEALLOCATE and cursor variables' SET.
    Cursor(Box<cursor::CursorStatement>),

    // ---- databases -------------------------------------------------------------------
    CreateDatabase(CreateDatabase),
    DropDatabase {
        names: Vec<Ident>,
        if_exists: bool,
    },
    AlterDatabase {
        name: Ident,
        action: AlterDatabaseAction,
    },
    Use(Ident),

    // ---- server security -------------------------------------------------------------
    /// `CREATE LOGIN name WITH PASSWORD = '…' [, …]`; `external_source` is set for
    /// `CREATE LOGIN name FROM WINDOWS|CERTIFICATE|…` (not supported).
    CreateLogin {
        name: Ident,
        options: Vec<LoginOption>,
        external_source: Option<String>,
    },
    AlterLogin {
        name: Ident,
        action: AlterLoginAction,
    },
    DropLogin(Ident),
    /// `ALTER SERVER ROLE role ADD|DROP MEMBER login`
    AlterServerRole {
        role: Ident,
        member: Ident,
        add: bool,
    },

    // ---- database security -----------------------------------------------------------
    /// `CREATE USER name [FOR|FROM LOGIN login | WITHOUT LOGIN] [WITH option, …]`
    CreateUser {
        name: Ident,
        login: UserLogin,
        options: Vec<UserOption>,
    },
    /// `ALTER USER name WITH option, …`
    AlterUser {
        name: Ident,
        options: Vec<UserOption>,
    },
    DropUser {
        name: Ident,
        if_exists: bool,
    },
    /// `CREATE ROLE name [AUTHORIZATION owner]`
    CreateRole {
        name: Ident,
        owner: Option<Ident>,
    },
    /// `ALTER ROLE role ADD|DROP MEMBER principal` / `ALTER ROLE role WITH NAME = new`
    AlterRole {
        role: Ident,
        action: AlterRoleAction,
    },
    DropRole {
        name: Ident,
        if_exists: bool,
    },
    /// `CREATE APPLICATION ROLE name WITH PASSWORD = 'p' [, DEFAULT_SCHEMA = s]`
    CreateApplicationRole {
        name: Ident,
        options: Vec<UserOption>,
    },
    /// `ALTER APPLICATION ROLE name WITH NAME = n | PASSWORD = 'p' | DEFAULT_SCHEMA = s, …`
    AlterApplicationRole {
        name: Ident,
        options: Vec<UserOption>,
    },
    DropApplicationRole {
        name: Ident,
    },
    /// `CREATE SCHEMA name [AUTHORIZATION owner] [element …]`: the elements (CREATE
    /// TABLE, CREATE VIEW, GRANT, DENY, REVOKE) are created in the new schema.
    CreateSchema {
        name: Ident,
        owner: Option<Ident>,
        elements: Vec<Statement>,
    },
    DropSchema {
        name: Ident,
        if_exists: bool,
    },
    /// `ALTER AUTHORIZATION ON [class::]name TO principal | SCHEMA OWNER` (`owner` is
    /// `None` for SCHEMA OWNER).
    AlterAuthorization {
        on: Securable,
        owner: Option<Ident>,
    },
    /// `GRANT`, `DENY` or `REVOKE`.
    Permission(Box<PermissionStatement>),
    /// `EXECUTE AS LOGIN|USER = 'name' [WITH NO REVERT]` / `EXECUTE AS CALLER`
    ExecuteAs {
        target: ExecuteAsTarget,
        no_revert: bool,
    },
    /// `REVERT`
    Revert,
    /// `KILL session_id`
    Kill(i64),

    // ---- tables and indexes ----------------------------------------------------------
    CreateTable(Box<CreateTable>),
    DropTable {
        names: Vec<ObjectName>,
        if_exists: bool,
    },
    AlterTable {
        table: ObjectName,
        action: AlterTableAction,
    },
    TruncateTable(ObjectName),
    CreateIndex(CreateIndex),
    /// `DROP INDEX ix ON t` or `DROP INDEX t.ix` (then `table` is `t`).
    DropIndex {
        indexes: Vec<(Ident, ObjectName)>,
        if_exists: bool,
    },

    // ---- transactions ----------------------------------------------------------------
    /// `BEGIN TRAN[SACTION] [name | @var]`
    BeginTransaction {
        name: Option<Expr>,
    },
    /// `COMMIT [TRAN[SACTION] [name]] [WITH (DELAYED_DURABILITY = ON|OFF)]`, also `COMMIT WORK`.
    Commit {
        name: Option<Expr>,
        delayed_durability: Option<bool>,
    },
    /// `ROLLBACK [TRAN[SACTION] [name | savepoint]]`, also `ROLLBACK WORK`.
    Rollback {
        name: Option<Expr>,
    },
    /// `SAVE TRAN[SACTION] name`
    SaveTransaction {
        name: Expr,
    },

    // ---- session options ---------------------------------------------------------------
    /// `SET NOCOUNT ON`, `SET ANSI_NULLS, QUOTED_IDENTIFIER ON`, `SET TEXTSIZE 2147483647`,
    /// `SET DATEFORMAT dmy`, `SET LANGUAGE us_english`, `SET LOCK_TIMEOUT -1`,
    /// `SET IDENTITY_INSERT t ON`, `SET TRANSACTION ISOLATION LEVEL READ COMMITTED`
    /// (options = ["TRANSACTION ISOLATION LEVEL"], value = Word("READ COMMITTED")).
    /// Option names are upper-cased.
    SetOption {
        options: Vec<String>,
        value: SetValue,
    },

    // ---- variables and control flow (T-SQL programmability) ----------------------------
    /// `DECLARE @a int = 1, @b varchar(10)`, `DECLARE @t TABLE (…)`.
    Declare(Vec<Declaration>),
    /// `SET @v = expr`, `SET @v += expr` (op is the compound operator, if any).
    SetVariable {
        name: String,
        op: Option<BinaryOp>,
        value: Expr,
    },
    If {
        condition: Expr,
        then: Box<Statement>,
        otherwise: Option<Box<Statement>>,
    },
    While {
        condition: Expr,
        body: Box<Statement>,
    },
    /// `BEGIN … END`
    Block(Vec<Statement>),
    Break,
    Continue,
    Return(Option<Expr>),
    Goto(Ident),
    /// `label:`
    Label(Ident),
    /// `WAITFOR DELAY 'hh:mm:ss'` (`delay = true`) or `WAITFOR TIME '…'`.
    WaitFor {
        delay: bool,
        value: Expr,
    },
    Print(Expr),
    TryCatch {
        try_block: Vec<Statement>,
        catch_block: Vec<Statement>,
    },
    /// `THROW` (re-throw, only inside CATCH) or `THROW number, message, state`.
    Throw(Option<(Expr, Expr, Expr)>),
    /// `RAISERROR (msg, severity, state [, args…]) [WITH LOG, NOWAIT, SETERROR]`
    RaisError {
        message: Expr,
        severity: Expr,
        state: Expr,
        args: Vec<Expr>,
        options: Vec<String>,
    },

    // ---- modules -----------------------------------------------------------------------
    CreateProcedure(Box<CreateProcedure>),
    CreateFunction(Box<CreateFunction>),
    CreateView(Box<CreateView>),
    /// `CREATE SEQUENCE name [AS type] options…`
    CreateSequence {
        name: ObjectName,
        options: SequenceOptions,
    },
    /// `CREATE TYPE name AS TABLE (…)`: a table type, its columns, constraints and indexes
    /// as CREATE TABLE has them; `text` is the statement's own.
    CreateTableType {
        definition: Box<CreateTable>,
        text: String,
    },
    /// `CREATE SYNONYM name FOR object`; `text` is the statement's own.
    CreateSynonym {
        name: ObjectName,
        target: ObjectName,
        text: String,
    },
    /// `ALTER SEQUENCE name options…` (RESTART among them)
    AlterSequence {
        name: ObjectName,
        options: SequenceOptions,
    },
    /// `DROP SEQUENCE [IF EXISTS] a, b`
    DropSequence {
        names: Vec<ObjectName>,
        if_exists: bool,
    },
    /// `DROP PROC|PROCEDURE|FUNCTION|VIEW [IF EXISTS] a, b`
    CreateTrigger(Box<CreateTrigger>),
    /// `ENABLE | DISABLE TRIGGER {name, … | ALL} ON {table | DATABASE}`, and ALTER TABLE's
    /// `ENABLE | DISABLE TRIGGER {ALL | name, …} ON {table | DATABASE | ALL SERVER}`;
    /// `names` empty is ALL, `table` None is DATABASE (or ALL SERVER: `all_server`).
    EnableTrigger {
        enable: bool,
        names: Vec<ObjectName>,
        table: Option<ObjectName>,
        all_server: bool,
    },
    DropModule {
        kind: ModuleKind,
        names: Vec<ObjectName>,
        if_exists: bool,
    },
    /// `EXEC[UTE] [@rc =] proc args…`
    Execute(Box<Execute>),
    /// `EXEC[UTE] ('dynamic ' + 'sql')`
    ExecuteString(Vec<Expr>),

    // ---- administration ----------------------------------------------------------------
    /// `DBCC NAME [( args )] [WITH opt, …]`; name upper-cased.
    Dbcc {
        command: String,
        args: Vec<Expr>,
        options: Vec<String>,
    },
    /// `ALTER SERVER CONFIGURATION SET BUFFER POOL EXTENSION ON (FILENAME = 'f', SIZE = n
    /// [KB|MB|GB])` (`Some((file, bytes))`) or `… OFF` (`None`).
    BufferPoolExtension(Option<(String, u64)>),
    /// Resource Governor's pools, groups and configuration.
    ResourceGovernor(governor::GovernorStatement),
    /// `ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO` (`None`) or `CPU = n
    /// [TO m] [, …]` (the CPUs named, ranges inclusive).
    ProcessAffinity(Option<Vec<(u32, u32)>>),
    /// `RECONFIGURE [WITH OVERRIDE]`
    Reconfigure {
        with_override: bool,
    },
    /// `CHECKPOINT`
    Checkpoint,
    /// `BACKUP DATABASE | LOG name TO DISK = '…' [, …] [WITH …]`
    Backup(Box<BackupStatement>),
    /// `RESTORE DATABASE | LOG | HEADERONLY | FILELISTONLY | VERIFYONLY | LABELONLY …`
    Restore(Box<RestoreStatement>),
}

/// A database named by identifier or by a variable (`BACKUP DATABASE @db …`).
#[derive(Clone, Debug, PartialEq)]
pub enum DatabaseRef {
    Name(Ident),
    Variable(String),
}

/// One `WITH` option of BACKUP or RESTORE: `NAME`, `NAME = value`, or `MOVE 'a' TO 'b'`
/// (value = logical name, `to` = path). Names are upper-cased.
#[derive(Clone, Debug, PartialEq)]
pub struct BackupOption {
    pub name: String,
    pub value: Option<Expr>,
    pub to: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BackupStatement {
    pub log: bool,
    pub database: DatabaseRef,
    /// `DISK = expr` paths.
    pub devices: Vec<Expr>,
    pub options: Vec<BackupOption>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreKind {
    Database,
    Log,
    HeaderOnly,
    FileListOnly,
    VerifyOnly,
    LabelOnly,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RestoreStatement {
    pub kind: RestoreKind,
    pub database: Option<DatabaseRef>,
    pub devices: Vec<Expr>,
    pub options: Vec<BackupOption>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SetValue {
    On,
    Off,
    /// A number or an expression such as `@v` (`SET TEXTSIZE 2147483647`, `SET ROWCOUNT @n`).
    Expr(Expr),
    /// A bare word or words (`dmy`, `us_english`, `READ COMMITTED`), upper-cased.
    Word(String),
    /// `SET IDENTITY_INSERT t ON|OFF`
    Table {
        table: ObjectName,
        on: bool,
    },
}

// ---- queries -----------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub with: Vec<Cte>,
    pub body: SetExpr,
    pub order_by: Vec<OrderItem>,
    /// `OFFSET n ROWS`
    pub offset: Option<Expr>,
    /// `FETCH NEXT|FIRST n ROWS ONLY`
    pub fetch: Option<Expr>,
    /// `OPTION (…)`
    pub hints: QueryHints,
    /// `FOR JSON …` / `FOR XML …`: the rows as one document.
    pub for_clause: Option<ForClause>,
}

impl Query {
    /// `SELECT … INTO t`: the new table, which the INTO of the first SELECT of the body
    /// names (a UNION's rows all go into it).
    pub fn into_target(&self) -> Option<&ObjectName> {
        fn first(body: &SetExpr) -> Option<&ObjectName> {
            match body {
                SetExpr::Select(s) => s.into.as_ref(),
                SetExpr::SetOperation { left, .. } => first(left),
                SetExpr::Query(q) => first(&q.body),
                SetExpr::Values(_) => None,
            }
        }
        first(&self.body)
    }

    /// The query without its INTO (what fills the new table).
    pub fn without_into(&self) -> Query {
        fn strip(body: &mut SetExpr) {
            match body {
                SetExpr::Select(s) => s.into = None,
                SetExpr::SetOperation { left, .. } => strip(left),
                SetExpr::Query(q) => strip(&mut q.body),
                SetExpr::Values(_) => {}
            }
        }
        let mut q = self.clone();
        strip(&mut q.body);
        q
    }
}

/// `FOR JSON PATH | AUTO [, ROOT('name')] [, INCLUDE_NULL_VALUES] [, WITHOUT_ARRAY_WRAPPER]`
/// or `FOR XML RAW ['e'] | AUTO | PATH ['e'] [, ROOT ['name']] [, TYPE] [, ELEMENTS]`.
#[derive(Clone, Debug, PartialEq)]
pub enum ForClause {
    Json {
        /// AUTO (else PATH).
        auto: bool,
        root: Option<String>,
        include_null_values: bool,
        without_array_wrapper: bool,
    },
    Xml {
        mode: XmlMode,
        root: Option<String>,
        /// `TYPE`: the document is xml (what `.value(…)` reads).
        typed: bool,
        /// `ELEMENTS` (RAW, AUTO): columns as elements rather than attributes.
        elements: bool,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum XmlMode {
    /// RAW: each row an element (`row` unless named), columns as attributes.
    Raw(Option<String>),
    /// AUTO: each row an element named after its table.
    Auto,
    /// PATH: each row an element (`row` unless named; '' for none), columns as elements.
    Path(Option<String>),
}

/// The query hints of `OPTION (…)` that have an effect; the others are accepted and
/// ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryHints {
    /// `MAXRECURSION n`: the recursion limit of recursive CTEs (0 = none).
    pub max_recursion: Option<u16>,
    /// `LOOP JOIN`, `HASH JOIN`, `MERGE JOIN`: how every join of the statement is made.
    pub join: Option<JoinHint>,
}

/// How a join is made, as a query asks: `INNER LOOP JOIN`, `OPTION (HASH JOIN)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinHint {
    Loop,
    Hash,
    Merge,
    /// `REMOTE`: the right table is on a linked server; here every table is local.
    Remote,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cte {
    pub name: Ident,
    pub columns: Vec<Ident>,
    pub query: Box<Query>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SetExpr {
    Select(Box<Select>),
    /// `VALUES (…), (…)` as a table source (`FROM (VALUES …) AS v(a, b)`).
    Values(Vec<Vec<Expr>>),
    SetOperation {
        op: SetOperator,
        all: bool,
        left: Box<SetExpr>,
        right: Box<SetExpr>,
    },
    /// A parenthesised query used as an operand of a set operation.
    Query(Box<Query>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOperator {
    Union,
    Except,
    Intersect,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub distinct: bool,
    pub top: Option<Top>,
    pub items: Vec<SelectItem>,
    /// `SELECT … INTO new_table`
    pub into: Option<ObjectName>,
    pub from: Vec<TableRef>,
    pub selection: Option<Expr>,
    /// The distinct expressions GROUP BY names.
    pub group_by: Vec<Expr>,
    /// With ROLLUP, CUBE or GROUPING SETS (or WITH ROLLUP / CUBE): the grouping sets, each
    /// as positions in `group_by`; None for one plain GROUP BY.
    pub grouping_sets: Option<Vec<Vec<usize>>>,
    pub having: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Top {
    pub count: Expr,
    pub percent: bool,
    pub with_ties: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SelectItem {
    /// `*`
    Wildcard,
    /// `t.*`
    QualifiedWildcard(ObjectName),
    /// `expr [AS] alias`, `alias = expr`, `expr 'alias'`
    Expr { expr: Expr, alias: Option<Ident> },
    /// `@v = expr`, `@v += expr`
    Assign { variable: String, op: Option<BinaryOp>, value: Expr },
}

#[derive(Clone, Debug, PartialEq)]
pub struct OrderItem {
    pub expr: Expr,
    pub descending: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TableRef {
    /// A table, view, CTE, `#temp` or `@table_variable` (the variable's name, with `@`, as
    /// the single part), with optional alias and table hints (`WITH (NOLOCK)`, upper-cased).
    Named { name: ObjectName, alias: Option<Ident>, hints: Vec<String> },
    /// `(query) [AS] alias [(columns)]`
    Derived { query: Box<Query>, alias: Ident, columns: Vec<Ident> },
    /// `fn(args) [AS] alias` — table-valued functions.
    Function { name: ObjectName, args: Vec<Expr>, alias: Option<Ident> },
    Join {
        left: Box<TableRef>,
        right: Box<TableRef>,
        kind: JoinKind,
        on: Option<Expr>,
        /// `INNER LOOP JOIN`, `LEFT HASH JOIN` …
        hint: Option<JoinHint>,
    },
    /// `source PIVOT (aggregate(value) FOR column IN ([v1], …)) [AS] alias`
    Pivot { source: Box<TableRef>, aggregate: Box<Expr>, column: Ident, values: Vec<Ident>, alias: Ident },
    /// `source UNPIVOT (value FOR name IN ([c1], …)) [AS] alias`
    Unpivot { source: Box<TableRef>, value: Ident, name: Ident, columns: Vec<Ident>, alias: Ident },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    Cross,
    /// `CROSS APPLY`
    CrossApply,
    /// `OUTER APPLY`
    OuterApply,
}

// ---- DML ---------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
pub struct Insert {
    pub top: Option<Top>,
    pub table: ObjectName,
    pub columns: Vec<Ident>,
    pub output: Option<Output>,
    pub source: InsertSource,
}

/// `INSERT BULK t (col type [COLLATE c], …) [WITH (option, …)]`. The column types are
/// those of the table as the client saw them; the rows that follow carry their own
/// types, so only the names are kept.
#[derive(Clone, Debug, PartialEq)]
pub struct InsertBulk {
    pub table: ObjectName,
    pub columns: Vec<Ident>,
    /// `KEEPIDENTITY` / `KEEP_IDENTITY`: the identity values sent are inserted.
    pub keep_identity: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum InsertSource {
    /// `VALUES (…), (…)`; a `DEFAULT` keyword in the list is [`Expr::Default`].
    Values(Vec<Vec<Expr>>),
    Query(Box<Query>),
    DefaultValues,
    /// `INSERT … EXEC proc …`
    Execute(Box<StatementKind>),
}

/// `OUTPUT inserted.a, deleted.*, expr AS x [INTO @t | table [(cols)]]`. Column references
/// use the pseudo-tables `inserted` and `deleted` as qualifiers.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub items: Vec<SelectItem>,
    pub into: Option<(ObjectName, Vec<Ident>)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// `WITH ctes UPDATE …`
    pub with: Vec<Cte>,
    /// `OPTION (…)`
    pub hints: QueryHints,
    pub top: Option<Top>,
    /// The target: a table name or an alias defined in `from`.
    pub table: ObjectName,
    pub table_hints: Vec<String>,
    pub assignments: Vec<Assignment>,
    pub output: Option<Output>,
    pub from: Vec<TableRef>,
    pub selection: Option<Expr>,
    /// `WHERE CURRENT OF cursor` (then `selection` is None).
    pub current_of: Option<cursor::CurrentOf>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Assignment {
    /// `col = expr`, `t.col = expr`, `col += expr`
    Column {
        column: ObjectName,
        op: Option<BinaryOp>,
        value: Expr,
    },
    /// `@v = expr`, `@v = col = expr` (the second is `Both`)
    Variable {
        name: String,
        op: Option<BinaryOp>,
        value: Expr,
    },
    Both {
        variable: String,
        column: ObjectName,
        value: Expr,
    },
    /// `col.WRITE(value, offset, length)`: part of a `(max)` value replaced.
    Write {
        column: Ident,
        value: Expr,
        offset: Expr,
        length: Expr,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Delete {
    /// `WITH ctes DELETE …`
    pub with: Vec<Cte>,
    /// `OPTION (…)`
    pub hints: QueryHints,
    pub top: Option<Top>,
    pub table: ObjectName,
    /// `DELETE t WITH (hints)`
    pub table_hints: Vec<String>,
    pub output: Option<Output>,
    /// `DELETE t FROM t JOIN …` or `DELETE FROM t FROM t JOIN …`
    pub from: Vec<TableRef>,
    pub selection: Option<Expr>,
    /// `WHERE CURRENT OF cursor` (then `selection` is None).
    pub current_of: Option<cursor::CurrentOf>,
}

/// `[WITH ctes] MERGE [TOP (n)] [INTO] target [WITH (hints)] [[AS] alias] USING source ON
/// condition WHEN … [OUTPUT …] [OPTION (…)];`
#[derive(Clone, Debug, PartialEq)]
pub struct Merge {
    pub with: Vec<Cte>,
    pub hints: QueryHints,
    pub top: Option<Top>,
    pub target: ObjectName,
    pub target_alias: Option<Ident>,
    pub target_hints: Vec<String>,
    /// The USING table source (a table, derived table, function or join).
    pub source: TableRef,
    pub on: Expr,
    /// The WHEN clauses in the order written.
    pub clauses: Vec<MergeClause>,
    pub output: Option<Output>,
}

/// `WHEN [NOT] MATCHED [BY TARGET | BY SOURCE] [AND condition] THEN action`
#[derive(Clone, Debug, PartialEq)]
pub struct MergeClause {
    pub when: MergeWhen,
    pub condition: Option<Expr>,
    pub action: MergeAction,
}

/// Which rows of the join of target and source a WHEN clause acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeWhen {
    /// `WHEN MATCHED`: a target row with a source row.
    Matched,
    /// `WHEN NOT MATCHED [BY TARGET]`: a source row no target row matches.
    NotMatchedByTarget,
    /// `WHEN NOT MATCHED BY SOURCE`: a target row no source row matches.
    NotMatchedBySource,
}

impl MergeWhen {
    /// The clause as SQL Server's messages name it.
    pub fn clause_name(self) -> &'static str {
        match self {
            MergeWhen::Matched => "WHEN MATCHED",
            MergeWhen::NotMatchedByTarget => "WHEN NOT MATCHED",
            MergeWhen::NotMatchedBySource => "WHEN NOT MATCHED BY SOURCE",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum MergeAction {
    /// `UPDATE SET …`
    Update(Vec<Assignment>),
    Delete,
    /// `INSERT [(columns)] VALUES (…)`, or `INSERT DEFAULT VALUES` (values None).
    Insert {
        columns: Vec<Ident>,
        values: Option<Vec<Expr>>,
    },
}

impl MergeAction {
    /// The action as SQL Server's messages name it.
    pub fn name(&self) -> &'static str {
        match self {
            MergeAction::Update(_) => "UPDATE",
            MergeAction::Delete => "DELETE",
            MergeAction::Insert { .. } => "INSERT",
        }
    }
}

// ---- database security -------------------------------------------------------------------

/// Which login a database user maps to.
#[derive(Clone, Debug, PartialEq)]
pub enum UserLogin {
    /// No FOR/FROM LOGIN, WITHOUT LOGIN or PASSWORD: the login of the same name.
    SameName,
    /// `FOR LOGIN login` / `FROM LOGIN login`
    Login(Ident),
    /// `WITHOUT LOGIN`
    Without,
}

/// An option of `CREATE USER … WITH` / `ALTER USER … WITH`.
#[derive(Clone, Debug, PartialEq)]
pub enum UserOption {
    DefaultSchema(Ident),
    /// `PASSWORD = 'p' [OLD_PASSWORD = 'o']`: a contained database user's password.
    Password {
        value: String,
        old: Option<String>,
    },
    Name(Ident),
    Login(Ident),
    DefaultLanguage(Ident),
}

#[derive(Clone, Debug, PartialEq)]
pub enum AlterRoleAction {
    AddMember(Ident),
    DropMember(Ident),
    Rename(Ident),
}

/// What a permission statement or ALTER AUTHORIZATION is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecurableClass {
    /// `ON t` / `ON OBJECT::s.t`
    Object,
    Schema,
    Database,
    Login,
    User,
    Role,
    /// `APPLICATION ROLE::name`
    ApplicationRole,
}

/// `[class::]name` after ON.
#[derive(Clone, Debug, PartialEq)]
pub struct Securable {
    pub class: SecurableClass,
    pub name: ObjectName,
}

/// One permission of a GRANT/DENY/REVOKE: its name upper-cased with single spaces
/// (`SELECT`, `CREATE TABLE`, `VIEW SERVER STATE`, `ALL`), and the columns it is limited
/// to, if any.
#[derive(Clone, Debug, PartialEq)]
pub struct Permission {
    pub name: String,
    pub columns: Vec<Ident>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionAction {
    Grant { with_grant_option: bool },
    Deny { cascade: bool },
    Revoke { grant_option_for: bool, cascade: bool },
}

/// `GRANT|DENY|REVOKE permission, … [ON securable] TO|FROM principal, … [AS principal]`
#[derive(Clone, Debug, PartialEq)]
pub struct PermissionStatement {
    pub action: PermissionAction,
    pub permissions: Vec<Permission>,
    pub on: Option<Securable>,
    pub principals: Vec<Ident>,
    pub as_principal: Option<Ident>,
}

/// Whose security context `EXECUTE AS` switches to.
#[derive(Clone, Debug, PartialEq)]
pub enum ExecuteAsTarget {
    Login(String),
    User(String),
    Caller,
}

// ---- DDL ---------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
pub enum AlterLoginAction {
    Enable,
    Disable,
    Set(Vec<LoginOption>),
}

/// An option of `CREATE LOGIN … WITH` / `ALTER LOGIN … WITH`.
#[derive(Clone, Debug, PartialEq)]
pub enum LoginOption {
    /// `PASSWORD = 'p' [HASHED] [MUST_CHANGE] [UNLOCK] [OLD_PASSWORD = 'o']`
    Password {
        value: String,
        hashed: bool,
        must_change: bool,
        unlock: bool,
        old: Option<String>,
    },
    DefaultDatabase(Ident),
    DefaultLanguage(Ident),
    Name(Ident),
    CheckPolicy(bool),
    CheckExpiration(bool),
    Sid(Vec<u8>),
    Credential(Ident),
    NoCredential,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CreateDatabase {
    pub name: Ident,
    pub files: Vec<FileSpec>,
    pub log_files: Vec<FileSpec>,
    /// `COLLATE name`, if given.
    pub collation: Option<String>,
    /// `FOR ATTACH` / `FOR ATTACH_REBUILD_LOG`: the files exist and are registered.
    pub attach: Option<AttachMode>,
    /// `AS COPY OF [server.]database` (Azure SQL Database's copy), the source named.
    pub copy_of: Option<CopySource>,
}

/// The database `CREATE DATABASE … AS COPY OF` copies: `[server.]database`.
#[derive(Clone, Debug, PartialEq)]
pub struct CopySource {
    pub server: Option<Ident>,
    pub database: Ident,
}

/// How `CREATE DATABASE … FOR …` takes existing files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachMode {
    /// `FOR ATTACH`: the data and log files as they are.
    Attach,
    /// `FOR ATTACH_REBUILD_LOG`: the data file, with a new log.
    RebuildLog,
}

/// `(NAME = logical, FILENAME = 'path', SIZE = 10MB, MAXSIZE = UNLIMITED, FILEGROWTH = 10%)`;
/// option names upper-cased, values as written (`10MB`, `'path'` without quotes).
#[derive(Clone, Debug, PartialEq)]
pub struct FileSpec {
    pub options: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AlterDatabaseAction {
    /// `SET RECOVERY FULL`, `SET DELAYED_DURABILITY = FORCED`, `SET SINGLE_USER`,
    /// `SET READ_ONLY` …: option name and value, upper-cased; the value is empty when there is
    /// none. A trailing `WITH ROLLBACK IMMEDIATE` is dropped.
    Set(Vec<(String, String)>),
    /// `MODIFY NAME = new_name`
    Rename(Ident),
    /// `MODIFY FILE (NAME = logical, SIZE = 20MB, MAXSIZE = 1GB, FILEGROWTH = 10%)`
    ModifyFile(FileSpec),
    /// `COLLATE name`
    Collate(String),
}

/// A type as written: `varchar(10)`, `decimal(10, 2)`, `nvarchar(max)`, `int`,
/// `double precision` (name upper-cased and with inner spaces kept single), `dbo.MyType`.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeName {
    pub name: String,
    pub args: Vec<TypeArg>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeArg {
    Number(u32),
    Max,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CreateTable {
    pub name: ObjectName,
    pub columns: Vec<ColumnDef>,
    pub constraints: Vec<TableConstraint>,
    /// Table-level `INDEX ix (cols)` definitions inside the column list.
    pub indexes: Vec<CreateIndex>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDef {
    pub name: Ident,
    pub ty: TypeName,
    /// `NULL` → Some(true), `NOT NULL` → Some(false), unspecified → None.
    pub nullable: Option<bool>,
    pub identity: Option<(i64, i64)>,
    /// `[CONSTRAINT name] DEFAULT expr`
    pub default: Option<(Option<Ident>, Expr)>,
    /// Column constraints: PRIMARY KEY, UNIQUE, CHECK, REFERENCES — as table constraints
    /// whose column lists name this column.
    pub constraints: Vec<TableConstraint>,
    /// `AS expr` computed column.
    pub computed: Option<Expr>,
    /// `AS expr PERSISTED`
    pub persisted: bool,
    pub collation: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TableConstraint {
    pub name: Option<Ident>,
    pub kind: ConstraintKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ConstraintKind {
    /// `PRIMARY KEY [CLUSTERED|NONCLUSTERED] (a [ASC|DESC], …)`; `clustered` is None
    /// when not given.
    PrimaryKey {
        clustered: Option<bool>,
        columns: Vec<IndexColumn>,
    },
    Unique {
        clustered: Option<bool>,
        columns: Vec<IndexColumn>,
    },
    Check(Expr),
    /// `[FOREIGN KEY (a, b)] REFERENCES t (x, y) [ON DELETE …] [ON UPDATE …]`
    ForeignKey {
        columns: Vec<Ident>,
        ref_table: ObjectName,
        ref_columns: Vec<Ident>,
        on_delete: ReferentialAction,
        on_update: ReferentialAction,
    },
    /// `[CONSTRAINT name] DEFAULT expr FOR column` (ALTER TABLE … ADD form).
    Default {
        expr: Expr,
        column: Ident,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReferentialAction {
    NoAction,
    Cascade,
    SetNull,
    SetDefault,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IndexColumn {
    pub name: Ident,
    pub descending: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CreateIndex {
    pub name: Ident,
    pub table: ObjectName,
    pub unique: bool,
    /// None when neither CLUSTERED nor NONCLUSTERED is written.
    pub clustered: Option<bool>,
    pub columns: Vec<IndexColumn>,
    /// `INCLUDE (a, b)`
    pub include: Vec<Ident>,
    /// `WHERE …` (filtered index)
    pub filter: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AlterTableAction {
    /// `ADD col type …, CONSTRAINT … , …` (the COLUMN keyword is not T-SQL)
    Add { columns: Vec<ColumnDef>, constraints: Vec<TableConstraint> },
    /// `DROP COLUMN [IF EXISTS] a, b`
    DropColumns { names: Vec<Ident>, if_exists: bool },
    /// `DROP [CONSTRAINT] [IF EXISTS] name, …`
    DropConstraints { names: Vec<Ident>, if_exists: bool },
    /// `ALTER COLUMN col type [NULL|NOT NULL]`
    AlterColumn { name: Ident, ty: TypeName, nullable: Option<bool> },
    /// `[WITH CHECK|NOCHECK] CHECK|NOCHECK CONSTRAINT ALL|name`
    CheckConstraints { enable: bool, names: Vec<Ident> },
}

// ---- modules -----------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleKind {
    Procedure,
    Function,
    View,
    Trigger,
    Synonym,
    /// `DROP TYPE`: a table type.
    Type,
}

impl ModuleKind {
    /// The kind as DROP's messages name it.
    pub fn word(self) -> &'static str {
        match self {
            ModuleKind::Procedure => "procedure",
            ModuleKind::Function => "function",
            ModuleKind::View => "view",
            ModuleKind::Trigger => "trigger",
            ModuleKind::Synonym => "synonym",
            ModuleKind::Type => "type",
        }
    }
}

/// `CREATE [OR ALTER] | ALTER TRIGGER name ON table [WITH EXECUTE AS …] {FOR | AFTER |
/// INSTEAD OF} {INSERT, UPDATE, DELETE} [NOT FOR REPLICATION] AS body`, or a DDL trigger
/// `… ON {DATABASE | ALL SERVER} {FOR | AFTER} event_type_or_group, … AS body`.
#[derive(Clone, Debug, PartialEq)]
pub struct CreateTrigger {
    pub or_alter: bool,
    pub alter: bool,
    pub name: ObjectName,
    /// The table (or view) it is on; None for a DDL trigger (`ON DATABASE`, `ON ALL SERVER`).
    pub table: Option<ObjectName>,
    /// A DDL trigger `ON ALL SERVER` (not ON DATABASE).
    pub all_server: bool,
    pub instead_of: bool,
    pub events: TriggerEvents,
    /// A DDL trigger's event types and groups, upper-cased (`CREATE_TABLE`,
    /// `DDL_TABLE_EVENTS`).
    pub ddl_events: Vec<String>,
    pub execute_as: ModuleExecuteAs,
    pub body: Vec<Statement>,
    /// The statement's source text (sys.sql_modules).
    pub text: String,
}

/// The data changes a DML trigger fires on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TriggerEvents {
    pub insert: bool,
    pub update: bool,
    pub delete: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    /// With the `@`.
    pub name: String,
    pub ty: TypeName,
    pub default: Option<Expr>,
    pub output: bool,
    pub readonly: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CreateProcedure {
    /// `CREATE OR ALTER` → true; plain `ALTER PROCEDURE` sets `alter`.
    pub or_alter: bool,
    pub alter: bool,
    pub name: ObjectName,
    pub params: Vec<Parameter>,
    pub body: Vec<Statement>,
    /// `WITH EXECUTE AS …`: whose security context the body runs in.
    pub execute_as: ModuleExecuteAs,
    /// The statement's source text from `CREATE`/`ALTER` to its end (sys.sql_modules).
    pub text: String,
}

/// A module's `WITH EXECUTE AS`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ModuleExecuteAs {
    /// `CALLER` (or no clause): the caller's context.
    #[default]
    Caller,
    /// `SELF`: the user who created or last altered the module.
    SelfUser,
    /// `OWNER`: the module's owner.
    Owner,
    /// `'user_name'`
    User(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct CreateFunction {
    pub or_alter: bool,
    pub alter: bool,
    pub name: ObjectName,
    pub params: Vec<Parameter>,
    pub returns: FunctionReturns,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FunctionReturns {
    /// `RETURNS type [WITH …] AS BEGIN … RETURN expr END`; `schema_bound`: WITH
    /// SCHEMABINDING was given.
    Scalar { ty: TypeName, body: Vec<Statement>, execute_as: ModuleExecuteAs, schema_bound: bool },
    /// `RETURNS TABLE AS RETURN (query)`
    InlineTable(Box<Query>),
    /// `RETURNS @t TABLE (…) AS BEGIN … RETURN END`
    MultiStatement { variable: String, columns: Vec<ColumnDef>, body: Vec<Statement> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct CreateView {
    pub or_alter: bool,
    pub alter: bool,
    pub name: ObjectName,
    pub columns: Vec<Ident>,
    pub query: Box<Query>,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Execute {
    /// `EXEC @rc = proc`: the variable receiving the return status.
    pub return_status: Option<String>,
    /// The procedure: a name, or a variable holding the name (`EXEC @procname`).
    pub procedure: ObjectName,
    pub args: Vec<ExecArg>,
    /// `WITH RECOMPILE` and friends, upper-cased.
    pub options: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExecArg {
    /// `@name = value`: the parameter name with its `@`.
    pub name: Option<String>,
    /// `DEFAULT` is [`Expr::Default`].
    pub value: Expr,
    /// `OUTPUT` / `OUT` after the value.
    pub output: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Declaration {
    /// With the `@`.
    pub name: String,
    pub kind: DeclarationKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DeclarationKind {
    Scalar {
        ty: TypeName,
        init: Option<Expr>,
    },
    /// `DECLARE @t TABLE (…)`
    Table {
        columns: Vec<ColumnDef>,
        constraints: Vec<TableConstraint>,
    },
    /// `DECLARE @c CURSOR`: a cursor variable, with no cursor yet.
    Cursor,
}

// ---- expressions -------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// A whole number as written (`42`); its type (int, bigint or numeric) depends on size.
    Integer(String),
    /// A number with a point (`1.50`): numeric.
    Decimal(String),
    /// A number with an exponent (`1e3`, `2.5E-1`): float.
    Float(String),
    /// `$12.50`, `£3` (money literal, without the currency sign).
    Money(String),
    /// `'text'` (unicode = false) or `N'text'` (unicode = true), with `''` unescaped.
    String {
        value: String,
        unicode: bool,
    },
    /// `0x1F2E`
    Binary(Vec<u8>),
    Null,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Literal(Literal),
    /// `a`, `t.a`, `dbo.t.a`, `db.dbo.t.a`
    Column(ObjectName),
    /// `@name` (with the `@`)
    Variable(String),
    /// `@@ROWCOUNT` and friends, upper-cased, with the `@@`.
    GlobalVariable(String),
    /// `DEFAULT` in a VALUES list, an EXEC argument or a SET.
    Default,
    Unary {
        op: UnaryOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    Between {
        expr: Box<Expr>,
        negated: bool,
        low: Box<Expr>,
        high: Box<Expr>,
    },
    Like {
        expr: Box<Expr>,
        negated: bool,
        pattern: Box<Expr>,
        escape: Option<Box<Expr>>,
    },
    InList {
        expr: Box<Expr>,
        negated: bool,
        list: Vec<Expr>,
    },
    InSubquery {
        expr: Box<Expr>,
        negated: bool,
        query: Box<Query>,
    },
    Exists(Box<Query>),
    /// A scalar subquery `(SELECT …)`.
    Subquery(Box<Query>),
    /// `expr = ANY|SOME|ALL (subquery)`
    Quantified {
        op: BinaryOp,
        all: bool,
        left: Box<Expr>,
        query: Box<Query>,
    },
    Case {
        operand: Option<Box<Expr>>,
        branches: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    /// `CAST(expr AS type)`, `TRY_CAST(…)` (try = true)
    Cast {
        expr: Box<Expr>,
        ty: TypeName,
        try_: bool,
    },
    /// `CONVERT(type, expr [, style])`, `TRY_CONVERT(…)`
    Convert {
        ty: TypeName,
        expr: Box<Expr>,
        style: Option<Box<Expr>>,
        try_: bool,
    },
    /// A function call: built-in (`LEN(x)`, `COUNT(*)`, `COUNT(DISTINCT a)`, `GETDATE()`) or
    /// user-defined (`dbo.f(x)`). `COUNT(*)` has `star` set and no args.
    /// `DATEADD(day, …)`/`DATEDIFF`/`DATEPART`/`DATENAME`/`DATETRUNC`: the first argument
    /// (the date part) is an [`Expr::Column`] with the part's name as written.
    Function {
        name: ObjectName,
        args: Vec<Expr>,
        distinct: bool,
        star: bool,
        over: Option<Box<Window>>,
        /// `WITHIN GROUP (ORDER BY …)` (STRING_AGG).
        within_group: Vec<OrderItem>,
    },
    /// `expr COLLATE name`
    Collate {
        expr: Box<Expr>,
        collation: String,
    },
    /// `NEXT VALUE FOR [db.][schema.]sequence`
    NextValueFor(ObjectName),
    Nested(Box<Expr>),
}

/// The options of `CREATE SEQUENCE` and `ALTER SEQUENCE` as written; each is None when
/// not given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SequenceOptions {
    /// `AS type` (CREATE only).
    pub ty: Option<TypeName>,
    /// `START WITH n` (CREATE only).
    pub start: Option<i128>,
    /// `RESTART [WITH n]` (ALTER only): Some(None) restarts at the start value.
    pub restart: Option<Option<i128>>,
    pub increment: Option<i128>,
    /// `MINVALUE n`, or Some(None) for `NO MINVALUE`.
    pub min: Option<Option<i128>>,
    /// `MAXVALUE n`, or Some(None) for `NO MAXVALUE`.
    pub max: Option<Option<i128>>,
    /// `CYCLE` / `NO CYCLE`.
    pub cycle: Option<bool>,
    /// `CACHE [n]` / `NO CACHE`.
    pub cache: Option<SequenceCache>,
}

/// A sequence's `CACHE` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequenceCache {
    /// `NO CACHE`: every value is written before it is handed out.
    None,
    /// `CACHE` without a size: the server's default.
    Default,
    Size(i128),
}

impl Expr {
    /// Whether `f` holds for this expression or one of its parts, down to (not into) the
    /// queries of subqueries and the windows of OVER clauses.
    pub fn any(&self, f: &impl Fn(&Expr) -> bool) -> bool {
        if f(self) {
            return true;
        }
        match self {
            Expr::Unary { expr, .. }
            | Expr::IsNull { expr, .. }
            | Expr::Cast { expr, .. }
            | Expr::Collate { expr, .. }
            | Expr::Nested(expr)
            | Expr::InSubquery { expr, .. }
            | Expr::Quantified { left: expr, .. } => expr.any(f),
            Expr::Binary { left, right, .. } => left.any(f) || right.any(f),
            Expr::Between { expr, low, high, .. } => expr.any(f) || low.any(f) || high.any(f),
            Expr::Like { expr, pattern, escape, .. } => {
                expr.any(f) || pattern.any(f) || escape.as_deref().is_some_and(|e| e.any(f))
            }
            Expr::InList { expr, list, .. } => expr.any(f) || list.iter().any(|e| e.any(f)),
            Expr::Case { operand, branches, otherwise } => {
                operand.as_deref().is_some_and(|e| e.any(f))
                    || branches.iter().any(|(w, t)| w.any(f) || t.any(f))
                    || otherwise.as_deref().is_some_and(|e| e.any(f))
            }
            Expr::Convert { expr, style, .. } => expr.any(f) || style.as_deref().is_some_and(|e| e.any(f)),
            Expr::Function { args, .. } => args.iter().any(|e| e.any(f)),
            // Leaves, and queries (not entered).
            _ => false,
        }
    }
}

/// `OVER ([PARTITION BY …] [ORDER BY …] [ROWS | RANGE …])`
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub partition_by: Vec<Expr>,
    pub order_by: Vec<OrderItem>,
    pub frame: Option<WindowFrame>,
}

/// `ROWS | RANGE BETWEEN start AND end` (`ROWS start` ends at the current row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowFrame {
    /// ROWS (physical offsets) rather than RANGE (peers of the ORDER BY).
    pub rows: bool,
    pub start: FrameBound,
    pub end: FrameBound,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(u64),
    CurrentRow,
    Following(u64),
    UnboundedFollowing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Plus,
    Minus,
    /// `NOT`
    Not,
    /// `~`
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
    BitAnd,
    BitOr,
    BitXor,
    Eq,
    /// `<>` and `!=`
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    /// `!<`
    NotLt,
    /// `!>`
    NotGt,
    And,
    Or,
}

impl BinaryOp {
    /// The operator as SQL text (AND and OR with their spaces).
    pub fn text(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::NotLt => "!<",
            BinaryOp::NotGt => "!>",
            BinaryOp::And => " AND ",
            BinaryOp::Or => " OR ",
        }
    }
}
