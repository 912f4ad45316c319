//! Database users and permissions over TDS with tiberius: a tenant's database belongs to
//! the login that created it; another login can neither use it, read it, change it, drop
//! it, alter it, back it up nor detach it, until the owner makes it a user and grants it
//! what it needs; DENY wins; ownership chaining lets a granted procedure read its table;
//! a failed statement changes nothing.

mod common;

use common::tds::{connect_as, connect_to, count, eventually, refused, run, text, with_server, Conn};
use common::{TestServer, PASSWORD};

const ALICE: &str = "Alice-Pass-1";
const BOB: &str = "Bob-Pass-12";

#[test]
fn a_tenant_s_database_is_its_own_until_it_grants() {
    let server = TestServer::start();
    let port = server.port();
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, &format!("CREATE LOGIN alice WITH PASSWORD = '{ALICE}'; CREATE LOGIN bob WITH PASSWORD = '{BOB}'")).await;
        // Each may create databases; dbcreator would let them drop each other's too.
        run(&mut sa, "GRANT CREATE ANY DATABASE TO alice; GRANT CREATE ANY DATABASE TO bob").await;

        let mut alice = connect_as(port, "alice", ALICE).await;
        run(&mut alice, "CREATE DATABASE tenant_a").await;
        run(&mut alice, "USE tenant_a; CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 10), (2, 20)").await;
        run(&mut alice, "CREATE PROCEDURE p AS SELECT COUNT(*) FROM t").await;
        assert_eq!(count(&mut alice, "SELECT principal_id FROM sys.database_principals WHERE name = 'dbo'").await, 1);

        // bob has no user in tenant_a: nothing of it is his.
        let mut bob = connect_as(port, "bob", BOB).await;
        let (n, m) = refused(&mut bob, "USE tenant_a").await;
        assert_eq!(n, 916, "{m}");
        assert_eq!(m, "The server principal \"bob\" is not able to access the database \"tenant_a\" under the current security context.");
        assert_eq!(refused(&mut bob, "SELECT * FROM tenant_a.dbo.t").await.0, 916);
        assert_eq!(refused(&mut bob, "SELECT * FROM tenant_a.dbo.no_such_table").await.0, 916, "no name is revealed");
        assert_eq!(refused(&mut bob, "EXEC tenant_a.dbo.p").await.0, 916);
        assert_eq!(refused(&mut bob, "EXEC tenant_a.dbo.no_such_procedure").await.0, 916);
        assert_eq!(refused(&mut bob, "SELECT name FROM tenant_a.sys.tables").await.0, 916, "metadata too");
        assert_eq!(refused(&mut bob, "EXEC ('SELECT * FROM tenant_a.dbo.t')").await.0, 916);
        assert_eq!(refused(&mut bob, "EXEC sp_executesql N'SELECT * FROM tenant_a.dbo.t'").await.0, 916);
        assert_eq!(refused(&mut bob, "EXEC ('USE tenant_a')").await.0, 916);
        assert_eq!(refused(&mut bob, "DROP DATABASE tenant_a").await.0, 3701);
        assert_eq!(refused(&mut bob, "ALTER DATABASE tenant_a SET RECOVERY SIMPLE").await.0, 5011);
        let dir = server.dir.path().display().to_string();
        assert_eq!(refused(&mut bob, &format!("BACKUP DATABASE tenant_a TO DISK = '{dir}/a.bak'")).await.0, 262);
        assert_eq!(refused(&mut bob, "EXEC sp_detach_db 'tenant_a'").await.0, 15247);
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.databases WHERE name = 'tenant_a'").await, 1, "still there");

        // A user without permissions: connects, may do nothing.
        run(&mut alice, "CREATE USER bob FOR LOGIN bob; CREATE USER carl WITHOUT LOGIN").await;
        run(&mut bob, "USE tenant_a").await;
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM sys.database_principals WHERE name IN ('bob', 'carl')").await, 1);
        assert_eq!(count(&mut alice, "SELECT COUNT(*) FROM sys.database_principals WHERE name IN ('bob', 'carl')").await, 2);
        let (n, m) = refused(&mut bob, "SELECT * FROM t").await;
        assert_eq!((n, m.as_str()), (229, "The SELECT permission was denied on the object 't', database 'tenant_a', schema 'dbo'."));
        assert_eq!(refused(&mut bob, "INSERT INTO t VALUES (3, 30)").await.0, 229);
        assert_eq!(refused(&mut bob, "UPDATE t SET v = 0").await.0, 229);
        assert_eq!(refused(&mut bob, "DELETE FROM t WHERE id = 1").await.0, 229);
        assert_eq!(refused(&mut bob, "EXEC p").await, (229, "The EXECUTE permission was denied on the object 'p', database 'tenant_a', schema 'dbo'.".into()));
        assert_eq!(refused(&mut bob, "CREATE TABLE x (a int)").await.0, 262);
        // Temp tables and table variables are every session's own.
        let scratch = "CREATE TABLE #scratch (a int); INSERT INTO #scratch VALUES (1); SELECT COUNT(*) FROM #scratch";
        assert_eq!(count(&mut bob, scratch).await, 1);
        assert_eq!(count(&mut bob, "DECLARE @v TABLE (a int); INSERT INTO @v VALUES (1), (2); SELECT COUNT(*) FROM @v").await, 2);
        run(&mut bob, "DROP TABLE #scratch").await;
        assert_eq!(refused(&mut bob, "DROP TABLE t").await.0, 3701);
        assert_eq!(refused(&mut bob, "TRUNCATE TABLE t").await.0, 1088);
        assert_eq!(refused(&mut bob, "SELECT * INTO #copy FROM t").await.0, 229, "SELECT INTO reads too");
        assert_eq!(refused(&mut bob, "INSERT INTO t EXEC ('SELECT 5, 50')").await.0, 229, "INSERT … EXEC inserts too");
        assert_eq!(count(&mut alice, "SELECT COUNT(*) FROM t WHERE v > 0").await, 2, "nothing changed");
        // Metadata: what bob has no permission on, he does not see.
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM sys.objects WHERE is_ms_shipped = 0").await, 0);
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES").await, 0);
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM sys.columns").await, 0);
        let tables = bob.simple_query("EXEC sp_tables").await.unwrap().into_first_result().await.unwrap();
        assert!(tables.iter().all(|r| r.get::<&str, _>(2) != Some("t")), "sp_tables hides t");
        assert_eq!(refused(&mut bob, "EXEC sp_help 't'").await.0, 15009, "sp_help finds nothing it may not see");
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM sys.tables WHERE OBJECT_ID('t') IS NULL").await, 0);
        assert_eq!(count(&mut alice, "SELECT COUNT(*) FROM sys.tables WHERE object_id = OBJECT_ID('t')").await, 1);

        // EXECUTE on the procedure: it reads its table through the ownership chain.
        run(&mut alice, "GRANT EXECUTE ON p TO bob").await;
        assert_eq!(count(&mut bob, "EXEC p").await, 2);
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM sys.procedures WHERE name = 'p'").await, 1);
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM sys.tables").await, 0);
        assert_eq!(refused(&mut bob, "SELECT * FROM t").await.0, 229);

        // A fixed role, then a DENY that wins over it.
        run(&mut alice, "ALTER ROLE db_datareader ADD MEMBER bob").await;
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM t").await, 2);
        // A bulk load is an INSERT: refused without INSERT, and nothing is loaded.
        let mut load = bob.bulk_insert("t").await.expect("bob may read t's columns");
        let mut row = tiberius::TokenRow::new();
        row.push(tiberius::ColumnData::I32(Some(9)));
        row.push(tiberius::ColumnData::I32(Some(90)));
        load.send(row).await.expect("a row is sent");
        match load.finalize().await {
            Err(tiberius::error::Error::Server(e)) => assert_eq!(e.code(), 229),
            other => panic!("the load must be refused: {other:?}"),
        }
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM sys.tables WHERE name = 't'").await, 1);
        run(&mut alice, "DENY SELECT ON OBJECT::dbo.t TO bob").await;
        assert_eq!(refused(&mut bob, "SELECT COUNT(*) FROM t").await.0, 229);
        run(&mut alice, "REVOKE SELECT ON t FROM bob").await;
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM t").await, 2);
        assert_eq!(
            count(
                &mut alice,
                "SELECT COUNT(*) FROM sys.database_permissions p JOIN sys.database_principals u \
                 ON u.principal_id = p.grantee_principal_id WHERE u.name = 'bob' AND p.permission_name IN ('CONNECT', 'EXECUTE')"
            )
            .await,
            2
        );
        assert_eq!(
            count(
                &mut alice,
                "SELECT COUNT(*) FROM sys.database_role_members r JOIN sys.database_principals u \
                 ON u.principal_id = r.member_principal_id WHERE u.name = 'bob'"
            )
            .await,
            1
        );

        // A schema bob owns: with CREATE TABLE he may make and fill tables in it.
        run(&mut alice, "CREATE SCHEMA sales AUTHORIZATION bob").await;
        assert_eq!(refused(&mut bob, "CREATE TABLE sales.orders (id int)").await.0, 262);
        run(&mut alice, "GRANT CREATE TABLE TO bob").await;
        run(&mut bob, "CREATE TABLE sales.orders (id int)").await;
        run(&mut bob, "INSERT INTO sales.orders VALUES (1)").await;
        assert_eq!(count(&mut bob, "SELECT COUNT(*) FROM sales.orders").await, 1);
        assert_eq!(refused(&mut bob, "CREATE TABLE dbo.mine (id int)").await.0, 2760);
        let fk = "CREATE TABLE sales.lines (id int, t_id int REFERENCES dbo.t (id))";
        assert_eq!(
            refused(&mut bob, fk).await,
            (229, "The REFERENCES permission was denied on the object 't', database 'tenant_a', schema 'dbo'.".into())
        );
        run(&mut alice, "GRANT REFERENCES ON t TO bob").await;
        run(&mut bob, fk).await;
        assert_eq!(refused(&mut alice, "DROP SCHEMA sales").await.0, 3729);
        run(&mut bob, "DROP TABLE sales.lines").await;
        assert_eq!(refused(&mut alice, "DROP USER bob").await.0, 15138);

        // bob's own database is his; alice has no way in.
        run(&mut bob, "CREATE DATABASE tenant_b").await;
        run(&mut bob, "USE tenant_b; CREATE TABLE secret (v int); INSERT INTO secret VALUES (42)").await;
        assert_eq!(refused(&mut alice, "SELECT * FROM tenant_b.dbo.secret").await.0, 916);
        assert_eq!(refused(&mut alice, "DROP DATABASE tenant_b").await.0, 3701);
        run(&mut bob, "USE master; DROP DATABASE tenant_b").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.databases WHERE name = 'tenant_b'").await, 0);
    });
}

