//! `tessera gateway`: one address in front of many servers. Each connection goes to the
//! server that holds the database its login names, as the tenant directory in etcd says
//! (servers publish themselves there with `tessera serve --etcd`). The gateway keeps no
//! state of its own, so several can run side by side behind one name.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tessera_gateway::directory::Directory;
use tessera_gateway::etcd::Etcd;
use tessera_gateway::proxy::{Gateway, Policy};
use tessera_gateway::stats::Stats;

#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// The etcd cluster holding the tenant directory (host:port of a member's client URL).
    #[arg(long, value_name = "HOST:PORT")]
    etcd: String,
    /// Address to listen on [default: 127.0.0.1].
    #[arg(long, default_value = "127.0.0.1")]
    listen: String,
    /// TCP port [default: 1433; 0 picks a free one].
    #[arg(long, short = 'p', default_value_t = 1433)]
    port: u16,
    /// TLS certificate (PEM) for clients that encrypt; without one a self-signed
    /// certificate is made under --tls-dir.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Where the self-signed certificate is kept [default: tessera-gateway in the system's
    /// temporary directory].
    #[arg(long, value_name = "DIR")]
    tls_dir: Option<PathBuf>,
    /// proxy: every byte passes through the gateway; redirect: after the login, clients
    /// that follow routing (TDS 7.4 drivers) reconnect to the server itself, which must
    /// then be reachable from them at the address it advertises.
    #[arg(long, value_name = "POLICY", default_value = "proxy", value_parser = ["proxy", "redirect"])]
    connection_policy: String,
    /// terminate: TLS ends at the gateway; passthrough: TDS 8.0 strict connections pass
    /// to their server unopened, routed by the TLS server name's first label
    /// (`shop.fleet.example.com` → database shop), the server's certificate answering.
    #[arg(long, value_name = "MODE", default_value = "terminate", value_parser = ["terminate", "passthrough"])]
    tls: String,
    /// Serve Prometheus metrics (GET /metrics) and a readiness check (GET /healthz: 200
    /// while the directory copy is current) over HTTP on this port of the listen address
    /// [default: none].
    #[arg(long, value_name = "PORT")]
    metrics_port: Option<u16>,
}

pub fn run(args: GatewayArgs) -> ExitCode {
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera gateway: {e}");
            ExitCode::from(1)
        }
    }
}

fn serve(args: GatewayArgs) -> Result<(), String> {
    let tls_dir = args.tls_dir.clone().unwrap_or_else(|| std::env::temp_dir().join("tessera-gateway"));
    let tls = tessera_server::tls::server_config(args.tls_cert.as_deref(), args.tls_key.as_deref(), &tls_dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tessera-gateway")
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((args.listen.as_str(), args.port))
            .await
            .map_err(|e| format!("cannot listen on {}:{}: {e}", args.listen, args.port))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        eprintln!("tessera gateway: listening on {local}, directory in etcd at {}", args.etcd);
        let directory = Directory::new(Etcd::new(&args.etcd));
        tokio::spawn(directory.clone().follow(|line| eprintln!("tessera gateway: {line}")));
        let stats = Arc::new(Stats::default());
        if let Some(port) = args.metrics_port {
            let metrics = tokio::net::TcpListener::bind((args.listen.as_str(), port))
                .await
                .map_err(|e| format!("cannot listen for metrics on {}:{port}: {e}", args.listen))?;
            let address = metrics.local_addr().map_err(|e| e.to_string())?;
            eprintln!("tessera gateway: metrics on http://{address}/metrics");
            tokio::spawn(tessera_gateway::stats::serve(metrics, stats.clone(), directory.clone()));
        }
        let gateway = Arc::new(Gateway {
            directory,
            policy: if args.connection_policy == "redirect" { Policy::Redirect } else { Policy::Proxy },
            tls_passthrough: args.tls == "passthrough",
            stats,
            tls: Some(tls.tls),
            version_bytes: tessera_server::VERSION_BYTES,
            log: Box::new(|line| eprintln!("tessera gateway: {line}")),
        });
        gateway.run(listener).await.map_err(|e| e.to_string())
    })
}
