//! Parser tests.

use super::parse_batch;
use crate::ast::*;

fn parse(sql: &str) -> Vec<Statement> {
    match parse_batch(sql) {
        Ok(batch) => batch.statements,
        Err(e) => panic!("{sql}\n{e}"),
    }
}

fn one(sql: &str) -> StatementKind {
    let mut statements = parse(sql);
    assert_eq!(statements.len(), 1, "{sql}: {statements:#?}");
    statements.remove(0).kind
}

fn error(sql: &str) -> (i32, u32, String) {
    match parse_batch(sql) {
        Ok(batch) => panic!("{sql} parsed: {batch:#?}"),
        Err(e) => {
            assert_eq!(e.severity, 15, "{e}");
            (e.number, e.line, e.message.clone())
        }
    }
}

#[test]
fn smoke() {
    for sql in [
        "SELECT 1",
        "select a, b from t where a = 1 order by b desc",
        "WITH c AS (SELECT 1 AS x) SELECT * FROM c",
        "INSERT INTO t (a, b) VALUES (1, 'x'), (2, DEFAULT)",
        "UPDATE t SET a = a + 1 WHERE b = 2",
        "DELETE FROM t WHERE a IS NULL",
        "CREATE TABLE t (id int IDENTITY(1,1) PRIMARY KEY, name varchar(max) NOT NULL DEFAULT 'x')",
        "BEGIN TRAN; COMMIT",
        "DECLARE @a int = 1; SET @a += 2; PRINT @a",
        "IF @a > 1 SELECT 1 ELSE BEGIN SELECT 2 END",
        "EXEC sp_who",
        "sp_who",
    ] {
        parse(sql);
    }
}

// ---- helpers ---------------------------------------------------------------------------

fn query(sql: &str) -> Query {
    match one(sql) {
        StatementKind::Query(q) => *q,
        other => panic!("not a query: {other:#?}"),
    }
}

fn select(sql: &str) -> Select {
    match query(sql).body {
        SetExpr::Select(s) => *s,
        other => panic!("not a select: {other:#?}"),
    }
}

/// The expression of `SELECT <expr>`.
fn expr(text: &str) -> Expr {
    match select(&format!("SELECT {text}")).items.remove(0) {
        SelectItem::Expr { expr, alias: None } => expr,
        other => panic!("{other:#?}"),
    }
}

fn col(name: &str) -> Expr {
    Expr::Column(ObjectName(name.split('.').map(Ident::new).collect()))
}

fn int(n: &str) -> Expr {
    Expr::Literal(Literal::Integer(n.into()))
}

fn string(s: &str) -> Expr {
    Expr::Literal(Literal::String { value: s.into(), unicode: false })
}

fn bin(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    Expr::Binary { op, left: Box::new(left), right: Box::new(right) }
}

fn unary(op: UnaryOp, e: Expr) -> Expr {
    Expr::Unary { op, expr: Box::new(e) }
}

fn name(s: &str) -> ObjectName {
    ObjectName(s.split('.').map(Ident::new).collect())
}

fn var(s: &str) -> Expr {
    Expr::Variable(s.into())
}

// ---- expressions -------------------------------------------------------------------------

#[test]
fn literals() {
    assert_eq!(expr("42"), int("42"));
    assert_eq!(expr("1.50"), Expr::Literal(Literal::Decimal("1.50".into())));
    assert_eq!(expr(".5"), Expr::Literal(Literal::Decimal(".5".into())));
    assert_eq!(expr("1e3"), Expr::Literal(Literal::Float("1e3".into())));
    assert_eq!(expr("$1.50"), Expr::Literal(Literal::Money("1.50".into())));
    assert_eq!(expr("'it''s'"), string("it's"));
    assert_eq!(expr("N'x'"), Expr::Literal(Literal::String { value: "x".into(), unicode: true }));
    assert_eq!(expr("0x0AFF"), Expr::Literal(Literal::Binary(vec![10, 255])));
    assert_eq!(expr("0x"), Expr::Literal(Literal::Binary(vec![])));
    assert_eq!(expr("NULL"), Expr::Literal(Literal::Null));
    assert_eq!(expr("-2147483648"), unary(UnaryOp::Minus, int("2147483648")));
    assert_eq!(expr("@v"), var("@v"));
    assert_eq!(expr("@@rowcount"), Expr::GlobalVariable("@@ROWCOUNT".into()));
}

#[test]
fn arithmetic_precedence() {
    use BinaryOp::*;
    assert_eq!(expr("1 + 2 * 3"), bin(Add, int("1"), bin(Multiply, int("2"), int("3"))));
    assert_eq!(expr("1 - 2 - 3"), bin(Subtract, bin(Subtract, int("1"), int("2")), int("3")));
    assert_eq!(expr("-2 * 3"), bin(Multiply, unary(UnaryOp::Minus, int("2")), int("3")));
    assert_eq!(expr("~a & b"), bin(BitAnd, unary(UnaryOp::BitNot, col("a")), col("b")));
    assert_eq!(expr("a | b ^ c & d"), bin(BitAnd, bin(BitXor, bin(BitOr, col("a"), col("b")), col("c")), col("d")));
    assert_eq!(expr("a + b % c"), bin(Add, col("a"), bin(Modulo, col("b"), col("c"))));
    assert_eq!(expr("(1 + 2) * 3"), bin(Multiply, Expr::Nested(Box::new(bin(Add, int("1"), int("2")))), int("3")));
}

fn condition(text: &str) -> Expr {
    select(&format!("SELECT 1 WHERE {text}")).selection.unwrap()
}

#[test]
fn boolean_precedence() {
    use BinaryOp::*;
    let a1 = bin(Eq, col("a"), int("1"));
    let b2 = bin(Eq, col("b"), int("2"));
    let c3 = bin(Eq, col("c"), int("3"));
    assert_eq!(condition("a = 1 OR b = 2 AND c = 3"), bin(Or, a1.clone(), bin(And, b2.clone(), c3.clone())));
    assert_eq!(condition("NOT a = 1 AND b = 2"), bin(And, unary(UnaryOp::Not, a1.clone()), b2.clone()));
    assert_eq!(condition("a + 1 > b * 2"), bin(Gt, bin(Add, col("a"), int("1")), bin(Multiply, col("b"), int("2"))));
    for (text, op) in
        [("<>", NotEq), ("!=", NotEq), ("<", Lt), ("<=", LtEq), (">=", GtEq), ("!<", NotLt), ("!>", NotGt)]
    {
        assert_eq!(condition(&format!("a {text} 1")), bin(op, col("a"), int("1")));
    }
}

#[test]
fn predicates() {
    assert_eq!(condition("a IS NULL"), Expr::IsNull { expr: Box::new(col("a")), negated: false });
    assert_eq!(condition("a IS NOT NULL"), Expr::IsNull { expr: Box::new(col("a")), negated: true });
    assert_eq!(
        condition("a NOT BETWEEN 1 AND 2 AND b = 1"),
        bin(
            BinaryOp::And,
            Expr::Between {
                expr: Box::new(col("a")),
                negated: true,
                low: Box::new(int("1")),
                high: Box::new(int("2"))
            },
            bin(BinaryOp::Eq, col("b"), int("1"))
        )
    );
    assert_eq!(
        condition("a LIKE 'x%' ESCAPE '!'"),
        Expr::Like {
            expr: Box::new(col("a")),
            negated: false,
            pattern: Box::new(string("x%")),
            escape: Some(Box::new(string("!")))
        }
    );
    assert_eq!(
        condition("a NOT IN (1, 2)"),
        Expr::InList { expr: Box::new(col("a")), negated: true, list: vec![int("1"), int("2")] }
    );
    assert!(matches!(condition("a IN (SELECT b FROM t)"), Expr::InSubquery { negated: false, .. }));
    assert!(matches!(condition("EXISTS (SELECT 1)"), Expr::Exists(_)));
    assert!(matches!(
        condition("NOT EXISTS (SELECT 1)"),
        Expr::Unary { op: UnaryOp::Not, expr } if matches!(*expr, Expr::Exists(_))
    ));
    assert!(matches!(condition("a = ANY (SELECT b FROM t)"), Expr::Quantified { op: BinaryOp::Eq, all: false, .. }));
    assert!(matches!(condition("a > SOME (SELECT b FROM t)"), Expr::Quantified { op: BinaryOp::Gt, all: false, .. }));
    assert!(matches!(condition("a <> ALL (SELECT b FROM t)"), Expr::Quantified { op: BinaryOp::NotEq, all: true, .. }));
}

#[test]
fn case_cast_convert() {
    assert_eq!(
        expr("CASE a WHEN 1 THEN 'x' ELSE 'y' END"),
        Expr::Case {
            operand: Some(Box::new(col("a"))),
            branches: vec![(int("1"), string("x"))],
            otherwise: Some(Box::new(string("y")))
        }
    );
    assert!(matches!(expr("CASE WHEN a = 1 THEN 2 END"), Expr::Case { operand: None, otherwise: None, .. }));
    assert_eq!(
        expr("CAST(a AS decimal(10, 2))"),
        Expr::Cast {
            expr: Box::new(col("a")),
            ty: TypeName { name: "DECIMAL".into(), args: vec![TypeArg::Number(10), TypeArg::Number(2)] },
            try_: false
        }
    );
    assert!(matches!(expr("TRY_CAST(a AS int)"), Expr::Cast { try_: true, .. }));
    assert_eq!(
        expr("CONVERT(varchar(max), d, 121)"),
        Expr::Convert {
            ty: TypeName { name: "VARCHAR".into(), args: vec![TypeArg::Max] },
            expr: Box::new(col("d")),
            style: Some(Box::new(int("121"))),
            try_: false
        }
    );
    assert!(matches!(expr("TRY_CONVERT(int, '1')"), Expr::Convert { try_: true, style: None, .. }));
}

