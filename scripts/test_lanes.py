#!/usr/bin/env python3
"""Runs the suite's test binaries in lanes: scripts/test.sh's whole-suite run.

  test_lanes.py CARGO_JSON LOG [LANES]

CARGO_JSON is `cargo test --all-targets --no-run --message-format=json`'s output (the build
test.sh already made); every test executable in it runs, from the repository root as cargo
runs them, `LANES` at a time (default: MUSEBOT_TEST_LANES, else 2). Two at a time cut the
tests' part of a cold run on 2 cores from 14.8 to ~8 min (a cold run from a clean clone on a
new machine: 18:09, all passed); the binaries compete for the cores (their summed time rose
887 → ~1,100 s), which is why the tests wait for what they check (log lines, metrics, posts)
instead of sleeping a fixed time. MUSEBOT_TEST_LANES=1 runs them one after another.
Each binary's output is printed whole when it ends (never interleaved) and appended to LOG,
longest first by the durations the last run recorded (in $MUSEBOT_CACHE), so the longest do not
start last. Exits non-zero when any binary fails. Standard library only.
"""
import json
import os
import subprocess
import sys
import threading
import time


def executables(cargo_json):
    seen = []
    with open(cargo_json) as f:
        for line in f:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
                continue
            if not msg.get("profile", {}).get("test"):
                continue
            target = msg["target"]
            name = target["src_path"]
            kind = target["kind"][0]
            label = "unittests" if kind == "lib" else os.path.relpath(name)
            seen.append((label, msg["executable"]))
    return seen


def main():
    cargo_json, log = sys.argv[1], sys.argv[2]
    lanes = int(sys.argv[3] if len(sys.argv) > 3 else os.environ.get("MUSEBOT_TEST_LANES", "2"))
    cache = os.environ.get("MUSEBOT_CACHE") or os.path.expanduser("~/.cache/musebot")
    durations_file = os.path.join(cache, "test-durations.json")
    try:
        durations = json.load(open(durations_file))
    except (OSError, ValueError):
        durations = {}
    queue = sorted(executables(cargo_json), key=lambda e: -durations.get(e[0], 60.0))
    if not queue:
        print("test_lanes: no test executables in the build's output", file=sys.stderr)
        return 1
    lock = threading.Lock()
    failed = []
    took = {}
    out = open(log, "a")

    def lane():
        while True:
            with lock:
                if not queue:
                    return
                label, exe = queue.pop(0)
            start = time.monotonic()
            run = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            seconds = time.monotonic() - start
            text = run.stdout.decode("utf-8", "replace")
            with lock:
                took[label] = round(seconds, 1)
                block = f"     Running {label} ({exe}) — {seconds:.1f} s\n{text}"
                if run.returncode != 0:
                    failed.append(label)
                    block += f"test_lanes: {label} failed (exit {run.returncode})\n"
                sys.stdout.write(block)
                sys.stdout.flush()
                out.write(block)
                out.flush()

    threads = [threading.Thread(target=lane) for _ in range(max(1, lanes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    durations.update(took)
    try:
        os.makedirs(cache, exist_ok=True)
        json.dump(durations, open(durations_file, "w"), indent=1, sort_keys=True)
    except OSError:
        pass
    if failed:
        print(f"test_lanes: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
