# shellcheck shell=bash
# Shared code for cluster-scripts/*.sh: the cluster layout (DIR/cluster.env),
# launching and identifying node processes, and reading `cluster status`.
# Sourced, never run. Callers set `set -euo pipefail` and USAGE first.
#
# Layout of a cluster directory DIR:
#   DIR/cluster.env        KEY=VALUE lines (not shell-quoted), see write_env
#   DIR/nodeI/data         the node's data dir
#   DIR/nodeI/log          its stdout and stderr (appended across restarts)
#   DIR/nodeI/pid          its pid while started by these scripts
#   DIR/nodeI/cmdline      the exact argv it was started with, NUL-separated;
#                          a pid is only ever signalled if its argv matches
#   DIR/certs              with TLS=1: ca.crt/.key, node-I.crt/.key and
#                          client-root.crt/.key (`raftlock certs`), and
#                          auth.toml (client `root` is an admin)

# shellcheck disable=SC2034 # used by the scripts that source this
CLUSTER_SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER_HOST=127.0.0.1
# Seconds to wait for a leader, a node's client port, or a node to exit.
CLUSTER_WAIT_SECS=${CLUSTER_WAIT_SECS:-30}
# Upper bound on one `raftlock cluster status` call, so a paused node can
# never hang a script.
CLUSTER_STATUS_TIMEOUT=${CLUSTER_STATUS_TIMEOUT:-15}

die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

note() {
    printf '%s\n' "$*" >&2
}

usage() {
    printf 'usage: %s\n' "$USAGE" >&2
    exit "${1:-2}"
}

bad_usage() {
    printf 'error: %s\n' "$*" >&2
    usage 2
}

