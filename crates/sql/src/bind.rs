//! The binder and planner: syntax in, typed plans out.
//!
//! Names resolve against a stack of scopes (the innermost query first, then enclosing
//! queries, whose columns become outer references). Operands are converted to the type
//! their operator works on with SQL Server's precedence rules. FROM clauses are planned
//! in three steps: bind the join tree against one combined row, push each WHERE/ON
//! conjunct down to the single table it touches (unless an outer join forbids it), then
//! choose for every table the index whose key the pushed conjuncts pin down best and for
//! every join a method: index nested loops when the inner table has an index on the join
//! columns, hash join for other equi-joins, nested loops otherwise.

use crate::locking::LockHints;
use std::sync::Arc;

use crate::catalog::{Module, ModuleKind, Table};
use crate::plan::{AggCall, AggFunc, Expr, Plan, RangeBound, ScanNode, SessionFn, SortKey, Subquery, SubqueryKind};
use crate::runtime::{SessionState, Shared};
use crate::sysviews;
use crate::types::{self, SqlType, Value};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{self, BinaryOp, Ident, JoinKind, Literal, ObjectName, UnaryOp};

/// A result column: name, type and nullability.
#[derive(Clone, Debug)]
pub struct OutputColumn {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
}

/// A bound query: its plan and result columns.
#[derive(Clone, Debug)]
pub struct BoundQuery {
    pub plan: Plan,
    pub columns: Vec<OutputColumn>,
}

#[derive(Clone, Debug)]
struct ScopeColumn {
    /// The alias or table name that qualifies the column (lower-cased).
    qualifier: Option<String>,
    name: String,
    ty: SqlType,
    nullable: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Scope {
    columns: Vec<ScopeColumn>,
    /// Set when this query references columns of an enclosing query.
    correlated: bool,
}

impl Scope {
    /// Position of the hidden storage-key column of the UPDATE/DELETE target, and where
    /// that table's columns start.
    pub fn target_key(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.name == KEY_COLUMN)
    }
}

/// Name of the hidden column carrying a row's storage key.
const KEY_COLUMN: &str = "%%key%%";

/// Post-aggregation binding: group expressions and aggregate calls become columns of the
/// Aggregate operator's output.
struct AggContext {
    group_asts: Vec<ast::Expr>,
    group_types: Vec<SqlType>,
    calls: Vec<AggCall>,
    /// Scope of the rows fed into the aggregate.
    input: Scope,
    /// The clause being bound, for errors 8120/8121/8127.
    clause: AggClause,
}

#[derive(Clone, Copy, PartialEq)]
enum AggClause {
    Select,
    Having,
    OrderBy,
}

/// A column neither grouped nor aggregated: error 8120, 8121 or 8127 by clause.
fn not_grouped(clause: AggClause, column: &str) -> SqlError {
    let (number, quoted, place) = match clause {
        AggClause::Select => (8120, format!("'{column}'"), "select list"),
        AggClause::Having => (8121, format!("'{column}'"), "HAVING clause"),
        AggClause::OrderBy => (8127, format!("\"{column}\""), "ORDER BY clause"),
    };
    SqlError::new(
        number,
        format!(
            "Column {quoted} is invalid in the {place} because it is not contained in either an aggregate function or the GROUP BY clause."
        ),
    )
}

/// Errors 8158/8159: a derived table's or CTE's column list does not match its query.
fn check_column_list(have: usize, listed: usize, name: &str) -> SqlResult<()> {
    if have > listed {
        return Err(SqlError::new(8158, format!("'{name}' has more columns than were specified in the column list.")));
    }
    if have < listed {
        return Err(SqlError::new(8159, format!("'{name}' has fewer columns than were specified in the column list.")));
    }
    Ok(())
}

/// The recursion limit of recursive CTEs when the statement gives no MAXRECURSION.
const DEFAULT_MAX_RECURSION: u16 = 100;

/// Names a CTE's columns from its column list (errors 8158/8159 when the counts differ).
fn name_cte_columns(columns: &mut [OutputColumn], cte: &ast::Cte) -> SqlResult<()> {
    if !cte.columns.is_empty() {
        check_column_list(columns.len(), cte.columns.len(), &cte.name.value)?;
        for (c, n) in columns.iter_mut().zip(&cte.columns) {
            c.name = n.value.clone();
        }
    }
    Ok(())
}

/// The members of a chain of UNION/EXCEPT operations, left to right, each with the
/// operator that joins it to the members before it.
fn flatten_set_chain<'q>(
    body: &'q ast::SetExpr,
    connector: Option<(ast::SetOperator, bool)>,
    out: &mut Vec<(Option<(ast::SetOperator, bool)>, &'q ast::SetExpr)>,
) {
    match body {
        ast::SetExpr::SetOperation { op, all, left, right } if *op != ast::SetOperator::Intersect => {
            flatten_set_chain(left, connector, out);
            out.push((Some((*op, *all)), right));
        }
        _ => out.push((connector, body)),
    }
}

/// SQL Server's rules for a recursive member: joined by UNION ALL (252), one reference to
/// the CTE (253), the anchor's column count (205) and exactly its column types (240).
fn check_recursive_member(
    name: &str,
    anchor: &[OutputColumn],
    member: &BoundQuery,
    op: ast::SetOperator,
    all: bool,
    uses: usize,
) -> SqlResult<()> {
    if uses == 0 || op != ast::SetOperator::Union || !all {
        return Err(SqlError::new(
            252,
            format!("Recursive common table expression '{name}' does not contain a top-level UNION ALL operator."),
        ));
    }
    if uses > 1 {
        return Err(SqlError::new(
            253,
            format!("Recursive member of a common table expression '{name}' has multiple recursive references."),
        ));
    }
    if member.columns.len() != anchor.len() {
        return Err(SqlError::new(
            205,
            "All queries combined using a UNION, INTERSECT or EXCEPT operator must have an equal number of expressions in their target lists.",
        ));
    }
    for (a, m) in anchor.iter().zip(&member.columns) {
        if a.ty != m.ty {
            return Err(SqlError::new(
                240,
                format!(
                    "Types don't match between the anchor and the recursive part in column \"{}\" of recursive query \"{name}\".",
                    a.name
                ),
            ));
        }
    }
    Ok(())
}

/// Two operands of UNION/EXCEPT/INTERSECT: equal widths (205), each column converted to
/// the operands' common type; names from the left.
fn combine_set_operands(op: ast::SetOperator, all: bool, l: BoundQuery, r: BoundQuery) -> SqlResult<BoundQuery> {
    if l.columns.len() != r.columns.len() {
        return Err(SqlError::new(
            205,
            "All queries combined using a UNION, INTERSECT or EXCEPT operator must have an equal number of expressions in their target lists.",
        ));
    }
    let mut columns = Vec::with_capacity(l.columns.len());
    for (a, b) in l.columns.iter().zip(&r.columns) {
        let ty = types::common_type(&a.ty, &b.ty)?;
        columns.push(OutputColumn { name: a.name.clone(), ty, nullable: a.nullable || b.nullable });
    }
    let types_: Vec<SqlType> = columns.iter().map(|c| c.ty).collect();
    let lp = project_to(l, &types_)?;
    let rp = project_to(r, &types_)?;
    Ok(BoundQuery { plan: Plan::SetOp { op, all, left: Box::new(lp), right: Box::new(rp) }, columns })
}

/// Error 1033: ORDER BY in a derived table, subquery or CTE needs TOP or OFFSET.
fn check_nested_order_by(q: &ast::Query) -> SqlResult<()> {
    let top = matches!(&q.body, ast::SetExpr::Select(s) if s.top.is_some());
    if !q.order_by.is_empty() && !top && q.offset.is_none() {
        return Err(SqlError::new(
            1033,
            "The ORDER BY clause is invalid in views, inline functions, derived tables, subqueries, and common table expressions, unless TOP, OFFSET or FOR XML is also specified.",
        )
        .with_severity(15));
    }
    Ok(())
}

/// Errors 8155/8156: every column of a derived table or CTE needs a distinct name.
fn check_derived_columns(columns: &[OutputColumn], name: &str) -> SqlResult<()> {
    for (i, c) in columns.iter().enumerate() {
        if c.name.is_empty() {
            return Err(SqlError::new(8155, format!("No column name was specified for column {} of '{name}'.", i + 1)));
        }
        if columns[..i].iter().any(|p| p.name.eq_ignore_ascii_case(&c.name)) {
            return Err(SqlError::new(
                8156,
                format!("The column '{}' was specified multiple times for '{name}'.", c.name),
            ));
        }
    }
    Ok(())
}

/// Error 1011: two FROM items with the same alias.
fn duplicate_correlation(alias: &str) -> SqlError {
    SqlError::new(1011, format!("The correlation name '{alias}' is specified multiple times in a FROM clause."))
        .with_severity(15)
}

/// A scope column as SQL Server names it in errors: `qualifier.name`.
fn qualified_name(c: &ScopeColumn) -> String {
    match &c.qualifier {
        Some(q) => format!("{q}.{}", c.name),
        None => c.name.clone(),
    }
}

/// Dependencies of a plan on catalog versions.
#[derive(Default)]
pub struct Dependencies {
    /// Databases whose catalogs the statement was bound against, with their versions.
    pub databases: Vec<(String, u64)>,
    /// Tables the statement reads or changes: (database, object id).
    pub tables: Vec<(String, i32)>,
}

pub struct Binder<'a> {
    pub shared: &'a Shared,
    pub session: &'a SessionState,
    /// Declared variables of the frame: name (lower-cased, with `@`) and type, by slot.
    pub variables: &'a [(String, SqlType)],
    scopes: Vec<Scope>,
    ctes: Vec<(String, BoundQuery)>,
    /// Recursive CTEs: the next work table id, how many times a work table has been
    /// referenced so far (a member that references one is recursive), and the statement's
    /// recursion limit (`OPTION (MAXRECURSION n)`, default 100, 0 = none).
    next_work_table: usize,
    work_table_uses: usize,
    max_recursion: u16,
    agg: Option<AggContext>,
    /// While binding a FROM clause: the table that gets a hidden key column.
    key_target: Option<String>,
    /// The database unqualified names resolve in when not the session's (inside a view
    /// or function, its own database).
    default_db: Option<String>,
    /// Inside an inline table-valued function: its parameters, bound to the arguments.
    substitutions: Vec<(Expr, SqlType, String)>,
    /// Views and functions being expanded (nesting limit).
    module_depth: i32,
    pub deps: Dependencies,
}

/// A resolved table reference.
pub struct ResolvedTable {
    pub db: String,
    pub table: Arc<Table>,
}

enum FromNode {
    Leaf { source: Box<LeafSource>, offset: usize, width: usize, filters: Vec<Expr> },
    Join { left: Box<FromNode>, right: Box<FromNode>, kind: JoinKind, on: Vec<Expr>, offset: usize, width: usize },
}

enum LeafSource {
    Table { db: String, table: Arc<Table>, with_key: bool, hints: LockHints },
    Plan(Plan),
}

impl FromNode {
    fn offset(&self) -> usize {
        match self {
            FromNode::Leaf { offset, .. } | FromNode::Join { offset, .. } => *offset,
        }
    }
    fn width(&self) -> usize {
        match self {
            FromNode::Leaf { width, .. } | FromNode::Join { width, .. } => *width,
        }
    }
}

pub fn invalid_object(name: &str) -> SqlError {
    SqlError::new(208, format!("Invalid object name '{name}'."))
}

pub fn invalid_column(name: &str) -> SqlError {
    SqlError::new(207, format!("Invalid column name '{name}'."))
}

fn object_display(name: &ObjectName) -> String {
    name.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".")
}

/// Applies `f` to every column reference of an expression (not descending into
/// subqueries, whose plans address their own rows).
pub fn map_columns(e: &Expr, f: &dyn Fn(usize) -> usize) -> Expr {
    let m = |x: &Expr| Box::new(map_columns(x, f));
    match e {
        Expr::Column(i) => Expr::Column(f(*i)),
        Expr::Const(_) | Expr::OuterRef { .. } | Expr::Var(_) => e.clone(),
        Expr::Cast { expr, from, to, style, try_ } => {
            Expr::Cast { expr: m(expr), from: *from, to: *to, style: *style, try_: *try_ }
        }
        Expr::Unary { op, expr, ty } => Expr::Unary { op: *op, expr: m(expr), ty: *ty },
        Expr::Arith { op, left, right, ty } => Expr::Arith { op: *op, left: m(left), right: m(right), ty: *ty },
        Expr::Compare { op, left, right } => Expr::Compare { op: *op, left: m(left), right: m(right) },
        Expr::And(a, b) => Expr::And(m(a), m(b)),
        Expr::Or(a, b) => Expr::Or(m(a), m(b)),
        Expr::Not(a) => Expr::Not(m(a)),
        Expr::IsNull { expr, negated } => Expr::IsNull { expr: m(expr), negated: *negated },
        Expr::Like { expr, pattern, escape, negated } => {
            Expr::Like { expr: m(expr), pattern: m(pattern), escape: escape.as_ref().map(|x| m(x)), negated: *negated }
        }
        Expr::InList { expr, list, negated } => {
            Expr::InList { expr: m(expr), list: list.iter().map(|x| map_columns(x, f)).collect(), negated: *negated }
        }
        Expr::Case { branches, otherwise } => Expr::Case {
            branches: branches.iter().map(|(c, t)| (map_columns(c, f), map_columns(t, f))).collect(),
            otherwise: otherwise.as_ref().map(|x| m(x)),
        },
        Expr::Coalesce(args) => Expr::Coalesce(args.iter().map(|x| map_columns(x, f)).collect()),
        Expr::Func { name, args, arg_types, ty } => Expr::Func {
            name: name.clone(),
            args: args.iter().map(|x| map_columns(x, f)).collect(),
            arg_types: arg_types.clone(),
            ty: *ty,
        },
        Expr::Session { func, args } => {
            Expr::Session { func: func.clone(), args: args.iter().map(|x| map_columns(x, f)).collect() }
        }
        Expr::UserFunction { call, args } => {
            Expr::UserFunction { call: call.clone(), args: args.iter().map(|x| map_columns(x, f)).collect() }
        }
        Expr::Subquery(sq) => {
            let kind = match &sq.kind {
                SubqueryKind::In { expr, negated } => {
                    SubqueryKind::In { expr: map_columns(expr, f), negated: *negated }
                }
                SubqueryKind::Quantified { expr, op, all } => {
                    SubqueryKind::Quantified { expr: map_columns(expr, f), op: *op, all: *all }
                }
                k => k.clone(),
            };
            Expr::Subquery(Box::new(Subquery { plan: sq.plan.clone(), kind, correlated: sq.correlated }))
        }
    }
}

