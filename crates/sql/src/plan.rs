//! Bound expressions and relational plans, and their evaluation.
//!
//! The binder turns syntax into these trees: every name resolved to a row position, a
//! variable slot or a catalog object, every operand converted to the type its operator
//! works on. Evaluation is a tree walk; relational operators materialise their output as
//! `Vec<Row>`, bounded by [`MAX_MATERIALIZED_BYTES`].

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use tessera_access::key::KeyBuf;
use tessera_access::row::{self, RowSchema};
use tessera_database::{Direction, OnLocked, ReadLocks, RowLock};

use crate::catalog::Table;
use crate::runtime::ExecCtx;
use crate::types::{self, SqlType, Value};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{BinaryOp, JoinKind, SetOperator, UnaryOp};

pub type Row = Vec<Value>;

/// The most bytes one operator may hold in memory before the query fails with error 701.
pub const MAX_MATERIALIZED_BYTES: usize = 2 << 30;

/// Functions answered from the session and the server rather than from arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionFn {
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
    HasDbAccess,
    ProgramName,
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
}

/// What a scalar user-defined function call needs at run time.
#[derive(Debug)]
pub struct UserCall {
    pub db: String,
    pub name: String,
    /// The CREATE FUNCTION text (its parsed form and plans are cached under it).
    pub text: Arc<str>,
    pub arg_types: Vec<SqlType>,
    pub ty: SqlType,
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
    pub db: String,
    pub table: Arc<Table>,
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
}

#[derive(Clone, Debug)]
pub struct AggCall {
    pub func: AggFunc,
    /// None for COUNT(*).
    pub arg: Option<Expr>,
    pub arg_type: SqlType,
    pub distinct: bool,
    pub ty: SqlType,
}