#[test]
fn principals_and_permissions_survive_a_restart() {
    let mut server = TestServer::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(server.port(), "sa", PASSWORD).await;
        run(&mut sa, &format!("CREATE LOGIN bob WITH PASSWORD = '{BOB}'; CREATE DATABASE shop")).await;
        run(
            &mut sa,
            "USE shop; CREATE TABLE t (a int); CREATE USER bob; CREATE ROLE readers; ALTER ROLE readers ADD MEMBER bob",
        )
        .await;
        run(&mut sa, "USE shop; GRANT SELECT ON SCHEMA::dbo TO readers").await;
    });
    server.restart();
    rt.block_on(async {
        let mut bob = connect_as(server.port(), "bob", BOB).await;
        run(&mut bob, "USE shop; SELECT * FROM t").await;
        assert_eq!(refused(&mut bob, "INSERT INTO shop.dbo.t VALUES (1)").await.0, 229);
    });
}

#[test]
fn execute_as_and_the_functions_that_say_who_one_is() {
    with_server(|port, mut sa| async move {
        run(
            &mut sa,
            &format!("CREATE LOGIN carol WITH PASSWORD = '{BOB}'; CREATE DATABASE shop; CREATE DATABASE other"),
        )
        .await;
        run(
            &mut sa,
            "USE shop; CREATE TABLE t (a int); INSERT INTO t VALUES (1); CREATE USER carol WITH DEFAULT_SCHEMA = dbo",
        )
        .await;
        assert_eq!(text(&mut sa, "SELECT USER_NAME()").await.as_deref(), Some("dbo"));
        assert_eq!(count(&mut sa, "SELECT IS_MEMBER('db_owner')").await, 1);

        // Impersonating the user: its name, its login, its permissions; REVERT ends it.
        run(&mut sa, "EXECUTE AS USER = 'carol'").await;
        assert_eq!(text(&mut sa, "SELECT USER_NAME()").await.as_deref(), Some("carol"));
        assert_eq!(text(&mut sa, "SELECT SUSER_NAME()").await.as_deref(), Some("carol"));
        assert_eq!(text(&mut sa, "SELECT ORIGINAL_LOGIN()").await.as_deref(), Some("sa"));
        assert_eq!(count(&mut sa, "SELECT IS_MEMBER('db_owner')").await, 0);
        assert_eq!(count(&mut sa, "SELECT HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'SELECT')").await, 0);
        assert_eq!(refused(&mut sa, "SELECT * FROM t").await.0, 229);
        assert_eq!(refused(&mut sa, "SELECT * FROM other.dbo.sysobjects").await.0, 916);
        assert_eq!(refused(&mut sa, "EXECUTE AS LOGIN = 'sa'").await.0, 15406);
        run(&mut sa, "REVERT").await;
        assert_eq!(text(&mut sa, "SELECT USER_NAME()").await.as_deref(), Some("dbo"));
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM t").await, 1);

        // Roles and permissions as the functions see them.
        assert_eq!(count(&mut sa, "SELECT IS_ROLEMEMBER('db_datareader', 'carol')").await, 0);
        run(&mut sa, "ALTER ROLE db_datareader ADD MEMBER carol").await;
        assert_eq!(count(&mut sa, "SELECT IS_ROLEMEMBER('db_datareader', 'carol')").await, 1);
        // The older procedures do the same.
        run(&mut sa, "EXEC sp_droprolemember 'db_datareader', 'carol'").await;
        assert_eq!(count(&mut sa, "SELECT IS_ROLEMEMBER('db_datareader', 'carol')").await, 0);
        run(&mut sa, "EXEC sp_addrolemember @rolename = 'db_datareader', @membername = 'carol'").await;
        assert_eq!(count(&mut sa, "SELECT IS_ROLEMEMBER('db_datareader', 'carol')").await, 1);
        assert_eq!(refused(&mut sa, "EXEC sp_addrolemember 'db_datareader'").await.0, 201);
        assert_eq!(refused(&mut sa, "EXEC sp_addrolemember 'no_such_role', 'carol'").await.0, 15151);
        run(&mut sa, "EXEC sp_addsrvrolemember 'carol', 'processadmin'").await;
        assert_eq!(count(&mut sa, "SELECT IS_SRVROLEMEMBER('processadmin', 'carol')").await, 1);
        run(&mut sa, "EXEC sp_dropsrvrolemember 'carol', 'processadmin'").await;
        assert_eq!(count(&mut sa, "SELECT IS_SRVROLEMEMBER('processadmin', 'carol')").await, 0);
        let mut carol = connect_as(port, "carol", BOB).await;
        run(&mut carol, "USE shop").await;
        assert_eq!(count(&mut carol, "SELECT HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'SELECT')").await, 1);
        assert_eq!(count(&mut carol, "SELECT HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'DELETE')").await, 0);
        assert_eq!(count(&mut carol, "SELECT HAS_DBACCESS('shop')").await, 1);
        assert_eq!(count(&mut carol, "SELECT HAS_DBACCESS('other')").await, 0);
        assert_eq!(count(&mut carol, "SELECT USER_ID()").await, count(&mut sa, "SELECT USER_ID('carol')").await);
        assert_eq!(refused(&mut carol, "EXECUTE AS USER = 'dbo'").await.0, 15517);

        // A context begun WITH NO REVERT stays.
        run(&mut sa, "EXECUTE AS LOGIN = 'carol' WITH NO REVERT").await;
        assert_eq!(refused(&mut sa, "REVERT").await.0, 15196);
        assert_eq!(text(&mut sa, "SELECT SUSER_NAME()").await.as_deref(), Some("carol"));
    });
}

