//! Remote procedure calls as the TDS layer makes them: stored procedures with OUTPUT
//! parameters and return status, sp_executesql, and the prepared-statement procedures.

use tessera_database::{Engine, EngineConfig};
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
    RpcParam { name: (!name.is_empty()).then(|| name.to_string()), value, ty, output }
}

fn nvarchar(s: &str) -> Value {
    Value::str(s)
}

#[test]
fn procedures_executesql_and_prepared_statements() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine).unwrap();
    let mut s = Session::new(shared, "sa", "master").unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine).unwrap();
    let mut s = Session::new(shared, "sa", "master").unwrap();
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
