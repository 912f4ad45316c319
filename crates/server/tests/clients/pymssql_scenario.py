"""The client scenario through pymssql (FreeTDS's dblib inside), against a running tessera.

Usage: python3 pymssql_scenario.py HOST PORT PASSWORD

Covers: a wrong password (18456), create database and table, every data type through
parameters (pymssql substitutes them into the SQL text, as FreeTDS's dblib clients do) and
back, NULLs, a stored procedure with an OUTPUT parameter and a return status (callproc is
an RPC by name), commit and rollback (pymssql runs BEGIN TRANSACTION / COMMIT / ROLLBACK as
SQL), an error with its number and a query abandoned at its timeout.
pymssql has no bulk-load API. Exits non-zero on the first failure.
"""

import datetime
import decimal
import sys
import time
import uuid

import pymssql


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def main():
    host, port, password = sys.argv[1], sys.argv[2], sys.argv[3]

    def connect(**kw):
        return pymssql.connect(server=host, port=port, user="sa", password=password, login_timeout=30, tds_version="7.4", **kw)

    try:
        pymssql.connect(server=host, port=port, user="sa", password="wrong", login_timeout=30, tds_version="7.4")
        raise AssertionError("login with a wrong password succeeded")
    except pymssql.OperationalError as e:
        check("18456" in str(e), "wrong password is 18456 (%s)" % str(e)[:80])

    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("SELECT @@VERSION, SUSER_NAME()")
    version, login = cur.fetchone()
    check(bool(version) and login == "sa", "login, @@VERSION and SUSER_NAME()")
    cur.execute("IF DB_ID('pymssql_db') IS NOT NULL DROP DATABASE pymssql_db")
    cur.execute("CREATE DATABASE pymssql_db")
    cur.execute("USE pymssql_db")
    cur.execute("SELECT DB_NAME()")
    check(cur.fetchone()[0] == "pymssql_db", "create database and use it")

    cur.execute(
        """CREATE TABLE all_types (
            id int NOT NULL PRIMARY KEY, b bit, ti tinyint, si smallint, i int, bi bigint, f float,
            d decimal(18,4), m money, vc varchar(50), nvc nvarchar(50), nvcm nvarchar(max),
            vb varbinary(20), dt date, dtm datetime, dt2 datetime2(3), g uniqueidentifier)"""
    )
    values = (
        1,
        True,
        200,
        -300,
        -70000,
        2**40,
        -2.25e100,
        decimal.Decimal("12345678901234.5678"),
        decimal.Decimal("-1234.5678"),
        "plain",
        "\u65e5\u672c\u8a9e",
        "x" * 3000,
        b"\x00\x01\xfe\xff",
        datetime.date(2024, 2, 29),
        datetime.datetime(2024, 2, 29, 13, 45, 7),
        datetime.datetime(2024, 2, 29, 13, 45, 7, 123000),
        uuid.UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF"),
    )
    cur.execute("INSERT INTO all_types VALUES (" + ", ".join(["%s"] * len(values)) + ")", values)
    check(cur.rowcount == 1, "insert every type with parameters")
    cur.execute("INSERT INTO all_types (id) VALUES (%d)", (2,))
    cur.execute("SELECT * FROM all_types ORDER BY id")
    rows = cur.fetchall()
    check(len(rows) == 2, "two rows back")
    got = rows[0]
    for i, (want, have) in enumerate(zip(values, got)):
        if isinstance(want, uuid.UUID):
            ok = want == (have if isinstance(have, uuid.UUID) else uuid.UUID(bytes_le=have) if isinstance(have, bytes) else uuid.UUID(str(have)))
        elif isinstance(want, bytes):
            ok = bytes(have) == want
        else:
            ok = want == have
        check(ok, "column %d round trip: %.50r == %.50r" % (i, want, have))
    check(all(v is None for v in rows[1][1:]), "NULLs round trip")

    cur.execute("SELECT %d + 1, %s, %s", (41, "x\u00e9", None))
    check(cur.fetchone() == (42, "x\u00e9", None), "parameterised select")

    # A stored procedure with an OUTPUT parameter and a return status.
    # (FreeTDS's dblib hands out OUTPUT values only for a procedure without result sets.)
    cur.execute(
        "CREATE PROCEDURE double_it @a int, @b int OUTPUT AS BEGIN SET NOCOUNT ON; SET @b = @a * 2; RETURN 7 END"
    )
    out = cur.callproc("double_it", (21, pymssql.output(int)))
    check(out[1] == 42, "OUTPUT parameter through an RPC (%r)" % (out,))
    cur.execute("CREATE PROCEDURE list_it @n int AS SELECT v FROM (VALUES (1), (2), (3)) t(v) WHERE v <= @n ORDER BY v")
    cur.callproc("list_it", (2,))
    check(cur.fetchall() == [(1,), (2,)], "a procedure's result set through an RPC")
    cur.execute("DECLARE @o int, @rc int; EXEC @rc = double_it 5, @o OUTPUT; SELECT @o, @rc")
    check(cur.fetchone() == (10, 7), "return status through EXEC")

    # Transactions: pymssql without autocommit begins a transaction itself.
    cur.execute("CREATE TABLE acct (id int PRIMARY KEY, bal int)")
    tx = connect(database="pymssql_db")
    tcur = tx.cursor()
    tcur.execute("INSERT INTO acct VALUES (1, 10)")
    tx.rollback()
    tcur.execute("SELECT COUNT(*) FROM acct")
    check(tcur.fetchone()[0] == 0, "rollback")
    tcur.execute("INSERT INTO acct VALUES (2, 20)")
    tx.commit()
    cur.execute("SELECT SUM(bal) FROM acct")
    check(cur.fetchone()[0] == 20, "commit seen by another connection")

    # An error with its number; the connection goes on.
    try:
        tcur.execute("INSERT INTO acct VALUES (2, 99)")
        raise AssertionError("no error")
    except pymssql.IntegrityError as e:
        check(e.args[0] == 2627, "error 2627 (%s)" % str(e.args[1])[:60])
    tx.rollback()
    tcur.execute("SELECT 3")
    check(tcur.fetchone()[0] == 3, "connection usable after an error")
    tx.close()

    # A query over its timeout. pymssql gives up the connection on a timeout (FreeTDS
    # reports "DBPROCESS is dead", as against SQL Server); the server must not mind: the
    # abandoned batch is stopped and other connections go on.
    slow = connect(timeout=2, autocommit=True)
    scur = slow.cursor()
    started = time.time()
    try:
        scur.execute("WAITFOR DELAY '00:00:30'")
        raise AssertionError("the delay returned")
    except pymssql.OperationalError as e:
        print("timed out:", str(e)[:80])
    check(time.time() - started < 20, "long query abandoned at its timeout")
    slow.close()
    again = connect(autocommit=True)
    acur = again.cursor()
    running = None
    for _ in range(100):
        acur.execute("SELECT COUNT(*) FROM sys.dm_exec_requests WHERE command LIKE 'WAITFOR%'")
        running = acur.fetchone()[0]
        if running == 0:
            break
        time.sleep(0.1)
    check(running == 0, "the abandoned batch is stopped well before its 30 s")
    again.close()
    conn.close()
    print("pymssql scenario: all checks passed")


if __name__ == "__main__":
    main()