fn call(name_: &str, args: Vec<Expr>) -> Expr {
    Expr::Function { name: name(name_), args, distinct: false, star: false, over: None, within_group: vec![] }
}

#[test]
fn functions() {
    assert_eq!(expr("LEN(a)"), call("LEN", vec![col("a")]));
    assert_eq!(expr("GETDATE()"), call("GETDATE", vec![]));
    assert_eq!(expr("dbo.f(1, 2)"), call("dbo.f", vec![int("1"), int("2")]));
    assert_eq!(expr("LEFT(a, 2)"), call("LEFT", vec![col("a"), int("2")]));
    assert_eq!(expr("COALESCE(a, b)"), call("COALESCE", vec![col("a"), col("b")]));
    assert_eq!(expr("IIF(a > 1, 1, 0)"), call("IIF", vec![bin(BinaryOp::Gt, col("a"), int("1")), int("1"), int("0")]));
    assert_eq!(expr("CURRENT_TIMESTAMP"), call("CURRENT_TIMESTAMP", vec![]));
    assert_eq!(
        expr("COUNT(*)"),
        Expr::Function {
            name: name("COUNT"),
            args: vec![],
            distinct: false,
            star: true,
            over: None,
            within_group: vec![]
        }
    );
    assert_eq!(
        expr("COUNT(DISTINCT a)"),
        Expr::Function {
            name: name("COUNT"),
            args: vec![col("a")],
            distinct: true,
            star: false,
            over: None,
            within_group: vec![]
        }
    );
    assert_eq!(expr("DATEADD(day, 1, d)"), call("DATEADD", vec![col("day"), int("1"), col("d")]));
    assert_eq!(expr("DATEDIFF(yy, a, b)"), call("DATEDIFF", vec![col("yy"), col("a"), col("b")]));
    assert_eq!(
        expr("ROW_NUMBER() OVER (PARTITION BY a ORDER BY b DESC)"),
        Expr::Function {
            name: name("ROW_NUMBER"),
            args: vec![],
            distinct: false,
            star: false,
            within_group: vec![],
            over: Some(Box::new(Window {
                partition_by: vec![col("a")],
                order_by: vec![OrderItem { expr: col("b"), descending: true }],
                frame: None,
            }))
        }
    );
    assert!(matches!(expr("SUM(a) OVER ()"), Expr::Function { over: Some(_), .. }));
    let Expr::Function { over: Some(w), .. } =
        expr("SUM(a) OVER (ORDER BY b ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)")
    else {
        panic!("a window")
    };
    let frame = WindowFrame { rows: true, start: FrameBound::Preceding(2), end: FrameBound::CurrentRow };
    assert_eq!(w.frame, Some(frame));
}

#[test]
fn collate_subquery_names() {
    assert_eq!(
        expr("a COLLATE Latin1_General_CS_AS"),
        Expr::Collate { expr: Box::new(col("a")), collation: "Latin1_General_CS_AS".into() }
    );
    assert!(matches!(expr("(SELECT MAX(a) FROM t)"), Expr::Subquery(_)));
    assert_eq!(expr("db.dbo.t.a"), col("db.dbo.t.a"));
    assert_eq!(expr("[my col]"), Expr::Column(ObjectName(vec![Ident { value: "my col".into(), quoted: true }])));
    assert_eq!(expr("\"q\"\"x\""), Expr::Column(ObjectName(vec![Ident { value: "q\"x".into(), quoted: true }])));
    assert_eq!(expr("((1))"), Expr::Nested(Box::new(Expr::Nested(Box::new(int("1"))))));
}

// ---- queries -----------------------------------------------------------------------------

fn alias(e: Expr, a: &str) -> SelectItem {
    SelectItem::Expr { expr: e, alias: Some(Ident::new(a)) }
}

fn item(e: Expr) -> SelectItem {
    SelectItem::Expr { expr: e, alias: None }
}

#[test]
fn select_items() {
    let s = select("SELECT *, t.*, a, b AS x, c y, z = d, e 'quoted', f AS 'q2', @v = 1, @w += 2 FROM t");
    assert_eq!(s.items[0], SelectItem::Wildcard);
    assert_eq!(s.items[1], SelectItem::QualifiedWildcard(name("t")));
    assert_eq!(s.items[2], item(col("a")));
    assert_eq!(s.items[3], alias(col("b"), "x"));
    assert_eq!(s.items[4], alias(col("c"), "y"));
    assert_eq!(s.items[5], alias(col("d"), "z"));
    assert_eq!(
        s.items[6],
        SelectItem::Expr { expr: col("e"), alias: Some(Ident { value: "quoted".into(), quoted: true }) }
    );
    assert_eq!(
        s.items[7],
        SelectItem::Expr { expr: col("f"), alias: Some(Ident { value: "q2".into(), quoted: true }) }
    );
    assert_eq!(s.items[8], SelectItem::Assign { variable: "@v".into(), op: None, value: int("1") });
    assert_eq!(s.items[9], SelectItem::Assign { variable: "@w".into(), op: Some(BinaryOp::Add), value: int("2") });
    let s = select("SELECT 'alias' = 1, dbo.t.* FROM dbo.t");
    assert_eq!(
        s.items[0],
        SelectItem::Expr { expr: int("1"), alias: Some(Ident { value: "alias".into(), quoted: true }) }
    );
    assert_eq!(s.items[1], SelectItem::QualifiedWildcard(name("dbo.t")));
}

#[test]
fn select_clauses() {
    let s = select("SELECT DISTINCT TOP 10 a INTO #t FROM t WHERE a > 1 GROUP BY a, b HAVING COUNT(*) > 1");
    assert!(s.distinct);
    assert_eq!(s.top, Some(Top { count: int("10"), percent: false, with_ties: false }));
    assert_eq!(s.into, Some(name("#t")));
    assert_eq!(s.group_by, vec![col("a"), col("b")]);
    assert!(s.having.is_some());
    let s = select("SELECT TOP (@n + 1) PERCENT WITH TIES a FROM t ORDER BY a");
    assert_eq!(
        s.top,
        Some(Top {
            count: Expr::Binary { op: BinaryOp::Add, left: Box::new(var("@n")), right: Box::new(int("1")) },
            percent: true,
            with_ties: true
        })
    );
    let q = query("SELECT a FROM t ORDER BY a DESC, b ASC OFFSET 10 ROWS FETCH NEXT 5 ROWS ONLY");
    assert_eq!(
        q.order_by,
        vec![OrderItem { expr: col("a"), descending: true }, OrderItem { expr: col("b"), descending: false }]
    );
    assert_eq!(q.offset, Some(int("10")));
    assert_eq!(q.fetch, Some(int("5")));
    let q = query("SELECT a FROM t ORDER BY a OFFSET 1 ROW");
    assert_eq!((q.offset, q.fetch), (Some(int("1")), None));
}

#[test]
fn ctes_and_set_operations() {
    let q = query("WITH a (x) AS (SELECT 1), b AS (SELECT 2) SELECT x FROM a UNION ALL SELECT 3");
    assert_eq!(q.with.len(), 2);
    assert_eq!(q.with[0].columns, vec![Ident::new("x")]);
    assert!(matches!(q.body, SetExpr::SetOperation { op: SetOperator::Union, all: true, .. }));
    // INTERSECT binds tighter than UNION / EXCEPT.
    let q = query("SELECT 1 UNION SELECT 2 INTERSECT SELECT 3 EXCEPT SELECT 4");
    let SetExpr::SetOperation { op: SetOperator::Except, left, .. } = q.body else { panic!() };
    let SetExpr::SetOperation { op: SetOperator::Union, all: false, right, .. } = *left else { panic!() };
    assert!(matches!(*right, SetExpr::SetOperation { op: SetOperator::Intersect, .. }));
    let q = query("(SELECT 1) UNION (SELECT 2) ORDER BY 1");
    assert!(matches!(q.body, SetExpr::SetOperation { .. }));
    assert_eq!(q.order_by.len(), 1);
}

fn from(sql: &str) -> Vec<TableRef> {
    select(sql).from
}

fn table(n: &str, a: Option<&str>) -> TableRef {
    TableRef::Named { name: name(n), alias: a.map(Ident::new), hints: vec![] }
}

