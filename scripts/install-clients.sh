#!/usr/bin/env bash
# Installs the SQL Server client libraries and tools the client scenario tests drive
# (crates/server/tests/*.rs): python-tds, pymssql, pyodbc, SQLAlchemy, Alembic,
# prometheus_client (the metrics test's parser of Prometheus' text format) and
# kubernetes-validate (the Kubernetes manifests' validator, with the API's schemas
# bundled: crates/cli/tests/deploy.rs) from PyPI; FreeTDS's tsql, freebcp and ODBC driver
# (with unixODBC), and Chromium (the metrics dashboard's test) and etcd (the gateway's
# tests), from Debian; tedious, Sequelize, TypeORM and Knex from npm; go-mssqldb and GORM
# from the Go module proxy; the Microsoft JDBC driver (mssql-jdbc), Hibernate ORM and
# Flyway from Maven Central.
# Idempotent; needs root (or sudo) for apt-get. Language runtimes (python3, node, go, a JDK
# with Maven) must be present.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    python-tds==1.17.1 pymssql==2.3.2 pyodbc==5.5.0 sqlalchemy==2.0.44 alembic==1.17.2 \
    prometheus_client==0.26.0 kubernetes-validate==1.37.0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v tsql >/dev/null || ! command -v freebcp >/dev/null || ! odbcinst -q -d -n FreeTDS >/dev/null 2>&1; then
    $sudo apt-get install -y -q freetds-bin tdsodbc unixodbc >/dev/null 2>&1 \
        || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q freetds-bin tdsodbc unixodbc >/dev/null; }
fi

# etcd, the tenant directory the gateway's tests run (crates/cli/tests/gateway.rs):
# Debian's etcd-server (3.4), whose daemon the tests start themselves on loopback.
if ! command -v etcd >/dev/null; then
    $sudo apt-get install -y -q etcd-server >/dev/null 2>&1 \
        || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q etcd-server >/dev/null; }
fi
# openssl makes the wildcard certificate of the gateway's TLS pass-through test.
if ! command -v openssl >/dev/null; then
    $sudo apt-get install -y -q openssl >/dev/null 2>&1 \
        || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q openssl >/dev/null; }
fi

# Headless Chromium for the metrics dashboard's test (crates/server/tests/dashboard.rs),
# which skips itself without it: left out only where apt-get is not there.
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then
    $sudo apt-get install -y -q chromium >/dev/null 2>&1 \
        || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q chromium >/dev/null; }
fi

for client in tedious sequelize typeorm knex; do
    (cd "crates/server/tests/clients/$client" && npm ci --no-audit --no-fund --silent)
done
for client in gomssql gorm; do
    (cd "crates/server/tests/clients/$client" && go mod download)
done
for client in jdbc hibernate; do
    (cd "crates/server/tests/clients/$client" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib)
done
