//! Compiling and running queries and data changes: SELECT, variable assignment, INSERT,
//! UPDATE, DELETE — with identity values, defaults, NOT NULL, CHECK and FOREIGN KEY
//! constraints, unique keys and nonclustered index maintenance.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tessera_access::key::KeyBuf;
use tessera_access::row;
use tessera_database::TableId;

use crate::bind::{convert, invalid_column, Binder, BoundQuery, OutputColumn};
use crate::catalog::{Action, Index, Table};
use crate::plan::{self, decode_row, eval, run, Expr, Plan, Row};
use crate::runtime::ExecCtx;
use crate::types::{self, SqlType, Value};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast;

/// Largest clustered index key, in bytes (SQL Server's limit).
pub const MAX_CLUSTERED_KEY: usize = 900;

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
}

#[derive(Debug, Clone)]
pub struct Target {
    pub db: String,
    pub table: Arc<Table>,
    /// Bound CHECK constraints over the table's row: (name, predicate).
    pub checks: Vec<(String, Expr)>,
    /// Bound DEFAULT expressions per column.
    pub defaults: Vec<Option<(Expr, SqlType)>>,
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

/// An OUTPUT clause: expressions over `deleted` columns followed by `inserted` columns.
#[derive(Debug)]
pub struct OutputPlan {
    pub exprs: Vec<Expr>,
    pub columns: Vec<OutputColumn>,
    /// `OUTPUT … INTO t [(cols)]`: the rows go into this insert instead of to the client.
    pub into: Option<Box<InsertPlan>>,
}

#[derive(Debug)]
pub struct UpdatePlan {
    pub target: Target,
    /// Rows of the FROM clause, including the target's columns and key.
    pub source: Plan,
    /// Where the target table's columns start in a source row, and its key column.
    pub offset: usize,
    pub key: usize,
    /// (column, value over the source row, value type)
    pub sets: Vec<(usize, Expr, SqlType)>,
    /// Variables assigned in the SET list: (slot, value, value type, variable type).
    pub variables: Vec<(usize, VarSource, SqlType, SqlType)>,
    pub output: Option<OutputPlan>,
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

fn object_name(t: &Table) -> String {
    format!("{}.{}", t.schema, crate::catalog::display_name(&t.name))
}

// ---- compiling -----------------------------------------------------------------------------

/// Binds CHECK and DEFAULT definitions of a table against its own row.
pub fn bind_target(b: &mut Binder, db: String, table: Arc<Table>) -> SqlResult<Target> {
    let mut checks = Vec::new();
    let mut defaults = Vec::new();
    b.with_table_scope(&table, |b| -> SqlResult<()> {
        for c in &table.checks {
            let e = tessera_syntax::unparse::parse_definition(&c.text)?;
            checks.push((c.name.clone(), b.bind_predicate(&e)?));
        }
        for col in &table.columns {
            defaults.push(match &col.default {
                Some(d) => {
                    let e = tessera_syntax::unparse::parse_definition(&d.text)?;
                    Some(b.bind_expr(&e)?)
                }
                None => None,
            });
        }
        Ok(())
    })?;
    Ok(Target { db, table, checks, defaults })
}

fn bind_output(b: &mut Binder, table: &Table, output: Option<&ast::Output>) -> SqlResult<Option<OutputPlan>> {
    let Some(out) = output else { return Ok(None) };
    let mut plan = b.with_output_scope(table, |b| {
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        let n = table.columns.len();
        for item in &out.items {
            match item {
                ast::SelectItem::QualifiedWildcard(q) => {
                    let which = q.name().value.to_lowercase();
                    let base = match which.as_str() {
                        "deleted" => 0,
                        "inserted" => n,
                        _ => {
                            return Err(SqlError::new(
                                4104,
                                format!("The multi-part identifier \"{}\" could not be bound.", q.name().value),
                            ))
                        }
                    };
                    for (i, c) in table.columns.iter().enumerate() {
                        exprs.push(Expr::Column(base + i));
                        columns.push(OutputColumn { name: c.name.clone(), ty: c.ty, nullable: true });
                    }
                }
                ast::SelectItem::Expr { expr, alias } => {
                    let (e, t) = b.bind_expr(expr)?;
                    let name = alias.as_ref().map(|a| a.value.clone()).unwrap_or_else(|| match expr {
                        ast::Expr::Column(c) => c.name().value.clone(),
                        _ => String::new(),
                    });
                    exprs.push(e);
                    columns.push(OutputColumn { name, ty: t, nullable: true });
                }
                _ => return Err(SqlError::new(102, "Incorrect syntax near '*'.").with_severity(15)),
            }
        }
        Ok(OutputPlan { exprs, columns, into: None })
    })?;
    if let Some((target, cols)) = &out.into {
        let insert = ast::Insert {
            top: None,
            table: target.clone(),
            columns: cols.clone(),
            output: None,
            source: ast::InsertSource::Values(Vec::new()),
        };
        let mut into = compile_insert(b, &insert)?;
        if into.columns.len() != plan.columns.len() {
            return Err(SqlError::new(
                213,
                "Column name or number of supplied values does not match table definition.",
            ));
        }
        into.source_types = plan.columns.iter().map(|c| c.ty).collect();
        plan.into = Some(Box::new(into));
    }
    Ok(Some(plan))
}

/// Inserts OUTPUT rows into the `OUTPUT … INTO` target.
pub fn run_output_into(ctx: &mut ExecCtx, into: &InsertPlan, rows: Vec<Row>) -> SqlResult<u64> {
    let source =
        InsertSource::Rows(rows.into_iter().map(|r| r.into_iter().map(|v| Some(Expr::Const(v))).collect()).collect());
    let plan = InsertPlan {
        target: Target {
            db: into.target.db.clone(),
            table: into.target.table.clone(),
            checks: into.target.checks.clone(),
            defaults: into.target.defaults.clone(),
        },
        columns: into.columns.clone(),
        source_types: into.source_types.clone(),
        source,
        output: None,
        top: None,
        explicit_identity: into.explicit_identity,
    };
    Ok(run_insert(ctx, &plan)?.0)
}

/// An INSERT without a column list whose values do not fit the table's columns (a value
/// for every column, identity included, is an identity error).
fn mismatched_insert(table: &Table, values: usize) -> SqlError {
    if table.identity_column().is_some() && values == table.columns.len() {
        return explicit_identity(table);
    }
    SqlError::new(213, "Column name or number of supplied values does not match table definition.")
}

fn explicit_identity(table: &Table) -> SqlError {
    SqlError::new(
        8101,
        format!("An explicit value for the identity column in table '{}' can only be specified when a column list is used and IDENTITY_INSERT is ON.", table.name),
    )
}

fn bind_top(b: &mut Binder, top: Option<&ast::Top>) -> SqlResult<Option<Expr>> {
    match top {
        None => Ok(None),
        Some(t) => {
            let (e, ty) = b.bind_expr(&t.count)?;
            Ok(Some(convert(e, &ty, &SqlType::BigInt)?))
        }
    }
}

pub fn compile_insert(b: &mut Binder, ins: &ast::Insert) -> SqlResult<InsertPlan> {
    let rt = b.resolve_table(&ins.table)?;
    let table = rt.table.clone();
    let identity = table.identity_column();
    let identity_insert = b
        .session
        .options
        .identity_insert
        .as_ref()
        .is_some_and(|(db, id)| db.eq_ignore_ascii_case(&rt.db) && *id == table.id);
    let columns: Vec<usize> = if ins.columns.is_empty() {
        if identity_insert && identity.is_some() {
            return Err(explicit_identity(&table));
        }
        (0..table.columns.len()).filter(|&i| Some(i) != identity).collect()
    } else {
        let mut cols = Vec::new();
        for c in &ins.columns {
            let i = table.column(&c.value).ok_or_else(|| invalid_column(&c.value))?;
            if cols.contains(&i) {
                return Err(SqlError::new(
                    264,
                    format!("The column name '{}' is specified more than once in the SET clause or column list of an INSERT. A column cannot be assigned more than one value in the same clause. Modify the clause to make sure that a column is updated only once. If this statement updates or inserts columns into a view, column aliasing can conceal the duplication in your code.", c.value),
                ));
            }
            cols.push(i);
        }
        cols
    };
    // Whether IDENTITY_INSERT allows it is checked when the statement runs: a SET earlier
    // in the same batch may turn it on.
    let explicit_identity = identity.is_some_and(|id| columns.contains(&id));
    let (source, source_types) = match &ins.source {
        ast::InsertSource::DefaultValues => (InsertSource::DefaultValues, Vec::new()),
        ast::InsertSource::Values(rows) => {
            let mut bound_rows = Vec::with_capacity(rows.len());
            for r in rows {
                if r.len() != columns.len() && ins.columns.is_empty() {
                    return Err(mismatched_insert(&table, r.len()));
                }
                if r.len() != columns.len() {
                    let (n, msg) = if r.len() > columns.len() {
                        (110, "There are fewer columns in the INSERT statement than values specified in the VALUES clause. The number of values in the VALUES clause must match the number of columns specified in the INSERT statement.")
                    } else {
                        (109, "There are more columns in the INSERT statement than values specified in the VALUES clause. The number of values in the VALUES clause must match the number of columns specified in the INSERT statement.")
                    };
                    return Err(SqlError::new(n, msg).with_severity(15));
                }
                let mut br = Vec::with_capacity(r.len());
                for e in r {
                    br.push(match e {
                        ast::Expr::Default => None,
                        e => Some(b.bind_expr(e)?),
                    });
                }
                bound_rows.push(br);
            }
            // One type per column across the rows, as a table value constructor has.
            let mut types_ = Vec::with_capacity(columns.len());
            for (j, &col) in columns.iter().enumerate() {
                let mut t: Option<SqlType> = None;
                for r in &bound_rows {
                    if let Some((e, et)) = &r[j] {
                        if matches!(e, Expr::Const(Value::Null)) {
                            continue;
                        }
                        t = Some(match t {
                            None => *et,
                            Some(acc) if bound_rows.len() > 1 => types::common_type(&acc, et)?,
                            Some(acc) => acc,
                        });
                    }
                }
                types_.push(t.unwrap_or(table.columns[col].ty));
            }
            let mut out = Vec::with_capacity(bound_rows.len());
            for r in bound_rows {
                let mut row = Vec::with_capacity(r.len());
                for (j, v) in r.into_iter().enumerate() {
                    row.push(match v {
                        None => None,
                        Some((e, et)) => {
                            Some(if matches!(e, Expr::Const(Value::Null)) { e } else { convert(e, &et, &types_[j])? })
                        }
                    });
                }
                out.push(row);
            }
            (InsertSource::Rows(out), types_)
        }
        ast::InsertSource::Query(q) => {
            let bound = b.bind_query(q)?;
            if bound.columns.len() != columns.len() && ins.columns.is_empty() {
                return Err(mismatched_insert(&table, bound.columns.len()));
            }
            if bound.columns.len() != columns.len() {
                return Err(SqlError::new(
                    if bound.columns.len() > columns.len() { 121 } else { 120 },
                    if bound.columns.len() > columns.len() {
                        "The select list for the INSERT statement contains more items than the insert list. The number of SELECT values must match the number of INSERT columns."
                    } else {
                        "The select list for the INSERT statement contains fewer items than the insert list. The number of SELECT values must match the number of INSERT columns."
                    },
                ).with_severity(15));
            }
            let types_ = bound.columns.iter().map(|c| c.ty).collect();
            (InsertSource::Query(Box::new(bound.plan)), types_)
        }
        ast::InsertSource::Execute(_) => {
            // The session runs the procedure first and supplies its rows (session.rs).
            (InsertSource::Rows(Vec::new()), Vec::new())
        }
    };
    let output = bind_output(b, &table, ins.output.as_ref())?;
    let top = bind_top(b, ins.top.as_ref())?;
    let target = bind_target(b, rt.db, table)?;
    Ok(InsertPlan { target, columns, source_types, source, output, top, explicit_identity })
}

/// Resolves the UPDATE/DELETE target among the FROM tables (by alias or name).
fn dml_from(target: &ast::ObjectName, hints: &[String], from: &[ast::TableRef]) -> (Vec<ast::TableRef>, String) {
    let qualifier = target.name().value.to_lowercase();
    if from.is_empty() {
        let t = ast::TableRef::Named { name: target.clone(), alias: None, hints: hints.to_vec() };
        return (vec![t], qualifier);
    }
    let mut from = from.to_vec();
    for r in &mut from {
        if let ast::TableRef::Named { name, alias, hints: named_hints } = r {
            if alias.as_ref().unwrap_or(name.name()).value.eq_ignore_ascii_case(&qualifier) {
                named_hints.extend(hints.iter().cloned());
            }
        }
    }
    (from, qualifier)
}

fn find_named<'x>(refs: &'x [ast::TableRef], qualifier: &str) -> Option<&'x ast::ObjectName> {
    for r in refs {
        match r {
            ast::TableRef::Named { name, alias, .. } => {
                let q = alias.as_ref().unwrap_or(name.name()).value.to_lowercase();
                if q == qualifier {
                    return Some(name);
                }
            }
            ast::TableRef::Join { left, right, .. } => {
                if let Some(n) = find_named(std::slice::from_ref(left), qualifier)
                    .or_else(|| find_named(std::slice::from_ref(right), qualifier))
                {
                    return Some(n);
                }
            }
            _ => {}
        }
    }
    None
}

