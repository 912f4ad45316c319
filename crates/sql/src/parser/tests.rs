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
            (e.number, e.line, e.message)
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
