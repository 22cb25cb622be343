#!/usr/bin/env bash
# Start the machine's PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) when they are not
# answering; a no-op when both are up. Used by .ci/run and `make prod-local`.
# Exits non-zero when a service cannot be started.
set -euo pipefail

wait_for() {  # wait_for <what> <command...>: up to 30 tries, a second apart
  local what=$1; shift
  for _ in $(seq 1 30); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  echo "$what did not come up on 127.0.0.1" >&2
  exit 1
}

if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  echo "Starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  wait_for PostgreSQL pg_isready -h 127.0.0.1 -p 5432 -q
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "Starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for Redis redis-cli -h 127.0.0.1 -p 6379 ping
fi
