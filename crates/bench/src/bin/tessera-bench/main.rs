//! `tessera-bench`: the workload benchmarks (`bench <name>`, each against its peers) and
//! the disk benchmark (`iobench`, diskspd/fio-style), in a binary of their own so that
//! the server's `tessera` links none of the peers (SQLite, LMDB), clients or chart
//! drawing they need. `tessera bench …` and `tessera iobench …` run this binary, found
//! beside `tessera`; the benchmarks start their servers from the `tessera` beside it.

mod bench_cmd;
mod iobench_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The server's allocator (see the `tessera` binary): the in-process benchmarks (engine,
/// sql, burst) measure the engine as the server runs it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "tessera-bench", version, about = "tessera's benchmarks, each next to its peers in the same run")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a workload benchmark against its peers and report the ratios.
    Bench(bench_cmd::BenchArgs),
    /// A diskspd-style disk benchmark: -b8K -d30 -t1 -o32 -r -w40 -L -c1G FILE (see
    /// `tessera-bench iobench --help`).
    Iobench(iobench_cmd::IobenchArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Bench(args) => bench_cmd::run(args),
        Command::Iobench(args) => iobench_cmd::run_iobench(args),
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
        let cli = Cli::try_parse_from([
            "tessera-bench",
            "bench",
            "engine",
            "--quick",
            "--json",
            "--chart",
            "e.svg",
            "--dir",
            "d",
        ])
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
            "tessera-bench",
            "iobench",
            "-b8K",
            "-d30",
            "-o32",
            "-r",
            "-w40",
            "-Sh",
            "--json",
            "--help",
            "f.dat",
        ])
        .unwrap();
        let Command::Iobench(args) = cli.command else { panic!("not iobench") };
        assert_eq!(args.args, ["-b8K", "-d30", "-o32", "-r", "-w40", "-Sh", "--json", "--help", "f.dat"]);
        let cli = Cli::try_parse_from(["tessera-bench", "iobench"]).unwrap();
        let Command::Iobench(args) = cli.command else { panic!("not iobench") };
        assert!(args.args.is_empty());
    }

    #[test]
    fn bench_fleet_flags_parse() {
        let cli = Cli::try_parse_from([
            "tessera-bench",
            "bench",
            "fleet",
            "--quick",
            "--databases-per-server",
            "50",
            "--connections",
            "4",
            "--seconds",
            "2",
            "--pings",
            "100",
            "--moves",
            "3",
        ])
        .unwrap();
        let Command::Bench(args) = cli.command else { panic!("not bench") };
        let bench_cmd::Bench::Fleet(fleet) = args.bench else { panic!("not fleet") };
        assert!(fleet.common.quick);
        assert_eq!(
            (fleet.databases_per_server, fleet.connections, fleet.seconds, fleet.pings, fleet.moves),
            (Some(50), Some(4), Some(2), Some(100), Some(3))
        );
    }

    #[test]
    fn bench_iobench_flags_parse() {
        let cli = Cli::try_parse_from([
            "tessera-bench",
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