/// Column positions an expression reads (None if it contains a subquery, which may read
/// the whole row through outer references).
fn columns_used(e: &Expr, out: &mut Vec<usize>) -> bool {
    let mut ok = true;
    let mut visit = |x: &Expr, out: &mut Vec<usize>| ok &= columns_used(x, out);
    match e {
        Expr::Column(i) => out.push(*i),
        Expr::Const(_) | Expr::OuterRef { .. } | Expr::Var(_) => {}
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

fn is_predicate(e: &Expr) -> bool {
    match e {
        Expr::Compare { .. }
        | Expr::And(..)
        | Expr::Or(..)
        | Expr::Not(_)
        | Expr::IsNull { .. }
        | Expr::Like { .. }
        | Expr::InList { .. } => true,
        Expr::Subquery(sq) => !matches!(sq.kind, SubqueryKind::Scalar),
        Expr::Const(Value::Bit(_)) => true,
        _ => false,
    }
}

fn split_conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(a, b) => {
            split_conjuncts(*a, out);
            split_conjuncts(*b, out);
        }
        e => out.push(e),
    }
}

fn conjoin(mut conj: Vec<Expr>) -> Option<Expr> {
    let first = if conj.is_empty() { return None } else { conj.remove(0) };
    Some(conj.into_iter().fold(first, |a, b| Expr::And(Box::new(a), Box::new(b))))
}

/// Whether values of `from` must be converted to be handled as `to` (values of the
/// string, binary and integer families share one representation).
fn needs_cast(from: &SqlType, to: &SqlType) -> bool {
    use SqlType::*;
    let int = |t: &SqlType| matches!(t, TinyInt | SmallInt | Int | BigInt);
    let string = |t: &SqlType| matches!(t, Char(_) | VarChar(_) | NChar(_) | NVarChar(_));
    let binary = |t: &SqlType| matches!(t, Binary(_) | VarBinary(_));
    !(from == to || (int(from) && int(to)) || (string(from) && string(to)) || (binary(from) && binary(to)))
}

pub fn cast_to(e: Expr, from: &SqlType, to: &SqlType) -> Expr {
    if let Expr::Const(Value::Null) = e {
        return e;
    }
    if !needs_cast(from, to) {
        return e;
    }
    Expr::Cast { expr: Box::new(e), from: *from, to: *to, style: None, try_: false }
}

/// Converts a bound expression to `to` now if it is constant (so literals in plans are
/// already of the column type), else wraps it in a cast.
pub fn convert(e: Expr, from: &SqlType, to: &SqlType) -> SqlResult<Expr> {
    match e {
        Expr::Const(v) if needs_cast(from, to) || matches!(to, SqlType::Char(_) | SqlType::NChar(_)) => {
            // A constant that cannot be converted fails when the statement runs, as in
            // SQL Server, not when it is compiled.
            Ok(match types::cast(&v, from, to, None) {
                Ok(c) => Expr::Const(c),
                Err(_) => cast_to(Expr::Const(v), from, to),
            })
        }
        e => Ok(cast_to(e, from, to)),
    }
}

fn is_null_literal(e: &Expr) -> bool {
    matches!(e, Expr::Const(Value::Null))
}

fn agg_func(name: &str) -> Option<AggFunc> {
    Some(match name {
        "COUNT" => AggFunc::Count,
        "COUNT_BIG" => AggFunc::CountBig,
        "SUM" => AggFunc::Sum,
        "AVG" => AggFunc::Avg,
        "MIN" => AggFunc::Min,
        "MAX" => AggFunc::Max,
        _ => return None,
    })
}

fn session_function(name: &str) -> Option<(SessionFn, SqlType)> {
    use SessionFn::*;
    let nv = SqlType::NVarChar(128);
    Some(match name {
        "DB_NAME" => (DbName, nv),
        "DB_ID" => (DbId, SqlType::SmallInt),
        "OBJECT_ID" => (ObjectId, SqlType::Int),
        "OBJECT_NAME" => (ObjectName, nv),
        "SCHEMA_NAME" => (SchemaName, nv),
        "COL_LENGTH" => (ColLength, SqlType::SmallInt),
        "TYPE_NAME" => (TypeName, nv),
        "TYPE_ID" => (TypeId, SqlType::Int),
        "IDENT_CURRENT" => (IdentCurrent, SqlType::Decimal { precision: 38, scale: 0 }),
        "SCOPE_IDENTITY" => (ScopeIdentity, SqlType::Decimal { precision: 38, scale: 0 }),
        "SERVERPROPERTY" => (ServerProperty, nv),
        "DATABASEPROPERTYEX" => (DatabasePropertyEx, nv),
        "XACT_STATE" => (XactState, SqlType::SmallInt),
        "ERROR_NUMBER" => (ErrorNumber, SqlType::Int),
        "ERROR_MESSAGE" => (ErrorMessage, SqlType::NVarChar(4000)),
        "ERROR_SEVERITY" => (ErrorSeverity, SqlType::Int),
        "ERROR_STATE" => (ErrorState, SqlType::Int),
        "ERROR_LINE" => (ErrorLine, SqlType::Int),
        "ERROR_PROCEDURE" => (ErrorProcedure, nv),
        "SUSER_NAME" | "SUSER_SNAME" | "ORIGINAL_LOGIN" | "SYSTEM_USER" => (SuserName, nv),
        "USER_NAME" | "CURRENT_USER" | "SESSION_USER" | "USER" => (UserName, nv),
        "HOST_NAME" => (HostName, nv),
        "APP_NAME" => (AppName, nv),
        "IS_SRVROLEMEMBER" => (IsSrvRoleMember, SqlType::Int),
        "SUSER_ID" => (SuserId, SqlType::Int),
        "SUSER_SID" => (SuserSid, SqlType::VarBinary(85)),
        "HAS_DBACCESS" => (HasDbAccess, SqlType::Int),
        _ => return None,
    })
}

fn global_variable(name: &str) -> Option<(SessionFn, SqlType)> {
    use SessionFn::*;
    Some(match name {
        "@@ROWCOUNT" => (RowCount, SqlType::Int),
        "@@IDENTITY" => (Identity, SqlType::Decimal { precision: 38, scale: 0 }),
        "@@ERROR" => (Error, SqlType::Int),
        "@@TRANCOUNT" => (TranCount, SqlType::Int),
        "@@SPID" => (Spid, SqlType::SmallInt),
        "@@NESTLEVEL" => (NestLevel, SqlType::Int),
        "@@VERSION" => (Version, SqlType::NVarChar(300)),
        "@@SERVERNAME" => (ServerName, SqlType::NVarChar(128)),
        "@@SERVICENAME" => (ServiceName, SqlType::NVarChar(128)),
        "@@LANGUAGE" => (Language, SqlType::NVarChar(128)),
        "@@MAX_PRECISION" => (MaxPrecision, SqlType::TinyInt),
        "@@TEXTSIZE" => (TextSize, SqlType::Int),
        "@@LOCK_TIMEOUT" => (LockTimeout, SqlType::Int),
        "@@OPTIONS" => (Options, SqlType::Int),
        "@@FETCH_STATUS" => (FetchStatus, SqlType::Int),
        "@@DATEFIRST" => (DateFirst, SqlType::TinyInt),
        "@@PROCID" => (ProcId, SqlType::Int),
        _ => return None,
    })
}

/// The type of an integer literal: int if it fits, else numeric(p, 0).
fn integer_literal(text: &str) -> SqlResult<(Value, SqlType)> {
    if let Ok(v) = text.parse::<i32>() {
        return Ok((Value::Int(i64::from(v)), SqlType::Int));
    }
    decimal_literal(text)
}

fn decimal_literal(text: &str) -> SqlResult<(Value, SqlType)> {
    let (int_part, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits: String = format!("{int_part}{frac}");
    let significant = digits.trim_start_matches('0').len().max(1);
    let scale = frac.len();
    let precision = significant.max(scale).max(1);
    if precision > 38 {
        return Err(SqlError::new(
            1007,
            format!("The number '{text}' is out of the range for numeric representation (maximum precision 38)."),
        )
        .with_severity(15));
    }
    let value: i128 = digits.parse().map_err(|_| SqlError::new(102, format!("Incorrect syntax near '{text}'.")))?;
    Ok((
        Value::Decimal { value, scale: scale as u8 },
        SqlType::Decimal { precision: precision as u8, scale: scale as u8 },
    ))
}

pub fn literal(l: &Literal) -> SqlResult<(Value, SqlType)> {
    Ok(match l {
        Literal::Integer(t) => integer_literal(t)?,
        Literal::Decimal(t) => decimal_literal(t)?,
        Literal::Float(t) => (
            Value::Float(t.parse().map_err(|_| SqlError::new(102, format!("Incorrect syntax near '{t}'.")))?),
            SqlType::Float,
        ),
        Literal::Money(t) => {
            let (v, ty) = decimal_literal(t)?;
            (types::cast(&v, &ty, &SqlType::Money, None)?, SqlType::Money)
        }
        Literal::String { value, unicode } => {
            let n = value.chars().count().max(1);
            let ty = if *unicode {
                SqlType::NVarChar(n.min(4000) as u16)
            } else {
                SqlType::VarChar(value.len().clamp(1, 8000) as u16)
            };
            let ty = if n > 8000 || (*unicode && n > 4000) {
                if *unicode {
                    SqlType::NVarChar(tessera_access::row::MAX)
                } else {
                    SqlType::VarChar(tessera_access::row::MAX)
                }
            } else {
                ty
            };
            (Value::str(value), ty)
        }
        Literal::Binary(b) => {
            let n = b.len();
            let ty = if n > 8000 {
                SqlType::VarBinary(tessera_access::row::MAX)
            } else {
                SqlType::VarBinary(n.max(1) as u16)
            };
            (Value::Binary(Arc::from(&b[..])), ty)
        }
        Literal::Null => (Value::Null, SqlType::Int),
    })
}

/// The name a select item gets when it has no alias.
fn implicit_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Column(n) => n.name().value.clone(),
        ast::Expr::Nested(inner) => implicit_name(inner),
        _ => String::new(),
    }
}

