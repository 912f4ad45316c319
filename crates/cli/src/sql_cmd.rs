//! `tessera sql`: sqlcmd's interface to a data directory, in process (`--data-dir`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tessera_database::{Engine, EngineConfig};
use tessera_sql::{runner, Session, Shared, SqlcmdFormat, SqlcmdWriter};

#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct SqlArgs {
    /// Print help (sqlcmd's -?).
    #[arg(short = '?', long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Run directly on this data directory, without a server (created if missing).
    #[arg(long = "data-dir")]
    pub data_dir: PathBuf,
    /// Directory for log files (default: the data directory).
    #[arg(long = "log-dir")]
    pub log_dir: Option<PathBuf>,
    /// Initial database.
    #[arg(short = 'd', default_value = "master")]
    pub database: String,
    /// Run this query and exit.
    #[arg(short = 'Q', conflicts_with = "input")]
    pub query: Option<String>,
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
    let script = match (&args.query, &args.input) {
        (Some(q), None) => q.clone(),
        (None, Some(path)) => match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("Sqlcmd: '{}': Invalid filename. ({e})", path.display());
                return ExitCode::from(1);
            }
        },
        _ => {
            eprintln!(
                "tessera sql: give -Q \"query\" or -i file.sql (the interactive prompt needs -S, with the server)"
            );
            return ExitCode::from(1);
        }
    };
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
    let script = match runner::substitute(&script, &vars) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("Sqlcmd: Error: Syntax error at line 1 near command '$'. {e}");
            return ExitCode::from(1);
        }
    };
    let mut config = EngineConfig::new(&args.data_dir);
    config.log_dir = args.log_dir.clone();
    config.pool_bytes = args.memory_mb << 20;
    let engine = match Engine::open(config) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("tessera sql: cannot open data directory '{}': {e}", args.data_dir.display());
            return ExitCode::from(1);
        }
    };
    let shared = match Shared::new(engine.clone()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tessera sql: {e}");
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
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let format = SqlcmdFormat {
        trim: args.trim,
        headers: args.headers != Some(-1),
        separator: args.separator.clone().unwrap_or_else(|| " ".to_string()),
        ..SqlcmdFormat::default()
    };
    let mut writer = SqlcmdWriter::new(out, format);
    let failed = match Session::new(shared, "sa", &args.database) {
        Ok(mut session) => {
            let failed = runner::run_script(&mut session, &script, &mut writer);
            session.close();
            failed
        }
        Err(e) => {
            eprintln!("Msg {}, Level {}, State {}\n{}", e.number, e.severity, e.state, e.message);
            1
        }
    };
    let _ = writer.into_inner().flush();
    if let Err(e) = engine.shutdown() {
        eprintln!("tessera sql: shutdown: {e}");
    }
    if args.abort_on_error && failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