#[derive(Clone, Debug)]
pub enum Plan {
    /// Rows computed from expressions (`SELECT` without `FROM`, `VALUES`).
    Values(Vec<Vec<Expr>>),
    Scan(Box<ScanNode>),
    /// A system view, computed when read.
    System {
        view: crate::sysviews::View,
        db: String,
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
    /// Runs `right` once per left row with that row as its correlation row (index
    /// nested loops, APPLY). Inner and left kinds.
    Apply {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        on: Option<Expr>,
        right_width: usize,
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
    /// ROW_NUMBER() OVER (PARTITION BY … ORDER BY …): appends one bigint column.
    RowNumber {
        input: Box<Plan>,
        partition: Vec<Expr>,
        order: Vec<SortKey>,
    },
}

impl Plan {
    /// The result columns (1-based) a query's rows are ordered by, for TDS's ORDER token:
    /// the leading ORDER BY keys that are columns of the result, in key order. Empty when
    /// the query is not ordered.
    pub fn order_columns(&self, width: usize) -> Vec<u16> {
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
}

fn truth(v: &Value) -> Option<bool> {
    match v {
        Value::Null => None,
        Value::Bit(b) => Some(*b),
        Value::Int(i) => Some(*i != 0),
        _ => Some(true),
    }
}

fn bit(b: Option<bool>) -> Value {
    b.map_or(Value::Null, Value::Bit)
}

fn compare_op(op: BinaryOp, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        BinaryOp::Eq => ord == Equal,
        BinaryOp::NotEq => ord != Equal,
        BinaryOp::Lt | BinaryOp::NotGt if op == BinaryOp::Lt => ord == Less,
        BinaryOp::NotGt => ord != Greater,
        BinaryOp::LtEq => ord != Greater,
        BinaryOp::Gt => ord == Greater,
        BinaryOp::GtEq | BinaryOp::NotLt => ord != Less,
        _ => false,
    }
}

/// Evaluates a predicate: true only when the expression is true (not NULL).
pub fn is_true(e: &Expr, row: &[Value], ctx: &mut ExecCtx) -> SqlResult<bool> {
    Ok(truth(&eval(e, row, ctx)?) == Some(true))
}

pub fn eval(e: &Expr, row: &[Value], ctx: &mut ExecCtx) -> SqlResult<Value> {
    Ok(match e {
        Expr::Const(v) => v.clone(),
        Expr::Column(i) => row[*i].clone(),
        Expr::OuterRef { depth, index } => {
            let n = ctx.outer.len();
            ctx.outer[n - 1 - depth][*index].clone()
        }
        Expr::Var(slot) => ctx.var(*slot).clone(),
        Expr::Cast { expr, from, to, style, try_ } => {
            let v = eval(expr, row, ctx)?;
            match types::cast(&v, from, to, *style) {
                Ok(v) => v,
                Err(_) if *try_ => Value::Null,
                Err(e) => return Err(e),
            }
        }
        Expr::Unary { op, expr, ty } => {
            let v = eval(expr, row, ctx)?;
            match op {
                UnaryOp::Plus => v,
                UnaryOp::Minus => types::negate(&v, ty)?,
                UnaryOp::BitNot => types::bit_not(&v, ty)?,
                UnaryOp::Not => bit(truth(&v).map(|b| !b)),
            }
        }
        Expr::Arith { op, left, right, ty } => {
            let l = eval(left, row, ctx)?;
            let r = eval(right, row, ctx)?;
            types::binary_op(*op, &l, &r, ty)?
        }
        Expr::Compare { op, left, right } => {
            let l = eval(left, row, ctx)?;
            let r = eval(right, row, ctx)?;
            bit(types::compare(&l, &r).map(|o| compare_op(*op, o)))
        }
        Expr::And(a, b) => {
            let l = truth(&eval(a, row, ctx)?);
            if l == Some(false) {
                return Ok(Value::Bit(false));
            }
            let r = truth(&eval(b, row, ctx)?);
            bit(match (l, r) {
                (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            })
        }
        Expr::Or(a, b) => {
            let l = truth(&eval(a, row, ctx)?);
            if l == Some(true) {
                return Ok(Value::Bit(true));
            }
            let r = truth(&eval(b, row, ctx)?);
            bit(match (l, r) {
                (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            })
        }
        Expr::Not(a) => bit(truth(&eval(a, row, ctx)?).map(|b| !b)),
        Expr::IsNull { expr, negated } => Value::Bit(eval(expr, row, ctx)?.is_null() != *negated),
        Expr::Like { expr, pattern, escape, negated } => {
            let v = eval(expr, row, ctx)?;
            let p = eval(pattern, row, ctx)?;
            let esc = match escape {
                Some(e) => match eval(e, row, ctx)? {
                    Value::Null => return Ok(Value::Null),
                    Value::Str(s) => s.chars().next(),
                    _ => None,
                },
                None => None,
            };
            match (v, p) {
                (Value::Str(s), Value::Str(p)) => Value::Bit(types::like(&s, &p, esc) != *negated),
                _ => Value::Null,
            }
        }
        Expr::InList { expr, list, negated } => {
            let v = eval(expr, row, ctx)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            let mut saw_null = false;
            for item in list {
                let x = eval(item, row, ctx)?;
                match types::compare(&v, &x) {
                    Some(std::cmp::Ordering::Equal) => return Ok(Value::Bit(!*negated)),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Bit(*negated)
            }
        }
        Expr::Case { branches, otherwise } => {
            for (cond, then) in branches {
                if is_true(cond, row, ctx)? {
                    return eval(then, row, ctx);
                }
            }
            match otherwise {
                Some(e) => eval(e, row, ctx)?,
                None => Value::Null,
            }
        }
        Expr::Coalesce(args) => {
            for a in args {
                let v = eval(a, row, ctx)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Value::Null
        }
        Expr::Func { name, args, arg_types, ty } => {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(eval(a, row, ctx)?);
            }
            types::call_function(name, &vals, arg_types, ty, &mut ctx.session.functions)?
        }
        Expr::Session { func, args } => {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(eval(a, row, ctx)?);
            }
            ctx.session_function(func, &vals)?
        }
        Expr::Subquery(sq) => eval_subquery(sq, row, ctx)?,
        Expr::UserFunction { call, args } => {
            let vals = eval_all(args, row, ctx)?;
            crate::session::call_scalar_function(ctx, call, vals)?
        }
    })
}

fn subquery_rows(sq: &Subquery, row: &[Value], ctx: &mut ExecCtx) -> SqlResult<Arc<Vec<Row>>> {
    let key = Arc::as_ptr(&sq.plan) as usize;
    if !sq.correlated {
        if let Some(rows) = ctx.subquery_cache.get(&key) {
            return Ok(rows.clone());
        }
    }
    ctx.outer.push(row.to_vec());
    let result = run(&sq.plan, &[], ctx);
    ctx.outer.pop();
    let rows = Arc::new(result?);
    if !sq.correlated {
        ctx.subquery_cache.insert(key, rows.clone());
    }
    Ok(rows)
}

fn eval_subquery(sq: &Subquery, row: &[Value], ctx: &mut ExecCtx) -> SqlResult<Value> {
    // The tested value is computed in the outer row before the subquery runs.
    let probe = match &sq.kind {
        SubqueryKind::In { expr, .. } | SubqueryKind::Quantified { expr, .. } => Some(eval(expr, row, ctx)?),
        _ => None,
    };
    let rows = subquery_rows(sq, row, ctx)?;
    Ok(match &sq.kind {
        SubqueryKind::Scalar => match rows.len() {
            0 => Value::Null,
            1 => rows[0][0].clone(),
            _ => {
                return Err(SqlError::new(
                    512,
                    "Subquery returned more than 1 value. This is not permitted when the subquery follows =, !=, <, <= , >, >= or when the subquery is used as an expression.",
                ))
            }
        },
        SubqueryKind::Exists { negated } => Value::Bit(rows.is_empty() == *negated),
        SubqueryKind::In { negated, .. } => {
            let v = probe.expect("probe computed");
            if v.is_null() {
                return Ok(if rows.is_empty() { Value::Bit(*negated) } else { Value::Null });
            }
            let mut saw_null = false;
            for r in rows.iter() {
                match types::compare(&v, &r[0]) {
                    Some(std::cmp::Ordering::Equal) => return Ok(Value::Bit(!*negated)),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Bit(*negated)
            }
        }
        SubqueryKind::Quantified { op, all, .. } => {
            let v = probe.expect("probe computed");
            let mut result = Some(*all);
            for r in rows.iter() {
                let t = types::compare(&v, &r[0]).map(|o| compare_op(*op, o));
                match (all, t) {
                    (true, Some(false)) => return Ok(Value::Bit(false)),
                    (false, Some(true)) => return Ok(Value::Bit(true)),
                    (_, None) => result = None,
                    _ => {}
                }
            }
            bit(result)
        }
    })
}

/// Approximate in-memory size of a row, for the materialisation limit.
fn row_bytes(r: &Row) -> usize {
    r.iter()
        .map(|v| match v {
            Value::Str(s) => 16 + s.len(),
            Value::Binary(b) => 16 + b.len(),
            _ => 32,
        })
        .sum()
}

/// Collects rows while enforcing [`MAX_MATERIALIZED_BYTES`].
/// The rounds of a recursive CTE, accumulated (see `Plan::RecursiveCte`).
fn run_recursive(
    id: usize,
    anchor_rows: Vec<Row>,
    recursive: &Plan,
    max_recursion: u16,
    corr: &[Value],
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    let mut out = Collector::new();
    let mut round = anchor_rows;
    let mut depth = 0u16;
    while !round.is_empty() {
        for r in &round {
            out.push(r.clone())?;
        }
        ctx.work_tables.insert(id, round);
        let next = run(recursive, corr, ctx)?;
        if !next.is_empty() {
            if max_recursion != 0 && depth >= max_recursion {
                return Err(SqlError::new(
                    530,
                    format!(
                        "The statement terminated. The maximum recursion {max_recursion} has been exhausted before statement completion."
                    ),
                ));
            }
            depth += 1;
        }
        round = next;
    }
    Ok(out.rows)
}

struct Collector {
    rows: Vec<Row>,
    bytes: usize,
}

impl Collector {
    fn new() -> Collector {
        Collector { rows: Vec::new(), bytes: 0 }
    }
    fn push(&mut self, r: Row) -> SqlResult<()> {
        self.bytes += row_bytes(&r);
        if self.bytes > MAX_MATERIALIZED_BYTES {
            return Err(insufficient_memory());
        }
        self.rows.push(r);
        Ok(())
    }
}

/// Builds the storage key for a prefix of an index's key columns.
pub fn encode_prefix(table: &Table, index: usize, values: &[Value], out: &mut KeyBuf) -> SqlResult<()> {
    let idx = &table.indexes[index];
    for (v, &(col, desc)) in values.iter().zip(&idx.columns) {
        types::encode_key(v, &table.columns[col].ty, desc, out)?;
    }
    Ok(())
}

/// The smallest byte string greater than every string starting with `prefix`; None if
/// there is none (all 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut hi = prefix.to_vec();
    while let Some(last) = hi.pop() {
        if last != 0xFF {
            hi.push(last + 1);
            return Some(hi);
        }
    }
    None
}

/// Storage schema of a table's rows.
pub fn row_schema(table: &Table) -> SqlResult<RowSchema> {
    Ok(RowSchema::new(table.columns.iter().map(|c| c.ty).collect())?)
}

/// Decodes a stored row into SQL values.
pub fn decode_row(table: &Table, schema: &RowSchema, bytes: &[u8]) -> SqlResult<Row> {
    let stored = row::decode(schema, bytes)?;
    Ok(stored.into_iter().zip(&table.columns).map(|(v, c)| types::from_storage(v, &c.ty)).collect())
}

type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn scan_range(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Option<KeyRange>> {
    let mut values = Vec::with_capacity(node.prefix.len() + 1);
    for e in &node.prefix {
        values.push(eval(e, corr, ctx)?);
    }
    let bound_value = |b: &Option<RangeBound>, ctx: &mut ExecCtx| -> SqlResult<Option<(Value, bool)>> {
        match b {
            Some(b) => Ok(Some((eval(&b.value, corr, ctx)?, b.inclusive))),
            None => Ok(None),
        }
    };
    let lower = bound_value(&node.lower, ctx)?;
    let upper = bound_value(&node.upper, ctx)?;
    // Comparisons with NULL are never true: the range is empty.
    if values.iter().chain(lower.iter().map(|b| &b.0)).chain(upper.iter().map(|b| &b.0)).any(Value::is_null) {
        return Ok(None);
    }
    let mut key = KeyBuf::new();
    encode_prefix(&node.table, node.index, &values, &mut key)?;
    let prefix = key.into_vec();
    let with = |extra: &Value| -> SqlResult<Vec<u8>> {
        let mut all = values.clone();
        all.push(extra.clone());
        let mut k = KeyBuf::new();
        encode_prefix(&node.table, node.index, &all, &mut k)?;
        Ok(k.into_vec())
    };
    // A one-sided range must not run into the column's NULLs (which sort first, or last
    // in a descending column): no comparison with NULL is true.
    let desc = node.table.indexes[node.index].columns.get(values.len()).is_some_and(|c| c.1);
    let lo = match &lower {
        Some((v, true)) => Bound::Included(with(v)?),
        Some((v, false)) => {
            let k = with(v)?;
            prefix_successor(&k).map_or(Bound::Excluded(k), Bound::Included)
        }
        None if upper.is_some() && !desc => {
            let k = with(&Value::Null)?;
            prefix_successor(&k).map_or(Bound::Excluded(k), Bound::Included)
        }
        None if prefix.is_empty() => Bound::Unbounded,
        None => Bound::Included(prefix.clone()),
    };
    let hi = match &upper {
        Some((v, true)) => prefix_successor(&with(v)?).map_or(Bound::Unbounded, Bound::Excluded),
        Some((v, false)) => Bound::Excluded(with(v)?),
        None if lower.is_some() && desc => Bound::Excluded(with(&Value::Null)?),
        None if prefix.is_empty() => Bound::Unbounded,
        None => prefix_successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded),
    };
    Ok(Some((lo, hi)))
}

/// A unique index pinned on its whole key: one point lookup instead of a range scan.
fn run_point_lookup(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    let mut values = Vec::with_capacity(node.prefix.len());
    for e in &node.prefix {
        let v = eval(e, corr, ctx)?;
        if v.is_null() {
            return Ok(Vec::new());
        }
        values.push(v);
    }
    let mut key = KeyBuf::new();
    encode_prefix(&node.table, node.index, &values, &mut key)?;
    let locks = node.hints.read_locks(node.with_key, &ctx.session.options.isolation_level);
    if locks != ReadLocks::COMMITTED {
        let candidates = vec![(key.as_bytes().to_vec(), None)];
        let mut out = Collector::new();
        locked_rows(node, locks, candidates, &(Bound::Unbounded, Bound::Unbounded), None, usize::MAX, ctx, &mut out)?;
        return Ok(out.rows);
    }
    let table = &node.table;
    let schema = ctx.row_schema(table)?;
    let tx = ctx.transaction(&node.db)?;
    let db = tx.database().clone();
    let tree = db.table(&table.indexes[node.index].tree).ok_or_else(|| missing_tree(&table.name))?;
    let (row_key, found) = if node.index == 0 {
        let found = tx.get_with(tree, key.as_bytes(), |bytes| decode_row(table, &schema, bytes))?;
        (key.as_bytes().to_vec(), found)
    } else {
        let Some(row_key) = tx.get(tree, key.as_bytes())? else { return Ok(Vec::new()) };
        let rows = db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?;
        let found = tx.get_with(rows, &row_key, |bytes| decode_row(table, &schema, bytes))?;
        (row_key, found)
    };
    let Some(row) = found else { return Ok(Vec::new()) };
    let mut row = row?;
    if node.with_key {
        row.push(Value::Binary(Arc::from(row_key)));
    }
    Ok(vec![row])
}

fn run_scan(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    if node.single && node.lower.is_none() && node.upper.is_none() {
        return run_point_lookup(node, corr, ctx);
    }
    let Some((lo, hi)) = scan_range(node, corr, ctx)? else { return Ok(Vec::new()) };
    let locks = node.hints.read_locks(node.with_key, &ctx.session.options.isolation_level);
    if locks != ReadLocks::COMMITTED {
        return run_locked_scan(node, locks, (lo, hi), ctx);
    }
    let table = &node.table;
    let index = &table.indexes[node.index];
    let schema = ctx.row_schema(table)?;
    let tx = ctx.transaction(&node.db)?;
    let db = tx.database().clone();
    let tree = db.table(&index.tree).ok_or_else(|| missing_tree(&table.name))?;
    let dir = if node.reverse { Direction::Backward } else { Direction::Forward };
    let rows_tree = if node.index == 0 {
        None
    } else {
        Some(db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?)
    };
    let mut out = Collector::new();
    for item in tx.scan(tree, lo.as_ref().map(|v| &v[..]), hi.as_ref().map(|v| &v[..]), dir) {
        let (key, value) = item?;
        let (row_key, bytes) = match rows_tree {
            None => (key, value),
            Some(rows) => match tx.get(rows, &value)? {
                Some(bytes) => (value, bytes),
                // The row went away between the index read and the row read.
                None => continue,
            },
        };
        let mut r = decode_row(table, &schema, &bytes)?;
        if node.with_key {
            r.push(Value::Binary(Arc::from(row_key)));
        }
        out.push(r)?;
        if node.single {
            break;
        }
    }
    Ok(out.rows)
}

/// A scan that takes the locks `locks` asks for (see `crate::locking`). Candidates are
/// found by a scan that waits for (or, with READPAST, skips) rows other transactions
/// changed; then each row is locked and read again through its clustered key, so a row
/// returned under a U, S or X lock is the row as it is while the lock is held.
fn run_locked_scan(node: &ScanNode, locks: ReadLocks, range: KeyRange, ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    let candidates = locked_candidates(node, locks, &range, ctx)?;
    let mut out = Collector::new();
    locked_rows(node, locks, candidates, &range, None, usize::MAX, ctx, &mut out)?;
    Ok(out.rows)
}

/// A row a locking scan found: its clustered key, and the nonclustered index entry that
/// led to it (None when found through the clustered index, or a point key to look up).
type Candidate = (Vec<u8>, Option<Vec<u8>>);

/// The candidates of a locking scan in key order: clustered keys, with the index entry
/// that led to each through a nonclustered index; rows others are changing are waited
/// for (or skipped, with READPAST).
fn locked_candidates(
    node: &ScanNode,
    locks: ReadLocks,
    range: &KeyRange,
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Candidate>> {
    let tx = ctx.transaction(&node.db)?;
    let tree =
        tx.database().table(&node.table.indexes[node.index].tree).ok_or_else(|| missing_tree(&node.table.name))?;
    tx.lock_table_for_read(tree, locks)?;
    let on_locked = match locks.row {
        RowLock::Uncommitted => OnLocked::Read,
        _ if locks.skip_locked => OnLocked::Skip,
        _ => OnLocked::Wait,
    };
    let dir = if node.reverse { Direction::Backward } else { Direction::Forward };
    let mut candidates = Vec::new();
    let mut bytes = 0;
    for item in tx.scan_with(tree, range.0.as_ref().map(|v| &v[..]), range.1.as_ref().map(|v| &v[..]), dir, on_locked) {
        let (key, value) = item?;
        // An index entry leads to its row's clustered key.
        let candidate = if node.index == 0 { (key, None) } else { (value, Some(key)) };
        bytes += candidate.0.len() + candidate.1.as_ref().map_or(0, Vec::len);
        if bytes > MAX_MATERIALIZED_BYTES {
            return Err(insufficient_memory());
        }
        candidates.push(candidate);
        if node.single {
            break;
        }
    }
    Ok(candidates)
}

/// The scan under a TOP that may lock rows one at a time and stop at the limit: a locking
/// read (UPDLOCK, XLOCK, HOLDLOCK, an UPDATE/DELETE target) of the clustered index, under
/// at most a filter, a projection of columns, and a sort its order already satisfies.
struct LockedTop<'p> {
    node: &'p ScanNode,
    filter: Option<&'p Expr>,
    project: Option<&'p [Expr]>,
}

fn locked_top_input<'p>(input: &'p Plan, ctx: &ExecCtx) -> Option<LockedTop<'p>> {
    let (inner, sort) = match input {
        Plan::Sort { input, keys } => (&**input, Some(keys)),
        other => (other, None),
    };
    let (inner, project) = match inner {
        Plan::Project { input, exprs } => (&**input, Some(&exprs[..])),
        other => (other, None),
    };
    let (node, filter) = match inner {
        Plan::Filter { input, predicate } => match &**input {
            Plan::Scan(node) => (&**node, Some(predicate)),
            _ => return None,
        },
        Plan::Scan(node) => (&**node, None),
        _ => return None,
    };
    let locks = node.hints.read_locks(node.with_key, &ctx.session.options.isolation_level);
    if node.index != 0 || node.reverse || !matches!(locks.row, RowLock::Keep { .. }) {
        return None;
    }
    // A sort key names an output column; through the projection, a column of the row.
    let row_column = |e: &Expr| match (e, project) {
        (Expr::Column(c), None) => Some(*c),
        (Expr::Column(c), Some(exprs)) => match exprs.get(*c) {
            Some(Expr::Column(r)) => Some(*r),
            _ => None,
        },
        _ => None,
    };
    let order = &node.table.indexes[0].columns;
    let sorted = sort.is_none_or(|keys| {
        keys.len() <= order.len()
            && keys.iter().zip(order).all(|(k, &(col, desc))| row_column(&k.expr) == Some(col) && k.descending == desc)
    });
    sorted.then_some(LockedTop { node, filter, project })
}

/// TOP over a locking scan: candidates in key order, each locked and read again, kept if
/// the filter holds on the row as locked, until `limit` rows qualify. A row that does not
/// qualify keeps no lock it did not hold before, so `SELECT TOP 1 … WITH (UPDLOCK,
/// READPAST) … ORDER BY id` — a work queue — locks the one row it takes.
fn run_locked_top(
    node: &ScanNode,
    filter: Option<&Expr>,
    limit: usize,
    corr: &[Value],
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    let Some(range) = scan_range(node, corr, ctx)? else { return Ok(Vec::new()) };
    let locks = node.hints.read_locks(node.with_key, &ctx.session.options.isolation_level);
    let candidates = locked_candidates(node, locks, &range, ctx)?;
    let mut out = Collector::new();
    locked_rows(node, locks, candidates, &range, filter, limit, ctx, &mut out)?;
    Ok(out.rows)
}

/// Reads each candidate row (clustered key, and the index entry that led to it) with
/// `locks`, until `limit` rows are out. A row found through a nonclustered index is
/// returned only if its index key still lies in `range` now that it is locked (another
/// transaction may have changed it between the index read and the lock); a row `filter`
/// rejects is left out and keeps no lock it did not hold before.
#[allow(clippy::too_many_arguments)]
fn locked_rows(
    node: &ScanNode,
    locks: ReadLocks,
    candidates: Vec<Candidate>,
    range: &KeyRange,
    filter: Option<&Expr>,
    limit: usize,
    ctx: &mut ExecCtx,
    out: &mut Collector,
) -> SqlResult<()> {
    let table = &node.table;
    let schema = ctx.row_schema(table)?;
    let tx = ctx.transaction(&node.db)?;
    let db = tx.database().clone();
    let rows_tree = db.table(&table.indexes[0].tree).ok_or_else(|| missing_tree(&table.name))?;
    let index_tree = db.table(&table.indexes[node.index].tree).ok_or_else(|| missing_tree(&table.name))?;
    tx.lock_table_for_read(rows_tree, locks)?;
    for (key, entry) in candidates {
        if out.rows.len() >= limit {
            break;
        }
        ctx.check_cancel()?;
        let tx = ctx.transaction(&node.db)?;
        // A point lookup through a nonclustered index: its entry first (its key is exact).
        let (row_key, entry) = match entry {
            Some(e) => (key, Some(e)),
            None if node.index == 0 => (key, None),
            None => match tx.get(index_tree, &key)? {
                Some(row_key) => (row_key, Some(key)),
                None => continue,
            },
        };
        let held = filter.is_some() && tx.holds_key(rows_tree, &row_key);
        let Some(row) = tx.get_locked(rows_tree, &row_key, locks, |bytes| decode_row(table, &schema, bytes))? else {
            continue;
        };
        let mut row = row?;
        if let Some(entry) = entry {
            let now = index_entry(table, node.index, &row, &row_key)?;
            let in_range = if node.single {
                entry == now
            } else {
                std::ops::RangeBounds::contains(&(range.0.as_ref(), range.1.as_ref()), &now)
            };
            if !in_range {
                continue;
            }
        }
        if node.with_key {
            row.push(Value::Binary(Arc::from(&row_key[..])));
        }
        if let Some(f) = filter {
            if !is_true(f, &row, ctx)? {
                if !held {
                    ctx.transaction(&node.db)?.release_key(rows_tree, &row_key);
                }
                continue;
            }
        }
        out.push(row)?;
        if node.single {
            break;
        }
    }
    Ok(())
}

/// The key of a row's entry in the table's nonclustered index `index` (a non-unique
/// index appends the clustered key).
pub fn index_entry(table: &Table, index: usize, row: &[Value], row_key: &[u8]) -> SqlResult<Vec<u8>> {
    let ix = &table.indexes[index];
    let values: Vec<Value> = ix.columns.iter().map(|&(c, _)| row[c].clone()).collect();
    let mut k = KeyBuf::new();
    encode_prefix(table, index, &values, &mut k)?;
    let mut k = k.into_vec();
    if !ix.unique {
        k.extend_from_slice(row_key);
    }
    Ok(k)
}

fn insufficient_memory() -> SqlError {
    SqlError::new(701, "There is insufficient system memory in resource pool 'default' to run this query.")
        .with_severity(17)
}

fn missing_tree(table: &str) -> SqlError {
    SqlError::new(208, format!("Invalid object name '{table}'."))
}

fn eval_all(exprs: &[Expr], row: &[Value], ctx: &mut ExecCtx) -> SqlResult<Row> {
    let mut out = Vec::with_capacity(exprs.len());
    for e in exprs {
        out.push(eval(e, row, ctx)?);
    }
    Ok(out)
}

/// The type a value is encoded as in grouping and sorting keys. Operands reaching one
/// key column always share a type (the binder converts them), so the value's own
/// representation determines the encoding.
fn key_type(v: &Value) -> SqlType {
    match v {
        Value::Null | Value::Int(_) => SqlType::BigInt,
        Value::Bit(_) => SqlType::Bit,
        Value::Float(_) => SqlType::Float,
        Value::Decimal { scale, .. } => SqlType::Decimal { precision: 38, scale: *scale },
        Value::Str(_) => SqlType::NVarChar(row::MAX),
        Value::Binary(_) => SqlType::VarBinary(row::MAX),
        Value::Date(_) => SqlType::Date,
        Value::Time(_) => SqlType::Time { scale: 7 },
        Value::DateTime { .. } => SqlType::DateTime2 { scale: 7 },
        Value::DateTimeOffset { .. } => SqlType::DateTimeOffset { scale: 7 },
        Value::Guid(_) => SqlType::UniqueIdentifier,
    }
}

/// Appends a value's memcomparable encoding.
pub fn encode_value(v: &Value, descending: bool, out: &mut KeyBuf) -> SqlResult<()> {
    types::encode_key(v, &key_type(v), descending, out)
}

/// Memcomparable bytes of a list of values: equal bytes ⇔ equal values under the collation
/// (NULLs equal each other), the grouping key of GROUP BY, DISTINCT, hash joins and UNION.
pub fn group_key(values: &[Value]) -> SqlResult<Vec<u8>> {
    let mut k = KeyBuf::new();
    for v in values {
        encode_value(v, false, &mut k)?;
    }
    Ok(k.into_vec())
}

/// Runs a plan. `corr` is the correlation row handed down by an enclosing [`Plan::Apply`]
/// (empty at the top).
pub fn run(plan: &Plan, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    ctx.check_cancel()?;
    match plan {
        Plan::Values(rows) => {
            let mut out = Collector::new();
            for r in rows {
                out.push(eval_all(r, corr, ctx)?)?;
            }
            Ok(out.rows)
        }
        Plan::Scan(node) => run_scan(node, corr, ctx),
        Plan::RecursiveCte { id, anchor, recursive, max_recursion } => {
            let anchor_rows = run(anchor, corr, ctx)?;
            let outer_round = ctx.work_tables.remove(id);
            let result = run_recursive(*id, anchor_rows, recursive, *max_recursion, corr, ctx);
            match outer_round {
                Some(rows) => ctx.work_tables.insert(*id, rows),
                None => ctx.work_tables.remove(id),
            };
            result
        }
        Plan::WorkTable { id } => Ok(ctx.work_tables.get(id).cloned().unwrap_or_default()),
        Plan::System { view, db } => crate::sysviews::rows(*view, db, ctx),
        Plan::Filter { input, predicate } => {
            let rows = run(input, corr, ctx)?;
            let mut out = Vec::new();
            for r in rows {
                if is_true(predicate, &r, ctx)? {
                    out.push(r);
                }
            }
            Ok(out)
        }
        Plan::Project { input, exprs } => {
            let rows = run(input, corr, ctx)?;
            let mut out = Collector::new();
            for r in rows {
                out.push(eval_all(exprs, &r, ctx)?)?;
            }
            Ok(out.rows)
        }
        Plan::NestedLoop { left, right, kind, on, left_width, right_width } => {
            let l = run(left, corr, ctx)?;
            let r = run(right, corr, ctx)?;
            nested_loop(l, &r, *kind, on.as_ref(), *left_width, *right_width, ctx)
        }
        Plan::HashJoin { left, right, kind, left_keys, right_keys, residual, left_width, right_width } => {
            let l = run(left, corr, ctx)?;
            let r = run(right, corr, ctx)?;
            let mut table: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
            for (i, row) in r.iter().enumerate() {
                let k = eval_all(right_keys, row, ctx)?;
                if k.iter().any(Value::is_null) {
                    continue;
                }
                table.entry(group_key(&k)?).or_default().push(i);
            }
            let mut matched_right = vec![false; r.len()];
            let mut out = Collector::new();
            for lrow in l {
                let k = eval_all(left_keys, &lrow, ctx)?;
                let mut matched = false;
                if !k.iter().any(Value::is_null) {
                    if let Some(cands) = table.get(&group_key(&k)?) {
                        for &i in cands {
                            let mut combined = lrow.clone();
                            combined.extend_from_slice(&r[i]);
                            if let Some(res) = residual {
                                if !is_true(res, &combined, ctx)? {
                                    continue;
                                }
                            }
                            matched = true;
                            matched_right[i] = true;
                            out.push(combined)?;
                        }
                    }
                }
                if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                    let mut combined = lrow;
                    combined.extend(std::iter::repeat_n(Value::Null, *right_width));
                    out.push(combined)?;
                }
            }
            if matches!(kind, JoinKind::Right | JoinKind::Full) {
                for (i, m) in matched_right.iter().enumerate() {
                    if !m {
                        let mut combined: Row = std::iter::repeat_n(Value::Null, *left_width).collect();
                        combined.extend_from_slice(&r[i]);
                        out.push(combined)?;
                    }
                }
            }
            Ok(out.rows)
        }
        Plan::Apply { left, right, kind, on, right_width } => {
            let l = run(left, corr, ctx)?;
            let mut out = Collector::new();
            for lrow in l {
                let rrows = run(right, &lrow, ctx)?;
                let mut matched = false;
                for rrow in rrows {
                    let mut combined = lrow.clone();
                    combined.extend(rrow);
                    if let Some(on) = on {
                        if !is_true(on, &combined, ctx)? {
                            continue;
                        }
                    }
                    matched = true;
                    out.push(combined)?;
                }
                if !matched && matches!(kind, JoinKind::Left | JoinKind::OuterApply) {
                    let mut combined = lrow;
                    combined.extend(std::iter::repeat_n(Value::Null, *right_width));
                    out.push(combined)?;
                }
            }
            Ok(out.rows)
        }
        Plan::Aggregate { input, group_by, aggregates } => {
            let rows = run(input, corr, ctx)?;
            aggregate(rows, group_by, aggregates, ctx)
        }
        Plan::Sort { input, keys } => {
            let rows = run(input, corr, ctx)?;
            sort_rows(rows, keys, ctx)
        }
        Plan::Top { input, count, percent: false, ties }
            if ties.is_empty() && locked_top_input(input, ctx).is_some() =>
        {
            let top = locked_top_input(input, ctx).expect("checked");
            let limit = top_count(&eval(count, corr, ctx)?, false, usize::MAX)?;
            let rows = run_locked_top(top.node, top.filter, limit, corr, ctx)?;
            match top.project {
                Some(exprs) => rows.iter().map(|r| eval_all(exprs, r, ctx)).collect(),
                None => Ok(rows),
            }
        }
        Plan::Top { input, count, percent, ties } => {
            let rows = run(input, corr, ctx)?;
            let n = eval(count, corr, ctx)?;
            let limit = top_count(&n, *percent, rows.len())?;
            let mut out = Vec::with_capacity(limit.min(rows.len()));
            let mut last_keys: Option<Row> = None;
            for r in rows {
                if out.len() >= limit {
                    let Some(prev) = &last_keys else { break };
                    if ties.is_empty() || !same_keys(&eval_all(ties, &r, ctx)?, prev) {
                        break;
                    }
                    out.push(r);
                    continue;
                }
                if !ties.is_empty() {
                    last_keys = Some(eval_all(ties, &r, ctx)?);
                }
                out.push(r);
            }
            Ok(out)
        }
        Plan::Offset { input, offset, fetch } => {
            let rows = run(input, corr, ctx)?;
            let off = offset_count(&eval(offset, corr, ctx)?)?;
            let take = match fetch {
                Some(f) => fetch_count(&eval(f, corr, ctx)?)?,
                None => usize::MAX,
            };
            Ok(rows.into_iter().skip(off).take(take).collect())
        }
        Plan::Distinct { input } => {
            let rows = run(input, corr, ctx)?;
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for r in rows {
                if seen.insert(group_key(&r)?) {
                    out.push(r);
                }
            }
            Ok(out)
        }
        Plan::SetOp { op, all, left, right } => {
            let l = run(left, corr, ctx)?;
            let r = run(right, corr, ctx)?;
            set_operation(*op, *all, l, r)
        }
        Plan::RowNumber { input, partition, order } => {
            let rows = run(input, corr, ctx)?;
            row_number(rows, partition, order, ctx)
        }
    }
}

fn same_keys(a: &[Value], b: &[Value]) -> bool {
    a.iter().zip(b).all(|(x, y)| match (x.is_null(), y.is_null()) {
        (true, true) => true,
        (false, false) => types::compare(x, y) == Some(std::cmp::Ordering::Equal),
        _ => false,
    })
}

/// The row count of an OFFSET clause (errors 10742 and, for NULL, 10743).
pub fn offset_count(v: &Value) -> SqlResult<usize> {
    match v {
        Value::Int(n) if *n >= 0 => Ok(*n as usize),
        Value::Int(_) => {
            Err(SqlError::new(10742, "The offset specified in a OFFSET clause may not be negative.").with_severity(15))
        }
        _ => Err(row_count_not_integer("OFFSET")),
    }
}

/// The row count of a FETCH clause (errors 10744 and, for NULL, 10743).
pub fn fetch_count(v: &Value) -> SqlResult<usize> {
    match v {
        Value::Int(n) if *n > 0 => Ok(*n as usize),
        Value::Int(_) => {
            Err(SqlError::new(10744, "The number of rows provided for a FETCH clause must be greater then zero.")
                .with_severity(15))
        }
        _ => Err(row_count_not_integer("FETCH")),
    }
}

fn row_count_not_integer(clause: &str) -> SqlError {
    SqlError::new(10743, format!("The number of rows provided for a {clause} clause must be an integer."))
        .with_severity(15)
}

fn top_count(n: &Value, percent: bool, total: usize) -> SqlResult<usize> {
    if percent {
        let p = match n {
            Value::Float(f) => *f,
            Value::Int(i) => *i as f64,
            Value::Decimal { value, scale } => *value as f64 / 10f64.powi(i32::from(*scale)),
            _ => 0.0,
        };
        if !(0.0..=100.0).contains(&p) {
            return Err(SqlError::new(1031, "Percent values must be between 0 and 100."));
        }
        return Ok((p / 100.0 * total as f64).ceil() as usize);
    }
    match n {
        Value::Int(i) if *i >= 0 => Ok(*i as usize),
        Value::Null => Err(SqlError::new(1060, "The number of rows in the TOP clause must be an integer.")),
        _ => Err(SqlError::new(
            1060,
            "The number of rows provided for a TOP or FETCH clauses row count parameter must be an integer.",
        )),
    }
}

fn nested_loop(
    l: Vec<Row>,
    r: &[Row],
    kind: JoinKind,
    on: Option<&Expr>,
    left_width: usize,
    right_width: usize,
    ctx: &mut ExecCtx,
) -> SqlResult<Vec<Row>> {
    let mut out = Collector::new();
    let mut matched_right = vec![false; r.len()];
    for lrow in l {
        let mut matched = false;
        for (i, rrow) in r.iter().enumerate() {
            let mut combined = lrow.clone();
            combined.extend_from_slice(rrow);
            if let Some(on) = on {
                if !is_true(on, &combined, ctx)? {
                    continue;
                }
            }
            matched = true;
            matched_right[i] = true;
            out.push(combined)?;
        }
        if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
            let mut combined = lrow;
            combined.extend(std::iter::repeat_n(Value::Null, right_width));
            out.push(combined)?;
        }
    }
    if matches!(kind, JoinKind::Right | JoinKind::Full) {
        for (i, m) in matched_right.iter().enumerate() {
            if !m {
                let mut combined: Row = std::iter::repeat_n(Value::Null, left_width).collect();
                combined.extend_from_slice(&r[i]);
                out.push(combined)?;
            }
        }
    }
    Ok(out.rows)
}

