//! The execution operators on their own: plans built by hand over constant rows
//! (`Plan::Values`, so no table and no binder), run by `tessera_execution::exec::run` in
//! a session's context (in process, no network), and their rows compared, one case a
//! line. The expected answers are SQL Server's: NULLs sort first ascending, GROUP BY,
//! DISTINCT and the set operators treat NULLs as equal, a join's `=` never matches NULL,
//! aggregates skip NULLs (COUNT(*) does not), AVG of integers truncates.
//!
//! The inputs (columns 0 and 1):
//!
//! ```text
//! L: (1,'a') (2,'b') (2,'c') (NULL,'d') (3,NULL)
//! R: (2,'x') (3,'y') (3,'z') (NULL,'n') (4,'w')
//! ```
//!
//! Rows are shown as their values joined by `,`, rows joined by `; `; cases without a
//! sort list their rows sorted, as the operator's order is not part of its answer.

use tessera_database::{Engine, EngineConfig};
use tessera_execution::runtime::ExecCtx;
use tessera_semantics::plan::{AggCall, AggFunc, Expr, Plan, SortKey, WindowCall, WindowFunc};
use tessera_semantics::types::{SqlType, Value};
use tessera_sql::Session;
use tessera_syntax::ast::{BinaryOp, JoinKind, SetOperator};
use tessera_syntax::ast::{FrameBound, WindowFrame};

fn int(n: i64) -> Expr {
    Expr::Const(Value::Int(n))
}

fn text(s: &str) -> Expr {
    Expr::Const(Value::str(s))
}

fn null() -> Expr {
    Expr::Const(Value::Null)
}

fn col(i: usize) -> Expr {
    Expr::Column(i)
}

fn values(rows: Vec<Vec<Expr>>) -> Box<Plan> {
    Box::new(Plan::Values(rows))
}

fn left() -> Box<Plan> {
    values(vec![
        vec![int(1), text("a")],
        vec![int(2), text("b")],
        vec![int(2), text("c")],
        vec![null(), text("d")],
        vec![int(3), null()],
    ])
}

fn right() -> Box<Plan> {
    values(vec![
        vec![int(2), text("x")],
        vec![int(3), text("y")],
        vec![int(3), text("z")],
        vec![null(), text("n")],
        vec![int(4), text("w")],
    ])
}

/// The first column of a plan's rows, as a one-column plan.
fn first_column(input: Box<Plan>) -> Box<Plan> {
    Box::new(Plan::Project { input, exprs: vec![col(0)] })
}

fn compare(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    Expr::Compare { op, left: Box::new(l), right: Box::new(r) }
}

fn asc(i: usize) -> SortKey {
    SortKey { expr: col(i), descending: false }
}

fn desc(i: usize) -> SortKey {
    SortKey { expr: col(i), descending: true }
}

fn sort(input: Box<Plan>, keys: Vec<SortKey>) -> Box<Plan> {
    Box::new(Plan::Sort { input, keys })
}

fn agg(func: AggFunc, arg: Option<Expr>, distinct: bool, ty: SqlType) -> AggCall {
    AggCall { func, arg, arg_type: SqlType::Int, distinct, ty, string_agg: None }
}

fn aggregate(input: Box<Plan>, group_by: Vec<Expr>, aggregates: Vec<AggCall>) -> Box<Plan> {
    Box::new(Plan::Aggregate { input, group_by, aggregates })
}

fn hash_join(kind: JoinKind) -> Box<Plan> {
    Box::new(Plan::HashJoin {
        left: left(),
        right: right(),
        kind,
        left_keys: vec![col(0)],
        right_keys: vec![col(0)],
        residual: None,
        left_width: 2,
        right_width: 2,
    })
}

fn nested_loop(kind: JoinKind, on: Option<Expr>) -> Box<Plan> {
    Box::new(Plan::NestedLoop { left: left(), right: right(), kind, on, left_width: 2, right_width: 2 })
}

fn set_op(op: SetOperator, all: bool) -> Box<Plan> {
    Box::new(Plan::SetOp { op, all, left: first_column(left()), right: first_column(right()) })
}

fn show(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(n) => n.to_string(),
        Value::Str(s) => s.to_string(),
        Value::Bit(b) => u8::from(*b).to_string(),
        other => format!("{other:?}"),
    }
}

