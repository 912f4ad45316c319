//! Moving a tenant to another server while clients use it (`tessera move`), with the
//! servers' own BACKUP and RESTORE over TDS and one etcd transaction:
//!
//! 1. a full backup on the source, restored on the target WITH NORECOVERY (the target's
//!    copy is RESTORING; the directory still names the source, so the target's fence
//!    refuses logins into it);
//! 2. log backups shipped and restored WITH NORECOVERY until one is small (the copy lags
//!    the source by less than [`CAUGHT_UP_BYTES`]) or [`CATCH_UP_ROUNDS`] have run;
//! 3. the tail: `BACKUP LOG … WITH NORECOVERY` on the source, which holds the database
//!    alone while it runs and leaves it RESTORING, so nothing commits there after the
//!    tail's last LSN — writes pause here;
//! 4. the tail restored WITH RECOVERY on the target;
//! 5. the directory flipped ([`Directory::transfer`]): gateways route new logins to the
//!    target, whose fence opens as soon as its publisher sees the flip — writes resume;
//! 6. the source's sessions in the database killed (their clients reconnect through a
//!    gateway, to the target) and its RESTORING copy dropped.
//!
//! A failure before the flip leaves the tenant where it was: the target's copy is
//! dropped and the source brought back (`RESTORE DATABASE … WITH RECOVERY`, which the
//! tail allows), its recovery model as it was. The backups go through a directory that
//! the source, the target and the mover all see at one path (a shared volume).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tessera_errors::SqlError;
use tessera_semantics::output::{Command, OutputColumn, ResultSink};
use tessera_semantics::types::Value;
use tessera_server::client::{Client, ConnectOptions, Encryption};

use crate::directory::{Directory, ServerEntry};

/// A log backup smaller than this ends the catch-up: the tail will be about as small.
pub const CAUGHT_UP_BYTES: u64 = 256 * 1024;
/// The most log backups shipped before the tail, however busy the tenant.
pub const CATCH_UP_ROUNDS: usize = 8;
/// How long the mover waits for the target to admit logins after the flip.
const ADMIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How many times a DROP of the source's copy is tried (its sessions may take moments
/// to let go after KILL).
const DROP_ATTEMPTS: usize = 50;

/// What to move, where, and how to log in to the servers.
pub struct Move<'a> {
    pub database: &'a str,
    /// The target server's name in the directory.
    pub to: &'a str,
    /// The directory the backups go through, the same path on every server.
    pub through: &'a Path,
    pub user: &'a str,
    pub password: &'a str,
}

/// What a move did.
#[derive(Debug)]
pub struct Moved {
    pub from: String,
    pub to: String,
    /// Log backups shipped before the tail.
    pub log_backups: usize,
    /// The bytes of every backup shipped.
    pub backup_bytes: u64,
    /// From the tail's start until the target admitted a login into the database.
    pub write_pause: Duration,
    pub total: Duration,
}

#[derive(Debug)]
pub struct MoveError(pub String);

impl std::fmt::Display for MoveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type Result<T> = std::result::Result<T, MoveError>;

fn fail(text: impl Into<String>) -> MoveError {
    MoveError(text.into())
}

/// `[name]` with `]` doubled.
fn bracket(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}

/// `N'text'` with `'` doubled.
fn literal(text: &str) -> String {
    format!("N'{}'", text.replace('\'', "''"))
}

/// A connection to one server of the move, as the directory lists it.
struct Server {
    entry: ServerEntry,
    client: Client,
}

impl Server {
    async fn connect(entry: &ServerEntry, m: &Move<'_>, database: &str) -> Result<Server> {
        let client = login(entry, m.user, m.password, database)
            .await
            .map_err(|e| fail(format!("cannot log in to server '{}' ({}): {e}", entry.name, entry.address)))?;
        Ok(Server { entry: entry.clone(), client })
    }

    /// Runs `sql`: its rows, or its errors as one.
    async fn run(&mut self, sql: &str) -> Result<Vec<Vec<Value>>> {
        let mut sink = Collect::default();
        let failed = self
            .client
            .execute(sql, &mut sink)
            .await
            .map_err(|e| fail(format!("server '{}': {e}", self.entry.name)))?;
        if failed || !sink.errors.is_empty() {
            return Err(fail(format!("server '{}': {sql}: {}", self.entry.name, sink.errors.join(" "))));
        }
        Ok(sink.rows)
    }

    /// The first column of the first row, as text.
    async fn text(&mut self, sql: &str) -> Result<Option<String>> {
        Ok(self.run(sql).await?.into_iter().next().and_then(|row| row.into_iter().next()).and_then(|v| match v {
            Value::Str(s) => Some(s.to_string()),
            Value::Int(i) => Some(i.to_string()),
            _ => None,
        }))
    }
}

