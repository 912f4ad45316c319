//! `CREATE DATABASE … AS COPY OF` over TDS: a copy holds its source's committed work as
//! of the copy — every object (tables, indexes, views, procedures, users) and a
//! consistent state while transfers run against the source, never a transaction still
//! open — and lives on its own: it survives a restart and the source's drop. Errors are
//! SQL Server's: 911 for a missing source, 1801 for a taken name, 7202 for another
//! server, 262 for a login that does not control the source.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::tds::{connect_as, count, refused, run, Conn};
use common::{TestServer, PASSWORD};

const ACCOUNTS: i32 = 20;
const TOTAL: i32 = ACCOUNTS * 100;

async fn make_bank(sa: &mut Conn) {
    run(sa, "create database bank").await;
    run(
        sa,
        "use bank; create table accounts (id int primary key, balance int not null, owner nvarchar(40)); \
         create index by_owner on accounts (owner); \
         exec('create view rich as select id, balance from accounts where balance > 100');",
    )
    .await;
    run(
        sa,
        "use bank; exec('create procedure transfer @from int, @to int, @amount int as \
         begin set nocount on; begin tran; \
         update accounts set balance = balance - @amount where id = @from; \
         update accounts set balance = balance + @amount where id = @to; commit; end')",
    )
    .await;
    run(
        sa,
        &format!(
            "use bank; insert accounts select value, 100, concat('owner', value) from generate_series(1, {ACCOUNTS})"
        ),
    )
    .await;
    run(sa, &format!("create login teller with password = '{PASSWORD}'; use bank; create user teller for login teller; grant execute on transfer to teller")).await;
    run(sa, "use master").await;
}

/// The copy's total and rows, and that its procedure, view, index and user work.
async fn check_copy(sa: &mut Conn, copy: &str) {
    assert_eq!(count(sa, &format!("select sum(balance) from [{copy}].dbo.accounts")).await, TOTAL, "{copy}");
    assert_eq!(count(sa, &format!("select count(*) from [{copy}].dbo.accounts")).await, ACCOUNTS);
    run(sa, &format!("exec [{copy}].dbo.transfer 1, 2, 0")).await;
    let rich = count(sa, &format!("select count(*) from [{copy}].dbo.rich")).await;
    assert!(rich <= ACCOUNTS);
    let by_owner = count(
        sa,
        &format!("select count(*) from [{copy}].dbo.accounts with (index(by_owner)) where owner like 'owner%'"),
    )
    .await;
    assert_eq!(by_owner, ACCOUNTS);
    assert_eq!(
        count(sa, &format!("select count(*) from [{copy}].sys.database_principals where name = 'teller'")).await,
        1
    );
}

#[test]
fn a_copy_is_its_source_as_of_the_copy_with_every_object() {
    let mut server = TestServer::start();
    let port = server.port();
    let data_dir = server.dir.path().join("data");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        make_bank(&mut sa).await;

        // Transfers run against the source while it is copied: each copy holds a
        // consistent state (the total never changes).
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicUsize::new(0));
        let writer = {
            let (stop, done) = (stop.clone(), done.clone());
            tokio::spawn(async move {
                let mut teller = connect_as(port, "teller", PASSWORD).await;
                run(&mut teller, "use bank").await;
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let (from, to) = (n % ACCOUNTS + 1, (n * 7 + 3) % ACCOUNTS + 1);
                    run(&mut teller, &format!("exec transfer {from}, {to}, {}", n % 13)).await;
                    n += 1;
                    done.store(n as usize, Ordering::Relaxed);
                }
                n
            })
        };
        for k in 0..4 {
            // Some transfers before each copy, and others while it runs.
            let before = done.load(Ordering::Relaxed);
            while done.load(Ordering::Relaxed) < before + 3 {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            run(&mut sa, &format!("create database copy{k} as copy of bank")).await;
        }
        stop.store(true, Ordering::Relaxed);
        let transfers = writer.await.unwrap();
        assert!(transfers > 0);
        for k in 0..4 {
            check_copy(&mut sa, &format!("copy{k}")).await;
        }

        // A transaction open in the source is not in the copy.
        let mut open = connect_as(port, "sa", PASSWORD).await;
        run(&mut open, "use bank; begin tran; update accounts set balance = balance + 1000 where id = 1").await;
        run(&mut sa, "create database [copy with open] as copy of bank").await;
        run(&mut open, "rollback").await;
        check_copy(&mut sa, "copy with open").await;

        // A copy of a copy, and copies are their own: changes to one are not in another.
        // copy2 is quiet when it is copied (nothing logged after its checkpoint), so the
        // copy gets a fresh small log, not copy2's VLFs.
        run(&mut sa, "create database copy2b as copy of copy2").await;
        let log_bytes = |name: &str| std::fs::metadata(data_dir.join(format!("{name}_log.ldf"))).unwrap().len();
        assert!(log_bytes("copy2") > 64 << 10, "the source's log grew: {}", log_bytes("copy2"));
        assert_eq!(log_bytes("copy2b"), 28 << 10, "a fresh log: its header and one 24 KiB VLF");
        run(&mut sa, "update copy2.dbo.accounts set balance = 0").await;
        check_copy(&mut sa, "copy2b").await;
        check_copy(&mut sa, "copy1").await;

        // Errors.
        assert_eq!(refused(&mut sa, "create database c9 as copy of nope").await.0, 911);
        assert_eq!(refused(&mut sa, "create database copy1 as copy of bank").await.0, 1801);
        assert_eq!(refused(&mut sa, "create database c9 as copy of elsewhere.bank").await.0, 7202);
        run(
            &mut sa,
            &format!("create login outsider with password = '{PASSWORD}'; grant create any database to outsider"),
        )
        .await;
        let mut outsider = connect_as(port, "outsider", PASSWORD).await;
        assert_eq!(refused(&mut outsider, "create database c9 as copy of bank").await.0, 262);
        assert_eq!(count(&mut sa, "select count(*) from sys.databases where name = 'c9'").await, 0);
        // Its own database it may copy, and it owns the copy.
        run(&mut outsider, "create database mine; create database mine2 as copy of mine").await;
        let owner = count(
            &mut sa,
            "select count(*) from sys.databases where name = 'mine2' and suser_sname(owner_sid) = 'outsider'",
        )
        .await;
        assert_eq!(owner, 1);
        run(&mut sa, "drop database bank").await;
    });
    server.restart();
    let port = server.port();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        for copy in ["copy0", "copy3", "copy with open", "copy2b"] {
            check_copy(&mut sa, copy).await;
        }
    });
}
