#!/usr/bin/env bash
# The SQL Server drivers' own test suites, unchanged, against a tessera server this script
# starts (issue 33; results and causes in docs/compatibility.md):
#   go-mssqldb v1.11.2 — its tests, from the Go module proxy;
#   pymssql 2.4.6      — the tests in its PyPI sdist, run with its PyPI wheel (FreeTDS 1.5.19);
#   pyodbc 5.5.0       — tests/sqlserver_test.py of its PyPI sdist, run with its PyPI wheel
#                        through unixODBC and FreeTDS's ODBC driver (Debian's tdsodbc,
#                        registered as `FreeTDS`; scripts/install-clients.sh installs it).
# Each test runs in a process of its own, so that a test's panic or hang ends only itself;
# a server that died is restarted. The counts are printed per suite. A failure not listed in
# scripts/driver-suites/<suite>.known (one test a line, `name  # reason`) fails the run, and
# so does a listed test that passes now, so that the lists shrink as gaps close.
#
# Usage: scripts/driver-suites.sh [go-mssqldb|pymssql|pyodbc|all]   (default: all)
# ./scripts/test.sh runs it when TESSERA_DRIVER_SUITES=1. Needs Go and Python 3 (the
# scenario tests' runtimes; Debian's python3-venv is installed if missing); takes about 20
# minutes on 2 cores.
# TESSERA_BIN=path: serve with that prebuilt tessera binary instead of building one with
# `cargo build --release`.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
which=${1:-all}
work=$root/target/driver-suites
password='Suites-Test-1'
rm -rf "$work" && mkdir -p "$work"

if [ -n "${TESSERA_BIN:-}" ]; then
    bin=$(realpath "$TESSERA_BIN") && [ -x "$bin" ] || { echo "driver-suites: TESSERA_BIN=$TESSERA_BIN is not an executable" >&2; exit 1; }
else
    cargo build --release --locked --quiet -p tessera || exit 1
    bin=$root/target/release/tessera
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pid=

start_server() {
    TESSERA_SA_PASSWORD=$password "$bin" serve --data-dir "$work/data" --port "$port" --memory-mb 1024 \
        >>"$work/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.2
    done
    echo "driver-suites: tessera did not start (see $work/server.log)" >&2
    exit 1
}

stop_server() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    pid=
}

# Restarts the server if it died or stopped answering (after a hung test).
check_server() {
    if ! kill -0 "$pid" 2>/dev/null || ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || [ "${1:-}" = force ]; then
        echo "driver-suites: restarting tessera" >&2
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        start_server
    fi
}
trap stop_server EXIT
start_server

# Records that test $1 ended with outcome $2 (pass, fail, hung or skip) in the outcomes file $3.
outcome() {
    printf '%s\t%s\n' "$1" "$2" >>"$3"
}

# The test names a known-failures file lists: each line's text before `  #`.
known() {
    sed -e 's/[[:space:]]*#.*//' "$1" | grep -v '^$' | sort
}

# Compares a suite's outcomes (`name<TAB>outcome` lines in $2) with its known failures;
# prints the counts and returns non-zero on a difference.
judge() {
    local suite=$1 outcomes=$2 known=$root/scripts/driver-suites/$1.known
    local failed unexpected fixed
    failed=$(awk -F'\t' '$2 == "fail" || $2 == "hung" {print $1}' "$outcomes" | sort)
    unexpected=$(comm -23 <(echo "$failed") <(known "$known"))
    fixed=$(comm -13 <(echo "$failed") <(known "$known"))
    printf '%s: %s pass, %s fail, %s hung, %s skip\n' "$suite" \
        "$(grep -c $'\tpass$' "$outcomes")" "$(grep -c $'\tfail$' "$outcomes")" \
        "$(grep -c $'\thung$' "$outcomes")" "$(grep -c $'\tskip$' "$outcomes")"
    local rc=0
    if [ -n "$unexpected" ]; then
        echo "$suite: failures not in scripts/driver-suites/$suite.known:"; echo "$unexpected" | sed 's/^/  /'
        rc=1
    fi
    if [ -n "$fixed" ]; then
        echo "$suite: listed in scripts/driver-suites/$suite.known but passing now (remove them):"
        echo "$fixed" | sed 's/^/  /'
        rc=1
    fi
    return $rc
}

# Makes the Python virtual environment $1.
make_venv() {
    # Debian's Python makes virtual environments only with its python3-venv package.
    if ! python3 -m venv "$1" 2>/dev/null; then
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get install -y -q python3-venv >/dev/null 2>&1 ||
            { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q python3-venv >/dev/null; }
        rm -rf "$1"
        python3 -m venv "$1" || return 1
    fi
}