fn bind_dml_source(
    b: &mut Binder,
    target: &ast::ObjectName,
    hints: &[String],
    from: &[ast::TableRef],
    selection: Option<&ast::Expr>,
    top: Option<&ast::Top>,
) -> SqlResult<(String, Arc<Table>, Plan, crate::bind::Scope, usize, usize)> {
    if hints.iter().any(|h| h == "NOLOCK" || h == "READUNCOMMITTED") {
        return Err(SqlError::new(
            1065,
            "The NOLOCK and READUNCOMMITTED lock hints are not allowed for target tables of INSERT, UPDATE, DELETE or MERGE statements.",
        )
        .with_severity(15));
    }
    let (from, qualifier) = dml_from(target, hints, from);
    let name = find_named(&from, &qualifier).cloned().unwrap_or_else(|| target.clone());
    let rt = b.resolve_table(&name)?;
    let (mut plan, scope) = b.bind_from_where(&from, selection, Some(&qualifier))?;
    let key = scope.target_key().ok_or_else(|| crate::bind::invalid_object(&target.name().value))?;
    let offset = key - rt.table.columns.len();
    if let Some(t) = top {
        let (e, ty) = b.bind_expr(&t.count)?;
        plan = Plan::Top {
            input: Box::new(plan),
            count: convert(e, &ty, &SqlType::BigInt)?,
            percent: t.percent,
            ties: Vec::new(),
        };
    }
    Ok((rt.db, rt.table, plan, scope, offset, key))
}

