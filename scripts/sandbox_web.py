#!/usr/bin/env python3
"""The sandbox's own small web for scripts/try.sh: serves scripts/sandbox-web/ (an RSS feed and
the pages its items link to, written for the sandbox about the claim try.sh posts) on
127.0.0.1, whatever the Host header names, with an ETag on every answer and 304 to a matching
If-None-Match, so the daemon's evidence index reads it as it reads a real feed. Prints "ready"
when listening."""
import argparse
import hashlib
import http.server
import os
import sys

TYPES = {".xml": "application/rss+xml", ".html": "text/html; charset=utf-8"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    root = os.path.realpath(args.root)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path.endswith("/"):
                path += "index.html"
            full = os.path.realpath(os.path.join(root, path.lstrip("/")))
            if not full.startswith(root + os.sep) or not os.path.isfile(full):
                self.send_error(404)
                return
            with open(full, "rb") as f:
                body = f.read()
            etag = '"%s"' % hashlib.sha256(body).hexdigest()[:16]
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", TYPES.get(os.path.splitext(full)[1], "application/octet-stream"))
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", etag)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *a):
            sys.stderr.write("sandbox-web: " + (fmt % a) + "\n")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
