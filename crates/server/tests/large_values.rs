//! Values of several MiB over TDS, as clients send and read them: parameters that arrive
//! as PLP chunks and are spooled to disk while their request runs (`spool`), results
//! sent in PLP chunks as they are read from their pages (`token_sink`), and requests
//! that go wrong after a long value: a malformed parameter behind one, a request the
//! client abandons halfway. The connection goes on after each.

mod common;

use common::tds::{connect_as, run, Conn};
use common::{TestServer, PASSWORD};
use tessera_semantics::types::{SqlType, Value};
use tessera_server::packet::{self, kind, status};
use tessera_server::types::{put_type_info, put_value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// A server whose requests may not pass 1 MiB but for the values spooled as they arrive.
fn server_with_a_small_message_limit() -> TestServer {
    TestServer::start_with(|c| {
        c.memory_mb = 256;
        c.max_message_mb = 1;
    })
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn bytes_of(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8 ^ seed).collect()
}

/// The one row `sql` answers with `params`.
async fn one_row(c: &mut Conn, sql: &str, params: &[&dyn tiberius::ToSql]) -> tiberius::Row {
    c.query(sql, params).await.unwrap().into_row().await.unwrap().expect("a row")
}

async fn binary(c: &mut Conn, sql: &str) -> Vec<u8> {
    one_row(c, sql, &[]).await.get::<&[u8], _>(0).expect("a value").to_vec()
}

async fn bigint(c: &mut Conn, sql: &str) -> i64 {
    one_row(c, sql, &[]).await.get::<i64, _>(0).expect("a bigint")
}

/// Values of 3 to 6 MiB go in as parameters and come back whole, through every path a
/// parameter takes: stored, kept in a variable and stored twice, echoed as a result,
/// measured and cut by functions, changed by an UPDATE. The server's message limit is
/// 1 MiB: only values that are spooled as they arrive get in.
#[test]
fn values_of_megabytes_go_in_and_out_as_plp() {
    let server = server_with_a_small_message_limit();
    rt().block_on(async {
        let mut c = connect_as(server.port(), "sa", PASSWORD).await;
        run(&mut c, "create table t (id int primary key, v varbinary(max), n nvarchar(max))").await;
        let bin = bytes_of((3 << 20) + 5, 1);
        let text: String = "żółw ".repeat(600_000) + "koniec";
        c.execute("insert t values (@P1, @P2, @P3)", &[&1i32, &bin.as_slice(), &text.as_str()]).await.unwrap();
        assert_eq!(binary(&mut c, "select v from t where id = 1").await, bin);
        let row = one_row(&mut c, "select n from t where id = 1", &[]).await;
        assert_eq!(row.get::<&str, _>(0), Some(text.as_str()));

        // Kept in a variable, stored twice, and the variable read back as a result.
        let other = bytes_of(6 << 20, 2);
        let keep = "declare @x varbinary(max) = @P1; insert t (id, v) values (2, @x), (3, @x); select @x as echo";
        let echo = one_row(&mut c, keep, &[&other.as_slice()]).await;
        assert_eq!(echo.get::<&[u8], _>(0), Some(other.as_slice()));
        for id in [2, 3] {
            assert_eq!(binary(&mut c, &format!("select v from t where id = {id}")).await, other);
        }
        // Functions read only what they need; an UPDATE reads the value whole.
        assert_eq!(bigint(&mut c, "select datalength(v) from t where id = 1").await, bin.len() as i64);
        assert_eq!(bigint(&mut c, "select cast(len(n) as bigint) from t where id = 1").await, 3_000_006);
        let part = binary(&mut c, "select substring(v, 3000001, 16) from t where id = 1").await;
        assert_eq!(part, bin[3_000_000..3_000_016]);
        run(&mut c, "update t set v = v + 0x2a where id = 2").await;
        let mut longer = other.clone();
        longer.push(0x2a);
        assert_eq!(binary(&mut c, "select v from t where id = 2").await, longer);
        // Several large values in one row, with a NULL among them.
        let row = one_row(&mut c, "select v, n, v from t where id = 3", &[]).await;
        assert_eq!(row.get::<&[u8], _>(0), Some(other.as_slice()));
        assert_eq!(row.get::<&str, _>(1), None);
        assert_eq!(row.get::<&[u8], _>(2), Some(other.as_slice()));
        run(&mut c, "dbcc checkdb with no_infomsgs").await;
    });
}

/// sp_executesql with `@v varbinary(max)` holding `value`, then `extra` (raw parameter
/// bytes: name, status, TYPE_INFO, value).
fn executesql(stmt: &str, value: &[u8], extra: &[u8]) -> Vec<u8> {
    let max = SqlType::NVarChar(u16::MAX);
    let mut b = bytes::BytesMut::new();
    b.extend_from_slice(&22u32.to_le_bytes());
    b.extend_from_slice(&18u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&[0xFF, 0xFF, 10, 0, 0, 0]);
    for text in [stmt, "@v varbinary(max)"] {
        b.extend_from_slice(&[0, 0]);
        put_type_info(&mut b, &max);
        put_value(&mut b, &max, &Value::str(text));
    }
    b.extend_from_slice(&[2, b'@', 0, b'v', 0, 0]);
    let bin = SqlType::VarBinary(u16::MAX);
    put_type_info(&mut b, &bin);
    put_value(&mut b, &bin, &Value::Binary(value.into()));
    b.extend_from_slice(extra);
    b.to_vec()
}

/// The reply to the request just sent, as its raw payload.
async fn reply(tcp: &mut TcpStream) -> Vec<u8> {
    let limits = packet::Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: 64 << 20 };
    let m = packet::read_message(tcp, &limits).await.unwrap().expect("a reply");
    assert_eq!(m.kind, kind::REPLY);
    m.payload.to_vec()
}