pub fn compile_update(b: &mut Binder, up: &ast::Update) -> SqlResult<UpdatePlan> {
    b.bind_ctes(&up.with, up.max_recursion)?;
    let (db, table, source, scope, offset, key) =
        bind_dml_source(b, &up.table, &up.table_hints, &up.from, up.selection.as_ref(), up.top.as_ref())?;
    let mut sets = Vec::new();
    let mut variables = Vec::new();
    b.with_bound_scope(scope, |b| -> SqlResult<()> {
        for a in &up.assignments {
            match a {
                ast::Assignment::Column { column, op, value } => {
                    let col = table.column(&column.name().value).ok_or_else(|| invalid_column(&column.name().value))?;
                    if table.columns[col].identity.is_some() {
                        return Err(SqlError::new(8102, format!("Cannot update identity column '{}'.", table.columns[col].name)));
                    }
                    if sets.iter().any(|(c, _, _)| *c == col) {
                        return Err(SqlError::new(
                            264,
                            format!("The column name '{}' is specified more than once in the SET clause or column list of an INSERT. A column cannot be assigned more than one value in the same clause. Modify the clause to make sure that a column is updated only once. If this statement updates or inserts columns into a view, column aliasing can conceal the duplication in your code.", table.columns[col].name),
                        ));
                    }
                    let value = match op {
                        Some(op) => ast::Expr::Binary { op: *op, left: Box::new(ast::Expr::Column(column.clone())), right: Box::new(value.clone()) },
                        None => value.clone(),
                    };
                    let (e, t) = match value {
                        ast::Expr::Default => match &table.columns[col].default {
                            Some(d) => b.bind_expr(&tessera_syntax::unparse::parse_definition(&d.text)?)?,
                            None => (Expr::Const(Value::Null), table.columns[col].ty),
                        },
                        v => b.bind_expr(&v)?,
                    };
                    sets.push((col, e, t));
                }
                ast::Assignment::Variable { name, op, value } => {
                    let (slot, vt) = b.variable_slot(name)?;
                    let value = match op {
                        Some(op) => ast::Expr::Binary { op: *op, left: Box::new(ast::Expr::Variable(name.clone())), right: Box::new(value.clone()) },
                        None => value.clone(),
                    };
                    let (e, t) = b.bind_expr(&value)?;
                    variables.push((slot, VarSource::Expr(e), t, vt));
                }
                ast::Assignment::Both { variable, column, value } => {
                    let col = table.column(&column.name().value).ok_or_else(|| invalid_column(&column.name().value))?;
                    let (slot, vt) = b.variable_slot(variable)?;
                    let (e, t) = b.bind_expr(value)?;
                    sets.push((col, e, t));
                    variables.push((slot, VarSource::NewColumn(col), table.columns[col].ty, vt));
                }
            }
        }
        Ok(())
    })?;
    let output = bind_output(b, &table, up.output.as_ref())?;
    let target = bind_target(b, db, table)?;
    Ok(UpdatePlan { target, source, offset, key, sets, variables, output })
}

pub fn compile_delete(b: &mut Binder, del: &ast::Delete) -> SqlResult<DeletePlan> {
    b.bind_ctes(&del.with, del.max_recursion)?;
    let (db, table, source, _scope, offset, key) =
        bind_dml_source(b, &del.table, &del.table_hints, &del.from, del.selection.as_ref(), del.top.as_ref())?;
    let output = bind_output(b, &table, del.output.as_ref())?;
    let target = bind_target(b, db, table)?;
    Ok(DeletePlan { target, source, offset, key, output })
}

/// `SELECT @a = x, @b += y FROM …` and `SET @v = expr`.
pub fn compile_assign(b: &mut Binder, select: &ast::Select, order_by: &[ast::OrderItem]) -> SqlResult<Prepared> {
    let mut items = Vec::new();
    let mut targets = Vec::new();
    for item in &select.items {
        let ast::SelectItem::Assign { variable, op, value } = item else {
            return Err(SqlError::new(
                141,
                "A SELECT statement that assigns a value to a variable must not be combined with data-retrieval operations.",
            )
            .with_severity(15));
        };
        let (slot, vt) = b.variable_slot(variable)?;
        let value = match op {
            Some(op) => ast::Expr::Binary {
                op: *op,
                left: Box::new(ast::Expr::Variable(variable.clone())),
                right: Box::new(value.clone()),
            },
            None => value.clone(),
        };
        items.push(ast::SelectItem::Expr { expr: value, alias: None });
        targets.push((slot, vt));
    }
    let query = ast::Query {
        with: Vec::new(),
        body: ast::SetExpr::Select(Box::new(ast::Select { items, into: None, ..select.clone() })),
        order_by: order_by.to_vec(),
        offset: None,
        fetch: None,
        max_recursion: None,
    };
    let bound = b.bind_query(&query)?;
    let targets = targets.into_iter().zip(&bound.columns).map(|((slot, vt), c)| (slot, vt, c.ty)).collect();
    Ok(Prepared::Assign { plan: bound.plan, targets })
}

// ---- running -------------------------------------------------------------------------------

/// Converts a value for storing in a column: strings and binaries longer than the column
/// fail (error 2628) instead of being cut, as SQL Server does on INSERT and UPDATE.
pub fn assign_value(v: &Value, from: &SqlType, db: &str, table: &Table, col: usize) -> SqlResult<Value> {
    let c = &table.columns[col];
    if let Some(limit) = char_limit(&c.ty) {
        let len = match v {
            Value::Str(s)
                if matches!(
                    from,
                    SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_)
                ) =>
            {
                s.trim_end_matches(' ').chars().count()
            }
            Value::Binary(b) if matches!(from, SqlType::Binary(_) | SqlType::VarBinary(_)) => b.len(),
            _ => 0,
        };
        if len > limit {
            let shown: String = match v {
                Value::Str(s) => s.chars().take(limit).collect(),
                _ => String::new(),
            };
            return Err(SqlError::new(
                2628,
                format!(
                    "String or binary data would be truncated in table '{db}.{}', column '{}'. Truncated value: '{}'.",
                    object_name(table),
                    c.name,
                    shown
                ),
            ));
        }
    }
    types::cast(v, from, &c.ty, None)
}

fn char_limit(t: &SqlType) -> Option<usize> {
    use SqlType::*;
    match *t {
        Char(n) | VarChar(n) | NChar(n) | NVarChar(n) | Binary(n) | VarBinary(n) if n != row::MAX => {
            Some(usize::from(n))
        }
        _ => None,
    }
}

fn tree(ctx: &mut ExecCtx, db: &str, name: &str, table: &Table) -> SqlResult<TableId> {
    let tx = ctx.transaction(db)?;
    tx.database().table(name).ok_or_else(|| crate::bind::invalid_object(&table.name))
}

