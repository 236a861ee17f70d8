#!/usr/bin/env bash
# End-to-end check of cluster-scripts against the real binary: start a
# 3-node cluster in a temp dir, kill -9 the leader, see a new one elected,
# restart the killed node and see it catch up, pause/resume a follower,
# restart the whole cluster from disk, and stop everything; then a TLS
# cluster (start.sh --tls) that the printed exports and status.sh reach.
# Uses RAFTLOCK_BIN if set, else builds once with cargo.
set -euo pipefail
USAGE="selftest.sh [-b BASE_PORT] [--keep]   (--keep leaves the temp dir; default base: a free one below 32768)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_opts "b: keep" "$@"
need_python
here=$CLUSTER_SCRIPTS_DIR
passed=0
decoy_pid=''

DIR=$(mktemp -d "${TMPDIR:-/tmp}/raftlock-selftest.XXXXXX")
ROOT=$DIR # DIR moves to the cluster a section works on; ROOT stays

# A base port whose node ports (client, peer, admin) for ${1:-3} nodes are
# free; below the usual ephemeral range (32768+) so outgoing connections of
# other tests cannot take them.
pick_base() {
    python3 - "${1:-3}" <<'EOF'
import random, socket, sys
n = int(sys.argv[1])
def free(p):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", p)); s.listen(1); return True
    except OSError:
        return False
    finally:
        s.close()
for _ in range(200):
    base = random.randrange(20000, 32000, 100)
    if all(free(base + 10 * i + k) for i in range(1, n + 1) for k in (1, 2, 3)):
        print(base); break
EOF
}

# Nodes a test started by hand (the README's `serve --join`), killed on exit.
hand_pids=()
load_pid='' # a client loop of selftest_ops.sh, stopped on exit

# Pids of live processes whose argv mentions a node dir of this cluster.
leftover_pids() {
    local f pid
    for f in /proc/[0-9]*/cmdline; do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
        if tr '\0' '\n' <"$f" 2>/dev/null | grep -qxF -- "$DIR/node1/data"$'\n'"$DIR/node2/data"$'\n'"$DIR/node3/data"; then
            printf '%s ' "$pid"
        fi
    done
}

