#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine needs to build and test musebot:
# a C toolchain, Python 3 with venv, curl, npm, PostgreSQL and Redis (for the local Bluesky's
# AppView), tesseract (OCR), Chromium and its WebDriver (the admin page's browser test), and
# Rust (rustup) when cargo is missing.
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
# The local Bluesky (scripts/setup-bluesky.sh): npm for @atproto/dev-env and Node 22, a C++
# compiler for better-sqlite3, PostgreSQL and Redis for its AppView (scripts/services.sh).
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
command -v pg_ctlcluster >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# OCR of images (the daemon's [images] ocr, and the image tests).
command -v tesseract >/dev/null 2>&1 || need+=(tesseract-ocr tesseract-ocr-eng)
# The admin page's browser test drives Debian's headless Chromium over WebDriver.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
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
