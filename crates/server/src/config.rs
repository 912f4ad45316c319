//! Server configuration: an optional TOML file, overridden by command-line flags, over the
//! embedded defaults (data directory `./tessera-data`, 127.0.0.1:1433).
//!
//! ```toml
//! instance = "SALES"                # a named instance (none: the default instance)
//! browser = true                    # named instances: take part in the SQL Server Browser
//! instances_dir = "/tmp/tessera-instances" # where running named instances register
//! listen = "127.0.0.1"
//! port = 1433                       # a named instance without one takes a free port
//! data_dir = "/var/lib/tessera"     # a named instance's default: tessera-data/instances/NAME
//! log_dir = "/var/log/tessera"      # transaction logs (defaults to data_dir)
//! memory_mb = 1024                  # buffer pool
//! huge_pages = "transparent"        # off | transparent | on (explicit, vm.nr_hugepages)
//! sa_password = "..."               # TESSERA_SA_PASSWORD wins over this
//! tls_cert = "/etc/tessera/cert.pem"
//! tls_key = "/etc/tessera/key.pem"
//! encrypt_login = true              # clients that send ENCRYPT_OFF get the login encrypted
//! force_strict_encryption = false   # true: only TDS 8.0 strict (TLS-first) connections
//! max_connections = 10000
//! max_open_databases = 4096         # more are closed, least recently used first
//! idle_close_secs = 300             # a database idle this long is closed
//! max_packet_size = 32767
//! max_message_mb = 64
//! login_timeout_secs = 30
//! max_pending_logins = 2048         # connections not yet logged in; more are closed at once
//! request_stall_secs = 60           # a request's packets may pause this long
//! max_spool_mb = 8192               # long request values on disk at once, all connections
//! max_request_memory_mb = 1024      # request messages in memory at once, all connections
//! errorlog_files = 6                # ERRORLOG archives kept (ERRORLOG.1 …), 6 to 99
//! errorlog_max_mb = 100             # ERRORLOG rotates at this size (0: only at start)
//! metrics_port = 9433               # HTTP /metrics (Prometheus), / (dashboard); absent: none
//! metrics_top_databases = 20        # databases shown one by one in the metrics: the busiest
//! ```
//!
//! Invariant: a [`Config`] that [`Config::validate`] accepted has a password, positive
//! bounds, a packet size in 4096..=32767 and 6..=99 ERRORLOG archives.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::errorlog::{MAX_ARCHIVES, MIN_ARCHIVES};
use crate::packet::{MAX_PACKET_SIZE, MIN_PACKET_SIZE};

