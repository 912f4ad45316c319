//! One scrape: the server's figures read at one moment ([`Snapshot::take`]) from the
//! counters the layers keep — the engine's (buffer pool and its extension, memory, log
//! buffers, databases and their transactions and log), the plan cache's, the sessions'
//! (running, blocked), the process's waits, and the I/O, log flush and request latency
//! histograms — then encoded in Prometheus' text format (version 0.0.4) by
//! `prometheus-client`. Each counter is read on its own (relaxed), so figures that
//! belong together may be one event apart; counters never go down but where a database
//! closes (its own counters restart when it opens again).

use std::fmt::Error;
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use tessera_database::memory::MemoryStatus;
use tessera_database::{ExtensionStats, PoolStats, TransactionCounts, PAGE_SIZE};
use tessera_io::stats::{latency, Direction, FileKind, HistogramSnapshot};
use tessera_waits::WaitFigures;

use super::busiest::{DatabaseSample, Ranked};
use crate::ServerState;

/// A session waiting for another one now (a link of a blocking chain).
#[derive(Clone, Debug)]
pub(super) struct Blocked {
    pub(super) session: i32,
    pub(super) blocker: i32,
    pub(super) wait_type: &'static str,
    pub(super) waited: std::time::Duration,
    pub(super) database: String,
    /// The start of its running batch's text.
    pub(super) command: String,
}