/// Loads a table's in-memory counters (identity, row number) from its rows once.
pub(crate) fn load_counters(ctx: &mut ExecCtx, db: &str, table: &Table) -> SqlResult<()> {
    let mut loaded = table.counters.loaded.lock().unwrap_or_else(|e| e.into_inner());
    if *loaded {
        return Ok(());
    }
    let rows_tree = tree(ctx, db, &table.indexes[0].tree, table)?;
    let schema = plan::row_schema(table)?;
    let identity = table.identity_column();
    let mut max_id: Option<i64> = None;
    let mut max_uniq = 0u64;
    let tx = ctx.transaction(db)?;
    for item in
        tx.scan(rows_tree, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, tessera_database::Direction::Forward)
    {
        let (k, v) = item?;
        if table.has_uniquifier() && k.len() >= 8 {
            max_uniq = max_uniq.max(u64::from_be_bytes(k[k.len() - 8..].try_into().expect("8 bytes")));
        }
        if let Some(i) = identity {
            let stored = row::column(&schema, &v, i)?;
            if let Value::Int(n) = decimal_to_int(types::from_storage(stored, &table.columns[i].ty)) {
                let inc = table.columns[i].identity.map_or(1, |x| x.1);
                max_id = Some(match max_id {
                    None => n,
                    Some(m) if inc > 0 => m.max(n),
                    Some(m) => m.min(n),
                });
            }
        }
    }
    if let Some(i) = identity {
        let (seed, inc) = table.columns[i].identity.expect("identity column");
        table.counters.identity.store(max_id.unwrap_or(seed - inc), Ordering::Relaxed);
    }
    table.counters.uniquifier.store(max_uniq, Ordering::Relaxed);
    *loaded = true;
    Ok(())
}

fn decimal_to_int(v: Value) -> Value {
    match v {
        Value::Decimal { value, scale: 0 } => Value::Int(value as i64),
        v => v,
    }
}

fn next_identity(table: &Table, col: usize) -> SqlResult<Value> {
    let (_, inc) = table.columns[col].identity.expect("identity column");
    let v = table.counters.identity.fetch_add(inc, Ordering::Relaxed) + inc;
    let ty = table.columns[col].ty;
    types::cast(&Value::Int(v), &SqlType::BigInt, &ty, None).map_err(|_| {
        SqlError::new(
            8115,
            format!("Arithmetic overflow error converting IDENTITY to data type {}.", types::base_type_name(&ty)),
        )
    })
}

/// Notes an explicitly inserted identity value (IDENTITY_INSERT ON): later values continue
/// above it.
fn observe_identity(table: &Table, col: usize, v: &Value) {
    if let Value::Int(n) = decimal_to_int(v.clone()) {
        let inc = table.columns[col].identity.map_or(1, |x| x.1);
        if inc > 0 {
            table.counters.identity.fetch_max(n, Ordering::Relaxed);
        } else {
            table.counters.identity.fetch_min(n, Ordering::Relaxed);
        }
    }
}

/// The storage key of a row in the table's rows tree.
pub fn row_key(table: &Table, row: &[Value], uniquifier: Option<u64>) -> SqlResult<Vec<u8>> {
    let idx = &table.indexes[0];
    let mut k = KeyBuf::new();
    for &(col, desc) in &idx.columns {
        types::encode_key(&row[col], &table.columns[col].ty, desc, &mut k)?;
    }
    if let Some(u) = uniquifier {
        k.u64(u, false);
    }
    if k.len() > MAX_CLUSTERED_KEY + 8 {
        return Err(SqlError::new(
            1946,
            format!("Operation failed. The index entry of length {} bytes for the index '{}' exceeds the maximum length of {MAX_CLUSTERED_KEY} bytes for clustered indexes.", k.len(), idx.name),
        ));
    }
    Ok(k.into_vec())
}

fn index_key(table: &Table, index: &Index, row: &[Value]) -> SqlResult<Vec<u8>> {
    let mut k = KeyBuf::new();
    for &(col, desc) in &index.columns {
        types::encode_key(&row[col], &table.columns[col].ty, desc, &mut k)?;
    }
    Ok(k.into_vec())
}

fn key_values(table: &Table, index: &Index, row: &[Value]) -> String {
    index
        .columns
        .iter()
        .map(|&(c, _)| types::display_text(&row[c], &table.columns[c].ty))
        .collect::<Vec<_>>()
        .join(", ")
}

fn duplicate_error(table: &Table, index: &Index, row: &[Value]) -> SqlError {
    let values = key_values(table, index, row);
    if index.primary_key || index.unique_constraint {
        SqlError::new(
            2627,
            format!(
                "Violation of {} constraint '{}'. Cannot insert duplicate key in object '{}'. The duplicate key value is ({values}).",
                if index.primary_key { "PRIMARY KEY" } else { "UNIQUE KEY" },
                index.name,
                object_name(table)
            ),
        )
        .with_severity(14)
    } else {
        SqlError::new(
            2601,
            format!(
                "Cannot insert duplicate key row in object '{}' with unique index '{}'. The duplicate key value is ({values}).",
                object_name(table),
                index.name
            ),
        )
        .with_severity(14)
    }
}

fn map_duplicate(e: tessera_database::Error, table: &Table, index: &Index, row: &[Value]) -> SqlError {
    match e {
        tessera_database::Error::DuplicateKey { .. } => duplicate_error(table, index, row),
        e => e.into(),
    }
}

/// A row in the storage format of its table (FixedVar).
pub fn to_storage_row(table: &Table, row: &[Value]) -> SqlResult<Vec<u8>> {
    let stored: Vec<row::Value> = row.iter().zip(&table.columns).map(|(v, c)| types::to_storage(v, &c.ty)).collect();
    let schema = plan::row_schema(table)?;
    Ok(row::encode(&schema, &stored)?)
}

/// Checks NOT NULL and CHECK constraints of a complete new row.
fn check_row(ctx: &mut ExecCtx, target: &Target, row: &[Value], kind: &str) -> SqlResult<()> {
    let table = &target.table;
    for (i, c) in table.columns.iter().enumerate() {
        if !c.nullable && row[i].is_null() {
            let verb = if kind == "INSERT" { "INSERT fails." } else { "UPDATE fails." };
            return Err(SqlError::new(
                515,
                format!(
                    "Cannot insert the value NULL into column '{}', table '{}.{}'; column does not allow nulls. {verb}",
                    c.name,
                    target.db,
                    object_name(table)
                ),
            )
            .with_state(2));
        }
    }
    for ((name, pred), def) in target.checks.iter().zip(&table.checks) {
        let v = eval(pred, row, ctx)?;
        if v == Value::Bit(false) {
            // SQL Server names the column when the constraint reads exactly one.
            let column = single_column(&def.text).map(|c| format!(", column '{c}'")).unwrap_or_default();
            return Err(SqlError::new(
                547,
                format!(
                    "The {} statement conflicted with the CHECK constraint \"{name}\". The conflict occurred in database \"{}\", table \"{}\"{column}.",
                    kind,
                    target.db,
                    object_name(table)
                ),
            )
            .with_state(0));
        }
    }
    Ok(())
}

