//! Cross-database ownership chaining over TDS with tiberius: off by default, so a
//! procedure or view of one database reading another database's table needs the caller's
//! own permission there; on between two databases that both have DB_CHAINING ON (set by a
//! sysadmin only, kept across a restart) or for all with 'cross db ownership chaining';
//! even then the owners must map to the same login, and the caller needs access to the
//! other database.

mod common;

use common::tds::{connect_as, connect_to, count, refused, run};
use common::{TestServer, PASSWORD};

const APP: &str = "App-Pass-123";

#[test]
fn ownership_chains_cross_databases_only_where_both_allow_it() {
    let mut server = TestServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let port = server.port();
    runtime.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, &format!("CREATE LOGIN app WITH PASSWORD = '{APP}'; CREATE DATABASE sales; CREATE DATABASE hr"))
            .await;
        run(
            &mut sa,
            "USE hr; CREATE TABLE staff (n int); INSERT INTO staff VALUES (1), (2); CREATE USER app; \
             CREATE USER keeper WITHOUT LOGIN; CREATE SCHEMA priv AUTHORIZATION keeper; \
             CREATE TABLE priv.secret (n int); INSERT INTO priv.secret VALUES (9)",
        )
        .await;
        run(&mut sa, "USE sales; CREATE USER app").await;
        run(&mut sa, "USE sales; EXEC('CREATE PROCEDURE count_staff AS SELECT COUNT(*) FROM hr.dbo.staff')").await;
        run(&mut sa, "USE sales; EXEC('CREATE PROCEDURE count_secret AS SELECT COUNT(*) FROM hr.priv.secret')").await;
        run(&mut sa, "USE sales; EXEC('CREATE VIEW staff_view AS SELECT n FROM hr.dbo.staff')").await;
        run(&mut sa, "USE sales; GRANT EXECUTE ON count_staff TO app; GRANT EXECUTE ON count_secret TO app").await;
        run(&mut sa, "USE sales; GRANT SELECT ON staff_view TO app").await;

        let mut app = connect_to(port, "app", APP, "sales").await.unwrap();
        let denied = |db: &str| {
            (229u32, format!("The SELECT permission was denied on the object 'staff', database '{db}', schema 'dbo'."))
        };
        // Off by default.
        assert_eq!(refused(&mut app, "EXEC count_staff").await, denied("hr"));
        assert_eq!(refused(&mut app, "SELECT COUNT(*) FROM staff_view").await.0, 229);

        // Only a sysadmin sets it, and not on master or tempdb.
        run(&mut sa, "CREATE DATABASE own; ALTER AUTHORIZATION ON DATABASE::own TO app").await;
        assert_eq!(refused(&mut app, "ALTER DATABASE own SET DB_CHAINING ON").await.0, 15247, "its owner may not");
        assert_eq!(refused(&mut sa, "ALTER DATABASE master SET DB_CHAINING ON").await.0, 5058);

        // One side is not enough; both are.
        run(&mut sa, "ALTER DATABASE sales SET DB_CHAINING ON").await;
        assert_eq!(refused(&mut app, "EXEC count_staff").await.0, 229);
        run(&mut sa, "ALTER DATABASE hr SET DB_CHAINING ON").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.databases WHERE is_db_chaining_on = 1").await, 2);
        assert_eq!(count(&mut app, "EXEC count_staff").await, 2);
        assert_eq!(count(&mut app, "SELECT COUNT(*) FROM staff_view").await, 2);
        // Owners mapped to different logins break the chain.
        assert_eq!(refused(&mut app, "EXEC count_secret").await.0, 229);
        // The caller still needs access to the other database.
        run(&mut sa, "USE hr; DROP USER app").await;
        assert_eq!(refused(&mut app, "EXEC count_staff").await.0, 916);
        run(&mut sa, "USE hr; CREATE USER app").await;
    });

    // DB_CHAINING is kept in the registry.
    server.restart();
    let port = server.port();
    runtime.block_on(async {
        let mut app = connect_to(port, "app", APP, "sales").await.unwrap();
        assert_eq!(count(&mut app, "EXEC count_staff").await, 2);
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "ALTER DATABASE hr SET DB_CHAINING OFF").await;
        assert_eq!(refused(&mut app, "EXEC count_staff").await.0, 229);

        // The server option lets chains cross between every two databases.
        run(&mut sa, "EXEC sp_configure 'cross db ownership chaining', 1; RECONFIGURE").await;
        assert_eq!(count(&mut app, "EXEC count_staff").await, 2);
        run(&mut sa, "EXEC sp_configure 'cross db ownership chaining', 0; RECONFIGURE").await;
        assert_eq!(refused(&mut app, "EXEC count_staff").await.0, 229);
    });
}
