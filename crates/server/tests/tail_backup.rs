//! A tail-log backup (`BACKUP LOG … WITH NORECOVERY`) taken while clients write: every
//! insert a client saw succeed is in the database restored from the full backup and the
//! tail, and nothing commits in the source after the tail — the database is RESTORING
//! from then on. This is how a tenant moves between servers (issue 39): a commit
//! acknowledged between the tail's last LSN and the RESTORING state would be lost in the
//! move. Writers that arrive while the backup holds the database get 927, not a success.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::tds::{connect_as, connect_to, count, refused, run};
use common::{TestServer, PASSWORD};

const WRITERS: i32 = 4;

#[test]
fn a_tail_log_backup_under_writers_holds_every_acknowledged_insert() {
    let server = TestServer::start();
    let port = server.port();
    let media = tempfile::tempdir().unwrap();
    let m = media.path().display().to_string();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "create database shop; alter database shop set recovery full").await;
        run(
            &mut sa,
            "use shop; create table t (writer int not null, n int not null, primary key (writer, n)); use master",
        )
        .await;
        run(&mut sa, &format!("backup database shop to disk = '{m}/full.bak'")).await;

        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            let stop = stop.clone();
            writers.push(tokio::spawn(async move {
                let mut c = connect_to(port, "sa", PASSWORD, "shop").await.expect("login to shop");
                let mut acknowledged = 0;
                // Each insert is its own transaction; the first failure ends the writer (the
                // database is held, then RESTORING).
                while !stop.load(Ordering::Relaxed) {
                    let sql = format!("insert t values ({w}, {})", acknowledged + 1);
                    let done = match c.simple_query(sql).await {
                        Ok(s) => s.into_results().await.is_ok(),
                        Err(_) => false,
                    };
                    if !done {
                        break;
                    }
                    acknowledged += 1;
                }
                acknowledged
            }));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        run(&mut sa, &format!("backup log shop to disk = '{m}/tail.bak' with norecovery")).await;
        stop.store(true, Ordering::Relaxed);
        let mut acknowledged = Vec::new();
        for w in writers {
            acknowledged.push(w.await.unwrap());
        }
        assert!(acknowledged.iter().all(|&a| a > 0), "every writer wrote before the tail: {acknowledged:?}");

        // The source is RESTORING: nothing more commits there.
        let (number, _) = refused(&mut sa, "insert shop.dbo.t values (99, 1)").await;
        assert_eq!(number, 927);

        run(
            &mut sa,
            &format!(
                "restore database moved from disk = '{m}/full.bak' with norecovery, \
                 move 'shop' to '{m}/moved.mdf', move 'shop_log' to '{m}/moved.ldf'"
            ),
        )
        .await;
        run(&mut sa, &format!("restore log moved from disk = '{m}/tail.bak' with recovery")).await;
        for (w, &acked) in acknowledged.iter().enumerate() {
            let rows = count(&mut sa, &format!("select count(*) from moved.dbo.t where writer = {w}")).await;
            let top = count(&mut sa, &format!("select isnull(max(n), 0) from moved.dbo.t where writer = {w}")).await;
            // Every acknowledged insert is there; at most the one in flight when the
            // database was held, whose answer the writer did not see, besides.
            assert!(
                rows == top && (acked..=acked + 1).contains(&rows),
                "writer {w}: {rows} rows, {acked} acknowledged"
            );
        }

        // The source comes back as it was at the tail: the same rows as the moved copy.
        run(&mut sa, "restore database shop with recovery").await;
        let here = count(&mut sa, "select count(*) from shop.dbo.t").await;
        let there = count(&mut sa, "select count(*) from moved.dbo.t").await;
        assert_eq!(here, there);
    });
}
