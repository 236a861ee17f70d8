#!/usr/bin/env bash
# Real-browser test of the admin status page: starts a 3-node cluster on
# loopback (each node with --admin-addr), holds one lock and queues one
# waiter with the `raftlock lock` command, opens node 1's status page in
# headless Chromium, takes a screenshot and checks the rendered DOM names
# the holder, the waiter and the leader. A second lock, whose name and
# owner are HTML (an <img onerror=...> that would mark <body> if it ran),
# must show as text: no such element in the DOM, the script never ran.
#
# Usage: tests/browser/status_page.sh
# Environment:
#   RAFTLOCK_BIN  binary to test (default: cargo build, target/debug/raftlock)
#   SCREENSHOT    where to write the PNG (default:
#                 ${TMPDIR:-/tmp}/raftlock-status-page.png); docs/status-page.png
#                 was taken with SCREENSHOT=docs/status-page.png
#   BASE_PORT     node I listens on BASE+10*I+1 (client), +2 (peer), +3
#                 (admin); default 28000
# Installs Debian's `chromium` with apt-get when it is missing (needs root).
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "error: $*" >&2; exit 1; }
say() { echo "status-page test: $*" >&2; }

BASE=${BASE_PORT:-28000}
BIN=${RAFTLOCK_BIN:-}
if [[ -z $BIN ]]; then
    cargo build --bin raftlock >&2
    BIN="${CARGO_TARGET_DIR:-target}/debug/raftlock"
fi
[[ -x $BIN ]] || die "no raftlock binary at $BIN"
command -v python3 >/dev/null || die "python3 is required"

if ! command -v chromium >/dev/null; then
    [[ $(id -u) == 0 ]] || die "chromium is missing; run as root to install it, or: apt-get install chromium"
    say "installing chromium (apt-get)"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
fi

