#!/usr/bin/env bash
# One benchmark run here and at an earlier commit, alternately, on the same machine in one
# session (a bench's figures move between machines and sessions; only a side-by-side run tells
# what a change bought). The earlier commit is checked out as a git worktree outside the clone
# (under $MUSEBOT_CACHE/beside/, with ../shared beside it as the bench expects) and built in a
# target folder of its own: cargo names a path package's artifacts the same whatever its folder
# and decides freshness by file times, so two trees in one target folder would run each other's
# code (the first build there is a cold release build).
#
#   scripts/bench-beside.sh REV BENCH [ROUNDS] [-- BENCH_ARGS...]
#   e.g. scripts/bench-beside.sh 754f48b pipeline 2 -- 30
#
# Prints each run's output whole, labelled `=== <tree> round N ===`, this checkout first.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
rev=${1:?usage: scripts/bench-beside.sh REV BENCH [ROUNDS] [-- BENCH_ARGS...]}
bench=${2:?usage: scripts/bench-beside.sh REV BENCH [ROUNDS] [-- BENCH_ARGS...]}
shift 2
rounds=2
if [[ $# -gt 0 && $1 != -- ]]; then rounds=$1; shift; fi
[[ $# -gt 0 && $1 == -- ]] && shift
here=$(pwd)
shared=$(cd .. && pwd)/shared
full=$(git rev-parse --verify "$rev^{commit}")
cache=${MUSEBOT_CACHE:-$HOME/.cache/musebot}
tree=$cache/beside/${full:0:12}
if [[ ! -d $tree/musebot ]]; then
    mkdir -p "$tree"
    git worktree add --detach "$tree/musebot" "$full" >&2
fi
[[ -e $tree/shared ]] || ln -s "$shared" "$tree/shared"

# Builds the bench in a tree and prints its executable's path.
build() {
    (cd "$1" && CARGO_TARGET_DIR=$2 cargo bench --bench "$bench" --no-run --message-format=json 2>/dev/null) |
        python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$bench" | tail -1
}
echo "bench-beside: building $bench here ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', with uncommitted changes')) and at ${full:0:12}" >&2
new=$(build "$here" "${CARGO_TARGET_DIR:-$here/target}")
old=$(build "$tree/musebot" "$tree/target")
[[ -x $new && -x $old ]] || { echo "bench-beside: a build failed (run cargo bench --bench $bench --no-run in each tree)" >&2; exit 1; }
for round in $(seq 1 "$rounds"); do
    echo "=== this checkout ($(git rev-parse --short HEAD)) round $round ==="
    (cd "$here" && "$new" --bench "$@")
    echo "=== ${full:0:12} round $round ==="
    (cd "$tree/musebot" && "$old" --bench "$@")
done