# parse_opts "SPEC" "$@": SPEC lists "X:" for an option -X VALUE (sets OPT_X)
# and "NAME" for a flag --NAME (sets OPT_NAME=1, dashes as underscores).
# -h/--help prints USAGE; anything else is a usage error.
parse_opts() {
    local spec=" $1 " arg name
    shift
    while (($#)); do
        arg=$1
        case $arg in
            -h | --help) usage 0 ;;
            --?*)
                name=${arg#--}
                [[ $spec == *" $name "* ]] || bad_usage "unknown option '$arg'"
                printf -v "OPT_${name//-/_}" 1
                shift
                ;;
            -?)
                name=${arg#-}
                [[ $spec == *" $name: "* ]] || bad_usage "unknown option '$arg'"
                (($# >= 2)) || bad_usage "$arg needs a value"
                printf -v "OPT_$name" '%s' "$2"
                shift 2
                ;;
            *) bad_usage "unexpected argument '$arg'" ;;
        esac
    done
}

# Sets DIR from -d (which must be an existing cluster) and loads its layout.
open_cluster() {
    [[ -n ${OPT_d:-} ]] || bad_usage "-d DIR is required"
    [[ -d $OPT_d ]] || die "$OPT_d is not a directory"
    DIR=$(cd -- "$OPT_d" && pwd)
    load_env
}

# Sets ID from -i, which must name a node of the loaded cluster.
need_id() {
    [[ -n ${OPT_i:-} ]] || bad_usage "-i ID is required"
    check_id "$OPT_i"
    # shellcheck disable=SC2034 # used by the scripts that source this
    ID=$OPT_i
}

need_python() {
    command -v python3 >/dev/null 2>&1 || die "python3 is required (to check ports and parse JSON)"
}

is_uint() {
    [[ $1 =~ ^[0-9]+$ ]]
}

# Creates directory $1 if need be and prints its absolute path.
abs_dir() {
    mkdir -p -- "$1" || die "cannot create directory $1"
    (cd -- "$1" && pwd)
}

# ---------------------------------------------------------------- layout

node_dir() { printf '%s/node%s' "$DIR" "$1"; }
certs_dir() { printf '%s/certs' "$DIR"; }

# The client certificate the scripts (and the printed exports) use.
CLUSTER_CLIENT=root

# Sets CLI_TLS to the CLI's TLS flags for this cluster (none without TLS).
set_cli_tls() {
    CLI_TLS=()
    if [[ ${TLS:-0} == 1 ]]; then
        local c
        c=$(certs_dir)
        CLI_TLS=(--cacert "$c/ca.crt" --cert "$c/client-$CLUSTER_CLIENT.crt" --key "$c/client-$CLUSTER_CLIENT.key")
    fi
}

# Creates the CA, a certificate per node (127.0.0.1, localhost) and the
# client certificate in DIR/certs with `raftlock certs`.
make_certs() {
    local c i
    c=$(certs_dir)
    "$BIN" certs create-ca --certs-dir "$c" >/dev/null || die "raftlock certs create-ca failed"
    for ((i = 1; i <= N; i++)); do
        "$BIN" certs create-node --id "$i" --host "$CLUSTER_HOST" --host localhost --certs-dir "$c" >/dev/null ||
            die "raftlock certs create-node --id $i failed"
    done
    "$BIN" certs create-client --name "$CLUSTER_CLIENT" --certs-dir "$c" >/dev/null ||
        die "raftlock certs create-client failed"
    # Client authentication: the client certificate is the cluster's admin;
    # add users with `raftlock auth create-token` (docs/security.md).
    printf '%s\n' "# Written by cluster-scripts/start.sh --tls." \
        "[[users]]" "name = \"$CLUSTER_CLIENT\"" 'roles = ["admin"]' >"$c/auth.toml"
}
node_client() { local v="NODE$1_CLIENT"; printf '%s' "${!v}"; }
node_peer() { local v="NODE$1_PEER"; printf '%s' "${!v}"; }

# layout_on_ports N PORT...: sets N, ENDPOINTS, INITIAL_CLUSTER and
# NODEi_CLIENT / NODEi_PEER, node i on the (2i-1)th PORT (client) and the
# 2i-th (peer).
layout_on_ports() {
    local i eps=() members=() ports=("${@:2}")
    N=$1
    for ((i = 1; i <= N; i++)); do
        printf -v "NODE${i}_CLIENT" '%s:%s' "$CLUSTER_HOST" "${ports[2 * i - 2]}"
        printf -v "NODE${i}_PEER" '%s:%s' "$CLUSTER_HOST" "${ports[2 * i - 1]}"
        eps+=("$(node_client "$i")")
        members+=("$i=$(node_peer "$i")/$(node_client "$i")")
    done
    ENDPOINTS=$(IFS=,; printf '%s' "${eps[*]}")
    INITIAL_CLUSTER=$(IFS=,; printf '%s' "${members[*]}")
}

# make_layout N BASE_PORT: sets BASE_PORT and the layout of a new cluster
# (layout_on_ports), node i on BASE_PORT + 10i + 1 (client) and + 2 (peer).
make_layout() {
    local n=$1 base=$2 i ports=()
    BASE_PORT=$base
    for ((i = 1; i <= n; i++)); do
        ports+=($((base + 10 * i + 1)) $((base + 10 * i + 2)))
    done
    layout_on_ports "$n" "${ports[@]}"
}

# make_free_layout N: like make_layout, on free loopback ports (each held
# until all 2N are chosen, so no two nodes share one), drawn at random from
# the 12000 ports below the kernel's ephemeral range: a port the system
# picked for port 0 could be picked again, for another program's port-0
# bind, while a node is down between a kill and its restart. BASE_PORT=0
# records that the layout has no base, and such nodes run without the
# admin listener, whose default port (client + 2) is not theirs.
make_free_layout() {
    local n=$1 ports=()
    BASE_PORT=0
    mapfile -t ports < <(python3 - "$((2 * n))" <<'EOF'
import random, socket, sys
try:
    start = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    start = 32768
start = max(start, 22000)
held = []
for _ in range(int(sys.argv[1])):
    for _attempt in range(256):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", random.randrange(start - 12000, start)))
        except OSError:
            s.close()
            continue
        held.append(s)
        break
for s in held:
    print(s.getsockname()[1])
EOF
    )
    ((${#ports[@]} == 2 * n)) || die "could not find $((2 * n)) free ports"
    layout_on_ports "$n" "${ports[@]}"
}

write_env() {
    local i tmp="$DIR/cluster.env.tmp"
    [[ $BIN != *$'\n'* ]] || die "binary path contains a newline: $BIN"
    {
        printf '# Written by cluster-scripts/start.sh; read by the other cluster-scripts.\n'
        printf 'N=%s\nBASE_PORT=%s\nBIN=%s\nENDPOINTS=%s\nINITIAL_CLUSTER=%s\nTLS=%s\n' \
            "$N" "$BASE_PORT" "$BIN" "$ENDPOINTS" "$INITIAL_CLUSTER" "${TLS:-0}"
        for ((i = 1; i <= N; i++)); do
            printf 'NODE%s_CLIENT=%s\nNODE%s_PEER=%s\n' "$i" "$(node_client "$i")" "$i" "$(node_peer "$i")"
        done
    } >"$tmp" || die "cannot write $tmp"
    mv -f -- "$tmp" "$DIR/cluster.env" || die "cannot write $DIR/cluster.env"
}

# Reads DIR/cluster.env without executing it: only known keys are taken.
read_env() {
    local file="$DIR/cluster.env" line key value i
    [[ -f $file ]] || die "$file not found; is $DIR a cluster started by start.sh?"
    N='' BASE_PORT='' BIN='' ENDPOINTS='' INITIAL_CLUSTER='' TLS=0
    while IFS= read -r line || [[ -n $line ]]; do
        [[ -z $line || $line == \#* ]] && continue
        key=${line%%=*}
        value=${line#*=}
        case $key in
            N | BASE_PORT | BIN | ENDPOINTS | INITIAL_CLUSTER | TLS | NODE[0-9]*_CLIENT | NODE[0-9]*_PEER)
                printf -v "$key" '%s' "$value"
                ;;
            *) die "$file: unknown key '$key'" ;;
        esac
    done <"$file"
    if ! is_uint "$N" || ((N < 1)); then die "$file: bad or missing N"; fi
    [[ $TLS == 0 || $TLS == 1 ]] || die "$file: TLS must be 0 or 1, not '$TLS'"
    set_cli_tls
    [[ -n $ENDPOINTS && -n $INITIAL_CLUSTER ]] || die "$file: missing ENDPOINTS or INITIAL_CLUSTER"
    for ((i = 1; i <= N; i++)); do
        [[ -n $(node_client "$i") && -n $(node_peer "$i") ]] || die "$file: missing addresses of node $i"
    done
}

# read_env, then picks the binary: RAFTLOCK_BIN if set, else the recorded one.
load_env() {
    read_env
    # An explicit RAFTLOCK_BIN wins over the recorded binary.
    if [[ -n ${RAFTLOCK_BIN:-} ]]; then
        BIN=$(resolve_bin "$RAFTLOCK_BIN")
    fi
    [[ -x $BIN ]] || die "raftlock binary $BIN (from $DIR/cluster.env) is missing or not executable; set RAFTLOCK_BIN"
}

# Absolute path of an executable given as a path or a command name.
resolve_bin() {
    local b=$1
    if [[ $b != */* ]]; then
        b=$(command -v -- "$b") || die "RAFTLOCK_BIN=$1: no such command"
    fi
    [[ -f $b && -x $b ]] || die "RAFTLOCK_BIN=$1 is not an executable file"
    printf '%s/%s' "$(cd -- "$(dirname -- "$b")" && pwd)" "$(basename -- "$b")"
}

# Validates -i ID against the loaded layout.
check_id() {
    if ! is_uint "$1" || (($1 < 1 || $1 > N)); then
        die "node id '$1' is not in this cluster (ids are 1..$N)"
    fi
}

# ---------------------------------------------------------------- processes

# The argv a node is started with, one element per line (addresses and paths
# never contain newlines).
node_argv() {
    local i=$1 d c
    d=$(node_dir "$i")
    printf '%s\n' "$BIN" serve --id "$i" --data-dir "$d/data" \
        --client-addr "$(node_client "$i")" --peer-addr "$(node_peer "$i")" \
        --initial-cluster "$INITIAL_CLUSTER"
    if [[ ${BASE_PORT:-} == 0 ]]; then
        printf '%s\n' --admin-addr off
    fi
    if [[ ${TLS:-0} == 1 ]]; then
        c=$(certs_dir)
        printf '%s\n' --tls-cert "$c/node-$i.crt" --tls-key "$c/node-$i.key" --tls-ca "$c/ca.crt"
        if [[ -f $c/auth.toml ]]; then
            printf '%s\n' --auth-file "$c/auth.toml"
        fi
    elif [[ -f $DIR/join-token ]]; then
        printf '%s\n' --join-token-file "$DIR/join-token"
    fi
}

# Succeeds if $1 is a live process whose argv is exactly the one recorded in
# $2 (a NUL-separated cmdline file). A dead, zombie or reused pid fails.
pid_matches() {
    local pid=$1 want=$2 got
    is_uint "$pid" || return 1
    [[ -f $want ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    if [[ -r /proc/$pid/cmdline ]]; then
        # Through a pipe: GNU cmp -s trusts the 0 size /proc reports.
        cat -- "/proc/$pid/cmdline" 2>/dev/null | cmp -s - "$want" && return 0
        # A `raftlock` that is a script (the Python wheel's command) runs
        # under its interpreter, whose path comes first: the rest must match.
        got=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
        [[ $got == *$'\n'* && ${got#*$'\n'} == "$(tr '\0' '\n' <"$want")" ]]
    else
        # No /proc (macOS): compare the space-joined argv.
        got=$(ps -o args= -p "$pid" 2>/dev/null) || return 1
        [[ $got == "$(tr '\0' ' ' <"$want" | sed 's/ $//')" ]]
    fi
}

# Prints the pid of node $1 if it is running as started by these scripts.
node_pid() {
    local d pid
    d=$(node_dir "$1")
    [[ -f $d/pid ]] || return 1
    read -r pid <"$d/pid" || return 1
    pid_matches "$pid" "$d/cmdline" || return 1
    printf '%s' "$pid"
}

# Starts node $1 in the background, detached from this shell's session, and
# records its pid (also left in LAUNCHED_PID) and argv. Fails if it never
# runs. The node gets no RAFTLOCK_* variable but RAFTLOCK_LOG (serve reads
# them as settings), so its flags alone say how it runs.
launch_node() {
    local i=$1 d pid argv=() t name
    d=$(node_dir "$i")
    mkdir -p -- "$d/data" || die "cannot create $d/data"
    mapfile -t argv < <(node_argv "$i")
    local scrub=(env)
    for name in $(compgen -e); do
        if [[ $name == RAFTLOCK_* && $name != RAFTLOCK_LOG ]]; then scrub+=(-u "$name"); fi
    done
    scrub+=(NO_COLOR=1) # plain log files
    printf '%s\0' "${argv[@]}" >"$d/cmdline"
    printf '\n=== %s starting node %s: %s\n' "$(date '+%Y-%m-%dT%H:%M:%S%z')" "$i" "${argv[*]}" >>"$d/log"
    # The subshell is not a process group leader, so setsid execs without
    # forking and $! is the node's own pid.
    if command -v setsid >/dev/null 2>&1; then
        (exec setsid "${scrub[@]}" "${argv[@]}" </dev/null >>"$d/log" 2>&1) &
    else
        (exec "${scrub[@]}" "${argv[@]}" </dev/null >>"$d/log" 2>&1) &
    fi
    pid=$!
    printf '%s\n' "$pid" >"$d/pid"
    # Give exec a moment to replace the subshell, then check it is our node.
    for ((t = 0; t < 50; t++)); do
        if pid_matches "$pid" "$d/cmdline"; then
            LAUNCHED_PID=$pid
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    rm -f -- "$d/pid"
    note "node $i failed to start; last lines of $d/log:"
    tail -n 20 -- "$d/log" | sed 's/^/    /' >&2
    die "node $i did not start"
}

# signal_script SIG DONE "$@": pause.sh and resume.sh: sends SIG to node -i
# of cluster -d and says "DONE node ID (pid PID)".
signal_script() {
    local sig=$1 done=$2 pid
    shift 2
    parse_opts "d: i:" "$@"
    open_cluster
    need_id
    pid=$(signal_node "$ID" "$sig")
    note "$done node $ID (pid $pid)"
}

# Sends signal $2 to node $1, which must be running.
signal_node() {
    local i=$1 sig=$2 pid
    pid=$(node_pid "$i") || die "node $i is not running (no live pid in $(node_dir "$i")/pid)"
    kill -s "$sig" "$pid" || die "cannot send SIG$sig to node $i (pid $pid)"
    printf '%s' "$pid"
}

# The state letter of pid $1 (R, S, T = stopped, Z = zombie, ...), or
# nothing without /proc.
proc_state() {
    local stat
    stat=$(cat -- "/proc/$1/stat" 2>/dev/null) || return 0
    stat=${stat##*) } # after "pid (comm) "
    printf '%s' "${stat%% *}"
}

# Succeeds if pid $1 is running: it exists and is not a zombie (an exited
# node whose new parent has not reaped it yet).
pid_alive() {
    kill -0 "$1" 2>/dev/null && [[ $(proc_state "$1") != Z ]]
}

# Waits up to $2 seconds for pid $1 to exit.
wait_exit() {
    local pid=$1 deadline=$((SECONDS + $2))
    while pid_alive "$pid"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}

# stop_nodes GRACE ID...: SIGTERM each running node (and SIGCONT, since a
# paused node only acts on SIGTERM once it runs again), SIGKILL any still
# running GRACE seconds later, and remove their pid files. Says so on stderr
# when none was running.
stop_nodes() {
    local grace=$1 i d pid left stopped=0
    shift
    local -A pids=()
    for i in "$@"; do
        d=$(node_dir "$i")
        [[ -f $d/pid ]] || continue
        if pid=$(node_pid "$i"); then
            kill -s TERM "$pid" 2>/dev/null || true
            kill -s CONT "$pid" 2>/dev/null || true
            pids[$i]=$pid
        else
            note "node $i: pid file is stale (process gone or not ours); removing it"
            rm -f -- "$d/pid"
        fi
    done
    local deadline=$((SECONDS + grace))
    for i in "${!pids[@]}"; do
        pid=${pids[$i]}
        left=$((deadline - SECONDS))
        if wait_exit "$pid" $((left > 0 ? left : 0)); then
            note "node $i (pid $pid) stopped"
        elif pid_matches "$pid" "$(node_dir "$i")/cmdline"; then
            note "node $i (pid $pid) still running after ${grace}s; sending SIGKILL"
            kill -s KILL "$pid" 2>/dev/null || true
            wait_exit "$pid" 5 || die "node $i (pid $pid) survived SIGKILL"
        fi
        rm -f -- "$(node_dir "$i")/pid"
        stopped=$((stopped + 1))
    done
    ((stopped)) || note "no running nodes to stop in $DIR"
}

# Fails with a clear message if TCP port $2 on host $1 cannot be listened
# on. SO_REUSEADDR, as the node's own listener sets, so connections of a
# killed node lingering in TIME_WAIT do not count as "in use".
check_port_free() {
    python3 - "$1" "$2" <<'EOF' || die "port $2 on $1 is in use (or cannot be bound); pick another base with -b"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind((sys.argv[1], int(sys.argv[2])))
    s.listen(1)
except OSError:
    sys.exit(1)
finally:
    s.close()
EOF
}

print_log_tails() {
    local i d
    for ((i = 1; i <= N; i++)); do
        d=$(node_dir "$i")
        note "--- last lines of $d/log:"
        if [[ -f $d/log ]]; then tail -n 20 -- "$d/log" | sed 's/^/    /' >&2; fi
    done
}

# ---------------------------------------------------------------- status

# Reading `raftlock cluster status`: lib_status.sh.
# shellcheck source=lib_status.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_status.sh"
