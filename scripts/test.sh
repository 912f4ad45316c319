#!/usr/bin/env bash
# The whole test suite, as README.md documents it. Needs the Rust toolchain (rustup's
# stable with rustfmt and clippy; every crate comes from crates.io) and python3 with pip
# for the python-tds client test of the TDS server (installed here).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if command -v python3 >/dev/null 2>&1; then
    python3 -m pip install --quiet python-tds || python3 -m pip install --quiet --break-system-packages python-tds
fi
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
