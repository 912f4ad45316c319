//! The metrics listener's dashboard (`GET /`) in headless Chromium: a server with load
//! running over TDS (autocommit inserts, and one session blocked by another) is loaded
//! twice with `--dump-dom` (the page reads `/api/summary` every second, in virtual time);
//! the figures in the DOM move between the two loads and agree with the DMVs read around
//! them, and a screenshot is kept under target/ (its path printed). Skipped when
//! `chromium` is missing (`scripts/install-clients.sh` installs Debian's).

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::tds::{connect_as, count, eventually, run, Conn};
use common::{TestServer, PASSWORD};

/// Runs headless Chromium on the page at `addr` with `action` (`--dump-dom`, or
/// `--screenshot=…`); its standard output.
fn chromium(addr: SocketAddr, action: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new("chromium")
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--window-size=1280,1000"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        // The page fetches the summary every second: four or five of them.
        .arg("--virtual-time-budget=4500")
        .arg(action)
        .arg(format!("http://{addr}/"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("chromium starts");
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(120), "chromium did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "chromium failed: {}", out.status);
    String::from_utf8(out.stdout).unwrap()
}

/// The `data-value` of the element `id` in a dumped DOM.
fn figure(dom: &str, id: &str) -> String {
    let at = dom.find(&format!("id=\"{id}\" data-value=\"")).unwrap_or_else(|| panic!("no #{id} in\n{dom}"));
    let rest = &dom[at + id.len() + 18..];
    rest[..rest.find('"').unwrap()].to_string()
}

fn number(dom: &str, id: &str) -> f64 {
    let v = figure(dom, id);
    v.parse().unwrap_or_else(|_| panic!("#{id} is {v:?}"))
}

/// The value of `attribute` in the first element whose markup has `marker`.
fn attribute(dom: &str, marker: &str, attribute: &str) -> Option<f64> {
    let at = dom.find(marker)?;
    let tag = &dom[at..at + dom[at..].find('>')?];
    let start = tag.find(&format!("{attribute}=\""))? + attribute.len() + 2;
    tag[start..start + tag[start..].find('"')?].parse().ok()
}

async fn big(c: &mut Conn, sql: &str) -> i64 {
    let row = c.query(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).into_row().await.unwrap().unwrap();
    row.get::<i64, _>(0).expect("a bigint")
}

#[test]
fn the_dashboard_follows_the_load_and_agrees_with_the_dmvs() {
    if !common::have("chromium") {
        eprintln!("chromium is missing: dashboard test skipped (scripts/install-clients.sh installs it)");
        return;
    }
    let server = TestServer::start_with(|c| c.metrics_port = Some(0));
    let addr = server.server.as_ref().unwrap().metrics_addr.expect("a metrics listener");
    let port = server.port();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(3).enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE busy").await;
        run(&mut sa, "USE busy; CREATE TABLE t (id int PRIMARY KEY, v int); INSERT t VALUES (0, 0)").await;
        // Commits that do not wait for the disk: many between the page's reads of the
        // summary, which virtual time makes milliseconds apart.
        run(&mut sa, "ALTER DATABASE busy SET DELAYED_DURABILITY = FORCED").await;

        // The load: inserts, one at a time, until told to stop.
        let (stop, inserted) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let mut loader = connect_as(port, "sa", PASSWORD).await;
        run(&mut loader, "USE busy").await;
        let load = {
            let (stop, inserted) = (stop.clone(), inserted.clone());
            tokio::spawn(async move {
                let mut id = 1;
                while !stop.load(Ordering::Relaxed) {
                    run(&mut loader, &format!("INSERT t VALUES ({id}, {id})")).await;
                    inserted.fetch_add(1, Ordering::Relaxed);
                    id += 1;
                }
            })
        };
        // A blocking chain: the waiter's UPDATE waits for the holder's transaction.
        let mut holder = connect_as(port, "sa", PASSWORD).await;
        let mut waiter = connect_as(port, "sa", PASSWORD).await;
        let (holder_spid, waiter_spid) = (
            count(&mut holder, "SELECT CAST(@@SPID AS int)").await,
            count(&mut waiter, "SELECT CAST(@@SPID AS int)").await,
        );
        run(&mut holder, "USE busy; BEGIN TRAN; UPDATE t SET v = -1 WHERE id = 0").await;
        run(&mut waiter, "USE busy").await;
        let blocked = tokio::spawn(async move {
            run(&mut waiter, "UPDATE t SET v = -2 WHERE id = 0").await;
        });
        eventually(&mut sa, "SELECT COUNT(*) FROM sys.dm_exec_requests WHERE blocking_session_id <> 0", 1).await;
        while inserted.load(Ordering::Relaxed) < 20 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }

        let page = |action: String| tokio::task::spawn_blocking(move || chromium(addr, &action));
        let first = page("--dump-dom".to_string()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let sessions = count(&mut sa, "SELECT COUNT(*) FROM sys.dm_exec_sessions").await;
        let writelog = "SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'WRITELOG'";
        let (writelog_before, inserted_before) = (big(&mut sa, writelog).await, inserted.load(Ordering::Relaxed));
        let second = page("--dump-dom".to_string()).await.unwrap();
        let (writelog_after, inserted_after) = (big(&mut sa, writelog).await, inserted.load(Ordering::Relaxed));
        let hits = big(
            &mut sa,
            "SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Buffer cache hit ratio'",
        )
        .await as f64;
        let fetches = big(
            &mut sa,
            "SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Buffer cache hit ratio base'",
        )
        .await as f64;

        for dom in [&first, &second] {
            assert!(number(dom, "samples") >= 2.0, "the page read the summary more than once");
        }
        // Moving between the loads.
        for id in ["requests-total", "commits-total"] {
            assert!(
                number(&second, id) > number(&first, id),
                "#{id}: {} then {}",
                figure(&first, id),
                figure(&second, id)
            );
        }
        assert!(number(&second, "commits-rate") > 0.0 && number(&second, "requests-rate") > 0.0);
        assert!(number(&second, "p50") > 0.0 && number(&second, "p99") >= number(&second, "p50"));
        // Agreeing with the DMVs and with what the test did.
        assert_eq!(number(&second, "connections"), 4.0, "sa, the loader, the holder and the waiter");
        assert_eq!(number(&second, "sessions"), f64::from(sessions));
        assert_eq!(number(&second, "blocked"), 1.0);
        let link = format!("data-session=\"{waiter_spid}\" data-blocker=\"{holder_spid}\"");
        assert!(second.contains(&link), "the chain {holder_spid} → {waiter_spid} is shown:\n{second}");
        assert!(second.contains(&format!("data-head=\"{holder_spid}\"")));
        // busy's commits: its setup (a few) and the inserts done by the time of the page.
        let committed =
            attribute(&second, "data-database=\"busy\"", "data-committed").expect("busy is among the busiest");
        assert!(
            committed >= inserted_before as f64 && committed <= inserted_after as f64 + 5.0,
            "{inserted_before} <= {committed} <= {inserted_after} + 5"
        );
        let waits =
            attribute(&second, "data-wait-type=\"WRITELOG\"", "data-waits").expect("WRITELOG among the top waits");
        assert!(
            writelog_before as f64 <= waits && waits <= writelog_after as f64,
            "{writelog_before} {waits} {writelog_after}"
        );
        let ratio = number(&second, "bp-hit-ratio-total");
        assert!((ratio - 100.0 * hits / fetches).abs() < 2.0, "{ratio} % vs the DMV's {} %", 100.0 * hits / fetches);

        let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tessera-dashboard.png");
        let _ = std::fs::remove_file(&shot);
        page(format!("--screenshot={}", shot.display())).await.unwrap();
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(size > 10_000, "a screenshot at {}", shot.display());
        println!("dashboard screenshot: {}", shot.display());

        run(&mut holder, "COMMIT").await;
        blocked.await.unwrap();
        stop.store(true, Ordering::Relaxed);
        load.await.unwrap();
    });
}
