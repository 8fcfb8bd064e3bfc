#!/usr/bin/env bash
# Builds musebot's Debian package (cargo-deb; the recipe is [package.metadata.deb] in
# Cargo.toml: the binary, the hardened unit, sysusers and tmpfiles fragments, the default config
# as a conffile, prompts, locales, the model scripts, docs). cargo-deb is installed once into
# $MUSEBOT_CACHE/tools. Prints the .deb's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source scripts/env.sh >&2
CARGO_DEB_VERSION=3.8.0
TOOLS="$MUSEBOT_CACHE/tools"
if ! "$TOOLS/bin/cargo-deb" --version 2>/dev/null | grep -q "$CARGO_DEB_VERSION"; then
    echo "package: installing cargo-deb $CARGO_DEB_VERSION into $TOOLS" >&2
    cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION" --root "$TOOLS" >&2
fi
cargo build --release --locked >&2
OUT="$CARGO_TARGET_DIR/debian"
mkdir -p "$OUT"
"$TOOLS/bin/cargo-deb" --no-build --output "$OUT" >&2
ls -t "$OUT"/musebot_*.deb | head -1
