#!/usr/bin/env bash
# The whole test suite, as README.md documents it. Needs the Rust toolchain (rustup's
# stable with rustfmt and clippy; every crate comes from crates.io) and Python 3 with pip:
# the client tests install the SQL Server client library they drive (python-tds) from PyPI.
# Last, the TDS request decoders are fuzzed for 30 s (scripts/fuzz.sh: nightly + cargo-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add rustfmt clippy >/dev/null 2>&1 || true
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore python-tds==1.17.1
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
scripts/fuzz.sh 30
