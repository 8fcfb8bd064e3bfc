#!/usr/bin/env python3
"""Peers for scripts/test-systemd.sh, on 127.0.0.1:PORT: a slow OpenAI-compatible LLM
(/v1/chat/completions answers after --delay seconds, with no queries for a post: the bot then
says there is nothing to check; any other call gets a short text) and an empty SearXNG
(/search → no results). Appends one line per LLM request to --log. Prints "ready"."""
import argparse
import http.server
import json
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.startswith("/search"):
                self.answer({"results": []})
            else:
                self.answer({"data": [{"id": "peer"}]})

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            system = str(req.get("messages", [{}])[0].get("content", ""))
            with open(args.log, "a") as f:
                f.write(system[:60].replace("\n", " ") + "\n")
            time.sleep(args.delay)
            text = '{"queries": []}' if "web search queries" in system else "A printed notice on a window."
            self.answer({"id": "x", "object": "chat.completion", "model": "peer",
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": text}}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5}})

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
