//! Permissions on a login (`LOGIN::name`) over TDS with tiberius: IMPERSONATE lets its
//! holder EXECUTE AS LOGIN, ALTER lets it alter the login, CONTROL drop it; each shows in
//! sys.server_permissions as class 101 and survives a restart; DENY wins; only a sysadmin
//! grants one on a sysadmin's login; a refused statement changes nothing.

mod common;

use common::tds::{connect_as, count, refused, run, text};
use common::{TestServer, PASSWORD};

const IVY: &str = "Ivy-Pass-123";
const OTHER: &str = "Other-Pass-12";

#[test]
fn impersonate_alter_and_control_on_a_login() {
    let mut server = TestServer::start();
    let port = server.port();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        for login in ["ivy", "target", "boss", "guard"] {
            let password = if login == "ivy" { IVY } else { OTHER };
            run(&mut sa, &format!("CREATE LOGIN {login} WITH PASSWORD = '{password}'")).await;
        }
        run(&mut sa, "ALTER SERVER ROLE sysadmin ADD MEMBER boss; ALTER SERVER ROLE securityadmin ADD MEMBER guard")
            .await;
        let mut ivy = connect_as(port, "ivy", IVY).await;
        assert_eq!(refused(&mut ivy, "EXECUTE AS LOGIN = 'target'").await.0, 15406);
        assert_eq!(count(&mut ivy, "SELECT COUNT(*) FROM sys.server_principals WHERE name = 'target'").await, 0);

        // The statement's own errors.
        assert_eq!(refused(&mut sa, "USE tempdb; GRANT IMPERSONATE ON LOGIN::target TO ivy").await.0, 4621);
        assert_eq!(refused(&mut sa, "USE master; GRANT SELECT ON LOGIN::target TO ivy").await.0, 4606);
        assert_eq!(refused(&mut sa, "GRANT IMPERSONATE ON LOGIN::nobody TO ivy").await.0, 15151);
        let mut guard = connect_as(port, "guard", OTHER).await;
        assert_eq!(refused(&mut guard, "GRANT IMPERSONATE ON LOGIN::boss TO ivy").await.0, 4613, "a sysadmin's login");
        run(&mut guard, "GRANT IMPERSONATE ON LOGIN::target TO ivy").await;

        // IMPERSONATE: EXECUTE AS LOGIN, that login only.
        let row = "SELECT CAST(class AS varchar) + ':' + class_desc + ':' + RTRIM(type) + ':' + permission_name \
                   FROM sys.server_permissions WHERE major_id = SUSER_ID('target')";
        assert_eq!(text(&mut sa, row).await.as_deref(), Some("101:SERVER_PRINCIPAL:IM:IMPERSONATE"));
        run(&mut ivy, "EXECUTE AS LOGIN = 'target'").await;
        assert_eq!(text(&mut ivy, "SELECT SUSER_NAME()").await.as_deref(), Some("target"));
        run(&mut ivy, "REVERT").await;
        assert_eq!(text(&mut ivy, "SELECT SUSER_NAME()").await.as_deref(), Some("ivy"));
        assert_eq!(refused(&mut ivy, "EXECUTE AS LOGIN = 'boss'").await.0, 15406);
        assert_eq!(count(&mut ivy, "SELECT COUNT(*) FROM sys.server_principals WHERE name = 'target'").await, 1);
        assert_eq!(count(&mut ivy, "SELECT COUNT(*) FROM sys.server_principals WHERE name = 'boss'").await, 0);

        // ALTER on the login: ivy may change it; CONTROL: drop it.
        assert_eq!(refused(&mut ivy, "ALTER LOGIN target DISABLE").await.0, 15151);
        run(&mut sa, "GRANT ALTER ON LOGIN::target TO ivy").await;
        run(&mut ivy, "ALTER LOGIN target DISABLE").await;
        assert_eq!(
            count(&mut sa, "SELECT CAST(is_disabled AS int) FROM sys.server_principals WHERE name = 'target'").await,
            1
        );
        run(&mut ivy, "ALTER LOGIN target ENABLE").await;
        assert_eq!(refused(&mut ivy, "DROP LOGIN target").await.0, 15151);
        assert_eq!(refused(&mut ivy, "ALTER LOGIN boss DISABLE").await.0, 15151);

        // DENY wins over a grant on every login.
        run(&mut sa, "GRANT IMPERSONATE ANY LOGIN TO ivy; DENY IMPERSONATE ON LOGIN::target TO ivy").await;
        assert_eq!(refused(&mut ivy, "EXECUTE AS LOGIN = 'target'").await.0, 15406);
        run(&mut sa, "REVOKE IMPERSONATE ON LOGIN::target FROM ivy; REVOKE IMPERSONATE ANY LOGIN FROM ivy").await;
        assert_eq!(refused(&mut ivy, "EXECUTE AS LOGIN = 'target'").await.0, 15406, "revoked");
        run(&mut sa, "GRANT CONTROL ON LOGIN::target TO ivy").await;
    });

    // The rows are kept in master.
    server.restart();
    let port = server.port();
    runtime.block_on(async {
        let mut ivy = connect_as(port, "ivy", IVY).await;
        run(&mut ivy, "EXECUTE AS LOGIN = 'target'; REVERT").await;
        run(&mut ivy, "DROP LOGIN target").await;
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.server_principals WHERE name = 'target'").await, 0);
        assert_eq!(
            count(&mut sa, "SELECT COUNT(*) FROM sys.server_permissions WHERE class = 101").await,
            0,
            "the permissions on it went with it"
        );
    });
}
