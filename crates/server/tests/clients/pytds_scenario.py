"""The client scenario through python-tds (pytds), against a running tessera server.

Usage: python3 pytds_scenario.py HOST PORT PASSWORD

Covers: login (pytds's default NOT_SUP encryption, autocommit off, so TM begin/commit/
rollback requests), create database and table, every data type through parameters
(sp_executesql by procedure id) and back, a stored procedure with an OUTPUT parameter and
a return status (RPC by name), a tz-aware datetime as datetimeoffset, commit and rollback,
an error with its number, a wrong password (18456), table-valued parameters, a bulk
load of 10,000 rows (copy_to)
and cancelling a long-running query
(attention). Exits non-zero on the
first failure.
"""

import datetime
import decimal
import sys
import time
import uuid

import pytds


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def main():
    host, port, password = sys.argv[1], int(sys.argv[2]), sys.argv[3]

    def connect(timeout=60, **kw):
        return pytds.connect(server=host, port=port, user="sa", password=password, timeout=timeout, login_timeout=30, **kw)

    # A wrong password: error 18456 and nothing else.
    try:
        pytds.connect(server=host, port=port, user="sa", password="wrong", login_timeout=30)
        raise AssertionError("login with a wrong password succeeded")
    except pytds.Error as e:
        check(getattr(e, "msg_no", None) == 18456 or "18456" in str(e) or "Login failed" in str(e), "wrong password is 18456")

    conn = connect()
    cur = conn.cursor()
    cur.execute("SELECT 1 + 1")
    check(cur.fetchone()[0] == 2, "select")
    conn.commit()

    conn.autocommit = True
    cur.execute("CREATE DATABASE pytds_db")
    cur.execute("USE pytds_db")
    cur.execute("SELECT DB_NAME()")
    check(cur.fetchone()[0] == "pytds_db", "create database and use it")
    conn.autocommit = False

    cur.execute(
        """CREATE TABLE all_types (
            id int NOT NULL PRIMARY KEY, b bit, ti tinyint, si smallint, i int, bi bigint, r real, f float,
            d decimal(18,4), m money, vc varchar(50), nvc nvarchar(50), nvcm nvarchar(max),
            vb varbinary(20), dt date, tm time(6), dtm datetime, dt2 datetime2(6), g uniqueidentifier)"""
    )
    values = (
        1,
        True,
        200,
        -300,
        -70000,
        2**40,
        1.5,
        -2.25e100,
        decimal.Decimal("12345678901234.5678"),
        decimal.Decimal("-1234.5678"),
        "caf\u00e9",
        "\u65e5\u672c\u8a9e",
        "x" * 2000,
        pytds.Binary(b"\x00\x01\xfe\xff"),
        datetime.date(2024, 2, 29),
        datetime.time(13, 45, 7, 123456),
        datetime.datetime(2024, 2, 29, 13, 45, 7, 997000),
        datetime.datetime(2024, 2, 29, 13, 45, 7, 123456),
        uuid.UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF"),
    )
    cur.execute("INSERT INTO all_types VALUES (" + ", ".join(["%s"] * len(values)) + ")", values)
    check(cur.rowcount == 1, "insert every type with parameters")
    cur.execute("INSERT INTO all_types (id) VALUES (%s)", (2,))
    conn.commit()
    cur.execute("SELECT * FROM all_types ORDER BY id")
    rows = cur.fetchall()
    check(len(rows) == 2, "two rows back")
    got = rows[0]
    for i, (want, have) in enumerate(zip(values, got)):
        if isinstance(want, float) and i == 6:
            ok = abs(want - have) < 1e-6
        elif isinstance(want, datetime.datetime) and i == 16:
            ok = abs((want - have).total_seconds()) < 0.004
        else:
            ok = want == have
        check(ok, "column %d round trip: %.60r == %.60r" % (i, want, have))
    check(all(v is None for v in rows[1][1:]), "NULLs round trip")

    cur.execute("SELECT %s + 1, %s, %s", (41, "x\u00e9", None))
    check(cur.fetchone() == (42, "x\u00e9", None), "parameterised select")

    # A tz-aware datetime goes as datetimeoffset and comes back with its offset; the column
    # compares by instant, so the same moment in UTC finds it.
    india = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    stamp = datetime.datetime(2025, 3, 4, 10, 11, 12, 123456, tzinfo=india)
    cur.execute("CREATE TABLE stamps (id int NOT NULL PRIMARY KEY, at datetimeoffset(6))")
    cur.execute("INSERT INTO stamps VALUES (%s, %s), (%s, %s)", (1, stamp, 2, None))
    conn.commit()
    utc = stamp.astimezone(datetime.timezone.utc)
    cur.execute("SELECT id, at, CONVERT(varchar(40), at), DATEPART(tz, at) FROM stamps WHERE at = %s", (utc,))
    key, got, text, tz = cur.fetchone()
    check(key == 1 and got == stamp and got.utcoffset() == stamp.utcoffset(), "datetimeoffset round trip (%r)" % got)
    check((text, tz) == ("2025-03-04 10:11:12.123456 +05:30", 330), "stored with its offset (%s, %s)" % (text, tz))
    cur.execute("SELECT at FROM stamps WHERE id = 2")
    check(cur.fetchone()[0] is None, "NULL datetimeoffset")

    # A stored procedure with an OUTPUT parameter and a return status, called by name.
    cur.execute(
        "CREATE PROCEDURE double_it @a int, @b int OUTPUT AS BEGIN SET NOCOUNT ON; SET @b = @a * 2; RETURN 7 END"
    )
    conn.commit()
    out = cur.callproc("double_it", (21, pytds.output(param_type="int")))
    check(out[1] == 42, "OUTPUT parameter")
    check(cur.return_value == 7, "return status")
    cur.execute("DECLARE @o int, @rc int; EXEC @rc = double_it 5, @o OUTPUT; SELECT @o, @rc")
    check(cur.fetchone() == (10, 7), "EXEC in a batch")

    # Transactions through TM requests: rollback undoes, commit keeps.
    cur.execute("CREATE TABLE acct (id int PRIMARY KEY, bal int)")
    conn.commit()
    cur.execute("INSERT INTO acct VALUES (1, 10)")
    conn.rollback()
    cur.execute("SELECT COUNT(*) FROM acct")
    check(cur.fetchone()[0] == 0, "rollback")
    cur.execute("INSERT INTO acct VALUES (2, 20)")
    conn.commit()
    cur.execute("SELECT SUM(bal), @@TRANCOUNT FROM acct")
    check(cur.fetchone() == (20, 1), "commit (and a new transaction begun)")

    # An error with its number; the connection goes on.
    try:
        cur.execute("SELECT * FROM no_such_table")
        raise AssertionError("no error")
    except pytds.Error as e:
        check(e.msg_no == 208, "error 208 (%s)" % e)
    conn.rollback()
    cur.execute("SELECT 3")
    check(cur.fetchone()[0] == 3, "connection usable after an error")

    # Bulk load (INSERT BULK + BULK_LOAD, every value sent as nvarchar and converted by the
    # server): 10,000 rows; the identity values sent are replaced by the table's own.
    bulk = connect(autocommit=True)
    bcur = bulk.cursor()
    bcur.execute(
        "CREATE TABLE loaded (id int IDENTITY(1,1) PRIMARY KEY, n int NOT NULL, name nvarchar(30), "
        "amount decimal(10,2), at datetime2(0))"
    )
    rows = [("0", str(i), "row %d" % i, "%d.25" % i, "2024-01-%02d 10:00:00" % (i % 28 + 1)) for i in range(10000)]
    bcur.copy_to(data=rows, table_or_view="loaded")
    bcur.execute("SELECT count(*), min(id), max(id), sum(n), sum(amount) FROM loaded")
    count, low, high, total, amount = bcur.fetchone()
    check((count, low, high, total) == (10000, 1, 10000, 49995000), "bulk load of 10,000 rows")
    check(amount == decimal.Decimal("49997500.00"), "bulk-loaded decimals converted")
    try:
        bcur.copy_to(data=[("0", "x", "bad", "1", "2024-01-01")], table_or_view="loaded")
        raise AssertionError("a bad value was loaded")
    except pytds.Error as e:
        check(e.msg_no == 245, "a value that does not convert fails the load (%s)" % e)
    bcur.execute("SELECT count(*) FROM loaded")
    check(bcur.fetchone()[0] == 10000, "a failed load leaves nothing behind")
    bcur.execute("CREATE TABLE loaded_stamps (id int NOT NULL PRIMARY KEY, at datetimeoffset(0) NOT NULL)")
    bcur.copy_to(data=[("1", "2025-03-04 10:00:00 -08:00"), ("2", "2025-03-04 18:00:00 +00:00")], table_or_view="loaded_stamps")
    bcur.execute("SELECT count(DISTINCT at), min(CONVERT(varchar(30), at)) FROM loaded_stamps")
    check(bcur.fetchone() == (1, "2025-03-04 10:00:00 -08:00"), "bulk-loaded datetimeoffset values, one instant")
    bulk.close()

    # A table-valued parameter (TDS type 0xF3): the rows go with the call, to a stored
    # procedure by name and through sp_executesql.
    tcur = conn.cursor()
    tcur.execute("CREATE TYPE dbo.IdQty AS TABLE (id int NOT NULL PRIMARY KEY, qty int NOT NULL, note nvarchar(20) NULL)")
    tcur.execute("CREATE PROCEDURE sum_qty @items dbo.IdQty READONLY AS SELECT COUNT(*), SUM(qty), MAX(note) FROM @items")
    conn.commit()
    rows = [(1, 5, "a"), (2, 7, None), (3, 1, "z\u00e9")]
    tcur.callproc("sum_qty", (pytds.TableValuedParam(type_name="dbo.IdQty", rows=rows),))
    check(tcur.fetchone() == (3, 13, "z\u00e9"), "a table-valued parameter to a procedure")
    tcur.execute("SELECT SUM(id * qty) FROM %s", (pytds.TableValuedParam(type_name="dbo.IdQty", rows=rows),))
    check(tcur.fetchone()[0] == 22, "a table-valued parameter through sp_executesql")
    try:
        tcur.callproc("sum_qty", (pytds.TableValuedParam(type_name="dbo.IdQty", rows=[(1, 1, None), (1, 2, None)]),))
        raise AssertionError("a duplicate key in a table-valued parameter was accepted")
    except pytds.Error as e:
        check(e.msg_no == 2627, "a table-valued parameter's key holds (%s)" % e)
    conn.rollback()
    tcur.execute("SELECT 5")
    check(tcur.fetchone()[0] == 5, "the connection goes on after a bad table-valued parameter")
    conn.commit()

    # Cancel a long-running query: on its timeout pytds sends an attention and waits for
    # the server's DONE with the attention flag; the connection stays usable.
    slow = connect(timeout=2, autocommit=True)
    scur = slow.cursor()
    started = time.time()
    try:
        scur.execute("DECLARE @i bigint = 0; WHILE 1 = 1 SET @i += 1")
        raise AssertionError("the endless loop returned")
    except (pytds.TimeoutError, TimeoutError, OSError) as e:
        print("timed out and cancelled:", type(e).__name__)
    check(time.time() - started < 20, "long query cancelled")
    scur.execute("SELECT 4")
    check(scur.fetchone()[0] == 4, "connection usable after a cancel")
    slow.close()
    conn.close()
    print("pytds scenario: all checks passed")


if __name__ == "__main__":
    main()