/// The one column a CHECK definition reads, if it reads exactly one.
fn single_column(definition: &str) -> Option<String> {
    fn walk(e: &ast::Expr, out: &mut Vec<String>) {
        use ast::Expr as E;
        match e {
            E::Column(n) => {
                let name = n.name().value.clone();
                if !out.iter().any(|c| c.eq_ignore_ascii_case(&name)) {
                    out.push(name);
                }
            }
            E::Unary { expr, .. }
            | E::IsNull { expr, .. }
            | E::Nested(expr)
            | E::Collate { expr, .. }
            | E::Cast { expr, .. } => walk(expr, out),
            E::Convert { expr, .. } => walk(expr, out),
            E::Binary { left, right, .. } => {
                walk(left, out);
                walk(right, out);
            }
            E::Between { expr, low, high, .. } => {
                walk(expr, out);
                walk(low, out);
                walk(high, out);
            }
            E::Like { expr, pattern, .. } => {
                walk(expr, out);
                walk(pattern, out);
            }
            E::InList { expr, list, .. } => {
                walk(expr, out);
                list.iter().for_each(|x| walk(x, out));
            }
            E::Function { args, .. } => args.iter().for_each(|x| walk(x, out)),
            E::Case { operand, branches, otherwise } => {
                if let Some(o) = operand {
                    walk(o, out);
                }
                for (a, b) in branches {
                    walk(a, out);
                    walk(b, out);
                }
                if let Some(o) = otherwise {
                    walk(o, out);
                }
            }
            _ => {}
        }
    }
    let e = tessera_syntax::unparse::parse_definition(definition).ok()?;
    let mut cols = Vec::new();
    walk(&e, &mut cols);
    (cols.len() == 1).then(|| cols.remove(0))
}

/// Foreign keys of `table` whose columns in `row` must find a parent row.
fn check_parents(
    ctx: &mut ExecCtx,
    target: &Target,
    row: &[Value],
    changed: Option<&[usize]>,
    kind: &str,
) -> SqlResult<()> {
    let table = &target.table;
    if table.foreign_keys.is_empty() {
        return Ok(());
    }
    let database = ctx.shared.database(&target.db)?;
    let catalog = ctx.shared.catalog(&database)?;
    for fk in &table.foreign_keys {
        if let Some(ch) = changed {
            if !fk.columns.iter().any(|c| ch.contains(c)) {
                continue;
            }
        }
        if fk.columns.iter().any(|&c| row[c].is_null()) {
            continue;
        }
        let parent = catalog
            .table_by_id(fk.ref_table)
            .cloned()
            .ok_or_else(|| crate::bind::invalid_object("(referenced table)"))?;
        let values: Vec<Value> = fk
            .columns
            .iter()
            .zip(&fk.ref_columns)
            .map(|(&c, &pc)| types::cast(&row[c], &table.columns[c].ty, &parent.columns[pc].ty, None))
            .collect::<SqlResult<_>>()?;
        if !parent_exists(ctx, &target.db, &parent, &fk.ref_columns, &values)? {
            return Err(SqlError::new(
                547,
                format!(
                    "The {kind} statement conflicted with the FOREIGN KEY constraint \"{}\". The conflict occurred in database \"{}\", table \"{}\", column '{}'.",
                    fk.name,
                    target.db,
                    object_name(&parent),
                    parent.columns[fk.ref_columns[0]].name
                ),
            )
            .with_state(0));
        }
    }
    Ok(())
}

/// Whether `table` has a row whose `columns` equal `values`, through an index on them.
fn parent_exists(ctx: &mut ExecCtx, db: &str, table: &Table, columns: &[usize], values: &[Value]) -> SqlResult<bool> {
    let found = table.indexes.iter().position(|ix| {
        ix.unique && ix.columns.len() == columns.len() && ix.columns.iter().all(|(c, _)| columns.contains(c))
    });
    let Some(pos) = found else { return Ok(false) };
    let ix = &table.indexes[pos];
    let mut full = vec![Value::Null; table.columns.len()];
    for (c, v) in columns.iter().zip(values) {
        full[*c] = v.clone();
    }
    let key = if pos == 0 { row_key(table, &full, None)? } else { index_key(table, ix, &full)? };
    let t = tree(ctx, db, &ix.tree, table)?;
    let tx = ctx.transaction(db)?;
    Ok(tx.get(t, &key)?.is_some())
}

/// Rows of other tables referencing `row` of `table` through foreign key columns.
fn referencing_rows(
    ctx: &mut ExecCtx,
    db: &str,
    child: &Table,
    fk: &crate::catalog::ForeignKey,
    parent: &Table,
    row: &[Value],
) -> SqlResult<Vec<(Vec<u8>, Row)>> {
    let values: Vec<Value> = fk
        .ref_columns
        .iter()
        .zip(&fk.columns)
        .map(|(&pc, &cc)| types::cast(&row[pc], &parent.columns[pc].ty, &child.columns[cc].ty, None))
        .collect::<SqlResult<_>>()?;
    if values.iter().any(Value::is_null) {
        return Ok(Vec::new());
    }
    // Scan the child's rows (through an index whose leading columns are the FK columns
    // when there is one).
    let schema = plan::row_schema(child)?;
    let rows_tree = tree(ctx, db, &child.indexes[0].tree, child)?;
    let mut out = Vec::new();
    let tx = ctx.transaction(db)?;
    for item in
        tx.scan(rows_tree, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, tessera_database::Direction::Forward)
    {
        let (k, v) = item?;
        let r = decode_row(child, &schema, &v)?;
        let hit =
            fk.columns.iter().zip(&values).all(|(&c, v)| types::compare(&r[c], v) == Some(std::cmp::Ordering::Equal));
        if hit {
            out.push((k, r));
        }
    }
    Ok(out)
}

/// Enforces foreign keys referencing `table` when `row` is deleted or its key changes:
/// NO ACTION fails, CASCADE deletes (or updates) children, SET NULL/DEFAULT updates them.
fn check_children(
    ctx: &mut ExecCtx,
    target: &Target,
    old: &[Value],
    new: Option<&[Value]>,
    kind: &str,
    depth: usize,
) -> SqlResult<()> {
    let database = ctx.shared.database(&target.db)?;
    let catalog = ctx.shared.catalog(&database)?;
    let table = &target.table;
    for (child, i) in catalog.referencing(table.id) {
        let fk = &child.foreign_keys[i];
        if let Some(new) = new {
            let same =
                fk.ref_columns.iter().all(|&c| types::compare(&old[c], &new[c]) == Some(std::cmp::Ordering::Equal));
            if same {
                continue;
            }
        }
        let rows = referencing_rows(ctx, &target.db, &child, fk, table, old)?;
        if rows.is_empty() {
            continue;
        }
        let action = if new.is_some() { fk.on_update } else { fk.on_delete };
        let child_target = {
            let shared = ctx.shared;
            let session = &*ctx.session;
            let mut b = Binder::new(shared, session, &[]);
            bind_target(&mut b, target.db.clone(), child.clone())?
        };
        match action {
            Action::NoAction => {
                return Err(SqlError::new(
                    547,
                    format!(
                        "The {kind} statement conflicted with the REFERENCE constraint \"{}\". The conflict occurred in database \"{}\", table \"{}\", column '{}'.",
                        fk.name,
                        target.db,
                        object_name(&child),
                        child.columns[fk.columns[0]].name
                    ),
                )
                .with_state(0))
            }
            Action::Cascade if new.is_none() => {
                for (k, r) in rows {
                    delete_row(ctx, &child_target, &k, &r, depth + 1)?;
                }
            }
            Action::Cascade | Action::SetNull | Action::SetDefault => {
                for (k, r) in rows {
                    let mut changed = r.clone();
                    for (j, &c) in fk.columns.iter().enumerate() {
                        changed[c] = match action {
                            Action::Cascade => new.map(|n| n[fk.ref_columns[j]].clone()).unwrap_or(Value::Null),
                            Action::SetNull => Value::Null,
                            _ => match &child_target.defaults[c] {
                                Some((e, t)) => types::cast(&eval(e, &[], ctx)?, t, &child.columns[c].ty, None)?,
                                None => Value::Null,
                            },
                        };
                    }
                    update_row(ctx, &child_target, &k, &r, changed, &fk.columns, depth + 1)?;
                }
            }
        }
    }
    Ok(())
}