impl<'a> Binder<'a> {
    pub fn new(shared: &'a Shared, session: &'a SessionState, variables: &'a [(String, SqlType)]) -> Binder<'a> {
        // Constants converted while binding read dates in the session's order.
        types::set_session_date_format(&session.options.dateformat);
        Binder {
            shared,
            session,
            variables,
            scopes: vec![Scope::default()],
            ctes: Vec::new(),
            next_work_table: 0,
            work_table_uses: 0,
            max_recursion: DEFAULT_MAX_RECURSION,
            agg: None,
            key_target: None,
            default_db: None,
            substitutions: Vec::new(),
            module_depth: 0,
            deps: Dependencies::default(),
        }
    }

    /// Records that the statement was bound against version `version` of `db`'s catalog
    /// (the oldest, if it read several): the plan is stale once the catalog moves on.
    fn depend(&mut self, db: &str, version: u64) {
        match self.deps.databases.iter_mut().find(|d| d.0.eq_ignore_ascii_case(db)) {
            Some(d) => d.1 = d.1.min(version),
            None => self.deps.databases.push((db.to_lowercase(), version)),
        }
    }

    // ---- names --------------------------------------------------------------------------

    /// Resolves a table name to (database, schema, name); `#temp` names map to the
    /// session's table in tempdb.
    pub fn qualify(&self, name: &ObjectName) -> SqlResult<(String, String, String)> {
        let parts = &name.0;
        let own = &name.name().value;
        if own.starts_with('@') && parts.len() == 1 {
            // A table variable: a table of this session in tempdb.
            return match self.session.temp_tables.get(&own.to_lowercase()) {
                Some(real) => Ok(("tempdb".to_string(), "dbo".to_string(), real.clone())),
                None => {
                    Err(SqlError::new(1087, format!("Must declare the table variable \"{own}\".")).with_severity(15))
                }
            };
        }
        if own.starts_with('#') {
            let real = self.session.temp_tables.get(&own.to_lowercase()).cloned().unwrap_or_else(|| own.clone());
            return Ok(("tempdb".to_string(), "dbo".to_string(), real));
        }
        let current = self.default_db.clone().unwrap_or_else(|| self.session.database.clone());
        let part = |i: usize, default: &str| -> String {
            match parts.get(i) {
                Some(p) if !p.value.is_empty() => p.value.clone(),
                _ => default.to_string(),
            }
        };
        Ok(match parts.len() {
            1 => (current, "dbo".to_string(), own.clone()),
            2 => (current, part(0, "dbo"), own.clone()),
            3 => (part(0, &current), part(1, "dbo"), own.clone()),
            4 => (part(1, &current), part(2, "dbo"), own.clone()),
            _ => {
                return Err(SqlError::new(
                    117,
                    format!(
                        "The object name '{}' contains more than the maximum number of prefixes. The maximum is 3.",
                        object_display(name)
                    ),
                )
                .with_severity(15))
            }
        })
    }

    /// A view, procedure or function by name: (database, module).
    fn module(&mut self, name: &ObjectName) -> SqlResult<Option<(String, Arc<Module>)>> {
        let (db, schema, obj) = self.qualify(name)?;
        if obj.starts_with('#') || name.name().value.starts_with('@') || !self.shared.engine.exists(&db) {
            return Ok(None);
        }
        let database = self.shared.database(&db)?;
        let catalog = self.shared.catalog(&database)?;
        Ok(catalog.module(&schema, &obj).cloned().map(|m| {
            self.depend(database.name(), catalog.version);
            (database.name().to_string(), m)
        }))
    }

    /// Parses a module's definition (through the plan cache).
    fn definition(&self, db: &str, m: &Module) -> SqlResult<Arc<crate::cache::CachedBatch<crate::dml::Prepared>>> {
        self.shared.plans.get_or_parse(db, &m.text, tessera_syntax::parser::parse_batch)
    }

    /// Binds a module's query in its own database, one nesting level down.
    fn bind_in_module<T>(&mut self, db: &str, f: impl FnOnce(&mut Self) -> SqlResult<T>) -> SqlResult<T> {
        if self.module_depth >= crate::modules::MAX_NESTING {
            return Err(crate::modules::nesting_error());
        }
        let saved_db = self.default_db.replace(db.to_string());
        let saved_ctes = std::mem::take(&mut self.ctes);
        self.module_depth += 1;
        self.scopes.push(Scope::default());
        let r = f(self);
        self.scopes.pop();
        self.module_depth -= 1;
        self.ctes = saved_ctes;
        self.default_db = saved_db;
        r
    }

    /// A view as a derived table.
    fn bind_view(&mut self, db: &str, m: &Module) -> SqlResult<BoundQuery> {
        let cached = self.definition(db, m)?;
        let Some(ast::StatementKind::CreateView(cv)) = cached.batch.statements.first().map(|s| &s.kind) else {
            return Err(invalid_object(&m.name));
        };
        let mut bound = self.bind_in_module(db, |b| b.bind_query(&cv.query))?;
        for (c, n) in bound.columns.iter_mut().zip(&cv.columns) {
            c.name = n.value.clone();
        }
        Ok(bound)
    }

    /// An inline table-valued function call as a derived table; its parameters take the
    /// arguments' values (which may not read columns).
    fn bind_table_function(&mut self, db: &str, m: &Module, args: &[ast::Expr]) -> SqlResult<BoundQuery> {
        let cached = self.definition(db, m)?;
        let Some(ast::StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind) else {
            return Err(invalid_object(&m.name));
        };
        let ast::FunctionReturns::InlineTable(query) = &cf.returns else {
            return Err(invalid_object(&m.name));
        };
        let bound_args = self.function_arguments(&m.name, &cf.params, args)?;
        for (e, _, _) in &bound_args {
            let mut used = Vec::new();
            if !columns_used(e, &mut used) || !used.is_empty() {
                return Err(SqlError::new(
                    40527,
                    "Arguments of table-valued functions that read columns (APPLY) are not supported yet.",
                ));
            }
        }
        let saved = std::mem::replace(&mut self.substitutions, bound_args);
        let r = self.bind_in_module(db, |b| b.bind_query(query));
        self.substitutions = saved;
        r
    }

    /// Binds call arguments against a function's parameters (defaults via `DEFAULT`),
    /// converted to the parameter types: (expression, type, parameter name).
    fn function_arguments(
        &mut self,
        fname: &str,
        params: &[ast::Parameter],
        args: &[ast::Expr],
    ) -> SqlResult<Vec<(Expr, SqlType, String)>> {
        if args.len() > params.len() {
            return Err(SqlError::new(
                8144,
                format!("Procedure or function {fname} has too many arguments specified."),
            ));
        }
        let mut out = Vec::with_capacity(params.len());
        for (i, p) in params.iter().enumerate() {
            let ty = types::resolve_type(&p.ty, false)?;
            let (e, t) = match args.get(i) {
                Some(ast::Expr::Default) | None => match (&p.default, args.get(i)) {
                    (Some(d), Some(_)) => self.bind_expr(d)?,
                    _ => {
                        return Err(SqlError::new(
                            313,
                            format!(
                            "An insufficient number of arguments were supplied for the procedure or function {fname}."
                        ),
                        ))
                    }
                },
                Some(a) => self.bind_expr(a)?,
            };
            out.push((convert(e, &t, &ty)?, ty, p.name.to_lowercase()));
        }
        Ok(out)
    }

    pub fn resolve_table(&mut self, name: &ObjectName) -> SqlResult<ResolvedTable> {
        let (db, schema, obj) = self.qualify(name)?;
        if !self.shared.engine.exists(&db) {
            return Err(crate::runtime::database_not_found(&db));
        }
        let database = self.shared.database(&db)?;
        let catalog = self.shared.catalog(&database)?;
        self.depend(database.name(), catalog.version);
        match catalog.table(&schema, &obj) {
            Some(t) => {
                let used = (database.name().to_string(), t.id);
                if !self.deps.tables.contains(&used) {
                    self.deps.tables.push(used);
                }
                Ok(ResolvedTable { db: database.name().to_string(), table: t.clone() })
            }
            None => Err(invalid_object(&object_display(name))),
        }
    }

    /// A declared variable's slot and type (error 137 if undeclared).
    pub fn variable_slot(&self, name: &str) -> SqlResult<(usize, SqlType)> {
        self.variable(name)
    }

    /// Binds with a table's own row as the scope (CHECK and DEFAULT definitions).
    pub fn with_table_scope<T>(&mut self, table: &Table, f: impl FnOnce(&mut Self) -> T) -> T {
        let q = table.name.to_lowercase();
        let columns = table
            .columns
            .iter()
            .map(|c| ScopeColumn { qualifier: Some(q.clone()), name: c.name.clone(), ty: c.ty, nullable: c.nullable })
            .collect();
        self.with_scope(Scope { columns, correlated: false }, f)
    }

    /// Binds an OUTPUT clause: `deleted` columns, then `inserted` columns.
    pub fn with_output_scope<T>(&mut self, table: &Table, f: impl FnOnce(&mut Self) -> T) -> T {
        let mut columns = Vec::new();
        for q in ["deleted", "inserted"] {
            for c in &table.columns {
                columns.push(ScopeColumn {
                    qualifier: Some(q.to_string()),
                    name: c.name.clone(),
                    ty: c.ty,
                    nullable: true,
                });
            }
        }
        self.with_scope(Scope { columns, correlated: false }, f)
    }

    pub fn with_bound_scope<T>(&mut self, scope: Scope, f: impl FnOnce(&mut Self) -> T) -> T {
        self.with_scope(scope, f)
    }

    fn variable(&self, name: &str) -> SqlResult<(usize, SqlType)> {
        let lower = name.to_lowercase();
        self.variables.iter().rposition(|(n, _)| *n == lower).map(|i| (i, self.variables[i].1)).ok_or_else(|| {
            SqlError::new(137, format!("Must declare the scalar variable \"{name}\".")).with_severity(15).with_state(2)
        })
    }

    fn find_in_scope(scope: &Scope, name: &ObjectName) -> SqlResult<Option<usize>> {
        let col = &name.name().value;
        let qualifier = (name.0.len() >= 2).then(|| name.0[name.0.len() - 2].value.to_lowercase());
        let mut found = None;
        for (i, c) in scope.columns.iter().enumerate() {
            if !c.name.eq_ignore_ascii_case(col) {
                continue;
            }
            if let Some(q) = &qualifier {
                if c.qualifier.as_deref() != Some(q.as_str()) {
                    continue;
                }
            }
            if found.is_some() {
                return Err(SqlError::new(209, format!("Ambiguous column name '{col}'.")));
            }
            found = Some(i);
        }
        Ok(found)
    }

    fn resolve_column(&mut self, name: &ObjectName) -> SqlResult<(Expr, SqlType, bool)> {
        let n = self.scopes.len();
        for depth in 0..n {
            let scope = &self.scopes[n - 1 - depth];
            if let Some(i) = Self::find_in_scope(scope, name)? {
                let c = &scope.columns[i];
                let (ty, nullable) = (c.ty, c.nullable);
                if depth == 0 {
                    return Ok((Expr::Column(i), ty, nullable));
                }
                for s in &mut self.scopes[n - depth..] {
                    s.correlated = true;
                }
                return Ok((Expr::OuterRef { depth: depth - 1, index: i }, ty, nullable));
            }
        }
        if name.0.len() >= 2 {
            let q = &name.0[name.0.len() - 2].value;
            let known =
                self.scopes.iter().any(|s| s.columns.iter().any(|c| c.qualifier.as_deref() == Some(&q.to_lowercase())));
            if !known {
                return Err(SqlError::new(
                    4104,
                    format!("The multi-part identifier \"{}\" could not be bound.", object_display(name)),
                ));
            }
        }
        Err(invalid_column(&name.name().value))
    }

    // ---- expressions ------------------------------------------------------------------

    /// Binds a condition: it must be a predicate (error 4145 otherwise).
    pub fn bind_predicate(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        let (b, _) = self.bind_expr(e)?;
        if !is_predicate(&b) {
            return Err(SqlError::new(
                4145,
                format!("An expression of non-boolean type specified in a context where a condition is expected, near '{}'.", near_text(e)),
            ));
        }
        Ok(b)
    }

    pub fn bind_expr(&mut self, e: &ast::Expr) -> SqlResult<(Expr, SqlType)> {
        self.bind_expr_n(e).map(|(e, t, _)| (e, t))
    }

    /// Binds an expression; returns it with its type and nullability.
    pub fn bind_expr_n(&mut self, e: &ast::Expr) -> SqlResult<(Expr, SqlType, bool)> {
        if let Some(agg) = &self.agg {
            if let Some(i) = agg.group_asts.iter().position(|g| g == e) {
                return Ok((Expr::Column(i), agg.group_types[i], true));
            }
        }
        Ok(match e {
            ast::Expr::Literal(l) => {
                let (v, t) = literal(l)?;
                let null = v.is_null();
                (Expr::Const(v), t, null)
            }
            ast::Expr::Column(name) => {
                if self.agg.is_some() {
                    return self.bind_in_aggregate_input_error(name);
                }
                self.resolve_column(name)?
            }
            ast::Expr::Variable(name) => {
                let lower = name.to_lowercase();
                if let Some((e, t, _)) = self.substitutions.iter().find(|(_, _, n)| *n == lower) {
                    return Ok((e.clone(), *t, true));
                }
                let (slot, ty) = self.variable(name)?;
                (Expr::Var(slot), ty, true)
            }
            ast::Expr::GlobalVariable(name) => {
                let (func, ty) = global_variable(name).ok_or_else(|| {
                    SqlError::new(137, format!("Must declare the scalar variable \"{name}\".")).with_severity(15)
                })?;
                (Expr::Session { func, args: Vec::new() }, ty, true)
            }
            ast::Expr::Default => {
                return Err(SqlError::new(102, "Incorrect syntax near the keyword 'DEFAULT'.").with_severity(15))
            }
            ast::Expr::Nested(inner) => return self.bind_expr_n(inner),
            ast::Expr::Collate { expr, .. } => return self.bind_expr_n(expr),
            ast::Expr::Unary { op, expr } => self.bind_unary(*op, expr)?,
            ast::Expr::Binary { op, left, right } => self.bind_binary(*op, left, right)?,
            ast::Expr::IsNull { expr, negated } => {
                let (x, _) = self.bind_expr(expr)?;
                (Expr::IsNull { expr: Box::new(x), negated: *negated }, SqlType::Bit, false)
            }
            ast::Expr::Between { expr, negated, low, high } => {
                let ge = ast::Expr::Binary { op: BinaryOp::GtEq, left: expr.clone(), right: low.clone() };
                let le = ast::Expr::Binary { op: BinaryOp::LtEq, left: expr.clone(), right: high.clone() };
                let (a, _) = self.bind_expr(&ge)?;
                let (b, _) = self.bind_expr(&le)?;
                let both = Expr::And(Box::new(a), Box::new(b));
                (if *negated { Expr::Not(Box::new(both)) } else { both }, SqlType::Bit, true)
            }
            ast::Expr::Like { expr, negated, pattern, escape } => {
                let s = |b: &mut Self, x: &ast::Expr| -> SqlResult<Expr> {
                    let (e, t) = b.bind_expr(x)?;
                    let to = if matches!(t, SqlType::NChar(_) | SqlType::NVarChar(_)) {
                        SqlType::NVarChar(tessera_access::row::MAX)
                    } else {
                        SqlType::VarChar(tessera_access::row::MAX)
                    };
                    convert(e, &t, &to)
                };
                let x = s(self, expr)?;
                let p = s(self, pattern)?;
                let esc = match escape {
                    Some(e) => Some(Box::new(s(self, e)?)),
                    None => None,
                };
                (
                    Expr::Like { expr: Box::new(x), pattern: Box::new(p), escape: esc, negated: *negated },
                    SqlType::Bit,
                    true,
                )
            }
            ast::Expr::InList { expr, negated, list } => {
                let (x, xt) = self.bind_expr(expr)?;
                let mut items = Vec::with_capacity(list.len());
                let mut t = xt;
                for i in list {
                    let (b, bt) = self.bind_expr(i)?;
                    if !is_null_literal(&b) {
                        t = types::common_type(&t, &bt)?;
                    }
                    items.push((b, bt));
                }
                let x = convert(x, &xt, &t)?;
                let items = items.into_iter().map(|(b, bt)| convert(b, &bt, &t)).collect::<SqlResult<Vec<_>>>()?;
                (Expr::InList { expr: Box::new(x), list: items, negated: *negated }, SqlType::Bit, true)
            }
            ast::Expr::InSubquery { expr, negated, query } => {
                let (x, xt) = self.bind_expr(expr)?;
                let (sub, correlated) = self.bind_subquery(query)?;
                let st = sub.columns[0].ty;
                let t = types::common_type(&xt, &st)?;
                let plan = project_cast(sub, &t)?;
                let kind = SubqueryKind::In { expr: convert(x, &xt, &t)?, negated: *negated };
                (Expr::Subquery(Box::new(Subquery { plan: Arc::new(plan), kind, correlated })), SqlType::Bit, true)
            }
            ast::Expr::Quantified { op, all, left, query } => {
                let (x, xt) = self.bind_expr(left)?;
                let (sub, correlated) = self.bind_subquery(query)?;
                let t = types::common_type(&xt, &sub.columns[0].ty)?;
                let plan = project_cast(sub, &t)?;
                let kind = SubqueryKind::Quantified { expr: convert(x, &xt, &t)?, op: *op, all: *all };
                (Expr::Subquery(Box::new(Subquery { plan: Arc::new(plan), kind, correlated })), SqlType::Bit, true)
            }
            ast::Expr::Exists(query) => {
                let (sub, correlated) = self.bind_subquery_any(query)?;
                let kind = SubqueryKind::Exists { negated: false };
                (Expr::Subquery(Box::new(Subquery { plan: Arc::new(sub.plan), kind, correlated })), SqlType::Bit, false)
            }
            ast::Expr::Subquery(query) => {
                let (sub, correlated) = self.bind_subquery(query)?;
                let ty = sub.columns[0].ty;
                let kind = SubqueryKind::Scalar;
                (Expr::Subquery(Box::new(Subquery { plan: Arc::new(sub.plan), kind, correlated })), ty, true)
            }
            ast::Expr::Case { operand, branches, otherwise } => {
                self.bind_case(operand.as_deref(), branches, otherwise.as_deref())?
            }
            ast::Expr::Cast { expr, ty, try_ } => self.bind_cast(expr, ty, None, *try_)?,
            ast::Expr::Convert { ty, expr, style, try_ } => self.bind_cast(expr, ty, style.as_deref(), *try_)?,
            ast::Expr::Function { name, args, distinct, star, over } => {
                self.bind_function(name, args, *distinct, *star, over.as_ref())?
            }
        })
    }

    fn bind_in_aggregate_input_error(&mut self, name: &ObjectName) -> SqlResult<(Expr, SqlType, bool)> {
        // A column in a grouped query that is neither grouped nor aggregated. Columns of
        // enclosing queries are still fine (outer references).
        let agg = self.agg.as_ref().expect("in aggregate context");
        if let Some(i) = Self::find_in_scope(&agg.input, name)? {
            return Err(not_grouped(agg.clause, &qualified_name(&agg.input.columns[i])));
        }
        self.resolve_column(name)
    }

    fn bind_unary(&mut self, op: UnaryOp, expr: &ast::Expr) -> SqlResult<(Expr, SqlType, bool)> {
        if op == UnaryOp::Minus {
            match expr {
                ast::Expr::Literal(Literal::Integer(t)) => {
                    let (v, ty) = integer_literal(&format!("-{t}"))?;
                    return Ok((Expr::Const(v), ty, false));
                }
                ast::Expr::Literal(Literal::Decimal(t)) => {
                    let (v, ty) = decimal_literal(t)?;
                    return Ok((Expr::Const(types::negate(&v, &ty)?), ty, false));
                }
                _ => {}
            }
        }
        if op == UnaryOp::Not {
            let x = self.bind_predicate(expr)?;
            return Ok((Expr::Not(Box::new(x)), SqlType::Bit, true));
        }
        let (x, t, n) = self.bind_expr_n(expr)?;
        if let Expr::Const(v) = &x {
            let v = match op {
                UnaryOp::Minus => types::negate(v, &t)?,
                UnaryOp::BitNot => types::bit_not(v, &t)?,
                _ => v.clone(),
            };
            return Ok((Expr::Const(v), t, n));
        }
        Ok((Expr::Unary { op, expr: Box::new(x), ty: t }, t, n))
    }

    fn bind_binary(&mut self, op: BinaryOp, left: &ast::Expr, right: &ast::Expr) -> SqlResult<(Expr, SqlType, bool)> {
        match op {
            BinaryOp::And | BinaryOp::Or => {
                let l = self.bind_predicate(left)?;
                let r = self.bind_predicate(right)?;
                let e = if op == BinaryOp::And {
                    Expr::And(Box::new(l), Box::new(r))
                } else {
                    Expr::Or(Box::new(l), Box::new(r))
                };
                Ok((e, SqlType::Bit, true))
            }
            BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq
            | BinaryOp::NotLt
            | BinaryOp::NotGt => {
                let (l, lt) = self.bind_expr(left)?;
                let (r, rt) = self.bind_expr(right)?;
                // SET ANSI_NULLS OFF: `x = NULL` is true when x is NULL.
                if !self.session.options.ansi_nulls && matches!(op, BinaryOp::Eq | BinaryOp::NotEq) {
                    let other = match (is_null_literal(&l), is_null_literal(&r)) {
                        (true, _) => Some(r.clone()),
                        (_, true) => Some(l.clone()),
                        _ => None,
                    };
                    if let Some(x) = other {
                        return Ok((
                            Expr::IsNull { expr: Box::new(x), negated: op == BinaryOp::NotEq },
                            SqlType::Bit,
                            false,
                        ));
                    }
                }
                let t = if is_null_literal(&l) {
                    rt
                } else if is_null_literal(&r) {
                    lt
                } else {
                    types::common_type(&lt, &rt)?
                };
                let l = convert(l, &lt, &t)?;
                let r = convert(r, &rt, &t)?;
                Ok((Expr::Compare { op, left: Box::new(l), right: Box::new(r) }, SqlType::Bit, true))
            }
            _ => {
                let (l, lt, ln) = self.bind_expr_n(left)?;
                let (r, rt, rn) = self.bind_expr_n(right)?;
                let lt = if is_null_literal(&l) { rt } else { lt };
                let rt = if is_null_literal(&r) { lt } else { rt };
                let (l, lt) = narrow_int_literal(l, lt, &rt);
                let (r, rt) = narrow_int_literal(r, rt, &lt);
                let plan = types::arithmetic_plan(op, &lt, &rt)?;
                let ty = plan.result;
                let mut l = convert(l, &lt, &plan.left)?;
                let mut r = convert(r, &rt, &plan.right)?;
                // SET CONCAT_NULL_YIELDS_NULL OFF: NULL concatenates as ''.
                let text =
                    matches!(ty, SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_));
                if op == BinaryOp::Add && text && !self.session.options.concat_null_yields_null {
                    l = Expr::Coalesce(vec![l, Expr::Const(Value::str(""))]);
                    r = Expr::Coalesce(vec![r, Expr::Const(Value::str(""))]);
                }
                if let (Expr::Const(a), Expr::Const(b)) = (&l, &r) {
                    // Constant folding: errors surface when the statement runs, not here.
                    if let Ok(v) = types::binary_op(op, a, b, &ty) {
                        return Ok((Expr::Const(v), ty, ln || rn));
                    }
                }
                Ok((Expr::Arith { op, left: Box::new(l), right: Box::new(r), ty }, ty, ln || rn))
            }
        }
    }