/// Runs `sql` in `master` on `entry` as `user`: its rows.
pub(crate) async fn query(entry: &ServerEntry, user: &str, password: &str, sql: &str) -> Result<Vec<Vec<Value>>> {
    let client = login(entry, user, password, "master")
        .await
        .map_err(|e| fail(format!("cannot log in to server '{}' ({}): {e}", entry.name, entry.address)))?;
    Server { entry: entry.clone(), client }.run(sql).await
}

async fn login(entry: &ServerEntry, user: &str, password: &str, database: &str) -> std::io::Result<Client> {
    let (host, port) = entry
        .address
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
        .ok_or_else(|| std::io::Error::other(format!("'{}' is not host:port", entry.address)))?;
    let options = ConnectOptions { host, port, user, password, database, encryption: Encryption::LoginOnly };
    Client::connect(&options).await
}

/// Rows and error texts of one batch.
#[derive(Default)]
struct Collect {
    rows: Vec<Vec<Value>>,
    errors: Vec<String>,
}

impl ResultSink for Collect {
    fn columns(&mut self, _columns: &[OutputColumn]) {}
    fn row(&mut self, row: &[Value]) {
        self.rows.push(row.to_vec());
    }
    fn done(&mut self, _count: Option<u64>, _command: Command) {}
    fn message(&mut self, m: &SqlError) {
        if m.severity > 10 {
            self.errors.push(format!("Msg {}: {}", m.number, m.message));
        }
    }
}

/// What has been done that a failure must undo.
#[derive(Default)]
struct Undo {
    /// The source was in SIMPLE recovery and was set to FULL for the move.
    recovery_was_simple: bool,
    /// The target holds a copy of the database.
    target_copy: bool,
    /// The source's tail was taken: it is RESTORING.
    source_tailed: bool,
}

/// Moves `m.database` from the server that holds it to `m.to`. `log` gets each step.
pub async fn move_database(directory: &Directory, m: &Move<'_>, log: &dyn Fn(&str)) -> Result<Moved> {
    let started = Instant::now();
    let name = m.database;
    let from = directory
        .locate(name)
        .await
        .map_err(|e| fail(e.to_string()))?
        .ok_or_else(|| fail(format!("no live server holds database '{name}'")))?;
    let to = directory
        .server(m.to)
        .await
        .map_err(|e| fail(e.to_string()))?
        .ok_or_else(|| fail(format!("server '{}' is not live in the directory", m.to)))?;
    if from.name == to.name {
        return Err(fail(format!("database '{name}' is already on server '{}'", to.name)));
    }
    if !m.through.is_dir() {
        return Err(fail(format!("'{}' is not a directory", m.through.display())));
    }
    let mut source = Server::connect(&from, m, "master").await?;
    let mut target = Server::connect(&to, m, "master").await?;
    let mut undo = Undo::default();
    let mut files = Vec::new();
    let result = copy_and_flip(directory, m, &mut source, &mut target, &mut undo, &mut files, log).await;
    let (log_backups, backup_bytes, write_pause) = match result {
        Ok(done) => done,
        Err(e) => {
            log(&format!("The move failed: {e}. Leaving '{name}' on server '{}'.", from.name));
            if let Err(u) = roll_back(name, &mut source, &mut target, &undo).await {
                log(&format!("Undoing the move failed too: {u}"));
            }
            remove_all(&files);
            return Err(e);
        }
    };
    // The tenant is the target's now: what remains is the source's copy.
    if let Err(e) = retire_source(name, &mut source).await {
        log(&format!("Database '{name}' moved, but its old copy on server '{}' stays: {e}", from.name));
    }
    remove_all(&files);
    Ok(Moved { from: from.name, to: to.name, log_backups, backup_bytes, write_pause, total: started.elapsed() })
}

