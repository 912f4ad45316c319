#!/usr/bin/env bash
# Fuzzes the TDS request decoders (fuzz/fuzz_targets/request_decoder.rs) with libFuzzer via
# cargo-fuzz, which needs the nightly toolchain. Usage: scripts/fuzz.sh [SECONDS] (default
# 30, as the test suite runs it; give 3600 or more for a real hunt). Crashing inputs land
# in fuzz/artifacts/request_decoder/.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-30}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --version 0.13.2 --locked
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! cargo +nightly fuzz run request_decoder -- -max_total_time="$seconds" -rss_limit_mb=1024 >"$log" 2>&1; then
    tail -50 "$log"
    echo "fuzz: request_decoder failed; the input is in fuzz/artifacts/request_decoder/" >&2
    exit 1
fi
grep -E "^Done" "$log"
