#!/usr/bin/env bash
# Extraction benchmark: musebot's extractor (rs-trafilatura, through `musebot extract`, release
# build) side by side with Python trafilatura 2.0.0 in the same run, on the same pages, scored
# the way scrapinghub/article-extraction-benchmark scores (scripts/extraction_eval.py).
# Usage: scripts/bench-extraction.sh [PAGES_DIR] [GROUND_TRUTH_JSON]
# Defaults: ../shared/data/extraction/html and ../shared/data/extraction/ground-truth.json.
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES="${1:-../shared/data/extraction/html}"
TRUTH="${2:-../shared/data/extraction/ground-truth.json}"
[[ -d "$PAGES" && -f "$TRUTH" ]] || { echo "pages ($PAGES) or ground truth ($TRUTH) missing" >&2; exit 2; }

# shellcheck source=scripts/env.sh
source scripts/env.sh

VENV="$MUSEBOT_CACHE/bench-venv"
PINS="trafilatura==2.0.0 lxml<6 lxml_html_clean"
if [[ "$(cat "$VENV/.stamp" 2>/dev/null)" != "$PINS" ]]; then
    echo "== installing Python trafilatura into $VENV" >&2
    python3 -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/pip" install -q --disable-pip-version-check $PINS
    echo "$PINS" >"$VENV/.stamp"
fi

echo "== building musebot (release)" >&2
cargo build --release --locked --quiet
BIN="$CARGO_TARGET_DIR/release/musebot"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "== musebot extract (rs-trafilatura)" >&2
"$VENV/bin/python" - "$BIN" "$PAGES" "$TRUTH" "$OUT" <<'PY'
import resource, subprocess, sys
bin_, pages, truth, out = sys.argv[1:]
with open(f"{out}/rs.json", "w") as o, open(f"{out}/rs.timing", "w") as e:
    subprocess.run([bin_, "extract", pages, "--json", "--timings", "--urls-from", truth], stdout=o, stderr=e, check=True)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
open(f"{out}/rs.rss", "w").write(f"{rss:.1f}")
PY
echo "== Python trafilatura" >&2
"$VENV/bin/python" scripts/extraction_eval.py trafilatura --pages "$PAGES" --truth "$TRUTH" --out "$OUT/py.json" >"$OUT/py.txt"

echo
echo "Quality (scrapinghub article-extraction-benchmark scoring, $(ls "$PAGES"/*.html | wc -l) pages)"
"$VENV/bin/python" scripts/extraction_eval.py compare --truth "$TRUTH" \
    --pred "$OUT/rs.json" --name musebot-rs-trafilatura --pred "$OUT/py.json" --name python-trafilatura-2.0.0
echo
echo "Speed (extraction call only, in-process, per page)"
printf '  %-26s %s\n' "musebot-rs-trafilatura" "$(cat "$OUT/rs.timing")"
printf '  %-26s %s\n' "python-trafilatura-2.0.0" "$(grep -E '^time per page' "$OUT/py.txt" | sed 's/time per page (ms): //')"
echo
echo "Peak RSS (whole process)"
printf '  %-26s %s MiB\n' "musebot-rs-trafilatura" "$(cat "$OUT/rs.rss")"
printf '  %-26s %s\n' "python-trafilatura-2.0.0" "$(grep -E '^peak RSS' "$OUT/py.txt" | sed 's/peak RSS (ru_maxrss): //')"
rs_mean=$(sed -E 's/.*mean ([0-9.]+) ms.*/\1/' "$OUT/rs.timing")
py_mean=$(grep -E '^time per page' "$OUT/py.txt" | sed -E 's/.*mean ([0-9.]+).*/\1/')
echo
"$VENV/bin/python" -c "print(f'Speed ratio (mean per page): python / musebot = {float($py_mean)/float($rs_mean):.1f}x')"
