//! TDS helpers the tests share: tiberius connections without encryption, and batches
//! that must succeed, must fail, or answer one int.

use tiberius::{AuthMethod, Client, Config, EncryptionLevel};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

pub type Conn = Client<Compat<TcpStream>>;

/// A batch that uses a few milliseconds of CPU or more (1,500 turns of a loop) and
/// answers one int: past the burst of a 1 % CPU cap (0.02 s of 1 % of the cores).
pub const BUSY_LOOP: &str = "DECLARE @i int = 0, @x int = 0; \
     WHILE @i < 1500 BEGIN SET @x = (@x + @i * 7) % 1009; SET @i += 1; END; SELECT @x";

/// A login into its default database.
pub async fn connect_as(port: u16, user: &str, password: &str) -> Conn {
    let mut config = Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server(user, password));
    config.encryption(EncryptionLevel::NotSupported);
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    Client::connect(config, tcp.compat_write()).await.expect("login")
}

/// A login straight into `database`.
pub async fn connect_to(port: u16, user: &str, password: &str, database: &str) -> tiberius::Result<Conn> {
    let mut config = Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.database(database);
    config.authentication(AuthMethod::sql_server(user, password));
    config.encryption(EncryptionLevel::NotSupported);
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    Client::connect(config, tcp.compat_write()).await
}

/// Starts a server, then runs `test` on a current-thread runtime with the server's port and
/// a connection as sa; the server stops when it is done.
pub fn with_server<F: std::future::Future<Output = ()>>(test: impl FnOnce(u16, Conn) -> F) {
    let server = super::TestServer::start();
    let port = server.port();
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let sa = connect_as(port, "sa", super::PASSWORD).await;
        test(port, sa).await;
    });
}

/// Runs `sql`, which must succeed.
pub async fn run(c: &mut Conn, sql: &str) {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_results()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The number and text of the error `sql` must raise.
pub async fn refused(c: &mut Conn, sql: &str) -> (u32, String) {
    let e = match c.simple_query(sql).await {
        Ok(stream) => match stream.into_results().await {
            Ok(_) => panic!("{sql}: no error"),
            Err(e) => e,
        },
        Err(e) => e,
    };
    match e {
        tiberius::error::Error::Server(t) => (t.code(), t.message().to_string()),
        other => panic!("{sql}: expected a server error, got {other:?}"),
    }
}

/// The int in the first column of the first row `sql` answers.
pub async fn count(c: &mut Conn, sql: &str) -> i32 {
    let row =
        c.query(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).into_row().await.unwrap().expect("a row");
    row.get::<i32, _>(0).expect("an int")
}

/// The text in the first column of the first row `sql` answers (None for NULL).
pub async fn text(c: &mut Conn, sql: &str) -> Option<String> {
    let row =
        c.query(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).into_row().await.unwrap().expect("a row");
    row.get::<&str, _>(0).map(str::to_string)
}

/// Polls `query` until it answers `expected` (a guard against a hang, not a timing test).
pub async fn eventually(c: &mut Conn, query: &str, expected: i32) {
    for _ in 0..2_000 {
        if count(c, query).await == expected {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("{query} never answered {expected}");
}