#[test]
fn the_hosting_pattern_shows_a_tenant_only_its_own_databases_and_session() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN t1 WITH PASSWORD = '{ALICE}'; CREATE LOGIN t2 WITH PASSWORD = '{BOB}'"))
            .await;
        run(&mut sa, "CREATE DATABASE db1; CREATE DATABASE db2").await;
        run(&mut sa, "ALTER AUTHORIZATION ON DATABASE::db1 TO t1; ALTER AUTHORIZATION ON DATABASE::db2 TO t2").await;
        let visible = "SELECT COUNT(*) FROM sys.databases WHERE name IN ('db1', 'db2')";
        let mut t1 = connect_as(port, "t1", ALICE).await;
        assert_eq!(count(&mut t1, visible).await, 2, "public holds VIEW ANY DATABASE");

        run(&mut sa, "USE master; DENY VIEW ANY DATABASE TO public").await;
        let mut t1 = connect_as(port, "t1", ALICE).await;
        assert_eq!(count(&mut t1, visible).await, 1, "its own only");
        assert_eq!(text(&mut t1, "SELECT name FROM sys.databases WHERE name LIKE 'db%'").await.as_deref(), Some("db1"));
        assert_eq!(count(&mut t1, "SELECT COUNT(*) FROM sys.databases WHERE name IN ('master', 'tempdb')").await, 2);
        assert_eq!(count(&mut sa, visible).await, 2, "sysadmin sees everything");
        // Other tenants' logins, and everyone's password hashes, are hidden.
        assert_eq!(count(&mut t1, "SELECT COUNT(*) FROM sys.server_principals WHERE type = 'S'").await, 1);
        assert_eq!(
            count(&mut t1, "SELECT COUNT(*) FROM sys.sql_logins WHERE name = 't1' AND password_hash IS NULL").await,
            1
        );
        assert_eq!(
            count(&mut sa, "SELECT COUNT(*) FROM sys.sql_logins WHERE name = 't2' AND password_hash IS NOT NULL").await,
            1
        );
        let db2 = count(&mut sa, "SELECT CAST(DB_ID('db2') AS int)").await;
        assert_eq!(count(&mut t1, "SELECT COUNT(*) WHERE DB_ID('db2') IS NULL").await, 1);
        assert_eq!(count(&mut t1, &format!("SELECT COUNT(*) WHERE DB_NAME({db2}) IS NULL")).await, 1);
        assert_eq!(
            count(&mut t1, &format!("SELECT COUNT(*) FROM sys.master_files WHERE database_id = {db2}")).await,
            0
        );
        assert_eq!(refused(&mut t1, "EXEC sp_helpdb 'db2'").await.0, 15010);
        assert_eq!(count(&mut t1, "SELECT COUNT(*) WHERE DB_ID('db1') IS NOT NULL").await, 1);
        assert_eq!(
            count(&mut sa, "SELECT COUNT(*) FROM sys.server_permissions WHERE grantee_principal_id = 2 AND state = 'D' AND type = 'VWDB'").await,
            1
        );
        run(&mut t1, "USE db1; CREATE TABLE mine (a int)").await;
        assert_eq!(
            count(&mut sa, "SELECT COUNT(*) FROM sys.databases WHERE name = 'db1' AND owner_sid = SUSER_SID('t1')")
                .await,
            1
        );

        // Server state: its own session only, and no server-wide DMV.
        assert_eq!(count(&mut t1, "SELECT COUNT(*) FROM sys.dm_exec_sessions").await, 1);
        assert_eq!(count(&mut t1, "SELECT COUNT(*) FROM sys.dm_exec_sessions WHERE session_id = @@SPID").await, 1);
        let who = t1.simple_query("EXEC sp_who").await.unwrap().into_first_result().await.unwrap();
        assert_eq!(who.len(), 1, "sp_who: its own session only");
        let (n, m) = refused(&mut t1, "SELECT * FROM sys.dm_os_sys_memory").await;
        assert_eq!(
            (n, m.as_str()),
            (300, "VIEW SERVER STATE permission was denied on object 'server', database 'master'.")
        );
        assert_eq!(refused(&mut t1, "SELECT * FROM sys.dm_exec_cached_plans").await.0, 300);
        assert_eq!(refused(&mut t1, "SELECT * FROM sys.dm_exec_connections").await.0, 300);
        assert_eq!(refused(&mut t1, "DBCC FREEPROCCACHE").await.0, 2571);
        assert_eq!(refused(&mut t1, "DBCC DROPCLEANBUFFERS").await.0, 2571);
        assert_eq!(refused(&mut t1, "DBCC TRACEON (1222, -1)").await.0, 2571);
        run(&mut t1, "DBCC CHECKDB (db1) WITH NO_INFOMSGS").await;
        assert_eq!(refused(&mut t1, "DBCC CHECKDB (db2)").await.0, 2571);
        assert_eq!(refused(&mut t1, "USE master; GRANT VIEW SERVER STATE TO t1").await.0, 4613);
        assert_eq!(refused(&mut sa, "USE db1; GRANT VIEW SERVER STATE TO t1").await.0, 4621);
        assert_eq!(count(&mut t1, "SELECT HAS_PERMS_BY_NAME(NULL, 'SERVER', 'VIEW SERVER STATE')").await, 0);
        run(&mut sa, "USE master; GRANT VIEW SERVER STATE TO t1").await;
        let mut t1 = connect_as(port, "t1", ALICE).await;
        assert_eq!(count(&mut t1, "SELECT HAS_PERMS_BY_NAME(NULL, 'SERVER', 'VIEW SERVER STATE')").await, 1);
        assert!(count(&mut t1, "SELECT COUNT(*) FROM sys.dm_exec_sessions").await >= 2);
        run(&mut t1, "SELECT * FROM sys.dm_os_sys_memory").await;
        assert!(count(&mut t1, "SELECT COUNT(*) FROM sys.dm_exec_connections").await >= 2);
        run(&mut sa, "USE master; REVOKE VIEW SERVER STATE FROM t1").await;
        let mut t1 = connect_as(port, "t1", ALICE).await;
        assert_eq!(count(&mut t1, "SELECT COUNT(*) FROM sys.dm_exec_sessions").await, 1);
    });
}

#[test]
fn one_part_names_look_in_the_user_s_default_schema_first() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN dave WITH PASSWORD = '{BOB}'; CREATE DATABASE shop")).await;
        run(&mut sa, "USE shop; CREATE SCHEMA sales; CREATE TABLE dbo.t (a int); INSERT INTO dbo.t VALUES (1)").await;
        run(&mut sa, "CREATE TABLE sales.t (a int); INSERT INTO sales.t VALUES (2)").await;
        run(&mut sa, "CREATE TABLE dbo.only_dbo (a int); INSERT INTO dbo.only_dbo VALUES (3)").await;
        run(&mut sa, "CREATE PROCEDURE dbo.pt AS SELECT a FROM t").await;
        run(&mut sa, "CREATE USER dave WITH DEFAULT_SCHEMA = sales; ALTER AUTHORIZATION ON SCHEMA::sales TO dave")
            .await;
        run(
            &mut sa,
            "GRANT SELECT ON SCHEMA::dbo TO dave; GRANT CREATE TABLE TO dave; GRANT EXECUTE ON dbo.pt TO dave",
        )
        .await;

        let mut dave = connect_as(port, "dave", BOB).await;
        run(&mut dave, "USE shop").await;
        assert_eq!(text(&mut dave, "SELECT SCHEMA_NAME()").await.as_deref(), Some("sales"));
        assert_eq!(count(&mut dave, "SELECT a FROM t").await, 2, "sales.t first");
        assert_eq!(count(&mut dave, "SELECT a FROM only_dbo").await, 3, "then dbo");
        assert_eq!(count(&mut sa, "SELECT a FROM t").await, 1, "sa's default schema is dbo (same text, its own plan)");
        assert_eq!(count(&mut dave, "SELECT a FROM t").await, 2);
        assert_eq!(count(&mut dave, "EXEC dbo.pt").await, 1, "a procedure's names look in its own schema");
        run(&mut dave, "CREATE TABLE newt (a int)").await;
        assert_eq!(
            text(&mut sa, "SELECT SCHEMA_NAME(schema_id) FROM sys.tables WHERE name = 'newt'").await.as_deref(),
            Some("sales")
        );
        // A table of the same name appearing in sales later takes over dave's one-part name.
        run(&mut sa, "CREATE TABLE sales.only_dbo (a int); INSERT INTO sales.only_dbo VALUES (4)").await;
        assert_eq!(count(&mut dave, "SELECT a FROM only_dbo").await, 4);
    });
}

