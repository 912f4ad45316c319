// go-mssqldb through a gateway: connects (args: port, password, database, stop file or
// "-", and for TDS 8.0 strict the TLS server name, the certificate in TESSERA_TLS_CERT), prints db_name() and whether the
// server sees the connection encrypted, waits for the stop file (the test kills the
// gateway meanwhile), then prints the value in dbo.a on the same connection.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"time"

	_ "github.com/microsoft/go-mssqldb"
)

func main() {
	port, password, database, stop := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	query := url.Values{"database": {database}, "encrypt": {"disable"}}
	if len(os.Args) > 5 {
		// The servers' certificate, checked for the name: TESSERA_TLS_CERT.
		query = url.Values{"database": {database}, "encrypt": {"strict"}, "hostnameincertificate": {os.Args[5]},
			"certificate": {os.Getenv("TESSERA_TLS_CERT")}}
	}
	u := &url.URL{Scheme: "sqlserver", User: url.UserPassword("sa", password), Host: "127.0.0.1:" + port,
		RawQuery: query.Encode()}
	db, err := sql.Open("sqlserver", u.String())
	check(err)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	check(err)
	var name string
	check(conn.QueryRowContext(ctx, "select db_name()").Scan(&name))
	fmt.Println(name)
	var encrypted string
	check(conn.QueryRowContext(ctx, "select encrypt_option from sys.dm_exec_connections where session_id = @@spid").Scan(&encrypted))
	fmt.Println(encrypted)
	for stop != "-" {
		if _, err := os.Stat(stop); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var v int
	check(conn.QueryRowContext(ctx, "select v from dbo.a").Scan(&v))
	fmt.Println(v)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
