//! The server as the tiberius client sees it, over real TCP: login (plaintext, TLS,
//! login-only TLS), a wrong password, every data type round trip, parameterised queries
//! (sp_executesql), a procedure with an OUTPUT parameter and a return status, transactions,
//! errors with their numbers, and malformed packets that end only their own connection.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{TestServer, PASSWORD};
use tiberius::numeric::Numeric;
use tiberius::time::{Date, DateTime, DateTime2, SmallDateTime, Time};
use tiberius::{AuthMethod, Client, ColumnData, Config, EncryptionLevel, ToSql, Uuid};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

type Conn = Client<Compat<TcpStream>>;

async fn connect_as(port: u16, user: &str, password: &str, level: EncryptionLevel) -> tiberius::Result<Conn> {
    let mut config = Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server(user, password));
    config.encryption(level);
    config.trust_cert();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    tcp.set_nodelay(true)?;
    Client::connect(config, tcp.compat_write()).await
}

async fn connect(port: u16) -> Conn {
    connect_as(port, "sa", PASSWORD, EncryptionLevel::NotSupported).await.expect("login")
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

async fn scalar_i32(c: &mut Conn, sql: &str) -> i32 {
    let row = c.query(sql, &[]).await.unwrap().into_row().await.unwrap().expect("a row");
    row.get::<i32, _>(0).expect("an int")
}

/// Runs `sql` and returns the number of the error it must raise (tiberius reports it from
/// the call or from reading the results).
async fn error_number(c: &mut Conn, sql: &str) -> u32 {
    let e = match c.simple_query(sql).await {
        Ok(stream) => match stream.into_results().await {
            Ok(_) => panic!("{sql}: no error"),
            Err(e) => e,
        },
        Err(e) => e,
    };
    server_error(e).0
}

fn server_error(e: tiberius::error::Error) -> (u32, String) {
    match e {
        tiberius::error::Error::Server(t) => (t.code(), t.message().to_string()),
        other => panic!("expected a server error, got {other:?}"),
    }
}

#[test]
fn login_query_and_errors() {
    let server = TestServer::start();
    rt().block_on(async {
        let mut c = connect(server.port()).await;
        assert_eq!(scalar_i32(&mut c, "SELECT 1 + 1").await, 2);
        let row = c.query("SELECT DB_NAME() AS db, @@TRANCOUNT AS tc", &[]).await.unwrap().into_row().await.unwrap().unwrap();
        assert_eq!(row.get::<&str, _>("db"), Some("master"));

        // An error carries its number; the connection goes on.
        assert_eq!(error_number(&mut c, "SELECT * FROM no_such_table").await, 208);
        assert_eq!(error_number(&mut c, "SELECT 1/0").await, 8134);
        assert_eq!(error_number(&mut c, "SELECT 1 +").await, 102);
        let e = match c.query("SELECT * FROM no_such_table WHERE a = @P1", &[&1i32]).await {
            Ok(s) => s.into_results().await.err().unwrap(),
            Err(e) => e,
        };
        assert_eq!(server_error(e).0, 208);
        assert_eq!(scalar_i32(&mut c, "SELECT 3").await, 3);

        // Several result sets and row counts in one batch.
        let results = c
            .simple_query("CREATE TABLE m (a int); INSERT INTO m VALUES (1),(2); SELECT a FROM m ORDER BY a; SELECT COUNT(*) FROM m")
            .await
            .unwrap()
            .into_results()
            .await
            .unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].len(), 2);
        let r = c.execute("INSERT INTO m VALUES (3),(4),(5)", &[]).await.unwrap();
        assert_eq!(r.total(), 3);

        // A large result spans many packets.
        let rows = c
            .simple_query("DECLARE @i int = 0; DECLARE @t TABLE (i int, s varchar(100)); WHILE @i < 3000 BEGIN INSERT INTO @t VALUES (@i, REPLICATE('x', 100)); SET @i += 1; END; SELECT i, s FROM @t ORDER BY i")
            .await
            .unwrap()
            .into_first_result()
            .await
            .unwrap();
        assert_eq!(rows.len(), 3000);
        assert_eq!(rows[2999].get::<i32, _>(0), Some(2999));

        // Wrong password: 18456, nothing else.
        let Err(e) = connect_as(server.port(), "sa", "wrong", EncryptionLevel::NotSupported).await else {
            panic!("login must fail")
        };
        let (code, msg) = server_error(e);
        assert_eq!(code, 18456);
        assert_eq!(msg, "Login failed for user 'sa'.");
        let e = connect_as(server.port(), "nobody", PASSWORD, EncryptionLevel::NotSupported).await.err().unwrap();
        assert_eq!(server_error(e), (18456, "Login failed for user 'nobody'.".to_string()));
    });
    assert!(server.errorlog().contains("Login failed for user 'sa'."));
}

/// A date/time value the test binds as a parameter (tiberius has no ToSql for its raw
/// time types without the chrono/time features).
struct Raw(ColumnData<'static>);

impl ToSql for Raw {
    fn to_sql(&self) -> ColumnData<'_> {
        self.0.clone()
    }
}

