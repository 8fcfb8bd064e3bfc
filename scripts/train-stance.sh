#!/usr/bin/env bash
# Fits the stance model's head (src/stance/head.json: a gate of three kinds of text — post,
# headline, reply — and two softmax experts) from the data — the Emergent dev split and the
# RumourEval 2017 replies (../shared/data/stance/), the project's own pairs' dev split and the
# CheckThat! train tweets it labelled (tests/data/stance/) — with the sandbox's multilingual model
# (scripts/setup-sandbox.sh installs it), chooses each sentence's threshold for each kind on claim-fold
# cross-validated probabilities, then writes the head's SHA-256 into src/pins.rs (STANCE_HEAD),
# so the binary loads exactly the file it was built with. Deterministic: the same data, model
# and CPU give the same weights (rounded to 1e-4, so the last bits of an embedding rarely move
# the hash). Then run `cargo bench --bench stance` to print the figures of the head as it ships.
#
#   scripts/train-stance.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh
scripts/setup-sandbox.sh >/dev/null
env -u MUSEBOT_STANCE_PAIRS cargo bench --locked --bench stance -- --train src/stance/head.json | tee /dev/stderr \
    | grep -o 'SHA-256 [0-9a-f]\{64\}' >/dev/null
sha=$(sha256sum src/stance/head.json | cut -d' ' -f1)
sed -i "s/^pub const STANCE_HEAD: &str = \"[0-9a-f]\{64\}\";/pub const STANCE_HEAD: \&str = \"$sha\";/" src/pins.rs
grep -q "$sha" src/pins.rs || { echo "train-stance: could not write the pin into src/pins.rs" >&2; exit 1; }
echo "train-stance: src/stance/head.json $sha, pinned in src/pins.rs"
