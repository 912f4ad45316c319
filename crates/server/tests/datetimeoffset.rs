//! datetimeoffset over TDS: tiberius sends and reads DATETIMEOFFSETN (0x2B) values (UTC
//! date and time plus the offset), by literal and by parameter, NULL included; and the
//! client side of `tessera sql -S` prints such results exactly as the in-process sqlcmd
//! output does.

mod common;

use common::{TestServer, PASSWORD};
use tessera_database::{Engine, EngineConfig};
use tessera_server::client::{Client as SqlClient, ConnectOptions, Encryption};
use tessera_sql::{runner, Session, SqlcmdFormat, SqlcmdWriter};
use tiberius::time::{Date, DateTime2, DateTimeOffset, Time};
use tiberius::{AuthMethod, Client, ColumnData, Config, EncryptionLevel, ToSql};
use tokio::net::TcpStream;
use tokio_util::compat::TokioAsyncWriteCompatExt;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

struct Raw(ColumnData<'static>);

impl ToSql for Raw {
    fn to_sql(&self) -> ColumnData<'_> {
        self.0.clone()
    }
}

/// 2025-03-04 10:11:12.1234567 +05:30: day 739 313 since 0001-01-01, 04:41:12.1234567 UTC.
fn stamp() -> DateTimeOffset {
    DateTimeOffset::new(DateTime2::new(Date::new(739_313), Time::new(168_721_234_567, 7)), 330)
}

fn parts(v: &ColumnData<'_>) -> Option<(u32, u64, u8, i16)> {
    match v {
        ColumnData::DateTimeOffset(Some(d)) => {
            let dt = d.datetime2();
            Some((dt.date().days(), dt.time().increments(), dt.time().scale(), d.offset()))
        }
        ColumnData::DateTimeOffset(None) => None,
        other => panic!("not a datetimeoffset: {other:?}"),
    }
}

#[test]
fn tiberius_round_trip() {
    let server = TestServer::start();
    rt().block_on(async {
        let mut config = Config::new();
        config.host("127.0.0.1");
        config.port(server.port());
        config.authentication(AuthMethod::sql_server("sa", PASSWORD));
        config.encryption(EncryptionLevel::NotSupported);
        let tcp = TcpStream::connect(("127.0.0.1", server.port())).await.unwrap();
        let mut c = Client::connect(config, tcp.compat_write()).await.unwrap();
        c.simple_query(
            "CREATE TABLE stamps (id int NOT NULL PRIMARY KEY, at datetimeoffset NOT NULL, at0 datetimeoffset(0))",
        )
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
        c.simple_query(
            "INSERT INTO stamps VALUES (1, '2025-03-04 10:11:12.1234567 +05:30', '2025-03-04 10:11:12.5 +05:30')",
        )
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
        let p = Raw(ColumnData::DateTimeOffset(Some(stamp())));
        let p0 = Raw(ColumnData::DateTimeOffset(None));
        let r = c.execute("INSERT INTO stamps VALUES (2, @P1, @P2)", &[&p, &p0]).await.unwrap();
        assert_eq!(r.total(), 1);
        let rows =
            c.simple_query("SELECT at, at0 FROM stamps ORDER BY id").await.unwrap().into_first_result().await.unwrap();
        let cells: Vec<Vec<ColumnData<'static>>> = rows.into_iter().map(|r| r.into_iter().collect()).collect();
        assert_eq!(parts(&cells[0][0]), Some((739_313, 168_721_234_567, 7, 330)));
        assert_eq!(cells[0][0], cells[1][0], "literal and parameter differ");
        // datetimeoffset(0): whole seconds (12.5 rounds up), on the wire at scale 0
        assert_eq!(parts(&cells[0][1]), Some((739_313, 16_873, 0, 330)));
        assert_eq!(parts(&cells[1][1]), None);
        // a parameter is compared by its instant
        let utc = Raw(ColumnData::DateTimeOffset(Some(DateTimeOffset::new(stamp().datetime2(), 0))));
        let row =
            c.query("SELECT COUNT(*) FROM stamps WHERE at = @P1", &[&utc]).await.unwrap().into_row().await.unwrap();
        assert_eq!(row.unwrap().get::<i32, _>(0), Some(2));
    });
}

const BATCH: &str = "declare @d datetimeoffset = '2025-03-04 10:11:12.1234567 +05:30';
select @d as d, cast(@d as datetimeoffset(0)) as d0, cast(null as datetimeoffset(3)) as n3,
       switchoffset(@d, '-08:00') as pacific, datepart(tz, @d) as tz;";

#[test]
fn sqlcmd_over_tds_prints_as_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    let mut local = Vec::new();
    {
        let mut writer = SqlcmdWriter::new(&mut local, SqlcmdFormat::default());
        let mut session = Session::new(tessera_sql::start_instance(engine.clone()).unwrap(), "sa", "master").unwrap();
        runner::run_script(&mut session, BATCH, &mut writer);
        session.close();
    }
    engine.shutdown().unwrap();
    let local = String::from_utf8(local).unwrap();
    assert!(local.contains("2025-03-04 10:11:12.1234567 +05:30 2025-03-04 10:11:12 +05:30"), "{local}");
    assert!(local.contains("2025-03-03 20:41:12.1234567 -08:00"), "{local}");

    let server = TestServer::start();
    let mut remote = Vec::new();
    rt().block_on(async {
        let options = ConnectOptions {
            host: "127.0.0.1",
            port: server.port(),
            user: "sa",
            password: PASSWORD,
            database: "master",
            encryption: Encryption::LoginOnly,
        };
        let mut client = SqlClient::connect(&options).await.unwrap();
        let mut writer = SqlcmdWriter::new(&mut remote, SqlcmdFormat::default());
        assert!(!client.execute(BATCH, &mut writer).await.unwrap());
    });
    assert_eq!(String::from_utf8(remote).unwrap(), local);
}
