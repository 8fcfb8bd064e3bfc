#!/usr/bin/env bash
# The property tests of every parser of outside input (src/proptests.rs), longer than CI runs
# them: MUSEBOT_PROPTEST_CASES cases per property (default here 50,000; CI runs 2,000).
# 30,000 cases took ~10 minutes on the 2-core CI machine.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh
export MUSEBOT_PROPTEST_CASES="${MUSEBOT_PROPTEST_CASES:-50000}"
exec cargo test --locked --release --lib proptests "$@"
