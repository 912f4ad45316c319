//! `tessera sql`: sqlcmd's interface, to a server over TDS (`-S host[,port]`) or directly to
//! a data directory in process (`--data-dir`). Both print the same output. A named instance
//! (`-S host\NAME`) is found through the SQL Server Browser on its host, as sqlcmd finds it.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tessera_database::{Engine, EngineConfig};
use tessera_semantics::output::ResultSink;
use tessera_server::client::{Client, ConnectOptions, Encryption};
use tessera_sql::runner::{self, Batches};
use tessera_sql::{Session, SqlcmdFormat, SqlcmdWriter};

/// sqlcmd's `-N` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncryptMode {
    Strict,
    Mandatory,
    Optional,
}

fn parse_encrypt(s: &str) -> Result<EncryptMode, String> {
    match s.to_ascii_lowercase().as_str() {
        "s" | "strict" => Ok(EncryptMode::Strict),
        "m" | "mandatory" | "t" | "true" | "yes" => Ok(EncryptMode::Mandatory),
        "o" | "optional" | "f" | "false" | "no" => Ok(EncryptMode::Optional),
        other => Err(format!("'{other}' is not s[trict], m[andatory] or o[ptional]")),
    }
}

#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct SqlArgs {
    /// Print help (sqlcmd's -?).
    #[arg(short = '?', long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Server to connect to: host, host,port, host\instance (its port from the SQL Server
    /// Browser) or tcp:host,port (sqlcmd's -S).
    #[arg(short = 'S', conflicts_with = "data_dir", required_unless_present = "data_dir")]
    pub server: Option<String>,
    #[command(flatten)]
    pub login: Login,
    /// Run directly on this data directory, without a server (created if missing).
    #[arg(long = "data-dir")]
    pub data_dir: Option<PathBuf>,
    /// Directory for log files (default: the data directory).
    #[arg(long = "log-dir")]
    pub log_dir: Option<PathBuf>,
    /// Initial database.
    #[arg(short = 'd', default_value = "master")]
    pub database: String,
    /// Run this query and exit.
    #[arg(short = 'Q', conflicts_with_all = ["input", "initial_query"])]
    pub query: Option<String>,
    /// Run this query, then read more batches at the prompt (sqlcmd's -q).
    #[arg(short = 'q', conflicts_with = "input")]
    pub initial_query: Option<String>,
    /// Run this script file and exit.
    #[arg(short = 'i')]
    pub input: Option<PathBuf>,
    /// Write output to this file.
    #[arg(short = 'o')]
    pub output: Option<PathBuf>,
    /// Exit with code 1 when a batch raises an error (sqlcmd's -b).
    #[arg(short = 'b')]
    pub abort_on_error: bool,
    /// Remove trailing spaces from columns (sqlcmd's -W).
    #[arg(short = 'W')]
    pub trim: bool,
    /// Rows between headers; -1 prints none (sqlcmd's -h).
    #[arg(short = 'h', allow_hyphen_values = true)]
    pub headers: Option<i64>,
    /// Column separator (sqlcmd's -s).
    #[arg(short = 's')]
    pub separator: Option<String>,
    /// Scripting variables for `$(name)`: -v rows=1000 queries=100 (sqlcmd's -v).
    #[arg(short = 'v', num_args = 1.., value_name = "NAME=VALUE")]
    pub variables: Vec<String>,
    /// Buffer pool size in MiB.
    #[arg(long = "memory-mb", default_value_t = 1024)]
    pub memory_mb: usize,
}

pub fn run(args: SqlArgs) -> ExitCode {
    let mut vars = Vec::new();
    for v in &args.variables {
        match v.split_once('=') {
            Some((n, val)) => vars.push((n.trim().to_string(), val.trim().trim_matches('"').to_string())),
            None => {
                eprintln!("Sqlcmd: '-v {v}': Invalid argument. Enter '-?' for help.");
                return ExitCode::from(1);
            }
        }
    }
    let script = match (&args.query, &args.input) {
        (Some(q), _) => Some(q.clone()),
        (None, Some(path)) => match std::fs::read_to_string(path) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("Sqlcmd: '{}': Invalid filename. ({e})", path.display());
                return ExitCode::from(1);
            }
        },
        (None, None) => None,
    };
    let script = match script.map(|s| runner::substitute(&s, &vars)).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("Sqlcmd: Error: Syntax error at line 1 near command '$'. {e}");
            return ExitCode::from(1);
        }
    };
    let out: Box<dyn Write> = match &args.output {
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Box::new(std::io::BufWriter::new(f)),
            Err(e) => {
                eprintln!("Sqlcmd: '{}': Invalid filename. ({e})", path.display());
                return ExitCode::from(1);
            }
        },
        // At the prompt, results and prompts share stdout's line buffer.
        None if script.is_none() => Box::new(std::io::stdout()),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let format = SqlcmdFormat {
        trim: args.trim,
        headers: args.headers != Some(-1),
        separator: args.separator.clone().unwrap_or_else(|| " ".to_string()),
        ..SqlcmdFormat::default()
    };
    let mut writer = SqlcmdWriter::new(out, format);
    let mut target = match Target::open(&args) {
        Ok(t) => t,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(1);
        }
    };
    let mut failed = 0;
    if let Some(q) = &args.initial_query {
        failed += runner::run_script(target.batches(), q, &mut writer);
    }
    match &script {
        Some(script) => failed += runner::run_script(target.batches(), script, &mut writer),
        None => {
            let stdin = std::io::stdin();
            let mut lines = stdin.lock().lines().map_while(Result::ok);
            failed += runner::run_interactive(target.batches(), &mut lines, &vars, &mut writer, &mut |n| {
                print!("{n}> ");
                let _ = std::io::stdout().flush();
            });
        }
    }
    let _ = writer.into_inner().flush();
    target.close();
    if args.abort_on_error && failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Where batches run: a session in this process on a data directory, or a server.