const ALL_TYPES: &str = "CREATE TABLE all_types (
    id int NOT NULL PRIMARY KEY, b bit, ti tinyint, si smallint, i int, bi bigint, r real, f float,
    d decimal(18,4), n numeric(38,10), m money, sm smallmoney,
    c char(5), vc varchar(20), vcm varchar(max), nc nchar(5), nvc nvarchar(20), nvcm nvarchar(max),
    bn binary(4), vb varbinary(10), vbm varbinary(max),
    dt date, tm time(7), dtm datetime, sdt smalldatetime, dt2 datetime2(3), g uniqueidentifier)";

#[test]
fn every_type_round_trips() {
    let server = TestServer::start();
    rt().block_on(async {
        let mut c = connect(server.port()).await;
        c.simple_query(ALL_TYPES).await.unwrap().into_results().await.unwrap();
        // Row 1 from literals.
        c.simple_query(
            "INSERT INTO all_types VALUES (1, 1, 255, -32768, -2147483648, 9223372036854775807, 1.5, -2.25e100,
             12345678901234.5678, -1234567890123456789012345678.0123456789, -922337203685477.5808, 214748.3647,
             'ab', 'caf\u{e9} \u{20ac}', REPLICATE(CAST('y' AS varchar(max)), 3000), N'\u{4e2d}', N'\u{65e5}\u{672c}\u{8a9e}', REPLICATE(CAST(N'\u{e9}' AS nvarchar(max)), 1000),
             0x01020304, 0xDEADBEEF, 0x00FF,
             '2024-02-29', '13:45:07.1234567', '2024-02-29 13:45:07.997', '2024-02-29 13:45:00', '2024-02-29 13:45:07.123',
             '6F9619FF-8B86-D011-B42D-00C04FC964FF')",
        )
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
        // Row 2: the same values as parameters (sp_executesql).
        let vcm = "y".repeat(3000);
        let nvcm = "\u{e9}".repeat(1000);
        let guid = Uuid::parse_str("6F9619FF-8B86-D011-B42D-00C04FC964FF").unwrap();
        let date = 738_944u32; // 2024-02-29
        let params: Vec<Box<dyn ToSql>> = vec![
            Box::new(2i32),
            Box::new(true),
            Box::new(255u8),
            Box::new(-32768i16),
            Box::new(i32::MIN),
            Box::new(i64::MAX),
            Box::new(1.5f32),
            Box::new(-2.25e100f64),
            Box::new(Numeric::new_with_scale(123_456_789_012_345_678, 4)),
            Box::new(Numeric::new_with_scale(-12_345_678_901_234_567_890_123_456_780_123_456_789, 10)),
            Box::new(Numeric::new_with_scale(-9_223_372_036_854_775_808, 4)),
            Box::new(Numeric::new_with_scale(2_147_483_647, 4)),
            Box::new("ab"),
            Box::new("caf\u{e9} \u{20ac}"),
            Box::new(vcm.clone()),
            Box::new("\u{4e2d}"),
            Box::new("\u{65e5}\u{672c}\u{8a9e}"),
            Box::new(nvcm.clone()),
            Box::new(vec![1u8, 2, 3, 4]),
            Box::new(vec![0xDEu8, 0xAD, 0xBE, 0xEF]),
            Box::new(vec![0u8, 0xFF]),
            Box::new(Raw(ColumnData::Date(Some(Date::new(date))))),
            Box::new(Raw(ColumnData::Time(Some(Time::new(495_071_234_567, 7))))),
            Box::new(Raw(ColumnData::DateTime(Some(DateTime::new(45_349, 14_852_399))))),
            Box::new(Raw(ColumnData::SmallDateTime(Some(SmallDateTime::new(45_349, 825))))),
            Box::new(Raw(ColumnData::DateTime2(Some(DateTime2::new(Date::new(date), Time::new(49_507_123, 3)))))),
            Box::new(guid),
        ];
        let refs: Vec<&dyn ToSql> = params.iter().map(|b| b.as_ref()).collect();
        let placeholders: Vec<String> = (1..=refs.len()).map(|i| format!("@P{i}")).collect();
        let sql = format!("INSERT INTO all_types VALUES ({})", placeholders.join(", "));
        let r = c.execute(sql, &refs).await.unwrap();
        assert_eq!(r.total(), 1);
        // Row 3: NULLs.
        c.simple_query("INSERT INTO all_types (id) VALUES (3)").await.unwrap().into_results().await.unwrap();

        let rows = c.simple_query("SELECT * FROM all_types ORDER BY id").await.unwrap().into_first_result().await.unwrap();
        assert_eq!(rows.len(), 3);
        let cells: Vec<Vec<ColumnData<'static>>> = rows.into_iter().map(|r| r.into_iter().collect()).collect();
        assert_eq!(cells[0][1..], cells[1][1..], "literal and parameter rows differ");
        let expect = [
            ColumnData::I32(Some(1)),
            ColumnData::Bit(Some(true)),
            ColumnData::U8(Some(255)),
            ColumnData::I16(Some(-32768)),
            ColumnData::I32(Some(i32::MIN)),
            ColumnData::I64(Some(i64::MAX)),
            ColumnData::F32(Some(1.5)),
            ColumnData::F64(Some(-2.25e100)),
        ];
        assert_eq!(cells[0][..8], expect);
        let s = |i: usize| match &cells[0][i] {
            ColumnData::String(Some(s)) => s.to_string(),
            other => panic!("column {i}: {other:?}"),
        };
        assert_eq!(s(12), "ab   ");
        assert_eq!(s(13), "caf\u{e9} \u{20ac}");
        assert_eq!(s(14), vcm);
        assert_eq!(s(15), "\u{4e2d}    ");
        assert_eq!(s(16), "\u{65e5}\u{672c}\u{8a9e}");
        assert_eq!(s(17), nvcm);
        match &cells[0][8] {
            ColumnData::Numeric(Some(n)) => assert_eq!((n.value(), n.scale()), (123_456_789_012_345_678, 4)),
            other => panic!("{other:?}"),
        }
        // tiberius reads money as a float.
        assert_eq!(cells[0][10], ColumnData::F64(Some(-922_337_203_685_477.6)));
        assert_eq!(cells[0][11], ColumnData::F64(Some(214_748.364_7)));
        assert_eq!(cells[0][18], ColumnData::Binary(Some(vec![1u8, 2, 3, 4].into())));
        assert_eq!(cells[0][20], ColumnData::Binary(Some(vec![0u8, 0xFF].into())));
        assert_eq!(cells[0][21], ColumnData::Date(Some(Date::new(date))));
        match &cells[0][22] {
            ColumnData::Time(Some(t)) => assert_eq!((t.increments(), t.scale()), (495_071_234_567, 7)),
            other => panic!("{other:?}"),
        }
        assert_eq!(cells[0][23], ColumnData::DateTime(Some(DateTime::new(45_349, 14_852_399))));
        assert_eq!(cells[0][24], ColumnData::SmallDateTime(Some(SmallDateTime::new(45_349, 825))));
        assert_eq!(cells[0][26], ColumnData::Guid(Some(guid)));
        // Row 3: every column but the key is NULL.
        for (i, v) in cells[2].iter().enumerate().skip(1) {
            let is_null = matches!(
                v,
                ColumnData::Bit(None)
                    | ColumnData::U8(None)
                    | ColumnData::I16(None)
                    | ColumnData::I32(None)
                    | ColumnData::I64(None)
                    | ColumnData::F32(None)
                    | ColumnData::F64(None)
                    | ColumnData::Numeric(None)
                    | ColumnData::String(None)
                    | ColumnData::Binary(None)
                    | ColumnData::Date(None)
                    | ColumnData::Time(None)
                    | ColumnData::DateTime(None)
                    | ColumnData::SmallDateTime(None)
                    | ColumnData::DateTime2(None)
                    | ColumnData::Guid(None)
            );
            assert!(is_null, "column {i} of the NULL row: {v:?}");
        }

        // Parameterised queries, NULL parameters included.
        let row = c
            .query("SELECT @P1 + 1 AS a, @P2 AS b, @P3 AS c", &[&41i32, &"x\u{e9}", &Option::<i32>::None])
            .await
            .unwrap()
            .into_row()
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.get::<i32, _>("a"), Some(42));
        assert_eq!(row.get::<&str, _>("b"), Some("x\u{e9}"));
        assert_eq!(row.get::<i32, _>("c"), None);
        let row = c.query("SELECT COUNT(*) FROM all_types WHERE id > @P1", &[&1i32]).await.unwrap().into_row().await.unwrap().unwrap();
        assert_eq!(row.get::<i32, _>(0), Some(2));
    });
}