/// The error number a login attempt is refused with.
fn login_error(attempt: tiberius::Result<Conn>) -> u32 {
    match attempt {
        Ok(_) => panic!("the login was accepted"),
        Err(tiberius::error::Error::Server(t)) => t.code(),
        Err(other) => panic!("expected a server error, got {other:?}"),
    }
}

#[test]
fn a_contained_database_s_users_log_in_with_their_own_passwords() {
    with_server(|port, mut sa| async move {
        run(&mut sa, "CREATE DATABASE cdb; CREATE DATABASE other").await;
        assert_eq!(refused(&mut sa, "ALTER DATABASE cdb SET CONTAINMENT = PARTIAL").await.0, 12824);
        assert_eq!(refused(&mut sa, "USE cdb; CREATE USER erin WITH PASSWORD = 'Erin-Pass-1'").await.0, 33233);
        run(&mut sa, "USE master; EXEC sp_configure 'contained database authentication', 1; RECONFIGURE").await;
        run(&mut sa, "ALTER DATABASE cdb SET CONTAINMENT = PARTIAL").await;
        run(&mut sa, "USE cdb; CREATE TABLE t (a int); INSERT INTO t VALUES (7)").await;
        run(&mut sa, "CREATE USER erin WITH PASSWORD = 'Erin-Pass-1'; GRANT SELECT ON t TO erin").await;
        assert_eq!(
            text(&mut sa, "SELECT authentication_type_desc FROM sys.database_principals WHERE name = 'erin'")
                .await
                .as_deref(),
            Some("DATABASE")
        );

        let mut erin = connect_to(port, "erin", "Erin-Pass-1", "cdb").await.expect("a contained user logs in");
        assert_eq!(count(&mut erin, "SELECT a FROM t").await, 7);
        assert_eq!(text(&mut erin, "SELECT USER_NAME()").await.as_deref(), Some("erin"));
        assert_eq!(refused(&mut erin, "INSERT INTO t VALUES (8)").await.0, 229);
        assert_eq!(
            count(&mut erin, "CREATE TABLE #mine (a int); INSERT INTO #mine VALUES (3); SELECT a FROM #mine").await,
            3
        );
        assert_eq!(refused(&mut erin, "SELECT * FROM other.sys.tables").await.0, 916);
        assert_eq!(refused(&mut erin, "REVERT").await.0, 15196, "a contained session stays its user");

        assert_eq!(login_error(connect_to(port, "erin", "wrong-Pass-1", "cdb").await), 18456);
        assert_eq!(login_error(connect_to(port, "erin", "Erin-Pass-1", "master").await), 18456, "not a server login");
        assert_eq!(refused(&mut sa, "ALTER DATABASE cdb SET CONTAINMENT = NONE").await.0, 12809);
        run(&mut sa, "USE cdb; DROP USER erin; USE master; ALTER DATABASE cdb SET CONTAINMENT = NONE").await;
        assert_eq!(login_error(connect_to(port, "erin", "Erin-Pass-1", "cdb").await), 18456);
    });
}

#[test]
fn a_procedure_with_execute_as_owner_runs_its_dynamic_sql_as_its_owner() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN fay WITH PASSWORD = '{BOB}'; CREATE DATABASE shop")).await;
        run(&mut sa, "USE shop; CREATE TABLE secret (a int); INSERT INTO secret VALUES (1), (2); CREATE USER fay")
            .await;
        run(&mut sa, "CREATE PROCEDURE dbo.as_owner WITH EXECUTE AS OWNER AS EXEC ('SELECT COUNT(*) FROM secret')")
            .await;
        run(&mut sa, "CREATE PROCEDURE dbo.as_caller AS EXEC ('SELECT COUNT(*) FROM secret')").await;
        run(&mut sa, "CREATE PROCEDURE dbo.who WITH EXECUTE AS OWNER AS SELECT USER_NAME()").await;
        run(&mut sa, "CREATE PROCEDURE dbo.scratch WITH EXECUTE AS OWNER AS BEGIN CREATE TABLE #s (a int); INSERT INTO #s SELECT a FROM secret; SELECT COUNT(*) FROM #s; END").await;
        run(&mut sa, "GRANT EXECUTE ON dbo.scratch TO fay").await;
        run(&mut sa, "GRANT EXECUTE ON dbo.as_owner TO fay; GRANT EXECUTE ON dbo.as_caller TO fay; GRANT EXECUTE ON dbo.who TO fay").await;
        assert_eq!(refused(&mut sa, "CREATE PROCEDURE dbo.bad WITH EXECUTE AS 'nobody' AS SELECT 1").await.0, 15517);
        // SELF: the user who created (or last altered) the procedure.
        run(&mut sa, "CREATE PROCEDURE dbo.as_self WITH EXECUTE AS SELF AS EXEC ('SELECT COUNT(*) FROM secret')").await;
        run(
            &mut sa,
            "GRANT EXECUTE ON dbo.as_self TO fay; GRANT CREATE PROCEDURE TO fay; GRANT ALTER ON SCHEMA::dbo TO fay",
        )
        .await;

        let mut fay = connect_as(port, "fay", BOB).await;
        run(&mut fay, "USE shop").await;
        assert_eq!(count(&mut fay, "EXEC dbo.as_owner").await, 2, "dynamic SQL runs as the owner");
        assert_eq!(count(&mut fay, "EXEC dbo.scratch").await, 2, "temp tables inside");
        assert_eq!(refused(&mut fay, "EXEC dbo.as_caller").await.0, 229, "dynamic SQL breaks the ownership chain");
        assert_eq!(text(&mut fay, "EXEC dbo.who").await.as_deref(), Some("dbo"));
        assert_eq!(count(&mut fay, "EXEC dbo.as_self").await, 2, "sa made it: it runs as dbo");
        run(&mut fay, "CREATE PROCEDURE dbo.fay_self WITH EXECUTE AS SELF AS SELECT USER_NAME()").await;
        assert_eq!(text(&mut sa, "EXEC shop.dbo.fay_self").await.as_deref(), Some("fay"), "fay made it");
        // Scalar functions too; table-valued ones have no EXECUTE AS (40529).
        run(&mut sa, "USE shop").await;
        run(
            &mut sa,
            "CREATE FUNCTION dbo.as_owner_name() RETURNS sysname WITH EXECUTE AS OWNER AS BEGIN RETURN USER_NAME() END",
        )
        .await;
        run(&mut sa, "CREATE FUNCTION dbo.caller_name() RETURNS sysname AS BEGIN RETURN USER_NAME() END").await;
        run(&mut sa, "GRANT EXECUTE ON dbo.as_owner_name TO fay; GRANT EXECUTE ON dbo.caller_name TO fay").await;
        assert_eq!(text(&mut fay, "SELECT dbo.as_owner_name()").await.as_deref(), Some("dbo"));
        assert_eq!(text(&mut fay, "SELECT dbo.caller_name()").await.as_deref(), Some("fay"));
        assert_eq!(
            text(&mut fay, "SELECT USER_NAME()").await.as_deref(),
            Some("fay"),
            "the context ends with the call"
        );
        let tvf = "CREATE FUNCTION dbo.rows_as_owner() RETURNS TABLE WITH EXECUTE AS OWNER AS RETURN (SELECT 1 AS a)";
        assert_eq!(refused(&mut sa, tvf).await.0, 40529);
        assert_eq!(
            text(&mut fay, "SELECT USER_NAME()").await.as_deref(),
            Some("fay"),
            "the context ends with the call"
        );
        assert_eq!(refused(&mut fay, "SELECT COUNT(*) FROM secret").await.0, 229);
    });
}

