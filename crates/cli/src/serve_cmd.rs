//! `tessera serve`: the TDS server. With no flags and no configuration file it uses the
//! embedded defaults: data directory `./tessera-data` (created on first start), listening
//! on 127.0.0.1:1433, the `sa` password from `TESSERA_SA_PASSWORD`. `--instance NAME` runs
//! a named instance instead: its own data directory (`./tessera-data/instances/NAME`
//! unless given), a free port unless given, published by the SQL Server Browser.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tessera_server::Config;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A TOML configuration file (flags override it).
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// Run as the named instance NAME (clients connect to host\NAME through the SQL Server
    /// Browser): its data directory defaults to ./tessera-data/instances/NAME and its port
    /// to a free one.
    #[arg(long, value_name = "NAME")]
    instance: Option<String>,
    /// Do not answer SQL Server Browser requests (UDP 1434) from this named instance; another
    /// running instance's browser still publishes it.
    #[arg(long)]
    no_browser: bool,
    /// Host-wide directory where named instances register [default: tessera-instances in
    /// the system's temporary directory].
    #[arg(long, value_name = "DIR")]
    instances_dir: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1].
    #[arg(long)]
    listen: Option<String>,
    /// TCP port [default: 1433, or a free one for a named instance; 0 picks a free one].
    #[arg(long, short = 'p')]
    port: Option<u16>,
    /// Data directory [default: ./tessera-data, or ./tessera-data/instances/NAME for a
    /// named instance], created on first start.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Directory for transaction logs [default: the data directory].
    #[arg(long)]
    log_dir: Option<PathBuf>,
    /// Buffer pool size in MiB [default: 1024].
    #[arg(long)]
    memory_mb: Option<usize>,
    /// How buffer pool memory is backed: off (4 KiB pages), transparent (transparent huge
    /// pages where the kernel can) or on (explicit huge pages from vm.nr_hugepages,
    /// reserved at start) [default: transparent].
    #[arg(long, value_parser = ["off", "transparent", "on"])]
    huge_pages: Option<String>,
    /// TLS certificate (PEM); without one a self-signed certificate is made in the data
    /// directory on first start.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve only TDS 8.0 strict connections (TLS before PRELOGIN), as SQL Server's "Force
    /// Strict Encryption"; a connection that opens with a plaintext PRELOGIN is closed.
    #[arg(long)]
    force_strict_encryption: bool,
    /// Most client connections at once [default: 10000].
    #[arg(long)]
    max_connections: Option<usize>,
    /// Serve Prometheus metrics (GET /metrics) and a dashboard (GET /) over HTTP on this port
    /// of the listen address [default: none].
    #[arg(long, value_name = "PORT")]
    metrics_port: Option<u16>,
    /// Publish this server and its databases in the tenant directory of the etcd cluster
    /// at host:port, for `tessera gateway` (renewed every second under a 10 s lease).
    #[arg(long, value_name = "HOST:PORT")]
    etcd: Option<String>,
    /// This server's name in the directory [default: the advertised address].
    #[arg(long, requires = "etcd")]
    server_name: Option<String>,
    /// Where gateways reach this server [default: the address it listens on].
    #[arg(long, value_name = "HOST:PORT", requires = "etcd")]
    advertise: Option<String>,
}

pub fn config_from(args: &ServeArgs) -> Result<Config, String> {
    let (mut c, file_keys) = match &args.config {
        Some(p) => Config::from_file_with_keys(p)?,
        None => (Config::default(), Vec::new()),
    };
    let in_file = |key: &str| file_keys.iter().any(|k| k == key);
    if let Some(v) = &args.instance {
        c.instance = Some(v.clone());
    }
    if args.no_browser {
        c.browser = false;
    }
    if let Some(v) = &args.instances_dir {
        c.instances_dir = Some(v.clone());
    }
    if let Some(v) = &args.listen {
        c.listen.clone_from(v);
    }
    if let Some(v) = args.port {
        c.port = v;
    }
    if let Some(v) = &args.data_dir {
        c.data_dir.clone_from(v);
    }
    if let Some(v) = &args.log_dir {
        c.log_dir = Some(v.clone());
    }
    if let Some(v) = args.memory_mb {
        c.memory_mb = v;
    }
    if let Some(v) = &args.huge_pages {
        c.huge_pages.clone_from(v);
    }
    if let Some(v) = &args.tls_cert {
        c.tls_cert = Some(v.clone());
    }
    if let Some(v) = &args.tls_key {
        c.tls_key = Some(v.clone());
    }
    if args.force_strict_encryption {
        c.force_strict_encryption = true;
    }
    if let Some(v) = args.max_connections {
        c.max_connections = v;
    }
    if args.metrics_port.is_some() {
        c.metrics_port = args.metrics_port;
    }
    c.resolve_instance(args.port.is_some() || in_file("port"), args.data_dir.is_some() || in_file("data_dir"))?;
    c.apply_env();
    c.validate()?;
    Ok(c)
}

pub fn run(args: ServeArgs) -> ExitCode {
    let config = match config_from(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tessera serve: {e}");
            return ExitCode::from(2);
        }
    };
    let served = match &args.etcd {
        None => tessera_server::serve_forever(config),
        Some(endpoint) => tessera_server::serve_forever_with(config, |server| publish(&args, endpoint, server)),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera serve: {e}");
            ExitCode::from(1)
        }
    }
}

/// Publishes the server in the tenant directory, beside it until the process ends.
fn publish(args: &ServeArgs, endpoint: &str, server: &tessera_server::Server) {
    let address = args.advertise.clone().unwrap_or_else(|| server.local_addr().to_string());
    let me = tessera_gateway::publish::Publication {
        server: args.server_name.clone().unwrap_or_else(|| address.clone()),
        address,
    };
    let etcd = tessera_gateway::etcd::Etcd::new(endpoint);
    tokio::spawn(tessera_gateway::publish::publish(etcd, me, server.state().clone(), |line| {
        eprintln!("tessera serve: {line}")
    }));
}
