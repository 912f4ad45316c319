//! The SQLOS views over TDS: sys.dm_os_sys_info (the CPUs, the server's start) and
//! sys.dm_os_schedulers (one online scheduler per CPU the server may use, the running
//! requests counted on them); 'affinity mask' takes schedulers offline and makes the
//! affinity MANUAL; both views need VIEW SERVER STATE. The server runs in this test's
//! process and the affinity pins every thread of it, so this file holds this one test.

mod common;

use std::collections::BTreeSet;

use common::tds::{connect_as, count, eventually, refused, run, text};
use common::{TestServer, PASSWORD};

/// The CPUs this process may run on (`Cpus_allowed_list` of /proc/self/status).
fn allowed_cpus() -> BTreeSet<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
    list.split(',')
        .flat_map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            a.trim().parse::<usize>().unwrap()..=b.trim().parse::<usize>().unwrap()
        })
        .collect()
}

#[test]
fn the_os_views_show_the_cpus_the_schedulers_and_the_start() {
    let cpus = allowed_cpus();
    let server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        let info = |column: &str| format!("SELECT CAST({column} AS int) FROM sys.dm_os_sys_info");

        // One VISIBLE ONLINE scheduler per CPU the process may use, numbered from 0.
        let cpu_count = count(&mut sa, &info("cpu_count")).await;
        assert_eq!(cpu_count, cpus.len() as i32);
        assert_eq!(count(&mut sa, &info("scheduler_count")).await, cpu_count);
        assert_eq!(
            count(&mut sa, "SELECT COUNT(*) FROM sys.dm_os_schedulers WHERE status = 'VISIBLE ONLINE'").await,
            cpu_count
        );
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.dm_os_schedulers WHERE is_online = 0").await, 0);
        assert_eq!(count(&mut sa, "SELECT MAX(scheduler_id) FROM sys.dm_os_schedulers").await, cpu_count - 1);
        for cpu in &cpus {
            let on = format!("SELECT COUNT(*) FROM sys.dm_os_schedulers WHERE cpu_id = {cpu}");
            assert_eq!(count(&mut sa, &on).await, 1, "CPU {cpu}");
        }
        assert_eq!(text(&mut sa, "SELECT affinity_type_desc FROM sys.dm_os_sys_info").await.as_deref(), Some("AUTO"));

        // The process's threads are the workers: the one reading runs (its scheduler is
        // not idle), and its request is a task.
        assert!(count(&mut sa, "SELECT SUM(current_workers_count) FROM sys.dm_os_schedulers").await > 3);
        assert!(count(&mut sa, "SELECT COUNT(*) FROM sys.dm_os_schedulers WHERE is_idle = 0").await >= 1);
        assert!(count(&mut sa, "SELECT SUM(current_tasks_count) FROM sys.dm_os_schedulers").await >= 1);
        // Another session's running request is one more.
        let mut sleeper = connect_as(port, "sa", PASSWORD).await;
        let sleeping = tokio::spawn(async move { run(&mut sleeper, "WAITFOR DELAY '00:00:02'").await });
        eventually(
            &mut sa,
            "SELECT CASE WHEN SUM(current_tasks_count) >= 2 THEN 1 ELSE 0 END FROM sys.dm_os_schedulers",
            1,
        )
        .await;
        sleeping.await.unwrap();
        assert!(count(&mut sa, &info("process_user_time_ms + process_kernel_time_ms")).await > 0);
        assert!(count(&mut sa, &info("committed_target_kb")).await > 0);
        assert!(count(&mut sa, &info("physical_memory_kb / 1024")).await > 0);
        assert_eq!(
            count(&mut sa, &info("CASE WHEN sqlserver_start_time_ms_ticks <= ms_ticks THEN 1 ELSE 0 END")).await,
            1
        );

        // The server started within the last minute, and its start does not move.
        let age = count(&mut sa, &info("DATEDIFF(second, sqlserver_start_time, GETDATE())")).await;
        assert!((0..60).contains(&age), "started {age} s ago");
        let started = "SELECT CONVERT(varchar(30), sqlserver_start_time, 121) + ' ' \
                       + CAST(sqlserver_start_time_ms_ticks AS varchar(20)) FROM sys.dm_os_sys_info";
        let first = text(&mut sa, started).await.expect("a start time");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(text(&mut sa, started).await.expect("a start time"), first);

        // An affinity mask leaves one CPU online: MANUAL, and the others' schedulers offline.
        if cpus.len() > 1 {
            let first_cpu = *cpus.iter().next().unwrap();
            run(&mut sa, &format!("ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = {first_cpu}")).await;
            assert_eq!(count(&mut sa, &info("cpu_count")).await, 1);
            assert_eq!(count(&mut sa, &info("scheduler_total_count")).await, cpus.len() as i32);
            assert_eq!(
                text(&mut sa, "SELECT affinity_type_desc FROM sys.dm_os_sys_info").await.as_deref(),
                Some("MANUAL")
            );
            let online = "SELECT cpu_id FROM sys.dm_os_schedulers WHERE status = 'VISIBLE ONLINE' AND scheduler_id = 0";
            assert_eq!(count(&mut sa, &format!("SELECT CAST(({online}) AS int)")).await, first_cpu as i32);
            let offline =
                "SELECT COUNT(*) FROM sys.dm_os_schedulers WHERE status = 'VISIBLE OFFLINE' AND is_online = 0";
            assert_eq!(count(&mut sa, offline).await, cpus.len() as i32 - 1);
            run(&mut sa, "ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO").await;
            assert_eq!(count(&mut sa, &info("cpu_count")).await, cpus.len() as i32);
            assert_eq!(
                text(&mut sa, "SELECT affinity_type_desc FROM sys.dm_os_sys_info").await.as_deref(),
                Some("AUTO")
            );
        }

        // Both need VIEW SERVER STATE.
        run(&mut sa, "CREATE LOGIN pat WITH PASSWORD = 'Pat-Pass-123'").await;
        let mut pat = connect_as(port, "pat", "Pat-Pass-123").await;
        for view in ["sys.dm_os_sys_info", "sys.dm_os_schedulers"] {
            assert_eq!(refused(&mut pat, &format!("SELECT * FROM {view}")).await.0, 300, "{view}");
        }
        run(&mut sa, "GRANT VIEW SERVER STATE TO pat").await;
        assert_eq!(count(&mut pat, "SELECT COUNT(*) FROM sys.dm_os_sys_info").await, 1);
    });
}