/// Whether a reply holds an ERROR token with `number`.
fn has_error(reply: &[u8], number: u32) -> bool {
    reply.windows(7).any(|w| w[0] == 0xAA && w[3..7] == number.to_le_bytes())
}

/// A malformed parameter behind a long value, and a request abandoned halfway: each
/// fails alone (8009; nothing for the abandoned one), and the connection serves the
/// next request.
#[test]
fn a_bad_request_after_a_long_value_ends_only_itself() {
    let server = TestServer::start();
    rt().block_on(async {
        let tcp = TcpStream::connect(("127.0.0.1", server.port())).await.unwrap();
        let (mut tcp, size) = tessera_server::client::login_plaintext(tcp, "sa", PASSWORD, "master").await.unwrap();
        let long = bytes_of(3 << 20, 3);
        // A parameter of an unknown type after the long one.
        let bad = executesql("select datalength(@v)", &long, &[0, 0, 0xEE, 1, 2, 3]);
        packet::write_message(&mut tcp, kind::RPC, &bad, size).await.unwrap();
        let answer = reply(&mut tcp).await;
        assert!(has_error(&answer, 8009), "no 8009 in the reply");
        // Abandoned: the first packets of a request, then one marked IGNORE.
        let good = executesql("select datalength(@v)", &long, &[]);
        let mut wire = bytes::BytesMut::new();
        packet::frame(kind::RPC, &good[..good.len() / 2], size, false, &mut 1, &mut wire);
        wire.extend_from_slice(&[kind::RPC, status::IGNORE | status::EOM, 0, 8, 0, 0, 0, 0]);
        tcp.write_all(&wire).await.unwrap();
        let answer = reply(&mut tcp).await;
        assert!(!answer.contains(&0xAA), "an abandoned request raised an error");
        // The same request whole: the value's length comes back.
        packet::write_message(&mut tcp, kind::RPC, &good, size).await.unwrap();
        let answer = reply(&mut tcp).await;
        assert!(!answer.contains(&0xAA), "the request after them failed");
        let len = (3u64 << 20).to_le_bytes();
        assert!(answer.windows(8).any(|w| w == len), "no datalength in the reply");
    });
    let log = server.errorlog();
    assert!(!log.contains("panicked"), "{log}");
}

