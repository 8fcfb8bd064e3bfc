#!/usr/bin/env bash
# The installed unit under a real systemd: systemd-nspawn boots a Debian 12 root (debootstrap
# from Debian's mirror with systemd and tesseract; made once, cached in $MUSEBOT_CACHE/nspawn),
# the package is installed inside with dpkg, and the container shares the host's network, so
# the daemon reaches peers on the host's loopback: mastodon-mock (the sandbox's), a slow
# OpenAI-compatible LLM and an empty SearXNG (scripts/systemd_peers.py). Checks, under the
# unit's own sandboxing (PrivateUsers, ProtectSystem=strict, the system-call filter, …):
#   - `systemctl start musebot` and /healthz answering "ok" with Mastodon connected;
#   - OCR: `musebot check --image` run as a copy of the unit (same [Service] settings, only
#     ExecStart and Type changed) reads the text of a real photo (../shared/data/images);
#   - `systemctl stop` while a job waits on the LLM: the job finishes within the grace, its
#     reply is posted, and the daemon logs "stopped".
# Runs only as root under CI=true or with MUSEBOT_TEST_SYSTEMD=1. Prints "systemd: N checks
# passed" or the first failure, and exits non-zero on one. `--prepare` only installs
# systemd-nspawn and debootstrap and makes the root (scripts/test.sh does it while it builds).
set -euo pipefail
cd "$(dirname "$0")/.."
checks=0
fail() { echo "systemd: FAILED: $*" >&2; [[ -n "${WORK:-}" && -f "$WORK/nspawn.log" ]] && tail -20 "$WORK/nspawn.log" >&2; exit 1; }
ok() { checks=$((checks + 1)); }
if [[ "${CI:-}" != true && "${MUSEBOT_TEST_SYSTEMD:-0}" != 1 ]]; then
    echo "systemd: skipped (it boots a container: runs under CI=true or MUSEBOT_TEST_SYSTEMD=1)"
    exit 0
fi
[[ $(id -u) == 0 ]] || fail "booting a container needs root"
if ! command -v systemd-nspawn >/dev/null || ! command -v debootstrap >/dev/null; then
    # Waits for another apt (bootstrap.sh's) rather than failing on its lock.
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q systemd-container debootstrap >/dev/null \
        || fail "apt-get install systemd-container debootstrap"
fi
CACHE="${MUSEBOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/musebot}"

# The root file system, made once (a lock: test.sh's --prepare may still be making it).
BASE="$CACHE/nspawn/bookworm"
ROOTFS="rev=1 systemd systemd-sysv dbus tesseract-ocr tesseract-ocr-eng"
mkdir -p "$CACHE/nspawn"
exec 9>"$CACHE/nspawn/.lock"
flock 9
if [[ "$(cat "$BASE/.musebot-rootfs" 2>/dev/null)" != "$ROOTFS" ]]; then
    echo "systemd: making a Debian 12 root with debootstrap (once; a few minutes)" >&2
    rm -rf "$BASE"
    debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,tesseract-ocr,tesseract-ocr-eng \
        bookworm "$BASE" http://deb.debian.org/debian >"$CACHE/nspawn/debootstrap.log" 2>&1 \
        || { tail -20 "$CACHE/nspawn/debootstrap.log" >&2; fail "debootstrap"; }
    echo "$ROOTFS" >"$BASE/.musebot-rootfs"
fi
flock -u 9
if [[ "${1:-}" == --prepare ]]; then
    echo "systemd: the container's root is ready"
    exit 0
fi
PHOTO="../shared/data/images/mc_donalds_fee_1.jpg"
[[ -f "$PHOTO" ]] || fail "$PHOTO is missing (the OCR check reads it)"
DEB=$(scripts/package.sh)
ENV_FILE=$(scripts/setup-sandbox.sh)
# shellcheck disable=SC1090
source "$ENV_FILE"
# nspawn keeps its propagation folder on a tmpfs (this host's /run is not one).
mkdir -p /run/systemd/nspawn
MOUNTED=""
if ! mountpoint -q /run/systemd/nspawn; then
    mount -t tmpfs tmpfs /run/systemd/nspawn
    MOUNTED=1
fi

