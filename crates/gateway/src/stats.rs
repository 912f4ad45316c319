//! What a gateway counts, and its HTTP endpoint (`tessera gateway --metrics-port P`):
//! `GET /metrics` in Prometheus' text format and `GET /healthz`, which answers 200 only
//! while the gateway's copy of the directory is current (read whole and its etcd watch
//! open) — a readiness probe that knows more than an open port. Every metric is listed in
//! docs/metrics.md.

use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use tessera_server::metrics::{serve_pages, Page, TEXT};
use tokio::net::TcpListener;

use crate::directory::Directory;

/// How a client connection ended up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Its bytes pass through the gateway to the server.
    Proxied,
    /// Its login passed through and its answer routed the client to the server.
    Redirected,
    /// TLS passed through unopened to the server its name routes to.
    PassedThrough,
    /// No live server holds its database (4060).
    NoDatabase,
    /// The directory or the server could not be reached (40613).
    Unavailable,
    /// It left, or sent what is not TDS, before it could be routed.
    Dropped,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Proxied => "proxied",
            Outcome::Redirected => "redirected",
            Outcome::PassedThrough => "passed_through",
            Outcome::NoDatabase => "no_database",
            Outcome::Unavailable => "unavailable",
            Outcome::Dropped => "dropped",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

/// The gateway's counters, shared by its connections.
pub struct Stats {
    registry: Registry,
    connections: Family<OutcomeLabel, Counter>,
    open: Gauge,
    routing: Histogram,
    servers: Gauge,
    databases: Gauge,
    current: Gauge,
}

impl Default for Stats {
    fn default() -> Stats {
        let mut registry = Registry::default();
        let connections = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "tessera_gateway_connections",
            "Client connections, by how they were handed on (or why not)",
            connections.clone(),
        );
        let open = Gauge::default();
        registry.register("tessera_gateway_open_connections", "Client connections open now", open.clone());
        // 50 µs to ~1.6 s: a routing that waits for a server's PRELOGIN and login.
        let routing = Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(5e-5, 2.0, 16));
        registry.register_with_unit(
            "tessera_gateway_routing",
            "From a client's LOGIN7 (or ClientHello) to its connection handed to its server",
            Unit::Seconds,
            routing.clone(),
        );
        let servers = Gauge::default();
        registry.register(
            "tessera_gateway_directory_servers",
            "Live servers in the gateway's directory copy",
            servers.clone(),
        );
        let databases = Gauge::default();
        registry.register(
            "tessera_gateway_directory_databases",
            "Databases in the gateway's directory copy",
            databases.clone(),
        );
        let current = Gauge::default();
        registry.register(
            "tessera_gateway_directory_current",
            "1 while the directory copy is read and its etcd watch open, else 0",
            current.clone(),
        );
        Stats { registry, connections, open, routing, servers, databases, current }
    }
}

impl Stats {
    /// A connection was handed on (or not) after `took` since its login arrived.
    pub fn routed(&self, outcome: Outcome, took: Option<Duration>) {
        self.connections.get_or_create(&OutcomeLabel { outcome: outcome.label() }).inc();
        if let Some(t) = took {
            self.routing.observe(t.as_secs_f64());
        }
    }

    /// Counts a connection open until the guard drops.
    pub fn open(self: &Arc<Self>) -> OpenConnection {
        self.open.inc();
        OpenConnection(self.clone())
    }

    fn encode(&self, directory: &Directory) -> String {
        let (current, servers, databases) = directory.status();
        self.current.set(i64::from(current));
        self.servers.set(gauge(servers));
        self.databases.set(gauge(databases));
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            .expect("writing to a String does not fail");
        out
    }
}

fn gauge(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// One open client connection, counted while it lives.
pub struct OpenConnection(Arc<Stats>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open.dec();
    }
}

/// Serves `/metrics` and `/healthz` on `listener` until the process ends.
pub async fn serve(listener: TcpListener, stats: Arc<Stats>, directory: Directory) {
    let (_keep, shutdown) = tokio::sync::watch::channel(false);
    serve_pages(listener, shutdown, move |path| {
        let (stats, directory) = (stats.clone(), directory.clone());
        async move { page(&stats, &directory, &path) }
    })
    .await
}

fn page(stats: &Stats, directory: &Directory, path: &str) -> Page {
    match path {
        "/metrics" => {
            (StatusCode::OK, prometheus_client::encoding::prometheus_text::CONTENT_TYPE, stats.encode(directory))
        }
        "/healthz" if directory.status().0 => (StatusCode::OK, TEXT, "ok\n".to_string()),
        "/healthz" => (StatusCode::SERVICE_UNAVAILABLE, TEXT, "the directory copy is not current\n".to_string()),
        _ => (StatusCode::NOT_FOUND, TEXT, "not found: try /metrics or /healthz\n".to_string()),
    }
}