    fn bind_case(
        &mut self,
        operand: Option<&ast::Expr>,
        branches: &[(ast::Expr, ast::Expr)],
        otherwise: Option<&ast::Expr>,
    ) -> SqlResult<(Expr, SqlType, bool)> {
        let mut conds = Vec::with_capacity(branches.len());
        let mut results = Vec::with_capacity(branches.len() + 1);
        for (when, then) in branches {
            let cond = match operand {
                Some(op) => {
                    let eq = ast::Expr::Binary {
                        op: BinaryOp::Eq,
                        left: Box::new(op.clone()),
                        right: Box::new(when.clone()),
                    };
                    self.bind_expr(&eq)?.0
                }
                None => self.bind_predicate(when)?,
            };
            conds.push(cond);
            results.push(self.bind_expr(then)?);
        }
        let other = match otherwise {
            Some(o) => Some(self.bind_expr(o)?),
            None => None,
        };
        let ty = unify(results.iter().chain(other.iter()))?;
        let mut out = Vec::with_capacity(conds.len());
        for (c, (r, rt)) in conds.into_iter().zip(results) {
            out.push((c, convert(r, &rt, &ty)?));
        }
        let other = match other {
            Some((o, ot)) => Some(Box::new(convert(o, &ot, &ty)?)),
            None => None,
        };
        Ok((Expr::Case { branches: out, otherwise: other }, ty, true))
    }

    fn bind_cast(
        &mut self,
        expr: &ast::Expr,
        ty: &ast::TypeName,
        style: Option<&ast::Expr>,
        try_: bool,
    ) -> SqlResult<(Expr, SqlType, bool)> {
        let (x, from, n) = self.bind_expr_n(expr)?;
        let to = types::resolve_type(ty, true)?;
        let style = match style {
            None => None,
            Some(s) => match self.bind_expr(s)? {
                (Expr::Const(Value::Int(v)), _) => Some(v as i32),
                _ => {
                    return Err(SqlError::new(
                        8116,
                        "Argument data type is invalid for argument 3 of convert function.",
                    ))
                }
            },
        };
        // a conversion the chart forbids is a compile error, even in TRY_CAST (NULL converts)
        if !is_null_literal(&x) {
            types::check_explicit(&from, &to)?;
        }
        if let Expr::Const(v) = &x {
            if let Ok(c) = types::cast(v, &from, &to, style) {
                return Ok((Expr::Const(c), to, n));
            }
        }
        Ok((Expr::Cast { expr: Box::new(x), from, to, style, try_ }, to, n || try_))
    }