fn sort_rows(rows: Vec<Row>, keys: &[SortKey], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    let mut keyed = Vec::with_capacity(rows.len());
    for r in rows {
        let mut k = KeyBuf::new();
        for key in keys {
            let v = eval(&key.expr, &r, ctx)?;
            encode_value(&v, key.descending, &mut k)?;
        }
        keyed.push((k.into_vec(), r));
    }
    // Stable: rows with equal keys keep their input order.
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(keyed.into_iter().map(|(_, r)| r).collect())
}

struct AggState {
    count: i64,
    sum: Option<Value>,
    best: Option<Value>,
    seen: HashSet<Vec<u8>>,
}

impl AggState {
    fn new() -> AggState {
        AggState { count: 0, sum: None, best: None, seen: HashSet::new() }
    }
}

fn sum_type(call: &AggCall) -> SqlType {
    call.ty
}

fn accumulate(call: &AggCall, st: &mut AggState, v: Value, null_eliminated: &mut bool) -> SqlResult<()> {
    if call.arg.is_some() && v.is_null() {
        *null_eliminated = true;
        return Ok(());
    }
    if call.distinct && !st.seen.insert(group_key(std::slice::from_ref(&v))?) {
        return Ok(());
    }
    st.count += 1;
    match call.func {
        AggFunc::Count | AggFunc::CountBig => {}
        AggFunc::Sum | AggFunc::Avg => {
            let t = sum_type(call);
            let v = types::cast(&v, &call.arg_type, &t, None)?;
            st.sum = Some(match st.sum.take() {
                None => v,
                Some(s) => types::binary_op(BinaryOp::Add, &s, &v, &t)?,
            });
        }
        AggFunc::Min | AggFunc::Max => {
            let replace = match &st.best {
                None => true,
                Some(b) => {
                    let o = types::compare(&v, b);
                    if call.func == AggFunc::Min {
                        o == Some(std::cmp::Ordering::Less)
                    } else {
                        o == Some(std::cmp::Ordering::Greater)
                    }
                }
            };
            if replace {
                st.best = Some(v);
            }
        }
    }
    Ok(())
}

