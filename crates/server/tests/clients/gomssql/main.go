// The client scenario through go-mssqldb (database/sql), against a running tessera server.
//
// Usage: go run . HOST PORT PASSWORD
//
// Covers: a wrong password (18456), TLS and plaintext logins, TDS 8.0 strict encryption
// (encrypt=strict: TLS first, the certificate checked against the file TESSERA_TLS_CERT
// names) with a query and an error, create database and table, every data type through
// parameters (sp_executesql) and back, NULLs, a stored procedure with an OUTPUT parameter
// and a return status, commit and rollback (TM requests), an error with its number,
// cancelling a long-running query (context cancel: attention) and a bulk load of 10,000
// rows (mssql.CopyIn: INSERT BULK + BULK_LOAD). Exits non-zero on the first failure.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"
)

var host, port, password string

func check(cond bool, what string, args ...any) {
	if !cond {
		fmt.Printf("FAILED: "+what+"\n", args...)
		os.Exit(1)
	}
	fmt.Printf("ok: "+what+"\n", args...)
}

func must(err error, what string) {
	if err != nil {
		fmt.Printf("FAILED: %s: %v\n", what, err)
		os.Exit(1)
	}
}

func open(pw, database, encrypt string) *sql.DB {
	q := url.Values{}
	q.Set("encrypt", encrypt)
	if encrypt == "strict" {
		// Strict mode refuses TrustServerCertificate: the server's certificate is
		// checked against the file the test names.
		q.Set("certificate", os.Getenv("TESSERA_TLS_CERT"))
	} else {
		q.Set("TrustServerCertificate", "true")
	}
	if database != "" {
		q.Set("database", database)
	}
	u := &url.URL{Scheme: "sqlserver", User: url.UserPassword("sa", pw), Host: host + ":" + port, RawQuery: q.Encode()}
	db, err := sql.Open("sqlserver", u.String())
	must(err, "open")
	db.SetMaxOpenConns(1)
	return db
}

func serverNumber(err error) int32 {
	var e mssql.Error
	if errors.As(err, &e) {
		return e.Number
	}
	return 0
}

