//! The streaming TDS reader against a real server on 127.0.0.1: it counts exactly the rows
//! of the table, records when the first one arrived, holds no more than a packet and a row,
//! and reports a server error as an error. No timing assertions.

use std::time::Duration;

use tessera_bench::rss::{self, Probe, Sampler, SelfProbe};
use tessera_bench::tdsstream::{StreamConn, READ_BUFFER};
use tessera_semantics::output::Collected;
use tessera_semantics::types::Value;
use tessera_server::client::{Client, ConnectOptions, Encryption};
use tessera_server::{Config, RunningServer};

const PASSWORD: &str = "Bench-Streaming-1";
const ROWS: u64 = 3000;

/// Runs `text` through tessera's own client; fails on a server error.
fn execute(port: u16, text: &str) -> Collected {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let options = ConnectOptions {
            host: "127.0.0.1",
            port,
            user: "sa",
            password: PASSWORD,
            database: "",
            encryption: Encryption::LoginOnly,
        };
        let mut client = Client::connect(&options).await.unwrap();
        let mut out = Collected::default();
        let failed = client.execute(text, &mut out).await.unwrap();
        assert!(!failed, "{text}: {:?}", out.errors());
        out
    })
}

#[test]
fn streaming_reader_counts_every_row_and_times_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let server = RunningServer::start(Config {
        port: 0,
        data_dir: dir.path().join("data"),
        sa_password: Some(PASSWORD.to_string()),
        memory_mb: 64,
        errorlog: false,
        log_stderr: false,
        ..Config::default()
    })
    .unwrap();
    let port = server.addr.port();
    execute(port, "create database [streamtest]");
    execute(
        port,
        "use [streamtest];
         create table [dbo].[t] ([id] bigint not null primary key, [amount] decimal(12,2) not null,
                                 [note] varchar(20) null, [pad] char(1000) not null);",
    );
    // Every third row has a NULL note (NBCROW, if the server sends it), every row 1 KB of pad.
    for chunk in 0..ROWS / 1000 {
        let values: Vec<String> = (chunk * 1000 + 1..=(chunk + 1) * 1000)
            .map(|i| {
                let note = if i % 3 == 0 { "null".to_string() } else { format!("'n{i}'") };
                format!("({i}, {i}.25, {note}, 'p{i}')")
            })
            .collect();
        execute(port, &format!("use [streamtest]; insert into [dbo].[t] values {};", values.join(", ")));
    }
    let count = execute(port, "select count(*) from [streamtest].[dbo].[t]");
    assert_eq!(count.result_sets[0].1[0][0], Value::Int(ROWS as i64));

    let mut reader = StreamConn::connect(port, "sa", PASSWORD, "streamtest").unwrap();
    let probe = Probe::SelfProcess(SelfProbe::new(rss::pool_mappings().unwrap()));
    let sampler = Sampler::start(probe, Duration::from_millis(5)).unwrap();
    let run = reader.query("select * from [dbo].[t]").unwrap();
    let (samples, _) = sampler.stop().unwrap();
    assert!(!samples.samples.is_empty() && samples.max_of(|s| s.rss) > 0);

    assert_eq!(run.error, None);
    assert_eq!((run.rows, run.reported_rows), (ROWS, Some(ROWS)));
    let first_byte = run.first_byte_seconds.expect("first byte time recorded");
    let first_row = run.first_row_seconds.expect("first row time recorded");
    assert!(first_byte <= first_row && first_row <= run.seconds, "{run:?}");
    assert!(run.bytes > ROWS * 1000, "{} bytes for {ROWS} rows of 1 KB", run.bytes);
    // One packet's payload and an incomplete row at most.
    assert!(run.max_buffered <= READ_BUFFER + 2048, "{} bytes held", run.max_buffered);

    // A filtered scan, on the same connection: exactly its rows.
    let run = reader.query("select [id], [note] from [dbo].[t] where [id] > 2500").unwrap();
    assert_eq!((run.rows, run.reported_rows, run.error), (500, Some(500), None));

    // A server error is an error of the run, and the connection goes on.
    let run = reader.query("select * from [dbo].[missing]").unwrap();
    assert_eq!(run.rows, 0);
    let error = run.error.expect("an error");
    assert!(error.starts_with("Msg 208:") && error.contains("missing"), "{error}");
    assert_eq!(reader.query("select [id] from [dbo].[t] where [id] = 7").unwrap().rows, 1);

    drop(reader);
    server.stop().unwrap();
}
