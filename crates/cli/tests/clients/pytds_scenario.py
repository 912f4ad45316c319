"""The client scenario through python-tds (pytds): connect; create database and table;
every data type round trip; parameterised queries; a stored procedure with an OUTPUT
parameter and return code; transaction commit and rollback; an error with its number."""
import datetime
import decimal
import sys
import uuid

import pytds

port, password = int(sys.argv[1]), sys.argv[2]


def connect(database="master", autocommit=True):
    return pytds.connect(server="127.0.0.1", port=port, user="sa", password=password,
                         database=database, autocommit=autocommit, timeout=30)


try:
    connect(autocommit=True).close()
    pytds.connect(server="127.0.0.1", port=port, user="sa", password="wrong", autocommit=True, timeout=30)
    raise SystemExit("a wrong password was accepted")
except pytds.Error as e:
    assert "18456" in str(e) or "Login failed" in str(e), e

with connect() as conn:
    cur = conn.cursor()
    cur.execute("create database pyclient")
with connect("pyclient") as conn:
    cur = conn.cursor()
    cur.execute("""create table every_type (
        id int primary key, b bit, ti tinyint, si smallint, bi bigint, dc decimal(10,3), mo money,
        fl float, re real, c char(3), vc varchar(20), nv nvarchar(20), vmax varchar(max),
        bn varbinary(10), d date, t time(3), dt datetime, dt2 datetime2(4), g uniqueidentifier)""")
    g = uuid.UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF")
    row = (1, True, 200, -300, 2**40, decimal.Decimal("1234.567"), decimal.Decimal("12.3400"),
           1.25, 0.5, "abc", "varchar", "nvärchar", "x" * 5000,
           datetime.date(2024, 2, 29), datetime.time(13, 45, 30, 123000),
           datetime.datetime(2024, 1, 31, 23, 59, 59, 997000), datetime.datetime(2000, 1, 1, 0, 0, 0, 500000), g)
    # pytds sends Python bytes as text, so the binary column gets a literal.
    placeholders = ["%s"] * len(row)
    placeholders.insert(13, "0x0102")
    cur.execute("insert into every_type values (%s)" % ", ".join(placeholders), row)
    cur.execute("insert into every_type (id) values (%s)", (2,))
    cur.execute("select * from every_type where id = %s", (1,))
    got = cur.fetchone()
    assert got[0] == 1 and got[1] is True and got[2] == 200 and got[3] == -300 and got[4] == 2**40, got
    assert got[5] == decimal.Decimal("1234.567") and got[6] == decimal.Decimal("12.34"), got
    assert got[7] == 1.25 and abs(got[8] - 0.5) < 1e-6 and got[9] == "abc" and got[10] == "varchar", got
    assert got[11] == "nvärchar" and got[12] == "x" * 5000 and bytes(got[13]) == b"\x01\x02", got[11:14]
    assert got[14] == datetime.date(2024, 2, 29) and got[15] == datetime.time(13, 45, 30, 123000), got
    assert got[16] == datetime.datetime(2024, 1, 31, 23, 59, 59, 997000), got
    assert got[17] == datetime.datetime(2000, 1, 1, 0, 0, 0, 500000) and got[18] == g, got
    cur.execute("select * from every_type where id = 2")
    assert all(v is None for v in cur.fetchone()[1:])

    # A stored procedure with an OUTPUT parameter and a return code.
    cur.execute("create procedure twice @x int, @y int output as begin set @y = @x * 2; return 7; end")
    result = cur.callproc("twice", (21, pytds.output(param_type=int)))
    assert result[1] == 42, result
    assert cur.get_proc_return_status() == 7

    # An error with its number; the connection stays usable.
    try:
        cur.execute("insert into every_type (id) values (1)")
        raise SystemExit("duplicate key accepted")
    except pytds.IntegrityError as e:
        assert e.msg_no == 2627, e.msg_no
    cur.execute("select 1 + 1")
    assert cur.fetchone()[0] == 2

# Transactions (pytds without autocommit uses transaction manager requests).
with connect("pyclient", autocommit=False) as conn:
    cur = conn.cursor()
    cur.execute("insert into every_type (id) values (10)")
    conn.rollback()
    cur.execute("insert into every_type (id) values (11)")
    conn.commit()
    cur.execute("select id from every_type where id >= 10 order by id")
    assert [r[0] for r in cur.fetchall()] == [11]
    conn.commit()
print("pytds scenario passed")