/// The server's figures at one scrape.
#[derive(Debug)]
pub(super) struct Snapshot {
    pub(super) requests: Vec<(&'static str, u64)>,
    pub(super) request_duration: HistogramSnapshot,
    pub(super) transactions: TransactionCounts,
    pub(super) busiest: Vec<Ranked>,
    pub(super) log_written_bytes: u64,
    pub(super) log_flush: HistogramSnapshot,
    pub(super) io: Vec<(&'static str, &'static str, HistogramSnapshot)>,
    pub(super) descriptors: tessera_io::descriptors::Figures,
    pub(super) pool: PoolStats,
    pub(super) extension: Option<ExtensionStats>,
    pub(super) memory: MemoryStatus,
    /// Memory by clerk: buffer pool, log buffers, plan cache, query grants, requests.
    pub(super) clerks: Vec<(&'static str, u64)>,
    pub(super) waits: Vec<(&'static str, WaitFigures)>,
    pub(super) connections: u64,
    pub(super) pending_logins: u64,
    pub(super) sessions: u64,
    pub(super) running: u64,
    /// The sessions waiting for another session now.
    pub(super) blocking: Vec<Blocked>,
    pub(super) plan_entries: u64,
    pub(super) plan_bytes: u64,
    pub(super) plan_hits: u64,
    pub(super) plan_misses: u64,
    pub(super) databases: u64,
    pub(super) open_databases: u64,
    pub(super) request_memory: (u64, u64),
    pub(super) spool: (u64, u64),
}

impl Snapshot {
    /// Reads every figure now (a few locks, each held only to copy: the sessions' list,
    /// the engine's database list, each open database's slot).
    pub(super) fn take(state: &ServerState) -> Snapshot {
        let shared = &state.shared;
        let engine = &shared.engine;
        let stats = engine.stats();
        let log_buffers = engine.log_buffer_stats();
        let plans = &shared.plans;
        let mut samples = Vec::new();
        engine.for_each_open(|db| {
            samples.push(DatabaseSample {
                name: db.name().to_string(),
                id: db.id(),
                transactions: db.transaction_counts(),
                log_bytes: db.log_bytes_written(),
            })
        });
        let busiest = state.busiest.rank(samples, Instant::now(), state.config.metrics_top_databases);
        let (mut sessions, mut running, mut blocking) = (0, 0, Vec::new());
        for info in shared.sessions.lock().values() {
            sessions += 1;
            let activity = info.activity.lock();
            running += u64::from(activity.running);
            if let Some(wait) = info.waits.current().filter(|w| w.blocker != 0) {
                blocking.push(Blocked {
                    session: info.spid,
                    blocker: wait.blocker,
                    wait_type: wait.kind.name(),
                    waited: wait.since.elapsed(),
                    database: activity.database.clone(),
                    command: activity.command.chars().take(120).collect(),
                });
            }
        }
        let io = [(FileKind::Data, "data"), (FileKind::Log, "log"), (FileKind::Backup, "backup")]
            .into_iter()
            .flat_map(|(kind, k)| {
                [(Direction::Read, "read"), (Direction::Write, "write")]
                    .map(|(direction, d)| (k, d, latency(kind, direction).snapshot()))
            })
            .collect();
        let bytes = |n: usize| n as u64;
        Snapshot {
            requests: state.requests.counts(),
            request_duration: state.requests.duration(),
            transactions: tessera_database::transaction_counts(),
            busiest,
            log_written_bytes: tessera_log::bytes_written_total(),
            log_flush: tessera_log::flush_latency().snapshot(),
            io,
            descriptors: tessera_io::descriptors::figures(),
            pool: stats.pool,
            extension: engine.pool().extension().map(|e| e.stats()),
            memory: engine.memory_status(),
            clerks: vec![
                ("buffer_pool", stats.pool.resident_pages * PAGE_SIZE as u64),
                ("log_buffers", bytes(log_buffers.lent_bytes + log_buffers.spare_bytes)),
                ("plan_cache", bytes(plans.bytes())),
                ("query_grants", bytes(shared.query_memory.used_bytes())),
                ("request_messages", state.request_memory.used_bytes()),
            ],
            waits: tessera_waits::process().all().map(|(kind, figures)| (kind.name(), figures)).collect(),
            connections: state.connections.lock().len() as u64,
            pending_logins: (state.config.max_pending_logins - state.pending_logins.available_permits()) as u64,
            sessions,
            running,
            blocking,
            plan_entries: plans.len() as u64,
            plan_bytes: bytes(plans.bytes()),
            plan_hits: plans.hits.load(std::sync::atomic::Ordering::Relaxed),
            plan_misses: plans.misses.load(std::sync::atomic::Ordering::Relaxed),
            databases: stats.databases as u64,
            open_databases: stats.open_databases as u64,
            request_memory: (state.request_memory.used_bytes(), state.request_memory.limit_bytes()),
            spool: (state.spool.budget.used_bytes(), state.spool.budget.limit_bytes()),
        }
    }

    /// The snapshot in Prometheus' text format.
    pub(super) fn encode(self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
            .expect("writing to a String does not fail");
        out
    }
}

/// One family's descriptor, then its series: one without labels, or one per label set.
struct Family<'a, 'e> {
    encoder: &'a mut DescriptorEncoder<'e>,
}

impl Family<'_, '_> {
    fn one(&mut self, name: &str, help: &str, unit: Option<Unit>, metric: impl EncodeMetric) -> Result<(), Error> {
        let m = self.encoder.encode_descriptor(name, help, unit.as_ref(), metric.metric_type())?;
        metric.encode(m)
    }

    fn counter(&mut self, name: &str, help: &str, unit: Option<Unit>, v: u64) -> Result<(), Error> {
        self.one(name, help, unit, ConstCounter::new(v))
    }

    fn gauge(&mut self, name: &str, help: &str, unit: Option<Unit>, v: u64) -> Result<(), Error> {
        self.one(name, help, unit, ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX)))
    }

    /// A family with one label: a series per (label value, metric).
    fn labelled<M: EncodeMetric>(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        label: &str,
        series: impl IntoIterator<Item = (String, M)>,
        kind: MetricType,
    ) -> Result<(), Error> {
        let mut m = self.encoder.encode_descriptor(name, help, unit.as_ref(), kind)?;
        for (value, metric) in series {
            let labels = [(label, value.as_str())];
            metric.encode(m.encode_family(&labels)?)?;
        }
        Ok(())
    }

    /// A histogram of microsecond buckets, in seconds, one series per label set.
    fn histograms(
        &mut self,
        name: &str,
        help: &str,
        series: &[(Vec<(&str, &str)>, HistogramSnapshot)],
    ) -> Result<(), Error> {
        let mut m = self.encoder.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
        for (labels, h) in series {
            let mut buckets: Vec<(f64, u64)> =
                h.bounds_us.iter().zip(&h.counts).map(|(&bound, &count)| (bound as f64 / 1e6, count)).collect();
            buckets.push((f64::INFINITY, h.counts[h.bounds_us.len()]));
            let sum = h.sum_us as f64 / 1e6;
            if labels.is_empty() {
                m.encode_histogram::<NoLabelSet>(sum, h.count, &buckets, None)?;
            } else {
                m.encode_family(labels)?.encode_histogram::<NoLabelSet>(sum, h.count, &buckets, None)?;
            }
        }
        Ok(())
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), Error> {
        let f = &mut Family { encoder: &mut encoder };
        let counters =
            |v: &[(&str, u64)]| v.iter().map(|(k, n)| (k.to_string(), ConstCounter::new(*n))).collect::<Vec<_>>();
        f.labelled(
            "tessera_requests",
            "Requests served (SQL batches, RPCs, bulk loads, transaction manager requests).",
            None,
            "kind",
            counters(&self.requests),
            MetricType::Counter,
        )?;
        f.histograms(
            "tessera_request_duration",
            "Time from a request read to its last response packet written.",
            &[(vec![], self.request_duration)],
        )?;
        let t = self.transactions;
        f.counter(
            "tessera_transactions_committed",
            "Transactions that wrote and committed, every database.",
            None,
            t.committed,
        )?;
        f.counter(
            "tessera_transactions_rolled_back",
            "Transactions that wrote and rolled back, every database.",
            None,
            t.rolled_back,
        )?;
        let by_db = |v: fn(&Ranked) -> u64| {
            self.busiest.iter().map(move |r| (r.sample.name.clone(), ConstCounter::new(v(r)))).collect::<Vec<_>>()
        };
        f.labelled(
            "tessera_database_transactions_committed",
            "The busiest databases' writing transactions committed since each opened.",
            None,
            "database",
            by_db(|r| r.sample.transactions.committed),
            MetricType::Counter,
        )?;
        f.labelled(
            "tessera_database_transactions_rolled_back",
            "The busiest databases' writing transactions rolled back since each opened.",
            None,
            "database",
            by_db(|r| r.sample.transactions.rolled_back),
            MetricType::Counter,
        )?;
        f.labelled(
            "tessera_database_log_written",
            "The busiest databases' log bytes written since each opened.",
            Some(Unit::Bytes),
            "database",
            by_db(|r| r.sample.log_bytes),
            MetricType::Counter,
        )?;
        f.counter(
            "tessera_log_written",
            "Bytes written to log files, every database.",
            Some(Unit::Bytes),
            self.log_written_bytes,
        )?;
        f.histograms(
            "tessera_log_flush_duration",
            "Log flushes (fdatasync of a group commit).",
            &[(vec![], self.log_flush)],
        )?;
        let io: Vec<_> = self.io.iter().map(|(k, d, h)| (vec![("kind", *k), ("direction", *d)], *h)).collect();
        f.histograms("tessera_io_duration", "Reads and writes of data, log and backup files.", &io)?;
        let d = &self.descriptors;
        f.gauge("tessera_file_descriptors_open", "Descriptors the engine's files hold open now.", None, d.open)?;
        f.gauge(
            "tessera_file_descriptors_capacity",
            "The most descriptors the engine's files keep open (the least recently used are closed past it).",
            None,
            d.capacity,
        )?;
        f.counter("tessera_file_descriptor_hits", "Uses of a database file whose descriptor was open.", None, d.hits)?;
        f.counter(
            "tessera_file_descriptor_misses",
            "Uses of a database file that had to open or reopen its descriptor.",
            None,
            d.misses,
        )?;
        f.counter(
            "tessera_file_descriptor_evictions",
            "Descriptors closed to make room for others.",
            None,
            d.evictions,
        )?;
        f.counter(
            "tessera_file_descriptor_eviction_syncs",
            "Descriptors closed to make room whose file was synced first (it had unsynced writes).",
            None,
            d.eviction_syncs,
        )?;
        let p = &self.pool;
        f.counter("tessera_buffer_pool_hits", "Page fetches that found the page in the buffer pool.", None, p.hits)?;
        f.counter(
            "tessera_buffer_pool_misses",
            "Page fetches that had to load (or zero-fill) a frame.",
            None,
            p.misses,
        )?;
        f.counter(
            "tessera_buffer_pool_page_reads",
            "Pages read from data files (read-ahead included).",
            None,
            p.reads,
        )?;
        f.counter("tessera_buffer_pool_read_ahead_pages", "Pages read by read-ahead.", None, p.read_ahead_pages)?;
        f.counter("tessera_buffer_pool_page_writes", "Pages written to data files.", None, p.writes)?;
        f.counter("tessera_buffer_pool_evictions", "Pages evicted to make room.", None, p.evictions)?;
        let page = PAGE_SIZE as u64;
        f.gauge(
            "tessera_buffer_pool_resident",
            "Pages held in the buffer pool.",
            Some(Unit::Bytes),
            p.resident_pages * page,
        )?;
        f.gauge(
            "tessera_buffer_pool_dirty",
            "Dirty pages in the buffer pool.",
            Some(Unit::Bytes),
            p.dirty_pages * page,
        )?;
        f.gauge(
            "tessera_buffer_pool_committed",
            "Frame memory the buffer pool has committed: frames handed out and frames committed ahead of demand.",
            Some(Unit::Bytes),
            p.committed_pages * page,
        )?;
        f.gauge(
            "tessera_buffer_pool_capacity",
            "The buffer pool's current limit.",
            Some(Unit::Bytes),
            p.capacity_pages * page,
        )?;
        let e = self.extension.unwrap_or_default();
        f.counter("tessera_buffer_pool_extension_reads", "Pages read from the buffer pool extension.", None, e.reads)?;
        f.counter(
            "tessera_buffer_pool_extension_writes",
            "Pages written to the buffer pool extension.",
            None,
            e.writes,
        )?;
        f.counter("tessera_buffer_pool_extension_evictions", "Pages evicted from the extension.", None, e.evictions)?;
        f.gauge(
            "tessera_buffer_pool_extension_used",
            "Pages held in the extension.",
            Some(Unit::Bytes),
            e.used * page,
        )?;
        f.gauge(
            "tessera_buffer_pool_extension_size",
            "The extension's size (0: off).",
            Some(Unit::Bytes),
            e.slots * page,
        )?;
        let m = &self.memory;
        f.gauge("tessera_memory_target", "What the server's memory may reach now.", Some(Unit::Bytes), m.target_bytes)?;
        f.gauge("tessera_memory_max", "max server memory.", Some(Unit::Bytes), m.max_bytes)?;
        let total = self.clerks[0].1 + self.clerks[1].1;
        f.gauge("tessera_memory_total", "Buffer pool pages and log buffers held.", Some(Unit::Bytes), total)?;
        f.labelled(
            "tessera_memory_clerk",
            "Memory held, by what holds it.",
            Some(Unit::Bytes),
            "clerk",
            self.clerks.iter().map(|(k, n)| (k.to_string(), ConstGauge::new(i64::try_from(*n).unwrap_or(i64::MAX)))),
            MetricType::Gauge,
        )?;
        f.counter(
            "tessera_memory_pressure_events",
            "Times memory pressure lowered the target.",
            None,
            m.pressure_events,
        )?;
        f.labelled(
            "tessera_waits",
            "Waits that ended, by SQL Server's wait type (sys.dm_os_wait_stats).",
            None,
            "wait_type",
            self.waits.iter().map(|(k, w)| (k.to_string(), ConstCounter::new(w.waits))),
            MetricType::Counter,
        )?;
        f.labelled(
            "tessera_wait",
            "Time spent in waits that ended, by wait type.",
            Some(Unit::Seconds),
            "wait_type",
            self.waits.iter().map(|(k, w)| (k.to_string(), ConstCounter::new(w.total_us as f64 / 1e6))),
            MetricType::Counter,
        )?;
        f.gauge("tessera_connections", "Connections logged in.", None, self.connections)?;
        f.gauge("tessera_pending_logins", "Connections accepted and not yet logged in.", None, self.pending_logins)?;
        f.gauge("tessera_sessions", "Sessions.", None, self.sessions)?;
        f.gauge("tessera_requests_running", "Requests running now.", None, self.running)?;
        f.gauge(
            "tessera_requests_blocked",
            "Requests waiting for another session now.",
            None,
            self.blocking.len() as u64,
        )?;
        f.gauge("tessera_plan_cache_entries", "Plans in the plan cache.", None, self.plan_entries)?;
        f.gauge("tessera_plan_cache", "The plan cache's size.", Some(Unit::Bytes), self.plan_bytes)?;
        f.counter("tessera_plan_cache_hits", "Batches whose plan was found in the cache.", None, self.plan_hits)?;
        f.counter("tessera_plan_cache_misses", "Batches compiled.", None, self.plan_misses)?;
        f.gauge("tessera_databases", "Databases registered.", None, self.databases)?;
        f.gauge("tessera_databases_open", "Databases open.", None, self.open_databases)?;
        f.gauge(
            "tessera_request_memory",
            "Request messages held in memory.",
            Some(Unit::Bytes),
            self.request_memory.0,
        )?;
        f.gauge("tessera_request_memory_limit", "max_request_memory_mb.", Some(Unit::Bytes), self.request_memory.1)?;
        f.gauge("tessera_spool", "Long request values in spool files.", Some(Unit::Bytes), self.spool.0)?;
        f.gauge("tessera_spool_limit", "max_spool_mb.", Some(Unit::Bytes), self.spool.1)
    }
}
