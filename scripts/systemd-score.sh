#!/bin/sh
# Print the systemd-analyze exposure score of the shipped musebot unit.
# Usage: scripts/systemd-score.sh [path/to/musebot.service] [-v] [--verify]
#   -v        also print the full per-directive table
#   --verify  also run `systemd-analyze verify` in a throw-away root that has
#             a dummy /usr/bin/musebot (never touches the real /usr/bin)
# Works offline (no running systemd / no installed unit required); needs
# systemd-analyze >= 250 (Debian 12: `apt-get install systemd`).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
unit="$here/systemd/musebot.service"
verbose=0
verify=0
for a in "$@"; do
    case "$a" in
        -v|--verbose) verbose=1 ;;
        --verify) verify=1 ;;
        *) unit=$a ;;
    esac
done

if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "systemd-analyze not found (install the 'systemd' package)" >&2
    exit 2
fi
[ -f "$unit" ] || { echo "unit file not found: $unit" >&2; exit 2; }

# --offline=true analyses the unit file itself; the file name must be
# musebot.service, so run from a temp dir holding a copy with that name.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$unit" "$tmp/musebot.service"

out=$(cd "$tmp" && systemd-analyze security --offline=true --no-pager ./musebot.service 2>&1) || true
if [ "$verbose" = 1 ]; then
    printf '%s\n' "$out"
else
    printf '%s\n' "$out" | grep 'Overall exposure level' || { printf '%s\n' "$out" >&2; exit 1; }
fi

if [ "$verify" = 1 ]; then
    root="$tmp/root"
    mkdir -p "$root/usr/bin" "$root/etc/systemd/system" "$root/usr/lib/systemd"
    printf '#!/bin/sh\nexit 0\n' > "$root/usr/bin/musebot"
    chmod 755 "$root/usr/bin/musebot"
    # verify needs the stock targets (sysinit.target, ...) inside the root.
    for d in /usr/lib/systemd/system /lib/systemd/system; do
        [ -d "$d" ] && { cp -a "$d" "$root/usr/lib/systemd/"; break; }
    done
    cp "$unit" "$root/etc/systemd/system/musebot.service"
    if systemd-analyze verify --man=no --root="$root" musebot.service; then
        echo "verify: OK"
    else
        echo "verify: FAILED" >&2
        exit 1
    fi
fi