# Runs each test pytest collects from $1 (in the current directory, with the active
# virtual environment's pytest) in a process of its own, its log in directory $2, and
# records the outcomes in $3. A test that crashes its process (no summary line) fails.
pytest_each() {
    local tests=$1 logs=$2 out=$3
    mkdir -p "$logs"
    : >"$out"
    python -m pytest "$tests" --collect-only -q -p no:cacheprovider 2>/dev/null | grep '::' >"$logs/tests"
    while read -r id; do
        local log=$logs/$(echo "$id" | tr '/:[]' '____').log
        timeout -s KILL 150 python -m pytest "$id" --timeout=120 -q -rfEsxX -p no:cacheprovider >"$log" 2>&1 </dev/null
        local rc=$? summary
        # pytest's summary line: "1 passed in 0.1s", "1 failed, 2 subtests passed …".
        summary=$(grep -E '^[0-9]+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected)|no tests ran' "$log" | tail -1)
        if [ $rc -eq 137 ]; then
            outcome "$id" hung "$out"
            check_server force
        elif [[ $summary =~ [0-9]+\ (failed|error) ]]; then
            outcome "$id" fail "$out"
        elif [[ $summary =~ [0-9]+\ (skipped|xfailed|deselected) ]] && ! [[ $summary =~ [0-9]+\ (passed|xpassed) ]]; then
            outcome "$id" skip "$out"
        elif [[ $summary =~ [0-9]+\ (passed|xpassed) ]]; then
            outcome "$id" pass "$out"
        else
            outcome "$id" fail "$out"
        fi
        check_server
    done <"$logs/tests"
}

go_mssqldb() {
    local dir out=$work/go-mssqldb.outcomes
    dir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json github.com/microsoft/go-mssqldb@v1.11.2 |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])') || return 1
    cp -r "$dir" "$work/go-mssqldb" && chmod -R u+w "$work/go-mssqldb"
    (cd "$work/go-mssqldb" && go test -c -o ../mssql.test . >"$work/go-build.log" 2>&1) || {
        cat "$work/go-build.log"
        return 1
    }
    export SQLSERVER_DSN="sqlserver://sa:$password@127.0.0.1:$port?database=master&trustServerCertificate=true"
    export HOST=127.0.0.1 SQLUSER=sa SQLPASSWORD=$password DATABASE=master
    : >"$out"
    cd "$work/go-mssqldb" || return 1
    for name in $(../mssql.test -test.list '.*' | grep -E '^(Test|Example|Fuzz)'); do
        local log=$work/go/$name.log
        mkdir -p "$work/go"
        timeout -s KILL 200 ../mssql.test -test.run "^$name\$" -test.v -test.count=1 -test.timeout 180s >"$log" 2>&1
        local rc=$?
        if grep -q "^--- SKIP: $name " "$log"; then
            outcome "$name" skip "$out"
        elif [ $rc -eq 0 ]; then
            outcome "$name" pass "$out"
        elif [ $rc -eq 137 ]; then
            outcome "$name" hung "$out"
            check_server force
        else
            outcome "$name" fail "$out"
        fi
        check_server
    done
    cd "$root" || return 1
    judge go-mssqldb "$out"
}

pymssql() {
    local out=$work/pymssql.outcomes
    make_venv "$work/venv" || return 1
    # shellcheck disable=SC1091
    . "$work/venv/bin/activate"
    pip install --quiet --disable-pip-version-check pymssql==2.4.6 || return 1
    pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps -d "$work" pymssql==2.4.6 || return 1
    tar -xzf "$work/pymssql-2.4.6.tar.gz" -C "$work"
    local src=$work/pymssql-2.4.6
    pip install --quiet --disable-pip-version-check -r "$src/dev/requirements-test.txt" || return 1
    export PYMSSQL_TEST_SERVER=127.0.0.1 PYMSSQL_TEST_PORT=$port PYMSSQL_TEST_USERNAME=sa \
        PYMSSQL_TEST_PASSWORD=$password PYMSSQL_TEST_DATABASE=tempdb PYMSSQL_TEST_IPADDRESS=127.0.0.1
    cd "$src" || return 1
    pytest_each tests "$work/py" "$out"
    deactivate
    cd "$root" || return 1
    judge pymssql "$out"
}

pyodbc() {
    local out=$work/pyodbc.outcomes
    if ! odbcinst -q -d -n FreeTDS >/dev/null 2>&1; then
        echo "pyodbc: no ODBC driver named FreeTDS (scripts/install-clients.sh installs tdsodbc and unixodbc)" >&2
        return 1
    fi
    make_venv "$work/venv-pyodbc" || return 1
    # shellcheck disable=SC1091
    . "$work/venv-pyodbc/bin/activate"
    pip install --quiet --disable-pip-version-check pyodbc==5.5.0 pytest==9.2.0 pytest-timeout==2.4.0 || return 1
    pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps -d "$work" pyodbc==5.5.0 || return 1
    tar -xzf "$work/pyodbc-5.5.0.tar.gz" -C "$work"
    local src=$work/pyodbc-5.5.0
    # The suite reads its connection string from PYODBC_SQLSERVER; its tables (t1, t2, …)
    # go to the login's database, which must not be master (test_set_attr_current_catalog).
    export PYODBC_SQLSERVER="DRIVER={FreeTDS};SERVER=127.0.0.1;PORT=$port;UID=sa;PWD=$password;DATABASE=tempdb;TDS_Version=7.4"
    cd "$src" || return 1
    pytest_each tests/sqlserver_test.py "$work/pyodbc" "$out"
    deactivate
    cd "$root" || return 1
    judge pyodbc "$out"
}

status=0
case $which in
go-mssqldb) go_mssqldb || status=1 ;;
pymssql) pymssql || status=1 ;;
pyodbc) pyodbc || status=1 ;;
all)
    go_mssqldb || status=1
    pymssql || status=1
    pyodbc || status=1
    ;;
*)
    echo "usage: $0 [go-mssqldb|pymssql|pyodbc|all]" >&2
    exit 2
    ;;
esac
exit $status
