//! Remote procedure calls as the TDS layer makes them: stored procedures with OUTPUT
//! parameters and return status, sp_executesql, and the prepared-statement procedures.

mod common;

use tessera_semantics::output::Command;
use tessera_semantics::output::OutputColumn;
use tessera_semantics::types::{SqlType, Value};
use tessera_sql::session::RpcParam;
use tessera_sql::{Collected, ResultSink, Session, SqlError};

#[derive(Default)]
struct Sink {
    inner: Collected,
    statuses: Vec<i32>,
}

impl ResultSink for Sink {
    fn columns(&mut self, c: &[OutputColumn]) {
        self.inner.columns(c)
    }
    fn row(&mut self, r: &[Value]) {
        self.inner.row(r)
    }
    fn done(&mut self, c: Option<u64>, rs: Command) {
        self.inner.done(c, rs)
    }
    fn message(&mut self, m: &SqlError) {
        self.inner.message(m)
    }
    fn return_status(&mut self, status: i32) {
        self.statuses.push(status);
    }
}

fn param(name: &str, value: Value, ty: SqlType, output: bool) -> RpcParam {
    RpcParam { name: (!name.is_empty()).then(|| name.to_string()), value, ty, output, table: None }
}

fn nvarchar(s: &str) -> Value {
    Value::str(s)
}

#[test]
fn procedures_executesql_and_prepared_statements() {
    let (_dir, mut s) = common::session();
    let mut sink = Sink::default();
    assert!(!s.execute(
        "create table t (id int primary key, v nvarchar(20));
         insert into t values (1, N'one'), (2, N'two');",
        &mut sink
    ));
    assert!(!s.execute(
        "create procedure get_v @id int, @v nvarchar(20) output as begin select @v = v from t where id = @id; return @id * 10; end",
        &mut sink
    ));

    let mut sink = Sink::default();
    let out = s.execute_rpc(
        "get_v",
        vec![param("@id", Value::Int(2), SqlType::Int, false), param("@v", Value::Null, SqlType::NVarChar(20), true)],
        &mut sink,
    );
    assert!(!out.failed, "{:?}", sink.inner.messages);
    assert_eq!(out.outputs, vec![(Some("@v".to_string()), nvarchar("two"), SqlType::NVarChar(20))]);
    assert_eq!(sink.statuses, vec![20]);

    // sp_executesql, positional statement and parameter list, then named parameters.
    let mut sink = Sink::default();
    let text = SqlType::NVarChar(4000);
    let out = s.execute_rpc(
        "sp_executesql",
        vec![
            param("", nvarchar("select v from t where id = @p1; set @p2 = @p1 + 1"), text, false),
            param("", nvarchar("@p1 int, @p2 int output"), text, false),
            param("@p1", Value::Int(1), SqlType::Int, false),
            param("@p2", Value::Null, SqlType::Int, true),
        ],
        &mut sink,
    );
    assert!(!out.failed, "{:?}", sink.inner.messages);
    assert_eq!(sink.inner.result_sets[0].1, vec![vec![nvarchar("one")]]);
    assert_eq!(out.outputs[0].1, Value::Int(2));

    // sp_prepare → handle; sp_execute twice; sp_unprepare; a stale handle fails.
    let mut sink = Sink::default();
    let out = s.execute_rpc(
        "sp_prepare",
        vec![
            param("", Value::Null, SqlType::Int, true),
            param("", nvarchar("@id int"), text, false),
            param("", nvarchar("select v from t where id = @id"), text, false),
        ],
        &mut sink,
    );
    let handle = out.outputs[0].1.clone();
    assert!(matches!(handle, Value::Int(h) if h > 0), "{handle:?}");
    for (id, expected) in [(1, "one"), (2, "two")] {
        let mut sink = Sink::default();
        let out = s.execute_rpc(
            "sp_execute",
            vec![param("", handle.clone(), SqlType::Int, false), param("", Value::Int(id), SqlType::Int, false)],
            &mut sink,
        );
        assert!(!out.failed, "{:?}", sink.inner.messages);
        assert_eq!(sink.inner.result_sets[0].1, vec![vec![nvarchar(expected)]]);
    }
    let mut sink = Sink::default();
    s.execute_rpc("sp_unprepare", vec![param("", handle.clone(), SqlType::Int, false)], &mut sink);
    let out = s.execute_rpc(
        "sp_execute",
        vec![param("", handle, SqlType::Int, false), param("", Value::Int(1), SqlType::Int, false)],
        &mut sink,
    );
    assert!(out.failed);
    assert_eq!(sink.inner.errors()[0].number, 8179);
}

