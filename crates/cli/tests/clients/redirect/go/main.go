// go-mssqldb through a redirecting gateway: connects (args: port, password, database,
// stop file), prints db_name(), waits for the stop file (the test kills the gateway
// meanwhile), then prints the value in dbo.a on the same connection.
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
	u := &url.URL{Scheme: "sqlserver", User: url.UserPassword("sa", password), Host: "127.0.0.1:" + port,
		RawQuery: url.Values{"database": {database}, "encrypt": {"disable"}}.Encode()}
	db, err := sql.Open("sqlserver", u.String())
	check(err)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	check(err)
	var name string
	check(conn.QueryRowContext(ctx, "select db_name()").Scan(&name))
	fmt.Println(name)
	for {
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