#[test]
fn joins() {
    let f = from("SELECT * FROM a JOIN b ON a.x = b.x LEFT OUTER JOIN c ON 1 = 1 CROSS JOIN d");
    let TableRef::Join { kind: JoinKind::Cross, left, .. } = &f[0] else { panic!("{f:#?}") };
    let TableRef::Join { kind: JoinKind::Left, left, on: Some(_), .. } = left.as_ref() else { panic!() };
    assert!(matches!(left.as_ref(), TableRef::Join { kind: JoinKind::Inner, .. }));
    for (text, kind, hint) in [
        ("INNER JOIN", JoinKind::Inner, None),
        ("LEFT JOIN", JoinKind::Left, None),
        ("RIGHT OUTER JOIN", JoinKind::Right, None),
        ("RIGHT JOIN", JoinKind::Right, None),
        ("FULL OUTER JOIN", JoinKind::Full, None),
        ("FULL JOIN", JoinKind::Full, None),
        ("INNER LOOP JOIN", JoinKind::Inner, Some(JoinHint::Loop)),
        ("LEFT OUTER HASH JOIN", JoinKind::Left, Some(JoinHint::Hash)),
        ("right merge join", JoinKind::Right, Some(JoinHint::Merge)),
        ("FULL OUTER REMOTE JOIN", JoinKind::Full, Some(JoinHint::Remote)),
    ] {
        let f = from(&format!("SELECT * FROM a {text} b ON a.x = b.x"));
        assert_eq!(
            f[0],
            TableRef::Join {
                left: Box::new(table("a", None)),
                right: Box::new(table("b", None)),
                kind,
                on: Some(bin(BinaryOp::Eq, col("a.x"), col("b.x"))),
                hint,
            }
        );
    }
    // A hint needs the join's kind before it: `LOOP JOIN` alone is an alias and a join.
    assert_eq!(error("SELECT * FROM a LOOP HASH JOIN b ON 1 = 1").0, 102);
    // OPTION's join hints: one is kept; several leave the choice free.
    for (option, join) in [
        ("LOOP JOIN", Some(JoinHint::Loop)),
        ("MAXRECURSION 5, hash join", Some(JoinHint::Hash)),
        ("MERGE JOIN, FAST 10", Some(JoinHint::Merge)),
        ("LOOP JOIN, HASH JOIN", None),
        ("RECOMPILE", None),
    ] {
        let q = query(&format!("SELECT * FROM a JOIN b ON a.x = b.x OPTION ({option})"));
        assert_eq!(q.hints.join, join, "{option}");
    }
    assert_eq!(query("SELECT 1 OPTION (MAXRECURSION 5, LOOP JOIN)").hints.max_recursion, Some(5));
    let f = from("SELECT * FROM a CROSS APPLY f(a.x) AS g OUTER APPLY (SELECT 1 AS y) h");
    let TableRef::Join { kind: JoinKind::OuterApply, left, right, on: None, .. } = &f[0] else { panic!() };
    assert!(matches!(right.as_ref(), TableRef::Derived { .. }));
    let TableRef::Join { kind: JoinKind::CrossApply, right, .. } = left.as_ref() else { panic!() };
    assert_eq!(
        right.as_ref(),
        &TableRef::Function { name: name("f"), args: vec![col("a.x")], alias: Some(Ident::new("g")) }
    );
    // Comma joins, nested join syntax and parenthesised joins.
    assert_eq!(from("SELECT * FROM a x, b AS y"), vec![table("a", Some("x")), table("b", Some("y"))]);
    let f = from("SELECT * FROM a JOIN b JOIN c ON b.x = c.x ON a.x = b.x");
    let TableRef::Join { right, .. } = &f[0] else { panic!() };
    assert!(matches!(right.as_ref(), TableRef::Join { .. }));
    let f = from("SELECT * FROM (a JOIN b ON a.x = b.x) JOIN c ON 1 = 1");
    assert!(matches!(&f[0], TableRef::Join { left, .. } if matches!(left.as_ref(), TableRef::Join { .. })));
}

#[test]
fn table_sources() {
    let f = from("SELECT * FROM (SELECT 1 AS a) AS d (x), (VALUES (1, 2), (3, 4)) v(a, b), @t tv, dbo.t WITH (NOLOCK), u (NOLOCK), w AS z WITH (UPDLOCK, INDEX(ix1))");
    let TableRef::Derived { alias, columns, .. } = &f[0] else { panic!() };
    assert_eq!((alias, columns), (&Ident::new("d"), &vec![Ident::new("x")]));
    let TableRef::Derived { query, alias, columns } = &f[1] else { panic!() };
    assert_eq!(query.body, SetExpr::Values(vec![vec![int("1"), int("2")], vec![int("3"), int("4")]]));
    assert_eq!((alias, columns.len()), (&Ident::new("v"), 2));
    assert_eq!(f[2], table("@t", Some("tv")));
    assert_eq!(f[3], TableRef::Named { name: name("dbo.t"), alias: None, hints: vec!["NOLOCK".into()] });
    assert_eq!(f[4], TableRef::Named { name: name("u"), alias: None, hints: vec!["NOLOCK".into()] });
    assert_eq!(
        f[5],
        TableRef::Named {
            name: name("w"),
            alias: Some(Ident::new("z")),
            hints: vec!["UPDLOCK".into(), "INDEX(ix1)".into()]
        }
    );
    let f = from("SELECT * FROM db..t");
    assert_eq!(
        f[0],
        TableRef::Named {
            name: ObjectName(vec![Ident::new("db"), Ident::new(""), Ident::new("t")]),
            alias: None,
            hints: vec![]
        }
    );
}

// ---- DML ---------------------------------------------------------------------------------

fn insert(sql: &str) -> Insert {
    match one(sql) {
        StatementKind::Insert(i) => *i,
        other => panic!("{other:#?}"),
    }
}

#[test]
fn inserts() {
    let i = insert("INSERT INTO t (a, b) VALUES (1, DEFAULT), (2, NULL)");
    assert_eq!(i.table, name("t"));
    assert_eq!(i.columns, vec![Ident::new("a"), Ident::new("b")]);
    assert_eq!(
        i.source,
        InsertSource::Values(vec![vec![int("1"), Expr::Default], vec![int("2"), Expr::Literal(Literal::Null)]])
    );
    let i = insert("INSERT t SELECT * FROM u");
    assert!(matches!(i.source, InsertSource::Query(_)));
    let i = insert("INSERT INTO t (a) (SELECT 1)");
    assert!(matches!(i.source, InsertSource::Query(_)));
    let i = insert("INSERT INTO t WITH (TABLOCK) (a) SELECT 1");
    assert_eq!(i.columns.len(), 1);
    assert_eq!(insert("INSERT INTO t DEFAULT VALUES").source, InsertSource::DefaultValues);
    let i = insert("INSERT INTO #t EXEC p 1");
    assert!(matches!(i.source, InsertSource::Execute(ref e) if matches!(**e, StatementKind::Execute(_))));
    let i = insert("INSERT INTO @t EXEC ('SELECT 1')");
    assert!(matches!(i.source, InsertSource::Execute(ref e) if matches!(**e, StatementKind::ExecuteString(_))));
    let i = insert("INSERT TOP (5) INTO t OUTPUT inserted.id, inserted.* INTO @ids (id) VALUES (1)");
    assert_eq!(i.top.unwrap().count, int("5"));
    let output = i.output.unwrap();
    assert_eq!(output.items, vec![item(col("inserted.id")), SelectItem::QualifiedWildcard(name("inserted"))]);
    assert_eq!(output.into, Some((name("@ids"), vec![Ident::new("id")])));
}

