//! `tessera bench …`, `tessera iobench …` and `tessera torture …`: the benchmarks live in
//! the `tessera-bench` binary (crates/bench) and the reliability campaigns in
//! `tessera-torture` (crates/torture), so that the server links none of their peers
//! (SQLite, LMDB), clients, chart drawing or workloads. These subcommands run them, found
//! beside this binary or on PATH, with the same arguments (`tessera bench engine --quick`
//! runs `tessera-bench bench engine --quick`; `tessera torture --quick` runs
//! `tessera-torture --quick`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// The arguments, untouched, for `tessera-bench` or `tessera-torture`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct Forwarded {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// The binary `name`: beside this one (as `cargo build` and an install leave it), or on
/// PATH.
fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .map(|exe| exe.with_file_name(name))
        .ok()
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Runs `tessera-bench <subcommand> <args>` in place of this process.
pub fn run(subcommand: &str, forwarded: Forwarded) -> ExitCode {
    exec("tessera-bench", Some(subcommand), subcommand, "the benchmarks", forwarded)
}

/// Runs `tessera-torture <args>` in place of this process.
pub fn torture(forwarded: Forwarded) -> ExitCode {
    exec("tessera-torture", None, "torture", "the reliability campaigns", forwarded)
}

fn exec(binary: &str, subcommand: Option<&str>, ours: &str, what: &str, forwarded: Forwarded) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let path = sibling(binary);
    let e = std::process::Command::new(&path).args(subcommand).args(&forwarded.args).exec();
    eprintln!(
        "tessera {ours}: cannot run '{}' ({e}): {what} are in the {binary} binary; build it with `cargo build --release -p {binary}`",
        path.display()
    );
    ExitCode::from(2)
}
