#!/usr/bin/env bash
# Fuzzes the engine's decoders with libFuzzer via cargo-fuzz (which needs the nightly
# toolchain; both are installed if missing): every target in fuzz/fuzz_targets/, one after
# the other. request_decoder feeds client bytes to the TDS request decoders and the T-SQL
# parser; storage_decoder feeds bytes read back from disk to the log record, page
# operation, row, key, page, backup media and catalog record decoders.
# Usage: scripts/fuzz.sh [SECONDS | --long]: SECONDS of fuzzing per target (default 30,
# as the test suite runs it); --long gives each target an hour, for a real hunt. Prints
# each target's final libFuzzer stats and "Done" line. A crash, a hang (an input that
# runs over 10 s) or memory use over 1 GiB fails the run, naming the target; its input
# lands in fuzz/artifacts/<target>/. The corpus grows in fuzz/corpus/<target>/; a target's
# libFuzzer dictionary, if any, is fuzz/<target>.dict.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
case "${1:-30}" in
    --long) seconds=3600 ;;
    *[!0-9]*) seconds=0 ;;
    *) seconds=$((10#${1:-30})) ;;
esac
if [ "$#" -gt 1 ] || [ "$seconds" -eq 0 ]; then
    echo "usage: scripts/fuzz.sh [SECONDS | --long]" >&2
    exit 2
fi
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --version 0.13.2 --locked
fi
targets=$(cargo +nightly fuzz list)
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
failed=()
for target in $targets; do
    options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024)
    if [ -f "$target.dict" ]; then
        options+=(-dict="$PWD/$target.dict")
    fi
    if cargo +nightly fuzz run "$target" -- "${options[@]}" >"$log" 2>&1; then
        grep -E "^#[0-9]+[[:space:]]+DONE|^Done" "$log" | sed "s/^/$target: /"
    else
        tail -50 "$log"
        echo "fuzz: $target failed; the input is in fuzz/artifacts/$target/" >&2
        grep -E "Test unit written to" "$log" >&2 || true
        failed+=("$target")
    fi
done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]}" >&2
    exit 1
fi