func main() {
	host, port, password = os.Args[1], os.Args[2], os.Args[3]
	ctx := context.Background()

	bad := open("wrong", "", "disable")
	err := bad.PingContext(ctx)
	check(err != nil && strings.Contains(err.Error(), "Login failed"), "wrong password refused: %v", err)
	bad.Close()

	tls := open(password, "", "true")
	var enc string
	must(tls.QueryRowContext(ctx, "SELECT encrypt_option FROM sys.dm_exec_connections WHERE session_id = @@SPID").Scan(&enc), "query over TLS")
	check(enc == "TRUE", "encrypt=true: the whole connection in TLS")
	tls.Close()

	strict := open(password, "", "strict")
	must(strict.QueryRowContext(ctx, "SELECT encrypt_option FROM sys.dm_exec_connections WHERE session_id = @@SPID").Scan(&enc), "query over TDS 8.0 strict")
	check(enc == "TRUE", "encrypt=strict: TLS before PRELOGIN, the whole connection in TLS")
	_, err = strict.ExecContext(ctx, "SELECT * FROM no_such_table")
	check(serverNumber(err) == 208, "encrypt=strict: error 208 with its number: %v", err)
	var answer int
	must(strict.QueryRowContext(ctx, "SELECT @p1 * 2", 21).Scan(&answer), "parameterised query over strict")
	check(answer == 42, "encrypt=strict: a parameterised query after an error")
	strict.Close()

	master := open(password, "", "disable")
	_, err = master.ExecContext(ctx, "IF DB_ID('gomssql_db') IS NOT NULL DROP DATABASE gomssql_db; CREATE DATABASE gomssql_db")
	must(err, "create database")
	master.Close()
	db := open(password, "gomssql_db", "disable")
	defer db.Close()
	var name string
	must(db.QueryRowContext(ctx, "SELECT DB_NAME()").Scan(&name), "db_name")
	check(name == "gomssql_db", "create database and log into it")

	_, err = db.ExecContext(ctx, `CREATE TABLE all_types (
		id int NOT NULL PRIMARY KEY, b bit, ti tinyint, si smallint, i int, bi bigint, f float,
		d decimal(18,4), vc varchar(50), nvc nvarchar(50), nvcm nvarchar(max), vb varbinary(20),
		dt date, dt2 datetime2(3), g uniqueidentifier)`)
	must(err, "create table")
	when := time.Date(2024, 2, 29, 13, 45, 7, 123000000, time.UTC)
	guid := mssql.UniqueIdentifier{0x6F, 0x96, 0x19, 0xFF, 0x8B, 0x86, 0xD0, 0x11, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF}
	_, err = db.ExecContext(ctx, "INSERT INTO all_types VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11, @p12, @p13, @p14, @p15)",
		1, true, 200, -300, -70000, int64(1)<<40, -2.25e100, "12345678901234.5678", mssql.VarChar("plain"),
		"\u65e5\u672c\u8a9e", strings.Repeat("x", 3000), []byte{0, 1, 0xfe, 0xff},
		civil.DateOf(when), civil.DateTimeOf(when), guid)
	must(err, "insert every type")
	_, err = db.ExecContext(ctx, "INSERT INTO all_types (id) VALUES (@p1)", 2)
	must(err, "insert nulls")

	var (
		id, i            int
		b                bool
		ti, si           int
		bi               int64
		f                float64
		d, vc, nvc, nvcm string
		vb               []byte
		dt, dt2          time.Time
		g                mssql.UniqueIdentifier
	)
	row := db.QueryRowContext(ctx, "SELECT * FROM all_types WHERE id = @p1", 1)
	must(row.Scan(&id, &b, &ti, &si, &i, &bi, &f, &d, &vc, &nvc, &nvcm, &vb, &dt, &dt2, &g), "select every type")
	check(id == 1 && b && ti == 200 && si == -300 && i == -70000 && bi == int64(1)<<40, "integers and bit round trip")
	check(f == -2.25e100 && d == "12345678901234.5678", "float and decimal round trip (%v, %v)", f, d)
	check(vc == "plain" && nvc == "\u65e5\u672c\u8a9e" && nvcm == strings.Repeat("x", 3000), "strings round trip")
	check(string(vb) == string([]byte{0, 1, 0xfe, 0xff}), "varbinary round trip")
	check(dt.Format("2006-01-02") == "2024-02-29" && dt2.Equal(when), "date and datetime2 round trip (%v, %v)", dt, dt2)
	check(g == guid, "uniqueidentifier round trip")
	var nb sql.NullBool
	var ns sql.NullString
	must(db.QueryRowContext(ctx, "SELECT b, nvc FROM all_types WHERE id = 2").Scan(&nb, &ns), "select nulls")
	check(!nb.Valid && !ns.Valid, "NULLs round trip")

	// A stored procedure: OUTPUT parameter and return status.
	_, err = db.ExecContext(ctx, "CREATE PROCEDURE double_it @a int, @b int OUTPUT AS BEGIN SET NOCOUNT ON; SET @b = @a * 2; RETURN 7 END")
	must(err, "create procedure")
	var out int64
	var rs mssql.ReturnStatus
	_, err = db.ExecContext(ctx, "double_it", sql.Named("a", 21), sql.Named("b", sql.Out{Dest: &out}), &rs)
	must(err, "call procedure")
	check(out == 42, "OUTPUT parameter (%d)", out)
	check(rs == 7, "return status (%d)", rs)

	// Transactions.
	_, err = db.ExecContext(ctx, "CREATE TABLE acct (id int PRIMARY KEY, bal int)")
	must(err, "create acct")
	tx, err := db.BeginTx(ctx, nil)
	must(err, "begin")
	_, err = tx.ExecContext(ctx, "INSERT INTO acct VALUES (1, 10)")
	must(err, "insert in tx")
	must(tx.Rollback(), "rollback")
	var n int
	must(db.QueryRowContext(ctx, "SELECT COUNT(*) FROM acct").Scan(&n), "count")
	check(n == 0, "rollback")
	tx, err = db.BeginTx(ctx, nil)
	must(err, "begin")
	_, err = tx.ExecContext(ctx, "INSERT INTO acct VALUES (2, 20)")
	must(err, "insert in tx")
	must(tx.Commit(), "commit")
	must(db.QueryRowContext(ctx, "SELECT SUM(bal) FROM acct").Scan(&n), "sum")
	check(n == 20, "commit")

	// An error with its number.
	_, err = db.ExecContext(ctx, "SELECT * FROM no_such_table")
	check(serverNumber(err) == 208, "error 208 (%v)", err)

	// Cancel a long-running query through its context (an attention) — after the error
	// above, so on a connection database/sql has reset (RESETCONNECTION).
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	started := time.Now()
	_, err = db.ExecContext(cctx, "WAITFOR DELAY '00:00:30'")
	cancel()
	check(err != nil && time.Since(started) < 20*time.Second, "long query cancelled after %v (%v)", time.Since(started), err)
	must(db.QueryRowContext(ctx, "SELECT 4").Scan(&n), "after cancel")
	check(n == 4, "connection usable after a cancel")

	// time.Time travels as datetimeoffset: the instant and its zone's offset survive, in a
	// column, an OUTPUT parameter and a bulk load.
	_, err = db.ExecContext(ctx, "CREATE TABLE stamps (id int NOT NULL PRIMARY KEY, at datetimeoffset NOT NULL, at3 datetimeoffset(3))")
	must(err, "create stamps")
	india := time.FixedZone("IST", 5*3600+30*60)
	stamp := time.Date(2025, 3, 4, 10, 11, 12, 123456700, india)
	_, err = db.ExecContext(ctx, "INSERT INTO stamps VALUES (@p1, @p2, @p3)", 1, stamp, nil)
	must(err, "insert time.Time")
	var (
		got, shifted time.Time
		got3         sql.NullTime
		text         string
		tz           int
	)
	must(db.QueryRowContext(ctx, "SELECT at, at3, CONVERT(varchar(40), at), DATEPART(tz, at) FROM stamps WHERE id = @p1", 1).
		Scan(&got, &got3, &text, &tz), "select datetimeoffset")
	_, offset := got.Zone()
	check(got.Equal(stamp) && offset == 5*3600+30*60, "datetimeoffset round trip (%v)", got)
	check(!got3.Valid, "NULL datetimeoffset")
	check(text == "2025-03-04 10:11:12.1234567 +05:30" && tz == 330, "stored with its offset (%s, %d)", text, tz)
	must(db.QueryRowContext(ctx, "SELECT COUNT(*) FROM stamps WHERE at = @p1", stamp.UTC()).Scan(&n), "seek by instant")
	check(n == 1, "datetimeoffset values are equal by instant (%d)", n)
	_, err = db.ExecContext(ctx, "CREATE PROCEDURE shift_it @a datetimeoffset, @b datetimeoffset OUTPUT AS SET @b = SWITCHOFFSET(@a, '-08:00')")
	must(err, "create shift_it")
	_, err = db.ExecContext(ctx, "shift_it", sql.Named("a", stamp), sql.Named("b", sql.Out{Dest: &shifted}))
	must(err, "call shift_it")
	_, offset = shifted.Zone()
	check(shifted.Equal(stamp) && offset == -8*3600, "datetimeoffset OUTPUT parameter (%v)", shifted)
	sconn, err := db.Conn(ctx)
	must(err, "stamps conn")
	stx, err := sconn.BeginTx(ctx, nil)
	must(err, "stamps bulk begin")
	sstmt, err := stx.PrepareContext(ctx, mssql.CopyIn("stamps", mssql.BulkOptions{}, "id", "at", "at3"))
	must(err, "stamps copy in")
	pacific := time.FixedZone("PST", -8*3600)
	for k := 2; k <= 4; k++ {
		at := time.Date(2025, 3, 4, k, 30, 0, 0, pacific)
		_, err = sstmt.ExecContext(ctx, k, at, at)
		must(err, "stamps copy row")
	}
	_, err = sstmt.ExecContext(ctx)
	must(err, "stamps copy flush")
	must(sstmt.Close(), "stamps copy close")
	must(stx.Commit(), "stamps bulk commit")
	sconn.Close()
	must(db.QueryRowContext(ctx, "SELECT CONVERT(varchar(40), at3) FROM stamps WHERE id = 3").Scan(&text), "bulk-loaded stamp")
	check(text == "2025-03-04 03:30:00.000 -08:00", "bulk-loaded datetimeoffset keeps its offset (%s)", text)

	// Bulk load 10,000 rows.
	_, err = db.ExecContext(ctx, "CREATE TABLE loaded (id int NOT NULL PRIMARY KEY, name nvarchar(30), amount decimal(10,2))")
	must(err, "create loaded")
	conn, err := db.Conn(ctx)
	must(err, "conn")
	btx, err := conn.BeginTx(ctx, nil)
	must(err, "bulk begin")
	stmt, err := btx.PrepareContext(ctx, mssql.CopyIn("loaded", mssql.BulkOptions{}, "id", "name", "amount"))
	must(err, "copy in")
	for k := 1; k <= 10000; k++ {
		_, err = stmt.ExecContext(ctx, k, fmt.Sprintf("row %d", k), fmt.Sprintf("%d.25", k))
		must(err, "copy row")
	}
	res, err := stmt.ExecContext(ctx)
	must(err, "copy flush")
	rows, _ := res.RowsAffected()
	must(stmt.Close(), "copy close")
	must(btx.Commit(), "bulk commit")
	conn.Close()
	check(rows == 10000, "bulk load reports 10,000 rows (%d)", rows)
	var total string
	must(db.QueryRowContext(ctx, "SELECT COUNT(*), SUM(amount) FROM loaded").Scan(&n, &total), "count loaded")
	check(n == 10000 && total == "50007500.00", "bulk-loaded rows are all there (%d, %s)", n, total)

	fmt.Println("go-mssqldb scenario: all checks passed")
}
