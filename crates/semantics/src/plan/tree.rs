//! The bound trees: expressions (`Expr`) and relational operators (`Plan`) as the binder builds them.

use std::sync::Arc;

use crate::catalog::{DbRef, Table};
use crate::output::OutputColumn;
use crate::types::{SqlType, Value};
use tessera_syntax::ast::{BinaryOp, JoinKind, SetOperator, UnaryOp};

/// Functions answered from the session and the server rather than from arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionFn {
    /// In a trigger: `UPDATE(col)` (the argument is the column's position) and
    /// `COLUMNS_UPDATED()`, from the statement that fired it; `TRIGGER_NESTLEVEL([id])`.
    ColumnUpdated,
    ColumnsUpdated,
    TriggerNestLevel,
    /// In a DDL trigger: `EVENTDATA()`, the event as XML.
    EventData,
    TypeName,
    TypeId,
    RowCount,
    Identity,
    ScopeIdentity,
    Error,
    TranCount,
    Spid,
    NestLevel,
    Version,
    /// @@MICROSOFTVERSION: the product version as one integer (major, minor, build).
    MicrosoftVersion,
    ServerName,
    ServiceName,
    DbName,
    DbId,
    /// DB_NAME(id) / DB_ID(name)
    DbNameOf,
    DbIdOf,
    ObjectId,
    ObjectName,
    SchemaName,
    ColLength,
    IdentCurrent,
    ServerProperty,
    DatabasePropertyEx,
    Language,
    MaxPrecision,
    TextSize,
    LockTimeout,
    Options,
    FetchStatus,
    CursorRows,
    CursorStatus,
    DateFirst,
    ProcId,
    XactState,
    ErrorNumber,
    ErrorMessage,
    ErrorSeverity,
    ErrorState,
    ErrorLine,
    ErrorProcedure,
    SuserName,
    SuserId,
    SuserSid,
    UserName,
    HostName,
    AppName,
    IsSrvRoleMember,
    LoginProperty,
    HasDbAccess,
    ProgramName,
    /// ORIGINAL_LOGIN(): the login before any EXECUTE AS.
    OriginalLogin,
    /// USER_ID(['name']), DATABASE_PRINCIPAL_ID(['name']).
    UserId,
    /// SCHEMA_ID(['name']).
    SchemaId,
    /// IS_MEMBER('role').
    IsMember,
    /// IS_ROLEMEMBER('role' [, 'principal']).
    IsRoleMember,
    /// HAS_PERMS_BY_NAME(securable, class, permission).
    HasPermsByName,
    /// OBJECT_SCHEMA_NAME(id [, database id]).
    ObjectSchemaName,
    /// COL_NAME(table id, column id).
    ColName,
    /// OBJECT_DEFINITION(id).
    ObjectDefinition,
    /// OBJECTPROPERTY(id, property) and OBJECTPROPERTYEX (its answers as sql_variant).
    ObjectProperty,
    ObjectPropertyEx,
    /// COLUMNPROPERTY(id, column, property).
    ColumnProperty,
    /// INDEXPROPERTY(object id, index name, property).
    IndexProperty,
    /// INDEXKEY_PROPERTY(object id, index id, key position, property).
    IndexKeyProperty,
    /// TYPEPROPERTY(type, property).
    TypeProperty,
}

