//! A server under a low descriptor limit: it says in the ERRORLOG how it shares the
//! descriptors out, keeps no more databases open than its share allows (closing the least
//! recently used), and every statement on more databases than that succeeds, with new
//! connections still accepted. This test file lowers its own process's limit, so it holds
//! this one test.

mod common;

use common::{connect_sa, TestServer};
use tiberius::Client;
use tokio::net::TcpStream;
use tokio_util::compat::Compat;

/// The hard (and soft) descriptor limit the test runs under.
const LIMIT: u64 = 256;
/// Databases the test makes and uses: more than the server may keep open under `LIMIT`.
const DATABASES: usize = 70;

async fn scalar(client: &mut Client<Compat<TcpStream>>, sql: &str) -> i64 {
    let row = client.simple_query(sql).await.expect(sql).into_row().await.expect(sql).expect("a row");
    row.get::<i32, _>(0).map(i64::from).expect("an int")
}

/// Data files this process holds open.
fn open_data_files() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|p| p.extension().is_some_and(|x| x == "mdf"))
        .count()
}

#[test]
fn more_databases_than_descriptors_allow_open_are_all_served() {
    let lim = libc::rlimit { rlim_cur: LIMIT, rlim_max: LIMIT };
    // SAFETY: setrlimit reads one rlimit through a valid pointer.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0, "lower the limit");
    let server = TestServer::start();
    let budget = tessera_server::descriptors::plan(LIMIT, None, 4096, 10_000).unwrap();
    assert!(budget.max_open_databases < DATABASES, "{budget:?}");
    assert!(server.errorlog().contains(&budget.describe()), "{}", server.errorlog());

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut client = connect_sa(server.port()).await;
        for i in 0..DATABASES {
            let sql = format!(
                "create database fd{i}; create table fd{i}.dbo.t (id int primary key, v int); insert fd{i}.dbo.t values (1, {i}), (2, {i});"
            );
            client.simple_query(sql).await.expect("create").into_results().await.expect("create");
            assert!(open_data_files() <= budget.max_open_databases, "after fd{i}: {} open", open_data_files());
        }
        // Every database again, the oldest first (each was closed and reopens).
        for i in 0..DATABASES {
            assert_eq!(scalar(&mut client, &format!("select sum(v) from fd{i}.dbo.t")).await, 2 * i as i64);
            assert!(open_data_files() <= budget.max_open_databases, "reading fd{i}: {} open", open_data_files());
        }
        // The listener still accepts: a second connection lists every database.
        let mut other = connect_sa(server.port()).await;
        let listed = scalar(&mut other, "select count(*) from sys.databases where name like 'fd%'").await;
        assert_eq!(listed, DATABASES as i64);
    });
    assert!(!server.errorlog().contains("accept failed"), "{}", server.errorlog());
}
