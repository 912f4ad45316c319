#!/usr/bin/env bash
# Issue 20's campaign: N databases (default 10,000) in one release server on this machine,
# created, listed, used, backed up and dropped through T-SQL and the fleet commands, with
# the time each stage took and the server's RSS. Not part of the test suite (it takes
# minutes and gigabytes of disk); its figures are recorded in docs/benchmarks.md.
#   scripts/campaign-databases.sh [N] [work directory]
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-10000}
work=${2:-$(mktemp -d -t tessera-campaign-XXXXXX)}
port=${CAMPAIGN_PORT:-14333}
export TESSERA_SA_PASSWORD='Campaign-Pw-1'
export SQLCMDPASSWORD=$TESSERA_SA_PASSWORD

cargo build --release -q -p tessera
bin=target/release/tessera
mkdir -p "$work"
"$bin" serve --data-dir "$work/data" --port "$port" --memory-mb 1024 --max-connections 256 >"$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    "$bin" sql -S "127.0.0.1,$port" -U sa -P "$SQLCMDPASSWORD" -Q "select 1" >/dev/null 2>&1 && break
    sleep 0.2
done

sql() { "$bin" sql -S "127.0.0.1,$port" -U sa -P "$SQLCMDPASSWORD" -b -h -1 -W -Q "set nocount on; $1"; }
rss_mib() { echo $(($(awk '/VmRSS/ {print $2}' "/proc/$server/status") / 1024)); }
stage() {
    local name=$1
    shift
    local t0=$SECONDS
    "$@" >"$work/$name.out" 2>&1 || { echo "$name failed:"; tail -20 "$work/$name.out"; exit 1; }
    printf '%-34s %6d s   server RSS %6d MiB\n' "$name" $((SECONDS - t0)) "$(rss_mib)"
}

echo "campaign: $n databases, data in $work/data, server pid $server"
sql "exec sp_configure 'show advanced options', 1; reconfigure;
     exec sp_configure 'max open databases', 0; exec sp_configure 'idle database close (s)', 3600; reconfigure;" >/dev/null
create() {
    sql "declare @i int = $1, @s nvarchar(200);
        while @i < $2 begin
            set @s = N'create database t' + cast(@i as nvarchar(10));
            exec (@s);
            set @i += 1;
        end"
}
half=$((n / 2))
stage "create databases 1 to $half" create 0 "$half"
stage "create databases $((half + 1)) to $n" create "$half" "$n"
stage "list (sys.databases count)" sql "select count(*) from sys.databases"
count=$(sql "select count(*) from sys.databases where name like 't[0-9]%'" | tr -d '[:space:]')
[ "$count" = "$n" ] || { echo "listed $count databases, expected $n"; exit 1; }
stage "use each (table, row)" "$bin" fleet exec -S "127.0.0.1,$port" -U sa -P "$SQLCMDPASSWORD" --databases 't%' --parallel 4 \
    -Q "create table acct (id int primary key, balance int); insert acct values (1, 100); select balance from acct"
open=$(sql "select count(*) from sys.dm_tessera_databases where is_open = 1" | tr -d '[:space:]')
echo "open databases after use: $open"
stage "backup each (fleet backup)" "$bin" fleet backup -S "127.0.0.1,$port" -U sa -P "$SQLCMDPASSWORD" --databases 't%' --parallel 4 \
    --to "$work/backups"
stage "drop $n databases" sql "declare @i int = 0, @s nvarchar(200);
    while @i < $n begin
        set @s = N'drop database t' + cast(@i as nvarchar(10));
        exec (@s);
        set @i += 1;
    end"
echo "disk: data $(du -sh "$work/data" | cut -f1), backups $(du -sh "$work/backups" | cut -f1)"