#[test]
fn insert_bulk_announcements() {
    let bulk = |sql: &str| match one(sql) {
        StatementKind::InsertBulk(b) => b,
        other => panic!("{other:#?}"),
    };
    let b = bulk("insert bulk [dbo].[t] ([a] int, [b] nvarchar(10) COLLATE Latin1_General_CI_AS, c decimal(10, 2)) with (TABLOCK, KEEP_NULLS)");
    assert_eq!(
        b.table.0.iter().map(|p| (p.value.as_str(), p.quoted)).collect::<Vec<_>>(),
        [("dbo", true), ("t", true)]
    );
    assert_eq!(b.columns.iter().map(|c| c.value.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
    assert!(!b.keep_identity);
    let b = bulk("INSERT BULK db..t (id int) WITH (KEEPIDENTITY, ORDER (id ASC), ROWS_PER_BATCH = 1000)");
    assert_eq!(b.table.0.len(), 3);
    assert!(b.keep_identity);
    assert!(bulk("INSERT BULK t (id int) WITH (KEEP_IDENTITY)").keep_identity);
    assert_eq!(error("insert bulk t").0, 102);
    assert_eq!(error("insert bulk t (a int").0, 102);
    assert_eq!(error("insert bulk t (a int) with (FAST)"), (102, 1, "Incorrect syntax near 'FAST'.".into()));
}

fn update(sql: &str) -> Update {
    match one(sql) {
        StatementKind::Update(u) => *u,
        other => panic!("{other:#?}"),
    }
}

#[test]
fn updates() {
    let u = update("UPDATE TOP (1) t WITH (ROWLOCK) SET a = 1, t.b += 2, @v = 3, @w = c = c + 1, d = DEFAULT OUTPUT deleted.a FROM t JOIN u ON t.x = u.x WHERE u.y = 1");
    assert!(u.top.is_some());
    assert_eq!(u.table, name("t"));
    assert_eq!(u.table_hints, vec!["ROWLOCK".to_string()]);
    assert_eq!(
        u.assignments,
        vec![
            Assignment::Column { column: name("a"), op: None, value: int("1") },
            Assignment::Column { column: name("t.b"), op: Some(BinaryOp::Add), value: int("2") },
            Assignment::Variable { name: "@v".into(), op: None, value: int("3") },
            Assignment::Both {
                variable: "@w".into(),
                column: name("c"),
                value: bin(BinaryOp::Add, col("c"), int("1"))
            },
            Assignment::Column { column: name("d"), op: None, value: Expr::Default },
        ]
    );
    assert!(u.output.is_some());
    assert_eq!(u.from.len(), 1);
    assert!(u.selection.is_some());
    let u = update("UPDATE @t SET @v -= 1, x *= 2, y /= 3, z %= 4, p &= 5, q |= 6, r ^= 7");
    assert_eq!(u.table, name("@t"));
    assert_eq!(u.assignments.len(), 7);
    assert!(matches!(u.assignments[0], Assignment::Variable { op: Some(BinaryOp::Subtract), .. }));
    assert!(matches!(u.assignments[6], Assignment::Column { op: Some(BinaryOp::BitXor), .. }));
}

#[test]
fn partial_updates_with_write() {
    let u = update("UPDATE t SET doc.write(N'abc', 10, NULL), n = 1");
    match &u.assignments[0] {
        Assignment::Write { column, value, offset, length } => {
            assert_eq!(column.value, "doc");
            assert!(matches!(value, Expr::Literal(_)));
            assert_eq!(offset, &int("10"));
            assert!(matches!(length, Expr::Literal(_)));
        }
        other => panic!("{other:#?}"),
    }
    assert!(matches!(u.assignments[1], Assignment::Column { .. }));
    // A qualified column cannot take .WRITE: 102 at the parenthesis.
    let e = parse_batch("UPDATE t SET t.doc.WRITE('a', 0, 1)").unwrap_err();
    assert!(e.to_string().contains("'('"), "{e}");
}

fn delete(sql: &str) -> Delete {
    match one(sql) {
        StatementKind::Delete(d) => *d,
        other => panic!("{other:#?}"),
    }
}

#[test]
fn deletes() {
    let d = delete("DELETE FROM t WHERE a = 1");
    assert_eq!((d.table, d.from.len(), d.selection.is_some()), (name("t"), 0, true));
    let d = delete("DELETE t FROM t JOIN u ON t.a = u.a");
    assert_eq!((d.table.clone(), d.from.len()), (name("t"), 1));
    let d = delete("DELETE TOP (10) FROM t OUTPUT deleted.* FROM t x WHERE x.a = 1");
    assert!(d.top.is_some() && d.output.is_some());
    assert_eq!(d.from, vec![table("t", Some("x"))]);
}

// ---- DDL ---------------------------------------------------------------------------------

fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn databases() {
    let StatementKind::CreateDatabase(db) = one(
        "CREATE DATABASE shop ON PRIMARY (NAME = shop_data, FILENAME = 'C:\\d\\shop.mdf', SIZE = 10MB, MAXSIZE = UNLIMITED, FILEGROWTH = 10%)
         LOG ON (NAME = shop_log, FILENAME = N'/l/shop.ldf', SIZE = 5 MB) COLLATE Latin1_General_CI_AS",
    ) else {
        panic!()
    };
    assert_eq!(db.name, Ident::new("shop"));
    assert_eq!(
        db.files[0].options,
        opts(&[
            ("NAME", "shop_data"),
            ("FILENAME", "C:\\d\\shop.mdf"),
            ("SIZE", "10MB"),
            ("MAXSIZE", "UNLIMITED"),
            ("FILEGROWTH", "10%")
        ])
    );
    assert_eq!(db.log_files[0].options, opts(&[("NAME", "shop_log"), ("FILENAME", "/l/shop.ldf"), ("SIZE", "5MB")]));
    assert_eq!(db.collation.as_deref(), Some("Latin1_General_CI_AS"));
    assert!(
        matches!(one("CREATE DATABASE x"), StatementKind::CreateDatabase(CreateDatabase { files, .. }) if files.is_empty())
    );
    let StatementKind::CreateDatabase(db) =
        one("CREATE DATABASE t ON (FILENAME = '/d/t.mdf'), (FILENAME = '/d/t_log.ldf') FOR ATTACH")
    else {
        panic!()
    };
    assert_eq!((db.files.len(), db.attach), (2, Some(AttachMode::Attach)));
    assert!(matches!(
        one("CREATE DATABASE t ON (FILENAME = 'a') FOR ATTACH_REBUILD_LOG"),
        StatementKind::CreateDatabase(CreateDatabase { attach: Some(AttachMode::RebuildLog), .. })
    ));
    assert!(parse_batch("CREATE DATABASE t ON (FILENAME = 'a') FOR DETACH").is_err());
    assert_eq!(
        one("DROP DATABASE IF EXISTS a, [b]"),
        StatementKind::DropDatabase {
            names: vec![Ident::new("a"), Ident { value: "b".into(), quoted: true }],
            if_exists: true
        }
    );
    assert_eq!(
        one("ALTER DATABASE shop SET RECOVERY FULL"),
        StatementKind::AlterDatabase {
            name: Ident::new("shop"),
            action: AlterDatabaseAction::Set(opts(&[("RECOVERY", "FULL")]))
        }
    );
    assert_eq!(
        one("ALTER DATABASE shop SET DELAYED_DURABILITY = FORCED"),
        StatementKind::AlterDatabase {
            name: Ident::new("shop"),
            action: AlterDatabaseAction::Set(opts(&[("DELAYED_DURABILITY", "FORCED")]))
        }
    );
    assert_eq!(
        one("ALTER DATABASE shop SET SINGLE_USER WITH ROLLBACK IMMEDIATE"),
        StatementKind::AlterDatabase {
            name: Ident::new("shop"),
            action: AlterDatabaseAction::Set(opts(&[("SINGLE_USER", "")]))
        }
    );
    assert_eq!(
        one("ALTER DATABASE CURRENT SET ALLOW_SNAPSHOT_ISOLATION ON, COMPATIBILITY_LEVEL = 160"),
        StatementKind::AlterDatabase {
            name: Ident::new("CURRENT"),
            action: AlterDatabaseAction::Set(opts(&[
                ("ALLOW_SNAPSHOT_ISOLATION", "ON"),
                ("COMPATIBILITY_LEVEL", "160")
            ]))
        }
    );
    let set = |sql: &str| match one(sql) {
        StatementKind::AlterDatabase { action: AlterDatabaseAction::Set(o), .. } => o,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        set("ALTER DATABASE shop SET QUERY_STORE = ON (OPERATION_MODE = READ_WRITE, CLEANUP_POLICY = (STALE_QUERY_THRESHOLD_DAYS = 7), INTERVAL_LENGTH_MINUTES = 1)"),
        opts(&[
            ("QUERY_STORE", "ON"),
            ("QUERY_STORE.OPERATION_MODE", "READ_WRITE"),
            ("QUERY_STORE.STALE_QUERY_THRESHOLD_DAYS", "7"),
            ("QUERY_STORE.INTERVAL_LENGTH_MINUTES", "1")
        ])
    );
    assert_eq!(
        set("ALTER DATABASE shop SET QUERY_STORE (QUERY_CAPTURE_MODE = CUSTOM, QUERY_CAPTURE_POLICY = (STALE_CAPTURE_POLICY_THRESHOLD = 24 HOURS, EXECUTION_COUNT = 5))"),
        opts(&[
            ("QUERY_STORE", ""),
            ("QUERY_STORE.QUERY_CAPTURE_MODE", "CUSTOM"),
            ("QUERY_STORE.STALE_CAPTURE_POLICY_THRESHOLD", "24 HOURS"),
            ("QUERY_STORE.EXECUTION_COUNT", "5")
        ])
    );
    assert_eq!(set("ALTER DATABASE shop SET QUERY_STORE CLEAR ALL"), opts(&[("QUERY_STORE", "CLEAR ALL")]));
    assert_eq!(set("ALTER DATABASE shop SET QUERY_STORE = OFF (FORCED)"), opts(&[("QUERY_STORE", "OFF FORCED")]));
    assert_eq!(set("ALTER DATABASE shop SET QUERY_STORE = ON"), opts(&[("QUERY_STORE", "ON")]));
    assert_eq!(
        one("ALTER DATABASE shop MODIFY FILE (NAME = shop_log, SIZE = 20 MB, MAXSIZE = UNLIMITED, FILEGROWTH = 10%)"),
        StatementKind::AlterDatabase {
            name: Ident::new("shop"),
            action: AlterDatabaseAction::ModifyFile(FileSpec {
                options: opts(&[
                    ("NAME", "shop_log"),
                    ("SIZE", "20MB"),
                    ("MAXSIZE", "UNLIMITED"),
                    ("FILEGROWTH", "10%")
                ])
            })
        }
    );
    assert_eq!(
        one("ALTER DATABASE shop MODIFY NAME = shop2"),
        StatementKind::AlterDatabase {
            name: Ident::new("shop"),
            action: AlterDatabaseAction::Rename(Ident::new("shop2"))
        }
    );
    assert_eq!(
        one("ALTER DATABASE shop COLLATE Latin1_General_BIN2"),
        StatementKind::AlterDatabase {
            name: Ident::new("shop"),
            action: AlterDatabaseAction::Collate("Latin1_General_BIN2".into())
        }
    );
    assert_eq!(one("USE [master]"), StatementKind::Use(Ident { value: "master".into(), quoted: true }));
}

fn create_table(sql: &str) -> CreateTable {
    match one(sql) {
        StatementKind::CreateTable(t) => *t,
        other => panic!("{other:#?}"),
    }
}

fn ty(name: &str, args: &[u32]) -> TypeName {
    TypeName { name: name.into(), args: args.iter().map(|&n| TypeArg::Number(n)).collect() }
}

#[test]
fn create_table_columns() {
    let t = create_table(
        "CREATE TABLE dbo.orders (
            id int IDENTITY(1,1) NOT NULL CONSTRAINT pk_orders PRIMARY KEY CLUSTERED,
            code varchar(max) COLLATE Latin1_General_CS_AS NULL UNIQUE,
            price decimal(10,2) NOT NULL CONSTRAINT df_price DEFAULT (0),
            ratio double precision DEFAULT -1,
            created datetime2(3) DEFAULT GETDATE(),
            customer int REFERENCES customers(id) ON DELETE CASCADE ON UPDATE SET NULL,
            qty int CHECK (qty > 0),
            total AS price * qty,
            big bigint IDENTITY,
            tag nvarchar(10) INDEX ix_tag
        )",
    );
    assert_eq!(t.name, name("dbo.orders"));
    let c = &t.columns;
    assert_eq!(c.len(), 10);
    assert_eq!(c[0].ty, ty("INT", &[]));
    assert_eq!(c[0].identity, Some((1, 1)));
    assert_eq!(c[0].nullable, Some(false));
    assert_eq!(
        c[0].constraints,
        vec![TableConstraint {
            name: Some(Ident::new("pk_orders")),
            kind: ConstraintKind::PrimaryKey {
                clustered: Some(true),
                columns: vec![IndexColumn { name: Ident::new("id"), descending: false }]
            }
        }]
    );
    assert_eq!(c[1].ty, TypeName { name: "VARCHAR".into(), args: vec![TypeArg::Max] });
    assert_eq!(c[1].collation.as_deref(), Some("Latin1_General_CS_AS"));
    assert_eq!(c[1].nullable, Some(true));
    assert!(matches!(c[1].constraints[0].kind, ConstraintKind::Unique { clustered: None, .. }));
    assert_eq!(c[2].ty, ty("DECIMAL", &[10, 2]));
    assert_eq!(c[2].default, Some((Some(Ident::new("df_price")), Expr::Nested(Box::new(int("0"))))));
    assert_eq!(c[3].ty, ty("DOUBLE PRECISION", &[]));
    assert_eq!(c[3].default, Some((None, unary(UnaryOp::Minus, int("1")))));
    assert_eq!(c[4].default, Some((None, call("GETDATE", vec![]))));
    assert_eq!(
        c[5].constraints[0].kind,
        ConstraintKind::ForeignKey {
            columns: vec![Ident::new("customer")],
            ref_table: name("customers"),
            ref_columns: vec![Ident::new("id")],
            on_delete: ReferentialAction::Cascade,
            on_update: ReferentialAction::SetNull,
        }
    );
    assert_eq!(c[6].constraints[0].kind, ConstraintKind::Check(bin(BinaryOp::Gt, col("qty"), int("0"))));
    assert_eq!(c[7].computed, Some(bin(BinaryOp::Multiply, col("price"), col("qty"))));
    assert_eq!(c[8].identity, Some((1, 1)));
    assert_eq!(t.indexes.len(), 1);
    assert_eq!(t.indexes[0].name, Ident::new("ix_tag"));
    assert_eq!(t.indexes[0].columns, vec![IndexColumn { name: Ident::new("tag"), descending: false }]);
}

#[test]
fn create_table_constraints() {
    let t = create_table(
        "CREATE TABLE #t (a int, b int, c int,
            CONSTRAINT pk PRIMARY KEY NONCLUSTERED (a DESC, b),
            UNIQUE (c),
            CONSTRAINT fk FOREIGN KEY (b, c) REFERENCES dbo.u (x, y) ON DELETE NO ACTION ON UPDATE SET DEFAULT,
            CHECK (a < b),
            INDEX ix UNIQUE CLUSTERED (c DESC)
        ) ON [PRIMARY]",
    );
    assert_eq!(t.columns.len(), 3);
    assert_eq!(t.constraints.len(), 4);
    assert_eq!(
        t.constraints[0],
        TableConstraint {
            name: Some(Ident::new("pk")),
            kind: ConstraintKind::PrimaryKey {
                clustered: Some(false),
                columns: vec![
                    IndexColumn { name: Ident::new("a"), descending: true },
                    IndexColumn { name: Ident::new("b"), descending: false }
                ]
            }
        }
    );
    assert!(
        matches!(&t.constraints[2].kind, ConstraintKind::ForeignKey { on_update: ReferentialAction::SetDefault, columns, .. } if columns.len() == 2)
    );
    assert!(t.indexes[0].unique);
    assert_eq!(t.indexes[0].clustered, Some(true));
    assert_eq!(t.indexes[0].table, name("#t"));
}