#[derive(Clone, Debug)]
pub enum Expr {
    Const(Value),
    /// A column of the current row.
    Column(usize),
    /// A column of an enclosing query's row: `depth` 0 is the nearest.
    OuterRef {
        depth: usize,
        index: usize,
    },
    /// A variable slot of the current frame.
    Var(usize),
    Cast {
        expr: Box<Expr>,
        from: SqlType,
        to: SqlType,
        style: Option<i32>,
        try_: bool,
        /// A conversion the binder added (SQL Server's CONVERT_IMPLICIT), not a CAST or
        /// CONVERT the query wrote.
        implicit: bool,
    },
    Unary {
        op: UnaryOp,
        expr: Box<Expr>,
        ty: SqlType,
    },
    /// Arithmetic, bitwise and concatenation; both operands already of the operand type.
    Arith {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
        ty: SqlType,
    },
    /// Comparison of two operands of one type.
    Compare {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        escape: Option<Box<Expr>>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Case {
        branches: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    /// COALESCE / ISNULL: the first non-NULL argument, evaluated lazily.
    Coalesce(Vec<Expr>),
    Func {
        name: String,
        args: Vec<Expr>,
        arg_types: Vec<SqlType>,
        ty: SqlType,
    },
    Session {
        func: SessionFn,
        args: Vec<Expr>,
    },
    Subquery(Box<Subquery>),
    /// A scalar user-defined function.
    UserFunction {
        call: Arc<UserCall>,
        args: Vec<Expr>,
    },
    /// `NEXT VALUE FOR`: the sequence's next value, a new one each time it is evaluated
    /// (the definition as bound: `db` says which database's sequence of that name it is).
    NextValue {
        db: DbRef,
        sequence: Arc<crate::catalog::Sequence>,
    },
}

/// What a scalar user-defined function call needs at run time.
#[derive(Debug)]
pub struct UserCall {
    pub db: DbRef,
    /// The function's schema (whose owner its statements chain from) and name.
    pub schema: String,
    pub name: String,
    /// The CREATE FUNCTION text (its parsed form and plans are cached under it).
    pub text: Arc<str>,
    pub arg_types: Vec<SqlType>,
    pub ty: SqlType,
}

/// A call of a multi-statement table-valued function, as bound.
#[derive(Clone, Debug)]
pub struct TableCall {
    pub db: DbRef,
    /// The function's schema (whose owner its statements chain from) and name.
    pub schema: String,
    pub name: String,
    /// The CREATE FUNCTION text (its parsed form and plans are cached under it).
    pub text: Arc<str>,
    pub arg_types: Vec<SqlType>,
    /// The RETURNS table's columns.
    pub columns: Vec<crate::output::OutputColumn>,
}

#[derive(Clone, Debug)]
pub struct Subquery {
    pub plan: Arc<Plan>,
    pub kind: SubqueryKind,
    /// False when the subquery references no enclosing row: its result is computed once
    /// per statement.
    pub correlated: bool,
}

#[derive(Clone, Debug)]
pub enum SubqueryKind {
    /// The single value of the single row (NULL when empty; error 512 if several rows).
    Scalar,
    Exists {
        negated: bool,
    },
    /// `expr [NOT] IN (subquery)`; the subquery's column already has the comparison type.
    In {
        expr: Expr,
        negated: bool,
    },
    /// `expr op ANY|ALL (subquery)`
    Quantified {
        expr: Expr,
        op: BinaryOp,
        all: bool,
    },
}

/// A bound on the key column after a scan's equality prefix: value and inclusiveness.
#[derive(Clone, Debug)]
pub struct RangeBound {
    pub value: Expr,
    pub inclusive: bool,
}

#[derive(Clone, Debug)]
pub struct ScanNode {
    pub db: DbRef,
    /// The definition the plan was bound against; the table read is the one of that
    /// name in the database the plan runs in (`ExecCtx::table`).
    pub table: Arc<Table>,
    /// The alias the query gave the table (`FROM t AS a`), for plans shown to clients.
    pub alias: Option<String>,
    /// Position in `table.indexes`.
    pub index: usize,
    /// Values of the leading key columns (each computed once per scan).
    pub prefix: Vec<Expr>,
    /// Bounds on the next key column in storage order (a descending column's bounds are
    /// already swapped).
    pub lower: Option<RangeBound>,
    pub upper: Option<RangeBound>,
    pub reverse: bool,
    /// Append the row's storage key as a trailing `Value::Binary` column (UPDATE/DELETE).
    pub with_key: bool,
    /// Only the first row is wanted (a unique equality seek).
    pub single: bool,
    /// The table reference's lock hints (with `with_key`, the UPDATE/DELETE target).
    pub hints: crate::locking::LockHints,
    /// A scan of the whole table under comparisons no index could seek on: the index the
    /// optimizer wanted (sys.dm_db_missing_index_details).
    pub wanted: Option<Arc<WantedIndex>>,
}

/// The index a scan of a whole table wanted (SQL Server's missing-index suggestion): its
/// key columns, those compared with `=` then those compared otherwise, and the columns it
/// would include to cover the query (positions in the table's columns, ascending), with
/// the percentage of the scan's cost it would save. tessera keeps no statistics: the
/// saving is `100 × (1 − selectivity)`, the selectivity the product of SQL Server's fixed
/// guesses for a comparison without statistics (`=` 10%, `<>` 90%, the others 30%).
#[derive(Debug)]
pub struct WantedIndex {
    pub equality: Vec<usize>,
    pub inequality: Vec<usize>,
    pub included: Vec<usize>,
    pub impact: f64,
}

#[derive(Clone, Debug)]
pub struct SortKey {
    pub expr: Expr,
    pub descending: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    Count,
    CountBig,
    Sum,
    Avg,
    Min,
    Max,
    StringAgg,
}

impl AggFunc {
    /// The function's name, upper case.
    pub fn name(self) -> &'static str {
        match self {
            AggFunc::Count => "COUNT",
            AggFunc::CountBig => "COUNT_BIG",
            AggFunc::Sum => "SUM",
            AggFunc::Avg => "AVG",
            AggFunc::Min => "MIN",
            AggFunc::Max => "MAX",
            AggFunc::StringAgg => "STRING_AGG",
        }
    }
}

#[derive(Clone, Debug)]
pub struct AggCall {
    pub func: AggFunc,
    /// None for COUNT(*).
    pub arg: Option<Expr>,
    pub arg_type: SqlType,
    pub distinct: bool,
    pub ty: SqlType,
    /// STRING_AGG's separator and `WITHIN GROUP (ORDER BY …)`.
    pub string_agg: Option<Box<StringAgg>>,
}

/// What STRING_AGG needs beyond its value: the separator (a constant or variable) and the
/// order the values are joined in (none: the order they come in).
#[derive(Clone, Debug)]
pub struct StringAgg {
    pub separator: Expr,
    pub order: Vec<SortKey>,
}

/// A column of a system view.
#[derive(Clone, Copy, Debug)]
pub struct Col {
    pub name: &'static str,
    pub ty: SqlType,
    pub nullable: bool,
}

/// A system view as a plan names it (`Plan::System`): where the execution layer, which
/// defines every view and makes its rows, lists it, and its name and columns.
#[derive(Clone, Copy)]
pub struct View {
    pub id: usize,
    /// `sys` or `information_schema` (lower case).
    pub schema: &'static str,
    /// Lower case.
    pub name: &'static str,
    pub columns: &'static [Col],
}

impl View {
    pub fn columns(self) -> Vec<OutputColumn> {
        self.columns.iter().map(|c| OutputColumn { name: c.name.to_string(), ty: c.ty, nullable: c.nullable }).collect()
    }
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.schema, self.name)
    }
}