    fn bind_function(
        &mut self,
        name: &ObjectName,
        args: &[ast::Expr],
        distinct: bool,
        star: bool,
        over: Option<&ast::Window>,
    ) -> SqlResult<(Expr, SqlType, bool)> {
        let fname = name.name().value.to_uppercase();
        if name.0.len() > 1 {
            if let Some((db, m)) = self.module(name)? {
                if m.kind == ModuleKind::ScalarFunction {
                    return self.bind_scalar_function(&db, &m, args);
                }
            }
            return Err(SqlError::new(
                4121,
                format!("Cannot find either column \"{}\" or the user-defined function or aggregate \"{}\", or the name is ambiguous.", name.0[0].value, object_display(name)),
            ));
        }
        if let Some(func) = agg_func(&fname) {
            if over.is_some() {
                return Err(SqlError::new(
                    4108,
                    "Windowed functions can only appear in the SELECT or ORDER BY clauses.",
                ));
            }
            return self.bind_aggregate(func, &fname, args, distinct, star);
        }
        if over.is_some() || fname == "ROW_NUMBER" {
            return Err(SqlError::new(4108, "Windowed functions can only appear in the SELECT or ORDER BY clauses."));
        }
        let arity = |n: usize| -> SqlResult<()> {
            if args.len() != n {
                return Err(SqlError::new(
                    174,
                    format!("The {} function requires {n} argument(s).", fname.to_lowercase()),
                )
                .with_severity(15));
            }
            Ok(())
        };
        match fname.as_str() {
            "COALESCE" => {
                if args.len() < 2 {
                    return Err(
                        SqlError::new(189, "The coalesce function requires 2 to 254 arguments.").with_severity(15)
                    );
                }
                let bound = args.iter().map(|a| self.bind_expr(a)).collect::<SqlResult<Vec<_>>>()?;
                let ty = unify(bound.iter())?;
                let args = bound.into_iter().map(|(e, t)| convert(e, &t, &ty)).collect::<SqlResult<Vec<_>>>()?;
                return Ok((Expr::Coalesce(args), ty, true));
            }
            "ISNULL" => {
                arity(2)?;
                let (a, at) = self.bind_expr(&args[0])?;
                let (b, bt) = self.bind_expr(&args[1])?;
                let ty = if is_null_literal(&a) { bt } else { at };
                let b = convert(b, &bt, &ty)?;
                return Ok((Expr::Coalesce(vec![a, b]), ty, true));
            }
            "NULLIF" => {
                arity(2)?;
                let (a, at) = self.bind_expr(&args[0])?;
                let (b, bt) = self.bind_expr(&args[1])?;
                let t = types::common_type(&at, &bt)?;
                let cond = Expr::Compare {
                    op: BinaryOp::Eq,
                    left: Box::new(convert(a.clone(), &at, &t)?),
                    right: Box::new(convert(b, &bt, &t)?),
                };
                return Ok((
                    Expr::Case { branches: vec![(cond, Expr::Const(Value::Null))], otherwise: Some(Box::new(a)) },
                    at,
                    true,
                ));
            }
            "IIF" => {
                arity(3)?;
                let c = self.bind_predicate(&args[0])?;
                let t = self.bind_expr(&args[1])?;
                let f = self.bind_expr(&args[2])?;
                let ty = unify([&t, &f].into_iter())?;
                let then = convert(t.0, &t.1, &ty)?;
                let other = convert(f.0, &f.1, &ty)?;
                return Ok((Expr::Case { branches: vec![(c, then)], otherwise: Some(Box::new(other)) }, ty, true));
            }
            "DB_NAME" | "DB_ID" | "OBJECT_ID" | "OBJECT_NAME" | "SCHEMA_NAME" | "COL_LENGTH" | "TYPE_NAME"
            | "TYPE_ID" | "IDENT_CURRENT" | "SCOPE_IDENTITY" | "SERVERPROPERTY" | "DATABASEPROPERTYEX"
            | "XACT_STATE" | "ERROR_NUMBER" | "ERROR_MESSAGE" | "ERROR_SEVERITY" | "ERROR_STATE" | "ERROR_LINE"
            | "ERROR_PROCEDURE" | "SUSER_NAME" | "SUSER_SNAME" | "ORIGINAL_LOGIN" | "USER_NAME" | "HOST_NAME"
            | "APP_NAME" | "IS_SRVROLEMEMBER" | "HAS_DBACCESS" | "SUSER_ID" | "SUSER_SID" => {
                let (func, ty) = session_function(&fname).expect("listed");
                let mut bound = Vec::with_capacity(args.len());
                for a in args {
                    let (e, t) = self.bind_expr(a)?;
                    // Names are passed as nvarchar, ids as int.
                    let to = if matches!(
                        t,
                        SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_)
                    ) {
                        SqlType::NVarChar(tessera_access::row::MAX)
                    } else if matches!(t, SqlType::Binary(_) | SqlType::VarBinary(_)) {
                        // SUSER_SNAME(sid)
                        SqlType::VarBinary(tessera_access::row::MAX)
                    } else {
                        SqlType::BigInt
                    };
                    bound.push(convert(e, &t, &to)?);
                }
                return Ok((Expr::Session { func, args: bound }, ty, true));
            }
            _ => {}
        }
        let mut bound = Vec::with_capacity(args.len());
        let mut arg_types = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let is_part = i == 0
                && matches!(
                    fname.as_str(),
                    "DATEADD" | "DATEDIFF" | "DATEDIFF_BIG" | "DATEPART" | "DATENAME" | "DATETRUNC"
                );
            if is_part {
                if let ast::Expr::Column(part) = a {
                    bound.push(Expr::Const(Value::str(&part.name().value)));
                    arg_types.push(SqlType::VarChar(30));
                    continue;
                }
            }
            let (e, t) = self.bind_expr(a)?;
            bound.push(e);
            arg_types.push(t);
        }
        match types::function_type(&fname, &arg_types)? {
            Some(ty) => {
                // STR's length is an argument: a constant one gives the result its size.
                let ty = match (fname.as_str(), bound.get(1)) {
                    ("STR", Some(Expr::Const(Value::Int(n)))) if (1..=8000).contains(n) => SqlType::VarChar(*n as u16),
                    ("STR", None) => SqlType::VarChar(10),
                    _ => ty,
                };
                // Not folded into constants: results that change per call, or (DATEPART's
                // weekday) depend on session settings a cached plan would not see.
                let nondeterministic = matches!(
                    fname.as_str(),
                    "DATEPART"
                        | "RAND"
                        | "NEWID"
                        | "GETDATE"
                        | "SYSDATETIME"
                        | "GETUTCDATE"
                        | "SYSUTCDATETIME"
                        | "CURRENT_TIMESTAMP"
                        | "SYSDATETIMEOFFSET"
                );
                let all_const = bound.iter().all(|b| matches!(b, Expr::Const(_)));
                if all_const && !nondeterministic {
                    let vals: Vec<Value> = bound
                        .iter()
                        .map(|b| match b {
                            Expr::Const(v) => v.clone(),
                            _ => unreachable!("all constant"),
                        })
                        .collect();
                    // Constant folding: deterministic functions of constants (a fresh
                    // context is enough, they use neither clock nor generator).
                    let mut fctx = types::FunctionContext::new();
                    if let Ok(v) = types::call_function(&fname, &vals, &arg_types, &ty, &mut fctx) {
                        return Ok((Expr::Const(v), ty, true));
                    }
                }
                Ok((Expr::Func { name: fname, args: bound, arg_types, ty }, ty, true))
            }
            None => {
                Err(SqlError::new(195, format!("'{}' is not a recognized built-in function name.", name.name().value))
                    .with_severity(15))
            }
        }
    }

    fn bind_scalar_function(
        &mut self,
        db: &str,
        m: &Arc<Module>,
        args: &[ast::Expr],
    ) -> SqlResult<(Expr, SqlType, bool)> {
        let cached = self.definition(db, m)?;
        let Some(ast::StatementKind::CreateFunction(cf)) = cached.batch.statements.first().map(|s| &s.kind) else {
            return Err(invalid_object(&m.name));
        };
        let ast::FunctionReturns::Scalar { ty, .. } = &cf.returns else {
            return Err(invalid_object(&m.name));
        };
        let ty = types::resolve_type(ty, false)?;
        let bound = self.function_arguments(&m.name, &cf.params, args)?;
        let call = crate::plan::UserCall {
            db: db.to_string(),
            name: m.name.clone(),
            text: Arc::from(m.text.as_str()),
            arg_types: bound.iter().map(|b| b.1).collect(),
            ty,
        };
        Ok((Expr::UserFunction { call: Arc::new(call), args: bound.into_iter().map(|b| b.0).collect() }, ty, true))
    }

    fn bind_aggregate(
        &mut self,
        func: AggFunc,
        fname: &str,
        args: &[ast::Expr],
        distinct: bool,
        star: bool,
    ) -> SqlResult<(Expr, SqlType, bool)> {
        let Some(mut agg) = self.agg.take() else {
            return Err(SqlError::new(
                147,
                "An aggregate may not appear in the WHERE clause unless it is in a subquery contained in a HAVING clause or a select list, and the column being aggregated is an outer reference.",
            )
            .with_severity(15));
        };
        // The argument is computed from the aggregate's input rows.
        let result = (|| -> SqlResult<AggCall> {
            if star {
                if func != AggFunc::Count && func != AggFunc::CountBig {
                    return Err(SqlError::new(102, "Incorrect syntax near '*'.").with_severity(15));
                }
                let ty = if func == AggFunc::Count { SqlType::Int } else { SqlType::BigInt };
                return Ok(AggCall { func, arg: None, arg_type: SqlType::Int, distinct: false, ty });
            }
            if args.len() == 1 && (contains_aggregate(&args[0]) || contains_subquery(&args[0])) {
                return Err(SqlError::new(
                    130,
                    "Cannot perform an aggregate function on an expression containing an aggregate or a subquery.",
                ));
            }
            if args.len() != 1 {
                return Err(SqlError::new(
                    174,
                    format!("The {} function requires 1 argument(s).", fname.to_lowercase()),
                )
                .with_severity(15));
            }
            let (arg, arg_type) = self.with_scope(agg.input.clone(), |b| b.bind_expr(&args[0]))?;
            let ty = match func {
                AggFunc::Count => SqlType::Int,
                AggFunc::CountBig => SqlType::BigInt,
                AggFunc::Min | AggFunc::Max => arg_type,
                AggFunc::Sum | AggFunc::Avg => sum_type(func, &arg_type, fname)?,
            };
            Ok(AggCall { func, arg: Some(arg), arg_type, distinct, ty })
        })();
        let call = match result {
            Ok(c) => c,
            Err(e) => {
                self.agg = Some(agg);
                return Err(e);
            }
        };
        let ty = call.ty;
        let index = agg.group_asts.len() + agg.calls.len();
        agg.calls.push(call);
        self.agg = Some(agg);
        Ok((Expr::Column(index), ty, true))
    }

    fn bind_subquery_any(&mut self, query: &ast::Query) -> SqlResult<(BoundQuery, bool)> {
        check_nested_order_by(query)?;
        self.scopes.push(Scope::default());
        let saved_agg = self.agg.take();
        let saved_ctes = self.ctes.len();
        let bound = self.bind_query(query);
        self.ctes.truncate(saved_ctes);
        self.agg = saved_agg;
        let scope = self.scopes.pop().expect("pushed above");
        Ok((bound?, scope.correlated))
    }

    /// Runs `f` with the innermost scope replaced by `scope`, keeping what `f` learnt
    /// about correlation.
    pub fn with_scope<T>(&mut self, scope: Scope, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = std::mem::replace(self.scopes.last_mut().expect("a scope"), scope);
        let out = f(self);
        let used = std::mem::replace(self.scopes.last_mut().expect("a scope"), saved);
        self.scopes.last_mut().expect("a scope").correlated |= used.correlated;
        out
    }

    fn bind_subquery(&mut self, query: &ast::Query) -> SqlResult<(BoundQuery, bool)> {
        let (b, c) = self.bind_subquery_any(query)?;
        if b.columns.len() != 1 {
            return Err(SqlError::new(
                116,
                "Only one expression can be specified in the select list when the subquery is not introduced with EXISTS.",
            ));
        }
        Ok((b, c))
    }

    // ---- queries ----------------------------------------------------------------------

    /// Makes a statement's CTEs visible to what is bound next (recursive ones limited by
    /// `max_recursion` when given, else by the statement's limit).
    pub fn bind_ctes(&mut self, with: &[ast::Cte], max_recursion: Option<u16>) -> SqlResult<()> {
        if let Some(limit) = max_recursion {
            self.max_recursion = limit;
        }
        for cte in with {
            check_nested_order_by(&cte.query)?;
            let bound = match self.bind_recursive_cte(cte)? {
                Some(bound) => bound,
                None => {
                    let mut bound = self.bind_query(&cte.query)?;
                    name_cte_columns(&mut bound.columns, cte)?;
                    bound
                }
            };
            check_derived_columns(&bound.columns, &cte.name.value)?;
            if with
                .iter()
                .take_while(|c| !std::ptr::eq(*c, cte))
                .any(|c| c.name.value.eq_ignore_ascii_case(&cte.name.value))
            {
                return Err(SqlError::new(
                    239,
                    format!("Duplicate common table expression name '{}' was specified.", cte.name.value),
                ));
            }
            self.ctes.push((cte.name.value.to_lowercase(), bound));
        }
        Ok(())
    }

    pub fn bind_query(&mut self, q: &ast::Query) -> SqlResult<BoundQuery> {
        self.bind_ctes(&q.with, q.max_recursion)?;
        let order_by = &q.order_by;
        let has_paging = q.offset.is_some() || q.fetch.is_some();
        match &q.body {
            ast::SetExpr::Select(s) if !order_by.is_empty() || has_paging => {
                self.bind_select(s, order_by, q.offset.as_ref(), q.fetch.as_ref())
            }
            body => {
                let mut bound = self.bind_set_expr(body)?;
                if !order_by.is_empty() {
                    bound = self.order_set_result(bound, order_by)?;
                }
                if has_paging {
                    bound.plan = self.paging(bound.plan, q.offset.as_ref(), q.fetch.as_ref())?;
                }
                Ok(bound)
            }
        }
    }

    fn paging(&mut self, plan: Plan, offset: Option<&ast::Expr>, fetch: Option<&ast::Expr>) -> SqlResult<Plan> {
        // Constant counts are checked when the query compiles, as SQL Server does.
        let offset = match offset {
            Some(o) => self.bind_count(o)?,
            None => Expr::Const(Value::Int(0)),
        };
        if let Expr::Const(v) = &offset {
            crate::plan::offset_count(v)?;
        }
        let fetch = match fetch {
            Some(f) => Some(self.bind_count(f)?),
            None => None,
        };
        if let Some(Expr::Const(v)) = &fetch {
            crate::plan::fetch_count(v)?;
        }
        Ok(Plan::Offset { input: Box::new(plan), offset, fetch })
    }

    fn bind_count(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        self.scopes.push(Scope::default());
        let r = self.bind_expr(e);
        self.scopes.pop();
        let (x, t) = r?;
        convert(x, &t, &SqlType::BigInt)
    }

    /// ORDER BY over a UNION (or other set operation): by output column name or position.
    fn order_set_result(&mut self, bound: BoundQuery, order_by: &[ast::OrderItem]) -> SqlResult<BoundQuery> {
        let scope = Scope {
            columns: bound
                .columns
                .iter()
                .map(|c| ScopeColumn { qualifier: None, name: c.name.clone(), ty: c.ty, nullable: c.nullable })
                .collect(),
            correlated: false,
        };
        let keys = self.with_scope(scope, |b| -> SqlResult<Vec<SortKey>> {
            let mut keys = Vec::new();
            for item in order_by {
                let e = match &item.expr {
                    ast::Expr::Literal(Literal::Integer(n)) => {
                        let i: usize = n.parse().unwrap_or(0);
                        if i == 0 || i > bound.columns.len() {
                            return Err(SqlError::new(108, format!("The ORDER BY position number {n} is out of range of the number of items in the select list.")).with_severity(15));
                        }
                        Expr::Column(i - 1)
                    }
                    e => b.bind_expr(e).map_err(|err| {
                        if err.number == 207 {
                            SqlError::new(104, "ORDER BY items must appear in the select list if the statement contains a UNION, INTERSECT or EXCEPT operator.").with_severity(15)
                        } else {
                            err
                        }
                    })?.0,
                };
                keys.push(SortKey { expr: e, descending: item.descending });
            }
            Ok(keys)
        })?;
        Ok(BoundQuery { plan: Plan::Sort { input: Box::new(bound.plan), keys }, columns: bound.columns })
    }

    fn bind_set_expr(&mut self, body: &ast::SetExpr) -> SqlResult<BoundQuery> {
        match body {
            ast::SetExpr::Select(s) => self.bind_select(s, &[], None, None),
            ast::SetExpr::Query(q) => self.bind_query(q),
            ast::SetExpr::Values(rows) => self.bind_values(rows),
            ast::SetExpr::SetOperation { op, all, left, right } => {
                let l = self.bind_set_expr(left)?;
                let r = self.bind_set_expr(right)?;
                combine_set_operands(*op, *all, l, r)
            }
        }
    }

    /// A CTE whose UNION ALL chain has members that reference the CTE itself: anchor
    /// members (those before the first self-reference) run once, then the recursive
    /// members run on the rows of the previous round (the work table) until a round
    /// yields nothing. `None` when the CTE is not recursive.
    fn bind_recursive_cte(&mut self, cte: &ast::Cte) -> SqlResult<Option<BoundQuery>> {
        let q = &cte.query;
        if !q.with.is_empty() || !q.order_by.is_empty() || q.offset.is_some() {
            return Ok(None);
        }
        let mut members = Vec::new();
        flatten_set_chain(&q.body, None, &mut members);
        if members.len() < 2 {
            return Ok(None);
        }
        let name = &cte.name.value;
        let mut anchor = self.bind_set_expr(members[0].1)?;
        name_cte_columns(&mut anchor.columns, cte)?;
        let id = self.next_work_table;
        self.next_work_table += 1;
        let columns = anchor.columns.clone();
        self.ctes.push((name.to_lowercase(), BoundQuery { plan: Plan::WorkTable { id }, columns }));
        let members_bound = self.bind_cte_members(name, &members[1..], anchor, id);
        self.ctes.pop();
        let (anchor, recursive, nullable) = members_bound?;
        let Some(recursive) = recursive else {
            return Ok(None);
        };
        let mut columns = anchor.columns;
        for (c, n) in columns.iter_mut().zip(nullable) {
            c.nullable = n;
        }
        Ok(Some(BoundQuery {
            plan: Plan::RecursiveCte {
                id,
                anchor: Box::new(anchor.plan),
                recursive: Box::new(recursive),
                max_recursion: self.max_recursion,
            },
            columns,
        }))
    }

    /// Binds the members after a recursive CTE's first: further anchors (combined with
    /// the anchor, the work table's columns updated), then recursive members (UNION ALL'd).
    /// Returns the anchor, the recursive part if any, and each column's nullability.
    fn bind_cte_members(
        &mut self,
        name: &str,
        members: &[(Option<(ast::SetOperator, bool)>, &ast::SetExpr)],
        mut anchor: BoundQuery,
        id: usize,
    ) -> SqlResult<(BoundQuery, Option<Plan>, Vec<bool>)> {
        let mut recursive: Option<Plan> = None;
        let mut nullable: Vec<bool> = anchor.columns.iter().map(|c| c.nullable).collect();
        for &(connector, member) in members {
            let before = self.work_table_uses;
            let bound = self.bind_set_expr(member)?;
            let uses = self.work_table_uses - before;
            let (op, all) = connector.expect("members after the first have a connector");
            if uses == 0 && recursive.is_none() {
                let names: Vec<String> = anchor.columns.iter().map(|c| c.name.clone()).collect();
                anchor = combine_set_operands(op, all, anchor, bound)?;
                for (c, n) in anchor.columns.iter_mut().zip(names) {
                    c.name = n;
                }
                nullable = anchor.columns.iter().map(|c| c.nullable).collect();
                let columns = anchor.columns.clone();
                self.ctes.last_mut().expect("the work table").1 = BoundQuery { plan: Plan::WorkTable { id }, columns };
                continue;
            }
            check_recursive_member(name, &anchor.columns, &bound, op, all, uses)?;
            for (n, c) in nullable.iter_mut().zip(&bound.columns) {
                *n |= c.nullable;
            }
            recursive = Some(match recursive.take() {
                None => bound.plan,
                Some(previous) => Plan::SetOp {
                    op: ast::SetOperator::Union,
                    all: true,
                    left: Box::new(previous),
                    right: Box::new(bound.plan),
                },
            });
        }
        Ok((anchor, recursive, nullable))
    }

    fn bind_values(&mut self, rows: &[Vec<ast::Expr>]) -> SqlResult<BoundQuery> {
        let width = rows.first().map_or(0, Vec::len);
        let mut bound_rows = Vec::with_capacity(rows.len());
        for r in rows {
            if r.len() != width {
                return Err(SqlError::new(
                    10709,
                    "The number of columns for each row in a table value constructor must be the same.",
                ));
            }
            bound_rows.push(r.iter().map(|e| self.bind_expr(e)).collect::<SqlResult<Vec<_>>>()?);
        }
        let mut columns = Vec::with_capacity(width);
        for c in 0..width {
            let ty = unify(bound_rows.iter().map(|r| &r[c]))?;
            columns.push(OutputColumn { name: String::new(), ty, nullable: true });
        }
        let mut out = Vec::with_capacity(bound_rows.len());
        for r in bound_rows {
            out.push(
                r.into_iter().zip(&columns).map(|((e, t), c)| convert(e, &t, &c.ty)).collect::<SqlResult<Vec<_>>>()?,
            );
        }
        Ok(BoundQuery { plan: Plan::Values(out), columns })
    }

    fn bind_select(
        &mut self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
        offset: Option<&ast::Expr>,
        fetch: Option<&ast::Expr>,
    ) -> SqlResult<BoundQuery> {
        // FROM and WHERE.
        let (mut plan, scope) = self.bind_from_where(&s.from, s.selection.as_ref(), None)?;
        let columns =
            self.with_scope(scope.clone(), |b| b.bind_select_rest(s, order_by, offset, fetch, &mut plan, scope))?;
        Ok(BoundQuery { plan, columns })
    }

    fn bind_select_rest(
        &mut self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
        offset: Option<&ast::Expr>,
        fetch: Option<&ast::Expr>,
        plan: &mut Plan,
        scope: Scope,
    ) -> SqlResult<Vec<OutputColumn>> {
        let uses_aggregates = !s.group_by.is_empty()
            || s.having.is_some()
            || s.items.iter().any(|i| match i {
                ast::SelectItem::Expr { expr, .. } => contains_aggregate(expr),
                ast::SelectItem::Assign { value, .. } => contains_aggregate(value),
                _ => false,
            })
            || order_by.iter().any(|o| contains_aggregate(&o.expr));
        if uses_aggregates {
            let mut group_bound = Vec::new();
            let mut group_types = Vec::new();
            for g in &s.group_by {
                if contains_aggregate(g) || contains_subquery(g) {
                    return Err(SqlError::new(
                        144,
                        "Cannot use an aggregate or a subquery in an expression used for the group by list of a GROUP BY clause.",
                    )
                    .with_severity(15));
                }
                let (e, t) = self.bind_expr(g)?;
                group_bound.push(e);
                group_types.push(t);
            }
            self.agg = Some(AggContext {
                group_asts: s.group_by.clone(),
                group_types: group_types.clone(),
                calls: Vec::new(),
                input: scope.clone(),
                clause: AggClause::Select,
            });
        }
        let result = self.bind_projection(s, order_by, offset, fetch, plan, &scope, uses_aggregates);
        self.agg = None;
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn bind_projection(
        &mut self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
        offset: Option<&ast::Expr>,
        fetch: Option<&ast::Expr>,
        plan: &mut Plan,
        scope: &Scope,
        aggregated: bool,
    ) -> SqlResult<Vec<OutputColumn>> {
        // Select list.
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        let mut window: Option<(usize, Vec<ast::Expr>, Vec<ast::OrderItem>)> = None;
        // Output column of each select item that is a single expression.
        let mut item_columns: Vec<Option<usize>> = Vec::new();
        for item in &s.items {
            item_columns.push(matches!(item, ast::SelectItem::Expr { .. }).then_some(exprs.len()));
            match item {
                ast::SelectItem::Wildcard => {
                    if s.from.is_empty() {
                        return Err(SqlError::new(263, "Must specify table to select from.").with_severity(16));
                    }
                    if aggregated {
                        let first = scope.columns.first().map(qualified_name).unwrap_or_default();
                        return Err(not_grouped(AggClause::Select, &first));
                    }
                    for (i, c) in scope.columns.iter().enumerate() {
                        exprs.push(Expr::Column(i));
                        columns.push(OutputColumn { name: c.name.clone(), ty: c.ty, nullable: c.nullable });
                    }
                }
                ast::SelectItem::QualifiedWildcard(q) => {
                    let qual = q.name().value.to_lowercase();
                    let mut any = false;
                    for (i, c) in scope.columns.iter().enumerate() {
                        if c.qualifier.as_deref() == Some(&qual) {
                            any = true;
                            exprs.push(Expr::Column(i));
                            columns.push(OutputColumn { name: c.name.clone(), ty: c.ty, nullable: c.nullable });
                        }
                    }
                    if !any {
                        return Err(SqlError::new(
                            107,
                            format!(
                                "The column prefix '{}' does not match with a table name or alias name used in the query.",
                                object_display(q)
                            ),
                        )
                        .with_severity(15));
                    }
                }
                ast::SelectItem::Expr { expr, alias } => {
                    if let ast::Expr::Function { name, over: Some(w), .. } = expr {
                        if name.name().is("ROW_NUMBER") {
                            if w.order_by.is_empty() {
                                return Err(SqlError::new(
                                    4112,
                                    "The function 'ROW_NUMBER' must have an OVER clause with ORDER BY.",
                                )
                                .with_severity(15));
                            }
                            if window.is_some() {
                                return Err(SqlError::new(4108, "Only one ROW_NUMBER() per query is supported."));
                            }
                            window = Some((exprs.len(), w.partition_by.clone(), w.order_by.clone()));
                            exprs.push(Expr::Const(Value::Null));
                            columns.push(OutputColumn {
                                name: alias.as_ref().map(|a| a.value.clone()).unwrap_or_default(),
                                ty: SqlType::BigInt,
                                nullable: false,
                            });
                            continue;
                        }
                    }
                    let (e, t, n) = self.bind_expr_n(expr)?;
                    exprs.push(e);
                    let name = alias.as_ref().map(|a| a.value.clone()).unwrap_or_else(|| implicit_name(expr));
                    columns.push(OutputColumn { name, ty: t, nullable: n });
                }
                ast::SelectItem::Assign { .. } => {
                    return Err(SqlError::new(141, "A SELECT statement that assigns a value to a variable must not be combined with data-retrieval operations.").with_severity(15));
                }
            }
        }
        // HAVING (binds aggregates it uses).
        if let Some(a) = &mut self.agg {
            a.clause = AggClause::Having;
        }
        let having = match &s.having {
            Some(h) => Some(self.bind_predicate(h)?),
            None => None,
        };
        // ORDER BY: select-list aliases and positions, or any expression of the FROM rows.
        let mut sort_keys = Vec::new();
        let visible = exprs.len();
        if let Some(a) = &mut self.agg {
            a.clause = AggClause::OrderBy;
        }
        for item in order_by {
            let e = self.bind_order_item(&item.expr, &columns, &s.items, &item_columns, &mut exprs)?;
            sort_keys.push(SortKey { expr: e, descending: item.descending });
        }
        if s.distinct && exprs.len() > visible {
            return Err(SqlError::new(
                145,
                "ORDER BY items must appear in the select list if SELECT DISTINCT is specified.",
            )
            .with_severity(15));
        }
        // TOP
        let top = match &s.top {
            Some(t) => {
                let count = self.bind_count_top(&t.count, t.percent)?;
                Some((count, t.percent, t.with_ties))
            }
            None => None,
        };
        if top.as_ref().is_some_and(|t| t.2) && order_by.is_empty() {
            return Err(SqlError::new(
                1062,
                "The TOP N WITH TIES clause is not allowed without a corresponding ORDER BY clause.",
            )
            .with_severity(15));
        }
        if top.is_some() && (offset.is_some() || fetch.is_some()) {
            return Err(SqlError::new(10741, "A TOP can not be used in the same query or sub-query as a OFFSET.")
                .with_severity(15));
        }
        // Assemble.
        let mut p = std::mem::replace(plan, Plan::Values(Vec::new()));
        if let Some(agg) = self.agg.take() {
            let group_by: Vec<Expr> = {
                // Group expressions were bound in the input scope above.
                let saved = self.agg.take();
                let mut v = Vec::new();
                for g in &agg.group_asts {
                    v.push(self.bind_expr(g)?.0);
                }
                self.agg = saved;
                v
            };
            p = Plan::Aggregate { input: Box::new(p), group_by, aggregates: agg.calls.clone() };
            self.agg = Some(agg);
        }
        if let Some(h) = having {
            p = Plan::Filter { input: Box::new(p), predicate: h };
        }
        if let Some((pos, partition, order)) = window {
            let (wplan, col) = self.bind_row_number(p, &partition, &order, scope)?;
            p = wplan;
            exprs[pos] = Expr::Column(col);
        }
        p = Plan::Project { input: Box::new(p), exprs: exprs.clone() };
        if s.distinct {
            p = Plan::Distinct { input: Box::new(p) };
        }
        if !sort_keys.is_empty() {
            let ties: Vec<Expr> = sort_keys.iter().map(|k| k.expr.clone()).collect();
            p = Plan::Sort { input: Box::new(p), keys: sort_keys };
            if let Some((count, percent, with_ties)) = top.clone() {
                p = Plan::Top { input: Box::new(p), count, percent, ties: if with_ties { ties } else { Vec::new() } };
            }
        } else if let Some((count, percent, _)) = top.clone() {
            p = Plan::Top { input: Box::new(p), count, percent, ties: Vec::new() };
        }
        if offset.is_some() || fetch.is_some() {
            if order_by.is_empty() {
                return Err(
                    SqlError::new(153, "Invalid usage of the option NEXT in the FETCH statement.").with_severity(15)
                );
            }
            p = self.paging(p, offset, fetch)?;
        }
        if exprs.len() > visible {
            p = Plan::Project { input: Box::new(p), exprs: (0..visible).map(Expr::Column).collect() };
        }
        *plan = p;
        Ok(columns)
    }

    fn bind_row_number(
        &mut self,
        input: Plan,
        partition: &[ast::Expr],
        order: &[ast::OrderItem],
        scope: &Scope,
    ) -> SqlResult<(Plan, usize)> {
        if self.agg.is_some() {
            return Err(SqlError::new(4108, "ROW_NUMBER() over grouped queries is not supported."));
        }
        let mut part = Vec::new();
        for e in partition {
            part.push(self.bind_expr(e)?.0);
        }
        let mut keys = Vec::new();
        for o in order {
            keys.push(SortKey { expr: self.bind_expr(&o.expr)?.0, descending: o.descending });
        }
        let col = scope.columns.len();
        Ok((Plan::RowNumber { input: Box::new(input), partition: part, order: keys }, col))
    }

    fn bind_count_top(&mut self, e: &ast::Expr, percent: bool) -> SqlResult<Expr> {
        self.scopes.push(Scope::default());
        let r = self.bind_expr(e);
        self.scopes.pop();
        let (x, t) = r?;
        if percent {
            let x = convert(x, &t, &SqlType::Float)?;
            if let Expr::Const(Value::Float(p)) = &x {
                if !(0.0..=100.0).contains(p) {
                    return Err(SqlError::new(1031, "Percent values must be between 0 and 100.").with_severity(15));
                }
            }
            Ok(x)
        } else {
            convert(x, &t, &SqlType::BigInt)
        }
    }

    /// Binds an ORDER BY item of a SELECT: a position, an output column name, a select
    /// item's expression, or any other expression (appended to the projection as a hidden
    /// column).
    fn bind_order_item(
        &mut self,
        e: &ast::Expr,
        columns: &[OutputColumn],
        items: &[ast::SelectItem],
        item_columns: &[Option<usize>],
        exprs: &mut Vec<Expr>,
    ) -> SqlResult<Expr> {
        if let ast::Expr::Literal(Literal::Integer(n)) = e {
            let i: usize = n.parse().unwrap_or(0);
            if i == 0 || i > columns.len() {
                return Err(SqlError::new(
                    108,
                    format!(
                        "The ORDER BY position number {n} is out of range of the number of items in the select list."
                    ),
                )
                .with_severity(15));
            }
            return Ok(Expr::Column(i - 1));
        }
        if let ast::Expr::Column(name) = e {
            if name.0.len() == 1 {
                if let Some(i) = columns.iter().position(|c| c.name.eq_ignore_ascii_case(&name.0[0].value)) {
                    return Ok(Expr::Column(i));
                }
            }
        }
        for (item, col) in items.iter().zip(item_columns) {
            if let (ast::SelectItem::Expr { expr, .. }, Some(col)) = (item, col) {
                if expr == e {
                    return Ok(Expr::Column(*col));
                }
            }
        }
        let (x, _) = self.bind_expr(e)?;
        exprs.push(x);
        Ok(Expr::Column(exprs.len() - 1))
    }

    // ---- FROM -------------------------------------------------------------------------

    /// Binds FROM and WHERE into a plan over the combined row of all sources, and the
    /// scope describing that row. `key_target` names (alias or table name) the table whose
    /// storage key UPDATE/DELETE need: it gets a hidden trailing key column.
    pub fn bind_from_where(
        &mut self,
        from: &[ast::TableRef],
        selection: Option<&ast::Expr>,
        key_target: Option<&str>,
    ) -> SqlResult<(Plan, Scope)> {
        if from.is_empty() {
            let scope = Scope::default();
            let pred = self.with_scope(scope.clone(), |b| selection.map(|s| b.bind_predicate(s)).transpose())?;
            let mut plan = Plan::Values(vec![Vec::new()]);
            if let Some(p) = pred {
                plan = Plan::Filter { input: Box::new(plan), predicate: p };
            }
            return Ok((plan, scope));
        }
        self.key_target = key_target.map(str::to_lowercase);
        let mut scope = Scope::default();
        let mut node: Option<FromNode> = None;
        for t in from {
            let right = self.bind_table_ref(t, &mut scope)?;
            node = Some(match node {
                None => right,
                Some(left) => {
                    let offset = left.offset();
                    let width = left.width() + right.width();
                    FromNode::Join {
                        left: Box::new(left),
                        right: Box::new(right),
                        kind: JoinKind::Cross,
                        on: Vec::new(),
                        offset,
                        width,
                    }
                }
            });
        }
        self.key_target = None;
        let mut node = node.expect("FROM has a table");
        let mut residual = Vec::new();
        if let Some(sel) = selection {
            let pred = self.with_scope(scope.clone(), |b| b.bind_predicate(sel))?;
            let mut conj = Vec::new();
            split_conjuncts(pred, &mut conj);
            for c in conj {
                if let Some(c) = push_down(&mut node, c) {
                    residual.push(c);
                }
            }
        }
        let mut plan = self.build(node)?;
        if let Some(pred) = conjoin(residual) {
            plan = Plan::Filter { input: Box::new(plan), predicate: pred };
        }
        Ok((plan, scope))
    }

    fn bind_table_ref(&mut self, t: &ast::TableRef, scope: &mut Scope) -> SqlResult<FromNode> {
        let offset = scope.columns.len();
        match t {
            ast::TableRef::Named { name, alias, hints } => {
                let qualifier = alias.as_ref().unwrap_or(name.name()).value.to_lowercase();
                if scope.columns.iter().any(|c| c.qualifier.as_deref() == Some(qualifier.as_str())) {
                    return Err(match alias {
                        Some(a) => duplicate_correlation(&a.value),
                        None => {
                            let shown = object_display(name);
                            SqlError::new(
                                1013,
                                format!("The objects \"{shown}\" and \"{shown}\" in the FROM clause have the same exposed names. Use correlation names to distinguish them."),
                            )
                            .with_severity(15)
                        }
                    });
                }
                // CTEs first, then system views, then tables.
                if name.0.len() == 1 {
                    let lower = name.name().value.to_lowercase();
                    if let Some((_, cte)) = self.ctes.iter().rev().find(|(n, _)| *n == lower) {
                        let cte = cte.clone();
                        if matches!(cte.plan, Plan::WorkTable { .. }) {
                            self.work_table_uses += 1;
                        }
                        return Ok(self.leaf_plan(cte, qualifier, scope, offset));
                    }
                }
                if let Some(view) = sysviews::lookup(name) {
                    let bound = BoundQuery { plan: Plan::Values(Vec::new()), columns: view.columns() };
                    let plan = sysviews::plan(view, self.qualify(name)?.0);
                    return Ok(self.leaf_plan(BoundQuery { plan, columns: bound.columns }, qualifier, scope, offset));
                }
                if let Some((db, m)) = self.module(name)? {
                    if m.kind == ModuleKind::View {
                        let bound = self.bind_view(&db, &m)?;
                        return Ok(self.leaf_plan(bound, qualifier, scope, offset));
                    }
                }
                let rt = self.resolve_table(name)?;
                let hints = LockHints::parse(hints)?;
                for c in &rt.table.columns {
                    scope.columns.push(ScopeColumn {
                        qualifier: Some(qualifier.clone()),
                        name: c.name.clone(),
                        ty: c.ty,
                        nullable: c.nullable,
                    });
                }
                let mut width = rt.table.columns.len();
                let with_key = self.key_target.as_deref() == Some(qualifier.as_str());
                if with_key {
                    scope.columns.push(ScopeColumn {
                        qualifier: Some(qualifier.clone()),
                        name: KEY_COLUMN.into(),
                        ty: SqlType::VarBinary(900),
                        nullable: false,
                    });
                    width += 1;
                }
                Ok(FromNode::Leaf {
                    source: Box::new(LeafSource::Table { db: rt.db, table: rt.table, with_key, hints }),
                    offset,
                    width,
                    filters: Vec::new(),
                })
            }
            ast::TableRef::Derived { query, alias, columns } => {
                check_nested_order_by(query)?;
                self.scopes.push(Scope::default());
                let bound = self.bind_query(query);
                self.scopes.pop();
                let mut bound = bound?;
                let qualifier = alias.value.to_lowercase();
                if scope.columns.iter().any(|c| c.qualifier.as_deref() == Some(qualifier.as_str())) {
                    return Err(duplicate_correlation(&alias.value));
                }
                if !columns.is_empty() {
                    check_column_list(bound.columns.len(), columns.len(), &alias.value)?;
                    for (c, n) in bound.columns.iter_mut().zip(columns) {
                        c.name = n.value.clone();
                    }
                }
                check_derived_columns(&bound.columns, &alias.value)?;
                Ok(self.leaf_plan(bound, qualifier, scope, offset))
            }
            ast::TableRef::Function { name, args, alias } => match self.module(name)? {
                Some((db, m)) if m.kind == ModuleKind::TableFunction => {
                    let bound = self.bind_table_function(&db, &m, args)?;
                    let qualifier = alias.as_ref().unwrap_or(name.name()).value.to_lowercase();
                    Ok(self.leaf_plan(bound, qualifier, scope, offset))
                }
                _ => Err(SqlError::new(208, format!("Invalid object name '{}'.", object_display(name)))),
            },
            ast::TableRef::Join { left, right, kind, on } => {
                let l = self.bind_table_ref(left, scope)?;
                if matches!(kind, JoinKind::CrossApply | JoinKind::OuterApply) {
                    return Err(SqlError::new(40517, "CROSS APPLY and OUTER APPLY are not supported yet."));
                }
                let r = self.bind_table_ref(right, scope)?;
                let width = l.width() + r.width();
                let mut conj = Vec::new();
                if let Some(on) = on {
                    let pred = self.with_scope(scope.clone(), |b| b.bind_predicate(on))?;
                    split_conjuncts(pred, &mut conj);
                }
                let mut node = FromNode::Join {
                    left: Box::new(l),
                    right: Box::new(r),
                    kind: *kind,
                    on: Vec::new(),
                    offset,
                    width,
                };
                let mut keep = Vec::new();
                for c in conj {
                    if let Some(c) = push_down_on(&mut node, c) {
                        keep.push(c);
                    }
                }
                if let FromNode::Join { on, .. } = &mut node {
                    *on = keep;
                }
                Ok(node)
            }
        }
    }

    fn leaf_plan(&mut self, bound: BoundQuery, qualifier: String, scope: &mut Scope, offset: usize) -> FromNode {
        for c in &bound.columns {
            scope.columns.push(ScopeColumn {
                qualifier: Some(qualifier.clone()),
                name: c.name.clone(),
                ty: c.ty,
                nullable: c.nullable,
            });
        }
        FromNode::Leaf {
            source: Box::new(LeafSource::Plan(bound.plan)),
            offset,
            width: bound.columns.len(),
            filters: Vec::new(),
        }
    }

    /// Turns a FROM tree with pushed-down filters into a plan over its local row.
    fn build(&mut self, node: FromNode) -> SqlResult<Plan> {
        match node {
            FromNode::Leaf { source, offset, filters, .. } => {
                let local: Vec<Expr> = filters.iter().map(|f| map_columns(f, &|i| i - offset)).collect();
                Ok(match *source {
                    LeafSource::Table { db, table, with_key, hints } => access_path(db, table, local, with_key, hints),
                    LeafSource::Plan(p) => match conjoin(local) {
                        Some(pred) => Plan::Filter { input: Box::new(p), predicate: pred },
                        None => p,
                    },
                })
            }
            FromNode::Join { left, right, kind, on, offset, .. } => {
                let left_width = left.width();
                let right_width = right.width();
                let right_offset = right.offset();
                let local_on: Vec<Expr> = on.iter().map(|f| map_columns(f, &|i| i - offset)).collect();
                // Index nested loops: the inner side is a table whose index the join pins.
                if matches!(kind, JoinKind::Inner | JoinKind::Left) {
                    let inner_is_table = matches!(&*right, FromNode::Leaf { source, .. } if matches!(**source, LeafSource::Table { .. }));
                    if inner_is_table {
                        let FromNode::Leaf { source, filters, .. } = *right else { unreachable!("checked above") };
                        let LeafSource::Table { db, table, with_key, hints } = *source else {
                            unreachable!("checked above")
                        };
                        let rfilters: Vec<Expr> =
                            filters.iter().map(|f| map_columns(f, &|i| i - right_offset)).collect();
                        let lp = self.build(*left)?;
                        return Ok(join_with_table(
                            lp,
                            db,
                            table,
                            with_key,
                            hints,
                            rfilters,
                            kind,
                            local_on,
                            left_width,
                            right_width,
                        ));
                    }
                    let lp = self.build(*left)?;
                    let rp = self.build(*right)?;
                    return Ok(hash_or_loop(lp, rp, kind, local_on, left_width, right_width));
                }
                let lp = self.build(*left)?;
                let rp = self.build(*right)?;
                Ok(hash_or_loop(lp, rp, kind, local_on, left_width, right_width))
            }
        }
    }
}