finish() {
    local rc=$?
    trap - EXIT
    if ((rc != 0)); then
        note "selftest failed; node logs:"
        if [[ -f $ROOT/cluster.env ]]; then (DIR=$ROOT && read_env && print_log_tails) || true; fi
        if [[ $DIR != "$ROOT" && -f $DIR/cluster.env ]]; then (read_env && print_log_tails) || true; fi
        local log
        for log in "$ROOT"/hand/*.log; do
            [[ -f $log ]] || continue
            note "last lines of $log:"
            tail -n 15 -- "$log" | sed 's/^/    /' >&2
        done
    fi
    "$here/stop.sh" -d "$ROOT" -t 3 >/dev/null 2>&1 || true
    if [[ -f $ROOT/tls/cluster.env ]]; then "$here/stop.sh" -d "$ROOT/tls" -t 3 >/dev/null 2>&1 || true; fi
    local d
    for d in members restored free; do
        if [[ -f $ROOT/$d/cluster.env ]]; then "$here/stop.sh" -d "$ROOT/$d" -t 3 >/dev/null 2>&1 || true; fi
    done
    if [[ -n $load_pid ]]; then kill "$load_pid" 2>/dev/null || true; fi
    if ((${#hand_pids[@]})); then kill -9 "${hand_pids[@]}" 2>/dev/null || true; fi
    if [[ -n $decoy_pid ]]; then kill "$decoy_pid" 2>/dev/null || true; fi
    if [[ -n ${OPT_keep:-} ]]; then
        note "kept $ROOT"
    else
        rm -rf -- "$ROOT"
    fi
    if ((rc != 0)); then
        printf 'cluster-scripts selftest: %d passed, 1 failed\n' "$passed"
    fi
    exit "$rc"
}
trap finish EXIT

pass() {
    passed=$((passed + 1))
    printf 'ok %d - %s\n' "$passed" "$1"
}

fail() {
    printf 'FAIL: %s\n' "$1" >&2
    exit 1
}

# check DESCRIPTION COMMAND...: one check, which must succeed now.
check() {
    local what=$1
    shift
    "$@" || fail "$what"
    pass "$what"
}

# eventually DESCRIPTION COMMAND...: one check, retried for up to
# CLUSTER_WAIT_SECS.
eventually() {
    local what=$1 deadline=$((SECONDS + CLUSTER_WAIT_SECS))
    shift
    until "$@"; do
        ((SECONDS < deadline)) || fail "$what (still not true after ${CLUSTER_WAIT_SECS}s)"
        sleep 0.5
    done
    pass "$what"
}

# Helpers the checks call; they read the status once per call.
json() { status_json "$ENDPOINTS"; }
members_are() { [[ $(json | status_query count) == "$1" ]]; }
leader_is_not() { local l; l=$(current_leader "$ENDPOINTS") && [[ $l != "$1" ]]; }
role_is() { [[ $(json | status_query role "$1") == "$2" ]]; }
applied_at_least() {
    local a
    a=$(json | status_query applied "$1") && [[ -n $a ]] && ((a >= $2))
}
has_leader() { current_leader "$ENDPOINTS" >/dev/null; }
settled() { current_leader "$ENDPOINTS" settled >/dev/null; }
leader_applied_at_least() {
    local l
    l=$(current_leader "$ENDPOINTS") && applied_at_least "$l" "$1"
}
all_running() {
    local i
    for ((i = 1; i <= N; i++)); do node_pid "$i" >/dev/null || return 1; done
}
is_stopped_state() { [[ $(proc_state "$1") == T ]]; }
no_leftovers() {
    local left
    left=$(leftover_pids)
    [[ -z $left ]] || { note "still running: $left"; return 1; }
}
fails_with() {
    # fails_with PATTERN COMMAND...: the command fails and says PATTERN.
    local pattern=$1 out
    shift
    if out=$("$@" 2>&1); then return 1; fi
    grep -qi -- "$pattern" <<<"$out" || { note "output was: $out"; return 1; }
}

base=${OPT_b:-$(pick_base)}
[[ -n $base ]] || die "found no free base port"
note "selftest: cluster in $DIR, base port $base"

# ---- start
out=$("$here/start.sh" -n 3 -d "$DIR" -b "$base") || fail "start.sh -n 3 failed"
check "start.sh prints ENDPOINTS as its last line" grep -qE '^ENDPOINTS=([0-9.]+:[0-9]+,){2}[0-9.]+:[0-9]+$' <<<"${out##*$'\n'}"
load_env
export RAFTLOCK_BIN=$BIN # every later start uses the binary built (or given) once
check "cluster.env records the endpoints start.sh printed" [ "ENDPOINTS=$ENDPOINTS" = "${out##*$'\n'}" ]
evaled() { (unset RAFTLOCK_ENDPOINTS && eval "$out" && "$@" >/dev/null); }
check "the CLI finds the cluster after eval of start.sh's output, without --endpoints" evaled "$BIN" cluster status
check "all 3 nodes have live pid files" all_running
check "status shows 3 members" members_are 3
check "status.sh prints a table with a leader" grep -q '^leader: [0-9]' <(timeout 20 "$here/status.sh" -d "$DIR")
leader=$("$here/leader.sh" -d "$DIR") || fail "leader.sh found no leader"
check "leader.sh prints a node id (got '$leader')" check_id "$leader"

# ---- refusals
check "start.sh rejects -n 4 as a usage error" fails_with "usage:" "$here/start.sh" -n 4 -d "$DIR/other"
check "start.sh refuses ports in use" fails_with "in use" "$here/start.sh" -n 3 -d "$DIR/other" -b "$base" --no-build
check "kill.sh rejects an unknown node id" fails_with "not in this cluster" "$here/kill.sh" -d "$DIR" -i 7
check "restart.sh refuses a running node" fails_with "already running" "$here/restart.sh" -d "$DIR" -i 1

# ---- kill -9 the leader
applied_before=$(json | status_query max_applied)
old_pid=$(node_pid "$leader")
check "kill.sh kills the leader (node $leader)" "$here/kill.sh" -d "$DIR" -i "$leader"
check "the killed leader's process is gone" eval "! pid_alive $old_pid"
check "the killed leader's pid file is removed" [ ! -e "$(node_dir "$leader")/pid" ]
eventually "a new leader other than node $leader is elected" leader_is_not "$leader"
new_leader=$(current_leader "$ENDPOINTS")
check "status shows the killed node as unreachable" role_is "$leader" unreachable
# The new leader's term starts with an entry of its own, so the index to
# catch up to is past anything the killed node saw.
eventually "the new leader's applied index passes $applied_before" applied_at_least "$new_leader" $((applied_before + 1))
target=$(json | status_query applied "$new_leader")

# ---- restart it; it rejoins and catches up
check "restart.sh brings node $leader back" "$here/restart.sh" -d "$DIR" -i "$leader"
eventually "node $leader rejoins as a follower" role_is "$leader" follower
eventually "node $leader's applied index catches up to $target" applied_at_least "$leader" "$target"

# ---- pause / resume a follower
# The lowest-id follower: node 1 if it can be, so the first endpoint of
# every status call hangs, the hardest case for the status helper.
cur=$(current_leader "$ENDPOINTS") || fail "no leader before pause"
follower=1
((cur != 1)) || follower=2
check "pause.sh stops node $follower" "$here/pause.sh" -d "$DIR" -i "$follower"
eventually "node $follower is in the stopped state" is_stopped_state "$(node_pid "$follower")"
eventually "status shows paused node $follower as unreachable" role_is "$follower" unreachable
check "the cluster keeps a leader with node $follower paused" has_leader
check "resume.sh continues node $follower" "$here/resume.sh" -d "$DIR" -i "$follower"
eventually "node $follower answers again as a follower or leader" eval "role_is $follower follower || role_is $follower leader"
eventually "all 3 nodes follow one leader again" settled

# ---- stop never signals a pid that is not its node
sleep 600 &
decoy_pid=$!
applied_before=$(json | status_query max_applied)
check "stop.sh stops the cluster" "$here/stop.sh" -d "$DIR" -t 10
check "no raftlock process of $DIR remains" no_leftovers
check "stop.sh removed every pid file" eval "! compgen -G '$DIR/node*/pid' >/dev/null"
printf '%s\n' "$decoy_pid" >"$(node_dir 1)/pid"
check "stop.sh leaves a foreign pid in a stale pid file alone" "$here/stop.sh" -d "$DIR" -t 1
check "the foreign process survived" kill -0 "$decoy_pid"
kill "$decoy_pid" 2>/dev/null || true
decoy_pid=''

# ---- whole cluster again from disk
out=$("$here/start.sh" -d "$DIR" --no-build) || fail "start.sh could not restart the cluster from $DIR"
check "start.sh restarts the cluster from disk with the same endpoints" [ "${out##*$'\n'}" = "ENDPOINTS=$ENDPOINTS" ]
check "the restarted cluster has 3 members" members_are 3
eventually "the restarted cluster's leader applied at least index $applied_before" leader_applied_at_least "$applied_before"
check "stop.sh stops the restarted cluster" "$here/stop.sh" -d "$DIR"
check "no raftlock process of $DIR remains after the second stop" no_leftovers

# ---- a TLS cluster: certificates from `raftlock certs`, mTLS between peers
tls_dir=$DIR/tls
tls_base=$(pick_base)
[[ -n $tls_base ]] || die "found no free base port for the TLS cluster"
# tls_out, not out: fails_with's `local out` would shadow it in the helpers below.
tls_out=$("$here/start.sh" -n 3 -d "$tls_dir" -b "$tls_base" --tls --no-build) || fail "start.sh --tls failed"
tls_endpoints=${tls_out##*$'\n'}
tls_endpoints=${tls_endpoints#ENDPOINTS=}
check "start.sh --tls prints ENDPOINTS as its last line" grep -qE '^([0-9.]+:[0-9]+,){2}[0-9.]+:[0-9]+$' <<<"$tls_endpoints"
check "start.sh --tls prints the CLI's TLS exports" [ "$(grep -c '^export RAFTLOCK_\(CACERT\|CERT\|KEY\)=' <<<"$tls_out")" = 3 ]
with_exports() { (eval "$tls_out" && "$@" >/dev/null); }
check "the CLI with the printed exports grants a lease" with_exports "$BIN" lease grant 5s --endpoints "$tls_endpoints"
check "a plain-text CLI call to the TLS cluster is refused" fails_with "cacert" "$BIN" lease list --endpoints "$tls_endpoints"
without_cert() { (eval "$tls_out" && unset RAFTLOCK_CERT RAFTLOCK_KEY && "$@"); }
check "a CLI call with the CA but no client certificate or token is refused as unauthenticated" \
    fails_with "unauthenticated" without_cert "$BIN" lease grant 5s --endpoints "$tls_endpoints"
check "a CLI call with an unknown token is refused as unauthenticated" \
    fails_with "unknown token" without_cert "$BIN" lease grant 5s --endpoints "$tls_endpoints" --token nope
check "the admin client certificate may force-release" with_exports "$BIN" locks force-release some/lock --endpoints "$tls_endpoints"
check "status.sh shows the TLS cluster with a leader" grep -q '^leader: [0-9]' <(timeout 20 "$here/status.sh" -d "$tls_dir")
check "stop.sh stops the TLS cluster" "$here/stop.sh" -d "$tls_dir"

# ---- free ports, as the Python tests start their clusters
free_dir=$ROOT/free
check "start.sh refuses -b with --free-ports" fails_with "usage:" "$here/start.sh" -n 3 -d "$free_dir" -b "$base" --free-ports
free_out=$("$here/start.sh" -n 3 -d "$free_dir" --free-ports --no-build) || fail "start.sh --free-ports failed"
check "start.sh --free-ports records the endpoints it printed" grep -qxF "${free_out##*$'\n'}" "$free_dir/cluster.env"
check "cluster.env of a free-ports cluster says BASE_PORT=0" grep -qxF BASE_PORT=0 "$free_dir/cluster.env"
check "stop.sh stops the free-ports cluster" "$here/stop.sh" -d "$free_dir"

# shellcheck source=selftest_ops.sh source-path=SCRIPTDIR
source "$here/selftest_ops.sh"
# shellcheck source=selftest_health.sh source-path=SCRIPTDIR
source "$here/selftest_health.sh"
# shellcheck source=selftest_failover.sh source-path=SCRIPTDIR
source "$here/selftest_failover.sh"
# shellcheck source=selftest_api.sh source-path=SCRIPTDIR
source "$here/selftest_api.sh"

printf 'cluster-scripts selftest: %d passed, 0 failed\n' "$passed"