const MAX_CASCADE_DEPTH: usize = 32;

/// A complete row's clustered key (with its uniquifier, if the table has one) and its
/// stored form.
fn encode_row(ctx: &mut ExecCtx, target: &Target, row: &[Value]) -> SqlResult<(Vec<u8>, Vec<u8>)> {
    let table = &target.table;
    let uniq = if table.has_uniquifier() {
        load_counters(ctx, &target.db, table)?;
        Some(table.counters.uniquifier.fetch_add(1, Ordering::Relaxed) + 1)
    } else {
        None
    };
    Ok((row_key(table, row, uniq)?, to_storage_row(table, row)?))
}

/// Inserts a complete row (constraints already checked) into the rows tree and every
/// index; returns its key.
fn store_row(ctx: &mut ExecCtx, target: &Target, row: &[Value]) -> SqlResult<Vec<u8>> {
    let table = &target.table;
    let (key, bytes) = encode_row(ctx, target, row)?;
    let rows_tree = tree(ctx, &target.db, &table.indexes[0].tree, table)?;
    ctx.transaction(&target.db)?
        .insert(rows_tree, &key, &bytes)
        .map_err(|e| map_duplicate(e, table, &table.indexes[0], row))?;
    for ix in &table.indexes[1..] {
        insert_index_entry(ctx, target, ix, row, &key)?;
    }
    Ok(key)
}

fn insert_index_entry(ctx: &mut ExecCtx, target: &Target, ix: &Index, row: &[Value], key: &[u8]) -> SqlResult<()> {
    let ikey = index_key(&target.table, ix, row)?;
    let t = tree(ctx, &target.db, &ix.tree, &target.table)?;
    ctx.transaction(&target.db)?
        .index_insert(t, &ikey, key, ix.unique)
        .map_err(|e| map_duplicate(e, &target.table, ix, row))
}

fn delete_index_entry(ctx: &mut ExecCtx, target: &Target, ix: &Index, row: &[Value], key: &[u8]) -> SqlResult<()> {
    let ikey = index_key(&target.table, ix, row)?;
    let t = tree(ctx, &target.db, &ix.tree, &target.table)?;
    ctx.transaction(&target.db)?.index_delete(t, &ikey, key, ix.unique)?;
    Ok(())
}

fn delete_row(ctx: &mut ExecCtx, target: &Target, key: &[u8], row: &[Value], depth: usize) -> SqlResult<bool> {
    if depth > MAX_CASCADE_DEPTH {
        return Err(SqlError::new(
            217,
            "Maximum stored procedure, function, trigger, or view nesting level exceeded (limit 32).",
        ));
    }
    check_children(ctx, target, row, None, "DELETE", depth)?;
    let table = &target.table;
    let rows_tree = tree(ctx, &target.db, &table.indexes[0].tree, table)?;
    if !ctx.transaction(&target.db)?.delete(rows_tree, key)? {
        return Ok(false);
    }
    for ix in &table.indexes[1..] {
        delete_index_entry(ctx, target, ix, row, key)?;
    }
    Ok(true)
}

fn update_row(
    ctx: &mut ExecCtx,
    target: &Target,
    key: &[u8],
    old: &[Value],
    new: Row,
    changed: &[usize],
    depth: usize,
) -> SqlResult<()> {
    check_update(ctx, target, old, &new, changed, depth)?;
    unlink_old_row(ctx, target, key, old, &new, changed)?;
    link_new_row(ctx, target, key, old, &new, changed)
}

/// The constraints an updated row must meet, and the actions on referencing rows.
fn check_update(
    ctx: &mut ExecCtx,
    target: &Target,
    old: &[Value],
    new: &[Value],
    changed: &[usize],
    depth: usize,
) -> SqlResult<()> {
    if depth > MAX_CASCADE_DEPTH {
        return Err(SqlError::new(
            217,
            "Maximum stored procedure, function, trigger, or view nesting level exceeded (limit 32).",
        ));
    }
    check_row(ctx, target, new, "UPDATE")?;
    check_parents(ctx, target, new, Some(changed), "UPDATE")?;
    check_children(ctx, target, old, Some(new), "UPDATE", depth)
}

/// Whether an update moves the row to another clustered key.
fn clustered_key_changes(table: &Table, old: &[Value], new: &[Value], changed: &[usize]) -> bool {
    let key_cols = || table.indexes[0].columns.iter().map(|&(c, _)| c);
    key_cols().any(|c| changed.contains(&c))
        && key_cols().any(|c| {
            types::compare(&old[c], &new[c]) != Some(std::cmp::Ordering::Equal) || old[c].is_null() != new[c].is_null()
        })
}

/// First half of an update: removes the old row's clustered entry if its key changes and
/// its entries in the nonclustered indexes the update touches.
fn unlink_old_row(
    ctx: &mut ExecCtx,
    target: &Target,
    key: &[u8],
    old: &[Value],
    new: &[Value],
    changed: &[usize],
) -> SqlResult<()> {
    let table = &target.table;
    let key_changed = clustered_key_changes(table, old, new, changed);
    if key_changed {
        let rows_tree = tree(ctx, &target.db, &table.indexes[0].tree, table)?;
        ctx.transaction(&target.db)?.delete(rows_tree, key)?;
    }
    for ix in &table.indexes[1..] {
        if key_changed || ix.columns.iter().any(|(c, _)| changed.contains(c)) {
            delete_index_entry(ctx, target, ix, old, key)?;
        }
    }
    Ok(())
}