WORK=$(mktemp -d)
ROOT="$WORK/root"
pids=()
NSPAWN=""
LEADER=""
inside() { nsenter -t "$LEADER" -m -u -i -p -- "$@"; }
cleanup() {
    if [[ -n "$LEADER" ]]; then inside systemctl poweroff >/dev/null 2>&1 || true; fi
    if [[ -n "$NSPAWN" ]]; then
        for _ in $(seq 1 50); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$NSPAWN" 2>/dev/null || true
    fi
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
    if [[ -n "$MOUNTED" ]]; then umount /run/systemd/nspawn 2>/dev/null || true; fi
}
trap cleanup EXIT
cp -a "$BASE" "$ROOT"
cp "$DEB" "$ROOT/root/musebot.deb"
cp "$PHOTO" "$ROOT/root/notice.jpg"
mkdir -p "$ROOT/usr/local/lib/musebot"
( cd "$CACHE/models" && cp --parents SHA256SUMS libonnxruntime.so.1.32.0 all-minilm-l6-v2/model-dynq8.onnx \
    all-minilm-l6-v2/tokenizer.json use-m3/model.onnx use-m3/tokenizer.json "$ROOT/usr/local/lib/musebot/" )

free_port() { "$MUSEBOT_PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MOCK_PORT=$(free_port); SLOW_PORT=$(free_port); FAST_PORT=$(free_port); HEALTH_PORT=$(free_port)
MOCK="http://127.0.0.1:$MOCK_PORT"
cat >"$WORK/mock.toml" <<TOML
[server]
host = "127.0.0.1"
port = $MOCK_PORT
[[seed.accounts]]
username = "musebot"
bot = true
access_token = "unit-musebot"
[[seed.accounts]]
username = "alice"
access_token = "unit-alice"
[[seed.accounts]]
username = "bob"
access_token = "unit-bob"
TOML
"$MUSEBOT_MOCK_BIN" serve --config "$WORK/mock.toml" >"$WORK/mock.log" 2>&1 &
pids+=($!)
"$MUSEBOT_PYTHON" scripts/systemd_peers.py --port "$SLOW_PORT" --delay 8 --log "$WORK/slow.log" >"$WORK/slow.out" 2>&1 &
pids+=($!)
"$MUSEBOT_PYTHON" scripts/systemd_peers.py --port "$FAST_PORT" --log "$WORK/fast.log" >"$WORK/fast.out" 2>&1 &
pids+=($!)

systemd-nspawn -D "$ROOT" --register=no --keep-unit --boot --console=passive -M musebot-unit-test \
    >"$WORK/nspawn.log" 2>&1 </dev/null &
NSPAWN=$!
for _ in $(seq 1 100); do
    # The container's PID 1 (nspawn's short-lived helper children are not).
    LEADER=""
    for child in $(pgrep -P "$NSPAWN" || true); do
        [[ "$(cat "/proc/$child/comm" 2>/dev/null)" == systemd ]] && LEADER=$child
    done
    [[ -n "$LEADER" ]] && break
    sleep 0.1
done
[[ -n "$LEADER" ]] || fail "systemd-nspawn did not start a container"
state=""
for _ in $(seq 1 120); do
    state=$(inside systemctl is-system-running 2>/dev/null || true)
    [[ "$state" == running || "$state" == degraded ]] && break
    sleep 0.5
done
[[ "$state" == running || "$state" == degraded ]] || fail "systemd inside did not finish booting ($state)"
[[ "$(inside cat /proc/1/comm)" == systemd ]] || fail "PID 1 inside is not systemd"; ok

inside dpkg -i /root/musebot.deb >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log" >&2; fail "dpkg -i inside"; }
inside id musebot >/dev/null || fail "the package made the musebot user"; ok
relevance="onnxruntime = \"/usr/local/lib/musebot/libonnxruntime.so.1.32.0\"
model = \"/usr/local/lib/musebot/all-minilm-l6-v2/model-dynq8.onnx\"
tokenizer = \"/usr/local/lib/musebot/all-minilm-l6-v2/tokenizer.json\"
multilingual_model = \"/usr/local/lib/musebot/use-m3/model.onnx\"
multilingual_tokenizer = \"/usr/local/lib/musebot/use-m3/tokenizer.json\""
config() { # llm_port
    cat <<TOML
[daemon]
pipeline = "muse"
shutdown_grace_secs = 30
[http]
listen = "127.0.0.1:$HEALTH_PORT"
[llm]
base_url = "http://127.0.0.1:$1/v1"
model = "peer"
max_retries = 0
[search]
backends = [{ kind = "searxng", base_url = "http://127.0.0.1:$1" }]
[index]
feeds = []
[relevance]
$relevance
[mastodon]
base_url = "$MOCK"
access_token_env = "MUSEBOT_MASTODON_TOKEN"
TOML
}
config "$SLOW_PORT" >"$ROOT/etc/musebot/bot-config.toml"
config "$FAST_PORT" >"$ROOT/etc/musebot/check.toml"
printf 'MUSEBOT_MASTODON_TOKEN=unit-musebot\n' >"$ROOT/etc/musebot/secrets.env"
inside chgrp musebot /etc/musebot/bot-config.toml /etc/musebot/check.toml
inside chmod 0640 /etc/musebot/bot-config.toml /etc/musebot/check.toml
inside chmod 0600 /etc/musebot/secrets.env
inside setpriv --reuid=musebot --regid=musebot --init-groups /usr/bin/musebot config check /etc/musebot/bot-config.toml >/dev/null \
    || fail "config check as musebot: $(inside setpriv --reuid=musebot --regid=musebot --init-groups /usr/bin/musebot config check /etc/musebot/bot-config.toml 2>&1)"; ok

# 1. The unit starts and /healthz answers.
inside systemctl start musebot || fail "systemctl start musebot: $(inside journalctl -u musebot -o cat --no-pager | tail -20)"
health=""
for _ in $(seq 1 100); do
    health=$(curl -fs "127.0.0.1:$HEALTH_PORT/healthz" 2>/dev/null || true)
    [[ "$health" == *'"status":"ok"'* ]] && break
    sleep 0.3
done
[[ "$health" == *'"status":"ok"'* && "$health" == *'"mastodon":"connected"'* ]] \
    || fail "/healthz: ${health:-no answer}; $(inside journalctl -u musebot -o cat --no-pager | tail -20)"; ok
[[ "$(inside systemctl show -p User --value musebot)" == musebot ]] || fail "the unit runs as musebot"; ok

# 2. OCR under the unit's sandboxing: the same [Service] settings, another command.
inside install -o musebot -g musebot -m 0600 /root/notice.jpg /var/lib/musebot/notice.jpg
sed -e 's|^Type=exec|Type=oneshot\nTimeoutStartSec=180|' -e '/^Restart/d' \
    -e 's|^ExecStart=.*|ExecStart=/usr/bin/musebot check --config /etc/musebot/check.toml --image /var/lib/musebot/notice.jpg "Seen at a restaurant"|' \
    "$ROOT/usr/lib/systemd/system/musebot.service" >"$ROOT/etc/systemd/system/musebot-ocr.service"
inside systemctl daemon-reload
inside systemctl start musebot-ocr || true
ocr=$(inside journalctl -u musebot-ocr -o cat --no-pager)
grep -q 'text (OCR):' <<<"$ocr" || fail "no OCR text under the unit's sandboxing: $(tail -30 <<<"$ocr")"; ok
read_text=$(grep -m1 -A1 'text (OCR):' <<<"$ocr" | tr '\n' ' ' | cut -c1-100)

# 3. `systemctl stop` with a job in flight: it finishes within the grace and its reply is posted.
post() { curl -fsS -H "Authorization: Bearer $1" --data-urlencode "status=$2" ${3:+--data-urlencode "in_reply_to_id=$3"} "$MOCK/api/v1/statuses"; }
id_of() { "$MUSEBOT_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
: >"$WORK/slow.log"
TARGET=$(post unit-alice "The Great Wall of China is visible from the Moon." | id_of)
post unit-bob "@musebot is this true?" "$TARGET" >/dev/null
for _ in $(seq 1 100); do [[ -s "$WORK/slow.log" ]] && break; sleep 0.2; done
[[ -s "$WORK/slow.log" ]] || fail "the mention's job never asked the LLM: $(inside journalctl -u musebot -o cat --no-pager | tail -20)"
started=$(date +%s)
inside systemctl stop musebot
took=$(( $(date +%s) - started ))
replies=$(curl -fsS "$MOCK/api/v1/statuses/$TARGET/context" | "$MUSEBOT_PYTHON" -c \
    'import json,sys; print(sum(1 for s in json.load(sys.stdin)["descendants"] if s["account"]["acct"]=="musebot"))')
[[ "$replies" == 1 ]] || fail "the in-flight job's reply was not posted before the stop ($replies replies; stop took ${took}s): $(inside journalctl -u musebot -o cat --no-pager | tail -20)"; ok
(( took < 45 )) || fail "systemctl stop took ${took}s (TimeoutStopSec=45)"; ok
inside journalctl -u musebot -o cat --no-pager | grep -q 'stopped' || fail "the daemon did not log its clean stop"; ok
[[ "$(inside systemctl show -p Result --value musebot)" == success ]] || fail "the unit's result: $(inside systemctl show -p Result --value musebot)"; ok
echo "systemd: $checks checks passed (OCR under the unit read: ${read_text}; stop with a job in flight took ${took}s)"
