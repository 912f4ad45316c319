//! `tessera bench …` and `tessera iobench …`: the benchmarks live in the `tessera-bench`
//! binary (crates/bench), so that the server links none of their peers (SQLite, LMDB),
//! clients or chart drawing. These subcommands run it, found beside this binary or on
//! PATH, with the same arguments (`tessera bench engine --quick` runs `tessera-bench bench
//! engine --quick`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// The arguments, untouched, for `tessera-bench`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct Forwarded {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// The benchmark binary: beside this one (as `cargo build` and an install leave it), or
/// on PATH.
fn benchmark_binary() -> PathBuf {
    std::env::current_exe()
        .map(|exe| exe.with_file_name("tessera-bench"))
        .ok()
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("tessera-bench"))
}

/// Runs `tessera-bench <subcommand> <args>` in place of this process.
pub fn run(subcommand: &str, forwarded: Forwarded) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let binary = benchmark_binary();
    let e = std::process::Command::new(&binary).arg(subcommand).args(&forwarded.args).exec();
    eprintln!(
        "tessera {subcommand}: cannot run '{}' ({e}): the benchmarks are in the tessera-bench binary; build it with `cargo build --release -p tessera-bench`",
        binary.display()
    );
    ExitCode::from(2)
}