/// One permission: how it is granted, a statement that needs it, the error without it,
/// and a query whose answer shows the statement changed nothing when refused (or
/// `None` when the statement changes nothing anyway).
struct Case {
    grant: &'static str,
    needs: &'static str,
    refused_with: u32,
    unchanged: Option<(&'static str, i32)>,
}

/// For each database permission, a user without it gets SQL Server's error and changes
/// nothing; with it granted, the same statement succeeds.
#[test]
fn each_database_permission_refuses_without_and_allows_with() {
    let server = TestServer::start();
    let port = server.port();
    let dir = server.dir.path().display().to_string();
    let backup = format!("BACKUP DATABASE perms TO DISK = '{dir}/perms.bak'");
    let cases = [
        Case { grant: "GRANT SELECT ON dbo.t TO u", needs: "SELECT * FROM dbo.t", refused_with: 229, unchanged: None },
        Case {
            grant: "GRANT INSERT ON dbo.t TO u",
            needs: "INSERT INTO dbo.t VALUES (100)",
            refused_with: 229,
            unchanged: Some(("SELECT COUNT(*) FROM dbo.t WHERE a = 100", 0)),
        },
        Case {
            grant: "GRANT UPDATE ON dbo.t TO u",
            needs: "UPDATE dbo.t SET a = a",
            refused_with: 229,
            unchanged: None,
        },
        Case {
            grant: "GRANT DELETE ON dbo.t TO u",
            needs: "DELETE dbo.t",
            refused_with: 229,
            unchanged: Some(("SELECT COUNT(*) FROM dbo.t", 3)),
        },
        Case { grant: "GRANT EXECUTE ON dbo.p TO u", needs: "EXEC dbo.p", refused_with: 229, unchanged: None },
        Case { grant: "GRANT SELECT ON dbo.v TO u", needs: "SELECT * FROM dbo.v", refused_with: 229, unchanged: None },
        Case {
            grant: "GRANT ALTER ON dbo.t2 TO u",
            needs: "ALTER TABLE dbo.t2 ADD b int",
            refused_with: 4902,
            unchanged: Some(("SELECT COUNT(*) FROM sys.columns WHERE name = 'b'", 0)),
        },
        Case {
            grant: "GRANT CONTROL ON dbo.t3 TO u",
            needs: "DROP TABLE dbo.t3",
            refused_with: 3701,
            unchanged: Some(("SELECT COUNT(*) FROM sys.tables WHERE name = 't3'", 1)),
        },
        Case {
            grant: "GRANT CREATE TABLE TO u; GRANT ALTER ON SCHEMA::dbo TO u",
            needs: "CREATE TABLE dbo.made (a int)",
            refused_with: 262,
            unchanged: Some(("SELECT COUNT(*) FROM sys.tables WHERE name = 'made'", 0)),
        },
        Case {
            grant: "GRANT CREATE VIEW TO u",
            needs: "CREATE VIEW dbo.made_v AS SELECT 1 AS one",
            refused_with: 262,
            unchanged: Some(("SELECT COUNT(*) FROM sys.views WHERE name = 'made_v'", 0)),
        },
        Case {
            grant: "GRANT CREATE PROCEDURE TO u",
            needs: "CREATE PROCEDURE dbo.made_p AS SELECT 1",
            refused_with: 262,
            unchanged: Some(("SELECT COUNT(*) FROM sys.procedures WHERE name = 'made_p'", 0)),
        },
        Case {
            grant: "GRANT CREATE FUNCTION TO u",
            needs: "CREATE FUNCTION dbo.made_f() RETURNS int AS BEGIN RETURN 1 END",
            refused_with: 262,
            unchanged: Some(("SELECT COUNT(*) FROM sys.objects WHERE name = 'made_f'", 0)),
        },
        Case {
            grant: "GRANT ALTER ANY USER TO u",
            needs: "CREATE USER made_u WITHOUT LOGIN",
            refused_with: 15247,
            unchanged: Some(("SELECT COUNT(*) FROM sys.database_principals WHERE name = 'made_u'", 0)),
        },
        Case {
            grant: "GRANT CREATE ROLE TO u",
            needs: "CREATE ROLE made_r",
            refused_with: 15247,
            unchanged: Some(("SELECT COUNT(*) FROM sys.database_principals WHERE name = 'made_r'", 0)),
        },
        Case {
            grant: "GRANT CREATE SCHEMA TO u",
            needs: "CREATE SCHEMA made_s",
            refused_with: 262,
            unchanged: Some(("SELECT COUNT(*) FROM sys.schemas WHERE name = 'made_s'", 0)),
        },
        Case { grant: "ALTER ROLE db_backupoperator ADD MEMBER u", needs: "", refused_with: 262, unchanged: None },
    ];
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, &format!("CREATE LOGIN u WITH PASSWORD = '{BOB}'; CREATE DATABASE perms")).await;
        run(&mut sa, "USE perms; CREATE TABLE t (a int); INSERT INTO t VALUES (1), (2)").await;
        run(&mut sa, "CREATE TABLE t2 (a int); CREATE TABLE t3 (a int); CREATE USER u").await;
        run(&mut sa, "CREATE PROCEDURE p AS SELECT 1").await;
        run(&mut sa, "CREATE VIEW v AS SELECT 1 AS one").await;
        let mut u = connect_as(port, "u", BOB).await;
        run(&mut u, "USE perms").await;
        for case in &cases {
            let needs = if case.needs.is_empty() { backup.as_str() } else { case.needs };
            let (n, m) = refused(&mut u, needs).await;
            assert_eq!(n, case.refused_with, "{needs}: {m}");
            if let Some((query, expected)) = case.unchanged {
                assert_eq!(count(&mut sa, query).await, expected, "{needs} changed something");
            }
            run(&mut sa, case.grant).await;
            run(&mut u, needs).await;
        }
    });
}

#[test]
fn kill_needs_alter_any_connection_and_ends_the_session_with_its_transaction() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN k1 WITH PASSWORD = '{ALICE}'; CREATE LOGIN k2 WITH PASSWORD = '{BOB}'"))
            .await;
        run(&mut sa, "CREATE DATABASE kdb; ALTER AUTHORIZATION ON DATABASE::kdb TO k2").await;
        let mut k1 = connect_as(port, "k1", ALICE).await;
        let mut k2 = connect_to(port, "k2", BOB, "kdb").await.unwrap();
        run(&mut k2, "CREATE TABLE t (a int); BEGIN TRAN; INSERT INTO t VALUES (1)").await;
        let k2_spid = count(&mut k2, "SELECT CAST(@@SPID AS int)").await;
        let sa_spid = count(&mut sa, "SELECT CAST(@@SPID AS int)").await;

        assert_eq!(refused(&mut k1, &format!("KILL {k2_spid}")).await.0, 6102, "another tenant's session");
        assert_eq!(refused(&mut sa, &format!("KILL {sa_spid}")).await.0, 6104);
        assert_eq!(refused(&mut sa, "KILL 9999").await.0, 6106);
        assert_eq!(refused(&mut sa, "KILL 5").await.0, 6107);

        run(&mut sa, "GRANT ALTER ANY CONNECTION TO k1").await;
        let mut k1 = connect_as(port, "k1", ALICE).await;
        run(&mut k1, &format!("KILL {k2_spid}")).await;
        assert!(k2.simple_query("SELECT 1").await.is_err(), "the killed connection is gone");
        eventually(&mut sa, &format!("SELECT COUNT(*) FROM sys.dm_exec_sessions WHERE session_id = {k2_spid}"), 0)
            .await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM kdb.dbo.t").await, 0, "its transaction rolled back");
    });
}

