#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine needs to build and test musebot:
# a C toolchain, Python 3 with venv, curl, and Rust (rustup) when cargo is missing.
# Safe to rerun: it installs only what is absent. Uses sudo when not root.
set -euo pipefail

SUDO=""
[[ $(id -u) == 0 ]] || SUDO="sudo"

need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if ((${#need[@]})); then
    echo "bootstrap: installing ${need[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
        :
    else
        echo "bootstrap: installing Rust with rustup" >&2
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component rustfmt
    fi
fi
# shellcheck disable=SC1091
[[ -f "$HOME/.cargo/env" ]] && source "$HOME/.cargo/env"
if ! cargo fmt --version >/dev/null 2>&1 && command -v rustup >/dev/null 2>&1; then
    rustup component add rustfmt >/dev/null 2>&1 || true
fi
