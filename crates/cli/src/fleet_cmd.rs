//! `tessera fleet`: one script, or a backup, for every database of a server (or those whose
//! names match a pattern), N databases at a time over N connections, with a progress bar
//! on stderr, a per-database report (text or JSON) and an exit status that says whether
//! any database failed: 0 all succeeded, 1 some failed, 2 usage or connection error. A
//! failure in one database never stops the others.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use clap::{Args, Subcommand};
use tessera_semantics::output::{Command, OutputColumn, ResultSink};
use tessera_semantics::types::Value;
use tessera_sql::runner::{self, Batches};
use tessera_sql::SqlError;

use crate::sql_cmd::{Login, Remote};

#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub action: FleetAction,
}

#[derive(Debug, Subcommand)]
pub enum FleetAction {
    /// Run a script (-Q or -i, GO-separated batches) in each selected database.
    Exec(ExecArgs),
    /// BACKUP DATABASE [x] TO DISK = 'DIR/x.bak' for each selected database.
    Backup(BackupArgs),
}

/// The server, the login, which databases, how many at once, and the report.
#[derive(Debug, Args)]
pub struct Common {
    /// Server: host, host,port or tcp:host,port (sqlcmd's -S).
    #[arg(short = 'S')]
    pub server: String,
    #[command(flatten)]
    pub login: Login,
    /// Databases whose names match this LIKE pattern (`%` any run of characters, `_` one
    /// character, case-insensitive); repeat for several. Default: every database.
    #[arg(long = "databases", value_name = "PATTERN")]
    pub databases: Vec<String>,
    /// Leave out databases whose names match this LIKE pattern; repeatable.
    #[arg(long = "exclude", value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Include the system databases (master, tempdb, model, msdb).
    #[arg(long = "include-system")]
    pub include_system: bool,
    /// Databases worked on at once, each over its own connection.
    #[arg(long = "parallel", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub parallel: u16,
    /// The report on stdout: text (one line per database and a summary) or json.
    #[arg(long = "format", default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Also write the JSON report to this file.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub common: Common,
    /// The script to run in each database.
    #[arg(short = 'Q', conflicts_with = "input", required_unless_present = "input")]
    pub query: Option<String>,
    /// A script file (batches separated by GO lines) to run in each database.
    #[arg(short = 'i')]
    pub input: Option<PathBuf>,
    /// Scripting variables for `$(name)` (sqlcmd's -v); `$(DATABASE)` is each database's name.
    #[arg(short = 'v', num_args = 1.., value_name = "NAME=VALUE")]
    pub variables: Vec<String>,
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    #[command(flatten)]
    pub common: Common,
    /// Directory (as the server sees it) that receives one `<database>.bak` per database.
    #[arg(long = "to", value_name = "DIR")]
    pub to: PathBuf,
    /// BACKUP's WITH options, as written after WITH.
    #[arg(long = "with", default_value = "INIT", value_name = "OPTIONS")]
    pub with: String,
}

/// What happened in one database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub database: String,
    /// The first error (number, message), if any batch raised one.
    pub error: Option<(i32, String)>,
    pub rows_affected: u64,
    pub elapsed_ms: u64,
}