#[test]
fn fn_my_permissions_lists_what_the_caller_holds() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN fay WITH PASSWORD = '{ALICE}'")).await;
        run(&mut sa, "CREATE DATABASE fdb").await;
        run(
            &mut sa,
            "USE fdb; CREATE TABLE t (a int, b int); CREATE TABLE hidden (x int); CREATE USER fay FOR LOGIN fay",
        )
        .await;
        run(&mut sa, "USE fdb; GRANT SELECT ON t TO fay; GRANT CREATE TABLE TO fay").await;
        let mut fay = connect_to(port, "fay", ALICE, "fdb").await.unwrap();
        let permissions = |args: &str| format!("SELECT COUNT(*) FROM fn_my_permissions({args})");
        let holds = |args: &str, sub: &str, p: &str| {
            format!(
                "SELECT COUNT(*) FROM sys.fn_my_permissions({args}) WHERE subentity_name = '{sub}' AND permission_name = '{p}'"
            )
        };
        assert_eq!(count(&mut fay, &holds("'dbo.t', 'OBJECT'", "", "SELECT")).await, 1);
        assert_eq!(count(&mut fay, &holds("'dbo.t', 'OBJECT'", "b", "SELECT")).await, 1, "a row per column");
        assert_eq!(count(&mut fay, &holds("'dbo.t', 'OBJECT'", "", "INSERT")).await, 0);
        assert_eq!(count(&mut fay, &permissions("'dbo.t', 'OBJECT'")).await, 3, "SELECT, and SELECT on a and b");
        assert_eq!(count(&mut fay, &permissions("'dbo.hidden', 'OBJECT'")).await, 0);
        assert_eq!(count(&mut fay, &holds("NULL, 'DATABASE'", "", "CREATE TABLE")).await, 1);
        assert_eq!(count(&mut fay, &holds("NULL, 'DATABASE'", "", "CONNECT")).await, 1);
        assert_eq!(count(&mut fay, &holds("NULL, 'DATABASE'", "", "CREATE VIEW")).await, 0);
        assert_eq!(count(&mut fay, &holds("NULL, 'SERVER'", "", "CONNECT SQL")).await, 1);
        assert_eq!(count(&mut fay, &holds("NULL, 'SERVER'", "", "CONTROL SERVER")).await, 0);
        // sa holds everything, column by column too.
        assert_eq!(count(&mut sa, &holds("'fdb.dbo.hidden', 'OBJECT'", "x", "UPDATE")).await, 1);
        assert_eq!(count(&mut sa, &holds("NULL, 'SERVER'", "", "CONTROL SERVER")).await, 1);
        assert_eq!(count(&mut fay, &permissions("NULL, 'NO SUCH CLASS'")).await, 0);
    });
}

#[test]
fn column_permissions_allow_and_deny_each_column() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN cole WITH PASSWORD = '{ALICE}'; CREATE DATABASE cols")).await;
        run(&mut sa, "USE cols; CREATE TABLE t (id int PRIMARY KEY, v int, secret int); CREATE USER cole").await;
        run(&mut sa, "INSERT INTO t VALUES (1, 10, 100), (2, 20, 200)").await;
        assert_eq!(refused(&mut sa, "GRANT SELECT (nope) ON t TO cole").await.0, 207);
        assert_eq!(refused(&mut sa, "GRANT INSERT (id) ON t TO cole").await.0, 4606);
        run(&mut sa, "GRANT SELECT (id, v) ON t TO cole").await;
        let mut cole = connect_to(port, "cole", ALICE, "cols").await.unwrap();

        // The granted columns only, wherever the statement reads them.
        assert_eq!(count(&mut cole, "SELECT SUM(v) FROM t WHERE id > 0").await, 30);
        assert_eq!(count(&mut cole, "SELECT COUNT(*) FROM t").await, 2);
        assert_eq!(
            refused(&mut cole, "SELECT secret FROM t").await,
            (230, "The SELECT permission was denied on the column 'secret' of the object 't', database 'cols', schema 'dbo'.".into())
        );
        assert_eq!(refused(&mut cole, "SELECT * FROM t").await.0, 230);
        assert_eq!(refused(&mut cole, "SELECT id FROM t WHERE secret = 100").await.0, 230);
        assert_eq!(refused(&mut cole, "UPDATE t SET v = 0").await.0, 229);
        assert_eq!(
            count(&mut cole, "SELECT COUNT(*) FROM sys.tables WHERE name = 't'").await,
            1,
            "a column makes it visible"
        );
        let holds = |sub: &str, p: &str| {
            format!("SELECT COUNT(*) FROM fn_my_permissions('dbo.t', 'OBJECT') WHERE subentity_name = '{sub}' AND permission_name = '{p}'")
        };
        assert_eq!(count(&mut cole, &holds("v", "SELECT")).await, 1);
        assert_eq!(count(&mut cole, &holds("secret", "SELECT")).await, 0);
        assert_eq!(count(&mut cole, &holds("", "SELECT")).await, 0, "not the table's");

        // UPDATE of one column.
        run(&mut sa, "GRANT UPDATE (v) ON t TO cole").await;
        run(&mut cole, "UPDATE t SET v = v + 1 WHERE id = 1").await;
        assert_eq!(refused(&mut cole, "UPDATE t SET secret = 0 WHERE id = 1").await.0, 230);
        assert_eq!(count(&mut sa, "SELECT secret FROM cols.dbo.t WHERE id = 1").await, 100, "nothing changed");

        // A DENY on a column wins over SELECT on the table.
        run(&mut sa, "GRANT SELECT ON t TO cole; DENY SELECT (secret) ON t TO cole").await;
        assert_eq!(count(&mut cole, "SELECT SUM(id + v) FROM t").await, 34);
        assert_eq!(refused(&mut cole, "SELECT * FROM t").await.0, 230);
        let rows = "SELECT COUNT(*) FROM sys.database_permissions WHERE major_id = OBJECT_ID('t') AND minor_id > 0";
        assert_eq!(count(&mut sa, &format!("USE cols; {rows}")).await, 4, "id, v, v (UPDATE), secret");

        // REVOKE on the table takes its column rows with it.
        run(&mut sa, "REVOKE SELECT ON t FROM cole").await;
        assert_eq!(refused(&mut cole, "SELECT id FROM t").await.0, 229);
        assert_eq!(count(&mut sa, &format!("USE cols; {rows}")).await, 1, "UPDATE (v) stays");
    });
}

/// UPDATE and DELETE need SELECT on what they read of their target, as SQL Server asks:
/// the rows a WHERE clause chooses, the columns a SET expression reads, what OUTPUT
/// returns. Without it a user who may only change a table could read it by inference.
#[test]
fn update_and_delete_need_select_on_what_they_read() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN wren WITH PASSWORD = '{ALICE}'; CREATE DATABASE blind")).await;
        run(&mut sa, "USE blind; CREATE TABLE t (id int PRIMARY KEY, v int, secret int); CREATE USER wren").await;
        run(
            &mut sa,
            "USE blind; INSERT INTO t VALUES (1, 10, 100), (2, 20, 200); GRANT UPDATE, DELETE, INSERT ON t TO wren",
        )
        .await;
        let mut wren = connect_to(port, "wren", ALICE, "blind").await.unwrap();
        let select_denied =
            (229, "The SELECT permission was denied on the object 't', database 'blind', schema 'dbo'.".to_string());

        // Reading nothing: allowed.
        run(&mut wren, "UPDATE t SET v = 5").await;
        // Reading a column in SET, in a compound assignment, or returning rows: refused, and
        // nothing changes.
        assert_eq!(refused(&mut wren, "UPDATE t SET v = secret").await, select_denied);
        assert_eq!(refused(&mut wren, "UPDATE t SET v += 1").await, select_denied);
        assert_eq!(refused(&mut wren, "UPDATE t SET v = 1 OUTPUT deleted.secret").await, select_denied);
        assert_eq!(refused(&mut wren, "UPDATE t SET v = 1 WHERE secret > 150").await, select_denied);
        assert_eq!(refused(&mut wren, "DELETE FROM t OUTPUT deleted.id").await, select_denied);
        assert_eq!(refused(&mut wren, "DELETE t WHERE secret = 100").await, select_denied);
        assert_eq!(refused(&mut wren, "INSERT INTO t OUTPUT inserted.id VALUES (3, 0, 0)").await, select_denied);
        assert_eq!(count(&mut sa, "SELECT SUM(v) + COUNT(*) FROM blind.dbo.t").await, 12, "nothing changed");

        // SELECT on the columns read is enough; another column is still refused (230).
        run(&mut sa, "USE blind; GRANT SELECT (v, id) ON t TO wren").await;
        run(&mut wren, "UPDATE t SET v += id WHERE id = 2").await;
        assert_eq!(refused(&mut wren, "UPDATE t SET v = secret").await.0, 230);
        run(&mut wren, "DELETE t WHERE v = 7").await;
        assert_eq!(count(&mut sa, "SELECT SUM(v) + COUNT(*) FROM blind.dbo.t").await, 6, "row 2 deleted");
        run(&mut wren, "DELETE t").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM blind.dbo.t").await, 0);
    });
}

