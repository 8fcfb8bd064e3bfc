#!/usr/bin/env python3
"""Serve a GGUF model over an OpenAI-compatible HTTP API on 127.0.0.1 (xllamacpp).

Usage: python llm_server.py --model PATH --port N [--threads 1] [--ctx 4096]

Endpoints (llama.cpp server): /health, /v1/models, /v1/chat/completions
(streaming too; response_format json_schema respected), /v1/completions.

Once /health answers 200, prints one line to stdout:
    ready http://127.0.0.1:PORT
(--port 0 picks a free port; the line tells which.) llama.cpp's own log goes to
stderr. Runs until SIGTERM or SIGINT, then exits 0. Exits 1 if the model fails
to load or the server does not become healthy within --startup-timeout seconds.
Run it with the venv's python (MUSEBOT_PYTHON from scripts/setup-sandbox.sh).
"""
import argparse
import os
import signal
import sys
import time
import urllib.error
import urllib.request

HOST = "127.0.0.1"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="path to a .gguf file")
    ap.add_argument("--port", type=int, required=True, help="TCP port (0 = any free port)")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads for generation (default 1)")
    ap.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default 4096)")
    ap.add_argument("--parallel", type=int, default=1, help="concurrent request slots (default 1)")
    ap.add_argument("--alias", default=None, help="model name reported by /v1/models")
    ap.add_argument("--startup-timeout", type=float, default=120.0)
    ap.add_argument(
        "--die-with-parent",
        action="store_true",
        help="exit when the thread that started this process exits (Linux PR_SET_PDEATHSIG)",
    )
    return ap.parse_args(argv)


STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def wait_healthy(base, deadline):
    """True once /health answers 200; False on timeout or on a stop signal."""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        if signal.sigtimedwait(STOP_SIGNALS, 0.1) is not None:
            os._exit(0)
    return False


def set_parent_death_signal(sig):
    """Ask Linux to send `sig` when the parent thread exits (no-op elsewhere)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent already died before prctl took effect
        os._exit(0)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if not os.path.isfile(args.model):
        print(f"llm_server: no such model file: {args.model}", file=sys.stderr)
        return 1

    # Block the stop signals before llama.cpp starts its threads, so every
    # thread inherits the mask and the signals wait for sigwait() below.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    if args.die_with_parent:
        set_parent_death_signal(signal.SIGTERM)

    import xllamacpp  # imported late so --help works without it

    p = xllamacpp.CommonParams()
    p.model.path = args.model
    p.hostnames = [HOST]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = args.parallel
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    if args.alias:
        p.model_alias = args.alias

    try:
        server = xllamacpp.Server(p)
    except Exception as e:  # model load failure, port in use, ...
        print(f"llm_server: failed to start: {e}", file=sys.stderr)
        return 1

    port = args.port
    if port == 0:
        addr = str(server.listening_address)
        try:
            port = int(addr.rsplit(":", 1)[1].strip("/ "))
        except (IndexError, ValueError):
            print(f"llm_server: cannot tell the port from {addr!r}", file=sys.stderr)
            os._exit(1)
    base = f"http://{HOST}:{port}"
    if not wait_healthy(base, time.monotonic() + args.startup_timeout):
        print(f"llm_server: {base}/health did not answer 200", file=sys.stderr)
        os._exit(1)
    print(f"ready {base}", flush=True)

    signal.sigwait(STOP_SIGNALS)
    # Stopping llama.cpp's HTTP server from here can block on in-flight
    # requests; the OS reclaims everything, so leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