#[test]
fn procedures_and_transactions() {
    let server = TestServer::start();
    rt().block_on(async {
        let mut c = connect(server.port()).await;
        c.simple_query("CREATE TABLE acct (id int PRIMARY KEY, bal int)").await.unwrap().into_results().await.unwrap();
        c.simple_query(
            "CREATE PROCEDURE double_it @a int, @b int OUTPUT AS BEGIN SET NOCOUNT ON; SET @b = @a * 2; SELECT @a AS a; RETURN 7 END",
        )
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
        let results = c
            .simple_query("DECLARE @o int, @rc int; EXEC @rc = double_it 21, @o OUTPUT; SELECT @o AS o, @rc AS rc")
            .await
            .unwrap()
            .into_results()
            .await
            .unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0][0].get::<i32, _>("a"), Some(21));
        assert_eq!(results[1][0].get::<i32, _>("o"), Some(42));
        assert_eq!(results[1][0].get::<i32, _>("rc"), Some(7));

        // Rollback undoes, commit keeps; @@TRANCOUNT follows.
        c.simple_query("BEGIN TRAN; INSERT INTO acct VALUES (1, 10)").await.unwrap().into_results().await.unwrap();
        assert_eq!(scalar_i32(&mut c, "SELECT @@TRANCOUNT").await, 1);
        c.simple_query("ROLLBACK").await.unwrap().into_results().await.unwrap();
        assert_eq!(scalar_i32(&mut c, "SELECT COUNT(*) FROM acct").await, 0);
        c.simple_query("BEGIN TRAN").await.unwrap().into_results().await.unwrap();
        c.execute("INSERT INTO acct VALUES (@P1, @P2)", &[&2i32, &20i32]).await.unwrap();
        c.simple_query("COMMIT").await.unwrap().into_results().await.unwrap();
        assert_eq!(scalar_i32(&mut c, "SELECT @@TRANCOUNT").await, 0);
        assert_eq!(scalar_i32(&mut c, "SELECT SUM(bal) FROM acct").await, 20);

        // A client that vanishes inside a transaction: its transaction is rolled back.
        let mut other = connect(server.port()).await;
        other.simple_query("BEGIN TRAN; INSERT INTO acct VALUES (3, 30)").await.unwrap().into_results().await.unwrap();
        drop(other);
        let mut rows = 0;
        for _ in 0..50 {
            rows = scalar_i32(&mut c, "SELECT COUNT(*) FROM acct").await;
            if rows == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(rows, 1);
    });
}

