//! Resource Governor over TDS: pools and workload groups made, altered and dropped with
//! SQL Server's checks and errors, a classifier function in master putting a login's
//! sessions in a capped group, the stored and the running configuration in their views,
//! DISABLE, and the configuration kept over a restart. No timing is asserted: the DMVs'
//! counters say what the cap held back.

mod common;

use common::tds::{connect_as, count, refused, run, BUSY_LOOP};
use common::{TestServer, PASSWORD};

const GUS: &str = "Gus-Pass-123";

const CLASSIFIER: &str = "CREATE FUNCTION dbo.rg_classifier() RETURNS sysname WITH SCHEMABINDING AS \
     BEGIN RETURN CASE WHEN SUSER_NAME() = N'gus' THEN N'narrow' ELSE N'default' END END";

#[test]
fn pools_groups_and_a_classifier_govern_a_login_s_sessions() {
    let mut server = TestServer::start();
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let spid_group = |spid: i32| format!("SELECT group_id FROM sys.dm_exec_sessions WHERE session_id = {spid}");
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, &format!("CREATE LOGIN gus WITH PASSWORD = '{GUS}'")).await;
        let mut gus = connect_as(port, "gus", GUS).await;
        assert_eq!(refused(&mut gus, "CREATE RESOURCE POOL p").await.0, 10902);

        run(&mut sa, "CREATE RESOURCE POOL capped WITH (CAP_CPU_PERCENT = 1, MAX_CPU_PERCENT = 50)").await;
        run(&mut sa, "CREATE WORKLOAD GROUP narrow WITH (GROUP_MAX_REQUESTS = 1, IMPORTANCE = LOW) USING capped").await;
        // SQL Server's checks.
        for (sql, number) in [
            ("CREATE RESOURCE POOL capped", 10919),
            ("CREATE RESOURCE POOL #p", 10915),
            ("CREATE RESOURCE POOL p WITH (MIN_CPU_PERCENT = 60, MAX_CPU_PERCENT = 50)", 10908),
            ("CREATE RESOURCE POOL p WITH (MAX_CPU_PERCENT = 101)", 10908),
            ("CREATE RESOURCE POOL p WITH (MIN_CPU_PERCENT = 0, CAP_CPU_PERCENT = 0)", 10909),
            ("ALTER RESOURCE POOL missing WITH (MAX_CPU_PERCENT = 5)", 10912),
            ("ALTER RESOURCE POOL internal WITH (MAX_CPU_PERCENT = 5)", 10916),
            ("DROP RESOURCE POOL capped", 10917),
            ("DROP RESOURCE POOL [default]", 10913),
            ("CREATE WORKLOAD GROUP g USING internal", 10914),
            ("CREATE WORKLOAD GROUP g USING missing", 10912),
            ("ALTER WORKLOAD GROUP narrow", 10918),
            ("ALTER WORKLOAD GROUP [default] USING capped", 10922),
            ("DROP WORKLOAD GROUP missing", 15151),
            ("DROP WORKLOAD GROUP [internal]", 10913),
            ("BEGIN TRAN; CREATE RESOURCE POOL p", 574),
        ] {
            assert_eq!(refused(&mut sa, sql).await.0, number, "{sql}");
        }
        run(&mut sa, "IF @@TRANCOUNT > 0 ROLLBACK").await;
        run(&mut sa, "CREATE RESOURCE POOL half WITH (MIN_CPU_PERCENT = 60)").await;
        assert_eq!(refused(&mut sa, "CREATE RESOURCE POOL more WITH (MIN_CPU_PERCENT = 50)").await.0, 10911);
        run(&mut sa, "DROP RESOURCE POOL half").await;

        // The classifier: a schema-bound function in master without parameters.
        run(&mut sa, "USE master").await;
        run(&mut sa, "CREATE FUNCTION dbo.bad(@n int) RETURNS sysname AS BEGIN RETURN N'x' END").await;
        assert_eq!(refused(&mut sa, "ALTER RESOURCE GOVERNOR WITH (CLASSIFIER_FUNCTION = dbo.bad)").await.0, 10907);
        run(&mut sa, "CREATE FUNCTION dbo.unbound() RETURNS sysname AS BEGIN RETURN N'x' END").await;
        let unbound = "ALTER RESOURCE GOVERNOR WITH (CLASSIFIER_FUNCTION = dbo.unbound)";
        assert_eq!(refused(&mut sa, unbound).await.0, 10907, "not schema-bound");
        assert_eq!(refused(&mut sa, "ALTER RESOURCE GOVERNOR WITH (CLASSIFIER_FUNCTION = dbo.none)").await.0, 10903);
        run(&mut sa, CLASSIFIER).await;
        run(&mut sa, "ALTER RESOURCE GOVERNOR WITH (CLASSIFIER_FUNCTION = dbo.rg_classifier)").await;
        assert_eq!(refused(&mut sa, "DROP FUNCTION dbo.rg_classifier").await.0, 10921);
        let pending = "SELECT CAST(is_reconfiguration_pending AS int) FROM sys.dm_resource_governor_configuration";
        assert_eq!(count(&mut sa, pending).await, 1);
        run(&mut sa, "ALTER RESOURCE GOVERNOR RECONFIGURE").await;
        assert_eq!(count(&mut sa, pending).await, 0);
        assert_eq!(
            count(
                &mut sa,
                "SELECT COUNT(*) FROM sys.resource_governor_configuration \
                 WHERE is_enabled = 1 AND classifier_function_id = OBJECT_ID('master.dbo.rg_classifier')"
            )
            .await,
            1
        );
        assert_eq!(
            count(&mut sa, "SELECT cap_cpu_percent FROM sys.dm_resource_governor_resource_pools WHERE name = 'capped'")
                .await,
            1
        );

        // A new session of gus is in the narrow group, sa's in the default one.
        let narrow =
            count(&mut sa, "SELECT group_id FROM sys.resource_governor_workload_groups WHERE name = 'narrow'").await;
        assert!(narrow >= 256);
        let mut gus = connect_as(port, "gus", GUS).await;
        let gus_spid = count(&mut gus, "SELECT CAST(@@SPID AS int)").await;
        let sa_spid = count(&mut sa, "SELECT CAST(@@SPID AS int)").await;
        assert_eq!(count(&mut sa, &spid_group(gus_spid)).await, narrow);
        assert_eq!(count(&mut sa, &spid_group(sa_spid)).await, 1 + 1, "the default group");

        // gus's loop runs in the capped pool: held back, and answered.
        let answer = count(&mut gus, BUSY_LOOP).await;
        let delayed = "SELECT CAST(total_cpu_delayed_ms AS int) FROM sys.dm_resource_governor_resource_pools \
                       WHERE name = 'capped'";
        assert!(count(&mut sa, delayed).await > 0);
        let requests = "SELECT CAST(total_request_count AS int) FROM sys.dm_resource_governor_workload_groups \
                        WHERE name = 'narrow'";
        assert!(count(&mut sa, requests).await >= 2);
        assert_eq!(count(&mut sa, BUSY_LOOP).await, answer);

        // DISABLE: new sessions go to the default group.
        run(&mut sa, "ALTER RESOURCE GOVERNOR DISABLE").await;
        let mut gus2 = connect_as(port, "gus", GUS).await;
        let gus2_spid = count(&mut gus2, "SELECT CAST(@@SPID AS int)").await;
        assert_eq!(count(&mut sa, &spid_group(gus2_spid)).await, 2);
        run(&mut sa, "ALTER RESOURCE GOVERNOR RECONFIGURE").await;
    });
    server.restart();
    rt.block_on(async {
        let port = server.port();
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        assert_eq!(
            count(
                &mut sa,
                "SELECT group_max_requests FROM sys.resource_governor_workload_groups WHERE name = 'narrow'"
            )
            .await,
            1,
            "kept over a restart"
        );
        let mut gus = connect_as(port, "gus", GUS).await;
        let spid = count(&mut gus, "SELECT CAST(@@SPID AS int)").await;
        let narrow =
            count(&mut sa, "SELECT group_id FROM sys.dm_resource_governor_workload_groups WHERE name = 'narrow'").await;
        assert_eq!(count(&mut sa, &spid_group(spid)).await, narrow, "in force again at start");
        run(&mut sa, "DROP WORKLOAD GROUP narrow; DROP RESOURCE POOL capped").await;
        run(&mut sa, "ALTER RESOURCE GOVERNOR WITH (CLASSIFIER_FUNCTION = NULL); ALTER RESOURCE GOVERNOR RECONFIGURE")
            .await;
        run(&mut sa, "USE master; DROP FUNCTION dbo.rg_classifier").await;
        assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM sys.dm_resource_governor_resource_pools").await, 2);
    });
}

