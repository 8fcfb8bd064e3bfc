#!/usr/bin/env bash
# Fits the watch's "same claim" head (src/claims/same.json: a logistic head over a post's best
# candidates read as pairs, `claims::same`) on CheckThat! 2022 Task 2A's train split with the
# sandbox's English model (scripts/setup-sandbox.sh installs it), its threshold chosen for
# precision on 5-fold cross-validated choices, and prints its figures on the dev split, which
# it was not fitted on. Deterministic: the same data, model and CPU give the same weights
# (rounded to 1e-4). Then run `cargo bench --bench same_claim` to print the head as it ships.
#
#   scripts/train-same.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh
scripts/setup-sandbox.sh >/dev/null
cargo bench --locked --bench same_claim -- --train src/claims/same.json
