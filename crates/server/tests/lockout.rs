//! Login lockout and the failed-login throttle, as the tiberius client sees them over TCP:
//! a CHECK_POLICY login locked after five wrong passwords (error 18486, even with the
//! right one), `sa` and CHECK_POLICY = OFF logins never locked, ALTER LOGIN … UNLOCK and
//! CHECK_POLICY = OFF ending a lock, LOGINPROPERTY, the sp_configure options, and an
//! address delayed after many failed logins while another logs in as before.
//!
//! Each scenario connects from its own loopback address (127.0.0.x) so that its failures
//! count toward the throttle of that address only.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use common::{TestServer, PASSWORD};
use tiberius::{AuthMethod, Client, Config, EncryptionLevel};
use tokio::net::{TcpSocket, TcpStream};
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

type Conn = Client<Compat<TcpStream>>;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn source(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

/// Logs in as `user` from the loopback address `from`.
async fn connect_from(from: IpAddr, port: u16, user: &str, password: &str) -> tiberius::Result<Conn> {
    let mut config = Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server(user, password));
    config.encryption(EncryptionLevel::NotSupported);
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    let tcp = socket.connect(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    Client::connect(config, tcp.compat_write()).await
}

/// The error a login attempt fails with: (number, message).
async fn login_error(from: IpAddr, port: u16, user: &str, password: &str) -> (u32, String) {
    match connect_from(from, port, user, password).await {
        Ok(_) => panic!("{user} logged in with '{password}'"),
        Err(tiberius::error::Error::Server(e)) => (e.code(), e.message().to_string()),
        Err(other) => panic!("expected a server error, got {other:?}"),
    }
}

async fn login_ok(from: IpAddr, port: u16, user: &str, password: &str) -> Conn {
    connect_from(from, port, user, password).await.unwrap_or_else(|e| panic!("{user} cannot log in: {e}"))
}

async fn run(c: &mut Conn, sql: &str) {
    c.simple_query(sql).await.unwrap().into_results().await.unwrap();
}

async fn scalar(c: &mut Conn, sql: &str) -> Option<String> {
    let row = c.query(sql, &[]).await.unwrap().into_row().await.unwrap().expect("a row");
    row.get::<&str, _>(0).map(str::to_string)
}

async fn error_number(c: &mut Conn, sql: &str) -> u32 {
    let e = match c.simple_query(sql).await {
        Ok(stream) => stream.into_results().await.err().unwrap_or_else(|| panic!("{sql}: no error")),
        Err(e) => e,
    };
    match e {
        tiberius::error::Error::Server(t) => t.code(),
        other => panic!("expected a server error, got {other:?}"),
    }
}

const LOCKED: &str =
    "Login failed for user 'app' because the account is currently locked out. The system administrator can unlock it.";

#[test]
fn five_wrong_passwords_lock_a_policy_login_until_unlocked() {
    let server = TestServer::start();
    let port = server.port();
    rt().block_on(async {
        let mut sa = login_ok(source(1), port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE LOGIN app WITH PASSWORD = 'App-Pass-1'").await;
        run(&mut sa, "CREATE LOGIN weak WITH PASSWORD = 'weak', CHECK_POLICY = OFF").await;
        run(&mut sa, "CREATE LOGIN other WITH PASSWORD = 'Other-Pass-1'").await;
        assert_eq!(scalar(&mut sa, "SELECT LOGINPROPERTY('app', 'IsLocked')").await.as_deref(), Some("0"));
        assert_eq!(
            scalar(&mut sa, "SELECT LOGINPROPERTY('app', 'LockoutTime')").await.as_deref(),
            Some("1900-01-01 00:00:00.000")
        );

        // Four wrong passwords, then the right one: the count starts over.
        let from = source(2);
        for _ in 0..4 {
            assert_eq!(login_error(from, port, "app", "Wrong-Pass-1").await.0, 18456);
        }
        assert_eq!(scalar(&mut sa, "SELECT LOGINPROPERTY('app', 'BadPasswordCount')").await.as_deref(), Some("4"));
        drop(login_ok(from, port, "app", "App-Pass-1").await);
        assert_eq!(scalar(&mut sa, "SELECT LOGINPROPERTY('app', 'BadPasswordCount')").await.as_deref(), Some("0"));

        // Five in a row lock it: the right password gets 18486 (the fifth still 18456).
        let from = source(3);
        for _ in 0..5 {
            assert_eq!(
                login_error(from, port, "app", "Wrong-Pass-1").await,
                (18456, "Login failed for user 'app'.".to_string())
            );
        }
        assert_eq!(login_error(from, port, "app", "App-Pass-1").await, (18486, LOCKED.to_string()));
        assert_eq!(scalar(&mut sa, "SELECT LOGINPROPERTY('app', 'IsLocked')").await.as_deref(), Some("1"));
        assert_eq!(scalar(&mut sa, "SELECT LOGINPROPERTY('app', 'BadPasswordCount')").await.as_deref(), Some("5"));
        assert_ne!(
            scalar(&mut sa, "SELECT LOGINPROPERTY('app', 'LockoutTime')").await.as_deref(),
            Some("1900-01-01 00:00:00.000")
        );
        assert_eq!(
            scalar(
                &mut sa,
                "SELECT CAST(COUNT(*) AS nvarchar(10)) FROM sys.sql_logins WHERE LOGINPROPERTY(name, 'IsLocked') = 1"
            )
            .await
            .as_deref(),
            Some("1")
        );
        // An unknown login still gets 18456 and nothing that says it does not exist.
        assert_eq!(login_error(from, port, "nobody", "App-Pass-1").await.0, 18456);

        // Another login may not see the lock nor unlock it; a changed password alone
        // does not unlock.
        let mut other = login_ok(source(4), port, "other", "Other-Pass-1").await;
        assert_eq!(scalar(&mut other, "SELECT LOGINPROPERTY('app', 'IsLocked')").await, None);
        assert_eq!(scalar(&mut other, "SELECT LOGINPROPERTY('other', 'IsLocked')").await.as_deref(), Some("0"));
        assert_eq!(error_number(&mut other, "ALTER LOGIN app WITH PASSWORD = 'App-Pass-2' UNLOCK").await, 15151);
        run(&mut sa, "ALTER LOGIN app WITH PASSWORD = 'App-Pass-2'").await;
        assert_eq!(login_error(source(4), port, "app", "App-Pass-2").await.0, 18486);

        // UNLOCK ends it.
        run(&mut sa, "ALTER LOGIN app WITH PASSWORD = 'App-Pass-3' UNLOCK").await;
        assert_eq!(scalar(&mut sa, "SELECT LOGINPROPERTY('app', 'IsLocked')").await.as_deref(), Some("0"));
        drop(login_ok(source(4), port, "app", "App-Pass-3").await);

        // sa and a CHECK_POLICY = OFF login are never locked.
        let from = source(5);
        for _ in 0..6 {
            assert_eq!(login_error(from, port, "sa", "Wrong-Pass-1").await.0, 18456);
        }
        drop(login_ok(from, port, "sa", PASSWORD).await);
        let from = source(6);
        for _ in 0..6 {
            assert_eq!(login_error(from, port, "weak", "wrong").await.0, 18456);
        }
        drop(login_ok(from, port, "weak", "weak").await);
        assert_eq!(scalar(&mut sa, "SELECT LOGINPROPERTY('weak', 'IsLocked')").await.as_deref(), Some("0"));

        // CHECK_POLICY = OFF ends a lock too.
        let from = source(7);
        for _ in 0..5 {
            login_error(from, port, "app", "Wrong-Pass-1").await;
        }
        assert_eq!(login_error(from, port, "app", "App-Pass-3").await.0, 18486);
        run(&mut sa, "ALTER LOGIN app WITH CHECK_POLICY = OFF").await;
        drop(login_ok(from, port, "app", "App-Pass-3").await);
    });
    let log = server.errorlog();
    assert!(log.contains("Error: 18486, Severity: 14, State: 1."), "{log}");
    assert!(log.contains("Reason: Password did not match that for the login provided. The login is now locked out. [CLIENT: 127.0.0.3]"), "{log}");
    assert!(log.contains("Login failed for user 'app'. Reason: The account is currently locked out."), "{log}");
}

#[test]
fn the_lockout_options_of_sp_configure() {
    let server = TestServer::start();
    let port = server.port();
    rt().block_on(async {
        let mut sa = login_ok(source(1), port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE LOGIN app WITH PASSWORD = 'App-Pass-1'").await;
        run(&mut sa, "EXEC sp_configure 'show advanced options', 1; RECONFIGURE").await;
        run(&mut sa, "EXEC sp_configure 'login lockout threshold', 2; RECONFIGURE").await;
        let from = source(2);
        for _ in 0..2 {
            login_error(from, port, "app", "Wrong-Pass-1").await;
        }
        assert_eq!(login_error(from, port, "app", "App-Pass-1").await.0, 18486);
        // Threshold 0: no lockout at all.
        run(&mut sa, "EXEC sp_configure 'login lockout threshold', 0; RECONFIGURE").await;
        drop(login_ok(from, port, "app", "App-Pass-1").await);
        assert_eq!(
            scalar(&mut sa, "SELECT CAST(value_in_use AS nvarchar(10)) FROM sys.configurations WHERE name = 'login lockout duration (min)'").await.as_deref(),
            Some("30")
        );
    });
}

#[test]
fn failed_logins_delay_their_address_only() {
    let server = TestServer::start();
    let port = server.port();
    let noisy = source(9);
    rt().block_on(async {
        for _ in 0..10 {
            assert_eq!(login_error(noisy, port, "nobody", "Wrong-Pass-1").await.0, 18456);
        }
        assert!(!server.errorlog().contains("are throttled"), "ten failures are free");
        // The eleventh attempt waits before its password is checked, then goes ahead.
        drop(login_ok(noisy, port, "sa", PASSWORD).await);
        // Another address logs in without being throttled.
        drop(login_ok(source(1), port, "sa", PASSWORD).await);
    });
    let log = server.errorlog();
    assert!(
        log.contains("Login attempts from 127.0.0.9 are throttled after 10 failed logins: 1 delayed and 0 refused since the last report; this one waits 250 ms."),
        "{log}"
    );
    assert!(!log.contains("Login attempts from 127.0.0.1"), "{log}");
    assert_eq!(log.matches("are throttled").count(), 1, "{log}");
}