/// Query memory under Resource Governor: a pool's MAX_MEMORY_PERCENT less what other
/// pools' MIN_MEMORY_PERCENT reserves bounds its statements' grants together (shown as
/// max_memory_kb); a group's REQUEST_MAX_MEMORY_GRANT_PERCENT = 0 leaves its statements
/// no memory for a sort, which fails with 701 naming the pool, while the same sort in the
/// default group runs.
#[test]
fn pools_bound_query_memory_and_a_group_without_grants_cannot_sort() {
    let server = TestServer::start_with(|c| c.memory_mb = 1024);
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let max_kb = |pool: &str| {
        format!("SELECT CAST(max_memory_kb AS int) FROM sys.dm_resource_governor_resource_pools WHERE name = '{pool}'")
    };
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, &format!("CREATE LOGIN gus WITH PASSWORD = '{GUS}'")).await;
        run(&mut sa, "CREATE RESOURCE POOL reserved WITH (MIN_MEMORY_PERCENT = 60)").await;
        run(&mut sa, "CREATE RESOURCE POOL lean WITH (MAX_MEMORY_PERCENT = 100)").await;
        run(&mut sa, "CREATE WORKLOAD GROUP nosort WITH (REQUEST_MAX_MEMORY_GRANT_PERCENT = 0) USING lean").await;
        run(&mut sa, CLASSIFIER.replace("N'narrow'", "N'nosort'").as_str()).await;
        run(&mut sa, "ALTER RESOURCE GOVERNOR WITH (CLASSIFIER_FUNCTION = dbo.rg_classifier)").await;
        run(&mut sa, "ALTER RESOURCE GOVERNOR RECONFIGURE").await;
        // 60 % is reserved for `reserved`: `lean` may use the other 40 % at most.
        let (reserved, lean) = (count(&mut sa, &max_kb("reserved")).await, count(&mut sa, &max_kb("lean")).await);
        assert_eq!((lean * 100 + reserved / 2) / reserved, 40, "lean {lean} KiB, reserved {reserved} KiB");

        let sort = "SELECT name FROM sys.databases ORDER BY name DESC";
        let mut gus = connect_as(port, "gus", GUS).await;
        let (number, message) = refused(&mut gus, sort).await;
        assert_eq!(number, 701, "{message}");
        assert!(message.contains("resource pool 'lean'"), "{message}");
        let oom = "SELECT CAST(out_of_memory_count AS int) FROM sys.dm_resource_governor_resource_pools \
                   WHERE name = 'lean'";
        assert!(count(&mut sa, oom).await >= 1);
        run(&mut sa, sort).await;
        run(&mut sa, "ALTER WORKLOAD GROUP nosort WITH (REQUEST_MAX_MEMORY_GRANT_PERCENT = 25)").await;
        run(&mut sa, "ALTER RESOURCE GOVERNOR RECONFIGURE").await;
        run(&mut gus, sort).await;
        run(&mut sa, "ALTER RESOURCE GOVERNOR DISABLE").await;
    });
}