/// The same sp_executesql statement with other `@params` is bound anew: a plan bound for
/// one declaration read another's values as its own types (a string came back NULL, a
/// decimal of another scale was stored wrong) and another order's slots (values swapped).
#[test]
fn one_statement_with_other_parameter_declarations_is_bound_for_each() {
    let (_dir, mut s) = common::session();
    let mut sink = Sink::default();
    assert!(!s.execute("create table money (amount decimal(18,6));", &mut sink));
    let text = SqlType::NVarChar(4000);
    let mut run = |stmt: &str, decl: &str, args: Vec<RpcParam>| {
        let mut all = vec![param("", nvarchar(stmt), text, false), param("", nvarchar(decl), text, false)];
        all.extend(args);
        let mut sink = Sink::default();
        let out = s.execute_rpc("sp_executesql", all, &mut sink);
        assert!(!out.failed, "{stmt} with {decl}: {:?}", sink.inner.messages);
        sink.inner.result_sets.first().map(|r| r.1.clone()).unwrap_or_default()
    };

    let int = run("select @p1", "@p1 int", vec![param("@p1", Value::Int(5), SqlType::Int, false)]);
    assert_eq!(int, vec![vec![Value::Int(5)]]);
    let string =
        run("select @p1", "@p1 nvarchar(10)", vec![param("@p1", nvarchar("abc"), SqlType::NVarChar(10), false)]);
    assert_eq!(string, vec![vec![nvarchar("abc")]]);

    let two = Value::Decimal { value: 125, scale: 2 };
    let six = Value::Decimal { value: 2_123_456, scale: 6 };
    let d = |p, s| SqlType::Decimal { precision: p, scale: s };
    run("insert into money values (@p1)", "@p1 decimal(10,2)", vec![param("@p1", two, d(10, 2), false)]);
    run("insert into money values (@p1)", "@p1 decimal(18,6)", vec![param("@p1", six, d(18, 6), false)]);
    let stored = run("select cast(amount as varchar(20)) from money order by amount", "", vec![]);
    assert_eq!(stored, vec![vec![Value::str("1.250000")], vec![Value::str("2.123456")]]);

    let ab = |a: i64, b: i64| {
        vec![param("@a", Value::Int(a), SqlType::Int, false), param("@b", Value::Int(b), SqlType::Int, false)]
    };
    assert_eq!(run("select @a, @b", "@a int, @b int", ab(1, 2)), vec![vec![Value::Int(1), Value::Int(2)]]);
    assert_eq!(run("select @a, @b", "@b int, @a int", ab(10, 20)), vec![vec![Value::Int(10), Value::Int(20)]]);
}

fn int(v: i64) -> RpcParam {
    param("", Value::Int(v), SqlType::Int, false)
}

fn int_out(v: i64) -> RpcParam {
    param("", Value::Int(v), SqlType::Int, true)
}

fn text(s: &str) -> RpcParam {
    param("", nvarchar(s), SqlType::NVarChar(4000), false)
}

fn outs(out: &tessera_sql::session::RpcOutcome) -> Vec<i64> {
    out.outputs
        .iter()
        .map(|(_, v, _)| match v {
            Value::Int(n) => *n,
            v => panic!("not an int: {v:?}"),
        })
        .collect()
}

