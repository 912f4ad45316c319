//! A real SQL Server client (tiberius) against the server started here, over TCP.

use std::sync::Arc;

use tessera_database::{Engine, EngineConfig};
use tessera_server::{serve, ServerConfig};
use tessera_sql::Shared;
use tiberius::{AuthMethod, Client, Config, EncryptionLevel};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::compat::TokioAsyncWriteCompatExt;

const PASSWORD: &str = "Str0ng!pass";

async fn start() -> (u16, tempfile::TempDir, Arc<Engine>) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    let engine = Engine::open(config).unwrap();
    let shared = Shared::new(engine.clone()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(serve(listener, shared, ServerConfig { max_connections: 100, ..ServerConfig::new(PASSWORD) }));
    (port, dir, engine)
}

async fn connect(port: u16, password: &str) -> tiberius::Result<Client<tokio_util::compat::Compat<TcpStream>>> {
    let mut config = Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server("sa", password));
    config.encryption(EncryptionLevel::NotSupported);
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    Client::connect(config, tcp.compat_write()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiberius_logs_in_queries_and_sees_errors() {
    let (port, _dir, _engine) = start().await;

    // A wrong password is error 18456 and nothing else.
    let Err(err) = connect(port, "wrong").await else { panic!("login must fail") };
    assert!(err.to_string().contains("18456") || err.to_string().contains("Login failed"), "{err}");

    let mut client = connect(port, PASSWORD).await.unwrap();
    client
        .execute(
            "create table t (id int primary key, name nvarchar(20), amount decimal(10,2), born date, ok bit, big bigint, f float, g uniqueidentifier, at datetime2(3), v varchar(max))",
            &[],
        )
        .await
        .unwrap();
    let inserted = client
        .execute(
            "insert into t values (1, N'ann', 12.50, '2001-02-03', 1, 9000000000, 2.5, '6F9619FF-8B86-D011-B42D-00C04FC964FF', '2024-01-31 13:45:00.123', 'long text'), (2, null, null, null, null, null, null, null, null, null)",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(inserted.total(), 2);

    // Parameterised: tiberius sends sp_executesql with typed parameters.
    let row = client
        .query("select id, name, amount, born, ok, big, f, at, v from t where id = @P1", &[&1i32])
        .await
        .unwrap()
        .into_row()
        .await
        .unwrap()
        .expect("one row");
    assert_eq!(row.get::<i32, _>(0), Some(1));
    assert_eq!(row.get::<&str, _>(1), Some("ann"));
    assert_eq!(row.get::<tiberius::numeric::Numeric, _>(2).map(|n| n.to_string()), Some("12.50".to_string()));
    assert_eq!(row.get::<bool, _>(4), Some(true));
    assert_eq!(row.get::<i64, _>(5), Some(9_000_000_000));
    assert_eq!(row.get::<f64, _>(6), Some(2.5));
    assert_eq!(row.get::<&str, _>(8), Some("long text"));

    let nulls = client
        .query("select name, amount, born from t where id = @P1", &[&2i32])
        .await
        .unwrap()
        .into_row()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(nulls.get::<&str, _>(0), None);

    // String parameters and several result sets.
    let sets = client
        .query("select count(*) from t where name = @P1; select @P2 as echo", &[&"ann", &"hello"])
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
    assert_eq!(sets.len(), 2);
    assert_eq!(sets[0][0].get::<i32, _>(0), Some(1));
    assert_eq!(sets[1][0].get::<&str, _>(0), Some("hello"));

    // A stored procedure with an OUTPUT parameter and a return code, through EXEC.
    client
        .execute("create procedure twice @x int, @y int output as begin set @y = @x * 2; return 7; end", &[])
        .await
        .unwrap();
    let row = client
        .query("declare @r int, @rc int; exec @rc = twice 21, @r output; select @r, @rc", &[])
        .await
        .unwrap()
        .into_row()
        .await
        .unwrap()
        .unwrap();
    assert_eq!((row.get::<i32, _>(0), row.get::<i32, _>(1)), (Some(42), Some(7)));

    // Transactions.
    client
        .simple_query("begin tran; insert into t (id) values (3); rollback")
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
    client
        .simple_query("begin tran; insert into t (id) values (4); commit")
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
    let ids: Vec<i32> = client
        .simple_query("select id from t order by id")
        .await
        .unwrap()
        .into_first_result()
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<i32, _>(0).unwrap())
        .collect();
    assert_eq!(ids, vec![1, 2, 4]);

    // An error comes back with its number; the connection stays usable.
    let Err(err) = client.execute("insert into t (id) values (1)", &[]).await else { panic!("duplicate key") };
    assert!(err.to_string().contains("2627") || err.to_string().contains("PRIMARY KEY"), "{err}");
    let Err(err) = client.simple_query("select * from nowhere").await else { panic!("expected error 208") };
    assert!(err.to_string().contains("nowhere"), "{err}");
    let one = client.simple_query("select 1").await.unwrap().into_row().await.unwrap().unwrap();
    assert_eq!(one.get::<i32, _>(0), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_input_ends_only_that_connection() {
    let (port, _dir, _engine) = start().await;
    // Garbage before PRELOGIN.
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 16];
    assert!(matches!(s.read(&mut buf).await, Ok(0) | Err(_)), "the server hangs up");
    // A truncated packet, then the client vanishes.
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(&[0x12, 0x01, 0x00, 0x40, 0, 0, 1, 0, 1, 2, 3]).await.unwrap();
    drop(s);
    // An oversized length field.
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(&[0x12, 0x01, 0xFF, 0xFF, 0, 0, 1, 0]).await.unwrap();
    let _ = s.read(&mut buf).await;
    // A real client still gets in.
    let mut client = connect(port, PASSWORD).await.unwrap();
    let row = client.simple_query("select 40 + 2").await.unwrap().into_row().await.unwrap().unwrap();
    assert_eq!(row.get::<i32, _>(0), Some(42));
}

/// tiberius with encryption: the whole connection (Required) and the login only (Off).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiberius_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    let engine = Engine::open(config).unwrap();
    let shared = Shared::new(engine.clone()).unwrap();
    let source = tessera_server::tls::CertificateSource::SelfSigned { dir: dir.path().join("tls") };
    let (tls, cert) = tessera_server::tls::server_config(&source).unwrap();
    assert!(cert.exists());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(serve(listener, shared, ServerConfig { tls: Some(tls), ..ServerConfig::new(PASSWORD) }));

    for level in [EncryptionLevel::Required, EncryptionLevel::Off] {
        let mut config = Config::new();
        config.host("127.0.0.1");
        config.port(port);
        config.authentication(AuthMethod::sql_server("sa", PASSWORD));
        config.encryption(level);
        config.trust_cert();
        let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut client = Client::connect(config, tcp.compat_write()).await.unwrap();
        let rows = client
            .query("select @P1 + 1 as n, replicate('x', 20000) as big", &[&41i32])
            .await
            .unwrap()
            .into_first_result()
            .await
            .unwrap();
        assert_eq!(rows[0].get::<i32, _>("n"), Some(42), "{level:?}");
        assert_eq!(rows[0].get::<&str, _>("big").map(str::len), Some(8000), "{level:?}");
        let Err(e) = client.execute("select 1/0", &[]).await else { panic!("divide by zero") };
        assert!(e.to_string().contains("Divide by zero"), "{e}");
    }

    // A wrong password over TLS is still 18456.
    let mut config = Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server("sa", "nope"));
    config.encryption(EncryptionLevel::Required);
    config.trust_cert();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let Err(err) = Client::connect(config, tcp.compat_write()).await else { panic!("login must fail") };
    assert!(err.to_string().contains("Login failed"), "{err}");

    // The certificate is made once and reused.
    let before = std::fs::read(dir.path().join("tls/tessera.crt")).unwrap();
    tessera_server::tls::server_config(&source).unwrap();
    assert_eq!(before, std::fs::read(dir.path().join("tls/tessera.crt")).unwrap());
}