/// A bulk load (INSERT BULK, then BULK_LOAD) whose rows hold values of several MiB: read
/// as its packets arrive, the long values spooled, then stored — past a message limit of
/// 1 MiB.
#[test]
fn a_bulk_load_of_long_values() {
    let server = server_with_a_small_message_limit();
    rt().block_on(async {
        let tcp = TcpStream::connect(("127.0.0.1", server.port())).await.unwrap();
        let (mut tcp, size) = tessera_server::client::login_plaintext(tcp, "sa", PASSWORD, "master").await.unwrap();
        let batch = |text: &str| tessera_server::client::batch_body(text);
        for text in [
            "create table bulk_big (id int primary key, v varbinary(max))",
            "insert bulk bulk_big ([id] int, [v] varbinary(max))",
        ] {
            packet::write_message(&mut tcp, kind::SQL_BATCH, &batch(text), size).await.unwrap();
            assert!(!has_error(&reply(&mut tcp).await, 207), "{text}");
        }
        let values = [bytes_of(3 << 20, 4), bytes_of(10, 5), bytes_of((2 << 20) + 1, 6)];
        let (int, bin) = (SqlType::Int, SqlType::VarBinary(u16::MAX));
        let mut m = bytes::BytesMut::new();
        m.extend_from_slice(&[0x81, 2, 0]);
        for (ty, name) in [(int, b'i'), (bin, b'v')] {
            m.extend_from_slice(&[0, 0, 0, 0, 0x09, 0]);
            put_type_info(&mut m, &ty);
            m.extend_from_slice(&[1, name, 0]);
        }
        for (id, v) in values.iter().enumerate() {
            m.extend_from_slice(&[0xD1]);
            put_value(&mut m, &int, &Value::Int(id as i64 + 1));
            put_value(&mut m, &bin, &Value::Binary(v.as_slice().into()));
        }
        m.extend_from_slice(&[0xFD, 0, 0, 0, 0]);
        m.extend_from_slice(&0u64.to_le_bytes());
        packet::write_message(&mut tcp, kind::BULK_LOAD, &m, size).await.unwrap();
        let answer = reply(&mut tcp).await;
        assert!(!answer.contains(&0xAA), "the bulk load failed");
        let sum: u64 = values.iter().map(|v| v.len() as u64).sum();
        packet::write_message(&mut tcp, kind::SQL_BATCH, &batch("select sum(datalength(v)) from bulk_big"), size)
            .await
            .unwrap();
        let answer = reply(&mut tcp).await;
        assert!(answer.windows(8).any(|w| w == sum.to_le_bytes()), "the values' lengths do not add up");
    });
    drop(server);
}

/// The log the database has written since it opened (its `Log Bytes Flushed/sec`).
async fn log_bytes(c: &mut Conn) -> i64 {
    let sql = "select cntr_value from sys.dm_os_performance_counters \
               where counter_name = 'Log Bytes Flushed/sec' and instance_name = db_name()";
    bigint(c, sql).await
}

/// `UPDATE … SET col.WRITE` on a value of 4 MiB: a few bytes overwritten log a few pages,
/// an append logs about what it appends, while a reader's snapshot keeps reading the value
/// as it was; a whole replacement logs the whole value.
#[test]
fn partial_updates_log_only_what_they_change() {
    let server = server_with_a_small_message_limit();
    rt().block_on(async {
        let mut c = connect_as(server.port(), "sa", PASSWORD).await;
        run(&mut c, "create database partial; alter database partial set allow_snapshot_isolation on").await;
        run(&mut c, "use partial; create table t (id int primary key, v varbinary(max))").await;
        let mut model = bytes_of(4 << 20, 3);
        c.execute("insert t values (1, @P1)", &[&model.as_slice()]).await.unwrap();
        let mut reader = common::tds::connect_to(server.port(), "sa", PASSWORD, "partial").await.unwrap();
        run(&mut reader, "set transaction isolation level snapshot; begin tran").await;
        assert_eq!(binary(&mut reader, "select v from t").await, model, "the reader's snapshot");
        let before = model.clone();

        let patch = b"0123456789".as_slice();
        let start = log_bytes(&mut c).await;
        c.execute("update t set v.write(@P1, 2000000, 10) where id = 1", &[&patch]).await.unwrap();
        let overwrite = log_bytes(&mut c).await - start;
        model[2_000_000..2_000_010].copy_from_slice(patch);
        assert!(overwrite < 64 << 10, "{overwrite} bytes of log for 10 bytes overwritten");
        assert_eq!(binary(&mut c, "select v from t").await, model);

        let tail = bytes_of((1 << 20) + 77, 4);
        let start = log_bytes(&mut c).await;
        c.execute("update t set v.write(@P1, null, null) where id = 1", &[&tail.as_slice()]).await.unwrap();
        let append = log_bytes(&mut c).await - start;
        model.extend_from_slice(&tail);
        assert!(append < (tail.len() as i64) * 5 / 4, "{append} bytes of log for {} appended", tail.len());
        assert_eq!(binary(&mut c, "select v from t").await, model);

        // The snapshot taken before both still reads the value as it was, to its end.
        assert_eq!(binary(&mut reader, "select v from t").await, before, "the snapshot, after the changes");
        assert_eq!(bigint(&mut reader, "select datalength(v) from t").await, before.len() as i64);
        run(&mut reader, "commit").await;
        assert_eq!(binary(&mut reader, "select v from t").await, model, "a new snapshot");

        let start = log_bytes(&mut c).await;
        run(&mut c, "update t set v = v + 0x00 where id = 1").await;
        let whole = log_bytes(&mut c).await - start;
        assert!(whole > model.len() as i64, "{whole} bytes of log for a whole value replaced");
        println!("log bytes: overwrite of 10 bytes {overwrite}, append of {} {append}, whole {whole}", tail.len());
        run(&mut c, "dbcc checkdb with no_infomsgs").await;
    });
}