#[test]
fn alter_table() {
    let alter = |sql: &str| match one(sql) {
        StatementKind::AlterTable { table, action } => {
            assert_eq!(table, name("t"));
            action
        }
        other => panic!("{other:#?}"),
    };
    let AlterTableAction::Add { columns, constraints } =
        alter("ALTER TABLE t ADD c int NULL, d varchar(5), CONSTRAINT u UNIQUE (c)")
    else {
        panic!()
    };
    assert_eq!((columns.len(), constraints.len()), (2, 1));
    let AlterTableAction::Add { constraints, .. } = alter("ALTER TABLE t ADD CONSTRAINT df DEFAULT 0 FOR c") else {
        panic!()
    };
    assert_eq!(constraints[0].kind, ConstraintKind::Default { expr: int("0"), column: Ident::new("c") });
    let AlterTableAction::Add { constraints, .. } =
        alter("ALTER TABLE t WITH CHECK ADD CONSTRAINT fk FOREIGN KEY (a) REFERENCES u (a)")
    else {
        panic!()
    };
    assert_eq!(constraints.len(), 1);
    assert_eq!(
        alter("ALTER TABLE t DROP COLUMN IF EXISTS a, b"),
        AlterTableAction::DropColumns { names: vec![Ident::new("a"), Ident::new("b")], if_exists: true }
    );
    assert_eq!(
        alter("ALTER TABLE t DROP CONSTRAINT pk"),
        AlterTableAction::DropConstraints { names: vec![Ident::new("pk")], if_exists: false }
    );
    assert_eq!(
        alter("ALTER TABLE t DROP pk"),
        AlterTableAction::DropConstraints { names: vec![Ident::new("pk")], if_exists: false }
    );
    assert_eq!(
        alter("ALTER TABLE t ALTER COLUMN a varchar(20) NOT NULL"),
        AlterTableAction::AlterColumn { name: Ident::new("a"), ty: ty("VARCHAR", &[20]), nullable: Some(false) }
    );
    assert_eq!(
        alter("ALTER TABLE t NOCHECK CONSTRAINT ALL"),
        AlterTableAction::CheckConstraints { enable: false, names: vec![] }
    );
    assert_eq!(
        alter("ALTER TABLE t WITH CHECK CHECK CONSTRAINT fk1, fk2"),
        AlterTableAction::CheckConstraints { enable: true, names: vec![Ident::new("fk1"), Ident::new("fk2")] }
    );
}

#[test]
fn tables_and_indexes() {
    assert_eq!(
        one("DROP TABLE IF EXISTS a, dbo.b"),
        StatementKind::DropTable { names: vec![name("a"), name("dbo.b")], if_exists: true }
    );
    assert_eq!(one("DROP TABLE #t"), StatementKind::DropTable { names: vec![name("#t")], if_exists: false });
    assert_eq!(one("TRUNCATE TABLE dbo.t"), StatementKind::TruncateTable(name("dbo.t")));
    let StatementKind::CreateIndex(ix) =
        one("CREATE UNIQUE NONCLUSTERED INDEX ix ON dbo.t (a DESC, b) INCLUDE (c, d) WHERE a IS NOT NULL WITH (FILLFACTOR = 80)")
    else {
        panic!()
    };
    assert_eq!(ix.name, Ident::new("ix"));
    assert_eq!(ix.table, name("dbo.t"));
    assert!(ix.unique);
    assert_eq!(ix.clustered, Some(false));
    assert_eq!(ix.columns[0], IndexColumn { name: Ident::new("a"), descending: true });
    assert_eq!(ix.include, vec![Ident::new("c"), Ident::new("d")]);
    assert!(ix.filter.is_some());
    let StatementKind::CreateIndex(ix) = one("CREATE INDEX ix2 ON t (a)") else { panic!() };
    assert_eq!((ix.unique, ix.clustered), (false, None));
    assert_eq!(
        one("DROP INDEX IF EXISTS ix ON dbo.t, ix2 ON u"),
        StatementKind::DropIndex {
            indexes: vec![(Ident::new("ix"), name("dbo.t")), (Ident::new("ix2"), name("u"))],
            if_exists: true
        }
    );
    assert_eq!(
        one("DROP INDEX t.ix"),
        StatementKind::DropIndex { indexes: vec![(Ident::new("ix"), name("t"))], if_exists: false }
    );
}

// ---- transactions and options ------------------------------------------------------------

#[test]
fn transactions() {
    assert_eq!(one("BEGIN TRAN"), StatementKind::BeginTransaction { name: None });
    assert_eq!(one("BEGIN TRANSACTION t1"), StatementKind::BeginTransaction { name: Some(string("t1")) });
    assert_eq!(one("BEGIN TRAN @name"), StatementKind::BeginTransaction { name: Some(var("@name")) });
    assert_eq!(one("BEGIN DISTRIBUTED TRANSACTION"), StatementKind::BeginTransaction { name: None });
    assert_eq!(one("COMMIT"), StatementKind::Commit { name: None, delayed_durability: None });
    assert_eq!(one("COMMIT WORK"), StatementKind::Commit { name: None, delayed_durability: None });
    assert_eq!(one("COMMIT TRAN t1"), StatementKind::Commit { name: Some(string("t1")), delayed_durability: None });
    assert_eq!(
        one("COMMIT TRANSACTION WITH (DELAYED_DURABILITY = ON)"),
        StatementKind::Commit { name: None, delayed_durability: Some(true) }
    );
    assert_eq!(one("ROLLBACK"), StatementKind::Rollback { name: None });
    assert_eq!(one("ROLLBACK TRAN sp1"), StatementKind::Rollback { name: Some(string("sp1")) });
    assert_eq!(one("ROLLBACK WORK"), StatementKind::Rollback { name: None });
    assert_eq!(one("SAVE TRANSACTION sp1"), StatementKind::SaveTransaction { name: string("sp1") });
    let s = parse("BEGIN TRAN\nSELECT 1\nCOMMIT\nWITH c AS (SELECT 1 AS a) SELECT a FROM c");
    assert_eq!(s.len(), 4);
    assert_eq!(s.iter().map(|s| s.line).collect::<Vec<_>>(), [1, 2, 3, 4]);
}