/// Pushes a WHERE conjunct down to the single leaf it reads, or else into the ON list of
/// the smallest inner join covering it, where outer joins allow; returns it back if it
/// must stay above the joins.
fn push_down(node: &mut FromNode, c: Expr) -> Option<Expr> {
    let mut used = Vec::new();
    if !columns_used(&c, &mut used) || used.is_empty() {
        return Some(c);
    }
    push_into(node, c, &used, true)
}

fn covers(node: &FromNode, used: &[usize]) -> bool {
    used.iter().all(|&i| i >= node.offset() && i < node.offset() + node.width())
}

fn push_into(node: &mut FromNode, c: Expr, used: &[usize], allowed: bool) -> Option<Expr> {
    if !allowed {
        return Some(c);
    }
    match node {
        FromNode::Leaf { filters, .. } => {
            filters.push(c);
            None
        }
        FromNode::Join { left, right, kind, on, .. } => {
            // A WHERE filter may go into the preserved side of an outer join, or either
            // side of an inner one.
            let (left_ok, right_ok) = match kind {
                JoinKind::Inner | JoinKind::Cross | JoinKind::CrossApply => (true, true),
                JoinKind::Left | JoinKind::OuterApply => (true, false),
                JoinKind::Right => (false, true),
                JoinKind::Full => (false, false),
            };
            if covers(left, used) {
                push_into(left, c, used, left_ok)
            } else if covers(right, used) {
                push_into(right, c, used, right_ok)
            } else if matches!(kind, JoinKind::Inner | JoinKind::Cross) {
                *kind = JoinKind::Inner;
                on.push(c);
                None
            } else {
                Some(c)
            }
        }
    }
}

