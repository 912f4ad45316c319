#!/usr/bin/env bash
# The whole test suite, as README.md documents it. Needs the Rust toolchain (rustup's
# stable with rustfmt and clippy; every crate comes from crates.io), Python 3 with pip, Node.js
# with npm, Go, and a JDK with Maven: scripts/install-clients.sh installs the SQL Server
# clients the scenario tests drive (python-tds, pymssql, FreeTDS, tedious, go-mssqldb,
# mssql-jdbc).
# Last, every fuzz target (the TDS request decoders and the parser; the storage decoders) is
# fuzzed for 30 s (scripts/fuzz.sh: nightly + cargo-fuzz).
# With TESSERA_DRIVER_SUITES=1, the SQL Server drivers' own test suites run too
# (scripts/driver-suites.sh: go-mssqldb's, pymssql's and pyodbc's, about 20 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
# A run from a fresh clone gains nothing from incremental caches, which double the disk a
# build takes (a CI run once failed with ENOSPC writing one).
export CARGO_INCREMENTAL=0
rustup component add rustfmt clippy >/dev/null 2>&1 || true
scripts/install-clients.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
scripts/fuzz.sh 30
if [ "${TESSERA_DRIVER_SUITES:-0}" = 1 ]; then
    scripts/driver-suites.sh all
fi
