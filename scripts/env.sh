# Sourced by the project's scripts: installs what is missing (scripts/bootstrap.sh), puts cargo
# on PATH, and points the caches outside the clone: MUSEBOT_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/musebot) and CARGO_TARGET_DIR (default $MUSEBOT_CACHE/target).
scripts/bootstrap.sh
# shellcheck disable=SC1091
[[ -f "$HOME/.cargo/env" ]] && source "$HOME/.cargo/env"
export MUSEBOT_CACHE="${MUSEBOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/musebot}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$MUSEBOT_CACHE/target}"
