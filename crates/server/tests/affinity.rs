//! CPU affinity: `sp_configure 'affinity mask'` with RECONFIGURE, and `ALTER SERVER
//! CONFIGURATION SET PROCESS AFFINITY CPU = …`, pin every thread of the server (workers,
//! I/O, log writer, background) and those it starts later. The server runs in this test's
//! process, so this file holds this one test: it reads its own threads' masks from /proc.

mod common;

use std::collections::BTreeSet;

use common::{connect_sa, TestServer};
use tiberius::Client;
use tokio::net::TcpStream;
use tokio_util::compat::Compat;

async fn run(client: &mut Client<Compat<TcpStream>>, sql: &str) -> Result<(), tiberius::error::Error> {
    client.simple_query(sql).await?.into_results().await.map(drop)
}

/// `0-2,5` → {0, 1, 2, 5}.
fn parse_cpu_list(list: &str) -> BTreeSet<usize> {
    list.split(',')
        .flat_map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            a.trim().parse::<usize>().unwrap()..=b.trim().parse::<usize>().unwrap()
        })
        .collect()
}

/// Every thread of this process with the CPUs it may run on.
fn thread_cpus() -> Vec<(String, BTreeSet<usize>)> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| {
            let status = std::fs::read_to_string(e.ok()?.path().join("status")).ok()?;
            let field = |k: &str| status.lines().find_map(|l| l.strip_prefix(k)).map(|v| v.trim().to_string());
            Some((field("Name:")?, parse_cpu_list(&field("Cpus_allowed_list:")?)))
        })
        .collect()
}

fn assert_all_on(cpus: &BTreeSet<usize>) {
    let threads = thread_cpus();
    assert!(threads.len() > 3, "a server has several threads: {threads:?}");
    let off: Vec<_> = threads.iter().filter(|(_, c)| c != cpus).collect();
    assert!(off.is_empty(), "threads not on {cpus:?}: {off:?}");
}

#[test]
fn affinity_pins_every_thread_and_auto_releases_them() {
    let all = thread_cpus()[0].1.clone();
    let first: BTreeSet<usize> = all.iter().take(1).copied().collect();
    let mask = 1i64 << first.iter().next().unwrap();
    let server = TestServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut client = connect_sa(server.port()).await;
        run(&mut client, "exec sp_configure 'show advanced options', 1; reconfigure;").await.unwrap();
        run(&mut client, &format!("exec sp_configure 'affinity mask', {mask}; reconfigure;")).await.unwrap();
        assert_all_on(&first);
        // Threads the server starts from now on (a new connection, blocking work) inherit it.
        let mut second = connect_sa(server.port()).await;
        run(
            &mut second,
            "create database aff; create table aff.dbo.t (id int primary key); insert aff.dbo.t values (1);",
        )
        .await
        .unwrap();
        assert_all_on(&first);
        let row = client
            .simple_query("select value_in_use from sys.configurations where name = 'affinity mask'")
            .await
            .unwrap()
            .into_row()
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.get::<i64, _>(0), Some(mask));

        run(&mut client, "alter server configuration set process affinity cpu = auto").await.unwrap();
        assert_all_on(&all);
        let last = *all.iter().last().unwrap();
        run(&mut client, &format!("alter server configuration set process affinity cpu = {last} to {last}"))
            .await
            .unwrap();
        assert_all_on(&[last].into());

        // CPUs the machine does not have: SQL Server's 5832, and nothing changes.
        let e =
            run(&mut client, "alter server configuration set process affinity cpu = 0, 40 to 41").await.unwrap_err();
        assert_eq!(e.code(), Some(5832), "{e}");
        if !all.contains(&30) {
            let e = run(&mut client, "exec sp_configure 'affinity mask', 1073741824").await.unwrap_err();
            assert_eq!(e.code(), Some(5832), "{e}");
        }
        assert_all_on(&[last].into());
        run(&mut client, "alter server configuration set process affinity cpu = auto").await.unwrap();
        assert_all_on(&all);
    });
}