#[derive(Clone, Debug)]
pub enum Plan {
    /// Rows computed from expressions (`SELECT` without `FROM`, `VALUES`).
    Values(Vec<Vec<Expr>>),
    Scan(Box<ScanNode>),
    /// A system view, computed when read.
    System {
        view: View,
        db: DbRef,
    },
    /// A system table-valued function (`fn_my_permissions(…)`), computed when read from
    /// its arguments (constants and variables).
    SystemFunction {
        function: View,
        db: DbRef,
        args: Vec<Expr>,
    },
    /// A multi-statement table-valued function: its body runs with the arguments' values
    /// (which may read an enclosing row, under APPLY) each time the node opens, and the
    /// rows it put in its RETURNS table are the node's.
    TableFunctionCall {
        call: Arc<TableCall>,
        args: Vec<Expr>,
    },
    Filter {
        input: Box<Plan>,
        predicate: Expr,
    },
    Project {
        input: Box<Plan>,
        exprs: Vec<Expr>,
    },
    /// Nested loops over materialised inputs; `on` sees left ++ right.
    NestedLoop {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        on: Option<Expr>,
        left_width: usize,
        right_width: usize,
    },
    /// Equi-join: builds a hash table on the right input.
    HashJoin {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        residual: Option<Expr>,
        left_width: usize,
        right_width: usize,
    },
    /// Runs `right` once per left row with that row as its correlation row: index nested
    /// loops (inner and left kinds), and CROSS / OUTER APPLY, whose right side reads the
    /// left row as an enclosing query's (`Expr::OuterRef` depth 0).
    Apply {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        on: Option<Expr>,
        right_width: usize,
    },
    /// GROUPING SETS (ROLLUP, CUBE): the aggregate over each set of `group_by` positions in
    /// turn. Output: group values (NULL for those not in the row's set), aggregate
    /// values, then the row's grouping bits (bit n-1-i set when `group_by[i]` is not in
    /// its set: GROUPING reads them).
    GroupingSets {
        input: Box<Plan>,
        group_by: Vec<Expr>,
        sets: Vec<Vec<usize>>,
        aggregates: Vec<AggCall>,
    },
    /// Output: group values, then aggregate values.
    Aggregate {
        input: Box<Plan>,
        group_by: Vec<Expr>,
        aggregates: Vec<AggCall>,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<SortKey>,
    },
    /// `ties`: the ORDER BY expressions when WITH TIES is given.
    Top {
        input: Box<Plan>,
        count: Expr,
        percent: bool,
        ties: Vec<Expr>,
    },
    Offset {
        input: Box<Plan>,
        offset: Expr,
        fetch: Option<Expr>,
    },
    Distinct {
        input: Box<Plan>,
    },
    SetOp {
        op: SetOperator,
        all: bool,
        left: Box<Plan>,
        right: Box<Plan>,
    },
    /// A recursive CTE: `anchor` once, then `recursive` over the previous round's rows
    /// (read through `WorkTable { id }`) until a round is empty; more than
    /// `max_recursion` non-empty rounds (0 = no limit) is error 530.
    RecursiveCte {
        id: usize,
        anchor: Box<Plan>,
        recursive: Box<Plan>,
        max_recursion: u16,
    },
    /// The rows of the current round of the recursive CTE `id`.
    WorkTable {
        id: usize,
    },
    /// In a trigger's body: the `deleted` (or `inserted`) rows of the statement that fired
    /// it, its table's columns.
    Transition {
        deleted: bool,
    },
    /// `FOR JSON` / `FOR XML`: the input's rows as one document, one row of one column
    /// (no row when there are none).
    Document {
        input: Box<Plan>,
        format: Box<DocumentFormat>,
    },
    /// Window functions over one `OVER (PARTITION BY … ORDER BY …)`: the input's rows in
    /// (partition, order) order, each with one more column per call.
    Window {
        input: Box<Plan>,
        partition: Vec<Expr>,
        order: Vec<SortKey>,
        calls: Vec<WindowCall>,
        /// The input comes in (partition, order) order already (an index read in key
        /// order, a sort): it is read a partition at a time, holding one partition, not
        /// all of it.
        presorted: bool,
    },
}