pub const DEFAULT_DATA_DIR: &str = "tessera-data";
pub const DEFAULT_PORT: u16 = 1433;
pub const SA_PASSWORD_ENV: &str = "TESSERA_SA_PASSWORD";

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The named instance (SQL Server's `host\NAME`); `None` is the default instance.
    pub instance: Option<String>,
    /// A named instance answers SQL Server Browser requests (SSRP, UDP 1434) for every
    /// instance on the host while it holds the port (see `browser`).
    pub browser: bool,
    /// The host-wide directory where named instances register (see `instance`); `None`:
    /// `tessera-instances` in the system's temporary directory.
    pub instances_dir: Option<PathBuf>,
    pub listen: String,
    /// 0 picks a free port (tests).
    pub port: u16,
    pub data_dir: PathBuf,
    pub log_dir: Option<PathBuf>,
    pub memory_mb: usize,
    /// How buffer pool memory is backed: `off` (4 KiB pages), `transparent` (THP where the
    /// kernel can) or `on` (explicit huge pages reserved at start).
    pub huge_pages: String,
    pub sa_password: Option<String>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Answer ENCRYPT_OFF with OFF (TLS for the login packet only, as SQL Server does)
    /// rather than NOT_SUP.
    pub encrypt_login: bool,
    /// SQL Server's "Force Strict Encryption": only TDS 8.0 strict connections (TLS before
    /// PRELOGIN) are served; a connection that opens with a PRELOGIN packet is closed.
    pub force_strict_encryption: bool,
    pub max_connections: usize,
    /// Databases kept open at once (fewer if the descriptor limit allows fewer: see
    /// `descriptors`); the least recently used idle one is closed first.
    pub max_open_databases: usize,
    /// Seconds after which an idle database is closed.
    pub idle_close_secs: u64,
    /// Largest packet size a client may negotiate.
    pub max_packet_size: usize,
    /// Largest request message (a batch text, an RPC with its parameters, a bulk load's
    /// rows) but the PLP values of 1 MiB or more, which are spooled to disk as they arrive.
    pub max_message_mb: usize,
    /// Time a connection has from its first byte to a completed login.
    pub login_timeout_secs: u64,
    /// Logins verified at once (each costs a slow password hash); more wait.
    pub max_concurrent_logins: usize,
    /// Connections accepted and not yet logged in, at most (each holds its place until it
    /// logs in or its `login_timeout_secs` runs out); a connection past them is closed at
    /// once, so that clients that never log in cannot take every connection.
    pub max_pending_logins: usize,
    /// Seconds a client may pause inside a request it has begun to send (a thread waits
    /// for it meanwhile); a longer pause closes the connection. Between requests a
    /// connection may stay idle for ever.
    pub request_stall_secs: u64,
    /// Megabytes of long request values (PLP parameters and bulk-load values of 1 MiB or
    /// more) kept in spool files at once, over all connections; a value that would pass
    /// it fails its request (8009) and the connection goes on.
    pub max_spool_mb: u64,
    /// Megabytes of request messages (batch texts, RPC parameters but the spooled ones,
    /// bulk-load rows) held in memory at once, over all connections, from their first
    /// packet until they have run; a request that finds no room fails with 701 and the
    /// connection goes on. At least `max_message_mb`.
    pub max_request_memory_mb: usize,
    /// Write the ERRORLOG file (stderr always gets the lines).
    pub errorlog: bool,
    /// Print log lines on stderr.
    pub log_stderr: bool,
    /// ERRORLOG archives kept (`ERRORLOG.1` to `ERRORLOG.n`, SQL Server's "number of error
    /// log files"): 6 to 99. The log rotates at each start, at `sp_cycle_errorlog` and at
    /// `errorlog_max_mb`.
    pub errorlog_files: u32,
    /// Megabytes the current ERRORLOG may reach before it rotates; 0: no limit.
    pub errorlog_max_mb: u64,
    /// The TCP port of the HTTP listener that serves `GET /metrics` (Prometheus' text
    /// format) and the dashboard (`GET /`) on the `listen` address; `None`: no listener
    /// (0 picks a free port).
    pub metrics_port: Option<u16>,
    /// How many databases the metrics show one by one (label `database`): the busiest
    /// (see `metrics::busiest`); the totals cover them all.
    pub metrics_top_databases: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            instance: None,
            browser: true,
            instances_dir: None,
            listen: "127.0.0.1".to_string(),
            port: DEFAULT_PORT,
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            log_dir: None,
            memory_mb: 1024,
            huge_pages: "transparent".to_string(),
            sa_password: None,
            tls_cert: None,
            tls_key: None,
            encrypt_login: true,
            force_strict_encryption: false,
            max_connections: 10_000,
            max_open_databases: 4096,
            idle_close_secs: 300,
            max_packet_size: MAX_PACKET_SIZE,
            max_message_mb: 64,
            login_timeout_secs: 30,
            max_concurrent_logins: 8,
            max_pending_logins: 2048,
            request_stall_secs: 60,
            max_spool_mb: 8192,
            max_request_memory_mb: 1024,
            errorlog: true,
            log_stderr: true,
            errorlog_files: 6,
            errorlog_max_mb: 100,
            metrics_port: None,
            metrics_top_databases: 20,
        }
    }
}

impl Config {
    pub fn from_file(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
        Config::from_toml(&text).map_err(|e| format!("'{}': {e}", path.display()))
    }