enum Target {
    Local { engine: std::sync::Arc<Engine>, session: Box<Session> },
    Remote(Remote),
}

impl Target {
    fn open(args: &SqlArgs) -> Result<Target, String> {
        match (&args.server, &args.data_dir) {
            (Some(server), _) => Remote::connect(server, &args.database, &args.login).map(Target::Remote),
            (None, Some(dir)) => {
                let mut config = EngineConfig::new(dir);
                config.log_dir = args.log_dir.clone();
                config.pool_bytes = args.memory_mb << 20;
                let engine = Engine::open(config)
                    .map_err(|e| format!("tessera sql: cannot open data directory '{}': {e}", dir.display()))?;
                let shared = tessera_sql::start_instance(engine.clone()).map_err(|e| format!("tessera sql: {e}"))?;
                let session = Session::new(shared, "sa", &args.database)
                    .map_err(|e| format!("Msg {}, Level {}, State {}\n{}", e.number, e.severity, e.state, e.message))?;
                Ok(Target::Local { engine, session: Box::new(session) })
            }
            (None, None) => Err("tessera sql: give -S server or --data-dir DIR".to_string()),
        }
    }

    fn batches(&mut self) -> &mut dyn Batches {
        match self {
            Target::Local { session, .. } => session.as_mut(),
            Target::Remote(remote) => remote,
        }
    }

    fn close(self) {
        if let Target::Local { engine, mut session } = self {
            session.close();
            session.flush_query_stores();
            if let Err(e) = engine.shutdown() {
                eprintln!("tessera sql: shutdown: {e}");
            }
        }
    }
}

/// How to log in to a server (sqlcmd's -U -P -N -C -l -t), for `tessera sql` and `tessera
/// fleet`.
#[derive(Debug, Args)]
pub struct Login {
    /// Login name (sqlcmd's -U).
    #[arg(short = 'U', default_value = "sa")]
    pub user: String,
    /// Password (sqlcmd's -P; default: the SQLCMDPASSWORD environment variable).
    #[arg(short = 'P')]
    pub password: Option<String>,
    /// Encrypt the whole connection (sqlcmd's -N[s|m|o]): `-N` or `-N m` (mandatory) asks
    /// for TLS after PRELOGIN, `-N s` (strict) for TDS 8.0 (TLS before anything else),
    /// `-N o` (optional) encrypts only the login, as without -N, when the server offers TLS.
    #[arg(short = 'N', num_args = 0..=1, default_missing_value = "m", value_name = "s|m|o", value_parser = parse_encrypt)]
    pub encrypt: Option<EncryptMode>,
    /// Trust the server's certificate without checking it against the system's CAs
    /// (sqlcmd's -C).
    #[arg(short = 'C')]
    pub trust_server_certificate: bool,
    /// Seconds to wait for a login (sqlcmd's -l).
    #[arg(short = 'l', default_value_t = 8)]
    pub login_timeout: u64,
    /// Seconds a batch may run before it is cancelled; 0 waits for ever (sqlcmd's -t).
    #[arg(short = 't', default_value_t = 0)]
    pub query_timeout: u64,
}

/// A connection to a server; batches run one at a time on a current-thread runtime.
pub struct Remote {
    runtime: tokio::runtime::Runtime,
    client: Option<Client>,
    query_timeout: Option<Duration>,
}

