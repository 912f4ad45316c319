//! The metrics listener (`metrics_port`): a server under load over TDS is scraped twice
//! at `GET /metrics`; both scrapes are parsed by the official Python client's parser of
//! Prometheus' text format (`tests/clients/prometheus_parse.py`, `prometheus_client`,
//! which `scripts/install-clients.sh` installs), and the figures must have moved by what
//! the test did (requests, committed and rolled-back transactions, per database and in
//! total) and agree with the DMVs read around the scrape (waits with
//! sys.dm_os_wait_stats, plan cache and buffer pool counters and a database's log bytes
//! with sys.dm_os_performance_counters, blocked requests with sys.dm_exec_requests).
//! Other paths get 404; without `metrics_port` nothing more listens. The tests of this
//! file take turns (`TURN`), so that the listening sockets of the process are theirs.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::SocketAddr;

use common::tds::{connect_as, count, eventually, run, Conn};
use common::{TestServer, PASSWORD};

static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One HTTP/1.1 request; the status code, the headers (lower-cased names) and the body.
fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, String, String) {
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect to the metrics port");
    write!(tcp, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    tcp.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status code");
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// A scrape as the Python parser read it: each family's type, each sample's value by
/// `name{label=value,...}` (labels sorted; no braces without labels).
#[derive(Debug)]
struct Scrape {
    types: BTreeMap<String, String>,
    samples: BTreeMap<String, f64>,
}

impl Scrape {
    fn get(&self, key: &str) -> f64 {
        *self.samples.get(key).unwrap_or_else(|| panic!("no sample {key} in the scrape"))
    }
}

fn parse(text: &str) -> Scrape {
    let mut python = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/prometheus_parse.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    python.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the Prometheus parser refused the scrape (is prometheus_client installed? scripts/install-clients.sh):\n{}\n--- the scrape\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut scrape = Scrape { types: BTreeMap::new(), samples: BTreeMap::new() };
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts[..] {
            ["F", name, kind] => {
                scrape.types.insert(name.to_string(), kind.to_string());
            }
            ["S", name, labels, value] => {
                let key = if labels == "-" { name.to_string() } else { format!("{name}{{{labels}}}") };
                scrape.samples.insert(key, value.parse().unwrap());
            }
            _ => panic!("unexpected parser output {line:?}"),
        }
    }
    scrape
}

fn scrape(addr: SocketAddr) -> (String, Scrape) {
    let (status, head, body) = http(addr, "GET", "/metrics");
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(head.contains("content-type: text/plain; version=0.0.4"), "{head}");
    let parsed = parse(&body);
    (body, parsed)
}

async fn big(c: &mut Conn, sql: &str) -> i64 {
    let row = c.query(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).into_row().await.unwrap().unwrap();
    row.get::<i64, _>(0).expect("a bigint")
}

/// The TCP ports this process listens on (IPv4 and IPv6), from /proc.
fn listening_ports() -> BTreeSet<u16> {
    let inodes: BTreeSet<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| l.to_str()?.strip_prefix("socket:[")?.strip_suffix(']').map(str::to_string))
        .collect();
    let mut ports = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table).unwrap_or_default().lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address is f[1] (addr:port in hex), st is f[3] (0A: LISTEN), inode f[9].
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                ports.insert(u16::from_str_radix(f[1].rsplit(':').next().unwrap(), 16).unwrap());
            }
        }
    }
    ports
}

#[test]
fn without_a_metrics_port_nothing_more_listens() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let before = listening_ports();
    let server = TestServer::start();
    assert_eq!(server.server.as_ref().unwrap().metrics_addr, None);
    let now = listening_ports();
    let new: Vec<u16> = now.difference(&before).copied().collect();
    assert_eq!(new, vec![server.port()], "only the TDS port listens");
    assert!(!server.errorlog().contains("Metrics are served"), "{}", server.errorlog());
    drop(server);
    let with = TestServer::start_with(|c| c.metrics_port = Some(0));
    let metrics = with.server.as_ref().unwrap().metrics_addr.expect("a metrics listener").port();
    let new: BTreeSet<u16> = listening_ports().difference(&before).copied().collect();
    assert_eq!(new, BTreeSet::from([with.port(), metrics]));
    assert!(with.errorlog().contains(&format!("Metrics are served on http://127.0.0.1:{metrics}/metrics.")));
}

