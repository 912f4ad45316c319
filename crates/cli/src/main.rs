//! `tessera`: the server, its client and its benchmarks, one subcommand each.

mod bench_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(args) => bench_cmd::run(args),
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
        let Command::Bench(args) = cli.command;
        let bench_cmd::Bench::Engine(common) = args.bench;
        assert!(common.quick && common.json);
        assert_eq!(common.chart.as_deref(), Some(std::path::Path::new("e.svg")));
        assert_eq!(common.dir.as_deref(), Some(std::path::Path::new("d")));
    }
}