WORK=$(mktemp -d)
SHOT=${SCREENSHOT:-${TMPDIR:-/tmp}/raftlock-status-page.png}
pids=()
cleanup() {
    local p
    # Waiter and holder first (they end their leases), then the nodes.
    for ((p = ${#pids[@]} - 1; p >= 0; p--)); do
        kill "${pids[p]}" 2>/dev/null || true
        wait "${pids[p]}" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

addr() { printf '127.0.0.1:%s' $((BASE + 10 * $1 + $2)); }
members="" endpoints=""
for i in 1 2 3; do
    members+="${members:+,}$i=$(addr "$i" 2)/$(addr "$i" 1)"
    endpoints+="${endpoints:+,}$(addr "$i" 1)"
done
"$BIN" certs create-join-token --out "$WORK/join-token" >/dev/null
for i in 1 2 3; do
    "$BIN" serve --id "$i" --data-dir "$WORK/node$i" --client-addr "$(addr "$i" 1)" \
        --peer-addr "$(addr "$i" 2)" --admin-addr "$(addr "$i" 3)" \
        --initial-cluster "$members" --join-token-file "$WORK/join-token" >"$WORK/node$i.log" 2>&1 &
    pids+=($!)
done
ADMIN="http://$(addr 1 3)"

# Polls node 1's /api/status until the Python expression $1 (over `s`, the
# parsed JSON) is true; prints the JSON. Waits up to 120 s.
wait_status() {
    python3 - "$ADMIN/api/status" "$1" <<'PY' || return 1
import json, sys, time, urllib.request
url, cond = sys.argv[1], sys.argv[2]
deadline = time.time() + 120
while True:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            s = json.load(r)
        if eval(cond, {}, {"s": s}):
            print(json.dumps(s))
            sys.exit(0)
    except Exception:
        pass
    if time.time() > deadline:
        sys.exit(1)
    time.sleep(0.3)
PY
}

say "waiting for a leader"
wait_status 's["leader"] is not None and all(m["role"] != "unreachable" for m in s["members"])' \
    >/dev/null || { tail -n 20 "$WORK"/node*.log >&2; die "no leader within 120 s"; }

say "holding jobs/nightly, queueing a waiter"
"$BIN" lock jobs/nightly --endpoints "$endpoints" -- sleep 600 >"$WORK/holder.log" 2>&1 &
pids+=($!)
wait_status 'any(l["name"] == "jobs/nightly" and l["holders"] for l in s["locks"])' >/dev/null ||
    die "the holder did not get the lock: $(cat "$WORK/holder.log")"
"$BIN" lock jobs/nightly --endpoints "$endpoints" -- true >"$WORK/waiter.log" 2>&1 &
pids+=($!)
status=$(wait_status 'any(l["name"] == "jobs/nightly" and l["waiters"] for l in s["locks"])') ||
    die "the waiter did not queue: $(cat "$WORK/waiter.log")"

# Names and owners are chosen by clients: HTML in them must show as text.
xss_name='jobs/<b id=xss-name>bold</b>'
xss_owner="<img src=x onerror=document.body.setAttribute('data-xss','ran')>"
"$BIN" lock "$xss_name" --owner "$xss_owner" --endpoints "$endpoints" -- sleep 600 \
    >"$WORK/xss.log" 2>&1 &
pids+=($!)
wait_status 'any(l["name"].startswith("jobs/<b") and l["holders"] for l in s["locks"])' >/dev/null ||
    die "the HTML-named lock was not taken: $(cat "$WORK/xss.log")"

read -r holder waiter leader < <(python3 -c '
import json, sys
s = json.loads(sys.argv[1])
lock = next(l for l in s["locks"] if l["name"] == "jobs/nightly")
print(lock["holders"][0]["owner"], lock["waiters"][0]["owner"], s["leader"])' "$status")
say "holder $holder, waiter $waiter, leader node $leader"

browser=(chromium --headless --no-sandbox --disable-gpu --hide-scrollbars
    --user-data-dir="$WORK/chromium" --virtual-time-budget=5000)
say "screenshot of $ADMIN/"
"${browser[@]}" --window-size=1280,760 --screenshot="$SHOT" "$ADMIN/" >"$WORK/shot.log" 2>&1 ||
    die "chromium could not take the screenshot: $(tail -n 5 "$WORK/shot.log")"
[[ -s $SHOT ]] || die "no screenshot written"
"${browser[@]}" --dump-dom "$ADMIN/" >"$WORK/dom.html" 2>"$WORK/dom.log" ||
    die "chromium could not dump the DOM: $(tail -n 5 "$WORK/dom.log")"

fail=0
check() {
    if grep -qF -- "$2" "$WORK/dom.html"; then
        say "page shows $1"
    else
        say "FAILED: page does not show $1 ($2)"
        fail=1
    fi
}
check "the holder" "$holder"
check "the waiter" "$waiter"
check "the leader" "leader: node $leader"
check "the leader's row" "<tr class=\"leader\"><td>$leader</td>"
# As the DOM serialises text: < > & escaped, quotes as they are.
check "an HTML lock name as text" "jobs/&lt;b id=xss-name&gt;bold&lt;/b&gt;"
check "an HTML owner as text" "&lt;img src=x onerror=document.body.setAttribute('data-xss','ran')&gt;"
# With innerHTML instead of textContent in the page's el(), these five
# fail and the owner's script runs (data-xss="ran"; seen).
absent() {
    if grep -qF -- "$2" "$WORK/dom.html"; then
        say "FAILED: page has this $1 ($2)"
        fail=1
    else
        say "page has no $1"
    fi
}
absent "element made from a lock name" '<b id="xss-name">'
absent "element made from an owner" '<img'
absent "mark of the owner's script" 'data-xss="ran"'
if ((fail)); then
    sed -e 's/<[^>]*>/ /g' "$WORK/dom.html" | tr -s ' \n' | head -c 3000 >&2
    echo 0 passed, 1 failed
    exit 1
fi
say "screenshot: $SHOT"
echo 1 passed, 0 failed
