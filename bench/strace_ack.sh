#!/usr/bin/env bash
# Shows with strace that a one-node raftlock acknowledges nothing before its
# Raft log is synced: runs `raftlock serve` under
#   strace -f -tt -yy -e trace=pwrite64,pwritev,write,writev,sendmsg,sendto,fdatasync,fsync
# makes CALLS lock calls (acquire + release, each through the CLI) and CALLS
# lease grants, stops the node, and reads the trace: every write to a client
# connection (a reply, on the node's client port) must come while no
# `pwrite` to a segment of the log's `wal/` directory is waiting for its
# `fdatasync`/`fsync` (a one-node cluster commits on its own sync alone, so
# each acknowledged write's entry is synced before its reply starts). Also
# counts the log writes, syncs and replies, and prints the first reply of
# each call after its covering sync.
#
#   bench/strace_ack.sh [OUT_DIR]        (default target/strace-ack)
#
# RAFTLOCK_BIN=PATH takes the binary from PATH instead of building it.
# CALLS=N (default 20); NODE_ARGS="..." adds flags to `serve` (with
# `--unsafe-no-fsync` the check fails: replies go out before any sync). Exit 0 when every reply was preceded by the sync of
# every log write before it, 1 otherwise (the offending lines printed).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/strace-ack}
calls=${CALLS:-20}
bin=${RAFTLOCK_BIN:-}
if [ -z "$bin" ]; then
    cargo build --quiet --release --bin raftlock
    bin=target/release/raftlock
fi
command -v strace >/dev/null || { echo "strace is not installed" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out"
client_port=$((20000 + RANDOM % 20000))
peer_port=$((client_port + 1))
ep="--endpoints=127.0.0.1:$client_port"
strace -f -tt -yy -qq -o "$out/trace.txt" \
    -e trace=pwrite64,pwritev,write,writev,sendmsg,sendto,fdatasync,fsync \
    "$bin" serve --data-dir "$out/data" --client-addr "127.0.0.1:$client_port" \
    --peer-addr "127.0.0.1:$peer_port" ${NODE_ARGS:-} >"$out/node.log" 2>&1 &
node=$!
trap 'kill $node 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
    "$bin" cluster status "$ep" >/dev/null 2>&1 && break
    sleep 0.2
done
"$bin" cluster status "$ep" >"$out/status.txt"
# Replies before here answered the readiness probes (`cluster status`, a
# read, while the new node writes its first entries): not checked.
sleep 1
first=$(wc -l <"$out/trace.txt")
for i in $(seq 1 "$calls"); do
    "$bin" lock "strace/$i" "$ep" -- true
    "$bin" lease grant 1h "$ep" >/dev/null
done
# strace does not pass signals on: stop the node itself, and strace ends
# with it.
kill -TERM "$(pgrep -P $node)"
wait $node || true
trap - EXIT

python3 - "$out/trace.txt" "$client_port" "$calls" "$first" <<'EOF' | tee "$out/result.txt"
import codecs
import re
import sys

trace, port, calls, first = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# A call: "PID HH:MM:SS.micro name(fd<path>, ..." (maybe "<unfinished ...>");
# its end, when unfinished: "PID time <... name resumed>...".
call = re.compile(r"^(\d+)\s+(\S+)\s+(\w+)\(\d+<(.*?)>[,) ]")
resumed = re.compile(r"^(\d+)\s+(\S+)\s+<\.\.\. (\w+) resumed>")
started = {}  # pid -> (line number, path) of an unfinished sync
dirty = {}  # line number of a log write not yet covered by a sync -> path
count = {"log writes": 0, "committed-id writes": 0, "log syncs": 0, "replies": 0, "other frames": 0}
# A record is framed as length (4 bytes), CRC (4), then its postcard body,
# whose first byte is the variant of `Record` (storage/src/log_store/record.rs):
# Start 0, Entry 1, Vote 2, Committed 3, Purged 4, TruncatedAfter 5. The
# committed id needs no sync before an answer (openraft recomputes it; a
# lost one only slows the restart): those writes are counted apart. Every
# other record must be synced before any reply goes out.
COMMITTED = 3
data = re.compile(r'>, "((?:[^"\\]|\\.)*)"')
frame = re.compile(r'(?:iov_base=|>, )"((?:[^"\\]|\\.)*)"')


def frame_type(line):
    """The type of the first HTTP/2 frame a socket write carries: 0 DATA
    and 1 HEADERS answer a call; SETTINGS (4), PING (6), WINDOW_UPDATE (8)
    and the like run the connection and answer nothing."""
    m = frame.search(line)
    if m is None:
        return None
    raw = codecs.escape_decode(m.group(1).encode("latin1"))[0]
    return raw[3] if len(raw) > 3 else None


def record_kind(line):
    """The variant of the first record a pwrite carries (None if unseen)."""
    m = data.search(line)
    if m is None:
        return None
    raw = codecs.escape_decode(m.group(1).encode("latin1"))[0]
    return raw[8] if len(raw) > 8 else None


bad = []
shown = []
last_sync = None


def synced(began, path, time):
    """A sync of segment `path` that began at line `began` ended: it covers
    every write to that segment begun before it, and (rotation syncs a
    full segment before the next is written) every earlier segment's."""
    global last_sync
    count["log syncs"] += 1
    for n in [n for n, p in dirty.items() if n < began and p <= path]:
        del dirty[n]
    last_sync = (time, path)


for n, line in enumerate(open(trace)):
    m = call.match(line)
    if m is None:
        r = resumed.match(line)
        if r and r.group(1) in started:
            began, path = started.pop(r.group(1))
            synced(began, path, r.group(2))
        continue
    pid, time, name, path = m.groups()
    unfinished = "<unfinished" in line
    is_log = "/wal/" in path and path.endswith(".wal")
    if name in ("pwrite64", "pwritev") and is_log:
        count["log writes"] += 1
        if record_kind(line) == COMMITTED:
            count["committed-id writes"] += 1
        else:
            dirty[n] = path
    elif name in ("fdatasync", "fsync") and is_log:
        if unfinished:
            started[pid] = (n, path)
        else:
            synced(n, path, time)
    elif name in ("write", "writev", "sendmsg", "sendto") and f"127.0.0.1:{port}->" in path:
        if n < first or frame_type(line) not in (0, 1):
            count["other frames"] += 1
            continue
        count["replies"] += 1
        if dirty:
            bad.append(f"{line.strip()[:160]}  <- unsynced log writes at trace lines {sorted(dirty)}")
        elif len(shown) < 3 and last_sync:
            shown.append(f"a reply at {time}, after the sync of {last_sync[1].rsplit('/', 1)[-1]} ended at {last_sync[0]}")
for s in shown:
    print(s)
print(f"{calls} lock calls and {calls} lease grants: {count['log writes']} log writes "
      f"({count['committed-id writes']} of the committed id only), {count['log syncs']} log syncs, "
      f"{count['replies']} replies (HTTP/2 HEADERS or DATA written to a client; "
      f"{count['other frames']} other frames), {len(bad)} of them while another log write was unsynced")
for b in bad[:20]:
    print("UNSYNCED:", b)
sys.exit(1 if bad or count["log writes"] == 0 or count["replies"] == 0 else 0)
EOF