/// `sp_cursoropen` with every option as OUTPUT (as FreeTDS sends it): (handle,
/// scrollopt, ccopt, rowcount) granted, and what the call sent.
fn open(s: &mut Session, stmt: &str, scrollopt: i64, ccopt: i64, extra: Vec<RpcParam>) -> ([i64; 4], Sink) {
    let mut params = vec![int_out(0), text(stmt), int_out(scrollopt), int_out(ccopt), int_out(0)];
    params.extend(extra);
    let (out, sink) = call(s, "sp_cursoropen", params);
    let o = outs(&out);
    ([o[0], o[1], o[2], o[3]], sink)
}

/// `sp_cursorfetch`: the rows' first columns with their ROWSTAT, and the return status.
fn fetch(s: &mut Session, cursor: i64, fetchtype: i64, rownum: i64, nrows: i64) -> (Vec<(Value, i64)>, i32) {
    let (_, mut sink) = call(s, "sp_cursorfetch", vec![int(cursor), int(fetchtype), int(rownum), int(nrows)]);
    let (columns, rows) = sink.inner.result_sets.pop().expect("a fetch returns a result set");
    assert_eq!(columns.last().unwrap().name, "ROWSTAT");
    let rows = rows
        .into_iter()
        .map(|r| {
            let Some(Value::Int(stat)) = r.last().cloned() else { panic!("ROWSTAT {r:?}") };
            (r[0].clone(), stat)
        })
        .collect();
    (rows, *sink.statuses.last().unwrap())
}

/// The ids of fetched rows (-1 for a missing one).
fn ids(rows: &[(Value, i64)]) -> Vec<i64> {
    rows.iter()
        .map(|(v, stat)| match (v, stat) {
            (Value::Int(n), 1) => *n,
            (_, 2) => -1,
            other => panic!("{other:?}"),
        })
        .collect()
}

/// `sp_cursorfetch … INFO`: the position and the row count.
fn info(s: &mut Session, cursor: i64) -> Vec<i64> {
    let (out, sink) = call(s, "sp_cursorfetch", vec![int(cursor), int(0x100), int_out(0), int_out(0)]);
    assert!(sink.inner.result_sets.is_empty());
    outs(&out)
}

fn close(s: &mut Session, cursor: i64) {
    call(s, "sp_cursorclose", vec![int(cursor)]);
}

fn errors(sink: &Sink) -> Vec<i32> {
    sink.inner.messages.iter().map(|m| m.number).collect()
}

/// Calls `procedure`, which must succeed: its outcome and what it sent.
fn call(s: &mut Session, procedure: &str, params: Vec<RpcParam>) -> (tessera_sql::session::RpcOutcome, Sink) {
    let mut sink = Sink::default();
    let out = s.execute_rpc(procedure, params, &mut sink);
    assert!(!out.failed, "{procedure}: {:?}", sink.inner.messages);
    (out, sink)
}

/// Calls `procedure`, which must fail (return status 1): the messages it sent.
fn refused(s: &mut Session, procedure: &str, params: Vec<RpcParam>) -> Vec<i32> {
    let mut sink = Sink::default();
    let out = s.execute_rpc(procedure, params, &mut sink);
    assert!(out.failed, "{procedure} succeeded");
    assert_eq!(sink.statuses, [1]);
    errors(&sink)
}

fn named(name: &str, value: Value, ty: SqlType) -> RpcParam {
    param(name, value, ty, false)
}