/// How FOR JSON or FOR XML writes a query's rows: the clause, and the input's columns —
/// their names (the JSON keys, XML elements or attributes; empty for none), their types,
/// and whether each is a document already (a nested FOR JSON / FOR XML … TYPE, a
/// JSON_QUERY), written as it is rather than as a value.
#[derive(Clone, Debug)]
pub struct DocumentFormat {
    pub clause: tessera_syntax::ast::ForClause,
    pub names: Vec<String>,
    pub types: Vec<SqlType>,
    pub documents: Vec<bool>,
    /// FOR XML AUTO: the element name (the first table's alias or name).
    pub element: String,
}

impl DocumentFormat {
    /// The result column's name, as SQL Server names it.
    pub fn column_name(&self) -> &'static str {
        match self.clause {
            tessera_syntax::ast::ForClause::Json { .. } => "JSON_F52E2B61-18A1-11d1-B105-00805F49916B",
            tessera_syntax::ast::ForClause::Xml { .. } => "XML_F52E2B61-18A1-11d1-B105-00805F49916B",
        }
    }
}

/// A window function call: what it computes, over which rows of its partition.
#[derive(Clone, Debug)]
pub struct WindowCall {
    pub func: WindowFunc,
    /// Its arguments over the input row (LAG's and LEAD's offset and default, NTILE's
    /// count, an aggregate's argument).
    pub args: Vec<Expr>,
    pub frame: tessera_syntax::ast::WindowFrame,
    /// Its result's type.
    pub ty: SqlType,
}

#[derive(Clone, Debug)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    Ntile,
    PercentRank,
    CumeDist,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    /// An aggregate over the frame (its argument is `args[0]`, none for COUNT(*)).
    Aggregate(AggCall),
    /// `NEXT VALUE FOR s OVER (ORDER BY …)`: the sequence's next values, handed out to
    /// the rows in the window's order.
    NextValue {
        db: DbRef,
        sequence: Arc<crate::catalog::Sequence>,
    },
}

impl WindowFunc {
    /// The function's name as T-SQL spells it (lower case, as SHOWPLAN shows it).
    pub fn name(&self) -> &'static str {
        match self {
            WindowFunc::RowNumber => "row_number",
            WindowFunc::NextValue { .. } => "next value for",
            WindowFunc::Rank => "rank",
            WindowFunc::DenseRank => "dense_rank",
            WindowFunc::Ntile => "ntile",
            WindowFunc::PercentRank => "percent_rank",
            WindowFunc::CumeDist => "cume_dist",
            WindowFunc::Lag => "lag",
            WindowFunc::Lead => "lead",
            WindowFunc::FirstValue => "first_value",
            WindowFunc::LastValue => "last_value",
            WindowFunc::Aggregate(call) => match call.func {
                AggFunc::Count => "count",
                AggFunc::CountBig => "count_big",
                AggFunc::Sum => "sum",
                AggFunc::Avg => "avg",
                AggFunc::Min => "min",
                AggFunc::Max => "max",
                AggFunc::StringAgg => "string_agg",
            },
        }
    }
}

