"""BACKUP and RESTORE through python-tds, against a running tessera server.

Usage: python3 pytds_backup.py HOST PORT PASSWORD DIRECTORY

A full backup striped over two files with compression and STATS (the client sees the
progress and "successfully processed" messages), HEADERONLY and FILELISTONLY result
sets, a restore under another name with MOVE, identical data, a FULL-model log chain
restored to a point in time between two transactions, msdb history, errors with their
numbers (4214, 3013), trace flags 3213 + 3605 for ERRORLOG, and a BULK_LOGGED bulk load
whose log backup carries its pages. Exits non-zero on the first failure.
"""

import sys
import time

import pytds


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def texts(cur):
    return [str(ex.text if hasattr(ex, "text") else ex) for _, ex in (cur.messages or [])]


def main():
    host, port, password, d = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    conn = pytds.connect(server=host, port=port, user="sa", password=password, timeout=120, login_timeout=30, autocommit=True)
    cur = conn.cursor()
    cur.execute("DBCC TRACEON(3213, 3605, -1)")
    cur.execute("CREATE DATABASE shop")
    cur.execute("ALTER DATABASE shop SET RECOVERY FULL")
    cur.execute("CREATE TABLE shop.dbo.items (id int PRIMARY KEY, name nvarchar(200), price decimal(10,2))")
    cur.execute(
        "SET NOCOUNT ON; DECLARE @i int = 0; WHILE @i < 5000 BEGIN "
        "INSERT shop.dbo.items VALUES (@i, REPLICATE(N'x', @i % 150), @i * 0.25); SET @i += 1 END"
    )

    cur.execute(
        f"BACKUP DATABASE shop TO DISK = '{d}/s1.bak', DISK = '{d}/s2.bak' "
        "WITH FORMAT, COMPRESSION, CHECKSUM, STATS = 20, NAME = 'pytds full'"
    )
    msgs = texts(cur)
    print(msgs)
    check(any(m.endswith("percent processed.") for m in msgs), "progress messages reach the client")
    check(any(m.startswith("Processed ") and "file 'shop' on file 1." in m for m in msgs), "per-file message")
    check(any(m.startswith("BACKUP DATABASE successfully processed ") and m.endswith("MB/sec).") for m in msgs), "final message")

    cur.execute(f"RESTORE HEADERONLY FROM DISK = '{d}/s1.bak'")
    cols = [c[0] for c in cur.description]
    row = dict(zip(cols, cur.fetchone()))
    check(row["BackupName"] == "pytds full" and row["BackupType"] == 1 and row["Compressed"] == 1, "HEADERONLY")
    cur.execute(f"RESTORE FILELISTONLY FROM DISK = '{d}/s2.bak'")
    check([r[0] for r in cur.fetchall()] == ["shop", "shop_log"], "FILELISTONLY")

    cur.execute(
        f"RESTORE DATABASE shop_copy FROM DISK = '{d}/s1.bak', DISK = '{d}/s2.bak' "
        f"WITH MOVE 'shop' TO '{d}/copy.mdf', MOVE 'shop_log' TO '{d}/copy.ldf', STATS = 50"
    )
    check(any(m.startswith("RESTORE DATABASE successfully processed ") for m in texts(cur)), "restore message")
    cur.execute("SELECT id, name, price FROM shop.dbo.items ORDER BY id")
    a = cur.fetchall()
    cur.execute("SELECT id, name, price FROM shop_copy.dbo.items ORDER BY id")
    b = cur.fetchall()
    check(b == a and len(a) == 5000, "restored copy holds identical data")

    try:
        cur.execute("CREATE DATABASE nolog")
        cur.execute(f"BACKUP LOG nolog TO DISK = '{d}/nolog.bak'")
        raise AssertionError("BACKUP LOG without a full backup succeeded")
    except pytds.Error as e:
        check(getattr(e, "msg_no", None) in (4214, 3013), f"BACKUP LOG without a full backup fails ({e})")

    cur.execute(f"BACKUP LOG shop TO DISK = '{d}/log.bak' WITH INIT")
    cur.execute("UPDATE shop.dbo.items SET price = 1 WHERE id = 1")
    cur.execute("SELECT CONVERT(varchar(30), SYSDATETIME(), 121)")
    between = cur.fetchone()[0]
    time.sleep(0.05)
    cur.execute("UPDATE shop.dbo.items SET price = 2 WHERE id = 1")
    cur.execute(f"BACKUP LOG shop TO DISK = '{d}/log.bak'")
    check(any(m.startswith("BACKUP LOG successfully processed ") for m in texts(cur)), "log backup message")

    cur.execute(
        f"RESTORE DATABASE pit FROM DISK = '{d}/s1.bak', DISK = '{d}/s2.bak' "
        f"WITH NORECOVERY, MOVE 'shop' TO '{d}/pit.mdf', MOVE 'shop_log' TO '{d}/pit.ldf'"
    )
    cur.execute(f"RESTORE LOG pit FROM DISK = '{d}/log.bak' WITH FILE = 1, NORECOVERY")
    cur.execute(f"RESTORE LOG pit FROM DISK = '{d}/log.bak' WITH FILE = 2, STOPAT = '{between}'")
    cur.execute("SELECT price FROM pit.dbo.items WHERE id = 1")
    check(float(cur.fetchone()[0]) == 1.0, "point-in-time restore stops between two transactions")

    cur.execute("SELECT type, database_name FROM msdb.dbo.backupset ORDER BY backup_set_id")
    check([tuple(r) for r in cur.fetchall()] == [("D", "shop"), ("L", "shop"), ("L", "shop")], "msdb.dbo.backupset history")

    # BULK_LOGGED: a bulk load (INSERT BULK) into an empty table is minimally logged; the
    # next log backup copies its data pages, says so in HEADERONLY, and restores.
    cur.execute("ALTER DATABASE shop SET RECOVERY BULK_LOGGED")
    cur.execute("CREATE TABLE shop.dbo.loaded (id int PRIMARY KEY, name nvarchar(200))")
    cur.execute(f"BACKUP LOG shop TO DISK = '{d}/bulk.bak' WITH INIT")
    bulk = pytds.connect(server=host, port=port, user="sa", password=password, database="shop", autocommit=True)
    bulk.cursor().copy_to(data=[(str(i), "loaded row %d %s" % (i, "z" * 80)) for i in range(8000)], table_or_view="loaded")
    bulk.close()
    cur.execute(f"BACKUP LOG shop TO DISK = '{d}/bulk.bak'")
    msgs = texts(cur)
    data = [m for m in msgs if m.startswith("Processed ") and "file 'shop' on file 2." in m]
    check(len(data) == 1 and int(data[0].split()[1]) >= 100, f"the log backup copies the loaded pages ({msgs})")
    cur.execute(f"RESTORE HEADERONLY FROM DISK = '{d}/bulk.bak'")
    cols = [c[0] for c in cur.description]
    flags = [dict(zip(cols, r))["HasBulkLoggedData"] for r in cur.fetchall()]
    check(flags == [False, True], f"HasBulkLoggedData {flags}")
    cur.execute(
        f"RESTORE DATABASE bulkcopy FROM DISK = '{d}/s1.bak', DISK = '{d}/s2.bak' "
        f"WITH NORECOVERY, MOVE 'shop' TO '{d}/bulk.mdf', MOVE 'shop_log' TO '{d}/bulk.ldf'"
    )
    cur.execute(f"RESTORE LOG bulkcopy FROM DISK = '{d}/log.bak' WITH FILE = 1, NORECOVERY")
    cur.execute(f"RESTORE LOG bulkcopy FROM DISK = '{d}/log.bak' WITH FILE = 2, NORECOVERY")
    cur.execute(f"RESTORE LOG bulkcopy FROM DISK = '{d}/bulk.bak' WITH FILE = 1, NORECOVERY")
    try:
        cur.execute(f"RESTORE LOG bulkcopy FROM DISK = '{d}/bulk.bak' WITH FILE = 2, STOPAT = '{between}'")
        raise AssertionError("STOPAT inside a bulk-logged log backup succeeded")
    except pytds.Error as e:
        check(getattr(e, "msg_no", None) in (4341, 3013), f"no point in time inside bulk-logged changes ({e})")
    cur.execute(f"RESTORE LOG bulkcopy FROM DISK = '{d}/bulk.bak' WITH FILE = 2, RECOVERY")
    cur.execute("SELECT count(*), sum(id) FROM bulkcopy.dbo.loaded")
    check(tuple(cur.fetchone()) == (8000, 31996000), "the bulk-loaded rows are restored")
    print("all checks passed")


if __name__ == "__main__":
    main()
