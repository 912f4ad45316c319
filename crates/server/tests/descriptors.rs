//! A server under a low descriptor limit: it says in the ERRORLOG how it shares the
//! descriptors out, keeps many more databases open than it has descriptors for their
//! files (the descriptor cache closes the least recently used file and reopens it on
//! demand), never holds more file descriptors than its share, and every statement on
//! every database succeeds, with new connections still accepted; what was written
//! through descriptors later closed is there after a restart. This test file lowers its
//! own process's limit, so it holds this one test.

mod common;

use common::{connect_sa, TestServer};
use tiberius::Client;
use tokio::net::TcpStream;
use tokio_util::compat::Compat;

/// The hard (and soft) descriptor limit the test runs under.
const LIMIT: u64 = 256;
/// Databases the test makes and uses: their files need more descriptors than `LIMIT`.
const DATABASES: usize = 120;

async fn scalar(client: &mut Client<Compat<TcpStream>>, sql: &str) -> i64 {
    let row = client.simple_query(sql).await.expect(sql).into_row().await.expect(sql).expect("a row");
    row.get::<i32, _>(0).map(i64::from).expect("an int")
}

/// Database files (data and log) this process holds open.
fn open_database_files() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|p| p.extension().is_some_and(|x| x == "mdf" || x == "ldf"))
        .count()
}

/// One figure of the server's `/metrics`.
fn metric(server: &TestServer, name: &str) -> f64 {
    use std::io::{Read, Write};
    let addr = server.server.as_ref().unwrap().metrics_addr.expect("a metrics listener");
    let mut http = std::net::TcpStream::connect(addr).unwrap();
    http.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut text = String::new();
    http.read_to_string(&mut text).unwrap();
    let line = text.lines().find(|l| l.split(' ').next() == Some(name)).unwrap_or_else(|| panic!("{name}\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn more_databases_than_descriptors_are_open_and_all_served() {
    let lim = libc::rlimit { rlim_cur: LIMIT, rlim_max: LIMIT };
    // SAFETY: setrlimit reads one rlimit through a valid pointer.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0, "lower the limit");
    let mut server = TestServer::start_with(|c| c.metrics_port = Some(0));
    let budget = tessera_server::descriptors::plan(LIMIT, None, 10_000).unwrap();
    assert!(budget.file_descriptors < 2 * DATABASES, "{budget:?}");
    assert!(server.errorlog().contains(&budget.describe()), "{}", server.errorlog());
    // A file is open twice only while an operation on it ends: a few over at most.
    let most = budget.file_descriptors + 4;
    let before = tessera_io::descriptors::figures();

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut client = connect_sa(server.port()).await;
        for i in 0..DATABASES {
            let sql = format!(
                "create database fd{i}; create table fd{i}.dbo.t (id int primary key, v int); insert fd{i}.dbo.t values (1, {i}), (2, {i});"
            );
            client.simple_query(sql).await.expect("create").into_results().await.expect("create");
            assert!(open_database_files() <= most, "after fd{i}: {} open", open_database_files());
        }
        // Every database again, the oldest first (their files' descriptors were closed).
        for i in 0..DATABASES {
            assert_eq!(scalar(&mut client, &format!("select sum(v) from fd{i}.dbo.t")).await, 2 * i as i64);
            let sql = format!("update fd{i}.dbo.t set v = v + 1000 where id = 2");
            client.simple_query(sql).await.expect("update").into_results().await.expect("update");
            assert!(open_database_files() <= most, "using fd{i}: {} open", open_database_files());
        }
        // The listener still accepts: a second connection lists every database.
        let mut other = connect_sa(server.port()).await;
        let listed = scalar(&mut other, "select count(*) from sys.databases where name like 'fd%'").await;
        assert_eq!(listed, DATABASES as i64);
    });
    let open = metric(&server, "tessera_databases_open");
    assert!(open > DATABASES as f64, "every database stays open: {open}");
    let after = tessera_io::descriptors::figures();
    assert!(after.evictions - before.evictions > DATABASES as u64, "{after:?}");
    assert!(after.misses > before.misses && after.hits > before.hits, "{after:?}");
    assert_eq!(metric(&server, "tessera_file_descriptor_evictions_total"), after.evictions as f64);

    // What went through closed descriptors is durable.
    server.restart();
    rt.block_on(async {
        let mut client = connect_sa(server.port()).await;
        for i in (0..DATABASES).step_by(7) {
            let sum = scalar(&mut client, &format!("select sum(v) from fd{i}.dbo.t")).await;
            assert_eq!(sum, 2 * i as i64 + 1000, "fd{i}");
        }
    });
    assert!(!server.errorlog().contains("accept failed"), "{}", server.errorlog());
}