fn finish(call: &AggCall, st: AggState) -> SqlResult<Value> {
    Ok(match call.func {
        AggFunc::Count => {
            if st.count > i64::from(i32::MAX) {
                return Err(SqlError::new(8115, "Arithmetic overflow error converting expression to data type int."));
            }
            Value::Int(st.count)
        }
        AggFunc::CountBig => Value::Int(st.count),
        AggFunc::Sum => st.sum.unwrap_or(Value::Null),
        AggFunc::Avg => match st.sum {
            None => Value::Null,
            Some(s) => {
                let t = call.ty;
                let n = types::cast(&Value::Int(st.count), &SqlType::BigInt, &t, None)?;
                types::binary_op(BinaryOp::Divide, &s, &n, &t)?
            }
        },
        AggFunc::Min | AggFunc::Max => st.best.unwrap_or(Value::Null),
    })
}

fn aggregate(rows: Vec<Row>, group_by: &[Expr], aggregates: &[AggCall], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    let mut order: Vec<Vec<u8>> = Vec::new();
    let mut groups: HashMap<Vec<u8>, (Row, Vec<AggState>)> = HashMap::new();
    for r in rows {
        let g = eval_all(group_by, &r, ctx)?;
        let key = group_key(&g)?;
        if !groups.contains_key(&key) {
            order.push(key.clone());
            groups.insert(key.clone(), (g, aggregates.iter().map(|_| AggState::new()).collect()));
        }
        let (_, states) = groups.get_mut(&key).expect("inserted above");
        for (call, st) in aggregates.iter().zip(states.iter_mut()) {
            let v = match &call.arg {
                Some(e) => eval(e, &r, ctx)?,
                None => Value::Int(1),
            };
            accumulate(call, st, v, &mut ctx.session.null_eliminated)?;
        }
    }
    // A scalar aggregate (no GROUP BY) returns one row even over no input.
    if group_by.is_empty() && groups.is_empty() {
        order.push(Vec::new());
        groups.insert(Vec::new(), (Vec::new(), aggregates.iter().map(|_| AggState::new()).collect()));
    }
    let mut out = Vec::with_capacity(order.len());
    for key in order {
        let (mut g, states) = groups.remove(&key).expect("group exists");
        for (call, st) in aggregates.iter().zip(states) {
            g.push(finish(call, st)?);
        }
        out.push(g);
    }
    Ok(out)
}

