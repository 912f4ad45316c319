//! `tessera rebalance`: moves tenants between a fleet's servers until each holds a number
//! of databases within a band around the mean — one round, or (`--watch SECONDS`) as a
//! controller that runs a round every interval (crates/gateway/src/rebalance.rs). SIGTERM
//! or ^C lets the move in progress finish (a move cut off after its tail leaves the
//! tenant unavailable) and starts no other.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tessera_gateway::directory::Directory;
use tessera_gateway::etcd::Etcd;
use tessera_gateway::rebalance::{control, round, Band, Mover, Stop};

#[derive(Debug, Args)]
pub struct RebalanceArgs {
    /// The etcd cluster holding the tenant directory (host:port of a member's client URL).
    #[arg(long, value_name = "HOST:PORT")]
    etcd: String,
    /// A directory every server and this command see at this path (a shared volume): the
    /// moves' backups go through it.
    #[arg(long, value_name = "DIR")]
    through: PathBuf,
    /// How far a server's database count may be from the mean, as a fraction of it.
    #[arg(long, default_value_t = 0.25)]
    tolerance: f64,
    /// The most tenants moved in one round.
    #[arg(long, default_value_t = 4)]
    max_moves: usize,
    /// Run as a controller: a round every this many seconds, until stopped.
    #[arg(long, value_name = "SECONDS")]
    watch: Option<u64>,
    /// Login name on every server (needs to back up, restore, kill and drop).
    #[arg(short = 'U', default_value = "sa")]
    user: String,
    /// Password [default: SQLCMDPASSWORD, then TESSERA_SA_PASSWORD].
    #[arg(short = 'P')]
    password: Option<String>,
}

pub fn run(args: RebalanceArgs) -> ExitCode {
    let Some(password) = crate::move_cmd::password(args.password.clone()) else {
        eprintln!("tessera rebalance: give the password with -P, SQLCMDPASSWORD or TESSERA_SA_PASSWORD.");
        return ExitCode::from(2);
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tessera rebalance: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let etcd = Etcd::new(&args.etcd);
    let band = Band { tolerance: args.tolerance, max_moves: args.max_moves };
    let mover = Mover { through: &args.through, user: &args.user, password: &password };
    let log = |line: &str| eprintln!("tessera rebalance: {line}");
    let stop = Stop::default();
    if let Some(seconds) = args.watch {
        let who = format!("{}:{}", std::env::var("HOSTNAME").unwrap_or_default(), std::process::id());
        let interval = Duration::from_secs(seconds.max(1));
        rt.block_on(until_stopped(&stop, &log, control(etcd, &who, &band, interval, &mover, &stop, &log)));
        return ExitCode::SUCCESS;
    }
    let outcome = rt.block_on(until_stopped(&stop, &log, round(&Directory::new(etcd), &band, &mover, &stop, &log)));
    let (moved, failure) = match outcome {
        Ok(moved) => (moved, None),
        Err((moved, e)) => (moved, Some(e)),
    };
    for m in &moved {
        println!("Moved a tenant from {} to {}: write pause {} ms.", m.from, m.to, m.write_pause.as_millis());
    }
    println!("{} tenants moved.", moved.len());
    match failure {
        None => ExitCode::SUCCESS,
        Some(e) => {
            eprintln!("tessera rebalance: {e}");
            ExitCode::from(1)
        }
    }
}

/// Runs `work`, asking `stop` when SIGTERM or ^C arrives (`work` then ends on its own).
async fn until_stopped<T>(stop: &Stop, log: &dyn Fn(&str), work: impl std::future::Future<Output = T>) -> T {
    let signalled = async {
        tessera_server::terminated().await;
        log("Stopping: the move in progress, if any, finishes first.");
        stop.ask();
        std::future::pending::<()>().await;
    };
    tokio::select! {
        out = work => out,
        _ = signalled => unreachable!("waits for ever once it has asked to stop"),
    }
}
