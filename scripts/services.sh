#!/usr/bin/env bash
# Starts the services the Bluesky AppView of the tests and the sandbox needs — PostgreSQL on
# 127.0.0.1:5432 (trust auth for local connections) and Redis on 127.0.0.1:6379 — when they
# are not already answering. They come from Debian's packages (scripts/bootstrap.sh installs
# postgresql and redis-server); on machines where they already run, this only checks.
set -euo pipefail
SUDO=""
[[ $(id -u) == 0 ]] || SUDO="sudo"
log() { printf 'services: %s\n' "$*" >&2; }

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    log "starting PostgreSQL"
    version="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)"
    [[ -n "$version" ]] || { log "PostgreSQL is not installed: run scripts/bootstrap.sh"; exit 1; }
    $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" main start || $SUDO pg_ctlcluster "$version" main start
    for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.2; done
    pg_isready -q -h 127.0.0.1 -p 5432 || { log "PostgreSQL did not start"; exit 1; }
fi
if ! psql -h 127.0.0.1 -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1; then
    log "PostgreSQL refuses user postgres on 127.0.0.1 without a password: allow it with a"
    log "'host all postgres 127.0.0.1/32 trust' line in pg_hba.conf (test machines only), or set"
    log "DB_POSTGRES_URL to a database URL the tests may create schemas in"
    [[ -n "${DB_POSTGRES_URL:-}" ]] || exit 1
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    log "starting Redis"
    command -v redis-server >/dev/null || { log "Redis is not installed: run scripts/bootstrap.sh"; exit 1; }
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
    for _ in $(seq 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.2; done
fi