/// Pushes an ON conjunct of a join into one of its sides where that is equivalent: either
/// side of an inner join, the inner side of an outer join.
fn push_down_on(node: &mut FromNode, c: Expr) -> Option<Expr> {
    let FromNode::Join { left, right, kind, .. } = node else { return Some(c) };
    let mut used = Vec::new();
    if !columns_used(&c, &mut used) || used.is_empty() {
        return Some(c);
    }
    match kind {
        JoinKind::Inner if covers(left, &used) => push_into(left, c, &used, true),
        JoinKind::Inner | JoinKind::Left if covers(right, &used) => push_into(right, c, &used, true),
        JoinKind::Right if covers(left, &used) => push_into(left, c, &used, true),
        _ => Some(c),
    }
}

/// A comparison `Column(col) op value` where value does not read the row.
fn column_comparison(e: &Expr) -> Option<(usize, BinaryOp, &Expr)> {
    let Expr::Compare { op, left, right } = e else { return None };
    let independent = |x: &Expr| {
        let mut used = Vec::new();
        columns_used(x, &mut used) && used.is_empty()
    };
    match (left.as_ref(), right.as_ref()) {
        (Expr::Column(c), v) if independent(v) => Some((*c, *op, v)),
        (v, Expr::Column(c)) if independent(v) => Some((*c, flip(*op), v)),
        _ => None,
    }
}