fn set_operation(op: SetOperator, all: bool, l: Vec<Row>, r: Vec<Row>) -> SqlResult<Vec<Row>> {
    match op {
        SetOperator::Union => {
            let mut out = l;
            out.extend(r);
            if all {
                return Ok(out);
            }
            let mut seen = HashSet::new();
            let mut dedup = Vec::new();
            for row in out {
                if seen.insert(group_key(&row)?) {
                    dedup.push(row);
                }
            }
            Ok(dedup)
        }
        SetOperator::Except | SetOperator::Intersect => {
            let mut right = HashSet::new();
            for row in &r {
                right.insert(group_key(row)?);
            }
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for row in l {
                let k = group_key(&row)?;
                let keep = right.contains(&k) == (op == SetOperator::Intersect);
                if keep && seen.insert(k) {
                    out.push(row);
                }
            }
            Ok(out)
        }
    }
}

fn row_number(rows: Vec<Row>, partition: &[Expr], order: &[SortKey], ctx: &mut ExecCtx) -> SqlResult<Vec<Row>> {
    // Sort by (partition, order), number within each partition, keep the sorted order.
    let mut keyed = Vec::with_capacity(rows.len());
    for r in rows {
        let mut pk = KeyBuf::new();
        for e in partition {
            encode_value(&eval(e, &r, ctx)?, false, &mut pk)?;
        }
        let mut ok = KeyBuf::new();
        for k in order {
            encode_value(&eval(&k.expr, &r, ctx)?, k.descending, &mut ok)?;
        }
        keyed.push((pk.into_vec(), ok.into_vec(), r));
    }
    keyed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut out = Vec::with_capacity(keyed.len());
    let mut n = 0i64;
    let mut prev: Option<Vec<u8>> = None;
    for (p, _, mut r) in keyed {
        if prev.as_ref() != Some(&p) {
            n = 0;
            prev = Some(p);
        }
        n += 1;
        r.push(Value::Int(n));
        out.push(r);
    }
    Ok(out)
}