#[test]
fn impersonate_on_a_user_lets_another_user_execute_as_it() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN ivy WITH PASSWORD = '{ALICE}'; CREATE DATABASE imp")).await;
        run(&mut sa, "USE imp; CREATE TABLE secret (a int); INSERT INTO secret VALUES (1), (2)").await;
        run(&mut sa, "USE imp; CREATE USER ivy; CREATE USER proxy WITHOUT LOGIN; CREATE ROLE r").await;
        run(&mut sa, "USE imp; GRANT SELECT ON secret TO proxy").await;
        let mut ivy = connect_to(port, "ivy", ALICE, "imp").await.unwrap();
        assert_eq!(refused(&mut ivy, "EXECUTE AS USER = 'proxy'").await.0, 15517);

        run(&mut sa, "USE imp; GRANT IMPERSONATE ON USER::proxy TO ivy").await;
        run(&mut ivy, "EXECUTE AS USER = 'proxy'").await;
        assert_eq!(count(&mut ivy, "SELECT COUNT(*) FROM secret").await, 2);
        run(&mut ivy, "REVERT").await;
        assert_eq!(refused(&mut ivy, "SELECT COUNT(*) FROM secret").await.0, 229);
        let rows = "SELECT COUNT(*) FROM sys.database_permissions WHERE class_desc = 'DATABASE_PRINCIPAL' \
                    AND permission_name = 'IMPERSONATE' AND major_id = USER_ID('proxy')";
        assert_eq!(count(&mut sa, &format!("USE imp; {rows}")).await, 1);

        assert_eq!(refused(&mut sa, "USE imp; GRANT IMPERSONATE ON ROLE::r TO ivy").await.0, 4606);
        assert_eq!(refused(&mut sa, "USE imp; GRANT SELECT ON USER::proxy TO ivy").await.0, 4606);
        assert_eq!(refused(&mut sa, "USE imp; GRANT IMPERSONATE ON USER::nobody TO ivy").await.0, 15151);
        run(&mut sa, "USE imp; DENY IMPERSONATE ON USER::proxy TO ivy").await;
        assert_eq!(refused(&mut ivy, "EXECUTE AS USER = 'proxy'").await.0, 15517);
    });
}

/// A database principal without a login goes by a name any login may have. Acting as one
/// (a contained user logged in, or EXECUTE AS a user WITHOUT LOGIN) once meant acting as
/// the login of that name for every server-level check: a tenant who named its user `sa`
/// was sysadmin. It holds no server login's permissions, whatever its name.
#[test]
fn a_principal_without_a_login_holds_no_login_s_server_permissions() {
    with_server(|port, mut sa| async move {
        run(
            &mut sa,
            &format!("CREATE LOGIN tenant WITH PASSWORD = '{ALICE}'; ALTER SERVER ROLE dbcreator ADD MEMBER tenant"),
        )
        .await;
        run(&mut sa, "EXEC sp_configure 'contained database authentication', 1; RECONFIGURE").await;
        let mut tenant = connect_as(port, "tenant", ALICE).await;
        run(&mut tenant, "CREATE DATABASE own; USE own; CREATE USER sa WITHOUT LOGIN").await;

        // EXECUTE AS a loginless user named like the sysadmin login.
        run(&mut tenant, "EXECUTE AS USER = 'sa'").await;
        assert_eq!(count(&mut tenant, "SELECT IS_SRVROLEMEMBER('sysadmin')").await, 0);
        assert_eq!(count(&mut tenant, "SELECT HAS_PERMS_BY_NAME(NULL, 'SERVER', 'CONTROL SERVER')").await, 0);
        assert_eq!(refused(&mut tenant, &format!("CREATE LOGIN evil WITH PASSWORD = '{BOB}'")).await.0, 15247);
        assert_eq!(refused(&mut tenant, "ALTER SERVER ROLE sysadmin ADD MEMBER tenant").await.0, 15151);
        assert_eq!(refused(&mut tenant, "DBCC DROPCLEANBUFFERS").await.0, 2571);
        assert_eq!(refused(&mut tenant, "CREATE DATABASE stolen").await.0, 262);
        run(&mut tenant, "REVERT").await;

        // A contained user named sa, logged in with its own password.
        run(&mut sa, "ALTER DATABASE own SET CONTAINMENT = PARTIAL").await;
        run(&mut tenant, "USE own; DROP USER sa; CREATE USER sa WITH PASSWORD = 'Tenant-Sa-9'").await;
        let mut fake = connect_to(port, "sa", "Tenant-Sa-9", "own").await.expect("the contained user logs in");
        assert_eq!(count(&mut fake, "SELECT IS_SRVROLEMEMBER('sysadmin')").await, 0);
        assert_eq!(refused(&mut fake, "CREATE DATABASE stolen").await.0, 262);
        assert_eq!(refused(&mut fake, "EXEC sp_configure 'show advanced options', 1").await.0, 15247);
        assert_eq!(refused(&mut fake, "KILL 52").await.0, 6102);
        assert_eq!(refused(&mut fake, "ALTER LOGIN sa WITH PASSWORD = 'Taken-Over-1'").await.0, 15151);
        assert_eq!(count(&mut fake, "SELECT COUNT(*) FROM sys.server_principals WHERE name = 'sa'").await, 0);
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.databases WHERE name = 'stolen'").await, 0);
        // Nor is a contained user's session its namesake login's: it does not hold up
        // DROP LOGIN (15434 is for the login's own sessions).
        run(&mut sa, &format!("CREATE LOGIN pat WITH PASSWORD = '{BOB}'")).await;
        run(&mut tenant, "USE own; CREATE USER pat WITH PASSWORD = 'Tenant-Pat-9'").await;
        let _pat = connect_to(port, "pat", "Tenant-Pat-9", "own").await.expect("the contained user logs in");
        run(&mut sa, "DROP LOGIN pat").await;
        assert_eq!(refused(&mut sa, "DROP LOGIN tenant").await.0, 15434);

        // A user mapped to a sysadmin's login: impersonating it, or running a module as
        // it, is scoped to the database (SQL Server's database-scoped impersonation), so a
        // database's owner cannot borrow the sysadmin's server permissions that way.
        run(&mut sa, &format!("CREATE LOGIN boss WITH PASSWORD = '{BOB}'; ALTER SERVER ROLE sysadmin ADD MEMBER boss"))
            .await;
        run(&mut tenant, "CREATE DATABASE own2; USE own2; CREATE USER boss FOR LOGIN boss").await;
        run(&mut tenant, "EXECUTE AS USER = 'boss'").await;
        assert_eq!(text(&mut tenant, "SELECT SUSER_NAME()").await.as_deref(), Some("boss"));
        assert_eq!(count(&mut tenant, "SELECT IS_SRVROLEMEMBER('sysadmin')").await, 0);
        assert_eq!(refused(&mut tenant, "CREATE DATABASE stolen").await.0, 262);
        assert_eq!(refused(&mut tenant, "ALTER SERVER ROLE sysadmin ADD MEMBER tenant").await.0, 15151);
        run(&mut tenant, "REVERT").await;
        run(
            &mut tenant,
            "EXEC('CREATE PROCEDURE grab WITH EXECUTE AS ''boss'' AS ALTER SERVER ROLE sysadmin ADD MEMBER tenant')",
        )
        .await;
        assert_eq!(refused(&mut tenant, "EXEC grab").await.0, 15151);
        assert_eq!(count(&mut sa, "SELECT IS_SRVROLEMEMBER('sysadmin', 'tenant')").await, 0);
    });
}

