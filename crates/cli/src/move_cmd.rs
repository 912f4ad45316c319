//! `tessera move`: moves a tenant database to another server of a fleet while clients use
//! it (crates/gateway/src/mover.rs has the steps). Prints one line with what the move
//! took; exit status 1 if it failed, the tenant then still on its server.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tessera_gateway::directory::Directory;
use tessera_gateway::etcd::Etcd;
use tessera_gateway::mover::{move_database, Move};

#[derive(Debug, Args)]
pub struct MoveArgs {
    /// The etcd cluster holding the tenant directory (host:port of a member's client URL).
    #[arg(long, value_name = "HOST:PORT")]
    etcd: String,
    /// The database to move.
    #[arg(long, short = 'd')]
    database: String,
    /// The server to move it to (its name in the directory).
    #[arg(long)]
    to: String,
    /// A directory both servers and this command see at this path (a shared volume): the
    /// backups go through it and are deleted after.
    #[arg(long, value_name = "DIR")]
    through: PathBuf,
    /// Login name on both servers (needs to back up, restore, kill and drop).
    #[arg(short = 'U', default_value = "sa")]
    user: String,
    /// Password [default: SQLCMDPASSWORD, then TESSERA_SA_PASSWORD].
    #[arg(short = 'P')]
    password: Option<String>,
}

pub fn run(args: MoveArgs) -> ExitCode {
    let Some(password) = password(args.password.clone()) else {
        eprintln!("tessera move: give the password with -P, SQLCMDPASSWORD or TESSERA_SA_PASSWORD.");
        return ExitCode::from(2);
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tessera move: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let directory = Directory::new(Etcd::new(&args.etcd));
    let m =
        Move { database: &args.database, to: &args.to, through: &args.through, user: &args.user, password: &password };
    match rt.block_on(move_database(&directory, &m, &|line| eprintln!("tessera move: {line}"))) {
        Ok(moved) => {
            println!(
                "Moved '{}' from {} to {}: {} log backups ({} bytes shipped), write pause {} ms, {} ms in all.",
                args.database,
                moved.from,
                moved.to,
                moved.log_backups,
                moved.backup_bytes,
                moved.write_pause.as_millis(),
                moved.total.as_millis()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tessera move: {e}");
            ExitCode::from(1)
        }
    }
}

/// The password given, else SQLCMDPASSWORD, else TESSERA_SA_PASSWORD.
pub fn password(given: Option<String>) -> Option<String> {
    given.or_else(|| std::env::var("SQLCMDPASSWORD").ok()).or_else(|| std::env::var("TESSERA_SA_PASSWORD").ok())
}
