//! Application roles over TDS with tiberius: CREATE/ALTER/DROP APPLICATION ROLE and who
//! may run them; sp_setapprole swaps the session's database identity for the role's (its
//! permissions, public's, and its roles'; guest elsewhere; no USE; no REVERT) and keeps the
//! login; sp_unsetapprole with the cookie gives it back; every misuse gets SQL Server's
//! error and changes nothing.

mod common;

use common::tds::{connect_as, count, refused, run, text, Conn};
use common::{TestServer, PASSWORD};

const ROLE_PASSWORD: &str = "Billing-App-7";
const USER_PASSWORD: &str = "Dana-Pass-12";

/// The cookie sp_setapprole hands out, as a hex literal for sp_unsetapprole.
async fn set_with_cookie(c: &mut Conn, role: &str, password: &str) -> String {
    let sql = format!(
        "DECLARE @cookie varbinary(8000); \
         EXEC sp_setapprole @rolename = '{role}', @password = '{password}', @fCreateCookie = true, @cookie = @cookie OUTPUT; \
         SELECT CONVERT(varchar(max), @cookie, 1)"
    );
    // A SQL batch: tiberius sends `query` through sp_executesql, one level down, where
    // sp_setapprole is refused (15422) as SQL Server refuses it.
    let row = c.simple_query(&sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")).into_row().await.unwrap();
    row.and_then(|r| r.get::<&str, _>(0).map(str::to_string)).expect("a cookie")
}

#[test]
fn an_application_role_replaces_the_user_s_permissions_until_unset() {
    let server = TestServer::start();
    let port = server.port();
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, &format!("CREATE LOGIN dana WITH PASSWORD = '{USER_PASSWORD}'; CREATE DATABASE billing; CREATE DATABASE other"))
            .await;
        run(
            &mut sa,
            "USE billing; CREATE TABLE invoices (id int); INSERT INTO invoices VALUES (1), (2); \
             CREATE TABLE salaries (amount int); INSERT INTO salaries VALUES (100); \
             CREATE TABLE notices (n int); INSERT INTO notices VALUES (9); GRANT SELECT ON notices TO public; \
             CREATE USER dana; GRANT SELECT ON salaries TO dana",
        )
        .await;

        // Creating one takes ALTER ANY APPLICATION ROLE, and a password that meets the policy.
        let mut dana = connect_as(port, "dana", USER_PASSWORD).await;
        run(&mut dana, "USE billing").await;
        let create = format!("CREATE APPLICATION ROLE app WITH PASSWORD = '{ROLE_PASSWORD}'");
        assert_eq!(refused(&mut dana, &create).await.0, 15247);
        assert_eq!(refused(&mut sa, "USE billing; CREATE APPLICATION ROLE app WITH PASSWORD = 'short'").await.0, 15116);
        run(&mut sa, "USE billing; GRANT ALTER ANY APPLICATION ROLE TO dana").await;
        run(&mut dana, &format!("{create}, DEFAULT_SCHEMA = dbo")).await;
        assert_eq!(refused(&mut sa, &format!("USE billing; {create}")).await.0, 15023);
        let row = "SELECT type + ':' + type_desc + ':' + default_schema_name FROM sys.database_principals WHERE name = 'app'";
        assert_eq!(text(&mut sa, &format!("USE billing; {row}")).await.as_deref(), Some("A:APPLICATION_ROLE:dbo"));
        run(&mut sa, "USE billing; GRANT SELECT, INSERT ON invoices TO app; CREATE ROLE readers; ALTER ROLE readers ADD MEMBER app").await;

        // Activated: the role's permissions, public's, and its roles'; not dana's own.
        assert_eq!(count(&mut dana, "SELECT COUNT(*) FROM salaries").await, 1);
        assert_eq!(refused(&mut dana, "SELECT COUNT(*) FROM invoices").await.0, 229);
        assert_eq!(
            refused(&mut dana, "EXEC sp_setapprole 'app', 'Wrong-Pass-99'").await,
            (15161, "Cannot set application role 'app' because it does not exist or the password is incorrect.".into())
        );
        assert_eq!(refused(&mut dana, &format!("EXEC sp_setapprole 'nobody', '{ROLE_PASSWORD}'")).await.0, 15161);
        assert_eq!(refused(&mut dana, &format!("BEGIN TRAN; EXEC sp_setapprole 'app', '{ROLE_PASSWORD}'")).await.0, 15002);
        run(&mut dana, "IF @@TRANCOUNT > 0 ROLLBACK").await;
        assert_eq!(
            refused(&mut dana, &format!("EXEC sp_executesql N'EXEC sp_setapprole ''app'', ''{ROLE_PASSWORD}'''")).await.0,
            15422
        );
        assert_eq!(text(&mut dana, "SELECT USER_NAME()").await.as_deref(), Some("dana"), "nothing was set");
        let cookie = set_with_cookie(&mut dana, "app", ROLE_PASSWORD).await;
        assert!(cookie.starts_with("0x") && cookie.len() == 2 + 2 * 50, "a 50-byte cookie: {cookie}");
        assert_eq!(text(&mut dana, "SELECT USER_NAME()").await.as_deref(), Some("app"));
        assert_eq!(text(&mut dana, "SELECT SUSER_NAME()").await.as_deref(), Some("dana"), "the login stays");
        assert_eq!(count(&mut dana, "SELECT COUNT(*) FROM invoices").await, 2);
        run(&mut dana, "INSERT INTO invoices VALUES (3)").await;
        assert_eq!(refused(&mut dana, "DELETE FROM invoices").await.0, 229);
        assert_eq!(count(&mut dana, "SELECT n FROM notices").await, 9, "public's grant applies");
        assert_eq!(refused(&mut dana, "SELECT COUNT(*) FROM salaries").await.0, 229, "dana's own grant does not");
        assert_eq!(count(&mut dana, "SELECT IS_MEMBER('readers')").await, 1);

        // Pinned to its database; guest elsewhere; no REVERT; no second role.
        assert_eq!(refused(&mut dana, "USE other").await.0, 505);
        assert_eq!(refused(&mut dana, "SELECT COUNT(*) FROM other.sys.tables").await.0, 916, "other has no guest");
        assert_eq!(count(&mut dana, "SELECT COUNT(*) FROM master.sys.databases WHERE name = 'master'").await, 1, "master's guest");
        assert_eq!(refused(&mut dana, "REVERT").await.0, 15357);
        assert_eq!(refused(&mut dana, &format!("EXEC sp_setapprole 'app', '{ROLE_PASSWORD}'")).await.0, 2762);
        assert_eq!(refused(&mut dana, "EXEC sp_unsetapprole 0x00").await.0, 15592);
        assert_eq!(text(&mut dana, "SELECT USER_NAME()").await.as_deref(), Some("app"), "a wrong cookie changes nothing");

        // Unset with the cookie: dana again.
        run(&mut dana, &format!("EXEC sp_unsetapprole {cookie}")).await;
        assert_eq!(text(&mut dana, "SELECT USER_NAME()").await.as_deref(), Some("dana"));
        assert_eq!(count(&mut dana, "SELECT COUNT(*) FROM salaries").await, 1);
        assert_eq!(refused(&mut dana, "SELECT COUNT(*) FROM invoices").await.0, 229);
        assert_eq!(refused(&mut dana, &format!("EXEC sp_unsetapprole {cookie}")).await.0, 15592, "only once");

        // Without a cookie it lasts for the connection.
        let mut kept = connect_as(port, "dana", USER_PASSWORD).await;
        run(&mut kept, &format!("USE billing; EXEC sp_setapprole 'app', '{ROLE_PASSWORD}'")).await;
        assert_eq!(refused(&mut kept, "EXEC sp_unsetapprole 0x01").await.0, 15592);
        assert_eq!(text(&mut kept, "SELECT USER_NAME()").await.as_deref(), Some("app"));

        // ALTER: renamed, a new password; DROP: a session still in it is told so.
        run(&mut sa, "USE billing; ALTER APPLICATION ROLE app WITH NAME = invoicing, PASSWORD = 'Invoicing-App-8'").await;
        assert_eq!(text(&mut kept, "SELECT USER_NAME()").await.as_deref(), Some("invoicing"), "the same principal");
        let mut fresh = connect_as(port, "dana", USER_PASSWORD).await;
        assert_eq!(refused(&mut fresh, &format!("USE billing; EXEC sp_setapprole 'invoicing', '{ROLE_PASSWORD}'")).await.0, 15161);
        run(&mut fresh, "EXEC sp_setapprole 'invoicing', 'Invoicing-App-8'").await;
        assert_eq!(count(&mut fresh, "SELECT COUNT(*) FROM invoices").await, 3);
        run(&mut sa, "USE billing; REVOKE ALTER ANY APPLICATION ROLE FROM dana").await;
        assert_eq!(refused(&mut dana, "USE billing; DROP APPLICATION ROLE invoicing").await.0, 15151);
        run(&mut sa, "USE billing; DROP APPLICATION ROLE invoicing").await;
        assert_eq!(refused(&mut kept, "SELECT COUNT(*) FROM invoices").await.0, 15356);
        assert_eq!(count(&mut sa, "USE billing; SELECT COUNT(*) FROM sys.database_permissions WHERE grantee_principal_id NOT IN (SELECT principal_id FROM sys.database_principals)").await, 0, "its grants went with it");
    });
}
