#!/usr/bin/env bash
# tessera bench iobench: `tessera iobench` next to fio on seed 001's patterns (t1 o32, 4 KiB
# and 16 KiB random at 100/90/70 % read, 2 MiB sequential) and seed 004's diskspd command,
# on the same file in the same run, with the ratios. Installs fio (Debian/Ubuntu) if it is
# missing. Arguments go to the benchmark: --quick, --json, --chart FILE.png|svg, --dir DIR,
# --duration S, --warmup S, --repeat N, --file-size SIZE, --engine uring|threads.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v fio >/dev/null 2>&1; then
    echo "[bench-iobench] fio is missing: installing it with apt-get" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get install -y fio >/dev/null 2>&1 || {
        $sudo apt-get update >/dev/null
        $sudo apt-get install -y fio >/dev/null
    }
fi
cargo build --release --quiet -p tessera -p tessera-bench
exec target/release/tessera-bench bench iobench "$@"