/// Steps 1–5: (log backups shipped, bytes shipped, write pause).
async fn copy_and_flip(
    directory: &Directory,
    m: &Move<'_>,
    source: &mut Server,
    target: &mut Server,
    undo: &mut Undo,
    files: &mut Vec<PathBuf>,
    log: &dyn Fn(&str),
) -> Result<(usize, u64, Duration)> {
    let name = m.database;
    let (db, lit) = (bracket(name), literal(name));
    let state = source
        .run(&format!("select state_desc, recovery_model_desc from sys.databases where name = {lit}"))
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| fail(format!("server '{}' has no database '{name}'", source.entry.name)))?;
    let text = |v: &Value| if let Value::Str(s) = v { s.to_string() } else { String::new() };
    if text(&state[0]) != "ONLINE" {
        return Err(fail(format!("database '{name}' is {} on server '{}'", text(&state[0]), source.entry.name)));
    }
    if target.text(&format!("select name from sys.databases where name = {lit}")).await?.is_some() {
        return Err(fail(format!("server '{}' already has a database named '{name}'", target.entry.name)));
    }
    // Where the target keeps files, and the names of the database's files.
    let data_dir = target.text("select serverproperty('InstanceDefaultDataPath')").await?.unwrap_or_default();
    let log_dir = target.text("select serverproperty('InstanceDefaultLogPath')").await?.unwrap_or_default();
    let mut moves = Vec::new();
    for row in source.run(&format!("select name, type from sys.master_files where database_id = db_id({lit})")).await? {
        let (logical, kind) = (text(&row[0]), if let Value::Int(k) = row[1] { k } else { 0 });
        let path = if kind == 1 { format!("{log_dir}{name}_log.ldf") } else { format!("{data_dir}{name}.mdf") };
        moves.push(format!("move {} to {}", literal(&logical), literal(&path)));
    }

    if text(&state[1]) == "SIMPLE" {
        source.run(&format!("alter database {db} set recovery full")).await?;
        undo.recovery_was_simple = true;
    }
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let mut file = |n: &str| -> PathBuf {
        let p = m.through.join(format!("{name}-{stamp}.{n}.bak"));
        files.push(p.clone());
        p
    };
    let disk = |p: &Path| literal(&p.display().to_string());

    // 1. The full backup, restored WITH NORECOVERY.
    let full = file("full");
    log(&format!("Backing up '{name}' on server '{}'.", source.entry.name));
    source.run(&format!("backup database {db} to disk = {} with init", disk(&full))).await?;
    let mut bytes = size(&full);
    undo.target_copy = true;
    target
        .run(&format!("restore database {db} from disk = {} with norecovery, {}", disk(&full), moves.join(", ")))
        .await?;

    // 2. Log backups until the copy has caught up.
    let mut rounds = 0;
    while rounds < CATCH_UP_ROUNDS {
        rounds += 1;
        let backup = file(&format!("log{rounds}"));
        source.run(&format!("backup log {db} to disk = {} with init", disk(&backup))).await?;
        target.run(&format!("restore log {db} from disk = {} with norecovery", disk(&backup))).await?;
        let shipped = size(&backup);
        bytes += shipped;
        if shipped < CAUGHT_UP_BYTES {
            break;
        }
    }
    log(&format!("'{name}' caught up on server '{}' after {rounds} log backups.", target.entry.name));

    // 3.–5. The tail, its restore and the flip: writes pause from here.
    let paused = Instant::now();
    let tail = file("tail");
    source.run(&format!("backup log {db} to disk = {} with init, norecovery", disk(&tail))).await?;
    undo.source_tailed = true;
    bytes += size(&tail);
    target.run(&format!("restore log {db} from disk = {} with recovery", disk(&tail))).await?;
    if undo.recovery_was_simple {
        target.run(&format!("alter database {db} set recovery simple")).await?;
    }
    flip(directory, name, &source.entry.name, &target.entry.name).await?;
    wait_admitted(target, m).await?;
    Ok((rounds, bytes, paused.elapsed()))
}

/// The directory's entry flipped to the target; a flip whose answer was lost but which
/// happened counts.
async fn flip(directory: &Directory, name: &str, from: &str, to: &str) -> Result<()> {
    match directory.transfer(name, from, to).await {
        Ok(()) => Ok(()),
        Err(e) => match directory.locate(name).await {
            Ok(Some(owner)) if owner.name == to => Ok(()),
            _ => Err(fail(format!("the directory was not flipped: {e}"))),
        },
    }
}

/// Waits until the target admits a login into the database (its fence opens once its
/// publisher sees the flip).
async fn wait_admitted(target: &Server, m: &Move<'_>) -> Result<()> {
    let started = Instant::now();
    loop {
        match login(&target.entry, m.user, m.password, m.database).await {
            Ok(_) => return Ok(()),
            Err(e) if started.elapsed() > ADMIT_TIMEOUT => {
                return Err(fail(format!("server '{}' did not admit logins after the flip: {e}", target.entry.name)))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Step 6: the source's sessions in the database killed, its copy dropped.
async fn retire_source(name: &str, source: &mut Server) -> Result<()> {
    let lit = literal(name);
    let mut last = None;
    for _ in 0..DROP_ATTEMPTS {
        let sessions = source
            .run(&format!(
                "select session_id from sys.dm_exec_sessions where database_id = db_id({lit}) and session_id <> @@spid"
            ))
            .await?;
        for row in sessions {
            if let Value::Int(spid) = row[0] {
                // A session that ended meanwhile is not an error worth stopping for.
                let _ = source.run(&format!("kill {spid}")).await;
            }
        }
        match source.run(&format!("drop database {}", bracket(name))).await {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(last.unwrap_or_else(|| fail("DROP DATABASE failed")))
}

/// Puts the tenant back as it was on the source.
async fn roll_back(name: &str, source: &mut Server, target: &mut Server, undo: &Undo) -> Result<()> {
    let db = bracket(name);
    if undo.target_copy {
        target.run(&format!("if db_id({}) is not null drop database {db}", literal(name))).await?;
    }
    if undo.source_tailed {
        source.run(&format!("restore database {db} with recovery")).await?;
    }
    if undo.recovery_was_simple {
        source.run(&format!("alter database {db} set recovery simple")).await?;
    }
    Ok(())
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn remove_all(files: &[PathBuf]) {
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}
