#!/usr/bin/env bash
# Shows, with strace, that every write a one-node `raftlock serve` makes to
# its Raft log (the segment files in <data>/wal/) is covered by an
# fdatasync/fsync of that file before the node next answers a client. Runs N `raftlock lock X -- true` calls (4 Raft
# entries each: grant, acquire, release, revoke) and prints the counts and
# any uncovered write.
#
#   cluster-scripts/sync-trace.sh [-n 20] [-b target/release/raftlock] [-- SERVE_FLAGS...]
#
# Exit 0 when every log write was covered, 1 otherwise. Needs strace
# (installed with apt-get when missing).
set -euo pipefail
N=20
BIN=${RAFTLOCK_BIN:-target/release/raftlock}
while getopts "n:b:" o; do
    case $o in
        n) N=$OPTARG ;;
        b) BIN=$OPTARG ;;
        *) echo "usage: $0 [-n N] [-b BIN] [-- SERVE_FLAGS...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
command -v strace >/dev/null || { apt-get update -qq && apt-get install -y -qq strace; } >/dev/null
BIN=$(realpath "$BIN")
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT; echo "trace: $work/trace" >&2
port=$((20000 + RANDOM % 20000))
"$BIN" serve --client-addr "127.0.0.1:$port" --peer-addr "127.0.0.1:$((port + 1))" \
    --data-dir "$work/data" "$@" >"$work/serve.log" 2>&1 &
server=$!
until "$BIN" lock --endpoints "127.0.0.1:$port" warmup -- true >/dev/null 2>&1; do sleep 0.2; done
# Attach once the node is up, so only the lock calls' writes and replies are
# traced (not the cluster's initialization).
strace -f -yy -e trace=fsync,fdatasync,sync_file_range,pwrite64,writev,write,sendmsg,sendto \
    -o "$work/trace" -p "$server" 2>/dev/null &
tracer=$!
sleep 1
for _ in $(seq "$N"); do
    "$BIN" lock --endpoints "127.0.0.1:$port" X -- true >/dev/null
done
sleep 0.5
kill -INT "$tracer"
wait "$tracer" || true
kill -INT "$server"
wait "$server" || true
# A log write (a pwrite to <data>/wal/N.wal) is pending until an
# fdatasync/fsync of a segment; a gRPC reply (a HEADERS frame opening with
# ":status 200", HPACK byte 0x88 = \210) on the client port while one is
# pending is a violation. Writes of the committed record alone are exempt:
# it is a hint openraft re-learns, synced with the next append
# (docs/decisions.md); it is the only record of at most 24 bytes a lock
# call writes (an entry carrying a request is longer).
awk -v db="$work/data/wal/" -v port=":$port->" '
    # A sync covers the writes made before it started; strace may split it
    # into "<unfinished ...>" and "<... fdatasync resumed>" lines.
    function started(pid) { started_at[pid] = seq }
    function finished(pid) { syncs++; if (started_at[pid] > synced) synced = started_at[pid] }
    index($0, "pwrite64(") && index($0, db) {
        writes++
        len = 0
        if (match($0, /, [0-9]+, [0-9]+( <unfinished|\))/)) { split(substr($0, RSTART + 2, RLENGTH), f, ", "); len = f[1] }
        if (len + 0 <= 24) { hints++ } else { seq++; last_write = $0 }
    }
    (index($0, " fdatasync(") || index($0, " fsync(")) && index($0, db) {
        started($1)
        if (!index($0, "unfinished")) finished($1)
    }
    (index($0, "<... fdatasync resumed>") || index($0, "<... fsync resumed>")) && ($1 in started_at) {
        finished($1); delete started_at[$1]
    }
    (index($0, "writev(") || index($0, "write(") || index($0, "sendmsg(") || index($0, "sendto(")) && index($0, port) && index($0, "\\210") {
        replies++
        if (seq > synced) { bad++; print "reply before sync: " $0; print "  newest unsynced write: " last_write }
    }
    END {
        printf "log writes %d (%d of them the committed hint alone), syncs of the log %d, client replies %d, replies while a write was unsynced %d\n", writes, hints, syncs, replies, bad
        exit (bad > 0)
    }' "$work/trace"