#[test]
fn tls_full_and_login_only() {
    let server = TestServer::start();
    rt().block_on(async {
        for level in [EncryptionLevel::Required, EncryptionLevel::On, EncryptionLevel::Off] {
            let mut c =
                connect_as(server.port(), "sa", PASSWORD, level).await.unwrap_or_else(|e| panic!("{level:?}: {e}"));
            assert_eq!(scalar_i32(&mut c, "SELECT 40 + 2").await, 42, "{level:?}");
            let rows = c
                .query("SELECT REPLICATE(CAST('z' AS varchar(max)), @P1) AS s", &[&100_000i32])
                .await
                .unwrap()
                .into_first_result()
                .await
                .unwrap();
            assert_eq!(rows[0].get::<&str, _>(0).map(str::len), Some(100_000), "{level:?}");
        }
        let e = connect_as(server.port(), "sa", "bad", EncryptionLevel::Required).await.err().unwrap();
        assert_eq!(server_error(e).0, 18456);
    });
    assert!(server.dir.path().join("data").join("tls").join("cert.pem").exists());
}

/// Sends raw bytes and waits for the server to close the connection.
fn expect_closed(port: u16, bytes: &[u8], shutdown_write: bool) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    if shutdown_write {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("server did not close the connection: {e}"),
        }
    }
}

fn send(s: &mut std::net::TcpStream, kind: u8, payload: &[u8]) {
    let mut out = bytes::BytesMut::new();
    let mut id = 1;
    tessera_server::packet::frame(kind, payload, 4096, true, &mut id, &mut out);
    s.write_all(&out).unwrap();
}

/// Reads one whole response message (payload only).
fn recv(s: &mut std::net::TcpStream) -> Vec<u8> {
    let mut payload = Vec::new();
    loop {
        let mut h = [0u8; 8];
        s.read_exact(&mut h).unwrap();
        let len = usize::from(u16::from_be_bytes([h[2], h[3]])) - 8;
        let start = payload.len();
        payload.resize(start + len, 0);
        s.read_exact(&mut payload[start..]).unwrap();
        if h[1] & 1 != 0 {
            return payload;
        }
    }
}

/// A SQL batch payload: ALL_HEADERS (transaction descriptor 0) and UCS-2 text.
fn batch(text: &str) -> Vec<u8> {
    let mut p = vec![22, 0, 0, 0, 18, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
    p.extend(text.encode_utf16().flat_map(|u| u.to_le_bytes()));
    p
}

fn raw_login(port: u16) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // PRELOGIN: VERSION and ENCRYPTION = NOT_SUP.
    let pre = [0u8, 0, 11, 0, 6, 1, 0, 17, 0, 1, 0xFF, 16, 0, 0, 0, 0, 0, 2];
    send(&mut s, 0x12, &pre);
    let reply = recv(&mut s);
    assert!(reply.len() > 10);
    send(&mut s, 0x10, &tessera_server::login7::build("sa", PASSWORD, "master"));
    let ack = recv(&mut s);
    assert!(ack.contains(&0xAD), "no LOGINACK");
    s
}

