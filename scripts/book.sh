#!/usr/bin/env bash
# Builds the operator's book (docs/, mdBook) into docs/book/. mdBook is installed once, from
# crates.io, into $MUSEBOT_CACHE/tools (its own target folder: the suite's may be locked by its
# build). tests/book.rs checks the book's internal links and keeps its configuration reference
# and troubleshooting page equal to the code; this script fails when mdBook cannot build it.
#
#   scripts/book.sh            build the book (open docs/book/index.html)
#   scripts/book.sh --tools    only install mdBook (scripts/test.sh does it while the tests run)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source scripts/env.sh >&2
MDBOOK_VERSION=0.4.52
TOOLS="$MUSEBOT_CACHE/tools"
if ! "$TOOLS/bin/mdbook" --version 2>/dev/null | grep -q "$MDBOOK_VERSION"; then
    echo "book: installing mdbook $MDBOOK_VERSION into $TOOLS" >&2
    # Building only: no server or file watcher (fewer crates to compile).
    CARGO_TARGET_DIR="$MUSEBOT_CACHE/tools-target" \
        cargo install mdbook --locked --version "$MDBOOK_VERSION" --no-default-features --features search \
        --root "$TOOLS" >&2
fi
[[ "${1:-}" == --tools ]] && exit 0
"$TOOLS/bin/mdbook" build docs
echo "book: docs/book/index.html" >&2
