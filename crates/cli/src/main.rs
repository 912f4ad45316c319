//! `tessera`: the server, its client and its benchmarks, one subcommand each.

mod bench_cmd;
mod fleet_cmd;
mod iobench_cmd;
mod serve_cmd;
mod sql_cmd;

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
    /// Run a workload benchmark against its peers and report the ratios.
    Bench(bench_cmd::BenchArgs),
    /// Run a script in, or back up, every database of a server (or those matching
    /// --databases), N at a time, with a per-database report; exit status 1 if any failed.
    Fleet(fleet_cmd::FleetArgs),
    /// A diskspd-style disk benchmark: -b8K -d30 -t1 -o32 -r -w40 -L -c1G FILE (see `tessera
    /// iobench --help`).
    Iobench(iobench_cmd::IobenchArgs),
    /// Run the TDS server (SQL Server clients connect to it). Data directory
    /// ./tessera-data and 127.0.0.1:1433 by default; the sa password comes from
    /// TESSERA_SA_PASSWORD or the configuration file.
    Serve(serve_cmd::ServeArgs),
    /// sqlcmd: run T-SQL on a server (-S host[,port]) or on a data directory (--data-dir),
    /// printing results as sqlcmd does.
    Sql(sql_cmd::SqlArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(args) => bench_cmd::run(args),
        Command::Fleet(args) => fleet_cmd::run(args),
        Command::Iobench(args) => iobench_cmd::run_iobench(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Sql(args) => sql_cmd::run(args),
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
    fn bench_engine_flags_parse() {
        let cli =
            Cli::try_parse_from(["tessera", "bench", "engine", "--quick", "--json", "--chart", "e.svg", "--dir", "d"])
                .unwrap();
        let Command::Bench(args) = cli.command else { panic!("not bench") };
        let bench_cmd::Bench::Engine(common) = args.bench else { panic!("not engine") };
        assert!(common.quick && common.json);
        assert_eq!(common.chart.as_deref(), Some(std::path::Path::new("e.svg")));
        assert_eq!(common.dir.as_deref(), Some(std::path::Path::new("d")));
    }

    #[test]
    fn iobench_takes_diskspd_flags_raw() {
        let cli = Cli::try_parse_from([
            "tessera", "iobench", "-b8K", "-d30", "-o32", "-r", "-w40", "-Sh", "--json", "--help", "f.dat",
        ])
        .unwrap();
        let Command::Iobench(args) = cli.command else { panic!("not iobench") };
        assert_eq!(args.args, ["-b8K", "-d30", "-o32", "-r", "-w40", "-Sh", "--json", "--help", "f.dat"]);
        let cli = Cli::try_parse_from(["tessera", "iobench"]).unwrap();
        let Command::Iobench(args) = cli.command else { panic!("not iobench") };
        assert!(args.args.is_empty());
    }

    #[test]
    fn bench_iobench_flags_parse() {
        let cli = Cli::try_parse_from([
            "tessera",
            "bench",
            "iobench",
            "--quick",
            "--json",
            "--duration",
            "5",
            "--file-size",
            "2G",
            "--engine",
            "threads",
            "--repeat",
            "3",
        ])
        .unwrap();
        let Command::Bench(args) = cli.command else { panic!("not bench") };
        let bench_cmd::Bench::Iobench(io) = args.bench else { panic!("not iobench") };
        assert!(io.common.quick && io.common.json);
        assert_eq!(io.duration, Some(5.0));
        assert_eq!(io.file_size.as_deref(), Some("2G"));
        assert_eq!((io.engine.as_str(), io.repeat), ("threads", Some(3)));
    }
}