fn flip(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        BinaryOp::NotLt => BinaryOp::NotGt,
        BinaryOp::NotGt => BinaryOp::NotLt,
        op => op,
    }
}

/// What an index seek gets from facts `(column, op, value, source)`: equality on a key
/// prefix, then a range on the next key column.
struct Seek {
    prefix: Vec<Expr>,
    lower: Option<RangeBound>,
    upper: Option<RangeBound>,
    /// A unique index pinned on all its columns: at most one row.
    single: bool,
    /// Sources of the facts the bounds represent exactly.
    used: Vec<usize>,
}

impl Seek {
    fn useful(&self) -> bool {
        !self.prefix.is_empty() || self.lower.is_some() || self.upper.is_some()
    }
}

type Fact = (usize, BinaryOp, Expr, usize);

fn seek_bounds(table: &Table, index: usize, facts: &[Fact]) -> Seek {
    let idx = &table.indexes[index];
    let mut prefix = Vec::new();
    let mut used = Vec::new();
    for &(col, _) in &idx.columns {
        match facts.iter().find(|(c, op, _, _)| *c == col && *op == BinaryOp::Eq) {
            Some((_, _, v, src)) => {
                prefix.push(v.clone());
                used.push(*src);
            }
            None => break,
        }
    }
    let n = prefix.len();
    let single = idx.unique && n == idx.columns.len() && n > 0;
    let (mut lower, mut upper) = (None, None);
    let (mut lo_src, mut hi_src) = (None, None);
    if let Some(&(col, desc)) = idx.columns.get(n) {
        for (c, op, v, src) in facts {
            if *c != col {
                continue;
            }
            // A descending column stores larger values first: swap the roles.
            let (is_lower, inclusive) = match op {
                BinaryOp::Gt => (!desc, false),
                BinaryOp::GtEq | BinaryOp::NotLt => (!desc, true),
                BinaryOp::Lt => (desc, false),
                BinaryOp::LtEq | BinaryOp::NotGt => (desc, true),
                _ => continue,
            };
            let bound = Some(RangeBound { value: v.clone(), inclusive });
            if is_lower {
                lower = bound;
                lo_src = Some(*src);
            } else {
                upper = bound;
                hi_src = Some(*src);
            }
        }
    }
    used.extend(lo_src);
    used.extend(hi_src);
    Seek { prefix, lower, upper, single, used }
}

/// Chooses how to read a table given filters over its own row: the index the filters pin
/// down best, a full scan otherwise. Filters the seek represents exactly are dropped (so a
/// non-deterministic value such as `RAND()` is computed once, for the seek); the others
/// stay as a residual predicate.
fn access_path(db: String, table: Arc<Table>, filters: Vec<Expr>, with_key: bool, hints: LockHints) -> Plan {
    let facts: Vec<Fact> = filters
        .iter()
        .enumerate()
        .filter_map(|(i, f)| column_comparison(f).map(|(c, op, v)| (c, op, v.clone(), i)))
        .collect();
    let mut best: Option<(usize, Seek, i32)> = None;
    for i in 0..table.indexes.len() {
        if table.indexes[i].is_heap() {
            continue;
        }
        let seek = seek_bounds(&table, i, &facts);
        let score = (if seek.single { 1000 } else { 0 })
            + seek.prefix.len() as i32 * 10
            + i32::from(seek.lower.is_some() || seek.upper.is_some()) * 5
            - i as i32;
        if seek.useful() && best.as_ref().is_none_or(|b| score > b.2) {
            best = Some((i, seek, score));
        }
    }
    let (index, seek) = match best {
        Some((i, seek, _)) => (i, seek),
        None => (0, Seek { prefix: Vec::new(), lower: None, upper: None, single: false, used: Vec::new() }),
    };
    let used = seek.used;
    let scan = Plan::Scan(Box::new(ScanNode {
        db,
        table,
        index,
        prefix: seek.prefix,
        lower: seek.lower,
        upper: seek.upper,
        reverse: false,
        with_key,
        single: seek.single,
        hints,
    }));
    let residual: Vec<Expr> =
        filters.into_iter().enumerate().filter(|(i, _)| !used.contains(i)).map(|(_, f)| f).collect();
    match conjoin(residual) {
        Some(pred) => Plan::Filter { input: Box::new(scan), predicate: pred },
        None => scan,
    }
}

/// An equality `left expr = right column` between the two sides of a join (right columns
/// start at `left_width`).
fn join_equalities(on: &[Expr], left_width: usize) -> Vec<(usize, Expr, Expr, usize)> {
    let mut out = Vec::new();
    for (i, c) in on.iter().enumerate() {
        let Expr::Compare { op: BinaryOp::Eq, left, right } = c else { continue };
        let side = |x: &Expr| -> Option<bool> {
            let mut used = Vec::new();
            if !columns_used(x, &mut used) || used.is_empty() {
                return None;
            }
            if used.iter().all(|&u| u < left_width) {
                Some(true)
            } else if used.iter().all(|&u| u >= left_width) {
                Some(false)
            } else {
                None
            }
        };
        match (side(left), side(right)) {
            (Some(true), Some(false)) => out.push((i, (**left).clone(), (**right).clone(), i)),
            (Some(false), Some(true)) => out.push((i, (**right).clone(), (**left).clone(), i)),
            _ => {}
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn join_with_table(
    left: Plan,
    db: String,
    table: Arc<Table>,
    with_key: bool,
    hints: LockHints,
    rfilters: Vec<Expr>,
    kind: JoinKind,
    on: Vec<Expr>,
    left_width: usize,
    right_width: usize,
) -> Plan {
    // Facts about right columns whose values come from the left row.
    let eqs = join_equalities(&on, left_width);
    let mut facts: Vec<Fact> = Vec::new();
    for (_, l, r, _) in &eqs {
        if let Expr::Column(rc) = r {
            facts.push((rc - left_width, BinaryOp::Eq, l.clone(), usize::MAX));
        }
    }
    let mut best: Option<(usize, Seek)> = None;
    for i in 0..table.indexes.len() {
        if table.indexes[i].is_heap() {
            continue;
        }
        let seek = seek_bounds(&table, i, &facts);
        if !seek.prefix.is_empty() && best.as_ref().is_none_or(|b| seek.prefix.len() > b.1.prefix.len()) {
            best = Some((i, seek));
        }
    }
    match best {
        Some((index, seek)) => {
            let scan = Plan::Scan(Box::new(ScanNode {
                db,
                table,
                prefix: seek.prefix,
                lower: seek.lower,
                upper: seek.upper,
                index,
                reverse: false,
                with_key,
                single: seek.single,
                hints,
            }));
            let right = match conjoin(rfilters) {
                Some(pred) => Plan::Filter { input: Box::new(scan), predicate: pred },
                None => scan,
            };
            Plan::Apply { left: Box::new(left), right: Box::new(right), kind, on: conjoin(on), right_width }
        }
        None => {
            let right = access_path(db, table, rfilters, with_key, hints);
            hash_or_loop(left, right, kind, on, left_width, right_width)
        }
    }
}

fn hash_or_loop(left: Plan, right: Plan, kind: JoinKind, on: Vec<Expr>, left_width: usize, right_width: usize) -> Plan {
    let eqs = join_equalities(&on, left_width);
    if eqs.is_empty() || kind == JoinKind::Cross {
        return Plan::NestedLoop {
            left: Box::new(left),
            right: Box::new(right),
            kind,
            on: conjoin(on),
            left_width,
            right_width,
        };
    }
    let used: Vec<usize> = eqs.iter().map(|e| e.0).collect();
    let left_keys: Vec<Expr> = eqs.iter().map(|e| e.1.clone()).collect();
    let right_keys: Vec<Expr> = eqs.iter().map(|e| map_columns(&e.2, &|i| i - left_width)).collect();
    let residual: Vec<Expr> = on.into_iter().enumerate().filter(|(i, _)| !used.contains(i)).map(|(_, e)| e).collect();
    Plan::HashJoin {
        left: Box::new(left),
        right: Box::new(right),
        kind,
        left_keys,
        right_keys,
        residual: conjoin(residual),
        left_width,
        right_width,
    }
}

fn contains_aggregate(e: &ast::Expr) -> bool {
    use ast::Expr as E;
    match e {
        E::Function { name, args, over, .. } => {
            (over.is_none() && agg_func(&name.name().value.to_uppercase()).is_some())
                || args.iter().any(contains_aggregate)
        }
        E::Unary { expr, .. }
        | E::IsNull { expr, .. }
        | E::Nested(expr)
        | E::Collate { expr, .. }
        | E::Cast { expr, .. } => contains_aggregate(expr),
        E::Convert { expr, style, .. } => contains_aggregate(expr) || style.as_deref().is_some_and(contains_aggregate),
        E::Binary { left, right, .. } => contains_aggregate(left) || contains_aggregate(right),
        E::Between { expr, low, high, .. } => {
            contains_aggregate(expr) || contains_aggregate(low) || contains_aggregate(high)
        }
        E::Like { expr, pattern, .. } => contains_aggregate(expr) || contains_aggregate(pattern),
        E::InList { expr, list, .. } => contains_aggregate(expr) || list.iter().any(contains_aggregate),
        E::Case { operand, branches, otherwise } => {
            operand.as_deref().is_some_and(contains_aggregate)
                || branches.iter().any(|(a, b)| contains_aggregate(a) || contains_aggregate(b))
                || otherwise.as_deref().is_some_and(contains_aggregate)
        }
        E::InSubquery { expr, .. } | E::Quantified { left: expr, .. } => contains_aggregate(expr),
        _ => false,
    }
}

/// Whether an expression contains a subquery (outside nested queries).
fn contains_subquery(e: &ast::Expr) -> bool {
    use ast::Expr as E;
    match e {
        E::Subquery(_) | E::Exists(_) | E::InSubquery { .. } | E::Quantified { .. } => true,
        E::Function { args, .. } => args.iter().any(contains_subquery),
        E::Unary { expr, .. }
        | E::IsNull { expr, .. }
        | E::Nested(expr)
        | E::Collate { expr, .. }
        | E::Cast { expr, .. }
        | E::Convert { expr, .. } => contains_subquery(expr),
        E::Binary { left, right, .. } => contains_subquery(left) || contains_subquery(right),
        E::Between { expr, low, high, .. } => {
            contains_subquery(expr) || contains_subquery(low) || contains_subquery(high)
        }
        E::Like { expr, pattern, .. } => contains_subquery(expr) || contains_subquery(pattern),
        E::InList { expr, list, .. } => contains_subquery(expr) || list.iter().any(contains_subquery),
        E::Case { operand, branches, otherwise } => {
            operand.as_deref().is_some_and(contains_subquery)
                || branches.iter().any(|(a, b)| contains_subquery(a) || contains_subquery(b))
                || otherwise.as_deref().is_some_and(contains_subquery)
        }
        _ => false,
    }
}

/// An integer constant next to a decimal operand takes the smallest numeric type that
/// holds it, as SQL Server types constants (`10.0 / 3` is numeric(8,6), not (14,12)).
fn narrow_int_literal(e: Expr, t: SqlType, other: &SqlType) -> (Expr, SqlType) {
    match (&e, t, other) {
        (Expr::Const(Value::Int(v)), SqlType::Int, SqlType::Decimal { .. }) => {
            let digits = v.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1) as u8;
            (
                Expr::Const(Value::Decimal { value: i128::from(*v), scale: 0 }),
                SqlType::Decimal { precision: digits, scale: 0 },
            )
        }
        _ => (e, t),
    }
}

/// The type both sides of a CASE/COALESCE/VALUES column convert to (NULL literals don't
/// count).
fn unify<'x>(items: impl Iterator<Item = &'x (Expr, SqlType)>) -> SqlResult<SqlType> {
    let mut ty: Option<SqlType> = None;
    let mut fallback = SqlType::Int;
    for (e, t) in items {
        fallback = *t;
        if is_null_literal(e) {
            continue;
        }
        ty = Some(match ty {
            None => *t,
            Some(acc) => types::common_type(&acc, t)?,
        });
    }
    Ok(ty.unwrap_or(fallback))
}

fn sum_type(func: AggFunc, t: &SqlType, fname: &str) -> SqlResult<SqlType> {
    use SqlType::*;
    Ok(match t {
        TinyInt | SmallInt | Int => Int,
        BigInt => BigInt,
        Decimal { scale, .. } => {
            if func == AggFunc::Avg {
                Decimal { precision: 38, scale: (*scale).max(6) }
            } else {
                Decimal { precision: 38, scale: *scale }
            }
        }
        Money | SmallMoney => Money,
        Real | Float => Float,
        _ => {
            return Err(SqlError::new(
                8117,
                format!(
                    "Operand data type {} is invalid for {} operator.",
                    types::base_type_name(t),
                    fname.to_lowercase()
                ),
            ))
        }
    })
}

/// Wraps a query's plan so that its single column has type `t`.
fn project_cast(q: BoundQuery, t: &SqlType) -> SqlResult<Plan> {
    project_to(q, std::slice::from_ref(t))
}

fn project_to(q: BoundQuery, to: &[SqlType]) -> SqlResult<Plan> {
    if q.columns.iter().zip(to).all(|(c, t)| !needs_cast(&c.ty, t)) {
        return Ok(q.plan);
    }
    let exprs = q.columns.iter().zip(to).enumerate().map(|(i, (c, t))| cast_to(Expr::Column(i), &c.ty, t)).collect();
    Ok(Plan::Project { input: Box::new(q.plan), exprs })
}

fn near_text(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Column(n) => n.name().value.clone(),
        ast::Expr::Literal(Literal::Integer(t)) => t.clone(),
        _ => String::new(),
    }
}

pub fn ident_list(ids: &[Ident]) -> String {
    ids.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(", ")
}
