#!/usr/bin/env bash
# Builds musebot's Debian package (cargo-deb; the recipe is [package.metadata.deb] in
# Cargo.toml: the binary, the hardened unit, sysusers and tmpfiles fragments, the default config
# as a conffile, prompts, locales, the model scripts, docs). cargo-deb is installed once into
# $MUSEBOT_CACHE/tools. Prints the .deb's path on stdout.
#
#   scripts/package.sh            the release package
#   MUSEBOT_PACKAGE_PROFILE=dev scripts/package.sh   the same package around the dev binary
#   scripts/package.sh --tools    only install cargo-deb (scripts/test.sh does it while the
#                                 tests run, niced, on one job)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source scripts/env.sh >&2
CARGO_DEB_VERSION=3.8.0
TOOLS="$MUSEBOT_CACHE/tools"
if ! "$TOOLS/bin/cargo-deb" --version 2>/dev/null | grep -q "$CARGO_DEB_VERSION"; then
    echo "package: installing cargo-deb $CARGO_DEB_VERSION into $TOOLS" >&2
    # A target folder of its own: the suite's may be locked by its build.
    CARGO_TARGET_DIR="$MUSEBOT_CACHE/tools-target" \
        cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION" --root "$TOOLS" >&2
fi
[[ "${1:-}" == --tools ]] && exit 0
# MUSEBOT_PACKAGE_PROFILE (default release, what operators install): the test suite packages
# the dev binary its own build already made (scripts/test.sh sets it), so a cold run does not
# compile everything a second time for the package's checks. (cargo-deb 3.8 warns that a dev
# profile will be refused by a future release: it is pinned above; a bump must keep this.)
PROFILE=${MUSEBOT_PACKAGE_PROFILE:-release}
if [[ "$PROFILE" == dev ]]; then
    # Exactly the suite's own build (scripts/test.sh): the binary its tests ran, with the
    # features the dev-dependencies unify, so nothing is compiled again. `cargo build --bin`
    # would resolve features without them and rebuild ~25 crates and musebot (66 s cold).
    cargo test --locked --all-targets --no-run >&2
else
    cargo build --locked --profile "$PROFILE" --bin musebot >&2
fi
OUT="$CARGO_TARGET_DIR/debian"
[[ "$PROFILE" == release ]] || OUT="$OUT-$PROFILE"
mkdir -p "$OUT"
"$TOOLS/bin/cargo-deb" --no-build --profile "$PROFILE" --output "$OUT" >&2
ls -t "$OUT"/musebot_*.deb | head -1