/// Second half of an update: stores the new row (in place, or under its new clustered
/// key) and its entries in the touched nonclustered indexes; duplicates are 2627/2601.
fn link_new_row(
    ctx: &mut ExecCtx,
    target: &Target,
    key: &[u8],
    old: &[Value],
    new: &[Value],
    changed: &[usize],
) -> SqlResult<()> {
    let table = &target.table;
    let key_changed = clustered_key_changes(table, old, new, changed);
    let rows_tree = tree(ctx, &target.db, &table.indexes[0].tree, table)?;
    let bytes = to_storage_row(table, new)?;
    let new_key = if key_changed {
        let uniq =
            table.has_uniquifier().then(|| u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes")));
        let nk = row_key(table, new, uniq)?;
        ctx.transaction(&target.db)?
            .insert(rows_tree, &nk, &bytes)
            .map_err(|e| map_duplicate(e, table, &table.indexes[0], new))?;
        nk
    } else {
        ctx.transaction(&target.db)?.update(rows_tree, key, &bytes)?;
        key.to_vec()
    };
    for ix in &table.indexes[1..] {
        if key_changed || ix.columns.iter().any(|(c, _)| changed.contains(c)) {
            insert_index_entry(ctx, target, ix, new, &new_key)?;
        }
    }
    Ok(())
}

/// `SET ROWCOUNT n`: the most rows a statement may return or change (0 = no limit).
fn rowcount_limit(ctx: &ExecCtx) -> usize {
    match ctx.session.options.rowcount {
        n if n > 0 => n as usize,
        _ => usize::MAX,
    }
}

fn top_limit(ctx: &mut ExecCtx, top: Option<&Expr>) -> SqlResult<usize> {
    match top {
        None => Ok(usize::MAX),
        Some(e) => match eval(e, &[], ctx)? {
            Value::Int(n) if n >= 0 => Ok(n as usize),
            _ => Err(SqlError::new(
                1060,
                "The number of rows provided for a TOP or FETCH clauses row count parameter must be an integer.",
            )),
        },
    }
}

/// Runs an INSERT; returns the rows inserted and OUTPUT rows.
pub fn run_insert(ctx: &mut ExecCtx, p: &InsertPlan) -> SqlResult<(u64, Vec<Row>)> {
    let table = &p.target.table;
    let on = ctx.session.options.identity_insert.as_ref();
    let identity_insert = on.is_some_and(|(db, id)| db.eq_ignore_ascii_case(&p.target.db) && *id == table.id);
    if p.explicit_identity && !identity_insert {
        return Err(SqlError::new(
            544,
            format!(
                "Cannot insert explicit value for identity column in table '{}' when IDENTITY_INSERT is set to OFF.",
                table.name
            ),
        ));
    }
    if identity_insert && !p.explicit_identity {
        return Err(SqlError::new(
            545,
            format!("Explicit value must be specified for identity column in table '{}' either when IDENTITY_INSERT is set to ON or when a replication user is inserting into a NOT FOR REPLICATION identity column.", table.name),
        ));
    }
    let source_rows: Vec<Vec<Option<Value>>> = match &p.source {
        InsertSource::DefaultValues => vec![Vec::new()],
        // A TDS bulk load: the statement names one row of parameters; the load's rows,
        // typed as those parameters, replace it.
        InsertSource::Rows(_) if ctx.session.bulk_rows.is_some() => {
            let rows = ctx.session.bulk_rows.take().unwrap_or_default();
            rows.into_iter().map(|r| r.into_iter().map(Some).collect()).collect()
        }
        InsertSource::Rows(rows) => {
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                let mut vals = Vec::with_capacity(r.len());
                for e in r {
                    vals.push(match e {
                        Some(e) => Some(eval(e, &[], ctx)?),
                        None => None,
                    });
                }
                out.push(vals);
            }
            out
        }
        InsertSource::Query(plan) => {
            run(plan, &[], ctx)?.into_iter().map(|r| r.into_iter().map(Some).collect()).collect()
        }
    };
    let limit = top_limit(ctx, p.top.as_ref())?.min(rowcount_limit(ctx));
    let identity = table.identity_column();
    if identity.is_some() {
        load_counters(ctx, &p.target.db, table)?;
    }
    let mut count = 0u64;
    let mut output = Vec::new();
    let mut staged = StagedRows::new(ctx, &p.target, source_rows.len())?;
    for src in source_rows.into_iter().take(limit) {
        ctx.check_cancel()?;
        let mut row: Row = vec![Value::Null; table.columns.len()];
        let mut given = vec![false; table.columns.len()];
        for (j, v) in src.into_iter().enumerate() {
            let col = p.columns[j];
            if let Some(v) = v {
                row[col] = assign_value(&v, &p.source_types[j], &p.target.db, table, col)?;
                given[col] = true;
            }
        }
        for (i, c) in table.columns.iter().enumerate() {
            if given[i] {
                if c.identity.is_some() {
                    observe_identity(table, i, &row[i]);
                }
                continue;
            }
            if c.identity.is_some() {
                row[i] = next_identity(table, i)?;
            } else if let Some((e, t)) = &p.target.defaults[i] {
                let v = eval(e, &[], ctx)?;
                row[i] = assign_value(&v, t, &p.target.db, table, i)?;
            }
        }
        check_row(ctx, &p.target, &row, "INSERT")?;
        check_parents(ctx, &p.target, &row, None, "INSERT")?;
        match staged.as_mut() {
            Some(staged) => staged.add(ctx, &p.target, &row)?,
            None => {
                store_row(ctx, &p.target, &row)?;
            }
        }
        if let Some(i) = identity {
            let id = types::cast(&row[i], &table.columns[i].ty, &SqlType::Decimal { precision: 38, scale: 0 }, None)?;
            ctx.session.identity = Some(id.clone());
            ctx.session.scope_identity = Some(id);
        }
        if let Some(out) = &p.output {
            let mut both: Row = vec![Value::Null; table.columns.len()];
            both.extend(row.iter().cloned());
            output.push(out.exprs.iter().map(|e| eval(e, &both, ctx)).collect::<SqlResult<Row>>()?);
        }
        count += 1;
    }
    if let Some(staged) = staged {
        staged.store(ctx, &p.target)?;
    }
    Ok((count, output))
}

/// A multi-row INSERT into a table whose only index is its clustered one may be
/// minimally logged (SIMPLE and BULK_LOGGED databases, an empty table): its rows are
/// checked and encoded first, then stored in one bulk load in key order.
const BULK_MIN_ROWS: usize = 100;
/// Below this much row data a bulk load's forced write of the data file costs more
/// than logging the rows.
const BULK_MIN_BYTES: usize = 256 << 10;

/// The rows of one INSERT, encoded (clustered key, stored row), waiting to be stored
/// together.
struct StagedRows {
    rows: Vec<(Vec<u8>, Vec<u8>)>,
    bytes: usize,
}

impl StagedRows {
    /// Staging applies to INSERTs of at least `BULK_MIN_ROWS` rows into a table with no
    /// nonclustered index; the others store each row as it comes.
    fn new(ctx: &mut ExecCtx, target: &Target, rows: usize) -> SqlResult<Option<StagedRows>> {
        if rows < BULK_MIN_ROWS || target.table.indexes.len() != 1 {
            return Ok(None);
        }
        let model = ctx.shared.engine.database(&target.db)?.options().recovery_model;
        Ok((model != tessera_database::RecoveryModel::Full).then(|| StagedRows { rows: Vec::new(), bytes: 0 }))
    }

    fn add(&mut self, ctx: &mut ExecCtx, target: &Target, row: &[Value]) -> SqlResult<()> {
        let (key, bytes) = encode_row(ctx, target, row)?;
        self.bytes += key.len() + bytes.len();
        self.rows.push((key, bytes));
        Ok(())
    }

