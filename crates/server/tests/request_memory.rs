//! What one request may hold, and all requests together: a batch past `max_message_mb`
//! fails with 4002, one that finds no room in `max_request_memory_mb` (held by another
//! connection's request, still arriving) fails with 701 — and in both cases the
//! connection goes on, and the request held back runs once the room is free.

mod common;

use std::time::Duration;

use common::tds::{connect_as, count, Conn};
use common::{TestServer, PASSWORD};
use tessera_server::packet::{self, kind};
use tokio::io::AsyncWriteExt;

/// A batch selecting the length of a string of `chars` characters.
fn batch_of(chars: usize) -> String {
    format!("SELECT CAST(LEN('{}') AS int)", "x".repeat(chars))
}

/// Runs a long batch: its int, or the error's number and text (never the batch's text,
/// which is too long to print).
async fn long_batch(c: &mut Conn, chars: usize) -> Result<i32, (u32, String)> {
    let result = async { c.simple_query(batch_of(chars)).await?.into_row().await }.await;
    match result {
        Ok(row) => Ok(row.and_then(|r| r.get::<i32, _>(0)).expect("a value")),
        Err(tiberius::error::Error::Server(e)) => Err((e.code(), e.message().to_string())),
        Err(other) => panic!("a batch of {chars} characters: {other}"),
    }
}

#[test]
fn requests_past_their_limits_fail_clearly_and_their_connections_go_on() {
    let server = TestServer::start_with(|c| {
        c.max_message_mb = 1;
        c.max_request_memory_mb = 1;
    });
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut b = connect_as(port, "sa", PASSWORD).await;
        // Past the message limit: 4002, then the connection serves the next request.
        let (number, text) = long_batch(&mut b, 600_000).await.unwrap_err();
        assert_eq!(number, 4002, "{text}");
        assert!(text.contains("max_message_mb"), "{text}");
        assert_eq!(count(&mut b, "SELECT 1").await, 1);

        // Connection A sends all but the last packet of a 700 KB batch: its packets are
        // charged as they arrive, and leave no room for B's 600 KB batch.
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (mut a, _) = tessera_server::client::login_plaintext(tcp, "sa", PASSWORD, "master").await.unwrap();
        let body = tessera_server::client::batch_body(&batch_of(350_000));
        let mut wire = bytes::BytesMut::new();
        packet::frame(kind::SQL_BATCH, &body, 4096, true, &mut 1, &mut wire);
        let per_packet = 4096 - packet::HEADER_LEN;
        let last = match body.len() % per_packet {
            0 => 4096,
            rest => rest + packet::HEADER_LEN,
        };
        let (most, end) = wire.split_at(wire.len() - last);
        a.write_all(most).await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (number, text) = long_batch(&mut b, 300_000).await.unwrap_err();
        assert_eq!(number, 701, "{text}");
        assert_eq!(count(&mut b, "SELECT 2").await, 2, "B goes on");

        // A's batch completes and runs; its room is free again, and B's batch fits.
        a.write_all(end).await.unwrap();
        let limits = packet::Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: 1 << 20 };
        let reply = packet::read_message(&mut a, &limits).await.unwrap().unwrap();
        assert_ne!(reply.payload[0], 0xAA, "A's batch ran without an error");
        // A's server thread gives its room back just after its reply: B may try twice.
        let mut tries = 0;
        let answer = loop {
            tries += 1;
            match long_batch(&mut b, 300_000).await {
                Err((701, _)) if tries < 50 => tokio::time::sleep(Duration::from_millis(20)).await,
                other => break other,
            }
        };
        assert_eq!(answer, Ok(300_000));
    });
}