fn set_option(options: &[&str], value: SetValue) -> StatementKind {
    StatementKind::SetOption { options: options.iter().map(|s| s.to_string()).collect(), value }
}

#[test]
fn set_options() {
    assert_eq!(one("SET NOCOUNT ON"), set_option(&["NOCOUNT"], SetValue::On));
    assert_eq!(
        one("set ansi_nulls, quoted_identifier off"),
        set_option(&["ANSI_NULLS", "QUOTED_IDENTIFIER"], SetValue::Off)
    );
    assert_eq!(one("SET TEXTSIZE 2147483647"), set_option(&["TEXTSIZE"], SetValue::Expr(int("2147483647"))));
    assert_eq!(one("SET ROWCOUNT @n"), set_option(&["ROWCOUNT"], SetValue::Expr(var("@n"))));
    assert_eq!(
        one("SET LOCK_TIMEOUT -1"),
        set_option(&["LOCK_TIMEOUT"], SetValue::Expr(unary(UnaryOp::Minus, int("1"))))
    );
    assert_eq!(one("SET DATEFORMAT dmy"), set_option(&["DATEFORMAT"], SetValue::Word("DMY".into())));
    assert_eq!(one("SET LANGUAGE us_english"), set_option(&["LANGUAGE"], SetValue::Word("US_ENGLISH".into())));
    assert_eq!(one("SET DEADLOCK_PRIORITY LOW"), set_option(&["DEADLOCK_PRIORITY"], SetValue::Word("LOW".into())));
    assert_eq!(one("SET STATISTICS IO ON"), set_option(&["STATISTICS IO"], SetValue::On));
    assert_eq!(
        one("SET STATISTICS IO, STATISTICS TIME OFF"),
        set_option(&["STATISTICS IO", "STATISTICS TIME"], SetValue::Off)
    );
    assert_eq!(
        one("SET IDENTITY_INSERT dbo.t ON"),
        set_option(&["IDENTITY_INSERT"], SetValue::Table { table: name("dbo.t"), on: true })
    );
    for (text, level) in [
        ("READ UNCOMMITTED", "READ UNCOMMITTED"),
        ("read committed", "READ COMMITTED"),
        ("REPEATABLE READ", "REPEATABLE READ"),
        ("SNAPSHOT", "SNAPSHOT"),
        ("SERIALIZABLE", "SERIALIZABLE"),
    ] {
        assert_eq!(
            one(&format!("SET TRANSACTION ISOLATION LEVEL {text}")),
            set_option(&["TRANSACTION ISOLATION LEVEL"], SetValue::Word(level.into()))
        );
    }
}

// ---- variables and control flow ----------------------------------------------------------

#[test]
fn declarations() {
    let StatementKind::Declare(d) =
        one("DECLARE @a int = 1, @b AS varchar(10), @t TABLE (id int PRIMARY KEY, v nvarchar(max))")
    else {
        panic!()
    };
    assert_eq!(
        d[0],
        Declaration { name: "@a".into(), kind: DeclarationKind::Scalar { ty: ty("INT", &[]), init: Some(int("1")) } }
    );
    assert_eq!(
        d[1],
        Declaration { name: "@b".into(), kind: DeclarationKind::Scalar { ty: ty("VARCHAR", &[10]), init: None } }
    );
    assert!(matches!(&d[2].kind, DeclarationKind::Table { columns, .. } if columns.len() == 2));
    assert_eq!(one("SET @a = 5"), StatementKind::SetVariable { name: "@a".into(), op: None, value: int("5") });
    assert_eq!(
        one("SET @a += 5"),
        StatementKind::SetVariable { name: "@a".into(), op: Some(BinaryOp::Add), value: int("5") }
    );
    assert_eq!(
        one("SET @a = (SELECT COUNT(*) FROM t)"),
        StatementKind::SetVariable { name: "@a".into(), op: None, value: expr("(SELECT COUNT(*) FROM t)") }
    );
}

#[test]
fn control_flow() {
    let StatementKind::If { condition, then, otherwise } =
        one("IF @a > 1 PRINT 'big'; ELSE IF @a < 0 PRINT 'neg' ELSE BEGIN PRINT 'x'; RETURN END")
    else {
        panic!()
    };
    assert_eq!(condition, bin(BinaryOp::Gt, var("@a"), int("1")));
    assert_eq!(then.kind, StatementKind::Print(string("big")));
    let StatementKind::If { otherwise: Some(inner), .. } = otherwise.unwrap().kind else { panic!() };
    let StatementKind::Block(block) = inner.kind else { panic!() };
    assert_eq!(block[1].kind, StatementKind::Return(None));
    let StatementKind::While { body, .. } = one("WHILE @i < 10 BEGIN SET @i += 1 IF @i = 5 BREAK ELSE CONTINUE END")
    else {
        panic!()
    };
    let StatementKind::Block(block) = body.kind else { panic!() };
    assert_eq!(block.len(), 2);
    let s = parse("RETURN\nSELECT 1");
    assert_eq!(s[0].kind, StatementKind::Return(None));
    assert_eq!(parse("RETURN 5")[0].kind, StatementKind::Return(Some(int("5"))));
    assert_eq!(parse("RETURN (1)")[0].kind, StatementKind::Return(Some(Expr::Nested(Box::new(int("1"))))));
    assert_eq!(parse("RETURN; SELECT 1").len(), 2);
    let s = parse("GOTO done\nPRINT 1\ndone:\nPRINT 2");
    assert_eq!(s[0].kind, StatementKind::Goto(Ident::new("done")));
    assert_eq!(s[2].kind, StatementKind::Label(Ident::new("done")));
    assert_eq!(s[2].line, 3);
    assert_eq!(one("WAITFOR DELAY '00:00:01'"), StatementKind::WaitFor { delay: true, value: string("00:00:01") });
    assert_eq!(one("WAITFOR TIME @t"), StatementKind::WaitFor { delay: false, value: var("@t") });
}

#[test]
fn errors_handling_statements() {
    let StatementKind::TryCatch { try_block, catch_block } =
        one("BEGIN TRY SELECT 1/0 END TRY BEGIN CATCH SELECT ERROR_MESSAGE(); THROW; END CATCH")
    else {
        panic!()
    };
    assert_eq!(try_block.len(), 1);
    assert_eq!(catch_block.len(), 2);
    assert_eq!(catch_block[1].kind, StatementKind::Throw(None));
    assert_eq!(
        one("THROW 50001, N'bad', 1"),
        StatementKind::Throw(Some((
            int("50001"),
            Expr::Literal(Literal::String { value: "bad".into(), unicode: true }),
            int("1")
        )))
    );
    assert_eq!(
        one("RAISERROR('%s %d', 16, 1, 'x', 5) WITH NOWAIT, LOG"),
        StatementKind::RaisError {
            message: string("%s %d"),
            severity: int("16"),
            state: int("1"),
            args: vec![string("x"), int("5")],
            options: vec!["NOWAIT".into(), "LOG".into()]
        }
    );
}

// ---- EXEC and modules --------------------------------------------------------------------

fn execute(sql: &str) -> Execute {
    match one(sql) {
        StatementKind::Execute(e) => *e,
        other => panic!("{other:#?}"),
    }
}

fn arg(name: Option<&str>, value: Expr, output: bool) -> ExecArg {
    ExecArg { name: name.map(String::from), value, output }
}

#[test]
fn exec() {
    let e = execute("EXEC @rc = dbo.p 1, @b = 'x', @c = @v OUTPUT, @d = DEFAULT, @e OUT, t, -5 WITH RECOMPILE");
    assert_eq!(e.return_status.as_deref(), Some("@rc"));
    assert_eq!(e.procedure, name("dbo.p"));
    assert_eq!(
        e.args,
        vec![
            arg(None, int("1"), false),
            arg(Some("@b"), string("x"), false),
            arg(Some("@c"), var("@v"), true),
            arg(Some("@d"), Expr::Default, false),
            arg(None, var("@e"), true),
            arg(None, string("t"), false),
            arg(None, unary(UnaryOp::Minus, int("5")), false),
        ]
    );
    assert_eq!(e.options, vec!["RECOMPILE".to_string()]);
    let e = execute("EXECUTE @proc");
    assert_eq!((e.procedure, e.args.len()), (name("@proc"), 0));
    assert_eq!(
        one("EXEC ('SELECT ' + @x + ' FROM t')"),
        StatementKind::ExecuteString(vec![string("SELECT "), var("@x"), string(" FROM t")])
    );
    assert_eq!(one("EXEC (@sql)"), StatementKind::ExecuteString(vec![var("@sql")]));
    let s = parse("EXEC p\nSELECT 1");
    assert_eq!(s.len(), 2);
}

#[test]
fn bare_procedure_call_first_in_batch() {
    let e = execute("sp_who");
    assert_eq!((e.procedure, e.args.len()), (name("sp_who"), 0));
    let e = execute("myproc 1, 2");
    assert_eq!(e.args.len(), 2);
    let s = parse("dbo.myproc @a = 1\nSELECT 1");
    assert_eq!(s.len(), 2);
    // Not first: a syntax error.
    assert_eq!(error("SELECT 1\nmyproc 1").0, 102);
}