impl Plan {
    /// Whether this plan's rows already come in the order of `keys` (ascending or
    /// descending as each key says): a scan of an index whose key columns, after those
    /// its seek pins to one value, lead with the keys' columns in the keys' directions
    /// (all reversed for a backward scan), under at most a filter and a projection of
    /// columns. A non-unique nonclustered index's entries end with the clustered key, so
    /// its order goes on with the clustered key's columns. A sort over such a plan has
    /// nothing to do.
    pub fn delivers_order(&self, keys: &[SortKey]) -> bool {
        let (inner, project) = match self {
            Plan::Project { input, exprs } => (&**input, Some(&exprs[..])),
            other => (other, None),
        };
        let Some((node, _)) = inner.filtered_scan() else { return false };
        let row_column = |e: &Expr| match (e, project) {
            (Expr::Column(c), None) => Some(*c),
            (Expr::Column(c), Some(exprs)) => match exprs.get(*c) {
                Some(Expr::Column(r)) => Some(*r),
                _ => None,
            },
            _ => None,
        };
        let columns = node.table.key_order(node.index);
        let pinned = node.prefix.len().min(columns.len());
        (0..=pinned).any(|skip| {
            let rest = &columns[skip..];
            keys.len() <= rest.len()
                && keys
                    .iter()
                    .zip(rest)
                    .all(|(k, &(col, desc))| row_column(&k.expr) == Some(col) && k.descending == (desc != node.reverse))
        })
    }

    /// Reads the scan under this plan backward when that, and not reading it forward,
    /// delivers the order of `keys` (`ORDER BY id DESC` over an ascending key), so that a
    /// sort over the plan has nothing to do and a TOP over it stops after its rows.
    pub fn scan_backward_for(&mut self, keys: &[SortKey]) {
        if keys.is_empty() || self.delivers_order(keys) {
            return;
        }
        let Some(node) = self.ordered_scan_mut() else { return };
        node.reverse = !node.reverse;
        if !self.delivers_order(keys) {
            let node = self.ordered_scan_mut().expect("found above");
            node.reverse = !node.reverse;
        }
    }

    /// Under an aggregate of one MIN or MAX of a NOT NULL column and no GROUP BY, a scan
    /// whose index order leads with that column (after the columns its seek pins) reads
    /// one row, the first in the direction that gives the answer: `MAX(id)` reads the key's
    /// last row, not the table. Its plan is SQL Server's: a TOP 1 under the aggregate.
    pub fn read_one_for_min_max(&mut self) {
        let Plan::Aggregate { input, group_by, aggregates } = self else { return };
        let [AggCall { func: func @ (AggFunc::Min | AggFunc::Max), arg: Some(Expr::Column(c)), .. }] = &aggregates[..]
        else {
            return;
        };
        if !group_by.is_empty() {
            return;
        }
        let (c, func) = (*c, *func);
        // The argument names a column of the scan's row: no projection in between.
        let Some(node) = input.filtered_scan_mut() else { return };
        let order = node.table.key_order(node.index);
        let Some(&(lead, descending)) = order.get(node.prefix.len()) else { return };
        if lead != c || node.with_key || node.table.columns.get(c).is_none_or(|col| col.nullable) {
            return;
        }
        // MIN wants the column ascending, MAX descending.
        node.reverse = descending != (func == AggFunc::Max);
        let scan = std::mem::replace(&mut **input, Plan::Values(Vec::new()));
        **input =
            Plan::Top { input: Box::new(scan), count: Expr::Const(Value::Int(1)), percent: false, ties: Vec::new() };
    }

    /// The scan whose order [`Plan::delivers_order`] looks at.
    fn ordered_scan_mut(&mut self) -> Option<&mut ScanNode> {
        match self {
            Plan::Project { input, .. } => input.filtered_scan_mut(),
            other => other.filtered_scan_mut(),
        }
    }

    /// This plan as a scan under at most a filter: the scan, and the filter's predicate.
    pub fn filtered_scan(&self) -> Option<(&ScanNode, Option<&Expr>)> {
        match self {
            Plan::Filter { input, predicate } => match &**input {
                Plan::Scan(node) => Some((node, Some(predicate))),
                _ => None,
            },
            Plan::Scan(node) => Some((node, None)),
            _ => None,
        }
    }

