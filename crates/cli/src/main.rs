//! `tessera`: the server and its clients, one subcommand each; `bench` and `iobench` run
//! the `tessera-bench` binary, which holds the benchmarks and their peers, and `torture`
//! runs `tessera-torture`, which holds the reliability campaigns.

mod bench_cmd;
mod fleet_cmd;
mod gateway_cmd;
mod move_cmd;
mod rebalance_cmd;
mod serve_cmd;
mod sql_cmd;
mod top_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc's malloc: the server allocates and frees many short-lived
/// objects of every size from many threads (parsed batches, plans, rows), where glibc's
/// arenas spent ~17 % of the server's CPU in bank transfers over 10,000 accounts
/// (`malloc_consolidate`, `unlink_chunk`; see docs/benchmarks.md, bench contention).
/// Built without transparent huge pages (`no_thp`): with them a server hosting 2,000
/// databases held 15.7 GB of mostly empty 2 MiB pages, 1.6 GB without (bench plancache).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "tessera", version, about = "tessera: an OLTP database server that speaks TDS")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a workload benchmark against its peers and report the ratios (runs
    /// `tessera-bench bench …`; `tessera bench --help` lists them).
    Bench(bench_cmd::Forwarded),
    /// Run a script in, or back up, every database of a server (or those matching
    /// --databases), N at a time, with a per-database report; exit status 1 if any failed.
    Fleet(fleet_cmd::FleetArgs),
    /// One address in front of many servers: routes each connection to the server that
    /// holds its login's database, as the tenant directory in etcd says.
    Gateway(gateway_cmd::GatewayArgs),
    /// A diskspd-style disk benchmark: -b8K -d30 -t1 -o32 -r -w40 -L -c1G FILE (runs
    /// `tessera-bench iobench …`; see `tessera iobench --help`).
    Iobench(bench_cmd::Forwarded),
    /// Move a database to another server of a fleet while clients use it: backups through
    /// a shared directory, a brief write pause for the tail, the tenant directory flipped.
    Move(move_cmd::MoveArgs),
    /// Move tenants between a fleet's servers until each holds a number of databases
    /// within a band around the mean: one round, or a controller with --watch.
    Rebalance(rebalance_cmd::RebalanceArgs),
    /// Run the TDS server (SQL Server clients connect to it). Data directory
    /// ./tessera-data and 127.0.0.1:1433 by default; the sa password comes from
    /// TESSERA_SA_PASSWORD or the configuration file.
    Serve(serve_cmd::ServeArgs),
    /// sqlcmd: run T-SQL on a server (-S host[,port]) or on a data directory (--data-dir),
    /// printing results as sqlcmd does.
    Sql(sql_cmd::SqlArgs),
    /// A live view of a server over TDS (needs VIEW SERVER STATE): requests per second,
    /// the busiest databases, sessions, blocking chains and top waits; --batch prints text.
    Top(top_cmd::TopArgs),
    /// The reliability campaigns: power losses at chosen points of a seeded workload,
    /// each recovered and checked (runs `tessera-torture …`; see `tessera torture --help`).
    Torture(bench_cmd::Forwarded),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(args) => bench_cmd::run("bench", args),
        Command::Fleet(args) => fleet_cmd::run(args),
        Command::Gateway(args) => gateway_cmd::run(args),
        Command::Iobench(args) => bench_cmd::run("iobench", args),
        Command::Move(args) => move_cmd::run(args),
        Command::Rebalance(args) => rebalance_cmd::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Sql(args) => sql_cmd::run(args),
        Command::Top(args) => top_cmd::run(args),
        Command::Torture(args) => bench_cmd::torture(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn bench_and_iobench_take_their_arguments_untouched() {
        let cli = Cli::try_parse_from(["tessera", "bench", "engine", "--quick", "--help"]).unwrap();
        let Command::Bench(f) = cli.command else { panic!("not bench") };
        assert_eq!(f.args, ["engine", "--quick", "--help"]);
        let cli = Cli::try_parse_from(["tessera", "iobench", "-b8K", "-o32", "f.dat"]).unwrap();
        let Command::Iobench(f) = cli.command else { panic!("not iobench") };
        assert_eq!(f.args, ["-b8K", "-o32", "f.dat"]);
    }
}