#[test]
fn procedures() {
    let sql = "-- header\nCREATE PROCEDURE dbo.p @a int = 5, @b varchar(10) OUTPUT, @t dbo.tt READONLY\nAS\nSET NOCOUNT ON\nSELECT @a;\n";
    let StatementKind::CreateProcedure(p) = one(sql) else { panic!() };
    assert_eq!((p.or_alter, p.alter), (false, false));
    assert_eq!(p.name, name("dbo.p"));
    assert_eq!(
        p.params,
        vec![
            Parameter {
                name: "@a".into(),
                ty: ty("INT", &[]),
                default: Some(int("5")),
                output: false,
                readonly: false
            },
            Parameter { name: "@b".into(), ty: ty("VARCHAR", &[10]), default: None, output: true, readonly: false },
            Parameter { name: "@t".into(), ty: ty("dbo.tt", &[]), default: None, output: false, readonly: true },
        ]
    );
    assert_eq!(p.body.len(), 2);
    assert_eq!(p.body[1].line, 5);
    assert_eq!(
        p.text,
        "CREATE PROCEDURE dbo.p @a int = 5, @b varchar(10) OUTPUT, @t dbo.tt READONLY\nAS\nSET NOCOUNT ON\nSELECT @a;"
    );
    let StatementKind::CreateProcedure(p) =
        one("CREATE OR ALTER PROC p (@x int OUT) WITH RECOMPILE AS BEGIN RETURN @x END")
    else {
        panic!()
    };
    assert!(p.or_alter && p.params[0].output);
    assert!(matches!(p.body[0].kind, StatementKind::Block(_)));
    let StatementKind::CreateProcedure(p) = one("ALTER PROCEDURE p AS SELECT 1") else { panic!() };
    assert!(p.alter && p.params.is_empty());
    assert_eq!(
        one("DROP PROCEDURE IF EXISTS p, dbo.q"),
        StatementKind::DropModule {
            kind: ModuleKind::Procedure,
            names: vec![name("p"), name("dbo.q")],
            if_exists: true
        }
    );
    assert_eq!(
        one("DROP PROC p"),
        StatementKind::DropModule { kind: ModuleKind::Procedure, names: vec![name("p")], if_exists: false }
    );
    assert_eq!(
        one("DROP FUNCTION f"),
        StatementKind::DropModule { kind: ModuleKind::Function, names: vec![name("f")], if_exists: false }
    );
    assert_eq!(
        one("DROP VIEW v"),
        StatementKind::DropModule { kind: ModuleKind::View, names: vec![name("v")], if_exists: false }
    );
}

#[test]
fn functions_and_views() {
    let StatementKind::CreateFunction(f) =
        one("CREATE FUNCTION dbo.add1 (@x int) RETURNS int AS BEGIN RETURN @x + 1 END")
    else {
        panic!()
    };
    assert_eq!(f.params.len(), 1);
    let FunctionReturns::Scalar { ty: t, body, .. } = f.returns else { panic!() };
    assert_eq!(t, ty("INT", &[]));
    assert_eq!(body[0].kind, StatementKind::Return(Some(bin(BinaryOp::Add, var("@x"), int("1")))));
    let StatementKind::CreateFunction(f) = one("CREATE OR ALTER FUNCTION f() RETURNS TABLE AS RETURN (SELECT 1 AS a)")
    else {
        panic!()
    };
    assert!(f.or_alter);
    assert!(matches!(f.returns, FunctionReturns::InlineTable(_)));
    assert_eq!(f.text, "CREATE OR ALTER FUNCTION f() RETURNS TABLE AS RETURN (SELECT 1 AS a)");
    let StatementKind::CreateFunction(f) =
        one("CREATE FUNCTION f(@n int) RETURNS @r TABLE (a int) WITH SCHEMABINDING AS BEGIN INSERT @r VALUES (@n) RETURN END")
    else {
        panic!()
    };
    let FunctionReturns::MultiStatement { variable, columns, body } = f.returns else { panic!() };
    assert_eq!((variable.as_str(), columns.len(), body.len()), ("@r", 1, 2));
    let StatementKind::CreateView(v) = one("CREATE VIEW dbo.v (a, b) AS SELECT 1, 2 WITH CHECK OPTION") else {
        panic!()
    };
    assert_eq!(v.columns.len(), 2);
    assert_eq!(v.text, "CREATE VIEW dbo.v (a, b) AS SELECT 1, 2 WITH CHECK OPTION");
    let StatementKind::CreateView(v) = one("ALTER VIEW v AS WITH c AS (SELECT 1 AS x) SELECT x FROM c") else {
        panic!()
    };
    assert!(v.alter);
}

#[test]
fn administration() {
    assert_eq!(
        one("DBCC CHECKIDENT ('t', RESEED, 0) WITH NO_INFOMSGS"),
        StatementKind::Dbcc {
            command: "CHECKIDENT".into(),
            args: vec![string("t"), col("RESEED"), int("0")],
            options: vec!["NO_INFOMSGS".into()]
        }
    );
    assert_eq!(
        one("dbcc freeproccache"),
        StatementKind::Dbcc { command: "FREEPROCCACHE".into(), args: vec![], options: vec![] }
    );
    assert_eq!(one("RECONFIGURE WITH OVERRIDE"), StatementKind::Reconfigure { with_override: true });
    assert_eq!(one("RECONFIGURE"), StatementKind::Reconfigure { with_override: false });
    assert_eq!(one("CHECKPOINT"), StatementKind::Checkpoint);
}

// ---- errors ------------------------------------------------------------------------------

#[test]
fn syntax_errors() {
    assert_eq!(error("SELECT * FROM WHERE"), (156, 1, "Incorrect syntax near the keyword 'WHERE'.".into()));
    assert_eq!(error("select * from t where"), (102, 1, "Incorrect syntax near 'where'.".into()));
    assert_eq!(error("SELECT 1\nSELECT * FROM t\nWHERE a = = 1"), (102, 3, "Incorrect syntax near '='.".into()));
    assert_eq!(error("SELECT 1 'abc' 'def'"), (102, 1, "Incorrect syntax near 'def'.".into()));
    assert_eq!(error("SELECT (1"), (102, 1, "Incorrect syntax near '1'.".into()));
    assert_eq!(error("SELECT 1 ?"), (102, 1, "Incorrect syntax near '?'.".into()));
    assert_eq!(error("SELECT 1\n\nselect from t"), (156, 3, "Incorrect syntax near the keyword 'FROM'.".into()));
    assert_eq!(error("SELECT 'abc"), (105, 1, "Unclosed quotation mark after the character string 'abc'.".into()));
    assert_eq!(error("SELECT 1 /* x"), (113, 1, "Missing end comment mark '*/'.".into()));
    assert_eq!(error("BEGIN SELECT 1"), (102, 1, "Incorrect syntax near '1'.".into()));
}

#[test]
fn modules_must_be_first() {
    assert_eq!(
        error("SELECT 1\nCREATE PROCEDURE p AS SELECT 1"),
        (111, 2, "'CREATE PROCEDURE' must be the first statement in a query batch.".into())
    );
    assert_eq!(
        error("SELECT 1 CREATE VIEW v AS SELECT 1"),
        (111, 1, "'CREATE VIEW' must be the first statement in a query batch.".into())
    );
    assert_eq!(
        error("PRINT 1 ALTER FUNCTION f() RETURNS int AS BEGIN RETURN 1 END").2,
        "'ALTER FUNCTION' must be the first statement in a query batch."
    );
    assert_eq!(
        error("PRINT 1 CREATE OR ALTER PROC p AS SELECT 1").2,
        "'CREATE/ALTER PROCEDURE' must be the first statement in a query batch."
    );
    assert_eq!(error("CREATE VIEW v AS SELECT 1\nSELECT 2").0, 156);
}

#[test]
fn nesting_limit() {
    let deep = format!("SELECT {}1{}", "(".repeat(300), ")".repeat(300));
    let (number, _, message) = error(&deep);
    assert_eq!(number, 191);
    assert!(message.starts_with("Some part of your SQL statement is nested too deeply."));
    let ok = format!("SELECT {}1{}", "(".repeat(60), ")".repeat(60));
    parse(&ok);
    let deep_blocks = format!("{}SELECT 1{}", "BEGIN ".repeat(300), " END".repeat(300));
    assert_eq!(error(&deep_blocks).0, 191);
    let deep_minus = format!("SELECT {}1", "- ".repeat(1000));
    assert_eq!(error(&deep_minus).0, 191);
}

#[test]
fn error_lines_and_end_of_batch() {
    assert_eq!(error("SELECT *\nFROM"), (102, 2, "Incorrect syntax near 'FROM'.".into()));
    assert_eq!(error("SELECT a b c"), (102, 1, "Incorrect syntax near 'c'.".into()));
    assert_eq!(error("INSERT INTO t VALUES (1,)"), (102, 1, "Incorrect syntax near ')'.".into()));
    assert_eq!(error("SELECT CASE END"), (156, 1, "Incorrect syntax near the keyword 'END'.".into()));
    assert_eq!(error("IF 1 = 1\n\n"), (102, 1, "Incorrect syntax near '1'.".into()));
    assert_eq!(
        error("CREATE PROC p AS\nSELECT 1\nSELECT FROM"),
        (156, 3, "Incorrect syntax near the keyword 'FROM'.".into())
    );
    assert_eq!(error("SELECT [x y] z ,"), (102, 1, "Incorrect syntax near ','.".into()));
    assert_eq!(error("SELECT 1\nFROM [a b] c d"), (102, 2, "Incorrect syntax near 'd'.".into()));
}