    fn filtered_scan_mut(&mut self) -> Option<&mut ScanNode> {
        match self {
            Plan::Filter { input, .. } => match &mut **input {
                Plan::Scan(node) => Some(node),
                _ => None,
            },
            Plan::Scan(node) => Some(node),
            _ => None,
        }
    }

    /// The result columns (1-based) a query's rows are ordered by, for TDS's ORDER token:
    /// the leading ORDER BY keys that are columns of the result, in key order. Empty when
    /// the query is not ordered.
    pub fn order_columns(&self, width: usize) -> Vec<u16> {
        if !self.sorted_below_selection() {
            return Vec::new();
        }
        // `map[i]`: the result column that column i of the current plan's output becomes.
        let mut map: Vec<Option<usize>> = (0..width).map(Some).collect();
        let mut plan = self;
        loop {
            match plan {
                Plan::Top { input, .. } | Plan::Offset { input, .. } => plan = input,
                Plan::Project { input, exprs } => {
                    let mut inner = Vec::new();
                    for (out, e) in exprs.iter().enumerate() {
                        if let Expr::Column(c) = e {
                            if inner.len() <= *c {
                                inner.resize(c + 1, None);
                            }
                            inner[*c] = inner[*c].or(map.get(out).copied().flatten());
                        }
                    }
                    // Only a pure column selection can sit above the sort.
                    if !exprs.iter().all(|e| matches!(e, Expr::Column(_))) {
                        return Vec::new();
                    }
                    map = inner;
                    plan = input;
                }
                Plan::Sort { keys, .. } => {
                    return keys
                        .iter()
                        .map_while(|k| match k.expr {
                            Expr::Column(c) => map.get(c).copied().flatten().map(|o| (o + 1) as u16),
                            _ => None,
                        })
                        .collect();
                }
                _ => return Vec::new(),
            }
        }
    }

