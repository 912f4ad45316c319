#!/usr/bin/env bash
# The whole test suite, as README.md documents it. Needs only the Rust toolchain
# (rustup's stable with rustfmt and clippy); every crate comes from crates.io.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