fn raw_logged_in(port: u16) {
    // An RPC whose parameter is cut short: that request fails (8009), the connection stays.
    let mut s = raw_login(port);
    let mut rpc = vec![22, 0, 0, 0, 18, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
    rpc.extend_from_slice(&[0xFF, 0xFF, 10, 0, 0, 0, 0, 0, 0xE7, 0x40]);
    send(&mut s, 0x03, &rpc);
    let resp = recv(&mut s);
    assert_eq!(resp[0], 0xAA, "an ERROR token");
    assert_eq!(i32::from_le_bytes([resp[3], resp[4], resp[5], resp[6]]), 8009);
    send(&mut s, 0x01, &batch("SELECT 7"));
    let resp = recv(&mut s);
    assert_eq!(resp[0], 0x81, "COLMETADATA after the failed request");
    // A SQL batch with an odd number of text bytes: error, the connection stays.
    let mut odd = batch("SELECT 1");
    odd.push(0);
    send(&mut s, 0x01, &odd);
    assert_eq!(recv(&mut s)[0], 0xAA);
    // A BULK_LOAD no INSERT BULK announced: error 4002 (the TDS stream is incorrect; 8009
    // is for RPC requests), the connection stays. An INSERT
    // BULK naming a column the table lacks is 207 and announces nothing.
    send(&mut s, 0x07, &[0x81, 0, 0]);
    let resp = recv(&mut s);
    assert_eq!((resp[0], i32::from_le_bytes([resp[3], resp[4], resp[5], resp[6]])), (0xAA, 4002));
    send(&mut s, 0x01, &batch("CREATE TABLE bulk_probe (a int)"));
    recv(&mut s);
    send(&mut s, 0x01, &batch("INSERT BULK bulk_probe ([a] int, [b] int)"));
    let resp = recv(&mut s);
    assert_eq!((resp[0], i32::from_le_bytes([resp[3], resp[4], resp[5], resp[6]])), (0xAA, 207));
    send(&mut s, 0x07, &[0x81, 0, 0]);
    let resp = recv(&mut s);
    assert_eq!((resp[0], i32::from_le_bytes([resp[3], resp[4], resp[5], resp[6]])), (0xAA, 4002));
    // An unknown packet type after login ends the connection.
    let mut s2 = raw_login(port);
    send(&mut s2, 0x55, b"junk");
    let mut buf = [0u8; 64];
    assert!(matches!(s2.read(&mut buf), Ok(0) | Err(_)));
    // An attention while idle is acknowledged with DONE(ATTN).
    send(&mut s, 0x06, &[]);
    let resp = recv(&mut s);
    assert_eq!(resp[0], 0xFD);
    assert_eq!(u16::from_le_bytes([resp[1], resp[2]]) & 0x20, 0x20);
    send(&mut s, 0x01, &batch("SELECT 8"));
    assert_eq!(recv(&mut s)[0], 0x81);
    // A request and the Attention that cancels it, arriving together (read in one go):
    // the request is cancelled, not run for ten minutes (the read timeout is 10 s), and
    // the Attention is acknowledged with DONE(ATTN).
    let mut both = bytes::BytesMut::new();
    tessera_server::packet::frame(0x01, &batch("WAITFOR DELAY '00:10:00'"), 4096, true, &mut 1, &mut both);
    tessera_server::packet::frame(0x06, &[], 4096, true, &mut 1, &mut both);
    s.write_all(&both).unwrap();
    let acknowledged = (0..3).any(|_| {
        let resp = recv(&mut s);
        resp.len() >= 3 && resp[0] == 0xFD && u16::from_le_bytes([resp[1], resp[2]]) & 0x20 != 0
    });
    assert!(acknowledged, "no DONE(ATTN)");
    send(&mut s, 0x01, &batch("SELECT 9"));
    assert_eq!(recv(&mut s)[0], 0x81);
}

#[test]
fn malformed_packets_end_only_their_connection() {
    let server = TestServer::start();
    let port = server.port();
    rt().block_on(async {
        // A healthy session stays up throughout.
        let mut keeper = connect(port).await;

        // Garbage before PRELOGIN.
        expect_closed(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", false);
        // A packet length below the header size.
        expect_closed(port, &[0x12, 0x01, 0x00, 0x04, 0, 0, 0, 0], false);
        // A truncated packet: the header promises 100 bytes, 20 arrive, then EOF.
        let mut t = vec![0x12, 0x01, 0x00, 100, 0, 0, 0, 0];
        t.extend_from_slice(&[0u8; 12]);
        expect_closed(port, &t, true);
        // An oversized packet length (the limit is 32768).
        expect_closed(port, &[0x12, 0x01, 0xFF, 0xFF, 0, 0, 0, 0], false);
        // A PRELOGIN whose option table points outside the message.
        expect_closed(port, &[0x12, 0x01, 0x00, 0x0E, 0, 0, 0, 0, 0x00, 0x10, 0x00, 0x00, 0x06, 0xFF], false);
        // A message that never ends (no EOM) and grows past the pre-login limit.
        let mut flood = Vec::new();
        for _ in 0..40 {
            flood.extend_from_slice(&[0x12, 0x00, 0x10, 0x00, 0, 0, 0, 0]);
            flood.extend_from_slice(&[0u8; 4096 - 8]);
        }
        expect_closed(port, &flood, false);

        // Logged-in clients sending malformed requests.
        raw_logged_in(port);

        assert_eq!(scalar_i32(&mut keeper, "SELECT 5").await, 5);
        let mut fresh = connect(port).await;
        assert_eq!(scalar_i32(&mut fresh, "SELECT 6").await, 6);
    });
}

/// Bulk load as tiberius sends it (INSERT BULK, then one BULK_LOAD message): 10,000 rows in
/// one transaction; a duplicate key loses the whole load; a missing table is 208. (No date
/// column: tiberius 0.12 writes a stray length byte into DATE's TYPE_INFO, which SQL Server
/// rejects as well — tiberius issue #373.)
#[test]
fn bulk_load() {
    let server = TestServer::start();
    rt().block_on(async {
        let mut c = connect(server.port()).await;
        c.simple_query(
            "create table loaded (id int primary key, name nvarchar(40) not null, amount decimal(12,2) null, big bigint null, flag bit null, note varchar(max) null)",
        )
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
        let mut load = c.bulk_insert("loaded").await.unwrap();
        for i in 0..10_000i32 {
            let mut row = tiberius::TokenRow::new();
            row.push(ColumnData::I32(Some(i)));
            row.push(ColumnData::String(Some(format!("name {i}").into())));
            row.push(if i % 7 == 0 { ColumnData::Numeric(None) } else { ColumnData::Numeric(Some(Numeric::new_with_scale(i as i128 * 101, 2))) });
            row.push(ColumnData::I64(Some(i as i64 * 1_000_000_007)));
            row.push(ColumnData::Bit(Some(i % 2 == 0)));
            row.push(ColumnData::String(if i % 3 == 0 { None } else { Some("x".repeat(i as usize % 50).into()) }));
            load.send(row).await.unwrap();
        }
        let result = load.finalize().await.unwrap();
        assert_eq!(result.total(), 10_000);
        assert_eq!(scalar_i32(&mut c, "select count(*) from loaded").await, 10_000);
        assert_eq!(scalar_i32(&mut c, "select count(*) from loaded where amount is null").await, 1_429);
        assert_eq!(scalar_i32(&mut c, "select count(*) from loaded where note is null").await, 3_334);
        let row = c
            .query("select name, amount, datalength(note) from loaded where id = 4321", &[])
            .await
            .unwrap()
            .into_row()
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.get::<&str, _>(0), Some("name 4321"));
        assert_eq!(row.get::<Numeric, _>(1).map(|n| n.value()), Some(4321 * 101));
        assert_eq!(row.get::<i64, _>(2), Some(4321 % 50));
        assert_eq!(scalar_i32(&mut c, "select count(*) from loaded where big = id * cast(1000000007 as bigint)").await, 10_000);

        // A duplicate key fails the load: none of its rows stay.
        let mut load = c.bulk_insert("loaded").await.unwrap();
        for i in [20_000i32, 20_001, 5] {
            let mut row = tiberius::TokenRow::new();
            row.push(ColumnData::I32(Some(i)));
            row.push(ColumnData::String(Some("dup".into())));
            row.push(ColumnData::Numeric(None));
            row.push(ColumnData::I64(None));
            row.push(ColumnData::Bit(None));
            row.push(ColumnData::String(None));
            load.send(row).await.unwrap();
        }
        let Err(e) = load.finalize().await else { panic!("a duplicate key must fail the load") };
        assert_eq!(server_error(e).0, 2627);
        assert_eq!(scalar_i32(&mut c, "select count(*) from loaded").await, 10_000);

        // The connection goes on; a missing table is reported when the load is announced.
        let Err(e) = c.bulk_insert("no_such_table").await else { panic!("missing table") };
        assert_eq!(server_error(e).0, 208);
        assert_eq!(scalar_i32(&mut c, "select count(*) from loaded where name = 'dup'").await, 0);
    });
}

/// Many idle sessions cost little and block nobody; a client that stops reading a large
/// result stalls only itself.
#[test]
fn idle_crowds_and_slow_readers_do_not_stall_others() {
    let server = TestServer::start();
    let port = server.port();
    rt().block_on(async {
        let mut c = connect(port).await;
        let fill = "CREATE TABLE hundred (n int); DECLARE @i int = 0; WHILE @i < 100 BEGIN INSERT hundred VALUES (@i); SET @i += 1 END";
        c.simple_query(fill).await.unwrap().into_results().await.unwrap();
    });
    let idle: Vec<std::net::TcpStream> = (0..500).map(|_| raw_login(port)).collect();

    // A reader that never reads: its result (~40 MB) backs up in TCP buffers and the
    // server's bounded queue, not in server memory, and stalls only its own request.
    let mut stalled = raw_login(port);
    send(
        &mut stalled,
        0x01,
        &batch("SELECT TOP 5000 REPLICATE(CONVERT(varchar(max), 'x'), 8000) FROM hundred a CROSS JOIN hundred b"),
    );

    rt().block_on(async {
        let mut c = connect(port).await;
        for i in 0..20 {
            assert_eq!(scalar_i32(&mut c, &format!("SELECT {i}")).await, i);
        }
        let sessions = scalar_i32(&mut c, "SELECT count(*) FROM sys.dm_exec_sessions").await;
        assert!(sessions >= 502, "{sessions} sessions");
    });
    drop(stalled);
    drop(idle);
    rt().block_on(async {
        let mut c = connect(port).await;
        // The closed sessions go away (their cleanup runs on blocking threads).
        let mut left = i32::MAX;
        for _ in 0..100 {
            left = scalar_i32(&mut c, "SELECT count(*) FROM sys.dm_exec_sessions").await;
            if left <= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(left <= 2, "{left} sessions left");
    });
}

/// ORDER follows COLMETADATA when the rows are sorted by result columns.
#[test]
fn order_token() {
    let server = TestServer::start();
    let mut s = raw_login(server.port());
    send(&mut s, 0x01, &batch("CREATE TABLE o (a int, b int, c int); INSERT o VALUES (1, 2, 3), (4, 5, 6)"));
    recv(&mut s);
    let has_order = |reply: &[u8], columns: &[u16]| {
        let mut token = vec![0xA9];
        token.extend_from_slice(&((columns.len() * 2) as u16).to_le_bytes());
        columns.iter().for_each(|c| token.extend_from_slice(&c.to_le_bytes()));
        reply.windows(token.len()).any(|w| w == token.as_slice())
    };
    send(&mut s, 0x01, &batch("SELECT c, b, a FROM o ORDER BY a DESC, b"));
    assert!(has_order(&recv(&mut s), &[3, 2]));
    send(&mut s, 0x01, &batch("SELECT TOP 1 b AS x FROM o ORDER BY x"));
    assert!(has_order(&recv(&mut s), &[1]));
    send(&mut s, 0x01, &batch("SELECT a FROM o ORDER BY c"));
    assert!(!recv(&mut s).contains(&0xA9));
    send(&mut s, 0x01, &batch("SELECT a FROM o"));
    assert!(!recv(&mut s).contains(&0xA9));
}

async fn run(c: &mut Conn, sql: &str) {
    c.simple_query(sql).await.unwrap().into_results().await.unwrap();
}

async fn scalar_text(c: &mut Conn, sql: &str) -> Option<String> {
    let row = c.query(sql, &[]).await.unwrap().into_row().await.unwrap().expect("a row");
    row.get::<&str, _>(0).map(str::to_string)
}

/// The error number a login attempt fails with.
async fn login_error(port: u16, user: &str, password: &str) -> u32 {
    match connect_as(port, user, password, EncryptionLevel::NotSupported).await {
        Ok(_) => panic!("{user} logged in with '{password}'"),
        Err(e) => server_error(e).0,
    }
}

#[test]
fn logins_roles_and_permissions() {
    let mut server = TestServer::start();
    let port = server.port();
    rt().block_on(async {
        let mut sa = connect(port).await;
        run(&mut sa, "CREATE DATABASE appdb").await;
        assert_eq!(error_number(&mut sa, "CREATE LOGIN app WITH PASSWORD = 'short'").await, 15116);
        assert_eq!(error_number(&mut sa, "CREATE LOGIN app WITH PASSWORD = 'alllowercase'").await, 15118);
        assert_eq!(
            error_number(&mut sa, "CREATE LOGIN app WITH PASSWORD = 'App-Pass-1', DEFAULT_DATABASE = nodb").await,
            15010
        );
        run(&mut sa, "CREATE LOGIN app WITH PASSWORD = 'App-Pass-1', DEFAULT_DATABASE = appdb").await;
        assert_eq!(error_number(&mut sa, "CREATE LOGIN APP WITH PASSWORD = 'App-Pass-1'").await, 15025);
        run(&mut sa, "CREATE LOGIN weak WITH PASSWORD = 'weak', CHECK_POLICY = OFF").await;
        assert_eq!(error_number(&mut sa, "BEGIN TRAN; CREATE LOGIN t WITH PASSWORD = 'App-Pass-1'").await, 574);
        run(&mut sa, "IF @@TRANCOUNT > 0 ROLLBACK").await;
        assert_eq!(
            scalar_i32(&mut sa, "SELECT COUNT(*) FROM sys.sql_logins WHERE name IN ('sa', 'app', 'weak')").await,
            3
        );
        assert_eq!(
            scalar_text(&mut sa, "SELECT type_desc FROM sys.server_principals WHERE name = 'sysadmin'")
                .await
                .as_deref(),
            Some("SERVER_ROLE")
        );

        // Without a user in its default database the login fails (4064).
        assert_eq!(login_error(port, "app", "App-Pass-1").await, 4064);
        run(&mut sa, "USE appdb; CREATE USER app; USE master").await;

        // The new login: its name, its default database, no server permissions.
        let mut app = connect_as(port, "APP", "App-Pass-1", EncryptionLevel::NotSupported).await.expect("app login");
        assert_eq!(scalar_text(&mut app, "SELECT SUSER_NAME()").await.as_deref(), Some("app"));
        assert_eq!(scalar_text(&mut app, "SELECT DB_NAME()").await.as_deref(), Some("appdb"));
        assert_eq!(scalar_i32(&mut app, "SELECT IS_SRVROLEMEMBER('sysadmin')").await, 0);
        assert_eq!(scalar_i32(&mut app, "SELECT SUSER_ID()").await, 257);
        assert_eq!(error_number(&mut app, "CREATE LOGIN other WITH PASSWORD = 'App-Pass-1'").await, 15247);
        assert_eq!(error_number(&mut app, "DROP LOGIN weak").await, 15151);
        assert_eq!(error_number(&mut app, "ALTER LOGIN weak DISABLE").await, 15151);
        assert_eq!(error_number(&mut app, "EXEC sp_configure 'show advanced options', 1").await, 15247);
        assert_eq!(error_number(&mut app, "RECONFIGURE").await, 5812);
        assert_eq!(error_number(&mut app, "CREATE DATABASE mine").await, 262);
        // Its own password: only with the old one.
        assert_eq!(error_number(&mut app, "ALTER LOGIN app WITH PASSWORD = 'App-Pass-2'").await, 15151);
        assert_eq!(
            error_number(&mut app, "ALTER LOGIN app WITH PASSWORD = 'App-Pass-2' OLD_PASSWORD = 'nope'").await,
            15151
        );
        run(&mut app, "ALTER LOGIN app WITH PASSWORD = 'App-Pass-2' OLD_PASSWORD = 'App-Pass-1'").await;
        assert_eq!(login_error(port, "app", "App-Pass-1").await, 18456);
        drop(connect_as(port, "app", "App-Pass-2", EncryptionLevel::NotSupported).await.expect("new password"));

        // Logged in: cannot be dropped.
        assert_eq!(error_number(&mut sa, "DROP LOGIN app").await, 15434);

        // sysadmin through the role.
        run(&mut sa, "ALTER SERVER ROLE sysadmin ADD MEMBER app").await;
        assert_eq!(scalar_i32(&mut app, "SELECT IS_SRVROLEMEMBER('sysadmin')").await, 1);
        assert_eq!(
            scalar_i32(
                &mut sa,
                "SELECT COUNT(*) FROM sys.server_role_members WHERE member_principal_id = SUSER_ID('app')"
            )
            .await,
            1
        );
        run(&mut app, "CREATE DATABASE mine").await;
        run(&mut sa, "ALTER SERVER ROLE sysadmin DROP MEMBER app").await;
        assert_eq!(error_number(&mut sa, "ALTER SERVER ROLE sysadmin DROP MEMBER sa").await, 15405);
        assert_eq!(error_number(&mut sa, "ALTER SERVER ROLE nosuchrole ADD MEMBER app").await, 15151);

        // Disabled: login fails with 18456 and nothing else.
        run(&mut sa, "ALTER LOGIN weak DISABLE").await;
        assert_eq!(login_error(port, "weak", "weak").await, 18456);
        assert_eq!(login_error(port, "nobody", "weak").await, 18456);
        run(&mut sa, "ALTER LOGIN weak ENABLE").await;
        drop(connect_as(port, "weak", "weak", EncryptionLevel::NotSupported).await.expect("enabled again"));
        drop(app);
        assert_eq!(error_number(&mut sa, "DROP LOGIN sa").await, 15151);
        assert_eq!(error_number(&mut sa, "CREATE LOGIN [dom\\user] FROM WINDOWS").await, 15401);
    });
    assert!(server.errorlog().contains("Reason: Login is disabled."), "{}", server.errorlog());

    // Logins survive a restart; sa's password is the configured one again.
    let data_dir = server.dir.path().join("data");
    server.server.take().unwrap().stop().unwrap();
    server.server = Some(
        tessera_server::RunningServer::start(tessera_server::Config {
            port: 0,
            data_dir,
            sa_password: Some(PASSWORD.to_string()),
            memory_mb: 64,
            log_stderr: false,
            ..tessera_server::Config::default()
        })
        .unwrap(),
    );
    let port = server.port();
    rt().block_on(async {
        let mut app =
            connect_as(port, "app", "App-Pass-2", EncryptionLevel::NotSupported).await.expect("after restart");
        assert_eq!(scalar_text(&mut app, "SELECT DB_NAME()").await.as_deref(), Some("appdb"));
        let mut sa = connect(port).await;
        run(&mut sa, "DROP LOGIN weak").await;
        assert_eq!(login_error(port, "weak", "weak").await, 18456);
    });
}

/// An error of severity 20 or more is fatal: the client gets it, then the connection
/// ends (SQL Server's behaviour); the server goes on serving everyone else.
#[test]
fn a_fatal_error_ends_its_connection_only() {
    let server = TestServer::start();
    let port = server.port();
    rt().block_on(async {
        let mut other = connect(port).await;
        let mut c = connect(port).await;
        let e = match c.simple_query("raiserror('fatal error', 20, 1) with log; select 1").await {
            Ok(stream) => stream.into_results().await.expect_err("the error ends the batch"),
            Err(e) => e,
        };
        assert_eq!(server_error(e), (50000, "fatal error".to_string()));
        let next = async { c.simple_query("select 1").await?.into_results().await };
        assert!(next.await.is_err(), "the connection was closed");
        assert_eq!(scalar_i32(&mut other, "select 2").await, 2);
        let mut again = connect(port).await;
        assert_eq!(scalar_i32(&mut again, "select 3").await, 3);
        // Below 20 the connection stays.
        assert_eq!(error_number(&mut again, "raiserror('not fatal', 19, 1) with log").await, 50000);
        assert_eq!(scalar_i32(&mut again, "select 4").await, 4);
    });
    // On the wire: the batch's DONE says DONE_ERROR and DONE_SRVERROR (0x100), which tells
    // the client the connection is ending (go-mssqldb reports a ServerError on it), and the
    // server closes the connection.
    let mut s = raw_login(port);
    send(&mut s, 0x01, &batch("raiserror('fatal error', 20, 1) with log"));
    let resp = recv(&mut s);
    let done = &resp[resp.len() - 13..];
    assert_eq!(done[0], 0xFD, "the reply ends with DONE");
    assert_eq!(u16::from_le_bytes([done[1], done[2]]), 0x100 | 0x02);
    let mut buf = [0u8; 16];
    assert!(matches!(s.read(&mut buf), Ok(0) | Err(_)), "the connection was closed");
}
