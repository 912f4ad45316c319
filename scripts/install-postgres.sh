#!/usr/bin/env bash
# PostgreSQL (server, client tools, pgbench, pg_prewarm) for `tessera bench pointselect`,
# and PgBouncer for `tessera bench consolidation`, from Debian's packages. Idempotent;
# needs root (or sudo).
set -euo pipefail
if command -v pgbench >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
    && command -v pgbouncer >/dev/null 2>&1; then
    exit 0
fi
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq postgresql postgresql-contrib pgbouncer >/dev/null
# Debian starts a pgbouncer service on port 6432 on install; the benchmark runs its own.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet pgbouncer 2>/dev/null; then
    $sudo_cmd systemctl stop pgbouncer || true
fi