/// The API server cursors by RPC, in process: every fetch type on a static cursor,
/// implicit conversions, a keyset cursor's positioned UPDATE, DELETE and INSERT with
/// optimistic concurrency, direct execution, prepared cursors, and the limits.
#[test]
fn api_server_cursors() {
    let (_dir, mut s) = common::session();
    let mut sink = Sink::default();
    assert!(!s.execute(
        "create table items (id int primary key, name nvarchar(20) not null, qty int null);
         insert into items values (1, N'a', 1), (2, N'b', 2), (3, N'c', 3), (4, N'd', 4), (5, N'e', 5),
           (6, N'f', 6), (7, N'g', 7), (8, N'h', 8), (9, N'i', 9), (10, N'j', 10);",
        &mut sink
    ));

    // STATIC: the row count at open, metadata with the hidden ROWSTAT and no rows.
    let ([c, scroll, cc, count], sink) = open(&mut s, "SELECT id, name FROM items ORDER BY id", 0x8, 0x1, vec![]);
    assert!(c > 0);
    assert_eq!((scroll, cc, count), (0x8, 0x1, 10));
    let (columns, rows) = &sink.inner.result_sets[0];
    assert_eq!(columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["id", "name", "ROWSTAT"]);
    assert!(rows.is_empty());
    assert_eq!(sink.statuses, vec![0]);
    assert_eq!(ids(&fetch(&mut s, c, 0x1, 0, 3).0), [1, 2, 3]); // FIRST
    assert_eq!(ids(&fetch(&mut s, c, 0x2, 0, 3).0), [4, 5, 6]); // NEXT
    assert_eq!(ids(&fetch(&mut s, c, 0x4, 0, 2).0), [2, 3]); // PREV
    assert_eq!(ids(&fetch(&mut s, c, 0x8, 0, 2).0), [9, 10]); // LAST
    assert_eq!(ids(&fetch(&mut s, c, 0x10, 5, 2).0), [5, 6]); // ABSOLUTE
    assert_eq!(ids(&fetch(&mut s, c, 0x10, -1, 3).0), [10]); // ABSOLUTE from the end
    assert_eq!(ids(&fetch(&mut s, c, 0x20, -2, 1).0), [8]); // RELATIVE
    assert_eq!(ids(&fetch(&mut s, c, 0x80, 0, 0).0), [8]); // REFRESH
    assert_eq!(info(&mut s, c), [8, 10]);
    // PREV past the first row starts at the first row, with return status 2.
    fetch(&mut s, c, 0x10, 3, 1);
    let (rows, status) = fetch(&mut s, c, 0x4, 0, 5);
    assert_eq!((ids(&rows), status), (vec![1, 2, 3, 4, 5], 2));
    // PREV_NOADJUST never returns the rows at or after the position.
    fetch(&mut s, c, 0x10, 4, 1);
    assert_eq!(ids(&fetch(&mut s, c, 0x200, 0, 5).0), [1, 2, 3]);
    // Past the end: no rows; then INFO says after the last row (-1).
    assert_eq!(ids(&fetch(&mut s, c, 0x10, 11, 5).0), Vec::<i64>::new());
    assert_eq!(info(&mut s, c), [-1, 10]);
    fetch(&mut s, c, 0x1, 0, 0);
    assert_eq!(info(&mut s, c), [0, 10], "FIRST with no rows: before the first row");
    assert_eq!(ids(&fetch(&mut s, c, 0x2, 0, 2).0), [1, 2]);
    close(&mut s, c);
    assert_eq!(refused(&mut s, "sp_cursorfetch", vec![int(c), int(2), int(0), int(1)]), [16909]);

    // Conversions: OPTIMISTIC on a STATIC cursor is granted READ_ONLY; an aggregate's
    // KEYSET cursor becomes STATIC; both say so (16956).
    let ([c, scroll, cc, _], sink) = open(&mut s, "SELECT id FROM items", 0x8, 0x4, vec![]);
    assert_eq!((scroll, cc, errors(&sink)), (0x8, 0x1, vec![16956]));
    close(&mut s, c);
    let ([c, scroll, cc, count], sink) = open(&mut s, "SELECT COUNT(*) FROM items", 0x1, 0x4, vec![]);
    assert_eq!((scroll, cc, count, errors(&sink)), (0x8, 0x1, 1, vec![16956]));
    close(&mut s, c);
    // CHECK_ACCEPTED_TYPES with only KEYSET acceptable: no acceptable cursor.
    let params =
        vec![int_out(0), text("SELECT COUNT(*) FROM items"), int(0x1 | 0x8000 | 0x10000), int(0x1), int_out(0)];
    assert_eq!(refused(&mut s, "sp_cursoropen", params), [16955]);

    // FAST_FORWARD: forward only, row count unknown, the rows as they were at open.
    let ([c, scroll, _, count], _) = open(&mut s, "SELECT id, name FROM items ORDER BY id", 0x10, 0x1, vec![]);
    assert_eq!((scroll, count), (0x10, -1));
    assert!(!s.execute("UPDATE items SET name = N'F' WHERE id = 6", &mut Sink::default()));
    assert_eq!(ids(&fetch(&mut s, c, 0x2, 0, 4).0), [1, 2, 3, 4]);
    assert_eq!(refused(&mut s, "sp_cursorfetch", vec![int(c), int(0x4), int(0), int(1)]), [16911]);
    let (_, mut sink) = call(&mut s, "sp_cursorfetch", vec![int(c), int(0x2), int(0), int(4)]);
    let rows = sink.inner.result_sets.pop().unwrap().1;
    assert_eq!(rows.iter().map(|r| r[0].clone()).collect::<Vec<_>>(), (5..=8).map(Value::Int).collect::<Vec<_>>());
    assert_eq!(rows[1][1], nvarchar("f"), "a snapshot: the change after open is not seen");
    assert!(!s.execute("UPDATE items SET name = N'f' WHERE id = 6", &mut Sink::default()));
    close(&mut s, c);
    // A select list reading a parameter cannot be read again by key: STATIC.
    let ([c, scroll, ..], _) = open(&mut s, "SELECT id, @p AS p FROM items", 0x1, 0x4, vec![text("@p int"), int(3)]);
    assert_eq!(scroll, 0x8);
    close(&mut s, c);

    // Parameters (PARAMETERIZED_STMT, @paramdef and a value after @rowcount).
    let ([c, _, _, count], _) =
        open(&mut s, "SELECT id FROM items WHERE id > @min", 0x1008, 0x1, vec![text("@min int"), int(7)]);
    assert_eq!(count, 3);
    assert_eq!(ids(&fetch(&mut s, c, 0x2, 0, 10).0), [8, 9, 10]);
    close(&mut s, c);

    // KEYSET with OPTIMISTIC: rows read again at each fetch; positioned changes.
    let ([k, scroll, cc, count], sink) = open(&mut s, "SELECT name, qty FROM items ORDER BY id", 0x1, 0x4, vec![]);
    assert_eq!((scroll, cc, count, errors(&sink)), (0x1, 0x4, 10, vec![]));
    assert_eq!(sink.inner.result_sets[0].0.len(), 3, "the key columns stay hidden");
    let (rows, _) = fetch(&mut s, k, 0x10, 2, 3);
    assert_eq!(rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(), [nvarchar("b"), nvarchar("c"), nvarchar("d")]);
    let name = |v: &str| named("@name", nvarchar(v), SqlType::NVarChar(20));
    let (_, sink) = call(&mut s, "sp_cursor", vec![int(k), int(0x21), int(1), text(""), name("bee")]);
    assert_eq!(sink.inner.counts, [1]);
    call(&mut s, "sp_cursor", vec![int(k), int(0x22), int(2), text("")]);
    // Someone else changes row 4: the cursor's update of it fails the optimistic check.
    assert!(!s.execute("UPDATE items SET qty = 40 WHERE id = 4", &mut Sink::default()));
    let qty = named("@qty", Value::Int(0), SqlType::Int);
    let params = vec![int(k), int(0x1), int(3), text("[master].[dbo].[items]"), qty];
    assert_eq!(refused(&mut s, "sp_cursor", params), [16934, 16947]);
    let (rows, _) = fetch(&mut s, k, 0x80, 0, 0);
    assert_eq!(
        rows,
        [(nvarchar("bee"), 1), (Value::Null, 2), (nvarchar("d"), 1)],
        "REFRESH: the update, the deleted row as missing"
    );
    // After the refresh the row's current values are known: the update goes through.
    call(&mut s, "sp_cursor", vec![int(k), int(0x1), int(3), text("items"), text("qty = qty + 1")]);
    // A table the cursor does not read; a value for a column it does not select.
    assert_eq!(refused(&mut s, "sp_cursor", vec![int(k), int(0x2), int(1), text("other")]), [16933]);
    let id = named("@id", Value::Int(100), SqlType::Int);
    assert_eq!(refused(&mut s, "sp_cursor", vec![int(k), int(0x4), int(0), text("items"), id, name("x")]), [16936]);
    // INSERT: the new row is seen at the cursor's end.
    call(&mut s, "sp_cursor", vec![int(k), int(0x4), int(0), text("items"), text("VALUES (100, N'new', 7)")]);
    let (out, _) = call(&mut s, "sp_cursoroption", vec![int(k), int(6), int_out(0)]);
    assert_eq!(outs(&out), [11]);
    assert_eq!(fetch(&mut s, k, 0x8, 0, 1).0, [(nvarchar("new"), 1)]);
    let mut check = Sink::default();
    assert!(!s.execute("SELECT id, name, qty FROM items WHERE id IN (2, 3, 4, 100) ORDER BY id", &mut check));
    assert_eq!(
        check.inner.result_sets[0].1,
        vec![
            vec![Value::Int(2), nvarchar("bee"), Value::Int(2)],
            vec![Value::Int(4), nvarchar("d"), Value::Int(41)],
            vec![Value::Int(100), nvarchar("new"), Value::Int(7)],
        ]
    );
    // sp_cursoroption: SCROLLOPT and CCOPT answer; names are unique in the session.
    let (out, _) = call(&mut s, "sp_cursoroption", vec![int(k), int(4), int_out(0)]);
    assert_eq!(outs(&out), [0x1]);
    let (out, _) = call(&mut s, "sp_cursoroption", vec![int(k), int(5), int_out(0)]);
    assert_eq!(outs(&out), [0x4]);
    call(&mut s, "sp_cursoroption", vec![int(k), int(2), text("orders")]);
    let ([other, ..], _) = open(&mut s, "SELECT id FROM items", 0x8, 0x1, vec![]);
    assert_eq!(refused(&mut s, "sp_cursoroption", vec![int(other), int(2), text("ORDERS")]), [16915]);
    assert_eq!(refused(&mut s, "sp_cursoroption", vec![int(other), int(9), int(0)]), [16902]);
    close(&mut s, other);
    // A key changed through the cursor: the row keeps its place under its new key.
    let ([u, ..], _) = open(&mut s, "SELECT id, name FROM items ORDER BY id", 0x1, 0x4, vec![]);
    assert_eq!(ids(&fetch(&mut s, u, 0x10, 4, 1).0), [5], "row 3 is gone");
    call(&mut s, "sp_cursor", vec![int(u), int(0x1), int(1), text(""), named("@id", Value::Int(50), SqlType::Int)]);
    assert_eq!(ids(&fetch(&mut s, u, 0x80, 0, 0).0), [50]);
    assert!(!s.execute("UPDATE items SET id = 5 WHERE id = 50", &mut Sink::default()));
    close(&mut s, u);
    // A read-only cursor refuses changes.
    let ([r, ..], _) = open(&mut s, "SELECT id FROM items", 0x8, 0x1, vec![]);
    fetch(&mut s, r, 0x2, 0, 1);
    assert_eq!(refused(&mut s, "sp_cursor", vec![int(r), int(0x2), int(1), text("")]), [16929]);

    // Not a cursorable statement: executed directly with ALLOW_DIRECT, refused without.
    let update = text("UPDATE items SET qty = 0 WHERE id = 1");
    let (out, sink) = call(&mut s, "sp_cursoropen", vec![int_out(0), update, int(0x1), int(0x2001), int_out(0)]);
    assert_eq!(outs(&out)[0], 0, "no cursor");
    assert_eq!((errors(&sink), sink.inner.counts.clone()), (vec![16954], vec![1]));
    let batch = text("SELECT 1; SELECT 2");
    assert_eq!(refused(&mut s, "sp_cursoropen", vec![int_out(0), batch, int(0x8), int(0x1), int_out(0)]), [16937]);

    // Prepared: sp_cursorprepexec, sp_cursorexecute again, sp_cursorunprepare.
    let stmt = text("SELECT id FROM items WHERE id >= @lo ORDER BY id");
    let params = vec![int_out(0), int_out(0), text("@lo int"), stmt, int(0x1008), int(0x1), int_out(0), int(9)];
    let (out, _) = call(&mut s, "sp_cursorprepexec", params);
    let [handle, c, count] = outs(&out)[..] else { panic!() };
    assert_eq!(count, 3);
    assert_eq!(ids(&fetch(&mut s, c, 0x2, 0, 5).0), [9, 10, 100]);
    let execute = || vec![int(handle), int_out(0), int(0x8), int(0x1), int_out(0), int(10)];
    let (out, _) = call(&mut s, "sp_cursorexecute", execute());
    let [c2, count] = outs(&out)[..] else { panic!() };
    assert_ne!(c2, c);
    assert_eq!(count, 2);
    call(&mut s, "sp_cursorunprepare", vec![int(handle)]);
    assert_eq!(refused(&mut s, "sp_cursorexecute", execute()), [8179]);

    // The limit on open cursors.
    let mut opened = 0;
    loop {
        let mut sink = Sink::default();
        let params = vec![int_out(0), text("SELECT 1"), int(0x8), int(0x1), int_out(0)];
        if s.execute_rpc("sp_cursoropen", params, &mut sink).failed {
            assert_eq!(errors(&sink), [16960]);
            break;
        }
        opened += 1;
        assert!(opened <= 1024, "no limit");
    }
    assert!(opened > 1000, "{opened}");
    // A session's end closes its cursors.
    s.close();
    assert_eq!(refused(&mut s, "sp_cursorfetch", vec![int(k), int(2), int(0), int(1)]), [16909]);
}

