#!/usr/bin/env bash
# Starts a 3- or 5-node raftlock cluster on loopback, or restarts the one
# already in DIR from its data dirs, and waits for a leader.
# Prints `export RAFTLOCK_ENDPOINTS=host:port,...` (which the CLI reads) and
# ENDPOINTS=host:port,... as the last line on stdout; a TLS cluster (--tls)
# first prints `export RAFTLOCK_CACERT=...` (and _CERT, _KEY) lines. So
# `eval "$(start.sh ...)"` points the CLI at the cluster.
set -euo pipefail
USAGE="start.sh -n 3|5 -d DIR [-b BASE_PORT | --free-ports] [--no-build] [--tls [-a AUTH_FILE]]
  Node I listens for clients on BASE_PORT+10*I+1 and for peers on BASE_PORT+10*I+2
  (BASE_PORT default 27000); --free-ports: on free ports the system picks instead (the
  nodes then run without the admin listener). RAFTLOCK_BIN=path uses that binary
  instead of building.
  Without --tls, peers authenticate with a join token (DIR/join-token, made here).
  --tls: create a CA, node and client certificates in DIR/certs and serve TLS (mTLS
  between peers) with client authentication (DIR/certs/auth.toml: the client
  certificate is an admin; -a appends AUTH_FILE's users and roles to it); eval the
  output to point the CLI at them.
  A DIR that holds a cluster already restarts it with its recorded ids, ports and TLS."
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_opts "n: d: b: a: no-build tls free-ports" "$@"
n=${OPT_n:-} dir=${OPT_d:-} base=${OPT_b:-} auth_extra=${OPT_a:-}
[[ -n $dir ]] || bad_usage "-d DIR is required"
[[ -z $n || $n == 3 || $n == 5 ]] || bad_usage "-n must be 3 or 5, not '$n'"
[[ -z $base ]] || is_uint "$base" || bad_usage "-b must be a port number, not '$base'"
[[ -z $base || -z ${OPT_free_ports:-} ]] || bad_usage "-b and --free-ports exclude each other"
[[ -z $auth_extra || -n ${OPT_tls:-} ]] || bad_usage "-a AUTH_FILE needs --tls"
[[ -z $auth_extra || -f $auth_extra ]] || die "-a $auth_extra: no such file"
need_python

DIR=$(abs_dir "$dir")

# ---- layout: new, or the recorded one
if [[ -f $DIR/cluster.env ]]; then
    read_env
    [[ -z $n || $n == "$N" ]] || die "$DIR holds a $N-node cluster; drop -n or use -n $N"
    [[ -z $base || $base == "$BASE_PORT" ]] || die "$DIR uses base port $BASE_PORT; drop -b or use -b $BASE_PORT"
    [[ -z ${OPT_tls:-} || $TLS == 1 ]] || die "$DIR holds a cluster started without TLS; drop --tls or use a new DIR"
    [[ -z $auth_extra ]] || die "$DIR holds a cluster already; -a applies to a new one"
    recorded_bin=$BIN
    restarting=1
else
    compgen -G "$DIR/node*" >/dev/null && die "$DIR has node dirs but no cluster.env; use an empty DIR"
    [[ -n $n ]] || bad_usage "-n 3|5 is required for a new cluster"
    if [[ -n ${OPT_free_ports:-} ]]; then
        make_free_layout "$n"
    else
        base=${base:-27000}
        ((base >= 1024 && base + 10 * n + 2 <= 65535)) || die "base port $base leaves node ports outside 1024..65535"
        make_layout "$n" "$base"
    fi
    TLS=${OPT_tls:+1}
    TLS=${TLS:-0}
    set_cli_tls
    recorded_bin=''
    restarting=0
fi

# ---- binary
repo=$(cd "$CLUSTER_SCRIPTS_DIR/.." && pwd)
if [[ -n ${RAFTLOCK_BIN:-} ]]; then
    BIN=$(resolve_bin "$RAFTLOCK_BIN")
elif [[ -z ${OPT_no_build:-} ]]; then
    command -v cargo >/dev/null 2>&1 || die "cargo not found; install Rust or set RAFTLOCK_BIN"
    note "building raftlock (cargo build --release --bin raftlock) ..."
    BIN=$(cd "$repo" && cargo build --release --bin raftlock --message-format=json-render-diagnostics |
        python3 -c '
import json, sys
exe = ""
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "raftlock" and m.get("executable"):
        exe = m["executable"]
print(exe)
') || die "cargo build failed (see above)"
    [[ -n $BIN ]] || die "cargo build did not report a raftlock executable"
elif [[ -n $recorded_bin ]]; then
    BIN=$recorded_bin
else
    BIN=${CARGO_TARGET_DIR:-$repo/target}/release/raftlock
fi
[[ -x $BIN ]] || die "raftlock binary $BIN not found or not executable (build it, or set RAFTLOCK_BIN)"
if ((!restarting && TLS == 1)); then
    note "creating a CA, node and client certificates in $(certs_dir)"
    make_certs
    if [[ -n $auth_extra ]]; then
        { printf '\n# From %s (start.sh -a).\n' "$auth_extra" && cat -- "$auth_extra"; } >>"$(certs_dir)/auth.toml" ||
            die "cannot append $auth_extra to $(certs_dir)/auth.toml"
    fi
fi
if ((!restarting && TLS == 0)); then
    # Peers authenticate with a shared secret when there is no CA.
    "$BIN" certs create-join-token --out "$DIR/join-token" >/dev/null ||
        die "cannot create the cluster's join token in $DIR/join-token"
fi
write_env

# ---- start the nodes that are not running
to_start=()
for ((i = 1; i <= N; i++)); do
    if pid=$(node_pid "$i"); then
        note "node $i already running (pid $pid); leaving it"
        continue
    fi
    rm -f -- "$(node_dir "$i")/pid"
    for addr in "$(node_client "$i")" "$(node_peer "$i")"; do
        check_port_free "${addr%:*}" "${addr##*:}"
    done
    to_start+=("$i")
done
if ((restarting)); then
    note "restarting the $N-node cluster in $DIR"
else
    note "starting a $N-node cluster in $DIR"
fi
# On any failure from here on, stop the nodes this run started (their logs
# stay in DIR/nodeI/log), so a failed start leaves nothing running.
started=()
cleanup() {
    local rc=$?
    if ((rc != 0 && ${#started[@]})); then
        note "stopping the nodes this run started (${started[*]}); logs are in $DIR/node*/log"
        stop_nodes 5 "${started[@]}" || true
    fi
    exit "$rc"
}
trap cleanup EXIT
for i in ${to_start[@]+"${to_start[@]}"}; do
    started+=("$i")
    launch_node "$i"
    note "node $i: pid $LAUNCHED_PID, client $(node_client "$i"), peer $(node_peer "$i")"
done

# ---- wait for a leader that every node follows (a node that starts late
# can still trigger one more election, so "some leader" is not enough)
deadline=$((SECONDS + CLUSTER_WAIT_SECS))
while true; do
    if leader=$(current_leader "$ENDPOINTS" settled); then
        break
    fi
    for i in ${to_start[@]+"${to_start[@]}"}; do
        if ! node_pid "$i" >/dev/null; then
            print_log_tails
            die "node $i exited while waiting for a leader (log: $(node_dir "$i")/log)"
        fi
    done
    if ((SECONDS >= deadline)); then
        print_log_tails
        die "no leader followed by all $N nodes after ${CLUSTER_WAIT_SECS}s"
    fi
    sleep 0.5
done
note "leader: node $leader"
if ((TLS == 1)); then
    c=$(certs_dir)
    printf 'export RAFTLOCK_CACERT=%q\n' "$c/ca.crt"
    printf 'export RAFTLOCK_CERT=%q\n' "$c/client-$CLUSTER_CLIENT.crt"
    printf 'export RAFTLOCK_KEY=%q\n' "$c/client-$CLUSTER_CLIENT.key"
fi
# The CLI reads RAFTLOCK_ENDPOINTS: `eval "$(start.sh ...)"` points it here.
printf 'export RAFTLOCK_ENDPOINTS=%s\n' "$ENDPOINTS"
printf 'ENDPOINTS=%s\n' "$ENDPOINTS"