/// ALTER and CONTROL granted on a user or role act: ALTER on a role lets its holder change
/// the role's members, CONTROL drop it; ALTER on a user lets its holder set the user's
/// default schema, not rename it (ALTER ANY USER); any user may set its own.
#[test]
fn alter_and_control_on_a_principal_let_its_holder_change_it() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN pat WITH PASSWORD = '{ALICE}'; CREATE DATABASE princ")).await;
        run(&mut sa, "USE princ; CREATE USER pat; CREATE USER target WITHOUT LOGIN; CREATE ROLE r").await;
        let mut pat = connect_to(port, "pat", ALICE, "princ").await.unwrap();
        let members = "SELECT COUNT(*) FROM sys.database_role_members WHERE role_principal_id = USER_ID('r')";

        assert_eq!(refused(&mut pat, "ALTER ROLE r ADD MEMBER target").await.0, 15151);
        run(&mut sa, "USE princ; GRANT ALTER ON ROLE::r TO pat").await;
        run(&mut pat, "ALTER ROLE r ADD MEMBER target").await;
        assert_eq!(count(&mut sa, &format!("USE princ; {members}")).await, 1);
        assert_eq!(refused(&mut pat, "DROP ROLE r").await.0, 15151, "ALTER does not drop");

        let schema = "SELECT default_schema_name FROM sys.database_principals WHERE name = 'target'";
        assert_eq!(refused(&mut pat, "ALTER USER target WITH DEFAULT_SCHEMA = guest").await.0, 15247);
        run(&mut sa, "USE princ; GRANT ALTER ON USER::target TO pat").await;
        run(&mut pat, "ALTER USER target WITH DEFAULT_SCHEMA = guest").await;
        assert_eq!(text(&mut sa, &format!("USE princ; {schema}")).await.as_deref(), Some("guest"));
        assert_eq!(refused(&mut pat, "ALTER USER target WITH NAME = renamed").await.0, 15247);
        run(&mut pat, "ALTER USER pat WITH DEFAULT_SCHEMA = guest").await;
        assert_eq!(refused(&mut pat, "ALTER USER dbo WITH DEFAULT_SCHEMA = guest").await.0, 15247);

        run(&mut sa, "USE princ; GRANT CONTROL ON ROLE::r TO pat").await;
        run(&mut pat, "ALTER ROLE r DROP MEMBER target; DROP ROLE r").await;
        assert_eq!(count(&mut sa, "USE princ; SELECT COUNT(*) FROM sys.database_principals WHERE name = 'r'").await, 0);
    });
}

/// WITH GRANT OPTION acts: its holder may grant the permission on, and revoke what it
/// granted; taking the option away from a holder that passed it on needs CASCADE (4611),
/// which takes the grants it made as well.
#[test]
fn a_grant_option_lets_its_holder_grant_and_cascade_takes_the_chain() {
    with_server(|port, mut sa| async move {
        run(
            &mut sa,
            &format!("CREATE LOGIN lead WITH PASSWORD = '{ALICE}'; CREATE LOGIN member WITH PASSWORD = '{BOB}'"),
        )
        .await;
        run(&mut sa, "CREATE DATABASE chain; USE chain; CREATE TABLE t (a int); INSERT INTO t VALUES (1)").await;
        run(&mut sa, "USE chain; CREATE USER lead; CREATE USER member; CREATE USER third WITHOUT LOGIN").await;
        let mut lead = connect_to(port, "lead", ALICE, "chain").await.unwrap();
        let mut member = connect_to(port, "member", BOB, "chain").await.unwrap();

        run(&mut sa, "USE chain; GRANT SELECT ON t TO lead").await;
        assert_eq!(refused(&mut lead, "GRANT SELECT ON t TO member").await.0, 15151, "no grant option");
        run(&mut sa, "USE chain; GRANT SELECT ON t TO lead WITH GRANT OPTION").await;
        run(&mut lead, "GRANT SELECT ON t TO member").await;
        assert_eq!(count(&mut member, "SELECT a FROM t").await, 1);
        assert_eq!(refused(&mut lead, "GRANT INSERT ON t TO member").await.0, 15151, "only what it may grant");
        assert_eq!(refused(&mut lead, "DENY SELECT ON t TO member").await.0, 15151, "DENY takes CONTROL");
        let grantor = "SELECT COUNT(*) FROM sys.database_permissions WHERE grantee_principal_id = USER_ID('member') \
                       AND grantor_principal_id = USER_ID('lead') AND permission_name = 'SELECT'";
        assert_eq!(count(&mut sa, &format!("USE chain; {grantor}")).await, 1);
        run(&mut lead, "REVOKE SELECT ON t FROM member").await;
        assert_eq!(refused(&mut member, "SELECT a FROM t").await.0, 229);
        run(&mut lead, "GRANT SELECT ON t TO member").await;

        // The option taken from a holder that used it: CASCADE or 4611, and nothing changes.
        assert_eq!(refused(&mut sa, "USE chain; REVOKE GRANT OPTION FOR SELECT ON t FROM lead").await.0, 4611);
        assert_eq!(refused(&mut sa, "USE chain; DENY SELECT ON t TO lead").await.0, 4611);
        assert_eq!(count(&mut member, "SELECT a FROM t").await, 1, "nothing changed");
        run(&mut sa, "USE chain; REVOKE GRANT OPTION FOR SELECT ON t FROM lead CASCADE").await;
        assert_eq!(count(&mut lead, "SELECT a FROM t").await, 1, "lead keeps SELECT itself");
        assert_eq!(refused(&mut member, "SELECT a FROM t").await.0, 229, "the grant it made went");
        assert_eq!(refused(&mut lead, "GRANT SELECT ON t TO member").await.0, 15151);
    });
}

/// Server configuration takes ALTER SETTINGS, as a server permission: serveradmin holds it,
/// a grant gives it to any login, and a DENY takes it even from serveradmin.
#[test]
fn alter_settings_decides_who_configures_the_server() {
    with_server(|port, mut sa| async move {
        run(
            &mut sa,
            &format!("CREATE LOGIN tuner WITH PASSWORD = '{ALICE}'; CREATE LOGIN admin WITH PASSWORD = '{BOB}'"),
        )
        .await;
        run(&mut sa, "ALTER SERVER ROLE serveradmin ADD MEMBER admin").await;
        let mut tuner = connect_as(port, "tuner", ALICE).await;
        let mut admin = connect_as(port, "admin", BOB).await;
        let change = "EXEC sp_configure 'backup checksum default', 1";
        assert_eq!(refused(&mut tuner, change).await.0, 15247);
        assert_eq!(refused(&mut tuner, "RECONFIGURE").await.0, 5812);
        run(&mut admin, &format!("{change}; RECONFIGURE")).await;

        run(&mut sa, "GRANT ALTER SETTINGS TO tuner; DENY ALTER SETTINGS TO admin").await;
        run(&mut tuner, &format!("{change}; RECONFIGURE")).await;
        assert_eq!(refused(&mut admin, "RECONFIGURE").await.0, 5812);
        assert_eq!(refused(&mut admin, change).await.0, 15247);
    });
}

/// A module's definition is read only with VIEW DEFINITION on it: a user who may only
/// execute a procedure sees it listed, with NULL for its text in sys.sql_modules,
/// INFORMATION_SCHEMA.ROUTINES and OBJECT_DEFINITION, and sp_helptext has no text for it
/// (15197) — until VIEW DEFINITION is granted.
#[test]
fn definitions_need_view_definition() {
    with_server(|port, mut sa| async move {
        run(&mut sa, &format!("CREATE LOGIN dee WITH PASSWORD = '{ALICE}'")).await;
        run(&mut sa, "CREATE DATABASE ddb").await;
        run(&mut sa, "USE ddb; EXEC ('CREATE PROCEDURE p AS SELECT 1 AS one'); CREATE USER dee FOR LOGIN dee").await;
        run(&mut sa, "USE ddb; GRANT EXECUTE ON p TO dee").await;
        let mut dee = connect_to(port, "dee", ALICE, "ddb").await.unwrap();
        assert_eq!(count(&mut dee, "SELECT COUNT(*) FROM sys.sql_modules WHERE object_id = OBJECT_ID('p')").await, 1);
        let hidden = [
            "SELECT definition FROM sys.sql_modules WHERE object_id = OBJECT_ID('p')",
            "SELECT ROUTINE_DEFINITION FROM INFORMATION_SCHEMA.ROUTINES WHERE ROUTINE_NAME = 'p'",
            "SELECT OBJECT_DEFINITION(OBJECT_ID('p'))",
        ];
        for sql in hidden {
            assert_eq!(text(&mut dee, sql).await, None, "{sql}");
        }
        assert_eq!(refused(&mut dee, "EXEC sp_helptext 'p'").await.0, 15197);
        run(&mut sa, "USE ddb; GRANT VIEW DEFINITION ON p TO dee").await;
        for sql in hidden {
            assert_eq!(text(&mut dee, sql).await.as_deref(), Some("CREATE PROCEDURE p AS SELECT 1 AS one"), "{sql}");
        }
        run(&mut dee, "EXEC sp_helptext 'p'").await;
    });
}