/// A cursor's rows are held under a memory grant: past it the open fails with 701 and
/// leaves no cursor (the session goes on); what an open cursor holds comes back when it
/// closes.
#[test]
fn api_cursor_memory_is_bounded_and_given_back() {
    let (_dir, mut s) = common::session();
    let mut sink = Sink::default();
    assert!(!s.execute(
        "create table n (i int primary key);
         declare @i int = 0; while @i < 400 begin insert n values (@i); set @i += 1; end",
        &mut sink
    ));
    let memory = s.shared.query_memory.clone();
    assert_eq!(memory.used_bytes(), 0);
    let ([c, _, _, count], _) = open(&mut s, "SELECT i, REPLICATE(N'x', 100) AS pad FROM n", 0x8, 0x1, vec![]);
    assert_eq!(count, 400);
    assert!(memory.used_bytes() > 400 * 100, "{}", memory.used_bytes());
    close(&mut s, c);
    assert_eq!(memory.used_bytes(), 0, "closing gives the rows' memory back");
    // 160,000 rows of some 300 bytes: past a statement's grant (32 MB here).
    let big = text("SELECT a.i, REPLICATE(N'x', 300) AS pad FROM n a CROSS JOIN n b");
    let params = vec![int_out(0), big, int_out(0x8), int_out(0x1), int_out(0)];
    let mut sink = Sink::default();
    let out = s.execute_rpc("sp_cursoropen", params, &mut sink);
    assert!(out.failed);
    assert_eq!(errors(&sink), [701]);
    assert_eq!(outs(&out)[0], 0, "no cursor");
    assert_eq!(memory.used_bytes(), 0);
    let ([c, ..], _) = open(&mut s, "SELECT i FROM n", 0x8, 0x1, vec![]);
    assert_eq!(ids(&fetch(&mut s, c, 0x2, 0, 2).0), [0, 1], "the session goes on");
}