/// SQL LIKE with `%` and `_`, case-insensitive (what `--databases` and `--exclude` match).
pub fn like(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('%', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some(('_', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some((c, rest)) => n.first().is_some_and(|d| d.to_lowercase().eq(c.to_lowercase())) && go(rest, &n[1..]),
        }
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    go(&p, &n)
}

const SYSTEM: [&str; 4] = ["master", "tempdb", "model", "msdb"];

/// The databases `common` selects among `all` (ONLINE databases, by name).
pub fn select(all: &[String], common: &Common) -> Vec<String> {
    all.iter()
        .filter(|n| common.include_system || !SYSTEM.iter().any(|s| s.eq_ignore_ascii_case(n)))
        .filter(|n| common.databases.is_empty() || common.databases.iter().any(|p| like(p, n)))
        .filter(|n| !common.exclude.iter().any(|p| like(p, n)))
        .cloned()
        .collect()
}

/// Collects a database's first error and its row counts (and, for the listing of
/// databases, the first column of its rows); prints nothing.
#[derive(Default)]
struct Tally {
    error: Option<(i32, String)>,
    rows: u64,
    listing: bool,
    names: Vec<String>,
}

impl ResultSink for Tally {
    fn columns(&mut self, _columns: &[OutputColumn]) {}
    fn row(&mut self, row: &[Value]) {
        if let (true, Some(Value::Str(name))) = (self.listing, row.first()) {
            self.names.push(name.to_string());
        }
    }
    fn done(&mut self, count: Option<u64>, command: Command) {
        if !command.is_result_set() {
            self.rows += count.unwrap_or(0);
        }
    }
    fn message(&mut self, m: &SqlError) {
        if m.severity > 10 && self.error.is_none() {
            self.error = Some((m.number, m.message.clone()));
        }
    }
}

fn quote(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}

/// The script one database runs, made from its name.
type Work = dyn Fn(&str) -> String + Sync;

pub fn run(args: FleetArgs) -> ExitCode {
    let (common, work): (&Common, Box<Work>) = match &args.action {
        FleetAction::Exec(exec) => {
            let script = match (&exec.query, &exec.input) {
                (Some(q), _) => q.clone(),
                (None, Some(path)) => match std::fs::read_to_string(path) {
                    Ok(s) => s,
                    Err(e) => return usage(&format!("'{}': cannot read the script: {e}", path.display())),
                },
                (None, None) => return usage("give the script with -Q or -i"),
            };
            let mut vars = Vec::new();
            for v in &exec.variables {
                match v.split_once('=') {
                    Some((n, val)) => vars.push((n.trim().to_string(), val.trim().to_string())),
                    None => return usage(&format!("'-v {v}': give NAME=VALUE")),
                }
            }
            (
                &exec.common,
                Box::new(move |db: &str| {
                    let mut vars = vars.clone();
                    vars.push(("DATABASE".into(), db.to_string()));
                    runner::substitute(&script, &vars).unwrap_or_else(|_| script.clone())
                }),
            )
        }
        FleetAction::Backup(backup) => {
            let dir = backup.to.clone();
            let with = backup.with.trim().to_string();
            (
                &backup.common,
                Box::new(move |db: &str| {
                    let file = dir.join(format!("{db}.bak")).display().to_string().replace('\'', "''");
                    let with = if with.is_empty() { String::new() } else { format!(" WITH {with}") };
                    format!("BACKUP DATABASE {} TO DISK = N'{file}'{with}", quote(db))
                }),
            )
        }
    };
    if let FleetAction::Backup(backup) = &args.action {
        // The server writes the files; on this machine the directory may be made here.
        let _ = std::fs::create_dir_all(&backup.to);
    }
    let mut first = match Remote::connect(&common.server, "master", &common.login) {
        Ok(r) => r,
        Err(e) => return connection_error(&e),
    };
    let mut listing = Tally { listing: true, ..Tally::default() };
    if first.run_batch("SELECT name FROM sys.databases WHERE state_desc = 'ONLINE' ORDER BY name", &mut listing) {
        let (n, m) = listing.error.unwrap_or((0, "the connection failed".into()));
        return connection_error(&format!("cannot list the databases: Msg {n}: {m}"));
    }
    let selected = select(&listing.names, common);
    let outcomes = run_all(common, &selected, first, work.as_ref());
    report(common, &args.action, &outcomes)
}

fn usage(message: &str) -> ExitCode {
    eprintln!("tessera fleet: {message}");
    ExitCode::from(2)
}

fn connection_error(message: &str) -> ExitCode {
    eprintln!("tessera fleet: {message}");
    ExitCode::from(2)
}

/// Runs `work(db)` in every database, `common.parallel` at a time; outcomes by name.
fn run_all(
    common: &Common,
    databases: &[String],
    first: Remote,
    work: &(dyn Fn(&str) -> String + Sync),
) -> Vec<Outcome> {
    let queue = Mutex::new(databases.iter().cloned().collect::<VecDeque<_>>());
    let outcomes = Mutex::new(Vec::with_capacity(databases.len()));
    let progress = Progress::new(databases.len());
    let first = Mutex::new(Some(first));
    std::thread::scope(|scope| {
        for _ in 0..usize::from(common.parallel).min(databases.len()) {
            scope.spawn(|| {
                let mut conn = first.lock().expect("not poisoned").take();
                loop {
                    let Some(db) = queue.lock().expect("not poisoned").pop_front() else { break };
                    let outcome = one(common, &mut conn, &db, &work(&db));
                    progress.finished(outcome.error.is_some());
                    outcomes.lock().expect("not poisoned").push(outcome);
                }
            });
        }
    });
    progress.clear();
    let mut outcomes = outcomes.into_inner().expect("not poisoned");
    outcomes.sort_by(|a, b| a.database.cmp(&b.database));
    outcomes
}

/// One database: `USE [db]`, then the script's batches, over `conn` (connected again if
/// a previous database lost it).
fn one(common: &Common, conn: &mut Option<Remote>, db: &str, script: &str) -> Outcome {
    let started = Instant::now();
    let mut tally = Tally::default();
    if conn.is_none() {
        match Remote::connect(&common.server, "master", &common.login) {
            Ok(r) => *conn = Some(r),
            Err(e) => tally.error = Some((0, e)),
        }
    }
    if let Some(remote) = conn.as_mut() {
        if !remote.run_batch(&format!("USE {}", quote(db)), &mut tally) {
            runner::run_script(remote, script, &mut tally);
        } else if tally.error.is_none() {
            tally.error = Some((0, "the connection to the server was lost".into()));
        }
        if !remote.connected() {
            *conn = None;
            tally.error.get_or_insert((0, "the connection to the server was lost".into()));
        }
    }
    Outcome {
        database: db.to_string(),
        error: tally.error,
        rows_affected: tally.rows,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// `[#####.....] 12/20 databases, 1 failed` on stderr, redrawn in place; nothing when
/// stderr is not a terminal.
struct Progress {
    total: usize,
    state: Mutex<(usize, usize)>,
    shown: bool,
}

impl Progress {
    fn new(total: usize) -> Progress {
        let p = Progress { total, state: Mutex::new((0, 0)), shown: std::io::stderr().is_terminal() };
        p.draw(0, 0);
        p
    }

    fn finished(&self, failed: bool) {
        let mut s = self.state.lock().expect("not poisoned");
        s.0 += 1;
        s.1 += usize::from(failed);
        self.draw(s.0, s.1);
    }

    fn draw(&self, done: usize, failed: usize) {
        if !self.shown {
            return;
        }
        const WIDTH: usize = 30;
        let filled = (done * WIDTH).checked_div(self.total).unwrap_or(WIDTH);
        let bar: String = "#".repeat(filled) + &".".repeat(WIDTH - filled);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r[{bar}] {done}/{} databases, {failed} failed", self.total);
        let _ = err.flush();
    }

    fn clear(&self) {
        if self.shown {
            eprintln!();
        }
    }
}

/// The JSON report.
pub fn json_report(action: &str, outcomes: &[Outcome]) -> serde_json::Value {
    let failed = outcomes.iter().filter(|o| o.error.is_some()).count();
    let results: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| {
            serde_json::json!({
                "database": o.database,
                "status": if o.error.is_some() { "failed" } else { "ok" },
                "error_number": o.error.as_ref().map(|e| e.0),
                "error_message": o.error.as_ref().map(|e| e.1.clone()),
                "rows_affected": o.rows_affected,
                "elapsed_ms": o.elapsed_ms,
            })
        })
        .collect();
    serde_json::json!({
        "action": action,
        "databases": outcomes.len(),
        "succeeded": outcomes.len() - failed,
        "failed": failed,
        "results": results,
    })
}

fn report(common: &Common, action: &FleetAction, outcomes: &[Outcome]) -> ExitCode {
    let name = match action {
        FleetAction::Exec(_) => "exec",
        FleetAction::Backup(_) => "backup",
    };
    let json = json_report(name, outcomes);
    if let Some(path) = &common.json {
        let text = serde_json::to_string_pretty(&json).expect("JSON") + "\n";
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("tessera fleet: cannot write '{}': {e}", path.display());
        }
    }
    let mut out = std::io::stdout().lock();
    if common.format == "json" {
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&json).expect("JSON"));
    } else {
        for o in outcomes {
            let _ = match &o.error {
                None => {
                    writeln!(out, "ok      {}  rows affected: {}  {} ms", o.database, o.rows_affected, o.elapsed_ms)
                }
                Some((n, m)) => writeln!(out, "FAILED  {}  Msg {n}: {m}  {} ms", o.database, o.elapsed_ms),
            };
        }
        let failed = outcomes.iter().filter(|o| o.error.is_some()).count();
        let _ = writeln!(out, "{} databases: {} succeeded, {failed} failed", outcomes.len(), outcomes.len() - failed);
    }
    if outcomes.iter().any(|o| o.error.is_some()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn like_patterns() {
        assert!(like("tenant%", "Tenant07"));
        assert!(like("t_nant0_", "tenant07"));
        assert!(like("%", ""));
        assert!(!like("tenant_", "tenant07"));
        assert!(!like("shop%", "tenant07"));
        assert!(like("%07", "tenant07"));
    }
}