impl Remote {
    pub fn connect(server: &str, database: &str, args: &Login) -> Result<Remote, String> {
        let name = parse_server(server)?;
        let port = server_port(&name, Duration::from_secs(args.login_timeout.max(1)))?;
        let host = name.host;
        let password = match &args.password {
            Some(p) => p.clone(),
            None => std::env::var("SQLCMDPASSWORD")
                .map_err(|_| "Sqlcmd: Error: give the password with -P or SQLCMDPASSWORD.".to_string())?,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("tessera sql: cannot start the runtime: {e}"))?;
        let trust_server_certificate = args.trust_server_certificate;
        let encryption = match args.encrypt.unwrap_or(EncryptMode::Optional) {
            EncryptMode::Strict => Encryption::Strict { trust_server_certificate },
            EncryptMode::Mandatory => Encryption::Full { trust_server_certificate },
            EncryptMode::Optional => Encryption::LoginOnly,
        };
        let options = ConnectOptions { host: &host, port, user: &args.user, password: &password, database, encryption };
        let login = Client::connect(&options);
        let timeout = Duration::from_secs(args.login_timeout.max(1));
        let client = match runtime.block_on(async { tokio::time::timeout(timeout, login).await }) {
            Ok(Ok(client)) => client,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(format!("Sqlcmd: Error: {e}"));
            }
            Ok(Err(e)) => return Err(format!("Sqlcmd: Error: cannot connect to {host},{port}: {e}")),
            Err(_) => return Err(format!("Sqlcmd: Error: Login timeout expired ({host},{port}).")),
        };
        let query_timeout = (args.query_timeout > 0).then(|| Duration::from_secs(args.query_timeout));
        Ok(Remote { runtime, client: Some(client), query_timeout })
    }
}

impl Remote {
    /// False once the connection was lost.
    pub fn connected(&self) -> bool {
        self.client.is_some()
    }
}

impl Batches for Remote {
    fn run_batch(&mut self, text: &str, sink: &mut dyn ResultSink) -> bool {
        let Some(client) = self.client.as_mut() else {
            eprintln!("Sqlcmd: Error: the connection to the server was lost.");
            return true;
        };
        let result = match self.query_timeout {
            None => self.runtime.block_on(client.execute(text, sink)),
            Some(limit) => self.runtime.block_on(client.execute_with_timeout(text, sink, limit)),
        };
        match result {
            Ok(failed) => failed,
            Err(e) => {
                eprintln!("Sqlcmd: Error: {e}");
                if e.kind() != std::io::ErrorKind::TimedOut {
                    self.client = None;
                }
                true
            }
        }
    }
}

/// Where sqlcmd's -S points: `host`, `host,port`, `host\instance` or `host\instance,port`,
/// each optionally after `tcp:`.
#[derive(Debug, PartialEq, Eq)]
struct ServerName {
    host: String,
    /// Given after the comma; a named instance without one asks the SQL Server Browser.
    port: Option<u16>,
    instance: Option<String>,
}

fn parse_server(server: &str) -> Result<ServerName, String> {
    let s = server.strip_prefix("tcp:").unwrap_or(server);
    let (name, port) = match s.split_once(',') {
        Some((n, p)) => {
            (n, Some(p.trim().parse::<u16>().map_err(|_| format!("Sqlcmd: Error: invalid port in '{server}'."))?))
        }
        None => (s, None),
    };
    let (host, instance) = match name.split_once('\\') {
        Some((_, "")) => return Err(format!("Sqlcmd: Error: no instance name after '\\' in '{server}'.")),
        Some((h, i)) => (h, Some(i.trim().to_string())),
        None => (name, None),
    };
    let host = match host.trim() {
        "" | "." | "(local)" => "127.0.0.1",
        h => h,
    };
    Ok(ServerName { host: host.to_string(), port, instance })
}

/// The TCP port to connect to: the one given, the default instance's 1433, or a named
/// instance's as the SQL Server Browser on its host reports it (CLNT_UCAST_INST), as
/// SQL Server's clients find it.
fn server_port(name: &ServerName, timeout: Duration) -> Result<u16, String> {
    match (&name.instance, name.port) {
        (_, Some(port)) => Ok(port),
        (None, None) => Ok(1433),
        (Some(instance), None) => tessera_server::browser::resolve(&name.host, instance, timeout).map_err(|e| {
            format!(
                "Sqlcmd: Error: SQL Server Network Interfaces: Error Locating Server/Instance Specified [xFFFFFFFF]. ({}\\{instance}: {e})",
                name.host
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names() {
        let named = |host: &str, port, instance: Option<&str>| ServerName {
            host: host.to_string(),
            port,
            instance: instance.map(str::to_string),
        };
        assert_eq!(parse_server("localhost").unwrap(), named("localhost", None, None));
        assert_eq!(parse_server("tcp:127.0.0.1,14330").unwrap(), named("127.0.0.1", Some(14330), None));
        assert_eq!(parse_server("(local),9").unwrap(), named("127.0.0.1", Some(9), None));
        assert_eq!(parse_server("host\\SQLEXPRESS").unwrap(), named("host", None, Some("SQLEXPRESS")));
        assert_eq!(parse_server(".\\sales,5000").unwrap(), named("127.0.0.1", Some(5000), Some("sales")));
        assert!(parse_server("host,notaport").is_err());
        assert!(parse_server("host\\").is_err());
        let timeout = Duration::from_secs(1);
        assert_eq!(server_port(&named("h", None, None), timeout), Ok(1433));
        assert_eq!(server_port(&named("h", Some(7), Some("X")), timeout), Ok(7));
    }
}