    /// Stores the rows: one minimally logged bulk load if the table is empty and the
    /// rows are big enough, else row by row. Duplicate keys are error 2627 either way.
    fn store(mut self, ctx: &mut ExecCtx, target: &Target) -> SqlResult<()> {
        let table = &target.table;
        // The row a duplicate-key error names, decoded back from its stored form.
        let stored = |bytes: &[u8]| decode_row(table, &plan::row_schema(table)?, bytes);
        self.rows.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = self.rows.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(duplicate_error(table, &table.indexes[0], &stored(&w[1].1)?));
        }
        let rows_tree = tree(ctx, &target.db, &table.indexes[0].tree, table)?;
        let tx = ctx.transaction(&target.db)?;
        if self.bytes >= BULK_MIN_BYTES && tx.bulk_load(rows_tree, self.rows.iter().map(|(k, v)| (k, v)))?.is_some() {
            return Ok(());
        }
        for (key, bytes) in &self.rows {
            match tx.insert(rows_tree, key, bytes) {
                Ok(()) => {}
                Err(tessera_database::Error::DuplicateKey { .. }) => {
                    return Err(duplicate_error(table, &table.indexes[0], &stored(bytes)?))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

fn unique_targets(rows: Vec<Row>, key: usize) -> Vec<Row> {
    let mut seen = HashSet::new();
    rows.into_iter()
        .filter(|r| match &r[key] {
            Value::Binary(k) => seen.insert(k.clone()),
            _ => false,
        })
        .collect()
}

pub fn run_update(ctx: &mut ExecCtx, p: &UpdatePlan) -> SqlResult<(u64, Vec<Row>)> {
    let mut rows = unique_targets(run(&p.source, &[], ctx)?, p.key);
    rows.truncate(rowcount_limit(ctx));
    let table = &p.target.table;
    let n = table.columns.len();
    let changed: Vec<usize> = p.sets.iter().map(|s| s.0).collect();
    // Every row is evaluated and checked against the statement's starting state, then
    // all old rows are unlinked before any new row is stored, so that an update that
    // shifts keys (`SET id = id + 1`) only fails when its final state has duplicates.
    let mut changes: Vec<(Arc<[u8]>, Row, Row)> = Vec::with_capacity(rows.len());
    let mut output = Vec::new();
    for r in rows {
        ctx.check_cancel()?;
        let old: Row = r[p.offset..p.offset + n].to_vec();
        let Value::Binary(key) = &r[p.key] else { continue };
        let mut new = old.clone();
        for (col, e, t) in &p.sets {
            let v = eval(e, &r, ctx)?;
            new[*col] = assign_value(&v, t, &p.target.db, table, *col)?;
        }
        for (slot, e, t, vt) in &p.variables {
            let v = match e {
                VarSource::NewColumn(c) => new[*c].clone(),
                VarSource::Expr(e) => eval(e, &r, ctx)?,
            };
            ctx.session.vars[*slot] = types::cast(&v, t, vt, None)?;
        }
        check_update(ctx, &p.target, &old, &new, &changed, 0)?;
        if let Some(out) = &p.output {
            let mut both = old.clone();
            both.extend(new.iter().cloned());
            output.push(out.exprs.iter().map(|e| eval(e, &both, ctx)).collect::<SqlResult<Row>>()?);
        }
        changes.push((key.clone(), old, new));
    }
    for (key, old, new) in &changes {
        ctx.check_cancel()?;
        unlink_old_row(ctx, &p.target, key, old, new, &changed)?;
    }
    for (key, old, new) in &changes {
        ctx.check_cancel()?;
        link_new_row(ctx, &p.target, key, old, new, &changed)?;
    }
    let count = changes.len() as u64;
    Ok((count, output))
}

pub fn run_delete(ctx: &mut ExecCtx, p: &DeletePlan) -> SqlResult<(u64, Vec<Row>)> {
    let mut rows = unique_targets(run(&p.source, &[], ctx)?, p.key);
    rows.truncate(rowcount_limit(ctx));
    let n = p.target.table.columns.len();
    let mut count = 0;
    let mut output = Vec::new();
    for r in rows {
        ctx.check_cancel()?;
        let old: Row = r[p.offset..p.offset + n].to_vec();
        let Value::Binary(key) = &r[p.key] else { continue };
        if delete_row(ctx, &p.target, key, &old, 0)? {
            count += 1;
            if let Some(out) = &p.output {
                let mut both = old;
                both.extend(std::iter::repeat_n(Value::Null, n));
                output.push(out.exprs.iter().map(|e| eval(e, &both, ctx)).collect::<SqlResult<Row>>()?);
            }
        }
    }
    Ok((count, output))
}

/// Runs `SELECT @v = …`: assigns from the last row (variables keep their values when
/// there is none); returns the number of rows.
pub fn run_assign(ctx: &mut ExecCtx, plan: &Plan, targets: &[(usize, SqlType, SqlType)]) -> SqlResult<u64> {
    let rows = run(plan, &[], ctx)?;
    if let Some(last) = rows.last() {
        for ((slot, var_ty, expr_ty), v) in targets.iter().zip(last) {
            ctx.session.vars[*slot] = types::cast(v, expr_ty, var_ty, None)?;
        }
    }
    Ok(rows.len() as u64)
}

/// Every row of a table in storage order, with keys (index rebuilds, ALTER TABLE).
pub fn table_rows(ctx: &mut ExecCtx, db: &str, table: &Table) -> SqlResult<Vec<(Vec<u8>, Row)>> {
    let schema = plan::row_schema(table)?;
    let rows_tree = tree(ctx, db, &table.indexes[0].tree, table)?;
    let tx = ctx.transaction(db)?;
    let mut out = Vec::new();
    for item in
        tx.scan(rows_tree, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, tessera_database::Direction::Forward)
    {
        let (k, v) = item?;
        out.push((k, decode_row(table, &schema, &v)?));
    }
    Ok(out)
}

/// Fills a new table's trees with rows (ALTER TABLE rewrites, CREATE CLUSTERED INDEX).
pub fn load_rows(ctx: &mut ExecCtx, target: &Target, rows: Vec<Row>) -> SqlResult<()> {
    for r in rows {
        check_row(ctx, target, &r, "ALTER TABLE")?;
        store_row(ctx, target, &r)?;
    }
    Ok(())
}

/// Adds every row's entry to a new nonclustered index.
pub fn build_index(ctx: &mut ExecCtx, target: &Target, ix: &Index) -> SqlResult<()> {
    let rows = table_rows(ctx, &target.db, &target.table)?;
    for (k, r) in rows {
        insert_index_entry(ctx, target, ix, &r, &k).map_err(|e| {
            if e.number == 2627 || e.number == 2601 {
                SqlError::new(
                    1505,
                    format!(
                        "The CREATE UNIQUE INDEX statement terminated because a duplicate key was found for the object name '{}' and the index name '{}'. The duplicate key value is ({}).",
                        object_name(&target.table),
                        ix.name,
                        key_values(&target.table, ix, &r)
                    ),
                )
            } else {
                e
            }
        })?;
    }
    Ok(())
}

/// Verifies that existing rows satisfy a new CHECK or FOREIGN KEY constraint.
pub fn validate_rows(ctx: &mut ExecCtx, target: &Target) -> SqlResult<()> {
    let rows = table_rows(ctx, &target.db, &target.table)?;
    for (_, r) in rows {
        check_row(ctx, target, &r, "ALTER TABLE")?;
        check_parents(ctx, target, &r, None, "ALTER TABLE")?;
    }
    Ok(())
}
