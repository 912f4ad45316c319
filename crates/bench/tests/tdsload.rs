//! The lean TDS load generator against a real server on 127.0.0.1: it counts exactly the
//! queries it sent, and a query that fails is an error, not a query. No timing assertions.

use tessera_bench::tdsload::{self, LoadRun, LoadSpec, Stop};
use tessera_semantics::output::Collected;
use tessera_semantics::types::Value;
use tessera_server::client::{Client, ConnectOptions, Encryption};
use tessera_server::{Config, RunningServer};

const PASSWORD: &str = "Bench-Tdsload-1";

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

fn load(port: u16, batch: &str, per_connection: u64, expect_rows: Option<u64>) -> LoadRun {
    tdsload::run(&LoadSpec {
        port,
        user: "sa",
        password: PASSWORD,
        database: "loadtest",
        batches: &[batch],
        connections: 2,
        stop: Stop::Queries(per_connection),
        expect_rows,
        record_latencies: false,
        rate: None,
    })
    .unwrap()
}

#[test]
fn lean_generator_counts_what_it_sent_and_reports_errors() {
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
    execute(port, "create database [loadtest]");
    let values = vec!["(replicate('A', 1000))"; 100].join(", ");
    execute(
        port,
        &format!(
            "use [loadtest];
             create table [dbo].[t] ([id] int identity(1,1) primary key, [n] char(1000) not null);
             insert into [dbo].[t] ([n]) values {values};
             create table [dbo].[hits] ([id] int identity(1,1) primary key, [x] int not null);"
        ),
    );
    let rows = execute(port, "select count(*) from [loadtest].[dbo].[t]");
    assert_eq!(rows.result_sets[0].1[0][0], Value::Int(100));

    // The seed's point select: one row per reply, 2 × 150 queries.
    let select = "select [n] from [dbo].[t] where [id] = cast(rand(checksum(newid())) * 100 as int) + 1";
    let run = load(port, select, 150, Some(1));
    assert_eq!((run.sent, run.queries, run.rows, run.errors, run.first_error.as_deref()), (300, 300, 300, 0, None));
    assert!(run.seconds > 0.0 && run.latency_seconds > 0.0);

    // Inserts: the server saw exactly the queries the generator counted.
    let run = load(port, "insert into [dbo].[hits] ([x]) values (1)", 100, Some(0));
    assert_eq!((run.sent, run.queries, run.errors), (200, 200, 0));
    let hits = execute(port, "select count(*) from [loadtest].[dbo].[hits]");
    assert_eq!(hits.result_sets[0].1[0][0], Value::Int(200));

    // A batch against a missing table: each connection's first reply is an error, and
    // the connection stops there; nothing is counted as a query.
    let run = load(port, "select [n] from [dbo].[missing]", 50, None);
    assert_eq!((run.sent, run.queries, run.errors), (2, 0, 2));
    let error = run.first_error.unwrap();
    assert!(error.starts_with("Msg 208:") && error.contains("missing"), "{error}");

    // The wrong number of rows is an error too.
    let run = load(port, "select [n] from [dbo].[t] where [id] <= 2", 10, Some(1));
    assert_eq!((run.sent, run.queries, run.errors), (2, 0, 2));
    assert!(run.first_error.unwrap().contains("2 rows"));

    // A timed run: whatever it managed, every query sent was answered and counted.
    let run = tdsload::run(&LoadSpec {
        port,
        user: "sa",
        password: PASSWORD,
        database: "loadtest",
        batches: &[select, select],
        connections: 2,
        stop: Stop::After(std::time::Duration::from_millis(200)),
        expect_rows: Some(1),
        record_latencies: true,
        rate: None,
    })
    .unwrap();
    assert!(run.queries > 0);
    assert_eq!(run.latencies_us.len() as u64, run.queries);
    assert_eq!((run.sent, run.rows, run.errors), (run.queries, run.queries, 0));

    server.stop().unwrap();
}
