//! `tessera serve`: the TDS server on its embedded defaults.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tessera_database::{Engine, EngineConfig};
use tessera_server::tls::CertificateSource;
use tessera_server::ServerConfig;
use tessera_sql::Shared;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Data directory (created on first start).
    #[arg(long = "data-dir", default_value = "tessera-data")]
    pub data_dir: PathBuf,
    /// Directory for log files (default: the data directory).
    #[arg(long = "log-dir")]
    pub log_dir: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub address: String,
    /// TCP port (SQL Server's is 1433).
    #[arg(long, default_value_t = 1433)]
    pub port: u16,
    /// Buffer pool size in MiB.
    #[arg(long = "memory-mb", default_value_t = 1024)]
    pub memory_mb: usize,
    /// The most client connections at once.
    #[arg(long = "max-connections", default_value_t = 10_000)]
    pub max_connections: usize,
    /// TLS certificate chain (PEM) for clients that encrypt; default: a self-signed
    /// certificate made on first start in DATA_DIR/tls.
    #[arg(long = "tls-cert", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long = "tls-key", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Encrypt every connection; clients that cannot encrypt are refused.
    #[arg(long = "force-encryption")]
    pub force_encryption: bool,
}

pub fn run(args: ServeArgs) -> ExitCode {
    let Ok(password) = std::env::var("TESSERA_SA_PASSWORD") else {
        eprintln!("tessera serve: set TESSERA_SA_PASSWORD to the password of the 'sa' login; the server does not start without one");
        return ExitCode::from(2);
    };
    if password.is_empty() {
        eprintln!("tessera serve: TESSERA_SA_PASSWORD is empty; the 'sa' login needs a password");
        return ExitCode::from(2);
    }
    let mut config = EngineConfig::new(&args.data_dir);
    config.log_dir = args.log_dir.clone();
    config.pool_bytes = args.memory_mb << 20;
    let engine = match Engine::open(config) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("tessera serve: cannot open data directory '{}': {e}", args.data_dir.display());
            return ExitCode::FAILURE;
        }
    };
    let shared = match Shared::new(engine.clone()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tessera serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tessera serve: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let source = match (&args.tls_cert, &args.tls_key) {
        (Some(certificate), Some(key)) => {
            CertificateSource::Files { certificate: certificate.clone(), key: key.clone() }
        }
        _ => CertificateSource::SelfSigned { dir: args.data_dir.join("tls") },
    };
    let tls = match tessera_server::tls::server_config(&source) {
        Ok((tls, path)) => {
            eprintln!("tessera: TLS certificate '{}'", path.display());
            tls
        }
        Err(e) => {
            eprintln!("tessera serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config = ServerConfig {
        sa_password: password,
        max_connections: args.max_connections,
        tls: Some(tls),
        force_encryption: args.force_encryption,
    };
    let address = format!("{}:{}", args.address, args.port);
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&address).await?;
        eprintln!("tessera: server is listening on {address}; data directory '{}'", args.data_dir.display());
        tessera_server::serve(listener, shared, config).await
    });
    if let Err(e) = engine.shutdown() {
        eprintln!("tessera serve: shutdown: {e}");
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera serve: {e}");
            ExitCode::FAILURE
        }
    }
}