    /// Whether a sort sits under only TOP, OFFSET and projections (without allocating:
    /// most queries have none, and every query asks).
    /// The columns the plan's rows come ordered by, each with whether it is descending
    /// (an index read in key order, a sort by columns, and what passes rows through in
    /// order); empty when the order is not known.
    pub fn output_order(&self) -> Vec<(usize, bool)> {
        match self {
            Plan::Scan(scan) => {
                let index = &scan.table.indexes[scan.index];
                if index.is_heap() {
                    return Vec::new();
                }
                index.columns.iter().map(|&(c, descending)| (c, descending != scan.reverse)).collect()
            }
            Plan::Filter { input, .. } => input.output_order(),
            Plan::Window { input, presorted: true, .. } => input.output_order(),
            Plan::Sort { keys, .. } => keys
                .iter()
                .map_while(|k| match k.expr {
                    Expr::Column(c) => Some((c, k.descending)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    fn sorted_below_selection(&self) -> bool {
        let mut plan = self;
        loop {
            match plan {
                Plan::Top { input, .. } | Plan::Offset { input, .. } | Plan::Project { input, .. } => plan = input,
                Plan::Sort { .. } => return true,
                _ => return false,
            }
        }
    }
}

impl Plan {
    /// Calls `f` with every scan of the plan: its operators' and those of the subqueries
    /// in its expressions (each once, however often it would run).
    pub fn each_scan(&self, f: &mut dyn FnMut(&ScanNode)) {
        let each = |exprs: &[Expr], f: &mut dyn FnMut(&ScanNode)| exprs.iter().for_each(|e| e.each_scan(f));
        let keys = |keys: &[SortKey], f: &mut dyn FnMut(&ScanNode)| keys.iter().for_each(|k| k.expr.each_scan(f));
        match self {
            Plan::Values(rows) => rows.iter().for_each(|r| each(r, f)),
            Plan::Scan(node) => {
                f(node);
                each(&node.prefix, f);
                node.lower.iter().chain(&node.upper).for_each(|b| b.value.each_scan(f));
            }
            Plan::System { .. } | Plan::WorkTable { .. } | Plan::Transition { .. } => {}
            Plan::SystemFunction { args, .. } | Plan::TableFunctionCall { args, .. } => each(args, f),
            Plan::Filter { input, predicate } => {
                input.each_scan(f);
                predicate.each_scan(f);
            }
            Plan::Project { input, exprs } => {
                input.each_scan(f);
                each(exprs, f);
            }
            Plan::NestedLoop { left, right, on, .. } | Plan::Apply { left, right, on, .. } => {
                left.each_scan(f);
                right.each_scan(f);
                on.iter().for_each(|e| e.each_scan(f));
            }
            Plan::HashJoin { left, right, left_keys, right_keys, residual, .. } => {
                left.each_scan(f);
                right.each_scan(f);
                each(left_keys, f);
                each(right_keys, f);
                residual.iter().for_each(|e| e.each_scan(f));
            }
            Plan::GroupingSets { input, group_by, aggregates, .. }
            | Plan::Aggregate { input, group_by, aggregates } => {
                input.each_scan(f);
                each(group_by, f);
                aggregates.iter().for_each(|a| a.each_scan(f));
            }
            Plan::Sort { input, keys: k } => {
                input.each_scan(f);
                keys(k, f);
            }
            Plan::Top { input, count, ties, .. } => {
                input.each_scan(f);
                count.each_scan(f);
                each(ties, f);
            }
            Plan::Offset { input, offset, fetch } => {
                input.each_scan(f);
                offset.each_scan(f);
                fetch.iter().for_each(|e| e.each_scan(f));
            }
            Plan::Distinct { input } | Plan::Document { input, .. } => input.each_scan(f),
            Plan::SetOp { left, right, .. } => {
                left.each_scan(f);
                right.each_scan(f);
            }
            Plan::RecursiveCte { anchor, recursive, .. } => {
                anchor.each_scan(f);
                recursive.each_scan(f);
            }
            Plan::Window { input, partition, order, calls, .. } => {
                input.each_scan(f);
                each(partition, f);
                keys(order, f);
                for call in calls {
                    each(&call.args, f);
                    if let WindowFunc::Aggregate(a) = &call.func {
                        a.each_scan(f);
                    }
                }
            }
        }
    }

    /// Fills in the columns the index a scan wants would include (`ScanNode::wanted`), for
    /// a query over that one table: the table's columns its operators read (every column
    /// when it hands out the table's whole rows), but for the wanted key columns and the
    /// clustered key, which every nonclustered entry holds. Queries of other shapes leave
    /// them out.
    pub fn cover_wanted_index(&mut self) {
        let (mut read, mut whole) = (Vec::new(), false);
        let Some((node, raw)) = scan_row_reads(self, &mut read, &mut whole) else { return };
        let Some(wanted) = &node.wanted else { return };
        let width = node.table.columns.len();
        let mut included: Vec<usize> = if raw || whole { (0..width).collect() } else { read };
        let keyed = |c: &usize| {
            wanted.equality.contains(c)
                || wanted.inequality.contains(c)
                || node.table.indexes[0].columns.iter().any(|(k, _)| k == c)
        };
        included.retain(|c| *c < width && !keyed(c));
        included.sort_unstable();
        included.dedup();
        let (equality, inequality) = (wanted.equality.clone(), wanted.inequality.clone());
        node.wanted = Some(Arc::new(WantedIndex { equality, inequality, included, impact: wanted.impact }));
    }
}

/// The scan under a plan of one table (through filters, sorts, TOP, OFFSET, DISTINCT, a
/// projection and an aggregate) with whether the plan's rows are still the scan's; the
/// scan's columns the operators over it read go to `read` (`whole` when one may read them
/// all: a subquery, DISTINCT). None for other plans.
fn scan_row_reads<'p>(plan: &'p mut Plan, read: &mut Vec<usize>, whole: &mut bool) -> Option<(&'p mut ScanNode, bool)> {
    fn note(raw: bool, e: &Expr, read: &mut Vec<usize>, whole: &mut bool) {
        if raw && !columns_used(e, read) {
            *whole = true;
        }
    }
    match plan {
        Plan::Scan(node) => Some((node, true)),
        Plan::Top { input, .. } | Plan::Offset { input, .. } => scan_row_reads(input, read, whole),
        Plan::Filter { input, predicate } => {
            let (node, raw) = scan_row_reads(input, read, whole)?;
            note(raw, predicate, read, whole);
            Some((node, raw))
        }
        Plan::Sort { input, keys } => {
            let (node, raw) = scan_row_reads(input, read, whole)?;
            keys.iter().for_each(|k| note(raw, &k.expr, read, whole));
            Some((node, raw))
        }
        Plan::Distinct { input } => {
            let (node, raw) = scan_row_reads(input, read, whole)?;
            *whole |= raw;
            Some((node, raw))
        }
        Plan::Project { input, exprs } => {
            let (node, raw) = scan_row_reads(input, read, whole)?;
            exprs.iter().for_each(|e| note(raw, e, read, whole));
            Some((node, false))
        }
        Plan::Aggregate { input, group_by, aggregates } => {
            let (node, raw) = scan_row_reads(input, read, whole)?;
            group_by.iter().for_each(|e| note(raw, e, read, whole));
            aggregates.iter().filter_map(|a| a.arg.as_ref()).for_each(|e| note(raw, e, read, whole));
            Some((node, false))
        }
        _ => None,
    }
}

impl AggCall {
    fn each_scan(&self, f: &mut dyn FnMut(&ScanNode)) {
        self.arg.iter().for_each(|e| e.each_scan(f));
        if let Some(s) = &self.string_agg {
            s.separator.each_scan(f);
            s.order.iter().for_each(|k| k.expr.each_scan(f));
        }
    }
}

impl Expr {
    /// Calls `f` with every scan of the subqueries in the expression.
    pub fn each_scan(&self, f: &mut dyn FnMut(&ScanNode)) {
        match self {
            Expr::Const(_) | Expr::Column(_) | Expr::OuterRef { .. } | Expr::Var(_) | Expr::NextValue { .. } => {}
            Expr::Cast { expr, .. } | Expr::Unary { expr, .. } | Expr::Not(expr) | Expr::IsNull { expr, .. } => {
                expr.each_scan(f)
            }
            Expr::Arith { left, right, .. }
            | Expr::Compare { left, right, .. }
            | Expr::And(left, right)
            | Expr::Or(left, right) => {
                left.each_scan(f);
                right.each_scan(f);
            }
            Expr::Like { expr, pattern, escape, .. } => {
                expr.each_scan(f);
                pattern.each_scan(f);
                escape.iter().for_each(|e| e.each_scan(f));
            }
            Expr::InList { expr, list, .. } => {
                expr.each_scan(f);
                list.iter().for_each(|e| e.each_scan(f));
            }
            Expr::Case { branches, otherwise } => {
                for (when, then) in branches {
                    when.each_scan(f);
                    then.each_scan(f);
                }
                otherwise.iter().for_each(|e| e.each_scan(f));
            }
            Expr::Coalesce(args)
            | Expr::Func { args, .. }
            | Expr::Session { args, .. }
            | Expr::UserFunction { args, .. } => args.iter().for_each(|e| e.each_scan(f)),
            Expr::Subquery(sq) => {
                sq.plan.each_scan(f);
                match &sq.kind {
                    SubqueryKind::In { expr, .. } | SubqueryKind::Quantified { expr, .. } => expr.each_scan(f),
                    SubqueryKind::Scalar | SubqueryKind::Exists { .. } => {}
                }
            }
        }
    }
}

/// Adds the column positions an expression reads to `out`; false if it contains a subquery,
/// which may read the whole row through outer references.
pub fn columns_used(e: &Expr, out: &mut Vec<usize>) -> bool {
    let mut ok = true;
    let mut visit = |x: &Expr, out: &mut Vec<usize>| ok &= columns_used(x, out);
    match e {
        Expr::Column(i) => out.push(*i),
        Expr::Const(_) | Expr::OuterRef { .. } | Expr::Var(_) | Expr::NextValue { .. } => {}
        Expr::Cast { expr, .. } | Expr::Unary { expr, .. } | Expr::Not(expr) | Expr::IsNull { expr, .. } => {
            visit(expr, out)
        }
        Expr::Arith { left, right, .. }
        | Expr::Compare { left, right, .. }
        | Expr::And(left, right)
        | Expr::Or(left, right) => {
            visit(left, out);
            visit(right, out);
        }
        Expr::Like { expr, pattern, escape, .. } => {
            visit(expr, out);
            visit(pattern, out);
            if let Some(x) = escape {
                visit(x, out);
            }
        }
        Expr::InList { expr, list, .. } => {
            visit(expr, out);
            for x in list {
                visit(x, out);
            }
        }
        Expr::Case { branches, otherwise } => {
            for (c, t) in branches {
                visit(c, out);
                visit(t, out);
            }
            if let Some(x) = otherwise {
                visit(x, out);
            }
        }
        Expr::Coalesce(args)
        | Expr::Func { args, .. }
        | Expr::Session { args, .. }
        | Expr::UserFunction { args, .. } => {
            for x in args {
                visit(x, out);
            }
        }
        Expr::Subquery(_) => return false,
    }
    ok
}