#[test]
fn a_scrape_follows_the_load_and_agrees_with_the_dmvs() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let server = TestServer::start_with(|c| c.metrics_port = Some(0));
    let addr = server.server.as_ref().unwrap().metrics_addr.expect("a metrics listener");
    assert_eq!(addr.ip().to_string(), "127.0.0.1", "the TDS listener's address");
    let (status, _, body) = http(addr, "GET", "/nothing");
    assert_eq!((status, body.as_str()), (404, "not found: try /metrics\n"));
    let (status, head, _) = http(addr, "POST", "/metrics");
    assert!(status == 405 && head.contains("allow: get, head"), "{status} {head}");

    let port = server.port();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut sa = connect_as(port, "sa", PASSWORD).await;
        run(&mut sa, "CREATE DATABASE m1").await;
        run(&mut sa, "USE m1; CREATE TABLE t (id int PRIMARY KEY, v int)").await;
        let (_, first) = scrape(addr);

        // The load: 20 autocommit inserts, one explicit transaction of 3, 4 rolled back
        // (batches), 5 reads (RPCs), and a WAITFOR.
        for i in 0..20 {
            run(&mut sa, &format!("INSERT t VALUES ({i}, {i})")).await;
        }
        run(&mut sa, "BEGIN TRAN; INSERT t VALUES (100, 0); INSERT t VALUES (101, 0); INSERT t VALUES (102, 0); COMMIT")
            .await;
        for i in 0..4 {
            run(&mut sa, &format!("BEGIN TRAN; INSERT t VALUES ({}, 0); ROLLBACK", 200 + i)).await;
        }
        for _ in 0..5 {
            assert_eq!(count(&mut sa, "SELECT COUNT(*) FROM t").await, 23);
        }
        run(&mut sa, "WAITFOR DELAY '00:00:00.020'").await;
        let (text, second) = scrape(addr);

        // Counters, gauges and histograms, typed.
        for (family, kind) in [
            ("tessera_requests", "counter"),
            ("tessera_request_duration_seconds", "histogram"),
            ("tessera_transactions_committed", "counter"),
            ("tessera_database_transactions_committed", "counter"),
            ("tessera_database_log_written_bytes", "counter"),
            ("tessera_log_written_bytes", "counter"),
            ("tessera_log_flush_duration_seconds", "histogram"),
            ("tessera_io_duration_seconds", "histogram"),
            ("tessera_file_descriptors_open", "gauge"),
            ("tessera_file_descriptors_capacity", "gauge"),
            ("tessera_file_descriptor_hits", "counter"),
            ("tessera_file_descriptor_misses", "counter"),
            ("tessera_file_descriptor_evictions", "counter"),
            ("tessera_file_descriptor_eviction_syncs", "counter"),
            ("tessera_buffer_pool_hits", "counter"),
            ("tessera_buffer_pool_resident_bytes", "gauge"),
            ("tessera_buffer_pool_extension_size_bytes", "gauge"),
            ("tessera_memory_clerk_bytes", "gauge"),
            ("tessera_waits", "counter"),
            ("tessera_wait_seconds", "counter"),
            ("tessera_connections", "gauge"),
            ("tessera_requests_blocked", "gauge"),
            ("tessera_plan_cache_entries", "gauge"),
            ("tessera_databases_open", "gauge"),
        ] {
            assert_eq!(second.types.get(family).map(String::as_str), Some(kind), "{family}\n{text}");
        }
        let moved = |key: &str| second.get(key) - first.get(key);
        // Requests since the first scrape: 20 + 1 + 4 + 1 batches, 5 RPCs.
        assert_eq!(moved("tessera_requests_total{kind=batch}"), 26.0);
        assert_eq!(moved("tessera_requests_total{kind=rpc}"), 5.0);
        assert_eq!(moved("tessera_request_duration_seconds_count"), 31.0);
        // Transactions: 21 committed and 4 rolled back in m1, as many at least in all.
        assert_eq!(moved("tessera_database_transactions_committed_total{database=m1}"), 21.0, "{text}");
        assert_eq!(moved("tessera_database_transactions_rolled_back_total{database=m1}"), 4.0);
        assert!(moved("tessera_transactions_committed_total") >= 21.0);
        assert!(moved("tessera_transactions_rolled_back_total") >= 4.0);
        assert!(moved("tessera_database_log_written_bytes_total{database=m1}") > 0.0);
        assert!(moved("tessera_log_written_bytes_total") >= moved("tessera_database_log_written_bytes_total{database=m1}"));
        // Each commit flushed the log: flushes timed, log writes timed.
        assert!(moved("tessera_log_flush_duration_seconds_count") >= 21.0);
        assert!(moved("tessera_io_duration_seconds_count{direction=write,kind=log}") >= 21.0);
        assert!(moved("tessera_buffer_pool_hits_total") > 0.0);
        assert!(moved("tessera_file_descriptor_hits_total") > 0.0, "the log's writes used its descriptor");
        assert!(second.get("tessera_file_descriptors_open") >= 4.0, "master's and m1's files at least");
        assert!(second.get("tessera_file_descriptors_open") <= second.get("tessera_file_descriptors_capacity") + 4.0);
        assert_eq!(moved("tessera_waits_total{wait_type=WAITFOR}"), 1.0);
        assert!(moved("tessera_wait_seconds_total{wait_type=WAITFOR}") >= 0.019);
        assert_eq!(second.get("tessera_connections"), 1.0);
        assert!(second.get("tessera_sessions") >= 1.0);
        let databases = count(&mut sa, "SELECT COUNT(*) FROM sys.databases").await;
        assert_eq!(second.get("tessera_databases"), f64::from(databases));
        assert!(second.get("tessera_databases_open") >= 2.0, "master and m1 at least");
        // Histograms: cumulative buckets ending at +Inf = count.
        let buckets: Vec<f64> = second
            .samples
            .iter()
            .filter(|(k, _)| k.starts_with("tessera_request_duration_seconds_bucket{"))
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(buckets.len(), 21);
        assert_eq!(second.get("tessera_request_duration_seconds_bucket{le=+Inf}"), second.get("tessera_request_duration_seconds_count"));
        assert!(second.get("tessera_request_duration_seconds_bucket{le=1.6e-05}") <= second.get("tessera_request_duration_seconds_bucket{le=8.388608}"));
        assert!(text.contains("tessera_request_duration_seconds_bucket{le=\"0.000016\"}") || text.contains("le=\"1.6e-05\""), "{text}");

        // The DMVs read just before and just after a scrape bound what it shows.
        let waits = "SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'WAITFOR'";
        let wait_ms = "SELECT wait_time_ms FROM sys.dm_os_wait_stats WHERE wait_type = 'WAITFOR'";
        let counter = |name: &str, instance: &str| {
            format!(
                "SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = '{name}' AND instance_name = '{instance}'"
            )
        };
        let (plan_hits, pool_hits) = (counter("Cache Hit Ratio", "SQL Plans"), counter("Buffer cache hit ratio", ""));
        let log = counter("Log Bytes Flushed/sec", "m1");
        let before = [big(&mut sa, waits).await, big(&mut sa, &plan_hits).await, big(&mut sa, &pool_hits).await, big(&mut sa, &log).await];
        let wait_time = big(&mut sa, wait_ms).await;
        let (_, third) = scrape(addr);
        let after = [big(&mut sa, waits).await, big(&mut sa, &plan_hits).await, big(&mut sa, &pool_hits).await, big(&mut sa, &log).await];
        let shown = [
            third.get("tessera_waits_total{wait_type=WAITFOR}"),
            third.get("tessera_plan_cache_hits_total"),
            third.get("tessera_buffer_pool_hits_total"),
            third.get("tessera_database_log_written_bytes_total{database=m1}"),
        ];
        for (i, what) in ["waits", "plan cache hits", "buffer pool hits", "m1's log bytes"].iter().enumerate() {
            assert!(
                before[i] as f64 <= shown[i] && shown[i] <= after[i] as f64,
                "{what}: {} <= {} <= {}",
                before[i],
                shown[i],
                after[i]
            );
        }
        let seconds = third.get("tessera_wait_seconds_total{wait_type=WAITFOR}");
        assert!((seconds * 1000.0 - wait_time as f64).abs() < 1.0, "{seconds} s vs {wait_time} ms");

        // A blocked request: shown while it waits, as sys.dm_exec_requests shows it.
        let mut holder = connect_as(port, "sa", PASSWORD).await;
        let mut waiter = connect_as(port, "sa", PASSWORD).await;
        run(&mut holder, "USE m1; BEGIN TRAN; UPDATE t SET v = -1 WHERE id = 1").await;
        run(&mut waiter, "USE m1").await;
        let blocked = tokio::spawn(async move {
            run(&mut waiter, "UPDATE t SET v = -2 WHERE id = 1").await;
            waiter
        });
        eventually(&mut sa, "SELECT COUNT(*) FROM sys.dm_exec_requests WHERE blocking_session_id <> 0", 1).await;
        let (_, during) = scrape(addr);
        assert_eq!(during.get("tessera_requests_blocked"), 1.0);
        assert!(during.get("tessera_requests_running") >= 1.0);
        assert_eq!(during.get("tessera_connections"), 3.0);
        run(&mut holder, "COMMIT").await;
        blocked.await.unwrap();
        let (_, after) = scrape(addr);
        assert_eq!(after.get("tessera_requests_blocked"), 0.0);
        assert!(after.get("tessera_waits_total{wait_type=LCK_M_U}") + after.get("tessera_waits_total{wait_type=LCK_M_X}") >= 1.0);
    });
}
