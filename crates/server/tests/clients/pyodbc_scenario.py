"""The client scenario through ODBC: pyodbc over unixODBC with FreeTDS's ODBC driver
(tdsodbc), against a running tessera.

Usage: python3 pyodbc_scenario.py HOST PORT PASSWORD

Covers what ODBC applications lean on: SQLDriverConnect, parameters bound with
SQLBindParameter (sent as RPC sp_executesql / sp_prepexec), row counts (SQLRowCount),
manual commit and rollback (SQL_ATTR_AUTOCOMMIT off), executemany, a procedure call with {CALL …}, multiple result sets (SQLMoreResults), the
catalog functions (SQLTables, SQLColumns, SQLPrimaryKeys, SQLForeignKeys, SQLStatistics,
SQLProcedures, SQLGetTypeInfo) and an error's native number. Exits non-zero on the first
failure.
"""

import datetime
import decimal
import sys

import pyodbc


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def main():
    host, port, password = sys.argv[1], sys.argv[2], sys.argv[3]
    base = "DRIVER={FreeTDS};SERVER=%s;PORT=%s;UID=sa;PWD=%s;TDS_Version=7.4;ClientCharset=UTF-8" % (
        host,
        port,
        password,
    )

    try:
        pyodbc.connect(base.replace("PWD=" + password, "PWD=wrong"), timeout=30)
        raise AssertionError("login with a wrong password succeeded")
    except pyodbc.Error as e:
        check("18456" in str(e), "wrong password is 18456")

    conn = pyodbc.connect(base, autocommit=True, timeout=30)
    cur = conn.cursor()
    cur.execute("CREATE DATABASE odbc_db")
    conn.close()

    conn = pyodbc.connect(base + ";DATABASE=odbc_db", autocommit=True, timeout=30)
    cur = conn.cursor()
    cur.execute("SELECT DB_NAME()")
    check(cur.fetchone()[0] == "odbc_db", "DATABASE= in the connection string")

    cur.execute(
        "CREATE TABLE items (id int IDENTITY PRIMARY KEY, name nvarchar(50) NOT NULL, "
        "price decimal(10, 2) NULL, at datetime2 NULL, data varbinary(100) NULL, flag bit NULL, big bigint NULL)"
    )
    cur.execute("INSERT items (name, price) VALUES (?, ?)", "a", decimal.Decimal("1.50"))
    check(cur.rowcount == 1, "SQLRowCount after a parameterized INSERT")
    cur.execute("INSERT items (name) VALUES ('b'), ('c')")
    check(cur.rowcount == 2, "SQLRowCount of a two-row INSERT")
    cur.execute("UPDATE items SET flag = 1 WHERE name IN (?, ?)", "a", "b")
    check(cur.rowcount == 2, "SQLRowCount of an UPDATE")

    # pyodbc binds a datetime with milliseconds (SQL_TYPE_TIMESTAMP, 3 digits), whatever
    # the server: a value with more is cut on the client.
    at = datetime.datetime(2026, 11, 29, 10, 20, 30, 123000)
    cur.execute(
        "INSERT items (name, price, at, data, flag, big) VALUES (?, ?, ?, ?, ?, ?)",
        "types \u2713",
        decimal.Decimal("98765432.10"),
        at,
        b"\x01\x02\x03",
        True,
        9_000_000_000,
    )
    cur.execute("SELECT name, price, at, data, flag, big FROM items WHERE big = ?", 9_000_000_000)
    row = cur.fetchone()
    check(row.name == "types \u2713", "nvarchar round trip")
    check(row.price == decimal.Decimal("98765432.10"), "decimal round trip")
    check(row.at == at, "datetime2 round trip (%r)" % (row.at,))
    check(bytes(row.data) == b"\x01\x02\x03", "varbinary round trip")
    check(row.flag is True and row.big == 9_000_000_000, "bit and bigint round trip")
    cur.execute("SELECT COUNT(*) FROM items WHERE ? IS NULL", None)
    check(cur.fetchone()[0] == 4, "a NULL parameter")

    # executemany runs the prepared INSERT once per row (fast_executemany's parameter
    # arrays crash inside FreeTDS's ODBC driver 1.3.17, on any server).
    cur.executemany("INSERT items (name) VALUES (?)", [("m%d" % i,) for i in range(20)])
    cur.execute("SELECT COUNT(*) FROM items WHERE name LIKE 'm%'")
    check(cur.fetchone()[0] == 20, "executemany")

    manual = pyodbc.connect(base + ";DATABASE=odbc_db", autocommit=False, timeout=30)
    mc = manual.cursor()
    mc.execute("INSERT items (name) VALUES (?)", "rolled back")
    manual.rollback()
    mc.execute("INSERT items (name) VALUES (?)", "committed")
    manual.commit()
    cur.execute("SELECT SUM(CASE name WHEN 'committed' THEN 1 ELSE 0 END), SUM(CASE name WHEN 'rolled back' THEN 1 ELSE 0 END) FROM items")
    check(tuple(cur.fetchone()) == (1, 0), "auto-commit off: commit and rollback")
    manual.close()

    cur.execute("CREATE PROCEDURE add_one @x int, @y int OUTPUT AS BEGIN SET @y = @x + 1; SELECT @x AS x; RETURN 7; END")
    cur.execute("{CALL add_one (?, 0)}", 41)
    check(cur.fetchone()[0] == 41, "{CALL …} runs the procedure")

    cur.execute("SELECT 1 AS one; SELECT 2 AS two")
    first = [tuple(r) for r in cur.fetchall()]
    more = cur.nextset()
    second = [tuple(r) for r in cur.fetchall()]
    check(more and first == [(1,)] and second == [(2,)], "two result sets (SQLMoreResults)")

    cur.execute("CREATE TABLE parents (id int PRIMARY KEY)")
    cur.execute("CREATE TABLE children (id int PRIMARY KEY, parent_id int REFERENCES parents (id))")
    tables = sorted(r.table_name for r in cur.tables(schema="dbo", tableType="TABLE"))
    check(tables == ["children", "items", "parents"], "SQLTables (%s)" % tables)
    columns = [r.column_name for r in cur.columns(table="items")]
    check(columns == ["id", "name", "price", "at", "data", "flag", "big"], "SQLColumns (%s)" % columns)
    pk = [r.column_name for r in cur.primaryKeys("children")]
    check(pk == ["id"], "SQLPrimaryKeys")
    fk = [(r.pktable_name, r.fkcolumn_name) for r in cur.foreignKeys(foreignTable="children")]
    check(fk == [("parents", "parent_id")], "SQLForeignKeys (%s)" % fk)
    stats = [r.index_name for r in cur.statistics("children") if r.index_name]
    check(len(stats) == 1, "SQLStatistics")
    procs = [r.procedure_name for r in cur.procedures(procedure="add_one")]
    check(procs == ["add_one;1"], "SQLProcedures (%s)" % procs)
    types = {r.type_name for r in cur.getTypeInfo()}
    check({"int", "nvarchar", "datetime2"} <= types, "SQLGetTypeInfo")

    try:
        cur.execute("SELECT nope FROM items")
        raise AssertionError("no error")
    except pyodbc.Error as e:
        check("207" in str(e) and "Invalid column name" in str(e), "error 207 with its text")

    conn.close()
    print("all checks passed")


if __name__ == "__main__":
    main()