/// The cases: a name, the plan, whether its order is part of the answer, and its rows.
fn cases() -> Vec<(&'static str, Box<Plan>, bool, &'static str)> {
    use AggFunc::*;
    let eq_first = compare(BinaryOp::Eq, col(0), col(2));
    vec![
        ("values", left(), false, "1,a; 2,b; 2,c; 3,NULL; NULL,d"),
        // Filter: a comparison with NULL is not true.
        ("filter", Box::new(Plan::Filter { input: left(), predicate: compare(BinaryOp::Gt, col(0), int(1)) }), false, "2,b; 2,c; 3,NULL"),
        ("filter <> skips NULL", Box::new(Plan::Filter { input: left(), predicate: compare(BinaryOp::NotEq, col(0), int(2)) }), false, "1,a; 3,NULL"),
        ("filter IS NULL", Box::new(Plan::Filter { input: left(), predicate: Expr::IsNull { expr: Box::new(col(1)), negated: false } }), false, "3,NULL"),
        ("project", Box::new(Plan::Project { input: left(), exprs: vec![col(1), int(7)] }), false, "NULL,7; a,7; b,7; c,7; d,7"),
        // Sort: NULL first ascending, last descending; stable on ties with a second key.
        ("sort asc", sort(left(), vec![asc(0), asc(1)]), true, "NULL,d; 1,a; 2,b; 2,c; 3,NULL"),
        ("sort desc", sort(left(), vec![desc(0), desc(1)]), true, "3,NULL; 2,c; 2,b; 1,a; NULL,d"),
        ("sort text asc", sort(left(), vec![asc(1)]), true, "3,NULL; 1,a; 2,b; 2,c; NULL,d"),
        // TOP, with ties and percent, over a sort.
        ("top 2", Box::new(Plan::Top { input: sort(left(), vec![desc(0), asc(1)]), count: int(2), percent: false, ties: Vec::new() }), true, "3,NULL; 2,b"),
        ("top 2 with ties", Box::new(Plan::Top { input: sort(left(), vec![desc(0)]), count: int(2), percent: false, ties: vec![col(0)] }), false, "2,b; 2,c; 3,NULL"),
        ("top 0", Box::new(Plan::Top { input: left(), count: int(0), percent: false, ties: Vec::new() }), true, ""),
        ("top 40 percent", Box::new(Plan::Top { input: sort(left(), vec![asc(1)]), count: Expr::Const(Value::Float(40.0)), percent: true, ties: Vec::new() }), true, "3,NULL; 1,a"),
        ("top 50 percent rounds up", Box::new(Plan::Top { input: sort(left(), vec![asc(1)]), count: Expr::Const(Value::Float(50.0)), percent: true, ties: Vec::new() }), true, "3,NULL; 1,a; 2,b"),
        // OFFSET/FETCH.
        ("offset 1 fetch 2", Box::new(Plan::Offset { input: sort(left(), vec![asc(1)]), offset: int(1), fetch: Some(int(2)) }), true, "1,a; 2,b"),
        ("offset past the end", Box::new(Plan::Offset { input: sort(left(), vec![asc(1)]), offset: int(9), fetch: None }), true, ""),
        // DISTINCT: NULLs are one value.
        ("distinct", Box::new(Plan::Distinct { input: first_column(left()) }), false, "1; 2; 3; NULL"),
        // Aggregates.
        (
            "aggregate all rows",
            aggregate(left(), Vec::new(), vec![
                agg(Count, None, false, SqlType::Int),
                agg(Count, Some(col(0)), false, SqlType::Int),
                agg(Count, Some(col(0)), true, SqlType::Int),
                agg(Sum, Some(col(0)), false, SqlType::Int),
                agg(Sum, Some(col(0)), true, SqlType::Int),
                agg(Avg, Some(col(0)), false, SqlType::Int),
                agg(Min, Some(col(0)), false, SqlType::Int),
                agg(Max, Some(col(0)), false, SqlType::Int),
            ]),
            false,
            "5,4,3,8,6,2,1,3",
        ),
        (
            "aggregate of no rows",
            aggregate(Box::new(Plan::Filter { input: left(), predicate: compare(BinaryOp::Gt, col(0), int(9)) }), Vec::new(), vec![
                agg(Count, None, false, SqlType::Int),
                agg(CountBig, None, false, SqlType::BigInt),
                agg(Sum, Some(col(0)), false, SqlType::Int),
                agg(Max, Some(col(0)), false, SqlType::Int),
            ]),
            false,
            "0,0,NULL,NULL",
        ),
        (
            "group by: NULL is a group, COUNT(column) skips NULLs",
            aggregate(left(), vec![col(0)], vec![agg(Count, None, false, SqlType::Int), agg(Count, Some(col(1)), false, SqlType::Int)]),
            false,
            "1,1,1; 2,2,2; 3,1,0; NULL,1,1",
        ),
        (
            "group by of no rows",
            aggregate(Box::new(Plan::Filter { input: left(), predicate: compare(BinaryOp::Gt, col(0), int(9)) }), vec![col(0)], vec![agg(Count, None, false, SqlType::Int)]),
            false,
            "",
        ),
        (
            "min and max of text",
            aggregate(left(), Vec::new(), vec![agg(Min, Some(col(1)), false, SqlType::VarChar(1)), agg(Max, Some(col(1)), false, SqlType::VarChar(1))]),
            false,
            "a,d",
        ),
        // Joins on column 0: `=` never matches NULL.
        ("hash inner join", hash_join(JoinKind::Inner), false, "2,b,2,x; 2,c,2,x; 3,NULL,3,y; 3,NULL,3,z"),
        ("hash left join", hash_join(JoinKind::Left), false, "1,a,NULL,NULL; 2,b,2,x; 2,c,2,x; 3,NULL,3,y; 3,NULL,3,z; NULL,d,NULL,NULL"),
        ("nested loops inner join", nested_loop(JoinKind::Inner, Some(eq_first.clone())), false, "2,b,2,x; 2,c,2,x; 3,NULL,3,y; 3,NULL,3,z"),
        ("nested loops left join", nested_loop(JoinKind::Left, Some(eq_first.clone())), false, "1,a,NULL,NULL; 2,b,2,x; 2,c,2,x; 3,NULL,3,y; 3,NULL,3,z; NULL,d,NULL,NULL"),
        ("nested loops right join", nested_loop(JoinKind::Right, Some(eq_first.clone())), false, "2,b,2,x; 2,c,2,x; 3,NULL,3,y; 3,NULL,3,z; NULL,NULL,4,w; NULL,NULL,NULL,n"),
        ("nested loops full join", nested_loop(JoinKind::Full, Some(eq_first.clone())), false, "1,a,NULL,NULL; 2,b,2,x; 2,c,2,x; 3,NULL,3,y; 3,NULL,3,z; NULL,NULL,4,w; NULL,NULL,NULL,n; NULL,d,NULL,NULL"),
        (
            "nested loops cross join",
            Box::new(Plan::Aggregate { input: nested_loop(JoinKind::Cross, None), group_by: Vec::new(), aggregates: vec![agg(Count, None, false, SqlType::Int)] }),
            false,
            "25",
        ),
        (
            "nested loops non-equi join",
            nested_loop(JoinKind::Inner, Some(compare(BinaryOp::Gt, col(0), col(2)))),
            false,
            "3,NULL,2,x",
        ),
        // Set operators over column 0: NULLs are equal, duplicates go but for UNION ALL.
        ("union", set_op(SetOperator::Union, false), false, "1; 2; 3; 4; NULL"),
        ("union all", set_op(SetOperator::Union, true), false, "1; 2; 2; 2; 3; 3; 3; 4; NULL; NULL"),
        ("except", set_op(SetOperator::Except, false), false, "1"),
        ("intersect", set_op(SetOperator::Intersect, false), false, "2; 3; NULL"),
        // Text compares case-insensitively (SQL_Latin1_General_CP1_CI_AS).
        ("sort text without case", sort(values(vec![vec![text("B")], vec![text("a")], vec![text("C")]]), vec![asc(0)]), true, "a; B; C"),
        (
            "distinct text without case",
            aggregate(Box::new(Plan::Distinct { input: values(vec![vec![text("a")], vec![text("A")], vec![text("b")]]) }), Vec::new(), vec![agg(Count, None, false, SqlType::Int)]),
            false,
            "2",
        ),
        // AVG of integers truncates; SUM past int's range is error 8115.
        ("avg truncates", aggregate(values(vec![vec![int(1)], vec![int(2)]]), Vec::new(), vec![agg(Avg, Some(col(0)), false, SqlType::Int)]), false, "1"),
        (
            "sum overflows int",
            aggregate(values(vec![vec![int(2147483647)], vec![int(1)]]), Vec::new(), vec![agg(Sum, Some(col(0)), false, SqlType::Int)]),
            false,
            "error 8115: Arithmetic overflow error converting expression to data type int.",
        ),
        // ROW_NUMBER() OVER (PARTITION BY column 0 ORDER BY column 1 DESC).
        (
            "row number",
            sort(
                Box::new(Plan::Window {
                    input: left(),
                    partition: vec![col(0)],
                    order: vec![desc(1)],
                    calls: vec![WindowCall {
                        func: WindowFunc::RowNumber,
                        args: Vec::new(),
                        frame: WindowFrame { rows: false, start: FrameBound::UnboundedPreceding, end: FrameBound::CurrentRow },
                        ty: SqlType::BigInt,
                    }],
                    presorted: false,
                }),
                vec![asc(0), asc(1)],
            ),
            true,
            "NULL,d,1; 1,a,1; 2,b,2; 2,c,1; 3,NULL,1",
        ),
    ]
}

#[test]
fn operators() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    config.background = false;
    let engine = Engine::open(config).expect("engine");
    let shared = tessera_sql::start_instance(engine.clone()).expect("instance");
    let mut session = Session::new(shared.clone(), "sa", "master").expect("session");
    let cases = cases();
    let mut failures = Vec::new();
    for (name, plan, ordered, expected) in &cases {
        let mut ctx = ExecCtx::new(&shared, &mut session.state);
        let actual = match tessera_execution::exec::run(plan, &[], &mut ctx) {
            Ok(rows) => {
                let mut rows: Vec<String> =
                    rows.iter().map(|r| r.iter().map(show).collect::<Vec<_>>().join(",")).collect();
                if !ordered {
                    rows.sort();
                }
                rows.join("; ")
            }
            Err(e) => format!("error {}: {}", e.number, e.message),
        };
        if actual != *expected {
            failures.push(format!("  {name}\n    expected: {expected}\n    actual:   {actual}"));
        }
    }
    session.close();
    drop(session);
    engine.shutdown().expect("shutdown");
    assert!(
        failures.is_empty(),
        "{} of {} operator cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