    pub fn from_toml(text: &str) -> Result<Config, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// [`Config::from_file`], with the keys the file sets.
    pub fn from_file_with_keys(path: &Path) -> Result<(Config, Vec<String>), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
        let table: toml::Table = text.parse().map_err(|e| format!("'{}': {e}", path.display()))?;
        let config = Config::from_toml(&text).map_err(|e| format!("'{}': {e}", path.display()))?;
        Ok((config, table.keys().cloned().collect()))
    }

    /// For a named instance: checks and upper-cases its name, and gives it what SQL Server
    /// gives one when nothing is said — a free port (published by the SQL Server Browser)
    /// unless `port_given`, and its own data directory (`tessera-data/instances/NAME`)
    /// unless `data_dir_given`. The default instance is left as it is.
    pub fn resolve_instance(&mut self, port_given: bool, data_dir_given: bool) -> Result<(), String> {
        let Some(name) = &self.instance else { return Ok(()) };
        let name = crate::instance::validate_name(name)?;
        if !port_given {
            self.port = 0;
        }
        if !data_dir_given {
            self.data_dir = crate::instance::default_data_dir(&name);
        }
        self.instance = Some(name);
        Ok(())
    }

    /// The host-wide instances directory.
    pub fn instances_dir(&self) -> PathBuf {
        self.instances_dir.clone().unwrap_or_else(crate::instance::default_instances_dir)
    }

    /// Takes the sa password from `TESSERA_SA_PASSWORD` when set (it wins over the file).
    pub fn apply_env(&mut self) {
        if let Ok(p) = std::env::var(SA_PASSWORD_ENV) {
            if !p.is_empty() {
                self.sa_password = Some(p);
            }
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        match &self.sa_password {
            None => {
                return Err(format!(
                    "no password for the sa login: set the environment variable {SA_PASSWORD_ENV} or `sa_password` in the configuration file"
                ))
            }
            Some(p) if p.is_empty() => return Err("the sa password is empty".to_string()),
            _ => {}
        }
        if !(MIN_PACKET_SIZE..=MAX_PACKET_SIZE).contains(&self.max_packet_size) {
            return Err(format!("max_packet_size must be between {MIN_PACKET_SIZE} and {MAX_PACKET_SIZE}"));
        }
        if self.max_connections == 0
            || self.max_message_mb == 0
            || self.max_concurrent_logins == 0
            || self.max_open_databases == 0
            || self.max_pending_logins == 0
            || self.request_stall_secs == 0
            || self.login_timeout_secs == 0
        {
            return Err(
                "max_connections, max_message_mb, max_concurrent_logins, max_open_databases, max_pending_logins, request_stall_secs and login_timeout_secs must be positive"
                    .to_string(),
            );
        }
        if !(MIN_ARCHIVES..=MAX_ARCHIVES).contains(&self.errorlog_files) {
            return Err(format!("errorlog_files must be between {MIN_ARCHIVES} and {MAX_ARCHIVES}"));
        }
        if self.max_request_memory_mb < self.max_message_mb {
            return Err("max_request_memory_mb must be at least max_message_mb".to_string());
        }
        self.huge_pages.parse::<tessera_database::HugePages>()?;
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err("tls_cert and tls_key go together".to_string());
        }
        if let Some(name) = &self.instance {
            crate::instance::validate_name(name)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_file_and_validates() {
        let c = Config::from_toml("port = 14330\ndata_dir = \"/tmp/x\"\nsa_password = \"pw\"\nmax_connections = 5\n")
            .unwrap();
        assert_eq!(c.port, 14330);
        assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(c.listen, "127.0.0.1");
        assert!(c.validate().is_ok());
        assert!(!c.force_strict_encryption);
        assert!(Config::from_toml("force_strict_encryption = true").unwrap().force_strict_encryption);
        assert!(Config::from_toml("bogus = 1").is_err());
        let mut huge = Config::from_toml("sa_password = \"pw\"\nhuge_pages = \"on\"\n").unwrap();
        assert!(huge.validate().is_ok());
        huge.huge_pages = "always".into();
        assert!(huge.validate().unwrap_err().contains("off, transparent or on"));
        let mut c = Config::default();
        assert!(c.validate().unwrap_err().contains(SA_PASSWORD_ENV));
        c.sa_password = Some("x".into());
        c.max_packet_size = 100;
        assert!(c.validate().is_err());
        let stalls = Config::from_toml("sa_password = \"pw\"\nrequest_stall_secs = 0\n").unwrap();
        assert!(stalls.validate().unwrap_err().contains("request_stall_secs"));
        let limits = Config::from_toml("max_pending_logins = 10\nmax_spool_mb = 5\n").unwrap();
        assert_eq!((limits.max_pending_logins, limits.max_spool_mb), (10, 5));
        let small = Config::from_toml("sa_password = \"pw\"\nmax_request_memory_mb = 8\n").unwrap();
        assert!(small.validate().unwrap_err().contains("max_message_mb"), "64 MB messages cannot fit in 8 MB");
        let logs = Config::from_toml("sa_password = \"pw\"\nerrorlog_files = 99\nerrorlog_max_mb = 0\n").unwrap();
        assert_eq!((logs.errorlog_files, logs.errorlog_max_mb), (99, 0));
        assert!(logs.validate().is_ok());
        assert_eq!((Config::default().errorlog_files, Config::default().errorlog_max_mb), (6, 100));
        let metrics = Config::from_toml("metrics_port = 9433\nmetrics_top_databases = 5\n").unwrap();
        assert_eq!((metrics.metrics_port, metrics.metrics_top_databases), (Some(9433), 5));
        assert_eq!((Config::default().metrics_port, Config::default().metrics_top_databases), (None, 20));
        for files in [5, 100] {
            let c = Config { errorlog_files: files, sa_password: Some("pw".into()), ..Config::default() };
            assert!(c.validate().unwrap_err().contains("errorlog_files must be between 6 and 99"), "{files}");
        }
    }

    #[test]
    fn a_named_instance_gets_its_own_port_and_data_directory() {
        let mut c = Config::from_toml("instance = \"sales\"\nsa_password = \"pw\"\n").unwrap();
        assert!(c.browser);
        c.resolve_instance(false, false).unwrap();
        assert_eq!(c.instance.as_deref(), Some("SALES"));
        assert_eq!((c.port, c.data_dir.clone()), (0, PathBuf::from("tessera-data/instances/SALES")));
        assert!(c.validate().is_ok());
        let mut given = Config { instance: Some("hr".into()), port: 5000, data_dir: "/d".into(), ..Config::default() };
        given.resolve_instance(true, true).unwrap();
        assert_eq!((given.port, given.data_dir), (5000, PathBuf::from("/d")));
        let mut default = Config::default();
        default.resolve_instance(false, false).unwrap();
        assert_eq!((default.port, default.data_dir), (DEFAULT_PORT, PathBuf::from(DEFAULT_DATA_DIR)));
        let mut bad = Config { instance: Some("MSSQLSERVER".into()), ..Config::default() };
        assert!(bad.resolve_instance(false, false).unwrap_err().contains("reserved"));
        assert!(Config::from_toml("browser = false").map(|c| !c.browser).unwrap());
    }
}