#[test]
fn lexical_quirks() {
    // `1a` is 1 with alias a; CREATE TABLE accepts a trailing comma.
    assert_eq!(select("SELECT 1a").items, vec![alias(int("1"), "a")]);
    assert_eq!(create_table("CREATE TABLE t (a int,)").columns.len(), 1);
    // Statement lines inside a procedure body are lines of the batch.
    let StatementKind::CreateProcedure(p) = one("\n\nCREATE PROC p AS\nBEGIN\n  SELECT 1\nEND") else { panic!() };
    assert_eq!(p.body[0].line, 4);
    let StatementKind::Block(block) = &p.body[0].kind else { panic!() };
    assert_eq!(block[0].line, 5);
}

#[test]
fn semicolons_and_empty_batches() {
    assert_eq!(parse(";;SELECT 1;;SELECT 2;").len(), 2);
    assert!(parse("").is_empty());
    assert!(parse("  -- nothing\n/* here */").is_empty());
}

/// Inputs nested just below and beyond the limit parse (or fail with 191) on a thread with
/// the default 2 MiB stack, in debug builds too.
#[test]
fn deep_nesting_fits_in_a_default_thread_stack() {
    let run = || {
        for n in [super::MAX_DEPTH - 2, super::MAX_DEPTH + 50] {
            let inputs = [
                format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)),
                format!("SELECT {}1", "- ".repeat(n)),
                format!("{}SELECT 1{}", "BEGIN ".repeat(n), " END".repeat(n)),
                "IF 1=1 ".repeat(n) + "SELECT 1",
                format!("SELECT {} 1 {}", "(SELECT ".repeat(n / 2), ")".repeat(n / 2)),
                format!("SELECT * FROM {} t {}", "(SELECT * FROM ".repeat(n / 2), ") x".repeat(n / 2)),
                format!("SELECT 1 WHERE {} 1=1", "NOT ".repeat(n)),
                format!("SELECT {}1{}", "CASE WHEN 1=1 THEN ".repeat(n / 2), " END".repeat(n / 2)),
                format!("SELECT {}1{}", "ABS(".repeat(n), ")".repeat(n)),
            ];
            for input in inputs {
                if let Err(e) = parse_batch(&input) {
                    assert_eq!(e.number, 191, "{input}: {e}");
                }
            }
        }
    };
    std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}

mod never_panics {
    use super::super::parse_batch;
    use crate::script::{parse_go_line, split_batches};
    use proptest::prelude::*;

    /// Tokens and fragments that make random input look like T-SQL.
    const FRAGMENTS: &[&str] = &[
        "SELECT",
        "FROM",
        "WHERE",
        "INSERT",
        "INTO",
        "VALUES",
        "UPDATE",
        "SET",
        "DELETE",
        "CREATE",
        "ALTER",
        "DROP",
        "TABLE",
        "PROC",
        "FUNCTION",
        "VIEW",
        "INDEX",
        "DATABASE",
        "BEGIN",
        "END",
        "TRAN",
        "TRY",
        "CATCH",
        "COMMIT",
        "ROLLBACK",
        "IF",
        "ELSE",
        "WHILE",
        "RETURN",
        "DECLARE",
        "EXEC",
        "AS",
        "ON",
        "JOIN",
        "LEFT",
        "CROSS",
        "APPLY",
        "UNION",
        "ALL",
        "INTERSECT",
        "EXCEPT",
        "ORDER",
        "BY",
        "GROUP",
        "HAVING",
        "TOP",
        "WITH",
        "CASE",
        "WHEN",
        "THEN",
        "NOT",
        "NULL",
        "IS",
        "IN",
        "LIKE",
        "BETWEEN",
        "AND",
        "OR",
        "EXISTS",
        "CAST",
        "CONVERT",
        "COUNT",
        "OVER",
        "PARTITION",
        "OUTPUT",
        "DEFAULT",
        "PRIMARY",
        "KEY",
        "CONSTRAINT",
        "CHECK",
        "REFERENCES",
        "THROW",
        "RAISERROR",
        "DBCC",
        "GOTO",
        "x",
        "t",
        "dbo",
        "@v",
        "@@ROWCOUNT",
        "#t",
        "[q]",
        "\"d\"",
        "1",
        "1.5",
        "1e3",
        "$2",
        "'s'",
        "N'u'",
        "0x0F",
        "(",
        ")",
        ",",
        ".",
        ";",
        ":",
        "*",
        "=",
        "+=",
        "<>",
        "-",
        "+",
        "/",
        "%",
        "~",
        "&",
        "|",
        "^",
        "<",
        ">",
        "!<",
        "--c\n",
        "/*c*/",
        "\n",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn fragment_soup(parts in proptest::collection::vec(proptest::sample::select(FRAGMENTS), 0..40)) {
            let text = parts.join(" ");
            let _ = parse_batch(&text);
            let _ = split_batches(&text);
        }

        #[test]
        fn arbitrary_text(text in "\\PC{0,120}") {
            let _ = parse_batch(&text);
            let _ = split_batches(&text);
            let _ = parse_go_line(&text);
        }

        #[test]
        fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..160)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_batch(&text);
            let _ = split_batches(&text);
        }
    }
}

/// Long operator chains build left-deep trees: they are capped so that walking, cloning,
/// comparing and dropping the tree recursively stays within a default thread stack.
#[test]
fn long_chains_are_capped() {
    let run = || {
        assert!(parse_batch(&format!("SELECT 1{}", " + 1".repeat(900))).is_ok());
        assert!(parse_batch(&format!("SELECT 1 WHERE {}", vec!["a = 1"; 900].join(" OR "))).is_ok());
        for n in [5_000, 50_000] {
            let inputs = [
                format!("SELECT 1{}", " + 1".repeat(n)),
                format!("SELECT 1 WHERE {}", vec!["a = 1"; n].join(" OR ")),
                vec!["SELECT 1"; n].join(" UNION "),
                vec!["SELECT 1"; n].join(" INTERSECT "),
                format!("SELECT * FROM t{}", " JOIN t ON 1 = 1".repeat(n)),
                format!("SELECT {}1{}", "(1 + ".repeat(100), " + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1)".repeat(100)),
            ];
            for input in inputs {
                match parse_batch(&input) {
                    Ok(batch) => {
                        let copy = batch.clone();
                        assert_eq!(batch, copy);
                    }
                    Err(e) => assert_eq!(e.number, 191, "{e}"),
                }
            }
        }
    };
    std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}

#[test]
fn statement_spans_cover_their_text_and_semicolon() {
    let text = "SELECT 1;  SELECT *\nFROM t WHERE a = 1\nIF 1 = 1 BEGIN PRINT 'x' END; EXEC sp_who";
    let statements = parse(text);
    let spans: Vec<&str> = statements.iter().map(|s| &text[s.span.0..s.span.1]).collect();
    assert_eq!(spans, ["SELECT 1;", "SELECT *\nFROM t WHERE a = 1", "IF 1 = 1 BEGIN PRINT 'x' END;", "EXEC sp_who"]);
    let bare = parse("sp_who 1;");
    assert_eq!(bare[0].span, (0, 9));
    let StatementKind::If { then, .. } = &statements[2].kind else { panic!() };
    let StatementKind::Block(body) = &then.kind else { panic!() };
    assert_eq!(&text[body[0].span.0..body[0].span.1], "PRINT 'x'");
}

#[test]
fn sequences() {
    use crate::ast::{SequenceCache, SequenceOptions};
    let StatementKind::CreateSequence { name: n, options } =
        one("CREATE SEQUENCE dbo.s AS int START WITH -5 INCREMENT BY 50 MINVALUE -10 NO MAXVALUE CYCLE CACHE 20")
    else {
        panic!()
    };
    assert_eq!(n, name("dbo.s"));
    assert_eq!(options.start, Some(-5));
    assert_eq!((options.increment, options.min, options.max), (Some(50), Some(Some(-10)), Some(None)));
    assert_eq!((options.cycle, options.cache), (Some(true), Some(SequenceCache::Size(20))));
    assert_eq!(
        one("ALTER SEQUENCE s RESTART NO CACHE"),
        StatementKind::AlterSequence {
            name: name("s"),
            options: SequenceOptions { restart: Some(None), cache: Some(SequenceCache::None), ..Default::default() }
        }
    );
    assert_eq!(
        one("DROP SEQUENCE IF EXISTS a, b"),
        StatementKind::DropSequence { names: vec![name("a"), name("b")], if_exists: true }
    );
    assert_eq!(expr("NEXT VALUE FOR db.dbo.s"), Expr::NextValueFor(name("db.dbo.s")));
    assert!(parse_batch("CREATE SEQUENCE s START WITH 1 START WITH 2").is_err(), "an option given twice");
    assert!(parse_batch("ALTER SEQUENCE s").is_err(), "ALTER without an option");
    assert!(parse_batch("ALTER SEQUENCE s START WITH 1").is_err(), "START WITH is CREATE's");
}

#[test]
fn create_database_as_copy_of() {
    let StatementKind::CreateDatabase(db) = one("CREATE DATABASE t2 AS COPY OF t1") else { panic!() };
    let source = db.copy_of.unwrap();
    assert_eq!((source.server, source.database.value.as_str()), (None, "t1"));
    let StatementKind::CreateDatabase(db) =
        one("CREATE DATABASE [t 3] AS COPY OF srv.[t 1] (SERVICE_OBJECTIVE = 'S0', EDITION = 'Standard')")
    else {
        panic!()
    };
    assert_eq!(db.name.value, "t 3");
    let source = db.copy_of.unwrap();
    assert_eq!((source.server.unwrap().value.as_str(), source.database.value.as_str()), ("srv", "t 1"));
}
